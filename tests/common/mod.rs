//! Helpers shared by the end-to-end tests (each file in `tests/` is its own crate and includes
//! this one with `mod common;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The `bagscope` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bagscope")
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/<rel>` when `<marker>` exists inside it. A user's clone has no `../shared`:
/// then `None`, with a note, so the tests that need it skip; under `CI` a panic instead.
pub fn shared_path(rel: &str, marker: &str) -> Option<PathBuf> {
    let p = root().join("../shared").join(rel);
    let m = p.join(marker);
    if m.exists() {
        return Some(p);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but {} is missing", m.display());
    }
    eprintln!(
        "note: {} not found; skipping the tests that need it",
        m.display()
    );
    None
}
