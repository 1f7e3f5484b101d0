//! Helpers shared by the end-to-end tests (each file in `tests/` is its own crate and includes
//! this one with `mod common;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The `bagscope` binary under test.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bagscope")
}

/// Runs `bagscope ARGS` and returns (exit code, stdout, stderr); `-1` when killed by a signal.
/// A panic is never an acceptable outcome, whatever the input: it fails the test here.
pub(crate) fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    let out = std::process::Command::new(bin())
        .args(args)
        .output()
        .expect("run bagscope");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert!(
        !stderr.contains("panicked"),
        "bagscope {shown:?} panicked: {stderr}"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/<rel>` when `<marker>` exists inside it. A user's clone has no `../shared`:
/// then `None`, with a note, so the tests that need it skip; under `CI` a panic instead.
pub(crate) fn shared_path(rel: &str, marker: &str) -> Option<PathBuf> {
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

/// A fresh temp folder (`bagscope-<tag>-XXXXXX` in the temp dir), removed when dropped, so a
/// test run leaves nothing behind (CI's disk is small).
pub(crate) struct Tmp(tempfile::TempDir);

impl Tmp {
    /// Keeps the folder after the test (for looking at what it wrote).
    pub(crate) fn keep(self) -> PathBuf {
        self.0.keep()
    }
}

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Tmp {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

pub(crate) fn tempdir(tag: &str) -> Tmp {
    Tmp(tempfile::Builder::new()
        .prefix(&format!("bagscope-{tag}-"))
        .tempdir()
        .expect("a temp folder"))
}
