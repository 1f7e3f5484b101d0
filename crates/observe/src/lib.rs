//! The observation builder: at each message of an anchor topic, the member topics joined by
//! message_filters policies (one synchronizer per group, or a group synchronized first and its
//! bundles joined to the anchor), the state topics sampled at the anchor's stamp, and the gates
//! a live node applies after the synchronizer (freshness, TF availability, epoch flushes).
//! Every observation carries the evidence of how each member was chosen; every message that
//! did not make it into one carries its reason.
//!
//! Composes `bagscope-sync`'s engines ([`bagscope_sync::emulate_flushed`]), `bagscope-tf`'s
//! buffer model ([`bagscope_tf::availability`]) and `bagscope-stats`' summaries. Pure: no I/O,
//! deterministic output; docs/observe.md has the user's view.
//!
//! # In the workspace
//!
//! The observation builder: an anchor topic joined to member groups through `bagscope-sync`'s
//! engines (one synchronizer per group, or hierarchical: a group's bundles joined to the anchor
//! as a virtual topic; queues flushed on a jump back of the anchor's clock,
//! `sync::emulate_flushed`), state sampled at the anchor stamp (nearest, linear interpolation
//! with angle wrap and quaternion slerp, hold with reuse count), freshness / TF (`bagscope-tf`'s
//! buffer, each set's frames asked at its emit time) / state gates; observations with their
//! evidence, rejections with reasons, summaries; streamed (`Builder`, fed in log-time order:
//! observations to a `Sink` as the anchor advances, each topic's rejections in index order as
//! their fate settles, the summarised values to caller-kept `Values`; state topics held in
//! `StateWindow`s: per epoch the samples sorted by stamp, from the last one an anchor still to
//! come can bracket with, a lookup answered once no later sample can change it, since an
//! epoch's later samples are stamped at most `EPOCH_JUMP_NS` behind its newest; member groups
//! run first over every synchronized message, `plan_sync`, whose `SyncPlan` the builder
//! follows); `build` runs the builder over a whole input held in memory; docs/observe.md; the
//! contract file read with serde (`Contract::from_yaml`: unknown keys refused, every error a
//! `ContractError` naming the key and its line); `Shape`, the observation table's columns
//! besides its rows (what the output crates lay the table out from).
//!
//! Notable dependencies: `bagscope-sync`, `bagscope-tf`, `bagscope-stats`, `serde_yaml_ng` (the
//! contract's text; no file is read here).

#![forbid(unsafe_code)]

mod contract;
mod state;
mod stream;

pub use contract::ContractError;
pub use state::{
    slerp, wrap_angle, Names, StateField, StateMode, StateSample, StateSeries, StateSpec,
    StateValue,
};
pub use stream::{AxisChoice, Builder, Sink, StreamInput, Values, VecValues};

use std::collections::BTreeMap;
use std::fmt;

pub use bagscope_stats::NsSummary;
use bagscope_sync::{emulate_flushed, Arrival, DropReason, Policy, SyncConfig, SyncError};
use bagscope_tf::{Frame, TfMessage};
use serde::{Serialize, Serializer};

/// A group of member topics joined to the anchor by one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSpec {
    /// The group's name in the contract.
    pub name: String,
    /// The synchronizer emulated.
    pub policy: Policy,
    /// The group's topics, in contract order.
    pub topics: Vec<String>,
    /// The synchronizer's queue size.
    pub queue: usize,
    /// approx-py slop, ns.
    pub slop_ns: Option<i64>,
    /// approx-epsilon tolerance, ns.
    pub epsilon_ns: Option<i64>,
    /// C++ approx age penalty (default 0.1).
    pub age_penalty: Option<f64>,
    /// C++ approx max interval, ns.
    pub max_interval_ns: Option<i64>,
    /// Synchronize the group's topics among themselves first, then join each bundle (stamped
    /// with its first topic's stamp, arriving when it completed) to the anchor.
    pub hierarchical: bool,
}

impl GroupSpec {
    fn config(&self, n_topics: usize) -> SyncConfig {
        let mut c = SyncConfig::new(self.policy, n_topics, self.queue);
        c.slop_ns = self.slop_ns.unwrap_or(0);
        c.epsilon_ns = self.epsilon_ns.unwrap_or(0);
        if let Some(a) = self.age_penalty {
            c.age_penalty = a;
        }
        c.max_interval_ns = self.max_interval_ns;
        c
    }
}

/// What an observation must satisfy; the parsed contract file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contract {
    /// The topic whose messages define observation times.
    pub anchor: String,
    /// Member groups (possibly none: anchor + state only).
    pub groups: Vec<GroupSpec>,
    /// State topics sampled at the anchor stamp.
    pub state: Vec<StateSpec>,
    /// Largest emit age accepted (`stale_at_emit` beyond it), ns.
    pub max_age_ns: Option<i64>,
    /// Frame every member's `frame_id` must be transformable into at its own stamp.
    pub tf_target: Option<String>,
    /// tf2 buffer cache length, ns.
    pub tf_cache_ns: i64,
}

impl Contract {
    /// The synchronized topics: the anchor, then each group's topics in contract order.
    pub fn sync_topics(&self) -> Vec<String> {
        let mut v = vec![self.anchor.clone()];
        for g in &self.groups {
            v.extend(g.topics.iter().cloned());
        }
        v
    }
}

/// One message of a synchronized topic (anchor or member), in log-time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncMessage {
    /// Index into [`Contract::sync_topics`].
    pub topic: usize,
    /// Header stamp, ns; `None` for a header-less message.
    pub stamp_ns: Option<i64>,
    /// Log (receive) time, ns.
    pub log_time_ns: i64,
    /// `header.frame_id` (empty when none).
    pub frame_id: Frame,
}

/// How emit log times relate to the anchor's stamps.
pub enum EmitAxis<'a> {
    /// Stamps and log times are on one clock.
    Same,
    /// Log times map onto the stamps' clock through this function (e.g. `/clock`): `None`
    /// where no mapping exists.
    Mapped(&'a dyn Fn(i64) -> Option<i64>),
    /// No relation (sim stamps without `/clock`): emit ages are null, freshness unchecked.
    Unmapped,
}

/// Everything the builder reads.
pub struct Input<'a> {
    /// The contract.
    pub contract: &'a Contract,
    /// The contract's content hash (goes into every row and observation id).
    pub policy_version: &'a str,
    /// The anchor's and members' messages, in log-time order.
    pub messages: &'a [SyncMessage],
    /// One series per [`Contract::state`] entry, in that order.
    pub states: &'a [StateSeries],
    /// TF messages in log-time order (static ones count from the start).
    pub tf: &'a [TfMessage],
    /// Emit age's clock relation.
    pub emit_axis: EmitAxis<'a>,
}

/// Why a message is in no observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// The synchronizer never put it into an emitted set (its drop reason).
    Sync(DropReason),
    /// The set's emit age exceeded `freshness.max_age`.
    StaleAtEmit,
    /// A member's frame could not be transformed into the target frame at its stamp with
    /// the TF received by the emit time.
    FrameUnavailable,
    /// A non-optional state topic had no sample within `max_gap` (or the anchor stamp lies
    /// outside its recorded span).
    StateUnavailable,
}

impl Reason {
    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Sync(r) => r.as_str(),
            Reason::StaleAtEmit => "stale_at_emit",
            Reason::FrameUnavailable => "frame_unavailable",
            Reason::StateUnavailable => "state_unavailable",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One member of an observation, referenced by topic and index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberRef {
    /// Per-topic message index.
    pub index: usize,
    /// Header stamp, ns.
    pub stamp_ns: Option<i64>,
    /// Member stamp − anchor stamp, ns.
    pub offset_ns: Option<i64>,
    /// `header.frame_id`.
    pub frame_id: Frame,
    /// Log time, ns.
    pub log_time_ns: i64,
}

/// One emitted observation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    /// 16 hex digits: a hash of the policy version and the members' identities.
    pub observation_id: String,
    /// The anchor message's per-topic index.
    pub anchor_index: usize,
    /// The anchor's stamp, ns.
    pub anchor_stamp_ns: i64,
    /// The anchor's log time, ns.
    pub anchor_log_time_ns: i64,
    /// The anchor's frame id.
    pub anchor_frame_id: Frame,
    /// Jumps back of the anchor's clock before this anchor.
    pub clock_epoch: u32,
    /// Log time at which the last synchronizer emitted the set (the anchor's own log time
    /// without member groups).
    pub emit_log_time_ns: i64,
    /// Emit log time − anchor stamp, on the stamps' clock; null without a mapping.
    pub emit_age_ns: Option<i64>,
    /// Newest − oldest stamp of the anchor and members.
    pub span_ns: i64,
    /// One per member topic, in [`ObserveReport::member_topics`] order.
    pub members: Vec<MemberRef>,
    /// One per state topic; null for an optional state that was unavailable.
    pub state: Vec<Option<StateValue>>,
}

/// A message that is in no observation, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejection {
    /// Index into [`ObserveReport::topics`].
    pub topic: usize,
    /// Per-topic message index.
    pub index: usize,
    /// Header stamp, ns.
    pub stamp_ns: Option<i64>,
    /// Why.
    pub reason: Reason,
    /// Log time, ns.
    pub log_time_ns: i64,
}

/// A state topic's statistics over the observations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateSummary {
    /// The topic.
    pub topic: String,
    /// The sampling mode.
    pub mode: StateMode,
    /// Samples on the topic.
    pub samples: usize,
    /// Observations whose anchor found no state within `max_gap` (rejected, or null when
    /// optional).
    pub unavailable: usize,
    /// Bracket widths over the observations.
    pub gap_ns: Option<NsSummary>,
    /// Online waits (nearest, interpolate).
    pub online_wait_ns: Option<NsSummary>,
    /// Hold ages (hold).
    pub hold_age_ns: Option<NsSummary>,
    /// RMS error of interpolating each sample from its neighbours (held out): what the
    /// interpolation costs at this topic's rate (interpolate mode).
    pub interpolation_error_rms: Option<f64>,
}

/// One clock epoch of the anchor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochSummary {
    /// 0-based.
    pub epoch: u32,
    /// Log time of its first anchor message, ns.
    pub start_log_time_ns: i64,
    /// Anchor messages in it.
    pub anchors: usize,
    /// Observations emitted in it.
    pub observations: usize,
    /// Messages held by a synchronizer when the epoch ended (flushed, `clock_epoch_changed`).
    pub flushed: usize,
    /// Anchor messages that arrived before every member topic had arrived again in this
    /// epoch (warm-up); 0 for the first epoch.
    pub warmup_anchors: usize,
}

/// The summary `--json` prints and `--compare` tabulates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveSummary {
    /// Anchor messages.
    pub anchors: usize,
    /// Observations emitted.
    pub observations: usize,
    /// Messages (of every synchronized topic) in no observation, by reason.
    pub drops: BTreeMap<Reason, usize>,
    /// Anchor messages without an observation, by reason.
    pub rejected_anchors: BTreeMap<Reason, usize>,
    /// Observation spans.
    pub span_ns: Option<NsSummary>,
    /// Emit ages.
    pub emit_age_ns: Option<NsSummary>,
    /// State bracket widths, all state topics together.
    pub gap_ns: Option<NsSummary>,
    /// Online waits, all state topics together.
    pub online_wait_ns: Option<NsSummary>,
    /// Per state topic.
    pub state: Vec<StateSummary>,
    /// Per anchor clock epoch.
    pub epochs: Vec<EpochSummary>,
    /// `same`, `clock` (mapped through `/clock`) or `none` (emit ages null).
    pub emit_age_axis: &'static str,
}

/// The builder's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveReport {
    /// The contract's content hash.
    pub policy_version: String,
    /// The synchronized topics: anchor first, then the members.
    pub topics: Vec<String>,
    /// The anchor topic.
    pub anchor_topic: String,
    /// The member topics, in contract order.
    pub member_topics: Vec<String>,
    /// The state topics, in contract order.
    pub state_topics: Vec<String>,
    /// Each state topic's numeric fields.
    pub state_fields: Vec<Vec<StateField>>,
    /// Whether each state topic has a `name` list.
    pub state_has_names: Vec<bool>,
    /// The member groups (policy and parameters: the pairing evidence).
    pub groups: Vec<GroupSpec>,
    /// In anchor order.
    #[serde(skip)]
    pub observations: Vec<Observation>,
    /// Sorted by (topic, index).
    #[serde(skip)]
    pub rejections: Vec<Rejection>,
    /// Counts and percentiles.
    pub summary: ObserveSummary,
}

/// Why the builder could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum ObserveError {
    /// A contract value the builder cannot use (the text names it).
    Contract(String),
    /// A synchronizer refused its configuration.
    Sync(SyncError),
}

impl fmt::Display for ObserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObserveError::Contract(s) => f.write_str(s),
            ObserveError::Sync(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ObserveError {}

impl From<SyncError> for ObserveError {
    fn from(e: SyncError) -> Self {
        ObserveError::Sync(e)
    }
}

/// FNV-1a, 64 bits: a stable hash for observation ids (no dependency, same on every
/// platform).
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// A group's result: per anchor index, the members' message ids and the emit log time.
struct GroupResult {
    by_anchor: Vec<Option<(Vec<u32>, i64)>>,
    anchor_reason: Vec<Option<Reason>>,
}

/// Per-message context shared by the groups.
struct Ctx<'a> {
    msgs: &'a [SyncMessage],
    /// Per-topic index of each message.
    index: Vec<u32>,
    /// Message ids of the anchor, by anchor index.
    anchors: Vec<u32>,
    /// Flush points (message ids: the first message of each new epoch).
    flush: Vec<usize>,
    /// First assigned reason of each message.
    reason: Vec<Option<Reason>>,
}

impl Ctx<'_> {
    fn set_reason(&mut self, id: usize, r: Reason) {
        if let Some(slot) = self.reason.get_mut(id) {
            slot.get_or_insert(r);
        }
    }

    fn arrival(&self, id: usize, topic: usize) -> Arrival {
        let m = &self.msgs[id];
        Arrival::new(topic, m.stamp_ns, m.log_time_ns)
    }

    /// Flush points of a sub-sequence given by message ids (ascending `keys`).
    fn sub_flush(&self, keys: &[(usize, u8)]) -> Vec<usize> {
        self.flush
            .iter()
            .map(|&f| keys.partition_point(|&(k, _)| k < f))
            .collect()
    }
}

fn run_flat(ctx: &mut Ctx, g: &GroupSpec, topics: &[usize]) -> Result<GroupResult, ObserveError> {
    // local topic 0 = the anchor (global 0), then the group's topics.
    let mut local = BTreeMap::new();
    local.insert(0usize, 0usize);
    for (k, &t) in topics.iter().enumerate() {
        local.insert(t, k + 1);
    }
    let ids: Vec<usize> = (0..ctx.msgs.len())
        .filter(|&i| local.contains_key(&ctx.msgs[i].topic))
        .collect();
    let arr: Vec<Arrival> = ids
        .iter()
        .map(|&i| ctx.arrival(i, local[&ctx.msgs[i].topic]))
        .collect();
    let keys: Vec<(usize, u8)> = ids.iter().map(|&i| (i, 0)).collect();
    let out = emulate_flushed(&g.config(topics.len() + 1), &arr, &ctx.sub_flush(&keys))?;
    let mut res = GroupResult {
        by_anchor: vec![None; ctx.anchors.len()],
        anchor_reason: vec![None; ctx.anchors.len()],
    };
    for s in out.sets.iter() {
        let a = ids[s.member_arrivals[0]];
        let members: Vec<u32> = s.member_arrivals[1..]
            .iter()
            .map(|&x| ids[x] as u32)
            .collect();
        res.by_anchor[ctx.index[a] as usize] = Some((members, s.emit_arrival_ns));
    }
    for d in out.drops.iter() {
        let id = ids[d.arrival_index];
        let r = Reason::Sync(d.reason);
        if d.topic == 0 {
            res.anchor_reason[ctx.index[id] as usize] = Some(r);
        } else {
            ctx.set_reason(id, r);
        }
    }
    Ok(res)
}

fn run_hierarchical(
    ctx: &mut Ctx,
    g: &GroupSpec,
    topics: &[usize],
) -> Result<GroupResult, ObserveError> {
    if topics.len() < 2 {
        return Err(ObserveError::Contract(format!(
            "members group '{}': hierarchical needs at least 2 topics",
            g.name
        )));
    }
    let local: BTreeMap<usize, usize> = topics.iter().enumerate().map(|(k, &t)| (t, k)).collect();
    let ids: Vec<usize> = (0..ctx.msgs.len())
        .filter(|&i| local.contains_key(&ctx.msgs[i].topic))
        .collect();
    let arr: Vec<Arrival> = ids
        .iter()
        .map(|&i| ctx.arrival(i, local[&ctx.msgs[i].topic]))
        .collect();
    let keys: Vec<(usize, u8)> = ids.iter().map(|&i| (i, 0)).collect();
    let inner = emulate_flushed(&g.config(topics.len()), &arr, &ctx.sub_flush(&keys))?;
    for d in inner.drops.iter() {
        ctx.set_reason(ids[d.arrival_index], Reason::Sync(d.reason));
    }
    // Bundles: (emitted after message id, members, stamp of the first topic, emit time).
    let bundles: Vec<(usize, Vec<u32>, Option<i64>, i64)> = inner
        .sets
        .iter()
        .map(|s| {
            let members: Vec<u32> = s.member_arrivals.iter().map(|&x| ids[x] as u32).collect();
            let stamp = ctx.msgs[members[0] as usize].stamp_ns;
            (ids[s.emit_after_arrival], members, stamp, s.emit_arrival_ns)
        })
        .collect();
    // The outer synchronizer's input: anchors at their own place, each bundle right after the
    // message that completed it.
    let mut events: Vec<(usize, u8, usize)> = ctx
        .anchors
        .iter()
        .map(|&a| (a as usize, 0u8, a as usize))
        .chain(bundles.iter().enumerate().map(|(b, x)| (x.0, 1u8, b)))
        .collect();
    events.sort_unstable();
    let arr: Vec<Arrival> = events
        .iter()
        .map(|&(_, kind, x)| {
            if kind == 0 {
                ctx.arrival(x, 0)
            } else {
                Arrival::new(1, bundles[x].2, bundles[x].3)
            }
        })
        .collect();
    let keys: Vec<(usize, u8)> = events.iter().map(|&(k, kind, _)| (k, kind)).collect();
    let outer = emulate_flushed(&g.config(2), &arr, &ctx.sub_flush(&keys))?;
    let mut res = GroupResult {
        by_anchor: vec![None; ctx.anchors.len()],
        anchor_reason: vec![None; ctx.anchors.len()],
    };
    for s in outer.sets.iter() {
        let a = events[s.member_arrivals[0]].2;
        let b = events[s.member_arrivals[1]].2;
        res.by_anchor[ctx.index[a] as usize] = Some((bundles[b].1.clone(), s.emit_arrival_ns));
    }
    for d in outer.drops.iter() {
        let (_, kind, x) = events[d.arrival_index];
        let r = Reason::Sync(d.reason);
        if kind == 0 {
            res.anchor_reason[ctx.index[x] as usize] = Some(r);
        } else {
            for &m in &bundles[x].1 {
                ctx.set_reason(m as usize, r);
            }
        }
    }
    Ok(res)
}

/// The contract's own consistency, as the builder needs it: distinct topics, no empty group.
pub(crate) fn check_contract(c: &Contract) -> Result<(), ObserveError> {
    let mut seen = std::collections::BTreeSet::new();
    for t in c.sync_topics() {
        if !seen.insert(t.clone()) {
            return Err(ObserveError::Contract(format!(
                "topic {t} is listed twice among the anchor and members"
            )));
        }
    }
    if let Some(g) = c.groups.iter().find(|g| g.topics.is_empty()) {
        return Err(ObserveError::Contract(format!(
            "members group '{}' lists no topics",
            g.name
        )));
    }
    Ok(())
}

/// What the member groups' synchronizers decided over every synchronized message, before
/// the gates: per anchor its candidate set (every group put it in a set) or none, per message
/// the reason a synchronizer gave it. The synchronizers' drop rules look at the whole input
/// (a topic without messages, a key used in an emitted set), so they run over it first; the
/// streaming [`Builder`] then reads this plan by each message's position (its number among
/// the synchronized messages, in log-time order).
#[derive(Debug, Clone, Default)]
pub struct SyncPlan {
    /// Per position: the reason given to the message, if any.
    reason: Vec<Option<Reason>>,
    /// Per position: candidate sets the message is a member of.
    uses: Vec<u32>,
    /// Per anchor index: the candidate set's first member in `members` (`u32::MAX`: no set)
    /// and its emit log time.
    cands: Vec<(u32, i64)>,
    /// Members of the candidate sets (positions), each set's members back to back.
    members: Vec<u32>,
    /// Members per candidate set.
    per_set: usize,
}

impl SyncPlan {
    /// The reason given to the message at `pos`.
    pub fn reason(&self, pos: u32) -> Option<Reason> {
        self.reason.get(pos as usize).copied().flatten()
    }

    /// Candidate sets the message at `pos` is a member of.
    pub fn uses(&self, pos: u32) -> u32 {
        self.uses.get(pos as usize).copied().unwrap_or(0)
    }

    /// Anchor `index`'s candidate set: its members (positions) and emit log time.
    pub fn cand(&self, index: usize) -> Option<(Vec<u32>, i64)> {
        let &(at, emit) = self.cands.get(index)?;
        if at == u32::MAX {
            return None;
        }
        let at = at as usize;
        Some((self.members.get(at..at + self.per_set)?.to_vec(), emit))
    }
}

/// Runs the member groups' synchronizers over `msgs` (every synchronized message, in
/// log-time order): the [`SyncPlan`] the streaming builder follows; `None` without member
/// groups (every anchor with a stamp is then a candidate).
pub fn plan_sync(c: &Contract, msgs: &[SyncMessage]) -> Result<Option<SyncPlan>, ObserveError> {
    check_contract(c)?;
    if c.groups.is_empty() {
        return Ok(None);
    }
    let n_topics = c.sync_topics().len();
    let mut counts = vec![0u32; n_topics];
    let mut index = Vec::with_capacity(msgs.len());
    let mut anchors = Vec::new();
    let mut flush = Vec::new();
    let mut top = i64::MIN;
    for (i, m) in msgs.iter().enumerate() {
        let t = m.topic.min(n_topics.saturating_sub(1));
        index.push(counts[t]);
        counts[t] += 1;
        if t == 0 {
            if let Some(s) = m.stamp_ns {
                if top != i64::MIN && s < top.saturating_sub(bagscope_sync::EPOCH_JUMP_NS) {
                    flush.push(i);
                    top = i64::MIN;
                }
                top = top.max(s);
            }
            anchors.push(i as u32);
        }
    }
    let mut ctx = Ctx {
        msgs,
        index,
        anchors,
        flush,
        reason: vec![None; msgs.len()],
    };
    let mut next = 1usize;
    let mut results = Vec::new();
    for g in &c.groups {
        let ts: Vec<usize> = (next..next + g.topics.len()).collect();
        next += g.topics.len();
        results.push(if g.hierarchical {
            run_hierarchical(&mut ctx, g, &ts)?
        } else {
            run_flat(&mut ctx, g, &ts)?
        });
    }
    // Candidates: anchors every group put in a set.
    let per_set = n_topics - 1;
    let mut plan = SyncPlan {
        reason: Vec::new(),
        uses: vec![0; msgs.len()],
        cands: Vec::with_capacity(ctx.anchors.len()),
        members: Vec::new(),
        per_set,
    };
    for (ai, &aid) in ctx.anchors.clone().iter().enumerate() {
        let aid = aid as usize;
        match results.iter().position(|r| r.by_anchor[ai].is_none()) {
            None => {
                let at = plan.members.len() as u32;
                let mut emit = i64::MIN;
                for r in &results {
                    if let Some((m, e)) = &r.by_anchor[ai] {
                        for &x in m {
                            plan.uses[x as usize] += 1;
                        }
                        plan.members.extend_from_slice(m);
                        emit = emit.max(*e);
                    }
                }
                plan.cands.push((at, emit));
            }
            Some(g) => {
                let r =
                    results[g].anchor_reason[ai].unwrap_or(Reason::Sync(DropReason::NeverMatched));
                ctx.set_reason(aid, r);
                for res in &results {
                    if let Some((m, _)) = &res.by_anchor[ai] {
                        for &x in m {
                            ctx.set_reason(x as usize, r);
                        }
                    }
                }
                plan.cands.push((u32::MAX, 0));
            }
        }
    }
    plan.reason = ctx.reason;
    Ok(Some(plan))
}

/// What [`build`] collects: every observation and rejection.
#[derive(Default)]
struct Collect {
    observations: Vec<Observation>,
    rejections: Vec<Rejection>,
}

impl Sink<()> for Collect {
    fn observation(&mut self, o: Observation, _: Vec<()>) {
        self.observations.push(o);
    }
    fn rejection(&mut self, r: Rejection) {
        self.rejections.push(r);
    }
}

/// Build the observations of a whole input held in memory: the streaming [`Builder`] fed
/// with the messages, state samples and TF messages merged in log-time order, every
/// observation and rejection (sorted by topic and index) in the report.
pub fn build(input: &Input) -> Result<ObserveReport, ObserveError> {
    build_trimming_from(input, 1024)
}

/// [`build`] trimming the state windows once they hold `trim_from` samples.
fn build_trimming_from(input: &Input, trim_from: usize) -> Result<ObserveReport, ObserveError> {
    let c = input.contract;
    if input.states.len() != c.state.len() {
        return Err(ObserveError::Contract(
            "one state series is needed per state entry".into(),
        ));
    }
    let plan = plan_sync(c, input.messages)?;
    let axis = match &input.emit_axis {
        EmitAxis::Same => EmitAxis::Same,
        EmitAxis::Mapped(f) => EmitAxis::Mapped(*f),
        EmitAxis::Unmapped => EmitAxis::Unmapped,
    };
    let mut b = Builder::new(
        StreamInput {
            contract: c,
            policy_version: input.policy_version,
            plan,
            tf_static: input.tf,
            axis: AxisChoice::Given(axis),
            values: Box::new(|| Box::new(VecValues::default())),
        },
        Collect::default(),
    )?
    .trim_from(trim_from);
    for (k, s) in input.states.iter().enumerate() {
        b.state_fields(k, &s.fields, s.has_names);
    }
    // Merged by log time; on equal times messages first, then state samples, then TF.
    let mut next_state = vec![0usize; input.states.len()];
    let mut tf = input.tf.iter().filter(|m| !m.is_static).peekable();
    let mut msgs = input.messages.iter().peekable();
    loop {
        let m_t = msgs.peek().map(|m| m.log_time_ns);
        let s_t = (0..input.states.len())
            .filter_map(|k| {
                input.states[k]
                    .samples
                    .get(next_state[k])
                    .map(|x| (x.log_time_ns, k))
            })
            .min();
        let t_t = tf.peek().map(|m| m.log_time_ns);
        let best = [m_t, s_t.map(|x| x.0), t_t].into_iter().flatten().min();
        let Some(best) = best else { break };
        if m_t == Some(best) {
            if let Some(m) = msgs.next() {
                b.sync(m.clone(), ());
            }
        } else if let Some((_, k)) = s_t.filter(|x| x.0 == best) {
            b.state(k, input.states[k].samples[next_state[k]].clone());
            next_state[k] += 1;
        } else if let Some(m) = tf.next() {
            b.tf(m);
        }
    }
    let (mut report, sink) = b.finish();
    let mut rejections = sink.rejections;
    rejections.sort_by_key(|r| (r.topic, r.index));
    report.observations = sink.observations;
    report.rejections = rejections;
    Ok(report)
}

/// The observation table's columns besides its rows: what the contract names, and each
/// state topic's numeric fields (from its first sample). Output crates lay the table out
/// from it.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// The contract's content hash.
    pub policy_version: String,
    /// The anchor, then the member topics.
    pub topics: Vec<String>,
    /// The member groups.
    pub groups: Vec<GroupSpec>,
    /// The state topics.
    pub state_topics: Vec<String>,
    /// Per state topic: its sampling mode, numeric fields and whether it has a `name` list.
    pub state: Vec<(StateMode, Vec<StateField>, bool)>,
}

impl Shape {
    /// The columns of the run `r` reports.
    pub fn of(r: &ObserveReport) -> Shape {
        Shape {
            policy_version: r.policy_version.clone(),
            topics: r.topics.clone(),
            groups: r.groups.clone(),
            state_topics: r.state_topics.clone(),
            state: (0..r.state_topics.len())
                .map(|s| {
                    (
                        r.summary
                            .state
                            .get(s)
                            .map_or(StateMode::Nearest, |x| x.mode),
                        r.state_fields.get(s).cloned().unwrap_or_default(),
                        r.state_has_names.get(s).copied().unwrap_or(false),
                    )
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
