//! How much of a late publish the machine, not the player, is to blame for.
//!
//! The player spins (yields) through the last milliseconds before each target, so it is late
//! only when it is not running. On a virtual machine the hypervisor takes the vCPU away now
//! and then ("steal time"): on the 2-core CI VM a busy loop measured 8–13% of wall time stolen
//! in pauses of up to 12 ms, which no user-space player can beat. Linux keeps steal (and
//! interrupt time) out of a task's on-CPU time, and counts time spent runnable but waiting for
//! the guest's own CPU as run delay (`/proc/thread-self/schedstat`). Between two samples of a
//! thread that never sleeps, wall time minus on-CPU time minus run delay is therefore time the
//! machine kept the thread off a CPU it was entitled to. The play report subtracts that from
//! each publish's lateness, so a user (and the timing test) can tell the player's own error
//! from the host's.

use std::fs::File;
use std::time::Instant;

/// One reading of the calling thread's scheduler accounting.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    pub at: Instant,
    pub on_cpu_ns: u64,
    pub run_delay_ns: u64,
    /// How many times the thread has been switched onto a CPU.
    pub switches: u64,
}

/// Reads the scheduler accounting of the thread that created it.
pub struct StealProbe {
    /// `/proc/thread-self/schedstat`, opened by (and so naming) the owning thread; `None`
    /// where the kernel does not provide it (then steal is not measured, never guessed).
    file: Option<File>,
}

impl StealProbe {
    /// A probe for the calling thread. Use it only on this thread.
    pub fn this_thread() -> StealProbe {
        let mut probe = StealProbe {
            file: File::open("/proc/thread-self/schedstat").ok(),
        };
        // (A new thread may read all zeros: its time is accounted at its first switch.)
        if probe.sample().is_none() {
            probe.file = None;
        }
        probe
    }

    pub fn available(&self) -> bool {
        self.file.is_some()
    }

    pub fn sample(&mut self) -> Option<CpuSample> {
        let f = self.file.as_ref()?;
        let mut buf = [0u8; 96];
        let n = read_at_start(f, &mut buf)?;
        let at = Instant::now();
        let (on_cpu_ns, run_delay_ns, switches) = parse_schedstat(&buf[..n])?;
        Some(CpuSample {
            at,
            on_cpu_ns,
            run_delay_ns,
            switches,
        })
    }
}

/// Reads the file from its start again (procfs regenerates it on each read from 0).
#[cfg(unix)]
fn read_at_start(f: &File, buf: &mut [u8]) -> Option<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, 0).ok()
}

#[cfg(not(unix))]
fn read_at_start(_: &File, _: &mut [u8]) -> Option<usize> {
    None
}

/// `"<on-cpu ns> <run-delay ns> <times switched in>\n"`.
fn parse_schedstat(text: &[u8]) -> Option<(u64, u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut it = text.split_ascii_whitespace();
    let on_cpu = it.next()?.parse().ok()?;
    let delay = it.next()?.parse().ok()?;
    let switches = it.next()?.parse().ok()?;
    Some((on_cpu, delay, switches))
}

/// Wall time between `a` and `b` that the thread spent neither on its CPU nor in the guest's
/// run queue, while it stayed switched in: time the machine took. If the thread was switched
/// out in between (it slept, blocked on a lock, or yielded to another thread), the gap cannot
/// be told from its own waiting, so none of it counts as stolen.
pub fn stolen_between(a: &CpuSample, b: &CpuSample) -> u64 {
    if b.switches != a.switches {
        return 0;
    }
    let wall = b.at.saturating_duration_since(a.at).as_nanos() as u64;
    let accounted =
        b.on_cpu_ns.saturating_sub(a.on_cpu_ns) + b.run_delay_ns.saturating_sub(a.run_delay_ns);
    wall.saturating_sub(accounted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn parses_the_kernel_format() {
        assert_eq!(parse_schedstat(b"1020635 0 1\n"), Some((1_020_635, 0, 1)));
        assert_eq!(parse_schedstat(b"12 34 5"), Some((12, 34, 5)));
        assert_eq!(parse_schedstat(b"12 34\n"), None);
        assert_eq!(parse_schedstat(b"x 1 2\n"), None);
    }

    fn at(base: Instant, ms: u64, on_cpu_ms: u64, delay_ms: u64) -> CpuSample {
        CpuSample {
            at: base + Duration::from_millis(ms),
            on_cpu_ns: on_cpu_ms * 1_000_000,
            run_delay_ns: delay_ms * 1_000_000,
            switches: 7,
        }
    }

    #[test]
    fn stolen_is_wall_time_not_on_cpu_nor_queued() {
        let t = Instant::now();
        // Ran the whole time: nothing stolen.
        assert_eq!(stolen_between(&at(t, 0, 10, 0), &at(t, 5, 15, 0)), 0);
        // 5 ms of wall, 1 on the CPU, 1 waiting for it in the guest: 3 ms taken by the host.
        assert_eq!(
            stolen_between(&at(t, 0, 10, 2), &at(t, 5, 11, 3)),
            3_000_000
        );
        // Accounting a little ahead of the wall clock (sampling order) is not negative.
        assert_eq!(stolen_between(&at(t, 0, 10, 0), &at(t, 1, 12, 0)), 0);
        // Switched out and in again: it may have slept, so nothing is called stolen.
        let back = CpuSample {
            switches: 8,
            ..at(t, 5, 11, 3)
        };
        assert_eq!(stolen_between(&at(t, 0, 10, 2), &back), 0);
    }

    /// A thread that sleeps between two samples is switched out: its sleep is not steal.
    #[test]
    fn a_sleep_is_not_steal() {
        let mut p = StealProbe::this_thread();
        if !p.available() {
            return;
        }
        let a = p.sample().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let b = p.sample().unwrap();
        assert!(b.switches > a.switches);
        assert_eq!(stolen_between(&a, &b), 0);
    }

    /// On Linux, a thread that only spins accounts for (nearly) all its wall time as on-CPU,
    /// run delay or steal; the probe reads something that moves.
    #[test]
    fn a_spinning_thread_accounts_for_its_time() {
        let mut p = StealProbe::this_thread();
        if !p.available() {
            eprintln!("note: no /proc/thread-self/schedstat here: steal not measured");
            return;
        }
        let a = p.sample().unwrap();
        let end = Instant::now() + Duration::from_millis(30);
        while Instant::now() < end {
            std::thread::yield_now();
        }
        let b = p.sample().unwrap();
        let wall = b.at.duration_since(a.at).as_nanos() as u64;
        let on = b.on_cpu_ns - a.on_cpu_ns + (b.run_delay_ns - a.run_delay_ns);
        assert!(on > 0, "on-CPU time did not move over 30 ms of spinning");
        assert!(on <= wall + 1_000_000, "accounted {on} ns > wall {wall} ns");
        assert!(stolen_between(&a, &b) <= wall);
    }
}
