//! `observe --layout lerobot`: the observations as a LeRobot dataset (format v3.0, the one the
//! `lerobot` package reads since its 0.4 releases), one bag = one episode.
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

use std::path::Path;

use serde::Serialize;

use crate::io::Bag;
use crate::observe::ObserveCommandReport;
use crate::Error;
use bagscope_frames::{frame, Col, Format, TableWriter};
use bagscope_observe::{Observation, ObserveReport};

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
fn flat_state(r: &ObserveReport, s: usize, o: &Observation) -> Option<(Vec<f64>, Vec<String>)> {
    let v = o.state.get(s)?.as_ref()?;
    let fields = &r.state_fields[s];
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

/// One vector feature (`observation.state`, `action`) over the episode: a vector per frame,
/// all of one length, with the names of the first frame.
struct VectorFeature {
    rows: Vec<Vec<f64>>,
    names: Vec<String>,
}

impl VectorFeature {
    /// Adds a frame's vector; its length (and so its meaning) must match the first frame's.
    fn push(&mut self, feature: &str, v: Vec<f64>, names: Vec<String>) -> Result<(), Error> {
        if self.rows.is_empty() {
            self.names = names;
        } else if names != self.names {
            return Err(Error::no_data(format!(
                "`layout` lerobot: '{feature}' changes at frame {} ({} values: {}; the first frame had {}: {}); \
                 a LeRobot feature has one shape and one meaning per dataset",
                self.rows.len(),
                names.len(),
                names.join(", "),
                self.names.len(),
                self.names.join(", ")
            )));
        }
        self.rows.push(v);
        Ok(())
    }
}

/// LeRobot's per-feature statistics of `rows` (one vector per frame, every vector of length
/// `dim`): per dimension `min`, `max`, `mean`, `std` (population), the quantiles (linear
/// interpolation between order statistics, as numpy's default) and `count` (frames).
fn stats(rows: &[Vec<f64>], dim: usize) -> serde_json::Map<String, serde_json::Value> {
    let n = rows.len();
    let mut out: Vec<(String, Vec<f64>)> = ["min", "max", "mean", "std"]
        .iter()
        .map(|k| (k.to_string(), Vec::with_capacity(dim)))
        .chain(
            QUANTILES
                .iter()
                .map(|(k, _)| (k.to_string(), Vec::with_capacity(dim))),
        )
        .collect();
    let mut col = Vec::with_capacity(n);
    for d in 0..dim {
        col.clear();
        col.extend(rows.iter().map(|r| r[d]));
        col.sort_by(f64::total_cmp);
        let mean = col.iter().sum::<f64>() / n as f64;
        let var = col.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        out[0].1.push(col[0]);
        out[1].1.push(col[n - 1]);
        out[2].1.push(mean);
        out[3].1.push(var.sqrt());
        for (k, (_, q)) in QUANTILES.iter().enumerate() {
            out[4 + k]
                .1
                .push(bagscope_stats::quantile_sorted_f64(&col, *q));
        }
    }
    let mut m: serde_json::Map<String, serde_json::Value> = out
        .into_iter()
        .map(|(k, v)| (k, serde_json::json!(v)))
        .collect();
    m.insert("count".into(), serde_json::json!([n]));
    m
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
    fn new(out: &Path) -> Result<Stage, Error> {
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "lerobot".into());
        let dir = out.with_file_name(format!(".{name}.bagscope-staging.tmp"));
        let io = |e: std::io::Error| {
            Error::write_failed(&dir, format!("cannot write {}", dir.display()), e)
        };
        if let Some(p) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(p).map_err(io)?;
        }
        crate::outfile::create_temp_dir(&dir).map_err(io)?;
        Ok(Stage { dir, done: false })
    }

    fn path(&self, rel: impl AsRef<Path>) -> std::path::PathBuf {
        self.dir.join(rel)
    }

    /// Moves the complete dataset to `out`, which is new or an empty folder ([`check_target`],
    /// checked again here: something may have appeared meanwhile).
    fn commit(mut self, out: &Path) -> Result<(), Error> {
        check_target(out)?;
        let io = |e: std::io::Error| {
            Error::write_failed(out, format!("cannot write {}", out.display()), e)
        };
        if out.is_dir() {
            std::fs::remove_dir(out).map_err(io)?;
        }
        std::fs::rename(&self.dir, out).map_err(io)?;
        crate::outfile::forget(&self.dir);
        self.done = true;
        Ok(())
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if !self.done {
            crate::outfile::discard(&self.dir);
        }
    }
}

/// Writes one table as Parquet at `path` (with file-level `metadata`).
fn write_table(
    path: &Path,
    cols: Vec<(String, Col)>,
    metadata: Vec<(String, String)>,
) -> Result<(), Error> {
    let df = frame(cols)?;
    let mut w = TableWriter::new(path, Format::Parquet).with_metadata(metadata);
    if df.height() > 0 {
        w.write(&df)?;
    }
    w.finish(&df)?;
    Ok(())
}

/// What is in `dir`, for an error message: up to five entries by name (folders with a `/`),
/// and how many more.
fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        format!("{n}/")
                    } else {
                        n
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let more = names.len().saturating_sub(5);
    names.truncate(5);
    let mut s = names.join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Whether `dir` holds anything (an unreadable folder counts as holding something).
pub(crate) fn non_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut rd| rd.next().is_some())
}

/// The rule for the dataset's folder `out` (`OUT/lerobot`): a new path or an empty folder. A
/// LeRobot dataset is one whole (`info.json` counts the frames of every data file), so
/// writing into one that is there would mix the old files with the new (a second run once left
/// 687 rows in `data/` beside an `info.json` of 229 frames); the error names the folder and
/// what is in it. Checked before the bag is read ([`crate::observe::check_outputs`]) and again
/// by [`write_lerobot`].
pub fn check_target(out: &Path) -> Result<(), Error> {
    crate::refuse_output_dir(out)?;
    if out.is_dir() && non_empty(out) {
        return Err(Error::refused_output(
            out,
            format!(
                "`layout` lerobot: {} is not empty ({}): a LeRobot dataset is written whole \
                 into a new or empty folder, never mixed with the files of another; remove it \
                 or write to another `out`",
                out.display(),
                listing(out)
            ),
        ));
    }
    Ok(())
}

/// Writes the observations as a LeRobot v3.0 dataset of one episode under `out` (see the
/// module's documentation), which must be a new path or an empty folder ([`check_target`]). `action_topic` is a state entry of the contract (a command topic
/// with `mode: hold`); every other state topic goes into `observation.state`. Refuses an
/// empty episode, an observation without the action or a state value (an `optional` state
/// that was missing), and a state whose shape changes over the episode: LeRobot frames are
/// complete vectors of one shape.
#[allow(clippy::too_many_lines)] // To split once lerobot.rs is being reworked to stream (issue 44).
pub fn write_lerobot(
    bag: &Bag,
    r: &ObserveCommandReport,
    out: &Path,
    action_topic: &str,
    task: &str,
) -> Result<LeRobotLayout, Error> {
    check_target(out)?;
    let rep = &r.report;
    let a = rep
        .state_topics
        .iter()
        .position(|t| t == action_topic)
        .ok_or_else(|| {
            Error::invalid(
                "action",
                format!("{action_topic}: not a state topic of the contract (add it under state:, e.g. with mode: hold)"),
            )
        })?;
    let obs = &rep.observations;
    if obs.is_empty() {
        return Err(Error::no_data(
            "`layout` lerobot: no observation was built (the summary's drops and rejections.parquet say why), and a LeRobot episode needs at least one frame",
        ));
    }
    let data = out.join(DATA_FILE);
    let info = out.join("meta/info.json");
    let stats_path = out.join("meta/stats.json");
    let tasks = out.join("meta/tasks.parquet");
    let episodes = out.join(EPISODES_FILE);
    let written = [&data, &info, &stats_path, &tasks, &episodes];
    crate::refuse_outputs(bag, &written.map(|p| p.as_path()))?;

    let mut state = VectorFeature {
        rows: Vec::with_capacity(obs.len()),
        names: Vec::new(),
    };
    let mut action = VectorFeature {
        rows: Vec::with_capacity(obs.len()),
        names: Vec::new(),
    };
    for o in obs {
        let missing = |s: usize| {
            Error::no_data(format!(
                "`layout` lerobot: observation {} (anchor index {}) has no value of {} (an optional state that was missing); \
                 a LeRobot frame needs every value: make it required or leave it out of the contract",
                o.observation_id, o.anchor_index, rep.state_topics[s]
            ))
        };
        let (mut v, mut names) = (Vec::new(), Vec::new());
        for s in (0..rep.state_topics.len()).filter(|&s| s != a) {
            let (x, n) = flat_state(rep, s, o).ok_or_else(|| missing(s))?;
            v.extend(x);
            names.extend(
                n.into_iter()
                    .map(|n| format!("{}.{n}", rep.state_topics[s])),
            );
        }
        state.push("observation.state", v, names)?;
        let (x, n) = flat_state(rep, a, o).ok_or_else(|| missing(a))?;
        action.push("action", x, n)?;
    }
    let n = obs.len();
    let t0 = obs[0].anchor_stamp_ns;
    let mut periods: Vec<i64> = obs
        .windows(2)
        .map(|w| w[1].anchor_stamp_ns - w[0].anchor_stamp_ns)
        .filter(|&d| d > 0)
        .collect();
    let fps = bagscope_stats::median_in_place(&mut periods)
        .map_or(1, |p| ((1e9 / p as f64).round() as u32).max(1));
    let timestamp: Vec<f64> = obs
        .iter()
        .map(|o| (o.anchor_stamp_ns - t0) as f64 / 1e9)
        .collect();
    let frame_index: Vec<i64> = (0..n as i64).collect();

    // Statistics of every numeric feature, as LeRobot computes them for its `stats.json`.
    let scalar = |xs: &[f64]| xs.iter().map(|x| vec![*x]).collect::<Vec<_>>();
    let as_f64 = |xs: &[i64]| xs.iter().map(|x| *x as f64).collect::<Vec<_>>();
    let zeros = vec![0.0; n];
    let mut all_stats = serde_json::Map::new();
    for (name, rows, dim) in [
        ("observation.state", &state.rows, state.names.len()),
        ("action", &action.rows, action.names.len()),
    ] {
        all_stats.insert(name.into(), serde_json::Value::Object(stats(rows, dim)));
    }
    for (name, rows) in [
        ("timestamp", scalar(&timestamp)),
        ("frame_index", scalar(&as_f64(&frame_index))),
        ("episode_index", scalar(&zeros)),
        ("index", scalar(&as_f64(&frame_index))),
        ("task_index", scalar(&zeros)),
    ] {
        all_stats.insert(name.into(), serde_json::Value::Object(stats(&rows, 1)));
    }

    let mut features = serde_json::json!({
        "observation.state": {"dtype": "float64", "shape": [state.names.len()], "names": state.names},
        "action": {"dtype": "float64", "shape": [action.names.len()], "names": action.names},
        "timestamp": {"dtype": "float64", "shape": [1], "names": null},
        "frame_index": {"dtype": "int64", "shape": [1], "names": null},
        "episode_index": {"dtype": "int64", "shape": [1], "names": null},
        "index": {"dtype": "int64", "shape": [1], "names": null},
        "task_index": {"dtype": "int64", "shape": [1], "names": null},
    });
    let some = |v: Vec<i64>| v.into_iter().map(Some).collect::<Vec<_>>();
    let mut cols: Vec<(String, Col)> = vec![
        (
            "observation.state".into(),
            Col::F64List(state.rows.into_iter().map(Some).collect()),
        ),
        (
            "action".into(),
            Col::F64List(action.rows.into_iter().map(Some).collect()),
        ),
        (
            "timestamp".into(),
            Col::F64(timestamp.into_iter().map(Some).collect()),
        ),
        ("frame_index".into(), Col::I64(some(frame_index.clone()))),
        ("episode_index".into(), Col::I64(vec![Some(0); n])),
        ("index".into(), Col::I64(some(frame_index))),
        ("task_index".into(), Col::I64(vec![Some(0); n])),
    ];
    for (k, t) in std::iter::once(&rep.anchor_topic)
        .chain(&rep.member_topics)
        .enumerate()
    {
        let name = format!("image_ref.{}", t.trim_start_matches('/').replace('/', "."));
        let refs = obs
            .iter()
            .map(|o| {
                let idx = if k == 0 {
                    o.anchor_index
                } else {
                    o.members[k - 1].index
                };
                Some(format!("{t}#{idx}"))
            })
            .collect();
        cols.push((name.clone(), Col::Str(refs)));
        if let Some(m) = features.as_object_mut() {
            m.insert(
                name,
                serde_json::json!({"dtype": "string", "shape": [1], "names": null}),
            );
        }
    }
    // Written whole into a staging folder beside `out` and renamed into place when complete:
    // a failed or interrupted run leaves no half dataset (the stage is removed, also on
    // Ctrl-C: `outfile::remove_live`).
    let stage = Stage::new(out)?;
    write_table(&stage.path(DATA_FILE), cols, Vec::new())?;

    let mut ep_cols: Vec<(String, Col)> = vec![
        ("episode_index".into(), Col::I64(vec![Some(0)])),
        (
            "tasks".into(),
            Col::StrList(vec![Some(vec![task.to_string()])]),
        ),
        ("length".into(), Col::I64(vec![Some(n as i64)])),
        ("data/chunk_index".into(), Col::I64(vec![Some(0)])),
        ("data/file_index".into(), Col::I64(vec![Some(0)])),
        ("dataset_from_index".into(), Col::I64(vec![Some(0)])),
        ("dataset_to_index".into(), Col::I64(vec![Some(n as i64)])),
        ("meta/episodes/chunk_index".into(), Col::I64(vec![Some(0)])),
        ("meta/episodes/file_index".into(), Col::I64(vec![Some(0)])),
    ];
    ep_cols.extend(stats_columns(&all_stats));
    write_table(&stage.path(EPISODES_FILE), ep_cols, Vec::new())?;
    write_table(
        &stage.path("meta/tasks.parquet"),
        vec![
            ("task_index".into(), Col::I64(vec![Some(0)])),
            (
                "__index_level_0__".into(),
                Col::Str(vec![Some(task.to_string())]),
            ),
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
    let io = |p: &Path, e: std::io::Error| {
        Error::write_failed(p, format!("cannot write {}", p.display()), e)
    };
    let meta = stage.path("meta");
    std::fs::create_dir_all(&meta).map_err(|e| io(&meta, e))?;
    for (p, v) in [
        (&info, info_v),
        (&stats_path, serde_json::Value::Object(all_stats)),
    ] {
        let rel = p.strip_prefix(out).unwrap_or(p);
        std::fs::write(stage.path(rel), format!("{v:#}\n")).map_err(|e| io(p, e))?;
    }
    stage.commit(out)?;
    Ok(LeRobotLayout {
        codebase_version: CODEBASE_VERSION.into(),
        data: data.display().to_string(),
        meta: [&info, &stats_path, &tasks, &episodes]
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        frames: n,
        fps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
