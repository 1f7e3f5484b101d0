//! `--recommend`: choose slop and queue size for approx-py (or C++ approx with max_interval)
//! from a recording, and show the match-rate curves that justify the choice.

use crate::report::match_rate;
use crate::{count_sets, Arrival, Policy, SyncConfig, SyncError};
use bagscope_stats::{median_ns, quantile_sorted};
use rayon::prelude::*;
use serde::Serialize;

/// One topic's messages in arrival order.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TopicSeries {
    pub stamps_ns: Vec<i64>,
    /// Receive / log time, same length as `stamps_ns`.
    pub arrival_ns: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecommendInput {
    pub topics: Vec<TopicSeries>,
    /// `ApproxPy` (slop) or `Approx` (slop used as max_interval_ns).
    pub policy: Policy,
    /// Speed of the platform, for the alignment-error cost of a slop.
    pub speed_mps: Option<f64>,
    /// Focal length (px) and scene depth (m) for the pixel cost `fx·v·slop/depth`.
    pub fx_px: Option<f64>,
    pub depth_m: Option<f64>,
    /// Tolerated pixel error; reported as the largest slop that stays within it.
    pub pixel_budget: Option<f64>,
    /// Every message of `topics` in the order the recorder wrote them, stamps as in
    /// `topics`, when the caller has it: the sweeps then replay exactly what `sync` replays.
    /// Without it the topics are merged by arrival time, then topic, then message, which
    /// differs from the file only where messages of two topics share a log time (common when
    /// recording on sim time, where the order decides which message a synchronizer sees first).
    #[serde(skip)]
    pub arrivals: Option<Vec<Arrival>>,
}

impl RecommendInput {
    pub fn new(policy: Policy, topics: Vec<TopicSeries>) -> Self {
        RecommendInput {
            topics,
            policy,
            speed_mps: None,
            fx_px: None,
            depth_m: None,
            pixel_budget: None,
            arrivals: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    pub slop_ns: i64,
    pub queue_size: usize,
    pub sets: usize,
    pub match_rate: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RecommendationCore {
    pub slop_ns: i64,
    pub queue_size: usize,
    pub match_rate: f64,
}

/// The quantities behind the recommendation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecommendRule {
    pub fast_topic: usize,
    pub fast_period_ns: i64,
    pub half_fast_period_ns: i64,
    /// ½·p95|Δperiod| of the fast topic (its gaps widen by that much), capped at ½·T_fast.
    /// The other topics' scatter does not count: half the fast topic's widest gap bounds the
    /// distance from any stamp to its nearest fast stamp.
    pub jitter_margin_ns: i64,
    /// ½·T_fast + jitter margin.
    pub rule_slop_ns: i64,
    /// True when the slow topics' phase against the fast topic covers every tenth of the
    /// period: the recording contains the worst phase, so its measured minimum is robust.
    pub phase_sweeps: bool,
    /// Worst receive-lag difference: max over topic pairs (a, b) of p99(lag_a) − p1(lag_b).
    pub lag_delta_ns: i64,
    /// Smallest q with q·T_b > Δ_ab for every pair (a late, b queued).
    pub queue_min: usize,
    /// Added to queue_min.
    pub queue_margin: usize,
    /// Why the final values differ from the plain rule, if they do.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlopCost {
    pub slop_ns: i64,
    pub alignment_error_m: Option<f64>,
    pub pixels: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub policy: Policy,
    pub recommendation: RecommendationCore,
    pub rule: RecommendRule,
    /// Smallest swept slop reaching ~the plateau (≥ 98 % of the best rate) at the recommended queue.
    pub min_slop_ns: Option<i64>,
    pub plateau_match_rate: f64,
    /// Match rate at queue_size − 1 and at queue_min − 1 (the cliff), at the recommended slop.
    pub match_rate_at_queue_minus_1: Option<f64>,
    pub match_rate_at_queue_min_minus_1: Option<f64>,
    /// Match rate vs slop at the recommended queue size.
    pub slop_curve: Vec<CurvePoint>,
    /// Match rate vs queue size at the recommended slop.
    pub queue_curve: Vec<CurvePoint>,
    pub cost_recommended: SlopCost,
    pub cost_min_slop: Option<SlopCost>,
    pub max_slop_for_pixel_budget_ns: Option<i64>,
}

/// Fraction of the best rate that counts as "reached the plateau".
const PLATEAU_FRACTION: f64 = 0.98;
const SLOP_GRID_POINTS: i64 = 120;

struct Runner<'a> {
    policy: Policy,
    n: usize,
    arrivals: std::borrow::Cow<'a, [Arrival]>,
    counts: Vec<usize>,
}

impl Runner<'_> {
    fn run(&self, slop_ns: i64, queue_size: usize) -> CurvePoint {
        let mut cfg = SyncConfig::new(self.policy, self.n, queue_size);
        match self.policy {
            Policy::Approx => cfg.max_interval_ns = Some(slop_ns),
            _ => cfg.slop_ns = slop_ns,
        }
        // Invalid combinations (C++ approx with q = 0) count as matching nothing. Only the
        // number of sets is needed: nothing else is recorded.
        let sets = count_sets(&cfg, &self.arrivals).unwrap_or(0);
        CurvePoint {
            slop_ns,
            queue_size,
            sets,
            match_rate: match_rate(sets, &self.counts),
        }
    }
}

fn abs_dev_quantile(periods: &[i64], median: i64, q: f64) -> i64 {
    let mut d: Vec<i64> = periods
        .iter()
        .map(|p| p.saturating_sub(median).saturating_abs())
        .collect();
    d.sort_unstable();
    quantile_sorted(&d, q)
}

fn sorted_periods(stamps: &[i64]) -> Vec<i64> {
    let mut s = stamps.to_vec();
    s.sort_unstable();
    s.windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|&p| p > 0)
        .collect()
}

fn lag_quantiles(t: &TopicSeries) -> (i64, i64) {
    let mut lags: Vec<i64> = t
        .stamps_ns
        .iter()
        .zip(&t.arrival_ns)
        .map(|(&s, &a)| a.saturating_sub(s))
        .collect();
    lags.sort_unstable();
    (quantile_sorted(&lags, 0.01), quantile_sorted(&lags, 0.99))
}

/// Does the phase of the other topics' stamps within the fast period cover all ten deciles?
fn phase_sweeps(fast: &[i64], others: &[&[i64]]) -> bool {
    let mut f = fast.to_vec();
    f.sort_unstable();
    f.dedup();
    let mut bins = [0usize; 10];
    let mut n = 0usize;
    for s in others.iter().flat_map(|o| o.iter()) {
        let p = f.partition_point(|&x| x <= *s);
        if p == 0 || p == f.len() {
            continue;
        }
        let (a, b) = (f[p - 1] as i128, f[p] as i128);
        let frac = (*s as i128 - a) as f64 / (b - a) as f64;
        bins[((frac * 10.0) as usize).min(9)] += 1;
        n += 1;
    }
    n >= 20 && bins.iter().all(|&c| c > 0)
}

fn cost(input: &RecommendInput, slop_ns: i64) -> SlopCost {
    let err_m = input.speed_mps.map(|v| v * slop_ns as f64 * 1e-9);
    let pixels = match (err_m, input.fx_px, input.depth_m) {
        (Some(e), Some(fx), Some(d)) if d > 0.0 => Some(fx * e / d),
        _ => None,
    };
    SlopCost {
        slop_ns,
        alignment_error_m: err_m,
        pixels,
    }
}

/// Sweep slop and queue size by emulation and recommend both. See [`RecommendRule`].
pub fn recommend(input: &RecommendInput) -> Result<Recommendation, SyncError> {
    let n = input.topics.len();
    if !(2..=crate::MAX_TOPICS).contains(&n) {
        return Err(SyncError::TopicCount(n));
    }
    if !matches!(input.policy, Policy::ApproxPy | Policy::Approx) {
        return Err(SyncError::InvalidParam(
            "recommend supports approx-py and approx".into(),
        ));
    }
    for (k, t) in input.topics.iter().enumerate() {
        if t.stamps_ns.len() != t.arrival_ns.len() {
            return Err(SyncError::InvalidParam(format!(
                "topic {k}: stamps and arrivals differ in length"
            )));
        }
    }
    if let Some(a) = &input.arrivals {
        let mut per_topic = vec![0usize; n];
        for x in a {
            match per_topic.get_mut(x.topic) {
                Some(c) => *c += 1,
                None => {
                    return Err(SyncError::InvalidParam(format!(
                        "an arrival of topic {} among {n} topics",
                        x.topic
                    )))
                }
            }
        }
        if per_topic
            .iter()
            .zip(&input.topics)
            .any(|(&c, t)| c != t.stamps_ns.len())
        {
            return Err(SyncError::InvalidParam(
                "the ordered arrivals do not hold each topic's messages".into(),
            ));
        }
    }
    // Periods from sorted stamps: robust to out-of-order delivery.
    let periods: Vec<Vec<i64>> = input
        .topics
        .iter()
        .map(|t| sorted_periods(&t.stamps_ns))
        .collect();
    let mut medians = Vec::with_capacity(n);
    for (k, p) in periods.iter().enumerate() {
        match median_ns(p) {
            Some(m) if m > 0 => medians.push(m),
            _ => {
                return Err(SyncError::InvalidParam(format!(
                    "topic {k}: needs two distinct stamps"
                )))
            }
        }
    }
    let fast = (0..n).min_by_key(|&k| (medians[k], k)).unwrap_or(0);
    let t_fast = medians[fast];
    let half = t_fast / 2;
    // A slow stamp is at most half the fast topic's widest gap from a fast stamp, wherever its
    // own jitter puts it: only the fast topic's gaps widen the slop.
    let fast_dev = abs_dev_quantile(&periods[fast], t_fast, 0.95);
    let jitter_margin = (fast_dev / 2).min(half);
    let rule_slop = half + jitter_margin;
    let others: Vec<&[i64]> = (0..n)
        .filter(|&k| k != fast)
        .map(|k| input.topics[k].stamps_ns.as_slice())
        .collect();
    let sweeps = phase_sweeps(&input.topics[fast].stamps_ns, &others);

    // Queue from receive lag: topic b must hold its messages while a's partner is in flight.
    let lq: Vec<(i64, i64)> = input.topics.iter().map(lag_quantiles).collect();
    let mut lag_delta = 0i64;
    let mut queue_min = 1usize;
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let d = lq[a].1.saturating_sub(lq[b].0);
            lag_delta = lag_delta.max(d);
            if d >= 0 {
                let q = (d / medians[b]) as usize + 1; // smallest q with q·T_b > d
                queue_min = queue_min.max(q);
            }
        }
    }
    let queue_margin = 1usize;
    let mut notes = Vec::new();

    // Decode once: the recorder's order when given, else the topics merged by arrival time
    // (ties: lower topic, then earlier message).
    let arrivals = match &input.arrivals {
        Some(a) => std::borrow::Cow::Borrowed(&a[..]),
        None => {
            let mut merged: Vec<(i64, usize, usize)> = Vec::new();
            for (k, t) in input.topics.iter().enumerate() {
                merged.extend(t.arrival_ns.iter().enumerate().map(|(i, &a)| (a, k, i)));
            }
            merged.sort_unstable();
            std::borrow::Cow::Owned(
                merged
                    .iter()
                    .map(|&(a, k, i)| Arrival::new(k, Some(input.topics[k].stamps_ns[i]), a))
                    .collect(),
            )
        }
    };
    let runner = Runner {
        policy: input.policy,
        n,
        arrivals,
        counts: input.topics.iter().map(|t| t.stamps_ns.len()).collect(),
    };

    let step = (t_fast.saturating_mul(3) / 2 / SLOP_GRID_POINTS).max(1);
    let mut grid: Vec<i64> = (1..=SLOP_GRID_POINTS)
        .map(|i| i.saturating_mul(step))
        .collect();
    grid.extend([half, rule_slop]);
    grid.sort_unstable();
    grid.dedup();
    // Emulations are independent: curves run on all cores.
    let slop_curve_at =
        |q: usize| -> Vec<CurvePoint> { grid.par_iter().map(|&s| runner.run(s, q)).collect() };
    let plateau_min = |curve: &[CurvePoint]| -> (f64, Option<i64>) {
        let best = curve.iter().map(|c| c.match_rate).fold(0.0, f64::max);
        let min = curve
            .iter()
            .find(|c| best > 0.0 && c.match_rate >= PLATEAU_FRACTION * best)
            .map(|c| c.slop_ns);
        (best, min)
    };

    let max_q = (queue_min + queue_margin + 4).max(2 * queue_min + 2);
    let queue_curve_at = |slop: i64| -> Vec<CurvePoint> {
        (1..=max_q)
            .into_par_iter()
            .map(|q| runner.run(slop, q))
            .collect()
    };
    let rate_at =
        |curve: &[CurvePoint], s: i64| curve.iter().find(|c| c.slop_ns == s).map(|c| c.match_rate);
    // If the lag rule's queue is below the measured plateau at `slop` (e.g. C++ approx, which
    // holds a set until it is proven, needs more history), take the measured knee instead.
    let bump_queue = |q: usize, slop: i64, notes: &mut Vec<String>| -> (usize, Vec<CurvePoint>) {
        let curve = queue_curve_at(slop);
        let best = curve.iter().map(|c| c.match_rate).fold(0.0, f64::max);
        let here = curve
            .iter()
            .find(|c| c.queue_size == q)
            .map_or(0.0, |c| c.match_rate);
        if here < PLATEAU_FRACTION * best {
            if let Some(c) = curve
                .iter()
                .find(|c| c.match_rate >= PLATEAU_FRACTION * best)
            {
                if c.queue_size > q {
                    notes.push(format!(
                        "queue {q} is below the measured plateau at slop {slop} ns: raised to {}",
                        c.queue_size
                    ));
                    return (c.queue_size, curve);
                }
            }
        }
        (q, curve)
    };

    // 1. queue at the rule slop; 2. slop curve at that queue; 3. re-check the queue.
    let (mut queue_size, _) = bump_queue(queue_min + queue_margin, rule_slop, &mut notes);
    let slop_curve = slop_curve_at(queue_size);
    let (plateau, min_slop) = plateau_min(&slop_curve);
    let mut slop_ns = rule_slop;
    if sweeps {
        if let Some(m) = min_slop {
            slop_ns = m;
            notes.push("phase sweeps all values: the measured minimum slop is used".into());
        }
    }
    if let (Some(m), Some(r)) = (min_slop, rate_at(&slop_curve, slop_ns)) {
        if r < PLATEAU_FRACTION * plateau && m > slop_ns {
            slop_ns = m;
            notes.push(
                "rule slop below the measured plateau: raised to the measured minimum".into(),
            );
        }
    }
    let (q2, queue_curve) = bump_queue(queue_size, slop_ns, &mut notes);
    queue_size = q2;
    let at = runner.run(slop_ns, queue_size);
    // q = 0 is legal for approx-py (matches nothing); C++ approx rejects it (rate 0).
    let minus = |q: usize| Some(runner.run(slop_ns, q).match_rate);
    let max_slop_for_pixel_budget_ns = match (
        input.pixel_budget,
        input.speed_mps,
        input.fx_px,
        input.depth_m,
    ) {
        (Some(b), Some(v), Some(fx), Some(d)) if v > 0.0 && fx > 0.0 && d > 0.0 => {
            let s = b * d / (fx * v) * 1e9;
            if s.is_finite() && s < i64::MAX as f64 {
                Some(s as i64)
            } else {
                None
            }
        }
        _ => None,
    };
    Ok(Recommendation {
        policy: input.policy,
        recommendation: RecommendationCore {
            slop_ns,
            queue_size,
            match_rate: at.match_rate,
        },
        rule: RecommendRule {
            fast_topic: fast,
            fast_period_ns: t_fast,
            half_fast_period_ns: half,
            jitter_margin_ns: jitter_margin,
            rule_slop_ns: rule_slop,
            phase_sweeps: sweeps,
            lag_delta_ns: lag_delta,
            queue_min,
            queue_margin,
            notes,
        },
        min_slop_ns: min_slop,
        plateau_match_rate: plateau,
        match_rate_at_queue_minus_1: minus(queue_size - 1),
        match_rate_at_queue_min_minus_1: minus(queue_min - 1),
        slop_curve,
        queue_curve,
        cost_recommended: cost(input, slop_ns),
        cost_min_slop: min_slop.map(|s| cost(input, s)),
        max_slop_for_pixel_budget_ns,
    })
}
