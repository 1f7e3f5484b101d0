use std::path::PathBuf;

use bagscope::info::{info_with, InfoOptions, InfoReport};
use bagscope::timefmt::secs;

use crate::render::{self, bytes, opt_ms, table};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder (mcap or sqlite3 storage), a folder of .mcap files, or one .mcap / .db3 file.
    pub bag: PathBuf,
    #[command(flatten)]
    pub options: InfoOptions,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let r = info_with(&a.bag, &a.options)?;
    render::finish(&r, a.json, text)
}

fn text(r: &InfoReport) -> String {
    let mut s = String::new();
    s.push_str(&format!("bag:       {}\n", r.path));
    s.push_str(&format!(
        "files:     {} ({} bytes, storage {}, compression {})\n",
        r.files.len(),
        r.size_bytes,
        r.storage,
        r.compression
    ));
    s.push_str(&format!("duration:  {} s\n", secs(r.duration_ns)));
    s.push_str(&format!(
        "start:     {} ({} ns)\n",
        r.start_time, r.start_ns
    ));
    s.push_str(&format!("end:       {} ({} ns)\n", r.end_time, r.end_ns));
    s.push_str(&format!("messages:  {}\n", r.message_count));
    if let Some(b) = r.payload_bytes {
        s.push_str(&format!("payload:   {}\n", bytes(b as f64)));
    }
    if let Some(d) = &r.ros_distro {
        s.push_str(&format!("ros:       {d}\n"));
    }
    for f in &r.files {
        if !f.profile.is_empty() || !f.library.is_empty() {
            s.push_str(&format!(
                "writer:    profile {}, library {} ({})\n",
                if f.profile.is_empty() {
                    "-"
                } else {
                    &f.profile
                },
                if f.library.is_empty() {
                    "-"
                } else {
                    &f.library
                },
                f.path
            ));
        }
    }
    for c in &r.chunk_compression {
        s.push_str(&format!(
            "chunks:    {} {} ({} stored, {} uncompressed{})\n",
            c.chunks,
            c.compression,
            bytes(c.compressed_bytes as f64),
            bytes(c.uncompressed_bytes as f64),
            c.ratio
                .map(|x| format!(", ratio {x:.2}"))
                .unwrap_or_default()
        ));
    }
    for f in &r.files {
        for m in &f.metadata {
            let kv: Vec<String> = m
                .metadata
                .iter()
                .map(|(k, v)| {
                    // A long value (rosbag2's serialized bag metadata) is shown by its length.
                    if v.len() > 60 || v.contains('\n') {
                        format!("{k}=<{} bytes>", v.len())
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect();
            s.push_str(&format!("metadata:  {}: {}\n", m.name, kv.join(", ")));
        }
    }
    s.push('\n');
    let mut rows = vec![vec![
        "topic".to_string(),
        "type".into(),
        "count".into(),
        "rate_hz".into(),
        "median_period_ms".into(),
        "largest_gap_ms".into(),
        "first_s".into(),
        "last_s".into(),
        "size".into(),
        "share_%".into(),
        "mean_B/s".into(),
        "peak_B/s".into(),
    ]];
    for t in &r.topics {
        let rel = |v: Option<i64>| {
            v.map(|x| secs(x - r.start_ns))
                .unwrap_or_else(|| "-".into())
        };
        rows.push(vec![
            t.topic.clone(),
            t.type_name.clone(),
            t.count.to_string(),
            render::rate(t.rate_hz, t.count, t.log_span_ns),
            opt_ms(t.median_period_ns),
            opt_ms(t.largest_gap_ns),
            rel(t.first_log_time_ns),
            rel(t.last_log_time_ns),
            t.size_bytes
                .map(|b| bytes(b as f64))
                .unwrap_or_else(|| "-".into()),
            render::opt_f(t.size_share.map(|x| x * 100.0), 1),
            t.mean_bandwidth_bps
                .map(|b| format!("{}/s", bytes(b)))
                .unwrap_or_else(|| "-".into()),
            t.peak_bandwidth_bps
                .map(|b| format!("{}/s", bytes(b as f64)))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    s.push_str(&table(&rows));
    // Serialization format and offered QoS, where the bag records QoS or a format other than
    // CDR.
    if r.topics
        .iter()
        .any(|t| !t.offered_qos.is_empty() || t.message_encoding != "cdr")
    {
        let mut rows = vec![vec![
            "topic".to_string(),
            "format".into(),
            "offered_qos".into(),
        ]];
        for t in &r.topics {
            rows.push(vec![
                t.topic.clone(),
                t.message_encoding.clone(),
                qos(&t.offered_qos),
            ]);
        }
        s.push('\n');
        s.push_str(&table(&rows));
    }
    let images: Vec<_> = r.topics.iter().filter(|t| t.image.is_some()).collect();
    if !images.is_empty() {
        s.push_str("\nimages (raw bandwidth the format implies vs recorded):\n");
        for t in images {
            let Some(i) = &t.image else { continue };
            s.push_str(&format!(
                "  {}: {}x{} {} -> expected {}, recorded {}{}\n",
                t.topic,
                i.width,
                i.height,
                i.encoding,
                i.expected_raw_bps
                    .map(|b| format!("{}/s", bytes(b)))
                    .unwrap_or_else(|| "-".into()),
                t.mean_bandwidth_bps
                    .map(|b| format!("{}/s", bytes(b)))
                    .unwrap_or_else(|| "-".into()),
                i.recorded_over_expected
                    .map(|x| format!(" ({x:.2}x)"))
                    .unwrap_or_default()
            ));
        }
    }
    if !r.services.is_empty() {
        s.push_str("\nservices:\n");
        let mut rows = vec![vec![
            "service".to_string(),
            "type".into(),
            "events".into(),
            "requests".into(),
            "responses".into(),
            "calls".into(),
            "unanswered".into(),
            "rtt_p50_ms".into(),
            "rtt_max_ms".into(),
            "server_p50_ms".into(),
            "server_max_ms".into(),
        ]];
        for sv in &r.services {
            let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
            let l = sv.latency.as_ref();
            let rtt = l.and_then(|l| l.round_trip_ns);
            let server = l.and_then(|l| l.server_ns);
            rows.push(vec![
                sv.service.clone(),
                sv.type_name.clone(),
                sv.event_count.to_string(),
                opt(sv.request_count),
                opt(sv.response_count),
                opt(l.map(|l| l.calls)),
                opt(l.map(|l| l.unanswered_requests)),
                opt_ms(rtt.map(|x| x.p50)),
                opt_ms(rtt.map(|x| x.max)),
                opt_ms(server.map(|x| x.p50)),
                opt_ms(server.map(|x| x.max)),
            ]);
        }
        s.push_str(&table(&rows));
    }
    if !r.cadence {
        s.push_str("(--fast: periods, gaps, sizes and service latencies not computed)\n");
    }
    if r.summary_only {
        s.push_str("(--fast: answered from the summary; the data section was not checked)\n");
    }
    if !r.warnings.is_empty() {
        s.push('\n');
        s.push_str(&render::warnings(&r.warnings));
    }
    s
}

/// A topic's offered QoS in a few words (`reliable/volatile/last 10`); `mixed` when its
/// publishers differed, `-` when none was recorded.
fn qos(profiles: &[bagscope::info::QosInfo]) -> String {
    let one = |q: &bagscope::info::QosInfo| {
        let r = match q.reliability {
            Some(bagscope::qos::Reliability::Reliable) => "reliable",
            Some(bagscope::qos::Reliability::BestEffort) => "best_effort",
            None => "default",
        };
        let d = match q.durability {
            Some(bagscope::qos::Durability::Volatile) => "volatile",
            Some(bagscope::qos::Durability::TransientLocal) => "transient_local",
            None => "default",
        };
        let h = match (q.history, q.depth) {
            (Some("keep_all"), _) => "all".to_string(),
            (_, Some(d)) => format!("last {d}"),
            (Some(_), None) => "last".into(),
            _ => "default".into(),
        };
        format!("{r}/{d}/{h}")
    };
    let mut v: Vec<String> = profiles.iter().map(one).collect();
    v.sort();
    v.dedup();
    match v.len() {
        0 => "-".into(),
        1 => v.remove(0),
        _ => format!("mixed: {}", v.join(" | ")),
    }
}
