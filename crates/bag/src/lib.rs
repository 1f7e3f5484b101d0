//! Opening ROS 2 bags: rosbag2 folders (with or without `metadata.yaml`, split files), bare
//! `.mcap` files, compressed chunks (zstd, lz4), rosbag2 per-message and per-file compression, and
//! files cut off by a crash. Reading is memory-mapped and parallel across chunks; damage is
//! reported as structured [`Warning`]s and everything still readable is recovered.

mod error;
mod mcap_file;
pub mod metadata;
mod scan;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::{BagError, Result, Warning};
pub use mcap_file::{ChannelRec, Compression, McapFile, SchemaRec};
pub use metadata::Rosbag2Metadata;
pub use scan::{Item, RawMessage};

/// A topic of the bag, merged over all its files (same name and type).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Topic {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub message_encoding: String,
    pub schema_name: String,
    pub schema_encoding: String,
    #[serde(skip)]
    pub schema_data: Arc<[u8]>,
    /// Message count stated by `metadata.yaml`, if any.
    pub metadata_count: Option<u64>,
    /// QoS profiles as recorded (YAML text), for replay.
    #[serde(skip)]
    pub offered_qos_profiles: Option<String>,
}

/// An opened bag: one or more MCAP files read as one, in log-time order.
pub struct Bag {
    pub path: PathBuf,
    pub files: Vec<McapFile>,
    pub topics: Vec<Topic>,
    pub metadata: Option<Rosbag2Metadata>,
    /// rosbag2 `compression_mode: MESSAGE`: every payload is its own zstd frame.
    pub message_compression: bool,
    pub warnings: Vec<Warning>,
    /// (file index, channel id) → topic index.
    channel_topic: Vec<BTreeMap<u16, usize>>,
}

impl std::fmt::Debug for Bag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bag")
            .field("path", &self.path)
            .field("files", &self.files)
            .field("topics", &self.topics.len())
            .finish()
    }
}

/// Result of a scan: one entry per message in log-time order, plus what went wrong.
#[derive(Debug)]
pub struct Scan<T> {
    pub items: Vec<Item<T>>,
    pub warnings: Vec<Warning>,
}

impl Bag {
    /// Opens a rosbag2 folder, a folder of `.mcap` files, or a single `.mcap` file.
    pub fn open(path: impl AsRef<Path>) -> Result<Bag> {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(|source| BagError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut warnings = Vec::new();
        let mut metadata = None;
        let file_paths: Vec<PathBuf> = if meta.is_dir() {
            let yaml = path.join("metadata.yaml");
            if yaml.exists() {
                let m = Rosbag2Metadata::read(&yaml)?;
                if !m.storage_identifier.is_empty() && m.storage_identifier != "mcap" {
                    return Err(BagError::UnsupportedStorage {
                        path: path.to_path_buf(),
                        storage: m.storage_identifier.clone(),
                    });
                }
                let mut v = Vec::new();
                for rel in &m.relative_file_paths {
                    let p = path.join(rel);
                    if p.exists() {
                        v.push(p);
                    } else {
                        warnings.push(
                            Warning::new(
                                "missing_file",
                                format!("metadata.yaml lists {rel}, which is not in the folder: its messages are missing"),
                            )
                            .file(p.display().to_string())
                            .loss(),
                        );
                    }
                }
                metadata = Some(m);
                v
            } else {
                let mut v: Vec<PathBuf> = std::fs::read_dir(path)
                    .map_err(|source| BagError::Io {
                        path: path.to_path_buf(),
                        source,
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        let n = p.to_string_lossy();
                        n.ends_with(".mcap") || n.ends_with(".mcap.zstd")
                    })
                    .collect();
                v.sort();
                v
            }
        } else {
            vec![path.to_path_buf()]
        };
        if file_paths.is_empty() {
            return Err(BagError::NoFiles {
                path: path.to_path_buf(),
            });
        }
        let mut files = Vec::new();
        for p in &file_paths {
            let f = if p.to_string_lossy().ends_with(".zstd") {
                open_file_compressed(p)?
            } else {
                McapFile::open(p)?
            };
            files.push(f);
        }
        let message_compression = metadata
            .as_ref()
            .is_some_and(Rosbag2Metadata::message_compression);
        let mut bag = Bag {
            path: path.to_path_buf(),
            files,
            topics: Vec::new(),
            metadata,
            message_compression,
            warnings,
            channel_topic: Vec::new(),
        };
        bag.merge_topics();
        Ok(bag)
    }

    fn merge_topics(&mut self) {
        let mut index: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut topics: Vec<Topic> = Vec::new();
        for f in &self.files {
            let mut map = BTreeMap::new();
            for ch in f.channels.values() {
                let schema = f.schemas.get(&ch.schema_id);
                if ch.schema_id != 0 && schema.is_none() {
                    self.warnings.push(
                        Warning::new(
                            "schema_missing",
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
                    });
                    topics.len() - 1
                });
                map.insert(ch.id, ti);
            }
            self.channel_topic.push(map);
        }
        // Topics only metadata.yaml knows about (declared, never written) are kept: they are the
        // zero-count topics users need to see.
        if let Some(m) = &self.metadata {
            for t in &m.topics_with_message_count {
                let md = &t.topic_metadata;
                let pos = topics.iter().position(|x| x.name == md.name);
                match pos {
                    Some(i) => {
                        topics[i].metadata_count = Some(t.message_count);
                        if topics[i].type_name.is_empty() {
                            topics[i].type_name = md.type_name.clone();
                        }
                    }
                    None => topics.push(Topic {
                        name: md.name.clone(),
                        type_name: md.type_name.clone(),
                        message_encoding: md.serialization_format.clone(),
                        schema_name: String::new(),
                        schema_encoding: String::new(),
                        schema_data: Arc::from(&[][..]),
                        metadata_count: Some(t.message_count),
                        offered_qos_profiles: None,
                    }),
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

    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size()).sum()
    }

    /// Storage identifier as rosbag2 names it.
    pub fn storage(&self) -> &str {
        "mcap"
    }

    /// Open-time warnings of the bag and all its files.
    pub fn open_warnings(&self) -> Vec<Warning> {
        let mut v = self.warnings.clone();
        for f in &self.files {
            v.extend(f.warnings.iter().cloned());
        }
        v
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

    /// Log times per wanted topic, from the message indexes where they are complete (no chunk
    /// is decompressed then), else by scanning.
    pub fn log_times(&self, topics: &[bool]) -> Scan<()> {
        self.scan_impl(topics, false, |_| ())
    }

    fn scan_impl<T, F>(&self, topics: &[bool], needs_payload: bool, f: F) -> Scan<T>
    where
        T: Send,
        F: Fn(&RawMessage<'_>) -> T + Sync,
    {
        let mut wanted = topics.to_vec();
        wanted.resize(self.topics.len(), false);
        let ct = |fi: usize, ch: u16| self.channel_topic.get(fi).and_then(|m| m.get(&ch)).copied();
        let plan = scan::ScanPlan {
            topics: &wanted,
            channel_topic: &ct,
            needs_payload,
            message_compression: self.message_compression,
        };
        let out = scan::scan_files(&self.files, &plan, &f);
        let mut warnings = out.warnings;
        warnings.sort();
        warnings.dedup();
        Scan {
            items: out.items,
            warnings,
        }
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

/// rosbag2 `compression_mode: FILE` writes `NAME.mcap.zstd`: decompress by streaming into memory
/// owned by this file (bounded by the file's own decompressed size, which is what the user has).
fn open_file_compressed(p: &Path) -> Result<McapFile> {
    let file = std::fs::File::open(p).map_err(|source| BagError::Io {
        path: p.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    let res = zstd::stream::read::Decoder::new(file).and_then(|mut d| d.read_to_end(&mut out));
    let mut f = McapFile::from_bytes(p, mcap_file::Bytes::Owned(out))?;
    if let Err(e) = res {
        f.warnings.push(
            Warning::new(
                "truncated",
                format!(
                    "zstd-compressed bag file is damaged ({e}); read what could be decompressed"
                ),
            )
            .file(p.display().to_string())
            .loss(),
        );
    }
    Ok(f)
}
