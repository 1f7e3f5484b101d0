//! Exact order statistics of a sequence that can be produced again, without storing it.
//!
//! Analyses of a whole bag take medians and percentiles of values derived per message (lags,
//! periods, residuals). Materialising each one costs 8 bytes a message of scratch; here the
//! values are produced again on every pass instead (a closure returning an iterator), and the
//! wanted ranks are narrowed by value range. The first pass takes count, extremes and a
//! positional sample; quantiles of the sample bracket each wanted rank, and a second pass
//! counts the values below each bracket exactly and gathers those inside, from which the ranks
//! are selected: two passes for typical data, whatever its spread. Where a bracket missed its
//! rank (a sample unlike the sequence) or holds too many values (heavy duplicates), the exact
//! counts narrow that rank's window and histogram passes (one per 14 bits of spread left)
//! finish it. Results are identical to selecting on a collected copy
//! ([`crate::quantiles_in_place`], [`crate::NsSummary::of_in_place`]).

use crate::{lerp, quantiles_in_place, NsSummary};

/// Histogram buckets per pass: 2^14 counters stay in the L2 cache.
const BUCKET_BITS: u32 = 14;
/// A window holding at most this many values is gathered and selected directly.
const GATHER_MAX: usize = 1 << 15;

/// The first pass keeps every `stride`-th value, the stride starting at 16 and doubling
/// whenever the sample reaches this size (which halves it): at most this many values.
const SAMPLE_MAX: usize = 1 << 15;

/// Count, extremes, sum and negatives of the values, and a positional sample: the first pass.
struct Moments {
    n: usize,
    min: i64,
    max: i64,
    sum: i128,
    negatives: usize,
    sample: Vec<i64>,
}

fn moments(values: impl Iterator<Item = i64>) -> Moments {
    let mut m = Moments {
        n: 0,
        min: i64::MAX,
        max: i64::MIN,
        sum: 0,
        negatives: 0,
        sample: Vec::new(),
    };
    // Sampled positions are the multiples of mask + 1.
    let mut mask = 15usize;
    for x in values {
        if m.n & mask == 0 {
            m.sample.push(x);
            if m.sample.len() == SAMPLE_MAX {
                // Keep the multiples of twice the stride (the next sampled position is one).
                let mut w = 0;
                for r in (0..SAMPLE_MAX).step_by(2) {
                    m.sample[w] = m.sample[r];
                    w += 1;
                }
                m.sample.truncate(w);
                mask = mask * 2 + 1;
            }
        }
        m.n += 1;
        m.min = m.min.min(x);
        m.max = m.max.max(x);
        m.sum += x as i128;
        m.negatives += usize::from(x < 0);
    }
    m
}

/// Values gathered per bracket at most (1 MiB); a fuller bracket is narrowed by histograms.
const BRACKET_GATHER_MAX: usize = 1 << 17;

/// One bracket of the sample-guided pass: values `lo..=hi`, how many are below `lo`, how many
/// inside, and those inside (while they fit).
struct Bracket {
    lo: i64,
    hi: i64,
    below: usize,
    inside: usize,
    gathered: Vec<i64>,
    len: usize,
}

/// The counting pass over `W` brackets: per value, branch-free counts of the brackets it is
/// below (which side a value falls is data, not a predictable branch), and the rare branch
/// that gathers it into a bracket. Counters in fixed arrays stay in registers.
fn count_brackets<const W: usize, I: Iterator<Item = i64>>(values: I, brackets: &mut [Bracket]) {
    let los: [i64; W] = std::array::from_fn(|j| brackets[j].lo);
    let spans: [u64; W] =
        std::array::from_fn(|j| brackets[j].hi.wrapping_sub(brackets[j].lo) as u64);
    let mut below = [0usize; W];
    let mut inside = [0usize; W];
    for x in values {
        for j in 0..W {
            below[j] += usize::from(x < los[j]);
        }
        for j in 0..W {
            if (x.wrapping_sub(los[j]) as u64) <= spans[j] {
                inside[j] += 1;
                let b = &mut brackets[j];
                if let Some(g) = b.gathered.get_mut(b.len) {
                    *g = x;
                    b.len += 1;
                }
            }
        }
    }
    for (j, b) in brackets.iter_mut().enumerate().take(W) {
        b.below = below[j];
        b.inside = inside[j];
    }
}

/// The sample-guided pass: brackets the ranks (ascending) by quantiles of the sample, counts
/// the values below and inside each bracket in one pass, and selects the ranks their bracket
/// holds from the values gathered there. Every other rank gets the exact window (bracket, or
/// the gap between two) that holds it in `win`, for the histogram rounds.
fn narrow_by_sample<I, F>(
    values: &F,
    m: &Moments,
    ranks: &[usize],
    win: &mut [Window],
    out: &mut [Option<i64>],
) where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    let s = m.sample.len();
    if s < 64 || ranks.is_empty() {
        return;
    }
    // Sample index range of each rank's bracket: its expected position ± 3.5 standard
    // deviations of a sample quantile (binomial), plus a little for small samples.
    let spans: Vec<(Option<usize>, Option<usize>)> = ranks
        .iter()
        .map(|&r| {
            let q = r as f64 / m.n as f64;
            let centre = q * s as f64;
            let d = 3.5 * (s as f64 * q * (1.0 - q)).sqrt() + 4.0;
            let (lo, hi) = ((centre - d).floor(), (centre + d).ceil());
            (
                (lo >= 0.0).then_some(lo as usize),
                (hi < s as f64).then_some(hi as usize),
            )
        })
        .collect();
    // The sample's values at those indexes, each selected from what is right of the last.
    let mut want: Vec<usize> = spans.iter().flat_map(|&(a, b)| [a, b]).flatten().collect();
    want.sort_unstable();
    want.dedup();
    let mut smp = m.sample.clone();
    let mut at: Vec<i64> = Vec::with_capacity(want.len());
    let (mut base, mut rest) = (0usize, &mut smp[..]);
    for &i in &want {
        let (_, v, tail) = rest.select_nth_unstable(i - base);
        at.push(*v);
        (base, rest) = (i + 1, tail);
    }
    let value = |i: usize| at[want.binary_search(&i).unwrap_or(0)];
    // Brackets ascending, merged where they meet.
    let mut brackets: Vec<Bracket> = Vec::with_capacity(ranks.len());
    for &(a, b) in &spans {
        let (lo, hi) = (a.map_or(m.min, value), b.map_or(m.max, value));
        match brackets.last_mut() {
            Some(last) if lo <= last.hi => last.hi = last.hi.max(hi),
            _ => brackets.push(Bracket {
                lo,
                hi,
                below: 0,
                inside: 0,
                gathered: Vec::new(),
                len: 0,
            }),
        }
    }
    for b in &mut brackets {
        // Equal ends hold one value: counting is enough.
        if b.lo != b.hi {
            b.gathered = vec![0; BRACKET_GATHER_MAX];
        }
    }
    match brackets.len() {
        1 => count_brackets::<1, _>(values(), &mut brackets),
        2 => count_brackets::<2, _>(values(), &mut brackets),
        3 => count_brackets::<3, _>(values(), &mut brackets),
        4 => count_brackets::<4, _>(values(), &mut brackets),
        _ => {
            for chunk in brackets.chunks_mut(4) {
                match chunk.len() {
                    1 => count_brackets::<1, _>(values(), chunk),
                    2 => count_brackets::<2, _>(values(), chunk),
                    3 => count_brackets::<3, _>(values(), chunk),
                    _ => count_brackets::<4, _>(values(), chunk),
                }
            }
        }
    }
    // Each rank's region, from the exact counts: the gap before bracket j, then bracket j.
    for (k, &r) in ranks.iter().enumerate() {
        let mut prev_end = 0usize; // values up to the end of the previous bracket
        for j in 0..=brackets.len() {
            let (gap_lo, gap_hi, gap_end) = match (j.checked_sub(1), brackets.get(j)) {
                (p, Some(b)) => (
                    p.map_or(Some(m.min), |p| brackets[p].hi.checked_add(1)),
                    b.lo.checked_sub(1),
                    b.below,
                ),
                (p, None) => (
                    p.and_then(|p| brackets[p].hi.checked_add(1)),
                    Some(m.max),
                    m.n,
                ),
            };
            if r < gap_end {
                if let (Some(lo), Some(hi)) = (gap_lo, gap_hi) {
                    if r >= prev_end && lo <= hi {
                        win[k] = Window {
                            lo,
                            hi,
                            below: prev_end,
                            count: gap_end - prev_end,
                        };
                    }
                }
                break;
            }
            let Some(b) = brackets.get_mut(j) else {
                break;
            };
            if r < b.below + b.inside {
                if b.lo == b.hi {
                    out[k] = Some(b.lo);
                } else if b.len == b.inside {
                    out[k] = Some(*b.gathered[..b.len].select_nth_unstable(r - b.below).1);
                } else {
                    win[k] = Window {
                        lo: b.lo,
                        hi: b.hi,
                        below: b.below,
                        count: b.inside,
                    };
                }
                break;
            }
            prev_end = b.below + b.inside;
        }
    }
}

/// Where one wanted rank is known to be: among the `count` values in `lo..=hi`, of which
/// `below` values of the whole sequence are smaller than `lo`.
#[derive(Clone, Copy)]
struct Window {
    lo: i64,
    hi: i64,
    below: usize,
    count: usize,
}

/// Values at `ranks` (0-based, each `< m.n`) of the sequence.
fn select_ranks<I, F>(values: &F, m: &Moments, ranks: &[usize]) -> Vec<i64>
where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    let mut win: Vec<Window> = vec![
        Window {
            lo: m.min,
            hi: m.max,
            below: 0,
            count: m.n,
        };
        ranks.len()
    ];
    let mut out: Vec<Option<i64>> = vec![None; ranks.len()];
    // (Equal extremes need no second pass at all.)
    if m.n > GATHER_MAX && m.min != m.max {
        narrow_by_sample(values, m, ranks, &mut win, &mut out);
    }
    // Distinct ranks share a window or have disjoint ones (windows are buckets of one
    // refinement), so each round works on the distinct windows of the unresolved ranks.
    loop {
        for (o, w) in out.iter_mut().zip(&win) {
            if o.is_none() && w.lo == w.hi {
                *o = Some(w.lo);
            }
        }
        let mut open: Vec<Window> = win
            .iter()
            .zip(&out)
            .filter(|(_, o)| o.is_none())
            .map(|(w, _)| *w)
            .collect();
        if open.is_empty() {
            break;
        }
        open.sort_by_key(|w| (w.lo, w.hi));
        open.dedup_by_key(|w| (w.lo, w.hi));
        // Per window: bucket shift, or None to gather its values.
        let plans: Vec<Option<u32>> = open
            .iter()
            .map(|w| {
                (w.count > GATHER_MAX).then(|| {
                    let span = (w.hi as i128 - w.lo as i128) as u64;
                    (64 - span.leading_zeros()).saturating_sub(BUCKET_BITS)
                })
            })
            .collect();
        let mut hist: Vec<Vec<usize>> = plans
            .iter()
            .map(|p| p.map_or_else(Vec::new, |_| vec![0usize; 1 << BUCKET_BITS]))
            .collect();
        let mut gathered: Vec<Vec<i64>> = open
            .iter()
            .zip(&plans)
            .map(|(w, p)| match p {
                None => Vec::with_capacity(w.count),
                Some(_) => Vec::new(),
            })
            .collect();
        if let ([w], [Some(shift)], [h]) = (&open[..], &plans[..], &mut hist[..]) {
            // The usual round: one window to histogram.
            let (lo, span) = (w.lo, w.hi.wrapping_sub(w.lo) as u64);
            for x in values() {
                // In the window exactly when the offset from lo (mod 2^64) is within the span.
                let d = x.wrapping_sub(lo) as u64;
                if d <= span {
                    if let Some(c) = h.get_mut((d >> shift) as usize) {
                        *c += 1;
                    }
                }
            }
        } else {
            for x in values() {
                for (j, w) in open.iter().enumerate() {
                    let d = x.wrapping_sub(w.lo) as u64;
                    if d > w.hi.wrapping_sub(w.lo) as u64 {
                        continue;
                    }
                    match plans[j] {
                        Some(shift) => {
                            if let Some(c) = hist[j].get_mut((d >> shift) as usize) {
                                *c += 1;
                            }
                        }
                        None => gathered[j].push(x),
                    }
                    break;
                }
            }
        }
        let mut progressed = false;
        for (k, &r) in ranks.iter().enumerate() {
            if out[k].is_some() {
                continue;
            }
            let w = win[k];
            let Some(j) = open.iter().position(|o| (o.lo, o.hi) == (w.lo, w.hi)) else {
                continue;
            };
            // A source that yields a different sequence on this pass could leave the rank
            // outside what was counted: clamp rather than index out of range.
            let within = r.saturating_sub(w.below);
            match plans[j] {
                None => {
                    let g = &mut gathered[j];
                    if g.is_empty() {
                        out[k] = Some(w.lo);
                    } else {
                        let at = within.min(g.len() - 1);
                        out[k] = Some(*g.select_nth_unstable(at).1);
                    }
                    progressed = true;
                }
                Some(shift) => {
                    let mut before = 0usize;
                    let mut bucket = None;
                    for (b, &c) in hist[j].iter().enumerate() {
                        if c > 0 && within < before + c {
                            bucket = Some((b, c));
                            break;
                        }
                        before += c;
                    }
                    let Some((b, c)) = bucket else {
                        out[k] = Some(w.hi);
                        progressed = true;
                        continue;
                    };
                    let lo = w.lo as i128 + ((b as i128) << shift);
                    let hi = (lo + (1i128 << shift) - 1).min(w.hi as i128);
                    let next = Window {
                        lo: lo as i64,
                        hi: hi as i64,
                        below: w.below + before,
                        count: c,
                    };
                    progressed |= (next.lo, next.hi, next.count) != (w.lo, w.hi, w.count);
                    win[k] = next;
                }
            }
        }
        if !progressed {
            // Cannot happen for a repeatable source (every histogram round narrows the
            // window); stop rather than loop on an inconsistent one.
            for (o, w) in out.iter_mut().zip(&win) {
                o.get_or_insert(w.lo);
            }
            break;
        }
    }
    out.into_iter().map(|o| o.unwrap_or(0)).collect()
}

/// Quantiles at `qs` of `m.n` values, with the interpolation of [`crate::quantile_sorted`].
fn quantiles_of<const K: usize, I, F>(values: &F, m: &Moments, qs: [f64; K]) -> [i64; K]
where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    quantiles_and_middle(values, m, qs).0
}

/// [`quantiles_of`], and the two middle order statistics (ranks ⌊(n−1)/2⌋ and ⌈(n−1)/2⌉),
/// which the median of the negated values is made of: no further pass for it.
fn quantiles_and_middle<const K: usize, I, F>(
    values: &F,
    m: &Moments,
    qs: [f64; K],
) -> ([i64; K], [i64; 2])
where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    let mut out = [0i64; K];
    if m.n == 0 {
        return (out, [0; 2]);
    }
    let mid = 0.5 * (m.n - 1) as f64;
    let (mid_lo, mid_hi) = (mid.floor() as usize, mid.ceil() as usize);
    if m.n <= GATHER_MAX {
        let mut v: Vec<i64> = values().take(m.n).collect();
        if v.len() == m.n {
            let q = quantiles_in_place(&mut v, qs);
            let lo = *v.select_nth_unstable(mid_lo).1;
            let hi = *v.select_nth_unstable(mid_hi).1;
            return (q, [lo, hi]);
        }
    }
    let pos: Vec<f64> = qs
        .iter()
        .map(|q| q.clamp(0.0, 1.0) * (m.n - 1) as f64)
        .collect();
    let mut ranks: Vec<usize> = pos
        .iter()
        .flat_map(|p| [p.floor() as usize, p.ceil() as usize])
        .chain([mid_lo, mid_hi])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    let at = select_ranks(values, m, &ranks);
    let value = |r: usize| ranks.binary_search(&r).map_or(0, |i| at[i]);
    for (o, p) in out.iter_mut().zip(pos) {
        let (lo, hi) = (p.floor() as usize, p.ceil() as usize);
        *o = if hi == lo {
            value(lo)
        } else {
            lerp(value(lo), value(hi), p - p.floor())
        };
    }
    (out, [value(mid_lo), value(mid_hi)])
}

/// The median of the negated values, from the two middle order statistics of the values:
/// sorted, the negated values are the values reversed and negated. `None` where a negation
/// overflows.
pub(crate) fn negated_median(n: usize, [lo, hi]: [i64; 2]) -> Option<i64> {
    let mid = 0.5 * (n - 1) as f64;
    let (nlo, nhi) = (hi.checked_neg()?, lo.checked_neg()?);
    Some(if mid.floor() == mid.ceil() {
        nlo
    } else {
        lerp(nlo, nhi, mid - mid.floor())
    })
}

/// Quantiles `qs` (ascending, as for [`quantiles_in_place`]) of the values `values()` yields,
/// equal to [`quantiles_in_place`] of a collected copy; `None` when there are none. `values` is called once per pass and must
/// yield the same sequence each time.
pub fn quantiles_streamed<const K: usize, I, F>(values: F, qs: [f64; K]) -> Option<[i64; K]>
where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    let m = moments(values());
    (m.n > 0).then(|| quantiles_of(&values, &m, qs))
}

/// Order-preserving key of a float (IEEE total order, as `f64::total_cmp`): flipping the other
/// bits of negative numbers makes their bit patterns sort as signed integers.
fn f64_key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

fn key_f64(k: i64) -> f64 {
    f64::from_bits((k ^ (((k >> 63) as u64) >> 1) as i64) as u64)
}

/// Median of the floats `values()` yields, equal to [`crate::median_f64_in_place`] of a
/// collected copy (NaN when there are none), without storing them.
pub fn median_f64_streamed<I, F>(values: F) -> f64
where
    F: Fn() -> I,
    I: Iterator<Item = f64>,
{
    median_f64_range_streamed(values).0
}

/// [`median_f64_streamed`] with the smallest and largest value (IEEE total order),
/// `(median, min, max)`; all NaN when there are none.
pub fn median_f64_range_streamed<I, F>(values: F) -> (f64, f64, f64)
where
    F: Fn() -> I,
    I: Iterator<Item = f64>,
{
    let keys = || values().map(f64_key);
    let m = moments(keys());
    if m.n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let range = (key_f64(m.min), key_f64(m.max));
    let pos = 0.5 * (m.n - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let at = if m.n <= GATHER_MAX {
        let mut v: Vec<i64> = keys().take(m.n).collect();
        v.sort_unstable();
        if v.len() < m.n {
            return (f64::NAN, range.0, range.1);
        }
        vec![v[lo], v[hi]]
    } else {
        select_ranks(&keys, &m, &[lo, hi])
    };
    let (a, b) = (key_f64(at[0]), key_f64(at[1]));
    let median = if hi == lo {
        a
    } else {
        a + (b - a) * (pos - lo as f64)
    };
    (median, range.0, range.1)
}

/// Median of the values `values()` yields (as [`crate::median_in_place`]), without storing them.
pub fn median_streamed<I, F>(values: F) -> Option<i64>
where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    quantiles_streamed(values, [0.5]).map(|[m]| m)
}

/// [`median_streamed`] with the smallest and largest value, `(median, min, max)`: the first
/// pass finds the extremes anyway, and equal extremes tell a caller that every value is the
/// same (a spread of zero) without another pass.
pub fn median_range_streamed<I, F>(values: F) -> Option<(i64, i64, i64)>
where
    F: Fn() -> I,
    I: Iterator<Item = i64>,
{
    let m = moments(values());
    (m.n > 0).then(|| (quantiles_of(&values, &m, [0.5])[0], m.min, m.max))
}

impl NsSummary {
    /// [`NsSummary::of_in_place`] of the values `values()` yields, without storing them.
    /// `values` is called once per pass and must yield the same sequence each time.
    pub fn of_streamed<I, F>(values: F) -> Option<NsSummary>
    where
        F: Fn() -> I,
        I: Iterator<Item = i64>,
    {
        Self::of_streamed_and_negated_median(values).map(|(s, _)| s)
    }

    /// [`NsSummary::of_streamed`], and the median of the values negated (`None` where a
    /// negation overflows), which the same order statistics give without another pass.
    pub fn of_streamed_and_negated_median<I, F>(values: F) -> Option<(NsSummary, Option<i64>)>
    where
        F: Fn() -> I,
        I: Iterator<Item = i64>,
    {
        let m = moments(values());
        if m.n == 0 {
            return None;
        }
        let ([p50, p95, p99], middle) = quantiles_and_middle(&values, &m, [0.50, 0.95, 0.99]);
        let negated = negated_median(m.n, middle);
        let summary = NsSummary {
            count: m.n,
            min: m.min,
            p50,
            p95,
            p99,
            max: m.max,
            mean: (m.sum / m.n as i128) as i64,
            negatives: m.negatives,
        };
        Some((summary, negated))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{median_in_place, quantile_sorted, xorshift};

    /// Shapes that exercise every path: few values (gathered at once), dense, heavy
    /// duplicates, outliers far away (many refinement rounds), the i64 extremes.
    fn cases() -> Vec<Vec<i64>> {
        let mut out = Vec::new();
        for (seed, n) in [
            (1u64, 0usize),
            (2, 1),
            (3, 2),
            (4, 1000),
            (5, 40_000),
            (6, 200_000),
        ] {
            let mut r = xorshift(seed);
            out.push(
                (0..n)
                    .map(|_| (r() % 3_000_000) as i64 + 2_000_000)
                    .collect(),
            );
        }
        let mut r = xorshift(7);
        // Lags with a few stale messages hours late and one from the far past.
        let mut v: Vec<i64> = (0..150_000)
            .map(|i| match i % 50_000 {
                0 => 7_200_000_000_000,
                1 => -1_700_000_000_000_000_000,
                _ => (r() % 1_000_000) as i64 + 3_000_000,
            })
            .collect();
        out.push(v.clone());
        // Duplicates only: one value, and two values.
        out.push(vec![42; 100_000]);
        out.push(
            (0..100_001)
                .map(|i| if i % 3 == 0 { -5 } else { 9 })
                .collect(),
        );
        // The extremes of i64 (spans that do not fit in i64).
        v.iter_mut()
            .step_by(997)
            .for_each(|x| *x = if *x % 2 == 0 { i64::MIN } else { i64::MAX });
        out.push(v);
        let mut r = xorshift(8);
        out.push((0..300_000).map(|_| r() as i64).collect());
        // Periodic with the sample's stride: every sampled position holds an outlier, so the
        // sample misses the ranks and the exact counts must send them to the histograms.
        for period in [16usize, 32, 64, 4096] {
            out.push(
                (0..200_000usize)
                    .map(|i| {
                        if i % period == 0 {
                            1_000_000_000 + i as i64
                        } else {
                            (i % 1000) as i64
                        }
                    })
                    .collect(),
            );
        }
        // Two adjacent values, far more of them than a bracket gathers.
        let mut r = xorshift(10);
        out.push((0..400_000).map(|_| 5 + (r() % 2) as i64).collect());
        // A run sorted ascending, then descending (the sample sees the order).
        out.push((0..100_000).chain((0..100_000).rev()).collect());
        // Epoch-sized values close together (periods of a sorted stamp series).
        let mut r = xorshift(9);
        out.push(
            (0..120_000)
                .map(|_| 1_700_000_000_000_000_000 + (r() % 10_000) as i64 * 1_000_003)
                .collect(),
        );
        out
    }

    #[test]
    fn streamed_equals_selection_on_a_copy() {
        let qs = [0.0, 0.01, 0.25, 0.5, 0.95, 0.99, 0.999, 1.0];
        for v in cases() {
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let want = qs.map(|q| quantile_sorted(&sorted, q));
            let got = quantiles_streamed(|| v.iter().copied(), qs);
            assert_eq!(got, (!v.is_empty()).then_some(want), "n = {}", v.len());
            assert_eq!(
                NsSummary::of_streamed(|| v.iter().copied()),
                NsSummary::of_in_place(&mut v.clone()),
                "n = {}",
                v.len()
            );
            assert_eq!(
                median_streamed(|| v.iter().copied()),
                median_in_place(&mut v.clone()),
                "n = {}",
                v.len()
            );
        }
    }

    #[test]
    fn negated_median_and_ranges_equal_selection_on_copies() {
        for v in cases() {
            let neg: Vec<i64> = v.iter().map(|x| x.saturating_neg()).collect();
            let got = NsSummary::of_streamed_and_negated_median(|| v.iter().copied());
            match got {
                None => assert!(v.is_empty()),
                Some((s, negated)) => {
                    assert_eq!(Some(s), NsSummary::of_in_place(&mut v.clone()));
                    // Only values holding i64::MIN cannot be negated exactly.
                    if v.contains(&i64::MIN) {
                        continue;
                    }
                    assert_eq!(
                        negated,
                        median_in_place(&mut neg.clone()),
                        "n = {}",
                        v.len()
                    );
                }
            }
            let r = median_range_streamed(|| v.iter().copied());
            let want = median_in_place(&mut v.clone())
                .map(|m| (m, *v.iter().min().unwrap(), *v.iter().max().unwrap()));
            assert_eq!(r, want, "n = {}", v.len());
        }
        // Even counts whose middle pair differs by an odd amount: the rounding of the
        // interpolation must follow the negated order, not negate the median.
        for v in [vec![1i64, 2], vec![-7, 4, 10, 10], vec![0, 3, 3, 8, 9, 12]] {
            let (_, negated) =
                NsSummary::of_streamed_and_negated_median(|| v.iter().copied()).unwrap();
            let mut neg: Vec<i64> = v.iter().map(|x| -x).collect();
            assert_eq!(negated, median_in_place(&mut neg), "{v:?}");
        }
    }

    #[test]
    fn summary_of_sorted_values_equals_the_streamed_one() {
        for v in cases() {
            let mut sorted = v.clone();
            sorted.sort_unstable();
            assert_eq!(
                NsSummary::of_sorted_and_negated_median(&sorted),
                NsSummary::of_streamed_and_negated_median(|| v.iter().copied()),
                "n = {}",
                v.len()
            );
            // The same values held as i32 where they fit (how clocks keeps lags).
            let narrow: Vec<i32> = v.iter().filter_map(|&x| i32::try_from(x).ok()).collect();
            let mut sorted: Vec<i32> = narrow.clone();
            sorted.sort_unstable();
            assert_eq!(
                NsSummary::of_sorted_and_negated_median(&sorted),
                NsSummary::of_streamed_and_negated_median(|| narrow.iter().map(|&x| x.into())),
                "n = {} (i32)",
                narrow.len()
            );
        }
    }

    #[test]
    fn float_median_equals_selection_on_a_copy() {
        for v in cases() {
            let mut f: Vec<f64> = v.iter().map(|&x| x as f64 * 1e-3 - 0.25).collect();
            if f.len() > 3 {
                f[1] = -0.0;
                f[2] = 0.0;
                f[3] = f64::INFINITY;
            }
            let want = crate::median_f64_in_place(&mut f.clone());
            let got = median_f64_streamed(|| f.iter().copied());
            assert!(
                got == want || (got.is_nan() && want.is_nan()),
                "n = {}: {got} {want}",
                f.len()
            );
            let (_, lo, hi) = median_f64_range_streamed(|| f.iter().copied());
            if let (Some(a), Some(b)) = (
                f.iter().copied().min_by(f64::total_cmp),
                f.iter().copied().max_by(f64::total_cmp),
            ) {
                assert_eq!((lo.to_bits(), hi.to_bits()), (a.to_bits(), b.to_bits()));
            }
        }
        for x in [-1e300, -1.5, -0.0, 0.0, 1e-300, 2.5, f64::INFINITY] {
            assert_eq!(key_f64(f64_key(x)).to_bits(), x.to_bits());
        }
        assert!(f64_key(-1.5) < f64_key(-0.0) && f64_key(-0.0) < f64_key(0.0));
        assert!(f64_key(0.0) < f64_key(1e-300) && f64_key(2.5) < f64_key(f64::INFINITY));
    }

    #[test]
    fn every_rank_of_a_large_sequence() {
        // Ranks on both sides of every bucket boundary: compare all percentiles.
        let mut r = xorshift(11);
        let v: Vec<i64> = (0..70_000)
            .map(|_| (r() % 5_000) as i64 * 37 - 90_000)
            .collect();
        let mut sorted = v.clone();
        sorted.sort_unstable();
        for p in 0..=100 {
            let q = p as f64 / 100.0;
            let got = quantiles_streamed(|| v.iter().copied(), [q]).unwrap()[0];
            assert_eq!(got, quantile_sorted(&sorted, q), "q = {q}");
        }
    }

    #[test]
    fn an_inconsistent_source_ends_without_panicking() {
        let calls = std::cell::Cell::new(0u64);
        let got = quantiles_streamed(
            || {
                calls.set(calls.get() + 1);
                let c = calls.get();
                (0..100_000i64).map(move |i| i * c as i64 * 7919 % 1_000_003)
            },
            [0.5, 0.99],
        );
        assert!(got.is_some());
    }
}
