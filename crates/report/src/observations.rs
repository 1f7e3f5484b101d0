//! The page's "Observations" section (`report --contract FILE`): `observe`'s summary for the
//! contract, and the messages left out by reason.

use serde::Serialize;

use bagscope::observe::analysis::{NsSummary, ObserveSummary};
use bagscope::observe::{observe_summary, LoadedContract};

/// `observe`'s summary of the bag under the contract (`observations` in `report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct ObservationsEntry {
    /// The contract file.
    pub contract: String,
    /// Its content hash.
    pub policy_version: String,
    /// The summary `observe --json` prints; None when the builder failed.
    pub summary: Option<ObserveSummary>,
    /// Why it failed; None when it answered.
    pub error: Option<String>,
}

/// Runs the builder for the page (no files written).
pub(crate) fn observations(path: &std::path::Path, c: &LoadedContract) -> ObservationsEntry {
    let res = bagscope::io::Bag::open(path)
        .map_err(bagscope::Error::from)
        .and_then(|bag| observe_summary(&bag, c));
    let (summary, error) = match res {
        Ok(r) => (Some(r.report.summary), None),
        Err(e) => (None, Some(e.to_string())),
    };
    ObservationsEntry {
        contract: c.path.display().to_string(),
        policy_version: c.policy_version.clone(),
        summary,
        error,
    }
}

fn ms(v: Option<i64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{:.1} ms", x as f64 / 1e6))
}

/// (quantity, p50, p99) rows and (reason, messages, anchors) rows.
pub(crate) fn rows(s: &ObserveSummary) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let q = |name: &str, v: &Option<NsSummary>| {
        vec![name.to_string(), ms(v.map(|x| x.p50)), ms(v.map(|x| x.p99))]
    };
    let mut a = vec![vec![
        "observations".to_string(),
        format!("{} of {} anchors", s.observations, s.anchors),
        String::new(),
    ]];
    a.push(q("span", &s.span_ns));
    a.push(q("emit age", &s.emit_age_ns));
    a.push(q("state gap", &s.gap_ns));
    a.push(q("online wait", &s.online_wait_ns));
    let b = s
        .drops
        .iter()
        .map(|(k, n)| {
            vec![
                k.as_str().to_string(),
                n.to_string(),
                s.rejected_anchors.get(k).copied().unwrap_or(0).to_string(),
            ]
        })
        .collect();
    (a, b)
}
