//! QoS for replayed topics: what the recorder saw offered (`offered_qos_profiles`, as rosbag2
//! writes it in `metadata.yaml` and in MCAP channel metadata) and the user's overrides (the
//! rosbag2 `--qos-profile-overrides-path` YAML).
//!
//! rosbag2's player offers, per topic, reliable only if every recorded publisher was reliable
//! and transient-local only if every one was, so that every original subscriber still matches.
//! Both encodings rosbag2 has used are accepted: integers (Foxy–Iron: reliability 1 reliable /
//! 2 best effort, durability 1 transient local / 2 volatile, history 1 keep last / 2 keep all)
//! and strings (Jazzy and later: `reliable`, `transient_local`, `keep_last`, ...).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_yaml_ng::Value;

use crate::ReplayError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reliability {
    Reliable,
    BestEffort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    Volatile,
    TransientLocal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "depth")]
pub enum History {
    KeepLast(u32),
    KeepAll,
}

/// The QoS a replayed topic is offered with, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopicQos {
    pub reliability: Reliability,
    pub durability: Durability,
    pub history: History,
    /// `recorded`, `default` (nothing recorded), or `override`.
    pub source: &'static str,
}

/// rclcpp's default publisher QoS (`rclcpp::QoS(10)`), used when nothing was recorded.
pub const DEFAULT_DEPTH: u32 = 10;

impl Default for TopicQos {
    fn default() -> Self {
        TopicQos {
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            history: History::KeepLast(DEFAULT_DEPTH),
            source: "default",
        }
    }
}

/// One recorded or overriding profile; `None` where the YAML says "system default" or nothing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Profile {
    reliability: Option<Reliability>,
    durability: Option<Durability>,
    keep_all: Option<bool>,
    depth: Option<u32>,
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_ascii_lowercase()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn profile(map: &serde_yaml_ng::Mapping) -> Result<Profile, String> {
    let get = |k: &str| map.get(Value::String(k.to_string())).and_then(as_text);
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
    Ok(p)
}

/// The profile the player offers for a topic recorded with these publisher profiles (YAML text
/// of a list; empty text or `[]` means nothing was recorded).
pub fn from_recorded(yaml: Option<&str>) -> Result<TopicQos, String> {
    let text = yaml.unwrap_or("").trim();
    if text.is_empty() {
        return Ok(TopicQos::default());
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
            Value::Mapping(m) => profiles.push(profile(m)?),
            _ => return Err("a profile is not a mapping".into()),
        }
    }
    if profiles.is_empty() {
        return Ok(TopicQos::default());
    }
    let all_reliable = profiles
        .iter()
        .all(|p| p.reliability != Some(Reliability::BestEffort));
    let all_tl = profiles
        .iter()
        .all(|p| p.durability == Some(Durability::TransientLocal));
    let keep_all = profiles.iter().any(|p| p.keep_all == Some(true));
    let depth = profiles.iter().filter_map(|p| p.depth).max();
    Ok(TopicQos {
        reliability: if all_reliable {
            Reliability::Reliable
        } else {
            Reliability::BestEffort
        },
        durability: if all_tl {
            Durability::TransientLocal
        } else {
            Durability::Volatile
        },
        history: if keep_all {
            History::KeepAll
        } else {
            History::KeepLast(depth.unwrap_or(DEFAULT_DEPTH))
        },
        source: "recorded",
    })
}

/// Overrides per topic name, from the rosbag2 override file:
/// `{/topic: {reliability: best_effort, durability: volatile, history: keep_last, depth: 5}}`.
#[derive(Debug, Default, Clone)]
pub struct QosOverrides(BTreeMap<String, ProfileOverride>);

#[derive(Debug, Clone, Copy)]
pub struct ProfileOverride(Profile);

impl QosOverrides {
    pub fn parse(text: &str) -> Result<Self, ReplayError> {
        let bad = |m: String| ReplayError::Usage(format!("QoS override file: {m}"));
        let v: Value = serde_yaml_ng::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mut out = BTreeMap::new();
        match v {
            Value::Null => {}
            Value::Mapping(m) => {
                for (k, v) in m {
                    let topic =
                        as_text(&k).ok_or_else(|| bad("a key is not a topic name".into()))?;
                    let Value::Mapping(pm) = v else {
                        return Err(bad(format!("{topic}: not a mapping")));
                    };
                    let p = profile(&pm).map_err(|e| bad(format!("{topic}: {e}")))?;
                    out.insert(topic, ProfileOverride(p));
                }
            }
            _ => return Err(bad("not a mapping of topic names".into())),
        }
        Ok(QosOverrides(out))
    }

    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// `base` with the fields the override sets replaced.
    pub fn apply(&self, topic: &str, base: TopicQos) -> TopicQos {
        let Some(ProfileOverride(p)) = self.0.get(topic) else {
            return base;
        };
        let mut q = base;
        if let Some(r) = p.reliability {
            q.reliability = r;
        }
        if let Some(d) = p.durability {
            q.durability = d;
        }
        match (p.keep_all, p.depth) {
            (Some(true), _) => q.history = History::KeepAll,
            (_, Some(d)) => q.history = History::KeepLast(d),
            (Some(false), None) => {
                if q.history == History::KeepAll {
                    q.history = History::KeepLast(DEFAULT_DEPTH)
                }
            }
            (None, None) => {}
        }
        q.source = "override";
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_recording_gives_rclcpp_default() {
        assert_eq!(from_recorded(Some("[]")).unwrap(), TopicQos::default());
        assert_eq!(from_recorded(None).unwrap(), TopicQos::default());
    }

    #[test]
    fn humble_integer_profiles_adapt_like_rosbag2() {
        // Two publishers: one reliable transient-local, one best-effort volatile.
        let y = "- history: 1\n  depth: 5\n  reliability: 1\n  durability: 1\n\
                 - history: 1\n  depth: 20\n  reliability: 2\n  durability: 2\n";
        let q = from_recorded(Some(y)).unwrap();
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.durability, Durability::Volatile);
        assert_eq!(q.history, History::KeepLast(20));
        let y = "- history: 1\n  depth: 1\n  reliability: 1\n  durability: 1\n";
        let q = from_recorded(Some(y)).unwrap();
        assert_eq!(q.reliability, Reliability::Reliable);
        assert_eq!(q.durability, Durability::TransientLocal);
        assert_eq!(q.history, History::KeepLast(1));
    }

    #[test]
    fn jazzy_string_profiles() {
        let y = "- history: keep_all\n  depth: 0\n  reliability: best_effort\n  durability: volatile\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n";
        let q = from_recorded(Some(y)).unwrap();
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.history, History::KeepAll);
        assert!(from_recorded(Some("- reliability: sometimes\n")).is_err());
    }

    #[test]
    fn overrides_replace_only_what_they_set() {
        let o = QosOverrides::parse("/cmd:\n  reliability: best_effort\n  depth: 3\n").unwrap();
        let q = o.apply("/cmd", TopicQos::default());
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.durability, Durability::Volatile);
        assert_eq!(q.history, History::KeepLast(3));
        assert_eq!(q.source, "override");
        assert_eq!(o.apply("/other", TopicQos::default()).source, "default");
        assert!(QosOverrides::parse("- 1\n").is_err());
        assert!(QosOverrides::parse("/x:\n  durability: forever\n").is_err());
    }
}
