//! Mode finding for 1-D lag distributions.
//!
//! Method (chosen over a fixed-bin histogram because lag distributions are skewed, with a long
//! tail, and a histogram's bin width would have to be tuned per topic):
//!
//! 1. Sort; find the best two-way split of the sorted values (1-D 2-means: the cut minimising the
//!    summed squared deviation of both halves, over cuts leaving each side ≥ `min_fraction` of
//!    the whole series).
//! 2. Accept the split only if
//!    * separation: `median(right) − median(left) ≥ min_separation × s`, where `s` is the larger
//!      of the two sides' robust sigmas (1.4826 × MAD). A single Gaussian cut in half gives
//!      ≈2.3, a uniform ≈2.7, an exponential tail ≈1.8; two clusters 4σ apart give ≈4.3.
//!      A robust sigma from k values is noisy, and the best cut is the one that looks most
//!      separated, so a side of few values needs more: `× (1 + small_sample/√k)`, k the
//!      smaller side's count (with 1.5: ×1.3 at k = 25, ×1.07 at k = 500), unless the dip
//!      below is strong (`strong_dip_z`).
//!    * valley: the densest window (half-width `s/2`) of each side, and the sparsest window
//!      between the two peaks, must satisfy `valley ≤ max_valley_ratio × min(peaks)`. This
//!      rejects flat or one-sided shapes that pass the separation test by chance.
//!    * not flat: a segment consistent with one uniform block between its extremes
//!      (Kolmogorov-Smirnov, 5% level) is not split. A flat block (a polling driver's lag) has
//!      no valley, yet its best cut passed both bounds above by chance.
//! 3. Recurse on both sides (so more than two modes can be found), up to `max_modes`.
//!
//! Error rates (ignored scans in tests/props.rs; before the last two rules → now): a uniform
//! block of 100-200 values split falsely 8% → 0-0.2% of the time; two uniform blocks, a third
//! of 133 values in the second, got a wrong count 21% → 0.8%; a half-normal lag tail of 100
//! values 2.7% → 0%. The price is power on small samples: two Gaussian clusters 4σ apart
//! holding 1/3 and 2/3 of 400 values are missed 4% instead of 1.3% of the time, a 5σ one
//! holding 15% of 200 values 12% instead of 4%; from 1000 values on nothing changes.
//!
//! Mode centres are the medians of the accepted clusters. Everything is computed on values
//! relative to the smallest one, so adding a constant to all values shifts every centre by
//! exactly that constant and never changes the number of modes.

use bagscope_stats::quantile_sorted_of;

/// Tuning of [`lag_modes_ns`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModeOptions {
    /// Each mode must hold at least this fraction of all values.
    pub min_fraction: f64,
    /// Minimum distance between cluster medians in units of the larger cluster's robust sigma.
    pub min_separation: f64,
    /// Maximum density between two peaks relative to the smaller peak.
    pub max_valley_ratio: f64,
    /// The dip must be significant against counting noise: `peak − valley ≥ z·√(peak + valley)`.
    pub min_dip_z: f64,
    /// Small-sample margin on `min_separation`: the threshold is
    /// `min_separation · (1 + small_sample / √k)`, k the smaller side's count.
    pub small_sample: f64,
    /// A dip this significant (z) waives the small-sample margin.
    pub strong_dip_z: f64,
    /// A segment whose Kolmogorov-Smirnov distance to a flat block is below this (√n·D) is
    /// not split; 0 disables the check.
    pub uniform_ks: f64,
    /// Stop splitting beyond this many modes.
    pub max_modes: usize,
}

impl Default for ModeOptions {
    fn default() -> Self {
        ModeOptions {
            min_fraction: 0.10,
            min_separation: 3.0,
            max_valley_ratio: 0.6,
            min_dip_z: 2.0,
            small_sample: 1.5,
            strong_dip_z: 3.0,
            uniform_ks: 1.36,
            max_modes: 4,
        }
    }
}

/// Centres of the modes of `values` (any order), ascending. Empty input gives no modes; any
/// non-empty input gives at least one.
pub fn lag_modes_ns(values: &[i64], opts: &ModeOptions) -> Vec<i64> {
    lag_modes_ns_in_place(&mut values.to_vec(), opts)
}

/// A lag as stored for the mode search: `i64`, or `i32` when every lag of a topic fits (half
/// the memory and the sorting time).
pub(crate) trait LagValue: Copy + Ord + Into<i64> + radsort::Key {}
impl LagValue for i64 {}
impl LagValue for i32 {}

/// [`lag_modes_ns`] without the copy: sorts `v` in place and needs no other per-value memory.
pub(crate) fn lag_modes_ns_in_place<T: LagValue>(v: &mut [T], opts: &ModeOptions) -> Vec<i64> {
    // Radix sort: a third of a comparison sort's time on a million lags; the same order.
    radsort::sort(v);
    lag_modes_ns_sorted(v, opts)
}

/// [`lag_modes_ns`] of values already sorted ascending (not checked).
pub(crate) fn lag_modes_ns_sorted<T: LagValue>(v: &[T], opts: &ModeOptions) -> Vec<i64> {
    if v.is_empty() {
        return Vec::new();
    }
    let r = Offsets {
        v,
        base: v[0].into(),
    };
    let n = v.len();
    let min_count = ((opts.min_fraction.max(0.0) * n as f64).ceil() as usize).max(3);
    let max_modes = opts.max_modes.max(1);

    // Work list of [lo, hi) segments; split until no segment accepts a split.
    let mut done: Vec<(usize, usize)> = Vec::new();
    let mut todo: Vec<(usize, usize)> = vec![(0, n)];
    while let Some((lo, hi)) = todo.pop() {
        if done.len() + todo.len() + 1 >= max_modes {
            done.push((lo, hi));
            continue;
        }
        match try_split(r.seg(lo, hi), lo, min_count, opts) {
            Some(k) => {
                todo.push((lo, k));
                todo.push((k, hi));
            }
            None => done.push((lo, hi)),
        }
    }
    done.sort_unstable();
    done.iter()
        .map(|&(lo, hi)| quantile_sorted_of(&v[lo..hi], 0.5))
        .collect()
}

/// `x − base` as f64, rounded once: i64 arithmetic when the difference fits (i128 to f64 is
/// a software routine), the same value either way.
fn offset(x: i64, base: i64) -> f64 {
    match x.checked_sub(base) {
        Some(d) => d as f64,
        None => (x as i128 - base as i128) as f64,
    }
}

/// Sorted values as offsets from the minimum, computed when read (exact in i128, then f64:
/// precision only matters for spreads) instead of stored: an f64 copy would be 8 bytes a value.
struct Offsets<'a, T> {
    v: &'a [T],
    base: i64,
}

// Not derived: a derive would ask T: Clone of the reference's target too.
impl<T> Clone for Offsets<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Offsets<'_, T> {}

impl<'a, T: LagValue> Offsets<'a, T> {
    fn at(&self, i: usize) -> f64 {
        offset(self.v[i].into(), self.base)
    }

    fn len(&self) -> usize {
        self.v.len()
    }

    fn seg(&self, lo: usize, hi: usize) -> Offsets<'a, T> {
        Offsets {
            v: &self.v[lo..hi],
            base: self.base,
        }
    }

    fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.len()).map(|i| self.at(i))
    }

    /// Number of values before the first one for which `pred` is false (`pred` monotone).
    fn partition_point(&self, pred: impl Fn(f64) -> bool) -> usize {
        self.v
            .partition_point(|&x| pred((x.into() as i128 - self.base as i128) as f64))
    }

    /// Quantile, same convention as `bagscope_stats::quantile_sorted_f64`.
    fn quantile(&self, q: f64) -> f64 {
        if self.v.is_empty() {
            return f64::NAN;
        }
        let pos = q.clamp(0.0, 1.0) * (self.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        self.at(lo) + (self.at(hi) - self.at(lo)) * (pos - lo as f64)
    }
}

/// Median of `|x - m|` over sorted values, same convention as
/// `bagscope_stats::median_f64_in_place`, without a buffer: the deviations are two sorted runs
/// (leftwards and rightwards of `m`), and the middle of their merge is found by bisection
/// (O(log² n) instead of merging half the values).
fn median_abs_dev<T: LagValue>(s: Offsets<'_, T>, m: f64) -> f64 {
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    let split = s.partition_point(|x| x < m);
    let pos = 0.5 * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let a = kth_deviation(s, m, split, lo);
    if pos == lo as f64 {
        return a;
    }
    let b = kth_deviation(s, m, split, lo + 1);
    a + (b - a) * (pos - lo as f64)
}

/// The `k`-th (0-based) smallest `|x - m|` of sorted values, `m` between the first `split`
/// values and the rest: the deviations leftwards of `split` and rightwards of it are each
/// non-decreasing (rounding is monotone), so the `k + 1` smallest are the first `i` of one run
/// and the first `k + 1 − i` of the other, for the `i` found by bisection.
fn kth_deviation<T: LagValue>(s: Offsets<'_, T>, m: f64, split: usize, k: usize) -> f64 {
    let (nl, nr) = (split, s.len() - split);
    let left = |j: usize| (s.at(split - 1 - j) - m).abs();
    let right = |j: usize| (s.at(split + j) - m).abs();
    let want = k + 1;
    let (mut lo, mut hi) = (want.saturating_sub(nr), want.min(nl));
    loop {
        let i = lo + (hi - lo) / 2;
        let j = want - i;
        if i < nl && j > 0 && right(j - 1) > left(i) {
            // left(i) is smaller than a value taken from the right: take more from the left.
            lo = i + 1;
        } else if i > 0 && j < nr && left(i - 1) > right(j) {
            hi = i - 1;
        } else {
            let l = (i > 0).then(|| left(i - 1));
            let r = (j > 0).then(|| right(j - 1));
            return match (l, r) {
                (Some(a), Some(b)) => a.max(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => f64::NAN,
            };
        }
    }
}

/// 1.4826 × MAD, falling back to IQR/1.349 when over half the values are equal.
fn robust_sigma<T: LagValue>(s: Offsets<'_, T>) -> f64 {
    if s.len() < 2 {
        return 0.0;
    }
    let m = s.quantile(0.5);
    let mad = 1.4826 * median_abs_dev(s, m);
    if mad > 0.0 {
        return mad;
    }
    let iqr = s.quantile(0.75) - s.quantile(0.25);
    iqr / 1.349
}

/// Number of values of the sorted segment within `[c - w, c + w]`.
fn window_count<T: LagValue>(seg: Offsets<'_, T>, c: f64, w: f64) -> usize {
    let a = seg.partition_point(|x| x < c - w);
    let b = seg.partition_point(|x| x <= c + w);
    b - a
}

/// Densest window centred on a value of `side`; returns (count, centre). First on ties.
fn peak<T: LagValue>(seg: Offsets<'_, T>, side: Offsets<'_, T>, w: f64) -> (usize, f64) {
    let mut best = (0usize, if side.len() > 0 { side.at(0) } else { 0.0 });
    for c in side.iter() {
        let k = window_count(seg, c, w);
        if k > best.0 {
            best = (k, c);
        }
    }
    best
}

/// Best split of the sorted segment starting at `lo` (absolute index), if it is two modes.
fn try_split<T: LagValue>(
    seg: Offsets<'_, T>,
    lo: usize,
    min_count: usize,
    opts: &ModeOptions,
) -> Option<usize> {
    let m = seg.len();
    if m < 2 * min_count {
        return None;
    }
    if opts.uniform_ks > 0.0 && looks_uniform(seg, opts.uniform_ks) {
        return None;
    }
    // Running sums relative to the segment's first value keep the SSE well conditioned; the
    // right part's sums are total minus prefix (no prefix arrays: 16 bytes a value less).
    let o = seg.at(0);
    let (mut total, mut total2) = (0.0f64, 0.0f64);
    for x in seg.iter() {
        let y = x - o;
        total += y;
        total2 += y * y;
    }
    let sse = |s: f64, s2: f64, k: usize| s2 - s * s / k as f64;
    let mut best_k = 0usize;
    let mut best = f64::INFINITY;
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for i in 0..m - min_count {
        let y = seg.at(i) - o;
        s1 += y;
        s2 += y * y;
        let k = i + 1;
        // Only cut between distinct values, so equal values never land in two clusters.
        if k < min_count || seg.at(k) == seg.at(k - 1) {
            continue;
        }
        let c = sse(s1, s2, k) + sse(total - s1, total2 - s2, m - k);
        if c < best {
            best = c;
            best_k = k;
        }
    }
    if best_k == 0 {
        return None;
    }
    let (left, right) = (seg.seg(0, best_k), seg.seg(best_k, m));
    let sep = right.quantile(0.5) - left.quantile(0.5);
    // 1 ns floor: clusters of identical values have zero spread but are still resolvable.
    let s = robust_sigma(left).max(robust_sigma(right)).max(1.0);
    if sep.is_nan() || sep < opts.min_separation * s {
        return None;
    }
    let w = 0.5 * s;
    let (pl, cl) = peak(seg, left, w);
    let (pr, cr) = peak(seg, right, w);
    // Sparsest window between the two peaks, on a fixed grid (deterministic, O(grid · log m)).
    const GRID: usize = 64;
    let mut valley = usize::MAX;
    for g in 1..GRID {
        let c = cl + (cr - cl) * g as f64 / GRID as f64;
        valley = valley.min(window_count(seg, c, w));
    }
    if valley == usize::MAX {
        return None;
    }
    let (p, v) = (pl.min(pr) as f64, valley as f64);
    if v > opts.max_valley_ratio * p {
        return None;
    }
    // The dip must also be significant against counting noise (Poisson, 2 sigma): small
    // samples of a long tail clump by chance.
    let dip_z = (p - v) / (p + v).sqrt();
    if dip_z < opts.min_dip_z {
        return None;
    }
    // Either side's robust sigma is noisy over few values, and the best cut is the one that
    // looks most separated: a flat block passes the separation bound by chance. Small sides
    // need more separation, unless the dip is strong (on a flat block the dip is counting
    // noise, whose z does not grow with the sample; a real valley's grows with √k).
    let k_small = best_k.min(m - best_k) as f64;
    let small_sep = opts.min_separation * (1.0 + opts.small_sample / k_small.sqrt());
    if sep < small_sep * s && dip_z < opts.strong_dip_z {
        return None;
    }
    Some(lo + best_k)
}

/// Whether the sorted segment is consistent with one flat block between its extremes:
/// Kolmogorov-Smirnov distance to that uniform, `√m · D < critical` (1.36: 5% level).
/// A flat block (a polling driver's lag) has no valley, but its best cut often passes the
/// separation and valley bounds by chance at a few hundred values; two real clusters, or one
/// peaked cluster, are far from flat.
fn looks_uniform<T: LagValue>(seg: Offsets<'_, T>, critical: f64) -> bool {
    let m = seg.len();
    let (lo, hi) = (seg.at(0), seg.at(m - 1));
    let range = hi - lo;
    if m < 3 || range <= 0.0 {
        return false;
    }
    // Stops at the first point beyond the bound: peaked data leaves early, usually within the
    // first few percent of the values.
    let mf = m as f64;
    let bound = critical / mf.sqrt();
    seg.iter().enumerate().all(|(i, x)| {
        let u = (x - lo) / range;
        let (below, above) = (i as f64 / mf, (i + 1) as f64 / mf);
        u - below < bound && above - u < bound
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deviations' middle by merging the two runs, as first written.
    fn mad_by_merge(s: Offsets<'_, i64>, m: f64) -> f64 {
        let n = s.len();
        let split = s.partition_point(|x| x < m);
        let (mut l, mut r) = (split, split);
        let mut next = || {
            let dl = (l > 0).then(|| (s.at(l - 1) - m).abs());
            let dr = (r < n).then(|| (s.at(r) - m).abs());
            match (dl, dr) {
                (Some(a), Some(b)) if a.total_cmp(&b).is_le() => {
                    l -= 1;
                    a
                }
                (Some(a), None) => {
                    l -= 1;
                    a
                }
                (_, Some(b)) => {
                    r += 1;
                    b
                }
                (None, None) => f64::NAN,
            }
        };
        let pos = 0.5 * (n - 1) as f64;
        let lo = pos.floor() as usize;
        let mut a = next();
        for _ in 0..lo {
            a = next();
        }
        if pos == lo as f64 {
            return a;
        }
        let b = next();
        a + (b - a) * (pos - lo as f64)
    }

    #[test]
    fn bisected_mad_equals_the_merge() {
        let mut seed = 3u64;
        for case in 0..300usize {
            let n = 1 + case % 57 + (case / 57) * 13;
            let mut v: Vec<i64> = (0..n)
                .map(|i| match case % 4 {
                    0 => (1e5 * noise(&mut seed)) as i64,
                    1 => (i % 5) as i64 * 1000,
                    2 => (i * i) as i64,
                    _ => 7,
                })
                .collect();
            v.sort_unstable();
            let s = Offsets { v: &v, base: v[0] };
            let med = s.quantile(0.5);
            for m in [
                med,
                med + 0.5,
                s.at(0),
                s.at(n - 1),
                med - 1234.0,
                s.at(n / 3),
            ] {
                let (got, want) = (median_abs_dev(s, m), mad_by_merge(s, m));
                assert_eq!(got.to_bits(), want.to_bits(), "case {case}, m {m}");
            }
        }
    }

    #[test]
    fn narrow_lags_give_the_same_modes_as_wide_ones() {
        // The analysis keeps lags as i32 when they fit: same centres, same count.
        let mut seed = 7u64;
        let o = ModeOptions::default();
        for shape in 0..4 {
            let v: Vec<i64> = (0..3000)
                .map(|i| {
                    let x = match shape {
                        0 => 1.5e6 * noise(&mut seed),
                        1 => (if i % 3 == 0 { 4e6 } else { 0.0 }) + 1e6 * noise(&mut seed),
                        2 => (i * 20_000) as f64,
                        _ => (if i % 2 == 0 { -9e8 } else { 9e8 }) + 1e3 * noise(&mut seed),
                    };
                    x as i64 + 3_000_000
                })
                .collect();
            let mut narrow: Vec<i32> = v.iter().map(|&x| i32::try_from(x).unwrap()).collect();
            assert_eq!(
                lag_modes_ns_in_place(&mut narrow, &o),
                lag_modes_ns(&v, &o),
                "shape {shape}"
            );
        }
    }

    #[test]
    fn equal_values_are_one_mode_at_that_value() {
        // The analysis reports this without sorting when a topic's lags are all equal.
        for n in [1usize, 2, 5, 100, 10_000] {
            for v in [-3_000_000i64, 0, 7, i64::MAX] {
                assert_eq!(lag_modes_ns(&vec![v; n], &ModeOptions::default()), vec![v]);
            }
        }
    }

    /// Deterministic pseudo-normal noise (sum of uniforms) so the tests need no RNG crate.
    pub(crate) fn noise(seed: &mut u64) -> f64 {
        let mut s = 0.0;
        for _ in 0..12 {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s += (*seed >> 11) as f64 / (1u64 << 53) as f64;
        }
        s - 6.0
    }

    #[test]
    fn empty_and_constant() {
        let o = ModeOptions::default();
        assert!(lag_modes_ns(&[], &o).is_empty());
        assert_eq!(lag_modes_ns(&[5], &o), vec![5]);
        assert_eq!(lag_modes_ns(&[7; 100], &o), vec![7]);
    }

    #[test]
    fn two_exact_values() {
        let v: Vec<i64> = (0..300).map(|i| if i % 3 == 2 { 22 } else { 10 }).collect();
        assert_eq!(lag_modes_ns(&v, &ModeOptions::default()), vec![10, 22]);
    }

    #[test]
    fn gaussian_is_one_mode() {
        for seed0 in 0..20u64 {
            let mut seed = seed0;
            let v: Vec<i64> = (0..400)
                .map(|_| 10_000_000 + (1.5e6 * noise(&mut seed)) as i64)
                .collect();
            assert_eq!(
                lag_modes_ns(&v, &ModeOptions::default()).len(),
                1,
                "seed {seed0}"
            );
        }
    }

    #[test]
    fn uniform_and_exponential_are_one_mode() {
        let u: Vec<i64> = (0..500).map(|i| i * 20_000).collect();
        assert_eq!(lag_modes_ns(&u, &ModeOptions::default()).len(), 1);
        let e: Vec<i64> = (0..500)
            .map(|i| (-(1.0 - (i as f64 + 0.5) / 500.0).ln() * 1e6) as i64)
            .collect();
        assert_eq!(lag_modes_ns(&e, &ModeOptions::default()).len(), 1);
    }

    /// Two clusters 4σ apart, a third in the smaller, 400 values: found nearly always. (Not
    /// always: the small-sample margin trades a few of these, 6 in 100 here and 13 in 300 in
    /// the scan of tests/props.rs, against rarer false splits of small samples.)
    #[test]
    fn four_sigma_clusters_split() {
        let missed: Vec<u64> = (0..100u64)
            .filter(|seed0| {
                let mut seed = seed0 + 100;
                let v: Vec<i64> = (0..400)
                    .map(|i| (if i % 3 == 0 { 4e6 } else { 0.0 } + 1e6 * noise(&mut seed)) as i64)
                    .collect();
                lag_modes_ns(&v, &ModeOptions::default()).len() != 2
            })
            .collect();
        assert!(missed.len() <= 10, "missed with seeds {missed:?}");
    }

    #[test]
    fn extremes_do_not_panic() {
        let v = vec![i64::MIN, i64::MAX, 0, i64::MIN, i64::MAX, i64::MAX, 1, 2, 3];
        let m = lag_modes_ns(&v, &ModeOptions::default());
        assert!(!m.is_empty());
    }
}
