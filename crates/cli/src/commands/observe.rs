use std::path::PathBuf;

use bagscope::observe::{
    load_contract, observe_summary, observe_to, CompareRow, ObserveCommandReport, ObserveOutputs,
};

use bagscope::CommandReport;

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder, a folder of .mcap files, one .mcap file or a .db3 bag.
    pub bag: PathBuf,
    /// The contract: anchor, member groups and policies, state topics, freshness, TF target
    /// (YAML; docs/observe.md).
    #[arg(long, required_unless_present = "compare")]
    pub contract: Option<PathBuf>,
    /// Output folder: observations.parquet and rejections.parquet.
    #[arg(short = 'o', long = "output", visible_alias = "out", required_unless_present = "compare", value_parser = crate::render::output_path)]
    pub out: Option<PathBuf>,
    /// The same bag under several contracts, one table (no files written).
    #[arg(long, num_args = 1.., conflicts_with_all = ["contract", "out"])]
    pub compare: Vec<PathBuf>,
    /// Also write the observations as a LeRobot dataset (format v3.0, one episode) under
    /// OUT/lerobot: data/chunk-000/file-000.parquet, meta/info.json, meta/stats.json,
    /// meta/tasks.parquet and meta/episodes/chunk-000/file-000.parquet.
    #[arg(long, value_parser = ["lerobot"], requires = "action")]
    pub layout: Option<String>,
    /// With --layout lerobot: the state topic of the contract that is the `action` (e.g. the
    /// command topic, listed under state: with mode hold).
    #[arg(long)]
    pub action: Option<String>,
    /// With --layout lerobot: the task description written to meta/tasks.parquet.
    #[arg(long, default_value = "")]
    pub task: String,
    /// Also copy the anchor's and every member's message fields into observations.parquet,
    /// flattened as `export` flattens them and named `TOPIC.<field>` (`/camera/left/image_raw.height`);
    /// without it members are referenced by topic and index only.
    #[arg(long, conflicts_with = "compare")]
    pub with_fields: bool,
    /// Print the summary (or the comparison) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    if !a.compare.is_empty() {
        // Contracts are checked before the bag is read.
        let contracts = a
            .compare
            .iter()
            .map(|p| load_contract(p))
            .collect::<Result<Vec<_>, _>>()?;
        let bag = bagscope::io::Bag::open(&a.bag)?;
        let mut rows = Vec::new();
        let mut loss = false;
        for c in &contracts {
            let r = observe_summary(&bag, c)?;
            loss |= r.finished_with_warnings();
            rows.push(CompareRow::of(&r));
        }
        if a.json {
            render::json(&rows)?;
        } else {
            render::print(&compare_text(&rows))?;
        }
        return Ok(if loss { crate::EXIT_WARN } else { 0 });
    }
    let (Some(contract), Some(out)) = (a.contract, a.out) else {
        return Err(bagscope::Error::invalid(
            "contract",
            "`contract` and `out` are needed without `compare`",
        )
        .into());
    };
    let lc = load_contract(&contract)?;
    // Before the bag is read: a folder that cannot take this run's files (a device, an
    // earlier LeRobot dataset this run would mix with or leave stale) is refused.
    bagscope::observe::check_outputs(&out, a.layout.is_some())?;
    let bag = bagscope::io::Bag::open(&a.bag)?;
    let outputs = ObserveOutputs {
        with_fields: a.with_fields,
        lerobot: match (&a.layout, &a.action) {
            (Some(_), Some(act)) => Some((act.clone(), a.task.clone())),
            _ => None,
        },
    };
    // Observations and rejections are written as they are made; the LeRobot dataset beside
    // them, or why it could not be (the tables are written either way).
    let (r, written, lerobot) = observe_to(&bag, &lc, &out, &outputs)?;
    let lerobot = lerobot.transpose()?;
    if a.json {
        render::json(&serde_json::json!({
            "bag": r.bag,
            "contract": r.contract,
            "policy_version": r.report.policy_version,
            "observations": r.report.summary.observations,
            "anchors": r.report.summary.anchors,
            "drops": r.report.summary.drops,
            "summary": r.report.summary,
            "files": written,
            "lerobot": lerobot,
            "warnings": r.warnings,
        }))?;
    } else {
        let mut t = text(&r, &written.observations, &written.rejections);
        if let Some(l) = &lerobot {
            t.push_str(&format!(
                "wrote {} ({} frames at {} fps) and {}\n",
                l.data,
                l.frames,
                l.fps,
                l.meta.join(", ")
            ));
        }
        render::print(&t)?;
    }
    Ok(render::exit_code(&r))
}

fn pct(s: &Option<bagscope::observe::analysis::NsSummary>) -> [String; 2] {
    [opt_ms(s.map(|x| x.p50)), opt_ms(s.map(|x| x.p99))]
}

fn text(r: &ObserveCommandReport, obs: &str, rej: &str) -> String {
    let s = &r.report.summary;
    let mut out = format!(
        "bag: {}\ncontract: {} (policy_version {})\nobservations: {} of {} anchor messages\n",
        r.bag, r.contract, r.report.policy_version, s.observations, s.anchors
    );
    let mut rows = vec![vec![
        "quantity".to_string(),
        "p50 ms".into(),
        "p99 ms".into(),
    ]];
    for (name, v) in [
        ("span", &s.span_ns),
        ("emit age", &s.emit_age_ns),
        ("state gap", &s.gap_ns),
        ("online wait", &s.online_wait_ns),
    ] {
        let [a, b] = pct(v);
        rows.push(vec![name.to_string(), a, b]);
    }
    out.push_str(&table(&rows));
    if !s.drops.is_empty() {
        let mut rows = vec![vec![
            "reason".to_string(),
            "messages".into(),
            "anchors".into(),
        ]];
        for (k, v) in &s.drops {
            rows.push(vec![
                k.as_str().to_string(),
                v.to_string(),
                s.rejected_anchors.get(k).copied().unwrap_or(0).to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&table(&rows));
    }
    if s.epochs.len() > 1 {
        out.push_str(&format!(
            "\nclock epochs: {} (flushed messages {}, warm-up anchors {})\n",
            s.epochs.len(),
            s.epochs.iter().map(|e| e.flushed).sum::<usize>(),
            s.epochs.iter().map(|e| e.warmup_anchors).sum::<usize>()
        ));
    }
    out.push_str(&format!("\nwrote {obs}\nwrote {rej}\n"));
    if !r.warnings.is_empty() {
        out.push('\n');
        out.push_str(&render::warnings(&r.warnings));
    }
    out
}

fn compare_text(rows: &[CompareRow]) -> String {
    let mut t = vec![vec![
        "contract".to_string(),
        "observations".into(),
        "drops".into(),
        "span p50/p99 ms".into(),
        "emit age p50/p99 ms".into(),
        "gap p50/p99 ms".into(),
        "online wait p50/p99 ms".into(),
        "interp. RMS".into(),
    ]];
    let pair = |v: &[Option<i64>; 2]| format!("{} / {}", opt_ms(v[0]), opt_ms(v[1]));
    for r in rows {
        t.push(vec![
            r.contract.clone(),
            format!("{} of {}", r.observations, r.anchors),
            if r.drops.is_empty() {
                "-".into()
            } else {
                r.drops
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            pair(&r.span_ns),
            pair(&r.emit_age_ns),
            pair(&r.gap_ns),
            pair(&r.online_wait_ns),
            render::opt_f(r.interpolation_error_rms, 6),
        ]);
    }
    table(&t)
}
