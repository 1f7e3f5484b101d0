//! Synthetic bags exercising each clock situation end to end.

use bagscope_clocks::*;
use bagscope_stats::NsSummary;

const T0: i64 = 1_764_460_800_000_000_000; // 2025-11-30, wall time
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

/// Deterministic pseudo-normal noise (sum of 12 uniforms − 6) so no RNG crate is needed.
struct Noise(u64);
impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }
}

fn topic(name: &str, ty: &str, source: StampSource, log: Vec<i64>, stamp: Vec<i64>) -> TopicTimes {
    TopicTimes {
        topic: name.into(),
        type_name: ty.into(),
        source,
        publish_time_ns: log.clone(),
        log_time_ns: log,
        stamp_ns: stamp,
        invalid_stamps: 0,
    }
}

/// Wall topic: stamps every `period` from T0, received `lag + |jitter|` later.
fn wall_topic(name: &str, n: usize, period: i64, lag: i64, jitter: f64, seed: u64) -> TopicTimes {
    let mut rng = Noise(seed);
    let stamp: Vec<i64> = (0..n as i64).map(|i| T0 + i * period).collect();
    let log: Vec<i64> = stamp
        .iter()
        .map(|&s| s + lag + (jitter * rng.normal()).abs() as i64)
        .collect();
    topic(
        name,
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        stamp,
    )
}

/// /clock at 100 Hz from T0 on the log axis; sim = sim0 + rate·(log − T0).
fn clock_topic(n: usize, rate: f64, sim0: i64) -> TopicTimes {
    let log: Vec<i64> = (0..n as i64).map(|i| T0 + i * 10 * MS).collect();
    let sim: Vec<i64> = log
        .iter()
        .map(|&l| sim0 + ((l - T0) as f64 * rate) as i64)
        .collect();
    topic(
        "/clock",
        "rosgraph_msgs/msg/Clock",
        StampSource::ClockField,
        log,
        sim,
    )
}

/// Sim-stamped topic at `period_log` log-time intervals, stamped `lag` of log time before receipt.
fn sim_topic(name: &str, n: usize, period_log: i64, lag: i64, rate: f64, sim0: i64) -> TopicTimes {
    let log: Vec<i64> = (0..n as i64)
        .map(|i| T0 + 5 * MS + i * period_log)
        .collect();
    let stamp: Vec<i64> = log
        .iter()
        .map(|&l| sim0 + ((l - lag - T0) as f64 * rate) as i64)
        .collect();
    topic(
        name,
        "sensor_msgs/msg/JointState",
        StampSource::HeaderStamp,
        log,
        stamp,
    )
}

fn has_warning(r: &ClocksReport, code: WarningCode, topic: Option<&str>) -> bool {
    r.warnings
        .iter()
        .any(|w| w.code == code && w.topic.as_deref() == topic)
}

#[test]
fn wall_topics_with_lag() {
    let r = analyze(
        &[
            wall_topic("/imu", 2000, 10 * MS, MS, 0.3e6, 1),
            wall_topic("/cam", 400, 50 * MS, 10 * MS, 1e6, 2),
        ],
        &ClocksOptions::default(),
    );
    assert_eq!(r.recorder_axis, Axis::Wall);
    assert!(!r.split);
    assert!(r.sim_clock.is_none());
    let names: Vec<&str> = r.topics.iter().map(|t| t.topic.as_str()).collect();
    assert_eq!(names, ["/cam", "/imu"], "sorted by name");
    let cam = r.topic("/cam").unwrap();
    assert_eq!(cam.axis, Axis::Wall);
    assert_eq!(cam.lag_basis, Some(LagBasis::Direct));
    let lag = cam.lag_ns.unwrap();
    assert!((lag.p50 - 10 * MS - 700_000).abs() < 500_000, "{lag:?}");
    assert_eq!(cam.lag_modes_ns.len(), 1);
    assert_eq!(cam.median_period_ns, Some(50 * MS));
    assert!((cam.rate_hz.unwrap() - 20.0).abs() < 0.1);
    assert!(cam.backward_jumps.is_empty());
    assert_eq!(cam.analysis_time, TimeBasis::Stamp);
    let model = cam.clock_model.unwrap();
    assert!(model.drift_ppm.abs() < 50.0, "{model:?}");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn sim_topics_with_clock_at_0_9() {
    let r = analyze(
        &[
            clock_topic(2400, 0.9, 12 * S),
            sim_topic("/joint_states", 2400, 10 * MS, 2 * MS, 0.9, 12 * S),
        ],
        &ClocksOptions::default(),
    );
    let sc = r.sim_clock.as_ref().unwrap();
    assert_eq!(sc.topic, "/clock");
    assert!((sc.rate - 0.9).abs() < 0.01, "{}", sc.rate);
    assert_eq!(sc.epochs.len(), 1);
    assert!(sc.pauses.is_empty());
    let js = r.topic("/joint_states").unwrap();
    assert_eq!(js.axis, Axis::Sim);
    assert_eq!(js.lag_basis, Some(LagBasis::MappedThroughClock));
    let lag = js.lag_ns.unwrap();
    assert!((lag.p50 - 2 * MS).abs() < 100_000, "{lag:?}");
    assert_eq!(r.topic("/clock").unwrap().axis, Axis::Sim);
    assert!(!r.split);
}

#[test]
fn split_bag() {
    let r = analyze(
        &[
            clock_topic(2400, 0.9, 12 * S),
            sim_topic("/joint_states", 2400, 10 * MS, 2 * MS, 0.9, 12 * S),
            wall_topic("/arm_cmd", 480, 50 * MS, MS, 0.5e6, 3),
        ],
        &ClocksOptions::default(),
    );
    assert!(r.split);
    assert_eq!(r.topic("/arm_cmd").unwrap().axis, Axis::Wall);
    assert_eq!(r.topic("/joint_states").unwrap().axis, Axis::Sim);
    let w = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::SplitClockAxes)
        .unwrap();
    assert!(w.topic.is_none());
    assert!(
        w.message.contains("wall: /arm_cmd") && w.message.contains("sim: /joint_states"),
        "{}",
        w.message
    );
    assert!(w.message.contains("use_sim_time") && w.message.contains("/clock"));
    let groups: Vec<Axis> = r.axis_groups.iter().map(|g| g.axis).collect();
    assert_eq!(groups, [Axis::Wall, Axis::Sim]);
}

#[test]
fn wall_topics_plus_clock_is_not_split() {
    // /clock is a reference, not a producer: by itself it does not split the bag.
    let r = analyze(
        &[
            clock_topic(100, 1.0, 0),
            wall_topic("/a", 100, 10 * MS, MS, 0.0, 1),
        ],
        &ClocksOptions::default(),
    );
    assert!(!r.split);
}

#[test]
fn headerless_topic_is_none() {
    let log: Vec<i64> = (0..120).map(|i| T0 + i * 200 * MS).collect();
    let t = topic(
        "/gripper_cmd",
        "std_msgs/msg/Float64",
        StampSource::None,
        log,
        vec![],
    );
    let r = analyze(&[t], &ClocksOptions::default());
    let g = r.topic("/gripper_cmd").unwrap();
    assert_eq!(g.axis, Axis::None);
    assert!(g.lag_ns.is_none() && g.lag_modes_ns.is_empty());
    assert_eq!(g.analysis_time, TimeBasis::LogTime);
    assert_eq!(g.period_basis, TimeBasis::LogTime);
    assert_eq!(g.median_period_ns, Some(200 * MS));
    assert!(has_warning(
        &r,
        WarningCode::Headerless,
        Some("/gripper_cmd")
    ));
    assert!(r.warnings[0].message.contains("log time"));
    assert!(!r.split);
}

#[test]
fn zero_stamps() {
    let log: Vec<i64> = (0..50).map(|i| T0 + i * 100 * MS).collect();
    let t = topic(
        "/scan",
        "sensor_msgs/msg/LaserScan",
        StampSource::HeaderStamp,
        log,
        vec![0; 50],
    );
    let r = analyze(
        &[t, wall_topic("/imu", 100, 10 * MS, MS, 0.0, 1)],
        &ClocksOptions::default(),
    );
    let z = r.topic("/scan").unwrap();
    assert_eq!(z.axis, Axis::Zero);
    assert_eq!(z.axis_counts.zero, 50);
    assert!(z.lag_ns.is_none());
    assert_eq!(z.analysis_time, TimeBasis::LogTime);
    assert!(has_warning(&r, WarningCode::StampZero, Some("/scan")));
    assert!(!r.split, "zero topics do not count for split");
}

#[test]
fn mixed_axis_topic() {
    let mut t = wall_topic("/odom", 100, 10 * MS, MS, 0.0, 1);
    for s in t.stamp_ns.iter_mut().take(10) {
        *s = 0;
    }
    let r = analyze(&[t], &ClocksOptions::default());
    let o = r.topic("/odom").unwrap();
    assert_eq!(o.axis, Axis::Mixed);
    assert_eq!((o.axis_counts.wall, o.axis_counts.zero), (90, 10));
    // Zeros beside one clock are unfilled stamps (stamp_zero), not a second clock.
    assert!(!r.warnings.iter().any(|w| w.code == WarningCode::MixedAxis));
    let w = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::StampZero)
        .unwrap();
    assert!(w.message.contains("10 of 100"), "{}", w.message);
    // Lag is still computed on the wall part, and says so.
    assert_eq!(o.lag_ns.unwrap().count, 90);
    assert!(o.lag_note.as_deref().unwrap().contains("90 of 100"));
}

/// Sim reset at log T0 + 9.5 s: /clock and a sim topic both jump back to ~0.
fn reset_bag() -> Vec<TopicTimes> {
    let reset = T0 + 9_500 * MS;
    let sim_at = |l: i64| {
        if l < reset {
            12_310 * MS + (l - T0)
        } else {
            l - reset
        }
    };
    let clog: Vec<i64> = (0..2000).map(|i| T0 + i * 10 * MS).collect();
    let csim: Vec<i64> = clog.iter().map(|&l| sim_at(l)).collect();
    let jlog: Vec<i64> = (0..1000).map(|i| T0 + 4 * MS + i * 20 * MS).collect();
    let jst: Vec<i64> = jlog.iter().map(|&l| sim_at(l - MS)).collect();
    vec![
        topic(
            "/clock",
            "rosgraph_msgs/msg/Clock",
            StampSource::ClockField,
            clog,
            csim,
        ),
        topic(
            "/joint_states",
            "sensor_msgs/msg/JointState",
            StampSource::HeaderStamp,
            jlog,
            jst,
        ),
    ]
}

#[test]
fn sim_reset_one_jump_each_two_epochs() {
    let r = analyze(&reset_bag(), &ClocksOptions::default());
    for name in ["/clock", "/joint_states"] {
        let t = r.topic(name).unwrap();
        assert_eq!(t.axis, Axis::Sim, "{name}");
        assert_eq!(t.backward_jumps.len(), 1, "{name}");
        let j = t.backward_jumps[0];
        assert!(
            (j.log_time_ns - (T0 + 9_500 * MS)).abs() <= 20 * MS,
            "{name} {j:?}"
        );
        assert!(j.from_ns > 21 * S && j.to_ns < 10 * MS);
        assert!(has_warning(&r, WarningCode::ClockJumpBack, Some(name)));
    }
    let sc = r.sim_clock.as_ref().unwrap();
    assert_eq!(sc.epochs.len(), 2);
    assert_eq!(sc.backward_jumps, 1);
    assert_eq!(sc.epochs[0].start_log_time_ns, T0);
    assert_eq!(sc.epochs[1].start_log_time_ns, T0 + 9_500 * MS);
    assert!((sc.rate - 1.0).abs() < 1e-6);
    // Lag maps through the right epoch on both sides of the reset.
    let lag = r.topic("/joint_states").unwrap().lag_ns.unwrap();
    assert!(
        (lag.min - MS).abs() <= 10 && (lag.max - MS).abs() <= 10,
        "{lag:?}"
    );
}

/// Camera lag: base 10 ms + 1 ms gaussian jitter; every third frame shifted by `shift`.
fn camera(shift: i64, seed: u64) -> TopicTimes {
    let mut rng = Noise(seed);
    let stamp: Vec<i64> = (0..400).map(|i| T0 + i * 50 * MS).collect();
    let log: Vec<i64> = stamp
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            s + 10 * MS + if i % 3 == 2 { shift } else { 0 } + (1e6 * rng.normal()) as i64
        })
        .collect();
    topic(
        "/camera/image_raw",
        "sensor_msgs/msg/Image",
        StampSource::HeaderStamp,
        log,
        stamp,
    )
}

#[test]
fn bimodal_lag_gives_two_modes() {
    for seed in 0..10 {
        let r = analyze(&[camera(12 * MS, seed)], &ClocksOptions::default());
        let m = &r.topics[0].lag_modes_ns;
        assert_eq!(m.len(), 2, "seed {seed}: {m:?}");
        assert!(
            ((m[1] - m[0]) - 12 * MS).abs() <= 3 * MS,
            "seed {seed}: {m:?}"
        );
        assert!((m[0] - 10 * MS).abs() <= MS, "{m:?}");
    }
}

#[test]
fn unimodal_lag_gives_one_mode() {
    for seed in 0..10 {
        let r = analyze(&[camera(0, seed)], &ClocksOptions::default());
        assert_eq!(r.topics[0].lag_modes_ns.len(), 1, "seed {seed}");
    }
    // Wider (2 ms) jitter, still one mode.
    let mut rng = Noise(99);
    let stamp: Vec<i64> = (0..400).map(|i| T0 + i * 50 * MS).collect();
    let log: Vec<i64> = stamp
        .iter()
        .map(|&s| s + 10 * MS + (2e6 * rng.normal()) as i64)
        .collect();
    let r = analyze(
        &[topic("/c", "x", StampSource::HeaderStamp, log, stamp)],
        &ClocksOptions::default(),
    );
    assert_eq!(r.topics[0].lag_modes_ns.len(), 1);
}

#[test]
fn lidar_like_lag() {
    // 90 ms base with a one-sided tail (exponential, mean 3 ms), as a lidar driver shows.
    let mut rng = Noise(5);
    let stamp: Vec<i64> = (0..200).map(|i| T0 + i * 100 * MS).collect();
    let log: Vec<i64> = stamp
        .iter()
        .map(|&s| s + 90 * MS + (-(1.0 - rng.uniform()).ln() * 3e6) as i64)
        .collect();
    let r = analyze(
        &[topic(
            "/lidar/points",
            "sensor_msgs/msg/PointCloud2",
            StampSource::HeaderStamp,
            log,
            stamp,
        )],
        &ClocksOptions::default(),
    );
    let t = &r.topics[0];
    assert!(
        (t.lag_ns.unwrap().p50 - 90 * MS).abs() <= 6 * MS,
        "{:?}",
        t.lag_ns
    );
    assert_eq!(t.lag_modes_ns.len(), 1);
    assert!(!has_warning(
        &r,
        WarningCode::LargeLag,
        Some("/lidar/points")
    ));
}

#[test]
fn device_clock_800_days_behind_is_an_offset() {
    let days800 = 800 * 86_400 * S;
    let mut dev = wall_topic("/device", 100, 10 * MS, MS, 0.0, 1);
    for s in dev.stamp_ns.iter_mut() {
        *s -= days800;
    }
    let r = analyze(
        &[dev, wall_topic("/ok", 100, 10 * MS, MS, 0.0, 2)],
        &ClocksOptions::default(),
    );
    let d = r.topic("/device").unwrap();
    assert_eq!(d.axis, Axis::Wall);
    assert!(d.lag_ns.is_none(), "an offset is not reported as lag");
    assert_eq!(d.clock_offset_ns, Some(-days800 - MS));
    assert!(has_warning(&r, WarningCode::ClockOffset, Some("/device")));
    assert!(!has_warning(&r, WarningCode::ClockOffset, Some("/ok")));
    assert!(!r.split, "both on wall");
}

#[test]
fn relative_clock() {
    // Time since boot (~3000 s), no /clock.
    let log: Vec<i64> = (0..100).map(|i| T0 + i * 10 * MS).collect();
    let st: Vec<i64> = (0..100).map(|i| 3_000 * S + i * 10 * MS).collect();
    let rel = topic(
        "/boot",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        st,
    );
    let r = analyze(
        &[rel.clone(), wall_topic("/w", 100, 10 * MS, MS, 0.0, 1)],
        &ClocksOptions::default(),
    );
    let b = r.topic("/boot").unwrap();
    assert_eq!(b.axis, Axis::Relative);
    assert!(b.lag_ns.is_none() && b.lag_note.is_some());
    assert_eq!(b.median_period_ns, Some(10 * MS));
    assert!(r.split);
    // Small stamps far from the /clock are relative too, not sim.
    let r = analyze(
        &[rel, clock_topic(100, 1.0, 12 * S)],
        &ClocksOptions::default(),
    );
    assert_eq!(r.topic("/boot").unwrap().axis, Axis::Relative);
}

#[test]
fn recorder_on_sim_time() {
    // Recorded with --use-sim-time: log times are sim time, as are the stamps.
    let log: Vec<i64> = (0..500).map(|i| 12 * S + i * 10 * MS).collect();
    let st: Vec<i64> = log.iter().map(|&l| l - 3 * MS).collect();
    let t = topic(
        "/joint_states",
        "sensor_msgs/msg/JointState",
        StampSource::HeaderStamp,
        log.clone(),
        st,
    );
    let c = topic(
        "/clock",
        "rosgraph_msgs/msg/Clock",
        StampSource::ClockField,
        log.clone(),
        log,
    );
    let r = analyze(&[t, c], &ClocksOptions::default());
    assert_eq!(r.recorder_axis, Axis::Sim);
    let j = r.topic("/joint_states").unwrap();
    assert_eq!(j.axis, Axis::Sim);
    assert_eq!(j.lag_basis, Some(LagBasis::Direct));
    assert_eq!(j.lag_ns.unwrap().p50, 3 * MS);
    assert!(has_warning(&r, WarningCode::RecorderOnSimTime, None));
    assert!((r.sim_clock.as_ref().unwrap().rate - 1.0).abs() < 1e-9);
}

#[test]
fn future_stamps_large_lag_and_drift() {
    let mut fut = wall_topic("/fut", 200, 10 * MS, MS, 0.0, 1);
    for s in fut.stamp_ns.iter_mut().skip(100) {
        *s += 50 * MS; // half the stamps 49 ms ahead of receipt
    }
    let slow = wall_topic("/slow", 100, 10 * MS, 400 * MS, 0.0, 2);
    // 1000 ppm drift over 20 s: 20 ms accumulated.
    let mut drift = wall_topic("/drift", 2000, 10 * MS, 5 * MS, 0.0, 3);
    for (i, s) in drift.stamp_ns.iter_mut().enumerate() {
        *s += i as i64 * 10 * MS / 1000;
    }
    let r = analyze(&[fut, slow, drift], &ClocksOptions::default());
    assert!(has_warning(&r, WarningCode::StampsInFuture, Some("/fut")));
    assert!(has_warning(&r, WarningCode::LargeLag, Some("/slow")));
    assert!(has_warning(&r, WarningCode::ClockDrift, Some("/drift")));
    let d = r.topic("/drift").unwrap().clock_model.unwrap();
    assert!((d.drift_ppm - 1000.0).abs() < 5.0, "{d:?}");
    assert!(!has_warning(&r, WarningCode::StampsInFuture, Some("/slow")));
}

#[test]
fn clock_pause_keeps_rate() {
    let mut c = clock_topic(2000, 0.9, 5 * S);
    // Paused for 2 s of log time from sample 800: sim stands still, then continues from there.
    let hold = c.stamp_ns[800];
    let shift = c.stamp_ns[1000] - hold;
    for i in 800..2000 {
        c.stamp_ns[i] = if i < 1000 {
            hold
        } else {
            c.stamp_ns[i] - shift
        };
    }
    let r = analyze(&[c], &ClocksOptions::default());
    let sc = r.sim_clock.as_ref().unwrap();
    assert!((sc.rate - 0.9).abs() < 0.01, "{}", sc.rate);
    assert_eq!(sc.pauses.len(), 1);
    assert_eq!(sc.pauses[0].start_log_time_ns, T0 + 8_000 * MS);
    assert_eq!(sc.pauses[0].end_log_time_ns, T0 + 10_000 * MS);
    assert_eq!(sc.epochs.len(), 1);
    assert!(has_warning(&r, WarningCode::SimClockPause, Some("/clock")));
}

#[test]
fn gaps_are_listed() {
    let mut t = wall_topic("/g", 300, 10 * MS, MS, 0.0, 1);
    t.log_time_ns.drain(100..150);
    t.stamp_ns.drain(100..150);
    t.publish_time_ns.drain(100..150);
    let r = analyze(&[t], &ClocksOptions::default());
    let g = r.topic("/g").unwrap();
    assert_eq!(g.gap_count, 1);
    assert_eq!(g.gaps[0].interval_ns, 510 * MS);
    assert_eq!(g.gaps[0].log_time_ns, T0 + 150 * 10 * MS + MS);
}

#[test]
fn clock_map_round_trip_and_epochs() {
    let r = analyze(&reset_bag(), &ClocksOptions::default());
    let m = ClockMap::from_report(&r).unwrap();
    assert_eq!(m.log_axis, Axis::Wall);
    assert_eq!(m.epochs.len(), 2);
    // Sim 5 s exists in both epochs: the hint picks one.
    let before = m.sim_to_log_ns(13 * S, Some(T0 + S)).unwrap();
    assert_eq!(before, T0 + 690 * MS);
    let after = m.sim_to_log_ns(5 * S, Some(T0 + 15 * S)).unwrap();
    assert_eq!(after, T0 + 14_500 * MS);
    assert_eq!(m.log_to_sim_ns(after), Some(5 * S));
    assert_eq!(
        m.log_to_sim_ns(T0 + 9_499 * MS),
        Some(12_310 * MS + 9_499 * MS)
    );
    // Without a hint: the epoch whose sim range holds the value (only the first reaches 20 s).
    assert_eq!(m.sim_to_log_ns(20 * S, None), Some(T0 + 7_690 * MS));
    // Map rebuilt from the serialised fits only (no samples) agrees within a microsecond.
    let mut r2 = r.clone();
    r2.clock_map = None;
    let m2 = ClockMap::from_report(&r2).unwrap();
    assert!((m2.sim_to_log_ns(5 * S, Some(T0 + 15 * S)).unwrap() - after).abs() < 1_000);

    let stamps = [13 * S, 5 * S];
    let logs = [T0 + S, T0 + 15 * S];
    let w = map_series(&stamps, Axis::Sim, Axis::Wall, &m, &logs).unwrap();
    assert_eq!(w, vec![before, after]);
    let back = map_series(&w, Axis::Wall, Axis::Sim, &m, &[]).unwrap();
    assert_eq!(back, stamps.to_vec());
    assert_eq!(
        map_series(&stamps, Axis::Sim, Axis::Sim, &m, &[]).unwrap(),
        stamps.to_vec()
    );
}

#[test]
fn map_series_refuses_without_mapping() {
    let m = ClockMap::from_series(&[T0, T0 + S], &[0, S], Axis::Wall).unwrap();
    let e = map_series(&[1, 2], Axis::Wall, Axis::Relative, &m, &[]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("wall") && msg.contains("relative"), "{msg}");
    let e = map_series(&[1], Axis::Zero, Axis::Wall, &m, &[]).unwrap_err();
    assert!(e.to_string().contains("zero"));
    assert!(matches!(
        map_series(&[1, 2], Axis::Sim, Axis::Wall, &m, &[T0]),
        Err(MapError::LengthMismatch { .. })
    ));
    let sim_rec = ClockMap::from_series(&[0, S], &[0, S], Axis::Sim).unwrap();
    let e = map_series(&[1], Axis::Sim, Axis::Wall, &sim_rec, &[]).unwrap_err();
    assert!(e.to_string().contains("sim") && e.to_string().contains("wall"));
    assert!(ClockMap::from_series(&[T0], &[0], Axis::Wall).is_none());
}

#[test]
fn degenerate_inputs_do_not_panic() {
    let o = ClocksOptions::default();
    let r = analyze(&[], &o);
    assert!(r.topics.is_empty() && !r.split);
    let empty = topic("/e", "x", StampSource::HeaderStamp, vec![], vec![]);
    let single = topic("/s", "x", StampSource::HeaderStamp, vec![T0], vec![T0 - MS]);
    let ext = topic(
        "/x",
        "x",
        StampSource::HeaderStamp,
        vec![i64::MIN, i64::MAX, 0, i64::MAX],
        vec![i64::MAX, i64::MIN, i64::MIN, 0],
    );
    let eq = topic(
        "/q",
        "x",
        StampSource::HeaderStamp,
        vec![T0; 10],
        vec![T0; 10],
    );
    let clk = topic(
        "/clock",
        "rosgraph_msgs/msg/Clock",
        StampSource::ClockField,
        vec![i64::MAX, i64::MIN, 0],
        vec![i64::MIN, 0, i64::MAX],
    );
    let mut bad_len = wall_topic("/b", 10, MS, MS, 0.0, 1);
    bad_len.stamp_ns.truncate(5);
    bad_len.publish_time_ns.truncate(3);
    let r = analyze(&[empty, single, ext, eq, clk, bad_len], &o);
    assert_eq!(r.topics.len(), 6);
    assert_eq!(r.topic("/s").unwrap().lag_ns.unwrap().p50, MS);
    assert_eq!(r.topic("/q").unwrap().duplicates, 9);
    assert!(has_warning(&r, WarningCode::LengthMismatch, Some("/b")));
    serde_json::to_string(&r).unwrap();
    if let Some(m) = ClockMap::from_report(&r) {
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            let _ = m.log_to_sim_ns(v);
            let _ = m.sim_to_log_ns(v, Some(v));
            let _ = m.sim_to_log_ns(v, None);
        }
    }
}

#[test]
fn json_shape_for_the_checker() {
    let mut bag = reset_bag();
    bag.push(wall_topic("/arm_cmd", 100, 50 * MS, MS, 0.0, 1));
    bag.push(topic(
        "/gripper",
        "std_msgs/msg/Float64",
        StampSource::None,
        vec![T0, T0 + S],
        vec![],
    ));
    let v: serde_json::Value =
        serde_json::to_value(analyze(&bag, &ClocksOptions::default())).unwrap();
    assert!(v["split"].is_boolean());
    assert_eq!(v["recorder_axis"], "wall");
    let topics = v["topics"].as_array().unwrap();
    let names: Vec<&str> = topics
        .iter()
        .map(|t| t["topic"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["/arm_cmd", "/clock", "/gripper", "/joint_states"]);
    let arm = &topics[0];
    assert_eq!(arm["axis"], "wall");
    assert_eq!(arm["source"], "header_stamp");
    for k in ["p50", "p99", "min", "max"] {
        assert!(arm["lag_ns"][k].is_i64(), "{k}");
    }
    assert!(arm["lag_modes_ns"][0].is_i64());
    assert!(topics[2]["lag_ns"].is_null());
    assert_eq!(topics[2]["axis"], "none");
    let j = &topics[3]["backward_jumps"][0];
    for k in ["log_time_ns", "from_ns", "to_ns"] {
        assert!(j[k].is_i64(), "{k}");
    }
    assert_eq!(topics[1]["source"], "clock_field");
    assert!(v["sim_clock"]["rate"].is_f64());
    assert_eq!(v["sim_clock"]["topic"], "/clock");
    assert!(v["sim_clock"]["epochs"][1]["start_log_time_ns"].is_i64());
    let w = &v["warnings"][0];
    assert!(w["code"].is_string() && w["message"].is_string());
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "split_clock_axes" && w["topic"].is_null()));
}

#[test]
fn future_tolerance_follows_the_jitter() {
    // Lags uniform in ±4 ms around 0 (a producer clock synchronised to ~ms): many lags are
    // below −1 ms, none below 3 × jitter (~6.6 ms), so none is a stamp in the future. The
    // same with 7 stamps moved 30 ms ahead: exactly those 7 are.
    let mut rng = Noise(11);
    let n = 3000;
    let stamp: Vec<i64> = (0..n as i64).map(|i| T0 + i * 10 * MS).collect();
    let log: Vec<i64> = stamp
        .iter()
        .map(|&s| s + ((rng.uniform() * 2.0 - 1.0) * 4.0 * MS as f64) as i64)
        .collect();
    let sync = topic(
        "/sync",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log.clone(),
        stamp.clone(),
    );
    let mut ahead = topic(
        "/ahead",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    for i in [5, 400, 401, 1200, 2000, 2500, 2999] {
        ahead.stamp_ns[i] += 30 * MS;
    }
    let r = analyze(&[sync, ahead], &ClocksOptions::default());
    let s = r.topic("/sync").unwrap().lag_ns.unwrap();
    assert!(s.min < -3 * MS, "{s:?}");
    assert!(!has_warning(&r, WarningCode::StampsInFuture, Some("/sync")));
    let w = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::StampsInFuture && w.topic.as_deref() == Some("/ahead"))
        .expect("future stamps on /ahead");
    assert!(w.message.starts_with("7 of 3000 "), "{}", w.message);
}

#[test]
fn long_topic_clock_model_is_fitted_on_a_spread_sample() {
    // 300 000 messages at 1 kHz (5 min), stamp clock 250 ppm fast, jitter σ = 0.2 ms, and 2%
    // of the messages held up 40 ms (outliers the fit must trim).
    let n = 300_000usize;
    let mut rng = Noise(5);
    let stamp: Vec<i64> = (0..n as i64)
        .map(|i| T0 + i * MS + (i * MS) / 4000) // +250 ppm against the recorder
        .collect();
    let log: Vec<i64> = (0..n as i64)
        .map(|i| {
            let late = if rng.uniform() < 0.02 { 40 * MS } else { 0 };
            T0 + i * MS + 2 * MS + (0.2 * MS as f64 * rng.normal()) as i64 + late
        })
        .collect();
    let t = topic(
        "/fast",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[t], &ClocksOptions::default());
    let m = r.topic("/fast").unwrap().clock_model.unwrap();
    assert_eq!(m.fit_stride, n.div_ceil(FIT_MAX_POINTS), "{m:?}");
    // Slope standard error here is ~0.01 ppm; a sample taken from one part of the span or
    // with x and y misaligned would be off by far more.
    assert!((m.drift_ppm - 250.0).abs() < 0.2, "{m:?}");
    assert!(
        (m.residual_jitter_ns / (0.2 * MS as f64) - 1.0).abs() < 0.1,
        "{m:?}"
    );
    // The late ~2% are trimmed (and 3-sigma trimming takes ~0.3% of the rest): n counts the
    // sample's points that the fit kept. The sample: every stride-th message, and the last.
    let k = m.fit_stride;
    let sample = (n - 1) / k + 1 + usize::from(!(n - 1).is_multiple_of(k));
    assert!(
        m.n * 100 >= sample * 96 && m.n * 100 <= sample * 99,
        "{m:?} of {sample}"
    );

    // A topic at the limit is fitted on every message.
    let short = wall_topic("/short", FIT_MAX_POINTS, MS, 2 * MS, 0.0, 9);
    let r = analyze(&[short], &ClocksOptions::default());
    let m = r.topic("/short").unwrap().clock_model.unwrap();
    assert_eq!((m.fit_stride, m.n), (1, FIT_MAX_POINTS), "{m:?}");
}

#[test]
fn publish_summaries_equal_the_plain_computation() {
    // Three topics: publish time = receive time (most recorders), publish time between stamp
    // and receipt (rosbag2 from Jazzy), and publish = receive with some stamps unfilled (0),
    // where only the stamped messages count. Each summary against NsSummary::of on a copy.
    let n = 40_000;
    let same = wall_topic("/same", n, MS, 3 * MS, 0.4 * MS as f64, 21);
    let mut own = wall_topic("/own", n, MS, 3 * MS, 0.4 * MS as f64, 22);
    let mut rng = Noise(23);
    for (p, s) in own.publish_time_ns.iter_mut().zip(&own.stamp_ns) {
        *p = s + (0.2 * MS as f64 * (1.0 + rng.uniform())) as i64;
    }
    let mut holes = wall_topic("/holes", n, MS, 3 * MS, 0.4 * MS as f64, 24);
    for i in (0..n).step_by(7) {
        holes.stamp_ns[i] = 0;
    }
    let want = |t: &TopicTimes| {
        let stamped: Vec<usize> = (0..n).filter(|&i| t.stamp_ns[i] != 0).collect();
        let pl: Vec<i64> = stamped
            .iter()
            .map(|&i| t.publish_time_ns[i] - t.stamp_ns[i])
            .collect();
        let lmp: Vec<i64> = (0..n)
            .map(|i| t.log_time_ns[i] - t.publish_time_ns[i])
            .collect();
        (NsSummary::of(&pl), NsSummary::of(&lmp))
    };
    let expected: Vec<_> = [&same, &own, &holes].map(want).into();
    let r = analyze(&[same, own, holes], &ClocksOptions::default());
    for (name, (pl, lmp)) in ["/same", "/own", "/holes"].iter().zip(expected) {
        let t = r.topic(name).unwrap();
        assert_eq!(t.publish_lag_ns, pl, "{name}");
        assert_eq!(t.log_minus_publish_ns, lmp, "{name}");
        assert!(pl.is_some() && lmp.is_some(), "{name}");
    }
    // The unfilled stamps make /holes mixed: its lag is on the stamped messages only.
    assert_eq!(r.topic("/holes").unwrap().axis, Axis::Mixed);
}
