//! One MCAP file: its layout (chunks, loose messages, message indexes), its schemas and channels,
//! and what was damaged.
//!
//! The data section is always walked record by record (chunk bodies are jumped over), rather than
//! trusting the summary: the walk is cheap (a few thousand record headers for a large bag),
//! works on files without a summary or cut off by a crash, and sees what the summary would hide.
//! The summary is only used for schemas and channels that live inside compressed chunks, so
//! that a well-formed bag never has to be decompressed just to learn its topics.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcap::records::{op, Record};

use crate::error::WarningCode;
use crate::error::{BagError, Result, Warning};

pub(crate) const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";
/// Chunks that claim more than this uncompressed are decompressed by streaming, so a corrupt size
/// field cannot make us allocate it up front.
pub(crate) const MAX_PREALLOC: u64 = 256 << 20;
/// Default for [`crate::OpenOptions::max_chunk_bytes`]: the most a chunk may claim
/// uncompressed. rosbag2 writes chunks of a few MiB (a chunk holds at least one message, so a
/// large image or cloud can make one of tens of MiB).
pub const DEFAULT_MAX_CHUNK_BYTES: u64 = 1 << 30;

/// A place in a file, for following channel definitions: `(record offset, offset inside the
/// decompressed chunk)` for records inside a chunk, `(record offset, 0)` for top-level ones.
pub(crate) type Pos = (u64, u64);

/// Compression of an MCAP chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Uncompressed (empty compression string).
    None,
    /// Zstandard.
    Zstd,
    /// LZ4 frame.
    Lz4,
}

impl Compression {
    pub(crate) fn parse(s: &str) -> Option<Compression> {
        match s {
            "" => Some(Compression::None),
            "zstd" => Some(Compression::Zstd),
            "lz4" => Some(Compression::Lz4),
            _ => None,
        }
    }
    /// The name used in reports: `none`, `zstd` or `lz4`.
    pub fn name(&self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
        }
    }
}

/// An MCAP Schema record.
#[derive(Debug, Clone)]
pub struct SchemaRec {
    /// Schema id, unique within the file (channels refer to it).
    pub id: u16,
    /// Type name, e.g. `sensor_msgs/msg/Image`.
    pub name: String,
    /// Schema encoding, `ros2msg` or `ros2idl`.
    pub encoding: String,
    /// The definition text as recorded; may be empty.
    pub data: Arc<[u8]>,
}

/// An MCAP Channel record.
#[derive(Debug, Clone)]
pub struct ChannelRec {
    /// Channel id, unique within the file (messages refer to it).
    pub id: u16,
    /// Id of the channel's schema; 0 when it has none.
    pub schema_id: u16,
    /// Topic name.
    pub topic: String,
    /// Payload encoding, normally `cdr`.
    pub message_encoding: String,
    /// Channel metadata, e.g. `offered_qos_profiles`.
    pub metadata: BTreeMap<String, String>,
}

/// Where a chunk's message index for one channel lives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexLoc {
    pub channel_id: u16,
    /// Offset of the MessageIndex record body.
    pub body_offset: usize,
    pub body_len: usize,
}

/// What a file opened from its summary alone knows of its chunks.
#[derive(Debug, Clone)]
pub(crate) struct SummaryIndex {
    pub chunks: Vec<SummaryChunk>,
}

/// One Chunk Index record of the summary.
#[derive(Debug, Clone)]
pub(crate) struct SummaryChunk {
    /// Offset of the Chunk record, its length (whole record) and the total length of the
    /// Message Index records that follow it.
    pub offset: u64,
    pub length: u64,
    pub index_length: u64,
    pub start_ns: i64,
    pub end_ns: i64,
    /// The raw end time is at or after 2^63 ns (`end_ns` is clamped).
    pub end_clamped: bool,
    pub compression: String,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    /// Channel id to the file offset of its Message Index record.
    pub index_offsets: Vec<(u16, u64)>,
}

#[derive(Debug, Clone)]
pub(crate) struct ChunkLoc {
    pub record_offset: u64,
    /// Offset and length of the (compressed) records inside the chunk.
    pub data_offset: usize,
    pub data_len: usize,
    pub uncompressed_size: u64,
    pub uncompressed_crc: u32,
    /// The chunk header's log-time range of its messages (all channels).
    pub message_start_ns: i64,
    pub message_end_ns: i64,
    pub compression: Compression,
    /// The record was cut off by the end of the file: only a prefix of `data` exists.
    pub partial: bool,
    pub indexes: Vec<IndexLoc>,
    /// True when the message index records that follow the chunk are all present.
    pub indexes_complete: bool,
    /// The chunk claims more uncompressed bytes than the limits allow (a decompression bomb or
    /// a corrupt size): never decompressed, its messages are lost (warned at open).
    pub refused: bool,
    /// Known from the summary's Chunk Index, not from a walk of the data section (a remote
    /// file): its header is checked against the index when its bytes arrive
    /// ([`ChunkLoc::checked_crc`]), and its Message Index records' places are the summary's.
    pub from_summary: bool,
}

impl ChunkLoc {
    /// The bytes a scan of this chunk reads: its record (header and data).
    pub(crate) fn record_range(&self) -> std::ops::Range<u64> {
        self.record_offset..(self.data_offset as u64).saturating_add(self.data_len as u64)
    }

    /// The chunk's Message Index records, back to back after it.
    pub(crate) fn index_range(&self) -> Option<std::ops::Range<u64>> {
        let start = self.indexes.iter().map(|ix| ix.body_offset).min()?;
        let end = self
            .indexes
            .iter()
            .map(|ix| ix.body_offset.saturating_add(ix.body_len))
            .max()?;
        Some(start.saturating_sub(9) as u64..end as u64)
    }

    /// The CRC of the uncompressed records. A chunk known from the summary has its header
    /// read here, from the bytes fetched, and checked against the summary's Chunk Index: a
    /// disagreement is an error (the chunk is not read).
    pub(crate) fn checked_crc(&self, file: &[u8]) -> Result<u32, String> {
        if !self.from_summary {
            return Ok(self.uncompressed_crc);
        }
        let at = self.record_offset as usize;
        let body_len = u64_at(file, at + 1).ok_or("chunk header missing")?;
        let body = file
            .get(at + 9..)
            .and_then(|b| b.get(..usize::try_from(body_len).ok()?.min(b.len())))
            .ok_or("chunk header missing")?;
        let h = parse_chunk_head(body).ok_or("chunk header cannot be parsed")?;
        let agrees = file.get(at) == Some(&op::CHUNK)
            && Compression::parse(&h.compression) == Some(self.compression)
            && h.uncompressed_size == self.uncompressed_size
            && h.compressed_size == self.data_len as u64
            && at + 9 + h.data_start == self.data_offset;
        if !agrees {
            return Err("the chunk's header disagrees with the summary's Chunk Index".into());
        }
        Ok(h.uncompressed_crc)
    }

    /// The chunk's (compressed) records in the file, if they lie inside it.
    pub(crate) fn data<'a>(&self, file: &'a [u8]) -> Option<&'a [u8]> {
        self.data_offset
            .checked_add(self.data_len)
            .and_then(|end| file.get(self.data_offset..end))
    }

    /// Drops the mapped pages of this chunk's message index records (they follow the chunk
    /// back to back): one call for all of them, not one per record.
    pub(crate) fn release_indexes(&self, bytes: &Bytes) {
        let start = self.indexes.iter().map(|ix| ix.body_offset).min();
        let end = self
            .indexes
            .iter()
            .map(|ix| ix.body_offset.saturating_add(ix.body_len))
            .max();
        if let (Some(start), Some(end)) = (start, end) {
            bytes.release(start, end - start);
        }
    }
}

/// A message record outside any chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LooseLoc {
    pub body_offset: usize,
    pub body_len: usize,
}

pub(crate) enum Bytes {
    Map(memmap2::Mmap),
    /// A remote object: present where a read plan fetched it (see `bagscope-source`).
    Remote(std::sync::Arc<bagscope_source::SparseImage>),
    /// Bytes in memory (unit tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Owned(Vec<u8>),
}

impl Bytes {
    /// Drops the mapped pages of `[offset, offset + len)` from the process's resident set once
    /// they have been read (they stay in the page cache). Without it a full scan's resident
    /// memory grew by the whole bag's size, which users and cgroup limits count.
    pub(crate) fn release(&self, offset: usize, len: usize) {
        if let Bytes::Remote(img) = self {
            img.release(offset as u64, len as u64);
            return;
        }
        #[cfg(unix)]
        if let Bytes::Map(m) = self {
            // SAFETY: the map is a read-only shared file mapping: MADV_DONTNEED only makes the
            // next access fault the same file pages back in; no slice sees different bytes.
            // The range is clamped to the map.
            let end = offset.saturating_add(len).min(m.len());
            if offset < end {
                let _ = unsafe {
                    m.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        offset,
                        end - offset,
                    )
                };
            }
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Remote(img) => img.bytes(),
            Bytes::Owned(v) => v,
        }
    }
}

/// One opened (memory-mapped) MCAP file with its schemas, channels and where its messages are.
pub struct McapFile {
    /// The file as the bag names it (what warnings and errors show).
    pub path: PathBuf,
    pub(crate) bytes: Bytes,
    /// Schema records by id.
    pub schemas: BTreeMap<u16, SchemaRec>,
    /// Channel records by id (the first definition of each id).
    pub channels: BTreeMap<u16, ChannelRec>,
    pub(crate) chunks: Vec<ChunkLoc>,
    pub(crate) loose: Vec<LooseLoc>,
    /// Number of chunks by compression name (`none`, `zstd`, `lz4`).
    pub compression_counts: BTreeMap<String, usize>,
    /// Per compression name: the chunks' compressed and uncompressed record bytes, as their
    /// headers (or the summary's Chunk Indexes) state them.
    pub compression_bytes: BTreeMap<String, (u64, u64)>,
    /// The Header record's library (the writer, e.g. `mcap-cpp ...` or `rosbag2 ...`); empty
    /// when absent.
    pub library: String,
    /// The file's Metadata records (name, key/value map), in file order (rosbag2 writes one
    /// named `rosbag2` holding its bag metadata).
    pub metadata_records: Vec<(String, BTreeMap<String, String>)>,
    /// Where the summary's Metadata Index records say Metadata records lie (offset, length).
    pub(crate) metadata_offsets: Vec<(usize, usize)>,
    /// Whether a summary section was found and read.
    pub has_summary: bool,
    /// Message count from the Statistics record, when the file has one.
    pub stats_message_count: Option<u64>,
    /// Each chunk's log-time range as the summary's Chunk Index records give it, by chunk
    /// record offset: a second, independent copy of the chunk headers' ranges.
    pub(crate) summary_chunk_times: BTreeMap<u64, (i64, i64)>,
    /// Per-channel message counts of the summary's Statistics record.
    pub(crate) stats_channel_counts: Option<BTreeMap<u16, u64>>,
    /// Set when the file was opened from its summary alone ([`McapFile::open_from_summary`]):
    /// the data section was not walked, `chunks` is empty, and only the summary's facts exist.
    pub(crate) summary_only: Option<SummaryIndex>,
    /// The profile of the Header record (`ros2` for rosbag2); empty when absent.
    pub profile: String,
    /// What went wrong while opening (cut file, bad CRC, overlapping chunks, ...).
    pub warnings: Vec<Warning>,
    /// Most uncompressed bytes a chunk may claim ([`crate::OpenOptions::max_chunk_bytes`]).
    pub(crate) max_chunk_bytes: u64,
    /// Every channel definition found in the data section with its place, while opening.
    positioned_channels: Vec<(Pos, ChannelRec)>,
    /// Two definitions of one channel id disagree (the MCAP spec forbids it).
    pub(crate) channel_conflict: bool,
    /// Channel ids defined more than once with different topics, schemas or encodings: each
    /// definition with where it starts, in file order. Messages follow the definition before
    /// them (as the record order says, and as a streaming reader sees them).
    pub(crate) channel_timeline: BTreeMap<u16, Vec<(Pos, ChannelRec)>>,
    /// The first read of a remote file that failed for good (the scan that met it stopped).
    read_failure: std::sync::Mutex<Option<BagError>>,
}

impl std::fmt::Debug for McapFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapFile")
            .field("path", &self.path)
            .field("size", &self.bytes.len())
            .field("chunks", &self.chunks.len())
            .field("channels", &self.channels.len())
            .finish()
    }
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The fixed part of a chunk record body, parsed by hand because a truncated chunk must still
/// yield its header (the mcap crate refuses a chunk whose data is shorter than declared).
struct ChunkHead {
    uncompressed_size: u64,
    uncompressed_crc: u32,
    compression: String,
    compressed_size: u64,
    data_start: usize,
}

fn parse_chunk_head(body: &[u8]) -> Option<ChunkHead> {
    let uncompressed_size = u64_at(body, 16)?;
    let uncompressed_crc = u32_at(body, 24)?;
    let clen = u32_at(body, 28)? as usize;
    let cstart = 32usize;
    let compression = body.get(cstart..cstart.checked_add(clen)?)?;
    let compression = String::from_utf8_lossy(compression).into_owned();
    let compressed_size = u64_at(body, cstart + clen)?;
    Some(ChunkHead {
        uncompressed_size,
        uncompressed_crc,
        compression,
        compressed_size,
        data_start: cstart + clen + 8,
    })
}

impl McapFile {
    /// Opens and walks `path`, refusing chunks over [`DEFAULT_MAX_CHUNK_BYTES`] uncompressed.
    pub fn open(path: &Path) -> Result<McapFile> {
        Self::open_limited(path, DEFAULT_MAX_CHUNK_BYTES)
    }

    /// [`McapFile::open`] refusing chunks that claim more than `max_chunk_bytes` uncompressed
    /// (or an impossible compression ratio).
    pub fn open_limited(path: &Path, max_chunk_bytes: u64) -> Result<McapFile> {
        let map = Self::map(path)?;
        // The open walks record headers spread over the whole file: readahead would pull in
        // the chunk data it skips (on a cold cache). Scans then read sequentially.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        let f = Self::from_bytes_limited(path, Bytes::Map(map), max_chunk_bytes)?;
        #[cfg(unix)]
        if let Bytes::Map(m) = &f.bytes {
            let _ = m.advise(memmap2::Advice::Normal);
        }
        Ok(f)
    }

    /// The file, memory-mapped (an empty file is an error).
    fn map(path: &Path) -> Result<memmap2::Mmap> {
        let file = std::fs::File::open(path).map_err(|source| BagError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let len = file
            .metadata()
            .map_err(|source| BagError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        if len == 0 {
            return Err(BagError::Empty {
                path: path.to_path_buf(),
            });
        }
        // SAFETY: the map is read-only; a bag being rewritten under us is outside our contract,
        // the same as for every mmap-based reader (mcap CLI, ripgrep).
        unsafe { memmap2::Mmap::map(&file) }.map_err(|source| BagError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A file of which nothing has been read yet.
    pub(crate) fn unread(path: &Path, bytes: Bytes) -> McapFile {
        McapFile {
            path: path.to_path_buf(),
            bytes,
            schemas: BTreeMap::new(),
            channels: BTreeMap::new(),
            chunks: Vec::new(),
            loose: Vec::new(),
            compression_counts: BTreeMap::new(),
            compression_bytes: BTreeMap::new(),
            library: String::new(),
            metadata_records: Vec::new(),
            metadata_offsets: Vec::new(),
            has_summary: false,
            stats_message_count: None,
            summary_chunk_times: BTreeMap::new(),
            stats_channel_counts: None,
            summary_only: None,
            profile: String::new(),
            warnings: Vec::new(),
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
            positioned_channels: Vec::new(),
            channel_conflict: false,
            channel_timeline: BTreeMap::new(),
            read_failure: std::sync::Mutex::new(None),
        }
    }

    /// Keeps the first read failure of this file (see [`McapFile::take_read_failure`]).
    pub(crate) fn note_read_failure(&self, e: BagError) {
        crate::remote::note_process_failure(&e);
        let mut g = self.read_failure.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert(e);
    }

    /// The read of this (remote) file that failed for good since the last call, if any: the
    /// scan that met it stopped there and reported the rest as lost.
    pub fn take_read_failure(&self) -> Option<BagError> {
        self.read_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    #[cfg(test)]
    pub(crate) fn from_bytes(path: &Path, bytes: Bytes) -> Result<McapFile> {
        Self::from_bytes_limited(path, bytes, DEFAULT_MAX_CHUNK_BYTES)
    }

    pub(crate) fn from_bytes_limited(
        path: &Path,
        bytes: Bytes,
        max_chunk_bytes: u64,
    ) -> Result<McapFile> {
        if bytes.len() < MAGIC.len() && MAGIC.starts_with(&bytes[..]) {
            // Nothing to recover, but "not MCAP" would send the user looking for the wrong
            // problem: this is the start of one, cut off.
            return Err(BagError::CutInMagic {
                path: path.to_path_buf(),
                len: bytes.len(),
            });
        }
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(BagError::NotMcap {
                path: path.to_path_buf(),
            });
        }
        let mut f = McapFile::unread(path, bytes);
        f.max_chunk_bytes = max_chunk_bytes;
        f.walk_data_section();
        f.read_summary();
        f.discover_chunk_channels();
        f.build_channel_timeline();
        Ok(f)
    }

    /// Size of the file, bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Size plus checksums of the first and last 64 KiB (header, first chunk; summary, footer):
    /// two files with equal identities are copies of one recording.
    pub(crate) fn identity(&self) -> (usize, u32, u32) {
        let n = self.bytes.len();
        // A remote object: its size and version (ETag; equal for copies of one upload).
        if let Bytes::Remote(img) = &self.bytes {
            // Without one (a plain HTTP server may send none), its URL: never a duplicate.
            let tag = img.object().version_tag();
            return match tag {
                "" => (
                    n,
                    crc32fast::hash(img.object().url().as_str().as_bytes()),
                    1,
                ),
                t => (n, crc32fast::hash(t.as_bytes()), 0),
            };
        }
        let w = n.min(64 << 10);
        (
            n,
            crc32fast::hash(&self.bytes[..w]),
            crc32fast::hash(&self.bytes[n - w..]),
        )
    }

    /// Number of chunks (from the summary's Chunk Indexes for a file opened from its summary alone).
    pub fn chunk_count(&self) -> usize {
        match &self.summary_only {
            Some(s) => s.chunks.len(),
            None => self.chunks.len(),
        }
    }

    /// Whether the file was opened from its summary alone (see [`McapFile::open_from_summary`]).
    pub fn is_summary_only(&self) -> bool {
        self.summary_only.is_some()
    }

    /// Opens from the footer and summary only, without walking the data section (what `mcap
    /// info` and `ros2 bag info` do): for `info --fast` on bags too large to walk quickly.
    /// `None` (open normally then) unless the file has a footer, a summary with a Statistics
    /// record holding per-channel counts, and a Chunk Index for its chunks.
    pub fn open_from_summary(path: &Path) -> Result<Option<McapFile>> {
        Self::open_from_summary_limited(path, DEFAULT_MAX_CHUNK_BYTES)
    }

    /// [`McapFile::open_from_summary`]; `None` too when a chunk claims more than the limits
    /// allow (the full open names it).
    pub fn open_from_summary_limited(
        path: &Path,
        max_chunk_bytes: u64,
    ) -> Result<Option<McapFile>> {
        let bytes = Bytes::Map(Self::map(path)?);
        if bytes.len() < MAGIC.len() * 2 + 29
            || &bytes[..MAGIC.len()] != MAGIC
            || &bytes[bytes.len() - MAGIC.len()..] != MAGIC
        {
            return Ok(None);
        }
        let mut f = McapFile::unread(path, bytes);
        f.max_chunk_bytes = max_chunk_bytes;
        f.read_header_record();
        f.read_summary();
        if !f.has_summary || !f.warnings.is_empty() || f.channel_conflict {
            return Ok(None);
        }
        let chunks = f.summary_chunks();
        let complete = f.stats_channel_counts.is_some()
            && (!chunks.is_empty() || f.stats_message_count == Some(0));
        // Channels and schemas live in the data section unless the summary repeats them: every
        // channel the statistics or chunk indexes name must be known, with its schema.
        let known = |ch: &u16| {
            f.channels
                .get(ch)
                .is_some_and(|c| c.schema_id == 0 || f.schemas.contains_key(&c.schema_id))
        };
        let all_known = f
            .stats_channel_counts
            .as_ref()
            .is_some_and(|m| m.keys().all(known))
            && chunks
                .iter()
                .all(|c| c.index_offsets.iter().all(|(ch, _)| known(ch)));
        let refused = chunks.iter().any(|c| {
            Compression::parse(&c.compression).is_some_and(|comp| {
                f.chunk_refusal(comp, c.uncompressed_size, c.compressed_size)
                    .is_some()
            })
        });
        if !complete || !all_known || refused {
            return Ok(None);
        }
        let clamped = chunks.iter().filter(|c| c.end_clamped).count();
        if clamped > 0 {
            f.warn_clamped(clamped, 0);
        }
        for c in &chunks {
            // Named as the walk names them; an unknown one means the file is not for us.
            let Some(name) = Compression::parse(&c.compression).map(|c| c.name().to_string())
            else {
                return Ok(None);
            };
            *f.compression_counts.entry(name.clone()).or_default() += 1;
            let b = f.compression_bytes.entry(name).or_default();
            b.0 = b.0.saturating_add(c.compressed_size);
            b.1 = b.1.saturating_add(c.uncompressed_size);
        }
        // The data section is not walked: its Metadata records are read where the summary
        // says they are.
        f.read_indexed_metadata();
        f.summary_only = Some(SummaryIndex { chunks });
        Ok(Some(f))
    }

    /// The Header record right after the magic (profile and library), when the data section
    /// is not walked.
    pub(crate) fn read_header_record(&mut self) {
        let pos = MAGIC.len();
        if self.bytes.get(pos) != Some(&op::HEADER) {
            return;
        }
        let Some(len) = u64_at(&self.bytes, pos + 1) else {
            return;
        };
        let body = usize::try_from(len)
            .ok()
            .and_then(|l| self.bytes.get(pos + 9..(pos + 9).checked_add(l)?));
        if let Some(Ok(Record::Header(h))) = body.map(|b| mcap::read::parse_record(op::HEADER, b)) {
            self.profile = h.profile;
            self.library = h.library;
        }
    }

    /// Reads the Metadata records where the summary's Metadata Index records say they are
    /// (the data section is not walked).
    pub(crate) fn read_indexed_metadata(&mut self) {
        for (at, _) in std::mem::take(&mut self.metadata_offsets) {
            let f = &mut *self;
            let Some(len) = u64_at(&f.bytes, at + 1).and_then(|l| usize::try_from(l).ok()) else {
                continue;
            };
            let body = (at + 9)
                .checked_add(len)
                .and_then(|end| f.bytes.get(at + 9..end));
            if f.bytes.get(at) == Some(&op::METADATA) {
                if let Some(Ok(Record::Metadata(m))) =
                    body.map(|b| mcap::read::parse_record(op::METADATA, b))
                {
                    f.metadata_records.push((m.name, m.metadata));
                }
            }
        }
    }

    /// The summary's Chunk Index records.
    pub(crate) fn summary_chunks(&self) -> Vec<SummaryChunk> {
        let mut out = Vec::new();
        let len = self.bytes.len();
        let footer = len - MAGIC.len() - 29;
        let Some(mut pos) = u64_at(&self.bytes, footer + 9).and_then(|p| usize::try_from(p).ok())
        else {
            return out;
        };
        // Every offset comes from the file: checked arithmetic throughout.
        while pos.checked_add(9).is_some_and(|e| e <= footer) {
            let opcode = self.bytes[pos];
            let Some(rlen) = u64_at(&self.bytes, pos + 1).and_then(|l| usize::try_from(l).ok())
            else {
                break;
            };
            let Some(end) = (pos + 9).checked_add(rlen).filter(|&e| e <= footer) else {
                break;
            };
            if opcode == op::CHUNK_INDEX {
                if let Ok(Record::ChunkIndex(ci)) =
                    mcap::read::parse_record(op::CHUNK_INDEX, &self.bytes[pos + 9..end])
                {
                    out.push(SummaryChunk {
                        offset: ci.chunk_start_offset,
                        length: ci.chunk_length,
                        index_length: ci.message_index_length,
                        start_ns: crate::scan::to_ns(ci.message_start_time),
                        end_ns: crate::scan::to_ns(ci.message_end_time),
                        end_clamped: ci.message_end_time > i64::MAX as u64,
                        compression: ci.compression.clone(),
                        compressed_size: ci.compressed_size,
                        uncompressed_size: ci.uncompressed_size,
                        index_offsets: ci
                            .message_index_offsets
                            .iter()
                            .map(|(&ch, &off)| (ch, off))
                            .collect(),
                    });
                }
            }
            pos = end;
        }
        out
    }

    /// The definition of channel `id` that holds at `pos` (the first one before every
    /// definition).
    pub(crate) fn channel_definition_at(&self, id: u16, pos: Pos) -> Option<&ChannelRec> {
        match self.channel_timeline.get(&id) {
            Some(defs) => {
                let k = defs.partition_point(|(p, _)| *p <= pos);
                defs.get(k.saturating_sub(1)).map(|(_, c)| c)
            }
            None => self.channels.get(&id),
        }
    }

    fn display(&self) -> String {
        self.path.display().to_string()
    }

    fn warn(&mut self, w: Warning) {
        let file = self.display();
        self.warnings.push(w.file(file));
    }

    /// Why a chunk must not be decompressed, if it must not: it claims more than the limit
    /// uncompressed, or (above a floor) more than any real compression ratio gives.
    /// Uncompressed chunks are read in place, whatever they claim.
    pub(crate) fn chunk_refusal(
        &self,
        compression: Compression,
        uncompressed_bytes: u64,
        compressed_bytes: u64,
    ) -> Option<String> {
        use crate::filezstd::{MAX_RATIO, RATIO_FLOOR_BYTES};
        if compression == Compression::None {
            return None;
        }
        if uncompressed_bytes > self.max_chunk_bytes {
            return Some(format!(
                "claims {uncompressed_bytes} bytes uncompressed, over the limit of {} (max_chunk_bytes, env BAGSCOPE_MAX_CHUNK_BYTES)",
                self.max_chunk_bytes
            ));
        }
        if uncompressed_bytes > RATIO_FLOOR_BYTES
            && uncompressed_bytes / MAX_RATIO > compressed_bytes
        {
            return Some(format!(
                "claims {uncompressed_bytes} bytes uncompressed from {compressed_bytes} compressed, over {MAX_RATIO}x (a decompression bomb?)"
            ));
        }
        None
    }

    /// One warning for the log times at or after 2^63 ns that a file's chunk headers (or Chunk
    /// Indexes) and loose messages show: they are held as `i64::MAX`.
    pub(crate) fn warn_clamped(&mut self, chunks: usize, loose: usize) {
        let what = match (chunks, loose) {
            (0, n) => format!("{n} message(s) outside chunks have"),
            (c, 0) => format!("{c} chunk(s) hold messages with"),
            (c, n) => format!("{c} chunk(s) and {n} message(s) outside chunks hold"),
        };
        self.warn(Warning::new(
            WarningCode::LogTimeOutOfRange,
            format!(
                "{what} log times at or after 2^63 ns (past the year 2262): they are read as {} ns, the largest time bagscope holds",
                i64::MAX
            ),
        ));
    }

    /// Adds a schema, channel or header record. `pos` is where a data-section record lies
    /// (`None`: the summary). A channel id defined again differently is noted, not followed
    /// here ([`McapFile::build_channel_timeline`]).
    fn add_record(&mut self, rec: Record<'_>, pos: Option<Pos>) {
        match rec {
            Record::Schema { header, data } => {
                self.schemas.entry(header.id).or_insert(SchemaRec {
                    id: header.id,
                    name: header.name,
                    encoding: header.encoding,
                    data: Arc::from(data.as_ref()),
                });
            }
            Record::Channel(c) => self.add_channel(
                ChannelRec {
                    id: c.id,
                    schema_id: c.schema_id,
                    topic: c.topic,
                    message_encoding: c.message_encoding,
                    metadata: c.metadata,
                },
                pos,
            ),
            Record::Header(h) => {
                self.profile = h.profile;
                self.library = h.library;
            }
            Record::Metadata(m) => self.metadata_records.push((m.name, m.metadata)),
            _ => {}
        }
    }

    fn add_channel(&mut self, c: ChannelRec, pos: Option<Pos>) {
        if let Some(prev) = self.channels.get(&c.id) {
            if !same_channel(prev, &c) {
                self.channel_conflict = true;
            }
        } else {
            self.channels.insert(c.id, c.clone());
        }
        if let Some(pos) = pos {
            self.positioned_channels.push((pos, c));
        }
    }

    /// Parses and adds a schema, channel or header record; a channel whose strings are not
    /// UTF-8 is read with its invalid bytes replaced (its messages are then read under that
    /// name, with a warning) rather than dropped with them.
    fn add_definition(&mut self, opcode: u8, body: &[u8], pos: Option<Pos>, at: u64) {
        match mcap::read::parse_record(opcode, body) {
            Ok(r) => self.add_record(r, pos),
            Err(e) => match (opcode == op::CHANNEL)
                .then(|| parse_channel_lossy(body))
                .flatten()
            {
                Some(c) => {
                    self.warn(
                        Warning::new(
                            WarningCode::InvalidUtf8,
                            format!(
                                "channel {} at byte {at} has text that is not UTF-8: read with the invalid bytes replaced",
                                c.id
                            ),
                        )
                        .topic(&c.topic)
                        .offset(at),
                    );
                    self.add_channel(c, pos);
                }
                None => self.warn(
                    Warning::new(
                        WarningCode::CorruptRecord,
                        format!(
                            "record (opcode 0x{opcode:02x}) at byte {at} cannot be parsed: {e}"
                        ),
                    )
                    .offset(at),
                ),
            },
        }
    }

    /// Where two definitions of a channel id disagree, records which definition holds from
    /// where on, and warns once per id. Then no chunk's message indexes are trusted (they name
    /// channel ids, not definitions): scans read the messages and follow the definitions.
    fn build_channel_timeline(&mut self) {
        if !self.channel_conflict {
            self.positioned_channels = Vec::new();
            return;
        }
        let mut defs = std::mem::take(&mut self.positioned_channels);
        defs.sort_by_key(|(p, _)| *p);
        let mut by_id: BTreeMap<u16, Vec<(Pos, ChannelRec)>> = BTreeMap::new();
        for (p, c) in defs {
            let v = by_id.entry(c.id).or_default();
            if v.last().is_none_or(|(_, l)| !same_channel(l, &c)) {
                v.push((p, c));
            }
        }
        by_id.retain(|_, v| v.len() > 1);
        for (id, v) in &by_id {
            let names: Vec<String> = v
                .iter()
                .map(|((at, _), c)| format!("'{}' from byte {at}", c.topic))
                .collect();
            let w = Warning::new(
                WarningCode::ChannelRedefined,
                format!(
                    "channel {id} is defined {} times with different topics, schemas or encodings ({}), which MCAP forbids: each message is read under the definition before it",
                    v.len(),
                    names.join(", ")
                ),
            )
            .topic(&v[0].1.topic);
            self.warn(w);
            // The map of first definitions names what the file starts with.
            self.channels.insert(*id, v[0].1.clone());
        }
        if !by_id.is_empty() {
            for c in &mut self.chunks {
                c.indexes_complete = false;
            }
        }
        self.channel_timeline = by_id;
    }

    /// Walks the top-level records of the data section. Never reads past the end: every length
    /// is checked against what is left of the file first.
    fn walk_data_section(&mut self) {
        let len = self.bytes.len();
        let mut pos = MAGIC.len();
        let mut last_log_end: Option<u64> = None;
        let mut out_of_order = false;
        let mut cut = false;
        let (mut clamped_chunks, mut clamped_loose) = (0usize, 0usize);
        loop {
            if pos == len {
                self.warn(
                    Warning::new(
                        WarningCode::Truncated,
                        format!("file ends at byte {len} before its data section is closed (no DataEnd/Footer): recorder stopped mid-write?"),
                    )
                    .offset(pos as u64)
                    .loss(),
                );
                cut = true;
                break;
            }
            if pos + 9 > len {
                self.warn(
                    Warning::new(
                        WarningCode::Truncated,
                        format!("file ends inside a record header at byte {pos} of {len}"),
                    )
                    .offset(pos as u64)
                    .loss(),
                );
                cut = true;
                break;
            }
            let opcode = self.bytes[pos];
            let rlen = u64_at(&self.bytes, pos + 1).unwrap_or(u64::MAX);
            let body_start = pos + 9;
            let avail = (len - body_start) as u64;
            if rlen > avail {
                if opcode == op::CHUNK {
                    self.add_partial_chunk(pos, body_start);
                }
                self.warn(
                    Warning::new(
                        WarningCode::Truncated,
                        format!(
                            "record (opcode 0x{opcode:02x}) at byte {pos} claims {rlen} bytes but only {avail} remain: file cut off"
                        ),
                    )
                    .offset(pos as u64)
                    .loss(),
                );
                cut = true;
                break;
            }
            let body_end = body_start + rlen as usize;
            match opcode {
                op::FOOTER | op::DATA_END => break,
                op::CHUNK => {
                    let body = &self.bytes[body_start..body_end];
                    match parse_chunk_head(body) {
                        // checked: a corrupt size near u64::MAX must not wrap around.
                        Some(h)
                            if (h.data_start as u64)
                                .checked_add(h.compressed_size)
                                .is_some_and(|e| e <= body.len() as u64) =>
                        {
                            let start = u64_at(body, 0).unwrap_or(0);
                            let end = u64_at(body, 8).unwrap_or(0);
                            if let Some(prev) = last_log_end {
                                if start < prev && end > 0 {
                                    out_of_order = true;
                                }
                            }
                            last_log_end = Some(end.max(last_log_end.unwrap_or(0)));
                            if end > i64::MAX as u64 {
                                clamped_chunks += 1;
                            }
                            match Compression::parse(&h.compression) {
                                Some(c) => {
                                    *self
                                        .compression_counts
                                        .entry(c.name().to_string())
                                        .or_default() += 1;
                                    let b = self
                                        .compression_bytes
                                        .entry(c.name().to_string())
                                        .or_default();
                                    b.0 = b.0.saturating_add(h.compressed_size);
                                    b.1 = b.1.saturating_add(h.uncompressed_size);
                                    let refused = self.refuse_chunk(
                                        pos,
                                        c,
                                        h.uncompressed_size,
                                        h.compressed_size,
                                    );
                                    self.chunks.push(ChunkLoc {
                                        record_offset: pos as u64,
                                        data_offset: body_start + h.data_start,
                                        data_len: h.compressed_size as usize,
                                        uncompressed_size: h.uncompressed_size,
                                        uncompressed_crc: h.uncompressed_crc,
                                        message_start_ns: crate::scan::to_ns(start),
                                        message_end_ns: crate::scan::to_ns(end),
                                        compression: c,
                                        partial: false,
                                        indexes: Vec::new(),
                                        indexes_complete: false,
                                        refused,
                                        from_summary: false,
                                    });
                                }
                                None => self.warn(
                                    Warning::new(
                                        WarningCode::UnsupportedCompression,
                                        format!(
                                            "chunk at byte {pos} uses unknown compression '{}': its messages are skipped",
                                            h.compression
                                        ),
                                    )
                                    .offset(pos as u64)
                                    .loss(),
                                ),
                            }
                        }
                        _ => self.warn(
                            Warning::new(
                                WarningCode::CorruptChunk,
                                format!(
                                    "chunk record at byte {pos} has an invalid header: skipped"
                                ),
                            )
                            .offset(pos as u64)
                            .loss(),
                        ),
                    }
                }
                op::MESSAGE_INDEX => {
                    let body = &self.bytes[body_start..body_end];
                    if let (Some(ch), Some(last)) = (u16_at(body, 0), self.chunks.last_mut()) {
                        last.indexes.push(IndexLoc {
                            channel_id: ch,
                            body_offset: body_start,
                            body_len: rlen as usize,
                        });
                    }
                }
                op::MESSAGE => {
                    if rlen < 22 {
                        self.warn(
                            Warning::new(
                                WarningCode::CorruptRecord,
                                format!("message record at byte {pos} is shorter than its header"),
                            )
                            .offset(pos as u64)
                            .loss(),
                        );
                    } else {
                        let log = u64_at(&self.bytes, body_start + 6).unwrap_or(0);
                        if log > i64::MAX as u64 {
                            clamped_loose += 1;
                        }
                        if last_log_end.is_some_and(|p| log < p) {
                            out_of_order = true;
                        }
                        last_log_end = Some(log.max(last_log_end.unwrap_or(0)));
                        self.loose.push(LooseLoc {
                            body_offset: body_start,
                            body_len: rlen as usize,
                        });
                    }
                }
                op::SCHEMA | op::CHANNEL | op::HEADER | op::METADATA => {
                    // The map outlives `self`'s borrow only as a copy: definitions are small.
                    let body = self.bytes[body_start..body_end].to_vec();
                    self.add_definition(opcode, &body, Some((pos as u64, 0)), pos as u64);
                }
                _ => {}
            }
            pos = body_end;
        }
        self.mark_index_completeness();
        if clamped_chunks + clamped_loose > 0 {
            self.warn_clamped(clamped_chunks, clamped_loose);
        }
        if cut {
            // The index records after the last complete chunk may be missing some channels.
            if let Some(last) = self.chunks.iter_mut().rev().find(|c| !c.partial) {
                last.indexes_complete = false;
            }
        }
        if out_of_order {
            self.warn(Warning::new(
                WarningCode::LogTimeOutOfOrder,
                "log times are not in order across chunks/records; messages are re-sorted by log time",
            ));
        }
    }

    /// A chunk's message indexes are trusted only when the chunk's record is complete and each
    /// index record parses; otherwise the chunk is decompressed to list its messages.
    fn mark_index_completeness(&mut self) {
        for c in &mut self.chunks {
            c.indexes_complete = !c.partial
                && !c.indexes.is_empty()
                && c.indexes.iter().all(|ix| {
                    u32_at(&self.bytes, ix.body_offset + 2)
                        .is_some_and(|n| 6 + n as usize == ix.body_len && n % 16 == 0)
                });
        }
    }

    fn add_partial_chunk(&mut self, record_offset: usize, body_start: usize) {
        let body = &self.bytes[body_start..];
        let Some(h) = parse_chunk_head(body) else {
            return;
        };
        let Some(c) = Compression::parse(&h.compression) else {
            return;
        };
        let data_offset = body_start + h.data_start;
        if data_offset >= self.bytes.len() {
            return;
        }
        let data_len = (self.bytes.len() - data_offset).min(h.compressed_size as usize);
        let message_start_ns = crate::scan::to_ns(u64_at(body, 0).unwrap_or(0));
        let message_end_ns = crate::scan::to_ns(u64_at(body, 8).unwrap_or(0));
        let refused = self.refuse_chunk(record_offset, c, h.uncompressed_size, h.compressed_size);
        self.chunks.push(ChunkLoc {
            record_offset: record_offset as u64,
            data_offset,
            data_len,
            uncompressed_size: h.uncompressed_size,
            uncompressed_crc: h.uncompressed_crc,
            message_start_ns,
            message_end_ns,
            compression: c,
            partial: true,
            indexes: Vec::new(),
            indexes_complete: false,
            refused,
            from_summary: false,
        });
    }

    /// Whether the chunk at `record_offset` must not be decompressed; warns if so.
    pub(crate) fn refuse_chunk(
        &mut self,
        record_offset: usize,
        compression: Compression,
        uncompressed_bytes: u64,
        compressed_bytes: u64,
    ) -> bool {
        let Some(why) = self.chunk_refusal(compression, uncompressed_bytes, compressed_bytes)
        else {
            return false;
        };
        self.warn(
            Warning::new(
                WarningCode::DecompressionLimit,
                format!(
                    "chunk at byte {record_offset} {why}: not decompressed, its messages are lost"
                ),
            )
            .offset(record_offset as u64)
            .loss(),
        );
        true
    }

    /// Reads schemas, channels and statistics from the summary section, if the footer points at
    /// one. Damage here only costs speed (we fall back to the chunks), so it is a plain warning.
    pub(crate) fn read_summary(&mut self) {
        let len = self.bytes.len();
        if len < MAGIC.len() * 2 + 29 || &self.bytes[len - 8..] != MAGIC {
            // Cut after the data section (the recorder died writing the summary): every
            // message is there, but the file is still a cut file, and a user or script that
            // checks a recording must hear so (exit 3), as for any other cut.
            if !self.warnings.iter().any(|w| w.data_loss) {
                self.warn(
                    Warning::new(
                        WarningCode::Truncated,
                        format!(
                            "file ends at byte {len} without a footer and the closing magic (cut short after its data section: the recorder stopped while writing the summary?): every message was read, the summary (chunk indexes, statistics) is missing; `mcap recover` rewrites it"
                        ),
                    )
                    .offset(len as u64)
                    .loss(),
                );
            }
            return;
        }
        let footer = len - 8 - 29;
        if self.bytes[footer] != op::FOOTER {
            return;
        }
        let summary_start = u64_at(&self.bytes, footer + 9).unwrap_or(0) as usize;
        if summary_start == 0 {
            return;
        }
        if summary_start >= footer {
            self.warn(
                Warning::new(
                    WarningCode::CorruptSummary,
                    format!("footer points at a summary at byte {summary_start}, past the footer itself; summary ignored"),
                )
                .offset(footer as u64),
            );
            return;
        }
        let mut pos = summary_start;
        let mut records = Vec::new();
        while pos + 9 <= footer {
            let opcode = self.bytes[pos];
            let rlen = u64_at(&self.bytes, pos + 1).unwrap_or(u64::MAX);
            if rlen > (footer - pos - 9) as u64 {
                self.warn(
                    Warning::new(
                        WarningCode::CorruptSummary,
                        format!("summary record at byte {pos} overruns the footer; rest of the summary ignored"),
                    )
                    .offset(pos as u64),
                );
                break;
            }
            let body = &self.bytes[pos + 9..pos + 9 + rlen as usize];
            if opcode == op::METADATA_INDEX {
                if let (Some(at), Some(len)) = (
                    u64_at(body, 0).and_then(|a| usize::try_from(a).ok()),
                    u64_at(body, 8).and_then(|a| usize::try_from(a).ok()),
                ) {
                    self.metadata_offsets.push((at, len));
                }
            }
            if opcode == op::CHUNK_INDEX {
                // message_start_time, message_end_time, chunk_start_offset lead the record.
                if let (Some(a), Some(b), Some(at)) =
                    (u64_at(body, 0), u64_at(body, 8), u64_at(body, 16))
                {
                    self.summary_chunk_times
                        .insert(at, (crate::scan::to_ns(a), crate::scan::to_ns(b)));
                }
            }
            // Strictly: text that is not UTF-8 here is damage to the summary (the definitions in
            // the data section are then read instead), not a name to take.
            if matches!(opcode, op::SCHEMA | op::CHANNEL | op::STATISTICS) {
                match mcap::read::parse_record(opcode, body) {
                    Ok(r) => records.push(r.into_owned()),
                    Err(e) => {
                        self.warn(
                            Warning::new(
                                WarningCode::CorruptSummary,
                                format!("summary record at byte {pos} cannot be parsed: {e}"),
                            )
                            .offset(pos as u64),
                        );
                    }
                }
            }
            pos += 9 + rlen as usize;
        }
        self.has_summary = true;
        for r in records {
            if let Record::Statistics(s) = &r {
                self.stats_message_count = Some(s.message_count);
                self.stats_channel_counts = Some(s.channel_message_counts.clone());
            }
            self.add_record(r, None);
        }
    }

    /// Channels defined only inside chunks (files without a summary) are found by decompressing
    /// the chunks that may hold them, once, in file order.
    fn discover_chunk_channels(&mut self) {
        let known: HashSet<u16> = self.channels.keys().copied().collect();
        let needs = |c: &ChunkLoc| {
            !c.refused
                && (!c.indexes_complete
                    || c.indexes.iter().any(|ix| !known.contains(&ix.channel_id)))
        };
        let mut done = vec![false; self.chunks.len()];
        let mut dec = crate::scan::Decoder::default();
        // A second round reads every other chunk once two definitions of a channel disagree:
        // following them needs every definition's place.
        for all in [false, true] {
            if all && !self.channel_conflict {
                break;
            }
            let mut found = Vec::new();
            for (i, c) in self.chunks.iter().enumerate() {
                if done[i] || c.refused || !(all || needs(c)) {
                    continue;
                }
                done[i] = true;
                let Ok(buf) = dec.decompress(&self.bytes, c) else {
                    continue; // reported by the scan that reads this chunk
                };
                crate::scan::walk_chunk_records(buf, |opcode, body| {
                    if opcode == op::SCHEMA || opcode == op::CHANNEL {
                        let at = body.as_ptr() as usize - buf.as_ptr() as usize - 9;
                        found.push((opcode, body.to_vec(), (c.record_offset, at as u64)));
                    }
                });
                dec.release_large();
            }
            for (opcode, body, pos) in found {
                self.add_definition(opcode, &body, Some(pos), pos.0);
            }
        }
    }
}

/// Two channel definitions name the same thing (metadata aside: writers may add to it).
fn same_channel(a: &ChannelRec, b: &ChannelRec) -> bool {
    a.topic == b.topic && a.schema_id == b.schema_id && a.message_encoding == b.message_encoding
}

/// A Channel record body parsed with its strings' invalid UTF-8 replaced; `None` when its
/// layout is broken too.
fn parse_channel_lossy(body: &[u8]) -> Option<ChannelRec> {
    let id = u16_at(body, 0)?;
    let schema_id = u16_at(body, 2)?;
    let mut at = 4usize;
    let string = |at: &mut usize| -> Option<String> {
        let n = u32_at(body, *at)? as usize;
        let s = body.get(*at + 4..(*at + 4).checked_add(n)?)?;
        *at += 4 + n;
        Some(String::from_utf8_lossy(s).into_owned())
    };
    let topic = string(&mut at)?;
    let message_encoding = string(&mut at)?;
    let map_len = u32_at(body, at)? as usize;
    at += 4;
    let map_end = at.checked_add(map_len).filter(|&e| e <= body.len())?;
    let mut metadata = BTreeMap::new();
    while at < map_end {
        let k = string(&mut at)?;
        let v = string(&mut at)?;
        metadata.insert(k, v);
    }
    (at == map_end).then_some(ChannelRec {
        id,
        schema_id,
        topic,
        message_encoding,
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that holds only the start of the magic is named a cut file, not "not MCAP";
    /// other short or foreign starts stay "not MCAP".
    #[test]
    fn a_cut_inside_the_magic_is_named_a_cut() {
        let p = Path::new("x.mcap");
        for n in 1..MAGIC.len() {
            let e = McapFile::from_bytes(p, Bytes::Owned(MAGIC[..n].to_vec())).err();
            assert!(
                matches!(e, Some(BagError::CutInMagic { len, .. }) if len == n),
                "{n}: {e:?}"
            );
        }
        for other in [&b"\x89MCAQ"[..], b"ROS", b"\x89MCAP0\r\x0b"] {
            let e = McapFile::from_bytes(p, Bytes::Owned(other.to_vec())).err();
            assert!(
                matches!(e, Some(BagError::NotMcap { .. })),
                "{other:?}: {e:?}"
            );
        }
    }
}
