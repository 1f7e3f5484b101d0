//! `bagscope export`: a bag's messages as tables (Parquet or CSV, or polars DataFrames).
//!
//! This module resolves the options (topics, output paths, refused outputs) and hands the
//! tables to `bagscope-tables`: the message tables to its one walk of the bag
//! ([`bagscope_tables::export::write_message_tables`], which decodes the messages into row
//! groups and reads the exported topics' times for the `clock_axis` column as it goes), the
//! timing table to its one producer ([`bagscope_tables::timing`]). The stamps and the clocks
//! analysis that decide each topic's `clock_axis` are handed in from here (as `clocks` reads
//! them: `timing.rs`'s `SeriesStamps`).
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

use bagscope_bag::{Bag, Warning};
use bagscope_tables::export::{
    axis_topics, write_message_tables, ClockAxes, Frames, MessageTables,
};
use bagscope_tables::polars::prelude::DataFrame;
use bagscope_tables::{Format, Sink, TableWriter};

use crate::timing::SeriesStamps;
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
    let (format, paths) = output_paths(bag, out, &plan, o)?;
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
    let (report, _) = message_tables(bag, o, &plan, &sinks, format, known)?;
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
    let known = known_axes(bag, plan, known);
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
    let sinks = || plan.topics.iter().map(|_| Sink::Memory(None)).collect();
    let (report, frames) = message_tables(bag, &o, &plan, &sinks, Format::Parquet, None)?;
    let out = plan
        .topics
        .iter()
        .zip(frames)
        .map(|(&t, f)| (bag.topics[t].name.clone(), f.unwrap_or_default()))
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

/// The exported topics: one message table each, or together the timing table.
pub(crate) struct Plan {
    /// The exported bag topics (indices into `bag.topics`), sorted by name, then type.
    pub(crate) topics: Vec<usize>,
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
    Ok(Plan {
        topics: wanted,
        bag_name: o
            .bag_name
            .clone()
            .unwrap_or_else(|| crate::bag_name(&bag.path)),
    })
}

fn output_paths(
    bag: &Bag,
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
    for &t in &plan.topics {
        let mut s = bagscope_bag::text::file_stem_for_topic(&bag.topics[t].name);
        let n = seen.entry(s.to_ascii_lowercase()).or_insert(0);
        *n += 1;
        if *n > 1 {
            s = format!("{s}~{n}");
        }
        let p = match file_format {
            Some(_) if plan.topics.len() == 1 => out.to_path_buf(),
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

/// The message tables of `plan` into the sinks `sinks` makes: the one call into
/// `bagscope-tables`' producer ([`write_message_tables`]), with the stamps and the clocks
/// analysis as `clocks` reads them, or the axes given where they are known (every topic of the
/// bag is exported).
fn message_tables(
    bag: &Bag,
    o: &ExportOptions,
    plan: &Plan,
    sinks: &dyn Fn() -> Vec<Sink>,
    format: Format,
    known: Option<KnownClocks<'_>>,
) -> Result<(ExportReport, Frames), Error> {
    let stamps = SeriesStamps::of(bag);
    let request = MessageTables {
        topics: &plan.topics,
        fields: &o.fields,
        explode: o.explode,
        format,
        row_group_rows: o.row_group_rows,
        row_group_bytes: o.row_group_bytes,
        schemas: stamps.schemas(),
        locators: stamps.locators(),
    };
    let analysis = |topics: &[bool], columns| stamps.axes(bag, topics, columns, Vec::new());
    let axes = match known_axes(bag, plan, known) {
        Some((axes, warnings)) => ClockAxes::Known(axes, warnings),
        None => ClockAxes::Read {
            topics: axis_topics(bag, &plan.topics),
            stamps: &stamps,
            analysis: &analysis,
        },
    };
    Ok(write_message_tables(bag, &request, sinks, axes)?)
}

/// The `known` clock analysis as each bag topic's `clock_axis` value and the warnings of its
/// scan, where it applies: the export's own analysis would read the same topics (every topic
/// of the bag is exported, [`axis_topics`]).
fn known_axes(
    bag: &Bag,
    plan: &Plan,
    known: Option<KnownClocks<'_>>,
) -> Option<(Vec<String>, Vec<Warning>)> {
    known
        .filter(|_| axis_topics(bag, &plan.topics).iter().all(|&a| a))
        .map(|k| (axis_names(bag, k.topics), k.scan_warnings))
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
    use super::sanitize;

    #[test]
    fn sanitized_names() {
        assert_eq!(sanitize("/camera/image_raw"), "camera.image_raw");
        assert_eq!(sanitize("/a b=c"), "a_b_c");
        assert_eq!(sanitize("/"), "_");
    }
}
