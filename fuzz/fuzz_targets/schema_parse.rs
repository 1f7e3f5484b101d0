//! Arbitrary text as a ros2msg / ros2idl / service-event schema. A schema that parses is then
//! used: stamp locator, rendering back to ros2msg text (which must parse again), and decoding
//! a fixed payload against it (hostile schemas: deep nesting, huge fixed arrays).
#![no_main]

use bagscope_msg::schema::{parse_ros2idl, parse_ros2msg, parse_service_event};
use bagscope_msg::{decode, schema_for_channel};
use libfuzzer_sys::fuzz_target;

const PAYLOAD: &[u8] = &[
    0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, b'a', b'b', 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0,
    0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 10, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let names = [
        "fuzz_pkg/msg/Root",
        "std_msgs/msg/Header",
        "fuzz_pkg/srv/Call_Event",
        "Root",
        "a/b",
    ];
    let name = names[(sel >> 2) as usize % names.len()];
    let parsed = match sel & 3 {
        0 => parse_ros2msg(name, &text),
        1 => parse_ros2idl(name, &text),
        2 => parse_service_event(name, &text),
        _ => schema_for_channel(name, "ros2msg", rest),
    };
    let Ok(schema) = parsed else {
        return;
    };
    let loc = schema.stamp_locator();
    let _ = loc.read_stamp_ns(PAYLOAD);
    let _ = loc.read_frame_id(PAYLOAD);
    let _ = decode(&schema, PAYLOAD);
    let _ = decode(&schema, &[0, 0, 0, 0]);
    // What we render must be readable again (this is what `convert` writes into bags).
    let rendered = schema.to_ros2msg_text();
    let _ = parse_ros2msg(schema.name(), &rendered);
});
