//! Decoding into leaves against the tree decoder (the reference): on real payloads, on every
//! truncation of them and on bytes changed in place, both accept or reject the same payloads,
//! and every leaf holds the value the tree has at its path.

mod common;
use bagscope_msg::leaves::{LeafDecoder, LeafSink, LeafUse, Scalar};
use bagscope_msg::{decode, schema_for_channel, MessageSchema, Value};
use common::*;

const FILES: &[(&str, &str)] = &[
    ("joint_state_arm", "sensor_msgs/msg/JointState"),
    (
        "joint_trajectory_arm",
        "trajectory_msgs/msg/JointTrajectory",
    ),
    ("clock_sim", "rosgraph_msgs/msg/Clock"),
    ("camera_info_rerun", "sensor_msgs/msg/CameraInfo"),
    ("imu_demo", "sensor_msgs/msg/Imu"),
    ("test_arrays", "test_msgs/msg/Arrays"),
    ("test_basic_types", "test_msgs/msg/BasicTypes"),
    ("tf_message_rosbags", "tf2_msgs/msg/TFMessage"),
    ("odometry_rosbags", "nav_msgs/msg/Odometry"),
    ("point_cloud2_rerun", "sensor_msgs/msg/PointCloud2"),
];

/// Rebuilds each leaf's value from the sink calls.
#[derive(Default)]
struct Rebuild {
    cells: Vec<Option<Value>>,
}

fn value_of(s: Scalar<'_>) -> Value {
    match s {
        Scalar::Bool(x) => Value::Bool(x),
        Scalar::I8(x) => Value::I8(x),
        Scalar::U8(x) => Value::U8(x),
        Scalar::I16(x) => Value::I16(x),
        Scalar::U16(x) => Value::U16(x),
        Scalar::I32(x) => Value::I32(x),
        Scalar::U32(x) => Value::U32(x),
        Scalar::I64(x) => Value::I64(x),
        Scalar::U64(x) => Value::U64(x),
        Scalar::F32(x) => Value::F32(x),
        Scalar::F64(x) => Value::F64(x),
        Scalar::Str(x) => Value::String(x.into_owned()),
    }
}

impl LeafSink for Rebuild {
    fn scalar(&mut self, leaf: usize, v: Scalar<'_>) {
        match &mut self.cells[leaf] {
            Some(Value::Array(a)) => a.push(value_of(v)),
            c => *c = Some(value_of(v)),
        }
    }
    fn seq(&mut self, leaf: usize, len: usize) {
        self.cells[leaf] = Some(Value::Array(Vec::with_capacity(len)));
    }
    fn bytes(&mut self, leaf: usize, b: &[u8]) {
        self.cells[leaf] = Some(Value::Bytes(b.to_vec()));
    }
    fn tree(&mut self, leaf: usize, v: Value) {
        self.cells[leaf] = Some(v);
    }
}

fn at<'a>(v: &'a Value, path: &[String]) -> &'a Value {
    path.iter()
        .fold(v, |cur, p| cur.field(p).expect("the tree has every leaf"))
}

/// Both decoders on one payload, with every leaf used as `uses` says: the same verdict, and
/// the same values where used.
fn agree(schema: &MessageSchema, d: &LeafDecoder, payload: &[u8], what: &str) -> bool {
    let tree = decode(schema, payload);
    let mut sink = Rebuild {
        cells: vec![None; d.leaves().len()],
    };
    let flat = d.decode(payload, &mut sink);
    assert_eq!(tree.is_ok(), flat.is_ok(), "{what}: {tree:?} vs {flat:?}");
    if let Ok(v) = &tree {
        for (l, cell) in d.leaves().iter().zip(&sink.cells) {
            let want = at(v, &l.path);
            match cell {
                Some(c) => assert_eq!(
                    format!("{c:?}"),
                    format!("{want:?}"),
                    "{what}: {}",
                    l.name()
                ),
                // Arrays of messages are given only as trees.
                None => assert!(
                    matches!(want, Value::Array(_)),
                    "{what}: {} not given",
                    l.name()
                ),
            }
        }
    }
    tree.is_ok()
}

#[test]
fn leaves_hold_what_the_tree_decoder_gives_and_fail_where_it_fails() {
    for (file, ty) in FILES {
        let schema =
            schema_for_channel(ty, "ros2msg", &data(&format!("{file}.schema.txt"))).unwrap();
        let payload = data(&format!("{file}.0.cdr"));
        for tree_every in [0usize, 1, 2] {
            let mut d = LeafDecoder::new(&schema);
            assert!(!d.leaves().is_empty(), "{file}");
            for i in 0..d.leaves().len() {
                let u = if tree_every > 0 && i % tree_every == 0 {
                    LeafUse::Tree
                } else {
                    LeafUse::Values
                };
                d.set_use(i, u);
            }
            assert!(agree(&schema, &d, &payload, file), "{file} decodes");
            let mut accepted = 0;
            for cut in 0..payload.len() {
                accepted +=
                    agree(&schema, &d, &payload[..cut], &format!("{file} cut {cut}")) as usize;
            }
            // Cutting into the message's own bytes must be rejected (only padding may go).
            assert!(accepted <= 4, "{file}: {accepted} truncations accepted");
            // Single bytes changed (counts and lengths among them).
            let mut p = payload.clone();
            for k in 4..payload.len() {
                for x in [0xffu8, 0x7f, 0x00] {
                    let old = p[k];
                    p[k] = x;
                    agree(&schema, &d, &p, &format!("{file} byte {k} = {x}"));
                    p[k] = old;
                }
            }
        }
    }
}

#[test]
fn skipped_leaves_are_read_but_not_given() {
    let (file, ty) = ("joint_state_arm", "sensor_msgs/msg/JointState");
    let schema = schema_for_channel(ty, "ros2msg", &data(&format!("{file}.schema.txt"))).unwrap();
    let payload = data(&format!("{file}.0.cdr"));
    let mut d = LeafDecoder::new(&schema);
    let names: Vec<String> = d.leaves().iter().map(|l| l.name()).collect();
    assert_eq!(
        names,
        [
            "header.stamp.sec",
            "header.stamp.nanosec",
            "header.frame_id",
            "name",
            "position",
            "velocity",
            "effort"
        ]
    );
    d.set_use(4, LeafUse::Values);
    let mut sink = Rebuild {
        cells: vec![None; names.len()],
    };
    d.decode(&payload, &mut sink).unwrap();
    let tree = decode(&schema, &payload).unwrap();
    for (i, c) in sink.cells.iter().enumerate() {
        match i {
            4 => assert_eq!(c.as_ref(), Some(at(&tree, &d.leaves()[4].path))),
            _ => assert!(c.is_none(), "{}", names[i]),
        }
    }
    // A payload cut inside a skipped field still fails.
    assert!(d.decode(&payload[..payload.len() - 9], &mut sink).is_err());
}
