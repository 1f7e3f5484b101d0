//! C++ `sync_policies::ApproximateTime` (SPEC §2), line for line.

use crate::track::{Engine, Removal, Tracker};
use crate::SyncConfig;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy)]
struct Msg {
    ai: usize,
    t: i64,
}

/// Upstream default `Duration(INT32_MAX s, 999999999 ns)`.
const DEFAULT_MAX_INTERVAL_NS: i64 = i32::MAX as i64 * 1_000_000_000 + 999_999_999;

pub(crate) struct CppApprox {
    n: usize,
    queue_size: usize,
    age_penalty: f64,
    max_interval_ns: i64,
    lb: Vec<i64>,
    deque: Vec<VecDeque<Msg>>,
    past: Vec<Vec<Msg>>,
    num_non_empty: usize,
    candidate: Vec<Msg>,
    candidate_start: i64,
    candidate_end: i64,
    pivot: Option<usize>,
    pivot_time: i64,
    has_dropped: Vec<bool>,
    moved: Vec<usize>,
}

impl CppApprox {
    pub(crate) fn new(cfg: &SyncConfig) -> Self {
        let n = cfg.n_topics;
        CppApprox {
            n,
            queue_size: cfg.queue_size,
            age_penalty: cfg.age_penalty,
            max_interval_ns: cfg.max_interval_ns.unwrap_or(DEFAULT_MAX_INTERVAL_NS),
            lb: if cfg.lower_bounds_ns.is_empty() {
                vec![0; n]
            } else {
                cfg.lower_bounds_ns.clone()
            },
            deque: vec![VecDeque::new(); n],
            past: vec![Vec::new(); n],
            num_non_empty: 0,
            candidate: Vec::with_capacity(n),
            candidate_start: 0,
            candidate_end: 0,
            pivot: None,
            pivot_time: 0,
            has_dropped: vec![false; n],
            moved: vec![0; n],
        }
    }

    /// rclcpp `Duration * double`: double product truncated toward zero (saturating here).
    fn scaled(&self, d: i64) -> i64 {
        (d as f64 * (1.0 + self.age_penalty)) as i64
    }

    fn recompute_non_empty(&mut self) {
        self.num_non_empty = self.deque.iter().filter(|d| !d.is_empty()).count();
    }

    /// Latest (`end`) or earliest front over `times`, with upstream's tie rules:
    /// latest picks the highest index on ties, earliest the lowest.
    fn scan(times: impl Iterator<Item = i64>, end: bool) -> (usize, i64) {
        let mut best = (0usize, 0i64);
        for (i, t) in times.enumerate() {
            if i == 0 || ((t < best.1) ^ end) {
                best = (i, t);
            }
        }
        best
    }

    fn front_t(&self, i: usize) -> i64 {
        self.deque[i].front().map_or(self.pivot_time, |m| m.t)
    }

    fn virtual_t(&self, i: usize) -> i64 {
        match self.deque[i].front() {
            Some(m) => m.t,
            None => match self.past[i].last() {
                Some(p) => p.t.saturating_add(self.lb[i]).max(self.pivot_time),
                // Unreachable upstream (a searched topic always has past messages).
                None => self.pivot_time,
            },
        }
    }

    fn move_front_to_past(&mut self, i: usize) {
        if let Some(m) = self.deque[i].pop_front() {
            self.past[i].push(m);
            if self.deque[i].is_empty() {
                self.num_non_empty = self.num_non_empty.saturating_sub(1);
            }
        }
    }

    fn discard_front(&mut self, i: usize, why: Removal, tr: &mut Tracker) {
        if let Some(m) = self.deque[i].pop_front() {
            tr.remove(m.ai, why);
            if self.deque[i].is_empty() {
                self.num_non_empty = self.num_non_empty.saturating_sub(1);
            }
        }
    }

    /// Put every past message back in front of its deque (order preserved).
    fn recover_all(&mut self) {
        for j in 0..self.n {
            while let Some(m) = self.past[j].pop() {
                self.deque[j].push_front(m);
            }
        }
        self.recompute_non_empty();
    }

    fn make_candidate(&mut self, start_t: i64, end_t: i64, tr: &mut Tracker) {
        self.candidate.clear();
        for j in 0..self.n {
            if let Some(&m) = self.deque[j].front() {
                self.candidate.push(m);
            }
            // Messages moved aside by the previous search are discarded with the old candidate:
            // their partners were there, a tighter set was preferred.
            for m in self.past[j].drain(..) {
                tr.remove(m.ai, Removal::SkewExceeded);
            }
        }
        self.candidate_start = start_t;
        self.candidate_end = end_t;
    }

    fn publish(&mut self, tr: &mut Tracker) {
        if self.candidate.len() == self.n {
            let ais: Vec<usize> = self.candidate.iter().map(|m| m.ai).collect();
            tr.emit(&ais);
        }
        self.candidate.clear();
        self.pivot = None;
        for j in 0..self.n {
            while let Some(m) = self.past[j].pop() {
                self.deque[j].push_front(m);
            }
            // This is exactly candidate[j], already recorded as used.
            self.deque[j].pop_front();
        }
        self.recompute_non_empty();
    }

    fn process(&mut self, tr: &mut Tracker) {
        while self.num_non_empty == self.n {
            let (end_i, end_t) = Self::scan((0..self.n).map(|i| self.front_t(i)), true);
            let (start_i, start_t) = Self::scan((0..self.n).map(|i| self.front_t(i)), false);
            for j in 0..self.n {
                if j != end_i {
                    self.has_dropped[j] = false;
                }
            }
            match self.pivot {
                None => {
                    if end_t.saturating_sub(start_t) > self.max_interval_ns {
                        self.discard_front(start_i, Removal::SkewExceeded, tr);
                        continue;
                    }
                    if self.has_dropped[end_i] {
                        // The end topic just overflowed, so it may not pivot.
                        self.discard_front(start_i, Removal::QueueEvicted, tr);
                        continue;
                    }
                    self.make_candidate(start_t, end_t, tr);
                    self.pivot = Some(end_i);
                    self.pivot_time = end_t;
                    self.move_front_to_past(start_i);
                }
                Some(_) => {
                    let lhs = self.scaled(end_t.saturating_sub(self.candidate_end));
                    if lhs >= start_t.saturating_sub(self.candidate_start) {
                        // Not better: ties keep the older candidate.
                        self.move_front_to_past(start_i);
                    } else {
                        self.make_candidate(start_t, end_t, tr);
                        self.move_front_to_past(start_i);
                    }
                }
            }
            let lhs = self.scaled(end_t.saturating_sub(self.candidate_end));
            if Some(start_i) == self.pivot {
                // Upstream compares the index, not the time.
                self.publish(tr);
            } else if lhs >= self.pivot_time.saturating_sub(self.candidate_start) {
                self.publish(tr);
            } else if self.num_non_empty < self.n {
                self.virtual_search(tr);
            }
        }
    }

    fn virtual_search(&mut self, tr: &mut Tracker) {
        for m in self.moved.iter_mut() {
            *m = 0;
        }
        loop {
            let (_, ve_t) = Self::scan((0..self.n).map(|i| self.virtual_t(i)), true);
            let (vs_i, vs_t) = Self::scan((0..self.n).map(|i| self.virtual_t(i)), false);
            let lhs = self.scaled(ve_t.saturating_sub(self.candidate_end));
            if lhs >= self.pivot_time.saturating_sub(self.candidate_start) {
                self.publish(tr);
                return;
            }
            // Upstream asserts the virtual start has a real front; bail out like "wait" if not.
            if lhs < vs_t.saturating_sub(self.candidate_start) || self.deque[vs_i].is_empty() {
                for j in 0..self.n {
                    for _ in 0..self.moved[j] {
                        if let Some(m) = self.past[j].pop() {
                            self.deque[j].push_front(m);
                        }
                    }
                }
                self.recompute_non_empty();
                return;
            }
            self.move_front_to_past(vs_i);
            self.moved[vs_i] += 1;
        }
    }
}

impl Engine for CppApprox {
    fn add(&mut self, ai: usize, i: usize, t: i64, tr: &mut Tracker) {
        self.deque[i].push_back(Msg { ai, t });
        if self.deque[i].len() == 1 {
            self.num_non_empty += 1;
            if self.num_non_empty == self.n {
                self.process(tr);
            }
        }
        if self.deque[i].len() + self.past[i].len() > self.queue_size {
            self.recover_all();
            self.discard_front(i, Removal::QueueEvicted, tr);
            self.has_dropped[i] = true;
            if self.pivot.is_some() {
                self.candidate.clear();
                self.pivot = None;
                self.process(tr);
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.deque[topic].len() + self.past[topic].len()
    }

    fn held(&self, topic: usize, out: &mut Vec<i64>) {
        out.extend(
            self.deque[topic]
                .iter()
                .chain(&self.past[topic])
                .map(|m| m.t),
        );
    }
}
