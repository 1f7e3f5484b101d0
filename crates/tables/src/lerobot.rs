//! `observe --layout lerobot`'s writer: the observations as a LeRobot dataset (format v3.0,
//! the one the `lerobot` package reads since its 0.4 releases), one bag = one episode.
//!
//! ```text
//! OUT/lerobot/
//!   data/chunk-000/file-000.parquet        one row per observation (frame)
//!   meta/info.json                         codebase_version "v3.0", fps, features, paths
//!   meta/stats.json                        per-feature min/max/mean/std/count/q01..q99
//!   meta/tasks.parquet                     the task string (pandas index) → task_index
//!   meta/episodes/chunk-000/file-000.parquet   the episode: length, data file, index range,
//!                                          its stats as `stats/<feature>/<stat>` columns
//! ```
//!
//! The frame's columns: `observation.state` (the state topics other than the action,
//! concatenated), `action`, `timestamp` (s from the first anchor stamp), `frame_index`,
//! `episode_index`, `index`, `task_index`, and one `image_ref.<topic>` string per camera
//! (`TOPIC#INDEX`: images are referenced, not copied or encoded as video; the prefix is neither
//! `observation.` nor `action`, so LeRobot's policies do not take the references for inputs).
//!
//! The dataset is written into a staging folder beside its place as the frames come (the data
//! file a row group at a time, each numeric feature's values in sorted runs on disk for its
//! statistics) and renamed whole into place ([`Staged::commit`]). Which folder may take it and
//! which files may not be written (the bag's own) are the caller's rules, checked before
//! [`LeRobotWriter::new`] and again before [`Staged::commit`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use bagscope_bag::outfile;
use bagscope_observe::{Observation, StateField, StateMode, Values};

use crate::{frame, Col, Format, FramesError, TableWriter};

/// Why the dataset could not be written.
#[derive(Debug, thiserror::Error)]
pub enum LeRobotError {
    /// A file or folder of the dataset could not be written.
    #[error("{what}: {source}")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What failed, naming the path.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The observations cannot make a LeRobot dataset (a frame without a value, a feature
    /// whose shape changes, no frame at all): why, and what to change.
    #[error("{0}")]
    Refused(String),
    /// A table could not be built or written.
    #[error(transparent)]
    Frames(#[from] FramesError),
}

/// [`LeRobotError::Write`]: `p` could not be written.
fn cannot_write(p: &Path, e: std::io::Error) -> LeRobotError {
    LeRobotError::Write {
        path: p.to_path_buf(),
        what: format!("cannot write {}", p.display()),
        source: e,
    }
}

/// The LeRobot dataset format written.
pub const CODEBASE_VERSION: &str = "v3.0";
/// The quantiles LeRobot's statistics carry, with their keys.
const QUANTILES: [(&str, f64); 5] = [
    ("q01", 0.01),
    ("q10", 0.10),
    ("q50", 0.50),
    ("q90", 0.90),
    ("q99", 0.99),
];
const DATA_FILE: &str = "data/chunk-000/file-000.parquet";
const EPISODES_FILE: &str = "meta/episodes/chunk-000/file-000.parquet";

/// What `--layout lerobot` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct LeRobotLayout {
    /// The format written (`v3.0`).
    pub codebase_version: String,
    /// The data file (every frame of the episode).
    pub data: String,
    /// `meta/info.json`, `meta/stats.json`, `meta/tasks.parquet`, the episodes file.
    pub meta: Vec<String>,
    /// Frames written (observations).
    pub frames: usize,
    /// Frames per second written into `info.json` (the anchor's median rate, rounded).
    pub fps: u32,
}

/// The values of one state topic at one observation as a flat vector with a name per value:
/// its `position` list when it has one (joint states, named by the joint names), else every
/// numeric field in order. `None` when the observation has no value of it (optional state).
fn flat_state(
    state: &[(StateMode, Vec<StateField>, bool)],
    s: usize,
    o: &Observation,
) -> Option<(Vec<f64>, Vec<String>)> {
    let v = o.state.get(s)?.as_ref()?;
    let fields = &state.get(s)?.1;
    if let Some(p) = fields.iter().position(|f| f.name == "position" && f.list) {
        let names = v.names.as_ref().map(|n| n.to_vec()).unwrap_or_else(|| {
            (0..v.values[p].len())
                .map(|i| format!("position_{i}"))
                .collect()
        });
        return Some((v.values[p].clone(), names));
    }
    let mut vals = Vec::new();
    let mut names = Vec::new();
    for (f, field) in fields.iter().enumerate() {
        for (i, x) in v.values[f].iter().enumerate() {
            vals.push(*x);
            names.push(if field.list {
                format!("{}_{i}", field.name)
            } else {
                field.name.clone()
            });
        }
    }
    Some((vals, names))
}

/// One vector feature (`observation.state`, `action`) over the episode: a vector per frame
/// (those of the row group being written), all of one length, with the names of the first
/// frame.
#[derive(Default)]
struct VectorFeature {
    rows: Vec<Vec<f64>>,
    names: Vec<String>,
    /// Frames taken so far.
    frames: usize,
}

impl VectorFeature {
    /// Adds a frame's vector; its length (and so its meaning) must match the first frame's.
    fn push(&mut self, feature: &str, v: Vec<f64>, names: Vec<String>) -> Result<(), LeRobotError> {
        if self.frames == 0 {
            self.names = names;
        } else if names != self.names {
            return Err(LeRobotError::Refused(format!(
                "`layout` lerobot: '{feature}' changes at frame {} ({} values: {}; the first frame had {}: {}); \
                 a LeRobot feature has one shape and one meaning per dataset",
                self.frames,
                names.len(),
                names.join(", "),
                self.names.len(),
                self.names.join(", ")
            )));
        }
        self.rows.push(v);
        self.frames += 1;
        Ok(())
    }
}

/// The columns LeRobot's `meta/episodes` file carries for an episode's statistics:
/// `stats/<feature>/<stat>`, a list per row (counts as integers).
fn stats_columns(all: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, Col)> {
    let mut cols = Vec::new();
    for (feature, st) in all {
        let Some(st) = st.as_object() else { continue };
        for (k, v) in st {
            let xs = v.as_array().map(Vec::as_slice).unwrap_or_default();
            let name = format!("stats/{feature}/{k}");
            cols.push(if k == "count" {
                (
                    name,
                    Col::I64List(vec![Some(xs.iter().filter_map(|x| x.as_i64()).collect())]),
                )
            } else {
                (
                    name,
                    Col::F64List(vec![Some(xs.iter().filter_map(|x| x.as_f64()).collect())]),
                )
            });
        }
    }
    cols
}

/// The `pandas` metadata of a Parquet file whose `__index_level_0__` string column is the
/// DataFrame's index (how LeRobot keeps `tasks.parquet`: the task strings index `task_index`).
fn pandas_index_metadata() -> String {
    serde_json::json!({
        "index_columns": ["__index_level_0__"],
        "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null},
            {"name": null, "field_name": "__index_level_0__", "pandas_type": "unicode", "numpy_type": "object", "metadata": null},
        ],
        "creator": {"library": "bagscope", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.2.0",
    })
    .to_string()
}

/// The folder a dataset is written into before it is renamed to its place: a hidden sibling
/// of the target, removed when dropped uncommitted.
struct Stage {
    dir: std::path::PathBuf,
    done: bool,
}

impl Stage {
    fn new(out: &Path) -> Result<Stage, LeRobotError> {
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "lerobot".into());
        let dir = out.with_file_name(format!(".{name}.bagscope-staging.tmp"));
        let io = |e: std::io::Error| cannot_write(&dir, e);
        if let Some(p) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(p).map_err(io)?;
        }
        outfile::create_temp_dir(&dir).map_err(io)?;
        Ok(Stage { dir, done: false })
    }

    fn path(&self, rel: impl AsRef<Path>) -> std::path::PathBuf {
        self.dir.join(rel)
    }

    /// Moves the complete dataset to `out`, which the caller has checked is new or an empty
    /// folder.
    fn commit(mut self, out: &Path) -> Result<(), LeRobotError> {
        let io = |e: std::io::Error| cannot_write(out, e);
        if out.is_dir() {
            std::fs::remove_dir(out).map_err(io)?;
        }
        std::fs::rename(&self.dir, out).map_err(io)?;
        outfile::forget(&self.dir);
        self.done = true;
        Ok(())
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if !self.done {
            outfile::discard(&self.dir);
        }
    }
}

/// Writes one table as Parquet at `path` (with file-level `metadata`).
fn write_table(
    path: &Path,
    cols: Vec<(String, Col)>,
    metadata: Vec<(String, String)>,
) -> Result<(), LeRobotError> {
    let df = frame(cols)?;
    let mut w = TableWriter::new(path, Format::Parquet).with_metadata(metadata);
    if df.height() > 0 {
        w.write(&df)?;
    }
    w.finish(&df)?;
    Ok(())
}

/// Values of one dimension of a feature over the episode, for LeRobot's statistics: sorted
/// runs of [`RUN`] values, spilled to a temporary file in the output folder, merged in order
/// when the statistics are taken (in memory while they fit in one run).
struct SortedColumn {
    dir: PathBuf,
    run: Vec<f64>,
    file: Option<std::fs::File>,
    /// Values per run written, in order.
    runs: Vec<usize>,
    n: usize,
}

/// Values of one dimension held before they are sorted and spilled.
const RUN: usize = 1 << 15;

impl SortedColumn {
    fn new(dir: &Path) -> SortedColumn {
        SortedColumn {
            dir: dir.to_path_buf(),
            run: Vec::new(),
            file: None,
            runs: Vec::new(),
            n: 0,
        }
    }

    fn push(&mut self, x: f64) -> std::io::Result<()> {
        self.run.push(x);
        self.n += 1;
        if self.run.len() == RUN {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> std::io::Result<()> {
        use std::io::{Seek, Write};
        self.run.sort_by(f64::total_cmp);
        if self.file.is_none() {
            self.file = Some(tempfile::tempfile_in(&self.dir)?);
        }
        if let Some(f) = &mut self.file {
            f.seek(std::io::SeekFrom::End(0))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 16, &*f);
            for x in &self.run {
                w.write_all(&x.to_le_bytes())?;
            }
            w.flush()?;
        }
        self.runs.push(self.run.len());
        self.run.clear();
        Ok(())
    }

    /// The values in ascending order (`f64::total_cmp`), as often as asked: the run in
    /// memory, or the spilled runs merged.
    fn sorted(&mut self) -> std::io::Result<Box<dyn Iterator<Item = f64> + '_>> {
        if self.file.is_none() {
            self.run.sort_by(f64::total_cmp);
            return Ok(Box::new(self.run.iter().copied()));
        }
        if !self.run.is_empty() {
            self.spill()?;
        }
        let Some(file) = &self.file else {
            return Ok(Box::new(std::iter::empty()));
        };
        let mut at = 0u64;
        let mut readers = Vec::with_capacity(self.runs.len());
        for &len in &self.runs {
            readers.push(RunReader {
                file,
                at,
                left: len,
                buf: Vec::new(),
                pos: 0,
            });
            at += len as u64 * 8;
        }
        Ok(Box::new(Merge::new(readers)))
    }
}

/// One sorted run of a [`SortedColumn`]'s file, read a block at a time at its own offset.
struct RunReader<'f> {
    file: &'f std::fs::File,
    at: u64,
    left: usize,
    buf: Vec<f64>,
    pos: usize,
}

impl Iterator for RunReader<'_> {
    type Item = f64;
    fn next(&mut self) -> Option<f64> {
        if self.pos == self.buf.len() {
            if self.left == 0 {
                return None;
            }
            let k = self.left.min(4096);
            let mut bytes = vec![0u8; k * 8];
            #[cfg(unix)]
            std::os::unix::fs::FileExt::read_exact_at(self.file, &mut bytes, self.at).ok()?;
            #[cfg(windows)]
            {
                let mut done = 0;
                while done < bytes.len() {
                    let n = std::os::windows::fs::FileExt::seek_read(
                        self.file,
                        &mut bytes[done..],
                        self.at + done as u64,
                    )
                    .ok()?;
                    if n == 0 {
                        return None;
                    }
                    done += n;
                }
            }
            self.at += bytes.len() as u64;
            self.left -= k;
            self.buf = bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect();
            self.pos = 0;
        }
        let x = self.buf[self.pos];
        self.pos += 1;
        Some(x)
    }
}

/// Order-preserving integer key of a float (IEEE total order, as `f64::total_cmp`).
fn total_key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// Sorted runs merged into one ascending sequence.
struct Merge<'f> {
    runs: Vec<RunReader<'f>>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize)>>,
    heads: Vec<f64>,
}

impl<'f> Merge<'f> {
    fn new(mut runs: Vec<RunReader<'f>>) -> Merge<'f> {
        let mut heap = std::collections::BinaryHeap::new();
        let mut heads = vec![0.0; runs.len()];
        for (k, r) in runs.iter_mut().enumerate() {
            if let Some(x) = r.next() {
                heads[k] = x;
                heap.push(std::cmp::Reverse((total_key(x), k)));
            }
        }
        Merge { runs, heap, heads }
    }
}

impl Iterator for Merge<'_> {
    type Item = f64;
    fn next(&mut self) -> Option<f64> {
        let std::cmp::Reverse((_, k)) = self.heap.pop()?;
        let x = self.heads[k];
        if let Some(y) = self.runs[k].next() {
            self.heads[k] = y;
            self.heap.push(std::cmp::Reverse((total_key(y), k)));
        }
        Some(x)
    }
}

/// LeRobot's per-feature statistics of `cols` (one column per dimension): per dimension
/// `min`, `max`, `mean`, `std` (population), the quantiles (linear interpolation between
/// order statistics, as numpy's default) and `count` (frames); each taken over the sorted
/// values, in two ordered passes.
fn stats_of(
    cols: &mut [SortedColumn],
    n: usize,
) -> std::io::Result<serde_json::Map<String, serde_json::Value>> {
    let mut out: Vec<(String, Vec<f64>)> = ["min", "max", "mean", "std"]
        .iter()
        .map(|k| (k.to_string(), Vec::with_capacity(cols.len())))
        .chain(
            QUANTILES
                .iter()
                .map(|(k, _)| (k.to_string(), Vec::with_capacity(cols.len()))),
        )
        .collect();
    for col in cols.iter_mut() {
        // The ranks each quantile interpolates between, and the values found there.
        let pos: Vec<(usize, usize, f64)> = QUANTILES
            .iter()
            .map(|(_, q)| {
                let p = q.clamp(0.0, 1.0) * (n - 1) as f64;
                (p.floor() as usize, p.ceil() as usize, p)
            })
            .collect();
        let mut at = vec![(0.0f64, 0.0f64); pos.len()];
        let (mut min, mut max) = (f64::NAN, f64::NAN);
        let mean = {
            let mut i = 0usize;
            let sum: f64 = col
                .sorted()?
                .inspect(|&x| {
                    if i == 0 {
                        min = x;
                    }
                    if i + 1 == n {
                        max = x;
                    }
                    for (k, &(lo, hi, _)) in pos.iter().enumerate() {
                        if i == lo {
                            at[k].0 = x;
                        }
                        if i == hi {
                            at[k].1 = x;
                        }
                    }
                    i += 1;
                })
                .sum();
            sum / n as f64
        };
        let var = col.sorted()?.map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        out[0].1.push(min);
        out[1].1.push(max);
        out[2].1.push(mean);
        out[3].1.push(var.sqrt());
        for (k, &(lo, _, p)) in pos.iter().enumerate() {
            let (a, b) = at[k];
            out[4 + k].1.push(a + (b - a) * (p - lo as f64));
        }
    }
    let mut m: serde_json::Map<String, serde_json::Value> = out
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect();
    m.insert("count".into(), serde_json::json!([n]));
    Ok(m)
}

/// The episode a dataset holds: the contract's state topics (one of them the action), the
/// topics referenced, the task.
#[derive(Debug, Clone)]
pub struct Episode {
    /// The contract's state topics, in its order.
    pub state_topics: Vec<String>,
    /// The state topic that is the action (an index into `state_topics`); every other state
    /// topic goes into `observation.state`.
    pub action: usize,
    /// The anchor, then the member topics: one `image_ref` column each.
    pub image_topics: Vec<String>,
    /// The task string.
    pub task: String,
}

/// The LeRobot dataset written as the observations are made (`observe -o OUT --layout
/// lerobot`): the data file a row group at a time into the staging folder, each numeric
/// feature's values kept for its statistics (sorted runs on disk), and the metadata at
/// [`LeRobotWriter::finish`]; [`Staged::commit`] moves the dataset into place.
pub struct LeRobotWriter {
    out: PathBuf,
    action: usize,
    task: String,
    stage: Stage,
    data: Option<TableWriter>,
    /// The anchor and member topics (one `image_ref` column each).
    image_topics: Vec<String>,
    state_topics: Vec<String>,
    state: VectorFeature,
    act: VectorFeature,
    n: usize,
    t0: i64,
    last_stamp: Option<i64>,
    periods: Box<dyn bagscope_observe::Values>,
    /// Per dimension of `observation.state`, then `action`, then the five scalar features.
    columns: Vec<SortedColumn>,
    /// The row group being filled: `timestamp` and, per anchor and member topic, its
    /// references (the state and action vectors are in `state` and `act`).
    timestamp: Vec<f64>,
    refs: Vec<Vec<Option<String>>>,
    /// Frames per row group of the data file.
    row_group_rows: usize,
}

/// The features whose statistics are of one value per frame, in `stats.json`'s order.
const SCALARS: [&str; 5] = [
    "timestamp",
    "frame_index",
    "episode_index",
    "index",
    "task_index",
];

impl LeRobotWriter {
    /// Starts a dataset of one episode under `out` (a new path or an empty folder, as the
    /// caller checked), written into a staging folder beside it. `periods` keeps the anchor's
    /// periods (for `fps`), given the staging folder to spill into; the data file gets a row
    /// group every `row_group_rows` frames.
    pub fn new(
        out: &Path,
        episode: Episode,
        row_group_rows: usize,
        periods: impl FnOnce(&Path) -> Box<dyn Values>,
    ) -> Result<LeRobotWriter, LeRobotError> {
        // Written into a staging folder beside `out` and renamed into place when complete: a
        // failed or interrupted run leaves no half dataset (the stage is removed, also on
        // Ctrl-C: `outfile::remove_live`).
        let stage = Stage::new(out)?;
        let data = TableWriter::new(&stage.path(DATA_FILE), Format::Parquet);
        let periods = periods(&stage.dir);
        Ok(LeRobotWriter {
            out: out.to_path_buf(),
            action: episode.action,
            task: episode.task,
            stage,
            data: Some(data),
            refs: vec![Vec::new(); episode.image_topics.len()],
            image_topics: episode.image_topics,
            state_topics: episode.state_topics,
            state: VectorFeature::default(),
            act: VectorFeature::default(),
            n: 0,
            t0: 0,
            last_stamp: None,
            periods,
            columns: Vec::new(),
            timestamp: Vec::new(),
            row_group_rows,
        })
    }

    /// The files the dataset at `out` holds once written: the data file, `meta/info.json`,
    /// `meta/stats.json`, `meta/tasks.parquet`, the episodes file.
    pub fn files(out: &Path) -> [PathBuf; 5] {
        [
            out.join(DATA_FILE),
            out.join("meta/info.json"),
            out.join("meta/stats.json"),
            out.join("meta/tasks.parquet"),
            out.join(EPISODES_FILE),
        ]
    }

    /// The frame of observation `o`, given each state topic's sampling mode, numeric fields
    /// and whether it has a `name` list (`state`, in the contract's order). Refuses an
    /// observation without the action or a state value (an `optional` state that was missing)
    /// and a state whose shape changes over the episode: LeRobot frames are complete vectors
    /// of one shape.
    pub fn push(
        &mut self,
        state: &[(StateMode, Vec<StateField>, bool)],
        o: &Observation,
    ) -> Result<(), LeRobotError> {
        let io = |e: std::io::Error| cannot_write(&self.stage.dir, e);
        let missing = |s: usize| {
            LeRobotError::Refused(format!(
                "`layout` lerobot: observation {} (anchor index {}) has no value of {} (an optional state that was missing); \
                 a LeRobot frame needs every value: make it required or leave it out of the contract",
                o.observation_id, o.anchor_index, self.state_topics[s]
            ))
        };
        let (mut v, mut names) = (Vec::new(), Vec::new());
        for s in (0..self.state_topics.len()).filter(|&s| s != self.action) {
            let (x, n) = flat_state(state, s, o).ok_or_else(|| missing(s))?;
            v.extend(x);
            names.extend(
                n.into_iter()
                    .map(|n| format!("{}.{n}", self.state_topics[s])),
            );
        }
        self.state.push("observation.state", v, names)?;
        let (x, n) = flat_state(state, self.action, o).ok_or_else(|| missing(self.action))?;
        self.act.push("action", x, n)?;
        if self.n == 0 {
            self.t0 = o.anchor_stamp_ns;
            let dims = self.state.names.len() + self.act.names.len() + SCALARS.len();
            self.columns = (0..dims)
                .map(|_| SortedColumn::new(&self.stage.dir))
                .collect();
        }
        if let Some(prev) = self.last_stamp {
            let d = o.anchor_stamp_ns - prev;
            if d > 0 {
                self.periods.push(d);
            }
        }
        self.last_stamp = Some(o.anchor_stamp_ns);
        let t = (o.anchor_stamp_ns - self.t0) as f64 / 1e9;
        let i = self.n as i64;
        self.timestamp.push(t);
        let row = self.state.rows.last().into_iter().flatten();
        let row = row.chain(self.act.rows.last().into_iter().flatten());
        let scalars = [t, i as f64, 0.0, i as f64, 0.0];
        for (col, x) in self.columns.iter_mut().zip(row.chain(scalars.iter())) {
            col.push(*x).map_err(io)?;
        }
        for (k, refs) in self.refs.iter_mut().enumerate() {
            let idx = if k == 0 {
                o.anchor_index
            } else {
                o.members[k - 1].index
            };
            refs.push(Some(format!("{}#{idx}", self.image_topics[k])));
        }
        self.n += 1;
        if self.timestamp.len() >= self.row_group_rows {
            self.write_rows()?;
        }
        Ok(())
    }

    /// Writes the frames since the last row group as one.
    fn write_rows(&mut self) -> Result<(), LeRobotError> {
        let n = self.timestamp.len();
        if n == 0 {
            return Ok(());
        }
        let first = (self.n - n) as i64;
        let frame_index: Vec<Option<i64>> = (first..first + n as i64).map(Some).collect();
        let mut cols: Vec<(String, Col)> = vec![
            (
                "observation.state".into(),
                Col::F64List(self.state.rows.drain(..).map(Some).collect()),
            ),
            (
                "action".into(),
                Col::F64List(self.act.rows.drain(..).map(Some).collect()),
            ),
            (
                "timestamp".into(),
                Col::F64(self.timestamp.drain(..).map(Some).collect()),
            ),
            ("frame_index".into(), Col::I64(frame_index.clone())),
            ("episode_index".into(), Col::I64(vec![Some(0); n])),
            ("index".into(), Col::I64(frame_index)),
            ("task_index".into(), Col::I64(vec![Some(0); n])),
        ];
        for (t, refs) in self.image_topics.iter().zip(&mut self.refs) {
            cols.push((image_ref_name(t), Col::Str(std::mem::take(refs))));
        }
        let df = frame(cols)?;
        if let Some(w) = &mut self.data {
            w.write(&df)?;
        }
        Ok(())
    }

    /// Writes the last frames and the metadata (`info.json`, `stats.json`, `tasks.parquet`,
    /// the episodes file) into the staging folder: the dataset, complete, to be moved into
    /// place ([`Staged::commit`]). Refuses an empty episode.
    pub fn finish(mut self) -> Result<Staged, LeRobotError> {
        if self.n == 0 {
            return Err(LeRobotError::Refused(
                "`layout` lerobot: no observation was built (the summary's drops and rejections.parquet say why), and a LeRobot episode needs at least one frame".into(),
            ));
        }
        self.write_rows()?;
        let out = self.out.clone();
        let n = self.n;
        let stage_dir = self.stage.dir.clone();
        let io = |e: std::io::Error| cannot_write(&stage_dir, e);
        if let Some(w) = self.data.take() {
            // Its schema is the one of the rows written (there is at least one).
            w.finish(&polars::prelude::DataFrame::empty())?;
        }
        let fps = self
            .periods
            .summary()
            .map_or(1, |s| ((1e9 / s.p50 as f64).round() as u32).max(1));
        // Statistics of every numeric feature, as LeRobot computes them for its `stats.json`.
        let (ds, da) = (self.state.names.len(), self.act.names.len());
        let mut all_stats = serde_json::Map::new();
        let mut columns = std::mem::take(&mut self.columns);
        let (state_cols, rest) = columns.split_at_mut(ds);
        let (action_cols, scalar_cols) = rest.split_at_mut(da);
        all_stats.insert(
            "observation.state".into(),
            serde_json::Value::Object(stats_of(state_cols, n).map_err(io)?),
        );
        all_stats.insert(
            "action".into(),
            serde_json::Value::Object(stats_of(action_cols, n).map_err(io)?),
        );
        for (name, col) in SCALARS.iter().zip(scalar_cols.chunks_mut(1)) {
            all_stats.insert(
                name.to_string(),
                serde_json::Value::Object(stats_of(col, n).map_err(io)?),
            );
        }
        drop(columns);

        let mut features = serde_json::json!({
            "observation.state": {"dtype": "float64", "shape": [ds], "names": self.state.names},
            "action": {"dtype": "float64", "shape": [da], "names": self.act.names},
            "timestamp": {"dtype": "float64", "shape": [1], "names": null},
            "frame_index": {"dtype": "int64", "shape": [1], "names": null},
            "episode_index": {"dtype": "int64", "shape": [1], "names": null},
            "index": {"dtype": "int64", "shape": [1], "names": null},
            "task_index": {"dtype": "int64", "shape": [1], "names": null},
        });
        for t in &self.image_topics {
            if let Some(m) = features.as_object_mut() {
                m.insert(
                    image_ref_name(t),
                    serde_json::json!({"dtype": "string", "shape": [1], "names": null}),
                );
            }
        }
        let task = self.task.clone();
        let mut ep_cols: Vec<(String, Col)> = vec![
            ("episode_index".into(), Col::I64(vec![Some(0)])),
            ("tasks".into(), Col::StrList(vec![Some(vec![task.clone()])])),
            ("length".into(), Col::I64(vec![Some(n as i64)])),
            ("data/chunk_index".into(), Col::I64(vec![Some(0)])),
            ("data/file_index".into(), Col::I64(vec![Some(0)])),
            ("dataset_from_index".into(), Col::I64(vec![Some(0)])),
            ("dataset_to_index".into(), Col::I64(vec![Some(n as i64)])),
            ("meta/episodes/chunk_index".into(), Col::I64(vec![Some(0)])),
            ("meta/episodes/file_index".into(), Col::I64(vec![Some(0)])),
        ];
        ep_cols.extend(stats_columns(&all_stats));
        write_table(&self.stage.path(EPISODES_FILE), ep_cols, Vec::new())?;
        write_table(
            &self.stage.path("meta/tasks.parquet"),
            vec![
                ("task_index".into(), Col::I64(vec![Some(0)])),
                ("__index_level_0__".into(), Col::Str(vec![Some(task)])),
            ],
            vec![("pandas".into(), pandas_index_metadata())],
        )?;
        let info_v = serde_json::json!({
            "codebase_version": CODEBASE_VERSION,
            "robot_type": null,
            "total_episodes": 1,
            "total_frames": n,
            "total_tasks": 1,
            "chunks_size": 1000,
            "data_files_size_in_mb": 100,
            "video_files_size_in_mb": 200,
            "fps": fps,
            "splits": {"train": "0:1"},
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": null,
            "features": features,
        });
        let data = out.join(DATA_FILE);
        let info = out.join("meta/info.json");
        let stats_path = out.join("meta/stats.json");
        let tasks = out.join("meta/tasks.parquet");
        let episodes = out.join(EPISODES_FILE);
        let io = |p: &Path, e: std::io::Error| cannot_write(p, e);
        let meta = self.stage.path("meta");
        std::fs::create_dir_all(&meta).map_err(|e| io(&meta, e))?;
        for (p, v) in [
            (&info, info_v),
            (&stats_path, serde_json::Value::Object(all_stats)),
        ] {
            let rel = p.strip_prefix(&out).unwrap_or(p);
            std::fs::write(self.stage.path(rel), format!("{v:#}\n")).map_err(|e| io(p, e))?;
        }
        let layout = LeRobotLayout {
            codebase_version: CODEBASE_VERSION.into(),
            data: data.display().to_string(),
            meta: [&info, &stats_path, &tasks, &episodes]
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            frames: n,
            fps,
        };
        Ok(Staged {
            stage: self.stage,
            out,
            layout,
        })
    }
}

/// A complete dataset in its staging folder ([`LeRobotWriter::finish`]), to be moved into
/// place.
pub struct Staged {
    stage: Stage,
    out: PathBuf,
    layout: LeRobotLayout,
}

impl Staged {
    /// Where the dataset goes.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Moves the dataset to [`Staged::out`], which must be new or an empty folder (the caller
    /// checks it again just before: something may have appeared meanwhile), and reports it.
    /// Dropped uncommitted, the staging folder is removed.
    pub fn commit(self) -> Result<LeRobotLayout, LeRobotError> {
        let Staged { stage, out, layout } = self;
        stage.commit(&out)?;
        Ok(layout)
    }
}

/// The data file's column of references to a topic's messages (`image_ref.camera.left`).
fn image_ref_name(t: &str) -> String {
    format!("image_ref.{}", t.trim_start_matches('/').replace('/', "."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(rows: &[Vec<f64>], dim: usize) -> serde_json::Map<String, serde_json::Value> {
        let dir = tempfile::tempdir().unwrap();
        let mut cols: Vec<SortedColumn> = (0..dim).map(|_| SortedColumn::new(dir.path())).collect();
        for r in rows {
            for (c, x) in cols.iter_mut().zip(r) {
                c.push(*x).unwrap();
            }
        }
        stats_of(&mut cols, rows.len()).unwrap()
    }

    /// The statistics follow numpy's conventions (population std, linear quantiles).
    #[test]
    fn stats_match_numpy_conventions() {
        let rows: Vec<Vec<f64>> = [1.0, 2.0, 3.0, 4.0].iter().map(|x| vec![*x, -x]).collect();
        let s = stats(&rows, 2);
        assert_eq!(s["min"], serde_json::json!([1.0, -4.0]));
        assert_eq!(s["max"], serde_json::json!([4.0, -1.0]));
        assert_eq!(s["mean"], serde_json::json!([2.5, -2.5]));
        // np.std([1, 2, 3, 4]) = sqrt(1.25)
        let sd = s["std"][0].as_f64().unwrap();
        assert!((sd - 1.25f64.sqrt()).abs() < 1e-15);
        // np.quantile([1, 2, 3, 4], 0.1) = 1.3; 0.5 → 2.5
        assert!((s["q10"][0].as_f64().unwrap() - 1.3).abs() < 1e-12);
        assert_eq!(s["q50"][0], 2.5);
        assert_eq!(s["count"], serde_json::json!([4]));
    }

    /// Spilled to sorted runs on disk and merged, the statistics are those of the whole
    /// column sorted in memory, to the last bit: sums in ascending order, order statistics
    /// at the same ranks.
    #[test]
    fn spilled_stats_equal_the_sorted_column() {
        let n = 3 * RUN + 123;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut col: Vec<f64> = (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = (x % 1_000_003) as f64 * 1e-3 - 400.0;
                if i % 97 == 0 {
                    -0.0
                } else {
                    v
                }
            })
            .collect();
        let rows: Vec<Vec<f64>> = col.iter().map(|v| vec![*v]).collect();
        let s = stats(&rows, 1);
        col.sort_by(f64::total_cmp);
        let mean = col.iter().sum::<f64>() / n as f64;
        let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        assert_eq!(s["min"][0].as_f64().unwrap().to_bits(), col[0].to_bits());
        assert_eq!(
            s["max"][0].as_f64().unwrap().to_bits(),
            col[n - 1].to_bits()
        );
        assert_eq!(s["mean"][0].as_f64().unwrap().to_bits(), mean.to_bits());
        assert_eq!(
            s["std"][0].as_f64().unwrap().to_bits(),
            var.sqrt().to_bits()
        );
        for (k, q) in QUANTILES {
            let want = bagscope_stats::quantile_sorted_f64(&col, q);
            assert_eq!(s[k][0].as_f64().unwrap().to_bits(), want.to_bits(), "{k}");
        }
    }
}
