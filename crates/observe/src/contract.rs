//! The contract file (YAML, docs/observe.md) read into a [`Contract`]: its shape declared with
//! serde (unknown keys refused, every value checked as it is read), then the rules between
//! keys (approx-py needs a slop, ...). Every error names the key and, where the parser knows
//! it, the line ([`ContractError`]).

use std::fmt;
use std::path::PathBuf;

use bagscope_sync::Policy;
use bagscope_types::duration::Duration;
use serde::{Deserialize, Deserializer};

use crate::{Contract, GroupSpec, StateMode, StateSpec};

/// A contract that cannot be used: the key that is wrong (`members[0].slop`; empty for the
/// file as a whole), why, and its line when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractError {
    /// The contract file, when it came from one.
    pub file: Option<PathBuf>,
    /// The key, as a path (`members[0].slop`, `state[1].mode`, `anchor`); empty for the file.
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
    /// The line (from 1) of the key, when the parser knows it.
    pub line: Option<usize>,
}

impl ContractError {
    fn new(key: impl Into<String>, reason: impl Into<String>) -> ContractError {
        ContractError {
            file: None,
            key: key.into(),
            reason: reason.into(),
            line: None,
        }
    }

    /// The same error, about the contract file `path`.
    pub fn in_file(mut self, path: impl Into<PathBuf>) -> ContractError {
        self.file = Some(path.into());
        self
    }

    /// The contract file as a whole (`reason` says what is wrong), for the file at `path`.
    pub fn file(path: impl Into<PathBuf>, reason: impl Into<String>) -> ContractError {
        ContractError::new("", reason).in_file(path)
    }

    /// A parser's error: its text is `KEY: REASON at line L column C`.
    fn from_yaml(e: &serde_yaml_ng::Error) -> ContractError {
        let text = e.to_string();
        let line = e.location().map(|l| l.line());
        let text = match text.rfind(" at line ") {
            Some(i) if line.is_some() => text[..i].to_string(),
            _ => text,
        };
        let is_path = |k: &str| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'))
        };
        let (mut key, mut reason) = match text.split_once(": ") {
            Some((k, r)) if is_path(k) => (k.to_string(), r.to_string()),
            _ => (String::new(), text.clone()),
        };
        // A rule between a mapping's keys names the key it is about first (`slop: ...`).
        if let Some((k, r)) = reason.split_once(": ") {
            if k.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !k.is_empty() {
                key = if key.is_empty() {
                    k.to_string()
                } else {
                    format!("{key}.{k}")
                };
                reason = r.to_string();
            }
        }
        ContractError {
            file: None,
            key,
            reason,
            line,
        }
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("contract")?;
        if let Some(p) = &self.file {
            write!(f, " {}", p.display())?;
        }
        f.write_str(": ")?;
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.reason)?;
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContractError {}

/// A string read through `f` (trimmed, refused when empty), its error raised where the
/// parser is, so that it names the key and its line.
fn text_with<'de, D: Deserializer<'de>, T>(
    d: D,
    f: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, D::Error> {
    struct V<F>(F);
    impl<T, F: FnOnce(&str) -> Result<T, String>> serde::de::Visitor<'_> for V<F> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-empty string")
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
            match s.trim() {
                "" => Err(E::invalid_value(serde::de::Unexpected::Str(s), &self)),
                t => (self.0)(t).map_err(E::custom),
            }
        }
    }
    d.deserialize_any(V(f))
}

/// A non-empty string, trimmed.
#[derive(Debug, Clone)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        text_with(d, |t| Ok(Text(t.to_string())))
    }
}

/// A duration that is not negative (`15ms`, `0.015`, `2s`).
#[derive(Debug, Clone, Copy)]
struct Span(i64);

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Span, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Span;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration (15ms, 0.015, 2s)")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Span, E> {
                let v: Duration = s
                    .parse()
                    .map_err(|e| E::custom(format!("{e} (a duration: 15ms, 0.015, 2s)")))?;
                if v.ns() < 0 {
                    return Err(E::custom("must not be negative"));
                }
                Ok(Span(v.ns()))
            }
            fn visit_i64<E: serde::de::Error>(self, x: i64) -> Result<Span, E> {
                self.visit_str(&x.to_string())
            }
            fn visit_u64<E: serde::de::Error>(self, x: u64) -> Result<Span, E> {
                self.visit_str(&x.to_string())
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Span, E> {
                self.visit_str(&format!("{x}"))
            }
        }
        d.deserialize_any(V)
    }
}

/// A member group's policy: any but latest (which pairs nothing to an anchor).
#[derive(Debug, Clone, Copy)]
struct GroupPolicy(Policy);

impl<'de> Deserialize<'de> for GroupPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<GroupPolicy, D::Error> {
        text_with(d, |s| {
            Policy::parse(s)
                .ok()
                .filter(|p| *p != Policy::Latest)
                .map(GroupPolicy)
                .ok_or_else(|| {
                    format!(
                        "'{s}' is not one of exact, approx, approx-py, approx-epsilon, exact-py"
                    )
                })
        })
    }
}

/// A queue size: a whole number from 1.
#[derive(Debug, Clone, Copy)]
struct Queue(usize);

impl<'de> Deserialize<'de> for Queue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Queue, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Queue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number from 1")
            }
            fn visit_u64<E: serde::de::Error>(self, q: u64) -> Result<Queue, E> {
                if (1..=1_000_000).contains(&q) {
                    Ok(Queue(q as usize))
                } else {
                    Err(E::custom("expected a whole number from 1"))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, q: i64) -> Result<Queue, E> {
                self.visit_u64(u64::try_from(q).unwrap_or(0))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for StateMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StateMode, D::Error> {
        text_with(d, |m| match m {
            "nearest" => Ok(StateMode::Nearest),
            "interpolate" => Ok(StateMode::Interpolate),
            "hold" => Ok(StateMode::Hold),
            m => Err(format!("'{m}' is not one of nearest, interpolate, hold")),
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContractFile {
    anchor: Option<Text>,
    members: Option<Vec<GroupFile>>,
    state: Option<Vec<StateFile>>,
    freshness: Option<Freshness>,
    tf: Option<Tf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    name: Option<Text>,
    policy: Option<GroupPolicy>,
    topics: Option<Vec<Text>>,
    queue: Option<Queue>,
    slop: Option<Span>,
    epsilon: Option<Span>,
    age_penalty: Option<f64>,
    max_interval: Option<Span>,
    hierarchical: Option<bool>,
}

impl GroupFile {
    /// The group, when its keys agree with each other; else `KEY: why`.
    fn spec(self, i: usize) -> Result<GroupSpec, String> {
        let g = self;
        let policy = g
            .policy
            .ok_or("policy: missing (exact, approx, approx-py, approx-epsilon)")?
            .0;
        let topics: Vec<String> = g
            .topics
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.0)
            .collect();
        if topics.is_empty() {
            return Err("topics: needs at least one topic".into());
        }
        let (slop_ns, epsilon_ns) = (g.slop.map(|s| s.0), g.epsilon.map(|s| s.0));
        match (policy, slop_ns) {
            (Policy::ApproxPy, None) => return Err("slop: approx-py needs a slop".into()),
            (p, Some(_)) if p != Policy::ApproxPy => {
                return Err(format!("slop: applies to approx-py only, not {p}"))
            }
            _ => {}
        }
        match (policy, epsilon_ns) {
            (Policy::ApproxEpsilon, None) => {
                return Err("epsilon: approx-epsilon needs an epsilon".into())
            }
            (p, Some(_)) if p != Policy::ApproxEpsilon => {
                return Err(format!("epsilon: applies to approx-epsilon only, not {p}"))
            }
            _ => {}
        }
        if let Some(a) = g.age_penalty {
            if !(a.is_finite() && a >= 0.0 && policy == Policy::Approx) {
                return Err("age_penalty: a number >= 0, for approx only".into());
            }
        }
        let max_interval_ns = g.max_interval.map(|s| s.0);
        if max_interval_ns.is_some() && policy != Policy::Approx {
            return Err("max_interval: applies to approx only".into());
        }
        let hierarchical = g.hierarchical.unwrap_or(false);
        if hierarchical && topics.len() < 2 {
            return Err("hierarchical: a hierarchical group needs at least 2 topics".into());
        }
        if topics.len() + usize::from(!hierarchical) > bagscope_sync::MAX_TOPICS {
            return Err(format!(
                "topics: a synchronizer takes at most {} topics",
                bagscope_sync::MAX_TOPICS
            ));
        }
        Ok(GroupSpec {
            name: g.name.map_or_else(|| format!("group{i}"), |n| n.0),
            policy,
            topics,
            queue: g.queue.map_or(10, |q| q.0),
            slop_ns,
            epsilon_ns,
            age_penalty: g.age_penalty,
            max_interval_ns,
            hierarchical,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    topic: Option<Text>,
    mode: Option<StateMode>,
    max_gap: Option<Span>,
    continuous_joints: Option<Vec<Text>>,
    optional: Option<bool>,
}

impl StateFile {
    /// The state entry, when nothing it needs is missing; else `KEY: why`.
    fn spec(self) -> Result<StateSpec, String> {
        let s = self;
        Ok(StateSpec {
            topic: s.topic.ok_or("topic: missing")?.0,
            mode: s.mode.ok_or("mode: missing (nearest, interpolate, hold)")?,
            max_gap_ns: s
                .max_gap
                .ok_or("max_gap: missing: the largest gap beyond which the state is missing")?
                .0,
            continuous_joints: s
                .continuous_joints
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.0)
                .collect(),
            optional: s.optional.unwrap_or(false),
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Freshness {
    max_age: Option<Span>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tf {
    target_frame: Option<Text>,
    cache: Option<Span>,
}

/// The line (from 1) where entry `i` of the top-level list `list` starts (`- ` in block
/// style); None when the list is not written that way.
fn item_line(text: &str, list: &str, i: usize) -> Option<usize> {
    let mut lines = text.lines().enumerate();
    lines.find(|(_, l)| l.trim_end() == format!("{list}:"))?;
    let mut indent = None;
    let mut seen = 0;
    for (n, l) in lines {
        let body = l.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let at = l.len() - body.len();
        if at == 0 && !body.starts_with('-') {
            return None;
        }
        if body.starts_with('-') && indent.is_none_or(|x| x == at) {
            indent = Some(at);
            if seen == i {
                return Some(n + 1);
            }
            seen += 1;
        }
    }
    None
}

impl Contract {
    /// The contract in `text` (YAML, docs/observe.md). Unknown keys, values of the wrong kind
    /// and keys that disagree (a slop for a policy without one) are refused, naming the key.
    /// A key given twice is the caller's to refuse (the parser keeps the last).
    pub fn from_yaml(text: &str) -> Result<Contract, ContractError> {
        let f: ContractFile =
            serde_yaml_ng::from_str(text).map_err(|e| ContractError::from_yaml(&e))?;
        let anchor = f
            .anchor
            .ok_or_else(|| {
                ContractError::new(
                    "anchor",
                    "missing (the topic whose messages define observation times)",
                )
            })?
            .0;
        // A rule between an entry's keys: the entry's key and line, the key it is about.
        let entry = |list: &str, i: usize, why: String| {
            let (k, r) = why.split_once(": ").unwrap_or(("", &why));
            ContractError {
                file: None,
                key: format!("{list}[{i}].{k}"),
                reason: r.to_string(),
                line: item_line(text, list, i),
            }
        };
        let groups = f
            .members
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, g)| g.spec(i).map_err(|why| entry("members", i, why)))
            .collect::<Result<Vec<_>, _>>()?;
        let state = f
            .state
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, s)| s.spec().map_err(|why| entry("state", i, why)))
            .collect::<Result<Vec<_>, _>>()?;
        let (tf_target, tf_cache_ns) = match f.tf {
            None => (None, bagscope_tf::DEFAULT_CACHE_NS),
            Some(t) => (
                Some(
                    t.target_frame
                        .ok_or_else(|| ContractError::new("tf.target_frame", "missing"))?
                        .0,
                ),
                t.cache.map_or(bagscope_tf::DEFAULT_CACHE_NS, |c| c.0),
            ),
        };
        let c = Contract {
            anchor,
            groups,
            state,
            max_age_ns: f.freshness.and_then(|x| x.max_age).map(|s| s.0),
            tf_target,
            tf_cache_ns,
        };
        let mut seen = std::collections::BTreeSet::new();
        for t in c
            .sync_topics()
            .iter()
            .chain(c.state.iter().map(|s| &s.topic))
        {
            if !seen.insert(t.clone()) {
                return Err(ContractError::new(
                    "members",
                    format!(
                        "topic {t} is listed twice (anchor, members and state topics must differ)"
                    ),
                ));
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "anchor: /cam\nmembers:\n  - policy: approx-py\n    topics: [/a, /b]\n    slop: 15ms\nstate:\n  - topic: /joints\n    mode: interpolate\n    max_gap: 0.05\n";

    fn err(text: &str) -> ContractError {
        Contract::from_yaml(text).unwrap_err()
    }

    #[test]
    fn reads_a_contract() {
        let c = Contract::from_yaml(OK).unwrap();
        assert_eq!(c.anchor, "/cam");
        assert_eq!(c.groups[0].name, "group0");
        assert_eq!(c.groups[0].slop_ns, Some(15_000_000));
        assert_eq!(c.groups[0].queue, 10);
        assert_eq!(c.state[0].max_gap_ns, 50_000_000);
        assert_eq!(c.tf_cache_ns, bagscope_tf::DEFAULT_CACHE_NS);
    }

    #[test]
    fn errors_name_the_key_and_its_line() {
        let e = err(&OK.replace("slop: 15ms", "slop: 15 parsecs"));
        assert_eq!(e.key, "members[0].slop", "{e}");
        assert_eq!(e.line, Some(5), "{e}");
        let e = err(&format!("{OK}freshnes: {{max_age: 1s}}\n"));
        assert!(e.reason.contains("unknown field `freshnes`"), "{e}");
        assert_eq!(e.line, Some(10), "{e}");
        let e = err(&OK.replace("interpolate", "spline"));
        assert_eq!(e.key, "state[0].mode", "{e}");
        assert!(e.reason.contains("'spline' is not one of"), "{e}");
        let e = err(&OK.replace("approx-py", "latest"));
        assert_eq!(e.key, "members[0].policy", "{e}");
        // A rule between keys: the key it is about.
        let e = err(&OK.replace("    slop: 15ms\n", ""));
        assert_eq!(e.key, "members[0].slop", "{e}");
        assert!(e.reason.contains("approx-py needs a slop"), "{e}");
        assert_eq!(e.line, Some(3), "{e}");
        let e = err("members: []\n");
        assert_eq!(e.key, "anchor", "{e}");
        let e = err(&OK.replace("topics: [/a, /b]", "topics: [/a, /cam]"));
        assert!(e.reason.contains("/cam is listed twice"), "{e}");
        assert!(err("anchor: 3\n").to_string().contains("anchor"));
    }
}
