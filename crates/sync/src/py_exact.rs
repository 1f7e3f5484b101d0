//! Python `TimeSynchronizer` (SPEC §4), current and legacy purge behaviour.

use crate::sorted::SortedQueue;
use crate::track::{Engine, Removal, Tracker};
use crate::SyncConfig;

pub(crate) struct PyExact {
    legacy: bool,
    queue_size: usize,
    /// One dict per topic, keyed by stamp (insertion order is irrelevant here).
    queues: Vec<SortedQueue<usize>>,
}

impl PyExact {
    pub(crate) fn new(cfg: &SyncConfig, legacy: bool) -> Self {
        PyExact {
            legacy,
            queue_size: cfg.queue_size,
            queues: (0..cfg.n_topics).map(|_| SortedQueue::default()).collect(),
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
        if !self.queues.iter().all(|q| q.contains(t)) {
            return;
        }
        let mut ais = [0usize; crate::MAX_TOPICS];
        let mut n = 0;
        for q in self.queues.iter_mut() {
            if let Some(a) = q.remove(t) {
                ais[n] = a;
                n += 1;
            }
        }
        tr.emit(&ais[..n]);
        if !self.legacy {
            // Every older stamp is purged, oldest first, topic by topic.
            for q in self.queues.iter_mut() {
                while let Some((_, old)) = q.pop_below(t) {
                    tr.remove(old, Removal::Purged);
                }
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.queues[topic].len()
    }

    fn held(&self, topic: usize, out: &mut Vec<i64>) {
        out.extend(self.queues[topic].keys());
    }
}
