//! [`Table`]: a polars `DataFrame` handed to Python through the Arrow PyCapsule stream interface
//! (`__arrow_c_stream__`, <https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html>).
//!
//! The stream's schema is a struct of the frame's columns and each of its record batches a
//! struct array over the frame's own chunks: the consumer (pyarrow, polars, DuckDB) imports
//! the column buffers themselves, nothing is copied. Strings and binaries are Arrow's view
//! types (`string_view`, `binary_view`), the layout polars keeps them in.

use bagscope::frames::polars::prelude::{CompatLevel, DataFrame};
use polars_arrow::array::{Array, StructArray};
use polars_arrow::datatypes::{ArrowDataType, Field};
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
    df: DataFrame,
    report: Option<Py<PyAny>>,
}

impl Table {
    pub(crate) fn new(
        _py: Python<'_>,
        df: DataFrame,
        report: Option<Py<PyAny>>,
    ) -> PyResult<Table> {
        Ok(Table { df, report })
    }
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
        let s = stream(&self.df)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("arrow export: {e}")))?;
        // The capsule owns the stream: dropping it releases the stream unless a consumer took
        // it (and set its `release` to null), as the interface specifies.
        PyCapsule::new_with_value(py, s, STREAM_NAME)
    }

    /// Number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.df.height()
    }

    /// Column names, in order.
    #[getter]
    fn column_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.df.get_column_names().iter().map(|n| n.as_str()))
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
        self.df.height()
    }

    fn __repr__(&self) -> String {
        format!(
            "<bagscope.Table {} rows x {} columns: {}>",
            self.df.height(),
            self.df.width(),
            self.df
                .get_column_names()
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
