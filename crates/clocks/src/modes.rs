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
//!    * valley: the densest window (half-width `s/2`) of each side, and the sparsest window
//!      between the two peaks, must satisfy `valley ≤ max_valley_ratio × min(peaks)`. This
//!      rejects flat or one-sided shapes that pass the separation test by chance.
//! 3. Recurse on both sides (so more than two modes can be found), up to `max_modes`.
//!
//! Mode centres are the medians of the accepted clusters. Everything is computed on values
//! relative to the smallest one, so adding a constant to all values shifts every centre by
//! exactly that constant and never changes the number of modes.

use bagscope_stats::quantile_sorted;

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
            max_modes: 4,
        }
    }
}

/// Centres of the modes of `values` (any order), ascending. Empty input gives no modes; any
/// non-empty input gives at least one.
pub fn lag_modes_ns(values: &[i64], opts: &ModeOptions) -> Vec<i64> {
    lag_modes_ns_in_place(&mut values.to_vec(), opts)
}

/// [`lag_modes_ns`] without the copy: sorts `v` in place.
pub fn lag_modes_ns_in_place(v: &mut [i64], opts: &ModeOptions) -> Vec<i64> {
    if v.is_empty() {
        return Vec::new();
    }
    v.sort_unstable();
    let base = v[0];
    // Offsets from the minimum: exact in i128, then f64 (precision only matters for spreads).
    let r: Vec<f64> = v
        .iter()
        .map(|&x| (x as i128 - base as i128) as f64)
        .collect();
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
        match try_split(&r, lo, hi, min_count, opts) {
            Some(k) => {
                todo.push((lo, k));
                todo.push((k, hi));
            }
            None => done.push((lo, hi)),
        }
    }
    done.sort_unstable();
    done.iter()
        .map(|&(lo, hi)| quantile_sorted(&v[lo..hi], 0.5))
        .collect()
}

fn median_f64(s: &[f64]) -> f64 {
    bagscope_stats::quantile_sorted_f64(s, 0.5)
}

/// 1.4826 × MAD, falling back to IQR/1.349 when over half the values are equal.
fn robust_sigma(s: &[f64]) -> f64 {
    if s.len() < 2 {
        return 0.0;
    }
    let m = median_f64(s);
    let mut dev: Vec<f64> = s.iter().map(|x| (x - m).abs()).collect();
    let mad = 1.4826 * bagscope_stats::median_f64_in_place(&mut dev);
    if mad > 0.0 {
        return mad;
    }
    let iqr =
        bagscope_stats::quantile_sorted_f64(s, 0.75) - bagscope_stats::quantile_sorted_f64(s, 0.25);
    iqr / 1.349
}

/// Number of values of the sorted segment within `[c - w, c + w]`.
fn window_count(seg: &[f64], c: f64, w: f64) -> usize {
    let a = seg.partition_point(|&x| x < c - w);
    let b = seg.partition_point(|&x| x <= c + w);
    b - a
}

/// Densest window centred on a value of `side`; returns (count, centre). First on ties.
fn peak(seg: &[f64], side: &[f64], w: f64) -> (usize, f64) {
    let mut best = (0usize, side.first().copied().unwrap_or(0.0));
    for &c in side {
        let k = window_count(seg, c, w);
        if k > best.0 {
            best = (k, c);
        }
    }
    best
}

fn try_split(
    r: &[f64],
    lo: usize,
    hi: usize,
    min_count: usize,
    opts: &ModeOptions,
) -> Option<usize> {
    let seg = &r[lo..hi];
    let m = seg.len();
    if m < 2 * min_count {
        return None;
    }
    // Running sums relative to the segment's first value keep the SSE well conditioned; the
    // right part's sums are total minus prefix (no prefix arrays: 16 bytes a value less).
    let o = seg[0];
    let (mut total, mut total2) = (0.0f64, 0.0f64);
    for &x in seg {
        let y = x - o;
        total += y;
        total2 += y * y;
    }
    let sse = |s: f64, s2: f64, k: usize| s2 - s * s / k as f64;
    let mut best_k = 0usize;
    let mut best = f64::INFINITY;
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for (i, &x) in seg[..m - min_count].iter().enumerate() {
        let y = x - o;
        s1 += y;
        s2 += y * y;
        let k = i + 1;
        // Only cut between distinct values, so equal values never land in two clusters.
        if k < min_count || seg[k] == seg[k - 1] {
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
    let (left, right) = seg.split_at(best_k);
    let sep = median_f64(right) - median_f64(left);
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
    if p - v < opts.min_dip_z * (p + v).sqrt() {
        return None;
    }
    Some(lo + best_k)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn four_sigma_clusters_split() {
        for seed0 in 0..20u64 {
            let mut seed = seed0 + 100;
            let v: Vec<i64> = (0..400)
                .map(|i| (if i % 3 == 0 { 4e6 } else { 0.0 } + 1e6 * noise(&mut seed)) as i64)
                .collect();
            assert_eq!(
                lag_modes_ns(&v, &ModeOptions::default()).len(),
                2,
                "seed {seed0}"
            );
        }
    }

    #[test]
    fn extremes_do_not_panic() {
        let v = vec![i64::MIN, i64::MAX, 0, i64::MIN, i64::MAX, i64::MAX, 1, 2, 3];
        let m = lag_modes_ns(&v, &ModeOptions::default());
        assert!(!m.is_empty());
    }
}
