use std::path::PathBuf;

use bagscope::tf::{tf, TfCommandReport, TfOptions};

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub options: TfOptions,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(mut a: Args) -> anyhow::Result<u8> {
    // `-`: the JSON lines go to standard output, through a temporary file.
    let evidence = &mut a.options.evidence;
    let stage = match evidence {
        Some(p) if render::is_stdout(p) => {
            let stage = render::StdoutStage::new()?;
            let file = stage.file("evidence.jsonl");
            *evidence = Some(file.clone());
            Some((stage, file))
        }
        _ => None,
    };
    let r = tf(&a.bag, &a.options)?;
    if let Some((stage, file)) = &stage {
        stage.copy_out(file)?;
    }
    render::finish(&r, a.json, text)
}

fn text(r: &TfCommandReport) -> String {
    let mut s = format!(
        "bag: {}\ntarget frame {}, queue {}, buffer {:.1} s\n",
        r.bag,
        r.target_frame,
        r.queue_size,
        r.cache_ns as f64 / 1e9
    );
    let tfs: Vec<String> = r
        .tf_topics
        .iter()
        .map(|t| {
            format!(
                "{}{} ({} msgs{})",
                t.topic,
                if t.is_static { " [static]" } else { "" },
                t.messages,
                if t.present { "" } else { ", absent" }
            )
        })
        .collect();
    s.push_str(&format!("TF topics: {}\n\n", tfs.join(", ")));
    let mut rows = vec![vec![
        "topic".to_string(),
        "messages".into(),
        "on arrival".into(),
        "after wait".into(),
        "wait p50 ms".into(),
        "wait p99 ms".into(),
        "wait max ms".into(),
        "dropped".into(),
        "frames".into(),
    ]];
    for t in &r.topics {
        let w = t.wait_ns.as_ref();
        rows.push(vec![
            t.topic.clone(),
            t.messages.to_string(),
            t.ready_on_arrival.to_string(),
            t.ready_after_wait.to_string(),
            opt_ms(w.map(|w| w.p50)),
            opt_ms(w.map(|w| w.p99)),
            opt_ms(w.map(|w| w.max)),
            t.dropped.to_string(),
            t.frames.join(" "),
        ]);
    }
    s.push_str(&table(&rows));
    for t in &r.topics {
        if !t.drops.is_empty() {
            let d: Vec<String> = t.drops.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!("drops {}: {}\n", t.topic, d.join(" ")));
        }
    }
    let mut rows = vec![vec![
        "parent".to_string(),
        "child".into(),
        "kind".into(),
        "samples".into(),
        "rate Hz".into(),
        "max period ms".into(),
        "gaps".into(),
    ]];
    for e in &r.tree.edges {
        rows.push(vec![
            e.parent.clone(),
            e.child.clone(),
            if e.is_static { "static" } else { "dynamic" }.into(),
            e.samples.to_string(),
            e.rate_hz
                .map(|h| format!("{h:.2}"))
                .unwrap_or_else(|| "-".into()),
            opt_ms(e.period_ns.as_ref().map(|p| p.max)),
            e.gaps_total.to_string(),
        ]);
    }
    s.push_str("\nframe edges:\n");
    s.push_str(&table(&rows));
    s.push_str(&render::warnings(&r.warnings));
    s
}
