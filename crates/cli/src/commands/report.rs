use std::path::PathBuf;

use anyhow::Context;
use bagscope_report::{report, ReportOptions};

use crate::render;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    /// Output directory (default reports/<bag name>/).
    #[arg(short = 'o', long = "output", visible_alias = "out", value_parser = crate::render::output_path)]
    pub out: Option<PathBuf>,
    /// Command/response pair to match, CMD:RESP (repeatable; default: every
    /// JointTrajectory -> JointState pair).
    #[arg(long = "pair", value_parser = parse_pair)]
    pub pairs: Vec<(String, String)>,
    /// An `observe` contract (docs/observe.md): the page gains an "Observations" section with
    /// its summary and drops.
    #[arg(long)]
    pub contract: Option<PathBuf>,
    /// Print report.json's content instead of the summary.
    #[arg(long)]
    pub json: bool,
}

fn parse_pair(s: &str) -> Result<(String, String), String> {
    // Topic names hold no ':' in ROS 2, so the first ':' separates them.
    s.split_once(':')
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .ok_or_else(|| format!("expected CMD:RESP, got '{s}'"))
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let o = ReportOptions {
        out_dir: a.out,
        pairs: a.pairs,
        contract: a.contract,
    };
    let r = report(&a.bag, &o).with_context(|| format!("report on {}", a.bag.display()))?;
    if a.json {
        render::json(&r.report)?;
    } else {
        let v = &r.report.verdicts;
        let mut s = format!(
            "bag: {}\nwrote {}/index.html, report.md, report.json and {} plot(s)\n\n",
            r.report.bag,
            r.out_dir,
            r.report.plots.len()
        );
        let axes: Vec<String> = v
            .clock_axes
            .iter()
            .map(|(t, x)| format!("{t}={x}"))
            .collect();
        s.push_str(&format!("clock axes: {}\n", axes.join(", ")));
        s.push_str(&format!(
            "split clock axes: {}\n",
            if v.split { "YES" } else { "no" }
        ));
        for d in &v.delays {
            s.push_str(&format!(
                "delay {} -> {}: {:.1} ms ({})\n",
                d.command, d.response, d.delay_ms, d.method
            ));
        }
        let faults: Vec<String> = v.faults.iter().map(|(c, n)| format!("{c} x{n}")).collect();
        s.push_str(&format!(
            "faults: {}\n",
            if faults.is_empty() {
                "none".into()
            } else {
                faults.join(", ")
            }
        ));
        if v.data_loss {
            s.push_str("data loss: YES\n");
        }
        render::print(&s)?;
    }
    Ok(render::exit_code(&r))
}
