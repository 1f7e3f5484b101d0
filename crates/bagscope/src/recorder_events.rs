//! Loss the recorder itself logged in the bag.
//!
//! rosbag2 recorders that publish their loss statistics send
//! `rosbag2_interfaces/msg/MessagesLostEvent` (on `events/messages_lost` relative to the
//! recorder node, so `/events/messages_lost` or `/<recorder>/events/messages_lost`): the
//! recorder's node name and, per topic, the messages lost in transport (reported by the
//! middleware before delivery) and in the recorder (dropped by the writer's cache) since the
//! previous event. Recorded into the bag, they are loss the bag itself admits to, so they set
//! `data_loss` like a cut file does.

use std::collections::BTreeMap;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};
use bagscope_msg::{decode, schema_for_channel, MessageSchema, Value};

/// The message type, without and with the `/msg/` of ROS 2 type names.
const TYPES: [&str; 2] = [
    "rosbag2_interfaces/msg/MessagesLostEvent",
    "rosbag2_interfaces/MessagesLostEvent",
];

/// The definition as rosbag2_interfaces gives it, for bags that store no schema text.
const DEFINITION: &str = "string node_name
MessagesLostEventTopicStat[] messages_lost_statistics
================================================================================
MSG: rosbag2_interfaces/MessagesLostEventTopicStat
string topic_name
uint64 messages_lost_in_transport
uint64 messages_lost_in_recorder
";

/// Lost messages of one topic, summed over the events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Lost {
    transport: u64,
    recorder: u64,
    first_log_time_ns: Option<i64>,
    last_log_time_ns: Option<i64>,
}

fn schema(t: &bagscope_bag::Topic) -> Option<MessageSchema> {
    let stored = std::str::from_utf8(&t.schema_data).map_or("", str::trim);
    if stored.is_empty() {
        // No text (sqlite3 bags before Humble's schema table, or a writer that left it out):
        // an empty definition would read as a message without fields.
        return schema_for_channel(TYPES[0], "ros2msg", DEFINITION.as_bytes()).ok();
    }
    schema_for_channel(&t.type_name, &t.schema_encoding, &t.schema_data)
        .or_else(|_| schema_for_channel(TYPES[0], "ros2msg", DEFINITION.as_bytes()))
        .ok()
}

/// `recorder_lost_messages` warnings (data loss), one per topic the recorder reported losses
/// for, from every `MessagesLostEvent` topic of the bag; nothing when it has none. Events that
/// cannot be decoded are an `undecodable_topic` warning (the bag's own loss report unread).
pub fn lost_messages(bag: &Bag) -> Vec<Warning> {
    let wanted: Vec<bool> = bag
        .topics
        .iter()
        .map(|t| TYPES.contains(&t.type_name.as_str()))
        .collect();
    if !wanted.iter().any(|&w| w) {
        return Vec::new();
    }
    let schemas: Vec<Option<MessageSchema>> = bag
        .topics
        .iter()
        .zip(&wanted)
        .map(|(t, &w)| if w { schema(t) } else { None })
        .collect();
    let scan = bag.scan(&wanted, |m| {
        schemas[m.topic]
            .as_ref()
            .and_then(|s| decode(s, m.data).ok())
    });
    let mut per_topic: BTreeMap<String, Lost> = BTreeMap::new();
    let mut reporters: BTreeMap<String, usize> = BTreeMap::new();
    let mut unreadable = 0usize;
    for it in &scan.items {
        let Some(v) = &it.value else {
            unreadable += 1;
            continue;
        };
        let node = v
            .get_path("node_name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        *reporters.entry(node).or_default() += 1;
        let stats = v
            .get_path("messages_lost_statistics")
            .and_then(Value::as_array)
            .unwrap_or(&[]);
        for s in stats {
            let topic = s
                .get_path("topic_name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            let transport = s
                .get_path("messages_lost_in_transport")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let recorder = s
                .get_path("messages_lost_in_recorder")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if transport == 0 && recorder == 0 {
                continue;
            }
            let l = per_topic.entry(topic).or_default();
            l.transport = l.transport.saturating_add(transport);
            l.recorder = l.recorder.saturating_add(recorder);
            l.first_log_time_ns = Some(
                l.first_log_time_ns
                    .map_or(it.log_time_ns, |f| f.min(it.log_time_ns)),
            );
            l.last_log_time_ns = Some(
                l.last_log_time_ns
                    .map_or(it.log_time_ns, |f| f.max(it.log_time_ns)),
            );
        }
    }
    let mut out = Vec::new();
    let source: Vec<&str> = bag
        .topics
        .iter()
        .zip(&wanted)
        .filter(|(_, &w)| w)
        .map(|(t, _)| t.name.as_str())
        .collect();
    for (topic, l) in per_topic {
        out.push(
            Warning::new(
                WarningCode::RecorderLostMessages,
                format!(
                    "the recorder reported {} message(s) of {topic} lost: {} in transport (the middleware dropped them before delivery), {} in the recorder (its cache was full or a write failed), between log times {} and {} ns ({}). They are not in the bag",
                    l.transport.saturating_add(l.recorder),
                    l.transport,
                    l.recorder,
                    l.first_log_time_ns.unwrap_or(0),
                    l.last_log_time_ns.unwrap_or(0),
                    source.join(", ")
                ),
            )
            .topic(topic)
            .loss(),
        );
    }
    if unreadable > 0 {
        out.push(
            Warning::new(
                WarningCode::UndecodableTopic,
                format!(
                    "{unreadable} recorder loss event(s) could not be decoded: the loss the recorder reported there is unknown"
                ),
            )
            .topic(source.join(", ")),
        );
    }
    out
}
