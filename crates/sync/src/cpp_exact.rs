//! C++ `sync_policies::ExactTime` (SPEC §3).

use crate::track::{Engine, Removal, Tracker};
use crate::{SyncConfig, MAX_TOPICS};

/// Fixed-size slots: no allocation per pending stamp.
type Slots = [Option<usize>; MAX_TOPICS];
use crate::sorted::SortedQueue;

pub(crate) struct CppExact {
    n: usize,
    /// 0 = unlimited; counts distinct pending stamps, not messages.
    queue_size: usize,
    /// Pending stamps, each to its slots in `slab`: the map's nodes then move 16-byte entries
    /// instead of 144-byte slot arrays (that moving was a third of the policy's time).
    tuples: SortedQueue<u32>,
    slab: Vec<Slots>,
    free: Vec<u32>,
    per_topic: Vec<usize>,
}

impl CppExact {
    pub(crate) fn new(cfg: &SyncConfig) -> Self {
        CppExact {
            n: cfg.n_topics,
            queue_size: cfg.queue_size,
            tuples: SortedQueue::default(),
            slab: Vec::new(),
            free: Vec::new(),
            per_topic: vec![0; cfg.n_topics],
        }
    }

    /// Slots for stamp `t`, created empty when new.
    fn slot_of(&mut self, t: i64) -> u32 {
        if let Some(&mut k) = self.tuples.get_mut(t) {
            return k;
        }
        let k = match self.free.pop() {
            Some(k) => {
                self.slab[k as usize] = [None; MAX_TOPICS];
                k
            }
            None => {
                self.slab.push([None; MAX_TOPICS]);
                // More pending stamps than u32 can count would need > 4e9 arrivals in memory.
                u32::try_from(self.slab.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.tuples.insert(t, k);
        k
    }

    fn drop_tuple(&mut self, k: u32, why: Removal, tr: &mut Tracker) {
        let slots = self.slab[k as usize];
        self.free.push(k);
        for (topic, s) in slots.into_iter().enumerate() {
            if let Some(ai) = s {
                self.per_topic[topic] -= 1;
                tr.remove(ai, why);
            }
        }
    }
}

impl Engine for CppExact {
    fn add(&mut self, ai: usize, i: usize, t: i64, tr: &mut Tracker) {
        let n = self.n;
        let k = self.slot_of(t);
        let slots = &mut self.slab[k as usize];
        match slots[i].replace(ai) {
            // Same topic, same stamp: silently overwritten upstream.
            Some(old) => tr.remove(old, Removal::Overwritten),
            None => self.per_topic[i] += 1,
        }
        if slots[..n].iter().all(Option::is_some) {
            let mut ais = [0usize; MAX_TOPICS];
            for (a, s) in ais.iter_mut().zip(&slots[..n]) {
                *a = s.unwrap_or(0);
            }
            tr.emit(&ais[..n]);
            self.tuples.remove(t);
            self.free.push(k);
            for c in self.per_topic.iter_mut() {
                *c -= 1;
            }
            // clearOldTuples: every key <= last_signal_time goes to the drop callback.
            while let Some((_, k)) = self.tuples.pop_below(t) {
                self.drop_tuple(k, Removal::Purged, tr);
            }
        }
        if self.queue_size > 0 {
            while self.tuples.len() > self.queue_size {
                if let Some((_, k)) = self.tuples.pop_first() {
                    self.drop_tuple(k, Removal::QueueEvicted, tr);
                }
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.per_topic[topic]
    }

    fn held(&self, topic: usize, out: &mut Vec<i64>) {
        out.extend(
            self.tuples
                .iter()
                .filter(|&&(_, k)| self.slab[k as usize][topic].is_some())
                .map(|&(t, _)| t),
        );
    }
}
