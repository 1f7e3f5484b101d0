//! Stamp-series health: period, backward jumps, reorderings, duplicates, gaps.

use serde::Serialize;

/// A stamp that went backward by more than the jump threshold (e.g. a simulator reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct BackwardJump {
    /// Log time of the message whose stamp jumped back.
    pub log_time_ns: i64,
    /// Stamp of the previous message.
    pub from_ns: i64,
    /// Stamp of this message.
    pub to_ns: i64,
}

/// An interval between consecutive messages longer than `gap_factor` × the median period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Gap {
    /// Log time of the message that ended the gap.
    pub log_time_ns: i64,
    /// Time (on the series' own axis) of the message before the gap.
    pub from_ns: i64,
    /// Time of the message that ended the gap.
    pub to_ns: i64,
    /// Length of the gap: `to_ns − from_ns`, ns.
    pub interval_ns: i64,
}

/// Health counters of one time series in arrival order.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Health {
    pub median_period_ns: Option<i64>,
    pub jump_threshold_ns: i64,
    pub non_monotonic: usize,
    pub duplicates: usize,
    pub backward_jumps: Vec<BackwardJump>,
    pub gap_count: usize,
    pub gaps: Vec<Gap>,
}

pub(crate) struct HealthParams {
    pub gap_factor: f64,
    pub max_gaps: usize,
    pub jump_min_ns: i64,
    pub jump_periods: f64,
    pub jump_cap_ns: i64,
}

/// When a backward step of a time series is a jump (a simulator reset, a clock step) rather
/// than a jitter reordering: the rule of `clock_jump_back`, for topics' stamps, `/clock` and
/// TF edges alike (see [`crate::ClocksOptions::jump_periods`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JumpRule {
    /// A backward step is a jump when larger than this many median periods ...
    pub periods: f64,
    /// ... at least this (ns) ...
    pub min_ns: i64,
    /// ... and at most this (ns).
    pub cap_ns: i64,
}

impl Default for JumpRule {
    fn default() -> Self {
        JumpRule {
            periods: crate::DEFAULT_JUMP_PERIODS,
            min_ns: crate::DEFAULT_JUMP_MIN_NS,
            cap_ns: crate::DEFAULT_JUMP_CAP_NS,
        }
    }
}

/// The backward jumps of one time series ([`backward_jumps`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Jumps {
    /// Backward steps larger than this are jumps, ns.
    pub threshold_ns: i64,
    /// The jumps, in arrival order.
    pub jumps: Vec<BackwardJump>,
}

/// Backward jumps of `t` (times in arrival order; `log` the matching log times, same length)
/// by `rule`: the threshold from the series' own median period, as for every topic's stamps.
pub fn backward_jumps(t: &[i64], log: &[i64], rule: &JumpRule) -> Jumps {
    let h = analyse(
        t,
        log,
        &HealthParams {
            gap_factor: 3.0,
            max_gaps: 0,
            jump_min_ns: rule.min_ns,
            jump_periods: rule.periods,
            jump_cap_ns: rule.cap_ns,
        },
    );
    Jumps {
        threshold_ns: h.jump_threshold_ns,
        jumps: h.backward_jumps,
    }
}

/// Median of the strictly positive consecutive differences: the nominal period, unaffected by
/// resets, reorderings and duplicates. Streamed selection: no copy of the differences.
pub(crate) fn median_positive_period(t: &[i64]) -> Option<i64> {
    bagscope_stats::median_streamed(|| {
        t.windows(2)
            .map(|w| w[1].saturating_sub(w[0]))
            .filter(|&d| d > 0)
    })
}

/// Backward-jump threshold: `jump_periods` median periods, at least `jump_min_ns` (so jitter
/// reorderings on fast topics stay "non-monotonic") and at most `jump_cap_ns` (so a reset on a
/// slow topic is still a jump).
pub(crate) fn jump_threshold(period: Option<i64>, p: &HealthParams) -> i64 {
    let by_period = period
        .map(|d| (d as f64 * p.jump_periods).min(i64::MAX as f64) as i64)
        .unwrap_or(0);
    by_period.min(p.jump_cap_ns).max(p.jump_min_ns)
}

/// Analyse `t` (times in arrival order), with `log` the matching log times (same length).
pub(crate) fn analyse(t: &[i64], log: &[i64], p: &HealthParams) -> Health {
    let period = median_positive_period(t);
    let thr = jump_threshold(period, p);
    let mut h = Health {
        median_period_ns: period,
        jump_threshold_ns: thr,
        ..Default::default()
    };
    let gap_thr = period.map(|d| d as f64 * p.gap_factor);
    let mut gaps = Vec::new();
    for i in 1..t.len() {
        let d = t[i].saturating_sub(t[i - 1]);
        if d == 0 {
            h.duplicates += 1;
        } else if d < 0 {
            if d < -thr {
                h.backward_jumps.push(BackwardJump {
                    log_time_ns: log.get(i).copied().unwrap_or(0),
                    from_ns: t[i - 1],
                    to_ns: t[i],
                });
            } else {
                h.non_monotonic += 1;
            }
        } else if let Some(g) = gap_thr {
            if d as f64 > g {
                gaps.push(Gap {
                    log_time_ns: log.get(i).copied().unwrap_or(0),
                    from_ns: t[i - 1],
                    to_ns: t[i],
                    interval_ns: d,
                });
            }
        }
    }
    h.gap_count = gaps.len();
    // Keep the largest few (ties: earliest first), then list them chronologically.
    gaps.sort_by(|a, b| {
        b.interval_ns
            .cmp(&a.interval_ns)
            .then(a.log_time_ns.cmp(&b.log_time_ns))
    });
    gaps.truncate(p.max_gaps);
    gaps.sort();
    h.gaps = gaps;
    h
}

/// Indices at which a new epoch starts (each backward jump), for a series in arrival order.
pub(crate) fn jump_indices(t: &[i64], thr: i64) -> Vec<usize> {
    (1..t.len())
        .filter(|&i| t[i].saturating_sub(t[i - 1]) < -thr)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> HealthParams {
        HealthParams {
            gap_factor: 3.0,
            max_gaps: 5,
            jump_min_ns: 100_000_000,
            jump_periods: 5.0,
            jump_cap_ns: 1_000_000_000,
        }
    }

    #[test]
    fn counts_reorder_duplicate_jump_gap() {
        let p = 10_000_000;
        let mut t: Vec<i64> = (0..100).map(|i| i * p).collect();
        t.swap(10, 11); // reorder: one backward step of 10 ms
        t[20] = t[19]; // duplicate
        for x in t.iter_mut().skip(50) {
            *x -= 400_000_000; // reset-like jump back 0.4 s
        }
        t.remove(80); // no gap of 2 periods: below 3x
        for x in t.iter_mut().skip(90) {
            *x += 100_000_000; // 10-period gap
        }
        let log: Vec<i64> = (0..t.len() as i64).collect();
        let h = analyse(&t, &log, &params());
        assert_eq!(h.median_period_ns, Some(p));
        assert_eq!(h.non_monotonic, 1);
        assert_eq!(h.duplicates, 1);
        assert_eq!(h.backward_jumps.len(), 1);
        assert_eq!(h.backward_jumps[0].log_time_ns, 50);
        assert_eq!(h.gap_count, 1);
        assert_eq!(h.gaps[0].log_time_ns, 90);
    }

    #[test]
    fn extremes() {
        let t = [i64::MAX, i64::MIN, i64::MAX, 0];
        let h = analyse(&t, &[0, 1, 2, 3], &params());
        assert_eq!(h.backward_jumps.len(), 2);
        assert!(analyse(&[], &[], &params()).backward_jumps.is_empty());
        assert_eq!(analyse(&[5], &[5], &params()).median_period_ns, None);
    }
}
