//! Choice of the analysed command segments: a fixed window, or automatic trimming of the
//! warm-up and of long still stretches (they carry no delay information, only noise).

use crate::prep::{wrap_pi, Dense};
use crate::types::{MatchOptions, Segment, SegmentReason, Segments};

/// Speed (rad/s) of the fastest joint between consecutive commands `k` and `k + 1`.
fn interval_speed(c: &Dense, wrap: &[bool], k: usize) -> f64 {
    let dt = c.t[k + 1].saturating_sub(c.t[k]);
    if dt <= 0 {
        return 0.0; // duplicate stamps: no information about speed
    }
    let mut best = 0.0f64;
    for (j, col) in c.v.iter().enumerate() {
        let mut d = col[k + 1] - col[k];
        if wrap[j] {
            d = wrap_pi(d);
        }
        if d.is_finite() {
            best = best.max(d.abs());
        }
    }
    best / (dt as f64 * 1e-9)
}

/// Is each command moving: the interval before or after it is above the still threshold.
/// The last still command before motion is kept as "moving" since motion starts from it.
pub(crate) fn moving_mask(c: &Dense, wrap: &[bool], still_velocity_rad_s: f64) -> Vec<bool> {
    let n = c.len();
    let mut moving = vec![false; n];
    for k in 0..n.saturating_sub(1) {
        if interval_speed(c, wrap, k) > still_velocity_rad_s {
            moving[k] = true;
            moving[k + 1] = true;
        }
    }
    moving
}

fn segment(c: &Dense, a: usize, b: usize, reason: Option<SegmentReason>) -> Segment {
    let t0 = c.t.first().copied().unwrap_or(0);
    Segment {
        start_ns: c.t[a],
        end_ns: c.t[b],
        start_rel_ns: c.t[a].saturating_sub(t0),
        end_rel_ns: c.t[b].saturating_sub(t0),
        commands: b - a + 1,
        reason,
    }
}

/// Maximal runs of equal mask values as `(start, end_inclusive, value)`.
fn runs(mask: &[bool]) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=mask.len() {
        if i == mask.len() || mask[i] != mask[start] {
            out.push((start, i - 1, mask[start]));
            start = i;
        }
    }
    out
}

/// Which commands are analysed, plus the report of used and trimmed segments.
/// `used` may come back all-false (no motion); the caller decides what that means.
pub(crate) fn choose(c: &Dense, wrap: &[bool], opts: &MatchOptions) -> (Vec<bool>, Segments) {
    let n = c.len();
    let mut trimmed = Vec::new();
    let (used, mode) = if let Some((a, b)) = opts.window_ns {
        let t0 = c.t.first().copied().unwrap_or(0);
        let used: Vec<bool> =
            c.t.iter()
                .map(|&t| (a..=b).contains(&t.saturating_sub(t0)))
                .collect();
        for (s, e, u) in runs(&used) {
            if !u {
                trimmed.push(segment(c, s, e, Some(SegmentReason::OutsideWindow)));
            }
        }
        (used, "window")
    } else if opts.trim_still {
        let moving = moving_mask(c, wrap, opts.still_velocity_rad_s);
        let mut used = vec![true; n];
        for (s, e, m) in runs(&moving) {
            if m {
                continue;
            }
            let reason = if s == 0 {
                // Everything before the first motion is warm-up, however short.
                Some(SegmentReason::WarmUp)
            } else if c.t[e].saturating_sub(c.t[s]) >= opts.still_min_duration_ns {
                Some(SegmentReason::Still)
            } else {
                None // a brief pause inside the motion: keep it
            };
            if reason.is_some() {
                used[s..=e].iter_mut().for_each(|u| *u = false);
                trimmed.push(segment(c, s, e, reason));
            }
        }
        (used, "auto")
    } else {
        (vec![true; n], "all")
    };
    let used_segments: Vec<Segment> = runs(&used)
        .into_iter()
        .filter(|r| r.2)
        .map(|(s, e, _)| segment(c, s, e, None))
        .collect();
    let commands_used = used.iter().filter(|&&u| u).count();
    (
        used,
        Segments {
            mode: mode.to_string(),
            used: used_segments,
            trimmed,
            commands_used,
            commands_total: n,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(vals: &[f64], dt: i64) -> Dense {
        Dense {
            t: (0..vals.len() as i64).map(|i| i * dt).collect(),
            v: vec![vals.to_vec()],
        }
    }

    #[test]
    fn trims_warm_up_and_long_still_but_keeps_short_pause() {
        // 0.1 s steps: 1 s still, 1 s moving, 0.2 s pause, 1 s moving, 1 s still.
        let mut v = vec![0.0; 10];
        let mut x = 0.0;
        for _ in 0..10 {
            x += 0.05;
            v.push(x);
        }
        v.extend([x, x]);
        for _ in 0..10 {
            x += 0.05;
            v.push(x);
        }
        v.extend(vec![x; 10]);
        let c = dense(&v, 100_000_000);
        let (used, seg) = choose(&c, &[false], &MatchOptions::default());
        assert_eq!(seg.trimmed.len(), 2);
        assert_eq!(seg.trimmed[0].reason, Some(SegmentReason::WarmUp));
        assert_eq!(seg.trimmed[1].reason, Some(SegmentReason::Still));
        assert!(!used[0] && used[9] && used[21] && !used[v.len() - 1]);
        assert_eq!(seg.used.len(), 1);
    }

    #[test]
    fn window_is_relative_to_first_command() {
        let c = dense(&[0.0, 1.0, 2.0, 3.0, 4.0], 1_000);
        let o = MatchOptions {
            window_ns: Some((1_000, 3_000)),
            ..Default::default()
        };
        let (used, seg) = choose(&c, &[false], &o);
        assert_eq!(used, vec![false, true, true, true, false]);
        assert_eq!(seg.trimmed.len(), 2);
        assert_eq!(seg.mode, "window");
    }

    #[test]
    fn empty_input_does_not_panic() {
        let c = Dense::default();
        let (used, seg) = choose(&c, &[], &MatchOptions::default());
        assert!(used.is_empty() && seg.used.is_empty());
    }
}
