//! Message-for-message emulation of the ROS 2 `message_filters` synchronizers.
//!
//! The behaviour follows `tests/data/sync-golden/SPEC.md` in the repository (derived from the
//! upstream code and checked against golden vectors produced by the real upstream
//! implementations):
//!
//! | [`Policy`]            | CLI name          | upstream                                            |
//! |-----------------------|-------------------|-----------------------------------------------------|
//! | `Exact`               | `exact`           | C++ `sync_policies::ExactTime`                       |
//! | `Approx`              | `approx`          | C++ `sync_policies::ApproximateTime`                 |
//! | `ExactPy`             | `exact-py`        | Python `TimeSynchronizer` (2026-01 and later)        |
//! | `ExactPyLegacy`       | `exact-py-legacy` | Python `TimeSynchronizer` (before 2026-01)           |
//! | `ApproxPy`            | `approx-py`       | Python `ApproximateTimeSynchronizer`                 |
//! | `ApproxEpsilon`       | `approx-epsilon`  | C++ `sync_policies::ApproximateEpsilonTime`          |
//! | `Latest`              | `latest`          | C++ `sync_policies::LatestTime` (`now()` = log time) |
//!
//! Input is a slice of [`Arrival`]s in `add()` order. Messages are identified by their topic and
//! their *per-topic index*: the count of earlier arrivals of the same topic in that slice.
//!
//! Pure library: no I/O, no panics on any input, deterministic output.
//!
//! # In the workspace
//!
//! Message_filters emulation (C++ ExactTime / ApproximateTime / ApproximateEpsilonTime /
//! LatestTime, Python TimeSynchronizer old and new, ApproximateTimeSynchronizer; docs/sync.md),
//! reports, slop/queue recommendation (sweeps count sets only, `count_sets`, on all cores),
//! diagnosis; 24-byte arrivals (stamp sentinel behind `Arrival::new` / `stamp_ns()`); emitted
//! sets and drops stored by column (`SetList`, `DropList`: 12 + 16·n bytes a set of n topics,
//! 25 a drop) and handed out as `EmittedSet` / `DroppedMessage` values.
//!
//! Notable dependencies: `bagscope-stats`, `smallvec` (members of a handed-out set, per-topic
//! lists of the engines, inline), `rayon` (sweeps).

#![forbid(unsafe_code)]

mod cpp_approx;
mod cpp_epsilon;
mod cpp_exact;
mod cpp_latest;
mod diagnose;
mod drops;
mod duration;
mod epochs;
mod freshness;
mod py_approx;
mod py_exact;
mod recommend;
mod report;
mod rows;
mod sets;
mod sorted;
mod track;

use serde::Serialize;
use std::fmt;

pub use diagnose::{diagnose, DiagnoseHints, Diagnosis, DiagnosisKind};
pub use drops::DropList;
pub use duration::{parse_duration_ns, seconds_to_ns};
pub use epochs::emulate_flushed;
pub use freshness::{apply_freshness, FreshnessConfig, FreshnessReport, RejectedSet, SetRejection};
pub use recommend::{
    recommend, CurvePoint, NoRecommendation, NoRecommendationCode, RecommendInput, RecommendRule,
    Recommendation, RecommendationCore, SlopCost, TopicSeries, MAX_QUEUE_SIZE, MIN_CANDIDATE_SETS,
    MIN_MESSAGES_PER_TOPIC,
};
pub use report::{summarize, SyncReport, TopicDrops};
pub use rows::{RowList, Rows};
pub use sets::SetList;

/// Upper bound on topics, as in upstream (9 type slots).
pub const MAX_TOPICS: usize = 9;

/// A stamp this far behind an earlier stamp of the same topic is a clock reset, not jitter.
pub const EPOCH_JUMP_NS: i64 = 1_000_000_000;

/// Which upstream synchronizer to emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// C++ `ExactTime`.
    Exact,
    /// C++ `ApproximateTime`.
    Approx,
    /// Python `TimeSynchronizer`, current behaviour (purges older stamps after a publish).
    ExactPy,
    /// Python `TimeSynchronizer` before the 2026-01 releases.
    ExactPyLegacy,
    /// Python `ApproximateTimeSynchronizer`.
    ApproxPy,
    /// C++ `ApproximateEpsilonTime`: fronts only, a set's spread <= epsilon.
    ApproxEpsilon,
    /// C++ `LatestTime`: rate-driven zero-order hold, driven by the log time as `now()`.
    Latest,
}

impl Policy {
    /// Every policy, in the order the CLI lists them.
    pub const ALL: [Policy; 7] = [
        Policy::Exact,
        Policy::Approx,
        Policy::ExactPy,
        Policy::ExactPyLegacy,
        Policy::ApproxPy,
        Policy::ApproxEpsilon,
        Policy::Latest,
    ];

    /// The name the CLI takes and prints (`--policy`), kebab-case as serialized.
    pub fn cli_name(self) -> &'static str {
        match self {
            Policy::Exact => "exact",
            Policy::Approx => "approx",
            Policy::ExactPy => "exact-py",
            Policy::ExactPyLegacy => "exact-py-legacy",
            Policy::ApproxPy => "approx-py",
            Policy::ApproxEpsilon => "approx-epsilon",
            Policy::Latest => "latest",
        }
    }

    /// Name used by the golden vectors (`policy` field).
    pub fn golden_name(self) -> &'static str {
        match self {
            Policy::Exact => "cpp_exact_time",
            Policy::Approx => "cpp_approximate_time",
            Policy::ExactPy => "py_time_synchronizer",
            Policy::ExactPyLegacy => "py_time_synchronizer_legacy",
            Policy::ApproxPy => "py_approximate_time",
            Policy::ApproxEpsilon => "cpp_approximate_epsilon_time",
            Policy::Latest => "cpp_latest_time",
        }
    }

    /// Accepts the CLI names and the golden-vector names.
    pub fn parse(s: &str) -> Result<Policy, SyncError> {
        let s = s.trim();
        Policy::ALL
            .into_iter()
            .find(|p| p.cli_name() == s || p.golden_name() == s)
            .or(if s == "py_approximate_time_sweep" {
                Some(Policy::ApproxPy)
            } else {
                None
            })
            .ok_or_else(|| SyncError::UnknownPolicy(s.to_string()))
    }

    /// Exact-stamp policies (sets always have identical stamps).
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            Policy::Exact | Policy::ExactPy | Policy::ExactPyLegacy
        )
    }
}

impl std::str::FromStr for Policy {
    type Err = SyncError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::parse(s)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cli_name())
    }
}

/// From its name, as [`Policy::parse`] reads it.
impl<'de> serde::Deserialize<'de> for Policy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let s = String::deserialize(d)?;
        Policy::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// One `add()` call.
///
/// 24 bytes: a bag's arrivals are all held for the emulation (and its evidence), so the stamp
/// is stored with a sentinel for "no stamp" rather than as an `Option` (16 bytes, 32 in all).
/// No real stamp is `i64::MIN`: a ROS stamp's seconds are 32-bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Index of the message's topic, 0..n_topics in the configuration's topic order.
    pub topic: usize,
    stamp: i64,
    /// Receive (log) time in nanoseconds; used by `sync_arrival_time` and header-less
    /// messages in approx-py, and by `latest` as its `now()`.
    pub arrival_ns: i64,
}

impl Arrival {
    const NO_STAMP: i64 = i64::MIN;

    /// `stamp_ns` is the header stamp, `None` for a header-less message. A stamp of
    /// `i64::MIN` (no ROS stamp can be that far before 1970) is kept as `i64::MIN + 1`: still
    /// a negative, invalid stamp, as the synchronizers treat it.
    pub fn new(topic: usize, stamp_ns: Option<i64>, arrival_ns: i64) -> Arrival {
        Arrival {
            topic,
            stamp: match stamp_ns {
                Some(s) => s.max(Self::NO_STAMP + 1),
                None => Self::NO_STAMP,
            },
            arrival_ns,
        }
    }

    /// Header stamp; `None` for a header-less message.
    #[inline]
    pub fn stamp_ns(&self) -> Option<i64> {
        (self.stamp != Self::NO_STAMP).then_some(self.stamp)
    }
}

impl Serialize for Arrival {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Arrival", 3)?;
        st.serialize_field("topic", &self.topic)?;
        st.serialize_field("stamp_ns", &self.stamp_ns())?;
        st.serialize_field("arrival_ns", &self.arrival_ns)?;
        st.end()
    }
}

/// Synchronizer parameters. Fields irrelevant to the chosen policy are ignored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncConfig {
    /// The synchronizer emulated.
    pub policy: Policy,
    /// Topics synchronized, 2..=[`MAX_TOPICS`]; arrivals name them by index.
    pub n_topics: usize,
    /// C++ approx: per-topic retained messages (> 0). C++ exact: distinct pending stamps (0 =
    /// unlimited). Python: per-topic distinct keys (0 = keep nothing).
    pub queue_size: usize,
    /// C++ approx (default 0.1).
    pub age_penalty: f64,
    /// C++ approx; `None` = upstream default (INT32_MAX s + 999999999 ns).
    pub max_interval_ns: Option<i64>,
    /// C++ approx inter-message lower bound per topic; empty = all 0.
    pub lower_bounds_ns: Vec<i64>,
    /// approx-py slop in ns (already truncated like `int(slop * 1e9)`).
    pub slop_ns: i64,
    /// approx-py `allow_headerless` (default false): a message without a header stamp is keyed
    /// on its arrival time instead of being refused (`headerless_rejected`).
    pub allow_headerless: bool,
    /// approx-py `sync_arrival_time` (default false): every message is keyed on its arrival
    /// (log) time instead of its header stamp.
    pub sync_arrival_time: bool,
    /// approx-py per-topic key offset; empty = none.
    pub queue_offset_ns: Vec<i64>,
    /// approx-epsilon: inclusive tolerance from the oldest front (>= 0).
    pub epsilon_ns: i64,
    /// latest: empty = upstream defaults; one entry = `setRateConfig`; one per topic (in
    /// topic order) = `setRateConfigPerMessage`.
    pub rate_config: Vec<RateConfig>,
}

/// One LatestTime rate slot's configuration: `(rate_ema_alpha, error_ema_alpha,
/// rate_step_change_margin_factor)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateConfig {
    /// Weight of the newest rate sample (1 / the period between arrivals) in the topic's
    /// rate estimate, an exponential moving average (default 0.9).
    pub rate_ema_alpha: f64,
    /// Weight of the newest deviation |rate − sample| in the rate error's moving average
    /// (default 0.3).
    pub error_ema_alpha: f64,
    /// `rate_step_change_margin_factor` (default 10.0): a sample deviating by more than this
    /// many times the error is a rate step change (the estimate starts over); a topic overdue
    /// by that margin counts as late.
    pub margin: f64,
}

impl Default for RateConfig {
    /// Upstream's defaults (0.9, 0.3, 10.0).
    fn default() -> Self {
        RateConfig {
            rate_ema_alpha: 0.9,
            error_ema_alpha: 0.3,
            margin: 10.0,
        }
    }
}

impl RateConfig {
    /// `A,E,M`: rate EMA alpha, error EMA alpha, step-change margin factor.
    pub fn parse(s: &str) -> Result<RateConfig, SyncError> {
        let bad = || {
            SyncError::InvalidParam(format!(
                "rate config '{s}': expected A,E,M (rate EMA alpha, error EMA alpha, step-change margin), three finite numbers"
            ))
        };
        let v: Vec<f64> = s
            .split(',')
            .map(|x| x.trim().parse::<f64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        match v[..] {
            [a, e, m] if v.iter().all(|x| x.is_finite()) => Ok(RateConfig {
                rate_ema_alpha: a,
                error_ema_alpha: e,
                margin: m,
            }),
            _ => Err(bad()),
        }
    }
}

impl std::str::FromStr for RateConfig {
    type Err = SyncError;

    /// [`RateConfig::parse`]: `A,E,M`.
    fn from_str(s: &str) -> Result<RateConfig, SyncError> {
        RateConfig::parse(s)
    }
}

/// From its `A,E,M` text, as [`RateConfig::parse`] reads it.
impl<'de> serde::Deserialize<'de> for RateConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RateConfig, D::Error> {
        let s = String::deserialize(d)?;
        RateConfig::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl SyncConfig {
    /// Upstream defaults for everything but the policy, topic count and queue size.
    pub fn new(policy: Policy, n_topics: usize, queue_size: usize) -> SyncConfig {
        SyncConfig {
            policy,
            n_topics,
            queue_size,
            age_penalty: 0.1,
            max_interval_ns: None,
            lower_bounds_ns: Vec::new(),
            slop_ns: 0,
            allow_headerless: false,
            sync_arrival_time: false,
            queue_offset_ns: Vec::new(),
            epsilon_ns: 0,
            rate_config: Vec::new(),
        }
    }

    /// Checks what upstream would reject or never return from: the topic count, per-topic
    /// parameter lengths, a negative epsilon, LatestTime rate configs (one, or one per topic,
    /// all finite), C++ approx's queue size (> 0), age penalty (finite, >= 0) and lower
    /// bounds (>= 0).
    pub fn validate(&self) -> Result<(), SyncError> {
        if self.n_topics < 2 || self.n_topics > MAX_TOPICS {
            return Err(SyncError::TopicCount(self.n_topics));
        }
        for (name, v) in [
            ("lower_bounds_ns", &self.lower_bounds_ns),
            ("queue_offset_ns", &self.queue_offset_ns),
        ] {
            if !v.is_empty() && v.len() != self.n_topics {
                return Err(SyncError::ParamLength {
                    name,
                    expected: self.n_topics,
                    got: v.len(),
                });
            }
        }
        if self.policy == Policy::ApproxEpsilon && self.epsilon_ns < 0 {
            // Upstream erases nothing once every topic holds a message: add() never returns.
            return Err(SyncError::InvalidParam(format!(
                "approx-epsilon needs epsilon >= 0 (upstream never returns from add() with a negative epsilon), got {} ns",
                self.epsilon_ns
            )));
        }
        if self.policy == Policy::Latest {
            let k = self.rate_config.len();
            if k > 1 && k != self.n_topics {
                return Err(SyncError::InvalidParam(format!(
                    "latest takes one rate config (setRateConfig) or one per topic ({}, setRateConfigPerMessage), got {k}",
                    self.n_topics
                )));
            }
            if self.rate_config.iter().any(|r| {
                !(r.rate_ema_alpha.is_finite()
                    && r.error_ema_alpha.is_finite()
                    && r.margin.is_finite())
            }) {
                return Err(SyncError::InvalidParam(
                    "latest: rate config values must be finite".into(),
                ));
            }
        }
        if self.policy == Policy::Approx {
            if self.queue_size == 0 {
                // Upstream asserts queue_size > 0; the overflow path is undefined otherwise.
                return Err(SyncError::InvalidParam(
                    "approx requires queue_size > 0".into(),
                ));
            }
            if !self.age_penalty.is_finite() || self.age_penalty < 0.0 {
                return Err(SyncError::InvalidParam(format!(
                    "age_penalty must be finite and >= 0, got {}",
                    self.age_penalty
                )));
            }
            if self.lower_bounds_ns.iter().any(|&b| b < 0) {
                return Err(SyncError::InvalidParam(
                    "lower_bounds_ns must be >= 0".into(),
                ));
            }
        }
        Ok(())
    }
}

/// Why a message never became part of an emitted set. See the crate README section in
/// [`emulate`] for the exact rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Removed by a queue bound while partners were still to come (`latest`: replaced by a
    /// newer message of its topic before any set used it).
    QueueEvicted,
    /// A candidate partner on every other topic was held with it, but the tightest set it
    /// could have joined spanned more than the policy accepts, or the matching logic preferred
    /// another set; an exact policy's purge of stamps older than a published set.
    SkewExceeded,
    /// Discarded by C++ approx / approx-epsilon, or purged by an exact policy, with a stamp
    /// behind an earlier stamp of its topic: the discard came from arrival order.
    OutOfOrder,
    /// Overwritten by a later message of its topic with the same key, or its stamp repeats
    /// one already used in an emitted set of its topic.
    DuplicateMember,
    /// Removed, with a stamp at least [`EPOCH_JUMP_NS`] behind an earlier stamp of its topic
    /// (a clock reset).
    ClockEpochChanged,
    /// Still held when the input ended, or discarded by the matching logic when no free
    /// partner ever came.
    NeverMatched,
    /// Some input topic has no message at all, so no set could form.
    TopicEmpty,
    /// Header-less message refused (policy needs a stamp, or approx-py without allow_headerless).
    HeaderlessRejected,
    /// Negative stamp: upstream `Time` construction throws, so the message never enters.
    InvalidStamp,
}

impl DropReason {
    /// The reason's snake_case name, as serialized and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueEvicted => "queue_evicted",
            DropReason::SkewExceeded => "skew_exceeded",
            DropReason::OutOfOrder => "out_of_order",
            DropReason::DuplicateMember => "duplicate_member",
            DropReason::ClockEpochChanged => "clock_epoch_changed",
            DropReason::NeverMatched => "never_matched",
            DropReason::TopicEmpty => "topic_empty",
            DropReason::HeaderlessRejected => "headerless_rejected",
            DropReason::InvalidStamp => "invalid_stamp",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-member values of a set, inline up to three topics: a set is kept for every callback,
/// and three heap vectors each made sets cost ~180 bytes (now 112, no allocation).
pub type PerMember<T> = smallvec::SmallVec<[T; 3]>;

/// One emitted callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmittedSet {
    /// Per-topic index of each member, in topic order.
    pub members: PerMember<usize>,
    /// Index into the input slice of each member, in topic order.
    pub member_arrivals: PerMember<usize>,
    /// Time the synchronizer used for each member (header stamp, or arrival time for
    /// sync_arrival_time / header-less approx-py), in topic order.
    pub stamps_ns: PerMember<i64>,
    /// Index into the input slice of the `add()` that emitted the set.
    pub emit_after_arrival: usize,
    /// Arrival (log) time in nanoseconds of that `add()`: when the callback fired.
    pub emit_arrival_ns: i64,
}

impl EmittedSet {
    /// The oldest member time (see [`EmittedSet::stamps_ns`]); 0 for a set without members.
    pub fn min_stamp_ns(&self) -> i64 {
        self.stamps_ns.iter().copied().min().unwrap_or(0)
    }
    /// The newest member time (see [`EmittedSet::stamps_ns`]); 0 for a set without members.
    pub fn max_stamp_ns(&self) -> i64 {
        self.stamps_ns.iter().copied().max().unwrap_or(0)
    }
}

/// A message that was never part of an emitted set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedMessage {
    /// Topic index.
    pub topic: usize,
    /// Per-topic index.
    pub index: usize,
    /// Index into the input slice.
    pub arrival_index: usize,
    /// Header stamp in nanoseconds; `None` for a header-less message.
    pub stamp_ns: Option<i64>,
    /// Why it never joined a set.
    pub reason: DropReason,
    /// `skew_exceeded`: the spread of the tightest set the message could have joined with
    /// what the synchronizer held when it was dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_ns: Option<i64>,
    /// `never_matched` / `queue_evicted`: a topic (index) that held no candidate partner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_topic: Option<usize>,
}

/// Per-topic queue occupancy, sampled after every `add()`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueOccupancy {
    /// Topic index.
    pub topic: usize,
    /// Most messages of the topic held at once.
    pub max: usize,
    /// Messages of the topic held, averaged over every `add()`.
    pub mean: f64,
}

/// Result of [`emulate`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncOutcome {
    /// The policy emulated.
    pub policy: Policy,
    /// Topics synchronized.
    pub n_topics: usize,
    /// Arrivals per topic, in topic order.
    pub messages_per_topic: Vec<usize>,
    /// In emit (callback) order.
    pub sets: SetList,
    /// Sorted by (topic, index).
    pub drops: DropList,
    /// One entry per topic, in topic order.
    pub occupancy: Vec<QueueOccupancy>,
}

/// Why an emulation or recommendation was not run.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncError {
    /// The topic count is outside 2..=[`MAX_TOPICS`].
    TopicCount(usize),
    /// An arrival names a topic index the configuration does not have.
    TopicOutOfRange {
        /// Index of the arrival in the input slice.
        arrival_index: usize,
        /// The topic index it names.
        topic: usize,
        /// Topics configured.
        n_topics: usize,
    },
    /// A per-topic parameter has a value count other than the topic count.
    ParamLength {
        /// The parameter (`SyncConfig` field name).
        name: &'static str,
        /// Values needed: one per topic.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A parameter upstream would reject or never return from; the text says which and why.
    InvalidParam(String),
    /// A policy name that is neither a CLI nor a golden-vector name.
    UnknownPolicy(String),
    /// A duration that [`parse_duration_ns`] cannot read.
    InvalidDuration(String),
    /// `recommend`: the input cannot support a recommendation (too few messages, frozen
    /// stamps, stamps on different clocks, ...): the reason, in place of numbers.
    NoRecommendation(Box<NoRecommendation>),
    /// The input reaches undefined behaviour upstream (LatestTime: a topic's second message
    /// before as many topics as its index have sent a first one reads past its rate vector).
    /// No output can be claimed from there on.
    UndefinedUpstream {
        /// The policy emulated.
        policy: Policy,
        /// Index in the input slice of the arrival that reaches it.
        arrival_index: usize,
        /// The offending message's topic index.
        topic: usize,
        /// Per-topic index of the message.
        index: usize,
        /// What upstream would do there.
        message: String,
    },
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::TopicCount(n) => {
                write!(f, "synchronizers take 2 to {MAX_TOPICS} topics, got {n}")
            }
            SyncError::TopicOutOfRange { arrival_index, topic, n_topics } => write!(
                f,
                "arrival {arrival_index} has topic {topic}, but only {n_topics} topics are configured"
            ),
            SyncError::ParamLength { name, expected, got } => {
                write!(f, "{name} needs one value per topic ({expected}), got {got}")
            }
            SyncError::InvalidParam(s) => write!(f, "invalid parameter: {s}"),
            SyncError::UnknownPolicy(s) => write!(
                f,
                "unknown policy '{s}' (expected exact, approx, exact-py, exact-py-legacy, approx-py, approx-epsilon, latest)"
            ),
            SyncError::InvalidDuration(s) => write!(f, "invalid duration '{s}'"),
            SyncError::NoRecommendation(r) => write!(f, "cannot recommend: {}", r.message),
            SyncError::UndefinedUpstream { policy, message, .. } => {
                write!(f, "{policy}: {message}")
            }
        }
    }
}

impl std::error::Error for SyncError {}

/// Run one synchronizer over `arrivals` (in `add()` order) and report every emitted set and
/// the fate of every other message.
///
/// Drop-reason rules (the first that applies wins; docs/sync.md has the user's view):
/// 1. `headerless_rejected` / `invalid_stamp`: refused before entering the policy.
/// 2. `topic_empty`: some topic has no arrivals at all.
/// 3. `clock_epoch_changed`: removed, with a stamp at least [`EPOCH_JUMP_NS`] behind an earlier
///    stamp of its topic (not for `latest`, which never reads stamps).
/// 4. `duplicate_member`: overwritten by a later message of its topic with the same key, or
///    its key repeats one used in an emitted set of its topic.
/// 5. `out_of_order`: discarded by C++ approx / approx-epsilon, or purged by an exact policy,
///    with a stamp below an earlier stamp of its topic (those paths depend on arrival order).
/// 6. `skew_exceeded` (with `span_ns`): approx-py, approx and approx-epsilon judge a dropped
///    message by its candidate partners, the messages of each other topic held at some moment
///    while it was and used by no set: when every topic had one and the tightest set with it
///    spans more than the policy accepts (approx-py: >= slop; approx-epsilon: > epsilon;
///    approx: > max_interval), whatever removed it; also the matching logic's own discards
///    (C++ approx: front spread > max_interval, search messages cleared for a strictly better
///    candidate; approx-epsilon: fronts within epsilon of the oldest of a failed front set)
///    unless some topic had no candidate (then `never_matched` naming it); and an exact
///    policy's purge of stamps older than a published set.
/// 7. `queue_evicted` (with `missing_topic` when a topic had no candidate): removed by a queue
///    bound (C++ approx overflow or a front discarded after its topic overflowed; exact tuple
///    count; Python smallest key, self-eviction included; approx-epsilon trim while a topic is
///    empty); `latest`: replaced by a newer message of its topic before any set used it.
/// 8. `never_matched` (with `missing_topic` when a topic had no candidate): still held at the
///    end of the input.
pub fn emulate(cfg: &SyncConfig, arrivals: &[Arrival]) -> Result<SyncOutcome, SyncError> {
    check_input(cfg, arrivals)?;
    let mut tr = track::Tracker::new(cfg, arrivals);
    run_policy(cfg, &mut tr);
    tr.finish(cfg)
}

/// The number of sets [`emulate`] emits (`emulate(cfg, arrivals)?.sets.len()`), without
/// recording the sets, the drops or the queue occupancy: what a parameter sweep needs, at a
/// fraction of the time and no per-message memory.
pub fn count_sets(cfg: &SyncConfig, arrivals: &[Arrival]) -> Result<usize, SyncError> {
    check_input(cfg, arrivals)?;
    let mut tr = track::Tracker::counting(cfg, arrivals);
    run_policy(cfg, &mut tr);
    tr.counted()
}

fn check_input(cfg: &SyncConfig, arrivals: &[Arrival]) -> Result<(), SyncError> {
    cfg.validate()?;
    // Sets keep arrival indices in 32 bits.
    if arrivals.len() > u32::MAX as usize {
        return Err(SyncError::InvalidParam(format!(
            "{} messages: at most {} can be emulated at once",
            arrivals.len(),
            u32::MAX
        )));
    }
    for (i, a) in arrivals.iter().enumerate() {
        if a.topic >= cfg.n_topics {
            return Err(SyncError::TopicOutOfRange {
                arrival_index: i,
                topic: a.topic,
                n_topics: cfg.n_topics,
            });
        }
    }
    Ok(())
}

fn run_policy(cfg: &SyncConfig, tr: &mut track::Tracker) {
    match cfg.policy {
        Policy::Approx => tr.run(&mut cpp_approx::CppApprox::new(cfg)),
        Policy::Exact => tr.run(&mut cpp_exact::CppExact::new(cfg)),
        Policy::ExactPy | Policy::ExactPyLegacy => tr.run(&mut py_exact::PyExact::new(
            cfg,
            cfg.policy == Policy::ExactPyLegacy,
        )),
        Policy::ApproxPy => tr.run(&mut py_approx::PyApprox::new(cfg)),
        Policy::ApproxEpsilon => tr.run(&mut cpp_epsilon::CppEpsilon::new(cfg)),
        Policy::Latest => tr.run(&mut cpp_latest::CppLatest::new(cfg)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_is_24_bytes_and_keeps_its_stamp() {
        // The bounded-memory budget of `sync` counts on this size.
        assert_eq!(std::mem::size_of::<Arrival>(), 24);
        for s in [None, Some(0), Some(-1), Some(i64::MIN + 1), Some(i64::MAX)] {
            assert_eq!(Arrival::new(3, s, 7).stamp_ns(), s);
        }
        // The sentinel's own value stays a (negative, invalid) stamp.
        assert_eq!(
            Arrival::new(3, Some(i64::MIN), 7).stamp_ns(),
            Some(i64::MIN + 1)
        );
        let json = serde_json::to_string(&Arrival::new(1, None, 5)).unwrap();
        assert_eq!(json, r#"{"topic":1,"stamp_ns":null,"arrival_ns":5}"#);
        let json = serde_json::to_string(&Arrival::new(0, Some(-2), 5)).unwrap();
        assert_eq!(json, r#"{"topic":0,"stamp_ns":-2,"arrival_ns":5}"#);
    }
}
