//! QoS profiles as rosbag2 records them (`offered_qos_profiles`, in `metadata.yaml` and in MCAP
//! channel metadata), parsed once for every command that shows or uses them (`info`, `play`).
//!
//! Both encodings rosbag2 has used are accepted: integers (Foxy–Iron: reliability 1 reliable /
//! 2 best effort, durability 1 transient local / 2 volatile, history 1 keep last / 2 keep all,
//! liveliness 1 automatic / 3 manual by topic) and strings (Jazzy and later: `reliable`,
//! `transient_local`, `keep_last`, `automatic`, ...); durations are `{sec, nsec}`.

use serde::Serialize;
use serde_yaml_ng::Value;

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

/// One recorded or overriding profile; `None` where the YAML says "system default" or nothing
/// (durations: also where it says infinite).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Reliable or best effort; `None`: system default or unstated.
    pub reliability: Option<Reliability>,
    /// Volatile or transient local; `None`: system default or unstated.
    pub durability: Option<Durability>,
    /// History: `Some(true)` keep all, `Some(false)` keep last; `None`: system default.
    pub keep_all: Option<bool>,
    /// History depth; `None` where rosbag2 recorded 0 (unknown) or nothing.
    pub depth: Option<u32>,
    /// Deadline; `None`: infinite or unstated.
    pub deadline_ns: Option<i64>,
    /// Lifespan; `None`: infinite or unstated.
    pub lifespan_ns: Option<i64>,
    /// Liveliness kind; `None`: system default or unstated.
    pub liveliness: Option<Liveliness>,
    /// Liveliness lease duration; `None`: infinite or unstated.
    pub lease_ns: Option<i64>,
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
pub fn profile(map: &serde_yaml_ng::Mapping, strict: bool) -> Result<Profile, String> {
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

/// The profiles of a topic's recorded publishers (YAML text of a list; empty text, `null` or
/// `[]`: nothing recorded). Unknown keys of a newer rosbag2 are ignored.
pub fn offered_profiles(yaml: &str) -> Result<Vec<Profile>, String> {
    let text = yaml.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let v: Value = crate::yaml::from_str(text).map_err(|e| e.to_string())?;
    let list = match v {
        Value::Sequence(s) => s,
        Value::Null => Vec::new(),
        _ => return Err("not a list of profiles".into()),
    };
    list.iter()
        .map(|item| match item {
            Value::Mapping(m) => profile(m, false),
            _ => Err("a profile is not a mapping".into()),
        })
        .collect()
}
