//! `info`'s sizes, bandwidths, writer facts, QoS, images and services, on bags written here
//! with known contents; every size is checked against the payloads as written and as the
//! `mcap` crate reads them back (an independent reader), every latency against the stamps
//! written.

use std::collections::BTreeMap;
use std::path::Path;

use bagscope_msg::types::{Header, Image, Time};
use serde_json::Value;

mod common;
use common::{run, tempdir};

const WALL: i64 = 1_764_460_800_000_000_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

fn info_json(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn topic<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// Payload bytes per topic as the `mcap` crate reads the file.
fn mcap_crate_sizes(path: &Path) -> BTreeMap<String, u64> {
    let bytes = std::fs::read(path).unwrap();
    let mut m = BTreeMap::new();
    for msg in mcap::MessageStream::new(&bytes).unwrap() {
        let msg = msg.unwrap();
        *m.entry(msg.channel.topic.clone()).or_default() += msg.data.len() as u64;
    }
    m
}

/// Most bytes in any window [t, t + 1 s) starting at a message, by brute force.
fn brute_peak(msgs: &[(i64, usize)]) -> u64 {
    msgs.iter()
        .map(|&(a, _)| {
            msgs.iter()
                .filter(|(t, _)| *t >= a && *t < a + S)
                .map(|(_, b)| *b as u64)
                .sum::<u64>()
        })
        .max()
        .unwrap()
}

const QOS: &str = "- history: keep_last\n  depth: 5\n  reliability: best_effort\n  durability: volatile\n  deadline:\n    sec: 0\n    nsec: 50000000\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: automatic\n  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n  avoid_ros_namespace_conventions: false\n";

/// Writes a bag of an 8×4 rgb8 camera at 10 Hz, a `/blob` topic of varying sizes with a burst
/// that straddles a second boundary, and a `/late` topic whose channel is registered after
/// other messages were written. Returns every message's (topic, log time, payload length).
fn write_sizes_bag(
    path: &Path,
    compression: Option<mcap::Compression>,
) -> Vec<(String, i64, usize)> {
    let mut w = common::BagWriter::with_options(
        path,
        mcap::WriteOptions::new()
            .library("bagscope-test")
            .compression(compression)
            .chunk_size(Some(2048)),
    );
    let image_text = bagscope_msg::schema::builtin::schema_text("sensor_msgs/msg/Image").unwrap();
    let meta: BTreeMap<String, String> =
        [("offered_qos_profiles".to_string(), QOS.to_string())].into();
    let cam = w.channel_with("/cam", "sensor_msgs/msg/Image", &image_text, &meta);
    let blob = w.channel("/blob", "std_msgs/msg/String", "string data");
    w.raw()
        .write_metadata(&mcap::records::Metadata {
            name: "rosbag2".into(),
            metadata: [("ROS_DISTRO".to_string(), "jazzy".to_string())].into(),
        })
        .unwrap();
    let mut msgs: Vec<(String, u16, i64, Vec<u8>)> = Vec::new();
    for k in 0..30i64 {
        let log = WALL + k * 100 * MS;
        let img = bagscope_msg::encode_typed(&Image {
            header: Header {
                stamp: Time::from_ns(log),
                frame_id: "cam".into(),
            },
            height: 4,
            width: 8,
            encoding: "rgb8".into(),
            is_bigendian: 0,
            step: 24,
            data: vec![k as u8; 96],
        })
        .unwrap();
        msgs.push(("/cam".into(), cam, log, img));
        // Blob: 10 + k bytes every 100 ms, plus 5 × 400 bytes around t = 1 s.
        msgs.push((
            "/blob".into(),
            blob,
            log + 10 * MS,
            vec![7u8; 10 + k as usize],
        ));
    }
    for j in 0..5i64 {
        msgs.push((
            "/blob".into(),
            blob,
            WALL + 850 * MS + j * 100 * MS,
            vec![9u8; 400],
        ));
    }
    msgs.sort_by_key(|m| m.2);
    let mut out = Vec::new();
    let mut late = None;
    for (seq, (t, ch, log, data)) in msgs.into_iter().enumerate() {
        if seq == 40 {
            // A channel registered mid-recording: its definition lands between messages.
            late = Some(w.channel("/late", "std_msgs/msg/String", "string data"));
        }
        w.message(ch, log, &data);
        out.push((t, log, data.len()));
        if let (Some(c), true) = (late, seq % 7 == 0) {
            let d = vec![1u8; 33];
            w.message(c, log + 1, &d);
            out.push(("/late".into(), log + 1, d.len()));
        }
    }
    w.finish();
    out
}

fn check_sizes(path: &Path, written: &[(String, i64, usize)]) {
    let p = path.to_str().unwrap();
    let v = info_json(&["info", p, "--json"]);
    assert_eq!(v["sizes"], true);
    let crate_sizes = mcap_crate_sizes(path);
    let total: u64 = written.iter().map(|m| m.2 as u64).sum();
    assert_eq!(crate_sizes.values().sum::<u64>(), total);
    assert_eq!(v["payload_bytes"].as_u64(), Some(total));
    for name in ["/cam", "/blob", "/late"] {
        let t = topic(&v, name);
        let msgs: Vec<(i64, usize)> = written
            .iter()
            .filter(|m| m.0 == name)
            .map(|m| (m.1, m.2))
            .collect();
        let size: u64 = msgs.iter().map(|m| m.1 as u64).sum();
        assert_eq!(
            crate_sizes[name], size,
            "{name}: the mcap crate disagrees with what was written"
        );
        assert_eq!(t["size_bytes"].as_u64(), Some(size), "{name}");
        let n = msgs.len() as f64;
        let mean = t["mean_message_bytes"].as_f64().unwrap();
        assert!((mean - size as f64 / n).abs() < 1e-9, "{name}");
        let rate = t["rate_hz"].as_f64().unwrap();
        let bw = t["mean_bandwidth_bps"].as_f64().unwrap();
        assert!((bw - mean * rate).abs() < 1e-6, "{name}");
        assert_eq!(
            t["peak_bandwidth_bps"].as_u64(),
            Some(brute_peak(&msgs)),
            "{name}"
        );
        let share = t["size_share"].as_f64().unwrap();
        assert!((share - size as f64 / total as f64).abs() < 1e-12, "{name}");
    }
    // The burst (5 × 400 bytes from 0.85 s) and the blobs beside it: one sliding window holds
    // all of it, which fixed one-second buckets would split.
    let blob = topic(&v, "/blob");
    assert!(blob["peak_bandwidth_bps"].as_u64().unwrap() >= 2000);
    let start = blob["peak_window_start_ns"].as_i64().unwrap();
    assert!(start > WALL && start < WALL + S, "{start}");

    // Writer facts, QoS, image bandwidth.
    assert_eq!(v["files"][0]["library"], "bagscope-test");
    assert_eq!(v["files"][0]["profile"], "ros2");
    assert_eq!(v["ros_distro"], "jazzy");
    let md = &v["files"][0]["metadata"][0];
    assert_eq!(md["name"], "rosbag2");
    assert_eq!(md["metadata"]["ROS_DISTRO"], "jazzy");
    let cc = v["chunk_compression"].as_array().unwrap();
    assert_eq!(cc.len(), 1);
    assert!(cc[0]["chunks"].as_u64().unwrap() > 3, "{cc:?}");
    let cam = topic(&v, "/cam");
    let q = &cam["offered_qos"][0];
    assert_eq!(q["reliability"], "best_effort");
    assert_eq!(q["durability"], "volatile");
    assert_eq!(q["history"], "keep_last");
    assert_eq!(q["depth"], 5);
    assert_eq!(q["deadline_ns"], 50_000_000);
    assert_eq!(q["lifespan_ns"], Value::Null, "infinite");
    assert_eq!(cam["message_encoding"], "cdr");
    let img = &cam["image"];
    assert_eq!(
        (img["width"].as_u64(), img["height"].as_u64()),
        (Some(8), Some(4))
    );
    assert_eq!(img["bytes_per_pixel"], 3);
    let rate = cam["rate_hz"].as_f64().unwrap();
    let expected = img["expected_raw_bps"].as_f64().unwrap();
    assert!((expected - 96.0 * rate).abs() < 1e-6);
    let ratio = img["recorded_over_expected"].as_f64().unwrap();
    let mean = cam["mean_message_bytes"].as_f64().unwrap();
    assert!((ratio - mean / 96.0).abs() < 1e-9 && ratio > 1.0, "{ratio}");
    assert_eq!(topic(&v, "/blob")["image"], Value::Null);
}

#[test]
fn info_sizes_match_the_payloads_written() {
    let dir = tempdir("info-sizes");
    // zstd chunks: sizes from the message index offsets; the chunk where `/late` starts (its
    // definition written among other topics' messages) is read record by record.
    let zstd = dir.join("zstd.mcap");
    let written = write_sizes_bag(&zstd, Some(mcap::Compression::Zstd));
    check_sizes(&zstd, &written);
    // Uncompressed chunks: the same.
    let plain = dir.join("plain.mcap");
    let written = write_sizes_bag(&plain, None);
    check_sizes(&plain, &written);
    let v = info_json(&["info", plain.to_str().unwrap(), "--json"]);
    assert_eq!(v["chunk_compression"][0]["compression"], "none");
    assert_eq!(v["chunk_compression"][0]["ratio"], 1.0);
}

#[test]
fn info_sort_and_fast() {
    let dir = tempdir("info-sort");
    let f = dir.join("b.mcap");
    write_sizes_bag(&f, Some(mcap::Compression::Zstd));
    let p = f.to_str().unwrap();
    let names = |v: &Value| -> Vec<String> {
        v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["topic"].as_str().unwrap().to_string())
            .collect()
    };
    // JSON keeps name order unless --sort asks otherwise.
    assert_eq!(
        names(&info_json(&["info", p, "--json"])),
        ["/blob", "/cam", "/late"]
    );
    let by_size = info_json(&["info", p, "--json", "--sort", "size"]);
    let sizes: Vec<u64> = by_size["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["size_bytes"].as_u64().unwrap())
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    assert_eq!(names(&by_size)[0], "/cam");
    let by_count = info_json(&["info", p, "--json", "--sort", "count"]);
    assert_eq!(names(&by_count)[0], "/blob");
    // Text: the size column and the order.
    let (code, text, _) = run(&["info", p, "--sort", "size"]);
    assert_eq!(code, 0);
    let cam = text.find("/cam ").unwrap();
    assert!(cam < text.find("/blob ").unwrap(), "{text}");
    assert!(text.contains("peak_B/s") && text.contains("KiB"), "{text}");
    // --fast reads no message: sizes are null and said to be.
    let fast = info_json(&["info", p, "--json", "--fast"]);
    assert_eq!(fast["sizes"], false);
    assert_eq!(fast["payload_bytes"], Value::Null);
    assert_eq!(topic(&fast, "/cam")["size_bytes"], Value::Null);
    assert_eq!(topic(&fast, "/cam")["image"], Value::Null);
    assert_eq!(topic(&fast, "/cam")["offered_qos"][0]["depth"], 5);
    let (code, _, err) = run(&["info", p, "--sort", "bogus"]);
    assert_eq!(code, 2, "{err}");
}

/// A service event payload: `info` (kind, stamp, client GID, sequence number) and empty
/// request and response sequences.
fn event(kind: u8, stamp_ns: i64, gid: u8, seq: i64) -> Vec<u8> {
    let mut p = vec![0x00, 0x01, 0, 0, kind, 0, 0, 0];
    p.extend(((stamp_ns / S) as i32).to_le_bytes());
    p.extend(((stamp_ns % S) as u32).to_le_bytes());
    p.extend([gid; 16]);
    p.extend([0u8; 4]);
    p.extend(seq.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p
}

#[test]
fn info_pairs_service_events_into_latencies() {
    let dir = tempdir("info-services");
    let f = dir.join("services.mcap");
    let mut w = common::BagWriter::create(&f);
    let ch = w.channel(
        "/add/_service_event",
        "example_interfaces/srv/AddTwoInts_Event",
        "int64 a\nint64 b\n---\nint64 sum\n",
    );
    let mut events = Vec::new();
    // Client 1, calls 1..=5: round trip (1 + k) ms, request in transit 100 µs, response in
    // transit 200 µs. Call 6 is never answered. Client 2 reuses sequence numbers 1..=2 with a
    // 10 ms round trip; and one event too short to read.
    for k in 1..=5i64 {
        let t0 = WALL + k * S;
        let rtt = (1 + k) * MS;
        events.push((t0, event(0, t0, 1, k)));
        events.push((t0 + 100_000, event(1, t0 + 100_000, 1, k)));
        events.push((t0 + rtt - 200_000, event(2, t0 + rtt - 200_000, 1, k)));
        events.push((t0 + rtt, event(3, t0 + rtt, 1, k)));
    }
    events.push((WALL + 7 * S, event(0, WALL + 7 * S, 1, 6)));
    for k in 1..=2i64 {
        let t0 = WALL + k * S + 500 * MS;
        events.push((t0, event(0, t0, 2, k)));
        events.push((t0 + 10 * MS, event(3, t0 + 10 * MS, 2, k)));
    }
    events.push((WALL + 8 * S, vec![0x00, 0x01, 0, 0, 1]));
    events.sort_by_key(|e| e.0);
    for (log, data) in &events {
        w.message_published(ch, log + 50_000, *log, data);
    }
    w.finish();
    let p = f.to_str().unwrap();
    let v = info_json(&["info", p, "--json"]);
    let svc = &v["services"][0];
    assert_eq!(svc["service"], "/add");
    assert_eq!(svc["type"], "example_interfaces/srv/AddTwoInts");
    assert_eq!(svc["event_count"], 26);
    assert_eq!(svc["undecodable_events"], 1);
    assert_eq!(svc["request_count"], 5 + 5 + 1 + 2);
    assert_eq!(svc["response_count"], 5 + 5 + 2);
    let l = &svc["latency"];
    assert_eq!(l["calls"], 8);
    assert_eq!(l["unanswered_requests"], 1);
    assert_eq!(l["responses_without_request"], 0);
    let rtt = &l["round_trip_ns"];
    assert_eq!(rtt["count"], 7);
    assert_eq!(rtt["min"], 2 * MS);
    assert_eq!(rtt["max"], 10 * MS);
    assert_eq!(rtt["p50"], 5 * MS);
    let server = &l["server_ns"];
    assert_eq!(server["count"], 5);
    assert_eq!(server["min"], 2 * MS - 300_000);
    assert_eq!(l["request_transport_ns"]["max"], 100_000);
    assert_eq!(l["response_transport_ns"]["min"], 200_000);
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "undecodable_message" && w["topic"] == "/add/_service_event"));
    let (code, text, _) = run(&["info", p]);
    assert_eq!(code, 0);
    assert!(
        text.contains("services:") && text.contains("/add"),
        "{text}"
    );
    // --fast lists the service without reading its events.
    let fast = info_json(&["info", p, "--json", "--fast"]);
    assert_eq!(fast["services"][0]["event_count"], 26);
    assert_eq!(fast["services"][0]["latency"], Value::Null);
}

/// rosbag2's own service-event test bags (MCAP and their `.db3` twins): the calls the corpus
/// manifest states, and sizes the same in both storages where the payloads are the same.
#[test]
fn corpus_service_event_bags() {
    let Some(r) = common::shared_path(
        "corpus/ros2/rosbag2",
        "rosbag2_cpp/test/rosbag2_cpp/bags/only_services.mcap",
    ) else {
        return;
    };
    // only_services: 6 calls seen on the server (REQUEST_RECEIVED → RESPONSE_SENT).
    let v = info_json(&[
        "info",
        r.join("rosbag2_cpp/test/rosbag2_cpp/bags/only_services.mcap")
            .to_str()
            .unwrap(),
        "--json",
    ]);
    let calls: u64 = v["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["latency"]["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(calls, 6, "{}", v["services"]);
    for s in v["services"].as_array().unwrap() {
        let l = &s["latency"];
        assert_eq!(l["unanswered_requests"], 0);
        if l["calls"].as_u64() > Some(0) {
            assert!(l["server_ns"]["count"].as_u64() > Some(0), "{s}");
        }
    }
    // bag_with_topics_and_service_events: two services, two calls each, client side.
    let sub = "rosbag2_tests/resources/{}/bag_with_topics_and_service_events";
    let mcap_dir = r.join(sub.replace("{}", "mcap"));
    let db3_dir = r.join(sub.replace("{}", "sqlite3"));
    let m = info_json(&["info", mcap_dir.to_str().unwrap(), "--json"]);
    let d = info_json(&["info", db3_dir.to_str().unwrap(), "--json"]);
    for v in [&m, &d] {
        let s = v["services"].as_array().unwrap();
        assert_eq!(s.len(), 2, "{s:?}");
        for x in s {
            assert_eq!(x["latency"]["calls"], 2, "{x}");
            assert_eq!(x["latency"]["round_trip_ns"]["count"], 2, "{x}");
            assert_eq!(x["request_count"], 2);
            assert_eq!(x["response_count"], 2);
        }
        assert_eq!(v["sizes"], true);
    }
    // The MCAP sizes against the mcap crate.
    let file = std::fs::read_dir(&mcap_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "mcap"))
        .unwrap();
    for (name, size) in mcap_crate_sizes(&file) {
        assert_eq!(
            topic(&m, &name)["size_bytes"].as_u64(),
            Some(size),
            "{name}"
        );
    }
    // The .db3 sizes (the blobs' stored lengths, read without the blobs) against the blobs
    // themselves as a payload scan reads them.
    let bag = bagscope_bag::Bag::open(&db3_dir).unwrap();
    let scan = bag.scan(&bag.all_topics(), |m| m.data.len() as u64);
    let mut per_topic: BTreeMap<String, u64> = BTreeMap::new();
    for it in &scan.items {
        *per_topic
            .entry(bag.topics[it.topic].name.clone())
            .or_default() += it.value;
    }
    assert!(!per_topic.is_empty());
    for (name, size) in per_topic {
        assert_eq!(
            topic(&d, &name)["size_bytes"].as_u64(),
            Some(size),
            "{name}"
        );
    }
}
