//! `check` reads joint messages in place and `report` takes `clocks` and `check` from one scan:
//! the findings are those of the full decode (duplicate names, length mismatches, non-finite
//! values, limits, undecodable payloads, names that are UTF-8 but not ASCII), and the one-scan
//! reports are the same as the commands' own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bagscope::check::{check_of, clocks_and_check_of, CheckOptions};
use bagscope::clock_analysis::ClocksOptions;
use bagscope::clocks::clocks_data_of;
use bagscope::io::{Bag, Rosbag2Writer, WriteChannel};
use bagscope_msg::encode_typed;
use bagscope_msg::schema::builtin::schema_text;
use bagscope_msg::types::{Header, Imu, JointState, Time};

const T0_NS: i64 = 1_700_000_000_000_000_000;

fn header(t_ns: i64) -> Header {
    Header {
        stamp: Time {
            sec: (t_ns / 1_000_000_000) as i32,
            nanosec: (t_ns % 1_000_000_000) as u32,
        },
        frame_id: "base".into(),
    }
}

fn joints(t_ns: i64, names: &[&str], position: Vec<f64>, velocity: Vec<f64>) -> Vec<u8> {
    encode_typed(&JointState {
        header: header(t_ns),
        name: names.iter().map(|s| s.to_string()).collect(),
        position,
        velocity,
        effort: Vec::new(),
    })
    .unwrap()
}

/// Ten joint messages, each index with one kind of fault or none, and five IMU messages.
fn write_bag(dir: &Path) -> PathBuf {
    let path = dir.join("joints.mcap");
    let mut w = Rosbag2Writer::create(&path, "test", &[]).unwrap();
    let channel = |topic: &'static str, type_name: &'static str| WriteChannel {
        topic,
        type_name,
        schema_encoding: "ros2msg",
        schema_data: Box::leak(
            schema_text(type_name)
                .unwrap()
                .into_bytes()
                .into_boxed_slice(),
        ),
        message_encoding: "cdr",
        offered_qos_profiles: "",
        type_description_hash: None,
    };
    let js = w
        .add_channel(&channel("/joint_states", "sensor_msgs/msg/JointState"))
        .unwrap();
    let imu = w
        .add_channel(&channel("/imu", "sensor_msgs/msg/Imu"))
        .unwrap();
    let abc = ["a", "b", "c"];
    for i in 0..10i64 {
        let log = T0_NS + i * 10_000_000;
        let stamp = log - 1_000_000;
        let ok = vec![0.1, 0.2, 0.3];
        let payload = match i {
            3 => joints(stamp, &["a", "a", "c"], ok.clone(), vec![]),
            4 => joints(stamp, &abc, vec![0.1, f64::NAN, 0.3], vec![]),
            5 => joints(stamp, &abc, ok.clone(), vec![1.0, 2.0]),
            6 => joints(stamp, &abc, ok.clone(), vec![])[..20].to_vec(),
            7 => joints(stamp, &["a", "épaule", "c"], ok.clone(), vec![]),
            8 => joints(stamp, &abc, vec![1.5, 0.2, 0.3], vec![0.0; 3]),
            9 => joints(stamp, &abc, ok.clone(), vec![0.0, f64::INFINITY, 0.0]),
            _ => joints(stamp, &abc, ok.clone(), vec![]),
        };
        w.write(js, None, log, log, &payload).unwrap();
        if i % 2 == 0 {
            let m = Imu {
                header: header(stamp),
                ..Default::default()
            };
            w.write(imu, None, log + 1, log + 1, &encode_typed(&m).unwrap())
                .unwrap();
        }
    }
    w.finish().unwrap()
}

/// Every message decodes and carries a stamp (check's clock analysis then takes exactly what
/// `clocks`' takes): joints stamped on the wall clock, one with a non-finite value; IMU stamped
/// on a clock that starts at 0 (a split bag).
fn write_stamped_bag(dir: &Path) -> PathBuf {
    let path = dir.join("stamped.mcap");
    let mut w = Rosbag2Writer::create(&path, "test", &[]).unwrap();
    let channel = |topic: &'static str, type_name: &'static str| WriteChannel {
        topic,
        type_name,
        schema_encoding: "ros2msg",
        schema_data: Box::leak(
            schema_text(type_name)
                .unwrap()
                .into_bytes()
                .into_boxed_slice(),
        ),
        message_encoding: "cdr",
        offered_qos_profiles: "",
        type_description_hash: None,
    };
    let js = w
        .add_channel(&channel("/joint_states", "sensor_msgs/msg/JointState"))
        .unwrap();
    let imu = w
        .add_channel(&channel("/imu", "sensor_msgs/msg/Imu"))
        .unwrap();
    for i in 0..40i64 {
        let log = T0_NS + i * 10_000_000;
        let position = if i == 4 { vec![f64::NAN] } else { vec![0.1] };
        let payload = joints(log - 1_000_000, &["a"], position, vec![]);
        w.write(js, None, log, log, &payload).unwrap();
        let m = Imu {
            header: header(i * 10_000_000),
            ..Default::default()
        };
        w.write(imu, None, log + 1, log + 1, &encode_typed(&m).unwrap())
            .unwrap();
    }
    w.finish().unwrap()
}

fn joint_findings(o: &CheckOptions, bag: &Bag) -> BTreeSet<(String, usize)> {
    check_of(bag, o)
        .unwrap()
        .findings
        .into_iter()
        .filter(|f| f.topic == "/joint_states")
        .map(|f| (f.code, f.index))
        .collect()
}

#[test]
fn joint_findings_are_those_of_the_full_decode() {
    let dir = tempfile::tempdir().unwrap();
    let bag = Bag::open(write_bag(dir.path())).unwrap();
    let want = |extra: &[(&str, usize)]| -> BTreeSet<(String, usize)> {
        [
            ("joint_duplicate_name", 3),
            ("joint_non_finite", 4),
            ("joint_length_mismatch", 5),
            ("message_undecodable", 6),
            ("joint_non_finite", 9),
        ]
        .iter()
        .chain(extra)
        .map(|(c, i)| (c.to_string(), *i))
        .collect()
    };
    assert_eq!(joint_findings(&CheckOptions::default(), &bag), want(&[]));
    // With a limit on joint `a`, message 8 (a = 1.5) is outside it.
    let o = CheckOptions {
        limits: Some(bagscope::params::JointLimits::Given(
            [("a".to_string(), (-1.0, 1.0))].into(),
        )),
        ..Default::default()
    };
    assert_eq!(
        joint_findings(&o, &bag),
        want(&[("joint_outside_limits", 8)])
    );
}

#[test]
fn one_scan_gives_the_commands_own_reports() {
    let dir = tempfile::tempdir().unwrap();
    let bags = [
        write_bag(dir.path()),
        write_stamped_bag(dir.path()),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bags/arm_split"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bags/sensors"),
    ];
    for p in bags {
        let bag = Bag::open(&p).unwrap();
        let copts = ClocksOptions::default();
        let o = CheckOptions::default();
        let (clocks, check) = clocks_and_check_of(&bag, &copts, &o).unwrap();
        let clocks_alone = clocks_data_of(&bag, &copts).unwrap();
        let check_alone = check_of(&bag, &o).unwrap();
        assert_eq!(json(&clocks.report), json(&clocks_alone.report), "{p:?}");
        assert_eq!(json(&check), json(&check_alone), "{p:?}");
        assert!(!check.findings.is_empty() || !check.checked.is_empty());
        // The times lent to check's clock analysis came back whole.
        for (a, b) in clocks.times.iter().zip(&clocks_alone.times) {
            assert_eq!(a.log_time_ns, b.log_time_ns, "{p:?} {}", a.topic);
            assert_eq!(a.stamp_ns, b.stamp_ns, "{p:?} {}", a.topic);
            assert_eq!(a.publish_time_ns, b.publish_time_ns, "{p:?} {}", a.topic);
        }
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}
