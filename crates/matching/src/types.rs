//! Public input, option and report types.

use bagscope_stats::NsSummary;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// One message's joint names. Shared: a topic's messages nearly always carry the same list,
/// and one copy of it per message would cost far more than the message's values.
pub type JointNames = std::sync::Arc<[String]>;

/// One decoded joint topic on the caller's common clock axis.
///
/// Messages are parallel vectors: message `k` has `stamp_ns[k]`, `names[k]`, `values[k]`.
/// `log_time_ns` may be empty (then the command-age checks are skipped).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JointSeries {
    pub stamp_ns: Vec<i64>,
    pub log_time_ns: Vec<i64>,
    pub names: Vec<JointNames>,
    pub values: Vec<Vec<f64>>,
    /// Optional per-message trajectory points `(time_from_start_ns, positions)`.
    /// Only used when a message has two or more points: the points are then placed at
    /// `stamp + (time_from_start_i - time_from_start_0)` so that the first point keeps the
    /// header stamp (the delay stays defined against header stamps) and a newer message
    /// supersedes the remaining points of an older one.
    pub points: Option<Vec<Vec<TrajectoryPoint>>>,
}

/// `(time_from_start_ns, positions)` of one trajectory point, positions in `names` order.
pub type TrajectoryPoint = (i64, Vec<f64>);

/// How the response stream relates to the commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseKind {
    /// One response per command (acknowledgement / echo).
    Event,
    /// A state stream sampled faster than the commands.
    Sampled,
}

impl ResponseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ResponseKind::Event => "event",
            ResponseKind::Sampled => "sampled",
        }
    }
}

/// Tuning of [`crate::match_series`]. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchOptions {
    /// Nearest-neighbour pairs farther apart than this are dropped (also the largest gap
    /// between two response samples that interpolation may bridge, when set).
    pub max_pair_distance_ns: Option<i64>,
    /// Each response pairs with at most one command (nearest-neighbour and event pairing).
    pub one_to_one: bool,
    /// Delay search range `(min, max)`; default `(0, 500 ms)`: responses follow commands.
    pub search_window_ns: (i64, i64),
    /// `None` = auto: sampled when responses are at least 2x denser than commands.
    pub response_kind: Option<ResponseKind>,
    /// Analyse only commands in `[start, end]` relative to the first command; disables the
    /// automatic warm-up / still trimming.
    pub window_ns: Option<(i64, i64)>,
    /// Drop the warm-up and still segments (default true).
    pub trim_still: bool,
    /// Command speed (rad/s, fastest joint) below which the commands count as still.
    pub still_velocity_rad_s: f64,
    /// Still stretches shorter than this inside the motion are kept (default 0.5 s).
    pub still_min_duration_ns: i64,
    /// Downsample both streams keeping the last sample per bucket.
    pub bucket_ns: Option<i64>,
    /// Linearly interpolate sampled responses (default true); otherwise nearest sample.
    pub interpolate: bool,
    /// Joints whose angles wrap at ±π.
    pub continuous_joints: Vec<String>,
    /// Position limits per joint; values outside are reported.
    pub limits: BTreeMap<String, (f64, f64)>,
    /// Commands whose log time exceeds their stamp by more than this are reported stale.
    pub max_command_age_ns: Option<i64>,
    /// Coarse step of the delay sweep (default 1 ms; refined below the step afterwards).
    pub sweep_step_ns: i64,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            max_pair_distance_ns: None,
            one_to_one: false,
            search_window_ns: (0, 500_000_000),
            response_kind: None,
            window_ns: None,
            trim_still: true,
            still_velocity_rad_s: 0.02,
            still_min_duration_ns: 500_000_000,
            bucket_ns: None,
            interpolate: true,
            continuous_joints: Vec::new(),
            limits: BTreeMap::new(),
            max_command_age_ns: None,
            sweep_step_ns: 1_000_000,
        }
    }
}

/// Why no report could be produced.
#[derive(Debug, Clone, PartialEq)]
pub enum MatchError {
    /// A series has no messages.
    Empty { stream: &'static str },
    /// Parallel vectors of a series have different lengths.
    LengthMismatch {
        stream: &'static str,
        field: &'static str,
        expected: usize,
        got: usize,
    },
    /// No joint name appears in both streams.
    NoCommonJoints {
        command_joints: Vec<String>,
        response_joints: Vec<String>,
    },
    /// Not a single usable command/response pair.
    NoPairs { detail: String },
    /// Sampled mode needs the commands to move to see a delay.
    NoMotion,
    /// An option is out of range.
    InvalidOption { detail: String },
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::Empty { stream } => write!(f, "{stream} series is empty"),
            MatchError::LengthMismatch { stream, field, expected, got } => write!(
                f,
                "{stream} series: {field} has {got} entries, stamp_ns has {expected}"
            ),
            MatchError::NoCommonJoints { command_joints, response_joints } => write!(
                f,
                "no joint in both streams (commands: {command_joints:?}, responses: {response_joints:?})"
            ),
            MatchError::NoPairs { detail } => write!(f, "no command/response pairs: {detail}"),
            MatchError::NoMotion => write!(
                f,
                "commands never move above the still threshold; a delay cannot be measured"
            ),
            MatchError::InvalidOption { detail } => write!(f, "invalid option: {detail}"),
        }
    }
}

impl std::error::Error for MatchError {}

/// Where the common clock axis came from; filled by the caller, echoed in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockMappingNote {
    pub from_axis: String,
    pub to_axis: String,
    pub via: String,
    pub note: String,
}

/// Error statistics over command/response pairs (response − command, radians).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorStats {
    /// RMS over all joints' pairs pooled.
    pub rms: f64,
    pub mean_abs: f64,
    pub max: f64,
    /// RMS per joint.
    pub per_joint: BTreeMap<String, f64>,
    /// Mean signed error per joint (a constant offset shows here).
    pub per_joint_mean: BTreeMap<String, f64>,
    pub per_joint_max: BTreeMap<String, f64>,
    /// Joint samples (command × joint) that contributed.
    pub samples: usize,
    /// Commands that found a response.
    pub pairs: usize,
}

/// Per-joint delay from that joint's own error curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JointDelay {
    pub delay_ns: Option<i64>,
    pub std_ns: Option<f64>,
    pub samples: usize,
    /// Why no delay, or a caveat.
    pub note: Option<String>,
}

/// The delay estimate and its confidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelayEstimate {
    pub delay_ns: i64,
    /// 1-sigma uncertainty: from the error-curve curvature (sampled) or the standard error of
    /// the pair differences (event).
    pub std_ns: Option<f64>,
    /// Curvature of the mean squared error around the minimum (sampled).
    pub curvature_rad2_per_ms2: Option<f64>,
    /// Statistics of the pair differences (event).
    pub mean_ns: Option<i64>,
    pub median_ns: Option<i64>,
    pub spread: Option<NsSummary>,
    /// Event mode: whether the pairs were confirmed by echoed values (else: first causal
    /// response).
    pub confirmed_by_values: Option<bool>,
    /// Pairs (event) or joint samples (sampled) behind the estimate.
    pub samples: usize,
    /// The minimum sits at the edge of the search window: widen it.
    pub at_search_edge: bool,
    /// `(shift_ns, rms)` over the coarse sweep (sampled; plain RMS).
    pub error_curve: Vec<(i64, f64)>,
    /// Same sweep with each joint's mean error removed; this is what is minimised so that a
    /// constant offset does not pull the delay.
    pub error_curve_debiased: Vec<(i64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentReason {
    WarmUp,
    Still,
    OutsideWindow,
}

/// A time span of commands, absolute and relative to the first command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    pub start_ns: i64,
    pub end_ns: i64,
    pub start_rel_ns: i64,
    pub end_rel_ns: i64,
    pub commands: usize,
    pub reason: Option<SegmentReason>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segments {
    /// "auto" (trim warm-up/still), "window" or "all".
    pub mode: String,
    pub used: Vec<Segment>,
    pub trimmed: Vec<Segment>,
    pub commands_used: usize,
    pub commands_total: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JointSets {
    pub matched: Vec<String>,
    pub only_in_commands: Vec<String>,
    pub only_in_responses: Vec<String>,
}

/// One problem found in the inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: String,
    /// "command" or "response".
    pub stream: String,
    pub index: Option<usize>,
    pub stamp_ns: Option<i64>,
    pub joint: Option<String>,
    pub detail: String,
}

/// Findings, with complete counts per kind and the first few instances of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Checks {
    pub counts: BTreeMap<String, usize>,
    pub findings: Vec<Finding>,
    /// Some instances were left out (counts stay complete).
    pub truncated: bool,
}

/// Sizes of the inputs after preparation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamCounts {
    pub command_messages: usize,
    pub response_messages: usize,
    /// Command samples after expanding multi-point trajectories.
    pub command_samples: usize,
    pub command_period_ns: Option<i64>,
    pub response_period_ns: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchReport {
    pub delay_ns: i64,
    /// "event_pairs" or "error_curve_min".
    pub method: String,
    pub response_kind: ResponseKind,
    /// The kind was chosen automatically from the stream rates.
    pub response_kind_auto: bool,
    /// Filled by the caller when the streams were put on one axis.
    pub clock_mapping: Option<ClockMappingNote>,
    pub delay: DelayEstimate,
    pub per_joint_delay: BTreeMap<String, JointDelay>,
    /// Naive nearest-stamp pairing, no shift.
    pub error_before: ErrorStats,
    /// Response taken at `t_cmd + delay`.
    pub error_after: ErrorStats,
    pub pairs_used: usize,
    pub joints: JointSets,
    pub segments: Segments,
    pub streams: StreamCounts,
    pub checks: Checks,
    pub summary: String,
}

/// One run of [`crate::compare_runs`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub name: String,
    pub delay_ns: Option<i64>,
    pub method: Option<String>,
    pub error_before_rms: Option<f64>,
    pub error_after_rms: Option<f64>,
    pub error_after_per_joint: BTreeMap<String, f64>,
    pub summary: Option<String>,
    /// Why this run has no report.
    pub error: Option<String>,
}

/// Command sequence of a run compared with the first run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandDiff {
    pub name: String,
    pub commands: usize,
    pub reference_commands: usize,
    pub same_sequence: bool,
    /// First command index whose values or relative time differ beyond tolerance.
    pub first_differing_index: Option<usize>,
    pub max_value_diff: f64,
    pub max_time_diff_ns: i64,
}

/// Response difference to the first run after removing each run's delay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseDiff {
    pub name: String,
    pub rms: Option<f64>,
    pub per_joint: BTreeMap<String, f64>,
    pub samples: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    pub reference: Option<String>,
    pub runs: Vec<RunSummary>,
    pub commands: Vec<CommandDiff>,
    pub responses: Vec<ResponseDiff>,
    pub value_tolerance: f64,
    pub time_tolerance_ns: i64,
}
