//! Hostile input: a message payload that is a zstd bomb, TF
//! messages naming a million frames, an interrupted run over a file-compressed bag, YAML
//! nested 100 000 deep, a `.db3` of 100 000 topics, a folder of 20 000 files, and an output
//! named as a compressed bag. Every input is built here, through the binary.

mod common;

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{bin, tempdir};

fn run(args: &[&std::ffi::OsStr]) -> Output {
    run_env(args, &[])
}

fn run_env(args: &[&std::ffi::OsStr], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{args:?}: {err}"
    );
    o
}

macro_rules! args {
    ($($a:expr),* $(,)?) => { &[$(std::ffi::OsStr::new($a)),*] };
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// std_msgs/msg/Header in little-endian CDR.
fn header_cdr(t_ns: i64, frame_id: &str) -> Vec<u8> {
    let mut b = vec![0, 1, 0, 0];
    b.extend_from_slice(&((t_ns / 1_000_000_000) as i32).to_le_bytes());
    b.extend_from_slice(&((t_ns % 1_000_000_000) as u32).to_le_bytes());
    b.extend_from_slice(&(frame_id.len() as u32 + 1).to_le_bytes());
    b.extend_from_slice(frame_id.as_bytes());
    b.push(0);
    b
}

/// A zstd frame that decompresses to `total` zero bytes: one RLE block (4 bytes) per 128 KiB,
/// so 4 GiB fit in 128 kB. No content size in the header: a reader learns the size only by
/// decompressing.
fn zero_bomb(total: u64) -> Vec<u8> {
    // Magic; frame header descriptor 0 (a window descriptor follows, no content size, no
    // checksum); window 2^17 bytes, the largest block.
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    let block = 128u64 << 10;
    let n = total.div_ceil(block);
    for i in 0..n {
        let size = block.min(total - i * block) as u32;
        // Last-block bit, block type 1 (RLE), size in the upper 21 bits.
        let h = u32::from(i + 1 == n) | (1 << 1) | (size << 3);
        f.extend_from_slice(&h.to_le_bytes()[..3]);
        f.push(0);
    }
    f
}

const T0: i64 = 1_764_460_800_000_000_000;

/// One message to write: topic index, log time, payload.
type Msg = (usize, i64, Vec<u8>);

/// A ros2-profile MCAP of `topics` (name, type; definitions built in) holding `msgs`, with a
/// `rosbag2` Metadata record holding `serialized_metadata` when given.
fn write_mcap(path: &Path, topics: &[(&str, &str)], msgs: Vec<Msg>, rosbag2_meta: Option<&str>) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = mcap::WriteOptions::new()
        .profile("ros2")
        .create(BufWriter::new(f))
        .unwrap();
    let md = BTreeMap::new();
    let channels: Vec<u16> = topics
        .iter()
        .map(|(t, ty)| {
            let s = w.add_schema(ty, "ros2msg", b"").unwrap();
            w.add_channel(s, t, "cdr", &md).unwrap()
        })
        .collect();
    for (k, (ti, t, data)) in msgs.into_iter().enumerate() {
        let h = mcap::records::MessageHeader {
            channel_id: channels[ti],
            sequence: k as u32 + 1,
            log_time: t as u64,
            publish_time: t as u64,
        };
        w.write_to_known_channel(&h, &data).unwrap();
    }
    if let Some(yaml) = rosbag2_meta {
        w.write_metadata(&mcap::records::Metadata {
            name: "rosbag2".into(),
            metadata: BTreeMap::from([("serialized_metadata".to_string(), yaml.to_string())]),
        })
        .unwrap();
    }
    w.finish().unwrap();
}

/// 20 Header messages on `/h` at 10 Hz, the 11th replaced by a zstd frame of 4 GiB of zeros;
/// with `compressed`, every other payload is a zstd frame too (rosbag2 message compression).
fn bomb_messages(compressed: bool) -> Vec<Msg> {
    (0..20)
        .map(|k| {
            let t = T0 + k * 100_000_000;
            let cdr = header_cdr(t - 1_000_000, "cam");
            let data = if k == 10 {
                zero_bomb(4 << 30)
            } else if compressed {
                zstd::encode_all(&cdr[..], 3).unwrap()
            } else {
                cdr
            };
            (0, t, data)
        })
        .collect()
}

const HEADER_TOPIC: &[(&str, &str)] = &[("/h", "std_msgs/msg/Header")];

/// The metadata rosbag2 writes into a message-compressed bag's files.
const MESSAGE_COMPRESSION_META: &str = "version: 9\nstorage_identifier: mcap\nrelative_file_paths:\n  - b_0.mcap\ncompression_format: zstd\ncompression_mode: MESSAGE\n";

/// Runs the commands that read payloads on `bag`; each must finish (no abort), with `code`
/// and saying `expect` (None: 0 or 3, anything said).
fn payload_commands_finish(bag: &Path, dir: &Path, expect: Option<(i32, &str)>) {
    let stem = bag.file_stem().unwrap().to_string_lossy();
    let export = dir.join(format!("export-{stem}"));
    let report = dir.join(format!("report-{stem}"));
    let cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        ("clocks", args!["clocks", bag, "--json"].to_vec()),
        ("check", args!["check", bag, "--json"].to_vec()),
        ("export", args!["export", bag, "-o", &export].to_vec()),
        (
            "echo",
            args!["echo", bag, "--topic", "/h", "--json"].to_vec(),
        ),
        ("report", args!["report", bag, "-o", &report].to_vec()),
    ];
    for (name, a) in cases {
        let o = run(&a);
        let mut t = text(&o);
        let Some((code, said)) = expect else {
            assert!(matches!(o.status.code(), Some(0 | 3)), "{name}: {t}");
            continue;
        };
        assert_eq!(
            o.status.code(),
            Some(code),
            "{name} on {}: {t}",
            bag.display()
        );
        if name == "report" {
            t = std::fs::read_to_string(report.join("report.json")).unwrap();
        }
        assert!(t.contains(said), "{name}: {said} not said: {t}");
    }
}

/// A payload that is a zstd frame of 4 GiB (a 130 kB file). Where the bag declares rosbag2
/// message compression (metadata.yaml, or the metadata rosbag2 writes into the file), it is
/// decompressed under the 256 MiB cap every message has: skipped with `message_too_large`,
/// the 19 others read. Where nothing declares it, the bytes are the payload: not
/// decompressed at all, the one message fails to decode, and a hint says why. Once every
/// command aborted, asking for 4 GiB at once.
#[test]
fn a_zstd_bomb_payload_is_capped_or_left_alone() {
    let dir = tempdir("bomb");
    // A rosbag2 folder that declares message compression.
    let folder = dir.join("declared");
    std::fs::create_dir(&folder).unwrap();
    write_mcap(
        &folder.join("b_0.mcap"),
        HEADER_TOPIC,
        bomb_messages(true),
        None,
    );
    std::fs::write(
        folder.join("metadata.yaml"),
        format!(
            "rosbag2_bagfile_information:\n{}",
            MESSAGE_COMPRESSION_META
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
        ),
    )
    .unwrap();
    // A bare file whose own rosbag2 metadata declares it.
    let embedded = dir.join("embedded.mcap");
    write_mcap(
        &embedded,
        HEADER_TOPIC,
        bomb_messages(true),
        Some(MESSAGE_COMPRESSION_META),
    );
    for bag in [&folder, &embedded] {
        let o = run(args!["clocks", bag, "--json"]);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        let v = json(&o);
        let w: Vec<&serde_json::Value> = v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["code"] == "message_too_large")
            .collect();
        assert_eq!(w.len(), 1, "{v}");
        assert!(w[0]["data_loss"].as_bool().unwrap());
        assert!(w[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("1 message(s)"));
        let h = v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["topic"] == "/h")
            .unwrap();
        assert_eq!(h["axis"], "wall", "{h}");
        // The 19 others decoded: echo prints them, at their stamps.
        let o = run(args!["echo", bag, "--topic", "/h", "--json"]);
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 19, "{}", text(&o));
        payload_commands_finish(bag, &dir, Some((3, "message_too_large")));
    }
    // A bare file that declares nothing: the payload is not a message compression frame.
    let bare = dir.join("bare.mcap");
    write_mcap(&bare, HEADER_TOPIC, bomb_messages(false), None);
    let o = run(args!["echo", &bare, "--topic", "/h", "--json"]);
    let n = String::from_utf8_lossy(&o.stdout).lines().count();
    assert_eq!(n, 19, "{}", text(&o));
    assert!(
        text(&o).contains("unsupported CDR encapsulation"),
        "{}",
        text(&o)
    );
    let o = run(args!["clocks", &bare, "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v = json(&o);
    let codes: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    // The message is lost to its stamp; a hint says the bag does not declare compression.
    assert_eq!(
        codes,
        ["stamp_unreadable", "unsupported_compression"],
        "{v}"
    );
    // `check` loses the same message to its stamp checks and says so as `clocks` does.
    let o = run(args!["check", &bare, "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v = json(&o);
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "stamp_unreadable" && w["topic"] == "/h"),
        "{v}"
    );
    payload_commands_finish(&bare, &dir, None);
    let o = run(args!["info", &bare, "--json"]);
    assert_eq!(json(&o)["compression"], "zstd", "{}", text(&o));
}

/// tf2_msgs/msg/TFMessage with one transform per (parent, child, stamp).
fn tf_cdr(edges: &[(String, String, i64)]) -> Vec<u8> {
    use bagscope_msg::types::{Header, TFMessage, Time, TransformStamped};
    let m = TFMessage {
        transforms: edges
            .iter()
            .map(|(p, c, t)| TransformStamped {
                header: Header {
                    stamp: Time::from_ns(*t),
                    frame_id: p.clone(),
                },
                child_frame_id: c.clone(),
                ..Default::default()
            })
            .collect(),
    };
    bagscope_msg::encode_typed(&m).unwrap()
}

/// Three TF messages carrying 100 000 distinct (parent, child) pairs, and a robot's two edges
/// at 50 Hz: `clocks` and `report` time the 1024 busiest edges (the robot's among them, in
/// full) and count the rest in a `tf_edges_untimed` warning, instead of one table row per pair
/// (once 2.4 GB and 82 MB of output for a million pairs, and an abort in `report`).
#[test]
fn tf_messages_naming_many_frames_are_counted_not_tabled() {
    let dir = tempdir("tf-edges");
    let bag = dir.join("tf.mcap");
    let mut msgs: Vec<Msg> = Vec::new();
    let n_junk = 100_000usize;
    for j in 0..3 {
        let t = T0 + j as i64 * 1_000_000;
        let edges: Vec<(String, String, i64)> = (j * n_junk / 3..(j + 1) * n_junk / 3)
            .map(|i| (format!("p{i}"), format!("c{i}"), t))
            .collect();
        msgs.push((0, t, tf_cdr(&edges)));
    }
    for k in 0..100 {
        let t = T0 + 10_000_000 + k * 20_000_000;
        let edges = vec![
            ("odom".to_string(), "base_link".to_string(), t - 1_000_000),
            ("base_link".to_string(), "arm".to_string(), t - 1_000_000),
        ];
        msgs.push((0, t, tf_cdr(&edges)));
        msgs.push((1, t, header_cdr(t - 2_000_000, "base_link")));
    }
    write_mcap(
        &bag,
        &[
            ("/tf", "tf2_msgs/msg/TFMessage"),
            ("/h", "std_msgs/msg/Header"),
        ],
        msgs,
        None,
    );
    let o = run(args!["clocks", &bag, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(o.stdout.len() < 4 << 20, "{} bytes of JSON", o.stdout.len());
    let v = json(&o);
    let edges = v["tf_edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1024);
    for child in ["base_link", "arm"] {
        let e = edges.iter().find(|e| e["child"] == child).unwrap();
        assert_eq!(e["samples"], 100, "{e}");
        assert!((e["rate_hz"].as_f64().unwrap() - 50.0).abs() < 1e-6, "{e}");
        assert_eq!(e["lag_ns"]["p50"], 1_000_000, "{e}");
    }
    let w = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "tf_edges_untimed")
        .unwrap_or_else(|| panic!("no tf_edges_untimed: {v}"));
    let m = w["message"].as_str().unwrap();
    // 100 002 edges, 1024 timed; the others counted one by one up to 65 536.
    assert!(
        m.contains("at least 65536 other edges (98978 transforms)"),
        "{m}"
    );
    assert_eq!(w["data_loss"], false);
    // The text table too.
    let o = run(args!["clocks", &bag]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(o.stdout.len() < 1 << 20, "{} bytes of text", o.stdout.len());
    // The page, and `tf`'s tree.
    let out = dir.join("report");
    let o = run(args!["report", &bag, "-o", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(page.len() < 8 << 20, "{} bytes of report.json", page.len());
    assert!(page.contains("tf_edges_untimed"));
    let o = run(args![
        "tf",
        &bag,
        "--target-frame",
        "odom",
        "--topics",
        "/h",
        "--json"
    ]);
    let v = json(&o);
    assert_eq!(
        v["tree"]["edges"].as_array().unwrap().len(),
        1024,
        "{}",
        text(&o)
    );
    let u = &v["tree"]["untimed_edges"];
    assert_eq!(
        (&u["edges"], &u["at_least"]),
        (&65_536.into(), &true.into())
    );
    assert_eq!(u["transforms"], 98_978);
}

/// The files in `dir`.
fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `clocks` and `export` on a `.mcap.zstd` decompress it into a temporary file; SIGINT or
/// SIGTERM while they run ends them (exit 130) and removes that copy of the whole bag (once
/// it stayed in $TMPDIR).
#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_decompressed_copy() {
    let dir = tempdir("zstd-temp");
    let plain = dir.join("big.mcap");
    // 200 000 messages: seconds of work in a test build after the copy is made.
    let msgs: Vec<Msg> = (0..200_000)
        .map(|k| {
            let t = T0 + k * 1_000_000;
            ((k % 4) as usize, t, header_cdr(t - 500_000, "f"))
        })
        .collect();
    write_mcap(
        &plain,
        &[
            ("/a", "std_msgs/msg/Header"),
            ("/b", "std_msgs/msg/Header"),
            ("/c", "std_msgs/msg/Header"),
            ("/d", "std_msgs/msg/Header"),
        ],
        msgs,
        None,
    );
    let bag = dir.join("big.mcap.zstd");
    let raw = std::fs::read(&plain).unwrap();
    std::fs::write(&bag, zstd::encode_all(&raw[..], 1).unwrap()).unwrap();
    std::fs::remove_file(&plain).unwrap();
    for (cmd, signal) in [
        ("clocks", "-INT"),
        ("clocks", "-TERM"),
        ("export", "-INT"),
        ("export", "-TERM"),
    ] {
        let tmp = dir.join(format!("tmp-{cmd}{signal}"));
        std::fs::create_dir(&tmp).unwrap();
        let out = dir.join(format!("out-{cmd}{signal}"));
        let mut c = Command::new(bin());
        c.arg(cmd).arg(&bag);
        if cmd == "export" {
            c.arg("-o").arg(&out);
        }
        let mut child = c
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Once the copy is complete (its size is the bag's), the command is reading it.
        let t = std::time::Instant::now();
        let copied = |tmp: &Path| {
            std::fs::read_dir(tmp).unwrap().any(|e| {
                let e = e.unwrap();
                e.file_name()
                    .to_string_lossy()
                    .starts_with("bagscope-zstd-")
                    && e.metadata().unwrap().len() == raw.len() as u64
            })
        };
        while !copied(&tmp) && t.elapsed().as_secs() < 60 {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{cmd} ended before it could be interrupted"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(copied(&tmp), "{cmd} never made its copy");
        let pid = child.id().to_string();
        Command::new("kill").args([signal, &pid]).status().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{cmd} {signal}: {status:?}");
        assert_eq!(files_in(&tmp), Vec::<String>::new(), "{cmd} {signal}");
    }
}

/// `n` nested `[`: what libyaml takes a minute over at 100 000.
fn nested(n: usize) -> String {
    "[".repeat(n)
}

/// YAML nested 100 000 deep is refused before it is parsed, naming the file (once `info` spent
/// over 10 s on one channel's QoS text, and 40 s on such a metadata.yaml): a channel's QoS text,
/// `metadata.yaml`, an observe contract, a QoS override file.
#[test]
fn deeply_nested_yaml_is_refused_before_parsing() {
    let dir = tempdir("yaml-depth");
    // A channel whose offered_qos_profiles is 100 000 `[`.
    let bag = dir.join("qos.mcap");
    {
        let f = std::fs::File::create(&bag).unwrap();
        let mut w = mcap::WriteOptions::new()
            .profile("ros2")
            .create(BufWriter::new(f))
            .unwrap();
        let s = w.add_schema("std_msgs/msg/Header", "ros2msg", b"").unwrap();
        let md = BTreeMap::from([("offered_qos_profiles".to_string(), nested(100_000))]);
        let c = w.add_channel(s, "/h", "cdr", &md).unwrap();
        for k in 0..10 {
            let t = T0 + k * 100_000_000;
            let h = mcap::records::MessageHeader {
                channel_id: c,
                sequence: k as u32,
                log_time: t as u64,
                publish_time: t as u64,
            };
            w.write_to_known_channel(&h, &header_cdr(t, "f")).unwrap();
        }
        w.finish().unwrap();
    }
    let o = run(args!["info", &bag, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    let w = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "qos_unreadable")
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        w["message"]
            .as_str()
            .unwrap()
            .contains("nested more than 64"),
        "{w}"
    );
    // metadata.yaml.
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(&bag, folder.join("qos.mcap")).unwrap();
    let yaml = folder.join("metadata.yaml");
    std::fs::write(
        &yaml,
        format!(
            "rosbag2_bagfile_information:\n  relative_file_paths: [qos.mcap]\n  custom_data: {}\n",
            nested(100_000)
        ),
    )
    .unwrap();
    let o = run(args!["info", &folder]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("metadata.yaml") && err.contains("nested"),
        "{err}"
    );
    // An observe contract (a usage error: exit 2).
    let contract = dir.join("contract.yaml");
    std::fs::write(&contract, format!("anchor: {}\n", nested(100_000))).unwrap();
    let out = dir.join("obs");
    let o = run(args!["observe", &bag, "--contract", &contract, "-o", &out]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("contract.yaml") && err.contains("nested"),
        "{err}"
    );
    // A QoS override file for play (a usage error: exit 2).
    let overrides = dir.join("overrides.yaml");
    std::fs::write(&overrides, format!("/h: {}\n", nested(100_000))).unwrap();
    let o = run(args![
        "play",
        &bag,
        "--no-publish",
        "--out",
        &dir.join("played.mcap"),
        "--qos-overrides",
        &overrides
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("overrides.yaml") && err.contains("nested"),
        "{err}"
    );
    assert!(!dir.join("played.mcap").exists());
}

/// A `.db3` of 100 000 topics, a message on each but every tenth: `info --fast` answers for
/// each (once quadratic: 24 s at 100 000 topics, over 2 minutes at a million).
#[test]
fn a_db3_of_100_000_topics_is_answered() {
    let dir = tempdir("db3-topics");
    let db = dir.join("many.db3");
    let n = 100_000usize;
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, \
             serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
             CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, \
             timestamp INTEGER NOT NULL, data BLOB NOT NULL);
             CREATE INDEX timestamp_idx ON messages (timestamp ASC);
             BEGIN;",
        )
        .unwrap();
        {
            let mut t = c
                .prepare("INSERT INTO topics VALUES (?1, ?2, 'std_msgs/msg/Header', 'cdr', '')")
                .unwrap();
            let mut m = c
                .prepare("INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)")
                .unwrap();
            for i in 0..n {
                t.execute(rusqlite::params![i as i64 + 1, format!("/t{i}")])
                    .unwrap();
                if i % 10 != 9 {
                    let ts = T0 + i as i64 * 1_000;
                    m.execute(rusqlite::params![i as i64 + 1, ts, header_cdr(ts, "f")])
                        .unwrap();
                }
            }
        }
        c.execute_batch("COMMIT;").unwrap();
    }
    let start = std::time::Instant::now();
    let o = run(args!["info", &db, "--fast", "--json"]);
    // Generous: the answer takes a few seconds in a test build; the quadratic reading took
    // 85 s.
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    let topics = v["topics"].as_array().unwrap();
    assert_eq!(topics.len(), n);
    assert_eq!(v["message_count"], n / 10 * 9);
    let t = topics.iter().find(|t| t["topic"] == "/t99998").unwrap();
    assert_eq!(t["count"], 1, "{t}");
    let t = topics.iter().find(|t| t["topic"] == "/t99999").unwrap();
    assert_eq!(t["count"], 0, "{t}");
}

/// A folder of 20 000 one-message `.mcap` files: `info --fast` reads each once (once the
/// duplicate-content check compared every file with every other: 21 s).
#[test]
fn a_folder_of_20_000_files_is_answered() {
    let dir = tempdir("many-files");
    let folder = dir.join("bag");
    std::fs::create_dir(&folder).unwrap();
    let n = 20_000i64;
    for k in 0..n {
        let t = T0 + k * 1_000_000;
        write_mcap(
            &folder.join(format!("f{k:05}.mcap")),
            HEADER_TOPIC,
            vec![(0, t, header_cdr(t, "f"))],
            None,
        );
    }
    // One copy of a file: read once, named.
    std::fs::copy(folder.join("f00007.mcap"), folder.join("f99999.mcap")).unwrap();
    let start = std::time::Instant::now();
    let o = run(args!["info", &folder, "--fast", "--json"]);
    // Generous: a few seconds in a test build; comparing every file with every other took 70 s.
    assert!(start.elapsed().as_secs() < 60, "{:?}", start.elapsed());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["message_count"], n);
    assert_eq!(v["files"].as_array().unwrap().len(), n as usize);
    let dups: Vec<&serde_json::Value> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == "duplicate_file")
        .collect();
    assert_eq!(dups.len(), 1, "{dups:?}");
    assert!(dups[0]["file"].as_str().unwrap().ends_with("f99999.mcap"));
    assert!(dups[0]["message"].as_str().unwrap().contains("f00007.mcap"));
}

/// `convert BAG out.mcap.zstd` once wrote a plain MCAP under the compressed name, which `info`
/// then refused. A name that says another format is a usage error, before anything is read or
/// written.
#[test]
fn an_output_named_as_a_compressed_bag_is_refused() {
    let dir = tempdir("convert-name");
    let bag = dir.join("b.mcap");
    write_mcap(&bag, HEADER_TOPIC, bomb_messages(false)[..3].to_vec(), None);
    for name in ["out.mcap.zstd", "out.zst", "OUT.MCAP.ZSTD", "out.db3"] {
        let out = dir.join(name);
        let o = run(args!["convert", &bag, &out]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(name) && err.contains("*.mcap"), "{err}");
        assert_eq!(files_in(&dir), vec!["b.mcap"], "{name}");
    }
    let out = dir.join("out.mcap");
    let o = run(args!["convert", &bag, &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run(args!["info", &out, "--json"]);
    assert_eq!(json(&o)["message_count"], 3);
}
