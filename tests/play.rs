//! `bagscope play` for real: published over DDS and received by a RustDDS subscriber in this
//! test, inside a network namespace the test creates (a veth pair with multicast, plus
//! loopback) and removes, so no packet can reach a real interface.
//!
//! The outer tests (`netns_*`) run the matching `inner_*` test of this same binary in a new
//! network namespace (`unshare -n`, set up with a veth pair); the inner tests are `#[ignore]`d
//! so that they never run outside one. Where a namespace cannot be made (not root, no
//! util-linux or iproute2) the outer tests fail and say why — set `BAGSCOPE_SKIP_NETNS=1` to
//! skip them on purpose (refused when `CI` is set).
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
    match common::shared_path("bags", "arm_real") {
        Some(b) => b.join("arm_real"),
        None => {
            eprintln!("note: playing the repo's bags/arm_wall instead");
            root().join("bags/arm_wall")
        }
    }
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
    TopicQos::new(
        Reliability::Reliable,
        Durability::Volatile,
        History::KeepAll,
        "test",
    )
}

fn best_effort(depth: u32) -> TopicQos {
    TopicQos::new(
        Reliability::BestEffort,
        Durability::Volatile,
        History::KeepLast(depth),
        "test",
    )
}

/// `bagscope play BAG ARGS --report REPORT` (stdout discarded), not yet started.
fn play_cmd(bag: &Path, args: &[&str], report: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("play")
        .arg(bag)
        .args(args)
        .arg("--report")
        .arg(report)
        // The test's own readers are on domain 0 with default settings.
        .env_remove("ROS_DOMAIN_ID")
        .env_remove("ROS_LOCALHOST_ONLY")
        .env_remove("ROS_AUTOMATIC_DISCOVERY_RANGE")
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

/// A spawned player, killed if the test fails before it ends (an orphan would hold the outer
/// test's output pipe open, and the outer test would wait forever).
struct Player(std::process::Child);

impl Drop for Player {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Player {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Player {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// One 10 ms tick of a simulated clock: publishes `sim` on /clock and collects what arrives
/// meanwhile, tagged with `sim`.
fn clock_tick(
    node: &Node,
    clock: &mut bagscope_replay::dds::RawWriter,
    reader: &mut bagscope_replay::dds::RawReader,
    sim: i64,
    got: &mut Vec<(i64, RawCdr)>,
) {
    let _ = clock.send(node.publisher(), &clock_payload(sim));
    let tick_end = Instant::now() + Duration::from_millis(10);
    while Instant::now() < tick_end {
        while let Ok(Some(s)) = reader.take_next_sample() {
            got.push((sim, s.value().clone()));
        }
        std::thread::sleep(Duration::from_micros(300));
    }
}

/// The wall clock (what `--restamp now` writes), in ns since the Unix epoch.
fn unix_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn read_report(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn quantile(v: &mut [i64], q: f64) -> i64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

// ---------------------------------------------------------------- namespace plumbing

/// Inside the new namespace: loopback and a veth pair with multicast on and a multicast route,
/// so DDS discovery works; the namespace has no other interface, so nothing leaves, and it is
/// gone when the test process exits.
const NETNS_SETUP: &str = "set -e
ip link set lo up
ip link add bsv0 type veth peer name bsv1
ip addr add 10.231.0.1/24 dev bsv0
ip addr add 10.231.0.2/24 dev bsv1
for d in bsv0 bsv1; do ip link set $d multicast on; ip link set $d up; done
ip route add 224.0.0.0/4 dev bsv0
exec \"$0\" \"$@\"";

/// The DDS tests run one at a time: the timing test measures sub-millisecond errors, which
/// another test's publishers and busy readers on the same 2 cores would distort.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every test of this binary runs alone: they spawn players whose timing is measured, and on
/// a 2-core machine a neighbour's player pushed the receiver-side p99 over 2 ms.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a private network namespace cannot be made here, if it cannot.
fn netns_unavailable() -> Option<String> {
    let probe = "ip link set lo up && ip link add bsv0 type veth peer name bsv1";
    match Command::new("unshare")
        .args(["-n", "--", "sh", "-c", probe])
        .output()
    {
        Err(e) => Some(format!("`unshare` (util-linux) cannot be run: {e}")),
        Ok(o) if !o.status.success() => Some(format!(
            "`unshare -n` with a veth pair failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// Runs the ignored test `inner` of this binary inside a fresh network namespace
/// (`unshare -n`).
fn in_netns(inner: &str) {
    in_netns_attempts(inner, 1);
}

/// Printed by an inner test whose only failures are timing bounds: everything it delivered was
/// complete, identical and in order.
const TIMING_ONLY: &str = "TIMING-ONLY FAILURE";

/// [`in_netns`] for a timing test: each attempt waits (up to 60 s) for a quiet spell of the
/// host, and `inner` runs again (up to `attempts` times in all) while it fails on timing
/// bounds alone. The CI VM's host takes its vCPUs away for up to 13 ms at a time, in spells
/// of minutes: /proc/stat's steal column showed 0.1-15% of all CPU time from one run of the
/// DDS test to the next (bench/results/2026-12-01-2core-vm.md). The player measures steal on its own thread, but not
/// what it does to the guest's other threads (DDS, the receiver) that then compete with it;
/// a player with a real timing fault fails every attempt, quiet or not. Content, count and
/// order are never retried.
fn in_netns_attempts(inner: &str, attempts: u32) {
    let _one_at_a_time = serial();
    if std::env::var_os("BAGSCOPE_SKIP_NETNS").is_some() {
        assert!(
            std::env::var_os("CI").is_none(),
            "BAGSCOPE_SKIP_NETNS is set under CI: the DDS tests must run there"
        );
        eprintln!("note: BAGSCOPE_SKIP_NETNS is set: {inner} not run");
        return;
    }
    if let Some(why) = netns_unavailable() {
        panic!(
            "cannot create a network namespace for the DDS test ({why}); it needs root (or \
             CAP_SYS_ADMIN + CAP_NET_ADMIN), util-linux and iproute2 (set BAGSCOPE_SKIP_NETNS=1 \
             to skip on purpose)"
        );
    }
    let exe = std::env::current_exe().unwrap();
    for attempt in 1..=attempts {
        if attempts > 1 {
            let waited = Instant::now();
            let share = wait_for_quiet_host(Duration::from_secs(60));
            eprintln!(
                "note: {inner}, attempt {attempt}: host steal {} of a second with one vCPU \
                 busy, after waiting {:.0} s for a quiet spell",
                share.map_or("not known".into(), |s| format!("{:.1}%", 100.0 * s)),
                waited.elapsed().as_secs_f64()
            );
        }
        let (ok, stdout, stderr) = run_in_netns(&exe, inner);
        eprintln!("{stdout}\n{stderr}");
        if ok {
            return;
        }
        let timing_only = stdout.contains(TIMING_ONLY) || stderr.contains(TIMING_ONLY);
        assert!(
            timing_only && attempt < attempts,
            "{inner} failed inside the namespace (attempt {attempt} of {attempts})"
        );
        eprintln!("note: {inner}: timing bounds missed on attempt {attempt}; running it again");
    }
}

/// Waits (at most `limit`) for a second in which the host took under 1% of the CPU time
/// while one vCPU was kept busy; returns the share in the last second measured, where
/// /proc/stat says. An idle vCPU asks the host for nothing, so an idle VM always looks quiet:
/// on the CI VM steal was ~0 at idle in the same minutes it took 9-15% during the test.
fn wait_for_quiet_host(limit: Duration) -> Option<f64> {
    let end = Instant::now() + limit;
    loop {
        let before = steal_now()?;
        let busy_until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < busy_until {
            std::hint::spin_loop();
        }
        let share = steal_share(before, steal_now()?)?;
        if share < 0.01 || Instant::now() >= end {
            return Some(share);
        }
    }
}

/// One run of `inner` in a new namespace: passed?, its stdout and stderr.
fn run_in_netns(exe: &Path, inner: &str) -> (bool, String, String) {
    // A hung inner test (a receiver that never starts) must not hold CI until its limit.
    let out = Command::new("timeout")
        .args([
            "-k",
            "10",
            "600",
            "unshare",
            "-n",
            "--",
            "sh",
            "-c",
            NETNS_SETUP,
        ])
        .arg(exe)
        .args([
            inner,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BAGSCOPE_IN_NETNS", "1")
        .output()
        .expect("unshare -n");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let ok = out.status.success() && stdout.contains("1 passed");
    (ok, stdout, stderr)
}

fn assert_in_netns() {
    assert!(
        std::env::var_os("BAGSCOPE_IN_NETNS").is_some(),
        "inner DDS tests run only inside the namespace their outer test makes"
    );
    // Only loopback and the test's own veth pair: no real interface to leak onto.
    // (`ip`, not /sys/class/net: sysfs still shows the namespace it was mounted in.)
    let o = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let links = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        .filter(|n| !["lo", "bsv0", "bsv1"].contains(&n.as_str()))
        .collect::<Vec<_>>();
    assert!(o.status.success() && !o.stdout.is_empty());
    assert!(
        links.is_empty(),
        "unexpected interfaces in the namespace: {links:?}"
    );
}

#[test]
fn netns_play_arrives_identical_and_on_time() {
    in_netns_attempts("inner_play_arrives_identical_and_on_time", 4);
}

#[test]
fn netns_follow_clock_waits_for_the_simulator() {
    in_netns_attempts("inner_follow_clock_waits_for_the_simulator", 3);
}

#[test]
fn netns_recorded_qos_decides_who_matches() {
    in_netns("inner_recorded_qos_decides_who_matches");
}

#[test]
fn netns_follow_clock_goes_on_after_a_reset() {
    in_netns("inner_follow_clock_goes_on_after_a_reset");
}

#[test]
fn netns_cyclonedds_receives_what_play_sends() {
    if cyclonedds_python().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but no Python with cyclonedds: .ci/run makes target/interop-venv"
        );
        eprintln!(
            "note: no Python with cyclonedds (set BAGSCOPE_CYCLONEDDS_PYTHON or make \
             target/interop-venv as .ci/run does): CycloneDDS interop not checked"
        );
        return;
    }
    in_netns("inner_cyclonedds_receives_what_play_sends");
}

#[test]
fn netns_localhost_only_stays_on_loopback() {
    in_netns("inner_localhost_only_stays_on_loopback");
}

#[test]
fn netns_clock_restamp_and_interrupt() {
    in_netns("inner_clock_restamp_and_interrupt");
}

#[test]
fn netns_clock_if_missing_plays_the_bags_own_or_makes_one() {
    in_netns("inner_clock_if_missing_plays_the_bags_own_or_makes_one");
}

#[test]
fn netns_wire_time_is_measured_and_out_has_the_report_instants() {
    in_netns("inner_wire_time_is_measured_and_out_has_the_report_instants");
}

// ---------------------------------------------------------------- inside the namespace

/// The issue's acceptance: a 20 Hz command bag over 10 s arrives complete, byte-identical and
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
    let steal_before = steal_now();
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
    .map(Player)
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
    let own = &r["timing_error_without_steal"];
    let steal = steal_since(steal_before);
    eprintln!(
        "play-reported publish error: p99 {p99} ns, max {max} ns; without steal: p99 {} ns, \
         max {} ns; {} message(s) made late by steal; host steal during the run: {steal}",
        own["p99"], own["max"], r["late_by_steal"]
    );
    eprintln!("{}", wire_line(&r, &steal));
    let mut missed = Vec::new();
    // The issue's bound (p99 under 2 ms) is on the player's own error. Where the host takes
    // the vCPU away (the CI VM: up to 13 ms at a time) no user-space player meets it in the
    // raw numbers, so on Linux the bound applies to the error without steal; the
    // receiver-side check below sees everything.
    let bounded = if own.is_null() {
        assert_ne!(
            std::env::consts::OS,
            "linux",
            "play measures steal on Linux (thread CPU clock, getrusage) but reports none"
        );
        p99
    } else {
        let (op99, omax) = (own["p99"].as_i64().unwrap(), own["max"].as_i64().unwrap());
        assert_eq!(own["count"], r["timing_error"]["count"]);
        assert!(
            op99 <= p99 && omax <= max,
            "steal larger than the error it is taken from"
        );
        assert!(r["late_by_steal"].as_u64().unwrap() <= want.len() as u64);
        op99
    };
    if bounded >= 2_000_000 {
        missed.push(format!(
            "publish timing error p99 {bounded} ns >= 2 ms (without steal where measured)"
        ));
    }
    // The receiver's view: each arrival against the recorded schedule, measured from the
    // median offset (a first sample that happened to be late must not shift all the others).
    let (r0, l0) = (got[0].0, want[0].0);
    let offs: Vec<i64> = got
        .iter()
        .zip(&want)
        .map(|((at, _), (lt, _))| (at.duration_since(r0).as_nanos() as i64) - (lt - l0))
        .collect();
    let mid = quantile(&mut offs.clone(), 0.5);
    let mut dev: Vec<i64> = offs.iter().map(|o| (o - mid).abs()).collect();
    let rp90 = quantile(&mut dev, 0.90);
    let rp99 = quantile(&mut dev, 0.99);
    let quarter = offs.len() / 4;
    let drift = quantile(&mut offs[offs.len() - quarter..].to_vec(), 0.5)
        - quantile(&mut offs[..quarter].to_vec(), 0.5);
    eprintln!("receiver-side interval error p90 {rp90} ns, p99 {rp99} ns, drift {drift} ns");
    // The receiver's view adds DDS delivery and two wake-ups in the receiver (RustDDS's event
    // loop, this thread's 200 µs polling), none of which can measure steal. On the 2-core CI
    // VM (bench/results/2026-12-01-2core-vm.md), at 4-13% host steal: p90 0.3-4.7 ms, p99 3.2-16 ms (one 29 ms arrival),
    // drift between the first and last quarter's medians up to 2.6 ms; at 0.1-0.3% steal p90
    // 0.14-0.17 ms, p99 0.25-0.27 ms. The bounds catch a player whose report hides lateness
    // in more than a tenth of the messages, bursts in more than 1% of them, or a schedule that
    // runs fast or slow (the quarters' medians are 7.5 s apart: a 0.04% rate error is 3 ms).
    if rp90 >= 5_000_000 || rp99 >= 15_000_000 || drift.abs() >= 3_000_000 {
        missed.push(format!(
            "receiver-side interval error p90 {rp90} ns (bound 5 ms), p99 {rp99} ns (bound \
             15 ms), drift {drift} ns (bound 3 ms)"
        ));
    }
    assert!(
        missed.is_empty(),
        "{TIMING_ONLY} (host steal during the run: {steal}): {}",
        missed.join("; ")
    );
}

/// The hand-off and wire figures of a report, for the test's output.
fn wire_line(r: &serde_json::Value, steal: &str) -> String {
    let (err, h2w, wire) = (
        &r["timing_error"],
        &r["handoff_to_wire"],
        &r["wire_timing_error"],
    );
    format!(
        "hand-off error p50 {} p99 {} max {} ns; hand-off to wire p50 {} p99 {} max {} ns; \
         wire error p50 {} p99 {} max {} ns; scheduled early: {} message(s) by {} ns; host \
         steal {steal}",
        err["p50"],
        err["p99"],
        err["max"],
        h2w["p50"],
        h2w["p99"],
        h2w["max"],
        wire["p50"],
        wire["p99"],
        wire["max"],
        r["scheduled_early"],
        r["scheduled_early_by_ns"]
    )
}

/// Takes samples from `reader` until `n` arrived or the player exited 3 s ago; the player's
/// output and the count received.
fn receive_while_playing(
    mut child: Player,
    reader: &mut bagscope_replay::dds::RawReader,
    n: usize,
) -> (std::process::Output, usize) {
    let mut got = 0usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut exited_at: Option<Instant> = None;
    while got < n && Instant::now() < deadline {
        while let Ok(Some(_)) = reader.take_next_sample() {
            got += 1;
        }
        if exited_at.is_none() && child.try_wait().unwrap().is_some() {
            exited_at = Some(Instant::now());
        }
        if exited_at.is_some_and(|t| t.elapsed() > Duration::from_secs(3)) {
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let out = std::mem::replace(&mut child.0, Command::new("true").spawn().unwrap());
    (out.wait_with_output().unwrap(), got)
}

/// Asserts that `report` (an `NsSummary` as JSON) is the summary of `v`: count, extremes,
/// mean (truncated), negatives, and quantiles by linear interpolation between closest ranks,
/// rounded to the nanosecond, as bagscope-stats computes them.
fn assert_summary_of(report: &serde_json::Value, v: &[i64], what: &str) {
    let n = v.len() as i64;
    assert_eq!(report["count"].as_i64(), Some(n), "{what}: count");
    assert_eq!(
        report["min"].as_i64(),
        v.iter().min().copied(),
        "{what}: min"
    );
    assert_eq!(
        report["max"].as_i64(),
        v.iter().max().copied(),
        "{what}: max"
    );
    let sum: i128 = v.iter().map(|&x| x as i128).sum();
    assert_eq!(
        report["mean"].as_i64(),
        Some((sum / n as i128) as i64),
        "{what}: mean"
    );
    assert_eq!(
        report["negatives"].as_i64(),
        Some(v.iter().filter(|&&x| x < 0).count() as i64),
        "{what}: negatives"
    );
    let mut sorted = v.to_vec();
    sorted.sort_unstable();
    for (name, q) in [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)] {
        let pos = q * (sorted.len() - 1) as f64;
        let (a, b) = (sorted[pos.floor() as usize], sorted[pos.ceil() as usize]);
        let want = a + ((b - a) as f64 * (pos - pos.floor())).round() as i64;
        assert_eq!(report[name].as_i64(), Some(want), "{what}: {name}");
    }
}

/// `timing_error` is taken at the hand-off to the DDS writer; the player also captures its
/// own outgoing RTPS DATA (it runs as root here) and reports when each message left the host:
/// every message played to a subscriber is seen leaving, never before its hand-off, so the
/// wire error is the hand-off error plus a delay that is never negative. `--out` writes as
/// publish time exactly the hand-off instants the report's error is computed from (publish −
/// log time is the timing error, to the nanosecond). Without CAP_NET_RAW the report says the
/// wire was not measured rather than give a number, and `--no-early` never hands off early.
#[test]
#[ignore = "runs inside a network namespace (see netns_wire_time_is_measured_and_out_has_the_report_instants)"]
fn inner_wire_time_is_measured_and_out_has_the_report_instants() {
    assert_in_netns();
    let bag = command_bag();
    let want = expected(&bag, "/arm_cmd", Some(4_000_000_000));
    assert!(want.len() >= 70, "{} messages in the window", want.len());
    let node = Node::new(0).unwrap();
    let mut reader = cmd_reader(&node);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("play.json");
    let out = dir.path().join("played.mcap");
    let args = [
        "--topics",
        "/arm_cmd",
        "--duration",
        "4s",
        "--wait-for-subscribers",
        "20s",
    ];

    // 1. Captured: every message's wire time, and --out with the report's instants.
    let steal_before = steal_now();
    let mut c = play_cmd(&bag, &args, &report);
    c.arg("--out").arg(&out).stdout(Stdio::piped());
    let (o, got) = receive_while_playing(c.spawn().map(Player).unwrap(), &mut reader, want.len());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(got, want.len(), "messages received");
    let text = String::from_utf8_lossy(&o.stdout);
    let r = read_report(&report);
    let n = want.len() as i64;
    assert_eq!(r["wire"]["measured"], true, "{}", r["wire"]);
    assert_eq!(r["wire"]["seen"].as_i64(), Some(n), "{}", r["wire"]);
    assert_eq!(r["wire"]["not_seen"].as_i64(), Some(0));
    let (err, h2w, wire) = (
        &r["timing_error"],
        &r["handoff_to_wire"],
        &r["wire_timing_error"],
    );
    eprintln!("{}", wire_line(&r, &steal_since(steal_before)));
    assert_eq!(h2w["count"].as_i64(), Some(n));
    assert_eq!(wire["count"].as_i64(), Some(n));
    // Never on the wire before the hand-off: each message's wire error is at least its
    // hand-off error, so every order statistic is too.
    assert!(
        h2w["min"].as_i64().unwrap() >= 0,
        "left before its hand-off: {h2w}"
    );
    for q in ["min", "p50", "p95", "p99", "max"] {
        assert!(
            wire[q].as_i64().unwrap() >= err[q].as_i64().unwrap(),
            "wire {q} below the hand-off's: {wire} vs {err}"
        );
    }
    let t = &r["topics"][0];
    assert_eq!(t["wire_timing_error"], *wire);
    assert_eq!(t["handoff_to_wire"], *h2w);
    // Early scheduling only after the warm-up, by at most the cap, and only while steady
    // (the median of the delays it is taken from, so within the whole run's range).
    let early = r["scheduled_early"].as_i64().unwrap();
    assert!(early <= n - 32, "{early} early of {n}");
    if early > 0 {
        let by = r["scheduled_early_by_ns"].as_i64().unwrap();
        assert!(
            by > 0 && by <= 2_000_000 && by <= h2w["max"].as_i64().unwrap(),
            "early by {by}"
        );
    }
    assert!(
        text.contains("wire timing error (left the host − target)"),
        "{text}"
    );
    // --out: publish time − log time is the report's timing error, message by message.
    let played = Bag::open(&out).unwrap();
    let mut diffs = Vec::new();
    played.visit(&played.all_topics(), |m| {
        diffs.push(m.publish_time_ns.unwrap() - m.log_time_ns)
    });
    assert_eq!(diffs.len(), want.len());
    assert_summary_of(err, &diffs, "--out publish − log time against timing_error");

    // 2. --no-early: never handed off early, the wire still measured.
    let steal_before = steal_now();
    let mut c = play_cmd(&bag, &args, &report);
    c.arg("--no-early");
    let (o, got) = receive_while_playing(c.spawn().map(Player).unwrap(), &mut reader, want.len());
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(got, want.len());
    let r = read_report(&report);
    eprintln!("--no-early: {}", wire_line(&r, &steal_since(steal_before)));
    assert_eq!(r["scheduled_early"].as_i64(), Some(0));
    assert!(r["scheduled_early_by_ns"].is_null());
    assert_eq!(r["wire"]["seen"].as_i64(), Some(n));
    assert!(r["timing_error"]["min"].as_i64().unwrap() >= 0);

    // 3. Without CAP_NET_RAW: played all the same, the wire not measured, and said so.
    let c = play_cmd(&bag, &args, &report);
    let argv: Vec<std::ffi::OsString> = std::iter::once(c.get_program().to_owned())
        .chain(c.get_args().map(|a| a.to_owned()))
        .collect();
    let mut c = Command::new("setpriv");
    c.args(["--bounding-set", "-net_raw", "--"])
        .args(&argv)
        .env_remove("ROS_DOMAIN_ID")
        .env_remove("ROS_LOCALHOST_ONLY")
        .env_remove("ROS_AUTOMATIC_DISCOVERY_RANGE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (o, got) = receive_while_playing(c.spawn().map(Player).unwrap(), &mut reader, want.len());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(got, want.len());
    let r = read_report(&report);
    assert_eq!(r["wire"]["measured"], false);
    assert!(
        r["wire"]["note"]
            .as_str()
            .unwrap()
            .contains("needs CAP_NET_RAW"),
        "{}",
        r["wire"]
    );
    assert!(r["wire_timing_error"].is_null() && r["handoff_to_wire"].is_null());
    assert_eq!(r["scheduled_early"].as_i64(), Some(0));
    assert!(r["timing_error"]["count"].as_i64() == Some(n));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("wire: not measured (needs CAP_NET_RAW"),
        "{text}"
    );
}

/// The host's steal over all CPUs since `before` (from [`steal_now`]), as text.
fn steal_since(before: Option<(u64, u64)>) -> String {
    match before.zip(steal_now()).and_then(|(a, b)| steal_share(a, b)) {
        Some(share) => format!("{:.1}% of CPU time", 100.0 * share),
        None => "not known".into(),
    }
}

/// The share of CPU time stolen between two [`steal_now`] readings (none if no tick passed).
fn steal_share((s0, t0): (u64, u64), (s1, t1): (u64, u64)) -> Option<f64> {
    (t1 > t0).then(|| s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
}

/// `/proc/stat`'s steal and total CPU time (clock ticks, all CPUs), where there is one.
fn steal_now() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    Some((*cpu.get(7)?, cpu.iter().take(8).sum()))
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
    .map(Player)
    .unwrap();
    // Simulated time: 100 s at start, 100 Hz ticks of 10 ms; it stands still for 1.5 s of
    // wall time at sim 101.0 s.
    let sim0: i64 = 100_000_000_000;
    let mut sim = sim0;
    let mut got: Vec<(i64, RawCdr)> = Vec::new(); // (sim time when received, message)
                                                  // The messages taken while the clock stood still (indices into `got`), and where it stood.
    let mut during_stall = 0..0;
    let mut stall_sim = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stalled = false;
    loop {
        assert!(
            Instant::now() < deadline,
            "timed out: {} of {} received",
            got.len(),
            want.len()
        );
        clock_tick(&node, &mut clock, &mut reader, sim, &mut got);
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
            during_stall = n..got.len();
            stall_sim = sim;
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
    assert_eq!(got.len(), want.len());
    // Each message arrives at its due time on the followed clock, or a few ticks after when the
    // player or this loop is slow to be scheduled: a message is labelled with the tick during
    // which it was taken. The playback's start on the sim axis is unknown here, so it is the
    // earliest one the arrivals allow (a late label on the first message must not make the next
    // look early); an early send would show as every other message late by as much.
    for (i, ((_, g), (_, w))) in got.iter().zip(&want).enumerate() {
        assert_eq!(&g.to_stored(), w, "message {i}");
    }
    let l0 = want[0].0;
    let anchor = got
        .iter()
        .zip(&want)
        .map(|((s, _), (lt, _))| s - (lt - l0))
        .min()
        .unwrap();
    let late: Vec<i64> = got
        .iter()
        .zip(&want)
        .map(|((s, _), (lt, _))| s - (lt - l0) - anchor)
        .collect();
    for (i, l) in late.iter().enumerate() {
        assert!(
            *l <= 60_000_000,
            "{TIMING_ONLY}: message {i} received {l} ns after its due time on the followed clock"
        );
    }
    // While the clock stood still only messages already due went out (late ones, still in
    // flight): none due after the standing time.
    for j in during_stall {
        let due = anchor + (want[j].0 - l0);
        assert!(
            due <= stall_sim + 10_000_000,
            "message {j} (due at sim {due}) published while the clock stood at {stall_sim}"
        );
    }
    let within_two_ticks = late.iter().filter(|l| **l <= 20_000_000).count();
    assert!(
        within_two_ticks * 10 >= late.len() * 9,
        "{TIMING_ONLY}: only {within_two_ticks} of {} messages within two ticks of their due \
         time: {late:?}",
        late.len()
    );
    let r: serde_json::Value = read_report(&report);
    assert_eq!(r["mode"], "follow_clock");
    // Lateness against clock arrivals: no steal is taken out of it.
    assert!(r["timing_error_without_steal"].is_null() && r["late_by_steal"].is_null());
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
    // Deep enough to hold every tick of the run below: it is read after play has ended.
    let mut clock = node
        .reader("/clock", "rosgraph_msgs/msg/Clock", &best_effort(1000))
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
    // Best effort: a few ticks may be lost on a loaded machine.
    assert!(
        clocks.len() as u64 >= published * 8 / 10,
        "{} of {published} received",
        clocks.len()
    );
    let ts: Vec<i64> = clocks.iter().map(|(_, t)| *t).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "clock went backwards");
    let t0 = want[0].0;
    // The first ticks may go before the reader has matched the writer: it starts near t0.
    assert!(
        ts[0] >= t0 && ts[0] < t0 + 500_000_000,
        "clock starts at {} not at {t0}",
        ts[0]
    );
    let last = *ts.last().unwrap();
    assert!(
        last > t0 + 1_800_000_000 && last <= t0 + 2_100_000_000,
        "clock ends at {} s of bag time, want ~2 s",
        (last - t0) as f64 / 1e9
    );

    // 2. --loop: /clock starts again at the bag's start with every pass (as ros2 bag play's
    // does), never running on past the played window.
    let report = dir.path().join("loop.json");
    let mut child = play_cmd(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "--clock",
            "100",
            "--rate",
            "4",
            "--duration",
            "1s",
            "--loop",
            "--wait-for-subscribers",
            "20s",
        ],
        &report,
    )
    .spawn()
    .map(Player)
    .unwrap();
    let mut looped: Vec<i64> = Vec::new();
    let start = Instant::now();
    // Each pass is 0.25 s of wall time: 1.5 s holds several.
    while start.elapsed() < Duration::from_secs(30) && looped.len() < 150 {
        while let Ok(Some(s)) = clock.take_next_sample() {
            looped.extend(parse_clock(s.value()));
        }
        while cmd.take_next_sample().ok().flatten().is_some() {}
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    assert!(looped.len() >= 150, "{} clock messages", looped.len());
    // At rate 4 a pass ends every 0.25 s of wall time; the clock thread may tick on for a
    // moment past the pass's end before the next pass sets it back, so allow a second past it
    // (a clock that never restarted would reach ~6 s over these samples).
    assert!(
        looped.iter().all(|&t| t >= t0 && t <= t0 + 2_000_000_000),
        "clock left the played window [0, 1 s] by more than 1 s: {:?}",
        looped.iter().map(|t| t - t0).collect::<Vec<_>>()
    );
    let jumps = looped.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(jumps >= 2, "{jumps} restarts of /clock over several passes");

    // 3. --restamp now --loop, stopped by SIGINT.
    let report = dir.path().join("play.json");
    let spawned_wall = unix_now_ns();
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
    .map(Player)
    .unwrap();
    let mut cmds: Vec<(i64, RawCdr)> = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) && cmds.len() < 40 {
        while let Ok(Some(s)) = cmd.take_next_sample() {
            let wall = unix_now_ns();
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
    // of the message is as recorded. The receive time only bounds the publish time from above:
    // a reliable reader that discovers the writer late gets the early samples by repair, seconds
    // after they went out (seen on a loaded CI machine: 25 s), so the stamp must lie between the
    // player's start and the receipt, and advance at the recorded cadence.
    let mut stamps = Vec::new();
    for (wall, m) in &cmds {
        let b = m.to_stored();
        let sec = i32::from_le_bytes(b[4..8].try_into().unwrap()) as i64;
        let nsec = u32::from_le_bytes(b[8..12].try_into().unwrap()) as i64;
        let stamp = sec * 1_000_000_000 + nsec;
        assert!(
            stamp >= spawned_wall && stamp <= wall + 5_000_000,
            "stamp {stamp} not a publish time: player started at {spawned_wall}, received at {wall}"
        );
        assert!(want.iter().any(|(_, w)| w[12..] == b[12..]), "body changed");
        stamps.push(stamp);
    }
    assert!(
        stamps.windows(2).all(|w| w[0] <= w[1]),
        "restamped stamps went backwards"
    );
    let mut steps: Vec<i64> = stamps.windows(2).map(|w| w[1] - w[0]).collect();
    steps.sort_unstable();
    let mut recorded: Vec<i64> = want.windows(2).map(|w| w[1].0 - w[0].0).collect();
    recorded.sort_unstable();
    let (got, rec) = (steps[steps.len() / 2], recorded[recorded.len() / 2]);
    assert!(
        (got - rec).abs() < rec / 5,
        "restamped stamps step {got} ns apart (median), recorded {rec} ns"
    );
}

/// A Python with the `cyclonedds` and `mcap` packages: $BAGSCOPE_CYCLONEDDS_PYTHON, else the
/// venv .ci/run makes.
fn cyclonedds_python() -> Option<PathBuf> {
    let p = match std::env::var_os("BAGSCOPE_CYCLONEDDS_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => root().join("target/interop-venv/bin/python"),
    };
    let ok = Command::new(&p)
        .args(["-c", "import cyclonedds, mcap"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// Interoperability with the DDS that ROS 2 nodes use (CycloneDDS, as in rmw_cyclonedds_cpp):
/// a CycloneDDS reader that knows the topic only by its ROS 2 names (`rt/arm_cmd`,
/// `trajectory_msgs::msg::dds_::JointTrajectory_`, the type declared from the ROS 2 message
/// definition) receives every message of 10 s of `/arm_cmd`, each equal to the bag's, in order,
/// each with a source timestamp near its reception (not 0), never decreasing.
#[test]
#[ignore = "runs inside a network namespace (see netns_cyclonedds_receives_what_play_sends)"]
fn inner_cyclonedds_receives_what_play_sends() {
    use std::io::BufRead;
    assert_in_netns();
    let bag = command_bag();
    let mcap_file = std::fs::read_dir(&bag)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "mcap"))
        .expect("the command bag holds an .mcap");
    let python = cyclonedds_python().expect("a Python with cyclonedds");
    let mut rx = Command::new(python)
        .arg(root().join("tests/interop/cyclonedds_receive.py"))
        .arg(&mcap_file)
        .arg("10")
        .env_remove("CYCLONEDDS_URI")
        .stdout(Stdio::piped())
        .spawn()
        .map(Player)
        .unwrap();
    // Its lines, read on a thread so that a receiver that hangs fails the test in time.
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let out = std::io::BufReader::new(rx.stdout.take().unwrap());
    std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    assert_eq!(
        lines.recv_timeout(Duration::from_secs(60)).as_deref(),
        Ok("ready"),
        "the CycloneDDS receiver did not start"
    );
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("play.json");
    let st = play_cmd(
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
    .status()
    .unwrap();
    assert_eq!(st.code(), Some(0), "play exit code");
    let status = rx.wait().unwrap();
    let rest: Vec<String> = lines.iter().collect();
    assert!(status.success(), "CycloneDDS receiver: {rest:?}");
    assert!(
        rest.iter().any(|l| l == "all equal to the bag, in order"),
        "{rest:?}"
    );
    // rosbag2's recorder stores the DDS source timestamp as the publish time.
    assert!(
        rest.iter()
            .any(|l| l == "source timestamps within 5 s of reception, never decreasing"),
        "{rest:?}"
    );
}

/// Counts the UDP datagrams (IPv4 or IPv6) seen on each interface, in either direction, from
/// "ready" until its stdin closes; prints `IFACE=COUNT ...` (or `none`). A packet socket
/// (AF_PACKET) sees what every socket of the namespace sends and receives, whatever it is
/// bound to.
const COUNT_UDP_PER_INTERFACE: &str = r#"
import select, socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
counts = {}
print("ready", flush=True)
while True:
    ready, _, _ = select.select([s, sys.stdin], [], [], 1.0)
    if s in ready:
        data, addr = s.recvfrom(65535)
        ifname, proto = addr[0], addr[1]
        if (proto == 0x0800 and len(data) > 9 and data[9] == 17) or (
            proto == 0x86DD and len(data) > 6 and data[6] == 17
        ):
            counts[ifname] = counts.get(ifname, 0) + 1
    if sys.stdin in ready and sys.stdin.buffer.read1(1) == b"":
        break
print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none", flush=True)
"#;

/// UDP datagrams per interface while `run` runs (see [`COUNT_UDP_PER_INTERFACE`]).
fn udp_per_interface(run: impl FnOnce()) -> std::collections::BTreeMap<String, u64> {
    use std::io::BufRead;
    let mut cap = Command::new("python3")
        .args(["-c", COUNT_UDP_PER_INTERFACE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map(Player)
        .expect("python3 for the packet capture");
    let mut out = std::io::BufReader::new(cap.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the packet capture did not start");
    run();
    drop(cap.stdin.take());
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(cap.wait().unwrap().success(), "packet capture: {line}");
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

/// `ROS_LOCALHOST_ONLY=1`, `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST` and `--localhost-only`
/// each keep every DDS datagram of the player on loopback: a localhost-only reader receives
/// all it plays, and not one UDP datagram crosses the veth pair (counted by a packet
/// capture). The same run without any of them sends discovery over the veth pair, which shows
/// that the capture sees that interface.
#[test]
#[ignore = "runs inside a network namespace (see netns_localhost_only_stays_on_loopback)"]
fn inner_localhost_only_stays_on_loopback() {
    use bagscope_replay::dds::DiscoveryRange;
    assert_in_netns();
    let bag = command_bag();
    let want = expected(&bag, "/arm_cmd", Some(2_000_000_000));
    assert!(want.len() >= 30, "{} messages in the window", want.len());
    let node = Node::with_range(0, DiscoveryRange::Localhost).unwrap();
    let mut reader = cmd_reader(&node);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("play.json");
    // (variable and value set, extra arguments, localhost only)
    type Case = (
        Option<(&'static str, &'static str)>,
        &'static [&'static str],
        bool,
    );
    let cases: [Case; 4] = [
        (None, &[], false),
        (Some(("ROS_LOCALHOST_ONLY", "1")), &[], true),
        (
            Some(("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")),
            &[],
            true,
        ),
        (None, &["--localhost-only"], true),
    ];
    for (env, extra, localhost) in cases {
        let what = format!("{env:?} {extra:?}");
        let mut got = 0usize;
        let counts = udp_per_interface(|| {
            let mut c = play_cmd(
                &bag,
                &[
                    "--topics",
                    "/arm_cmd",
                    "--duration",
                    "2s",
                    "--wait-for-subscribers",
                    "20s",
                ],
                &report,
            );
            c.args(extra);
            if let Some((k, v)) = env {
                c.env(k, v);
            }
            let mut child = c.spawn().map(Player).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut exited_at: Option<Instant> = None;
            while got < want.len() && Instant::now() < deadline {
                while let Ok(Some(_)) = reader.take_next_sample() {
                    got += 1;
                }
                if exited_at.is_none() && child.try_wait().unwrap().is_some() {
                    exited_at = Some(Instant::now());
                }
                if exited_at.is_some_and(|t| t.elapsed() > Duration::from_secs(3)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(
                child.wait().unwrap().code(),
                Some(0),
                "{what}: play exit code"
            );
        });
        eprintln!("{what}: UDP datagrams per interface: {counts:?}");
        assert_eq!(got, want.len(), "{what}: messages received over loopback");
        assert!(
            counts.get("lo").is_some_and(|&n| n > 0),
            "{what}: {counts:?}"
        );
        let off_loopback: u64 = counts
            .iter()
            .filter(|(k, _)| k.as_str() != "lo")
            .map(|(_, n)| n)
            .sum();
        let r = read_report(&report);
        if localhost {
            assert_eq!(
                off_loopback, 0,
                "{what}: DDS datagrams left loopback: {counts:?}"
            );
            assert_eq!(r["discovery_range"], "localhost", "{what}");
        } else {
            assert!(
                off_loopback > 0,
                "{what}: the capture saw nothing on the veth pair: {counts:?}"
            );
        }
    }
}

/// Copies the first `window_ns` of `/arm_cmd` into a new MCAP under each of `topics`, with
/// the given `offered_qos_profiles` (rosbag2's YAML) in the channel metadata.
fn bag_with_qos(src: &Path, out: &Path, topics: &[(&str, &str)], window_ns: i64) {
    let b = Bag::open(src).unwrap();
    let i = b.topic_index("/arm_cmd").unwrap();
    let t = &b.topics[i];
    let msgs = expected(src, "/arm_cmd", Some(window_ns));
    let mut w = common::BagWriter::create(out);
    let (enc, data, _) = bagscope_msg::schema::builtin::schema_for_writing(
        &t.type_name,
        &t.schema_encoding,
        &t.schema_data,
    )
    .unwrap();
    let mut chans = Vec::new();
    for (name, qos) in topics {
        let md = std::collections::BTreeMap::from([(
            "offered_qos_profiles".to_string(),
            qos.to_string(),
        )]);
        chans.push(w.channel_encoded(name, &t.type_name, &enc, &data, &md));
    }
    for (lt, d) in &msgs {
        for &c in &chans {
            w.message(c, *lt, d);
        }
    }
    w.finish();
}

/// The recorded QoS decides who can match, as with the original publishers: a transient-local
/// reader that requests a 200 ms deadline matches only an offer that is transient local with
/// a deadline of at most 200 ms (recorded: 100 ms); a topic whose recorded publishers differed
/// is offered the reliable default, which a reliable reader matches (a best-effort offer
/// would not).
#[test]
#[ignore = "runs inside a network namespace (see netns_recorded_qos_decides_who_matches)"]
fn inner_recorded_qos_decides_who_matches() {
    assert_in_netns();
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("qos.mcap");
    let tl = "- history: keep_last\n  depth: 5\n  reliability: reliable\n  durability: transient_local\n  deadline:\n    sec: 0\n    nsec: 100000000\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: automatic\n  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n";
    let mixed = "- history: 1\n  depth: 10\n  reliability: 1\n  durability: 1\n- history: 1\n  depth: 10\n  reliability: 2\n  durability: 2\n";
    bag_with_qos(
        &command_bag(),
        &bag,
        &[("/cmd_tl", tl), ("/cmd_mixed", mixed)],
        1_000_000_000,
    );
    let want = expected(&bag, "/cmd_tl", None);
    assert!(want.len() >= 15);
    let node = Node::new(0).unwrap();
    let ty = "trajectory_msgs/msg/JointTrajectory";
    // The readers' QoS is set here in DDS terms, not through the player's mapping.
    use bagscope_replay::dds::rustdds::{policy, Duration as DdsDuration, QosPolicyBuilder};
    let reliable_dds = || {
        QosPolicyBuilder::new()
            .reliability(policy::Reliability::Reliable {
                max_blocking_time: DdsDuration::from_millis(100),
            })
            .history(policy::History::KeepAll)
    };
    let strict = reliable_dds()
        .durability(policy::Durability::TransientLocal)
        .deadline(policy::Deadline(DdsDuration::from_millis(200)))
        .build();
    let mut r_tl = node.reader_with_qos("/cmd_tl", ty, strict).unwrap();
    let mut r_mixed = node
        .reader_with_qos("/cmd_mixed", ty, reliable_dds().build())
        .unwrap();
    let report = dir.path().join("play.json");
    let mut child = play_cmd(&bag, &["--wait-for-subscribers", "20s"], &report)
        .spawn()
        .map(Player)
        .unwrap();
    let (mut got_tl, mut got_mixed) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut exited_at: Option<Instant> = None;
    while (got_tl.len() < want.len() || got_mixed.len() < want.len()) && Instant::now() < deadline {
        while let Ok(Some(s)) = r_tl.take_next_sample() {
            got_tl.push(s.value().to_stored());
        }
        while let Ok(Some(s)) = r_mixed.take_next_sample() {
            got_mixed.push(s.value().to_stored());
        }
        if exited_at.is_none() && child.try_wait().unwrap().is_some() {
            exited_at = Some(Instant::now());
        }
        if exited_at.is_some_and(|t| t.elapsed() > Duration::from_secs(3)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(child.wait().unwrap().code(), Some(0), "play exit code");
    let want: Vec<Vec<u8>> = want.into_iter().map(|(_, d)| d).collect();
    assert_eq!(got_tl, want, "transient-local reader with a deadline");
    assert_eq!(got_mixed, want, "reliable reader of the mixed topic");
    let r = read_report(&report);
    let by = |name: &str| {
        r["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["topic"] == name)
            .unwrap()
            .clone()
    };
    let q = &by("/cmd_tl")["qos"];
    assert_eq!(q["source"], "recorded");
    assert_eq!(q["durability"], "transient_local");
    assert_eq!(q["deadline_ns"], 100_000_000);
    assert_eq!(q["history"]["depth"], 5);
    assert_eq!(by("/cmd_mixed")["qos"]["source"], "default");
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "qos_mixed" && w["topic"] == "/cmd_mixed"),
        "{}",
        r["warnings"]
    );
}

/// A simulator reset (its /clock jumps back) does not stall playback: it goes on from where it
/// was, paced by the clock from its new value, and the report says so.
#[test]
#[ignore = "runs inside a network namespace (see netns_follow_clock_goes_on_after_a_reset)"]
fn inner_follow_clock_goes_on_after_a_reset() {
    assert_in_netns();
    let bag = command_bag();
    let want = expected(&bag, "/arm_cmd", Some(1_500_000_000));
    let node = Node::new(0).unwrap();
    let mut clock = node
        .writer("/clock", "rosgraph_msgs/msg/Clock", &best_effort(1))
        .unwrap();
    // Best effort (nothing is lost on the namespace's veth): this test is about pacing; delivery
    // is the reliable tests' business.
    let mut reader = node
        .reader(
            "/arm_cmd",
            "trajectory_msgs/msg/JointTrajectory",
            &best_effort(1000),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("play.json");
    let mut child = play_cmd(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "--duration",
            "1.5s",
            "--follow-clock",
            "/clock",
            "--wait-for-subscribers",
            "20s",
        ],
        &report,
    )
    .spawn()
    .map(Player)
    .unwrap();
    let mut sim: i64 = 100_000_000_000;
    let mut got: Vec<(i64, RawCdr)> = Vec::new(); // (sim time when received, message)
    let mut at_reset = 0;
    let mut reset_done = false;
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        assert!(
            Instant::now() < deadline,
            "stalled: {} of {} received",
            got.len(),
            want.len()
        );
        clock_tick(&node, &mut clock, &mut reader, sim, &mut got);
        if !reset_done && got.len() >= 5 {
            reset_done = true;
            at_reset = got.len();
            sim = 3_000_000_000; // the simulation restarts near zero
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
    assert!(reset_done, "playback ended before the reset");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let r = read_report(&report);
    assert_eq!(got.len(), want.len(), "report: {r}");
    for (i, ((_, g), (_, w))) in got.iter().zip(&want).enumerate() {
        assert_eq!(&g.to_stored(), w, "message {i}");
    }
    // After the reset it is still paced by the clock, not released all at once: the messages
    // after it span as much sim time as they span in the bag, less what a late label on the
    // first of them takes away (a message is labelled with the tick during which it was taken);
    // released at once they would span a tick or two.
    let (k, last) = (at_reset + 1, got.len() - 1);
    assert!(last > k + 10, "{} messages after the reset", last - k);
    let sim_span = got[last].0 - got[k].0;
    let bag_span = want[last].0 - want[k].0;
    assert!(
        sim_span >= bag_span / 2,
        "after the reset: {sim_span} ns of sim time for {bag_span} ns of bag"
    );
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "followed_clock_jumped_back"),
        "{}",
        r["warnings"]
    );
}

// ---------------------------------------------------------------- offline (no network)

/// (log time, topic, payload) of these topics, in log-time order (file order among ties).
fn messages(bag: &Path, topics: &[&str]) -> Vec<(i64, String, Vec<u8>)> {
    let src = Bag::open(bag).unwrap();
    let sel = src.select(topics).unwrap();
    let mut v = Vec::new();
    src.visit(&sel, |m| {
        v.push((
            m.log_time_ns,
            src.topics[m.topic].name.clone(),
            m.data.to_vec(),
        ))
    });
    v.sort_by_key(|(t, _, _)| *t);
    v
}

/// `bagscope play BAG ARGS --no-publish --json --out OUT`, which must succeed; its report.
fn play_offline(bag: &Path, args: &[&str], out: &Path) -> serde_json::Value {
    let o = Command::new(bin())
        .arg("play")
        .arg(bag)
        .args(args)
        .args(["--no-publish", "--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `--out --no-publish`: the retimed bag holds the window's messages, byte-identical, with log
/// times on the schedule `start + (t − t_begin)/rate`.
#[test]
fn offline_out_is_the_schedule() {
    let _alone = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("retimed.mcap");
    let r = play_offline(
        &bag,
        &[
            "--topics",
            "/arm_cmd",
            "/joint_states",
            "--rate",
            "2",
            "--start-offset",
            "1s",
            "--duration",
            "3s",
        ],
        &out,
    );
    assert_eq!(r["mode"], "offline");

    let all = messages(&bag, &["/arm_cmd", "/joint_states"]);
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
    let w0 = window[0].0;
    // t_begin is the first message played: it is written at the run's start, to the
    // nanosecond (the offset chooses the window, it adds no wait).
    assert!(
        (g0 - start).abs() <= 1,
        "first log time {g0}, want the start {start}"
    );
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

/// `--dry-run --out`: paced in real time, the written log times are the schedule (exact
/// recorded intervals), the publish times when each went out (at or after it).
#[test]
fn paced_out_logs_the_schedule_and_publish_times_the_sends() {
    // Paced in real time: not beside the DDS timing tests.
    let _one_at_a_time = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("paced.mcap");
    let o = Command::new(bin())
        .arg("play")
        .arg(&bag)
        .args([
            "--topics",
            "/arm_cmd",
            "--duration",
            "1s",
            "--dry-run",
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
    let want = expected(&bag, "/arm_cmd", Some(1_000_000_000));
    let paced = Bag::open(&out).unwrap();
    let mut got: Vec<(i64, i64, Vec<u8>)> = Vec::new();
    paced.visit(&paced.all_topics(), |m| {
        got.push((m.log_time_ns, m.publish_time_ns.unwrap(), m.data.to_vec()))
    });
    assert_eq!(got.len(), want.len());
    let (g0, w0) = (got[0].0, want[0].0);
    let mut after = Vec::new();
    for ((lt, pt, d), (wt, wd)) in got.iter().zip(&want) {
        assert_eq!(d, wd);
        assert!(
            (lt - g0 - (wt - w0)).abs() <= 1,
            "log time off the schedule"
        );
        // Never before the schedule (-1 ms: the wall clock is read apart from the monotonic
        // one and may be slewed); late only by a scheduling delay, which other tests running
        // beside this one can stretch for a message or two.
        assert!(
            (-1_000_000..500_000_000).contains(&(pt - lt)),
            "publish time {} ns after the scheduled time",
            pt - lt
        );
        after.push(pt - lt);
    }
    after.sort_unstable();
    let median = after[after.len() / 2];
    assert!(
        median < 10_000_000,
        "publish times {median} ns after the schedule at the median"
    );
}

/// An output that cannot take its final name (here: a directory is in the way) is an error
/// naming it, and its `.partial` is removed.
#[test]
fn failed_out_leaves_no_partial() {
    let _alone = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("taken");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), b"x").unwrap();
    let o = Command::new(bin())
        .arg("play")
        .arg(&bag)
        .args([
            "--topics",
            "/arm_cmd",
            "--duration",
            "1s",
            "--no-publish",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("taken"), "{err}");
    assert!(
        !bagscope_replay::partial_path(&out).exists(),
        ".partial left behind"
    );
    assert!(out.join("keep").exists());
}

/// `--start-paused` in a terminal (a pseudo-terminal from `script`): nothing goes out until a
/// key says so; each `s` publishes exactly one message, `q` stops (exit 3, interrupted).
#[test]
fn keyboard_steps_while_paused_and_quits() {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let _one_at_a_time = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("keys.json");
    let q = |p: &str| format!("'{}'", p.replace('\'', "'\\''"));
    let cmd = format!(
        "{} play {} --topics /arm_cmd --start-paused --dry-run --report {}",
        q(bin()),
        q(&bag.display().to_string()),
        q(&report.display().to_string())
    );
    let mut child = match Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => Player(c),
        Err(e) => panic!("`script` (bsdutils) is needed for a terminal: {e}"),
    };
    // What the terminal shows (the progress bar), read as it comes.
    let screen = Arc::new(Mutex::new(String::new()));
    let mut out = child.stdout.take().unwrap();
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        while let Ok(n) = out.read(&mut b) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&b[..n]));
        }
    });
    let wait_for = |what: &str| {
        let until = Instant::now() + Duration::from_secs(30);
        while !screen.lock().unwrap().contains(what) {
            assert!(Instant::now() < until, "the terminal never showed {what:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut keys = child.stdin.take().unwrap();
    let mut press = |k: &[u8]| {
        keys.write_all(k).unwrap();
        keys.flush().unwrap();
    };
    // Each key only once the bar shows the state it acts on.
    wait_for("0 would be published  [paused");
    for n in 1..=3 {
        press(b"s");
        wait_for(&format!(" {n} would be published  [paused"));
    }
    press(b"q");
    let until = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < until, "play did not quit on q");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(3), "quit by q is an interruption");
    let r = read_report(&report);
    assert_eq!(r["published"], 3, "three steps, three messages");
    assert_eq!(r["interrupted"], true);
}

#[test]
fn usage_errors_exit_2() {
    let _alone = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.mcap");
    let x = x.to_str().unwrap();
    let bad_qos = dir.path().join("qos.yaml");
    std::fs::write(&bad_qos, "/arm_cmd:\n  reliablity: best_effort\n").unwrap();
    let bad_qos = bad_qos.to_str().unwrap();
    // (arguments, exit code, what the message must name)
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["--rate", "0", "--no-publish", "--out", x], 2, "--rate"),
        // An unknown topic is an error naming it, as for every command (exit 1).
        (
            vec!["--topics", "/nope", "--no-publish", "--out", x],
            1,
            "/nope",
        ),
        (vec!["--loop", "--no-publish", "--out", x], 2, "--loop"),
        // --duration bounds each pass, not the output.
        (
            vec!["--loop", "--duration", "1s", "--no-publish", "--out", x],
            2,
            "--loop",
        ),
        (vec!["--remap", "nocolon"], 2, "nocolon"),
        (
            vec!["--remap", "/arm_cmd:=bad name", "--no-publish", "--out", x],
            2,
            "bad name",
        ),
        (
            vec!["--qos-overrides", bad_qos, "--no-publish", "--out", x],
            2,
            "reliablity",
        ),
        (
            vec!["--topics", "/arm_cmd", "--follow-clock", "/arm_cmd"],
            2,
            "--follow-clock",
        ),
    ];
    for (args, want, names) in cases {
        let o = Command::new(bin())
            .arg("play")
            .arg(&bag)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(want), "{args:?}: {err}");
        assert!(
            err.contains(names),
            "{args:?}: message does not name {names:?}: {err}"
        );
    }
    assert!(
        !Path::new(&format!("{x}.partial")).exists() && !Path::new(x).exists(),
        "a failed run left an output behind"
    );
}

/// A schedule that leaves i64 nanoseconds since the epoch (past 2262-04-11) is refused with
/// the parameter named, nothing written: a huge `--delay`, and a tiny `--rate` both up front
/// (log order: the span is known) and while playing (publish order: it is not). Before, the
/// first wrote every message at log time 0 and the second most of them (exit 0), or an
/// overflow panicked. A slow rate that fits is written exactly, nothing saturated.
#[test]
fn schedules_past_the_i64_range_are_refused() {
    let _alone = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.mcap");
    let xs = x.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--delay", "9223372036854775807ns"],
            "--delay 9223372036854775807ns",
        ),
        (&["--rate", "1e-9"], "--rate 0.000000001"),
        (
            &["--rate", "1e-9", "--order", "publish"],
            "--rate 0.000000001",
        ),
    ];
    for (args, names) in cases {
        let o = Command::new(bin())
            .arg("play")
            .arg(&bag)
            .args(["--topics", "/arm_cmd", "--no-publish", "--out", xs])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(names) && err.contains("2262-04-11"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            !x.exists() && !Path::new(&format!("{xs}.partial")).exists(),
            "{args:?}: a refused run left an output"
        );
    }
    // A rate that stretches the topic's span to 100 years: still inside the range, written
    // as the schedule says (to the nanosecond the f64 division allows).
    let src = messages(&bag, &["/arm_cmd"]);
    let span = (src[src.len() - 1].0 - src[0].0) as f64;
    let rate = format!("{:e}", span / (100.0 * 365.25 * 86400e9));
    let r = play_offline(&bag, &["--topics", "/arm_cmd", "--rate", &rate], &x);
    assert_eq!(r["mode"], "offline");
    let rate: f64 = rate.parse().unwrap();
    let got = messages(&x, &["/arm_cmd"]);
    assert_eq!(got.len(), src.len());
    let (s0, g0) = (src[0].0, got[0].0);
    for ((st, _, sd), (gt, _, gd)) in src.iter().zip(&got) {
        assert_eq!(sd, gd);
        let want = ((st - s0) as f64 / rate).round() as i64;
        assert!(
            (gt - g0 - want).abs() <= 1,
            "offset {} want {want}",
            gt - g0
        );
        assert!(*gt > 0);
    }
}

/// ROS 2's DDS variables, when malformed, are usage errors naming the variable (exit 2), and
/// so is `ROS_AUTOMATIC_DISCOVERY_RANGE=OFF` when publishing: nobody could receive. None of
/// these cases publishes (`--no-publish`, or an unknown topic that stops a player that let
/// `OFF` through before it reaches the network).
#[test]
fn dds_environment_usage_errors_exit_2() {
    let _alone = serial();
    let bag = command_bag();
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.mcap");
    let x = x.to_str().unwrap();
    let offline = ["--no-publish", "--out", x];
    // (variable, value, arguments, exit code, what the message must name)
    let cases: Vec<(&str, &str, &[&str], i32, &str)> = vec![
        ("ROS_DOMAIN_ID", "abc", &offline, 2, "ROS_DOMAIN_ID"),
        (
            "ROS_LOCALHOST_ONLY",
            "yes",
            &offline,
            2,
            "ROS_LOCALHOST_ONLY",
        ),
        (
            "ROS_AUTOMATIC_DISCOVERY_RANGE",
            "NEARBY",
            &offline,
            2,
            "ROS_AUTOMATIC_DISCOVERY_RANGE",
        ),
        (
            "ROS_AUTOMATIC_DISCOVERY_RANGE",
            "OFF",
            &["--topics", "/nope"],
            2,
            "OFF",
        ),
        // Publishing nothing, OFF is no obstacle.
        ("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF", &offline, 0, ""),
    ];
    for (var, value, args, want, names) in cases {
        let _ = std::fs::remove_file(x);
        let o = Command::new(bin())
            .arg("play")
            .arg(&bag)
            .args(args)
            .env_remove("ROS_DOMAIN_ID")
            .env_remove("ROS_LOCALHOST_ONLY")
            .env_remove("ROS_AUTOMATIC_DISCOVERY_RANGE")
            .env(var, value)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let what = format!("{var}={value} {args:?}");
        assert_eq!(o.status.code(), Some(want), "{what}: {err}");
        assert!(
            err.contains(names),
            "{what}: message does not name {names:?}: {err}"
        );
        if want == 2 {
            assert!(!Path::new(x).exists(), "{what}: wrote an output");
        }
    }
}

/// `--order stamp` on a bag with split clocks: /joint_states is stamped on sim time while
/// /gripper_cmd has no header and the recorder logs wall time. The headerless messages are
/// placed by their log time shifted onto the stamps' clock, so they keep their place among
/// the stamped ones (not 1.7e9 s away from them).
#[test]
fn offline_stamp_order_shifts_headerless_messages_onto_the_stamps_clock() {
    let _alone = serial();
    let bag = root().join("bags/arm_split");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("by_stamp.mcap");
    let r = play_offline(
        &bag,
        &[
            "--topics",
            "/joint_states",
            "/gripper_cmd",
            "--order",
            "stamp",
        ],
        &out,
    );
    assert!(
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "schedule_fallback" && w["topic"] == "/gripper_cmd"),
        "{}",
        r["warnings"]
    );
    // Input: (log time, topic) in log order; output: scheduled time per message, in order.
    let input = messages(&bag, &["/joint_states", "/gripper_cmd"]);
    let retimed = Bag::open(&out).unwrap();
    // Scheduled times per topic, in order (the k-th output message of a topic is its k-th
    // input message: checked byte for byte).
    let mut sched: std::collections::BTreeMap<String, Vec<(i64, Vec<u8>)>> = Default::default();
    retimed.visit(&retimed.all_topics(), |m| {
        sched
            .entry(retimed.topics[m.topic].name.clone())
            .or_default()
            .push((m.log_time_ns, m.data.to_vec()));
    });
    assert_eq!(r["published"].as_u64(), Some(input.len() as u64));
    let all: Vec<i64> = sched.values().flatten().map(|(t, _)| *t).collect();
    let span = all.iter().max().unwrap() - all.iter().min().unwrap();
    assert!(
        span < 30_000_000_000,
        "schedule spans {} s",
        span as f64 / 1e9
    );
    // Each gripper command comes 0–13 ms (one state period) after the state logged just
    // before it, as in the recording.
    let mut next: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut last_state: Option<i64> = None;
    let mut checked = 0;
    for (_, topic, data) in &input {
        let k = next.entry(topic.as_str()).or_default();
        let (at, d) = &sched[topic.as_str()][*k];
        *k += 1;
        assert_eq!(d, data, "{topic} message {k} differs");
        if topic == "/joint_states" {
            last_state = Some(*at);
        } else if let Some(s) = last_state {
            let d = at - s;
            assert!(
                (0..=13_000_000).contains(&d),
                "gripper command {d} ns after its state"
            );
            checked += 1;
        }
    }
    assert!(checked >= 100, "{checked} gripper commands checked");
}

/// `--clock-if-missing`: a bag without /clock gets one made (the report's `clock` block counts
/// what was published); a bag with its own plays that one as a topic and makes none.
#[test]
#[ignore = "runs inside a network namespace (see netns_clock_if_missing_plays_the_bags_own_or_makes_one)"]
fn inner_clock_if_missing_plays_the_bags_own_or_makes_one() {
    assert_in_netns();
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, has_clock) in [("arm_wall", false), ("arm_sim", true)] {
        let bag = root.join("bags").join(name);
        let report = dir.path().join(format!("{name}.json"));
        let o = play_cmd(
            &bag,
            &[
                "--clock-if-missing",
                "50",
                "--rate",
                "4",
                "--duration",
                "2s",
            ],
            &report,
        )
        .status()
        .unwrap();
        assert_eq!(o.code(), Some(0), "{name}");
        let r: serde_json::Value = read_report(&report);
        let own = r["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["topic"] == "/clock")
            .map(|t| t["published"].as_u64().unwrap());
        if has_clock {
            assert!(
                r["clock"].is_null(),
                "{name}: a /clock was made beside the bag's own"
            );
            assert!(
                own.is_some_and(|n| n > 0),
                "{name}: the bag's own /clock was not played"
            );
        } else {
            assert!(own.is_none(), "{name} has no /clock topic");
            let made = r["clock"]["published"].as_u64().unwrap_or(0);
            // ~0.5 s of wall time at 50 Hz (rate 4 over 2 s of bag).
            assert!(
                (15..=40).contains(&made),
                "{name}: {made} /clock messages made"
            );
        }
    }
}
