//! Services in a bag: rosbag2 (Iron and later) records service introspection as one topic per
//! service, `<service>/_service_event`, of type `<pkg>/srv/<Name>_Event`. Each event's `info`
//! says which step of which call it is; calls are paired by client GID and sequence number
//! (`bagscope_stats::services`).

use serde::Serialize;

use bagscope_bag::{Bag, Warning, WarningCode};
use bagscope_stats::services::{service_latency, ServiceEvent, ServiceLatency};

/// The suffix rosbag2 gives a service's event topic.
pub const SERVICE_EVENT_SUFFIX: &str = "/_service_event";

/// One service of the bag (`services` in `info --json`, sorted by service name).
#[derive(Debug, Clone, Serialize)]
pub struct ServiceInfo {
    /// The service name (the event topic without `/_service_event`).
    pub service: String,
    /// The service type (`example_interfaces/srv/AddTwoInts`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// The event topic.
    pub topic: String,
    /// Events recorded on the topic.
    pub event_count: u64,
    /// Request events (sent by a client or received by a server); None when the events were
    /// not read (`info --fast`).
    pub request_count: Option<u64>,
    /// Response events (sent by a server or received by a client); None when not read.
    pub response_count: Option<u64>,
    /// The calls paired and their latencies; None when the events were not read.
    pub latency: Option<ServiceLatency>,
    /// Events whose `info` could not be read (payload too short or not plain CDR): neither
    /// counted as requests or responses nor paired.
    pub undecodable_events: u64,
}

/// Whether a topic is a service's event topic: its name or its type says so.
pub fn is_service_event_topic(name: &str, type_name: &str) -> bool {
    name.ends_with(SERVICE_EVENT_SUFFIX)
        || (type_name.contains("/srv/") && type_name.ends_with("_Event"))
}

/// The service of an event topic: its name and type.
fn service_of(name: &str, type_name: &str) -> (String, String) {
    let service = name.strip_suffix(SERVICE_EVENT_SUFFIX).unwrap_or(name);
    let ty = type_name.strip_suffix("_Event").unwrap_or(type_name);
    (service.to_string(), ty.to_string())
}

/// The bag's services with their event counts (`counts[topic index]`), without reading any
/// event: request/response counts and latency stay None.
pub fn services_listed(bag: &Bag, counts: &[u64]) -> Vec<ServiceInfo> {
    let mut out: Vec<ServiceInfo> = bag
        .topics
        .iter()
        .enumerate()
        .filter(|(_, t)| is_service_event_topic(&t.name, &t.type_name))
        .map(|(i, t)| {
            let (service, type_name) = service_of(&t.name, &t.type_name);
            ServiceInfo {
                service,
                type_name,
                topic: t.name.clone(),
                event_count: counts.get(i).copied().unwrap_or(0),
                request_count: None,
                response_count: None,
                latency: None,
                undecodable_events: 0,
            }
        })
        .collect();
    out.sort_by(|a, b| a.service.cmp(&b.service).then(a.topic.cmp(&b.topic)));
    out
}

/// The bag's services with every event read: request and response counts, calls paired and
/// their latencies. Reads only the chunks that hold service events. Warnings: what the read
/// found wrong, and one per service with events that could not be read.
pub fn services(bag: &Bag) -> (Vec<ServiceInfo>, Vec<Warning>) {
    let wanted: Vec<bool> = bag
        .topics
        .iter()
        .map(|t| is_service_event_topic(&t.name, &t.type_name))
        .collect();
    let n_topics = bag.topics.len();
    if !wanted.iter().any(|&w| w) {
        return (Vec::new(), Vec::new());
    }
    let scan = bag.scan(&wanted, |m| {
        bagscope_msg::service_event::read_service_event_info(m.data)
    });
    let mut events: Vec<Vec<ServiceEvent>> = vec![Vec::new(); n_topics];
    let mut counts = vec![0u64; n_topics];
    let mut bad = vec![0u64; n_topics];
    for it in &scan.items {
        counts[it.topic] += 1;
        match it.value {
            Some(e) => events[it.topic].push(ServiceEvent {
                event_type: e.event_type,
                stamp_ns: e.stamp_ns,
                client_gid: e.client_gid,
                sequence_number: e.sequence_number,
            }),
            None => bad[it.topic] += 1,
        }
    }
    let mut warnings = scan.warnings;
    let mut out = services_listed(bag, &counts);
    for s in &mut out {
        let Some(ti) = bag.topics.iter().position(|t| t.name == s.topic) else {
            continue;
        };
        let l = service_latency(&events[ti]);
        s.request_count = Some(l.events.request_sent + l.events.request_received);
        s.response_count = Some(l.events.response_sent + l.events.response_received);
        s.undecodable_events = bad[ti];
        if bad[ti] > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::UndecodableMessage,
                    format!(
                        "{} service event(s) have no readable info (too short, or not plain CDR): not paired",
                        bad[ti]
                    ),
                )
                .topic(&s.topic),
            );
        }
        s.latency = Some(l);
    }
    (out, warnings)
}
