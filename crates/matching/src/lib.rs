//! Command/response matching for joint topics: how late does the robot respond (delay), and
//! how well does it track once that lateness is taken out (corrected error)?
//!
//! Nearest-neighbour pairing of 20 Hz commands to 100 Hz states mistakes delay for tracking
//! error (42 ms on a joint moving at 0.9 rad/s reads as 0.038 rad). So: estimate the delay,
//! shift the response by it, pair again, and report the error before and after side by side.
//!
//! * Sampled responses (state stream ≥ 2× denser than commands): the delay minimises the RMS of
//!   `response(t_cmd + d) − command(t_cmd)` (response interpolated, each joint's constant offset
//!   removed) over a 1 ms sweep of the search window, refined on a 0.1 ms grid by a
//!   least-squares parabola; the curvature gives the uncertainty. `method = "error_curve_min"`.
//! * Event responses (one echo per command): causal pairs confirmed by the echoed values; the
//!   delay is their median. `method = "event_pairs"`.
//!
//! All times are `i64` nanoseconds on the caller's common clock axis. Nothing here panics on
//! bad input: malformed series are errors, odd messages are findings in [`Checks`].
//!
//! # In the workspace
//!
//! Nearest-neighbour pairing, delay estimation (event pairs, error-curve minimum; an automatic
//! echo reading checked against a sampled one: sweeps tiled over commands so responses stay in
//! cache, shift chunks on all cores), corrected error, segments, run comparison; a topic's
//! joint names shared (`JointNames = Arc<[String]>`).
//!
//! Notable dependencies: `bagscope-stats`, `rayon`.

#![forbid(unsafe_code)]
// Parallel per-joint columns are indexed by joint number throughout; iterator zips over
// three or four columns would read worse.
#![allow(clippy::needless_range_loop)]

mod compare;
mod delay;
mod pairing;
mod prep;
mod segments;
mod types;

pub use compare::compare_runs;
pub use types::*;

use pairing::{nearest_pairs, pair_errors, track_errors, Track};
use prep::{Sink, CMD, RESP};
use std::collections::BTreeMap;

/// Index of the element of `sorted` nearest to `t`; ties go to the earlier index (also among
/// duplicates). `None` when empty. O(log n).
pub fn nearest_index(sorted: &[i64], t: i64) -> Option<usize> {
    if sorted.is_empty() {
        return None;
    }
    let hi = sorted.partition_point(|&x| x < t); // first element ≥ t
    if hi == 0 {
        return Some(0);
    }
    let lo_val = sorted[hi - 1];
    // Earliest index holding the lower neighbour's value, so duplicates resolve to the first.
    let lo = sorted[..hi].partition_point(|&x| x < lo_val);
    if hi == sorted.len() {
        return Some(lo);
    }
    // abs_diff: no overflow even for stamps near i64 limits.
    if t.abs_diff(lo_val) <= sorted[hi].abs_diff(t) {
        Some(lo)
    } else {
        Some(hi)
    }
}

/// Sampled when the responses are at least twice as dense as the commands.
fn auto_kind(cmd: &prep::Dense, resp: &prep::Dense) -> ResponseKind {
    match (cmd.median_period_ns(), resp.median_period_ns()) {
        (Some(pc), Some(pr)) if pr > 0 => {
            if pr.saturating_mul(2) <= pc {
                ResponseKind::Sampled
            } else {
                ResponseKind::Event
            }
        }
        _ => {
            if resp.len() >= 2 * cmd.len() {
                ResponseKind::Sampled
            } else {
                ResponseKind::Event
            }
        }
    }
}

fn check_options(opts: &MatchOptions) -> Result<(), MatchError> {
    let bad = |detail: &str| {
        Err(MatchError::InvalidOption {
            detail: detail.to_string(),
        })
    };
    if opts.search_window_ns.1 < opts.search_window_ns.0 {
        return bad("search_window_ns: end before start");
    }
    if opts.sweep_step_ns <= 0 {
        return bad("sweep_step_ns must be positive");
    }
    // Bound the sweep so a tiny step over a huge window cannot run for hours.
    let span = opts.search_window_ns.1 as i128 - opts.search_window_ns.0 as i128;
    if span / opts.sweep_step_ns as i128 > 100_000 {
        return bad("search window / sweep step exceeds 100000 shifts");
    }
    if opts.still_velocity_rad_s.is_nan() || opts.still_velocity_rad_s < 0.0 {
        return bad("still_velocity_rad_s must be a non-negative number");
    }
    if opts.window_ns.is_some_and(|(a, b)| b < a) {
        return bad("window_ns: end before start");
    }
    if opts.max_pair_distance_ns.is_some_and(|m| m < 0) {
        return bad("max_pair_distance_ns must be non-negative");
    }
    Ok(())
}

/// A sampled reading replaces an automatic echo reading when its corrected error is below
/// this fraction of the echo reading's.
const SAMPLED_CLEARLY_BETTER: f64 = 0.5;

/// Estimates the response delay and the tracking error before and after removing it.
///
/// The response kind, unless given, follows the stream rates: responses at least twice as
/// dense as the commands are samples of the state; others are taken for echoes (one per
/// command). A state published at about the commands' rate (a slowed simulation's 100 Hz
/// of sim time, say) looks the same by rate alone, and pairing its samples as echoes takes
/// the sample nearest in value, off by the sampling phase. So an automatic echo reading is
/// checked against a sampled one, and the sampled one is kept when its corrected error is
/// clearly lower (a real echo fits either way: its values are the command's).
pub fn match_series(
    cmd: &JointSeries,
    resp: &JointSeries,
    opts: &MatchOptions,
) -> Result<MatchReport, MatchError> {
    let p = prepare_pair(cmd, resp, opts)?;
    let (kind, kind_auto) = match opts.response_kind {
        Some(k) => (k, false),
        None => (auto_kind(&p.c.messages, &p.r), true),
    };
    let report = analyse(&p, kind, kind_auto, opts)?;
    if !(kind_auto && kind == ResponseKind::Event) {
        return Ok(report);
    }
    // The automatic echo reading, checked against the sampled one on the same preparation.
    let Ok(mut sampled) = analyse(&p, ResponseKind::Sampled, false, opts) else {
        return Ok(report);
    };
    let (echo_rms, sampled_rms) = (report.error_after.rms, sampled.error_after.rms);
    // (A NaN error on either side keeps the echo reading.)
    let clearly_better = sampled_rms < SAMPLED_CLEARLY_BETTER * echo_rms;
    if !clearly_better {
        return Ok(report);
    }
    sampled.response_kind_auto = true;
    let mut sink = Sink {
        checks: std::mem::take(&mut sampled.checks),
    };
    sink.add(
        "response_kind_by_error",
        RESP,
        None,
        None,
        None,
        format!(
            "responses about as frequent as commands: read as samples of the state, whose corrected error ({sampled_rms:.4} rad) is below half of the reading as one echo per command ({echo_rms:.4} rad, delay {:.1} ms); the response kind \"event\" keeps the echo reading",
            report.delay_ns as f64 / 1e6
        ),
    );
    sampled.checks = sink.checks;
    sampled.summary.push_str(&format!(
        "\nresponses about as frequent as commands, read as samples of the state: read as one echo per command instead, delay {:.1} ms and {echo_rms:.3} rad after correction",
        report.delay_ns as f64 / 1e6
    ));
    Ok(sampled)
}

/// What every reading of a command/response pair shares: validated inputs, joints paired by
/// name, both streams prepared, and the findings so far.
/// One joint's corrected tracking error over time: `t_ns` are the command times used, `error`
/// the response read `delay_ns` later minus the command (radians, or the field's unit).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ErrorSeries {
    /// The joint (or field) name.
    pub joint: String,
    /// Command times (the caller's clock axis), ascending.
    pub t_ns: Vec<i64>,
    /// Response − command at each of those times, wrapped at ±π for continuous joints.
    pub error: Vec<f64>,
}

/// The tracking error point by point, before and after the delay shift, read exactly as
/// [`MatchReport::error_before`] and [`MatchReport::error_after`] are computed: the same
/// commands (motion segments); before, the nearest response at the command's own time; after,
/// the response at `t_cmd + delay_ns` interpolated with angle wrap and the gap limit (sampled
/// responses), or the nearest response within `max_pair_distance_ns` (event responses, or
/// interpolation turned off). Plots drawn from it agree with the numbers reported beside them.
pub fn tracking_error_series(
    cmd: &JointSeries,
    resp: &JointSeries,
    kind: ResponseKind,
    delay_ns: i64,
    opts: &MatchOptions,
) -> Result<(Vec<ErrorSeries>, Vec<ErrorSeries>), MatchError> {
    let p = prepare_pair(cmd, resp, opts)?;
    let (wrap, joints) = (p.wrap.as_slice(), p.matched.as_slice());
    let timeline = match kind {
        ResponseKind::Sampled => &p.c.samples,
        ResponseKind::Event => &p.c.messages,
    };
    let (mut used, _) = segments::choose(timeline, wrap, opts);
    if !used.iter().any(|&u| u) && kind == ResponseKind::Event {
        used = vec![true; timeline.len()];
    }
    let cmds: Vec<usize> = (0..timeline.len()).filter(|&k| used[k]).collect();
    let empty = || -> Vec<ErrorSeries> {
        joints
            .iter()
            .map(|j| ErrorSeries {
                joint: j.clone(),
                t_ns: Vec::new(),
                error: Vec::new(),
            })
            .collect()
    };
    let push = |out: &mut Vec<ErrorSeries>, j: usize, k: usize, e: f64| {
        if e.is_finite() {
            out[j].t_ns.push(timeline.t[k]);
            out[j].error.push(e);
        }
    };
    let nearest = |shift_ns: i64| {
        let mut out = empty();
        let pairs = nearest_pairs(
            timeline,
            &p.r,
            &cmds,
            shift_ns,
            opts.max_pair_distance_ns,
            opts.one_to_one,
        );
        for (k, i) in pairs {
            for j in 0..joints.len() {
                let (cv, rv) = (timeline.v[j][k], p.r.v[j][i]);
                if cv.is_finite() && rv.is_finite() {
                    push(&mut out, j, k, pairing::err(rv, cv, wrap[j]));
                }
            }
        }
        out
    };
    let before = nearest(0);
    let after = if kind == ResponseKind::Sampled && opts.interpolate {
        let mut out = empty();
        let track = Track::new(&p.r, wrap, opts.max_pair_distance_ns, opts.interpolate);
        for &k in &cmds {
            let t = timeline.t[k].saturating_add(delay_ns);
            let i = track.locate(t);
            for j in 0..joints.len() {
                let cv = timeline.v[j][k];
                if let Some(rv) = track.value(j, i, t).filter(|_| cv.is_finite()) {
                    push(&mut out, j, k, pairing::err(rv, cv, wrap[j]));
                }
            }
        }
        out
    } else {
        nearest(delay_ns)
    };
    Ok((before, after))
}

struct PreparedPair {
    matched: Vec<String>,
    joints: JointSets,
    /// Per matched joint: continuous (angles wrap at ±π).
    wrap: Vec<bool>,
    c: prep::Prepared,
    r: prep::Dense,
    sink: Sink,
}

/// Validates and prepares both streams (independent of the response kind).
fn prepare_pair(
    cmd: &JointSeries,
    resp: &JointSeries,
    opts: &MatchOptions,
) -> Result<PreparedPair, MatchError> {
    check_options(opts)?;
    prep::validate(cmd, CMD)?;
    prep::validate(resp, RESP)?;
    let mut sink = Sink::default();

    // Pair by joint name; names may come in any order.
    let cj = prep::joint_names(cmd);
    let rj = prep::joint_names(resp);
    let matched: Vec<String> = cj.intersection(&rj).cloned().collect();
    let joints = JointSets {
        matched: matched.clone(),
        only_in_commands: cj.difference(&rj).cloned().collect(),
        only_in_responses: rj.difference(&cj).cloned().collect(),
    };
    if matched.is_empty() {
        return Err(MatchError::NoCommonJoints {
            command_joints: cj.into_iter().collect(),
            response_joints: rj.into_iter().collect(),
        });
    }
    for n in &joints.only_in_commands {
        sink.add(
            "joint_only_in_commands",
            CMD,
            None,
            None,
            Some(n),
            "no response for this joint".into(),
        );
    }
    for n in &joints.only_in_responses {
        sink.add(
            "joint_only_in_responses",
            RESP,
            None,
            None,
            Some(n),
            "never commanded".into(),
        );
    }
    let wrap: Vec<bool> = matched
        .iter()
        .map(|n| opts.continuous_joints.contains(n))
        .collect();

    let c = prep::prepare(cmd, &matched, CMD, opts, &mut sink);
    let r = prep::prepare(resp, &matched, RESP, opts, &mut sink).messages;
    prep::check_command_age(cmd, opts, &mut sink);
    if c.messages.len() == 0 || r.len() == 0 {
        return Err(MatchError::NoPairs {
            detail: "no usable messages after checks".into(),
        });
    }
    Ok(PreparedPair {
        matched,
        joints,
        wrap,
        c,
        r,
        sink,
    })
}

/// One reading of a prepared pair, with responses read as `kind`.
fn analyse(
    p: &PreparedPair,
    kind: ResponseKind,
    kind_auto: bool,
    opts: &MatchOptions,
) -> Result<MatchReport, MatchError> {
    let PreparedPair {
        matched,
        joints,
        wrap,
        c,
        r,
        ..
    } = p;
    let (matched, wrap) = (matched.as_slice(), wrap.as_slice());
    let mut sink = p.sink.clone();
    // Sampled analysis follows the expanded trajectory; events answer whole messages.
    let timeline = match kind {
        ResponseKind::Sampled => &c.samples,
        ResponseKind::Event => &c.messages,
    };
    let (mut used, mut segs) = segments::choose(timeline, wrap, opts);
    if !used.iter().any(|&u| u) {
        if segs.mode == "window" {
            return Err(MatchError::NoPairs {
                detail: "window_ns contains no commands".into(),
            });
        }
        match kind {
            ResponseKind::Sampled => return Err(MatchError::NoMotion),
            ResponseKind::Event => {
                // Echo timing does not need motion: analyse everything.
                sink.add(
                    "no_motion",
                    CMD,
                    None,
                    None,
                    None,
                    "commands never move; all commands used".into(),
                );
                used = vec![true; timeline.len()];
                let o = MatchOptions {
                    trim_still: false,
                    window_ns: None,
                    ..opts.clone()
                };
                segs = segments::choose(timeline, wrap, &o).1;
            }
        }
    }
    let cmds: Vec<usize> = (0..timeline.len()).filter(|&k| used[k]).collect();

    let track = Track::new(r, wrap, opts.max_pair_distance_ns, opts.interpolate);
    let (delay, per_joint_delay, method, method_desc) = match kind {
        ResponseKind::Sampled => {
            let (est, per_joint) =
                sampled_delay(timeline, &track, &cmds, matched, opts, &mut sink)?;
            (
                est,
                per_joint,
                "error_curve_min",
                "error-curve minimum".to_string(),
            )
        }
        ResponseKind::Event => {
            let (est, per_joint, desc) =
                event_delay(timeline, r, &cmds, wrap, matched, opts, &mut sink)?;
            (est, per_joint, "event_pairs", desc)
        }
    };

    // Before: naive nearest stamp, no shift.
    let before_pairs = nearest_pairs(
        timeline,
        r,
        &cmds,
        0,
        opts.max_pair_distance_ns,
        opts.one_to_one,
    );
    if kind == ResponseKind::Event {
        let early: Vec<&(usize, usize)> = before_pairs
            .iter()
            .filter(|(k, i)| r.t[*i] < timeline.t[*k])
            .collect();
        for (k, i) in early {
            sink.add(
                "response_before_command",
                RESP,
                Some(*i),
                Some(r.t[*i]),
                None,
                format!(
                    "nearest response is {:.1} ms before command {k}: likely the previous command's",
                    timeline.t[*k].saturating_sub(r.t[*i]) as f64 / 1e6
                ),
            );
        }
    }
    let error_before = pair_errors(timeline, r, &before_pairs, wrap, matched);

    // After: response taken at t_cmd + delay.
    let error_after = if kind == ResponseKind::Sampled && opts.interpolate {
        track_errors(timeline, &track, &cmds, delay.delay_ns, matched)
    } else {
        let p = nearest_pairs(
            timeline,
            r,
            &cmds,
            delay.delay_ns,
            opts.max_pair_distance_ns,
            opts.one_to_one,
        );
        pair_errors(timeline, r, &p, wrap, matched)
    };
    if error_after.samples == 0 {
        return Err(MatchError::NoPairs {
            detail: "no response at the command times shifted by the delay".into(),
        });
    }

    let summary = format!(
        "delay {:.1} ms ({}, {}); error {:.3} rad → {:.3} rad after correction",
        delay.delay_ns as f64 / 1e6,
        kind.as_str(),
        method_desc,
        error_before.rms,
        error_after.rms
    );
    Ok(MatchReport {
        delay_ns: delay.delay_ns,
        method: method.to_string(),
        response_kind: kind,
        response_kind_auto: kind_auto,
        clock_mapping: None,
        delay,
        per_joint_delay,
        pairs_used: error_after.pairs,
        error_before,
        error_after,
        joints: joints.clone(),
        segments: segs,
        streams: StreamCounts {
            command_messages: c.messages.len(),
            response_messages: r.len(),
            command_samples: c.samples.len(),
            command_period_ns: c.messages.median_period_ns(),
            response_period_ns: r.median_period_ns(),
        },
        checks: sink.checks,
        summary,
    })
}

/// The delay of a sampled response: the minimum of the error curve over the search window
/// (a second pass without outlying samples when there are any), with its uncertainty.
fn sampled_delay(
    timeline: &prep::Dense,
    track: &Track<'_>,
    cmds: &[usize],
    matched: &[String],
    opts: &MatchOptions,
    sink: &mut Sink,
) -> Result<(DelayEstimate, BTreeMap<String, JointDelay>), MatchError> {
    let no_pairs = || MatchError::NoPairs {
        detail: "no response inside the search window".into(),
    };
    let mut s = delay::error_curve(timeline, track, cmds, matched, opts).ok_or_else(no_pairs)?;
    if s.flat {
        return Err(MatchError::NoMotion);
    }
    // Second pass without outliers; the error statistics below still include them.
    let (cleaned, dropped) = delay::drop_outliers(timeline, track, cmds, s.delay_ns);
    if dropped > 0 {
        if let Some(s2) =
            delay::error_curve(&cleaned, track, cmds, matched, opts).filter(|s2| !s2.flat)
        {
            s = s2;
            sink.add(
                "outliers_excluded_from_delay",
                CMD,
                None,
                None,
                None,
                format!(
                    "{dropped} joint samples far from the typical error left out of the delay fit"
                ),
            );
        }
    }
    if s.at_edge {
        sink.add(
            "delay_at_search_edge",
            RESP,
            None,
            None,
            None,
            format!(
                "error minimum at the edge of the search window {:?} ns; widen it",
                opts.search_window_ns
            ),
        );
    }
    let per_joint_delay = s.per_joint;
    let est = DelayEstimate {
        delay_ns: s.delay_ns,
        std_ns: s.std_ns,
        curvature_rad2_per_ms2: s.curvature_ms2,
        mean_ns: None,
        median_ns: None,
        spread: None,
        confirmed_by_values: None,
        samples: s.samples,
        at_search_edge: s.at_edge,
        error_curve: s.curve,
        error_curve_debiased: s.curve_debiased,
    };
    Ok((est, per_joint_delay))
}

/// The delay of an event response (one echo per command): the median of the causal pairs,
/// confirmed by the echoed values where they are.
fn event_delay(
    timeline: &prep::Dense,
    r: &prep::Dense,
    cmds: &[usize],
    wrap: &[bool],
    matched: &[String],
    opts: &MatchOptions,
    sink: &mut Sink,
) -> Result<(DelayEstimate, BTreeMap<String, JointDelay>, String), MatchError> {
    let e =
        delay::event_pairs(timeline, r, cmds, wrap, opts).ok_or_else(|| MatchError::NoPairs {
            detail: "no response inside the causal search window".into(),
        })?;
    if !e.confirmed {
        sink.add(
            "echo_not_confirmed",
            RESP,
            None,
            None,
            None,
            "responses do not echo the command values; paired with the first causal response"
                .into(),
        );
    } else if e.unconfirmed_commands > 0 {
        sink.add(
            "unconfirmed_commands",
            CMD,
            None,
            None,
            None,
            format!("{} commands without a value-confirmed echo (still or ambiguous); left out of the delay", e.unconfirmed_commands),
        );
    }
    let spread = bagscope_stats::NsSummary::of(&e.dts);
    let median = bagscope_stats::median_ns(&e.dts).unwrap_or(0);
    let n = e.dts.len() as f64;
    let mean = e.dts.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = e
        .dts
        .iter()
        .map(|&x| (x as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0).max(1.0);
    let mut per_joint_delay = BTreeMap::new();
    for (j, name) in matched.iter().enumerate() {
        let d: Vec<i64> = e
            .pairs
            .iter()
            .zip(&e.dts)
            .filter(|((k, i), _)| timeline.v[j][*k].is_finite() && r.v[j][*i].is_finite())
            .map(|(_, &dt)| dt)
            .collect();
        per_joint_delay.insert(
            name.clone(),
            JointDelay {
                delay_ns: bagscope_stats::median_ns(&d),
                std_ns: None,
                samples: d.len(),
                note: Some("one response message per command: the message delay over pairs carrying this joint".into()),
            },
        );
    }
    let desc = if e.confirmed {
        format!("median of {} value-confirmed pairs", e.dts.len())
    } else {
        format!("median of {} first causal responses", e.dts.len())
    };
    let est = DelayEstimate {
        delay_ns: median,
        std_ns: Some((var / n).sqrt()),
        curvature_rad2_per_ms2: None,
        mean_ns: Some(mean.round() as i64),
        median_ns: Some(median),
        spread,
        confirmed_by_values: Some(e.confirmed),
        samples: e.dts.len(),
        at_search_edge: false,
        error_curve: Vec::new(),
        error_curve_debiased: Vec::new(),
    };
    Ok((est, per_joint_delay, desc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_index_edges_and_ties() {
        assert_eq!(nearest_index(&[], 5), None);
        assert_eq!(nearest_index(&[10], -100), Some(0));
        assert_eq!(nearest_index(&[10, 20], 15), Some(0)); // tie → earlier
        assert_eq!(nearest_index(&[10, 20], 16), Some(1));
        assert_eq!(nearest_index(&[10, 20, 20, 20], 100), Some(1)); // duplicates → first
        assert_eq!(nearest_index(&[i64::MIN, i64::MAX], 0), Some(1)); // 2^63 vs 2^63 - 1
        assert_eq!(nearest_index(&[i64::MIN, i64::MAX], -1), Some(0));
        assert_eq!(nearest_index(&[i64::MIN, i64::MAX], i64::MAX), Some(1));
    }
}
