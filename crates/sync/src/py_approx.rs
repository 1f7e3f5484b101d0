//! Python `ApproximateTimeSynchronizer` (SPEC §5): greedy, arrival-driven, stamp-keyed dicts.

use crate::track::{Engine, Removal, Tracker};
use crate::SyncConfig;
use smallvec::SmallVec;

pub(crate) struct PyApprox {
    n: usize,
    queue_size: usize,
    slop: i128,
    offsets: Vec<i64>,
    /// Per topic: (key, arrival index) in dict insertion order (overwrite keeps the position).
    queues: Vec<Vec<(i64, usize)>>,
    cand: Vec<Vec<i64>>,
    /// Reused for ranking one topic's candidates (no allocation per message).
    ranked: Vec<(i128, i64)>,
}

/// At most `MAX_TOPICS` entries: kept on the stack.
type PerTopic<T> = SmallVec<[T; crate::MAX_TOPICS]>;

impl PyApprox {
    pub(crate) fn new(cfg: &SyncConfig) -> Self {
        let n = cfg.n_topics;
        PyApprox {
            n,
            queue_size: cfg.queue_size,
            slop: cfg.slop_ns as i128,
            offsets: if cfg.queue_offset_ns.is_empty() {
                vec![0; n]
            } else {
                cfg.queue_offset_ns.clone()
            },
            queues: vec![Vec::new(); n],
            cand: vec![Vec::new(); n],
            ranked: Vec::new(),
        }
    }

    fn find(&self, topic: usize, key: i64) -> Option<usize> {
        self.queues[topic].iter().position(|&(k, _)| k == key)
    }

    /// First combination in `itertools.product` order (first list slowest) whose spread,
    /// together with `fixed`, is `< slop`. Depth-first with exact feasibility pruning, so it
    /// never enumerates dead subtrees.
    fn first_combo(&self, lists: &[&Vec<i64>], fixed: i64) -> Option<PerTopic<i64>> {
        let mut chosen = PerTopic::new();
        if self.dfs(lists, fixed as i128, fixed as i128, &mut chosen) {
            Some(chosen)
        } else {
            None
        }
    }

    fn dfs(&self, lists: &[&Vec<i64>], lo: i128, hi: i128, chosen: &mut PerTopic<i64>) -> bool {
        let d = chosen.len();
        if d == lists.len() {
            return true;
        }
        for &v in lists[d].iter() {
            let (l, h) = (lo.min(v as i128), hi.max(v as i128));
            if h - l >= self.slop {
                continue;
            }
            if lists.len() - d > 2 && !self.feasible(&lists[d + 1..], l, h) {
                continue;
            }
            chosen.push(v);
            if self.dfs(lists, l, h, chosen) {
                return true;
            }
            chosen.pop();
        }
        false
    }

    /// Can one value from each list be added to the range [lo, hi] keeping the spread < slop?
    fn feasible(&self, lists: &[&Vec<i64>], lo: i128, hi: i128) -> bool {
        let mut pts: Vec<(i128, usize)> = Vec::new();
        for (k, l) in lists.iter().enumerate() {
            let before = pts.len();
            pts.extend(
                l.iter()
                    .map(|&v| v as i128)
                    .filter(|&v| v.max(hi) - v.min(lo) < self.slop)
                    .map(|v| (v, k)),
            );
            if pts.len() == before {
                return false;
            }
        }
        pts.sort_unstable();
        let mut cover = vec![0usize; lists.len()];
        let mut covered = 0;
        let mut left = 0;
        for r in 0..pts.len() {
            if cover[pts[r].1] == 0 {
                covered += 1;
            }
            cover[pts[r].1] += 1;
            while pts[r].0.max(hi) - pts[left].0.min(lo) >= self.slop {
                cover[pts[left].1] -= 1;
                if cover[pts[left].1] == 0 {
                    covered -= 1;
                }
                left += 1;
            }
            if covered == lists.len() {
                return true;
            }
        }
        false
    }
}

impl Engine for PyApprox {
    fn add(&mut self, ai: usize, i: usize, key_time: i64, tr: &mut Tracker) {
        let key = key_time.saturating_sub(self.offsets[i]);
        match self.find(i, key) {
            Some(p) => {
                // Dict overwrite: the later message wins, the position is kept.
                let old = std::mem::replace(&mut self.queues[i][p].1, ai);
                tr.remove(old, Removal::Overwritten);
            }
            None => self.queues[i].push((key, ai)),
        }
        while self.queues[i].len() > self.queue_size {
            // del my_queue[min(my_queue)]: may evict the message just added.
            let (p, _) = match self.queues[i]
                .iter()
                .enumerate()
                .min_by_key(|(_, &(k, _))| k)
            {
                Some((p, e)) => (p, *e),
                None => break,
            };
            let (_, old) = self.queues[i].remove(p);
            tr.remove(old, Removal::QueueEvicted);
        }
        let slop = self.slop;
        for j in 0..self.n {
            self.cand[j].clear();
            if j == i {
                continue;
            }
            // (key, |delta|) kept when |delta| <= slop; stable sort keeps dict order on ties.
            let c = &mut self.ranked;
            c.clear();
            c.extend(
                self.queues[j]
                    .iter()
                    .map(|&(s, _)| ((s as i128 - key as i128).abs(), s))
                    .filter(|&(d, _)| d <= slop),
            );
            if c.is_empty() {
                return;
            }
            c.sort_by_key(|&(d, _)| d);
            self.cand[j].extend(c.iter().map(|&(_, s)| s));
        }
        // The arriving topic contributes key_time (unshifted); with a non-zero offset this is
        // usually not a key of its queue and nothing can match (upstream behaviour).
        let Some(own) = self.find(i, key_time) else {
            return;
        };
        let lists: PerTopic<&Vec<i64>> = (0..self.n)
            .filter(|&j| j != i)
            .map(|j| &self.cand[j])
            .collect();
        let Some(combo) = self.first_combo(&lists, key_time) else {
            return;
        };
        let mut members = PerTopic::<usize>::new();
        let mut positions = PerTopic::<usize>::new();
        let mut it = combo.into_iter();
        for j in 0..self.n {
            let p = if j == i {
                own
            } else {
                match it.next().and_then(|v| self.find(j, v)) {
                    Some(p) => p,
                    None => return,
                }
            };
            positions.push(p);
            members.push(self.queues[j][p].1);
        }
        tr.emit(&members);
        for (j, p) in positions.into_iter().enumerate() {
            self.queues[j].remove(p);
        }
    }

    fn len(&self, topic: usize) -> usize {
        self.queues[topic].len()
    }

    fn held(&self, topic: usize, out: &mut Vec<i64>) {
        out.extend(self.queues[topic].iter().map(|&(k, _)| k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Policy, SyncConfig};

    /// Brute-force `itertools.product` order, as upstream iterates.
    fn brute(lists: &[Vec<i64>], fixed: i64, slop: i64) -> Option<Vec<i64>> {
        let mut idx = vec![0usize; lists.len()];
        if lists.iter().any(|l| l.is_empty()) {
            return None;
        }
        loop {
            let combo: Vec<i64> = idx.iter().enumerate().map(|(k, &i)| lists[k][i]).collect();
            let lo = combo.iter().copied().chain([fixed]).min().unwrap();
            let hi = combo.iter().copied().chain([fixed]).max().unwrap();
            if hi - lo < slop {
                return Some(combo);
            }
            let mut k = lists.len();
            loop {
                if k == 0 {
                    return None;
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < lists[k].len() {
                    break;
                }
                idx[k] = 0;
            }
        }
    }

    #[test]
    fn pruned_search_matches_product_order() {
        let mut seed = 7u64;
        let mut rnd = |m: i64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as i64
        };
        for _ in 0..3000 {
            let n_lists = 1 + rnd(5) as usize;
            let slop = 1 + rnd(12);
            let lists: Vec<Vec<i64>> = (0..n_lists)
                .map(|_| (0..1 + rnd(4)).map(|_| rnd(21) - 10).collect())
                .collect();
            let mut cfg = SyncConfig::new(Policy::ApproxPy, n_lists + 1, 5);
            cfg.slop_ns = slop;
            let e = PyApprox::new(&cfg);
            let refs: Vec<&Vec<i64>> = lists.iter().collect();
            assert_eq!(
                e.first_combo(&refs, 0).map(|c| c.to_vec()),
                brute(&lists, 0, slop),
                "{lists:?} slop {slop}"
            );
        }
    }
}
