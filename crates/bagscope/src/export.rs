//! `bagscope export`: a bag's messages as tables (Parquet or CSV, or polars DataFrames).
//!
//! One walk of the wanted topics with [`Bag::visit`] (one chunk decompressed at a time): each
//! message is decoded into a per-table buffer that is written as a row group whenever it holds
//! `2 × row_group_rows` rows or `2 × row_group_bytes` payload bytes: the older half is written,
//! the newer half kept, so rows recorded slightly out of order still come out sorted by (log
//! time, file order). The same walk reads the times of the exported topics and of any clock
//! topic (24 bytes a message, as `bagscope clocks`) for the `clock_axis` column; see [`run`]
//! for how the first row groups get their axis before the last stamp is read. Memory is bounded
//! by the buffers and those times, not by the bag.
//!
//! Output naming: `-o X.parquet` with one topic (or `--timing-only`) is that file; with several
//! topics each goes to `X.<topic>.parquet` beside it (`/camera/image_raw` → `camera.image_raw`;
//! other names get a hash suffix and are shortened: [`bagscope_bag::text::file_stem_for_topic`]);
//! `-o DIR` (no `.parquet` / `.csv` extension) writes `DIR/<topic>.parquet` (or
//! `DIR/timing.parquet`). No output (nor its temporary file) may be one of the bag's files.
//!
//! CSV string cells that a spreadsheet would evaluate as a formula are written with a leading
//! `'` ([`bagscope_tables::csv_cell`]) unless [`ExportOptions::csv_raw`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Columns, Warning};
use bagscope_clocks::{analyze, ClocksOptions};
use bagscope_msg::{MessageSchema, StampLocator};
use bagscope_tables::message::MessageColumns;
use bagscope_tables::polars::prelude::DataFrame;
use bagscope_tables::{Col, Format, Sink, TableWriter};
use rayon::prelude::*;

use crate::clocks::times_of_series;
use crate::series::{locators, series_of_columns, stamp_values, topic_schemas};
use crate::Error;

/// What `export` writes and how ([`Default`]: every topic, every field, Parquet, 64 Ki-row /
/// 64 MiB row groups).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Topics to export (empty: all, sorted by name).
    pub topics: Vec<String>,
    /// Field paths to keep (`header.frame_id`, `position`); empty: all fields.
    pub fields: Vec<String>,
    /// Arrays of numbers as one column per element instead of a list column.
    pub explode: bool,
    /// One table of all topics' times (the fleet table) instead of per-topic message tables.
    pub timing_only: bool,
    /// Format when the output path has no `.parquet` / `.csv` extension (a directory).
    pub format: Format,
    /// Whether the timing table has a `bag` column (batch leaves it out: its hive partition
    /// directory `bag=NAME` carries it, and Spark rejects a column in both places).
    pub bag_column: bool,
    /// Value of the `bag` column (default: the bag's file or folder name).
    pub bag_name: Option<String>,
    /// Rows per row group (default 65 536): a table's buffer is written when it holds twice
    /// this many rows, its older half as one row group. Larger groups sort rows recorded far
    /// out of order, at the cost of memory.
    pub row_group_rows: usize,
    /// Payload bytes per row group (default 64 MiB), as `row_group_rows`: whichever is reached
    /// first writes.
    pub row_group_bytes: usize,
    /// CSV: write string cells unchanged (no formula neutralising).
    pub csv_raw: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            topics: Vec::new(),
            fields: Vec::new(),
            explode: false,
            timing_only: false,
            format: Format::Parquet,
            bag_column: true,
            bag_name: None,
            row_group_rows: 65_536,
            row_group_bytes: 64 << 20,
            csv_raw: false,
        }
    }
}

impl ExportOptions {
    /// Refuses parameters that do not apply: `fields` and `explode` choose message columns,
    /// which the timing table (`timing_only`) does not have.
    pub fn validate(&self) -> Result<(), Error> {
        for (set, name) in [
            (!self.fields.is_empty(), "fields"),
            (self.explode, "explode"),
        ] {
            crate::params::not_applicable(set && self.timing_only, name, || {
                "does not apply with `timing_only` (the timing table has no message fields)".into()
            })?;
        }
        Ok(())
    }
}

pub use bagscope_tables::export::{ExportReport, ExportedTable};

/// Writes the tables to files (see the module docs for naming).
pub fn export(path: &Path, out: &Path, o: &ExportOptions) -> Result<ExportReport, Error> {
    o.validate()?;
    export_of(&Bag::open(path)?, out, o)
}

/// [`export`] of an open bag.
pub fn export_of(bag: &Bag, out: &Path, o: &ExportOptions) -> Result<ExportReport, Error> {
    o.validate()?;
    export_known(bag, out, o, None)
}

/// The clock analysis of a bag that an export can take instead of computing its own (`batch`
/// has just run `clocks` on the same bag): every topic's clock, and the warnings of the scan
/// that read their times. Used only where the export's own analysis would read the same
/// topics (every topic of the bag is exported).
pub(crate) struct KnownClocks<'a> {
    pub topics: &'a [bagscope_clocks::TopicClock],
    pub scan_warnings: Vec<Warning>,
}

/// [`export_of`], with the clock analysis given where it applies.
pub(crate) fn export_known(
    bag: &Bag,
    out: &Path,
    o: &ExportOptions,
    known: Option<KnownClocks<'_>>,
) -> Result<ExportReport, Error> {
    let plan = plan(bag, o)?;
    let (format, paths) = output_paths(out, &plan, o)?;
    if o.timing_only {
        return export_timing(bag, o, &plan, format, &paths[0], known);
    }
    let tmps: Vec<PathBuf> = paths
        .iter()
        .map(|p| bagscope_bag::outfile::temp_path(p, ".tmp"))
        .collect();
    let targets: Vec<&Path> = paths.iter().chain(&tmps).map(PathBuf::as_path).collect();
    crate::refuse_outputs(bag, &targets)?;
    let sinks = || {
        paths
            .iter()
            .map(|p| Sink::File(TableWriter::new(p, format).raw_csv(o.csv_raw)))
            .collect()
    };
    let (report, _) = run(bag, o, &plan, &sinks, format, known)?;
    Ok(report)
}

/// The timing table (`--timing-only`) of a bag as a DataFrame.
pub fn timing_frame(path: &Path, o: &ExportOptions) -> Result<(DataFrame, ExportReport), Error> {
    timing_frame_of(&Bag::open(path)?, o)
}

/// [`timing_frame`] of an open bag.
pub fn timing_frame_of(bag: &Bag, o: &ExportOptions) -> Result<(DataFrame, ExportReport), Error> {
    let (columns, report) = crate::timing::timing_columns_of(bag, o)?;
    Ok((bagscope_tables::timing::timing_frame(&columns)?, report))
}

/// `export --timing-only` to `path`: the timing table's one producer
/// ([`bagscope_tables::timing`]) in row groups of `row_group_rows`, the clock axes given where
/// they are known (every topic of the bag is exported).
fn export_timing(
    bag: &Bag,
    o: &ExportOptions,
    plan: &Plan,
    format: Format,
    path: &Path,
    known: Option<KnownClocks<'_>>,
) -> Result<ExportReport, Error> {
    let tmp = bagscope_bag::outfile::temp_path(path, ".tmp");
    crate::refuse_outputs(bag, &[path, tmp.as_path()])?;
    let known = known
        .filter(|_| axis_topics(bag, plan).iter().all(|&a| a))
        .map(|k| (axis_names(bag, k.topics), k.scan_warnings));
    let stamps = crate::timing::SeriesStamps::of(bag);
    let timing = crate::timing::plan_with(bag, o, &stamps, known)?;
    let sink = Sink::File(TableWriter::new(path, format).raw_csv(o.csv_raw));
    let (rows, _) =
        bagscope_tables::timing::write_row_groups(bag, &timing, &stamps, sink, o.row_group_rows)?;
    let mut report = timing.report;
    for t in &mut report.tables {
        t.path = Some(path.display().to_string());
        t.rows = rows;
    }
    Ok(report)
}

/// One DataFrame per exported topic (topic name, frame), sorted by topic. Holds every row in
/// memory: for large bags, use [`export`].
pub fn topic_frames(
    path: &Path,
    o: &ExportOptions,
) -> Result<(Vec<(String, DataFrame)>, ExportReport), Error> {
    topic_frames_of(&Bag::open(path)?, o)
}

/// [`topic_frames`] of an open bag.
pub fn topic_frames_of(
    bag: &Bag,
    o: &ExportOptions,
) -> Result<(Vec<(String, DataFrame)>, ExportReport), Error> {
    let o = ExportOptions {
        timing_only: false,
        ..o.clone()
    };
    let plan = plan(bag, &o)?;
    let sinks = || plan.tables.iter().map(|_| Sink::Memory(None)).collect();
    let (report, frames) = run(bag, &o, &plan, &sinks, Format::Parquet, None)?;
    let out = plan
        .tables
        .iter()
        .zip(frames)
        .map(|(t, f)| (bag.topics[t[0]].name.clone(), f.unwrap_or_default()))
        .collect();
    Ok((out, report))
}

/// `/camera/image_raw` → `camera.image_raw`: safe in file names and hive partition values
/// (not unique: topics' files are named by [`bagscope_bag::text::file_stem_for_topic`]).
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .trim_start_matches('/')
        .chars()
        .map(|c| match c {
            '/' => '.',
            c if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') => c,
            _ => '_',
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        "_".into()
    } else {
        s
    }
}

/// Which bag topics go into which table.
pub(crate) struct Plan {
    /// Per table, the bag topic indices it holds (one for message tables).
    pub(crate) tables: Vec<Vec<usize>>,
    /// Per bag topic: its table, if exported.
    table_of: Vec<Option<usize>>,
    /// Per table, its topic name (message tables).
    names: Vec<String>,
    pub(crate) bag_name: String,
}

pub(crate) fn plan(bag: &Bag, o: &ExportOptions) -> Result<Plan, Error> {
    let mut wanted: Vec<usize> = if o.topics.is_empty() {
        (0..bag.topics.len()).collect()
    } else {
        let mut v = Vec::new();
        for t in &o.topics {
            v.push(bag.topic_index(t)?);
        }
        v
    };
    wanted.sort_by(|a, b| {
        let (x, y) = (&bag.topics[*a], &bag.topics[*b]);
        x.name.cmp(&y.name).then(x.type_name.cmp(&y.type_name))
    });
    wanted.dedup();
    let tables: Vec<Vec<usize>> = if o.timing_only {
        vec![wanted]
    } else {
        wanted.into_iter().map(|t| vec![t]).collect()
    };
    let mut table_of = vec![None; bag.topics.len()];
    for (i, t) in tables.iter().enumerate() {
        for &ti in t {
            table_of[ti] = Some(i);
        }
    }
    let names = tables
        .iter()
        .map(|t| {
            t.first()
                .map_or(String::new(), |&ti| bag.topics[ti].name.clone())
        })
        .collect();
    Ok(Plan {
        tables,
        table_of,
        names,
        bag_name: o
            .bag_name
            .clone()
            .unwrap_or_else(|| crate::bag_name(&bag.path)),
    })
}

fn output_paths(
    out: &Path,
    plan: &Plan,
    o: &ExportOptions,
) -> Result<(Format, Vec<PathBuf>), Error> {
    let file_format = Format::from_path(out);
    let format = file_format.unwrap_or(o.format);
    if o.timing_only {
        return Ok(match file_format {
            Some(f) => (f, vec![out.to_path_buf()]),
            None => (format, vec![out.join(format!("timing.{}", format.ext()))]),
        });
    }
    // File stems are unique per topic name; a topic recorded under two types, or a hash
    // collision, is numbered (compared without case: some file systems fold it).
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut paths = Vec::new();
    for name in &plan.names {
        let mut s = bagscope_bag::text::file_stem_for_topic(name);
        let n = seen.entry(s.to_ascii_lowercase()).or_insert(0);
        *n += 1;
        if *n > 1 {
            s = format!("{s}~{n}");
        }
        let p = match file_format {
            Some(_) if plan.tables.len() == 1 => out.to_path_buf(),
            Some(f) => {
                let stem = out
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default();
                out.with_file_name(format!("{stem}.{s}.{}", f.ext()))
            }
            None => out.join(format!("{s}.{}", format.ext())),
        };
        paths.push(p);
    }
    Ok((format, paths))
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

/// Per-topic facts the tables repeat on every row.
struct TopicMeta {
    axes: Vec<String>,
}

fn message_df(
    cols: &mut MessageColumns,
    axis: &str,
    rows: &[Row<MsgRow>],
) -> Result<DataFrame, Error> {
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
    Ok(cols.frame(base)?)
}

type Frames = Vec<Option<DataFrame>>;

/// Where an export's clock axes come from.
enum Axes {
    /// Known before the walk (every topic's, by name), with the warnings of the scan that
    /// read their times.
    Known(Vec<String>, Vec<Warning>),
    /// Read by the walk itself from the times of these topics (indexed like `bag.topics`).
    Read(Vec<bool>),
}

/// What one walk of the bag ended with.
enum Walked {
    Done(ExportReport, Frames),
    /// Row groups were written with axes guessed from the first messages, and the whole
    /// topic's times give others: the output was discarded; walk again with these.
    Retry(Vec<String>, Vec<Warning>),
}

/// The topics whose times decide the exported topics' clock axes: the exported ones and any
/// clock topic (`/clock` decides sim) — not the whole bag, which would cost 24 bytes for every
/// message of every other topic.
fn axis_topics(bag: &Bag, plan: &Plan) -> Vec<bool> {
    let mut axis_topics = vec![false; bag.topics.len()];
    for t in plan.tables.iter().flatten() {
        axis_topics[*t] = true;
    }
    for (i, t) in bag.topics.iter().enumerate() {
        if t.type_name == "rosgraph_msgs/msg/Clock" {
            axis_topics[i] = true;
        }
    }
    axis_topics
}

/// One walk of the bag, usually the only one: the clock axes are read by the same walk that
/// writes the rows. The `clock_axis` column of the first row groups is written before the
/// topic's last stamp is read, so it takes the axes of the times read so far (the analysis is
/// run then on those); at the end the analysis of all of them decides, and in the rare bag
/// where the two differ (a topic whose stamps change clock after its first row groups) the
/// output is discarded and written again in a second walk with the final axes. The tables are
/// exactly those of an analysis made before the walk.
fn run(
    bag: &Bag,
    o: &ExportOptions,
    plan: &Plan,
    sinks: &dyn Fn() -> Vec<Sink>,
    format: Format,
    known: Option<KnownClocks<'_>>,
) -> Result<(ExportReport, Frames), Error> {
    let topics = axis_topics(bag, plan);
    let mut axes = match known {
        Some(k) if topics.iter().all(|&a| a) => {
            Axes::Known(axis_names(bag, k.topics), k.scan_warnings)
        }
        _ => Axes::Read(topics),
    };
    loop {
        match walk(bag, o, plan, sinks(), format, axes)? {
            Walked::Done(report, frames) => return Ok((report, frames)),
            Walked::Retry(a, w) => axes = Axes::Known(a, w),
        }
    }
}

/// The times of the axis topics a walk reads, as `clocks`' scan reads them (log time, publish
/// time, stamp), in walk order.
struct AxisTimes {
    topics: Vec<bool>,
    columns: Vec<Columns<2>>,
    invalid: Vec<AtomicUsize>,
}

impl AxisTimes {
    fn new(topics: Vec<bool>) -> AxisTimes {
        AxisTimes {
            columns: topics.iter().map(|_| Columns::default()).collect(),
            invalid: topics.iter().map(|_| AtomicUsize::new(0)).collect(),
            topics,
        }
    }

    fn push(&mut self, m: &bagscope_bag::RawMessage<'_>, loc: &StampLocator) {
        if !self.topics.get(m.topic).copied().unwrap_or(false) {
            return;
        }
        let [publish, stamp] = stamp_values(loc, m, &self.invalid[m.topic]);
        let c = &mut self.columns[m.topic];
        c.log_time_ns.push(m.log_time_ns);
        c.values[0].push(publish);
        c.values[1].push(stamp);
    }

    /// Each bag topic's axis name from the times read so far (a copy of them is analysed).
    fn guess(
        &self,
        bag: &Bag,
        schemas: &[Result<MessageSchema, String>],
        locs: &[StampLocator],
    ) -> Vec<String> {
        let columns = self.columns.iter().cloned().map(log_time_order).collect();
        analyse(bag, &self.topics, schemas, locs, columns, &self.invalid).0
    }

    /// Each bag topic's axis name from all the times read, and the warnings of that analysis.
    fn finish(
        self,
        bag: &Bag,
        schemas: &[Result<MessageSchema, String>],
        locs: &[StampLocator],
    ) -> (Vec<String>, Vec<Warning>) {
        let columns = self.columns.into_iter().map(log_time_order).collect();
        analyse(bag, &self.topics, schemas, locs, columns, &self.invalid)
    }
}

/// The clocks analysis of the `topics`' times (`columns`, each in log-time order): each bag
/// topic's axis name, and the warnings of the series.
fn analyse(
    bag: &Bag,
    topics: &[bool],
    schemas: &[Result<MessageSchema, String>],
    locs: &[StampLocator],
    columns: Vec<Columns<2>>,
    invalid: &[AtomicUsize],
) -> (Vec<String>, Vec<Warning>) {
    let (series, warnings) =
        series_of_columns(bag, topics, schemas, locs, columns, invalid, Vec::new());
    let report = analyze(&times_of_series(series), &ClocksOptions::default());
    (axis_names(bag, &report.topics), warnings)
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

#[allow(clippy::too_many_lines)] // To split once export.rs is being reworked for speed (issue 44).
fn walk(
    bag: &Bag,
    o: &ExportOptions,
    plan: &Plan,
    mut sinks: Vec<Sink>,
    format: Format,
    axes: Axes,
) -> Result<Walked, Error> {
    let schemas = topic_schemas(bag);
    let locs: Vec<StampLocator> = locators(&schemas);
    let text_nested = format == Format::Csv;
    let mut meta = TopicMeta { axes: Vec::new() };
    let (mut warnings, mut reading) = match axes {
        Axes::Known(a, w) => {
            meta.axes = a;
            (w, None)
        }
        Axes::Read(topics) => (Vec::new(), Some(AxisTimes::new(topics))),
    };
    // The axes the row groups written during the walk took, when they were guessed.
    let mut guessed: Option<Vec<String>> = None;

    let mut tables = make_tables(bag, o, plan, &schemas, text_nested)?;

    let mut wanted = vec![false; bag.topics.len()];
    for t in plan.tables.iter().flatten() {
        wanted[*t] = true;
    }
    if let Some(r) = &reading {
        for (w, &a) in wanted.iter_mut().zip(&r.topics) {
            *w |= a;
        }
    }
    let cap_rows = o.row_group_rows.max(1);
    let cap_bytes = o.row_group_bytes.max(1);
    // Payloads are decoded when their row group is built (inside `make_df`).
    let decode_errors: std::sync::Mutex<BTreeMap<usize, u64>> = Default::default();
    let mut failed: Option<Error> = None;
    let mut writer_gone = false;
    let mut seq = 0u64;

    // A table's next row group as a frame (`None` when it has no rows to write).
    let make_df =
        |table: &mut Table, all: bool, meta: &TopicMeta| -> Result<Option<DataFrame>, Error> {
            let Table {
                buf, cols, topic, ..
            } = table;
            let rows = buf.take(all);
            if rows.is_empty() {
                return Ok(None);
            }
            // Decoded straight into columns, in parts on every core, joined in row order.
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
                if let Ok(mut e) = decode_errors.lock() {
                    *e.entry(*topic).or_default() += bad;
                }
            }
            Ok(Some(message_df(cols, &meta.axes[*topic], &rows)?))
        };

    // Pass 2: stream. Row groups are encoded and written on a thread of their own (one more
    // queued at most, so memory stays bounded by a few row groups) while the walk reads and
    // decodes the next: Parquet encoding and zstd are a third of an export's CPU time.
    let (mut visit_warnings, sinks) = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, DataFrame)>(1);
        let writer = scope.spawn(move || -> (Vec<Sink>, Result<(), Error>) {
            for (k, df) in rx {
                if let Err(e) = sinks[k].write(df) {
                    return (sinks, Err(e.into()));
                }
            }
            (sinks, Ok(()))
        });
        let visit_warnings = bag.visit(&wanted, |m| {
            if failed.is_some() || writer_gone {
                return;
            }
            if let Some(r) = reading.as_mut() {
                r.push(m, &locs[m.topic]);
            }
            let Some(k) = plan.table_of.get(m.topic).copied().flatten() else {
                return;
            };
            let stamp = locs[m.topic].read_stamp_ns(m.data).ok().flatten();
            seq += 1;
            let Table { buf, schema, .. } = &mut tables[k];
            buf.push(Row {
                log_time_ns: m.log_time_ns,
                seq,
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
            let full = buf.rows.len() >= 2 * cap_rows || buf.bytes >= 2 * cap_bytes;
            if full {
                if let Some(r) = reading.as_ref().filter(|_| guessed.is_none()) {
                    meta.axes = r.guess(bag, &schemas, &locs);
                    guessed = Some(meta.axes.clone());
                }
                match make_df(&mut tables[k], false, &meta) {
                    // A closed channel: the writer stopped on an error, which its join returns.
                    Ok(Some(df)) => writer_gone = tx.send((k, df)).is_err(),
                    Ok(None) => {}
                    Err(e) => failed = Some(e),
                }
            }
        });
        drop(tx);
        let (sinks, written) = writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (visit_warnings, written.map(|()| sinks))
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let sinks = sinks?;
    if let Some(r) = reading {
        let (axes, mut axis_warnings) = r.finish(bag, &schemas, &locs);
        let differs = guessed.is_some_and(|g| {
            plan.tables
                .iter()
                .flatten()
                .any(|&t| g.get(t) != axes.get(t))
        });
        if differs {
            // Discard what was written (the unfinished files are removed) before a new walk.
            drop(sinks);
            return Ok(Walked::Retry(axes, axis_warnings));
        }
        meta.axes = axes;
        warnings.append(&mut axis_warnings);
    }
    warnings.append(&mut visit_warnings);

    let finish = Finish {
        bag,
        plan,
        meta: &meta,
        flush: |t: &mut Table, s: &mut Sink| -> Result<(), Error> {
            if let Some(df) = make_df(t, true, &meta)? {
                s.write(df)?;
            }
            Ok(())
        },
    };
    let (out_tables, frames) = finish_tables(tables, sinks, &mut warnings, &finish)?;
    for (ti, n) in decode_errors.into_inner().unwrap_or_default() {
        warnings.push(
            Warning::new(
                WarningCode::UndecodableMessage,
                format!("{n} message(s) could not be decoded with the topic's schema: their field columns are null"),
            )
            .topic(&bag.topics[ti].name)
            .loss(),
        );
    }
    warnings.sort();
    warnings.dedup();
    Ok(Walked::Done(
        ExportReport {
            bag: bag.path.display().to_string(),
            tables: out_tables,
            warnings,
        },
        frames,
    ))
}

/// What [`finish_tables`] needs of the export.
struct Finish<'a, F> {
    bag: &'a Bag,
    plan: &'a Plan,
    meta: &'a TopicMeta,
    /// Writes a table's remaining rows.
    flush: F,
}

/// Writes each table's last rows, closes its output, and reports what it holds; warns about
/// rows that arrived after their row group and array elements beyond the exploded width.
fn finish_tables<F>(
    mut tables: Vec<Table>,
    sinks: Vec<Sink>,
    warnings: &mut Vec<Warning>,
    f: &Finish<'_, F>,
) -> Result<(Vec<ExportedTable>, Frames), Error>
where
    F: Fn(&mut Table, &mut Sink) -> Result<(), Error>,
{
    let mut out_tables = Vec::new();
    let mut frames = Vec::new();
    for ((k, table), sink) in tables.iter_mut().enumerate().zip(sinks) {
        let mut sink = sink;
        (f.flush)(table, &mut sink)?;
        let late = table.buf.late;
        let topics: Vec<String> = f.plan.tables[k]
            .iter()
            .map(|t| f.bag.topics[*t].name.clone())
            .collect();
        if late > 0 {
            warnings.push(Warning::new(
                WarningCode::ExportUnsorted,
                format!(
                    "{late} row(s) arrived later in the file than a row group of newer messages: rows are sorted by log time within row groups only (raise the row-group size)"
                ),
            ).topic(topics.join(",")));
        }
        if table.cols.truncated > 0 {
            warnings.push(
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
        let empty = message_df(&mut table.cols, &f.meta.axes[table.topic], &[])?;
        let columns = bagscope_tables::column_names(&empty);
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

/// One empty table per output: the timing table, or a message table with the columns the
/// topic's schema and the selected fields give.
fn make_tables(
    bag: &Bag,
    o: &ExportOptions,
    plan: &Plan,
    schemas: &[Result<MessageSchema, String>],
    text_nested: bool,
) -> Result<Vec<Table>, Error> {
    let mut tables: Vec<Table> = Vec::new();
    for t in &plan.tables {
        let ti = t[0];
        let schema = schemas[ti].as_ref().ok().cloned();
        let cols = match &schema {
            Some(s) => {
                MessageColumns::new(s, &o.fields, o.explode, text_nested).map_err(|source| {
                    Error::Fields {
                        topic: bag.topics[ti].name.clone(),
                        source,
                    }
                })?
            }
            None if o.fields.is_empty() => MessageColumns::empty(text_nested),
            None => {
                return Err(Error::invalid(
                    "fields",
                    format!(
                        "{}: no usable schema, so no fields to select",
                        bag.topics[ti].name
                    ),
                ))
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

/// Each bag topic's `clock_axis` value: its axis in the clocks analysis `topics`, `none` for a
/// topic the analysis did not see.
pub(crate) fn axis_names(bag: &Bag, topics: &[bagscope_clocks::TopicClock]) -> Vec<String> {
    bag.topics
        .iter()
        .map(|t| {
            topics
                .iter()
                .find(|c| c.topic == t.name && c.type_name == t.type_name)
                .map(|c| c.axis.name().to_string())
                .unwrap_or_else(|| "none".into())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{sanitize, Buffer, Row};

    #[test]
    fn sanitized_names() {
        assert_eq!(sanitize("/camera/image_raw"), "camera.image_raw");
        assert_eq!(sanitize("/a b=c"), "a_b_c");
        assert_eq!(sanitize("/"), "_");
    }

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
