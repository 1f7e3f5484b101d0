//! `bagscope info`: what is in a bag, from the message indexes where they exist.

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};

use crate::timefmt::human_ns;
use crate::Error;

/// One file the bag is read from (`files` in `info --json`).
#[derive(Debug, Clone, Serialize)]
pub struct FileInfo {
    /// The file's path as opened.
    pub path: String,
    /// Size of the file on disk.
    pub size_bytes: u64,
    /// Number of MCAP chunks in the file (0 for a `.db3` file or an unchunked MCAP file).
    pub chunks: usize,
    /// The compressions the file's chunks use (`lz4`, `none`, `zstd`), sorted; empty for a
    /// `.db3` file.
    pub chunk_compression: Vec<String>,
    /// Whether the MCAP file has a summary section (false for `.db3` files and for MCAP files
    /// cut before their summary).
    pub has_summary: bool,
    /// The MCAP header's profile (`ros2` for rosbag2 recordings); empty for `.db3` files.
    pub profile: String,
}

/// One topic of the bag (`topics` in `info --json`, sorted by name then type).
#[derive(Debug, Clone, Serialize)]
pub struct TopicInfo {
    /// The topic name.
    pub topic: String,
    /// The message type as recorded (`sensor_msgs/msg/Image`); `type` in JSON.
    #[serde(rename = "type")]
    pub type_name: String,
    /// How the messages are serialised (`cdr` for ROS 2).
    pub message_encoding: String,
    /// The format of the recorded message definition (`ros2msg`, `ros2idl`; empty when the bag
    /// holds none).
    pub schema_encoding: String,
    /// Messages of the topic found in the files.
    pub count: u64,
    /// Messages per second over the topic's own span (first to last message), not the bag's;
    /// null below two messages or for a span under 1 ms (`log_span_ns` says what it is).
    pub rate_hz: Option<f64>,
    /// Last − first log time of the topic (0 below two messages).
    pub log_span_ns: i64,
    /// Log time (recorder receive time, on the recorder's clock) of the topic's first
    /// message; None when it has none.
    pub first_log_time_ns: Option<i64>,
    /// Log time of the topic's last message; None when it has none.
    pub last_log_time_ns: Option<i64>,
    /// Median of the differences between consecutive log times; None below two messages or
    /// with `--fast` (which reads no message's time).
    pub median_period_ns: Option<i64>,
    /// The longest time between two consecutive messages by log time (the first such gap when
    /// several are equal); None below two messages or with `--fast`.
    pub largest_gap_ns: Option<i64>,
    /// Log time of the message that ends the largest gap.
    pub largest_gap_end_ns: Option<i64>,
    /// Message count `metadata.yaml` states for the topic; None for a bag without one (a bare
    /// `.mcap` file). A difference to `count` is warned about as `metadata_count_mismatch`.
    pub metadata_count: Option<u64>,
}

/// `bagscope info`: what is in a bag (the CLI's `info --json`).
#[derive(Debug, Clone, Serialize)]
pub struct InfoReport {
    /// The path the bag was opened from.
    pub path: String,
    /// The storage format: `mcap` or `sqlite3` (`.db3`).
    pub storage: String,
    /// Every file read, in the order they are read.
    pub files: Vec<FileInfo>,
    /// Total size of the bag's files on disk.
    pub size_bytes: u64,
    /// The chunk compressions used across the files, sorted and joined by `+` (`zstd`,
    /// `lz4+zstd`; `none` for uncompressed chunks or no chunks at all); ` (+ zstd per message)`
    /// is appended for rosbag2 message-mode compression.
    pub compression: String,
    /// Messages found in the files, all topics.
    pub message_count: u64,
    /// Earliest log time (recorder receive time, on the recorder's clock) of any message; 0
    /// for a bag without messages.
    pub start_ns: i64,
    /// Latest log time of any message; 0 for a bag without messages.
    pub end_ns: i64,
    /// `end_ns − start_ns`.
    pub duration_ns: i64,
    /// `start_ns` for humans: UTC ISO-8601, or seconds for times before 1973 (sim time).
    pub start_time: String,
    /// `end_ns` for humans, formatted as `start_time`.
    pub end_time: String,
    /// True when per-topic times came from message indexes without decompressing chunks.
    pub from_index: bool,
    /// True when every message's log time was read, so median periods and largest gaps are
    /// given; false with `--fast` (counts, first and last from the index records only).
    pub cadence: bool,
    /// True when `--fast` answered from the files' summaries alone (the data section was not
    /// walked, so damage there is not seen: run without `--fast` to check it).
    pub summary_only: bool,
    /// Every topic the bag declares, sorted by name then type.
    pub topics: Vec<TopicInfo>,
    /// What was found wrong while reading (damage, missing files, late or early topics, counts
    /// that disagree with `metadata.yaml` or the summary), sorted.
    pub warnings: Vec<Warning>,
}

impl InfoReport {
    /// True when a warning says messages were lost (exit code 3).
    pub fn data_loss(&self) -> bool {
        self.warnings.iter().any(|w| w.data_loss)
    }
}

/// A topic whose first message comes this long after the bag starts (or whose last comes this
/// long before it ends) is flagged: at least 1 s and at least 10 % of the bag.
fn late_threshold_ns(duration_ns: i64) -> i64 {
    (duration_ns / 10).max(1_000_000_000)
}

/// Fewest messages for a topic's start or end to be called late or early: one or two messages
/// (a robot description, a one-shot command) have no cadence to start late.
const MIN_CADENCE_MESSAGES: u64 = 3;

/// Topics published once and kept (latched: transient-local durability, as `/tf_static` always
/// is): a first message at the start and none after is their normal shape, not an early end.
fn published_once(t: &bagscope_bag::Topic) -> bool {
    t.name == "/tf_static"
        || t.name.ends_with("/tf_static")
        || t.offered_qos_profiles
            .as_deref()
            .is_some_and(|q| q.contains("transient_local") || q.contains("durability: 1"))
}

/// How much `info` reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct InfoOptions {
    /// Only what the summary and the message index records give without reading each entry
    /// (counts, first and last log time, rate): work grows with chunks, not messages. No
    /// median period or gaps. Falls back to the full read where the indexes cannot answer.
    pub fast: bool,
}

/// A topic's arrival facts, whichever way they were read.
struct Cadence {
    count: u64,
    first: Option<i64>,
    last: Option<i64>,
    median_period_ns: Option<i64>,
    largest_gap: Option<(i64, i64)>,
}

impl Cadence {
    /// From sorted log times, which become the periods in place (no second vector).
    fn of_times(times: &mut Vec<i64>) -> Cadence {
        let (first, last) = (times.first().copied(), times.last().copied());
        let largest_gap = times
            .windows(2)
            .enumerate()
            .map(|(i, w)| (w[1] - w[0], i))
            .max_by_key(|(p, i)| (*p, std::cmp::Reverse(*i)))
            .map(|(p, i)| (p, times[i + 1]));
        let count = times.len() as u64;
        for i in 1..times.len() {
            times[i - 1] = times[i] - times[i - 1];
        }
        times.pop();
        Cadence {
            count,
            first,
            last,
            median_period_ns: bagscope_stats::median_in_place(times),
            largest_gap,
        }
    }
}

/// `bagscope info` of the bag at `path`: every message's log time is read (see
/// [`info_with`] for `--fast`).
pub fn info(path: &std::path::Path) -> Result<InfoReport, Error> {
    info_with(path, &InfoOptions::default())
}

/// `bagscope info` of the bag at `path` with options: with `fast`, MCAP files are opened from
/// their summaries where those can answer (no median periods or gaps, `cadence` false).
pub fn info_with(path: &std::path::Path, o: &InfoOptions) -> Result<InfoReport, Error> {
    // --fast: the summaries alone when every file has a usable one; else the walk's indexes;
    // else the full read. Files whose summary cannot answer are walked by this same open.
    let mut bag = Bag::open_with(
        path,
        bagscope_bag::OpenOptions {
            trust_summary: o.fast,
            ..Default::default()
        },
    )?;
    let mut spans = if o.fast {
        bag.topic_spans(&bag.all_topics())
    } else {
        None
    };
    // A file opened from its summary has no chunks to read: if the summaries could not answer
    // after all, open the bag the usual way.
    if spans.is_none() && bag.files.iter().any(|f| f.is_summary_only()) {
        bag = Bag::open(path)?;
        spans = bag.topic_spans(&bag.all_topics());
    }
    let summary_only = spans.is_some() && bag.files.iter().any(|f| f.is_summary_only());
    Ok(info_from(&bag, spans, summary_only))
}

/// [`info`] of an open bag (rates and gaps from every message's log time, read from the
/// message indexes where they are complete).
pub fn info_of(bag: &Bag) -> InfoReport {
    info_from(bag, None, false)
}

fn info_from(
    bag: &Bag,
    spans: Option<Vec<bagscope_bag::TopicSpan>>,
    summary_only: bool,
) -> InfoReport {
    let cadence = spans.is_none();
    let (per_topic, scan_warnings): (Vec<Cadence>, Vec<Warning>) = match spans {
        Some(spans) => (
            spans
                .into_iter()
                .map(|s| Cadence {
                    count: s.count,
                    first: s.first_log_time_ns,
                    last: s.last_log_time_ns,
                    median_period_ns: None,
                    largest_gap: None,
                })
                .collect(),
            Vec::new(),
        ),
        None => {
            let (mut times, w) = bag.topic_log_times(&bag.all_topics());
            (times.iter_mut().map(Cadence::of_times).collect(), w)
        }
    };
    let message_count: u64 = per_topic.iter().map(|t| t.count).sum();
    let from_index = bag
        .files
        .iter()
        .all(|f| f.chunk_count() > 0 && f.warnings.iter().all(|w| !w.data_loss));

    let mut warnings = bag.open_warnings();
    warnings.extend(scan_warnings);
    warnings.extend(crate::recorder_events::lost_messages(bag));

    let start_ns = per_topic.iter().filter_map(|t| t.first).min().unwrap_or(0);
    let end_ns = per_topic.iter().filter_map(|t| t.last).max().unwrap_or(0);
    let duration_ns = end_ns - start_ns;
    let mut topics = Vec::new();
    for (ti, t) in bag.topics.iter().enumerate() {
        // Rates and gaps are about arrival cadence: sorted log times (sorted by the read).
        let c = &per_topic[ti];
        let (count, first, last) = (c.count, c.first, c.last);
        let span = match (first, last) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        };
        let rate_hz = bagscope_stats::rate_hz(count, span);
        let (largest_gap_ns, largest_gap_end_ns) = c.largest_gap.unzip();
        if count == 0 {
            warnings.push(
                Warning::new(
                    WarningCode::ZeroCountTopic,
                    "topic is declared but has no messages",
                )
                .topic(&t.name),
            );
        } else if count >= MIN_CADENCE_MESSAGES && duration_ns > 0 && !published_once(t) {
            let thr = late_threshold_ns(duration_ns);
            let (first, last) = (first.unwrap_or(start_ns), last.unwrap_or(end_ns));
            if first - start_ns > thr {
                warnings.push(
                    Warning::new(
                        WarningCode::LateStart,
                        format!(
                            "first message {:.3} s after the bag starts",
                            (first - start_ns) as f64 / 1e9
                        ),
                    )
                    .topic(&t.name),
                );
            }
            if end_ns - last > thr {
                warnings.push(
                    Warning::new(
                        WarningCode::EarlyEnd,
                        format!(
                            "last message {:.3} s before the bag ends",
                            (end_ns - last) as f64 / 1e9
                        ),
                    )
                    .topic(&t.name),
                );
            }
        }
        if let Some(mc) = t.metadata_count {
            if mc != count && !warnings.iter().any(|w| w.data_loss) {
                warnings.push(
                    Warning::new(
                        WarningCode::MetadataCountMismatch,
                        format!("metadata.yaml says {mc} messages, the files hold {count}"),
                    )
                    .topic(&t.name),
                );
            }
        }
        topics.push(TopicInfo {
            topic: t.name.clone(),
            type_name: t.type_name.clone(),
            message_encoding: t.message_encoding.clone(),
            schema_encoding: t.schema_encoding.clone(),
            count,
            rate_hz,
            log_span_ns: span,
            first_log_time_ns: first,
            last_log_time_ns: last,
            median_period_ns: c.median_period_ns,
            largest_gap_ns,
            largest_gap_end_ns,
            metadata_count: t.metadata_count,
        });
    }
    topics.sort_by(|a, b| a.topic.cmp(&b.topic).then(a.type_name.cmp(&b.type_name)));
    for f in &bag.files {
        if let Some(s) = f.stats_message_count {
            if bag.files.len() == 1 && s != message_count && !warnings.iter().any(|w| w.data_loss) {
                warnings.push(
                    Warning::new(
                        WarningCode::StatisticsMismatch,
                        format!(
                            "the summary's Statistics record says {s} messages, the data section holds {message_count}"
                        ),
                    )
                    .file(f.path.display().to_string()),
                );
            }
        }
    }
    // Missing split files: how much of the bag that is, where metadata.yaml counts it.
    let missing = warnings.iter().filter(|w| w.code == "missing_file").count();
    let listed: Option<u64> = topics.iter().map(|t| t.metadata_count).sum();
    if let (true, Some(listed)) = (missing > 0, listed) {
        if listed > message_count {
            warnings.push(
                Warning::new(
                    WarningCode::MissingMessages,
                    format!(
                        "{message_count} of the {listed} messages metadata.yaml lists are present: {} are in the {missing} missing file(s)",
                        listed - message_count
                    ),
                )
                .loss(),
            );
        }
    }
    warnings.sort();
    warnings.dedup();

    let mut compression: Vec<String> = bag
        .files
        .iter()
        .flat_map(|f| f.compression_counts.keys().cloned())
        .collect();
    compression.sort();
    compression.dedup();
    let mut compression = if compression.is_empty() {
        "none".to_string()
    } else {
        compression.join("+")
    };
    if bag.message_compression {
        compression.push_str(" (+ zstd per message)");
    }
    InfoReport {
        path: bag.path.display().to_string(),
        storage: bag.storage().to_string(),
        files: bag
            .files
            .iter()
            .map(|f| FileInfo {
                path: f.path.display().to_string(),
                size_bytes: f.size(),
                chunks: f.chunk_count(),
                chunk_compression: f.compression_counts.keys().cloned().collect(),
                has_summary: f.has_summary,
                profile: f.profile.clone(),
            })
            // sqlite3 bags: one row per database file (no chunks, no summary).
            .chain(bag.db3_files.iter().map(|f| FileInfo {
                path: f.path.display().to_string(),
                size_bytes: f.size,
                chunks: 0,
                chunk_compression: Vec::new(),
                has_summary: false,
                profile: String::new(),
            }))
            .collect(),
        size_bytes: bag.size_bytes(),
        compression,
        message_count,
        start_ns,
        end_ns,
        duration_ns,
        start_time: human_ns(start_ns),
        end_time: human_ns(end_ns),
        from_index,
        cadence,
        summary_only,
        topics,
        warnings,
    }
}
