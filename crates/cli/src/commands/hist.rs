use std::path::PathBuf;

use bagscope::hist::{hist, DistKind, HistOptions, HistReport};

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub options: HistOptions,
    /// Write the histograms to this .png or .svg file.
    #[arg(short = 'o', long = "output", visible_alias = "out", value_parser = crate::render::output_path)]
    pub output: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let o = &a.options;
    let r = match &a.output {
        Some(out) => bagscope_report::hist_with_plot(&a.bag, o, out)?,
        None => hist(&a.bag, o)?,
    };
    render::finish(&r, a.json, text)
}

fn text(r: &HistReport) -> String {
    let mut s = format!("bag: {}\n\n", r.bag);
    let mut rows = vec![vec![
        "distribution".to_string(),
        "n".into(),
        "p50_ms".into(),
        "p99_ms".into(),
        "bimodal".into(),
        "modes_ms".into(),
    ]];
    for d in &r.distributions {
        let what = match d.kind {
            DistKind::StampDiff => format!(
                "stamp {} -> {}",
                d.topic,
                d.partner.as_deref().unwrap_or("?")
            ),
            DistKind::Period => format!("period {}", d.topic),
            DistKind::Lag => format!("lag {}", d.topic),
        };
        rows.push(vec![
            what,
            d.summary.map(|x| x.count).unwrap_or(0).to_string(),
            opt_ms(d.summary.map(|x| x.p50)),
            opt_ms(d.summary.map(|x| x.p99)),
            if d.bimodal { "YES" } else { "no" }.into(),
            if d.modes_ns.is_empty() {
                "-".into()
            } else {
                d.modes_ns
                    .iter()
                    .map(|m| format!("{:.2}", *m as f64 / 1e6))
                    .collect::<Vec<_>>()
                    .join("/")
            },
        ]);
    }
    s.push_str(&table(&rows));
    for d in r.distributions.iter().filter(|d| d.note.is_some()) {
        s.push_str(&format!(
            "note: {}: {}\n",
            d.title(),
            d.note.as_deref().unwrap_or("")
        ));
    }
    if let Some(p) = &r.plot {
        s.push_str(&format!("\nwrote {p}\n"));
    }
    s.push_str(&render::warnings(&r.warnings));
    s
}
