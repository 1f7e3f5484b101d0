//! `bagscope export`'s message tables and the report of every export.
//!
//! The message tables' one producer ([`write_message_tables`]: `export`'s files and the
//! facade's `topic_frames`): one walk of the wanted topics with `Bag::visit` (one chunk
//! decompressed at a time); each message is kept in a per-table buffer that is written as a
//! row group whenever it holds `2 × row_group_rows` rows or `2 × row_group_bytes` payload
//! bytes: the older half is decoded and written, the newer half kept, so rows recorded slightly
//! out of order still come out sorted by (log time, file order). The same walk reads the times
//! of the exported topics and of any clock topic ([`axis_topics`]; 24 bytes a message, as
//! `bagscope clocks`) for the `clock_axis` column; see [`write_message_tables`] for how the
//! first row groups get their axis before the last stamp is read. Memory is bounded by the
//! buffers and those times, not by the bag.
//!
//! What reading a stamp for the clocks analysis means and the analysis itself are the caller's
//! ([`ClockAxes`]); this module knows the tables. The report ([`ExportReport`]) is the message
//! tables' and the timing table's alike.

use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, SyncSender};

use bagscope_bag::{Bag, Columns, RawMessage};
use bagscope_msg::{MessageSchema, StampLocator};
use bagscope_types::{CommandReport, Warning, WarningCode};
use polars::prelude::DataFrame;
use rayon::prelude::*;
use serde::Serialize;

use crate::message::MessageColumns;
use crate::timing::Stamps;
use crate::{Col, Format, FramesError, Sink};

/// One table written (or built in memory).
#[derive(Debug, Clone, Serialize)]
pub struct ExportedTable {
    /// The file written; `None` for in-memory exports.
    pub path: Option<String>,
    /// The topics it holds: one for a message table, every exported topic for the timing table.
    pub topics: Vec<String>,
    /// Rows written: one per message.
    pub rows: u64,
    /// The table's column names, in order.
    pub columns: Vec<String>,
}

/// `bagscope export`: the tables written (the CLI's `export --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// One entry per table, sorted by topic name (message tables) or the one timing table.
    pub tables: Vec<ExportedTable>,
    /// Bag damage, messages that did not decode (data loss: their field columns are null),
    /// rows out of order across row groups, array elements cut off by `explode`; sorted.
    pub warnings: Vec<Warning>,
}

impl CommandReport for ExportReport {
    fn warnings(&self) -> Vec<&Warning> {
        self.warnings.iter().collect()
    }
}

/// Why the message tables could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The fields asked for cannot be read from a topic's messages.
    #[error("{topic}")]
    Fields {
        /// The topic whose fields were asked for.
        topic: String,
        /// Which field and why ([`FramesError::Usage`] for a path the type lacks).
        #[source]
        source: FramesError,
    },
    /// Fields were asked of a topic that has no usable schema.
    #[error("{topic}: no usable schema, so no fields to select")]
    NoSchema {
        /// The topic.
        topic: String,
    },
    /// A table could not be built or written.
    #[error(transparent)]
    Frames(#[from] FramesError),
}

/// The message tables of an export: one per topic, and how their rows are made.
#[derive(Debug, Clone, Copy)]
pub struct MessageTables<'a> {
    /// The exported topics (indices into `bag.topics`), one table each, in table order.
    pub topics: &'a [usize],
    /// Field paths to keep (`header.frame_id`, `position`); empty: all fields.
    pub fields: &'a [String],
    /// Arrays of numbers as one column per element instead of a list column.
    pub explode: bool,
    /// The output's format: CSV has nested values as text.
    pub format: Format,
    /// Rows per row group: a table's buffer is written when it holds twice this many rows.
    pub row_group_rows: usize,
    /// Payload bytes per row group, as `row_group_rows`: whichever is reached first writes.
    pub row_group_bytes: usize,
    /// Per bag topic: its schema, or why it has none.
    pub schemas: &'a [Result<MessageSchema, String>],
    /// Per bag topic: where its messages' stamps are (the `header_stamp_ns` column).
    pub locators: &'a [StampLocator],
}

/// The clocks analysis of the times an export read (the topics whose times were read, indexed
/// like `bag.topics`, and their [`Stamps::values`] in log-time order): each bag topic's
/// `clock_axis` value and the warnings the export reports.
pub type AxisAnalysis<'a> =
    dyn Fn(&[bool], Vec<Columns<2>>) -> (Vec<String>, Vec<Warning>) + Sync + 'a;

/// Where an export's clock axes come from.
pub enum ClockAxes<'a> {
    /// Known before the walk: each bag topic's axis name, and the warnings of the scan that
    /// read their times.
    Known(Vec<String>, Vec<Warning>),
    /// Read by the walk itself.
    Read {
        /// The topics whose times decide the axes ([`axis_topics`]).
        topics: Vec<bool>,
        /// How a message's times are read for the analysis (fresh: nothing counted yet).
        stamps: &'a dyn Stamps,
        /// The analysis of those times.
        analysis: &'a AxisAnalysis<'a>,
    },
}

/// The topics whose times decide the exported topics' (indices into `bag.topics`) clock axes:
/// the exported ones and any clock topic (`/clock` decides sim) — not the whole bag, which
/// would cost 24 bytes for every message of every other topic.
pub fn axis_topics(bag: &Bag, exported: &[usize]) -> Vec<bool> {
    let mut topics = vec![false; bag.topics.len()];
    for &t in exported {
        topics[t] = true;
    }
    for (i, t) in bag.topics.iter().enumerate() {
        if t.type_name == "rosgraph_msgs/msg/Clock" {
            topics[i] = true;
        }
    }
    topics
}

/// Per table, the frame built in memory (`None` for a file sink, or a memory sink without
/// rows).
pub type Frames = Vec<Option<DataFrame>>;

/// Writes the message tables of `request` into the sinks `sinks` makes (one per table, in
/// table order) and reports them.
///
/// One walk of the bag, usually the only one: the clock axes are read by the same walk that
/// writes the rows. The `clock_axis` column of the first row groups is written before the
/// topic's last stamp is read, so it takes the axes of the times read so far (the analysis is
/// run then on those); at the end the analysis of all of them decides, and in the rare bag
/// where the two differ (a topic whose stamps change clock after its first row groups) the
/// output is discarded and written again in a second walk (new sinks) with the final axes.
/// The tables are exactly those of an analysis made before the walk.
pub fn write_message_tables(
    bag: &Bag,
    request: &MessageTables<'_>,
    sinks: &dyn Fn() -> Vec<Sink>,
    axes: ClockAxes<'_>,
) -> Result<(ExportReport, Frames), ExportError> {
    let mut axes = axes;
    loop {
        match walk(bag, request, sinks(), axes)? {
            Walked::Done(report, frames) => return Ok((report, frames)),
            Walked::Retry(a, w) => axes = ClockAxes::Known(a, w),
        }
    }
}

/// What one walk of the bag ended with.
enum Walked {
    Done(ExportReport, Frames),
    /// Row groups were written with axes guessed from the first messages, and the whole
    /// topic's times give others: the output was discarded; walk again with these.
    Retry(Vec<String>, Vec<Warning>),
}

/// One buffered row: sort key (log time, arrival order), payload bytes, data.
struct Row<R> {
    log_time_ns: i64,
    seq: u64,
    bytes: usize,
    data: R,
}

/// Rows of one table waiting to be written.
struct Buffer<R> {
    rows: Vec<Row<R>>,
    bytes: usize,
    written_max: Option<i64>,
    /// Rows older than something already written (the bag is far out of log-time order).
    late: u64,
}

impl<R> Buffer<R> {
    fn new() -> Self {
        Buffer {
            rows: Vec::new(),
            bytes: 0,
            written_max: None,
            late: 0,
        }
    }

    fn push(&mut self, row: Row<R>) {
        if self.written_max.is_some_and(|m| row.log_time_ns < m) {
            self.late += 1;
        }
        self.bytes += row.bytes;
        self.rows.push(row);
    }

    /// Sorts and takes the older half (or everything).
    fn take(&mut self, all: bool) -> Vec<Row<R>> {
        self.rows.sort_unstable_by_key(|r| (r.log_time_ns, r.seq));
        let n = if all {
            self.rows.len()
        } else {
            self.rows.len() / 2
        };
        let rest = self.rows.split_off(n);
        let done = std::mem::replace(&mut self.rows, rest);
        self.bytes = self.rows.iter().map(|r| r.bytes).sum();
        if let Some(last) = done.last() {
            self.written_max = Some(
                self.written_max
                    .map_or(last.log_time_ns, |m| m.max(last.log_time_ns)),
            );
        }
        done
    }
}

/// A buffered message keeps its CDR payload, decoded only when its row group is written: a
/// decoded value tree is several times the payload's size, and the buffer holds two groups.
struct MsgRow {
    publish: Option<i64>,
    stamp: Option<i64>,
    payload: Box<[u8]>,
}

/// One message table (one per output file): its buffered rows and columns.
struct Table {
    buf: Buffer<MsgRow>,
    cols: MessageColumns,
    schema: Option<MessageSchema>,
    /// The one topic of a message table.
    topic: usize,
}

fn message_df(
    cols: &mut MessageColumns,
    axis: &str,
    rows: &[Row<MsgRow>],
) -> crate::Result<DataFrame> {
    let base = vec![
        (
            "log_time_ns".to_string(),
            Col::I64(rows.iter().map(|r| Some(r.log_time_ns)).collect()),
        ),
        (
            "publish_time_ns".to_string(),
            Col::I64(rows.iter().map(|r| r.data.publish).collect()),
        ),
        (
            "header_stamp_ns".to_string(),
            Col::I64(rows.iter().map(|r| r.data.stamp).collect()),
        ),
        (
            "clock_axis".to_string(),
            Col::Dict {
                dict: vec![axis.to_string()],
                idx: vec![0; rows.len()],
            },
        ),
    ];
    cols.frame(base)
}

/// One empty table per exported topic, with the columns the topic's schema and the selected
/// fields give.
fn make_tables(bag: &Bag, request: &MessageTables<'_>) -> Result<Vec<Table>, ExportError> {
    let text_nested = request.format == Format::Csv;
    let mut tables: Vec<Table> = Vec::new();
    for &ti in request.topics {
        let schema = request.schemas[ti].as_ref().ok().cloned();
        let cols = match &schema {
            Some(s) => MessageColumns::new(s, request.fields, request.explode, text_nested)
                .map_err(|source| ExportError::Fields {
                    topic: bag.topics[ti].name.clone(),
                    source,
                })?,
            None if request.fields.is_empty() => MessageColumns::empty(text_nested),
            None => {
                return Err(ExportError::NoSchema {
                    topic: bag.topics[ti].name.clone(),
                })
            }
        };
        tables.push(Table {
            buf: Buffer::new(),
            cols,
            schema,
            topic: ti,
        });
    }
    Ok(tables)
}

/// The times of the axis topics a walk reads, as the caller's clocks analysis reads them
/// ([`Stamps::values`]: log time, publish time, stamp), in walk order.
struct AxisTimes<'a> {
    topics: Vec<bool>,
    columns: Vec<Columns<2>>,
    stamps: &'a dyn Stamps,
    analysis: &'a AxisAnalysis<'a>,
}

impl<'a> AxisTimes<'a> {
    fn new(topics: Vec<bool>, stamps: &'a dyn Stamps, analysis: &'a AxisAnalysis<'a>) -> Self {
        AxisTimes {
            columns: topics.iter().map(|_| Columns::default()).collect(),
            topics,
            stamps,
            analysis,
        }
    }

    fn push(&mut self, m: &RawMessage<'_>) {
        if !self.topics.get(m.topic).copied().unwrap_or(false) {
            return;
        }
        let [publish, stamp] = self.stamps.values(m);
        let c = &mut self.columns[m.topic];
        c.log_time_ns.push(m.log_time_ns);
        c.values[0].push(publish);
        c.values[1].push(stamp);
    }

    /// Each bag topic's axis name from the times read so far (a copy of them is analysed).
    fn guess(&self) -> Vec<String> {
        let columns = self.columns.iter().cloned().map(log_time_order).collect();
        (self.analysis)(&self.topics, columns).0
    }

    /// Each bag topic's axis name from all the times read, and the warnings of that analysis.
    fn finish(self) -> (Vec<String>, Vec<Warning>) {
        let columns = self.columns.into_iter().map(log_time_order).collect();
        (self.analysis)(&self.topics, columns)
    }
}

/// `c`'s rows sorted by log time, ties in their order in `c` (the walk's order, which is how
/// `clocks`' scan hands them over).
fn log_time_order(c: Columns<2>) -> Columns<2> {
    if c.log_time_ns.windows(2).all(|w| w[0] <= w[1]) {
        return c;
    }
    let mut order: Vec<usize> = (0..c.log_time_ns.len()).collect();
    order.sort_by_key(|&i| c.log_time_ns[i]);
    let gather = |v: &[i64]| order.iter().map(|&i| v[i]).collect::<Vec<i64>>();
    Columns {
        log_time_ns: gather(&c.log_time_ns),
        values: [gather(&c.values[0]), gather(&c.values[1])],
    }
}

/// One walk: the tables, what the walk has read and written so far.
struct Walk<'a> {
    bag: &'a Bag,
    request: &'a MessageTables<'a>,
    tables: Vec<Table>,
    /// Per bag topic: its table, if exported.
    table_of: Vec<Option<usize>>,
    /// Each bag topic's `clock_axis` value for the row groups written.
    axes: Vec<String>,
    /// The times the walk reads for the axes (none when they are known).
    reading: Option<AxisTimes<'a>>,
    /// The axes the row groups written during the walk took, when they were guessed.
    guessed: Option<Vec<String>>,
    warnings: Vec<Warning>,
    /// Per bag topic: messages that did not decode with its schema.
    decode_errors: BTreeMap<usize, u64>,
    /// A row group that could not be built: the walk reads no further.
    failed: Option<FramesError>,
    /// The writer stopped (on an error, which its join returns): the walk reads no further.
    writer_gone: bool,
    /// Messages taken so far (the rows' arrival order).
    seq: u64,
}

impl<'a> Walk<'a> {
    fn new(
        bag: &'a Bag,
        request: &'a MessageTables<'a>,
        axes: ClockAxes<'a>,
    ) -> Result<Self, ExportError> {
        let (axes, warnings, reading) = match axes {
            ClockAxes::Known(a, w) => (a, w, None),
            ClockAxes::Read {
                topics,
                stamps,
                analysis,
            } => (
                Vec::new(),
                Vec::new(),
                Some(AxisTimes::new(topics, stamps, analysis)),
            ),
        };
        let tables = make_tables(bag, request)?;
        let mut table_of = vec![None; bag.topics.len()];
        for (k, &t) in request.topics.iter().enumerate() {
            table_of[t] = Some(k);
        }
        Ok(Walk {
            bag,
            request,
            tables,
            table_of,
            axes,
            reading,
            guessed: None,
            warnings,
            decode_errors: BTreeMap::new(),
            failed: None,
            writer_gone: false,
            seq: 0,
        })
    }

    /// The topics the walk reads: the exported ones and those whose times it reads.
    fn wanted(&self) -> Vec<bool> {
        let mut wanted: Vec<bool> = self.table_of.iter().map(Option::is_some).collect();
        if let Some(r) = &self.reading {
            for (w, &a) in wanted.iter_mut().zip(&r.topics) {
                *w |= a;
            }
        }
        wanted
    }

    /// Reads the bag, buffering the rows and handing every full table's older half as a row
    /// group to `sinks`. Row groups are encoded and written on a thread of their own (one more
    /// queued at most, so memory stays bounded by a few row groups) while the walk reads and
    /// decodes the next: Parquet encoding and zstd are a third of an export's CPU time.
    /// Returns the read's warnings and the sinks (or the writer's error).
    fn stream(&mut self, mut sinks: Vec<Sink>) -> (Vec<Warning>, crate::Result<Vec<Sink>>) {
        let wanted = self.wanted();
        let bag = self.bag;
        std::thread::scope(|scope| {
            let (tx, rx) = sync_channel::<(usize, DataFrame)>(1);
            let writer = scope.spawn(move || -> (Vec<Sink>, crate::Result<()>) {
                for (k, df) in rx {
                    if let Err(e) = sinks[k].write(df) {
                        return (sinks, Err(e));
                    }
                }
                (sinks, Ok(()))
            });
            let visit_warnings = bag.visit(&wanted, |m| self.take(m, &tx));
            drop(tx);
            let (sinks, written) = writer
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (visit_warnings, written.map(|()| sinks))
        })
    }

    /// Takes one message of the walk: its times for the axes, its row into its table's
    /// buffer, and the table's older half to the writer when the buffer is full.
    fn take(&mut self, m: &RawMessage<'_>, tx: &SyncSender<(usize, DataFrame)>) {
        if self.failed.is_some() || self.writer_gone {
            return;
        }
        if let Some(r) = self.reading.as_mut() {
            r.push(m);
        }
        let Some(k) = self.table_of.get(m.topic).copied().flatten() else {
            return;
        };
        let stamp = self.request.locators[m.topic]
            .read_stamp_ns(m.data)
            .ok()
            .flatten();
        self.seq += 1;
        let Table { buf, schema, .. } = &mut self.tables[k];
        buf.push(Row {
            log_time_ns: m.log_time_ns,
            seq: self.seq,
            bytes: m.data.len() + 64,
            data: MsgRow {
                publish: m.publish_time_ns,
                stamp,
                // Without a schema nothing is decoded: keep no bytes either.
                payload: if schema.is_some() {
                    m.data.into()
                } else {
                    Box::default()
                },
            },
        });
        let full = buf.rows.len() >= 2 * self.request.row_group_rows.max(1)
            || buf.bytes >= 2 * self.request.row_group_bytes.max(1);
        if full {
            if let Some(r) = self.reading.as_ref().filter(|_| self.guessed.is_none()) {
                self.axes = r.guess();
                self.guessed = Some(self.axes.clone());
            }
            match self.row_group(k, false) {
                // A closed channel: the writer stopped on an error, which its join returns.
                Ok(Some(df)) => self.writer_gone = tx.send((k, df)).is_err(),
                Ok(None) => {}
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// Table `k`'s next row group (its older half, or `all` its rows) as a frame (`None` when
    /// it has no rows to write). Payloads are decoded here, straight into columns, in parts on
    /// every core, joined in row order; those that do not decode are counted.
    fn row_group(&mut self, k: usize, all: bool) -> crate::Result<Option<DataFrame>> {
        let Table {
            buf, cols, topic, ..
        } = &mut self.tables[k];
        let rows = buf.take(all);
        if rows.is_empty() {
            return Ok(None);
        }
        let part = rows
            .len()
            .div_ceil(2 * rayon::current_num_threads())
            .max(4096);
        let parts: Vec<(MessageColumns, u64)> = rows
            .par_chunks(part)
            .map(|p| {
                let mut c = cols.fork();
                let mut bad = 0u64;
                for r in p {
                    bad += u64::from(c.push(&r.data.payload).is_err());
                }
                (c, bad)
            })
            .collect();
        let mut bad = 0;
        for (c, b) in parts {
            cols.append(c);
            bad += b;
        }
        if bad > 0 {
            *self.decode_errors.entry(*topic).or_default() += bad;
        }
        Ok(Some(message_df(cols, &self.axes[*topic], &rows)?))
    }

    /// The end of the read: the axes of all the times read decide. `Some` (the final axes and
    /// their warnings) when the row groups written took other ones: the output is to be
    /// discarded and written again.
    fn settle_axes(&mut self) -> Option<(Vec<String>, Vec<Warning>)> {
        let r = self.reading.take()?;
        let (axes, mut axis_warnings) = r.finish();
        let differs = self
            .guessed
            .as_ref()
            .is_some_and(|g| self.request.topics.iter().any(|&t| g.get(t) != axes.get(t)));
        if differs {
            return Some((axes, axis_warnings));
        }
        self.axes = axes;
        self.warnings.append(&mut axis_warnings);
        None
    }

    /// Writes each table's last rows, closes its output, and reports what it holds; warns
    /// about rows that arrived after their row group and array elements beyond the exploded
    /// width.
    fn finish_tables(&mut self, sinks: Vec<Sink>) -> crate::Result<(Vec<ExportedTable>, Frames)> {
        let mut out_tables = Vec::new();
        let mut frames = Vec::new();
        for (k, mut sink) in sinks.into_iter().enumerate() {
            if let Some(df) = self.row_group(k, true)? {
                sink.write(df)?;
            }
            let table = &mut self.tables[k];
            let topics = vec![self.bag.topics[table.topic].name.clone()];
            let late = table.buf.late;
            if late > 0 {
                self.warnings.push(Warning::new(
                    WarningCode::ExportUnsorted,
                    format!(
                        "{late} row(s) arrived later in the file than a row group of newer messages: rows are sorted by log time within row groups only (raise the row-group size)"
                    ),
                ).topic(topics.join(",")));
            }
            if table.cols.truncated > 0 {
                self.warnings.push(
                    Warning::new(
                        WarningCode::ExportTruncated,
                        format!(
                            "{} array element(s) beyond the exploded width (the longest array of the first row group) were left out",
                            table.cols.truncated
                        ),
                    )
                    .topic(topics.join(",")),
                );
            }
            let path = match &sink {
                Sink::File(w) => Some(w.path().display().to_string()),
                Sink::Memory(_) => None,
            };
            let empty = message_df(&mut table.cols, &self.axes[table.topic], &[])?;
            let columns = crate::column_names(&empty);
            let (rows, df) = sink.finish(empty)?;
            frames.push(df);
            out_tables.push(ExportedTable {
                path,
                topics,
                rows,
                columns,
            });
        }
        Ok((out_tables, frames))
    }

    /// The report's last warnings: per topic, the messages that did not decode.
    fn decode_warnings(&mut self) {
        for (&ti, n) in &self.decode_errors {
            self.warnings.push(
                Warning::new(
                    WarningCode::UndecodableMessage,
                    format!("{n} message(s) could not be decoded with the topic's schema: their field columns are null"),
                )
                .topic(&self.bag.topics[ti].name)
                .loss(),
            );
        }
    }
}

/// One walk of the bag into `sinks` (see [`write_message_tables`]).
fn walk(
    bag: &Bag,
    request: &MessageTables<'_>,
    sinks: Vec<Sink>,
    axes: ClockAxes<'_>,
) -> Result<Walked, ExportError> {
    let mut w = Walk::new(bag, request, axes)?;
    let (mut visit_warnings, sinks) = w.stream(sinks);
    if let Some(e) = w.failed.take() {
        return Err(e.into());
    }
    let sinks = sinks?;
    if let Some((axes, warnings)) = w.settle_axes() {
        // Discard what was written (the unfinished files are removed) before a new walk.
        drop(sinks);
        return Ok(Walked::Retry(axes, warnings));
    }
    w.warnings.append(&mut visit_warnings);
    let (tables, frames) = w.finish_tables(sinks)?;
    w.decode_warnings();
    let mut warnings = w.warnings;
    warnings.sort();
    warnings.dedup();
    Ok(Walked::Done(
        ExportReport {
            bag: bag.path.display().to_string(),
            tables,
            warnings,
        },
        frames,
    ))
}

#[cfg(test)]
mod tests {
    use super::{Buffer, Row};

    #[test]
    fn buffer_writes_older_half_sorted_and_counts_late_rows() {
        let mut b = Buffer::new();
        for (seq, t) in [5i64, 3, 4, 1, 2, 6].into_iter().enumerate() {
            b.push(Row {
                log_time_ns: t,
                seq: seq as u64,
                bytes: 1,
                data: (),
            });
        }
        let first: Vec<i64> = b.take(false).iter().map(|r| r.log_time_ns).collect();
        assert_eq!(first, [1, 2, 3]);
        b.push(Row {
            log_time_ns: 0,
            seq: 9,
            bytes: 1,
            data: (),
        });
        assert_eq!(b.late, 1);
        let rest: Vec<i64> = b.take(true).iter().map(|r| r.log_time_ns).collect();
        assert_eq!(rest, [0, 4, 5, 6]);
        assert_eq!(b.bytes, 0);
    }
}
