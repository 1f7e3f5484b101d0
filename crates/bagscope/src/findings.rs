//! The verdicts' findings: every warning and contract-check finding of a command, grouped by
//! code, each with a severity, worst first. One rule for every command (`clocks`, `check`,
//! `report`), so the same bag gives the same codes for the same topics wherever it is asked.
//!
//! * `data_loss` is true exactly when messages could not be read at all (a cut file, a bad
//!   CRC, an undecodable chunk, a missing split file, loss the recorder itself logged) or a
//!   record of the file could not be parsed (suspect data): the warnings flagged `data_loss`
//!   (`bagscope_types::WarningCode::is_data_loss` for the codes that always are). A topic that cannot be *decoded* for lack of a definition is
//!   `undecodable_topic`, severity info: every message of it was read.
//! * Severities: `error` for lost data, `warning` for what makes numbers wrong or misleading
//!   (clock offsets, frozen / zero / invalid stamps, a replayed recording, split axes, clock
//!   jumps, contract violations), `info` for what describes the bag without faulting it.

use std::collections::BTreeMap;

use serde::Serialize;

use bagscope_bag::{Warning, WarningCode};

pub use bagscope_types::Severity;

/// One code's findings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictFinding {
    /// The warning or contract-check code (`clock_offset`, `stamp_frozen`, ...), or `data_loss`
    /// for the entry that sums up every warning that lost messages.
    pub code: String,
    /// The worst severity among the code's warnings.
    pub severity: Severity,
    /// Topics concerned, sorted (empty for bag-wide findings).
    pub topics: Vec<String>,
    /// Warnings or per-message findings behind this entry.
    pub count: usize,
    /// The first warning's message (with its file when the message does not name it),
    /// prefixed by `N findings; the first:` when there are several.
    pub message: String,
}

/// The first screen's facts, shared by `clocks --json`, `check --json` and `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictSummary {
    /// Messages that could not be read at all (see the module docs).
    pub data_loss: bool,
    /// Stamped non-aggregate topics on different clock axes.
    pub split: bool,
    /// One entry per code, worst first.
    pub findings: Vec<VerdictFinding>,
}

/// The severity of a warning or check code (`data_loss`: the warning says messages were
/// lost): a warning code's own ([`WarningCode::severity`]); `data_loss`, the entry summing up
/// the losses, an error; a contract-check code a warning.
pub fn severity_of(code: &str, data_loss: bool) -> Severity {
    match code.parse::<WarningCode>() {
        _ if data_loss || code == "data_loss" => Severity::Error,
        Ok(c) => c.severity(),
        Err(_) => Severity::Warning,
    }
}

/// A check finding met right after the warnings a reader should meet first.
const CHECK_READ_FIRST: &str = "stamp_before_bag_start";

/// Worst first; within a severity, `data_loss`, then the codes in their reading order
/// ([`WarningCode::reading_order`]), then by name.
fn rank(f: &VerdictFinding) -> (Severity, u8, String) {
    let pos = match f.code.parse::<WarningCode>() {
        _ if f.code == "data_loss" => 0,
        Ok(c) if c.reading_order() < WarningCode::LAST_IN_ORDER => c.reading_order(),
        _ if f.code == CHECK_READ_FIRST => WarningCode::LAST_IN_ORDER - 1,
        _ => WarningCode::LAST_IN_ORDER,
    };
    (f.severity, pos, f.code.clone())
}

/// A per-message contract-check finding, as far as the verdicts need it.
pub struct CheckHit<'a> {
    /// The check's code (`image_data_size_mismatch`, ...).
    pub code: &'a str,
    /// The topic of the message it was found on.
    pub topic: &'a str,
    /// What is wrong, as the check words it.
    pub message: &'a str,
}

/// The verdicts' view of `check`'s per-message findings.
pub fn check_hits(findings: &[bagscope_checks::Finding]) -> Vec<CheckHit<'_>> {
    findings
        .iter()
        .map(|f| CheckHit {
            code: &f.code,
            topic: &f.topic,
            message: &f.message,
        })
        .collect()
}

#[derive(Default)]
struct Group {
    severity: Option<Severity>,
    topics: Vec<String>,
    count: usize,
    messages: Vec<String>,
}

impl Group {
    fn add(&mut self, severity: Severity, topic: Option<&str>, message: String) {
        self.severity = Some(self.severity.map_or(severity, |s| s.min(severity)));
        if let Some(t) = topic {
            self.topics.push(t.to_string());
        }
        self.count += 1;
        if self.messages.is_empty() {
            self.messages.push(message);
        }
    }
}

/// Groups `warnings` and contract-check `hits` by code: one finding per code, worst first,
/// plus a `data_loss` entry naming the causes when any warning says messages were lost.
pub fn summarise(warnings: &[Warning], hits: &[CheckHit<'_>], split: bool) -> VerdictSummary {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut loss: Group = Group::default();
    let mut loss_codes: BTreeMap<&str, usize> = BTreeMap::new();
    for w in warnings {
        let text = match &w.file {
            Some(f) if !w.message.contains(f.as_str()) => format!("{} ({f})", w.message),
            _ => w.message.clone(),
        };
        groups.entry(w.code.to_string()).or_default().add(
            severity_of(w.code.as_str(), w.data_loss),
            w.topic.as_deref(),
            text,
        );
        if w.data_loss {
            loss.add(Severity::Error, w.topic.as_deref(), String::new());
            *loss_codes.entry(w.code.as_str()).or_default() += 1;
        }
    }
    for h in hits {
        groups.entry(h.code.to_string()).or_default().add(
            severity_of(h.code, false),
            Some(h.topic),
            h.message.to_string(),
        );
    }
    let mut findings: Vec<VerdictFinding> = groups
        .into_iter()
        .map(|(code, g)| finding(code, g))
        .collect();
    if !loss_codes.is_empty() {
        let causes: Vec<String> = loss_codes
            .iter()
            .map(|(c, n)| format!("{c} ×{n}"))
            .collect();
        loss.messages = vec![format!(
            "messages or records could not be read: {} (see those findings)",
            causes.join(", ")
        )];
        findings.push(finding("data_loss".into(), loss));
    }
    findings.sort_by_key(rank);
    VerdictSummary {
        data_loss: !loss_codes.is_empty(),
        split,
        findings,
    }
}

fn finding(code: String, mut g: Group) -> VerdictFinding {
    g.topics.sort_by(|a, b| natural_cmp(a, b));
    g.topics.dedup();
    let first = g.messages.into_iter().next().unwrap_or_default();
    let message = if g.count > 1 {
        format!("{} findings; the first: {first}", g.count)
    } else {
        first
    };
    VerdictFinding {
        code,
        severity: g.severity.unwrap_or(Severity::Info),
        topics: g.topics,
        count: g.count,
        message,
    }
}

/// Orders strings with their digit runs compared as numbers: `bag_2` before `bag_10`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let lx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let ly = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (&x[..lx], &y[..ly]);
                // Compare as numbers without parsing: strip leading zeros, then length, then digits.
                let tx = &nx[nx.iter().take_while(|&&c| c == b'0').count()..];
                let ty = &ny[ny.iter().take_while(|&&c| c == b'0').count()..];
                let o = tx.len().cmp(&ty.len()).then(tx.cmp(ty));
                if o != Ordering::Equal {
                    return o;
                }
                x = &x[lx..];
                y = &y[ly..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_compares_numbers() {
        let mut v = vec!["f_10", "f_2", "f_1", "f_0", "f_11", "g"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, vec!["f_0", "f_1", "f_2", "f_10", "f_11", "g"]);
    }

    #[test]
    fn undecodable_is_not_loss_and_loss_comes_first() {
        let ws = vec![
            Warning::new(WarningCode::UndecodableTopic, "no definition").topic("/a"),
            Warning::new(WarningCode::ClockOffset, "off").topic("/b"),
            Warning::new(WarningCode::Truncated, "cut").loss(),
        ];
        let s = summarise(&ws, &[], false);
        assert!(s.data_loss);
        let codes: Vec<&str> = s.findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(
            codes,
            vec![
                "data_loss",
                "truncated",
                "clock_offset",
                "undecodable_topic"
            ]
        );
        assert_eq!(s.findings[3].severity, Severity::Info);
        let s = summarise(&ws[..2], &[], false);
        assert!(!s.data_loss);
    }

    #[test]
    fn one_entry_per_code_with_every_topic() {
        let ws = vec![
            Warning::new(WarningCode::StampZero, "x").topic("/b10"),
            Warning::new(WarningCode::StampZero, "y").topic("/b2"),
        ];
        let hits = [CheckHit {
            code: "stamp_zero",
            topic: "/c",
            message: "header.stamp is 0",
        }];
        let s = summarise(&ws, &hits, false);
        assert_eq!(s.findings.len(), 1);
        assert_eq!(s.findings[0].topics, vec!["/b2", "/b10", "/c"]);
        assert_eq!(s.findings[0].count, 3);
    }
}
