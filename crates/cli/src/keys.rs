//! Keyboard control of `play` in a terminal: space pauses/resumes, `s` or → publishes the next
//! message while paused, `q` stops. The terminal is put in non-canonical mode (Ctrl-C still
//! works) and restored when playing ends.

use std::io::Read;
use std::sync::Arc;
use std::thread::JoinHandle;

use bagscope_replay::Control;

pub(crate) struct Keys {
    saved: Option<libc::termios>,
    handle: JoinHandle<()>,
}

impl Keys {
    /// Restores the terminal once the reader has noticed the stop.
    pub(crate) fn finish(self) {
        let _ = self.handle.join();
        if let Some(t) = self.saved {
            // SAFETY: fd 0 is stdin; `t` came from tcgetattr on it.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &t);
            }
        }
    }
}

pub(crate) fn spawn(ctl: Arc<Control>) -> Keys {
    // SAFETY: termios is plain data; tcgetattr fills it or fails.
    let saved = unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) == 0 {
            let mut raw = t;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO);
            // read() returns after 100 ms without input, so the thread sees the stop.
            raw.c_cc[libc::VMIN] = 0;
            raw.c_cc[libc::VTIME] = 1;
            (libc::tcsetattr(0, libc::TCSANOW, &raw) == 0).then_some(t)
        } else {
            None
        }
    };
    if let Some(t) = saved {
        crate::interrupt::before_forced_exit(move || {
            // SAFETY: as in `finish`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &t);
            }
        });
    }
    let handle = std::thread::spawn(move || {
        if saved.is_none() {
            return;
        }
        let mut stdin = std::io::stdin();
        let mut b = [0u8; 8];
        let mut esc: Vec<u8> = Vec::new();
        while !ctl.stopped() {
            let n = match stdin.read(&mut b) {
                Ok(n) => n,
                Err(_) => return,
            };
            for &c in &b[..n] {
                esc.push(c);
                match esc.as_slice() {
                    [b' '] => {
                        ctl.toggle_pause();
                    }
                    [b's'] | [0x1b, b'[', b'C'] => ctl.step(),
                    [b'q'] => ctl.stop(),
                    [0x1b] | [0x1b, b'['] => continue,
                    _ => {}
                }
                esc.clear();
            }
        }
    });
    Keys { saved, handle }
}
