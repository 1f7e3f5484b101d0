//! Mapping between sim time (the /clock topic) and the recorder's log time.

use crate::fit::{robust_line, Line};
use crate::health::{jump_indices, jump_threshold, median_positive_period, HealthParams};
use crate::Axis;
use serde::Serialize;
use std::fmt;

/// One simulator epoch: the /clock series between two resets, with its own fit
/// `sim = rate · (log − fit_log_x0_ns) + fit_sim_at_x0_ns`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockEpoch {
    /// Log time of the epoch's first /clock sample, ns.
    pub start_log_time_ns: i64,
    /// Log time of the epoch's last /clock sample, ns.
    pub end_log_time_ns: i64,
    /// Sim time of the epoch's first /clock sample, ns.
    pub start_sim_ns: i64,
    /// Sim time of the epoch's last /clock sample, ns.
    pub end_sim_ns: i64,
    /// Sim seconds per log-time second (real-time factor) in this epoch.
    pub rate: f64,
    /// Log time the fit is measured from, ns.
    pub fit_log_x0_ns: i64,
    /// Fitted sim time at `fit_log_x0_ns`, ns.
    pub fit_sim_at_x0_ns: f64,
    /// RMS of the fit residuals (sim ns).
    pub residual_jitter_ns: f64,
    /// Number of /clock samples in the epoch.
    pub samples: usize,
    /// (log, sim) samples, sorted by log, and the running maximum of sim for the inverse map.
    /// Not serialised: the report stays small; maps rebuilt from a report use the fit only.
    #[serde(skip)]
    pub(crate) pts: Vec<(i64, i64)>,
    #[serde(skip)]
    pub(crate) cummax: Vec<i64>,
}

/// Sim ↔ log mapping built from a /clock series. `log_axis` is the recorder's axis: sim maps to
/// wall only when the recorder ran on wall time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockMap {
    /// The recorder's axis (`wall`, or `sim` when it ran on sim time).
    pub log_axis: Axis,
    /// Sim epochs in log-time order, one per stretch between clock resets.
    pub epochs: Vec<ClockEpoch>,
}

/// Why a series could not be mapped between two axes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapError {
    /// No relation exists between the two axes (e.g. wall ↔ relative, or sim ↔ wall without a
    /// /clock recorded on wall time).
    NoMapping {
        /// Axis of the values given.
        from: Axis,
        /// Axis asked for.
        to: Axis,
        /// Why the two are unrelated.
        reason: String,
    },
    /// `log_times` is non-empty and of a different length than `stamps`.
    LengthMismatch {
        /// Axis of the values given.
        from: Axis,
        /// Axis asked for.
        to: Axis,
        /// Number of stamps given.
        stamps: usize,
        /// Number of log times given.
        log_times: usize,
    },
    /// A value could not be mapped (out of range or a paused clock).
    Unmappable {
        /// Axis of the values given.
        from: Axis,
        /// Axis asked for.
        to: Axis,
        /// Position of the value in the series.
        index: usize,
        /// The value that could not be mapped, ns on the `from` axis.
        value_ns: i64,
    },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::NoMapping { from, to, reason } => {
                write!(
                    f,
                    "no mapping from the {} axis to the {} axis: {}",
                    from.name(),
                    to.name(),
                    reason
                )
            }
            MapError::LengthMismatch {
                from,
                to,
                stamps,
                log_times,
            } => write!(
                f,
                "mapping {} to {}: {} stamps but {} log times",
                from.name(),
                to.name(),
                stamps,
                log_times
            ),
            MapError::Unmappable {
                from,
                to,
                index,
                value_ns,
            } => write!(
                f,
                "mapping {} to {}: value {} ns at index {} has no image",
                from.name(),
                to.name(),
                value_ns,
                index
            ),
        }
    }
}

impl std::error::Error for MapError {}

/// Saturating i64 + rounded f64 delta; `None` for non-finite deltas.
pub(crate) fn add_f64(base: i64, delta: f64) -> Option<i64> {
    if !delta.is_finite() {
        return None;
    }
    let r = base as f64 + delta.round();
    // Beyond ±2^63 the sum cannot be represented: refuse rather than saturate silently.
    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
        return None;
    }
    Some(base.saturating_add(delta.round() as i64))
}

/// Sim-range slack used when choosing an epoch from a sim value (1 s).
const EPOCH_SLACK_NS: i64 = 1_000_000_000;

impl ClockEpoch {
    fn line(&self) -> Line {
        Line {
            slope: self.rate,
            x0: self.fit_log_x0_ns,
            y_at_x0: self.fit_sim_at_x0_ns,
        }
    }

    fn log_to_sim(&self, log: i64) -> Option<i64> {
        let p = &self.pts;
        if p.is_empty() {
            return self.line().eval(log);
        }
        let i = p.partition_point(|s| s.0 <= log);
        if i == 0 {
            return add_f64(p[0].1, self.rate * (log as i128 - p[0].0 as i128) as f64);
        }
        let a = p[i - 1];
        if i == p.len() {
            return add_f64(a.1, self.rate * (log as i128 - a.0 as i128) as f64);
        }
        let b = p[i];
        let dl = (b.0 as i128 - a.0 as i128) as f64;
        if dl <= 0.0 {
            return Some(a.1);
        }
        let frac = (log as i128 - a.0 as i128) as f64 / dl;
        add_f64(a.1, frac * (b.1 as i128 - a.1 as i128) as f64)
    }

    /// Earliest log time at which this epoch's clock reached `sim`.
    fn sim_to_log(&self, sim: i64) -> Option<i64> {
        let rate_ok = self.rate.is_finite() && self.rate > 0.0;
        let p = &self.pts;
        if p.is_empty() {
            return if rate_ok {
                self.line().inverse(sim)
            } else {
                None
            };
        }
        let c = &self.cummax;
        let i = c.partition_point(|&s| s < sim);
        if i == 0 {
            if c[0] == sim {
                return Some(p[0].0);
            }
            return if rate_ok {
                add_f64(p[0].0, (sim as i128 - c[0] as i128) as f64 / self.rate)
            } else {
                None
            };
        }
        if i == c.len() {
            let l = c.len() - 1;
            return if rate_ok {
                add_f64(p[l].0, (sim as i128 - c[l] as i128) as f64 / self.rate)
            } else {
                None
            };
        }
        let (l0, l1) = (p[i - 1].0, p[i].0);
        let (s0, s1) = (c[i - 1], c[i]);
        let ds = (s1 as i128 - s0 as i128) as f64;
        let frac = (sim as i128 - s0 as i128) as f64 / ds;
        add_f64(l0, frac * (l1 as i128 - l0 as i128) as f64)
    }

    fn sim_range(&self) -> (i64, i64) {
        (
            self.start_sim_ns.min(self.end_sim_ns),
            self.start_sim_ns.max(self.end_sim_ns),
        )
    }

    fn sim_distance(&self, sim: i64) -> i128 {
        let (a, b) = self.sim_range();
        if sim < a {
            a as i128 - sim as i128
        } else if sim > b {
            sim as i128 - b as i128
        } else {
            0
        }
    }
}

impl ClockMap {
    /// Build from a /clock series (`log_ns[i]` is the log time at which the clock read
    /// `sim_ns[i]`, in arrival order). Splits into epochs at each backward jump (simulator reset,
    /// same threshold rule as the per-topic stamp health). `None` with fewer than two samples.
    pub fn from_series(log_ns: &[i64], sim_ns: &[i64], log_axis: Axis) -> Option<ClockMap> {
        let p = HealthParams {
            gap_factor: 3.0,
            max_gaps: 0,
            jump_min_ns: crate::DEFAULT_JUMP_MIN_NS,
            jump_periods: crate::DEFAULT_JUMP_PERIODS,
            jump_cap_ns: crate::DEFAULT_JUMP_CAP_NS,
        };
        Self::from_series_with(log_ns, sim_ns, log_axis, &p)
    }

    pub(crate) fn from_series_with(
        log_ns: &[i64],
        sim_ns: &[i64],
        log_axis: Axis,
        p: &HealthParams,
    ) -> Option<ClockMap> {
        let n = log_ns.len().min(sim_ns.len());
        if n < 2 {
            return None;
        }
        let (log_ns, sim_ns) = (&log_ns[..n], &sim_ns[..n]);
        let thr = jump_threshold(median_positive_period(sim_ns), p);
        let mut bounds = vec![0usize];
        bounds.extend(jump_indices(sim_ns, thr));
        bounds.push(n);
        let mut epochs = Vec::new();
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mut pts: Vec<(i64, i64)> = (a..b).map(|i| (log_ns[i], sim_ns[i])).collect();
            // Arrival order is log order in a bag, but sort anyway so lookups can bisect.
            pts.sort_by_key(|s| s.0);
            let xs: Vec<i64> = pts.iter().map(|s| s.0).collect();
            let ys: Vec<i64> = pts.iter().map(|s| s.1).collect();
            let fit = robust_line(&xs, &ys);
            let (rate, x0, y0, jitter) = match fit {
                Some(f) => (f.line.slope, f.line.x0, f.line.y_at_x0, f.residual_rms),
                // A single sample (or no log spread): assume real time so mapping still works.
                None => (1.0, pts[0].0, pts[0].1 as f64, 0.0),
            };
            let mut cummax = Vec::with_capacity(ys.len());
            let mut m = i64::MIN;
            for &y in &ys {
                m = m.max(y);
                cummax.push(m);
            }
            epochs.push(ClockEpoch {
                start_log_time_ns: pts[0].0,
                end_log_time_ns: pts[pts.len() - 1].0,
                start_sim_ns: sim_ns[a],
                end_sim_ns: *cummax.last().unwrap_or(&sim_ns[a]),
                rate,
                fit_log_x0_ns: x0,
                fit_sim_at_x0_ns: y0,
                residual_jitter_ns: jitter,
                samples: pts.len(),
                pts,
                cummax,
            });
        }
        Some(ClockMap { log_axis, epochs })
    }

    /// The map kept in a report (exact, with samples), or one rebuilt from the report's epoch
    /// fits when the report was not produced in this process.
    pub fn from_report(report: &crate::ClocksReport) -> Option<ClockMap> {
        if let Some(m) = &report.clock_map {
            return Some(m.clone());
        }
        let sc = report.sim_clock.as_ref()?;
        if sc.epochs.is_empty() {
            return None;
        }
        let epochs = sc
            .epochs
            .iter()
            .map(|e| ClockEpoch {
                pts: Vec::new(),
                cummax: Vec::new(),
                ..e.clone()
            })
            .collect();
        Some(ClockMap {
            log_axis: report.recorder_axis,
            epochs,
        })
    }

    /// Index of the epoch in force at `log_ns` (the last one started at or before it).
    pub fn epoch_at_log(&self, log_ns: i64) -> Option<usize> {
        if self.epochs.is_empty() {
            return None;
        }
        let i = self
            .epochs
            .partition_point(|e| e.start_log_time_ns <= log_ns);
        Some(i.saturating_sub(1))
    }

    /// Sim time at log time `log_ns`: interpolated between /clock samples of the epoch in force,
    /// extrapolated with the epoch's rate outside them.
    pub fn log_to_sim_ns(&self, log_ns: i64) -> Option<i64> {
        self.epochs[self.epoch_at_log(log_ns)?].log_to_sim(log_ns)
    }

    /// Log time at which the sim clock read `sim_ns`. With `log_hint_ns` the epoch in force at
    /// the hint is used (or the one before it when the value belongs there: a message stamped
    /// just before a reset and received just after). Without a hint: the first epoch whose sim
    /// range contains the value, else the nearest one.
    pub fn sim_to_log_ns(&self, sim_ns: i64, log_hint_ns: Option<i64>) -> Option<i64> {
        let idx = match log_hint_ns {
            Some(h) => {
                let i = self.epoch_at_log(h)?;
                if i > 0
                    && self.epochs[i].sim_distance(sim_ns) > EPOCH_SLACK_NS as i128
                    && self.epochs[i - 1].sim_distance(sim_ns) == 0
                {
                    i - 1
                } else {
                    i
                }
            }
            None => {
                let mut best: Option<(i128, usize)> = None;
                for (i, e) in self.epochs.iter().enumerate() {
                    let d = e.sim_distance(sim_ns);
                    if best.is_none_or(|b| d < b.0) {
                        best = Some((d, i));
                    }
                }
                best?.1
            }
        };
        self.epochs[idx].sim_to_log(sim_ns)
    }
}

/// Map `stamps` from axis `from` to axis `to`. `log_times` (same length, or empty) are the
/// messages' log times, used to pick the simulator epoch. Only sim ↔ the recorder's axis (via
/// `map`) and identity are possible; anything else (wall ↔ relative, zero, none, mixed) is an
/// error naming both axes.
pub fn map_series(
    stamps: &[i64],
    from: Axis,
    to: Axis,
    map: &ClockMap,
    log_times: &[i64],
) -> Result<Vec<i64>, MapError> {
    if !log_times.is_empty() && log_times.len() != stamps.len() {
        return Err(MapError::LengthMismatch {
            from,
            to,
            stamps: stamps.len(),
            log_times: log_times.len(),
        });
    }
    let no = |reason: &str| {
        Err(MapError::NoMapping {
            from,
            to,
            reason: reason.to_string(),
        })
    };
    let stampable = |a: Axis| matches!(a, Axis::Wall | Axis::Sim | Axis::Relative);
    if !stampable(from) || !stampable(to) {
        return no("only wall, sim and relative stamps can be mapped");
    }
    if from == to {
        return Ok(stamps.to_vec());
    }
    if from == Axis::Relative || to == Axis::Relative {
        return no(
            "a relative clock (e.g. time since boot) has no recorded relation to any other clock",
        );
    }
    // Remaining: sim <-> wall. Possible only through a /clock recorded on wall time.
    if map.log_axis != Axis::Wall {
        return no("the recorder ran on sim time, so /clock relates sim to sim only");
    }
    if map.epochs.is_empty() {
        return no("no /clock samples");
    }
    let mut out = Vec::with_capacity(stamps.len());
    for (i, &s) in stamps.iter().enumerate() {
        let v = if from == Axis::Sim {
            map.sim_to_log_ns(s, log_times.get(i).copied())
        } else {
            map.log_to_sim_ns(s)
        };
        match v {
            Some(v) => out.push(v),
            None => {
                return Err(MapError::Unmappable {
                    from,
                    to,
                    index: i,
                    value_ns: s,
                })
            }
        }
    }
    Ok(out)
}
