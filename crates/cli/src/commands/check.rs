use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use bagscope::check::{check, CheckOptions, CheckReport};
use bagscope::sync_policy::parse_duration_ns;

use crate::render;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    /// JSON file {"joint": [min, max], ...} of joint position limits.
    #[arg(long)]
    pub limits: Option<PathBuf>,
    /// Flag commands whose stamp is older than this when recorded, e.g. `200ms`.
    #[arg(long)]
    pub max_command_age: Option<String>,
    /// Exit 3 only for findings with these codes (default: any error-level finding).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub fail_on: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let mut o = CheckOptions::default();
    if let Some(p) = &a.limits {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read limits file {}", p.display()))?;
        let m: BTreeMap<String, (f64, f64)> = serde_json::from_str(&text).with_context(|| {
            format!(
                "limits file must be {{\"joint\": [min, max]}}: {}",
                p.display()
            )
        })?;
        o.joints.limits = m;
    }
    if let Some(s) = &a.max_command_age {
        o.joints.max_command_age_ns =
            Some(parse_duration_ns(s).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    let codes = bagscope::check_rules::FINDING_CODES;
    if let Some(bad) = a.fail_on.iter().find(|c| !codes.contains(&c.as_str())) {
        return Err(crate::UsageError(format!(
            "--fail-on {bad}: no check gives that code (the codes: {})",
            codes.join(", ")
        ))
        .into());
    }
    let r = check(&a.bag, &o)?;
    if a.json {
        render::json(&r)?;
    } else {
        render::print(&text(&r))?;
    }
    let failing = r.findings.iter().any(|f| {
        if a.fail_on.is_empty() {
            f.severity == bagscope::check_rules::Severity::Error
        } else {
            a.fail_on.contains(&f.code)
        }
    });
    let loss = r.warnings.iter().any(|w| w.data_loss);
    Ok(if failing || loss { crate::EXIT_WARN } else { 0 })
}

fn text(r: &CheckReport) -> String {
    let mut s = format!(
        "bag: {}\ndata loss: {}; split clock axes: {}\n",
        r.bag,
        if r.verdicts.data_loss { "YES" } else { "no" },
        if r.verdicts.split { "YES" } else { "no" }
    );
    s.push_str(&render::findings(&r.verdicts.findings));
    s.push_str("\nchecked:\n");
    for (t, what) in &r.checked {
        s.push_str(&format!("  {t}  ({what})\n"));
    }
    if r.findings.is_empty() {
        s.push_str("\nno message violates its contract\n");
    } else {
        s.push_str(&format!("\n{} message finding(s):\n", r.findings.len()));
        let mut rows = vec![vec![
            "code".to_string(),
            "topic".into(),
            "index".into(),
            "message".into(),
        ]];
        for f in &r.findings {
            rows.push(vec![
                f.code.clone(),
                f.topic.clone(),
                f.index.to_string(),
                f.message.clone(),
            ]);
        }
        s.push_str(&render::table(&rows));
    }
    s
}
