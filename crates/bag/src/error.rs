//! Errors that stop a bag from being read, and the warnings for damage that does not.

use std::path::PathBuf;

/// Errors that stop a bag from being opened or read at all. Damage that still leaves messages
/// readable is reported as a [`Warning`] instead.
#[derive(Debug, thiserror::Error)]
pub enum BagError {
    /// A file could not be opened, mapped or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with the MCAP magic bytes.
    #[error("not an MCAP file (bad magic bytes): {path}")]
    NotMcap {
        /// The file.
        path: PathBuf,
    },
    /// The file ends inside the 8-byte magic at its start.
    #[error("file cut off after {len} bytes, inside the MCAP magic at its start: no record to read: {path}")]
    CutInMagic {
        /// The file.
        path: PathBuf,
        /// Its length, bytes.
        len: usize,
    },
    /// The file is 0 bytes long.
    #[error("empty file: {path}")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// `metadata.yaml` could not be parsed.
    #[error("invalid metadata.yaml ({reason}): {path}")]
    Metadata {
        /// The `metadata.yaml` file.
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// `metadata.yaml` names a storage plugin other than `mcap` and `sqlite3`.
    #[error("unsupported storage '{storage}' (mcap and sqlite3 are read): {path}")]
    UnsupportedStorage {
        /// The bag folder's `metadata.yaml`.
        path: PathBuf,
        /// The `storage_identifier` it names.
        storage: String,
    },
    /// A `.db3` file could not be opened or queried.
    #[error("cannot read sqlite3 bag file {path}: {reason}")]
    Sqlite {
        /// The `.db3` file.
        path: PathBuf,
        /// SQLite's message.
        reason: String,
    },
    /// The path is a folder with no `.mcap`, `.db3` or `metadata.yaml` in it.
    #[error("no bag files found: {path}{}", bags_hint(path, bags_inside))]
    NoFiles {
        /// The folder.
        path: PathBuf,
        /// Folders directly inside it that are bags (sorted names): the user probably meant one
        /// of them, or `batch` over all.
        bags_inside: Vec<String>,
    },
    /// `metadata.yaml` names files that are not there, and nothing else could stand in.
    #[error("no listed bag file could be read: {path}\n{detail}")]
    ListedFilesMissing {
        /// The bag folder.
        path: PathBuf,
        /// Which listed files are missing, which others the folder holds, and how to fix it.
        detail: String,
    },
    /// The path is a FIFO, device or socket, which is never opened (reading could block or
    /// consume data).
    #[error("not a regular file (a FIFO, device or socket is never opened): {path}")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// Reading an object in object storage failed (missing, access denied, replaced while
    /// read, ...): the message names the URL.
    #[error(transparent)]
    Remote(#[from] bagscope_source::SourceError),
    /// A compressed bag file (rosbag2 file compression) could not be decompressed.
    #[error("cannot decompress {path}: {reason}")]
    Decompress {
        /// The compressed file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A topic pattern (`--regex`, `--exclude-regex`) is not a valid regular expression.
    #[error("{flag} {pattern:?} is not a valid pattern: {reason}")]
    InvalidPattern {
        /// The option that gave it.
        flag: String,
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A topic asked for by name is not in the bag.
    #[error("unknown topic '{topic}' (the bag has: {available}): {path}")]
    UnknownTopic {
        /// The bag.
        path: PathBuf,
        /// The name asked for.
        topic: String,
        /// The bag's topic names, sorted, comma-separated.
        available: String,
    },
}

impl BagError {
    /// The same error naming `to` where it named `from` (a temporary file read in place of
    /// the bag's own).
    pub(crate) fn renamed(self, from: &std::path::Path, to: &std::path::Path) -> BagError {
        let mut e = self;
        let p = match &mut e {
            BagError::InvalidPattern { .. } | BagError::Remote(_) => return e,
            BagError::Io { path, .. }
            | BagError::NotMcap { path }
            | BagError::CutInMagic { path, .. }
            | BagError::Empty { path }
            | BagError::Metadata { path, .. }
            | BagError::UnsupportedStorage { path, .. }
            | BagError::Sqlite { path, .. }
            | BagError::NoFiles { path, .. }
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

/// A result whose error is [`BagError`] by default.
pub type Result<T, E = BagError> = std::result::Result<T, E>;

pub use bagscope_types::{Warning, WarningCode};

/// "; it holds 3 bags (a, b, c): give one, or run `bagscope batch DIR` over all of them".
fn bags_hint(path: &std::path::Path, bags: &[String]) -> String {
    if bags.is_empty() {
        return String::new();
    }
    const SHOWN: usize = 5;
    let mut names = bags[..bags.len().min(SHOWN)].join(", ");
    if bags.len() > SHOWN {
        names.push_str(", ...");
    }
    format!(
        "; it holds {} bag(s) ({names}): give one of them, or run `bagscope batch {}` over all",
        bags.len(),
        path.display()
    )
}
