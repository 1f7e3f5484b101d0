//! `bagscope echo`: a topic's messages decoded, one at a time, the way `ros2 topic echo` prints
//! them, with their log and publish times; optionally only some fields, a time window and a
//! count. Streams: memory stays bounded whatever the bag's size.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use bagscope_bag::{Bag, Warning, WarningCode};
pub use bagscope_msg::Value;

use crate::series::topic_schemas;
pub use crate::window::TimeBound;
use crate::Error;

/// What to print. The fields are the parameters' names (Python's keywords, the CLI's flags).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct EchoOptions {
    /// The topic to print.
    #[cfg_attr(feature = "clap", arg(long))]
    pub topic: String,
    /// Only these fields, by path, comma separated (e.g. `header.stamp,position[0]`); none:
    /// the whole message.
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', num_args = 1..))]
    pub fields: Vec<String>,
    /// From this log time: `+SECONDS` or `+DURATION` after the bag's first message (`+2.5`,
    /// `+1500ms`), nanoseconds since the epoch, or an RFC 3339 time (`2025-11-30T00:00:05Z`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub start: Option<TimeBound>,
    /// Until this time (exclusive), as `start`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub end: Option<TimeBound>,
    /// At most this many messages.
    #[cfg_attr(feature = "clap", arg(long))]
    pub limit: Option<usize>,
}

/// One message as printed (`--json`: one object per line).
#[derive(Debug, Clone, Serialize)]
pub struct EchoedMessage {
    /// The topic.
    pub topic: String,
    /// Position of the message in the topic (from 0, in the order read).
    pub index: usize,
    /// Recorder receive time, ns.
    pub log_time_ns: i64,
    /// Publish time as the writer recorded it, ns; `None` for `.db3` bags.
    pub publish_time_ns: Option<i64>,
    /// The decoded message, or the selected fields by path (a field the message does not
    /// have is `null`).
    pub message: EchoValue,
}

/// A whole message or some of its fields. Serialised as the message, or as an object of the
/// selected fields by path, in the order asked.
#[derive(Debug, Clone)]
pub enum EchoValue {
    /// The whole message.
    Message(Value),
    /// `(path, value)` of each selected field, in the order asked.
    Fields(Vec<(String, Option<Value>)>),
}

impl Serialize for EchoValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            EchoValue::Message(v) => v.serialize(s),
            EchoValue::Fields(fields) => {
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// What `echo` did, besides printing.
#[derive(Debug, Clone, Serialize)]
pub struct EchoReport {
    /// The bag.
    pub bag: String,
    /// The topic and its type.
    pub topic: String,
    /// The topic's message type.
    pub type_name: String,
    /// Messages printed.
    pub printed: usize,
    /// Messages in the window that did not decode (counted, not printed).
    pub undecodable: usize,
    /// Damage met while reading, and messages that did not decode.
    pub warnings: Vec<Warning>,
}

impl EchoReport {}

/// [`echo_of`] of the bag at `path`.
pub fn echo(
    path: &Path,
    o: &EchoOptions,
    out: impl FnMut(EchoedMessage) -> std::io::Result<()> + Send,
) -> Result<EchoReport, Error> {
    echo_of(&Bag::open(path)?, o, out)
}

/// Decodes the topic's messages inside the window and hands each to `out`, in the order the
/// files hold them (log-time order for bags recorded in order, as rosbag2 writes them). Stops
/// after `limit` messages, or at the first error `out` returns (a closed pipe).
pub fn echo_of(
    bag: &Bag,
    o: &EchoOptions,
    mut out: impl FnMut(EchoedMessage) -> std::io::Result<()> + Send,
) -> Result<EchoReport, Error> {
    for f in &o.fields {
        if bagscope_msg::parse_path(f).is_none_or(|s| s.is_empty()) {
            return Err(Error::invalid(
                "fields",
                format!("{f:?} is not a field path (e.g. header.stamp, position[0])"),
            ));
        }
    }
    let ti = bag.topic_index(&o.topic)?;
    let topic = &bag.topics[ti];
    let schema = topic_schemas(bag)
        .swap_remove(ti)
        .map_err(|e| Error::no_data(format!("{}: cannot decode its messages: {e}", o.topic)))?;
    // A path the type does not have would print null for every message: a usage error
    // naming the fields there are.
    for f in &o.fields {
        schema
            .resolve_path(f)
            .map_err(|e| Error::invalid("fields", format!("on {}: {e}", o.topic)))?;
    }
    let mut wanted = vec![false; bag.topics.len()];
    wanted[ti] = true;
    // Relative bounds count from the bag's first message (any topic), as `ros2 bag` does.
    let (start, end) = crate::window::log_window(bag, o.start, o.end);
    let limit = o.limit.unwrap_or(usize::MAX);
    let stop = AtomicBool::new(limit == 0);
    let (mut printed, mut undecodable) = (0usize, 0usize);
    // Both the walk and the chunks it passes over unread (outside the window) move it.
    let index = std::sync::atomic::AtomicUsize::new(0);
    let mut last_error: Option<String> = None;
    let mut write_error: Option<std::io::Error> = None;
    let mut warnings = bag.open_warnings();
    let skipped = |_: usize, n: u64| {
        index.fetch_add(n as usize, Ordering::Relaxed);
    };
    let visit_warnings = bag.visit_window(
        &wanted,
        (start, end),
        &stop,
        |m| {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let k = index.fetch_add(1, Ordering::Relaxed);
            let value = match bagscope_msg::decode(&schema, m.data) {
                Ok(v) => v,
                Err(e) => {
                    undecodable += 1;
                    last_error = Some(e.to_string());
                    return;
                }
            };
            let message = if o.fields.is_empty() {
                EchoValue::Message(value)
            } else {
                EchoValue::Fields(
                    o.fields
                        .iter()
                        .map(|f| {
                            let v = value
                                .get_path(f)
                                .cloned()
                                .or_else(|| value.get_path_i64(f).map(Value::I64));
                            (f.clone(), v)
                        })
                        .collect(),
                )
            };
            let e = EchoedMessage {
                topic: topic.name.clone(),
                index: k,
                log_time_ns: m.log_time_ns,
                publish_time_ns: m.publish_time_ns,
                message,
            };
            if let Err(err) = out(e) {
                write_error = Some(err);
                stop.store(true, Ordering::Relaxed);
                return;
            }
            printed += 1;
            if printed >= limit {
                stop.store(true, Ordering::Relaxed);
            }
        },
        skipped,
    );
    if let Some(e) = write_error {
        return Err(Error::Output {
            path: None,
            reason: "cannot write the output".into(),
            source: Some(e),
        });
    }
    warnings.extend(visit_warnings);
    if undecodable > 0 {
        warnings.push(
            Warning::new(
                WarningCode::UndecodableMessage,
                format!(
                    "{undecodable} message(s) did not decode with the topic's definition: {}",
                    last_error.unwrap_or_default()
                ),
            )
            .topic(&topic.name),
        );
    }
    warnings.sort();
    warnings.dedup();
    Ok(EchoReport {
        bag: bag.path.display().to_string(),
        topic: topic.name.clone(),
        type_name: topic.type_name.clone(),
        printed,
        undecodable,
        warnings,
    })
}
