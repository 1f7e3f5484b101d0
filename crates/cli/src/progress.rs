//! A progress bar for reads from object storage: bytes, rate and time left, shown on a
//! terminal once a read has run for a second, never when stderr is piped or with `--json`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Watches the process's remote-read counters until dropped.
pub(crate) struct RemoteProgress {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RemoteProgress {
    /// Starts watching, when a bar may be shown at all (stderr a terminal, no `--json`).
    pub(crate) fn start(json: bool) -> RemoteProgress {
        let done = Arc::new(AtomicBool::new(false));
        if json || !std::io::stderr().is_terminal() {
            return RemoteProgress { done, thread: None };
        }
        let d = done.clone();
        let thread = std::thread::Builder::new()
            .name("remote-progress".into())
            .spawn(move || watch(&d))
            .ok();
        RemoteProgress { done, thread }
    }
}

impl Drop for RemoteProgress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch(done: &AtomicBool) {
    let t0 = Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let c = bagscope::io::io_counters();
        if c.bytes == 0 || t0.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(st) = indicatif::ProgressStyle::with_template(
                "{bar:30} {bytes}/{total_bytes} from object storage, {bytes_per_sec}, {eta} left",
            ) {
                b.set_style(st);
            }
            b
        });
        b.set_length(c.planned_bytes.max(c.bytes));
        b.set_position(c.bytes);
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}
