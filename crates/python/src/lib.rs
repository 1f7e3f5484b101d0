//! The native part of the `bagscope` Python package (`bagscope._bagscope`): [`PyBag`] over the
//! library facade (`bagscope::Bag`), whose methods return the CLI's `--json` reports as plain
//! Python objects, and [`Table`], an Arrow table handed to Python through the PyCapsule stream
//! interface (`__arrow_c_stream__`) without copying its columns.
//!
//! Every scan runs on a worker thread with the GIL released; the calling thread waits for it
//! and checks for signals, so `Ctrl-C` raises `KeyboardInterrupt` at once (the worker finishes
//! its scan in the background and its result is dropped).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bagscope::check::CheckOptions;
use bagscope::clock_analysis::ClocksOptions;
use bagscope::export::ExportOptions;
use bagscope::match_analysis::{MatchOptions, ResponseKind};
use bagscope::matching::{Align, MatchArgs};
use bagscope::sync::SyncOptions;
use bagscope::sync_policy::{parse_duration_ns, Policy, RateConfig};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

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
            B::InvalidPattern { .. } => "InvalidParameter",
            B::UnsupportedStorage { .. } | B::NotRegularFile { .. } => "UnsupportedBag",
            B::Io { .. } => "BagError",
            _ => "CorruptBag",
        },
        e if e.is_usage() => "InvalidParameter",
        E::Usage(_) | E::Fields { .. } => "UsageError",
        E::Output(_) | E::Write(_) | E::Frames(_) => "BagError",
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

/// A duration argument: a string with a unit (`"50ms"`) or plain seconds (`"0.05"`), or a
/// number of seconds (read through its `str()`, as the CLI reads its argument).
fn duration(py: Python<'_>, name: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i64>> {
    let Some(v) = v else { return Ok(None) };
    if v.is_none() {
        return Ok(None);
    }
    let text: String = v.str()?.extract()?;
    parse_duration_ns(&text)
        .map(Some)
        .map_err(|e| bad_param(py, format!("{name}={text}: {e}")))
}

fn range(py: Python<'_>, name: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<(i64, i64)>> {
    let Some(v) = v else { return Ok(None) };
    if v.is_none() {
        return Ok(None);
    }
    if let Ok(s) = v.extract::<String>() {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| bad_param(py, format!("{name}: expected 'START..END', got '{s}'")))?;
        let p =
            |x: &str| parse_duration_ns(x).map_err(|e| bad_param(py, format!("{name}={s}: {e}")));
        return Ok(Some((p(a)?, p(b)?)));
    }
    let (a, b): (Bound<'_, PyAny>, Bound<'_, PyAny>) = v.extract()?;
    Ok(Some((
        duration(py, name, Some(&a))?.unwrap_or(0),
        duration(py, name, Some(&b))?.unwrap_or(0),
    )))
}

fn topic_durations(
    py: Python<'_>,
    name: &str,
    v: Option<BTreeMap<String, Bound<'_, PyAny>>>,
) -> PyResult<Vec<(String, i64)>> {
    let mut out = Vec::new();
    for (t, d) in v.unwrap_or_default() {
        out.push((t, duration(py, name, Some(&d))?.unwrap_or(0)));
    }
    Ok(out)
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

    /// `bagscope info --json` (`fast`: `info --fast --json`).
    #[pyo3(signature = (fast = false))]
    fn info(&self, py: Python<'_>, fast: bool) -> PyResult<Py<PyAny>> {
        let path = self.path.clone();
        let r = self.call(py, move |b| {
            if fast {
                bagscope::info::info_with(
                    &path,
                    &bagscope::info::InfoOptions {
                        fast: true,
                        ..Default::default()
                    },
                )
            } else {
                Ok(b.info())
            }
        })?;
        to_py(py, &r)
    }

    /// `bagscope clocks --json`.
    #[pyo3(signature = (clock_topic = None, gap_factor = 3.0))]
    fn clocks(
        &self,
        py: Python<'_>,
        clock_topic: Option<String>,
        gap_factor: f64,
    ) -> PyResult<Py<PyAny>> {
        let o = ClocksOptions {
            clock_topic,
            gap_factor,
            ..Default::default()
        };
        let r = self.call(py, move |b| b.clocks(&o))?;
        to_py(py, &r)
    }

    /// `bagscope check --json`: `limits` maps joint → (min, max); `max_command_age` is a
    /// duration (`"200ms"` or seconds).
    #[pyo3(signature = (limits = None, max_command_age = None))]
    fn check(
        &self,
        py: Python<'_>,
        limits: Option<BTreeMap<String, (f64, f64)>>,
        max_command_age: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let mut o = CheckOptions::default();
        o.joints.limits = limits.unwrap_or_default();
        o.joints.max_command_age_ns = duration(py, "max_command_age", max_command_age.as_ref())?;
        let r = self.call(py, move |b| b.check(&o))?;
        to_py(py, &r)
    }

    /// `bagscope sync --json`: the synchronizer `policy` emulated over `topics`.
    #[pyo3(signature = (
        topics, policy = String::from("approx-py"), queue = 10, slop = None, *, age_penalty = None,
        max_interval = None, lower_bounds = None, queue_offsets = None, epsilon = None,
        rate_config = None, allow_headerless = false, sync_arrival_time = false,
        max_age = None, anchor = None, tf_target = None, tf_topics = None, tf_buffer = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn sync(
        &self,
        py: Python<'_>,
        topics: Vec<String>,
        policy: String,
        queue: usize,
        slop: Option<Bound<'_, PyAny>>,
        age_penalty: Option<f64>,
        max_interval: Option<Bound<'_, PyAny>>,
        lower_bounds: Option<BTreeMap<String, Bound<'_, PyAny>>>,
        queue_offsets: Option<BTreeMap<String, Bound<'_, PyAny>>>,
        epsilon: Option<Bound<'_, PyAny>>,
        rate_config: Option<Vec<String>>,
        allow_headerless: bool,
        sync_arrival_time: bool,
        max_age: Option<Bound<'_, PyAny>>,
        anchor: Option<String>,
        tf_target: Option<String>,
        tf_topics: Option<Vec<String>>,
        tf_buffer: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let policy =
            Policy::parse(&policy).map_err(|e| bad_param(py, format!("policy={policy}: {e}")))?;
        let mut o = SyncOptions::new(topics, policy, queue);
        o.slop_ns = duration(py, "slop", slop.as_ref())?;
        o.age_penalty = age_penalty;
        o.max_interval_ns = duration(py, "max_interval", max_interval.as_ref())?;
        o.lower_bounds_ns = topic_durations(py, "lower_bounds", lower_bounds)?;
        o.queue_offsets_ns = topic_durations(py, "queue_offsets", queue_offsets)?;
        o.epsilon_ns = duration(py, "epsilon", epsilon.as_ref())?;
        o.rate_config = rate_config
            .unwrap_or_default()
            .iter()
            .map(|s| {
                RateConfig::parse(s).map_err(|e| bad_param(py, format!("rate_config={s}: {e}")))
            })
            .collect::<PyResult<_>>()?;
        o.allow_headerless = allow_headerless;
        o.sync_arrival_time = sync_arrival_time;
        o.max_age_ns = duration(py, "max_age", max_age.as_ref())?;
        o.anchor = anchor;
        o.tf_target = tf_target;
        o.tf_topics = tf_topics.unwrap_or_default();
        o.tf_cache_ns = duration(py, "tf_buffer", tf_buffer.as_ref())?;
        let r = self.call(py, move |b| b.sync(&o))?;
        to_py(py, &r)
    }

    /// `bagscope sync --recommend --json`: a slop (or epsilon) and queue size for `policy` on
    /// `topics`, with the costs of the candidates.
    #[pyo3(signature = (
        topics, policy = String::from("approx-py"), queue = 10, *, max_interval = None, speed = None,
        fx = None, depth = None, pixel_budget = None, allow_headerless = false,
        sync_arrival_time = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn recommend(
        &self,
        py: Python<'_>,
        topics: Vec<String>,
        policy: String,
        queue: usize,
        max_interval: Option<Bound<'_, PyAny>>,
        speed: Option<f64>,
        fx: Option<f64>,
        depth: Option<f64>,
        pixel_budget: Option<f64>,
        allow_headerless: bool,
        sync_arrival_time: bool,
    ) -> PyResult<Py<PyAny>> {
        let policy =
            Policy::parse(&policy).map_err(|e| bad_param(py, format!("policy={policy}: {e}")))?;
        let mut o = SyncOptions::new(topics, policy, queue);
        o.recommend = true;
        o.max_interval_ns = duration(py, "max_interval", max_interval.as_ref())?;
        o.speed_mps = speed;
        o.fx_px = fx;
        o.depth_m = depth;
        o.pixel_budget = pixel_budget;
        o.allow_headerless = allow_headerless;
        o.sync_arrival_time = sync_arrival_time;
        let r = self.call(py, move |b| b.sync(&o))?;
        to_py(py, &r)
    }

    /// `bagscope match --json`: the delay from `command` to `response` and the tracking error
    /// before and after correcting for it.
    #[pyo3(name = "match", signature = (
        command, response, *, command_field = None, response_field = None, names_field = None,
        align = String::from("stamps"), clock_topic = None, response_kind = None, search = None, window = None,
        keep_still = false, bucket = None, interpolate = true, one_to_one = false,
        max_pair_distance = None, continuous = None, limits = None, max_command_age = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn match_(
        &self,
        py: Python<'_>,
        command: String,
        response: String,
        command_field: Option<String>,
        response_field: Option<String>,
        names_field: Option<String>,
        align: String,
        clock_topic: Option<String>,
        response_kind: Option<String>,
        search: Option<Bound<'_, PyAny>>,
        window: Option<Bound<'_, PyAny>>,
        keep_still: bool,
        bucket: Option<Bound<'_, PyAny>>,
        interpolate: bool,
        one_to_one: bool,
        max_pair_distance: Option<Bound<'_, PyAny>>,
        continuous: Option<Vec<String>>,
        limits: Option<BTreeMap<String, (f64, f64)>>,
        max_command_age: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let search_default = PyString::new(py, "0..500ms").into_any();
        let o = MatchOptions {
            search_window_ns: range(
                py,
                "search",
                Some(search.as_ref().unwrap_or(&search_default)),
            )?
            .unwrap_or((0, 500_000_000)),
            window_ns: range(py, "window", window.as_ref())?,
            trim_still: !keep_still,
            bucket_ns: duration(py, "bucket", bucket.as_ref())?,
            interpolate,
            one_to_one,
            max_pair_distance_ns: duration(py, "max_pair_distance", max_pair_distance.as_ref())?,
            continuous_joints: continuous.unwrap_or_default(),
            max_command_age_ns: duration(py, "max_command_age", max_command_age.as_ref())?,
            limits: limits.unwrap_or_default(),
            response_kind: match response_kind.as_deref() {
                None => None,
                Some("sampled") => Some(ResponseKind::Sampled),
                Some("event") => Some(ResponseKind::Event),
                Some(x) => {
                    return Err(bad_param(
                        py,
                        format!("response_kind must be 'sampled' or 'event', got '{x}'"),
                    ))
                }
            },
            ..Default::default()
        };
        // Fields MatchArgs may gain keep their defaults, as the CLI's.
        #[allow(clippy::needless_update)]
        let args = MatchArgs {
            command,
            response,
            command_field,
            response_field,
            names_field,
            align: match align.as_str() {
                "stamps" => Align::Stamps,
                "relative" => Align::Relative,
                x => {
                    return Err(bad_param(
                        py,
                        format!("align must be 'stamps' or 'relative', got '{x}'"),
                    ))
                }
            },
            clock_topic,
            options: o,
            ..Default::default()
        };
        let r = self.call(py, move |b| b.delay(&args))?;
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
    m.add("__version__", version())?;
    Ok(())
}
