//! The timing table (`export --timing-only`) in memory, as columns: from the column scan
//! `clocks` reads (one parallel pass, each message's times written straight into per-topic
//! arrays), not from export's row-by-row walk. Same rows, values and order as the export: one
//! row per message (per transform on TF topics), sorted by (log time, file order); the clock
//! axes from the same analysis, on the times this scan read.
//!
//! Memory: the per-topic arrays of the scan (40 bytes a message), then the table's columns
//! gathered from them two at a time (each source array freed once its column is gathered).
//! String columns are dictionary keys: one `u32` a row, shared by `topic`, `type` and
//! `clock_axis`.

use std::collections::BinaryHeap;
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use bagscope_bag::{Bag, Columns};
use bagscope_clocks::{analyze, ClocksOptions};
use bagscope_msg::StampSource;

use crate::export::{ExportOptions, ExportReport, ExportedTable};
use crate::series::{locators, series_of_columns, stamp_values, topic_schemas, NO_STAMP_READ};
use crate::tf::FrameIds;
use bagscope_tf::Frame;
use crate::Error;

/// A column of `i64` with nulls: `valid` is `None` when no value is null.
#[derive(Debug, Clone, Default)]
pub struct NullableI64 {
    /// The values; a null row's value is 0.
    pub values: Vec<i64>,
    /// Per row, whether it has a value (`None`: every row has one).
    pub valid: Option<Vec<bool>>,
}

/// A string column as keys into a dictionary, with nulls.
#[derive(Debug, Clone, Default)]
pub struct NullableKeys {
    /// Per row, the index of its string; a null row's key is 0.
    pub keys: Vec<u32>,
    /// Per row, whether it has a value (`None`: every row has one).
    pub valid: Option<Vec<bool>>,
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

/// A value no time, size or key takes: a null while the columns are gathered.
const NULL: i64 = i64::MIN;
/// A null frame key while the columns are gathered (no bag has that many frame names).
const NULL_KEY: u32 = u32::MAX;
/// Rows are placed by `u32`: a table of more rows is refused (it would take some 300 GB).
const TOO_MANY_ROWS: &str = "a timing table of more than 4 294 967 295 rows: select fewer topics";
/// A stamp the scan could not read ([`stamp_values`]' other sentinel): null in the table.
const UNREADABLE: i64 = i64::MIN + 1;

/// The TF part of a TF topic's message: its first row's stamp, parent and child (keys into the
/// frame names, [`NULL`] for a message without transforms), its row count, and where its
/// further rows are (an index into the extra rows, or -1).
type TfValues = [i64; 5];

/// Per transform of a message: (stamp, parent key, child key), keys [`NULL`] for a message
/// whose row describes no transform.
type TfRow = (i64, i64, i64);

/// The timing table of the exported topics of `o` (all when empty), as `export --timing-only`
/// writes it, and the report the export gives.
pub fn timing_columns_of(
    bag: &Bag,
    o: &ExportOptions,
) -> Result<(TimingColumns, ExportReport), Error> {
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
    // The clock axes are those of the exported topics plus any clock topic, as export's.
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
    // TF topics without a stamp in their definition (all of them, in practice) have their
    // transforms read by this scan: their stamp column holds where the message's rows went.
    let tf_in_scan: Vec<bool> = is_tf
        .iter()
        .zip(&locs)
        .map(|(&tf, l)| tf && l.source() == StampSource::None)
        .collect();
    let tf_scan = Mutex::new(TfScan::default());
    // [publish, stamp, size, file order]
    let (mut cols, scan_warnings) = bag.scan_columns_in_file_order(&axis_topics, |m| {
        let [publish, mut stamp] = stamp_values(&locs[m.topic], m, &invalid[m.topic]);
        if tf_in_scan[m.topic] {
            stamp = tf_scan_message(&tf_scan, m.data).0;
        }
        let size = i64::from(u32::try_from(m.data.len()).unwrap_or(u32::MAX));
        [publish, stamp, size, 0]
    });
    let TfScan {
        frames: tf_frames,
        extra: tf_extra,
        msgs: tf_msgs,
    } = tf_scan.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut tf_from_scan: Vec<Option<[Vec<i64>; 5]>> = (0..n_topics).map(|_| None).collect();
    for (i, c) in cols.iter_mut().enumerate() {
        if !tf_in_scan[i] {
            continue;
        }
        // Back to what the stamp scan writes for a topic without a stamp.
        let n = c.len();
        let codes = std::mem::replace(&mut c.values[1], vec![NO_STAMP_READ; n]);
        let mut v: [Vec<i64>; 5] = Default::default();
        for code in codes {
            let row = usize::try_from(code)
                .ok()
                .and_then(|k| tf_msgs.get(k))
                .copied()
                .unwrap_or([NULL, NULL, NULL, 1, -1]);
            for (col, x) in v.iter_mut().zip(row) {
                col.push(x);
            }
        }
        tf_from_scan[i] = Some(v);
    }
    drop(tf_msgs);

    // The clock analysis reads the same arrays: moved into its series and back, copied only
    // for topics whose series leave rows out (unreadable stamps) or mix missing publish times.
    let mut lent = vec![false; n_topics];
    let series_cols: Vec<Columns<2>> = cols
        .iter_mut()
        .enumerate()
        .map(|(i, c)| {
            let [publish, stamp, _, _] = &mut c.values;
            let source = locs[i].source();
            let bad = stamp
                .iter()
                .any(|&s| s == UNREADABLE || (s == NULL && source != StampSource::None));
            let some_missing = publish.contains(&NULL);
            let mixed = some_missing && publish.iter().any(|&p| p != NULL);
            if bad || mixed {
                Columns {
                    log_time_ns: c.log_time_ns.clone(),
                    values: [publish.clone(), stamp.clone()],
                }
            } else {
                lent[i] = true;
                Columns {
                    log_time_ns: std::mem::take(&mut c.log_time_ns),
                    values: [std::mem::take(publish), std::mem::take(stamp)],
                }
            }
        })
        .collect();
    let (series, mut warnings) = series_of_columns(
        bag,
        &axis_topics,
        &schemas,
        &locs,
        series_cols,
        &invalid,
        scan_warnings,
    );
    let times = crate::clocks::times_of_series(series);
    let axis_names = {
        let r = analyze(&times, &ClocksOptions::default());
        crate::export::axis_names(bag, &r.topics)
    };
    for (i, t) in times.into_iter().enumerate() {
        if lent[i] {
            // An empty array stands for all null (storage without publish times, a type
            // without a stamp).
            let c = &mut cols[i];
            c.log_time_ns = t.log_time_ns;
            c.values[0] = t.publish_time_ns;
            c.values[1] = t.stamp_ns;
        }
    }
    for (i, c) in cols.iter_mut().enumerate() {
        if !exported[i] {
            *c = Columns::default();
        }
    }

    // A TF topic the scan could not read transforms from is read again on its own.
    let tf_rest: Vec<bool> = is_tf
        .iter()
        .zip(&tf_in_scan)
        .map(|(&tf, &done)| tf && !done)
        .collect();
    let TfRead {
        values: tf,
        extra,
        frame_names,
    } = tf_values(bag, &tf_rest, &cols, tf_frames, tf_extra, tf_from_scan);

    // Rows per message: one, or one per transform on TF topics.
    let counts: Vec<Option<&[i64]>> = tf.iter().map(|v| v.as_ref().map(|v| &v[3][..])).collect();
    // Merge the topics by (log time, file order), the order of the rows: where each message's
    // rows go.
    let (places, n_rows) = row_places(&cols, &counts)?;
    for c in &mut cols {
        c.values[3] = Vec::new();
    }
    // A TF row's (stamp, parent, child): its message's first, or one of its further rows.
    let tf_row = |t: usize, i: usize, k: usize| -> Option<TfRow> {
        let v = tf[t].as_ref()?;
        if k == 0 {
            Some((v[0][i], v[1][i], v[2][i]))
        } else {
            extra.get(v[4][i] as usize)?.get(k).copied()
        }
    };

    // Each column gathered on its own, topic by topic into its rows' places, two at a time,
    // and the scan's arrays they came from freed once they are gathered: the scan's arrays and
    // the table's columns are not held at once beyond the columns being gathered.
    let gather = |value: &(dyn Fn(usize, usize, usize) -> i64 + Sync)| -> Vec<i64> {
        scatter(n_rows, &places, &counts, value)
    };
    let (topic_key, log_time_ns) = rayon::join(
        || scatter(n_rows, &places, &counts, &|t, _, _| t as u32),
        || gather(&|t, i, _| cols[t].log_time_ns[i]),
    );
    cols.iter_mut().for_each(|c| c.log_time_ns = Vec::new());
    let (publish, stamp) = rayon::join(
        || gather(&|t, i, _| cols[t].values[0].get(i).copied().unwrap_or(NULL)),
        || {
            gather(&|t, i, k| {
                let own = match cols[t].values[1].get(i).copied().unwrap_or(NULL) {
                    UNREADABLE => NULL,
                    s => s,
                };
                tf_row(t, i, k).map_or(own, |r| r.0)
            })
        },
    );
    cols.iter_mut().for_each(|c| {
        c.values[0] = Vec::new();
        c.values[1] = Vec::new();
    });
    let (size_bytes, transform_index) = rayon::join(
        || gather(&|t, i, _| cols[t].values[2][i]),
        || {
            gather(&|t, i, k| {
                tf_row(t, i, k)
                    .filter(|r| r.1 != NULL)
                    .map_or(NULL, |_| k as i64)
            })
        },
    );
    drop(cols);
    let frame_key = |k: i64| u32::try_from(k).ok().filter(|&k| k != NULL_KEY);
    let (parent, child) = rayon::join(
        || {
            nullable_keys(scatter(n_rows, &places, &counts, &|t, i, k| {
                tf_row(t, i, k)
                    .and_then(|r| frame_key(r.1))
                    .unwrap_or(NULL_KEY)
            }))
        },
        || {
            nullable_keys(scatter(n_rows, &places, &counts, &|t, i, k| {
                tf_row(t, i, k)
                    .and_then(|r| frame_key(r.2))
                    .unwrap_or(NULL_KEY)
            }))
        },
    );
    drop(places);
    drop(tf);
    drop(extra);

    let column_names = crate::export::timing_column_names(o.bag_column)?;
    let table = TimingColumns {
        column_names: column_names.clone(),
        bag_name: o.bag_column.then(|| plan.bag_name.clone()),
        topic_names: bag.topics.iter().map(|t| t.name.clone()).collect(),
        type_names: bag.topics.iter().map(|t| t.type_name.clone()).collect(),
        axis_names,
        frame_names,
        topic_key,
        log_time_ns,
        publish_time_ns: nullable(publish),
        header_stamp_ns: nullable(stamp),
        size_bytes,
        parent_frame: parent,
        child_frame: child,
        transform_index: nullable(transform_index),
    };
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
            rows: table.len() as u64,
            columns: column_names,
        }],
        warnings,
    };
    Ok((table, report))
}

/// What the TF scan read: per TF topic (None for the others) its messages' [`TfValues`] as
/// columns aligned with the topic's arrays in `cols`; the rows of messages with more than one
/// transform (indexed by the last value); the frame names.
struct TfRead {
    values: Vec<Option<[Vec<i64>; 5]>>,
    extra: Vec<Vec<TfRow>>,
    frame_names: Vec<String>,
}

/// Reads the transforms of the TF topics `is_tf` in a scan of their own, adding to what the
/// first scan read of the others (`frames`, `extra`, `values`). A topic whose second read does
/// not line up with the first (`cols`) keeps no TF values: one row per message, as for a
/// message that does not decode.
fn tf_values(
    bag: &Bag,
    is_tf: &[bool],
    cols: &[Columns<4>],
    frames: FrameIds,
    extra: Vec<Vec<TfRow>>,
    mut values: Vec<Option<[Vec<i64>; 5]>>,
) -> TfRead {
    if !is_tf.iter().any(|&b| b) {
        return TfRead {
            values,
            extra,
            frame_names: frame_names(frames),
        };
    }
    let scan = Mutex::new(TfScan {
        frames,
        extra,
        msgs: Vec::new(),
    });
    // Its damage was reported by the first scan, which read the same messages.
    let (tf_cols, _) =
        bag.scan_columns(is_tf, |m| -> TfValues { tf_scan_message(&scan, m.data).1 });
    for (i, c) in tf_cols.into_iter().enumerate() {
        if is_tf[i] && c.log_time_ns == cols[i].log_time_ns {
            values[i] = Some(c.values);
        }
    }
    let scan = scan.into_inner().unwrap_or_else(|p| p.into_inner());
    TfRead {
        values,
        extra: scan.extra,
        frame_names: frame_names(scan.frames),
    }
}

/// What a scan read of TF messages: the frame names, the further rows of messages with more
/// than one transform, and each message's [`TfValues`] (in the order the scan read them).
#[derive(Default)]
struct TfScan {
    frames: FrameIds,
    extra: Vec<Vec<TfRow>>,
    msgs: Vec<TfValues>,
}

/// Reads one TF message's rows into `scan` (decoded outside the lock); returns the place of
/// its [`TfValues`] in `scan.msgs`, and those values.
fn tf_scan_message(scan: &Mutex<TfScan>, data: &[u8]) -> (i64, TfValues) {
    // The rows of `export::tf_rows`: one per transform, or one with neither stamp nor frames
    // for a message with none or one that does not decode.
    let transforms = bagscope_msg::types::tf_frames(data).unwrap_or_default();
    let mut s = scan.lock().unwrap_or_else(|p| p.into_inner());
    let row = |s: &mut TfScan, t: &bagscope_msg::types::TfFrames<'_>| -> TfRow {
        (
            t.stamp_ns,
            i64::from(s.frames.id(t.parent)),
            i64::from(s.frames.id(t.child)),
        )
    };
    let (first, at) = match &transforms[..] {
        [] => ((NULL, NULL, NULL), -1),
        [t] => (row(&mut s, t), -1),
        many => {
            let rows: Vec<TfRow> = many.iter().map(|t| row(&mut s, t)).collect();
            let first = rows[0];
            s.extra.push(rows);
            (first, (s.extra.len() - 1) as i64)
        }
    };
    let n = transforms.len().max(1) as i64;
    let values = [first.0, first.1, first.2, n, at];
    s.msgs.push(values);
    ((s.msgs.len() - 1) as i64, values)
}

/// The frame names `parent_frame` and `child_frame` index, by key.
fn frame_names(frames: FrameIds) -> Vec<String> {
    frames.into_frames().iter().map(|f| f.to_string()).collect()
}

/// Rows of a message of topic `t`: one, or its transform count (at least one) on TF topics.
fn rows_of(counts: &[Option<&[i64]>], t: usize, i: usize) -> usize {
    match counts[t] {
        Some(c) => c[i].max(1) as usize,
        None => 1,
    }
}

/// Where each message's rows go: per topic, the first row of each of its messages, the topics
/// merged by (log time, file order) from the per-topic arrays (each already in that order);
/// and the number of rows.
fn row_places(
    cols: &[Columns<4>],
    counts: &[Option<&[i64]>],
) -> Result<(Vec<Vec<u32>>, usize), Error> {
    use std::cmp::Reverse;
    let mut places: Vec<Vec<u32>> = cols.iter().map(|c| Vec::with_capacity(c.len())).collect();
    let mut row = 0usize;
    let key = |t: usize, i: usize| (cols[t].log_time_ns[i], cols[t].values[3][i]);
    let mut heap: BinaryHeap<Reverse<((i64, i64), usize)>> = cols
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.is_empty())
        .map(|(t, _)| Reverse((key(t, 0), t)))
        .collect();
    while let Some(Reverse((_, t))) = heap.pop() {
        // A run of one topic is taken without going through the heap.
        let next = heap.peek().map(|Reverse(k)| k.0);
        let p = &mut places[t];
        loop {
            let i = p.len();
            p.push(u32::try_from(row).map_err(|_| Error::Usage(TOO_MANY_ROWS.into()))?);
            row += rows_of(counts, t, i);
            if i + 1 >= cols[t].len() {
                break;
            }
            let k = key(t, i + 1);
            if next.is_some_and(|n| k > n) {
                heap.push(Reverse((k, t)));
                break;
            }
        }
    }
    // Every row index, not only the first of each message, within the same bound.
    u32::try_from(row).map_err(|_| Error::Usage(TOO_MANY_ROWS.into()))?;
    Ok((places, row))
}

/// A column of `n_rows`: row `k` of message `i` of topic `t` (its rows from `places`, their
/// count from `counts`) holds `value(t, i, k)`.
fn scatter<T: Copy + Default>(
    n_rows: usize,
    places: &[Vec<u32>],
    counts: &[Option<&[i64]>],
    value: &(dyn Fn(usize, usize, usize) -> T + Sync),
) -> Vec<T> {
    let mut out = vec![T::default(); n_rows];
    for (t, p) in places.iter().enumerate() {
        match counts[t] {
            None => {
                for (i, &r) in p.iter().enumerate() {
                    out[r as usize] = value(t, i, 0);
                }
            }
            Some(c) => {
                for (i, &r) in p.iter().enumerate() {
                    for k in 0..c[i].max(1) as usize {
                        out[r as usize + k] = value(t, i, k);
                    }
                }
            }
        }
    }
    out
}

/// A frame key column with [`NULL_KEY`] for its nulls, as keys and validity.
fn nullable_keys(mut keys: Vec<u32>) -> NullableKeys {
    let valid = keys
        .contains(&NULL_KEY)
        .then(|| keys.iter().map(|&k| k != NULL_KEY).collect::<Vec<bool>>());
    if valid.is_some() {
        keys.iter_mut()
            .filter(|k| **k == NULL_KEY)
            .for_each(|k| *k = 0);
    }
    NullableKeys { keys, valid }
}

fn nullable(values: Vec<i64>) -> NullableI64 {
    let valid = values
        .contains(&NULL)
        .then(|| values.iter().map(|&v| v != NULL).collect::<Vec<bool>>());
    let mut values = values;
    if valid.is_some() {
        for v in &mut values {
            if *v == NULL {
                *v = 0;
            }
        }
    }
    NullableI64 { values, valid }
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
    /// The report [`timing_columns_of`] gives, its table's `rows` counted as batches are
    /// made.
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
    let read = |m: &bagscope_bag::RawMessage<'_>| stamp_values(&locs[m.topic], m, &invalid[m.topic]);
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
                invalid
                    .iter()
                    .for_each(|c| c.store(0, std::sync::atomic::Ordering::Relaxed));
                let (c, w) = bag.scan_columns(&axis_topics, read);
                cols = c;
                (false, w)
            }
        };
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
            rows: 0,
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
        report,
    })
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
    fn push(&mut self, topic: usize, log: i64, publish: i64, stamp: i64, size: i64, tf: (u32, u32, i64)) {
        self.topic_key.push(topic as u32);
        self.log_time_ns.push(log);
        self.publish.push(publish);
        self.stamp.push(stamp);
        self.size_bytes.push(size);
        self.parent.push(tf.0);
        self.child.push(tf.1);
        self.transform_index.push(tf.2);
    }

    /// The rows as a [`TimingColumns`] of `shape`, with the frame names given so far.
    fn take(&mut self, shape: &TimingColumns, frames: &[Frame]) -> TimingColumns {
        let b = std::mem::take(self);
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
    use std::sync::atomic::Ordering;
    let rows_per_batch = rows_per_batch.max(1);
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let invalid: Vec<AtomicUsize> = bag.topics.iter().map(|_| AtomicUsize::new(0)).collect();
    let read = |m: &bagscope_bag::RawMessage<'_>| -> TimingMessage {
        let tf = plan.is_tf[m.topic].then(|| {
            bagscope_msg::types::tf_frames(m.data)
                .ok()
                .filter(|t| !t.is_empty())
                .map(|t| {
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
    let mut batch = BatchColumns::default();
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
                go_on = emit(batch.take(&plan.shape, frames.frames()));
            }
        }
    };
    if plan.streamed {
        let r = bag.scan_in_order(&plan.exported, read, &mut take);
        debug_assert!(r.is_ok(), "the first read went in order");
    } else {
        for it in bag.scan(&plan.exported, read).items {
            take(it);
        }
    }
    if batch.len() > 0 && go_on && !stop.load(Ordering::Relaxed) {
        emit(batch.take(&plan.shape, frames.frames()));
    }
    rows
}
