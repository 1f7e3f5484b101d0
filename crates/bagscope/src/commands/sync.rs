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

use crate::params::{Duration, TopicDuration};
use crate::series::{locators, topic_schemas};
use crate::Error;

/// Which synchronizer `sync` emulates and with which parameters (`Default`: approx-py, queue
/// 10, every other parameter at upstream's default). The fields are the parameters' names
/// (Python's keywords; the CLI's flags, `lower_bounds` as `--lower-bound`, `queue` also as
/// `--queue-size`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct SyncOptions {
    /// Topics to synchronize, in the order of the synchronizer's inputs (2 to 9).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_delimiter = ',', num_args = 1.., required = true)
    )]
    pub topics: Vec<String>,
    /// exact, approx, exact-py, exact-py-legacy, approx-py, approx-epsilon, latest
    /// (see docs/sync.md); with `recommend`, the policy recommended for.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = SyncOptions::default().policy))]
    pub policy: Policy,
    /// queue_size of the synchronizer (latest has none).
    #[cfg_attr(
        feature = "clap",
        arg(long = "queue", alias = "queue-size", default_value_t = SyncOptions::default().queue)
    )]
    pub queue: usize,
    /// approx-py slop: seconds ('0.05', as the Python API converts it) or with a unit ('50ms').
    /// Without it, the slop `recommend` would recommend is used, and said.
    #[cfg_attr(feature = "clap", arg(long))]
    pub slop: Option<Duration>,
    /// approx: age penalty (default 0.1, as upstream).
    #[cfg_attr(feature = "clap", arg(long))]
    pub age_penalty: Option<f64>,
    /// approx: max interval duration.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_interval: Option<Duration>,
    /// approx: inter-message lower bound per topic, TOPIC=DUR (repeatable).
    #[cfg_attr(feature = "clap", arg(long = "lower-bound", value_name = "TOPIC=DUR"))]
    #[serde(deserialize_with = "crate::params::topic_durations")]
    pub lower_bounds: Vec<TopicDuration>,
    /// approx-py: queue offset per topic, TOPIC=DUR (repeatable).
    #[cfg_attr(feature = "clap", arg(long = "queue-offset", value_name = "TOPIC=DUR"))]
    #[serde(deserialize_with = "crate::params::topic_durations")]
    pub queue_offsets: Vec<TopicDuration>,
    /// approx-epsilon: tolerance from the oldest front (inclusive, >= 0).
    #[cfg_attr(feature = "clap", arg(long))]
    pub epsilon: Option<Duration>,
    /// latest: A,E,M (rate EMA alpha, error EMA alpha, step-change margin). Once =
    /// setRateConfig; once per topic, in topics order = setRateConfigPerMessage.
    #[cfg_attr(feature = "clap", arg(long = "rate-config", value_name = "A,E,M"))]
    pub rate_config: Vec<RateConfig>,
    /// approx-py: accept header-less messages (their arrival time is used).
    #[cfg_attr(feature = "clap", arg(long))]
    pub allow_headerless: bool,
    /// approx-py: synchronize on arrival time instead of header stamps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub sync_arrival_time: bool,
    /// Sweep slop (or epsilon) and queue size and recommend them (approx-py; approx with
    /// max_interval; approx-epsilon) instead of emulating.
    #[cfg_attr(feature = "clap", arg(long))]
    pub recommend: bool,
    /// recommend: platform speed (m/s) to cost a slop as alignment error (v·slop).
    #[cfg_attr(feature = "clap", arg(long))]
    pub speed: Option<f64>,
    /// recommend: focal length (px), for a pixel cost of the slop: fx·v·slop/depth (with
    /// speed, depth).
    #[cfg_attr(feature = "clap", arg(long))]
    pub fx: Option<f64>,
    /// recommend: scene depth (m) for the pixel cost (with speed and fx).
    #[cfg_attr(feature = "clap", arg(long))]
    pub depth: Option<f64>,
    /// recommend: tolerated pixel error: the largest slop whose pixel cost stays within it is
    /// reported.
    #[cfg_attr(feature = "clap", arg(long))]
    pub pixel_budget: Option<f64>,
    /// Write one JSON line per emitted set (its members by topic and index; drops go to
    /// evidence_drops); `-` (CLI): to standard output (the report then goes to standard error).
    #[cfg_attr(feature = "clap", arg(long))]
    pub evidence: Option<PathBuf>,
    /// Write one JSON line per dropped message, with its reason; `-` (CLI): to standard output.
    #[cfg_attr(feature = "clap", arg(long))]
    pub evidence_drops: Option<PathBuf>,
    /// Reject a set whose anchor is older than this when it completes (emit log time - anchor
    /// stamp): counted as `stale_at_emit`, apart from the pairing drops.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_age: Option<Duration>,
    /// The set member max_age measures from (default: the first topic).
    #[cfg_attr(feature = "clap", arg(long))]
    pub anchor: Option<String>,
    /// Reject sets whose members cannot all be transformed into FRAME at their own stamps with
    /// the TF received by the time the set completes (`frame_unavailable`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FRAME"))]
    pub tf_target: Option<String>,
    /// TF topics for tf_target (default /tf,/tf_static; a name ending in tf_static is static).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', num_args = 1..))]
    pub tf_topics: Vec<String>,
    /// tf2 buffer cache length for tf_target (default 10 s).
    #[cfg_attr(feature = "clap", arg(long))]
    pub tf_buffer: Option<Duration>,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions::new(Vec::new(), Policy::ApproxPy, 10)
    }
}

impl SyncOptions {
    /// Emulate `policy` on `topics` with queue size `queue` and every other parameter at
    /// upstream's default (approx-py's slop, when none is set, is the recommended one).
    pub fn new(topics: Vec<String>, policy: Policy, queue: usize) -> Self {
        SyncOptions {
            topics,
            policy,
            queue,
            slop: None,
            age_penalty: None,
            max_interval: None,
            lower_bounds: Vec::new(),
            queue_offsets: Vec::new(),
            epsilon: None,
            rate_config: Vec::new(),
            allow_headerless: false,
            sync_arrival_time: false,
            recommend: false,
            speed: None,
            fx: None,
            depth: None,
            pixel_budget: None,
            evidence: None,
            evidence_drops: None,
            max_age: None,
            anchor: None,
            tf_target: None,
            tf_topics: Vec::new(),
            tf_buffer: None,
        }
    }

    /// Refuses parameters that are out of range or do not apply to the policy and mode asked
    /// for (each named, with what it applies to).
    pub fn validate(&self) -> Result<(), Error> {
        use crate::params::not_applicable as na;
        let p = self.policy;
        let emulating = !self.recommend;
        if self.topics.len() < 2 || self.topics.len() > 9 {
            return Err(Error::invalid(
                "topics",
                format!("needs 2 to 9 topics, got {}", self.topics.len()),
            ));
        }
        let only = |what: &str| format!("applies to `policy` {what} only, not {p}");
        na(self.slop.is_some() && p != Policy::ApproxPy, "slop", || {
            format!(
                "{} (approx-epsilon takes `epsilon`; exact, approx and latest have no slop)",
                only("approx-py")
            )
        })?;
        na(self.slop.is_some() && !emulating, "slop", || {
            "does not apply with `recommend`, which sweeps the slop".into()
        })?;
        na(
            self.epsilon.is_some() && p != Policy::ApproxEpsilon,
            "epsilon",
            || only("approx-epsilon"),
        )?;
        na(self.epsilon.is_some() && !emulating, "epsilon", || {
            "does not apply with `recommend`, which sweeps the epsilon".into()
        })?;
        if p == Policy::ApproxEpsilon && emulating && self.epsilon.is_none() {
            return Err(Error::invalid(
                "epsilon",
                "`policy` approx-epsilon needs an epsilon (its tolerance has no upstream default)",
            ));
        }
        for (set, name) in [
            (self.age_penalty.is_some(), "age_penalty"),
            (self.max_interval.is_some(), "max_interval"),
            (!self.lower_bounds.is_empty(), "lower_bounds"),
        ] {
            na(set && p != Policy::Approx, name, || only("approx"))?;
        }
        for (set, name) in [
            (!self.queue_offsets.is_empty(), "queue_offsets"),
            (self.allow_headerless, "allow_headerless"),
            (self.sync_arrival_time, "sync_arrival_time"),
        ] {
            na(set && p != Policy::ApproxPy, name, || only("approx-py"))?;
        }
        na(
            !self.rate_config.is_empty() && p != Policy::Latest,
            "rate_config",
            || only("latest"),
        )?;
        for (set, name) in [
            (self.speed.is_some(), "speed"),
            (self.fx.is_some(), "fx"),
            (self.depth.is_some(), "depth"),
            (self.pixel_budget.is_some(), "pixel_budget"),
        ] {
            na(set && emulating, name, || {
                "applies with `recommend` only (it costs the recommended slop)".into()
            })?;
        }
        for (set, name) in [
            (self.evidence.is_some(), "evidence"),
            (self.evidence_drops.is_some(), "evidence_drops"),
            (self.max_age.is_some(), "max_age"),
            (self.tf_target.is_some(), "tf_target"),
        ] {
            na(set && !emulating, name, || {
                "does not apply with `recommend` (no sets are emitted)".into()
            })?;
        }
        na(
            self.anchor.is_some() && self.max_age.is_none() && self.tf_target.is_none(),
            "anchor",
            || "applies with `max_age` or `tf_target` only".into(),
        )?;
        for (set, name) in [
            (!self.tf_topics.is_empty(), "tf_topics"),
            (self.tf_buffer.is_some(), "tf_buffer"),
        ] {
            na(set && self.tf_target.is_none(), name, || {
                "applies with `tf_target` only".into()
            })?;
        }
        Ok(())
    }
}

/// Freshness checks applied after the policy (see `bagscope_sync::apply_freshness`).
#[derive(Debug, Clone, Serialize)]
pub struct SyncFreshness {
    /// The set member `max_age_ns` is measured from.
    pub anchor_topic: String,
    /// The frame every member had to be transformable into; None without `tf_target`.
    pub tf_target: Option<String>,
    /// The TF topics read for `tf_target`; empty without it.
    pub tf_topics: Vec<String>,
    /// Sets emitted, accepted and rejected (by reason, and each rejected set in emit order);
    /// flattened into this object in JSON.
    #[serde(flatten)]
    pub report: bagscope_sync::FreshnessReport,
}

/// One topic fed to the synchronizer.
#[derive(Debug, Clone, Serialize)]
pub struct TopicUsed {
    /// The topic name.
    pub topic: String,
    /// The message type as recorded; `type` in JSON.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Messages fed (those with an unreadable stamp are left out and warned about).
    pub messages: usize,
    /// Where the stamp is read from; `none` for a header-less topic (its log time is used).
    pub stamp_source: StampSource,
}

/// `bagscope sync`: the emulated synchronizer's sets and drops, or a recommendation (the CLI's
/// `sync --json`; the emulation's or recommendation's keys sit at the top level).
#[derive(Debug, Clone, Serialize)]
pub struct SyncCommandReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// The topics fed, in the synchronizer's input order.
    pub topics: Vec<TopicUsed>,
    /// No `policy` field of its own: the emulation's report (the policy emulated) or the
    /// recommendation (the policy recommended for) carries it, flattened; a second one here
    /// would print the key twice, and JSON readers keep only one of them.
    pub queue_size: usize,
    /// The slop emulated (approx-py): as given, or the recommended one when none was given
    /// (warning `slop_from_recommendation`); None for the other policies.
    pub slop_ns: Option<i64>,
    /// approx-epsilon's tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon_ns: Option<i64>,
    /// latest's rate configuration as given (empty: upstream defaults).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_config: Vec<RateConfig>,
    /// The emulation: sets emitted, match rate, drops by reason and topic, set spans, queue
    /// occupancy (flattened); None with `recommend`.
    #[serde(flatten)]
    pub report: Option<SyncReport>,
    /// Why sets were not formed, in words, by kind (empty with `recommend`).
    pub diagnoses: Vec<Diagnosis>,
    /// The recommended slop and queue size with the sweep behind them (flattened); None
    /// without `recommend` or when no recommendation can be made.
    #[serde(flatten)]
    pub recommendation: Option<Recommendation>,
    /// `--recommend` on input that cannot support one (too few messages, frozen stamps,
    /// stamps on different clocks, ...): why, in place of the numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_recommendation: Option<NoRecommendation>,
    /// Which emitted sets a callback checking freshness (`max_age_ns`, `tf_target`) would
    /// reject; absent without those options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness: Option<SyncFreshness>,
    /// Bag damage, unreadable stamps (data loss), header-less topics, split clock axes, TF
    /// read problems; sorted.
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
}

fn lookup(names: &[String], list: &[TopicDuration], what: &str) -> Result<Vec<i64>, Error> {
    let mut v = vec![0i64; names.len()];
    for TopicDuration { topic: t, duration } in list {
        let i = names.iter().position(|n| n == t).ok_or_else(|| {
            Error::invalid(what, format!("names topic {t}, which is not in `topics`"))
        })?;
        v[i] = duration.ns();
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
            return Err(Error::invalid(
                "topics",
                format!("topic {} given twice", bag.topics[i].name),
            ));
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

/// `bagscope sync` of the bag at `path`. Errors on fewer than 2 or more than 9 topics, a topic
/// not in the bag or given twice, parameters that do not apply or the synchronizer refuses,
/// or an evidence file that cannot be written.
pub fn sync(path: &Path, o: &SyncOptions) -> Result<SyncCommandReport, Error> {
    o.validate()?;
    sync_of(&Bag::open(path)?, o)
}

/// [`sync`] of an open bag.
pub fn sync_of(bag: &Bag, o: &SyncOptions) -> Result<SyncCommandReport, Error> {
    o.validate()?;
    let path = bag.path.as_path();
    // Before any work: an evidence file must not replace the bag it is about.
    let evidence: Vec<&Path> = [&o.evidence, &o.evidence_drops]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    crate::refuse_outputs(bag, &evidence)?;
    let (mut arr, used, mut warnings) = arrivals(bag, &o.topics)?;
    if o.policy == Policy::Latest {
        // LatestTime takes header-less messages: it never reads a stamp.
        warnings.retain(|w| w.code != WarningCode::Headerless);
    }
    let n = o.topics.len();
    let mut cfg = SyncConfig::new(o.policy, n, o.queue);
    if let Some(s) = o.slop {
        cfg.slop_ns = s.ns();
    }
    if let Some(a) = o.age_penalty {
        cfg.age_penalty = a;
    }
    cfg.max_interval_ns = o.max_interval.map(Duration::ns);
    cfg.lower_bounds_ns = lookup(&o.topics, &o.lower_bounds, "lower_bounds")?;
    cfg.queue_offset_ns = lookup(&o.topics, &o.queue_offsets, "queue_offsets")?;
    cfg.allow_headerless = o.allow_headerless;
    cfg.sync_arrival_time = o.sync_arrival_time;
    if let Some(e) = o.epsilon {
        cfg.epsilon_ns = e.ns();
    }
    cfg.rate_config = o.rate_config.clone();
    cfg.validate()?;
    let split = stamp_axes_split(&arr, n);
    // LatestTime never reads stamps: their clocks do not matter to it.
    if split && o.policy != Policy::Latest {
        warnings.push(Warning::new(
            WarningCode::SplitClockAxes,
            "the topics' stamps are on different clocks (wall vs sim/relative): no synchronizer can pair them; see `bagscope clocks`",
        ));
    }

    let slop_ns = approx_py_slop(o, &arr, n, &mut warnings)?;
    if let Some(x) = slop_ns {
        cfg.slop_ns = x;
    }

    let (recommendation, no_recommendation) = if o.recommend {
        let input = recommend_input(o, std::mem::take(&mut arr), n);
        match recommend(&input) {
            Ok(r) => (Some(r), None),
            Err(SyncError::NoRecommendation(why)) => (None, Some(*why)),
            Err(e) => return Err(e.into()),
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
            } => Error::no_data(format!(
                "{}: {message} (input {topic} is {}, that message's log time {} ns)",
                path.display(),
                o.topics[topic],
                arr.get(arrival_index).map_or(0, |a| a.arrival_ns)
            )),
            e => e.into(),
        })?;
        freshness = freshness_check(bag, o, &arr, &outcome, &mut warnings)?;
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
        queue_size: o.queue,
        slop_ns,
        epsilon_ns: o.epsilon.map(Duration::ns),
        rate_config: o.rate_config.clone(),
        report,
        diagnoses,
        recommendation,
        no_recommendation,
        freshness,
        warnings,
    })
}

/// What `recommend` is given for `o`'s policy: every topic's series and the arrivals in the
/// bag's order (header-less messages keyed on their arrival time, as allow_headerless would).
fn recommend_input(o: &SyncOptions, arr: Vec<Arrival>, n: usize) -> RecommendInput {
    let mut series: Vec<TopicSeries> = (0..n)
        .map(|_| TopicSeries {
            stamps_ns: Vec::new(),
            arrival_ns: Vec::new(),
        })
        .collect();
    for a in &arr {
        let s = &mut series[a.topic];
        s.stamps_ns.push(a.stamp_ns().unwrap_or(a.arrival_ns));
        s.arrival_ns.push(a.arrival_ns);
    }
    let policy = match o.policy {
        Policy::Approx if o.max_interval.is_some() => Policy::Approx,
        Policy::ApproxEpsilon => Policy::ApproxEpsilon,
        _ => Policy::ApproxPy,
    };
    let mut input = RecommendInput::new(policy, series);
    // The sweeps replay the arrivals in the bag's order, as `sync` does (log-time ties keep
    // file order), with the same stamp substitution as the series.
    input.arrivals = Some(
        arr.into_iter()
            .map(|a| {
                Arrival::new(
                    a.topic,
                    Some(a.stamp_ns().unwrap_or(a.arrival_ns)),
                    a.arrival_ns,
                )
            })
            .collect(),
    );
    input.speed_mps = o.speed;
    input.fx_px = o.fx;
    input.depth_m = o.depth;
    input.pixel_budget = o.pixel_budget;
    input.topic_names = o.topics.clone();
    input
}

/// approx-py's slop for an emulation: the one given, or (none given) the one `recommend`
/// recommends, said in a `slop_from_recommendation` warning. A bare number of seconds larger
/// than ten times the faster topic's median period is kept and warned about
/// (`slop_unit_suspect`: "30 s: did you mean 30ms?"). None for the other policies and with
/// `recommend`.
fn approx_py_slop(
    o: &SyncOptions,
    arr: &[Arrival],
    n: usize,
    warnings: &mut Vec<Warning>,
) -> Result<Option<i64>, Error> {
    if o.policy != Policy::ApproxPy || o.recommend {
        return Ok(o.slop.map(Duration::ns));
    }
    let Some(given) = o.slop else {
        let input = recommend_input(o, arr.to_vec(), n);
        return match recommend(&input) {
            Ok(r) => {
                let s = r.recommendation.slop_ns;
                warnings.push(Warning::new(
                    WarningCode::SlopFromRecommendation,
                    format!(
                        "no slop given: emulated with the recommended slop {} (the rule of sync's recommendation); give a slop to choose one",
                        bagscope_types::timefmt::short_ns(s)
                    ),
                ));
                Ok(Some(s))
            }
            Err(SyncError::NoRecommendation(why)) => Err(Error::invalid(
                "slop",
                format!(
                    "`policy` approx-py needs a slop: this bag supports no recommended slop ({})",
                    why.message
                ),
            )),
            Err(e) => Err(e.into()),
        };
    };
    let slop = given.ns();
    if !given.unit_given() {
        if let Some(period) = fastest_median_period_ns(arr, n) {
            if period > 0 && slop > period.saturating_mul(10) {
                let secs = format!("{}", slop as f64 / 1e9);
                warnings.push(Warning::new(
                    WarningCode::SlopUnitSuspect,
                    format!(
                        "slop {secs} is read as {secs} s, more than ten times the faster topic's median period ({}): did you mean {secs}ms?",
                        bagscope_types::timefmt::short_ns(period)
                    ),
                ));
            }
        }
    }
    Ok(Some(slop))
}

/// The shortest of the topics' median periods between sorted distinct stamps (arrival time for
/// messages without one); None when no topic has two distinct stamps.
fn fastest_median_period_ns(arr: &[Arrival], n: usize) -> Option<i64> {
    let mut stamps: Vec<Vec<i64>> = vec![Vec::new(); n];
    for a in arr {
        stamps[a.topic].push(a.stamp_ns().unwrap_or(a.arrival_ns));
    }
    stamps
        .into_iter()
        .filter_map(|mut s| {
            s.sort_unstable();
            s.dedup();
            let mut d: Vec<i64> = s.windows(2).map(|w| w[1] - w[0]).collect();
            if d.is_empty() {
                return None;
            }
            let mid = d.len() / 2;
            Some(*d.select_nth_unstable(mid).1)
        })
        .min()
}

/// `--max-age` / `--tf-target`: which emitted sets a callback checking freshness would reject.
fn freshness_check(
    bag: &Bag,
    o: &SyncOptions,
    arr: &[Arrival],
    outcome: &SyncOutcome,
    warnings: &mut Vec<Warning>,
) -> Result<Option<SyncFreshness>, Error> {
    if o.max_age.is_none() && o.tf_target.is_none() {
        return Ok(None);
    }
    let anchor_topic = o.anchor.clone().unwrap_or_else(|| o.topics[0].clone());
    let anchor = o
        .topics
        .iter()
        .position(|t| *t == anchor_topic)
        .ok_or_else(|| Error::invalid("anchor", format!("{anchor_topic} is not in `topics`")))?;
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
        let cache = o
            .tf_buffer
            .map_or(bagscope_tf::DEFAULT_CACHE_NS, Duration::ns);
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
        max_age_ns: o.max_age.map(Duration::ns),
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
        Error::write_failed(
            path,
            format!("cannot write evidence file {}", path.display()),
            e,
        )
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
