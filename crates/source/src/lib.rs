//! Where a bag's bytes come from, when they are not a local file: objects in Amazon S3 (and
//! S3-compatible servers), Google Cloud Storage, Azure Blob Storage and plain HTTP(S), read by
//! byte ranges through the `object_store` crate.
//!
//! * [`ObjectUrl`]: `s3://bucket/key`, `gs://…`, `az://container/key` (`azure://`),
//!   `http(s)://host/path`; credentials only from the standard environment variables
//!   (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
//!   `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `GOOGLE_APPLICATION_CREDENTIALS`,
//!   `AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, …), never from the URL, and
//!   never printed: errors name the variables that were set, not their values.
//! * [`RemoteObject`]: opened with one request for its tail (size, version and, for MCAP,
//!   footer and summary at once), pinned to that version (`If-Match` and a check of every
//!   answer's ETag), read by ranges with retries on top of the store client's own.
//! * [`SparseImage`]: the object as one address range that readers slice as they slice a
//!   mapped file, filled where a plan asked ([`SparseImage::ensure`]: coalesced, split,
//!   concurrent ranged GETs) and emptied once read ([`SparseImage::release`]).
//! * [`io_counters`]: requests and bytes so far (progress bars, accounting).
//!
//! Local files do not come through here: `bagscope-bag` maps them.
//!
//! # In the workspace
//!
//! Notable dependencies: `object_store` (S3, GCS, Azure, HTTP; ring TLS), `tokio` (two I/O
//! threads), `futures`, `url`, `libc` (`mmap` with `MAP_NORESERVE`).

mod error;
mod image;
mod location;
mod object;
mod stats;
mod store;

pub use error::SourceError;
pub use image::{SparseImage, COALESCE_GAP_BYTES, MAX_REQUEST_BYTES};
pub use location::{is_remote, redact, ObjectUrl, Scheme};
pub use object::{bucket_exists, list, Listed, RemoteObject};
pub use stats::{add_planned, io_counters, IoCounters};

/// The bytes a read returns (shared, cheap to clone).
pub type TailBytes = bytes::Bytes;

/// The most bytes fetched whole into a temporary file (a `.db3`, a rosbag2 file-compressed
/// file, an MCAP file without summary): env `BAGSCOPE_MAX_DOWNLOAD_BYTES`, default 16 GiB.
pub fn max_download_bytes() -> u64 {
    store::env_u64("BAGSCOPE_MAX_DOWNLOAD_BYTES").unwrap_or(16 << 30)
}
