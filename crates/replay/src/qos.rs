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

/// The QoS reliability policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reliability {
    /// Lost samples are resent until acknowledged (matches reliable subscribers only).
    Reliable,
    /// Samples are sent once (matches every subscriber).
    BestEffort,
}

/// The QoS durability policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Late-joining subscribers get nothing sent before they joined.
    Volatile,
    /// Late-joining subscribers get the samples still in the history (latched topics such as
    /// `/tf_static`).
    TransientLocal,
}

/// The QoS history policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "depth")]
pub enum History {
    /// Keep this many samples per instance.
    KeepLast(u32),
    /// Keep every sample (within resource limits).
    KeepAll,
}

/// The QoS liveliness policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Liveliness {
    /// The middleware asserts the publisher's liveliness itself.
    #[default]
    Automatic,
    /// rmw's deprecated `manual_by_node`; DDS calls it manual by participant.
    ManualByNode,
    /// The publisher asserts its liveliness by publishing.
    ManualByTopic,
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

/// One recorded or overriding profile; `None` where the YAML says "system default" or nothing
/// (durations: also where it says infinite).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Profile {
    reliability: Option<Reliability>,
    durability: Option<Durability>,
    keep_all: Option<bool>,
    depth: Option<u32>,
    deadline_ns: Option<i64>,
    lifespan_ns: Option<i64>,
    liveliness: Option<Liveliness>,
    lease_ns: Option<i64>,
}

impl Profile {
    /// The policies rosbag2 compares to decide whether publishers offered the same profile
    /// (those that decide matching; history and lifespan do not).
    fn matching_part(
        &self,
    ) -> (
        Reliability,
        Durability,
        Option<i64>,
        Liveliness,
        Option<i64>,
    ) {
        (
            self.reliability.unwrap_or(Reliability::Reliable),
            self.durability.unwrap_or(Durability::Volatile),
            self.deadline_ns,
            self.liveliness.unwrap_or_default(),
            self.lease_ns,
        )
    }
}

/// Enum values as lowercase text (`Reliable`, ` reliable` and `1` are all accepted).
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_ascii_lowercase()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `{sec, nsec}` → ns; `None` for infinite and unspecified ({0, 0}). Infinite is rmw's
/// {9223372036, 854775807}, and in Foxy-era bags also the middlewares' own "infinite"
/// ({2147483647, 4294967295} from Fast DDS, {2147483647, 2147483647} from Connext), which
/// rosbag2 maps to infinite too: any 2^31 − 1 s or more is taken as infinite.
fn duration(key: &str, v: &Value) -> Result<Option<i64>, String> {
    let Value::Mapping(m) = v else {
        return Err(format!("{key}: expected {{sec, nsec}}"));
    };
    let part = |k: &str| -> Result<u64, String> {
        match m.get(Value::String(k.to_string())) {
            None => Ok(0),
            Some(Value::Number(n)) => n
                .as_u64()
                .ok_or_else(|| format!("{key}.{k}: not a non-negative integer")),
            Some(_) => Err(format!("{key}.{k}: not a number")),
        }
    };
    let (sec, nsec) = (part("sec")?, part("nsec")?);
    let ns = (sec as u128) * 1_000_000_000 + nsec as u128;
    Ok(if ns == 0 || sec >= i32::MAX as u64 {
        None
    } else {
        Some(ns as i64)
    })
}

/// Keys a profile may have (rosbag2's own, as it writes and reads them).
const KEYS: [&str; 9] = [
    "history",
    "depth",
    "reliability",
    "durability",
    "deadline",
    "lifespan",
    "liveliness",
    "liveliness_lease_duration",
    "avoid_ros_namespace_conventions",
];

/// Parses one profile. `strict` (override files): an unknown key is an error, since a misspelt
/// policy would otherwise silently take the default; recorded profiles may carry keys of a
/// newer rosbag2, which are ignored.
fn profile(map: &serde_yaml_ng::Mapping, strict: bool) -> Result<Profile, String> {
    for k in map.keys().filter(|_| strict) {
        match k.as_str() {
            Some(k) if KEYS.contains(&k) => {}
            _ => {
                return Err(format!(
                    "unknown QoS policy {:?} (known: {})",
                    as_text(k).unwrap_or_default(),
                    KEYS.join(", ")
                ))
            }
        }
    }
    let raw = |k: &str| map.get(Value::String(k.to_string()));
    let get = |k: &str| raw(k).and_then(as_text);
    let mut p = Profile::default();
    if let Some(r) = get("reliability") {
        p.reliability = match r.as_str() {
            "1" | "reliable" => Some(Reliability::Reliable),
            "2" | "best_effort" => Some(Reliability::BestEffort),
            "0" | "3" | "system_default" | "unknown" | "best_available" => None,
            other => return Err(format!("reliability {other:?}")),
        };
    }
    if let Some(d) = get("durability") {
        p.durability = match d.as_str() {
            "1" | "transient_local" => Some(Durability::TransientLocal),
            "2" | "volatile" => Some(Durability::Volatile),
            "0" | "3" | "system_default" | "unknown" | "best_available" => None,
            other => return Err(format!("durability {other:?}")),
        };
    }
    if let Some(h) = get("history") {
        p.keep_all = match h.as_str() {
            "1" | "keep_last" => Some(false),
            "2" | "keep_all" => Some(true),
            "0" | "3" | "system_default" | "unknown" => None,
            other => return Err(format!("history {other:?}")),
        };
    }
    if let Some(d) = get("depth") {
        let n: u64 = d.parse().map_err(|_| format!("depth {d:?}"))?;
        // rosbag2 records depth 0 when the publisher's depth is unknown to it.
        if n > 0 {
            p.depth = Some(u32::try_from(n).unwrap_or(u32::MAX));
        }
    }
    if let Some(l) = get("liveliness") {
        p.liveliness = match l.as_str() {
            "1" | "automatic" => Some(Liveliness::Automatic),
            "2" | "manual_by_node" => Some(Liveliness::ManualByNode),
            "3" | "manual_by_topic" => Some(Liveliness::ManualByTopic),
            "0" | "4" | "system_default" | "unknown" | "best_available" => None,
            other => return Err(format!("liveliness {other:?}")),
        };
    }
    if let Some(v) = raw("deadline") {
        p.deadline_ns = duration("deadline", v)?;
    }
    if let Some(v) = raw("lifespan") {
        p.lifespan_ns = duration("lifespan", v)?;
    }
    if let Some(v) = raw("liveliness_lease_duration") {
        p.lease_ns = duration("liveliness_lease_duration", v)?;
    }
    if let Some(v) = raw("avoid_ros_namespace_conventions") {
        if matches!(v, Value::Bool(true)) || as_text(v).as_deref() == Some("true") {
            return Err(
                "avoid_ros_namespace_conventions: true is not supported (topics are always \
                 published under ROS 2 names)"
                    .into(),
            );
        }
    }
    Ok(p)
}

impl Profile {
    /// This profile on top of the defaults, with the given history.
    fn to_qos(self, history: History, source: &'static str) -> TopicQos {
        TopicQos {
            reliability: self.reliability.unwrap_or(Reliability::Reliable),
            durability: self.durability.unwrap_or(Durability::Volatile),
            history,
            deadline_ns: self.deadline_ns,
            lifespan_ns: self.lifespan_ns,
            liveliness: self.liveliness.unwrap_or_default(),
            liveliness_lease_ns: self.lease_ns,
            source,
        }
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
    let v: Value = serde_yaml_ng::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
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
        .any(|p| p.matching_part() != first.matching_part())
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
    plain(first.to_qos(history, "recorded"))
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
        let v: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
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
        p.to_qos(history, "override")
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
    }
}
