//! Time series extraction: one parallel scan of the bag that reads, per message, its log time,
//! publish time and stamp (`header.stamp`, a top-level `stamp`, or `/clock`'s `clock`), without
//! decoding anything else. Every analysis starts from these arrays.

use std::sync::atomic::{AtomicUsize, Ordering};

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Columns, Warning};
use bagscope_msg::{schema_for_channel, MessageSchema, StampLocator, StampSource};

/// Per-topic times, in log-time (arrival) order.
#[derive(Debug, Clone)]
pub struct TopicSeries {
    /// The topic name.
    pub topic: String,
    /// The message type as recorded.
    pub type_name: String,
    /// Where the stamp was read from (`header.stamp`, a top-level `stamp`, `/clock`'s `clock`),
    /// `None` for messages without one or topics without a usable schema.
    pub source: StampSource,
    /// Log times (recorder receive time, ns on the recorder's clock) of the messages kept.
    pub log_time_ns: Vec<i64>,
    /// Same length as `log_time_ns`, or empty when the storage records no publish time
    /// (rosbag2 sqlite3): analyses then skip publish-time statistics.
    pub publish_time_ns: Vec<i64>,
    /// Same length as `log_time_ns` when `source` is not `None`, else empty.
    pub stamp_ns: Vec<i64>,
    /// Messages whose stamp could not be read (payload too short, bad encapsulation).
    pub stamp_errors: usize,
    /// Messages whose stamp has `nanosec` ≥ 10⁹.
    pub invalid_stamps: usize,
}

/// The schema of each topic, or why there is none.
pub fn topic_schemas(bag: &Bag) -> Vec<Result<MessageSchema, String>> {
    bag.topics
        .iter()
        .map(|t| {
            if !t.message_encoding.is_empty() && t.message_encoding != "cdr" {
                return Err(format!(
                    "message encoding '{}' is not CDR",
                    t.message_encoding
                ));
            }
            schema_for_channel(&t.type_name, &t.schema_encoding, &t.schema_data)
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Stamp locators per topic (`None` source for topics without a usable schema).
pub fn locators(schemas: &[Result<MessageSchema, String>]) -> Vec<StampLocator> {
    schemas
        .iter()
        .map(|s| match s {
            Ok(s) => s.stamp_locator(),
            Err(_) => StampLocator::none(),
        })
        .collect()
}

/// A stamp the message type has, none was found.
pub(crate) const NO_STAMP_READ: i64 = i64::MIN;
/// A stamp that could not be read (malformed payload).
pub(crate) const UNREADABLE: i64 = i64::MIN + 1;

/// What the stamp scan keeps of one message: its publish time and its stamp, with sentinels
/// that no real time takes (a stamp is at least i32::MIN seconds). Invalid stamps are rare:
/// counted per topic as they are met, nothing kept per message.
#[inline]
pub(crate) fn stamp_values(
    loc: &StampLocator,
    m: &bagscope_bag::RawMessage<'_>,
    invalid: &AtomicUsize,
) -> [i64; 2] {
    let stamp = match loc.source() {
        StampSource::None => NO_STAMP_READ,
        _ => match loc.read_stamp(m.data) {
            Ok(Some(s)) => {
                if !s.nanosec_valid {
                    invalid.fetch_add(1, Ordering::Relaxed);
                }
                s.ns
            }
            Ok(None) => NO_STAMP_READ,
            Err(_) => UNREADABLE,
        },
    };
    [m.publish_time_ns.unwrap_or(NO_STAMP_READ), stamp]
}

/// Scans the wanted topics once and returns their series (indexed like `bag.topics`; topics
/// not wanted are left empty) plus the bag's warnings (open + scan + schema problems).
pub fn scan_series(bag: &Bag, wanted: &[bool]) -> (Vec<TopicSeries>, Vec<Warning>) {
    let (series, warnings, _) = scan(bag, wanted, false);
    (series, warnings)
}

/// [`scan_series`] that also reads the wanted TF topics' transforms for `clocks`' TF timing
/// (None: they are read by the timing itself, see [`crate::tf::TfCollector::new`]).
pub(crate) fn scan_series_and_tf(
    bag: &Bag,
    wanted: &[bool],
) -> (
    Vec<TopicSeries>,
    Vec<Warning>,
    Option<crate::tf::TfCollected>,
) {
    scan(bag, wanted, true)
}

fn scan(
    bag: &Bag,
    wanted: &[bool],
    with_tf: bool,
) -> (
    Vec<TopicSeries>,
    Vec<Warning>,
    Option<crate::tf::TfCollected>,
) {
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let invalid: Vec<AtomicUsize> = bag.topics.iter().map(|_| AtomicUsize::new(0)).collect();
    let tf = with_tf
        .then(|| crate::tf::TfCollector::new(bag, &locs, wanted))
        .flatten();
    let (mut columns, scan_warnings) = bag.scan_columns(wanted, |m| {
        let mut v = stamp_values(&locs[m.topic], m, &invalid[m.topic]);
        // A TF topic has no stamp: its stamp column holds where its transforms are.
        if let Some(x) = tf.as_ref().and_then(|t| t.read(m)) {
            v[1] = x;
        }
        v
    });
    let tf = tf.and_then(|t| t.finish(bag, &mut columns, 1));
    let (series, warnings) = series_of_columns(
        bag,
        wanted,
        &schemas,
        &locs,
        columns,
        &invalid,
        scan_warnings,
    );
    (series, warnings, tf)
}

/// The series of a scan that read [`stamp_values`] of every message of the wanted topics.
pub(crate) fn series_of_columns(
    bag: &Bag,
    wanted: &[bool],
    schemas: &[Result<MessageSchema, String>],
    locs: &[StampLocator],
    columns: Vec<Columns<2>>,
    invalid: &[AtomicUsize],
    scan_warnings: Vec<Warning>,
) -> (Vec<TopicSeries>, Vec<Warning>) {
    const NONE: i64 = NO_STAMP_READ;
    use rayon::prelude::*;
    // Topics are independent: each one's columns checked on a core of its own.
    let pairs: Vec<(usize, (&bagscope_bag::Topic, Columns<2>))> =
        bag.topics.iter().zip(columns).enumerate().collect();
    let out: Vec<TopicSeries> = pairs
        .into_par_iter()
        .map(|(i, (t, mut c))| {
            let source = locs[i].source();
            // A stamp we should have found but could not read: keep the message out of the
            // arrays (so they stay aligned) and count it. Done in place: no second copy.
            let n = c.len();
            let [_, stamps] = &c.values;
            let bad = |s: i64| match s {
                UNREADABLE => true,
                NONE => source != StampSource::None,
                _ => false,
            };
            if stamps.iter().any(|&s| bad(s)) {
                let keep: Vec<bool> = stamps.iter().map(|&s| !bad(s)).collect();
                c.retain_rows(|r| keep[r]);
            }
            let [mut publish, mut stamp_ns] = c.values;
            // A missing publish time must not become 0 (it would read as a huge lag): a topic with
            // any message lacking one gets no publish times at all.
            if publish.contains(&NONE) {
                publish = Vec::new();
            }
            if source == StampSource::None {
                stamp_ns = Vec::new();
            }
            TopicSeries {
                topic: t.name.clone(),
                type_name: t.type_name.clone(),
                source,
                stamp_errors: n - c.log_time_ns.len(),
                invalid_stamps: invalid[i].load(Ordering::Relaxed),
                log_time_ns: c.log_time_ns,
                publish_time_ns: publish,
                stamp_ns,
            }
        })
        .collect();
    let mut warnings = bag.open_warnings();
    warnings.extend(scan_warnings);
    for (i, s) in out.iter().enumerate() {
        if !wanted.get(i).copied().unwrap_or(false) {
            continue;
        }
        if let Err(e) = &schemas[i] {
            warnings.push(
                Warning::new(
                    WarningCode::UndecodableTopic,
                    format!("cannot be decoded ({e}): only its log times are analysed"),
                )
                .topic(&s.topic),
            );
        }
        if s.stamp_errors > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::StampUnreadable,
                    format!(
                        "{} message(s) whose stamp could not be read (malformed payload): left out of timing analyses",
                        s.stamp_errors
                    ),
                )
                .topic(&s.topic)
                .loss(),
            );
        }
    }
    warnings.sort();
    warnings.dedup();
    (out, warnings)
}
