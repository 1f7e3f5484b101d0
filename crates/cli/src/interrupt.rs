//! Ctrl-C: the first one asks every running job to stop cleanly (reports are still written);
//! a second one exits at once with the shell's code for SIGINT.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

type Handler = Box<dyn Fn() + Send>;

static HANDLERS: Mutex<Vec<Handler>> = Mutex::new(Vec::new());
/// Run before the second Ctrl-C's immediate exit (restore the terminal, remove half files).
static BEFORE_EXIT: Mutex<Vec<Handler>> = Mutex::new(Vec::new());
static SEEN: AtomicU32 = AtomicU32::new(0);

/// Runs `f` if a second Ctrl-C ends the process before the work could stop cleanly.
pub(crate) fn before_forced_exit(f: impl Fn() + Send + 'static) {
    BEFORE_EXIT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Box::new(f));
}

/// Runs `f` on the first Ctrl-C (or SIGTERM).
pub(crate) fn on_interrupt(f: impl Fn() + Send + 'static) {
    let first = {
        let mut h = HANDLERS.lock().unwrap_or_else(|p| p.into_inner());
        h.push(Box::new(f));
        h.len() == 1
    };
    if first {
        // Fails only if another handler was installed, which this binary never does.
        let _ = ctrlc::set_handler(|| {
            if SEEN.fetch_add(1, Ordering::SeqCst) > 0 {
                let b = BEFORE_EXIT.lock().unwrap_or_else(|p| p.into_inner());
                for f in b.iter() {
                    f();
                }
                std::process::exit(130);
            }
            let h = HANDLERS.lock().unwrap_or_else(|p| p.into_inner());
            for f in h.iter() {
                f();
            }
        });
    }
}
