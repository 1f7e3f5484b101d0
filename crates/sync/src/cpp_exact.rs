//! C++ `sync_policies::ExactTime` (SPEC §3).

use crate::track::{Engine, Removal, Tracker};
use crate::{SyncConfig, MAX_TOPICS};

/// Fixed-size slots: no allocation per pending stamp.
type Slots = [Option<usize>; MAX_TOPICS];
use std::collections::BTreeMap;

pub(crate) struct CppExact {
    n: usize,
    /// 0 = unlimited; counts distinct pending stamps, not messages.
    queue_size: usize,
    tuples: BTreeMap<i64, Slots>,
    per_topic: Vec<usize>,
}

impl CppExact {
    pub(crate) fn new(cfg: &SyncConfig) -> Self {
        CppExact {
            n: cfg.n_topics,
            queue_size: cfg.queue_size,
            tuples: BTreeMap::new(),
            per_topic: vec![0; cfg.n_topics],
        }
    }

    fn drop_tuple(&mut self, slots: Slots, why: Removal, tr: &mut Tracker) {
        for (k, s) in slots.into_iter().enumerate() {
            if let Some(ai) = s {
                self.per_topic[k] -= 1;
                tr.remove(ai, why);
            }
        }
    }
}

impl Engine for CppExact {
    fn add(&mut self, ai: usize, i: usize, t: i64, tr: &mut Tracker) {
        let n = self.n;
        let slots = self.tuples.entry(t).or_insert([None; MAX_TOPICS]);
        match slots[i].replace(ai) {
            // Same topic, same stamp: silently overwritten upstream.
            Some(old) => tr.remove(old, Removal::Overwritten),
            None => self.per_topic[i] += 1,
        }
        if slots[..n].iter().all(Option::is_some) {
            let ais: Vec<usize> = slots[..n].iter().flatten().copied().collect();
            tr.emit(&ais);
            self.tuples.remove(&t);
            for k in 0..n {
                self.per_topic[k] -= 1;
            }
            // clearOldTuples: every key <= last_signal_time goes to the drop callback.
            let newer = self.tuples.split_off(&t);
            let older = std::mem::replace(&mut self.tuples, newer);
            for (_, s) in older {
                self.drop_tuple(s, Removal::Purged, tr);
            }
        }
        if self.queue_size > 0 {
            while self.tuples.len() > self.queue_size {
                if let Some((_, s)) = self.tuples.pop_first() {
                    self.drop_tuple(s, Removal::QueueEvicted, tr);
                }
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.per_topic[topic]
    }
}
