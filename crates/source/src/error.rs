//! What can go wrong reading an object, named by URL (never with a credential).

/// An error reading a remote bag. Every variant names the URL; none holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The URL cannot name an object.
    #[error("{url}: not a usable object URL: {reason}")]
    InvalidUrl {
        /// The URL as given, with user info and query removed.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No object (and no prefix) by that name.
    #[error("{url}: no such object or prefix")]
    NotFound {
        /// The object's URL.
        url: String,
    },
    /// The bucket or container does not exist.
    #[error("{url}: bucket or container '{bucket}' does not exist")]
    NoBucket {
        /// The object's URL.
        url: String,
        /// The bucket or container name.
        bucket: String,
    },
    /// The store refused the credentials (or there were none).
    #[error("{url}: access denied (credentials: {credentials}): {detail}")]
    AccessDenied {
        /// The object's URL.
        url: String,
        /// Which credential source was tried (names of variables, never values).
        credentials: String,
        /// The store's answer.
        detail: String,
    },
    /// The object changed between opening and a later read: its bytes would mix two versions.
    #[error("{url}: the object was replaced while it was read (version {pinned} when opened): nothing of the new version was used; run again")]
    Replaced {
        /// The object's URL.
        url: String,
        /// The ETag or version pinned when it was opened.
        pinned: String,
    },
    /// The server answered a range request with the whole object, or not at all.
    #[error("{url}: the server does not answer byte-range requests ({detail})")]
    NoRanges {
        /// The object's URL.
        url: String,
        /// What it answered.
        detail: String,
    },
    /// A read kept failing after its retries.
    #[error("{url}: reading bytes {start}..{end} failed after {attempts} attempt(s): {detail}")]
    Read {
        /// The object's URL.
        url: String,
        /// First byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// How many times it was tried.
        attempts: u32,
        /// The last failure.
        detail: String,
    },
    /// An object too large to fetch whole (a `.db3`, a compressed file, a file without
    /// summary), under the download limit.
    #[error("{url}: {size} bytes must be fetched whole ({why}), over the limit of {limit} bytes (env BAGSCOPE_MAX_DOWNLOAD_BYTES)")]
    TooLarge {
        /// The object's URL.
        url: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
        /// Why it needs a whole fetch.
        why: String,
    },
    /// Any other failure of the store (listing, configuration, ...).
    #[error("{url}: {detail}")]
    Store {
        /// The object's URL.
        url: String,
        /// What the store said.
        detail: String,
    },
    /// A local file (a temporary copy) could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl SourceError {
    /// The URL the error is about, when it is about one.
    pub fn url(&self) -> Option<&str> {
        match self {
            SourceError::InvalidUrl { url, .. }
            | SourceError::NotFound { url }
            | SourceError::NoBucket { url, .. }
            | SourceError::AccessDenied { url, .. }
            | SourceError::Replaced { url, .. }
            | SourceError::NoRanges { url, .. }
            | SourceError::Read { url, .. }
            | SourceError::TooLarge { url, .. }
            | SourceError::Store { url, .. } => Some(url),
            SourceError::Io { .. } => None,
        }
    }
}
