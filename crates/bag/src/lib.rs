//! Opening ROS 2 bags: rosbag2 folders (with or without `metadata.yaml`, split files), bare
//! `.mcap` files, compressed chunks (zstd, lz4), rosbag2 per-message and per-file compression, and
//! files cut off by a crash. Reading is memory-mapped and parallel across chunks; damage is
//! reported as structured [`Warning`]s and everything still readable is recovered.
//!
//! rosbag2's sqlite3 storage (`.db3`, Humble and older) is read through the same interface
//! (see [`db3`]): read-only, streamed in timestamp order, with no publish time.
//!
//! # In the workspace
//!
//! Open rosbag2 folders / `.mcap` files / split sets; mmap; walk records; parallel zero-copy chunk
//! scan; truncation and corruption recovery with structured warnings; a summary-only open for `info
//! --fast` (no scans on such a bag); rosbag2 sqlite3 (`.db3`, Humble and older) read-only and
//! immutable, streamed in timestamp order (no publish time: `RawMessage::publish_time_ns` is
//! `Option`); sequential `visit` for writers; `scan_in_order`: the parallel scan's items in its
//! order (log time, then file order) handed out as soon as no chunk left to read can hold an
//! earlier message, by the start times chunk headers declare (bounded memory: two steps of
//! ~16 MiB of chunks; a chunk that breaks its declared start ends it with `ScanOrderBroken` and
//! the caller reads with `scan`), what `observe` and the timing batches read; writing rosbag2-compatible MCAP
//! (`write::Rosbag2Writer`: `ros2` profile, zstd chunks, `offered_qos_profiles`, written as
//! `PATH.partial` and renamed when complete; refuses an output or partial file that is one of the
//! bag's files by any name, `Bag::input_paths`) for `convert` and `play --out`; `outfile`: every
//! writer's temporary files (created exclusively beside the output, a leftover of a killed run
//! replaced, links not followed, removed on failure and on Ctrl-C or SIGTERM by `remove_live`, as
//! are the decompressed copies of `*.zstd` bag files, `LiveTempPath`; refusal of outputs that are
//! the bag's files; errors with their OS cause); `write::check_output_name`: an output named as
//! another format (`*.mcap.zstd`, `*.zst`, `*.db3`) refused; `outfile::check_output_file` /
//! `check_output_dir`: the one rule for what an output may be (a regular file or folder, or a new
//! path; never a device, FIFO or socket), checked by every writer before it creates anything and by
//! `persist` before the rename; `yaml_keys`: a key given twice in one mapping of a hand-written
//! YAML file refused with the key and its line; `yaml`: the one guard every YAML text passes before
//! it is parsed (`metadata.yaml`, QoS texts, `play`'s override file, `observe`'s contract, the
//! metadata rosbag2 writes into its files): nesting measured by a linear scan that follows
//! libyaml's token rules, refused beyond 64 levels or 64 MiB; `select`: which topics a command
//! works on, by name and by regular expression (`TopicFilter`, one rule for `play`, `convert`,
//! `echo`); `qos`: recorded `offered_qos_profiles` parsed (one parser for `info` and `play`);
//! payload lengths with log times from the message index offsets, no chunk decompressed
//! (`Bag::topic_log_times_sizes`, for `info`'s sizes); bags in object storage (`remote.rs`: an
//! object opened from its summary, folders sixteen files at a time, scans fetching their chunks
//! in batches through `bagscope-source`'s `SparseImage`; `.db3` and `*.zstd` fetched whole);
//! `text`: bag strings for outputs (`visible`
//! for terminals, `md_escape` for Markdown, `file_stem_for_topic`: unique, bounded file names).
//!
//! Notable dependencies: `mcap` (record parsing; the writer), `memmap2`, `zstd`, `lz4_flex`,
//! `crc32fast` (chunk CRCs), `rayon`, `serde_yaml_ng`, `rusqlite` (bundled SQLite), `libc`
//! (`malloc_trim` after parallel scans, `madvise`), `regex` (topic patterns).

mod columns;
pub mod db3;
mod error;
mod filezstd;
mod mcap_file;
pub mod metadata;
pub mod outfile;
pub mod qos;
mod remote;
mod scan;
mod select;
pub mod text;
pub mod write;
pub mod yaml;
pub mod yaml_keys;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use bagscope_source::{io_counters, IoCounters, SourceError};
pub use columns::Columns;
pub use db3::{Db3File, TopicAggregate};
pub use error::{BagError, Result, Warning, WarningCode};
pub use mcap_file::{ChannelRec, Compression, McapFile, SchemaRec, DEFAULT_MAX_CHUNK_BYTES};
pub use metadata::Rosbag2Metadata;
pub use remote::take_process_read_failure;
pub use scan::{Item, RawMessage, TopicSpan};
pub use select::TopicFilter;
pub use write::{Rosbag2Writer, WriteChannel, WriteError};

/// Whether `path` names a bag in object storage (`s3://`, `gs://`, `az://`, `azure://`,
/// `http(s)://`) rather than a local file or folder.
pub fn is_remote_path(path: &Path) -> bool {
    path.to_str().is_some_and(bagscope_source::is_remote)
}

/// One file of a bag about to be opened.
// Short-lived, one per file being opened: not worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum FileSource {
    /// A local file: where its bytes are read (a decompressed copy, a fetched copy) and the
    /// name outputs show.
    Local { read: PathBuf, shown: PathBuf },
    /// A remote MCAP file opened from its summary.
    Opened(Box<McapFile>),
}

/// A topic of the bag, merged over all its files (same name and type).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Topic {
    /// Topic name, e.g. `/camera/image_raw`.
    pub name: String,
    /// Message type, e.g. `sensor_msgs/msg/Image` (serialised as `type`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Payload encoding, normally `cdr`.
    pub message_encoding: String,
    /// Name of the schema record (the type as the writer spelled it); empty when the bag has none.
    pub schema_name: String,
    /// Schema encoding, `ros2msg` or `ros2idl`; empty when the bag has no schema.
    pub schema_encoding: String,
    /// The message definition text as recorded; empty when the bag carries none (a built-in definition may stand in).
    #[serde(skip)]
    pub schema_data: Arc<[u8]>,
    /// Message count stated by `metadata.yaml`, if any.
    pub metadata_count: Option<u64>,
    /// QoS profiles as recorded (YAML text), for replay.
    #[serde(skip)]
    pub offered_qos_profiles: Option<String>,
    /// RIHS01 type hash as recorded (Iron and later), for writers.
    #[serde(skip)]
    pub type_description_hash: Option<String>,
}

/// How [`Bag::open_with`] opens the files.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Open MCAP files from their footer and summary alone, without walking the data section
    /// (where a file's summary has Statistics with per-channel counts and Chunk Indexes; others
    /// open normally). Such a bag answers [`Bag::topic_spans`] and metadata, not scans: damage
    /// in the data section goes unseen. For `info --fast`.
    pub trust_summary: bool,
    /// Most bytes a compressed chunk may claim uncompressed; a chunk beyond it (or beyond
    /// any real compression ratio) is not decompressed and its messages are reported lost
    /// (`decompression_limit`). `None`: the environment variable `BAGSCOPE_MAX_CHUNK_BYTES`
    /// if set, else [`DEFAULT_MAX_CHUNK_BYTES`].
    pub max_chunk_bytes: Option<u64>,
}

impl OpenOptions {
    /// The chunk limit in effect.
    pub fn resolved_max_chunk_bytes(&self) -> u64 {
        self.max_chunk_bytes
            .or_else(|| {
                std::env::var("BAGSCOPE_MAX_CHUNK_BYTES")
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(DEFAULT_MAX_CHUNK_BYTES)
    }
}

/// Hands heap pages freed by the scan back to the OS. glibc keeps what one thread frees from
/// another thread's arena in that arena, so after a parallel scan the worker threads' per-chunk
/// buffers (about as large as the results themselves) stayed resident while the analysis
/// allocated afresh: measured, this was a third of `sync`'s peak heap. No-op elsewhere.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the OS; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Asks for transparent huge pages behind a large array about to be filled: one fault per
/// 2 MiB instead of 512, which the per-message arrays of a scan otherwise pay as they are
/// first written (measured: 6% of a full stamp scan). Advice only; a no-op where the kernel
/// does not do huge pages.
pub(crate) fn advise_huge_pages(v: &[i64]) {
    const HUGE: usize = 2 << 20;
    let start = v.as_ptr() as usize;
    let end = start + std::mem::size_of_val(v);
    // Only whole huge pages inside the array: the advice must not reach other allocations.
    let first = start.next_multiple_of(HUGE);
    if end < first + HUGE {
        return;
    }
    let len = (end - first) / HUGE * HUGE;
    #[cfg(target_os = "linux")]
    // SAFETY: MADV_HUGEPAGE changes how the kernel backs pages of this range, never their
    // contents; the range lies inside `v`'s allocation.
    unsafe {
        libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = len;
}

/// An opened bag: one or more MCAP files, or one or more rosbag2 sqlite3 (`.db3`) files, read
/// as one, in log-time order. Exactly one of `files` / `db3_files` is non-empty.
pub struct Bag {
    /// The path the bag was opened from (a folder or a file).
    pub path: PathBuf,
    /// The MCAP files (one per split), in the order they are read.
    pub files: Vec<McapFile>,
    /// The rosbag2 sqlite3 files, in the order they are read.
    pub db3_files: Vec<Db3File>,
    /// The topics over all files, merged by name and type.
    pub topics: Vec<Topic>,
    /// The folder's `metadata.yaml`, when there is one and it parsed.
    pub metadata: Option<Rosbag2Metadata>,
    /// rosbag2 `compression_mode: MESSAGE`: every payload is its own zstd frame. Declared by
    /// `metadata.yaml`, or without one by the rosbag2 metadata inside the first file that has
    /// it; never guessed from the payloads.
    pub message_compression: bool,
    /// What went wrong while opening (damage recovered from, files missing or unlisted, ...).
    pub warnings: Vec<Warning>,
    /// (file index, channel id) → topic index.
    channel_topic: Vec<BTreeMap<u16, usize>>,
    /// (file index, channel id defined more than once) → each definition's topic from where it
    /// starts.
    channel_topic_at: Vec<BTreeMap<u16, Vec<(mcap_file::Pos, usize)>>>,
    /// (db3 file index, topic id) → topic index.
    db3_topic: Vec<BTreeMap<i64, usize>>,
    /// Decompressed copies of `.zstd` bag files (rosbag2 file compression), deleted with the bag.
    _temp_files: Vec<outfile::LiveTempPath>,
}

impl std::fmt::Debug for Bag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bag")
            .field("path", &self.path)
            .field("files", &self.files)
            .field("db3_files", &self.db3_files.len())
            .field("topics", &self.topics.len())
            .finish()
    }
}

/// [`Bag::scan_in_order`] met a chunk holding a message logged before the start its header
/// declares: the items handed out may be out of order (read the bag with [`Bag::scan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOrderBroken;

/// Result of a scan: one entry per message in log-time order, plus what went wrong.
#[derive(Debug)]
pub struct Scan<T> {
    /// One entry per message the scan function kept, in log-time order.
    pub items: Vec<Item<T>>,
    /// What went wrong while scanning (damaged chunks, decode limits, ...).
    pub warnings: Vec<Warning>,
}

impl Bag {
    /// Opens a rosbag2 folder, a folder of `.mcap` or `.db3` files, or a single `.mcap` or
    /// `.db3` file (recognised by its content, not its name).
    pub fn open(path: impl AsRef<Path>) -> Result<Bag> {
        Self::open_with(path, OpenOptions::default())
    }

    /// [`Bag::open`] with options.
    pub fn open_with(path: impl AsRef<Path>, opts: OpenOptions) -> Result<Bag> {
        let path = path.as_ref();
        if let Some(url) = remote::as_url(path) {
            return remote::open_bag(&url.map_err(BagError::Remote)?, opts);
        }
        let meta = std::fs::metadata(path).map_err(|source| BagError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut warnings = Vec::new();
        let mut metadata = None;
        let file_paths: Vec<PathBuf> = if meta.is_dir() {
            let yaml = path.join("metadata.yaml");
            match std::fs::metadata(&yaml) {
                Ok(ym) if !ym.is_file() => {
                    return Err(BagError::NotRegularFile { path: yaml });
                }
                Ok(_) => {
                    let m = Rosbag2Metadata::read(&yaml)?;
                    if !matches!(m.storage_identifier.as_str(), "" | "mcap" | "sqlite3") {
                        return Err(BagError::UnsupportedStorage {
                            path: path.to_path_buf(),
                            storage: m.storage_identifier.clone(),
                        });
                    }
                    let v = listed_files(path, &m, &mut warnings)?;
                    metadata = Some(m);
                    v
                }
                Err(_) => {
                    let mcap = list_bag_files(path, "mcap")?;
                    if mcap.is_empty() {
                        list_bag_files(path, "db3")?
                    } else {
                        mcap
                    }
                }
            }
        } else if meta.is_file() {
            vec![path.to_path_buf()]
        } else {
            return Err(BagError::NotRegularFile {
                path: path.to_path_buf(),
            });
        };
        if file_paths.is_empty() {
            return Err(BagError::NoFiles {
                path: path.to_path_buf(),
                bags_inside: bags_inside(path),
            });
        }
        // rosbag2 file compression (`NAME.db3.zstd`, `NAME.mcap.zstd`): each file is read from
        // a temporary decompressed copy, deleted with the bag.
        let mut temp_files = Vec::new();
        let mut sources = Vec::new();
        for p in &file_paths {
            if !p.to_string_lossy().ends_with(".zstd") {
                sources.push(FileSource::Local {
                    read: p.clone(),
                    shown: p.clone(),
                });
                continue;
            }
            let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            let d = filezstd::decompress_to_temp(p, filezstd::output_limit_bytes(size))?;
            warnings.extend(d.warnings);
            sources.push(FileSource::Local {
                read: d.path.to_path_buf(),
                shown: p.clone(),
            });
            temp_files.push(d.path);
        }
        Self::assemble(path, sources, metadata, warnings, temp_files, opts)
    }

    /// The bag made of `sources` (in reading order): `.db3` files when every one is sqlite3,
    /// else the MCAP files (a sqlite3 file among them is skipped with a warning), copies of
    /// one file read once.
    fn assemble(
        path: &Path,
        sources: Vec<FileSource>,
        metadata: Option<Rosbag2Metadata>,
        mut warnings: Vec<Warning>,
        temp_files: Vec<outfile::LiveTempPath>,
        opts: OpenOptions,
    ) -> Result<Bag> {
        let max_chunk_bytes = opts.resolved_max_chunk_bytes();
        let sqlite: Vec<bool> = sources
            .iter()
            .map(|s| match s {
                FileSource::Local { read, .. } => db3::is_sqlite(read),
                FileSource::Opened(_) => false,
            })
            .collect();
        let mut files = Vec::new();
        let mut db3_files = Vec::new();
        if !sources.is_empty() && sqlite.iter().all(|s| *s) {
            for s in &sources {
                if let FileSource::Local { read, shown } = s {
                    db3_files.push(Db3File::open_as(read, shown)?);
                }
            }
        } else {
            let mut identities = std::collections::HashMap::new();
            for (s, is_db) in sources.into_iter().zip(&sqlite) {
                let f = match s {
                    FileSource::Opened(f) => *f,
                    FileSource::Local { shown, .. } if *is_db => {
                        // One bag, one storage: rosbag2 never mixes them.
                        warnings.push(
                            Warning::new(
                                WarningCode::MixedStorage,
                                "sqlite3 file in a bag of MCAP files: not read",
                            )
                            .file(shown.display().to_string())
                            .loss(),
                        );
                        continue;
                    }
                    FileSource::Local { read: r, shown: p } if r != p => {
                        let mut f = McapFile::open_limited(&r, max_chunk_bytes)
                            .map_err(|e| e.renamed(&r, &p))?;
                        let (from, to) = (r.display().to_string(), p.display().to_string());
                        for w in &mut f.warnings {
                            if w.file.as_deref() == Some(from.as_str()) {
                                w.file = Some(to.clone());
                            }
                        }
                        f.path = p.clone();
                        f
                    }
                    FileSource::Local { shown: p, .. } if opts.trust_summary => {
                        match McapFile::open_from_summary_limited(&p, max_chunk_bytes)? {
                            Some(f) => f,
                            None => McapFile::open_limited(&p, max_chunk_bytes)?,
                        }
                    }
                    FileSource::Local { shown: p, .. } => {
                        McapFile::open_limited(&p, max_chunk_bytes)?
                    }
                };
                // The same file listed twice, or a copy of one (a half-finished upload, a
                // duplicated split): reading it again would count every message twice.
                // Looked up, not compared with every file before it: a folder of 20 000 files.
                let key = f.identity();
                if let Some(&prev) = identities.get(&key) {
                    let prev: &McapFile = &files[prev];
                    warnings.push(
                        Warning::new(
                            WarningCode::DuplicateFile,
                            format!("same content as {}: read once", prev.path.display()),
                        )
                        .file(f.path.display().to_string()),
                    );
                    continue;
                }
                identities.insert(key, files.len());
                files.push(f);
            }
        }
        // Payloads are zstd frames only where the bag says so: its `metadata.yaml`, else the
        // copy of the bag's metadata rosbag2 writes into each file (the first file that has
        // one). A payload that merely starts like a zstd frame is data.
        let message_compression = match &metadata {
            Some(m) => m.message_compression(),
            None => files
                .iter()
                .find_map(|f| {
                    f.metadata_records
                        .iter()
                        .find(|(name, _)| name == "rosbag2")
                        .and_then(|(_, m)| m.get("serialized_metadata"))
                })
                .map(String::as_str)
                .or_else(|| db3_files.iter().find_map(|f| f.metadata_text.as_deref()))
                .and_then(Rosbag2Metadata::from_serialized)
                .is_some_and(|m| m.message_compression()),
        };
        let mut bag = Bag {
            path: path.to_path_buf(),
            files,
            db3_files,
            topics: Vec::new(),
            metadata,
            message_compression,
            warnings,
            channel_topic: Vec::new(),
            channel_topic_at: Vec::new(),
            db3_topic: Vec::new(),
            _temp_files: temp_files,
        };
        bag.merge_topics();
        bag.check_db3_metadata();
        Ok(bag)
    }

    fn merge_topics(&mut self) {
        let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut topics: Vec<Topic> = Vec::new();
        for f in &self.files {
            let mut map = BTreeMap::new();
            let mut redefined = BTreeMap::new();
            // A redefined channel's first definition is in `channels`; the others follow.
            let later = f
                .channel_timeline
                .values()
                .flat_map(|v| v.iter().skip(1).map(|(_, c)| c));
            for ch in f.channels.values().chain(later) {
                let schema = f.schemas.get(&ch.schema_id);
                if ch.schema_id != 0 && schema.is_none() {
                    self.warnings.push(
                        Warning::new(
                            WarningCode::SchemaMissing,
                            format!(
                                "channel {} points at schema {} which the file never defines: payloads cannot be decoded",
                                ch.id, ch.schema_id
                            ),
                        )
                        .topic(&ch.topic)
                        .file(f.path.display().to_string()),
                    );
                }
                let type_name = schema.map(|s| s.name.clone()).unwrap_or_default();
                let key = (ch.topic.clone(), type_name.clone());
                let ti = *index.entry(key).or_insert_with(|| {
                    topics.push(Topic {
                        name: ch.topic.clone(),
                        type_name: type_name.clone(),
                        message_encoding: ch.message_encoding.clone(),
                        schema_name: type_name.clone(),
                        schema_encoding: schema.map(|s| s.encoding.clone()).unwrap_or_default(),
                        schema_data: schema
                            .map(|s| s.data.clone())
                            .unwrap_or_else(|| Arc::from(&[][..])),
                        metadata_count: None,
                        offered_qos_profiles: ch.metadata.get("offered_qos_profiles").cloned(),
                        type_description_hash: ch.metadata.get("topic_type_hash").cloned(),
                    });
                    topics.len() - 1
                });
                map.entry(ch.id).or_insert(ti);
                if let Some(defs) = f.channel_timeline.get(&ch.id) {
                    let v: &mut Vec<(mcap_file::Pos, usize)> = redefined.entry(ch.id).or_default();
                    for (p, d) in defs {
                        if d.topic == ch.topic
                            && d.schema_id == ch.schema_id
                            && d.message_encoding == ch.message_encoding
                        {
                            v.push((*p, ti));
                        }
                    }
                    v.sort_unstable();
                    v.dedup();
                }
            }
            self.channel_topic.push(map);
            self.channel_topic_at.push(redefined);
        }
        for f in &self.db3_files {
            let mut map = BTreeMap::new();
            for t in &f.topics {
                let key = (t.name.clone(), t.type_name.clone());
                let ti = *index.entry(key).or_insert_with(|| {
                    topics.push(db3_topic(f, t));
                    topics.len() - 1
                });
                map.insert(t.id, ti);
            }
            self.db3_topic.push(map);
        }
        // Topics only metadata.yaml knows about (declared, never written) are kept: they are the
        // zero-count topics users need to see.
        if let Some(m) = &self.metadata {
            // The first topic of each name (a bag of 100 000 topics: looked up, not searched).
            let mut first: std::collections::HashMap<String, usize> = Default::default();
            for (i, t) in topics.iter().enumerate() {
                first.entry(t.name.clone()).or_insert(i);
            }
            for t in &m.topics_with_message_count {
                let md = &t.topic_metadata;
                let pos = first.get(&md.name).copied();
                match pos {
                    Some(i) => {
                        topics[i].metadata_count = Some(t.message_count);
                        if topics[i].type_name.is_empty() {
                            topics[i].type_name = md.type_name.clone();
                        }
                    }
                    None => {
                        first.insert(md.name.clone(), topics.len());
                        topics.push(Topic {
                            name: md.name.clone(),
                            type_name: md.type_name.clone(),
                            message_encoding: md.serialization_format.clone(),
                            schema_name: String::new(),
                            schema_encoding: String::new(),
                            schema_data: Arc::from(&[][..]),
                            metadata_count: Some(t.message_count),
                            offered_qos_profiles: None,
                            type_description_hash: md.type_description_hash.clone(),
                        })
                    }
                }
            }
        }
        self.topics = topics;
    }

    /// Index of the topic with this name (the first, if the name has several types).
    pub fn topic_index(&self, name: &str) -> Result<usize> {
        self.topics
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| BagError::UnknownTopic {
                path: self.path.clone(),
                topic: name.to_string(),
                available: {
                    let mut v: Vec<&str> = self.topics.iter().map(|t| t.name.as_str()).collect();
                    v.sort();
                    v.join(", ")
                },
            })
    }

    /// Total size of the bag's files, bytes (of the decompressed copies for compressed files).
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size()).sum::<u64>()
            + self.db3_files.iter().map(|f| f.size).sum::<u64>()
    }

    /// Every file this bag is read from: its MCAP or sqlite3 files (with sqlite's journal and
    /// write-ahead files where present), `metadata.yaml` of a bag folder, and the path it was
    /// opened by. What a writer must never write over ([`Rosbag2Writer::create`]).
    pub fn input_paths(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self.files.iter().map(|f| f.path.clone()).collect();
        for f in &self.db3_files {
            v.push(f.path.clone());
            for side in ["-wal", "-shm", "-journal"] {
                let mut p = f.path.clone().into_os_string();
                p.push(side);
                v.push(p.into());
            }
        }
        if self.path.is_dir() {
            v.push(self.path.join("metadata.yaml"));
        }
        v.push(self.path.clone());
        v.retain(|p| p.exists());
        v.sort();
        v.dedup();
        v
    }

    /// Storage identifier as rosbag2 names it.
    pub fn storage(&self) -> &str {
        if self.db3_files.is_empty() {
            "mcap"
        } else {
            "sqlite3"
        }
    }

    /// False when the storage records no publish time (sqlite3): then every
    /// [`RawMessage::publish_time_ns`] is `None`.
    pub fn has_publish_time(&self) -> bool {
        self.db3_files.is_empty()
    }

    /// Open-time warnings of the bag and all its files.
    pub fn open_warnings(&self) -> Vec<Warning> {
        let mut v = self.warnings.clone();
        for f in &self.files {
            v.extend(f.warnings.iter().cloned());
        }
        for f in &self.db3_files {
            v.extend(f.warnings.iter().cloned());
        }
        v
    }

    /// Per-topic message count and first / last log time from SQL aggregates (sqlite3 bags
    /// only: `None` for MCAP). Indexed like `topics`; `None` for topics without messages.
    pub fn topic_aggregates(&self) -> Option<Vec<Option<TopicAggregate>>> {
        if self.db3_files.is_empty() {
            return None;
        }
        let mut out: Vec<Option<TopicAggregate>> = vec![None; self.topics.len()];
        for (f, map) in self.db3_files.iter().zip(&self.db3_topic) {
            for (id, a) in &f.aggregates {
                let Some(&ti) = map.get(id) else { continue };
                out[ti] = Some(match out[ti] {
                    None => *a,
                    Some(b) => TopicAggregate {
                        count: a.count + b.count,
                        first_ns: a.first_ns.min(b.first_ns),
                        last_ns: a.last_ns.max(b.last_ns),
                    },
                });
            }
        }
        Some(out)
    }

    /// sqlite3 bags: compares metadata.yaml with the databases (per topic, per file, in
    /// total). MCAP bags are checked by `info` from what it counts.
    fn check_db3_metadata(&mut self) {
        let Some(m) = &self.metadata else { return };
        if self.db3_files.is_empty() || self.open_warnings().iter().any(|w| w.data_loss) {
            return;
        }
        let mut found = Vec::new();
        let aggs = self.topic_aggregates().unwrap_or_default();
        for (t, a) in self.topics.iter().zip(&aggs) {
            let count = a.map_or(0, |a| a.count);
            if let Some(mc) = t.metadata_count {
                if mc != count {
                    // Same text as `info`'s own check, so the two deduplicate.
                    found.push(
                        Warning::new(
                            WarningCode::MetadataCountMismatch,
                            format!("metadata.yaml says {mc} messages, the files hold {count}"),
                        )
                        .topic(&t.name),
                    );
                }
            }
        }
        let by_name: std::collections::HashMap<_, &Db3File> = self
            .db3_files
            .iter()
            .rev()
            .filter_map(|f| Some((f.path.file_name()?, f)))
            .collect();
        for fe in &m.files {
            let Some(mc) = fe.message_count else { continue };
            let Some(f) = Path::new(&fe.path).file_name().and_then(|n| by_name.get(n)) else {
                continue;
            };
            let n = f.message_count();
            if n != mc {
                found.push(
                    Warning::new(
                        WarningCode::MetadataCountMismatch,
                        format!("metadata.yaml says this file holds {mc} messages, the database holds {n}"),
                    )
                    .file(f.path.display().to_string()),
                );
            }
        }
        if let Some(mc) = m.message_count {
            let n: u64 = self.db3_files.iter().map(Db3File::message_count).sum();
            if n != mc {
                found.push(Warning::new(
                    WarningCode::MetadataCountMismatch,
                    format!(
                        "metadata.yaml says {mc} messages in total, the database files hold {n}"
                    ),
                ));
            }
        }
        self.warnings.extend(found);
    }

    /// A read of a remote file that failed for good since the last call (a scan that met it
    /// stopped there, its warnings say what was not read): callers that must not report a
    /// partial answer as a complete one turn it into their error.
    pub fn take_read_failure(&self) -> Option<BagError> {
        self.files.iter().find_map(McapFile::take_read_failure)
    }

    /// Whether any file of the bag is read from an object store.
    pub fn is_remote(&self) -> bool {
        self.files.iter().any(McapFile::is_remote)
    }

    /// Runs `f` on every message of the wanted topics, in parallel across chunks, and returns
    /// the results in log-time order. Payloads are decompressed (rosbag2 message compression
    /// included) before `f` sees them.
    pub fn scan<T, F>(&self, topics: &[bool], f: F) -> Scan<T>
    where
        T: Send,
        F: Fn(&RawMessage<'_>) -> T + Sync,
    {
        self.scan_impl(topics, true, f)
    }

    /// [`Bag::scan`] with bounded memory: `emit` gets each item, in the order [`Bag::scan`]
    /// returns them (log time, then file order), as soon as no chunk left to read can hold
    /// an earlier message (by the time ranges chunk headers declare), on the calling thread;
    /// chunks are decompressed and `f` run in parallel on other threads meanwhile. Held at
    /// once: the items not yet handed out and two steps of chunks (about 16 MiB
    /// uncompressed each), not the bag.
    ///
    /// `Err(ScanOrderBroken)`: a chunk held a message logged before the start its header
    /// declares, so items already handed out may be out of order; the caller discards what it
    /// built from them and reads the bag with [`Bag::scan`], whose order is right on any input.
    pub fn scan_in_order<T, F>(
        &self,
        topics: &[bool],
        f: F,
        emit: &mut dyn FnMut(Item<T>),
    ) -> std::result::Result<Vec<Warning>, ScanOrderBroken>
    where
        T: Send,
        F: Fn(&RawMessage<'_>) -> T + Sync,
    {
        self.scan_in_order_by_steps(topics, f, scan::ORDERED_STEP_BYTES, None, emit)
    }

    /// [`Bag::scan_in_order`] that ends early once `stop` is set (checked between steps of
    /// chunks; items already read are still handed out up to then).
    pub fn scan_in_order_until<T, F>(
        &self,
        topics: &[bool],
        f: F,
        stop: &std::sync::atomic::AtomicBool,
        emit: &mut dyn FnMut(Item<T>),
    ) -> std::result::Result<Vec<Warning>, ScanOrderBroken>
    where
        T: Send,
        F: Fn(&RawMessage<'_>) -> T + Sync,
    {
        self.scan_in_order_by_steps(topics, f, scan::ORDERED_STEP_BYTES, Some(stop), emit)
    }

    /// [`Bag::scan_in_order`] decompressing about `step_bytes` of chunks per parallel step
    /// (tests make the steps one chunk long).
    #[doc(hidden)]
    pub fn scan_in_order_by_steps<T, F>(
        &self,
        topics: &[bool],
        f: F,
        step_bytes: u64,
        stop: Option<&std::sync::atomic::AtomicBool>,
        emit: &mut dyn FnMut(Item<T>),
    ) -> std::result::Result<Vec<Warning>, ScanOrderBroken>
    where
        T: Send,
        F: Fn(&RawMessage<'_>) -> T + Sync,
    {
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        if !self.db3_files.is_empty() {
            // Rows come from sqlite3 in timestamp order, one at a time.
            let stopped = || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
            return Ok(self.db3_stream(&wanted, true, |m| {
                if stopped() {
                    return;
                }
                emit(Item {
                    log_time_ns: m.log_time_ns,
                    topic: m.topic,
                    value: f(m),
                })
            }));
        }
        let plan = self.plan(&wanted, true, stop);
        let mut warnings = scan::scan_files_in_order(&self.files, &plan, &f, step_bytes, emit)
            .map_err(|_| ScanOrderBroken)?;
        warnings.sort();
        warnings.dedup();
        Ok(warnings)
    }

    /// [`Bag::scan`] into per-topic columns: the log time and the `K` values `f` returns for
    /// each message, indexed by topic (unwanted topics empty), in log-time order (stable).
    /// The arrays are sized from the chunks' message indexes and written in place by the
    /// parallel scan: they are the only per-message memory, `8·(K+1)` bytes a message.
    pub fn scan_columns<const K: usize, F>(
        &self,
        topics: &[bool],
        f: F,
    ) -> (Vec<Columns<K>>, Vec<Warning>)
    where
        F: Fn(&RawMessage<'_>) -> [i64; K] + Sync,
    {
        self.scan_columns_impl(topics, f, false)
    }

    /// [`Bag::scan_columns`] whose last value (`K` ≥ 1; what `f` returns there is replaced) is
    /// each message's position in the order [`Bag::visit`] walks the bag: keys that increase
    /// along that walk, so rows of different topics with equal log times can be put in that
    /// order.
    pub fn scan_columns_in_file_order<const K: usize, F>(
        &self,
        topics: &[bool],
        f: F,
    ) -> (Vec<Columns<K>>, Vec<Warning>)
    where
        F: Fn(&RawMessage<'_>) -> [i64; K] + Sync,
    {
        self.scan_columns_impl(topics, f, true)
    }

    fn scan_columns_impl<const K: usize, F>(
        &self,
        topics: &[bool],
        f: F,
        ordered: bool,
    ) -> (Vec<Columns<K>>, Vec<Warning>)
    where
        F: Fn(&RawMessage<'_>) -> [i64; K] + Sync,
    {
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        if !self.db3_files.is_empty() {
            // Rows come in the walk's own order: their position in it is the key.
            let scan = self.scan(&wanted, f);
            let mut v: Vec<Columns<K>> =
                (0..self.topics.len()).map(|_| Columns::default()).collect();
            for (i, it) in scan.items.into_iter().enumerate() {
                let c = &mut v[it.topic];
                c.log_time_ns.push(it.log_time_ns);
                let mut value = it.value;
                if ordered {
                    if let Some(last) = value.last_mut() {
                        *last = i as i64;
                    }
                }
                for (col, x) in c.values.iter_mut().zip(value) {
                    col.push(x);
                }
            }
            return (v, scan.warnings);
        }
        let plan = self.plan(&wanted, true, None);
        let (v, mut warnings) =
            columns::scan_files_columns(&self.files, &plan, self.topics.len(), &f, ordered);
        warnings.sort();
        warnings.dedup();
        (v, warnings)
    }

    /// Log times per wanted topic, from the message indexes where they are complete (no chunk
    /// is decompressed then), else by scanning.
    pub fn log_times(&self, topics: &[bool]) -> Scan<()> {
        self.scan_impl(topics, false, |_| ())
    }

    /// What a scan of the wanted topics reads (one definition for every kind of scan).
    fn plan<'p>(
        &'p self,
        wanted: &'p [bool],
        needs_payload: bool,
        stop: Option<&'p std::sync::atomic::AtomicBool>,
    ) -> scan::ScanPlan<'p> {
        scan::ScanPlan {
            topics: wanted,
            channel_topic: scan::dense_channel_topics(&self.channel_topic, &self.channel_topic_at),
            redefined: self.channel_topic_at.clone(),
            needs_payload,
            lengths: false,
            message_compression: self.message_compression,
            stop,
            window: None,
        }
    }

    /// Count and first / last log time of each wanted topic (indexed by topic), from the message
    /// index records without reading their every entry: work grows with the number of chunks,
    /// not of messages. `None` when the bag cannot answer that way (sqlite3 storage, messages
    /// outside chunks, missing or incomplete indexes, inconsistent chunk time ranges): use
    /// [`Bag::topic_log_times`] then.
    pub fn topic_spans(&self, topics: &[bool]) -> Option<Vec<TopicSpan>> {
        if !self.db3_files.is_empty() {
            return None;
        }
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        let plan = self.plan(&wanted, false, None);
        scan::index_spans(&self.files, &plan, self.topics.len())
    }

    /// Log times of each wanted topic (indexed by topic; unwanted topics empty), each in
    /// log-time order, and the warnings of the read. From the message indexes alone (8 bytes
    /// per message, no chunk decompressed, no per-message records) when they are complete;
    /// otherwise by [`Bag::log_times`].
    pub fn topic_log_times(&self, topics: &[bool]) -> (Vec<Vec<i64>>, Vec<Warning>) {
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        if self.db3_files.is_empty() {
            let plan = self.plan(&wanted, false, None);
            if let Some(v) = scan::index_log_times(&self.files, &plan, self.topics.len()) {
                return (v, Vec::new());
            }
        }
        let scan = self.log_times(&wanted);
        let mut v = vec![Vec::new(); self.topics.len()];
        for it in &scan.items {
            v[it.topic].push(it.log_time_ns);
        }
        (v, scan.warnings)
    }

    /// [`Bag::topic_log_times`] with each message's payload length as stored, aligned with
    /// its log time (MCAP: the serialized message, or the compressed frame under rosbag2
    /// message compression; sqlite3: the blob's length). From the message indexes when they
    /// are complete: a record ends where the next message of its chunk starts, and the chunks
    /// holding a channel's first message (where writers put its definitions) are read record by
    /// record; else every chunk is read. Lengths above `u32::MAX` are given as `u32::MAX`.
    pub fn topic_log_times_sizes(
        &self,
        topics: &[bool],
    ) -> (Vec<Vec<i64>>, Vec<Vec<u32>>, Vec<Warning>) {
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        let n = self.topics.len();
        let mut times = vec![Vec::new(); n];
        let mut sizes = vec![Vec::new(); n];
        if !self.db3_files.is_empty() {
            let ids: Vec<Vec<i64>> = self
                .db3_topic
                .iter()
                .map(|m| {
                    m.iter()
                        .filter(|(_, t)| wanted[**t])
                        .map(|(id, _)| *id)
                        .collect()
                })
                .collect();
            let warnings = db3::stream(&self.db3_files, &ids, false, |row| {
                let Some(&t) = self.db3_topic[row.file].get(&row.topic_id) else {
                    return;
                };
                times[t].push(row.timestamp);
                sizes[t].push(u32::try_from(row.len).unwrap_or(u32::MAX));
            });
            return (times, sizes, warnings);
        }
        let plan = self.plan(&wanted, false, None);
        if let Some((t, s)) = scan::index_log_times_sizes(&self.files, &plan, n, true) {
            return (t, s, Vec::new());
        }
        let mut plan = plan;
        plan.lengths = true;
        let out = scan::scan_files(&self.files, &plan, &|m: &RawMessage<'_>| {
            u32::try_from(m.data.len()).unwrap_or(u32::MAX)
        });
        for it in out.items {
            times[it.topic].push(it.log_time_ns);
            sizes[it.topic].push(it.value);
        }
        let mut warnings = out.warnings;
        warnings.sort();
        warnings.dedup();
        (times, sizes, warnings)
    }

    fn scan_impl<T, F>(&self, topics: &[bool], needs_payload: bool, f: F) -> Scan<T>
    where
        T: Send,
        F: Fn(&RawMessage<'_>) -> T + Sync,
    {
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        if !self.db3_files.is_empty() {
            let mut items = Vec::new();
            let warnings = self.db3_stream(&wanted, needs_payload, |m| {
                items.push(Item {
                    log_time_ns: m.log_time_ns,
                    topic: m.topic,
                    value: f(m),
                })
            });
            return Scan { items, warnings };
        }
        let plan = self.plan(&wanted, needs_payload, None);
        let out = scan::scan_files(&self.files, &plan, &f);
        let mut warnings = out.warnings;
        warnings.sort();
        warnings.dedup();
        Scan {
            items: out.items,
            warnings,
        }
    }

    /// Streams every message of the wanted topics to `f` with bounded memory (one chunk or one
    /// row per file at a time), for writers that must not hold the whole bag. Order: log-time
    /// order for sqlite3 bags; file order for MCAP (log-time order for bags recorded in order,
    /// which is what rosbag2 writes). Returns the warnings of the walk.
    pub fn visit<F>(&self, topics: &[bool], f: F) -> Vec<Warning>
    where
        F: FnMut(&RawMessage<'_>) + Send,
    {
        self.visit_until(topics, &std::sync::atomic::AtomicBool::new(false), f)
    }

    /// [`Bag::visit`] that ends early once `stop` is set: checked between chunks (MCAP) or
    /// rows (sqlite3, where the remaining rows are skipped unread by `f`).
    pub fn visit_until<F>(
        &self,
        topics: &[bool],
        stop: &std::sync::atomic::AtomicBool,
        mut f: F,
    ) -> Vec<Warning>
    where
        F: FnMut(&RawMessage<'_>) + Send,
    {
        use std::sync::atomic::Ordering;
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        if !self.db3_files.is_empty() {
            return self.db3_stream(&wanted, true, |m| {
                if !stop.load(Ordering::Relaxed) {
                    f(m)
                }
            });
        }
        let plan = self.plan(&wanted, true, Some(stop));
        // The walk is sequential; the mutex only satisfies the scanner's `Fn + Sync` bound.
        let f = std::sync::Mutex::new(f);
        let mut warnings = scan::visit_files(&self.files, &plan, &|m| {
            if let Ok(mut g) = f.lock() {
                (*g)(m)
            }
        });
        warnings.sort();
        warnings.dedup();
        warnings
    }

    /// [`Bag::visit_until`] of the messages logged in `window` (`[start, end)`, ns): chunks
    /// whose time range lies outside it are not read (nor fetched, for a remote bag), and
    /// `skipped(topic, n)` says, in walk order, how many messages of each wanted topic were
    /// passed over unread (from the message indexes), so that callers numbering messages
    /// keep their numbers. Messages outside the window in chunks that are read are passed
    /// over the same way.
    pub fn visit_window<F, G>(
        &self,
        topics: &[bool],
        window: (i64, i64),
        stop: &std::sync::atomic::AtomicBool,
        mut f: F,
        mut skipped: G,
    ) -> Vec<Warning>
    where
        F: FnMut(&RawMessage<'_>) + Send,
        G: FnMut(usize, u64) + Send,
    {
        use std::sync::atomic::Ordering;
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        let (start, end) = window;
        if !self.db3_files.is_empty() {
            return self.db3_stream(&wanted, true, |m| {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                if m.log_time_ns < start || m.log_time_ns >= end {
                    skipped(m.topic, 1);
                } else {
                    f(m)
                }
            });
        }
        let plan = self.plan(&wanted, true, Some(stop));
        // The walk is sequential; the mutex only satisfies the scanner's `Fn + Sync` bound.
        let state = std::sync::Mutex::new((f, skipped));
        let mut warnings = scan::visit_files_windowed(
            &self.files,
            &plan,
            Some((start, end)),
            &|m| {
                if let Ok(mut g) = state.lock() {
                    if m.log_time_ns < start || m.log_time_ns >= end {
                        (g.1)(m.topic, 1)
                    } else {
                        (g.0)(m)
                    }
                }
            },
            &mut |t, n| {
                if let Ok(mut g) = state.lock() {
                    (g.1)(t, n)
                }
            },
        );
        warnings.sort();
        warnings.dedup();
        warnings
    }

    /// The sqlite3 side of scans: rows merged across files in timestamp order.
    fn db3_stream(
        &self,
        wanted: &[bool],
        needs_payload: bool,
        mut f: impl FnMut(&RawMessage<'_>),
    ) -> Vec<Warning> {
        let ids: Vec<Vec<i64>> = self
            .db3_topic
            .iter()
            .map(|m| {
                m.iter()
                    .filter(|(_, t)| wanted.get(**t).copied().unwrap_or(false))
                    .map(|(id, _)| *id)
                    .collect()
            })
            .collect();
        let decompress = self.message_compression && needs_payload;
        let mut buf = Vec::new();
        let mut bad: BTreeMap<usize, usize> = BTreeMap::new();
        let mut too_large: BTreeMap<usize, usize> = BTreeMap::new();
        let mut undeclared: std::collections::BTreeSet<usize> = Default::default();
        let mut warnings = db3::stream(&self.db3_files, &ids, needs_payload, |row| {
            let Some(&topic) = self.db3_topic[row.file].get(&row.topic_id) else {
                return;
            };
            let mut data = row.data;
            if needs_payload && !decompress && scan::looks_compressed(data) {
                undeclared.insert(row.file);
            }
            if decompress {
                // Bounded like a stored payload: a small frame can expand to any size.
                match scan::inflate_message(data, &mut buf) {
                    Ok(()) => data = &buf,
                    Err(scan::Inflate::TooLarge) => {
                        *too_large.entry(row.file).or_default() += 1;
                        return;
                    }
                    Err(scan::Inflate::Corrupt) => {
                        *bad.entry(row.file).or_default() += 1;
                        return;
                    }
                }
            }
            f(&RawMessage {
                topic,
                channel_id: u16::try_from(row.topic_id).unwrap_or(u16::MAX),
                sequence: 0,
                log_time_ns: row.timestamp,
                publish_time_ns: None,
                data,
            });
        });
        for (fi, n) in bad {
            warnings.push(
                Warning::new(
                    WarningCode::CorruptMessage,
                    format!("{n} message payload(s) are not valid zstd frames (rosbag2 message compression): skipped"),
                )
                .file(self.db3_files[fi].path.display().to_string())
                .loss(),
            );
        }
        for (fi, n) in too_large {
            warnings.push(scan::message_too_large_warning(
                n,
                &self.db3_files[fi].path.display().to_string(),
                None,
            ));
        }
        for fi in undeclared {
            warnings.push(scan::undeclared_compression_warning(
                &self.db3_files[fi].path.display().to_string(),
            ));
        }
        warnings.sort();
        warnings.dedup();
        warnings
    }

    /// All topics selected.
    pub fn all_topics(&self) -> Vec<bool> {
        vec![true; self.topics.len()]
    }

    /// Topics selected by name; unknown names are an error that lists what exists.
    pub fn select(&self, names: &[&str]) -> Result<Vec<bool>> {
        let mut v = vec![false; self.topics.len()];
        for n in names {
            v[self.topic_index(n)?] = true;
        }
        Ok(v)
    }
}

/// A bag topic from a `topics` row: the schema comes from `message_definitions` when it holds
/// a usable definition, else stays empty so bagscope-msg falls back to its built-ins.
fn db3_topic(f: &Db3File, t: &db3::Db3Topic) -> Topic {
    // Service events (`pkg/srv/X_Event`) are stored under the service name with the `.srv`
    // text, which is what the event parser wants.
    let service = t
        .type_name
        .strip_suffix("_Event")
        .filter(|s| s.contains("/srv/"));
    let def = f
        .definitions
        .get(&t.type_name)
        .or_else(|| service.and_then(|s| f.definitions.get(s)))
        .filter(|d| {
            !d.text.trim().is_empty() && matches!(d.encoding.as_str(), "ros2msg" | "ros2idl")
        });
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Topic {
        name: t.name.clone(),
        type_name: t.type_name.clone(),
        message_encoding: t.serialization_format.clone(),
        schema_name: t.type_name.clone(),
        // Empty encoding (not "ros2msg") when there is no text: an unknown type must fail as
        // "no definition" rather than parse as an empty message.
        schema_encoding: def.map(|d| d.encoding.clone()).unwrap_or_default(),
        schema_data: def
            .map(|d| Arc::from(d.text.as_bytes()))
            .unwrap_or_else(|| Arc::from(&[][..])),
        metadata_count: None,
        offered_qos_profiles: nonempty(&t.offered_qos_profiles),
        type_description_hash: nonempty(&t.type_description_hash)
            .or_else(|| def.and_then(|d| nonempty(&d.type_description_hash))),
    }
}

/// True when `rel` (a path from `metadata.yaml`) stays inside the bag folder: relative, and no
/// `..` climbs above the folder.
pub(crate) fn stays_inside(rel: &str) -> bool {
    use std::path::Component;
    let mut depth: usize = 0;
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    depth > 0
}

/// `x.db3.zstd` → `db3`, `x.mcap` → `mcap`: the storage a bag file name stands for.
fn storage_kind(name: &str) -> &str {
    let n = name.strip_suffix(".zstd").unwrap_or(name);
    if n.ends_with(".db3") {
        "db3"
    } else if n.ends_with(".mcap") {
        "mcap"
    } else {
        ""
    }
}

/// The files `metadata.yaml` lists, as they are found in the folder. Paths outside the folder
/// (absolute, or climbing out with `..`) are refused unopened (`path_outside_bag`, without
/// saying whether they exist), and only regular files are opened (a FIFO would block the read
/// forever). Bag files in the folder that the metadata does not list are not read, as rosbag2
/// would not read them, but are named (`unlisted_file`), except in one case: when the metadata
/// lists a single file, that file is missing, and exactly one unlisted bag file of the same
/// storage kind is in the folder (a renamed file), that file is read in its place
/// (`substituted_file`; the per-topic counts of the metadata still check it).
fn listed_files(
    dir: &Path,
    m: &Rosbag2Metadata,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut found_set = std::collections::HashSet::new();
    let mut missing = Vec::new();
    let mut refused = Vec::new();
    for rel in &m.relative_file_paths {
        if !stays_inside(rel) {
            warnings.push(
                Warning::new(
                    WarningCode::PathOutsideBag,
                    format!("metadata.yaml lists {rel}, outside the bag folder: not read (its messages are missing)"),
                )
                .loss(),
            );
            refused.push(rel.clone());
            continue;
        }
        let p = dir.join(rel);
        // Dashing/Eloquent wrote paths prefixed with the bag folder's name.
        let alt = Path::new(rel).file_name().map(|n| dir.join(n));
        let hit = [Some(p.clone()), alt]
            .into_iter()
            .flatten()
            .find_map(|c| std::fs::metadata(&c).ok().map(|md| (c, md)));
        match hit {
            Some((c, md)) if md.is_file() => {
                if found_set.insert(c.clone()) {
                    found.push(c);
                }
            }
            Some((c, _)) => warnings.push(
                Warning::new(
                    WarningCode::NotRegularFile,
                    format!("metadata.yaml lists {rel}, which is not a regular file (a FIFO, device or socket): not read"),
                )
                .file(c.display().to_string())
                .loss(),
            ),
            None => missing.push((rel.clone(), p)),
        }
    }
    let unlisted: Vec<PathBuf> = list_bag_files(dir, "")?
        .into_iter()
        .filter(|p| !found_set.contains(p))
        .collect();
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if m.relative_file_paths.len() == 1 && missing.len() == 1 {
        let (rel, _) = &missing[0];
        let kind = storage_kind(rel);
        let same: Vec<&PathBuf> = unlisted
            .iter()
            .filter(|p| !kind.is_empty() && storage_kind(&name_of(p)) == kind)
            .collect();
        if let [only] = same[..] {
            warnings.push(
                Warning::new(
                    WarningCode::SubstitutedFile,
                    format!(
                        "metadata.yaml lists {rel}, which is not in the folder; {} is the folder's only unlisted {kind} file and is read in its place (renamed?): fix relative_file_paths in metadata.yaml to silence this",
                        name_of(only)
                    ),
                )
                .file(only.display().to_string()),
            );
            return Ok(vec![only.clone()]);
        }
    }
    for (rel, p) in &missing {
        warnings.push(
            Warning::new(
                WarningCode::MissingFile,
                format!("metadata.yaml lists {rel}, which is not in the folder: its messages are missing"),
            )
            .file(p.display().to_string())
            .loss(),
        );
    }
    for extra in &unlisted {
        warnings.push(
            Warning::new(
                WarningCode::UnlistedFile,
                "file is in the bag folder but not listed in metadata.yaml: not read",
            )
            .file(extra.display().to_string()),
        );
    }
    if found.is_empty() {
        let mut d = String::new();
        let listed: Vec<&str> = m.relative_file_paths.iter().map(String::as_str).collect();
        if listed.is_empty() {
            d.push_str("metadata.yaml lists no files (relative_file_paths is empty)");
        } else {
            d.push_str(&format!("metadata.yaml lists: {}", listed.join(", ")));
        }
        if !missing.is_empty() {
            let v: Vec<&str> = missing.iter().map(|(r, _)| r.as_str()).collect();
            d.push_str(&format!("\n  not in the folder: {}", v.join(", ")));
        }
        if !refused.is_empty() {
            d.push_str(&format!(
                "\n  refused, outside the bag folder: {}",
                refused.join(", ")
            ));
        }
        if unlisted.is_empty() {
            d.push_str("\n  the folder holds no other bag file");
        } else {
            let v: Vec<String> = unlisted.iter().map(|p| name_of(p)).collect();
            d.push_str(&format!(
                "\n  in the folder but not listed: {}",
                v.join(", ")
            ));
            d.push_str(&format!(
                "\nfix relative_file_paths in {} to name the files that are there, or open a file by itself (e.g. `bagscope info {}`)",
                dir.join("metadata.yaml").display(),
                unlisted[0].display()
            ));
        }
        return Err(BagError::ListedFilesMissing {
            path: dir.to_path_buf(),
            detail: d,
        });
    }
    Ok(found)
}

/// Bag files directly in `dir` with extension `ext` (`""`: any bag file), sorted by name.
/// Only regular files (or links to them): a FIFO with a bag file's name would block a read.
fn list_bag_files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| BagError::Io {
            path: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.to_string_lossy();
            let kind = storage_kind(&n);
            match ext {
                "" => !kind.is_empty(),
                // A folder without metadata.yaml: `.db3.zstd` needs the metadata's word that
                // the bag is file-compressed.
                "db3" => n.ends_with(".db3"),
                e => kind == e,
            }
        })
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        .collect();
    v.sort();
    Ok(v)
}

/// The folders directly inside `dir` that look like bags (a `metadata.yaml`, or `.mcap` / `.db3`
/// files), by name, sorted. Links are not followed.
fn bags_inside(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            std::fs::read_dir(e.path()).is_ok_and(|inner| {
                inner.flatten().any(|f| {
                    let n = f.file_name();
                    let n = n.to_string_lossy();
                    n == "metadata.yaml" || n.ends_with(".mcap") || n.ends_with(".db3")
                })
            })
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
