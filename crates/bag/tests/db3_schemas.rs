//! sqlite3 bags across rosbag2 schema versions and with odd rows, built here with rusqlite.

use std::path::Path;

use bagscope_bag::Bag;
use rusqlite::Connection;

/// A fresh temp folder, removed when dropped.
fn tempdir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("bagscope-bag-{tag}-"))
        .tempdir()
        .unwrap()
}

/// std_msgs/String CDR payload.
fn string_msg(s: &str) -> Vec<u8> {
    let mut v = vec![0, 1, 0, 0];
    v.extend_from_slice(&((s.len() + 1) as u32).to_le_bytes());
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

fn create(path: &Path, topics_sql: &str, extra: &str) -> Connection {
    let c = Connection::open(path).unwrap();
    c.execute_batch(&format!(
        "{topics_sql};
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         CREATE INDEX timestamp_idx ON messages (timestamp ASC);
         {extra}"
    ))
    .unwrap();
    c
}

#[test]
fn oldest_schema_without_qos_column() {
    let tmp = tempdir("v1");
    let d = tmp.path();
    let p = d.join("old.db3");
    let c = create(
        &p,
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL)",
        "",
    );
    c.execute(
        "INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr')",
        [],
    )
    .unwrap();
    // Inserted out of order: the scan must come out in timestamp order.
    for (i, ts) in [30i64, 10, 20].iter().enumerate() {
        c.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?1, ?2)",
            rusqlite::params![ts, string_msg(&format!("m{i}"))],
        )
        .unwrap();
    }
    drop(c);
    let bag = Bag::open(&p).unwrap();
    assert_eq!(bag.storage(), "sqlite3");
    assert_eq!(bag.topics.len(), 1);
    assert_eq!(bag.topics[0].offered_qos_profiles, None);
    // No embedded definition: empty schema data, so the built-in std_msgs/String is used.
    assert!(bag.topics[0].schema_data.is_empty());
    let s = bag.scan(&bag.all_topics(), |m| (m.publish_time_ns, m.data.to_vec()));
    let times: Vec<i64> = s.items.iter().map(|i| i.log_time_ns).collect();
    assert_eq!(times, vec![10, 20, 30]);
    assert!(s.items.iter().all(|i| i.value.0.is_none()));
    assert_eq!(s.items[0].value.1, string_msg("m1"));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn orphans_bad_rows_and_topic_filter() {
    let tmp = tempdir("odd");
    let d = tmp.path();
    let p = d.join("odd.db3");
    let c = create(
        &p,
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL)",
        "",
    );
    c.execute_batch(
        "INSERT INTO topics VALUES (1, '/a', 'std_msgs/msg/String', 'cdr', '- history: 1');
         INSERT INTO topics VALUES (2, '/b', 'my_pkg/msg/Unknown', 'cdr', '');",
    )
    .unwrap();
    for (t, ts) in [(1, 5i64), (2, 6), (1, 7), (9, 8), (2, 9)] {
        c.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, x'00010000')",
            rusqlite::params![t, ts],
        )
        .unwrap();
    }
    // SQLite's flexible typing lets a broken writer store text where a time belongs.
    c.execute(
        "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, 'soon', x'00')",
        [],
    )
    .unwrap();
    drop(c);
    let bag = Bag::open(&p).unwrap();
    let w = bag.open_warnings();
    assert!(
        w.iter().any(|w| w.code == "unknown_channel" && w.data_loss),
        "{w:?}"
    );
    assert_eq!(
        bag.topics[0].offered_qos_profiles.as_deref(),
        Some("- history: 1")
    );
    let s = bag.log_times(&bag.all_topics());
    assert_eq!(s.items.len(), 4, "orphans and bad rows are skipped");
    assert!(
        s.warnings.iter().any(|w| w.code == "corrupt_message"),
        "{:?}",
        s.warnings
    );
    let only_b = bag.select(&["/b"]).unwrap();
    let s = bag.scan(&only_b, |m| m.topic);
    assert_eq!(
        s.items.iter().map(|i| i.log_time_ns).collect::<Vec<_>>(),
        vec![6, 9]
    );
    // Visiting streams the same messages in the same order.
    let mut seen = Vec::new();
    let _ = bag.visit(&bag.all_topics(), |m| seen.push((m.log_time_ns, m.topic)));
    assert_eq!(seen.len(), 4);
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn iron_tables_give_embedded_schemas_and_message_compression_is_undone() {
    let tmp = tempdir("iron");
    let d = tmp.path();
    let bagdir = d.join("bag");
    std::fs::create_dir_all(&bagdir).unwrap();
    let p = bagdir.join("bag_0.db3");
    let c = create(
        &p,
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL, type_description_hash TEXT NOT NULL)",
        "CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
         CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
         CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL, encoding TEXT NOT NULL, encoded_message_definition TEXT NOT NULL, type_description_hash TEXT NOT NULL);
         INSERT INTO schema VALUES (4, 'jazzy');
         INSERT INTO metadata VALUES (1, 9, 'version: 9');
         INSERT INTO message_definitions VALUES (1, 'my_pkg/msg/Thing', 'ros2msg', 'int32 x', 'RIHS01_ab');
         INSERT INTO topics VALUES (1, '/thing', 'my_pkg/msg/Thing', 'cdr', '', 'RIHS01_ab');",
    );
    let payload = [0u8, 1, 0, 0, 7, 0, 0, 0];
    let z = zstd::bulk::compress(&payload, 3).unwrap();
    c.execute(
        "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, 100, ?1)",
        [z],
    )
    .unwrap();
    drop(c);
    std::fs::write(
        bagdir.join("metadata.yaml"),
        "rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: sqlite3\n  relative_file_paths: [bag_0.db3]\n  compression_format: zstd\n  compression_mode: MESSAGE\n  message_count: 1\n  topics_with_message_count:\n    - topic_metadata: {name: /thing, type: my_pkg/msg/Thing, serialization_format: cdr}\n      message_count: 1\n",
    )
    .unwrap();
    let bag = Bag::open(&bagdir).unwrap();
    assert!(bag.open_warnings().is_empty(), "{:?}", bag.open_warnings());
    let f = &bag.db3_files[0];
    assert_eq!(f.schema_version, Some(4));
    assert_eq!(f.ros_distro.as_deref(), Some("jazzy"));
    assert_eq!(f.metadata_text.as_deref(), Some("version: 9"));
    let t = &bag.topics[0];
    assert_eq!(t.schema_encoding, "ros2msg");
    assert_eq!(&*t.schema_data, b"int32 x");
    assert_eq!(t.type_description_hash.as_deref(), Some("RIHS01_ab"));
    assert_eq!(t.metadata_count, Some(1));
    let s = bag.scan(&bag.all_topics(), |m| m.data.to_vec());
    assert_eq!(s.items[0].value, payload);
    let _ = std::fs::remove_dir_all(d);
}

/// A bare `.db3` (no metadata.yaml) says in its own `metadata` table (rosbag2 from Iron on)
/// whether its payloads are zstd frames; a payload that only starts like one is data, with a
/// hint that the bag does not declare message compression.
#[test]
fn a_bare_db3_declares_message_compression_in_its_metadata_table() {
    let tmp = tempdir("db3-declared");
    let d = tmp.path();
    let payload = string_msg("hello");
    let z = zstd::bulk::compress(&payload, 3).unwrap();
    for declared in [true, false] {
        let p = d.join(format!("bag_{declared}.db3"));
        let meta = if declared {
            "version: 9\nstorage_identifier: sqlite3\ncompression_format: zstd\ncompression_mode: MESSAGE\n"
        } else {
            "version: 9\nstorage_identifier: sqlite3\ncompression_format: \"\"\ncompression_mode: \"\"\n"
        };
        let c = create(
            &p,
            "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL)",
            "CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL, metadata TEXT NOT NULL);
             INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr', '');",
        );
        c.execute("INSERT INTO metadata VALUES (1, 9, ?1)", [meta])
            .unwrap();
        c.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, 100, ?1)",
            [&z],
        )
        .unwrap();
        drop(c);
        let bag = Bag::open(&p).unwrap();
        assert_eq!(bag.message_compression, declared);
        let s = bag.scan(&bag.all_topics(), |m| m.data.to_vec());
        let codes: Vec<&str> = s.warnings.iter().map(|w| w.code.as_str()).collect();
        if declared {
            assert_eq!(s.items[0].value, payload);
            assert!(codes.is_empty(), "{:?}", s.warnings);
        } else {
            assert_eq!(s.items[0].value, z);
            assert_eq!(codes, ["unsupported_compression"]);
            assert!(!s.warnings[0].data_loss);
        }
    }
}

#[test]
fn unsupported_and_empty_inputs_are_errors() {
    let tmp = tempdir("err");
    let d = tmp.path();
    let p = d.join("empty.db3");
    std::fs::write(&p, b"").unwrap();
    assert!(Bag::open(&p).is_err());
    // An SQLite file that is not a rosbag2 database.
    let q = d.join("other.db3");
    let c = Connection::open(&q).unwrap();
    c.execute_batch("CREATE TABLE foo(x)").unwrap();
    drop(c);
    let e = Bag::open(&q).unwrap_err().to_string();
    assert!(e.contains("other.db3") && e.contains("topics"), "{e}");
    let _ = std::fs::remove_dir_all(d);
}
