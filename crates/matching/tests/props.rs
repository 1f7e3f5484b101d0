//! Property tests of the matching crate: nearest-neighbour look-ups against brute force,
//! injected delays recovered, and no panic on arbitrary series and options.

mod common;

use bagscope_matching::*;
use common::Synth;
use proptest::prelude::*;

/// Brute-force reference: smallest distance, earliest index on ties.
fn brute(v: &[i64], t: i64) -> Option<usize> {
    (0..v.len()).min_by_key(|&i| (v[i].abs_diff(t), i))
}

fn sorted_vec() -> impl Strategy<Value = Vec<i64>> {
    // Small range forces duplicates and ties; the extremes exercise overflow.
    prop::collection::vec(
        prop_oneof![8 => -50i64..50, 1 => Just(i64::MIN), 1 => Just(i64::MAX)],
        0..40,
    )
    .prop_map(|mut v| {
        v.sort_unstable();
        v
    })
}

proptest! {
    // No persistence file: tests must not write into the source tree.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn nearest_index_equals_brute_force(v in sorted_vec(), t in prop_oneof![8 => -60i64..60, 1 => Just(i64::MIN), 1 => Just(i64::MAX)]) {
        prop_assert_eq!(nearest_index(&v, t), brute(&v, t));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn injected_delay_is_recovered(delay_ms in 5i64..150, sub_ms in 0i64..1000, seed in 0u64..1000) {
        let delay = delay_ms * 1_000_000 + sub_ms * 1_000;
        let s = Synth { delay_ns: delay, seed, n_cmd: 240, ..Default::default() };
        let rep = match_series(&s.commands(), &s.sampled(), &MatchOptions::default()).unwrap();
        // Within the ±1 ms stamp jitter of the responses.
        prop_assert!((rep.delay_ns - delay).abs() <= 1_000_000, "{} vs {}", rep.delay_ns, delay);
    }
}

/// 1e5 commands × 1e6 responses: nearest-neighbour look-ups and the full delay search.
/// Slow in an unoptimised build because of building the inputs; run with `--ignored`.
#[test]
#[ignore = "large: ~1e6 messages"]
fn large_inputs_complete() {
    let n_cmd = 100_000usize;
    let n_resp = 1_000_000usize;
    let names = vec!["a".to_string(), "b".to_string()];
    let traj = |t: i64| {
        let x = t as f64 * 1e-9;
        [0.8 * (1.1 * x).sin(), 0.5 * (1.7 * x).cos()]
    };
    let delay = 37_400_000;
    let mut c = JointSeries::default();
    for k in 0..n_cmd as i64 {
        let t = k * 50_000_000;
        c.stamp_ns.push(t);
        c.names.push(names.clone().into());
        c.values.push(traj(t).to_vec());
    }
    let mut r = JointSeries::default();
    for k in 0..n_resp as i64 {
        let t = k * 5_000_000 + (k * 7919 % 2001 - 1000) * 1000; // ±1 ms deterministic jitter
        r.stamp_ns.push(t);
        r.names.push(names.clone().into());
        r.values.push(traj(t - delay).to_vec());
    }
    r.stamp_ns.sort_unstable();
    let start = std::time::Instant::now();
    let hits = c
        .stamp_ns
        .iter()
        .filter_map(|&t| nearest_index(&r.stamp_ns, t))
        .count();
    assert_eq!(hits, n_cmd);
    let rep = match_series(&c, &r, &MatchOptions::default()).unwrap();
    eprintln!("{} in {:?}", rep.summary, start.elapsed());
    assert!((rep.delay_ns - delay).abs() < 2_000_000);
}

fn garbage_series(max_len: usize) -> impl Strategy<Value = JointSeries> {
    let stamp = prop_oneof![8 => 0i64..2_000_000_000, 1 => Just(i64::MIN), 1 => Just(i64::MAX)];
    let value = prop_oneof![8 => -4.0f64..4.0, 1 => Just(f64::NAN), 1 => Just(f64::INFINITY)];
    let name = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("c".to_string())
    ];
    let msg = (
        stamp.clone(),
        stamp,
        // Mostly well-formed messages so that the analysis runs deep, some malformed ones.
        prop_oneof![6 => Just(vec!["a".to_string(), "b".to_string(), "c".to_string()]), 1 => prop::collection::vec(name, 0..4)],
        prop_oneof![6 => prop::collection::vec(value.clone(), 3..=3), 1 => prop::collection::vec(value, 0..4)],
    );
    prop::collection::vec(msg, 0..max_len).prop_map(|msgs| {
        let mut s = JointSeries::default();
        for (t, l, n, v) in msgs {
            s.stamp_ns.push(t);
            s.log_time_ns.push(l);
            s.names.push(n.into());
            s.values.push(v);
        }
        s
    })
}

fn any_options() -> impl Strategy<Value = MatchOptions> {
    (
        prop_oneof![
            Just(None),
            Just(Some(ResponseKind::Event)),
            Just(Some(ResponseKind::Sampled))
        ],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(None), (0i64..100_000_000).prop_map(Some)],
        prop_oneof![Just(None), (1i64..100_000_000).prop_map(Some)],
        prop_oneof![
            Just(None),
            (0i64..1_000_000_000, 0i64..1_000_000_000)
                .prop_map(|(a, b)| Some((a.min(b), a.max(b))))
        ],
        (-100_000_000i64..100_000_000, 0i64..300_000_000),
    )
        .prop_map(
            |(kind, one, interp, trim, mpd, bucket, window, (lo, len))| MatchOptions {
                response_kind: kind,
                one_to_one: one,
                interpolate: interp,
                trim_still: trim,
                max_pair_distance_ns: mpd,
                bucket_ns: bucket,
                window_ns: window,
                search_window_ns: (lo, lo + len),
                max_command_age_ns: Some(10_000_000),
                continuous_joints: vec!["b".into()],
                ..MatchOptions::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]
    /// Whatever the input, an `Ok` or an `Err`, never a panic.
    #[test]
    fn never_panics(c in garbage_series(30), r in garbage_series(60), o in any_options()) {
        let _ = match_series(&c, &r, &o);
        let _ = compare_runs(&[("x".into(), c.clone(), r.clone()), ("y".into(), r, c)], &o);
    }
}
