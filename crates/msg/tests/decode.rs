//! Dynamic CDR decoding: real payloads against a reference decoding, field paths and times,
//! service events, IDL payloads, stamp locators, and errors on truncated or hostile input.

mod common;
use bagscope_msg::decode::decode_prefix;
use bagscope_msg::{
    decode, schema_for_channel, DecodeErrorKind, MessageSchema, StampSource, Value,
};
use common::*;

const ROS2MSG: &[(&str, &str)] = &[
    ("joint_state_arm", "sensor_msgs/msg/JointState"),
    (
        "joint_trajectory_arm",
        "trajectory_msgs/msg/JointTrajectory",
    ),
    ("clock_sim", "rosgraph_msgs/msg/Clock"),
    ("camera_info_rerun", "sensor_msgs/msg/CameraInfo"),
    ("joint_state_rerun", "sensor_msgs/msg/JointState"),
    ("imu_demo", "sensor_msgs/msg/Imu"),
    ("pose_stamped_demo", "geometry_msgs/msg/PoseStamped"),
    ("test_arrays", "test_msgs/msg/Arrays"),
    ("test_basic_types", "test_msgs/msg/BasicTypes"),
    ("tf_message_rosbags", "tf2_msgs/msg/TFMessage"),
    ("odometry_rosbags", "nav_msgs/msg/Odometry"),
    ("point_cloud2_rerun", "sensor_msgs/msg/PointCloud2"),
];

fn schema(file: &str, ty: &str, enc: &str) -> MessageSchema {
    schema_for_channel(ty, enc, &data(&format!("{file}.schema.txt"))).unwrap()
}

#[test]
fn real_payloads_match_python_reference() {
    for (file, ty) in ROS2MSG {
        let s = schema(file, ty, "ros2msg");
        let v =
            decode(&s, &data(&format!("{file}.0.cdr"))).unwrap_or_else(|e| panic!("{file}: {e}"));
        let got = serde_json::to_value(&v).unwrap();
        let want: serde_json::Value =
            serde_json::from_slice(&data(&format!("{file}.0.expected.json"))).unwrap();
        assert_json_close(&got, &want, file);
        // Built-in schema (empty schema record) decodes the same way.
        if let Ok(b) = schema_for_channel(ty, "ros2msg", b"") {
            if !ty.starts_with("test_msgs") {
                let v2 = decode(&b, &data(&format!("{file}.0.cdr"))).unwrap();
                assert_eq!(
                    serde_json::to_value(&v2).unwrap(),
                    got,
                    "{file} via built-in"
                );
            }
        }
    }
}

#[test]
fn paths_and_times() {
    let s = schema(
        "joint_trajectory_arm",
        "trajectory_msgs/msg/JointTrajectory",
        "ros2msg",
    );
    let v = decode(&s, &data("joint_trajectory_arm.0.cdr")).unwrap();
    assert_eq!(
        v.get_path_time_ns("header.stamp"),
        Some(1_764_460_800_029_426_888)
    );
    assert_eq!(
        v.get_path("header.frame_id").unwrap().as_str(),
        Some("base_link")
    );
    assert_eq!(
        v.get_path("joint_names[5]").unwrap().as_str(),
        Some("joint_6")
    );
    let pos = v
        .get_path("points[0].positions")
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert!((pos[0] - 0.3420715372641179).abs() < 1e-15);
    assert!(v.get_path_f64("points[0].positions[1]").is_some());
    assert!(v.get_path("points[99]").is_none());
    assert!(v.get_path("nope").is_none());
    assert!(v.get_path("points[").is_none());
    assert!(v
        .get_path("points[0].time_from_start")
        .unwrap()
        .as_time_ns()
        .is_some());

    let s = schema(
        "point_cloud2_rerun",
        "sensor_msgs/msg/PointCloud2",
        "ros2msg",
    );
    let v = decode(&s, &data("point_cloud2_rerun.0.cdr")).unwrap();
    assert!(matches!(v.get_path("data"), Some(Value::Bytes(_))));
    let b0 = v.get_path("data").unwrap().as_bytes().unwrap()[3] as i64;
    assert_eq!(v.get_path_i64("data[3]"), Some(b0));
    assert_eq!(v.get_path("fields[0].name").unwrap().as_str(), Some("x"));
}

#[test]
fn service_events_decode() {
    let s = schema(
        "add_two_ints_event",
        "example_interfaces/srv/AddTwoInts_Event",
        "ros2msg",
    );
    let v = decode(&s, &data("add_two_ints_event.0.cdr")).unwrap();
    assert_eq!(v.get_path_i64("info.event_type"), Some(1)); // REQUEST_RECEIVED
    assert_eq!(
        v.get_path("info.client_gid")
            .unwrap()
            .as_bytes()
            .unwrap()
            .len(),
        16
    );
    assert_eq!(v.get_path_i64("info.sequence_number"), Some(1));
    assert!(v.get_path_time_ns("info.stamp").unwrap() > 1_600_000_000_000_000_000);
    assert_eq!(v.get_path("request").unwrap().as_array().unwrap().len(), 1);
    assert_eq!(v.get_path("response").unwrap().as_array().unwrap().len(), 0);
    let a = v.get_path_i64("request[0].a").unwrap();
    let b = v.get_path_i64("request[0].b").unwrap();
    let v1 = decode(&s, &data("add_two_ints_event.1.cdr")).unwrap();
    assert_eq!(v1.get_path_i64("info.event_type"), Some(2)); // RESPONSE_SENT
    assert_eq!(v1.get_path("request").unwrap().as_array().unwrap().len(), 0);
    assert_eq!(v1.get_path_i64("response[0].sum"), Some(a + b));
    assert_eq!(
        v1.get_path("info.client_gid"),
        v.get_path("info.client_gid")
    );

    let s = schema(
        "basic_types_event",
        "test_msgs/srv/BasicTypes_Event",
        "ros2msg",
    );
    for i in 0..2 {
        let p = data(&format!("basic_types_event.{i}.cdr"));
        let v = decode(&s, &p).unwrap();
        let nreq = v.get_path("request").unwrap().as_array().unwrap().len();
        let nresp = v.get_path("response").unwrap().as_array().unwrap().len();
        assert_eq!(nreq + nresp, 1, "event {i}");
        assert!(v
            .get_path("request[0].string_value")
            .or(v.get_path("response[0].string_value"))
            .is_some());
    }
}

#[test]
fn ros2idl_payload_decodes() {
    let s = schema(
        "event_packet",
        "event_camera_msgs/msg/EventPacket",
        "ros2idl",
    );
    let p = data("event_packet.0.cdr");
    let v = decode(&s, &p).unwrap();
    let n = v.get_path("events").unwrap().as_bytes().unwrap().len();
    assert!(n > 30000, "{n}");
    assert!(v.get_path_time_ns("header.stamp").unwrap() > 1_700_000_000_000_000_000);
    assert!(v.get_path("encoding").unwrap().as_str().is_some());
    let loc = s.stamp_locator();
    assert_eq!(loc.source(), StampSource::HeaderStamp);
    assert_eq!(
        loc.read_stamp_ns(&p).unwrap(),
        v.get_path_time_ns("header.stamp")
    );
}

#[test]
fn stamp_locators() {
    for (file, ty) in ROS2MSG {
        let s = schema(file, ty, "ros2msg");
        let p = data(&format!("{file}.0.cdr"));
        let v = decode(&s, &p).unwrap();
        let loc = s.stamp_locator();
        let stamp = loc.read_stamp_ns(&p).unwrap();
        match loc.source() {
            StampSource::HeaderStamp => {
                assert_eq!(loc.fixed_offset(), Some(4), "{file}");
                assert_eq!(stamp, v.get_path_time_ns("header.stamp"), "{file}");
                assert_eq!(
                    loc.read_frame_id(&p).unwrap().as_deref(),
                    v.get_path("header.frame_id").unwrap().as_str()
                );
            }
            StampSource::ClockField => {
                assert_eq!(*ty, "rosgraph_msgs/msg/Clock");
                assert_eq!(stamp, Some(12_310_000_000));
            }
            StampSource::TopLevelStamp => panic!("{file}"),
            StampSource::None => {
                assert_eq!(stamp, None);
                assert!(
                    [
                        "test_msgs/msg/Arrays",
                        "test_msgs/msg/BasicTypes",
                        "tf2_msgs/msg/TFMessage"
                    ]
                    .contains(ty),
                    "{file}"
                );
            }
        }
    }
    assert_eq!(
        serde_json::to_string(&StampSource::TopLevelStamp).unwrap(),
        "\"top_level_stamp\""
    );
    assert_eq!(
        serde_json::to_string(&StampSource::None).unwrap(),
        "\"none\""
    );
}

/// Build a payload by hand: LE header, then body bytes.
fn le(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 1, 0, 0];
    v.extend_from_slice(body);
    v
}

#[test]
fn top_level_stamp_fixed_and_prefix() {
    // Fixed prefix: uint8 then stamp (aligned to 4).
    let s = schema_for_channel(
        "p/msg/A",
        "ros2msg",
        b"uint8 kind\nbuiltin_interfaces/Time stamp\n",
    )
    .unwrap();
    let loc = s.stamp_locator();
    assert_eq!(loc.source(), StampSource::TopLevelStamp);
    assert_eq!(loc.fixed_offset(), Some(8));
    let p = le(&[7, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0]);
    assert_eq!(loc.read_stamp_ns(&p).unwrap(), Some(2_000_000_005));
    // Variable prefix: string before stamp → decode-prefix fallback.
    let s = schema_for_channel(
        "p/msg/B",
        "ros2msg",
        b"string id\nbuiltin_interfaces/Time stamp\nfloat64[] rest\n",
    )
    .unwrap();
    let loc = s.stamp_locator();
    assert_eq!(loc.fixed_offset(), None);
    let p = le(&[
        3, 0, 0, 0, b'a', b'b', 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0,
    ]);
    assert_eq!(loc.read_stamp_ns(&p).unwrap(), Some(-1_000_000_000 + 1));
    // Big-endian header respected.
    let s = schema_for_channel("std_msgs/msg/Header", "", b"").unwrap();
    let v = vec![0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 2, b'm', 0];
    let loc = bagscope_msg::StampLocator::for_schema(
        &schema_for_channel("geometry_msgs/msg/PointStamped", "", b"").unwrap(),
    );
    assert_eq!(loc.read_stamp_ns(&v).unwrap(), Some(3_000_000_009));
    assert_eq!(loc.read_frame_id(&v).unwrap().as_deref(), Some("m"));
    assert_eq!(
        decode(&s, &v)
            .unwrap()
            .get_path("frame_id")
            .unwrap()
            .as_str(),
        Some("m")
    );
    // Short payloads are errors, not panics.
    assert!(loc.read_stamp_ns(&v[..10]).is_err());
    assert!(loc.read_stamp_ns(&[0, 1]).is_err());
}

#[test]
fn errors_name_offset_and_path() {
    let s = schema("joint_state_arm", "sensor_msgs/msg/JointState", "ros2msg");
    let mut p = data("joint_state_arm.0.cdr");
    // Corrupt the `name` sequence count (at body offset 16 for an empty frame_id).
    let off = 4 + 8 + 8;
    assert_eq!(&p[off..off + 4], &[6, 0, 0, 0]);
    p[off..off + 4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    let e = decode(&s, &p).unwrap_err();
    assert_eq!(e.offset, off);
    assert_eq!(e.path, "name");
    assert!(matches!(e.kind, DecodeErrorKind::LengthTooLarge { .. }));
    assert!(e.to_string().contains("byte offset 20"), "{e}");

    let p = data("joint_trajectory_arm.0.cdr");
    let s = schema(
        "joint_trajectory_arm",
        "trajectory_msgs/msg/JointTrajectory",
        "ros2msg",
    );
    let e = decode(&s, &p[..p.len() - 10]).unwrap_err();
    assert!(e.path.starts_with("points[0]."), "{}", e.path);

    let mut bad = p.clone();
    bad[1] = 3;
    let e = decode(&s, &bad).unwrap_err();
    assert!(e.to_string().contains("PL_CDR_LE"), "{e}");
    bad[1] = 7;
    assert!(decode(&s, &bad)
        .unwrap_err()
        .to_string()
        .contains("CDR2_LE"));
}

#[test]
fn truncation_at_every_length_is_an_error() {
    let mut cases: Vec<(&str, &str, &str)> =
        ROS2MSG.iter().map(|(f, t)| (*f, *t, "ros2msg")).collect();
    cases.push((
        "add_two_ints_event",
        "example_interfaces/srv/AddTwoInts_Event",
        "ros2msg",
    ));
    cases.push((
        "basic_types_event",
        "test_msgs/srv/BasicTypes_Event",
        "ros2msg",
    ));
    for (file, ty, enc) in cases {
        let s = schema(file, ty, enc);
        let p = data(&format!("{file}.0.cdr"));
        let full = decode(&s, &p).unwrap();
        let loc = s.stamp_locator();
        for n in 0..p.len() {
            match decode(&s, &p[..n]) {
                Err(e) => assert!(
                    e.offset <= n,
                    "{file}@{n}: offset {} beyond input",
                    e.offset
                ),
                // Only possible when what was cut is middleware trailing padding.
                Ok(v) => assert_eq!(v, full, "{file}@{n}: truncated payload decoded differently"),
            }
            let _ = loc.read_stamp_ns(&p[..n]);
            let _ = loc.read_frame_id(&p[..n]);
            let _ = decode_prefix(&s, &p[..n], 1);
        }
    }
}

#[test]
fn empty_struct_and_wstring() {
    let s = schema_for_channel("std_msgs/msg/Empty", "", b"").unwrap();
    let v = decode(&s, &le(&[0])).unwrap();
    assert!(v.as_struct().unwrap().is_empty());
    let s = schema_for_channel(
        "p/msg/W",
        "ros2msg",
        b"wstring w\nstd_msgs/Empty[] es\nuint8 after\n",
    )
    .unwrap();
    // "hi" as 3 UTF-16 units incl. terminator, then 2 empties (1 byte each), then 9
    let mut body = vec![3, 0, 0, 0, b'h', 0, b'i', 0, 0, 0, 0, 0];
    body.extend_from_slice(&[2, 0, 0, 0, 0, 0, 9]);
    let v = decode(&s, &le(&body)).unwrap();
    assert_eq!(v.get_path("w").unwrap().as_str(), Some("hi"));
    assert_eq!(v.get_path("es").unwrap().as_array().unwrap().len(), 2);
    assert_eq!(v.get_path_i64("after"), Some(9));
    // A huge count of empties cannot allocate.
    let v = decode(&s, &le(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]));
    assert!(v.is_err());
}

#[test]
fn hostile_schemas_do_not_hang_or_overflow() {
    // A 3000-level chain of nested types.
    let sep = "=".repeat(80);
    let mut t = String::from("T0 x\nbuiltin_interfaces/Time stamp\n");
    for i in 0..3000 {
        t.push_str(&format!("{sep}\nMSG: p/T{i}\nT{} x\n", i + 1));
    }
    t.push_str(&format!("{sep}\nMSG: p/T3000\nuint8 v\n"));
    let s = schema_for_channel("p/msg/Deep", "ros2msg", t.as_bytes()).unwrap();
    let e = decode(&s, &le(&[0; 64])).unwrap_err();
    assert!(e.to_string().contains("nesting"), "{e}");
    let _ = s.stamp_locator().read_stamp_ns(&le(&[0; 64]));
    // Huge nested fixed arrays: locator falls back instead of iterating forever.
    let t = format!("Big[100000] b\nbuiltin_interfaces/Time stamp\n{sep}\nMSG: p/Big\nSmall[100000] s\n{sep}\nMSG: p/Small\nuint8 v\n");
    let s = schema_for_channel("p/msg/Huge", "ros2msg", t.as_bytes()).unwrap();
    let loc = s.stamp_locator();
    assert_eq!(loc.fixed_offset(), None);
    assert!(loc.read_stamp_ns(&le(&[0; 64])).is_err());
    // Fixed array of a giant primitive count: rejected before allocation.
    let s = schema_for_channel("p/msg/F", "ros2msg", b"float64[4000000000] f\n").unwrap();
    assert!(decode(&s, &le(&[0; 64])).is_err());
}
