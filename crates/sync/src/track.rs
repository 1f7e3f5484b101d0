//! Bookkeeping shared by the policy engines: message fates, emitted sets, occupancy.

use crate::{
    Arrival, DropList, DropReason, DroppedMessage, Policy, QueueOccupancy, SetList, SyncConfig,
    SyncOutcome, EPOCH_JUMP_NS,
};

/// How an engine removed a message (before the final reason classification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    QueueEvicted,
    SkewExceeded,
    /// Exact policies: older stamps purged after a publish.
    Purged,
    /// Same key on the same topic replaced this message.
    Overwritten,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Pending,
    Used,
    Removed(Removal),
    Rejected(DropReason),
}

/// A synchronizer policy fed one message at a time.
pub(crate) trait Engine {
    /// `t` is the time the policy keys on (stamp, or arrival time for approx-py options).
    fn add(&mut self, ai: usize, topic: usize, t: i64, tr: &mut Tracker);
    /// Messages of `topic` currently retained.
    fn len(&self, topic: usize) -> usize;
}

/// `sync_t` of a message rejected before entering the policy (no stamp or arrival time is
/// i64::MIN: both come from unsigned or 32-bit-seconds fields).
const NO_KEY: i64 = i64::MIN;

/// Per-arrival state is kept to what the arrivals do not already hold (6 bytes a message):
/// the time the policy keys on is recomputed from the arrival when needed.
pub(crate) struct Tracker<'a> {
    n: usize,
    cfg: &'a SyncConfig,
    arrivals: &'a [Arrival],
    fate: Vec<Fate>,
    /// Per-topic index of each arrival (32 bits: `emulate` bounds the input).
    index: Vec<u32>,
    counts: Vec<usize>,
    cur: usize,
    sets: SetList,
    occ_max: Vec<usize>,
    occ_sum: Vec<u128>,
    n_samples: usize,
    /// Count sets only (parameter sweeps): no fates, sets, drops or occupancy recorded.
    count_only: bool,
    emitted: usize,
}

impl<'a> Tracker<'a> {
    pub(crate) fn new(cfg: &'a SyncConfig, arrivals: &'a [Arrival]) -> Tracker<'a> {
        let n = cfg.n_topics;
        let mut counts = vec![0usize; n];
        let mut index = Vec::with_capacity(arrivals.len());
        let mut fate = Vec::with_capacity(arrivals.len());
        for a in arrivals {
            index.push(counts[a.topic] as u32);
            counts[a.topic] += 1;
            let (t, f) = key_time(cfg, a);
            fate.push(if t == Some(NO_KEY) {
                Fate::Rejected(DropReason::InvalidStamp)
            } else {
                f
            });
        }
        Tracker {
            n,
            cfg,
            arrivals,
            fate,
            index,
            counts,
            cur: 0,
            sets: SetList::new(n),
            occ_max: vec![0; n],
            occ_sum: vec![0; n],
            n_samples: 0,
            count_only: false,
            emitted: 0,
        }
    }

    /// A tracker that only counts the sets the engine emits: the engines behave the same
    /// (they keep their own queues), but nothing per message is recorded.
    pub(crate) fn counting(cfg: &'a SyncConfig, arrivals: &'a [Arrival]) -> Tracker<'a> {
        let n = cfg.n_topics;
        Tracker {
            n,
            cfg,
            arrivals,
            fate: Vec::new(),
            index: Vec::new(),
            counts: vec![0; n],
            cur: 0,
            sets: SetList::new(n),
            occ_max: Vec::new(),
            occ_sum: Vec::new(),
            n_samples: 0,
            count_only: true,
            emitted: 0,
        }
    }

    /// Sets emitted so far.
    pub(crate) fn emitted(&self) -> usize {
        self.emitted
    }

    pub(crate) fn run<E: Engine>(&mut self, e: &mut E) {
        let arrivals = self.arrivals;
        for (ai, a) in arrivals.iter().enumerate() {
            self.cur = ai;
            let t = self.sync_t(ai);
            if t != NO_KEY {
                e.add(ai, a.topic, t, self);
            }
            if self.count_only {
                continue;
            }
            for k in 0..self.n {
                let l = e.len(k);
                self.occ_max[k] = self.occ_max[k].max(l);
                self.occ_sum[k] += l as u128;
            }
            self.n_samples += 1;
        }
    }

    /// Record a callback with the given member arrival indices (topic order).
    pub(crate) fn emit(&mut self, members: &[usize]) {
        self.emitted += 1;
        if self.count_only {
            return;
        }
        let (index, cfg, arrivals) = (&self.index, self.cfg, self.arrivals);
        self.sets.push(
            members.iter().map(|&ai| {
                let t = sync_t_of(cfg, &arrivals[ai]);
                (index[ai] as usize, ai, if t == NO_KEY { 0 } else { t })
            }),
            self.cur,
            self.arrivals[self.cur].arrival_ns,
        );
        for &ai in members {
            // An emulator bug would show up as a non-pending member; keep the first fate.
            debug_assert_eq!(
                self.fate[ai],
                Fate::Pending,
                "message used twice or after removal"
            );
            if self.fate[ai] == Fate::Pending {
                self.fate[ai] = Fate::Used;
            }
        }
    }

    fn key(&self, ai: usize) -> Option<i64> {
        Some(self.sync_t(ai)).filter(|&t| t != NO_KEY)
    }

    pub(crate) fn remove(&mut self, ai: usize, why: Removal) {
        // No fates when only counting.
        if let Some(f) = self.fate.get_mut(ai) {
            if *f == Fate::Pending {
                *f = Fate::Removed(why);
            }
        }
    }

    pub(crate) fn finish(self, cfg: &SyncConfig) -> SyncOutcome {
        let arrivals = self.arrivals;
        let any_empty = self.counts.contains(&0);
        // Per topic, drops come in arrival order, which is index order; each set uses one
        // message of every topic, so each topic's drop count is known up front: every drop is
        // written straight to its place in (topic, index) order, nothing sorted or copied.
        let sets = self.sets.len();
        let per_topic: Vec<usize> = self.counts.iter().map(|c| c.saturating_sub(sets)).collect();
        let mut drops = DropList::with_counts(&per_topic);
        let mut written = vec![0usize; self.n];
        // Per-topic history for order-dependent reasons, in arrival order.
        let mut max_before: Vec<Option<i64>> = vec![None; self.n];
        {
            for (ai, arrival) in arrivals.iter().enumerate() {
                let k = arrival.topic;
                let t = self.key(ai);
                let prev_max = max_before[k];
                // Equal to the newest earlier stamp: a repeated stamp (cheap O(1) test; an equal
                // stamp further back counts as out of order).
                let dup = t.is_some() && t == prev_max;
                if let Some(t) = t {
                    max_before[k] = Some(prev_max.map_or(t, |m| m.max(t)));
                }
                let behind = match (t, prev_max) {
                    (Some(t), Some(m)) => m.saturating_sub(t),
                    _ => 0,
                };
                let reason = match self.fate[ai] {
                    Fate::Used => continue,
                    Fate::Rejected(r) => r,
                    Fate::Pending => DropReason::NeverMatched,
                    Fate::Removed(why) => {
                        let base = match why {
                            Removal::Overwritten => DropReason::DuplicateStamp,
                            Removal::QueueEvicted | Removal::SkewExceeded
                                if cfg.policy == Policy::Approx && dup =>
                            {
                                DropReason::DuplicateStamp
                            }
                            Removal::QueueEvicted | Removal::SkewExceeded
                                if cfg.policy == Policy::Approx && behind > 0 =>
                            {
                                DropReason::OutOfOrder
                            }
                            Removal::QueueEvicted => DropReason::QueueEvicted,
                            Removal::SkewExceeded => DropReason::SkewExceeded,
                            Removal::Purged if behind > 0 => DropReason::OutOfOrder,
                            Removal::Purged => DropReason::SkewExceeded,
                        };
                        if behind >= EPOCH_JUMP_NS {
                            DropReason::ClockEpochChanged
                        } else {
                            base
                        }
                    }
                };
                let reason = match reason {
                    DropReason::HeaderlessRejected | DropReason::InvalidStamp => reason,
                    _ if any_empty => DropReason::TopicEmpty,
                    _ => reason,
                };
                drops.set(
                    k,
                    written[k],
                    &DroppedMessage {
                        topic: k,
                        index: self.index[ai] as usize,
                        arrival_index: ai,
                        stamp_ns: arrival.stamp_ns(),
                        reason,
                    },
                );
                written[k] += 1;
            }
        }
        debug_assert_eq!(written, per_topic);
        let occupancy = (0..self.n)
            .map(|k| QueueOccupancy {
                topic: k,
                max: self.occ_max[k],
                mean: if self.n_samples == 0 {
                    0.0
                } else {
                    self.occ_sum[k] as f64 / self.n_samples as f64
                },
            })
            .collect();
        SyncOutcome {
            policy: cfg.policy,
            n_topics: self.n,
            messages_per_topic: self.counts,
            sets: self.sets,
            drops,
            occupancy,
        }
    }
}

/// Time used by the policy for an arrival (`NO_KEY`: rejected before entering).
#[inline]
fn sync_t_of(cfg: &SyncConfig, a: &Arrival) -> i64 {
    key_time(cfg, a).0.unwrap_or(NO_KEY)
}

impl Tracker<'_> {
    #[inline]
    fn sync_t(&self, ai: usize) -> i64 {
        sync_t_of(self.cfg, &self.arrivals[ai])
    }
}

/// The time the policy keys the message on, or why it never enters the synchronizer.
fn key_time(cfg: &SyncConfig, a: &Arrival) -> (Option<i64>, Fate) {
    if cfg.policy == Policy::ApproxPy {
        if cfg.sync_arrival_time {
            // Header ignored entirely: ROSClock().now() at add().
            return (Some(a.arrival_ns), Fate::Pending);
        }
        return match a.stamp_ns() {
            Some(s) if s < 0 => (None, Fate::Rejected(DropReason::InvalidStamp)),
            Some(s) => (Some(s), Fate::Pending),
            None if cfg.allow_headerless => (Some(a.arrival_ns), Fate::Pending),
            None => (None, Fate::Rejected(DropReason::HeaderlessRejected)),
        };
    }
    match a.stamp_ns() {
        // rclcpp/rclpy Time throw on a negative sec field.
        Some(s) if s < 0 => (None, Fate::Rejected(DropReason::InvalidStamp)),
        Some(s) => (Some(s), Fate::Pending),
        None => (None, Fate::Rejected(DropReason::HeaderlessRejected)),
    }
}
