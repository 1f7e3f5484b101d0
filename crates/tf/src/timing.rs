//! Per-edge TF timing as `clocks` reports it: the tree's edges ([`crate::tree`]) with their
//! lags taken on the recorder's clock (sim stamps mapped through `/clock`), from TF messages
//! with their frames named by ids ([`TfById`], what a scan that reads every TF message keeps)
//! or by name ([`edge_timing`]).

use serde::Serialize;

use bagscope_clocks::{ClockMap, JumpRule, LagBasis};
use bagscope_types::{Warning, WarningCode};

use crate::tree::{analyze_tree_with, jump_warnings, EdgeReport, UntimedEdges, MAX_TIMED_EDGES};
use crate::{strip_slash, Frame, TfMessage, TfTransform};

/// TF timing per edge (parent → child) from each transform's own `header.stamp`: `/tf` has no
/// top-level header, so its timing is per transform.
#[derive(Debug, Clone, Serialize)]
pub struct TfTiming {
    /// The TF topics read.
    pub topics: Vec<String>,
    /// One entry per (parent, child, static) edge, sorted.
    pub edges: Vec<TfEdgeTiming>,
    /// TF messages that could not be decoded (data loss), and edges whose stamps went back in
    /// time (`clock_jump_back`, one per TF topic naming its edges); empty otherwise.
    pub warnings: Vec<Warning>,
}

/// One TF edge's timing: the `tf` command's edge report (samples, stamp range, rate, periods,
/// gaps, `lag_ns`) and how its lag was taken.
#[derive(Debug, Clone, Serialize)]
pub struct TfEdgeTiming {
    /// The edge as `tf` reports it (flattened into this object in JSON). Its `lag_ns` is log
    /// time − transform stamp, sim stamps first mapped to log time through `/clock`.
    #[serde(flatten)]
    pub edge: EdgeReport,
    /// `direct` (stamps on the recorder's clock) or `mapped_through_clock` (sim stamps mapped
    /// through `/clock`); None for static edges.
    pub lag_basis: Option<LagBasis>,
}

/// Frame names given ids in the order first seen: what the scans that read every TF message
/// (`clocks`' collector, the timing table) key their frames by.
#[derive(Default)]
pub struct FrameIds {
    frames: Vec<Frame>,
    ids: std::collections::HashMap<Frame, u32>,
    /// The ids given last (a TF topic repeats a few frames): compared before the map is asked.
    /// A slot never written holds 0, which answers only for the name of id 0.
    recent: [u32; 4],
    next: usize,
}

impl FrameIds {
    /// The id of `name`, given it if new.
    pub fn id(&mut self, name: &str) -> u32 {
        for &id in &self.recent {
            if self.frames.get(id as usize).is_some_and(|f| &**f == name) {
                return id;
            }
        }
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = self.frames.len() as u32;
                let f: Frame = name.into();
                self.frames.push(f.clone());
                self.ids.insert(f, id);
                id
            }
        };
        self.recent[self.next % self.recent.len()] = id;
        self.next += 1;
        id
    }

    /// The names given ids so far, by id.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The names, by id.
    pub fn into_frames(self) -> Vec<Frame> {
        self.frames
    }
}

/// The frame id as a shared string: the one this thread made last time for the same name
/// (a bag repeats a few frame names in every message), so messages hold a pointer each, not a
/// copy of the name.
pub fn shared_frame(name: &str) -> Frame {
    use std::collections::HashMap;
    thread_local! {
        static SEEN: std::cell::RefCell<HashMap<String, Frame>> = std::cell::RefCell::new(HashMap::new());
    }
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        if let Some(f) = seen.get(name) {
            return f.clone();
        }
        // A bag with ever-new frame names must not grow the table without bound.
        if seen.len() >= 4096 {
            seen.clear();
        }
        let f: Frame = name.into();
        seen.insert(name.to_string(), f.clone());
        f
    })
}

/// One TF message of a [`TfById`]: its transforms are `len` of the list from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TfMsgById {
    /// When the recorder received it, in nanoseconds.
    pub log_time_ns: i64,
    /// Its TF topic: a place in [`TfById::topics`].
    pub topic: usize,
    /// Where its transforms start in [`TfById::transforms`].
    pub start: usize,
    /// How many transforms it has.
    pub len: usize,
}

/// TF messages in log-time order with their frames named by ids: 16 bytes a transform.
pub struct TfById {
    /// The TF topics (a message's `topic` indexes them).
    pub topics: Vec<String>,
    /// Frame names, as written, by id.
    pub frames: Vec<Frame>,
    /// (parent id, child id, stamp) of every transform, each message's together.
    pub transforms: Vec<(u32, u32, i64)>,
    /// The messages, in log-time order.
    pub msgs: Vec<TfMsgById>,
}

impl TfById {
    /// The [`TfTiming`] of the messages (backward jumps by `jump`; with `map`, sim-stamped
    /// transforms' lags through `/clock`), `warnings` first among its warnings.
    pub fn timing(
        self,
        map: Option<&ClockMap>,
        jump: &JumpRule,
        warnings: Vec<Warning>,
    ) -> TfTiming {
        let TfById {
            topics,
            frames,
            transforms,
            msgs,
        } = self;
        let is_static: Vec<bool> = topics.iter().map(|t| crate::is_static_topic(t)).collect();
        let msgs = || {
            msgs.iter().map(|m| TfMessage {
                log_time_ns: m.log_time_ns,
                source: m.topic,
                is_static: is_static.get(m.topic).copied().unwrap_or(false),
                transforms: transforms[m.start..m.start + m.len]
                    .iter()
                    .map(|&(p, c, stamp_ns)| TfTransform {
                        parent: frames[p as usize].clone(),
                        child: frames[c as usize].clone(),
                        stamp_ns,
                    })
                    .collect(),
            })
        };
        edge_timing(topics, msgs, map, jump, warnings)
    }
}

/// [`TfTiming`] of the TF messages `msgs()` yields (in log-time order, the same each time it
/// is called) of `topics`: the tree's edges by the backward-jump rule `jump`; with `map` (the
/// `/clock` fit of a recorder on wall time), the lags of edges stamped mostly on sim time are
/// log time − the log time at which `/clock` read the stamp. `warnings` come first.
pub fn edge_timing<M, I>(
    topics: Vec<String>,
    msgs: impl Fn() -> I,
    map: Option<&ClockMap>,
    jump: &JumpRule,
    mut warnings: Vec<Warning>,
) -> TfTiming
where
    M: std::borrow::Borrow<TfMessage>,
    I: Iterator<Item = M>,
{
    let tree = analyze_tree_with(&topics, &msgs, jump);
    warnings.extend(jump_warnings(&tree.edges));
    warnings.extend(tree.untimed_edges.as_ref().map(untimed_edges_warning));
    // Mapped lags of the timed dynamic edges whose stamps are on sim time (mostly not wall).
    // parent → child → (wall stamps, mapped lags), looked up by `&str`.
    type Mapped = std::collections::BTreeMap<String, (usize, Vec<i64>)>;
    let mut mapped: std::collections::BTreeMap<String, Mapped> = Default::default();
    if let Some(map) = map {
        for e in tree.edges.iter().filter(|e| !e.is_static) {
            mapped
                .entry(e.parent.clone())
                .or_default()
                .insert(e.child.clone(), Default::default());
        }
        for m in msgs() {
            let m = m.borrow();
            if m.is_static {
                continue;
            }
            for t in &m.transforms {
                let (p, c) = (strip_slash(&t.parent), strip_slash(&t.child));
                let Some(e) = mapped.get_mut(p).and_then(|to| to.get_mut(c)) else {
                    continue;
                };
                if bagscope_types::is_wall_ns(t.stamp_ns) {
                    e.0 += 1;
                } else if let Some(at) = map.sim_to_log_ns(t.stamp_ns, Some(m.log_time_ns)) {
                    e.1.push(m.log_time_ns.saturating_sub(at));
                }
            }
        }
    }
    let edges = tree
        .edges
        .into_iter()
        .map(|mut edge| {
            let sim = (!edge.is_static)
                .then(|| mapped.get(&edge.parent)?.get(&edge.child))
                .flatten()
                .filter(|(wall, lags)| lags.len() > *wall);
            let lag_basis = if edge.is_static {
                None
            } else if let Some((_, lags)) = sim {
                edge.lag_ns = bagscope_stats::NsSummary::of(lags);
                Some(LagBasis::MappedThroughClock)
            } else {
                Some(LagBasis::Direct)
            };
            TfEdgeTiming { edge, lag_basis }
        })
        .collect();
    TfTiming {
        topics,
        edges,
        warnings,
    }
}

/// The warning for a bag with more TF edges than are timed ([`MAX_TIMED_EDGES`]).
pub fn untimed_edges_warning(u: &UntimedEdges) -> Warning {
    Warning::new(
        WarningCode::TfEdgesUntimed,
        format!(
            "the TF topics carry more than {} edges: the {} busiest are timed; {}{} other edges ({} transforms) are counted, not timed",
            MAX_TIMED_EDGES,
            MAX_TIMED_EDGES,
            if u.at_least { "at least " } else { "" },
            u.edges,
            u.transforms
        ),
    )
}
