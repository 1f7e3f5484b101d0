//! What `bagscope report` shows, computed from one open bag ([`report_data`]): `info`,
//! `clocks` and `check` from one scan (with `info` beside it), the lag distributions, a
//! synchronizer on each sensor pair, every command/response pair matched, `observe` under a
//! contract, and the verdicts over all of them. `bagscope-report` lays it out as a page; the
//! Python package returns it as it is.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use bagscope_bag::Warning;
use bagscope_matching::JointSeries;
use bagscope_observe::ObserveSummary;
use bagscope_sync::Policy;

use crate::check::{clocks_and_check_of, CheckOptions, CheckReport};
use crate::clocks::{AnalysisOptions, ClocksCommandReport};
use crate::findings::{check_hits, summarise, VerdictFinding};
use crate::hist::{lag_distributions, Distribution};
use crate::info::{info_of, InfoReport};
use crate::matching::{match_bag_series_with_times, MatchArgs, MatchCommandReport};
use crate::observe::{observe_summary, LoadedContract};
use crate::sync::{sync_of, SyncCommandReport, SyncOptions};
use crate::{Bag, Error};

/// A topic's lag series: (log time, lag), ns.
pub type LagSeries = (Vec<i64>, Vec<i64>);

/// Most sensor pairs the report emulates a synchronizer on (the first by name).
pub const MAX_SYNC_PAIRS: usize = 16;

/// Which pairs `report` matches and under which contract it builds observations.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Command/response pairs to match; default: every JointTrajectory → JointState pair. A
    /// topic the bag lacks is an [`Error::InvalidParameter`] (`pairs`).
    pub pairs: Vec<(String, String)>,
    /// An `observe` contract, read beforehand ([`crate::observe::load_contract`]): the report
    /// gains its observations' summary.
    pub contract: Option<LoadedContract>,
}

/// One synchronizer emulated on a sensor pair (`sync` in `report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct SyncEntry {
    /// `exact` (Image + CameraInfo of one namespace) or `approximate` (sensor pair).
    pub kind: String,
    /// The pair's topics, in the synchronizer's input order.
    pub topics: Vec<String>,
    /// `sync`'s report: C++ ExactTime emulated for an `exact` pair, an approx-py slop and queue
    /// recommendation for an `approximate` one; None when `sync` failed.
    pub report: Option<SyncCommandReport>,
    /// Why `sync` failed on the pair; None when it answered.
    pub error: Option<String>,
}

/// One command/response pair matched (`match` in `report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct MatchEntry {
    /// The command topic.
    pub command: String,
    /// The response topic.
    pub response: String,
    /// `match`'s report with default options; None when matching failed.
    pub report: Option<MatchCommandReport>,
    /// Why matching failed (different clocks with no `/clock`, nothing to pair, ...); None
    /// when it answered.
    pub error: Option<String>,
    /// The command and response series as matched (one clock axis), for figures; not in JSON.
    #[serde(skip)]
    pub series: Option<(JointSeries, JointSeries)>,
}

/// One matched pair's delay, for the first screen.
#[derive(Debug, Clone, Serialize)]
pub struct DelayVerdict {
    /// The command topic.
    pub command: String,
    /// The response topic.
    pub response: String,
    /// How long the response follows the command.
    pub delay_ns: i64,
    /// `delay_ns` in milliseconds.
    pub delay_ms: f64,
    /// How the delay was found: `event_pairs` or `error_curve_min`.
    pub method: String,
    /// RMS of response − command over the pairs before correcting for the delay (the joints'
    /// unit: radians for revolute joints).
    pub error_before_rms: f64,
    /// The same RMS after shifting the response back by the delay.
    pub error_after_rms: f64,
    /// How the two topics were put on one clock, in words, when they were on different ones;
    /// None when no mapping was needed.
    pub clock_mapping: Option<String>,
}

/// One sensor pair's synchronizer outcome, for the first screen.
#[derive(Debug, Clone, Serialize)]
pub struct SyncVerdict {
    /// `exact` or `approximate`, as in [`SyncEntry::kind`].
    pub kind: String,
    /// The pair's topics.
    pub topics: Vec<String>,
    /// The policy emulated or recommended for (`exact`, `approx-py`); empty when `sync`
    /// failed.
    pub policy: String,
    /// Sets per message of the sparser topic: at the recommendation for an `approximate` pair,
    /// of the emulation for an `exact` one; None when there is neither.
    pub match_rate: Option<f64>,
    /// The recommended slop; None without a recommendation.
    pub slop_ns: Option<i64>,
    /// The recommended queue size; None without a recommendation.
    pub queue_size: Option<usize>,
    /// Why no slop / queue_size is recommended (too few messages, frozen stamps, stamps on
    /// different clocks, ...), when none is.
    pub no_recommendation: Option<String>,
}

/// The first screen: the facts a reader (or a truth file) checks first.
#[derive(Debug, Clone, Serialize)]
pub struct Verdicts {
    /// Last − first log time of the bag (`info`'s `duration_ns`).
    pub duration_ns: i64,
    /// Messages in the bag, all topics.
    pub message_count: u64,
    /// Topics the bag declares.
    pub topic_count: usize,
    /// The clock the recorder's log times are on (`wall`, or `sim` with `use_sim_time`).
    pub recorder_axis: String,
    /// topic → clock axis (wall, sim, relative, zero, none, mixed).
    pub clock_axes: BTreeMap<String, String>,
    /// Stamped topics are on different clocks (see `clocks`).
    pub split: bool,
    /// Sim seconds per log-time second from the `/clock` fit; None without a sim clock.
    pub sim_clock_rate: Option<f64>,
    /// The delay of every pair that matched.
    pub delays: Vec<DelayVerdict>,
    /// Check finding code → count.
    pub faults: BTreeMap<String, usize>,
    /// The outcome of every sensor pair's synchronizer.
    pub sync: Vec<SyncVerdict>,
    /// Topics whose lag has more than one mode → mode centres (ns).
    pub multimodal_lag: BTreeMap<String, Vec<i64>>,
    /// Messages that could not be read at all (cut file, bad CRC, missing split file, loss the
    /// recorder logged); not topics that could not be decoded.
    pub data_loss: bool,
    /// Warnings of all the analyses together, duplicates counted once.
    pub warning_count: usize,
    /// Every finding by code, worst first (errors, then warnings, then info), as `clocks
    /// --json` and `check --json` give them.
    pub findings: Vec<VerdictFinding>,
}

/// `observe`'s summary of the bag under the contract (`observations` in `report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct ObservationsEntry {
    /// The contract file.
    pub contract: String,
    /// Its content hash.
    pub policy_version: String,
    /// The summary `observe --json` prints; None when the builder failed.
    pub summary: Option<ObserveSummary>,
    /// Why it failed; None when it answered.
    pub error: Option<String>,
}

/// Everything `report` shows but its figures (the first keys of `report.json`, in order).
#[derive(Debug, Clone, Serialize)]
pub struct ReportData {
    /// The path the bag was opened from.
    pub bag: String,
    /// The bag's display name (a folder's name, a `.mcap` file's stem).
    pub name: String,
    /// The first screen.
    pub verdicts: Verdicts,
    /// `info`'s report.
    pub info: InfoReport,
    /// `clocks`' report.
    pub clocks: ClocksCommandReport,
    /// Each topic's lag distribution (log time − stamp), in the clocks report's topic order.
    pub lag_distributions: Vec<Distribution>,
    /// Each lag distribution's series (log time, lag), for figures; not in JSON.
    #[serde(skip)]
    pub lag_series: Vec<LagSeries>,
    /// The synchronizers emulated on sensor pairs (at most [`MAX_SYNC_PAIRS`]).
    pub sync: Vec<SyncEntry>,
    /// The command/response pairs matched; `match` in JSON.
    #[serde(rename = "match")]
    pub matching: Vec<MatchEntry>,
    /// `check`'s report; None when `check` failed.
    pub check: Option<CheckReport>,
    /// Why `check` failed; None when it answered.
    pub check_error: Option<String>,
    /// Every warning of every underlying report, deduplicated and sorted.
    pub warnings: Vec<Warning>,
    /// `observe`'s summary under the contract given; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observations: Option<ObservationsEntry>,
}

impl crate::CommandReport for ReportData {
    fn warnings(&self) -> Vec<&Warning> {
        self.warnings.iter().collect()
    }

    /// Messages of the bag could not be read (the verdicts' data loss, which also counts loss
    /// the recorder logged).
    fn data_loss(&self) -> bool {
        self.verdicts.data_loss
    }
}

fn norm_type(t: &str) -> String {
    t.replace("/msg/", "/")
}

fn namespace(topic: &str) -> &str {
    topic.rsplit_once('/').map(|(a, _)| a).unwrap_or("")
}

/// Image + CameraInfo in one namespace (exact), and every pair of Image / PointCloud2 / Imu
/// topics not already paired exactly (approximate), sorted by topic name.
fn sensor_pairs(info: &InfoReport) -> Vec<(String, Vec<String>)> {
    let of = |ty: &str| -> Vec<String> {
        let mut v: Vec<String> = info
            .topics
            .iter()
            .filter(|t| norm_type(&t.type_name) == ty && t.count > 0)
            .map(|t| t.topic.clone())
            .collect();
        v.sort();
        v
    };
    let images = of("sensor_msgs/Image");
    let infos = of("sensor_msgs/CameraInfo");
    let mut out = Vec::new();
    for ci in &infos {
        let ns = namespace(ci);
        let mut cands: Vec<&String> = images.iter().filter(|i| namespace(i) == ns).collect();
        // Prefer image_raw, as `check` does.
        cands.sort_by_key(|i| (!i.ends_with("image_raw"), (*i).clone()));
        if let Some(img) = cands.first() {
            out.push(("exact".to_string(), vec![(*img).clone(), ci.clone()]));
        }
    }
    let mut sensors: Vec<String> = images.clone();
    sensors.extend(of("sensor_msgs/PointCloud2"));
    sensors.extend(of("sensor_msgs/Imu"));
    sensors.sort();
    sensors.dedup();
    for (i, a) in sensors.iter().enumerate() {
        for b in &sensors[i + 1..] {
            out.push(("approximate".to_string(), vec![a.clone(), b.clone()]));
        }
    }
    out
}

fn sync_opts(topics: Vec<String>, exact: bool) -> SyncOptions {
    let policy = if exact {
        Policy::Exact
    } else {
        Policy::ApproxPy
    };
    SyncOptions {
        recommend: !exact,
        ..SyncOptions::new(topics, policy, 10)
    }
}

fn match_pairs(info: &InfoReport) -> Vec<(String, String)> {
    let of = |ty: &str| -> Vec<String> {
        let mut v: Vec<String> = info
            .topics
            .iter()
            .filter(|t| norm_type(&t.type_name) == ty)
            .map(|t| t.topic.clone())
            .collect();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for c in of("trajectory_msgs/JointTrajectory") {
        for r in of("sensor_msgs/JointState") {
            out.push((c.clone(), r));
        }
    }
    out
}

fn axis_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `bagscope report`'s data for an open bag: `info` beside one scan for `clocks` and `check`
/// (every message read once), a synchronizer on each sensor pair and every command/response
/// pair matched (side by side, from the same open bag and the times that scan read), the
/// observations under `o.contract`, and the verdicts. Errors on a pair naming a topic the bag
/// lacks, and when the scan fails; an analysis that fails on a pair is an entry with its
/// error.
pub fn report_data(bag: &Bag, o: &ReportOptions) -> Result<ReportData, Error> {
    let io = bag.reader();
    let path = io.path.as_path();
    // `info` (the message indexes) beside the scan of the chunks (`clocks` and `check` from
    // that one scan; `check` as the command does, joint stamps up to 5 ms ahead of the
    // recorder are jitter).
    let (info_r, scanned) = rayon::join(
        || info_of(io),
        || clocks_and_check_of(io, &AnalysisOptions::default(), &CheckOptions::default()),
    );
    // Pairs asked for must name topics of the bag (a typo is a usage error, not a quiet skip).
    for (c, r) in &o.pairs {
        if let Some(t) = [c, r]
            .into_iter()
            .find(|t| !info_r.topics.iter().any(|x| &&x.topic == t))
        {
            let known: Vec<&str> = info_r.topics.iter().map(|x| x.topic.as_str()).collect();
            return Err(Error::invalid(
                "pairs",
                format!(
                    "{c}:{r}: topic {t} is not in the bag (the bag has: {})",
                    known.join(", ")
                ),
            ));
        }
    }
    let (mut cd, check_r) = scanned?;
    let pairs = if o.pairs.is_empty() {
        match_pairs(&info_r)
    } else {
        o.pairs.clone()
    };
    // `match` classifies its topics' clocks from these times (the pairs' topics and `/clock`)
    // instead of reading them again; the rest are freed once the lag series are made.
    let for_match: Vec<bool> = io
        .topics
        .iter()
        .map(|t| t.name == "/clock" || pairs.iter().any(|(c, r)| t.name == *c || t.name == *r))
        .collect();
    let (lag_distributions, lag_series): (Vec<Distribution>, Vec<LagSeries>) =
        lag_distributions(&cd, 60)
            .into_iter()
            .map(|(d, x, y)| (d, (x, y)))
            .unzip();
    let mut match_times = std::mem::take(&mut cd.times);
    for (t, keep) in match_times.iter_mut().zip(&for_match) {
        if !keep {
            t.log_time_ns = Vec::new();
            t.publish_time_ns = Vec::new();
            t.stamp_ns = Vec::new();
        }
    }
    let (sync_entries, match_entries) = pair_analyses(io, &info_r, &pairs, &match_times);
    drop(match_times);
    let observations = o.contract.as_ref().map(|c| observations(io, c));

    let mut warnings: Vec<Warning> = info_r.warnings.clone();
    warnings.extend(cd.report.warnings.iter().cloned());
    for s in sync_entries.iter().filter_map(|s| s.report.as_ref()) {
        warnings.extend(s.warnings.iter().cloned());
    }
    for m in match_entries.iter().filter_map(|m| m.report.as_ref()) {
        warnings.extend(m.warnings.iter().cloned());
    }
    warnings.extend(check_r.warnings.iter().cloned());
    warnings.sort();
    warnings.dedup();
    let verdicts = verdicts(
        &info_r,
        &cd.report,
        &sync_entries,
        &match_entries,
        Some(&check_r),
        &warnings,
    );
    Ok(ReportData {
        bag: path.display().to_string(),
        name: crate::bag_name(path),
        verdicts,
        info: info_r,
        clocks: cd.report,
        lag_distributions,
        lag_series,
        sync: sync_entries,
        matching: match_entries,
        check: Some(check_r),
        check_error: None,
        warnings,
        observations,
    })
}

/// A synchronizer on each sensor pair and every command/response pair matched, from the
/// same open bag and the topics' times already read (`match_times`).
fn pair_analyses(
    io: &bagscope_bag::Bag,
    info_r: &InfoReport,
    pairs: &[(String, String)],
    match_times: &[bagscope_clocks::TopicTimes],
) -> (Vec<SyncEntry>, Vec<MatchEntry>) {
    // Synchronizer emulations and matches read their own few topics of the same open bag:
    // independent of each other, run side by side.
    let sync_of_pair = |(kind, topics): (String, Vec<String>)| {
        let res = sync_of(io, &sync_opts(topics.clone(), kind == "exact"));
        SyncEntry {
            kind,
            topics,
            error: res.as_ref().err().map(|e| e.to_string()),
            report: res.ok(),
        }
    };
    let match_of = |(c, r): &(String, String)| {
        let args = MatchArgs {
            command: c.clone(),
            response: r.clone(),
            ..Default::default()
        };
        let res = match_bag_series_with_times(io, &args, match_times);
        let (report, series, error) = match res {
            Ok((rep, cs, rs)) => (Some(rep), Some((cs, rs)), None),
            Err(e) => (None, None, Some(e.to_string())),
        };
        MatchEntry {
            command: c.clone(),
            response: r.clone(),
            report,
            error,
            series,
        }
    };
    rayon::join(
        || {
            sensor_pairs(info_r)
                .into_iter()
                .take(MAX_SYNC_PAIRS)
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(sync_of_pair)
                .collect()
        },
        || pairs.par_iter().map(match_of).collect(),
    )
}

/// `observe` under the contract, for its summary (no files written).
fn observations(bag: &bagscope_bag::Bag, c: &LoadedContract) -> ObservationsEntry {
    let (summary, error) = match observe_summary(bag, c) {
        Ok(r) => (Some(r.report.summary), None),
        Err(e) => (None, Some(e.to_string())),
    };
    ObservationsEntry {
        contract: c.path.display().to_string(),
        policy_version: c.policy_version.clone(),
        summary,
        error,
    }
}

/// The first screen from the reports: durations, clock axes, delays, faults, the
/// synchronizers' outcomes, multimodal lags, and the findings of every warning and check hit.
fn verdicts(
    info_r: &InfoReport,
    clocks_r: &ClocksCommandReport,
    sync_entries: &[SyncEntry],
    match_entries: &[MatchEntry],
    check_r: Option<&CheckReport>,
    warnings: &[Warning],
) -> Verdicts {
    let hits = check_r.map(|c| check_hits(&c.findings)).unwrap_or_default();
    let summary = summarise(warnings, &hits, clocks_r.split);
    Verdicts {
        duration_ns: info_r.duration_ns,
        message_count: info_r.message_count,
        topic_count: info_r.topics.len(),
        recorder_axis: axis_name(&clocks_r.recorder_axis),
        clock_axes: clocks_r
            .topics
            .iter()
            .map(|t| (t.topic.clone(), axis_name(&t.axis)))
            .collect(),
        split: clocks_r.split,
        sim_clock_rate: clocks_r.sim_clock.as_ref().map(|c| c.rate),
        delays: match_entries
            .iter()
            .filter_map(|m| m.report.as_ref())
            .map(|m| DelayVerdict {
                command: m.command_topic.clone(),
                response: m.response_topic.clone(),
                delay_ns: m.report.delay_ns,
                delay_ms: m.report.delay_ns as f64 / 1e6,
                method: m.report.method.clone(),
                error_before_rms: m.report.error_before.rms,
                error_after_rms: m.report.error_after.rms,
                clock_mapping: m.report.clock_mapping.as_ref().map(|c| c.note.clone()),
            })
            .collect(),
        faults: check_r.map(|c| c.counts.clone()).unwrap_or_default(),
        sync: sync_entries
            .iter()
            .map(|s| {
                let r = s.report.as_ref();
                let rec = r.and_then(|r| r.recommendation.as_ref());
                SyncVerdict {
                    kind: s.kind.clone(),
                    topics: s.topics.clone(),
                    policy: r
                        .and_then(|r| r.policy())
                        .map(|p| axis_name(&p))
                        .unwrap_or_default(),
                    match_rate: rec
                        .map(|x| x.recommendation.match_rate)
                        .or_else(|| r.and_then(|r| r.report.as_ref()).map(|x| x.match_rate)),
                    slop_ns: rec.map(|x| x.recommendation.slop_ns),
                    queue_size: rec.map(|x| x.recommendation.queue_size),
                    no_recommendation: r
                        .and_then(|r| r.no_recommendation.as_ref())
                        .map(|n| n.message.clone()),
                }
            })
            .collect(),
        multimodal_lag: clocks_r
            .topics
            .iter()
            .filter(|t| t.lag_modes_ns.len() > 1)
            .map(|t| (t.topic.clone(), t.lag_modes_ns.clone()))
            .collect(),
        data_loss: summary.data_loss,
        warning_count: warnings.len(),
        findings: summary.findings,
    }
}
