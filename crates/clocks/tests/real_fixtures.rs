//! Checks against fixtures cut from the shared bags (see tests/data/README.md); expected values
//! are read from the bags' truth files (copied beside the fixtures, `tests/data/truth/`), with
//! the tolerances `../shared/acceptance/check.py` uses.

use bagscope_clocks::*;
use serde_json::Value;

fn load(name: &str) -> Vec<TopicTimes> {
    let path = format!("{}/tests/data/{}", env!("CARGO_MANIFEST_DIR"), name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn truth(bag: &str) -> Value {
    let path = format!(
        "{}/tests/data/truth/{bag}.truth.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A time in seconds from the truth, in nanoseconds.
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap() * 1e9).round() as i64
}

const MS: i64 = 1_000_000;

#[test]
fn sensors_one_mode_and_lidar_lag() {
    let r = analyze(
        &load("sensors_camera_lidar.json"),
        &ClocksOptions::default(),
    );
    let cam = r.topic("/camera/image_raw").unwrap();
    assert_eq!(cam.axis, Axis::Wall);
    assert_eq!(cam.lag_modes_ns.len(), 1, "{:?}", cam.lag_modes_ns);
    let t = truth("sensors");
    assert!(t["bimodal_offset_s"].is_null());
    let lidar = r.topic("/lidar/points").unwrap();
    let lag = |topic: &str| ns(&t["receive_lag_s"][topic]);
    assert!((lidar.lag_ns.unwrap().p50 - lag("/lidar/points")).abs() <= 6 * MS);
    assert!((cam.lag_ns.unwrap().p50 - lag("/camera/image_raw")).abs() <= 6 * MS);
    assert!(!r.split);
}

#[test]
fn sensors_bimodal_two_modes_12ms_apart() {
    let r = analyze(
        &load("sensors_bimodal_camera.json"),
        &ClocksOptions::default(),
    );
    let m = &r.topic("/camera/image_raw").unwrap().lag_modes_ns;
    let offset = ns(&truth("sensors_bimodal")["bimodal_offset_s"]);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(
        ((m[1] - m[0]) - offset).abs() < 3 * MS,
        "{m:?}, offset {offset}"
    );
}

#[test]
fn arm_split_is_split() {
    arm_against_truth(&load("arm_split_sub.json"), "arm_split");
}

/// Axes, split and sim rate of an arm fixture against its bag's truth.
fn arm_against_truth(times: &[TopicTimes], bag: &str) {
    let r = analyze(times, &ClocksOptions::default());
    let t = truth(bag);
    assert_eq!(r.split, t["split_clock"].as_bool().unwrap(), "{bag}");
    let axis = |name: &str| match name {
        "wall" => Axis::Wall,
        "sim" => Axis::Sim,
        other => panic!("axis {other} in the truth"),
    };
    let axes = t["clock_axes"].as_object().unwrap();
    assert!(!axes.is_empty());
    for (topic, want) in axes {
        let got = r.topic(topic).unwrap_or_else(|| panic!("{bag}: {topic}"));
        assert_eq!(got.axis, axis(want.as_str().unwrap()), "{bag} {topic}");
    }
    // Headerless topics the fixture kept (arm_sim_sub has none of them).
    for topic in t["headerless_topics"].as_array().unwrap() {
        let topic = topic.as_str().unwrap();
        if times.iter().any(|x| x.topic == topic) {
            assert_eq!(r.topic(topic).unwrap().axis, Axis::None, "{bag} {topic}");
        }
    }
    let rtf = t["sim_rtf"].as_f64().unwrap();
    assert!(
        (r.sim_clock.as_ref().unwrap().rate - rtf).abs() < 0.01,
        "{bag}"
    );
}

#[test]
fn arm_sim_rate() {
    arm_against_truth(&load("arm_sim_sub.json"), "arm_sim");
}

#[test]
fn sim_reset_one_jump_each() {
    let r = analyze(&load("sim_reset_sub.json"), &ClocksOptions::default());
    let t = truth("sim_reset");
    let reset = t["reset_log_time_ns"].as_i64().unwrap();
    let topics = t["topics_with_backward_jump"].as_array().unwrap();
    assert!(!topics.is_empty());
    for name in topics {
        let name = name.as_str().unwrap();
        let j = &r.topic(name).unwrap().backward_jumps;
        assert_eq!(j.len(), 1, "{name}");
        assert!((j[0].log_time_ns - reset).abs() < 50 * MS, "{name} {j:?}");
    }
    assert_eq!(r.sim_clock.as_ref().unwrap().epochs.len(), 2);
}
