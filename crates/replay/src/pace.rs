//! When each message goes out: targets on one monotonic origin (shifted by pauses, never by
//! accumulated sleeps), or on an external clock topic; plus the `/clock` publisher.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::dds::{clock_payload, parse_clock, Node, RawWriter};
use crate::qos::{Durability, History, Reliability, TopicQos};
use crate::steal::{CpuSample, StealProbe};
use crate::{Control, ReplayError};

/// Below this much time left, stop sleeping and yield until the target: `thread::sleep`
/// overshoots by ~0.1 ms typically, and on a virtual machine whose idle vCPU the host has
/// descheduled, by up to 3.4 ms one time in a thousand (measured on the 2-core CI VM; a busy
/// loop there sees gaps under 0.8 ms). Spinning the last 3 ms costs ~6% of a core at 20 Hz.
const SPIN_NS: u64 = 3_000_000;
/// Sleeps shorter than this are not worth their overshoot.
const MIN_SLEEP_NS: u64 = 200_000;
/// Longest single sleep, so that stop and pause are answered quickly.
const MAX_SLEEP: Duration = Duration::from_millis(20);

pub enum Waited {
    /// Go. `due`: the instant the message was due (its target, or when it was released);
    /// `aimed`: the instant the wait was for (`due` less the early shift, see
    /// [`crate::wire`]); `spun`: when the wait spun up to it, the waiting thread's last CPU
    /// sample before it (see [`crate::steal`]), against which the send's sample tells the
    /// machine's share.
    Ready {
        due: Instant,
        aimed: Instant,
        spun: Option<CpuSample>,
    },
    Stopped,
    /// The message would be due past the last time i64 nanoseconds hold (see
    /// [`crate::LAST_TIME`]).
    OutOfRange,
}

impl Waited {
    /// Released at `at`, no earlier than due, with no spin sample.
    fn at(at: Instant) -> Waited {
        Waited::Ready {
            due: at,
            aimed: at,
            spun: None,
        }
    }
}

#[derive(Debug)]
struct TbState {
    origin: Instant,
    origin_unix_ns: i64,
    /// `origin_unix_ns` when playback started (pauses do not move it).
    start_unix_ns: i64,
    paused_since: Option<Instant>,
    /// Followed clock's value at the origin, and when paused, its value at the pause.
    ext_origin_ns: i64,
    ext_paused_at: Option<i64>,
    /// Bag time of the schedule's zero, once known.
    begin_bag_ns: Option<i64>,
    /// Schedule offset where the current `--loop` pass began (bag time restarts there).
    loop_base_ns: i64,
}

/// The schedule's origin, shared with the `/clock` thread.
#[derive(Debug, Clone)]
pub struct Timebase {
    st: Arc<Mutex<TbState>>,
    rate: f64,
    delay_ns: i64,
}

/// Wall time now, ns since the Unix epoch (0 before it).
pub(crate) fn unix_now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn dur(ns: i64) -> Duration {
    Duration::from_nanos(ns.max(0) as u64)
}

impl Timebase {
    /// A schedule played at `rate` (bag seconds per wall second) whose first message is due
    /// `delay_ns` after the origin; the origin is now until [`Timebase::start_now`] sets it.
    pub fn new(rate: f64, delay_ns: i64) -> Timebase {
        Timebase {
            st: Arc::new(Mutex::new(TbState {
                origin: Instant::now(),
                origin_unix_ns: unix_now_ns(),
                start_unix_ns: unix_now_ns(),
                paused_since: None,
                ext_origin_ns: 0,
                ext_paused_at: None,
                begin_bag_ns: None,
                loop_base_ns: 0,
            })),
            rate,
            delay_ns,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut TbState) -> R) -> R {
        let mut g = match self.st.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut g)
    }

    /// Sets the origin (schedule offset 0, before the delay) to now.
    pub fn start_now(&mut self) {
        self.with(|s| {
            s.origin = Instant::now();
            s.origin_unix_ns = unix_now_ns();
            s.start_unix_ns = s.origin_unix_ns;
        });
    }

    /// Wall time when playback started, ns since the epoch.
    pub fn started_unix_ns(&self) -> i64 {
        self.with(|s| s.start_unix_ns)
    }

    /// Sets the origin to now and to `clock_ns` on the followed clock.
    pub fn start_external(&mut self, clock_ns: i64) {
        self.start_now();
        self.with(|s| s.ext_origin_ns = clock_ns);
    }

    /// The bag time of the schedule's zero (the first message's key); only the first call
    /// counts.
    pub fn set_begin(&self, bag_ns: i64) {
        self.with(|s| {
            s.begin_bag_ns.get_or_insert(bag_ns);
        });
    }

    /// A new `--loop` pass starts at schedule offset `offset_ns`.
    pub fn set_loop_base(&self, offset_ns: i64) {
        self.with(|s| s.loop_base_ns = offset_ns);
    }

    /// Pauses the schedule: while paused the bag time stands still, and the time spent paused
    /// moves the origin when playback resumes.
    pub fn pause(&self) {
        self.with(|s| {
            s.paused_since.get_or_insert_with(Instant::now);
        });
    }

    fn resume(&self) {
        self.with(|s| {
            if let Some(p) = s.paused_since.take() {
                // Both origins move, so the wall times written for --out stay the targets.
                let e = p.elapsed();
                s.origin += e;
                s.origin_unix_ns += e.as_nanos() as i64;
            }
        });
    }

    /// Monotonic instant at which schedule offset `offset_ns` is due.
    fn target(&self, offset_ns: i64) -> Instant {
        self.with(|s| s.origin + dur(self.delay_ns) + dur(offset_ns))
    }

    /// `at` on the wall clock (ns since the epoch) as the schedule maps it: the monotonic time
    /// since the origin added to the wall time at the origin. The same mapping gives
    /// [`Timebase::scheduled_unix_ns`], so a publish instant mapped here minus its scheduled
    /// time is exactly its timing error.
    pub fn unix_at(&self, at: Instant) -> i64 {
        self.with(|s| {
            if at >= s.origin {
                s.origin_unix_ns + (at - s.origin).as_nanos() as i64
            } else {
                s.origin_unix_ns - (s.origin - at).as_nanos() as i64
            }
        })
    }

    /// Wall time (ns since the epoch) at which `offset_ns` is due: the log time written for
    /// it offline. `None` past the last time i64 nanoseconds hold (a huge `--delay`, a tiny
    /// `--rate`): never a wrapped or saturated time.
    pub fn scheduled_unix_ns(&self, offset_ns: i64) -> Option<i64> {
        self.with(|s| {
            s.origin_unix_ns
                .checked_add(self.delay_ns)?
                .checked_add(offset_ns)
        })
    }

    /// Bag time now (frozen while paused): what `/clock` says.
    pub fn bag_time_now(&self, begin_ns: i64) -> i64 {
        self.with(|s| {
            let now = s.paused_since.unwrap_or_else(Instant::now);
            let pass_start = s.origin + dur(self.delay_ns) + dur(s.loop_base_ns);
            let since = now.saturating_duration_since(pass_start);
            // What /clock says, not a due time: held at the end of the i64 range rather than
            // wrapped, for a rate that would carry it there within one pass.
            begin_ns.saturating_add((since.as_nanos() as f64 * self.rate) as i64)
        })
    }

    fn begin(&self) -> Option<i64> {
        self.with(|s| s.begin_bag_ns)
    }

    /// Publish the next message now and move the origin so that it was due now.
    fn step_to(&self, offset_ns: i64) -> Instant {
        let now = Instant::now();
        let target = self.target(offset_ns);
        self.with(|s| {
            if target > now {
                if let Some(o) = s.origin.checked_sub(target - now) {
                    s.origin = o;
                    s.origin_unix_ns -= (target - now).as_nanos() as i64;
                }
            } else {
                s.origin += now - target;
                s.origin_unix_ns += (now - target).as_nanos() as i64;
            }
            s.paused_since = Some(now);
        });
        now
    }

    /// Waits on the monotonic clock until `early_ns` before `offset_ns` is due. `probe`
    /// belongs to the calling thread and is read on every turn of the spin, so that an overrun
    /// of the target can be split into the machine's share (steal) and the player's.
    pub fn wait(
        &self,
        offset_ns: i64,
        early_ns: i64,
        ctl: &Control,
        probe: &mut StealProbe,
    ) -> Waited {
        // The last sample taken while spinning before the target. A sleep clears it: across
        // a sleep the accounting cannot tell the machine's pauses from the player's own.
        let mut spun: Option<CpuSample> = None;
        loop {
            if ctl.stopped() {
                return Waited::Stopped;
            }
            if ctl.paused() {
                self.pause();
                if ctl.take_step() {
                    return Waited::at(self.step_to(offset_ns));
                }
                spun = None;
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            self.resume();
            let due = self.target(offset_ns);
            let target = due.checked_sub(dur(early_ns)).unwrap_or(due);
            let now = Instant::now();
            if now >= target {
                return Waited::Ready {
                    due,
                    aimed: target,
                    spun,
                };
            }
            let left = target - now;
            if left > Duration::from_nanos(SPIN_NS + MIN_SLEEP_NS) {
                spun = None;
                std::thread::sleep((left - Duration::from_nanos(SPIN_NS)).min(MAX_SLEEP));
            } else {
                // A sample that is already past the target would hide the pause before it.
                if let Some(s) = probe.sample().filter(|s| s.at < target) {
                    spun = Some(s);
                }
                std::thread::yield_now();
            }
        }
    }

    /// When `offset_ns` is due on the followed clock's continuous time (see [`ExternalClock`]);
    /// `None` past the i64 range.
    fn ext_due(&self, offset_ns: i64) -> Option<i64> {
        self.with(|s| {
            s.ext_origin_ns
                .checked_add(self.delay_ns)?
                .checked_add(offset_ns)
        })
    }

    /// Waits until the followed clock passes `origin + delay + offset_ns`; returns the
    /// arrival of the clock message that passed it.
    pub fn wait_external(&self, offset_ns: i64, ctl: &Control, ext: &ExternalClock) -> Waited {
        loop {
            if ctl.stopped() {
                return Waited::Stopped;
            }
            let latest = ext.latest().map(|(t, _)| t);
            if ctl.paused() {
                // The schedule stands still while the user pauses, even if the clock runs.
                self.with(|s| {
                    if s.ext_paused_at.is_none() {
                        s.ext_paused_at = latest;
                    }
                });
                if ctl.take_step() {
                    let now = Instant::now();
                    if let Some(l) = latest {
                        let Some(due) = self.ext_due(offset_ns) else {
                            return Waited::OutOfRange;
                        };
                        self.with(|s| {
                            s.ext_origin_ns += l - due;
                            s.ext_paused_at = Some(l);
                        });
                    }
                    return Waited::at(now);
                }
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            self.with(|s| {
                if let (Some(p), Some(l)) = (s.ext_paused_at.take(), latest) {
                    s.ext_origin_ns += l - p;
                }
            });
            let Some(due) = self.ext_due(offset_ns) else {
                return Waited::OutOfRange;
            };
            if let Some(at) = ext.passed(due) {
                return Waited::at(at);
            }
            ext.wait_change(MAX_SLEEP);
        }
    }
}

#[derive(Default)]
struct ExtState {
    /// Recent (continuous clock value, arrival) pairs, oldest first.
    history: VecDeque<(i64, Instant)>,
    received: u64,
    backwards: u64,
    /// Latest value as received.
    last_raw: Option<i64>,
    /// Sum of the backwards jumps so far: continuous value = received value + this.
    jumped_ns: i64,
}

/// A followed clock going back by more than this is a reset; less (two clock publishers a
/// little out of step, a reordered sample) is ignored: the sample is dropped.
const RESET_NS: i64 = 250_000_000;

impl ExtState {
    fn push(&mut self, t: i64, arrived: Instant) {
        if let Some(last) = self.last_raw {
            if t < last && last - t <= RESET_NS {
                return;
            }
            if t < last {
                // A reset (sim restarted, or a new world): the schedule goes on from where it
                // was, paced by the clock from its new value, instead of waiting for the
                // clock to climb back past the old one.
                self.backwards += 1;
                self.jumped_ns = self.jumped_ns.saturating_add(last - t);
            }
        }
        self.last_raw = Some(t);
        self.received += 1;
        self.history
            .push_back((t.saturating_add(self.jumped_ns), arrived));
        if self.history.len() > 1024 {
            self.history.pop_front();
        }
    }
}

/// A clock topic followed over DDS (a simulator's `/clock`). Its values are kept as a
/// continuous time: where the clock jumps back, later values are shifted by the jump, so the
/// schedule continues from where it was.
pub struct ExternalClock {
    st: Arc<(Mutex<ExtState>, Condvar)>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The clock topic followed.
    pub topic: String,
}

impl ExternalClock {
    /// Subscribes to `topic` (best effort, like rclcpp's clock subscription, so that it
    /// matches reliable and best-effort clock publishers alike).
    pub fn follow(
        node: Arc<Node>,
        topic: &str,
        ctl: &Control,
    ) -> Result<ExternalClock, ReplayError> {
        let _ = ctl;
        let qos = TopicQos::new(
            Reliability::BestEffort,
            Durability::Volatile,
            History::KeepLast(100),
            "clock",
        );
        let mut reader = node.reader(topic, "rosgraph_msgs/msg/Clock", &qos)?;
        let st: Arc<(Mutex<ExtState>, Condvar)> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (st2, stop2) = (st.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("follow-clock".into())
            .spawn(move || {
                let _node = node; // keep the participant alive as long as the reader
                while !stop2.load(Ordering::Relaxed) {
                    let mut got = false;
                    while let Ok(Some(sample)) = reader.take_next_sample() {
                        let arrived = Instant::now();
                        got = true;
                        if let Some(t) = parse_clock(sample.value()) {
                            let (m, cv) = &*st2;
                            let mut g = match m.lock() {
                                Ok(g) => g,
                                Err(p) => p.into_inner(),
                            };
                            g.push(t, arrived);
                            cv.notify_all();
                        }
                    }
                    if !got {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            })
            .map_err(|e| ReplayError::Dds(format!("starting the clock reader: {e}")))?;
        Ok(ExternalClock {
            st,
            stop,
            thread: Mutex::new(Some(thread)),
            topic: topic.to_string(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ExtState> {
        match self.st.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Latest continuous clock value and when it arrived.
    pub fn latest(&self) -> Option<(i64, Instant)> {
        self.lock().history.back().copied()
    }

    /// Latest clock value as received (what receivers on that clock see as "now").
    pub fn latest_raw(&self) -> Option<i64> {
        self.lock().last_raw
    }

    /// The received clock's value at which schedule offset `offset_ns` is due.
    pub fn due_raw(&self, tb: &Timebase, offset_ns: i64) -> Option<i64> {
        tb.ext_due(offset_ns)?.checked_sub(self.lock().jumped_ns)
    }

    /// Arrival of the first clock message at or past `due` (continuous time).
    fn passed(&self, due: i64) -> Option<Instant> {
        let g = self.lock();
        let &(last, _) = g.history.back()?;
        if last < due {
            return None;
        }
        // Walk back over the monotonic run that ends at the latest value.
        let mut at = None;
        for &(t, a) in g.history.iter().rev() {
            if t < due {
                break;
            }
            at = Some(a);
        }
        at
    }

    fn wait_change(&self, timeout: Duration) {
        let (m, cv) = &*self.st;
        let g = match m.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let n = g.received;
        let _ = cv.wait_timeout_while(g, timeout, |s| s.received == n);
    }

    /// Waits for the first clock message; false if stopped first.
    pub fn wait_first(&self, ctl: &Control) -> bool {
        while !ctl.stopped() {
            if self.latest().is_some() {
                return true;
            }
            self.wait_change(MAX_SLEEP);
        }
        false
    }

    /// (messages received, backwards jumps seen).
    pub fn counts(&self) -> (u64, u64) {
        let g = self.lock();
        (g.received, g.backwards)
    }

    /// Stops following the clock and joins the reader thread (also done on drop).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let h = match self.thread.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}

impl Drop for ExternalClock {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The `/clock` publisher thread (bag time at a fixed rate, as `ros2 bag play --clock`).
pub(crate) struct ClockThread<'s> {
    stop: Arc<AtomicBool>,
    published: Arc<AtomicU64>,
    handle: ScopedJoinHandle<'s, ()>,
}

impl ClockThread<'_> {
    /// Stops the thread; how many clock messages it sent.
    pub(crate) fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
        self.published.load(Ordering::Relaxed)
    }
}

/// The `/clock` writer (best effort, keep last 1, as a simulator's), made before play waits
/// for subscribers so that nodes waiting for the clock discover it during that wait and the
/// first ticks are not lost to a late match.
pub(crate) fn clock_writer(node: &Node, topic: &str) -> Result<RawWriter, ReplayError> {
    let qos = TopicQos::new(
        Reliability::BestEffort,
        Durability::Volatile,
        History::KeepLast(1),
        "clock",
    );
    node.writer(topic, "rosgraph_msgs/msg/Clock", &qos)
}

pub(crate) fn spawn_clock<'s, 'e>(
    s: &'s Scope<'s, 'e>,
    node: Arc<Node>,
    mut w: RawWriter,
    hz: f64,
    tb: &Timebase,
) -> Result<ClockThread<'s>, ReplayError> {
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(AtomicU64::new(0));
    let (stop2, pub2, tb) = (stop.clone(), published.clone(), tb.clone());
    let period = Duration::from_secs_f64(1.0 / hz);
    let handle = s.spawn(move || {
        let origin = Instant::now();
        let mut tick = 0u32;
        while !stop2.load(Ordering::Relaxed) {
            if let Some(begin) = tb.begin() {
                let p = clock_payload(tb.bag_time_now(begin));
                if w.send(node.publisher(), &p).is_ok() {
                    pub2.fetch_add(1, Ordering::Relaxed);
                }
            }
            tick = tick.saturating_add(1);
            // Ticks on one origin, so the rate does not drift with the work per tick.
            let next = origin + period * tick;
            while !stop2.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                std::thread::sleep((next - now).min(MAX_SLEEP));
            }
        }
    });
    Ok(ClockThread {
        stop,
        published,
        handle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An early wait returns at the instant aimed at, `early_ns` before the message is due,
    /// and reports both; the wall-clock mapping of an instant minus the scheduled wall time is
    /// exactly the instant's distance from the target (what `--out` and the report share).
    #[test]
    fn early_wait_aims_before_the_target_and_the_wall_mapping_is_exact() {
        let mut tb = Timebase::new(1.0, 1_000_000);
        tb.start_now();
        let ctl = Control::new(false);
        let mut probe = StealProbe::this_thread();
        let Waited::Ready { due, aimed, .. } = tb.wait(20_000_000, 5_000_000, &ctl, &mut probe)
        else {
            panic!("stopped");
        };
        let now = Instant::now();
        assert_eq!(due - aimed, Duration::from_millis(5));
        assert!(now >= aimed);
        let scheduled = tb.scheduled_unix_ns(20_000_000).unwrap();
        assert_eq!(tb.unix_at(due), scheduled);
        let later = due + Duration::from_nanos(123_457);
        assert_eq!(tb.unix_at(later) - scheduled, 123_457);
        assert_eq!(tb.unix_at(aimed) - scheduled, -5_000_000);
        // Without an early shift the wait is for the target itself.
        let Waited::Ready { due, aimed, .. } = tb.wait(21_000_000, 0, &ctl, &mut probe) else {
            panic!("stopped");
        };
        assert_eq!(due, aimed);
        assert!(Instant::now() >= due);
    }

    /// A due time past the i64 range is `None`, never wrapped or saturated: a huge delay, a
    /// huge offset, and the last representable time itself.
    #[test]
    fn due_times_past_the_i64_range_are_none() {
        let mut tb = Timebase::new(1.0, i64::MAX);
        tb.start_now();
        assert_eq!(tb.scheduled_unix_ns(0), None);
        assert_eq!(tb.ext_due(0), Some(i64::MAX)); // the followed clock at 0 at the origin
        assert_eq!(tb.ext_due(1), None);
        let mut tb = Timebase::new(1.0, 0);
        tb.start_now();
        let now = tb.started_unix_ns();
        assert_eq!(tb.scheduled_unix_ns(i64::MAX - now), Some(i64::MAX));
        assert_eq!(tb.scheduled_unix_ns(i64::MAX - now + 1), None);
        assert_eq!(tb.scheduled_unix_ns(1_000), Some(now + 1_000));
    }

    #[test]
    fn followed_clock_is_continuous_across_resets_and_ignores_small_regressions() {
        let t = Instant::now();
        let mut st = ExtState::default();
        for v in [10_000, 10_010, 10_020] {
            st.push(v * 1_000_000, t);
        }
        // 10 ms back (two publishers out of step): dropped, not a reset.
        st.push(10_010_000_000, t);
        assert_eq!((st.backwards, st.received), (0, 3));
        // The simulation restarts at 5 ms: continuous time goes on from 10.02 s.
        st.push(5_000_000, t);
        st.push(15_000_000, t);
        assert_eq!(st.backwards, 1);
        assert_eq!(st.last_raw, Some(15_000_000));
        let cont: Vec<i64> = st.history.iter().map(|(v, _)| v / 1_000_000).collect();
        assert_eq!(cont, [10_000, 10_010, 10_020, 10_020, 10_030]);
    }
}
