//! A small map from stamp to value kept as a sorted ring buffer: the exact policies' queues.
//!
//! Stamps mostly arrive in increasing order and queues are short, so inserting is a push at the
//! back and evicting the oldest a pop at the front; a `BTreeMap` paid node allocation and
//! rebalancing on every message (most of the exact policies' time).

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub(crate) struct SortedQueue<V> {
    items: VecDeque<(i64, V)>,
}

impl<V> Default for SortedQueue<V> {
    fn default() -> Self {
        SortedQueue {
            items: VecDeque::new(),
        }
    }
}

impl<V> SortedQueue<V> {
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The stamps, in increasing order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = i64> + '_ {
        self.items.iter().map(|&(k, _)| k)
    }

    /// The entries, in increasing stamp order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(i64, V)> + '_ {
        self.items.iter()
    }

    fn find(&self, t: i64) -> Result<usize, usize> {
        // Newest first: the usual insert lands at the back.
        match self.items.back() {
            Some(&(last, _)) if last < t => Err(self.items.len()),
            _ => self.items.binary_search_by_key(&t, |&(k, _)| k),
        }
    }

    /// Inserts or replaces; returns the replaced value.
    pub(crate) fn insert(&mut self, t: i64, v: V) -> Option<V> {
        match self.find(t) {
            Ok(i) => Some(std::mem::replace(&mut self.items[i].1, v)),
            Err(i) => {
                self.items.insert(i, (t, v));
                None
            }
        }
    }

    pub(crate) fn get_mut(&mut self, t: i64) -> Option<&mut V> {
        self.find(t).ok().map(|i| &mut self.items[i].1)
    }

    pub(crate) fn contains(&self, t: i64) -> bool {
        self.find(t).is_ok()
    }

    pub(crate) fn remove(&mut self, t: i64) -> Option<V> {
        let i = self.find(t).ok()?;
        self.items.remove(i).map(|(_, v)| v)
    }

    pub(crate) fn pop_first(&mut self) -> Option<(i64, V)> {
        self.items.pop_front()
    }

    /// Removes the entry with the smallest stamp when it is below `t`.
    pub(crate) fn pop_below(&mut self, t: i64) -> Option<(i64, V)> {
        match self.items.front() {
            Some(&(k, _)) if k < t => self.items.pop_front(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Same answers as a BTreeMap under a deterministic mix of every operation.
    #[test]
    fn behaves_like_a_btreemap() {
        let mut q = SortedQueue::default();
        let mut m = BTreeMap::new();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for step in 0..20_000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = (x % 64) as i64 + (step / 50) as i64;
            match x % 6 {
                0 | 1 => assert_eq!(q.insert(t, step), m.insert(t, step)),
                2 => assert_eq!(q.remove(t), m.remove(&t)),
                3 => assert_eq!(q.pop_first(), m.pop_first()),
                4 => {
                    let want = m
                        .first_key_value()
                        .filter(|(&k, _)| k < t)
                        .map(|(&k, &v)| (k, v));
                    if want.is_some() {
                        m.pop_first();
                    }
                    assert_eq!(q.pop_below(t), want);
                }
                _ => {
                    assert_eq!(q.contains(t), m.contains_key(&t));
                    assert_eq!(q.get_mut(t).copied(), m.get(&t).copied());
                }
            }
            assert_eq!(q.len(), m.len());
        }
    }
}
