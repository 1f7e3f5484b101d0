//! The values commands take, parsed one way for every caller. Each command's options type
//! (`SyncOptions`, `MatchArgs`, ...) owns its defaults (`Default`), its parsing (`FromStr` of
//! the value types here, serde for keyword arguments) and its validation, in parameter names;
//! the CLI derives its flags from those types (feature `clap`) and the Python package fills
//! them from keyword arguments through [`from_json`]. An error names the parameter
//! ([`Error::InvalidParameter`]); the CLI spells it as its flag, Python as its keyword.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

pub use bagscope_types::duration::{Duration, InvalidDuration};

use crate::Error;

/// A topic and a duration, written `TOPIC=DURATION` (`/imu=5ms`): a per-topic parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDuration {
    /// The topic.
    pub topic: String,
    /// Its duration.
    pub duration: Duration,
}

impl FromStr for TopicDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<TopicDuration, String> {
        let (t, d) = s
            .rsplit_once('=')
            .ok_or_else(|| format!("expected TOPIC=DURATION, got '{s}'"))?;
        Ok(TopicDuration {
            topic: t.to_string(),
            duration: d.parse().map_err(|e: InvalidDuration| e.to_string())?,
        })
    }
}

/// As its `TOPIC=DURATION` text.
impl serde::Serialize for TopicDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}={}", self.topic, self.duration))
    }
}

/// Per-topic durations from a mapping `{topic: duration}` (Python's dict) or a list of
/// `TOPIC=DURATION` texts (the CLI's repeated flag).
pub fn topic_durations<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<TopicDuration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Map(BTreeMap<String, Duration>),
        List(Vec<String>),
    }
    match Form::deserialize(d)? {
        Form::Map(m) => Ok(m
            .into_iter()
            .map(|(topic, duration)| TopicDuration { topic, duration })
            .collect()),
        Form::List(v) => v
            .iter()
            .map(|s| s.parse().map_err(serde::de::Error::custom))
            .collect(),
    }
}

/// A range of durations, written `START..END` (`0..500ms`, `2s..20s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationRange {
    /// Where it starts.
    pub start: Duration,
    /// Where it ends.
    pub end: Duration,
}

impl DurationRange {
    /// `(start, end)` in nanoseconds.
    pub fn ns(self) -> (i64, i64) {
        (self.start.ns(), self.end.ns())
    }
}

impl FromStr for DurationRange {
    type Err = String;

    fn from_str(s: &str) -> Result<DurationRange, String> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| format!("expected START..END, got '{s}'"))?;
        let d = |x: &str| x.parse::<Duration>().map_err(|e| e.to_string());
        Ok(DurationRange {
            start: d(a)?,
            end: d(b)?,
        })
    }
}

impl fmt::Display for DurationRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// As its `START..END` text.
impl serde::Serialize for DurationRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `"START..END"`, or a pair `[start, end]` of durations.
impl<'de> Deserialize<'de> for DurationRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DurationRange, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Pair(Duration, Duration),
        }
        match Form::deserialize(d)? {
            Form::Text(s) => s.parse().map_err(serde::de::Error::custom),
            Form::Pair(start, end) => Ok(DurationRange { start, end }),
        }
    }
}

/// Joint position limits: joint → `(min, max)`, given as a mapping (Python) or as a JSON file
/// holding one (the CLI's `--limits FILE`), read when the command runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum JointLimits {
    /// No limits.
    #[default]
    None,
    /// The limits.
    Given(BTreeMap<String, (f64, f64)>),
    /// A JSON file `{"joint": [min, max], ...}`.
    File(PathBuf),
}

impl FromStr for JointLimits {
    type Err = std::convert::Infallible;

    /// A file's path.
    fn from_str(s: &str) -> Result<JointLimits, Self::Err> {
        Ok(JointLimits::File(PathBuf::from(s)))
    }
}

/// The mapping, or the file's path.
impl serde::Serialize for JointLimits {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            JointLimits::None => s.serialize_none(),
            JointLimits::Given(m) => m.serialize(s),
            JointLimits::File(p) => p.serialize(s),
        }
    }
}

/// A mapping `{joint: [min, max]}`, or the path of a JSON file holding one.
impl<'de> Deserialize<'de> for JointLimits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JointLimits, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Map(BTreeMap<String, (f64, f64)>),
            Path(PathBuf),
        }
        Ok(match Form::deserialize(d)? {
            Form::Map(m) => JointLimits::Given(m),
            Form::Path(p) => JointLimits::File(p),
        })
    }
}

impl JointLimits {
    /// The limits, reading the file if they are in one (an error naming it when it cannot be
    /// read or holds something else).
    pub fn resolve(&self) -> Result<BTreeMap<String, (f64, f64)>, Error> {
        match self {
            JointLimits::None => Ok(BTreeMap::new()),
            JointLimits::Given(m) => Ok(m.clone()),
            JointLimits::File(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| Error::Input {
                    path: p.clone(),
                    reason: format!("cannot read limits file {}: {e}", p.display()),
                })?;
                serde_json::from_str(&text).map_err(|e| Error::Input {
                    path: p.clone(),
                    reason: format!(
                        "limits file must be {{\"joint\": [min, max]}}: {}: {e}",
                        p.display()
                    ),
                })
            }
        }
    }
}

/// Fills an options type from named values (`{"slop": "30ms", "queue": 5}`: Python's keyword
/// arguments, as JSON), the others keeping their defaults. An unknown name or a value of the
/// wrong kind is an [`Error::InvalidParameter`] naming the parameter.
pub fn from_json<T: DeserializeOwned>(
    values: serde_json::Map<String, serde_json::Value>,
) -> Result<T, Error> {
    match serde_json::from_value::<T>(serde_json::Value::Object(values.clone())) {
        Ok(t) => Ok(t),
        Err(whole) => {
            // Which parameter: the first whose value alone is refused.
            for (k, v) in values {
                let one = serde_json::Map::from_iter([(k.clone(), v)]);
                if let Err(e) = serde_json::from_value::<T>(serde_json::Value::Object(one)) {
                    return Err(Error::invalid(k, e.to_string()));
                }
            }
            Err(Error::invalid("(parameters)", whole.to_string()))
        }
    }
}

/// `Err(InvalidParameter)` for `name` when it is set but does not apply: `why` says to what
/// it applies (`` applies to `policy` approx-py only ``).
pub(crate) fn not_applicable(
    set: bool,
    name: &str,
    why: impl FnOnce() -> String,
) -> Result<(), Error> {
    if set {
        Err(Error::invalid(name, why()))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_both_forms() {
        let r: DurationRange = "0..500ms".parse().unwrap();
        assert_eq!(r.ns(), (0, 500_000_000));
        assert_eq!(r.to_string().parse::<DurationRange>().unwrap(), r);
        let p: DurationRange = serde_json::from_str("[0.1, \"2s\"]").unwrap();
        assert_eq!(p.ns(), (100_000_000, 2_000_000_000));
        assert!("5ms".parse::<DurationRange>().is_err());
    }

    #[test]
    fn topic_durations_read_a_map_or_a_list() {
        #[derive(Deserialize)]
        struct T {
            #[serde(deserialize_with = "topic_durations")]
            v: Vec<TopicDuration>,
        }
        let m: T = serde_json::from_str(r#"{"v": {"/a": "5ms", "/b": 0.01}}"#).unwrap();
        let l: T = serde_json::from_str(r#"{"v": ["/a=5ms", "/b=0.01"]}"#).unwrap();
        assert_eq!(m.v, l.v);
        assert_eq!(m.v[1].duration.ns(), 10_000_000);
    }
}
