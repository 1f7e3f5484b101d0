//! Clock-axis analysis of ROS 2 bags.
//!
//! For each topic: which clock its stamps are on (wall / sim / relative / zero / none / mixed),
//! receive lag (log_time − stamp) and its modes, stamp health (reorderings, duplicates, backward
//! jumps, gaps), and a drift/offset model against the recorder. Across topics: split clock axes,
//! clock offsets between wall clocks, the recorder's own axis, and a fit of the /clock topic
//! (real-time factor, pauses, epochs between simulator resets) with a [`ClockMap`] to move stamps
//! between sim and log time.
//!
//! Design choices (documented once here; see the individual items for details):
//! * Axis of a single stamp: `0` → zero; `≥ WALL_MIN_NS` (1e17 ns, early 1973; `bagscope_types::is_wall_ns`) → wall; anything
//!   else is "small". A topic's small stamps are `sim` when they track the /clock value at the same
//!   log time (median |stamp − clock(log)| ≤ `sim_match_tol_ns`, 1 s) — or track log time itself
//!   when the recorder ran on sim time — and `relative` otherwise.
//! * Lag for sim-stamped topics when the recorder is on wall time is computed after mapping each
//!   stamp through the /clock ([`ClockMap::sim_to_log_ns`], epoch chosen by the message's log
//!   time); `lag_basis` says so. Relative stamps, and sim stamps without a usable /clock, get
//!   `lag_ns: null` with `lag_note` saying why; later analyses use log time for them.
//! * A wall topic whose median lag is beyond `clock_offset_ns` (1 s) is a clock offset, not lag:
//!   `lag_ns` is null and `clock_offset_ns` holds median(stamp − log_time).
//! * The /clock topic is excluded from the split decision: it is the reference, not a producer.
//!
//! # In the workspace
//!
//! Clock axes, lag distributions and modes, stamp health (frozen, zero, invalid stamps), each
//! topic's clock model (drift with its standard error; fitted on at most 64 Ki evenly spread
//! messages, never on fewer than 30), `/clock` fit and epochs, axis mapping; the analysis of a
//! selection of the topics made from the analysis of all of them where the recorder's axis and
//! the sim-time topic agree (`analyze_with_subset`: `check`'s verdicts in `report`); aggregate
//! topics (`roles.rs`: `/rosout`, `/diagnostics`, `/events/*`, … never decide split, resets or
//! drift); recorded replays (`replay.rs`); the backward-jump rule (`JumpRule`,
//! `backward_jumps`, `clock_jump_back_text`: one rule for topics' stamps, `/clock` and TF
//! edges); modes one simulation step apart (the `/clock` period) worded as delivery in the next
//! step; topics analysed in parallel.
//!
//! Notable dependencies: `bagscope-stats`, `rayon`, `either` (one iterator type over narrow or
//! wide lags), `radsort` (the mode search's sort).

#![forbid(unsafe_code)]

mod fit;
mod health;
mod map;
mod modes;
mod replay;
mod roles;

pub use health::{backward_jumps, BackwardJump, Gap, JumpRule, Jumps};
pub use map::{map_series, ClockEpoch, ClockMap, MapError};
pub use modes::{lag_modes_ns, ModeOptions};
pub use replay::ReplayedRecording;
pub use roles::{is_aggregate_topic, is_replay_event_topic};

use std::borrow::Cow;

use bagscope_stats::NsSummary;
use either::Either;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use bagscope_types::is_wall_ns;
pub use bagscope_types::{Axis, StampSource, Warning, WarningCode};

pub(crate) const DEFAULT_JUMP_MIN_NS: i64 = 100_000_000;
pub(crate) const DEFAULT_JUMP_PERIODS: f64 = 5.0;
pub(crate) const DEFAULT_JUMP_CAP_NS: i64 = 1_000_000_000;

/// Times of one topic's messages, in arrival (log-time) order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicTimes {
    /// Topic name.
    pub topic: String,
    /// Message type, e.g. `sensor_msgs/msg/Image`.
    pub type_name: String,
    /// Where `stamp_ns` was read from (`header.stamp`, the clock field of `/clock`, or none).
    pub source: StampSource,
    /// Log (receive) time of each message as the recorder wrote it, ns.
    pub log_time_ns: Vec<i64>,
    /// Same length as `log_time_ns`, or empty when the storage has none.
    pub publish_time_ns: Vec<i64>,
    /// Same length as `log_time_ns`, or empty when `source` is `None`.
    pub stamp_ns: Vec<i64>,
    /// Messages whose stamp had `nanosec` ≥ 10⁹ (not a valid `builtin_interfaces/Time`); their
    /// values are kept as `sec·10⁹ + nanosec`, as rclcpp reads them.
    #[serde(default)]
    pub invalid_stamps: usize,
}

/// Options of [`analyze`]. `Default` gives the documented thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct ClocksOptions {
    /// Topic holding sim time. Default: `/clock` of type `rosgraph_msgs/msg/Clock`, else the first
    /// topic (by name) whose stamp source is `ClockField`.
    pub clock_topic: Option<String>,
    /// A gap is an interval longer than `gap_factor` × the median period (3).
    pub gap_factor: f64,
    /// How many of the largest gaps to list per topic (5).
    pub max_gaps: usize,
    /// A backward step is a jump when larger than `jump_periods` median periods, clamped to
    /// [`jump_min_ns`, `jump_cap_ns`] (5 periods, 100 ms, 1 s): jitter reorderings stay below,
    /// simulator resets (seconds) are above even on slow topics.
    pub jump_periods: f64,
    /// Lower clamp of the jump threshold, ns (100 ms).
    pub jump_min_ns: i64,
    /// Upper clamp of the jump threshold, ns (1 s).
    pub jump_cap_ns: i64,
    /// Small stamps within this of the /clock value at the same log time are sim time (1 s).
    pub sim_match_tol_ns: i64,
    /// |median lag| (or distance from the other wall topics) beyond this is a clock offset (1 s).
    pub clock_offset_ns: i64,
    /// Median lag beyond this (and below the offset threshold) is `large_lag` (250 ms).
    pub large_lag_ns: i64,
    /// Lag below −max(this, 3 × robust sigma of lag) is a stamp in the future (1 ms).
    pub future_tolerance_ns: i64,
    /// |drift| beyond this many ppm, accumulating ≥ 5 ms over the topic's span, is reported (500).
    pub drift_warn_ppm: f64,
    /// /clock advancing < 10% of its rate for longer than this is a pause (0.5 s of log time).
    pub pause_min_ns: i64,
    /// Thresholds of the lag mode search ([`lag_modes_ns`]).
    pub modes: ModeOptions,
}

impl ClocksOptions {
    /// The backward-jump rule these options give (`jump_periods`, `jump_min_ns`,
    /// `jump_cap_ns`): what TF edges are held to as well.
    pub fn jump_rule(&self) -> JumpRule {
        JumpRule {
            periods: self.jump_periods,
            min_ns: self.jump_min_ns,
            cap_ns: self.jump_cap_ns,
        }
    }
}

/// The words of a `clock_jump_back` finding about `what` (a topic, a TF edge): how often it
/// went back and the first jump; `None` without jumps. The finding adds
/// [`CLOCK_JUMP_BACK_ADVICE`].
pub fn clock_jump_back_text(what: &str, jumps: &[BackwardJump]) -> Option<String> {
    let first = jumps.first()?;
    Some(format!(
        "{what} went back in time {} time(s) (first at log time {} ns: {} → {})",
        jumps.len(),
        first.log_time_ns,
        secs(first.from_ns),
        secs(first.to_ns)
    ))
}

/// What a `clock_jump_back` finding says it means and what to do.
pub const CLOCK_JUMP_BACK_ADVICE: &str = "a simulator reset or clock step. Analyse each epoch separately; pairing across a jump is meaningless";

impl Default for ClocksOptions {
    fn default() -> Self {
        ClocksOptions {
            clock_topic: None,
            gap_factor: 3.0,
            max_gaps: 5,
            jump_periods: DEFAULT_JUMP_PERIODS,
            jump_min_ns: DEFAULT_JUMP_MIN_NS,
            jump_cap_ns: DEFAULT_JUMP_CAP_NS,
            sim_match_tol_ns: 1_000_000_000,
            clock_offset_ns: 1_000_000_000,
            large_lag_ns: 250_000_000,
            future_tolerance_ns: 1_000_000,
            drift_warn_ppm: 500.0,
            pause_min_ns: 500_000_000,
            modes: ModeOptions::default(),
        }
    }
}

/// How many stamps of a topic fall on each axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct AxisCounts {
    /// Stamps at or above `WALL_MIN_NS` (epoch wall time); 0 on the /clock topic, whose stamps count as sim.
    pub wall: usize,
    /// Small stamps that track the /clock (or the recorder's sim log time), and every stamp of the /clock topic itself.
    pub sim: usize,
    /// Small non-zero stamps that track no clock (e.g. time since boot).
    pub relative: usize,
    /// Stamps equal to 0 (never set); a 0 that is genuine sim time (a sim reset) counts as `sim`.
    pub zero: usize,
}

/// How `lag_ns` was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LagBasis {
    /// Stamps are on the recorder's axis: log_time − stamp.
    Direct,
    /// Sim stamps mapped to log time through /clock, then log_time − mapped stamp.
    MappedThroughClock,
}

/// Which time later analyses should use for a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeBasis {
    /// The topic's header stamps.
    Stamp,
    /// The recorder's log (receive) times: the topic has no usable stamps.
    LogTime,
}

/// Stamp clock against recorder clock: `stamp ≈ log_time · (1 + drift_ppm·1e-6) + offset`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockModel {
    /// Drift of the stamp clock against the recorder clock, parts per million (positive: the stamp clock runs fast).
    pub drift_ppm: f64,
    /// median(stamp − log_time) on the recorder's axis.
    pub offset_ns: i64,
    /// RMS of the robust fit's residuals.
    pub residual_jitter_ns: f64,
    /// Points the robust fit kept (outliers trimmed).
    pub n: usize,
    /// The fit read every `fit_stride`-th message with a usable stamp, and the last (1: all);
    /// topics longer than [`FIT_MAX_POINTS`] messages are fitted on such a sample.
    pub fit_stride: usize,
    /// Standard error of `drift_ppm` (residual RMS over the span, for evenly spread points):
    /// a drift is reported only when it is at least [`DRIFT_SIGNIFICANCE`] times this.
    pub drift_se_ppm: f64,
}

/// Fewest usable stamps the clock model (drift) is fitted on. Below it `clock_model` is null
/// and `clock_model_note` says "too few messages (n=…)": a line through a handful of jittered
/// points gives drifts of thousands of ppm that mean nothing.
pub const MIN_FIT_MESSAGES: usize = 30;

/// Fewest usable stamps a topic needs for a `clock_offset` or `large_lag` finding.
pub const MIN_OFFSET_MESSAGES: usize = 5;

/// A drift is reported only when it is this many standard errors from zero.
pub const DRIFT_SIGNIFICANCE: f64 = 4.0;

/// A topic's stamps are frozen when at least this many messages carry at most one distinct
/// stamp per [`FROZEN_REPEAT`] messages (all one stamp, for fewer than 2·FROZEN_REPEAT).
pub const FROZEN_MIN_MESSAGES: usize = 3;
/// See [`FROZEN_MIN_MESSAGES`].
pub const FROZEN_REPEAT: usize = 10;

/// Stamps that do not advance: the producer publishes one stamp again and again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FrozenStamps {
    /// Distinct non-zero stamps.
    pub distinct: usize,
    /// Messages with a non-zero stamp.
    pub messages: usize,
    /// Log time from the first to the last of those messages.
    pub log_span_ns: i64,
}

/// Most points the clock model is fitted on (64 Ki). The fit is an estimate, not an order
/// statistic: evenly spread over the topic's span, this many points leave the slope's
/// standard error near σ/(span·√(n/12)), ~0.02 ppm for 1 ms of jitter over ten minutes, far
/// below what is printed or warned about (500 ppm), while a million-message topic's fit took
/// a third of the whole `clocks` analysis. Order statistics (lag, publish lag, periods) stay
/// exact over every message.
pub const FIT_MAX_POINTS: usize = 1 << 16;

/// Per-topic clock report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicClock {
    /// Topic name.
    pub topic: String,
    /// Message type, e.g. `sensor_msgs/msg/Imu`.
    pub type_name: String,
    /// Where the stamps were read from.
    pub source: StampSource,
    /// Number of messages on the topic.
    pub count: usize,
    /// The clock the topic's stamps are on; `mixed` when stamps fall on more than one.
    pub axis: Axis,
    /// How many stamps fall on each axis.
    pub axis_counts: AxisCounts,
    /// An aggregate of many producers (`/rosout`, `/parameter_events`, `/diagnostics`,
    /// `/events/*`; see [`is_aggregate_topic`]): reported, but it never decides `split`,
    /// clock resets or drift, and gets no clock findings.
    pub aggregate: bool,
    /// Set when the stamps do not advance (see [`FrozenStamps`]); drift, lag modes and jumps
    /// are not analysed then.
    pub frozen_stamps: Option<FrozenStamps>,
    /// Stamps with `nanosec` ≥ 10⁹. When they are more than half of the topic's stamps, jumps,
    /// drift and lag modes are not analysed (`backward_jumps` and `lag_modes_ns` empty, no
    /// clock model): the invalid stamps themselves step back and forth.
    pub invalid_stamps: usize,
    /// What later analyses should use: `log_time` for none / zero / relative / mixed topics.
    pub analysis_time: TimeBasis,
    /// How `lag_ns` (or `clock_offset_ns`) was obtained; `None` when both are null.
    pub lag_basis: Option<LagBasis>,
    /// log_time − stamp (stamps mapped to the recorder's axis when needed).
    pub lag_ns: Option<NsSummary>,
    /// Why `lag_ns` is null, or on what subset it was computed.
    pub lag_note: Option<String>,
    /// publish_time − stamp, where publish_time is on the recorder's axis.
    pub publish_lag_ns: Option<NsSummary>,
    /// log_time − publish_time, where both are on the same axis.
    pub log_minus_publish_ns: Option<NsSummary>,
    /// Centres of the modes of log_time − stamp (one when unimodal), ascending; empty without
    /// lags or when most stamps are invalid.
    pub lag_modes_ns: Vec<i64>,
    /// median(stamp − log_time) when that is a clock offset rather than lag.
    pub clock_offset_ns: Option<i64>,
    /// Drift and offset of the stamp clock against the recorder; `None` when there are too few usable stamps ([`MIN_FIT_MESSAGES`]), the stamps are frozen or mostly invalid, or the topic is an aggregate (`clock_model_note` says which).
    pub clock_model: Option<ClockModel>,
    /// Why `clock_model` is null for a stamped topic ("too few messages (n=17; …)").
    pub clock_model_note: Option<String>,
    /// Messages per log-time second over the topic's own span (null when that span is below
    /// [`bagscope_stats::MIN_RATE_SPAN_NS`]: see `log_span_ns`).
    pub rate_hz: Option<f64>,
    /// Last − first log time of the topic.
    pub log_span_ns: i64,
    /// Median interval between consecutive messages on `period_basis`, ns; `None` with fewer than two messages or no positive interval.
    pub median_period_ns: Option<i64>,
    /// Series the period, gaps and health were computed on.
    pub period_basis: TimeBasis,
    /// Backward steps too small to be jumps (jitter reorderings).
    pub non_monotonic: usize,
    /// Consecutive messages with the same stamp.
    pub duplicates: usize,
    /// Backward steps larger than this are jumps, ns: `jump_periods` median periods, clamped
    /// to `jump_min_ns ..= jump_cap_ns`.
    pub jump_threshold_ns: i64,
    /// Backward steps larger than `jump_threshold_ns` (e.g. a simulator reset), in log-time
    /// order.
    pub backward_jumps: Vec<BackwardJump>,
    /// Number of gaps (intervals over `gap_factor` × the median period); `gaps` lists only the largest.
    pub gap_count: usize,
    /// Largest gaps (at most `max_gaps`), in log-time order.
    pub gaps: Vec<Gap>,
}

/// /clock standing (nearly) still while log time advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClockPause {
    /// Log time of the first /clock sample of the pause, ns.
    pub start_log_time_ns: i64,
    /// Log time of the last /clock sample of the pause, ns.
    pub end_log_time_ns: i64,
    /// The sim time the clock stood at when the pause began, ns.
    pub sim_ns: i64,
}

/// Fit of sim time against log time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimClockReport {
    /// The sim clock topic (usually `/clock`).
    pub topic: String,
    /// Sim seconds per log-time second: common slope of all epochs (pooled least squares over
    /// each epoch's inliers, each epoch with its own offset).
    pub rate: f64,
    /// Sample-weighted RMS of the epochs' fit residuals.
    pub residual_jitter_ns: f64,
    /// /clock samples in all epochs together.
    pub samples: usize,
    /// Stretches where /clock advanced less than 10% of `rate` for longer than `pause_min_ns`, sorted by log time.
    pub pauses: Vec<ClockPause>,
    /// Number of clock resets: the epochs after the first.
    pub backward_jumps: usize,
    /// The /clock series cut at each reset, in log-time order, each with its own fit.
    pub epochs: Vec<ClockEpoch>,
}

/// Stamped topics sharing one axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AxisGroup {
    /// The clock they are stamped on.
    pub axis: Axis,
    /// Their names, sorted.
    pub topics: Vec<String>,
}

/// Result of [`analyze`]: every topic's clock, the recorder's axis, the /clock fit and the warnings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClocksReport {
    /// Axis of log_time: `wall`, or `sim` when recorded with --use-sim-time.
    pub recorder_axis: Axis,
    /// Stamped topics (wall / sim / relative; the /clock topic and aggregates excluded) on
    /// different axes.
    pub split: bool,
    /// Stamped topics grouped by axis.
    pub axis_groups: Vec<AxisGroup>,
    /// Aggregate topics (see [`is_aggregate_topic`]), sorted: their own group, outside `split`.
    pub aggregate_topics: Vec<String>,
    /// The bag was recorded while an older recording was replayed (see [`ReplayedRecording`]).
    pub replayed_recording: Option<ReplayedRecording>,
    /// One report per topic.
    pub topics: Vec<TopicClock>,
    /// Fit of the sim clock topic; `None` when the bag has none.
    pub sim_clock: Option<SimClockReport>,
    /// Sorted by (topic, code, message); bag-wide warnings (topic null) first.
    pub warnings: Vec<Warning>,
    /// Exact map (with /clock samples) for [`ClockMap::from_report`]; not serialised.
    #[serde(skip)]
    pub clock_map: Option<ClockMap>,
}

impl ClocksReport {
    /// The report of topic `name`, if the bag has it.
    pub fn topic(&self, name: &str) -> Option<&TopicClock> {
        self.topics.iter().find(|t| t.topic == name)
    }
}

/// Median by selection (reorders `v`), `None` when empty.
fn median_of(v: &mut [i64]) -> Option<i64> {
    bagscope_stats::median_in_place(v)
}

use bagscope_types::timefmt::{ms_unit_f as ms, secs_unit as secs};

fn join(v: &[String]) -> String {
    v.join(", ")
}

/// Recorder axis from log times: majority vote of wall-range values (log time on sim time is
/// small). Publish times are not needed: when they exist they share log_time's clock in rosbag2.
fn recorder_axis<'a>(topics: impl IntoIterator<Item = &'a TopicTimes>) -> Axis {
    let (mut wall, mut small) = (0usize, 0usize);
    for t in topics {
        for &l in &t.log_time_ns {
            if is_wall_ns(l) {
                wall += 1;
            } else {
                small += 1;
            }
        }
    }
    if small > wall {
        Axis::Sim
    } else {
        Axis::Wall
    }
}

fn find_clock_topic(sorted: &[&TopicTimes], opts: &ClocksOptions) -> Option<usize> {
    if let Some(name) = &opts.clock_topic {
        return sorted.iter().position(|t| &t.topic == name);
    }
    sorted
        .iter()
        .position(|t| {
            t.topic == "/clock"
                && (t.type_name == "rosgraph_msgs/msg/Clock"
                    || t.type_name == "rosgraph_msgs/Clock")
        })
        .or_else(|| {
            sorted
                .iter()
                .position(|t| t.source == StampSource::ClockField && !t.stamp_ns.is_empty())
        })
}

/// 1.4826 × MAD of the values `v()` yields (at least two, else 0), by streamed selection.
fn robust_sigma_streamed<I: Iterator<Item = i64>>(v: impl Fn() -> I) -> f64 {
    if v().nth(1).is_none() {
        return 0.0;
    }
    let Some((m, lo, hi)) = bagscope_stats::median_range_streamed(&v) else {
        return 0.0;
    };
    // All values equal (jitter-free timing): the MAD is 0 without a pass to find it.
    if lo == hi {
        return 0.0;
    }
    let mad = bagscope_stats::median_streamed(|| v().map(|x| x.saturating_sub(m).saturating_abs()));
    1.4826 * mad.unwrap_or(0) as f64
}

/// Consecutive differences `b − a` (saturating) of the values, produced in one pass over them.
fn steps(values: impl Iterator<Item = i64>) -> impl Iterator<Item = i64> {
    let mut prev: Option<i64> = None;
    values.filter_map(move |x| {
        let d = prev.map(|p| x.saturating_sub(p));
        prev = Some(x);
        d
    })
}

/// Internal per-topic result: the public report plus what the cross-topic pass needs.
#[derive(Clone)]
struct TopicWork {
    report: TopicClock,
    /// Median of raw log − stamp over wall-class stamps (for offset comparison across topics).
    wall_median_raw: Option<i64>,
    is_clock: bool,
}

struct Ctx<'a> {
    opts: &'a ClocksOptions,
    recorder: Axis,
    map: Option<&'a ClockMap>,
    /// The simulator's step as the recorder saw it: the median interval of the sim-time topic's
    /// log times (a `/clock` published every step), with a clock map only.
    sim_step_ns: Option<i64>,
}

/// Adjacent lag modes whose spacing is within this fraction of the simulator's step are "one
/// step apart" (messages delivered in the step after the one they were stamped in). A message
/// delivered a step late has its lag raised by one step as the recorder measures it (the
/// /clock period on log time); the two modes' centres differ from that by the difference of
/// their delays within a step, which are a small part of the step when each mode is narrow,
/// and by the real-time factor's wobble between the steps. ±20 % admits those (a Webots bag:
/// 20.3 ms spacing at a 20.0 ms step) while a stamping offset would have to land within a
/// fifth of a step of the step itself by chance to be taken for it.
pub const SIM_STEP_MODE_TOLERANCE: f64 = 0.2;

/// The simulator's step when every spacing of adjacent `modes` (ascending, at least two) is
/// one step within [`SIM_STEP_MODE_TOLERANCE`].
fn modes_one_step_apart(modes: &[i64], step_ns: Option<i64>) -> Option<i64> {
    let step = step_ns.filter(|&s| s > 0)?;
    let tol = SIM_STEP_MODE_TOLERANCE * step as f64;
    (modes.len() > 1
        && modes
            .windows(2)
            .all(|w| ((w[1] as f64 - w[0] as f64) - step as f64).abs() <= tol))
    .then_some(step)
}

/// "No stamp on the recorder's axis" in the per-message arrays (no real time is i64::MIN).
const NO_STAMP: i64 = i64::MIN;

/// What the publish-time part found: its two summaries (publish − stamp, log − publish), or
/// that publish time equals log time for every message.
enum Published {
    Summaries(Option<NsSummary>, Option<NsSummary>),
    SameAsLog,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Wall,
    Small,
    Zero,
}

/// Frozen stamps (see [`FrozenStamps`]) among the non-zero stamps, in arrival order. Cheap for
/// the usual topic: a frozen one repeats its stamp in most consecutive pairs, so the distinct
/// stamps are only counted (on a sorted copy) when at least half of the pairs repeat.
fn frozen_stamps(stamps: &[i64], log: &[i64]) -> Option<FrozenStamps> {
    let nonzero = || stamps.iter().zip(log).filter(|(&s, _)| s != 0);
    let k = nonzero().count();
    if k < FROZEN_MIN_MESSAGES {
        return None;
    }
    let mut repeats = 0usize;
    let mut prev: Option<i64> = None;
    for (&s, _) in nonzero() {
        repeats += usize::from(prev == Some(s));
        prev = Some(s);
    }
    if repeats * 2 < k - 1 {
        return None;
    }
    let mut v: Vec<i64> = nonzero().map(|(&s, _)| s).collect();
    v.sort_unstable();
    v.dedup();
    let distinct = v.len();
    let frozen = distinct == 1 || (k >= 2 * FROZEN_REPEAT && distinct * FROZEN_REPEAT <= k);
    if !frozen {
        return None;
    }
    let first = nonzero().next().map(|(_, &l)| l).unwrap_or(0);
    let last = nonzero().next_back().map(|(_, &l)| l).unwrap_or(0);
    Some(FrozenStamps {
        distinct,
        messages: k,
        log_span_ns: last.saturating_sub(first),
    })
}

/// Clock findings an aggregate topic still gets: they describe the topic, not a clock.
fn kept_for_aggregate(code: WarningCode) -> bool {
    matches!(
        code,
        WarningCode::Headerless | WarningCode::LengthMismatch | WarningCode::StampInvalid
    )
}

/// Clock findings that frozen stamps make meaningless (they follow from the stamp not moving).
fn void_when_frozen(code: WarningCode) -> bool {
    matches!(
        code,
        WarningCode::LargeLag
            | WarningCode::StampsInFuture
            | WarningCode::MultimodalLag
            | WarningCode::ClockDrift
            | WarningCode::ClockJumpBack
            | WarningCode::MixedAxis
    )
}

/// The topic's stamps and publish times, cut to what matches its log times: stamps to the
/// common prefix, publish times dropped, each said in a `length_mismatch` warning.
fn checked_inputs<'a>(t: &'a TopicTimes, warnings: &mut Vec<Warning>) -> (&'a [i64], &'a [i64]) {
    let n = t.log_time_ns.len();
    let warn = |w: &mut Vec<Warning>, code, message: String| {
        w.push(Warning::new(code, message).topic(&t.topic))
    };
    let mut stamps: &[i64] = &t.stamp_ns;
    if !stamps.is_empty() && stamps.len() != n {
        warn(
            warnings,
            WarningCode::LengthMismatch,
            format!(
                "{} stamps for {} messages; only the first {} are used",
                stamps.len(),
                n,
                stamps.len().min(n)
            ),
        );
        stamps = &stamps[..stamps.len().min(n)];
    }
    let mut publish: &[i64] = &t.publish_time_ns;
    if !publish.is_empty() && publish.len() != n {
        warn(
            warnings,
            WarningCode::LengthMismatch,
            format!(
                "{} publish times for {} messages; publish time ignored",
                publish.len(),
                n
            ),
        );
        publish = &[];
    }
    (stamps, publish)
}

/// `stamp_invalid` (with what it turns off when most are) and `stamp_frozen`.
fn stamp_warnings(
    t: &TopicTimes,
    frozen: Option<&FrozenStamps>,
    mostly_invalid: bool,
    warnings: &mut Vec<Warning>,
) {
    let n = t.log_time_ns.len();
    let warn = |w: &mut Vec<Warning>, code, message: String| {
        w.push(Warning::new(code, message).topic(&t.topic))
    };
    if t.invalid_stamps > 0 {
        warn(
            warnings,
            WarningCode::StampInvalid,
            format!(
                "{} of {} stamps of {} have nanosec ≥ 10⁹ (not a valid builtin_interfaces/Time): the producer builds its stamps wrongly; they are read as sec·10⁹ + nanosec{}",
                t.invalid_stamps,
                n,
                t.topic,
                if mostly_invalid {
                    ". Most of its stamps are invalid: jump, drift and lag-mode analyses are skipped for it (the invalid stamps themselves would make the jumps)"
                } else {
                    ""
                }
            ),
        );
    }
    if let Some(f) = frozen {
        warn(
            warnings,
            WarningCode::StampFrozen,
            format!(
                "{} carries {} distinct stamp(s) in {} messages over {} of log time: its producer does not advance header.stamp (stamped once, or a cached message republished). Drift, lag modes and jumps are not analysed for it; later analyses use log time",
                t.topic,
                f.distinct,
                f.messages,
                secs(f.log_span_ns)
            ),
        );
    }
}

/// Why the topic's lag is computed on fewer stamps than it has, or not at all.
fn topic_note(
    is_clock: bool,
    stamped: bool,
    usable: usize,
    m: usize,
    axis: Axis,
    recorder: Axis,
) -> Option<String> {
    if is_clock {
        Some("reference clock: see sim_clock".into())
    } else if !stamped {
        Some("no stamp: later analyses use log time".into())
    } else if usable == 0 {
        Some(match axis {
            Axis::Zero => "all stamps are zero".into(),
            Axis::Relative => {
                "relative clock (e.g. time since boot): no relation to the recorder's clock".into()
            }
            Axis::Sim if recorder == Axis::Wall => {
                "sim stamps and no /clock to map them to wall time".into()
            }
            Axis::Wall if recorder == Axis::Sim => {
                "wall stamps but the recorder ran on sim time".into()
            }
            _ => "no stamps on the recorder's axis".into(),
        })
    } else if usable < m {
        Some(format!(
            "computed on the {} of {} stamps that are on the recorder's axis",
            usable, m
        ))
    } else {
        None
    }
}

/// The lag's modes (none for mostly invalid stamps; the one value when every lag is the
/// same), read from the sorted i32 lags when there are, and `multimodal_lag` when there are
/// several, worded as delivery in the next step when they are a simulation step apart.
#[allow(clippy::too_many_arguments)]
fn lag_modes<I: Iterator<Item = i64>>(
    t: &TopicTimes,
    axis: Axis,
    ctx: &Ctx,
    mostly_invalid: bool,
    lag_summary: Option<NsSummary>,
    sorted32: Option<&[i32]>,
    usable: usize,
    wide_lags: impl Fn() -> I,
) -> (Vec<i64>, Vec<Warning>) {
    let opts = ctx.opts;
    let warn = |w: &mut Vec<Warning>, code, message: String| {
        w.push(Warning::new(code, message).topic(&t.topic))
    };
    let mut w = Vec::new();
    let lag_modes_ns = match lag_summary {
        _ if mostly_invalid => Vec::new(),
        // Every lag the same: that is the one mode (the method never separates equal
        // values).
        Some(s) if s.min == s.max => vec![s.min],
        _ => match sorted32 {
            Some(v) => modes::lag_modes_ns_sorted(v, &opts.modes),
            None => {
                // Sized first: collecting a filtered iterator would grow it by copying.
                let mut sorted_lags: Vec<i64> = Vec::with_capacity(usable);
                sorted_lags.extend(wide_lags());
                modes::lag_modes_ns_in_place(&mut sorted_lags, &opts.modes)
            }
        },
    };
    if lag_modes_ns.len() > 1 {
        let modes: Vec<String> = lag_modes_ns.iter().map(|&x| ms(x as f64)).collect();
        // Sim-stamped: modes a simulator step apart are deliveries in the next step.
        let step = (axis == Axis::Sim)
            .then(|| modes_one_step_apart(&lag_modes_ns, ctx.sim_step_ns))
            .flatten();
        let why = match step {
            Some(step) => format!(
                "modes one simulation step (/clock period {}) apart: delivered in the next step (published late in one step, sent with the next), not a stamping fault; the stamps pair as they are",
                ms(step as f64)
            ),
            None => "the producer stamps different messages at different points (e.g. exposure start vs end). Pairing by stamp inherits this offset; fix the driver's stamping or compensate per mode".to_string(),
        };
        warn(
            &mut w,
            WarningCode::MultimodalLag,
            format!(
                "{}'s lag (log_time − stamp) has {} modes ({}): {why}",
                t.topic,
                lag_modes_ns.len(),
                join(&modes)
            ),
        );
    }
    (lag_modes_ns, w)
}

/// The publish-time lags: as measured, or (publish time = log time) the lags themselves and
/// zeros; none against a stamp clock far from the recorder's (`offset`), whose lag would be
/// that offset too.
fn published_lags(
    published: Published,
    lag_summary: Option<NsSummary>,
    n: usize,
    offset: bool,
) -> (Option<NsSummary>, Option<NsSummary>) {
    let published = match published {
        Published::Summaries(a, b) => (a, b),
        Published::SameAsLog => (
            // The lags are log − stamp over the same messages, saturating alike.
            lag_summary,
            (n > 0).then_some(NsSummary {
                count: n,
                min: 0,
                p50: 0,
                p95: 0,
                p99: 0,
                max: 0,
                mean: 0,
                negatives: 0,
            }),
        ),
    };
    // Publish time against a stamp clock far from the recorder's would be that offset too.
    match published {
        (_, lmp) if offset => (None, lmp),
        p => p,
    }
}

/// What keeps a topic from having a clock model, or its drift from being a finding.
struct ModelBlockers {
    /// The topic has stamps and is not the sim clock itself.
    stamped: bool,
    frozen: bool,
    mostly_invalid: bool,
    /// The stamps are on a clock offset from the recorder's (`clock_offset`).
    offset: bool,
}

/// The clock model from the fit (`clock_drift` where it drifts measurably), or why there is
/// none.
fn clock_model_of(
    t: &TopicTimes,
    fitted: Option<(fit::RobustFit, i64, f64, usize)>,
    b: ModelBlockers,
    usable: usize,
    opts: &ClocksOptions,
    warnings: &mut Vec<Warning>,
) -> (Option<ClockModel>, Option<String>) {
    let warn = |w: &mut Vec<Warning>, code, message: String| {
        w.push(Warning::new(code, message).topic(&t.topic))
    };
    let mut clock_model = None;
    let mut clock_model_note = None;
    if fitted.is_none() && b.stamped && usable > 0 {
        clock_model_note = Some(if b.frozen {
            "stamps are frozen: no clock model".to_string()
        } else if b.mostly_invalid {
            "most stamps are invalid (nanosec ≥ 10⁹): no clock model".to_string()
        } else if usable < MIN_FIT_MESSAGES {
            format!(
                "too few messages (n={usable}; the clock model needs at least {MIN_FIT_MESSAGES})"
            )
        } else {
            "the stamps admit no line fit".to_string()
        });
    }
    if let Some((f, offset_ns, span, fit_stride)) = fitted {
        let drift_ppm = (f.line.slope - 1.0) * 1e6;
        let accumulated = drift_ppm.abs() * 1e-6 * span;
        // Slope standard error for n points spread evenly over the span.
        let drift_se_ppm = if span > 0.0 && f.n >= 3 {
            f.residual_rms / (span * (f.n as f64 / 12.0).sqrt()) * 1e6
        } else {
            f64::INFINITY
        };
        if drift_ppm.abs() > opts.drift_warn_ppm
            && accumulated > 5e6
            && drift_ppm.abs() >= DRIFT_SIGNIFICANCE * drift_se_ppm
            && !b.offset
        {
            warn(
                warnings,
                WarningCode::ClockDrift,
                format!(
                    "{}'s stamp clock drifts {:.0} ppm against the recorder ({} over the bag); lag grows or shrinks over time. Synchronise the producer's clock",
                    t.topic,
                    drift_ppm,
                    ms(accumulated)
                ),
            );
        }
        if drift_ppm.is_finite() && f.residual_rms.is_finite() {
            clock_model = Some(ClockModel {
                drift_ppm,
                offset_ns,
                residual_jitter_ns: f.residual_rms,
                n: f.n,
                fit_stride,
                drift_se_ppm: if drift_se_ppm.is_finite() {
                    drift_se_ppm
                } else {
                    0.0
                },
            });
        }
    }
    (clock_model, clock_model_note)
}

/// How far stamps mapped through `/clock` may be off: four times the worst epoch's residual
/// jitter (the /clock's transport jitter and the simulator's step); 0 for stamps not mapped.
fn map_uncertainty_ns(basis: Option<LagBasis>, map: Option<&ClockMap>) -> f64 {
    match (basis, map) {
        (Some(LagBasis::MappedThroughClock), Some(map)) => {
            4.0 * map
                .epochs
                .iter()
                .map(|e| e.residual_jitter_ns)
                .fold(0.0f64, f64::max)
        }
        _ => 0.0,
    }
}

/// The lags kept once, 4 bytes each, when every one is within ±2.1 s (the usual case): the
/// passes of the statistics then read those instead of 16 bytes of log time and stamp (they
/// are bound by memory bandwidth). The same values either way; None when a lag does not fit.
fn narrow_lags<I: Iterator<Item = i64>>(
    usable: usize,
    wide_lags: impl Fn() -> I,
) -> Option<Vec<i32>> {
    (usable > 0)
        .then(|| {
            let mut v = Vec::with_capacity(usable);
            for x in wide_lags() {
                v.push(i32::try_from(x).ok()?);
            }
            Some(v)
        })
        .flatten()
}

/// The i32 lags sorted once (a copy, 4 bytes a message of this topic) for both the lag
/// summary and the modes; lags in arrival order (constant ones, a sim bag's) are sorted
/// already and not copied.
fn sorted_lags(lags32: Option<&[i32]>) -> Option<Cow<'_, [i32]>> {
    lags32.map(|v| {
        if v.is_sorted() {
            Cow::Borrowed(v)
        } else {
            let mut c = v.to_vec();
            // Radix sort: a third of a comparison sort's time on a million lags.
            radsort::sort(&mut c);
            Cow::Owned(c)
        }
    })
}

/// The health analysis' thresholds from the options.
fn health_params(opts: &ClocksOptions) -> health::HealthParams {
    health::HealthParams {
        gap_factor: opts.gap_factor,
        max_gaps: opts.max_gaps,
        jump_min_ns: opts.jump_min_ns,
        jump_periods: opts.jump_periods,
        jump_cap_ns: opts.jump_cap_ns,
    }
}

/// Frozen stamps, and whether most stamps are invalid (read as sec·10⁹ + nanosec they step
/// back and forth by up to seconds, so jumps, drift and lag modes would describe the
/// producer's bug, not its clock); said in `stamp_frozen` / `stamp_invalid`. Only for a
/// stamped topic that is not the sim clock (`own_stamps`).
fn stamp_faults(
    t: &TopicTimes,
    stamps: &[i64],
    own_stamps: bool,
    warnings: &mut Vec<Warning>,
) -> (Option<FrozenStamps>, bool) {
    let m = stamps.len();
    let frozen = own_stamps
        .then(|| frozen_stamps(stamps, &t.log_time_ns[..m]))
        .flatten();
    let mostly_invalid = own_stamps && t.invalid_stamps.saturating_mul(2) > m;
    stamp_warnings(t, frozen.as_ref(), mostly_invalid, warnings);
    (frozen, mostly_invalid)
}

/// An aggregate topic keeps only the findings that apply to many producers; a frozen one
/// drops those its frozen stamps make meaningless.
fn keep_what_applies(warnings: &mut Vec<Warning>, aggregate: bool, frozen: bool) {
    if aggregate {
        warnings.retain(|w| kept_for_aggregate(w.code));
    } else if frozen {
        warnings.retain(|w| !void_when_frozen(w.code));
    }
}

/// The median raw lag (log − stamp) of the messages stamped on the wall clock.
fn wall_lag_median(stamps: &[i64], log: &[i64], classes: &[Class]) -> Option<i64> {
    bagscope_stats::median_streamed(|| {
        (0..stamps.len())
            .filter(|&i| classes[i] == Class::Wall)
            .map(|i| log[i].saturating_sub(stamps[i]))
    })
}

fn analyse_topic(
    t: &TopicTimes,
    is_clock: bool,
    ctx: &Ctx,
    warnings: &mut Vec<Warning>,
) -> TopicWork {
    let n = t.log_time_ns.len();
    let log = &t.log_time_ns[..];

    let (stamps, publish) = checked_inputs(t, warnings);
    let m = stamps.len();
    let stamped = t.source != StampSource::None && m > 0;
    let aggregate = !is_clock && is_aggregate_topic(&t.topic);
    let (frozen, mostly_invalid) = stamp_faults(t, stamps, stamped && !is_clock, warnings);

    let Classified {
        classes,
        counts,
        axis,
        small_axis,
        n_small,
    } = classify_axis(t, stamps, log, stamped, is_clock, ctx, warnings);

    // --- Stamps on the recorder's axis, per message --------------------------------------
    let OnLog {
        on_log,
        usable_known,
        basis,
    } = stamps_on_recorder_axis(
        t,
        stamps,
        log,
        &classes,
        small_axis,
        counts.wall,
        n_small,
        stamped,
        is_clock,
        ctx,
        warnings,
    );
    let usable = usable_known.unwrap_or_else(|| on_log.iter().filter(|&&x| x != NO_STAMP).count());
    // When every stamp is used as it is, the lags are exactly the raw log − stamp of the
    // wall-clock stamps, and the negated lags the stamp − log of the clock model: their
    // medians come from the lag summary instead of passes of their own.
    let lags_are_all_stamps = usable == m && m > 0 && matches!(on_log, Cow::Borrowed(_));
    // (log time, stamp on the recorder's axis) of the usable messages, in arrival order.
    let pairs = || {
        on_log
            .iter()
            .zip(log)
            .enumerate()
            .filter(|(_, (&s, _))| s != NO_STAMP)
            .map(|(i, (&s, &l))| (i, l, s))
    };
    // Lags (log time − stamp) are recomputed wherever needed rather than kept: with one
    // reused buffer for every order statistic below (selection reorders it), a topic's
    // analysis holds 8 bytes a message beyond its input.
    // (Without the index pairs() carries: a plainer loop, measurably faster per pass.)
    let wide_lags = || {
        on_log
            .iter()
            .zip(log)
            .filter(|(&s, _)| s != NO_STAMP)
            .map(|(&s, &l)| l.saturating_sub(s))
    };
    // Every lag within ±2.1 s (the usual case): the lags are kept once, 4 bytes each, and the
    // passes of the statistics below read those instead of 16 bytes of log time and stamp
    // (the passes are bound by memory bandwidth). The same values either way.
    let lags32 = narrow_lags(usable, wide_lags);
    let lags = || match lags32.as_deref() {
        Some(v) => Either::Left(v.iter().map(|&x| i64::from(x))),
        None => Either::Right(wide_lags()),
    };
    let mut note = topic_note(is_clock, stamped, usable, m, axis, ctx.recorder);

    // The statistics below are independent of each other, so they run on all cores: a bag's
    // dominant topic (a 1 kHz IMU beside a camera) would otherwise keep one core busy alone.
    // Each part collects its own warnings; they are sorted with all others at the end.

    // --- Lag, offset, jitter -------------------------------------------------------------
    // `sorted32`: the i32 lags sorted, when there are any; the summary's order statistics
    // are read from it instead of being selected by passes over the lags.
    let lag_input = LagInput::new(t, ctx, basis, usable, lags);
    let part_lag = |sorted32: Option<&[i32]>| lag_input.lag_part(sorted32);

    // --- Lag modes -----------------------------------------------------------------------
    let part_modes = |lag_summary: Option<NsSummary>, sorted32: Option<&[i32]>| {
        lag_modes(
            t,
            axis,
            ctx,
            mostly_invalid,
            lag_summary,
            sorted32,
            usable,
            wide_lags,
        )
    };

    // --- Publish-time lags: only where publish time is on the recorder's axis (so is log time)
    let part_publish = || publish_part(publish, log, &on_log, ctx.recorder);

    // --- Clock model: stamp (on the recorder's axis) against log time --------------------
    let part_fit = || fit_part(log, &on_log, usable, frozen.is_some() || mostly_invalid);
    // The model's offset: the median of stamp − log over every usable message (not only the
    // fit's sample).
    let fit_offset = |from_lags: Option<i64>| {
        from_lags.unwrap_or_else(|| {
            bagscope_stats::median_streamed(|| pairs().map(|(_, l, s)| s.saturating_sub(l)))
                .unwrap_or(0)
        })
    };

    // --- Median raw offset of the wall-clock stamps (for comparison across topics) -------
    let wall_from_lags = axis == Axis::Wall && stamped && !is_clock && lags_are_all_stamps;
    let part_wall = || {
        (axis == Axis::Wall && stamped && !is_clock && !wall_from_lags)
            .then(|| wall_lag_median(stamps, log, &classes))
            .flatten()
    };

    // --- Health: on stamps when they are a single clock, else on log time ----------------
    // /clock always on its values: its resets must show as jumps.
    let stamp_series =
        stamped && (is_clock || matches!(axis, Axis::Wall | Axis::Sim | Axis::Relative));
    let (series, period_basis) = if stamp_series {
        (stamps, TimeBasis::Stamp)
    } else {
        (log, TimeBasis::LogTime)
    };
    let hp = health_params(ctx.opts);
    let part_health = || health::analyse(series, log, &hp);

    let (
        (
            ((lag_ns, clock_offset_ns, offset_note, lag_warnings), lag_summary, lag_negated_median),
            (lag_modes_ns, mode_warnings),
        ),
        ((published, fitted), (wall_median_raw, mut h)),
    ) = rayon::join(
        // Modes after the lag summary, read off the same sorted lags (constant ones need no
        // mode search at all).
        || {
            // The i32 lags sorted once (a copy, 4 bytes a message of this topic, freed here)
            // for both the lag summary and the modes; lags in arrival order (constant ones,
            // a sim bag's) are sorted already and not copied.
            let sorted32 = sorted_lags(lags32.as_deref());
            let lag = part_lag(sorted32.as_deref());
            let modes = part_modes(lag.1, sorted32.as_deref());
            (lag, modes)
        },
        || {
            rayon::join(
                || rayon::join(part_publish, part_fit),
                || rayon::join(part_wall, part_health),
            )
        },
    );
    let wall_median_raw = wall_median_raw.or(lag_summary.map(|s| s.p50).filter(|_| wall_from_lags));
    let fitted = fitted.map(|(f, span, stride)| (f, fit_offset(lag_negated_median), span, stride));
    drop(lags32);
    drop(on_log);
    drop(classes);
    warnings.extend(lag_warnings);
    warnings.extend(mode_warnings);
    if offset_note.is_some() {
        note = offset_note;
    }
    let (publish_lag_ns, log_minus_publish_ns) =
        published_lags(published, lag_summary, n, clock_offset_ns.is_some());
    let (clock_model, clock_model_note) = clock_model_of(
        t,
        fitted,
        ModelBlockers {
            stamped: stamped && !is_clock,
            frozen: frozen.is_some(),
            mostly_invalid,
            offset: clock_offset_ns.is_some(),
        },
        usable,
        ctx.opts,
        warnings,
    );
    if mostly_invalid {
        h.backward_jumps.clear();
    }
    warnings.extend(
        clock_jump_back_text(&t.topic, &h.backward_jumps).map(|text| {
            Warning::new(
                WarningCode::ClockJumpBack,
                format!("{text}; {CLOCK_JUMP_BACK_ADVICE}"),
            )
            .topic(&t.topic)
        }),
    );
    let log_span_ns = log
        .last()
        .zip(log.first())
        .map_or(0, |(b, a)| b.saturating_sub(*a));
    let rate_hz = bagscope_stats::rate_hz(n as u64, log_span_ns);
    keep_what_applies(warnings, aggregate, frozen.is_some());
    let analysis_time = if matches!(axis, Axis::Wall | Axis::Sim) && !is_clock && frozen.is_none() {
        TimeBasis::Stamp
    } else {
        TimeBasis::LogTime
    };

    TopicWork {
        report: TopicClock {
            topic: t.topic.clone(),
            type_name: t.type_name.clone(),
            source: t.source,
            count: n,
            axis,
            axis_counts: counts,
            aggregate,
            frozen_stamps: frozen,
            invalid_stamps: t.invalid_stamps,
            analysis_time,
            lag_basis: if lag_ns.is_some() || clock_offset_ns.is_some() {
                basis
            } else {
                None
            },
            lag_ns,
            lag_note: note,
            publish_lag_ns,
            log_minus_publish_ns,
            lag_modes_ns,
            clock_offset_ns,
            clock_model,
            clock_model_note,
            rate_hz,
            log_span_ns,
            median_period_ns: h.median_period_ns,
            period_basis,
            non_monotonic: h.non_monotonic,
            duplicates: h.duplicates,
            jump_threshold_ns: h.jump_threshold_ns,
            backward_jumps: h.backward_jumps,
            gap_count: h.gap_count,
            gaps: h.gaps,
        },
        wall_median_raw,
        is_clock,
    }
}

/// Publish-time lags, only where publish time is on the recorder's axis (so is log time):
/// publish − stamp and log − publish.
fn publish_part(publish: &[i64], log: &[i64], on_log: &[i64], recorder: Axis) -> Published {
    let rec_class = |v: i64| {
        if is_wall_ns(v) {
            Axis::Wall
        } else {
            Axis::Sim
        }
    };
    let publish_ok = !publish.is_empty() && publish.iter().all(|&p| rec_class(p) == recorder);
    if !publish_ok {
        return Published::Summaries(None, None);
    }
    // Recorders that write the receive time as publish time too (rosbag2 before Jazzy, and
    // most bags seen): publish − stamp is then the lag, whose summary the lag part
    // computes anyway, and log − publish is all zeros. Same numbers, no passes.
    if publish == log {
        return Published::SameAsLog;
    }
    Published::Summaries(
        NsSummary::of_streamed(|| {
            on_log
                .iter()
                .zip(publish)
                .filter(|(&s, _)| s != NO_STAMP)
                .map(|(&s, &p)| p.saturating_sub(s))
        }),
        NsSummary::of_streamed(|| log.iter().zip(publish).map(|(&l, &p)| l.saturating_sub(p))),
    )
}

/// The topic's clock model: a robust line of stamp (on the recorder's axis) against log time,
/// on at most `FIT_MAX_POINTS` usable messages spread over the span; `None` below
/// `MIN_FIT_MESSAGES` or for frozen stamps. Returns the fit, the fitted span and the stride.
fn fit_part(
    log: &[i64],
    on_log: &[i64],
    usable: usize,
    frozen: bool,
) -> Option<(fit::RobustFit, f64, usize)> {
    if usable < MIN_FIT_MESSAGES || frozen {
        return None;
    }
    // A long topic is fitted on every `stride`-th usable message (and its last): at most
    // FIT_MAX_POINTS points spread over the whole span. See FIT_MAX_POINTS for why.
    let stride = usable.div_ceil(FIT_MAX_POINTS).max(1);
    let kept = |u: usize| u.is_multiple_of(stride) || u == usable - 1;
    let compact: (Vec<i64>, Vec<i64>);
    let (xs, ys): (&[i64], &[i64]) = if stride == 1 && usable == on_log.len() {
        // Every stamp usable and the topic short enough (the usual case for all but the
        // fastest topics): fit the arrays as they are, no copies.
        (&log[..usable], on_log)
    } else if usable == on_log.len() {
        compact = (0..usable)
            .filter(|&u| kept(u))
            .map(|u| (log[u], on_log[u]))
            .unzip();
        (&compact.0, &compact.1)
    } else {
        compact = on_log
            .iter()
            .zip(log)
            .filter(|(&s, _)| s != NO_STAMP)
            .map(|(&s, &l)| ((), l, s))
            .enumerate()
            .filter(|&(u, _)| kept(u))
            .map(|(_, (_, l, s))| (l, s))
            .unzip();
        (&compact.0, &compact.1)
    };
    let f = fit::robust_line(xs, ys)?;
    let span = (xs[xs.len() - 1] as i128 - xs[0] as i128) as f64;
    Some((f, span, stride))
}

/// What a topic's lag statistics read: its lags (recomputed on each call: log time − stamp on
/// the recorder's axis, of the usable messages) and how they were obtained.
struct LagInput<'a, L> {
    t: &'a TopicTimes,
    ctx: &'a Ctx<'a>,
    basis: Option<LagBasis>,
    usable: usize,
    /// Future-stamp tolerance before jitter: the option plus the /clock map's uncertainty.
    base_tol: f64,
    map_uncertainty_ns: f64,
    lags: L,
}

/// `((lag_ns, clock_offset_ns, lag_note, warnings), lag summary, median of stamp − log)`.
type LagPart = (
    (Option<NsSummary>, Option<i64>, Option<String>, Vec<Warning>),
    Option<NsSummary>,
    Option<i64>,
);

impl<'a, L> LagInput<'a, L> {
    /// The input of a topic's lag statistics; stamps mapped through /clock carry the map's
    /// own error (the fit's residual: the /clock's transport jitter and the simulator's step),
    /// which widens the future-stamp tolerance.
    fn new(
        t: &'a TopicTimes,
        ctx: &'a Ctx<'a>,
        basis: Option<LagBasis>,
        usable: usize,
        lags: L,
    ) -> Self {
        let map_uncertainty_ns = map_uncertainty_ns(basis, ctx.map);
        LagInput {
            t,
            ctx,
            basis,
            usable,
            base_tol: ctx.opts.future_tolerance_ns as f64 + map_uncertainty_ns,
            map_uncertainty_ns,
            lags,
        }
    }
}

impl<L, I> LagInput<'_, L>
where
    L: Fn() -> I,
    I: Iterator<Item = i64>,
{
    /// Lag, offset, jitter: the lag summary (from `sorted32`, the i32 lags sorted, when there
    /// are any: its order statistics are read from it instead of being selected by passes over
    /// the lags); a wall clock far from the recorder's as `clock_offset`, not lag; `large_lag`;
    /// stamps ahead of the recorder beyond the jitter tolerance (`stamps_in_future`).
    fn lag_part(&self, sorted32: Option<&[i32]>) -> LagPart {
        let warn = |w: &mut Vec<Warning>, code, message: String| {
            w.push(Warning::new(code, message).topic(&self.t.topic))
        };
        let mut w = Vec::new();
        let summary = match sorted32 {
            Some(v) => NsSummary::of_sorted_and_negated_median(v),
            None => NsSummary::of_streamed_and_negated_median(&self.lags),
        };
        let (lag_summary, negated_median) = match summary {
            Some((s, neg)) => (Some(s), neg),
            None => (None, None),
        };
        let mut lag_ns = lag_summary;
        let mut clock_offset_ns = None;
        let mut offset_note = None;
        if let Some(s) = lag_summary {
            if s.count < MIN_OFFSET_MESSAGES {
                // One or two messages received late (a one-shot publisher the recorder found
                // late) say nothing about the producer's clock: lag as measured, no finding.
                offset_note = Some(format!(
                    "too few messages (n={}) to judge the stamp clock: clock offset and large lag need at least {MIN_OFFSET_MESSAGES}",
                    s.count
                ));
            } else if self.basis == Some(LagBasis::Direct)
                && s.p50.saturating_abs() > self.ctx.opts.clock_offset_ns
                && self.ctx.recorder == Axis::Wall
            {
                // A device clock far from the recorder: report the offset, not a lag.
                let off = s.p50.checked_neg().unwrap_or(i64::MAX);
                clock_offset_ns = Some(off);
                lag_ns = None;
                offset_note = Some(format!(
                    "stamps are {} from the recorder's clock: reported as clock_offset_ns, not lag",
                    secs(off)
                ));
                warn(
                    &mut w,
                    WarningCode::ClockOffset,
                    format!(
                        "{}'s stamp clock is offset by {} from the recorder (median stamp − log_time); its stamps cannot be compared with other topics'. Synchronise the device clock (PTP/NTP/chrony) or correct the offset before matching",
                        self.t.topic,
                        secs(off)
                    ),
                );
            } else {
                if s.p50 > self.ctx.opts.large_lag_ns {
                    warn(
                        &mut w,
                        WarningCode::LargeLag,
                        format!(
                            "{} arrives {} (median) after its stamp; check the producer's processing and transport, or whether its clock is behind",
                            self.t.topic,
                            secs(s.p50)
                        ),
                    );
                }
                // The tolerance is max(future_tolerance_ns, 3 × jitter), so when the smallest
                // lag is within future_tolerance_ns no lag can be beyond it: neither the jitter
                // (four passes) nor a count is needed. The usual case: lags are positive.
                let min_lag = s.min as f64;
                let (future, tol) = if min_lag >= -self.base_tol {
                    (0, self.base_tol)
                } else {
                    // Jitter from consecutive differences (MAD/√2): a block of stamps shifted
                    // into the future does not inflate it, as it would the spread of the lag.
                    let jitter =
                        robust_sigma_streamed(|| steps((self.lags)())) / std::f64::consts::SQRT_2;
                    let tol = (self.ctx.opts.future_tolerance_ns as f64).max(3.0 * jitter)
                        + self.map_uncertainty_ns;
                    // None below −tol when the smallest is not: no pass to count them.
                    let future = if min_lag < -tol {
                        (self.lags)().filter(|&x| (x as f64) < -tol).count()
                    } else {
                        0
                    };
                    (future, tol)
                };
                if future > 0 {
                    warn(
                        &mut w,
                        WarningCode::StampsInFuture,
                        format!(
                            "{} of {} messages of {} were received before their stamp (down to {} early, beyond the {} jitter tolerance): the producer's clock runs ahead of the recorder's. Synchronise clocks",
                            future,
                            self.usable,
                            self.t.topic,
                            ms(-(s.min as f64)),
                            ms(tol)
                        ),
                    );
                }
            }
        }
        // stamp − log is the negated lag exactly when no lag saturated.
        let no_saturation = lag_summary.is_some_and(|s| s.min > i64::MIN && s.max < i64::MAX);
        let neg_median = negated_median.filter(|_| no_saturation);
        (
            (lag_ns, clock_offset_ns, offset_note, w),
            lag_summary,
            neg_median,
        )
    }
}

/// Each message's stamp on the recorder's axis ([`stamps_on_recorder_axis`]).
struct OnLog<'a> {
    /// Per message: the stamp on the recorder's axis, or `NO_STAMP` when it cannot be put
    /// there (8 bytes a message instead of an Option's 16); empty when nothing maps. Borrowed
    /// when every stamp already is on the recorder's axis (the usual case), not copied.
    on_log: Cow<'a, [i64]>,
    /// How many are usable, when known without counting.
    usable_known: Option<usize>,
    /// How the lags are obtained; `None` when no stamp is usable.
    basis: Option<LagBasis>,
}

/// Each message's stamp expressed on the recorder's axis: wall stamps on a wall recorder and
/// sim stamps on a sim-time recorder as they are, sim stamps on a wall recorder mapped through
/// the `/clock` (`no_clock_for_sim` without one), anything else unusable.
#[allow(clippy::too_many_arguments)]
fn stamps_on_recorder_axis<'a>(
    t: &TopicTimes,
    stamps: &'a [i64],
    log: &[i64],
    classes: &[Class],
    small_axis: Axis,
    n_wall: usize,
    n_small: usize,
    stamped: bool,
    is_clock: bool,
    ctx: &Ctx,
    warnings: &mut Vec<Warning>,
) -> OnLog<'a> {
    let m = stamps.len();
    let warn = |w: &mut Vec<Warning>, code, message: String| {
        w.push(Warning::new(code, message).topic(&t.topic))
    };
    let mut on_log: Cow<'_, [i64]> = Cow::Borrowed(&[]);
    let mut usable_known: Option<usize> = None;
    let mut basis: Option<LagBasis> = None;
    if stamped && !is_clock {
        let target = |i: usize| -> (i64, bool) {
            match (classes[i], ctx.recorder) {
                (Class::Wall, Axis::Wall) => (stamps[i], false),
                (Class::Small, Axis::Sim) if small_axis == Axis::Sim => (stamps[i], false),
                (Class::Small, Axis::Wall) if small_axis == Axis::Sim => match ctx.map {
                    // i64::MIN is no real time: treat it as unmapped, like None.
                    Some(map) => (
                        map.sim_to_log_ns(stamps[i], Some(log[i]))
                            .unwrap_or(NO_STAMP),
                        true,
                    ),
                    None => (NO_STAMP, false),
                },
                _ => (NO_STAMP, false),
            }
        };
        // Every stamp a wall stamp on a wall recorder (the usual case): all direct, which
        // the class counts already say.
        let all_direct = (ctx.recorder == Axis::Wall && n_wall == m)
            || (0..m).all(|i| {
                let (s, mapped) = target(i);
                !mapped && s != NO_STAMP
            });
        let (mapped_any, direct_any) = if all_direct {
            on_log = Cow::Borrowed(stamps);
            usable_known = Some(m);
            (false, m > 0)
        } else {
            let mut v = vec![NO_STAMP; m];
            let (mut mapped_any, mut direct_any) = (false, false);
            for (i, x) in v.iter_mut().enumerate() {
                let (s, mapped) = target(i);
                *x = s;
                mapped_any |= mapped && s != NO_STAMP;
                direct_any |= !mapped && s != NO_STAMP;
            }
            on_log = Cow::Owned(v);
            (mapped_any, direct_any)
        };
        basis = if mapped_any {
            Some(LagBasis::MappedThroughClock)
        } else if direct_any {
            Some(LagBasis::Direct)
        } else {
            None
        };
        if small_axis == Axis::Sim && n_small > 0 && ctx.recorder == Axis::Wall && ctx.map.is_none()
        {
            warn(
                warnings,
                WarningCode::NoClockForSim,
                format!("{} is stamped in sim time but the bag has no /clock to map it to the recorder's wall time; lag is not computed", t.topic),
            );
        }
    }
    OnLog {
        on_log,
        usable_known,
        basis,
    }
}

/// A topic's stamps classed by clock, see [`classify_axis`].
struct Classified {
    /// Per stamp: wall, small (sim or relative, as `small_axis` says) or zero (unfilled).
    classes: Vec<Class>,
    counts: AxisCounts,
    axis: Axis,
    /// What the topic's small stamps are: `Sim` when they track the sim reference.
    small_axis: Axis,
    /// Stamps classed small (zeros that are genuine sim time included).
    n_small: usize,
}

/// The clock axis of a topic from its stamps: each stamp classed by magnitude
/// ([`is_wall_ns`]); small stamps are sim when they track the sim reference (the `/clock` at
/// their log time, or log time on a sim-time recorder), relative otherwise; zero stamps are sim
/// time only on `/clock` or on a sim topic while the clock reads about 0. Warns about
/// header-less, all-zero, partly zero and mixed-clock topics, and about relative stamps far
/// from the recorder's clock.
fn classify_axis(
    t: &TopicTimes,
    stamps: &[i64],
    log: &[i64],
    stamped: bool,
    is_clock: bool,
    ctx: &Ctx,
    warnings: &mut Vec<Warning>,
) -> Classified {
    let opts = ctx.opts;
    let m = stamps.len();
    let warn = |w: &mut Vec<Warning>, code, message: String| {
        w.push(Warning::new(code, message).topic(&t.topic))
    };
    let mut classes: Vec<Class> = stamps
        .iter()
        .map(|&s| {
            if s == 0 {
                Class::Zero
            } else if is_wall_ns(s) {
                Class::Wall
            } else {
                Class::Small
            }
        })
        .collect();
    // Sim time at a message's log time, when known: the /clock, or log time itself when the
    // recorder ran on sim time.
    let sim_ref = |i: usize| -> Option<i64> {
        match ctx.map {
            Some(map) => map.log_to_sim_ns(log[i]),
            None if ctx.recorder == Axis::Sim => Some(log[i]),
            None => None,
        }
    };
    let n_small0 = classes.iter().filter(|&&c| c == Class::Small).count();
    // Small stamps: sim if they track the sim reference, relative otherwise.
    let small_axis = if is_clock {
        Axis::Sim
    } else if n_small0 == 0 {
        Axis::Relative
    } else {
        let mut d: Vec<i64> = (0..m)
            .filter(|&i| classes[i] == Class::Small)
            .filter_map(|i| sim_ref(i).map(|r| stamps[i].saturating_sub(r).saturating_abs()))
            .collect();
        match median_of(&mut d) {
            Some(med) if med <= opts.sim_match_tol_ns => Axis::Sim,
            _ => Axis::Relative,
        }
    };
    // A 0 stamp is genuine sim time on /clock (a reset to 0) or on an otherwise sim topic
    // while the clock reads about 0; otherwise it is an unfilled stamp.
    for (i, c) in classes.iter_mut().enumerate() {
        if *c == Class::Zero
            && (is_clock
                || (small_axis == Axis::Sim
                    && sim_ref(i).is_some_and(|r| r.saturating_abs() <= opts.sim_match_tol_ns)))
        {
            *c = Class::Small;
        }
    }
    let mut counts = AxisCounts::default();
    let n_small = classes.iter().filter(|&&c| c == Class::Small).count();
    counts.wall = classes.iter().filter(|&&c| c == Class::Wall).count();
    counts.zero = classes.iter().filter(|&&c| c == Class::Zero).count();
    if is_clock {
        // /clock is sim time by definition, whatever its magnitude.
        counts.sim = n_small + counts.wall;
        counts.wall = 0;
    } else if small_axis == Axis::Sim {
        counts.sim = n_small;
    } else {
        counts.relative = n_small;
    }
    let present: Vec<Axis> = [
        (Axis::Wall, counts.wall),
        (Axis::Sim, counts.sim),
        (Axis::Relative, counts.relative),
        (Axis::Zero, counts.zero),
    ]
    .iter()
    .filter(|(_, c)| *c > 0)
    .map(|(a, _)| *a)
    .collect();
    let axis = if !stamped {
        Axis::None
    } else if present.len() == 1 {
        present[0]
    } else {
        Axis::Mixed
    };

    match axis {
        // TF carries a stamp per transform: its timing is per edge (`tf_edges`).
        Axis::None if t.type_name.ends_with("tf2_msgs/msg/TFMessage") => warn(
            warnings,
            WarningCode::Headerless,
            format!(
                "{} has no header of its own ({}): each transform carries its stamp, timed per edge (parent -> child) in the TF edges; the topic's own rate and gaps are from log time",
                t.topic, t.type_name
            ),
        ),
        Axis::None => warn(
            warnings,
            WarningCode::Headerless,
            format!(
                "{} has no stamp ({}); later analyses fall back to log time (recorder receive time) for this topic",
                t.topic, t.type_name
            ),
        ),
        Axis::Zero => warn(
            warnings,
            WarningCode::StampZero,
            format!(
                "all {} stamps of {} are 0: the publisher never fills header.stamp; later analyses fall back to log time. Fix the driver to stamp messages",
                m, t.topic
            ),
        ),
        Axis::Mixed if [counts.wall, counts.sim, counts.relative].iter().filter(|&&c| c > 0).count() >= 2 => {
            let parts: Vec<String> = [("wall", counts.wall), ("sim", counts.sim), ("relative", counts.relative), ("zero", counts.zero)]
                .iter()
                .filter(|(_, c)| *c > 0)
                .map(|(a, c)| format!("{} {}", c, a))
                .collect();
            warn(
                warnings,
                WarningCode::MixedAxis,
                format!(
                    "stamps of {} are on several clocks ({}); later analyses fall back to log time. Check which publishers use which clock (use_sim_time)",
                    t.topic,
                    join(&parts)
                ),
            );
        }
        _ => {}
    }
    // Stamps on a clock of their own (time since boot, a simulator without /clock): far from
    // the recorder's, which is a clock offset too, though no offset can be corrected for.
    if axis == Axis::Relative
        && !is_clock
        && ctx.recorder == Axis::Wall
        && n_small >= MIN_OFFSET_MESSAGES
    {
        let off = bagscope_stats::median_streamed(|| {
            (0..m)
                .filter(|&i| classes[i] == Class::Small)
                .map(|i| stamps[i].saturating_sub(log[i]))
        });
        if let Some(off) = off.filter(|o| o.saturating_abs() > opts.clock_offset_ns) {
            warn(
                warnings,
                WarningCode::ClockOffset,
                format!(
                    "{}'s stamps are on a clock of its own (relative: time since boot, or a simulator without /clock), {} from the recorder's; they cannot be compared with log time or with other topics' stamps. Stamp with ROS time, or record /clock",
                    t.topic,
                    secs(off)
                ),
            );
        }
    }
    if counts.zero > 0 && axis != Axis::Zero {
        warn(
            warnings,
            WarningCode::StampZero,
            format!(
                "{} of {} stamps of {} are 0 (header.stamp not filled for those messages); they are left out of lag and clock analyses",
                counts.zero, m, t.topic
            ),
        );
    }

    Classified {
        classes,
        counts,
        axis,
        small_axis,
        n_small,
    }
}

/// Sim clock summary: pooled rate, pauses, epochs.
fn sim_clock_report(topic: &str, map: &ClockMap, pause_min_ns: i64) -> SimClockReport {
    // Common slope over epochs: Σ cov / Σ var over each epoch's points within 4 sigma (min 1 ms)
    // of its own fit, so resets and pauses do not bias the real-time factor.
    let (mut sxy, mut sxx) = (0.0f64, 0.0f64);
    let (mut ss, mut nn) = (0.0f64, 0usize);
    let mut pauses = Vec::new();
    for e in &map.epochs {
        let line = fit::Line {
            slope: e.rate,
            x0: e.fit_log_x0_ns,
            y_at_x0: e.fit_sim_at_x0_ns,
        };
        let thr = (4.0 * e.residual_jitter_ns).max(1e6);
        let pts: Vec<(f64, f64)> = e
            .pts
            .iter()
            .filter(|(x, y)| {
                line.eval(*x)
                    .is_some_and(|p| ((*y as i128 - p as i128) as f64).abs() <= thr)
            })
            .map(|&(x, y)| {
                (
                    (x as i128 - e.fit_log_x0_ns as i128) as f64,
                    (y as i128 - e.start_sim_ns as i128) as f64,
                )
            })
            .collect();
        if pts.len() >= 2 {
            let k = pts.len() as f64;
            let mx = pts.iter().map(|p| p.0).sum::<f64>() / k;
            let my = pts.iter().map(|p| p.1).sum::<f64>() / k;
            for p in &pts {
                sxy += (p.0 - mx) * (p.1 - my);
                sxx += (p.0 - mx) * (p.0 - mx);
            }
        }
        ss += e.residual_jitter_ns * e.residual_jitter_ns * e.samples as f64;
        nn += e.samples;
        // Pauses: maximal runs of steps where sim advanced < 10% of what the rate predicts.
        let expected = if e.rate.is_finite() && e.rate > 0.0 {
            e.rate
        } else {
            1.0
        };
        let mut run: Option<(usize, usize)> = None;
        let flush = |run: Option<(usize, usize)>, pauses: &mut Vec<ClockPause>| {
            if let Some((a, b)) = run {
                let (la, lb) = (e.pts[a].0, e.pts[b].0);
                if (lb as i128 - la as i128) > pause_min_ns as i128 {
                    pauses.push(ClockPause {
                        start_log_time_ns: la,
                        end_log_time_ns: lb,
                        sim_ns: e.pts[a].1,
                    });
                }
            }
        };
        for i in 1..e.pts.len() {
            let dl = (e.pts[i].0 as i128 - e.pts[i - 1].0 as i128) as f64;
            let ds = (e.pts[i].1 as i128 - e.pts[i - 1].1 as i128) as f64;
            if dl > 0.0 && ds < 0.1 * expected * dl {
                run = Some((run.map_or(i - 1, |r| r.0), i));
            } else if dl > 0.0 {
                flush(run.take(), &mut pauses);
            }
        }
        flush(run, &mut pauses);
    }
    let rate = if sxx > 0.0 {
        sxy / sxx
    } else {
        map.epochs.first().map_or(f64::NAN, |e| e.rate)
    };
    pauses.sort_by_key(|p| (p.start_log_time_ns, p.end_log_time_ns));
    SimClockReport {
        topic: topic.to_string(),
        rate: if rate.is_finite() { rate } else { 0.0 },
        residual_jitter_ns: if nn > 0 { (ss / nn as f64).sqrt() } else { 0.0 },
        samples: nn,
        pauses,
        backward_jumps: map.epochs.len().saturating_sub(1),
        epochs: map.epochs.clone(),
    }
}

/// Analyse the clocks of all topics of a bag. Never panics; output is sorted (topics by name,
/// then type) and deterministic.
pub fn analyze(topics: &[TopicTimes], opts: &ClocksOptions) -> ClocksReport {
    let sorted = sorted_topics(topics.iter());
    analyze_sorted(&sorted, opts)
}

/// [`analyze`] of topics held elsewhere (no copy of their times).
pub fn analyze_refs(topics: &[&TopicTimes], opts: &ClocksOptions) -> ClocksReport {
    let sorted = sorted_topics(topics.iter().copied());
    analyze_sorted(&sorted, opts)
}

/// [`analyze`] of `topics`, and [`analyze`] of the topics `keep` selects (`keep[i]` for
/// `topics[i]`; missing entries are false).
///
/// A topic's own analysis depends on the other topics only through the recorder's axis (a vote
/// over every log time) and the sim-time topic (its clock map and which topic it is). When the
/// selection gives both the same, the selection's analyses are those already made and only the
/// cross-topic pass (offsets between wall clocks, split axes, a replay, `/clock` pauses) runs
/// again, over them; otherwise the selection is analysed on its own.
pub fn analyze_with_subset(
    topics: &[TopicTimes],
    opts: &ClocksOptions,
    keep: &[bool],
) -> (ClocksReport, ClocksReport) {
    let kept = |i: usize| keep.get(i).copied().unwrap_or(false);
    let mut order: Vec<usize> = (0..topics.len()).collect();
    // Stable, as in `sorted_topics`: the selection's order is the order of its own sort.
    order.sort_by(|&a, &b| {
        let (a, b) = (&topics[a], &topics[b]);
        a.topic.cmp(&b.topic).then(a.type_name.cmp(&b.type_name))
    });
    let sorted: Vec<&TopicTimes> = order.iter().map(|&i| &topics[i]).collect();
    let sub_sorted: Vec<&TopicTimes> = order
        .iter()
        .filter(|&&i| kept(i))
        .map(|&i| &topics[i])
        .collect();
    let all = analyse_topics(&sorted, opts);
    let sub_recorder = recorder_axis(sub_sorted.iter().copied());
    let sub_clock = find_clock_topic(&sub_sorted, opts);
    let same_clock = match (all.clock_idx, sub_clock) {
        (None, None) => true,
        (Some(a), Some(b)) => std::ptr::eq(sorted[a], sub_sorted[b]),
        _ => false,
    };
    let sub = if sub_recorder == all.recorder && same_clock {
        let per_topic = order
            .iter()
            .zip(&all.per_topic)
            .filter(|(&i, _)| kept(i))
            .map(|(_, w)| w.clone())
            .collect();
        assemble(
            &sub_sorted,
            opts,
            Analysed {
                recorder: all.recorder,
                clock_idx: sub_clock,
                clock_map: all.clock_map.clone(),
                per_topic,
            },
        )
    } else {
        analyze_sorted(&sub_sorted, opts)
    };
    (assemble(&sorted, opts, all), sub)
}

/// The topics sorted by name, then type (stable).
fn sorted_topics<'a>(topics: impl Iterator<Item = &'a TopicTimes>) -> Vec<&'a TopicTimes> {
    let mut sorted: Vec<&TopicTimes> = topics.collect();
    sorted.sort_by(|a, b| a.topic.cmp(&b.topic).then(a.type_name.cmp(&b.type_name)));
    sorted
}

/// [`analyze`] of topics already sorted.
fn analyze_sorted(sorted: &[&TopicTimes], opts: &ClocksOptions) -> ClocksReport {
    assemble(sorted, opts, analyse_topics(sorted, opts))
}

/// What the per-topic pass of [`analyze`] makes.
struct Analysed {
    recorder: Axis,
    /// The sim-time topic's place in the sorted topics.
    clock_idx: Option<usize>,
    clock_map: Option<ClockMap>,
    /// Each topic's analysis and its warnings, in sorted order.
    per_topic: Vec<(TopicWork, Vec<Warning>)>,
}

/// The recorder's axis, the sim-time topic's clock map, and each topic's own analysis.
fn analyse_topics(sorted: &[&TopicTimes], opts: &ClocksOptions) -> Analysed {
    let recorder = recorder_axis(sorted.iter().copied());
    let clock_idx = find_clock_topic(sorted, opts);
    let hp = health::HealthParams {
        gap_factor: opts.gap_factor,
        max_gaps: opts.max_gaps,
        jump_min_ns: opts.jump_min_ns,
        jump_periods: opts.jump_periods,
        jump_cap_ns: opts.jump_cap_ns,
    };
    let clock_map = clock_idx.and_then(|i| {
        let t = sorted[i];
        let k = t.log_time_ns.len().min(t.stamp_ns.len());
        ClockMap::from_series_with(&t.log_time_ns[..k], &t.stamp_ns[..k], recorder, &hp)
    });
    // The simulator's step as the recorder saw it: /clock's period on log time (the unit the
    // lags are in, wall or sim).
    let sim_step_ns = clock_map
        .as_ref()
        .and(clock_idx)
        .and_then(|i| health::median_positive_period(&sorted[i].log_time_ns));
    let ctx = Ctx {
        opts,
        recorder,
        map: clock_map.as_ref(),
        sim_step_ns,
    };
    // Topics are independent: analysed on all cores (each holds its own temporaries, a few
    // bytes per message of that topic), results and warnings kept in topic order.
    let per_topic: Vec<(TopicWork, Vec<Warning>)> = sorted
        .par_iter()
        .enumerate()
        .map(|(i, t)| {
            let mut w = Vec::new();
            (analyse_topic(t, Some(i) == clock_idx, &ctx, &mut w), w)
        })
        .collect();
    Analysed {
        recorder,
        clock_idx,
        clock_map,
        per_topic,
    }
}

/// The cross-topic pass of [`analyze`] over the topics' own analyses, and the report.
fn assemble(sorted: &[&TopicTimes], opts: &ClocksOptions, a: Analysed) -> ClocksReport {
    let Analysed {
        recorder,
        clock_idx,
        clock_map,
        per_topic,
    } = a;
    let mut warnings = Vec::new();
    if recorder == Axis::Sim {
        warnings.push(Warning {
            code: WarningCode::RecorderOnSimTime,
            topic: None,
            message: "log times are sim time (the bag was recorded with --use-sim-time): lags are measured in sim time and wall-stamped topics cannot be compared with log time".into(),
            file: None,
            offset: None,
            data_loss: false,
        });
    }
    let mut work: Vec<TopicWork> = Vec::with_capacity(per_topic.len());
    for (w, ws) in per_topic {
        work.push(w);
        warnings.extend(ws);
    }

    // Wall clocks far from each other when the recorder's own clock cannot serve as reference.
    if recorder == Axis::Sim {
        let mut meds: Vec<i64> = work
            .iter()
            .filter(|w| !w.report.aggregate)
            .filter_map(|w| w.wall_median_raw)
            .collect();
        if let Some(reference) = median_of(&mut meds) {
            for w in work.iter_mut().filter(|w| !w.report.aggregate) {
                if let Some(mr) = w.wall_median_raw {
                    let d = mr.saturating_sub(reference);
                    if d.saturating_abs() > opts.clock_offset_ns {
                        let off = d.checked_neg().unwrap_or(i64::MAX);
                        w.report.clock_offset_ns = Some(off);
                        warnings.push(Warning {
                            code: WarningCode::ClockOffset,
                            topic: Some(w.report.topic.clone()),
                            message: format!(
                                "{}'s wall clock is {} away from the other wall-stamped topics; its stamps cannot be compared with theirs. Synchronise the device clock (PTP/NTP/chrony)",
                                w.report.topic,
                                secs(off)
                            ),
                            file: None,
                            offset: None,
                            data_loss: false,
                        });
                    }
                }
            }
        }
    }

    // Split axes: stamped producers (not the reference /clock) on more than one axis.
    let mut axis_groups: Vec<AxisGroup> = Vec::new();
    for ax in [Axis::Wall, Axis::Sim, Axis::Relative] {
        let names: Vec<String> = work
            .iter()
            .filter(|w| !w.is_clock && !w.report.aggregate && w.report.axis == ax)
            .map(|w| w.report.topic.clone())
            .collect();
        if !names.is_empty() {
            axis_groups.push(AxisGroup {
                axis: ax,
                topics: names,
            });
        }
    }
    let split = axis_groups.len() > 1;
    if split {
        let groups: Vec<String> = axis_groups
            .iter()
            .map(|g| format!("{}: {}", g.axis.name(), join(&g.topics)))
            .collect();
        let wall = axis_groups
            .iter()
            .find(|g| g.axis == Axis::Wall)
            .map(|g| join(&g.topics));
        let has_sim = axis_groups.iter().any(|g| g.axis == Axis::Sim);
        let has_rel = axis_groups.iter().any(|g| g.axis == Axis::Relative);
        let mut todo = Vec::new();
        if let (Some(w), true) = (&wall, has_sim) {
            todo.push(format!(
                "set use_sim_time:=true on the nodes publishing {}",
                w
            ));
            if clock_map.is_some() && recorder == Axis::Wall {
                todo.push(
                    "or map the sim stamps to wall time through /clock (ClockMap) before comparing"
                        .to_string(),
                );
            } else {
                todo.push(
                    "(no /clock on wall log time is available to map sim stamps)".to_string(),
                );
            }
        }
        if has_rel {
            todo.push("make the relative-clock publishers stamp with ROS time (relative clocks cannot be mapped)".to_string());
        }
        warnings.push(Warning {
            code: WarningCode::SplitClockAxes,
            topic: None,
            message: format!(
                "stamps are on different clocks ({}): pairing, synchronisation and command/response matching across these groups compare unrelated clocks. Fix: {}",
                groups.join("; "),
                todo.join(" ")
            ),
            file: None,
            offset: None,
            data_loss: false,
        });
    }

    // A recording of a replay: one shift shared by the replayed topics (or the player's event).
    let offsets: Vec<(String, i64)> = work
        .iter()
        .filter(|w| !w.is_clock && !w.report.aggregate)
        .filter_map(|w| {
            w.report
                .clock_offset_ns
                .map(|o| (w.report.topic.clone(), o))
        })
        .collect();
    // Declared is enough: the recorder subscribed to the player's event topic, so a player
    // ran while it recorded, whether or not it opened a next file (and sent an event).
    let mut replay_events: Vec<String> = sorted
        .iter()
        .filter(|t| is_replay_event_topic(&t.topic))
        .map(|t| t.topic.clone())
        .collect();
    replay_events.dedup();
    let replayed_recording = replay::detect(&offsets, &replay_events);
    if let Some(r) = &replayed_recording {
        let days = -(r.offset_ns as f64) / 86_400e9;
        warnings.push(Warning {
            code: WarningCode::ReplayedRecording,
            topic: None,
            message: format!(
                "this bag was recorded while an older recording was replayed: {} carry stamps {} ({:.1} days) before their log times ({}). Their stamps are the original recording's; compare them with each other, not with log time or with live topics",
                join(&r.topics),
                secs(-r.offset_ns),
                days,
                r.evidence.join("; ")
            ),
            file: None,
            offset: None,
            data_loss: false,
        });
        for w in warnings.iter_mut().filter(|w| {
            w.code == WarningCode::ClockOffset
                && w.topic
                    .as_ref()
                    .is_some_and(|t| r.topics.binary_search(t).is_ok())
        }) {
            let topic = w.topic.clone().unwrap_or_default();
            let off = offsets
                .iter()
                .find(|(t, _)| *t == topic)
                .map_or(r.offset_ns, |(_, o)| *o);
            w.message = format!(
                "{topic}'s stamps are {} before its log times: the shift of the replay this bag recorded (see replayed_recording), not a device clock fault. Compare its stamps with the other replayed topics', not with log time",
                secs(off.saturating_neg())
            );
        }
    }
    let aggregate_topics: Vec<String> = work
        .iter()
        .filter(|w| w.report.aggregate)
        .map(|w| w.report.topic.clone())
        .collect();

    let sim_clock = match (clock_idx, &clock_map) {
        (Some(i), Some(m)) => {
            let r = sim_clock_report(&sorted[i].topic, m, opts.pause_min_ns);
            for p in &r.pauses {
                warnings.push(Warning {
                    code: WarningCode::SimClockPause,
                    topic: Some(r.topic.clone()),
                    message: format!(
                        "sim time stood still at {} for {} of log time (from log time {} ns): the simulator was paused; sim-stamped topics stall too",
                        secs(p.sim_ns),
                        secs(p.end_log_time_ns.saturating_sub(p.start_log_time_ns)),
                        p.start_log_time_ns
                    ),
                    file: None,
                    offset: None,
                    data_loss: false,
                });
            }
            Some(r)
        }
        _ => None,
    };

    warnings.sort();
    ClocksReport {
        recorder_axis: recorder,
        split,
        axis_groups,
        aggregate_topics,
        replayed_recording,
        topics: work.into_iter().map(|w| w.report).collect(),
        sim_clock,
        warnings,
        clock_map,
    }
}
