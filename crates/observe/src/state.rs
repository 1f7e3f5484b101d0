//! State sampled at an anchor stamp: nearest sample, linear interpolation (angles the short
//! way round for continuous joints, quaternions by slerp), or hold of the latest sample.

use serde::Serialize;
use std::sync::Arc;

/// Joint (or other element) names of a state message, shared between messages that repeat
/// them.
pub type Names = Arc<[String]>;

/// How a state topic is sampled at the anchor's stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StateMode {
    /// The sample nearest the anchor stamp (the earlier one on a tie); both neighbours must
    /// exist within `max_gap` of each other.
    Nearest,
    /// Linear between the samples before and after the anchor stamp, at most `max_gap` apart.
    Interpolate,
    /// Zero-order hold: the latest sample stamped at or before the anchor stamp, at most
    /// `max_gap` old; its reuse count and age are recorded.
    Hold,
}

impl StateMode {
    /// The contract's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            StateMode::Nearest => "nearest",
            StateMode::Interpolate => "interpolate",
            StateMode::Hold => "hold",
        }
    }
}

/// One state topic of the contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateSpec {
    /// The topic.
    pub topic: String,
    /// How it is sampled.
    pub mode: StateMode,
    /// Largest bracket (`after − before` stamps; for `hold`, the age) accepted, ns.
    pub max_gap_ns: i64,
    /// Joints whose `position` is an angle on a circle: interpolated the short way round and
    /// wrapped to (−π, π].
    pub continuous_joints: Vec<String>,
    /// A missing state leaves its columns null instead of rejecting the observation.
    pub optional: bool,
}

/// One numeric field of a state message, flattened (`position`, `orientation.x`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateField {
    /// Field path, dot-separated.
    pub name: String,
    /// A sequence or array (a list column) rather than a scalar.
    pub list: bool,
}

/// One state message: its stamp, log time and numeric field values.
#[derive(Debug, Clone, PartialEq)]
pub struct StateSample {
    /// Header stamp, ns.
    pub stamp_ns: i64,
    /// Log (receive) time, ns.
    pub log_time_ns: i64,
    /// One entry per [`StateSeries::fields`] entry; a scalar has one element.
    pub values: Vec<Vec<f64>>,
    /// The message's `name` list (JointState), in the order of its arrays.
    pub names: Option<Names>,
}

/// A state topic's messages in log-time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StateSeries {
    /// The topic.
    pub topic: String,
    /// The numeric fields every sample carries, in message order.
    pub fields: Vec<StateField>,
    /// Whether the message has a `name` list (its values come with [`StateSample::names`]).
    pub has_names: bool,
    /// The samples, in log-time order.
    pub samples: Vec<StateSample>,
}

/// A state value at one anchor, with how it was obtained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateValue {
    /// One entry per field of the series (a scalar has one element).
    pub values: Vec<Vec<f64>>,
    /// The names of the list elements (JointState `name`), in the value's order.
    pub names: Option<Names>,
    /// Stamp of the sample at or before the anchor stamp, ns.
    pub before_stamp_ns: Option<i64>,
    /// Stamp of the sample at or after the anchor stamp, ns.
    pub after_stamp_ns: Option<i64>,
    /// `after_stamp_ns − before_stamp_ns`.
    pub gap_ns: Option<i64>,
    /// Log time of the later bracketing sample − log time of the anchor, floored at 0: how
    /// long a live builder would have waited for it (nearest, interpolate).
    pub online_wait_ns: Option<i64>,
    /// hold: anchor stamp − stamp of the sample used.
    pub hold_age_ns: Option<i64>,
    /// hold: how many earlier observations used the same sample.
    pub reuse_count: Option<u32>,
}

/// Wrap an angle to (−π, π].
pub fn wrap_angle(x: f64) -> f64 {
    use std::f64::consts::{PI, TAU};
    let r = x.rem_euclid(TAU);
    if r > PI {
        r - TAU
    } else {
        r
    }
}

/// Spherical linear interpolation of unit quaternions `(x, y, z, w)`, the short way.
pub fn slerp(a: [f64; 4], b: [f64; 4], u: f64) -> [f64; 4] {
    let mut dot: f64 = a.iter().zip(&b).map(|(p, q)| p * q).sum();
    let mut b = b;
    if dot < 0.0 {
        dot = -dot;
        b = b.map(|v| -v);
    }
    let (wa, wb) = if dot > 0.9995 {
        (1.0 - u, u)
    } else {
        let th = dot.clamp(-1.0, 1.0).acos();
        let s = th.sin();
        (((1.0 - u) * th).sin() / s, (u * th).sin() / s)
    };
    let mut q = [0.0; 4];
    for ((qi, ai), bi) in q.iter_mut().zip(&a).zip(&b) {
        *qi = wa * ai + wb * bi;
    }
    let n = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    if n > 0.0 && n.is_finite() {
        q.map(|v| v / n)
    } else {
        q
    }
}

/// A state series prepared for lookups: per epoch, its samples sorted by stamp, the
/// quaternion field groups and which `position` elements are angles.
pub(crate) struct Prepared<'a> {
    pub(crate) series: &'a StateSeries,
    pub(crate) spec: &'a StateSpec,
    /// Per epoch: sample indices sorted by stamp (stable: log order on ties).
    by_epoch: Vec<Vec<usize>>,
    /// Field indices (x, y, z, w) of orientation / rotation quaternions.
    quats: Vec<[usize; 4]>,
    position: Option<usize>,
}

impl<'a> Prepared<'a> {
    pub(crate) fn new(series: &'a StateSeries, spec: &'a StateSpec) -> Prepared<'a> {
        // A state topic's own epochs: its stamps jumping back by a clock reset.
        let mut by_epoch: Vec<Vec<usize>> = vec![Vec::new()];
        let mut top = i64::MIN;
        for (i, s) in series.samples.iter().enumerate() {
            if top != i64::MIN && s.stamp_ns < top.saturating_sub(bagscope_sync::EPOCH_JUMP_NS) {
                by_epoch.push(Vec::new());
                top = i64::MIN;
            }
            top = top.max(s.stamp_ns);
            if let Some(v) = by_epoch.last_mut() {
                v.push(i);
            }
        }
        for v in &mut by_epoch {
            v.sort_by_key(|&i| series.samples[i].stamp_ns);
        }
        let find = |n: &str| series.fields.iter().position(|f| f.name == n && !f.list);
        let mut quats = Vec::new();
        for f in &series.fields {
            let Some(p) = f.name.strip_suffix(".x") else {
                continue;
            };
            let last = p.rsplit('.').next().unwrap_or(p);
            if !(last == "orientation" || last == "rotation") {
                continue;
            }
            if let (Some(x), Some(y), Some(z), Some(w)) = (
                find(&format!("{p}.x")),
                find(&format!("{p}.y")),
                find(&format!("{p}.z")),
                find(&format!("{p}.w")),
            ) {
                quats.push([x, y, z, w]);
            }
        }
        let position = series
            .fields
            .iter()
            .position(|f| f.name == "position" && f.list);
        Prepared {
            series,
            spec,
            by_epoch,
            quats,
            position,
        }
    }

    /// The samples at or before and at or after `stamp` within `epoch` (indices into the
    /// series), `None` outside the epoch's recorded span.
    fn bracket(&self, epoch: usize, stamp: i64) -> (Option<usize>, Option<usize>) {
        let Some(v) = self.by_epoch.get(epoch) else {
            return (None, None);
        };
        let s = &self.series.samples;
        let after = v.partition_point(|&i| s[i].stamp_ns < stamp);
        let before_end = v.partition_point(|&i| s[i].stamp_ns <= stamp);
        let before = before_end.checked_sub(1).map(|k| v[k]);
        (before, v.get(after).copied())
    }

    /// The state at `stamp` for an anchor received at `anchor_log_ns` in `epoch`, or `None`
    /// when it is unavailable (outside the span, bracket or age beyond `max_gap`).
    /// `last_held` carries the hold mode's last used sample and its reuse count.
    pub(crate) fn lookup(
        &self,
        epoch: usize,
        stamp: i64,
        anchor_log_ns: i64,
    ) -> Option<(StateValue, Option<usize>)> {
        let s = &self.series.samples;
        let (before, after) = self.bracket(epoch, stamp);
        let gap = match (before, after) {
            (Some(b), Some(a)) => Some(s[a].stamp_ns.saturating_sub(s[b].stamp_ns)),
            _ => None,
        };
        let wait = after.map(|a| s[a].log_time_ns.saturating_sub(anchor_log_ns).max(0));
        let base = StateValue {
            values: Vec::new(),
            names: None,
            before_stamp_ns: before.map(|b| s[b].stamp_ns),
            after_stamp_ns: after.map(|a| s[a].stamp_ns),
            gap_ns: gap,
            online_wait_ns: None,
            hold_age_ns: None,
            reuse_count: None,
        };
        match self.spec.mode {
            StateMode::Hold => {
                let b = before?;
                let age = stamp.saturating_sub(s[b].stamp_ns);
                if age > self.spec.max_gap_ns {
                    return None;
                }
                Some((
                    StateValue {
                        values: s[b].values.clone(),
                        names: s[b].names.clone(),
                        hold_age_ns: Some(age),
                        ..base
                    },
                    Some(b),
                ))
            }
            StateMode::Nearest | StateMode::Interpolate => {
                let (b, a) = (before?, after?);
                if gap? > self.spec.max_gap_ns {
                    return None;
                }
                let (values, names) = if self.spec.mode == StateMode::Nearest {
                    let k = if stamp - s[b].stamp_ns <= s[a].stamp_ns - stamp {
                        b
                    } else {
                        a
                    };
                    (s[k].values.clone(), s[k].names.clone())
                } else {
                    (self.interpolate(&s[b], &s[a], stamp), s[b].names.clone())
                };
                Some((
                    StateValue {
                        values,
                        names,
                        online_wait_ns: wait,
                        ..base
                    },
                    None,
                ))
            }
        }
    }

    /// Linear interpolation of every field between `a` and `b` at `stamp`; `b`'s list
    /// elements are matched to `a`'s by name when both carry names.
    pub(crate) fn interpolate(
        &self,
        a: &StateSample,
        b: &StateSample,
        stamp: i64,
    ) -> Vec<Vec<f64>> {
        let span = b.stamp_ns.saturating_sub(a.stamp_ns);
        let u = if span <= 0 {
            0.0
        } else {
            (stamp.saturating_sub(a.stamp_ns)) as f64 / span as f64
        };
        // b's element for a's element i of a list field.
        let remap: Option<Vec<Option<usize>>> = match (&a.names, &b.names) {
            (Some(na), Some(nb)) if na != nb => {
                Some(na.iter().map(|n| nb.iter().position(|m| m == n)).collect())
            }
            _ => None,
        };
        let mut out: Vec<Vec<f64>> = Vec::with_capacity(a.values.len());
        for (f, va) in a.values.iter().enumerate() {
            let vb = b.values.get(f);
            let field = &self.series.fields[f];
            let mut v = Vec::with_capacity(va.len());
            for (i, &x) in va.iter().enumerate() {
                let j = match (&remap, field.list) {
                    (Some(r), true) => r.get(i).copied().flatten(),
                    _ => Some(i),
                };
                let Some(y) = j.and_then(|j| vb.and_then(|vb| vb.get(j))).copied() else {
                    v.push(f64::NAN);
                    continue;
                };
                let angle = Some(f) == self.position
                    && a.names
                        .as_ref()
                        .and_then(|n| n.get(i))
                        .is_some_and(|n| self.spec.continuous_joints.iter().any(|c| c == n));
                v.push(if angle {
                    wrap_angle(x + u * wrap_angle(y - x))
                } else {
                    x + u * (y - x)
                });
            }
            out.push(v);
        }
        for q in &self.quats {
            let get = |s: &StateSample| q.map(|i| s.values[i].first().copied().unwrap_or(f64::NAN));
            let r = slerp(get(a), get(b), u);
            for (k, &i) in q.iter().enumerate() {
                if let Some(slot) = out[i].first_mut() {
                    *slot = r[k];
                }
            }
        }
        out
    }

    /// RMS error of interpolating each sample from its two neighbours (held out), over every
    /// numeric element; `None` with fewer than three samples in every epoch.
    pub(crate) fn holdout_rms(&self) -> Option<f64> {
        let s = &self.series.samples;
        let (mut sum, mut n) = (0.0f64, 0usize);
        for v in &self.by_epoch {
            for w in v.windows(3) {
                let (a, m, b) = (&s[w[0]], &s[w[1]], &s[w[2]]);
                if b.stamp_ns.saturating_sub(a.stamp_ns) > self.spec.max_gap_ns.saturating_mul(2) {
                    continue;
                }
                let p = self.interpolate(a, b, m.stamp_ns);
                for (f, pv) in p.iter().enumerate() {
                    let angle_field = Some(f) == self.position;
                    for (i, &x) in pv.iter().enumerate() {
                        let Some(&y) = m.values.get(f).and_then(|v| v.get(i)) else {
                            continue;
                        };
                        let mut d = x - y;
                        if angle_field {
                            let is_c =
                                m.names.as_ref().and_then(|nm| nm.get(i)).is_some_and(|nm| {
                                    self.spec.continuous_joints.iter().any(|c| c == nm)
                                });
                            if is_c {
                                d = wrap_angle(d);
                            }
                        }
                        if d.is_finite() {
                            sum += d * d;
                            n += 1;
                        }
                    }
                }
            }
        }
        (n > 0).then(|| (sum / n as f64).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn series(samples: Vec<(i64, Vec<f64>)>) -> StateSeries {
        StateSeries {
            topic: "/js".into(),
            fields: vec![StateField {
                name: "position".into(),
                list: true,
            }],
            has_names: true,
            samples: samples
                .into_iter()
                .map(|(t, v)| StateSample {
                    stamp_ns: t,
                    log_time_ns: t + 2,
                    values: vec![v],
                    names: Some(vec!["a".to_string(), "roll".to_string()].into()),
                })
                .collect(),
        }
    }

    fn spec(mode: StateMode) -> StateSpec {
        StateSpec {
            topic: "/js".into(),
            mode,
            max_gap_ns: 20,
            continuous_joints: vec!["roll".into()],
            optional: false,
        }
    }

    #[test]
    fn interpolates_linearly_and_angles_the_short_way() {
        let s = series(vec![(0, vec![1.0, PI - 0.1]), (10, vec![3.0, -PI + 0.1])]);
        let sp = spec(StateMode::Interpolate);
        let p = Prepared::new(&s, &sp);
        let (v, _) = p.lookup(0, 5, 0).unwrap();
        assert!((v.values[0][0] - 2.0).abs() < 1e-12);
        // Through π, not through 0.
        assert!(
            (v.values[0][1].abs() - PI).abs() < 1e-9,
            "{}",
            v.values[0][1]
        );
        assert_eq!(
            (v.before_stamp_ns, v.after_stamp_ns, v.gap_ns),
            (Some(0), Some(10), Some(10))
        );
        assert_eq!(v.online_wait_ns, Some(12));
        // Outside the span, or a bracket wider than max_gap: unavailable.
        assert!(p.lookup(0, 11, 0).is_none());
        let wide = series(vec![(0, vec![0.0, 0.0]), (30, vec![0.0, 0.0])]);
        assert!(Prepared::new(&wide, &sp).lookup(0, 5, 0).is_none());
    }

    #[test]
    fn hold_uses_the_latest_earlier_sample_and_nearest_the_closer() {
        let s = series(vec![(0, vec![1.0, 0.0]), (10, vec![3.0, 0.0])]);
        let sh = spec(StateMode::Hold);
        let (v, used) = Prepared::new(&s, &sh).lookup(0, 9, 0).unwrap();
        assert_eq!(
            (v.values[0][0], v.hold_age_ns, used),
            (1.0, Some(9), Some(0))
        );
        let sn = spec(StateMode::Nearest);
        let (v, _) = Prepared::new(&s, &sn).lookup(0, 6, 0).unwrap();
        assert_eq!(v.values[0][0], 3.0);
        let (v, _) = Prepared::new(&s, &sn).lookup(0, 5, 0).unwrap();
        assert_eq!(v.values[0][0], 1.0);
    }

    #[test]
    fn slerp_is_unit_and_halfway() {
        let a = [0.0, 0.0, 0.0, 1.0];
        let h = (0.5f64).sqrt();
        let b = [0.0, 0.0, h, h];
        let q = slerp(a, b, 0.5);
        let ang = 2.0 * q[2].atan2(q[3]);
        assert!((ang - PI / 4.0).abs() < 1e-12);
        assert!((wrap_angle(3.0 * PI) - PI).abs() < 1e-12);
        assert!((wrap_angle(-PI) - PI).abs() < 1e-12);
    }
}
