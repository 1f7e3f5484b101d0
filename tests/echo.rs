//! `bagscope echo` prints what was recorded: a bag is written here with known JointState
//! values (encoded by the typed CDR encoder, independent of the dynamic decoder `echo` uses),
//! and every value, time, window, field selection and count is checked against them.

use std::path::Path;

use bagscope_msg::types::{Header, JointState, Time};
use serde_json::Value;

mod common;
use common::{run, tempdir};

const WALL: i64 = 1_764_460_800_000_000_000;
const S: i64 = 1_000_000_000;

/// Ten JointState messages, one a second from `WALL`, with two joints at `k` and `-k / 10`, and
/// a stamp 3 ms before each log time.
fn write_bag(path: &Path) {
    let mut w = common::BagWriter::create(path);
    let text = bagscope_msg::schema::builtin::schema_text("sensor_msgs/msg/JointState").unwrap();
    let ch = w.channel("/joint_states", "sensor_msgs/msg/JointState", &text);
    for k in 0..10i64 {
        let log = WALL + k * S;
        let data = bagscope_msg::encode_typed(&JointState {
            header: Header {
                stamp: Time::from_ns(log - 3_000_000),
                frame_id: "base".into(),
            },
            name: vec!["a".into(), "b".into()],
            position: vec![k as f64, -(k as f64) / 10.0],
            velocity: vec![],
            effort: vec![],
        })
        .unwrap();
        w.message_published(ch, log, log - 1_000, &data);
    }
    w.finish();
}

/// Every line one message object with the documented keys.
fn json_lines(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            for k in ["topic", "index", "log_time_ns", "message"] {
                assert!(v.get(k).is_some(), "no {k}: {l}");
            }
            v
        })
        .collect()
}

#[test]
fn echo_prints_the_recorded_values_and_times() {
    let dir = tempdir("echo");
    let bag = dir.join("js.mcap");
    write_bag(&bag);
    let b = bag.to_str().unwrap();

    let (code, out, err) = run(&["echo", b, "--topic", "/joint_states", "--json"]);
    assert_eq!(code, 0, "{err}");
    let msgs = json_lines(&out);
    assert_eq!(msgs.len(), 10);
    assert!(err.contains("10 message(s)"), "{err}");
    for (k, m) in msgs.iter().enumerate() {
        let k = k as i64;
        assert_eq!(m["index"], k);
        assert_eq!(m["log_time_ns"], WALL + k * S);
        assert_eq!(m["publish_time_ns"], WALL + k * S - 1_000);
        let stamp = &m["message"]["header"]["stamp"];
        let ns = stamp["sec"].as_i64().unwrap() * S + stamp["nanosec"].as_i64().unwrap();
        assert_eq!(ns, WALL + k * S - 3_000_000);
        assert_eq!(m["message"]["header"]["frame_id"], "base");
        assert_eq!(m["message"]["name"], serde_json::json!(["a", "b"]));
        assert_eq!(m["message"]["position"][0].as_f64(), Some(k as f64));
        assert_eq!(
            m["message"]["position"][1].as_f64(),
            Some(-(k as f64) / 10.0)
        );
    }

    // A window from the bag's start (2 s ≤ t < 5 s), at most 2 of its 3 messages, two fields.
    let (code, out, err) = run(&[
        "echo",
        b,
        "--topic",
        "/joint_states",
        "--start",
        "+2",
        "--end",
        "+5s",
        "--limit",
        "2",
        "--fields",
        "position[0],header.frame_id,position[5]",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let msgs = json_lines(&out);
    assert_eq!(msgs.len(), 2);
    let got: Vec<(i64, f64)> = msgs
        .iter()
        .map(|m| {
            (
                m["index"].as_i64().unwrap(),
                m["message"]["position[0]"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [(2, 2.0), (3, 3.0)]);
    assert_eq!(msgs[0]["message"]["header.frame_id"], "base");
    assert!(
        msgs[0]["message"]["position[5]"].is_null(),
        "an index past this message's array is null"
    );

    // Absolute windows: nanoseconds, or RFC 3339.
    let start = format!("{}", WALL + 7 * S);
    for start in [start.as_str(), "2025-11-30T00:00:07Z"] {
        let (code, out, err) = run(&[
            "echo",
            b,
            "--topic",
            "/joint_states",
            "--start",
            start,
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let msgs = json_lines(&out);
        assert_eq!(msgs.len(), 3, "--start {start}");
        assert_eq!(msgs[0]["index"], 7);
    }

    // Text: YAML as `ros2 topic echo` prints it, one document per message.
    let (code, out, _) = run(&["echo", b, "--topic", "/joint_states", "--limit", "3"]);
    assert_eq!(code, 0);
    assert_eq!(
        out.matches("\n---\n").count() + usize::from(out.starts_with("---\n")),
        3
    );
    assert!(out.contains("frame_id: base\n"), "{out}");
    assert!(out.contains("position:\n- 2.0\n- -0.2\n"), "{out}");
    assert!(out.contains("velocity: []\n"), "{out}");
}

#[test]
fn echo_errors_name_what_is_wrong() {
    let dir = tempdir("echo-err");
    let bag = dir.join("js.mcap");
    write_bag(&bag);
    let b = bag.to_str().unwrap();
    let (code, _, err) = run(&["echo", b, "--topic", "/nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nope"), "{err}");
    // Malformed parameters are usage errors (2) naming the value.
    let (code, _, err) = run(&["echo", b, "--topic", "/joint_states", "--start", "soon"]);
    assert_eq!(code, 2);
    assert!(err.contains("soon"), "{err}");
    let (code, _, err) = run(&["echo", b, "--topic", "/joint_states", "--fields", "a..b"]);
    assert_eq!(code, 2);
    assert!(err.contains("a..b"), "{err}");
}

/// A field path the topic's type does not have is a usage error (exit 2) naming the type and
/// its fields where the path fails, before anything is printed: it once printed `positon:
/// null` for every message with exit 0. `export --fields` follows the same rule.
#[test]
fn unknown_field_paths_are_usage_errors_naming_the_fields() {
    let dir = tempdir("echo-fields");
    let bag = dir.join("js.mcap");
    write_bag(&bag);
    let b = bag.to_str().unwrap();
    let cases = [
        (
            "positon",
            "sensor_msgs/msg/JointState has no field 'positon' (its fields: header, name, position, velocity, effort)",
        ),
        (
            "header.stmp",
            "std_msgs/msg/Header (at header) has no field 'stmp' (its fields: stamp, frame_id)",
        ),
        ("position.x", "position is float64[], which has no fields"),
        ("name[0].x", "name[0] is string, which has no fields"),
        ("header[1]", "header is std_msgs/Header, not an array"),
    ];
    for (path, says) in cases {
        // Among valid paths, and in both output modes.
        for json in [false, true] {
            let fields = format!("position[0],{path}");
            let mut args = vec!["echo", b, "--topic", "/joint_states", "--fields", &fields];
            if json {
                args.push("--json");
            }
            let (code, out, err) = run(&args);
            assert_eq!(code, 2, "{path}: {err}");
            assert!(out.is_empty(), "{path}: printed {out}");
            assert!(
                err.contains(says) && err.contains("/joint_states"),
                "{path}: {err}"
            );
        }
    }
    // Valid paths still print, nested and indexed (header.stamp.sec is 3 ms before the log
    // time's second).
    let (code, out, err) = run(&[
        "echo",
        b,
        "--topic",
        "/joint_states",
        "--fields",
        "header.stamp.sec,position[1]",
        "--limit",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let m = &json_lines(&out)[0]["message"];
    assert_eq!(m["header.stamp.sec"], (WALL - 3_000_000) / S);
    assert_eq!(m["position[1]"].as_f64(), Some(-0.0));

    let x = dir.join("x.parquet");
    let (code, _, err) = run(&[
        "export",
        b,
        "--topics",
        "/joint_states",
        "--fields",
        "positon",
        "-o",
        x.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("sensor_msgs/msg/JointState has no field 'positon'")
            && err.contains("position"),
        "{err}"
    );
    assert!(!x.exists());
}
