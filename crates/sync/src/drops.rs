//! The dropped messages of one emulation, stored by column.
//!
//! When one topic is much faster than another (a 50 kHz state topic synchronised with a 10 Hz
//! camera), nearly every message drops: the list is as long as the bag. One
//! [`DroppedMessage`] value costs 80 bytes; stored by column, sorted by topic (so the topic
//! is a range, not a field), a drop costs 25 bytes. Drops are handed out as
//! [`DroppedMessage`] values built on demand.

use crate::rows::Rows;
use crate::{DropReason, DroppedMessage};

/// Every [`DropReason`], by its stored code.
const REASONS: [DropReason; 9] = [
    DropReason::QueueEvicted,
    DropReason::SkewExceeded,
    DropReason::OutOfOrder,
    DropReason::DuplicateMember,
    DropReason::ClockEpochChanged,
    DropReason::NeverMatched,
    DropReason::TopicEmpty,
    DropReason::HeaderlessRejected,
    DropReason::InvalidStamp,
];

/// Set in a stored code when the message had a stamp.
const HAS_STAMP: u8 = 0x80;

/// The stored code of a reason: its declaration order, which `REASONS` follows (tested).
fn code(r: DropReason) -> u8 {
    r as u8
}

/// Dropped messages sorted by (topic, index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropList {
    /// Drops of topic `k` are `topic_start[k]..topic_start[k + 1]`.
    topic_start: Vec<usize>,
    index: Vec<u32>,
    arrival_index: Vec<u32>,
    stamp_ns: Vec<i64>,
    code: Vec<u8>,
    /// The span of a `skew_exceeded` drop, or the missing topic of a `never_matched` /
    /// `queue_evicted` one; `NO_DETAIL` otherwise.
    detail: Vec<i64>,
}

const NO_DETAIL: i64 = i64::MIN;

impl DropList {
    /// Room for exactly `per_topic[k]` drops of each topic `k`, to be filled by
    /// [`DropList::set`] (each slot written once).
    pub(crate) fn with_counts(per_topic: &[usize]) -> Self {
        let mut topic_start = Vec::with_capacity(per_topic.len() + 1);
        let mut total = 0usize;
        topic_start.push(0);
        for &c in per_topic {
            total += c;
            topic_start.push(total);
        }
        DropList {
            topic_start,
            index: vec![0; total],
            arrival_index: vec![0; total],
            stamp_ns: vec![0; total],
            code: vec![0; total],
            detail: vec![NO_DETAIL; total],
        }
    }

    /// Writes drop number `i` of `topic` (0-based within the topic).
    pub(crate) fn set(&mut self, topic: usize, i: usize, d: &DroppedMessage) {
        let at = self.topic_start[topic] + i;
        debug_assert!(at < self.topic_start[topic + 1]);
        self.index[at] = d.index as u32;
        self.arrival_index[at] = d.arrival_index as u32;
        self.stamp_ns[at] = d.stamp_ns.unwrap_or(0);
        self.code[at] = code(d.reason) | if d.stamp_ns.is_some() { HAS_STAMP } else { 0 };
        self.detail[at] = match (d.span_ns, d.missing_topic) {
            (Some(s), _) => s,
            (None, Some(t)) => t as i64,
            (None, None) => NO_DETAIL,
        };
    }

    /// Drops held.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// True when no message was dropped.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }

    /// Drop `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<DroppedMessage> {
        let c = *self.code.get(i)?;
        // The last topic whose range starts at or before `i` (empty topics share starts).
        let topic = self.topic_start.partition_point(|&s| s <= i) - 1;
        let reason = REASONS[(c & !HAS_STAMP) as usize];
        let detail = (self.detail[i] != NO_DETAIL).then_some(self.detail[i]);
        let (span_ns, missing_topic) = match reason {
            DropReason::SkewExceeded => (detail, None),
            _ => (None, detail.map(|t| t as usize)),
        };
        Some(DroppedMessage {
            topic,
            index: self.index[i] as usize,
            arrival_index: self.arrival_index[i] as usize,
            stamp_ns: (c & HAS_STAMP != 0).then_some(self.stamp_ns[i]),
            reason,
            span_ns,
            missing_topic,
        })
    }

    /// Number of drops of `topic`.
    pub fn count_of_topic(&self, topic: usize) -> usize {
        match (self.topic_start.get(topic), self.topic_start.get(topic + 1)) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        }
    }

    /// The reason of drop `i` (no value built).
    pub fn reason(&self, i: usize) -> DropReason {
        REASONS[(self.code[i] & !HAS_STAMP) as usize]
    }

    /// The drops in (topic, index) order.
    pub fn iter(&self) -> Rows<'_, Self> {
        Rows::new(self)
    }
}

crate::rows::row_list!(DropList, DroppedMessage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_drops_and_empty_topics() {
        let d = |topic, index, stamp_ns, reason| DroppedMessage {
            topic,
            index,
            arrival_index: 10 * topic + index,
            stamp_ns,
            reason,
            span_ns: None,
            missing_topic: None,
        };
        let want = vec![
            d(0, 1, Some(-5), DropReason::QueueEvicted),
            d(0, 2, None, DropReason::HeaderlessRejected),
            DroppedMessage {
                span_ns: Some(0),
                ..d(2, 0, Some(0), DropReason::SkewExceeded)
            },
            DroppedMessage {
                missing_topic: Some(3),
                ..d(2, 3, Some(i64::MAX), DropReason::NeverMatched)
            },
        ];
        let mut l = DropList::with_counts(&[2, 0, 2, 0]);
        for (k, topic) in [(0usize, 0usize), (1, 0), (0, 2), (1, 2)] {
            l.set(topic, k, &want[if topic == 0 { k } else { 2 + k }]);
        }
        assert!(l == want[..]);
        assert_eq!(l.count_of_topic(1), 0);
        assert_eq!(l.count_of_topic(2), 2);
        assert_eq!(l.count_of_topic(9), 0);
        assert_eq!(l.reason(1), DropReason::HeaderlessRejected);
        assert_eq!(l.get(4), None);
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            serde_json::to_value(&want).unwrap()
        );
        for r in REASONS {
            assert_eq!(REASONS[code(r) as usize], r);
            assert_eq!(code(r) & HAS_STAMP, 0);
        }
    }
}
