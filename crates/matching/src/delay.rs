//! Delay estimation: error-curve minimum (sampled responses) and causal, value-confirmed
//! pairs (event responses).

use crate::pairing::{err, Track};
use crate::prep::Dense;
use crate::types::{JointDelay, MatchOptions};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// The coarse sweep uses at most this many commands (evenly strided) so that huge inputs stay
/// fast; the fine sweep around the minimum always uses all of them.
const COARSE_MAX_CMDS: usize = 20_000;
/// Fine grid: this many steps per coarse step.
const FINE_DIVISIONS: i64 = 10;
/// A per-joint delay whose 1-sigma exceeds this is not reported (too little motion).
const JOINT_DELAY_MAX_STD_NS: f64 = 10_000_000.0;
/// Most candidates examined per command / response in event pairing.
const EVENT_MAX_CANDIDATES: usize = 64;

/// Sums of one joint's errors at one shift.
#[derive(Clone, Copy, Default, Debug)]
struct Acc {
    n: f64,
    s1: f64,
    s2: f64,
}

impl Acc {
    /// Sum of squared deviations from the mean: the error with a constant offset removed.
    fn centred(&self) -> f64 {
        if self.n > 0.0 {
            (self.s2 - self.s1 * self.s1 / self.n).max(0.0)
        } else {
            0.0
        }
    }
}

/// Commands per tile of a sweep (see [`sweep`]).
const SWEEP_TILE: usize = 128;

/// Per-shift, per-joint error sums of `response(t + d) − command(t)`.
///
/// Memory, not arithmetic, bounds this loop: a shift touches responses all along the series.
/// So the commands are taken a tile at a time and each tile is run through every shift of a
/// chunk before the next tile: the responses a tile reaches stay in cache across those shifts.
/// Shift chunks run on all cores. Each (shift, joint) sum still adds the commands in time
/// order, so the sums are exactly those of the plain loop. Within a shift, response lookups
/// gallop on from the previous one instead of bisecting the whole series.
fn sweep(
    c: &Dense,
    track: &Track,
    cmds: &[usize],
    shifts: &[i64],
    joints: &[usize],
) -> Vec<Vec<Acc>> {
    let workers = rayon::current_num_threads().max(1);
    let chunk = shifts.len().div_ceil(4 * workers).max(1);
    shifts
        .par_chunks(chunk)
        .flat_map_iter(|part| {
            let mut acc = vec![vec![Acc::default(); joints.len()]; part.len()];
            let mut cursor = vec![0usize; part.len()];
            for tile in cmds.chunks(SWEEP_TILE) {
                for ((&d, sums), i) in part.iter().zip(&mut acc).zip(&mut cursor) {
                    for &k in tile {
                        let t = c.t[k].saturating_add(d);
                        *i = track.locate_from(*i, t);
                        let Some(p) = track.at(*i, t) else {
                            continue;
                        };
                        for (a, &j) in sums.iter_mut().zip(joints) {
                            let cv = c.v[j][k];
                            if !cv.is_finite() {
                                continue;
                            }
                            if let Some(rv) = track.value_at(j, p) {
                                let e = err(rv, cv, track.wrap[j]);
                                a.n += 1.0;
                                a.s1 += e;
                                a.s2 += e * e;
                            }
                        }
                    }
                }
            }
            acc
        })
        .collect()
}

/// (debiased MSE, plain MSE, samples) of a set of per-joint sums.
fn objective(accs: &[Acc]) -> (f64, f64, f64) {
    let n: f64 = accs.iter().map(|a| a.n).sum();
    if n == 0.0 {
        return (f64::NAN, f64::NAN, 0.0);
    }
    let c: f64 = accs.iter().map(Acc::centred).sum();
    let s2: f64 = accs.iter().map(|a| a.s2).sum();
    (c / n, s2 / n, n)
}

/// Index of the smallest finite value among points with enough samples.
fn argmin(vals: &[(f64, f64)]) -> Option<usize> {
    let max_n = vals.iter().map(|v| v.1).fold(0.0, f64::max);
    vals.iter()
        .enumerate()
        .filter(|(_, v)| v.0.is_finite() && v.1 >= 0.5 * max_n && v.1 > 0.0)
        .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
        .map(|(i, _)| i)
}

/// Least-squares parabola `y = a x² + b x + c`; `None` when degenerate.
fn fit_parabola(xs: &[f64], ys: &[f64]) -> Option<(f64, f64, f64)> {
    let n = xs.len() as f64;
    if xs.len() < 3 {
        return None;
    }
    let (mut s1, mut s2, mut s3, mut s4, mut t0, mut t1, mut t2) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (&x, &y) in xs.iter().zip(ys) {
        let x2 = x * x;
        s1 += x;
        s2 += x2;
        s3 += x2 * x;
        s4 += x2 * x2;
        t0 += y;
        t1 += x * y;
        t2 += x2 * y;
    }
    // Normal equations [[s4 s3 s2][s3 s2 s1][s2 s1 n]] [a b c] = [t2 t1 t0], by Cramer's rule.
    let det3 = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let m = [[s4, s3, s2], [s3, s2, s1], [s2, s1, n]];
    let d = det3(m);
    if d.abs() < 1e-300 || !d.is_finite() {
        return None;
    }
    let r = [t2, t1, t0];
    let col = |i: usize| {
        let mut mm = m;
        for row in 0..3 {
            mm[row][i] = r[row];
        }
        det3(mm) / d
    };
    Some((col(0), col(1), col(2)))
}

/// `lo, lo + step, …` up to `hi`; stops instead of overflowing near the i64 limits.
fn grid(lo: i64, hi: i64, step: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut d = Some(lo);
    while let Some(x) = d.filter(|&x| x <= hi) {
        out.push(x);
        d = x.checked_add(step);
    }
    out
}

/// Result of refining one error curve.
struct Refined {
    delay_ns: f64,
    std_ns: Option<f64>,
    /// Curvature of the debiased MSE, rad²/ms².
    curvature_ms2: Option<f64>,
    samples: usize,
}

/// The fine grid around `centre`: two coarse steps either side, within the search window.
fn fine_grid(centre: i64, step: i64, window: (i64, i64)) -> Vec<i64> {
    let fine = (step / FINE_DIVISIONS).max(1);
    let lo = centre.saturating_sub(step.saturating_mul(2)).max(window.0);
    let hi = centre.saturating_add(step.saturating_mul(2)).min(window.1);
    grid(lo, hi, fine)
}

/// Refines the minimum of the fine curve `vals` (objective, samples) over `shifts` with a
/// least-squares parabola over the points within one coarse step of the fine minimum.
fn refine(shifts: &[i64], vals: &[(f64, f64)], step: i64) -> Option<Refined> {
    let m = argmin(vals)?;
    let (xs, ys): (Vec<f64>, Vec<f64>) = shifts
        .iter()
        .zip(vals)
        .filter(|(&d, v)| d.abs_diff(shifts[m]) <= step as u64 && v.0.is_finite())
        .map(|(&d, v)| (d.saturating_sub(shifts[m]) as f64 * 1e-6, v.0)) // ms, for conditioning
        .unzip();
    let n_min = vals[m].1;
    let mse_min = vals[m].0;
    let mut out = Refined {
        delay_ns: shifts[m] as f64,
        std_ns: None,
        curvature_ms2: None,
        samples: n_min as usize,
    };
    if let Some((a, b, _)) = fit_parabola(&xs, &ys) {
        if a > 0.0 && a.is_finite() {
            let x_lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let x_hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let xv = (-b / (2.0 * a)).clamp(x_lo, x_hi);
            out.delay_ns = shifts[m] as f64 + xv * 1e6;
            out.curvature_ms2 = Some(a);
            // Least-squares shift: var = σ² / Σv², with Σv² = N·a (a per ns²).
            let a_ns = a * 1e-12;
            out.std_ns = Some((mse_min.max(0.0) / (n_min * a_ns)).sqrt());
        }
    }
    Some(out)
}

/// Outcome of the error-curve method.
pub(crate) struct SweepOutcome {
    pub delay_ns: i64,
    pub std_ns: Option<f64>,
    pub curvature_ms2: Option<f64>,
    pub samples: usize,
    pub at_edge: bool,
    pub curve: Vec<(i64, f64)>,
    pub curve_debiased: Vec<(i64, f64)>,
    pub per_joint: BTreeMap<String, JointDelay>,
    /// The curve is flat: nothing moves.
    pub flat: bool,
}

/// Error-curve delay estimate over the commands `cmds`.
pub(crate) fn error_curve(
    c: &Dense,
    track: &Track,
    cmds: &[usize],
    joints: &[String],
    opts: &MatchOptions,
) -> Option<SweepOutcome> {
    let (w_lo, w_hi) = opts.search_window_ns;
    let step = opts.sweep_step_ns;
    let r_first = *track.r.t.first()?;
    let r_last = *track.r.t.last()?;
    // Commands whose response exists over the whole window keep the sample count constant
    // across shifts, so the curve compares like with like.
    let full: Vec<usize> = cmds
        .iter()
        .copied()
        .filter(|&k| {
            c.t[k].saturating_add(w_lo) >= r_first && c.t[k].saturating_add(w_hi) <= r_last
        })
        .collect();
    let cmds: Vec<usize> = if full.len() >= 3 && full.len() * 4 >= cmds.len() {
        full
    } else {
        cmds.to_vec()
    };
    let stride = cmds.len().div_ceil(COARSE_MAX_CMDS).max(1);
    let coarse_cmds: Vec<usize> = cmds.iter().copied().step_by(stride).collect();

    let shifts = grid(w_lo, w_hi, step);
    let all: Vec<usize> = (0..joints.len()).collect();
    let coarse = sweep(c, track, &coarse_cmds, &shifts, &all);

    let mut curve = Vec::with_capacity(shifts.len());
    let mut curve_debiased = Vec::with_capacity(shifts.len());
    let mut vals = Vec::with_capacity(shifts.len());
    for (d, a) in shifts.iter().zip(&coarse) {
        let (o, p, n) = objective(a);
        if n > 0.0 {
            curve.push((*d, p.sqrt()));
            curve_debiased.push((*d, o.sqrt()));
        }
        vals.push((o, n));
    }
    let m = argmin(&vals)?;
    let finite: Vec<f64> = vals
        .iter()
        .filter(|v| v.0.is_finite() && v.1 > 0.0)
        .map(|v| v.0)
        .collect();
    let spread = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - finite.iter().copied().fold(f64::INFINITY, f64::min);
    let flat = spread.is_nan() || spread <= 1e-12;
    let at_edge = shifts.len() > 2 && (m == 0 || m + 1 == shifts.len());

    // The overall and the per-joint refinements sweep fine grids around their own coarse
    // minima, usually the same one: one sweep over the union of the grids serves them all
    // (a joint's sums do not depend on the other joints).
    let window = (w_lo, w_hi);
    let centres: Vec<Option<i64>> = (0..joints.len())
        .map(|j| {
            let jvals: Vec<(f64, f64)> = coarse
                .iter()
                .map(|a| {
                    let (o, _, n) = objective(&a[j..=j]);
                    (o, n)
                })
                .collect();
            argmin(&jvals).map(|jm| shifts[jm])
        })
        .collect();
    let union: Vec<i64> = std::iter::once(shifts[m])
        .chain(centres.iter().flatten().copied())
        .flat_map(|ctr| fine_grid(ctr, step, window))
        .collect::<BTreeSet<i64>>()
        .into_iter()
        .collect();
    let fine_sums = sweep(c, track, &cmds, &union, &all);
    // `joint`: one joint's curve, or all joints' (None).
    let curve_of = |centre: i64, joint: Option<usize>| {
        let g = fine_grid(centre, step, window);
        let vals: Vec<(f64, f64)> = g
            .iter()
            .map(|d| {
                let at = union.binary_search(d).unwrap_or(0);
                let sums = &fine_sums[at];
                let (o, _, n) = objective(joint.map_or(&sums[..], |j| &sums[j..=j]));
                (o, n)
            })
            .collect();
        refine(&g, &vals, step)
    };
    let overall = curve_of(shifts[m], None)?;

    let mut per_joint = BTreeMap::new();
    for (j, name) in joints.iter().enumerate() {
        let r = centres[j].and_then(|ctr| curve_of(ctr, Some(j)));
        let jd = match r {
            Some(r) if r.std_ns.is_some_and(|s| s <= JOINT_DELAY_MAX_STD_NS) => JointDelay {
                delay_ns: Some(r.delay_ns.round() as i64),
                std_ns: r.std_ns,
                samples: r.samples,
                note: None,
            },
            Some(r) => JointDelay {
                delay_ns: None,
                std_ns: r.std_ns,
                samples: r.samples,
                note: Some("too little motion on this joint to locate a delay".into()),
            },
            None => JointDelay {
                delay_ns: None,
                std_ns: None,
                samples: 0,
                note: Some("no samples".into()),
            },
        };
        per_joint.insert(name.clone(), jd);
    }
    Some(SweepOutcome {
        delay_ns: overall.delay_ns.round() as i64,
        std_ns: overall.std_ns,
        curvature_ms2: overall.curvature_ms2,
        samples: overall.samples,
        at_edge,
        curve,
        curve_debiased,
        per_joint,
        flat,
    })
}

/// Errors further than this many robust sigmas (1.4826·MAD) from the joint's median error are
/// outliers for the delay fit (a command outside the limits, a glitch): one such value moves
/// the squared-error curve more than all the genuine samples.
const OUTLIER_SIGMAS: f64 = 8.0;
/// …but never closer than this to the median (radians), so noise-free data keeps its samples.
const OUTLIER_FLOOR_RAD: f64 = 0.02;

/// Copy of the commands with outlier samples (at shift `delay_ns`) set to NaN, and how many.
pub(crate) fn drop_outliers(
    c: &Dense,
    track: &Track,
    cmds: &[usize],
    delay_ns: i64,
) -> (Dense, usize) {
    let mut out = c.clone();
    let mut dropped = 0;
    for j in 0..c.v.len() {
        let errs: Vec<(usize, f64)> = cmds
            .iter()
            .filter_map(|&k| {
                let t = c.t[k].saturating_add(delay_ns);
                let cv = c.v[j][k];
                let rv = track.value(j, track.locate(t), t)?;
                cv.is_finite().then(|| (k, err(rv, cv, track.wrap[j])))
            })
            .collect();
        if errs.len() < 5 {
            continue;
        }
        let mut sorted: Vec<f64> = errs.iter().map(|e| e.1).collect();
        sorted.sort_by(f64::total_cmp);
        let med = bagscope_stats::quantile_sorted_f64(&sorted, 0.5);
        let mut dev: Vec<f64> = sorted.iter().map(|e| (e - med).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let sigma = 1.4826 * bagscope_stats::quantile_sorted_f64(&dev, 0.5);
        let thr = (OUTLIER_SIGMAS * sigma).max(OUTLIER_FLOOR_RAD);
        for (k, e) in errs {
            if (e - med).abs() > thr {
                out.v[j][k] = f64::NAN;
                dropped += 1;
            }
        }
    }
    (out, dropped)
}

/// Outcome of event pairing.
pub(crate) struct EventOutcome {
    /// `(command, response)` pairs behind the delay.
    pub pairs: Vec<(usize, usize)>,
    pub dts: Vec<i64>,
    pub confirmed: bool,
    pub unconfirmed_commands: usize,
}

/// RMS distance between command `k` and response `i` over joints present in both.
fn value_dist(c: &Dense, r: &Dense, wrap: &[bool], k: usize, i: usize) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for j in 0..c.v.len() {
        let (cv, rv) = (c.v[j][k], r.v[j][i]);
        if cv.is_finite() && rv.is_finite() {
            let e = err(rv, cv, wrap[j]);
            s += e * e;
            n += 1;
        }
    }
    (n > 0).then(|| (s / n as f64).sqrt())
}

/// Causal event pairs. A pair is value-confirmed when the response is the best value match of
/// the command among its causal candidates AND the command is, by a clear margin, the best
/// match of the response among the commands that could have caused it (mutual best match).
/// The margin rejects still stretches and turnarounds where neighbouring commands look alike.
pub(crate) fn event_pairs(
    c: &Dense,
    r: &Dense,
    cmds: &[usize],
    wrap: &[bool],
    opts: &MatchOptions,
) -> Option<EventOutcome> {
    let lo = opts.search_window_ns.0.max(0); // causal: a response cannot precede its command
    let mut hi = opts.search_window_ns.1;
    if let Some(m) = opts.max_pair_distance_ns {
        hi = hi.min(m);
    }
    if hi < lo || r.len() == 0 {
        return None;
    }
    let mut confirmed: Vec<(usize, usize, f64)> = Vec::new();
    for &k in cmds {
        let a = r.t.partition_point(|&x| x < c.t[k].saturating_add(lo));
        let b =
            r.t.partition_point(|&x| x <= c.t[k].saturating_add(hi))
                .min(a + EVENT_MAX_CANDIDATES);
        let best = (a..b)
            .filter_map(|i| value_dist(c, r, wrap, k, i).map(|d| (i, d)))
            .min_by(|x, y| x.1.total_cmp(&y.1));
        let Some((i, d)) = best else { continue };
        // Commands that could have caused response i.
        let ma = c.t.partition_point(|&x| x < r.t[i].saturating_sub(hi));
        let mb = c.t.partition_point(|&x| x <= r.t[i].saturating_sub(lo));
        let ma = ma.max(mb.saturating_sub(EVENT_MAX_CANDIDATES));
        let second = (ma..mb)
            .filter(|&m| m != k)
            .filter_map(|m| value_dist(c, r, wrap, m, i))
            .fold(f64::INFINITY, f64::min);
        if d < 0.5 * second {
            confirmed.push((k, i, d));
        }
    }
    // A response echoes one command: keep the closest match if two claim it.
    confirmed.sort_by(|x, y| x.1.cmp(&y.1).then(x.2.total_cmp(&y.2)));
    confirmed.dedup_by_key(|x| x.1);
    confirmed.sort_by_key(|x| x.0);

    let min_confirmed = 3.max(cmds.len() / 10);
    let (pairs, was_confirmed): (Vec<(usize, usize)>, bool) = if confirmed.len() >= min_confirmed {
        (confirmed.iter().map(|x| (x.0, x.1)).collect(), true)
    } else {
        // No usable echo: the first response inside the causal window.
        let mut p: Vec<(usize, usize)> = Vec::new();
        let mut taken = vec![false; r.len()];
        for &k in cmds {
            let a = r.t.partition_point(|&x| x < c.t[k].saturating_add(lo));
            if a < r.len() && r.t[a] <= c.t[k].saturating_add(hi) && !(opts.one_to_one && taken[a])
            {
                taken[a] = true;
                p.push((k, a));
            }
        }
        (p, false)
    };
    if pairs.is_empty() {
        return None;
    }
    let dts = pairs
        .iter()
        .map(|&(k, i)| r.t[i].saturating_sub(c.t[k]))
        .collect();
    let unconfirmed_commands = cmds.len() - if was_confirmed { pairs.len() } else { 0 };
    Some(EventOutcome {
        pairs,
        dts,
        confirmed: was_confirmed,
        unconfirmed_commands,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Responses with jitter, a dropout and NaNs; commands at their own rate; one wrapped joint.
    fn streams(seed: u64) -> (Dense, Dense, Vec<bool>) {
        let mut r = xorshift(seed);
        let mut t = 1_000_000_000i64;
        let mut resp = Dense {
            t: Vec::new(),
            v: vec![Vec::new(); 3],
        };
        for i in 0..20_000 {
            t += 1_000_000 + (r() % 200_000) as i64 + if i == 9000 { 300_000_000 } else { 0 };
            resp.t.push(t);
            for (j, col) in resp.v.iter_mut().enumerate() {
                let x = (t as f64 * 1e-9 * (j + 1) as f64).sin() * 3.5;
                col.push(if r().is_multiple_of(97) { f64::NAN } else { x });
            }
        }
        let mut cmd = Dense {
            t: Vec::new(),
            v: vec![Vec::new(); 3],
        };
        let mut t = 900_000_000i64;
        for _ in 0..2_500 {
            t += 8_000_000 + (r() % 4_000_000) as i64;
            cmd.t.push(t);
            for (j, col) in cmd.v.iter_mut().enumerate() {
                let x = (t as f64 * 1e-9 * (j + 1) as f64).cos();
                col.push(if r().is_multiple_of(53) { f64::NAN } else { x });
            }
        }
        (cmd, resp, vec![false, true, false])
    }

    #[test]
    fn tiled_sweep_equals_the_plain_loop() {
        for (seed, interpolate, max_pair) in [(1, true, None), (2, false, Some(2_000_000))] {
            let (c, r, wrap) = streams(seed);
            let track = Track::new(&r, &wrap, max_pair, interpolate);
            let cmds: Vec<usize> = (0..c.len()).filter(|k| k % 7 != 3).collect();
            let shifts = grid(-40_000_000, 500_000_000, 3_000_000);
            let joints = [0usize, 1, 2];
            let got = sweep(&c, &track, &cmds, &shifts, &joints);
            for (sums, &d) in got.iter().zip(&shifts) {
                let mut want = [Acc::default(); 3];
                for &k in &cmds {
                    let t = c.t[k].saturating_add(d);
                    let i = track.locate(t);
                    for (a, &j) in want.iter_mut().zip(&joints) {
                        let cv = c.v[j][k];
                        if let Some(rv) = track.value(j, i, t).filter(|_| cv.is_finite()) {
                            let e = err(rv, cv, wrap[j]);
                            a.n += 1.0;
                            a.s1 += e;
                            a.s2 += e * e;
                        }
                    }
                }
                for (g, w) in sums.iter().zip(&want) {
                    let bits = |a: &Acc| (a.n.to_bits(), a.s1.to_bits(), a.s2.to_bits());
                    assert_eq!(bits(g), bits(w), "shift {d}");
                }
                assert!(
                    want.iter().all(|a| a.n > 0.0) || d > 400_000_000,
                    "shift {d}"
                );
            }
        }
    }

    #[test]
    fn locate_from_equals_locate() {
        let (_, r, wrap) = streams(3);
        let track = Track::new(&r, &wrap, None, true);
        let mut rnd = xorshift(4);
        let (lo, hi) = (r.t[0] - 5_000_000, r.t[r.len() - 1] + 5_000_000);
        let mut hint = 0usize;
        let mut t = lo;
        while t < hi {
            // Mostly forward in small and large steps, sometimes backwards (falls back).
            let step = match rnd() % 10 {
                0 => -((rnd() % 50_000_000) as i64),
                1 => (rnd() % 2_000_000_000) as i64,
                _ => (rnd() % 3_000_000) as i64,
            };
            t += step;
            let want = track.locate(t);
            assert_eq!(track.locate_from(hint, t), want, "t {t} hint {hint}");
            assert_eq!(track.locate_from(usize::MAX, t), want);
            hint = want;
        }
    }

    #[test]
    fn parabola_fit_recovers_vertex() {
        let xs: Vec<f64> = (-5..=5).map(|i| i as f64 * 0.1).collect();
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| 2.0 * (x - 0.037) * (x - 0.037) + 1.0)
            .collect();
        let (a, b, _) = fit_parabola(&xs, &ys).unwrap();
        assert!((a - 2.0).abs() < 1e-9);
        assert!((-b / (2.0 * a) - 0.037).abs() < 1e-9);
        assert!(fit_parabola(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_none());
    }
}
