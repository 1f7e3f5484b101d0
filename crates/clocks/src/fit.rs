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
    pub fn eval(&self, x: i64) -> Option<i64> {
        let y = self.y_at_x0 + self.slope * (x as i128 - self.x0 as i128) as f64;
        f64_to_i64(y)
    }

    pub fn inverse(&self, y: i64) -> Option<i64> {
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
    // No |resid − c| exceeds the larger distance from c to an extreme (rounding is monotone):
    // when even that is within the floor, so is the MAD, and every point is kept, without
    // the passes that would show it.
    let dev_max = (hi - c).max(c - lo);
    let thr = if 4.0 * 1.4826 * dev_max <= FLOOR_NS {
        FLOOR_NS
    } else {
        (4.0 * 1.4826 * median_f64_streamed(|| (0..n).map(|i| (resid(i) - c).abs()))).max(FLOOR_NS)
    };
    // The points to fit are selected by the pass that sums them for the first fit.
    let mut keep = vec![false; n];
    let all = dev_max <= thr;
    let f = LinearFit::fit_robust_selected(
        xs,
        ys,
        &mut keep,
        |i| all || (resid(i) - c).abs() <= thr,
        3.0,
        FLOOR_NS,
    )
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
    fn degenerate() {
        assert!(robust_line(&[1], &[1]).is_none());
        assert!(robust_line(&[1, 1, 1], &[1, 2, 3]).is_none());
        assert!(robust_line(&[i64::MIN, i64::MAX], &[0, 1]).is_none());
        assert!(robust_line(&[0, 1], &[i64::MIN, i64::MAX]).is_none());
    }
}
