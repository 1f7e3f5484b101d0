//! `bagscope tf`: what a `tf2_ros::MessageFilter` would have done live, from the bag's TF topics.
//! Also the TF reading shared with `bagscope sync --tf-target`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};
use bagscope_msg::types::tf_frames;
use bagscope_msg::StampSource;
use bagscope_tf::{
    analyze_tree, is_static_topic, run_filter, DataMessage, Event, FilterConfig, Frame, Readiness,
    TfMessage, TfTransform, TopicReadiness, TreeReport,
};

use crate::params::Duration;
use crate::series::{locators, topic_schemas};
use crate::Error;

/// The TF topics read when none are given: dynamic `/tf` and latched `/tf_static`.
pub const DEFAULT_TF_TOPICS: [&str; 2] = ["/tf", "/tf_static"];

/// The `tf2_ros::MessageFilter` `tf` emulates and which topics it is fed (`Default`: queue
/// 10, a 10 s buffer, `/tf` and `/tf_static`). The fields are the parameters' names (Python's
/// keywords, the CLI's flags).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct TfOptions {
    /// Frame every message must be transformable into (tf2_ros::MessageFilter target frame;
    /// a leading `/` is ignored).
    #[cfg_attr(feature = "clap", arg(long))]
    pub target_frame: String,
    /// Topics whose messages go through the filter (each has its own filter and queue); a
    /// topic without a std_msgs/Header is warned about.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_delimiter = ',', num_args = 1.., required = true)
    )]
    pub topics: Vec<String>,
    /// MessageFilter queue size (waiting messages per topic; 0 = unbounded).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TfOptions::default().queue))]
    pub queue: usize,
    /// tf2 buffer cache length ('10', '10s', '500ms'; positive).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TfOptions::default().buffer))]
    pub buffer: Duration,
    /// TF topics; a name ending in `tf_static` is latched static TF.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_delimiter = ',', num_args = 1.., default_values_t = TfOptions::default().tf_topics)
    )]
    pub tf_topics: Vec<String>,
    /// Write one JSON line per message with its readiness, wait and reason; `-` (CLI): to
    /// standard output (the report then goes to standard error).
    #[cfg_attr(feature = "clap", arg(long))]
    pub evidence: Option<PathBuf>,
}

impl Default for TfOptions {
    fn default() -> Self {
        TfOptions {
            target_frame: String::new(),
            topics: Vec::new(),
            queue: 10,
            buffer: Duration::from_ns(bagscope_tf::DEFAULT_CACHE_NS),
            tf_topics: DEFAULT_TF_TOPICS.map(String::from).to_vec(),
            evidence: None,
        }
    }
}

/// One TF topic as read.
#[derive(Debug, Clone, Serialize)]
pub struct TfTopicUsed {
    /// The topic name, as given.
    pub topic: String,
    /// Read as latched static TF (the name ends in `tf_static`).
    pub is_static: bool,
    /// Whether the bag has the topic (a missing one is read as empty and warned about).
    pub present: bool,
    /// TF messages read from it (undecodable ones are left out and warned about).
    pub messages: usize,
}

/// `bagscope tf`: what `tf2_ros::MessageFilter` would have done with each message (the CLI's
/// `tf --json`).
#[derive(Debug, Clone, Serialize)]
pub struct TfCommandReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// The filter's target frame, as given.
    pub target_frame: String,
    /// The filter's queue size (0 = unbounded).
    pub queue_size: usize,
    /// The tf2 buffer's cache length.
    pub cache_ns: i64,
    /// The TF topics read, in the order given.
    pub tf_topics: Vec<TfTopicUsed>,
    /// Per data topic: messages ready on arrival, ready after a wait (with the waits), or
    /// dropped (by reason).
    pub topics: Vec<TopicReadiness>,
    /// Most messages waiting at once in one topic's queue.
    pub max_waiting: usize,
    /// TF samples the buffer took, and those tf2 would refuse (old, repeated, invalid).
    pub tf_inserts: bagscope_tf::buffer::InsertStats,
    /// The TF tree: frames, edges with their rates and gaps, and tree findings (several
    /// parents, competing publishers, an edge both static and dynamic).
    pub tree: TreeReport,
    /// Bag damage, missing TF topics, undecodable TF or data messages (data loss), header-less
    /// data topics, no TF at all, tree findings; sorted.
    pub warnings: Vec<Warning>,
}

impl TfCommandReport {}

/// What one scanned message turned into.
enum Item {
    Tf(Result<Vec<TfTransform>, ()>),
    Data(Result<(i64, Frame), ()>),
}

pub(crate) use bagscope_tf::{shared_frame, FrameIds};

/// TF messages of `tf_topics` (absent topics reported, not an error) and, for each of `data`,
/// its messages with their stamp and frame id; all in log-time order.
pub(crate) struct TfRead {
    pub tf_used: Vec<TfTopicUsed>,
    /// (log time, data topic slot, stamp, frame) or TF messages, in bag order.
    pub events: Vec<Event>,
    pub warnings: Vec<Warning>,
}

pub(crate) fn read_tf(bag: &Bag, tf_topics: &[String], data: &[String]) -> Result<TfRead, Error> {
    let data_idx: Vec<usize> = data
        .iter()
        .map(|n| bag.topic_index(n))
        .collect::<Result<_, _>>()?;
    let mut warnings = bag.open_warnings();
    // slot[i] = (is_tf, index into tf_topics or data)
    let mut slot: Vec<Option<(bool, usize)>> = vec![None; bag.topics.len()];
    let mut tf_used = Vec::new();
    for (k, name) in tf_topics.iter().enumerate() {
        let present = bag.topic_index(name).ok();
        if let Some(i) = present {
            if slot[i].is_some() {
                return Err(Error::invalid(
                    "topics",
                    format!("topic {name} given twice"),
                ));
            }
            slot[i] = Some((true, k));
            if bag.topics[i].type_name != "tf2_msgs/msg/TFMessage" {
                return Err(Error::invalid(
                    "tf_topics",
                    format!(
                        "{name} is a {}, not tf2_msgs/msg/TFMessage",
                        bag.topics[i].type_name
                    ),
                ));
            }
        } else {
            warnings.push(
                Warning::new(
                    WarningCode::TfTopicMissing,
                    "TF topic not in the bag: treated as empty",
                )
                .topic(name),
            );
        }
        tf_used.push(TfTopicUsed {
            topic: name.clone(),
            is_static: is_static_topic(name),
            present: present.is_some(),
            messages: 0,
        });
    }
    for (k, &i) in data_idx.iter().enumerate() {
        if slot[i].is_some() {
            return Err(Error::invalid(
                "topics",
                format!("topic {} given twice", bag.topics[i].name),
            ));
        }
        slot[i] = Some((false, k));
    }
    let wanted: Vec<bool> = slot.iter().map(Option::is_some).collect();
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let scan = bag.scan(&wanted, |m| match slot[m.topic] {
        Some((true, _)) => Item::Tf(
            tf_frames(m.data)
                .map(|t| {
                    t.into_iter()
                        .map(|x| TfTransform {
                            parent: shared_frame(x.parent),
                            child: shared_frame(x.child),
                            stamp_ns: x.stamp_ns,
                        })
                        .collect()
                })
                .map_err(|_| ()),
        ),
        _ => {
            let loc = &locs[m.topic];
            let stamp = loc.read_stamp_ns(m.data).ok().flatten();
            let frame = loc.read_frame_id(m.data).ok().flatten();
            // A readable stamp keeps the message (and the per-topic indices aligned with the
            // sync scan); an unreadable frame id becomes "" (the filter drops it).
            Item::Data(
                stamp
                    .map(|s| (s, shared_frame(frame.as_deref().unwrap_or_default())))
                    .ok_or(()),
            )
        }
    });
    warnings.extend(scan.warnings);
    let mut bad = vec![0usize; bag.topics.len()];
    let mut events = Vec::with_capacity(scan.items.len());
    for it in scan.items {
        let Some((_, k)) = slot[it.topic] else {
            continue;
        };
        match it.value {
            Item::Tf(Ok(transforms)) => {
                tf_used[k].messages += 1;
                events.push(Event::Tf(TfMessage {
                    log_time_ns: it.log_time_ns,
                    source: k,
                    is_static: tf_used[k].is_static,
                    transforms,
                }));
            }
            Item::Data(Ok((stamp_ns, frame_id))) => events.push(Event::Data(DataMessage {
                topic: k,
                frame_id,
                stamp_ns,
                log_time_ns: it.log_time_ns,
            })),
            _ => bad[it.topic] += 1,
        }
    }
    for (i, &n) in bad.iter().enumerate() {
        if n > 0 {
            warnings.push(undecodable_tf(&bag.topics[i].name, n));
        }
    }
    for &i in &data_idx {
        if locs[i].source() != StampSource::HeaderStamp {
            warnings.push(
                Warning::new(
                    WarningCode::Headerless,
                    "topic has no std_msgs/Header: tf2_ros::MessageFilter cannot take it",
                )
                .topic(&bag.topics[i].name),
            );
        }
    }
    Ok(TfRead {
        tf_used,
        events,
        warnings,
    })
}

/// `bagscope tf` of the bag at `path`. Errors on no data topic, an empty target frame, a cache
/// length not positive, a topic missing or given twice, or a TF topic of another type.
pub fn tf(path: &Path, o: &TfOptions) -> Result<TfCommandReport, Error> {
    validate_tf(o)?;
    tf_of(&Bag::open(path)?, o)
}

fn validate_tf(o: &TfOptions) -> Result<(), Error> {
    if o.topics.is_empty() {
        return Err(Error::invalid("topics", "needs at least one topic"));
    }
    if o.target_frame.trim_start_matches('/').is_empty() {
        return Err(Error::invalid("target_frame", "must not be empty"));
    }
    if o.buffer.ns() <= 0 {
        return Err(Error::invalid("buffer", "must be positive"));
    }
    Ok(())
}

/// [`tf`] of an open bag.
pub fn tf_of(bag: &Bag, o: &TfOptions) -> Result<TfCommandReport, Error> {
    validate_tf(o)?;
    let path = bag.path.as_path();
    // Before any work: the evidence file must not replace the bag it is about.
    if let Some(p) = &o.evidence {
        crate::refuse_outputs(bag, &[p.as_path()])?;
    }
    let read = read_tf(bag, &o.tf_topics, &o.topics)?;
    let mut warnings = read.warnings;
    let cfg = FilterConfig {
        target_frame: o.target_frame.clone(),
        queue_size: o.queue,
        cache_ns: o.buffer.ns(),
    };
    let r = run_filter(&cfg, &o.topics, &read.events);
    // The TF messages in place (a copy of them all doubled the command's memory).
    let tf_msgs = || {
        read.events.iter().filter_map(|e| match e {
            Event::Tf(m) => Some(m),
            Event::Data(_) => None,
        })
    };
    let tree = analyze_tree(&o.tf_topics, tf_msgs);
    if let Some(p) = &o.evidence {
        write_evidence(p, &o.topics, &r.decisions)?;
    }
    if tf_msgs().next().is_none() {
        warnings.push(Warning::new(
            WarningCode::NoTf,
            "no TF messages on the given TF topics: every lookup fails (see --tf-topics)",
        ));
    }
    for f in &tree.findings {
        warnings.push(Warning::new(f.code, f.message.clone()));
    }
    // TF edges whose stamps went back (a simulator reset), as `clocks` reports them.
    warnings.extend(bagscope_tf::jump_warnings(&tree.edges));
    warnings.extend(
        tree.untimed_edges
            .as_ref()
            .map(bagscope_tf::untimed_edges_warning),
    );
    warnings.sort();
    warnings.dedup();
    Ok(TfCommandReport {
        bag: path.display().to_string(),
        target_frame: o.target_frame.clone(),
        queue_size: o.queue,
        cache_ns: o.buffer.ns(),
        tf_topics: read.tf_used,
        topics: r.topics,
        max_waiting: r.max_waiting,
        tf_inserts: r.tf_inserts,
        tree,
        warnings,
    })
}

fn write_evidence(
    path: &Path,
    names: &[String],
    d: &[bagscope_tf::MessageDecision],
) -> Result<(), Error> {
    use std::io::Write;
    let io = |e: std::io::Error| {
        Error::write_failed(
            path,
            format!("cannot write evidence file {}", path.display()),
            e,
        )
    };
    let f = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(f);
    for x in d {
        let line = serde_json::json!({
            "topic": names.get(x.topic),
            "index": x.index,
            "frame_id": x.frame_id,
            "stamp_ns": x.stamp_ns,
            "log_time_ns": x.log_time_ns,
            "readiness": x.readiness,
            "decided_log_time_ns": x.decided_log_time_ns,
            "wait_ns": x.wait_ns,
            "reason": x.reason,
        });
        writeln!(w, "{line}").map_err(io)?;
    }
    w.flush().map_err(io)
}

/// For `sync --tf-target`: per sync topic, the frame id of each message in per-topic order,
/// and the TF messages (log-time order).
pub(crate) struct SyncTf {
    pub frames: Vec<Vec<Frame>>,
    pub tf: Vec<TfMessage>,
    pub warnings: Vec<Warning>,
}

pub(crate) fn sync_tf(bag: &Bag, tf_topics: &[String], topics: &[String]) -> Result<SyncTf, Error> {
    let read = read_tf(bag, tf_topics, topics)?;
    let mut frames = vec![Vec::new(); topics.len()];
    let mut tf = Vec::new();
    for e in read.events {
        match e {
            Event::Tf(m) => tf.push(m),
            Event::Data(d) => {
                if let Some(f) = frames.get_mut(d.topic) {
                    f.push(d.frame_id);
                }
            }
        }
    }
    // Only open/scan warnings matter here; the sync scan reports the same bag problems.
    let warnings = read
        .warnings
        .into_iter()
        .filter(|w| w.code == "tf_topic_missing" || w.code == "undecodable")
        .collect();
    Ok(SyncTf {
        frames,
        tf,
        warnings,
    })
}

/// The JSON name of a readiness (`ready_on_arrival`, `ready_after_wait`, `dropped`), for text
/// output.
pub fn readiness_name(r: Readiness) -> &'static str {
    match r {
        Readiness::ReadyOnArrival => "ready_on_arrival",
        Readiness::ReadyAfterWait => "ready_after_wait",
        Readiness::Dropped => "dropped",
    }
}

/// The bag's TF topics: every topic of type `tf2_msgs/msg/TFMessage` (`/tf`, `/tf_static`,
/// namespaced ones), sorted by name.
pub fn tf_topic_names(bag: &Bag) -> Vec<String> {
    let mut v: Vec<String> = bag
        .topics
        .iter()
        .filter(|t| t.type_name == "tf2_msgs/msg/TFMessage")
        .map(|t| t.name.clone())
        .collect();
    v.sort();
    v
}

pub use bagscope_tf::{TfEdgeTiming, TfTiming};

/// [`TfTiming`] of the bag's TF topics; None when it has none. With `map` (the `/clock` fit of
/// a recorder on wall time), sim-stamped transforms' lags are taken on the wall clock: log time
/// − the log time at which `/clock` read the stamp, as `clocks` does for other topics. Backward
/// jumps by `clocks`' default rule ([`tf_timing_with`] for another).
pub fn tf_timing_of(
    bag: &Bag,
    map: Option<&bagscope_clocks::ClockMap>,
) -> Result<Option<TfTiming>, Error> {
    tf_timing_with(bag, map, &bagscope_clocks::JumpRule::default())
}

/// [`tf_timing_of`] with the backward-jump rule `jump` (`ClocksOptions::jump_rule`).
pub fn tf_timing_with(
    bag: &Bag,
    map: Option<&bagscope_clocks::ClockMap>,
    jump: &bagscope_clocks::JumpRule,
) -> Result<Option<TfTiming>, Error> {
    let topics = tf_topic_names(bag);
    if topics.is_empty() {
        return Ok(None);
    }
    let read = read_tf(bag, &topics, &[])?;
    let msgs = || {
        read.events.iter().filter_map(|e| match e {
            Event::Tf(m) => Some(m),
            Event::Data(_) => None,
        })
    };
    // The open and scan warnings are the caller's own scan's; only the TF decoding is new.
    let warnings = read
        .warnings
        .iter()
        .filter(|w| w.code == WarningCode::Undecodable)
        .cloned()
        .collect();
    Ok(Some(bagscope_tf::edge_timing(
        topics,
        msgs(),
        map,
        jump,
        warnings,
    )))
}

/// The warning for TF messages of `topic` that did not decode (left out).
fn undecodable_tf(topic: &str, n: usize) -> Warning {
    Warning::new(
        WarningCode::Undecodable,
        format!("{n} message(s) whose TF payload or header (stamp, frame_id) could not be read were left out"),
    )
    .topic(topic)
    .loss()
}

/// A TF message that did not decode, in the scan's column.
const UNDECODED_TF: i64 = -1;
/// Bits of a collected message's column value that hold its transform count.
const COUNT_BITS: u32 = 23;
/// Bits that hold where its transforms start in its shard's list.
const START_BITS: u32 = 32;
/// Bits that hold its shard (the rest of the 63 bits of a non-negative value).
const SHARD_BITS: u32 = 63 - COUNT_BITS - START_BITS;

/// Reads the TF topics' messages during another column scan (`clocks`' stamp scan) for
/// [`tf_timing_of`]'s timing, so that they are not read a second time: each TF message's
/// column value (which the stamp scan leaves unused: TF topics have no top-level stamp) is where
/// its transforms lie, 16 bytes a transform (frame ids interned). Each scanning thread keeps
/// its own list and frame ids (a shard), so that threads never wait for one another.
pub(crate) struct TfCollector {
    /// Per bag topic: its place in `topics` when it is a TF topic collected here.
    slot: Vec<Option<usize>>,
    topics: Vec<String>,
    shards: Vec<std::sync::Mutex<ShardStore>>,
}

#[derive(Default)]
struct ShardStore {
    frames: FrameIds,
    /// (parent, child, stamp) of every transform, each message's together.
    transforms: Vec<(u32, u32, i64)>,
    /// A message or a bag too large for the column value's encoding: nothing collected is used.
    overflow: bool,
    /// The layouts of the last messages read the slow way, most recently used first, with
    /// their transforms' frame ids: a message that matches one is read by its stamps alone.
    layouts: Vec<(bagscope_msg::types::TfLayout, Vec<(u32, u32)>)>,
}

/// Layouts a shard keeps (TF publishers on one topic, each with its own frames).
const LAYOUTS: usize = 4;

/// The TF messages a [`TfCollector`] read, in log-time order, and the warning for those that
/// did not decode.
pub(crate) struct TfCollected {
    tf: bagscope_tf::TfById,
    warnings: Vec<Warning>,
}

impl TfCollector {
    /// A collector for the bag's TF topics among `wanted`; None when there are none, or when a
    /// TF topic is one [`tf_timing_of`] would not read as the scan does (its column is in use:
    /// a stamp was found in its definition; its name is another topic's too): the timing then
    /// reads them itself.
    pub(crate) fn new(
        bag: &Bag,
        locs: &[bagscope_msg::StampLocator],
        wanted: &[bool],
    ) -> Option<TfCollector> {
        let topics = tf_topic_names(bag);
        if topics.is_empty() {
            return None;
        }
        let mut slot = vec![None; bag.topics.len()];
        for (k, name) in topics.iter().enumerate() {
            let i = bag.topic_index(name).ok()?;
            let ok = bag.topics[i].type_name == "tf2_msgs/msg/TFMessage"
                && locs.get(i)?.source() == StampSource::None
                && wanted.get(i).copied().unwrap_or(false)
                && slot[i].is_none();
            if !ok {
                return None;
            }
            slot[i] = Some(k);
        }
        // One shard per thread of the pool (and one for any other thread), at most what the
        // value's shard bits can name.
        let n = (rayon::current_num_threads() + 1).min(1 << SHARD_BITS);
        Some(TfCollector {
            slot,
            topics,
            shards: (0..n).map(|_| Default::default()).collect(),
        })
    }

    /// The column value of message `m` when it is on a collected TF topic (its transforms are
    /// kept), else None.
    #[inline]
    pub(crate) fn read(&self, m: &bagscope_bag::RawMessage<'_>) -> Option<i64> {
        use bagscope_msg::types::{tf_frames_raw, TfLayout};
        self.slot.get(m.topic).copied().flatten()?;
        // This thread's shard: no other thread of the pool locks it (a thread of another pool
        // may share it, which the lock makes safe).
        let last = self.shards.len() - 1;
        let shard = rayon::current_thread_index().map_or(last, |i| i % last.max(1));
        let mut guard = self.shards[shard].lock().unwrap_or_else(|p| p.into_inner());
        let s = &mut *guard;
        let start = s.transforms.len();
        let n = match s.layouts.iter().position(|(l, _)| l.matches(m.data)) {
            Some(i) => {
                s.layouts[..=i].rotate_right(1);
                let (layout, ids) = &s.layouts[0];
                s.transforms.extend(
                    ids.iter()
                        .zip(layout.stamps(m.data))
                        .map(|(&(p, c), stamp)| (p, c, stamp)),
                );
                ids.len()
            }
            None => {
                // Read straight into the shard's list; names checked as `tf_frames` checks
                // them.
                let mut text = true;
                let read = tf_frames_raw(m.data, |k, stamp, parent, child| {
                    let frames = &mut s.frames;
                    let p = frames.id_at(2 * k, parent.bytes, || parent.utf8().ok());
                    let c = frames.id_at(2 * k + 1, child.bytes, || child.utf8().ok());
                    match (p, c) {
                        (Some(p), Some(c)) => s.transforms.push((p, c, stamp)),
                        _ => text = false,
                    }
                });
                match read {
                    Ok(n) if text => {
                        if let Some(l) = TfLayout::learn(m.data) {
                            let ids = s.transforms[start..].iter().map(|t| (t.0, t.1)).collect();
                            s.layouts.insert(0, (l, ids));
                            s.layouts.truncate(LAYOUTS);
                        }
                        n
                    }
                    _ => {
                        s.transforms.truncate(start);
                        return Some(UNDECODED_TF);
                    }
                }
            }
        };
        if n >= 1 << COUNT_BITS || start >= 1 << START_BITS {
            s.overflow = true;
            return Some(0);
        }
        Some(
            ((shard as i64) << (COUNT_BITS + START_BITS))
                | ((start as i64) << COUNT_BITS)
                | n as i64,
        )
    }

    /// Takes the collected messages out of column `col` of the scan's columns (setting it back
    /// to what the stamp scan writes for a topic without a stamp). None when they cannot stand
    /// for a scan of the TF topics alone: two TF topics with messages at the same log time
    /// (a scan of them orders those by file position, which columns do not keep), or too much
    /// for the encoding.
    pub(crate) fn finish<const K: usize>(
        self,
        bag: &Bag,
        cols: &mut [bagscope_bag::Columns<K>],
        col: usize,
    ) -> Option<TfCollected> {
        let mut msgs = Vec::new();
        let mut warnings = Vec::new();
        for (i, k) in self.slot.iter().enumerate() {
            let Some(k) = *k else { continue };
            let c = &mut cols[i];
            let mut bad = 0;
            for (log, v) in c.log_time_ns.iter().zip(c.values[col].iter_mut()) {
                let code = std::mem::replace(v, crate::series::NO_STAMP_READ);
                if code == UNDECODED_TF {
                    bad += 1;
                } else {
                    msgs.push((*log, k, code));
                }
            }
            if bad > 0 {
                warnings.push(undecodable_tf(&bag.topics[i].name, bad));
            }
        }
        // The shards' lists as one, their frame ids as one set.
        let shards: Vec<ShardStore> = self
            .shards
            .into_iter()
            .map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect();
        if shards.iter().any(|s| s.overflow) {
            return None;
        }
        let mut frames = FrameIds::default();
        let mut transforms = Vec::with_capacity(shards.iter().map(|s| s.transforms.len()).sum());
        let mut offsets = Vec::with_capacity(shards.len());
        for s in &shards {
            let ids: Vec<u32> = s.frames.frames().iter().map(|f| frames.id(f)).collect();
            offsets.push(transforms.len());
            transforms.extend(
                s.transforms
                    .iter()
                    .map(|&(p, c, stamp)| (ids[p as usize], ids[c as usize], stamp)),
            );
        }
        drop(shards);
        // Each topic's messages are in log-time order; merged stably, in topic order at equal
        // log times, which is only the scan's order when no two topics share one.
        if self.slot.iter().flatten().count() > 1 {
            msgs.sort_by_key(|m| m.0);
            if msgs
                .windows(2)
                .any(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1)
            {
                return None;
            }
        }
        let is_static: Vec<bool> = self.topics.iter().map(|t| is_static_topic(t)).collect();
        let mask = |bits: u32| (1i64 << bits) - 1;
        let msgs = msgs
            .into_iter()
            .map(|(log_time_ns, topic, code)| {
                let shard = (code >> (COUNT_BITS + START_BITS)) as usize;
                bagscope_tf::TfMsgById {
                    log_time_ns,
                    topic,
                    is_static: is_static[topic],
                    start: offsets[shard] + ((code >> COUNT_BITS) & mask(START_BITS)) as usize,
                    len: (code & mask(COUNT_BITS)) as usize,
                }
            })
            .collect();
        Some(TfCollected {
            tf: bagscope_tf::TfById {
                topics: self.topics,
                frames: frames.into_frames(),
                transforms,
                msgs,
            },
            warnings,
        })
    }
}

impl TfCollected {
    /// The TF tree of the collected messages: what needs no `/clock` map (it can be built
    /// while the clock analysis runs).
    pub(crate) fn tree(&self, jump: &bagscope_clocks::JumpRule) -> bagscope_tf::TreeReport {
        self.tf.tree(jump)
    }

    /// [`tf_timing_of`] of the collected messages from their [`TfCollected::tree`].
    pub(crate) fn timing_of_tree(
        self,
        tree: bagscope_tf::TreeReport,
        map: Option<&bagscope_clocks::ClockMap>,
    ) -> TfTiming {
        self.tf.timing_of_tree(tree, map, self.warnings)
    }

    /// [`tf_timing_of`] of the collected messages.
    pub(crate) fn timing(
        self,
        map: Option<&bagscope_clocks::ClockMap>,
        jump: &bagscope_clocks::JumpRule,
    ) -> TfTiming {
        self.tf.timing(map, jump, self.warnings)
    }
}
