//! `bagscope clocks`: which clock each topic is stamped on, lag, stamp health, `/clock`.

use std::path::Path;

use serde::Serialize;

use bagscope_bag::{Bag, Warning};
use bagscope_clocks::{
    analyze, AxisGroup, ReplayedRecording, SimClockReport, TopicClock, TopicTimes,
};

/// The analysis' options (every threshold), apart from the parameters [`ClocksOptions`] takes.
pub type AnalysisOptions = bagscope_clocks::ClocksOptions;

/// What `clocks` is asked (`Default`: the analysis' defaults). The fields are the parameters'
/// names (Python's keywords, the CLI's flags).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ClocksOptions {
    /// Topic holding sim time (default /clock).
    #[cfg_attr(feature = "clap", arg(long))]
    pub clock_topic: Option<String>,
    /// A gap is an interval longer than this many median periods.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = ClocksOptions::default().gap_factor))]
    pub gap_factor: f64,
}

impl Default for ClocksOptions {
    fn default() -> Self {
        let a = AnalysisOptions::default();
        ClocksOptions {
            clock_topic: a.clock_topic,
            gap_factor: a.gap_factor,
        }
    }
}

impl ClocksOptions {
    /// The analysis' options: these parameters, every other threshold at its default.
    pub fn analysis(&self) -> AnalysisOptions {
        AnalysisOptions {
            clock_topic: self.clock_topic.clone(),
            gap_factor: self.gap_factor,
            ..Default::default()
        }
    }
}

use crate::findings::{summarise, VerdictSummary};
use crate::series::scan_series;
use crate::Error;

/// `bagscope clocks`: which clock each topic is stamped on (the CLI's `clocks --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ClocksCommandReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// The first screen: data loss, split axes, and every finding by code, worst first.
    pub verdicts: VerdictSummary,
    /// The clock the recorder's log times are on: `wall`, or `sim` when it ran with
    /// `use_sim_time`.
    pub recorder_axis: bagscope_clocks::Axis,
    /// True when stamped topics (not `/clock`, not aggregates) are stamped on different clocks
    /// (some wall, some sim or relative): their stamps cannot be compared directly.
    pub split: bool,
    /// The stamped topics grouped by the clock they are stamped on, one group per axis.
    pub axis_groups: Vec<AxisGroup>,
    /// Aggregates of many producers (`/rosout`, `/diagnostics`, `/events/*`, ...), sorted:
    /// analysed, but never part of `split`, resets or drift.
    pub aggregate_topics: Vec<String>,
    /// Set when the bag was recorded while an older recording was replayed (stamps from the old
    /// recording, log times from the new one); None otherwise.
    pub replayed_recording: Option<ReplayedRecording>,
    /// Every topic's clock: axis, lag, stamp health, drift, gaps.
    pub topics: Vec<TopicClock>,
    /// The fit of the sim-time topic (`/clock`, or `--clock-topic`) against log time: rate,
    /// pauses, jumps, epochs; None when the bag has no such topic with samples.
    pub sim_clock: Option<SimClockReport>,
    /// TF timing per edge (parent → child) of every `tf2_msgs/msg/TFMessage` topic, from each
    /// transform's `header.stamp` (the TF topics themselves have no top-level stamp: `source`
    /// `none` in `topics`): samples, rate, periods, gaps, lag; sorted by (parent, child,
    /// static); empty without TF.
    pub tf_edges: Vec<crate::tf::TfEdgeTiming>,
    /// Clock findings and bag damage in one list, sorted.
    pub warnings: Vec<Warning>,
}

impl ClocksCommandReport {}

/// Per-topic times of every topic, as the clocks analysis takes them.
pub fn topic_times(bag: &Bag) -> (Vec<TopicTimes>, Vec<Warning>) {
    topic_times_of(bag, &bag.all_topics())
}

/// [`topic_times`] of the wanted topics only (the others are left empty).
pub fn topic_times_of(bag: &Bag, wanted: &[bool]) -> (Vec<TopicTimes>, Vec<Warning>) {
    let (series, warnings) = scan_series(bag, wanted);
    (times_of_series(series), warnings)
}

/// The series as the clocks analysis takes them.
pub(crate) fn times_of_series(series: Vec<crate::series::TopicSeries>) -> Vec<TopicTimes> {
    series
        .into_iter()
        .map(|s| TopicTimes {
            topic: s.topic,
            type_name: s.type_name,
            source: s.source,
            log_time_ns: s.log_time_ns,
            publish_time_ns: s.publish_time_ns,
            stamp_ns: s.stamp_ns,
            invalid_stamps: s.invalid_stamps,
        })
        .collect()
}

/// `bagscope clocks` of the bag at `path`. Errors when the bag cannot be opened or a
/// `clock_topic` asked for does not exist.
pub fn clocks(path: &Path, opts: &ClocksOptions) -> Result<ClocksCommandReport, Error> {
    clocks_data(path, &opts.analysis()).map(|d| d.report)
}

/// What `clocks` computes plus the inputs plots need (per-topic times, the /clock map).
pub struct ClocksData {
    /// The report `clocks` returns.
    pub report: ClocksCommandReport,
    /// Every topic's log, publish and header-stamp times the analysis read, in arrival order.
    pub times: Vec<TopicTimes>,
    /// The sim ↔ log time map from the sim-time topic's samples; None without one.
    pub clock_map: Option<bagscope_clocks::ClockMap>,
}

/// [`clocks`] plus the per-topic times and clock map (for the `--plots` figures) of the bag at
/// `path`.
pub fn clocks_data(path: &Path, opts: &AnalysisOptions) -> Result<ClocksData, Error> {
    clocks_data_of(&Bag::open(path)?, opts)
}

/// [`clocks_data`] of an open bag.
pub fn clocks_data_of(bag: &Bag, opts: &AnalysisOptions) -> Result<ClocksData, Error> {
    if let Some(c) = &opts.clock_topic {
        // A named clock topic that does not exist is a usage mistake, not "no sim clock".
        bag.topic_index(c)?;
    }
    let (series, warnings, tf) = crate::series::scan_series_and_tf(bag, &bag.all_topics());
    clocks_data_from(bag, opts, times_of_series(series), warnings, tf)
}

/// [`clocks_data_of`] from every topic's times and the warnings of the scan that read them
/// ([`topic_times`]), and the TF messages that scan collected (None: read here).
pub(crate) fn clocks_data_from(
    bag: &Bag,
    opts: &AnalysisOptions,
    times: Vec<TopicTimes>,
    warnings: Vec<Warning>,
    tf: Option<crate::tf::TfCollected>,
) -> Result<ClocksData, Error> {
    Ok(clocks_data_and_subset(bag, opts, times, warnings, tf, None)?.0)
}

/// The `clock_jump_back` warnings among a TF timing's warnings (its edges' jumps): clock
/// findings that `check` reports as `clocks` does.
pub(crate) fn tf_jump_warnings(tf_warnings: &[Warning]) -> Vec<Warning> {
    tf_warnings
        .iter()
        .filter(|w| w.code == bagscope_bag::WarningCode::ClockJumpBack)
        .cloned()
        .collect()
}

/// The warnings and `split` of a clock analysis (before bag damage, recorder events and TF
/// timing are merged in).
pub(crate) struct AnalysisVerdict {
    pub warnings: Vec<Warning>,
    pub split: bool,
}

/// [`clocks_data_from`], and with `keep` (`keep[i]` for `times[i]`) the verdict of the clock
/// analysis of the topics it selects, from the same per-topic analyses where they serve
/// ([`bagscope_clocks::analyze_with_subset`]).
pub(crate) fn clocks_data_and_subset(
    bag: &Bag,
    opts: &AnalysisOptions,
    times: Vec<TopicTimes>,
    mut warnings: Vec<Warning>,
    tf: Option<crate::tf::TfCollected>,
    keep: Option<&[bool]>,
) -> Result<(ClocksData, Option<AnalysisVerdict>), Error> {
    let path = bag.path.as_path();
    warnings.extend(crate::recorder_events::lost_messages(bag));
    let jump = opts.jump_rule();
    // The TF tree needs no clock analysis: built beside it.
    let ((r, mut sub), tree) = rayon::join(
        || match keep {
            Some(keep) => {
                let (r, sub) = bagscope_clocks::analyze_with_subset(&times, opts, keep);
                let verdict = AnalysisVerdict {
                    warnings: sub.warnings,
                    split: sub.split,
                };
                (r, Some(verdict))
            }
            None => (analyze(&times, opts), None),
        },
        || tf.as_ref().map(|c| c.tree(&jump)),
    );
    let clock_map = r.clock_map.clone();
    let map = clock_map
        .as_ref()
        .filter(|_| r.recorder_axis == bagscope_clocks::Axis::Wall);
    let tf = match (tf, tree) {
        (Some(collected), Some(tree)) => Some(collected.timing_of_tree(tree, map)),
        _ => crate::tf::tf_timing_with(bag, map, &jump)?,
    };
    warnings.extend(r.warnings);
    let tf_edges = match tf {
        Some(t) => {
            if let Some(v) = sub.as_mut() {
                // TF edges' jumps are clock findings of the bag, whichever topics are selected.
                v.warnings.extend(tf_jump_warnings(&t.warnings));
            }
            warnings.extend(t.warnings);
            t.edges
        }
        None => Vec::new(),
    };
    warnings.sort();
    warnings.dedup();
    let report = ClocksCommandReport {
        bag: path.display().to_string(),
        verdicts: summarise(&warnings, &[], r.split),
        recorder_axis: r.recorder_axis,
        split: r.split,
        axis_groups: r.axis_groups,
        aggregate_topics: r.aggregate_topics,
        replayed_recording: r.replayed_recording,
        topics: r.topics,
        sim_clock: r.sim_clock,
        tf_edges,
        warnings,
    };
    Ok((
        ClocksData {
            report,
            times,
            clock_map,
        },
        sub,
    ))
}
