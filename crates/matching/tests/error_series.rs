//! The point-by-point tracking error that plots draw must give the statistics the report
//! prints: same commands, same interpolation (angle wrap, gap limit), same pairs.

use bagscope_matching::*;

const MS: i64 = 1_000_000;

fn series(n: i64, period_ns: i64, shift_ns: i64, f: impl Fn(f64) -> f64) -> JointSeries {
    let mut s = JointSeries::default();
    let names: JointNames = vec!["wrist".to_string(), "elbow".to_string()].into();
    for k in 0..n {
        let t = k * period_ns;
        let x = (t - shift_ns) as f64 * 1e-9;
        s.stamp_ns.push(t);
        s.names.push(names.clone());
        s.values.push(vec![f(x), 0.5 * (1.3 * x).sin()]);
    }
    s
}

fn keep_where<T>(v: &mut Vec<T>, keep: &[bool]) {
    let mut i = 0;
    v.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt()
}

fn check(cmd: &JointSeries, resp: &JointSeries, opts: &MatchOptions) {
    let r = match_series(cmd, resp, opts).unwrap();
    let (before, after) =
        tracking_error_series(cmd, resp, r.response_kind, r.delay_ns, opts).unwrap();
    for (stats, series) in [(&r.error_before, &before), (&r.error_after, &after)] {
        let n: usize = series.iter().map(|s| s.error.len()).sum();
        assert_eq!(n, stats.samples);
        for s in series {
            let want = stats.per_joint[&s.joint];
            let got = rms(&s.error);
            assert!(
                (got - want).abs() <= 1e-12 * want.max(1.0),
                "{}: {got} vs {want}",
                s.joint
            );
            assert!(s.t_ns.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}

#[test]
fn sampled_response_series_reproduce_the_statistics() {
    // 20 Hz commands, 100 Hz states 42 ms later.
    let cmd = series(400, 50 * MS, 0, |x| 0.9 * x.sin());
    let resp = series(2000, 10 * MS, 42 * MS, |x| 0.9 * x.sin());
    check(&cmd, &resp, &MatchOptions::default());
}

#[test]
fn continuous_joint_errors_wrap_like_the_statistics() {
    // The wrist turns continuously: its angle wraps at ±π, and so must its error.
    let wrap = |a: f64| {
        (a + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI
    };
    let cmd = series(400, 50 * MS, 0, |x| wrap(2.0 * x));
    let resp = series(2000, 10 * MS, 30 * MS, |x| wrap(2.0 * x));
    let opts = MatchOptions {
        continuous_joints: vec!["wrist".to_string()],
        ..Default::default()
    };
    check(&cmd, &resp, &opts);
    let r = match_series(&cmd, &resp, &opts).unwrap();
    let (_, after) =
        tracking_error_series(&cmd, &resp, r.response_kind, r.delay_ns, &opts).unwrap();
    let wrist = after.iter().find(|s| s.joint == "wrist").unwrap();
    assert!(
        wrist.error.iter().all(|e| e.abs() < 0.1),
        "no 2π jumps in the wrapped error"
    );
}

#[test]
fn gaps_are_not_bridged() {
    // States stop for 2 s in the middle: no error is read across the dropout.
    let cmd = series(400, 50 * MS, 0, |x| 0.9 * x.sin());
    let mut resp = series(2000, 10 * MS, 42 * MS, |x| 0.9 * x.sin());
    let keep: Vec<bool> = resp
        .stamp_ns
        .iter()
        .map(|&t| !(8_000 * MS..10_000 * MS).contains(&t))
        .collect();
    keep_where(&mut resp.stamp_ns, &keep);
    keep_where(&mut resp.names, &keep);
    keep_where(&mut resp.values, &keep);
    check(&cmd, &resp, &MatchOptions::default());
    let r = match_series(&cmd, &resp, &MatchOptions::default()).unwrap();
    let (_, after) = tracking_error_series(
        &cmd,
        &resp,
        r.response_kind,
        r.delay_ns,
        &MatchOptions::default(),
    )
    .unwrap();
    for s in &after {
        assert!(
            !s.t_ns
                .iter()
                .any(|&t| (8_100 * MS..9_900 * MS).contains(&(t + r.delay_ns))),
            "{}: error read inside the dropout",
            s.joint
        );
    }
}
