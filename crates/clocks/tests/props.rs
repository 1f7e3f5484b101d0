//! Property tests: offset invariance, injected jumps found exactly once, no panics.

use bagscope_clocks::*;
use proptest::prelude::*;

const T0: i64 = 1_764_460_800_000_000_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

fn wall_topic(log: Vec<i64>, stamp: Vec<i64>) -> TopicTimes {
    TopicTimes {
        topic: "/t".into(),
        type_name: "sensor_msgs/msg/Imu".into(),
        source: StampSource::HeaderStamp,
        publish_time_ns: log.clone(),
        log_time_ns: log,
        stamp_ns: stamp,
        invalid_stamps: 0,
    }
}

/// A wall topic: period, base lag, per-message jitter, optionally every third frame shifted.
fn arb_wall() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    (
        20usize..300,
        5i64..100,
        0i64..200,
        prop::collection::vec(0i64..3 * MS, 300),
        prop::bool::ANY,
    )
        .prop_map(|(n, period_ms, lag_ms, jit, bimodal)| {
            let stamp: Vec<i64> = (0..n as i64).map(|i| T0 + i * period_ms * MS).collect();
            let log: Vec<i64> = stamp
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    s + lag_ms * MS + jit[i] + if bimodal && i % 3 == 2 { 15 * MS } else { 0 }
                })
                .collect();
            (log, stamp)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Adding c to every stamp moves lag by exactly −c and offset by +c; nothing else changes.
    #[test]
    fn constant_offset_shifts_only_lag((log, stamp) in arb_wall(), c in -500 * MS..500 * MS) {
        let o = ClocksOptions::default();
        let a = analyze(&[wall_topic(log.clone(), stamp.clone())], &o);
        let shifted: Vec<i64> = stamp.iter().map(|s| s + c).collect();
        let b = analyze(&[wall_topic(log, shifted)], &o);
        let (ta, tb) = (&a.topics[0], &b.topics[0]);
        prop_assert_eq!(ta.axis, tb.axis);
        let (la, lb) = (ta.lag_ns.unwrap(), tb.lag_ns.unwrap());
        prop_assert_eq!(la.p50 - c, lb.p50);
        prop_assert_eq!(la.min - c, lb.min);
        prop_assert_eq!(la.max - c, lb.max);
        prop_assert_eq!(la.p99 - c, lb.p99);
        prop_assert_eq!(ta.lag_modes_ns.len(), tb.lag_modes_ns.len());
        for (x, y) in ta.lag_modes_ns.iter().zip(&tb.lag_modes_ns) {
            prop_assert_eq!(x - c, *y);
        }
        // Below MIN_FIT_MESSAGES stamps neither has a clock model.
        prop_assert_eq!(ta.clock_model.is_some(), ta.count >= bagscope_clocks::MIN_FIT_MESSAGES);
        prop_assert_eq!(ta.clock_model.map(|m| m.offset_ns + c), tb.clock_model.map(|m| m.offset_ns));
        prop_assert_eq!(ta.backward_jumps.len(), tb.backward_jumps.len());
        prop_assert_eq!(ta.non_monotonic, tb.non_monotonic);
        prop_assert_eq!(ta.median_period_ns, tb.median_period_ns);
        prop_assert_eq!(ta.gap_count, tb.gap_count);
        prop_assert_eq!(a.split, b.split);
    }

    /// Same for a clock offset (device far behind): the offset moves by exactly c.
    #[test]
    fn constant_offset_shifts_clock_offset((log, stamp) in arb_wall(), days in 2i64..1000, c in -S..S) {
        let o = ClocksOptions::default();
        let behind: Vec<i64> = stamp.iter().map(|s| s - days * 86_400 * S).collect();
        let a = analyze(&[wall_topic(log.clone(), behind.clone())], &o);
        let b = analyze(&[wall_topic(log, behind.iter().map(|s| s + c).collect())], &o);
        let (ta, tb) = (&a.topics[0], &b.topics[0]);
        prop_assert!(ta.lag_ns.is_none() && tb.lag_ns.is_none());
        prop_assert_eq!(ta.clock_offset_ns.unwrap() + c, tb.clock_offset_ns.unwrap());
        prop_assert_eq!(ta.lag_modes_ns.len(), tb.lag_modes_ns.len());
        prop_assert_eq!(ta.axis, Axis::Wall);
        prop_assert_eq!(tb.axis, Axis::Wall);
    }

    /// Each injected backward jump (≥ 0.5 s, on a jittery series) is found exactly once, at the
    /// right message; jitter reorderings are never jumps.
    #[test]
    fn injected_jumps_found_once(
        n in 200usize..600,
        period_ms in 5i64..50,
        jit in prop::collection::vec(-2 * MS..2 * MS, 600),
        cuts in prop::collection::btree_set(20usize..580, 0..5),
        backs in prop::collection::vec(500 * MS..30 * S, 5),
    ) {
        let cuts: Vec<usize> = cuts.into_iter().filter(|&c| c < n).collect();
        // Keep jumps apart so each one is its own event.
        let cuts: Vec<usize> = cuts.iter().enumerate().filter(|(i, &c)| *i == 0 || c - cuts[i - 1] >= 5).map(|(_, &c)| c).collect();
        let log: Vec<i64> = (0..n as i64).map(|i| T0 + i * period_ms * MS).collect();
        let mut stamp: Vec<i64> = (0..n).map(|i| log[i] - 5 * MS + jit[i]).collect();
        for (k, &c) in cuts.iter().enumerate() {
            for s in stamp.iter_mut().skip(c) {
                *s -= backs[k];
            }
        }
        let r = analyze(&[wall_topic(log.clone(), stamp)], &ClocksOptions::default());
        let t = &r.topics[0];
        let found: Vec<i64> = t.backward_jumps.iter().map(|j| j.log_time_ns).collect();
        let want: Vec<i64> = cuts.iter().map(|&c| log[c]).collect();
        prop_assert_eq!(found, want);
    }

    /// The same on a sim topic with /clock resets: one jump per reset on both, one epoch more.
    #[test]
    fn sim_resets_found_once(resets in prop::collection::btree_set(1usize..19, 0..4), rate in 0.5f64..2.0) {
        let resets: Vec<usize> = resets.into_iter().collect();
        // Resets at whole seconds of log time; sim restarts at 0 each time.
        let sim_at = |l: i64| {
            let sec = ((l - T0) / S) as usize;
            let start = resets.iter().filter(|&&r| r <= sec).max().map_or(0, |&r| r as i64 * S);
            let base = if resets.iter().any(|&r| r <= sec) { 0 } else { 7 * S };
            base + ((l - T0 - start) as f64 * rate) as i64
        };
        let clog: Vec<i64> = (0..2000).map(|i| T0 + i * 10 * MS).collect();
        let csim: Vec<i64> = clog.iter().map(|&l| sim_at(l)).collect();
        let jlog: Vec<i64> = (0..1000).map(|i| T0 + 5 * MS + i * 20 * MS).collect();
        let jst: Vec<i64> = jlog.iter().map(|&l| sim_at(l - MS)).collect();
        let bag = vec![
            TopicTimes { topic: "/clock".into(), type_name: "rosgraph_msgs/msg/Clock".into(), source: StampSource::ClockField,
                publish_time_ns: vec![], log_time_ns: clog, stamp_ns: csim, invalid_stamps: 0 },
            TopicTimes { topic: "/j".into(), type_name: "sensor_msgs/msg/JointState".into(), source: StampSource::HeaderStamp,
                publish_time_ns: vec![], log_time_ns: jlog, stamp_ns: jst, invalid_stamps: 0 },
        ];
        let r = analyze(&bag, &ClocksOptions::default());
        prop_assert_eq!(r.topic("/clock").unwrap().backward_jumps.len(), resets.len());
        prop_assert_eq!(r.topic("/j").unwrap().backward_jumps.len(), resets.len());
        prop_assert_eq!(r.topic("/j").unwrap().axis, Axis::Sim);
        let sc = r.sim_clock.as_ref().unwrap();
        prop_assert_eq!(sc.epochs.len(), resets.len() + 1);
        prop_assert!((sc.rate - rate).abs() < 0.01);
    }

    /// Arbitrary values never panic and always serialise.
    #[test]
    fn never_panics(
        topics in prop::collection::vec(
            (prop::collection::vec(any::<i64>(), 0..40), prop::collection::vec(any::<i64>(), 0..40),
             prop::collection::vec(any::<i64>(), 0..40), 0u8..4, prop::bool::ANY),
            0..4),
    ) {
        let bag: Vec<TopicTimes> = topics.into_iter().enumerate().map(|(i, (log, publish, stamp, src, clock))| TopicTimes {
            topic: if clock { "/clock".into() } else { format!("/t{i}") },
            type_name: if clock { "rosgraph_msgs/msg/Clock".into() } else { "x".into() },
            source: [StampSource::HeaderStamp, StampSource::TopLevelStamp, StampSource::ClockField, StampSource::None][src as usize],
            log_time_ns: log, publish_time_ns: publish, stamp_ns: stamp, invalid_stamps: 0,
        }).collect();
        let r = analyze(&bag, &ClocksOptions::default());
        serde_json::to_string(&r).unwrap();
        if let Some(m) = ClockMap::from_report(&r) {
            let _ = map_series(&[i64::MIN, 0, i64::MAX], Axis::Sim, Axis::Wall, &m, &[]);
            let _ = map_series(&[i64::MIN, 0, i64::MAX], Axis::Wall, Axis::Sim, &m, &[]);
        }
    }

    /// Near-epoch wall series with a few extreme values mixed in never panic either.
    #[test]
    fn never_panics_near_extremes(vals in prop::collection::vec(prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), T0..T0 + 10 * S, -S..S], 0..60)) {
        let log: Vec<i64> = vals.iter().rev().copied().collect();
        let r = analyze(&[wall_topic(log, vals)], &ClocksOptions::default());
        serde_json::to_string(&r).unwrap();
    }
}

#[test]
fn mode_count_stable_under_huge_offsets() {
    // The mode finder works on differences, so even i64-scale offsets keep the mode count.
    let base: Vec<i64> = (0..300)
        .map(|i| if i % 3 == 2 { 22 * MS } else { 10 * MS } + (i * 7919 % 1000) * 1000)
        .collect();
    let o = ModeOptions::default();
    let n = lag_modes_ns(&base, &o).len();
    assert_eq!(n, 2);
    for c in [-4_000_000_000_000_000_000i64, 4_000_000_000_000_000_000] {
        let v: Vec<i64> = base.iter().map(|x| x + c).collect();
        assert_eq!(lag_modes_ns(&v, &o).len(), n);
    }
}

/// Deterministic pseudo-random stream for shape tests (seeded by proptest).
struct Lcg(u64);
impl Lcg {
    fn u(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        // Box-Muller.
        let (a, b) = (self.u(), self.u());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

proptest! {
    // Statistical, not invariant: error rates are small but not zero (see `scan_rates`), so the
    // case stream is fixed to keep CI deterministic. Ranges are where the scan saw no errors.
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_c10c),
        ..ProptestConfig::default()
    })]

    /// Unimodal shapes (gaussian, half-normal tail, exponential tail) give one mode.
    #[test]
    fn unimodal_shapes_one_mode(seed in any::<u64>(), n in 200usize..1000, sigma_us in 500i64..2000, shape in 0u8..3) {
        let mut r = Lcg(seed);
        let s = sigma_us as f64 * 1e3;
        let v: Vec<i64> = (0..n).map(|_| 10 * MS + match shape {
            0 => s * r.normal(),
            1 => s * r.normal().abs(),
            2 => -s * r.u().ln(),
            _ => 4.0 * s * r.u(),
        } as i64).collect();
        prop_assert_eq!(lag_modes_ns(&v, &ModeOptions::default()).len(), 1);
    }

    /// Two gaussian clusters ≥ 6 sigma apart, the smaller holding ≥ 15%, give two modes whose
    /// distance is the true separation within 1.5 sigma.
    #[test]
    fn separated_clusters_two_modes(seed in any::<u64>(), n in 400usize..1000, sigma_us in 500i64..2000,
                                    sep_sigmas in 6.0f64..20.0, frac in 0.15f64..0.5) {
        let mut r = Lcg(seed);
        let s = sigma_us as f64 * 1e3;
        let v: Vec<i64> = (0..n).map(|i| {
            let shifted = (i as f64 + 0.5) / n as f64 <= frac;
            (10e6 + if shifted { sep_sigmas * s } else { 0.0 } + s * r.normal()) as i64
        }).collect();
        let m = lag_modes_ns(&v, &ModeOptions::default());
        prop_assert_eq!(m.len(), 2, "{:?}", m);
        prop_assert!((((m[1] - m[0]) as f64) - sep_sigmas * s).abs() < 1.5 * s);
    }
}

/// Uniform jitter (a polling driver's lag) is one mode, also in a small second block (a third
/// of the messages stamped 13 ms later): false splits stay rare at sizes where a robust sigma
/// is noisy. Rates over fixed seeds (deterministic); without `uniform_ks` and `small_sample`
/// the same seeds gave 26/300, 28/300 and 62/300 (now 1, 0 and 4).
#[test]
fn uniform_jitter_rarely_splits() {
    let o = ModeOptions::default();
    let count = |n: usize, blocks: bool| {
        (0..300u64)
            .filter(|seed| {
                let mut r = Lcg(seed * 7 + 3);
                let v: Vec<i64> = (0..n)
                    .map(|i| {
                        let off = if blocks && i % 3 == 2 { 13 * MS } else { 0 };
                        10 * MS + off + (2e6 * r.u()) as i64
                    })
                    .collect();
                lag_modes_ns(&v, &o).len() != if blocks { 2 } else { 1 }
            })
            .count()
    };
    let one_100 = count(100, false);
    let one_200 = count(200, false);
    let two_150 = count(150, true);
    assert!(
        one_100 <= 5 && one_200 <= 5 && two_150 <= 12,
        "wrong mode counts of 300: one block n=100 {one_100}, n=200 {one_200}; two blocks n=150 {two_150}"
    );
}
