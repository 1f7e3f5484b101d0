//! `bagscope clocks`: which clock each topic is stamped on, lag, stamp health, `/clock`.

use std::path::Path;

use serde::Serialize;

use bagscope_bag::{Bag, Warning};
use bagscope_clocks::{
    analyze, AxisGroup, ClocksOptions, ReplayedRecording, SimClockReport, TopicClock, TopicTimes,
};

use crate::findings::{summarise, VerdictSummary};
use crate::series::scan_series;
use crate::Error;

#[derive(Debug, Clone, Serialize)]
pub struct ClocksCommandReport {
    pub bag: String,
    /// The first screen: data loss, split axes, and every finding by code, worst first.
    pub verdicts: VerdictSummary,
    pub recorder_axis: bagscope_clocks::Axis,
    pub split: bool,
    pub axis_groups: Vec<AxisGroup>,
    /// Aggregates of many producers (`/rosout`, `/diagnostics`, `/events/*`, ...), sorted:
    /// analysed, but never part of `split`, resets or drift.
    pub aggregate_topics: Vec<String>,
    pub replayed_recording: Option<ReplayedRecording>,
    pub topics: Vec<TopicClock>,
    pub sim_clock: Option<SimClockReport>,
    /// Clock findings and bag damage in one list, sorted.
    pub warnings: Vec<Warning>,
}

impl ClocksCommandReport {
    pub fn data_loss(&self) -> bool {
        self.warnings.iter().any(|w| w.data_loss)
    }
}

/// Per-topic times of every topic, as the clocks analysis takes them.
pub fn topic_times(bag: &Bag) -> (Vec<TopicTimes>, Vec<Warning>) {
    topic_times_of(bag, &bag.all_topics())
}

/// [`topic_times`] of the wanted topics only (the others are left empty).
pub fn topic_times_of(bag: &Bag, wanted: &[bool]) -> (Vec<TopicTimes>, Vec<Warning>) {
    let (series, warnings) = scan_series(bag, wanted);
    let times = series
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
        .collect();
    (times, warnings)
}

pub fn clocks(path: &Path, opts: &ClocksOptions) -> Result<ClocksCommandReport, Error> {
    clocks_data(path, opts).map(|d| d.report)
}

/// What `clocks` computes plus the inputs plots need (per-topic times, the /clock map).
pub struct ClocksData {
    pub report: ClocksCommandReport,
    pub times: Vec<TopicTimes>,
    pub clock_map: Option<bagscope_clocks::ClockMap>,
}

pub fn clocks_data(path: &Path, opts: &ClocksOptions) -> Result<ClocksData, Error> {
    clocks_data_of(&Bag::open(path)?, opts)
}

/// [`clocks_data`] of an open bag.
pub fn clocks_data_of(bag: &Bag, opts: &ClocksOptions) -> Result<ClocksData, Error> {
    let path = bag.path.as_path();
    if let Some(c) = &opts.clock_topic {
        // A named clock topic that does not exist is a usage mistake, not "no sim clock".
        bag.topic_index(c)?;
    }
    let (times, mut warnings) = topic_times(bag);
    warnings.extend(crate::recorder_events::lost_messages(bag));
    let r = analyze(&times, opts);
    let clock_map = r.clock_map.clone();
    warnings.extend(r.warnings.iter().cloned());
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
        warnings,
    };
    Ok(ClocksData {
        report,
        times,
        clock_map,
    })
}
