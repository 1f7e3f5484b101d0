//! What `tf2_ros::MessageFilter` would have done live, replayed from a bag's TF messages.
//!
//! Pure library: the caller decodes `/tf` and `/tf_static` (`tf2_msgs/TFMessage`) into
//! [`TfMessage`]s and the data topics into [`DataMessage`]s, interleaved in log-time order as
//! [`Event`]s. Three analyses, and the per-edge timing built on the tree:
//!
//! * [`TfBuffer`]: a `tf2::BufferCore` model (per-child time caches with the cache length, static
//!   caches valid for all time, interpolation only between samples, extrapolation refused).
//! * [`tree::analyze_tree`]: per edge rate, gaps and backward jumps (`bagscope-clocks`' rule for
//!   header-stamped topics, applied to each edge's stamps); several parents for one child;
//!   competing publishers.
//! * [`filter::run_filter`]: per message readiness (on arrival, after waiting, dropped and why).
//! * [`timing`]: the edge timing `clocks`, `check` and `report` show ([`TfTiming`]: the tree's
//!   edges with lags on the recorder's clock, sim stamps mapped through `/clock`), from TF
//!   messages with frames named by ids ([`TfById`], keyed by [`FrameIds`]) or by name.
//!
//! No I/O, no panics on any input, deterministic sorted output. Time is `i64` nanoseconds.
//!
//! # In the workspace
//!
//! Tf2 buffer model (per-edge sample ranges, cache length, static edges), `tf2_ros::MessageFilter`
//! readiness per message, edge rates/gaps/lags, backward jumps per edge and TF topic (`bagscope-
//! clocks`' rule; `jump_warnings`: one `clock_jump_back` per TF topic naming its edges) and tree
//! findings, frames keyed by ids (`analyze_tree_by_ids`: a transform costs integer comparisons;
//! `analyze_tree` names its messages' frames by ids first); the per-edge TF timing `clocks` and
//! `report` show (`TfById::tree`, built beside the clock analysis, then
//! `TfById::timing_of_tree`; `edge_timing` for messages by name): the facade's `tf::TfCollector`
//! extracts the TF transforms during `clocks`' stamp scan (per-thread shards, a message whose
//! layout was seen read by its stamps alone), `tf::tf_timing_of` in a scan of its own, and
//! calls it; `FrameIds` keys frame names for that collector and for the timing table's frame
//! columns; the edge table bounded: the 1024 busiest edges timed (found in one pass of 4096
//! Misra–Gries counters when a bag has more), the others counted (`UntimedEdges`); frame ids
//! shared (`Frame = Arc<str>`).
//!
//! Notable dependencies: `bagscope-stats`, `bagscope-clocks` (the jump rule), `rayon` (edges
//! reported on all cores).

#![forbid(unsafe_code)]

pub mod buffer;
pub mod filter;
pub mod timing;
pub mod tree;

pub use buffer::{NotReady, TfBuffer};
pub use filter::{
    availability, run_filter, FilterConfig, FilterReport, MessageDecision, Query, Readiness,
    TopicReadiness,
};
pub use timing::{
    edge_timing, shared_frame, untimed_edges_warning, FrameIds, TfById, TfEdgeTiming, TfMsgById,
    TfTiming,
};
pub use tree::{
    analyze_tree, analyze_tree_by_ids, analyze_tree_with, jump_warnings, EdgeJump, EdgeReport,
    Finding, Gap, TreeReport, UntimedEdges, MAX_TIMED_EDGES,
};

use serde::Serialize;

/// tf2's default buffer cache length (`BufferCore::DEFAULT_CACHE_TIME`, 10 s).
pub const DEFAULT_CACHE_NS: i64 = 10_000_000_000;

/// A frame id. Shared: a bag repeats a few frame names in millions of messages.
pub type Frame = std::sync::Arc<str>;

/// One `geometry_msgs/TransformStamped`, reduced to what timing needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TfTransform {
    /// `header.frame_id`: the parent frame, as written (a leading `/` is stripped on use).
    pub parent: Frame,
    /// `child_frame_id`, as written (a leading `/` is stripped on use).
    pub child: Frame,
    /// `header.stamp` in nanoseconds: the time the transform is valid at (header stamp clock).
    pub stamp_ns: i64,
}

/// One `tf2_msgs/TFMessage` as received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TfMessage {
    /// When the recorder received it, in nanoseconds (the bag's log time).
    pub log_time_ns: i64,
    /// Index into the TF topic list the caller passes alongside.
    pub source: usize,
    /// Received on a latched static topic (`/tf_static`): valid for all time.
    pub is_static: bool,
    /// The message's transforms, in message order (may be empty).
    pub transforms: Vec<TfTransform>,
}

/// One message of an analysed (non-TF) topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataMessage {
    /// Index into the data topic list.
    pub topic: usize,
    /// `header.frame_id`, as written (empty when the message has none).
    pub frame_id: Frame,
    /// `header.stamp` in nanoseconds: the time its transform is looked up at.
    pub stamp_ns: i64,
    /// When the recorder received it, in nanoseconds (the bag's log time).
    pub log_time_ns: i64,
}

/// Input in log-time (arrival) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A message of a TF topic (`/tf` or `/tf_static`).
    Tf(TfMessage),
    /// A message of an analysed data topic.
    Data(DataMessage),
}

/// A TF topic is static when its name ends in `tf_static` (the tf2_ros convention; the listener
/// subscribes to it with transient-local durability).
pub fn is_static_topic(name: &str) -> bool {
    name.trim_end_matches('/').ends_with("tf_static")
}

/// tf2_ros strips one leading slash from frame ids (ROS 1 style names).
pub fn strip_slash(frame: &str) -> &str {
    frame.strip_prefix('/').unwrap_or(frame)
}
