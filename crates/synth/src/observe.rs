//! The observation scenario (`observe`): a 30 Hz head camera (the anchor), two wrist cameras
//! and joint states from an analytic function, optionally with a dropped wrist frame, a clock
//! jump back (a simulator reset on a `/clock`), a TF gap and an angle crossing ±π, so that
//! `bagscope observe` can be checked against known truth.
//!
//! Stamps: head `s_k = origin + k / 30 s`, left `s_k + 2 ms`, right `s_k − 3 ms`; received
//! 10, 8.5 and 9 ms after their stamps (so a set completes with the left frame, at
//! `s_k + 10.5 ms`). Joint states at `state_hz` from `origin + 1.7 ms`, received 2 ms after
//! their stamps; positions are linear in the stamp (`p0 + v · t`, `t` = (stamp − origin) s)
//! and `wrist_roll` is that line wrapped to (−π, π], crossing +π at `t` = 0.7967 s, so linear
//! interpolation with the short way round is exact. TF: base_link→head_camera at 200 Hz on
//! `/tf` (received 1 ms after each tick), base_link→{left,right}_camera on `/tf_static`.
//! `/joint_commands` (JointState, one per frame, stamped 1 ms before it): the position 100 ms
//! ahead, an `action` for the LeRobot layout.

use std::path::Path;

use bagscope_msg::encode_typed;
use bagscope_msg::types::{Clock, Header, Image, JointState, Time};
use serde::Serialize;

use crate::writer::{write_rosbag2, Message, TopicSpec};
use crate::SynthError;

/// Wall time of the bag's start (2023-11-14), ns.
const WALL_START_NS: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;

/// Parameters of the observation scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveSynth {
    /// Head camera frames (30 Hz).
    pub frames: u32,
    /// Joint state rate, Hz of the stamps' clock.
    pub state_hz: f64,
    /// The left wrist camera's frame with this index is missing.
    pub drop_left_frame: Option<u32>,
    /// Stamps on a simulator clock (starting at 1 s, `/clock` at 100 Hz on wall log time)
    /// instead of wall time.
    pub sim: bool,
    /// With `sim`: the simulator resets (sim time back to 0.2 s) at this head frame.
    pub reset_at_frame: Option<u32>,
    /// No dynamic TF ticks stamped in [start, end) seconds after the origin.
    pub tf_gap_s: Option<(f64, f64)>,
}

impl Default for ObserveSynth {
    fn default() -> Self {
        ObserveSynth {
            frames: 60,
            state_hz: 100.0,
            drop_left_frame: None,
            sim: false,
            reset_at_frame: None,
            tf_gap_s: None,
        }
    }
}

/// The analytic joint state: names, `p0`, `v` (rad, rad/s), and `wrist_roll` wrapped.
#[derive(Debug, Clone, Serialize)]
pub struct JointTruth {
    /// Joint names, in message order.
    pub names: Vec<String>,
    /// Position at the origin, rad.
    pub p0: Vec<f64>,
    /// Velocity, rad/s (also the message's `velocity`).
    pub v: Vec<f64>,
    /// Joints whose position is wrapped to (−π, π].
    pub continuous: Vec<String>,
}

impl JointTruth {
    /// Positions at `t` seconds after the stamps' origin.
    pub fn position(&self, t: f64) -> Vec<f64> {
        self.p0
            .iter()
            .zip(&self.v)
            .zip(&self.names)
            .map(|((p, v), n)| {
                let x = p + v * t;
                if self.continuous.contains(n) {
                    wrap(x)
                } else {
                    x
                }
            })
            .collect()
    }
}

fn wrap(x: f64) -> f64 {
    use std::f64::consts::{PI, TAU};
    let r = x.rem_euclid(TAU);
    if r > PI {
        r - TAU
    } else {
        r
    }
}

/// Ground truth of the observation scenario.
#[derive(Debug, Clone, Serialize)]
pub struct ObserveTruth {
    /// The parameters.
    pub params: ObserveSynth,
    /// Stamp of head frame 0 (wall ns, or sim ns), and of the state function's `t = 0`; after
    /// a reset, stamps are `reset_origin_ns` + the time since the reset.
    pub origin_ns: i64,
    /// Each head frame's stamp, ns.
    pub head_stamps_ns: Vec<i64>,
    /// Each head frame's log time, ns.
    pub head_log_ns: Vec<i64>,
    /// Each joint state's stamp, ns.
    pub state_stamps_ns: Vec<i64>,
    /// The joint function.
    pub joints: JointTruth,
    /// Head frames whose head_camera transform is not available at their stamp with the TF
    /// received by the time their set completes (stamp + 10.5 ms).
    pub frame_unavailable_frames: Vec<u32>,
}

fn image(stamp: i64, frame: &str) -> Result<Vec<u8>, SynthError> {
    Ok(encode_typed(&Image {
        header: Header {
            stamp: Time::from_ns(stamp),
            frame_id: frame.into(),
        },
        height: 1,
        width: 2,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: 2,
        data: vec![1, 2],
    })?)
}

/// Writes the bag `dir/NAME` (folder with one MCAP file and `metadata.yaml`) and returns its
/// truth (also written as `dir/NAME.truth.json`).
pub fn write_observe(dir: &Path, name: &str, o: &ObserveSynth) -> Result<ObserveTruth, SynthError> {
    if !(o.state_hz.is_finite() && o.state_hz > 0.0 && o.state_hz <= 10_000.0) {
        return Err(SynthError::Param(format!("state rate {} Hz", o.state_hz)));
    }
    if o.reset_at_frame.is_some() && !o.sim {
        return Err(SynthError::Param("reset_at_frame needs sim".into()));
    }
    let frame_ns = 33_333_333i64;
    let dur = o.frames as i64 * frame_ns;
    // Stamp clock as a function of wall time.
    let reset_wall = o
        .reset_at_frame
        .map(|k| WALL_START_NS + k as i64 * frame_ns - 5 * MS);
    let origin = if o.sim { 1_000 * MS } else { WALL_START_NS };
    let stamp_of = |wall: i64| -> i64 {
        if !o.sim {
            return wall;
        }
        match reset_wall {
            Some(r) if wall >= r => 200 * MS + (wall - r),
            _ => origin + (wall - WALL_START_NS),
        }
    };
    // Clock epoch of a wall time (1 after the reset) and the state function's time there:
    // after a reset it starts again on the new clock's origin.
    let epoch_of = |wall: i64| u8::from(reset_wall.is_some_and(|r| wall >= r));
    let t_of = |wall: i64| -> f64 {
        match reset_wall {
            Some(r) if wall >= r => (stamp_of(wall) - 200 * MS) as f64 / 1e9,
            _ => (stamp_of(wall) - origin) as f64 / 1e9,
        }
    };
    let joints = JointTruth {
        names: vec!["shoulder".into(), "elbow".into(), "wrist_roll".into()],
        p0: vec![0.1, -0.2, std::f64::consts::PI - 0.8 * 0.7967],
        v: vec![0.5, 0.25, 0.8],
        continuous: vec!["wrist_roll".into()],
    };
    let mut topics = vec![
        ("/camera/head/image_raw", "sensor_msgs/msg/Image"),
        ("/camera/left/image_raw", "sensor_msgs/msg/Image"),
        ("/camera/right/image_raw", "sensor_msgs/msg/Image"),
        ("/joint_states", "sensor_msgs/msg/JointState"),
        ("/tf", "tf2_msgs/msg/TFMessage"),
        ("/tf_static", "tf2_msgs/msg/TFMessage"),
        ("/joint_commands", "sensor_msgs/msg/JointState"),
    ];
    if o.sim {
        topics.push(("/clock", "rosgraph_msgs/msg/Clock"));
    }
    let specs: Vec<TopicSpec> = topics
        .iter()
        .map(|(n, t)| TopicSpec {
            name: (*n).into(),
            type_name: (*t).into(),
        })
        .collect();
    let mut msgs = Vec::new();
    let mut push = |topic: usize, log: i64, data: Vec<u8>| {
        msgs.push(Message {
            topic,
            log_time_ns: log,
            publish_time_ns: log,
            data,
        })
    };
    let (mut head_stamps, mut head_logs) = (Vec::new(), Vec::new());
    for k in 0..o.frames as i64 {
        let wall = WALL_START_NS + k * frame_ns;
        let s = stamp_of(wall);
        head_stamps.push(s);
        head_logs.push(wall + 10 * MS);
        push(0, wall + 10 * MS, image(s, "head_camera")?);
        if o.drop_left_frame != Some(k as u32) {
            push(
                1,
                wall + 2 * MS + 8_500_000,
                image(s + 2 * MS, "left_camera")?,
            );
        }
        push(
            2,
            wall - 3 * MS + 9 * MS,
            image(s - 3 * MS, "right_camera")?,
        );
        // The command for 100 ms ahead, sent 1 ms before the frame's stamp.
        let cmd = JointState {
            header: Header {
                stamp: Time::from_ns(s - MS),
                frame_id: String::new(),
            },
            name: joints.names.clone(),
            position: joints.position(t_of(wall) + 0.1),
            velocity: Vec::new(),
            effort: Vec::new(),
        };
        push(6, wall, encode_typed(&cmd)?);
    }
    let period = (1e9 / o.state_hz) as i64;
    let mut state_stamps = Vec::new();
    let mut wall = WALL_START_NS + 1_700_000 - 5 * period;
    while wall <= WALL_START_NS + dur + 5 * period {
        let s = stamp_of(wall);
        let t = t_of(wall);
        state_stamps.push(s);
        let m = JointState {
            header: Header {
                stamp: Time::from_ns(s),
                frame_id: String::new(),
            },
            name: joints.names.clone(),
            position: joints.position(t),
            velocity: joints.v.clone(),
            effort: Vec::new(),
        };
        push(3, wall + 2 * MS, encode_typed(&m)?);
        wall += period;
    }
    // TF: statics at the start, the head camera's edge at 200 Hz from 50 ms before frame 0.
    push(
        5,
        WALL_START_NS - 100 * MS,
        crate::tf::tf_msg(
            &[("base_link", "left_camera"), ("base_link", "right_camera")],
            stamp_of(WALL_START_NS),
        )?,
    );
    let gap = o
        .tf_gap_s
        .map(|(a, b)| ((a * 1e9) as i64, (b * 1e9) as i64));
    let mut ticks: Vec<(i64, i64, u8)> = Vec::new(); // (stamp, log, epoch)
    let mut wall = WALL_START_NS - 50 * MS;
    while wall <= WALL_START_NS + dur + 50 * MS {
        let s = stamp_of(wall);
        let rel = wall - WALL_START_NS;
        if !gap.is_some_and(|(a, b)| rel >= a && rel < b) {
            push(
                4,
                wall + MS,
                crate::tf::tf_msg(&[("base_link", "head_camera")], s)?,
            );
            ticks.push((s, wall + MS, epoch_of(wall)));
        }
        wall += 5 * MS;
    }
    if o.sim {
        let mut wall = WALL_START_NS - 100 * MS;
        while wall <= WALL_START_NS + dur + 100 * MS {
            push(
                7,
                wall,
                encode_typed(&Clock {
                    clock: Time::from_ns(stamp_of(wall)),
                })?,
            );
            wall += 10 * MS;
        }
    }
    // TF availability as tf2 answers it at each head frame's emit time (stamp + 10.5 ms on
    // wall): a tick at or after the stamp received by then, and one at or before it, on the
    // same clock epoch.
    let mut unavailable = Vec::new();
    for (k, &s) in head_stamps.iter().enumerate() {
        let emit = head_logs[k] + 500_000;
        let e = epoch_of(head_logs[k] - 10 * MS);
        let after = ticks
            .iter()
            .any(|&(ts, tl, te)| te == e && ts >= s && tl <= emit);
        let before = ticks
            .iter()
            .any(|&(ts, tl, te)| te == e && ts <= s && tl <= emit);
        if !(after && before) {
            unavailable.push(k as u32);
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| SynthError::Io(dir.to_path_buf(), e))?;
    write_rosbag2(&dir.join(name), name, &specs, msgs, true)?;
    let truth = ObserveTruth {
        params: o.clone(),
        origin_ns: origin,
        head_stamps_ns: head_stamps,
        head_log_ns: head_logs,
        state_stamps_ns: state_stamps,
        joints,
        frame_unavailable_frames: unavailable,
    };
    let p = dir.join(format!("{name}.truth.json"));
    let text =
        serde_json::to_string_pretty(&truth).map_err(|e| SynthError::Param(e.to_string()))?;
    std::fs::write(&p, text).map_err(|e| SynthError::Io(p.clone(), e))?;
    Ok(truth)
}
