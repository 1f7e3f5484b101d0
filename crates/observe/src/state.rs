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

/// How a state topic's samples are turned into a value: its spec, the quaternion field
/// groups and which `position` elements are angles (from the fields every sample carries).
#[derive(Debug, Clone)]
pub(crate) struct Interp {
    pub(crate) spec: StateSpec,
    fields: Vec<StateField>,
    /// Field indices (x, y, z, w) of orientation / rotation quaternions.
    quats: Vec<[usize; 4]>,
    position: Option<usize>,
}

/// The state at one anchor: the value and, for `hold`, the id of the sample it used.
pub(crate) type Looked = Option<(StateValue, Option<u64>)>;

impl Interp {
    pub(crate) fn new(spec: &StateSpec, fields: &[StateField]) -> Interp {
        let find = |n: &str| fields.iter().position(|f| f.name == n && !f.list);
        let mut quats = Vec::new();
        for f in fields {
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
        let position = fields.iter().position(|f| f.name == "position" && f.list);
        Interp {
            spec: spec.clone(),
            fields: fields.to_vec(),
            quats,
            position,
        }
    }

    /// The state at `stamp` for an anchor received at `anchor_log_ns`, from the samples of
    /// its epoch at or before (`before`, with its id) and at or after (`after`) the stamp;
    /// `None` when it is unavailable (outside the span, bracket or age beyond `max_gap`).
    pub(crate) fn value(
        &self,
        before: Option<(u64, &StateSample)>,
        after: Option<&StateSample>,
        stamp: i64,
        anchor_log_ns: i64,
    ) -> Looked {
        let gap = match (before, after) {
            (Some((_, b)), Some(a)) => Some(a.stamp_ns.saturating_sub(b.stamp_ns)),
            _ => None,
        };
        let wait = after.map(|a| a.log_time_ns.saturating_sub(anchor_log_ns).max(0));
        let base = StateValue {
            values: Vec::new(),
            names: None,
            before_stamp_ns: before.map(|(_, b)| b.stamp_ns),
            after_stamp_ns: after.map(|a| a.stamp_ns),
            gap_ns: gap,
            online_wait_ns: None,
            hold_age_ns: None,
            reuse_count: None,
        };
        match self.spec.mode {
            StateMode::Hold => {
                let (id, b) = before?;
                let age = stamp.saturating_sub(b.stamp_ns);
                if age > self.spec.max_gap_ns {
                    return None;
                }
                Some((
                    StateValue {
                        values: b.values.clone(),
                        names: b.names.clone(),
                        hold_age_ns: Some(age),
                        ..base
                    },
                    Some(id),
                ))
            }
            StateMode::Nearest | StateMode::Interpolate => {
                let ((_, b), a) = (before?, after?);
                if gap? > self.spec.max_gap_ns {
                    return None;
                }
                let (values, names) = if self.spec.mode == StateMode::Nearest {
                    let k = if stamp - b.stamp_ns <= a.stamp_ns - stamp {
                        b
                    } else {
                        a
                    };
                    (k.values.clone(), k.names.clone())
                } else {
                    (self.interpolate(b, a, stamp), b.names.clone())
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
        let mut out = Vec::new();
        self.interpolate_into(a, b, stamp, &mut out);
        out
    }

    /// [`Interp::interpolate`] into `out`, whose vectors are reused (no allocation once they
    /// have the fields' lengths).
    pub(crate) fn interpolate_into(
        &self,
        a: &StateSample,
        b: &StateSample,
        stamp: i64,
        out: &mut Vec<Vec<f64>>,
    ) {
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
        out.resize_with(a.values.len(), Vec::new);
        for (f, (va, v)) in a.values.iter().zip(out.iter_mut()).enumerate() {
            let vb = b.values.get(f);
            let field = &self.fields[f];
            v.clear();
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
    }

    /// Adds to `sum` and `n` the squared errors of interpolating the middle sample `m` of
    /// three consecutive samples (by stamp, within an epoch) from its neighbours: the
    /// held-out interpolation error, over every numeric element.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn holdout(
        &self,
        a: &StateSample,
        m: &StateSample,
        b: &StateSample,
        sum: &mut f64,
        n: &mut usize,
        scratch: &mut Vec<Vec<f64>>,
    ) {
        if b.stamp_ns.saturating_sub(a.stamp_ns) > self.spec.max_gap_ns.saturating_mul(2) {
            return;
        }
        self.interpolate_into(a, b, m.stamp_ns, scratch);
        for (f, pv) in scratch.iter().enumerate() {
            let angle_field = Some(f) == self.position;
            for (i, &x) in pv.iter().enumerate() {
                let Some(&y) = m.values.get(f).and_then(|v| v.get(i)) else {
                    continue;
                };
                let mut d = x - y;
                if angle_field {
                    let is_c = m
                        .names
                        .as_ref()
                        .and_then(|nm| nm.get(i))
                        .is_some_and(|nm| self.spec.continuous_joints.iter().any(|c| c == nm));
                    if is_c {
                        d = wrap_angle(d);
                    }
                }
                if d.is_finite() {
                    *sum += d * d;
                    *n += 1;
                }
            }
        }
    }
}

/// A stamp this far behind the newest stamp of its series starts a new epoch (a clock reset),
/// so later samples of an epoch are never stamped further back than this behind its newest.
const JUMP: i64 = bagscope_sync::EPOCH_JUMP_NS;

/// One epoch of a state topic as held: its samples sorted by stamp (stable: arrival order on
/// ties), each with its id (arrival number among the topic's samples).
#[derive(Debug, Default)]
struct HeldEpoch {
    samples: std::collections::VecDeque<(u64, StateSample)>,
    /// No sample will join it (a later epoch began, or the topic ended).
    ended: bool,
    /// Index in `samples` of the first sample of the next held-out window.
    holdout_at: usize,
}

/// A state topic read as it arrives, holding what lookups still to come can need: per
/// epoch (the topic's own: its stamps jumping back by [`JUMP`]), the samples sorted by stamp,
/// from the last one at or before the earliest stamp a pending or later anchor can ask for.
/// Lookups are answered once no later sample can change them: samples of the current epoch
/// arrive stamped at least [`JUMP`] before its newest stamp, so everything stamped earlier
/// than that is in its final place.
#[derive(Debug)]
pub(crate) struct StateWindow {
    pub(crate) spec: StateSpec,
    interp: Option<Interp>,
    /// Held epochs; `epochs[0]` is epoch `first_epoch`.
    epochs: std::collections::VecDeque<HeldEpoch>,
    first_epoch: usize,
    /// Epochs begun (epoch 0 exists before any sample).
    n_epochs: usize,
    /// Newest stamp of the current epoch (`i64::MIN`: none yet).
    top: i64,
    /// Samples taken.
    pub(crate) samples: u64,
    holdout_sum: f64,
    holdout_n: usize,
    /// The held-out interpolation's values, reused.
    scratch: Vec<Vec<f64>>,
    /// No sample will come any more.
    done: bool,
    /// Samples held after the last trim (the next trim waits for twice as many).
    trimmed_at: usize,
    /// Fewest samples held before a trim.
    pub(crate) trim_from: usize,
}

impl StateWindow {
    pub(crate) fn new(spec: &StateSpec) -> StateWindow {
        let mut epochs = std::collections::VecDeque::new();
        epochs.push_back(HeldEpoch::default());
        StateWindow {
            spec: spec.clone(),
            interp: None,
            epochs,
            first_epoch: 0,
            n_epochs: 1,
            top: i64::MIN,
            samples: 0,
            holdout_sum: 0.0,
            holdout_n: 0,
            scratch: Vec::new(),
            done: false,
            trimmed_at: 0,
            trim_from: 1024,
        }
    }

    /// The fields every sample carries (known from the first sample).
    pub(crate) fn set_fields(&mut self, fields: &[StateField]) {
        if self.interp.is_none() {
            self.interp = Some(Interp::new(&self.spec, fields));
        }
    }

    /// Samples held now.
    pub(crate) fn held(&self) -> usize {
        self.epochs.iter().map(|e| e.samples.len()).sum()
    }

    fn current(&self) -> usize {
        self.n_epochs - 1
    }

    /// Takes the next sample (in log-time order).
    pub(crate) fn push(&mut self, s: StateSample) {
        if self.top != i64::MIN && s.stamp_ns < self.top.saturating_sub(JUMP) {
            self.end_epoch();
            self.epochs.push_back(HeldEpoch::default());
            self.n_epochs += 1;
            self.top = i64::MIN;
        }
        self.top = self.top.max(s.stamp_ns);
        let id = self.samples;
        self.samples += 1;
        if let Some(e) = self.epochs.back_mut() {
            let at = e.samples.partition_point(|(_, x)| x.stamp_ns <= s.stamp_ns);
            e.samples.insert(at, (id, s));
        }
        self.advance_holdout();
    }

    /// The current epoch ends: every held-out window of it is taken.
    fn end_epoch(&mut self) {
        if let Some(e) = self.epochs.back_mut() {
            e.ended = true;
        }
        self.advance_holdout();
    }

    /// No more samples: the topic ended.
    pub(crate) fn finish(&mut self) {
        if !self.done {
            self.done = true;
            self.end_epoch();
        }
    }

    /// Samples of the current epoch stamped before this are in their final place.
    fn settled_before(&self) -> i64 {
        if self.top == i64::MIN {
            i64::MIN
        } else {
            self.top.saturating_sub(JUMP)
        }
    }

    /// Takes the held-out windows of the current (last) epoch whose samples are all settled.
    fn advance_holdout(&mut self) {
        if self.spec.mode != StateMode::Interpolate {
            return;
        }
        let Some(interp) = &self.interp else { return };
        let m = self.settled_before();
        let Some(e) = self.epochs.back_mut() else {
            return;
        };
        while e.holdout_at + 2 < e.samples.len()
            && (e.ended || e.samples[e.holdout_at + 2].1.stamp_ns < m)
        {
            let k = e.holdout_at;
            interp.holdout(
                &e.samples[k].1,
                &e.samples[k + 1].1,
                &e.samples[k + 2].1,
                &mut self.holdout_sum,
                &mut self.holdout_n,
                &mut self.scratch,
            );
            e.holdout_at += 1;
        }
    }

    /// RMS of the held-out interpolation errors (interpolate mode, once every sample is in).
    pub(crate) fn holdout_rms(&self) -> Option<f64> {
        (self.holdout_n > 0).then(|| (self.holdout_sum / self.holdout_n as f64).sqrt())
    }

    /// The state at `stamp` in `epoch` for an anchor received at `anchor_log_ns`, once no
    /// later sample can change it (`None` while one can: ask again later).
    pub(crate) fn lookup(&self, epoch: usize, stamp: i64, anchor_log_ns: i64) -> Option<Looked> {
        let cur = self.current();
        if epoch > cur && !self.done {
            return None;
        }
        let held = epoch
            .checked_sub(self.first_epoch)
            .and_then(|k| self.epochs.get(k))
            .filter(|_| epoch <= cur);
        let Some(e) = held else {
            // An epoch the topic never reached (or one no lookup was expected in).
            return Some(None);
        };
        let v = &e.samples;
        let after_k = v.partition_point(|(_, x)| x.stamp_ns < stamp);
        let before_k = v.partition_point(|(_, x)| x.stamp_ns <= stamp);
        let before = before_k.checked_sub(1).map(|k| (v[k].0, &v[k].1));
        let after = v.get(after_k).map(|x| &x.1);
        let Some(interp) = &self.interp else {
            // No sample yet: only a topic that ended answers (unavailable).
            return (self.done || epoch < cur).then_some(None);
        };
        if self.done || epoch < cur {
            return Some(interp.value(before, after, stamp, anchor_log_ns));
        }
        // The current epoch: later samples are stamped at `m` or after.
        let m = self.settled_before();
        if stamp >= m {
            return None;
        }
        if after.is_some_and(|a| a.stamp_ns <= m) {
            return Some(interp.value(before, after, stamp, anchor_log_ns));
        }
        // The sample after the stamp may still come; the answer is known already where it
        // is unavailable whatever comes.
        let Some((_, b)) = before else {
            return Some(None);
        };
        let none_whatever_comes = match self.spec.mode {
            StateMode::Hold => stamp.saturating_sub(b.stamp_ns) > self.spec.max_gap_ns,
            StateMode::Nearest | StateMode::Interpolate => {
                let earliest = after.map_or(m, |a| a.stamp_ns.min(m));
                earliest.saturating_sub(b.stamp_ns) > self.spec.max_gap_ns
            }
        };
        none_whatever_comes.then_some(None)
    }

    /// Whether enough samples have come since the last trim to trim again.
    pub(crate) fn wants_trim(&self) -> bool {
        self.held() > (2 * self.trimmed_at).max(self.trim_from)
    }

    /// Drops what no lookup can need any more: `earliest(epoch)` is the earliest stamp a
    /// pending or later anchor of that epoch can ask for (`i64::MIN`: any; `i64::MAX`: none
    /// will). Kept: from the last sample at or before it, and what the held-out windows still
    /// need.
    pub(crate) fn trim(&mut self, earliest: &dyn Fn(usize) -> i64) {
        let cur = self.current();
        for (k, e) in self.epochs.iter_mut().enumerate() {
            let epoch = self.first_epoch + k;
            let need = earliest(epoch);
            let mut cut = match need {
                i64::MIN => 0,
                i64::MAX if e.ended => e.samples.len(),
                _ => e
                    .samples
                    .partition_point(|(_, x)| x.stamp_ns <= need)
                    .saturating_sub(1),
            };
            // An epoch's held-out windows are all taken when it ends.
            if self.spec.mode == StateMode::Interpolate && !e.ended {
                cut = cut.min(e.holdout_at);
            }
            e.samples.drain(..cut);
            e.holdout_at = e.holdout_at.saturating_sub(cut);
        }
        // Whole epochs no lookup can reach any more (the current one is kept).
        while self.epochs.len() > 1
            && self.first_epoch < cur
            && self.epochs[0].ended
            && self.epochs[0].samples.is_empty()
            && earliest(self.first_epoch) == i64::MAX
        {
            self.epochs.pop_front();
            self.first_epoch += 1;
        }
        self.trimmed_at = self.held();
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

    /// Lookups at anchors received at 0 once every sample of `s` (one epoch) is in.
    fn whole<'a>(s: &'a StateSeries, sp: &StateSpec) -> impl Fn(i64) -> Looked + 'a {
        let mut w = StateWindow::new(sp);
        w.set_fields(&s.fields);
        for x in &s.samples {
            w.push(x.clone());
        }
        w.finish();
        move |t| w.lookup(0, t, 0).expect("every sample is in")
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
        let p = whole(&s, &sp);
        let (v, _) = p(5).unwrap();
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
        assert!(p(11).is_none());
        let wide = series(vec![(0, vec![0.0, 0.0]), (30, vec![0.0, 0.0])]);
        assert!(whole(&wide, &sp)(5).is_none());
    }

    #[test]
    fn hold_uses_the_latest_earlier_sample_and_nearest_the_closer() {
        let s = series(vec![(0, vec![1.0, 0.0]), (10, vec![3.0, 0.0])]);
        let sh = spec(StateMode::Hold);
        let (v, used) = whole(&s, &sh)(9).unwrap();
        assert_eq!(
            (v.values[0][0], v.hold_age_ns, used),
            (1.0, Some(9), Some(0))
        );
        let sn = spec(StateMode::Nearest);
        let (v, _) = whole(&s, &sn)(6).unwrap();
        assert_eq!(v.values[0][0], 3.0);
        let (v, _) = whole(&s, &sn)(5).unwrap();
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
