use std::path::PathBuf;

use bagscope::convert::{convert, ConvertOptions, ConvertReport};

use crate::render;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Input bag: a rosbag2 folder (sqlite3 or mcap), a .db3 or .mcap file, or a split set.
    pub input: PathBuf,
    /// Output .mcap file (rosbag2-compatible: ros2 profile, zstd chunks, indexes, summary).
    #[arg(value_parser = crate::render::output_path)]
    pub output: PathBuf,
    #[command(flatten)]
    pub options: ConvertOptions,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let r = convert(&a.input, &a.output, &a.options)?;
    render::finish(&r, a.json, text)
}

fn text(r: &ConvertReport) -> String {
    let mut s = format!(
        "wrote {} ({} messages, {} topics) from {} ({})\n",
        r.output,
        r.message_count,
        r.topics.len(),
        r.input,
        r.input_storage
    );
    if !r.publish_time_from_input {
        s.push_str("note: the input has no publish times; publish time = log time in the output\n");
    }
    let mut rows = vec![vec![
        "topic".to_string(),
        "type".into(),
        "count".into(),
        "schema".into(),
    ]];
    for t in &r.topics {
        rows.push(vec![
            t.topic.clone(),
            t.type_name.clone(),
            t.count.to_string(),
            t.schema_source.clone(),
        ]);
    }
    s.push_str(&render::table(&rows));
    if !r.warnings.is_empty() {
        s.push('\n');
        s.push_str(&render::warnings(&r.warnings));
    }
    s
}
