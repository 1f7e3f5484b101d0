//! The emitted sets of one emulation, stored by column.
//!
//! A bag yields about one set per message of its slowest topic, so the list grows with the
//! bag. One [`EmittedSet`] value costs 112 bytes; stored by column with 32-bit indices a
//! set of `n` members costs `12 + 16·n` bytes (44 for two topics). Sets are handed out as
//! [`EmittedSet`] values built on demand.

use crate::rows::Rows;
use crate::{EmittedSet, PerMember};

/// Emitted sets in emit (callback) order; every set has one member per topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetList {
    n_members: usize,
    members: Vec<u32>,
    member_arrivals: Vec<u32>,
    stamps_ns: Vec<i64>,
    emit_after_arrival: Vec<u32>,
    emit_arrival_ns: Vec<i64>,
}

impl SetList {
    /// An empty list of sets of `n_members` members each.
    pub fn new(n_members: usize) -> Self {
        SetList {
            n_members,
            members: Vec::new(),
            member_arrivals: Vec::new(),
            stamps_ns: Vec::new(),
            emit_after_arrival: Vec::new(),
            emit_arrival_ns: Vec::new(),
        }
    }

    /// Sets held.
    pub fn len(&self) -> usize {
        self.emit_after_arrival.len()
    }

    /// True when no set was emitted.
    pub fn is_empty(&self) -> bool {
        self.emit_after_arrival.is_empty()
    }

    /// Members per set (the number of topics).
    pub fn n_members(&self) -> usize {
        self.n_members
    }

    /// Set `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<EmittedSet> {
        if i >= self.len() {
            return None;
        }
        let r = i * self.n_members..(i + 1) * self.n_members;
        Some(EmittedSet {
            members: self.members[r.clone()]
                .iter()
                .map(|&x| x as usize)
                .collect(),
            member_arrivals: self.member_arrivals[r.clone()]
                .iter()
                .map(|&x| x as usize)
                .collect(),
            stamps_ns: PerMember::from_slice(&self.stamps_ns[r]),
            emit_after_arrival: self.emit_after_arrival[i] as usize,
            emit_arrival_ns: self.emit_arrival_ns[i],
        })
    }

    /// The sets in emit order.
    pub fn iter(&self) -> Rows<'_, Self> {
        Rows::new(self)
    }

    /// The sync times of set `i`'s members, in topic order (no set value built).
    pub fn stamps_ns(&self, i: usize) -> &[i64] {
        &self.stamps_ns[i * self.n_members..(i + 1) * self.n_members]
    }

    /// The input indices of set `i`'s members, in topic order (no set value built).
    pub fn member_arrivals(&self, i: usize) -> &[u32] {
        &self.member_arrivals[i * self.n_members..(i + 1) * self.n_members]
    }

    /// Arrival time of the message whose `add()` emitted set `i`.
    pub fn emit_arrival_ns(&self, i: usize) -> i64 {
        self.emit_arrival_ns[i]
    }

    /// Appends a set. Indices must fit in 32 bits ([`crate::emulate`] checks the input).
    pub(crate) fn push(
        &mut self,
        members: impl IntoIterator<Item = (usize, usize, i64)>,
        emit_after_arrival: usize,
        emit_arrival_ns: i64,
    ) {
        let before = self.member_arrivals.len();
        for (index, arrival, stamp) in members {
            self.members.push(index as u32);
            self.member_arrivals.push(arrival as u32);
            self.stamps_ns.push(stamp);
        }
        debug_assert_eq!(self.member_arrivals.len() - before, self.n_members);
        self.emit_after_arrival.push(emit_after_arrival as u32);
        self.emit_arrival_ns.push(emit_arrival_ns);
    }
}

crate::rows::row_list!(SetList, EmittedSet);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_sets() {
        let mut l = SetList::new(2);
        l.push([(0, 3, 100), (0, 4, 90)], 4, 1_000);
        l.push([(1, 5, 200), (1, 7, 210)], 7, 2_000);
        assert_eq!(l.len(), 2);
        let s = l.get(1).unwrap();
        assert_eq!(s.members.as_slice(), [1, 1]);
        assert_eq!(s.member_arrivals.as_slice(), [5, 7]);
        assert_eq!(s.stamps_ns.as_slice(), [200, 210]);
        assert_eq!((s.emit_after_arrival, s.emit_arrival_ns), (7, 2_000));
        assert_eq!(l.stamps_ns(0), [100, 90]);
        assert!(l.get(2).is_none());
        let all: Vec<EmittedSet> = l.iter().collect();
        assert!(l == all[..]);
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            serde_json::to_value(&all).unwrap()
        );
    }
}
