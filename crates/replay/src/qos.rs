//! QoS for replayed topics: what the recorder saw offered (`offered_qos_profiles`, as rosbag2
//! writes it in `metadata.yaml` and in MCAP channel metadata) and the user's overrides (the
//! rosbag2 `--qos-profile-overrides-path` YAML).
//!
//! As rosbag2's player does: when every recorded publisher offered the same profile in the
//! policies that decide matching (reliability, durability, deadline, liveliness and its
//! lease), that profile is offered again, so every original subscriber still matches; when they
//! differ, the ROS 2 default (reliable, volatile) is offered, with a warning. Unlike rosbag2,
//! the history depth is the recorded one (the largest), not reset to 10. An override replaces
//! the topic's whole profile: policies it does not name take the default, as in rosbag2.
//! Both encodings rosbag2 has used are accepted: integers (Foxy–Iron: reliability 1 reliable /
//! 2 best effort, durability 1 transient local / 2 volatile, history 1 keep last / 2 keep all,
//! liveliness 1 automatic / 3 manual by topic) and strings (Jazzy and later: `reliable`,
//! `transient_local`, `keep_last`, `automatic`, ...); durations are `{sec, nsec}`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_yaml_ng::Value;

use crate::ReplayError;
use bagscope_bag::qos::{profile, Profile};
pub use bagscope_bag::qos::{Durability, Liveliness, Reliability};

/// The QoS history policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "depth")]
pub enum History {
    /// Keep this many samples per instance.
    KeepLast(u32),
    /// Keep every sample (within resource limits).
    KeepAll,
}

/// The QoS a replayed topic is offered with, and where it came from. Durations are `None`
/// when infinite (or unspecified, which ROS 2 middlewares take as infinite).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopicQos {
    /// Reliable or best effort.
    pub reliability: Reliability,
    /// Volatile or transient local.
    pub durability: Durability,
    /// Keep last N or keep all.
    pub history: History,
    /// Longest promised time between two samples.
    pub deadline_ns: Option<i64>,
    /// How long a sample stays valid for delivery after it is written.
    pub lifespan_ns: Option<i64>,
    /// How the publisher's liveliness is asserted.
    pub liveliness: Liveliness,
    /// How long the publisher counts as alive after its last assertion.
    pub liveliness_lease_ns: Option<i64>,
    /// `recorded`, `default` (nothing recorded, or publishers that differed), or `override`.
    pub source: &'static str,
}

/// rclcpp's default publisher QoS (`rclcpp::QoS(10)`), used when nothing was recorded.
pub const DEFAULT_DEPTH: u32 = 10;

impl TopicQos {
    /// A profile with these three policies and the default for the others.
    pub fn new(
        reliability: Reliability,
        durability: Durability,
        history: History,
        source: &'static str,
    ) -> TopicQos {
        TopicQos {
            reliability,
            durability,
            history,
            deadline_ns: None,
            lifespan_ns: None,
            liveliness: Liveliness::Automatic,
            liveliness_lease_ns: None,
            source,
        }
    }
}

impl Default for TopicQos {
    fn default() -> Self {
        TopicQos::new(
            Reliability::Reliable,
            Durability::Volatile,
            History::KeepLast(DEFAULT_DEPTH),
            "default",
        )
    }
}

/// The policies rosbag2 compares to decide whether publishers offered the same profile (those
/// that decide matching; history and lifespan do not).
fn matching_part(
    p: &Profile,
) -> (
    Reliability,
    Durability,
    Option<i64>,
    Liveliness,
    Option<i64>,
) {
    (
        p.reliability.unwrap_or(Reliability::Reliable),
        p.durability.unwrap_or(Durability::Volatile),
        p.deadline_ns,
        p.liveliness.unwrap_or_default(),
        p.lease_ns,
    )
}

/// A profile on top of the defaults, with the given history.
fn to_qos(p: Profile, history: History, source: &'static str) -> TopicQos {
    TopicQos {
        reliability: p.reliability.unwrap_or(Reliability::Reliable),
        durability: p.durability.unwrap_or(Durability::Volatile),
        history,
        deadline_ns: p.deadline_ns,
        lifespan_ns: p.lifespan_ns,
        liveliness: p.liveliness.unwrap_or_default(),
        liveliness_lease_ns: p.lease_ns,
        source,
    }
}

/// What the player offers for a topic, and a warning when its recorded publishers differed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The profile offered.
    pub qos: TopicQos,
    /// How the recorded publishers' profiles differed, when they did (the default is then
    /// offered); None when they agreed or nothing was recorded.
    pub mixed: Option<String>,
}

/// The profile the player offers for a topic recorded with these publisher profiles (YAML text
/// of a list; empty text or `[]` means nothing was recorded).
pub fn from_recorded(yaml: Option<&str>) -> Result<Offer, String> {
    let plain = |qos| Ok(Offer { qos, mixed: None });
    let text = yaml.unwrap_or("").trim();
    if text.is_empty() {
        return plain(TopicQos::default());
    }
    let v: Value = bagscope_bag::yaml::from_str(text).map_err(|e| e.to_string())?;
    let list = match v {
        Value::Sequence(s) => s,
        Value::Null => Vec::new(),
        _ => return Err("not a list of profiles".into()),
    };
    let mut profiles = Vec::new();
    for item in &list {
        match item {
            Value::Mapping(m) => profiles.push(profile(m, false)?),
            _ => return Err("a profile is not a mapping".into()),
        }
    }
    let Some(first) = profiles.first().copied() else {
        return plain(TopicQos::default());
    };
    if profiles
        .iter()
        .any(|p| matching_part(p) != matching_part(&first))
    {
        return Ok(Offer {
            qos: TopicQos::default(),
            mixed: Some(format!(
                "its {} recorded publishers offered different QoS (reliability, durability, \
                 deadline or liveliness): offering the ROS 2 default, as rosbag2 does",
                profiles.len()
            )),
        });
    }
    let keep_all = profiles.iter().any(|p| p.keep_all == Some(true));
    let depth = profiles.iter().filter_map(|p| p.depth).max();
    let history = if keep_all {
        History::KeepAll
    } else {
        History::KeepLast(depth.unwrap_or(DEFAULT_DEPTH))
    };
    plain(to_qos(first, history, "recorded"))
}

/// Overrides per topic name, from the rosbag2 override file:
/// `{/topic: {reliability: best_effort, durability: volatile, history: keep_last, depth: 5}}`.
#[derive(Debug, Default, Clone)]
pub struct QosOverrides(BTreeMap<String, ProfileOverride>);

/// One topic's override: the policies the file names for it.
#[derive(Debug, Clone, Copy)]
pub struct ProfileOverride(Profile);

impl QosOverrides {
    /// Parses the override file's text; errors say which topic and policy is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        // A topic or policy given twice: refused with the key and its line (serde_yaml_ng
        // alone names only where the mapping starts).
        bagscope_bag::yaml_keys::check_unique_keys(text)?;
        let v: Value = bagscope_bag::yaml::from_str(text).map_err(|e| e.to_string())?;
        let mut out = BTreeMap::new();
        match v {
            Value::Null => {}
            Value::Mapping(m) => {
                for (k, v) in m {
                    // Topic names are case-sensitive: taken as written.
                    let topic = match &k {
                        Value::String(s) => s.trim().to_string(),
                        _ => return Err("a key is not a topic name".into()),
                    };
                    let Value::Mapping(pm) = v else {
                        return Err(format!("{topic}: not a mapping"));
                    };
                    let p = profile(&pm, true).map_err(|e| format!("{topic}: {e}"))?;
                    out.insert(topic, ProfileOverride(p));
                }
            }
            _ => return Err("not a mapping of topic names".into()),
        }
        Ok(QosOverrides(out))
    }

    /// Reads and parses an override file.
    pub fn read(path: &std::path::Path) -> Result<Self, ReplayError> {
        // Unreadable is an I/O error (exit 1, as for a missing bag); unparsable is a malformed
        // argument (exit 2).
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Io {
            what: "cannot read the QoS override file".into(),
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
            .map_err(|m| ReplayError::Usage(format!("QoS override file {}: {m}", path.display())))
    }

    /// The topics the file overrides, sorted.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The override's profile (policies it leaves out take the default, as in rosbag2), or
    /// `base` when the topic has none.
    pub fn apply(&self, topic: &str, base: TopicQos) -> TopicQos {
        let Some(ProfileOverride(p)) = self.0.get(topic) else {
            return base;
        };
        let history = match (p.keep_all, p.depth) {
            (Some(true), _) => History::KeepAll,
            (_, d) => History::KeepLast(d.unwrap_or(DEFAULT_DEPTH)),
        };
        to_qos(*p, history, "override")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_recording_gives_rclcpp_default() {
        let d = Offer {
            qos: TopicQos::default(),
            mixed: None,
        };
        assert_eq!(from_recorded(Some("[]")).unwrap(), d);
        assert_eq!(from_recorded(None).unwrap(), d);
    }

    #[test]
    fn publishers_that_differ_get_the_default_with_a_warning() {
        // Humble integers: one reliable transient-local, one best-effort volatile publisher.
        // A best-effort offer would lose every reliable subscriber; rosbag2 offers its default.
        let y = "- history: 1\n  depth: 5\n  reliability: 1\n  durability: 1\n\
                 - history: 1\n  depth: 20\n  reliability: 2\n  durability: 2\n";
        let o = from_recorded(Some(y)).unwrap();
        assert_eq!(o.qos, TopicQos::default());
        assert!(o.mixed.is_some());
        // Same reliability and durability but another deadline: also mixed.
        let y = "- reliability: 1\n  durability: 2\n  deadline: {sec: 0, nsec: 100000000}\n\
                 - reliability: 1\n  durability: 2\n";
        assert!(from_recorded(Some(y)).unwrap().mixed.is_some());
    }

    #[test]
    fn publishers_that_agree_are_offered_their_profile() {
        // Depths differ (history does not decide matching): the largest is kept.
        let y = "- history: 1\n  depth: 1\n  reliability: 1\n  durability: 1\n\
                 - history: 1\n  depth: 7\n  reliability: 1\n  durability: 1\n  \
                 deadline: {sec: 0, nsec: 0}\n";
        let o = from_recorded(Some(y)).unwrap();
        assert_eq!(o.mixed, None);
        assert_eq!(o.qos.reliability, Reliability::Reliable);
        assert_eq!(o.qos.durability, Durability::TransientLocal);
        assert_eq!(o.qos.history, History::KeepLast(7));
        assert_eq!(o.qos.source, "recorded");
    }

    #[test]
    fn jazzy_string_profiles_with_durations() {
        let y = "- history: keep_all\n  depth: 0\n  reliability: best_effort\n  durability: volatile\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n  lifespan:\n    sec: 2\n    nsec: 500\n  liveliness: manual_by_topic\n  liveliness_lease_duration:\n    sec: 1\n    nsec: 0\n";
        let q = from_recorded(Some(y)).unwrap().qos;
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.history, History::KeepAll);
        assert_eq!(q.deadline_ns, None, "infinite");
        assert_eq!(q.lifespan_ns, Some(2_000_000_500));
        assert_eq!(q.liveliness, Liveliness::ManualByTopic);
        assert_eq!(q.liveliness_lease_ns, Some(1_000_000_000));
        assert!(from_recorded(Some("- reliability: sometimes\n")).is_err());
        assert!(from_recorded(Some("- deadline: 5\n")).is_err());
        // Foxy-era bags: the middleware's own "infinite", as rosbag2 reads it.
        for (s, n) in [(2147483647u64, 4294967295u64), (2147483647, 2147483647)] {
            let y = format!("- deadline: {{sec: {s}, nsec: {n}}}\n");
            assert_eq!(from_recorded(Some(&y)).unwrap().qos.deadline_ns, None);
        }
        // A key of a newer rosbag2 in a recorded profile is ignored (not in an override).
        let y = "- reliability: reliable\n  future_policy: 3\n";
        assert_eq!(from_recorded(Some(y)).unwrap().qos.source, "recorded");
    }

    #[test]
    fn an_override_replaces_the_whole_profile() {
        let o = QosOverrides::parse("/Cmd:\n  reliability: best_effort\n  depth: 3\n").unwrap();
        let recorded = TopicQos {
            durability: Durability::TransientLocal,
            deadline_ns: Some(5),
            ..TopicQos::default()
        };
        let q = o.apply("/Cmd", recorded.clone());
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.durability, Durability::Volatile, "not named: the default");
        assert_eq!(q.deadline_ns, None);
        assert_eq!(q.history, History::KeepLast(3));
        assert_eq!(q.source, "override");
        // Topic names keep their case.
        assert_eq!(o.topics().collect::<Vec<_>>(), ["/Cmd"]);
        assert_eq!(o.apply("/cmd", recorded.clone()), recorded);
    }

    #[test]
    fn override_files_that_are_wrong_say_so() {
        assert!(QosOverrides::parse("- 1\n").is_err());
        let e = QosOverrides::parse("/x:\n  durability: forever\n").unwrap_err();
        assert!(e.contains("/x") && e.contains("durability"), "{e}");
        // A misspelt policy is an error, not silently the default.
        let e = QosOverrides::parse("/x:\n  reliablity: best_effort\n").unwrap_err();
        assert!(e.contains("reliablity"), "{e}");
        assert!(QosOverrides::parse("/x:\n  avoid_ros_namespace_conventions: true\n").is_err());
        assert!(QosOverrides::parse("/x:\n  avoid_ros_namespace_conventions: false\n").is_ok());
        // A topic or a policy given twice: the key and its line, not the mapping's start.
        let e = QosOverrides::parse("/x:\n  depth: 1\n/y: {}\n/x:\n  depth: 5\n").unwrap_err();
        assert!(
            e.contains("duplicate key '/x'") && e.contains("line 4"),
            "{e}"
        );
        let e =
            QosOverrides::parse("/x:\n  depth: 1\n  history: keep_all\n  depth: 5\n").unwrap_err();
        assert!(
            e.contains("duplicate key 'depth'") && e.contains("line 4"),
            "{e}"
        );
    }
}
