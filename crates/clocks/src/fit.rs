//! Robust straight-line fits of one clock against another.

use bagscope_stats::{median_f64_range_streamed, median_f64_streamed, LinearFit};

/// `y = y_at_x0 + slope · (x − x0)`, evaluated without i64 overflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Line {
    pub slope: f64,
    pub x0: i64,
    pub y_at_x0: f64,
}

impl Line {
    pub(crate) fn eval(&self, x: i64) -> Option<i64> {
        let y = self.y_at_x0 + self.slope * (x as i128 - self.x0 as i128) as f64;
        f64_to_i64(y)
    }

    pub(crate) fn inverse(&self, y: i64) -> Option<i64> {
        if !(self.slope.is_finite() && self.slope != 0.0) {
            return None;
        }
        crate::map::add_f64(self.x0, (y as f64 - self.y_at_x0) / self.slope)
    }
}

pub(crate) fn f64_to_i64(y: f64) -> Option<i64> {
    if y.is_finite() && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&y) {
        Some(y.round() as i64)
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RobustFit {
    pub line: Line,
    pub residual_rms: f64,
    pub n: usize,
}

/// Residuals below this are never treated as outliers (1 ms): jitter-free synthetic data has a
/// zero MAD, and a millisecond is well below any pause or reset we want to reject.
const FLOOR_NS: f64 = 1e6;

fn span_ok(v: &[i64]) -> bool {
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for &x in v {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    // LinearFit subtracts the first value from every other one in i64: keep that in range.
    (hi as i128 - lo as i128) < (i64::MAX as i128) / 2
}

/// The start line's threshold, max(K·MAD, floor) of the deviations `dev(0..n)` whose largest
/// is `dev_max`, and whether every point is within it. The threshold's value matters only
/// when some point is not (it is the floor otherwise).
fn threshold(n: usize, dev: impl Fn(usize) -> f64, dev_max: f64) -> (f64, bool) {
    const K: f64 = 4.0 * 1.4826;
    // K·MAD ≥ dev_max when MAD ≥ t with K·t ≥ dev_max (rounding is monotone), that is when
    // at most `(n − 1) / 2` deviations (the lower middle rank) are below t: one counting
    // pass instead of the selection of the MAD. The usual case on recorded data: the start
    // line's small slope error grows into residuals spread over the whole bag.
    let mad_reaches = || {
        let t = dev_max / K;
        K * t >= dev_max && (0..n).filter(|&i| dev(i) < t).count() <= (n - 1) / 2
    };
    if dev_max <= FLOOR_NS || mad_reaches() {
        (FLOOR_NS, true)
    } else {
        let thr = (K * median_f64_streamed(|| (0..n).map(&dev))).max(FLOOR_NS);
        (thr, dev_max <= thr)
    }
}

/// Robust fit of `ys` against `xs`:
/// 1. start from the median of consecutive step slopes (insensitive to pauses and outliers,
///    which plain least squares is not);
/// 2. keep points within max(4 × 1.4826·MAD, 1 ms) of that line;
/// 3. refine with `LinearFit::fit_robust` (least squares, 3-sigma trimming) on those points.
///
/// `None` with fewer than two points, no spread in x, or spans that could overflow.
pub(crate) fn robust_line(xs: &[i64], ys: &[i64]) -> Option<RobustFit> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let (xs, ys) = (&xs[..n], &ys[..n]);
    if !span_ok(xs) || !span_ok(ys) {
        return None;
    }
    // span_ok keeps every difference below in i64 (exact, and far cheaper to turn into f64
    // than i128). Medians by streamed selection: no per-point buffer.
    let slopes = || {
        xs.windows(2).zip(ys.windows(2)).filter_map(|(x, y)| {
            let dx = x[1] - x[0];
            (dx > 0).then(|| (y[1] - y[0]) as f64 / dx as f64)
        })
    };
    // No step forward in x: no slope to take.
    slopes().next()?;
    let slope0 = median_f64_streamed(slopes);
    let (x0, y0) = (xs[0], ys[0]);
    let resid = |i: usize| (ys[i] - y0) as f64 - slope0 * (xs[i] - x0) as f64;
    let (c, lo, hi) = median_f64_range_streamed(|| (0..n).map(resid));
    // No |resid − c| exceeds the larger distance from c to an extreme (rounding is monotone).
    let dev_max = (hi - c).max(c - lo);
    let dev = |i: usize| (resid(i) - c).abs();
    let (thr, all) = threshold(n, dev, dev_max);
    // The points to fit are selected by the pass that sums them for the first fit.
    let mut keep = vec![false; n];
    let f =
        LinearFit::fit_robust_selected(xs, ys, &mut keep, |i| all || dev(i) <= thr, 3.0, FLOOR_NS)
            .or_else(|| LinearFit::fit_robust(xs, ys, 3.0, FLOOR_NS))?;
    if !(f.slope.is_finite() && f.y_at_x0.is_finite()) {
        return None;
    }
    Some(RobustFit {
        line: Line {
            slope: f.slope,
            x0: f.x0,
            y_at_x0: f.y_at_x0,
        },
        residual_rms: f.residual_rms,
        n: f.n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_with_pause() {
        // 0.9x sim with a 2 s pause in the middle (clock keeps publishing the same value).
        let log: Vec<i64> = (0..2000)
            .map(|i| 1_700_000_000_000_000_000 + i * 10_000_000)
            .collect();
        let mut sim = Vec::new();
        let mut s = 5_000_000_000i64;
        for i in 0..2000 {
            if !(800..1000).contains(&i) {
                s += 9_000_000;
            }
            sim.push(s);
        }
        let f = robust_line(&log, &sim).unwrap();
        assert!((f.line.slope - 0.9).abs() < 1e-3, "{}", f.line.slope);
    }

    #[test]
    fn threshold_decides_as_the_mad_itself() {
        // The plain rule: the MAD selected, then compared.
        let reference = |d: &[f64], dev_max: f64| {
            const K: f64 = 4.0 * 1.4826;
            let thr = if K * dev_max <= FLOOR_NS {
                FLOOR_NS
            } else {
                let mad = bagscope_stats::median_f64_in_place(&mut d.to_vec());
                (K * mad).max(FLOOR_NS)
            };
            (thr, dev_max <= thr)
        };
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut r = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut shortcuts = 0;
        for case in 0..3000 {
            let n = 2 + (r() % 60) as usize;
            // Deviations of a spread around the boundary K·MAD = dev_max: a bulk at one scale
            // and a tail at another, with ties and exact multiples.
            let bulk = (1 + r() % 4_000_000) as f64;
            let tail = bulk * [1.0, 2.0, 5.9304, 6.0, 20.0][(r() % 5) as usize];
            let tail_share = (r() % 100) as usize;
            let d: Vec<f64> = (0..n)
                .map(|i| {
                    let u = (r() % 1001) as f64 / 1000.0;
                    if i * 100 < tail_share * n {
                        tail * u
                    } else {
                        bulk * u
                    }
                })
                .collect();
            let dev_max = d.iter().cloned().fold(0.0, f64::max);
            let want = reference(&d, dev_max);
            let got = threshold(n, |i| d[i], dev_max);
            assert_eq!(got.1, want.1, "case {case}: {d:?}");
            if !got.1 {
                assert_eq!(got.0, want.0, "case {case}");
            }
            shortcuts += usize::from(got.1 && dev_max > FLOOR_NS);
        }
        // The counting shortcut was taken, not only the floor.
        assert!(shortcuts > 100, "{shortcuts}");
    }

    #[test]
    fn degenerate() {
        assert!(robust_line(&[1], &[1]).is_none());
        assert!(robust_line(&[1, 1, 1], &[1, 2, 3]).is_none());
        assert!(robust_line(&[i64::MIN, i64::MAX], &[0, 1]).is_none());
        assert!(robust_line(&[0, 1], &[i64::MIN, i64::MAX]).is_none());
    }
}
