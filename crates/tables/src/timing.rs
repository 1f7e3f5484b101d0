//! The timing table: one row per message (per transform on TF topics) of the exported topics,
//! sorted by (log time, file order), with each topic's clock axis. The one producer of its
//! rows, for every form it takes: `export --timing-only`'s files and `batch`'s timing table
//! ([`write_row_groups`]), the DataFrame of `Bag::timing` and the columns of the Python
//! package's `Bag.timing` ([`timing_columns`]), and its batches (`Bag.timing_batches`,
//! [`timing_batches`]).
//!
//! Two reads of the bag, each chunk by chunk in order (`Bag::scan_in_order`): the first
//! ([`timing_plan`]) takes the exported topics' (and any clock topic's) times, as `clocks`
//! reads them, and counts the rows (TF transforms), for the clocks analysis that decides each
//! topic's `clock_axis`; the second writes the rows straight into their columns, a batch at a
//! time. Memory: the first read's 24 bytes a message, then one batch (or row group) of the
//! table; string columns are dictionary keys (one `u32` a row, shared by `topic`, `type` and
//! `clock_axis`), validity packed eight rows a byte.
//!
//! What reading a stamp means and the clocks analysis are the caller's ([`Stamps`] and the
//! analysis handed to [`timing_plan`]): this module knows the table, not the analysis.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bagscope_bag::{Bag, Columns, Item, RawMessage, ScanOrderBroken, Warning};
use bagscope_tf::{shared_frame, Frame, FrameIds};
use polars::prelude::DataFrame;

use crate::export::{ExportReport, ExportedTable};
use crate::{frame, Col, FramesError, Result, Sink};

/// How the caller reads a message's times: for the first read, as its clocks analysis takes
/// them; for the table, as cells.
pub trait Stamps: Sync {
    /// The message's publish time and stamp as the clocks analysis takes them (with whatever
    /// values the caller uses for "none" and "unreadable"), counting what it needs.
    fn values(&self, m: &RawMessage<'_>) -> [i64; 2];
    /// The message's publish time and stamp as table cells (`None`: null).
    fn cells(&self, m: &RawMessage<'_>) -> (Option<i64>, Option<i64>);
    /// Forgets what [`Stamps::values`] counted: the first read starts over.
    fn restart(&self);
}

/// The clocks analysis of the first read, given the topics whose times were read (indexed like
/// `bag.topics`), their [`Stamps::values`] in log-time order and the read's warnings: each bag
/// topic's `clock_axis` value and the warnings the table reports.
pub type Axes<'a> =
    dyn FnOnce(&[bool], Vec<Columns<2>>, Vec<Warning>) -> (Vec<String>, Vec<Warning>) + 'a;

/// A column of `i64` with nulls: `valid` is `None` when no value is null.
#[derive(Debug, Clone, Default)]
pub struct NullableI64 {
    /// The values; a null row's value is 0.
    pub values: Vec<i64>,
    /// Per row, whether it has a value, packed as Arrow's validity bitmap (bit `i % 8` of byte
    /// `i / 8`); `None`: every row has one.
    pub valid: Option<Vec<u8>>,
}

/// A string column as keys into a dictionary, with nulls.
#[derive(Debug, Clone, Default)]
pub struct NullableKeys {
    /// Per row, the index of its string; a null row's key is 0.
    pub keys: Vec<u32>,
    /// Per row, whether it has a value, packed as in [`NullableI64::valid`] (`None`: every
    /// row has one).
    pub valid: Option<Vec<u8>>,
}

/// The timing table as columns. `topic`, `type` and `clock_axis` share the keys `topic_key`
/// (a bag topic's index) into `topic_names`, `type_names` and `axis_names`; `parent_frame` and
/// `child_frame` are keys into `frame_names`.
#[derive(Debug, Clone, Default)]
pub struct TimingColumns {
    /// The table's column names, in export's order.
    pub column_names: Vec<String>,
    /// The `bag` column's value on every row (`None`: the table has no `bag` column).
    pub bag_name: Option<String>,
    /// Per bag topic: its name, message type and clock axis (`wall`, `sim`, ..., `none`).
    pub topic_names: Vec<String>,
    /// See `topic_names`.
    pub type_names: Vec<String>,
    /// See `topic_names`.
    pub axis_names: Vec<String>,
    /// The frame names `parent_frame` and `child_frame` index.
    pub frame_names: Vec<String>,
    /// Per row, its bag topic's index.
    pub topic_key: Vec<u32>,
    /// Per row: log time, ns.
    pub log_time_ns: Vec<i64>,
    /// Per row: publish time, ns (null when the storage has none).
    pub publish_time_ns: NullableI64,
    /// Per row: header stamp (a TF row: its transform's), ns; null without one.
    pub header_stamp_ns: NullableI64,
    /// Per row: the message's serialised size.
    pub size_bytes: Vec<i64>,
    /// TF rows: the transform's parent frame; null otherwise.
    pub parent_frame: NullableKeys,
    /// TF rows: the transform's child frame; null otherwise.
    pub child_frame: NullableKeys,
    /// TF rows: the transform's index in its message; null otherwise.
    pub transform_index: NullableI64,
}

impl TimingColumns {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.log_time_ns.len()
    }

    /// True when the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.log_time_ns.is_empty()
    }
}

/// A value no time, size or key takes: a null while the columns are filled.
const NULL: i64 = i64::MIN;
/// A null frame key while the columns are filled.
const NULL_KEY: u32 = u32::MAX;

/// A frame key column with [`NULL_KEY`] for its nulls, as keys and validity.
fn nullable_keys(mut keys: Vec<u32>) -> NullableKeys {
    let valid = keys.contains(&NULL_KEY).then(|| {
        let v = packed(keys.iter().map(|&k| k != NULL_KEY), keys.len());
        keys.iter_mut()
            .filter(|k| **k == NULL_KEY)
            .for_each(|k| *k = 0);
        v
    });
    NullableKeys { keys, valid }
}

fn nullable(mut values: Vec<i64>) -> NullableI64 {
    let valid = values.contains(&NULL).then(|| {
        let v = packed(values.iter().map(|&x| x != NULL), values.len());
        values
            .iter_mut()
            .filter(|x| **x == NULL)
            .for_each(|x| *x = 0);
        v
    });
    NullableI64 { values, valid }
}

/// `n` flags packed eight a byte, bit `i % 8` of byte `i / 8` (Arrow's validity bitmaps).
fn packed(flags: impl Iterator<Item = bool>, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n.div_ceil(8)];
    for (i, f) in flags.enumerate() {
        if f {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

/// Whether bit `i` of a validity bitmap is set (`None`: every row is valid).
fn is_valid(valid: Option<&[u8]>, i: usize) -> bool {
    valid.is_none_or(|v| v[i / 8] & (1 << (i % 8)) != 0)
}

/// Rows per batch of [`timing_batches`] unless asked otherwise (the Python package's
/// `Bag.timing_batches` default).
pub const DEFAULT_ROWS_PER_BATCH: usize = 65_536;

/// What the timing table is made of: the bag's topics it holds, in table order (sorted by
/// name, then type), and its `bag` column.
#[derive(Debug, Clone)]
pub struct TimingRequest {
    /// The exported topics (indices into `bag.topics`).
    pub exported: Vec<usize>,
    /// The `bag` column's value (`None`: the table has no `bag` column).
    pub bag_name: Option<String>,
}

/// What the second read takes from the first ([`timing_plan`]): the table's columns, each
/// topic's clock axis, the row count, and the report of that read. Held: the per-topic names,
/// nothing per message.
#[derive(Debug, Clone)]
pub struct TimingPlan {
    /// The columns' names and dictionaries (no rows).
    shape: TimingColumns,
    exported: Vec<bool>,
    is_tf: Vec<bool>,
    /// The bag's messages can be read in order chunk by chunk (else one whole scan).
    streamed: bool,
    /// Rows of the table.
    rows: u64,
    /// The report the table's export gives (no path: in memory).
    pub report: ExportReport,
}

impl TimingPlan {
    /// The table's column names, in order.
    pub fn column_names(&self) -> &[String] {
        &self.shape.column_names
    }

    /// The table's columns without rows (names and dictionaries).
    pub fn shape_without_rows(&self) -> TimingColumns {
        self.shape.clone()
    }
}

/// The timing table's column names, in order (with or without the `bag` column).
pub fn column_names(with_bag: bool) -> Vec<String> {
    let mut names = Vec::new();
    if with_bag {
        names.push("bag");
    }
    names.extend([
        "topic",
        "type",
        "log_time_ns",
        "publish_time_ns",
        "header_stamp_ns",
        "clock_axis",
        "size_bytes",
        // TF topics: one row per transform (its own header.stamp above); null otherwise.
        "parent_frame",
        "child_frame",
        "transform_index",
    ]);
    names.into_iter().map(String::from).collect()
}

/// The first read: the exported topics' (and any clock topic's) stamps in log-time order,
/// chunk by chunk, as the caller's clocks analysis reads them, analysed by `axes` for their
/// clock axes and then dropped; the rows counted.
pub fn timing_plan<S: Stamps>(
    bag: &Bag,
    request: &TimingRequest,
    stamps: &S,
    axes: Box<Axes<'_>>,
) -> TimingPlan {
    let n_topics = bag.topics.len();
    let mut exported = vec![false; n_topics];
    for &t in &request.exported {
        exported[t] = true;
    }
    let axis_topics = crate::export::axis_topics(bag, &request.exported);
    let is_tf: Vec<bool> = bag
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| exported[i] && t.type_name == "tf2_msgs/msg/TFMessage")
        .collect();
    // Rows beyond one a message: a TF message's further transforms.
    let extra_rows = AtomicU64::new(0);
    let read = |m: &RawMessage<'_>| {
        if is_tf[m.topic] {
            let n = tf_transforms(m.data).map_or(0, |t| t.len());
            extra_rows.fetch_add(n.saturating_sub(1) as u64, Ordering::Relaxed);
        }
        stamps.values(m)
    };
    // In order, so that a bag whose chunks cannot be read in order is known before the rows
    // are streamed (they could not be taken back); each topic's arrays sized from the
    // message indexes where they can tell.
    let counts = bag.topic_spans(&axis_topics);
    let mut cols: Vec<Columns<2>> = (0..n_topics)
        .map(|t| {
            let n = counts
                .as_ref()
                .and_then(|c| c.get(t))
                .map_or(0, |s| s.count as usize);
            Columns {
                log_time_ns: Vec::with_capacity(n),
                values: [Vec::with_capacity(n), Vec::with_capacity(n)],
            }
        })
        .collect();
    let push = |cols: &mut Vec<Columns<2>>, it: Item<[i64; 2]>| {
        let c = &mut cols[it.topic];
        c.log_time_ns.push(it.log_time_ns);
        c.values[0].push(it.value[0]);
        c.values[1].push(it.value[1]);
    };
    let (streamed, scan_warnings) =
        match bag.scan_in_order(&axis_topics, read, &mut |it| push(&mut cols, it)) {
            Ok(w) => (true, w),
            Err(ScanOrderBroken) => {
                stamps.restart();
                extra_rows.store(0, Ordering::Relaxed);
                let (c, w) = bag.scan_columns(&axis_topics, read);
                cols = c;
                (false, w)
            }
        };
    let rows = request
        .exported
        .iter()
        .map(|&t| cols[t].len() as u64)
        .sum::<u64>()
        + extra_rows.load(Ordering::Relaxed);
    let (axis_names, mut warnings) = axes(&axis_topics, cols, scan_warnings);
    let column_names = column_names(request.bag_name.is_some());
    warnings.sort();
    warnings.dedup();
    let report = ExportReport {
        bag: bag.path.display().to_string(),
        tables: vec![ExportedTable {
            path: None,
            topics: request
                .exported
                .iter()
                .map(|&t| bag.topics[t].name.clone())
                .collect(),
            rows,
            columns: column_names.clone(),
        }],
        warnings,
    };
    TimingPlan {
        shape: TimingColumns {
            column_names,
            bag_name: request.bag_name.clone(),
            topic_names: bag.topics.iter().map(|t| t.name.clone()).collect(),
            type_names: bag.topics.iter().map(|t| t.type_name.clone()).collect(),
            axis_names,
            ..Default::default()
        },
        exported,
        is_tf,
        streamed,
        rows,
        report,
    }
}

/// A TF message's transforms (stamp, parent, child), `None` for one that does not decode: the
/// one reading of them for both reads of the bag.
fn tf_transforms(data: &[u8]) -> Option<Vec<bagscope_msg::types::TfFrames<'_>>> {
    bagscope_msg::types::tf_frames(data).ok()
}

/// One message as the second read takes it: publish time and stamp (cells), size, and for a
/// TF message its transforms (stamp, parent, child; `None`: not a TF topic).
struct TimingMessage {
    publish: Option<i64>,
    stamp: Option<i64>,
    size: i64,
    tf: Option<Vec<(i64, Frame, Frame)>>,
}

/// The rows of one batch being filled.
#[derive(Default)]
struct BatchColumns {
    topic_key: Vec<u32>,
    log_time_ns: Vec<i64>,
    publish: Vec<i64>,
    stamp: Vec<i64>,
    size_bytes: Vec<i64>,
    parent: Vec<u32>,
    child: Vec<u32>,
    transform_index: Vec<i64>,
}

impl BatchColumns {
    fn len(&self) -> usize {
        self.log_time_ns.len()
    }

    fn push(
        &mut self,
        topic: usize,
        log: i64,
        publish: i64,
        stamp: i64,
        size: i64,
        tf: (u32, u32, i64),
    ) {
        self.topic_key.push(topic as u32);
        self.log_time_ns.push(log);
        self.publish.push(publish);
        self.stamp.push(stamp);
        self.size_bytes.push(size);
        self.parent.push(tf.0);
        self.child.push(tf.1);
        self.transform_index.push(tf.2);
    }

    fn with_capacity(n: usize) -> BatchColumns {
        BatchColumns {
            topic_key: Vec::with_capacity(n),
            log_time_ns: Vec::with_capacity(n),
            publish: Vec::with_capacity(n),
            stamp: Vec::with_capacity(n),
            size_bytes: Vec::with_capacity(n),
            parent: Vec::with_capacity(n),
            child: Vec::with_capacity(n),
            transform_index: Vec::with_capacity(n),
        }
    }

    /// Splits off the first `n` rows, keeping the others.
    fn split_first(&mut self, n: usize) -> BatchColumns {
        fn first<T>(v: &mut Vec<T>, n: usize) -> Vec<T> {
            let rest = v.split_off(n);
            std::mem::replace(v, rest)
        }
        BatchColumns {
            topic_key: first(&mut self.topic_key, n),
            log_time_ns: first(&mut self.log_time_ns, n),
            publish: first(&mut self.publish, n),
            stamp: first(&mut self.stamp, n),
            size_bytes: first(&mut self.size_bytes, n),
            parent: first(&mut self.parent, n),
            child: first(&mut self.child, n),
            transform_index: first(&mut self.transform_index, n),
        }
    }

    /// The rows as a [`TimingColumns`] of `shape`, with the frame names given so far.
    fn into_columns(self, shape: &TimingColumns, frames: &[Frame]) -> TimingColumns {
        TimingColumns {
            frame_names: frames.iter().map(|f| f.to_string()).collect(),
            topic_key: self.topic_key,
            log_time_ns: self.log_time_ns,
            publish_time_ns: nullable(self.publish),
            header_stamp_ns: nullable(self.stamp),
            size_bytes: self.size_bytes,
            parent_frame: nullable_keys(self.parent),
            child_frame: nullable_keys(self.child),
            transform_index: nullable(self.transform_index),
            ..shape.clone()
        }
    }
}

/// How the second read cuts the rows into pieces.
#[derive(Debug, Clone, Copy)]
enum Batching {
    /// Batches of this many rows (a TF message's rows may straddle two).
    Rows(usize),
    /// Row groups as export writes them for this many rows a group: once the rows held
    /// (whole messages) reach twice that, the older half goes.
    Halves(usize),
}

/// The whole table of `plan` in one piece (or the columns without rows).
pub fn timing_columns<S: Stamps>(bag: &Bag, plan: &TimingPlan, stamps: &S) -> TimingColumns {
    let mut table = None;
    let stop = AtomicBool::new(false);
    timing_rows(
        bag,
        plan,
        stamps,
        Batching::Rows(usize::MAX),
        &stop,
        &mut |c| {
            table = Some(c);
            true
        },
    );
    table.unwrap_or_else(|| plan.shape_without_rows())
}

/// The timing table of `plan` in batches of `rows_per_batch` rows, handed to `emit` as they
/// are made (`emit` returns false to stop, as does `stop`): the same rows, values and order as
/// [`timing_columns`] (a TF message's rows may straddle two batches), from a second read of
/// the exported topics chunk by chunk. Held: two steps of chunks and one batch; for a bag whose
/// chunks cannot be read in order, the whole scan. Returns the rows made.
pub fn timing_batches<S: Stamps>(
    bag: &Bag,
    plan: &TimingPlan,
    stamps: &S,
    rows_per_batch: usize,
    stop: &AtomicBool,
    emit: &mut dyn FnMut(TimingColumns) -> bool,
) -> u64 {
    timing_rows(
        bag,
        plan,
        stamps,
        Batching::Rows(rows_per_batch.max(1)),
        stop,
        emit,
    )
}

/// The rows of `plan` in pieces cut by `batching`, each piece's columns made with room for its
/// rows (the last one for the rows left).
fn timing_rows<S: Stamps>(
    bag: &Bag,
    plan: &TimingPlan,
    stamps: &S,
    batching: Batching,
    stop: &AtomicBool,
    emit: &mut dyn FnMut(TimingColumns) -> bool,
) -> u64 {
    let per_piece = match batching {
        Batching::Rows(n) => n,
        Batching::Halves(n) => n.saturating_mul(2),
    };
    let room = |made: u64| {
        let left = usize::try_from(plan.rows.saturating_sub(made)).unwrap_or(usize::MAX);
        left.min(per_piece)
    };
    let read = |m: &RawMessage<'_>| -> TimingMessage {
        let tf = plan.is_tf[m.topic].then(|| {
            tf_transforms(m.data).filter(|t| !t.is_empty()).map(|t| {
                t.iter()
                    .map(|x| (x.stamp_ns, shared_frame(x.parent), shared_frame(x.child)))
                    .collect()
            })
        });
        let (publish, stamp) = stamps.cells(m);
        TimingMessage {
            publish,
            stamp,
            size: i64::from(u32::try_from(m.data.len()).unwrap_or(u32::MAX)),
            tf: tf.flatten().or_else(|| plan.is_tf[m.topic].then(Vec::new)),
        }
    };
    let mut frames = FrameIds::default();
    let mut batch = BatchColumns::with_capacity(room(0));
    let mut rows = 0u64;
    let mut go_on = true;
    let no_tf = (NULL_KEY, NULL_KEY, NULL);
    let mut tf_rows: Vec<(i64, (u32, u32, i64))> = Vec::new();
    let mut take = |it: Item<TimingMessage>| {
        if !go_on || stop.load(Ordering::Relaxed) {
            return;
        }
        let m = it.value;
        let own = m.stamp.unwrap_or(NULL);
        let publish = m.publish.unwrap_or(NULL);
        // A TF message: a row per transform; one without stamp or frames when it has none
        // or does not decode.
        tf_rows.clear();
        match &m.tf {
            Some(t) if !t.is_empty() => {
                for (k, (stamp, parent, child)) in t.iter().enumerate() {
                    tf_rows.push((*stamp, (frames.id(parent), frames.id(child), k as i64)));
                }
            }
            Some(_) => tf_rows.push((NULL, no_tf)),
            None => tf_rows.push((own, no_tf)),
        }
        for &(stamp, keys) in &tf_rows {
            batch.push(it.topic, it.log_time_ns, publish, stamp, m.size, keys);
            rows += 1;
            if let Batching::Rows(n) = batching {
                if batch.len() >= n && go_on {
                    let full =
                        std::mem::replace(&mut batch, BatchColumns::with_capacity(room(rows)));
                    go_on = emit(full.into_columns(&plan.shape, frames.frames()));
                }
            }
        }
        if let Batching::Halves(n) = batching {
            if batch.len() >= n.saturating_mul(2) && go_on {
                let older = batch.split_first(batch.len() / 2);
                go_on = emit(older.into_columns(&plan.shape, frames.frames()));
            }
        }
    };
    if plan.streamed {
        let r = bag.scan_in_order_until(&plan.exported, read, stop, &mut take);
        debug_assert!(r.is_ok(), "the first read went in order");
    } else {
        for it in bag.scan(&plan.exported, read).items {
            take(it);
        }
    }
    if batch.len() > 0 && go_on && !stop.load(Ordering::Relaxed) {
        emit(batch.into_columns(&plan.shape, frames.frames()));
    }
    rows
}

/// The timing table's columns as a DataFrame: string columns as strings (not dictionary
/// keys), nulls as nulls, in [`column_names`]' order.
pub fn timing_frame(c: &TimingColumns) -> Result<DataFrame> {
    let n = c.len();
    let ints = |v: &NullableI64| -> Col {
        Col::I64(
            v.values
                .iter()
                .enumerate()
                .map(|(i, &x)| is_valid(v.valid.as_deref(), i).then_some(x))
                .collect(),
        )
    };
    let names = |k: &NullableKeys| -> Col {
        Col::Str(
            k.keys
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    is_valid(k.valid.as_deref(), i)
                        .then(|| c.frame_names.get(x as usize).cloned())
                        .flatten()
                })
                .collect(),
        )
    };
    let dict = |d: &[String]| Col::Dict {
        dict: d.to_vec(),
        idx: c.topic_key.clone(),
    };
    let mut cols = Vec::new();
    if let Some(bag) = &c.bag_name {
        cols.push(Col::Dict {
            dict: vec![bag.clone()],
            idx: vec![0; n],
        });
    }
    cols.extend([
        dict(&c.topic_names),
        dict(&c.type_names),
        Col::I64(c.log_time_ns.iter().map(|&x| Some(x)).collect()),
        ints(&c.publish_time_ns),
        ints(&c.header_stamp_ns),
        dict(&c.axis_names),
        Col::I64(c.size_bytes.iter().map(|&x| Some(x)).collect()),
        names(&c.parent_frame),
        names(&c.child_frame),
        ints(&c.transform_index),
    ]);
    frame(
        column_names(c.bag_name.is_some())
            .into_iter()
            .zip(cols)
            .collect(),
    )
}

/// The table of `plan` written to `sink` in row groups of `row_group_rows` rows as export
/// writes them (once the rows held reach twice that, the older half is one group; the rest is
/// the last), each group encoded and written on a thread of its own while the bag is read.
/// Returns the rows written and, for a memory sink, the frame.
pub fn write_row_groups<S: Stamps>(
    bag: &Bag,
    plan: &TimingPlan,
    stamps: &S,
    sink: Sink,
    row_group_rows: usize,
) -> Result<(u64, Option<DataFrame>)> {
    let stop = AtomicBool::new(false);
    let mut failed: Option<FramesError> = None;
    let sink = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<DataFrame>(1);
        let writer = scope.spawn(move || -> (Sink, Result<()>) {
            let mut sink = sink;
            for df in rx {
                if let Err(e) = sink.write(df) {
                    return (sink, Err(e));
                }
            }
            (sink, Ok(()))
        });
        timing_rows(
            bag,
            plan,
            stamps,
            Batching::Halves(row_group_rows.max(1)),
            &stop,
            &mut |c| match timing_frame(&c) {
                // A closed channel: the writer stopped on an error, which its join returns.
                Ok(df) => tx.send(df).is_ok(),
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
        );
        drop(tx);
        let (sink, written) = writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        written.map(|()| sink)
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let empty = timing_frame(&plan.shape_without_rows())?;
    sink?.finish(empty)
}
