// The cdr_decode fuzz target's schemas, calls and assertions, included (`include!`) by the
// target (fuzz/fuzz_targets/cdr_decode.rs) and by the regression replay
// (tests/fault_injection.rs), so a saved crash replays exactly what the fuzzer ran.

/// The target's schemas, in its order: four built-in types, then the nested test schemas
/// (fuzz/schemas/nested.msg and nested.idl, read by the includer).
fn cdr_schemas(nested_msg: &str, nested_idl: &str) -> Vec<bagscope_msg::MessageSchema> {
    let b = |n: &str| bagscope_msg::schema_for_channel(n, "ros2msg", b"").expect(n);
    vec![
        b("sensor_msgs/msg/JointState"),
        b("trajectory_msgs/msg/JointTrajectory"),
        b("sensor_msgs/msg/Image"),
        b("tf2_msgs/msg/TFMessage"),
        bagscope_msg::schema::parse_ros2msg("fuzz_pkg/msg/Nested", nested_msg)
            .expect("nested msg schema"),
        bagscope_msg::schema::parse_ros2idl("fuzz_pkg/msg/Idl", nested_idl)
            .expect("nested idl schema"),
    ]
}

/// One input: the first byte picks the schema, the rest is the payload. Errors are fine;
/// where both decode, the stamp reader, the dynamic decoder and the typed decoder agree.
fn check_cdr_input(data: &[u8], schemas: &[bagscope_msg::MessageSchema]) {
    use bagscope_msg::types::{Image, JointState, JointTrajectory, TFMessage};
    use bagscope_msg::{decode, decode_typed};
    let Some((&sel, payload)) = data.split_first() else {
        return;
    };
    let i = sel as usize % schemas.len();
    let schema = &schemas[i];
    let dynamic = decode(schema, payload);
    let loc = schema.stamp_locator();
    let fast = loc.read_stamp_ns(payload);
    let _ = loc.read_frame_id(payload);
    if let (Ok(v), Ok(Some(ns))) = (&dynamic, &fast) {
        if let Some(d) = v.get_path_time_ns("header.stamp") {
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
        let path = if i == 3 {
            "transforms[0].header.stamp"
        } else {
            "header.stamp"
        };
        if let Some(d) = v.get_path_time_ns(path) {
            assert_eq!(d, t, "typed and dynamic decoders disagree on the stamp");
        }
    }
}
