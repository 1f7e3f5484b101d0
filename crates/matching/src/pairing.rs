//! Reading the response at a time (interpolated or nearest) and error statistics.

use crate::nearest_index;
use crate::prep::{wrap_pi, Dense};
use crate::types::ErrorStats;
use std::collections::BTreeMap;

/// How responses are read at an arbitrary time.
pub(crate) struct Track<'a> {
    pub r: &'a Dense,
    pub wrap: &'a [bool],
    /// Largest gap between two samples that interpolation may bridge.
    pub max_gap_ns: i64,
    /// Nearest-sample distance limit when not interpolating.
    pub max_pair_ns: Option<i64>,
    pub interpolate: bool,
}

impl<'a> Track<'a> {
    pub(crate) fn new(
        r: &'a Dense,
        wrap: &'a [bool],
        max_pair_ns: Option<i64>,
        interpolate: bool,
    ) -> Self {
        // 4 periods bridges jitter and the odd lost sample, but not a dropout.
        let period = r.median_period_ns().unwrap_or(0);
        let mut max_gap_ns = period.saturating_mul(4);
        if let Some(m) = max_pair_ns {
            max_gap_ns = max_gap_ns.min(m.saturating_mul(2));
        }
        Track {
            r,
            wrap,
            max_gap_ns,
            max_pair_ns,
            interpolate,
        }
    }

    /// Where `t` falls: index of the first sample after `t`.
    #[inline]
    pub(crate) fn locate(&self, t: i64) -> usize {
        self.r.t.partition_point(|&x| x <= t)
    }

    /// [`Track::locate`] for a `t` at or after the time `hint` was located for: gallops
    /// forward from `hint` (a few probes when consecutive times are close, as in a sweep over
    /// sorted commands) instead of bisecting the whole series.
    #[inline]
    pub(crate) fn locate_from(&self, hint: usize, t: i64) -> usize {
        let ts = &self.r.t;
        let n = ts.len();
        let hint = hint.min(n);
        if hint == n || ts[hint] > t {
            // Nothing at or after hint is within `t`: hint is the answer unless `t` lies
            // before the time hint was located for (then bisect).
            return if hint == 0 || ts[hint - 1] <= t {
                hint
            } else {
                self.locate(t)
            };
        }
        // ts[hint] <= t: find the first index after `t` beyond hint.
        let mut lo = hint + 1;
        let mut step = 1usize;
        let mut hi = lo;
        while hi < n && ts[hi] <= t {
            lo = hi + 1;
            hi = hi.saturating_add(step).min(n);
            step = step.saturating_mul(2);
        }
        lo + ts[lo..hi.min(n)].partition_point(|&x| x <= t)
    }

    /// Value of joint `j` at `t`, with `i = self.locate(t)`.
    #[inline]
    pub(crate) fn value(&self, j: usize, i: usize, t: i64) -> Option<f64> {
        self.at(i, t).and_then(|p| self.value_at(j, p))
    }

    /// Where the responses are read at `t` (with `i = self.locate(t)`), the same for every
    /// joint: worked out once per time, not once per joint.
    #[inline]
    pub(crate) fn at(&self, i: usize, t: i64) -> Option<At> {
        let ts = &self.r.t;
        if self.interpolate {
            if i == 0 {
                return None;
            }
            let a = i - 1;
            if ts[a] == t {
                return Some(At::Sample(a));
            }
            if i >= ts.len() || ts[i].saturating_sub(ts[a]) > self.max_gap_ns {
                return None;
            }
            let f = t.saturating_sub(ts[a]) as f64 / ts[i].saturating_sub(ts[a]) as f64;
            Some(At::Between(a, f))
        } else {
            let k = nearest_index(ts, t)?;
            if self
                .max_pair_ns
                .is_some_and(|m| ts[k].abs_diff(t) > m as u64)
            {
                return None;
            }
            Some(At::Sample(k))
        }
    }

    /// Value of joint `j` at a place found by [`Track::at`].
    #[inline]
    pub(crate) fn value_at(&self, j: usize, p: At) -> Option<f64> {
        let col = &self.r.v[j];
        match p {
            At::Sample(a) => finite(col[a]),
            At::Between(a, f) => {
                let (va, vb) = (finite(col[a])?, finite(col[a + 1])?);
                let d = if self.wrap[j] {
                    wrap_pi(vb - va)
                } else {
                    vb - va
                };
                Some(va + d * f)
            }
        }
    }
}

/// Where a time falls among the responses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum At {
    /// On this sample (or, without interpolation, nearest to it).
    Sample(usize),
    /// Between this sample and the next, at this fraction of the way.
    Between(usize, f64),
}

#[inline]
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Response − command, wrapped for continuous joints.
#[inline]
pub(crate) fn err(resp: f64, cmd: f64, wrap: bool) -> f64 {
    if wrap {
        wrap_pi(resp - cmd)
    } else {
        resp - cmd
    }
}

/// Nearest-stamp pairs `(command, response)` for the commands in `cmds`, the response looked
/// up at `t_cmd + shift_ns`. With `one_to_one` the closest command keeps a contested response.
pub(crate) fn nearest_pairs(
    c: &Dense,
    r: &Dense,
    cmds: &[usize],
    shift_ns: i64,
    max_pair_ns: Option<i64>,
    one_to_one: bool,
) -> Vec<(usize, usize)> {
    let mut pairs: Vec<(usize, usize, i64)> = Vec::with_capacity(cmds.len());
    for &k in cmds {
        let t = c.t[k].saturating_add(shift_ns);
        if let Some(j) = nearest_index(&r.t, t) {
            let d = r.t[j].abs_diff(t).min(i64::MAX as u64) as i64;
            let within = match max_pair_ns {
                Some(m) => d <= m,
                None => true,
            };
            if within {
                pairs.push((k, j, d));
            }
        }
    }
    if one_to_one {
        pairs.sort_by_key(|&(k, _, d)| (d, k));
        let mut taken = vec![false; r.len()];
        pairs.retain(|&(_, j, _)| !std::mem::replace(&mut taken[j], true));
        pairs.sort_by_key(|&(k, _, _)| k);
    }
    pairs.into_iter().map(|(k, j, _)| (k, j)).collect()
}

/// Accumulates per-joint errors into [`ErrorStats`].
pub(crate) struct ErrAcc {
    errs: Vec<Vec<f64>>,
    pairs: usize,
}

impl ErrAcc {
    pub(crate) fn new(nj: usize) -> Self {
        ErrAcc {
            errs: vec![Vec::new(); nj],
            pairs: 0,
        }
    }

    /// Adds one command's errors; counts a pair when at least one joint contributed.
    pub(crate) fn add_row(&mut self, row: impl Iterator<Item = (usize, Option<f64>)>) {
        let mut any = false;
        for (j, e) in row {
            if let Some(e) = e.filter(|e| e.is_finite()) {
                self.errs[j].push(e);
                any = true;
            }
        }
        self.pairs += any as usize;
    }

    pub(crate) fn finish(self, joints: &[String]) -> ErrorStats {
        let mut per_joint = BTreeMap::new();
        let mut per_joint_mean = BTreeMap::new();
        let mut per_joint_max = BTreeMap::new();
        let (mut ss, mut sa, mut mx, mut n) = (0.0, 0.0, 0.0f64, 0usize);
        for (j, e) in self.errs.iter().enumerate() {
            if e.is_empty() {
                continue;
            }
            let jm = e.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            per_joint.insert(
                joints[j].clone(),
                bagscope_stats::rms(e).unwrap_or(f64::NAN),
            );
            per_joint_mean.insert(joints[j].clone(), e.iter().sum::<f64>() / e.len() as f64);
            per_joint_max.insert(joints[j].clone(), jm);
            ss += e.iter().map(|x| x * x).sum::<f64>();
            sa += e.iter().map(|x| x.abs()).sum::<f64>();
            mx = mx.max(jm);
            n += e.len();
        }
        let nf = n.max(1) as f64;
        ErrorStats {
            rms: if n == 0 { f64::NAN } else { (ss / nf).sqrt() },
            mean_abs: if n == 0 { f64::NAN } else { sa / nf },
            max: if n == 0 { f64::NAN } else { mx },
            per_joint,
            per_joint_mean,
            per_joint_max,
            samples: n,
            pairs: self.pairs,
        }
    }
}

/// Errors of nearest-stamp pairs.
pub(crate) fn pair_errors(
    c: &Dense,
    r: &Dense,
    pairs: &[(usize, usize)],
    wrap: &[bool],
    joints: &[String],
) -> ErrorStats {
    let mut acc = ErrAcc::new(joints.len());
    for &(k, i) in pairs {
        acc.add_row((0..joints.len()).map(|j| {
            let (cv, rv) = (c.v[j][k], r.v[j][i]);
            (cv.is_finite() && rv.is_finite())
                .then(|| err(rv, cv, wrap[j]))
                .map_or((j, None), |e| (j, Some(e)))
        }));
    }
    acc.finish(joints)
}

/// Errors of the response read through `track` at `t_cmd + shift_ns`.
pub(crate) fn track_errors(
    c: &Dense,
    track: &Track,
    cmds: &[usize],
    shift_ns: i64,
    joints: &[String],
) -> ErrorStats {
    let mut acc = ErrAcc::new(joints.len());
    for &k in cmds {
        let t = c.t[k].saturating_add(shift_ns);
        let i = track.locate(t);
        acc.add_row((0..joints.len()).map(|j| {
            let cv = c.v[j][k];
            let e = if cv.is_finite() {
                track.value(j, i, t).map(|rv| err(rv, cv, track.wrap[j]))
            } else {
                None
            };
            (j, e)
        }));
    }
    acc.finish(joints)
}
