//! The Python package (`crates/python`): its pytest suite (`crates/python/tests`) run against
//! the build installed in the test venv, with this build's `bagscope` binary as the CLI the
//! dicts and tables are compared with.
//!
//! `.ci/run` makes the venv (`target/py-venv`, pinned packages) and installs the extension
//! into it (`maturin develop`) before `cargo test`; elsewhere `BAGSCOPE_PYTHON` names another
//! Python with `bagscope` and the test packages installed. Without one the test says it
//! skipped; under `CI` it fails instead.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn python() -> Option<PathBuf> {
    let py = std::env::var_os("BAGSCOPE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target/py-venv/bin/python"));
    let ok = Command::new(&py)
        .args(["-c", "import bagscope, pytest, pyarrow, polars, duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    let why = format!(
        "{} cannot import bagscope and the test packages (make it as .ci/run does, or set \
         BAGSCOPE_PYTHON)",
        py.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but {why}");
    }
    eprintln!("note: {why}; skipping the Python package's tests");
    None
}

#[test]
fn python_package_tests_pass() {
    let Some(py) = python() else { return };
    let tests = common::root().join("crates/python/tests");
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"])
        .arg(&tests)
        .current_dir(&tests)
        .env("BAGSCOPE_BIN", common::bin())
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "pytest failed (output above)");
    assert!(
        stdout.contains(" passed"),
        "pytest ran no test (output above)"
    );
}
