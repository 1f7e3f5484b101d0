//! Side-by-side comparison of several runs of the same command sequence.

use crate::match_series;
use crate::pairing::{err, Track};
use crate::prep::{self, Sink, CMD, RESP};
use crate::types::{
    CommandDiff, CompareReport, JointSeries, MatchOptions, ResponseDiff, RunSummary,
};
use std::collections::BTreeMap;

/// Commands count as the same when values agree within this (radians; leaves room for a
/// float32 round trip)…
const VALUE_TOLERANCE: f64 = 1e-6;
/// …and relative stamps within this (timer jitter).
const TIME_TOLERANCE_NS: i64 = 1_000_000;

/// Aligns each run on its first command (relative time), checks the runs command the same
/// sequence as the first, reports each run's delay and corrected error, and how each run's
/// response differs from the first run's once each run's own delay is removed.
pub fn compare_runs(
    runs: &[(String, JointSeries, JointSeries)],
    opts: &MatchOptions,
) -> CompareReport {
    let mut report = CompareReport {
        reference: runs.first().map(|r| r.0.clone()),
        runs: Vec::new(),
        commands: Vec::new(),
        responses: Vec::new(),
        value_tolerance: VALUE_TOLERANCE,
        time_tolerance_ns: TIME_TOLERANCE_NS,
    };
    let mut delays: Vec<Option<i64>> = Vec::new();
    for (name, c, r) in runs {
        let s = match match_series(c, r, opts) {
            Ok(m) => RunSummary {
                name: name.clone(),
                delay_ns: Some(m.delay_ns),
                method: Some(m.method.clone()),
                error_before_rms: Some(m.error_before.rms),
                error_after_rms: Some(m.error_after.rms),
                error_after_per_joint: m.error_after.per_joint.clone(),
                summary: Some(m.summary.clone()),
                error: None,
            },
            Err(e) => RunSummary {
                name: name.clone(),
                delay_ns: None,
                method: None,
                error_before_rms: None,
                error_after_rms: None,
                error_after_per_joint: BTreeMap::new(),
                summary: None,
                error: Some(e.to_string()),
            },
        };
        delays.push(s.delay_ns);
        report.runs.push(s);
    }
    let Some((_, c0, r0)) = runs.first() else {
        return report;
    };
    if prep::validate(c0, CMD).is_err() {
        return report;
    }
    let joints: Vec<String> = prep::joint_names(c0).into_iter().collect();
    let mut sink = Sink::default(); // input findings are already in each run's own report
    let ref_cmd = prep::prepare(c0, &joints, CMD, opts, &mut sink).messages;
    let ref_resp = prep::validate(r0, RESP)
        .is_ok()
        .then(|| prep::prepare(r0, &joints, RESP, opts, &mut sink).messages);
    let wrap: Vec<bool> = joints
        .iter()
        .map(|n| opts.continuous_joints.contains(n))
        .collect();

    for (k, (name, c, r)) in runs.iter().enumerate().skip(1) {
        if prep::validate(c, CMD).is_ok() {
            let cmd = prep::prepare(c, &joints, CMD, opts, &mut sink).messages;
            report
                .commands
                .push(command_diff(name, &ref_cmd, &cmd, &wrap));
        }
        let resp_ok = prep::validate(r, RESP).is_ok();
        let diff = match (
            &ref_resp,
            delays[0],
            delays[k],
            resp_ok,
            prep::validate(c, CMD).is_ok(),
        ) {
            (Some(rr), Some(d0), Some(dk), true, true) => {
                let cmd = prep::prepare(c, &joints, CMD, opts, &mut sink).messages;
                let rk = prep::prepare(r, &joints, RESP, opts, &mut sink).messages;
                response_diff(
                    name,
                    &ref_cmd,
                    rr,
                    d0,
                    cmd.t.first().copied(),
                    &rk,
                    dk,
                    &joints,
                    &wrap,
                    opts,
                )
            }
            _ => ResponseDiff {
                name: name.clone(),
                rms: None,
                per_joint: BTreeMap::new(),
                samples: 0,
            },
        };
        report.responses.push(diff);
    }
    report
}

fn command_diff(name: &str, a: &prep::Dense, b: &prep::Dense, wrap: &[bool]) -> CommandDiff {
    let n = a.len().min(b.len());
    let (a0, b0) = (
        a.t.first().copied().unwrap_or(0),
        b.t.first().copied().unwrap_or(0),
    );
    let mut first = None;
    let (mut max_v, mut max_t) = (0.0f64, 0i64);
    for i in 0..n {
        let dt = (a.t[i].saturating_sub(a0))
            .saturating_sub(b.t[i].saturating_sub(b0))
            .saturating_abs();
        let mut dv = 0.0f64;
        let mut presence_differs = false;
        for j in 0..a.v.len() {
            let (x, y) = (a.v[j][i], b.v[j][i]);
            match (x.is_finite(), y.is_finite()) {
                (true, true) => dv = dv.max(err(y, x, wrap[j]).abs()),
                (false, false) => {}
                _ => presence_differs = true,
            }
        }
        max_v = max_v.max(dv);
        max_t = max_t.max(dt);
        if first.is_none() && (dv > VALUE_TOLERANCE || dt > TIME_TOLERANCE_NS || presence_differs) {
            first = Some(i);
        }
    }
    if first.is_none() && a.len() != b.len() {
        first = Some(n);
    }
    CommandDiff {
        name: name.to_string(),
        commands: b.len(),
        reference_commands: a.len(),
        same_sequence: first.is_none(),
        first_differing_index: first,
        max_value_diff: max_v,
        max_time_diff_ns: max_t,
    }
}

/// RMS per joint of `run_k(t0_k + τ + d_k) − run_0(t0_0 + τ + d_0)` over the reference
/// command times τ (relative to the first command).
#[allow(clippy::too_many_arguments)]
fn response_diff(
    name: &str,
    ref_cmd: &prep::Dense,
    ref_resp: &prep::Dense,
    d0: i64,
    first_k: Option<i64>,
    rk: &prep::Dense,
    dk: i64,
    joints: &[String],
    wrap: &[bool],
    opts: &MatchOptions,
) -> ResponseDiff {
    let empty = ResponseDiff {
        name: name.to_string(),
        rms: None,
        per_joint: BTreeMap::new(),
        samples: 0,
    };
    let (Some(&t00), Some(t0k)) = (ref_cmd.t.first(), first_k) else {
        return empty;
    };
    let tr0 = Track::new(ref_resp, wrap, opts.max_pair_distance_ns, opts.interpolate);
    let trk = Track::new(rk, wrap, opts.max_pair_distance_ns, opts.interpolate);
    let mut errs: Vec<Vec<f64>> = vec![Vec::new(); joints.len()];
    for &t in &ref_cmd.t {
        let rel = t.saturating_sub(t00);
        let ta = t00.saturating_add(rel).saturating_add(d0);
        let tb = t0k.saturating_add(rel).saturating_add(dk);
        let (ia, ib) = (tr0.locate(ta), trk.locate(tb));
        for j in 0..joints.len() {
            if let (Some(a), Some(b)) = (tr0.value(j, ia, ta), trk.value(j, ib, tb)) {
                errs[j].push(err(b, a, wrap[j]));
            }
        }
    }
    let per_joint: BTreeMap<String, f64> = errs
        .iter()
        .enumerate()
        .filter_map(|(j, e)| bagscope_stats::rms(e).map(|x| (joints[j].clone(), x)))
        .collect();
    let all: Vec<f64> = errs.concat();
    ResponseDiff {
        name: name.to_string(),
        rms: bagscope_stats::rms(&all),
        per_joint,
        samples: all.len(),
    }
}
