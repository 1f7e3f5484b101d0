//! The transform tree over the whole bag: one entry per (parent, child, static) edge with its
//! rate, gaps and backward jumps, plus structural problems (several parents for one child, two
//! publishers fighting over one child, a child both static and dynamic).

use bagscope_clocks::{backward_jumps, BackwardJump, JumpRule};
use bagscope_types::{Warning, WarningCode};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use bagscope_stats::{median_ns, NsSummary};
use serde::Serialize;

use crate::{strip_slash, Frame, TfById, TfMessage};

/// Gaps listed per edge at most (the count is always complete).
const MAX_GAPS_LISTED: usize = 20;

/// Edges timed at most: the busiest this many (parent, child, static) edges of a bag. A robot's
/// tree has tens to hundreds; TF messages naming a million frames once each (2.5 MB of bag)
/// must not cost gigabytes and an 80 MB report. The others are counted ([`UntimedEdges`]).
pub const MAX_TIMED_EDGES: usize = 1024;

/// Counters of the pass that finds the busiest edges (Misra–Gries): while a bag has no more
/// distinct edges than this, its counts are exact; beyond, every edge carrying more than
/// 1/`EDGE_COUNTERS` of the transforms is still found.
const EDGE_COUNTERS: usize = 4 * MAX_TIMED_EDGES;

/// Distinct edges counted one by one beyond the timed ones, at most.
const UNTIMED_COUNTED: usize = 1 << 16;

/// An interval between consecutive stamps of an edge longer than its gap threshold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// The header stamp before the gap, in nanoseconds.
    pub from_stamp_ns: i64,
    /// The header stamp after the gap, in nanoseconds.
    pub to_stamp_ns: i64,
    /// `to_stamp_ns − from_stamp_ns`.
    pub length_ns: i64,
}

/// One (parent, child, static) edge of the tree over the whole bag.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EdgeReport {
    /// The parent frame (leading `/` stripped).
    pub parent: String,
    /// The child frame (leading `/` stripped).
    pub child: String,
    /// Carried by a static TF topic.
    pub is_static: bool,
    /// TF topics that carried this edge, sorted.
    pub topics: Vec<String>,
    /// Transforms received for the edge.
    pub samples: usize,
    /// Earliest header stamp of the edge, in nanoseconds.
    pub first_stamp_ns: i64,
    /// Latest header stamp of the edge, in nanoseconds.
    pub last_stamp_ns: i64,
    /// (samples − 1) / stamp span; `None` for static edges or fewer than two distinct stamps.
    pub rate_hz: Option<f64>,
    /// Intervals between consecutive distinct stamps (sorted by stamp).
    pub period_ns: Option<NsSummary>,
    /// An interval longer than this is a gap: 3 × the median period; `None` for static edges
    /// and edges with fewer than two distinct stamps.
    pub gap_threshold_ns: Option<i64>,
    /// Gaps found (all of them).
    pub gaps_total: usize,
    /// The first gaps in stamp order, at most 20.
    pub gaps: Vec<Gap>,
    /// TF lag: log time of the message − the transform's header stamp, over the edge's
    /// transforms; `None` for static edges (latched: their stamp is not when they were sent).
    pub lag_ns: Option<NsSummary>,
    /// A backward step of the edge's stamps (in arrival order) larger than this is a jump:
    /// `clocks`' rule for header-stamped topics (5 median periods, clamped to 100 ms ..= 1 s by
    /// default), on the stamps of the edge's TF topic (of its busiest one when it has several);
    /// `None` for static edges.
    pub jump_threshold_ns: Option<i64>,
    /// The edge's stamps going back in time beyond the threshold (a simulator reset or a clock
    /// step), per TF topic, in log-time order; empty for static edges.
    pub backward_jumps: Vec<EdgeJump>,
}

/// A backward jump of one TF edge's stamps on one TF topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EdgeJump {
    /// The TF topic whose transforms of the edge jumped.
    pub topic: String,
    /// Where and how far (log time of the transform's message, previous and new stamp).
    #[serde(flatten)]
    pub jump: BackwardJump,
}

/// A structural problem of one child frame.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// `multiple_parents`, `competing_publishers`, `static_and_dynamic`.
    pub code: WarningCode,
    /// The child frame concerned.
    pub child: String,
    /// Every parent it was given, sorted.
    pub parents: Vec<String>,
    /// Every TF topic that carried it, sorted.
    pub topics: Vec<String>,
    /// The problem in words, naming the frames.
    pub message: String,
}

/// The edges of a bag beyond the [`MAX_TIMED_EDGES`] busiest: counted, not timed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UntimedEdges {
    /// Distinct edges left out; a lower bound when `at_least` is set.
    pub edges: usize,
    /// More edges were left out than were counted one by one (65 536).
    pub at_least: bool,
    /// Transforms on the edges left out.
    pub transforms: usize,
}

/// The transform tree over the whole bag ([`analyze_tree`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeReport {
    /// Every frame named by a timed edge's transforms, sorted.
    pub frames: Vec<String>,
    /// Sorted by (parent, child, is_static); the [`MAX_TIMED_EDGES`] busiest at most.
    pub edges: Vec<EdgeReport>,
    /// Sorted by (code, child); from the timed edges.
    pub findings: Vec<Finding>,
    /// TF messages read.
    pub tf_messages: usize,
    /// Transforms in them, invalid ones (empty frame, child equal to parent) included.
    pub transforms: usize,
    /// The edges beyond the [`MAX_TIMED_EDGES`] busiest; None when every edge is timed.
    pub untimed_edges: Option<UntimedEdges>,
}

#[derive(Default)]
struct EdgeAcc {
    /// TF topics (places in the topic list) that carried the edge, in the order first seen.
    topics: Vec<usize>,
    /// Stamps in arrival order.
    stamps: Vec<i64>,
    /// The log time of each transform's message.
    logs: Vec<i64>,
    /// The TF topic (place in the topic list) of each transform; empty while the edge has come
    /// on one topic only (`first_source`).
    sources: Vec<usize>,
    first_source: Option<usize>,
}

#[derive(Default)]
struct ChildAcc {
    /// Parents (frame ids), in the order first seen.
    parents: Vec<u32>,
    /// TF topics (places in the topic list), in the order first seen.
    topics: Vec<usize>,
    /// Seen on a dynamic topic, on a static one.
    kinds: [bool; 2],
    /// The last parent in arrival order, to count switches back and forth.
    last_parent: Option<u32>,
    switches: usize,
}

/// Pushes `x` unless `v` holds it (a handful of values: a linear search).
fn add_once<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// An edge's key for counting: a hash of (parent, child, static). Two edges that collide are
/// both timed or both not; the tables stay bounded either way.
fn edge_key(parent: &str, child: &str, is_static: bool) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (parent, child, is_static).hash(&mut h);
    h.finish()
}

/// The keys of the [`MAX_TIMED_EDGES`] busiest edges of `keys` (one per valid transform). One
/// pass, [`EDGE_COUNTERS`] counters (Misra–Gries: a full table takes one from every count
/// instead of admitting a new edge), so memory does not grow with the edges.
fn busiest_edges(keys: impl Iterator<Item = u64>) -> HashSet<u64> {
    let mut counts: HashMap<u64, (u64, u64)> = Default::default();
    let mut seen = 0u64;
    for k in keys {
        if let Some(e) = counts.get_mut(&k) {
            e.0 += 1;
        } else if counts.len() < EDGE_COUNTERS {
            counts.insert(k, (1, seen));
            seen += 1;
        } else {
            counts.retain(|_, e| {
                e.0 -= 1;
                e.0 > 0
            });
        }
    }
    // The highest counts; ties to the edge seen first.
    let mut v: Vec<(u64, (u64, u64))> = counts.into_iter().collect();
    v.sort_unstable_by_key(|&(_, (n, first))| (std::cmp::Reverse(n), first));
    v.into_iter()
        .take(MAX_TIMED_EDGES)
        .map(|(k, _)| k)
        .collect()
}

/// `tf_topics[m.source]` names each message's topic (unknown indices show as `?`). `msgs()`
/// yields the messages (by reference or by value: a caller that builds each message as it
/// goes holds none) in log-time order; it is called once.
/// Backward jumps by `clocks`' default rule ([`analyze_tree_with`] for another).
pub fn analyze_tree<M, I>(tf_topics: &[String], msgs: impl Fn() -> I) -> TreeReport
where
    M: std::borrow::Borrow<TfMessage>,
    I: IntoIterator<Item = M>,
{
    analyze_tree_with(tf_topics, msgs, &JumpRule::default())
}

/// [`analyze_tree`] with the backward-jump rule `jump` (`ClocksOptions::jump_rule`): the
/// messages' frames named by ids ([`TfById::of_messages`]), then [`analyze_tree_by_ids`].
pub fn analyze_tree_with<M, I>(
    tf_topics: &[String],
    msgs: impl Fn() -> I,
    jump: &JumpRule,
) -> TreeReport
where
    M: std::borrow::Borrow<TfMessage>,
    I: IntoIterator<Item = M>,
{
    analyze_tree_by_ids(&TfById::of_messages(tf_topics.to_vec(), msgs()), jump)
}

/// Frame ids as tf2 reads the names: one leading `/` stripped, so that `/odom` and `odom` are
/// one frame. What the tree and the timing key frames by.
pub(crate) struct TreeFrames {
    /// The tree's id of each of the messages' frame ids.
    of: Vec<u32>,
    /// The names, by the tree's id.
    pub(crate) names: Vec<String>,
}

impl TreeFrames {
    pub(crate) fn of(frames: &[Frame]) -> TreeFrames {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut names = Vec::new();
        let mut of = Vec::with_capacity(frames.len());
        for f in frames {
            let name = strip_slash(f);
            let id = *ids.entry(name).or_insert_with(|| {
                names.push(name.to_string());
                (names.len() - 1) as u32
            });
            of.push(id);
        }
        TreeFrames { of, names }
    }

    /// The tree's ids of a transform's (parent, child), None for an invalid one (a frame
    /// empty or unknown, the child its own parent): tf2 refuses it.
    #[inline]
    pub(crate) fn edge(&self, p: u32, c: u32) -> Option<(u32, u32)> {
        let p = *self.of.get(p as usize)?;
        let c = *self.of.get(c as usize)?;
        let named = |i: u32| !self.names[i as usize].is_empty();
        (p != c && named(p) && named(c)).then_some((p, c))
    }
}

/// A hasher for integer edge keys (one multiply, no SipHash).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u128(&mut self, x: u128) {
        for half in [x as u64, (x >> 64) as u64] {
            self.0 = (self.0 ^ half).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
}

pub(crate) type KeyMap<V> = HashMap<u128, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// An edge by the tree's frame ids, as one integer.
#[inline]
pub(crate) fn id_key(p: u32, c: u32, is_static: bool) -> u128 {
    (u128::from(p) << 64) | (u128::from(c) << 1) | u128::from(is_static)
}

/// What [`analyze_tree_by_ids`] gathers in its pass over the messages.
#[derive(Default)]
struct Acc {
    /// Edges ((parent, child, static) by the tree's ids) in the order first seen.
    edges: Vec<((u32, u32, bool), EdgeAcc)>,
    edge_of: KeyMap<usize>,
    /// The edge of the previous message's transform at each place: a TF publisher sends the
    /// same edges in the same order, so this is nearly always the one.
    recent: Vec<(u128, usize)>,
    /// Per frame (tree id): its place in `children`, or `u32::MAX`.
    child_of: Vec<u32>,
    children: Vec<(u32, ChildAcc)>,
    /// Per frame (tree id): named by a timed edge.
    named: Vec<bool>,
    transforms: usize,
    n_msgs: usize,
    /// Keys of the edges left out (the first [`UNTIMED_COUNTED`]).
    untimed: HashSet<u64>,
    untimed_more: bool,
    untimed_transforms: usize,
}

impl Acc {
    /// The edges of `tf`: those of `timed` only, or with None all of them, unless there are
    /// more than [`MAX_TIMED_EDGES`] (None then: the caller picks the busiest first).
    fn of(tf: &TfById, frames: &TreeFrames, timed: Option<&HashSet<u64>>) -> Option<Acc> {
        let mut a = Acc {
            child_of: vec![u32::MAX; frames.names.len()],
            named: vec![false; frames.names.len()],
            ..Acc::default()
        };
        for m in &tf.msgs {
            a.n_msgs += 1;
            let transforms = tf
                .transforms
                .get(m.start..m.start + m.len)
                .unwrap_or_default();
            for (k, &(p, c, stamp)) in transforms.iter().enumerate() {
                a.transforms += 1;
                let Some((p, c)) = frames.edge(p, c) else {
                    continue;
                };
                if let Some(timed) = timed {
                    let names = &frames.names;
                    let key = edge_key(&names[p as usize], &names[c as usize], m.is_static);
                    if !timed.contains(&key) {
                        a.untimed_transforms += 1;
                        if a.untimed.len() < UNTIMED_COUNTED {
                            a.untimed.insert(key);
                        } else if !a.untimed.contains(&key) {
                            a.untimed_more = true;
                        }
                        continue;
                    }
                }
                let key = id_key(p, c, m.is_static);
                let e = match a.recent.get(k) {
                    Some(&(rk, e)) if rk == key => e,
                    _ => {
                        let next = a.edges.len();
                        let e = *a.edge_of.entry(key).or_insert(next);
                        if e == next {
                            if timed.is_none() && next >= MAX_TIMED_EDGES {
                                return None;
                            }
                            a.edges.push(((p, c, m.is_static), EdgeAcc::default()));
                        }
                        if k >= a.recent.len() {
                            a.recent.resize(k + 1, (u128::MAX, 0));
                        }
                        a.recent[k] = (key, e);
                        e
                    }
                };
                let e = &mut a.edges[e].1;
                add_once(&mut e.topics, m.topic);
                match e.first_source {
                    None => e.first_source = Some(m.topic),
                    Some(f) if f != m.topic && e.sources.is_empty() => {
                        // A second topic: from now on each transform's topic is kept.
                        e.sources = vec![f; e.stamps.len()];
                    }
                    _ => {}
                }
                if !e.sources.is_empty() {
                    e.sources.push(m.topic);
                }
                e.stamps.push(stamp);
                e.logs.push(m.log_time_ns);
                a.named[p as usize] = true;
                a.named[c as usize] = true;
                let slot = &mut a.child_of[c as usize];
                if *slot == u32::MAX {
                    *slot = a.children.len() as u32;
                    a.children.push((c, ChildAcc::default()));
                }
                let ch = &mut a.children[*slot as usize].1;
                add_once(&mut ch.parents, p);
                add_once(&mut ch.topics, m.topic);
                ch.kinds[usize::from(m.is_static)] = true;
                if ch.last_parent != Some(p) {
                    if ch.last_parent.is_some() {
                        ch.switches += 1;
                    }
                    ch.last_parent = Some(p);
                }
            }
        }
        Some(a)
    }
}

/// [`analyze_tree_with`] of messages whose frames are named by ids: a transform costs a few
/// integer comparisons, not string lookups (`clocks` times millions of them). The messages are
/// read once, or when they carry more than [`MAX_TIMED_EDGES`] edges three times (the pass
/// that meets too many edges stops there; one finds the busiest; one times them).
pub fn analyze_tree_by_ids(tf: &TfById, jump: &JumpRule) -> TreeReport {
    let frames = TreeFrames::of(&tf.frames);
    let tf_topics = &tf.topics;
    // Every edge, while the bag has no more than the limit (one pass, as almost every bag);
    // else the busiest edges first, then those alone.
    let (acc, timed) = match Acc::of(tf, &frames, None) {
        Some(acc) => (acc, false),
        None => {
            let (frames, names) = (&frames, &frames.names);
            let keys = tf.msgs.iter().flat_map(|m| {
                let t = tf
                    .transforms
                    .get(m.start..m.start + m.len)
                    .unwrap_or_default();
                t.iter().filter_map(move |&(p, c, _)| {
                    let (p, c) = frames.edge(p, c)?;
                    Some(edge_key(
                        &names[p as usize],
                        &names[c as usize],
                        m.is_static,
                    ))
                })
            });
            let timed = busiest_edges(keys);
            let acc = Acc::of(tf, frames, Some(&timed)).expect("no limit");
            (acc, true)
        }
    };
    let Acc {
        mut edges,
        children,
        named,
        transforms,
        n_msgs,
        untimed,
        untimed_more,
        untimed_transforms,
        ..
    } = acc;
    let names = &frames.names;
    let topic_names = |ks: &[usize]| -> Vec<String> {
        let set: BTreeSet<&str> = ks
            .iter()
            .map(|&k| tf_topics.get(k).map_or("?", String::as_str))
            .collect();
        set.into_iter().map(str::to_string).collect()
    };
    // The order of (parent, child, is_static), names compared as strings.
    edges.sort_unstable_by(|((p1, c1, s1), _), ((p2, c2, s2), _)| {
        (&names[*p1 as usize], &names[*c1 as usize], s1).cmp(&(
            &names[*p2 as usize],
            &names[*c2 as usize],
            s2,
        ))
    });
    // Edges are independent (each sorts and summarises its own stamps): on all cores.
    let edges = edges
        .into_par_iter()
        .map(|((p, c, is_static), acc)| {
            let topics = topic_names(&acc.topics);
            edge_report(
                names[p as usize].clone(),
                names[c as usize].clone(),
                is_static,
                topics,
                acc,
                tf_topics,
                jump,
            )
        })
        .collect();
    let mut findings = Vec::new();
    for (c, ch) in &children {
        let child = &names[*c as usize];
        let mut parents: Vec<String> = ch
            .parents
            .iter()
            .map(|&p| names[p as usize].clone())
            .collect();
        parents.sort_unstable();
        let topics = topic_names(&ch.topics);
        let f = |code: WarningCode, message: String| Finding {
            code,
            child: child.clone(),
            parents: parents.clone(),
            topics: topics.clone(),
            message,
        };
        if parents.len() > 1 {
            findings.push(f(
                WarningCode::MultipleParents,
                format!(
                    "frame {child} has {} parents ({}): a frame has one parent in tf2; lookups follow whichever was received last before the stamp",
                    parents.len(),
                    parents.join(", ")
                ),
            ));
        }
        // Alternating back and forth, or the same child on two dynamic TF topics, is two
        // publishers overwriting each other.
        let dyn_topics = topics.len() > 1 && !ch.kinds[1];
        if ch.switches >= 2 || dyn_topics {
            findings.push(f(
                WarningCode::CompetingPublishers,
                format!(
                    "frame {child} is published by more than one source ({} parent switches, topics {}): transforms jump between them",
                    ch.switches,
                    topics.join(", ")
                ),
            ));
        }
        if ch.kinds[0] && ch.kinds[1] {
            findings.push(f(
                WarningCode::StaticAndDynamic,
                format!("frame {child} arrives on both static and dynamic TF: tf2 keeps the kind of the first one received"),
            ));
        }
    }
    findings.sort();
    let mut frames: Vec<String> = named
        .iter()
        .zip(names)
        .filter(|(n, _)| **n)
        .map(|(_, name)| name.clone())
        .collect();
    frames.sort_unstable();
    TreeReport {
        frames,
        edges,
        findings,
        tf_messages: n_msgs,
        transforms,
        untimed_edges: timed.then_some(UntimedEdges {
            edges: untimed.len(),
            at_least: untimed_more,
            transforms: untimed_transforms,
        }),
    }
}

/// The backward jumps of a dynamic edge: on each TF topic's transforms of it on their own (two
/// publishers of one edge interleaved are not one clock), and the threshold of the busiest.
fn edge_jumps(acc: &EdgeAcc, tf_topics: &[String], rule: &JumpRule) -> (i64, Vec<EdgeJump>) {
    let name = |k: usize| tf_topics.get(k).map_or("?", String::as_str).to_string();
    if acc.sources.is_empty() {
        let j = backward_jumps(&acc.stamps, &acc.logs, rule);
        let topic = name(acc.first_source.unwrap_or(usize::MAX));
        let jumps = j
            .jumps
            .into_iter()
            .map(|jump| EdgeJump {
                topic: topic.clone(),
                jump,
            })
            .collect();
        return (j.threshold_ns, jumps);
    }
    let ks: BTreeSet<usize> = acc.sources.iter().copied().collect();
    let (mut threshold, mut most) = (0, 0);
    let mut jumps = Vec::new();
    for k in ks {
        let (stamps, logs): (Vec<i64>, Vec<i64>) = acc
            .sources
            .iter()
            .zip(acc.stamps.iter().zip(&acc.logs))
            .filter(|(s, _)| **s == k)
            .map(|(_, (s, l))| (*s, *l))
            .unzip();
        let j = backward_jumps(&stamps, &logs, rule);
        if stamps.len() > most {
            (threshold, most) = (j.threshold_ns, stamps.len());
        }
        let topic = name(k);
        jumps.extend(j.jumps.into_iter().map(|jump| EdgeJump {
            topic: topic.clone(),
            jump,
        }));
    }
    jumps.sort_by(|a, b| (a.jump, &a.topic).cmp(&(b.jump, &b.topic)));
    (threshold, jumps)
}

fn edge_report(
    parent: String,
    child: String,
    is_static: bool,
    topics: Vec<String>,
    acc: EdgeAcc,
    tf_topics: &[String],
    rule: &JumpRule,
) -> EdgeReport {
    let (jump_threshold_ns, backward_jumps) = if is_static {
        (None, Vec::new())
    } else {
        let (t, j) = edge_jumps(&acc, tf_topics, rule);
        (Some(t), j)
    };
    // The log times become the lags (log time − stamp), in place.
    let mut lags = acc.logs;
    for (l, s) in lags.iter_mut().zip(&acc.stamps) {
        *l = l.saturating_sub(*s);
    }
    let mut s = acc.stamps;
    let samples = s.len();
    s.sort_unstable();
    s.dedup();
    let (first, last) = (
        s.first().copied().unwrap_or(0),
        s.last().copied().unwrap_or(0),
    );
    let periods: Vec<i64> = s.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    let dynamic = !is_static && !periods.is_empty();
    let threshold = if dynamic {
        median_ns(&periods).map(|m| m.saturating_mul(3))
    } else {
        None
    };
    let mut gaps = Vec::new();
    let mut gaps_total = 0;
    if let Some(th) = threshold {
        for w in s.windows(2) {
            let len = w[1].saturating_sub(w[0]);
            if len > th {
                gaps_total += 1;
                if gaps.len() < MAX_GAPS_LISTED {
                    gaps.push(Gap {
                        from_stamp_ns: w[0],
                        to_stamp_ns: w[1],
                        length_ns: len,
                    });
                }
            }
        }
    }
    let span = last.saturating_sub(first);
    EdgeReport {
        parent,
        child,
        is_static,
        topics,
        samples,
        first_stamp_ns: first,
        last_stamp_ns: last,
        rate_hz: (dynamic && span > 0).then(|| periods.len() as f64 * 1e9 / span as f64),
        period_ns: if dynamic {
            NsSummary::of(&periods)
        } else {
            None
        },
        gap_threshold_ns: threshold,
        gaps_total,
        gaps,
        lag_ns: if is_static {
            None
        } else {
            NsSummary::of_in_place(&mut lags)
        },
        jump_threshold_ns,
        backward_jumps,
    }
}

/// The `clock_jump_back` warnings of TF edges whose stamps went back (`edges` as
/// [`analyze_tree`] reports them): one per TF topic, naming the topic and each edge that
/// jumped on it, worded as `clocks` words a header-stamped topic's.
pub fn jump_warnings(edges: &[EdgeReport]) -> Vec<Warning> {
    // topic → (edge, its jumps on that topic), in edge order.
    let mut by_topic: BTreeMap<&str, Vec<(String, Vec<BackwardJump>)>> = BTreeMap::new();
    for e in edges {
        let mut on: BTreeMap<&str, Vec<BackwardJump>> = BTreeMap::new();
        for j in &e.backward_jumps {
            on.entry(j.topic.as_str()).or_default().push(j.jump);
        }
        for (topic, jumps) in on {
            by_topic
                .entry(topic)
                .or_default()
                .push((format!("edge {} -> {}", e.parent, e.child), jumps));
        }
    }
    by_topic
        .into_iter()
        .map(|(topic, edges)| {
            let parts: Vec<String> = edges
                .iter()
                .filter_map(|(what, jumps)| bagscope_clocks::clock_jump_back_text(what, jumps))
                .collect();
            Warning::new(
                WarningCode::ClockJumpBack,
                format!(
                    "{topic}'s transform stamps went back in time on {} edge(s): {}; {}",
                    edges.len(),
                    parts.join("; "),
                    bagscope_clocks::CLOCK_JUMP_BACK_ADVICE
                ),
            )
            .topic(topic)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TfTransform;

    fn m(source: usize, is_static: bool, parent: &str, child: &str, stamp: i64) -> TfMessage {
        TfMessage {
            log_time_ns: stamp,
            source,
            is_static,
            transforms: vec![TfTransform {
                parent: parent.into(),
                child: child.into(),
                stamp_ns: stamp,
            }],
        }
    }

    /// One message of `n` transforms naming distinct frames (`tag` keeps them apart).
    fn junk(tag: &str, n: usize, log: i64) -> TfMessage {
        TfMessage {
            log_time_ns: log,
            source: 0,
            is_static: false,
            transforms: (0..n)
                .map(|i| TfTransform {
                    parent: format!("{tag}_p{i}").into(),
                    child: format!("{tag}_c{i}").into(),
                    stamp_ns: log,
                })
                .collect(),
        }
    }

    #[test]
    fn edges_beyond_the_limit_are_counted_not_timed() {
        let topics = vec!["/tf".to_string()];
        // 3 messages of 10 000 edges each (once each), then the robot's two busy edges.
        let mut v: Vec<TfMessage> = (0..3).map(|j| junk(&format!("j{j}"), 10_000, j)).collect();
        for k in 0..300 {
            v.push(m(0, false, "odom", "base_link", 1_000 + k * 10_000_000));
            v.push(m(0, false, "base_link", "arm", 1_000 + k * 10_000_000));
        }
        let r = analyze_tree(&topics, || &v);
        assert_eq!(r.edges.len(), MAX_TIMED_EDGES);
        assert_eq!(r.transforms, 30_600);
        // The busy edges came last, and are timed in full all the same.
        for child in ["base_link", "arm"] {
            let e = r.edges.iter().find(|e| e.child == child).unwrap();
            assert_eq!(e.samples, 300);
            assert!((e.rate_hz.unwrap() - 100.0).abs() < 1e-9);
        }
        let u = r.untimed_edges.clone().unwrap();
        assert_eq!(u.edges, 30_002 - MAX_TIMED_EDGES);
        assert!(!u.at_least);
        assert_eq!(u.transforms, 30_002 - MAX_TIMED_EDGES);
        // Frames and findings are those of the timed edges.
        assert_eq!(r.frames.len(), 2 * (MAX_TIMED_EDGES - 2) + 3);
        // More edges than are counted one by one: a lower bound.
        let v = vec![junk("a", 40_000, 0), junk("b", 40_000, 1)];
        let r = analyze_tree(&topics, || &v);
        let u = r.untimed_edges.unwrap();
        assert_eq!((u.edges, u.at_least), (UNTIMED_COUNTED, true));
        assert_eq!(u.transforms, 80_000 - MAX_TIMED_EDGES);
        // Exactly the limit: every edge timed, one pass.
        let v = vec![junk("a", MAX_TIMED_EDGES, 0)];
        let calls = std::cell::Cell::new(0);
        let r = analyze_tree(&topics, || {
            calls.set(calls.get() + 1);
            &v
        });
        assert_eq!(
            (r.edges.len(), r.untimed_edges, calls.get()),
            (MAX_TIMED_EDGES, None, 1)
        );
    }

    /// Frames by id: `/odom` and `odom` are one frame (one edge, one child with one parent);
    /// empty and self-referencing transforms are counted but make no edge or frame; an edge
    /// on two topics lists both; ids past the frames are invalid transforms. The same tree as
    /// from the messages by name.
    #[test]
    fn frames_by_id_as_tf2_reads_them() {
        let topics = vec!["/tf".to_string(), "/robot/tf".into()];
        let frames: Vec<crate::Frame> = ["odom", "/odom", "base_link", ""]
            .into_iter()
            .map(Into::into)
            .collect();
        let (odom, odom1, base, empty) = (0, 1, 2, 3);
        let mut tf = TfById {
            topics: topics.clone(),
            frames,
            transforms: Vec::new(),
            msgs: Vec::new(),
        };
        let push = |tf: &mut TfById, k: i64, topic: usize, t: &[(u32, u32)]| {
            tf.msgs.push(crate::TfMsgById {
                log_time_ns: k,
                topic,
                is_static: false,
                start: tf.transforms.len(),
                len: t.len(),
            });
            tf.transforms.extend(t.iter().map(|&(p, c)| (p, c, k)));
        };
        for k in 0..10i64 {
            let p = if k % 2 == 0 { odom } else { odom1 };
            push(&mut tf, k, 0, &[(p, base), (base, base), (empty, base)]);
            push(&mut tf, k, 1, &[(odom, base), (u32::MAX, base)]);
        }
        let r = analyze_tree_by_ids(&tf, &JumpRule::default());
        assert_eq!(r.frames, vec!["base_link", "odom"]);
        assert_eq!(r.tf_messages, 20);
        assert_eq!(r.transforms, 50);
        assert_eq!(r.edges.len(), 1);
        let e = &r.edges[0];
        assert_eq!((e.parent.as_str(), e.child.as_str()), ("odom", "base_link"));
        assert_eq!(e.samples, 20);
        assert_eq!(e.topics, topics.iter().rev().cloned().collect::<Vec<_>>());
        // The same child on two dynamic topics: two publishers; one parent only.
        let codes: Vec<&str> = r.findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, vec!["competing_publishers"]);
        // The same through TfMessages with names.
        let msgs: Vec<TfMessage> = (0..10i64)
            .flat_map(|k| {
                let p = if k % 2 == 0 { "odom" } else { "/odom" };
                let mut a = m(0, false, p, "base_link", k);
                for parent in ["base_link", ""] {
                    a.transforms.push(TfTransform {
                        parent: parent.into(),
                        child: "base_link".into(),
                        stamp_ns: k,
                    });
                }
                [a, m(1, false, "odom", "base_link", k)]
            })
            .collect();
        let by_name = analyze_tree(&topics, || &msgs);
        assert_eq!(by_name.edges, r.edges);
        assert_eq!(by_name.frames, r.frames);
        assert_eq!(by_name.findings, r.findings);
        assert_eq!(by_name.transforms, 40);
    }

    #[test]
    fn rates_gaps_and_findings() {
        let topics = vec!["/tf".to_string(), "/tf_static".into(), "/tf2".into()];
        let mut v = vec![m(1, true, "base_link", "lidar", 0)];
        for k in 0..100 {
            if !(40..60).contains(&k) {
                v.push(m(0, false, "odom", "base_link", k * 20_000_000));
            }
        }
        // Two publishers alternating parents for one child.
        for k in 0..6 {
            let p = if k % 2 == 0 { "a" } else { "b" };
            v.push(m(2 * (k % 2), false, p, "fought", k as i64));
        }
        let r = analyze_tree(&topics, || &v);
        assert_eq!(r.untimed_edges, None);
        let e = r.edges.iter().find(|e| e.child == "base_link").unwrap();
        assert_eq!(e.samples, 80);
        // Received at its stamp: no lag; static edges have none.
        assert_eq!(e.lag_ns.as_ref().map(|l| (l.min, l.max)), Some((0, 0)));
        assert_eq!(e.gaps_total, 1);
        assert_eq!(e.gaps[0].length_ns, 21 * 20_000_000);
        assert!((e.rate_hz.unwrap() - 79.0 / 1.98).abs() < 1e-9);
        let codes: Vec<&str> = r.findings.iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, vec!["competing_publishers", "multiple_parents"]);
        assert!(r
            .edges
            .iter()
            .any(|e| e.is_static && e.rate_hz.is_none() && e.lag_ns.is_none()));
    }

    /// An edge whose stamps go back 10 s (a simulator reset) has a jump, by the topics' rule;
    /// the same edge from two TF topics, each steady but 3 s apart, has none (each topic's
    /// transforms are a series of their own).
    #[test]
    fn backward_jumps_per_edge_and_topic() {
        let topics = vec!["/tf".to_string(), "/robot2/tf".into()];
        let ms = 1_000_000i64;
        let mut v = Vec::new();
        for k in 0..200i64 {
            let stamp = if k < 100 {
                20_000 + k * 50
            } else {
                10_000 + k * 50
            } * ms;
            let mut x = m(0, false, "odom", "base_link", stamp);
            x.log_time_ns = k * 50 * ms;
            v.push(x);
            // Two publishers of one edge, interleaved, 3 s apart.
            let mut a = m(0, false, "map", "odom", k * 50 * ms);
            a.log_time_ns = k * 50 * ms + 1;
            let mut b = m(1, false, "map", "odom", 3_000 * ms + k * 50 * ms);
            b.log_time_ns = k * 50 * ms + 2;
            v.extend([a, b]);
        }
        let r = analyze_tree(&topics, || &v);
        let e = r.edges.iter().find(|e| e.child == "base_link").unwrap();
        assert_eq!(e.jump_threshold_ns, Some(250 * ms));
        assert_eq!(e.backward_jumps.len(), 1);
        let j = &e.backward_jumps[0];
        assert_eq!(j.topic, "/tf");
        assert_eq!(
            (j.jump.log_time_ns, j.jump.from_ns, j.jump.to_ns),
            (100 * 50 * ms, (20_000 + 99 * 50) * ms, 15_000 * ms)
        );
        let shared = r.edges.iter().find(|e| e.child == "odom").unwrap();
        assert!(
            shared.backward_jumps.is_empty(),
            "{:?}",
            shared.backward_jumps
        );
        let w = jump_warnings(&r.edges);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].code, WarningCode::ClockJumpBack);
        assert_eq!(w[0].topic.as_deref(), Some("/tf"));
        assert!(
            w[0].message
                .contains("1 edge(s): edge odom -> base_link went back in time 1 time(s)"),
            "{}",
            w[0].message
        );
    }
}
