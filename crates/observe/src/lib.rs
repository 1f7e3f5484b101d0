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
//! with angle wrap and quaternion slerp, hold with reuse count), freshness / TF
//! (`bagscope-tf`'s `availability`) / state gates; observations with their evidence, rejections
//! with reasons, summaries; docs/observe.md; the contract file read with serde
//! (`Contract::from_yaml`: unknown keys refused, every error a `ContractError` naming the key
//! and its line).
//!
//! Notable dependencies: `bagscope-sync`, `bagscope-tf`, `bagscope-stats`, `serde_yaml_ng` (the
//! contract's text; no file is read here).

#![forbid(unsafe_code)]

mod contract;
mod state;

pub use contract::ContractError;

pub use state::{
    slerp, wrap_angle, Names, StateField, StateMode, StateSample, StateSeries, StateSpec,
    StateValue,
};

use std::collections::BTreeMap;
use std::fmt;

pub use bagscope_stats::NsSummary;
use bagscope_sync::{emulate_flushed, Arrival, DropReason, Policy, SyncConfig, SyncError};
use bagscope_tf::{Frame, Query, TfMessage};
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

fn summary_of(mut v: Vec<i64>) -> Option<NsSummary> {
    NsSummary::of_in_place(&mut v)
}

/// Build the observations.
#[allow(clippy::too_many_lines)] // To split once the builder is being reworked to stream (issue 44).
pub fn build(input: &Input) -> Result<ObserveReport, ObserveError> {
    let c = input.contract;
    let topics = c.sync_topics();
    let n_topics = topics.len();
    {
        let mut seen = std::collections::BTreeSet::new();
        for t in &topics {
            if !seen.insert(t) {
                return Err(ObserveError::Contract(format!(
                    "topic {t} is listed twice among the anchor and members"
                )));
            }
        }
    }
    if input.states.len() != c.state.len() {
        return Err(ObserveError::Contract(
            "one state series is needed per state entry".into(),
        ));
    }
    let msgs = input.messages;
    let mut counts = vec![0u32; n_topics];
    let mut index = Vec::with_capacity(msgs.len());
    let mut anchors = Vec::new();
    let mut flush = Vec::new();
    let mut anchor_epoch: Vec<u32> = Vec::new();
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
            anchor_epoch.push(flush.len() as u32);
        }
    }
    let mut ctx = Ctx {
        msgs,
        index,
        anchors,
        flush,
        reason: vec![None; msgs.len()],
    };
    // Global topic indices of each group's topics.
    let mut next = 1usize;
    let mut results = Vec::new();
    for g in &c.groups {
        let ts: Vec<usize> = (next..next + g.topics.len()).collect();
        next += g.topics.len();
        if g.topics.is_empty() {
            return Err(ObserveError::Contract(format!(
                "members group '{}' lists no topics",
                g.name
            )));
        }
        results.push(if g.hierarchical {
            run_hierarchical(&mut ctx, g, &ts)?
        } else {
            run_flat(&mut ctx, g, &ts)?
        });
    }

    // Candidates: anchors every group put in a set.
    struct Cand {
        a: usize,
        members: Vec<u32>,
        emit: i64,
    }
    let mut cands: Vec<Cand> = Vec::new();
    for (ai, &aid) in ctx.anchors.clone().iter().enumerate() {
        let aid = aid as usize;
        if results.is_empty() {
            if msgs[aid].stamp_ns.is_none() {
                ctx.set_reason(aid, Reason::Sync(DropReason::HeaderlessRejected));
                continue;
            }
            cands.push(Cand {
                a: aid,
                members: Vec::new(),
                emit: msgs[aid].log_time_ns,
            });
            continue;
        }
        let failed = results.iter().position(|r| r.by_anchor[ai].is_none());
        match failed {
            None => {
                let mut members = Vec::new();
                let mut emit = i64::MIN;
                for r in &results {
                    if let Some((m, e)) = &r.by_anchor[ai] {
                        members.extend_from_slice(m);
                        emit = emit.max(*e);
                    }
                }
                cands.push(Cand {
                    a: aid,
                    members,
                    emit,
                });
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
            }
        }
    }

    // Gates: freshness, then TF, then state.
    let stamp_or_log = |id: usize| msgs[id].stamp_ns.unwrap_or(msgs[id].log_time_ns);
    let emit_age = |cand: &Cand| -> Option<i64> {
        let s = msgs[cand.a].stamp_ns?;
        match &input.emit_axis {
            EmitAxis::Same => Some(cand.emit.saturating_sub(s)),
            EmitAxis::Mapped(f) => f(cand.emit).map(|e| e.saturating_sub(s)),
            EmitAxis::Unmapped => None,
        }
    };
    let mut alive: Vec<bool> = vec![true; cands.len()];
    let ages: Vec<Option<i64>> = cands.iter().map(emit_age).collect();
    if let Some(max) = c.max_age_ns {
        for (k, age) in ages.iter().enumerate() {
            if age.is_some_and(|a| a > max) {
                alive[k] = false;
                reject_cand(&mut ctx, &cands[k].members, cands[k].a, Reason::StaleAtEmit);
            }
        }
    }
    if let Some(target) = &c.tf_target {
        let mut queries = Vec::new();
        let mut owner = Vec::new();
        for (k, cand) in cands.iter().enumerate() {
            if !alive[k] {
                continue;
            }
            for id in std::iter::once(cand.a).chain(cand.members.iter().map(|&x| x as usize)) {
                queries.push(Query {
                    asof_log_ns: cand.emit,
                    frame_id: msgs[id].frame_id.to_string(),
                    stamp_ns: stamp_or_log(id),
                });
                owner.push(k);
            }
        }
        let res = bagscope_tf::availability(target, c.tf_cache_ns, input.tf, &queries);
        let mut bad = vec![false; cands.len()];
        for (q, r) in res.iter().enumerate() {
            if r.is_err() {
                bad[owner[q]] = true;
            }
        }
        for (k, cand) in cands.iter().enumerate() {
            if bad[k] && alive[k] {
                alive[k] = false;
                reject_cand(&mut ctx, &cand.members, cand.a, Reason::FrameUnavailable);
            }
        }
    }
    let prepared: Vec<state::Prepared> = input
        .states
        .iter()
        .zip(&c.state)
        .map(|(s, sp)| state::Prepared::new(s, sp))
        .collect();
    let mut last_hold: Vec<Option<(usize, u32)>> = vec![None; prepared.len()];
    let mut unavailable = vec![0usize; prepared.len()];
    let mut observations = Vec::new();
    let member_topic_of = |id: usize| msgs[id].topic;
    for (k, cand) in cands.iter().enumerate() {
        if !alive[k] {
            continue;
        }
        let am = &msgs[cand.a];
        let Some(astamp) = am.stamp_ns else {
            reject_cand(
                &mut ctx,
                &cand.members,
                cand.a,
                Reason::Sync(DropReason::HeaderlessRejected),
            );
            continue;
        };
        let epoch = anchor_epoch[ctx.index[cand.a] as usize] as usize;
        let mut state = Vec::with_capacity(prepared.len());
        let mut missing = false;
        let mut used = vec![None; prepared.len()];
        for (s, p) in prepared.iter().enumerate() {
            match p.lookup(epoch, astamp, am.log_time_ns) {
                Some((v, u)) => {
                    used[s] = u;
                    state.push(Some(v));
                }
                None => {
                    unavailable[s] += 1;
                    if !p.spec.optional {
                        missing = true;
                    }
                    state.push(None);
                }
            }
        }
        if missing {
            reject_cand(&mut ctx, &cand.members, cand.a, Reason::StateUnavailable);
            continue;
        }
        for (s, u) in used.iter().enumerate() {
            let (Some(u), Some(v)) = (u, state[s].as_mut()) else {
                continue;
            };
            let count = match last_hold[s] {
                Some((prev, n)) if prev == *u => n + 1,
                _ => 0,
            };
            last_hold[s] = Some((*u, count));
            v.reuse_count = Some(count);
        }
        let mut lo = astamp;
        let mut hi = astamp;
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        fnv(&mut h, input.policy_version.as_bytes());
        fnv(&mut h, topics[0].as_bytes());
        fnv(&mut h, &(ctx.index[cand.a] as u64).to_le_bytes());
        let members: Vec<MemberRef> = cand
            .members
            .iter()
            .map(|&x| {
                let x = x as usize;
                let m = &msgs[x];
                if let Some(s) = m.stamp_ns {
                    lo = lo.min(s);
                    hi = hi.max(s);
                }
                fnv(&mut h, topics[member_topic_of(x)].as_bytes());
                fnv(&mut h, &(ctx.index[x] as u64).to_le_bytes());
                MemberRef {
                    index: ctx.index[x] as usize,
                    stamp_ns: m.stamp_ns,
                    offset_ns: m.stamp_ns.map(|s| s.saturating_sub(astamp)),
                    frame_id: m.frame_id.clone(),
                    log_time_ns: m.log_time_ns,
                }
            })
            .collect();
        observations.push(Observation {
            observation_id: format!("{h:016x}"),
            anchor_index: ctx.index[cand.a] as usize,
            anchor_stamp_ns: astamp,
            anchor_log_time_ns: am.log_time_ns,
            anchor_frame_id: am.frame_id.clone(),
            clock_epoch: epoch as u32,
            emit_log_time_ns: cand.emit,
            emit_age_ns: ages[k],
            span_ns: hi.saturating_sub(lo),
            members,
            state,
        });
    }

    // Rejections: every synchronized message in no observation.
    let mut in_obs = vec![false; msgs.len()];
    for o in &observations {
        in_obs[ctx.anchors[o.anchor_index] as usize] = true;
    }
    for cand in &cands {
        if observations
            .binary_search_by_key(&(ctx.index[cand.a] as usize), |o| o.anchor_index)
            .is_ok()
        {
            for &m in &cand.members {
                in_obs[m as usize] = true;
            }
        }
    }
    let mut rejections: Vec<Rejection> = msgs
        .iter()
        .enumerate()
        .filter(|&(i, _)| !in_obs[i])
        .map(|(i, m)| Rejection {
            topic: m.topic,
            index: ctx.index[i] as usize,
            stamp_ns: m.stamp_ns,
            reason: ctx.reason[i].unwrap_or(Reason::Sync(DropReason::NeverMatched)),
            log_time_ns: m.log_time_ns,
        })
        .collect();
    rejections.sort_by_key(|r| (r.topic, r.index));

    // Summary.
    let mut drops = BTreeMap::new();
    let mut rejected_anchors = BTreeMap::new();
    for r in &rejections {
        *drops.entry(r.reason).or_insert(0) += 1;
        if r.topic == 0 {
            *rejected_anchors.entry(r.reason).or_insert(0) += 1;
        }
    }
    let mut states = Vec::new();
    let (mut all_gap, mut all_wait) = (Vec::new(), Vec::new());
    for (s, p) in prepared.iter().enumerate() {
        let vals = |f: fn(&StateValue) -> Option<i64>| -> Vec<i64> {
            observations
                .iter()
                .filter_map(|o| o.state[s].as_ref().and_then(f))
                .collect()
        };
        let gap = vals(|v| v.gap_ns);
        let wait = vals(|v| v.online_wait_ns);
        all_gap.extend_from_slice(&gap);
        all_wait.extend_from_slice(&wait);
        states.push(StateSummary {
            topic: p.spec.topic.clone(),
            mode: p.spec.mode,
            samples: p.series.samples.len(),
            unavailable: unavailable[s],
            gap_ns: summary_of(gap),
            online_wait_ns: summary_of(wait),
            hold_age_ns: summary_of(vals(|v| v.hold_age_ns)),
            interpolation_error_rms: (p.spec.mode == StateMode::Interpolate)
                .then(|| p.holdout_rms())
                .flatten(),
        });
    }
    let n_epochs = ctx.flush.len() + 1;
    let mut epochs: Vec<EpochSummary> = (0..n_epochs)
        .map(|e| EpochSummary {
            epoch: e as u32,
            start_log_time_ns: if e == 0 {
                ctx.anchors
                    .first()
                    .map_or(0, |&a| msgs[a as usize].log_time_ns)
            } else {
                msgs[ctx.flush[e - 1]].log_time_ns
            },
            anchors: 0,
            observations: 0,
            flushed: 0,
            warmup_anchors: 0,
        })
        .collect();
    for &e in &anchor_epoch {
        epochs[e as usize].anchors += 1;
    }
    for o in &observations {
        epochs[o.clock_epoch as usize].observations += 1;
    }
    for (i, (reason, &used)) in ctx.reason.iter().zip(&in_obs).enumerate() {
        if *reason == Some(Reason::Sync(DropReason::ClockEpochChanged)) && !used {
            // Held when the epoch it arrived in ended.
            let e = ctx.flush.partition_point(|&f| f <= i);
            epochs[e.min(n_epochs - 1)].flushed += 1;
        }
    }
    for (e, &f) in ctx.flush.iter().enumerate() {
        let end = ctx.flush.get(e + 1).copied().unwrap_or(msgs.len());
        let mut seen = vec![false; n_topics];
        seen[0] = true;
        let mut left = n_topics - 1;
        let mut warm = 0usize;
        for m in &msgs[f..end] {
            if left == 0 {
                break;
            }
            if m.topic == 0 {
                warm += 1;
            } else if !seen[m.topic] {
                seen[m.topic] = true;
                left -= 1;
            }
        }
        epochs[e + 1].warmup_anchors = warm;
    }
    let summary = ObserveSummary {
        anchors: ctx.anchors.len(),
        observations: observations.len(),
        drops,
        rejected_anchors,
        span_ns: summary_of(observations.iter().map(|o| o.span_ns).collect()),
        emit_age_ns: summary_of(observations.iter().filter_map(|o| o.emit_age_ns).collect()),
        gap_ns: summary_of(all_gap),
        online_wait_ns: summary_of(all_wait),
        state: states,
        epochs,
        emit_age_axis: match input.emit_axis {
            EmitAxis::Same => "same",
            EmitAxis::Mapped(_) => "clock",
            EmitAxis::Unmapped => "none",
        },
    };
    Ok(ObserveReport {
        policy_version: input.policy_version.to_string(),
        anchor_topic: c.anchor.clone(),
        member_topics: topics[1..].to_vec(),
        topics,
        state_topics: c.state.iter().map(|s| s.topic.clone()).collect(),
        state_fields: input.states.iter().map(|s| s.fields.clone()).collect(),
        state_has_names: input.states.iter().map(|s| s.has_names).collect(),
        groups: c.groups.clone(),
        observations,
        rejections,
        summary,
    })
}

/// A whole candidate set rejected by a gate: the reason goes on each of its messages.
fn reject_cand(ctx: &mut Ctx, members: &[u32], anchor: usize, r: Reason) {
    ctx.set_reason(anchor, r);
    for &m in members {
        ctx.set_reason(m as usize, r);
    }
}

#[cfg(test)]
mod tests;
