//! Column scans: per topic, the log time and `K` values of every message, written by the
//! parallel scan straight into their final arrays.
//!
//! Chunk message indexes say how many messages of each channel a chunk holds, so every
//! (chunk, topic) pair gets its own slice of the topic's arrays before anything is read, and
//! each worker writes its chunk's values in place. Nothing is collected into per-chunk pieces
//! and copied afterwards: the arrays are the only per-message memory (8·(K+1) bytes a
//! message), and each page of them is touched once. Jobs whose counts are not known in
//! advance (loose messages, chunks without complete indexes) are scanned first into pieces
//! and copied into their slices; an index that undercounts its chunk makes the whole scan
//! start over without trusting any index.

use rayon::prelude::*;

use crate::error::Warning;
use crate::mcap_file::{u32_at, McapFile};
use crate::scan::{
    for_each_fetched, plan_jobs, run_job, with_decoder, Item, Job, RawMessage, ScanPlan, Sink,
    TopicParts,
};

/// One topic's scan results, in log-time order (stable: equal log times keep file order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns<const K: usize> {
    /// Log time of each message, ns.
    pub log_time_ns: Vec<i64>,
    /// `values[k][i]` is the `k`-th value the scan function returned for message `i`.
    pub values: [Vec<i64>; K],
}

// Not derived: arrays of a generic length have no `Default`.
impl<const K: usize> Default for Columns<K> {
    fn default() -> Self {
        Columns {
            log_time_ns: Vec::new(),
            values: std::array::from_fn(|_| Vec::new()),
        }
    }
}

impl<const K: usize> Columns<K> {
    fn zeroed(n: usize) -> Self {
        // vec![0; n] comes from calloc: pages are mapped when first written, by the workers.
        let c = Columns {
            log_time_ns: vec![0; n],
            values: std::array::from_fn(|_| vec![0; n]),
        };
        crate::advise_huge_pages(&c.log_time_ns);
        for v in &c.values {
            crate::advise_huge_pages(v);
        }
        c
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.log_time_ns.len()
    }

    /// True when no message was scanned.
    pub fn is_empty(&self) -> bool {
        self.log_time_ns.is_empty()
    }

    /// Keeps the rows for which `keep(i)` holds, in order, without reallocating.
    pub fn retain_rows(&mut self, mut keep: impl FnMut(usize) -> bool) {
        let n = self.len();
        let mut w = 0;
        for r in 0..n {
            if keep(r) {
                if w != r {
                    self.log_time_ns[w] = self.log_time_ns[r];
                    for v in &mut self.values {
                        v[w] = v[r];
                    }
                }
                w += 1;
            }
        }
        self.log_time_ns.truncate(w);
        for v in &mut self.values {
            v.truncate(w);
        }
    }

    /// Stable sort of the rows by log time, if they are not in order already (chunks that
    /// overlap in time). Needs 12 bytes a message while it runs.
    fn sort_by_log_time(&mut self) {
        if self.log_time_ns.windows(2).all(|w| w[0] <= w[1]) {
            return;
        }
        let log = &self.log_time_ns;
        // 32-bit row numbers unless the topic is too long for them.
        match u32::try_from(self.len()) {
            Ok(n) => {
                let mut perm: Vec<u32> = (0..n).collect();
                perm.sort_by_key(|&i| log[i as usize]);
                self.permute(perm.iter().map(|&i| i as usize));
            }
            Err(_) => {
                let mut perm: Vec<usize> = (0..self.len()).collect();
                perm.sort_by_key(|&i| log[i]);
                self.permute(perm.iter().copied());
            }
        }
    }

    /// Reorders every column so that row `k` becomes the old row `order[k]`.
    fn permute(&mut self, order: impl Iterator<Item = usize> + Clone) {
        let apply = |col: &mut Vec<i64>| {
            let sorted: Vec<i64> = order.clone().map(|i| col[i]).collect();
            *col = sorted;
        };
        apply(&mut self.log_time_ns);
        for v in &mut self.values {
            apply(v);
        }
    }
}

/// One job's slice of one topic's arrays, and how much of it has been written.
struct Slot<'s, const K: usize> {
    topic: usize,
    log: &'s mut [i64],
    values: [&'s mut [i64]; K],
    written: usize,
}

/// Writes a job's messages into its slots; notes when a topic brings more than its slot holds.
struct SlotSink<'s, const K: usize> {
    slots: Vec<Slot<'s, K>>,
    overflow: bool,
}

/// Bits of a file-order key below the job number: the message's byte offset in its chunk
/// (or, for messages outside chunks, in its file).
const ORDER_OFFSET_BITS: u32 = 40;

/// A message's position in file order: its job (chunks and loose messages in file order), then
/// its offset in that job's bytes.
fn order_key(job: usize, offset: u64) -> i64 {
    let offset = offset.min((1 << ORDER_OFFSET_BITS) - 1);
    ((job as i64) << ORDER_OFFSET_BITS) | offset as i64
}

/// A sink that replaces the last value of each row with the message's [`order_key`].
struct Ordered<'a, S> {
    inner: &'a mut S,
    job: usize,
}

impl<S: Sink<[i64; K]>, const K: usize> Sink<[i64; K]> for Ordered<'_, S> {
    fn put(&mut self, offset: u64, mut it: Item<[i64; K]>) {
        if let Some(last) = it.value.last_mut() {
            *last = order_key(self.job, offset);
        }
        self.inner.put(offset, it);
    }
}

/// Runs one job into `out`, through [`Ordered`] when `ordered`.
#[allow(clippy::too_many_arguments)]
fn run_into<const K: usize, F, S>(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    f: &F,
    dec: &mut crate::scan::Decoder,
    jobs: &[Job],
    ji: usize,
    out: &mut S,
    ordered: bool,
) -> Vec<Warning>
where
    F: Fn(&RawMessage<'_>) -> [i64; K] + Sync,
    S: Sink<[i64; K]>,
{
    if ordered {
        let mut o = Ordered {
            inner: out,
            job: ji,
        };
        run_job(files, plan, f, dec, &jobs[ji], &mut o)
    } else {
        run_job(files, plan, f, dec, &jobs[ji], out)
    }
}

/// Places a job's pieces (scanned ahead) into its slots.
fn copy_pieces<const K: usize>(sink: &mut SlotSink<'_, K>, pieces: TopicParts<[i64; K]>) {
    for (t, v) in pieces.0 {
        for (log, values) in v {
            sink.write(t, log, values);
        }
    }
}

impl<const K: usize> SlotSink<'_, K> {
    fn write(&mut self, topic: usize, log: i64, values: [i64; K]) {
        // Few topics per chunk: a linear search beats a map.
        let Some(s) = self.slots.iter_mut().find(|s| s.topic == topic) else {
            self.overflow = true;
            return;
        };
        let i = s.written;
        if i >= s.log.len() {
            self.overflow = true;
            return;
        }
        s.log[i] = log;
        for (col, v) in s.values.iter_mut().zip(values) {
            col[i] = v;
        }
        s.written = i + 1;
    }
}

impl<const K: usize> Sink<[i64; K]> for SlotSink<'_, K> {
    fn put(&mut self, _offset: u64, it: Item<[i64; K]>) {
        self.write(it.topic, it.log_time_ns, it.value);
    }
}

/// A job scanned ahead into pieces (its counts were not known), and its warnings.
type Prescanned<const K: usize> = (TopicParts<[i64; K]>, Vec<Warning>);

/// Messages per wanted topic in a chunk, from its message indexes (`None`: not known).
fn indexed_counts(
    file: &McapFile,
    fi: usize,
    job: &Job,
    plan: &ScanPlan<'_>,
) -> Option<Vec<(usize, usize)>> {
    let Job::Chunk(_, ci) = *job else {
        return None;
    };
    let c = &file.chunks[ci];
    if !(c.indexes_complete || c.from_summary) {
        return None;
    }
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for ix in &c.indexes {
        let Some(topic) = plan.topic_of(fi, ix.channel_id).filter(|&t| plan.topics[t]) else {
            continue;
        };
        // A chunk known from the summary (a remote file, its indexes not fetched): the count
        // its record length implies. A wrong one is caught as for a local index that
        // undercounts (the scan starts over counting by reading).
        let n = if c.from_summary {
            ix.body_len.saturating_sub(6) / 16
        } else {
            let end = ix.body_offset.checked_add(ix.body_len)?;
            let body = file.bytes.get(ix.body_offset..end)?;
            u32_at(body, 2)? as usize / 16
        };
        match counts.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, k)) => *k += n,
            None => counts.push((topic, n)),
        }
    }
    Some(counts)
}

/// The column scan of MCAP files. With `ordered`, the last value of each row is replaced by
/// the message's position in file order (an increasing key: chunks in file order, records in
/// chunk order), the order [`crate::Bag::visit`] walks them in.
pub(crate) fn scan_files_columns<const K: usize, F>(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    n_topics: usize,
    f: &F,
    ordered: bool,
) -> (Vec<Columns<K>>, Vec<Warning>)
where
    F: Fn(&RawMessage<'_>) -> [i64; K] + Sync,
{
    if let Some(out) = try_scan(files, plan, n_topics, f, true, ordered) {
        return out;
    }
    // An index undercounted its chunk: count every job by scanning it instead.
    try_scan(files, plan, n_topics, f, false, ordered)
        .expect("counts from the scan itself always fit")
}

/// `None` when a chunk held more messages of a topic than its index said.
fn try_scan<const K: usize, F>(
    files: &[McapFile],
    plan: &ScanPlan<'_>,
    n_topics: usize,
    f: &F,
    trust_indexes: bool,
    ordered: bool,
) -> Option<(Vec<Columns<K>>, Vec<Warning>)>
where
    F: Fn(&RawMessage<'_>) -> [i64; K] + Sync,
{
    let jobs = plan_jobs(files, plan);
    let job_file = |j: &Job| match *j {
        Job::Chunk(fi, _) | Job::Loose(fi) => fi,
    };
    let counted: Vec<Option<Vec<(usize, usize)>>> = jobs
        .iter()
        .map(|j| {
            let fi = job_file(j);
            trust_indexes
                .then(|| indexed_counts(&files[fi], fi, j, plan))
                .flatten()
        })
        .collect();
    // Jobs without counts first, into pieces: their lengths are their counts.
    let uncounted: Vec<Job> = jobs
        .iter()
        .zip(&counted)
        .filter(|(_, c)| c.is_none())
        .map(|(j, _)| *j)
        .collect();
    let uncounted_at: Vec<usize> = (0..jobs.len()).filter(|&i| counted[i].is_none()).collect();
    let mut scanned: Vec<Option<Prescanned<K>>> = (0..jobs.len()).map(|_| None).collect();
    let mut fetch_warnings = for_each_fetched(files, plan, &uncounted, false, |batch| {
        let part: Vec<(usize, Prescanned<K>)> = uncounted_at[batch]
            .par_iter()
            .map(|&ji| {
                with_decoder(|dec| {
                    let mut p = TopicParts(Vec::new());
                    let w = run_into(files, plan, f, dec, &jobs, ji, &mut p, ordered);
                    (ji, (p, w))
                })
            })
            .collect();
        for (ji, p) in part {
            scanned[ji] = Some(p);
        }
    });
    let is_counted: Vec<bool> = counted.iter().map(Option::is_some).collect();
    let counts: Vec<Vec<(usize, usize)>> = counted
        .into_iter()
        .zip(&scanned)
        .map(|(c, s)| match (c, s) {
            (Some(c), _) => c,
            (None, Some((p, _))) => p.0.iter().map(|(t, v)| (*t, v.len())).collect(),
            (None, None) => Vec::new(),
        })
        .collect();
    let mut totals = vec![0usize; n_topics];
    for c in &counts {
        for &(t, n) in c {
            totals[t] += n;
        }
    }
    let mut out: Vec<Columns<K>> = totals.iter().map(|&n| Columns::zeroed(n)).collect();

    // Carve each topic's arrays into one slice per job, in job (file) order.
    let mut rest: Vec<(&mut [i64], [&mut [i64]; K])> = out
        .iter_mut()
        .map(|c| {
            let mut vals = c.values.iter_mut();
            (
                &mut c.log_time_ns[..],
                std::array::from_fn(|_| &mut vals.next().expect("K columns")[..]),
            )
        })
        .collect();
    let mut sinks: Vec<SlotSink<'_, K>> = Vec::with_capacity(jobs.len());
    for c in &counts {
        let mut slots = Vec::with_capacity(c.len());
        for &(t, n) in c {
            let (log_rest, vals_rest) = &mut rest[t];
            let (log, tail) = std::mem::take(log_rest).split_at_mut(n);
            *log_rest = tail;
            let values = std::array::from_fn(|k| {
                let (head, tail) = std::mem::take(&mut vals_rest[k]).split_at_mut(n);
                vals_rest[k] = tail;
                head
            });
            slots.push(Slot {
                topic: t,
                log,
                values,
                written: 0,
            });
        }
        sinks.push(SlotSink {
            slots,
            overflow: false,
        });
    }

    // The counted jobs (remote files: fetched a batch at a time as they are read); the
    // pieces of uncounted jobs between them are copied in their turn.
    let counted_idx: Vec<usize> = (0..jobs.len()).filter(|&i| is_counted[i]).collect();
    let counted_jobs: Vec<Job> = counted_idx.iter().map(|&i| jobs[i]).collect();
    let mut warnings: Vec<Vec<Warning>> = Vec::with_capacity(jobs.len() + 1);
    let mut done = 0usize;
    let mut sinks_left = &mut sinks[..];
    let mut scanned_left = &mut scanned[..];
    fetch_warnings.extend(for_each_fetched(
        files,
        plan,
        &counted_jobs,
        false,
        |batch| {
            let upto = if batch.end == counted_jobs.len() {
                jobs.len()
            } else {
                counted_idx[batch.end - 1] + 1
            };
            let (s_now, s_rest) = std::mem::take(&mut sinks_left).split_at_mut(upto - done);
            let (p_now, p_rest) = std::mem::take(&mut scanned_left).split_at_mut(upto - done);
            let base = done;
            let part: Vec<Vec<Warning>> = s_now
                .par_iter_mut()
                .enumerate()
                .zip(p_now.par_iter_mut())
                .map(|((k, sink), pre)| match pre.take() {
                    Some((pieces, w)) => {
                        copy_pieces(sink, pieces);
                        w
                    }
                    None if is_counted[base + k] => with_decoder(|dec| {
                        run_into(files, plan, f, dec, &jobs, base + k, sink, ordered)
                    }),
                    // Not scanned ahead (the read stopped): nothing to place.
                    None => Vec::new(),
                })
                .collect();
            warnings.extend(part);
            sinks_left = s_rest;
            scanned_left = p_rest;
            done = upto;
        },
    ));
    // Pieces of uncounted jobs after the last counted one read (all of them when no job was
    // counted, or the read stopped).
    for (sink, pre) in sinks_left.iter_mut().zip(scanned_left.iter_mut()) {
        if let Some((pieces, w)) = pre.take() {
            copy_pieces(sink, pieces);
            warnings.push(w);
        }
    }
    warnings.push(fetch_warnings);
    if sinks.iter().any(|s| s.overflow) {
        return None;
    }
    // Slices a job did not fill (messages lost to damage) are closed up, in place.
    let written: Vec<Vec<(usize, usize, usize)>> = sinks
        .iter()
        .map(|s| {
            s.slots
                .iter()
                .map(|sl| (sl.topic, sl.log.len(), sl.written))
                .collect()
        })
        .collect();
    drop(sinks);
    let mut read = vec![0usize; n_topics];
    let mut write = vec![0usize; n_topics];
    for job in written {
        for (t, len, n) in job {
            let c = &mut out[t];
            if read[t] != write[t] {
                c.log_time_ns.copy_within(read[t]..read[t] + n, write[t]);
                for v in &mut c.values {
                    v.copy_within(read[t]..read[t] + n, write[t]);
                }
            }
            read[t] += len;
            write[t] += n;
        }
    }
    for (c, &n) in out.iter_mut().zip(&write) {
        c.log_time_ns.truncate(n);
        for v in &mut c.values {
            v.truncate(n);
        }
        c.sort_by_log_time();
    }
    crate::release_freed_memory();
    Some((out, warnings.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retain_rows_keeps_order_and_alignment() {
        let mut c = Columns::<1> {
            log_time_ns: vec![1, 2, 3, 4, 5],
            values: [vec![10, 20, 30, 40, 50]],
        };
        c.retain_rows(|i| i % 2 == 0);
        assert_eq!(c.log_time_ns, vec![1, 3, 5]);
        assert_eq!(c.values[0], vec![10, 30, 50]);
    }

    #[test]
    fn sort_is_stable_and_moves_every_column() {
        let mut c = Columns::<2> {
            log_time_ns: vec![5, 1, 5, 0, 1],
            values: [vec![0, 1, 2, 3, 4], vec![9, 8, 7, 6, 5]],
        };
        c.sort_by_log_time();
        assert_eq!(c.log_time_ns, vec![0, 1, 1, 5, 5]);
        assert_eq!(c.values[0], vec![3, 1, 4, 0, 2]);
        assert_eq!(c.values[1], vec![6, 8, 5, 9, 7]);
    }
}
