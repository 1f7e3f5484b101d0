//! Opening rosbag2 folders whose metadata.yaml and files disagree, file- and
//! message-compressed bags, and hostile metadata (paths outside the folder, FIFOs).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bagscope_bag::{Bag, BagError};
use rusqlite::Connection;

use bagscope_testkit::tempdir;

/// `../shared/corpus/<rel>` from the repository root; `None` (with a note) when absent, a
/// panic under `CI`.
fn corpus(rel: &str) -> Option<PathBuf> {
    bagscope_testkit::shared_path("corpus", rel).map(|p| p.join(rel))
}

fn codes(b: &Bag) -> Vec<String> {
    b.open_warnings()
        .into_iter()
        .map(|w| w.code.to_string())
        .collect()
}

/// A Humble-style db3 with one std_msgs/String topic and `n` messages.
fn write_db3(path: &Path, n: i64) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL, timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         CREATE INDEX timestamp_idx ON messages (timestamp ASC);
         INSERT INTO topics VALUES (1, '/chatter', 'std_msgs/msg/String', 'cdr', '');",
    )
    .unwrap();
    for i in 0..n {
        c.execute(
            "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?1, ?2)",
            rusqlite::params![1_000 + i, vec![0u8, 1, 0, 0, 2, 0, 0, 0, b'x', 0]],
        )
        .unwrap();
    }
}

fn metadata(dir: &Path, storage: &str, files: &[&str], extra: &str) {
    let list: String = files.iter().map(|f| format!("    - {f}\n")).collect();
    std::fs::write(
        dir.join("metadata.yaml"),
        format!(
            "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: {storage}\n  relative_file_paths:\n{list}{extra}"
        ),
    )
    .unwrap();
}

fn count_messages(b: &Bag) -> usize {
    b.scan(&b.all_topics(), |_| ()).items.len()
}

/// Runs `f` on a thread and fails if it takes longer than a few seconds (a blocked open).
fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("blocked: the open did not return")
}

#[test]
fn renamed_single_file_is_read_in_its_place() {
    let Some(p) = corpus("ros2-more/kf_fadil_renamed") else {
        return;
    };
    let b = Bag::open(&p).unwrap();
    let w = b.open_warnings();
    let sub: Vec<_> = w.iter().filter(|w| w.code == "substituted_file").collect();
    assert_eq!(sub.len(), 1, "{w:?}");
    assert!(sub[0].message.contains("rosbag2_2026_01_30-15_32_05_0.db3"));
    assert!(sub[0].message.contains("my_bag.db3"));
    assert!(!sub[0].data_loss);
    assert!(!w.iter().any(|w| w.data_loss), "{w:?}");
    // The metadata's counts agree with the substituted file: no mismatch warning.
    assert!(!codes(&b).contains(&"metadata_count_mismatch".to_string()));
    assert_eq!(count_messages(&b), 3878);
}

#[test]
fn missing_listed_file_with_several_candidates_explains() {
    let tmp = tempdir("renamed2");
    let d = tmp.path();
    write_db3(&d.join("one.db3"), 2);
    write_db3(&d.join("two.db3"), 3);
    metadata(d, "sqlite3", &["gone_0.db3"], "");
    let e = Bag::open(d).unwrap_err();
    assert!(matches!(e, BagError::ListedFilesMissing { .. }), "{e}");
    let t = e.to_string();
    for needle in [
        "gone_0.db3",
        "one.db3",
        "two.db3",
        "not in the folder",
        "fix relative_file_paths",
    ] {
        assert!(t.contains(needle), "{needle} not in: {t}");
    }
    // A split set with one listed file missing and another bag file unlisted: not guessed.
    let tmp = tempdir("renamed3");
    let d = tmp.path();
    write_db3(&d.join("b_0.db3"), 2);
    write_db3(&d.join("other.db3"), 3);
    metadata(d, "sqlite3", &["b_0.db3", "b_1.db3"], "");
    let b = Bag::open(d).unwrap();
    let c = codes(&b);
    assert!(c.contains(&"missing_file".into()) && c.contains(&"unlisted_file".into()));
    assert!(!c.contains(&"substituted_file".into()));
    assert_eq!(count_messages(&b), 2);
}

#[test]
fn substitution_needs_the_same_storage_kind() {
    let tmp = tempdir("kind");
    let d = tmp.path();
    write_db3(&d.join("renamed.db3"), 2);
    metadata(d, "mcap", &["x_0.mcap"], "");
    let e = Bag::open(d).unwrap_err();
    assert!(e.to_string().contains("renamed.db3"), "{e}");
}

#[test]
fn file_compressed_db3_is_read_and_the_temporary_file_removed() {
    let tmp = tempdir("filezstd");
    let d = tmp.path();
    let plain = tmp.path().join("plain.db3");
    write_db3(&plain, 5);
    let z = zstd::encode_all(&std::fs::read(&plain).unwrap()[..], 3).unwrap();
    std::fs::remove_file(&plain).unwrap();
    std::fs::write(d.join("b_0.db3.zstd"), z).unwrap();
    metadata(
        d,
        "sqlite3",
        &["b_0.db3.zstd"],
        "  compression_format: zstd\n  compression_mode: FILE\n",
    );
    let before = bagscope_temp_files();
    let b = Bag::open(d).unwrap();
    assert_eq!(b.storage(), "sqlite3");
    assert!(!b.open_warnings().iter().any(|w| w.data_loss));
    assert_eq!(count_messages(&b), 5);
    // Warnings and errors name the bag's own file, not the temporary copy.
    assert!(b.db3_files[0].path.ends_with("b_0.db3.zstd"));
    drop(b);
    let after = bagscope_temp_files();
    assert!(
        after.is_subset(&before),
        "temporary files left behind: {:?}",
        after.difference(&before).collect::<Vec<_>>()
    );
}

fn bagscope_temp_files() -> std::collections::BTreeSet<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("bagscope-zstd-")
        })
        .collect()
}

#[test]
fn rosbag2_file_compression_corpus_bag() {
    let Some(p) = corpus("ros2-more/rosbag2_file_compression") else {
        return;
    };
    let b = Bag::open(&p).unwrap();
    assert_eq!(b.db3_files.len(), 4);
    assert!(
        !b.open_warnings().iter().any(|w| w.data_loss),
        "{:?}",
        b.open_warnings()
    );
    assert_eq!(count_messages(&b), 775);
}

#[test]
fn rosbag2_message_compression_corpus_bag() {
    let Some(p) = corpus("ros2-more/rosbag2_message_compression") else {
        return;
    };
    let b = Bag::open(&p).unwrap();
    assert!(b.message_compression);
    let t = b.select(&["/topic"]).unwrap();
    let s = b.scan(&t, |m| m.data.to_vec());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(!s.items.is_empty());
    // Decompressed: each payload is a plain CDR std_msgs/String (little-endian header).
    for it in &s.items {
        assert_eq!(&it.value[..4], &[0, 1, 0, 0]);
    }
}

#[test]
fn message_compression_bomb_is_bounded() {
    let tmp = tempdir("msgbomb");
    let d = tmp.path();
    let p = d.join("b_0.db3");
    write_db3(&p, 1);
    // One payload: a zstd frame of 600 MB of zeros (a few kB compressed).
    let bomb = {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..600 {
            std::io::Write::write_all(&mut e, &zeros).unwrap();
        }
        e.finish().unwrap()
    };
    let ok = zstd::encode_all(&[0u8, 1, 0, 0, 2, 0, 0, 0, b'y', 0][..], 3).unwrap();
    let c = Connection::open(&p).unwrap();
    c.execute("UPDATE messages SET data = ?1", [&ok]).unwrap();
    c.execute(
        "INSERT INTO messages(topic_id, timestamp, data) VALUES (1, 5000, ?1)",
        [&bomb],
    )
    .unwrap();
    drop(c);
    metadata(
        d,
        "sqlite3",
        &["b_0.db3"],
        "  compression_format: zstd\n  compression_mode: MESSAGE\n",
    );
    let b = Bag::open(d).unwrap();
    let s = b.scan(&b.all_topics(), |m| m.data.len());
    assert_eq!(s.items.len(), 1);
    assert_eq!(s.items[0].value, 10);
    let w: Vec<_> = s
        .warnings
        .iter()
        .filter(|w| w.code == "message_too_large")
        .collect();
    assert_eq!(w.len(), 1, "{:?}", s.warnings);
    assert!(w[0].data_loss);
}

#[test]
fn metadata_paths_outside_the_folder_are_refused_unopened() {
    let tmp = tempdir("outside");
    let root = tmp.path();
    let bag = root.join("bag");
    std::fs::create_dir(&bag).unwrap();
    write_db3(&root.join("secret.db3"), 4);
    write_db3(&bag.join("own.db3"), 2);
    let abs = root.join("secret.db3").display().to_string();
    metadata(&bag, "sqlite3", &["../secret.db3", &abs, "own.db3"], "");
    let b = Bag::open(&bag).unwrap();
    assert_eq!(count_messages(&b), 2, "only the bag's own file is read");
    let out: Vec<_> = b
        .open_warnings()
        .into_iter()
        .filter(|w| w.code == "path_outside_bag")
        .collect();
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out.iter().all(|w| w.data_loss));
    // Whether the outside path exists does not change what is said.
    metadata(&bag, "sqlite3", &["../secret.db3"], "");
    let e1 = Bag::open(&bag).unwrap_err().to_string();
    std::fs::remove_file(root.join("secret.db3")).unwrap();
    let e2 = Bag::open(&bag).unwrap_err().to_string();
    assert_eq!(e1, e2);
    assert!(e1.contains("outside the bag folder"), "{e1}");
    // `x/../y` inside the folder is fine.
    std::fs::create_dir(bag.join("sub")).unwrap();
    metadata(&bag, "sqlite3", &["sub/../own.db3"], "");
    let b = Bag::open(&bag).unwrap();
    assert_eq!(count_messages(&b), 2);
}

fn mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn fifos_are_never_opened() {
    let tmp = tempdir("fifo");
    let d = tmp.path().to_path_buf();
    write_db3(&d.join("own_0.db3"), 2);
    mkfifo(&d.join("own_1.db3"));
    metadata(&d, "sqlite3", &["own_0.db3", "own_1.db3"], "");
    let dd = d.clone();
    let b = within_seconds(move || Bag::open(&dd).map(|b| (count_messages(&b), codes(&b))));
    let (n, c) = b.unwrap();
    assert_eq!(n, 2);
    assert!(c.contains(&"not_regular_file".into()), "{c:?}");
    // A FIFO given as the bag itself, or as metadata.yaml.
    let f = d.join("own_1.db3");
    let e = within_seconds(move || Bag::open(&f).map(|_| ()));
    assert!(matches!(e, Err(BagError::NotRegularFile { .. })), "{e:?}");
    let tmp2 = tempdir("fifo2");
    let d2 = tmp2.path().to_path_buf();
    mkfifo(&d2.join("metadata.yaml"));
    let e = within_seconds(move || Bag::open(&d2).map(|_| ()));
    assert!(matches!(e, Err(BagError::NotRegularFile { .. })), "{e:?}");
    // A folder without metadata.yaml holding a FIFO named like a bag file.
    let tmp3 = tempdir("fifo3");
    let d3 = tmp3.path().to_path_buf();
    mkfifo(&d3.join("a.mcap"));
    let e = within_seconds(move || Bag::open(&d3).map(|_| ()));
    assert!(matches!(e, Err(BagError::NoFiles { .. })), "{e:?}");
}

/// An MCAP file of `n` std_msgs/String messages on `/chatter`, uncompressed chunks.
fn mcap_bytes(n: u64) -> Vec<u8> {
    let mut w = bagscope_testkit::BagWriter::in_memory(
        mcap::WriteOptions::new()
            .compression(None)
            .chunk_size(Some(4096)),
    );
    let c = w.channel("/chatter", "std_msgs/msg/String", "string data");
    for i in 0..n as i64 {
        w.message(c, 1_000 + i, &[0, 1, 0, 0, 2, 0, 0, 0, b'x', 0]);
    }
    w.into_bytes()
}

#[test]
fn file_compressed_mcap_whole_and_cut() {
    let tmp = tempdir("mcapzstd");
    let d = tmp.path();
    let z = zstd::encode_all(&mcap_bytes(20_000)[..], 3).unwrap();
    std::fs::write(d.join("b_0.mcap.zstd"), &z).unwrap();
    metadata(
        d,
        "mcap",
        &["b_0.mcap.zstd"],
        "  compression_format: zstd\n  compression_mode: FILE\n",
    );
    let b = Bag::open(d).unwrap();
    assert!(!b.open_warnings().iter().any(|w| w.data_loss));
    assert_eq!(count_messages(&b), 20_000);
    assert!(b.files[0].path.ends_with("b_0.mcap.zstd"));
    drop(b);
    // Cut in the middle of the zstd stream: what was decompressed is read, with a warning.
    std::fs::write(d.join("b_0.mcap.zstd"), &z[..z.len() / 2]).unwrap();
    let b = Bag::open(d).unwrap();
    let w = b.open_warnings();
    assert!(
        w.iter().any(|w| w.code == "truncated"
            && w.data_loss
            && w.file
                .as_deref()
                .is_some_and(|f| f.ends_with("b_0.mcap.zstd"))),
        "{w:?}"
    );
    let n = count_messages(&b);
    assert!(n > 0 && n < 20_000, "{n}");
}

#[test]
fn rosbag2_empty_file_compressed_corpus_bag() {
    let Some(p) = corpus("ros2-more/rosbag2_compressed_bag_empty") else {
        return;
    };
    let b = Bag::open(&p).unwrap();
    assert_eq!(b.storage(), "sqlite3");
    assert!(
        !b.open_warnings().iter().any(|w| w.data_loss),
        "{:?}",
        b.open_warnings()
    );
    assert_eq!(count_messages(&b), 0);
}
