//! Small, dependency-free statistics shared by the analysis crates.
//!
//! Everything works on `i64` nanoseconds (or `f64` where the quantity is not a time) and returns
//! plain `Serialize` structs, so reports can embed them directly.

use serde::Serialize;

/// Distribution summary of a set of nanosecond values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NsSummary {
    pub count: usize,
    pub min: i64,
    pub p50: i64,
    pub p95: i64,
    pub p99: i64,
    pub max: i64,
    pub mean: i64,
    /// How many values were negative (e.g. a receive time earlier than the stamp).
    pub negatives: usize,
}

impl NsSummary {
    /// Summarise `values`; `None` when empty. Sorts a copy, so callers keep their order.
    pub fn of(values: &[i64]) -> Option<NsSummary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_unstable();
        Some(Self::of_sorted(&v))
    }

    /// Summarise values that are already sorted ascending (not checked).
    pub fn of_sorted(v: &[i64]) -> NsSummary {
        assert!(!v.is_empty(), "NsSummary::of_sorted on an empty slice");
        // i128 so that sums of ~1e18 stamps cannot overflow.
        let sum: i128 = v.iter().map(|&x| x as i128).sum();
        NsSummary {
            count: v.len(),
            min: v[0],
            p50: quantile_sorted(v, 0.50),
            p95: quantile_sorted(v, 0.95),
            p99: quantile_sorted(v, 0.99),
            max: v[v.len() - 1],
            mean: (sum / v.len() as i128) as i64,
            negatives: v.iter().take_while(|&&x| x < 0).count(),
        }
    }
}

/// Quantile of sorted integers by linear interpolation between closest ranks
/// (numpy's default), rounded to the nearest nanosecond.
pub fn quantile_sorted(v: &[i64], q: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let q = q.clamp(0.0, 1.0);
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    if lo == hi {
        return v[lo];
    }
    let frac = pos - lo as f64;
    // Interpolate on the exact integer difference: f64 values near 1.7e18 are 256 ns apart.
    let d = v[hi] as i128 - v[lo] as i128;
    (v[lo] as i128 + (d as f64 * frac).round() as i128) as i64
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

/// Median of unsorted values (sorts a copy).
pub fn median_ns(values: &[i64]) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    Some(quantile_sorted(&v, 0.5))
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
    let d = b as i128 - a as i128;
    Some((a as i128 + (d as f64 * 0.5).round() as i128) as i64)
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

/// Fixed-width histogram of nanosecond values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    /// Left edge of the first bin.
    pub start_ns: i64,
    pub bin_width_ns: i64,
    pub counts: Vec<u64>,
}

impl Histogram {
    /// Histogram with bins of `bin_width_ns` covering `[min, max]` of the data.
    pub fn of(values: &[i64], bin_width_ns: i64) -> Option<Histogram> {
        let bin = bin_width_ns.max(1);
        let min = *values.iter().min()?;
        let max = *values.iter().max()?;
        let start = min.div_euclid(bin) * bin;
        let n = ((max - start) / bin + 1) as usize;
        let mut counts = vec![0u64; n];
        for &x in values {
            counts[((x - start) / bin) as usize] += 1;
        }
        Some(Histogram {
            start_ns: start,
            bin_width_ns: bin,
            counts,
        })
    }

    pub fn bin_centre(&self, i: usize) -> i64 {
        self.start_ns + self.bin_width_ns * i as i64 + self.bin_width_ns / 2
    }
}

/// Ordinary least squares fit `y = slope * x + intercept`, with x and y shifted by their first
/// values first so that epoch-sized nanosecond values keep their precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinearFit {
    pub slope: f64,
    /// y at x = `x0`.
    pub y_at_x0: f64,
    pub x0: i64,
    /// RMS of the residuals, in y units.
    pub residual_rms: f64,
    pub n: usize,
}

impl LinearFit {
    pub fn eval(&self, x: i64) -> f64 {
        self.y_at_x0 + self.slope * (x - self.x0) as f64
    }

    /// Least squares over (x, y) pairs. `None` with fewer than two points or no spread in x.
    pub fn fit(xs: &[i64], ys: &[i64]) -> Option<LinearFit> {
        let n = xs.len().min(ys.len());
        if n < 2 {
            return None;
        }
        let x0 = xs[0];
        let y0 = ys[0];
        let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..n {
            let x = (xs[i] - x0) as f64;
            let y = (ys[i] - y0) as f64;
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        let nf = n as f64;
        let den = nf * sxx - sx * sx;
        if den.abs() < f64::EPSILON {
            return None;
        }
        let slope = (nf * sxy - sx * sy) / den;
        let icpt = (sy - slope * sx) / nf;
        let mut ss = 0.0;
        for i in 0..n {
            let r = (ys[i] - y0) as f64 - (icpt + slope * (xs[i] - x0) as f64);
            ss += r * r;
        }
        Some(LinearFit {
            slope,
            y_at_x0: y0 as f64 + icpt,
            x0,
            residual_rms: (ss / nf).sqrt(),
            n,
        })
    }

    /// Fit, drop points whose residual exceeds `k` times the residual RMS (at least `floor`), refit.
    /// Repeats a few times: robust to the odd outlier (a late message, a pause).
    pub fn fit_robust(xs: &[i64], ys: &[i64], k: f64, floor: f64) -> Option<LinearFit> {
        let mut fit = Self::fit(xs, ys)?;
        let mut keep_x: Vec<i64> = xs.to_vec();
        let mut keep_y: Vec<i64> = ys.to_vec();
        for _ in 0..4 {
            let thr = (fit.residual_rms * k).max(floor);
            let (nx, ny): (Vec<i64>, Vec<i64>) = keep_x
                .iter()
                .zip(&keep_y)
                .filter(|(&x, &y)| (y as f64 - fit.eval(x)).abs() <= thr)
                .map(|(&x, &y)| (x, y))
                .unzip();
            if nx.len() == keep_x.len() || nx.len() < 2 {
                break;
            }
            keep_x = nx;
            keep_y = ny;
            fit = Self::fit(&keep_x, &keep_y)?;
        }
        Some(fit)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_in_place_equals_median_ns() {
        // A deterministic spread of sizes, duplicates and magnitudes near 1.7e18.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for n in 0..200usize {
            let v: Vec<i64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    1_700_000_000_000_000_000 + (x % 1000) as i64 * 1_000_003
                })
                .collect();
            let mut w = v.clone();
            assert_eq!(median_in_place(&mut w), median_ns(&v), "n = {n}");
        }
    }

    use super::*;

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
    fn histogram_bins_everything() {
        let h = Histogram::of(&[-3, 0, 1, 9, 10], 5).unwrap();
        assert_eq!(h.counts.iter().sum::<u64>(), 5);
        assert_eq!(h.start_ns, -5);
    }
}
