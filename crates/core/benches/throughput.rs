//! Throughput benchmarks on a generated bag of 2.4 million messages (JointState, Imu, TF at
//! 600 Hz each, zstd chunks), against the baseline that only decompresses the chunks on all
//! cores. Run with `cargo bench -p bagscope-core`; the bag is written once to
//! `target/bench-data/` and reused.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use rayon::prelude::*;

use bagscope_core::match_analysis::nearest_index;
use bagscope_core::sync_policy::{emulate, Arrival, Policy, SyncConfig};
use bagscope_msg::types::{Header, Imu, JointState, TFMessage, Time, Transform, TransformStamped};

const SECONDS: i64 = 1_333;
const HZ: i64 = 600;

fn big_bag() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.mcap");
    if path.exists() {
        return path;
    }
    let tmp = dir.join("big.mcap.tmp");
    let f = std::fs::File::create(&tmp).unwrap();
    let mut w = mcap::WriteOptions::new()
        .profile("ros2")
        .compression(Some(mcap::Compression::Zstd))
        .chunk_size(Some(4 << 20))
        .create(BufWriter::new(f))
        .unwrap();
    let types = [
        ("/joint_states", "sensor_msgs/msg/JointState"),
        ("/imu", "sensor_msgs/msg/Imu"),
        ("/tf", "tf2_msgs/msg/TFMessage"),
    ];
    let mut ch = Vec::new();
    for (topic, ty) in types {
        let text = bagscope_msg::schema::builtin::schema_text(ty).unwrap();
        let sid = w.add_schema(ty, "ros2msg", text.as_bytes()).unwrap();
        ch.push(w.add_channel(sid, topic, "cdr", &BTreeMap::new()).unwrap());
    }
    let t0 = 1_764_460_800_000_000_000i64;
    let period = 1_000_000_000 / HZ;
    let names: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    for k in 0..SECONDS * HZ {
        let stamp = t0 + k * period;
        let header = Header {
            stamp: Time::from_ns(stamp),
            frame_id: "base".into(),
        };
        let x = k as f64 * 1e-3;
        let payloads = [
            bagscope_msg::encode_typed(&JointState {
                header: header.clone(),
                name: names.clone(),
                position: (0..6).map(|j| (x + j as f64).sin()).collect(),
                velocity: vec![0.0; 6],
                effort: vec![0.0; 6],
            })
            .unwrap(),
            bagscope_msg::encode_typed(&Imu {
                header: header.clone(),
                ..Default::default()
            })
            .unwrap(),
            bagscope_msg::encode_typed(&TFMessage {
                transforms: vec![TransformStamped {
                    header,
                    child_frame_id: "tool".into(),
                    transform: Transform::default(),
                }],
            })
            .unwrap(),
        ];
        for (i, p) in payloads.iter().enumerate() {
            let log = (stamp + 1_000_000 + i as i64 * 1000) as u64;
            w.write_to_known_channel(
                &mcap::records::MessageHeader {
                    channel_id: ch[i],
                    sequence: k as u32,
                    log_time: log,
                    publish_time: log,
                },
                p,
            )
            .unwrap();
        }
    }
    w.finish().unwrap();
    drop(w);
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// The floor: decompress every chunk on all cores and do nothing else. The file is mapped,
/// as the scan maps it (reading it into a vector first would add a copy to the floor).
fn decompress_only(path: &Path) -> usize {
    let file = std::fs::File::open(path).unwrap();
    // SAFETY: read-only map of a file nobody writes while the benchmark runs.
    let bytes = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let summary = mcap::Summary::read(&bytes).unwrap().unwrap();
    summary
        .chunk_indexes
        .par_iter()
        .map_init(
            || (zstd::bulk::Decompressor::new().unwrap(), Vec::new()),
            |(z, buf), ci| {
                let start = ci.chunk_start_offset as usize + 9;
                let end = (ci.chunk_start_offset + ci.chunk_length) as usize;
                let rec =
                    mcap::read::parse_record(mcap::records::op::CHUNK, &bytes[start..end]).unwrap();
                let mcap::records::Record::Chunk { header, data } = rec else {
                    unreachable!()
                };
                buf.clear();
                buf.reserve(header.uncompressed_size as usize);
                z.decompress_to_buffer(&data[..], buf).unwrap()
            },
        )
        .sum()
}

fn bag_benches(c: &mut Criterion) {
    let path = big_bag();
    let mut g = c.benchmark_group("bag_2.4M_messages");
    g.sample_size(10);
    g.bench_function("decompress_only_all_cores", |b| {
        b.iter(|| black_box(decompress_only(&path)))
    });
    g.bench_function("stamp_scan_all_topics", |b| {
        b.iter(|| {
            let bag = bagscope_core::Bag::open(&path).unwrap();
            let (s, _) = bagscope_core::series::scan_series(&bag, &bag.all_topics());
            black_box(s.iter().map(|t| t.stamp_ns.len()).sum::<usize>())
        })
    });
    g.bench_function("info_from_indexes", |b| {
        b.iter(|| black_box(bagscope_core::info::info(&path).unwrap().message_count))
    });
    g.finish();
}

fn sync_benches(c: &mut Criterion) {
    // Two topics, 1 M messages in all: 30 Hz and 20 Hz cameras with jitter and lag.
    let mut arr = Vec::new();
    let mut state = 1u64;
    let mut jitter = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 2_000_000) as i64 - 1_000_000
    };
    for k in 0..600_000i64 {
        let s = k * 33_333_333 + jitter();
        arr.push(Arrival::new(0, Some(s), s + 10_000_000));
    }
    for k in 0..400_000i64 {
        let s = 7_000_000 + k * 50_000_000 + jitter();
        arr.push(Arrival::new(1, Some(s), s + 40_000_000));
    }
    arr.sort_by_key(|a| a.arrival_ns);
    let mut g = c.benchmark_group("sync_1M_messages");
    g.sample_size(10);
    for policy in [
        Policy::Exact,
        Policy::Approx,
        Policy::ApproxPy,
        Policy::ExactPy,
    ] {
        let mut cfg = SyncConfig::new(policy, 2, 5);
        cfg.slop_ns = 20_000_000;
        g.bench_function(policy.cli_name(), |b| {
            b.iter(|| black_box(emulate(&cfg, &arr).unwrap().sets.len()))
        });
    }
    g.finish();
}

fn matching_benches(c: &mut Criterion) {
    let responses: Vec<i64> = (0..1_000_000i64)
        .map(|k| k * 10_000_000 + (k * 7919) % 300_000)
        .collect();
    let commands: Vec<i64> = (0..100_000i64)
        .map(|k| k * 100_000_000 + 3_000_000)
        .collect();
    let mut g = c.benchmark_group("matching");
    g.bench_function("nearest_1e5_commands_in_1e6_responses", |b| {
        b.iter(|| {
            black_box(
                commands
                    .iter()
                    .filter_map(|&t| nearest_index(&responses, t))
                    .sum::<usize>(),
            )
        })
    });

    // The whole delay search of `match` (issue #9: 10^5 commands x 10^6 responses well under a
    // second): 100 Hz commands and 1 kHz responses of 6 joints, 37 ms behind, default options
    // (a 0..500 ms sweep at 1 ms, refined at 0.1 ms, per joint too).
    let (cmd, resp) = delay_search_input(100_000, 1_000_000, 37_000_000);
    let opts = bagscope_core::match_analysis::MatchOptions::default();
    g.sample_size(10);
    g.bench_function("delay_search_1e5_commands_1e6_responses", |b| {
        b.iter(|| {
            let r = bagscope_core::match_analysis::match_series(&cmd, &resp, &opts).unwrap();
            assert_eq!(r.delay_ns, 37_000_000);
            black_box(r.delay_ns)
        })
    });
    g.finish();
}

/// Commands at 100 Hz and responses at 1 kHz that follow them `delay_ns` later (6 joints).
fn delay_search_input(
    n_cmd: i64,
    n_resp: i64,
    delay_ns: i64,
) -> (
    bagscope_core::match_analysis::JointSeries,
    bagscope_core::match_analysis::JointSeries,
) {
    let names: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let t0 = 1_764_460_800_000_000_000i64;
    let pos = |t: i64, j: usize| ((t - t0) as f64 * 0.7e-9 + j as f64).sin();
    let series = |n: i64, period: i64, lag: i64| bagscope_core::match_analysis::JointSeries {
        stamp_ns: (0..n).map(|i| t0 + i * period).collect(),
        log_time_ns: (0..n).map(|i| t0 + i * period + 500_000).collect(),
        names: vec![names.clone().into(); n as usize],
        values: (0..n)
            .map(|i| (0..6).map(|j| pos(t0 + i * period - lag, j)).collect())
            .collect(),
        points: None,
    };
    (
        series(n_cmd, 10_000_000, 0),
        series(n_resp, 1_000_000, delay_ns),
    )
}

criterion_group!(benches, bag_benches, sync_benches, matching_benches);
criterion_main!(benches);
