use std::path::PathBuf;

use bagscope::check::{check, validate_fail_on, CheckOptions, CheckReport};

use crate::render;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub options: CheckOptions,
    /// Exit 3 only for findings with these codes (default: any error-level finding).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub fail_on: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    validate_fail_on(&a.fail_on)?;
    let r = check(&a.bag, &a.options)?;
    let failing = r.failing(&a.fail_on);
    render::finish_with(&r, a.json, text, failing)
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
