//! Python `TimeSynchronizer` (SPEC §4), current and legacy purge behaviour.

use crate::track::{Engine, Removal, Tracker};
use crate::SyncConfig;
use std::collections::BTreeMap;

pub(crate) struct PyExact {
    legacy: bool,
    queue_size: usize,
    /// One dict per topic, keyed by stamp (insertion order is irrelevant here).
    queues: Vec<BTreeMap<i64, usize>>,
}

impl PyExact {
    pub(crate) fn new(cfg: &SyncConfig, legacy: bool) -> Self {
        PyExact {
            legacy,
            queue_size: cfg.queue_size,
            queues: vec![BTreeMap::new(); cfg.n_topics],
        }
    }
}

impl Engine for PyExact {
    fn add(&mut self, ai: usize, i: usize, t: i64, tr: &mut Tracker) {
        if let Some(old) = self.queues[i].insert(t, ai) {
            tr.remove(old, Removal::Overwritten);
        }
        while self.queues[i].len() > self.queue_size {
            if let Some((_, old)) = self.queues[i].pop_first() {
                tr.remove(old, Removal::QueueEvicted);
            }
        }
        // Only the key just added can have become common (earlier common keys were emitted at
        // once), so the intersection of all key sets is {t} or empty.
        if !self.queues.iter().all(|q| q.contains_key(&t)) {
            return;
        }
        let ais: Vec<usize> = self
            .queues
            .iter_mut()
            .filter_map(|q| q.remove(&t))
            .collect();
        tr.emit(&ais);
        if !self.legacy {
            for q in self.queues.iter_mut() {
                let newer = q.split_off(&t);
                for (_, old) in std::mem::replace(q, newer) {
                    tr.remove(old, Removal::Purged);
                }
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.queues[topic].len()
    }
}
