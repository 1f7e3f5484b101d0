//! How much of a late publish the machine, not the player, is to blame for.
//!
//! The player spins (yields) through the last milliseconds before each target, so it is late
//! only when it is not running. On a virtual machine the hypervisor takes the vCPU away now
//! and then ("steal time"): during the DDS tests on the 2-core CI VM, /proc/stat showed 4–13%
//! of all CPU time stolen, in pauses of up to 13 ms, which no user-space player can beat.
//! A Linux guest with a paravirtualised steal clock keeps steal out of a thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`). So between two samples of a thread that stayed switched in
//! (no context switch: it neither slept, blocked, nor yielded to another thread), wall time
//! minus the thread's CPU time is time the machine kept it off its CPU. The play report takes
//! that out of each publish's lateness, so a user (and the timing test) can tell the player's
//! own error from the host's. Where the kernel does not keep steal out, nothing is taken out.

use std::marker::PhantomData;
use std::time::Instant;

/// One reading of the calling thread's CPU accounting.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    /// When it was taken, on the monotonic clock.
    pub at: Instant,
    /// The thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, brought up to date by the read).
    pub cpu_ns: u64,
    /// Context switches so far, voluntary and involuntary (`getrusage(RUSAGE_THREAD)`).
    pub switches: u64,
}

/// Samples the CPU accounting of the thread that created it.
pub struct StealProbe {
    available: bool,
    /// The readings are of the calling thread: keep the probe on the thread that made it.
    _not_send: PhantomData<*const ()>,
}

impl StealProbe {
    /// A probe for the calling thread.
    pub fn this_thread() -> StealProbe {
        let mut probe = StealProbe {
            available: true,
            _not_send: PhantomData,
        };
        probe.available = probe.sample().is_some();
        probe
    }

    /// Whether this platform gives per-thread CPU time and context switches (Linux); without
    /// them no steal is measured.
    pub fn available(&self) -> bool {
        self.available
    }

    /// A reading of the calling thread's accounting now; None where it is not available.
    pub fn sample(&mut self) -> Option<CpuSample> {
        if !self.available {
            return None;
        }
        let (cpu_ns, switches) = thread_accounting()?;
        Some(CpuSample {
            at: Instant::now(),
            cpu_ns,
            switches,
        })
    }
}

/// The calling thread's CPU time and context switches (Linux only: `RUSAGE_THREAD`).
#[cfg(target_os = "linux")]
fn thread_accounting() -> Option<(u64, u64)> {
    // SAFETY: both calls only write into the zeroed structs passed to them.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) != 0 {
            return None;
        }
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return None;
        }
        let cpu_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        Some((cpu_ns, (ru.ru_nvcsw + ru.ru_nivcsw) as u64))
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_accounting() -> Option<(u64, u64)> {
    None
}

/// Wall time between `a` and `b` that the thread, switched in throughout, did not spend on
/// its CPU: time the machine took. If it was switched out in between (it slept, blocked on a
/// lock, or yielded to another thread), the gap cannot be told from its own waiting, so none
/// of it counts.
pub fn stolen_between(a: &CpuSample, b: &CpuSample) -> u64 {
    if b.switches != a.switches {
        return 0;
    }
    let wall = b.at.saturating_duration_since(a.at).as_nanos() as u64;
    wall.saturating_sub(b.cpu_ns.saturating_sub(a.cpu_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(base: Instant, ms: u64, cpu_ms: u64, switches: u64) -> CpuSample {
        CpuSample {
            at: base + Duration::from_millis(ms),
            cpu_ns: cpu_ms * 1_000_000,
            switches,
        }
    }

    #[test]
    fn stolen_is_wall_time_off_the_cpu_while_switched_in() {
        let t = Instant::now();
        // Ran the whole time: nothing stolen.
        assert_eq!(stolen_between(&at(t, 0, 10, 7), &at(t, 5, 15, 7)), 0);
        // 5 ms of wall, 2 on the CPU, never switched out: 3 ms taken by the host.
        assert_eq!(
            stolen_between(&at(t, 0, 10, 7), &at(t, 5, 12, 7)),
            3_000_000
        );
        // CPU time a little ahead of the wall clock (sampling order) is not negative.
        assert_eq!(stolen_between(&at(t, 0, 10, 7), &at(t, 1, 12, 7)), 0);
        // Switched out and in again: it may have slept, so nothing is called stolen.
        assert_eq!(stolen_between(&at(t, 0, 10, 7), &at(t, 5, 11, 8)), 0);
    }

    /// The thread's own work is not credited as steal, however long since it last called into
    /// the scheduler: its CPU time is read up to date (a figure updated only at scheduler ticks,
    /// as in /proc/thread-self/schedstat, moves in 4 ms steps and made 0.5 ms of work look
    /// stolen). Over 1 ms of pure spinning the CPU time must follow the wall clock, except in
    /// the intervals the host took part of.
    /// A probe, or `None` where the platform has no per-thread CPU accounting (not Linux):
    /// on Linux it must work, or `play` would report no steal figures at all.
    fn probe() -> Option<StealProbe> {
        let p = StealProbe::this_thread();
        if p.available() {
            return Some(p);
        }
        if cfg!(target_os = "linux") {
            panic!("per-thread CPU time and context switches must be readable on Linux");
        }
        eprintln!("note: no per-thread CPU accounting here: steal not measured");
        None
    }

    #[test]
    fn own_cpu_time_is_read_up_to_date() {
        let Some(mut p) = probe() else { return };
        let mut tracked = 0;
        for _ in 0..20 {
            let a = p.sample().unwrap();
            let until = a.at + Duration::from_millis(1);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            let b = p.sample().unwrap();
            let wall = b.at.duration_since(a.at).as_nanos() as u64;
            let cpu = b.cpu_ns - a.cpu_ns;
            assert!(
                cpu <= wall + 50_000,
                "CPU {cpu} ns over {wall} ns of wall time"
            );
            if b.switches == a.switches && cpu >= wall / 2 {
                tracked += 1;
            }
        }
        assert!(
            tracked >= 10,
            "CPU time followed 1 ms of spinning {tracked} times in 20"
        );
    }

    /// A thread that sleeps between two samples is switched out: its sleep is not steal.
    #[test]
    fn a_sleep_is_not_steal() {
        let Some(mut p) = probe() else { return };
        let a = p.sample().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let b = p.sample().unwrap();
        assert!(b.switches > a.switches);
        assert_eq!(stolen_between(&a, &b), 0);
    }
}
