//! End-to-end tests of the `bagscope` binary against ground truth.
//!
//! * The bags in the repo's `bags/` (written by `bagscope synth`, truth beside them) are always
//!   available and always checked.
//! * `../shared/` (independent writers' bags, the upstream message_filters vectors, third-party
//!   MCAP files) exists next to the project's own checkout; a user's clone has no `../shared`,
//!   so those tests say so and skip, but fail when `CI` is set.
//!
//! The comparisons are made by `../shared/acceptance/check.py` where it exists (its tolerances
//! come from the truth); the shipped bags are also compared here, with the same tolerances
//! (`check_repo_bags_here`), so a clone without `../shared` checks them too.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::run;
use common::{bin, root, tempdir};

fn shared() -> Option<PathBuf> {
    common::shared_path("", "acceptance/check.py")
}

fn check_py(area: &str, dir: &Path) {
    let Some(shared) = shared() else { return };
    let out = Command::new("python3")
        .arg(shared.join("acceptance/check.py"))
        .args(["--bin", bin(), area])
        .arg(dir)
        .output()
        .expect("python3 is needed for the acceptance checks");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        out.status.success(),
        "check.py {area} {}: {}\n{}",
        dir.display(),
        stdout.lines().last().unwrap_or(""),
        failed.join("\n")
    );
}

fn shared_bags() -> Option<PathBuf> {
    shared().map(|s| s.join("bags"))
}

#[test]
fn info_on_shared_bags() {
    if let Some(d) = shared_bags() {
        check_py("info", &d);
    }
}

#[test]
fn clocks_on_shared_bags() {
    if let Some(d) = shared_bags() {
        check_py("clocks", &d);
    }
}

#[test]
fn sync_on_shared_bags() {
    if let Some(d) = shared_bags() {
        check_py("sync", &d);
    }
}

#[test]
fn match_on_shared_bags() {
    if let Some(d) = shared_bags() {
        check_py("match", &d);
    }
}

#[test]
fn checks_on_shared_bags() {
    if let Some(d) = shared_bags() {
        check_py("checks", &d);
    }
}

/// Every upstream vector is reproduced through the CLI, for all seven policies: `check.py
/// golden` passes each bag the flags of its truth file (`--epsilon`, `--rate-config`, ...).
#[test]
fn sync_golden_vectors_through_the_cli() {
    let Some(shared) = shared() else { return };
    let out = Command::new("python3")
        .arg(shared.join("acceptance/check.py"))
        .args(["--bin", bin(), "golden"])
        .arg(shared.join("sync-golden/bags"))
        .output()
        .expect("python3 is needed for the acceptance checks");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let passed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("ok")).collect();
    // Vector bags end with the upstream policy's name; the two C++-only policies included.
    for (suffix, at_least) in [
        ("__cpp_approximate_epsilon_time.mcap", 151),
        ("__cpp_latest_time.mcap", 38),
    ] {
        let n = passed.iter().filter(|l| l.contains(suffix)).count();
        assert!(n >= at_least, "{n} {suffix} vectors reproduced");
    }
    assert!(passed.len() >= 407, "{} vectors reproduced", passed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn corpus_conformance_and_malformed_files() {
    if let Some(s) = shared() {
        check_py("corpus", &s.join("corpus"));
    }
}

#[test]
fn repo_bags_against_their_truth() {
    let bags = root().join("bags");
    for area in ["info", "clocks", "sync", "match", "checks"] {
        check_py(area, &bags);
    }
    // The same comparisons made here, with check.py's tolerances: a user's clone has no
    // check.py, and the shipped bags are checked there too.
    check_repo_bags_here(&bags);
}

/// `bagscope ARGS --json`, which must finish (exit 0, or 3 with warnings): its JSON.
fn json_of(args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.push("--json");
    let (code, out, err) = run(&args);
    assert!(matches!(code, 0 | 3), "{args:?}: exit {code}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// check.py's comparisons for the `arm`, `sensors` and `epoch` truths of `dir`.
fn check_repo_bags_here(dir: &Path) {
    use serde_json::Value;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".truth.json"))
        .collect();
    files.sort();
    let topic = |out: &Value, name: &str| -> Value {
        out["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["topic"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no topic {name} in {out}"))
    };
    let f = |v: &Value| v.as_f64().unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for file in &files {
        let t: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let bag = dir.join(t["bag"].as_str().unwrap());
        let b = bag.to_str().unwrap();
        let kind = t["kind"].as_str().unwrap();
        kinds.insert(kind.to_string());
        let what = |k: &str| format!("{}: {k}", file.display());
        if let Some(counts) = t["counts"].as_object() {
            let info = json_of(&["info", b]);
            for (name, n) in counts {
                assert_eq!(topic(&info, name)["count"], *n, "{}", what(name));
            }
            for (name, hz) in t["rates_hz"].as_object().into_iter().flatten() {
                let got = f(&topic(&info, name)["rate_hz"]);
                assert!((got - f(hz)).abs() <= 0.03 * f(hz), "{}", what(name));
            }
        }
        match kind {
            "arm" => {
                let c = json_of(&["clocks", b]);
                for (name, axis) in t["clock_axes"].as_object().unwrap() {
                    assert_eq!(topic(&c, name)["axis"], *axis, "{}", what(name));
                }
                for name in t["headerless_topics"].as_array().unwrap() {
                    let name = name.as_str().unwrap();
                    assert_eq!(topic(&c, name)["axis"], "none", "{}", what(name));
                }
                assert_eq!(c["split"], t["split_clock"], "{}", what("split"));
                if let Some(rtf) = t["sim_rtf"].as_f64() {
                    let rate = f(&c["sim_clock"]["rate"]);
                    assert!((rate - rtf).abs() < 0.01, "{}", what("sim rate"));
                }
                let cmd = t["command_topic"].as_str().unwrap();
                let resp = t["response_topic"].as_str().unwrap();
                let m = json_of(&["match", b, "--command", cmd, "--response", resp]);
                let delay = m["delay_ns"].as_i64().unwrap();
                let want = (f(&t["delay_s"]) * 1e9).round() as i64;
                assert!((delay - want).abs() <= 2_000_000, "{}", what("delay"));
                let (before, after) = (f(&m["error_before"]["rms"]), f(&m["error_after"]["rms"]));
                assert!(after < before / 3.0, "{}", what("correction"));
                if t["split_clock"] == true {
                    assert!(!m["clock_mapping"].is_null(), "{}", what("mapping"));
                }
                let joints = t["joints"].as_array().unwrap();
                for (j, bias) in joints.iter().zip(t["bias_rad"].as_array().unwrap()) {
                    let e = f(&m["error_after"]["per_joint"][j.as_str().unwrap()]);
                    let bias = f(bias).abs();
                    let ok = if bias > 0.0 {
                        (e - bias).abs() < 0.005
                    } else {
                        e < 0.01
                    };
                    assert!(ok, "{}: {e} (bias {bias})", what("residual"));
                }
            }
            "sensors" => {
                let c = json_of(&["clocks", b]);
                let lag = topic(&c, "/lidar/points")["lag_ns"]["p50"]
                    .as_i64()
                    .unwrap();
                let want = f(&t["receive_lag_s"]["/lidar/points"]) * 1e9;
                assert!((lag as f64 - want).abs() < 6e6, "{}", what("lidar lag"));
                let modes: Vec<i64> = topic(&c, "/camera/image_raw")["lag_modes_ns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m.as_i64().unwrap())
                    .collect();
                match t["bimodal_offset_s"].as_f64() {
                    Some(o) => assert!(
                        modes.len() == 2 && ((modes[1] - modes[0]) as f64 - o * 1e9).abs() < 3e6,
                        "{}: {modes:?}",
                        what("bimodal")
                    ),
                    None => assert_eq!(modes.len(), 1, "{}", what("unimodal")),
                }
                let pair = |k: &str| {
                    let p = t[k].as_array().unwrap();
                    format!("{},{}", p[0].as_str().unwrap(), p[1].as_str().unwrap())
                };
                let exact = pair("exact_pair");
                let s = json_of(&[
                    "sync", b, "--topics", &exact, "--policy", "exact", "--queue", "10",
                ]);
                assert!(f(&s["match_rate"]) >= 0.99, "{}", what("exact"));
                let approx = pair("approx_pair");
                let r = json_of(&["sync", b, "--topics", &approx, "--recommend"]);
                let rec = &r["recommendation"];
                let half = f(&t["approx_pair_half_fast_period_s"]) * 1e9;
                let upper = if t["bimodal_offset_s"].is_null() {
                    1.3
                } else {
                    1.6
                };
                let slop = f(&rec["slop_ns"]);
                assert!(
                    (0.9 * half..=upper * half).contains(&slop),
                    "{}: {slop} vs half period {half}",
                    what("slop")
                );
                let q = rec["queue_size"].as_u64().unwrap();
                assert!(
                    q >= t["queue_rule_min"].as_u64().unwrap(),
                    "{}",
                    what("queue")
                );
                assert!(f(&rec["match_rate"]) >= 0.9, "{}", what("rate"));
                // The recommendation replayed, and the queue cliff below it.
                let slop_arg = format!("{}ns", slop as i64);
                let replay = |queue: &str| {
                    let args = [
                        "sync",
                        b,
                        "--topics",
                        &approx,
                        "--policy",
                        "approx-py",
                        "--slop",
                        &slop_arg,
                        "--queue",
                        queue,
                    ];
                    f(&json_of(&args)["match_rate"])
                };
                assert!(replay(&q.to_string()) >= 0.9, "{}", what("replayed"));
                assert!(replay("1") < 0.5, "{}", what("queue cliff"));
                let faults = [
                    ("image_step_too_small", &t["image_faults"]["step_too_small"]),
                    (
                        "image_data_size_mismatch",
                        &t["image_faults"]["data_size_mismatch"],
                    ),
                    (
                        "camera_info_uncalibrated",
                        &t["camera_info_faults"]["uncalibrated_k0_zero"],
                    ),
                    (
                        "camera_info_frame_mismatch",
                        &t["camera_info_faults"]["frame_id_mismatch"],
                    ),
                ];
                let ch = json_of(&["check", b]);
                for (code, want) in faults {
                    let mut got: Vec<u64> = ch["findings"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|x| x["code"] == code)
                        .map(|x| x["index"].as_u64().unwrap())
                        .collect();
                    got.sort_unstable();
                    got.dedup();
                    let want: Vec<u64> = want
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect();
                    assert_eq!(got, want, "{}", what(code));
                }
            }
            "epoch" => {
                let c = json_of(&["clocks", b]);
                let reset = t["reset_log_time_ns"].as_i64().unwrap();
                for name in t["topics_with_backward_jump"].as_array().unwrap() {
                    let jumps = topic(&c, name.as_str().unwrap())["backward_jumps"].clone();
                    let jumps = jumps.as_array().unwrap();
                    assert_eq!(jumps.len(), 1, "{}", what("jumps"));
                    let at = jumps[0]["log_time_ns"].as_i64().unwrap();
                    assert!((at - reset).abs() < 50_000_000, "{}", what("reset"));
                }
                let epochs = c["sim_clock"]["epochs"].as_array().unwrap().len();
                assert_eq!(epochs, 2, "{}", what("epochs"));
            }
            other => panic!("{}: unknown kind {other}", file.display()),
        }
    }
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    assert_eq!(
        kinds,
        ["arm", "epoch", "sensors"],
        "the shipped bags' truths"
    );
}

/// The analyses against ground truth at other rates, delays, lags and real-time factors than
/// the shipped bags' (the acceptance bags are checked again with other parameters after each
/// hand-in): `synth` writes each variant and its truth, check.py compares.
#[test]
fn parameter_variants_against_their_truth() {
    let dir = tempdir("variants");
    let d = dir.to_str().unwrap();
    let variants: &[&[&str]] = &[
        // Slow commands, dense state, a long delay.
        &[
            "arm_wall",
            "--name",
            "v_wall_slow",
            "--command-hz",
            "10",
            "--state-hz",
            "200",
            "--delay",
            "0.12",
        ],
        // Fast commands, a short delay.
        &[
            "arm_wall",
            "--name",
            "v_wall_fast",
            "--command-hz",
            "50",
            "--state-hz",
            "250",
            "--delay",
            "0.015",
            "--seed",
            "5",
        ],
        &[
            "arm_sim",
            "--name",
            "v_sim_half",
            "--rtf",
            "0.5",
            "--delay",
            "0.08",
        ],
        &[
            "arm_sim",
            "--name",
            "v_sim_fast",
            "--rtf",
            "1.6",
            "--delay",
            "0.03",
            "--state-hz",
            "60",
            "--seed",
            "9",
        ],
        &[
            "arm_split",
            "--name",
            "v_split",
            "--rtf",
            "1.25",
            "--delay",
            "0.14",
            "--duration",
            "30",
        ],
        &[
            "arm_ack",
            "--name",
            "v_ack",
            "--delay",
            "0.075",
            "--command-hz",
            "10",
            "--duration",
            "20",
        ],
        // A faster camera and lidar, a later lidar.
        &[
            "sensors",
            "--name",
            "v_sensors",
            "--camera-hz",
            "30",
            "--lidar-hz",
            "15",
            "--imu-hz",
            "200",
            "--image-lag",
            "0.02",
            "--lidar-lag",
            "0.15",
            "--seed",
            "4",
        ],
        // The lidar faster than the camera, a wider second mode.
        &[
            "sensors_bimodal",
            "--name",
            "v_bimodal",
            "--camera-hz",
            "15",
            "--lidar-hz",
            "20",
            "--bimodal-offset",
            "0.02",
            "--lidar-lag",
            "0.2",
        ],
        // A reset early in a slower simulation, and one late in a faster one with sparse
        // joint states.
        &[
            "sim_reset",
            "--name",
            "v_reset_early",
            "--reset-at",
            "1.5",
            "--rtf",
            "0.6",
            "--duration",
            "12",
        ],
        &[
            "sim_reset",
            "--name",
            "v_reset_late",
            "--reset-at",
            "27.2",
            "--rtf",
            "1.8",
            "--state-hz",
            "25",
            "--duration",
            "28",
            "--seed",
            "3",
        ],
    ];
    for v in variants {
        let (code, _, err) = run(&[&["synth"], *v, &["-o", d]].concat());
        assert_eq!(code, 0, "synth {v:?}: {err}");
    }
    // The parameters reached the truth (a variant that silently kept the defaults would
    // only re-check the shipped bags).
    let truth = |n: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join(format!("{n}.truth.json"))).unwrap())
            .unwrap()
    };
    assert_eq!(truth("v_wall_slow")["delay_s"], 0.12);
    assert_eq!(truth("v_wall_slow")["counts"]["/arm_cmd"], 240);
    assert_eq!(truth("v_sim_half")["sim_rtf"], 0.5);
    assert_eq!(truth("v_sensors")["rates_hz"]["/lidar/points"], 15.0);
    assert_eq!(truth("v_bimodal")["approx_pair_half_fast_period_s"], 0.025);
    assert_eq!(truth("v_bimodal")["queue_rule_min"], 4);
    assert_eq!(truth("v_reset_early")["reset_log_time_rel_s"], 1.5);
    assert_eq!(truth("v_reset_late")["sim_rtf"], 1.8);
    // What check.py does not look at for a reset: the sim clock's rate (its truth, within 1%,
    // the tolerance check.py gives the arm bags') and where the second epoch starts (within
    // one clock period).
    for name in ["v_reset_early", "v_reset_late"] {
        let t = truth(name);
        let bag = dir.join(name);
        let (code, out, err) = run(&["clocks", bag.to_str().unwrap(), "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let sc = &v["sim_clock"];
        let rtf = t["sim_rtf"].as_f64().unwrap();
        let rate = sc["rate"].as_f64().unwrap();
        assert!(
            (rate - rtf).abs() < 0.01 * rtf,
            "{name}: rate {rate}, truth {rtf}"
        );
        let epochs = sc["epochs"].as_array().unwrap();
        assert_eq!(epochs.len(), 2, "{name}");
        let start = epochs[1]["start_log_time_ns"].as_i64().unwrap();
        let reset = t["reset_log_time_ns"].as_i64().unwrap();
        assert!(
            (start - reset).abs() <= 10_000_000,
            "{name}: epoch at {start}, reset {reset}"
        );
    }
    if shared().is_none() {
        return;
    }
    for area in ["info", "clocks", "sync", "match", "checks"] {
        check_py(area, &dir);
    }
}

fn repo_bag(name: &str) -> String {
    root().join("bags").join(name).display().to_string()
}

#[test]
fn exit_code_contract() {
    // 2: usage.
    let (code, _, _) = run(&["info"]);
    assert_eq!(code, 2);
    let (code, _, _) = run(&["no-such-command"]);
    assert_eq!(code, 2);
    // 1: error, naming the file.
    let (code, _, err) = run(&["info", "/nonexistent/bag.mcap", "--json"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/bag.mcap"), "{err}");
    let dir = tempdir("notmcap");
    let f = dir.join("x.mcap");
    std::fs::write(&f, b"hello, not an mcap file").unwrap();
    let (code, _, err) = run(&["info", f.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("not an MCAP file") && err.contains("x.mcap"),
        "{err}"
    );
    // 1: unknown topic lists what exists.
    let (code, _, err) = run(&["sync", &repo_bag("sensors"), "--topics", "/a,/b", "--json"]);
    assert_eq!(code, 1);
    assert!(err.contains("/camera/image_raw"), "{err}");
    // 0: a clean bag.
    let (code, out, _) = run(&["info", &repo_bag("sensors"), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["message_count"], 3000);
}

/// Cut a repo bag at several offsets: never a panic; exit 1 with the file named, or exit 3
/// with fewer messages and a `truncated` warning. Cut inside the summary (the last byte
/// missing) every message is still read, and it is still a cut file: exit 3, `truncated`.
#[test]
fn truncated_copies_recover_or_fail_cleanly() {
    let src = root().join("bags/arm_wall/arm_wall.mcap");
    let bytes = std::fs::read(&src).unwrap();
    let (_, full, _) = run(&["info", src.to_str().unwrap(), "--json"]);
    let full: serde_json::Value = serde_json::from_str(&full).unwrap();
    let total = full["message_count"].as_u64().unwrap();
    let dir = tempdir("cut");
    let mut last = 0;
    let fracs = [0.0001, 0.01, 0.1, 0.33, 0.5, 0.77, 0.99, 0.9999];
    let cuts = fracs
        .iter()
        .map(|f| ((bytes.len() as f64) * f) as usize)
        .chain([bytes.len() - 1]);
    for cut in cuts {
        let f = dir.join(format!("cut_{cut}.mcap"));
        std::fs::write(&f, &bytes[..cut]).unwrap();
        let (code, out, err) = run(&["info", f.to_str().unwrap(), "--json"]);
        assert!(!err.contains("panicked"), "{err}");
        if cut == bytes.len() - 1 {
            // Only the closing magic's last byte is missing: every message is read.
            assert_eq!(code, 3, "cut before the last byte: {err}");
        }
        match code {
            1 => assert!(err.contains(&format!("cut_{cut}.mcap")), "{err}"),
            3 => {
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                let n = v["message_count"].as_u64().unwrap();
                assert!(n <= total);
                assert!(n >= last, "a longer prefix recovered fewer messages");
                last = n;
                let codes: Vec<&str> = v["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|w| w["code"].as_str())
                    .collect();
                assert!(codes.contains(&"truncated"), "{codes:?}");
                if cut == bytes.len() - 1 {
                    assert_eq!(n, total, "only the footer's last byte is missing");
                }
            }
            other => panic!("exit {other} for a bag cut at {cut}: {err}"),
        }
    }
}

#[test]
fn json_output_is_deterministic() {
    let bag = repo_bag("arm_sim");
    for args in [
        vec!["info", bag.as_str(), "--json"],
        vec!["clocks", bag.as_str(), "--json"],
        vec![
            "match",
            bag.as_str(),
            "--command",
            "/arm_cmd",
            "--response",
            "/joint_states",
            "--json",
        ],
    ] {
        let a = run(&args);
        let b = run(&args);
        assert_eq!(a.0, 0, "{args:?}: exit {}: {}", a.0, a.2);
        assert!(a.1.starts_with('{'), "{args:?}: no JSON");
        assert_eq!(a.1, b.1, "{args:?} differs between runs");
    }
}

/// The shipped bags are exactly what `bagscope synth` writes: anyone can regenerate them.
#[test]
fn shipped_bags_are_reproducible() {
    let dir = tempdir("synth");
    let (code, _, err) = run(&["synth", "all", "-o", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for name in [
        "arm_wall",
        "arm_sim",
        "arm_split",
        "arm_ack",
        "sensors",
        "sensors_bimodal",
        "sim_reset",
    ] {
        let a = std::fs::read(dir.join(name).join(format!("{name}.mcap"))).unwrap();
        let b = std::fs::read(root().join("bags").join(name).join(format!("{name}.mcap"))).unwrap();
        assert!(a == b, "bags/{name} differs from what synth writes now; regenerate with `bagscope synth all -o bags`");
        let ta = std::fs::read_to_string(dir.join(format!("{name}.truth.json"))).unwrap();
        let tb = std::fs::read_to_string(root().join("bags").join(format!("{name}.truth.json")))
            .unwrap();
        assert_eq!(ta, tb);
    }
}

/// The axes of real third-party bags agree with what `corpus/MANIFEST.md` says about them.
#[test]
fn clocks_on_real_corpus_bags_agree_with_manifest() {
    let Some(s) = shared() else { return };
    let ros2 = s.join("corpus/ros2");
    let json = |p: PathBuf| -> serde_json::Value {
        let (code, out, err) = run(&["clocks", p.to_str().unwrap(), "--json"]);
        assert!(code == 0 || code == 3, "exit {code}: {err}");
        serde_json::from_str(&out).unwrap()
    };
    let topic = |v: &serde_json::Value, name: &str| -> serde_json::Value {
        v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["topic"] == name)
            .cloned()
            .unwrap()
    };
    // reductstore_agent: header stamps on a 2023 wall clock, log time on 2026: a constant
    // offset of about +72,586,745 s on every stamped topic, flagged as an offset, not as lag.
    let v = json(ros2.join("reductstore_agent/testdata/demo.mcap"));
    for t in [
        "/nissan/gps/duro/imu",
        "/nissan/gps/duro/mag",
        "/nissan/gps/duro/current_pose",
    ] {
        let t = topic(&v, t);
        assert_eq!(t["axis"], "wall");
        let off = t["clock_offset_ns"]
            .as_i64()
            .expect("clock offset reported");
        assert!(
            (off as f64 / 1e9 + 72_586_745.0).abs() < 10.0,
            "offset {off}"
        );
        assert!(
            t["lag_ns"].is_null(),
            "an offset must not be reported as lag"
        );
    }
    assert_eq!(topic(&v, "/nissan/vehicle_speed")["axis"], "none");
    // rosbag2parquet: header.stamp = 0 (unset).
    let v = json(ros2.join("rosbag2parquet/testdata/array_msgs/array_msgs_0.mcap"));
    assert_eq!(topic(&v, "/one_shot/joint_state")["axis"], "zero");
    // amber: sim time on both axes (recorded with --use-sim-time), zstd per message.
    let v = json(ros2.join("amber/tests/rosbag/soccer_goal"));
    assert_eq!(v["recorder_axis"], "sim");
    assert_eq!(topic(&v, "/camera/image_raw")["axis"], "sim");
    assert_eq!(v["split"], false);
    // The same file alone, without the metadata.yaml that says its payloads are zstd frames
    // (and without rosbag2's metadata inside it): read as stored, since a payload that only
    // starts like a zstd frame is not decompressed (a 130 kB one can hold 4 GiB); the stamps
    // do not decode, and a hint says why.
    let v = json(ros2.join("amber/tests/rosbag/soccer_goal/soccer_goal_12.mcap"));
    assert_eq!(topic(&v, "/camera/image_raw")["axis"], "none");
    let hint = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "unsupported_compression")
        .unwrap_or_else(|| panic!("no hint: {v}"));
    assert!(hint["message"]
        .as_str()
        .unwrap()
        .contains("compression_mode: MESSAGE"));
    assert_eq!(hint["data_loss"], false);
}

/// `info --fast` (from the summary alone, or from the index records' headers and the few chunks
/// that can hold each topic's extremes) must give exactly what the full read of every log time
/// gives, or fall back to that read.
#[test]
fn info_fast_agrees_with_the_full_read() {
    let mut bags: Vec<PathBuf> = std::fs::read_dir(root().join("bags"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    if let Some(s) = shared_bags() {
        bags.extend(
            std::fs::read_dir(&s)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "mcap")),
        );
    }
    // Chunks whose time range is wrong (the first field, message_start_time, set past every
    // message): in the data section's chunk header, the fast paths must not prune with it; in
    // the summary's Chunk Index too, neither the summary nor the walk may answer. Both must
    // fall back to the full read (or give the same answers).
    let dir = tempdir("fastinfo");
    let src = root().join("bags/arm_split/arm_split.mcap");
    let clean = std::fs::read(&src).unwrap();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let first_record = |b: &[u8], from: usize, op: u8| -> usize {
        let mut pos = from;
        while b[pos] != op {
            pos += 9 + u64_at(b, pos + 1) as usize;
        }
        pos
    };
    let mut header_bad = clean.clone();
    let at = first_record(&header_bad, 8, 0x06);
    header_bad[at + 9..at + 17].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut both_bad = header_bad.clone();
    let summary_start = u64_at(&both_bad, both_bad.len() - 8 - 29 + 9) as usize;
    let at = first_record(&both_bad, summary_start, 0x08);
    both_bad[at + 9..at + 17].copy_from_slice(&u64::MAX.to_le_bytes());
    let header_bad_path = dir.join("bad_chunk_header_times.mcap");
    let bad = dir.join("bad_chunk_times_everywhere.mcap");
    std::fs::write(&header_bad_path, &header_bad).unwrap();
    std::fs::write(&bad, &both_bad).unwrap();
    bags.push(header_bad_path);
    bags.push(bad.clone());
    bags.sort();

    let json = |args: &[&str]| -> serde_json::Value {
        let (code, out, err) = run(args);
        assert!(code == 0 || code == 3, "{args:?}: exit {code}: {err}");
        serde_json::from_str(&out).unwrap()
    };
    let (mut fast_used, mut summary_used) = (0, 0);
    for b in &bags {
        let p = b.to_str().unwrap();
        let full = json(&["info", p, "--json"]);
        let fast = json(&["info", p, "--fast", "--json"]);
        if fast["cadence"] == false {
            fast_used += 1;
        }
        if fast["summary_only"] == true {
            summary_used += 1;
        }
        if b == &bad {
            assert_eq!(
                fast["cadence"], true,
                "inconsistent chunk times must fall back"
            );
        }
        for k in ["message_count", "start_ns", "end_ns", "duration_ns"] {
            assert_eq!(full[k], fast[k], "{p}: {k}");
        }
        let (ft, st) = (
            full["topics"].as_array().unwrap(),
            fast["topics"].as_array().unwrap(),
        );
        assert_eq!(ft.len(), st.len(), "{p}");
        for (a, f) in ft.iter().zip(st) {
            for k in [
                "topic",
                "count",
                "first_log_time_ns",
                "last_log_time_ns",
                "rate_hz",
            ] {
                assert_eq!(a[k], f[k], "{p} {}: {k}", a["topic"]);
            }
        }
    }
    assert!(
        fast_used >= 4 && summary_used >= 4,
        "the fast paths answered only {fast_used} (from the summary alone: {summary_used}) of {} bags",
        bags.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
