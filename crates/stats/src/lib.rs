//! Small, dependency-free statistics shared by the analysis crates.
//!
//! Everything works on `i64` nanoseconds (or `f64` where the quantity is not a time) and returns
//! plain `Serialize` structs, so reports can embed them directly.
//!
//! # In the workspace
//!
//! Quantiles (by selection, in place, or on sorted data; or streamed: exact order statistics of
//! a sequence produced again on each of two passes — count, extremes and a positional sample;
//! then counts around brackets the sample sets, and the values inside them — with histogram
//! rounds where a bracket misses, nothing per value stored), summaries, histograms
//! (`Histogram::central`: fixed-width bins over the central 99.8 %, what `hist` and the report
//! draw), robust linear fits (masked: no copies; trimming and refitting share passes); the
//! busiest sliding window of bytes; service call latency from introspection events paired by
//! client GID and sequence number (`services`).
//!
//! Notable dependencies: `serde`.

#![forbid(unsafe_code)]

use serde::Serialize;

mod bandwidth;
pub mod services;
mod streamed;
pub use bandwidth::peak_window_bytes;
pub use streamed::{
    median_f64_range_streamed, median_f64_streamed, median_range_streamed, median_streamed,
    quantiles_streamed,
};

/// Distribution summary of a set of nanosecond values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NsSummary {
    /// Number of values summarised.
    pub count: usize,
    /// Smallest value, ns.
    pub min: i64,
    /// Median (linear interpolation between closest ranks, as [`quantile_sorted`]), ns.
    pub p50: i64,
    /// 95th percentile, ns.
    pub p95: i64,
    /// 99th percentile, ns.
    pub p99: i64,
    /// Largest value, ns.
    pub max: i64,
    /// Arithmetic mean, truncated toward zero to whole nanoseconds (summed in `i128`, so no overflow).
    pub mean: i64,
    /// How many values were negative (e.g. a receive time earlier than the stamp).
    pub negatives: usize,
}

impl NsSummary {
    /// Summarise `values`; `None` when empty. Works on a copy, so callers keep their order.
    pub fn of(values: &[i64]) -> Option<NsSummary> {
        Self::of_in_place(&mut values.to_vec())
    }

    /// [`NsSummary::of`] without the copy: O(n) by selection, reorders `values`. Equal to
    /// [`NsSummary::of_sorted`] of the sorted values (quantiles only depend on ranks).
    pub fn of_in_place(values: &mut [i64]) -> Option<NsSummary> {
        if values.is_empty() {
            return None;
        }
        let (mut min, mut max, mut sum, mut negatives) = (i64::MAX, i64::MIN, 0i128, 0usize);
        for &x in values.iter() {
            min = min.min(x);
            max = max.max(x);
            sum += x as i128;
            negatives += usize::from(x < 0);
        }
        let [p50, p95, p99] = quantiles_in_place(values, [0.50, 0.95, 0.99]);
        Some(NsSummary {
            count: values.len(),
            min,
            p50,
            p95,
            p99,
            max,
            mean: (sum / values.len() as i128) as i64,
            negatives,
        })
    }

    /// Summarise values that are already sorted ascending (not checked).
    pub fn of_sorted(v: &[i64]) -> NsSummary {
        assert!(!v.is_empty(), "NsSummary::of_sorted on an empty slice");
        Self::of_sorted_and_negated_median(v).expect("not empty").0
    }

    /// [`NsSummary::of_sorted`] of sorted values of any type that widens to `i64` (lags kept
    /// as `i32`), and the median of the values negated, as
    /// [`NsSummary::of_streamed_and_negated_median`] gives them; `None` when empty. Every
    /// field is a function of the ranks (and the exact sum), so the numbers are those of the
    /// unsorted values.
    pub fn of_sorted_and_negated_median<T: Copy + Into<i64>>(
        v: &[T],
    ) -> Option<(NsSummary, Option<i64>)> {
        let n = v.len();
        if n == 0 {
            return None;
        }
        // i128 so that sums of ~1e18 stamps cannot overflow.
        let sum: i128 = v.iter().map(|&x| i128::from(x.into())).sum();
        let mid = 0.5 * (n - 1) as f64;
        let middle = [
            v[mid.floor() as usize].into(),
            v[mid.ceil() as usize].into(),
        ];
        let summary = NsSummary {
            count: n,
            min: v[0].into(),
            p50: quantile_sorted_of(v, 0.50),
            p95: quantile_sorted_of(v, 0.95),
            p99: quantile_sorted_of(v, 0.99),
            max: v[n - 1].into(),
            mean: (sum / n as i128) as i64,
            negatives: v.partition_point(|&x| x.into() < 0),
        };
        Some((summary, streamed::negated_median(n, middle)))
    }
}

/// Shortest span of times a rate is computed over (1 ms). Log times a few nanoseconds apart
/// (test bags written in one burst) would give rates of millions of Hz that mean nothing;
/// such spans are shown as what they are instead.
pub const MIN_RATE_SPAN_NS: i64 = 1_000_000;

/// Messages per second of `count` messages whose first and last time are `span_ns` apart:
/// `(count − 1) / span`. `None` for fewer than two messages or a span below
/// [`MIN_RATE_SPAN_NS`].
pub fn rate_hz(count: u64, span_ns: i64) -> Option<f64> {
    (count >= 2 && span_ns >= MIN_RATE_SPAN_NS).then(|| (count - 1) as f64 / (span_ns as f64 / 1e9))
}

/// Quantile of sorted integers by linear interpolation between closest ranks
/// (numpy's default), rounded to the nearest nanosecond.
pub fn quantile_sorted(v: &[i64], q: f64) -> i64 {
    quantile_sorted_of(v, q)
}

/// [`quantile_sorted`] of sorted values of any type that widens to `i64`: the same ranks,
/// interpolated the same way.
pub fn quantile_sorted_of<T: Copy + Into<i64>>(v: &[T], q: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let q = q.clamp(0.0, 1.0);
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    if lo == hi {
        return v[lo].into();
    }
    let frac = pos - lo as f64;
    // Interpolate on the exact integer difference: f64 values near 1.7e18 are 256 ns apart.
    lerp(v[lo].into(), v[hi].into(), frac)
}

/// `a + (b − a)·frac` rounded, on the exact integer difference (f64 values near 1.7e18 are
/// 256 ns apart); clamped, because the f64 product can round past `b` at the i64 extremes.
fn lerp(a: i64, b: i64, frac: f64) -> i64 {
    let d = b as i128 - a as i128;
    (a as i128 + (d as f64 * frac).round() as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Quantiles `qs` (ascending) of unsorted values, equal to [`quantile_sorted`] of the sorted
/// values, in O(n) by successive selection; reorders `values`. Zeros when `values` is empty.
pub fn quantiles_in_place<const K: usize>(values: &mut [i64], qs: [f64; K]) -> [i64; K] {
    let mut out = [0i64; K];
    let n = values.len();
    if n == 0 {
        return out;
    }
    // Everything left of `done` is <= everything from it on: later (larger) ranks are
    // selected in the right part only.
    let mut done = 0usize;
    for (o, q) in out.iter_mut().zip(qs) {
        let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let lo = lo.max(done);
        values[done..].select_nth_unstable(lo - done);
        let a = values[lo];
        done = lo;
        *o = if hi <= lo {
            a
        } else {
            // The next rank is the smallest value right of the selected one.
            let b = values[lo + 1..].iter().copied().min().unwrap_or(a);
            lerp(a, b, pos - pos.floor())
        };
    }
    out
}

/// Median of floats, equal to [`quantile_sorted_f64`] at 0.5 of the sorted values, in O(n) by
/// selection; reorders `values`. NaN when empty.
pub fn median_f64_in_place(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let pos = 0.5 * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let (_, &mut a, right) = values.select_nth_unstable_by(lo, |x, y| x.total_cmp(y));
    if pos == lo as f64 {
        return a;
    }
    let b = right
        .iter()
        .copied()
        .min_by(|x, y| x.total_cmp(y))
        .unwrap_or(a);
    a + (b - a) * (pos - lo as f64)
}

/// Quantile of sorted floats, same convention as [`quantile_sorted`].
pub fn quantile_sorted_f64(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let q = q.clamp(0.0, 1.0);
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Median of unsorted values (selects on a copy).
pub fn median_ns(values: &[i64]) -> Option<i64> {
    median_in_place(&mut values.to_vec())
}

/// Median with the same convention as [`median_ns`], in O(n) by selection; reorders `values`.
pub fn median_in_place(values: &mut [i64]) -> Option<i64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let hi = n / 2;
    let (_, &mut b, _) = values.select_nth_unstable(hi);
    if n % 2 == 1 {
        return Some(b);
    }
    // Even count: interpolate between the two middle values, as quantile_sorted(0.5) does.
    let a = *values[..hi].iter().max()?;
    Some(lerp(a, b, 0.5))
}

/// Consecutive differences `v[i+1] - v[i]`.
pub fn diffs(v: &[i64]) -> Vec<i64> {
    v.windows(2).map(|w| w[1] - w[0]).collect()
}

/// Root mean square of `values`; `None` when empty.
pub fn rms(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some((values.iter().map(|x| x * x).sum::<f64>() / values.len() as f64).sqrt())
}

/// A fixed-width histogram of nanosecond values over their central 99.8 %: the values below
/// the 0.1 % and above the 99.9 % quantile are counted, not binned, so one outlier cannot
/// stretch the axis (or allocate billions of bins).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    /// Lower edge of the first bin: the 0.1 % quantile (nearest rank).
    pub start_ns: i64,
    /// Width of every bin (at least 1 ns).
    pub bin_width_ns: i64,
    /// Values per bin, from `start_ns` up; bin `i` covers `[start_ns + i·bin_width_ns,
    /// start_ns + (i+1)·bin_width_ns)`.
    pub counts: Vec<u64>,
    /// Values below the 0.1 % quantile, not in any bin.
    pub below: u64,
    /// Values above the 99.9 % quantile, not in any bin.
    pub above: u64,
}

impl Histogram {
    /// `values` in `nbins` fixed-width bins (clamped to 1..=10 000) between their 0.1 % and
    /// 99.9 % quantiles (nearest rank); None when `values` is empty.
    pub fn central(values: &[i64], nbins: usize) -> Option<Histogram> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_unstable();
        // Nearest rank on the sorted values: bins need no interpolation.
        let q = |p: f64| v[(((v.len() - 1) as f64 * p).round() as usize).min(v.len() - 1)];
        let (lo, hi) = (q(0.001), q(0.999));
        let nb = nbins.clamp(1, 10_000) as i128;
        // i128: the span of wall-clock differences can exceed i64.
        let span = hi as i128 - lo as i128 + 1;
        let width = ((span + nb - 1) / nb).clamp(1, i64::MAX as i128) as i64;
        let n = (span + width as i128 - 1) / width as i128;
        let mut counts = vec![0u64; n.clamp(1, 10_001) as usize];
        let (mut below, mut above) = (0u64, 0u64);
        for &x in &v {
            if x < lo {
                below += 1;
            } else if x > hi {
                above += 1;
            } else {
                let i = ((x as i128 - lo as i128) / width as i128) as usize;
                let last = counts.len() - 1;
                counts[i.min(last)] += 1;
            }
        }
        Some(Histogram {
            start_ns: lo,
            bin_width_ns: width,
            counts,
            below,
            above,
        })
    }

    /// Middle of bin `i`, ns (rounded down to whole nanoseconds).
    pub fn bin_centre(&self, i: usize) -> i64 {
        self.start_ns + self.bin_width_ns * i as i64 + self.bin_width_ns / 2
    }
}

/// Ordinary least squares fit `y = slope * x + intercept`, with x and y shifted by their first
/// values first so that epoch-sized nanosecond values keep their precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinearFit {
    /// Change of y per unit of x (for ns against ns: dimensionless, e.g. 1.0 + drift).
    pub slope: f64,
    /// y at x = `x0`.
    pub y_at_x0: f64,
    /// The x every value is measured from: the first point used (the first kept point for masked fits).
    pub x0: i64,
    /// RMS of the residuals, in y units.
    pub residual_rms: f64,
    /// Number of points the fit used (after masking or trimming).
    pub n: usize,
}

/// The least-squares sums of a fit, accumulated point by point in index order, relative to
/// the first point added (which keeps them well conditioned).
#[derive(Default)]
struct Sums {
    origin: Option<(i64, i64)>,
    k: usize,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl Sums {
    #[inline]
    fn add(&mut self, x: i64, y: i64) {
        let (x0, y0) = *self.origin.get_or_insert((x, y));
        let x = (x - x0) as f64;
        let y = (y - y0) as f64;
        self.k += 1;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// The fit of the points summed (those `keep` selects), and its largest absolute residual:
    /// one more pass, for the residuals.
    fn finish(
        &self,
        xs: &[i64],
        ys: &[i64],
        keep: impl Fn(usize) -> bool,
    ) -> Option<(LinearFit, f64)> {
        let (x0, y0) = self.origin?;
        let Sums {
            k,
            sx,
            sy,
            sxx,
            sxy,
            ..
        } = *self;
        if k < 2 {
            return None;
        }
        let nf = k as f64;
        let den = nf * sxx - sx * sx;
        if den.abs() < f64::EPSILON {
            return None;
        }
        let slope = (nf * sxy - sx * sy) / den;
        let icpt = (sy - slope * sx) / nf;
        let n = xs.len().min(ys.len());
        let mut ss = 0.0;
        let mut max_abs: f64 = 0.0;
        for i in (0..n).filter(|&i| keep(i)) {
            let r = (ys[i] - y0) as f64 - (icpt + slope * (xs[i] - x0) as f64);
            ss += r * r;
            max_abs = max_abs.max(r.abs());
        }
        let fit = LinearFit {
            slope,
            y_at_x0: y0 as f64 + icpt,
            x0,
            residual_rms: (ss / nf).sqrt(),
            n: k,
        };
        Some((fit, max_abs))
    }
}

impl LinearFit {
    /// The fitted y at `x`: `y_at_x0 + slope · (x − x0)`.
    pub fn eval(&self, x: i64) -> f64 {
        self.y_at_x0 + self.slope * (x - self.x0) as f64
    }

    /// Least squares over (x, y) pairs. `None` with fewer than two points or no spread in x.
    pub fn fit(xs: &[i64], ys: &[i64]) -> Option<LinearFit> {
        Self::fit_where(xs, ys, |_| true)
    }

    /// [`LinearFit::fit`] over the points where `keep` is true (x and y shifted by the first
    /// kept point): the same numbers as fitting the compacted points, without copying them.
    pub fn fit_masked(xs: &[i64], ys: &[i64], keep: &[bool]) -> Option<LinearFit> {
        let n = keep.len();
        Self::fit_where(xs, ys, |i| i < n && keep[i])
    }

    fn fit_where(xs: &[i64], ys: &[i64], keep: impl Fn(usize) -> bool) -> Option<LinearFit> {
        Self::fit_where_max(xs, ys, keep).map(|(f, _)| f)
    }

    /// [`LinearFit::fit_where`], and the largest absolute residual of the fitted points.
    fn fit_where_max(
        xs: &[i64],
        ys: &[i64],
        keep: impl Fn(usize) -> bool,
    ) -> Option<(LinearFit, f64)> {
        let n = xs.len().min(ys.len());
        let mut sums = Sums::default();
        for i in (0..n).filter(|&i| keep(i)) {
            sums.add(xs[i], ys[i]);
        }
        sums.finish(xs, ys, keep)
    }

    /// [`LinearFit::fit_robust`] over the points where `keep` is true; trimmed points are
    /// cleared from `keep` in place (no copies of the data).
    pub fn fit_robust_masked(
        xs: &[i64],
        ys: &[i64],
        keep: &mut [bool],
        k: f64,
        floor: f64,
    ) -> Option<LinearFit> {
        Self::robust(xs, ys, keep, |_, kept| kept, k, floor)
    }

    /// [`LinearFit::fit_robust_masked`] over the points `init(i)` selects, written to `keep`
    /// (of the points' length) by the same pass that sums them for the first fit.
    pub fn fit_robust_selected(
        xs: &[i64],
        ys: &[i64],
        keep: &mut [bool],
        init: impl Fn(usize) -> bool,
        k: f64,
        floor: f64,
    ) -> Option<LinearFit> {
        Self::robust(xs, ys, keep, |i, _| init(i), k, floor)
    }

    fn robust(
        xs: &[i64],
        ys: &[i64],
        keep: &mut [bool],
        init: impl Fn(usize, bool) -> bool,
        k: f64,
        floor: f64,
    ) -> Option<LinearFit> {
        // The residuals of the trimming test below (`ys[i] as f64 - eval`) round the stamps
        // to f64 (up to 1024 ns off each at i64 magnitudes); those of the fit are exact to far
        // below a nanosecond. Every point is within the threshold, with room for that
        // rounding, when the fit's largest residual is this much below it: nothing to trim,
        // and no pass to find that out.
        const ROUNDING_ROOM: f64 = 8192.0;
        let n = keep.len();
        let m = n.min(xs.len()).min(ys.len());
        let mut sums = Sums::default();
        for i in 0..m {
            let kept = init(i, keep[i]);
            keep[i] = kept;
            if kept {
                sums.add(xs[i], ys[i]);
            }
        }
        let (mut fit, mut max_abs) = sums.finish(xs, ys, |i| i < n && keep[i])?;
        // The trimmed mask, written by the pass that tests the points and sums the survivors
        // for the next fit; taken only when the trimming goes ahead.
        let mut next: Vec<bool> = Vec::new();
        for _ in 0..4 {
            let thr = (fit.residual_rms * k).max(floor);
            if max_abs + ROUNDING_ROOM < thr {
                break;
            }
            next.resize(m, false);
            let mut survivors = 0usize;
            let mut dropped = 0usize;
            let mut sums = Sums::default();
            for i in 0..m {
                let mut kept = false;
                if keep[i] {
                    if (ys[i] as f64 - fit.eval(xs[i])).abs() <= thr {
                        survivors += 1;
                        kept = true;
                        sums.add(xs[i], ys[i]);
                    } else {
                        dropped += 1;
                    }
                }
                next[i] = kept;
            }
            if dropped == 0 || survivors < 2 {
                break;
            }
            keep[..m].copy_from_slice(&next);
            (fit, max_abs) = sums.finish(xs, ys, |i| i < n && keep[i])?;
        }
        Some(fit)
    }

    /// Fit, drop points whose residual exceeds `k` times the residual RMS (at least `floor`), refit.
    /// Repeats a few times: robust to the odd outlier (a late message, a pause).
    pub fn fit_robust(xs: &[i64], ys: &[i64], k: f64, floor: f64) -> Option<LinearFit> {
        let mut keep = vec![true; xs.len().min(ys.len())];
        Self::fit_robust_masked(xs, ys, &mut keep, k, floor)
    }
}

/// A deterministic xorshift generator for the tests of this crate.
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_by_selection_equals_median_of_sorted() {
        // A deterministic spread of sizes, duplicates and magnitudes near 1.7e18.
        let mut r = xorshift(0x9E37_79B9_7F4A_7C15);
        for n in 0..200usize {
            let v: Vec<i64> = (0..n)
                .map(|_| 1_700_000_000_000_000_000 + (r() % 1000) as i64 * 1_000_003)
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let want = (n > 0).then(|| quantile_sorted(&sorted, 0.5));
            assert_eq!(median_in_place(&mut v.clone()), want, "n = {n}");
            assert_eq!(median_ns(&v), want, "n = {n}");
        }
    }

    use super::*;

    /// Deterministic values with duplicates, negatives and magnitudes near 1.7e18.
    fn spread(n: usize, seed: u64) -> Vec<i64> {
        let mut r = xorshift(seed);
        (0..n)
            .map(|i| {
                let x = r();
                let base = if i % 7 == 0 {
                    -3_000_000
                } else {
                    1_700_000_000_000_000_000
                };
                base + (x % 5000) as i64 * 999_983
            })
            .collect()
    }

    #[test]
    fn selection_equals_sorting() {
        for n in 0..300usize {
            let v = spread(n, 0x9E37_79B9_7F4A_7C15 ^ n as u64);
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let mut w = v.clone();
            let got = quantiles_in_place(&mut w, [0.0, 0.25, 0.5, 0.95, 0.99, 1.0]);
            let want = [0.0, 0.25, 0.5, 0.95, 0.99, 1.0].map(|q| quantile_sorted(&sorted, q));
            assert_eq!(got, want, "n = {n}");
            if n > 0 {
                assert_eq!(
                    NsSummary::of_in_place(&mut v.clone()),
                    Some(NsSummary::of_sorted(&sorted)),
                    "n = {n}"
                );
            }
            let f: Vec<f64> = v.iter().map(|&x| x as f64 * 1e-9).collect();
            let mut fs = f.clone();
            fs.sort_unstable_by(|a, b| a.total_cmp(b));
            let m = median_f64_in_place(&mut f.clone());
            let want = quantile_sorted_f64(&fs, 0.5);
            assert!(m == want || (m.is_nan() && want.is_nan()), "n = {n}");
        }
    }

    #[test]
    fn masked_fit_equals_fit_of_kept_points() {
        let xs: Vec<i64> = (0..500)
            .map(|i| 1_700_000_000_000_000_000 + i * 1_000_003)
            .collect();
        let ys: Vec<i64> = spread(500, 42);
        let keep: Vec<bool> = (0..500).map(|i| i % 3 != 0).collect();
        let (kx, ky): (Vec<i64>, Vec<i64>) = (0..500)
            .filter(|&i| keep[i])
            .map(|i| (xs[i], ys[i]))
            .unzip();
        assert_eq!(
            LinearFit::fit_masked(&xs, &ys, &keep),
            LinearFit::fit(&kx, &ky)
        );
        assert_eq!(LinearFit::fit_masked(&xs, &ys, &[false; 500]), None);
    }

    /// Robust fitting as first written (test, mark, refit on the mask; four rounds at most):
    /// the fused passes must give exactly its fit and mask.
    fn robust_reference(
        xs: &[i64],
        ys: &[i64],
        keep: &mut [bool],
        k: f64,
        floor: f64,
    ) -> Option<LinearFit> {
        let mut fit = LinearFit::fit_masked(xs, ys, keep)?;
        for _ in 0..4 {
            let thr = (fit.residual_rms * k).max(floor);
            let m = keep.len().min(xs.len()).min(ys.len());
            let out = |i: usize| (ys[i] as f64 - fit.eval(xs[i])).abs() > thr;
            let dropped = (0..m).filter(|&i| keep[i] && out(i)).count();
            let survivors = (0..m).filter(|&i| keep[i]).count() - dropped;
            if dropped == 0 || survivors < 2 {
                break;
            }
            for (i, kept) in keep.iter_mut().enumerate().take(m) {
                if *kept && out(i) {
                    *kept = false;
                }
            }
            fit = LinearFit::fit_masked(xs, ys, keep)?;
        }
        Some(fit)
    }

    #[test]
    fn robust_fit_equals_the_plain_algorithm() {
        let mut r = xorshift(5);
        let mut trimmed = 0;
        for case in 0..40usize {
            let n = 50 + case * 37;
            let xs: Vec<i64> = (0..n as i64)
                .map(|i| 1_700_000_000_000_000_000 + i * 1_000_000 + (r() % 20_000) as i64)
                .collect();
            let ys: Vec<i64> = xs
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    let jitter = (r() % 200_000) as i64;
                    // Outliers of several sizes, so trimming takes several rounds.
                    let late = match i % 97 {
                        0 => 50_000_000,
                        13 => 5_000_000,
                        41 => 900_000,
                        _ => 0,
                    };
                    x - 1_000_000_000 + (x - xs[0]) / 100_000 + jitter + late
                })
                .collect();
            let start: Vec<bool> = (0..n).map(|i| case % 3 != 0 || i % 5 != 0).collect();
            for (k, floor) in [(3.0, 1e3), (3.0, 1e6), (1.0, 0.0)] {
                let mut want_keep = start.clone();
                let want = robust_reference(&xs, &ys, &mut want_keep, k, floor);
                trimmed += usize::from(want_keep != start);
                let mut keep = start.clone();
                assert_eq!(
                    LinearFit::fit_robust_masked(&xs, &ys, &mut keep, k, floor),
                    want
                );
                assert_eq!(keep, want_keep, "case {case}");
                let mut keep = vec![true; n];
                assert_eq!(
                    LinearFit::fit_robust_selected(&xs, &ys, &mut keep, |i| start[i], k, floor),
                    want
                );
                assert_eq!(keep, want_keep, "case {case}");
            }
        }
        // The cases must exercise the trimming, not only the first fit.
        assert!(trimmed > 60, "{trimmed}");
        // Nothing selected, and a single point.
        let mut keep = vec![true; 3];
        assert_eq!(
            LinearFit::fit_robust_selected(&[1, 2, 3], &[1, 2, 3], &mut keep, |_| false, 3.0, 0.0),
            None
        );
        assert_eq!(
            LinearFit::fit_robust_masked(&[1], &[1], &mut [true], 3.0, 0.0),
            None
        );
    }

    #[test]
    fn quantiles_match_numpy_linear() {
        let v = [1, 2, 3, 4];
        assert_eq!(quantile_sorted(&v, 0.5), 3); // numpy: 2.5 -> rounds to 3 (half away)
        assert_eq!(quantile_sorted(&v, 0.0), 1);
        assert_eq!(quantile_sorted(&v, 1.0), 4);
        let v = [0, 10, 20, 30, 40];
        assert_eq!(quantile_sorted(&v, 0.25), 10);
        assert_eq!(quantile_sorted(&v, 0.9), 36);
    }

    #[test]
    fn summary_counts_negatives() {
        let s = NsSummary::of(&[-5, 3, -1, 10]).unwrap();
        assert_eq!(s.negatives, 2);
        assert_eq!(s.min, -5);
        assert_eq!(s.max, 10);
        assert_eq!(s.mean, 1);
    }

    #[test]
    fn fit_recovers_line_at_epoch_scale() {
        let xs: Vec<i64> = (0..100)
            .map(|i| 1_700_000_000_000_000_000 + i * 10_000_000)
            .collect();
        let ys: Vec<i64> = xs.iter().map(|&x| (x - xs[0]) / 10 * 9 + 5_000).collect();
        let f = LinearFit::fit(&xs, &ys).unwrap();
        assert!((f.slope - 0.9).abs() < 1e-9);
        assert!((f.eval(xs[0]) - 5_000.0).abs() < 1.0);
    }

    #[test]
    fn histogram_covers_the_centre_and_counts_the_rest() {
        let mut v: Vec<i64> = (0..10_000).map(|i| i % 100).collect();
        v.push(i64::MAX);
        v.push(i64::MIN);
        let h = Histogram::central(&v, 50).unwrap();
        assert_eq!((h.below, h.above), (1, 1));
        assert_eq!(h.counts.iter().sum::<u64>(), 10_000);
        // 0..=99 in 50 bins of 2: every bin holds its two values 100 times.
        assert_eq!((h.start_ns, h.bin_width_ns), (0, 2));
        assert!(h.counts.iter().all(|&c| c == 200), "{:?}", h.counts);
        assert_eq!(h.bin_centre(3), 7);
        assert!(Histogram::central(&[], 10).is_none());
        assert_eq!(Histogram::central(&[5, 5, 5], 0).unwrap().counts, vec![3]);
    }
}
