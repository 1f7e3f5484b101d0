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
    /// Header stamp of each message on the common axis, ns; the time pairing and the delay use.
    pub stamp_ns: Vec<i64>,
    /// Log (receive) time of each message, ns; empty when unknown.
    pub log_time_ns: Vec<i64>,
    /// Joint names of each message, in the order of its values.
    pub names: Vec<JointNames>,
    /// Values of each message (positions, rad or m), in `names` order.
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

impl std::str::FromStr for ResponseKind {
    type Err = String;

    /// `sampled` or `event`.
    fn from_str(s: &str) -> Result<ResponseKind, String> {
        match s.trim() {
            "sampled" => Ok(ResponseKind::Sampled),
            "event" => Ok(ResponseKind::Event),
            x => Err(format!("must be sampled or event, got '{x}'")),
        }
    }
}

impl<'de> serde::Deserialize<'de> for ResponseKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ResponseKind, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl ResponseKind {
    /// The serialised name: `event` or `sampled`.
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
    Empty {
        /// Which series: `command` or `response`.
        stream: &'static str,
    },
    /// Parallel vectors of a series have different lengths.
    LengthMismatch {
        /// Which series: `command` or `response`.
        stream: &'static str,
        /// The vector whose length differs, e.g. `names`.
        field: &'static str,
        /// Length of `stamp_ns`.
        expected: usize,
        /// Length of the vector named by `field`.
        got: usize,
    },
    /// No joint name appears in both streams.
    NoCommonJoints {
        /// Joint names of the commands, sorted.
        command_joints: Vec<String>,
        /// Joint names of the responses, sorted.
        response_joints: Vec<String>,
    },
    /// Not a single usable command/response pair.
    NoPairs {
        /// Why, e.g. every pair farther apart than `max_pair_distance_ns`.
        detail: String,
    },
    /// Sampled mode needs the commands to move to see a delay.
    NoMotion,
    /// An option is out of range.
    InvalidOption {
        /// Which option and what is wrong with its value.
        detail: String,
    },
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
    /// Axis the stamps were recorded on (e.g. `sim`).
    pub from_axis: String,
    /// Axis they were mapped to (e.g. `wall`).
    pub to_axis: String,
    /// What did the mapping (e.g. `/clock`).
    pub via: String,
    /// Free-text caveat for the reader.
    pub note: String,
}

/// Error statistics over command/response pairs (response − command, radians).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorStats {
    /// RMS over all joints' pairs pooled.
    pub rms: f64,
    /// Mean absolute error over all joints' pairs pooled, rad; NaN when there are none.
    pub mean_abs: f64,
    /// Largest absolute error over all joints, rad; NaN when there are no pairs.
    pub max: f64,
    /// RMS per joint.
    pub per_joint: BTreeMap<String, f64>,
    /// Mean signed error per joint (a constant offset shows here).
    pub per_joint_mean: BTreeMap<String, f64>,
    /// Largest absolute error per joint, rad.
    pub per_joint_max: BTreeMap<String, f64>,
    /// Joint samples (command × joint) that contributed.
    pub samples: usize,
    /// Commands that found a response.
    pub pairs: usize,
}

/// Per-joint delay from that joint's own error curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JointDelay {
    /// The joint's delay, ns; `None` when the joint moved too little to locate it (see `note`).
    pub delay_ns: Option<i64>,
    /// 1-sigma uncertainty of `delay_ns`, ns, from the error-curve curvature.
    pub std_ns: Option<f64>,
    /// Command samples of this joint behind the estimate.
    pub samples: usize,
    /// Why no delay, or a caveat.
    pub note: Option<String>,
}

/// The delay estimate and its confidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelayEstimate {
    /// The estimated command → response delay, ns (response time − command time).
    pub delay_ns: i64,
    /// 1-sigma uncertainty: from the error-curve curvature (sampled) or the standard error of
    /// the pair differences (event).
    pub std_ns: Option<f64>,
    /// Curvature of the mean squared error around the minimum (sampled).
    pub curvature_rad2_per_ms2: Option<f64>,
    /// Statistics of the pair differences (event).
    pub mean_ns: Option<i64>,
    /// Mean of the pair differences, ns (event mode).
    pub median_ns: Option<i64>,
    /// Summary of the pair differences, ns (event mode).
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

/// Why a [`Segment`] of commands was left out of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentReason {
    /// Before the commands first move: everything up to the first motion.
    WarmUp,
    /// The commands stood still for at least `still_min_duration_ns`.
    Still,
    /// Outside the requested `window_ns`.
    OutsideWindow,
}

/// A time span of commands, absolute and relative to the first command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    /// Stamp of the segment's first command, ns on the common axis.
    pub start_ns: i64,
    /// Stamp of the segment's last command, ns on the common axis.
    pub end_ns: i64,
    /// `start_ns` − the first command's stamp, ns.
    pub start_rel_ns: i64,
    /// `end_ns` − the first command's stamp, ns.
    pub end_rel_ns: i64,
    /// Number of commands in the segment.
    pub commands: usize,
    /// Why it was trimmed; `None` for a segment that was used.
    pub reason: Option<SegmentReason>,
}

/// Which commands the analysis used and which it trimmed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segments {
    /// "auto" (trim warm-up/still), "window" or "all".
    pub mode: String,
    /// Stretches of commands used, in time order.
    pub used: Vec<Segment>,
    /// Stretches of commands left out, each with its reason.
    pub trimmed: Vec<Segment>,
    /// Commands in the used segments.
    pub commands_used: usize,
    /// All commands (samples after trajectory expansion).
    pub commands_total: usize,
}

/// How the joint names of the two streams overlap, each list sorted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JointSets {
    /// Joints in both streams: the ones analysed.
    pub matched: Vec<String>,
    /// Joints only the commands name.
    pub only_in_commands: Vec<String>,
    /// Joints only the responses name.
    pub only_in_responses: Vec<String>,
}

/// One problem found in the inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// What is wrong, e.g. `stamps_not_monotonic`, `duplicate_name`, `non_finite`, `outside_limits`, `stale_command`, `delay_at_search_edge`.
    pub kind: String,
    /// "command" or "response".
    pub stream: String,
    /// Message index within its stream, when the finding is about one message.
    pub index: Option<usize>,
    /// That message's stamp, ns, when known.
    pub stamp_ns: Option<i64>,
    /// The joint concerned, when the finding is about one joint.
    pub joint: Option<String>,
    /// Human-readable detail with the offending values.
    pub detail: String,
}

/// Findings, with complete counts per kind and the first few instances of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Checks {
    /// Number of findings of each kind, complete even when `findings` is truncated.
    pub counts: BTreeMap<String, usize>,
    /// The first few findings of each kind.
    pub findings: Vec<Finding>,
    /// Some instances were left out (counts stay complete).
    pub truncated: bool,
}

/// Sizes of the inputs after preparation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamCounts {
    /// Command messages given.
    pub command_messages: usize,
    /// Response messages given.
    pub response_messages: usize,
    /// Command samples after expanding multi-point trajectories.
    pub command_samples: usize,
    /// Median interval between command samples, ns.
    pub command_period_ns: Option<i64>,
    /// Median interval between response samples, ns.
    pub response_period_ns: Option<i64>,
}

/// Result of [`crate::match_series`]: the delay, the tracking error before and after removing it, and what was checked on the way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchReport {
    /// The estimated delay, ns (same as `delay.delay_ns`).
    pub delay_ns: i64,
    /// "event_pairs" or "error_curve_min".
    pub method: String,
    /// Whether the responses were treated as events or as a sampled state.
    pub response_kind: ResponseKind,
    /// The kind was chosen automatically from the stream rates.
    pub response_kind_auto: bool,
    /// Filled by the caller when the streams were put on one axis.
    pub clock_mapping: Option<ClockMappingNote>,
    /// The delay estimate with its uncertainty and error curves.
    pub delay: DelayEstimate,
    /// Each joint's delay from its own error curve, by joint name.
    pub per_joint_delay: BTreeMap<String, JointDelay>,
    /// Naive nearest-stamp pairing, no shift.
    pub error_before: ErrorStats,
    /// Response taken at `t_cmd + delay`.
    pub error_after: ErrorStats,
    /// Command/response pairs behind `error_after`.
    pub pairs_used: usize,
    /// How the joint names of the two streams overlap.
    pub joints: JointSets,
    /// Commands used and trimmed.
    pub segments: Segments,
    /// Sizes of the inputs.
    pub streams: StreamCounts,
    /// Problems found in the inputs and in the estimate.
    pub checks: Checks,
    /// One-sentence human-readable result.
    pub summary: String,
}

/// One run of [`crate::compare_runs`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's name as given by the caller.
    pub name: String,
    /// The run's estimated delay, ns; `None` when matching failed (see `error`).
    pub delay_ns: Option<i64>,
    /// `event_pairs` or `error_curve_min`; `None` when matching failed.
    pub method: Option<String>,
    /// Pooled RMS error of naive nearest-stamp pairs, rad.
    pub error_before_rms: Option<f64>,
    /// Pooled RMS error after removing the delay, rad.
    pub error_after_rms: Option<f64>,
    /// RMS error per joint after removing the delay, rad.
    pub error_after_per_joint: BTreeMap<String, f64>,
    /// The run's one-sentence summary.
    pub summary: Option<String>,
    /// Why this run has no report.
    pub error: Option<String>,
}

/// Command sequence of a run compared with the first run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandDiff {
    /// The run's name.
    pub name: String,
    /// Number of command samples in this run.
    pub commands: usize,
    /// Number of command samples in the first run.
    pub reference_commands: usize,
    /// Every command agrees with the first run's within the tolerances, and the counts are equal.
    pub same_sequence: bool,
    /// First command index whose values or relative time differ beyond tolerance.
    pub first_differing_index: Option<usize>,
    /// Largest difference of a command value from the first run's, rad (angles wrapped for continuous joints).
    pub max_value_diff: f64,
    /// Largest difference of a command's time since the run's first command from the first run's, ns.
    pub max_time_diff_ns: i64,
}

/// Response difference to the first run after removing each run's delay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseDiff {
    /// The run's name.
    pub name: String,
    /// Pooled RMS of the response difference, rad; `None` when the runs could not be aligned.
    pub rms: Option<f64>,
    /// RMS of the response difference per joint, rad.
    pub per_joint: BTreeMap<String, f64>,
    /// Joint samples compared.
    pub samples: usize,
}

/// Result of [`crate::compare_runs`]: each run against the first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    /// Name of the first run, the reference; `None` with no runs.
    pub reference: Option<String>,
    /// Every run's own match result, in the order given.
    pub runs: Vec<RunSummary>,
    /// Each run's command sequence against the reference's.
    pub commands: Vec<CommandDiff>,
    /// Each run's response against the reference's, with each run's own delay removed.
    pub responses: Vec<ResponseDiff>,
    /// Command values agreeing within this count as equal, rad.
    pub value_tolerance: f64,
    /// Command times (relative to each run's first command) agreeing within this count as equal, ns.
    pub time_tolerance_ns: i64,
}
