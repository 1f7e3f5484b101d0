//! One remote object, pinned to the version it had when it was opened, read by ranges.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use crate::error::SourceError;
use crate::location::{ObjectUrl, Scheme};
use crate::stats;
use crate::store::{block_on, credential_sources, env_u64, store_for, store_path};

/// Attempts of one range read on top of the store client's own retries (which cover 5xx,
/// 429 and connection failures before a body arrives): a body that arrives short or fails
/// mid-way is asked for again.
const ATTEMPTS: u32 = 4;

/// Ranged GETs in flight at once per read ([`RemoteObject::fetch_each`]); env
/// `BAGSCOPE_REMOTE_CONCURRENCY`.
pub(crate) fn concurrency() -> usize {
    env_u64("BAGSCOPE_REMOTE_CONCURRENCY")
        .map(|n| n.clamp(1, 256) as usize)
        .unwrap_or(16)
}

/// A remote object pinned to the version (ETag, and the store's version id where it has
/// one) it had when opened: every later read asks for that version (`If-Match`) and checks
/// the answer's ETag, so an object replaced mid-read is an error, never a mix of two versions.
pub struct RemoteObject {
    url: ObjectUrl,
    store: Arc<dyn ObjectStore>,
    path: object_store::path::Path,
    size: u64,
    etag: Option<String>,
    version: Option<String>,
}

impl std::fmt::Debug for RemoteObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteObject")
            .field("url", &self.url.as_str())
            .field("size", &self.size)
            .field("etag", &self.etag)
            .finish()
    }
}

impl RemoteObject {
    /// Opens `url` with one request for its last `tail` bytes (the footer and, usually, the
    /// whole summary of an MCAP file), which also gives its size and version. Stores that
    /// refuse suffix ranges (Azure) get a HEAD and a bounded range instead.
    pub fn open_tail(url: &ObjectUrl, tail: u64) -> Result<(RemoteObject, Bytes), SourceError> {
        let store = store_for(url)?;
        let path = store_path(url);
        let got = block_on(async {
            stats::count_request();
            let opts = GetOptions {
                range: Some(GetRange::Suffix(tail.max(1))),
                ..Default::default()
            };
            let res = store.get_opts(&path, opts).await?;
            let meta = res.meta.clone();
            let range = res.range.clone();
            let body = res.bytes().await?;
            Ok::<_, object_store::Error>((meta, range, body))
        });
        let (meta, range, body) = match got {
            Ok(v) => v,
            Err(e) if !suffix_refused(&e) => return Err(map_error(url, e)),
            Err(_) => {
                // No suffix ranges here (or an empty object): the size first, then the tail.
                let meta = block_on(async {
                    stats::count_request();
                    store.head(&path).await
                })
                .map_err(|e| map_error(url, e))?;
                let start = meta.size.saturating_sub(tail);
                let mut obj = RemoteObject {
                    url: url.clone(),
                    store,
                    path,
                    size: meta.size,
                    etag: meta.e_tag,
                    version: meta.version,
                };
                if meta.size == 0 {
                    return Ok((obj, Bytes::new()));
                }
                let body = obj.read_range(start..meta.size)?;
                obj.size = meta.size;
                return Ok((obj, body));
            }
        };
        stats::count_bytes(body.len() as u64);
        if range.end != meta.size || body.len() as u64 != range.end - range.start {
            return Err(SourceError::NoRanges {
                url: url.to_string(),
                detail: format!(
                    "asked for the last {tail} bytes, got bytes {}..{} ({} bytes) of {}",
                    range.start,
                    range.end,
                    body.len(),
                    meta.size
                ),
            });
        }
        Ok((
            RemoteObject {
                url: url.clone(),
                store,
                path,
                size: meta.size,
                etag: meta.e_tag,
                version: meta.version,
            },
            body,
        ))
    }

    /// The object's URL.
    pub fn url(&self) -> &ObjectUrl {
        &self.url
    }

    /// Size in bytes, when opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The version it was opened at: its ETag, else the store's version id, else empty.
    pub fn version_tag(&self) -> &str {
        self.etag
            .as_deref()
            .or(self.version.as_deref())
            .unwrap_or("")
    }

    /// Bytes `r` of the pinned version.
    pub fn read_range(&self, r: Range<u64>) -> Result<Bytes, SourceError> {
        block_on(self.fetch(r))
    }

    /// Reads `ranges` (at most [`concurrency`] requests in flight) and hands each to `f` as
    /// it arrives (in any order). Stops at the first range that fails for good.
    pub fn fetch_each(
        &self,
        ranges: Vec<Range<u64>>,
        mut f: impl FnMut(Range<u64>, Bytes),
    ) -> Result<(), SourceError> {
        block_on(async {
            let mut s = futures::stream::iter(ranges.into_iter().map(|r| async move {
                let b = self.fetch(r.clone()).await;
                (r, b)
            }))
            .buffer_unordered(concurrency());
            while let Some((r, b)) = s.next().await {
                f(r, b?);
            }
            Ok(())
        })
    }

    /// Copies the whole object into `out` (pieces of 8 MiB, four in flight, written in
    /// order), refusing objects over `limit` bytes; `why` says why a whole copy is needed.
    pub fn download_to(
        &self,
        out: &mut dyn std::io::Write,
        out_path: &std::path::Path,
        limit: u64,
        why: &str,
    ) -> Result<(), SourceError> {
        if self.size > limit {
            return Err(SourceError::TooLarge {
                url: self.url.to_string(),
                size: self.size,
                limit,
                why: why.to_string(),
            });
        }
        const PIECE: u64 = 8 << 20;
        let ranges: Vec<Range<u64>> = (0..self.size.div_ceil(PIECE))
            .map(|i| i * PIECE..((i + 1) * PIECE).min(self.size))
            .collect();
        block_on(async {
            let mut s =
                futures::stream::iter(ranges.into_iter().map(|r| self.fetch(r))).buffered(4);
            while let Some(b) = s.next().await {
                out.write_all(&b?).map_err(|source| SourceError::Io {
                    path: out_path.to_path_buf(),
                    source,
                })?;
            }
            Ok(())
        })
    }

    async fn fetch(&self, r: Range<u64>) -> Result<Bytes, SourceError> {
        let want = r.end.saturating_sub(r.start);
        if want == 0 {
            return Ok(Bytes::new());
        }
        let mut detail = String::new();
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(Duration::from_millis(100 << (attempt - 2))).await;
            }
            stats::count_request();
            let opts = GetOptions {
                range: Some(GetRange::Bounded(r.clone())),
                if_match: self.etag.clone(),
                version: self.version.clone(),
                ..Default::default()
            };
            let res = match self.store.get_opts(&self.path, opts).await {
                Ok(res) => {
                    if let (Some(pinned), Some(now)) = (&self.etag, &res.meta.e_tag) {
                        if pinned != now {
                            return Err(self.replaced());
                        }
                    }
                    res.bytes().await
                }
                Err(e) => Err(e),
            };
            match res {
                Ok(b) if b.len() as u64 == want => {
                    stats::count_bytes(want);
                    return Ok(b);
                }
                Ok(b) => {
                    stats::count_bytes(b.len() as u64);
                    detail = format!("{} bytes arrived of {want}", b.len());
                }
                Err(object_store::Error::Precondition { .. }) => return Err(self.replaced()),
                // Gone since it was opened: replaced by nothing.
                Err(e) if is_not_found(&e) => return Err(self.replaced()),
                Err(e) if is_denied(&e) => return Err(denied(&self.url, &e)),
                Err(e) => detail = e.to_string(),
            }
        }
        Err(SourceError::Read {
            url: self.url.to_string(),
            start: r.start,
            end: r.end,
            attempts: ATTEMPTS,
            detail,
        })
    }

    fn replaced(&self) -> SourceError {
        SourceError::Replaced {
            url: self.url.to_string(),
            pinned: if self.version_tag().is_empty() {
                "unknown".into()
            } else {
                self.version_tag().to_string()
            },
        }
    }
}

/// An object found under a prefix.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its URL.
    pub url: ObjectUrl,
    /// Its size in bytes.
    pub size: u64,
}

/// The objects directly under `prefix` (not in deeper "folders"), sorted by key. HTTP has no
/// listing: an error that says so.
pub fn list(prefix: &ObjectUrl) -> Result<Vec<Listed>, SourceError> {
    if prefix.scheme == Scheme::Http {
        return Err(SourceError::Store {
            url: prefix.to_string(),
            detail: "plain HTTP cannot list a folder: name the file, or a rosbag2 folder whose metadata.yaml is served".into(),
        });
    }
    let store = store_for(prefix)?;
    let p = prefix.as_prefix();
    let path = store_path(&p);
    let res = block_on(async {
        stats::count_request();
        store
            .list_with_delimiter((!p.key().is_empty()).then_some(&path))
            .await
    })
    .map_err(|e| map_error(prefix, e))?;
    let mut out: Vec<Listed> = res
        .objects
        .into_iter()
        .map(|m| {
            let name = m.location.filename().unwrap_or("").to_string();
            Listed {
                url: p.join(&name),
                size: m.size,
            }
        })
        .collect();
    out.sort_by(|a, b| a.url.key().cmp(b.url.key()));
    Ok(out)
}

/// Whether the bucket or container of `url` exists (one listing request): tells a missing
/// bucket from a missing object.
pub fn bucket_exists(url: &ObjectUrl) -> bool {
    if url.scheme == Scheme::Http {
        return true;
    }
    let Ok(store) = store_for(url) else {
        return true;
    };
    let r = block_on(async {
        stats::count_request();
        store.list_with_delimiter(None).await
    });
    match r {
        Ok(_) => true,
        Err(e) => !is_not_found(&e) && !e.to_string().contains("NoSuchBucket"),
    }
}

/// Whether the store refused the suffix range itself (Azure; a server without suffix ranges;
/// an empty object), rather than the object or the connection.
fn suffix_refused(e: &object_store::Error) -> bool {
    if matches!(e, object_store::Error::NotSupported { .. }) {
        return true;
    }
    let s = e.to_string();
    !is_not_found(e)
        && !is_denied(e)
        && (s.contains("416")
            || s.contains("InvalidRange")
            || s.contains("Range")
            || s.contains("range"))
        && !s.contains("error sending request")
}

fn is_not_found(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::NotFound { .. })
}

fn is_denied(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. }
    )
}

fn not_found(url: &ObjectUrl, e: &object_store::Error) -> SourceError {
    let s = e.to_string();
    if s.contains("NoSuchBucket")
        || s.contains("ContainerNotFound")
        || s.contains("bucket does not exist")
    {
        return SourceError::NoBucket {
            url: url.to_string(),
            bucket: url.bucket().to_string(),
        };
    }
    SourceError::NotFound {
        url: url.to_string(),
    }
}

fn denied(url: &ObjectUrl, e: &object_store::Error) -> SourceError {
    SourceError::AccessDenied {
        url: url.to_string(),
        credentials: credential_sources(url.scheme),
        detail: first_line(&e.to_string()),
    }
}

/// A store error as one of ours.
pub(crate) fn map_error(url: &ObjectUrl, e: object_store::Error) -> SourceError {
    if is_not_found(&e) {
        return not_found(url, &e);
    }
    if is_denied(&e) {
        return denied(url, &e);
    }
    let s = e.to_string();
    // S3 answers 403 for a bad signature or key, which object_store may report generically.
    if s.contains("AccessDenied")
        || s.contains("InvalidAccessKeyId")
        || s.contains("SignatureDoesNotMatch")
        || s.contains("403 Forbidden")
    {
        return denied(url, &e);
    }
    let detail = first_line(&s);
    if s.contains("error sending request") || s.contains("timed out") || s.contains("connect") {
        return SourceError::Store {
            url: url.to_string(),
            detail: format!("cannot reach the store (every retry failed; BAGSCOPE_REMOTE_RETRIES, BAGSCOPE_REMOTE_TIMEOUT_S): {detail}"),
        };
    }
    SourceError::Store {
        url: url.to_string(),
        detail,
    }
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("").trim();
    if l.len() > 400 {
        format!("{}…", &l[..l.floor_char_boundary(400)])
    } else {
        l.to_string()
    }
}
