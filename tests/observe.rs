//! `bagscope observe`: observations checked against synthetic bags with known truth (the
//! analytic joint state, a dropped wrist frame, a simulator reset, a TF gap, an angle crossing
//! ±π), read back from the Parquet files it writes; byte-identical reruns; an MCAP bag and its
//! `.db3` form give the same observations; contract errors exit 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bagscope_synth::{write_observe, ObserveSynth, ObserveTruth};
use common::Tmp;
use serde_json::Value;

mod common;
use common::{root, run, tempdir};

const MS: i64 = 1_000_000;
const HEAD: &str = "/camera/head/image_raw";
const LEFT: &str = "/camera/left/image_raw";
const RIGHT: &str = "/camera/right/image_raw";

fn wrists(hierarchical: bool, extra: &str) -> String {
    format!(
        "anchor: {HEAD}\nmembers:\n  - name: wrists\n    policy: approx-py\n    topics: [{LEFT}, {RIGHT}]\n    queue: 5\n    slop: 15ms\n    hierarchical: {hierarchical}\nstate:\n  - topic: /joint_states\n    mode: interpolate\n    max_gap: 20ms\n    continuous_joints: [wrist_roll]\n{extra}"
    )
}

/// A table read back: rows as column name -> value.
fn table(p: &Path) -> Vec<BTreeMap<String, Value>> {
    let (names, rows) = bagscope::tables::read_parquet_rows(p).unwrap();
    rows.into_iter()
        .map(|r| names.iter().cloned().zip(r).collect())
        .collect()
}

struct Run {
    code: i32,
    json: Value,
    obs: Vec<BTreeMap<String, Value>>,
    rej: Vec<BTreeMap<String, Value>>,
    out: PathBuf,
}

/// A scenario written into a fresh temporary folder, with its truth.
struct Case {
    d: Tmp,
    bag: PathBuf,
    truth: ObserveTruth,
}

/// The `observe` scenario `o` as the bag `obs` in a fresh folder `bagscope-observe-<tag>-…`.
fn case(tag: &str, o: ObserveSynth) -> Case {
    let d = tempdir(&format!("observe-{tag}"));
    let truth = write_observe(&d, "obs", &o).unwrap();
    Case {
        bag: d.join("obs"),
        d,
        truth,
    }
}

/// [`case`] with only `frames` head frames and the defaults otherwise.
fn short_case(tag: &str, frames: u32) -> Case {
    case(
        tag,
        ObserveSynth {
            frames,
            ..Default::default()
        },
    )
}

impl Case {
    /// Writes the contract `NAME.yaml` into the case's folder.
    fn contract(&self, name: &str, text: &str) -> PathBuf {
        let p = self.d.join(format!("{name}.yaml"));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `bagscope observe BAG --contract C -o DIR/OUT EXTRA...`: (exit code, stdout, stderr).
    fn run(&self, c: &Path, out: &str, extra: &[&str]) -> (i32, String, String) {
        let out = self.d.join(out);
        let mut args = vec![
            "observe",
            self.bag.to_str().unwrap(),
            "--contract",
            c.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        run(&args)
    }

    /// [`Case::run`] with `--json`, its tables read back.
    fn observe(&self, c: &Path, out: &str) -> Run {
        self.observe_with(c, out, &[])
    }

    fn observe_with(&self, c: &Path, out: &str, extra: &[&str]) -> Run {
        observe(&self.bag, c, &self.d.join(out), extra)
    }
}

/// `bagscope observe BAG --contract C -o OUT EXTRA... --json`, its tables read back.
fn observe(bag: &Path, c: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "observe",
        bag.to_str().unwrap(),
        "--contract",
        c.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ];
    args.extend(extra);
    let (code, stdout, stderr) = run(&args);
    assert!(code == 0 || code == 3, "exit {code}: {stderr}");
    Run {
        code,
        json: serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}")),
        obs: table(&out.join("observations.parquet")),
        rej: table(&out.join("rejections.parquet")),
        out: out.to_path_buf(),
    }
}

/// The joint commands as a `hold` state entry (the `action` of the LeRobot layout).
const COMMANDS: &str = "  - topic: /joint_commands\n    mode: hold\n    max_gap: 40ms\n";

const LEROBOT_ARGS: [&str; 7] = [
    "--layout",
    "lerobot",
    "--action",
    "/joint_commands",
    "--task",
    "reach",
    "--json",
];

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn interpolated_state_is_the_analytic_state_and_angles_go_the_short_way() {
    let k = case("state", ObserveSynth::default());
    let truth = &k.truth;
    let c = k.contract("c", &wrists(false, ""));
    let r = k.observe(&c, "out");
    assert_eq!(r.code, 0);
    assert_eq!(r.json["observations"], 60);
    assert_eq!(r.obs.len(), 60);
    assert!(r.rej.is_empty(), "{:?}", r.rej);
    // The stable columns.
    for col in [
        "observation_id",
        "policy_version",
        "anchor_topic",
        "anchor_index",
        "anchor_stamp_ns",
        "clock_epoch",
        "emit_log_time_ns",
        "emit_age_ns",
        "span_ns",
        "/camera/left/image_raw.index",
        "/camera/left/image_raw.stamp_ns",
        "/camera/left/image_raw.offset_ns",
        "/camera/left/image_raw.frame_id",
        "/joint_states.position",
        "/joint_states.name",
        "/joint_states.before_stamp_ns",
        "/joint_states.after_stamp_ns",
        "/joint_states.gap_ns",
        "/joint_states.online_wait_ns",
    ] {
        assert!(
            r.obs[0].contains_key(col),
            "no column {col}: {:?}",
            r.obs[0].keys()
        );
    }
    let mut crossed = false;
    for (k, o) in r.obs.iter().enumerate() {
        assert_eq!(i(&o["anchor_index"]), k as i64);
        let s = i(&o["anchor_stamp_ns"]);
        assert_eq!(s, truth.head_stamps_ns[k]);
        let want = truth.joints.position((s - truth.origin_ns) as f64 / 1e9);
        let got: Vec<f64> = o["/joint_states.position"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9, "frame {k}: {got:?} vs {want:?}");
        }
        assert_eq!(o["/joint_states.name"][2], "wrist_roll");
        let (b, a) = (
            i(&o["/joint_states.before_stamp_ns"]),
            i(&o["/joint_states.after_stamp_ns"]),
        );
        assert!(b <= s && s <= a && a - b == 10 * MS, "frame {k}");
        assert_eq!(i(&o["/joint_states.gap_ns"]), a - b);
        // Online wait: the later sample is received 2 ms after its stamp, the head frame
        // 10 ms after its own: the share of the state period not yet covered by that lag.
        assert_eq!(
            i(&o["/joint_states.online_wait_ns"]),
            (a + 2 * MS - (s + 10 * MS)).max(0),
            "frame {k}"
        );
        assert_eq!(i(&o["/camera/left/image_raw.offset_ns"]), 2 * MS);
        assert_eq!(i(&o["/camera/right/image_raw.offset_ns"]), -3 * MS);
        assert_eq!(i(&o["span_ns"]), 5 * MS);
        assert_eq!(i(&o["emit_age_ns"]), 10 * MS + 500_000);
        assert_eq!(o["/camera/left/image_raw.frame_id"], "left_camera");
        // Samples bracketing +π: the straight line between them would pass through 0.
        let (pb, pa) = (
            truth.joints.position((b - truth.origin_ns) as f64 / 1e9)[2],
            truth.joints.position((a - truth.origin_ns) as f64 / 1e9)[2],
        );
        if pb > 3.0 && pa < -3.0 {
            crossed = true;
            assert!(
                got[2].abs() > 3.0,
                "frame {k}: {} went the long way",
                got[2]
            );
        }
    }
    assert!(crossed, "no anchor between samples on both sides of +pi");
    let s = &r.json["summary"];
    assert!(s["state"][0]["interpolation_error_rms"].as_f64().unwrap() < 1e-9);
    assert_eq!(s["emit_age_axis"], "same");

    // Byte-identical on a second run.
    let r2 = k.observe(&c, "out2");
    for f in ["observations.parquet", "rejections.parquet"] {
        assert_eq!(
            std::fs::read(r.out.join(f)).unwrap(),
            std::fs::read(r2.out.join(f)).unwrap(),
            "{f} differs between runs"
        );
    }
}

#[test]
fn a_dropped_wrist_frame_costs_exactly_one_observation() {
    let k = case(
        "drop",
        ObserveSynth {
            drop_left_frame: Some(10),
            ..Default::default()
        },
    );
    for hier in [false, true] {
        let c = k.contract(&format!("c{hier}"), &wrists(hier, ""));
        let r = k.observe(&c, &format!("out{hier}"));
        assert_eq!(r.obs.len(), 59, "hierarchical {hier}");
        assert!(r.obs.iter().all(|o| i(&o["anchor_index"]) != 10));
        let lost: Vec<(String, i64)> = r
            .rej
            .iter()
            .map(|x| (x["topic"].as_str().unwrap().to_string(), i(&x["index"])))
            .collect();
        // The head frame and the right frame of that instant; no other message lost.
        assert_eq!(
            lost,
            [(HEAD.to_string(), 10), (RIGHT.to_string(), 10)],
            "hierarchical {hier}"
        );
        for x in &r.rej {
            assert!(x["reason"].as_str().is_some_and(|s| !s.is_empty()));
        }
    }
}

#[test]
fn a_clock_jump_is_flushed_and_warmed_up() {
    let k = case(
        "jump",
        ObserveSynth {
            sim: true,
            reset_at_frame: Some(30),
            ..Default::default()
        },
    );
    let truth = &k.truth;
    let c = k.contract("c", &wrists(false, ""));
    let r = k.observe(&c, "out");
    let s = &r.json["summary"];
    assert_eq!(s["epochs"].as_array().unwrap().len(), 2);
    // The right frame of instant 30, stamped on the new clock but received before the head's
    // jump is seen, is held at the flush; the head and left frames 30 then have no partner.
    assert_eq!(s["epochs"][0]["flushed"], 1);
    assert_eq!(s["epochs"][1]["warmup_anchors"], 1);
    assert_eq!(s["drops"]["clock_epoch_changed"], 1);
    assert_eq!(r.obs.len(), 59);
    let lost: Vec<(String, i64, String)> = r
        .rej
        .iter()
        .map(|x| {
            (
                x["topic"].as_str().unwrap().to_string(),
                i(&x["index"]),
                x["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(lost.len(), 3, "{lost:?}");
    assert_eq!(
        lost[2],
        (RIGHT.to_string(), 30, "clock_epoch_changed".to_string())
    );
    for o in &r.obs {
        let k = i(&o["anchor_index"]);
        assert_eq!(i(&o["clock_epoch"]), i64::from(k >= 30));
        // Stamps on sim time, log times on wall: emit ages go through /clock.
        let age = i(&o["emit_age_ns"]);
        assert!(
            (age - 10 * MS - 500_000).abs() < 10_000,
            "frame {k}: emit age {age}"
        );
        // State is looked up on the anchor's own epoch.
        let st = i(&o["anchor_stamp_ns"]);
        let t0 = if k >= 30 { 200 * MS } else { truth.origin_ns };
        let want = truth.joints.position((st - t0) as f64 / 1e9);
        let got = o["/joint_states.position"][0].as_f64().unwrap();
        assert!((got - want[0]).abs() < 1e-9, "frame {k}");
    }
    assert_eq!(s["emit_age_axis"], "clock");
}

#[test]
fn a_tf_gap_rejects_exactly_the_anchors_inside_it() {
    let k = case(
        "tf",
        ObserveSynth {
            tf_gap_s: Some((0.5, 0.6)),
            ..Default::default()
        },
    );
    let truth = &k.truth;
    assert!(
        truth.frame_unavailable_frames.len() >= 2,
        "{:?}",
        truth.frame_unavailable_frames
    );
    let c = k.contract("c", &wrists(false, "tf: {target_frame: base_link}\n"));
    let r = k.observe(&c, "out");
    let mut rejected: Vec<i64> = r
        .rej
        .iter()
        .filter(|x| x["topic"] == HEAD)
        .map(|x| {
            assert_eq!(x["reason"], "frame_unavailable");
            i(&x["index"])
        })
        .collect();
    rejected.sort();
    let want: Vec<i64> = truth
        .frame_unavailable_frames
        .iter()
        .map(|&k| k as i64)
        .collect();
    assert_eq!(rejected, want);
    // The whole set goes: its wrist frames carry the same reason.
    assert_eq!(r.rej.len(), 3 * want.len());
    assert!(r.rej.iter().all(|x| x["reason"] == "frame_unavailable"));
    assert_eq!(r.obs.len(), 60 - want.len());
}

#[test]
fn freshness_hold_and_compare() {
    let k = case("compare", ObserveSynth::default());
    let bag = &k.bag;
    let stale = k.contract("stale", &wrists(false, "freshness: {max_age: 10ms}\n"));
    let r = k.observe(&stale, "stale");
    // Every set completes 10.5 ms after the head's stamp.
    assert_eq!(r.obs.len(), 0);
    assert_eq!(r.json["drops"]["stale_at_emit"], 180);
    let hold = k.contract(
        "hold",
        &format!(
            "anchor: {HEAD}\nstate:\n  - topic: /joint_states\n    mode: hold\n    max_gap: 15ms\n"
        ),
    );
    let r = k.observe(&hold, "hold");
    assert_eq!(r.obs.len(), 60);
    for o in &r.obs {
        let age = i(&o["/joint_states.hold_age_ns"]);
        assert!((0..10 * MS).contains(&age));
        assert_eq!(i(&o["/joint_states.reuse_count"]), 0);
        assert_eq!(i(&o["emit_age_ns"]), 10 * MS);
    }
    let hier = k.contract("hier", &wrists(true, ""));
    let flat = k.contract("flat", &wrists(false, ""));
    let (code, out, err) = run(&[
        "observe",
        bag.to_str().unwrap(),
        "--compare",
        flat.to_str().unwrap(),
        hier.to_str().unwrap(),
        hold.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["observations"], 60);
    assert_eq!(rows[2]["observations"], 60);
    assert!(rows[0]["policy_version"] != rows[1]["policy_version"]);
    let (code, text, _) = run(&[
        "observe",
        bag.to_str().unwrap(),
        "--compare",
        flat.to_str().unwrap(),
        hold.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(
        text.contains("flat.yaml") && text.contains("hold.yaml"),
        "{text}"
    );
}

#[test]
fn policy_version_ignores_comments_and_key_order() {
    let k = short_case("version", 5);
    let a = k.contract(
        "a",
        &format!("anchor: {HEAD}\nfreshness: {{max_age: 100ms}}\n"),
    );
    let b = k.contract(
        "b",
        &format!("# comment\nfreshness:\n  max_age: 100ms\nanchor: {HEAD}\n"),
    );
    let c = k.contract(
        "c",
        &format!("anchor: {HEAD}\nfreshness: {{max_age: 101ms}}\n"),
    );
    let v = |p: &Path, o: &str| {
        k.observe(p, o).json["policy_version"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (va, vb, vc) = (v(&a, "a"), v(&b, "b"), v(&c, "c"));
    assert_eq!(va.len(), 16);
    assert_eq!(va, vb);
    assert_ne!(va, vc);
}

#[test]
fn contract_errors_exit_2_naming_file_and_key() {
    let k = short_case("bad", 5);
    for (name, text, key) in [
        (
            "unknown",
            format!("anchor: {HEAD}\nfreshnes: {{max_age: 1s}}\n"),
            "freshnes",
        ),
        (
            "duration",
            wrists(false, "").replace("15ms", "15 parsecs"),
            "members[0].slop",
        ),
        ("noanchor", "members: []\n".to_string(), "anchor"),
        (
            "policy",
            wrists(false, "").replace("approx-py", "latest"),
            "members[0].policy",
        ),
        (
            "mode",
            wrists(false, "").replace("interpolate", "spline"),
            "state[0].mode",
        ),
        ("missing", "anchor: /nope\n".to_string(), "/nope"),
        ("yaml", "anchor: [\n".to_string(), "not YAML"),
        // A key given twice: before, the last one won and the first block was dropped.
        (
            "dupstate",
            wrists(false, "state: []\n"),
            "duplicate key 'state' at line 14 column 1",
        ),
        (
            "dupqueue",
            wrists(false, "").replace("    queue: 5\n", "    queue: 5\n    queue: 7\n"),
            "members[0]: duplicate key 'queue' at line 7 column 5",
        ),
    ] {
        let c = k.contract(name, &text);
        let (code, _, err) = k.run(&c, "o", &[]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(&format!("{name}.yaml")), "{name}: {err}");
        assert!(err.contains(key), "{name}: {err}");
    }
}

/// An MCAP bag and its `.db3` rewrite (tests/data/db3, made by make_fixtures.py) give the same
/// observations, byte for byte.
#[test]
fn mcap_and_db3_forms_give_identical_observations() {
    let Some(shared) = common::shared_path("bags", "arm_real") else {
        return;
    };
    let d = tempdir("observe-db3");
    let c = d.join("c.yaml");
    std::fs::write(
        &c,
        "anchor: /arm_cmd\nstate:\n  - topic: /joint_states\n    mode: interpolate\n    max_gap: 50ms\n",
    )
    .unwrap();
    let a = observe(&shared.join("arm_real"), &c, &d.join("mcap"), &[]);
    let b = observe(
        &root().join("tests/data/db3/arm_real"),
        &c,
        &d.join("db3"),
        &[],
    );
    assert!(a.obs.len() > 100, "{}", a.obs.len());
    for f in ["observations.parquet", "rejections.parquet"] {
        assert_eq!(
            std::fs::read(a.out.join(f)).unwrap(),
            std::fs::read(b.out.join(f)).unwrap(),
            "{f}: MCAP and db3 differ"
        );
    }
}

/// A Python that imports `modules`: `env` when set, else `default` under the workspace.
fn python_with(env: &str, default: &str, modules: &str) -> Option<PathBuf> {
    let py = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(default));
    std::process::Command::new(&py)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
        .then_some(py)
}

/// `tests/interop/lerobot_layout.py DIR HOW` with `py`: what that reader read.
fn read_lerobot(py: &Path, dir: &Path, how: &str) -> Value {
    let o = std::process::Command::new(py)
        .arg(root().join("tests/interop/lerobot_layout.py"))
        .arg(dir)
        .arg(how)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", dir.join("hf-home"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the {how} reader refused {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// What a reader of the LeRobot dataset read equals the generator's truth: 60 frames at
/// 30 fps, the task, the interpolated state and the held command (the position 100 ms ahead)
/// at every anchor stamp, timestamps from the first anchor; within `tol` (the reader's float
/// precision: LeRobotDataset hands out float32 tensors).
fn assert_lerobot_truth(read: &Value, truth: &ObserveTruth, who: &str, tol: f64) {
    assert_eq!(read["frames"], 60, "{who}");
    assert_eq!(read["fps"], 30, "{who}");
    assert_eq!(read["task"], "reach", "{who}");
    let names = read["state_names"].as_array().unwrap();
    assert_eq!(names.len(), 3, "{who}: {names:?}");
    assert_eq!(
        names[0],
        format!("/joint_states.{}", truth.joints.names[0]),
        "{who}"
    );
    for k in 0..60 {
        let t = (truth.head_stamps_ns[k] - truth.origin_ns) as f64 / 1e9;
        for (what, want) in [
            ("state", truth.joints.position(t)),
            ("action", truth.joints.position(t + 0.1)),
        ] {
            let got: Vec<f64> = read[what][k]
                .as_array()
                .unwrap_or_else(|| panic!("{who}: {what}[{k}]"))
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(got.len(), want.len(), "{who}: {what}[{k}]");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= tol * w.abs().max(1.0),
                    "{who}: {what}[{k}] {g} vs {w}"
                );
            }
        }
        let ts = read["timestamp"][k].as_f64().unwrap();
        let want = (truth.head_stamps_ns[k] - truth.head_stamps_ns[0]) as f64 / 1e9;
        assert!(
            (ts - want).abs() <= tol * want.max(1.0),
            "{who}: timestamp[{k}] {ts} vs {want}"
        );
    }
}

/// `--layout lerobot` writes a LeRobot v3.0 dataset: checked against the generator's truth
/// directly, then read back by pyarrow + pandas + numpy against LeRobot's documented layout
/// (statistics recomputed), then by the published `lerobot` package when it is installed
/// (`target/lerobot-venv` or `BAGSCOPE_LEROBOT_PYTHON`: it pulls torch, several GB, so `.ci/run`
/// does not install it and the test says when it skipped that reader).
#[test]
fn lerobot_layout_reads_back_as_a_lerobot_v3_dataset() {
    let k = case("lerobot", ObserveSynth::default());
    let truth = &k.truth;
    let c = k.contract("c", &wrists(false, COMMANDS));
    let out = k.d.join("out");
    let (code, stdout, err) = k.run(&c, "out", &LEROBOT_ARGS);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(j["lerobot"]["fps"], 30);
    assert_eq!(j["lerobot"]["codebase_version"], "v3.0");
    let l = out.join("lerobot");
    let rows = table(&l.join("data/chunk-000/file-000.parquet"));
    let direct = serde_json::json!({
        "frames": rows.len(),
        "fps": j["lerobot"]["fps"],
        "task": "reach",
        "state_names": serde_json::from_str::<Value>(&std::fs::read_to_string(l.join("meta/info.json")).unwrap())
            .unwrap()["features"]["observation.state"]["names"],
        "state": rows.iter().map(|r| r["observation.state"].clone()).collect::<Vec<_>>(),
        "action": rows.iter().map(|r| r["action"].clone()).collect::<Vec<_>>(),
        "timestamp": rows.iter().map(|r| r["timestamp"].clone()).collect::<Vec<_>>(),
    });
    assert_lerobot_truth(&direct, truth, "the data file", 1e-9);
    for (k, r) in rows.iter().enumerate() {
        for col in ["frame_index", "index"] {
            assert_eq!(i(&r[col]), k as i64);
        }
        assert_eq!(i(&r["episode_index"]), 0);
        assert_eq!(i(&r["task_index"]), 0);
        assert_eq!(r["image_ref.camera.head.image_raw"], format!("{HEAD}#{k}"));
        assert_eq!(r["image_ref.camera.left.image_raw"], format!("{LEFT}#{k}"));
    }

    match python_with(
        "BAGSCOPE_PYTHON",
        "target/py-venv/bin/python",
        "numpy, pandas, pyarrow",
    ) {
        Some(py) => {
            let read = read_lerobot(&py, &l, "schema");
            assert_lerobot_truth(&read, truth, "pyarrow", 1e-9);
            assert_eq!(read["episode_tasks"], serde_json::json!(["reach"]));
        }
        None if std::env::var_os("CI").is_some() => {
            panic!("CI is set but no Python with numpy, pandas and pyarrow (target/py-venv)")
        }
        None => eprintln!("note: no Python with numpy, pandas and pyarrow; skipping that reader"),
    }
    match python_with(
        "BAGSCOPE_LEROBOT_PYTHON",
        "target/lerobot-venv/bin/python",
        "lerobot.datasets.lerobot_dataset",
    ) {
        Some(py) => {
            let read = read_lerobot(&py, &l, "lerobot");
            // float32: half an ulp is 6e-8 of the value.
            assert_lerobot_truth(&read, truth, "lerobot", 1e-7);
            assert_eq!(read["episodes"], 1);
            assert_eq!(
                read["stats_keys"],
                serde_json::json!([
                    "count", "max", "mean", "min", "q01", "q10", "q50", "q90", "q99", "std"
                ])
            );
            // The action window at the middle frame: the frames before, at and after it.
            let mid = read["action_window_mid"].as_u64().unwrap() as usize;
            for (d, w) in read["action_window"].as_array().unwrap().iter().enumerate() {
                assert_eq!(w, &read["action"][mid + d - 1], "action window {d}");
            }
        }
        None => eprintln!(
            "note: no Python with the lerobot package (target/lerobot-venv or \
             BAGSCOPE_LEROBOT_PYTHON); skipping the read-back with LeRobotDataset"
        ),
    }
}

/// A LeRobot frame is a complete vector: an optional state missing at some anchor is refused
/// with the observation and the topic named, and `--action` must be a state topic.
#[test]
fn lerobot_layout_refuses_incomplete_frames() {
    let k = case("lerobot-refuse", ObserveSynth::default());
    let sparse = format!(
        "anchor: {HEAD}\nmembers:\n  - name: wrists\n    policy: approx-py\n    topics: [{LEFT}, {RIGHT}]\n    queue: 5\n    slop: 15ms\nstate:\n  - topic: /joint_states\n    mode: nearest\n    max_gap: 1ms\n    optional: true\n{COMMANDS}"
    );
    let c = k.contract("c", &sparse);
    let (code, _, err) = k.run(&c, "out", &LEROBOT_ARGS);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("/joint_states") && err.contains("optional"),
        "{err}"
    );
    let c = k.contract("c2", &wrists(false, ""));
    let (code, _, err) = k.run(&c, "out2", &LEROBOT_ARGS);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--action: /joint_commands") && err.contains("not a state topic"),
        "{err}"
    );
}

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// Rows of every `data/*/*.parquet` of a LeRobot dataset, and its `info.json`'s frame count.
fn lerobot_rows_and_frames(l: &Path) -> (usize, i64) {
    let mut rows = 0;
    for chunk in std::fs::read_dir(l.join("data")).unwrap() {
        for f in std::fs::read_dir(chunk.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "parquet") {
                rows += table(&p).len();
            }
        }
    }
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(l.join("meta/info.json")).unwrap()).unwrap();
    (rows, i(&info["total_frames"]))
}

/// `--layout lerobot` into a folder that already holds files is refused before anything is
/// read or written, naming the folder and what is in it: a second run once added its files to
/// the first's (687 rows under `data/` beside an `info.json` of 229 frames, exit 0). Without
/// the layout, an earlier run's dataset would be left stale beside the new tables: refused too.
/// A new path or an empty folder takes the dataset whole.
#[test]
fn lerobot_layout_is_written_whole_never_into_another_dataset() {
    let k = short_case("lerobot-again", 12);
    let c = k.contract("c", &wrists(false, COMMANDS));
    let (code, _, err) = k.run(&c, "out", &LEROBOT_ARGS);
    assert_eq!(code, 0, "{err}");
    let l = k.d.join("out/lerobot");
    let (rows, frames) = lerobot_rows_and_frames(&l);
    assert!(rows > 0);
    assert_eq!(rows as i64, frames);
    let before = tree(&k.d.join("out"));
    // Nothing but the dataset and the two tables, no staging folder left.
    assert_eq!(
        before
            .keys()
            .filter(|p| !p.starts_with("lerobot"))
            .collect::<Vec<_>>(),
        [
            Path::new("observations.parquet"),
            Path::new("rejections.parquet")
        ]
    );

    // Again into the same folder, and into one holding another dataset's file: refused, every
    // file as it was.
    let (code, _, err) = k.run(&c, "out", &LEROBOT_ARGS);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&*l.to_string_lossy())
            && err.contains("not empty")
            && err.contains("data/, meta/"),
        "{err}"
    );
    assert_eq!(tree(&k.d.join("out")), before);
    let foreign = k.d.join("other/lerobot/data/chunk-000");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("file-001.parquet"), b"someone else's").unwrap();
    let (code, _, err) = k.run(&c, "other", &LEROBOT_ARGS);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("other/lerobot") && err.contains("data/"),
        "{err}"
    );
    assert_eq!(tree(&k.d.join("other")).len(), 1, "nothing added beside it");

    // Without the layout: the earlier dataset would no longer match the new tables.
    std::fs::remove_file(k.d.join("out/observations.parquet")).unwrap();
    let (code, _, err) = k.run(&c, "out", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("lerobot") && err.contains("earlier run"),
        "{err}"
    );
    assert!(!k.d.join("out/observations.parquet").exists());

    // An empty folder, or the old dataset removed: written whole again.
    std::fs::remove_dir_all(&l).unwrap();
    std::fs::create_dir(&l).unwrap();
    let (code, _, err) = k.run(&c, "out", &LEROBOT_ARGS);
    assert_eq!(code, 0, "{err}");
    assert_eq!(lerobot_rows_and_frames(&l), (rows, frames));
    assert_eq!(tree(&k.d.join("out")), before);
}

/// `report --contract` adds the "Observations" section: the summary table and the drops.
#[test]
fn report_gains_an_observations_section_with_a_contract() {
    let k = case(
        "report",
        ObserveSynth {
            drop_left_frame: Some(3),
            frames: 20,
            ..Default::default()
        },
    );
    let (d, bag) = (&k.d, &k.bag);
    let c = k.contract("c", &wrists(false, ""));
    let out = d.join("rep");
    let (code, _, err) = run(&[
        "report",
        bag.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--contract",
        c.to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 3, "{err}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(j["observations"]["summary"]["observations"], 19);
    let secs: Vec<&str> = j["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(&secs[secs.len() - 2..], ["observations", "warnings"]);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"observations\">"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Observations") && md.contains("19 of 20 anchors"),
        "{md}"
    );
    // Without a contract the page is as before.
    let (code, _, _) = run(&[
        "report",
        bag.to_str().unwrap(),
        "-o",
        d.join("plain").to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 3);
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("plain/report.json")).unwrap())
            .unwrap();
    assert!(j.get("observations").is_none());
    // A bad contract is a usage error before any work.
    let bad = k.contract("bad", "anchor: 3\n");
    let (code, _, err) = run(&[
        "report",
        bag.to_str().unwrap(),
        "-o",
        d.join("bad").to_str().unwrap(),
        "--contract",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
}

/// `--with-fields`: the anchor's and each member's message fields in the observation row,
/// named `T.<field>`; checked against the generator's stamps and frame ids and, field by field,
/// against `export`'s Parquet of the same topic at the row of the observation's index. Without
/// the flag nothing changes: the other columns are the same, and the rejections file too.
#[test]
fn with_fields_copies_member_fields_as_export_flattens_them() {
    let k = case(
        "fields",
        ObserveSynth {
            drop_left_frame: Some(10),
            ..Default::default()
        },
    );
    let c = k.contract("c", &wrists(false, ""));
    let plain = k.observe(&c, "plain");
    let r = k.observe_with(&c, "fields", &["--with-fields"]);
    assert_eq!(r.code, 0);
    assert_eq!(r.obs.len(), 59);
    assert_eq!(r.obs.len(), plain.obs.len());
    for (p, f) in plain.obs.iter().zip(&r.obs) {
        for (col, v) in p {
            assert_eq!(&f[col], v, "{col}");
        }
    }
    assert_eq!(
        std::fs::read(plain.out.join("rejections.parquet")).unwrap(),
        std::fs::read(r.out.join("rejections.parquet")).unwrap()
    );
    let reference = ["index", "stamp_ns", "offset_ns", "frame_id", "log_time_ns"];
    for (t, index_col, offset_ns, frame) in [
        (HEAD, "anchor_index".to_string(), 0, "head_camera"),
        (LEFT, format!("{LEFT}.index"), 2 * MS, "left_camera"),
        (RIGHT, format!("{RIGHT}.index"), -3 * MS, "right_camera"),
    ] {
        let file = k.d.join(format!("export{}.parquet", t.replace('/', "_")));
        let (code, _, err) = run(&[
            "export",
            k.bag.to_str().unwrap(),
            "--topics",
            t,
            "-o",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let exported = table(&file);
        let prefix = format!("{t}.");
        let fields: Vec<&str> = r.obs[0]
            .keys()
            .filter_map(|c| c.strip_prefix(&prefix))
            .filter(|f| !reference.contains(f))
            .collect();
        for f in [
            "header.stamp.sec",
            "header.frame_id",
            "height",
            "encoding",
            "data",
        ] {
            assert!(fields.contains(&f), "{t}: no field {f} in {fields:?}");
        }
        for o in &r.obs {
            let index = i(&o[&index_col]) as usize;
            for f in &fields {
                assert_eq!(
                    o[&format!("{prefix}{f}")],
                    exported[index][*f],
                    "{t}.{f} at index {index}"
                );
            }
            let stamp = k.truth.head_stamps_ns[i(&o["anchor_index"]) as usize] + offset_ns;
            let sec = i(&o[&format!("{prefix}header.stamp.sec")]);
            let nanosec = i(&o[&format!("{prefix}header.stamp.nanosec")]);
            assert_eq!(sec * 1_000_000_000 + nanosec, stamp, "{t} at index {index}");
            assert_eq!(o[&format!("{prefix}header.frame_id")], frame);
        }
    }
}
