//! The benchmark bag: JointState, Imu and TF at 1 kHz each (a robot's high-rate streams), in
//! zstd chunks, streamed to disk so any size can be written in bounded memory.

use std::path::{Path, PathBuf};

use bagscope_msg::encode_typed;
use bagscope_msg::types::{Header, Imu, JointState, TFMessage, Time, Transform, TransformStamped};

use crate::arm::WALL_START_NS;
use crate::writer::{BagWriter, Message, TopicSpec};
use crate::SynthError;

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
    for k in 0..(messages / 3) as i64 {
        let stamp = WALL_START_NS + k * 1_000_000;
        let header = Header {
            stamp: Time::from_ns(stamp),
            frame_id: "base_link".into(),
        };
        let x = k as f64 * 1e-3;
        let payloads = [
            encode_typed(&JointState {
                header: header.clone(),
                name: names.clone(),
                position: (0..6).map(|j| (x + j as f64).sin()).collect(),
                velocity: (0..6).map(|j| (x + j as f64).cos()).collect(),
                effort: vec![0.0; 6],
            })?,
            encode_typed(&Imu {
                header: header.clone(),
                ..Default::default()
            })?,
            encode_typed(&TFMessage {
                transforms: vec![TransformStamped {
                    header: Header {
                        stamp: header.stamp,
                        frame_id: "odom".into(),
                    },
                    child_frame_id: "base_link".into(),
                    transform: Transform::default(),
                }],
            })?,
        ];
        for (i, data) in payloads.into_iter().enumerate() {
            let log = stamp + 300_000 + 100_000 * i as i64;
            w.write(&Message {
                topic: i,
                log_time_ns: log,
                publish_time_ns: log,
                data,
            })?;
        }
    }
    w.finish()
}
