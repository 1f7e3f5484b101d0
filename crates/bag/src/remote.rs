//! Bags in object storage: MCAP files opened from their summary (one tail request), rosbag2
//! folders as prefixes, and files that need every byte (`.db3`, `*.zstd`, MCAP files without
//! a usable summary) fetched once into a private temporary file.
//!
//! A remote MCAP file is an [`McapFile`] over a [`SparseImage`]: its chunks come from the
//! summary's Chunk Index records instead of a walk of the data section, and each scan fetches
//! the chunks its plan reads before it reads them (`scan::for_each_fetched`), so a window,
//! a topic that lives in few chunks, or `--limit` reads only those chunks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bagscope_source::{ObjectUrl, RemoteObject, SourceError, SparseImage};
use mcap::records::op;

use crate::error::{BagError, Result, Warning, WarningCode};
use crate::mcap_file::{
    u32_at, u64_at, Bytes, ChunkLoc, Compression, IndexLoc, McapFile, SummaryIndex, MAGIC,
};

/// The tail asked for when opening: footer and summary of most bags in one request (the mcap
/// CLI asks for 256 KiB; a summary grows by ~100 bytes a chunk).
pub(crate) const TAIL_BYTES: u64 = 1 << 20;
/// The head asked for beside the rest of the summary: the Header record (profile, library)
/// and what identifies copies of one file.
const HEAD_BYTES: u64 = 64 << 10;

/// The first remote read of this process that failed for good, in words.
static PROCESS_FAILURE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

pub(crate) fn note_process_failure(e: &BagError) {
    let mut g = PROCESS_FAILURE.lock().unwrap_or_else(|p| p.into_inner());
    g.get_or_insert_with(|| e.to_string());
}

/// The first read of a remote bag in this process that failed for good (after its retries:
/// the object was replaced, the connection kept failing, ...), if any, and forgets it. The
/// scan that met it stopped and reported the rest as lost; a program that prints one answer
/// per process (the CLI) turns it into an error, since the answer is not the whole bag's.
pub fn take_process_read_failure() -> Option<String> {
    PROCESS_FAILURE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
}

/// A source error as a bag error.
pub(crate) fn source_error(e: SourceError) -> BagError {
    BagError::Remote(e)
}

/// What opening a remote MCAP object gave.
// Short-lived, one per file being opened: not worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum RemoteMcap {
    /// Opened from its summary: scans fetch what they read.
    Ready(Box<McapFile>),
    /// Must be read whole (why, in words), like a local file.
    Whole(Arc<SparseImage>, String),
}

impl McapFile {
    /// Opens an MCAP object from its tail (`tail`: its last bytes, as
    /// [`RemoteObject::open_tail`] read them) and, in one more round of requests, its head and
    /// whatever of the summary the tail did not hold. `trust_summary`: also answer
    /// [`crate::Bag::topic_spans`] from the summary (`info --fast`).
    #[allow(clippy::single_range_in_vec_init)] // A range list of one range: a `Vec<Range>`, not a range collected.
    pub(crate) fn open_remote(
        obj: RemoteObject,
        tail: &[u8],
        max_chunk_bytes: u64,
        trust_summary: bool,
    ) -> Result<RemoteMcap> {
        let size = obj.size();
        let path = PathBuf::from(obj.url().as_str());
        if size == 0 {
            return Err(BagError::Empty { path });
        }
        let img = Arc::new(SparseImage::new(obj).map_err(source_error)?);
        let tail_start = size - tail.len() as u64;
        img.put(tail_start, tail);
        let whole = |why: &str| Ok(RemoteMcap::Whole(img.clone(), why.to_string()));
        let b = img.bytes();
        let n = b.len();
        if n < MAGIC.len() * 2 + 29 || &b[n - MAGIC.len()..] != MAGIC {
            return whole(
                "it does not end with an MCAP footer: cut off, still being written, or not MCAP",
            );
        }
        let footer = n - MAGIC.len() - 29;
        if b[footer] != op::FOOTER {
            return whole("it has no footer record");
        }
        let summary_start = u64_at(b, footer + 9).unwrap_or(0);
        if summary_start == 0 {
            return whole("it has no summary section (no chunk index to plan reads from)");
        }
        if summary_start >= footer as u64 {
            return whole("its footer points at a summary past itself");
        }
        let mut want = Vec::with_capacity(2);
        want.push(0..HEAD_BYTES.min(size));
        if summary_start < tail_start {
            want.push(summary_start..tail_start);
        }
        img.ensure(&want).map_err(source_error)?;
        if &b[..MAGIC.len()] != MAGIC {
            return Err(BagError::NotMcap { path });
        }
        let mut f = McapFile::unread(&path, Bytes::Remote(img.clone()));
        f.max_chunk_bytes = max_chunk_bytes;
        f.read_header_record();
        f.read_summary();
        if !f.has_summary || !f.warnings.is_empty() || f.channel_conflict {
            return whole("its summary is damaged");
        }
        let chunks = f.summary_chunks();
        let messages = f.stats_message_count.unwrap_or(0);
        if chunks.is_empty() && messages > 0 {
            return whole("its messages are outside chunks (no chunk index)");
        }
        let known = |ch: &u16| {
            f.channels
                .get(ch)
                .is_some_and(|c| c.schema_id == 0 || f.schemas.contains_key(&c.schema_id))
        };
        if !chunks
            .iter()
            .all(|c| c.index_offsets.iter().all(|(ch, _)| known(ch)))
        {
            return whole("its summary does not define every channel");
        }
        let mut locs = Vec::with_capacity(chunks.len());
        for c in &chunks {
            match chunk_from_index(c, size) {
                Some(loc) => locs.push(loc),
                None => return whole("a Chunk Index record of its summary is inconsistent"),
            }
        }
        // Metadata records (rosbag2's) where the Metadata Index says they are.
        let meta: Vec<std::ops::Range<u64>> = f
            .metadata_offsets
            .iter()
            .map(|&(at, len)| at as u64..(at as u64).saturating_add(len as u64))
            .collect();
        img.ensure(&meta).map_err(source_error)?;
        f.read_indexed_metadata();
        let clamped = locs
            .iter()
            .zip(&chunks)
            .filter(|(_, c)| c.end_clamped)
            .count();
        if clamped > 0 {
            f.warn_clamped(clamped, 0);
        }
        for loc in &mut locs {
            let name = loc.compression.name().to_string();
            *f.compression_counts.entry(name.clone()).or_default() += 1;
            let e = f.compression_bytes.entry(name).or_default();
            e.0 = e.0.saturating_add(loc.data_len as u64);
            e.1 = e.1.saturating_add(loc.uncompressed_size);
            loc.refused = f.refuse_chunk(
                loc.record_offset as usize,
                loc.compression,
                loc.uncompressed_size,
                loc.data_len as u64,
            );
        }
        // What the open read and no scan reads again: the head (profile, library) and the
        // part of the tail before the summary (chunk data a scan fetches in its turn). The
        // summary and footer stay: a folder of thousands of files holds only their summaries.
        img.release(0, HEAD_BYTES.min(size));
        if summary_start > tail_start {
            img.release(tail_start, summary_start - tail_start);
        }
        if trust_summary {
            f.summary_only = Some(SummaryIndex {
                chunks: chunks.clone(),
            });
        }
        f.chunks = locs;
        Ok(RemoteMcap::Ready(Box::new(f)))
    }

    /// Whether the file's bytes come from an object store.
    pub fn is_remote(&self) -> bool {
        matches!(self.bytes, Bytes::Remote(_))
    }

    /// Fetches `ranges` where the file is remote (a no-op for local files).
    pub(crate) fn ensure(&self, ranges: &[std::ops::Range<u64>]) -> Result<()> {
        match &self.bytes {
            Bytes::Remote(img) => img.ensure(ranges).map_err(source_error),
            _ => Ok(()),
        }
    }

    /// The bytes of `ranges` a read would fetch (0 for local files).
    pub(crate) fn missing_bytes(&self, ranges: &[std::ops::Range<u64>]) -> u64 {
        match &self.bytes {
            Bytes::Remote(img) => img.missing_bytes(ranges),
            _ => 0,
        }
    }
}

/// A chunk's place as the summary's Chunk Index gives it; `None` when the record's fields do
/// not fit together or in the object.
fn chunk_from_index(c: &crate::mcap_file::SummaryChunk, size: u64) -> Option<ChunkLoc> {
    let compression = Compression::parse(&c.compression)?;
    let clen = c.compression.len() as u64;
    let data_offset = c.offset.checked_add(9 + 40 + clen)?;
    let record_end = c.offset.checked_add(c.length)?;
    let data_end = data_offset.checked_add(c.compressed_size)?;
    let index_end = record_end.checked_add(c.index_length)?;
    if data_end > record_end || index_end > size {
        return None;
    }
    // Message Index records lie back to back after the chunk: each ends where the next
    // begins, the last at the end of the chunk's index block.
    let mut offs: Vec<(u64, u16)> = c.index_offsets.iter().map(|&(ch, o)| (o, ch)).collect();
    offs.sort_unstable();
    let mut indexes = Vec::with_capacity(offs.len());
    for (k, &(o, ch)) in offs.iter().enumerate() {
        let end = offs.get(k + 1).map_or(index_end, |n| n.0);
        if o < record_end || end > index_end || end < o.checked_add(9 + 6)? {
            return None;
        }
        indexes.push(IndexLoc {
            channel_id: ch,
            body_offset: usize::try_from(o + 9).ok()?,
            body_len: usize::try_from(end - o - 9).ok()?,
        });
    }
    Some(ChunkLoc {
        record_offset: c.offset,
        data_offset: usize::try_from(data_offset).ok()?,
        data_len: usize::try_from(c.compressed_size).ok()?,
        uncompressed_size: c.uncompressed_size,
        uncompressed_crc: 0,
        message_start_ns: c.start_ns,
        message_end_ns: c.end_ns,
        compression,
        partial: false,
        indexes,
        indexes_complete: false,
        refused: false,
        from_summary: true,
    })
}

/// Checks the Message Index records of a chunk known from the summary once their bytes are
/// in place: each must be a Message Index record of the length the summary implies.
pub(crate) fn summary_indexes_hold(file: &[u8], c: &ChunkLoc) -> bool {
    c.indexes.iter().all(|ix| {
        let at = ix.body_offset - 9;
        file.get(at) == Some(&op::MESSAGE_INDEX)
            && u64_at(file, at + 1) == Some(ix.body_len as u64)
            && u32_at(file, ix.body_offset + 2)
                .is_some_and(|n| 6 + n as usize == ix.body_len && n % 16 == 0)
    })
}

/// A whole remote object copied into a private temporary file (for `.db3`, `*.zstd` and MCAP
/// files that cannot be read by ranges), removed when dropped; the warning that says so.
pub(crate) fn fetch_whole(
    obj: &RemoteObject,
    name_hint: &str,
    why: &str,
) -> Result<(crate::outfile::LiveTempPath, Warning)> {
    let limit = bagscope_source::max_download_bytes();
    // The file's own name last (its extension tells `.zstd` and `.db3` apart).
    let safe: String = name_hint
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .collect();
    let suffix = format!("-{}", &safe[safe.len().saturating_sub(64)..]);
    let tmp = tempfile::Builder::new()
        .prefix("bagscope-fetch-")
        .suffix(&suffix)
        .tempfile()
        .map_err(|source| BagError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let tmp_path = tmp.path().to_path_buf();
    // Tracked from now on: removed on Ctrl-C / SIGTERM too, not only when dropped.
    let (mut file, path) = tmp.into_parts();
    let live = crate::outfile::LiveTempPath::new(path);
    obj.download_to(&mut file, &tmp_path, limit, why)
        .map_err(source_error)?;
    drop(file);
    let warning = Warning::new(
        WarningCode::RemoteFetchedWhole,
        format!(
            "fetched whole ({} bytes) into a temporary file, removed afterwards: {why}",
            obj.size()
        ),
    )
    .file(obj.url().as_str());
    Ok((live, warning))
}

/// The name of a listed remote file as warnings show it.
pub(crate) fn display(url: &ObjectUrl) -> String {
    url.as_str().to_string()
}

/// Whether `p` (as the user gave it) names an object store.
pub(crate) fn as_url(p: &Path) -> Option<std::result::Result<ObjectUrl, SourceError>> {
    ObjectUrl::parse(p.to_str()?)
}

/// Opens the bag at `url`: an object (an MCAP file, a `.db3`, a `*.zstd`), or a prefix
/// holding a rosbag2 folder (`metadata.yaml` and its files, or `.mcap` / `.db3` files).
pub(crate) fn open_bag(url: &ObjectUrl, opts: crate::OpenOptions) -> Result<crate::Bag> {
    let mut warnings = Vec::new();
    let mut temps = Vec::new();
    if !url.key().is_empty() && !url.key().ends_with('/') {
        match RemoteObject::open_tail(url, TAIL_BYTES) {
            Ok((obj, tail)) => {
                let src = open_object(obj, &tail, &mut warnings, &mut temps, opts)?;
                let shown = PathBuf::from(url.as_str());
                return crate::Bag::assemble(&shown, vec![src], None, warnings, temps, opts);
            }
            // Perhaps a folder named without its trailing '/' (plain HTTP cannot list one).
            Err(SourceError::NotFound { .. }) if url.scheme != bagscope_source::Scheme::Http => {}
            Err(e) => return Err(source_error(e)),
        }
    }
    open_prefix(url, opts)
}

/// One object of a bag, ready to read: an MCAP file opened from its summary, or a local copy
/// of what must be read whole.
fn open_object(
    obj: RemoteObject,
    tail: &[u8],
    warnings: &mut Vec<Warning>,
    temps: &mut Vec<crate::outfile::LiveTempPath>,
    opts: crate::OpenOptions,
) -> Result<crate::FileSource> {
    let name = obj.url().file_name().to_string();
    let shown = PathBuf::from(obj.url().as_str());
    let whole_copy = |obj: &RemoteObject,
                      why: &str,
                      warnings: &mut Vec<Warning>,
                      temps: &mut Vec<crate::outfile::LiveTempPath>|
     -> Result<crate::FileSource> {
        let (tmp, w) = fetch_whole(obj, &name, why)?;
        warnings.push(w);
        let read = tmp.to_path_buf();
        temps.push(tmp);
        Ok(crate::FileSource::Local {
            read,
            shown: shown.clone(),
        })
    };
    if name.ends_with(".zstd") {
        let (tmp, w) = fetch_whole(
            &obj,
            &name,
            "rosbag2 file compression: the file is one zstd stream",
        )?;
        warnings.push(w);
        let d = crate::filezstd::decompress_to_temp(
            &tmp,
            crate::filezstd::output_limit_bytes(obj.size()),
        )
        .map_err(|e| e.renamed(&tmp, &shown))?;
        let from = tmp.display().to_string();
        for mut w in d.warnings {
            if w.file.as_deref() == Some(from.as_str()) {
                w.file = Some(shown.display().to_string());
            }
            warnings.push(w);
        }
        // The compressed copy goes now; the decompressed one lives with the bag.
        drop(tmp);
        let read = d.path.to_path_buf();
        temps.push(d.path);
        return Ok(crate::FileSource::Local { read, shown });
    }
    let whole_in_tail = tail.len() as u64 == obj.size();
    if name.ends_with(".db3") || (whole_in_tail && tail.starts_with(b"SQLite format 3\0")) {
        return whole_copy(
            &obj,
            "sqlite3 (.db3) needs random access to the whole file",
            warnings,
            temps,
        );
    }
    match McapFile::open_remote(
        obj,
        tail,
        opts.resolved_max_chunk_bytes(),
        opts.trust_summary,
    )? {
        RemoteMcap::Ready(f) => Ok(crate::FileSource::Opened(f)),
        RemoteMcap::Whole(img, why) => {
            // Not a bag at all (its first bytes say so): refused before anything is fetched.
            let size = img.object().size();
            img.ensure(std::slice::from_ref(&(0..HEAD_BYTES.min(size))))
                .map_err(source_error)?;
            let head = img.bytes();
            if !head.starts_with(MAGIC) && !head.starts_with(b"SQLite format 3\0") {
                return Err(if MAGIC.starts_with(&head[..head.len().min(MAGIC.len())]) {
                    BagError::CutInMagic {
                        path: shown,
                        len: head.len(),
                    }
                } else {
                    BagError::NotMcap { path: shown }
                });
            }
            whole_copy(img.object(), &why, warnings, temps)
        }
    }
}

/// A prefix as a rosbag2 folder: the files its `metadata.yaml` lists, or else the `.mcap`
/// (failing that, `.db3`) objects directly under it, in name order.
fn open_prefix(url: &ObjectUrl, opts: crate::OpenOptions) -> Result<crate::Bag> {
    let prefix = url.as_prefix();
    let shown = PathBuf::from(url.as_str());
    let mut warnings = Vec::new();
    let mut temps = Vec::new();
    let yaml_url = prefix.join("metadata.yaml");
    let mut metadata = None;
    let mut names: Vec<(String, Vec<ObjectUrl>)> = Vec::new();
    match RemoteObject::open_tail(&yaml_url, 4 << 20) {
        Ok((obj, bytes)) => {
            let yaml_path = PathBuf::from(yaml_url.as_str());
            if obj.size() != bytes.len() as u64 {
                return Err(BagError::Metadata {
                    path: yaml_path,
                    reason: format!("{} bytes: too large for a metadata.yaml", obj.size()),
                });
            }
            let text = String::from_utf8_lossy(&bytes);
            let m = crate::Rosbag2Metadata::parse(&text, &yaml_path)?;
            if !matches!(m.storage_identifier.as_str(), "" | "mcap" | "sqlite3") {
                return Err(BagError::UnsupportedStorage {
                    path: shown,
                    storage: m.storage_identifier.clone(),
                });
            }
            for rel in &m.relative_file_paths {
                if !crate::stays_inside(rel) {
                    warnings.push(
                        Warning::new(
                            WarningCode::PathOutsideBag,
                            format!("metadata.yaml lists {rel}, outside the bag folder: not read (its messages are missing)"),
                        )
                        .loss(),
                    );
                    continue;
                }
                let mut cands = vec![prefix.join(rel)];
                // Dashing/Eloquent wrote paths prefixed with the bag folder's name.
                if let Some(n) = Path::new(rel).file_name().and_then(|n| n.to_str()) {
                    if n != rel {
                        cands.push(prefix.join(n));
                    }
                }
                names.push((rel.clone(), cands));
            }
            metadata = Some(m);
        }
        Err(SourceError::NotFound { .. }) => {
            let listed = bagscope_source::list(&prefix).map_err(source_error)?;
            let of_kind = |ext: &str| -> Vec<ObjectUrl> {
                listed
                    .iter()
                    .filter(|l| {
                        let n = l.url.file_name();
                        n.ends_with(ext) || n.ends_with(&format!("{ext}.zstd"))
                    })
                    .map(|l| l.url.clone())
                    .collect()
            };
            let mut found = of_kind(".mcap");
            if found.is_empty() {
                found = of_kind(".db3");
            }
            if found.is_empty() {
                if !bagscope_source::bucket_exists(&prefix) {
                    return Err(source_error(SourceError::NoBucket {
                        url: url.to_string(),
                        bucket: url.bucket().to_string(),
                    }));
                }
                return Err(source_error(SourceError::NotFound {
                    url: url.to_string(),
                }));
            }
            names = found
                .into_iter()
                .map(|u| (u.file_name().to_string(), vec![u]))
                .collect();
        }
        Err(e) => return Err(source_error(e)),
    }
    // Each file's tail, summary and head; several files at once.
    // Each file's tail, summary and head, sixteen files at a time.
    type Opened = (
        crate::FileSource,
        Vec<Warning>,
        Vec<crate::outfile::LiveTempPath>,
    );
    let open_one = |cands: &[ObjectUrl]| -> Result<Option<Opened>> {
        for c in cands {
            match RemoteObject::open_tail(c, TAIL_BYTES) {
                Ok((obj, tail)) => {
                    let (mut w, mut t) = (Vec::new(), Vec::new());
                    let src = open_object(obj, &tail, &mut w, &mut t, opts)?;
                    return Ok(Some((src, w, t)));
                }
                Err(SourceError::NotFound { .. }) => continue,
                Err(e) => return Err(source_error(e)),
            }
        }
        Ok(None)
    };
    let mut opened: Vec<Result<Option<Opened>>> = Vec::with_capacity(names.len());
    for group in names.chunks(16) {
        let part: Vec<Result<Option<Opened>>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|(_, cands)| s.spawn(|| open_one(cands)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        opened.extend(part);
    }
    let mut sources = Vec::new();
    let mut missing = Vec::new();
    for ((rel, cands), got) in names.iter().zip(opened) {
        match got? {
            Some((src, w, t)) => {
                sources.push(src);
                warnings.extend(w);
                temps.extend(t);
            }
            None => {
                warnings.push(
                    Warning::new(
                        WarningCode::MissingFile,
                        format!("metadata.yaml lists {rel}, which is not under the prefix: its messages are missing"),
                    )
                    .file(display(&cands[0]))
                    .loss(),
                );
                missing.push(rel.clone());
            }
        }
    }
    if sources.is_empty() {
        let listed = metadata
            .as_ref()
            .map(|m| m.relative_file_paths.join(", "))
            .unwrap_or_default();
        return Err(BagError::ListedFilesMissing {
            path: shown,
            detail: if listed.is_empty() {
                "metadata.yaml lists no files (relative_file_paths is empty)".to_string()
            } else {
                format!(
                    "metadata.yaml lists: {listed}\n  not under the prefix: {}",
                    missing.join(", ")
                )
            },
        });
    }
    crate::Bag::assemble(&shown, sources, metadata, warnings, temps, opts)
}
