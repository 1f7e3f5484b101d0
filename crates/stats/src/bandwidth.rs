//! Bytes over time: the busiest window of a topic.

/// The largest number of bytes whose times lie in one window `[t, t + window_ns)`, over every
/// `t` (a sliding window: the maximum is reached by a window that starts at a message), with
/// that window's start. `times_ns` ascending, `sizes` aligned with it (extra entries of the
/// longer slice are ignored). `None` without messages or for `window_ns < 1`. O(n), nothing
/// kept per message.
pub fn peak_window_bytes(times_ns: &[i64], sizes: &[u32], window_ns: i64) -> Option<(u64, i64)> {
    if window_ns < 1 {
        return None;
    }
    let n = times_ns.len().min(sizes.len());
    if n == 0 {
        return None;
    }
    let (mut best_sum, mut best_start) = (0u64, times_ns[0]);
    let (mut end, mut sum) = (0usize, 0u64);
    for start in 0..n {
        // A window reaching past i64::MAX holds every later message.
        match times_ns[start].checked_add(window_ns) {
            Some(limit) => {
                while end < n && times_ns[end] < limit {
                    sum += u64::from(sizes[end]);
                    end += 1;
                }
            }
            None => {
                while end < n {
                    sum += u64::from(sizes[end]);
                    end += 1;
                }
            }
        }
        if sum > best_sum || start == 0 {
            best_sum = sum;
            best_start = times_ns[start];
        }
        // `end > start`: the window always holds its own first message.
        sum -= u64::from(sizes[start]);
    }
    Some((best_sum, best_start))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over windows starting at each message.
    fn brute(t: &[i64], s: &[u32], w: i64) -> Option<(u64, i64)> {
        let mut best: Option<(u64, i64)> = None;
        for &a in t {
            let sum: u64 = t
                .iter()
                .zip(s)
                .filter(|(&x, _)| x >= a && x < a + w)
                .map(|(_, &v)| u64::from(v))
                .sum();
            if best.is_none_or(|(b, _)| sum > b) {
                best = Some((sum, a));
            }
        }
        best
    }

    #[test]
    fn sliding_window_finds_a_burst_across_second_boundaries() {
        // 10 bytes at 10 Hz, plus a burst of 5 × 100 bytes straddling t = 1 s: fixed
        // one-second buckets would split the burst, the sliding window does not.
        let mut t: Vec<i64> = (0..30).map(|i| i * 100_000_000).collect();
        let mut s = vec![10u32; 30];
        for k in 0..5 {
            t.push(800_000_000 + k * 100_000_000 + 50_000_000);
            s.push(100);
        }
        let mut pairs: Vec<(i64, u32)> = t.into_iter().zip(s).collect();
        pairs.sort();
        let (t, s): (Vec<i64>, Vec<u32>) = pairs.into_iter().unzip();
        let got = peak_window_bytes(&t, &s, 1_000_000_000).unwrap();
        assert_eq!(got, brute(&t, &s, 1_000_000_000).unwrap());
        assert_eq!(got.0, 500 + 10 * 10);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(peak_window_bytes(&[], &[], 1), None);
        assert_eq!(peak_window_bytes(&[5], &[7], 0), None);
        assert_eq!(peak_window_bytes(&[5], &[7], 1), Some((7, 5)));
        // The window is half-open: a message exactly one window later is not in it.
        assert_eq!(peak_window_bytes(&[0, 10], &[3, 4], 10), Some((4, 10)));
        // Equal times all count.
        assert_eq!(peak_window_bytes(&[1, 1, 1], &[2, 2, 2], 1), Some((6, 1)));
        let t = [i64::MAX - 1, i64::MAX];
        assert_eq!(peak_window_bytes(&t, &[1, 1], 5), Some((2, i64::MAX - 1)));
    }
}
