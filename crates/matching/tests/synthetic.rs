//! Delay estimation and corrected error on synthetic arm runs with known delays, biases,
//! warm-up and still segments, event echoes and missing joints.

mod common;

use bagscope_matching::*;
use common::{Synth, JOINTS};
use std::collections::BTreeMap;

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn sampled_delays_recovered_within_2ms() {
    for (delay, seed) in [(25_000_000, 1), (42_000_000, 2), (55_000_000, 3)] {
        let s = Synth {
            delay_ns: delay,
            seed,
            ..Default::default()
        };
        let rep = match_series(&s.commands(), &s.sampled(), &MatchOptions::default()).unwrap();
        assert_eq!(rep.method, "error_curve_min");
        assert_eq!(rep.response_kind, ResponseKind::Sampled);
        assert!(rep.response_kind_auto);
        assert!(
            (rep.delay_ns - delay).abs() < 2_000_000,
            "delay {} vs {}",
            ms(rep.delay_ns),
            ms(delay)
        );
        assert!(
            rep.error_after.rms < rep.error_before.rms / 3.0,
            "{}",
            rep.summary
        );
        assert!(rep.delay.std_ns.unwrap() < 1_000_000.0);
        for jd in rep.per_joint_delay.values() {
            assert!((jd.delay_ns.unwrap() - delay).abs() < 3_000_000, "{jd:?}");
        }
    }
}

#[test]
fn constant_bias_stays_in_corrected_error_of_that_joint_only() {
    let mut bias = [0.0; 6];
    bias[2] = 0.015;
    let s = Synth {
        delay_ns: 25_000_000,
        bias,
        seed: 11,
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &MatchOptions::default()).unwrap();
    assert!(
        (rep.delay_ns - 25_000_000).abs() < 2_000_000,
        "{}",
        rep.summary
    );
    for (name, &e) in &rep.error_after.per_joint {
        if name == "joint_3" {
            assert!((e - 0.015).abs() < 0.005, "{name}: {e}");
            assert!((rep.error_after.per_joint_mean[name] - 0.015).abs() < 0.002);
        } else {
            assert!(e < 0.01, "{name}: {e}");
        }
    }
    // The bag-like ratio (after < before / 3) needs the bags' speeds (~2 rad/s); at ~0.9 rad/s
    // a 25 ms delay is only ~0.018 rad of naive error, so check a weaker ratio here.
    assert!(
        rep.error_after.rms < rep.error_before.rms / 2.0,
        "{}",
        rep.summary
    );
}

#[test]
fn warm_up_is_trimmed_and_reported() {
    let s = Synth::default();
    let rep = match_series(&s.commands(), &s.sampled(), &MatchOptions::default()).unwrap();
    assert_eq!(rep.segments.mode, "auto");
    let w = &rep.segments.trimmed[0];
    assert_eq!(w.reason, Some(SegmentReason::WarmUp));
    assert_eq!(w.start_rel_ns, 0);
    assert!((w.end_rel_ns - 2_000_000_000).abs() <= 50_000_000, "{w:?}");
    assert_eq!(rep.segments.used.len(), 1);
}

#[test]
fn still_segment_inside_motion_is_trimmed() {
    let s = Synth {
        n_cmd: 400,
        ..Default::default()
    };
    let mut c = s.commands();
    // Hold every joint for 1.5 s in the middle of the motion; the response follows.
    let hold_from = 200;
    let held = c.values[hold_from].clone();
    for k in hold_from..hold_from + 30 {
        c.values[k] = held.clone();
    }
    let rep = match_series(&c, &s.sampled(), &MatchOptions::default()).unwrap();
    assert!(
        rep.segments
            .trimmed
            .iter()
            .any(|t| t.reason == Some(SegmentReason::Still)),
        "{:?}",
        rep.segments
    );
    assert_eq!(rep.segments.used.len(), 2);
}

#[test]
fn window_option_replaces_auto_trim() {
    let s = Synth::default();
    let o = MatchOptions {
        window_ns: Some((3_000_000_000, 12_000_000_000)),
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &o).unwrap();
    assert_eq!(rep.segments.mode, "window");
    assert_eq!(rep.segments.used[0].start_rel_ns, 3_000_000_000);
    assert!((rep.delay_ns - 42_000_000).abs() < 2_000_000);
}

#[test]
fn event_echoes_are_paired_causally() {
    let s = Synth {
        n_cmd: 240,
        warm_up_ns: 1_000_000_000,
        delay_ns: 42_000_000,
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.events(), &MatchOptions::default()).unwrap();
    assert_eq!(rep.response_kind, ResponseKind::Event);
    assert_eq!(rep.method, "event_pairs");
    assert_eq!(rep.delay.confirmed_by_values, Some(true));
    assert!(
        (rep.delay_ns - 42_000_000).abs() < 2_000_000,
        "{}",
        rep.summary
    );
    // Nearest stamp is the previous command's echo (8 ms before vs 42 ms after).
    assert!(
        rep.checks
            .counts
            .get("response_before_command")
            .copied()
            .unwrap_or(0)
            > 100
    );
    assert!(
        rep.error_after.rms < rep.error_before.rms / 3.0,
        "{}",
        rep.summary
    );
    assert!(rep.error_after.rms < 0.004);
    let sp = rep.delay.spread.unwrap();
    assert!(sp.min >= 40_000_000 && sp.max <= 44_000_000, "{sp:?}");
}

/// A state published at the commands' rate (a slowed simulation) is not told from echoes by
/// rate alone. Read as echoes, each command pairs with the sample nearest in value (10 ms off
/// here: 50 ms instead of 60); read as samples, the delay is recovered, and that reading wins
/// on its much lower corrected error. Real echoes keep the echo reading
/// (`event_echoes_are_paired_causally`, `event_delay_longer_than_command_period`).
#[test]
fn state_at_the_command_rate_is_read_as_samples() {
    let s = Synth {
        resp_period_ns: 50_000_000,
        delay_ns: 60_000_000,
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &MatchOptions::default()).unwrap();
    assert_eq!(rep.response_kind, ResponseKind::Sampled, "{}", rep.summary);
    assert!(rep.response_kind_auto);
    assert!(
        (rep.delay_ns - 60_000_000).abs() < 2_000_000,
        "{}",
        rep.summary
    );
    assert!(rep.error_after.rms < 0.005, "{}", rep.summary);
    assert_eq!(rep.checks.counts.get("response_kind_by_error"), Some(&1));
    // Asked for echoes, the echo reading stands (and is the one the rule replaced).
    let o = MatchOptions {
        response_kind: Some(ResponseKind::Event),
        ..Default::default()
    };
    let echo = match_series(&s.commands(), &s.sampled(), &o).unwrap();
    assert_eq!(echo.response_kind, ResponseKind::Event);
    assert!(
        (echo.delay_ns - 50_000_000).abs() < 2_000_000,
        "{}",
        echo.summary
    );
    assert!(rep.error_after.rms < 0.5 * echo.error_after.rms);
}

#[test]
fn event_delay_longer_than_command_period() {
    for delay in [8_000_000, 120_000_000] {
        let s = Synth {
            n_cmd: 240,
            warm_up_ns: 1_000_000_000,
            delay_ns: delay,
            seed: 5,
            ..Default::default()
        };
        let o = MatchOptions {
            one_to_one: true,
            ..Default::default()
        };
        let rep = match_series(&s.commands(), &s.events(), &o).unwrap();
        assert_eq!(rep.delay.confirmed_by_values, Some(true));
        assert!((rep.delay_ns - delay).abs() < 2_000_000, "{}", rep.summary);
    }
}

#[test]
fn minimum_at_search_edge_is_flagged() {
    let s = Synth::default();
    let o = MatchOptions {
        search_window_ns: (0, 30_000_000),
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &o).unwrap();
    assert!(rep.delay.at_search_edge);
    assert!(rep.checks.counts.contains_key("delay_at_search_edge"));
}

#[test]
fn event_without_echoed_values_falls_back_to_first_causal_response() {
    let s = Synth {
        n_cmd: 100,
        delay_ns: 30_000_000,
        ..Default::default()
    };
    let o = MatchOptions {
        response_kind: Some(ResponseKind::Event),
        ..Default::default()
    };
    // Responses whose values echo nothing the commands said (a constant): no pair can be
    // confirmed by values, so each command pairs with its first response after it.
    let mut r = s.events();
    for v in r.values.iter_mut() {
        v.iter_mut().for_each(|x| *x = 123.0);
    }
    let rep = match_series(&s.commands(), &r, &o).unwrap();
    assert_eq!(rep.delay.confirmed_by_values, Some(false));
    assert!(
        (rep.delay.delay_ns - s.delay_ns).abs() < 2_000_000,
        "delay {} want {}",
        rep.delay.delay_ns,
        s.delay_ns
    );
    // No values at all (every one NaN): no pair has values, which is an error.
    for v in r.values.iter_mut() {
        v.iter_mut().for_each(|x| *x = f64::NAN);
    }
    assert!(matches!(
        match_series(&s.commands(), &r, &o),
        Err(MatchError::NoPairs { .. })
    ));
}

#[test]
fn joints_missing_on_one_side_are_reported() {
    let s = Synth::default();
    let mut c = s.commands();
    for (n, v) in c.names.iter_mut().zip(c.values.iter_mut()) {
        let mut l = n.to_vec();
        l.push("gripper".into());
        *n = l.into();
        v.push(0.0);
    }
    let mut r = s.sampled();
    for (n, v) in r.names.iter_mut().zip(r.values.iter_mut()) {
        let mut l = n.to_vec();
        let k = l.iter().position(|x| x == "joint_6").unwrap();
        l.remove(k);
        v.remove(k);
        l.push("wrist_cam".into());
        *n = l.into();
        v.push(1.0);
    }
    let rep = match_series(&c, &r, &MatchOptions::default()).unwrap();
    assert_eq!(rep.joints.only_in_commands, vec!["gripper", "joint_6"]);
    assert_eq!(rep.joints.only_in_responses, vec!["wrist_cam"]);
    assert_eq!(rep.joints.matched.len(), 5);
    assert!(!rep.error_after.per_joint.contains_key("joint_6"));
    assert!((rep.delay_ns - 42_000_000).abs() < 2_000_000);
}

#[test]
fn malformed_inputs_are_errors_not_panics() {
    let s = Synth {
        n_cmd: 100,
        ..Default::default()
    };
    let (c, r) = (s.commands(), s.sampled());
    let o = MatchOptions::default();
    assert!(matches!(
        match_series(&JointSeries::default(), &r, &o),
        Err(MatchError::Empty { .. })
    ));
    assert!(matches!(
        match_series(&c, &JointSeries::default(), &o),
        Err(MatchError::Empty { .. })
    ));
    let mut bad = c.clone();
    bad.values.pop();
    assert!(matches!(
        match_series(&bad, &r, &o),
        Err(MatchError::LengthMismatch { .. })
    ));
    let mut bad = c.clone();
    bad.log_time_ns.truncate(3);
    assert!(matches!(
        match_series(&bad, &r, &o),
        Err(MatchError::LengthMismatch { .. })
    ));
    let mut other = r.clone();
    other
        .names
        .iter_mut()
        .for_each(|n| *n = n.iter().map(|x| format!("{x}x")).collect());
    assert!(matches!(
        match_series(&c, &other, &o),
        Err(MatchError::NoCommonJoints { .. })
    ));
    let bad_opts = MatchOptions {
        search_window_ns: (10, 0),
        ..Default::default()
    };
    assert!(matches!(
        match_series(&c, &r, &bad_opts),
        Err(MatchError::InvalidOption { .. })
    ));
    let bad_opts = MatchOptions {
        sweep_step_ns: 0,
        ..Default::default()
    };
    assert!(matches!(
        match_series(&c, &r, &bad_opts),
        Err(MatchError::InvalidOption { .. })
    ));
    let bad_opts = MatchOptions {
        still_velocity_rad_s: f64::NAN,
        ..Default::default()
    };
    assert!(matches!(
        match_series(&c, &r, &bad_opts),
        Err(MatchError::InvalidOption { .. })
    ));

    // One message each: must not panic, whatever the outcome.
    let one = |s: &JointSeries| JointSeries {
        stamp_ns: s.stamp_ns[..1].to_vec(),
        log_time_ns: s.log_time_ns[..1].to_vec(),
        names: s.names[..1].to_vec(),
        values: s.values[..1].to_vec(),
        points: None,
    };
    let _ = match_series(&one(&c), &one(&r), &o);
    let _ = match_series(&one(&c), &r, &o);
    let _ = match_series(&c, &one(&r), &o);
    for kind in [ResponseKind::Event, ResponseKind::Sampled] {
        let ok = MatchOptions {
            response_kind: Some(kind),
            ..Default::default()
        };
        let _ = match_series(&one(&c), &one(&r), &ok);
        let _ = match_series(&c, &one(&r), &ok);
    }
    // Extreme stamps.
    let mut ext = one(&c);
    ext.stamp_ns[0] = i64::MAX;
    let mut ext_r = one(&r);
    ext_r.stamp_ns[0] = i64::MIN;
    let _ = match_series(&ext, &ext_r, &o);
}

#[test]
fn no_motion_is_an_error_in_sampled_mode() {
    let s = Synth {
        warm_up_ns: 100_000_000_000,
        ..Default::default()
    };
    assert!(matches!(
        match_series(&s.commands(), &s.sampled(), &MatchOptions::default()),
        Err(MatchError::NoMotion)
    ));
}

#[test]
fn bad_messages_become_findings() {
    let s = Synth::default();
    let mut c = s.commands();
    c.values[10][0] = f64::NAN; // non-finite
    c.values[11].pop(); // length mismatch
    let mut dup = c.names[12].to_vec();
    dup[1] = "joint_1".into(); // duplicate name (joint_2 missing)
    c.names[12] = dup.into();
    c.values[13][4] = 9.0; // outside limits
    c.log_time_ns[14] += 500_000_000; // stale
    c.log_time_ns[15] -= 100_000_000; // stamp in the future
    let mut limits = BTreeMap::new();
    limits.insert("joint_5".to_string(), (-3.0, 3.0));
    let o = MatchOptions {
        limits,
        max_command_age_ns: Some(100_000_000),
        ..Default::default()
    };
    let rep = match_series(&c, &s.sampled(), &o).unwrap();
    for kind in [
        "non_finite",
        "names_values_length",
        "duplicate_name",
        "missing_joint",
        "outside_limits",
        "stale_command",
        "future_command",
    ] {
        assert!(
            rep.checks.counts.get(kind).copied().unwrap_or(0) >= 1,
            "{kind}: {:?}",
            rep.checks.counts
        );
    }
    assert_eq!(rep.checks.counts["stale_command"], 1);
    assert!((rep.delay_ns - 42_000_000).abs() < 2_000_000);
}

#[test]
fn age_check_skipped_when_stamps_on_another_axis() {
    let s = Synth {
        t0_ns: 12_000_000_000,
        ..Default::default()
    };
    let mut c = s.commands();
    c.log_time_ns
        .iter_mut()
        .for_each(|l| *l += 1_764_460_800_000_000_000);
    let o = MatchOptions {
        max_command_age_ns: Some(100_000_000),
        ..Default::default()
    };
    let rep = match_series(&c, &s.sampled(), &o).unwrap();
    assert_eq!(rep.checks.counts.get("age_check_skipped"), Some(&1));
    assert!(!rep.checks.counts.contains_key("stale_command"));
}

#[test]
fn unsorted_input_is_sorted_and_reported() {
    let s = Synth::default();
    let mut r = s.sampled();
    r.stamp_ns.swap(100, 101);
    r.values.swap(100, 101);
    let rep = match_series(&s.commands(), &r, &MatchOptions::default()).unwrap();
    assert_eq!(rep.checks.counts.get("stamps_not_monotonic"), Some(&1));
    assert!((rep.delay_ns - 42_000_000).abs() < 2_000_000);
}

#[test]
fn bucketing_and_nearest_mode_still_work() {
    let s = Synth::default();
    let o = MatchOptions {
        bucket_ns: Some(20_000_000),
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &o).unwrap();
    assert!(rep.streams.response_messages < 1000);
    assert!(
        (rep.delay_ns - 42_000_000).abs() < 3_000_000,
        "{}",
        rep.summary
    );
    let o = MatchOptions {
        interpolate: false,
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &o).unwrap();
    // Nearest sample only: with streams phase-locked the curve is a staircase of 10 ms
    // steps, so the resolution is half the response period.
    assert!(
        (rep.delay_ns - 42_000_000).abs() <= 7_000_000,
        "{}",
        rep.summary
    );
    let o = MatchOptions {
        one_to_one: true,
        max_pair_distance_ns: Some(20_000_000),
        ..Default::default()
    };
    let rep = match_series(&s.commands(), &s.sampled(), &o).unwrap();
    assert!(
        (rep.delay_ns - 42_000_000).abs() < 2_000_000,
        "{}",
        rep.summary
    );
}

#[test]
fn continuous_joint_wraps() {
    // joint_1 circles through ±π; without wrapping the errors would be ~2π at the seam.
    let s = Synth::default();
    let wrap = |x: f64| {
        (x + std::f64::consts::PI).rem_euclid(2.0 * std::f64::consts::PI) - std::f64::consts::PI
    };
    let mut c = s.commands();
    for v in c.values.iter_mut() {
        v[0] = wrap(v[0] * 4.0 + 3.0);
    }
    let mut r = s.sampled();
    let k = r.names[0].iter().position(|n| n == "joint_1").unwrap();
    let s2 = Synth {
        noise: 0.0,
        ..Default::default()
    };
    for (i, v) in r.values.iter_mut().enumerate() {
        v[k] = wrap(s2.traj(0, r.stamp_ns[i] - s.delay_ns) * 4.0 + 3.0);
    }
    let o = MatchOptions {
        continuous_joints: vec!["joint_1".into()],
        ..Default::default()
    };
    let rep = match_series(&c, &r, &o).unwrap();
    assert!(
        rep.error_after.per_joint["joint_1"] < 0.01,
        "{:?}",
        rep.error_after.per_joint
    );
    assert!((rep.delay_ns - 42_000_000).abs() < 2_000_000);
}

#[test]
fn multi_point_trajectories_are_expanded() {
    // 5 Hz messages, each with 10 points 20 ms apart; responses follow the points.
    let s = Synth {
        n_cmd: 1,
        ..Default::default()
    };
    let dense = Synth {
        cmd_period_ns: 20_000_000,
        n_cmd: 700,
        ..Default::default()
    }
    .commands();
    let mut c = JointSeries {
        points: Some(Vec::new()),
        ..Default::default()
    };
    for m in (0..dense.stamp_ns.len()).step_by(10) {
        c.stamp_ns.push(dense.stamp_ns[m]);
        c.log_time_ns.push(dense.log_time_ns[m]);
        c.names.push(dense.names[m].clone());
        c.values.push(dense.values[m].clone());
        let pts = (m..(m + 10).min(dense.stamp_ns.len()))
            .map(|i| {
                (
                    50_000_000 + (i - m) as i64 * 20_000_000,
                    dense.values[i].clone(),
                )
            })
            .collect();
        c.points.as_mut().unwrap().push(pts);
    }
    let r = Synth {
        n_cmd: 280,
        ..Default::default()
    }
    .sampled();
    let _ = s;
    let rep = match_series(&c, &r, &MatchOptions::default()).unwrap();
    assert_eq!(rep.streams.command_messages, 70);
    assert!(rep.streams.command_samples >= 690);
    assert!(
        (rep.delay_ns - 42_000_000).abs() < 2_000_000,
        "{}",
        rep.summary
    );
}

#[test]
fn report_json_has_checker_fields() {
    let s = Synth::default();
    let mut rep = match_series(&s.commands(), &s.sampled(), &MatchOptions::default()).unwrap();
    rep.clock_mapping = Some(ClockMappingNote {
        from_axis: "sim".into(),
        to_axis: "wall".into(),
        via: "/clock".into(),
        note: "linear fit".into(),
    });
    let v: serde_json::Value = serde_json::to_value(&rep).unwrap();
    assert!(v["delay_ns"].is_i64());
    assert_eq!(v["method"], "error_curve_min");
    assert_eq!(v["response_kind"], "sampled");
    assert_eq!(v["clock_mapping"]["via"], "/clock");
    for k in ["error_before", "error_after"] {
        assert!(v[k]["rms"].is_f64());
        assert!(v[k]["mean_abs"].is_f64());
        assert!(v[k]["max"].is_f64());
        for j in JOINTS {
            assert!(v[k]["per_joint"][j].is_f64());
        }
    }
    assert!(v["delay"]["error_curve"].as_array().unwrap().len() > 400);
    assert!(v["delay"]["error_curve"][0].as_array().unwrap().len() == 2);
    assert!(rep.summary.starts_with("delay 42."), "{}", rep.summary);
    assert!(rep.summary.contains("(sampled, error-curve minimum)"));
}

#[test]
fn compare_runs_side_by_side() {
    let a = Synth {
        delay_ns: 25_000_000,
        seed: 1,
        ..Default::default()
    };
    let b = Synth {
        delay_ns: 55_000_000,
        seed: 2,
        t0_ns: 1_764_470_000_000_000_000,
        ..Default::default()
    };
    let mut c_changed = a.commands();
    c_changed.values[150][3] += 0.1;
    let runs = vec![
        ("sim".to_string(), a.commands(), a.sampled()),
        ("real".to_string(), b.commands(), b.sampled()),
        ("edited".to_string(), c_changed, a.sampled()),
    ];
    let rep = compare_runs(&runs, &MatchOptions::default());
    assert_eq!(rep.reference.as_deref(), Some("sim"));
    assert_eq!(rep.runs.len(), 3);
    assert!((rep.runs[0].delay_ns.unwrap() - 25_000_000).abs() < 2_000_000);
    assert!((rep.runs[1].delay_ns.unwrap() - 55_000_000).abs() < 2_000_000);
    assert!(rep.commands[0].same_sequence, "{:?}", rep.commands[0]);
    assert!(!rep.commands[1].same_sequence);
    assert_eq!(rep.commands[1].first_differing_index, Some(150));
    assert!((rep.commands[1].max_value_diff - 0.1).abs() < 1e-9);
    // Same trajectory, both delays removed: the responses differ by noise only.
    let d = &rep.responses[0];
    assert!(d.rms.unwrap() < 0.006, "{d:?}");
    assert_eq!(d.per_joint.len(), 6);
    let json = serde_json::to_string(&rep).unwrap();
    assert!(json.contains("first_differing_index"));
    // Degenerate input does not panic.
    let empty = compare_runs(&[], &MatchOptions::default());
    assert!(empty.runs.is_empty());
    let bad = compare_runs(
        &[("x".into(), JointSeries::default(), JointSeries::default())],
        &MatchOptions::default(),
    );
    assert!(bad.runs[0].error.is_some());
}
