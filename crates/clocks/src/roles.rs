//! Which topics are producers' own time series and which are aggregates of many producers.
//!
//! Aggregate topics carry messages from every node of a system, each stamped on its own
//! node's clock: `/rosout` holds log lines of sim-time and wall-time nodes alike (and of a
//! replay beside live nodes), `/parameter_events` and `/diagnostics` likewise, and rosbag2's
//! `/events/*` are the recorder's or player's own notices. Their stamps say nothing about one
//! producer's clock, so they are reported in a group of their own and never decide whether a
//! bag's clock axes are split, whether a clock jumped back (a simulator reset), or drifts.

/// Topic names (the last segment of a namespaced name) whose messages come from many nodes.
const AGGREGATE_LEAVES: [&str; 6] = [
    "rosout",
    "rosout_agg",
    "parameter_events",
    "diagnostics",
    "diagnostics_agg",
    "diagnostics_toplevel_state",
];

/// `true` for aggregate topics (see the module docs): `/rosout`, `/parameter_events`,
/// `/diagnostics`, `/diagnostics_agg` (also under a namespace, `/robot1/diagnostics`), and
/// everything under an `events` namespace (`/events/read_split`, `/rec/events/write_split`).
pub fn is_aggregate_topic(topic: &str) -> bool {
    let mut parts = topic.trim_start_matches('/').split('/');
    let leaf = topic.rsplit('/').next().unwrap_or(topic);
    AGGREGATE_LEAVES.contains(&leaf) || parts.any(|p| p == "events") && leaf != "events"
}

/// `true` for the topic rosbag2's player publishes when it moves to the next file of a bag
/// (`/events/read_split`): recorded, it shows that the bag was made while a bag was replayed.
pub fn is_replay_event_topic(topic: &str) -> bool {
    topic == "/events/read_split" || topic.ends_with("/events/read_split")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_are_recognised_by_name() {
        for t in [
            "/rosout",
            "/parameter_events",
            "/diagnostics",
            "/diagnostics_agg",
            "/robot1/diagnostics",
            "/events/read_split",
            "/events/write_split",
            "/rosbag2_recorder/events/messages_lost",
        ] {
            assert!(is_aggregate_topic(t), "{t}");
        }
        for t in [
            "/imu",
            "/camera/image_raw",
            "/events",
            "/joint_states",
            "/rosout_camera/image",
        ] {
            assert!(!is_aggregate_topic(t), "{t}");
        }
        assert!(is_replay_event_topic("/events/read_split"));
        assert!(!is_replay_event_topic("/events/write_split"));
    }
}
