//! Freshness checks a synchronizer callback typically makes before using a set. They run *after*
//! the policy (the set was emitted and its messages consumed), so rejected sets are counted
//! apart from the pairing drops:
//!
//! * `stale_at_emit`: emit log time − the anchor member's stamp > `max_age_ns`;
//! * `frame_unavailable`: some member's transform to the target frame could not be looked up at
//!   its own stamp when the set was emitted (decided by the caller, e.g. from TF data).
//!
//! A set failing both is counted once, as `stale_at_emit` (the cheaper check comes first).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::SyncOutcome;

/// Why an emitted set was rejected by a freshness check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetRejection {
    /// Emit log time − the anchor member's stamp exceeded `max_age_ns`.
    StaleAtEmit,
    /// Some member's transform to the target frame could not be looked up at its stamp when
    /// the set was emitted.
    FrameUnavailable,
}

impl SetRejection {
    /// The reason's snake_case name, as serialized and used for the count keys.
    pub fn as_str(self) -> &'static str {
        match self {
            SetRejection::StaleAtEmit => "stale_at_emit",
            SetRejection::FrameUnavailable => "frame_unavailable",
        }
    }
}

/// The freshness checks to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FreshnessConfig {
    /// Topic index whose stamp a set's age is measured from.
    pub anchor: usize,
    /// Largest age accepted, in nanoseconds: emit log time − the anchor's header stamp;
    /// `None` = no age check.
    pub max_age_ns: Option<i64>,
}

/// One emitted set a check rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedSet {
    /// Index into `SyncOutcome::sets`.
    pub set: usize,
    /// The check it failed (the age check first).
    pub reason: SetRejection,
    /// emit log time − anchor stamp, in nanoseconds (the anchor stamp is the earliest member's
    /// when the anchor index is out of range).
    pub anchor_age_ns: i64,
    /// For `frame_unavailable`: the first member (topic index) that failed.
    pub topic: Option<usize>,
}

/// What the freshness checks left of an emulation's sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FreshnessReport {
    /// [`FreshnessConfig::anchor`] as applied.
    pub anchor: usize,
    /// [`FreshnessConfig::max_age_ns`] as applied.
    pub max_age_ns: Option<i64>,
    /// Sets the synchronizer emitted.
    pub emitted_sets: usize,
    /// Sets that passed every check.
    pub accepted_sets: usize,
    /// reason → count, sorted.
    pub rejected: BTreeMap<String, usize>,
    /// In emit order.
    pub rejected_sets: Vec<RejectedSet>,
}

/// `frame_ok(set, member)`: whether member `member` (topic index) of set `set` could be
/// transformed at emit time; pass `|_, _| true` when no frame check is wanted.
pub fn apply_freshness(
    outcome: &SyncOutcome,
    cfg: &FreshnessConfig,
    frame_ok: &dyn Fn(usize, usize) -> bool,
) -> FreshnessReport {
    let mut rejected = BTreeMap::new();
    let mut rejected_sets = Vec::new();
    for (i, s) in outcome.sets.iter().enumerate() {
        let anchor_stamp = s
            .stamps_ns
            .get(cfg.anchor)
            .copied()
            .unwrap_or_else(|| s.min_stamp_ns());
        let age = s.emit_arrival_ns.saturating_sub(anchor_stamp);
        let reason = if cfg.max_age_ns.is_some_and(|m| age > m) {
            Some((SetRejection::StaleAtEmit, None))
        } else {
            (0..s.stamps_ns.len())
                .find(|&k| !frame_ok(i, k))
                .map(|k| (SetRejection::FrameUnavailable, Some(k)))
        };
        if let Some((reason, topic)) = reason {
            *rejected.entry(reason.as_str().to_string()).or_default() += 1;
            rejected_sets.push(RejectedSet {
                set: i,
                reason,
                anchor_age_ns: age,
                topic,
            });
        }
    }
    FreshnessReport {
        anchor: cfg.anchor,
        max_age_ns: cfg.max_age_ns,
        emitted_sets: outcome.sets.len(),
        accepted_sets: outcome.sets.len() - rejected_sets.len(),
        rejected,
        rejected_sets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{emulate, Arrival, Policy, SyncConfig};

    #[test]
    fn stale_and_frame_rejections_are_counted_apart() {
        let ms = 1_000_000i64;
        let mut arr = Vec::new();
        for k in 0..5i64 {
            let s = 1000 * ms + k * 100 * ms;
            // The last set completes 300 ms after its stamp (an earlier late one would be purged
            // by the exact policy once the next stamp completes).
            let late = if k == 4 { 300 * ms } else { 5 * ms };
            arr.push(Arrival::new(0, Some(s), s + ms));
            arr.push(Arrival::new(1, Some(s), s + late));
        }
        arr.sort_by_key(|a| a.arrival_ns);
        let out = emulate(&SyncConfig::new(Policy::Exact, 2, 10), &arr).unwrap();
        assert_eq!(out.sets.len(), 5);
        let cfg = FreshnessConfig {
            anchor: 0,
            max_age_ns: Some(100 * ms),
        };
        let r = apply_freshness(&out, &cfg, &|set, member| !(set == 3 && member == 1));
        assert_eq!(r.accepted_sets, 3);
        assert_eq!(r.rejected.get("stale_at_emit"), Some(&1));
        assert_eq!(r.rejected.get("frame_unavailable"), Some(&1));
        assert_eq!(r.rejected_sets[0].topic, Some(1));
        assert_eq!(r.rejected_sets[1].reason, SetRejection::StaleAtEmit);
        assert!(out.drops.is_empty());
    }
}
