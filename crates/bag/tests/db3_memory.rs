//! `.db3` reads stay bounded in memory: a payload of any declared size (here a generated
//! `zeroblob(5e8)` column in a 16 kB file) is skipped with a warning, not allocated; and a
//! `messages` table without an index on `timestamp` is sorted without holding its payloads.
//! One test in this file: the peak resident size it asserts is the process's.

use std::path::Path;

use bagscope_bag::Bag;
use rusqlite::Connection;

fn peak_rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn metadata(dir: &Path, file: &str) {
    std::fs::write(
        dir.join("metadata.yaml"),
        format!("rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  relative_file_paths:\n    - {file}\n"),
    )
    .unwrap();
}

const TOPICS: &str = "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
     INSERT INTO topics VALUES (1, '/a', 'std_msgs/msg/String', 'cdr', '');
     INSERT INTO topics VALUES (2, '/b', 'std_msgs/msg/String', 'cdr', '');";

#[test]
fn huge_blobs_and_unindexed_tables_stay_bounded() {
    let tmp = tempfile::tempdir().unwrap();

    // 1. A generated 500 MB zero blob per row, no index.
    let d = tmp.path().join("zero");
    std::fs::create_dir(&d).unwrap();
    let p = d.join("z.db3");
    let c = Connection::open(&p).unwrap();
    c.execute_batch(&format!(
        "{TOPICS}
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL,
             data BLOB GENERATED ALWAYS AS (zeroblob(500000000)) VIRTUAL);
         INSERT INTO messages(topic_id, timestamp) VALUES (1, 30), (2, 10), (1, 20), (2, 40);"
    ))
    .unwrap();
    drop(c);
    assert!(std::fs::metadata(&p).unwrap().len() < 64 << 10);
    metadata(&d, "z.db3");
    let b = Bag::open(&d).unwrap();
    assert_eq!(b.db3_files[0].message_count(), 4);
    let s = b.scan(&b.all_topics(), |m| m.data.len());
    assert!(s.items.is_empty());
    let w: Vec<_> = s
        .warnings
        .iter()
        .filter(|w| w.code == "message_too_large")
        .collect();
    assert_eq!(w.len(), 1, "{:?}", s.warnings);
    assert!(w[0].data_loss && w[0].message.starts_with("4 message(s)"));
    // Log times alone (no payload) are all there.
    let (t, _) = b.topic_log_times(&b.all_topics());
    assert_eq!(t[0], vec![20, 30]);
    assert_eq!(t[1], vec![10, 40]);

    // 1b. The same with an index on timestamp (payloads read in the ordered query itself).
    let d = tmp.path().join("zero_indexed");
    std::fs::create_dir(&d).unwrap();
    let p = d.join("z.db3");
    let c = Connection::open(&p).unwrap();
    c.execute_batch(&format!(
        "{TOPICS}
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL,
             data BLOB GENERATED ALWAYS AS (CASE WHEN timestamp = 10 THEN x'00010000' ELSE zeroblob(500000000) END) VIRTUAL);
         CREATE INDEX timestamp_idx ON messages (timestamp ASC);
         INSERT INTO messages(topic_id, timestamp) VALUES (1, 30), (2, 10), (1, 20), (2, 40);"
    ))
    .unwrap();
    drop(c);
    metadata(&d, "z.db3");
    let b = Bag::open(&d).unwrap();
    for sel in [b.all_topics(), vec![false, true]] {
        let s = b.scan(&sel, |m| (m.log_time_ns, m.data.to_vec()));
        let v: Vec<_> = s.items.iter().map(|i| i.value.clone()).collect();
        assert_eq!(v, vec![(10, vec![0, 1, 0, 0])]);
        let w: Vec<_> = s
            .warnings
            .iter()
            .filter(|w| w.code == "message_too_large")
            .collect();
        assert_eq!(w.len(), 1, "{:?}", s.warnings);
    }

    // 2. No index on timestamp, rows inserted in reverse time order, 1 MiB payloads
    //    (192 MiB in all): read in timestamp order without holding them.
    let d = tmp.path().join("noindex");
    std::fs::create_dir(&d).unwrap();
    let p = d.join("n.db3");
    let c = Connection::open(&p).unwrap();
    c.execute_batch(&format!(
        "{TOPICS}
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, data BLOB NOT NULL);"
    ))
    .unwrap();
    let n: i64 = 192;
    {
        let tx = c.unchecked_transaction().unwrap();
        let mut payload = vec![0u8; 1 << 20];
        for i in 0..n {
            payload[0] = i as u8;
            tx.execute(
                "INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)",
                rusqlite::params![1 + i % 2, 10_000 - i, payload],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    drop(c);
    metadata(&d, "n.db3");
    let b = Bag::open(&d).unwrap();
    let mut last = i64::MIN;
    let mut seen = 0i64;
    let w = b.visit(&b.all_topics(), |m| {
        assert!(m.log_time_ns > last, "out of order");
        last = m.log_time_ns;
        assert_eq!(m.data.len(), 1 << 20);
        assert_eq!(m.data[0], (10_000 - m.log_time_ns) as u8);
        seen += 1;
    });
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(seen, n);

    let peak = peak_rss_bytes();
    eprintln!("peak RSS {} MiB", peak >> 20);
    assert!(
        peak < 120 << 20,
        "peak resident memory {} MiB: a payload or the sort was held in memory",
        peak >> 20
    );
}
