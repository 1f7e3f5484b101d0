//! `bagscope batch`: info, clocks (and optionally report) over many bags in parallel, with
//! per-bag JSON, one hive-partitioned timing table and a summary table.
//!
//! Layout under OUT_DIR:
//! * `bags/<name>/info.json`, `bags/<name>/clocks.json` (and `bags/<name>/report/` with
//!   `--report`): exactly what `bagscope info --json` / `clocks --json` print;
//! * `timing/bag=<name>/part-0.parquet`: the `--timing-only` export without its `bag` column
//!   (the partition directory carries it);
//! * `summary.parquet`: one row per bag and topic ([`bagscope_tables::summary::SummaryRow`]),
//!   read back from the per-bag JSON files (so the two always agree, for bags done in this run
//!   or an earlier one);
//! * `batch.json`: every bag's outcome (ok / skipped / failed with the reason).
//!
//! Resumable: a bag whose outputs all exist and whose `bags/<name>/source.json` (written last)
//! names the same bag, by canonical path and a fingerprint of its files
//! ([`crate::batch_inputs`]), is skipped; any other is redone (another bag that sanitised to the
//! same name, a bag that grew or changed since it was read). Outputs are written to temporary
//! names and renamed, so an interrupted bag is redone. Entries that look like bags but cannot be
//! read (broken links, FIFOs, links to folders that are not bags) are listed as skipped with
//! the reason.
//! A bag that fails (cannot be opened, or anything else) is recorded and the others go on.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use bagscope_clocks::ClocksOptions;
use bagscope_tables::polars::prelude::DataFrame;
use bagscope_tables::summary::SummaryRow;
use bagscope_tables::{Format, TableWriter};

use crate::export::{export_known, sanitize, ExportOptions, KnownClocks};
use crate::Error;
use bagscope_bag::Bag;

/// Writes one bag's report page into a folder and says whether it met data loss. `batch` takes
/// the page writer as a function because the page is laid out by `bagscope-report`, which is
/// built on this library.
pub type PageWriter = fn(bag: &Path, out_dir: &Path) -> Result<bool, String>;

/// What `batch` reads and where it writes.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Directories (searched recursively), bag paths, or glob patterns (`*`, `?`, `**`).
    pub inputs: Vec<PathBuf>,
    /// The folder the outputs go to (created if missing; see the module docs for the layout).
    pub out_dir: PathBuf,
    /// Bags processed at once (each bag's own scan is parallel too).
    pub jobs: usize,
    /// Also write each bag's report page into `bags/<name>/report/` with this function (the
    /// CLI passes `bagscope_report::batch_page`).
    pub report: Option<PageWriter>,
    /// Redo bags whose outputs are up to date (default: skip them).
    pub force: bool,
    /// Set (by Ctrl-C) to stop starting bags: the bags in progress finish, so every output
    /// on disk is whole and a later run resumes.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// A bag found under the inputs.
#[derive(Debug, Clone, Serialize)]
pub struct BagJob {
    /// Unique, path-safe name: the path below the input's parent, `/` → `.`.
    pub name: String,
    /// The bag's path as found under the inputs.
    pub path: PathBuf,
    /// Total size of its files (a folder's files directly inside it).
    pub size_bytes: u64,
}

/// What became of one bag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Read and its outputs written in this run.
    Ok,
    /// Not read: its outputs were up to date, or it cannot be read as a bag (`reason` says why).
    Skipped,
    /// Reading it or writing its outputs failed (`reason` says why); its outputs are removed.
    Failed,
}

/// One bag's outcome (`bags` in `batch.json` and `batch --json`).
#[derive(Debug, Clone, Serialize)]
pub struct BagOutcome {
    /// Its output folder's name under `bags/`.
    pub name: String,
    /// The bag's path.
    pub path: String,
    /// Total size of its files (in object storage, of its data files as opened; 0 for an
    /// object-storage bag skipped as up to date).
    pub size_bytes: u64,
    /// Done, skipped or failed.
    pub status: Status,
    /// Why it failed, or why an entry that looks like a bag was not read; None otherwise.
    pub reason: Option<String>,
    /// A warning of `info`, `clocks`, the timing export or the report page said messages were
    /// lost (for a skipped bag: as recorded in its earlier outputs).
    pub data_loss: bool,
    /// The first such warning, `code: message` (the bag was read as far as it goes).
    pub data_loss_warning: Option<String>,
    /// Wall-clock seconds spent on the bag in this run.
    pub seconds: f64,
}

/// `bagscope batch`: every bag's outcome (the CLI's `batch --json`, also written as
/// `batch.json`).
#[derive(Debug, Clone, Serialize)]
pub struct BatchReport {
    /// The output folder.
    pub out_dir: String,
    /// The bags started, in path order, then the entries skipped as unreadable.
    pub bags: Vec<BagOutcome>,
    /// Rows of `summary.parquet` (one per bag and topic).
    pub summary_rows: u64,
    /// Stopped before every bag was started (Ctrl-C): `not_started` bags remain.
    pub interrupted: bool,
    /// Bags found but not started because the run was stopped.
    pub not_started: usize,
}

impl BatchReport {
    /// The bags that failed.
    pub fn failed(&self) -> impl Iterator<Item = &BagOutcome> {
        self.bags.iter().filter(|b| b.status == Status::Failed)
    }
}

/// Progress events, from the worker threads.
#[derive(Debug)]
pub enum Progress<'a> {
    /// Before the first bag starts.
    Start {
        /// Bags found.
        total: usize,
        /// Their total size.
        total_bytes: u64,
    },
    /// A bag is finished (done, skipped or failed).
    Done {
        /// What became of it.
        outcome: &'a BagOutcome,
        /// Bags finished so far, this one included.
        done: usize,
        /// Bags found.
        total: usize,
        /// Size of the bags finished so far.
        done_bytes: u64,
        /// Size of all bags found.
        total_bytes: u64,
    },
}

use crate::batch_inputs::{is_bag_file, walk, SourceRecord};

const MAX_DEPTH: usize = 64;

/// `*` and `?` within one path component, `**` across components.
fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    match pat.first() {
        None => s.is_empty(),
        Some(b'*') if pat.get(1) == Some(&b'*') => {
            let rest = pat[2..].strip_prefix(b"/").unwrap_or(&pat[2..]);
            (0..=s.len()).any(|i| glob_match(rest, &s[i..]))
        }
        Some(b'*') => {
            let mut i = 0;
            loop {
                if glob_match(&pat[1..], &s[i..]) {
                    return true;
                }
                if i >= s.len() || s[i] == b'/' {
                    return false;
                }
                i += 1;
            }
        }
        Some(b'?') => !s.is_empty() && s[0] != b'/' && glob_match(&pat[1..], &s[1..]),
        Some(c) => s.first() == Some(c) && glob_match(&pat[1..], &s[1..]),
    }
}

fn has_glob(p: &str) -> bool {
    p.contains(['*', '?'])
}

/// Expands one input to (root used for naming, bag paths).
fn expand(
    input: &Path,
    skipped: &mut Vec<(PathBuf, String)>,
) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
    let s = input.to_string_lossy().to_string();
    // A URL of object storage names one bag (an object, or a rosbag2 folder's prefix).
    if bagscope_bag::is_remote_path(input) {
        let root = input.parent().map(Path::to_path_buf).unwrap_or_default();
        return Ok(vec![(root, input.to_path_buf())]);
    }
    if !input.exists() && has_glob(&s) {
        // The literal prefix before the first wildcard component is where the walk starts.
        let comps: Vec<&str> = s.split('/').collect();
        let k = comps
            .iter()
            .position(|c| has_glob(c))
            .unwrap_or(comps.len());
        let base = comps[..k].join("/");
        let base = if base.is_empty() && s.starts_with('/') {
            PathBuf::from("/")
        } else if base.is_empty() {
            PathBuf::from(".")
        } else {
            PathBuf::from(base)
        };
        let mut found = Vec::new();
        let mut cands = Vec::new();
        collect_all(&base, 0, &mut cands);
        for c in cands {
            let cs = c.to_string_lossy().to_string();
            let cs = cs.strip_prefix("./").unwrap_or(&cs).to_string();
            let ps = s.strip_prefix("./").unwrap_or(&s);
            if glob_match(ps.as_bytes(), cs.as_bytes()) {
                let mut bags = Vec::new();
                if c.is_dir() {
                    walk(&c, 0, &mut bags, skipped);
                } else if is_bag_file(&c) {
                    bags.push(c.clone());
                }
                let root = c.parent().map(Path::to_path_buf).unwrap_or_default();
                found.extend(bags.into_iter().map(|b| (root.clone(), b)));
            }
        }
        return Ok(found);
    }
    let meta = std::fs::metadata(input).map_err(|source| {
        Error::Bag(bagscope_bag::BagError::Io {
            path: input.to_path_buf(),
            source,
        })
    })?;
    let root = input.parent().map(Path::to_path_buf).unwrap_or_default();
    if meta.is_dir() {
        let mut bags = Vec::new();
        walk(input, 0, &mut bags, skipped);
        Ok(bags.into_iter().map(|b| (root.clone(), b)).collect())
    } else {
        Ok(vec![(root, input.to_path_buf())])
    }
}

/// Every file and directory under `dir` (for glob matching), bounded in depth.
fn collect_all(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        out.push(p.clone());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            collect_all(&p, depth + 1, out);
        }
    }
}

fn bag_files(p: &Path) -> Vec<PathBuf> {
    if p.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        v.push(p.to_path_buf());
        v
    } else {
        vec![p.to_path_buf()]
    }
}

/// Finds the bags under the inputs, sorted by path, with unique names.
pub fn discover(inputs: &[PathBuf]) -> Result<Vec<BagJob>, Error> {
    Ok(discover_with_skipped(inputs)?.0)
}

/// Entries that look like bags but are not read, each with the reason.
pub type NotRead = Vec<(PathBuf, String)>;

/// [`discover`], and the entries that look like bags but are not read.
pub fn discover_with_skipped(inputs: &[PathBuf]) -> Result<(Vec<BagJob>, NotRead), Error> {
    let mut found: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut skipped = Vec::new();
    for i in inputs {
        found.extend(expand(i, &mut skipped)?);
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    found.dedup_by(|a, b| a.1 == b.1);
    // A bag reached twice (through a link and by its own path) is read once.
    let mut seen = BTreeSet::new();
    found.retain(|(_, p)| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    skipped.sort();
    skipped.dedup();
    let mut names = BTreeSet::new();
    let mut jobs = Vec::new();
    for (root, path) in found {
        let rel = path.strip_prefix(&root).unwrap_or(&path);
        let mut rel = rel.to_string_lossy().to_string();
        for ext in [".mcap.zstd", ".mcap"] {
            if let Some(s) = rel.strip_suffix(ext) {
                rel = s.to_string();
                break;
            }
        }
        let base = sanitize(&rel);
        let mut name = base.clone();
        let mut k = 1;
        while !names.insert(name.clone()) {
            k += 1;
            name = format!("{base}~{k}");
        }
        let size_bytes = bag_files(&path)
            .iter()
            .filter(|f| f.is_file())
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        jobs.push(BagJob {
            name,
            path,
            size_bytes,
        });
    }
    Ok((jobs, skipped))
}

struct Outputs {
    dir: PathBuf,
    /// What the outputs were made from ([`SourceRecord`]), written last.
    source: PathBuf,
    info: PathBuf,
    clocks: PathBuf,
    timing: PathBuf,
    report: PathBuf,
}

fn outputs(out_dir: &Path, name: &str) -> Outputs {
    let dir = out_dir.join("bags").join(name);
    Outputs {
        info: dir.join("info.json"),
        source: dir.join("source.json"),
        clocks: dir.join("clocks.json"),
        report: dir.join("report"),
        timing: out_dir
            .join("timing")
            .join(format!("bag={name}"))
            .join("part-0.parquet"),
        dir,
    }
}

fn up_to_date(job: &BagJob, out: &Outputs, report: bool) -> bool {
    let mut outs = vec![&out.info, &out.clocks, &out.timing];
    let report_json = out.report.join("report.json");
    if report {
        outs.push(&report_json);
    }
    outs.iter().all(|o| o.is_file()) && SourceRecord::matches(&out.source, &job.path)
}

fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.tmp");
    bagscope_bag::outfile::check_output_file(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&tmp, text + "\n")
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The first data-loss warning of a report's `warnings`, as `code: message`.
fn first_loss(warnings: &[bagscope_bag::Warning]) -> Option<String> {
    let w = warnings.iter().find(|w| w.data_loss)?;
    Some(loss_text(w.code.as_str(), &w.message))
}

/// How `batch` names a data-loss warning: `code: message`.
fn loss_text(code: &str, message: &str) -> String {
    format!("{code}: {message}")
}

/// Runs one bag; `Err` is the failure reason. Ok: the first data-loss warning, if any.
/// Reads one bag and writes its outputs: the data loss to report, if any, and the bag's size
/// as read (an object in object storage has no size until it is opened).
fn process(job: &BagJob, o: &BatchOptions) -> Result<(Option<String>, u64), String> {
    let out = outputs(&o.out_dir, &job.name);
    std::fs::create_dir_all(&out.dir).map_err(|e| format!("{}: {e}", out.dir.display()))?;
    // Taken before reading: a bag that changes while it is read (still being recorded) no
    // longer matches it afterwards, so the next run redoes it.
    let _ = std::fs::remove_file(&out.source);
    let source = SourceRecord::of(&job.path);
    // One open for all three, and one scan of every topic's times for both `clocks` and the
    // timing table's clock axes: what `info`, `clocks` and `export` of the path would give.
    let bag = Bag::open(&job.path).map_err(|e| Error::from(e).to_string())?;
    let info = crate::info::info_of(&bag);
    let (series, scan_warnings, tf) = crate::series::scan_series_and_tf(&bag, &bag.all_topics());
    let clocks = crate::clocks::clocks_data_from(
        &bag,
        &ClocksOptions::default(),
        crate::clocks::times_of_series(series),
        scan_warnings.clone(),
        tf,
    )
    .map_err(|e| e.to_string())?
    .report;
    let eo = ExportOptions {
        timing_only: true,
        bag_column: false,
        bag_name: Some(job.name.clone()),
        ..Default::default()
    };
    let known = KnownClocks {
        topics: &clocks.topics,
        scan_warnings,
    };
    let ex = export_known(&bag, &out.timing, &eo, Some(known)).map_err(|e| e.to_string())?;
    let size_bytes = bag.size_bytes();
    drop(bag);
    let mut loss = first_loss(&info.warnings)
        .or_else(|| first_loss(&clocks.warnings))
        .or_else(|| first_loss(&ex.warnings));
    if let Some(page) = o.report {
        let data_loss = page(&job.path, &out.report).map_err(|e| format!("report: {e}"))?;
        if loss.is_none() && data_loss {
            loss = Some("report: data loss".into());
        }
    }
    // JSON last: the skip check needs every output, so a bag cut short is redone.
    write_json(&out.clocks, &clocks)?;
    write_json(&out.info, &info)?;
    if let Some(source) = source {
        write_json(&out.source, &source)?;
    }
    Ok((loss, size_bytes))
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Data loss recorded in an earlier run's info.json / clocks.json.
fn json_loss(out: &Outputs) -> Option<String> {
    let warnings = read_report::<SavedReport>(&out.info)
        .into_iter()
        .chain(read_report::<SavedReport>(&out.clocks))
        .flat_map(|r| r.warnings);
    warnings
        .into_iter()
        .find(|w| w.data_loss)
        .map(|w| loss_text(&w.code, &w.message))
}

/// A report `batch` wrote, read back as `T`; `None` when it is missing or not such a report.
fn read_report<T: serde::de::DeserializeOwned>(p: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(p).ok()?).ok()
}

/// `bagscope batch`: `info`, `clocks`, the timing export (and with `o.report` the report
/// page) of every bag found under the inputs, `o.jobs` bags at a time, then the summary table
/// and `batch.json`. A bag that fails is recorded and the others go on; `progress` is called
/// from the worker threads.
pub fn batch(
    o: &BatchOptions,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<BatchReport, Error> {
    let (jobs, skipped) = discover_with_skipped(&o.inputs)?;
    crate::refuse_output_dir(&o.out_dir)?;
    std::fs::create_dir_all(&o.out_dir).map_err(|source| {
        Error::Bag(bagscope_bag::BagError::Io {
            path: o.out_dir.clone(),
            source,
        })
    })?;
    let total = jobs.len();
    let total_bytes: u64 = jobs.iter().map(|j| j.size_bytes).sum();
    progress(Progress::Start { total, total_bytes });
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let done_bytes = AtomicU64::new(0);
    let results: Mutex<Vec<Option<BagOutcome>>> = Mutex::new(vec![None; total]);
    let workers = o.jobs.clamp(1, total.max(1));
    let work = || loop {
        if o.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            break;
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        let Some(job) = jobs.get(i) else { break };
        let t0 = Instant::now();
        let out = outputs(&o.out_dir, &job.name);
        let mut size_bytes = job.size_bytes;
        let (status, reason, data_loss) = if !o.force && up_to_date(job, &out, o.report.is_some()) {
            (Status::Skipped, None, json_loss(&out))
        } else {
            // A panic is a bug, but must not take the other bags down with it.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| process(job, o))) {
                Ok(Ok((loss, read_bytes))) => {
                    // Found on a local disk, the files' sizes; in object storage, as opened.
                    if size_bytes == 0 {
                        size_bytes = read_bytes;
                    }
                    (Status::Ok, None, loss)
                }
                Ok(Err(e)) => (Status::Failed, Some(e), None),
                Err(p) => (
                    Status::Failed,
                    Some(format!("internal error: {}", panic_text(p.as_ref()))),
                    None,
                ),
            }
        };
        if status == Status::Failed {
            // No stale outputs of an earlier success may stand for this run's failure.
            let _ = std::fs::remove_file(&out.source);
            let _ = std::fs::remove_file(&out.info);
            let _ = std::fs::remove_file(&out.clocks);
            if let Some(d) = out.timing.parent() {
                let _ = std::fs::remove_dir_all(d);
            }
        }
        let outcome = BagOutcome {
            name: job.name.clone(),
            path: job.path.display().to_string(),
            size_bytes,
            status,
            reason,
            data_loss: data_loss.is_some(),
            data_loss_warning: data_loss,
            seconds: t0.elapsed().as_secs_f64(),
        };
        let d = done.fetch_add(1, Ordering::SeqCst) + 1;
        let db = done_bytes.fetch_add(size_bytes, Ordering::SeqCst) + size_bytes;
        progress(Progress::Done {
            outcome: &outcome,
            done: d,
            total,
            done_bytes: db,
            total_bytes,
        });
        if let Ok(mut r) = results.lock() {
            r[i] = Some(outcome);
        }
    };
    // The workers run on the thread pool each bag's scans and analyses use: their parallel
    // parts start on the worker's own thread and the other threads take what they can, where
    // workers outside the pool handed every parallel part over to it and waited (for small
    // bags, most of a bag's time). More workers than the pool's threads get a pool of their
    // own.
    let run = |pool: &rayon::ThreadPool| {
        pool.scope(|s| {
            for _ in 0..workers {
                s.spawn(|_| work());
            }
        })
    };
    if workers <= rayon::current_num_threads() {
        rayon::scope(|s| {
            for _ in 0..workers {
                s.spawn(|_| work());
            }
        });
    } else {
        match rayon::ThreadPoolBuilder::new().num_threads(workers).build() {
            Ok(pool) => run(&pool),
            Err(_) => std::thread::scope(|s| {
                for _ in 0..workers {
                    s.spawn(work);
                }
            }),
        }
    }
    let mut bags: Vec<BagOutcome> = results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect();
    let not_started = total - bags.len();
    for (p, reason) in skipped {
        bags.push(BagOutcome {
            name: sanitize(&p.to_string_lossy()),
            path: p.display().to_string(),
            size_bytes: 0,
            status: Status::Skipped,
            reason: Some(reason),
            data_loss: false,
            data_loss_warning: None,
            seconds: 0.0,
        });
    }
    let summary_rows = write_summary(&o.out_dir, &bags)?;
    let report = BatchReport {
        out_dir: o.out_dir.display().to_string(),
        bags,
        summary_rows,
        interrupted: not_started > 0,
        not_started,
    };
    let json_path = o.out_dir.join("batch.json");
    write_json(&json_path, &report).map_err(|e| Error::refused_output(&json_path, e))?;
    Ok(report)
}

/// Summary table columns, in order (also the README's documentation of them).
pub use bagscope_tables::summary::SUMMARY_COLUMNS;

/// Builds `summary.parquet` from the per-bag JSON of every bag that did not fail, sorted by
/// (bag, topic, type).
fn write_summary(out_dir: &Path, bags: &[BagOutcome]) -> Result<u64, Error> {
    // Entries skipped with a reason (not bags after all) have no outputs of their own.
    let mut ok: Vec<&BagOutcome> = bags
        .iter()
        .filter(|b| b.status != Status::Failed && b.reason.is_none())
        .collect();
    ok.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rows = Vec::new();
    for b in ok {
        let out = outputs(out_dir, &b.name);
        let (Some(info), Some(clocks)) = (read_report(&out.info), read_report(&out.clocks)) else {
            continue;
        };
        rows.extend(summary_rows(&b.name, &info, &clocks));
    }
    let df = summary_frame(&rows)?;
    let mut w = TableWriter::new(&out_dir.join("summary.parquet"), Format::Parquet);
    w.write(&df)?;
    Ok(w.finish(&df)?)
}

/// A warning as `info.json` / `clocks.json` hold it: every field of
/// [`bagscope_bag::Warning`], the code as its name (so a code of another version's files is
/// still counted). Ordered over all fields, so equal warnings of both reports count once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
struct SavedWarning {
    code: String,
    topic: Option<String>,
    message: String,
    file: Option<String>,
    offset: Option<u64>,
    data_loss: bool,
}

/// The warnings of a saved report (both `info` and `clocks` reports have them).
#[derive(Debug, Deserialize)]
struct SavedReport {
    #[serde(default)]
    warnings: Vec<SavedWarning>,
}

/// What the summary reads of a saved `info --json` report.
#[derive(Debug, Deserialize)]
pub(crate) struct SavedInfo {
    storage: Option<String>,
    duration_ns: Option<i64>,
    #[serde(default)]
    topics: Vec<SavedInfoTopic>,
    #[serde(default)]
    warnings: Vec<SavedWarning>,
}

#[derive(Debug, Deserialize)]
struct SavedInfoTopic {
    topic: String,
    #[serde(rename = "type")]
    type_name: String,
    count: Option<i64>,
    rate_hz: Option<f64>,
    first_log_time_ns: Option<i64>,
    last_log_time_ns: Option<i64>,
    median_period_ns: Option<i64>,
    largest_gap_ns: Option<i64>,
}

/// What the summary reads of a saved `clocks --json` report.
#[derive(Debug, Deserialize)]
pub(crate) struct SavedClocks {
    recorder_axis: Option<String>,
    split: Option<bool>,
    #[serde(default)]
    topics: Vec<SavedClockTopic>,
    #[serde(default)]
    warnings: Vec<SavedWarning>,
}

#[derive(Debug, Deserialize)]
struct SavedClockTopic {
    topic: String,
    type_name: String,
    axis: Option<String>,
    source: Option<String>,
    lag_ns: Option<SavedLag>,
    gap_count: Option<i64>,
    backward_jumps: Option<Vec<serde::de::IgnoredAny>>,
}

#[derive(Debug, Deserialize)]
struct SavedLag {
    p50: Option<i64>,
    p95: Option<i64>,
    p99: Option<i64>,
    max: Option<i64>,
}

/// A bag's rows of the summary table (named `bag_name`), from its saved `info` and `clocks`
/// reports: one per topic of `info`, sorted by (topic, type). `warnings` counts the distinct
/// info + clocks warnings naming the topic; `bag_warnings` those naming no topic.
pub(crate) fn summary_rows(
    bag_name: &str,
    info: &SavedInfo,
    clocks: &SavedClocks,
) -> Vec<SummaryRow> {
    // Distinct warnings of both reports (bag damage appears in both).
    let warns: BTreeSet<&SavedWarning> = info.warnings.iter().chain(&clocks.warnings).collect();
    let bag_warnings = warns.iter().filter(|w| w.topic.is_none()).count() as i64;
    let data_loss = warns.iter().any(|w| w.data_loss);
    let mut topics: Vec<&SavedInfoTopic> = info.topics.iter().collect();
    topics.sort_by(|a, b| (&a.topic, &a.type_name).cmp(&(&b.topic, &b.type_name)));
    topics
        .into_iter()
        .map(|t| {
            let ck = clocks
                .topics
                .iter()
                .find(|c| c.topic == t.topic && c.type_name == t.type_name);
            let lag = ck.and_then(|c| c.lag_ns.as_ref());
            SummaryRow {
                bag: bag_name.to_string(),
                topic: t.topic.clone(),
                type_name: t.type_name.clone(),
                storage: info.storage.clone(),
                bag_duration_ns: info.duration_ns,
                recorder_axis: clocks.recorder_axis.clone(),
                split: clocks.split,
                count: t.count,
                rate_hz: t.rate_hz,
                first_log_time_ns: t.first_log_time_ns,
                last_log_time_ns: t.last_log_time_ns,
                median_period_ns: t.median_period_ns,
                largest_gap_ns: t.largest_gap_ns,
                clock_axis: ck.and_then(|c| c.axis.clone()),
                stamp_source: ck.and_then(|c| c.source.clone()),
                lag_p50_ns: lag.and_then(|l| l.p50),
                lag_p95_ns: lag.and_then(|l| l.p95),
                lag_p99_ns: lag.and_then(|l| l.p99),
                lag_max_ns: lag.and_then(|l| l.max),
                gap_count: ck.and_then(|c| c.gap_count),
                backward_jumps: ck.and_then(|c| c.backward_jumps.as_ref().map(|j| j.len() as i64)),
                warnings: warns
                    .iter()
                    .filter(|w| w.topic.as_deref() == Some(t.topic.as_str()))
                    .count() as i64,
                bag_warnings,
                data_loss,
            }
        })
        .collect()
}

/// The summary table of `rows`, in the order given (every column typed when there are none).
pub fn summary_frame(rows: &[SummaryRow]) -> Result<DataFrame, Error> {
    Ok(bagscope_tables::summary::summary_frame(rows)?)
}

/// Reads a report as `batch` reads back what it saved: through its JSON text, so floats are
/// the same to the last bit as in the file.
pub(crate) fn saved<T: serde::de::DeserializeOwned>(report: &impl Serialize) -> Result<T, Error> {
    serde_json::to_string(report)
        .and_then(|s| serde_json::from_str(&s))
        .map_err(|e| Error::no_data(format!("cannot read back a report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        let m = |p: &str, s: &str| glob_match(p.as_bytes(), s.as_bytes());
        assert!(m("runs/*.mcap", "runs/a.mcap"));
        assert!(!m("runs/*.mcap", "runs/x/a.mcap"));
        assert!(m("runs/**/*.mcap", "runs/x/y/a.mcap"));
        assert!(m("runs/**/*.mcap", "runs/a.mcap"));
        assert!(m("r?ns/a", "runs/a"));
        assert!(!m("r?ns/a", "r/ns/a"));
    }
}
