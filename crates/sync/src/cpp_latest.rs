//! C++ `sync_policies::LatestTime` (SPEC §12), line for line.
//!
//! Rate-driven zero-order hold: header stamps are never read. Each topic keeps only its latest
//! message; a set of every topic's latest message is emitted when the topic just added is the
//! fastest one that is not overdue ("pivot"), by rate estimates driven by the clock's `now()`.
//! The emulation's `now()` is each message's log time, strictly increasing (+1 ns on ties,
//! as a clock read at each `add()` would be).
//!
//! Upstream quirk reproduced: rate slots are created in first-arrival order but looked up by
//! topic index (upstream issue #110), so topic `k` updates the slot the `k`-th first arrival
//! created, with that arrival's time and configuration. Where that lookup reads past the slots
//! (a topic's second message before as many topics as its index have sent a first one) upstream
//! behaviour is undefined: the run stops with an error naming the message.

use crate::track::{Engine, Tracker};
use crate::{Policy, RateConfig, SyncConfig, SyncError};

#[derive(Debug, Clone)]
struct Rate {
    prev: i64,
    hz: f64,
    error: f64,
    cfg: RateConfig,
    do_hz_init: bool,
    do_error_init: bool,
}

/// `std::chrono::duration<double>` of a nanosecond count.
fn seconds(d_ns: i64) -> f64 {
    d_ns as f64 / 1e9
}

impl Rate {
    fn new(prev: i64, cfg: RateConfig) -> Rate {
        Rate {
            prev,
            hz: 0.0,
            error: 0.0,
            cfg,
            do_hz_init: true,
            do_error_init: true,
        }
    }

    fn compute_hz(&mut self, now: i64) -> bool {
        loop {
            let period = seconds(now.saturating_sub(self.prev));
            if period <= 0.0 {
                return false;
            }
            if self.do_hz_init {
                self.hz = 1.0 / period;
                self.do_hz_init = false;
            } else {
                let dev = (self.hz - 1.0 / period).abs();
                if self.do_error_init {
                    self.error = dev;
                    self.do_error_init = false;
                } else if dev > self.cfg.margin * self.error {
                    // Step change: start over with the same period.
                    self.do_hz_init = true;
                    self.do_error_init = true;
                    continue;
                } else {
                    self.error = self.cfg.error_ema_alpha * dev
                        + (1.0 - self.cfg.error_ema_alpha) * self.error;
                }
                self.hz =
                    self.cfg.rate_ema_alpha / period + (1.0 - self.cfg.rate_ema_alpha) * self.hz;
            }
            break;
        }
        self.prev = now;
        true
    }
}

pub(crate) struct CppLatest {
    n: usize,
    cfgs: Vec<RateConfig>,
    /// Latest message (arrival index) of each topic.
    ev: Vec<Option<usize>>,
    /// Whether `ev[k]` has been in an emitted set.
    ev_used: Vec<bool>,
    /// Rate slots, in first-arrival order.
    rates: Vec<Rate>,
    last_now: Option<i64>,
    order: Vec<usize>,
}

impl CppLatest {
    pub(crate) fn new(cfg: &SyncConfig) -> Self {
        CppLatest {
            n: cfg.n_topics,
            cfgs: cfg.rate_config.clone(),
            ev: vec![None; cfg.n_topics],
            ev_used: vec![false; cfg.n_topics],
            rates: Vec::with_capacity(cfg.n_topics),
            last_now: None,
            order: Vec::with_capacity(cfg.n_topics),
        }
    }

    /// The configuration topic `i` gives the slot it creates.
    fn cfg_of(&self, i: usize) -> RateConfig {
        match self.cfgs.len() {
            k if k == self.n => self.cfgs[i],
            1 => self.cfgs[0],
            _ => RateConfig::default(),
        }
    }

    fn find_pivot(&mut self, now: i64) -> Option<usize> {
        self.order.clear();
        self.order.extend(0..self.rates.len());
        // Stable: equal rates keep the lower slot first.
        let rates = &self.rates;
        self.order.sort_by(|&a, &b| {
            rates[b]
                .hz
                .partial_cmp(&rates[a].hz)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        for &k in &self.order {
            let r = &rates[k];
            let period = seconds(now.saturating_sub(r.prev));
            if period == 0.0 {
                if r.hz > 0.0 {
                    return Some(k);
                }
                continue;
            }
            if !r.do_error_init && r.hz - 1.0 / period > r.cfg.margin * r.error {
                // Overdue by its own margin: late.
                continue;
            }
            if r.hz > 0.0 {
                return Some(k);
            }
        }
        None
    }
}

impl Engine for CppLatest {
    fn add(&mut self, ai: usize, i: usize, log_ns: i64, tr: &mut Tracker) {
        // The clock read at each add(): strictly increasing.
        let now = match self.last_now {
            Some(l) if log_ns <= l => l.saturating_add(1),
            _ => log_ns,
        };
        self.last_now = Some(now);
        let Some(old) = self.ev[i] else {
            // A first message creates the next slot and never publishes.
            let cfg = self.cfg_of(i);
            self.rates.push(Rate::new(now, cfg));
            self.ev[i] = Some(ai);
            return;
        };
        if !self.ev_used[i] {
            tr.remove(old, crate::track::Removal::Superseded);
        }
        self.ev[i] = Some(ai);
        self.ev_used[i] = false;
        if i >= self.rates.len() {
            let index = tr.index_of(ai);
            tr.abort(SyncError::UndefinedUpstream {
                policy: Policy::Latest,
                arrival_index: ai,
                topic: i,
                index,
                message: format!(
                    "message {index} of input {i} (arrival {ai}) is that topic's second or later \
                     message, but only {} topic(s) have sent a first message: upstream LatestTime \
                     reads rates_[{i}] past the end of its rate vector here (undefined behaviour; \
                     ros2/message_filters#110), so no output can be claimed",
                    self.rates.len()
                ),
            });
            return;
        }
        let valid = self.rates[i].compute_hz(now);
        if valid && self.find_pivot(now) == Some(i) && self.ev.iter().all(Option::is_some) {
            let members: Vec<usize> = self.ev.iter().map(|e| e.unwrap_or(0)).collect();
            tr.emit(&members);
            for u in self.ev_used.iter_mut() {
                *u = true;
            }
        }
    }

    fn len(&self, topic: usize) -> usize {
        usize::from(self.ev[topic].is_some())
    }

    fn held(&self, topic: usize, out: &mut Vec<i64>) {
        // Only whether a topic holds a message matters for LatestTime's drop details.
        if self.ev[topic].is_some() {
            out.push(0);
        }
    }
}
