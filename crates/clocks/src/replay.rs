//! Recognising a recording of a replay.
//!
//! `ros2 bag record` running while `ros2 bag play` replays an older bag stores the replayed
//! messages at the time they were replayed (log time: now) with the stamps they were recorded
//! with (then). Every replayed topic then sits the same days-to-years before log time: one
//! shift for all, which no device clock fault produces across several independent producers.
//! rosbag2's player also publishes `/events/read_split` when it opens the next file, which a
//! recorder of all topics subscribes to and declares in the bag (a message on it is not
//! needed: the channel shows the player was running). Either is evidence; live topics
//! recorded beside the replayed ones keep stamps near their log times and are not part of the
//! finding. Only topics at least [`REPLAY_MIN_SHIFT_NS`] (1 h) behind log time can be the
//! replay's: a device clock a few seconds or minutes off beside a replay stays a clock offset.
//! A single topic days behind without the event stays a clock offset too: it may be a device
//! clock.

use serde::Serialize;

/// A bag recorded while an older recording was replayed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayedRecording {
    /// Median over the replayed topics of their clock offset (stamp − log time): negative,
    /// the time between the original recording and its replay.
    pub offset_ns: i64,
    /// Topics whose stamps carry that shift, sorted.
    pub topics: Vec<String>,
    /// What shows it, in words.
    pub evidence: Vec<String>,
}

/// A replayed topic's stamps sit at least this far (1 h) behind log time: minutes could still
/// be two devices' clocks set by hand alike, or one device's clock beside a replay.
pub(crate) const REPLAY_MIN_SHIFT_NS: i64 = 3_600_000_000_000;

/// Offsets of one replay agree within this (10 s): per-topic offsets are medians of stamp −
/// log time, which differ between topics by their lags (ms to a few s on a loaded replay).
pub(crate) const REPLAY_AGREE_NS: i64 = 10_000_000_000;

/// Finds the replay among the topics' clock offsets (stamp − log time of topics whose stamps
/// are more than the offset threshold from the recorder, aggregates excluded).
/// `replay_events`: names of the replay-event topics the bag declares (`/events/read_split`).
/// Only offsets at least [`REPLAY_MIN_SHIFT_NS`] behind log time are candidates.
pub(crate) fn detect(
    offsets: &[(String, i64)],
    replay_events: &[String],
) -> Option<ReplayedRecording> {
    let mut cands: Vec<(i64, &str)> = offsets
        .iter()
        .filter(|(_, o)| *o <= -REPLAY_MIN_SHIFT_NS)
        .map(|(t, o)| (*o, t.as_str()))
        .collect();
    if cands.is_empty() {
        return None;
    }
    cands.sort();
    // The largest group of offsets within REPLAY_AGREE_NS of each other (ties: the first, i.e.
    // the largest shift), by a sliding window over the sorted offsets.
    let (mut best_lo, mut best_len) = (0usize, 0usize);
    let mut lo = 0usize;
    for hi in 0..cands.len() {
        while cands[hi].0.saturating_sub(cands[lo].0) > REPLAY_AGREE_NS {
            lo += 1;
        }
        if hi + 1 - lo > best_len {
            best_len = hi + 1 - lo;
            best_lo = lo;
        }
    }
    let group = &cands[best_lo..best_lo + best_len];
    let offset_ns = group[group.len() / 2].0;
    let mut evidence = Vec::new();
    if !replay_events.is_empty() {
        evidence.push(format!(
            "{} recorded (rosbag2's player publishes it while replaying)",
            replay_events.join(", ")
        ));
    }
    let shared = group.len() >= 2;
    if shared {
        evidence.push(format!(
            "{} topics share one shift of their stamps before log time ({:.0} s, within {} s)",
            group.len(),
            offset_ns as f64 / 1e9,
            REPLAY_AGREE_NS / 1_000_000_000
        ));
    }
    if !shared && replay_events.is_empty() {
        return None;
    }
    let mut topics: Vec<String> = group.iter().map(|(_, t)| t.to_string()).collect();
    topics.sort();
    Some(ReplayedRecording {
        offset_ns,
        topics,
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000_000_000;

    fn offs(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(t, o)| (t.to_string(), *o)).collect()
    }

    #[test]
    fn a_shared_shift_of_days_is_a_replay() {
        let r = detect(
            &offs(&[
                ("/imu", -840 * DAY),
                ("/pose", -840 * DAY + 3_000_000_000),
                ("/gps", 5_000_000_000),
            ]),
            &[],
        )
        .expect("replay");
        assert_eq!(r.topics, vec!["/imu", "/pose"]);
        assert!((r.offset_ns + 840 * DAY).abs() < 4_000_000_000);
    }

    #[test]
    fn one_offset_topic_needs_the_replay_event() {
        assert!(detect(&offs(&[("/imu", -3 * DAY)]), &[]).is_none());
        let r = detect(&offs(&[("/imu", -3 * DAY)]), &["/events/read_split".into()]).unwrap();
        assert_eq!(r.topics, vec!["/imu"]);
    }

    #[test]
    fn with_the_event_only_topics_an_hour_behind_are_the_replays() {
        let ev = ["/events/read_split".to_string()];
        let r = detect(
            &offs(&[
                ("/old", -3 * DAY),
                ("/device_a", -5_000_000_000),
                ("/device_b", -5_000_000_000),
                ("/ahead", 3 * DAY),
            ]),
            &ev,
        )
        .unwrap();
        assert_eq!(r.topics, vec!["/old"]);
        assert_eq!(r.offset_ns, -3 * DAY);
        // Offsets under an hour are no replay, with the event or without.
        assert!(detect(&offs(&[("/device_a", -59 * 60_000_000_000)]), &ev).is_none());
    }

    #[test]
    fn disagreeing_or_small_offsets_are_not_a_replay() {
        assert!(detect(&offs(&[("/a", -3 * DAY), ("/b", -5 * DAY)]), &[]).is_none());
        assert!(detect(
            &offs(&[("/a", -60_000_000_000), ("/b", -60_000_000_000)]),
            &[]
        )
        .is_none());
        // Stamps ahead of the recorder are not a replay's shift.
        assert!(detect(&offs(&[("/a", 3 * DAY), ("/b", 3 * DAY)]), &[]).is_none());
    }
}
