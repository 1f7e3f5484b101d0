use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use bagscope::match_analysis::{MatchOptions, ResponseKind};
use bagscope::matching::{
    compare, match_bag, Align, CompareCommandReport, MatchArgs, MatchCommandReport,
};
use bagscope::sync_policy::parse_duration_ns;

use crate::render;

/// Options shared by `match` and `compare`.
#[derive(clap::Args)]
pub(crate) struct Common {
    /// Command topic (e.g. trajectory_msgs/JointTrajectory).
    #[arg(long)]
    pub command: String,
    /// Response topic (e.g. sensor_msgs/JointState).
    #[arg(long)]
    pub response: String,
    /// Field path of the command values for other types (e.g. `data`, `points[0].positions`).
    #[arg(long)]
    pub command_field: Option<String>,
    /// Field path of the response values for other types.
    #[arg(long)]
    pub response_field: Option<String>,
    /// Field path of the joint names for other types.
    #[arg(long)]
    pub names_field: Option<String>,
    /// `stamps` (default: map through /clock across axes, else refuse) or `relative`.
    #[arg(long, default_value = "stamps")]
    pub align: String,
    /// Clock topic used to map sim time to wall time (default /clock).
    #[arg(long)]
    pub clock_topic: Option<String>,
    /// `sampled` or `event`; default: decided from the topics' rates.
    #[arg(long)]
    pub response_kind: Option<String>,
    /// Delay search window, e.g. `0..500ms`.
    #[arg(long, default_value = "0..500ms")]
    pub search: String,
    /// Analyse only START..END (relative to the first command), e.g. `2s..20s`.
    #[arg(long)]
    pub window: Option<String>,
    /// Keep still segments (by default warm-up and still segments are trimmed).
    #[arg(long)]
    pub keep_still: bool,
    /// Downsample the response keeping the last sample of each bucket, e.g. `10ms`.
    #[arg(long)]
    pub bucket: Option<String>,
    /// Pair each command with the nearest response instead of interpolating.
    #[arg(long)]
    pub no_interpolate: bool,
    /// Each response used at most once.
    #[arg(long)]
    pub one_to_one: bool,
    /// Maximum pairing distance, e.g. `20ms`.
    #[arg(long)]
    pub max_pair_distance: Option<String>,
    /// Joints that wrap around (angles in radians), comma separated.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub continuous: Vec<String>,
    /// JSON file {"joint": [min, max], ...} of position limits.
    #[arg(long)]
    pub limits: Option<PathBuf>,
    /// Flag commands whose stamp is older than this when recorded, e.g. `200ms`.
    #[arg(long)]
    pub max_command_age: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub common: Common,
    /// Also write plots (command/response per joint, error over time, error vs shift) as PNGs into DIR.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct CompareArgs {
    /// Two or more runs (bags) of the same command sequence.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub common: Common,
    /// Also write a side-by-side plot of the runs' corrected responses as a PNG into DIR.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
}

fn dur(s: &str) -> anyhow::Result<i64> {
    parse_duration_ns(s).map_err(|e| anyhow::anyhow!("{e}"))
}

fn range(s: &str) -> anyhow::Result<(i64, i64)> {
    let (a, b) = s
        .split_once("..")
        .with_context(|| format!("expected START..END, got '{s}'"))?;
    Ok((dur(a)?, dur(b)?))
}

fn to_args(c: &Common) -> anyhow::Result<MatchArgs> {
    let mut o = MatchOptions {
        search_window_ns: range(&c.search)?,
        window_ns: c.window.as_deref().map(range).transpose()?,
        trim_still: !c.keep_still,
        bucket_ns: c.bucket.as_deref().map(dur).transpose()?,
        interpolate: !c.no_interpolate,
        one_to_one: c.one_to_one,
        max_pair_distance_ns: c.max_pair_distance.as_deref().map(dur).transpose()?,
        continuous_joints: c.continuous.clone(),
        max_command_age_ns: c.max_command_age.as_deref().map(dur).transpose()?,
        ..Default::default()
    };
    o.response_kind = match c.response_kind.as_deref() {
        None => None,
        Some("sampled") => Some(ResponseKind::Sampled),
        Some("event") => Some(ResponseKind::Event),
        Some(x) => anyhow::bail!("--response-kind must be sampled or event, got '{x}'"),
    };
    if let Some(p) = &c.limits {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read limits file {}", p.display()))?;
        let m: BTreeMap<String, (f64, f64)> = serde_json::from_str(&text).with_context(|| {
            format!(
                "limits file must be {{\"joint\": [min, max]}}: {}",
                p.display()
            )
        })?;
        o.limits = m;
    }
    Ok(MatchArgs {
        command: c.command.clone(),
        response: c.response.clone(),
        command_field: c.command_field.clone(),
        response_field: c.response_field.clone(),
        names_field: c.names_field.clone(),
        align: match c.align.as_str() {
            "stamps" => Align::Stamps,
            "relative" => Align::Relative,
            x => anyhow::bail!("--align must be stamps or relative, got '{x}'"),
        },
        clock_topic: c.clock_topic.clone(),
        options: o,
    })
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let args = to_args(&a.common)?;
    let r = match &a.plots {
        Some(dir) => {
            let (r, files) = bagscope_report::match_with_plots(&a.bag, &args, dir)?;
            eprintln!(
                "wrote {} plot(s) to {}",
                files.len(),
                render::terminal_text(&dir.display().to_string())
            );
            r
        }
        None => match_bag(&a.bag, &args)?,
    };
    if a.common.json {
        render::json(&r)?;
    } else {
        render::print(&text(&r))?;
    }
    Ok(if r.data_loss() { crate::EXIT_WARN } else { 0 })
}

pub(crate) fn run_compare(a: CompareArgs) -> anyhow::Result<u8> {
    let args = to_args(&a.common)?;
    let paths: Vec<&std::path::Path> = a.runs.iter().map(|p| p.as_path()).collect();
    let r = match &a.plots {
        Some(dir) => {
            let (r, files) = bagscope_report::compare_with_plots(&paths, &args, dir)?;
            eprintln!(
                "wrote {} plot(s) to {}",
                files.len(),
                render::terminal_text(&dir.display().to_string())
            );
            r
        }
        None => compare(&paths, &args)?,
    };
    if a.common.json {
        render::json(&r)?;
    } else {
        render::print(&compare_text(&r))?;
    }
    let loss = r.warnings.values().flatten().any(|w| w.data_loss);
    Ok(if loss { crate::EXIT_WARN } else { 0 })
}

fn compare_text(r: &CompareCommandReport) -> String {
    let rep = &r.report;
    let mut s = format!(
        "reference run: {}\n\n",
        rep.reference.as_deref().unwrap_or("-")
    );
    let mut rows = vec![vec![
        "run".to_string(),
        "delay_ms".into(),
        "method".into(),
        "rms_before_rad".into(),
        "rms_after_rad".into(),
    ]];
    for run in &rep.runs {
        rows.push(vec![
            run.name.clone(),
            render::opt_ms(run.delay_ns),
            run.method.clone().unwrap_or_else(|| "-".into()),
            render::opt_f(run.error_before_rms, 4),
            render::opt_f(run.error_after_rms, 4),
        ]);
    }
    s.push_str(&render::table(&rows));
    for run in &rep.runs {
        if let Some(e) = &run.error {
            s.push_str(&format!("{}: no report: {e}\n", run.name));
        }
    }
    if !rep.commands.is_empty() {
        s.push_str(&format!(
            "\ncommands against the reference (value tolerance {}, time tolerance {} ms):\n",
            rep.value_tolerance,
            render::opt_ms(Some(rep.time_tolerance_ns))
        ));
        let mut rows = vec![vec![
            "run".to_string(),
            "commands".into(),
            "reference".into(),
            "same_sequence".into(),
            "first_differing".into(),
            "max_value_diff".into(),
            "max_time_diff_ms".into(),
        ]];
        for c in &rep.commands {
            rows.push(vec![
                c.name.clone(),
                c.commands.to_string(),
                c.reference_commands.to_string(),
                c.same_sequence.to_string(),
                c.first_differing_index
                    .map_or_else(|| "-".into(), |i| i.to_string()),
                format!("{:.3e}", c.max_value_diff),
                render::opt_ms(Some(c.max_time_diff_ns)),
            ]);
        }
        s.push_str(&render::table(&rows));
    }
    if !rep.responses.is_empty() {
        s.push_str("\nresponses against the reference, each run's delay removed:\n");
        let mut rows = vec![vec![
            "run".to_string(),
            "rms_diff_rad".into(),
            "samples".into(),
        ]];
        for d in &rep.responses {
            rows.push(vec![
                d.name.clone(),
                render::opt_f(d.rms, 4),
                d.samples.to_string(),
            ]);
        }
        s.push_str(&render::table(&rows));
    }
    for (bag, ws) in &r.warnings {
        if !ws.is_empty() {
            s.push_str(&format!("\n{bag}:\n"));
            s.push_str(&render::warnings(ws));
        }
    }
    s
}

fn text(r: &MatchCommandReport) -> String {
    let rep = &r.report;
    let mut s = format!(
        "bag: {}\ncommand {} ({} time) -> response {} ({} time); times: {}\n",
        r.bag, r.command_topic, r.command_axis, r.response_topic, r.response_axis, r.time_source
    );
    if let Some(m) = &rep.clock_mapping {
        s.push_str(&format!("clock mapping: {}\n", m.note));
    }
    s.push_str(&format!("\n{}\n\n", rep.summary));
    let mut rows = vec![vec![
        "joint".to_string(),
        "rms_before_rad".into(),
        "rms_after_rad".into(),
        "mean_after_rad".into(),
    ]];
    for (j, before) in &rep.error_before.per_joint {
        rows.push(vec![
            j.clone(),
            format!("{before:.4}"),
            render::opt_f(rep.error_after.per_joint.get(j).copied(), 4),
            render::opt_f(rep.error_after.per_joint_mean.get(j).copied(), 4),
        ]);
    }
    rows.push(vec![
        "all".into(),
        format!("{:.4}", rep.error_before.rms),
        format!("{:.4}", rep.error_after.rms),
        String::new(),
    ]);
    s.push_str(&render::table(&rows));
    s.push_str(&render::warnings(&r.warnings));
    s
}
