//! bagscope-tables: bag data as polars `DataFrame`s and streamed Parquet / CSV files.
//!
//! This is the only crate of the workspace that depends on polars (heavy to compile; built with
//! only the writers and the small integer dtypes). Apart from the two producers that walk a
//! bag (the export's message tables and the timing table) it knows nothing about bag files: callers hand it plain columns ([`Col`]) or decoded messages
//! ([`message::MessageColumns`]) one row group at a time, and [`Sink`] writes each group as it
//! comes (Parquet row groups, CSV rows), so memory is bounded by one row group, not by the bag.
//!
//! CSV string cells are neutralised against formula injection ([`csv_cell`]) unless the
//! writer is told to keep them raw ([`TableWriter::raw_csv`]).
//!
//! # In the workspace
//!
//! Bag data as polars `DataFrame`s and streamed Parquet / CSV: plain columns, message schemas
//! flattened into columns (`header.frame_id`, list or exploded arrays) that messages are
//! decoded straight into (`bagscope-msg`'s `leaves`; parts of a row group decoded on other
//! threads and appended), row-group writers that write to a temporary name and rename
//! (schema-level metadata, e.g. pandas' index, written into the footer's Arrow schema with
//! `polars-arrow`'s IPC serializer); CSV string cells neutralised against formula injection
//! (`csv_cell`; raw on request). The message tables' one producer (`export`: one walk of a
//! `bagscope-bag` `Bag` buffering each topic's rows and writing them as sorted row groups
//! decoded on every core, on a writer thread; the stamps and the clocks analysis for
//! `clock_axis` handed in by the facade) for `export` and the Python package's
//! `Bag.messages`; the timing table's one producer (`timing`: two ordered reads of a `Bag`, the
//! stamps and the clocks analysis handed in by the facade) for `export --timing-only`,
//! `batch`, `Bag::timing` and the Python package's `Bag.timing` / `Bag.timing_batches`; the
//! export report (`export`); the LeRobot v3.0 writer (`lerobot`: one episode written into a
//! staging folder as the frames come, each feature's statistics from sorted runs on disk
//! merged in order, renamed whole into place); `observe`'s tables (`observations`: the
//! observation table's columns filled an observation at a time, the rejection table spilled per
//! topic and written in row groups); `batch`'s summary table (`summary`: typed rows per
//! bag and topic, filled by the facade from each bag's reports).
//!
//! Notable dependencies: `polars` (only crate allowed to use it; no default features: parquet,
//! csv, small int dtypes; `polars-arrow` and `base64` as polars' writer uses them),
//! `bagscope-msg` (leaf decoding, decoded values, TF frames), `bagscope-bag` (`outfile`
//! temporaries; the export's and the timing table's reads), `bagscope-types` (`Warning`,
//! `CommandReport`), `rayon` (a row group decoded on every core), `bagscope-observe`
//! (the observations the LeRobot writer takes), `tempfile` (its statistics' sorted runs).

pub mod export;
pub mod lerobot;
pub mod message;
pub mod observations;
pub mod summary;
pub mod timing;

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use bagscope_bag::outfile;

pub use polars;
use polars::prelude::*;

/// Why a frame could not be built or written.
#[derive(Debug, thiserror::Error)]
pub enum FramesError {
    /// The output's folder or temporary file could not be created.
    #[error("{path}: {source}")]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// polars failed while writing a file.
    #[error("{path}: {source}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// polars' error.
        source: PolarsError,
    },
    /// polars failed while building or joining frames in memory.
    #[error(transparent)]
    Polars(#[from] PolarsError),
    /// The caller asked for something impossible (columns of different lengths, a field the
    /// schema does not have, ...): what and why.
    #[error("{0}")]
    Usage(String),
}

/// A result whose error is [`FramesError`].
pub type Result<T> = std::result::Result<T, FramesError>;

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet, one row group per frame written.
    Parquet,
    /// Comma-separated values with a header row.
    Csv,
}

impl Format {
    /// From the file name's extension (`.parquet`, `.pq`, `.csv`).
    pub fn from_path(p: &Path) -> Option<Format> {
        match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "parquet" | "pq" => Some(Format::Parquet),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    /// The file extension without the dot: `parquet` or `csv`.
    pub fn ext(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Csv => "csv",
        }
    }
}

/// One column of plain values.
#[derive(Debug, Clone)]
pub enum Col {
    /// Signed integers (times in ns, counts); `None` is null.
    I64(Vec<Option<i64>>),
    /// Unsigned integers; `None` is null.
    U64(Vec<Option<u64>>),
    /// Floats; `None` is null.
    F64(Vec<Option<f64>>),
    /// Booleans; `None` is null.
    Bool(Vec<Option<bool>>),
    /// Strings; `None` is null.
    Str(Vec<Option<String>>),
    /// Lists of floats (a joint state's positions); `None` is null.
    F64List(Vec<Option<Vec<f64>>>),
    /// Lists of strings (a joint state's names); `None` is null.
    StrList(Vec<Option<Vec<String>>>),
    /// Lists of signed integers (counts per dimension); `None` is null.
    I64List(Vec<Option<Vec<i64>>>),
    /// Strings repeated over many rows (topic, type, axis): indices into `dict`, so a row costs
    /// 4 bytes instead of a `String`. An index out of range is null.
    Dict {
        /// The distinct strings.
        dict: Vec<String>,
        /// Each row's index into `dict`.
        idx: Vec<u32>,
    },
}

impl Col {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Col::I64(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::F64(v) => v.len(),
            Col::Bool(v) => v.len(),
            Col::Str(v) => v.len(),
            Col::F64List(v) => v.len(),
            Col::StrList(v) => v.len(),
            Col::I64List(v) => v.len(),
            Col::Dict { idx, .. } => idx.len(),
        }
    }

    /// True when the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn into_column(self, name: &str) -> Column {
        let name: PlSmallStr = name.into();
        match self {
            Col::I64(v) => Column::new(name, v),
            Col::U64(v) => Column::new(name, v),
            Col::F64(v) => Column::new(name, v),
            Col::Bool(v) => Column::new(name, v),
            Col::Str(v) => Column::new(name, v),
            Col::F64List(v) => numeric_list_column::<Float64Type>(name, &v),
            Col::StrList(v) => list_column(name, DataType::String, &v),
            Col::I64List(v) => numeric_list_column::<Int64Type>(name, &v),
            Col::Dict { dict, idx } => {
                let ca: StringChunked = idx
                    .iter()
                    .map(|i| dict.get(*i as usize).map(String::as_str))
                    .collect();
                ca.with_name(name).into_column()
            }
        }
    }
}

/// A list column of numbers from one optional list per row (`None` is null): the builder
/// [`list_column`] would use for the type, each row's values appended as a slice (no series
/// made per row).
fn numeric_list_column<T>(name: PlSmallStr, rows: &[Option<Vec<T::Native>>]) -> Column
where
    T: PolarsNumericType,
{
    let n: usize = rows.iter().map(|x| x.as_ref().map_or(0, Vec::len)).sum();
    let mut b =
        ListPrimitiveChunkedBuilder::<T>::new(name.clone(), rows.len(), n, T::get_static_dtype());
    for x in rows {
        match x {
            Some(x) => b.append_slice(x),
            None => b.append_null(),
        }
    }
    b.finish().with_name(name).into_column()
}

/// A list column of `dtype` from one optional list per row (`None` is null).
fn list_column<T>(name: PlSmallStr, dtype: DataType, rows: &[Option<Vec<T>>]) -> Column
where
    Series: for<'a> NamedFrom<&'a [T], [T]>,
{
    let n: usize = rows.iter().map(|x| x.as_ref().map_or(0, Vec::len)).sum();
    let mut b =
        polars::chunked_array::builder::get_list_builder(&dtype, n, rows.len(), name.clone());
    for x in rows {
        match x {
            Some(x) => b
                .append_series(&Series::new(PlSmallStr::EMPTY, x.as_slice()))
                .expect("a series of the list's own type appended to its list builder"),
            None => b.append_null(),
        }
    }
    b.finish().with_name(name).into_column()
}

/// Builds a DataFrame from named columns of equal length.
pub fn frame(cols: Vec<(String, Col)>) -> Result<DataFrame> {
    let height = cols.first().map_or(0, |(_, c)| c.len());
    if let Some((n, c)) = cols.iter().find(|(_, c)| c.len() != height) {
        return Err(FramesError::Usage(format!(
            "column {n} has {} rows, expected {height}",
            c.len()
        )));
    }
    let columns = cols.into_iter().map(|(n, c)| c.into_column(&n)).collect();
    Ok(DataFrame::new(height, columns)?)
}

enum Inner {
    // Boxed: the parquet writer is ~700 bytes, the CSV one ~100.
    Parquet(Box<polars::io::parquet::write::BatchedWriter<File>>),
    Csv(polars::io::csv::write::BatchedWriter<File>),
}

/// Whether a CSV cell would be taken for a formula by a spreadsheet: it starts with `=`,
/// `+`, `-`, `@`, a tab or a carriage return (OWASP's list) and is not simply a number.
fn formula_like(s: &str) -> bool {
    s.starts_with(['=', '+', '-', '@', '\t', '\r'])
        && !(s
            .bytes()
            .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
            && s.parse::<f64>().is_ok())
}

/// A string cell as written to CSV: one that a spreadsheet would evaluate
/// (`=cmd|' /C calc'!A0`, `@SUM(…)`, `+1+1`) gets a leading `'`, as OWASP recommends for CSV
/// injection, so it is shown as text; numbers such as `-1.5` and everything else stay as they
/// are. `export --csv-raw` writes cells unchanged.
pub fn csv_cell(s: &str) -> Cow<'_, str> {
    if formula_like(s) {
        Cow::Owned(format!("'{s}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// `df` with its string cells and column names passed through [`csv_cell`]; only columns
/// that hold such a cell are rebuilt.
fn neutralise(df: &DataFrame) -> PolarsResult<Option<DataFrame>> {
    let mut out: Option<DataFrame> = None;
    for c in df.columns() {
        let renamed = formula_like(c.name());
        let rebuilt = match c.dtype() {
            DataType::String if c.str()?.iter().flatten().any(formula_like) => {
                let ca: StringChunked = c
                    .str()?
                    .iter()
                    .map(|v| v.map(|s| csv_cell(s).into_owned()))
                    .collect();
                Some(ca.with_name(c.name().clone()).into_column())
            }
            _ => None,
        };
        if renamed || rebuilt.is_some() {
            let o = out.get_or_insert_with(|| df.clone());
            if let Some(col) = rebuilt {
                o.with_column(col)?;
            }
            if renamed {
                o.rename(c.name(), PlSmallStr::from(csv_cell(c.name()).into_owned()))?;
            }
        }
    }
    Ok(out)
}

/// The footer key/values that carry `metadata` in a Parquet file of `schema`: `ARROW:schema`
/// (base64 of the length-prefixed IPC schema message, as polars' writer encodes it, here with
/// `metadata` as the schema's metadata) and `metadata` itself. `None` without metadata.
fn arrow_schema_metadata(
    schema: &Schema,
    metadata: &[(String, String)],
) -> Result<Option<Vec<(String, String)>>> {
    use base64::Engine as _;
    use polars_arrow::io::ipc::write::{default_ipc_fields, schema_to_bytes};
    if metadata.is_empty() {
        return Ok(None);
    }
    if let Some((n, _)) = schema.iter().find(|(_, d)| d.is_nested()) {
        return Err(FramesError::Usage(format!(
            "schema metadata on a table with the nested column {n}"
        )));
    }
    let arrow = schema.to_arrow(CompatLevel::newest());
    let meta: polars_arrow::datatypes::Metadata = metadata
        .iter()
        .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
        .collect();
    let ipc = schema_to_bytes(
        &arrow,
        &default_ipc_fields(arrow.iter_values()),
        Some(&meta),
    );
    let mut framed = Vec::with_capacity(ipc.len() + 8);
    framed.extend_from_slice(&[255, 255, 255, 255]);
    framed.extend_from_slice(&(ipc.len() as u32).to_le_bytes());
    framed.extend_from_slice(&ipc);
    let mut kv = vec![(
        "ARROW:schema".to_string(),
        base64::engine::general_purpose::STANDARD.encode(framed),
    )];
    kv.extend(metadata.iter().cloned());
    Ok(Some(kv))
}

/// Streams DataFrames with one schema into one file, a row group per frame. Writes to
/// `NAME.tmp` beside it (created anew: a leftover of a killed run is replaced, a link there is
/// not followed) and renames on [`TableWriter::finish`], so an interrupted run leaves no
/// half-written file that a resumed batch would take as done; the temporary file is removed
/// when the writer is dropped unfinished or the process is interrupted
/// ([`bagscope_bag::outfile::remove_live`]).
pub struct TableWriter {
    path: PathBuf,
    tmp: PathBuf,
    format: Format,
    inner: Option<Inner>,
    rows: u64,
    raw_csv: bool,
    /// Parquet: file-level key/value metadata.
    metadata: Vec<(String, String)>,
    /// The temporary file exists and was not renamed yet.
    open: bool,
}

impl TableWriter {
    /// A writer of `path` in `format`; nothing is created until the first frame is written.
    pub fn new(path: &Path, format: Format) -> TableWriter {
        TableWriter {
            path: path.to_path_buf(),
            tmp: outfile::temp_path(path, ".tmp"),
            format,
            inner: None,
            rows: 0,
            raw_csv: false,
            metadata: Vec::new(),
            open: false,
        }
    }

    /// Parquet: schema-level metadata (e.g. the `pandas` key that tells pandas which column is
    /// the index), written into the Arrow schema of the footer (`ARROW:schema`, where pyarrow
    /// reads it from) and as footer key/values. Flat columns only: [`TableWriter::write`]
    /// refuses list columns with it.
    pub fn with_metadata(mut self, metadata: Vec<(String, String)>) -> TableWriter {
        self.metadata = metadata;
        self
    }

    /// CSV: write string cells as they are instead of through [`csv_cell`].
    pub fn raw_csv(mut self, raw: bool) -> TableWriter {
        self.raw_csv = raw;
        self
    }

    /// The final output path (not the temporary file being written).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, source: PolarsError) -> FramesError {
        FramesError::Write {
            path: self.path.clone(),
            source,
        }
    }

    fn open(&mut self, schema: &Schema) -> Result<()> {
        // A device, FIFO or folder under the output's name is refused before anything is made.
        outfile::check_output_file(&self.path).map_err(|source| FramesError::Io {
            path: self.path.clone(),
            source,
        })?;
        if let Some(dir) = self.tmp.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| FramesError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let file = outfile::create_temp(&self.tmp).map_err(|source| FramesError::Io {
            path: self.tmp.clone(),
            source,
        })?;
        self.open = true;
        let inner = match self.format {
            Format::Parquet => Inner::Parquet(Box::new(
                ParquetWriter::new(file)
                    .with_compression(ParquetCompression::Zstd(None))
                    .with_key_value_metadata(
                        arrow_schema_metadata(schema, &self.metadata)?
                            .map(polars::io::parquet::write::KeyValueMetadata::from_static),
                    )
                    .batched(schema)
                    .map_err(|e| self.err(e))?,
            )),
            Format::Csv => Inner::Csv(
                CsvWriter::new(file)
                    .include_header(true)
                    .batched(schema)
                    .map_err(|e| self.err(e))?,
            ),
        };
        self.inner = Some(inner);
        Ok(())
    }

    /// Appends one row group.
    pub fn write(&mut self, df: &DataFrame) -> Result<()> {
        let mut df = df.clone();
        if self.format == Format::Csv && !self.raw_csv {
            if let Some(n) = neutralise(&df).map_err(|e| self.err(e))? {
                df = n;
            }
        }
        if self.inner.is_none() {
            self.open(df.schema())?;
        }
        // The batched writers require aligned chunks (they would panic otherwise).
        df.align_chunks();
        let res = match self.inner.as_mut() {
            Some(Inner::Parquet(w)) => w.write_batch(&df),
            Some(Inner::Csv(w)) => w.write_batch(&df),
            None => Ok(()),
        };
        res.map_err(|e| self.err(e))?;
        self.rows += df.height() as u64;
        Ok(())
    }

    /// Closes the file (writing `empty`'s schema if no row was written) and moves it into
    /// place. Returns the number of rows written.
    pub fn finish(mut self, empty: &DataFrame) -> Result<u64> {
        if self.inner.is_none() {
            let empty = match self.format {
                Format::Csv if !self.raw_csv => neutralise(empty)
                    .map_err(|e| self.err(e))?
                    .unwrap_or_else(|| empty.clone()),
                _ => empty.clone(),
            };
            self.open(empty.schema())?;
        }
        let res = match self.inner.as_mut() {
            Some(Inner::Parquet(w)) => w.finish().map(|_| ()),
            Some(Inner::Csv(w)) => w.finish(),
            None => Ok(()),
        };
        res.map_err(|e| self.err(e))?;
        // Drop the writer (closing the file) before renaming it.
        self.inner = None;
        outfile::persist(&self.tmp, &self.path).map_err(|source| FramesError::Io {
            path: self.path.clone(),
            source,
        })?;
        self.open = false;
        Ok(self.rows)
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        // Unfinished (an error happened): leave no temporary file behind.
        self.inner = None;
        if self.open {
            outfile::discard(&self.tmp);
        }
    }
}

/// Where row groups go: a file, or memory (the library's DataFrame-returning functions).
pub enum Sink {
    /// Each frame is written to the file as a row group (Parquet) or as rows (CSV).
    File(TableWriter),
    /// Frames are stacked in memory; `None` until the first one.
    Memory(Option<DataFrame>),
}

impl Sink {
    /// Takes one row group.
    pub fn write(&mut self, df: DataFrame) -> Result<()> {
        match self {
            Sink::File(w) => w.write(&df),
            Sink::Memory(acc) => {
                match acc {
                    Some(a) => {
                        a.vstack_mut_owned(df)?;
                    }
                    None => *acc = Some(df),
                }
                Ok(())
            }
        }
    }

    /// Finishes the sink: rows written and, for memory sinks, the whole frame.
    pub fn finish(self, empty: DataFrame) -> Result<(u64, Option<DataFrame>)> {
        match self {
            Sink::File(w) => Ok((w.finish(&empty)?, None)),
            Sink::Memory(acc) => {
                let mut df = acc.unwrap_or(empty);
                df.rechunk_mut();
                Ok((df.height() as u64, Some(df)))
            }
        }
    }
}

/// Column names of a frame, in order.
pub fn column_names(df: &DataFrame) -> Vec<String> {
    df.get_column_names()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A cell read back from a table as JSON (numbers, strings, booleans, lists, null).
fn cell_json(v: AnyValue<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        AnyValue::Null => J::Null,
        AnyValue::Boolean(b) => J::Bool(b),
        AnyValue::String(s) => J::String(s.to_string()),
        AnyValue::StringOwned(s) => J::String(s.to_string()),
        AnyValue::Int8(x) => J::from(x),
        AnyValue::Int16(x) => J::from(x),
        AnyValue::Int32(x) => J::from(x),
        AnyValue::Int64(x) => J::from(x),
        AnyValue::UInt8(x) => J::from(x),
        AnyValue::UInt16(x) => J::from(x),
        AnyValue::UInt32(x) => J::from(x),
        AnyValue::UInt64(x) => J::from(x),
        AnyValue::Float32(x) => serde_json::Number::from_f64(x as f64).map_or(J::Null, J::Number),
        AnyValue::Float64(x) => serde_json::Number::from_f64(x).map_or(J::Null, J::Number),
        AnyValue::List(s) => J::Array(s.iter().map(cell_json).collect()),
        other => J::String(other.to_string()),
    }
}

/// A Parquet file read back as column names and rows of JSON cells (small tables: tests and
/// checks of what a command wrote).
pub fn read_parquet_rows(path: &Path) -> Result<(Vec<String>, Vec<Vec<serde_json::Value>>)> {
    let file = File::open(path).map_err(|source| FramesError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let df = ParquetReader::new(file).finish()?;
    let names = column_names(&df);
    let cols = df.columns();
    let rows = (0..df.height())
        .map(|i| {
            cols.iter()
                .map(|c| c.get(i).map_or(serde_json::Value::Null, cell_json))
                .collect()
        })
        .collect();
    Ok((names, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schema metadata goes into the footer's Arrow schema (decoded back here with polars'
    /// own IPC reader) and is refused on nested columns, whose Arrow schema polars rewrites.
    #[test]
    fn schema_metadata_is_in_the_arrow_schema_key() {
        use base64::Engine as _;
        let kv = vec![("pandas".to_string(), "{}".to_string())];
        let flat = frame(vec![("a".into(), Col::I64(vec![Some(1)]))]).unwrap();
        let got = arrow_schema_metadata(flat.schema(), &kv).unwrap().unwrap();
        assert_eq!(got[0].0, "ARROW:schema");
        assert_eq!(got[1], kv[0]);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&got[0].1)
            .unwrap();
        let (schema, _, meta) =
            polars_arrow::io::ipc::read::deserialize_schema(&bytes[8..]).unwrap();
        assert_eq!(schema.len(), 1);
        let meta = meta.unwrap();
        assert_eq!(meta.get("pandas").map(|v| v.as_str()), Some("{}"));
        assert!(arrow_schema_metadata(flat.schema(), &[]).unwrap().is_none());
        let nested = frame(vec![("l".into(), Col::F64List(vec![Some(vec![1.0])]))]).unwrap();
        assert!(arrow_schema_metadata(nested.schema(), &kv).is_err());
    }

    #[test]
    fn csv_cells_that_a_spreadsheet_would_evaluate_are_neutralised() {
        assert_eq!(csv_cell("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(csv_cell("@SUM(A1:A9)"), "'@SUM(A1:A9)");
        assert_eq!(csv_cell("+1+cmd"), "'+1+cmd");
        assert_eq!(
            csv_cell("-2+3+cmd|' /C calc'!A0"),
            "'-2+3+cmd|' /C calc'!A0"
        );
        assert_eq!(csv_cell("\t=1"), "'\t=1");
        assert_eq!(csv_cell("\r=1"), "'\r=1");
        // Numbers and ordinary text stay as they are.
        for s in ["-1.5", "+3", "-2e-3", "/camera/image_raw", "a=b", ""] {
            assert_eq!(csv_cell(s), s);
        }
    }

    #[test]
    fn csv_files_hold_neutralised_cells_unless_raw() {
        let dir = tempfile::tempdir().unwrap();
        let df = frame(vec![
            (
                "data".into(),
                Col::Str(vec![
                    Some("=cmd|' /C calc'!A0".into()),
                    Some("ok".into()),
                    None,
                ]),
            ),
            ("=x".into(), Col::I64(vec![Some(-1), Some(2), Some(3)])),
        ])
        .unwrap();
        let safe = dir.path().join("safe.csv");
        let mut w = TableWriter::new(&safe, Format::Csv);
        w.write(&df).unwrap();
        w.finish(&df).unwrap();
        let text = std::fs::read_to_string(&safe).unwrap();
        assert!(text.contains("'=cmd") && text.contains("'=x"), "{text}");
        assert!(
            !text.lines().any(|l| l.starts_with('=') || l.contains(",=")),
            "{text}"
        );
        assert!(text.contains("-1"), "{text}");

        let raw = dir.path().join("raw.csv");
        let mut w = TableWriter::new(&raw, Format::Csv).raw_csv(true);
        w.write(&df).unwrap();
        w.finish(&df).unwrap();
        let text = std::fs::read_to_string(&raw).unwrap();
        assert!(
            text.starts_with("data,=x") && text.contains("\n=cmd"),
            "{text}"
        );
    }

    #[test]
    fn the_temporary_file_replaces_a_leftover_and_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let df = frame(vec![("a".into(), Col::I64(vec![Some(1)]))]).unwrap();
        let out = dir.path().join("t.parquet");
        let tmp = outfile::temp_path(&out, ".tmp");
        std::fs::write(&tmp, vec![0u8; 100]).unwrap();
        #[cfg(unix)]
        let target = {
            let target = dir.path().join("victim");
            std::fs::write(&target, b"precious").unwrap();
            std::fs::remove_file(&tmp).unwrap();
            std::os::unix::fs::symlink(&target, &tmp).unwrap();
            target
        };
        let mut w = TableWriter::new(&out, Format::Parquet);
        w.write(&df).unwrap();
        assert_eq!(w.finish(&df).unwrap(), 1);
        assert!(!tmp.exists() && out.exists());
        #[cfg(unix)]
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        // Dropped unfinished: nothing left.
        let out2 = dir.path().join("u.parquet");
        let mut w = TableWriter::new(&out2, Format::Parquet);
        w.write(&df).unwrap();
        drop(w);
        assert!(!outfile::temp_path(&out2, ".tmp").exists() && !out2.exists());
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;

    /// The numeric list columns equal what the generic list builder makes, nulls and empty
    /// lists included (the Parquet written from either is the same).
    #[test]
    fn numeric_lists_equal_the_generic_builder() {
        let rows: Vec<Option<Vec<f64>>> = vec![
            Some(vec![1.0, 2.5]),
            None,
            Some(vec![]),
            Some(vec![f64::NAN, -0.0, 3.0]),
            None,
        ];
        let a = numeric_list_column::<Float64Type>("x".into(), &rows);
        let b = list_column("x".into(), DataType::Float64, &rows);
        assert_eq!(a.dtype(), b.dtype());
        assert!(a
            .as_materialized_series()
            .equals_missing(b.as_materialized_series()));
        let ints: Vec<Option<Vec<i64>>> = vec![None, Some(vec![7, -1]), Some(vec![])];
        let a = numeric_list_column::<Int64Type>("y".into(), &ints);
        let b = list_column("y".into(), DataType::Int64, &ints);
        assert_eq!(a.dtype(), b.dtype());
        assert!(a
            .as_materialized_series()
            .equals_missing(b.as_materialized_series()));
        // Written, the same bytes.
        let write = |c: Column| {
            let mut df = DataFrame::new(c.len(), vec![c]).unwrap();
            let mut buf = Vec::new();
            ParquetWriter::new(&mut buf).finish(&mut df).unwrap();
            buf
        };
        assert_eq!(
            write(numeric_list_column::<Float64Type>("x".into(), &rows)),
            write(list_column("x".into(), DataType::Float64, &rows))
        );
    }
}
