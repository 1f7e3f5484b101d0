//! Summary statistics of one emulation.

use crate::{Arrival, Policy, QueueOccupancy, SyncConfig, SyncOutcome};
use bagscope_stats::NsSummary;
use serde::Serialize;
use std::collections::BTreeMap;

/// Drops of one topic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopicDrops {
    /// Topic index.
    pub topic: usize,
    /// Messages of the topic.
    pub messages: usize,
    /// Of those, the ones in no emitted set.
    pub dropped: usize,
    /// reason name -> count, sorted by name.
    pub by_reason: BTreeMap<String, usize>,
    /// `never_matched` / `queue_evicted` drops by the input (index) that held no candidate
    /// partner then.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub missing_partner: BTreeMap<usize, usize>,
    /// Spread (stamps, nanoseconds) of the tightest set each `skew_exceeded` drop could have
    /// joined; `None` without such drops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew_span_ns: Option<NsSummary>,
}

/// Summary statistics of one emulation ([`summarize`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncReport {
    /// The policy emulated.
    pub policy: Policy,
    /// Topics synchronized.
    pub n_topics: usize,
    /// Messages per topic, in topic order.
    pub messages_per_topic: Vec<usize>,
    /// Sets emitted.
    pub sets: usize,
    /// sets / messages of the topic with the fewest messages (0 when that is 0).
    pub match_rate: f64,
    /// reason name -> count over all topics, sorted by name.
    pub drops: BTreeMap<String, usize>,
    /// One entry per topic, in topic order.
    pub drops_per_topic: Vec<TopicDrops>,
    /// max − min stamp of each set (the times the synchronizer used); `None` without sets.
    pub span_ns: Option<NsSummary>,
    /// Per topic: member stamp − the set's earliest stamp.
    pub member_offset_ns: Vec<Option<NsSummary>>,
    /// Arrival time of the emitting add() − the set's newest stamp.
    pub emit_age_ns: Option<NsSummary>,
    /// Arrival time of the emitting add() − arrival time of the set's last-arriving member:
    /// how long a complete set waited to be proven (C++ approx), 0 for greedy policies.
    pub emit_wait_ns: Option<NsSummary>,
    /// Per-topic queue occupancy, in topic order.
    pub occupancy: Vec<QueueOccupancy>,
}

/// Match rate as used throughout: sets per message of the sparsest topic.
pub(crate) fn match_rate(sets: usize, messages_per_topic: &[usize]) -> f64 {
    match messages_per_topic.iter().min() {
        Some(&m) if m > 0 => sets as f64 / m as f64,
        _ => 0.0,
    }
}

/// Summarizes `outcome`, the result of emulating `cfg` over `arrivals`.
pub fn summarize(cfg: &SyncConfig, arrivals: &[Arrival], outcome: &SyncOutcome) -> SyncReport {
    let n = outcome.n_topics;
    let mut drops: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_topic: Vec<TopicDrops> = (0..n)
        .map(|k| TopicDrops {
            topic: k,
            messages: outcome.messages_per_topic.get(k).copied().unwrap_or(0),
            dropped: 0,
            by_reason: BTreeMap::new(),
            missing_partner: BTreeMap::new(),
            skew_span_ns: None,
        })
        .collect();
    let mut spans: Vec<Vec<i64>> = vec![Vec::new(); n];
    for d in &outcome.drops {
        *drops.entry(d.reason.as_str().to_string()).or_default() += 1;
        if let Some(t) = per_topic.get_mut(d.topic) {
            t.dropped += 1;
            *t.by_reason
                .entry(d.reason.as_str().to_string())
                .or_default() += 1;
            if let Some(m) = d.missing_topic {
                *t.missing_partner.entry(m).or_default() += 1;
            }
            if let Some(s) = d.span_ns {
                spans[d.topic].push(s);
            }
        }
    }
    for (t, mut s) in per_topic.iter_mut().zip(spans) {
        t.skew_span_ns = NsSummary::of_in_place(&mut s);
    }
    // One statistic at a time through one reused buffer (selection reorders it): the sets can
    // number millions, and one vector per statistic held them all several times over.
    let mut buf: Vec<i64> = Vec::with_capacity(outcome.sets.len());
    let sets = &outcome.sets;
    // Straight from the set list's columns: no set value is built per statistic.
    let min_max = |i: usize| {
        let s = sets.stamps_ns(i);
        (
            s.iter().copied().min().unwrap_or(0),
            s.iter().copied().max().unwrap_or(0),
        )
    };
    let mut summary_of = |value: &dyn Fn(usize) -> Option<i64>| {
        buf.clear();
        buf.extend((0..sets.len()).filter_map(value));
        NsSummary::of_in_place(&mut buf)
    };
    let span_ns = summary_of(&|i| {
        let (lo, hi) = min_max(i);
        Some(hi.saturating_sub(lo))
    });
    let member_offset_ns = (0..n)
        .map(|k| {
            summary_of(&|i| {
                sets.stamps_ns(i)
                    .get(k)
                    .map(|&t| t.saturating_sub(min_max(i).0))
            })
        })
        .collect();
    let emit_age_ns = summary_of(&|i| Some(sets.emit_arrival_ns(i).saturating_sub(min_max(i).1)));
    let emit_wait_ns = summary_of(&|i| {
        let emitted = sets.emit_arrival_ns(i);
        let last_member = sets
            .member_arrivals(i)
            .iter()
            .filter_map(|&ai| arrivals.get(ai as usize).map(|a| a.arrival_ns))
            .max()
            .unwrap_or(emitted);
        Some(emitted.saturating_sub(last_member))
    });
    let _ = cfg;
    SyncReport {
        policy: outcome.policy,
        n_topics: n,
        messages_per_topic: outcome.messages_per_topic.clone(),
        sets: outcome.sets.len(),
        match_rate: match_rate(outcome.sets.len(), &outcome.messages_per_topic),
        drops,
        drops_per_topic: per_topic,
        span_ns,
        member_offset_ns,
        emit_age_ns,
        emit_wait_ns,
        occupancy: outcome.occupancy.clone(),
    }
}
