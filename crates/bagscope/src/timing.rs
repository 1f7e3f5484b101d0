//! The timing table (`export --timing-only`) in memory, as columns, or in batches: the same
//! rows, values and order as the export (one row per message, per transform on TF topics,
//! sorted by (log time, file order)), the clock axes from the same analysis.
//!
//! Two reads of the bag, each chunk by chunk in order ([`Bag::scan_in_order`]): the first
//! takes the exported topics' (and any clock topic's) times, as `clocks` reads them, and
//! counts the rows (TF transforms), for the clocks analysis that decides each topic's
//! `clock_axis` ([`timing_plan_of`]); the second writes the rows straight into their columns
//! ([`timing_batches`], a batch at a time or, for [`timing_columns_of`], one batch sized for
//! the whole table). Memory: the first read's 24 bytes a message, then the table's own
//! columns; string columns are dictionary keys (one `u32` a row, shared by `topic`, `type`
//! and `clock_axis`), validity packed eight rows a byte.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bagscope_bag::{Bag, Columns};
use bagscope_clocks::{analyze, ClocksOptions};

use crate::export::{ExportOptions, ExportReport, ExportedTable};
use crate::series::{locators, series_of_columns, stamp_values, topic_schemas, NO_STAMP_READ};
use crate::tf::FrameIds;
use crate::Error;
use bagscope_tf::Frame;

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

/// A stamp the scan could not read ([`stamp_values`]' other sentinel): null in the table.
const UNREADABLE: i64 = i64::MIN + 1;

/// The timing table of the exported topics of `o` (all when empty), as `export --timing-only`
/// writes it, and the report the export gives: [`timing_plan_of`], then the rows of
/// [`timing_batches`] into columns sized for the whole table.
pub fn timing_columns_of(
    bag: &Bag,
    o: &ExportOptions,
) -> Result<(TimingColumns, ExportReport), Error> {
    let plan = timing_plan_of(bag, o)?;
    let mut table = None;
    let stop = std::sync::atomic::AtomicBool::new(false);
    timing_rows(bag, &plan, usize::MAX, &stop, &mut |c| {
        table = Some(c);
        true
    });
    let table = table.unwrap_or_else(|| plan.shape_without_rows());
    Ok((table, plan.report))
}

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

/// Rows per batch of [`timing_batches`] unless asked otherwise (the Python package's
/// `Bag.timing_batches` default).
pub const DEFAULT_ROWS_PER_BATCH: usize = 65_536;

/// What [`timing_batches`] takes from a first read of the bag: the table's columns, each
/// topic's clock axis (the clocks analysis of the exported topics' times and any clock
/// topic's, as [`timing_columns_of`] and `export --timing-only` decide it), and the report of
/// that read. Held: the per-topic names, nothing per message.
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
    /// The report [`timing_columns_of`] gives.
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

/// The first read of [`timing_batches`]: the exported topics' (and any clock topic's) stamps
/// in log-time order, chunk by chunk, as `clocks` reads them, analysed for their clock axes
/// and then dropped.
pub fn timing_plan_of(bag: &Bag, o: &ExportOptions) -> Result<TimingPlan, Error> {
    let o = ExportOptions {
        timing_only: true,
        ..o.clone()
    };
    let plan = crate::export::plan(bag, &o)?;
    let exported_list: Vec<usize> = plan.tables.first().cloned().unwrap_or_default();
    let n_topics = bag.topics.len();
    let mut exported = vec![false; n_topics];
    for &t in &exported_list {
        exported[t] = true;
    }
    let axis_topics: Vec<bool> = bag
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| exported[i] || t.type_name == "rosgraph_msgs/msg/Clock")
        .collect();
    let is_tf: Vec<bool> = bag
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| exported[i] && t.type_name == "tf2_msgs/msg/TFMessage")
        .collect();
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let invalid: Vec<AtomicUsize> = bag.topics.iter().map(|_| AtomicUsize::new(0)).collect();
    // Rows beyond one a message: a TF message's further transforms.
    let extra_rows = AtomicU64::new(0);
    let read = |m: &bagscope_bag::RawMessage<'_>| {
        if is_tf[m.topic] {
            let n = tf_transforms(m.data).map_or(0, |t| t.len());
            extra_rows.fetch_add(n.saturating_sub(1) as u64, Ordering::Relaxed);
        }
        stamp_values(&locs[m.topic], m, &invalid[m.topic])
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
    let push = |cols: &mut Vec<Columns<2>>, it: bagscope_bag::Item<[i64; 2]>| {
        let c = &mut cols[it.topic];
        c.log_time_ns.push(it.log_time_ns);
        c.values[0].push(it.value[0]);
        c.values[1].push(it.value[1]);
    };
    let (streamed, scan_warnings) =
        match bag.scan_in_order(&axis_topics, read, &mut |it| push(&mut cols, it)) {
            Ok(w) => (true, w),
            Err(bagscope_bag::ScanOrderBroken) => {
                invalid.iter().for_each(|c| c.store(0, Ordering::Relaxed));
                extra_rows.store(0, Ordering::Relaxed);
                let (c, w) = bag.scan_columns(&axis_topics, read);
                cols = c;
                (false, w)
            }
        };
    let rows = exported_list
        .iter()
        .map(|&t| cols[t].len() as u64)
        .sum::<u64>()
        + extra_rows.load(Ordering::Relaxed);
    let (series, mut warnings) = series_of_columns(
        bag,
        &axis_topics,
        &schemas,
        &locs,
        cols,
        &invalid,
        scan_warnings,
    );
    let axis_names = {
        let r = analyze(
            &crate::clocks::times_of_series(series),
            &ClocksOptions::default(),
        );
        crate::export::axis_names(bag, &r.topics)
    };
    let column_names = crate::export::timing_column_names(o.bag_column)?;
    warnings.sort();
    warnings.dedup();
    let report = ExportReport {
        bag: bag.path.display().to_string(),
        tables: vec![ExportedTable {
            path: None,
            topics: exported_list
                .iter()
                .map(|&t| bag.topics[t].name.clone())
                .collect(),
            rows,
            columns: column_names.clone(),
        }],
        warnings,
    };
    Ok(TimingPlan {
        shape: TimingColumns {
            column_names,
            bag_name: o.bag_column.then(|| plan.bag_name.clone()),
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
    })
}

/// A TF message's transforms (stamp, parent, child), `None` for one that does not decode: the
/// one reading of them for both reads of the bag.
fn tf_transforms(data: &[u8]) -> Option<Vec<bagscope_msg::types::TfFrames<'_>>> {
    bagscope_msg::types::tf_frames(data).ok()
}

/// One message as the second read of [`timing_batches`] takes it: publish time and stamp
/// ([`stamp_values`]' sentinels), size, and for a TF message its transforms (stamp, parent,
/// child; `None`: it has none or does not decode).
struct TimingMessage {
    values: [i64; 2],
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

    #[allow(clippy::too_many_arguments)]
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

    /// The rows as a [`TimingColumns`] of `shape`, with the frame names given so far; room
    /// for `next` rows is made for the next batch.
    fn take(&mut self, shape: &TimingColumns, frames: &[Frame], next: usize) -> TimingColumns {
        let b = std::mem::replace(self, BatchColumns::with_capacity(next));
        TimingColumns {
            frame_names: frames.iter().map(|f| f.to_string()).collect(),
            topic_key: b.topic_key,
            log_time_ns: b.log_time_ns,
            publish_time_ns: nullable(b.publish),
            header_stamp_ns: nullable(b.stamp),
            size_bytes: b.size_bytes,
            parent_frame: nullable_keys(b.parent),
            child_frame: nullable_keys(b.child),
            transform_index: nullable(b.transform_index),
            ..shape.clone()
        }
    }
}

/// The timing table of `plan` ([`timing_plan_of`]) in batches of `rows_per_batch` rows,
/// handed to `emit` as they are made (`emit` returns false to stop, as does `stop`): the
/// same rows, values and order as [`timing_columns_of`] (a TF message's rows may straddle two
/// batches), from a second read of the exported topics chunk by chunk. Held: two steps of
/// chunks and one batch; for a bag whose chunks cannot be read in order, the whole scan.
/// Returns the rows made.
pub fn timing_batches(
    bag: &Bag,
    plan: &TimingPlan,
    rows_per_batch: usize,
    stop: &std::sync::atomic::AtomicBool,
    emit: &mut dyn FnMut(TimingColumns) -> bool,
) -> u64 {
    timing_rows(bag, plan, rows_per_batch.max(1), stop, emit)
}

/// [`timing_batches`], each batch's columns made with room for its rows (the last one, and
/// the one batch of [`timing_columns_of`], for the rows left).
fn timing_rows(
    bag: &Bag,
    plan: &TimingPlan,
    rows_per_batch: usize,
    stop: &std::sync::atomic::AtomicBool,
    emit: &mut dyn FnMut(TimingColumns) -> bool,
) -> u64 {
    let room = |made: u64| {
        let left = usize::try_from(plan.rows.saturating_sub(made)).unwrap_or(usize::MAX);
        left.min(rows_per_batch)
    };
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let invalid: Vec<AtomicUsize> = bag.topics.iter().map(|_| AtomicUsize::new(0)).collect();
    let read = |m: &bagscope_bag::RawMessage<'_>| -> TimingMessage {
        let tf = plan.is_tf[m.topic].then(|| {
            tf_transforms(m.data).filter(|t| !t.is_empty()).map(|t| {
                t.iter()
                    .map(|x| {
                        (
                            x.stamp_ns,
                            crate::tf::shared_frame(x.parent),
                            crate::tf::shared_frame(x.child),
                        )
                    })
                    .collect()
            })
        });
        TimingMessage {
            values: stamp_values(&locs[m.topic], m, &invalid[m.topic]),
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
    let mut take = |it: bagscope_bag::Item<TimingMessage>| {
        if !go_on || stop.load(Ordering::Relaxed) {
            return;
        }
        let m = it.value;
        let own = match m.values[1] {
            UNREADABLE | NO_STAMP_READ => NULL,
            s => s,
        };
        let publish = match m.values[0] {
            NO_STAMP_READ => NULL,
            p => p,
        };
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
            if batch.len() >= rows_per_batch && go_on {
                go_on = emit(batch.take(&plan.shape, frames.frames(), room(rows)));
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
        emit(batch.take(&plan.shape, frames.frames(), 0));
    }
    rows
}
