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
#[allow(clippy::too_many_lines)] // To split once timing.rs is being reworked for Python batches (issue 44).
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
            p.push(u32::try_from(row).map_err(|_| Error::no_data(TOO_MANY_ROWS))?);
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
    u32::try_from(row).map_err(|_| Error::no_data(TOO_MANY_ROWS))?;
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
