//! Arbitrary bytes as a CDR payload of a fixed schema: the dynamic decoder, the stamp reader
//! and (where a typed struct exists) `decode_typed` must return errors, never panic or
//! allocate from a corrupt count. Where both decoders succeed they must agree on the stamp.
//! First byte picks the schema; the rest is the payload (encapsulation header included).
#![no_main]

use std::sync::OnceLock;

use bagscope_msg::schema::{parse_ros2idl, parse_ros2msg};
use bagscope_msg::types::{Image, JointState, JointTrajectory, TFMessage};
use bagscope_msg::{decode, decode_typed, schema_for_channel, MessageSchema, Value};
use libfuzzer_sys::fuzz_target;

// Shared with the regression replay in tests/fault_injection.rs.
const NESTED_MSG: &str = include_str!("../schemas/nested.msg");

const NESTED_IDL: &str = include_str!("../schemas/nested.idl");

fn schemas() -> &'static Vec<MessageSchema> {
    static S: OnceLock<Vec<MessageSchema>> = OnceLock::new();
    S.get_or_init(|| {
        let b = |n: &str| schema_for_channel(n, "ros2msg", b"").expect(n);
        vec![
            b("sensor_msgs/msg/JointState"),
            b("trajectory_msgs/msg/JointTrajectory"),
            b("sensor_msgs/msg/Image"),
            b("tf2_msgs/msg/TFMessage"),
            parse_ros2msg("fuzz_pkg/msg/Nested", NESTED_MSG).expect("nested msg schema"),
            parse_ros2idl("fuzz_pkg/msg/Idl", NESTED_IDL).expect("nested idl schema"),
        ]
    })
}

fn stamp_of(v: &Value) -> Option<i64> {
    v.get_path_time_ns("header.stamp")
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, payload)) = data.split_first() else {
        return;
    };
    let all = schemas();
    let i = sel as usize % all.len();
    let schema = &all[i];
    let dynamic = decode(schema, payload);
    let loc = schema.stamp_locator();
    let fast = loc.read_stamp_ns(payload);
    let _ = loc.read_frame_id(payload);
    if let (Ok(v), Ok(Some(ns))) = (&dynamic, &fast) {
        if let Some(d) = stamp_of(v) {
            assert_eq!(d, *ns, "stamp reader and decoder disagree");
        }
    }
    let typed_stamp = match i {
        0 => decode_typed::<JointState>(payload)
            .ok()
            .map(|m| m.header.stamp.to_ns()),
        1 => decode_typed::<JointTrajectory>(payload)
            .ok()
            .map(|m| m.header.stamp.to_ns()),
        2 => decode_typed::<Image>(payload)
            .ok()
            .map(|m| m.header.stamp.to_ns()),
        3 => decode_typed::<TFMessage>(payload)
            .ok()
            .and_then(|m| m.transforms.first().map(|t| t.header.stamp.to_ns())),
        _ => None,
    };
    if let (Ok(v), Some(t)) = (&dynamic, typed_stamp) {
        let d = if i == 3 {
            v.get_path_time_ns("transforms[0].header.stamp")
        } else {
            stamp_of(v)
        };
        if let Some(d) = d {
            assert_eq!(d, t, "typed and dynamic decoders disagree on the stamp");
        }
    }
});
