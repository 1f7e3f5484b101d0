//! The native part of the `bagscope` Python package (`bagscope._bagscope`): [`PyBag`] over the
//! library facade (`bagscope::Bag`), whose methods return the CLI's `--json` reports as plain
//! Python objects, and [`Table`], an Arrow table handed to Python through the PyCapsule stream
//! interface (`__arrow_c_stream__`) without copying its columns.
//!
//! Every scan runs on a worker thread with the GIL released; the calling thread waits for it
//! and checks for signals, so `Ctrl-C` raises `KeyboardInterrupt` at once (the worker finishes
//! its scan in the background and its result is dropped).
//!
//! # In the workspace
//!
//! The `bagscope` Python package (pyo3, stable ABI for CPython 3.9+, built by maturin for `pip
//! install ./crates/python`; the tests load the workspace build's own library): `Bag` over the
//! facade's `Bag` whose methods (info, clocks, check, sync, recommend, match, tf, hist,
//! report_data, timing, messages, summary) fill the facade's options types from their arguments
//! through `params::from_json` (the stub `_bagscope.pyi` states the same defaults, tested) and
//! return the facade's reports as the CLI's `--json` (serialised by serde_json, parsed by
//! Python's `json`: the same keys and values), `Table` (a polars `DataFrame`, or for `timing()`
//! Arrow arrays built from `Bag::timing_columns`' vectors (validity bitmaps included) with
//! dictionary-encoded strings, exported as an `ArrowArrayStream` in a PyCapsule,
//! `__arrow_c_stream__`: no copy of the columns), `TimingBatches` (`Bag.timing_batches`: the
//! timing table's batches made on a thread while the consumer reads the stream, stopped when it
//! is released), one exception class per kind of `bagscope::Error` (`python/bagscope/_errors.py`;
//! `InvalidParameter` exactly where the CLI exits 2); scans run on a worker thread with the GIL
//! released while the caller polls for signals (`Ctrl-C`). Pure-Python `bagscope.ray` /
//! `bagscope.spark` map bags to the rows of `batch`'s `summary.parquet` (`Bag::summary`,
//! `batch::summary_rows`), timing and findings rows; a bag that fails is a row with `error`.
//!
//! Notable dependencies: `bagscope` (feature `tables`), `pyo3`, `polars-arrow` (its C data
//! interface, the version polars uses), `tempfile` (`Bag.from_bytes`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bagscope::check::CheckOptions;
use bagscope::clocks::ClocksOptions;
use bagscope::export::ExportOptions;
use bagscope::hist::HistOptions;
use bagscope::info::InfoOptions;
use bagscope::matching::MatchArgs;
use bagscope::sync::SyncOptions;
use bagscope::tf::TfOptions;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde::de::DeserializeOwned;

mod arrow;

use arrow::Table;

/// Raises the package's exception class `kind` (defined in `bagscope/_errors.py`) with
/// `message`, the bag's `path` and the kind as attributes.
fn raise(py: Python<'_>, kind: &str, message: String, path: Option<&Path>) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let cls = py.import("bagscope._errors")?.getattr(kind)?;
        let exc = cls.call1((message.clone(),))?;
        exc.setattr("path", path.map(|p| p.display().to_string()))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// The exception class for a facade error: the file's absence, its damage, a request that
/// cannot be answered as asked, or an analysis with nothing to work on.
fn kind_of(e: &bagscope::Error) -> &'static str {
    use bagscope::BagError as B;
    use bagscope::Error as E;
    match e {
        E::Bag(b) => match b {
            B::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => "BagNotFound",
            B::NoFiles { .. } => "BagNotFound",
            B::UnknownTopic { .. } => "UnknownTopic",
            B::UnsupportedStorage { .. } | B::NotRegularFile { .. } => "UnsupportedBag",
            B::Io { .. } => "BagError",
            B::Remote(r) => {
                use bagscope::io::SourceError as S;
                match r {
                    S::NotFound { .. } | S::NoBucket { .. } => "BagNotFound",
                    S::InvalidUrl { .. } => "InvalidParameter",
                    S::AccessDenied { .. } => "AccessDenied",
                    _ => "RemoteError",
                }
            }
            _ => "CorruptBag",
        },
        e if e.is_usage() => "InvalidParameter",
        E::Fields { .. } => "UsageError",
        E::Output { .. } | E::Input { .. } | E::Write(_) | E::Frames(_) => "BagError",
        _ => "AnalysisError",
    }
}

/// The error's text with its causes, naming the bag when the text does not already.
fn describe(e: &bagscope::Error, path: &Path) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    let p = path.display().to_string();
    if !s.contains(&p) {
        s = format!("{p}: {s}");
    }
    s
}

fn to_py_err(py: Python<'_>, e: &bagscope::Error, path: &Path) -> PyErr {
    raise(py, kind_of(e), describe(e, path), Some(path))
}

fn bad_param(py: Python<'_>, message: String) -> PyErr {
    raise(py, "InvalidParameter", message, None)
}

/// Runs `f` on a worker thread with the GIL released; checks for signals every 50 ms while
/// waiting, so `KeyboardInterrupt` (or any signal handler's exception) is raised at once.
fn run<R: Send + 'static>(py: Python<'_>, f: impl FnOnce() -> R + Send + 'static) -> PyResult<R> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // What `detach` runs must be Send: the receiver (not Sync) is shared through a Mutex.
    let rx = std::sync::Mutex::new(rx);
    std::thread::Builder::new()
        .name("bagscope-scan".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| {
            raise(
                py,
                "BagError",
                format!("cannot start a scan thread: {e}"),
                None,
            )
        })?;
    loop {
        match py.detach(|| {
            rx.lock()
                .map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected)
                .and_then(|r| r.recv_timeout(Duration::from_millis(50)))
        }) {
            Ok(r) => return Ok(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(raise(
                    py,
                    "BagError",
                    "internal error: the scan thread stopped without a result".into(),
                    None,
                ))
            }
        }
    }
}

/// A report as the CLI prints it with `--json`, parsed by Python's `json` module: the same
/// keys, and the same values as `json.loads` of the CLI's output.
fn to_py<T: serde::Serialize>(py: Python<'_>, v: &T) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| {
        raise(
            py,
            "BagError",
            format!("cannot serialise the report: {e}"),
            None,
        )
    })?;
    Ok(py
        .import("json")?
        .getattr("loads")?
        .call1((PyString::new(py, &text),))?
        .unbind())
}

/// The positional parameters of each method taking an options type, in order (after them,
/// keywords only): what the stub `_bagscope.pyi` declares.
const POSITIONAL: [(&str, &[&str]); 8] = [
    ("info", &["fast"]),
    ("clocks", &["clock_topic", "gap_factor"]),
    ("check", &["limits", "max_command_age"]),
    ("sync", &["topics", "policy", "queue", "slop"]),
    ("recommend", &["topics", "policy", "queue"]),
    ("match", &["command", "response"]),
    ("tf", &["target_frame", "topics"]),
    ("hist", &["topics"]),
];

fn positional(method: &str) -> &'static [&'static str] {
    POSITIONAL
        .iter()
        .find(|(m, _)| *m == method)
        .map_or(&[], |(_, p)| *p)
}

/// A method's arguments by parameter name, as JSON (through Python's `json`, paths and other
/// objects by their `str()`); `None` is left out: the parameter keeps its default.
fn arguments(
    py: Python<'_>,
    method: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    let names = positional(method);
    if args.len() > names.len() {
        return Err(bad_param(
            py,
            format!(
                "{method}() takes {} positional argument(s) ({}), {} given",
                names.len(),
                names.join(", "),
                args.len()
            ),
        ));
    }
    let dumps = py.import("json")?.getattr("dumps")?;
    let str_fn = py.import("builtins")?.getattr("str")?;
    let as_json = |v: &Bound<'_, PyAny>| -> PyResult<serde_json::Value> {
        let kw = PyDict::new(py);
        kw.set_item("default", &str_fn)?;
        let text: String = dumps.call((v,), Some(&kw))?.extract()?;
        serde_json::from_str(&text).map_err(|e| bad_param(py, e.to_string()))
    };
    let mut out = serde_json::Map::new();
    for (name, v) in names.iter().zip(args.iter()) {
        if !v.is_none() {
            out.insert(name.to_string(), as_json(&v)?);
        }
    }
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            let k: String = k.extract()?;
            if out.contains_key(&k) || names[..args.len()].contains(&k.as_str()) {
                return Err(bad_param(
                    py,
                    format!("{method}() got several values for '{k}'"),
                ));
            }
            if !v.is_none() {
                out.insert(k, as_json(&v)?);
            }
        }
    }
    Ok(out)
}

/// The options type of `method` filled from its arguments, through the library's one path
/// ([`bagscope::params::from_json`]): the same defaults, parsing and parameter names as the
/// CLI's flags.
fn options<T: DeserializeOwned>(
    py: Python<'_>,
    method: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<T> {
    let map = arguments(py, method, args, kwargs)?;
    bagscope::params::from_json(map).map_err(|e| raise(py, kind_of(&e), e.to_string(), None))
}

/// An opened bag: a rosbag2 folder (split files, `metadata.yaml`), a `.mcap` or `.db3` file,
/// or a file-compressed `.mcap.zstd` / `.db3.zstd`. Immutable and safe to share between
/// threads; every method releases the GIL while it reads.
#[pyclass(frozen, name = "Bag", module = "bagscope")]
pub struct PyBag {
    bag: Arc<bagscope::Bag>,
    path: PathBuf,
    /// The folder holding a `from_bytes` bag's file, removed with the `Bag`.
    _spool: Option<tempfile::TempDir>,
}

impl PyBag {
    fn call<R: Send + 'static>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&bagscope::Bag) -> Result<R, bagscope::Error> + Send + 'static,
    ) -> PyResult<R> {
        let bag = self.bag.clone();
        match run(py, move || f(&bag))? {
            Ok(r) => Ok(r),
            Err(e) => Err(to_py_err(py, &e, &self.path)),
        }
    }

    fn open_path(
        py: Python<'_>,
        path: PathBuf,
        spool: Option<tempfile::TempDir>,
    ) -> PyResult<Self> {
        let p = path.clone();
        match run(py, move || bagscope::Bag::open(&p))? {
            Ok(bag) => Ok(PyBag {
                bag: Arc::new(bag),
                path,
                _spool: spool,
            }),
            Err(e) => Err(to_py_err(py, &e, &path)),
        }
    }
}

#[pymethods]
impl PyBag {
    /// Opens the bag at `path` (see `bagscope.open`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        PyBag::open_path(py, path, None)
    }

    /// A bag held in memory (`bytes`, `bytearray`, `memoryview`, `mmap`: anything with the
    /// buffer protocol) holding one MCAP file. The bytes are written once into a private
    /// temporary folder, named `name`, which is memory-mapped like any bag and removed when
    /// the `Bag` is garbage-collected; reports name that file.
    #[staticmethod]
    #[pyo3(signature = (buffer, name = String::from("bag.mcap")))]
    fn from_bytes(py: Python<'_>, buffer: &Bound<'_, PyAny>, name: String) -> PyResult<Self> {
        let file_name = Path::new(&name)
            .file_name()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad_param(py, format!("name={name:?}: a file name is needed")))?
            .to_owned();
        let dir = tempfile::Builder::new()
            .prefix("bagscope-bytes-")
            .tempdir()
            .map_err(|e| {
                raise(
                    py,
                    "BagError",
                    format!("cannot create a temporary folder: {e}"),
                    None,
                )
            })?;
        let path = dir.path().join(file_name);
        // Written through Python's own file object: any buffer-protocol object is taken as
        // is, without a copy into an intermediate bytes object.
        let open = py.import("builtins")?.getattr("open")?;
        let f = open.call1((path.clone(), "wb"))?;
        let view = py
            .import("builtins")?
            .getattr("memoryview")?
            .call1((buffer,))?;
        let written = f.call_method1("write", (view,));
        f.call_method0("close")?;
        written?;
        PyBag::open_path(py, path, Some(dir))
    }

    /// The path the bag was opened from (for `from_bytes`, its temporary file).
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// The bag's topic names, sorted.
    #[getter]
    fn topics(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .bag
            .reader()
            .topics
            .iter()
            .map(|t| t.name.clone())
            .collect();
        t.sort();
        t.dedup();
        t
    }

    /// `bagscope info --json` (`fast`: `info --fast --json`; `sort`: `info --sort`).
    #[pyo3(signature = (*args, **kwargs))]
    fn info(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let o: InfoOptions = options(py, "info", args, kwargs)?;
        let r = self.call(py, move |b| b.info_with(&o))?;
        to_py(py, &r)
    }

    /// `bagscope clocks --json`.
    #[pyo3(signature = (*args, **kwargs))]
    fn clocks(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let o: ClocksOptions = options(py, "clocks", args, kwargs)?;
        let r = self.call(py, move |b| b.clocks(&o))?;
        to_py(py, &r)
    }

    /// `bagscope check --json`: `limits` maps joint → (min, max) (or is a JSON file's path);
    /// `max_command_age` is a duration (`"200ms"` or seconds).
    #[pyo3(signature = (*args, **kwargs))]
    fn check(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let o: CheckOptions = options(py, "check", args, kwargs)?;
        let r = self.call(py, move |b| b.check(&o))?;
        to_py(py, &r)
    }

    /// `bagscope sync --json`: the synchronizer `policy` emulated over `topics`.
    #[pyo3(signature = (*args, **kwargs))]
    fn sync(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let o: SyncOptions = options(py, "sync", args, kwargs)?;
        let r = self.call(py, move |b| b.sync(&o))?;
        to_py(py, &r)
    }

    /// `bagscope sync --recommend --json`: a slop (or epsilon) and queue size for `policy` on
    /// `topics`, with the costs of the candidates.
    #[pyo3(signature = (*args, **kwargs))]
    fn recommend(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let mut o: SyncOptions = options(py, "recommend", args, kwargs)?;
        o.recommend = true;
        let r = self.call(py, move |b| b.sync(&o))?;
        to_py(py, &r)
    }

    /// `bagscope match --json`: the delay from `command` to `response` and the tracking error
    /// before and after correcting for it.
    #[pyo3(name = "match", signature = (*args, **kwargs))]
    fn match_(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let a: MatchArgs = options(py, "match", args, kwargs)?;
        let r = self.call(py, move |b| b.delay(&a))?;
        to_py(py, &r)
    }

    /// `bagscope tf --json`: what `tf2_ros::MessageFilter` would have done with each message
    /// of `topics` for `target_frame`.
    #[pyo3(signature = (*args, **kwargs))]
    fn tf(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let o: TfOptions = options(py, "tf", args, kwargs)?;
        let r = self.call(py, move |b| b.tf(&o))?;
        to_py(py, &r)
    }

    /// `bagscope hist --json`: distributions of stamp differences, periods and lag.
    #[pyo3(signature = (*args, **kwargs))]
    fn hist(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let o: HistOptions = options(py, "hist", args, kwargs)?;
        let r = self.call(py, move |b| b.hist(&o))?;
        to_py(py, &r)
    }

    /// What `bagscope report` writes as `report.json`, but its page's sections and figures:
    /// info, clocks and check from one scan, synchronizers on sensor pairs, the
    /// command/response `pairs` matched (default: every JointTrajectory → JointState pair),
    /// observations under the `contract` file, the verdicts.
    #[pyo3(signature = (pairs = None, contract = None))]
    fn report_data(
        &self,
        py: Python<'_>,
        pairs: Option<Vec<(String, String)>>,
        contract: Option<PathBuf>,
    ) -> PyResult<Py<PyAny>> {
        let r = self.call(py, move |b| {
            let contract = contract
                .as_deref()
                .map(bagscope::observe::load_contract)
                .transpose()?;
            b.report_data(&bagscope::report::ReportOptions {
                pairs: pairs.unwrap_or_default(),
                contract,
            })
        })?;
        to_py(py, &r)
    }

    /// One row per message of `topics` (all topics when None): the table `bagscope export
    /// --timing-only` writes (bag, topic, type, log_time_ns, publish_time_ns, header_stamp_ns,
    /// clock_axis, size_bytes, ...) and `lag_ns` (log time − header stamp), as an Arrow table.
    /// String columns are dictionary-encoded.
    #[pyo3(signature = (topics = None))]
    fn timing(&self, py: Python<'_>, topics: Option<Vec<String>>) -> PyResult<Table> {
        let o = ExportOptions {
            topics: topics.unwrap_or_default(),
            ..Default::default()
        };
        let (cols, report) = self.call(py, move |b| b.timing_columns(&o))?;
        let report = to_py(py, &report)?;
        arrow::timing_table(cols, Some(report))
            .map_err(|e| raise(py, "BagError", format!("timing table: {e}"), None))
    }

    /// The timing table of [`PyBag::timing`] as a stream of record batches of
    /// `rows_per_batch` rows (`__arrow_c_stream__`: `pyarrow.RecordBatchReader.from_stream`,
    /// polars, DuckDB), read from the bag as they are taken: a first read decides each
    /// topic's clock axis, then every stream taken reads the rows again, a batch at a time.
    #[pyo3(signature = (rows_per_batch = bagscope::timing::DEFAULT_ROWS_PER_BATCH, topics = None))]
    fn timing_batches(
        &self,
        py: Python<'_>,
        rows_per_batch: usize,
        topics: Option<Vec<String>>,
    ) -> PyResult<arrow::TimingBatches> {
        if rows_per_batch == 0 {
            return Err(bad_param(py, "rows_per_batch: must be at least 1".into()));
        }
        let o = ExportOptions {
            topics: topics.unwrap_or_default(),
            ..Default::default()
        };
        let plan = self.call(py, move |b| b.timing_plan(&o))?;
        Ok(arrow::TimingBatches::new(
            self.bag.clone(),
            plan,
            rows_per_batch,
        ))
    }

    /// The messages of `topic` with their fields flattened into columns, as `bagscope export`
    /// writes them (`fields`: field paths to keep; `explode`: arrays of numbers as one column
    /// per element), as an Arrow table.
    #[pyo3(signature = (topic, fields = None, explode = false))]
    fn messages(
        &self,
        py: Python<'_>,
        topic: String,
        fields: Option<Vec<String>>,
        explode: bool,
    ) -> PyResult<Table> {
        let o = ExportOptions {
            topics: vec![topic],
            fields: fields.unwrap_or_default(),
            explode,
            ..Default::default()
        };
        let (mut frames, report) = self.call(py, move |b| {
            bagscope::export::topic_frames_of(b.reader(), &o)
        })?;
        let df = frames.pop().map(|(_, df)| df).unwrap_or_default();
        Table::new(py, df, Some(to_py(py, &report)?))
    }

    /// The bag's rows of `bagscope batch`'s `summary.parquet` (one per topic), as an Arrow
    /// table; `name` fills the `bag` column (default: the name `batch` gives the bag when it is
    /// found directly in an input folder).
    #[pyo3(signature = (name = None))]
    fn summary(&self, py: Python<'_>, name: Option<String>) -> PyResult<Table> {
        let name = name.unwrap_or_else(|| batch_name(self.path.display().to_string()));
        let df = self.call(py, move |b| b.summary(&name))?;
        Table::new(py, df, None)
    }

    fn __repr__(&self) -> String {
        format!("<bagscope.Bag {:?}>", self.path.display().to_string())
    }
}

/// The name `bagscope batch` gives a bag found directly in an input folder (or given itself):
/// its file or folder name without `.mcap` / `.mcap.zstd`, made path-safe.
#[pyfunction]
pub fn batch_name(path: String) -> String {
    let p = path.trim_end_matches('/');
    let mut rel = Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| p.to_string());
    for ext in [".mcap.zstd", ".mcap"] {
        if let Some(s) = rel.strip_suffix(ext) {
            rel = s.to_string();
            break;
        }
    }
    bagscope::export::sanitize(&rel)
}

/// The column names of `batch`'s `summary.parquet`, in order.
#[pyfunction]
fn summary_columns(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, bagscope::batch::SUMMARY_COLUMNS)
}

/// An empty summary table (the columns and types of `summary.parquet`, no rows).
#[pyfunction]
fn empty_summary(py: Python<'_>) -> PyResult<Table> {
    let df = bagscope::batch::summary_frame(&[])
        .map_err(|e| raise(py, "BagError", e.to_string(), None))?;
    Table::new(py, df, None)
}

/// Whether `value` given as `method`'s parameter `name` is what the parameter is when not
/// given (`None`: that it has no value by default), through the same path as a call: what
/// the stub's defaults are tested with.
#[pyfunction]
fn _default_matches(
    py: Python<'_>,
    method: &str,
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    fn same<T: DeserializeOwned + serde::Serialize>(
        base: serde_json::Map<String, serde_json::Value>,
        name: &str,
        value: Option<serde_json::Value>,
    ) -> Result<bool, bagscope::Error> {
        let default = serde_json::to_value(bagscope::params::from_json::<T>(base.clone())?)
            .map_err(|e| bagscope::Error::invalid(name, e.to_string()))?;
        match value {
            None => match default.get(name) {
                None => Err(bagscope::Error::invalid(name, "no such parameter")),
                Some(serde_json::Value::Null) => Ok(true),
                Some(serde_json::Value::Array(a)) => Ok(a.is_empty()),
                Some(_) => Ok(false),
            },
            Some(v) => {
                let mut m = base;
                m.insert(name.to_string(), v);
                let given = serde_json::to_value(bagscope::params::from_json::<T>(m)?)
                    .map_err(|e| bagscope::Error::invalid(name, e.to_string()))?;
                Ok(given == default)
            }
        }
    }
    let value = if value.is_none() {
        None
    } else {
        let kw = PyDict::new(py);
        kw.set_item(name, value)?;
        arguments(py, "", &PyTuple::empty(py), Some(&kw))?.remove(name)
    };
    let base = serde_json::Map::new();
    let r = match method {
        "info" => same::<InfoOptions>(base, name, value),
        "clocks" => same::<ClocksOptions>(base, name, value),
        "check" => same::<CheckOptions>(base, name, value),
        "sync" | "recommend" => same::<SyncOptions>(base, name, value),
        "match" => same::<MatchArgs>(base, name, value),
        "tf" => same::<TfOptions>(base, name, value),
        "hist" => same::<HistOptions>(base, name, value),
        m => return Err(bad_param(py, format!("no method {m} takes options"))),
    };
    r.map_err(|e| raise(py, kind_of(&e), e.to_string(), None))
}

/// The positional parameters of `method`, in order.
#[pyfunction]
fn _positional(method: &str) -> Vec<&'static str> {
    positional(method).to_vec()
}

/// The library's version.
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _bagscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBag>()?;
    m.add_class::<Table>()?;
    m.add_class::<arrow::TimingBatches>()?;
    m.add_function(wrap_pyfunction!(batch_name, m)?)?;
    m.add_function(wrap_pyfunction!(summary_columns, m)?)?;
    m.add_function(wrap_pyfunction!(empty_summary, m)?)?;
    m.add_function(wrap_pyfunction!(_default_matches, m)?)?;
    m.add_function(wrap_pyfunction!(_positional, m)?)?;
    m.add("__version__", version())?;
    Ok(())
}
