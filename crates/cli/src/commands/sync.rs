use std::path::PathBuf;

use bagscope::sync::{sync, SyncCommandReport, SyncOptions};
use bagscope::sync_policy::{parse_duration_ns, Policy, RateConfig};

use crate::render::{self, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage, split files), or one .mcap / .db3 file.
    pub bag: PathBuf,
    /// Topics to synchronize, in the order of the synchronizer's inputs (2 to 9).
    #[arg(long, value_delimiter = ',', num_args = 1.., required = true)]
    pub topics: Vec<String>,
    /// exact, approx, exact-py, exact-py-legacy, approx-py, approx-epsilon, latest
    /// (see docs/sync.md).
    #[arg(long, default_value = "approx-py", value_parser = parse_policy)]
    pub policy: Policy,
    /// queue_size of the synchronizer (latest has none).
    #[arg(long = "queue", alias = "queue-size", default_value_t = 10)]
    pub queue: usize,
    /// approx-py slop: seconds ('0.05', as the Python API converts it) or with a unit ('50ms').
    /// Without it, the slop `--recommend` would recommend is used, and said.
    #[arg(long, value_parser = parse_slop)]
    pub slop: Option<(i64, bool)>,
    /// approx: age penalty (default 0.1, as upstream).
    #[arg(long)]
    pub age_penalty: Option<f64>,
    /// approx: max interval duration.
    #[arg(long, value_parser = parse_dur)]
    pub max_interval: Option<i64>,
    /// approx: inter-message lower bound, TOPIC=DUR (repeatable).
    #[arg(long = "lower-bound", value_parser = parse_topic_dur)]
    pub lower_bound: Vec<(String, i64)>,
    /// approx-py: queue offset, TOPIC=DUR (repeatable).
    #[arg(long = "queue-offset", value_parser = parse_topic_dur)]
    pub queue_offset: Vec<(String, i64)>,
    /// approx-py: accept header-less messages (their arrival time is used).
    #[arg(long)]
    pub allow_headerless: bool,
    /// approx-py: synchronize on arrival time instead of header stamps.
    #[arg(long)]
    pub sync_arrival_time: bool,
    /// approx-epsilon: tolerance from the oldest front (inclusive, >= 0).
    #[arg(long, value_parser = parse_dur)]
    pub epsilon: Option<i64>,
    /// latest: A,E,M (rate EMA alpha, error EMA alpha, step-change margin). Once =
    /// setRateConfig; once per topic, in --topics order = setRateConfigPerMessage.
    #[arg(long = "rate-config", value_parser = parse_rate_config)]
    pub rate_config: Vec<RateConfig>,
    /// Sweep slop (or epsilon) and queue size and recommend them (approx-py; approx with
    /// --max-interval; approx-epsilon).
    #[arg(long)]
    pub recommend: bool,
    /// Platform speed (m/s) to cost a slop as alignment error (v·slop).
    #[arg(long)]
    pub speed: Option<f64>,
    /// Focal length (px), for a pixel cost of the slop: fx·v·slop/depth (with --speed, --depth).
    #[arg(long)]
    pub fx: Option<f64>,
    /// Scene depth (m) for the pixel cost (with --speed and --fx).
    #[arg(long)]
    pub depth: Option<f64>,
    /// Tolerated pixel error: the largest slop whose pixel cost stays within it is reported.
    #[arg(long)]
    pub pixel_budget: Option<f64>,
    /// Write one JSON line per emitted set (its members by topic and index; drops go to
    /// --evidence-drops); `-`: to standard output (the report then goes to standard error).
    #[arg(long)]
    pub evidence: Option<PathBuf>,
    /// Write one JSON line per dropped message, with its reason; `-`: to standard output.
    #[arg(long)]
    pub evidence_drops: Option<PathBuf>,
    /// Reject a set whose anchor is older than this when it completes (emit log time - anchor
    /// stamp): counted as `stale_at_emit`, apart from the pairing drops.
    #[arg(long, value_parser = parse_dur)]
    pub max_age: Option<i64>,
    /// The set member --max-age measures from (default: the first topic).
    #[arg(long)]
    pub anchor: Option<String>,
    /// Reject sets whose members cannot all be transformed into FRAME at their own stamps with
    /// the TF received by the time the set completes (`frame_unavailable`).
    #[arg(long, value_name = "FRAME")]
    pub tf_target: Option<String>,
    /// TF topics for --tf-target (default /tf,/tf_static; a name ending in tf_static is static).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub tf_topics: Vec<String>,
    /// tf2 buffer cache length for --tf-target (default 10 s).
    #[arg(long, value_parser = parse_dur)]
    pub tf_buffer: Option<i64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s).map_err(|e| e.to_string())
}

fn parse_dur(s: &str) -> Result<i64, String> {
    parse_duration_ns(s).map_err(|e| e.to_string())
}

/// A slop and whether it was a bare number of seconds (no unit).
fn parse_slop(s: &str) -> Result<(i64, bool), String> {
    let unitless = s.trim().ends_with(|c: char| c.is_ascii_digit() || c == '.');
    Ok((parse_dur(s)?, unitless))
}

fn parse_rate_config(s: &str) -> Result<RateConfig, String> {
    RateConfig::parse(s).map_err(|e| e.to_string())
}

fn parse_topic_dur(s: &str) -> Result<(String, i64), String> {
    let (t, d) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected TOPIC=DURATION, got '{s}'"))?;
    Ok((t.to_string(), parse_dur(d)?))
}

pub(crate) fn run(mut a: Args) -> anyhow::Result<u8> {
    // `-`: the JSON lines go to standard output, through a temporary file.
    let dash = |p: &Option<PathBuf>| p.as_deref().is_some_and(render::is_stdout);
    if dash(&a.evidence) && dash(&a.evidence_drops) {
        return Err(crate::UsageError(
            "--evidence - and --evidence-drops -: only one of them can go to standard output"
                .into(),
        )
        .into());
    }
    let stage = if dash(&a.evidence) || dash(&a.evidence_drops) {
        let stage = render::StdoutStage::new()?;
        let file = stage.file("evidence.jsonl");
        for p in [&mut a.evidence, &mut a.evidence_drops] {
            if dash(p) {
                *p = Some(file.clone());
            }
        }
        Some((stage, file))
    } else {
        None
    };
    let o = SyncOptions {
        topics: a.topics,
        policy: a.policy,
        queue_size: a.queue,
        slop_ns: a.slop.map(|(ns, _)| ns),
        slop_unitless: a.slop.is_some_and(|(_, bare)| bare),
        age_penalty: a.age_penalty,
        max_interval_ns: a.max_interval,
        lower_bounds_ns: a.lower_bound,
        queue_offsets_ns: a.queue_offset,
        epsilon_ns: a.epsilon,
        rate_config: a.rate_config,
        allow_headerless: a.allow_headerless,
        sync_arrival_time: a.sync_arrival_time,
        recommend: a.recommend,
        speed_mps: a.speed,
        fx_px: a.fx,
        depth_m: a.depth,
        pixel_budget: a.pixel_budget,
        evidence: a.evidence,
        evidence_drops: a.evidence_drops,
        max_age_ns: a.max_age,
        anchor: a.anchor,
        tf_target: a.tf_target,
        tf_topics: a.tf_topics,
        tf_cache_ns: a.tf_buffer,
    };
    let r = sync(&a.bag, &o)?;
    if let Some((stage, file)) = &stage {
        stage.copy_out(file)?;
    }
    if a.json {
        render::json(&r)?;
    } else {
        render::print(&text(&r))?;
    }
    Ok(if r.data_loss() { crate::EXIT_WARN } else { 0 })
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
