//! Arbitrary bytes as an `.mcap` file: open it (record walk, summary, channel discovery), then
//! read log times from the indexes, scan every topic reading each message's stamp (and fully
//! decoding a prefix of the messages), scan into columns, stream it with `visit`, answer `info --fast` (index
//! headers, and the summary-only open). Must never panic, hang or
//! allocate from a size field.
//!
//! `Bag::open` takes a path, so each input is written to a per-process file under /dev/shm
//! (tmpfs: no disk I/O).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use bagscope_bag::{Bag, OpenOptions};
use bagscope_msg::{decode, schema_for_channel, MessageSchema, StampLocator};
use libfuzzer_sys::fuzz_target;

fn scratch() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("bagscope-fuzz-{}.mcap", std::process::id()))
    })
}

fn pool() -> &'static rayon::ThreadPool {
    static P: OnceLock<rayon::ThreadPool> = OnceLock::new();
    P.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("rayon pool")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    if std::fs::write(path, data).is_err() {
        return;
    }
    pool().install(|| {
        let Ok(bag) = Bag::open(path) else {
            return;
        };
        let _ = bag.open_warnings();
        let all = bag.all_topics();
        let _ = bag.log_times(&all);
        let schemas: Vec<(Option<MessageSchema>, StampLocator)> = bag
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
            let stamp = loc.read_stamp_ns(m.data).ok().flatten();
            let _ = loc.read_frame_id(m.data);
            if m.sequence % 8 == 0 {
                if let Some(s) = schema {
                    let _ = decode(s, m.data);
                }
            }
            stamp
        });
        let n = scan.items.len();
        let mut seen = 0usize;
        let _ = bag.visit(&all, |_| seen += 1);
        // The sequential walk and the parallel scan read the same messages.
        assert_eq!(seen, n, "visit and scan disagree on the message count");
        // The column scan (index-sized slices) finds exactly the plain scan's messages.
        let (cols, _) = bag.scan_columns(&all, |m| [m.data.len() as i64]);
        let mut per_topic = vec![0usize; bag.topics.len()];
        for it in &scan.items {
            per_topic[it.topic] += 1;
        }
        let col_counts: Vec<usize> = cols.iter().map(|c| c.len()).collect();
        assert_eq!(col_counts, per_topic, "scan_columns and scan disagree");
        // info --fast: index-header answers from the walked file, and the summary-only open.
        let _ = bag.topic_spans(&all);
        if let Ok(b) = Bag::open_with(
            path,
            OpenOptions {
                trust_summary: true,
                ..Default::default()
            },
        ) {
            let _ = b.topic_spans(&b.all_topics());
            let _ = b.files.iter().map(|f| f.chunk_count()).sum::<usize>();
        }
    });
    let _ = std::fs::remove_file(path);
});
