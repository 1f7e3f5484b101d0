//! Parallel, zero-copy scanning of messages.
//!
//! Each chunk is decompressed into a per-thread reused buffer and its message records are handed
//! to the caller's function in place, without copying payloads (the mcap crate's message
//! iterators allocate per message, which costs as much as zstd itself on small messages).
//! Chunks are processed in parallel with rayon; the per-message results are merged back into
//! log-time order.

use std::io::Read;

use mcap::records::op;
use rayon::prelude::*;

use crate::error::Warning;
use crate::error::WarningCode;
use crate::mcap_file::{
    u16_at, u32_at, u64_at, ChunkLoc, Compression, McapFile, Pos, MAX_PREALLOC,
};

/// One message as stored, borrowed from the (decompressed) file.
#[derive(Debug, Clone, Copy)]
pub struct RawMessage<'a> {
    /// Index of the message's topic in [`crate::Bag::topics`].
    pub topic: usize,
    /// MCAP channel id of the message; for `.db3` files its `topic_id` (`u16::MAX` when that
    /// does not fit).
    pub channel_id: u16,
    /// The writer's sequence number (0 when the storage has none or it was not read).
    pub sequence: u32,
    /// Log (receive) time as the recorder wrote it, ns.
    pub log_time_ns: i64,
    /// `None` when the storage records no publish time (rosbag2 sqlite3), or when only log
    /// times were read from message indexes. Never substitute 0: it is not a time.
    pub publish_time_ns: Option<i64>,
    /// The serialised payload (CDR), decompressed.
    pub data: &'a [u8],
}

/// One scanned message's result, in log-time order.
#[derive(Debug, Clone)]
pub struct Item<T> {
    /// Log time of the message, ns.
    pub log_time_ns: i64,
    /// Index of the message's topic in [`crate::Bag::topics`].
    pub topic: usize,
    /// What the scan function returned for it.
    pub value: T,
}

/// Chunks larger than this count against [`LARGE_BUDGET_BYTES`] while decompressed.
const LARGE_CHUNK_BYTES: u64 = 64 << 20;
/// Most bytes of large chunks held decompressed at once by all threads together: a bag of
/// large chunks must not need a chunk's size once per core. A chunk larger than the whole
/// budget waits until it is alone.
const LARGE_BUDGET_BYTES: u64 = 1 << 30;

static LARGE_IN_USE: std::sync::Mutex<u64> = std::sync::Mutex::new(0);
static LARGE_FREED: std::sync::Condvar = std::sync::Condvar::new();

thread_local! {
    /// Budget this thread holds: it never waits for itself (a nested decoder on one thread).
    static LARGE_HELD: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Takes `bytes` (at most the whole budget) of the large-chunk budget, waiting for it.
fn take_budget(bytes: u64) -> u64 {
    let n = bytes.min(LARGE_BUDGET_BYTES);
    let mut used = LARGE_IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    if LARGE_HELD.with(|h| h.get()) == 0 {
        while *used + n > LARGE_BUDGET_BYTES {
            used = LARGE_FREED.wait(used).unwrap_or_else(|e| e.into_inner());
        }
    }
    *used += n;
    LARGE_HELD.with(|h| h.set(h.get() + n));
    n
}

fn give_budget(n: u64) {
    if n == 0 {
        return;
    }
    let mut used = LARGE_IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    *used = used.saturating_sub(n);
    LARGE_HELD.with(|h| h.set(h.get().saturating_sub(n)));
    LARGE_FREED.notify_all();
}

/// Per-thread decompression state, reused across chunks.
#[derive(Default)]
pub(crate) struct Decoder {
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    buf: Vec<u8>,
    msg_buf: Vec<u8>,
    /// Large-chunk budget held for what `buf` holds.
    budget: u64,
}

impl Drop for Decoder {
    fn drop(&mut self) {
        give_budget(self.budget);
    }
}

impl Decoder {
    /// Frees a large chunk's buffer and its budget once its records have been read (small
    /// buffers are kept for reuse).
    pub(crate) fn release_large(&mut self) {
        if self.budget > 0 || self.buf.capacity() as u64 > LARGE_CHUNK_BYTES {
            self.buf = Vec::new();
        }
        give_budget(std::mem::take(&mut self.budget));
    }

    /// Decompresses a chunk's records. For a chunk cut off by the end of the file, returns as
    /// much as could be decoded (the caller then parses only complete records).
    pub(crate) fn decompress<'a>(
        &'a mut self,
        file: &'a [u8],
        c: &ChunkLoc,
    ) -> Result<&'a [u8], String> {
        self.release_large();
        if c.refused {
            return Err("over the decompression limit".to_string());
        }
        let data = c
            .data(file)
            .ok_or_else(|| "chunk data lies outside the file".to_string())?;
        if c.compression == Compression::None {
            return Ok(data);
        }
        self.buf.clear();
        if c.uncompressed_size > LARGE_CHUNK_BYTES {
            self.budget = take_budget(c.uncompressed_size);
        }
        // On failure the buffer and its budget go at once: an idle thread must not hold them.
        if let Err(e) = self.fill(data, c) {
            self.release_large();
            return Err(e);
        }
        Ok(&self.buf)
    }

    /// Decompresses `data` (chunk `c`'s) into `buf`.
    fn fill(&mut self, data: &[u8], c: &ChunkLoc) -> Result<(), String> {
        if c.partial || c.uncompressed_size > MAX_PREALLOC {
            return decompress_streamed(
                c.compression,
                data,
                c.uncompressed_size,
                c.partial,
                &mut self.buf,
            );
        }
        let size = c.uncompressed_size as usize;
        match c.compression {
            Compression::Zstd => {
                let z = match &mut self.zstd {
                    Some(z) => z,
                    None => self
                        .zstd
                        .insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
                };
                self.buf.reserve(size);
                let n = z
                    .decompress_to_buffer(data, &mut self.buf)
                    .map_err(|e| format!("zstd: {e}"))?;
                if n != size {
                    return Err(format!("decompressed to {n} bytes, header says {size}"));
                }
            }
            // As the streamed path: read to the end of the frame (where lz4 checks a content
            // checksum, if the frame has one) and require the stated size.
            Compression::Lz4 => {
                self.buf.reserve(size);
                decompress_streamed(
                    c.compression,
                    data,
                    c.uncompressed_size,
                    false,
                    &mut self.buf,
                )?;
            }
            Compression::None => unreachable!(),
        }
        Ok(())
    }

    /// rosbag2's per-message compression: each payload is its own zstd frame
    /// ([`inflate_message`]).
    fn decompress_message<'a>(&'a mut self, data: &[u8]) -> Result<&'a [u8], Inflate> {
        inflate_message(data, &mut self.msg_buf)?;
        Ok(&self.msg_buf)
    }
}

/// Why a message payload under rosbag2 message compression was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inflate {
    /// Not a valid zstd frame (or a damaged one).
    Corrupt,
    /// It decompresses to more than [`crate::db3::MAX_MESSAGE_BYTES`].
    TooLarge,
}

/// rosbag2 message compression (`compression_mode: MESSAGE`): one payload, a zstd frame,
/// decompressed into `buf`, and stopped one byte past [`crate::db3::MAX_MESSAGE_BYTES`] (the
/// cap on a stored `.db3` payload): a frame of a few hundred bytes can expand to gigabytes.
/// The one rule for MCAP chunks, loose MCAP messages and `.db3` rows; only for bags that declare
/// message compression (a bare payload that merely starts like a zstd frame is data). A
/// refused payload leaves `buf` empty and without its allocation.
pub(crate) fn inflate_message(data: &[u8], buf: &mut Vec<u8>) -> Result<(), Inflate> {
    let cap = crate::db3::MAX_MESSAGE_BYTES;
    buf.clear();
    let res = zstd::stream::read::Decoder::new(data).and_then(|d| d.take(cap + 1).read_to_end(buf));
    match res {
        Ok(n) if n as u64 > cap => {
            *buf = Vec::new();
            Err(Inflate::TooLarge)
        }
        Ok(_) => Ok(()),
        Err(_) => {
            if buf.capacity() as u64 > LARGE_CHUNK_BYTES {
                *buf = Vec::new();
            }
            Err(Inflate::Corrupt)
        }
    }
}

/// A zstd frame's first bytes (a CDR payload starts with its encapsulation header, `00 0x`).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether a payload starts like a zstd frame (only a hint: see
/// [`undeclared_compression_warning`]).
#[inline]
pub(crate) fn looks_compressed(payload: &[u8]) -> bool {
    payload.starts_with(&ZSTD_MAGIC)
}

/// The hint for payloads of `file` that start like zstd frames in a bag that does not declare
/// message compression (read as stored: they fail to decode, and say so on their own).
pub(crate) fn undeclared_compression_warning(file: &str) -> Warning {
    Warning::new(
        WarningCode::UnsupportedCompression,
        "message payloads start like zstd frames (rosbag2 message compression), but the bag does not declare message compression (no metadata.yaml with compression_mode: MESSAGE beside the file, nor rosbag2's metadata inside it): read as stored; open the bag's folder",
    )
    .file(file)
}

/// The warning for `n` payloads of `file` that [`inflate_message`] refused as too large.
pub(crate) fn message_too_large_warning(n: usize, file: &str, offset: Option<u64>) -> Warning {
    let w = Warning::new(
        WarningCode::MessageTooLarge,
        format!(
            "{n} message(s){} decompress to more than {} bytes, the limit for one message (rosbag2 message compression): skipped",
            offset.map(|o| format!(" in the chunk at byte {o}")).unwrap_or_default(),
            crate::db3::MAX_MESSAGE_BYTES
        ),
    )
    .file(file)
    .loss();
    match offset {
        Some(o) => w.offset(o),
        None => w,
    }
}

/// Decompresses a chunk's records into `buf` without trusting the size field for the
/// allocation (it follows what is actually produced). A complete chunk must decompress to
/// exactly `size` bytes: one byte past it is asked for, so that the frame is read to its end
/// (where zstd checks the content checksum) and a size that disagrees with the data is an
/// error, as in the one-shot path. A chunk cut off by the end of the file (`partial`) gives
/// as much as could be decoded.
fn decompress_streamed(
    compression: Compression,
    data: &[u8],
    size: u64,
    partial: bool,
    buf: &mut Vec<u8>,
) -> Result<(), String> {
    let limit = size.saturating_add(u64::from(!partial));
    let res = match compression {
        Compression::Zstd => zstd::stream::read::Decoder::new(data)
            .and_then(|d| d.take(limit).read_to_end(buf))
            .map_err(|e| format!("zstd: {e}")),
        Compression::Lz4 => lz4_flex::frame::FrameDecoder::new(data)
            .take(limit)
            .read_to_end(buf)
            .map_err(|e| format!("lz4: {e}")),
        Compression::None => {
            buf.extend_from_slice(data);
            Ok(data.len())
        }
    };
    match res {
        Err(_) if partial => Ok(()),
        Err(e) => Err(e),
        Ok(_) if !partial && buf.len() as u64 != size => Err(format!(
            "decompressed to {}{} bytes, header says {size}",
            buf.len(),
            if buf.len() as u64 == limit {
                " or more"
            } else {
                ""
            },
        )),
        Ok(_) => Ok(()),
    }
}

/// Whether a chunk's data is a single zstd frame that carries a content checksum (which zstd
/// verifies while decompressing it). The frame header descriptor's bit 2 is the flag; the
/// frame must span the whole data, or a second frame could go unchecked.
fn zstd_verified(file: &McapFile, c: &ChunkLoc) -> bool {
    // A complete chunk is decompressed to the end of its frame, checksum included, whether
    // in one shot or streamed (chunks too large to allocate up front); a chunk cut off by the
    // end of the file is not.
    if c.compression != Compression::Zstd || c.partial {
        return false;
    }
    c.data(&file.bytes).is_some_and(is_checksummed_zstd_frame)
}

fn is_checksummed_zstd_frame(data: &[u8]) -> bool {
    data.len() > 4
        && data[..4] == ZSTD_MAGIC
        && data[4] & 0x04 != 0
        && zstd::zstd_safe::find_frame_compressed_size(data) == Ok(data.len())
}

/// Calls `f(opcode, body)` for every complete record in a decompressed chunk; returns the
/// offset where parsing stopped (the end, unless the data is cut or corrupt).
pub(crate) fn walk_chunk_records(buf: &[u8], mut f: impl FnMut(u8, &[u8])) -> usize {
    let mut pos = 0usize;
    while pos + 9 <= buf.len() {
        let opcode = buf[pos];
        let Some(len) = u64_at(buf, pos + 1) else {
            break;
        };
        if len > (buf.len() - pos - 9) as u64 {
            break;
        }
        let end = pos + 9 + len as usize;
        f(opcode, &buf[pos + 9..end]);
        pos = end;
    }
    pos
}

/// A Channel record's id, schema id and topic bytes.
fn channel_head(body: &[u8]) -> Option<(u16, u16, &[u8])> {
    let n = u32_at(body, 4)? as usize;
    Some((
        u16_at(body, 0)?,
        u16_at(body, 2)?,
        body.get(8..8usize.checked_add(n)?)?,
    ))
}

#[inline]
fn message_header(body: &[u8]) -> Option<(u16, u32, u64, u64)> {
    Some((
        u16_at(body, 0)?,
        u32_at(body, 2)?,
        u64_at(body, 6)?,
        u64_at(body, 14)?,
    ))
}

pub(crate) fn to_ns(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// What a scan should read. `topics[i]` says whether topic `i` of the bag is wanted.
pub(crate) struct ScanPlan<'p> {
    pub topics: &'p [bool],
    /// Per file, channel id to bag topic index (`NO_TOPIC`: not defined), as a table: it is
    /// looked up for every message.
    pub channel_topic: Vec<Vec<u32>>,
    /// Per file, for channel ids defined more than once ([`REDEFINED`] in `channel_topic`):
    /// each definition's topic from where it starts, in file order.
    pub redefined: Vec<std::collections::BTreeMap<u16, Vec<(Pos, usize)>>>,
    /// When false, message indexes are used instead of decompressing where they are complete.
    pub needs_payload: bool,
    /// Every chunk is read (no message-index shortcut) so that each message's payload is seen
    /// as stored, for its length; payloads are not decompressed (`needs_payload` false).
    pub lengths: bool,
    pub message_compression: bool,
    /// Checked between chunks by sequential walks: set it to end the walk early.
    pub stop: Option<&'p std::sync::atomic::AtomicBool>,
    /// Only messages logged in `[start, end)`: chunks whose time range lies outside it are
    /// not read.
    pub window: Option<(i64, i64)>,
}

impl ScanPlan<'_> {
    /// The bag topic of channel `ch` of file `fi`, if defined once (`None` for a channel
    /// defined more than once: its topic depends on the message's place, [`Self::topic_at`]).
    pub(crate) fn topic_of(&self, fi: usize, ch: u16) -> Option<usize> {
        match self.channel_topic.get(fi).and_then(|m| m.get(ch as usize)) {
            Some(&t) if t != NO_TOPIC && t != REDEFINED => Some(t as usize),
            _ => None,
        }
    }

    /// The bag topic of a message of channel `ch` of file `fi` at `pos`: the definition
    /// before it (the first one for a message before every definition).
    #[inline]
    pub(crate) fn topic_at(&self, fi: usize, ch: u16, pos: Pos) -> Option<usize> {
        match self.channel_topic.get(fi).and_then(|m| m.get(ch as usize)) {
            Some(&REDEFINED) => {
                let defs = self.redefined.get(fi)?.get(&ch)?;
                let k = defs.partition_point(|(p, _)| *p <= pos);
                defs.get(k.saturating_sub(1)).map(|&(_, t)| t)
            }
            Some(&t) if t != NO_TOPIC => Some(t as usize),
            _ => None,
        }
    }

    /// Whether the chunk index entry for channel `ch` of file `fi` may hold wanted messages
    /// (a channel that is not defined or is redefined may: only reading the chunk tells).
    fn may_want(&self, fi: usize, ch: u16) -> bool {
        self.topic_of(fi, ch).is_none_or(|t| self.topics[t])
    }

    /// Whether a message logged at `log` falls outside the window.
    #[inline]
    pub(crate) fn outside(&self, log: i64) -> bool {
        self.window.is_some_and(|(s, e)| log < s || log >= e)
    }

    /// Whether chunk `c` holds no message of the window, by its time range.
    pub(crate) fn chunk_outside(&self, c: &ChunkLoc) -> bool {
        let Some((s, e)) = self.window else {
            return false;
        };
        !c.partial
            && c.message_start_ns <= c.message_end_ns
            && (c.message_end_ns < s || c.message_start_ns >= e)
    }
}

const NO_TOPIC: u32 = u32::MAX;
/// In `channel_topic`: the channel is defined more than once, see `redefined`.
pub(crate) const REDEFINED: u32 = u32::MAX - 1;

/// The per-file channel → topic maps as tables indexed by channel id; channels in `redefined`
/// are marked [`REDEFINED`].
pub(crate) fn dense_channel_topics(
    maps: &[std::collections::BTreeMap<u16, usize>],
    redefined: &[std::collections::BTreeMap<u16, Vec<(Pos, usize)>>],
) -> Vec<Vec<u32>> {
    maps.iter()
        .enumerate()
        .map(|(fi, m)| {
            let len = m.keys().next_back().map_or(0, |&k| k as usize + 1);
            let mut t = vec![NO_TOPIC; len];
            for (&ch, &topic) in m {
                // A bag's topics are far fewer than u32::MAX - 1 (each has its own channel
                // record).
                t[ch as usize] = topic as u32;
            }
            for &ch in redefined.get(fi).into_iter().flat_map(|r| r.keys()) {
                if let Some(x) = t.get_mut(ch as usize) {
                    *x = REDEFINED;
                }
            }
            t
        })
        .collect()
}

thread_local! {
    /// One decompression state per (rayon) thread, kept across scans: its chunk-sized buffer
    /// and zstd context are allocated once, not per job split.
    static DECODER: std::cell::RefCell<Decoder> = std::cell::RefCell::new(Decoder::default());
}

/// Runs `g` with this thread's decoder (a fresh one if it is already in use).
pub(crate) fn with_decoder<R>(g: impl FnOnce(&mut Decoder) -> R) -> R {
    DECODER.with(|d| match d.try_borrow_mut() {
        Ok(mut dec) => g(&mut dec),
        Err(_) => g(&mut Decoder::default()),
    })
}

/// Where a job's results go: a flat vector keyed by byte offset, or per-topic pieces.
pub(crate) trait Sink<T> {
    fn put(&mut self, offset: u64, item: Item<T>);
}

impl<T> Sink<T> for Vec<(u64, Item<T>)> {
    fn put(&mut self, offset: u64, item: Item<T>) {
        self.push((offset, item));
    }
}

/// Keeps nothing (sequential walks: the caller's function already saw the message).
pub(crate) struct Discard;

impl<T> Sink<T> for Discard {
    fn put(&mut self, _offset: u64, _item: Item<T>) {}
}

/// Per topic touched by a job: `(topic, [(log time, value)])`.
type PartsOf<T> = Vec<(usize, Vec<(i64, T)>)>;

/// One job's results split by topic, `(log time, value)`, in record order.
pub(crate) struct TopicParts<T>(pub(crate) PartsOf<T>);

impl<T> Sink<T> for TopicParts<T> {
    fn put(&mut self, _offset: u64, it: Item<T>) {
        // Few topics per chunk: a linear search beats a map; the last one hit is most likely.
        let slot = match self.0.iter().rposition(|(t, _)| *t == it.topic) {
            Some(p) => p,
            None => {
                self.0.push((it.topic, Vec::new()));
                self.0.len() - 1
            }
        };
        self.0[slot].1.push((it.log_time_ns, it.value));
    }
}

/// Items of one job keyed by their byte offset (to restore file order), and its warnings.
type JobOut<T> = (Vec<(u64, Item<T>)>, Vec<Warning>);

#[derive(Debug, Clone, Copy)]
pub(crate) enum Job {
    Chunk(usize, usize),
    Loose(usize),
}

pub(crate) struct ScanOut<T> {
    pub items: Vec<Item<T>>,
    pub warnings: Vec<Warning>,
}

/// Chunks (and loose messages) to read, in file order; chunks whose index proves they hold
/// none of the wanted topics are left out.
pub(crate) fn plan_jobs(files: &[McapFile], plan: &ScanPlan<'_>) -> Vec<Job> {
    // Files opened from their summary alone list no chunks: a scan of them would find nothing.
    debug_assert!(
        files.iter().all(|f| f.summary_only.is_none()),
        "scan of a bag opened with trust_summary"
    );
    let mut jobs = Vec::new();
    for (fi, file) in files.iter().enumerate() {
        for (ci, c) in file.chunks.iter().enumerate() {
            // Refused chunks were reported (and counted as lost) when the file was opened.
            if c.refused || !may_hold_wanted(fi, c, plan) || plan.chunk_outside(c) {
                continue;
            }
            jobs.push(Job::Chunk(fi, ci));
        }
        if !file.loose.is_empty() {
            jobs.push(Job::Loose(fi));
        }
    }
    jobs
}

/// Whether chunk `c` of file `fi` may hold wanted messages: unless its message indexes (or,
/// for a chunk known from the summary, the channels its Chunk Index names) say otherwise.
pub(crate) fn may_hold_wanted(fi: usize, c: &ChunkLoc, plan: &ScanPlan<'_>) -> bool {
    !(c.indexes_complete || c.from_summary)
        || c.indexes.iter().any(|ix| plan.may_want(fi, ix.channel_id))
}

/// Whether a scan of chunk `c` can read its message indexes instead of its records (log
/// times only, indexes complete or known from the summary).
pub(crate) fn index_only(c: &ChunkLoc, plan: &ScanPlan<'_>) -> bool {
    !plan.needs_payload && !plan.lengths && (c.indexes_complete || c.from_summary)
}

/// The bytes job `job` reads (remote files fetch them first): the chunk's Message Index
/// records for an index-only read, else its record.
pub(crate) fn job_ranges(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    job: &Job,
) -> Vec<std::ops::Range<u64>> {
    match *job {
        Job::Chunk(fi, ci) => {
            let c = &files[fi].chunks[ci];
            match c.index_range().filter(|_| index_only(c, plan)) {
                Some(r) => vec![r],
                None => vec![c.record_range()],
            }
        }
        // Remote files have no messages outside chunks (they are read whole otherwise).
        Job::Loose(_) => Vec::new(),
    }
}

/// Bytes of chunk records a scan of remote files holds fetched at most: the batch being read
/// and the one being fetched beside it.
const FETCH_BATCH_BYTES: u64 = 32 << 20;

/// Runs `run` over consecutive ranges of `jobs` (in order) once their bytes are in place:
/// for local files one call with every job; for remote files batches of about
/// [`FETCH_BATCH_BYTES`], the next fetched (coalesced, concurrent ranged GETs) while `run`
/// reads the current one. `grow`: batches start at one job and double (walks that may stop
/// early, `--limit`); `stop` ends the walk between batches. A fetch that fails for good ends
/// the walk: its warning (data loss, naming the URL and why) is returned, and the failure is
/// kept for [`crate::Bag::read_failure`].
pub(crate) fn for_each_fetched(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    jobs: &[Job],
    grow: bool,
    mut run: impl FnMut(std::ops::Range<usize>),
) -> Vec<Warning> {
    let file_of = |j: &Job| match *j {
        Job::Chunk(fi, _) | Job::Loose(fi) => fi,
    };
    if !jobs.iter().any(|j| files[file_of(j)].is_remote()) {
        if !jobs.is_empty() {
            run(0..jobs.len());
        }
        return Vec::new();
    }
    let sizes: Vec<u64> = jobs
        .iter()
        .map(|j| files[file_of(j)].missing_bytes(&job_ranges(files, plan, j)))
        .collect();
    bagscope_source::add_planned(sizes.iter().sum());
    // Batches: consecutive jobs up to the byte budget (one job at least).
    let mut batches: Vec<std::ops::Range<usize>> = Vec::new();
    let mut cap = if grow { 1 } else { FETCH_BATCH_BYTES };
    let mut start = 0;
    while start < jobs.len() {
        let mut end = start + 1;
        let mut bytes = sizes[start];
        while end < jobs.len() && bytes + sizes[end] <= cap {
            bytes += sizes[end];
            end += 1;
        }
        batches.push(start..end);
        start = end;
        cap = (cap.max(bytes.max(1)) * 2).min(FETCH_BATCH_BYTES);
    }
    let fetch = |r: &std::ops::Range<usize>| -> Result<(), (usize, crate::BagError)> {
        let mut by_file: std::collections::BTreeMap<usize, Vec<std::ops::Range<u64>>> =
            Default::default();
        for j in &jobs[r.clone()] {
            by_file
                .entry(file_of(j))
                .or_default()
                .extend(job_ranges(files, plan, j));
        }
        for (fi, ranges) in by_file {
            files[fi].ensure(&ranges).map_err(|e| (fi, e))?;
        }
        Ok(())
    };
    let stopped = || {
        plan.stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    };
    let failed = |(fi, e): (usize, crate::BagError)| -> Vec<Warning> {
        let w = Warning::new(
            WarningCode::RemoteReadFailed,
            format!("the read stopped, the rest of the bag is not read: {e}"),
        )
        .file(files[fi].path.display().to_string())
        .loss();
        files[fi].note_read_failure(e);
        vec![w]
    };
    if let Err(e) = fetch(&batches[0]) {
        return failed(e);
    }
    std::thread::scope(|scope| {
        for k in 0..batches.len() {
            let next = batches
                .get(k + 1)
                .filter(|_| !stopped())
                .map(|b| scope.spawn(|| fetch(b)));
            run(batches[k].clone());
            let Some(next) = next else {
                return Vec::new();
            };
            match next.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return failed(e),
                Err(p) => std::panic::resume_unwind(p),
            }
            if stopped() {
                return Vec::new();
            }
        }
        Vec::new()
    })
}

/// Runs one job into `out`; its warnings.
pub(crate) fn run_job<T, F, S>(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    f: &F,
    dec: &mut Decoder,
    job: &Job,
    out: &mut S,
) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) -> T + Sync,
    S: Sink<T>,
{
    match *job {
        Job::Chunk(fi, ci) => scan_chunk(&files[fi], fi, &files[fi].chunks[ci], plan, f, dec, out),
        Job::Loose(fi) => scan_loose(&files[fi], fi, plan, f, dec, out),
    }
}

/// Sequential, streaming walk: `f` sees every wanted message in file order (record order
/// within a chunk), one chunk in memory at a time. For writers that must not hold the bag.
pub(crate) fn visit_files<F>(files: &[McapFile], plan: &ScanPlan<'_>, f: &F) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) + Sync,
{
    visit_files_windowed(files, plan, None, f, &mut |_, _| {})
}

/// [`visit_files`] that passes over the chunks whose time range lies outside `window`
/// (`[start, end)`) unread, reporting in walk order how many messages of each wanted topic
/// each holds (`skipped(topic, n)`, from its message indexes), so that callers numbering
/// messages keep their numbers. A chunk whose counts are not known is read instead; the
/// chunks that are read hand every wanted message to `f`, in the window or not (`plan` has
/// no window of its own).
pub(crate) fn visit_files_windowed<F>(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    window: Option<(i64, i64)>,
    f: &F,
    skipped: &mut dyn FnMut(usize, u64),
) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) + Sync,
{
    let mut dec = Decoder::default();
    let mut warnings = Vec::new();
    let windowed = ScanPlan {
        window,
        channel_topic: Vec::new(),
        redefined: Vec::new(),
        ..*plan
    };
    // The walk's steps: a job to read (`Ok`), or the counts of a chunk passed over (`Err`).
    let mut steps: Vec<Result<Job, Vec<(usize, u64)>>> = Vec::new();
    for job in plan_jobs(files, plan) {
        let counts = match job {
            Job::Chunk(fi, ci) if windowed.chunk_outside(&files[fi].chunks[ci]) => {
                chunk_counts(fi, &files[fi].chunks[ci], plan)
            }
            _ => None,
        };
        match counts {
            Some(c) if c.is_empty() => {}
            Some(c) => steps.push(Err(c)),
            None => steps.push(Ok(job)),
        }
    }
    let jobs: Vec<Job> = steps
        .iter()
        .filter_map(|s| s.as_ref().ok().copied())
        .collect();
    let mut step = 0usize;
    let fetch_warnings = for_each_fetched(files, plan, &jobs, true, |batch| {
        for job in &jobs[batch] {
            // The counts of the chunks passed over before this job, then the job.
            while let Some(Err(counts)) = steps.get(step) {
                for &(t, n) in counts {
                    skipped(t, n);
                }
                step += 1;
            }
            step += 1;
            if plan
                .stop
                .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
            {
                return;
            }
            // Results go to the caller's function only; nothing is kept.
            let w = run_job(files, plan, f, &mut dec, job, &mut Discard);
            warnings.extend(w);
        }
    });
    warnings.extend(fetch_warnings);
    warnings
}

/// Messages per wanted topic in chunk `c` from its message indexes without reading them
/// (record lengths: 6 header bytes, then 16 bytes an entry), when they are trusted.
pub(crate) fn chunk_counts(
    fi: usize,
    c: &ChunkLoc,
    plan: &ScanPlan<'_>,
) -> Option<Vec<(usize, u64)>> {
    if !(c.indexes_complete || c.from_summary) {
        return None;
    }
    let mut out: Vec<(usize, u64)> = Vec::new();
    for ix in &c.indexes {
        // A channel without a single definition: only reading the chunk tells its topic.
        let topic = plan.topic_of(fi, ix.channel_id)?;
        if !plan.topics[topic] {
            continue;
        }
        let n = (ix.body_len.saturating_sub(6) / 16) as u64;
        match out.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, k)) => *k += n,
            None => out.push((topic, n)),
        }
    }
    Some(out)
}

pub(crate) fn scan_files<T, F>(files: &[McapFile], plan: &ScanPlan<'_>, f: &F) -> ScanOut<T>
where
    T: Send,
    F: Fn(&RawMessage<'_>) -> T + Sync,
{
    let jobs = plan_jobs(files, plan);

    let mut results: Vec<JobOut<T>> = Vec::with_capacity(jobs.len());
    let fetch_warnings = for_each_fetched(files, plan, &jobs, false, |batch| {
        let part: Vec<JobOut<T>> = jobs[batch]
            .par_iter()
            .map(|job| {
                with_decoder(|dec| {
                    let mut out = Vec::new();
                    let w = run_job(files, plan, f, dec, job, &mut out);
                    // Grown by doubling: up to half of it unused, for every job until the merge.
                    out.shrink_to_fit();
                    (out, w)
                })
            })
            .collect();
        results.extend(part);
    });
    results.push((Vec::new(), fetch_warnings));

    // Sized once: growing by doubling would hold up to twice the items at the peak.
    let mut items = Vec::with_capacity(results.iter().map(|(v, _)| v.len()).sum());
    let mut warnings = Vec::new();
    // The jobs' pieces are freed as they are copied, but the allocator keeps freed memory for
    // reuse: without handing it back now and then, the pieces and the merged items would all
    // be resident at the end of the merge.
    let mut freed = 0usize;
    for (mut v, w) in results {
        // Within a chunk, file order; indexes are sorted by log time, so restore record order.
        v.sort_by_key(|(off, _)| *off);
        freed += v.capacity() * std::mem::size_of::<(u64, Item<T>)>();
        items.extend(v.into_iter().map(|(_, it)| it));
        warnings.extend(w);
        if freed >= 32 << 20 {
            crate::release_freed_memory();
            freed = 0;
        }
    }
    // Stable: equal log times keep file order. Usually already sorted, which is cheap to check.
    if !items
        .windows(2)
        .all(|w| w[0].log_time_ns <= w[1].log_time_ns)
    {
        items.sort_by_key(|it| it.log_time_ns);
    }
    crate::release_freed_memory();
    ScanOut { items, warnings }
}

/// A streamed scan ([`scan_files_in_order`]) met a message logged before the time its chunk
/// header says the chunk's messages start: messages already handed out may not be in
/// log-time order. The caller reads the bag again with [`scan_files`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OrderBroken;

/// Uncompressed bytes of chunks a streamed scan decompresses in one parallel step (at least
/// one chunk): with the step before it waiting to be merged, what it holds at most besides the
/// messages still waiting for their turn.
pub(crate) const ORDERED_STEP_BYTES: u64 = 16 << 20;

/// The earliest log time job `job` may hold, as its records say before it is read: a chunk's
/// header time range, the smallest log time of a file's loose messages (their headers only).
fn declared_start(files: &[McapFile], job: &Job) -> i64 {
    match *job {
        Job::Chunk(fi, ci) => files[fi].chunks[ci].message_start_ns,
        Job::Loose(fi) => {
            let file = &files[fi];
            file.loose
                .iter()
                .filter_map(|l| {
                    let body = file.bytes.get(l.body_offset..l.body_offset + l.body_len)?;
                    message_header(body).map(|h| to_ns(h.2))
                })
                .min()
                .unwrap_or(i64::MAX)
        }
    }
}

/// [`scan_files`] with bounded memory: `emit` gets every item in the same order (log time,
/// then job, then record), as soon as no job left to read can hold an earlier one, by the
/// log-time ranges their headers declare. Chunks are decompressed in parallel steps of about
/// `step_bytes` ([`ORDERED_STEP_BYTES`]) on a thread of their own, the step after the current one read while
/// `emit` runs; what waits is the items of the steps read whose log time a later job's range
/// still reaches. A job holding a message earlier than its declared start ends the scan with
/// [`OrderBroken`] (the caller starts over with [`scan_files`]).
pub(crate) fn scan_files_in_order<T, F>(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    f: &F,
    step_bytes: u64,
    emit: &mut dyn FnMut(Item<T>),
) -> Result<Vec<Warning>, OrderBroken>
where
    T: Send,
    F: Fn(&RawMessage<'_>) -> T + Sync,
{
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, VecDeque};
    let jobs = plan_jobs(files, plan);
    let starts: Vec<i64> = jobs.iter().map(|j| declared_start(files, j)).collect();
    // Per job, the earliest declared start of it and every job after it.
    let mut later = vec![i64::MAX; jobs.len() + 1];
    for k in (0..jobs.len()).rev() {
        later[k] = later[k + 1].min(starts[k]);
    }
    let size = |j: &Job| match *j {
        Job::Chunk(fi, ci) => files[fi].chunks[ci].uncompressed_size,
        Job::Loose(fi) => files[fi].loose.iter().map(|l| l.body_len as u64).sum(),
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Reads the jobs a step at a time, each step's chunks in parallel, handing each step's
    // results to `send` (false: stop).
    let produce = |send: &mut dyn FnMut(usize, Vec<JobOut<T>>) -> bool| -> Vec<Warning> {
        for_each_fetched(files, plan, &jobs, false, |batch| {
            let mut k = batch.start;
            while k < batch.end {
                let asked = plan
                    .stop
                    .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
                if asked || stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                let mut end = k + 1;
                let mut bytes = size(&jobs[k]);
                while end < batch.end && bytes + size(&jobs[end]) <= step_bytes {
                    bytes += size(&jobs[end]);
                    end += 1;
                }
                let part: Vec<JobOut<T>> = jobs[k..end]
                    .par_iter()
                    .map(|job| {
                        with_decoder(|dec| {
                            let mut out = Vec::new();
                            let w = run_job(files, plan, f, dec, job, &mut out);
                            (out, w)
                        })
                    })
                    .collect();
                if !send(k, part) {
                    return;
                }
                k = end;
            }
        })
    };
    // Items of jobs read, per job in (log time, record) order; a heap of each job's next.
    let mut waiting: Vec<(usize, VecDeque<Item<T>>)> = Vec::new();
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
    let mut warnings = Vec::new();
    let mut broken = false;
    let mut release = |waiting: &mut Vec<(usize, VecDeque<Item<T>>)>,
                       heap: &mut BinaryHeap<Reverse<(i64, usize)>>,
                       before: Option<i64>| {
        while let Some(&Reverse((log, job))) = heap.peek() {
            if before.is_some_and(|b| log >= b) {
                break;
            }
            heap.pop();
            let Some(slot) = waiting.iter().position(|(j, _)| *j == job) else {
                continue;
            };
            let q = &mut waiting[slot].1;
            if let Some(it) = q.pop_front() {
                emit(it);
            }
            match q.front() {
                Some(next) => heap.push(Reverse((next.log_time_ns, job))),
                None => {
                    waiting.swap_remove(slot);
                }
            }
        }
    };
    // Takes one step's results; false when a chunk broke its declared start.
    let mut consume = |first: usize, part: Vec<JobOut<T>>| -> bool {
        let end = first + part.len();
        for (k, (mut v, w)) in (first..end).zip(part) {
            warnings.extend(w);
            v.sort_unstable_by_key(|(off, it)| (it.log_time_ns, *off));
            if v.first().is_some_and(|(_, it)| it.log_time_ns < starts[k]) {
                broken = true;
                return false;
            }
            let q: VecDeque<Item<T>> = v.into_iter().map(|(_, it)| it).collect();
            if let Some(head) = q.front() {
                heap.push(Reverse((head.log_time_ns, k)));
                waiting.push((k, q));
            }
        }
        // Jobs not read yet hold nothing before the earliest start they declare.
        release(&mut waiting, &mut heap, Some(later[end]));
        true
    };
    let produced = if rayon::current_thread_index().is_some() {
        // On a thread of the pool (a caller's parallel task): the steps are read here, in
        // turn with their handing out, since a thread of ours blocked on a channel could keep
        // the pool from reading them.
        produce(&mut |k, part| consume(k, part))
    } else {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<JobOut<T>>)>(1);
            let produce = &produce;
            let producer = scope.spawn(move || produce(&mut |k, part| tx.send((k, part)).is_ok()));
            for (first, part) in rx.iter() {
                if !consume(first, part) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
            }
            drop(rx);
            match producer.join() {
                Ok(w) => w,
                Err(p) => std::panic::resume_unwind(p),
            }
        })
    };
    if !broken {
        release(&mut waiting, &mut heap, None);
    }
    warnings.extend(produced);
    if broken {
        return Err(OrderBroken);
    }
    Ok(warnings)
}

fn scan_chunk<T, F, S>(
    file: &McapFile,
    fi: usize,
    c: &ChunkLoc,
    plan: &ScanPlan<'_>,
    f: &F,
    dec: &mut Decoder,
    out: &mut S,
) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) -> T + Sync,
    S: Sink<T>,
{
    let mut warnings = Vec::new();
    let name = file.path.display().to_string();
    if index_only(c, plan)
        && (c.indexes_complete || crate::remote::summary_indexes_hold(&file.bytes, c))
    {
        return scan_chunk_indexes(file, fi, c, plan, f, out);
    }

    // A chunk known from the summary whose index-only read found its indexes damaged: its
    // records are read after all.
    if c.from_summary && index_only(c, plan) {
        if let Err(e) = file.ensure(&[c.record_range()]) {
            warnings.push(
                Warning::new(
                    WarningCode::RemoteReadFailed,
                    format!("chunk at byte {} could not be read: {e}", c.record_offset),
                )
                .file(&name)
                .offset(c.record_offset)
                .loss(),
            );
            file.note_read_failure(e);
            return warnings;
        }
    }
    let head = c.checked_crc(&file.bytes);
    let data: &[u8] = match head.and_then(|_| dec.decompress(&file.bytes, c)) {
        Ok(d) => d,
        Err(e) => {
            warnings.push(
                Warning::new(
                    WarningCode::CorruptChunk,
                    format!(
                        "chunk at byte {} cannot be decompressed ({e}): its messages are lost",
                        c.record_offset
                    ),
                )
                .file(&name)
                .offset(c.record_offset)
                .loss(),
            );
            return warnings;
        }
    };
    let stored_crc = c.checked_crc(&file.bytes).unwrap_or(0);
    // The CRC is computed as the walk goes, a block ahead of it: the walk then reads what the
    // CRC just brought into cache, instead of the whole chunk being read twice from memory.
    // A zstd chunk written as one frame with a content checksum (rosbag2's writer sets it)
    // has had its decompressed bytes verified by zstd already: the CRC would check them again.
    let check_crc = !c.partial && stored_crc != 0 && !zstd_verified(file, c);
    let mut hasher = crc32fast::Hasher::new();
    let mut hashed = 0usize;
    const CRC_BLOCK: usize = 16 << 10;
    let mut msg_buf = Vec::new();
    let mut t = ChunkTally::default();
    let stop = walk_chunk_records(data, |opcode, body| {
        let start = body.as_ptr() as usize - data.as_ptr() as usize;
        if check_crc && start + 64 > hashed {
            let to = (hashed + CRC_BLOCK).max(start + 64).min(data.len());
            hasher.update(&data[hashed..to]);
            hashed = to;
        }
        if opcode == op::CHANNEL {
            let at = (c.record_offset, start as u64 - 9);
            if let Some((id, schema_id, topic)) = channel_head(body) {
                let known = file.channel_definition_at(id, at);
                if known.is_some_and(|k| {
                    k.schema_id != schema_id || String::from_utf8_lossy(topic) != k.topic.as_str()
                }) && !t.unseen_redefinitions.iter().any(|(i, _)| *i == id)
                {
                    let name = String::from_utf8_lossy(topic).into_owned();
                    t.unseen_redefinitions.push((id, name));
                }
            }
            return;
        }
        if opcode != op::MESSAGE {
            return;
        }
        let Some((ch, seq, log, publ)) = message_header(body) else {
            return;
        };
        if !t.unseen_redefinitions.is_empty()
            && t.unseen_redefinitions.iter().any(|(i, _)| *i == ch)
        {
            t.misdefined += 1;
            return;
        }
        let Some(topic) = plan.topic_at(fi, ch, (c.record_offset, start as u64)) else {
            t.unknown += 1;
            return;
        };
        if log > i64::MAX as u64 {
            t.clamped += 1;
        }
        // Every topic's messages count as recovered, not only the wanted ones: the number a
        // cut chunk's warning states is then the same whichever topics a command reads.
        t.readable += 1;
        if !plan.topics[topic] || plan.outside(to_ns(log)) {
            return;
        }
        let off = start;
        let mut payload = &body[22..];
        if plan.needs_payload && !plan.message_compression && looks_compressed(payload) {
            t.undeclared = true;
        }
        if plan.message_compression && plan.needs_payload {
            match inflate_message(payload, &mut msg_buf) {
                Ok(()) => payload = &msg_buf,
                Err(Inflate::Corrupt) => {
                    t.bad_payload += 1;
                    return;
                }
                Err(Inflate::TooLarge) => {
                    t.too_large += 1;
                    return;
                }
            }
        }
        let m = RawMessage {
            topic,
            channel_id: ch,
            sequence: seq,
            log_time_ns: to_ns(log),
            publish_time_ns: Some(to_ns(publ)),
            data: payload,
        };
        out.put(
            off as u64,
            Item {
                log_time_ns: m.log_time_ns,
                topic,
                value: f(&m),
            },
        );
    });
    if check_crc {
        hasher.update(&data[hashed..]);
        let crc = hasher.finalize();
        if crc != stored_crc {
            warnings.push(
                Warning::new(
                    WarningCode::ChunkCrcMismatch,
                    format!(
                        "chunk at byte {} fails its CRC (stored {stored_crc:08x}, computed {crc:08x}): its messages may be corrupt",
                        c.record_offset
                    ),
                )
                .file(&name)
                .offset(c.record_offset)
                .loss(),
            );
        }
    }
    warnings.extend(t.warnings(c, &name, stop, data.len()));
    file.bytes.release(c.data_offset, c.data_len);
    dec.release_large();
    warnings
}

/// A chunk whose messages are needed only as their times: read from its message indexes,
/// without decompressing it.
fn scan_chunk_indexes<T, F, S>(
    file: &McapFile,
    fi: usize,
    c: &ChunkLoc,
    plan: &ScanPlan<'_>,
    f: &F,
    out: &mut S,
) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) -> T + Sync,
    S: Sink<T>,
{
    let mut warnings = Vec::new();
    let name = file.path.display().to_string();
    let mut unknown = 0usize;
    let mut clamped = 0usize;
    for ix in &c.indexes {
        let Some(topic) = plan.topic_of(fi, ix.channel_id) else {
            unknown += (u32_at(&file.bytes, ix.body_offset + 2).unwrap_or(0) / 16) as usize;
            continue;
        };
        if !plan.topics[topic] {
            continue;
        }
        let body = &file.bytes[ix.body_offset..ix.body_offset + ix.body_len];
        let n = u32_at(body, 2).unwrap_or(0) as usize / 16;
        for k in 0..n {
            let (Some(log), Some(off)) = (u64_at(body, 6 + 16 * k), u64_at(body, 14 + 16 * k))
            else {
                break;
            };
            if log > i64::MAX as u64 {
                clamped += 1;
            }
            if plan.outside(to_ns(log)) {
                continue;
            }
            let empty = RawMessage {
                topic,
                channel_id: ix.channel_id,
                sequence: 0,
                log_time_ns: to_ns(log),
                publish_time_ns: None,
                data: &[],
            };
            out.put(
                off,
                Item {
                    log_time_ns: to_ns(log),
                    topic,
                    value: f(&empty),
                },
            );
        }
    }
    // As for chunk data: read once, so its mapped pages need not stay resident.
    c.release_indexes(&file.bytes);
    if unknown > 0 {
        warnings.push(unknown_channel_warning(unknown, c, &name));
    }
    warnings.extend(hidden_clamped_warning(clamped, c, &name));
    warnings
}

/// What a walk of a chunk's records met besides the messages it handed on.
#[derive(Default)]
struct ChunkTally {
    /// Messages of channels never defined.
    unknown: usize,
    /// Message payloads that are not valid zstd frames (declared message compression).
    bad_payload: usize,
    /// Message payloads that decompress past the cap.
    too_large: usize,
    /// A payload looks compressed though the bag declares no message compression.
    undeclared: bool,
    /// Messages read (of every topic, wanted or not).
    readable: usize,
    /// Log times at or past 2^63 ns.
    clamped: usize,
    /// Channels this chunk defines otherwise than the file's definitions say (hidden by a
    /// summary that repeats only one of them), and their messages skipped after that.
    unseen_redefinitions: Vec<(u16, String)>,
    misdefined: usize,
}

impl ChunkTally {
    /// The chunk's warnings once walked: `stop` is where its records stopped making sense (the
    /// decompressed length when they did not).
    fn warnings(&self, c: &ChunkLoc, name: &str, stop: usize, data_len: usize) -> Vec<Warning> {
        let mut warnings = Vec::new();
        if c.partial {
            warnings.push(
                Warning::new(
                    WarningCode::Truncated,
                    format!(
                        "last chunk (at byte {}) is cut off: recovered {} message(s) from its readable part",
                        c.record_offset,
                        self.readable
                    ),
                )
                .file(name)
                .offset(c.record_offset)
                .loss(),
            );
        } else if stop != data_len {
            warnings.push(
                Warning::new(
                    WarningCode::CorruptChunk,
                    format!(
                        "chunk at byte {}: records stop making sense at byte {stop} of {} (decompressed); the rest of the chunk is lost",
                        c.record_offset,
                        data_len
                    ),
                )
                .file(name)
                .offset(c.record_offset)
                .loss(),
            );
        }
        if self.unknown > 0 {
            warnings.push(unknown_channel_warning(self.unknown, c, name));
        }
        for (id, topic) in &self.unseen_redefinitions {
            warnings.push(
                Warning::new(
                    WarningCode::ChannelRedefined,
                    format!(
                        "the chunk at byte {} defines channel {id} as '{topic}', unlike the file's summary: its messages after that in this chunk ({} in all such channels) are skipped, and later chunks that do not repeat the definition may count it under the first one",
                        c.record_offset,
                        self.misdefined
                    ),
                )
                .file(name)
                .offset(c.record_offset)
                .loss(),
            );
        }
        warnings.extend(hidden_clamped_warning(self.clamped, c, name));
        if self.bad_payload > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::CorruptMessage,
                    format!(
                        "{} message payload(s) in the chunk at byte {} are not valid zstd frames (rosbag2 message compression): skipped",
                        self.bad_payload,
                        c.record_offset
                    ),
                )
                .file(name)
                .offset(c.record_offset)
                .loss(),
            );
        }
        if self.too_large > 0 {
            warnings.push(message_too_large_warning(
                self.too_large,
                name,
                Some(c.record_offset),
            ));
        }
        if self.undeclared {
            warnings.push(undeclared_compression_warning(name));
        }
        warnings
    }
}

/// Log times past i64 in a chunk: the chunk header's end time shows most of them, warned at
/// open; a header that says otherwise does not hide them.
fn hidden_clamped_warning(clamped: usize, c: &ChunkLoc, file: &str) -> Option<Warning> {
    (clamped > 0 && c.message_end_ns != i64::MAX).then(|| {
        Warning::new(
            WarningCode::LogTimeOutOfRange,
            format!(
                "{clamped} message(s) in the chunk at byte {} have log times at or after 2^63 ns (past the year 2262), which its header does not show: they are read as {} ns",
                c.record_offset,
                i64::MAX
            ),
        )
        .file(file)
        .offset(c.record_offset)
    })
}

fn unknown_channel_warning(n: usize, c: &ChunkLoc, file: &str) -> Warning {
    Warning::new(
        WarningCode::UnknownChannel,
        format!(
            "{n} message(s) in the chunk at byte {} refer to a channel that is never defined: skipped",
            c.record_offset
        ),
    )
    .file(file)
    .offset(c.record_offset)
    .loss()
}

fn scan_loose<T, F, S>(
    file: &McapFile,
    fi: usize,
    plan: &ScanPlan<'_>,
    f: &F,
    dec: &mut Decoder,
    out: &mut S,
) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) -> T + Sync,
    S: Sink<T>,
{
    let mut unknown = 0usize;
    let mut bad = 0usize;
    let mut too_large = 0usize;
    let mut undeclared = false;
    for l in &file.loose {
        let body = &file.bytes[l.body_offset..l.body_offset + l.body_len];
        let Some((ch, seq, log, publ)) = message_header(body) else {
            continue;
        };
        let Some(topic) = plan.topic_at(fi, ch, (l.body_offset as u64, 0)) else {
            unknown += 1;
            continue;
        };
        if !plan.topics[topic] || plan.outside(to_ns(log)) {
            continue;
        }
        let mut payload = &body[22..];
        if plan.needs_payload && !plan.message_compression && looks_compressed(payload) {
            undeclared = true;
        }
        if plan.message_compression && plan.needs_payload {
            match dec.decompress_message(payload) {
                Ok(p) => payload = p,
                Err(Inflate::Corrupt) => {
                    bad += 1;
                    continue;
                }
                Err(Inflate::TooLarge) => {
                    too_large += 1;
                    continue;
                }
            }
        }
        let m = RawMessage {
            topic,
            channel_id: ch,
            sequence: seq,
            log_time_ns: to_ns(log),
            publish_time_ns: Some(to_ns(publ)),
            data: payload,
        };
        out.put(
            l.body_offset as u64,
            Item {
                log_time_ns: m.log_time_ns,
                topic,
                value: f(&m),
            },
        );
    }
    let mut warnings = Vec::new();
    let name = file.path.display().to_string();
    if unknown > 0 {
        warnings.push(
            Warning::new(
                WarningCode::UnknownChannel,
                format!("{unknown} message(s) refer to a channel that is never defined: skipped"),
            )
            .file(&name)
            .loss(),
        );
    }
    if bad > 0 {
        warnings.push(
            Warning::new(
                WarningCode::CorruptMessage,
                format!("{bad} message payload(s) are not valid zstd frames (rosbag2 message compression): skipped"),
            )
            .file(&name)
            .loss(),
        );
    }
    if too_large > 0 {
        warnings.push(message_too_large_warning(too_large, &name, None));
    }
    if undeclared {
        warnings.push(undeclared_compression_warning(&name));
    }
    warnings
}

/// Log times per topic straight from the chunks' message indexes, when every chunk that holds
/// a wanted topic has complete indexes and no file has messages outside chunks; `None`
/// otherwise (the caller scans). Work is one pass over the index entries, in parallel over
/// chunks, with no per-message record: 8 bytes per message kept. Each topic's times are in
/// log-time order (indexes are sorted within a chunk; chunks that overlap are merged by a
/// sort only when the concatenation is not already in order).
pub(crate) fn index_log_times(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    n_topics: usize,
) -> Option<Vec<Vec<i64>>> {
    index_log_times_sizes(files, plan, n_topics, false).map(|(t, _)| t)
}

/// Per topic: log times, and payload lengths aligned with them.
type TimesAndSizes = (Vec<Vec<i64>>, Vec<Vec<u32>>);

/// Bytes of a message record before its payload: opcode (1), record length (8), channel id
/// (2), sequence (4), log time (8), publish time (8).
const MESSAGE_HEAD_BYTES: u64 = 31;

/// [`index_log_times`], and with `sizes` each message's payload length as stored (aligned with
/// its log time; empty vectors without `sizes`), still without decompressing a chunk: a
/// message's record runs from its index offset to the next message's offset in the chunk (or
/// the chunk's end), less the 31-byte message header. A channel or schema definition recorded
/// between two messages of a chunk is counted with the message before it.
pub(crate) fn index_log_times_sizes(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    n_topics: usize,
    sizes: bool,
) -> Option<TimesAndSizes> {
    let jobs = plan_jobs(files, plan);
    // Messages of channels without a (single) definition: the scan reads and reports them.
    let complete = jobs.iter().all(|j| match *j {
        Job::Chunk(fi, ci) => {
            let c = &files[fi].chunks[ci];
            (c.indexes_complete || c.from_summary)
                && c.indexes
                    .iter()
                    .all(|ix| plan.topic_of(fi, ix.channel_id).is_some())
        }
        Job::Loose(_) => false,
    });
    if !complete || plan.window.is_some() {
        return None;
    }
    // Remote files: every index block, and the records of the chunks read record by record
    // below, in one round of requests; then each block is checked as a walk would have.
    let first_chunks = |f: &McapFile| -> Vec<bool> {
        let mut seen = std::collections::HashSet::new();
        f.chunks
            .iter()
            .map(|c| {
                c.indexes
                    .iter()
                    // Every channel is noted (no short circuit).
                    .filter(|ix| seen.insert(ix.channel_id))
                    .count()
                    > 0
            })
            .collect()
    };
    for (fi, f) in files.iter().enumerate().filter(|(_, f)| f.is_remote()) {
        let firsts = if sizes { first_chunks(f) } else { Vec::new() };
        let mut ranges = Vec::new();
        for j in &jobs {
            if let Job::Chunk(jf, ci) = *j {
                if jf == fi {
                    let c = &f.chunks[ci];
                    ranges.extend(c.index_range());
                    if firsts.get(ci).copied().unwrap_or(false) {
                        ranges.push(c.record_range());
                    }
                }
            }
        }
        bagscope_source::add_planned(f.missing_bytes(&ranges));
        if f.ensure(&ranges).is_err() {
            // The scan reads what it can and reports the failure.
            return None;
        }
        let held = jobs.iter().all(|j| match *j {
            Job::Chunk(jf, ci) if jf == fi => {
                let c = &f.chunks[ci];
                !c.from_summary || crate::remote::summary_indexes_hold(&f.bytes, c)
            }
            _ => true,
        });
        if !held {
            return None;
        }
    }
    // Sizes first (from the index record headers), then one sequential copy into vectors
    // allocated once: cheaper than per-chunk vectors, whose page faults cost more than the
    // copying itself.
    let entries = |fi: usize, ix: &crate::mcap_file::IndexLoc| -> Option<(usize, &[u8])> {
        let topic = plan.topic_of(fi, ix.channel_id)?;
        if !plan.topics[topic] {
            return None;
        }
        let file = &files[fi];
        let body = ix
            .body_offset
            .checked_add(ix.body_len)
            .and_then(|end| file.bytes.get(ix.body_offset..end))?;
        let n = (u32_at(body, 2).unwrap_or(0) as usize / 16).min(body.len() / 16);
        Some((topic, body.get(6..6 + 16 * n).unwrap_or(&[])))
    };
    let mut counts = vec![0usize; n_topics];
    for job in &jobs {
        if let Job::Chunk(fi, ci) = *job {
            for ix in &files[fi].chunks[ci].indexes {
                if let Some((t, e)) = entries(fi, ix) {
                    counts[t] += e.len() / 16;
                }
            }
        }
    }
    let mut per_topic: Vec<Vec<i64>> = counts.iter().map(|&n| Vec::with_capacity(n)).collect();
    let mut per_topic_sizes: Vec<Vec<u32>> = counts
        .iter()
        .map(|&n| Vec::with_capacity(if sizes { n } else { 0 }))
        .collect();
    // (offset in the chunk, topic or u32::MAX for an unwanted one, place in its vectors).
    let mut order: Vec<(u64, u32, usize)> = Vec::new();
    // Writers put a channel's definitions (schema, channel) just before its first message (the
    // C++ writer rosbag2 uses) or where it was registered: the chunks holding a channel's first
    // message are read record by record, so the message before a definition is not charged
    // with it. Few chunks: a bag's channels mostly start in its first chunks.
    let first_of_channel: Vec<Vec<bool>> = if sizes {
        files.iter().map(first_chunks).collect()
    } else {
        Vec::new()
    };
    let mut exact: Vec<(u64, u64)> = Vec::new();
    for job in &jobs {
        if let Job::Chunk(fi, ci) = *job {
            let c = &files[fi].chunks[ci];
            order.clear();
            exact.clear();
            if sizes && first_of_channel[fi][ci] {
                record_payload_lengths(&files[fi], c, &mut exact);
            }
            for ix in &c.indexes {
                if let Some((t, e)) = entries(fi, ix) {
                    let at = per_topic[t].len();
                    per_topic[t].extend(entry_times(e));
                    // A time past i64 that the chunk header does not show (entries are in
                    // log-time order: the last is the largest): the scan reads and reports it.
                    if c.message_end_ns != i64::MAX && per_topic[t].last() == Some(&i64::MAX) {
                        return None;
                    }
                    if sizes {
                        per_topic_sizes[t].resize(per_topic[t].len(), 0);
                        order.extend(
                            entry_offsets(e)
                                .enumerate()
                                .map(|(k, o)| (o, t as u32, at + k)),
                        );
                    }
                } else if sizes {
                    // Messages of other topics still end the record before them.
                    let e = raw_index_entries(&files[fi], ix);
                    order.extend(entry_offsets(e).map(|o| (o, u32::MAX, 0)));
                }
            }
            if sizes {
                chunk_message_sizes(c, &mut order, &exact, &mut per_topic_sizes);
            }
            // Read for the last time: its mapped pages need not stay resident.
            c.release_indexes(&files[fi].bytes);
        }
    }
    per_topic
        .par_iter_mut()
        .zip(per_topic_sizes.par_iter_mut())
        .for_each(|(v, s)| {
            if v.windows(2).all(|w| w[0] <= w[1]) {
                return;
            }
            if s.is_empty() {
                v.sort_unstable();
                return;
            }
            // Chunks overlap in time: sort the sizes with their times (stable: equal log
            // times keep file order).
            let mut idx: Vec<usize> = (0..v.len()).collect();
            idx.sort_by_key(|&i| v[i]);
            *v = idx.iter().map(|&i| v[i]).collect();
            *s = idx.iter().map(|&i| s[i]).collect();
        });
    Some((per_topic, per_topic_sizes))
}

/// The entries of a message index record whatever its channel (16 bytes each).
fn raw_index_entries<'a>(file: &'a McapFile, ix: &crate::mcap_file::IndexLoc) -> &'a [u8] {
    let Some(body) = ix
        .body_offset
        .checked_add(ix.body_len)
        .and_then(|end| file.bytes.get(ix.body_offset..end))
    else {
        return &[];
    };
    let n = (u32_at(body, 2).unwrap_or(0) as usize / 16).min(body.len() / 16);
    body.get(6..6 + 16 * n).unwrap_or(&[])
}

/// (offset, payload length) of each message record of chunk `c`, in offset order, read from
/// the decompressed records; nothing when the chunk cannot be decompressed (the offsets then
/// stand in). Its mapped pages are dropped afterwards, as a scan does.
fn record_payload_lengths(file: &McapFile, c: &ChunkLoc, out: &mut Vec<(u64, u64)>) {
    with_decoder(|dec| {
        let Ok(buf) = c
            .checked_crc(&file.bytes)
            .and_then(|_| dec.decompress(&file.bytes, c))
        else {
            return;
        };
        let base = buf.as_ptr() as usize;
        walk_chunk_records(buf, |opcode, body| {
            if opcode == op::MESSAGE && body.len() >= 22 {
                let at = (body.as_ptr() as usize - base - 9) as u64;
                out.push((at, (body.len() - 22) as u64));
            }
        });
    });
    file.bytes.release(c.data_offset, c.data_len);
}

/// Offsets (in the uncompressed chunk) of a message index record's entries.
fn entry_offsets(e: &[u8]) -> impl Iterator<Item = u64> + '_ {
    e.chunks_exact(16).map(|e| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&e[8..]);
        u64::from_le_bytes(b)
    })
}

/// Payload length of each message of one chunk from the offsets of all its messages (`order`:
/// offset, topic, place), written to `out[topic][place]`. Only the index is read, also for
/// uncompressed chunks: reading each record's own length there would touch every page of the
/// bag (measured: 8 s and the whole file resident for a 2.3 GiB bag, against 0.1 s).
/// Saturating: damaged offsets give 0.
fn chunk_message_sizes(
    c: &ChunkLoc,
    order: &mut [(u64, u32, usize)],
    exact: &[(u64, u64)],
    out: &mut [Vec<u32>],
) {
    // Stable sort: each channel's entries are already in order, and it merges such runs.
    order.sort_by_key(|&(o, _, _)| o);
    for i in 0..order.len() {
        let (off, t, place) = order[i];
        if t == u32::MAX {
            continue;
        }
        let next = order.get(i + 1).map_or(c.uncompressed_size, |x| x.0);
        let payload = match exact.binary_search_by_key(&off, |&(o, _)| o) {
            Ok(k) => exact[k].1,
            Err(_) => next.saturating_sub(off).saturating_sub(MESSAGE_HEAD_BYTES),
        };
        if let Some(slot) = out.get_mut(t as usize).and_then(|v| v.get_mut(place)) {
            *slot = u32::try_from(payload).unwrap_or(u32::MAX);
        }
    }
}

/// Log times of a message index record's entries ((log time, offset) pairs of 16 bytes).
fn entry_times(e: &[u8]) -> impl Iterator<Item = i64> + '_ {
    e.chunks_exact(16).map(|e| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&e[..8]);
        to_ns(u64::from_le_bytes(b))
    })
}

/// Per-topic message count and first / last log time, from the message index records alone:
/// counts from their lengths, first and last from the entries of only the few chunks that can
/// hold a topic's extremes (chunks visited in order of their header's start (end) time, until
/// one starts after (ends before) the best time found). Work grows with the number of chunks,
/// not of messages. `None` when an index is missing or incomplete, or a chunk's header time
/// range is not confirmed by the summary or does not contain the entries read (the pruning
/// would not be sound).
pub(crate) fn index_spans(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    n_topics: usize,
) -> Option<Vec<TopicSpan>> {
    if files.iter().any(|f| f.summary_only.is_some()) {
        return summary_spans(files, plan, n_topics);
    }
    let jobs = plan_jobs(files, plan);
    let mut recs: Vec<Vec<IndexRec>> = (0..n_topics).map(|_| Vec::new()).collect();
    let mut counts = vec![0u64; n_topics];
    for job in &jobs {
        let Job::Chunk(fi, ci) = *job else {
            return None;
        };
        let c = &files[fi].chunks[ci];
        // The pruning below trusts each chunk's header time range: only when the summary's
        // Chunk Index says the same (a corrupted copy shows as a mismatch).
        let confirmed = files[fi].summary_chunk_times.get(&c.record_offset)
            == Some(&(c.message_start_ns, c.message_end_ns));
        if !(c.indexes_complete || c.from_summary)
            || !confirmed
            || c.message_start_ns > c.message_end_ns
        {
            return None;
        }
        for ix in &c.indexes {
            // Messages of a channel without a (single) definition: the scan reports them.
            let topic = plan.topic_of(fi, ix.channel_id)?;
            if !plan.topics.get(topic).copied().unwrap_or(false) {
                continue;
            }
            // Complete indexes have been checked: 6 header bytes, then 16 bytes an entry.
            counts[topic] += (ix.body_len.saturating_sub(6) / 16) as u64;
            recs[topic].push(IndexRec {
                start: c.message_start_ns,
                end: c.message_end_ns,
                file: fi,
                body_offset: ix.body_offset,
                record_end: ix.body_offset.saturating_add(ix.body_len),
            });
        }
    }
    spans_of(files, recs, counts)
}

/// [`index_spans`] for files opened from their summary alone: counts from the Statistics
/// records, ranges and index offsets from the Chunk Index records; only the Message Index
/// records of the chunks that can hold a topic's extremes are read.
fn summary_spans(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    n_topics: usize,
) -> Option<Vec<TopicSpan>> {
    let mut recs: Vec<Vec<IndexRec>> = (0..n_topics).map(|_| Vec::new()).collect();
    let mut counts = vec![0u64; n_topics];
    for (fi, f) in files.iter().enumerate() {
        let s = f.summary_only.as_ref()?;
        let per_channel = f.stats_channel_counts.as_ref()?;
        // Statistics must account for every message (writers may leave the per-channel
        // counts out), and every channel with messages needs index records to find its times.
        if Some(per_channel.values().sum::<u64>()) != f.stats_message_count {
            return None;
        }
        let indexed: std::collections::BTreeSet<u16> = s
            .chunks
            .iter()
            .flat_map(|c| c.index_offsets.iter().map(|&(ch, _)| ch))
            .collect();
        if per_channel
            .iter()
            .any(|(ch, &n)| (n > 0) != indexed.contains(ch))
        {
            return None;
        }
        for (&ch, &n) in per_channel {
            if let Some(t) = plan.topic_of(fi, ch) {
                if plan.topics.get(t).copied().unwrap_or(false) {
                    counts[t] += n;
                }
            }
        }
        for c in &s.chunks {
            if c.start_ns > c.end_ns {
                return None;
            }
            // Each Message Index record ends where the next one after the chunk begins (the
            // last at the end of the chunk's index block): what a remote read fetches.
            let mut offs: Vec<u64> = c.index_offsets.iter().map(|&(_, o)| o).collect();
            offs.sort_unstable();
            let block_end = c
                .offset
                .saturating_add(c.length)
                .saturating_add(c.index_length);
            for &(ch, off) in &c.index_offsets {
                let Some(topic) = plan.topic_of(fi, ch) else {
                    continue;
                };
                if !plan.topics.get(topic).copied().unwrap_or(false) {
                    continue;
                }
                // The record itself is only read if the pruning visits it (then checked).
                let at = usize::try_from(off).ok()?;
                let k = offs.partition_point(|&o| o <= off);
                let end = offs.get(k).copied().unwrap_or(block_end);
                recs[topic].push(IndexRec {
                    start: c.start_ns,
                    end: c.end_ns,
                    file: fi,
                    body_offset: at.checked_add(9)?,
                    record_end: usize::try_from(end).ok()?,
                });
            }
        }
    }
    spans_of(files, recs, counts)
}

/// A (chunk, channel) Message Index record and its chunk's log-time range.
struct IndexRec {
    start: i64,
    end: i64,
    file: usize,
    body_offset: usize,
    /// Where the record ends (as the layout says; checked against its own length when read).
    record_end: usize,
}

impl IndexRec {
    fn range(&self) -> std::ops::Range<u64> {
        self.body_offset.saturating_sub(9) as u64..self.record_end as u64
    }
}

/// First and last log time per topic from the index records, reading only the records of
/// chunks whose range can still hold a better first (last) time. `None` when a record read is
/// malformed or holds a time outside its chunk's range (the pruning would not be sound).
fn spans_of(
    files: &[McapFile],
    recs: Vec<Vec<IndexRec>>,
    counts: Vec<u64>,
) -> Option<Vec<TopicSpan>> {
    // Remote files: the records each topic's search reads first (the chunks that start
    // first and end last), in one round of requests; any further one is fetched when read.
    if files.iter().any(McapFile::is_remote) {
        let mut want: std::collections::BTreeMap<usize, Vec<std::ops::Range<u64>>> =
            Default::default();
        for r in &recs {
            let first = r.iter().map(|x| x.start).min();
            let last = r.iter().map(|x| x.end).max();
            for x in r {
                if Some(x.start) == first || Some(x.end) == last {
                    want.entry(x.file).or_default().push(x.range());
                }
            }
        }
        for (fi, ranges) in want {
            files[fi].ensure(&ranges).ok()?;
        }
    }
    let entries = |r: &IndexRec| -> Option<&[u8]> {
        files[r.file].ensure(&[r.range()]).ok()?;
        let bytes = &files[r.file].bytes;
        // The record header before the body: opcode and length must agree with the body.
        let op_at = r.body_offset.checked_sub(9)?;
        if bytes.get(op_at) != Some(&mcap::records::op::MESSAGE_INDEX) {
            return None;
        }
        let len = usize::try_from(u64_at(bytes, op_at + 1)?).ok()?;
        let body = bytes.get(r.body_offset..r.body_offset.checked_add(len)?)?;
        let n = u32_at(body, 2)? as usize;
        if !n.is_multiple_of(16) || 6 + n != body.len() {
            return None;
        }
        body.get(6..6 + n)
    };
    let mut out = Vec::with_capacity(counts.len());
    for (mut r, count) in recs.into_iter().zip(counts) {
        let mut first: Option<i64> = None;
        r.sort_by_key(|x| x.start);
        for x in &r {
            if first.is_some_and(|f| x.start >= f) {
                break;
            }
            for t in entry_times(entries(x)?) {
                if t < x.start || t > x.end {
                    return None;
                }
                first = Some(first.map_or(t, |f| f.min(t)));
            }
        }
        let mut last: Option<i64> = None;
        r.sort_by_key(|x| std::cmp::Reverse(x.end));
        for x in &r {
            if last.is_some_and(|l| x.end <= l) {
                break;
            }
            for t in entry_times(entries(x)?) {
                if t < x.start || t > x.end {
                    return None;
                }
                last = Some(last.map_or(t, |l| l.max(t)));
            }
        }
        out.push(TopicSpan {
            count,
            first_log_time_ns: first,
            last_log_time_ns: last,
        });
    }
    Some(out)
}

/// A topic's message count and first and last log times, as `Bag::topic_spans` reads them from
/// the summary or the message indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TopicSpan {
    /// Messages of the topic.
    pub count: u64,
    /// Smallest log time, ns; `None` without messages.
    pub first_log_time_ns: Option<i64>,
    /// Largest log time, ns; `None` without messages.
    pub last_log_time_ns: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn frame(payload: &[u8], checksum: bool) -> Vec<u8> {
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.include_checksum(checksum).unwrap();
        e.write_all(payload).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn streamed_decompression_checks_size_and_checksum() {
        let payload: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.include_checksum(true).unwrap();
        e.write_all(&payload).unwrap();
        let frame = e.finish().unwrap();
        let n = payload.len() as u64;
        let run = |data: &[u8], size: u64, partial: bool| {
            let mut buf = Vec::new();
            decompress_streamed(Compression::Zstd, data, size, partial, &mut buf).map(|_| buf)
        };
        assert!(run(&frame, n, false).is_ok_and(|b| b == payload));
        // The stated size disagrees with the data, either way.
        // (let-else: a failure must not print the whole buffer.)
        let Err(err) = run(&frame, n - 1, false) else {
            panic!("size n - 1 accepted")
        };
        assert!(
            err.contains("or more") && err.contains(&format!("header says {}", n - 1)),
            "{err}"
        );
        let Err(err) = run(&frame, n + 1, false) else {
            panic!("size n + 1 accepted")
        };
        assert!(err.contains(&format!("decompressed to {n} bytes")), "{err}");
        // A wrong content checksum (the frame's last 4 bytes) is caught: the frame is read to
        // its end although the stated size is reached before the checksum.
        let mut bad = frame.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0x40;
        assert!(run(&bad, n, false).is_err());
        // A chunk cut off by the end of the file: what could be decoded, no error.
        let cut = run(&frame[..frame.len() / 2], n, true).unwrap();
        // (zstd gives out whole blocks: possibly nothing of a half frame.)
        assert!(payload.starts_with(&cut));
    }

    #[test]
    fn only_one_checksummed_frame_spares_the_crc() {
        let payload: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i * 7919).to_le_bytes())
            .collect();
        let with = frame(&payload, true);
        assert!(is_checksummed_zstd_frame(&with));
        assert!(!is_checksummed_zstd_frame(&frame(&payload, false)));
        // A second frame after a checksummed one: its bytes would go unverified.
        let mut two = with.clone();
        two.extend(frame(&payload, false));
        assert!(!is_checksummed_zstd_frame(&two));
        // Cut short, or not zstd at all.
        assert!(!is_checksummed_zstd_frame(&with[..with.len() - 3]));
        assert!(!is_checksummed_zstd_frame(b"\x04\x22\x4d\x18 lz4"));
    }
}
