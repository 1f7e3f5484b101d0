//! Per-edge TF timing as `clocks` reports it: the tree's edges ([`crate::tree`]) with their
//! lags taken on the recorder's clock (sim stamps mapped through `/clock`), from TF messages
//! with their frames named by ids ([`TfById`], what a scan that reads every TF message keeps)
//! or by name ([`edge_timing`]).

use std::collections::HashMap;

use serde::Serialize;

use bagscope_clocks::{ClockMap, JumpRule, LagBasis};
use bagscope_types::{Warning, WarningCode};

use crate::tree::{
    analyze_tree_by_ids, id_key, jump_warnings, EdgeReport, KeyMap, TreeFrames, TreeReport,
    UntimedEdges, MAX_TIMED_EDGES,
};
use crate::{Frame, TfMessage};

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
    /// [`FrameIds::id_at`]'s ids by place in a message.
    at: Vec<u32>,
}

impl FrameIds {
    /// The id of `name`, given it if new.
    pub fn id(&mut self, name: &str) -> u32 {
        for &id in &self.recent {
            if self.frames.get(id as usize).is_some_and(|f| &**f == name) {
                return id;
            }
        }
        let id = self.lookup(name);
        self.recent[self.next % self.recent.len()] = id;
        self.next += 1;
        id
    }

    /// The id of the frame name whose bytes are `name`, at place `place` of a message (a TF
    /// publisher names the same frames in the same places in every message): compared first
    /// with the name at that place in the last message, whose bytes were text then; else
    /// `text()` is the name (None: it is not text, and has no id).
    pub fn id_at<'n>(
        &mut self,
        place: usize,
        name: &[u8],
        text: impl FnOnce() -> Option<&'n str>,
    ) -> Option<u32> {
        if let Some(&id) = self.at.get(place) {
            if self
                .frames
                .get(id as usize)
                .is_some_and(|f| f.as_bytes() == name)
            {
                return Some(id);
            }
        }
        let id = self.lookup(text()?);
        if place >= self.at.len() {
            self.at.resize(place + 1, u32::MAX);
        }
        self.at[place] = id;
        Some(id)
    }

    fn lookup(&mut self, name: &str) -> u32 {
        match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = self.frames.len() as u32;
                let f: Frame = name.into();
                self.frames.push(f.clone());
                self.ids.insert(f, id);
                id
            }
        }
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
    /// Received on a latched static topic (`/tf_static`).
    pub is_static: bool,
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
    /// (parent id, child id, stamp) of every transform, each message's together. An id past
    /// `frames` names no frame (the transform is invalid).
    pub transforms: Vec<(u32, u32, i64)>,
    /// The messages, in log-time order.
    pub msgs: Vec<TfMsgById>,
}

impl TfById {
    /// The messages `msgs` (in log-time order; `source` indexes `topics`) with their frames
    /// named by ids.
    pub fn of_messages<M: std::borrow::Borrow<TfMessage>>(
        topics: Vec<String>,
        msgs: impl IntoIterator<Item = M>,
    ) -> TfById {
        let mut frames = FrameIds::default();
        let mut transforms = Vec::new();
        let mut out = Vec::new();
        for m in msgs {
            let m = m.borrow();
            let start = transforms.len();
            for t in &m.transforms {
                transforms.push((frames.id(&t.parent), frames.id(&t.child), t.stamp_ns));
            }
            out.push(TfMsgById {
                log_time_ns: m.log_time_ns,
                topic: m.source,
                is_static: m.is_static,
                start,
                len: m.transforms.len(),
            });
        }
        TfById {
            topics,
            frames: frames.into_frames(),
            transforms,
            msgs: out,
        }
    }

    /// The transform tree of the messages ([`analyze_tree_by_ids`]): what needs no `/clock`
    /// map, so that it can be built while the clock analysis runs.
    pub fn tree(&self, jump: &JumpRule) -> TreeReport {
        analyze_tree_by_ids(self, jump)
    }

    /// The [`TfTiming`] of the messages (backward jumps by `jump`; with `map`, sim-stamped
    /// transforms' lags through `/clock`), `warnings` first among its warnings.
    pub fn timing(
        self,
        map: Option<&ClockMap>,
        jump: &JumpRule,
        warnings: Vec<Warning>,
    ) -> TfTiming {
        let tree = self.tree(jump);
        self.timing_of_tree(tree, map, warnings)
    }

    /// [`TfById::timing`] from the messages' [`TfById::tree`]: with `map` (the `/clock` fit of
    /// a recorder on wall time), the lags of the dynamic edges stamped mostly on sim time are
    /// log time − the log time at which `/clock` read the stamp. `warnings` come first, then
    /// the edges' backward jumps and the untimed edges.
    pub fn timing_of_tree(
        self,
        tree: TreeReport,
        map: Option<&ClockMap>,
        mut warnings: Vec<Warning>,
    ) -> TfTiming {
        warnings.extend(jump_warnings(&tree.edges));
        warnings.extend(tree.untimed_edges.as_ref().map(untimed_edges_warning));
        // Per timed dynamic edge (by place in `tree.edges`): (wall stamps, mapped lags).
        let mut mapped: Vec<(usize, Vec<i64>)> = vec![Default::default(); tree.edges.len()];
        if let Some(map) = map {
            let frames = TreeFrames::of(&self.frames);
            let ids: HashMap<&str, u32> = frames
                .names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), i as u32))
                .collect();
            let mut edge_of: KeyMap<usize> = Default::default();
            for (i, e) in tree.edges.iter().enumerate().filter(|(_, e)| !e.is_static) {
                if let (Some(&p), Some(&c)) =
                    (ids.get(e.parent.as_str()), ids.get(e.child.as_str()))
                {
                    edge_of.insert(id_key(p, c, false), i);
                }
            }
            for m in self.msgs.iter().filter(|m| !m.is_static) {
                let t = self
                    .transforms
                    .get(m.start..m.start + m.len)
                    .unwrap_or_default();
                for &(p, c, stamp_ns) in t {
                    let Some(e) = frames
                        .edge(p, c)
                        .and_then(|(p, c)| edge_of.get(&id_key(p, c, false)))
                    else {
                        continue;
                    };
                    let e = &mut mapped[*e];
                    if bagscope_types::is_wall_ns(stamp_ns) {
                        e.0 += 1;
                    } else if let Some(at) = map.sim_to_log_ns(stamp_ns, Some(m.log_time_ns)) {
                        e.1.push(m.log_time_ns.saturating_sub(at));
                    }
                }
            }
        }
        let edges = tree
            .edges
            .into_iter()
            .zip(mapped)
            .map(|(mut edge, (wall, lags))| {
                let lag_basis = if edge.is_static {
                    None
                } else if map.is_some() && lags.len() > wall {
                    edge.lag_ns = bagscope_stats::NsSummary::of(&lags);
                    Some(LagBasis::MappedThroughClock)
                } else {
                    Some(LagBasis::Direct)
                };
                TfEdgeTiming { edge, lag_basis }
            })
            .collect();
        TfTiming {
            topics: self.topics,
            edges,
            warnings,
        }
    }
}

/// [`TfTiming`] of the TF messages `msgs` (in log-time order; `source` indexes `topics`):
/// [`TfById::timing`] of them with their frames named by ids.
pub fn edge_timing<M: std::borrow::Borrow<TfMessage>>(
    topics: Vec<String>,
    msgs: impl IntoIterator<Item = M>,
    map: Option<&ClockMap>,
    jump: &JumpRule,
    warnings: Vec<Warning>,
) -> TfTiming {
    TfById::of_messages(topics, msgs).timing(map, jump, warnings)
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
