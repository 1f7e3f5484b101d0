//! The report page and every figure bagscope draws: `bagscope report` runs the library's
//! commands (info, clocks, sync, match, check) on one bag and writes a self-contained
//! `index.html`, a `report.md` with PNGs beside it, and a `report.json` with every number shown;
//! `clocks`, `match`, `compare` and `hist` write their figures through it too. This crate chooses
//! the figures and words the verdicts; `bagscope-plot` draws, the `bagscope` library computes.
//! Nothing here re-implements an analysis.
//!
//! It sits above the `bagscope` library (it lays out that library's reports), so the library's
//! `batch --report` receives the page writer as a function ([`batch_page`]).
//!
//! # In the workspace
//!
//! The `report` page (HTML with inline SVG, Markdown with PNGs, `report.json`): which figures
//! to draw (worst topics first, capped), verdict wording (the verdict table: data loss and
//! findings of warning severity or worse; info-level findings one line per code below it),
//! layout; the `--plots` figures of `clocks`, `match`, `compare` and `hist`; `batch_page` for
//! `batch --report`. Lays out the facade's `report_data` (the bag opened once) and adds the
//! figures; draws through `bagscope-plot`; computes nothing itself.
//!
//! Notable dependencies: `bagscope` (and through it every crate it re-exports),
//! `bagscope-plot`, `rayon` (figures drawn in parallel).

mod observations;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use bagscope::match_analysis::{tracking_error_series, ErrorSeries, JointSeries, MatchOptions};
use bagscope::text::{file_stem_for_topic, md_escape, visible};
use bagscope::{outfile, Warning};
use bagscope_plot::{Figure, HistChart, Line, LineChart, Marker, Scale};

pub use bagscope::bag_name;
use bagscope::check::CheckReport;
use bagscope::clocks::{clocks_data, ClocksCommandReport, ClocksData};
use bagscope::findings::Severity;
use bagscope::hist::{lag_distributions, DistKind, Distribution, HistOptions, HistReport};
use bagscope::matching::{
    compare_series, match_bag_series, CompareCommandReport, MatchArgs, MatchCommandReport,
};
pub use bagscope::report::{
    DelayVerdict, MatchEntry, ObservationsEntry, ReportData, SyncEntry, SyncVerdict, Verdicts,
    MAX_SYNC_PAIRS,
};

/// Why a report or a figure could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or analysing the bag failed.
    #[error(transparent)]
    Bag(#[from] bagscope::Error),
    /// Drawing a figure failed.
    #[error(transparent)]
    Draw(#[from] bagscope_plot::PlotError),
    /// Writing an output file failed.
    #[error("cannot write {}", path.display())]
    Io {
        /// The file or folder that could not be written.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The report could not be serialised as JSON.
    #[error("cannot serialise the report")]
    Json(#[source] serde_json::Error),
}

/// One figure with a stable id (file stem and HTML element id suffix; made of
/// `[A-Za-z0-9_.-]`, topic names through [`file_stem_for_topic`]).
#[derive(Debug, Clone)]
pub struct Plot {
    /// The figure's id: its PNG file stem, unique within a page.
    pub id: String,
    /// A caption for the page (control characters written out).
    pub title: String,
    /// What to draw.
    pub figure: Figure,
}

// ------------------------------------------------------------------ figures

fn scale_for(values: &[i64]) -> Scale {
    // Distributions spanning seconds read better in seconds than in thousands of ms.
    let span = match (values.iter().min(), values.iter().max()) {
        (Some(&a), Some(&b)) => b as i128 - a as i128,
        _ => 0,
    };
    if span > 5_000_000_000 {
        Scale::Seconds
    } else {
        Scale::Millis
    }
}

/// A histogram panel of one distribution, modes marked.
pub fn dist_chart(d: &Distribution) -> Figure {
    let (start, width, counts, outside) = match &d.bins {
        Some(b) => (
            b.start_ns,
            b.bin_width_ns,
            b.counts.clone(),
            b.below + b.above,
        ),
        None => (0, 1, Vec::new(), 0),
    };
    let edge = [
        start,
        start.saturating_add(width.saturating_mul(counts.len() as i64)),
    ];
    let mut notes = Vec::new();
    if d.bimodal {
        notes.push(format!("{} modes", d.modes_ns.len()));
    }
    if outside > 0 {
        notes.push(format!("{outside} outside"));
    }
    if d.bins.is_none() {
        notes.push("no data".into());
    }
    Figure::Hist(HistChart {
        title: visible(&d.title()).into_owned(),
        x_label: match d.kind {
            DistKind::StampDiff => "partner stamp − stamp",
            DistKind::Period => "period",
            DistKind::Lag => "log_time − stamp",
        }
        .into(),
        x_scale: scale_for(&edge),
        start_ns: start,
        bin_width_ns: width,
        counts,
        modes_ns: d.modes_ns.clone(),
        note: (!notes.is_empty()).then(|| notes.join(", ")),
    })
}

/// All distributions of a `hist` run, two panels per row.
pub fn hist_figure(r: &HistReport) -> Figure {
    Figure::Grid {
        title: visible(&format!(
            "{}: {}",
            bag_name(Path::new(&r.bag)),
            r.topics.join(", ")
        ))
        .into_owned(),
        cols: 2,
        panels: r.distributions.iter().map(dist_chart).collect(),
    }
}

fn lag_plot(d: &Distribution, x: &[i64], y: &[i64]) -> Plot {
    let t0 = x.first().copied().unwrap_or(0);
    let y_scale = match scale_for(y) {
        Scale::Seconds => Scale::Seconds,
        _ => Scale::Millis,
    };
    // Only the points the chart draws (a few thousand of a long series): the same picture.
    let (x_drawn, y_drawn) = bagscope_plot::drawn_points(x, y, y_scale);
    let over_time = Figure::Line(LineChart {
        title: format!("lag over time {}", visible(&d.topic)),
        x_label: "log time since first message".into(),
        y_label: if d.note.is_some() {
            "log_time − stamp − median".into()
        } else {
            "log_time − stamp".into()
        },
        x_scale: Scale::Seconds,
        y_scale,
        lines: vec![Line {
            label: String::new(),
            x_ns: x_drawn.iter().map(|v| v.saturating_sub(t0)).collect(),
            y: y_drawn,
            points: true,
        }],
        markers: Vec::new(),
    });
    Plot {
        id: format!("lag-{}", file_stem_for_topic(&d.topic)),
        title: format!("Lag of {}", visible(&d.topic)),
        figure: Figure::Grid {
            title: format!("{} lag (log_time − stamp)", visible(&d.topic)),
            cols: 2,
            panels: vec![over_time, dist_chart(d)],
        },
    }
}

/// Per topic with a lag: lag over time and its histogram with the modes marked.
pub fn clock_plots(d: &ClocksData) -> Vec<Plot> {
    let lags = lag_distributions(d, 60);
    worst_lags(&lags, &d.report.warnings)
        .0
        .into_iter()
        .map(|(dist, x, y)| lag_plot(dist, x, y))
        .collect()
}

/// Most topics whose lag the report draws: a bag of thousands of topics would otherwise make
/// thousands of pictures and a page of gigabytes. The worst are drawn (named in findings first,
/// then the widest lag spread); the rest are in the tables.
pub const MAX_PLOTTED_TOPICS: usize = 64;

type LagSeries = (Distribution, Vec<i64>, Vec<i64>);

/// The lag series to draw (at most [`MAX_PLOTTED_TOPICS`], in topic order) and the topics left
/// undrawn, sorted.
fn worst_lags<'a>(
    lags: &'a [LagSeries],
    warnings: &[Warning],
) -> (Vec<&'a LagSeries>, Vec<String>) {
    let mut drawn: Vec<&LagSeries> = lags
        .iter()
        .filter(|(_, _, y)| y.len() >= MIN_PLOT_MESSAGES)
        .collect();
    if drawn.len() <= MAX_PLOTTED_TOPICS {
        return (drawn, Vec::new());
    }
    let flagged: std::collections::BTreeSet<&str> = warnings
        .iter()
        .filter(|w| bagscope::findings::severity_of(w.code.as_str(), w.data_loss) != Severity::Info)
        .filter_map(|w| w.topic.as_deref())
        .collect();
    let spread = |d: &Distribution| d.summary.map_or(0, |s| s.p99.saturating_sub(s.p50));
    drawn.sort_by(|a, b| {
        flagged
            .contains(b.0.topic.as_str())
            .cmp(&flagged.contains(a.0.topic.as_str()))
            .then(spread(&b.0).cmp(&spread(&a.0)))
            .then(a.0.topic.cmp(&b.0.topic))
    });
    let mut rest: Vec<String> = drawn[MAX_PLOTTED_TOPICS..]
        .iter()
        .map(|l| l.0.topic.clone())
        .collect();
    rest.sort();
    drawn.truncate(MAX_PLOTTED_TOPICS);
    drawn.sort_by(|a, b| a.0.topic.cmp(&b.0.topic));
    (drawn, rest)
}

/// Fewest messages a topic's lag is plotted for: a handful of points makes a near-empty
/// picture; its numbers are in the tables.
const MIN_PLOT_MESSAGES: usize = 10;

/// One joint's (time, value) samples, in time order.
fn joint_track(s: &JointSeries, joint: &str) -> (Vec<i64>, Vec<f64>) {
    let mut pts: Vec<(i64, f64)> = Vec::new();
    for (k, names) in s.names.iter().enumerate() {
        let (Some(&t), Some(vals)) = (s.stamp_ns.get(k), s.values.get(k)) else {
            continue;
        };
        if let Some(v) = names
            .iter()
            .position(|n| n == joint)
            .and_then(|i| vals.get(i))
        {
            pts.push((t, *v));
        }
    }
    pts.sort_by_key(|p| p.0);
    pts.into_iter().unzip()
}

use bagscope::timefmt::ms_unit as ms;

/// Command and response per joint before and after the delay shift, the tracking error over
/// time, and the error-vs-shift curve with the chosen delay marked.
pub fn match_plots(
    r: &MatchCommandReport,
    cmd: &JointSeries,
    resp: &JointSeries,
    opts: &MatchOptions,
    prefix: &str,
) -> Vec<Plot> {
    let delay = r.report.delay_ns;
    let t0 = cmd.stamp_ns.iter().min().copied().unwrap_or(0);
    // The error lines come from the matching crate, read as the statistics beside them are.
    let (err_before, err_after) =
        tracking_error_series(cmd, resp, r.report.response_kind, delay, opts).unwrap_or_default();
    let error_line = |s: &ErrorSeries| Line {
        label: s.joint.clone(),
        x_ns: s.t_ns.iter().map(|&t| t.saturating_sub(t0)).collect(),
        y: s.error.clone(),
        points: false,
    };
    let rel = |t: &[i64], shift: i64| -> Vec<i64> {
        t.iter()
            .map(|&x| x.saturating_sub(shift).saturating_sub(t0))
            .collect()
    };
    let joints = &r.report.joints.matched;
    let mut panels = Vec::new();
    let before: Vec<Line> = err_before.iter().map(error_line).collect();
    let after: Vec<Line> = err_after.iter().map(error_line).collect();
    for j in joints {
        let (ct, cv) = joint_track(cmd, j);
        let (rt, rv) = joint_track(resp, j);
        panels.push(Figure::Line(LineChart {
            title: j.clone(),
            x_label: "time since first command".into(),
            y_label: "position".into(),
            x_scale: Scale::Seconds,
            y_scale: Scale::Raw,
            lines: vec![
                Line {
                    label: "command".into(),
                    x_ns: rel(&ct, 0),
                    y: cv.clone(),
                    points: false,
                },
                Line {
                    label: "response".into(),
                    x_ns: rel(&rt, 0),
                    y: rv.clone(),
                    points: false,
                },
                Line {
                    label: format!("response − {}", ms(delay)),
                    x_ns: rel(&rt, delay),
                    y: rv.clone(),
                    points: false,
                },
            ],
            markers: Vec::new(),
        }));
    }
    // Figure titles are drawn as text: control characters written out.
    let name = format!(
        "{} → {}",
        visible(&r.command_topic),
        visible(&r.response_topic)
    );
    let mut out = vec![Plot {
        id: format!("{prefix}joints"),
        title: format!("Command and response per joint, {name}"),
        figure: Figure::Grid {
            title: format!("{name}: command, response, response shifted by the delay"),
            cols: 2,
            panels,
        },
    }];
    let err_chart = |title: String, lines: Vec<Line>| {
        Figure::Line(LineChart {
            title,
            x_label: "time since first command".into(),
            y_label: "response − command".into(),
            x_scale: Scale::Seconds,
            y_scale: Scale::Raw,
            lines,
            markers: Vec::new(),
        })
    };
    out.push(Plot {
        id: format!("{prefix}error"),
        title: format!("Tracking error over time, {name}"),
        figure: Figure::Grid {
            title: format!("{name}: error before and after the delay shift"),
            cols: 1,
            panels: vec![
                err_chart("before (no shift)".into(), before),
                err_chart(format!("after shifting by {}", ms(delay)), after),
            ],
        },
    });
    let curve = &r.report.delay.error_curve;
    if !curve.is_empty() {
        let mut lines = vec![Line {
            label: "RMS error".into(),
            x_ns: curve.iter().map(|p| p.0).collect(),
            y: curve.iter().map(|p| p.1).collect(),
            points: false,
        }];
        let deb = &r.report.delay.error_curve_debiased;
        if !deb.is_empty() {
            lines.push(Line {
                label: "RMS error, bias removed".into(),
                x_ns: deb.iter().map(|p| p.0).collect(),
                y: deb.iter().map(|p| p.1).collect(),
                points: false,
            });
        }
        out.push(Plot {
            id: format!("{prefix}delay-curve"),
            title: format!("Error vs shift, {name}"),
            figure: Figure::Line(LineChart {
                title: format!("{name}: error vs shift"),
                x_label: "shift".into(),
                y_label: "RMS error".into(),
                x_scale: Scale::Millis,
                y_scale: Scale::Raw,
                lines,
                markers: vec![Marker {
                    x_ns: delay,
                    label: format!("delay {}", ms(delay)),
                }],
            }),
        });
    }
    out
}

/// Runs side by side (one column per run): each run's command and its response shifted by that
/// run's own delay, time relative to the run's first command.
pub fn compare_plots(r: &CompareCommandReport, runs: &bagscope::matching::RunSeries) -> Vec<Plot> {
    let mut joints: Vec<String> = Vec::new();
    for (_, c, _) in runs {
        for names in &c.names {
            for n in names.iter() {
                if !joints.contains(n) {
                    joints.push(n.clone());
                }
            }
        }
    }
    joints.sort();
    let mut panels = Vec::new();
    for j in &joints {
        for (name, c, resp) in runs {
            let delay = r
                .report
                .runs
                .iter()
                .find(|s| &s.name == name)
                .and_then(|s| s.delay_ns)
                .unwrap_or(0);
            let t0 = c.stamp_ns.iter().min().copied().unwrap_or(0);
            let (ct, cv) = joint_track(c, j);
            let (rt, rv) = joint_track(resp, j);
            let rel = |t: &[i64], s: i64| -> Vec<i64> {
                t.iter()
                    .map(|&x| x.saturating_sub(s).saturating_sub(t0))
                    .collect()
            };
            panels.push(Figure::Line(LineChart {
                title: visible(&format!("{} {j}", bag_name(Path::new(name)))).into_owned(),
                x_label: "time since first command".into(),
                y_label: "position".into(),
                x_scale: Scale::Seconds,
                y_scale: Scale::Raw,
                lines: vec![
                    Line {
                        label: "command".into(),
                        x_ns: rel(&ct, 0),
                        y: cv,
                        points: false,
                    },
                    Line {
                        label: format!("response − {}", ms(delay)),
                        x_ns: rel(&rt, delay),
                        y: rv,
                        points: false,
                    },
                ],
                markers: Vec::new(),
            }));
        }
    }
    vec![Plot {
        id: "compare-runs".into(),
        title: "Corrected responses of the runs side by side".into(),
        figure: Figure::Grid {
            title: "runs side by side: command and delay-corrected response".into(),
            cols: runs.len().max(1),
            panels,
        },
    }]
}

/// Files written into `DIR/.bagscope-staging.tmp` first and moved into `DIR` only when all of
/// them are complete: a failure (a full disk) leaves no truncated file and the files of an
/// earlier run as they were; the stage is removed on failure, on Ctrl-C
/// ([`outfile::remove_live`]), and on the next run if a kill left it.
struct Staging {
    dir: PathBuf,
    stage: PathBuf,
    /// File names in the order they are moved into place.
    names: Vec<String>,
    done: bool,
    /// The output folder, locked (`flock`) from staging to commit: two runs writing the same
    /// folder take turns, so it never holds a mix of both. Released on drop.
    _lock: Option<std::fs::File>,
}

const STAGE: &str = ".bagscope-staging.tmp";

fn io_err(p: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: p.to_path_buf(),
        source: e,
    }
}

impl Staging {
    fn new(dir: &Path) -> Result<Staging, Error> {
        outfile::check_output_dir(dir).map_err(|e| io_err(dir, e))?;
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        // A folder can be opened and locked like a file: no lock file is left behind.
        let lock = std::fs::File::open(dir).ok();
        if let Some(f) = &lock {
            f.lock().map_err(|e| io_err(dir, e))?;
        }
        let stage = dir.join(STAGE);
        outfile::create_temp_dir(&stage).map_err(|e| io_err(&stage, e))?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            stage,
            names: Vec::new(),
            done: false,
            _lock: lock,
        })
    }

    /// Where to write the file `name` now.
    fn file(&mut self, name: &str) -> PathBuf {
        self.names.push(name.to_string());
        self.stage.join(name)
    }

    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), Error> {
        let p = self.file(name);
        std::fs::write(&p, bytes).map_err(|e| io_err(&self.dir.join(name), e))
    }

    /// Moves the files into place, in the order they were written; returns their paths.
    fn commit(mut self) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        // Every name first: a device or FIFO under one of them leaves the earlier run's
        // files as they were.
        for n in &self.names {
            let to = self.dir.join(n);
            outfile::check_output_file(&to).map_err(|e| io_err(&to, e))?;
        }
        for n in &self.names {
            let to = self.dir.join(n);
            outfile::persist(&self.stage.join(n), &to).map_err(|e| io_err(&to, e))?;
            out.push(to.display().to_string());
        }
        outfile::discard(&self.stage);
        self.done = true;
        Ok(out)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            outfile::discard(&self.stage);
        }
    }
}

/// The PNG files a report already in `dir` lists (its `report.json`'s `plots`): plain file
/// names only, nothing with a path in it.
fn previous_plots(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join("report.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    v["plots"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["png"].as_str())
                .filter(|f| f.ends_with(".png") && !f.contains(['/', '\\']) && !f.starts_with('.'))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Gives every plot its own id (a topic recorded under two types makes two lag plots).
fn unique_ids<'a>(plots: impl Iterator<Item = &'a mut Plot>) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for p in plots {
        let n = seen.entry(p.id.to_ascii_lowercase()).or_insert(0);
        *n += 1;
        if *n > 1 {
            p.id = format!("{}~{n}", p.id);
        }
    }
}

/// Writes each plot as `DIR/<id>.png`; returns the paths written.
pub fn write_plots(dir: &Path, plots: &[Plot]) -> Result<Vec<String>, Error> {
    let mut plots = plots.to_vec();
    unique_ids(plots.iter_mut());
    let mut st = Staging::new(dir)?;
    for p in &plots {
        let path = st.file(&format!("{}.png", p.id));
        p.figure.write(&path)?;
    }
    st.commit()
}

/// `bagscope clocks --plots DIR`.
pub fn clocks_with_plots(
    path: &Path,
    opts: &bagscope::clocks::ClocksOptions,
    dir: &Path,
) -> Result<(ClocksCommandReport, Vec<String>), Error> {
    let d = clocks_data(path, &opts.analysis())?;
    let files = write_plots(dir, &clock_plots(&d))?;
    Ok((d.report, files))
}

/// `bagscope hist --output FILE`: the histograms drawn into `out` (`.png` or `.svg`).
pub fn hist_with_plot(path: &Path, opts: &HistOptions, out: &Path) -> Result<HistReport, Error> {
    outfile::check_output_file(out).map_err(|e| io_err(out, e))?;
    let mut r = bagscope::hist::hist(path, opts)?;
    hist_figure(&r).write(out)?;
    r.plot = Some(out.display().to_string());
    Ok(r)
}

/// `batch --report`'s page writer (`bagscope::batch::PageWriter`, with the `tables` feature): the report of `bag` into
/// `out_dir`; whether it met data loss.
pub fn batch_page(bag: &Path, out_dir: &Path) -> Result<bool, String> {
    let ro = ReportOptions {
        out_dir: Some(out_dir.to_path_buf()),
        ..Default::default()
    };
    report(bag, &ro)
        .map(|r| bagscope::CommandReport::data_loss(&r))
        .map_err(|e| e.to_string())
}

/// `bagscope match --plots DIR`.
pub fn match_with_plots(
    path: &Path,
    a: &MatchArgs,
    dir: &Path,
) -> Result<(MatchCommandReport, Vec<String>), Error> {
    let (r, c, s) = match_bag_series(path, a)?;
    let files = write_plots(dir, &match_plots(&r, &c, &s, &a.options()?, "match-"))?;
    Ok((r, files))
}

/// `bagscope compare --plots DIR`.
pub fn compare_with_plots(
    paths: &[&Path],
    a: &MatchArgs,
    dir: &Path,
) -> Result<(CompareCommandReport, Vec<String>), Error> {
    let (r, runs) = compare_series(paths, a)?;
    let files = write_plots(dir, &compare_plots(&r, &runs))?;
    Ok((r, files))
}

// ------------------------------------------------------------------ report

/// Where `report` writes and which pairs it matches.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Default: `reports/<bag name>/`.
    pub out_dir: Option<PathBuf>,
    /// Command/response pairs to match; default: every JointTrajectory → JointState pair.
    pub pairs: Vec<(String, String)>,
    /// An `observe` contract: the page gains an "Observations" section.
    pub contract: Option<PathBuf>,
}

/// A figure of the page (`plots` in `report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct PlotRef {
    /// The figure's id (the HTML element id suffix, the PNG file stem).
    pub id: String,
    /// Its caption.
    pub title: String,
    /// The section it is shown in (`lag` or `match`, see [`SECTIONS`]).
    pub section: String,
    /// Its PNG file, relative to the report folder.
    pub png: String,
}

/// Everything the page shows (`report.json`): the facade's report data, then the page's
/// sections and figures.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The bag's reports and verdicts (their keys at the top level).
    #[serde(flatten)]
    pub data: ReportData,
    /// The page's sections, in order ([`SECTIONS`], with `observations` before `warnings`
    /// when a contract was given).
    pub sections: Vec<String>,
    /// The figures drawn, in page order.
    pub plots: Vec<PlotRef>,
    /// Topics whose lag is not drawn: past [`MAX_PLOTTED_TOPICS`] the worst topics are drawn
    /// and the rest are in the tables only.
    pub unplotted_topics: Vec<String>,
}

/// What `bagscope report` wrote (the CLI's `report --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ReportOutcome {
    /// The folder written.
    pub out_dir: String,
    /// The files written, in the order they were moved into place (`index.html` last).
    pub files: Vec<String>,
    /// What the page shows (also written as `report.json`).
    pub report: Report,
}

impl std::ops::Deref for Report {
    type Target = ReportData;
    fn deref(&self) -> &ReportData {
        &self.data
    }
}

impl bagscope::CommandReport for ReportOutcome {
    fn warnings(&self) -> Vec<&Warning> {
        self.report.warnings.iter().collect()
    }

    /// Messages of the bag could not be read (the verdicts' data loss, which also counts loss
    /// the recorder logged).
    fn data_loss(&self) -> bool {
        self.report.verdicts.data_loss
    }
}

/// The page's sections, in order, by the ids of their HTML `<section>` elements.
pub const SECTIONS: [&str; 8] = [
    "verdicts", "summary", "clocks", "lag", "sync", "match", "checks", "warnings",
];

/// `bagscope report`: every analysis that applies ([`bagscope::report::report_data`], from
/// one open bag), written as HTML, Markdown and JSON with its figures.
pub fn report(path: &Path, o: &ReportOptions) -> Result<ReportOutcome, Error> {
    let name = bag_name(path);
    let out_dir = o
        .out_dir
        .clone()
        .unwrap_or_else(|| Path::new("reports").join(&name));
    // A contract is checked before any work (a wrong one is a usage error).
    let contract = match &o.contract {
        Some(c) => Some(bagscope::observe::load_contract(c)?),
        None => None,
    };
    let bag = bagscope::Bag::open(path)?;
    let mut data = bag.report_data(&bagscope::report::ReportOptions {
        pairs: o.pairs.clone(),
        contract,
    })?;
    drop(bag);
    let mut plots: Vec<(String, Plot)> = Vec::new();
    let lags: Vec<LagSeries> = data
        .lag_distributions
        .iter()
        .cloned()
        .zip(std::mem::take(&mut data.lag_series))
        .map(|(d, (x, y))| (d, x, y))
        .collect();
    let (drawn, unplotted_topics) = worst_lags(&lags, &data.clocks.warnings);
    for (d, x, y) in drawn {
        plots.push(("lag".into(), lag_plot(d, x, y)));
    }
    drop(lags);
    for (i, m) in data.matching.iter_mut().enumerate() {
        if let (Some(rep), Some((cs, rs))) = (&m.report, m.series.take()) {
            let p = match_plots(
                rep,
                &cs,
                &rs,
                &MatchOptions::default(),
                &format!("match-{i}-"),
            );
            plots.extend(p.into_iter().map(|p| ("match".to_string(), p)));
        }
    }
    let has_observations = data.observations.is_some();
    unique_ids(plots.iter_mut().map(|(_, p)| p));
    let report = Report {
        data,
        sections: SECTIONS
            .iter()
            .flat_map(|s| match *s {
                "warnings" if has_observations => {
                    vec!["observations".to_string(), s.to_string()]
                }
                _ => vec![s.to_string()],
            })
            .collect(),
        unplotted_topics,
        plots: plots
            .iter()
            .map(|(sec, p)| PlotRef {
                id: p.id.clone(),
                title: p.title.clone(),
                section: sec.clone(),
                png: format!("{}.png", p.id),
            })
            .collect(),
    };

    // Render SVGs first: a drawing failure leaves no half-written report behind.
    // Figures are independent: drawn on all cores.
    let svgs: BTreeMap<String, String> = plots
        .par_iter()
        .map(|(_, p)| Ok((p.id.clone(), p.figure.to_svg()?)))
        .collect::<Result<_, Error>>()?;
    // Everything is written into a stage and moved into place once complete, index.html last.
    let mut st = Staging::new(&out_dir)?;
    // The figures of a report this one replaces, which it does not write itself: removed once
    // this one is in place, so the folder holds one bag's report, not a mix.
    let stale: Vec<String> = previous_plots(&out_dir)
        .into_iter()
        .filter(|f| !plots.iter().any(|(_, p)| format!("{}.png", p.id) == *f))
        .collect();
    let pngs: Vec<PathBuf> = plots
        .iter()
        .map(|(_, p)| st.file(&format!("{}.png", p.id)))
        .collect();
    plots
        .par_iter()
        .zip(&pngs)
        .try_for_each(|((_, p), f)| p.figure.write(f))?;
    let html = render_html(&report, &svgs);
    let md = render_md(&report);
    let json = serde_json::to_string_pretty(&report).map_err(Error::Json)?;
    st.write("report.json", (json + "\n").as_bytes())?;
    st.write("report.md", md.as_bytes())?;
    st.write("index.html", html.as_bytes())?;
    let files = st.commit()?;
    for f in stale {
        let p = out_dir.join(f);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(ReportOutcome {
        out_dir: out_dir.display().to_string(),
        files,
        report,
    })
}

// ------------------------------------------------------------------ rendering

/// HTML text or attribute value; control characters written out as [`visible`] does.
/// An enum's serialised name (an axis, a stamp source).
fn axis_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn esc(s: &str) -> String {
    let s = visible(s);
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

use bagscope::timefmt::secs_unit as secs;

fn opt_ms(v: Option<i64>) -> String {
    v.map(ms).unwrap_or_else(|| "–".into())
}

fn modes_text(m: &[i64]) -> String {
    m.iter().map(|&x| ms(x)).collect::<Vec<_>>().join(", ")
}

/// `[a, b, … n topics]` after a finding's message (nothing for a bag-wide finding).
fn topics_suffix(topics: &[String]) -> String {
    match topics.len() {
        0 => String::new(),
        n if n <= 8 => format!(" [{}]", topics.join(", ")),
        n => format!(" [{}, … {} topics]", topics[..8].join(", "), n),
    }
}

/// The info-level findings, below the verdict table: one line per code, (code, text).
fn info_lines(r: &Report) -> Vec<(String, String)> {
    r.verdicts
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Info)
        .map(|f| {
            (
                f.code.clone(),
                format!("{}{}", f.message, topics_suffix(&f.topics)),
            )
        })
        .collect()
}

/// Rows shared by the HTML and Markdown renderings: (label, value, element id). Data loss and
/// the findings of warning severity or worse, then the bag's facts; info-level findings are
/// not rows ([`info_lines`], below the table).
fn verdict_rows(r: &Report) -> Vec<(String, String, Option<String>)> {
    let v = &r.verdicts;
    let mut rows = Vec::new();
    // The worst first: lost data, then every finding of error or warning severity.
    rows.push((
        "Data loss".into(),
        if v.data_loss {
            "YES (exit code 3)"
        } else {
            "no"
        }
        .into(),
        Some("v-data-loss".into()),
    ));
    for f in v
        .findings
        .iter()
        .filter(|f| f.severity != Severity::Info && f.code != "data_loss")
    {
        let topics = topics_suffix(&f.topics);
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        rows.push((
            format!("{sev}: {}", f.code),
            format!("{}{topics}", f.message),
            Some(format!("finding-{}", f.code)),
        ));
    }
    let axes: Vec<String> = v
        .clock_axes
        .iter()
        .map(|(t, a)| format!("{t}: {a}"))
        .collect();
    rows.push((
        "Clock axes".to_string(),
        format!("recorder on {} time; {}", v.recorder_axis, axes.join(", ")),
        Some("v-axes".into()),
    ));
    rows.push((
        "Split clock axes".into(),
        if v.split {
            "YES: stamped topics are on different clocks; cross-topic matching needs a /clock mapping".into()
        } else {
            "no".into()
        },
        Some("v-split".into()),
    ));
    rows.push((
        "Sim clock".into(),
        match v.sim_clock_rate {
            Some(rate) => format!("yes, real-time factor {rate:.3}"),
            None => "none".into(),
        },
        None,
    ));
    if v.delays.is_empty() {
        let why = r
            .matching
            .iter()
            .filter_map(|m| {
                m.error
                    .as_ref()
                    .map(|e| format!("{} → {}: {e}", m.command, m.response))
            })
            .collect::<Vec<_>>();
        rows.push((
            "Delay".into(),
            if why.is_empty() {
                "no command/response pair found".into()
            } else {
                why.join("; ")
            },
            None,
        ));
    }
    for (i, d) in v.delays.iter().enumerate() {
        rows.push((
            format!("Delay {} → {}", d.command, d.response),
            format!(
                "{} ({}; RMS error {:.4} → {:.4} after the shift){}",
                ms(d.delay_ns),
                d.method,
                d.error_before_rms,
                d.error_after_rms,
                d.clock_mapping
                    .as_ref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            ),
            Some(format!("delay-{i}")),
        ));
    }
    rows.push((
        "Contract checks".into(),
        if v.faults.is_empty() {
            match &r.check_error {
                Some(e) => format!("checks failed: {e}"),
                None => "no violations".into(),
            }
        } else {
            v.faults
                .iter()
                .map(|(c, n)| format!("{c} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        Some("v-faults".into()),
    ));
    for s in &v.sync {
        let what = match (s.slop_ns, s.queue_size) {
            _ if s.no_recommendation.is_some() => format!(
                "{}: no recommendation: {}",
                s.policy,
                s.no_recommendation.as_deref().unwrap_or_default()
            ),
            (Some(slop), Some(q)) => format!(
                "{}: slop {}, queue_size {} (match rate {:.3})",
                s.policy,
                ms(slop),
                q,
                s.match_rate.unwrap_or(0.0)
            ),
            _ => format!(
                "{}: match rate {}",
                s.policy,
                s.match_rate
                    .map(|m| format!("{m:.3}"))
                    .unwrap_or_else(|| "–".into())
            ),
        };
        rows.push((
            format!("Sync {} ({})", s.topics.join(" + "), s.kind),
            what,
            None,
        ));
    }
    if !r.unplotted_topics.is_empty() {
        rows.push((
            "Plots".into(),
            format!(
                "lag drawn for the {MAX_PLOTTED_TOPICS} worst topics; {} more are in the tables only",
                r.unplotted_topics.len()
            ),
            None,
        ));
    }
    rows
}

const CSS: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}\
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}\
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.verdicts td:first-child{font-weight:bold;white-space:nowrap}.yes{color:#b00;font-weight:bold}\
figure{margin:1em 0}figure svg{max-width:100%;height:auto}figcaption{color:#555;font-size:.9em}\
.warn{color:#8a5300}.loss{color:#b00}.err{color:#b00}";

fn table_html(s: &mut String, head: &[&str], rows: &[Vec<String>]) {
    s.push_str("<table><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let num = c.parse::<f64>().is_ok() || c.ends_with(" ms") || c.ends_with(" s");
            let _ = write!(
                s,
                "<td{}>{}</td>",
                if num { " class=\"num\"" } else { "" },
                esc(c)
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>\n");
}

fn topic_rows(r: &Report) -> Vec<Vec<String>> {
    r.info
        .topics
        .iter()
        .map(|t| {
            vec![
                t.topic.clone(),
                t.type_name.clone(),
                t.count.to_string(),
                t.rate_hz
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect()
}

/// The services table's columns (service calls paired from introspection events).
const SERVICE_HEAD: [&str; 8] = [
    "service",
    "requests",
    "responses",
    "calls",
    "unanswered",
    "round trip p50 / max [ms]",
    "server p50 / max [ms]",
    "unreadable events",
];

/// One row per service of `info` (its `services`), with its call latencies.
fn service_rows(r: &Report) -> Vec<Vec<String>> {
    let count = |v: Option<u64>| v.map_or_else(|| "–".into(), |x| x.to_string());
    let dist = |d: Option<(i64, i64)>| {
        d.map_or_else(
            || "–".into(),
            |(p50, max)| format!("{} / {}", opt_ms(Some(p50)), opt_ms(Some(max))),
        )
    };
    r.info
        .services
        .iter()
        .map(|sv| {
            let l = sv.latency.as_ref();
            vec![
                sv.service.clone(),
                count(sv.request_count),
                count(sv.response_count),
                count(l.map(|l| l.calls)),
                count(l.map(|l| l.unanswered_requests)),
                dist(l.and_then(|l| l.round_trip_ns).map(|d| (d.p50, d.max))),
                dist(l.and_then(|l| l.server_ns).map(|d| (d.p50, d.max))),
                sv.undecodable_events.to_string(),
            ]
        })
        .collect()
}

fn clock_rows(r: &Report) -> Vec<Vec<String>> {
    r.clocks
        .topics
        .iter()
        .map(|t| {
            vec![
                t.topic.clone(),
                axis_name(&t.axis),
                axis_name(&t.source),
                opt_ms(t.lag_ns.map(|l| l.p50)),
                opt_ms(t.lag_ns.map(|l| l.p99)),
                if t.lag_modes_ns.is_empty() {
                    "–".into()
                } else {
                    modes_text(&t.lag_modes_ns)
                },
                t.backward_jumps.len().to_string(),
                t.gap_count.to_string(),
            ]
        })
        .collect()
}

const CLOCK_HEAD: [&str; 8] = [
    "topic",
    "axis",
    "time from",
    "lag p50",
    "lag p99",
    "lag modes",
    "jumps",
    "gaps",
];

/// TF timing per edge (the TF topics have a stamp per transform, not a header of their own).
fn tf_rows(r: &Report) -> Vec<Vec<String>> {
    r.clocks
        .tf_edges
        .iter()
        .map(|t| {
            let e = &t.edge;
            vec![
                format!("{} → {}", e.parent, e.child),
                if e.is_static { "yes" } else { "no" }.into(),
                e.samples.to_string(),
                e.rate_hz.map_or("–".into(), |r| format!("{r:.2}")),
                opt_ms(e.lag_ns.map(|l| l.p50)),
                opt_ms(e.lag_ns.map(|l| l.p99)),
                e.gaps_total.to_string(),
            ]
        })
        .collect()
}

const TF_HEAD: [&str; 7] = [
    "TF edge",
    "static",
    "transforms",
    "rate [Hz]",
    "lag p50",
    "lag p99",
    "gaps",
];

const TF_NOTE: &str =
    "TF timing per edge, from each transform's header.stamp (lag = log time − stamp):";

fn sync_rows(e: &SyncEntry) -> Vec<Vec<String>> {
    let Some(r) = &e.report else {
        return vec![vec!["error".into(), e.error.clone().unwrap_or_default()]];
    };
    let policy = r.policy().map(|p| axis_name(&p)).unwrap_or_default();
    let mut rows = vec![vec!["policy".into(), policy]];
    if let Some(rec) = &r.recommendation {
        rows.push(vec![
            "recommended slop".into(),
            ms(rec.recommendation.slop_ns),
        ]);
        rows.push(vec![
            "recommended queue_size".into(),
            rec.recommendation.queue_size.to_string(),
        ]);
        rows.push(vec![
            "match rate".into(),
            format!("{:.3}", rec.recommendation.match_rate),
        ]);
        rows.push(vec![
            "½ fast period".into(),
            ms(rec.rule.half_fast_period_ns),
        ]);
        rows.push(vec!["queue minimum".into(), rec.rule.queue_min.to_string()]);
    }
    if let Some(no) = &r.no_recommendation {
        rows.push(vec!["no recommendation".into(), no.message.clone()]);
    }
    if let Some(s) = &r.report {
        rows.push(vec!["sets".into(), s.sets.to_string()]);
        rows.push(vec!["match rate".into(), format!("{:.3}", s.match_rate)]);
        for (k, n) in &s.drops {
            rows.push(vec![format!("dropped ({k})"), n.to_string()]);
        }
        rows.push(vec!["span p50".into(), opt_ms(s.span_ns.map(|x| x.p50))]);
    }
    for d in &r.diagnoses {
        rows.push(vec!["diagnosis".into(), d.message.clone()]);
    }
    rows
}

fn match_rows(m: &MatchCommandReport) -> Vec<Vec<String>> {
    let rep = &m.report;
    let mut rows = vec![vec![
        "all".to_string(),
        format!("{:.4}", rep.error_before.rms),
        format!("{:.4}", rep.error_after.rms),
    ]];
    for (j, b) in &rep.error_before.per_joint {
        rows.push(vec![
            j.clone(),
            format!("{b:.4}"),
            rep.error_after
                .per_joint
                .get(j)
                .map(|x| format!("{x:.4}"))
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    rows
}

fn finding_rows(c: &CheckReport) -> Vec<Vec<String>> {
    c.findings
        .iter()
        .take(50)
        .map(|f| {
            vec![
                f.code.clone(),
                f.topic.clone(),
                f.index.to_string(),
                f.message.clone(),
            ]
        })
        .collect()
}

fn warning_rows(r: &Report) -> Vec<Vec<String>> {
    r.warnings
        .iter()
        .map(|w| {
            vec![
                w.code.to_string(),
                w.topic.clone().unwrap_or_default(),
                // Which file of a split recording.
                w.file.clone().unwrap_or_default(),
                if w.data_loss { "yes" } else { "" }.into(),
                w.message.clone(),
            ]
        })
        .collect()
}

fn figs_html(
    s: &mut String,
    r: &Report,
    svgs: &BTreeMap<String, String>,
    section: &str,
    prefix: &str,
) {
    for p in r
        .plots
        .iter()
        .filter(|p| p.section == section && p.id.starts_with(prefix))
    {
        let _ = writeln!(
            s,
            "<figure id=\"plot-{}\" class=\"plot\">{}<figcaption>{}</figcaption></figure>",
            esc(&p.id),
            svgs.get(&p.id).map(String::as_str).unwrap_or(""),
            esc(&p.title)
        );
    }
}

fn render_html(r: &Report, svgs: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>bagscope report: {}</title><style>{CSS}</style></head><body>\n<h1>bagscope report: {}</h1>\n<p>{}</p>",
        esc(&r.name),
        esc(&r.name),
        esc(&r.bag)
    );
    // Verdicts first: the facts a reader checks before anything else.
    s.push_str("<section id=\"verdicts\"><h2>Verdicts</h2><table class=\"verdicts\">\n");
    for (label, value, id) in verdict_rows(r) {
        let cls = if value.starts_with("YES") {
            " class=\"yes\""
        } else {
            ""
        };
        let _ = write!(s, "<tr><td>{}</td><td>", esc(&label));
        match id {
            Some(id) if id.starts_with("delay-") => {
                let i: usize = id[6..].parse().unwrap_or(0);
                let d = &r.verdicts.delays[i.min(r.verdicts.delays.len().saturating_sub(1))];
                let rest = value.strip_prefix(&ms(d.delay_ns)).unwrap_or(&value);
                let _ = write!(
                    s,
                    "<span id=\"{id}\" class=\"delay\" data-delay-ns=\"{}\">{}</span>{}",
                    d.delay_ns,
                    esc(&ms(d.delay_ns)),
                    esc(rest)
                );
            }
            Some(id) => {
                let _ = write!(s, "<span id=\"{id}\"{cls}>{}</span>", esc(&value));
            }
            None => s.push_str(&esc(&value)),
        }
        s.push_str("</td></tr>\n");
    }
    s.push_str("</table>\n");
    let info = info_lines(r);
    if !info.is_empty() {
        s.push_str("<p>Also noted (info):</p><ul class=\"info-findings\">\n");
        for (code, text) in &info {
            let _ = writeln!(
                s,
                "<li id=\"finding-{}\">info: {}: {}</li>",
                esc(code),
                esc(code),
                esc(text)
            );
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");

    let i = &r.info;
    let _ = writeln!(
        s,
        "<section id=\"summary\"><h2>Bag summary</h2><p>duration {}, {} messages in {} topics, storage {}, compression {}</p>",
        secs(i.duration_ns),
        i.message_count,
        i.topics.len(),
        esc(&i.storage),
        esc(&i.compression)
    );
    table_html(
        &mut s,
        &["topic", "type", "count", "rate [Hz]"],
        &topic_rows(r),
    );
    if !r.info.services.is_empty() {
        s.push_str("<h3>Services</h3>\n");
        table_html(&mut s, &SERVICE_HEAD, &service_rows(r));
    }
    s.push_str("</section>\n");

    let c = &r.clocks;
    let _ = writeln!(
        s,
        "<section id=\"clocks\"><h2>Clocks</h2><p>recorder (log time) on {} time; split clock axes: {}</p>",
        axis_name(&c.recorder_axis),
        if c.split { "<b class=\"yes\">YES</b>" } else { "no" }
    );
    if let Some(sc) = &c.sim_clock {
        let _ = writeln!(
            s,
            "<p>sim clock {}: real-time factor {:.4}, jitter {:.2} ms, {} epoch(s), {} pause(s)</p>",
            esc(&sc.topic),
            sc.rate,
            sc.residual_jitter_ns / 1e6,
            sc.epochs.len(),
            sc.pauses.len()
        );
    }
    table_html(&mut s, &CLOCK_HEAD, &clock_rows(r));
    if !c.tf_edges.is_empty() {
        let _ = writeln!(s, "<p>{}</p>", esc(TF_NOTE));
        table_html(&mut s, &TF_HEAD, &tf_rows(r));
    }
    s.push_str("</section>\n");

    s.push_str("<section id=\"lag\"><h2>Lag per topic</h2>\n");
    if !r.plots.iter().any(|p| p.section == "lag") {
        s.push_str("<p>No topic has stamps on the recorder's clock: no lag to show.</p>\n");
    }
    figs_html(&mut s, r, svgs, "lag", "");
    s.push_str("</section>\n");

    s.push_str("<section id=\"sync\"><h2>Synchronization</h2>\n");
    if r.sync.is_empty() {
        s.push_str(
            "<p>No sensor pairs (Image + CameraInfo, Image / PointCloud2 / Imu) in this bag.</p>\n",
        );
    }
    for e in &r.sync {
        let _ = writeln!(
            s,
            "<h3>{} ({})</h3>",
            esc(&e.topics.join(" + ")),
            esc(&e.kind)
        );
        table_html(&mut s, &["", "value"], &sync_rows(e));
    }
    s.push_str("</section>\n");

    s.push_str("<section id=\"match\"><h2>Command → response</h2>\n");
    if r.matching.is_empty() {
        s.push_str("<p>No command/response pair (JointTrajectory → JointState) in this bag; use --pair CMD:RESP.</p>\n");
    }
    for (k, m) in r.matching.iter().enumerate() {
        let _ = writeln!(s, "<h3>{} → {}</h3>", esc(&m.command), esc(&m.response));
        match &m.report {
            Some(rep) => {
                let _ = writeln!(
                    s,
                    "<p>{}</p><p>delay {} ({}); times: {}</p>",
                    esc(&rep.report.summary),
                    esc(&ms(rep.report.delay_ns)),
                    esc(&rep.report.method),
                    esc(&rep.time_source)
                );
                if let Some(cm) = &rep.report.clock_mapping {
                    let _ = writeln!(s, "<p>clock mapping: {}</p>", esc(&cm.note));
                }
                table_html(
                    &mut s,
                    &["joint", "RMS before", "RMS after"],
                    &match_rows(rep),
                );
                figs_html(&mut s, r, svgs, "match", &format!("match-{k}-"));
            }
            None => {
                let _ = writeln!(
                    s,
                    "<p class=\"err\">{}</p>",
                    esc(m.error.as_deref().unwrap_or(""))
                );
            }
        }
    }
    s.push_str("</section>\n");

    s.push_str("<section id=\"checks\"><h2>Checks</h2>\n");
    match (&r.check, &r.check_error) {
        (Some(c), _) if c.findings.is_empty() => {
            s.push_str("<p>No findings.</p>\n");
        }
        (Some(c), _) => {
            let counts: Vec<Vec<String>> = c
                .counts
                .iter()
                .map(|(k, n)| vec![k.clone(), n.to_string()])
                .collect();
            table_html(&mut s, &["code", "count"], &counts);
            table_html(
                &mut s,
                &["code", "topic", "index", "message"],
                &finding_rows(c),
            );
        }
        (None, e) => {
            let _ = writeln!(
                s,
                "<p class=\"err\">{}</p>",
                esc(e.as_deref().unwrap_or(""))
            );
        }
    }
    s.push_str("</section>\n");

    observations_html(&mut s, r);
    s.push_str("<section id=\"warnings\"><h2>Warnings</h2>\n");
    if r.warnings.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        table_html(
            &mut s,
            &["code", "topic", "file", "data loss", "message"],
            &warning_rows(r),
        );
    }
    s.push_str("</section>\n</body></html>\n");
    s
}

fn table_md(s: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(
        s,
        "| {} |",
        head.iter()
            .map(|h| md_escape(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} |",
            r.iter()
                .map(|c| md_escape(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    s.push('\n');
}

fn figs_md(s: &mut String, r: &Report, section: &str, prefix: &str) {
    for p in r
        .plots
        .iter()
        .filter(|p| p.section == section && p.id.starts_with(prefix))
    {
        // `png` is an id made of `[A-Za-z0-9_.~-]`: safe as a link target.
        let _ = writeln!(s, "![{}]({})\n", md_escape(&p.title), p.png);
    }
}

fn render_md(r: &Report) -> String {
    // Every string from the bag (names, paths, types, messages) goes through md_escape:
    // rendered as CommonMark it is text, never markup.
    let mut s = format!(
        "# bagscope report: {}\n\n{}\n\n## Verdicts\n\n",
        md_escape(&r.name),
        md_escape(&r.bag)
    );
    let rows: Vec<Vec<String>> = verdict_rows(r)
        .into_iter()
        .map(|(l, v, _)| vec![l, v])
        .collect();
    table_md(&mut s, &["", ""], &rows);
    let info = info_lines(r);
    if !info.is_empty() {
        s.push_str("Also noted (info):\n\n");
        for (code, text) in &info {
            let _ = writeln!(s, "* info: {}: {}", md_escape(code), md_escape(text));
        }
        s.push('\n');
    }
    let i = &r.info;
    let _ = writeln!(
        s,
        "## Bag summary\n\nduration {}, {} messages in {} topics, storage {}, compression {}\n",
        secs(i.duration_ns),
        i.message_count,
        i.topics.len(),
        md_escape(&i.storage),
        md_escape(&i.compression)
    );
    table_md(
        &mut s,
        &["topic", "type", "count", "rate [Hz]"],
        &topic_rows(r),
    );
    if !r.info.services.is_empty() {
        s.push_str("### Services\n\n");
        table_md(&mut s, &SERVICE_HEAD, &service_rows(r));
    }
    let _ = writeln!(
        s,
        "## Clocks\n\nrecorder (log time) on {} time; split clock axes: {}\n",
        axis_name(&r.clocks.recorder_axis),
        if r.clocks.split { "**YES**" } else { "no" }
    );
    if let Some(sc) = &r.clocks.sim_clock {
        let _ = writeln!(
            s,
            "sim clock {}: real-time factor {:.4}, {} epoch(s), {} pause(s)\n",
            md_escape(&sc.topic),
            sc.rate,
            sc.epochs.len(),
            sc.pauses.len()
        );
    }
    table_md(&mut s, &CLOCK_HEAD, &clock_rows(r));
    if !r.clocks.tf_edges.is_empty() {
        let _ = writeln!(s, "{TF_NOTE}\n");
        table_md(&mut s, &TF_HEAD, &tf_rows(r));
    }
    s.push_str("## Lag per topic\n\n");
    figs_md(&mut s, r, "lag", "");
    s.push_str("## Synchronization\n\n");
    if r.sync.is_empty() {
        s.push_str("No sensor pairs in this bag.\n\n");
    }
    for e in &r.sync {
        let _ = writeln!(
            s,
            "### {} ({})\n",
            md_escape(&e.topics.join(" + ")),
            md_escape(&e.kind)
        );
        table_md(&mut s, &["", "value"], &sync_rows(e));
    }
    s.push_str("## Command → response\n\n");
    if r.matching.is_empty() {
        s.push_str("No command/response pair in this bag.\n\n");
    }
    for (k, m) in r.matching.iter().enumerate() {
        let _ = writeln!(
            s,
            "### {} → {}\n",
            md_escape(&m.command),
            md_escape(&m.response)
        );
        match &m.report {
            Some(rep) => {
                let _ = writeln!(
                    s,
                    "{}\n\ndelay {} ({})\n",
                    md_escape(&rep.report.summary),
                    ms(rep.report.delay_ns),
                    md_escape(&rep.report.method)
                );
                table_md(
                    &mut s,
                    &["joint", "RMS before", "RMS after"],
                    &match_rows(rep),
                );
                figs_md(&mut s, r, "match", &format!("match-{k}-"));
            }
            None => {
                let _ = writeln!(
                    s,
                    "error: {}\n",
                    md_escape(m.error.as_deref().unwrap_or(""))
                );
            }
        }
    }
    s.push_str("## Checks\n\n");
    match (&r.check, &r.check_error) {
        (Some(c), _) if c.findings.is_empty() => s.push_str("No findings.\n\n"),
        (Some(c), _) => table_md(
            &mut s,
            &["code", "topic", "index", "message"],
            &finding_rows(c),
        ),
        (None, e) => {
            let _ = writeln!(s, "error: {}\n", md_escape(e.as_deref().unwrap_or("")));
        }
    }
    observations_md(&mut s, r);
    s.push_str("## Warnings\n\n");
    if r.warnings.is_empty() {
        s.push_str("None.\n");
    } else {
        table_md(
            &mut s,
            &["code", "topic", "file", "data loss", "message"],
            &warning_rows(r),
        );
    }
    s
}

/// The "Observations" section (only with a contract).
fn observations_html(s: &mut String, r: &Report) {
    let Some(o) = &r.observations else { return };
    let _ = writeln!(
        s,
        "<section id=\"observations\"><h2>Observations</h2><p>contract {} (policy_version {})</p>",
        esc(&o.contract),
        esc(&o.policy_version)
    );
    match (&o.summary, &o.error) {
        (Some(sum), _) => {
            let (a, b) = observations::rows(sum);
            table_html(s, &["quantity", "p50", "p99"], &a);
            if !b.is_empty() {
                table_html(s, &["reason", "messages", "anchors"], &b);
            }
        }
        (None, e) => {
            let _ = writeln!(
                s,
                "<p class=\"err\">{}</p>",
                esc(e.as_deref().unwrap_or(""))
            );
        }
    }
    s.push_str("</section>\n");
}

/// The "Observations" section in Markdown (only with a contract).
fn observations_md(s: &mut String, r: &Report) {
    let Some(o) = &r.observations else { return };
    let _ = writeln!(
        s,
        "## Observations\n\ncontract {} (policy_version {})\n",
        md_escape(&o.contract),
        o.policy_version
    );
    match (&o.summary, &o.error) {
        (Some(sum), _) => {
            let (a, b) = observations::rows(sum);
            table_md(s, &["quantity", "p50", "p99"], &a);
            if !b.is_empty() {
                table_md(s, &["reason", "messages", "anchors"], &b);
            }
        }
        (None, e) => {
            let _ = writeln!(s, "error: {}\n", md_escape(e.as_deref().unwrap_or("")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_names() {
        assert_eq!(bag_name(Path::new("bags/arm_split")), "arm_split");
        assert_eq!(bag_name(Path::new("x/run.mcap")), "run");
        assert_eq!(bag_name(Path::new("/")), "bag");
    }

    #[test]
    fn escaping() {
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
