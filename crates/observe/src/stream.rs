//! The observation builder fed message by message, in log-time order: observations are handed
//! to a [`Sink`] as the anchor advances, rejections as each message's fate is settled, and
//! the values summarised at the end go to [`Values`] the caller keeps (in memory, or on
//! disk). What it holds is what a live node holds: the anchors waiting for their state
//! brackets, TF or axis decision, the state topics' samples around them, and the messages
//! whose fate is still open; with member groups also the [`SyncPlan`] the synchronizers
//! made beforehand (a few bytes per synchronized message).

use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

use bagscope_stats::NsSummary;
use bagscope_sync::DropReason;
use bagscope_tf::{Frame, TfBuffer, TfMessage};

use crate::state::{Looked, StateWindow};
use crate::{
    fnv, Contract, EmitAxis, EpochSummary, MemberRef, Observation, ObserveError, ObserveReport,
    ObserveSummary, Reason, Rejection, StateField, StateSample, StateSummary, SyncMessage,
    SyncPlan,
};

/// Where the builder's results go as they are made.
pub trait Sink<X> {
    /// An observation, in anchor order, with the extras given with its anchor and members
    /// (anchor first, then the members in [`ObserveReport::member_topics`] order).
    fn observation(&mut self, o: Observation, extras: Vec<X>);
    /// A message in no observation. Each topic's in index order; topics interleaved.
    fn rejection(&mut self, r: Rejection);
}

/// A sequence of values summarised once complete (spans, emit ages, state gaps, ...).
pub trait Values {
    /// Adds a value.
    fn push(&mut self, v: i64);
    /// [`NsSummary::of_in_place`] of every value pushed; `None` when there is none.
    fn summary(&mut self) -> Option<NsSummary>;
}

/// [`Values`] kept in memory.
#[derive(Debug, Default)]
pub struct VecValues(Vec<i64>);

impl Values for VecValues {
    fn push(&mut self, v: i64) {
        self.0.push(v);
    }
    fn summary(&mut self) -> Option<NsSummary> {
        NsSummary::of_in_place(&mut self.0)
    }
}

/// Decides [`EmitAxis`] from the first anchor stamps and the first synchronized log time.
pub(crate) type DecideAxis<'a> = Box<dyn FnOnce(&[i64], Option<i64>) -> EmitAxis<'a> + 'a>;

/// How emit log times relate to the anchor's stamps: known up front, or decided from the
/// first 64 anchor stamps (in log-time order) and the first synchronized message's log time.
pub enum AxisChoice<'a> {
    /// Known.
    Given(EmitAxis<'a>),
    /// Decided by this function once those are seen (or at the end of the input).
    Decide(DecideAxis<'a>),
}

/// Anchor stamps the emit axis is decided from.
const AXIS_STAMPS: usize = 64;

/// What the streaming builder reads besides the messages.
pub struct StreamInput<'a> {
    /// The contract.
    pub contract: &'a Contract,
    /// The contract's content hash.
    pub policy_version: &'a str,
    /// The synchronizers' decisions ([`crate::plan_sync`]); `None` without member groups.
    pub plan: Option<SyncPlan>,
    /// Every static TF message of the input (they count from the start).
    pub tf_static: &'a [TfMessage],
    /// Emit age's clock relation.
    pub axis: AxisChoice<'a>,
    /// Makes the stores of the values summarised at the end.
    pub values: Box<dyn FnMut() -> Box<dyn Values> + 'a>,
}

/// The fate of a synchronized message while it may still change.
#[derive(Debug, Clone, Copy)]
struct Fate {
    stamp: Option<i64>,
    log: i64,
    /// Clock epochs of the anchor begun before it (where a flush counts it).
    epoch: u32,
    used: bool,
    reason: Option<Reason>,
    /// Candidate sets holding it not settled yet.
    open: u32,
}

/// A synchronized message that is a member of a candidate set not settled yet.
struct Member<X> {
    topic: usize,
    index: u32,
    stamp: Option<i64>,
    log: i64,
    frame: Frame,
    extra: Option<X>,
    /// Candidate sets holding it not settled yet.
    uses: u32,
}

/// An anchor whose members all matched (a candidate set), waiting for its gates.
struct Cand<X> {
    pos: u32,
    index: u32,
    stamp: Option<i64>,
    log: i64,
    frame: Frame,
    epoch: u32,
    members: Vec<u32>,
    emit: i64,
    extra: Option<X>,
    /// TF gate: whether every frame was transformable at the emit time (`None`: not known
    /// yet, or no TF gate).
    tf_ok: Option<bool>,
}

enum Axis<'a> {
    Pending(DecideAxis<'a>),
    Ready(EmitAxis<'a>),
}

/// The streaming observation builder (module docs). Feed it with [`Builder::sync`],
/// [`Builder::state`] and [`Builder::tf`] in log-time order, then [`Builder::finish`].
pub struct Builder<'a, X, S: Sink<X>> {
    c: &'a Contract,
    policy_version: &'a str,
    topics: Vec<String>,
    plan: Option<SyncPlan>,
    axis: Axis<'a>,
    axis_stamps: Vec<i64>,
    first_log: Option<i64>,
    tf: Option<TfBuffer>,
    states: Vec<StateWindow>,
    state_fields: Vec<Vec<StateField>>,
    state_has_names: Vec<bool>,
    sink: S,
    /// Position of the next synchronized message.
    next_pos: usize,
    counts: Vec<u32>,
    /// Log time of the latest input.
    now: i64,
    finished: bool,
    /// Newest anchor stamp of the current epoch.
    atop: i64,
    epoch_start: Vec<i64>,
    epoch_anchors: Vec<usize>,
    epoch_obs: Vec<usize>,
    epoch_flushed: Vec<usize>,
    epoch_warm: Vec<usize>,
    /// After a flush: member topics seen again, how many are still missing.
    warm: Option<(Vec<bool>, usize)>,
    n_anchors: usize,
    /// Per topic, the fates not handed out yet, from index `fate_front[t]` on.
    fates: Vec<VecDeque<Fate>>,
    fate_front: Vec<u32>,
    members: HashMap<u32, Member<X>>,
    cands: VecDeque<Cand<X>>,
    /// Candidates dequeued before `cands[0]` (a candidate's number minus this is its place).
    cands_done: u64,
    /// Candidates waiting for the TF gate: (emit log time, candidate number).
    tf_wait: BinaryHeap<std::cmp::Reverse<(i64, u64)>>,
    last_hold: Vec<Option<(u64, u32)>>,
    unavailable: Vec<usize>,
    drops: BTreeMap<Reason, usize>,
    rejected_anchors: BTreeMap<Reason, usize>,
    n_obs: usize,
    span: Box<dyn Values + 'a>,
    emit_age: Box<dyn Values + 'a>,
    gap_all: Box<dyn Values + 'a>,
    wait_all: Box<dyn Values + 'a>,
    gap: Vec<Box<dyn Values + 'a>>,
    wait: Vec<Box<dyn Values + 'a>>,
    hold: Vec<Box<dyn Values + 'a>>,
}

const JUMP: i64 = bagscope_sync::EPOCH_JUMP_NS;

impl<'a, X: Clone, S: Sink<X>> Builder<'a, X, S> {
    /// A builder writing to `sink`.
    pub fn new(input: StreamInput<'a>, sink: S) -> Result<Self, ObserveError> {
        let c = input.contract;
        crate::check_contract(c)?;
        let topics = c.sync_topics();
        let n = topics.len();
        let mut values = input.values;
        let tf = c.tf_target.as_ref().map(|_| {
            let mut buf = TfBuffer::new(c.tf_cache_ns);
            for m in input.tf_static.iter().filter(|m| m.is_static) {
                buf.insert_message(m);
            }
            buf
        });
        let ns = c.state.len();
        let mut many = |k: usize| (0..k).map(|_| values()).collect::<Vec<_>>();
        let (gap, wait, hold) = (many(ns), many(ns), many(ns));
        Ok(Builder {
            c,
            policy_version: input.policy_version,
            topics,
            plan: input.plan,
            axis: match input.axis {
                AxisChoice::Given(a) => Axis::Ready(a),
                AxisChoice::Decide(f) => Axis::Pending(f),
            },
            axis_stamps: Vec::new(),
            first_log: None,
            tf,
            states: c.state.iter().map(StateWindow::new).collect(),
            state_fields: vec![Vec::new(); ns],
            state_has_names: vec![false; ns],
            sink,
            next_pos: 0,
            counts: vec![0; n],
            now: i64::MIN,
            finished: false,
            atop: i64::MIN,
            epoch_start: vec![0],
            epoch_anchors: vec![0],
            epoch_obs: vec![0],
            epoch_flushed: vec![0],
            epoch_warm: vec![0],
            warm: None,
            n_anchors: 0,
            fates: (0..n).map(|_| VecDeque::new()).collect(),
            fate_front: vec![0; n],
            members: HashMap::new(),
            cands: VecDeque::new(),
            cands_done: 0,
            tf_wait: BinaryHeap::new(),
            last_hold: vec![None; ns],
            unavailable: vec![0; ns],
            drops: BTreeMap::new(),
            rejected_anchors: BTreeMap::new(),
            n_obs: 0,
            span: values(),
            emit_age: values(),
            gap_all: values(),
            wait_all: values(),
            gap,
            wait,
            hold,
        })
    }

    /// The sink the results go to.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// What is held for later: anchors waiting for their gates, messages whose fate is open,
    /// candidate members, state samples (a bound a test can check).
    pub fn held(&self) -> usize {
        self.cands.len()
            + self.fates.iter().map(VecDeque::len).sum::<usize>()
            + self.members.len()
            + self.states.iter().map(StateWindow::held).sum::<usize>()
    }

    /// Trims the state windows whenever they hold more than `n` samples (tests make it 0:
    /// a trim after every input).
    #[doc(hidden)]
    pub fn trim_from(mut self, n: usize) -> Self {
        for w in &mut self.states {
            w.trim_from = n;
        }
        self
    }

    /// The numeric fields (and whether it has a `name` list) of state topic `k`, known from
    /// its first sample; before any of its samples.
    pub fn state_fields(&mut self, k: usize, fields: &[StateField], has_names: bool) {
        if let Some(w) = self.states.get_mut(k) {
            w.set_fields(fields);
            self.state_fields[k] = fields.to_vec();
            self.state_has_names[k] = has_names;
        }
    }

    /// State topic `k` will have no more samples (its messages are all read): anchors
    /// waiting for it are answered without waiting for the end of the input.
    pub fn state_done(&mut self, k: usize) {
        if let Some(w) = self.states.get_mut(k) {
            w.finish();
        }
        self.progress();
    }

    /// The next sample of state topic `k`.
    pub fn state(&mut self, k: usize, s: StateSample) {
        self.advance(s.log_time_ns);
        if let Some(w) = self.states.get_mut(k) {
            w.push(s);
        }
        self.progress();
    }

    /// The next TF message (static ones are taken from [`StreamInput::tf_static`] and passed
    /// over here).
    pub fn tf(&mut self, m: &TfMessage) {
        self.advance(m.log_time_ns);
        if !m.is_static {
            if let Some(buf) = &mut self.tf {
                buf.insert_message(m);
            }
        }
        self.progress();
    }

    /// The next message of the anchor or a member topic, with what the sink gets with its
    /// observation.
    pub fn sync(&mut self, m: SyncMessage, extra: X) {
        self.advance(m.log_time_ns);
        let pos = self.next_pos as u32;
        self.next_pos += 1;
        let n = self.topics.len();
        let t = m.topic.min(n.saturating_sub(1));
        let index = self.counts[t];
        self.counts[t] += 1;
        self.first_log.get_or_insert(m.log_time_ns);
        if t == 0 {
            if let Some(s) = m.stamp_ns {
                if self.atop != i64::MIN && s < self.atop.saturating_sub(JUMP) {
                    // A jump back of the anchor's clock: a new epoch starts here.
                    self.epoch_start.push(m.log_time_ns);
                    self.epoch_anchors.push(0);
                    self.epoch_obs.push(0);
                    self.epoch_flushed.push(0);
                    self.epoch_warm.push(0);
                    let mut seen = vec![false; n];
                    seen[0] = true;
                    self.warm = Some((seen, n - 1));
                    self.atop = i64::MIN;
                }
                self.atop = self.atop.max(s);
                if matches!(self.axis, Axis::Pending(_)) && self.axis_stamps.len() < AXIS_STAMPS {
                    self.axis_stamps.push(s);
                }
            }
            if self.n_anchors == 0 {
                self.epoch_start[0] = m.log_time_ns;
            }
            self.n_anchors += 1;
            if let Some(a) = self.epoch_anchors.last_mut() {
                *a += 1;
            }
        }
        let epoch = (self.epoch_start.len() - 1) as u32;
        // Warm-up: anchors after a flush until every member topic has arrived again.
        if let Some((seen, left)) = &mut self.warm {
            if *left == 0 {
                self.warm = None;
            } else if t == 0 {
                if let Some(w) = self.epoch_warm.last_mut() {
                    *w += 1;
                }
            } else if !seen[t] {
                seen[t] = true;
                *left -= 1;
            }
        }
        let plan_reason = self.plan.as_ref().and_then(|p| p.reason(pos));
        let mut fate = Fate {
            stamp: m.stamp_ns,
            log: m.log_time_ns,
            epoch,
            used: false,
            reason: plan_reason,
            open: 0,
        };
        if t == 0 {
            let cand = match &self.plan {
                None => m.stamp_ns.is_some().then(|| (Vec::new(), m.log_time_ns)),
                Some(p) => p.cand(index as usize),
            };
            match cand {
                Some((members, emit)) => {
                    fate.open = 1;
                    let no = self.cands_done + self.cands.len() as u64;
                    if self.tf.is_some() {
                        self.tf_wait.push(std::cmp::Reverse((emit, no)));
                    }
                    self.cands.push_back(Cand {
                        pos,
                        index,
                        stamp: m.stamp_ns,
                        log: m.log_time_ns,
                        frame: m.frame_id,
                        epoch,
                        members,
                        emit,
                        extra: Some(extra),
                        tf_ok: None,
                    });
                }
                None if self.plan.is_none() => {
                    fate.reason = Some(Reason::Sync(DropReason::HeaderlessRejected));
                }
                None => {}
            }
        } else {
            let uses = self.plan.as_ref().map_or(0, |p| p.uses(pos));
            if uses > 0 {
                fate.open = uses;
                self.members.insert(
                    pos,
                    Member {
                        topic: t,
                        index,
                        stamp: m.stamp_ns,
                        log: m.log_time_ns,
                        frame: m.frame_id,
                        extra: Some(extra),
                        uses,
                    },
                );
            }
        }
        self.fates[t].push_back(fate);
        self.settle(t);
        self.progress();
    }

    /// Input up to log time `log` has been read: candidates emitted before it get their TF
    /// answer (every TF message logged at or before their emit time is in the buffer, none
    /// after it).
    fn advance(&mut self, log: i64) {
        self.now = self.now.max(log);
        while let Some(&std::cmp::Reverse((emit, no))) = self.tf_wait.peek() {
            if emit >= self.now && !self.finished {
                break;
            }
            self.tf_wait.pop();
            self.answer_tf(no);
        }
    }

    fn answer_tf(&mut self, no: u64) {
        let (Some(buf), Some(target)) = (&self.tf, &self.c.tf_target) else {
            return;
        };
        let Some(k) = no.checked_sub(self.cands_done) else {
            return;
        };
        let Some(cand) = self.cands.get(k as usize) else {
            return;
        };
        let stamp_or_log = |s: Option<i64>, l: i64| s.unwrap_or(l);
        let mut ok = buf
            .can_transform(target, &cand.frame, stamp_or_log(cand.stamp, cand.log))
            .is_ok();
        for p in &cand.members {
            if let Some(m) = self.members.get(p) {
                ok &= buf
                    .can_transform(target, &m.frame, stamp_or_log(m.stamp, m.log))
                    .is_ok();
            }
        }
        if let Some(c) = self.cands.get_mut(k as usize) {
            c.tf_ok = Some(ok);
        }
    }

    fn emit_age(&self, cand: &Cand<X>) -> Option<i64> {
        let s = cand.stamp?;
        match &self.axis {
            Axis::Ready(EmitAxis::Same) => Some(cand.emit.saturating_sub(s)),
            Axis::Ready(EmitAxis::Mapped(f)) => f(cand.emit).map(|e| e.saturating_sub(s)),
            Axis::Ready(EmitAxis::Unmapped) | Axis::Pending(_) => None,
        }
    }

    /// Settles the candidates at the head of the queue whose gates can be answered.
    fn progress(&mut self) {
        if matches!(self.axis, Axis::Pending(_))
            && (self.axis_stamps.len() >= AXIS_STAMPS || self.finished)
        {
            if let Axis::Pending(f) = std::mem::replace(&mut self.axis, Axis::Ready(EmitAxis::Same))
            {
                self.axis = Axis::Ready(f(&self.axis_stamps, self.first_log));
            }
            self.axis_stamps = Vec::new();
        }
        while let Some(cand) = self.cands.front() {
            if matches!(self.axis, Axis::Pending(_)) {
                break;
            }
            if !self.finished && cand.members.iter().any(|&p| p as usize >= self.next_pos) {
                break;
            }
            let age = self.emit_age(cand);
            let stale = self
                .c
                .max_age_ns
                .is_some_and(|max| age.is_some_and(|a| a > max));
            let tf_bad = if stale || self.tf.is_none() {
                false
            } else {
                match cand.tf_ok {
                    Some(ok) => !ok,
                    None => break,
                }
            };
            let mut looked: Vec<Looked> = Vec::new();
            if let (false, false, Some(stamp)) = (stale, tf_bad, cand.stamp) {
                for w in &self.states {
                    match w.lookup(cand.epoch as usize, stamp, cand.log) {
                        Some(v) => looked.push(v),
                        None => break,
                    }
                }
                if looked.len() < self.states.len() {
                    break;
                }
            }
            let Some(cand) = self.cands.pop_front() else {
                break;
            };
            self.cands_done += 1;
            if stale {
                self.reject(cand, Reason::StaleAtEmit);
            } else if tf_bad {
                self.reject(cand, Reason::FrameUnavailable);
            } else if cand.stamp.is_none() {
                self.reject(cand, Reason::Sync(DropReason::HeaderlessRejected));
            } else {
                self.observe(cand, age, looked);
            }
        }
        self.trim_states();
    }

    /// Trims each state window that has grown since its last trim to what the anchors
    /// waiting and to come can ask for.
    fn trim_states(&mut self) {
        if !self.states.iter().any(StateWindow::wants_trim) {
            return;
        }
        let current = self.epoch_start.len() - 1;
        let atop = self.atop;
        let mut waiting: HashMap<usize, i64> = HashMap::new();
        for c in &self.cands {
            if let Some(s) = c.stamp {
                let e = waiting.entry(c.epoch as usize).or_insert(i64::MAX);
                *e = (*e).min(s);
            }
        }
        let earliest = |e: usize| -> i64 {
            let future = match e.cmp(&current) {
                std::cmp::Ordering::Greater => i64::MIN,
                std::cmp::Ordering::Equal if atop == i64::MIN => i64::MIN,
                std::cmp::Ordering::Equal => atop.saturating_sub(JUMP),
                std::cmp::Ordering::Less => i64::MAX,
            };
            future.min(waiting.get(&e).copied().unwrap_or(i64::MAX))
        };
        for w in &mut self.states {
            if w.wants_trim() {
                w.trim(&earliest);
            }
        }
    }

    fn set_fate(&mut self, pos_topic: usize, index: u32, used: bool, reason: Option<Reason>) {
        let k = index.wrapping_sub(self.fate_front[pos_topic]) as usize;
        if let Some(f) = self.fates[pos_topic].get_mut(k) {
            f.used |= used;
            if f.reason.is_none() {
                f.reason = reason;
            }
            f.open = f.open.saturating_sub(1);
        }
        self.settle(pos_topic);
    }

    /// Hands out the settled fates at the front of topic `t`'s queue.
    fn settle(&mut self, t: usize) {
        while let Some(f) = self.fates[t].front() {
            if f.open > 0 {
                break;
            }
            let f = self.fates[t].pop_front().expect("a front");
            let index = self.fate_front[t];
            self.fate_front[t] += 1;
            if f.used {
                continue;
            }
            self.rejected(t, index, f);
        }
    }

    fn rejected(&mut self, t: usize, index: u32, f: Fate) {
        let reason = f.reason.unwrap_or(Reason::Sync(DropReason::NeverMatched));
        *self.drops.entry(reason).or_insert(0) += 1;
        if t == 0 {
            *self.rejected_anchors.entry(reason).or_insert(0) += 1;
        }
        if reason == Reason::Sync(DropReason::ClockEpochChanged) {
            // Held when the epoch it arrived in ended.
            if let Some(x) = self.epoch_flushed.get_mut(f.epoch as usize) {
                *x += 1;
            }
        }
        self.sink.rejection(Rejection {
            topic: t,
            index: index as usize,
            stamp_ns: f.stamp,
            reason,
            log_time_ns: f.log,
        });
    }

    /// Takes candidate member `p` out of the held members (once its last set is settled).
    fn take_member(&mut self, p: u32) -> Option<Member<X>> {
        let m = self.members.get_mut(&p)?;
        m.uses = m.uses.saturating_sub(1);
        if m.uses == 0 {
            return self.members.remove(&p);
        }
        Some(Member {
            topic: m.topic,
            index: m.index,
            stamp: m.stamp,
            log: m.log,
            frame: m.frame.clone(),
            extra: m.extra.clone(),
            uses: 0,
        })
    }

    /// A whole candidate set rejected by a gate: the reason goes on each of its messages.
    fn reject(&mut self, cand: Cand<X>, r: Reason) {
        self.set_fate(0, cand.index, false, Some(r));
        for &p in &cand.members {
            if let Some(m) = self.take_member(p) {
                self.set_fate(m.topic, m.index, false, Some(r));
            }
        }
    }

    fn observe(&mut self, mut cand: Cand<X>, age: Option<i64>, looked: Vec<Looked>) {
        let astamp = cand.stamp.unwrap_or_default();
        let mut state = Vec::with_capacity(looked.len());
        let mut missing = false;
        let mut used = vec![None; looked.len()];
        for (s, l) in looked.into_iter().enumerate() {
            match l {
                Some((v, u)) => {
                    used[s] = u;
                    state.push(Some(v));
                }
                None => {
                    self.unavailable[s] += 1;
                    if !self.c.state[s].optional {
                        missing = true;
                    }
                    state.push(None);
                }
            }
        }
        if missing {
            self.reject(cand, Reason::StateUnavailable);
            return;
        }
        for (s, u) in used.iter().enumerate() {
            let (Some(u), Some(v)) = (u, state[s].as_mut()) else {
                continue;
            };
            let count = match self.last_hold[s] {
                Some((prev, n)) if prev == *u => n + 1,
                _ => 0,
            };
            self.last_hold[s] = Some((*u, count));
            v.reuse_count = Some(count);
        }
        let mut lo = astamp;
        let mut hi = astamp;
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        fnv(&mut h, self.policy_version.as_bytes());
        fnv(&mut h, self.topics[0].as_bytes());
        fnv(&mut h, &u64::from(cand.index).to_le_bytes());
        let mut extras = Vec::with_capacity(cand.members.len() + 1);
        extras.extend(cand.extra.take());
        let mut members = Vec::with_capacity(cand.members.len());
        for &p in &cand.members {
            let Some(mut m) = self.take_member(p) else {
                continue;
            };
            if let Some(s) = m.stamp {
                lo = lo.min(s);
                hi = hi.max(s);
            }
            fnv(&mut h, self.topics[m.topic].as_bytes());
            fnv(&mut h, &u64::from(m.index).to_le_bytes());
            extras.extend(m.extra.take());
            self.set_fate(m.topic, m.index, true, None);
            members.push(MemberRef {
                index: m.index as usize,
                stamp_ns: m.stamp,
                offset_ns: m.stamp.map(|s| s.saturating_sub(astamp)),
                frame_id: m.frame,
                log_time_ns: m.log,
            });
        }
        self.set_fate(0, cand.index, true, None);
        let span = hi.saturating_sub(lo);
        self.span.push(span);
        if let Some(a) = age {
            self.emit_age.push(a);
        }
        for (s, v) in state.iter().enumerate() {
            let Some(v) = v else { continue };
            if let Some(g) = v.gap_ns {
                self.gap[s].push(g);
                self.gap_all.push(g);
            }
            if let Some(w) = v.online_wait_ns {
                self.wait[s].push(w);
                self.wait_all.push(w);
            }
            if let Some(a) = v.hold_age_ns {
                self.hold[s].push(a);
            }
        }
        if let Some(o) = self.epoch_obs.get_mut(cand.epoch as usize) {
            *o += 1;
        }
        self.n_obs += 1;
        let _ = cand.pos;
        self.sink.observation(
            Observation {
                observation_id: format!("{h:016x}"),
                anchor_index: cand.index as usize,
                anchor_stamp_ns: astamp,
                anchor_log_time_ns: cand.log,
                anchor_frame_id: cand.frame,
                clock_epoch: cand.epoch,
                emit_log_time_ns: cand.emit,
                emit_age_ns: age,
                span_ns: span,
                members,
                state,
            },
            extras,
        );
    }

    /// Ends the input: every anchor still waiting is settled, every open fate handed out,
    /// and the report (without observations and rejections: the sink has them) returned
    /// with the sink.
    pub fn finish(mut self) -> (ObserveReport, S) {
        self.finished = true;
        for w in &mut self.states {
            w.finish();
        }
        self.advance(i64::MAX);
        self.progress();
        // Whatever is still open (a plan that does not match the input) is settled as it is.
        for t in 0..self.fates.len() {
            for f in self.fates[t].iter_mut() {
                f.open = 0;
            }
            self.settle(t);
        }
        let c = self.c;
        let mut states = Vec::new();
        for (s, w) in self.states.iter().enumerate() {
            states.push(StateSummary {
                topic: w.spec.topic.clone(),
                mode: w.spec.mode,
                samples: w.samples as usize,
                unavailable: self.unavailable[s],
                gap_ns: self.gap[s].summary(),
                online_wait_ns: self.wait[s].summary(),
                hold_age_ns: self.hold[s].summary(),
                interpolation_error_rms: (w.spec.mode == crate::StateMode::Interpolate)
                    .then(|| w.holdout_rms())
                    .flatten(),
            });
        }
        let epochs = (0..self.epoch_start.len())
            .map(|e| EpochSummary {
                epoch: e as u32,
                start_log_time_ns: self.epoch_start[e],
                anchors: self.epoch_anchors[e],
                observations: self.epoch_obs[e],
                flushed: self.epoch_flushed[e],
                warmup_anchors: self.epoch_warm[e],
            })
            .collect();
        let summary = ObserveSummary {
            anchors: self.n_anchors,
            observations: self.n_obs,
            drops: std::mem::take(&mut self.drops),
            rejected_anchors: std::mem::take(&mut self.rejected_anchors),
            span_ns: self.span.summary(),
            emit_age_ns: self.emit_age.summary(),
            gap_ns: self.gap_all.summary(),
            online_wait_ns: self.wait_all.summary(),
            state: states,
            epochs,
            emit_age_axis: match &self.axis {
                Axis::Ready(EmitAxis::Same) | Axis::Pending(_) => "same",
                Axis::Ready(EmitAxis::Mapped(_)) => "clock",
                Axis::Ready(EmitAxis::Unmapped) => "none",
            },
        };
        let report = ObserveReport {
            policy_version: self.policy_version.to_string(),
            anchor_topic: c.anchor.clone(),
            member_topics: self.topics[1..].to_vec(),
            topics: self.topics.clone(),
            state_topics: c.state.iter().map(|s| s.topic.clone()).collect(),
            state_fields: std::mem::take(&mut self.state_fields),
            state_has_names: std::mem::take(&mut self.state_has_names),
            groups: c.groups.clone(),
            observations: Vec::new(),
            rejections: Vec::new(),
            summary,
        };
        (report, self.sink)
    }
}
