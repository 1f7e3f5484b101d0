//! C++ `sync_policies::ApproximateEpsilonTime` (SPEC §11), line for line.
//!
//! Each topic is a FIFO in arrival order. Only the fronts are compared, and only in the
//! `add()` that fills the last empty queue: the fronts form a set when every one lies within
//! epsilon (inclusive) of the oldest; otherwise every front within epsilon of the oldest is
//! discarded (the oldest included), which can throw away a good partner with three topics.
//! The queue bound is applied only while some topic is empty, one message per `add()`.

use crate::track::{Engine, Removal, Tracker};
use crate::SyncConfig;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy)]
struct Msg {
    ai: usize,
    t: i64,
}

pub(crate) struct CppEpsilon {
    n: usize,
    queue_size: usize,
    epsilon_ns: i64,
    q: Vec<VecDeque<Msg>>,
    non_empty: usize,
    /// Arrival indices of one set (reused).
    members: Vec<usize>,
}

impl CppEpsilon {
    pub(crate) fn new(cfg: &SyncConfig) -> Self {
        CppEpsilon {
            n: cfg.n_topics,
            queue_size: cfg.queue_size,
            epsilon_ns: cfg.epsilon_ns,
            q: vec![VecDeque::new(); cfg.n_topics],
            non_empty: 0,
            members: Vec::with_capacity(cfg.n_topics),
        }
    }

    fn process(&mut self, tr: &mut Tracker) {
        while self.non_empty == self.n {
            // Oldest front; ties go to the lowest index (`t_old > stamp` replaces).
            let mut t_old = i64::MAX;
            for q in &self.q {
                if let Some(m) = q.front() {
                    if t_old > m.t {
                        t_old = m.t;
                    }
                }
            }
            // `Time + Duration` (an overflow throws upstream; real stamps never reach it).
            let limit = t_old.saturating_add(self.epsilon_ns);
            let fronts = || self.q.iter().filter_map(|q| q.front());
            if fronts().all(|m| m.t <= limit) {
                self.members.clear();
                self.members.extend(fronts().map(|m| m.ai));
                let members = std::mem::take(&mut self.members);
                tr.emit(&members);
                self.members = members;
                for q in self.q.iter_mut() {
                    q.pop_front();
                }
            } else {
                // The set fails: every front within epsilon of the oldest goes, the oldest too.
                for k in 0..self.n {
                    if self.q[k].front().is_some_and(|m| m.t <= limit) {
                        if let Some(m) = self.q[k].pop_front() {
                            tr.remove(m.ai, Removal::SkewExceeded);
                        }
                    }
                }
            }
            self.non_empty = self.q.iter().filter(|q| !q.is_empty()).count();
        }
    }
}

impl Engine for CppEpsilon {
    fn add(&mut self, ai: usize, i: usize, t: i64, tr: &mut Tracker) {
        if self.q[i].is_empty() {
            self.non_empty += 1;
        }
        self.q[i].push_back(Msg { ai, t });
        if self.non_empty == self.n {
            self.process(tr);
        } else if self.q[i].len() > self.queue_size {
            if let Some(m) = self.q[i].pop_front() {
                tr.remove(m.ai, Removal::QueueEvicted);
            }
            if self.q[i].is_empty() {
                // Only with queue_size 0.
                self.non_empty -= 1;
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.q[topic].len()
    }

    fn held(&self, topic: usize, out: &mut Vec<i64>) {
        out.extend(self.q[topic].iter().map(|m| m.t));
    }
}
