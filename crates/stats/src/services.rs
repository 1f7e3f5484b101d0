//! Service call latency from ROS 2 service introspection events (`service_msgs/ServiceEventInfo`:
//! one event per step of a call, keyed by the client's GID and the call's sequence number).

use serde::Serialize;

use crate::NsSummary;

/// `ServiceEventInfo.event_type`: the client sent the request.
pub const REQUEST_SENT: u8 = 0;
/// The server received the request.
pub const REQUEST_RECEIVED: u8 = 1;
/// The server sent the response.
pub const RESPONSE_SENT: u8 = 2;
/// The client received the response.
pub const RESPONSE_RECEIVED: u8 = 3;

/// One service event as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceEvent {
    /// `info.event_type` (0..=3; anything else is counted as unknown).
    pub event_type: u8,
    /// `info.stamp`: when the event happened, on the clock of the node that published it.
    pub stamp_ns: i64,
    /// `info.client_gid`: the calling client.
    pub client_gid: [u8; 16],
    /// `info.sequence_number`: the call, per client.
    pub sequence_number: i64,
}

/// Events of a service by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EventCounts {
    /// `REQUEST_SENT` events (recorded on the client).
    pub request_sent: u64,
    /// `REQUEST_RECEIVED` events (recorded on the server).
    pub request_received: u64,
    /// `RESPONSE_SENT` events (recorded on the server).
    pub response_sent: u64,
    /// `RESPONSE_RECEIVED` events (recorded on the client).
    pub response_received: u64,
    /// Events with an event type outside 0..=3.
    pub unknown_type: u64,
}

/// Latency of one service's calls, paired by (client GID, sequence number). Every latency is a
/// difference of two events' `info.stamp`s: those of one node share its clock
/// (`round_trip_ns`, `server_ns`); the two transport legs compare the client's clock with the
/// server's, so a clock offset between them shows there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceLatency {
    /// Events by kind.
    pub events: EventCounts,
    /// Distinct calls (client GID, sequence number) seen in any event.
    pub calls: u64,
    /// Client side: request sent → response received, per call with both events.
    pub round_trip_ns: Option<NsSummary>,
    /// Server side: request received → response sent.
    pub server_ns: Option<NsSummary>,
    /// Request sent (client clock) → request received (server clock).
    pub request_transport_ns: Option<NsSummary>,
    /// Response sent (server clock) → response received (client clock).
    pub response_transport_ns: Option<NsSummary>,
    /// Calls with a request event (sent or received) and no response event: unanswered, or
    /// answered after the recording ended.
    pub unanswered_requests: u64,
    /// Calls with a response event and no request event (the request was not recorded:
    /// introspection started mid-call, or the request event was lost).
    pub responses_without_request: u64,
    /// Events repeating a kind already seen for their call (only the first one is paired).
    pub duplicate_events: u64,
}

/// Pairs the events of one service (any order) and summarises the latencies.
pub fn service_latency(events: &[ServiceEvent]) -> ServiceLatency {
    let mut counts = EventCounts::default();
    let mut v: Vec<&ServiceEvent> = Vec::with_capacity(events.len());
    for e in events {
        match e.event_type {
            REQUEST_SENT => counts.request_sent += 1,
            REQUEST_RECEIVED => counts.request_received += 1,
            RESPONSE_SENT => counts.response_sent += 1,
            RESPONSE_RECEIVED => counts.response_received += 1,
            _ => {
                counts.unknown_type += 1;
                continue;
            }
        }
        v.push(e);
    }
    // Deterministic: by call, kind, then time.
    v.sort_by_key(|e| (e.client_gid, e.sequence_number, e.event_type, e.stamp_ns));
    let (mut rtt, mut server, mut req, mut resp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut calls, mut unanswered, mut orphans, mut duplicates) = (0u64, 0u64, 0u64, 0u64);
    let mut i = 0;
    while i < v.len() {
        let key = (v[i].client_gid, v[i].sequence_number);
        let mut at: [Option<i64>; 4] = [None; 4];
        while i < v.len() && (v[i].client_gid, v[i].sequence_number) == key {
            let slot = &mut at[usize::from(v[i].event_type)];
            if slot.is_some() {
                duplicates += 1;
            } else {
                *slot = Some(v[i].stamp_ns);
            }
            i += 1;
        }
        calls += 1;
        let [sent, received, rsent, rreceived] = at;
        let request = sent.is_some() || received.is_some();
        let response = rsent.is_some() || rreceived.is_some();
        unanswered += u64::from(request && !response);
        orphans += u64::from(response && !request);
        let leg = |a: Option<i64>, b: Option<i64>, out: &mut Vec<i64>| {
            if let (Some(a), Some(b)) = (a, b) {
                out.push(b.saturating_sub(a));
            }
        };
        leg(sent, rreceived, &mut rtt);
        leg(received, rsent, &mut server);
        leg(sent, received, &mut req);
        leg(rsent, rreceived, &mut resp);
    }
    ServiceLatency {
        events: counts,
        calls,
        round_trip_ns: NsSummary::of_in_place(&mut rtt),
        server_ns: NsSummary::of_in_place(&mut server),
        request_transport_ns: NsSummary::of_in_place(&mut req),
        response_transport_ns: NsSummary::of_in_place(&mut resp),
        unanswered_requests: unanswered,
        responses_without_request: orphans,
        duplicate_events: duplicates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: u8, t: i64, gid: u8, seq: i64) -> ServiceEvent {
        ServiceEvent {
            event_type: kind,
            stamp_ns: t,
            client_gid: [gid; 16],
            sequence_number: seq,
        }
    }

    #[test]
    fn pairs_by_client_and_sequence_number() {
        let mut e = Vec::new();
        // Two clients using the same sequence numbers: pairing must not mix them.
        for (gid, base, rtt) in [(1u8, 0i64, 1_000_000i64), (2, 500, 3_000_000)] {
            for seq in 1..=3i64 {
                let t0 = base + seq * 10_000_000;
                e.push(ev(REQUEST_SENT, t0, gid, seq));
                e.push(ev(REQUEST_RECEIVED, t0 + 100_000, gid, seq));
                e.push(ev(RESPONSE_SENT, t0 + rtt - 200_000, gid, seq));
                e.push(ev(RESPONSE_RECEIVED, t0 + rtt, gid, seq));
            }
        }
        // Client 1's call 4 is never answered; a response to an unrecorded call 9; one
        // duplicated event; one of an unknown kind.
        e.push(ev(REQUEST_SENT, 90_000_000, 1, 4));
        e.push(ev(RESPONSE_RECEIVED, 95_000_000, 1, 9));
        e.push(ev(REQUEST_SENT, 10_000_001, 1, 1));
        e.push(ev(7, 0, 1, 1));
        e.reverse();
        let r = service_latency(&e);
        assert_eq!(r.calls, 8);
        assert_eq!(r.unanswered_requests, 1);
        assert_eq!(r.responses_without_request, 1);
        assert_eq!(r.duplicate_events, 1);
        assert_eq!(r.events.request_sent, 8);
        assert_eq!(r.events.response_received, 7);
        assert_eq!(r.events.unknown_type, 1);
        let rtt = r.round_trip_ns.unwrap();
        assert_eq!((rtt.count, rtt.min, rtt.max), (6, 1_000_000, 3_000_000));
        let server = r.server_ns.unwrap();
        assert_eq!((server.min, server.max), (700_000, 2_700_000));
        assert_eq!(r.request_transport_ns.unwrap().p50, 100_000);
        assert_eq!(r.response_transport_ns.unwrap().max, 200_000);
    }

    #[test]
    fn server_side_only() {
        let e = [ev(REQUEST_RECEIVED, 10, 3, 1), ev(RESPONSE_SENT, 25, 3, 1)];
        let r = service_latency(&e);
        assert_eq!(r.round_trip_ns, None);
        assert_eq!(r.server_ns.unwrap().p50, 15);
        assert_eq!(r.unanswered_requests, 0);
        assert_eq!(service_latency(&[]).calls, 0);
    }
}
