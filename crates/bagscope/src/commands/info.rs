//! `bagscope info`: what is in a bag, from the message indexes where they exist.

use std::collections::BTreeMap;

use serde::Serialize;

use bagscope_bag::qos::{Durability, Liveliness, Reliability};
use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};

use crate::services::ServiceInfo;

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
    /// The MCAP header's library (the writer: `mcap-cpp ...`, `rosbag2 ...`); empty when the
    /// file names none and for `.db3` files.
    pub library: String,
    /// The file's MCAP Metadata records, in file order (rosbag2 writes one named `rosbag2`
    /// with its bag metadata); empty for `.db3` files.
    pub metadata: Vec<MetadataRecord>,
}

/// One MCAP Metadata record.
#[derive(Debug, Clone, Serialize)]
pub struct MetadataRecord {
    /// The record's name.
    pub name: String,
    /// Its key/value pairs, sorted by key.
    pub metadata: BTreeMap<String, String>,
}

/// The chunks of one compression over all files (`chunk_compression` in `info --json`).
#[derive(Debug, Clone, Serialize)]
pub struct CompressionInfo {
    /// `zstd`, `lz4` or `none`.
    pub compression: String,
    /// Chunks using it.
    pub chunks: usize,
    /// Their records' bytes as stored.
    pub compressed_bytes: u64,
    /// Their records' bytes uncompressed, as the chunk headers state them.
    pub uncompressed_bytes: u64,
    /// `uncompressed_bytes / compressed_bytes`; None when nothing is stored.
    pub ratio: Option<f64>,
}

/// One QoS profile a recorded publisher offered (`offered_qos` in `info --json`). Every policy
/// is None where rosbag2 recorded the system default, an unknown value or nothing; durations
/// are None when infinite.
#[derive(Debug, Clone, Serialize)]
pub struct QosInfo {
    /// `reliable` or `best_effort`.
    pub reliability: Option<Reliability>,
    /// `volatile` or `transient_local`.
    pub durability: Option<Durability>,
    /// `keep_last` or `keep_all`.
    pub history: Option<&'static str>,
    /// History depth (None where rosbag2 recorded 0: unknown).
    pub depth: Option<u32>,
    /// Deadline, ns.
    pub deadline_ns: Option<i64>,
    /// Lifespan, ns.
    pub lifespan_ns: Option<i64>,
    /// `automatic`, `manual_by_node` or `manual_by_topic`.
    pub liveliness: Option<Liveliness>,
    /// Liveliness lease duration, ns.
    pub liveliness_lease_ns: Option<i64>,
}

impl From<bagscope_bag::qos::Profile> for QosInfo {
    fn from(p: bagscope_bag::qos::Profile) -> Self {
        QosInfo {
            reliability: p.reliability,
            durability: p.durability,
            history: p.keep_all.map(|a| if a { "keep_all" } else { "keep_last" }),
            depth: p.depth,
            deadline_ns: p.deadline_ns,
            lifespan_ns: p.lifespan_ns,
            liveliness: p.liveliness,
            liveliness_lease_ns: p.lease_ns,
        }
    }
}

/// An image topic's raw bandwidth as its format implies, against what was recorded (`image`
/// in `info --json`, for `sensor_msgs/msg/Image` topics; from the topic's first message).
#[derive(Debug, Clone, Serialize)]
pub struct ImageBandwidth {
    /// Columns, pixels.
    pub width: u32,
    /// Rows, pixels.
    pub height: u32,
    /// Pixel encoding as recorded.
    pub encoding: String,
    /// Bytes per pixel of the encoding; None for an encoding bagscope does not know.
    pub bytes_per_pixel: Option<u32>,
    /// width × height × bytes per pixel × `rate_hz`, bytes per second; None without a rate or
    /// a known encoding.
    pub expected_raw_bps: Option<f64>,
    /// The topic's `mean_bandwidth_bps` divided by `expected_raw_bps`: about 1 for raw images
    /// (a little above: header, row padding); None where either is unknown.
    pub recorded_over_expected: Option<f64>,
}

/// How `info` orders its topics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum InfoSort {
    /// By name, then type (the default).
    #[default]
    Name,
    /// Most messages first.
    Count,
    /// Most payload bytes first (topics without sizes last).
    Size,
    /// Highest rate first (topics without a rate last).
    Rate,
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
    /// Sum of the payload lengths as stored (serialized messages; the compressed frames under
    /// rosbag2 message compression); None with `--fast`, which reads no message.
    pub size_bytes: Option<u64>,
    /// `size_bytes / count`; None without messages or sizes.
    pub mean_message_bytes: Option<f64>,
    /// Bytes per second over the topic's own span: `mean_message_bytes × rate_hz`; None where
    /// either is None.
    pub mean_bandwidth_bps: Option<f64>,
    /// Bytes per second in the busiest one second of log time: the most payload bytes whose
    /// log times lie in one window `[t, t + 1 s)`, over every `t` (a sliding window, not fixed
    /// one-second buckets); None without sizes.
    pub peak_bandwidth_bps: Option<u64>,
    /// Log time at which that busiest window starts (a message of the topic).
    pub peak_window_start_ns: Option<i64>,
    /// `size_bytes` over the payload bytes of all topics (0..1); None without sizes.
    pub size_share: Option<f64>,
    /// The QoS profiles the recorded publishers offered (`offered_qos_profiles`), one per
    /// publisher; empty when the bag records none.
    pub offered_qos: Vec<QosInfo>,
    /// For `sensor_msgs/msg/Image` topics: the raw bandwidth width × height × bytes per pixel
    /// × rate implies, against the recorded one; None for other types and with `--fast`.
    pub image: Option<ImageBandwidth>,
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
    /// True when every message's payload length was read, so the topics' sizes and bandwidths
    /// are given (from the message index offsets where complete: no chunk is decompressed);
    /// false with `--fast`.
    pub sizes: bool,
    /// Payload bytes of all topics (the sum of `size_bytes`); None without sizes.
    pub payload_bytes: Option<u64>,
    /// The writer's ROS distribution (`metadata.yaml`'s `ros_distro`, else the `ROS_DISTRO`
    /// of an MCAP `rosbag2` metadata record); None when the bag does not say.
    pub ros_distro: Option<String>,
    /// rosbag2's storage identifier as `metadata.yaml` states it (`mcap`, `sqlite3`); None
    /// without one.
    pub storage_identifier: Option<String>,
    /// Chunks by compression over all files, with their compressed and uncompressed bytes,
    /// sorted by compression.
    pub chunk_compression: Vec<CompressionInfo>,
    /// Services recorded through service introspection (`*/_service_event` topics), sorted by
    /// service: request and response counts and call latencies (None with `--fast`).
    pub services: Vec<ServiceInfo>,
    /// Every topic the bag declares, sorted by name then type (or as `--sort` asks).
    pub topics: Vec<TopicInfo>,
    /// What was found wrong while reading (damage, missing files, late or early topics, counts
    /// that disagree with `metadata.yaml` or the summary), sorted.
    pub warnings: Vec<Warning>,
}

impl InfoReport {}

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

/// How much `info` reads, and in which order it lists topics. The fields are the parameters'
/// names (Python's keywords, the CLI's flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct InfoOptions {
    /// Counts, first / last time and rate from the summary alone (like `mcap info`: the data
    /// section is not checked), else from the message index records' headers; work grows with
    /// chunks, not messages. Median periods, gaps, sizes and service latencies are left out.
    #[cfg_attr(feature = "clap", arg(long))]
    pub fast: bool,
    /// Order of the topics, in the text and in the JSON: name (then type), or count, size
    /// (payload bytes) or rate, largest first.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t))]
    pub sort: InfoSort,
}

/// A topic's arrival facts, whichever way they were read.
struct Cadence {
    count: u64,
    first: Option<i64>,
    last: Option<i64>,
    median_period_ns: Option<i64>,
    largest_gap: Option<(i64, i64)>,
    /// Payload bytes, and the busiest one-second window (bytes, start).
    size_bytes: Option<u64>,
    peak: Option<(u64, i64)>,
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
            size_bytes: None,
            peak: None,
        }
    }

    /// [`Cadence::of_times`] with each message's payload length (aligned with `times`).
    fn of_times_sizes(times: &mut Vec<i64>, sizes: &[u32]) -> Cadence {
        let size: u64 = sizes.iter().map(|&b| u64::from(b)).sum();
        let peak = bagscope_stats::peak_window_bytes(times, sizes, PEAK_WINDOW_NS);
        Cadence {
            size_bytes: Some(size),
            peak,
            ..Cadence::of_times(times)
        }
    }
}

/// The window of `peak_bandwidth_bps`: one second of log time.
const PEAK_WINDOW_NS: i64 = 1_000_000_000;

/// `bagscope info` of the bag at `path`: every message's log time is read (see
/// [`info_with`] for `--fast`).
pub fn info(path: &std::path::Path) -> Result<InfoReport, Error> {
    info_with(path, &InfoOptions::default())
}

/// `bagscope info` of the bag at `path` with options: with `fast`, MCAP files are opened from
/// their summaries where those can answer (no median periods or gaps, `cadence` false).
pub fn info_with(path: &std::path::Path, o: &InfoOptions) -> Result<InfoReport, Error> {
    let mut r = info_opened(path, o)?;
    sort_topics(&mut r.topics, o.sort);
    Ok(r)
}

fn info_opened(path: &std::path::Path, o: &InfoOptions) -> Result<InfoReport, Error> {
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

/// Orders topics as `--sort` asks: by name (then type), or by count, size or rate, largest
/// first, ties by name then type.
pub fn sort_topics(topics: &mut [TopicInfo], sort: InfoSort) {
    let by_name =
        |a: &TopicInfo, b: &TopicInfo| a.topic.cmp(&b.topic).then(a.type_name.cmp(&b.type_name));
    let desc_f64 = |a: Option<f64>, b: Option<f64>| {
        // None last; larger first.
        b.unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&a.unwrap_or(f64::NEG_INFINITY))
    };
    match sort {
        InfoSort::Name => topics.sort_by(by_name),
        InfoSort::Count => topics.sort_by(|a, b| b.count.cmp(&a.count).then(by_name(a, b))),
        InfoSort::Size => topics.sort_by(|a, b| {
            b.size_bytes
                .map(|x| x as i128)
                .unwrap_or(-1)
                .cmp(&a.size_bytes.map(|x| x as i128).unwrap_or(-1))
                .then(by_name(a, b))
        }),
        InfoSort::Rate => topics.sort_by(|a, b| desc_f64(a.rate_hz, b.rate_hz).then(by_name(a, b))),
    }
}

/// A topic's arrival warnings: declared without messages, starting late or ending early
/// against the bag (`bag_span`: its first and last log time), or holding another count than
/// metadata.yaml says.
fn topic_warnings(
    t: &bagscope_bag::Topic,
    c: &Cadence,
    (start_ns, end_ns): (i64, i64),
    lost: bool,
    warnings: &mut Vec<Warning>,
) {
    let (count, first, last) = (c.count, c.first, c.last);
    let duration_ns = end_ns - start_ns;
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
        if mc != count && !lost {
            warnings.push(
                Warning::new(
                    WarningCode::MetadataCountMismatch,
                    format!("metadata.yaml says {mc} messages, the files hold {count}"),
                )
                .topic(&t.name),
            );
        }
    }
}

/// Counts that disagree: the summary's Statistics against the data section (one file), and
/// the messages metadata.yaml lists against those present when split files are missing.
fn count_warnings(
    bag: &Bag,
    topics: &[TopicInfo],
    message_count: u64,
    warnings: &mut Vec<Warning>,
) {
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
                    size_bytes: None,
                    peak: None,
                })
                .collect(),
            Vec::new(),
        ),
        None => {
            let (mut times, sizes, w) = bag.topic_log_times_sizes(&bag.all_topics());
            let per_topic = times
                .iter_mut()
                .zip(sizes)
                .map(|(t, s)| Cadence::of_times_sizes(t, &s))
                .collect();
            (per_topic, w)
        }
    };
    let payload_bytes: Option<u64> = if cadence {
        Some(per_topic.iter().filter_map(|c| c.size_bytes).sum())
    } else {
        None
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
    // Asked once: the loop adds no loss (and a bag of 100 000 topics adds a warning a topic).
    let lost = warnings.iter().any(|w| w.data_loss);
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
        topic_warnings(t, c, (start_ns, end_ns), lost, &mut warnings);
        let mean_message_bytes = c
            .size_bytes
            .filter(|_| count > 0)
            .map(|b| b as f64 / count as f64);
        let mean_bandwidth_bps = mean_message_bytes.zip(rate_hz).map(|(m, r)| m * r);
        let offered_qos = match t.offered_qos_profiles.as_deref() {
            None => Vec::new(),
            Some(y) => match bagscope_bag::qos::offered_profiles(y) {
                Ok(v) => v.into_iter().map(QosInfo::from).collect(),
                Err(e) => {
                    warnings.push(
                        Warning::new(
                            WarningCode::QosUnreadable,
                            format!("offered_qos_profiles cannot be read ({e})"),
                        )
                        .topic(&t.name),
                    );
                    Vec::new()
                }
            },
        };
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
            size_bytes: c.size_bytes,
            mean_message_bytes,
            mean_bandwidth_bps,
            peak_bandwidth_bps: c.peak.map(|p| p.0),
            peak_window_start_ns: c.peak.map(|p| p.1),
            size_share: c
                .size_bytes
                .zip(payload_bytes)
                .filter(|(_, all)| *all > 0)
                .map(|(b, all)| b as f64 / all as f64),
            offered_qos,
            image: None,
        });
    }
    let (services, service_warnings) = if cadence {
        crate::services::services(bag)
    } else {
        let counts: Vec<u64> = per_topic.iter().map(|c| c.count).collect();
        (crate::services::services_listed(bag, &counts), Vec::new())
    };
    warnings.extend(service_warnings);
    if cadence {
        image_bandwidths(bag, &mut topics);
    }
    topics.sort_by(|a, b| a.topic.cmp(&b.topic).then(a.type_name.cmp(&b.type_name)));
    count_warnings(bag, &topics, message_count, &mut warnings);
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
                library: f.library.clone(),
                metadata: f
                    .metadata_records
                    .iter()
                    .map(|(name, m)| MetadataRecord {
                        name: name.clone(),
                        metadata: m.clone(),
                    })
                    .collect(),
            })
            // sqlite3 bags: one row per database file (no chunks, no summary).
            .chain(bag.db3_files.iter().map(|f| FileInfo {
                path: f.path.display().to_string(),
                size_bytes: f.size,
                chunks: 0,
                chunk_compression: Vec::new(),
                has_summary: false,
                profile: String::new(),
                library: String::new(),
                metadata: Vec::new(),
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
        sizes: cadence,
        payload_bytes,
        ros_distro: ros_distro(bag),
        storage_identifier: bag
            .metadata
            .as_ref()
            .map(|m| m.storage_identifier.clone())
            .filter(|s| !s.is_empty()),
        chunk_compression: compression_infos(bag),
        services,
        topics,
        warnings,
    }
}

/// `metadata.yaml`'s `ros_distro`, else the `ROS_DISTRO` of an MCAP `rosbag2` metadata record.
fn ros_distro(bag: &Bag) -> Option<String> {
    let from_yaml = bag
        .metadata
        .as_ref()
        .and_then(|m| m.ros_distro.clone())
        .filter(|s| !s.is_empty());
    from_yaml.or_else(|| {
        bag.files
            .iter()
            .flat_map(|f| &f.metadata_records)
            .filter(|(name, _)| name == "rosbag2")
            .find_map(|(_, m)| m.get("ROS_DISTRO").filter(|s| !s.is_empty()).cloned())
    })
}

/// Chunks by compression over all files.
fn compression_infos(bag: &Bag) -> Vec<CompressionInfo> {
    let mut by: BTreeMap<String, (usize, u64, u64)> = BTreeMap::new();
    for f in &bag.files {
        for (name, &n) in &f.compression_counts {
            let e = by.entry(name.clone()).or_default();
            e.0 += n;
            if let Some(&(c, u)) = f.compression_bytes.get(name) {
                e.1 = e.1.saturating_add(c);
                e.2 = e.2.saturating_add(u);
            }
        }
    }
    by.into_iter()
        .map(|(compression, (chunks, c, u))| CompressionInfo {
            compression,
            chunks,
            compressed_bytes: c,
            uncompressed_bytes: u,
            ratio: (c > 0).then(|| u as f64 / c as f64),
        })
        .collect()
}

/// The `image` entry of each `sensor_msgs/msg/Image` topic, from its first message (read by a
/// walk that stops once every image topic has given one).
fn image_bandwidths(bag: &Bag, topics: &mut [TopicInfo]) {
    let is_image = |ty: &str| matches!(ty, "sensor_msgs/msg/Image" | "sensor_msgs/Image");
    let wanted: Vec<bool> = bag
        .topics
        .iter()
        .zip(topics.iter())
        .map(|(t, info)| is_image(&t.type_name) && info.count > 0)
        .collect();
    let mut left = wanted.iter().filter(|&&w| w).count();
    if left == 0 {
        return;
    }
    let mut first: Vec<Option<bagscope_msg::types::Image>> = vec![None; bag.topics.len()];
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Undecodable first messages leave the entry out; `check` reports them.
    let _ = bag.visit_until(&wanted, &stop, |m| {
        if first[m.topic].is_some() {
            return;
        }
        let Ok(mut img) = bagscope_msg::decode_typed::<bagscope_msg::types::Image>(m.data) else {
            return;
        };
        img.data = Vec::new();
        first[m.topic] = Some(img);
        left -= 1;
        if left == 0 {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    for (info, img) in topics.iter_mut().zip(first) {
        let Some(img) = img else { continue };
        let bpp = bagscope_checks::encoding_info(&img.encoding).map(|(b, _)| b);
        let expected = bpp
            .zip(info.rate_hz)
            .map(|(b, r)| f64::from(img.width) * f64::from(img.height) * f64::from(b) * r);
        info.image = Some(ImageBandwidth {
            width: img.width,
            height: img.height,
            encoding: img.encoding,
            bytes_per_pixel: bpp,
            expected_raw_bps: expected,
            recorded_over_expected: expected
                .zip(info.mean_bandwidth_bps)
                .filter(|(e, _)| *e > 0.0)
                .map(|(e, r)| r / e),
        });
    }
}
