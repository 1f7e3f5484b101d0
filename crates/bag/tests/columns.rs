//! `Bag::scan_columns` writes each topic's values straight into arrays sized from the chunks'
//! message indexes. Whatever the file looks like, the result must be exactly what the plain
//! scan gives (every message, log-time order, stable), regrouped by topic: checked here on
//! files where the index counts are right, wrong in both directions, or missing.

use std::path::{Path, PathBuf};

use bagscope_bag::{Bag, Columns};
use bagscope_testkit::tempdir;

/// `(channel index, log time)` of each message, written in this order.
fn write_mcap(msgs: &[(usize, u64)], chunk_size: Option<u64>) -> Vec<u8> {
    let mut w = bagscope_testkit::BagWriter::in_memory(
        mcap::WriteOptions::new()
            .compression(None)
            .chunk_size(chunk_size)
            .use_chunks(chunk_size.is_some()),
    );
    let channels: Vec<u16> = ["/a", "/b", "/c"]
        .iter()
        .map(|t| w.channel(t, "std_msgs/msg/Int32", "int32 data"))
        .collect();
    for (i, &(c, t)) in msgs.iter().enumerate() {
        let mut payload = vec![0, 1, 0, 0];
        payload.extend_from_slice(&(i as i32).to_le_bytes());
        w.message_published(channels[c], t as i64, t as i64 + 7, &payload);
    }
    w.into_bytes()
}

/// Three topics at different rates; log times jump back between `blocks` (chunks overlap).
fn messages(n: usize, blocks: usize) -> Vec<(usize, u64)> {
    let mut v = Vec::new();
    let per = n / blocks;
    for b in 0..blocks {
        for i in 0..per {
            let c = if i % 5 == 0 { 2 } else { i % 2 };
            // Equal log times across blocks and topics: stability matters.
            let t = 1_000 + (i as u64 / 2) * 10 + if blocks > 1 { (b as u64 % 2) * 5 } else { 0 };
            v.push((c, t));
        }
    }
    v
}

fn save(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Asserts the column scan of `path` equals the plain scan regrouped by topic; returns the
/// number of messages seen.
fn check(path: &Path) -> usize {
    let bag = Bag::open(path).unwrap();
    let all = bag.all_topics();
    let f = |m: &bagscope_bag::RawMessage<'_>| {
        [
            m.sequence as i64,
            m.publish_time_ns.unwrap_or(-1) + m.data.len() as i64,
        ]
    };
    let (cols, col_warnings) = bag.scan_columns(&all, f);
    let scan = bag.scan(&all, f);
    let mut want: Vec<Columns<2>> = (0..bag.topics.len()).map(|_| Columns::default()).collect();
    for it in &scan.items {
        let c = &mut want[it.topic];
        c.log_time_ns.push(it.log_time_ns);
        c.values[0].push(it.value[0]);
        c.values[1].push(it.value[1]);
    }
    assert_eq!(cols, want, "{}", path.display());
    let mut scan_warnings = scan.warnings.clone();
    scan_warnings.sort();
    scan_warnings.dedup();
    assert_eq!(col_warnings, scan_warnings, "{}", path.display());
    scan.items.len()
}

/// Offsets of the message index records that follow the first chunk.
fn first_chunk_indexes(bytes: &[u8]) -> Vec<usize> {
    let mut pos = 8;
    let mut seen_chunk = false;
    let mut out = Vec::new();
    while pos + 9 <= bytes.len() {
        let op = bytes[pos];
        let len = u64::from_le_bytes(bytes[pos + 1..pos + 9].try_into().unwrap()) as usize;
        match op {
            0x06 if seen_chunk => break,
            0x06 => seen_chunk = true,
            0x07 if seen_chunk => out.push(pos + 9),
            _ => {}
        }
        pos += 9 + len;
    }
    out
}

/// Offset of the first message record inside the first (uncompressed) chunk.
fn first_chunk_records(bytes: &[u8]) -> usize {
    let mut pos = 8;
    while bytes[pos] != 0x06 {
        pos += 9 + u64::from_le_bytes(bytes[pos + 1..pos + 9].try_into().unwrap()) as usize;
    }
    // start, end, uncompressed size (8 each), crc (4), compression (string), records length.
    let body = pos + 9;
    let clen = u32::from_le_bytes(bytes[body + 28..body + 32].try_into().unwrap()) as usize;
    let mut p = body + 32 + clen + 8;
    // Schemas and channels come first in the chunk.
    while bytes[p] != 0x05 {
        p += 9 + u64::from_le_bytes(bytes[p + 1..p + 9].try_into().unwrap()) as usize;
    }
    p
}

#[test]
fn columns_equal_the_plain_scan() {
    let tmp = tempdir("ok");
    let dir = tmp.path();
    // In order; overlapping chunks (re-sorted); loose messages only (no indexes at all).
    for (name, msgs, chunk) in [
        ("ordered.mcap", messages(6000, 1), Some(4096)),
        ("overlap.mcap", messages(6000, 4), Some(4096)),
        ("loose.mcap", messages(600, 2), None),
    ] {
        let n = check(&save(dir, name, &write_mcap(&msgs, chunk)));
        assert_eq!(n, msgs.len(), "{name}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn wrong_or_missing_index_counts_change_nothing() {
    let tmp = tempdir("bad");
    let dir = tmp.path();
    let msgs = messages(6000, 1);
    let good = write_mcap(&msgs, Some(4096));

    // Channel ids of the first chunk's indexes swapped: one topic is under-counted (the scan
    // must start over without the indexes), another over-counted (slots left part empty).
    let ix = first_chunk_indexes(&good);
    assert!(ix.len() >= 2, "first chunk has {} indexes", ix.len());
    let mut swapped = good.clone();
    let (a, b) = (ix[0], ix[1]);
    let (ca, cb) = ([good[a], good[a + 1]], [good[b], good[b + 1]]);
    swapped[a..a + 2].copy_from_slice(&cb);
    swapped[b..b + 2].copy_from_slice(&ca);
    assert_eq!(check(&save(dir, "swapped.mcap", &swapped)), msgs.len());

    // One index names a channel that never appears in its chunk: every slot of that chunk
    // is mis-sized, as is the whole topic's array.
    let mut unknown = good.clone();
    unknown[a..a + 2].copy_from_slice(&9u16.to_le_bytes());
    assert_eq!(
        check(&save(dir, "unknown_channel.mcap", &unknown)),
        msgs.len()
    );

    // A message record in the middle of the first chunk made too long: the rest of that
    // chunk is lost (with a warning), its slots stay part empty and are closed up.
    let mut cut = good.clone();
    let mut pos = first_chunk_records(&cut);
    for _ in 0..10 {
        let len = u64::from_le_bytes(cut[pos + 1..pos + 9].try_into().unwrap()) as usize;
        pos += 9 + len;
    }
    cut[pos + 1..pos + 9].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let n = check(&save(dir, "cut_chunk.mcap", &cut));
    assert!(n < msgs.len() && n >= 10, "{n}");

    // The file cut off in the middle: the last chunk is partial (no trusted index), the
    // complete ones before it have theirs.
    let truncated = &good[..good.len() * 2 / 3];
    let n = check(&save(dir, "truncated.mcap", truncated));
    assert!(n > 0 && n < msgs.len(), "{n}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `scan_in_order` hands out the plain scan's items in the same order (log time, then file
/// order) with any step size, or says the order broke; returns whether it finished in order.
fn check_in_order(bag: &Bag) -> bool {
    let all = bag.all_topics();
    let f = |m: &bagscope_bag::RawMessage<'_>| (m.sequence, m.data.len());
    let scan = bag.scan(&all, f);
    let want: Vec<(i64, usize, (u32, usize))> = scan
        .items
        .iter()
        .map(|it| (it.log_time_ns, it.topic, it.value))
        .collect();
    let mut in_order = None;
    for step in [1, 5000, u64::MAX] {
        let mut got = Vec::new();
        let r = bag.scan_in_order_by_steps(&all, f, step, None, &mut |it| {
            got.push((it.log_time_ns, it.topic, it.value))
        });
        let ok = r.is_ok();
        match r {
            Ok(w) => {
                let mut sw = scan.warnings.clone();
                sw.sort();
                sw.dedup();
                assert_eq!(w, sw, "{} step {step}", bag.path.display());
                assert_eq!(got, want, "{} step {step}", bag.path.display());
            }
            Err(_) => assert!(got.len() <= want.len()),
        }
        assert_eq!(*in_order.get_or_insert(ok), ok, "{}", bag.path.display());
    }
    in_order.unwrap_or(true)
}

#[test]
fn streamed_scan_gives_the_plain_scans_order() {
    let tmp = tempdir("order");
    let dir = tmp.path();
    for (name, msgs, chunk) in [
        ("ordered.mcap", messages(6000, 1), Some(4096)),
        ("overlap.mcap", messages(6000, 4), Some(4096)),
        ("loose.mcap", messages(600, 2), None),
    ] {
        let p = save(dir, name, &write_mcap(&msgs, chunk));
        assert!(check_in_order(&Bag::open(&p).unwrap()), "{name}");
    }
    // Two files recorded at the same time, read as one bag: the second's chunks start
    // before the first's end.
    let both = dir.join("both");
    std::fs::create_dir_all(&both).unwrap();
    save(&both, "a.mcap", &write_mcap(&messages(3000, 1), Some(2048)));
    let mut later = messages(3000, 1);
    later.iter_mut().for_each(|m| m.1 += 3);
    save(&both, "b.mcap", &write_mcap(&later, Some(2048)));
    assert!(check_in_order(&Bag::open(&both).unwrap()));

    // A chunk header declaring a later start than its first message: the streamed scan
    // cannot know, and says so instead of handing out messages out of order.
    let mut bytes = write_mcap(&messages(6000, 1), Some(4096));
    let mut pos = 8;
    let mut chunks = 0;
    while pos + 9 <= bytes.len() {
        let len = u64::from_le_bytes(bytes[pos + 1..pos + 9].try_into().unwrap()) as usize;
        if bytes[pos] == 0x06 {
            chunks += 1;
            if chunks == 3 {
                let start = u64::from_le_bytes(bytes[pos + 9..pos + 17].try_into().unwrap());
                bytes[pos + 9..pos + 17].copy_from_slice(&(start + 25).to_le_bytes());
            }
        }
        pos += 9 + len;
    }
    let p = save(dir, "lying.mcap", &bytes);
    assert!(!check_in_order(&Bag::open(&p).unwrap()));
    let _ = std::fs::remove_dir_all(dir);
}

/// Called from tasks of the thread pool (`batch`'s workers) that keep every thread of it
/// busy, the streamed scan reads its chunks on the task's own thread in turn with handing
/// them out: a reader thread of its own would wait for the pool, which waits for it.
#[test]
fn streamed_scans_on_every_thread_of_the_pool() {
    let tmp = tempdir("pool");
    let p = save(
        tmp.path(),
        "overlap.mcap",
        &write_mcap(&messages(6000, 4), Some(4096)),
    );
    let bag = Bag::open(&p).unwrap();
    let ok = std::sync::atomic::AtomicUsize::new(0);
    rayon::scope(|s| {
        for _ in 0..rayon::current_num_threads() {
            s.spawn(|_| {
                if check_in_order(&bag) {
                    ok.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(ok.into_inner(), rayon::current_num_threads());
    let _ = std::fs::remove_dir_all(tmp.path());
}
