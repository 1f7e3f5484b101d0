//! bagscope-frames: bag data as [`polars::DataFrame`]s and streamed Parquet / CSV files.
//!
//! This is the only crate of the workspace that depends on polars (heavy to compile; built with
//! only the writers and the small integer dtypes). It knows nothing about bag files: callers
//! hand it plain columns ([`Col`]) or decoded messages ([`message::MessageColumns`]) one row
//! group at a time, and [`Sink`] writes each group as it comes (Parquet row groups, CSV rows),
//! so memory is bounded by one row group, not by the bag.

pub mod message;

use std::fs::File;
use std::path::{Path, PathBuf};

pub use polars;
use polars::prelude::*;

#[derive(Debug, thiserror::Error)]
pub enum FramesError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Write { path: PathBuf, source: PolarsError },
    #[error(transparent)]
    Polars(#[from] PolarsError),
    #[error("{0}")]
    Usage(String),
}

pub type Result<T> = std::result::Result<T, FramesError>;

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Parquet,
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
    I64(Vec<Option<i64>>),
    U64(Vec<Option<u64>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Str(Vec<Option<String>>),
    /// Strings repeated over many rows (topic, type, axis): indices into `dict`, so a row costs
    /// 4 bytes instead of a `String`. An index out of range is null.
    Dict {
        dict: Vec<String>,
        idx: Vec<u32>,
    },
}

impl Col {
    pub fn len(&self) -> usize {
        match self {
            Col::I64(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::F64(v) => v.len(),
            Col::Bool(v) => v.len(),
            Col::Str(v) => v.len(),
            Col::Dict { idx, .. } => idx.len(),
        }
    }

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

/// Streams DataFrames with one schema into one file, a row group per frame. Writes to
/// `NAME.tmp` and renames on [`TableWriter::finish`], so an interrupted run leaves no
/// half-written file that a resumed batch would take as done.
pub struct TableWriter {
    path: PathBuf,
    tmp: PathBuf,
    format: Format,
    inner: Option<Inner>,
    rows: u64,
}

impl TableWriter {
    pub fn new(path: &Path, format: Format) -> TableWriter {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        TableWriter {
            path: path.to_path_buf(),
            tmp: PathBuf::from(tmp),
            format,
            inner: None,
            rows: 0,
        }
    }

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
        if let Some(dir) = self.tmp.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| FramesError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let file = File::create(&self.tmp).map_err(|source| FramesError::Io {
            path: self.tmp.clone(),
            source,
        })?;
        let inner = match self.format {
            Format::Parquet => Inner::Parquet(Box::new(
                ParquetWriter::new(file)
                    .with_compression(ParquetCompression::Zstd(None))
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
        if self.inner.is_none() {
            self.open(df.schema())?;
        }
        let mut df = df.clone();
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
        std::fs::rename(&self.tmp, &self.path).map_err(|source| FramesError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(self.rows)
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        // Unfinished (an error happened): leave no temporary file behind.
        if self.inner.is_some() {
            self.inner = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Where row groups go: a file, or memory (the library's DataFrame-returning functions).
pub enum Sink {
    File(TableWriter),
    Memory(Option<DataFrame>),
}

impl Sink {
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
/// The rows of `parts` (same columns) as one frame in one chunk per column: a row group built
/// in parts is still written as one row group.
pub fn concat_rows(parts: Vec<DataFrame>) -> Result<DataFrame> {
    let mut it = parts.into_iter();
    let Some(mut df) = it.next() else {
        return Ok(DataFrame::empty());
    };
    for p in it {
        df.vstack_mut_owned(p)?;
    }
    df.rechunk_mut();
    Ok(df)
}

pub fn column_names(df: &DataFrame) -> Vec<String> {
    df.get_column_names()
        .into_iter()
        .map(|s| s.to_string())
        .collect()
}
