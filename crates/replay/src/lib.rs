//! `bagscope play`: publishes a bag onto a live ROS 2 graph through a pure-Rust DDS stack
//! (RustDDS), each recorded CDR payload unchanged, and proves its own timing.
//!
//! Scheduling: every message's target is computed from one origin on the monotonic clock,
//! `origin + delay + (t − t_begin) / rate`, never by summing sleeps, so error does not build
//! up; reading and decompression run ahead on another thread ([`source`]); the wait sleeps
//! coarsely and yields through the last 3 ms. With `--follow-clock` the target is
//! a time on an external clock topic (a simulator's `/clock`) and playback waits while that
//! clock stands still. The error of each publish against its target is measured and reported,
//! with the share the machine took (hypervisor steal, [`steal`]) reported apart: at the
//! hand-off to the DDS writer (`timing_error`) and, where the player may capture its own
//! packets, when the message left the host (`wire_timing_error`, [`wire`]); where that
//! hand-off-to-wire delay is steady, messages are handed off earlier by it.
//!
//! This crate is the only DDS user of the workspace.
//!
//! # In the workspace
//!
//! `play`: publishes a bag on a live ROS 2 graph (ROS 2 topic/type naming, recorded CDR sent
//! unchanged, QoS from `offered_qos_profiles` adapted as rosbag2 does, rosbag2 override YAML);
//! read-ahead thread with a byte-bounded queue and a reorder window; schedule on one monotonic
//! origin (`origin + delay + (t − t_begin)/rate`, pauses shift the origin; checked i64
//! arithmetic: a `--delay` / `--rate` whose schedule leaves i64 ns since the epoch is a usage
//! error, up front where the selected span is known, else at the first message past it), or on
//! a followed `/clock`; `/clock` publisher; restamping; retimed MCAP out (through
//! `bagscope-bag`'s writer); per-publish timing error at the hand-off to DDS, with the share
//! host steal took measured apart (`steal`); when each message left the host (`wire`: its own
//! outgoing RTPS DATA captured on an `AF_PACKET` socket with kernel timestamps, matched by
//! writer GUID and sequence number; needs CAP_NET_RAW, else reported as not measured), and
//! hand-off early by that delay where it is steady.
//!
//! Notable dependencies: `rustdds` (only crate allowed to use it), `bagscope-bag`,
//! `bagscope-msg`, `bagscope-stats`, `serde_yaml_ng` (QoS YAML), `bytes`, `libc` (thread CPU
//! time for the steal measurement; the packet socket).

pub mod dds;
mod out;
mod pace;
pub mod qos;
pub mod source;
pub mod steal;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, BagError, Warning};
use bagscope_msg::{schema_for_channel, StampLocator, StampSource};
use bagscope_stats::NsSummary;
use serde::Serialize;

pub use out::partial_path;
use pace::unix_now_ns;
pub use pace::{ExternalClock, Timebase};
pub use qos::{QosOverrides, TopicQos};

/// Why `play` could not start or went wrong; each says what to fix or what failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The bag could not be opened or read, or a topic named in the options is not in it.
    #[error(transparent)]
    Bag(#[from] BagError),
    /// The options contradict each other or are out of range; the message names the option.
    #[error("{0}")]
    Usage(String),
    /// The DDS stack failed (creating the participant, a writer, the clock reader).
    #[error("DDS: {0}")]
    Dds(String),
    /// A file could not be read (the QoS override YAML).
    #[error("{what}: {source}: {path}")]
    Io {
        /// What was being read.
        what: String,
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Writing `--out` failed.
    #[error("{0}")]
    Out(String),
}

/// Which of a message's times sets its place in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Recorder receive time (MCAP log time): the intervals the recorder saw.
    #[default]
    Log,
    /// Publisher's send time, where the bag has it.
    Publish,
    /// `header.stamp` (producer clock), where the type has one.
    Stamp,
}

/// `--restamp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Restamp {
    /// Payloads are sent exactly as recorded.
    #[default]
    Keep,
    /// `header.stamp` := the time receivers see at publish (bag time with `--clock`, the
    /// followed clock with `--follow-clock`, else system time).
    Now,
}

/// How `play` plays ([`Default`]: every topic, once, at rate 1, publishing on domain 0).
#[derive(Debug, Clone)]
pub struct PlayOptions {
    /// Topics to play (empty: all).
    pub topics: Vec<String>,
    /// Topics not to play, even when listed in `topics`.
    pub exclude_topics: Vec<String>,
    /// `OLD → NEW` topic renames.
    pub remap: Vec<(String, String)>,
    /// Playback speed: 2.0 plays twice as fast (positive; default 1.0).
    pub rate: f64,
    /// Skip this much bag time after the first message (by the `order` key) before playing;
    /// default 0.
    pub start_offset_ns: i64,
    /// Play at most this much bag time after the start (per pass when looping); None: to the
    /// end.
    pub duration_ns: Option<i64>,
    /// Wait before the first message (after subscribers are found, if waited for).
    pub delay_ns: i64,
    /// Play again from the start after the end, until stopped (default false).
    pub loop_playback: bool,
    /// Publish `/clock` at this rate with bag time.
    pub clock_hz: Option<f64>,
    /// With `clock_hz`: publish the generated `/clock` only when the bag's own `/clock` is not
    /// among the topics played (`--clock-if-missing`; default false: the bag's own is an error).
    pub clock_if_missing: bool,
    /// Which of each message's times schedules it (default: log time).
    pub order: Order,
    /// Start paused: nothing is published until [`Control::toggle_pause`] or
    /// [`Control::step`].
    pub start_paused: bool,
    /// Pace by this clock topic instead of the monotonic clock.
    pub follow_clock: Option<String>,
    /// Whether `header.stamp` is rewritten at publish (default: kept).
    pub restamp: Restamp,
    /// Write what is played into this MCAP, log time = scheduled time.
    pub out: Option<PathBuf>,
    /// Publish on DDS (false: only `out`, computed without waiting, unless `dry_run`).
    pub publish: bool,
    /// Pace in real time without publishing (a null sink): measures this machine's scheduling.
    pub dry_run: bool,
    /// The ROS 2 domain (`ROS_DOMAIN_ID`) published on (default 0).
    pub domain_id: u16,
    /// How far DDS discovery and traffic reach.
    pub discovery_range: dds::DiscoveryRange,
    /// Per-topic QoS replacing the recorded profiles (rosbag2's override YAML); topics it
    /// names must be in the bag.
    pub qos_overrides: QosOverrides,
    /// Before playing, wait up to this long until every topic has a matched subscriber.
    pub wait_for_subscribers_ns: Option<i64>,
    /// At the end, wait up to this long for reliable subscribers to acknowledge everything.
    pub ack_timeout_ns: i64,
    /// How far out of schedule order the read-ahead still puts messages back in order
    /// (default 0.5 s); messages later than that are played late and counted as
    /// `out_of_order`.
    pub reorder_window_ns: i64,
    /// Read-ahead budget.
    pub queue_bytes: usize,
    /// Capture the player's own outgoing packets to measure when each message left (needs
    /// CAP_NET_RAW; without it the report says the wire was not measured).
    pub wire_capture: bool,
    /// Where the measured hand-off-to-wire delay is steady, hand messages off earlier by it.
    pub schedule_early: bool,
}

impl Default for PlayOptions {
    fn default() -> Self {
        PlayOptions {
            topics: Vec::new(),
            exclude_topics: Vec::new(),
            remap: Vec::new(),
            rate: 1.0,
            start_offset_ns: 0,
            duration_ns: None,
            delay_ns: 0,
            loop_playback: false,
            clock_hz: None,
            clock_if_missing: false,
            order: Order::Log,
            start_paused: false,
            follow_clock: None,
            restamp: Restamp::Keep,
            out: None,
            publish: true,
            dry_run: false,
            domain_id: 0,
            discovery_range: dds::DiscoveryRange::Subnet,
            qos_overrides: QosOverrides::default(),
            wait_for_subscribers_ns: None,
            ack_timeout_ns: 2_000_000_000,
            reorder_window_ns: 500_000_000,
            queue_bytes: 64 << 20,
            wire_capture: true,
            schedule_early: true,
        }
    }
}

/// Shared between the player and whoever drives it (signal handler, keyboard, progress bar).
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    paused: AtomicBool,
    steps: AtomicU64,
    published: AtomicU64,
    /// Bag-relative progress of the last publish, ns (for a progress bar).
    progress_ns: AtomicU64,
    span_ns: AtomicU64,
}

impl Control {
    /// A control for one playback, paused from the start when `start_paused`.
    pub fn new(start_paused: bool) -> Arc<Control> {
        let c = Control::default();
        c.paused.store(start_paused, Ordering::SeqCst);
        Arc::new(c)
    }
    /// Ends playback cleanly (what Ctrl-C does).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
    /// Whether [`Control::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
    /// Pauses or resumes playback; true when it is now paused. Time spent paused shifts the
    /// schedule instead of making messages late.
    pub fn toggle_pause(&self) -> bool {
        !self.paused.fetch_xor(true, Ordering::SeqCst)
    }
    /// Whether playback is paused.
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }
    /// While paused: publish the next message now.
    pub fn step(&self) {
        self.steps.fetch_add(1, Ordering::SeqCst);
    }
    fn take_step(&self) -> bool {
        self.steps
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
    /// Messages published so far, all topics.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }
    /// (played, total) of the selected window's span, ns; total 0 when unknown.
    pub fn progress_ns(&self) -> (u64, u64) {
        (
            self.progress_ns.load(Ordering::Relaxed),
            self.span_ns.load(Ordering::Relaxed),
        )
    }
}

/// One topic as played (`topics` in `play --json`, sorted by name).
#[derive(Debug, Clone, Serialize)]
pub struct PlayedTopic {
    /// The topic's name in the bag.
    pub topic: String,
    /// Name it was published under (after `--remap`).
    pub published_as: String,
    /// The message type as recorded; `type` in JSON.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The QoS it was published with (recorded profiles adapted as rosbag2 does, or the
    /// override).
    pub qos: TopicQos,
    /// Messages played: sent over DDS, or when nothing is published (dry run, offline) paced
    /// or written to `--out`.
    pub published: u64,
    /// Messages that could not be sent (see warnings).
    pub failed: u64,
    /// Messages whose `header.stamp` was rewritten (`--restamp now`).
    pub restamped: u64,
    /// Publish time minus target time, ns (absent offline).
    pub timing_error: Option<NsSummary>,
    /// `timing_error` less the time the machine kept the player off its CPU (see
    /// [`PlayReport::timing_error_without_steal`]).
    pub timing_error_without_steal: Option<NsSummary>,
    /// Messages made at least 0.1 ms late by steal (absent with the summary above).
    pub late_by_steal: Option<u64>,
    /// When each message left the host minus when it was handed to DDS, ns (messages seen
    /// leaving; absent when the wire was not measured, see [`PlayReport::wire`]).
    pub handoff_to_wire: Option<NsSummary>,
    /// When each message left the host minus its target, ns: `timing_error` plus
    /// `handoff_to_wire`, message by message.
    pub wire_timing_error: Option<NsSummary>,
    /// Messages handed off early by the steady hand-off-to-wire delay.
    pub scheduled_early: u64,
    /// Median of the early shifts applied, ns (absent when none was).
    pub scheduled_early_by_ns: Option<i64>,
    /// Readers matched at the end (DDS only).
    pub matched_subscribers: Option<usize>,
}

/// Whether, and how completely, the wire was measured.
#[derive(Debug, Clone, Serialize)]
pub struct WireReport {
    /// Outgoing packets were captured.
    pub measured: bool,
    /// How, or why not: `not measured (needs CAP_NET_RAW ...)`, `not measured (nothing was
    /// sent over DDS)`, ...
    pub note: String,
    /// Messages seen leaving, and handed off but not seen leaving (no subscriber to send to,
    /// or lost by the capture).
    pub seen: u64,
    /// Messages handed off but not seen leaving.
    pub not_seen: u64,
    /// Packets the kernel dropped from the capture's queue.
    pub capture_dropped: u64,
}

/// The `/clock` the player published (`--clock`).
#[derive(Debug, Clone, Serialize)]
pub struct ClockReport {
    /// The topic (`/clock`).
    pub topic: String,
    /// The rate asked for.
    pub hz: f64,
    /// Clock messages published.
    pub published: u64,
}

/// `bagscope play`: what was played and how well it kept time (the CLI's `play --json`).
#[derive(Debug, Clone, Serialize)]
pub struct PlayReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// `realtime` (monotonic clock), `follow_clock`, `dry_run` (paced, published nowhere), or
    /// `offline` (`--out` only, no waiting).
    pub mode: &'static str,
    /// The playback speed.
    pub rate: f64,
    /// Which time scheduled the messages.
    pub order: Order,
    /// Whether stamps were rewritten.
    pub restamp: Restamp,
    /// The ROS 2 domain published on (absent when nothing was published).
    pub domain_id: Option<u16>,
    /// Where DDS discovery and traffic went (absent when nothing was published).
    pub discovery_range: Option<dds::DiscoveryRange>,
    /// The clock topic followed, if any.
    pub follow_clock: Option<String>,
    /// Wall time when playback started (the schedule's origin before any pause), ns since the
    /// Unix epoch.
    pub started_unix_ns: i64,
    /// How long playback took on the monotonic clock: from just before the first message was
    /// read until the report was made (the end-of-playback waits for acknowledgements and
    /// packets included; discovery before it not).
    pub wall_duration_ns: i64,
    /// Bag time of the first scheduled message (the schedule's zero), ns.
    pub begin_ns: Option<i64>,
    /// Passes started (1 without `--loop`; 0 when nothing was played).
    pub loops_played: u32,
    /// Stopped by Ctrl-C / a closed output before the end.
    pub interrupted: bool,
    /// Messages published, all topics.
    pub published: u64,
    /// Messages that could not be sent, all topics (exit code 3).
    pub failed: u64,
    /// Over all topics: publish time (the hand-off to the DDS writer) minus target time, ns.
    /// `--out` writes exactly these instants: its publish time minus its log time is this
    /// error, message by message (except with `--follow-clock`, whose log times are on the
    /// followed clock).
    pub timing_error: Option<NsSummary>,
    /// Over all topics: each publish's error less the part of it during which the player's
    /// thread, spinning for its target and never switched out, was kept off its CPU by the
    /// machine (hypervisor steal; see [`steal`]). That part is the host's, not the player's; a
    /// sleep that overshoots the target, a lock or a yield to another thread counts fully as
    /// the player's. Absent offline, when following a clock, and off Linux; equal to
    /// `timing_error` where the kernel does not keep steal out of a thread's CPU time.
    pub timing_error_without_steal: Option<NsSummary>,
    /// Over all topics: messages made at least 0.1 ms late by steal (absent with the summary
    /// above).
    pub late_by_steal: Option<u64>,
    /// Whether the wire was measured (see [`wire`]).
    pub wire: WireReport,
    /// Over all topics: when each message left the host minus its hand-off, ns.
    pub handoff_to_wire: Option<NsSummary>,
    /// Over all topics: when each message left the host minus its target, ns.
    pub wire_timing_error: Option<NsSummary>,
    /// Over all topics: messages handed off early by the steady hand-off-to-wire delay (see
    /// [`wire::steady_shift`]), and the median shift.
    pub scheduled_early: u64,
    /// The median early shift, ns (absent when none was applied).
    pub scheduled_early_by_ns: Option<i64>,
    /// Every topic played, sorted by name.
    pub topics: Vec<PlayedTopic>,
    /// The `/clock` published with `--clock`; absent otherwise.
    pub clock: Option<ClockReport>,
    /// The MCAP file written with `--out`; absent otherwise.
    pub out: Option<String>,
    /// Messages more than the reorder window out of schedule order (played late).
    pub out_of_order: u64,
    /// Bag damage, QoS that could not be read or was mixed, stamps not rewritten, schedule
    /// keys missing (log time used), no subscriber, unacknowledged messages, a followed clock
    /// that went back, payloads with unsupported encapsulation.
    pub warnings: Vec<Warning>,
}

impl bagscope_types::CommandReport for PlayReport {
    fn warnings(&self) -> Vec<&Warning> {
        self.warnings.iter().collect()
    }

    /// Something was not played as recorded: a message lost or failed to publish.
    fn data_loss(&self) -> bool {
        self.failed > 0 || self.warnings.iter().any(|w| w.data_loss)
    }

    /// Also when playing was stopped by Ctrl-C.
    fn finished_with_warnings(&self) -> bool {
        self.data_loss() || self.interrupted
    }
}

/// After `--wait-for-subscribers` has seen every topic matched: how long the subscribers get to
/// match us in turn before the first message.
const DISCOVERY_SETTLE: Duration = Duration::from_millis(500);

/// How long the player stays on the graph after the last message was acknowledged.
const LINGER: Duration = Duration::from_millis(300);

/// At the end, how long the capture may wait for messages still on their way out (it stops
/// as soon as none is).
const WIRE_DRAIN: Duration = Duration::from_secs(1);

/// Per-topic playback plan.
struct Plan {
    topic: usize,
    name: String,
    published_as: String,
    type_name: String,
    qos: TopicQos,
    /// Byte offset of `header.stamp.sec` for `--restamp now`.
    stamp_offset: Option<usize>,
}

fn select_topics(bag: &Bag, o: &PlayOptions) -> Result<Vec<bool>, ReplayError> {
    let wanted = bagscope_bag::TopicFilter {
        topics: o.topics.clone(),
        exclude_topics: o.exclude_topics.clone(),
        ..Default::default()
    }
    .wanted(bag)?;
    for (old, _) in &o.remap {
        bag.topic_index(old)?;
    }
    for t in o.qos_overrides.topics() {
        bag.topic_index(t)?;
    }
    Ok(wanted)
}

/// A fully qualified ROS 2 topic name (what `--remap` may publish under): `/` then tokens of
/// letters, digits and `_`, not starting with a digit, separated by single `/`.
fn valid_topic_name(n: &str) -> bool {
    let Some(rest) = n.strip_prefix('/') else {
        return false;
    };
    !rest.is_empty()
        && rest.split('/').all(|tok| {
            !tok.is_empty()
                && !tok.starts_with(|c: char| c.is_ascii_digit())
                && !tok.contains("__")
                && tok.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn check_options(o: &PlayOptions) -> Result<(), ReplayError> {
    let u = |m: String| Err(ReplayError::Usage(m));
    for (old, new) in &o.remap {
        if !valid_topic_name(new) {
            return u(format!(
                "--remap {old}:={new}: {new:?} is not a ROS 2 topic name (/ then letters, digits, _)"
            ));
        }
    }
    if !(o.rate.is_finite() && o.rate > 0.0) {
        return u(format!("--rate {}: must be a positive number", o.rate));
    }
    if o.start_offset_ns < 0 || o.delay_ns < 0 || o.duration_ns.is_some_and(|d| d < 0) {
        return u("--start-offset, --delay and --duration must not be negative".into());
    }
    if let Some(hz) = o.clock_hz {
        if !(hz.is_finite() && hz > 0.0 && hz <= 10_000.0) {
            return u(format!("--clock {hz}: rate must be in (0, 10000] Hz"));
        }
    }
    if o.dry_run && o.publish {
        return u("--dry-run publishes nothing: it cannot be combined with publishing".into());
    }
    if !o.publish && !o.dry_run && o.out.is_none() {
        return u("nothing to do: not publishing and no --out".into());
    }
    if !o.publish && (o.follow_clock.is_some() || o.clock_hz.is_some()) {
        return u("--follow-clock and --clock need publishing (drop --no-publish)".into());
    }
    if !o.publish && !o.dry_run && o.loop_playback {
        // Offline, passes follow each other without waiting and --duration bounds each pass,
        // not the whole: the output would grow until the disk is full.
        return u("--loop without publishing would write forever".into());
    }
    if let Some(c) = &o.follow_clock {
        if !valid_topic_name(c) {
            return u(format!("--follow-clock {c:?} is not a ROS 2 topic name"));
        }
    }
    if o.follow_clock.is_some() && o.clock_hz.is_some() {
        return u(
            "--follow-clock and --clock together: the followed clock already sets time".into(),
        );
    }
    Ok(())
}

/// Plays `bag_path` as `o` says until the end, `ctl.stop()`, or an error.
pub fn play(bag_path: &Path, o: &PlayOptions, ctl: &Control) -> Result<PlayReport, ReplayError> {
    check_options(o)?;
    let bag = Bag::open(bag_path)?;
    let wanted = select_topics(&bag, o)?;
    let mut warnings = bag.open_warnings();
    let remapped = |n: &str| remapped_name(o, n);
    let clock_topic = "/clock";
    let own_clock_played = bag
        .topics
        .iter()
        .enumerate()
        .any(|(i, t)| wanted[i] && remapped(&t.name) == clock_topic);
    // --clock-if-missing: the bag's own /clock is played when it has one, else one is made.
    let with_clock;
    let o = if o.clock_if_missing && own_clock_played && o.clock_hz.is_some() {
        with_clock = PlayOptions {
            clock_hz: None,
            ..o.clone()
        };
        &with_clock
    } else {
        o
    };
    refuse_own_clock(&bag, o, &wanted, clock_topic)?;

    let (plans, locators) = plan_topics(&bag, &wanted, o, &mut warnings);
    refuse_plans(o, &plans, bag_path)?;
    if o.order == Order::Publish && !bag.has_publish_time() {
        warnings.push(Warning::new(
            WarningCode::ScheduleFallback,
            "this bag records no publish time: scheduled by log time",
        ));
    }

    // The schedule must stay within i64 nanoseconds: refused before anything is written.
    let log_span = if o.order == Order::Log {
        selected_log_span(&bag, &wanted, o)
    } else {
        None
    };
    check_schedule_range(o, unix_now_ns(), log_span)?;

    // Outputs first, so that setup errors come before any waiting.
    let Outputs {
        mut sinks,
        node,
        mut writers,
        capture,
        mut wire_note,
    } = open_outputs(o, &bag, &plans)?;
    let external = match (&node, &o.follow_clock) {
        (Some(n), Some(topic)) => Some(pace::ExternalClock::follow(n.clone(), topic, ctl)?),
        _ => None,
    };

    let clock_writer = match (&node, o.clock_hz) {
        (Some(n), Some(_)) => Some(pace::clock_writer(n, clock_topic)?),
        _ => None,
    };

    wait_for_subscribers(o, &plans, &mut writers, ctl, &mut warnings);

    let topic_slot: Vec<Option<usize>> = {
        let mut v = vec![None; bag.topics.len()];
        for (k, p) in plans.iter().enumerate() {
            v[p.topic] = Some(k);
        }
        v
    };

    let read_plan = source::ReadPlan {
        wanted: wanted.clone(),
        order: o.order,
        locators,
        start_offset_ns: o.start_offset_ns,
        duration_ns: o.duration_ns,
        loops: o.loop_playback,
        reorder_window_ns: o.reorder_window_ns,
        reorder_max_bytes: o.queue_bytes / 2,
    };
    // Selected window's span for the progress bar: where it is known without reading the
    // messages (log order).
    if let Some(span) = log_span {
        ctl.span_ns.store(span as u64, Ordering::Relaxed);
    }
    let queue = source::Queue::new(o.queue_bytes);
    let reader_stop = AtomicBool::new(false);
    let mut state = PlayState::new(plans.len());
    let mut summary = source::ReadSummary::default();
    let mut clock_published = 0u64;
    let started = Instant::now();
    let mut timebase = Timebase::new(o.rate, o.delay_ns);

    std::thread::scope(|s| -> Result<(), ReplayError> {
        let q = &queue;
        let rs = &reader_stop;
        let bag = &bag;
        let rp = &read_plan;
        // The reader also stops on the user's stop, which it would otherwise only see once the
        // player returns (the player may be waiting for the reader's first message).
        s.spawn(move || source::read(bag, rp, q, &|| rs.load(Ordering::Relaxed) || ctl.stopped()));

        // The /clock publisher runs beside the player on the shared time base.
        let clock_thread = match (&node, o.clock_hz, clock_writer) {
            (Some(n), Some(hz), Some(w)) => {
                Some(pace::spawn_clock(s, n.clone(), w, hz, &timebase)?)
            }
            _ => None,
        };
        let res = run_player(
            o,
            ctl,
            &queue,
            &plans,
            &topic_slot,
            &mut writers,
            node.as_deref(),
            capture.as_ref(),
            external.as_ref(),
            &mut sinks,
            &mut state,
            &mut summary,
            &mut timebase,
        );
        // Release the reader (it may be blocked on a full queue) and the clock thread.
        reader_stop.store(true, Ordering::SeqCst);
        queue.close();
        if let Some(c) = clock_thread {
            clock_published = c.finish();
        }
        res
    })?;

    if let Some(e) = &external {
        warnings.extend(followed_clock_warning(e));
    }
    finish_publishing(o, &plans, &mut writers, ctl, &mut warnings);
    let wire_measured = capture.is_some();
    let (wire_topics, capture_dropped) = finish_capture(capture, &mut writers, &mut wire_note);
    let out_path = match sinks.mcap.take() {
        Some(m) => Some(m.finish()?),
        None => None,
    };

    warnings.append(&mut summary.warnings);
    warnings.extend(run_warnings(
        &bag,
        o,
        &summary.key_fallback,
        &state,
        &warnings,
    ));
    let interrupted = ctl.stopped();
    let played: u64 = state.published.iter().chain(&state.failed).sum();
    if played == 0 && !interrupted {
        warnings.push(
            Warning::new(
                WarningCode::NothingPlayed,
                "no message of the selected topics lies in the selected window (or the bag is empty)",
            )
            .loss(),
        );
    }
    warnings.sort();
    warnings.dedup();

    let steal_known = state.steal_measured && !state.errors.iter().all(Vec::is_empty);
    let (topics, all) = played_topics(&plans, &state, &wire_topics, &mut writers, steal_known);
    let median = |v: &[i64]| NsSummary::of(v).map(|s| s.p50);
    let Timings {
        errors: all_errors,
        own: all_own,
        handoff_to_wire: all_h2w,
        wire: all_wire,
        early: all_early,
    } = all;
    Ok(PlayReport {
        bag: bag_path.display().to_string(),
        mode: mode(o),
        rate: o.rate,
        order: o.order,
        restamp: o.restamp,
        domain_id: o.publish.then_some(o.domain_id),
        discovery_range: o.publish.then_some(o.discovery_range),
        follow_clock: o.follow_clock.clone(),
        started_unix_ns: timebase.started_unix_ns(),
        wall_duration_ns: started.elapsed().as_nanos() as i64,
        begin_ns: state.begin_ns,
        loops_played: state.loops,
        interrupted,
        published: state.published.iter().sum(),
        failed: state.failed.iter().sum(),
        timing_error: NsSummary::of(&all_errors),
        timing_error_without_steal: NsSummary::of(&all_own).filter(|_| steal_known),
        late_by_steal: steal_known.then(|| state.late_by_steal.iter().sum()),
        wire: WireReport {
            measured: wire_measured,
            note: wire_note,
            seen: all_h2w.len() as u64,
            not_seen: wire_topics.iter().map(|t| t.not_seen).sum(),
            capture_dropped,
        },
        handoff_to_wire: NsSummary::of(&all_h2w),
        wire_timing_error: NsSummary::of(&all_wire),
        scheduled_early: all_early.len() as u64,
        scheduled_early_by_ns: median(&all_early),
        topics,
        clock: o.clock_hz.filter(|_| o.publish).map(|hz| ClockReport {
            topic: clock_topic.to_string(),
            hz,
            published: clock_published,
        }),
        out: out_path.map(|p| p.display().to_string()),
        out_of_order: summary.out_of_order,
        warnings,
    })
}

/// Where a run writes: the retimed MCAP, the DDS node with one writer per topic, the capture
/// of its own packets (or why there is none).
struct Outputs {
    sinks: out::Sinks,
    node: Option<Arc<dds::Node>>,
    writers: Vec<dds::RawWriter>,
    capture: Option<wire::Capture>,
    wire_note: String,
}

/// Opens [`Outputs`] before anything is read or waited for, so that setup errors come first.
fn open_outputs(o: &PlayOptions, bag: &Bag, plans: &[Plan]) -> Result<Outputs, ReplayError> {
    let mut sinks = out::Sinks::default();
    if let Some(path) = &o.out {
        sinks.mcap = Some(out::McapOut::create(path, bag, &plans_meta(plans, bag))?);
    }
    let node = if o.publish {
        Some(Arc::new(dds::Node::with_range(
            o.domain_id,
            o.discovery_range,
        )?))
    } else {
        None
    };
    let mut writers = Vec::new();
    if let Some(n) = &node {
        for p in plans {
            writers.push(n.writer(&p.published_as, &p.type_name, &p.qos)?);
        }
    }
    let (capture, wire_note) = match &node {
        Some(n) if o.wire_capture => match wire::Capture::start(n.guid_prefix(), plans.len()) {
            Ok(c) => (
                Some(c),
                "measured: kernel timestamps of this player's outgoing RTPS DATA".to_string(),
            ),
            Err(why) => (None, why),
        },
        Some(_) => (None, "not measured (capture turned off)".to_string()),
        None => (None, "not measured (nothing was sent over DDS)".to_string()),
    };
    Ok(Outputs {
        sinks,
        node,
        writers,
        capture,
        wire_note,
    })
}

/// The capture's per-topic wire timings and the packets the kernel dropped (said in the
/// note), once the last packets had time to arrive.
fn finish_capture(
    capture: Option<wire::Capture>,
    writers: &mut [dds::RawWriter],
    wire_note: &mut String,
) -> (Vec<wire::TopicWire>, u64) {
    let any_matched = writers.iter_mut().any(|w| w.matched_subscriptions() > 0);
    let (wire_topics, capture_dropped) = match capture {
        Some(c) => {
            let (m, dropped) = c.finish(if any_matched {
                WIRE_DRAIN
            } else {
                Duration::ZERO
            });
            (m.topics, dropped)
        }
        None => (Vec::new(), 0),
    };
    if capture_dropped > 0 {
        wire_note.push_str(&format!(
            "; the kernel dropped {capture_dropped} packet(s) from the capture"
        ));
    }
    (wire_topics, capture_dropped)
}

/// The run's mode as reported: `dry_run`, `offline`, `follow_clock` or `realtime`.
fn mode(o: &PlayOptions) -> &'static str {
    if o.dry_run {
        "dry_run"
    } else if !o.publish {
        "offline"
    } else if o.follow_clock.is_some() {
        "follow_clock"
    } else {
        "realtime"
    }
}

/// `--clock` while the bag's own `/clock` is played: two publishers of one clock.
fn refuse_own_clock(
    bag: &Bag,
    o: &PlayOptions,
    wanted: &[bool],
    clock_topic: &str,
) -> Result<(), ReplayError> {
    let remapped = |n: &str| remapped_name(o, n);
    if o.clock_hz.is_some() && o.publish {
        if let Some(i) = bag
            .topics
            .iter()
            .position(|t| remapped(&t.name) == clock_topic)
        {
            if wanted[i] {
                return Err(ReplayError::Usage(format!(
                    "--clock: the bag's own {} is being played (exclude it with --exclude-topics {} or drop --clock)",
                    clock_topic, bag.topics[i].name
                )));
            }
        }
    }
    Ok(())
}

/// Nothing to play, or a topic played onto the clock playback follows.
fn refuse_plans(o: &PlayOptions, plans: &[Plan], bag_path: &Path) -> Result<(), ReplayError> {
    if let Some(c) = &o.follow_clock {
        if let Some(p) = plans.iter().find(|p| &p.published_as == c) {
            return Err(ReplayError::Usage(format!(
                "--follow-clock {c}: the bag's {} is being played onto it (playback would pace \
                 itself by its own output); exclude it with --exclude-topics {}",
                p.name, p.name
            )));
        }
    }
    if plans.is_empty() {
        return Err(ReplayError::Usage(format!(
            "no topic selected to play in {}",
            bag_path.display()
        )));
    }
    Ok(())
}

/// `--wait-for-subscribers`: until every writer has matched a subscriber (or the wait is
/// over: a `no_subscriber` warning), then a moment for discovery to settle on the other side.
fn wait_for_subscribers(
    o: &PlayOptions,
    plans: &[Plan],
    writers: &mut [dds::RawWriter],
    ctl: &Control,
    warnings: &mut Vec<Warning>,
) {
    if let (Some(wait), false) = (o.wait_for_subscribers_ns, writers.is_empty()) {
        let until = Instant::now() + Duration::from_nanos(wait.max(0) as u64);
        while writers.iter_mut().any(|w| w.matched_subscriptions() == 0) && !ctl.stopped() {
            if Instant::now() >= until {
                let missing: Vec<&str> = plans
                    .iter()
                    .zip(writers.iter_mut())
                    .filter_map(|(p, w)| (w.matched_subscriptions() == 0).then_some(p))
                    .map(|p| p.published_as.as_str())
                    .collect();
                // Messages sent before anyone listens are lost to the run being recorded.
                warnings.push(
                    Warning::new(
                        WarningCode::NoSubscriber,
                        format!(
                            "no subscriber matched within the wait for: {} (played anyway)",
                            missing.join(", ")
                        ),
                    )
                    .loss(),
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Discovery is asymmetric: our writer sees a reader before that reader has taken in our
        // writer, and a volatile reader drops what was sent in between (CycloneDDS lost the
        // first message so in the interop test). Give the other side a moment. (A guess: a
        // discovery message of ours that had to be resent can take longer.)
        let all_matched = writers.iter_mut().all(|w| w.matched_subscriptions() > 0);
        let settle = Instant::now() + DISCOVERY_SETTLE;
        while all_matched && Instant::now() < settle && !ctl.stopped() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `followed_clock_jumped_back` when the clock playback followed went back.
fn followed_clock_warning(e: &pace::ExternalClock) -> Option<Warning> {
    e.shutdown();
    let (_, back) = e.counts();
    (back > 0).then(|| {
        Warning::new(
            WarningCode::FollowedClockJumpedBack,
            format!(
                "{} went back {back} time(s) (a simulation reset?): playback went on from \
                 where it was, paced by the clock from there",
                e.topic
            ),
        )
    })
}

/// After the last message (not when stopped): reliable subscribers acknowledge everything
/// (`not_acknowledged` otherwise), and the player stays on the graph a moment.
fn finish_publishing(
    o: &PlayOptions,
    plans: &[Plan],
    writers: &mut [dds::RawWriter],
    ctl: &Control,
    warnings: &mut Vec<Warning>,
) {
    // Reliable subscribers get everything before we leave the graph.
    if !ctl.stopped() {
        for (p, w) in plans.iter().zip(writers.iter_mut()) {
            if p.qos.reliability == qos::Reliability::Reliable
                && w.matched_subscriptions() > 0
                && !w.wait_for_acks(Duration::from_nanos(o.ack_timeout_ns.max(0) as u64))
            {
                warnings.push(
                    Warning::new(
                        WarningCode::NotAcknowledged,
                        "reliable subscribers had not acknowledged every message when playback ended",
                    )
                    .topic(&p.published_as)
                    .loss(),
                );
            }
        }
        // Stay on the graph a moment after the last acknowledgement: a reliable RustDDS
        // reader drops samples it has received but not yet taken once their writer is gone
        // (its cache forgets the writer's in-order marker), so a player that left at once
        // would cost such a receiver its last messages.
        if writers.iter_mut().any(|w| w.matched_subscriptions() > 0) {
            std::thread::sleep(LINGER);
        }
    }
}

/// What the run itself found: topics scheduled by log time after all (`schedule_fallback`, once
/// per topic beside `earlier`), payloads not sent (not plain CDR) or sent with their
/// encapsulation options zeroed.
fn run_warnings(
    bag: &Bag,
    o: &PlayOptions,
    key_fallback: &[u64],
    state: &PlayState,
    earlier: &[Warning],
) -> Vec<Warning> {
    let mut out = Vec::new();
    for (i, n) in key_fallback.iter().enumerate() {
        if *n > 0 && o.order != Order::Log {
            let name = &bag.topics[i].name;
            if !earlier
                .iter()
                .any(|w| w.code == "schedule_fallback" && w.topic.as_deref() == Some(name))
            {
                out.push(
                    Warning::new(
                        WarningCode::ScheduleFallback,
                        match o.order {
                            Order::Stamp => format!(
                                "{n} message(s) without header.stamp (or with a zero one): \
                                 scheduled by log time, shifted onto the stamps' clock by the \
                                 latest stamped message's stamp − log time"
                            ),
                            _ => format!(
                                "{n} message(s) without a publish time: scheduled by log time"
                            ),
                        },
                    )
                    .topic(name),
                );
            }
        }
    }
    if state.bad_encapsulation > 0 {
        out.push(
            Warning::new(
                WarningCode::UnsupportedEncapsulation,
                format!(
                    "{} message(s) are not plain CDR (XCDR2 or other): not sent",
                    state.bad_encapsulation
                ),
            )
            .loss(),
        );
    }
    if state.options_dropped > 0 {
        out.push(Warning::new(
            WarningCode::EncapsulationOptions,
            format!(
                "{} message(s) had non-zero CDR encapsulation options; RTPS carries them as zero",
                state.options_dropped
            ),
        ));
    }
    out
}

/// A topic's name as published: `--remap OLD:=NEW` applied.
fn remapped_name(o: &PlayOptions, n: &str) -> String {
    o.remap
        .iter()
        .find(|(a, _)| a == n)
        .map(|(_, b)| b.clone())
        .unwrap_or_else(|| n.to_string())
}

/// What to publish for each selected topic (name as published, QoS offered: recorded, adapted,
/// overridden; where its header stamp sits for `--restamp`), and each topic's stamp locator;
/// warns where a topic cannot be scheduled or restamped as asked, or its recorded QoS is mixed
/// or unreadable.
fn plan_topics(
    bag: &Bag,
    wanted: &[bool],
    o: &PlayOptions,
    warnings: &mut Vec<Warning>,
) -> (Vec<Plan>, Vec<StampLocator>) {
    let remapped = |n: &str| remapped_name(o, n);
    let mut plans = Vec::new();
    let mut locators = vec![StampLocator::none(); bag.topics.len()];
    for (i, t) in bag.topics.iter().enumerate() {
        if !wanted[i] {
            continue;
        }
        let schema = schema_for_channel(&t.type_name, &t.schema_encoding, &t.schema_data);
        let loc = match &schema {
            Ok(s) => StampLocator::for_schema(s),
            Err(_) => StampLocator::none(),
        };
        let stamp_offset = (loc.source() == StampSource::HeaderStamp)
            .then(|| loc.fixed_offset())
            .flatten();
        if o.order == Order::Stamp && loc.source() == StampSource::None {
            warnings.push(
                Warning::new(
                    WarningCode::ScheduleFallback,
                    format!(
                        "{} has no header.stamp: scheduled by log time, shifted onto the \
                         stamps' clock by the latest stamped message's stamp − log time",
                        t.type_name
                    ),
                )
                .topic(&t.name),
            );
        }
        if o.restamp == Restamp::Now && stamp_offset.is_none() {
            warnings.push(
                Warning::new(
                    WarningCode::NotRestamped,
                    format!(
                        "{} has no header.stamp at a fixed place: sent with its recorded stamp",
                        t.type_name
                    ),
                )
                .topic(&t.name),
            );
        }
        let recorded = match qos::from_recorded(t.offered_qos_profiles.as_deref()) {
            Ok(offer) => {
                if let Some(m) = offer.mixed {
                    warnings.push(Warning::new(WarningCode::QosMixed, m).topic(&t.name));
                }
                offer.qos
            }
            Err(e) => {
                warnings.push(
                    Warning::new(
                        WarningCode::QosUnreadable,
                        format!(
                            "offered_qos_profiles unreadable ({e}): offering the ROS 2 default"
                        ),
                    )
                    .topic(&t.name),
                );
                TopicQos::default()
            }
        };
        locators[i] = loc;
        plans.push(Plan {
            topic: i,
            name: t.name.clone(),
            published_as: remapped(&t.name),
            type_name: t.type_name.clone(),
            qos: o.qos_overrides.apply(&t.name, recorded),
            stamp_offset,
        });
    }
    (plans, locators)
}

/// Every message's timings over all topics, for the report's overall summaries.
#[derive(Default)]
struct Timings {
    /// Publish instant − target, ns.
    errors: Vec<i64>,
    /// The same less host steal, ns.
    own: Vec<i64>,
    /// Hand-off to the DDS writer → first packet on the wire, ns.
    handoff_to_wire: Vec<i64>,
    /// Wire instant − target, ns.
    wire: Vec<i64>,
    /// How early each message was handed off, ns.
    early: Vec<i64>,
}

/// The per-topic part of the report, sorted by topic, and every message's timings.
fn played_topics(
    plans: &[Plan],
    state: &PlayState,
    wire_topics: &[wire::TopicWire],
    writers: &mut [dds::RawWriter],
    steal_known: bool,
) -> (Vec<PlayedTopic>, Timings) {
    let mut all = Timings::default();
    let median = |v: &[i64]| NsSummary::of(v).map(|s| s.p50);
    let mut topics = Vec::new();
    for (k, p) in plans.iter().enumerate() {
        let errs = &state.errors[k];
        all.errors.extend_from_slice(errs);
        all.own.extend_from_slice(&state.own_errors[k]);
        let tw = wire_topics.get(k);
        if let Some(t) = tw {
            all.handoff_to_wire.extend_from_slice(&t.handoff_to_wire);
            all.wire.extend_from_slice(&t.wire_error);
        }
        all.early.extend_from_slice(&state.early[k]);
        topics.push(PlayedTopic {
            topic: p.name.clone(),
            published_as: p.published_as.clone(),
            type_name: p.type_name.clone(),
            qos: p.qos.clone(),
            published: state.published[k],
            failed: state.failed[k],
            restamped: state.restamped[k],
            timing_error: NsSummary::of(errs),
            timing_error_without_steal: NsSummary::of(&state.own_errors[k]).filter(|_| steal_known),
            late_by_steal: (steal_known && !errs.is_empty()).then_some(state.late_by_steal[k]),
            handoff_to_wire: tw.and_then(|t| NsSummary::of(&t.handoff_to_wire)),
            wire_timing_error: tw.and_then(|t| NsSummary::of(&t.wire_error)),
            scheduled_early: state.early[k].len() as u64,
            scheduled_early_by_ns: median(&state.early[k]),
            matched_subscribers: writers.get_mut(k).map(|w| w.matched_subscriptions()),
        });
    }
    topics.sort_by(|a, b| a.topic.cmp(&b.topic));
    (topics, all)
}

fn plans_meta<'a>(plans: &'a [Plan], bag: &'a Bag) -> Vec<out::OutTopic<'a>> {
    plans
        .iter()
        .map(|p| out::OutTopic {
            topic: &bag.topics[p.topic],
            published_as: &p.published_as,
        })
        .collect()
}

struct PlayState {
    published: Vec<u64>,
    failed: Vec<u64>,
    restamped: Vec<u64>,
    errors: Vec<Vec<i64>>,
    /// Errors less steal; filled only while steal is measured for every message.
    own_errors: Vec<Vec<i64>>,
    late_by_steal: Vec<u64>,
    /// Per message handed off early: by how much, ns.
    early: Vec<Vec<i64>>,
    /// False once a paced message's steal could not be measured (following a clock, no
    /// per-thread CPU accounting): the without-steal figures are then not reported (offline
    /// there are none, as there is no timing error).
    steal_measured: bool,
    begin_ns: Option<i64>,
    loops: u32,
    bad_encapsulation: u64,
    options_dropped: u64,
}

impl PlayState {
    fn new(n: usize) -> Self {
        PlayState {
            published: vec![0; n],
            failed: vec![0; n],
            restamped: vec![0; n],
            errors: vec![Vec::new(); n],
            own_errors: vec![Vec::new(); n],
            late_by_steal: vec![0; n],
            early: vec![Vec::new(); n],
            steal_measured: true,
            begin_ns: None,
            loops: 0,
            bad_encapsulation: 0,
            options_dropped: 0,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_player(
    o: &PlayOptions,
    ctl: &Control,
    queue: &source::Queue,
    plans: &[Plan],
    slot: &[Option<usize>],
    writers: &mut [dds::RawWriter],
    node: Option<&dds::Node>,
    capture: Option<&wire::Capture>,
    external: Option<&ExternalClock>,
    sinks: &mut out::Sinks,
    st: &mut PlayState,
    summary: &mut source::ReadSummary,
    tb: &mut Timebase,
) -> Result<(), ReplayError> {
    let realtime = o.publish || o.dry_run;
    // Loop bookkeeping: each pass starts where the previous one's last message was.
    let mut loop_index = 0u32;
    let mut loop_base_ns = 0i64; // schedule offset of the current pass's start
    let mut pass_begin: Option<i64> = None;
    let mut last_offset_ns = 0i64;
    let mut buf: Vec<u8> = Vec::new();
    // Names this thread: the one that waits for every target.
    let mut probe = steal::StealProbe::this_thread();
    // The origin is set when the first message is in hand, so that the read-ahead's warm-up
    // (opening, first chunk) is not charged to the first publish.
    let mut started = false;
    while let Some(ev) = queue.pop() {
        // Offline nothing waits, so this is where Ctrl-C is seen.
        if ctl.stopped() {
            break;
        }
        let item = match ev {
            source::Event::Done(s) => {
                *summary = s;
                break;
            }
            source::Event::Message(m) => m,
        };
        let Some(k) = slot.get(item.topic).copied().flatten() else {
            continue;
        };
        if !started {
            started = true;
            match external {
                Some(ext) if realtime => {
                    if !ext.wait_first(ctl) {
                        break;
                    }
                    tb.start_external(ext.latest().map(|(t, _)| t).unwrap_or(0));
                }
                _ => tb.start_now(),
            }
            if o.start_paused {
                tb.pause();
            }
        }
        if item.loop_index != loop_index {
            loop_index = item.loop_index;
            loop_base_ns = last_offset_ns;
            pass_begin = None;
            // Bag time (what /clock says) starts again with each pass, as in ros2 bag play.
            tb.set_loop_base(loop_base_ns);
        }
        let begin = *pass_begin.get_or_insert(item.key_ns);
        tb.set_begin(*st.begin_ns.get_or_insert(item.key_ns));
        st.loops = loop_index + 1;
        let rel = item.key_ns.saturating_sub(begin);
        // Checked, not saturated: a message due past the i64 range stops playback with an
        // error naming --rate and --delay (the up-front check covers what is known before).
        let beyond = || beyond_range(o, item.key_ns);
        let offset_ns = schedule_offset(loop_base_ns, rel, o.rate).ok_or_else(beyond)?;
        if external.is_none() {
            // Before waiting for it (a followed clock's wait says so itself).
            tb.scheduled_unix_ns(offset_ns).ok_or_else(beyond)?;
        }
        // A late message (keyed before its pass's first) must not move the next pass back.
        last_offset_ns = last_offset_ns.max(offset_ns);

        // Hand off early by the topic's steady hand-off-to-wire delay, if any (not when
        // following a clock: its targets are clock arrivals, not instants to aim before).
        let early_ns = match capture {
            Some(c) if o.schedule_early && external.is_none() => c.shift_ns(k),
            _ => 0,
        };
        // Wait for the target (or compute it, offline).
        let (target, aimed, spun) = if realtime {
            let w = match external {
                Some(ext) => tb.wait_external(offset_ns, ctl, ext),
                None => tb.wait(offset_ns, early_ns, ctl, &mut probe),
            };
            match w {
                pace::Waited::Stopped => break,
                pace::Waited::OutOfRange => return Err(beyond()),
                pace::Waited::Ready { due, aimed, spun } => (Some(due), Some(aimed), spun),
            }
        } else {
            (None, None, None)
        };

        let mut data: &[u8] = &item.data;
        if o.restamp == Restamp::Now {
            if let Some(off) = plans[k].stamp_offset {
                let now_ns = match external {
                    Some(ext) => ext.latest_raw().unwrap_or(0),
                    None if o.clock_hz.is_some() => tb.bag_time_now(st.begin_ns.unwrap_or(0)),
                    None if realtime => unix_now_ns(),
                    None => tb.scheduled_unix_ns(offset_ns).ok_or_else(beyond)?,
                };
                buf.clear();
                buf.extend_from_slice(&item.data);
                let le = buf.get(1) == Some(&0x01);
                if write_stamp_ordered(&mut buf, off, now_ns, le) {
                    st.restamped[k] += 1;
                    data = &buf;
                }
            }
        }
        if data.len() >= 4 && (data[2] != 0 || data[3] != 0) {
            st.options_dropped += 1;
        }

        // The hand-off instant: sampled so that the whole overrun, up to the send, is in one
        // measured gap. Its wall time as the schedule maps it is the one publish time of the
        // message: the timing error (minus the scheduled time), `--out`'s publish time and
        // the DDS source timestamp. The wall clock read beside it is what the kernel stamps
        // the packets with: the hand-off-to-wire delay is measured against it.
        let sent = target.and_then(|_| probe.sample());
        let sent_at = sent.map_or_else(Instant::now, |s| s.at);
        let handoff_real_ns = unix_now_ns();
        let publish_unix_ns = match target {
            Some(_) => tb.unix_at(sent_at),
            None => tb.scheduled_unix_ns(offset_ns).ok_or_else(beyond)?,
        };
        let error_ns = target.map(|t| signed_ns(sent_at, t));
        let mut ok = true;
        let mut sample = None;
        if let (Some(n), Some(w)) = (node, writers.get_mut(k)) {
            match w.send_stamped(n.publisher(), data, publish_unix_ns) {
                Ok(id) => sample = Some(id),
                Err(dds::SendError::Encapsulation(_)) => {
                    st.bad_encapsulation += 1;
                    ok = false;
                }
                Err(dds::SendError::Write(_)) => ok = false,
            }
        }
        if let (Some(c), Some(id), Some(err)) = (capture, sample, error_ns) {
            c.handed_off(k, id, handoff_real_ns, err);
        }
        if let Some(m) = &mut sinks.mcap {
            // Log time: when the message was due (on the followed clock when following one);
            // publish time: the hand-off (the same offline).
            let log_ns = match (target, external) {
                (Some(_), Some(ext)) => ext.due_raw(tb, offset_ns),
                _ => tb.scheduled_unix_ns(offset_ns),
            }
            .ok_or_else(beyond)?;
            m.write(k, log_ns, publish_unix_ns, data)?;
        }
        if ok {
            st.published[k] += 1;
            ctl.published.fetch_add(1, Ordering::Relaxed);
        } else {
            st.failed[k] += 1;
        }
        if let (Some(err), Some(aimed)) = (error_ns, aimed) {
            st.errors[k].push(err);
            if let Some(t) = target {
                if aimed < t {
                    st.early[k].push(signed_ns(t, aimed));
                }
            }
            // Steal is known where the probe works and the wait spun up to the target (or
            // none: a sleep that overshoots is the player's margin, charged to it in full).
            // (Following a clock, lateness is against clock arrivals: not measured there.)
            let measured = probe.available() && external.is_none();
            let stolen_ns = measured.then(|| match (spun, sent) {
                (Some(a), Some(b)) => steal::stolen_between(&a, &b),
                _ => 0,
            });
            match stolen_ns {
                Some(s) => {
                    // The gap may have begun before the instant aimed at: only the overrun
                    // past it is late. The rest is the least error the samples allow the
                    // player to have had.
                    let late = signed_ns(sent_at, aimed).max(0);
                    let late_by_steal = (s as i64).min(late);
                    st.own_errors[k].push(err - late_by_steal);
                    if late_by_steal >= 100_000 {
                        st.late_by_steal[k] += 1;
                    }
                }
                None => st.steal_measured = false,
            }
        }
        ctl.progress_ns.store(rel.max(0) as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// The last time the schedule can reach: its times (the log and publish times `--out`
/// writes, DDS source timestamps) are i64 nanoseconds since the epoch.
pub const LAST_TIME: &str = "2262-04-11T23:47:16.854775807Z";

/// Schedule offset of a message `rel_ns` of bag time after its pass's first, in a pass that
/// starts at offset `base_ns`: `base + rel / rate`, or `None` when it leaves i64.
fn schedule_offset(base_ns: i64, rel_ns: i64, rate: f64) -> Option<i64> {
    let x = (rel_ns as f64 / rate).round();
    // i64::MAX as f64 is 2^63, itself out of range: strictly below it (NaN is not).
    if x.is_nan() || x.abs() >= i64::MAX as f64 {
        return None;
    }
    base_ns.checked_add(x as i64)
}

/// `--rate` and `--delay` as given, for messages naming them.
fn schedule_params(o: &PlayOptions) -> String {
    match (o.rate != 1.0, o.delay_ns != 0) {
        (true, true) => format!("--rate {} with --delay {}ns", o.rate, o.delay_ns),
        (false, true) => format!("--delay {}ns", o.delay_ns),
        _ => format!("--rate {}", o.rate),
    }
}

/// The usage error of a message (bag time `key_ns`) due past [`LAST_TIME`].
fn beyond_range(o: &PlayOptions, key_ns: i64) -> ReplayError {
    ReplayError::Usage(format!(
        "{}: the message at bag time {key_ns} ns would be due after {LAST_TIME}, the last time \
         i64 nanoseconds since the epoch hold; use a smaller --delay or a larger --rate",
        schedule_params(o)
    ))
}

/// Refuses, before anything is played or written, a `--delay` that puts the first message
/// past [`LAST_TIME`] from `now_unix_ns`, and a `--rate` that stretches `span_ns` of the bag
/// (the selected window, where it is known up front) past it.
fn check_schedule_range(
    o: &PlayOptions,
    now_unix_ns: i64,
    span_ns: Option<i64>,
) -> Result<(), ReplayError> {
    let room = i64::MAX - now_unix_ns.max(0);
    if o.delay_ns > room {
        return Err(ReplayError::Usage(format!(
            "--delay {}ns: the first message would be due after {LAST_TIME}, the last time i64 \
             nanoseconds since the epoch hold (from now, a delay of at most {} s)",
            o.delay_ns,
            room / 1_000_000_000
        )));
    }
    let Some(span) = span_ns.filter(|&s| s > 0) else {
        return Ok(());
    };
    let left = (room - o.delay_ns) as f64;
    let played = span as f64 / o.rate;
    if played >= left {
        return Err(ReplayError::Usage(format!(
            "{}: the {:.3} s of the bag selected would take {:.3e} s to play, ending after \
             {LAST_TIME}, the last time i64 nanoseconds since the epoch hold; the rate must be \
             above {:.3e}",
            schedule_params(o),
            span as f64 / 1e9,
            played / 1e9,
            span as f64 / left
        )));
    }
    Ok(())
}

/// Log-time span of the wanted topics within `--start-offset` / `--duration`, from what is
/// known without reading the messages (sqlite3 aggregates, MCAP message indexes).
fn selected_log_span(bag: &Bag, wanted: &[bool], o: &PlayOptions) -> Option<i64> {
    let mut ends: Vec<(i64, i64)> = match bag.topic_aggregates() {
        Some(aggs) => aggs
            .iter()
            .zip(wanted)
            .filter(|(_, w)| **w)
            .filter_map(|(a, _)| a.map(|a| (a.first_ns, a.last_ns)))
            .collect(),
        None => match bag.topic_spans(wanted) {
            Some(spans) => spans
                .iter()
                .filter_map(|s| Some((s.first_log_time_ns?, s.last_log_time_ns?)))
                .collect(),
            None => {
                let (times, _) = bag.topic_log_times(wanted);
                times
                    .iter()
                    .filter_map(|t| Some((*t.first()?, *t.last()?)))
                    .collect()
            }
        },
    };
    ends.retain(|(a, b)| a <= b);
    let first = ends.iter().map(|e| e.0).min()?;
    let last = ends.iter().map(|e| e.1).max()?;
    let span = last
        .saturating_sub(first)
        .saturating_sub(o.start_offset_ns)
        .max(0);
    Some(o.duration_ns.map_or(span, |d| d.min(span)))
}

/// `a − b` in ns, negative when `a` is earlier.
fn signed_ns(a: Instant, b: Instant) -> i64 {
    if a >= b {
        (a - b).as_nanos() as i64
    } else {
        -((b - a).as_nanos() as i64)
    }
}

/// Writes `t_ns` as `builtin_interfaces/Time` at `off` in the message's byte order.
fn write_stamp_ordered(data: &mut [u8], off: usize, t_ns: i64, little_endian: bool) -> bool {
    let Some(slot) = data.get_mut(off..off + 8) else {
        return false;
    };
    let sec = t_ns.div_euclid(1_000_000_000) as i32;
    let nsec = t_ns.rem_euclid(1_000_000_000) as u32;
    if little_endian {
        slot[..4].copy_from_slice(&sec.to_le_bytes());
        slot[4..].copy_from_slice(&nsec.to_le_bytes());
    } else {
        slot[..4].copy_from_slice(&sec.to_be_bytes());
        slot[4..].copy_from_slice(&nsec.to_be_bytes());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_offsets_leave_i64_as_none() {
        assert_eq!(schedule_offset(0, 1_000_000_000, 2.0), Some(500_000_000));
        assert_eq!(schedule_offset(7, -10, 1.0), Some(-3));
        // 30 s of bag at 1e-9: 3e19 ns, past i64 (the cast would saturate to i64::MAX).
        assert_eq!(schedule_offset(0, 30_000_000_000, 1e-9), None);
        // In range alone, out of range after the pass's base.
        assert_eq!(schedule_offset(i64::MAX - 10, 20, 1.0), None);
        assert_eq!(schedule_offset(i64::MAX - 10, 10, 1.0), Some(i64::MAX));
    }

    #[test]
    fn schedules_past_the_i64_range_are_refused_up_front() {
        let now = 1_764_460_800_000_000_000; // 2025-11-30
        let room = i64::MAX - now;
        let usage = |o: &PlayOptions, span: Option<i64>| match check_schedule_range(o, now, span) {
            Err(ReplayError::Usage(m)) => m,
            r => panic!("expected a usage error, got {r:?}"),
        };
        let delay = |d: i64| PlayOptions {
            delay_ns: d,
            ..PlayOptions::default()
        };
        let m = usage(&delay(i64::MAX), None);
        assert!(m.starts_with("--delay 9223372036854775807ns:"), "{m}");
        assert!(m.contains(LAST_TIME), "{m}");
        assert!(check_schedule_range(&delay(room), now, None).is_ok());
        assert!(check_schedule_range(&delay(room + 1), now, None).is_err());
        // 30 s at 1e-9 would take 951 years.
        let rate = PlayOptions {
            rate: 1e-9,
            ..PlayOptions::default()
        };
        let m = usage(&rate, Some(30_000_000_000));
        assert!(m.starts_with("--rate 0.000000001:"), "{m}");
        assert!(
            check_schedule_range(&rate, now, Some(room / 2_000_000_000)).is_ok(),
            "half the room fits"
        );
        // Delay and rate together: each fits alone, not both.
        let both = PlayOptions {
            rate: 0.5,
            delay_ns: room / 2,
            ..PlayOptions::default()
        };
        assert!(check_schedule_range(&both, now, Some(room / 8)).is_ok());
        let m = usage(&both, Some(room / 3));
        assert!(m.starts_with("--rate 0.5 with --delay"), "{m}");
        // Nothing known of the span: only the delay is checked.
        assert!(check_schedule_range(&rate, now, None).is_ok());
    }
}
