//! Throughput benchmarks on a generated bag of 2.4 million messages (JointState, Imu, TF at
//! 1 kHz each, recorded-like, zstd chunks: `synth perf`), against the baseline that only
//! decompresses the chunks on all cores. Run with `cargo bench -p bagscope`; the bag is
//! written once to `target/bench-data/` and reused.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use rayon::prelude::*;

use bagscope::match_analysis::nearest_index;
use bagscope::sync_policy::{emulate, Arrival, Policy, SyncConfig};

/// The benchmark bag of `bench/peers.sh` (`synth perf`: recorded-like JointState, Imu and TF
/// at 1 kHz each, with sensor noise and jittered lags), 2.4 M messages; written once.
fn big_bag() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data/perf_2400000");
    let path = dir.join("perf/perf.mcap");
    if path.exists() {
        return path;
    }
    bagscope_synth::perf::generate(&dir, 2_400_000).unwrap()
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
            let bag = bagscope::io::Bag::open(&path).unwrap();
            let (s, _) = bagscope::series::scan_series(&bag, &bag.all_topics());
            black_box(s.iter().map(|t| t.stamp_ns.len()).sum::<usize>())
        })
    });
    g.bench_function("info_from_indexes", |b| {
        b.iter(|| black_box(bagscope::info::info(&path).unwrap().message_count))
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

    // The whole delay search of `match` (10^5 commands x 10^6 responses well under a
    // second): 100 Hz commands and 1 kHz responses of 6 joints, 37 ms behind, default options
    // (a 0..500 ms sweep at 1 ms, refined at 0.1 ms, per joint too).
    let (cmd, resp) = delay_search_input(100_000, 1_000_000, 37_000_000);
    let opts = bagscope::match_analysis::MatchOptions::default();
    g.sample_size(10);
    g.bench_function("delay_search_1e5_commands_1e6_responses", |b| {
        b.iter(|| {
            let r = bagscope::match_analysis::match_series(&cmd, &resp, &opts).unwrap();
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
    bagscope::match_analysis::JointSeries,
    bagscope::match_analysis::JointSeries,
) {
    let names: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let t0 = 1_764_460_800_000_000_000i64;
    let pos = |t: i64, j: usize| ((t - t0) as f64 * 0.7e-9 + j as f64).sin();
    let series = |n: i64, period: i64, lag: i64| bagscope::match_analysis::JointSeries {
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

/// One JointState payload (6 joints) as a recorder stores it, and its schema from the
/// built-in definition text, as a bag's channel would carry it.
fn joint_state_payload() -> (bagscope_msg::MessageSchema, Vec<u8>) {
    use bagscope_msg::types::{Header, JointState, Time};
    let ty = "sensor_msgs/msg/JointState";
    let text = bagscope_msg::schema::builtin::schema_text(ty).unwrap();
    let schema = bagscope_msg::schema_for_channel(ty, "ros2msg", text.as_bytes()).unwrap();
    let payload = bagscope_msg::encode_typed(&JointState {
        header: Header {
            stamp: Time::from_ns(1_764_460_800_123_456_789),
            frame_id: "base_link".into(),
        },
        name: (1..=6).map(|i| format!("joint_{i}")).collect(),
        position: (0..6).map(|j| 0.1 * j as f64).collect(),
        velocity: (0..6).map(|j| -0.2 * j as f64).collect(),
        effort: (0..6).map(|j| 5.0 + j as f64).collect(),
    })
    .unwrap();
    (schema, payload)
}

fn cdr_benches(c: &mut Criterion) {
    let (schema, payload) = joint_state_payload();
    let mut g = c.benchmark_group("cdr_joint_state");
    // What every timing analysis does per message: the stamp at its fixed offset.
    let loc = schema.stamp_locator();
    g.bench_function("stamp_read", |b| {
        b.iter(|| black_box(loc.read_stamp_ns(black_box(&payload)).unwrap()))
    });
    // Decoding the whole message into the dynamic value tree (never done for timing).
    g.bench_function("dynamic_decode", |b| {
        b.iter(|| black_box(bagscope_msg::decode(&schema, black_box(&payload)).unwrap()))
    });
    g.finish();
}

criterion_group!(
    benches,
    bag_benches,
    sync_benches,
    matching_benches,
    cdr_benches
);
criterion_main!(benches);
