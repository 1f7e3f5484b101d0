//! Checks against fixtures cut from the shared bags (see tests/data/README.md); expected values
//! are those of the bags' truth files.

use bagscope_clocks::*;

fn load(name: &str) -> Vec<TopicTimes> {
    let path = format!("{}/tests/data/{}", env!("CARGO_MANIFEST_DIR"), name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
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
    let lidar = r.topic("/lidar/points").unwrap();
    assert!((lidar.lag_ns.unwrap().p50 - 90 * MS).abs() <= 6 * MS);
    assert!((cam.lag_ns.unwrap().p50 - 10 * MS).abs() <= 6 * MS);
    assert!(!r.split);
}

#[test]
fn sensors_bimodal_two_modes_12ms_apart() {
    let r = analyze(
        &load("sensors_bimodal_camera.json"),
        &ClocksOptions::default(),
    );
    let m = &r.topic("/camera/image_raw").unwrap().lag_modes_ns;
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(((m[1] - m[0]) - 12 * MS).abs() <= 3 * MS, "{m:?}");
}

#[test]
fn arm_split_is_split() {
    let r = analyze(&load("arm_split_sub.json"), &ClocksOptions::default());
    assert!(r.split);
    assert_eq!(r.topic("/arm_cmd").unwrap().axis, Axis::Wall);
    assert_eq!(r.topic("/joint_states").unwrap().axis, Axis::Sim);
    assert_eq!(r.topic("/clock").unwrap().axis, Axis::Sim);
    assert_eq!(r.topic("/gripper_cmd").unwrap().axis, Axis::None);
    assert!((r.sim_clock.as_ref().unwrap().rate - 0.9).abs() < 0.01);
}

#[test]
fn arm_sim_rate() {
    let r = analyze(&load("arm_sim_sub.json"), &ClocksOptions::default());
    assert!(!r.split);
    assert_eq!(r.topic("/arm_cmd").unwrap().axis, Axis::Sim);
    assert_eq!(r.topic("/joint_states").unwrap().axis, Axis::Sim);
    assert!((r.sim_clock.as_ref().unwrap().rate - 0.9).abs() < 0.01);
}

#[test]
fn sim_reset_one_jump_each() {
    let r = analyze(&load("sim_reset_sub.json"), &ClocksOptions::default());
    let reset = 1_764_460_809_500_000_000i64;
    for name in ["/clock", "/joint_states"] {
        let j = &r.topic(name).unwrap().backward_jumps;
        assert_eq!(j.len(), 1, "{name}");
        assert!((j[0].log_time_ns - reset).abs() < 100 * MS, "{name} {j:?}");
    }
    assert_eq!(r.sim_clock.as_ref().unwrap().epochs.len(), 2);
}
