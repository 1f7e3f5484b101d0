//! rosbag2 sqlite3 (`.db3`) bags behind the same commands as MCAP (issue #12).
//!
//! * `tests/data/db3/` (arm bags rewritten with `rosbags`, see its README) is always checked.
//! * `../shared/corpus/ros2` (rosbag2's and rosbags-rs's own `.db3` test bags, with summaries made
//!   by Python's sqlite3) exists next to the project's checkout: without it these tests say so
//!   and skip, but fail when `CI` is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use bagscope_bag::Bag;
use serde_json::Value;

mod common;
use common::run;
use common::{root, tempdir};

fn shared() -> Option<PathBuf> {
    common::shared_path("", "corpus/tools/summaries_db3.jsonl")
}

fn fixtures() -> PathBuf {
    root().join("tests/data/db3")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert!(code == 0 || code == 3, "{args:?} exited {code}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

/// (topic, type) → (count, first, last).
type PerTopic = BTreeMap<(String, String), (u64, Option<i64>, Option<i64>)>;

/// Per-topic counts and ranges from a scan of log times (and from the SQL aggregates, which
/// must agree).
fn per_topic(bag: &Bag) -> PerTopic {
    let scan = bag.log_times(&bag.all_topics());
    let mut m = PerTopic::new();
    for t in &bag.topics {
        m.insert((t.name.clone(), t.type_name.clone()), (0, None, None));
    }
    let mut prev = i64::MIN;
    for it in &scan.items {
        assert!(it.log_time_ns >= prev, "scan is not in log-time order");
        prev = it.log_time_ns;
        let t = &bag.topics[it.topic];
        let e = m.get_mut(&(t.name.clone(), t.type_name.clone())).unwrap();
        e.0 += 1;
        e.1 = Some(e.1.map_or(it.log_time_ns, |f| f.min(it.log_time_ns)));
        e.2 = Some(e.2.map_or(it.log_time_ns, |l| l.max(it.log_time_ns)));
    }
    if let Some(aggs) = bag.topic_aggregates() {
        for (t, a) in bag.topics.iter().zip(aggs) {
            let e = m[&(t.name.clone(), t.type_name.clone())];
            let a = a.map_or((0, None, None), |a| {
                (a.count, Some(a.first_ns), Some(a.last_ns))
            });
            assert_eq!(e, a, "{}: scan and SQL aggregates disagree", t.name);
        }
    }
    m
}

#[test]
fn corpus_db3_counts_and_ranges_match_summaries() {
    let Some(shared) = shared() else { return };
    let text = std::fs::read_to_string(shared.join("corpus/tools/summaries_db3.jsonl")).unwrap();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let s: Value = serde_json::from_str(line).unwrap();
        let file = shared.join("corpus").join(s["file"].as_str().unwrap());
        let bag = Bag::open(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(bag.storage(), "sqlite3");
        assert!(!bag.has_publish_time());
        let got = per_topic(&bag);
        let want = s["topics"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{}: topic count", file.display());
        for t in want {
            let key = (
                t["topic"].as_str().unwrap().to_string(),
                t["type"].as_str().unwrap().to_string(),
            );
            let (count, first, last) = got
                .get(&key)
                .unwrap_or_else(|| panic!("{}: no topic {key:?}", file.display()));
            assert_eq!(
                *count,
                t["count"].as_u64().unwrap(),
                "{}: {key:?}",
                file.display()
            );
            let ts = &t["ts"];
            let want_range = ts
                .as_array()
                .map(|a| (a[0].as_i64(), a[1].as_i64()))
                .unwrap_or((None, None));
            assert_eq!((*first, *last), want_range, "{}: {key:?}", file.display());
        }
        n += 1;
    }
    assert!(n >= 20, "only {n} summaries");
}

#[test]
fn corpus_folders_and_split_sets_open() {
    let Some(shared) = shared() else { return };
    let r = shared.join("corpus/ros2/rosbag2");
    // Split set with metadata.yaml (5 files).
    let wbag = Bag::open(r.join("rosbag2_py/test/resources/sqlite3/wbag")).unwrap();
    assert_eq!(wbag.db3_files.len(), 5);
    let total: u64 = per_topic(&wbag).values().map(|v| v.0).sum();
    let sum: u64 = wbag.db3_files.iter().map(|f| f.message_count()).sum();
    assert_eq!(total, sum);
    // Split set without metadata.yaml.
    let mf =
        Bag::open(r.join("rosbag2_py/test/resources/sqlite3/reindex_test_bags/multiple_files"))
            .unwrap();
    assert_eq!(mf.db3_files.len(), 3);
    // Folders with an (empty) -wal and -shm beside the database: no warning, same data.
    let talker = Bag::open(r.join("rosbag2_py/test/resources/sqlite3/talker")).unwrap();
    assert!(
        talker
            .open_warnings()
            .iter()
            .all(|w| w.code != "unmerged_wal"),
        "{:?}",
        talker.open_warnings()
    );
    assert_eq!(per_topic(&talker).values().map(|v| v.0).sum::<u64>(), 20);
    // A type bagscope does not know (no embedded definition, no built-in): log times still
    // work, and the topic says why it has no stamps.
    let seek = r.join("rosbag2_transport/test/resources/sqlite3/test_bag_for_seek");
    let v = json(&["clocks", seek.to_str().unwrap(), "--json"]);
    let codes: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"undecodable_topic"), "{codes:?}");
    assert_eq!(v["topics"][0]["count"], 5);
    // `info` works on a db3 folder through the CLI.
    let v = json(&[
        "info",
        r.join("ros2bag/test/resources/empty_bag").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["storage"], "sqlite3");
    assert_eq!(v["message_count"], 0);
}

/// Every message of the talker and service-event bags decodes with the dynamic decoder
/// (embedded definitions where the bag has them, built-ins otherwise).
#[test]
fn talker_and_service_event_bags_decode() {
    let Some(shared) = shared() else { return };
    let r = shared.join("corpus/ros2/rosbag2");
    for p in [
        "rosbag2_py/test/resources/sqlite3/talker",
        "rosbag2_tests/resources/sqlite3/bag_with_topics_and_service_events",
        "rosbag2_cpp/test/rosbag2_cpp/bags/topics_and_services.db3",
    ] {
        let bag = Bag::open(r.join(p)).unwrap();
        let schemas = bagscope::series::topic_schemas(&bag);
        let scan = bag.scan(&bag.all_topics(), |m| match &schemas[m.topic] {
            Ok(s) => bagscope_msg::decode(s, m.data)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("no schema: {e}")),
        });
        assert!(!scan.items.is_empty(), "{p}: no messages");
        for it in &scan.items {
            if let Err(e) = &it.value {
                panic!(
                    "{p}: {} at {}: {e}",
                    bag.topics[it.topic].name, it.log_time_ns
                );
            }
        }
        assert!(scan.warnings.is_empty(), "{p}: {:?}", scan.warnings);
    }
}

/// Directory listing with sizes and modification times.
fn listing(d: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn reading_never_touches_the_bag_folder() {
    let d = tempdir("ro");
    let bag = d.join("arm_split");
    copy_dir(&fixtures().join("arm_split"), &bag);
    let before = listing(&bag);
    let b = bag.to_str().unwrap();
    for args in [
        vec!["info", b, "--json"],
        vec!["clocks", b, "--json"],
        vec!["check", b, "--json"],
    ] {
        let (code, _, err) = run(&args);
        assert!(code == 0 || code == 3, "{args:?}: {err}");
    }
    let opened = Bag::open(&bag).unwrap();
    let _ = opened.scan(&opened.all_topics(), |m| m.data.len());
    assert_eq!(
        listing(&bag),
        before,
        "reading created or changed files in the bag folder"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn damaged_databases_say_which_file() {
    let d = tempdir("damage");
    let src = fixtures().join("arm_real/arm_real.db3");
    let bytes = std::fs::read(&src).unwrap();

    // Truncated: a clear error naming the file.
    let cut = d.join("cut.db3");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let e = Bag::open(&cut).unwrap_err().to_string();
    assert!(e.contains("cut.db3") && e.contains("truncated"), "{e}");
    let (code, _, err) = run(&["info", cut.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("cut.db3"), "{err}");

    // Cut inside the header.
    let tiny = d.join("tiny.db3");
    std::fs::write(&tiny, &bytes[..60]).unwrap();
    let e = Bag::open(&tiny).unwrap_err().to_string();
    assert!(e.contains("tiny.db3"), "{e}");

    // A hot rollback journal: the database is locked / mid-write.
    let locked = d.join("locked");
    std::fs::create_dir_all(&locked).unwrap();
    std::fs::copy(&src, locked.join("x.db3")).unwrap();
    std::fs::write(locked.join("x.db3-journal"), vec![1u8; 512]).unwrap();
    let e = Bag::open(locked.join("x.db3")).unwrap_err().to_string();
    assert!(e.contains("x.db3") && e.contains("locked"), "{e}");

    // Un-checkpointed WAL: readable, but says messages may be missing.
    let wal = d.join("wal");
    std::fs::create_dir_all(&wal).unwrap();
    std::fs::copy(&src, wal.join("y.db3")).unwrap();
    std::fs::write(wal.join("y.db3-wal"), vec![0u8; 4096]).unwrap();
    let bag = Bag::open(wal.join("y.db3")).unwrap();
    let w = bag.open_warnings();
    assert!(
        w.iter().any(|w| w.code == "unmerged_wal" && w.data_loss),
        "{w:?}"
    );

    // Damaged page in the middle: an error (or data-loss warning), never a panic.
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    for b in &mut bad[mid..mid + 8192] {
        *b = 0xA5;
    }
    let badp = d.join("bad.db3");
    std::fs::write(&badp, &bad).unwrap();
    let whole = {
        let bag = Bag::open(&src).unwrap();
        bag.scan(&bag.all_topics(), |_| ()).items.len()
    };
    match Bag::open(&badp) {
        Err(e) => {
            eprintln!("damaged page: open fails: {e}");
            assert!(e.to_string().contains("bad.db3"), "{e}")
        }
        Ok(bag) => {
            // Read what is readable; whatever is lost is said, with the file named.
            let s = bag.scan(&bag.all_topics(), |_| ());
            let said =
                s.warnings.iter().chain(&bag.open_warnings()).any(|w| {
                    w.data_loss && w.file.as_deref().is_some_and(|f| f.contains("bad.db3"))
                });
            eprintln!(
                "damaged page: {} of {whole} messages read, loss said: {said}",
                s.items.len()
            );
            assert!(
                said || s.items.len() == whole,
                "{} of {whole} messages read and no data-loss warning naming bad.db3: {:?}",
                s.items.len(),
                s.warnings
            );
        }
    }

    // Not a database at all.
    let junk = d.join("junk.db3");
    std::fs::write(&junk, b"hello").unwrap();
    assert!(Bag::open(&junk).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn metadata_disagreeing_with_the_database_is_a_warning() {
    let d = tempdir("meta");
    let bag = d.join("arm_split");
    copy_dir(&fixtures().join("arm_split"), &bag);
    let y = std::fs::read_to_string(bag.join("metadata.yaml")).unwrap();
    // Wrong per-topic count and wrong total.
    let y = y
        .replacen("message_count: 480", "message_count: 481", 1)
        .replacen("message_count: 5400", "message_count: 5401", 1);
    std::fs::write(bag.join("metadata.yaml"), y).unwrap();
    let b = Bag::open(&bag).unwrap();
    let w = b.open_warnings();
    let mism: Vec<_> = w
        .iter()
        .filter(|w| w.code == "metadata_count_mismatch")
        .collect();
    assert!(mism.len() >= 2, "{w:?}");
    // A file the metadata lists but the folder lacks.
    std::fs::remove_file(bag.join("arm_split_1.db3")).unwrap();
    let b = Bag::open(&bag).unwrap();
    assert!(b
        .open_warnings()
        .iter()
        .any(|w| w.code == "missing_file" && w.data_loss));
    // A .db3 in the folder that metadata.yaml does not list.
    std::fs::copy(bag.join("arm_split_0.db3"), bag.join("extra.db3")).unwrap();
    let b = Bag::open(&bag).unwrap();
    assert!(b.open_warnings().iter().any(|w| w.code == "unlisted_file"));
    let _ = std::fs::remove_dir_all(&d);
}

/// Publish time is absent on sqlite3, never 0.
#[test]
fn db3_has_no_publish_time() {
    let bag = Bag::open(fixtures().join("arm_real")).unwrap();
    let s = bag.scan(&bag.all_topics(), |m| m.publish_time_ns);
    assert_eq!(s.items.len(), 3000);
    assert!(s.items.iter().all(|i| i.value.is_none()));
    let (series, _) = bagscope::series::scan_series(&bag, &bag.all_topics());
    for t in &series {
        assert!(t.publish_time_ns.is_empty(), "{}", t.topic);
        assert!(!t.log_time_ns.is_empty(), "{}", t.topic);
    }
}

fn axes(v: &Value) -> BTreeMap<String, Value> {
    v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["topic"].as_str().unwrap().to_string(), t["axis"].clone()))
        .collect()
}

fn delay_ms(v: &Value) -> f64 {
    let d = &v["delay"];
    let ns = d["delay_ns"]
        .as_f64()
        .or_else(|| d["estimate_ns"].as_f64())
        .or_else(|| v["delay_ns"].as_f64())
        .unwrap_or_else(|| panic!("no delay in {v}"));
    ns / 1e6
}

/// The `.db3` rewrites of the arm bags give the same clock axes, split verdict and delay as the
/// MCAP originals.
#[test]
fn db3_arm_bags_match_their_mcap_originals() {
    let Some(shared) = shared() else { return };
    for name in ["arm_real", "arm_split"] {
        let m = shared.join("bags").join(name);
        let d = fixtures().join(name);
        let (m, d) = (m.to_str().unwrap(), d.to_str().unwrap());
        let cm = json(&["clocks", m, "--json"]);
        let cd = json(&["clocks", d, "--json"]);
        assert_eq!(cm["recorder_axis"], cd["recorder_axis"], "{name}");
        assert_eq!(cm["split"], cd["split"], "{name}");
        assert_eq!(cm["axis_groups"], cd["axis_groups"], "{name}");
        assert_eq!(axes(&cm), axes(&cd), "{name}");
        let args = |b: &str| {
            vec![
                "match".to_string(),
                b.to_string(),
                "--command".into(),
                "/arm_cmd".into(),
                "--response".into(),
                "/joint_states".into(),
                "--json".into(),
            ]
        };
        let am: Vec<String> = args(m);
        let ad: Vec<String> = args(d);
        let mm = json(&am.iter().map(String::as_str).collect::<Vec<_>>());
        let md = json(&ad.iter().map(String::as_str).collect::<Vec<_>>());
        let (a, b) = (delay_ms(&mm), delay_ms(&md));
        assert!(
            (a - b).abs() <= 0.1,
            "{name}: delay {a} ms (mcap) vs {b} ms (db3)"
        );
        assert_eq!(mm["command_axis"], md["command_axis"], "{name}");
        assert_eq!(mm["response_axis"], md["response_axis"], "{name}");
        // sync reads only stamps and log times: the whole report is the same.
        let sync = |b: &str| {
            let mut v = json(&[
                "sync",
                b,
                "--topics",
                "/arm_cmd,/joint_states",
                "--slop",
                "20ms",
                "--json",
            ]);
            v.as_object_mut().unwrap().remove("bag");
            v
        };
        assert_eq!(sync(m), sync(d), "{name}: sync differs");
    }
}

/// A python with the foxglove `mcap` package, in a venv made once under `target/tmp`.
fn python_mcap() -> Option<PathBuf> {
    // Under target/, not the system temp dir (which CI needs for building).
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("db3-pymcap");
    let py = venv.join("bin/python");
    let ok = |py: &Path| {
        Command::new(py)
            .args(["-c", "import mcap.reader"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok(&py) {
        let _ = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status();
        let _ = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "mcap"])
            .status();
    }
    if ok(&py) {
        return Some(py);
    }
    // No venv module (Debian without python3-venv): install into a plain folder instead.
    let target = venv.join("site");
    let _ = Command::new("python3")
        .args(["-m", "pip", "install", "-q", "--target"])
        .arg(&target)
        .arg("mcap")
        .status();
    let wrapper = venv.join("python-with-mcap");
    if target.join("mcap").exists() {
        let _ = std::fs::create_dir_all(&venv);
        let script = format!(
            "#!/bin/sh\nPYTHONPATH='{}' exec python3 \"$@\"\n",
            target.display()
        );
        if std::fs::write(&wrapper, script).is_ok() {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755));
            if ok(&wrapper) {
                return Some(wrapper);
            }
        }
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "CI is set but `pip install mcap` failed in {}",
            venv.display()
        );
    }
    eprintln!("note: could not pip install the Python mcap reader; skipping that cross-check");
    None
}

#[test]
fn convert_db3_to_mcap_round_trips() {
    let d = tempdir("convert");
    for name in ["arm_real", "arm_split"] {
        let src = fixtures().join(name);
        let out = d.join(format!("{name}.mcap"));
        let (code, stdout, err) = run(&[
            "convert",
            src.to_str().unwrap(),
            out.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let rep: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(rep["publish_time_from_input"], false);
        // Existing output is not replaced without --force.
        let (code, _, _) = run(&["convert", src.to_str().unwrap(), out.to_str().unwrap()]);
        assert_ne!(code, 0);

        let a = Bag::open(&src).unwrap();
        let b = Bag::open(&out).unwrap();
        assert_eq!(b.storage(), "mcap");
        assert_eq!(per_topic(&a), per_topic(&b), "{name}");
        assert!(b.files[0].has_summary);
        assert_eq!(b.files[0].profile, "ros2");
        assert!(b.open_warnings().is_empty(), "{:?}", b.open_warnings());
        // Schemas are real ros2msg definitions, and payloads are byte-identical.
        for t in &b.topics {
            assert_eq!(t.schema_encoding, "ros2msg", "{}", t.name);
            assert!(!t.schema_data.is_empty(), "{}", t.name);
        }
        let pa = a.scan(&a.all_topics(), |m| (m.topic, m.data.to_vec()));
        let pb = b.scan(&b.all_topics(), |m| (m.topic, m.data.to_vec()));
        let key = |bag: &Bag, s: &bagscope_bag::Scan<(usize, Vec<u8>)>| {
            s.items
                .iter()
                .map(|i| {
                    (
                        i.log_time_ns,
                        bag.topics[i.value.0].name.clone(),
                        i.value.1.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&a, &pa), key(&b, &pb), "{name}: payloads differ");

        // The clocks analysis sees the same thing on the converted file.
        let ca = json(&["clocks", src.to_str().unwrap(), "--json"]);
        let cb = json(&["clocks", out.to_str().unwrap(), "--json"]);
        assert_eq!(axes(&ca), axes(&cb), "{name}");

        if let Some(py) = python_mcap() {
            let script = r#"
import sys, json
from mcap.reader import make_reader
with open(sys.argv[1], "rb") as f:
    r = make_reader(f)
    h = r.get_header()
    s = r.get_summary()
    counts = {}
    for schema, channel, message in r.iter_messages(log_time_order=True):
        assert schema.encoding == "ros2msg", schema.encoding
        assert channel.message_encoding == "cdr"
        assert "offered_qos_profiles" in channel.metadata
        c = counts.setdefault(channel.topic, [0, None, None])
        c[0] += 1
        c[1] = message.log_time if c[1] is None else min(c[1], message.log_time)
        c[2] = message.log_time if c[2] is None else max(c[2], message.log_time)
    md = [m.name for m in r.iter_metadata()]
    print(json.dumps({"profile": h.profile, "counts": counts, "metadata": md,
                      "stats": s.statistics.message_count,
                      "chunks": len(s.chunk_indexes)}))
"#;
            let o = Command::new(&py)
                .args(["-c", script])
                .arg(&out)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["profile"], "ros2");
            assert_eq!(v["metadata"], serde_json::json!(["rosbag2"]));
            assert!(v["chunks"].as_u64().unwrap() >= 1);
            let want = per_topic(&a);
            let mut total = 0;
            for ((topic, _), (count, first, last)) in &want {
                total += count;
                if *count == 0 {
                    continue;
                }
                let c = &v["counts"][topic];
                assert_eq!(c[0].as_u64(), Some(*count), "{name} {topic}");
                assert_eq!(c[1].as_i64(), *first, "{name} {topic}");
                assert_eq!(c[2].as_i64(), *last, "{name} {topic}");
            }
            assert_eq!(v["stats"].as_u64(), Some(total));
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn convert_rewrites_corpus_db3_with_embedded_schemas() {
    let Some(shared) = shared() else { return };
    let src = shared.join(
        "corpus/ros2/rosbag2/rosbag2_tests/resources/sqlite3/bag_with_topics_and_service_events",
    );
    let d = tempdir("convert-corpus");
    let out = d.join("svc.mcap");
    let (code, _, err) = run(&["convert", src.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let a = Bag::open(&src).unwrap();
    let b = Bag::open(&out).unwrap();
    assert_eq!(per_topic(&a), per_topic(&b));
    // QoS carried into the channel metadata, and the embedded definitions are reused.
    for (ta, tb) in a.topics.iter().zip(&b.topics) {
        assert_eq!(
            ta.offered_qos_profiles, tb.offered_qos_profiles,
            "{}",
            ta.name
        );
        assert_eq!(&*ta.schema_data, &*tb.schema_data, "{}", ta.name);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// MCAP in, MCAP out: stored schemas are reused byte for byte, and publish times kept.
#[test]
fn convert_mcap_input_keeps_schemas_and_publish_times() {
    let src = root().join("bags/arm_split");
    let d = tempdir("convert-mcap");
    let out = d.join("copy.mcap");
    let (code, stdout, err) = run(&[
        "convert",
        src.to_str().unwrap(),
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let rep: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(rep["publish_time_from_input"], true);
    let a = Bag::open(&src).unwrap();
    let b = Bag::open(&out).unwrap();
    assert_eq!(per_topic(&a), per_topic(&b));
    for (ta, tb) in a.topics.iter().zip(&b.topics) {
        assert_eq!(&*ta.schema_data, &*tb.schema_data, "{}", ta.name);
    }
    let pa = a.scan(&a.all_topics(), |m| (m.publish_time_ns, m.data.len()));
    let pb = b.scan(&b.all_topics(), |m| (m.publish_time_ns, m.data.len()));
    let va: Vec<_> = pa.items.iter().map(|i| (i.log_time_ns, i.value)).collect();
    let vb: Vec<_> = pb.items.iter().map(|i| (i.log_time_ns, i.value)).collect();
    assert_eq!(va, vb);
    // Converting onto the input itself is refused.
    let mc = src.join("arm_split.mcap");
    let (code, _, err) = run(&[
        "convert",
        src.to_str().unwrap(),
        mc.to_str().unwrap(),
        "--force",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("part of the input"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
