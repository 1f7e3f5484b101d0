use std::path::PathBuf;

use bagscope::info::{info_with, InfoOptions, InfoReport};
use bagscope::timefmt::secs;

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage), a folder of .mcap files, or one .mcap / .db3 file.
    pub bag: PathBuf,
    /// Counts, first / last time and rate from the summary alone (like `mcap info`: the data
    /// section is not checked), else from the message index records' headers; work grows with
    /// chunks, not messages. Median periods and gaps are left out.
    #[arg(long)]
    pub fast: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let r = info_with(&a.bag, &InfoOptions { fast: a.fast })?;
    if a.json {
        render::json(&r)?;
    } else {
        render::print(&text(&r))?;
    }
    Ok(if r.data_loss() { crate::EXIT_WARN } else { 0 })
}

fn text(r: &InfoReport) -> String {
    let mut s = String::new();
    s.push_str(&format!("bag:       {}\n", r.path));
    s.push_str(&format!(
        "files:     {} ({} bytes, storage {}, compression {})\n",
        r.files.len(),
        r.size_bytes,
        r.storage,
        r.compression
    ));
    s.push_str(&format!("duration:  {} s\n", secs(r.duration_ns)));
    s.push_str(&format!(
        "start:     {} ({} ns)\n",
        r.start_time, r.start_ns
    ));
    s.push_str(&format!("end:       {} ({} ns)\n", r.end_time, r.end_ns));
    s.push_str(&format!("messages:  {}\n\n", r.message_count));
    let mut rows = vec![vec![
        "topic".to_string(),
        "type".into(),
        "count".into(),
        "rate_hz".into(),
        "median_period_ms".into(),
        "largest_gap_ms".into(),
        "first_s".into(),
        "last_s".into(),
    ]];
    for t in &r.topics {
        let rel = |v: Option<i64>| {
            v.map(|x| secs(x - r.start_ns))
                .unwrap_or_else(|| "-".into())
        };
        rows.push(vec![
            t.topic.clone(),
            t.type_name.clone(),
            t.count.to_string(),
            render::rate(t.rate_hz, t.count, t.log_span_ns),
            opt_ms(t.median_period_ns),
            opt_ms(t.largest_gap_ns),
            rel(t.first_log_time_ns),
            rel(t.last_log_time_ns),
        ]);
    }
    s.push_str(&table(&rows));
    if !r.cadence {
        s.push_str("(--fast: periods and gaps not computed)\n");
    }
    if r.summary_only {
        s.push_str("(--fast: answered from the summary; the data section was not checked)\n");
    }
    if !r.warnings.is_empty() {
        s.push('\n');
        s.push_str(&render::warnings(&r.warnings));
    }
    s
}
