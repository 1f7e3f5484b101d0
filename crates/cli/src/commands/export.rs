use std::path::PathBuf;

use bagscope::export::{export, ExportOptions, ExportReport};
use bagscope::tables::Format;

use crate::render::{self, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder, a folder of .mcap files, one .mcap file or a .db3 bag.
    pub bag: PathBuf,
    /// Topics to export, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub topics: Vec<String>,
    /// Output: OUT.parquet / OUT.csv (several topics: OUT.<topic>.parquet beside it), or a
    /// directory (DIR/<topic>.parquet; with --timing-only DIR/timing.parquet), or `-`: one
    /// table as CSV on standard output (--format csv; one topic, or --timing-only), the report
    /// then on standard error.
    #[arg(short = 'o', long = "output", visible_alias = "out")]
    pub out: PathBuf,
    /// Field paths to keep, comma-separated (header.frame_id,position); a path keeps
    /// everything under it. Default: all fields.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub fields: Vec<String>,
    /// Arrays of numbers as one column per element (position_0, position_1, …).
    #[arg(long)]
    pub explode: bool,
    /// One table of all topics' times (bag, topic, type, log/publish/stamp, axis, size); TF
    /// topics get one row per transform (its stamp, parent_frame, child_frame,
    /// transform_index).
    #[arg(long)]
    pub timing_only: bool,
    /// Format when -o is a directory.
    #[arg(long, value_parser = ["parquet", "csv"], default_value = "parquet")]
    pub format: String,
    /// Rows per row group (memory is bounded by about twice this, or 128 MiB of payload).
    #[arg(long, default_value_t = 65_536)]
    pub row_group_rows: usize,
    /// CSV: write string cells exactly as recorded. By default a cell starting with = + - @,
    /// a tab or a carriage return (and not a number) gets a leading ' so that spreadsheets
    /// show it as text instead of evaluating it (OWASP's advice against CSV injection).
    #[arg(long)]
    pub csv_raw: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let o = ExportOptions {
        topics: a.topics,
        fields: a.fields,
        explode: a.explode,
        timing_only: a.timing_only,
        format: if a.format == "csv" {
            Format::Csv
        } else {
            Format::Parquet
        },
        row_group_rows: a.row_group_rows,
        csv_raw: a.csv_raw,
        ..Default::default()
    };
    let r = if render::is_stdout(&a.out) {
        to_stdout(&a.bag, &o)?
    } else {
        export(&a.bag, &a.out, &o)?
    };
    render::finish(&r, a.json, text)
}

/// `-o -`: the one CSV table written to a temporary file, then to standard output.
fn to_stdout(bag: &std::path::Path, o: &ExportOptions) -> anyhow::Result<ExportReport> {
    let usage = |m: &str| bagscope::Error::invalid("out", format!("-: {m}"));
    if o.format != Format::Csv {
        return Err(usage(
            "standard output takes CSV only (Parquet is written as a file): add `format` csv",
        )
        .into());
    }
    if !o.timing_only && o.topics.len() != 1 {
        return Err(usage(
            "standard output holds one table: give one topic with `topics`, or `timing_only`",
        )
        .into());
    }
    let stage = render::StdoutStage::new()?;
    let file = stage.file("out.csv");
    let mut r = export(bag, &file, o)?;
    if r.tables.len() != 1 {
        return Err(usage("standard output holds one table; this export makes several").into());
    }
    stage.copy_out(&file)?;
    for t in &mut r.tables {
        t.path = Some("-".into());
    }
    Ok(r)
}

fn text(r: &ExportReport) -> String {
    let mut rows = vec![vec![
        "file".to_string(),
        "topics".into(),
        "rows".into(),
        "columns".into(),
    ]];
    for t in &r.tables {
        rows.push(vec![
            t.path.clone().unwrap_or_default(),
            if t.topics.len() > 3 {
                format!("{} topics", t.topics.len())
            } else {
                t.topics.join(",")
            },
            t.rows.to_string(),
            t.columns.len().to_string(),
        ]);
    }
    let mut s = format!("bag: {}\n", r.bag);
    s.push_str(&table(&rows));
    if !r.warnings.is_empty() {
        s.push('\n');
        s.push_str(&render::warnings(&r.warnings));
    }
    s
}
