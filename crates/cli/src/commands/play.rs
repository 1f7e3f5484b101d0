use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use bagscope::sync_policy::parse_duration_ns;
use bagscope_replay::dds::DiscoveryRange;
use bagscope_replay::{play, Control, Order, PlayOptions, PlayReport, QosOverrides, Restamp};

use crate::render;

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum OrderArg {
    Log,
    Publish,
    Stamp,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum RestampArg {
    Keep,
    Now,
}

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The bag to play: a rosbag2 folder, a .mcap or .db3 file.
    pub bag: PathBuf,
    /// Only these topics.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub topics: Vec<String>,
    /// Not these topics.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub exclude_topics: Vec<String>,
    /// Publish a topic under another name: OLD:=NEW (repeatable).
    #[arg(long, num_args = 1.., value_parser = parse_remap)]
    pub remap: Vec<(String, String)>,
    /// Playback speed factor.
    #[arg(short = 'r', long, default_value_t = 1.0)]
    pub rate: f64,
    /// Skip this much of the bag from its first message (e.g. 2.5, 500ms).
    #[arg(long, value_parser = parse_dur, default_value = "0")]
    pub start_offset: i64,
    /// Play only this much (bag time) after the start offset.
    #[arg(long, value_parser = parse_dur)]
    pub duration: Option<i64>,
    /// Wait this long before the first message.
    #[arg(short = 'd', long, value_parser = parse_dur, default_value = "0")]
    pub delay: i64,
    /// Start again from the beginning at the end, until stopped.
    #[arg(short = 'l', long = "loop")]
    pub loop_playback: bool,
    /// Publish /clock with bag time at HZ (40 when no value is given).
    #[arg(long, num_args = 0..=1, default_missing_value = "40", value_name = "HZ")]
    pub clock: Option<f64>,
    /// Play the bag's own /clock when it has one, else publish one with bag time at HZ (40 when
    /// no value is given).
    #[arg(long, num_args = 0..=1, default_missing_value = "40", value_name = "HZ", conflicts_with = "clock")]
    pub clock_if_missing: Option<f64>,
    /// Which time sets the schedule: recorder receive (log), publish, or header.stamp.
    #[arg(long, value_enum, default_value = "log")]
    pub order: OrderArg,
    /// Start paused: space resumes/pauses, s (or →) publishes the next message, q stops.
    #[arg(short = 'p', long)]
    pub start_paused: bool,
    /// Pace by this clock topic (a simulator's /clock) instead of the wall clock: a message
    /// goes out when that clock passes its time relative to the start; waits while it stands.
    #[arg(long, value_name = "TOPIC")]
    pub follow_clock: Option<String>,
    /// Rewrite header.stamp to the publish time (`now`) or keep it as recorded.
    #[arg(long, value_enum, default_value = "keep")]
    pub restamp: RestampArg,
    /// Also write what is played into this MCAP: log time = scheduled time, publish time = when
    /// it was handed to DDS, the instant the timing error is measured at (a retimed bag).
    #[arg(short = 'o', long = "output", visible_alias = "out", value_name = "FILE.mcap", value_parser = crate::render::output_path)]
    pub out: Option<PathBuf>,
    /// With --out: do not publish; compute the schedule and write it at once.
    #[arg(long, requires = "out", conflicts_with = "dry_run")]
    pub no_publish: bool,
    /// Pace in real time but publish nowhere (no DDS): measures this machine's scheduling
    /// error; with --out, writes the bag as actually timed.
    #[arg(long)]
    pub dry_run: bool,
    /// DDS domain (defaults to $ROS_DOMAIN_ID, else 0).
    #[arg(long)]
    pub domain_id: Option<u16>,
    /// Keep DDS discovery and traffic on loopback (127.0.0.1), as ROS_LOCALHOST_ONLY=1 or
    /// ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (both honoured) do for ROS 2 nodes.
    #[arg(long)]
    pub localhost_only: bool,
    /// Per-topic QoS overrides (rosbag2 YAML: /topic: {reliability: best_effort, ...}).
    #[arg(
        long,
        value_name = "FILE",
        visible_alias = "qos-profile-overrides-path"
    )]
    pub qos_overrides: Option<PathBuf>,
    /// Before playing, wait up to this long for a subscriber on every topic (then 0.5 s more,
    /// for them to discover the player in turn; --delay comes after that).
    #[arg(long, value_parser = parse_dur, value_name = "DUR")]
    pub wait_for_subscribers: Option<i64>,
    /// Do not capture the player's own outgoing packets (which needs CAP_NET_RAW): the report
    /// then gives the hand-off to DDS only, not when messages left the host.
    #[arg(long)]
    pub no_wire_capture: bool,
    /// Never hand messages off early by the measured hand-off-to-wire delay, even where it is
    /// steady.
    #[arg(long)]
    pub no_early: bool,
    /// Write the timing report as JSON to this file.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The DDS domain and discovery range from the options and ROS 2's environment variables, or
/// a usage error (exit 2) naming the variable. Values are checked even when nothing is
/// published; `OFF` is refused only when publishing, since then nothing could receive.
///
/// As in ROS 2 (Jazzy and later), `ROS_AUTOMATIC_DISCOVERY_RANGE` is one of `SUBNET` (the
/// default), `LOCALHOST`, `OFF` or `SYSTEM_DEFAULT` (the DDS's own default: every interface,
/// for RustDDS), and the deprecated `ROS_LOCALHOST_ONLY=1` means `LOCALHOST` whatever the
/// range says. `OFF` (discovery within the process only) would leave the player talking to
/// nobody, so it is an error rather than a silent no-op.
fn dds_settings(
    domain_arg: Option<u16>,
    localhost_only: bool,
    publish: bool,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(u16, DiscoveryRange), String> {
    let set = |k: &str| {
        env(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let env_domain = match set("ROS_DOMAIN_ID") {
        Some(v) => Some(
            v.parse::<u16>()
                .map_err(|_| format!("ROS_DOMAIN_ID={v:?} is not a domain id (0..=232)"))?,
        ),
        None => None,
    };
    let domain_id = domain_arg.or(env_domain).unwrap_or(0);
    let env_localhost = match set("ROS_LOCALHOST_ONLY").as_deref() {
        None | Some("0") => false,
        Some("1") => true,
        Some(v) => return Err(format!("ROS_LOCALHOST_ONLY={v:?}: expected 1 or 0")),
    };
    let range = set("ROS_AUTOMATIC_DISCOVERY_RANGE");
    let from_range = match range.as_deref() {
        None | Some("SUBNET") | Some("SYSTEM_DEFAULT") => Some(DiscoveryRange::Subnet),
        Some("LOCALHOST") => Some(DiscoveryRange::Localhost),
        Some("OFF") => None,
        Some(v) => {
            return Err(format!(
                "ROS_AUTOMATIC_DISCOVERY_RANGE={v:?}: expected SUBNET, LOCALHOST, OFF or \
                 SYSTEM_DEFAULT"
            ))
        }
    };
    if localhost_only || env_localhost {
        return Ok((domain_id, DiscoveryRange::Localhost));
    }
    match from_range {
        Some(r) => Ok((domain_id, r)),
        None if !publish => Ok((domain_id, DiscoveryRange::Subnet)),
        None => Err(
            "ROS_AUTOMATIC_DISCOVERY_RANGE=OFF: discovery is off, so no subscriber could \
             receive what play publishes; use LOCALHOST (or --localhost-only) to stay on this \
             machine, or --dry-run / --no-publish --out to publish nothing"
                .into(),
        ),
    }
}

fn parse_dur(s: &str) -> Result<i64, String> {
    parse_duration_ns(s).map_err(|e| e.to_string())
}

fn parse_remap(s: &str) -> Result<(String, String), String> {
    match s.split_once(":=") {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err(format!("{s:?}: expected OLD:=NEW")),
    }
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    // The report must not replace the bag it is about: refused before anything plays.
    if let Some(p) = &a.report {
        let inputs = bagscope::io::Bag::open(&a.bag)?.input_paths();
        if let Some(hit) = bagscope::outfile::input_among(&[p.as_path()], &inputs) {
            eprintln!(
                "bagscope: error: --report {} is part of the input bag: refusing to overwrite it",
                render::terminal_text(&hit.display().to_string())
            );
            return Ok(2);
        }
        // Nor a device, a FIFO or a folder (`--out` is checked by its writer).
        bagscope::outfile::check_output_file(p)
            .map_err(|e| anyhow::anyhow!("cannot write --report {}: {e}", p.display()))?;
    }
    // Malformed content is a usage error (2); an unreadable file is an error (1).
    let qos_overrides = match &a.qos_overrides {
        Some(p) => QosOverrides::read(p)?,
        None => QosOverrides::default(),
    };
    let publish = !a.no_publish && !a.dry_run;
    let env = |k: &str| std::env::var(k).ok();
    let (domain_id, discovery_range) =
        match dds_settings(a.domain_id, a.localhost_only, publish, env) {
            Ok(s) => s,
            Err(m) => {
                eprintln!("bagscope: error: {m}");
                return Ok(2);
            }
        };
    let o = PlayOptions {
        topics: a.topics,
        exclude_topics: a.exclude_topics,
        remap: a.remap,
        rate: a.rate,
        start_offset_ns: a.start_offset,
        duration_ns: a.duration,
        delay_ns: a.delay,
        loop_playback: a.loop_playback,
        clock_hz: a.clock.or(a.clock_if_missing),
        clock_if_missing: a.clock_if_missing.is_some(),
        order: match a.order {
            OrderArg::Log => Order::Log,
            OrderArg::Publish => Order::Publish,
            OrderArg::Stamp => Order::Stamp,
        },
        start_paused: a.start_paused,
        follow_clock: a.follow_clock,
        restamp: match a.restamp {
            RestampArg::Keep => Restamp::Keep,
            RestampArg::Now => Restamp::Now,
        },
        out: a.out,
        publish,
        dry_run: a.dry_run,
        domain_id,
        discovery_range,
        qos_overrides,
        wait_for_subscribers_ns: a.wait_for_subscribers,
        wire_capture: !a.no_wire_capture,
        schedule_early: !a.no_early,
        ..PlayOptions::default()
    };
    let ctl = Control::new(o.start_paused);
    crate::interrupt::on_interrupt({
        let ctl = ctl.clone();
        move || ctl.stop()
    });
    if let Some(out) = &o.out {
        let partial = bagscope_replay::partial_path(out);
        crate::interrupt::before_forced_exit(move || {
            let _ = std::fs::remove_file(&partial);
        });
    }
    let interactive = (o.publish || o.dry_run)
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    let keys = interactive.then(|| crate::keys::spawn(ctl.clone()));
    let bar = ((o.publish || o.dry_run) && std::io::stderr().is_terminal())
        .then(|| progress(ctl.clone(), o.publish && !o.dry_run));

    let res = play(&a.bag, &o, &ctl);
    ctl.stop(); // ends the keyboard and progress threads
    if let Some(k) = keys {
        k.finish();
    }
    if let Some(b) = bar {
        let _ = b.join();
    }
    let r = res?;
    if let Some(p) = &a.report {
        let mut bytes = serde_json::to_vec_pretty(&r)?;
        bytes.push(b'\n');
        std::fs::write(p, bytes)
            .map_err(|e| anyhow::anyhow!("writing the report: {e}: {}", p.display()))?;
    }
    if a.json {
        render::json(&r)?;
    } else {
        render::print(&text(&r))?;
    }
    Ok(render::exit_code(&r))
}

/// A bar on stderr: bag time played of the selected span, messages published (or, in a dry
/// run, that would be).
fn progress(ctl: Arc<Control>, publishing: bool) -> std::thread::JoinHandle<()> {
    let verb = if publishing {
        "published"
    } else {
        "would be published"
    };
    std::thread::spawn(move || {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(st) = indicatif::ProgressStyle::with_template("{spinner} {bar:30} {msg}") {
            bar.set_style(st);
        }
        while !ctl.stopped() {
            let (done, total) = ctl.progress_ns();
            if total > 0 {
                bar.set_length(total);
                bar.set_position(done.min(total));
            }
            let state = if ctl.paused() {
                "  [paused: space resumes, s steps, q stops]"
            } else {
                ""
            };
            bar.set_message(format!(
                "{:.1}/{:.1} s  {} {verb}{state}",
                done as f64 / 1e9,
                total as f64 / 1e9,
                ctl.published()
            ));
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        bar.finish_and_clear();
    })
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn text(r: &PlayReport) -> String {
    let mut s = format!(
        "played {} ({} mode, rate {}, schedule by {:?} time{}){}\n",
        r.bag,
        r.mode,
        r.rate,
        r.order,
        r.domain_id
            .map(|d| format!(
                ", DDS domain {d}{}",
                if r.discovery_range == Some(DiscoveryRange::Localhost) {
                    ", localhost only"
                } else {
                    ""
                }
            ))
            .unwrap_or_default(),
        if r.interrupted {
            " — interrupted"
        } else {
            ""
        }
    );
    let sent = matches!(r.mode, "realtime" | "follow_clock");
    s.push_str(&format!(
        "{} message(s) {}, {} failed, {} pass(es), {:.3} s\n",
        r.published,
        if sent {
            "published"
        } else {
            "would be published (nothing sent)"
        },
        r.failed,
        r.loops_played,
        r.wall_duration_ns as f64 / 1e9
    ));
    let mut rows = vec![vec![
        "topic".to_string(),
        "published_as".into(),
        "qos".into(),
        if sent { "published" } else { "would_publish" }.into(),
        "failed".into(),
        "err_p50_ms".into(),
        "err_p99_ms".into(),
        "err_max_ms".into(),
        "wire_p50_ms".into(),
        "wire_p99_ms".into(),
        "wire_max_ms".into(),
    ]];
    for t in &r.topics {
        let e = t.timing_error;
        let w = t.wire_timing_error;
        rows.push(vec![
            t.topic.clone(),
            t.published_as.clone(),
            format!(
                "{:?}/{:?}/{} ({})",
                t.qos.reliability,
                t.qos.durability,
                match t.qos.history {
                    bagscope_replay::qos::History::KeepLast(d) => format!("last {d}"),
                    bagscope_replay::qos::History::KeepAll => "all".into(),
                },
                t.qos.source
            ),
            t.published.to_string(),
            t.failed.to_string(),
            e.map_or("-".into(), |e| ms(e.p50)),
            e.map_or("-".into(), |e| ms(e.p99)),
            e.map_or("-".into(), |e| ms(e.max)),
            w.map_or("-".into(), |w| ms(w.p50)),
            w.map_or("-".into(), |w| ms(w.p99)),
            w.map_or("-".into(), |w| ms(w.max)),
        ]);
    }
    s.push_str(&render::table(&rows));
    if let Some(e) = r.timing_error {
        s.push_str(&format!(
            "timing error (hand-off to DDS − target), all topics: p50 {} ms, p99 {} ms, max {} ms over {} messages\n",
            ms(e.p50),
            ms(e.p99),
            ms(e.max),
            e.count
        ));
    }
    if let (Some(e), Some(n)) = (r.timing_error_without_steal, r.late_by_steal) {
        if n > 0 {
            s.push_str(&format!(
                "{n} message(s) made late by host steal (the hypervisor kept the player off its \
                 CPU): without that time the error is p50 {} ms, p99 {} ms, max {} ms\n",
                ms(e.p50),
                ms(e.p99),
                ms(e.max)
            ));
        }
    }
    if r.wire.measured {
        match (r.wire_timing_error, r.handoff_to_wire) {
            (Some(w), Some(h)) => s.push_str(&format!(
                "wire timing error (left the host − target): p50 {} ms, p99 {} ms, max {} ms over \
                 {} messages; hand-off to wire p50 {} ms, p99 {} ms, max {} ms\n",
                ms(w.p50),
                ms(w.p99),
                ms(w.max),
                w.count,
                ms(h.p50),
                ms(h.p99),
                ms(h.max)
            )),
            _ => s.push_str("wire: no message was seen leaving\n"),
        }
        if r.wire.not_seen > 0 {
            s.push_str(&format!(
                "wire: {} message(s) not seen leaving (no subscriber to send to, or lost by the \
                 capture)\n",
                r.wire.not_seen
            ));
        }
        if r.wire.capture_dropped > 0 {
            s.push_str(&format!(
                "wire: the kernel dropped {} packet(s) from the capture\n",
                r.wire.capture_dropped
            ));
        }
    } else if r.mode == "realtime" || r.mode == "follow_clock" {
        s.push_str(&format!("wire: {}\n", r.wire.note));
    }
    if let Some(by) = r.scheduled_early_by_ns {
        s.push_str(&format!(
            "{} message(s) handed off early, by {} ms (median): the hand-off-to-wire delay \
             was steady\n",
            r.scheduled_early,
            ms(by)
        ));
    }
    if let Some(c) = &r.clock {
        s.push_str(&format!(
            "{}: {} message(s) at {} Hz\n",
            c.topic, c.published, c.hz
        ));
    }
    if let Some(o) = &r.out {
        s.push_str(&format!("wrote {o}\n"));
    }
    if !r.warnings.is_empty() {
        s.push('\n');
        s.push_str(&render::warnings(&r.warnings));
    }
    s
}
