//! The clock findings that real recordings showed wrong, each rebuilt as a small case with the
//! shape the real bag had (the bags themselves are checked in `tests/real_recordings.rs`).

use bagscope_clocks::*;

const T0: i64 = 1_764_460_800_000_000_000; // 2025-11-30, wall time
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const DAY: i64 = 86_400 * S;

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

/// `n` messages every `period`, stamped `shift` from their log time (plus a small jitter).
fn shifted(name: &str, n: i64, period: i64, shift: i64) -> TopicTimes {
    let log: Vec<i64> = (0..n).map(|i| T0 + i * period).collect();
    let stamp: Vec<i64> = log
        .iter()
        .enumerate()
        .map(|(i, &l)| l + shift - MS - (i as i64 % 7) * 100_000)
        .collect();
    topic(
        name,
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        stamp,
    )
}

fn codes_of(r: &ClocksReport, topic: Option<&str>) -> Vec<WarningCode> {
    r.warnings
        .iter()
        .filter(|w| w.topic.as_deref() == topic)
        .map(|w| w.code)
        .collect()
}

/// `n` messages every 50 ms: every third stamped on a relative clock, the others on wall time.
fn sim_and_wall_lines(n: i64) -> (Vec<i64>, Vec<i64>) {
    let log: Vec<i64> = (0..n).map(|i| T0 + i * 50 * MS).collect();
    let stamp: Vec<i64> = log
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            if i % 3 == 0 {
                40 * S + i as i64 * 10 * MS
            } else {
                l - 2 * MS
            }
        })
        .collect();
    (log, stamp)
}

/// /rosout holds log lines of sim-time and wall-time nodes (and a backward step between them):
/// it must not make the bag split, nor report a reset or a drift.
#[test]
fn rosout_mixing_clocks_decides_nothing() {
    let n = 200i64;
    let (log, stamp) = sim_and_wall_lines(n);
    let rosout = topic(
        "/rosout",
        "rcl_interfaces/msg/Log",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(
        &[rosout, shifted("/imu", 400, 10 * MS, 0)],
        &ClocksOptions::default(),
    );
    assert!(!r.split, "{:?}", r.axis_groups);
    assert_eq!(r.aggregate_topics, vec!["/rosout"]);
    let ro = r.topic("/rosout").unwrap();
    assert!(ro.aggregate);
    assert_eq!(ro.axis, Axis::Mixed);
    let codes = codes_of(&r, Some("/rosout"));
    for c in [
        WarningCode::MixedAxis,
        WarningCode::ClockJumpBack,
        WarningCode::ClockDrift,
        WarningCode::SplitClockAxes,
    ] {
        assert!(!codes.contains(&c), "{codes:?}");
    }
    assert!(!r
        .warnings
        .iter()
        .any(|w| w.code == WarningCode::SplitClockAxes));
    // A /rosout whose lines all come from sim-time nodes, one of them restarted (stamps step
    // back 30 s): still no split beside the wall-stamped IMU, no reset.
    let log: Vec<i64> = (0..n).map(|i| T0 + i * 50 * MS).collect();
    let stamp: Vec<i64> = (0..n)
        .map(|i| {
            if i < 100 {
                40 * S + i * 50 * MS
            } else {
                15 * S + i * 50 * MS
            }
        })
        .collect();
    let rosout = topic(
        "/rosout",
        "rcl_interfaces/msg/Log",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(
        &[rosout, shifted("/imu", 400, 10 * MS, 0)],
        &ClocksOptions::default(),
    );
    assert_eq!(r.topic("/rosout").unwrap().axis, Axis::Relative);
    assert!(!r.split, "{:?}", r.axis_groups);
    assert!(codes_of(&r, Some("/rosout")).is_empty(), "{:?}", r.warnings);
    // The same stamps on a producer's own topic are a real mixed axis.
    let (log, stamp) = sim_and_wall_lines(n);
    let odd = topic(
        "/odom",
        "nav_msgs/msg/Odometry",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[odd], &ClocksOptions::default());
    assert!(codes_of(&r, Some("/odom")).contains(&WarningCode::MixedAxis));
}

/// Every message of a topic carries one stamp (the rerun bag's /battery_state): stamp_frozen,
/// and no drift of −1 000 000 ppm, no large lag, no modes.
#[test]
fn frozen_stamps_are_a_finding_not_a_drift() {
    let log: Vec<i64> = (0..10).map(|i| T0 + i * 100 * MS).collect();
    let stamp = vec![T0 - 50 * MS; 10];
    let t = topic(
        "/battery_state",
        "sensor_msgs/msg/BatteryState",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[t], &ClocksOptions::default());
    let b = r.topic("/battery_state").unwrap();
    let f = b.frozen_stamps.expect("frozen");
    assert_eq!((f.distinct, f.messages, f.log_span_ns), (1, 10, 900 * MS));
    assert!(b.clock_model.is_none());
    assert_eq!(b.analysis_time, TimeBasis::LogTime);
    let codes = codes_of(&r, Some("/battery_state"));
    assert_eq!(codes, vec![WarningCode::StampFrozen], "{:?}", r.warnings);
    // A stamp repeated twice in a row is a duplicate, not a freeze.
    let log: Vec<i64> = (0..100).map(|i| T0 + i * 10 * MS).collect();
    let stamp: Vec<i64> = log
        .iter()
        .enumerate()
        .map(|(i, _)| T0 + (i as i64 / 2) * 20 * MS - MS)
        .collect();
    let t = topic(
        "/dup",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[t], &ClocksOptions::default());
    assert!(r.topic("/dup").unwrap().frozen_stamps.is_none());
}

/// 17 messages with 6 ms of deviation gave a drift of 2 004 ppm: below MIN_FIT_MESSAGES the
/// model is not fitted and says why.
#[test]
fn too_few_messages_give_no_drift() {
    let log: Vec<i64> = (0..17).map(|i| T0 + i * 100 * MS).collect();
    let stamp: Vec<i64> = log
        .iter()
        .enumerate()
        .map(|(i, &l)| l - 2 * MS - (i as i64 * 6 * MS) / 16)
        .collect();
    let t = topic(
        "/pose",
        "geometry_msgs/msg/PoseStamped",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[t], &ClocksOptions::default());
    let p = r.topic("/pose").unwrap();
    assert!(p.clock_model.is_none());
    assert_eq!(
        p.clock_model_note.as_deref(),
        Some("too few messages (n=17; the clock model needs at least 30)")
    );
    assert!(!codes_of(&r, Some("/pose")).contains(&WarningCode::ClockDrift));
}

/// A drift within its own noise is not reported, however large the slope came out.
#[test]
fn insignificant_drift_is_not_reported() {
    // 40 messages over 2 s with ±20 ms of lag noise: a fitted slope of hundreds of ppm is noise.
    let log: Vec<i64> = (0..40).map(|i| T0 + i * 50 * MS).collect();
    let noise = [13, -17, 5, 19, -11, -20, 8, 2, -6, 16];
    let stamp: Vec<i64> = log
        .iter()
        .enumerate()
        .map(|(i, &l)| l - 30 * MS + noise[i % 10] * MS + if i > 30 { 8 * MS } else { 0 })
        .collect();
    let t = topic(
        "/noisy",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[t], &ClocksOptions::default());
    let m = r.topic("/noisy").unwrap().clock_model.unwrap();
    assert!(m.drift_se_ppm > 0.0);
    if m.drift_ppm.abs() < DRIFT_SIGNIFICANCE * m.drift_se_ppm {
        assert!(!codes_of(&r, Some("/noisy")).contains(&WarningCode::ClockDrift));
    }
}

/// A recording of a replay: stamped topics sit one shift (840 days) before log time, a live
/// topic beside them does not. The finding names the replayed topics only, and their
/// clock_offset findings speak of the replay, not of PTP/NTP.
#[test]
fn replayed_recording_is_recognised() {
    let shift = -840 * DAY - 5 * S;
    let topics = [
        shifted("/imu", 300, 10 * MS, shift),
        shifted("/mag", 80, 40 * MS, shift + 3 * S),
        shifted("/pose", 60, 50 * MS, shift + 2 * S),
        shifted("/live", 100, 30 * MS, 0),
        topic(
            "/events/read_split",
            "rosbag2_interfaces/msg/ReadSplitEvent",
            StampSource::None,
            vec![T0 + S],
            vec![],
        ),
    ];
    let r = analyze(&topics, &ClocksOptions::default());
    let rep = r.replayed_recording.as_ref().expect("replay");
    assert_eq!(rep.topics, vec!["/imu", "/mag", "/pose"]);
    assert!((rep.offset_ns - shift).abs() < 5 * S, "{}", rep.offset_ns);
    assert_eq!(rep.evidence.len(), 2, "{:?}", rep.evidence);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.code == WarningCode::ReplayedRecording));
    for t in ["/imu", "/mag", "/pose"] {
        let w = r
            .warnings
            .iter()
            .find(|w| w.code == WarningCode::ClockOffset && w.topic.as_deref() == Some(t))
            .expect("clock_offset");
        assert!(w.message.contains("replay"), "{}", w.message);
        assert!(!w.message.contains("PTP"), "{}", w.message);
    }
    assert!(!codes_of(&r, Some("/live")).contains(&WarningCode::ClockOffset));
    assert!(!r.split);
    // Without the event, the shared shift alone still shows it; one topic alone does not.
    let r = analyze(&topics[..4], &ClocksOptions::default());
    assert_eq!(r.replayed_recording.unwrap().evidence.len(), 1);
    let r = analyze(&topics[..1], &ClocksOptions::default());
    assert!(r.replayed_recording.is_none());
    assert!(codes_of(&r, Some("/imu")).contains(&WarningCode::ClockOffset));
}

/// Stamps with nanosec ≥ 10⁹ are counted (the scan counts them; analysis reports them).
#[test]
fn invalid_stamps_are_reported() {
    let mut t = shifted("/img", 3, 100 * MS, 0);
    t.invalid_stamps = 2;
    let r = analyze(&[t], &ClocksOptions::default());
    assert_eq!(r.topic("/img").unwrap().invalid_stamps, 2);
    assert!(codes_of(&r, Some("/img")).contains(&WarningCode::StampInvalid));
}

/// Log times a few ns apart give no rate of millions of Hz.
#[test]
fn rates_need_a_span() {
    let log: Vec<i64> = (0..18).map(|i| T0 + i).collect();
    let t = topic(
        "/burst",
        "std_msgs/msg/String",
        StampSource::None,
        log,
        vec![],
    );
    let r = analyze(&[t], &ClocksOptions::default());
    let b = r.topic("/burst").unwrap();
    assert_eq!(b.rate_hz, None);
    assert_eq!(b.log_span_ns, 17);
}

/// Sim stamps mapped to wall time through a 10 Hz /clock whose arrivals jitter by ~0.5 ms are
/// not "early" by a couple of ms: the tolerance includes the mapping's own residual.
#[test]
fn mapped_stamps_get_the_maps_uncertainty() {
    // /clock at 10 Hz, rate 1, its values ±2.5 ms off a line (the arrival jitter of a real one).
    let jit = [0, 2300, -2000, 1000, -2500, 1700, -800, 2500, -1500, 500];
    let clog: Vec<i64> = (0..300).map(|i| T0 + i * 100 * MS).collect();
    let csim: Vec<i64> = clog
        .iter()
        .enumerate()
        .map(|(i, &l)| (l - T0) + 5 * S - jit[i % 10] * 1_000)
        .collect();
    let clock = topic(
        "/clock",
        "rosgraph_msgs/msg/Clock",
        StampSource::ClockField,
        clog,
        csim,
    );
    // An IMU at 100 Hz on sim time, received 0.2 ms after its stamp.
    let ilog: Vec<i64> = (0..3000).map(|i| T0 + 50 * MS + i * 10 * MS).collect();
    let isim: Vec<i64> = ilog.iter().map(|&l| l - T0 + 5 * S - 200_000).collect();
    let imu = topic(
        "/imu",
        "sensor_msgs/msg/Imu",
        StampSource::HeaderStamp,
        ilog,
        isim,
    );
    let r = analyze(&[clock, imu], &ClocksOptions::default());
    let i = r.topic("/imu").unwrap();
    assert_eq!(i.lag_basis, Some(LagBasis::MappedThroughClock));
    assert!(
        !codes_of(&r, Some("/imu")).contains(&WarningCode::StampsInFuture),
        "{:?}",
        r.warnings
    );
}

/// A player ran while the bag was recorded: `/events/read_split` is declared (no message on
/// it) and one topic's stamps sit three days behind log time beside live topics, two of them
/// on a device clock 5 s off. The replay names that topic alone; its clock_offset speaks of
/// the replay, the device topics keep theirs (PTP/NTP). Without the declared event the lone
/// topic stays a clock_offset: it may be a device clock.
#[test]
fn one_replayed_topic_beside_live_ones_with_a_declared_read_split() {
    let shift = -3 * DAY - 17 * S;
    let event = topic(
        "/events/read_split",
        "rosbag2_interfaces/msg/ReadSplitEvent",
        StampSource::None,
        vec![],
        vec![],
    );
    let topics = [
        shifted("/odom_replayed", 400, 20 * MS, shift),
        shifted("/imu", 800, 10 * MS, 0),
        shifted("/cam_a", 100, 80 * MS, -5 * S),
        shifted("/cam_b", 100, 80 * MS, -5 * S),
        event,
    ];
    let r = analyze(&topics, &ClocksOptions::default());
    let rep = r.replayed_recording.as_ref().expect("replay");
    assert_eq!(rep.topics, vec!["/odom_replayed"]);
    assert!((rep.offset_ns - shift).abs() < 10 * MS, "{}", rep.offset_ns);
    assert!(
        rep.evidence[0].contains("/events/read_split"),
        "{:?}",
        rep.evidence
    );
    let offset_of = |r: &ClocksReport, t: &str| {
        r.warnings
            .iter()
            .find(|w| w.code == WarningCode::ClockOffset && w.topic.as_deref() == Some(t))
            .map(|w| w.message.clone())
    };
    let m = offset_of(&r, "/odom_replayed").expect("clock_offset");
    assert!(m.contains("replay") && !m.contains("PTP"), "{m}");
    for t in ["/cam_a", "/cam_b"] {
        let m = offset_of(&r, t).expect("clock_offset");
        assert!(m.contains("PTP"), "{m}");
    }
    assert!(offset_of(&r, "/imu").is_none());
    let replay = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::ReplayedRecording)
        .expect("replayed_recording");
    assert!(
        replay.message.contains("/odom_replayed"),
        "{}",
        replay.message
    );
    assert!(!replay.message.contains("/cam_a"), "{}", replay.message);
    // Without the event: a clock offset, no replay.
    let r = analyze(&topics[..4], &ClocksOptions::default());
    assert!(r.replayed_recording.is_none());
    let m = offset_of(&r, "/odom_replayed").expect("clock_offset");
    assert!(m.contains("PTP"), "{m}");
}

/// A microcontroller's stamps: 133 of 179 with nanosec ≥ 10⁹ (read as a second ahead), the
/// rest valid: read in arrival order the values step back by ~0.9 s wherever a valid stamp
/// follows an invalid one. Those are not clock jumps: with most stamps invalid the jump, drift
/// and lag-mode analyses are skipped and `stamp_invalid` says so. With a fifth invalid the
/// analyses run (and the steps are jumps).
#[test]
fn mostly_invalid_stamps_make_no_jumps() {
    let mcu = |invalid_every: &dyn Fn(i64) -> bool| {
        let n = 179i64;
        let log: Vec<i64> = (0..n).map(|i| T0 + i * 100 * MS).collect();
        let mut invalid = 0;
        let stamp: Vec<i64> = log
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let valid = l - 3 * MS;
                if invalid_every(i as i64) {
                    invalid += 1;
                    valid + S // nanosec + 10⁹ read as sec·10⁹ + nanosec
                } else {
                    valid
                }
            })
            .collect();
        let mut t = topic(
            "/mcu/imu",
            "sensor_msgs/msg/Imu",
            StampSource::HeaderStamp,
            log,
            stamp,
        );
        t.invalid_stamps = invalid;
        t
    };
    // 133 of 179 invalid: every message but each fourth and the second.
    let most = mcu(&|i| i % 4 != 0 && i != 1);
    assert_eq!(most.invalid_stamps, 133);
    let r = analyze(&[most], &ClocksOptions::default());
    let codes = codes_of(&r, Some("/mcu/imu"));
    for c in [
        WarningCode::ClockJumpBack,
        WarningCode::ClockDrift,
        WarningCode::MultimodalLag,
    ] {
        assert!(!codes.contains(&c), "{c}: {:?}", r.warnings);
    }
    let w = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::StampInvalid)
        .expect("stamp_invalid");
    assert!(w.message.starts_with("133 of 179 stamps"), "{}", w.message);
    assert!(
        w.message
            .contains("jump, drift and lag-mode analyses are skipped"),
        "{}",
        w.message
    );
    let t = r.topic("/mcu/imu").unwrap();
    assert!(t.backward_jumps.is_empty());
    assert!(t.lag_modes_ns.is_empty());
    assert!(t.clock_model.is_none());
    assert_eq!(
        t.clock_model_note.as_deref(),
        Some("most stamps are invalid (nanosec ≥ 10⁹): no clock model")
    );
    // A fifth invalid: analysed as usual, its steps back (0.9 s, over 5 periods) are jumps.
    let some = mcu(&|i| i % 5 == 0);
    assert_eq!(some.invalid_stamps, 36);
    let r = analyze(&[some], &ClocksOptions::default());
    assert!(codes_of(&r, Some("/mcu/imu")).contains(&WarningCode::ClockJumpBack));
    let w = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::StampInvalid)
        .unwrap();
    assert!(!w.message.contains("skipped"), "{}", w.message);
}

/// A simulator stepping at 50 Hz (/clock every 20 ms of log time, real-time factor 1), a camera
/// stamped in sim time; a third of its frames go out in the step after the one they were
/// stamped in: lag modes 0.2 ms and 20.5 ms. The finding says one simulation step apart, not a
/// stamping fault. Modes 7 ms apart in the same bag, or 20 ms apart on a wall-stamped topic,
/// keep the stamping wording.
#[test]
fn lag_modes_one_sim_step_apart_are_delivery_in_the_next_step() {
    let step = 20 * MS;
    let sim0 = 100 * S;
    let clog: Vec<i64> = (0..600).map(|i| T0 + i * step + 100_000).collect();
    let csim: Vec<i64> = (0..600).map(|i| sim0 + i * step).collect();
    let clock = || {
        topic(
            "/clock",
            "rosgraph_msgs/msg/Clock",
            StampSource::ClockField,
            clog.clone(),
            csim.clone(),
        )
    };
    // Stamped at a step (sim time), received `late` after the /clock of that step arrived.
    let camera = |name: &str, second_mode: i64| {
        let jitter = [0, 40, -30, 70, -60, 20, -10, 50, -50, 30];
        let (mut log, mut stamp) = (Vec::new(), Vec::new());
        for k in 1..110i64 {
            let s = sim0 + k * 5 * step;
            let on_log = T0 + (s - sim0) + 100_000;
            let late = if k % 3 == 0 { second_mode } else { 200_000 };
            log.push(on_log + late + jitter[k as usize % 10] * 1_000);
            stamp.push(s);
        }
        topic(
            name,
            "sensor_msgs/msg/Image",
            StampSource::HeaderStamp,
            log,
            stamp,
        )
    };
    let modes_msg = |r: &ClocksReport, t: &str| {
        r.warnings
            .iter()
            .find(|w| w.code == WarningCode::MultimodalLag && w.topic.as_deref() == Some(t))
            .map(|w| w.message.clone())
            .unwrap_or_else(|| panic!("no multimodal_lag on {t}: {:?}", r.warnings))
    };
    let r = analyze(
        &[clock(), camera("/camera", 20_500_000)],
        &ClocksOptions::default(),
    );
    let c = r.topic("/camera").unwrap();
    assert_eq!(c.axis, Axis::Sim);
    assert_eq!(c.lag_modes_ns.len(), 2, "{:?}", c.lag_modes_ns);
    let m = modes_msg(&r, "/camera");
    assert!(
        m.contains(
            "modes one simulation step (/clock period 20.0 ms) apart: delivered in the next step"
        ),
        "{m}"
    );
    assert!(!m.contains("exposure"), "{m}");
    let f = r
        .warnings
        .iter()
        .find(|w| w.code == WarningCode::MultimodalLag)
        .unwrap();
    assert!(!f.data_loss);
    // 7 ms apart: not a step; the stamping wording.
    let r = analyze(
        &[clock(), camera("/camera", 7_200_000)],
        &ClocksOptions::default(),
    );
    let m = modes_msg(&r, "/camera");
    assert!(
        m.contains("exposure") && !m.contains("simulation step"),
        "{m}"
    );
    // Wall-stamped modes 20 ms apart beside a /clock: not the simulator's.
    let (log, stamp): (Vec<i64>, Vec<i64>) = (1..110i64)
        .map(|k| {
            let s = T0 + k * 100 * MS;
            (s + if k % 3 == 0 { 20_500_000 } else { 200_000 }, s)
        })
        .unzip();
    let wall = topic(
        "/wall_cam",
        "sensor_msgs/msg/Image",
        StampSource::HeaderStamp,
        log,
        stamp,
    );
    let r = analyze(&[clock(), wall], &ClocksOptions::default());
    let m = modes_msg(&r, "/wall_cam");
    assert!(!m.contains("simulation step"), "{m}");
}
