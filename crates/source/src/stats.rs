//! Counters of the requests and bytes read from object stores in this process, for progress
//! bars and for users' own accounting.

use std::sync::atomic::{AtomicU64, Ordering};

static REQUESTS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static PLANNED: AtomicU64 = AtomicU64::new(0);

pub(crate) fn count_request() {
    REQUESTS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_bytes(n: u64) {
    BYTES.fetch_add(n, Ordering::Relaxed);
}

/// Adds `n` bytes to what the current reads plan to fetch (the total of a progress bar).
pub fn add_planned(n: u64) {
    PLANNED.fetch_add(n, Ordering::Relaxed);
}

/// Requests and bytes read from object stores so far, and the bytes planned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Requests sent (GET, HEAD, LIST; retries included).
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Bytes the reads so far planned to fetch.
    pub planned_bytes: u64,
}

/// The process's counters now.
pub fn io_counters() -> IoCounters {
    IoCounters {
        requests: REQUESTS.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
        planned_bytes: PLANNED.load(Ordering::Relaxed),
    }
}
