//! `bagscope play` for real: published over DDS and received by a RustDDS subscriber in this
//! test, inside a network namespace the test creates (a veth pair with multicast, plus
//! loopback) and removes, so no packet can reach a real interface.
//!
//! The outer tests (`netns_*`) make the namespace and run the matching `inner_*` test of this
//! same binary inside it with `ip netns exec`; the inner tests are `#[ignore]`d so that they
//! never run outside a namespace. Where a namespace cannot be made (not root, no iproute2)
//! the outer tests fail and say why — set `BAGSCOPE_SKIP_NETNS=1` to skip them on purpose.
//!
//! The offline tests (`--out --no-publish`) need no network.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bagscope_bag::Bag;
use bagscope_replay::dds::{clock_payload, parse_clock, Node, RawCdr};
use bagscope_replay::qos::{Durability, History, Reliability, TopicQos};

mod common;
use common::{bin, root};

/// A 20 Hz JointTrajectory command bag of at least 10 s: the shared `arm_real` (written by an
/// independent writer) where it exists, else the repo's own `bags/arm_wall`.
fn command_bag() -> PathBuf {
    let shared = root().join("../shared/bags/arm_real");
    if shared.exists() {
        return shared;
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but ../shared/bags/arm_real is missing");
    }
    eprintln!("note: ../shared not found; playing the repo's bags/arm_wall instead");
    root().join("bags/arm_wall")
}

/// (log time, payload) of `topic` in the first `window_ns` of its own messages, as the
/// player's window selects them.
fn expected(bag: &Path, topic: &str, window_ns: Option<i64>) -> Vec<(i64, Vec<u8>)> {
    let b = Bag::open(bag).unwrap();
    let sel = b.select(&[topic]).unwrap();
    let mut v = Vec::new();
    b.visit(&sel, |m| v.push((m.log_time_ns, m.data.to_vec())));
    v.sort_by_key(|(t, _)| *t);
    if let (Some(w), Some(&(t0, _))) = (window_ns, v.first()) {
        v.retain(|(t, _)| *t <= t0 + w);
    }
    v
}

fn reliable() -> TopicQos {
    TopicQos {
        reliability: Reliability::Reliable,
        durability: Durability::Volatile,
        history: History::KeepAll,
        source: "test",
    }
}

fn best_effort(depth: u32) -> TopicQos {
    TopicQos {
        reliability: Reliability::BestEffort,
        durability: Durability::Volatile,
        history: History::KeepLast(depth),
        source: "test",
    }
}

/// `bagscope play BAG ARGS --report REPORT` (stdout discarded), not yet started.
fn play_cmd(bag: &Path, args: &[&str], report: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("play")
        .arg(bag)
        .args(args)
        .arg("--report")
        .arg(report)
        .stdout(Stdio::null());
    c
}

/// A reliable reader of the command topic.
fn cmd_reader(node: &Node) -> bagscope_replay::dds::RawReader {
    node.reader(
        "/arm_cmd",
        "trajectory_msgs/msg/JointTrajectory",
        &reliable(),
    )
    .unwrap()
}

fn read_report(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn quantile(v: &mut [i64], q: f64) -> i64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

// ---------------------------------------------------------------- namespace plumbing

struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("`ip` (iproute2) cannot be run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A namespace with loopback and a veth pair (multicast on, a multicast route): DDS discovery
/// works inside, nothing leaves.
fn make_netns(tag: &str) -> Result<Netns, String> {
    let name = format!("bagscope-{tag}-{}", std::process::id());
    ip(&["netns", "add", &name])?;
    let ns = Netns(name.clone());
    let n = name.as_str();
    ip(&["-n", n, "link", "set", "lo", "up"])?;
    ip(&[
        "-n", n, "link", "add", "bsv0", "type", "veth", "peer", "name", "bsv1",
    ])?;
    ip(&["-n", n, "addr", "add", "10.231.0.1/24", "dev", "bsv0"])?;
    ip(&["-n", n, "addr", "add", "10.231.0.2/24", "dev", "bsv1"])?;
    for d in ["bsv0", "bsv1"] {
        ip(&["-n", n, "link", "set", d, "multicast", "on"])?;
        ip(&["-n", n, "link", "set", d, "up"])?;
    }
    ip(&["-n", n, "route", "add", "224.0.0.0/4", "dev", "bsv0"])?;
    Ok(ns)
}

/// The DDS tests run one at a time: the timing test measures sub-millisecond errors, which
/// another test's publishers and busy readers on the same 2 cores would distort.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the ignored test `inner` of this binary inside a fresh namespace.
fn in_netns(inner: &str) {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if std::env::var_os("BAGSCOPE_SKIP_NETNS").is_some() {
        eprintln!("note: BAGSCOPE_SKIP_NETNS is set: {inner} not run");
        return;
    }
    let ns =
        make_netns(&inner.trim_start_matches("inner_").replace('_', "-")).unwrap_or_else(|e| {
            panic!(
                "cannot create a network namespace for the DDS test ({e}); it needs root and \
                 iproute2 (set BAGSCOPE_SKIP_NETNS=1 to skip on purpose)"
            )
        });
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(exe)
        .args([
            inner,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BAGSCOPE_IN_NETNS", &ns.0)
        .output()
        .expect("ip netns exec");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{inner} failed inside the namespace"
    );
}

fn assert_in_netns() {
    assert!(
        std::env::var_os("BAGSCOPE_IN_NETNS").is_some(),
        "inner DDS tests run only inside the namespace their outer test makes"
    );
}

#[test]
fn netns_play_arrives_identical_and_on_time() {
    in_netns("inner_play_arrives_identical_and_on_time");
}

#[test]
fn netns_follow_clock_waits_for_the_simulator() {
    in_netns("inner_follow_clock_waits_for_the_simulator");
}

#[test]
fn netns_clock_restamp_and_interrupt() {
    in_netns("inner_clock_restamp_and_interrupt");
}

// ---------------------------------------------------------------- inside the namespace

/// The acceptance: a 20 Hz command bag over 10 s arrives complete, byte-identical and
/// in order, and the timing error at rate 1.0 has p99 under 2 ms.
#[test]
#[ignore = "runs inside a network namespace (see netns_play_arrives_identical_and_on_time)"]
fn inner_play_arrives_identical_and_on_time() {
    assert_in_netns();
    let bag = command_bag();
    let want = expected(&bag, "/arm_cmd", Some(10_000_000_000));
    assert!(want.len() >= 190, "{} messages in the window", want.len());
    let node = Node::new(0).unwrap();
    let mut reader = cmd_reader(&node);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("play.json");
    let mut child = play_cmd(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "--duration",
            "10s",
            "--wait-for-subscribers",
            "20s",
        ],
        &report,
    )
    .spawn()
    .unwrap();
    let mut got: Vec<(Instant, RawCdr)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut exited_at: Option<Instant> = None;
    while got.len() < want.len() && Instant::now() < deadline {
        while let Ok(Some(s)) = reader.take_next_sample() {
            got.push((Instant::now(), s.value().clone()));
        }
        if exited_at.is_none() && child.try_wait().unwrap().is_some() {
            exited_at = Some(Instant::now());
        }
        if exited_at.is_some_and(|t| t.elapsed() > Duration::from_secs(3)) {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "play exit code");
    assert_eq!(got.len(), want.len(), "messages received");
    for (i, ((_, g), (_, w))) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            &g.to_stored(),
            w,
            "message {i} differs (or arrived out of order)"
        );
    }
    let r: serde_json::Value = read_report(&report);
    assert_eq!(r["published"].as_u64(), Some(want.len() as u64));
    let p99 = r["timing_error"]["p99"].as_i64().unwrap();
    let max = r["timing_error"]["max"].as_i64().unwrap();
    eprintln!("play-reported publish error: p99 {p99} ns, max {max} ns");
    assert!(p99 < 2_000_000, "publish timing error p99 {p99} ns >= 2 ms");
    // The receiver's view: arrival intervals against the recorded intervals.
    let (r0, l0) = (got[0].0, want[0].0);
    let mut dev: Vec<i64> = got
        .iter()
        .zip(&want)
        .map(|((at, _), (lt, _))| ((at.duration_since(r0).as_nanos() as i64) - (lt - l0)).abs())
        .collect();
    let rp99 = quantile(&mut dev, 0.99);
    eprintln!("receiver-side interval error p99 {rp99} ns");
    assert!(
        rp99 < 5_000_000,
        "receiver-side interval error p99 {rp99} ns"
    );
}

/// A message goes out when the followed clock passes its relative time; while the clock stands
/// still nothing is published.
#[test]
#[ignore = "runs inside a network namespace (see netns_follow_clock_waits_for_the_simulator)"]
fn inner_follow_clock_waits_for_the_simulator() {
    assert_in_netns();
    let bag = command_bag();
    let want = expected(&bag, "/arm_cmd", Some(2_000_000_000));
    let node = Node::new(0).unwrap();
    let mut clock = node
        .writer("/clock", "rosgraph_msgs/msg/Clock", &best_effort(1))
        .unwrap();
    let mut reader = cmd_reader(&node);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("play.json");
    let mut child = play_cmd(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "--duration",
            "2s",
            "--follow-clock",
            "/clock",
            "--wait-for-subscribers",
            "20s",
        ],
        &report,
    )
    .spawn()
    .unwrap();
    // Simulated time: 100 s at start, 100 Hz ticks of 10 ms; it stands still for 1.5 s of
    // wall time at sim 101.0 s.
    let sim0: i64 = 100_000_000_000;
    let mut sim = sim0;
    let mut got: Vec<(i64, RawCdr)> = Vec::new(); // (sim time when received, message)
    let mut received_during_stall = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stalled = false;
    loop {
        assert!(
            Instant::now() < deadline,
            "timed out: {} of {} received",
            got.len(),
            want.len()
        );
        let _ = clock.send(node.publisher(), &clock_payload(sim));
        let tick_end = Instant::now() + Duration::from_millis(10);
        while Instant::now() < tick_end {
            while let Ok(Some(s)) = reader.take_next_sample() {
                got.push((sim, s.value().clone()));
            }
            std::thread::sleep(Duration::from_micros(300));
        }
        if !stalled && sim >= sim0 + 1_000_000_000 && !got.is_empty() {
            stalled = true;
            let n = got.len();
            let until = Instant::now() + Duration::from_millis(1500);
            while Instant::now() < until {
                let _ = clock.send(node.publisher(), &clock_payload(sim));
                std::thread::sleep(Duration::from_millis(10));
                while let Ok(Some(s)) = reader.take_next_sample() {
                    got.push((sim, s.value().clone()));
                }
            }
            // Allow the one message due exactly at this tick to be in flight.
            received_during_stall = got.len().saturating_sub(n);
        }
        if child.try_wait().unwrap().is_some() {
            std::thread::sleep(Duration::from_millis(200));
            while let Ok(Some(s)) = reader.take_next_sample() {
                got.push((sim, s.value().clone()));
            }
            break;
        }
        sim += 10_000_000;
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert!(
        received_during_stall <= 1,
        "{received_during_stall} messages while the clock stood still"
    );
    assert_eq!(got.len(), want.len());
    // Each message arrived at a sim time at or after its due time, within two ticks.
    let (first_sim, l0) = (got[0].0, want[0].0);
    for (i, ((s, g), (lt, w))) in got.iter().zip(&want).enumerate() {
        assert_eq!(&g.to_stored(), w, "message {i}");
        let due = first_sim + (lt - l0);
        assert!(
            *s >= due - 10_000_000 && *s <= due + 30_000_000,
            "message {i}: received at sim {s}, due {due}"
        );
    }
    let r: serde_json::Value = read_report(&report);
    assert_eq!(r["mode"], "follow_clock");
}

/// `--clock` publishes bag time; `--restamp now` rewrites header.stamp to the wall clock; the
/// first SIGINT stops cleanly with a report (exit 3, interrupted).
#[test]
#[ignore = "runs inside a network namespace (see netns_clock_restamp_and_interrupt)"]
fn inner_clock_restamp_and_interrupt() {
    assert_in_netns();
    let bag = command_bag();
    let want = expected(&bag, "/arm_cmd", None);
    let node = Node::new(0).unwrap();
    let mut cmd = cmd_reader(&node);
    let mut clock = node
        .reader("/clock", "rosgraph_msgs/msg/Clock", &best_effort(100))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();

    // 1. --clock 100 at rate 2 over 2 s of bag: /clock is bag time, increasing, from the start.
    let report = dir.path().join("clock.json");
    let o = play_cmd(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "--clock",
            "100",
            "--rate",
            "2",
            "--duration",
            "2s",
            "--wait-for-subscribers",
            "20s",
        ],
        &report,
    )
    .status()
    .unwrap();
    assert_eq!(o.code(), Some(0));
    let mut clocks: Vec<(Instant, i64)> = Vec::new();
    while let Ok(Some(s)) = clock.take_next_sample() {
        clocks.extend(parse_clock(s.value()).map(|t| (Instant::now(), t)));
    }
    while cmd.take_next_sample().ok().flatten().is_some() {}
    let r: serde_json::Value = read_report(&report);
    let published = r["clock"]["published"].as_u64().unwrap();
    // ~1 s of wall time at 100 Hz (rate 2 over 2 s of bag).
    assert!(
        (80..=130).contains(&published),
        "{published} clock messages"
    );
    assert!(
        clocks.len() as u64 >= published * 9 / 10,
        "{} of {published} received",
        clocks.len()
    );
    let ts: Vec<i64> = clocks.iter().map(|(_, t)| *t).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "clock went backwards");
    let t0 = want[0].0;
    assert!(
        ts[0] >= t0 && ts[0] < t0 + 100_000_000,
        "clock starts at {} not at {t0}",
        ts[0]
    );
    let last = *ts.last().unwrap();
    assert!(
        last > t0 + 1_800_000_000 && last <= t0 + 2_100_000_000,
        "clock ends at {} s of bag time, want ~2 s",
        (last - t0) as f64 / 1e9
    );

    // 2. --restamp now --loop, stopped by SIGINT.
    let report = dir.path().join("play.json");
    let mut child = play_cmd(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "--restamp",
            "now",
            "--loop",
            "--wait-for-subscribers",
            "20s",
        ],
        &report,
    )
    .spawn()
    .unwrap();
    let mut cmds: Vec<(i64, RawCdr)> = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) && cmds.len() < 40 {
        while let Ok(Some(s)) = cmd.take_next_sample() {
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as i64;
            cmds.push((wall, s.value().clone()));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(cmds.len() >= 40, "only {} commands", cmds.len());
    let sent = Instant::now();
    let rc = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(rc.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "play did not stop within 5 s of SIGINT"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(3), "interrupted play exits 3");
    let r: serde_json::Value = read_report(&report);
    assert_eq!(r["interrupted"], true);
    assert!(r["topics"][0]["restamped"].as_u64().unwrap() >= 40);
    // header.stamp (bytes 4..12) is the wall clock at publish, not the recorded one; the rest
    // of the message is as recorded.
    for (wall, m) in &cmds {
        let b = m.to_stored();
        let sec = i32::from_le_bytes(b[4..8].try_into().unwrap()) as i64;
        let nsec = u32::from_le_bytes(b[8..12].try_into().unwrap()) as i64;
        let stamp = sec * 1_000_000_000 + nsec;
        assert!(
            (wall - stamp).abs() < 100_000_000,
            "stamp {stamp} not the publish time (received at {wall})"
        );
        assert!(want.iter().any(|(_, w)| w[12..] == b[12..]), "body changed");
    }
}

// ---------------------------------------------------------------- offline (no network)

/// `--out --no-publish`: the retimed bag holds the window's messages, byte-identical, with log
/// times on the schedule `start + (t − t_begin)/rate`.
#[test]
fn offline_out_is_the_schedule() {
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("retimed.mcap");
    let o = Command::new(bin())
        .arg("play")
        .arg(&bag)
        .args([
            "--topics",
            "/arm_cmd",
            "/joint_states",
            "--rate",
            "2",
            "--start-offset",
            "1s",
            "--duration",
            "3s",
            "--no-publish",
            "--json",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["mode"], "offline");

    let src = Bag::open(&bag).unwrap();
    let sel = src.select(&["/arm_cmd", "/joint_states"]).unwrap();
    let mut all: Vec<(i64, String, Vec<u8>)> = Vec::new();
    src.visit(&sel, |m| {
        all.push((
            m.log_time_ns,
            src.topics[m.topic].name.clone(),
            m.data.to_vec(),
        ))
    });
    all.sort_by_key(|(t, _, _)| *t);
    let first = all[0].0;
    let begin = first + 1_000_000_000;
    let window: Vec<_> = all
        .into_iter()
        .filter(|(t, _, _)| *t >= begin && *t <= begin + 3_000_000_000)
        .collect();

    let retimed = Bag::open(&out).unwrap();
    let mut got: Vec<(i64, String, Vec<u8>)> = Vec::new();
    retimed.visit(&retimed.all_topics(), |m| {
        got.push((
            m.log_time_ns,
            retimed.topics[m.topic].name.clone(),
            m.data.to_vec(),
        ))
    });
    assert_eq!(got.len(), window.len());
    assert_eq!(r["published"].as_u64(), Some(window.len() as u64));
    let start = r["started_unix_ns"].as_i64().unwrap();
    let g0 = got[0].0;
    assert!(
        (g0 - start).abs() < 5_000_000_000,
        "first log time {g0} vs start {start}"
    );
    let w0 = window[0].0;
    for ((gt, gn, gd), (wt, wn, wd)) in got.iter().zip(&window) {
        assert_eq!((gn, gd), (wn, wd));
        let want_off = ((wt - w0) as f64 / 2.0).round() as i64;
        assert!(
            (gt - g0 - want_off).abs() <= 1,
            "log time {gt}: offset {} want {want_off}",
            gt - g0
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let bag = command_bag();
    for args in [
        vec!["--rate", "0", "--no-publish", "--out", "/tmp/x.mcap"],
        vec!["--topics", "/nope", "--no-publish", "--out", "/tmp/x.mcap"],
        vec!["--loop", "--no-publish", "--out", "/tmp/x.mcap"],
        vec!["--remap", "nocolon"],
    ] {
        let o = Command::new(bin())
            .arg("play")
            .arg(&bag)
            .args(&args)
            .output()
            .unwrap();
        let code = o.status.code();
        assert!(
            code == Some(2) || code == Some(1),
            "{args:?}: exit {code:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stderr.is_empty(), "{args:?}: no message");
    }
}
