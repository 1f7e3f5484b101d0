//! The benchmark bag: JointState, Imu and TF at 1 kHz each (a robot's high-rate streams), in
//! zstd chunks, streamed to disk so any size can be written in bounded memory.
//!
//! Like a recording, not like a test pattern: sensor values carry noise (so the chunks compress
//! about as much as a real robot's do, and decompression costs what it costs there), and each
//! message has its own sampling jitter, processing delay and transport delay (so timing
//! analyses do their full work instead of meeting constant lags). Messages are written in
//! arrival (log-time) order, as a recorder writes them. Deterministic: a fixed seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use bagscope_msg::encode_typed;
use bagscope_msg::types::{
    Header, Imu, JointState, Quaternion, TFMessage, Time, Transform, TransformStamped, Vector3,
};

use crate::arm::WALL_START_NS;
use crate::writer::{BagWriter, Message, TopicSpec};
use crate::SynthError;

/// A message waiting for its turn in arrival order: (log time, sequence, topic, publish time,
/// payload), smallest first. The sequence is unique, so nothing after it is ever compared.
type Pending = Reverse<(i64, u64, usize, i64, Vec<u8>)>;

fn take(p: Pending) -> Message {
    let Reverse((log_time_ns, _, topic, publish_time_ns, data)) = p;
    Message {
        topic,
        log_time_ns,
        publish_time_ns,
        data,
    }
}

fn yaw(theta: f64) -> Quaternion {
    Quaternion {
        x: 0.0,
        y: 0.0,
        z: (theta / 2.0).sin(),
        w: (theta / 2.0).cos(),
    }
}

/// Writes `messages` messages (rounded down to a multiple of 3) into `dir/perf/perf.mcap`.
pub fn generate(dir: &Path, messages: u64) -> Result<PathBuf, SynthError> {
    let topics = [
        ("/joint_states", "sensor_msgs/msg/JointState"),
        ("/imu", "sensor_msgs/msg/Imu"),
        ("/tf", "tf2_msgs/msg/TFMessage"),
    ]
    .map(|(n, t)| TopicSpec {
        name: n.into(),
        type_name: t.into(),
    });
    let mut w = BagWriter::create(&dir.join("perf"), "perf", &topics, true, 4 << 20)?;
    let names: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let unit = Normal::new(0.0, 1.0).expect("a valid normal distribution");
    let noise = |rng: &mut ChaCha8Rng, sd: f64| sd * unit.sample(rng);
    let period_ns = 1_000_000i64;
    let mut pending: BinaryHeap<Pending> = BinaryHeap::new();
    let mut seq = 0u64;
    // Per topic, the last arrival: one connection delivers in order, so a delayed message
    // holds back the ones behind it (head-of-line blocking).
    let mut last_log = [i64::MIN; 3];
    for k in 0..(messages / 3) as i64 {
        let nominal = WALL_START_NS + k * period_ns;
        let x = k as f64 * 1e-3;
        // Sampling jitter (±20 µs) keeps each topic's stamps in order at 1 kHz.
        let stamp = |rng: &mut ChaCha8Rng| nominal + rng.random_range(-20_000..20_000i64);
        let stamps = [stamp(&mut rng), stamp(&mut rng), stamp(&mut rng)];
        let header = |s: i64, frame: &str| Header {
            stamp: Time::from_ns(s),
            frame_id: frame.into(),
        };
        let joints = JointState {
            header: header(stamps[0], "base_link"),
            name: names.clone(),
            position: (0..6)
                .map(|j| (x + j as f64).sin() + noise(&mut rng, 1e-4))
                .collect(),
            velocity: (0..6)
                .map(|j| (x + j as f64).cos() + noise(&mut rng, 1e-3))
                .collect(),
            effort: (0..6).map(|_| 5.0 + noise(&mut rng, 0.5)).collect(),
        };
        let mut cov = [0.0; 9];
        cov[0] = 1e-4;
        cov[4] = 1e-4;
        cov[8] = 1e-4;
        let q = yaw(0.1 * x);
        let imu = Imu {
            header: header(stamps[1], "imu_link"),
            orientation: Quaternion {
                x: q.x + noise(&mut rng, 1e-4),
                y: q.y + noise(&mut rng, 1e-4),
                z: q.z + noise(&mut rng, 1e-4),
                w: q.w + noise(&mut rng, 1e-4),
            },
            orientation_covariance: cov,
            angular_velocity: Vector3 {
                x: noise(&mut rng, 0.01),
                y: noise(&mut rng, 0.01),
                z: 0.1 + noise(&mut rng, 0.01),
            },
            angular_velocity_covariance: cov,
            linear_acceleration: Vector3 {
                x: noise(&mut rng, 0.05),
                y: noise(&mut rng, 0.05),
                z: 9.81 + noise(&mut rng, 0.05),
            },
            linear_acceleration_covariance: cov,
        };
        let tf = TFMessage {
            transforms: vec![TransformStamped {
                header: header(stamps[2], "odom"),
                child_frame_id: "base_link".into(),
                transform: Transform {
                    translation: Vector3 {
                        x: 0.5 * x + noise(&mut rng, 1e-4),
                        y: 0.2 * (0.1 * x).sin() + noise(&mut rng, 1e-4),
                        z: 0.0,
                    },
                    rotation: yaw(0.1 * x + noise(&mut rng, 1e-4)),
                },
            }],
        };
        let payloads = [
            encode_typed(&joints)?,
            encode_typed(&imu)?,
            encode_typed(&tf)?,
        ];
        for (i, data) in payloads.into_iter().enumerate() {
            // Processing before publishing, then transport to the recorder, with a rare
            // long tail (a scheduling hiccup).
            let publish = stamps[i] + rng.random_range(100_000..400_000i64);
            let mut transport = rng.random_range(50_000..250_000i64);
            if rng.random_range(0..200u32) == 0 {
                transport += rng.random_range(1_000_000..3_000_000i64);
            }
            let log = (publish + transport).max(last_log[i]);
            last_log[i] = log;
            pending.push(Reverse((log, seq, i, publish, data)));
            seq += 1;
        }
        // Everything received before this sample could have been stamped is final.
        while pending.peek().is_some_and(|p| p.0 .0 < nominal - 20_000) {
            w.write(&take(pending.pop().expect("peeked")))?;
        }
    }
    while let Some(p) = pending.pop() {
        w.write(&take(p))?;
    }
    w.finish()
}
