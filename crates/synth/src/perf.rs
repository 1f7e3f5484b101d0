//! The benchmark bag: a robot's high-rate streams in the mix of a recording the timing
//! questions are asked of (half JointState at 1 kHz, 40 % Imu at 800 Hz, 10 % TF at 200 Hz
//! with 8 transforms a message), in zstd chunks of 768 KiB (the Python `mcap` writer's
//! default), streamed to disk so any size can be written in bounded memory.
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
    Header, Image, Imu, JointState, Quaternion, TFMessage, Time, Transform, TransformStamped,
    Vector3,
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

/// The TF tree of the benchmark bag's `/tf` messages: a mobile base and an arm on it, the 8
/// edges every message carries (parent, child), in the order they are written.
pub const PERF_TF_EDGES: [(&str, &str); 8] = [
    ("odom", "base_link"),
    ("base_link", "shoulder_link"),
    ("shoulder_link", "upper_arm_link"),
    ("upper_arm_link", "forearm_link"),
    ("forearm_link", "wrist_1_link"),
    ("wrist_1_link", "wrist_2_link"),
    ("wrist_2_link", "wrist_3_link"),
    ("wrist_3_link", "tool0"),
];

/// One 5 ms cycle of the benchmark bag: (offset from the cycle's start in ns, topic), in
/// stamp order: 5 JointState (1 kHz), 4 Imu (800 Hz), 1 TF (200 Hz).
const PERF_CYCLE: [(i64, usize); 10] = [
    (0, 0),
    (0, 1),
    (0, 2),
    (1_000_000, 0),
    (1_250_000, 1),
    (2_000_000, 0),
    (2_500_000, 1),
    (3_000_000, 0),
    (3_750_000, 1),
    (4_000_000, 0),
];
/// Length of one [`PERF_CYCLE`].
const PERF_CYCLE_NS: i64 = 5_000_000;

/// Writes `messages` messages (rounded down to a multiple of 10) into `dir/perf/perf.mcap`:
/// per 10, 5 JointState on `/joint_states`, 4 Imu on `/imu` and 1 TFMessage of
/// [`PERF_TF_EDGES`] on `/tf`.
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
    let mut w = BagWriter::create(&dir.join("perf"), "perf", &topics, true, 768 << 10)?;
    let names: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let unit = Normal::new(0.0, 1.0).expect("a valid normal distribution");
    let noise = |rng: &mut ChaCha8Rng, sd: f64| sd * unit.sample(rng);
    let mut pending: BinaryHeap<Pending> = BinaryHeap::new();
    let mut seq = 0u64;
    // Per topic, the last arrival: one connection delivers in order, so a delayed message
    // holds back the ones behind it (head-of-line blocking).
    let mut last_log = [i64::MIN; 3];
    let header = |s: i64, frame: &str| Header {
        stamp: Time::from_ns(s),
        frame_id: frame.into(),
    };
    let mut cov = [0.0; 9];
    cov[0] = 1e-4;
    cov[4] = 1e-4;
    cov[8] = 1e-4;
    for cycle in 0..(messages / PERF_CYCLE.len() as u64) as i64 {
        for &(offset, topic) in &PERF_CYCLE {
            let nominal = WALL_START_NS + cycle * PERF_CYCLE_NS + offset;
            let x = (nominal - WALL_START_NS) as f64 * 1e-9;
            // Sampling jitter (±20 µs) keeps each topic's stamps in order.
            let stamp = nominal + rng.random_range(-20_000..20_000i64);
            let data = match topic {
                0 => encode_typed(&JointState {
                    header: header(stamp, "base_link"),
                    name: names.clone(),
                    position: (0..6)
                        .map(|j| (x + j as f64).sin() + noise(&mut rng, 1e-4))
                        .collect(),
                    velocity: (0..6)
                        .map(|j| (x + j as f64).cos() + noise(&mut rng, 1e-3))
                        .collect(),
                    effort: (0..6).map(|_| 5.0 + noise(&mut rng, 0.5)).collect(),
                })?,
                1 => {
                    let q = yaw(0.1 * x);
                    encode_typed(&Imu {
                        header: header(stamp, "imu_link"),
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
                    })?
                }
                _ => {
                    // The base moves in the plane; each arm link turns about its joint (the
                    // joint states' positions), one stamp for the whole tree as
                    // robot_state_publisher sends it.
                    let transforms = PERF_TF_EDGES
                        .iter()
                        .enumerate()
                        .map(|(j, (parent, child))| {
                            let (translation, rotation) = if j == 0 {
                                (
                                    Vector3 {
                                        x: 0.5 * x + noise(&mut rng, 1e-4),
                                        y: 0.2 * (0.1 * x).sin() + noise(&mut rng, 1e-4),
                                        z: 0.0,
                                    },
                                    yaw(0.1 * x + noise(&mut rng, 1e-4)),
                                )
                            } else {
                                (
                                    Vector3 {
                                        x: 0.0,
                                        y: 0.0,
                                        z: 0.1 + 0.05 * j as f64,
                                    },
                                    yaw((x + j as f64).sin() + noise(&mut rng, 1e-4)),
                                )
                            };
                            TransformStamped {
                                header: header(stamp, parent),
                                child_frame_id: (*child).into(),
                                transform: Transform {
                                    translation,
                                    rotation,
                                },
                            }
                        })
                        .collect();
                    encode_typed(&TFMessage { transforms })?
                }
            };
            // Processing before publishing, then transport to the recorder, with a rare
            // long tail (a scheduling hiccup).
            let publish = stamp + rng.random_range(100_000..400_000i64);
            let mut transport = rng.random_range(50_000..250_000i64);
            if rng.random_range(0..200u32) == 0 {
                transport += rng.random_range(1_000_000..3_000_000i64);
            }
            let log = (publish + transport).max(last_log[topic]);
            last_log[topic] = log;
            pending.push(Reverse((log, seq, topic, publish, data)));
            seq += 1;
            // Everything received before this sample could have been stamped is final.
            while pending.peek().is_some_and(|p| p.0 .0 < nominal - 20_000) {
                w.write(&take(pending.pop().expect("peeked")))?;
            }
        }
    }
    while let Some(p) = pending.pop() {
        w.write(&take(p))?;
    }
    w.finish()
}

/// Topics of the observation benchmark bag: the anchor, three camera members, the state,
/// then the traffic the contract does not name.
pub const OBSERVE_TOPICS: [(&str, &str); 7] = [
    ("/camera/head/image_raw", "sensor_msgs/msg/Image"),
    ("/camera/left/image_raw", "sensor_msgs/msg/Image"),
    ("/camera/right/image_raw", "sensor_msgs/msg/Image"),
    ("/camera/wrist/image_raw", "sensor_msgs/msg/Image"),
    ("/joint_states", "sensor_msgs/msg/JointState"),
    ("/imu", "sensor_msgs/msg/Imu"),
    ("/tf", "tf2_msgs/msg/TFMessage"),
];

/// Writes `messages` messages into `dir/perf_observe/perf_observe.mcap`: the benchmark of
/// `observe` (a 30 Hz head camera as the anchor, three cameras stamped −3 to +2 ms from it
/// as members, 500 Hz joint states, and IMU and TF at 1 kHz each as the rest of the traffic;
/// 8×8 mono8 images), in zstd chunks, streamed in bounded memory, in log-time order.
pub fn generate_observe(dir: &Path, messages: u64) -> Result<PathBuf, SynthError> {
    let topics = OBSERVE_TOPICS.map(|(n, t)| TopicSpec {
        name: n.into(),
        type_name: t.into(),
    });
    let mut w = BagWriter::create(
        &dir.join("perf_observe"),
        "perf_observe",
        &topics,
        true,
        4 << 20,
    )?;
    let names: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let unit = Normal::new(0.0, 1.0).expect("a valid normal distribution");
    let mut noise = |sd: f64| sd * unit.sample(&mut rng);
    // (camera, stamp offset from the head's, receive delay), ns.
    const CAMERAS: [(&str, i64, i64); 4] = [
        ("head_camera", 0, 10_000_000),
        ("left_camera", 2_000_000, 8_500_000),
        ("right_camera", -3_000_000, 9_000_000),
        ("wrist_camera", 1_000_000, 9_500_000),
    ];
    let mut pending: BinaryHeap<Pending> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut pushed = 0u64;
    let mut frame = 0i64;
    let mut tick = 0i64;
    while pushed < messages {
        let nominal = WALL_START_NS + tick * 1_000_000;
        let x = tick as f64 * 1e-3;
        let header = |s: i64, frame: &str| Header {
            stamp: Time::from_ns(s),
            frame_id: frame.into(),
        };
        let mut out: Vec<(usize, i64, Vec<u8>)> = Vec::new(); // (topic, log, payload)
        let head = WALL_START_NS + frame * 100_000_000 / 3;
        if head <= nominal {
            for (c, (name, offset, delay)) in CAMERAS.iter().enumerate() {
                let s = head + offset;
                let img = Image {
                    header: header(s, name),
                    height: 8,
                    width: 8,
                    encoding: "mono8".into(),
                    is_bigendian: 0,
                    step: 8,
                    data: (0..64)
                        .map(|i| (frame as u8).wrapping_add(i as u8 * 3 + c as u8))
                        .collect(),
                };
                out.push((c, s + delay, encode_typed(&img)?));
            }
            frame += 1;
        }
        if tick % 2 == 0 {
            let js = JointState {
                header: header(nominal, "base_link"),
                name: names.clone(),
                position: (0..6).map(|j| (x + j as f64).sin() + noise(1e-4)).collect(),
                velocity: (0..6).map(|j| (x + j as f64).cos()).collect(),
                effort: (0..6).map(|_| 5.0 + noise(0.5)).collect(),
            };
            out.push((4, nominal + 300_000, encode_typed(&js)?));
        }
        let q = yaw(0.1 * x);
        let imu = Imu {
            header: header(nominal, "imu_link"),
            orientation: q,
            orientation_covariance: [0.0; 9],
            angular_velocity: Vector3 {
                x: noise(0.01),
                y: noise(0.01),
                z: 0.1 + noise(0.01),
            },
            angular_velocity_covariance: [0.0; 9],
            linear_acceleration: Vector3 {
                x: noise(0.05),
                y: noise(0.05),
                z: 9.81 + noise(0.05),
            },
            linear_acceleration_covariance: [0.0; 9],
        };
        out.push((5, nominal + 200_000, encode_typed(&imu)?));
        let tf = TFMessage {
            transforms: vec![TransformStamped {
                header: header(nominal, "odom"),
                child_frame_id: "base_link".into(),
                transform: Transform {
                    translation: Vector3 {
                        x: 0.5 * x,
                        y: 0.2 * (0.1 * x).sin(),
                        z: 0.0,
                    },
                    rotation: yaw(0.1 * x),
                },
            }],
        };
        out.push((6, nominal + 250_000, encode_typed(&tf)?));
        for (topic, log, data) in out {
            if pushed == messages {
                break;
            }
            pending.push(Reverse((log, seq, topic, log, data)));
            seq += 1;
            pushed += 1;
        }
        // Every later message is received after this tick's nominal time.
        while pending.peek().is_some_and(|p| p.0 .0 < nominal) {
            w.write(&take(pending.pop().expect("peeked")))?;
        }
        tick += 1;
    }
    while let Some(p) = pending.pop() {
        w.write(&take(p))?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmark bag's mix: per 10 messages 5 JointState, 4 Imu and 1 TF message of the 8
    /// transforms of `PERF_TF_EDGES` (each stamped by the message's own stamp), in log-time
    /// order, in zstd chunks of at most 768 KiB of records.
    #[test]
    fn perf_bag_mix_and_chunks() {
        let dir = std::env::temp_dir().join(format!("bagscope-perf-mix-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = generate(&dir, 20_007).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        let mut last_log = 0u64;
        for m in mcap::MessageStream::new(&bytes).unwrap() {
            let m = m.unwrap();
            assert!(m.log_time >= last_log, "log-time order");
            last_log = m.log_time;
            *counts.entry(m.channel.topic.clone()).or_default() += 1;
            if m.channel.topic == "/tf" {
                let tf: TFMessage = bagscope_msg::decode_typed(&m.data).unwrap();
                let edges: Vec<(&str, &str)> = tf
                    .transforms
                    .iter()
                    .map(|t| (t.header.frame_id.as_str(), t.child_frame_id.as_str()))
                    .collect();
                assert_eq!(edges, PERF_TF_EDGES);
                assert!(tf
                    .transforms
                    .iter()
                    .all(|t| t.header.stamp == tf.transforms[0].header.stamp));
            }
        }
        let want: std::collections::BTreeMap<String, usize> = [
            ("/imu".to_string(), 8_000),
            ("/joint_states".to_string(), 10_000),
            ("/tf".to_string(), 2_000),
        ]
        .into_iter()
        .collect();
        assert_eq!(counts, want);
        let summary = mcap::Summary::read(&bytes).unwrap().unwrap();
        assert!(summary.chunk_indexes.len() > 5);
        for c in &summary.chunk_indexes {
            assert_eq!(c.compression, "zstd");
            // A chunk is closed by the message that takes it past 768 KiB.
            assert!(
                c.uncompressed_size < (768 << 10) + 2048,
                "{}",
                c.uncompressed_size
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
