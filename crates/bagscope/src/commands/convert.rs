//! `bagscope convert IN OUT.mcap`: rewrite any bag bagscope reads (sqlite3 `.db3` included) as
//! one rosbag2-compatible MCAP file: `ros2` profile, zstd chunks, message indexes, summary,
//! `ros2msg` schemas, `offered_qos_profiles` channel metadata and the `rosbag2` Metadata record.
//!
//! Messages are streamed (one chunk or one row per input file at a time), never collected. With
//! topic filters and a time window it cuts a bag (as `ros2 bag convert` and `mcap filter` do);
//! a damaged input's readable messages are kept and the loss stated, so it also recovers.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Rosbag2Writer, Warning, WriteChannel, WriteError};

use crate::Error;

/// How `convert` writes its output and what it keeps (`Default`: every topic, every message).
/// The fields are the parameters' names (Python's keywords, the CLI's flags).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ConvertOptions {
    /// Replace OUTPUT if it exists.
    #[cfg_attr(feature = "clap", arg(long))]
    pub force: bool,
    /// Write only these topics (comma separated or repeated; default: all).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', num_args = 1..))]
    pub topics: Vec<String>,
    /// Also write the topics whose name matches this regular expression.
    #[cfg_attr(feature = "clap", arg(long))]
    pub regex: Option<String>,
    /// Leave these topics out.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', num_args = 1..))]
    pub exclude_topics: Vec<String>,
    /// Leave out the topics whose name matches this regular expression.
    #[cfg_attr(feature = "clap", arg(long))]
    pub exclude_regex: Option<String>,
    /// Write messages logged from this time: `+SECONDS` or `+DURATION` after the bag's first
    /// message (`+2.5`, `+1500ms`), nanoseconds since the epoch, or an RFC 3339 time.
    #[cfg_attr(feature = "clap", arg(long))]
    pub start: Option<crate::window::TimeBound>,
    /// Write messages logged before this time, as `start`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub end: Option<crate::window::TimeBound>,
}

impl ConvertOptions {
    /// The topics chosen, as `bagscope-bag`'s one rule for topic selection.
    pub fn filter(&self) -> crate::window::TopicFilter {
        crate::window::TopicFilter {
            topics: self.topics.clone(),
            regex: self.regex.clone(),
            exclude_topics: self.exclude_topics.clone(),
            exclude_regex: self.exclude_regex.clone(),
        }
    }
}

/// One topic as written (`topics` in `convert --json`, sorted by name then type).
#[derive(Debug, Clone, Serialize)]
pub struct ConvertTopic {
    /// The topic name.
    pub topic: String,
    /// The message type as recorded; `type` in JSON.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Messages of the topic written.
    pub count: u64,
    /// Where the written schema came from: `bag` (embedded in the input), `builtin`, or `none`
    /// (an empty schema was written: the type is unknown to bagscope).
    pub schema_source: String,
}

/// What `bagscope convert` wrote (the CLI's `convert --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ConvertReport {
    /// The input bag's path.
    pub input: String,
    /// The MCAP file written.
    pub output: String,
    /// The input's storage format: `mcap` or `sqlite3`.
    pub input_storage: String,
    /// Messages written, all topics.
    pub message_count: u64,
    /// Earliest log time (recorder receive time, ns) written; None when no message was.
    pub start_ns: Option<i64>,
    /// Latest log time written; None when no message was.
    pub end_ns: Option<i64>,
    /// False when the input stores no publish time (sqlite3): publish time was then written
    /// equal to log time, as rosbag2 does for such sources.
    pub publish_time_from_input: bool,
    /// Every topic of the input, written even when it has no messages.
    pub topics: Vec<ConvertTopic>,
    /// Damage found in the input (its messages are missing from the output), topics written
    /// without a schema, negative times written as 0; sorted.
    pub warnings: Vec<Warning>,
}

impl ConvertReport {}

/// Per-topic bookkeeping while writing.
#[derive(Default, Clone)]
struct Tally {
    count: u64,
    first: Option<i64>,
    last: Option<i64>,
}

/// `bagscope convert`: rewrites the bag at `input` as one rosbag2-compatible MCAP file at
/// `output` (written as `output.partial`, renamed when complete). Refuses an existing `output`
/// without `force`, an output that is one of the input's files, and an output named as another
/// format (`*.mcap.zstd`, `*.db3`: a usage error).
pub fn convert(input: &Path, output: &Path, opts: &ConvertOptions) -> Result<ConvertReport, Error> {
    // Before the bag is read: `OUT.mcap.zstd` would be a plain MCAP file under a compressed
    // name, which readers (this one too) refuse.
    bagscope_bag::write::check_output_name(output)
        .map_err(|reason| Error::invalid("output", format!("{}: {reason}", output.display())))?;
    let bag = Bag::open(input)?;
    crate::refuse_output_file(output)?;
    if output.exists() && !opts.force {
        return Err(Error::refused_output(
            output,
            format!("{} exists (give `force` to replace it)", output.display()),
        ));
    }
    let inputs = bag.input_paths();
    // Written as OUT.partial and renamed when complete (an interrupted run leaves no half
    // file under the requested name; a failed one leaves nothing).
    let w = Rosbag2Writer::create(
        output,
        concat!("bagscope ", env!("CARGO_PKG_VERSION")),
        &inputs,
    )?;
    let wanted = opts.filter().wanted(&bag)?;
    let window = crate::window::log_window(&bag, opts.start, opts.end);
    let mut report = write(&bag, w, output, &wanted, window)?;
    report.input = input.display().to_string();
    Ok(report)
}

fn write(
    bag: &Bag,
    mut w: Rosbag2Writer,
    output: &Path,
    wanted: &[bool],
    (start, end): (i64, i64),
) -> Result<ConvertReport, Error> {
    let mut warnings = bag.open_warnings();

    let mut channel = Vec::with_capacity(bag.topics.len());
    let mut sources = Vec::with_capacity(bag.topics.len());
    for (i, t) in bag.topics.iter().enumerate() {
        if !wanted[i] {
            channel.push(None);
            sources.push("none");
            continue;
        }
        let (enc, data, source) = match bagscope_msg::schema::builtin::schema_for_writing(
            &t.type_name,
            &t.schema_encoding,
            &t.schema_data,
        ) {
            Some(s) => s,
            None => {
                warnings.push(
                    Warning::new(
                        WarningCode::SchemaUnknown,
                        format!(
                            "no definition for {} in the bag or built in: written with an empty schema (readers cannot decode it)",
                            t.type_name
                        ),
                    )
                    .topic(&t.name),
                );
                ("ros2msg".into(), Vec::new(), "none")
            }
        };
        sources.push(source);
        let k = w.add_channel(&WriteChannel {
            topic: &t.name,
            type_name: &t.type_name,
            schema_encoding: &enc,
            schema_data: &data,
            message_encoding: &t.message_encoding,
            offered_qos_profiles: t.offered_qos_profiles.as_deref().unwrap_or(""),
            type_description_hash: t.type_description_hash.as_deref(),
        })?;
        channel.push(Some(k));
    }

    let mut tally = vec![Tally::default(); bag.topics.len()];
    let mut failed: Option<WriteError> = None;
    let never = std::sync::atomic::AtomicBool::new(false);
    let scan_warnings = bag.visit_window(
        wanted,
        (start, end),
        &never,
        |m| {
            if failed.is_some() {
                return;
            }
            let Some(k) = channel[m.topic] else {
                return;
            };
            let t = &mut tally[m.topic];
            t.count += 1;
            t.first = Some(t.first.map_or(m.log_time_ns, |f| f.min(m.log_time_ns)));
            t.last = Some(t.last.map_or(m.log_time_ns, |l| l.max(m.log_time_ns)));
            let log = m.log_time_ns;
            // Sources without a publish time (sqlite3): rosbag2 writes the log time.
            let publ = m.publish_time_ns.unwrap_or(log);
            if let Err(e) = w.write(k, Some(m.sequence), log, publ, m.data) {
                failed = Some(e);
            }
        },
        |_, _| {},
    );
    if let Some(e) = failed {
        return Err(e.into());
    }
    warnings.extend(scan_warnings);
    let clamped = w.negative_times();
    if clamped > 0 {
        warnings.push(Warning::new(
            WarningCode::NegativeTime,
            format!(
                "{clamped} message(s) have a negative time, which MCAP cannot store: written as 0"
            ),
        ));
    }

    let message_count: u64 = tally.iter().map(|t| t.count).sum();
    let start = tally.iter().filter_map(|t| t.first).min();
    let end = tally.iter().filter_map(|t| t.last).max();
    let file_name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let yaml = rosbag2_metadata_yaml(bag, wanted, &tally, &file_name, start, end);
    w.write_metadata(
        "rosbag2",
        BTreeMap::from([("serialized_metadata".to_string(), yaml)]),
    )?;
    w.finish()?;

    let mut topics: Vec<ConvertTopic> = bag
        .topics
        .iter()
        .zip(&tally)
        .zip(&sources)
        .zip(wanted)
        .filter(|(_, &w)| w)
        .map(|(((t, n), s), _)| ConvertTopic {
            topic: t.name.clone(),
            type_name: t.type_name.clone(),
            count: n.count,
            schema_source: s.to_string(),
        })
        .collect();
    topics.sort_by(|a, b| a.topic.cmp(&b.topic).then(a.type_name.cmp(&b.type_name)));
    warnings.sort();
    warnings.dedup();
    Ok(ConvertReport {
        input: String::new(),
        output: output.display().to_string(),
        input_storage: bag.storage().to_string(),
        message_count,
        start_ns: start,
        end_ns: end,
        publish_time_from_input: bag.has_publish_time(),
        topics,
        warnings,
    })
}

/// Double-quoted YAML scalar: JSON string syntax is valid YAML and keeps newlines (QoS
/// profiles are multi-line YAML text), where single quotes would fold them into spaces.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "''".into())
}

/// rosbag2's `BagMetadata` as YAML (what rosbag2's MCAP plugin stores in the `rosbag2` Metadata
/// record, `serialized_metadata`): lets `ros2 bag reindex` / `info` recover it from the file.
fn rosbag2_metadata_yaml(
    bag: &Bag,
    wanted: &[bool],
    tally: &[Tally],
    file_name: &str,
    start: Option<i64>,
    end: Option<i64>,
) -> String {
    let total: u64 = tally.iter().map(|t| t.count).sum();
    let start = start.unwrap_or(0);
    let duration = end.map_or(0, |e| e - start);
    let mut y = String::new();
    y.push_str("version: 9\nstorage_identifier: mcap\n");
    y.push_str(&format!("duration:\n  nanoseconds: {duration}\n"));
    y.push_str(&format!(
        "starting_time:\n  nanoseconds_since_epoch: {start}\n"
    ));
    y.push_str(&format!("message_count: {total}\n"));
    y.push_str("topics_with_message_count:\n");
    if !wanted.contains(&true) {
        y.push_str("  []\n");
    }
    for ((t, n), _) in bag.topics.iter().zip(tally).zip(wanted).filter(|(_, &w)| w) {
        y.push_str(&format!(
            "  - topic_metadata:\n      name: {}\n      type: {}\n      serialization_format: {}\n      offered_qos_profiles: {}\n      type_description_hash: {}\n    message_count: {}\n",
            q(&t.name),
            q(&t.type_name),
            q(if t.message_encoding.is_empty() { "cdr" } else { &t.message_encoding }),
            q(t.offered_qos_profiles.as_deref().unwrap_or("")),
            q(t.type_description_hash.as_deref().unwrap_or("")),
            n.count
        ));
    }
    y.push_str("compression_format: ''\ncompression_mode: ''\n");
    y.push_str(&format!("relative_file_paths:\n  - {}\n", q(file_name)));
    y.push_str(&format!(
        "files:\n  - path: {}\n    starting_time:\n      nanoseconds_since_epoch: {start}\n    duration:\n      nanoseconds: {duration}\n    message_count: {total}\n",
        q(file_name)
    ));
    y.push_str("custom_data: ~\n");
    let distro = bag
        .metadata
        .as_ref()
        .and_then(|m| m.ros_distro.clone())
        .or_else(|| bag.db3_files.iter().find_map(|f| f.ros_distro.clone()))
        .unwrap_or_default();
    y.push_str(&format!("ros_distro: {}\n", q(&distro)));
    y
}
