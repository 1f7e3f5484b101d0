//! `--recommend`: choose slop and queue size for approx-py (or C++ approx with max_interval,
//! or C++ approx-epsilon, whose epsilon plays the slop's part) from a recording, and show the
//! match-rate curves that justify the choice.

use crate::report::match_rate;
use crate::{count_sets, Arrival, Policy, SyncConfig, SyncError};
use bagscope_stats::{median_ns, quantile_sorted};
use rayon::prelude::*;
use serde::Serialize;

/// One topic's messages in arrival order.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TopicSeries {
    /// Header stamps in nanoseconds, in arrival order.
    pub stamps_ns: Vec<i64>,
    /// Receive / log time, same length as `stamps_ns`.
    pub arrival_ns: Vec<i64>,
}

/// What [`recommend`] works from: each topic's stamps and arrivals, the policy, and the
/// optional platform figures that turn a slop into an alignment cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecommendInput {
    /// One series per topic, in topic order (2..=[`crate::MAX_TOPICS`]).
    pub topics: Vec<TopicSeries>,
    /// `ApproxPy` (slop), `Approx` (slop used as max_interval_ns) or `ApproxEpsilon` (slop
    /// used as epsilon_ns).
    pub policy: Policy,
    /// Speed of the platform in m/s, for the alignment-error cost of a slop (`speed·slop`);
    /// `None` (default): no cost is computed.
    pub speed_mps: Option<f64>,
    /// Focal length in pixels, for the pixel cost `fx·v·slop/depth`; `None` (default): no
    /// pixel cost.
    pub fx_px: Option<f64>,
    /// Scene depth in metres, for the pixel cost; `None` (default): no pixel cost.
    pub depth_m: Option<f64>,
    /// Tolerated pixel error; reported as the largest slop that stays within it (needs speed,
    /// focal length and depth too). `None` (default): not reported.
    pub pixel_budget: Option<f64>,
    /// Every message of `topics` in the order the recorder wrote them, stamps as in
    /// `topics`, when the caller has it: the sweeps then replay exactly what `sync` replays.
    /// Without it the topics are merged by arrival time, then topic, then message, which
    /// differs from the file only where messages of two topics share a log time (common when
    /// recording on sim time, where the order decides which message a synchronizer sees first).
    #[serde(skip)]
    pub arrivals: Option<Vec<Arrival>>,
    /// The topics' names, for the reason a recommendation is not made (else "topic K").
    pub topic_names: Vec<String>,
}

impl RecommendInput {
    /// Input for `policy` over `topics`, without platform figures, recorder order or topic
    /// names.
    pub fn new(policy: Policy, topics: Vec<TopicSeries>) -> Self {
        RecommendInput {
            topics,
            policy,
            speed_mps: None,
            fx_px: None,
            depth_m: None,
            pixel_budget: None,
            arrivals: None,
            topic_names: Vec::new(),
        }
    }

    fn name(&self, k: usize) -> String {
        self.topic_names
            .get(k)
            .cloned()
            .unwrap_or_else(|| format!("topic {k}"))
    }
}

/// One emulation of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    /// The slop emulated, in nanoseconds (C++ approx: max_interval; approx-epsilon: epsilon).
    pub slop_ns: i64,
    /// The queue size emulated.
    pub queue_size: usize,
    /// Sets emitted.
    pub sets: usize,
    /// Sets per message of the sparsest topic.
    pub match_rate: f64,
}

/// The recommended parameters and the match rate they give on the recording.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RecommendationCore {
    /// Recommended slop in nanoseconds (C++ approx: max_interval; approx-epsilon: epsilon).
    pub slop_ns: i64,
    /// Recommended queue size.
    pub queue_size: usize,
    /// Match rate with both, emulated on the recording.
    pub match_rate: f64,
}

/// The quantities behind the recommendation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecommendRule {
    /// Index of the topic with the shortest median period.
    pub fast_topic: usize,
    /// Its median period T_fast, in nanoseconds between sorted distinct header stamps.
    pub fast_period_ns: i64,
    /// ½·T_fast: no stamp is farther than that from a fast stamp on a jitter-free recording.
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
    /// Worst receive-lag difference: max over topic pairs (a, b) of p99(lag_a) − p1(lag_b),
    /// where lag = arrival (log) time − header stamp, in nanoseconds.
    pub lag_delta_ns: i64,
    /// Smallest q with q·T_b > Δ_ab for every pair (a late, b queued).
    pub queue_min: usize,
    /// Added to queue_min (1).
    pub queue_margin: usize,
    /// Sets that could form: the fewest messages any topic has in the stamp range all topics
    /// share (at least `min_candidate_sets`, else no recommendation is made).
    pub candidate_sets: usize,
    /// [`MIN_CANDIDATE_SETS`].
    pub min_candidate_sets: usize,
    /// Messages and distinct stamps each topic needs for a recommendation
    /// ([`MIN_MESSAGES_PER_TOPIC`]).
    pub min_messages_per_topic: usize,
    /// Why the final values differ from the plain rule, if they do.
    pub notes: Vec<String>,
}

/// What a slop costs in alignment on the moving platform.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlopCost {
    /// The slop, in nanoseconds.
    pub slop_ns: i64,
    /// Distance travelled during the slop, `speed·slop`, in metres; `None` without a speed.
    pub alignment_error_m: Option<f64>,
    /// That distance in image pixels, `fx·error/depth`; `None` without a focal length, or
    /// without a positive depth.
    pub pixels: Option<f64>,
}

/// A recommended slop and queue size with the rule and the curves behind them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The policy recommended for.
    pub policy: Policy,
    /// The recommended slop and queue size.
    pub recommendation: RecommendationCore,
    /// The quantities the rule derived them from.
    pub rule: RecommendRule,
    /// Smallest swept slop reaching ~the plateau (≥ 98 % of the best rate) at the recommended
    /// queue; `None` when no swept slop matches anything.
    pub min_slop_ns: Option<i64>,
    /// Best match rate of the slop curve.
    pub plateau_match_rate: f64,
    /// Match rate at queue_size − 1, at the recommended slop (0 at queue 0).
    pub match_rate_at_queue_minus_1: Option<f64>,
    /// Match rate at queue_min − 1 (the cliff), at the recommended slop (0 at queue 0).
    pub match_rate_at_queue_min_minus_1: Option<f64>,
    /// Match rate vs slop at the recommended queue size.
    pub slop_curve: Vec<CurvePoint>,
    /// Match rate vs queue size at the recommended slop.
    pub queue_curve: Vec<CurvePoint>,
    /// The recommended slop's cost.
    pub cost_recommended: SlopCost,
    /// The cost of `min_slop_ns`; `None` when there is none.
    pub cost_min_slop: Option<SlopCost>,
    /// Largest slop (ns) within the pixel budget; `None` unless the budget, speed, focal
    /// length and depth are all given and the last three positive.
    pub max_slop_for_pixel_budget_ns: Option<i64>,
}

/// Why a recommendation is not made (`code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRecommendationCode {
    /// A topic has fewer than [`MIN_MESSAGES_PER_TOPIC`] messages.
    TooFewMessages,
    /// A topic's stamps repeat: fewer than [`MIN_MESSAGES_PER_TOPIC`] distinct stamps.
    StampFrozen,
    /// Some topics are stamped on wall time (epoch), others on a relative or sim clock.
    StampClocksDiffer,
    /// The topics' stamp ranges do not overlap: no set can form.
    StampRangesDisjoint,
    /// Fewer than [`MIN_CANDIDATE_SETS`] messages of some topic lie in the stamp range all
    /// topics share.
    TooFewCandidateSets,
    /// The receive-lag difference needs a queue of more than [`MAX_QUEUE_SIZE`] messages.
    LagBeyondQueue,
}

/// The reason no recommendation is made: no numbers are derived from such input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoRecommendation {
    /// The policy a recommendation was asked for.
    pub policy: Policy,
    /// Why none is made.
    pub code: NoRecommendationCode,
    /// The topics concerned.
    pub topics: Vec<String>,
    /// The sample found (messages, distinct stamps or candidate sets), or the queue needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    /// The least `n` a recommendation needs (for `lag_beyond_queue`: the most it allows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<usize>,
    /// The topic's message count (`stamp_frozen`: `n` distinct stamps over these messages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<usize>,
    /// Second topic's median stamp minus the first's; for `lag_beyond_queue`, how much later
    /// (relative to its stamps) the first topic arrives than the second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_ns: Option<i64>,
    /// The reason in words, naming the topics and the numbers.
    pub message: String,
}

/// Fewest messages (and distinct stamps) per topic a recommendation is made from: the rule
/// reads a median period, the p95 of its deviation and the p1 / p99 of the receive lag, which
/// a handful of messages cannot estimate.
pub const MIN_MESSAGES_PER_TOPIC: usize = 20;
/// Fewest sets that could form (messages of each topic inside the stamp range all topics
/// share) for the match-rate curves to mean anything.
pub const MIN_CANDIDATE_SETS: usize = 10;
/// Largest queue a recommendation may need. A receive-lag difference beyond this many
/// periods is a clock offset, not a queue to configure; it also bounds the sweeps.
pub const MAX_QUEUE_SIZE: usize = 10_000;
/// Queue sizes swept at most: every size up to this many, a geometric grid beyond.
const QUEUE_GRID_POINTS: usize = 64;
/// On a long queue curve, the sizes swept one by one before the geometric grid begins.
const QUEUE_GRID_DENSE: usize = 16;

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
            Policy::ApproxEpsilon => cfg.epsilon_ns = slop_ns,
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

/// Positive differences of sorted stamps.
fn periods_of(sorted: &[i64]) -> Vec<i64> {
    sorted
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|&p| p > 0)
        .collect()
}

use bagscope_types::timefmt::secs;

/// Refuses input whose numbers would mean nothing: too few messages, frozen stamps, stamps on
/// different clocks or in disjoint ranges, too few sets that could form. `sorted`: each
/// topic's stamps, sorted. Returns the number of candidate sets.
fn screen(input: &RecommendInput, sorted: &[Vec<i64>]) -> Result<usize, SyncError> {
    let n = sorted.len();
    let refuse = |code, topics: &[usize], message: String| NoRecommendation {
        policy: input.policy,
        code,
        topics: topics.iter().map(|&k| input.name(k)).collect(),
        n: None,
        minimum: None,
        messages: None,
        offset_ns: None,
        message,
    };
    let fail = |r: NoRecommendation| Err(SyncError::NoRecommendation(Box::new(r)));

    let Some(few) = (0..n).min_by_key(|&k| (sorted[k].len(), k)) else {
        return Ok(0);
    };
    let c = sorted[few].len();
    if c < MIN_MESSAGES_PER_TOPIC {
        return fail(NoRecommendation {
            n: Some(c),
            minimum: Some(MIN_MESSAGES_PER_TOPIC),
            messages: Some(c),
            ..refuse(
                NoRecommendationCode::TooFewMessages,
                &[few],
                format!(
                    "too few messages (n={c}) on {}: a recommendation needs at least \
                     {MIN_MESSAGES_PER_TOPIC} per topic",
                    input.name(few)
                ),
            )
        });
    }
    for (k, s) in sorted.iter().enumerate() {
        let distinct = 1 + s.windows(2).filter(|w| w[0] != w[1]).count();
        if distinct < MIN_MESSAGES_PER_TOPIC {
            return fail(NoRecommendation {
                n: Some(distinct),
                minimum: Some(MIN_MESSAGES_PER_TOPIC),
                messages: Some(s.len()),
                ..refuse(
                    NoRecommendationCode::StampFrozen,
                    &[k],
                    format!(
                        "the stamps of {} are frozen: {distinct} distinct stamp(s) over {} \
                         messages (a recommendation needs at least {MIN_MESSAGES_PER_TOPIC} \
                         distinct stamps per topic)",
                        input.name(k),
                        s.len()
                    ),
                )
            });
        }
    }
    let median = |k: usize| sorted[k][sorted[k].len() / 2];
    let apart = |a: usize, b: usize| (median(b) as i128 - median(a) as i128).abs();

    // Epoch stamps on some topics and small ones on others: the difference is a clock offset.
    let wall: Vec<bool> = (0..n)
        .map(|k| bagscope_types::is_wall_ns(median(k)))
        .collect();
    let pair = (0..n)
        .filter(|&a| wall[a])
        .flat_map(|a| (0..n).filter(|&b| !wall[b]).map(move |b| (a, b)))
        .max_by_key(|&(a, b)| (apart(a, b), std::cmp::Reverse((a, b))));
    if let Some((a, b)) = pair {
        let off = median(b).saturating_sub(median(a));
        return fail(NoRecommendation {
            offset_ns: Some(off),
            ..refuse(
                NoRecommendationCode::StampClocksDiffer,
                &[a, b],
                format!(
                    "stamps on different clocks: {} on wall time, {} on a relative or sim \
                     clock, median stamps {} s apart; no synchronizer can pair them (fix the \
                     stamps, or key on arrival time: approx-py sync_arrival_time)",
                    input.name(a),
                    input.name(b),
                    secs(off)
                ),
            )
        });
    }

    // The range all topics share: from the latest first stamp to the earliest last stamp.
    let starts = (0..n).max_by_key(|&k| (sorted[k][0], std::cmp::Reverse(k)));
    let ends = (0..n).min_by_key(|&k| (sorted[k][sorted[k].len() - 1], k));
    let (Some(starts), Some(ends)) = (starts, ends) else {
        return Ok(0);
    };
    let (lo, hi) = (sorted[starts][0], sorted[ends][sorted[ends].len() - 1]);
    if lo > hi {
        let off = median(starts).saturating_sub(median(ends));
        return fail(NoRecommendation {
            offset_ns: Some(off),
            ..refuse(
                NoRecommendationCode::StampRangesDisjoint,
                &[ends, starts],
                format!(
                    "the topics' stamp ranges do not overlap: {} ends {} s before {} begins \
                     (median stamps {} s apart); no set can form",
                    input.name(ends),
                    secs(lo.saturating_sub(hi)),
                    input.name(starts),
                    secs(off)
                ),
            )
        });
    }
    let within = |s: &[i64]| s.partition_point(|&x| x <= hi) - s.partition_point(|&x| x < lo);
    let (k, cand) = (0..n)
        .map(|k| (k, within(&sorted[k])))
        .min_by_key(|&(k, c)| (c, k))
        .unwrap_or((0, 0));
    if cand < MIN_CANDIDATE_SETS {
        return fail(NoRecommendation {
            n: Some(cand),
            minimum: Some(MIN_CANDIDATE_SETS),
            messages: Some(sorted[k].len()),
            ..refuse(
                NoRecommendationCode::TooFewCandidateSets,
                &[k],
                format!(
                    "too few candidate sets (n={cand}): only {cand} of {} messages of {} lie in \
                     the stamp range all topics share ({} s); a recommendation needs at least \
                     {MIN_CANDIDATE_SETS}",
                    sorted[k].len(),
                    input.name(k),
                    secs(hi.saturating_sub(lo))
                ),
            )
        });
    }
    Ok(cand)
}

/// Queue sizes to sweep, 1..=`max_q`: all of them up to [`QUEUE_GRID_POINTS`], else every
/// size up to [`QUEUE_GRID_DENSE`], a geometric grid beyond, and the sizes in `keep`.
fn queue_grid(max_q: usize, keep: &[usize]) -> Vec<usize> {
    if max_q <= QUEUE_GRID_POINTS {
        return (1..=max_q).collect();
    }
    let mut g: Vec<usize> = (1..=QUEUE_GRID_DENSE).collect();
    let steps = QUEUE_GRID_POINTS - QUEUE_GRID_DENSE;
    let ratio = (max_q as f64 / QUEUE_GRID_DENSE as f64).powf(1.0 / steps as f64);
    let mut x = QUEUE_GRID_DENSE as f64;
    for _ in 0..steps {
        x *= ratio;
        g.push((x.round() as usize).clamp(1, max_q));
    }
    g.push(max_q);
    g.extend(keep.iter().copied().filter(|q| (1..=max_q).contains(q)));
    g.sort_unstable();
    g.dedup();
    g
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
    check_input(input)?;
    // Each topic's stamps sorted: periods robust to out-of-order delivery, distinct stamps,
    // ranges. Input that cannot support a recommendation is refused before any sweep.
    let sorted: Vec<Vec<i64>> = input
        .topics
        .iter()
        .map(|t| {
            let mut s = t.stamps_ns.clone();
            s.sort_unstable();
            s
        })
        .collect();
    let candidate_sets = screen(input, &sorted)?;
    let slop = slop_rule(input, sorted)?;
    let counts: Vec<usize> = input.topics.iter().map(|t| t.stamps_ns.len()).collect();
    let queue = queue_rule(input, &slop.medians, &counts)?;
    let queue_margin = 1usize;
    let mut notes = Vec::new();
    if let Some((b, c)) = queue.capped {
        notes.push(format!(
            "queue minimum capped at the {c} messages of {}: a queue holding them all never evicts",
            input.name(b)
        ));
    }

    let runner = Runner {
        policy: input.policy,
        n: input.topics.len(),
        arrivals: arrivals_in_order(input),
        counts: counts.clone(),
    };
    let max_q = queue_max(queue.queue_min, queue_margin, &counts);
    if max_q > QUEUE_GRID_POINTS {
        notes.push(format!(
            "queue curve sampled on a grid of sizes up to {max_q}, not at every size"
        ));
    }
    let sweep = Sweep {
        runner: &runner,
        slop_grid: slop_grid(slop.t_fast, slop.half, slop.rule_slop),
        max_q,
        queue_min: queue.queue_min,
        queue_margin,
    };
    let chosen = choose(&sweep, &slop, &mut notes);

    let at = runner.run(chosen.slop_ns, chosen.queue_size);
    // q = 0 is legal for approx-py (matches nothing); C++ approx rejects it (rate 0).
    let minus = |q: usize| Some(runner.run(chosen.slop_ns, q).match_rate);
    Ok(Recommendation {
        policy: input.policy,
        recommendation: RecommendationCore {
            slop_ns: chosen.slop_ns,
            queue_size: chosen.queue_size,
            match_rate: at.match_rate,
        },
        rule: RecommendRule {
            fast_topic: slop.fast,
            fast_period_ns: slop.t_fast,
            half_fast_period_ns: slop.half,
            jitter_margin_ns: slop.jitter_margin,
            rule_slop_ns: slop.rule_slop,
            phase_sweeps: slop.sweeps,
            lag_delta_ns: queue.lag_delta,
            queue_min: queue.queue_min,
            queue_margin,
            candidate_sets,
            min_candidate_sets: MIN_CANDIDATE_SETS,
            min_messages_per_topic: MIN_MESSAGES_PER_TOPIC,
            notes,
        },
        min_slop_ns: chosen.min_slop,
        plateau_match_rate: chosen.plateau,
        match_rate_at_queue_minus_1: minus(chosen.queue_size - 1),
        match_rate_at_queue_min_minus_1: minus(queue.queue_min - 1),
        slop_curve: chosen.slop_curve,
        queue_curve: chosen.queue_curve,
        cost_recommended: cost(input, chosen.slop_ns),
        cost_min_slop: chosen.min_slop.map(|s| cost(input, s)),
        max_slop_for_pixel_budget_ns: max_slop_for_pixel_budget(input),
    })
}

/// Rejects calls `recommend` cannot serve: a topic count outside 2..=[`crate::MAX_TOPICS`],
/// a policy without a slop-like parameter, stamps and arrivals of different lengths, ordered
/// arrivals that do not hold exactly each topic's messages.
fn check_input(input: &RecommendInput) -> Result<(), SyncError> {
    let n = input.topics.len();
    if !(2..=crate::MAX_TOPICS).contains(&n) {
        return Err(SyncError::TopicCount(n));
    }
    if !matches!(
        input.policy,
        Policy::ApproxPy | Policy::Approx | Policy::ApproxEpsilon
    ) {
        return Err(SyncError::InvalidParam(
            "recommend supports approx-py, approx and approx-epsilon".into(),
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
    Ok(())
}

/// The slop rule's quantities, from the stamps alone.
struct SlopRule {
    /// Each topic's median period (positive).
    medians: Vec<i64>,
    fast: usize,
    t_fast: i64,
    half: i64,
    jitter_margin: i64,
    rule_slop: i64,
    sweeps: bool,
}

/// The slop rule: ½·T_fast plus the fast topic's jitter margin, and whether the other topics'
/// phase sweeps the fast period. `sorted`: each topic's stamps, sorted (consumed: the sweeps
/// do not need them).
fn slop_rule(input: &RecommendInput, sorted: Vec<Vec<i64>>) -> Result<SlopRule, SyncError> {
    let n = sorted.len();
    let periods: Vec<Vec<i64>> = sorted.iter().map(|s| periods_of(s)).collect();
    let mut medians = Vec::with_capacity(n);
    for (k, p) in periods.iter().enumerate() {
        match median_ns(p) {
            Some(m) if m > 0 => medians.push(m),
            _ => {
                return Err(SyncError::InvalidParam(format!(
                    "{}: needs two distinct stamps",
                    input.name(k)
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
        .map(|k| sorted[k].as_slice())
        .collect();
    let sweeps = phase_sweeps(&sorted[fast], &others);
    Ok(SlopRule {
        medians,
        fast,
        t_fast,
        half,
        jitter_margin,
        rule_slop,
        sweeps,
    })
}

/// The queue rule's quantities, from the receive lags.
struct QueueRule {
    lag_delta: i64,
    queue_min: usize,
    /// The topic whose message count capped `queue_min`, and that count.
    capped: Option<(usize, usize)>,
}

/// Queue from receive lag: topic b must hold its messages while a's partner is in flight.
/// Refuses (`lag_beyond_queue`) a lag difference that needs more than [`MAX_QUEUE_SIZE`].
fn queue_rule(
    input: &RecommendInput,
    medians: &[i64],
    counts: &[usize],
) -> Result<QueueRule, SyncError> {
    let n = input.topics.len();
    let lq: Vec<(i64, i64)> = input.topics.iter().map(lag_quantiles).collect();
    let mut lag_delta = 0i64;
    let mut queue_min = 1usize;
    let mut capped: Option<(usize, usize)> = None;
    let mut beyond: Option<(usize, usize, i64, usize)> = None;
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let d = lq[a].1.saturating_sub(lq[b].0);
            lag_delta = lag_delta.max(d);
            if d >= 0 {
                // Smallest q with q·T_b > d.
                let q = usize::try_from(d / medians[b])
                    .unwrap_or(usize::MAX)
                    .saturating_add(1);
                if q > MAX_QUEUE_SIZE {
                    if beyond.is_none_or(|w| q > w.3) {
                        beyond = Some((a, b, d, q));
                    }
                    continue;
                }
                // A queue that holds every message of b never evicts one: no larger size
                // changes anything.
                if q > counts[b] && capped.is_none_or(|c| counts[b] > c.1) {
                    capped = Some((b, counts[b]));
                }
                queue_min = queue_min.max(q.min(counts[b]));
            }
        }
    }
    if let Some((a, b, d, q)) = beyond {
        return Err(SyncError::NoRecommendation(Box::new(NoRecommendation {
            policy: input.policy,
            code: NoRecommendationCode::LagBeyondQueue,
            topics: vec![input.name(a), input.name(b)],
            n: Some(q),
            minimum: Some(MAX_QUEUE_SIZE),
            messages: None,
            offset_ns: Some(d),
            message: format!(
                "{} arrives up to {} s later (relative to its stamps) than {}: a queue would \
                 have to hold {q} messages of {} (at most {MAX_QUEUE_SIZE} are recommended); \
                 the stamps are offset or on different clocks",
                input.name(a),
                secs(d),
                input.name(b),
                input.name(b)
            ),
        })));
    }
    Ok(QueueRule {
        lag_delta,
        queue_min,
        capped,
    })
}

/// The messages the sweeps replay, decoded once: the recorder's order when given, else the
/// topics merged by arrival time (ties: lower topic, then earlier message).
fn arrivals_in_order(input: &RecommendInput) -> std::borrow::Cow<'_, [Arrival]> {
    match &input.arrivals {
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
    }
}

/// Slops swept: [`SLOP_GRID_POINTS`] even steps up to 1.5·T_fast, plus ½·T_fast and the
/// rule's slop; sorted, distinct.
fn slop_grid(t_fast: i64, half: i64, rule_slop: i64) -> Vec<i64> {
    let step = (t_fast.saturating_mul(3) / 2 / SLOP_GRID_POINTS).max(1);
    let mut grid: Vec<i64> = (1..=SLOP_GRID_POINTS)
        .map(|i| i.saturating_mul(step))
        .collect();
    grid.extend([half, rule_slop]);
    grid.sort_unstable();
    grid.dedup();
    grid
}

/// Largest queue size swept. Beyond the largest topic's message count no queue evicts: the
/// curve is flat there.
fn queue_max(queue_min: usize, queue_margin: usize, counts: &[usize]) -> usize {
    let max_count = counts.iter().copied().max().unwrap_or(1);
    (queue_min + queue_margin + 4)
        .max(2 * queue_min + 2)
        .min(max_count + queue_margin)
        .max(queue_min + queue_margin)
}

/// The match-rate sweeps. Emulations are independent: curves run on all cores.
struct Sweep<'r, 'a> {
    runner: &'r Runner<'a>,
    slop_grid: Vec<i64>,
    max_q: usize,
    queue_min: usize,
    queue_margin: usize,
}

impl Sweep<'_, '_> {
    /// Match rate at each slop of the grid, at queue size `q`.
    fn slop_curve(&self, q: usize) -> Vec<CurvePoint> {
        self.slop_grid
            .par_iter()
            .map(|&s| self.runner.run(s, q))
            .collect()
    }

    /// Match rate at each queue size of the grid (which keeps `q` and the rule's sizes), at
    /// `slop`.
    fn queue_curve(&self, slop: i64, q: usize) -> Vec<CurvePoint> {
        let keep = [
            self.queue_min.saturating_sub(1),
            self.queue_min,
            self.queue_min + self.queue_margin,
            q,
        ];
        queue_grid(self.max_q, &keep)
            .into_par_iter()
            .map(|q| self.runner.run(slop, q))
            .collect()
    }

    /// If the lag rule's queue is below the measured plateau at `slop` (e.g. C++ approx,
    /// which holds a set until it is proven, needs more history), take the measured knee
    /// instead. Returns the queue size and the queue curve at `slop`.
    fn bump_queue(&self, q: usize, slop: i64, notes: &mut Vec<String>) -> (usize, Vec<CurvePoint>) {
        let curve = self.queue_curve(slop, q);
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
    }
}

/// The best match rate of a slop curve and the smallest slop reaching
/// [`PLATEAU_FRACTION`] of it (None when nothing matches).
fn plateau_min(curve: &[CurvePoint]) -> (f64, Option<i64>) {
    let best = curve.iter().map(|c| c.match_rate).fold(0.0, f64::max);
    let min = curve
        .iter()
        .find(|c| best > 0.0 && c.match_rate >= PLATEAU_FRACTION * best)
        .map(|c| c.slop_ns);
    (best, min)
}

/// The match rate a slop curve has at slop `s`, if `s` was swept.
fn rate_at(curve: &[CurvePoint], s: i64) -> Option<f64> {
    curve.iter().find(|c| c.slop_ns == s).map(|c| c.match_rate)
}

/// The chosen slop and queue size with the curves behind them.
struct Chosen {
    slop_ns: i64,
    queue_size: usize,
    slop_curve: Vec<CurvePoint>,
    queue_curve: Vec<CurvePoint>,
    plateau: f64,
    min_slop: Option<i64>,
}

/// Queue at the rule slop, then the slop curve at that queue, then the queue re-checked at
/// the chosen slop. Each departure from the plain rule is noted.
fn choose(sweep: &Sweep<'_, '_>, rule: &SlopRule, notes: &mut Vec<String>) -> Chosen {
    let (queue_size, _) =
        sweep.bump_queue(sweep.queue_min + sweep.queue_margin, rule.rule_slop, notes);
    let slop_curve = sweep.slop_curve(queue_size);
    let (plateau, min_slop) = plateau_min(&slop_curve);
    let mut slop_ns = rule.rule_slop;
    if rule.sweeps {
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
    let (queue_size, queue_curve) = sweep.bump_queue(queue_size, slop_ns, notes);
    Chosen {
        slop_ns,
        queue_size,
        slop_curve,
        queue_curve,
        plateau,
        min_slop,
    }
}

/// Largest slop whose pixel cost `fx·v·slop/depth` stays within the pixel budget; None
/// unless budget, speed, focal length and depth are all given and the last three positive.
fn max_slop_for_pixel_budget(input: &RecommendInput) -> Option<i64> {
    match (
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
    }
}
