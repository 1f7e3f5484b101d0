//! Plain-words explanations of a low match rate.

use crate::report::match_rate;
use crate::{Arrival, DropReason, Policy, SyncConfig, SyncOutcome};
use bagscope_stats::{median_streamed, quantile_sorted, quantiles_streamed};
use serde::Serialize;

/// Facts the caller knows and the arrivals cannot show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiagnoseHints {
    /// Topics stamped on different clocks (e.g. sensor time vs system time).
    pub split_clock_axes: bool,
    /// Topics whose messages have no header.
    pub headerless_topics: Vec<usize>,
    /// Below this match rate (0..=1) the cause-finding diagnoses run; default 0.9.
    pub low_match_rate: f64,
}

impl Default for DiagnoseHints {
    fn default() -> Self {
        DiagnoseHints {
            split_clock_axes: false,
            headerless_topics: Vec::new(),
            low_match_rate: 0.9,
        }
    }
}

/// Which cause a [`Diagnosis`] names; diagnoses are sorted in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    /// Some topic has no messages: no set can form.
    TopicEmpty,
    /// Some topic's messages have no header, and the policy refuses them.
    HeaderlessTopic,
    /// The topics are stamped on different clocks (from the hints).
    SplitClockAxes,
    /// An exact policy on sensors stamped independently: few stamps occur on every topic.
    ExactOnIndependentSensors,
    /// A topic arrives later (relative to its stamps) than the queue size's history of
    /// another covers: partners are evicted before it comes.
    QueueBelowCliff,
    /// The slop (or epsilon / max-interval) is below the stamp offset between a topic and its
    /// nearest partners.
    SlopBelowPhaseOffset,
    /// Messages were dropped at a backward clock jump.
    ClockEpochChanged,
    /// Messages were dropped for out-of-order stamps within a topic.
    OutOfOrder,
}

/// One cause of a low match rate, in plain words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The cause.
    pub kind: DiagnosisKind,
    /// Indices of the topics concerned.
    pub topics: Vec<usize>,
    /// The cause and what to change, with the numbers measured.
    pub message: String,
}

use bagscope_types::timefmt::ms_unit as ms;

/// The queue cliff: topic b must keep its messages while topic a's partner is still in
/// flight; a queue shorter than that loses sets.
fn queue_cliff(cfg: &SyncConfig, arrivals: &[Arrival], stamps: &[Vec<i64>]) -> Option<Diagnosis> {
    let n = cfg.n_topics;
    let mut lq: Vec<Option<(i64, i64)>> = Vec::with_capacity(n);
    let mut periods: Vec<Option<i64>> = Vec::with_capacity(n);
    for (k, s) in stamps.iter().enumerate() {
        let lags = || {
            arrivals
                .iter()
                .filter(move |a| a.topic == k)
                .filter_map(|a| a.stamp_ns().map(|s| a.arrival_ns.saturating_sub(s)))
        };
        lq.push(quantiles_streamed(lags, [0.01, 0.99]).map(|[lo, hi]| (lo, hi)));
        periods.push(median_streamed(|| {
            s.windows(2)
                .map(|w| w[1].saturating_sub(w[0]))
                .filter(|&p| p > 0)
        }));
    }
    // LatestTime has no queue.
    let unlimited =
        (cfg.policy == Policy::Exact && cfg.queue_size == 0) || cfg.policy == Policy::Latest;
    if unlimited {
        return None;
    }
    let mut worst: Option<(usize, usize, i64, usize)> = None;
    for a in 0..n {
        for b in 0..n {
            let (Some(la), Some(lb), Some(tb)) = (lq[a], lq[b], periods[b]) else {
                continue;
            };
            if a == b || tb <= 0 {
                continue;
            }
            let d = la.1.saturating_sub(lb.0);
            if d < 0 {
                continue;
            }
            let q = (d / tb) as usize + 1;
            if q > cfg.queue_size && !matches!(worst, Some(w) if q <= w.3) {
                worst = Some((a, b, d, q));
            }
        }
    }
    worst.map(|(a, b, d, q)| Diagnosis {
        kind: DiagnosisKind::QueueBelowCliff,
        topics: vec![a, b],
        message: format!(
            "topic {a} arrives up to {} later (relative to its stamps) than topic {b}; with \
                 queue_size {} topic {b} keeps only ~{} of history, so partners are evicted before \
                 topic {a} arrives; queue_size must be at least {q} (plus a margin)",
            ms(d),
            cfg.queue_size,
            ms(periods[b]
                .unwrap_or(0)
                .saturating_mul(cfg.queue_size as i64)),
        ),
    })
}

/// The tolerance (slop, max interval, epsilon) below the typical offset of the sparsest topic
/// to its nearest partners.
fn slop_below_offset(cfg: &SyncConfig, stamps: &[Vec<i64>], sparse: usize) -> Option<Diagnosis> {
    let n = cfg.n_topics;
    let tolerance = match cfg.policy {
        Policy::ApproxPy if !cfg.sync_arrival_time => Some(cfg.slop_ns),
        Policy::Approx => cfg.max_interval_ns,
        Policy::ApproxEpsilon => Some(cfg.epsilon_ns),
        _ => None,
    };
    let tol = tolerance?;
    let mut needed: Vec<i64> = Vec::with_capacity(stamps[sparse].len());
    for &s in &stamps[sparse] {
        let mut worst = 0i64;
        for (k, other) in stamps.iter().enumerate() {
            if k == sparse || other.is_empty() {
                continue;
            }
            let p = other.partition_point(|&x| x < s);
            let mut best = i64::MAX;
            if p < other.len() {
                best = best.min(other[p].saturating_sub(s));
            }
            if p > 0 {
                best = best.min(s.saturating_sub(other[p - 1]));
            }
            worst = worst.max(best);
        }
        needed.push(worst);
    }
    needed.sort_unstable();
    if !needed.is_empty() {
        let p50 = quantile_sorted(&needed, 0.5);
        let p90 = quantile_sorted(&needed, 0.9);
        if tol <= p90 {
            let name = match cfg.policy {
                Policy::Approx => "max_interval",
                Policy::ApproxEpsilon => "epsilon",
                _ => "slop",
            };
            return Some(Diagnosis {
                kind: DiagnosisKind::SlopBelowPhaseOffset,
                topics: (0..n).collect(),
                message: format!(
                    "{name} {} is below the offset between topic {sparse} and its nearest partners \
                     (median {}, p90 {}); raise it above the p90{}",
                    ms(tol),
                    ms(p50),
                    ms(p90),
                    if cfg.policy == Policy::ApproxPy { " (approx-py needs spread strictly < slop)" } else { "" }
                ),
            });
        }
    }
    None
}

/// Diagnoses sorted by kind. Topic-empty and hint-based ones are always given; the others
/// only when the match rate is below `hints.low_match_rate`.
pub fn diagnose(
    cfg: &SyncConfig,
    arrivals: &[Arrival],
    outcome: &SyncOutcome,
    hints: &DiagnoseHints,
) -> Vec<Diagnosis> {
    let n = cfg.n_topics;
    let mut out = Vec::new();
    let mut counts = vec![0usize; n];
    let mut headerless: Vec<usize> = hints
        .headerless_topics
        .iter()
        .copied()
        .filter(|&k| k < n)
        .collect();
    for a in arrivals.iter().filter(|a| a.topic < n) {
        counts[a.topic] += 1;
        if a.stamp_ns().is_none() {
            headerless.push(a.topic);
        }
    }
    headerless.sort_unstable();
    headerless.dedup();

    let empty: Vec<usize> = (0..n).filter(|&k| counts[k] == 0).collect();
    if !empty.is_empty() {
        out.push(Diagnosis {
            kind: DiagnosisKind::TopicEmpty,
            message: format!("topic(s) {empty:?} have no messages, so no set can ever be formed"),
            topics: empty,
        });
    }
    // LatestTime never reads a stamp.
    let headerless_hurts = cfg.policy != Policy::Latest
        && !(cfg.policy == Policy::ApproxPy && (cfg.allow_headerless || cfg.sync_arrival_time));
    if !headerless.is_empty() && headerless_hurts {
        out.push(Diagnosis {
            kind: DiagnosisKind::HeaderlessTopic,
            message: format!(
                "topic(s) {headerless:?} carry messages without a header; {} refuses them (only approx-py \
                 with allow_headerless or sync_arrival_time keys them on arrival time)",
                cfg.policy
            ),
            topics: headerless,
        });
    }
    if hints.split_clock_axes
        && cfg.policy != Policy::Latest
        && !(cfg.policy == Policy::ApproxPy && cfg.sync_arrival_time)
    {
        out.push(Diagnosis {
            kind: DiagnosisKind::SplitClockAxes,
            topics: (0..n).collect(),
            message: "the topics are stamped on different clocks, so stamp differences contain the clock \
                      offset and no slop or queue size fixes that; fix the driver stamps or key on arrival \
                      time (approx-py sync_arrival_time)"
                .into(),
        });
    }
    let rate = match_rate(outcome.sets.len(), &outcome.messages_per_topic);
    if rate >= hints.low_match_rate || out.iter().any(|d| d.kind == DiagnosisKind::TopicEmpty) {
        out.sort_by_key(|d| d.kind);
        return out;
    }
    // Only a low match rate needs the per-topic stamps, sorted (8 bytes a message); lag
    // quantiles and periods are taken by streamed selection, without copies.
    let mut stamps: Vec<Vec<i64>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
    for a in arrivals.iter().filter(|a| a.topic < n) {
        if let Some(s) = a.stamp_ns() {
            stamps[a.topic].push(s);
        }
    }
    for s in stamps.iter_mut() {
        s.sort_unstable();
        s.shrink_to_fit();
    }
    let sparse = (0..n).min_by_key(|&k| (stamps[k].len(), k)).unwrap_or(0);

    if cfg.policy.is_exact() && !stamps[sparse].is_empty() {
        // Distinct stamps of the sparsest topic found on every other topic (sorted: bisect).
        let mine = &stamps[sparse];
        let distinct = 1 + mine.windows(2).filter(|w| w[0] != w[1]).count();
        let shared = mine
            .iter()
            .enumerate()
            .filter(|&(i, t)| i == 0 || mine[i - 1] != *t)
            .filter(|(_, t)| stamps.iter().all(|s| s.binary_search(t).is_ok()))
            .count();
        if (shared as f64) < 0.1 * distinct as f64 {
            out.push(Diagnosis {
                kind: DiagnosisKind::ExactOnIndependentSensors,
                topics: (0..n).collect(),
                message: format!(
                    "{} needs identical stamps on every topic, but only {shared} of {} stamps of topic \
                     {sparse} occur on all topics: the sensors are stamped independently; use approx or \
                     approx-py",
                    cfg.policy, distinct
                ),
            });
        }
    }

    out.extend(queue_cliff(cfg, arrivals, &stamps));
    out.extend(slop_below_offset(cfg, &stamps, sparse));

    for (kind, reason, what) in [
        (
            DiagnosisKind::ClockEpochChanged,
            DropReason::ClockEpochChanged,
            "a backward clock jump",
        ),
        (
            DiagnosisKind::OutOfOrder,
            DropReason::OutOfOrder,
            "out-of-order stamps within a topic",
        ),
    ] {
        let mut topics: Vec<usize> = outcome
            .drops
            .iter()
            .filter(|d| d.reason == reason)
            .map(|d| d.topic)
            .collect();
        let count = topics.len();
        topics.sort_unstable();
        topics.dedup();
        if count > 0 {
            out.push(Diagnosis {
                kind,
                message: format!("{count} message(s) on topic(s) {topics:?} were lost to {what}"),
                topics,
            });
        }
    }
    out.sort_by_key(|d| d.kind);
    out
}
