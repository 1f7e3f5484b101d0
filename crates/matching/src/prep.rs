//! Validation, input checks and conversion of a [`JointSeries`] into dense per-joint columns.

use crate::types::{Checks, Finding, JointSeries, MatchError, MatchOptions};
use std::collections::{BTreeMap, BTreeSet};

/// Instances kept per finding kind; counts stay complete.
const MAX_FINDINGS_PER_KIND: usize = 20;
/// Stamps this far from log time mean the two are on different clock axes (e.g. sim time).
const AXIS_MISMATCH_NS: i64 = 3_600_000_000_000;
/// A stamp this much later than its log time is "from the future".
const FUTURE_TOLERANCE_NS: i64 = 1_000_000;

pub(crate) const CMD: &str = "command";
pub(crate) const RESP: &str = "response";

/// Collects findings, keeping complete counts but only the first few instances per kind.
#[derive(Default, Clone)]
pub(crate) struct Sink {
    pub checks: Checks,
}

impl Sink {
    pub(crate) fn add(
        &mut self,
        kind: &str,
        stream: &str,
        index: Option<usize>,
        stamp_ns: Option<i64>,
        joint: Option<&str>,
        detail: String,
    ) {
        let c = self.checks.counts.entry(kind.to_string()).or_insert(0);
        *c += 1;
        if *c <= MAX_FINDINGS_PER_KIND {
            self.checks.findings.push(Finding {
                kind: kind.to_string(),
                stream: stream.to_string(),
                index,
                stamp_ns,
                joint: joint.map(str::to_string),
                detail,
            });
        } else {
            self.checks.truncated = true;
        }
    }
}

/// One stream as sorted times plus one value column per matched joint (NaN = no value).
#[derive(Debug, Clone, Default)]
pub(crate) struct Dense {
    pub t: Vec<i64>,
    /// `v[joint][sample]`.
    pub v: Vec<Vec<f64>>,
}

impl Dense {
    pub(crate) fn len(&self) -> usize {
        self.t.len()
    }

    /// Median spacing of the stamps; `None` with fewer than two samples.
    pub(crate) fn median_period_ns(&self) -> Option<i64> {
        // Streamed: neither the differences nor a copy of them are stored.
        bagscope_stats::median_streamed(|| {
            self.t
                .windows(2)
                .map(|w| w[1].saturating_sub(w[0]))
                .filter(|&d| d > 0)
        })
    }
}

/// Checks the parallel vectors of a series have consistent lengths.
pub(crate) fn validate(s: &JointSeries, stream: &'static str) -> Result<(), MatchError> {
    let n = s.stamp_ns.len();
    if n == 0 {
        return Err(MatchError::Empty { stream });
    }
    let mismatch = |field: &'static str, got: usize| MatchError::LengthMismatch {
        stream,
        field,
        expected: n,
        got,
    };
    if s.names.len() != n {
        return Err(mismatch("names", s.names.len()));
    }
    if s.values.len() != n {
        return Err(mismatch("values", s.values.len()));
    }
    // Log times are optional as a whole, but a partial vector is a caller bug.
    if !s.log_time_ns.is_empty() && s.log_time_ns.len() != n {
        return Err(mismatch("log_time_ns", s.log_time_ns.len()));
    }
    if let Some(p) = &s.points {
        if p.len() != n {
            return Err(mismatch("points", p.len()));
        }
    }
    Ok(())
}

/// All joint names of messages whose names and values agree in length.
pub(crate) fn joint_names(s: &JointSeries) -> BTreeSet<String> {
    // Nearly every message repeats the previous one's names: only new name lists are read.
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut last: Option<&[String]> = None;
    for (n, v) in s.names.iter().zip(&s.values) {
        if n.len() != v.len() || last == Some(&n[..]) {
            continue;
        }
        seen.extend(n.iter().map(String::as_str));
        last = Some(n);
    }
    seen.into_iter().map(str::to_string).collect()
}

/// Wraps an angle difference into (−π, π].
pub(crate) fn wrap_pi(x: f64) -> f64 {
    use std::f64::consts::PI;
    if x.is_finite() && (x > PI || x <= -PI) {
        let r = (x + PI).rem_euclid(2.0 * PI) - PI;
        if r <= -PI {
            r + 2.0 * PI
        } else {
            r
        }
    } else {
        x
    }
}

/// Stable order of the messages by stamp; reports out-of-order and duplicate stamps.
fn sorted_order(stamps: &[i64], stream: &str, sink: &mut Sink) -> Vec<usize> {
    let back = stamps.windows(2).filter(|w| w[1] < w[0]).count();
    if back > 0 {
        sink.add(
            "stamps_not_monotonic",
            stream,
            None,
            None,
            None,
            format!("{back} stamps earlier than their predecessor; messages sorted by stamp"),
        );
    }
    let mut order: Vec<usize> = (0..stamps.len()).collect();
    order.sort_by_key(|&i| stamps[i]); // stable: equal stamps keep arrival order
    let dups = order
        .windows(2)
        .filter(|w| stamps[w[0]] == stamps[w[1]])
        .count();
    if dups > 0 {
        sink.add(
            "duplicate_stamps",
            stream,
            None,
            None,
            None,
            format!("{dups} messages share a stamp with another"),
        );
    }
    order
}

/// How one list of joint names maps onto the matched joints. Messages nearly always repeat
/// the previous message's names, so this is worked out once per distinct list, not per message.
struct Layout<'a> {
    names: &'a [String],
    /// Per name: its matched column, if any.
    col: Vec<Option<usize>>,
    /// Per name: it repeats an earlier name of the list (its value is ignored).
    dup: Vec<bool>,
    /// Per name: the user's limits for it.
    limits: Vec<Option<(f64, f64)>>,
    /// Matched joints the list lacks, in name order.
    missing: Vec<&'a str>,
}

impl<'a> Layout<'a> {
    fn new(names: &'a [String], joint_idx: &BTreeMap<&'a str, usize>, opts: &MatchOptions) -> Self {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let dup = names.iter().map(|n| !seen.insert(n.as_str())).collect();
        Layout {
            names,
            col: names
                .iter()
                .map(|n| joint_idx.get(n.as_str()).copied())
                .collect(),
            dup,
            limits: names.iter().map(|n| opts.limits.get(n).copied()).collect(),
            missing: joint_idx
                .keys()
                .filter(|j| !seen.contains(*j))
                .copied()
                .collect(),
        }
    }
}

/// Maps one message's (names, values) onto the matched joints (into `row`, which holds NaN on
/// entry), reporting problems; `layout` is reused while messages repeat its names. Returns
/// false when the message is unusable.
#[allow(clippy::too_many_arguments)]
fn message_row<'a>(
    names: &'a [String],
    values: &[f64],
    joint_idx: &BTreeMap<&'a str, usize>,
    layout: &mut Option<Layout<'a>>,
    stream: &str,
    k: usize,
    stamp: i64,
    opts: &MatchOptions,
    sink: &mut Sink,
    row: &mut [f64],
) -> bool {
    if names.len() != values.len() {
        sink.add(
            "names_values_length",
            stream,
            Some(k),
            Some(stamp),
            None,
            format!(
                "{} names but {} values; message skipped",
                names.len(),
                values.len()
            ),
        );
        return false;
    }
    // The same shared list as the previous message (usual): no string comparisons.
    if layout
        .as_ref()
        .is_none_or(|l| !std::ptr::eq(l.names, names) && l.names != names)
    {
        *layout = Some(Layout::new(names, joint_idx, opts));
    }
    let Some(l) = layout.as_ref() else {
        return false;
    };
    for (p, (name, &x)) in names.iter().zip(values).enumerate() {
        if l.dup[p] {
            sink.add(
                "duplicate_name",
                stream,
                Some(k),
                Some(stamp),
                Some(name),
                "name repeated; first value used".into(),
            );
            continue;
        }
        if !x.is_finite() {
            sink.add(
                "non_finite",
                stream,
                Some(k),
                Some(stamp),
                Some(name),
                format!("value {x}; ignored"),
            );
            continue;
        }
        if let Some((lo, hi)) = l.limits[p] {
            if x < lo || x > hi {
                sink.add(
                    "outside_limits",
                    stream,
                    Some(k),
                    Some(stamp),
                    Some(name),
                    format!("{x} outside [{lo}, {hi}]"),
                );
            }
        }
        if let Some(cell) = l.col[p].and_then(|j| row.get_mut(j)) {
            *cell = x;
        }
    }
    for name in &l.missing {
        sink.add(
            "missing_joint",
            stream,
            Some(k),
            Some(stamp),
            Some(name),
            "joint absent from this message".into(),
        );
    }
    true
}

/// Keeps the last sample of each `bucket_ns` bucket (on a sorted series).
fn bucket_keep_last(t: &[i64], bucket_ns: i64) -> Vec<usize> {
    let mut keep = Vec::new();
    for i in 0..t.len() {
        let last_in_bucket =
            i + 1 == t.len() || t[i + 1].div_euclid(bucket_ns) != t[i].div_euclid(bucket_ns);
        if last_in_bucket {
            keep.push(i);
        }
    }
    keep
}

/// Prepared stream: message-level columns and, for commands, the sample timeline
/// (multi-point trajectories expanded).
pub(crate) struct Prepared {
    pub messages: Dense,
    pub samples: Dense,
}

/// Sorts, checks, buckets and densifies one stream onto `joints`.
pub(crate) fn prepare(
    s: &JointSeries,
    joints: &[String],
    stream: &'static str,
    opts: &MatchOptions,
    sink: &mut Sink,
) -> Prepared {
    let joint_idx: BTreeMap<&str, usize> = joints
        .iter()
        .enumerate()
        .map(|(j, n)| (n.as_str(), j))
        .collect();
    let nj = joints.len();
    let order = sorted_order(&s.stamp_ns, stream, sink);

    // Message-level rows in stamp order, straight into the columns; unusable messages
    // dropped. `rows` keeps each row's message index and stamp.
    let mut rows: Vec<(usize, i64)> = Vec::with_capacity(order.len());
    let mut messages = Dense {
        t: Vec::with_capacity(order.len()),
        v: vec![Vec::with_capacity(order.len()); nj],
    };
    let mut layout = None;
    let mut row = vec![f64::NAN; nj];
    for &k in &order {
        let stamp = s.stamp_ns[k];
        row.fill(f64::NAN);
        if message_row(
            &s.names[k],
            &s.values[k],
            &joint_idx,
            &mut layout,
            stream,
            k,
            stamp,
            opts,
            sink,
            &mut row,
        ) {
            rows.push((k, stamp));
            messages.t.push(stamp);
            for (col, &x) in messages.v.iter_mut().zip(&row) {
                col.push(x);
            }
        }
    }
    if let Some(b) = opts.bucket_ns.filter(|&b| b > 0) {
        let keep = bucket_keep_last(&messages.t, b);
        rows = keep.iter().map(|&i| rows[i]).collect();
        messages = Dense {
            t: keep.iter().map(|&i| messages.t[i]).collect(),
            v: messages
                .v
                .iter()
                .map(|col| keep.iter().map(|&i| col[i]).collect())
                .collect(),
        };
    }

    let multi_point = s
        .points
        .as_ref()
        .is_some_and(|p| p.iter().any(|m| m.len() >= 2));
    let samples = if multi_point {
        expand_points(s, &rows, &messages, &joint_idx, stream, sink)
    } else {
        messages.clone()
    };
    Prepared { messages, samples }
}

/// Expands multi-point trajectories into timed samples. Point `i` of a message sits at
/// `stamp + tfs_i − tfs_0`; points at or after the next message's stamp are superseded.
fn expand_points(
    s: &JointSeries,
    rows: &[(usize, i64)],
    messages: &Dense,
    joint_idx: &BTreeMap<&str, usize>,
    stream: &str,
    sink: &mut Sink,
) -> Dense {
    let nj = messages.v.len();
    let points = s.points.as_ref().expect("checked by caller");
    let mut out = Dense {
        t: Vec::new(),
        v: vec![Vec::new(); nj],
    };
    for (r, (k, stamp)) in rows.iter().enumerate() {
        let next_stamp = rows.get(r + 1).map(|x| x.1);
        let pts = &points[*k];
        if pts.is_empty() {
            // No points: fall back to the message's own values.
            out.t.push(*stamp);
            for j in 0..nj {
                out.v[j].push(messages.v[j][r]);
            }
            continue;
        }
        let tfs0 = pts[0].0;
        let names = &s.names[*k];
        for (i, (tfs, pos)) in pts.iter().enumerate() {
            let t = stamp.saturating_add(tfs.saturating_sub(tfs0));
            if i > 0 && next_stamp.is_some_and(|n| t >= n) {
                break;
            }
            if i > 0 && out.t.last().is_some_and(|&last| t <= last) {
                sink.add(
                    "points_not_increasing",
                    stream,
                    Some(*k),
                    Some(*stamp),
                    None,
                    format!("point {i} not after the previous one; skipped"),
                );
                continue;
            }
            if pos.len() != names.len() {
                sink.add(
                    "names_values_length",
                    stream,
                    Some(*k),
                    Some(*stamp),
                    None,
                    format!(
                        "point {i}: {} positions for {} names; point skipped",
                        pos.len(),
                        names.len()
                    ),
                );
                continue;
            }
            let mut vals = vec![f64::NAN; nj];
            for (name, &x) in names.iter().zip(pos) {
                if let Some(&j) = joint_idx.get(name.as_str()) {
                    if x.is_finite() && vals[j].is_nan() {
                        vals[j] = x;
                    }
                }
            }
            out.t.push(t);
            for j in 0..nj {
                out.v[j].push(vals[j]);
            }
        }
    }
    out
}

/// Stale / future command stamps against log time.
pub(crate) fn check_command_age(s: &JointSeries, opts: &MatchOptions, sink: &mut Sink) {
    if s.log_time_ns.len() != s.stamp_ns.len() || s.log_time_ns.is_empty() {
        return;
    }
    let ages = || {
        s.log_time_ns
            .iter()
            .zip(&s.stamp_ns)
            .map(|(&l, &st)| l.saturating_sub(st))
    };
    let med = bagscope_stats::median_streamed(ages).unwrap_or(0);
    if med.saturating_abs() > AXIS_MISMATCH_NS {
        // Comparing sim stamps with wall log times would flag every message.
        sink.add(
            "age_check_skipped",
            CMD,
            None,
            None,
            None,
            format!("stamps and log times differ by {:.1} s (different clock axes); stale/future checks skipped", med as f64 / 1e9),
        );
        return;
    }
    for (k, age) in ages().enumerate() {
        if let Some(max_age) = opts.max_command_age_ns {
            if age > max_age {
                sink.add(
                    "stale_command",
                    CMD,
                    Some(k),
                    Some(s.stamp_ns[k]),
                    None,
                    format!(
                        "logged {:.1} ms after its stamp (max {:.1} ms)",
                        age as f64 / 1e6,
                        max_age as f64 / 1e6
                    ),
                );
            }
        }
        if age < -FUTURE_TOLERANCE_NS {
            sink.add(
                "future_command",
                CMD,
                Some(k),
                Some(s.stamp_ns[k]),
                None,
                format!("stamp {:.1} ms after its log time", -(age as f64) / 1e6),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_into_half_open_interval() {
        use std::f64::consts::PI;
        assert!((wrap_pi(2.0 * PI + 0.1) - 0.1).abs() < 1e-12);
        assert!((wrap_pi(-PI - 0.1) - (PI - 0.1)).abs() < 1e-12);
        assert_eq!(wrap_pi(PI), PI);
        assert!(wrap_pi(f64::NAN).is_nan());
    }

    #[test]
    fn bucket_keeps_last_per_bucket() {
        let t = [0, 3, 9, 10, 15, 31];
        assert_eq!(bucket_keep_last(&t, 10), vec![2, 4, 5]);
    }
}
