//! `bagscope sync`: replay the bag's arrivals through a message_filters policy, or sweep slop and
//! queue size to recommend them.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};
use bagscope_msg::StampSource;
use bagscope_sync::{
    diagnose, emulate, recommend, summarize, Arrival, DiagnoseHints, Diagnosis, NoRecommendation,
    Policy, RateConfig, RecommendInput, Recommendation, SyncConfig, SyncError, SyncOutcome,
    SyncReport, TopicSeries,
};

use crate::series::{locators, topic_schemas};
use crate::Error;

#[derive(Debug, Clone)]
pub struct SyncOptions {
    pub topics: Vec<String>,
    pub policy: Policy,
    pub queue_size: usize,
    pub slop_ns: Option<i64>,
    pub age_penalty: Option<f64>,
    pub max_interval_ns: Option<i64>,
    pub lower_bounds_ns: Vec<(String, i64)>,
    pub queue_offsets_ns: Vec<(String, i64)>,
    /// approx-epsilon: the tolerance (required, >= 0).
    pub epsilon_ns: Option<i64>,
    /// latest: one entry (`setRateConfig`) or one per topic in `topics` order
    /// (`setRateConfigPerMessage`); empty = upstream defaults.
    pub rate_config: Vec<RateConfig>,
    pub allow_headerless: bool,
    pub sync_arrival_time: bool,
    pub recommend: bool,
    pub speed_mps: Option<f64>,
    pub fx_px: Option<f64>,
    pub depth_m: Option<f64>,
    pub pixel_budget: Option<f64>,
    pub evidence: Option<PathBuf>,
    /// Dropped messages go to their own file: the evidence file holds exactly one line per set.
    pub evidence_drops: Option<PathBuf>,
    /// Freshness: reject a set whose anchor is older than this when it completes.
    pub max_age_ns: Option<i64>,
    /// The reference member for `max_age_ns` (default: the first topic).
    pub anchor: Option<String>,
    /// Reject sets whose members cannot all be transformed into this frame at their stamps.
    pub tf_target: Option<String>,
    /// TF topics for `tf_target` (default `/tf`, `/tf_static`).
    pub tf_topics: Vec<String>,
    pub tf_cache_ns: Option<i64>,
}

/// Freshness checks applied after the policy (see `bagscope_sync::apply_freshness`).
#[derive(Debug, Clone, Serialize)]
pub struct SyncFreshness {
    pub anchor_topic: String,
    pub tf_target: Option<String>,
    pub tf_topics: Vec<String>,
    #[serde(flatten)]
    pub report: bagscope_sync::FreshnessReport,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopicUsed {
    pub topic: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub messages: usize,
    pub stamp_source: StampSource,
}

#[derive(Debug, Clone, Serialize)]
pub struct SyncCommandReport {
    pub bag: String,
    pub topics: Vec<TopicUsed>,
    /// No `policy` field of its own: the emulation's report (the policy emulated) or the
    /// recommendation (the policy recommended for) carries it, flattened; a second one here
    /// would print the key twice, and JSON readers keep only one of them.
    pub queue_size: usize,
    pub slop_ns: Option<i64>,
    /// approx-epsilon's tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_ns: Option<i64>,
    /// latest's rate configuration as given (empty: upstream defaults).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_config: Vec<RateConfig>,
    #[serde(flatten)]
    pub report: Option<SyncReport>,
    pub diagnoses: Vec<Diagnosis>,
    #[serde(flatten)]
    pub recommendation: Option<Recommendation>,
    /// `--recommend` on input that cannot support one (too few messages, frozen stamps,
    /// stamps on different clocks, ...): why, in place of the numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_recommendation: Option<NoRecommendation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness: Option<SyncFreshness>,
    pub warnings: Vec<Warning>,
}

impl SyncCommandReport {
    /// The policy emulated, or (with `--recommend`) the one recommended for.
    pub fn policy(&self) -> Option<Policy> {
        self.report
            .as_ref()
            .map(|r| r.policy)
            .or_else(|| self.recommendation.as_ref().map(|r| r.policy))
            .or_else(|| self.no_recommendation.as_ref().map(|r| r.policy))
    }

    pub fn data_loss(&self) -> bool {
        self.warnings.iter().any(|w| w.data_loss)
    }
}

fn lookup(names: &[String], list: &[(String, i64)], what: &str) -> Result<Vec<i64>, Error> {
    let mut v = vec![0i64; names.len()];
    for (t, d) in list {
        let i = names.iter().position(|n| n == t).ok_or_else(|| {
            Error::Usage(format!("{what} names topic {t}, which is not in --topics"))
        })?;
        v[i] = *d;
    }
    Ok(v)
}

/// Arrivals fed to the synchronizer, the topics as used, and what went wrong reading them.
type Fed = (Vec<Arrival>, Vec<TopicUsed>, Vec<Warning>);

/// The arrivals of the chosen topics in log-time order, with the per-topic message count.
fn arrivals(bag: &Bag, names: &[String]) -> Result<Fed, Error> {
    let idx: Vec<usize> = names
        .iter()
        .map(|n| bag.topic_index(n))
        .collect::<Result<_, _>>()?;
    let mut wanted = vec![false; bag.topics.len()];
    let mut slot = vec![usize::MAX; bag.topics.len()];
    for (k, &i) in idx.iter().enumerate() {
        if wanted[i] {
            return Err(Error::Usage(format!(
                "topic {} given twice",
                bag.topics[i].name
            )));
        }
        wanted[i] = true;
        slot[i] = k;
    }
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    // One i64 a message (24-byte items, the size of an Arrival): the stamp, or a sentinel for
    // "no stamp" / "unreadable" (a ROS stamp's 32-bit seconds never come near i64::MIN).
    const NO_STAMP: i64 = i64::MIN;
    const UNREADABLE: i64 = i64::MIN + 1;
    let scan = bag.scan(&wanted, |m| {
        let loc = &locs[m.topic];
        match loc.source() {
            StampSource::None => NO_STAMP,
            _ => match loc.read_stamp_ns(m.data) {
                // Clamped clear of the sentinels: still negative, so still an invalid stamp.
                Ok(Some(s)) => s.max(UNREADABLE + 1),
                Ok(None) => NO_STAMP,
                Err(_) => UNREADABLE,
            },
        }
    });
    let mut warnings = bag.open_warnings();
    warnings.extend(scan.warnings);
    let mut counts = vec![0usize; names.len()];
    let mut bad = vec![0usize; names.len()];
    // Items and arrivals have the same size, so this collect reuses the scan's buffer in place
    // instead of holding both (24 bytes a message less at the peak).
    let out: Vec<Arrival> = scan
        .items
        .into_iter()
        .filter_map(|it| {
            let k = slot[it.topic];
            match it.value {
                UNREADABLE => {
                    bad[k] += 1;
                    None
                }
                v => {
                    counts[k] += 1;
                    Some(Arrival::new(
                        k,
                        (v != NO_STAMP).then_some(v),
                        it.log_time_ns,
                    ))
                }
            }
        })
        .collect();
    let used = idx
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            if bad[k] > 0 {
                warnings.push(
                    Warning::new(
                        WarningCode::StampUnreadable,
                        format!("{} message(s) with an unreadable stamp were not fed to the synchronizer", bad[k]),
                    )
                    .topic(&bag.topics[i].name)
                    .loss(),
                );
            }
            if locs[i].source() == StampSource::None {
                warnings.push(
                    Warning::new(
                        WarningCode::Headerless,
                        "topic has no header stamp: message_filters would reject it unless allow_headerless is set (log time used as its time)",
                    )
                    .topic(&bag.topics[i].name),
                );
            }
            TopicUsed {
                topic: bag.topics[i].name.clone(),
                type_name: bag.topics[i].type_name.clone(),
                messages: counts[k],
                stamp_source: locs[i].source(),
            }
        })
        .collect();
    Ok((out, used, warnings))
}

fn stamp_axes_split(arr: &[Arrival], n: usize) -> bool {
    // Epoch stamps (after 1973) on some topics and small ones on others cannot be paired.
    let mut wall = vec![None; n];
    for a in arr {
        if let Some(s) = a.stamp_ns() {
            if s != 0 {
                wall[a.topic].get_or_insert(bagscope_types::is_wall_ns(s));
            }
        }
    }
    let kinds: Vec<bool> = wall.into_iter().flatten().collect();
    kinds.iter().any(|&w| w) && kinds.iter().any(|&w| !w)
}

pub fn sync(path: &Path, o: &SyncOptions) -> Result<SyncCommandReport, Error> {
    if o.topics.len() < 2 || o.topics.len() > 9 {
        return Err(Error::Usage(format!(
            "--topics needs 2 to 9 topics, got {}",
            o.topics.len()
        )));
    }
    let bag = Bag::open(path)?;
    // Before any work: an evidence file must not replace the bag it is about.
    let evidence: Vec<&Path> = [&o.evidence, &o.evidence_drops]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    crate::refuse_bag_files(&bag, &evidence)?;
    let (mut arr, used, mut warnings) = arrivals(&bag, &o.topics)?;
    if o.policy == Policy::Latest {
        // LatestTime takes header-less messages: it never reads a stamp.
        warnings.retain(|w| w.code != WarningCode::Headerless);
    }
    let n = o.topics.len();
    let mut cfg = SyncConfig::new(o.policy, n, o.queue_size);
    if let Some(s) = o.slop_ns {
        cfg.slop_ns = s;
    }
    if let Some(a) = o.age_penalty {
        cfg.age_penalty = a;
    }
    cfg.max_interval_ns = o.max_interval_ns;
    cfg.lower_bounds_ns = lookup(&o.topics, &o.lower_bounds_ns, "--lower-bound")?;
    cfg.queue_offset_ns = lookup(&o.topics, &o.queue_offsets_ns, "--queue-offset")?;
    cfg.allow_headerless = o.allow_headerless;
    cfg.sync_arrival_time = o.sync_arrival_time;
    if let Some(e) = o.epsilon_ns {
        cfg.epsilon_ns = e;
    } else if o.policy == Policy::ApproxEpsilon && !o.recommend {
        return Err(Error::Usage(
            "--policy approx-epsilon needs --epsilon DUR (its tolerance has no upstream default)"
                .into(),
        ));
    }
    if !o.rate_config.is_empty() && o.policy != Policy::Latest {
        return Err(Error::Usage(
            "--rate-config applies to --policy latest only".into(),
        ));
    }
    cfg.rate_config = o.rate_config.clone();
    cfg.validate().map_err(|e| Error::Usage(e.to_string()))?;
    let split = stamp_axes_split(&arr, n);
    // LatestTime never reads stamps: their clocks do not matter to it.
    if split && o.policy != Policy::Latest {
        warnings.push(Warning::new(
            WarningCode::SplitClockAxes,
            "the topics' stamps are on different clocks (wall vs sim/relative): no synchronizer can pair them; see `bagscope clocks`",
        ));
    }

    let (recommendation, no_recommendation) = if o.recommend {
        let mut series: Vec<TopicSeries> = (0..n)
            .map(|_| TopicSeries {
                stamps_ns: Vec::new(),
                arrival_ns: Vec::new(),
            })
            .collect();
        for a in &arr {
            // Header-less messages take their arrival time, as allow_headerless would.
            let s = &mut series[a.topic];
            s.stamps_ns.push(a.stamp_ns().unwrap_or(a.arrival_ns));
            s.arrival_ns.push(a.arrival_ns);
        }
        let policy = match o.policy {
            Policy::Approx if o.max_interval_ns.is_some() => Policy::Approx,
            Policy::ApproxEpsilon => Policy::ApproxEpsilon,
            _ => Policy::ApproxPy,
        };
        let mut input = RecommendInput::new(policy, series);
        // The sweeps replay the arrivals in the bag's order, as `sync` does (log-time ties
        // keep file order), with the same stamp substitution as the series. Nothing else
        // reads them when recommending: moved, not copied.
        input.arrivals = Some(
            std::mem::take(&mut arr)
                .into_iter()
                .map(|a| {
                    Arrival::new(
                        a.topic,
                        Some(a.stamp_ns().unwrap_or(a.arrival_ns)),
                        a.arrival_ns,
                    )
                })
                .collect(),
        );
        input.speed_mps = o.speed_mps;
        input.fx_px = o.fx_px;
        input.depth_m = o.depth_m;
        input.pixel_budget = o.pixel_budget;
        input.topic_names = o.topics.clone();
        match recommend(&input) {
            Ok(r) => (Some(r), None),
            Err(SyncError::NoRecommendation(why)) => (None, Some(*why)),
            Err(e) => return Err(Error::Analysis(e.to_string())),
        }
    } else {
        (None, None)
    };

    let mut freshness = None;
    let (report, diagnoses) = if o.recommend {
        (None, Vec::new())
    } else {
        let outcome = emulate(&cfg, &arr).map_err(|e| match e {
            SyncError::UndefinedUpstream {
                arrival_index,
                topic,
                message,
                ..
            } => Error::Analysis(format!(
                "{}: {message} (input {topic} is {}, that message's log time {} ns)",
                path.display(),
                o.topics[topic],
                arr.get(arrival_index).map_or(0, |a| a.arrival_ns)
            )),
            e => Error::Analysis(e.to_string()),
        })?;
        freshness = freshness_check(&bag, o, &arr, &outcome, &mut warnings)?;
        if let Some(p) = &o.evidence {
            write_sets(p, &o.topics, &arr, &outcome, freshness.as_ref())?;
        }
        if let Some(p) = &o.evidence_drops {
            write_drops(p, &o.topics, &arr, &outcome)?;
        }
        let report = summarize(&cfg, &arr, &outcome);
        let hints = DiagnoseHints {
            split_clock_axes: split,
            headerless_topics: used
                .iter()
                .enumerate()
                .filter(|(_, u)| u.stamp_source == StampSource::None)
                .map(|(k, _)| k)
                .collect(),
            ..Default::default()
        };
        let d = diagnose(&cfg, &arr, &outcome, &hints);
        (Some(report), d)
    };
    warnings.sort();
    warnings.dedup();
    Ok(SyncCommandReport {
        bag: path.display().to_string(),
        topics: used,
        queue_size: o.queue_size,
        slop_ns: o.slop_ns,
        epsilon_ns: o.epsilon_ns,
        rate_config: o.rate_config.clone(),
        report,
        diagnoses,
        recommendation,
        no_recommendation,
        freshness,
        warnings,
    })
}

/// `--max-age` / `--tf-target`: which emitted sets a callback checking freshness would reject.
fn freshness_check(
    bag: &Bag,
    o: &SyncOptions,
    arr: &[Arrival],
    outcome: &SyncOutcome,
    warnings: &mut Vec<Warning>,
) -> Result<Option<SyncFreshness>, Error> {
    if o.max_age_ns.is_none() && o.tf_target.is_none() {
        return Ok(None);
    }
    let anchor_topic = o.anchor.clone().unwrap_or_else(|| o.topics[0].clone());
    let anchor = o
        .topics
        .iter()
        .position(|t| *t == anchor_topic)
        .ok_or_else(|| Error::Usage(format!("--anchor {anchor_topic} is not in --topics")))?;
    let tf_topics: Vec<String> = if o.tf_topics.is_empty() {
        crate::tf::DEFAULT_TF_TOPICS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        o.tf_topics.clone()
    };
    // ok[set][member]
    let mut ok: Vec<Vec<bool>> = Vec::new();
    if let Some(target) = &o.tf_target {
        let st = crate::tf::sync_tf(bag, &tf_topics, &o.topics)?;
        warnings.extend(st.warnings);
        let mut queries = Vec::new();
        for s in &outcome.sets {
            for (k, (&idx, &ai)) in s.members.iter().zip(&s.member_arrivals).enumerate() {
                queries.push(bagscope_tf::Query {
                    asof_log_ns: s.emit_arrival_ns,
                    frame_id: st
                        .frames
                        .get(k)
                        .and_then(|f| f.get(idx))
                        .map(|f| f.to_string())
                        .unwrap_or_default(),
                    stamp_ns: arr
                        .get(ai)
                        .and_then(|a| a.stamp_ns())
                        .unwrap_or(s.stamps_ns[k]),
                });
            }
        }
        let cache = o.tf_cache_ns.unwrap_or(bagscope_tf::DEFAULT_CACHE_NS);
        let res = bagscope_tf::availability(target, cache, &st.tf, &queries);
        let mut it = res.into_iter();
        for s in &outcome.sets {
            ok.push(
                s.members
                    .iter()
                    .map(|_| it.next().is_some_and(|r| r.is_ok()))
                    .collect(),
            );
        }
    }
    let cfg = bagscope_sync::FreshnessConfig {
        anchor,
        max_age_ns: o.max_age_ns,
    };
    let frame_ok =
        |set: usize, k: usize| ok.get(set).and_then(|v| v.get(k)).copied().unwrap_or(true);
    let report = bagscope_sync::apply_freshness(outcome, &cfg, &frame_ok);
    Ok(Some(SyncFreshness {
        anchor_topic,
        tf_target: o.tf_target.clone(),
        tf_topics: if o.tf_target.is_some() {
            tf_topics
        } else {
            Vec::new()
        },
        report,
    }))
}

#[derive(Serialize)]
struct EvMember<'a> {
    topic: &'a str,
    index: usize,
    stamp_ns: Option<i64>,
    log_time_ns: i64,
}

fn jsonl(path: &Path, lines: impl Iterator<Item = serde_json::Value>) -> Result<(), Error> {
    let io = |e: std::io::Error| {
        Error::Analysis(format!(
            "cannot write evidence file {}: {e}",
            path.display()
        ))
    };
    let f = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(f);
    for l in lines {
        writeln!(w, "{l}").map_err(io)?;
    }
    w.flush().map_err(io)
}

/// One JSON line per emitted set, in emit order.
fn write_sets(
    path: &Path,
    names: &[String],
    arr: &[Arrival],
    o: &SyncOutcome,
    fresh: Option<&SyncFreshness>,
) -> Result<(), Error> {
    let rejected: std::collections::BTreeMap<usize, bagscope_sync::SetRejection> = fresh
        .map(|f| {
            f.report
                .rejected_sets
                .iter()
                .map(|r| (r.set, r.reason))
                .collect()
        })
        .unwrap_or_default();
    jsonl(path, o.sets.iter().enumerate().map(|(i, s)| {
        let members: Vec<EvMember> = s
            .members
            .iter()
            .zip(&s.member_arrivals)
            .enumerate()
            .map(|(k, (&index, &ai))| EvMember {
                topic: &names[k],
                index,
                stamp_ns: arr[ai].stamp_ns(),
                log_time_ns: arr[ai].arrival_ns,
            })
            .collect();
        let mut line = serde_json::json!({
            "members": members,
            "span_ns": s.stamps_ns.iter().max().copied().unwrap_or(0) - s.stamps_ns.iter().min().copied().unwrap_or(0),
            "emit_log_time_ns": s.emit_arrival_ns,
        });
        // Only with --max-age / --tf-target, so plain evidence files keep their format.
        if let Some(r) = rejected.get(&i) {
            line["rejected"] = serde_json::json!(r);
        }
        line
    }))
}

/// One JSON line per message that never made it into a set, with the reason.
fn write_drops(
    path: &Path,
    names: &[String],
    arr: &[Arrival],
    o: &SyncOutcome,
) -> Result<(), Error> {
    jsonl(
        path,
        o.drops.iter().map(|d| {
            serde_json::json!({
                "dropped": {
                    "topic": names[d.topic],
                    "index": d.index,
                    "stamp_ns": d.stamp_ns,
                    "log_time_ns": arr.get(d.arrival_index).map(|a| a.arrival_ns),
                    "reason": d.reason,
                    "span_ns": d.span_ns,
                    "missing_topic": d.missing_topic.and_then(|k| names.get(k)),
                }
            })
        }),
    )
}
