//! `match` pairs any two scalar fields, whatever they are called: a `std_msgs/Float64` command
//! (`data`, no header: log time) against the z angular rate of a `sensor_msgs/Imu` that follows
//! it 50 ms later (header stamps), both on the wall clock. The delay comes out within a
//! millisecond of the one the bag was written with.
//!
//! Each topic's clock comes from the clocks analysis: an IMU whose stamps are all zero is
//! matched on its log time (not refused as "on zero time" with advice about use_sim_time), and
//! an IMU read through a field it does not have gets an error naming the field.

use std::path::Path;

use bagscope_msg::types::{Header, Imu, Time, Vector3};
use serde_json::Value;

mod common;
use common::{run, tempdir};

const WALL: i64 = 1_764_460_800_000_000_000;
const MS: i64 = 1_000_000;
const DELAY_NS: i64 = 50 * MS;

fn signal(t_ns: i64) -> f64 {
    let x = t_ns as f64 * 1e-9;
    0.8 * (1.3 * x).sin() + 0.3 * (2.9 * x).cos()
}

fn write_bag(path: &Path) {
    write_bag_stamped(path, |t| t)
}

/// The bag with the IMU's header stamps given by `stamp(t)`, `t` being when the sample was
/// taken (its log time is `t` + 1 ms).
fn write_bag_stamped(path: &Path, stamp: impl Fn(i64) -> i64) {
    let mut w = common::BagWriter::create(path);
    let imu_text = bagscope_msg::schema::builtin::schema_text("sensor_msgs/msg/Imu").unwrap();
    let cf = w.channel("/cmd", "std_msgs/msg/Float64", "float64 data");
    let ci = w.channel("/imu", "sensor_msgs/msg/Imu", &imu_text);
    // 20 s: commands at 20 Hz, IMU at 200 Hz, in log-time order.
    let mut msgs: Vec<(i64, u16, Vec<u8>)> = Vec::new();
    for k in 0..400i64 {
        let t = WALL + k * 50 * MS;
        let mut b = vec![0u8, 1, 0, 0];
        b.extend_from_slice(&signal(t - WALL).to_le_bytes());
        msgs.push((t, cf, b));
    }
    for k in 0..4000i64 {
        let t = WALL + k * 5 * MS;
        let data = bagscope_msg::encode_typed(&Imu {
            header: Header {
                stamp: Time::from_ns(stamp(t)),
                frame_id: "imu".into(),
            },
            angular_velocity: Vector3 {
                x: 0.0,
                y: 0.0,
                z: signal(t - WALL - DELAY_NS),
            },
            ..Default::default()
        })
        .unwrap();
        msgs.push((t + MS, ci, data));
    }
    msgs.sort_by_key(|m| (m.0, m.1));
    for (log, ch, data) in msgs {
        w.message(ch, log, &data);
    }
    w.finish();
}

#[test]
fn two_differently_named_scalar_fields_pair() {
    let dir = tempdir("match-fields");
    let bag = dir.join("cmd_imu.mcap");
    write_bag(&bag);
    let (code, out, err) = run(&[
        "match",
        bag.to_str().unwrap(),
        "--command",
        "/cmd",
        "--response",
        "/imu",
        "--command-field",
        "data",
        "--response-field",
        "angular_velocity.z",
        "--json",
    ]);
    assert!(code == 0 || code == 3, "exit {code}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let delay = v["delay_ns"].as_i64().unwrap();
    assert!(
        (delay - DELAY_NS).abs() <= MS,
        "delay {delay} ns, written with {DELAY_NS} ns"
    );
    assert_eq!(
        v["joints"]["matched"],
        serde_json::json!(["data -> angular_velocity.z"])
    );
    let before = v["error_before"]["rms"].as_f64().unwrap();
    let after = v["error_after"]["rms"].as_f64().unwrap();
    assert!(after < before / 5.0, "error {before} -> {after}");
}

#[test]
fn a_response_without_the_default_field_is_named_not_blamed_on_its_clock() {
    let dir = tempdir("match-fields-nofield");
    let bag = dir.join("cmd_imu.mcap");
    write_bag(&bag);
    let (code, out, err) = run(&[
        "match",
        bag.to_str().unwrap(),
        "--command",
        "/cmd",
        "--response",
        "/imu",
    ]);
    assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
    assert!(
        err.contains("/imu") && err.contains("'data'") && err.contains("--response-field"),
        "{err}"
    );
    assert!(
        !err.contains("zero time") && !err.contains("use_sim_time"),
        "{err}"
    );
}

/// A field path the type does not have is refused before the bag is read, naming the type's
/// fields where the path fails and the option to change (`--command-field`,
/// `--response-field`, `--names-field`), exit 2.
#[test]
fn a_misspelt_field_path_names_the_fields_of_its_type() {
    let dir = tempdir("match-fields-misspelt");
    let bag = dir.join("cmd_imu.mcap");
    write_bag(&bag);
    let b = bag.to_str().unwrap();
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["--response-field", "angular_velocity.zz"],
            "geometry_msgs/msg/Vector3 (at angular_velocity) has no field 'zz' (its fields: x, y, z)",
            "--response-field",
        ),
        (
            &["--command-field", "dta", "--response-field", "angular_velocity.z"],
            "std_msgs/msg/Float64 has no field 'dta' (its fields: data)",
            "--command-field",
        ),
        (
            // The names field applies to both topics: the command has a `data`, the IMU not.
            &[
                "--response-field",
                "angular_velocity.z",
                "--names-field",
                "data",
            ],
            "/imu: 'data': sensor_msgs/msg/Imu has no field 'data'",
            "--names-field",
        ),
    ];
    for (args, says, flag) in cases {
        let mut a = vec!["match", b, "--command", "/cmd", "--response", "/imu"];
        a.extend_from_slice(args);
        let (code, out, err) = run(&a);
        assert_eq!(code, 2, "{args:?}: stdout {out}\nstderr {err}");
        assert!(err.contains(says) && err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn an_imu_with_zero_stamps_is_matched_on_its_log_time() {
    let dir = tempdir("match-fields-zero");
    let bag = dir.join("cmd_imu_zero.mcap");
    write_bag_stamped(&bag, |_| 0);
    let (code, out, err) = run(&[
        "match",
        bag.to_str().unwrap(),
        "--command",
        "/cmd",
        "--response",
        "/imu",
        "--response-field",
        "angular_velocity.z",
        "--json",
    ]);
    assert!(code == 0, "exit {code}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["command_axis"], "wall", "{v}");
    assert_eq!(v["response_axis"], "wall", "{v}");
    // Log time is 1 ms after the sample: 51 ms after the command.
    let delay = v["delay_ns"].as_i64().unwrap();
    assert!(
        (delay - DELAY_NS - MS).abs() <= MS,
        "delay {delay} ns, written with {} ns",
        DELAY_NS + MS
    );
    let codes: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"stamp_zero"), "{codes:?}");
    assert!(
        v["time_source"]
            .as_str()
            .unwrap()
            .contains("response log time (stamps all zero)"),
        "{v}"
    );
}

#[test]
fn an_imu_on_its_own_clock_is_refused_with_align_relative_not_use_sim_time() {
    let dir = tempdir("match-fields-relative");
    let bag = dir.join("cmd_imu_boot.mcap");
    // Stamped since boot (small values, no /clock): a clock of its own.
    write_bag_stamped(&bag, |t| t - WALL + 3_000_000_000);
    let (code, _, err) = run(&[
        "match",
        bag.to_str().unwrap(),
        "--command",
        "/cmd",
        "--response",
        "/imu",
        "--response-field",
        "angular_velocity.z",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("response /imu on relative time") && err.contains("--align relative"),
        "{err}"
    );
    assert!(!err.contains("use_sim_time"), "{err}");
}
