use std::path::PathBuf;

use bagscope::matching::{compare, match_bag, CompareCommandReport, MatchArgs, MatchCommandReport};

use crate::render;

/// Options shared by `match` and `compare`.
#[derive(clap::Args)]
pub(crate) struct Common {
    #[command(flatten)]
    pub args: MatchArgs,
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

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let args = &a.common.args;
    let r = match &a.plots {
        Some(dir) => {
            let (r, files) = bagscope_report::match_with_plots(&a.bag, args, dir)?;
            eprintln!(
                "wrote {} plot(s) to {}",
                files.len(),
                render::terminal_text(&dir.display().to_string())
            );
            r
        }
        None => match_bag(&a.bag, args)?,
    };
    render::finish(&r, a.common.json, text)
}

pub(crate) fn run_compare(a: CompareArgs) -> anyhow::Result<u8> {
    let args = &a.common.args;
    let paths: Vec<&std::path::Path> = a.runs.iter().map(|p| p.as_path()).collect();
    let r = match &a.plots {
        Some(dir) => {
            let (r, files) = bagscope_report::compare_with_plots(&paths, args, dir)?;
            eprintln!(
                "wrote {} plot(s) to {}",
                files.len(),
                render::terminal_text(&dir.display().to_string())
            );
            r
        }
        None => compare(&paths, args)?,
    };
    render::finish(&r, a.common.json, compare_text)
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
