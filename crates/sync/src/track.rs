//! Bookkeeping shared by the policy engines: message fates, emitted sets, occupancy.

use crate::{
    Arrival, DropList, DropReason, DroppedMessage, Policy, QueueOccupancy, SetList, SyncConfig,
    SyncError, SyncOutcome, EPOCH_JUMP_NS,
};

/// How an engine removed a message (before the final reason classification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    QueueEvicted,
    SkewExceeded,
    /// Exact policies: older stamps purged after a publish.
    Purged,
    /// Same key on the same topic replaced this message.
    Overwritten,
    /// LatestTime: a newer message of the topic took its slot before any set used it.
    Superseded,
}

/// What the synchronizer held for a dropped message's partners when it was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Every other topic held a candidate; the tightest set it could have joined spans this.
    Span(i64),
    /// This topic (index) held no candidate partner.
    Missing(usize),
}

/// The spread of the tightest set holding `t` (topic `k`) and one of `held(j)` for every other
/// topic `j`, or the first topic that holds nothing.
pub(crate) fn best_span<I, F>(n: usize, k: usize, t: i64, held: F) -> Result<i64, usize>
where
    F: Fn(usize) -> I,
    I: Iterator<Item = i64>,
{
    let clamp = |d: i128| d.clamp(0, i64::MAX as i128) as i64;
    if n == 2 {
        let j = 1 - k.min(1);
        return held(j)
            .map(|v| (v as i128 - t as i128).abs())
            .min()
            .map(clamp)
            .ok_or(j);
    }
    let mut pts: Vec<(i64, usize)> = Vec::new();
    for j in (0..n).filter(|&j| j != k) {
        let before = pts.len();
        pts.extend(held(j).map(|v| (v, j)));
        if pts.len() == before {
            return Err(j);
        }
    }
    pts.sort_unstable();
    // Minimal windows covering every other topic; a window's cost includes `t`, which only
    // grows with the window, so the minimal window per right end is the best for that end.
    let need = n - 1;
    let mut cover = vec![0usize; n];
    let (mut covered, mut left) = (0usize, 0usize);
    let mut best = i128::MAX;
    let t = t as i128;
    for r in 0..pts.len() {
        if cover[pts[r].1] == 0 {
            covered += 1;
        }
        cover[pts[r].1] += 1;
        while covered == need {
            let hi = (pts[r].0 as i128).max(t);
            let lo = (pts[left].0 as i128).min(t);
            best = best.min(hi - lo);
            cover[pts[left].1] -= 1;
            if cover[pts[left].1] == 0 {
                covered -= 1;
            }
            left += 1;
        }
    }
    Ok(clamp(best))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Pending,
    Used,
    Removed(Removal),
    Rejected(DropReason),
}

/// A synchronizer policy fed one message at a time.
pub(crate) trait Engine {
    /// `t` is the time the policy keys on (stamp, or arrival time for approx-py options).
    fn add(&mut self, ai: usize, topic: usize, t: i64, tr: &mut Tracker);
    /// Messages of `topic` currently retained.
    fn len(&self, topic: usize) -> usize;
    /// The times the policy keys the retained messages of `topic` on (appended to `out`).
    fn held(&self, topic: usize, out: &mut Vec<i64>);
}

/// `sync_t` of a message rejected before entering the policy (no stamp or arrival time is
/// i64::MIN: both come from unsigned or 32-bit-seconds fields).
const NO_KEY: i64 = i64::MIN;

/// Per-arrival state is kept to what the arrivals do not already hold (10 bytes a message):
/// the time the policy keys on is recomputed from the arrival when needed.
pub(crate) struct Tracker<'a> {
    n: usize,
    cfg: &'a SyncConfig,
    arrivals: &'a [Arrival],
    fate: Vec<Fate>,
    /// Per-topic index of each arrival (32 bits: `emulate` bounds the input).
    index: Vec<u32>,
    counts: Vec<usize>,
    cur: usize,
    sets: SetList,
    occ_max: Vec<usize>,
    occ_sum: Vec<u128>,
    n_samples: usize,
    /// Count sets only (parameter sweeps): no fates, sets, drops or occupancy recorded.
    count_only: bool,
    emitted: usize,
    /// Partner facts of dropped messages, by arrival index (in the order recorded).
    details: Vec<(u32, Detail)>,
    /// The arrival during whose `add()` each message left the synchronizer (used or
    /// removed); `u32::MAX` while held.
    gone: Vec<u32>,
    /// Upstream behaviour is undefined from here on: the run stopped.
    error: Option<SyncError>,
}

impl<'a> Tracker<'a> {
    pub(crate) fn new(cfg: &'a SyncConfig, arrivals: &'a [Arrival]) -> Tracker<'a> {
        let n = cfg.n_topics;
        let mut counts = vec![0usize; n];
        let mut index = Vec::with_capacity(arrivals.len());
        let mut fate = Vec::with_capacity(arrivals.len());
        for a in arrivals {
            index.push(counts[a.topic] as u32);
            counts[a.topic] += 1;
            let (t, f) = key_time(cfg, a);
            fate.push(if t == Some(NO_KEY) {
                Fate::Rejected(DropReason::InvalidStamp)
            } else {
                f
            });
        }
        Tracker {
            n,
            cfg,
            arrivals,
            gone: vec![u32::MAX; fate.len()],
            fate,
            index,
            counts,
            cur: 0,
            sets: SetList::new(n),
            occ_max: vec![0; n],
            occ_sum: vec![0; n],
            n_samples: 0,
            count_only: false,
            emitted: 0,
            details: Vec::new(),
            error: None,
        }
    }

    /// A tracker that only counts the sets the engine emits: the engines behave the same
    /// (they keep their own queues), but nothing per message is recorded.
    pub(crate) fn counting(cfg: &'a SyncConfig, arrivals: &'a [Arrival]) -> Tracker<'a> {
        let n = cfg.n_topics;
        Tracker {
            n,
            cfg,
            arrivals,
            fate: Vec::new(),
            index: Vec::new(),
            counts: vec![0; n],
            cur: 0,
            sets: SetList::new(n),
            occ_max: Vec::new(),
            occ_sum: Vec::new(),
            n_samples: 0,
            count_only: true,
            emitted: 0,
            details: Vec::new(),
            gone: Vec::new(),
            error: None,
        }
    }

    /// The number of sets emitted, or why the run stopped.
    pub(crate) fn counted(self) -> Result<usize, SyncError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.emitted),
        }
    }

    /// Stop the run: upstream's behaviour is undefined from this arrival on.
    pub(crate) fn abort(&mut self, e: SyncError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Per-topic index of arrival `ai` (0 when only counting).
    pub(crate) fn index_of(&self, ai: usize) -> usize {
        self.index.get(ai).map_or(0, |&i| i as usize)
    }

    /// A span beyond which the policy can never emit a set.
    fn too_far(&self, span: i64) -> bool {
        match self.cfg.policy {
            Policy::ApproxPy => span >= self.cfg.slop_ns,
            Policy::Approx => self.cfg.max_interval_ns.is_some_and(|m| span > m),
            Policy::ApproxEpsilon => span > self.cfg.epsilon_ns,
            _ => false,
        }
    }

    pub(crate) fn run<E: Engine>(&mut self, e: &mut E) {
        let arrivals = self.arrivals;
        for (ai, a) in arrivals.iter().enumerate() {
            self.cur = ai;
            let t = if self.cfg.policy == Policy::Latest {
                // LatestTime never reads stamps: its clock is the log time.
                a.arrival_ns
            } else {
                self.sync_t(ai)
            };
            if t != NO_KEY {
                e.add(ai, a.topic, t, self);
            }
            if self.error.is_some() {
                return;
            }
            if self.count_only {
                continue;
            }
            for k in 0..self.n {
                let l = e.len(k);
                self.occ_max[k] = self.occ_max[k].max(l);
                self.occ_sum[k] += l as u128;
            }
            self.n_samples += 1;
        }
        // The approximate policies' drops are judged over each message's lifetime (in
        // `finish`); the others' pending messages by what is held at the end.
        if !self.count_only && !self.lifetime_judged() {
            self.note_pending(e);
        }
    }

    /// Policies whose drops get `skew_exceeded` / `never_matched` / `queue_evicted` from the
    /// partners a message had while it was held.
    fn lifetime_judged(&self) -> bool {
        matches!(
            self.cfg.policy,
            Policy::ApproxPy | Policy::Approx | Policy::ApproxEpsilon
        )
    }

    /// Messages still held when the input ends: which partner topic held nothing (exact
    /// policies: held no message of the same stamp).
    fn note_pending<E: Engine>(&mut self, e: &E) {
        let n = self.n;
        let held: Vec<Vec<i64>> = (0..n)
            .map(|k| {
                let mut v = Vec::new();
                e.held(k, &mut v);
                v.sort_unstable();
                v
            })
            .collect();
        let exact = self.cfg.policy.is_exact();
        for ai in 0..self.arrivals.len() {
            if self.fate[ai] != Fate::Pending {
                continue;
            }
            let k = self.arrivals[ai].topic;
            let t = self.sync_t(ai);
            let d = if exact {
                (0..n)
                    .find(|&j| j != k && held[j].binary_search(&t).is_err())
                    .map(Detail::Missing)
            } else {
                (0..n)
                    .find(|&j| j != k && held[j].is_empty())
                    .map(Detail::Missing)
            };
            if let Some(d) = d {
                self.details.push((ai as u32, d));
            }
        }
    }

    /// approx-py's per-topic key offset (0 for every other policy).
    fn offset(&self, k: usize) -> i64 {
        if self.cfg.policy == Policy::ApproxPy {
            self.cfg.queue_offset_ns.get(k).copied().unwrap_or(0)
        } else {
            0
        }
    }

    /// Record a callback with the given member arrival indices (topic order).
    pub(crate) fn emit(&mut self, members: &[usize]) {
        self.emitted += 1;
        if self.count_only {
            return;
        }
        let (index, cfg, arrivals) = (&self.index, self.cfg, self.arrivals);
        self.sets.push(
            members.iter().map(|&ai| {
                let t = sync_t_of(cfg, &arrivals[ai]);
                (index[ai] as usize, ai, if t == NO_KEY { 0 } else { t })
            }),
            self.cur,
            self.arrivals[self.cur].arrival_ns,
        );
        for &ai in members {
            // An emulator bug would show up as a non-pending member; keep the first fate.
            // LatestTime alone reuses a held message in later sets.
            debug_assert!(
                self.fate[ai] == Fate::Pending
                    || (self.cfg.policy == Policy::Latest && self.fate[ai] == Fate::Used),
                "message used twice or after removal"
            );
            if self.fate[ai] == Fate::Pending {
                self.fate[ai] = Fate::Used;
                self.gone[ai] = self.cur as u32;
            }
        }
    }

    fn key(&self, ai: usize) -> Option<i64> {
        Some(self.sync_t(ai)).filter(|&t| t != NO_KEY)
    }

    pub(crate) fn remove(&mut self, ai: usize, why: Removal) {
        // No fates when only counting.
        if let Some(f) = self.fate.get_mut(ai) {
            if *f == Fate::Pending {
                *f = Fate::Removed(why);
                self.gone[ai] = self.cur as u32;
            }
        }
    }

    pub(crate) fn finish(mut self, cfg: &SyncConfig) -> Result<SyncOutcome, SyncError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let arrivals = self.arrivals;
        let any_empty = self.counts.contains(&0);
        // Per topic, drops come in arrival order, which is index order; each topic's drop
        // count is known up front (its messages no set used), so every drop is written
        // straight to its place in (topic, index) order, nothing sorted or copied.
        let mut per_topic = vec![0usize; self.n];
        // Duplicates: a dropped message whose key was used in a set of its topic by an earlier
        // arrival. Only the smaller side is sorted and searched (a bag of a million sets has
        // few drops, one of a million drops few sets).
        let mut used_count = 0usize;
        for (ai, a) in arrivals.iter().enumerate() {
            if self.fate[ai] == Fate::Used {
                used_count += 1;
            } else {
                per_topic[a.topic] += 1;
            }
        }
        let dropped_count = arrivals.len() - used_count;
        let dups = if used_count == 0 || dropped_count == 0 {
            Dups::None
        } else if used_count <= dropped_count {
            // (topic, key, earliest using arrival)
            let mut v: Vec<(usize, i64, usize)> = (0..arrivals.len())
                .filter(|&ai| self.fate[ai] == Fate::Used)
                .map(|ai| (arrivals[ai].topic, self.sync_t(ai), ai))
                .collect();
            v.sort_unstable();
            Dups::Used(v)
        } else {
            let mut keys: Vec<(usize, i64)> = (0..arrivals.len())
                .filter(|&ai| self.fate[ai] != Fate::Used)
                .filter_map(|ai| self.key(ai).map(|t| (arrivals[ai].topic, t)))
                .collect();
            keys.sort_unstable();
            keys.dedup();
            let mut first = vec![usize::MAX; keys.len()];
            for (ai, a) in arrivals.iter().enumerate() {
                if self.fate[ai] == Fate::Used {
                    if let Ok(p) = keys.binary_search(&(a.topic, self.sync_t(ai))) {
                        first[p] = first[p].min(ai);
                    }
                }
            }
            Dups::Dropped(keys, first)
        };
        // The per-topic index is counted again below: its array goes before the judge's
        // per-topic arrival lists are built (one of the two at a time).
        self.index = Vec::new();
        let mut judge = self.lifetime_judged().then(|| Judge::new(&self));
        let mut seen = vec![0usize; self.n];
        self.details.sort_unstable_by_key(|d| d.0);
        let mut details = self.details.iter().peekable();
        let mut drops = DropList::with_counts(&per_topic);
        let mut written = vec![0usize; self.n];
        let order_matters = matches!(cfg.policy, Policy::Approx | Policy::ApproxEpsilon);
        // Per-topic history for order-dependent reasons, in arrival order.
        let mut max_before: Vec<Option<i64>> = vec![None; self.n];
        {
            for (ai, arrival) in arrivals.iter().enumerate() {
                let k = arrival.topic;
                let t = self.key(ai);
                let prev_max = max_before[k];
                if let Some(t) = t {
                    max_before[k] = Some(prev_max.map_or(t, |m| m.max(t)));
                }
                let behind = match (t, prev_max) {
                    (Some(t), Some(m)) => m.saturating_sub(t),
                    _ => 0,
                };
                let index = seen[k];
                seen[k] += 1;
                let mut detail = judge.as_mut().and_then(|j| j.step(&self, ai));
                while let Some(&&(i, d)) = details.peek() {
                    if (i as usize) < ai {
                        details.next();
                        continue;
                    }
                    if i as usize == ai {
                        detail = Some(d);
                    }
                    break;
                }
                let dup = self.fate[ai] != Fate::Used && t.is_some_and(|t| dups.before(k, t, ai));
                let reason = match self.fate[ai] {
                    Fate::Used => continue,
                    Fate::Rejected(r) => r,
                    Fate::Pending if dup => DropReason::DuplicateMember,
                    Fate::Pending => match detail {
                        Some(Detail::Span(_)) => DropReason::SkewExceeded,
                        _ => DropReason::NeverMatched,
                    },
                    Fate::Removed(why) => {
                        let base = match why {
                            Removal::Overwritten => DropReason::DuplicateMember,
                            _ if dup => DropReason::DuplicateMember,
                            Removal::QueueEvicted | Removal::SkewExceeded
                                if order_matters && behind > 0 =>
                            {
                                DropReason::OutOfOrder
                            }
                            // Evicted, but every partner it had was too far.
                            Removal::QueueEvicted if matches!(detail, Some(Detail::Span(_))) => {
                                DropReason::SkewExceeded
                            }
                            Removal::QueueEvicted | Removal::Superseded => DropReason::QueueEvicted,
                            // The matching logic discarded it, but no free partner ever came
                            // on some topic: that partner never arrived.
                            Removal::SkewExceeded if matches!(detail, Some(Detail::Missing(_))) => {
                                DropReason::NeverMatched
                            }
                            Removal::SkewExceeded => DropReason::SkewExceeded,
                            Removal::Purged if behind > 0 => DropReason::OutOfOrder,
                            Removal::Purged => DropReason::SkewExceeded,
                        };
                        // LatestTime never reads stamps: a jump in them changes nothing there.
                        if behind >= EPOCH_JUMP_NS && cfg.policy != Policy::Latest {
                            DropReason::ClockEpochChanged
                        } else {
                            base
                        }
                    }
                };
                let reason = match reason {
                    DropReason::HeaderlessRejected | DropReason::InvalidStamp => reason,
                    _ if any_empty => DropReason::TopicEmpty,
                    _ => reason,
                };
                let (span_ns, missing_topic) = match (reason, detail) {
                    (DropReason::SkewExceeded, Some(Detail::Span(s))) => (Some(s), None),
                    (
                        DropReason::NeverMatched | DropReason::QueueEvicted,
                        Some(Detail::Missing(j)),
                    ) => (None, Some(j)),
                    _ => (None, None),
                };
                drops.set(
                    k,
                    written[k],
                    &DroppedMessage {
                        topic: k,
                        index,
                        arrival_index: ai,
                        stamp_ns: arrival.stamp_ns(),
                        reason,
                        span_ns,
                        missing_topic,
                    },
                );
                written[k] += 1;
            }
        }
        debug_assert_eq!(written, per_topic);
        let occupancy = (0..self.n)
            .map(|k| QueueOccupancy {
                topic: k,
                max: self.occ_max[k],
                mean: if self.n_samples == 0 {
                    0.0
                } else {
                    self.occ_sum[k] as f64 / self.n_samples as f64
                },
            })
            .collect();
        Ok(SyncOutcome {
            policy: cfg.policy,
            n_topics: self.n,
            messages_per_topic: self.counts,
            sets: self.sets,
            drops,
            occupancy,
        })
    }
}

/// Judges every dropped message of an approximate policy by its candidate partners: the
/// messages of each other topic that were held at some moment while it was (held when it
/// arrived, or arriving before it left) and that no emitted set used (a message another set
/// took was that set's partner, not this one's). No candidate on some topic: that topic is its
/// `missing_topic` (its partner never arrived while it was held). Else the spread of the
/// tightest set of candidates with it is its span, and a span the policy could never accept
/// makes it `skew_exceeded` (the partner was there, but too far), whatever removed it.
///
/// Stepped through the arrivals in order, alongside the drop list being written: nothing is
/// kept per dropped message.
struct Judge {
    /// Arrival indices of each topic's messages that entered the synchronizer.
    pos: Vec<Vec<u32>>,
    /// Per topic, the free messages that may still be held (arrival indices); entries that
    /// left are skipped when read and compacted away when a list doubles, so a long queue
    /// costs no scan per arrival.
    held: Vec<Vec<u32>>,
    compact_at: Vec<usize>,
    cands: Vec<Vec<i64>>,
}

impl Judge {
    fn new(t: &Tracker) -> Judge {
        let n = t.n;
        let mut pos: Vec<Vec<u32>> = t.counts.iter().map(|&c| Vec::with_capacity(c)).collect();
        for (ai, a) in t.arrivals.iter().enumerate() {
            if !matches!(t.fate[ai], Fate::Rejected(_)) {
                pos[a.topic].push(ai as u32);
            }
        }
        Judge {
            pos,
            held: vec![Vec::new(); n],
            compact_at: vec![16; n],
            cands: vec![Vec::new(); n],
        }
    }

    /// The time the approximate policies compare, shifted by approx-py's key offset.
    fn key(t: &Tracker, ai: usize) -> i64 {
        t.sync_t(ai).saturating_sub(t.offset(t.arrivals[ai].topic))
    }

    /// Arrival `ai`, in arrival order: its detail if it was dropped.
    fn step(&mut self, t: &Tracker, ai: usize) -> Option<Detail> {
        if matches!(t.fate[ai], Fate::Rejected(_)) {
            return None;
        }
        let n = t.n;
        let k = t.arrivals[ai].topic;
        let now = ai as u32;
        let mut out = None;
        if matches!(t.fate[ai], Fate::Pending | Fate::Removed(_)) {
            let end = match t.gone[ai] {
                u32::MAX => t.arrivals.len() as u32,
                g => g + 1,
            };
            let free = |x: &&u32| t.fate[**x as usize] != Fate::Used;
            for j in (0..n).filter(|&j| j != k) {
                let c = &mut self.cands[j];
                c.clear();
                let pj = &self.pos[j];
                let from = pj.partition_point(|&x| x <= now);
                let to = pj.partition_point(|&x| x < end);
                c.extend(
                    self.held[j]
                        .iter()
                        .filter(|&&x| t.gone[x as usize] >= now)
                        .filter(free)
                        .map(|&x| Self::key(t, x as usize)),
                );
                c.extend(
                    pj[from..to]
                        .iter()
                        .filter(free)
                        .map(|&x| Self::key(t, x as usize)),
                );
            }
            let own = Self::key(t, ai);
            let skewed = t.fate[ai] == Fate::Removed(Removal::SkewExceeded);
            let cands = &self.cands;
            out = match best_span(n, k, own, |j| cands[j].iter().copied()) {
                Ok(span) if skewed || t.too_far(span) => Some(Detail::Span(span)),
                Ok(_) => None,
                Err(j) => Some(Detail::Missing(j)),
            };
        }
        // A message some set used is no one else's candidate.
        if t.fate[ai] != Fate::Used {
            self.held[k].push(now);
            if self.held[k].len() >= self.compact_at[k] {
                self.held[k].retain(|&x| t.gone[x as usize] >= now);
                self.compact_at[k] = (2 * self.held[k].len()).max(16);
            }
        }
        out
    }
}

/// Keys used in emitted sets, for the duplicate test, kept from the smaller side.
enum Dups {
    None,
    /// (topic, key, using arrival), sorted.
    Used(Vec<(usize, i64, usize)>),
    /// Dropped (topic, key) sorted, with the earliest arrival using each.
    Dropped(Vec<(usize, i64)>, Vec<usize>),
}

impl Dups {
    /// Whether `key` on `topic` was used in a set by an arrival before `ai`.
    fn before(&self, topic: usize, key: i64, ai: usize) -> bool {
        match self {
            Dups::None => false,
            Dups::Used(v) => {
                let p = v.partition_point(|e| (e.0, e.1) < (topic, key));
                v.get(p)
                    .is_some_and(|e| e.0 == topic && e.1 == key && e.2 < ai)
            }
            Dups::Dropped(keys, first) => keys
                .binary_search(&(topic, key))
                .is_ok_and(|p| first[p] < ai),
        }
    }
}

/// Time used by the policy for an arrival (`NO_KEY`: rejected before entering).
#[inline]
fn sync_t_of(cfg: &SyncConfig, a: &Arrival) -> i64 {
    key_time(cfg, a).0.unwrap_or(NO_KEY)
}

impl Tracker<'_> {
    #[inline]
    fn sync_t(&self, ai: usize) -> i64 {
        sync_t_of(self.cfg, &self.arrivals[ai])
    }
}

/// The time the policy keys the message on, or why it never enters the synchronizer.
fn key_time(cfg: &SyncConfig, a: &Arrival) -> (Option<i64>, Fate) {
    if cfg.policy == Policy::Latest {
        // LatestTime never reads a stamp: nothing is refused; a set reports the header stamp
        // where there is one (the log time otherwise) so its span means what it does elsewhere.
        return (Some(a.stamp_ns().unwrap_or(a.arrival_ns)), Fate::Pending);
    }
    if cfg.policy == Policy::ApproxPy {
        if cfg.sync_arrival_time {
            // Header ignored entirely: ROSClock().now() at add().
            return (Some(a.arrival_ns), Fate::Pending);
        }
        return match a.stamp_ns() {
            Some(s) if s < 0 => (None, Fate::Rejected(DropReason::InvalidStamp)),
            Some(s) => (Some(s), Fate::Pending),
            None if cfg.allow_headerless => (Some(a.arrival_ns), Fate::Pending),
            None => (None, Fate::Rejected(DropReason::HeaderlessRejected)),
        };
    }
    match a.stamp_ns() {
        // rclcpp/rclpy Time throw on a negative sec field.
        Some(s) if s < 0 => (None, Fate::Rejected(DropReason::InvalidStamp)),
        Some(s) => (Some(s), Fate::Pending),
        None => (None, Fate::Rejected(DropReason::HeaderlessRejected)),
    }
}
