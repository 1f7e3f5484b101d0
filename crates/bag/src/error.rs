use std::path::PathBuf;

/// Errors that stop a bag from being opened or read at all. Damage that still leaves messages
/// readable is reported as a [`Warning`] instead.
#[derive(Debug, thiserror::Error)]
pub enum BagError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("not an MCAP file (bad magic bytes): {path}")]
    NotMcap { path: PathBuf },
    #[error("file cut off after {len} bytes, inside the MCAP magic at its start: no record to read: {path}")]
    CutInMagic { path: PathBuf, len: usize },
    #[error("empty file: {path}")]
    Empty { path: PathBuf },
    #[error("invalid metadata.yaml ({reason}): {path}")]
    Metadata { path: PathBuf, reason: String },
    #[error("unsupported storage '{storage}' (mcap and sqlite3 are read): {path}")]
    UnsupportedStorage { path: PathBuf, storage: String },
    #[error("cannot read sqlite3 bag file {path}: {reason}")]
    Sqlite { path: PathBuf, reason: String },
    #[error("no bag files found: {path}")]
    NoFiles { path: PathBuf },
    /// `metadata.yaml` names files that are not there, and nothing else could stand in.
    #[error("no listed bag file could be read: {path}\n{detail}")]
    ListedFilesMissing { path: PathBuf, detail: String },
    #[error("not a regular file (a FIFO, device or socket is never opened): {path}")]
    NotRegularFile { path: PathBuf },
    #[error("cannot decompress {path}: {reason}")]
    Decompress { path: PathBuf, reason: String },
    #[error("unknown topic '{topic}' (the bag has: {available}): {path}")]
    UnknownTopic {
        path: PathBuf,
        topic: String,
        available: String,
    },
}

impl BagError {
    /// The same error naming `to` where it named `from` (a temporary file read in place of
    /// the bag's own).
    pub(crate) fn renamed(self, from: &std::path::Path, to: &std::path::Path) -> BagError {
        let mut e = self;
        let p = match &mut e {
            BagError::Io { path, .. }
            | BagError::NotMcap { path }
            | BagError::CutInMagic { path, .. }
            | BagError::Empty { path }
            | BagError::Metadata { path, .. }
            | BagError::UnsupportedStorage { path, .. }
            | BagError::Sqlite { path, .. }
            | BagError::NoFiles { path }
            | BagError::ListedFilesMissing { path, .. }
            | BagError::NotRegularFile { path }
            | BagError::Decompress { path, .. }
            | BagError::UnknownTopic { path, .. } => path,
        };
        if p == from {
            *p = to.to_path_buf();
        }
        e
    }
}

pub type Result<T, E = BagError> = std::result::Result<T, E>;

pub use bagscope_types::{Warning, WarningCode};
