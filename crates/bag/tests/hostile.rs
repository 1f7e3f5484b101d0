//! Hostile and careless MCAP input, each file built here byte by byte: decompression bombs
//! (chunks and whole-file zstd), a channel id redefined mid-file, a channel whose topic is not
//! UTF-8, messages on a channel never defined, log times at or after 2^63 ns.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use bagscope_bag::{Bag, OpenOptions, Warning};

const MAGIC: &[u8] = b"\x89MCAP0\r\n";

fn rec(op: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![op];
    v.extend((body.len() as u64).to_le_bytes());
    v.extend(body);
    v
}

fn string(s: &[u8]) -> Vec<u8> {
    let mut v = (s.len() as u32).to_le_bytes().to_vec();
    v.extend(s);
    v
}

fn header() -> Vec<u8> {
    rec(0x01, &[string(b"ros2"), string(b"hostile")].concat())
}

fn schema(id: u16) -> Vec<u8> {
    let mut b = id.to_le_bytes().to_vec();
    b.extend(string(b"std_msgs/msg/Empty"));
    b.extend(string(b"ros2msg"));
    b.extend(string(b""));
    rec(0x03, &b)
}

fn channel(id: u16, topic: &[u8]) -> Vec<u8> {
    let mut b = id.to_le_bytes().to_vec();
    b.extend(1u16.to_le_bytes());
    b.extend(string(topic));
    b.extend(string(b"cdr"));
    b.extend(0u32.to_le_bytes());
    rec(0x04, &b)
}

fn message(ch: u16, seq: u32, log: u64) -> Vec<u8> {
    let mut b = ch.to_le_bytes().to_vec();
    b.extend(seq.to_le_bytes());
    b.extend(log.to_le_bytes());
    b.extend(log.to_le_bytes());
    b.extend([0, 1, 0, 0]);
    rec(0x05, &b)
}

/// A chunk record: `claimed` uncompressed bytes, `data` as stored.
fn chunk_raw(start: u64, end: u64, claimed: u64, compression: &[u8], data: &[u8]) -> Vec<u8> {
    let mut b = start.to_le_bytes().to_vec();
    b.extend(end.to_le_bytes());
    b.extend(claimed.to_le_bytes());
    b.extend(0u32.to_le_bytes()); // no CRC
    b.extend(string(compression));
    b.extend((data.len() as u64).to_le_bytes());
    b.extend(data);
    rec(0x06, &b)
}

/// An uncompressed chunk of `records` followed by complete message index records for the
/// messages in it.
fn chunk_indexed(records: &[u8]) -> Vec<u8> {
    let mut idx: std::collections::BTreeMap<u16, Vec<(u64, u64)>> = Default::default();
    let (mut pos, mut start, mut end) = (0usize, u64::MAX, 0u64);
    while pos + 9 <= records.len() {
        let len = u64::from_le_bytes(records[pos + 1..pos + 9].try_into().unwrap()) as usize;
        if records[pos] == 0x05 {
            let body = &records[pos + 9..];
            let ch = u16::from_le_bytes(body[..2].try_into().unwrap());
            let log = u64::from_le_bytes(body[6..14].try_into().unwrap());
            idx.entry(ch).or_default().push((log, pos as u64));
            start = start.min(log);
            end = end.max(log);
        }
        pos += 9 + len;
    }
    let mut out = chunk_raw(start, end, records.len() as u64, b"", records);
    for (ch, mut e) in idx {
        e.sort();
        let mut b = ch.to_le_bytes().to_vec();
        b.extend(((e.len() * 16) as u32).to_le_bytes());
        for (t, o) in e {
            b.extend(t.to_le_bytes());
            b.extend(o.to_le_bytes());
        }
        out.extend(rec(0x07, &b));
    }
    out
}

/// Magic, header, `body`, DataEnd, a footer without summary, magic.
fn file(body: &[u8]) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend(header());
    v.extend(body);
    v.extend(rec(0x0F, &0u32.to_le_bytes()));
    v.extend(rec(0x02, &[0u8; 20]));
    v.extend(MAGIC);
    v
}

/// [`file`] with a summary section of `summary` records.
fn file_with_summary(body: &[u8], summary: &[u8]) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend(header());
    v.extend(body);
    v.extend(rec(0x0F, &0u32.to_le_bytes()));
    let start = v.len() as u64;
    v.extend(summary);
    let mut footer = start.to_le_bytes().to_vec();
    footer.extend([0u8; 12]);
    v.extend(rec(0x02, &footer));
    v.extend(MAGIC);
    v
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// zstd of `n` zero bytes, made without holding them.
fn zstd_zeros(n: u64) -> Vec<u8> {
    let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    let block = vec![0u8; 1 << 20];
    let mut left = n;
    while left > 0 {
        let k = left.min(block.len() as u64) as usize;
        e.write_all(&block[..k]).unwrap();
        left -= k as u64;
    }
    e.finish().unwrap()
}

/// Peak resident memory of this process so far (bytes).
fn peak_rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn codes(w: &[Warning]) -> Vec<&str> {
    w.iter().map(|w| w.code.as_str()).collect()
}

fn count_by_topic(bag: &Bag) -> Vec<(String, usize)> {
    let scan = bag.scan(&bag.all_topics(), |_| ());
    let mut v: Vec<(String, usize)> = bag
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| {
            (
                t.name.clone(),
                scan.items.iter().filter(|it| it.topic == i).count(),
            )
        })
        .collect();
    v.sort();
    v
}

const GIB: u64 = 1 << 30;

/// Two chunks that claim and really hold 3 GiB of zeros each, and one that claims 1 MiB but
/// holds 3 GiB: every read refuses the first two (`decompression_limit`, data loss), stops the
/// third at its claimed size (`corrupt_chunk`), reads the good chunk, in bounded memory.
#[test]
fn chunk_decompression_bomb_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = zstd_zeros(3 * GIB);
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let mut good = schema(1);
    good.extend(channel(1, b"/ok"));
    for i in 0..5 {
        good.extend(message(1, i, 1_000 + u64::from(i)));
    }
    let mut body = chunk_indexed(&good);
    body.extend(chunk_raw(2_000, 2_000, 3 * GIB, b"zstd", &bomb));
    body.extend(chunk_raw(3_000, 3_000, 3 * GIB, b"zstd", &bomb));
    body.extend(chunk_raw(4_000, 4_000, 1 << 20, b"zstd", &bomb));
    let p = write(dir.path(), "bomb.mcap", &file(&body));

    let t0 = Instant::now();
    for trust_summary in [false, true] {
        let bag = Bag::open_with(
            &p,
            OpenOptions {
                trust_summary,
                ..Default::default()
            },
        )
        .unwrap();
        let open = bag.open_warnings();
        let limit: Vec<&Warning> = open
            .iter()
            .filter(|w| w.code == "decompression_limit")
            .collect();
        assert_eq!(limit.len(), 2, "{open:?}");
        assert!(limit.iter().all(|w| w.data_loss), "{limit:?}");
        let all = bag.all_topics();
        let scan = bag.scan(&all, |m| m.data.len());
        assert_eq!(scan.items.len(), 5);
        assert!(
            scan.warnings
                .iter()
                .any(|w| w.code == "corrupt_chunk" && w.data_loss),
            "{:?}",
            scan.warnings
        );
        let (times, _) = bag.topic_log_times(&all);
        assert_eq!(times[0].len(), 5);
        let (cols, _) = bag.scan_columns(&all, |m| [m.data.len() as i64]);
        assert_eq!(cols[0].len(), 5);
        let mut n = 0;
        bag.visit(&all, |_| n += 1);
        assert_eq!(n, 5);
    }
    let took = t0.elapsed();
    let peak = peak_rss_bytes();
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert!(peak < 700 << 20, "peak RSS {peak} bytes");
}

/// Below the size limit, a chunk that claims far more than any real compression gives is
/// refused too; and the limit is an open option.
#[test]
fn chunk_limits_by_ratio_and_by_option() {
    let dir = tempfile::tempdir().unwrap();
    let small = zstd_zeros(200 << 20);
    let mut good = schema(1);
    good.extend(channel(1, b"/ok"));
    good.extend(message(1, 0, 10));
    let mut body = chunk_indexed(&good);
    body.extend(chunk_raw(20, 20, 200 << 20, b"zstd", &small));
    let p = write(dir.path(), "ratio.mcap", &file(&body));
    let bag = Bag::open(&p).unwrap();
    let w = bag.open_warnings();
    assert!(
        w.iter()
            .any(|w| w.code == "decompression_limit" && w.data_loss && w.message.contains("2000x")),
        "{w:?}"
    );

    // A 2 MiB chunk of real-looking data: read by default, refused under a 1 MiB limit.
    let mut recs = schema(1);
    recs.extend(channel(1, b"/ok"));
    for i in 0..2000u32 {
        let mut b = 1u16.to_le_bytes().to_vec();
        b.extend(i.to_le_bytes());
        b.extend(u64::from(i).to_le_bytes());
        b.extend(u64::from(i).to_le_bytes());
        b.extend((0..1024u32).map(|k| (k.wrapping_mul(2654435761).wrapping_add(i) >> 13) as u8));
        recs.extend(rec(0x05, &b));
    }
    let z = zstd::bulk::compress(&recs, 3).unwrap();
    let body = chunk_raw(0, 1999, recs.len() as u64, b"zstd", &z);
    let p = write(dir.path(), "big.mcap", &file(&body));
    let bag = Bag::open(&p).unwrap();
    assert!(!bag.open_warnings().iter().any(|w| w.data_loss));
    assert_eq!(bag.scan(&bag.all_topics(), |_| ()).items.len(), 2000);
    let bag = Bag::open_with(
        &p,
        OpenOptions {
            max_chunk_bytes: Some(1 << 20),
            ..Default::default()
        },
    )
    .unwrap();
    let w = bag.open_warnings();
    assert!(
        w.iter()
            .any(|w| w.code == "decompression_limit" && w.data_loss),
        "{w:?}"
    );
    // Its channel lives inside the refused chunk: nothing is read, nothing decompressed.
    assert!(bag.scan(&bag.all_topics(), |_| ()).items.is_empty());
}

/// A rosbag2 file-compressed `.mcap.zstd` that decompresses to 3 GiB: decompressed to a
/// temporary file up to a cap relative to its size, with a `decompression_limit` warning.
#[test]
fn file_compression_bomb_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    e.write_all(MAGIC).unwrap();
    e.write_all(&header()).unwrap();
    let block = vec![0u8; 1 << 20];
    for _ in 0..3072 {
        e.write_all(&block).unwrap();
    }
    let z = e.finish().unwrap();
    let p = write(dir.path(), "bomb.mcap.zstd", &z);
    let t0 = Instant::now();
    let bag = Bag::open(&p).unwrap();
    let w = bag.open_warnings();
    assert!(
        w.iter()
            .any(|w| w.code == "decompression_limit" && w.data_loss),
        "{w:?}"
    );
    assert!(bag.files[0].size() <= (z.len() as u64 * 2000).max(64 << 20));
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert!(peak_rss_bytes() < 1200 << 20, "{}", peak_rss_bytes());
}

/// Channel 1 is `/a` for ten messages, then `/b` for ten more (the MCAP spec forbids it; a
/// streaming reader follows the record order): every read counts ten and ten, with a warning.
#[test]
fn redefined_channel_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = schema(1);
    first.extend(channel(1, b"/a"));
    let mut second = channel(1, b"/b");
    for i in 0..10 {
        first.extend(message(1, i, 100 + u64::from(i)));
        second.extend(message(1, 10 + i, 200 + u64::from(i)));
    }
    // Loose records, and chunks with complete message indexes.
    let loose = [first.clone(), second.clone()].concat();
    let chunked = [chunk_indexed(&first), chunk_indexed(&second)].concat();
    for (name, body) in [("loose.mcap", loose), ("chunked.mcap", chunked)] {
        let p = write(dir.path(), name, &file(&body));
        let bag = Bag::open(&p).unwrap();
        let w = bag.open_warnings();
        assert!(
            w.iter().any(|w| w.code == "channel_redefined"),
            "{name}: {w:?}"
        );
        assert_eq!(
            count_by_topic(&bag),
            vec![("/a".to_string(), 10), ("/b".to_string(), 10)],
            "{name}"
        );
        let all = bag.all_topics();
        let ti = |n: &str| bag.topic_index(n).unwrap();
        let (times, tw) = bag.topic_log_times(&all);
        assert!(!tw.iter().any(|w| w.data_loss), "{tw:?}");
        assert_eq!(times[ti("/a")], (100..110).collect::<Vec<i64>>(), "{name}");
        assert_eq!(times[ti("/b")], (200..210).collect::<Vec<i64>>(), "{name}");
        let (cols, _) = bag.scan_columns(&all, |m| [i64::from(m.sequence)]);
        assert_eq!(cols[ti("/b")].values[0], (10..20).collect::<Vec<i64>>());
        if let Some(spans) = bag.topic_spans(&all) {
            assert_eq!(spans[ti("/a")].count, 10);
            assert_eq!(spans[ti("/b")].count, 10);
        }
    }
}

/// The same, with a summary that repeats only the first definition (so nothing at open
/// reads the chunks): the scan sees the second definition, skips the messages it would
/// misattribute and says so as data loss.
#[test]
fn redefinition_hidden_by_the_summary_is_not_misattributed() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = schema(1);
    first.extend(channel(1, b"/a"));
    let mut second = channel(1, b"/b");
    for i in 0..10 {
        first.extend(message(1, i, 100 + u64::from(i)));
        second.extend(message(1, 10 + i, 200 + u64::from(i)));
    }
    let body = [chunk_indexed(&first), chunk_indexed(&second)].concat();
    let summary = [schema(1), channel(1, b"/a")].concat();
    let p = write(
        dir.path(),
        "hidden.mcap",
        &file_with_summary(&body, &summary),
    );
    let bag = Bag::open(&p).unwrap();
    assert!(bag.files[0].has_summary);
    let scan = bag.scan(&bag.all_topics(), |_| ());
    assert_eq!(scan.items.len(), 10);
    assert!(
        scan.warnings
            .iter()
            .any(|w| w.code == "channel_redefined" && w.data_loss && w.message.contains("'/b'")),
        "{:?}",
        scan.warnings
    );
}

/// 200 of 600 messages are on a channel whose topic is not UTF-8: read under the name with
/// the bad bytes replaced (a warning, not a loss), by the index path and the scan alike.
#[test]
fn non_utf8_topic_is_read_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = schema(1);
    recs.extend(channel(1, b"/ok"));
    recs.extend(channel(2, b"/bad\xff\xfe"));
    for i in 0..600u32 {
        recs.extend(message(if i % 3 == 0 { 2 } else { 1 }, i, u64::from(i)));
    }
    let p = write(dir.path(), "utf8.mcap", &file(&chunk_indexed(&recs)));
    let bag = Bag::open(&p).unwrap();
    let w = bag.open_warnings();
    assert!(
        w.iter().any(|w| w.code == "invalid_utf8" && !w.data_loss),
        "{w:?}"
    );
    let all = bag.all_topics();
    let (times, tw) = bag.topic_log_times(&all);
    assert!(!tw.iter().any(|w| w.data_loss), "{tw:?}");
    assert_eq!(times.iter().map(Vec::len).sum::<usize>(), 600);
    let bad = bag.topic_index("/bad\u{fffd}\u{fffd}").unwrap();
    assert_eq!(times[bad].len(), 200);
    assert_eq!(bag.scan(&all, |_| ()).items.len(), 600);
}

/// Text that is not UTF-8 in the summary's copy of a channel is damage to the summary: the
/// definition in the data section names the topic.
#[test]
fn non_utf8_in_the_summary_copy_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = schema(1);
    recs.extend(channel(1, b"/gripper"));
    for i in 0..5u32 {
        recs.extend(message(1, i, u64::from(i)));
    }
    let summary = [schema(1), channel(1, b"/gr\xffpper")].concat();
    let p = write(
        dir.path(),
        "summary.mcap",
        &file_with_summary(&chunk_indexed(&recs), &summary),
    );
    let bag = Bag::open(&p).unwrap();
    assert_eq!(count_by_topic(&bag), vec![("/gripper".to_string(), 5)]);
}

/// Messages on a channel that is never defined are lost whichever way they are read: the
/// message-index path reports them as the scan does.
#[test]
fn undefined_channel_is_loss_for_every_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = schema(1);
    recs.extend(channel(1, b"/ok"));
    for i in 0..30u32 {
        recs.extend(message(if i % 3 == 0 { 7 } else { 1 }, i, u64::from(i)));
    }
    let p = write(dir.path(), "undef.mcap", &file(&chunk_indexed(&recs)));
    let bag = Bag::open(&p).unwrap();
    let all = bag.all_topics();
    let (times, tw) = bag.topic_log_times(&all);
    assert_eq!(times[0].len(), 20);
    assert!(
        tw.iter()
            .any(|w| w.code == "unknown_channel" && w.data_loss),
        "{tw:?}"
    );
    let scan = bag.scan(&all, |_| ());
    assert!(codes(&scan.warnings).contains(&"unknown_channel"));
    let (_, cw) = bag.scan_columns(&all, |_| [0i64; 0]);
    assert!(codes(&cw).contains(&"unknown_channel"), "{cw:?}");
    assert!(bag.topic_spans(&all).is_none());
}

/// Log times at or after 2^63 ns are held as `i64::MAX` and said so, in chunks (shown by the
/// header, or hidden by a header that says otherwise) and outside them.
#[test]
fn log_times_past_i64_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let huge = (1u64 << 63) + 5;
    let mut defs = schema(1);
    defs.extend(channel(1, b"/t"));
    // Outside chunks.
    let mut loose = defs.clone();
    loose.extend(message(1, 0, 1));
    loose.extend(message(1, 1, huge));
    // In a chunk whose header shows it, and in one whose header hides it.
    let mut recs = defs.clone();
    recs.extend(message(1, 0, 1));
    recs.extend(message(1, 1, huge));
    let shown = chunk_indexed(&recs);
    let hidden = [defs.clone(), chunk_raw(1, 2, recs.len() as u64, b"", &recs)].concat();
    // With message indexes, read from them alone.
    let mut hidden_indexed = chunk_indexed(&recs);
    hidden_indexed[17..25].copy_from_slice(&2u64.to_le_bytes());
    for (name, body, at_open) in [
        ("loose.mcap", loose, true),
        ("shown.mcap", shown, true),
        ("hidden.mcap", hidden, false),
        ("hidden_indexed.mcap", hidden_indexed, false),
    ] {
        let p = write(dir.path(), name, &file(&body));
        let bag = Bag::open(&p).unwrap();
        let all = bag.all_topics();
        let scan = bag.scan(&all, |m| m.publish_time_ns);
        let times: Vec<i64> = scan.items.iter().map(|it| it.log_time_ns).collect();
        assert_eq!(times, vec![1, i64::MAX], "{name}");
        let open = bag.open_warnings();
        let from = if at_open { &open } else { &scan.warnings };
        assert!(
            from.iter()
                .any(|w| w.code == "log_time_out_of_range" && !w.data_loss),
            "{name}: {open:?} {:?}",
            scan.warnings
        );
        // Every read gets through the extreme time, and says so.
        let (t, tw) = bag.topic_log_times(&all);
        assert_eq!(t[0], vec![1, i64::MAX]);
        if !at_open {
            assert!(
                codes(&tw).contains(&"log_time_out_of_range"),
                "{name}: {tw:?}"
            );
        }
        let _ = bag.topic_spans(&all);
        let (c, _) = bag.scan_columns(&all, |m| [m.publish_time_ns.unwrap_or(0)]);
        assert_eq!(c[0].log_time_ns, vec![1, i64::MAX]);
    }
}
