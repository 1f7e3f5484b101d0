//! A model of `tf2::BufferCore` sufficient for "could this transform be looked up at this stamp,
//! given the TF data received so far".

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::{strip_slash, TfMessage};

/// Why a transform could not be looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotReady {
    /// The source or target frame never appeared in any TF message received so far.
    FrameUnknown,
    /// The stamp is newer than the newest sample of an edge on the path.
    ExtrapolationIntoFuture,
    /// The stamp is older than the oldest sample kept for an edge on the path (before the first
    /// sample, or pruned by the cache length).
    ExtrapolationIntoPast,
    /// Both frames are known but no path joins them at that stamp.
    DisconnectedTree,
    /// The message's `header.frame_id` is empty (tf2_ros drops it outright).
    EmptyFrameId,
    /// Removed from the filter's queue by a newer message while waiting.
    QueueEvicted,
}

impl NotReady {
    /// The reason's snake_case name, as serialized and as used for drop-reason keys.
    pub fn as_str(self) -> &'static str {
        match self {
            NotReady::FrameUnknown => "frame_unknown",
            NotReady::ExtrapolationIntoFuture => "extrapolation_into_future",
            NotReady::ExtrapolationIntoPast => "extrapolation_into_past",
            NotReady::DisconnectedTree => "disconnected_tree",
            NotReady::EmptyFrameId => "empty_frame_id",
            NotReady::QueueEvicted => "queue_evicted",
        }
    }
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// tf2's `MAX_GRAPH_DEPTH`: a longer walk means a loop in the tree.
const MAX_DEPTH: usize = 1000;

/// A child frame's cache. As in tf2, the first insert for a child decides its kind.
#[derive(Debug, Clone)]
enum Cache {
    /// `StaticCache`: one parent, valid at every time (a later insert overwrites it).
    Static(usize),
    /// `TimeCache`: samples sorted by stamp ascending, `(stamp, parent)`.
    Dynamic(Vec<(i64, usize)>),
}

/// Counters of inserts tf2 would refuse (it logs a warning and keeps going).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct InsertStats {
    /// Transforms accepted into a cache (static overwrites included).
    pub inserted: usize,
    /// `TF_OLD_DATA`: older than the newest sample minus the cache length.
    pub old_data: usize,
    /// `TF_REPEATED_DATA`: same child and stamp as a sample already held.
    pub repeated_data: usize,
    /// Empty frame names or a transform whose child equals its parent.
    pub invalid: usize,
}

/// The transforms received so far, per child frame: what `tf2::BufferCore` holds, without the
/// transforms' values (only which edges exist at which stamps).
#[derive(Debug, Clone)]
pub struct TfBuffer {
    cache_ns: i64,
    ids: HashMap<String, usize>,
    names: Vec<String>,
    /// Indexed by child frame id.
    caches: Vec<Option<Cache>>,
    /// What became of every insert so far (accepted or refused, and why).
    pub stats: InsertStats,
}

impl TfBuffer {
    /// `cache_ns`: how much history each edge keeps behind its newest sample (tf2 default 10 s).
    pub fn new(cache_ns: i64) -> TfBuffer {
        TfBuffer {
            cache_ns: cache_ns.max(0),
            ids: HashMap::new(),
            names: Vec::new(),
            caches: Vec::new(),
            stats: InsertStats::default(),
        }
    }

    /// The history kept behind each edge's newest sample, in nanoseconds (negative given as 0).
    pub fn cache_ns(&self) -> i64 {
        self.cache_ns
    }

    fn intern(&mut self, name: &str) -> usize {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len();
        self.ids.insert(name.to_string(), i);
        self.names.push(name.to_string());
        self.caches.push(None);
        i
    }

    fn id(&self, name: &str) -> Option<usize> {
        self.ids.get(strip_slash(name)).copied()
    }

    /// Every frame seen so far (as parent or child), sorted.
    pub fn frames(&self) -> BTreeSet<String> {
        self.names.iter().cloned().collect()
    }

    /// Inserts every transform of `m` (static when `m.is_static`).
    pub fn insert_message(&mut self, m: &TfMessage) {
        for t in &m.transforms {
            self.insert(&t.parent, &t.child, t.stamp_ns, m.is_static);
        }
    }

    /// `BufferCore::setTransform`: names are slash-stripped; refused data is counted.
    pub fn insert(&mut self, parent: &str, child: &str, stamp_ns: i64, is_static: bool) {
        let (p, c) = (strip_slash(parent), strip_slash(child));
        if p.is_empty() || c.is_empty() || p == c {
            self.stats.invalid += 1;
            return;
        }
        let pi = self.intern(p);
        let ci = self.intern(c);
        let cache_ns = self.cache_ns;
        let slot = &mut self.caches[ci];
        match slot {
            None => {
                *slot = Some(if is_static {
                    Cache::Static(pi)
                } else {
                    Cache::Dynamic(vec![(stamp_ns, pi)])
                });
                self.stats.inserted += 1;
            }
            Some(Cache::Static(par)) => {
                *par = pi;
                self.stats.inserted += 1;
            }
            Some(Cache::Dynamic(v)) => {
                let newest = v.last().map(|s| s.0).unwrap_or(i64::MIN);
                if stamp_ns < newest.saturating_sub(cache_ns) {
                    self.stats.old_data += 1;
                    return;
                }
                let pos = v.partition_point(|s| s.0 < stamp_ns);
                if v.get(pos).is_some_and(|s| s.0 == stamp_ns) {
                    self.stats.repeated_data += 1;
                    return;
                }
                v.insert(pos, (stamp_ns, pi));
                self.stats.inserted += 1;
                // pruneList: drop samples older than newest − cache length.
                let newest = v.last().map(|s| s.0).unwrap_or(stamp_ns);
                let keep_from = v.partition_point(|s| s.0.saturating_add(cache_ns) < newest);
                if keep_from > 0 {
                    v.drain(..keep_from);
                }
            }
        }
    }

    /// The parent of `frame` at `t`: `Ok(None)` for a root (no cache), an error when the edge
    /// holds no sample range covering `t`. `t == 0` means "latest", as in tf2.
    fn parent_at(&self, frame: usize, t: i64) -> Result<Option<usize>, NotReady> {
        match self.caches.get(frame).and_then(|c| c.as_ref()) {
            None => Ok(None),
            Some(Cache::Static(p)) => Ok(Some(*p)),
            Some(Cache::Dynamic(v)) => {
                let (Some(first), Some(last)) = (v.first(), v.last()) else {
                    return Ok(None);
                };
                if t == 0 {
                    return Ok(Some(last.1));
                }
                if t > last.0 {
                    return Err(NotReady::ExtrapolationIntoFuture);
                }
                if t < first.0 {
                    return Err(NotReady::ExtrapolationIntoPast);
                }
                // Between two samples (or exactly on one): tf2 takes the older sample's parent
                // when the two disagree.
                let pos = v.partition_point(|s| s.0 <= t);
                Ok(v.get(pos.saturating_sub(1)).map(|s| s.1))
            }
        }
    }

    /// Walks up from `from` at `t`; returns the frames visited (from first) and why it stopped
    /// early (`None`: reached a root, or `stop_at`).
    fn walk(
        &self,
        from: usize,
        t: i64,
        stop_at: &dyn Fn(usize) -> bool,
    ) -> (Vec<usize>, Option<NotReady>, bool) {
        let mut chain = vec![from];
        let mut f = from;
        for _ in 0..MAX_DEPTH {
            if stop_at(f) {
                return (chain, None, true);
            }
            match self.parent_at(f, t) {
                Ok(None) => return (chain, None, false),
                Ok(Some(p)) => {
                    chain.push(p);
                    f = p;
                }
                Err(e) => return (chain, Some(e), false),
            }
        }
        // A loop in the tree: tf2 refuses the lookup.
        (chain, Some(NotReady::DisconnectedTree), false)
    }

    /// `BufferCore::canTransform(target, source, t)`.
    pub fn can_transform(&self, target: &str, source: &str, t: i64) -> Result<(), NotReady> {
        let (target, source) = (strip_slash(target), strip_slash(source));
        if source.is_empty() {
            return Err(NotReady::EmptyFrameId);
        }
        if target == source {
            return Ok(());
        }
        let (Some(ti), Some(si)) = (self.id(target), self.id(source)) else {
            return Err(NotReady::FrameUnknown);
        };
        let t = if t == 0 {
            match self.latest_common_time(target, source) {
                Some(l) => l,
                None => return Err(NotReady::DisconnectedTree),
            }
        } else {
            t
        };
        let (schain, serr, hit) = self.walk(si, t, &|f| f == ti);
        if hit {
            return Ok(());
        }
        let seen: BTreeSet<usize> = schain.iter().copied().collect();
        let (_, terr, hit) = self.walk(ti, t, &|f| seen.contains(&f));
        if hit {
            return Ok(());
        }
        Err(serr.or(terr).unwrap_or(NotReady::DisconnectedTree))
    }

    /// `BufferCore::getLatestCommonTime`: the oldest of the newest samples along the path
    /// (static edges ignored). `Some(0)` when the path is all static; `None` when disconnected.
    pub fn latest_common_time(&self, target: &str, source: &str) -> Option<i64> {
        let (ti, si) = (self.id(target)?, self.id(source)?);
        if ti == si {
            return Some(0);
        }
        // Path by newest parents, with each edge's newest stamp.
        let up = |from: usize| -> Vec<(usize, i64)> {
            let mut out = vec![(from, 0)];
            let mut f = from;
            for _ in 0..MAX_DEPTH {
                match self.caches.get(f).and_then(|c| c.as_ref()) {
                    None => break,
                    Some(Cache::Static(p)) => {
                        out.push((*p, 0));
                        f = *p;
                    }
                    Some(Cache::Dynamic(v)) => match v.last() {
                        Some(&(s, p)) => {
                            out.push((p, s));
                            f = p;
                        }
                        None => break,
                    },
                }
            }
            out
        };
        let s = up(si);
        let t = up(ti);
        // The first frame of the source chain that is also on the target chain.
        let (k_s, k_t) = s
            .iter()
            .enumerate()
            .find_map(|(i, (f, _))| t.iter().position(|(g, _)| g == f).map(|j| (i, j)))?;
        // Edge stamps are stored on the frame *above* each edge (index ≥ 1).
        let stamps = s[1..=k_s].iter().chain(t[1..=k_t].iter()).map(|x| x.1);
        Some(stamps.filter(|&x| x != 0).min().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn chain() -> TfBuffer {
        let mut b = TfBuffer::new(10 * S);
        b.insert("base_link", "lidar", 0, true);
        for k in 0..=10 {
            b.insert("odom", "base_link", 100 * S + k * S / 10, false);
        }
        b
    }

    #[test]
    fn interpolation_only_inside_the_samples() {
        let b = chain();
        assert_eq!(
            b.can_transform("odom", "lidar", 100 * S + S / 2 + 1),
            Ok(())
        );
        assert_eq!(b.can_transform("odom", "lidar", 101 * S), Ok(()));
        assert_eq!(
            b.can_transform("odom", "lidar", 101 * S + 1),
            Err(NotReady::ExtrapolationIntoFuture)
        );
        assert_eq!(
            b.can_transform("odom", "lidar", 100 * S - 1),
            Err(NotReady::ExtrapolationIntoPast)
        );
        // Static edges hold at any stamp; the same frame always works.
        assert_eq!(b.can_transform("base_link", "lidar", 5), Ok(()));
        assert_eq!(b.can_transform("map", "map", 5), Ok(()));
        assert_eq!(
            b.can_transform("map", "lidar", 5),
            Err(NotReady::FrameUnknown)
        );
        assert_eq!(b.can_transform("odom", "", 5), Err(NotReady::EmptyFrameId));
        assert_eq!(b.can_transform("/odom", "/lidar", 101 * S), Ok(()));
    }

    #[test]
    fn cache_length_prunes_old_samples() {
        let mut b = TfBuffer::new(S);
        for k in 0..30 {
            b.insert("odom", "base_link", k * S / 10 + S, false);
        }
        // Newest 3.9 s, so 2.9 s is the oldest kept.
        assert_eq!(b.can_transform("odom", "base_link", 29 * S / 10), Ok(()));
        assert_eq!(
            b.can_transform("odom", "base_link", 28 * S / 10),
            Err(NotReady::ExtrapolationIntoPast)
        );
        b.insert("odom", "base_link", S, false);
        assert_eq!(b.stats.old_data, 1);
        b.insert("odom", "base_link", 39 * S / 10, false);
        assert_eq!(b.stats.repeated_data, 1);
    }

    #[test]
    fn disconnected_and_latest_common_time() {
        let mut b = chain();
        b.insert("map", "other", 0, true);
        assert_eq!(
            b.can_transform("odom", "other", 100 * S),
            Err(NotReady::DisconnectedTree)
        );
        assert_eq!(b.latest_common_time("odom", "lidar"), Some(101 * S));
        assert_eq!(b.latest_common_time("base_link", "lidar"), Some(0));
        assert_eq!(b.latest_common_time("odom", "other"), None);
        // Stamp 0 means "latest".
        assert_eq!(b.can_transform("odom", "lidar", 0), Ok(()));
    }

    #[test]
    fn loops_do_not_hang() {
        let mut b = TfBuffer::new(S);
        b.insert("a", "b", 0, true);
        b.insert("b", "a", 0, true);
        b.insert("x", "y", 0, true);
        assert_eq!(
            b.can_transform("x", "a", 5),
            Err(NotReady::DisconnectedTree)
        );
    }
}
