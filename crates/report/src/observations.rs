//! The page's "Observations" section (`report --contract FILE`): `observe`'s summary for the
//! contract, and the messages left out by reason.

use bagscope::observe::analysis::{NsSummary, ObserveSummary};

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
