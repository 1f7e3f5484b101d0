use std::path::PathBuf;

use bagscope::convert::{convert, ConvertOptions, ConvertReport};
use bagscope::window::{TimeBound, TopicFilter};

use crate::render;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Input bag: a rosbag2 folder (sqlite3 or mcap), a .db3 or .mcap file, or a split set.
    pub input: PathBuf,
    /// Output .mcap file (rosbag2-compatible: ros2 profile, zstd chunks, indexes, summary).
    #[arg(value_parser = crate::render::output_path)]
    pub output: PathBuf,
    /// Replace OUTPUT if it exists.
    #[arg(long)]
    pub force: bool,
    /// Write only these topics (comma separated or repeated; default: all).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub(crate) topics: Vec<String>,
    /// Also write the topics whose name matches this regular expression.
    #[arg(long)]
    pub(crate) regex: Option<String>,
    /// Leave these topics out.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub(crate) exclude_topics: Vec<String>,
    /// Leave out the topics whose name matches this regular expression.
    #[arg(long)]
    pub(crate) exclude_regex: Option<String>,
    /// Write messages logged from this time: `+SECONDS` or `+DURATION` after the bag's first
    /// message (`+2.5`, `+1500ms`), nanoseconds since the epoch, or an RFC 3339 time.
    #[arg(long)]
    pub(crate) start: Option<String>,
    /// Write messages logged before this time, as `--start`.
    #[arg(long)]
    pub(crate) end: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let o = ConvertOptions {
        force: a.force,
        filter: TopicFilter {
            topics: a.topics,
            regex: a.regex,
            exclude_topics: a.exclude_topics,
            exclude_regex: a.exclude_regex,
        },
        start: a.start.as_deref().map(TimeBound::parse).transpose()?,
        end: a.end.as_deref().map(TimeBound::parse).transpose()?,
    };
    let r = convert(&a.input, &a.output, &o)?;
    if a.json {
        render::json(&r)?;
    } else {
        render::print(&text(&r))?;
    }
    Ok(if r.data_loss() { crate::EXIT_WARN } else { 0 })
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
