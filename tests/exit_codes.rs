//! The exit-code and error-message contract, per command (documented in TESTING.md and the
//! README's Tour):
//!
//! * **0** ok; **1** error (the message says what failed, the offending value and the path);
//!   **2** usage (clap: unknown flag, missing or malformed argument); **3** finished, but with
//!   warnings about lost or suspect data (`check`: also findings).
//! * A closed stdout (`bagscope info … | head -c 10`) exits 0 quietly: no error text.
//! * Nothing ever panics.

use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{bin, root, tempdir, Out, Tmp};

fn bag(name: &str) -> String {
    root().join("bags").join(name).display().to_string()
}

fn run(args: &[&str]) -> Out {
    common::out(args)
}

/// A copy of `bags/arm_wall` cut in the middle of its data section (a recorder killed
/// mid-write), as a bag folder without metadata.yaml.
fn truncated_bag(tag: &str) -> Tmp {
    let dir = tempdir(&format!("{tag}-cut"));
    let bytes = std::fs::read(root().join("bags/arm_wall/arm_wall.mcap")).unwrap();
    std::fs::write(dir.join("cut.mcap"), &bytes[..bytes.len() / 2]).unwrap();
    dir
}

fn assert_code(o: &Out, want: i32, what: &str) {
    assert_eq!(
        o.code, want,
        "{what}: exit {} (want {want})\nstderr: {}\nstdout: {}",
        o.code, o.stderr, o.stdout
    );
}

/// Exit 1 with one `bagscope: error:` line naming every `needles` item, nothing on stdout.
fn assert_error(o: &Out, needles: &[&str], what: &str) {
    assert_code(o, 1, what);
    assert!(
        o.stderr.starts_with("bagscope: error:"),
        "{what}: {}",
        o.stderr
    );
    // A cause printed inside its error's message must not be appended again
    // ("cannot read P: No such file…: No such file…").
    let parts: Vec<&str> = o.stderr.trim_end().split(": ").collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(
            p.len() < 12 || !parts[i + 1..].contains(p),
            "{what}: the error repeats {p:?}: {}",
            o.stderr
        );
    }
    for n in needles {
        assert!(
            o.stderr.contains(n),
            "{what}: error does not name {n:?}: {}",
            o.stderr
        );
    }
    assert!(o.stdout.is_empty(), "{what}: stdout not empty on error");
}

/// Exit 2 from the argument parser, naming the offending value or argument.
fn assert_usage(o: &Out, needle: &str, what: &str) {
    assert_code(o, 2, what);
    assert!(
        o.stderr.contains(needle),
        "{what}: usage error does not name {needle:?}: {}",
        o.stderr
    );
    assert!(
        o.stdout.is_empty(),
        "{what}: stdout not empty on a usage error"
    );
}

/// Exit 3 with a data-loss warning in the JSON.
fn assert_loss(o: &Out, what: &str) {
    assert_code(o, 3, what);
    let v: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = v["warnings"].to_string();
    assert!(
        text.contains("\"data_loss\":true"),
        "{what}: exit 3 but no data_loss warning: {text}"
    );
}

const NOPE: &str = "/nonexistent/dir/bag.mcap";

#[test]
fn help_and_version_exit_0_and_list_every_command() {
    let o = run(&["--help"]);
    assert_code(&o, 0, "--help");
    // Every subcommand in --help is covered by a test in this file.
    let covered = [
        "info", "clocks", "sync", "match", "compare", "check", "convert", "synth", "tf", "hist",
        "report", "export", "batch", "play", "echo", "observe", "help",
    ];
    let listed: Vec<&str> = o
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(!listed.is_empty(), "{}", o.stdout);
    for c in &listed {
        assert!(covered.contains(c), "command `{c}` has no exit-code test");
    }
    assert_code(&run(&["--version"]), 0, "--version");
    for c in listed.iter().filter(|c| **c != "help") {
        assert_code(&run(&[c, "--help"]), 0, &format!("{c} --help"));
    }
}

#[test]
fn usage_errors_exit_2() {
    assert_usage(&run(&[]), "Usage", "no command");
    assert_usage(&run(&["frobnicate"]), "frobnicate", "unknown command");
    for c in [
        "info", "clocks", "sync", "match", "compare", "check", "convert", "tf", "hist", "report",
    ] {
        // Missing the bag (and any other required argument).
        let o = run(&[c]);
        assert_usage(&o, "Usage", &format!("{c} without arguments"));
        let o = run(&[c, &bag("sensors"), "--no-such-flag"]);
        assert_usage(&o, "--no-such-flag", &format!("{c} --no-such-flag"));
    }
    assert_usage(&run(&["synth"]), "Usage", "synth without arguments");
    // Malformed values name the value.
    let s = bag("sensors");
    let o = run(&["sync", &s, "--topics", "/a,/b", "--queue", "ten"]);
    assert_usage(&o, "ten", "sync --queue ten");
    let o = run(&["clocks", &s, "--gap-factor", "wide"]);
    assert_usage(&o, "wide", "clocks --gap-factor wide");
    let o = run(&["hist", &s, "--topics", "/a", "--bins", "-3"]);
    assert_usage(&o, "-3", "hist --bins -3");
    let o = run(&[
        "tf",
        &s,
        "--target-frame",
        "map",
        "--topics",
        "/a",
        "--buffer",
        "10parsecs",
    ]);
    assert_usage(&o, "10parsecs", "tf --buffer 10parsecs");
}

/// Keys of every JSON object in `text` that occur twice in it (as `path.key`). serde_json,
/// Python's json and most readers silently keep one of the two values.
fn duplicate_keys(text: &str) -> Vec<String> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;
    struct Walk<'a> {
        found: &'a RefCell<Vec<String>>,
        path: String,
    }
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            let mut i = 0;
            while a
                .next_element_seed(Walk {
                    found: self.found,
                    path: format!("{}[{i}]", self.path),
                })?
                .is_some()
            {
                i += 1;
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            let mut seen = std::collections::BTreeSet::new();
            while let Some(k) = a.next_key::<String>()? {
                let path = format!("{}.{k}", self.path);
                if !seen.insert(k) {
                    self.found.borrow_mut().push(path.clone());
                }
                a.next_value_seed(Walk {
                    found: self.found,
                    path,
                })?;
            }
            Ok(())
        }
    }
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_str(text);
    Walk {
        found: &found,
        path: String::new(),
    }
    .deserialize(&mut de)
    .unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    found.into_inner()
}

#[test]
fn duplicate_keys_are_found() {
    assert!(duplicate_keys(r#"{"a": 1, "b": [{"c": 2}]}"#).is_empty());
    assert_eq!(
        duplicate_keys(r#"{"a": 1, "b": [{"c": 2, "c": 3}], "a": null}"#),
        vec![".b[0].c".to_string(), ".a".to_string()]
    );
}

/// Every command's `--json` (and the JSON files `report` and `batch` write) holds each key
/// once per object: flattened report structs once printed `policy` (sync) and `runs`
/// (compare) twice, and readers kept only the second.
#[test]
fn json_keys_are_unique() {
    let dir = tempdir("json-keys");
    let d = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (s, w, split) = (bag("sensors"), bag("arm_wall"), bag("arm_split"));
    let pair = "/camera/image_raw,/lidar/points";
    let arm = ["--command", "/arm_cmd", "--response", "/joint_states"];
    let cases: Vec<Vec<String>> = vec![
        vec!["info".into(), split.clone()],
        vec!["info".into(), split.clone(), "--fast".into()],
        vec!["clocks".into(), split.clone()],
        vec!["sync".into(), s.clone(), "--topics".into(), pair.into()],
        vec![
            "sync".into(),
            s.clone(),
            "--topics".into(),
            pair.into(),
            "--policy".into(),
            "exact".into(),
            "--recommend".into(),
        ],
        [
            vec!["match".into(), split.clone()],
            arm.map(String::from).to_vec(),
        ]
        .concat(),
        [
            vec!["compare".into(), split.clone(), w.clone()],
            arm.map(String::from).to_vec(),
        ]
        .concat(),
        vec!["check".into(), s.clone()],
        vec![
            "tf".into(),
            w.clone(),
            "--target-frame".into(),
            "map".into(),
            "--topics".into(),
            "/joint_states".into(),
        ],
        vec!["hist".into(), s.clone(), "--topics".into(), pair.into()],
        vec![
            "play".into(),
            w.clone(),
            "--dry-run".into(),
            "--duration".into(),
            "0.2".into(),
        ],
        vec!["convert".into(), w.clone(), d("c.mcap")],
        vec![
            "export".into(),
            w.clone(),
            "--timing-only".into(),
            "-o".into(),
            d("t.parquet"),
        ],
        vec![
            "batch".into(),
            w.clone(),
            s.clone(),
            "-o".into(),
            d("batch"),
        ],
        vec!["report".into(), s.clone(), "-o".into(), d("report")],
        vec!["synth".into(), "arm_wall".into(), "-o".into(), d("synth")],
    ];
    for c in &cases {
        let mut args: Vec<&str> = c.iter().map(String::as_str).collect();
        args.push("--json");
        let o = run(&args);
        assert!(
            matches!(o.code, 0 | 3),
            "{args:?}: exit {} {}",
            o.code,
            o.stderr
        );
        let dup = duplicate_keys(&o.stdout);
        assert!(dup.is_empty(), "{args:?} prints keys twice: {dup:?}");
    }
    let mut files = vec![
        dir.join("report").join("report.json"),
        dir.join("batch").join("batch.json"),
    ];
    for b in ["arm_wall", "sensors"] {
        for f in ["info.json", "clocks.json"] {
            files.push(dir.join("batch").join("bags").join(b).join(f));
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let dup = duplicate_keys(&text);
        assert!(dup.is_empty(), "{} holds keys twice: {dup:?}", f.display());
    }
}

#[test]
fn info_contract() {
    assert_error(&run(&["info", NOPE]), &[NOPE], "info on a missing path");
    let dir = tempdir("info");
    let f = dir.join("garbage.mcap");
    std::fs::write(&f, b"this is not an mcap file").unwrap();
    let o = run(&["info", f.to_str().unwrap()]);
    assert_error(
        &o,
        &["not an MCAP file", "garbage.mcap"],
        "info on a text file",
    );
    let empty = dir.join("empty.mcap");
    std::fs::write(&empty, b"").unwrap();
    assert_error(
        &run(&["info", empty.to_str().unwrap()]),
        &["empty", "empty.mcap"],
        "empty file",
    );
    let none = dir.join("no_bag_here");
    std::fs::create_dir_all(&none).unwrap();
    assert_error(
        &run(&["info", none.to_str().unwrap()]),
        &["no_bag_here"],
        "empty folder",
    );
    let o = run(&["info", &bag("sensors")]);
    assert_code(&o, 0, "info sensors");
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    let cut = truncated_bag("info");
    assert_loss(
        &run(&["info", cut.to_str().unwrap(), "--json"]),
        "info on a cut bag",
    );
    // Text mode states the loss too, and in which file.
    let o = run(&["info", cut.to_str().unwrap()]);
    assert_code(&o, 3, "info text on a cut bag");
    let cut_file = cut.join("cut.mcap").display().to_string();
    // One line per code (two truncated warnings here), naming the file.
    let lines: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("warning [truncated]"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", o.stdout);
    assert!(
        lines[0].contains(&format!(" in {cut_file}")),
        "{}",
        o.stdout
    );
}

#[test]
fn clocks_contract() {
    assert_error(&run(&["clocks", NOPE]), &[NOPE], "clocks on a missing path");
    assert_code(&run(&["clocks", &bag("arm_split")]), 0, "clocks arm_split");
    let cut = truncated_bag("clocks");
    assert_loss(
        &run(&["clocks", cut.to_str().unwrap(), "--json"]),
        "clocks on a cut bag",
    );
}

/// A small unchunked MCAP (schema, channel and messages as loose records, each definition also
/// in the summary) whose schema name holds a byte that is not UTF-8: in the data section only
/// (`in_data`), in the summary only (`in_summary`), or both. The mcap crate's reader refuses the
/// record (strings must be UTF-8).
fn bag_with_bad_schema(dir: &std::path::Path, in_data: bool, in_summary: bool) -> String {
    use bagscope_msg::types::{Header, Imu, Time};
    let p = dir.join(format!("bad_schema_{in_data}_{in_summary}.mcap"));
    {
        let mut w =
            common::BagWriter::with_options(&p, mcap::WriteOptions::new().use_chunks(false));
        let text = bagscope_msg::schema::builtin::schema_text("sensor_msgs/msg/Imu").unwrap();
        let cid = w.channel("/imu", "sensor_msgs/msg/Imu", &text);
        for k in 0..50u32 {
            let t = 1_764_460_800_000_000_000u64 + u64::from(k) * 10_000_000;
            let data = bagscope_msg::encode_typed(&Imu {
                header: Header {
                    stamp: Time::from_ns(t as i64),
                    frame_id: "imu".into(),
                },
                ..Default::default()
            })
            .unwrap();
            w.message(cid, t as i64 + 1_000_000, &data);
        }
        w.finish();
    }
    let mut buf = std::fs::read(&p).unwrap();
    // Every place the schema's name is stored: a schema record each (data section first).
    let name = b"sensor_msgs/msg/Imu";
    let at: Vec<usize> = (0..buf.len() - name.len())
        .filter(|&i| &buf[i..i + name.len()] == name)
        .collect();
    assert_eq!(
        at.len(),
        2,
        "the schema once in the data section, once in the summary"
    );
    for (i, &a) in at.iter().enumerate() {
        if (i == 0 && in_data) || (i == 1 && in_summary) {
            buf[a + 4] = 0xff; // "sens\xffr_msgs/..."
        }
    }
    std::fs::write(&p, &buf).unwrap();
    p.display().to_string()
}

/// A record that cannot be parsed (a schema whose name is not UTF-8: its channel's messages
/// are still read) is suspect data: `corrupt_record` / `corrupt_summary` with `data_loss`, and
/// exit 3 from `info` and `clocks` (text and JSON), as from every command that reads the bag.
#[test]
fn unparsable_records_are_suspect_data() {
    let dir = tempdir("bad-schema");
    for (in_data, in_summary, codes) in [
        (true, true, &["corrupt_record", "corrupt_summary"][..]),
        (true, false, &["corrupt_record"][..]),
        (false, true, &["corrupt_summary"][..]),
    ] {
        let b = bag_with_bad_schema(&dir, in_data, in_summary);
        for cmd in ["info", "clocks", "check"] {
            let what =
                format!("{cmd} on a schema not UTF-8 (data {in_data}, summary {in_summary})");
            let o = run(&[cmd, &b, "--json"]);
            assert_loss(&o, &what);
            let v: Value = serde_json::from_str(&o.stdout).unwrap();
            for code in codes {
                let w = v["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|w| w["code"] == *code)
                    .unwrap_or_else(|| panic!("{what}: no {code}: {}", v["warnings"]));
                assert_eq!(w["data_loss"], true, "{what}: {w}");
            }
            if cmd == "clocks" {
                // The messages were read all the same; the verdicts name the record.
                let imu = v["topics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["topic"] == "/imu")
                    .unwrap_or_else(|| panic!("{what}: no /imu: {}", v["topics"]));
                assert_eq!(imu["count"], 50, "{what}");
                assert_eq!(v["verdicts"]["data_loss"], true, "{what}");
            }
            let o = run(&[cmd, &b]);
            assert_code(&o, 3, &format!("{what}, text"));
        }
    }
}

/// An explicitly named clock topic that the bag lacks must be an error naming it (as an unknown
/// `--topics` entry is for `sync`), not silently ignored.
#[test]
fn clocks_unknown_clock_topic_is_an_error() {
    let o = run(&["clocks", &bag("arm_split"), "--clock-topic", "/no_clock"]);
    assert_error(&o, &["/no_clock"], "clocks --clock-topic /no_clock");
}

#[test]
fn sync_contract() {
    let s = bag("sensors");
    let topics = "/camera/image_raw,/camera/camera_info";
    assert_error(
        &run(&["sync", NOPE, "--topics", topics]),
        &[NOPE],
        "sync on a missing path",
    );
    let o = run(&["sync", &s, "--topics", "/camera/image_raw,/nope"]);
    assert_error(
        &o,
        &["/nope", "/camera/camera_info", &s],
        "sync unknown topic",
    );
    assert_code(
        &run(&[
            "sync", &s, "--topics", topics, "--policy", "exact", "--queue", "10",
        ]),
        0,
        "sync exact",
    );
    let o = run(&["sync", &s, "--topics", topics, "--policy", "warp-speed"]);
    assert!(matches!(o.code, 1 | 2), "bad policy: exit {}", o.code);
    assert!(o.stderr.contains("warp-speed"), "{}", o.stderr);
    let o = run(&[
        "sync",
        &s,
        "--topics",
        topics,
        "--policy",
        "approx-py",
        "--slop",
        "30xs",
    ]);
    assert!(matches!(o.code, 1 | 2), "bad slop: exit {}", o.code);
    assert!(o.stderr.contains("30xs"), "{}", o.stderr);
    let cut = truncated_bag("sync");
    let o = run(&[
        "sync",
        cut.to_str().unwrap(),
        "--topics",
        "/arm_cmd,/joint_states",
        "--policy",
        "approx",
        "--json",
    ]);
    assert_loss(&o, "sync on a cut bag");
}

fn match_args(b: &str) -> Vec<&str> {
    vec![b, "--command", "/arm_cmd", "--response", "/joint_states"]
}

#[test]
fn match_contract() {
    let w = bag("arm_wall");
    let mut a = vec!["match"];
    a.extend(match_args(NOPE));
    assert_error(&run(&a), &[NOPE], "match on a missing path");
    let mut a = vec!["match"];
    a.extend(match_args(&w));
    assert_code(&run(&a), 0, "match arm_wall");
    let o = run(&[
        "match",
        &w,
        "--command",
        "/nope",
        "--response",
        "/joint_states",
    ]);
    assert_error(&o, &["/nope", &w], "match unknown topic");
    let o = run(&[
        "match",
        &w,
        "--command",
        "/arm_cmd",
        "--response",
        "/joint_states",
        "--search",
        "lots",
    ]);
    assert!(matches!(o.code, 1 | 2), "bad --search: exit {}", o.code);
    assert!(o.stderr.contains("lots"), "{}", o.stderr);
    let cut = truncated_bag("match");
    let c = cut.to_str().unwrap();
    let mut a = vec!["match"];
    a.extend(match_args(c));
    a.push("--json");
    assert_loss(&run(&a), "match on a cut bag");
}

#[test]
fn compare_contract() {
    let w = bag("arm_wall");
    let ack = bag("arm_ack");
    // `compare RUNS --command /arm_cmd --response /joint_states EXTRA`.
    let compare = |runs: &[&str], extra: &[&str]| {
        let mut args = vec!["compare"];
        args.extend(runs);
        args.extend(["--command", "/arm_cmd", "--response", "/joint_states"]);
        args.extend(extra);
        run(&args)
    };
    let o = compare(&[&w, NOPE], &[]);
    assert_error(&o, &[NOPE], "compare with a missing run");
    let o = compare(&[&w, &ack], &[]);
    assert_code(&o, 0, "compare arm_wall arm_ack");
    // Text unless --json (compare once printed JSON either way).
    assert!(
        o.stdout.starts_with("reference run: ")
            && serde_json::from_str::<Value>(&o.stdout).is_err(),
        "{}",
        o.stdout
    );
    let o = compare(&[&w, &ack], &["--json"]);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["bags"], serde_json::json!([w, ack]));
    assert_eq!(v["runs"][1]["name"], ack);
    let o = compare(&[&w, &bag("sensors")], &[]);
    assert_error(
        &o,
        &["/arm_cmd", "sensors"],
        "compare with a run lacking the topic",
    );
}

/// `compare` on a run with lost data must exit 3, like every other command.
#[test]
fn compare_exits_3_when_a_run_lost_data() {
    let cut = truncated_bag("compare");
    let o = run(&[
        "compare",
        &bag("arm_wall"),
        cut.to_str().unwrap(),
        "--command",
        "/arm_cmd",
        "--response",
        "/joint_states",
    ]);
    assert_code(&o, 3, "compare with a cut run");
}

#[test]
fn check_contract() {
    assert_error(&run(&["check", NOPE]), &[NOPE], "check on a missing path");
    let o = run(&["check", &bag("arm_wall"), "--json"]);
    assert!(matches!(o.code, 0 | 3), "check arm_wall: {}", o.code);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let findings = v["findings"].as_array().map_or(0, Vec::len);
    assert_eq!(
        o.code == 3,
        findings > 0,
        "check exits 3 exactly when there are findings"
    );
    let dir = tempdir("check");
    let lim = dir.join("missing_limits.yaml");
    let o = run(&["check", &bag("arm_wall"), "--limits", lim.to_str().unwrap()]);
    assert_error(
        &o,
        &["missing_limits.yaml"],
        "check with a missing --limits file",
    );
    let cut = truncated_bag("check");
    assert_loss(
        &run(&["check", cut.to_str().unwrap(), "--json"]),
        "check on a cut bag",
    );
}

#[test]
fn play_contract() {
    let dir = tempdir("play");
    let o = run(&["play", NOPE, "--dry-run"]);
    assert_error(&o, &[NOPE], "play a missing bag");
    let w = bag("arm_wall");
    let o = run(&["play", &w, "--topics", "/nope", "--dry-run"]);
    assert_error(&o, &["/nope"], "play an unknown topic");
    // Values clap accepts but play refuses: exit 2 naming the value.
    let o = run(&["play", &w, "--rate", "0", "--dry-run"]);
    assert_code(&o, 2, "play --rate 0");
    assert!(o.stderr.contains("--rate 0"), "{}", o.stderr);
    let o = run(&["play", &w, "--remap", "nocolon", "--dry-run"]);
    assert_usage(&o, "nocolon", "play --remap nocolon");
    let o = run(&["play", &w, "--no-publish"]);
    assert_usage(&o, "--out", "play --no-publish without --out");
    // A QoS override file that names a topic the bag lacks, or is not YAML: errors naming it.
    let q = dir.join("qos.yaml");
    std::fs::write(&q, "/arm_cmd:\n  reliability: best_effort\n  depth: 3\n").unwrap();
    let out = dir.join("r.mcap");
    let o = run(&[
        "play",
        &w,
        "--duration",
        "0.5",
        "--no-publish",
        "--json",
        "--qos-overrides",
        q.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_code(&o, 0, "play --no-publish --out");
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    let cmd = v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic"] == "/arm_cmd")
        .unwrap();
    assert_eq!(cmd["qos"]["reliability"], "best_effort");
    assert_eq!(cmd["qos"]["history"]["depth"], 3);
    assert_eq!(cmd["qos"]["source"], "override");
    // An override file that cannot be read is an error naming it (1), not a usage error.
    let missing = dir.join("no_such_qos.yaml");
    let o = run(&[
        "play",
        &w,
        "--dry-run",
        "--qos-overrides",
        missing.to_str().unwrap(),
    ]);
    assert_error(
        &o,
        &["no_such_qos.yaml"],
        "play with a missing override file",
    );
    std::fs::write(&q, "/elsewhere:\n  reliability: best_effort\n").unwrap();
    let o = run(&[
        "play",
        &w,
        "--dry-run",
        "--qos-overrides",
        q.to_str().unwrap(),
    ]);
    assert_error(
        &o,
        &["/elsewhere"],
        "play with an override for a missing topic",
    );
    // A cut bag plays what is readable and says what was lost: exit 3.
    let cut = truncated_bag("play");
    let out2 = dir.join("r2.mcap");
    let o = run(&[
        "play",
        cut.to_str().unwrap(),
        "--no-publish",
        "--json",
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert_loss(&o, "play a cut bag");
    // Dry run: paced in real time, no DDS; exit 0 with the timing error measured.
    let o = run(&["play", &w, "--duration", "0.3", "--dry-run", "--json"]);
    assert_code(&o, 0, "play --dry-run");
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["mode"], "dry_run");
    let n = v["timing_error"]["count"].as_u64().unwrap();
    assert!(n > 0);
    // Steal is taken out where the kernel accounts for it: same messages, never a larger error.
    let own = &v["timing_error_without_steal"];
    if std::env::consts::OS == "linux" {
        assert_eq!(own["count"].as_u64(), Some(n), "{own}");
        for q in ["p50", "p99", "max"] {
            assert!(own[q].as_i64().unwrap() <= v["timing_error"][q].as_i64().unwrap());
        }
        assert!(v["late_by_steal"].as_u64().unwrap() <= n);
    }
    // Offline (no pacing) there is no timing error, so no steal to take out of it.
    let out3 = dir.join("r3.mcap");
    let o = run(&[
        "play",
        &w,
        "--no-publish",
        "--duration",
        "0.3",
        "--out",
        out3.to_str().unwrap(),
        "--json",
    ]);
    assert_code(&o, 0, "play --no-publish --out");
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert!(v["timing_error"].is_null() && v["timing_error_without_steal"].is_null());
    assert!(v["late_by_steal"].is_null());
}

#[test]
fn convert_contract() {
    let dir = tempdir("convert");
    let out = dir.join("out.mcap");
    let o = run(&["convert", NOPE, out.to_str().unwrap()]);
    assert_error(&o, &[NOPE], "convert a missing bag");
    let o = run(&["convert", &bag("arm_wall"), out.to_str().unwrap()]);
    assert_code(&o, 0, "convert arm_wall");
    // Existing output without --force: an error naming it.
    let o = run(&["convert", &bag("arm_wall"), out.to_str().unwrap()]);
    assert_error(&o, &["out.mcap"], "convert onto an existing file");
    let o = run(&["convert", &bag("arm_wall"), "/nonexistent/dir/out.mcap"]);
    assert_error(
        &o,
        &["/nonexistent/dir/out.mcap"],
        "convert into a missing folder",
    );
    let cut = truncated_bag("convert");
    let out2 = dir.join("out2.mcap");
    let o = run(&[
        "convert",
        cut.to_str().unwrap(),
        out2.to_str().unwrap(),
        "--json",
    ]);
    assert_loss(&o, "convert a cut bag");
    // Never over an input, by whatever name: the bag's metadata.yaml (play --out), the input
    // read as the output's partial file (convert x.mcap.partial x.mcap). On a copy.
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["arm_wall.mcap", "metadata.yaml"] {
        std::fs::copy(root().join("bags/arm_wall").join(f), copy.join(f)).unwrap();
    }
    let meta = copy.join("metadata.yaml");
    let before = std::fs::read(&meta).unwrap();
    let o = run(&[
        "play",
        copy.to_str().unwrap(),
        "--no-publish",
        "--out",
        meta.to_str().unwrap(),
    ]);
    assert_code(&o, 2, "play --out onto the bag's metadata.yaml");
    assert!(o.stderr.contains("part of the input bag"), "{}", o.stderr);
    assert_eq!(std::fs::read(&meta).unwrap(), before);
    let partial = dir.join("x.mcap.partial");
    std::fs::copy(copy.join("arm_wall.mcap"), &partial).unwrap();
    let o = run(&[
        "convert",
        partial.to_str().unwrap(),
        dir.join("x.mcap").to_str().unwrap(),
    ]);
    assert_error(
        &o,
        &["x.mcap.partial", "part of the input bag"],
        "convert x.mcap.partial x.mcap",
    );
    assert_eq!(
        std::fs::read(&partial).unwrap(),
        std::fs::read(copy.join("arm_wall.mcap")).unwrap()
    );
}

#[test]
fn synth_contract() {
    let dir = tempdir("synth");
    let o = run(&["synth", "arm_wall", "-o", dir.to_str().unwrap()]);
    assert_code(&o, 0, "synth arm_wall");
    let o = run(&["synth", "no_such_scenario", "-o", dir.to_str().unwrap()]);
    assert!(matches!(o.code, 1 | 2), "unknown scenario: exit {}", o.code);
    assert!(o.stderr.contains("no_such_scenario"), "{}", o.stderr);
    // Output under a regular file: cannot create the folder.
    let file = dir.join("a_file");
    std::fs::write(&file, b"x").unwrap();
    let target = file.join("sub");
    let o = run(&["synth", "arm_wall", "-o", target.to_str().unwrap()]);
    assert_error(&o, &["a_file"], "synth into a path under a file");
    // TF for `all` goes to the scenarios that carry it; sim_reset alone refuses it.
    let all = dir.join("all_tf");
    let o = run(&[
        "synth",
        "all",
        "--tf-rate",
        "30",
        "-o",
        all.to_str().unwrap(),
    ]);
    assert_code(&o, 0, "synth all --tf-rate 30");
    assert!(all.join("sim_reset").is_dir() && all.join("arm_wall").is_dir());
    let o = run(&[
        "synth",
        "sim_reset",
        "--tf-rate",
        "30",
        "-o",
        all.to_str().unwrap(),
    ]);
    // A parameter that does not apply to the scenario: a usage error.
    assert_code(&o, 2, "synth sim_reset --tf-rate");
    assert!(
        o.stderr.contains("--tf-rate") && o.stderr.contains("sim_reset"),
        "{}",
        o.stderr
    );
}

#[test]
fn tf_contract() {
    let w = bag("arm_wall");
    let o = run(&[
        "tf",
        NOPE,
        "--target-frame",
        "map",
        "--topics",
        "/joint_states",
    ]);
    assert_error(&o, &[NOPE], "tf on a missing path");
    let o = run(&["tf", &w, "--target-frame", "map", "--topics", "/nope"]);
    assert_error(&o, &["/nope"], "tf unknown topic");
    let o = run(&[
        "tf",
        &w,
        "--target-frame",
        "map",
        "--topics",
        "/joint_states",
        "--json",
    ]);
    assert!(matches!(o.code, 0 | 3), "tf: exit {} {}", o.code, o.stderr);
}

#[test]
fn observe_contract() {
    let contract = format!("{}/../../docs/observe-arm.yaml", env!("CARGO_MANIFEST_DIR"));
    let out = tempdir("observe");
    let o_dir = out.join("obs");
    let o = run(&[
        "observe",
        NOPE,
        "--contract",
        &contract,
        "-o",
        o_dir.to_str().unwrap(),
    ]);
    assert_error(&o, &[NOPE], "observe on a missing path");
    let o = run(&[
        "observe",
        &bag("arm_wall"),
        "--contract",
        NOPE,
        "-o",
        o_dir.to_str().unwrap(),
    ]);
    assert_ne!(o.code, 0, "observe with a missing contract: {}", o.stderr);
    assert!(o.stderr.contains(NOPE), "names the contract: {}", o.stderr);
    let o = run(&[
        "observe",
        &bag("arm_wall"),
        "--contract",
        &contract,
        "-o",
        o_dir.to_str().unwrap(),
        "--json",
    ]);
    assert_code(&o, 0, "observe arm_wall with the documented contract");
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("observe --json");
    assert!(v["observations"].as_u64().unwrap_or(0) > 0, "{}", o.stdout);
    assert!(o_dir.join("observations.parquet").is_file());
    assert!(o_dir.join("rejections.parquet").is_file());
}

#[test]
fn hist_contract() {
    let s = bag("sensors");
    let o = run(&["hist", NOPE, "--topics", "/camera/image_raw"]);
    assert_error(&o, &[NOPE], "hist on a missing path");
    let o = run(&["hist", &s, "--topics", "/camera/image_raw,/nope"]);
    assert_error(
        &o,
        &["/nope", "/imu/data"],
        "hist unknown topic (the bag's topics listed)",
    );
    let o = run(&[
        "hist",
        &s,
        "--topics",
        "/camera/image_raw,/lidar/points",
        "--json",
    ]);
    assert_code(&o, 0, "hist sensors");
    let dir = tempdir("hist");
    let o = run(&[
        "hist",
        &s,
        "--topics",
        "/camera/image_raw,/lidar/points",
        "-o",
        dir.join("h.bmpx").to_str().unwrap(),
    ]);
    assert!(matches!(o.code, 1 | 2), "hist -o h.bmpx: exit {}", o.code);
    assert!(o.stderr.contains("h.bmpx"), "{}", o.stderr);
}

#[test]
fn echo_contract() {
    let s = bag("sensors");
    let o = run(&["echo", NOPE, "--topic", "/imu/data"]);
    assert_error(&o, &[NOPE], "echo on a missing path");
    let o = run(&["echo", &s, "--topic", "/nope"]);
    assert_error(&o, &["/nope"], "echo unknown topic");
    let o = run(&["echo", &s, "--topic", "/imu/data", "--limit", "ten"]);
    assert_usage(&o, "ten", "echo --limit ten");
    let o = run(&["echo", &s, "--topic", "/imu/data", "--limit", "3"]);
    assert_code(&o, 0, "echo sensors");
    let t = truncated_bag("echo");
    let cut = t.join("cut.mcap");
    let o = run(&["echo", cut.to_str().unwrap(), "--topic", "/joint_states"]);
    assert_code(&o, 3, "echo of a cut bag");
}

#[test]
fn report_contract() {
    let dir = tempdir("report");
    let o = run(&["report", NOPE, "-o", dir.join("r").to_str().unwrap()]);
    assert_error(&o, &[NOPE], "report on a missing path");
    let file = dir.join("a_file");
    std::fs::write(&file, b"x").unwrap();
    let o = run(&[
        "report",
        &bag("arm_wall"),
        "-o",
        file.join("sub").to_str().unwrap(),
    ]);
    assert_error(&o, &["a_file"], "report into a path under a file");
    let cut = truncated_bag("report");
    let o = run(&[
        "report",
        cut.to_str().unwrap(),
        "-o",
        dir.join("cut").to_str().unwrap(),
    ]);
    assert_code(&o, 3, "report on a cut bag");
}

/// Runs `bagscope ARGS | READER` under bash; returns bagscope's own exit code and stderr.
fn piped(args: &[&str], reader: &str) -> (i32, String) {
    let script = format!(r#""$@" | {reader}; exit "${{PIPESTATUS[0]}}""#);
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .arg(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_quiet_on_closed_pipe(cases: &[Vec<&str>]) {
    for a in cases {
        // A closed pipe exits 0; if the whole output fit in the pipe before the reader left,
        // the command's usual code (`check`: 3 for findings) is right too.
        let usual = run(a).code;
        // `head -c 10` as in the README; `true` closes the pipe before bagscope writes
        // anything, so the first write fails whatever the output size.
        for reader in ["head -c 10 >/dev/null", "true"] {
            let (code, err) = piped(a, reader);
            assert!(
                code == 0 || code == usual,
                "{a:?} | {reader}: exit {code}: {err}"
            );
            assert!(err.is_empty(), "{a:?} | {reader} printed: {err}");
        }
    }
}

#[test]
fn broken_pipe_exits_quietly() {
    let s = bag("sensors");
    let b = bag("sensors_bimodal");
    assert_quiet_on_closed_pipe(&[
        vec!["info", &s],
        vec!["clocks", &b],
        vec![
            "sync",
            &s,
            "--topics",
            "/camera/image_raw,/lidar/points",
            "--recommend",
        ],
        vec!["check", &s],
        vec!["echo", &s, "--topic", "/imu/data"],
        vec!["echo", &s, "--topic", "/imu/data", "--json"],
        // play's report goes to a closed stdout after a paced (dry) run.
        vec!["play", &bag("arm_wall"), "--duration", "0.2", "--dry-run"],
        vec![
            "play",
            &bag("arm_wall"),
            "--duration",
            "0.2",
            "--dry-run",
            "--json",
        ],
    ]);
}

/// `--json` output into a closed pipe: `render::json` writes with `serde_json::to_writer_pretty`,
/// whose error hides the `io::Error` from anyhow's chain (serde_json's `source()` skips it), so
/// main() does not recognise the broken pipe.
#[test]
fn broken_pipe_exits_quietly_json() {
    let s = bag("sensors");
    let b = bag("sensors_bimodal");
    assert_quiet_on_closed_pipe(&[
        vec!["info", &s, "--json"],
        vec!["clocks", &b, "--json"],
        vec![
            "hist",
            &b,
            "--topics",
            "/camera/image_raw,/lidar/points",
            "--json",
        ],
    ]);
}

#[test]
fn export_and_batch_contract() {
    assert_code(&run(&["export"]), 2, "export without arguments");
    assert_error(
        &run(&[
            "export",
            NOPE,
            "--topics",
            "/a",
            "-o",
            "/tmp/bagscope-x.parquet",
        ]),
        &[NOPE],
        "export on a missing path",
    );
    assert_error(
        &run(&["batch", NOPE, "-o", "/tmp/bagscope-batch-out"]),
        &[NOPE],
        "batch on a missing path",
    );
    let out = std::env::temp_dir().join(format!("bagscope-export-{}.parquet", std::process::id()));
    let o = run(&[
        "export",
        &bag("arm_wall"),
        "--topics",
        "/joint_states",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_code(&o, 0, "export of a clean bag");
    let _ = std::fs::remove_file(out);
}

/// `--topics a,b` and `--topics a b` are the same request on every command that takes a list.
#[test]
fn topic_lists_take_commas_or_spaces() {
    let s = bag("sensors");
    let pair = ["/camera/image_raw", "/lidar/points"];
    let joined = pair.join(",");
    for cmd in [
        vec!["sync", &s, "--policy", "exact-py", "--json", "--topics"],
        vec!["hist", &s, "--json", "--topics"],
    ] {
        let mut spaced = cmd.clone();
        spaced.extend(pair);
        let mut commas = cmd.clone();
        commas.push(&joined);
        let a = run(&spaced);
        let b = run(&commas);
        assert_code(&a, 0, &format!("{spaced:?}"));
        assert_eq!(a.stdout, b.stdout, "{spaced:?} and {commas:?} differ");
    }
}

/// Every argument and flag of every command says what it is in `--help`.
#[test]
fn every_argument_has_a_help_line() {
    let o = run(&["--help"]);
    let commands: Vec<String> = o
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect();
    let mut missing = Vec::new();
    for c in &commands {
        // `--help` (long help): an item's description is on its line or on the next lines,
        // indented further.
        let h = run(&[c.as_str(), "--help"]).stdout;
        let lines: Vec<&str> = h.lines().collect();
        let mut in_list = false;
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("Arguments:") || l.starts_with("Options:") {
                in_list = true;
                continue;
            }
            if !in_list
                || !l.starts_with("  ")
                || l.starts_with("      ") && !l.trim_start().starts_with('-')
            {
                continue;
            }
            let item = l.trim();
            let same_line = item.split("  ").filter(|p| !p.trim().is_empty()).count() > 1;
            let next_line = lines
                .get(i + 1)
                .is_some_and(|n| n.starts_with("          ") && !n.trim().is_empty());
            if !same_line && !next_line {
                missing.push(format!("{c}: {item}"));
            }
        }
    }
    assert!(missing.is_empty(), "no help line: {missing:#?}");
}

/// One output flag, `-o/--output` (`--out` kept as an alias), on every command that writes;
/// `-` is a usage error there (these outputs are files), never a file or folder named `-`.
#[test]
fn output_flag_is_one_name_and_dash_is_refused() {
    let s = bag("sensors");
    let dir = tempdir("dash");
    for args in [
        vec!["export", s.as_str(), "--topics", "/imu/data", "-o", "-"],
        vec!["report", s.as_str(), "--output", "-"],
        vec!["hist", s.as_str(), "--topics", "/imu/data", "-o", "-"],
        vec!["synth", "sensors", "-o", "-"],
    ] {
        let o = std::process::Command::new(common::bin())
            .args(&args)
            .current_dir(&*dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("standard output"),
            "{args:?}"
        );
        assert!(!dir.join("-").exists(), "{args:?} created `-`");
    }
    let r = dir.join("r");
    let o = run(&["report", &s, "--out", r.to_str().unwrap()]);
    assert_code(&o, 0, "report --out (alias)");
    assert!(r.join("report.json").exists());
}

/// `play` takes `ros2 bag play`'s short flags and QoS option name, and a dry run says what it
/// would have published, not that it published.
#[test]
fn play_takes_ros2_bag_play_flags() {
    let b = bag("arm_wall");
    let dir = tempdir("qos");
    let qos = dir.join("qos.yaml");
    std::fs::write(&qos, "/arm_cmd:\n  reliability: best_effort\n").unwrap();
    let o = run(&[
        "play",
        &b,
        "-r",
        "4",
        "-d",
        "0",
        "--duration",
        "0.4",
        "--topics",
        "/arm_cmd",
        "--qos-profile-overrides-path",
        qos.to_str().unwrap(),
        "--dry-run",
        "--json",
    ]);
    assert_code(&o, 0, "play -r 4 --dry-run");
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["rate"], 4.0);
    assert_eq!(v["mode"], "dry_run");
    let o = run(&["play", &b, "-r", "4", "--duration", "0.4", "--dry-run"]);
    assert_code(&o, 0, "play --dry-run (text)");
    assert!(o.stdout.contains("would be published"), "{}", o.stdout);
    assert!(!o.stdout.contains(") published"), "{}", o.stdout);
}

/// Parameters that do not apply, or name what does not exist, are usage errors (exit 2) that say
/// why: `--slop` with a policy that has none, one topic where two are needed, an unknown
/// `--fail-on` code, a `report --pair` topic the bag lacks.
#[test]
fn bad_parameters_exit_2_with_the_reason() {
    let s = bag("sensors");
    let a = bag("arm_wall");
    let dir = tempdir("params");
    let rep = dir.join("r");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "sync",
                &s,
                "--topics",
                "/camera/image_raw,/lidar/points",
                "--policy",
                "exact",
                "--slop",
                "30ms",
            ],
            "--slop: applies to --policy approx-py only",
        ),
        (
            vec![
                "sync",
                &s,
                "--topics",
                "/camera/image_raw",
                "--policy",
                "exact",
            ],
            "needs 2 to 9 topics",
        ),
        (
            vec!["check", &s, "--fail-on", "nonsense"],
            "--fail-on: no check gives the code nonsense",
        ),
        (
            vec![
                "report",
                &a,
                "--pair",
                "/nope:/joint_states",
                "-o",
                rep.to_str().unwrap(),
            ],
            "topic /nope is not in the bag",
        ),
    ];
    for (args, needle) in cases {
        let o = run(&args);
        assert_code(&o, 2, &format!("{args:?}"));
        assert!(o.stderr.contains(needle), "{args:?}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{args:?}: stdout on a usage error");
    }
    assert!(!rep.exists(), "a refused report wrote its folder");
}

/// A folder of bags given where one bag is expected says which bags it holds and suggests
/// `batch`.
#[test]
fn a_folder_of_bags_names_them_and_suggests_batch() {
    let o = run(&["info", root().join("bags").to_str().unwrap()]);
    assert_code(&o, 1, "info bags/");
    for needle in ["arm_wall", "sensors", "bagscope batch"] {
        assert!(o.stderr.contains(needle), "{needle}: {}", o.stderr);
    }
}

/// `-` is standard output where the output is JSON lines (`sync --evidence`,
/// `--evidence-drops`, `tf --evidence`): the lines alone on stdout, the report on stderr; two
/// outputs on stdout at once are a usage error naming both flags.
#[test]
fn dash_is_standard_output_for_json_lines() {
    let s = bag("sensors");
    let dir = tempdir("dash-jsonl");
    let topics = "/camera/image_raw,/lidar/points";
    let base = [
        "sync",
        &s,
        "--topics",
        topics,
        "--policy",
        "approx-py",
        "--slop",
        "30ms",
    ];
    let with = |extra: &[&str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        std::process::Command::new(common::bin())
            .args(&v)
            .current_dir(&*dir)
            .output()
            .unwrap()
    };
    let o = with(&["--evidence", "-", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&o.stderr).unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, report["sets"].as_u64().unwrap());
    assert!(lines.iter().all(|l| l["members"].is_array()));
    // The same lines as a file would hold.
    let f = dir.join("sets.jsonl");
    let o2 = with(&["--evidence", f.to_str().unwrap()]);
    assert_eq!(o2.status.code(), Some(0));
    assert_eq!(std::fs::read(&f).unwrap(), o.stdout);

    let o = with(&["--evidence-drops", "-"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(
        text.contains("sets, match rate"),
        "report on stderr: {text}"
    );
    assert!(String::from_utf8_lossy(&o.stdout)
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).unwrap()["dropped"].is_object()));

    let o = with(&["--evidence", "-", "--evidence-drops", "-"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--evidence -") && err.contains("--evidence-drops -"),
        "{err}"
    );
    assert!(o.stdout.is_empty());

    let o = std::process::Command::new(common::bin())
        .args([
            "tf",
            &s,
            "--target-frame",
            "base_link",
            "--topics",
            "/imu/data",
            "--evidence",
            "-",
        ])
        .current_dir(&*dir)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let n = String::from_utf8_lossy(&o.stdout)
        .lines()
        .inspect(|l| {
            assert_eq!(
                serde_json::from_str::<Value>(l).unwrap()["topic"],
                "/imu/data"
            )
        })
        .count();
    assert!(n > 100, "{n} lines");
    assert!(String::from_utf8_lossy(&o.stderr).contains("target frame base_link"));
    assert!(!dir.join("-").exists());
}

/// Every parameter that does not apply to the command as asked is a usage error (exit 2) naming
/// the parameter as its flag, for each command that has such parameters; nothing on stdout.
#[test]
fn parameters_that_do_not_apply_exit_2() {
    let s = bag("sensors");
    let a = bag("arm_wall");
    let dir = tempdir("na");
    let out = dir.join("x");
    let out = out.to_str().unwrap();
    let pair = "/camera/image_raw,/lidar/points";
    let sync = |extra: &[&str]| {
        let mut v = vec!["sync", s.as_str(), "--topics", pair];
        v.extend(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let matching = |cmd: &str, extra: &[&str]| {
        let mut v = vec![cmd, a.as_str()];
        if cmd == "compare" {
            v.push(a.as_str());
        }
        v.extend(["--command", "/arm_cmd", "--response", "/joint_states"]);
        v.extend(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (sync(&["--policy", "exact", "--slop", "30ms"]), "--slop"),
        (sync(&["--recommend", "--slop", "30ms"]), "--slop"),
        (
            sync(&["--policy", "approx", "--epsilon", "5ms"]),
            "--epsilon",
        ),
        (
            sync(&["--policy", "exact", "--age-penalty", "0.2"]),
            "--age-penalty",
        ),
        (
            sync(&["--policy", "exact", "--max-interval", "1s"]),
            "--max-interval",
        ),
        (
            sync(&["--policy", "exact", "--lower-bound", "/lidar/points=5ms"]),
            "--lower-bound",
        ),
        (
            sync(&["--policy", "exact", "--queue-offset", "/lidar/points=5ms"]),
            "--queue-offset",
        ),
        (
            sync(&["--policy", "exact", "--allow-headerless"]),
            "--allow-headerless",
        ),
        (
            sync(&["--policy", "exact", "--sync-arrival-time"]),
            "--sync-arrival-time",
        ),
        (
            sync(&["--policy", "approx", "--rate-config", "0.9,0.3,10"]),
            "--rate-config",
        ),
        (sync(&["--slop", "30ms", "--speed", "1"]), "--speed"),
        (sync(&["--slop", "30ms", "--fx", "500"]), "--fx"),
        (sync(&["--slop", "30ms", "--depth", "2"]), "--depth"),
        (
            sync(&["--slop", "30ms", "--pixel-budget", "2"]),
            "--pixel-budget",
        ),
        (sync(&["--recommend", "--max-age", "50ms"]), "--max-age"),
        (sync(&["--recommend", "--tf-target", "map"]), "--tf-target"),
        (sync(&["--recommend", "--evidence", out]), "--evidence"),
        (
            sync(&["--recommend", "--evidence-drops", out]),
            "--evidence-drops",
        ),
        (
            sync(&["--slop", "30ms", "--anchor", "/lidar/points"]),
            "--anchor",
        ),
        (
            sync(&["--slop", "30ms", "--tf-topics", "/tf"]),
            "--tf-topics",
        ),
        (
            sync(&["--slop", "30ms", "--tf-buffer", "5s"]),
            "--tf-buffer",
        ),
        (
            matching("match", &["--align", "relative", "--clock-topic", "/clock"]),
            "--clock-topic",
        ),
        (
            matching("match", &["--window", "1s..5s", "--keep-still"]),
            "--keep-still",
        ),
        (
            matching(
                "compare",
                &["--align", "relative", "--clock-topic", "/clock"],
            ),
            "--clock-topic",
        ),
        (
            [
                "export",
                a.as_str(),
                "-o",
                out,
                "--timing-only",
                "--fields",
                "position",
            ]
            .map(String::from)
            .to_vec(),
            "--fields",
        ),
        (
            [
                "export",
                a.as_str(),
                "-o",
                out,
                "--timing-only",
                "--explode",
            ]
            .map(String::from)
            .to_vec(),
            "--explode",
        ),
        (
            ["synth", "sim_reset", "--tf-rate", "30", "-o", out]
                .map(String::from)
                .to_vec(),
            "--tf-rate",
        ),
        (
            ["synth", "perf", "--delay", "0.01", "-o", out]
                .map(String::from)
                .to_vec(),
            "--messages",
        ),
    ];
    for (args, flag) in cases {
        let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_code(&o, 2, &format!("{args:?}"));
        assert!(o.stderr.contains(flag), "{args:?}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{args:?}: stdout on a usage error");
    }
    assert!(
        !dir.join("x").exists(),
        "a refused command wrote its output"
    );
}
