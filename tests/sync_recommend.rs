//! `sync --recommend` and `report` on small ordinary bags the recommendation cannot be made
//! from: an Image topic stamped on wall time with an Imu topic on a relative clock (the
//! queue sweep was once sized from their ~1.7e9 s lag difference: a ~3 TB allocation and an
//! abort, exit 134, no output), and an Imu topic whose stamps are frozen. The reason comes
//! out in place of the numbers, and the commands finish.

use std::path::Path;
use std::time::{Duration, Instant};

use bagscope_msg::types::{Header, Image, Imu, Time};
use serde_json::Value;

mod common;
use common::tempdir;

const MS: i64 = 1_000_000;
const WALL: i64 = 1_764_460_800_000_000_000;

/// 170 images at 30 Hz stamped on wall time and 1 130 IMU messages at 200 Hz stamped by
/// `imu_stamp(k)`, all logged on wall time.
fn write_bag(path: &Path, imu_stamp: impl Fn(i64) -> i64) {
    let mut w = common::BagWriter::create(path);
    let text = |t: &str| bagscope_msg::schema::builtin::schema_text(t).unwrap();
    let ci = w.channel(
        "/camera/image_raw",
        "sensor_msgs/msg/Image",
        &text("sensor_msgs/msg/Image"),
    );
    let cu = w.channel("/imu", "sensor_msgs/msg/Imu", &text("sensor_msgs/msg/Imu"));
    // (log time, channel, stamp), written in log-time order.
    let mut msgs: Vec<(i64, u16, i64)> = (0..170)
        .map(|k| (WALL + k * 33_333_333 + 5 * MS, ci, WALL + k * 33_333_333))
        .chain((0..1130).map(|k| (WALL + k * 5 * MS + MS, cu, imu_stamp(k))))
        .collect();
    msgs.sort_unstable();
    for (log, ch, stamp) in msgs {
        let header = Header {
            stamp: Time::from_ns(stamp),
            frame_id: "f".into(),
        };
        let data = if ch == ci {
            bagscope_msg::encode_typed(&Image {
                header,
                height: 2,
                width: 2,
                encoding: "mono8".into(),
                is_bigendian: 0,
                step: 2,
                data: vec![0, 1, 2, 3],
            })
        } else {
            bagscope_msg::encode_typed(&Imu {
                header,
                ..Default::default()
            })
        }
        .unwrap();
        w.message(ch, log, &data);
    }
    w.finish();
}

fn run(args: &[&str]) -> (i32, String, String, Duration) {
    // The elapsed time guards against a runaway (a sweep sized from a clock offset), it does
    // not measure speed.
    let t0 = Instant::now();
    let (code, out, err) = common::run(args);
    (code, out, err, t0.elapsed())
}

fn recommend_json(bag: &str) -> Value {
    let (code, out, err, took) = run(&[
        "sync",
        bag,
        "--topics",
        "/camera/image_raw,/imu",
        "--recommend",
        "--json",
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let j: Value = serde_json::from_str(&out).unwrap();
    // No numbers: neither a recommendation nor its rule.
    assert!(j.get("recommendation").is_none(), "{j}");
    assert!(j.get("rule").is_none(), "{j}");
    assert_eq!(j["no_recommendation"]["policy"], "approx-py");
    j
}

#[test]
fn wall_image_with_relative_imu_gets_the_cross_clock_reason() {
    let dir = tempdir("recommend-clocks");
    let bag = dir.join("cross.mcap");
    write_bag(&bag, |k| 1_000_000_000 + k * 5 * MS);
    let b = bag.to_str().unwrap();

    let j = recommend_json(b);
    let no = &j["no_recommendation"];
    assert_eq!(no["code"], "stamp_clocks_differ", "{no}");
    assert_eq!(
        no["topics"],
        serde_json::json!(["/camera/image_raw", "/imu"])
    );
    assert!(no["offset_ns"].as_i64().unwrap() < -1_700_000_000 * 1_000_000_000);

    let (code, out, err, _) = run(&[
        "sync",
        b,
        "--topics",
        "/camera/image_raw,/imu",
        "--recommend",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("no recommendation (approx-py): stamps on different clocks"),
        "{out}"
    );

    // `report` recommends for every sensor pair: it finishes, with the reason in its page.
    let rep = dir.join("report");
    let (code, out, err, took) = run(&["report", b, "-o", rep.to_str().unwrap()]);
    assert!(
        code == 0 || code == 3,
        "exit {code}\nstdout: {out}\nstderr: {err}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(rep.join("report.json")).unwrap()).unwrap();
    let entry = r["sync"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["topics"] == serde_json::json!(["/camera/image_raw", "/imu"]))
        .unwrap_or_else(|| panic!("no image/imu sync entry: {}", r["sync"]));
    assert_eq!(
        entry["report"]["no_recommendation"]["code"], "stamp_clocks_differ",
        "{entry}"
    );
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("stamps on different clocks"), "{md}");
}

#[test]
fn frozen_imu_stamps_are_the_reason() {
    let dir = tempdir("recommend-frozen");
    let bag = dir.join("frozen.mcap");
    write_bag(&bag, |_| WALL + 7 * MS);
    let j = recommend_json(bag.to_str().unwrap());
    let no = &j["no_recommendation"];
    assert_eq!(no["code"], "stamp_frozen", "{no}");
    assert_eq!(no["topics"], serde_json::json!(["/imu"]));
    assert_eq!(
        (no["n"].as_u64(), no["messages"].as_u64()),
        (Some(1), Some(1130))
    );
    assert!(
        no["message"]
            .as_str()
            .unwrap()
            .contains("1 distinct stamp(s) over 1130 messages"),
        "{no}"
    );
}

fn codes(j: &Value) -> Vec<String> {
    j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn approx_py_without_slop_uses_the_recommended_slop_and_says_so() {
    let dir = tempdir("approx-py-noslop");
    let bag = dir.join("good.mcap");
    write_bag(&bag, |k| WALL + k * 5 * MS);
    let b = bag.to_str().unwrap();
    let topics = "/camera/image_raw,/imu";
    let (code, out, err, _) = run(&["sync", b, "--topics", topics, "--recommend", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rec: Value = serde_json::from_str(&out).unwrap();
    let slop = rec["recommendation"]["slop_ns"].as_i64().unwrap();
    assert!(slop > 0, "{rec}");

    let (code, out, err, _) = run(&["sync", b, "--topics", topics, "--json"]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["slop_ns"].as_i64(), Some(slop), "{j}");
    assert!(j["sets"].as_u64().unwrap() > 100, "{j}");
    assert!(
        codes(&j).contains(&"slop_from_recommendation".to_string()),
        "{j}"
    );
    // The same run with that slop given emits the same sets, and no such warning.
    let (_, out2, _, _) = run(&[
        "sync",
        b,
        "--topics",
        topics,
        "--slop",
        &format!("{slop}ns"),
        "--json",
    ]);
    let j2: Value = serde_json::from_str(&out2).unwrap();
    assert_eq!(j2["sets"], j["sets"]);
    assert!(codes(&j2).is_empty(), "{j2}");

    let (code, out, err, _) = run(&["sync", b, "--topics", topics]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("warning [slop_from_recommendation]") && out.contains("recommended slop"),
        "{out}"
    );
}

#[test]
fn approx_py_without_slop_on_a_bag_that_supports_no_recommendation_is_a_usage_error() {
    let dir = tempdir("approx-py-noslop-frozen");
    let bag = dir.join("frozen.mcap");
    write_bag(&bag, |_| WALL + 7 * MS);
    let (code, out, err, _) = run(&[
        "sync",
        bag.to_str().unwrap(),
        "--topics",
        "/camera/image_raw,/imu",
    ]);
    assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
    assert!(
        err.contains("--slop") && err.contains("distinct stamp"),
        "{err}"
    );
}

#[test]
fn a_bare_slop_far_above_the_fast_period_is_kept_and_warned_about() {
    let dir = tempdir("slop-unit");
    let bag = dir.join("good.mcap");
    write_bag(&bag, |k| WALL + k * 5 * MS);
    let b = bag.to_str().unwrap();
    let sync = |slop: &str| {
        let (code, out, err, _) = run(&[
            "sync",
            b,
            "--topics",
            "/camera/image_raw,/imu",
            "--slop",
            slop,
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    // 30 s against the IMU's 5 ms period: warned, still emulated with 30 s.
    let j = sync("30");
    assert_eq!(j["slop_ns"].as_i64(), Some(30_000_000_000));
    let w = j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "slop_unit_suspect")
        .unwrap_or_else(|| panic!("{j}"));
    assert!(
        w["message"]
            .as_str()
            .unwrap()
            .contains("did you mean 30ms?"),
        "{w}"
    );
    // With a unit, or a bare value within ten periods: no warning.
    assert!(codes(&sync("30s")).is_empty());
    assert!(codes(&sync("0.02")).is_empty());
}
