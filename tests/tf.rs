//! `bagscope tf` (tf2_ros::MessageFilter emulation) and `sync --tf-target`: the suite's TF case
//! against its manifest, synth bags carrying /tf at 10–100 Hz (also on a topic not named /tf),
//! each message's readiness against the one its construction implies, and byte-identical
//! repeated runs.

use std::path::Path;

use serde_json::Value;

mod common;
use common::run;
use common::tempdir;

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(&a)).unwrap()
}

fn topic<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic"] == name)
        .unwrap_or_else(|| panic!("{name} not in report"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

#[test]
fn suite_tf_case_matches_its_manifest() {
    let dir = tempdir("suite");
    ok(&["synth", "--suite", dir.to_str().unwrap()]);
    let case = "09_tf_gap";
    let m: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{case}.manifest.json"))).unwrap(),
    )
    .unwrap();
    let bag = dir.join(case);
    let checks = m["tf_checks"].as_array().unwrap();
    assert!(checks.len() >= 3);
    for chk in checks {
        let name = chk["name"].as_str().unwrap();
        let mut args = vec!["tf", bag.to_str().unwrap()];
        args.extend(
            chk["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        );
        let r = json(&args);
        for (t, e) in chk["expect"].as_object().unwrap() {
            let got = topic(&r, t);
            for f in ["ready_on_arrival", "ready_after_wait"] {
                assert_eq!(got[f], e[f], "{name} {t} {f}");
            }
            assert_eq!(got["drops"], e["drops"], "{name} {t} drops");
            if let Some(x) = e.get("wait_max_ns") {
                assert_eq!(&got["wait_ns"]["max"], x, "{name} {t} wait max");
            }
            if let Some(x) = e.get("wait_min_ns") {
                assert_eq!(&got["wait_ns"]["min"], x, "{name} {t} wait min");
            }
        }
        for (edge, gaps) in chk["edge_gaps"].as_object().unwrap() {
            let (p, c) = edge.split_once("->").unwrap();
            let e = r["tree"]["edges"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["parent"] == p && e["child"] == c)
                .unwrap_or_else(|| panic!("{name}: edge {edge} missing"));
            assert_eq!(&e["gaps_total"], gaps, "{name} {edge} gaps");
        }
    }
}

const WALL_START_NS: i64 = 1_764_460_800_000_000_000;
const TF_LAG_NS: i64 = 1_000_000;

/// Each message's readiness from the construction: TF samples of odom->base_link are stamped on
/// a grid of `period` from WALL_START and received 1 ms later (static edges hold always). A
/// message at stamp s received at t can be transformed once the first sample stamped >= s has
/// arrived; the writer orders equal log times data-first (TF topics come last).
fn check_against_construction(evidence: &Path, period: i64, what: &str) -> usize {
    let text = std::fs::read_to_string(evidence).unwrap();
    let mut n = 0;
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["frame_id"] == "camera_link" {
            // The scenario's seeded wrong-frame fault: not in the tree.
            assert_eq!(v["reason"], "frame_unknown", "{what}: {l}");
            continue;
        }
        let s = v["stamp_ns"].as_i64().unwrap();
        let t = v["log_time_ns"].as_i64().unwrap();
        let k = (s - WALL_START_NS + period - 1).div_euclid(period);
        let tf_log = WALL_START_NS + k * period + TF_LAG_NS;
        if tf_log < t {
            assert_eq!(v["readiness"], "ready_on_arrival", "{what}: {l}");
        } else {
            assert_eq!(v["readiness"], "ready_after_wait", "{what}: {l}");
            assert_eq!(v["wait_ns"].as_i64(), Some(tf_log - t), "{what}: {l}");
        }
        n += 1;
    }
    n
}

#[test]
fn synth_bags_with_tf_at_10_to_100_hz() {
    let dir = tempdir("synth");
    let d = dir.to_str().unwrap();
    let topics = "/lidar/points,/imu/data,/camera/image_raw,/camera/camera_info";
    for (rate, sub) in [(10.0, "r10"), (50.0, "r50"), (100.0, "r100")] {
        let out = dir.join(sub);
        let rate_s = format!("{rate}");
        ok(&[
            "synth",
            "sensors_tf",
            "-o",
            out.to_str().unwrap(),
            "--tf-rate",
            &rate_s,
        ]);
        let bag = out.join("sensors_tf");
        let ev = out.join("ev.jsonl");
        let r = json(&[
            "tf",
            bag.to_str().unwrap(),
            "--target-frame",
            "odom",
            "--topics",
            topics,
            "--evidence",
            ev.to_str().unwrap(),
        ]);
        let period = (1e9 / rate) as i64;
        let n = check_against_construction(&ev, period, sub);
        assert_eq!(n, 200 + 2000 + 400 + 399);
        let lidar = topic(&r, "/lidar/points");
        assert_eq!(
            u(&lidar["ready_on_arrival"]),
            200,
            "{sub}: lidar lags 90 ms, TF is there"
        );
        let imu = topic(&r, "/imu/data");
        assert_eq!(u(&imu["dropped"]), 0, "{sub}");
        assert!(
            imu["wait_ns"]["max"].as_i64().unwrap() <= period + TF_LAG_NS,
            "{sub}"
        );
        assert_eq!(
            topic(&r, "/camera/camera_info")["drops"]["frame_unknown"],
            1
        );
        let edge = r["tree"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["child"] == "base_link")
            .unwrap();
        assert!(
            (edge["rate_hz"].as_f64().unwrap() - rate).abs() < 1e-6 * rate,
            "{sub}"
        );
        assert_eq!(edge["gaps_total"], 0);
        // Into base_link only static edges are needed: everything is ready on arrival.
        let r = json(&[
            "tf",
            bag.to_str().unwrap(),
            "--target-frame",
            "base_link",
            "--topics",
            "/imu/data,/lidar/points",
        ]);
        assert_eq!(u(&topic(&r, "/imu/data")["ready_on_arrival"]), 2000);
    }
    // The arm at 100 Hz, target through a static and a dynamic edge.
    ok(&["synth", "arm_tf", "-o", d]);
    let bag = dir.join("arm_tf");
    let ev = dir.join("arm.jsonl");
    let r = json(&[
        "tf",
        bag.to_str().unwrap(),
        "--target-frame",
        "world",
        "--topics",
        "/joint_states,/arm_cmd",
        "--evidence",
        ev.to_str().unwrap(),
    ]);
    let checked = check_against_construction(&ev, 10_000_000, "arm_tf");
    let js = topic(&r, "/joint_states");
    // Every message of both topics has its line in the evidence, each checked.
    assert_eq!(
        checked as u64,
        u(&js["messages"]) + u(&topic(&r, "/arm_cmd")["messages"])
    );
    assert!(checked > 0);
    assert_eq!(u(&js["dropped"]), 0);
    assert_eq!(
        u(&js["ready_on_arrival"]) + u(&js["ready_after_wait"]),
        u(&js["messages"])
    );
    // A headerless topic is refused up front with a warning, not silently accepted.
    let (code, out, _) = run(&[
        "tf",
        bag.to_str().unwrap(),
        "--target-frame",
        "world",
        "--topics",
        "/gripper_cmd",
        "--json",
    ]);
    assert!(code == 0 || code == 3);
    assert!(out.contains("headerless"));
}

#[test]
fn tf_topic_not_named_tf() {
    let dir = tempdir("ns");
    ok(&[
        "synth",
        "sensors_tf",
        "-o",
        dir.to_str().unwrap(),
        "--tf-topic",
        "/robot/tf",
        "--tf-rate",
        "100",
    ]);
    let bag = dir.join("sensors_tf");
    let b = bag.to_str().unwrap();
    // Default TF topics: /tf is absent, so odom is never heard of.
    let r = json(&[
        "tf",
        b,
        "--target-frame",
        "odom",
        "--topics",
        "/imu/data",
        "--queue",
        "0",
    ]);
    assert_eq!(topic(&r, "/imu/data")["drops"]["frame_unknown"], 2000);
    assert!(r["warnings"].to_string().contains("tf_topic_missing"));
    let ev = dir.join("ev.jsonl");
    let r = json(&[
        "tf",
        b,
        "--target-frame",
        "odom",
        "--topics",
        "/imu/data,/lidar/points",
        "--tf-topics",
        "/robot/tf,/tf_static",
        "--evidence",
        ev.to_str().unwrap(),
    ]);
    assert_eq!(u(&topic(&r, "/imu/data")["dropped"]), 0);
    assert_eq!(
        check_against_construction(&ev, 10_000_000, "/robot/tf"),
        2200
    );
    assert_eq!(r["tf_topics"][0]["topic"], "/robot/tf");
    // sync --tf-target through the same topic: the pairs all transform once TF is there.
    let s = json(&[
        "sync",
        b,
        "--topics",
        "/lidar/points,/imu/data",
        "--policy",
        "approx-py",
        "--slop",
        "5ms",
        "--tf-target",
        "odom",
        "--tf-topics",
        "/robot/tf,/tf_static",
    ]);
    assert!(s["sets"].as_u64().unwrap() > 150);
    assert_eq!(s["freshness"]["tf_topics"][0], "/robot/tf");
}

#[test]
fn repeated_runs_are_byte_identical() {
    let dir = tempdir("det");
    ok(&["synth", "sensors_tf", "-o", dir.to_str().unwrap()]);
    let b = dir.join("sensors_tf");
    let b = b.to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &[
            "tf",
            b,
            "--target-frame",
            "odom",
            "--topics",
            "/imu/data,/camera/camera_info",
            "--json",
        ],
        &[
            "tf",
            b,
            "--target-frame",
            "odom",
            "--topics",
            "/imu/data,/camera/camera_info",
        ],
        &[
            "sync",
            b,
            "--topics",
            "/camera/image_raw,/lidar/points",
            "--max-age",
            "120ms",
            "--anchor",
            "/lidar/points",
            "--tf-target",
            "odom",
            "--json",
        ],
    ];
    for args in runs {
        assert_eq!(ok(args), ok(args), "{args:?}");
    }
}

fn tf_edge<'a>(r: &'a Value, parent: &str, child: &str) -> &'a Value {
    r["tf_edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["parent"] == parent && e["child"] == child)
        .unwrap_or_else(|| panic!("no TF edge {parent} -> {child}: {}", r["tf_edges"]))
}

/// `clocks` reports TF timing per edge from each transform's stamp: the synthetic sensors bag's
/// odom -> base_link is stamped every 20 ms and received 1 ms later, its static edges have no
/// lag. The regular topics' entries are unchanged (the TF topics stay header-less there).
#[test]
fn clocks_reports_tf_lag_rate_and_gaps_per_edge() {
    let dir = tempdir("clocks-tf");
    ok(&[
        "synth",
        "sensors_tf",
        "-o",
        dir.to_str().unwrap(),
        "--tf-rate",
        "50",
    ]);
    let bag = dir.join("sensors_tf");
    let b = bag.to_str().unwrap();
    let r = json(&["clocks", b]);
    let e = tf_edge(&r, "odom", "base_link");
    assert_eq!(e["is_static"], false);
    assert!((e["rate_hz"].as_f64().unwrap() - 50.0).abs() < 1e-6, "{e}");
    assert_eq!(e["gaps_total"], 0);
    assert_eq!(e["lag_basis"], "direct");
    for q in ["min", "p50", "p99", "max"] {
        assert_eq!(e["lag_ns"][q].as_i64(), Some(TF_LAG_NS), "{q}: {e}");
    }
    assert_eq!(e["lag_ns"]["count"], e["samples"]);
    let s = tf_edge(&r, "base_link", "lidar");
    assert_eq!(s["is_static"], true);
    assert!(s["lag_ns"].is_null() && s["lag_basis"].is_null(), "{s}");
    let tf_topic = r["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic"] == "/tf")
        .unwrap();
    assert_eq!(tf_topic["source"], "none");

    let (code, out, err) = run(&["clocks", b]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("odom -> base_link"))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cells[3..],
        ["no", "1011", "50.00", "1.0", "1.0", "0"],
        "{line}"
    );

    // A bag without TF has an empty list.
    ok(&["synth", "sensors", "-o", dir.to_str().unwrap()]);
    let r = json(&["clocks", dir.join("sensors").to_str().unwrap()]);
    assert_eq!(r["tf_edges"], serde_json::json!([]));
}

/// A real Gazebo recording (sim stamps, wall log time, /clock): the wheel and odometry edges'
/// lags are taken through /clock, as the other topics' are, and come out at milliseconds, not
/// at the ~54 years between the two clocks.
#[test]
fn clocks_tf_edges_of_a_gazebo_recording_are_mapped_through_clock() {
    let Some(bag) = common::shared_path("corpus/ros2-more/gz_walker_surya", "metadata.yaml") else {
        return;
    };
    let r = json(&["clocks", bag.to_str().unwrap()]);
    let edges = r["tf_edges"].as_array().unwrap();
    assert_eq!(edges.len(), 7, "{edges:?}");
    let transforms: u64 = edges
        .iter()
        .filter(|e| e["is_static"] == false)
        .map(|e| u(&e["samples"]))
        .sum();
    // 1888 /tf messages: the wheels' two transforms travel together.
    assert_eq!(transforms, 1074 * 2 + 814);
    for (p, c) in [
        ("odom", "base_footprint"),
        ("base_link", "wheel_left_link"),
        ("base_link", "wheel_right_link"),
    ] {
        let e = tf_edge(&r, p, c);
        assert_eq!(e["lag_basis"], "mapped_through_clock", "{e}");
        let p50 = e["lag_ns"]["p50"].as_i64().unwrap();
        let p99 = e["lag_ns"]["p99"].as_i64().unwrap();
        assert!(p50.abs() < 5_000_000 && p99.abs() < 50_000_000, "{e}");
        assert!(e["rate_hz"].as_f64().unwrap() > 15.0, "{e}");
    }
}

/// `report` shows the TF edges in its clocks section (page and report.json).
#[test]
fn report_lists_tf_edges() {
    let dir = tempdir("report-tf");
    ok(&[
        "synth",
        "sensors_tf",
        "-o",
        dir.to_str().unwrap(),
        "--tf-rate",
        "50",
    ]);
    let bag = dir.join("sensors_tf");
    let out = dir.join("report");
    let (code, _, err) = run(&["report", bag.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(code == 0 || code == 3, "exit {code}: {err}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| odom → base\\_link | no | 1011 | 50.00 | 1.0 ms | 1.0 ms | 0 |"),
        "{md}"
    );
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(j["clocks"]["tf_edges"].as_array().unwrap().len(), 4);
}
