//! `tf2_ros::MessageFilter` emulation: each message passes when the transform from its
//! `header.frame_id` to the target frame can be looked up *at its own stamp*; otherwise it waits
//! in a bounded queue until a TF message makes the lookup possible, or is dropped.
//!
//! Rules, as in tf2_ros (`message_filter.h`) and tf2 (`BufferCore::addTransformableRequest`,
//! `testTransformableRequests`):
//! * empty `frame_id`: dropped at once (`empty_frame_id`); a leading `/` is stripped;
//! * in ROS 2's order (`MessageFilter::add()`, humble to rolling): first the queue-size check,
//!   so if its topic's queue already holds `queue_size` waiting messages the oldest is dropped
//!   (`queue_evicted`; `queue_size` 0 = unbounded), *whatever the new message's own fate*; then
//!   the message is listed and `waitForTransform` asked, whose immediate answer takes it back
//!   off the list: transformable on arrival passes at once (`ready_on_arrival`); "never
//!   transformable" (stamp + cache length < the path's latest common time) is dropped at once
//!   (`extrapolation_into_past`), as later when that becomes true; otherwise it waits. (ROS 1
//!   tested readiness before the queue, so a ready message evicted nothing there.) Each topic
//!   has its own filter and queue, as each subscription gets its own `MessageFilter`;
//! * after every TF message, waiting messages are re-tested in arrival order; those that pass are
//!   `ready_after_wait` with the log time of that TF message;
//! * still waiting at the end of the bag: the lookup's error at the end gives the reason.
//!
//! Static TF (`/tf_static`) is latched, so its transforms are loaded before the replay starts.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bagscope_stats::NsSummary;
use serde::Serialize;

use crate::buffer::{InsertStats, NotReady, TfBuffer};
use crate::{strip_slash, DataMessage, Event, Frame, TfMessage, DEFAULT_CACHE_NS};

/// A `tf2_ros::MessageFilter`'s settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FilterConfig {
    /// The frame every message's `frame_id` must be transformable into (a leading `/` is
    /// stripped).
    pub target_frame: String,
    /// Waiting messages held at most per topic (tf2_ros `queue_size`); 0 = unbounded.
    /// Default 10.
    pub queue_size: usize,
    /// Buffer cache length in nanoseconds: the history each TF edge keeps behind its newest
    /// sample. Default [`DEFAULT_CACHE_NS`] (tf2's 10 s).
    pub cache_ns: i64,
}

impl FilterConfig {
    /// Filter into `target_frame` with tf2_ros's defaults: queue size 10, cache 10 s.
    pub fn new(target_frame: &str) -> FilterConfig {
        FilterConfig {
            target_frame: target_frame.to_string(),
            queue_size: 10,
            cache_ns: DEFAULT_CACHE_NS,
        }
    }
}

/// Whether a message passed the filter, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Readiness {
    /// Transformable when it arrived: passed at once.
    ReadyOnArrival,
    /// Waited in the queue until a TF message made it transformable.
    ReadyAfterWait,
    /// Never passed: dropped (see [`MessageDecision::reason`]), or still waiting at the end.
    Dropped,
}

/// The fate of one data message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageDecision {
    /// Index into the data topic list ([`DataMessage::topic`]).
    pub topic: usize,
    /// Per-topic index (arrival order).
    pub index: usize,
    /// `header.frame_id` as written.
    pub frame_id: Frame,
    /// `header.stamp` in nanoseconds: the time the lookup is made at.
    pub stamp_ns: i64,
    /// Arrival (the bag's log time) in nanoseconds.
    pub log_time_ns: i64,
    /// Passed on arrival, after waiting, or dropped.
    pub readiness: Readiness,
    /// Log time at which it passed or was dropped (`None`: still waiting at the end).
    pub decided_log_time_ns: Option<i64>,
    /// decided − arrival (log times, nanoseconds), for messages that waited and passed; else
    /// `None`.
    pub wait_ns: Option<i64>,
    /// Why a dropped message was dropped (for one still waiting at the end: the lookup's
    /// error then); `None` for messages that passed.
    pub reason: Option<NotReady>,
}

/// One data topic's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicReadiness {
    /// The topic's name.
    pub topic: String,
    /// Its messages in the replay.
    pub messages: usize,
    /// Messages that passed on arrival.
    pub ready_on_arrival: usize,
    /// Messages that passed after waiting.
    pub ready_after_wait: usize,
    /// Messages that never passed (dropped, or still waiting at the end).
    pub dropped: usize,
    /// Waits (log time, nanoseconds) of the messages that passed after waiting; `None` when
    /// none did.
    pub wait_ns: Option<NsSummary>,
    /// reason → count, sorted.
    pub drops: BTreeMap<String, usize>,
    /// Distinct frame ids seen on the topic, sorted.
    pub frames: Vec<String>,
}

/// What the MessageFilter did with every data message of a replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilterReport {
    /// The settings replayed.
    pub config: FilterConfig,
    /// Per data topic, in the order of the topic list given.
    pub topics: Vec<TopicReadiness>,
    /// Most messages waiting at once in one topic's queue.
    pub max_waiting: usize,
    /// What became of the TF transforms inserted into the buffer (static and dynamic).
    pub tf_inserts: InsertStats,
    /// One per data message, in arrival order.
    #[serde(skip)]
    pub decisions: Vec<MessageDecision>,
}

struct Waiting {
    decision: usize,
}

/// Replays `events` (log-time order) through a MessageFilter for `topics` (names indexed by
/// `DataMessage::topic`; out-of-range indices are ignored).
pub fn run_filter(cfg: &FilterConfig, topics: &[String], events: &[Event]) -> FilterReport {
    let target = strip_slash(&cfg.target_frame).to_string();
    let mut buf = TfBuffer::new(cfg.cache_ns);
    preload_static(
        &mut buf,
        events.iter().filter_map(|e| match e {
            Event::Tf(m) => Some(m),
            _ => None,
        }),
    );
    let mut decisions: Vec<MessageDecision> = Vec::new();
    let mut counts = vec![0usize; topics.len()];
    let mut queues: Vec<VecDeque<Waiting>> = (0..topics.len()).map(|_| VecDeque::new()).collect();
    let mut max_waiting = 0usize;
    let never = |buf: &TfBuffer, frame: &str, stamp: i64| -> bool {
        // testTransformableRequests: a request older than the cache behind the path's newest
        // common time can never succeed.
        match buf.latest_common_time(&target, frame) {
            Some(l) if l != 0 => stamp.saturating_add(buf.cache_ns()) < l,
            _ => false,
        }
    };
    for e in events {
        match e {
            Event::Tf(m) => {
                if m.is_static {
                    continue;
                }
                buf.insert_message(m);
                let now = m.log_time_ns;
                for queue in queues.iter_mut() {
                    queue.retain(|w| {
                        let d = &mut decisions[w.decision];
                        let frame = strip_slash(&d.frame_id).to_string();
                        if never(&buf, &frame, d.stamp_ns) {
                            d.readiness = Readiness::Dropped;
                            d.reason = Some(NotReady::ExtrapolationIntoPast);
                            d.decided_log_time_ns = Some(now);
                            return false;
                        }
                        if buf.can_transform(&target, &frame, d.stamp_ns).is_ok() {
                            d.readiness = Readiness::ReadyAfterWait;
                            d.decided_log_time_ns = Some(now);
                            d.wait_ns = Some(now.saturating_sub(d.log_time_ns));
                            return false;
                        }
                        true
                    });
                }
            }
            Event::Data(DataMessage {
                topic,
                frame_id,
                stamp_ns,
                log_time_ns,
            }) => {
                let Some(c) = counts.get_mut(*topic) else {
                    continue;
                };
                let index = *c;
                *c += 1;
                let frame = strip_slash(frame_id).to_string();
                let mut d = MessageDecision {
                    topic: *topic,
                    index,
                    frame_id: frame_id.clone(),
                    stamp_ns: *stamp_ns,
                    log_time_ns: *log_time_ns,
                    readiness: Readiness::Dropped,
                    decided_log_time_ns: Some(*log_time_ns),
                    wait_ns: None,
                    reason: None,
                };
                if frame.is_empty() {
                    d.reason = Some(NotReady::EmptyFrameId);
                    decisions.push(d);
                    continue;
                }
                // ROS 2: the queue-size check comes before the message is listed and before
                // its transform is asked for.
                let queue = &mut queues[*topic];
                if cfg.queue_size != 0 && queue.len() + 1 > cfg.queue_size {
                    if let Some(old) = queue.pop_front() {
                        let o = &mut decisions[old.decision];
                        o.reason = Some(NotReady::QueueEvicted);
                        o.decided_log_time_ns = Some(*log_time_ns);
                    }
                }
                if buf.can_transform(&target, &frame, *stamp_ns).is_ok() {
                    d.readiness = Readiness::ReadyOnArrival;
                } else if never(&buf, &frame, *stamp_ns) {
                    d.reason = Some(NotReady::ExtrapolationIntoPast);
                } else {
                    d.decided_log_time_ns = None;
                    queue.push_back(Waiting {
                        decision: decisions.len(),
                    });
                    max_waiting = max_waiting.max(queue.len());
                }
                decisions.push(d);
            }
        }
    }
    for w in queues.into_iter().flatten() {
        let d = &mut decisions[w.decision];
        let frame = strip_slash(&d.frame_id).to_string();
        d.reason = Some(
            buf.can_transform(&target, &frame, d.stamp_ns)
                .err()
                // Cannot happen (it would have passed at the last TF message); say "future".
                .unwrap_or(NotReady::ExtrapolationIntoFuture),
        );
    }
    FilterReport {
        config: cfg.clone(),
        topics: summarize(topics, &decisions),
        max_waiting,
        tf_inserts: buf.stats,
        decisions,
    }
}

fn preload_static<'a>(buf: &mut TfBuffer, msgs: impl Iterator<Item = &'a TfMessage>) {
    for m in msgs.filter(|m| m.is_static) {
        buf.insert_message(m);
    }
}

fn summarize(topics: &[String], decisions: &[MessageDecision]) -> Vec<TopicReadiness> {
    let mut out: Vec<TopicReadiness> = topics
        .iter()
        .map(|t| TopicReadiness {
            topic: t.clone(),
            messages: 0,
            ready_on_arrival: 0,
            ready_after_wait: 0,
            dropped: 0,
            wait_ns: None,
            drops: BTreeMap::new(),
            frames: Vec::new(),
        })
        .collect();
    let mut waits: Vec<Vec<i64>> = vec![Vec::new(); topics.len()];
    let mut frames: Vec<BTreeSet<String>> = vec![BTreeSet::new(); topics.len()];
    for d in decisions {
        let Some(t) = out.get_mut(d.topic) else {
            continue;
        };
        t.messages += 1;
        if !frames[d.topic].contains(&*d.frame_id) {
            frames[d.topic].insert(d.frame_id.to_string());
        }
        match d.readiness {
            Readiness::ReadyOnArrival => t.ready_on_arrival += 1,
            Readiness::ReadyAfterWait => {
                t.ready_after_wait += 1;
                waits[d.topic].push(d.wait_ns.unwrap_or(0));
            }
            Readiness::Dropped => {
                t.dropped += 1;
                let r = d.reason.map(NotReady::as_str).unwrap_or("unknown");
                *t.drops.entry(r.to_string()).or_default() += 1;
            }
        }
    }
    for (k, t) in out.iter_mut().enumerate() {
        t.wait_ns = NsSummary::of(&waits[k]);
        t.frames = frames[k].iter().cloned().collect();
    }
    out
}

/// One lookup a synchronizer callback would make: at log time `asof_log_ns` (when the set was
/// emitted), transform `frame_id` at `stamp_ns` into the target frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Log time (nanoseconds) up to which TF messages count.
    pub asof_log_ns: i64,
    /// The frame to transform from (a leading `/` is stripped).
    pub frame_id: String,
    /// Header stamp (nanoseconds) the lookup is made at.
    pub stamp_ns: i64,
}

/// For each query, whether the lookup succeeds with the TF received up to (and including) its
/// `asof_log_ns`. `tf` is in log-time order; static messages count from the start (latched).
pub fn availability(
    target_frame: &str,
    cache_ns: i64,
    tf: &[TfMessage],
    queries: &[Query],
) -> Vec<Result<(), NotReady>> {
    let mut buf = TfBuffer::new(cache_ns);
    preload_static(&mut buf, tf.iter());
    let dynamic: Vec<&TfMessage> = tf.iter().filter(|m| !m.is_static).collect();
    // Queries answered in log-time order (stable), results put back in input order.
    let mut order: Vec<usize> = (0..queries.len()).collect();
    order.sort_by_key(|&i| queries[i].asof_log_ns);
    let mut out = vec![Err(NotReady::FrameUnknown); queries.len()];
    let mut next = 0usize;
    for i in order {
        let q = &queries[i];
        while let Some(m) = dynamic.get(next) {
            if m.log_time_ns > q.asof_log_ns {
                break;
            }
            buf.insert_message(m);
            next += 1;
        }
        out[i] = buf.can_transform(target_frame, &q.frame_id, q.stamp_ns);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TfTransform;

    const MS: i64 = 1_000_000;

    fn tf(log: i64, parent: &str, child: &str, stamp: i64, is_static: bool) -> Event {
        Event::Tf(TfMessage {
            log_time_ns: log,
            source: usize::from(is_static),
            is_static,
            transforms: vec![TfTransform {
                parent: parent.into(),
                child: child.into(),
                stamp_ns: stamp,
            }],
        })
    }

    fn data(topic: usize, frame: &str, stamp: i64, log: i64) -> Event {
        Event::Data(DataMessage {
            topic,
            frame_id: frame.into(),
            stamp_ns: stamp,
            log_time_ns: log,
        })
    }

    #[test]
    fn waits_for_the_next_sample_and_uses_its_own_stamp() {
        // TF at 50 Hz (stamps every 20 ms, received 1 ms later); IMU at 1000+5 ms, received 1 ms
        // later: the bracketing sample (1020 ms) arrives at 1021 ms -> waits 15 ms.
        let mut ev = vec![tf(0, "base_link", "imu", 0, true)];
        for k in 0..=60 {
            ev.push(tf(
                1000 * MS + k * 20 * MS + MS,
                "odom",
                "base_link",
                1000 * MS + k * 20 * MS,
                false,
            ));
        }
        ev.push(data(0, "imu", 1005 * MS, 1006 * MS));
        ev.push(data(0, "imu", 1005 * MS, 1030 * MS));
        ev.push(data(0, "/imu", 5000 * MS, 5001 * MS));
        ev.push(data(0, "", 1005 * MS, 1030 * MS));
        ev.push(data(0, "nowhere", 1005 * MS, 1030 * MS));
        ev.sort_by_key(|e| match e {
            Event::Tf(m) => m.log_time_ns,
            Event::Data(d) => d.log_time_ns,
        });
        let r = run_filter(&FilterConfig::new("odom"), &["/imu".into()], &ev);
        let d = &r.decisions;
        assert_eq!(d[0].readiness, Readiness::ReadyAfterWait);
        assert_eq!(d[0].wait_ns, Some(15 * MS));
        assert_eq!(d[1].readiness, Readiness::ReadyOnArrival);
        // Sorted by log time: the empty and unknown frames (1030 ms) come before 5001 ms.
        assert_eq!(d[2].reason, Some(NotReady::EmptyFrameId));
        assert_eq!(d[3].reason, Some(NotReady::FrameUnknown));
        assert_eq!(d[4].reason, Some(NotReady::ExtrapolationIntoFuture));
        let t = &r.topics[0];
        assert_eq!(
            (t.ready_on_arrival, t.ready_after_wait, t.dropped),
            (1, 1, 3)
        );
    }

    #[test]
    fn queue_evicts_the_oldest_waiting_and_old_stamps_expire() {
        let mut ev = vec![tf(0, "odom", "base_link", 1000 * MS, false)];
        for k in 0..5 {
            ev.push(data(0, "base_link", 2000 * MS + k, 1500 * MS + k));
        }
        ev.push(tf(3000 * MS, "odom", "base_link", 3000 * MS, false));
        // 20 s later the 2 s stamps fall behind the cache: "never" for a new arrival.
        ev.push(tf(23_000 * MS, "odom", "base_link", 23_000 * MS, false));
        ev.push(data(0, "base_link", 2500 * MS, 23_001 * MS));
        let mut cfg = FilterConfig::new("odom");
        cfg.queue_size = 2;
        let r = run_filter(&cfg, &["/x".into()], &ev);
        let t = &r.topics[0];
        assert_eq!(t.ready_after_wait, 2);
        assert_eq!(t.drops.get("queue_evicted"), Some(&3));
        assert_eq!(t.drops.get("extrapolation_into_past"), Some(&1));
        assert_eq!(r.max_waiting, 2);
    }

    /// ROS 2 order: a full queue of never-transformable-yet messages loses its oldest to a
    /// message that is ready on arrival (ROS 1 tested readiness first and evicted nothing).
    #[test]
    fn ready_message_still_evicts_from_a_full_queue() {
        let mut ev = vec![tf(0, "odom", "base_link", 1000 * MS, false)];
        // Eight messages in a frame no TF ever connects: they wait forever.
        for k in 0..8 {
            ev.push(data(0, "camera", 1000 * MS + k, 1001 * MS + k));
        }
        // Transformable on arrival (the TF sample's own stamp).
        ev.push(data(0, "base_link", 1000 * MS, 1100 * MS));
        // A queue of 8 left with room: the next waiting message evicts nothing more.
        ev.push(data(0, "camera", 1000 * MS + 9, 1200 * MS));
        let mut cfg = FilterConfig::new("odom");
        cfg.queue_size = 8;
        let r = run_filter(&cfg, &["/x".into()], &ev);
        let d = &r.decisions;
        assert_eq!(d[8].readiness, Readiness::ReadyOnArrival);
        assert_eq!(d[0].reason, Some(NotReady::QueueEvicted));
        assert_eq!(d[0].decided_log_time_ns, Some(1100 * MS));
        // The ready message took its evicted neighbour's place only for its own add(): the
        // queue is left with 7, so the next waiting message evicts nothing.
        assert_eq!(d[1].reason, Some(NotReady::FrameUnknown));
        assert_eq!(d[9].reason, Some(NotReady::FrameUnknown));
        let t = &r.topics[0];
        assert_eq!(t.drops.get("queue_evicted"), Some(&1));
        assert_eq!(r.max_waiting, 8);
        // An empty frame id is dropped before the queue is looked at: it evicts nothing.
        let mut ev2 = ev[..9].to_vec();
        ev2.push(data(0, "", 1000 * MS, 1100 * MS));
        let r = run_filter(&cfg, &["/x".into()], &ev2);
        assert_eq!(r.topics[0].drops.get("queue_evicted"), None);
    }

    #[test]
    fn availability_respects_log_time() {
        let tfm = |log: i64, stamp: i64| TfMessage {
            log_time_ns: log,
            source: 0,
            is_static: false,
            transforms: vec![TfTransform {
                parent: "odom".into(),
                child: "base_link".into(),
                stamp_ns: stamp,
            }],
        };
        let tf = vec![tfm(10, 0), tfm(110, 100)];
        let q = |asof: i64| Query {
            asof_log_ns: asof,
            frame_id: "base_link".into(),
            stamp_ns: 50,
        };
        let r = availability("odom", DEFAULT_CACHE_NS, &tf, &[q(200), q(50), q(110)]);
        assert_eq!(
            r,
            vec![Ok(()), Err(NotReady::ExtrapolationIntoFuture), Ok(())]
        );
    }
}
