use std::path::PathBuf;

use bagscope::clocks::{clocks, ClocksCommandReport, ClocksOptions};

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub options: ClocksOptions,
    /// Also write per-topic lag plots (over time, histogram with modes) as PNGs into DIR.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let o = &a.options;
    let r = match &a.plots {
        Some(dir) => {
            let (r, files) = bagscope_report::clocks_with_plots(&a.bag, o, dir)?;
            eprintln!(
                "wrote {} plot(s) to {}",
                files.len(),
                render::terminal_text(&dir.display().to_string())
            );
            r
        }
        None => clocks(&a.bag, o)?,
    };
    render::finish(&r, a.json, text)
}

fn name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn text(r: &ClocksCommandReport) -> String {
    let mut s = format!(
        "bag: {}\nrecorder (log time) on {} time; split clock axes: {}; data loss: {}\n",
        r.bag,
        name(&r.recorder_axis),
        if r.split { "YES" } else { "no" },
        if r.verdicts.data_loss { "YES" } else { "no" }
    );
    s.push_str(&render::findings(&r.verdicts.findings));
    if let Some(c) = &r.sim_clock {
        s.push_str(&format!(
            "sim clock {}: real-time factor {:.4}, jitter {:.2} ms, {} epoch(s), {} pause(s)\n",
            c.topic,
            c.rate,
            c.residual_jitter_ns / 1e6,
            c.epochs.len(),
            c.pauses.len()
        ));
    }
    // One table per axis group, then the topics outside any group (none / zero / clock).
    let mut groups: Vec<(String, Vec<&bagscope::clock_analysis::TopicClock>)> = Vec::new();
    for t in &r.topics {
        let ax = if t.aggregate {
            "aggregate topics (many producers; not used for split, resets or drift)".to_string()
        } else {
            format!("axis {}", name(&t.axis))
        };
        match groups.iter_mut().find(|(a, _)| *a == ax) {
            Some((_, v)) => v.push(t),
            None => groups.push((ax, vec![t])),
        }
    }
    for (ax, ts) in groups {
        s.push_str(&format!("\n{ax}:\n"));
        let mut rows = vec![vec![
            "topic".to_string(),
            "time from".into(),
            "count".into(),
            "rate_hz".into(),
            "lag_p50_ms".into(),
            "lag_p99_ms".into(),
            "lag_modes_ms".into(),
            "jumps".into(),
            "gaps".into(),
        ]];
        for t in ts {
            rows.push(vec![
                t.topic.clone(),
                name(&t.source),
                t.count.to_string(),
                render::rate(t.rate_hz, t.count as u64, t.log_span_ns),
                opt_ms(t.lag_ns.map(|l| l.p50)),
                opt_ms(t.lag_ns.map(|l| l.p99)),
                if t.lag_modes_ns.is_empty() {
                    "-".into()
                } else {
                    t.lag_modes_ns
                        .iter()
                        .map(|m| format!("{:.1}", *m as f64 / 1e6))
                        .collect::<Vec<_>>()
                        .join("/")
                },
                t.backward_jumps.len().to_string(),
                t.gap_count.to_string(),
            ]);
        }
        s.push_str(&table(&rows));
    }
    s.push_str(&tf_edges(&r.tf_edges));
    s
}

/// TF timing per edge: the TF topics carry a stamp per transform, not a header of their own.
fn tf_edges(edges: &[bagscope::tf::TfEdgeTiming]) -> String {
    if edges.is_empty() {
        return String::new();
    }
    let mut rows = vec![vec![
        "edge (parent -> child)".to_string(),
        "static".into(),
        "transforms".into(),
        "rate_hz".into(),
        "lag_p50_ms".into(),
        "lag_p99_ms".into(),
        "gaps".into(),
    ]];
    for e in edges {
        let e = &e.edge;
        rows.push(vec![
            format!("{} -> {}", e.parent, e.child),
            if e.is_static { "yes" } else { "no" }.into(),
            e.samples.to_string(),
            render::opt_f(e.rate_hz, 2),
            opt_ms(e.lag_ns.map(|l| l.p50)),
            opt_ms(e.lag_ns.map(|l| l.p99)),
            e.gaps_total.to_string(),
        ]);
    }
    format!(
        "
TF edges (from each transform's header.stamp; lag = log time - stamp):
{}",
        table(&rows)
    )
}
