//! Fault injection: damage real bags in every way a recorder or a disk does, run the built
//! binary on each damaged copy and hold it to the exit-code contract.
//!
//! For every damaged bag and every command run on it (`info`, `clocks`, `sync`, `check`):
//!
//! * no panic (stderr never says "panicked"), and the exit code is 0, 1 or 3;
//! * exit 1: the error message names the damaged file (or its bag folder);
//! * exit 3: the JSON output holds at least one warning with `data_loss: true` (for `check`,
//!   findings also mean 3);
//! * exit 0: nothing was lost: every topic's message count equals the undamaged bag's.
//!
//! Sources: the repo's `bags/` (always present, zstd chunks) and `../shared/bags` (uncompressed
//! chunks; skipped with a note when missing, a failure under `CI`). Random cuts and flips are
//! seeded, so every run damages the same bytes. Run with
//! `cargo test -p bagscope-cli --test fault_injection -- --nocapture` to see the tally.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{bin, root, tempdir, Out};

fn shared_bags() -> Option<PathBuf> {
    common::shared_path("bags", "")
}

/// Deterministic xorshift64*: the same damage on every run, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

// ---------------------------------------------------------------------------------------------
// A minimal MCAP record walker (independent of the code under test) to find where to damage.

const MAGIC: &[u8] = b"\x89MCAP0\r\n";
const OP_FOOTER: u8 = 0x02;
const OP_SCHEMA: u8 = 0x03;
const OP_CHANNEL: u8 = 0x04;
const OP_MESSAGE: u8 = 0x05;
const OP_CHUNK: u8 = 0x06;
const OP_STATISTICS: u8 = 0x0b;
const OP_CHUNK_INDEX: u8 = 0x08;
const OP_DATA_END: u8 = 0x0f;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    offset: usize,
    opcode: u8,
    /// Body length.
    len: usize,
}
impl Rec {
    fn body(&self) -> usize {
        self.offset + 9
    }
    fn end(&self) -> usize {
        self.offset + 9 + self.len
    }
}

/// Top-level records from the magic to the footer (data section and summary).
fn records(b: &[u8]) -> Vec<Rec> {
    assert_eq!(&b[..8], MAGIC);
    let mut v = Vec::new();
    let mut pos = 8;
    while pos + 9 <= b.len() {
        let opcode = b[pos];
        let len = u64_at(b, pos + 1) as usize;
        v.push(Rec {
            offset: pos,
            opcode,
            len,
        });
        pos += 9 + len;
        if opcode == OP_FOOTER {
            break;
        }
    }
    v
}

/// A chunk's compression, where its records start and how long they are.
struct ChunkBody {
    compression: String,
    crc_at: usize,
    records_at: usize,
    records_len: usize,
}

fn chunk_body(b: &[u8], r: &Rec) -> ChunkBody {
    let body = r.body();
    let clen = u32_at(b, body + 28) as usize;
    let compression = String::from_utf8_lossy(&b[body + 32..body + 32 + clen]).into_owned();
    let size_at = body + 32 + clen;
    ChunkBody {
        compression,
        crc_at: body + 24,
        records_at: size_at + 8,
        records_len: u64_at(b, size_at) as usize,
    }
}

/// (record offset, payload start, payload len) of every message inside uncompressed chunks.
fn uncompressed_payloads(b: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    for r in records(b).iter().filter(|r| r.opcode == OP_CHUNK) {
        let c = chunk_body(b, r);
        if !c.compression.is_empty() {
            continue;
        }
        let mut pos = c.records_at;
        let end = c.records_at + c.records_len;
        while pos + 9 <= end {
            let op = b[pos];
            let len = u64_at(b, pos + 1) as usize;
            if op == OP_MESSAGE && len > 22 {
                v.push((c.crc_at, pos + 9 + 22, len - 22));
            }
            pos += 9 + len;
        }
    }
    v
}

/// Offset of the summary section (0: none).
fn summary_start(b: &[u8]) -> usize {
    let footer = b.len() - 8 - 29;
    assert_eq!(b[footer], OP_FOOTER);
    u64_at(b, footer + 9) as usize
}

// ---------------------------------------------------------------------------------------------
// Running the binary and holding it to the contract.

fn run(args: &[&str]) -> Out {
    common::out(args)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cmd {
    Info,
    Clocks,
    Sync,
    Check,
}

/// Per-topic message counts as a command reports them.
fn counts(cmd: Cmd, v: &Value) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    match cmd {
        Cmd::Info | Cmd::Clocks => {
            for t in v["topics"].as_array().into_iter().flatten() {
                let n = t["count"].as_u64().unwrap_or(0);
                m.insert(t["topic"].as_str().unwrap_or("").to_string(), n);
            }
        }
        Cmd::Sync => {
            if let Some(o) = v["messages_per_topic"].as_object() {
                for (k, n) in o {
                    m.insert(k.clone(), n.as_u64().unwrap_or(0));
                }
            } else if let Some(a) = v["messages_per_topic"].as_array() {
                for (i, n) in a.iter().enumerate() {
                    m.insert(i.to_string(), n.as_u64().unwrap_or(0));
                }
            }
        }
        Cmd::Check => {
            // `checked`: topic -> what was checked on it. A bag that lost a topic's schema
            // once exited 0 with nothing checked: the checked topics must be the same too.
            for k in v["checked"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                m.insert(format!("checked {k}"), 1);
            }
            if let Some(o) = v["counts"].as_object() {
                for (k, n) in o {
                    if let Some(n) = n.as_u64() {
                        m.insert(k.clone(), n);
                    }
                }
            }
        }
    }
    m
}

fn has_loss_warning(v: &Value) -> bool {
    fn any(v: &Value) -> bool {
        match v {
            Value::Object(o) => {
                o.get("data_loss").and_then(Value::as_bool) == Some(true) || o.values().any(any)
            }
            Value::Array(a) => a.iter().any(any),
            _ => false,
        }
    }
    any(&v["warnings"])
}

fn args_for(cmd: Cmd, bag: &str, sync_topics: &str) -> Vec<String> {
    let mut a: Vec<String> = match cmd {
        Cmd::Info => vec!["info".into(), bag.into()],
        Cmd::Clocks => vec!["clocks".into(), bag.into()],
        Cmd::Sync => vec![
            "sync".into(),
            bag.into(),
            "--topics".into(),
            sync_topics.into(),
            "--policy".into(),
            "approx".into(),
            "--queue".into(),
            "10".into(),
        ],
        Cmd::Check => vec!["check".into(), bag.into()],
    };
    a.push("--json".into());
    a
}

/// An undamaged bag's answers, to compare damaged copies with.
struct Baseline {
    name: String,
    sync_topics: String,
    counts: BTreeMap<&'static str, BTreeMap<String, u64>>,
    total: u64,
}

fn cmd_key(c: Cmd) -> &'static str {
    match c {
        Cmd::Info => "info",
        Cmd::Clocks => "clocks",
        Cmd::Sync => "sync",
        Cmd::Check => "check",
    }
}

fn baseline(name: &str, bag: &Path) -> Baseline {
    let b = bag.to_str().unwrap();
    let info = run(&["info", b, "--json"]);
    assert_eq!(info.code, 0, "undamaged {b}: {}", info.stderr);
    let v: Value = serde_json::from_str(&info.stdout).unwrap();
    let stamped = [
        "sensor_msgs/msg/Image",
        "sensor_msgs/msg/CameraInfo",
        "sensor_msgs/msg/JointState",
        "trajectory_msgs/msg/JointTrajectory",
        "sensor_msgs/msg/PointCloud2",
        "sensor_msgs/msg/Imu",
    ];
    let topics: Vec<String> = v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| stamped.contains(&t["type"].as_str().unwrap_or("")) && t["count"] != 0)
        .map(|t| t["topic"].as_str().unwrap().to_string())
        .take(2)
        .collect();
    assert_eq!(topics.len(), 2, "{b}: two stamped topics needed for sync");
    let sync_topics = topics.join(",");
    let mut counts_by = BTreeMap::new();
    for cmd in [Cmd::Info, Cmd::Clocks, Cmd::Sync, Cmd::Check] {
        let o = run(&args_for(cmd, b, &sync_topics)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>());
        assert!(
            o.code == 0 || (cmd == Cmd::Check && o.code == 3),
            "undamaged {b} {cmd:?}: exit {}: {}",
            o.code,
            o.stderr
        );
        let v: Value = serde_json::from_str(&o.stdout).unwrap();
        counts_by.insert(cmd_key(cmd), counts(cmd, &v));
    }
    Baseline {
        name: name.to_string(),
        sync_topics,
        total: v["message_count"].as_u64().unwrap(),
        counts: counts_by,
    }
}

#[derive(Default)]
struct Tally {
    runs: usize,
    by_code: BTreeMap<i32, usize>,
    failures: Vec<String>,
}

impl Tally {
    /// Runs the commands on a damaged bag and records every contract violation.
    fn check(&mut self, base: &Baseline, case: &str, bag: &Path, cmds: &[Cmd]) -> Vec<i32> {
        let b = bag.to_str().unwrap();
        let file_name = bag.file_name().unwrap().to_string_lossy().into_owned();
        let mut codes = Vec::new();
        for &cmd in cmds {
            let args = args_for(cmd, b, &base.sync_topics);
            let o = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
            self.runs += 1;
            *self.by_code.entry(o.code).or_default() += 1;
            codes.push(o.code);
            let ctx = format!("[{} / {case}] {}", base.name, args.join(" "));
            if o.stderr.contains("panicked") {
                self.failures.push(format!("{ctx}: PANIC\n{}", o.stderr));
                continue;
            }
            match o.code {
                1 => {
                    if !o.stderr.contains(&file_name) {
                        self.failures.push(format!(
                            "{ctx}: exit 1 without naming {file_name}: {}",
                            o.stderr.trim()
                        ));
                    }
                    if !o.stdout.is_empty() {
                        self.failures
                            .push(format!("{ctx}: exit 1 but printed a report on stdout"));
                    }
                }
                0 | 3 => {
                    let v: Value = match serde_json::from_str(&o.stdout) {
                        Ok(v) => v,
                        Err(e) => {
                            self.failures.push(format!(
                                "{ctx}: exit {} but stdout is not JSON: {e}",
                                o.code
                            ));
                            continue;
                        }
                    };
                    let mut got = counts(cmd, &v);
                    let mut want = base.counts[cmd_key(cmd)].clone();
                    // Without a data-loss warning nothing may be missing: exit 0, or `check`'s
                    // exit 3 for findings (the sensors bags have some even undamaged). Damaged
                    // payloads may add findings, so there only the checked topics must agree.
                    let findings_only = cmd == Cmd::Check && o.code == 3 && !has_loss_warning(&v);
                    if findings_only {
                        got.retain(|k, _| k.starts_with("checked "));
                        want.retain(|k, _| k.starts_with("checked "));
                    }
                    // A topic `check` read but could not check, because damage took its
                    // definition (a schema record), is named `undecodable_topic`: its messages
                    // were read, so that is no data loss (one rule for .db3 and .mcap), but it
                    // must be named.
                    if cmd == Cmd::Check {
                        let undecodable: Vec<String> = v["warnings"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|w| w["code"] == "undecodable_topic")
                            .filter_map(|w| w["topic"].as_str())
                            .map(|t| format!("checked {t}"))
                            .collect();
                        if !undecodable.is_empty() {
                            // The findings of a topic that could not be checked are gone with
                            // it: only the checked topics can be compared.
                            got.retain(|k, _| k.starts_with("checked "));
                            want.retain(|k, _| k.starts_with("checked "));
                        }
                        want.retain(|k, _| !undecodable.contains(k) || got.contains_key(k));
                    }
                    if (o.code == 0 || findings_only) && got != want {
                        self.failures.push(format!(
                            "{ctx}: exit 0 but counts differ from the undamaged bag without a data-loss warning:\n  got  {got:?}\n  want {want:?}\n  warnings {}",
                            v["warnings"]
                        ));
                    }
                    if o.code == 3 {
                        let findings = cmd == Cmd::Check
                            && v["findings"].as_array().is_some_and(|f| !f.is_empty());
                        if !has_loss_warning(&v) && !findings {
                            self.failures.push(format!(
                                "{ctx}: exit 3 without a data_loss warning: {}",
                                v["warnings"]
                            ));
                        }
                    }
                }
                other => self
                    .failures
                    .push(format!("{ctx}: exit {other}: {}", o.stderr.trim())),
            }
        }
        codes
    }

    fn finish(self, what: &str) {
        assert!(self.runs > 0, "{what}: nothing was run");
        eprintln!(
            "{what}: {} runs, exit codes {:?}, {} violation(s)",
            self.runs,
            self.by_code,
            self.failures.len()
        );
        if !self.failures.is_empty() {
            let shown: Vec<&String> = self.failures.iter().take(15).collect();
            panic!(
                "{} contract violation(s) in {what}; first ones:\n{}",
                self.failures.len(),
                shown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n")
            );
        }
    }
}

const ALL: &[Cmd] = &[Cmd::Info, Cmd::Clocks, Cmd::Sync, Cmd::Check];

/// The bags to damage: (name, .mcap file). Repo bags always; shared bags when present.
fn sources(include_shared: bool) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    for n in ["arm_wall", "sensors"] {
        v.push((n.to_string(), root().join(format!("bags/{n}/{n}.mcap"))));
    }
    if include_shared {
        if let Some(s) = shared_bags() {
            for n in ["arm_real", "sensors"] {
                let p = s.join(format!("{n}/{n}.mcap"));
                assert!(p.exists(), "{} is missing from ../shared", p.display());
                v.push((format!("shared/{n}"), p));
            }
        }
    }
    v
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

// ---------------------------------------------------------------------------------------------

/// Cut at every top-level record boundary (data section and summary) and at seeded random
/// offsets. A longer prefix never recovers fewer messages.
#[test]
fn cut_at_every_record_boundary_and_random_offsets() {
    let mut tally = Tally::default();
    for (name, src) in sources(true) {
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&name, &src);
        let dir = tempdir(&format!("cut-{}", name.replace('/', "_")));
        let mut cuts: Vec<usize> = records(&bytes).iter().map(|r| r.offset).collect();
        cuts.push(bytes.len() - 8);
        cuts.push(bytes.len() - 1);
        let mut rng = Rng(0x5eed_0000 ^ bytes.len() as u64);
        for _ in 0..25 {
            cuts.push(8 + rng.below(bytes.len() - 8));
        }
        cuts.sort();
        cuts.dedup();
        let mut last = 0u64;
        for (i, &cut) in cuts.iter().enumerate() {
            let f = write(&dir, &format!("cut_{cut}.mcap"), &bytes[..cut]);
            // Every cut through info; a spread of them through the stamp-reading commands.
            let cmds: &[Cmd] = if i % 5 == 0 { ALL } else { &[Cmd::Info] };
            tally.check(&base, &format!("cut at {cut}"), &f, cmds);
            let o = run(&["info", f.to_str().unwrap(), "--json"]);
            if let Ok(v) = serde_json::from_str::<Value>(&o.stdout) {
                let n = v["message_count"].as_u64().unwrap_or(0);
                if n < last {
                    tally.failures.push(format!(
                        "[{name}] cut at {cut} recovered {n} messages, a shorter prefix {last}"
                    ));
                }
                if n > base.total {
                    tally.failures.push(format!(
                        "[{name}] cut at {cut} reports {n} messages, more than the whole bag's {}",
                        base.total
                    ));
                }
                last = last.max(n);
            }
            let _ = std::fs::remove_file(&f);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("cuts");
}

/// Flipped bytes inside chunks: compressed data (zstd error or CRC mismatch), uncompressed
/// records (CRC mismatch), the chunk header (sizes, compression name).
#[test]
fn flipped_bytes_inside_chunks() {
    let mut tally = Tally::default();
    for (name, src) in sources(true) {
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&name, &src);
        let dir = tempdir(&format!("flip-{}", name.replace('/', "_")));
        let chunks: Vec<Rec> = records(&bytes)
            .into_iter()
            .filter(|r| r.opcode == OP_CHUNK)
            .collect();
        let mut rng = Rng(0xf11b_2024 ^ bytes.len() as u64);
        for (k, r) in chunks.iter().enumerate().take(6) {
            let c = chunk_body(&bytes, r);
            // Inside the (compressed or not) records.
            for j in 0..3 {
                let mut b = bytes.clone();
                let at = c.records_at + rng.below(c.records_len);
                b[at] ^= 1 << rng.below(8);
                let f = write(&dir, &format!("flip_c{k}_{j}.mcap"), &b);
                let codes = tally.check(&base, &format!("chunk {k} byte {at} flipped"), &f, ALL);
                // A flipped bit in a checksummed chunk must be noticed by the commands that
                // read payloads (`info` counts from the message indexes, which are intact, and
                // need not decompress the chunk at all).
                if u32_at(&bytes, c.crc_at) != 0 && codes[1] == 0 {
                    tally.failures.push(format!(
                        "[{name}] chunk {k} byte {at} flipped: clocks exits 0 (CRC not checked?)"
                    ));
                }
            }
            // The chunk header: start/end time, uncompressed size, CRC, compression name.
            for (what, at, val) in [
                ("uncompressed_size huge", r.body() + 16, Some(u64::MAX / 3)),
                ("uncompressed_size zero", r.body() + 16, Some(0)),
                ("crc", c.crc_at, None),
                ("compression name", r.body() + 32, None),
                (
                    "compressed_size beyond the record",
                    c.records_at - 8,
                    Some(1 << 40),
                ),
            ] {
                let mut b = bytes.clone();
                match val {
                    Some(v) => b[at..at + 8].copy_from_slice(&v.to_le_bytes()),
                    None => b[at] ^= 0x5a,
                }
                let f = write(&dir, &format!("hdr_c{k}.mcap"), &b);
                tally.check(&base, &format!("chunk {k}: {what}"), &f, ALL);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("chunk flips");
}

/// Garbage CDR in message payloads of an uncompressed bag. The chunk CRC is zeroed (writers
/// may omit it), so the damage reaches the decoders instead of being caught by the CRC.
#[test]
fn garbage_payloads_in_uncompressed_chunks() {
    let Some(shared) = shared_bags() else { return };
    let mut tally = Tally::default();
    for n in ["arm_real", "sensors"] {
        let src = shared.join(format!("{n}/{n}.mcap"));
        assert!(src.exists(), "{} is missing from ../shared", src.display());
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&format!("shared/{n}"), &src);
        let dir = tempdir(&format!("payload-{n}"));
        let payloads = uncompressed_payloads(&bytes);
        assert!(!payloads.is_empty(), "{n}: expected uncompressed chunks");
        let mut rng = Rng(0xcd_0000 + payloads.len() as u64);
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for j in 0..8 {
            let (crc_at, start, len) = payloads[rng.below(payloads.len())];
            let mut b = bytes.clone();
            b[crc_at..crc_at + 4].copy_from_slice(&[0; 4]);
            let what = match j % 4 {
                // Unsupported encapsulation (CDR2): no stamp can be read.
                0 => {
                    b[start + 1] = 0x07;
                    "encapsulation CDR2_LE".to_string()
                }
                // The frame_id length (after the 8-byte stamp) claims 4 GB.
                1 => {
                    b[start + 12..start + 16].copy_from_slice(&u32::MAX.to_le_bytes());
                    "frame_id length 0xffffffff".to_string()
                }
                // Random bytes in the body.
                2 => {
                    for _ in 0..16 {
                        let at = start + 4 + rng.below(len.saturating_sub(4).max(1));
                        b[at] = rng.next() as u8;
                    }
                    "16 random bytes".to_string()
                }
                // The whole payload zeroed, header included.
                _ => {
                    b[start..start + len].fill(0);
                    "payload zeroed".to_string()
                }
            };
            cases.push((format!("payload at {start}: {what}"), b));
        }
        for (k, (what, b)) in cases.iter().enumerate() {
            let f = write(&dir, &format!("payload_{k}.mcap"), b);
            tally.check(&base, what, &f, ALL);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("payload garbage");
}

/// The summary section damaged: footer pointing nowhere, records overrunning, chunk-index
/// offsets and statistics rewritten. The data section is intact, so nothing may be lost.
#[test]
fn damaged_summary() {
    let mut tally = Tally::default();
    for (name, src) in sources(true) {
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&name, &src);
        let dir = tempdir(&format!("summary-{}", name.replace('/', "_")));
        let ss = summary_start(&bytes);
        assert!(ss > 0, "{name}: expected a summary");
        let footer = bytes.len() - 8 - 29;
        let recs = records(&bytes);
        let summary: Vec<Rec> = recs.iter().copied().filter(|r| r.offset >= ss).collect();
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for (what, v) in [
            ("summary_start past the file", bytes.len() as u64 * 4),
            ("summary_start inside the data section", (ss / 2) as u64),
            ("summary_start = 1", 1),
            ("summary_start = footer", footer as u64),
        ] {
            let mut b = bytes.clone();
            b[footer + 9..footer + 17].copy_from_slice(&v.to_le_bytes());
            cases.push((what.to_string(), b));
        }
        // Chunk indexes pointing at garbage offsets; statistics lying about the count.
        let mut b = bytes.clone();
        for r in summary.iter().filter(|r| r.opcode == OP_CHUNK_INDEX) {
            // message_start_time, message_end_time, chunk_start_offset, chunk_length.
            b[r.body() + 16..r.body() + 24].copy_from_slice(&(u64::MAX - 7).to_le_bytes());
            b[r.body() + 24..r.body() + 32].copy_from_slice(&(1u64 << 50).to_le_bytes());
        }
        cases.push(("chunk indexes point past the file".into(), b));
        let mut b = bytes.clone();
        for r in summary.iter().filter(|r| r.opcode == OP_STATISTICS) {
            b[r.body()..r.body() + 8].copy_from_slice(&7u64.to_le_bytes());
        }
        cases.push(("statistics message_count = 7".into(), b));
        // A summary record whose length overruns the footer.
        if let Some(r) = summary.first() {
            let mut b = bytes.clone();
            b[r.offset + 1..r.offset + 9].copy_from_slice(&(1u64 << 40).to_le_bytes());
            cases.push(("first summary record overruns".into(), b));
        }
        // Random flips anywhere in the summary.
        let mut rng = Rng(0x5_0000 + ss as u64);
        for _ in 0..6 {
            let mut b = bytes.clone();
            let at = ss + rng.below(footer - ss);
            b[at] ^= 0xff;
            cases.push((format!("summary byte {at} flipped"), b));
        }
        for (k, (what, b)) in cases.iter().enumerate() {
            let f = write(&dir, &format!("summary_{k}.mcap"), b);
            tally.check(&base, what, &f, ALL);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("summary damage");
}

/// A chunk's record length set far beyond the end of the file (a torn length field).
#[test]
fn chunk_length_far_beyond_the_file() {
    let mut tally = Tally::default();
    for (name, src) in sources(true) {
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&name, &src);
        let dir = tempdir(&format!("len-{}", name.replace('/', "_")));
        let chunks: Vec<Rec> = records(&bytes)
            .into_iter()
            .filter(|r| r.opcode == OP_CHUNK)
            .collect();
        let picks = [0, chunks.len() / 2, chunks.len() - 1];
        for (k, &i) in picks.iter().enumerate() {
            for (j, v) in [u64::MAX, bytes.len() as u64 * 100, (1u64 << 63) + 5]
                .into_iter()
                .enumerate()
            {
                let mut b = bytes.clone();
                let r = chunks[i];
                b[r.offset + 1..r.offset + 9].copy_from_slice(&v.to_le_bytes());
                let f = write(&dir, &format!("len_{k}_{j}.mcap"), &b);
                let codes = tally.check(&base, &format!("chunk {i} length = {v}"), &f, ALL);
                // Messages after the damaged chunk cannot be found: exit 0 would hide that.
                if codes[0] == 0 && i + 1 < chunks.len() {
                    tally
                        .failures
                        .push(format!("[{name}] chunk {i} length {v}: info exits 0"));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("chunk length");
}

/// Removes the bytes of the given records (later offsets shift; the summary no longer matches).
fn without(bytes: &[u8], drop: &[Rec]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut pos = 0;
    let mut drop = drop.to_vec();
    drop.sort_by_key(|r| r.offset);
    for r in drop {
        out.extend_from_slice(&bytes[pos..r.offset]);
        pos = r.end();
    }
    out.extend_from_slice(&bytes[pos..]);
    out
}

/// Schema records deleted (data section only, or everywhere), and channels pointing at a
/// schema id the file never defines: the topics stay listed (counts from log times), their
/// payloads cannot be decoded and the user is told.
fn missing_schemas_with(cmds: &[Cmd]) {
    let mut tally = Tally::default();
    for (name, src) in sources(true) {
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&name, &src);
        let dir = tempdir(&format!("schema-{}", name.replace('/', "_")));
        let recs = records(&bytes);
        let ss = summary_start(&bytes);
        let schemas: Vec<Rec> = recs
            .iter()
            .copied()
            .filter(|r| r.opcode == OP_SCHEMA)
            .collect();
        let data_schemas: Vec<Rec> = schemas.iter().copied().filter(|r| r.offset < ss).collect();
        let mut cases: Vec<(String, Vec<u8>)> = vec![
            (
                "first schema deleted from the data section".into(),
                without(&bytes, &data_schemas[..data_schemas.len().min(1)]),
            ),
            (
                "every schema record deleted".into(),
                without(&bytes, &schemas),
            ),
        ];
        // Schema records turned into an unknown opcode (same length: offsets stay right).
        let mut b = bytes.clone();
        for r in &schemas {
            b[r.offset] = 0x7e;
        }
        cases.push(("every schema record made unknown (opcode 0x7e)".into(), b));
        // Every channel points at schema id 999.
        let mut b = bytes.clone();
        for r in recs.iter().filter(|r| r.opcode == OP_CHANNEL) {
            b[r.body() + 2..r.body() + 4].copy_from_slice(&999u16.to_le_bytes());
        }
        cases.push(("every channel points at schema 999".into(), b));
        // One channel deleted: its messages refer to a channel that is never defined.
        let chans: Vec<Rec> = recs
            .iter()
            .copied()
            .filter(|r| r.opcode == OP_CHANNEL)
            .collect();
        let id = u16_at(&bytes, chans[0].body());
        let same: Vec<Rec> = chans
            .iter()
            .copied()
            .filter(|r| u16_at(&bytes, r.body()) == id)
            .collect();
        cases.push((
            format!("channel {id} deleted everywhere"),
            without(&bytes, &same),
        ));
        for (k, (what, b)) in cases.iter().enumerate() {
            let f = write(&dir, &format!("schema_{k}.mcap"), b);
            tally.check(&base, what, &f, cmds);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("missing schemas");
}

#[test]
fn missing_schemas() {
    missing_schemas_with(&[Cmd::Info, Cmd::Clocks, Cmd::Sync]);
}

/// `check` on a bag none of whose payloads can be decoded (schemas gone) exits 0 with no
/// findings: "all checks passed" while nothing was checked.
#[test]
fn missing_schemas_check() {
    missing_schemas_with(&[Cmd::Check]);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// metadata.yaml with `extra` listed in `relative_file_paths` right after `listed`, at the
/// same indentation.
fn also_list(yaml: &str, listed: &str, extra: &str) -> String {
    let key = yaml
        .find("relative_file_paths:")
        .expect("relative_file_paths");
    let item = format!("- {listed}\n");
    let at = key + yaml[key..].find(&item).expect("listed file");
    let line_start = yaml[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &yaml[line_start..at];
    let end = at + item.len();
    format!("{}{indent}- {extra}\n{}", &yaml[..end], &yaml[end..])
}

/// rosbag2 folders whose files are gone, or duplicated.
#[test]
fn missing_and_duplicated_files() {
    let mut tally = Tally::default();
    for name in ["arm_wall", "sensors"] {
        let src_dir = root().join(format!("bags/{name}"));
        let base = baseline(name, &src_dir);
        let dir = tempdir(&format!("files-{name}"));
        let mcap = format!("{name}.mcap");

        // metadata.yaml lists the only file, which is gone: an error naming the folder.
        let gone = dir.join("all_gone");
        copy_dir(&src_dir, &gone);
        std::fs::remove_file(gone.join(&mcap)).unwrap();
        tally.check(&base, "listed file deleted", &gone, ALL);

        // metadata.yaml lists a second split file that is not there.
        let split = dir.join("split_missing");
        copy_dir(&src_dir, &split);
        let y = std::fs::read_to_string(split.join("metadata.yaml")).unwrap();
        let y = also_list(&y, &mcap, &format!("{name}_1.mcap"));
        assert!(
            y.contains(&format!("{name}_1.mcap")),
            "metadata layout changed"
        );
        std::fs::write(split.join("metadata.yaml"), y).unwrap();
        let codes = tally.check(&base, "second split file listed but missing", &split, ALL);
        if codes[0] == 0 {
            tally
                .failures
                .push(format!("[{name}] missing split file: info exits 0"));
        }

        // The file duplicated next to itself, not listed: read once, the copy is reported.
        let dup = dir.join("dup_unlisted");
        copy_dir(&src_dir, &dup);
        std::fs::copy(dup.join(&mcap), dup.join(format!("{name}_copy.mcap"))).unwrap();
        tally.check(&base, "duplicate file not in metadata.yaml", &dup, ALL);

        // An empty file and a non-MCAP file: errors naming them.
        let bad = dir.join("bad");
        std::fs::create_dir_all(&bad).unwrap();
        tally.check(&base, "empty file", &write(&bad, "empty.mcap", b""), ALL);
        tally.check(
            &base,
            "not an MCAP file",
            &write(&bad, "text.mcap", b"not an mcap file at all\n"),
            ALL,
        );
        tally.check(&base, "magic only", &write(&bad, "magic.mcap", MAGIC), ALL);
        // metadata.yaml that is not YAML.
        let yaml = dir.join("bad_yaml");
        copy_dir(&src_dir, &yaml);
        std::fs::write(
            yaml.join("metadata.yaml"),
            "rosbag2_bagfile_information: [\n",
        )
        .unwrap();
        tally.check(&base, "metadata.yaml is not YAML", &yaml, ALL);
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("missing / duplicated files");
}

/// The same file read twice: listed twice in metadata.yaml, or two identical copies in a folder
/// without metadata.yaml. Counting every message twice with exit 0 would be a number computed
/// from damaged input without a warning.
#[test]
fn duplicated_files() {
    let mut tally = Tally::default();
    for name in ["arm_wall", "sensors"] {
        let src_dir = root().join(format!("bags/{name}"));
        let base = baseline(name, &src_dir);
        let dir = tempdir(&format!("dup-{name}"));
        let mcap = format!("{name}.mcap");
        // metadata.yaml lists the same file twice.
        let twice = dir.join("listed_twice");
        copy_dir(&src_dir, &twice);
        let y = std::fs::read_to_string(twice.join("metadata.yaml")).unwrap();
        let y = also_list(&y, &mcap, &mcap);
        std::fs::write(twice.join("metadata.yaml"), y).unwrap();
        tally.check(&base, "metadata.yaml lists the file twice", &twice, ALL);

        // A folder without metadata.yaml holding two copies of the same file.
        let bare = dir.join("bare_dup");
        std::fs::create_dir_all(&bare).unwrap();
        std::fs::copy(src_dir.join(&mcap), bare.join("a.mcap")).unwrap();
        std::fs::copy(src_dir.join(&mcap), bare.join("b.mcap")).unwrap();
        tally.check(&base, "two identical files, no metadata.yaml", &bare, ALL);

        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("duplicated files");
}

/// A bag whose data section ends with a DataEnd but has no summary and no footer magic, and one
/// whose DataEnd is followed by junk: nothing is lost in either.
#[test]
fn data_end_then_junk() {
    let mut tally = Tally::default();
    for (name, src) in sources(false) {
        let bytes = std::fs::read(&src).unwrap();
        let base = baseline(&name, &src);
        let dir = tempdir(&format!("dataend-{name}"));
        let recs = records(&bytes);
        let de = recs.iter().find(|r| r.opcode == OP_DATA_END).unwrap();
        let mut b = bytes[..de.end()].to_vec();
        b.extend_from_slice(b"garbage after the data section \x00\xff\x13\x37");
        let f = write(&dir, "junk.mcap", &b);
        tally.check(&base, "junk after DataEnd", &f, ALL);
        let _ = std::fs::remove_dir_all(&dir);
    }
    tally.finish("data end");
}

// ---------------------------------------------------------------------------------------------
// Bounded memory.

/// Peak anonymous memory (heap: what the process allocated itself) and peak total RSS (VmHWM,
/// which also counts the memory-mapped bag's pages: page cache, reclaimable) of a run, sampled
/// from /proc every few milliseconds. Returns (exit code, peak RssAnon, VmHWM) in bytes.
fn peak_memory(args: &[&str]) -> (i32, u64, u64) {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    let field = |s: &str, k: &str| -> Option<u64> {
        let l = s.lines().find(|l| l.starts_with(k))?;
        let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    let (mut anon, mut hwm) = (0u64, 0u64);
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_path) {
            anon = anon.max(field(&s, "RssAnon:").unwrap_or(0));
            hwm = hwm.max(field(&s, "VmHWM:").unwrap_or(0));
        }
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code().unwrap_or(-1), anon, hwm);
        }
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
}

/// Writes a bag of at least 2 GiB with 2.6 million messages (4 MiB images at 10 Hz plus small
/// joint states at 50 kHz, uncompressed 8 MiB chunks: fast to write), runs `info`, `clocks`,
/// `check`, `sync` and `export` on it and asserts each one's heap stays under a fixed ceiling: four
/// chunk-sized buffers plus what the command keeps per message, by design (TESTING.md):
/// - `info`: the log times of each topic, 8 bytes (for periods and gaps), and each message's
///   payload length, 4 bytes (for sizes and the busiest second);
/// - `clocks`: log time, publish time and stamp, 24 bytes, plus one 8-byte scratch value per
///   message of the topics being analysed;
/// - `sync`: the arrival (24 bytes), the synchronizer's state (10: fate, per-topic index, the
///   arrival it left at) and the outcome (a drop record with its reason's detail, 25), plus 8
///   bytes of per-topic stamps while a low match rate is diagnosed;
/// - `check`: the scan's 32-byte item (log time, topic, stamp, a pointer to the findings or
///   metadata the few messages that need it keep) and the 24-byte times of each stamped
///   message for the stamp and command-age checks;
/// - `export`: its row-group buffer (a fixed size) plus the log time, publish time and stamp of
///   each exported message, 24 bytes, which the walk that writes the rows keeps for the
///   clock-axis analysis of the `clock_axis` column (the same series `clocks` analyses).
///
/// Takes ~25 s and 2.4 GiB of temp space (the bag is deleted afterwards). Skip it with
/// `BAGSCOPE_SKIP_BIG_BAG=1`; run it alone with `cargo test -p bagscope-cli --test
/// fault_injection bounded_memory -- --nocapture` (set TMPDIR to write the bag elsewhere).
#[test]
fn bounded_memory_on_a_2gb_bag() {
    use bagscope_msg::types::{Header, Image, JointState, Time};

    if std::env::var_os("BAGSCOPE_SKIP_BIG_BAG").is_some() {
        eprintln!("note: BAGSCOPE_SKIP_BIG_BAG is set; skipping the 2 GiB bounded-memory test");
        return;
    }
    // A machine without the room for the bag cannot run this test; say so rather than fail
    // on a full disk halfway through writing it.
    let free_kb = std::process::Command::new("df")
        .args(["-Pk", std::env::temp_dir().to_str().unwrap_or("/tmp")])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .nth(1)
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(3)
                        .and_then(|v| v.parse::<u64>().ok())
                })
        });
    if free_kb.is_some_and(|kb| kb < 4 << 20) {
        eprintln!(
            "note: less than 4 GiB free in the temp dir; skipping the 2 GiB bounded-memory test"
        );
        return;
    }
    const IMAGE_BYTES: usize = 4 << 20;
    const CHUNK: u64 = 8 << 20;
    const N_IMAGES: u64 = 520;
    const JS_PER_IMAGE: u64 = 5000;
    let dir = tempdir("bigbag");
    let path = dir.join("big.mcap");
    let t0 = 1_764_460_800_000_000_000i64;
    let started = std::time::Instant::now();
    {
        let mut w = common::BagWriter::with_options(
            &path,
            mcap::WriteOptions::new()
                .compression(None)
                .chunk_size(Some(CHUNK)),
        );
        let text = |t: &str| bagscope_msg::schema::builtin::schema_text(t).unwrap();
        let ci = w.channel(
            "/camera/image_raw",
            "sensor_msgs/msg/Image",
            &text("sensor_msgs/msg/Image"),
        );
        let cj = w.channel(
            "/joint_states",
            "sensor_msgs/msg/JointState",
            &text("sensor_msgs/msg/JointState"),
        );
        let mut img = bagscope_msg::encode_typed(&Image {
            header: Header {
                stamp: Time::default(),
                frame_id: "camera".into(),
            },
            height: 1024,
            width: 1024,
            encoding: "rgba8".into(),
            is_bigendian: 0,
            step: 4096,
            data: (0..IMAGE_BYTES).map(|i| (i * 7 + 3) as u8).collect(),
        })
        .unwrap();
        let mut js = bagscope_msg::encode_typed(&JointState {
            header: Header {
                stamp: Time::default(),
                frame_id: String::new(),
            },
            name: vec!["a".into(), "b".into()],
            position: vec![0.5, 1.0],
            velocity: vec![],
            effort: vec![],
        })
        .unwrap();
        for k in 0..N_IMAGES {
            let t = t0 + k as i64 * 100_000_000;
            let stamp = Time::from_ns(t - 5_000_000);
            img[4..8].copy_from_slice(&stamp.sec.to_le_bytes());
            img[8..12].copy_from_slice(&stamp.nanosec.to_le_bytes());
            w.message(ci, t, &img);
            for j in 0..JS_PER_IMAGE {
                let tj = t + 1 + j as i64 * 20_000;
                // Encoded once, stamp patched per message (as for the images): 2.6 M encodes
                // were most of the test's time in a debug build.
                let stamp = Time::from_ns(tj - 1_000_000);
                js[4..8].copy_from_slice(&stamp.sec.to_le_bytes());
                js[8..12].copy_from_slice(&stamp.nanosec.to_le_bytes());
                w.message(cj, tj, &js);
            }
        }
        w.finish();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    let n_msgs = N_IMAGES * (1 + JS_PER_IMAGE);
    eprintln!(
        "wrote {} ({:.2} GiB, {n_msgs} messages) in {:.1} s",
        path.display(),
        size as f64 / (1u64 << 30) as f64,
        started.elapsed().as_secs_f64()
    );
    assert!(size >= 2 << 30, "bag is only {size} bytes");

    // Chunk-sized buffers (four: covers the binary, allocator slack, rayon and the report
    // too) plus each command's bytes per message (see above).
    let fixed = 4 * CHUNK;
    let p = path.to_str().unwrap();
    let parquet = dir.join("js.parquet");
    let parquet = parquet.to_str().unwrap();
    let mut failures = Vec::new();
    // Export holds its row-group buffer, a fixed size: two groups of 65,536 rows (the
    // default) of at most 512 bytes of row state each for these small messages (payload,
    // decoded columns and the Parquet writer's pages), plus the three times of each exported
    // message (every one is a /joint_states message) for the clock-axis analysis.
    let row_buffer = 2 * 65_536 * 512;
    let exported = N_IMAGES * JS_PER_IMAGE;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    for args in [
        vec!["info", p, "--json"],
        vec!["clocks", p, "--json"],
        vec!["check", p, "--json"],
        vec![
            "sync",
            p,
            "--topics",
            "/camera/image_raw,/joint_states",
            "--policy",
            "approx",
            "--json",
        ],
        vec![
            "export",
            p,
            "--topics",
            "/joint_states",
            "-o",
            parquet,
            "--json",
        ],
    ] {
        let t = std::time::Instant::now();
        let (code, anon, hwm) = peak_memory(&args);
        let ceiling = fixed
            + match args[0] {
                "info" => (8 + 4) * n_msgs,
                "clocks" => (24 + 8) * n_msgs,
                "sync" => (24 + 10 + 25 + 8) * n_msgs,
                "check" => (32 + 24) * n_msgs,
                _ => row_buffer + 24 * exported,
            };
        eprintln!(
            "{:<7} exit {code}  peak heap (RssAnon) {:>6.1} MiB  VmHWM (incl. mapped bag pages) {:>7.1} MiB  ceiling {:.1} MiB  {:.1} s",
            args[0],
            anon as f64 / (1 << 20) as f64,
            hwm as f64 / (1 << 20) as f64,
            ceiling as f64 / (1 << 20) as f64,
            t.elapsed().as_secs_f64()
        );
        if code != 0 {
            failures.push(format!("{}: exit {code}", args[0]));
        }
        if anon > ceiling {
            failures.push(format!(
                "{}: peak heap {anon} bytes over the ceiling {ceiling}",
                args[0]
            ));
        }
        // Mapped bag pages are dropped once their chunk is read: resident memory must not
        // grow with the bag (it did, up to its whole size), only by the chunks in flight.
        let resident_ceiling = ceiling + (2 + threads) * CHUNK;
        if hwm > resident_ceiling {
            failures.push(format!(
                "{}: peak resident memory {hwm} bytes (with mapped bag pages) over {resident_ceiling}",
                args[0]
            ));
        }
    }
    if std::env::var_os("BAGSCOPE_KEEP_BIG_BAG").is_some() {
        eprintln!("kept {}", dir.keep().display());
    }
    assert!(failures.is_empty(), "{failures:?}");
}

// ---------------------------------------------------------------------------------------------
// Fuzz regressions: every input in tests/data/regressions/<target>/ replayed through the same
// calls as fuzz/fuzz_targets/<target>.rs (in-process: a panic fails the test).

fn regression_files(target: &str) -> Vec<PathBuf> {
    let dir = root().join("tests/data/regressions").join(target);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.is_file());
    v.sort();
    v
}

fn replay_mcap_open_scan(data: &[u8], scratch: &Path) {
    use bagscope_msg::{decode, schema_for_channel, StampLocator};
    std::fs::write(scratch, data).unwrap();
    let Ok(bag) = bagscope_bag::Bag::open(scratch) else {
        return;
    };
    let all = bag.all_topics();
    let _ = bag.log_times(&all);
    let schemas: Vec<_> = bag
        .topics
        .iter()
        .map(
            |t| match schema_for_channel(&t.type_name, &t.schema_encoding, &t.schema_data) {
                Ok(s) => {
                    let loc = s.stamp_locator();
                    (Some(s), loc)
                }
                Err(_) => (None, StampLocator::none()),
            },
        )
        .collect();
    let scan = bag.scan(&all, |m| {
        let (schema, loc) = &schemas[m.topic];
        let _ = loc.read_frame_id(m.data);
        if let Some(s) = schema {
            let _ = decode(s, m.data);
        }
        loc.read_stamp_ns(m.data).ok().flatten()
    });
    let mut seen = 0usize;
    let _ = bag.visit(&all, |_| seen += 1);
    assert_eq!(seen, scan.items.len(), "visit and scan disagree");
    // The column scan (index-sized slices) finds exactly the plain scan's messages.
    let (cols, _) = bag.scan_columns(&all, |m| [m.data.len() as i64]);
    let mut per_topic = vec![0usize; bag.topics.len()];
    for it in &scan.items {
        per_topic[it.topic] += 1;
    }
    let col_counts: Vec<usize> = cols.iter().map(|c| c.len()).collect();
    assert_eq!(col_counts, per_topic, "scan_columns and scan disagree");
    // info --fast: index-header answers, and the summary-only open.
    let _ = bag.topic_spans(&all);
    let opts = bagscope_bag::OpenOptions {
        trust_summary: true,
        ..Default::default()
    };
    if let Ok(b) = bagscope_bag::Bag::open_with(scratch, opts) {
        let _ = b.topic_spans(&b.all_topics());
    }
}

fn replay_schema_parse(data: &[u8]) {
    use bagscope_msg::schema::{parse_ros2idl, parse_ros2msg, parse_service_event};
    use bagscope_msg::{decode, schema_for_channel};
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let names = [
        "fuzz_pkg/msg/Root",
        "std_msgs/msg/Header",
        "fuzz_pkg/srv/Call_Event",
        "Root",
        "a/b",
    ];
    let name = names[(sel >> 2) as usize % names.len()];
    let parsed = match sel & 3 {
        0 => parse_ros2msg(name, &text),
        1 => parse_ros2idl(name, &text),
        2 => parse_service_event(name, &text),
        _ => schema_for_channel(name, "ros2msg", rest),
    };
    let Ok(schema) = parsed else { return };
    let payload: &[u8] = &[
        0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, b'a', b'b', 0, 0, 5, 0, 0, 0, 6, 0, 0, 0,
        7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 10, 0, 0, 0,
    ];
    let loc = schema.stamp_locator();
    let _ = loc.read_stamp_ns(payload);
    let _ = loc.read_frame_id(payload);
    let _ = decode(&schema, payload);
    let _ = decode(&schema, &[0, 0, 0, 0]);
    let _ = parse_ros2msg(schema.name(), &schema.to_ros2msg_text());
}

/// The cdr_decode target's own calls and assertions (one copy, in fuzz/shared/).
mod cdr_target {
    include!("../fuzz/shared/cdr_decode.rs");

    pub(crate) fn replay(data: &[u8]) {
        let schemas = cdr_schemas(
            include_str!("../fuzz/schemas/nested.msg"),
            include_str!("../fuzz/schemas/nested.idl"),
        );
        check_cdr_input(data, &schemas);
    }
}

fn replay_cdr_decode(data: &[u8]) {
    cdr_target::replay(data);
}

#[test]
fn regression_inputs() {
    let dir = tempdir("regress");
    let scratch = dir.join("input.mcap");
    let mut n = 0;
    for f in regression_files("mcap_open_scan")
        .into_iter()
        .filter(|f| !is_open_bag_bug(f))
    {
        replay_mcap_open_scan(&std::fs::read(&f).unwrap(), &scratch);
        // And through the binary: the contract, not just "no panic".
        info_keeps_the_contract(&f);
        n += 1;
    }
    for f in regression_files("schema_parse") {
        replay_schema_parse(&std::fs::read(&f).unwrap());
        n += 1;
    }
    for f in regression_files("cdr_decode") {
        replay_cdr_decode(&std::fs::read(&f).unwrap());
        n += 1;
    }
    eprintln!("replayed {n} regression input(s)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `info` and `info --fast` on `f`: exit 0, 1 or 3, never a panic, and the same answer (exit
/// code and message count), except where `--fast` answered from the summary alone
/// (`summary_only`, as `mcap info` does: the data section is not read) and the full read found
/// data lost there: then the summary's counts stand, and the report says how they were got.
/// (Inputs named `open-bug-*` reproduced bag-crate crashes, fixed since; they keep their own
/// test.)
fn info_keeps_the_contract(f: &Path) {
    let mut answers = Vec::new();
    for fast in [false, true] {
        let mut args = vec!["info", f.to_str().unwrap(), "--json"];
        if fast {
            args.push("--fast");
        }
        let o = run(&args);
        assert!(
            !o.stderr.contains("panicked"),
            "{}: {}",
            f.display(),
            o.stderr
        );
        assert!(
            matches!(o.code, 0 | 1 | 3),
            "{}: exit {}",
            f.display(),
            o.code
        );
        let v = serde_json::from_str::<serde_json::Value>(&o.stdout).ok();
        let count = v.as_ref().and_then(|v| v["message_count"].as_u64());
        let loss = v.as_ref().is_some_and(has_loss_warning);
        let summary_only = v.as_ref().is_some_and(|v| v["summary_only"] == true);
        answers.push((o.code, count, loss, summary_only));
    }
    let ((full_code, full_n, full_loss, _), (fast_code, fast_n, _, fast_summary)) =
        (answers[0], answers[1]);
    if !(full_loss && fast_summary) {
        assert_eq!(
            (full_code, full_n),
            (fast_code, fast_n),
            "{}: (exit, message_count) of the full read and of --fast",
            f.display()
        );
    }
}

fn is_open_bag_bug(f: &Path) -> bool {
    f.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("open-bug-"))
}

#[test]
fn open_bag_bug_regressions() {
    let dir = tempdir("regress-bugs");
    let scratch = dir.join("input.mcap");
    for f in regression_files("mcap_open_scan")
        .into_iter()
        .filter(|f| is_open_bag_bug(f))
    {
        replay_mcap_open_scan(&std::fs::read(&f).unwrap(), &scratch);
        info_keeps_the_contract(&f);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// rosbag2 writes each zstd chunk as one frame with a content checksum; zstd verifies it while
/// decompressing, so the scan does not compute the chunk CRC again. A flipped bit anywhere in
/// such a chunk must still be reported as loss, by every command that reads payloads.
#[test]
fn flipped_bytes_in_checksummed_zstd_chunks() {
    let rel = "ros2/rosbag2/rosbag2_py/test/resources/mcap/convert_a/rewriter_a_0.mcap";
    let Some(corpus) = common::shared_path("corpus", rel) else {
        return;
    };
    let src = corpus.join(rel);
    let bytes = std::fs::read(&src).unwrap();
    let dir = tempdir("zstd-checksum");
    let mut rng = Rng(0x2571_cafe);
    let mut tried = 0;
    for r in records(&bytes).iter().filter(|r| r.opcode == OP_CHUNK) {
        let c = chunk_body(&bytes, r);
        let z = &bytes[c.records_at..c.records_at + c.records_len];
        // The frame header descriptor's checksum flag: this test is about such chunks.
        assert!(z.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) && z[4] & 0x04 != 0);
        for j in 0..8 {
            let mut b = bytes.clone();
            // Past the frame header (a damaged header is a different, louder failure).
            let at = c.records_at + 6 + rng.below(c.records_len - 6);
            b[at] ^= 1 << rng.below(8);
            let f = write(&dir, &format!("zflip_{at}_{j}.mcap"), &b);
            let out = run(&["clocks", f.to_str().unwrap(), "--json"]);
            assert_eq!(out.code, 3, "byte {at}: {}", out.stderr);
            let v: Value = serde_json::from_str(&out.stdout).unwrap();
            assert!(has_loss_warning(&v), "byte {at}: no loss warning");
            tried += 1;
        }
    }
    assert!(tried >= 8);
    let _ = std::fs::remove_dir_all(&dir);
}
