//! One synchronizer whose queues are flushed at given points of the input (a clock jump back,
//! a publisher restart): what a node that resets its synchronizer on an epoch change does.

use crate::{
    emulate, Arrival, DropList, DropReason, DroppedMessage, QueueOccupancy, SetList, SyncConfig,
    SyncError, SyncOutcome,
};

/// [`emulate`] with the synchronizer's queues flushed before each arrival index in
/// `flush_before` (ascending; out-of-range and repeated entries are ignored). Each stretch
/// between flushes is fed to a fresh synchronizer, so nothing pairs across a flush and every
/// topic must arrive again before a set can form (warm-up). Messages still held at a flush
/// are dropped as [`DropReason::ClockEpochChanged`] (those held at the end of the input keep
/// `never_matched`); a stretch in which some topic has no message drops its messages as
/// `clock_epoch_changed` too, unless it is the last (then `topic_empty`, as [`emulate`]).
///
/// Indices in the outcome (per-topic indices, input indices, emit positions) refer to the
/// whole input, as if one synchronizer had run over it. Queue occupancy: the largest of the
/// stretches' maxima and the mean weighted by their lengths.
pub fn emulate_flushed(
    cfg: &SyncConfig,
    arrivals: &[Arrival],
    flush_before: &[usize],
) -> Result<SyncOutcome, SyncError> {
    let mut cuts: Vec<usize> = flush_before
        .iter()
        .copied()
        .filter(|&c| c > 0 && c < arrivals.len())
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    if cuts.is_empty() {
        return emulate(cfg, arrivals);
    }
    cfg.validate()?;
    let n = cfg.n_topics;
    let mut bounds = vec![0usize];
    bounds.extend(cuts);
    bounds.push(arrivals.len());
    let mut sets = SetList::new(n);
    let mut drops: Vec<DroppedMessage> = Vec::new();
    let mut messages_per_topic = vec![0usize; n];
    let mut occ_max = vec![0usize; n];
    let mut occ_sum = vec![0f64; n];
    let last = bounds.len() - 2;
    for (s, w) in bounds.windows(2).enumerate() {
        let (a, b) = (w[0], w[1]);
        let part = &arrivals[a..b];
        let base = messages_per_topic.clone();
        let out = emulate(cfg, part)?;
        for set in out.sets.iter() {
            sets.push(
                (0..n).map(|k| {
                    (
                        set.members[k] + base[k],
                        set.member_arrivals[k] + a,
                        set.stamps_ns[k],
                    )
                }),
                set.emit_after_arrival + a,
                set.emit_arrival_ns,
            );
        }
        for d in out.drops.iter() {
            let reason = match d.reason {
                DropReason::NeverMatched | DropReason::TopicEmpty if s < last => {
                    DropReason::ClockEpochChanged
                }
                r => r,
            };
            drops.push(DroppedMessage {
                index: d.index + base[d.topic],
                arrival_index: d.arrival_index + a,
                reason,
                span_ns: if reason == d.reason { d.span_ns } else { None },
                missing_topic: if reason == d.reason {
                    d.missing_topic
                } else {
                    None
                },
                ..d
            });
        }
        for k in 0..n {
            messages_per_topic[k] += out.messages_per_topic[k];
            occ_max[k] = occ_max[k].max(out.occupancy[k].max);
            occ_sum[k] += out.occupancy[k].mean * part.len() as f64;
        }
    }
    drops.sort_by_key(|d| (d.topic, d.index));
    let mut per_topic = vec![0usize; n];
    for d in &drops {
        per_topic[d.topic] += 1;
    }
    let mut list = DropList::with_counts(&per_topic);
    let mut seen = vec![0usize; n];
    for d in &drops {
        list.set(d.topic, seen[d.topic], d);
        seen[d.topic] += 1;
    }
    let total = arrivals.len().max(1) as f64;
    Ok(SyncOutcome {
        policy: cfg.policy,
        n_topics: n,
        messages_per_topic,
        sets,
        drops: list,
        occupancy: (0..n)
            .map(|k| QueueOccupancy {
                topic: k,
                max: occ_max[k],
                mean: occ_sum[k] / total,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    const MS: i64 = 1_000_000;

    fn cfg() -> SyncConfig {
        let mut c = SyncConfig::new(Policy::ApproxPy, 2, 5);
        c.slop_ns = 10 * MS;
        c
    }

    #[test]
    fn no_flush_is_emulate() {
        let arr: Vec<Arrival> = (0..10)
            .map(|i| Arrival::new(i % 2, Some((i / 2) as i64 * 100 * MS), i as i64 * MS))
            .collect();
        assert_eq!(
            emulate_flushed(&cfg(), &arr, &[]).unwrap(),
            emulate(&cfg(), &arr).unwrap()
        );
    }

    #[test]
    fn held_messages_are_flushed_and_nothing_pairs_across() {
        // Topic 0 at 0, 100, 200 ms; topic 1 only at 0 and 100 ms before the flush; after the
        // flush (stamps back at 0) topic 1 arrives first, then topic 0.
        let arr = vec![
            Arrival::new(0, Some(0), 1),
            Arrival::new(1, Some(0), 2),
            Arrival::new(0, Some(100 * MS), 3),
            Arrival::new(0, Some(200 * MS), 4),
            // flush before index 4
            Arrival::new(1, Some(5 * MS), 5),
            Arrival::new(0, Some(4 * MS), 6),
            Arrival::new(1, Some(100 * MS), 7),
        ];
        let out = emulate_flushed(&cfg(), &arr, &[4]).unwrap();
        let sets: Vec<_> = out.sets.iter().collect();
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].members.as_slice(), [0, 0]);
        // Per-topic indices and input indices are global.
        assert_eq!(sets[1].members.as_slice(), [3, 1]);
        assert_eq!(sets[1].member_arrivals.as_slice(), [5, 4]);
        assert_eq!(sets[1].emit_after_arrival, 5);
        let drops: Vec<_> = out
            .drops
            .iter()
            .map(|d| (d.topic, d.index, d.reason))
            .collect();
        assert_eq!(
            drops,
            [
                (0, 1, DropReason::ClockEpochChanged),
                (0, 2, DropReason::ClockEpochChanged),
                (1, 2, DropReason::NeverMatched),
            ]
        );
        assert_eq!(out.messages_per_topic, [4, 3]);
        // Without the flush, the 200 ms message of topic 0 stays held and nothing is called
        // clock_epoch_changed by the flush rule.
        let plain = emulate(&cfg(), &arr).unwrap();
        assert!(plain.sets.len() >= 2);
    }

    #[test]
    fn a_stretch_missing_a_topic_is_flushed_not_empty() {
        let arr = vec![
            Arrival::new(0, Some(0), 1),
            Arrival::new(0, Some(100 * MS), 2),
            Arrival::new(0, Some(0), 3),
            Arrival::new(1, Some(0), 4),
        ];
        let out = emulate_flushed(&cfg(), &arr, &[2, 2, 99]).unwrap();
        assert_eq!(out.sets.len(), 1);
        let reasons: Vec<_> = out.drops.iter().map(|d| d.reason).collect();
        assert_eq!(reasons, [DropReason::ClockEpochChanged; 2]);
    }
}
