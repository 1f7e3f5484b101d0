use std::path::PathBuf;

use bagscope::sync::{sync, SyncCommandReport, SyncOptions};
use bagscope::sync_policy::Policy;

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub options: SyncOptions,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(mut a: Args) -> anyhow::Result<u8> {
    let o = &mut a.options;
    // `-`: the JSON lines go to standard output, through a temporary file.
    let dash = |p: &Option<PathBuf>| p.as_deref().is_some_and(render::is_stdout);
    if dash(&o.evidence) && dash(&o.evidence_drops) {
        return Err(bagscope::Error::invalid(
            "evidence",
            "`evidence` - and `evidence_drops` -: only one of them can go to standard output",
        )
        .into());
    }
    let stage = if dash(&o.evidence) || dash(&o.evidence_drops) {
        let stage = render::StdoutStage::new()?;
        let file = stage.file("evidence.jsonl");
        for p in [&mut o.evidence, &mut o.evidence_drops] {
            if dash(p) {
                *p = Some(file.clone());
            }
        }
        Some((stage, file))
    } else {
        None
    };
    let r = sync(&a.bag, &a.options)?;
    if let Some((stage, file)) = &stage {
        stage.copy_out(file)?;
    }
    render::finish(&r, a.json, text)
}

fn text(r: &SyncCommandReport) -> String {
    let mut s = format!("bag: {}\n", r.bag);
    let mut rows = vec![vec![
        "input".to_string(),
        "topic".into(),
        "type".into(),
        "messages".into(),
        "time from".into(),
    ]];
    for (k, t) in r.topics.iter().enumerate() {
        rows.push(vec![
            k.to_string(),
            t.topic.clone(),
            t.type_name.clone(),
            t.messages.to_string(),
            serde_json::to_value(t.stamp_source)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        ]);
    }
    s.push_str(&table(&rows));
    if let Some(rep) = &r.report {
        s.push_str(&format!(
            "\npolicy {}{}{}{}: {} sets, match rate {:.3}\n",
            rep.policy,
            if rep.policy == Policy::Latest {
                String::new()
            } else {
                format!(" queue {}", r.queue_size)
            },
            r.slop_ns
                .map(|x| format!(" slop {:.1} ms", x as f64 / 1e6))
                .unwrap_or_default(),
            r.epsilon_ns
                .map(|x| format!(" epsilon {:.1} ms", x as f64 / 1e6))
                .unwrap_or_default(),
            rep.sets,
            rep.match_rate
        ));
        if let Some(sp) = &rep.span_ns {
            s.push_str(&format!(
                "set span (max-min stamp): p50 {} ms, p99 {} ms, max {} ms\n",
                opt_ms(Some(sp.p50)),
                opt_ms(Some(sp.p99)),
                opt_ms(Some(sp.max))
            ));
        }
        if let Some(ea) = &rep.emit_age_ns {
            s.push_str(&format!(
                "emit age (completed - newest stamp): p50 {} ms, p99 {} ms\n",
                opt_ms(Some(ea.p50)),
                opt_ms(Some(ea.p99))
            ));
        }
        if !rep.drops.is_empty() {
            s.push_str("drops:");
            for (k, v) in &rep.drops {
                s.push_str(&format!(" {k}={v}"));
            }
            s.push('\n');
        }
        // Why, per topic: how far the partners of skew_exceeded drops were, and which topic
        // never offered one.
        for t in &rep.drops_per_topic {
            let name = r.topics.get(t.topic).map_or("?", |u| u.topic.as_str());
            if let Some(sp) = &t.skew_span_ns {
                s.push_str(&format!(
                    "  {name}: skew_exceeded, tightest set span {} to {} ms\n",
                    opt_ms(Some(sp.min)),
                    opt_ms(Some(sp.max))
                ));
            }
            for (m, c) in &t.missing_partner {
                let other = r.topics.get(*m).map_or("?", |u| u.topic.as_str());
                s.push_str(&format!(
                    "  {name}: {c} dropped with no partner on {other}\n"
                ));
            }
        }
    }
    if let Some(rec) = &r.recommendation {
        // approx-epsilon's tolerance is its epsilon (swept like a slop).
        let word = if rec.policy == Policy::ApproxEpsilon {
            "epsilon"
        } else {
            "slop"
        };
        s.push_str(&format!(
            "\nrecommended ({}): {} {:.1} ms, queue_size {} -> match rate {:.3}\n",
            rec.policy,
            word,
            rec.recommendation.slop_ns as f64 / 1e6,
            rec.recommendation.queue_size,
            rec.recommendation.match_rate
        ));
        s.push_str(&format!(
            "rule: half the fast period {:.1} ms; queue minimum {} (from the receive-lag difference)\n",
            rec.rule.half_fast_period_ns as f64 / 1e6,
            rec.rule.queue_min
        ));
        if let Some(m) = rec.min_slop_ns {
            s.push_str(&format!(
                "this recording alone needs {word} >= {:.1} ms\n",
                m as f64 / 1e6
            ));
        }
        if let Some(c) = rec.match_rate_at_queue_min_minus_1 {
            s.push_str(&format!(
                "cliff: match rate {c:.3} one below the queue minimum\n"
            ));
        }
    }
    if let Some(no) = &r.no_recommendation {
        s.push_str(&format!(
            "\nno recommendation ({}): {}\n",
            no.policy, no.message
        ));
    }
    if let Some(f) = &r.freshness {
        s.push_str(&format!(
            "freshness (anchor {}{}{}): {} of {} sets accepted",
            f.anchor_topic,
            f.report
                .max_age_ns
                .map(|m| format!(", max age {:.1} ms", m as f64 / 1e6))
                .unwrap_or_default(),
            f.tf_target
                .as_ref()
                .map(|t| format!(", tf target {t}"))
                .unwrap_or_default(),
            f.report.accepted_sets,
            f.report.emitted_sets
        ));
        for (k, v) in &f.report.rejected {
            s.push_str(&format!(" {k}={v}"));
        }
        s.push('\n');
    }
    for d in &r.diagnoses {
        s.push_str(&format!("diagnosis: {}\n", d.message));
    }
    s.push_str(&render::warnings(&r.warnings));
    s
}
