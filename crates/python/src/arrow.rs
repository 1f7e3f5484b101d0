//! [`Table`]: a polars `DataFrame` handed to Python through the Arrow PyCapsule stream interface
//! (`__arrow_c_stream__`, <https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html>).
//!
//! The stream's schema is a struct of the frame's columns and each of its record batches a
//! struct array over the frame's own chunks: the consumer (pyarrow, polars, DuckDB) imports
//! the column buffers themselves, nothing is copied. Strings and binaries are Arrow's view
//! types (`string_view`, `binary_view`), the layout polars keeps them in.
//!
//! The timing table is built as Arrow arrays directly ([`timing_arrays`]) from the facade's
//! columns, without a frame: the vectors become the arrays' buffers, and its string columns
//! are dictionaries whose keys `topic`, `type` and `clock_axis` share.

use bagscope::tables::polars::prelude::{CompatLevel, DataFrame};
use bagscope::timing::{NullableI64, NullableKeys, TimingColumns};
use polars_arrow::array::{Array, DictionaryArray, PrimitiveArray, StructArray, Utf8Array};
use polars_arrow::bitmap::Bitmap;
use polars_arrow::datatypes::{ArrowDataType, Field, IntegerType};
use polars_arrow::ffi::{export_iterator, ArrowArrayStream};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

/// The capsule name the PyCapsule interface gives an `ArrowArrayStream`.
const STREAM_NAME: &std::ffi::CStr = c"arrow_array_stream";

/// An Arrow table produced by bagscope (`Bag.timing`, `Bag.messages`, `Bag.summary`). Pass it
/// to `pyarrow.table(t)`, `polars.DataFrame(t)` / `polars.from_arrow(t)` or refer to it in
/// `duckdb.sql("select ... from t")`: each reads it through `__arrow_c_stream__` without
/// copying the columns. A table can be read any number of times.
#[pyclass(frozen, module = "bagscope")]
pub(crate) struct Table {
    data: Data,
    report: Option<Py<PyAny>>,
}

/// A table's columns: a polars frame, or Arrow arrays of equal length.
enum Data {
    Frame(DataFrame),
    Arrays {
        fields: Vec<Field>,
        arrays: Vec<Box<dyn Array>>,
        len: usize,
    },
}

impl Table {
    pub(crate) fn new(
        _py: Python<'_>,
        df: DataFrame,
        report: Option<Py<PyAny>>,
    ) -> PyResult<Table> {
        Ok(Table {
            data: Data::Frame(df),
            report,
        })
    }

    /// A table of `len` rows over `arrays` (one per field).
    pub(crate) fn from_arrays(
        fields: Vec<Field>,
        arrays: Vec<Box<dyn Array>>,
        len: usize,
        report: Option<Py<PyAny>>,
    ) -> Table {
        Table {
            data: Data::Arrays {
                fields,
                arrays,
                len,
            },
            report,
        }
    }

    fn height(&self) -> usize {
        match &self.data {
            Data::Frame(df) => df.height(),
            Data::Arrays { len, .. } => *len,
        }
    }

    fn names(&self) -> Vec<String> {
        match &self.data {
            Data::Frame(df) => df
                .get_column_names()
                .iter()
                .map(|n| n.to_string())
                .collect(),
            Data::Arrays { fields, .. } => fields.iter().map(|f| f.name.to_string()).collect(),
        }
    }
}

/// A stream of one struct array over `arrays` (cloning an array shares its buffers).
fn stream_arrays(
    fields: &[Field],
    arrays: &[Box<dyn Array>],
    len: usize,
) -> Result<ArrowArrayStream, String> {
    let dtype = ArrowDataType::Struct(fields.to_vec());
    let a = StructArray::try_new(dtype.clone(), len, arrays.to_vec(), None)
        .map_err(|e| e.to_string())?;
    let field = Field::new("".into(), dtype, false);
    Ok(export_iterator(
        Box::new(std::iter::once(Ok(a.boxed()))),
        field,
    ))
}

/// A validity bitmap over the packed bytes `valid` (bit `i % 8` of byte `i / 8`), `len` rows:
/// the bytes become the bitmap's buffer.
fn bitmap(valid: Option<Vec<u8>>, len: usize) -> Option<Bitmap> {
    valid.map(|v| Bitmap::from_u8_vec(v, len))
}

fn i64_array(c: NullableI64) -> Box<dyn Array> {
    let n = c.values.len();
    PrimitiveArray::<i64>::new(ArrowDataType::Int64, c.values.into(), bitmap(c.valid, n)).boxed()
}

/// A dictionary array of `keys` into `names` (strings as `large_string`).
fn dictionary(keys: PrimitiveArray<u32>, names: &[String]) -> Result<Box<dyn Array>, String> {
    let values = Utf8Array::<i64>::from_slice(names).boxed();
    let dtype = ArrowDataType::Dictionary(
        IntegerType::UInt32,
        Box::new(ArrowDataType::LargeUtf8),
        false,
    );
    Ok(DictionaryArray::<u32>::try_new(dtype, keys, values)
        .map_err(|e| e.to_string())?
        .boxed())
}

fn keys_array(k: NullableKeys) -> PrimitiveArray<u32> {
    let n = k.keys.len();
    PrimitiveArray::<u32>::new(ArrowDataType::UInt32, k.keys.into(), bitmap(k.valid, n))
}

/// The timing table: its arrays in the facade's column order, then `lag_ns` (log time − header
/// stamp, null without a stamp).
pub(crate) fn timing_table(c: TimingColumns, report: Option<Py<PyAny>>) -> Result<Table, String> {
    let (fields, arrays, len) = timing_arrays(c)?;
    Ok(Table::from_arrays(fields, arrays, len, report))
}

/// A table's fields, its arrays and its length.
type Arrays = (Vec<Field>, Vec<Box<dyn Array>>, usize);

/// The timing table's fields and arrays (see [`timing_table`]) and its length: the vectors
/// become the arrays' buffers.
pub(crate) fn timing_arrays(c: TimingColumns) -> Result<Arrays, String> {
    let len = c.len();
    let lag = NullableI64 {
        values: c
            .log_time_ns
            .iter()
            .zip(&c.header_stamp_ns.values)
            .map(|(l, s)| l.wrapping_sub(*s))
            .collect(),
        valid: c.header_stamp_ns.valid.clone(),
    };
    let mut lag = Some(lag);
    let topic_keys = PrimitiveArray::<u32>::from_vec(c.topic_key);
    let mut parent = Some(c.parent_frame);
    let mut child = Some(c.child_frame);
    let mut publish = Some(c.publish_time_ns);
    let mut stamp = Some(c.header_stamp_ns);
    let mut index = Some(c.transform_index);
    let mut log = Some(c.log_time_ns);
    let mut size = Some(c.size_bytes);
    let mut fields = Vec::new();
    let mut arrays: Vec<Box<dyn Array>> = Vec::new();
    let taken = |name: &str| format!("column {name} twice");
    for name in c.column_names.iter().map(String::as_str).chain(["lag_ns"]) {
        let a: Box<dyn Array> = match name {
            "bag" => {
                let Some(bag) = &c.bag_name else {
                    return Err("a bag column without a bag name".into());
                };
                // Zeroed keys: pages never written are not resident.
                let keys = PrimitiveArray::<u32>::from_vec(vec![0u32; len]);
                dictionary(keys, std::slice::from_ref(bag))?
            }
            "topic" => dictionary(topic_keys.clone(), &c.topic_names)?,
            "type" => dictionary(topic_keys.clone(), &c.type_names)?,
            "clock_axis" => dictionary(topic_keys.clone(), &c.axis_names)?,
            "parent_frame" => dictionary(
                keys_array(parent.take().ok_or_else(|| taken(name))?),
                &c.frame_names,
            )?,
            "child_frame" => dictionary(
                keys_array(child.take().ok_or_else(|| taken(name))?),
                &c.frame_names,
            )?,
            "log_time_ns" => {
                PrimitiveArray::<i64>::from_vec(log.take().ok_or_else(|| taken(name))?).boxed()
            }
            "size_bytes" => {
                PrimitiveArray::<i64>::from_vec(size.take().ok_or_else(|| taken(name))?).boxed()
            }
            "publish_time_ns" => i64_array(publish.take().ok_or_else(|| taken(name))?),
            "header_stamp_ns" => i64_array(stamp.take().ok_or_else(|| taken(name))?),
            "transform_index" => i64_array(index.take().ok_or_else(|| taken(name))?),
            "lag_ns" => i64_array(lag.take().ok_or_else(|| taken(name))?),
            other => return Err(format!("no array for the timing column {other}")),
        };
        fields.push(Field::new(name.into(), a.dtype().clone(), true));
        arrays.push(a);
    }
    Ok((fields, arrays, len))
}

/// The frame as a stream of struct arrays, one per chunk, over the frame's own buffers.
fn stream(df: &DataFrame) -> Result<ArrowArrayStream, String> {
    let mut df = df.clone();
    if df.should_rechunk() {
        // Columns whose chunks do not line up are cut to the same boundaries (no copy of the
        // values); a frame built by bagscope has one chunk per column.
        df.align_chunks_par();
    }
    let compat = CompatLevel::newest();
    let fields: Vec<Field> = df
        .columns()
        .iter()
        .map(|c| c.field().to_arrow(compat))
        .collect();
    let dtype = ArrowDataType::Struct(fields);
    let mut batches: Vec<Box<dyn Array>> = Vec::new();
    if df.width() > 0 {
        for rb in df.iter_chunks(compat, false) {
            let len = rb.len();
            let arrays = rb.into_arrays();
            let a = StructArray::try_new(dtype.clone(), len, arrays, None)
                .map_err(|e| e.to_string())?;
            batches.push(a.boxed());
        }
    }
    let field = Field::new("".into(), dtype, false);
    Ok(export_iterator(
        Box::new(batches.into_iter().map(Ok)),
        field,
    ))
}

#[pymethods]
impl Table {
    /// The Arrow PyCapsule stream interface: a capsule named `arrow_array_stream` holding an
    /// `ArrowArrayStream` of the table's record batches. `requested_schema` is not applied
    /// (the interface allows a producer to ignore it).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let s = match &self.data {
            Data::Frame(df) => stream(df),
            Data::Arrays {
                fields,
                arrays,
                len,
            } => stream_arrays(fields, arrays, *len),
        }
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("arrow export: {e}")))?;
        // The capsule owns the stream: dropping it releases the stream unless a consumer took
        // it (and set its `release` to null), as the interface specifies.
        PyCapsule::new_with_value(py, s, STREAM_NAME)
    }

    /// Number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.height()
    }

    /// Column names, in order.
    #[getter]
    fn column_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.names())
    }

    /// What the scan that built the table reported (`export --json`'s report: the bag, the
    /// table, warnings with `data_loss`); None for a summary table.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.report.as_ref().map(|r| r.bind(py).clone())
    }

    /// Whether a warning of the scan says messages were lost (the CLI's exit 3).
    #[getter]
    fn data_loss(&self, py: Python<'_>) -> PyResult<bool> {
        let Some(r) = &self.report else {
            return Ok(false);
        };
        let r = r.bind(py);
        let Ok(d) = r.cast::<PyDict>() else {
            return Ok(false);
        };
        let Some(ws) = d.get_item("warnings")? else {
            return Ok(false);
        };
        for w in ws.try_iter()? {
            if w?.get_item("data_loss")?.is_truthy()? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn __len__(&self) -> usize {
        self.height()
    }

    fn __repr__(&self) -> String {
        format!(
            "<bagscope.Table {} rows x {} columns: {}>",
            self.height(),
            self.names().len(),
            self.names().join(", ")
        )
    }
}

/// The timing table as a stream of record batches (`Bag.timing_batches`): each time a
/// consumer asks for the stream (`__arrow_c_stream__`), a thread reads the bag once more and
/// hands over one batch of `rows_per_batch` rows at a time, the next made while the consumer
/// takes the current one; reading stops when the consumer releases the stream. Memory: two
/// batches and the chunks being read, not the table.
#[pyclass(frozen, module = "bagscope", name = "TimingBatches")]
pub(crate) struct TimingBatches {
    bag: std::sync::Arc<bagscope::Bag>,
    plan: std::sync::Arc<bagscope::timing::TimingPlan>,
    rows_per_batch: usize,
    /// Rows handed out by the last stream read to its end.
    rows: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl TimingBatches {
    pub(crate) fn new(
        bag: std::sync::Arc<bagscope::Bag>,
        plan: bagscope::timing::TimingPlan,
        rows_per_batch: usize,
    ) -> TimingBatches {
        TimingBatches {
            bag,
            plan: std::sync::Arc::new(plan),
            rows_per_batch,
            rows: Default::default(),
        }
    }

    fn empty_fields(&self) -> Result<Vec<Field>, String> {
        let mut shape = self.plan.shape_without_rows();
        shape.frame_names.clear();
        timing_arrays(shape).map(|(f, _, _)| f)
    }
}

/// The batches a stream's thread makes, handed over one at a time; dropped, it stops the
/// thread.
struct BatchIter {
    rx: std::sync::mpsc::Receiver<Result<Box<dyn Array>, String>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Iterator for BatchIter {
    type Item = bagscope::tables::polars::prelude::PolarsResult<Box<dyn Array>>;
    fn next(&mut self) -> Option<Self::Item> {
        let r = self.rx.recv().ok()?;
        Some(r.map_err(|e| bagscope::tables::polars::prelude::PolarsError::ComputeError(e.into())))
    }
}

impl Drop for BatchIter {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[pymethods]
impl TimingBatches {
    /// The Arrow PyCapsule stream interface: a capsule named `arrow_array_stream` holding an
    /// `ArrowArrayStream` of the table's record batches, read from the bag as they are taken.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let fields = self
            .empty_fields()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("arrow export: {e}")))?;
        let dtype = ArrowDataType::Struct(fields.clone());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (bag, plan, n, rows, stop2) = (
            self.bag.clone(),
            self.plan.clone(),
            self.rows_per_batch,
            self.rows.clone(),
            stop.clone(),
        );
        std::thread::Builder::new()
            .name("bagscope-batches".into())
            .spawn(move || {
                let made = bag.timing_batches(&plan, n, &stop2, &mut |cols| {
                    let a = timing_arrays(cols).and_then(|(_, arrays, len)| {
                        StructArray::try_new(dtype.clone(), len, arrays, None)
                            .map(|a| a.boxed())
                            .map_err(|e| e.to_string())
                    });
                    tx.send(a).is_ok()
                });
                if !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                    rows.store(made, std::sync::atomic::Ordering::Relaxed);
                }
            })
            .map_err(|e| {
                pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "cannot start the batches' thread: {e}"
                ))
            })?;
        let field = Field::new("".into(), ArrowDataType::Struct(fields), false);
        let s = export_iterator(Box::new(BatchIter { rx, stop }), field);
        PyCapsule::new_with_value(py, s, STREAM_NAME)
    }

    /// The table's column names, in order.
    #[getter]
    fn column_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut names = self.plan.column_names().to_vec();
        names.push("lag_ns".into());
        PyList::new(py, names)
    }

    /// Rows per batch.
    #[getter]
    fn rows_per_batch(&self) -> usize {
        self.rows_per_batch
    }

    /// What the first read reported (`export --json`'s keys: `bag`, `tables`, `warnings`);
    /// `tables[0]["rows"]` is the table's rows once a stream has been read to its end (0
    /// before).
    #[getter]
    fn report(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut r = self.plan.report.clone();
        if let Some(t) = r.tables.first_mut() {
            t.rows = self.rows.load(std::sync::atomic::Ordering::Relaxed);
        }
        crate::to_py(py, &r)
    }

    /// Whether a warning of the first read says messages were lost (the CLI's exit 3).
    #[getter]
    fn data_loss(&self) -> bool {
        self.plan.report.warnings.iter().any(|w| w.data_loss)
    }

    fn __repr__(&self) -> String {
        format!(
            "<bagscope.TimingBatches {} rows a batch: {}>",
            self.rows_per_batch,
            self.plan.column_names().join(", ")
        )
    }
}
