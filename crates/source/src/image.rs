//! A remote object as one address range that the readers slice like a mapped file, filled
//! only where a read plan asked for bytes.
//!
//! The readers above (`bagscope-bag`) were written for memory-mapped files: every record is
//! a slice of one `&[u8]` at its file offset. [`SparseImage`] keeps that: it reserves the
//! object's size of address space (anonymous, `MAP_NORESERVE`: no memory until written),
//! fetches the ranges a plan names into place ([`SparseImage::ensure`]), and gives the pages
//! back once read ([`SparseImage::release`]). Memory is what is fetched and not yet released:
//! the summary, and the chunks of the batch in flight.

use std::ops::Range;
use std::sync::Mutex;

use crate::error::SourceError;
use crate::object::RemoteObject;

/// Missing ranges closer than this are fetched as one request (the bytes between them are
/// read and dropped): fewer round trips for a little over-read.
pub const COALESCE_GAP_BYTES: u64 = 256 << 10;
/// The most one request asks for: larger spans are split, so that they arrive in parallel.
pub const MAX_REQUEST_BYTES: u64 = 16 << 20;

/// A remote object's bytes at their offsets, present where fetched (see the module docs).
pub struct SparseImage {
    object: RemoteObject,
    ptr: *mut u8,
    map_len: usize,
    size: usize,
    /// Sorted, disjoint, non-adjacent ranges whose bytes are in place.
    fetched: Mutex<Vec<Range<u64>>>,
}

// SAFETY: the mapping is owned by the image and lives as long as it; writes go only to
// ranges not yet fetched (no reader may look at those before `ensure` returns) under the
// protocol documented on `ensure`, and the range set is behind a mutex.
unsafe impl Send for SparseImage {}
// SAFETY: as above.
unsafe impl Sync for SparseImage {}

impl std::fmt::Debug for SparseImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseImage")
            .field("object", &self.object)
            .finish()
    }
}

impl SparseImage {
    /// Reserves the address space of `object` (nothing fetched yet).
    pub fn new(object: RemoteObject) -> Result<SparseImage, SourceError> {
        let size = usize::try_from(object.size()).map_err(|_| SourceError::Store {
            url: object.url().to_string(),
            detail: "object larger than this machine's address space".into(),
        })?;
        let map_len = size.max(1);
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(SourceError::Store {
                url: object.url().to_string(),
                detail: format!(
                    "cannot reserve {size} bytes of address space: {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
        Ok(SparseImage {
            object,
            ptr: p.cast(),
            map_len,
            size,
            fetched: Mutex::new(Vec::new()),
        })
    }

    /// The object this is an image of.
    pub fn object(&self) -> &RemoteObject {
        &self.object
    }

    /// The whole image: fetched ranges hold the object's bytes, the rest zeros. Read only
    /// what [`SparseImage::ensure`] has fetched.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `map_len >= size` bytes, readable, alive while `self` is.
        unsafe { std::slice::from_raw_parts(self.ptr, self.size) }
    }

    /// Places bytes already fetched (the tail read when opening) at `at`.
    #[allow(clippy::single_range_in_vec_init)] // A range list of one range: a `Vec<Range>`, not a range collected.
    pub fn put(&self, at: u64, data: &[u8]) {
        let end = (at.saturating_add(data.len() as u64)).min(self.size as u64);
        if at >= end {
            return;
        }
        let mut fetched = self.lock();
        for piece in subtract(std::slice::from_ref(&(at..end)), &fetched) {
            self.write(
                piece.start,
                &data[(piece.start - at) as usize..(piece.end - at) as usize],
            );
        }
        insert(&mut fetched, at..end);
    }

    /// Whether every byte of `r` is in place.
    pub fn is_fetched(&self, r: Range<u64>) -> bool {
        let r = self.clamp(r);
        r.is_empty() || subtract(std::slice::from_ref(&r), &self.lock()).is_empty()
    }

    /// The bytes of `ranges` not yet in place (what [`SparseImage::ensure`] would fetch,
    /// before coalescing).
    pub fn missing_bytes(&self, ranges: &[Range<u64>]) -> u64 {
        let want = normalise(ranges.iter().map(|r| self.clamp(r.clone())).collect());
        subtract(&want, &self.lock())
            .iter()
            .map(|r| r.end - r.start)
            .sum()
    }

    /// Fetches whatever of `ranges` is not in place yet (coalesced, split, concurrent).
    /// A caller reads a range only after an `ensure` covering it has returned, and no two
    /// callers release and read the same range at once (the scans give each chunk to one
    /// job).
    pub fn ensure(&self, ranges: &[Range<u64>]) -> Result<(), SourceError> {
        let want = normalise(ranges.iter().map(|r| self.clamp(r.clone())).collect());
        let missing = subtract(&want, &self.lock());
        if missing.is_empty() {
            return Ok(());
        }
        let requests = plan_requests(&missing);
        self.object.fetch_each(requests, |r, bytes| {
            let mut fetched = self.lock();
            // Only the pieces still missing: bytes between coalesced pieces may already be
            // in place (and being read).
            for piece in subtract(std::slice::from_ref(&r), &fetched) {
                let lo = (piece.start - r.start) as usize;
                let hi = (piece.end - r.start) as usize;
                self.write(piece.start, &bytes[lo..hi]);
                insert(&mut fetched, piece);
            }
        })
    }

    /// Gives back the memory of the whole pages inside `[at, at + len)` (they read as
    /// missing afterwards; a later `ensure` fetches them again).
    pub fn release(&self, at: u64, len: u64) {
        const PAGE: u64 = 4096;
        let start = at.next_multiple_of(PAGE);
        let end = at.saturating_add(len).min(self.size as u64) / PAGE * PAGE;
        if start >= end {
            return;
        }
        let mut fetched = self.lock();
        // SAFETY: the range is page-aligned and inside the mapping; DONTNEED on a private
        // anonymous mapping drops the pages (they read as zeros until written again), and
        // the range set says they are missing before the lock is released.
        unsafe {
            libc::madvise(
                self.ptr.add(start as usize).cast(),
                (end - start) as usize,
                libc::MADV_DONTNEED,
            );
        }
        remove(&mut fetched, start..end);
    }

    fn write(&self, at: u64, data: &[u8]) {
        debug_assert!(at as usize + data.len() <= self.size);
        // SAFETY: in bounds (clamped by the callers); the range is missing, so no reader
        // looks at it (the protocol on `ensure`).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(at as usize), data.len());
        }
    }

    fn clamp(&self, r: Range<u64>) -> Range<u64> {
        let n = self.size as u64;
        r.start.min(n)..r.end.min(n)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Range<u64>>> {
        self.fetched.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for SparseImage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.map_len);
        }
    }
}

/// Sorted, merged (overlapping or adjacent joined), empty ranges dropped.
fn normalise(mut v: Vec<Range<u64>>) -> Vec<Range<u64>> {
    v.retain(|r| r.start < r.end);
    v.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(l) if r.start <= l.end => l.end = l.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// `want` (normalised) minus `have` (normalised).
fn subtract(want: &[Range<u64>], have: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    for w in want {
        let mut cur = w.start;
        let k = have.partition_point(|h| h.end <= w.start);
        for h in &have[k..] {
            if h.start >= w.end {
                break;
            }
            if h.start > cur {
                out.push(cur..h.start);
            }
            cur = cur.max(h.end);
        }
        if cur < w.end {
            out.push(cur..w.end);
        }
    }
    out
}

fn insert(set: &mut Vec<Range<u64>>, r: Range<u64>) {
    set.push(r);
    let v = std::mem::take(set);
    *set = normalise(v);
}

fn remove(set: &mut Vec<Range<u64>>, r: Range<u64>) {
    let mut out = Vec::with_capacity(set.len() + 1);
    for s in set.drain(..) {
        if s.end <= r.start || s.start >= r.end {
            out.push(s);
            continue;
        }
        if s.start < r.start {
            out.push(s.start..r.start);
        }
        if s.end > r.end {
            out.push(r.end..s.end);
        }
    }
    *set = out;
}

/// The requests that fetch `missing` (normalised): neighbours closer than
/// [`COALESCE_GAP_BYTES`] joined, spans over [`MAX_REQUEST_BYTES`] split.
fn plan_requests(missing: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut joined: Vec<Range<u64>> = Vec::new();
    for r in missing {
        match joined.last_mut() {
            Some(l) if r.start - l.end <= COALESCE_GAP_BYTES => l.end = r.end,
            _ => joined.push(r.clone()),
        }
    }
    let mut out = Vec::new();
    for r in joined {
        let mut s = r.start;
        while s < r.end {
            let e = (s + MAX_REQUEST_BYTES).min(r.end);
            out.push(s..e);
            s = e;
        }
    }
    out
}

#[cfg(test)]
// One range in a slice is what these functions take.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // A range list of one range: a `Vec<Range>`, not a range collected.
    fn range_sets() {
        let have = normalise(vec![10..20, 30..40, 20..25]);
        assert_eq!(have, vec![10..25, 30..40]);
        assert_eq!(subtract(&[0..50], &have), vec![0..10, 25..30, 40..50]);
        assert_eq!(subtract(&[12..22], &have), Vec::<Range<u64>>::new());
        let mut s = have.clone();
        remove(&mut s, 15..35);
        assert_eq!(s, vec![10..15, 35..40]);
        insert(&mut s, 15..35);
        assert_eq!(s, vec![10..40]);
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // A range list of one range.
    fn requests_coalesce_near_ranges_and_split_long_ones() {
        let gap = COALESCE_GAP_BYTES;
        let r = plan_requests(&[0..10, 10 + gap..20 + gap, 100 * gap..100 * gap + 1]);
        assert_eq!(r, vec![0..20 + gap, 100 * gap..100 * gap + 1]);
        let long = plan_requests(&[0..2 * MAX_REQUEST_BYTES + 1]);
        assert_eq!(long.len(), 3);
        assert_eq!(long[2], 2 * MAX_REQUEST_BYTES..2 * MAX_REQUEST_BYTES + 1);
    }
}
