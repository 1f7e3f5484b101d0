//! The Python package (`crates/python`): its pytest suite (`crates/python/tests`) run against
//! this build's extension, with this build's `bagscope` binary as the CLI the dicts and tables
//! are compared with.
//!
//! The extension is the workspace build's own `lib_bagscope.so` (beside the binary: `cargo
//! test --workspace` builds it with the test build's dependencies, nothing compiled twice),
//! put with `crates/python/python/bagscope/*.py` into a package folder under `target/tmp`;
//! without that library, the `bagscope` the Python has installed (`maturin develop`). The
//! Python is `target/py-venv` (`.ci/run` makes it) or `BAGSCOPE_PYTHON`; without one that
//! imports the test packages the test says it skipped, and under `CI` it fails instead.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn imports(py: &Path, what: &str, pythonpath: Option<&Path>) -> bool {
    let mut c = Command::new(py);
    c.args(["-c", &format!("import {what}")]);
    if let Some(p) = pythonpath {
        c.env("PYTHONPATH", p);
    }
    c.output().is_ok_and(|o| o.status.success())
}

fn skip(why: String) {
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but {why}");
    }
    eprintln!("note: {why}; skipping the Python package's tests");
}

/// A source file of a crate the extension is built from that was changed after `so` was
/// built (a library left by an earlier build would test other code than this tree's).
fn source_newer_than(so: &Path) -> Option<PathBuf> {
    fn newest(dir: &Path, best: &mut Option<(std::time::SystemTime, PathBuf)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                newest(&p, best);
            } else if p.extension().is_some_and(|x| x == "rs") {
                if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
                    if best.as_ref().is_none_or(|(b, _)| t > *b) {
                        *best = Some((t, p));
                    }
                }
            }
        }
    }
    let built = std::fs::metadata(so).and_then(|m| m.modified()).ok()?;
    let mut best = None;
    // The extension and everything under it; not the apps and outputs beside it.
    let skip = ["cli", "report", "replay", "synth", "testkit", "plot"];
    for e in std::fs::read_dir(common::root().join("crates"))
        .ok()?
        .flatten()
    {
        if !skip.iter().any(|s| e.file_name() == *s) {
            newest(&e.path().join("src"), &mut best);
        }
    }
    best.filter(|(t, _)| *t > built).map(|(_, p)| p)
}

/// A package folder holding this build's extension and the package's Python modules.
/// Err: the library there is older than the sources it is built from.
fn package_from_build() -> Result<Option<PathBuf>, String> {
    let so = Path::new(common::bin()).with_file_name("lib_bagscope.so");
    if !so.is_file() {
        return Ok(None);
    }
    if let Some(newer) = source_newer_than(&so) {
        return Err(format!(
            "{} is older than {} (`cargo test` does not rebuild the extension: run `cargo build \
             --workspace --all-targets` first, as .ci/run does)",
            so.display(),
            newer.display()
        ));
    }
    let dir = common::root().join("target/tmp/python-package");
    let pkg = dir.join("bagscope");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&pkg).expect("create the package folder");
    let src = common::root().join("crates/python/python/bagscope");
    for e in std::fs::read_dir(&src).expect("read crates/python/python/bagscope") {
        let p = e.expect("list the package").path();
        // The sources only: not an extension `maturin develop` left there, nor caches.
        let source = p.is_file()
            && p.extension()
                .is_some_and(|x| x == "py" || x == "pyi" || x == "typed");
        if let (true, Some(name)) = (source, p.file_name()) {
            std::fs::copy(&p, pkg.join(name)).expect("copy a module");
        }
    }
    std::fs::copy(&so, pkg.join("_bagscope.abi3.so")).expect("copy the extension");
    Ok(Some(dir))
}

#[test]
fn python_package_tests_pass() {
    let py = std::env::var_os("BAGSCOPE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target/py-venv/bin/python"));
    if !imports(&py, "pytest, pyarrow, polars, duckdb", None) {
        return skip(format!(
            "{} cannot import the test packages (make the venv as .ci/run does, or set \
             BAGSCOPE_PYTHON)",
            py.display()
        ));
    }
    let pythonpath = match package_from_build() {
        Ok(p) => p,
        Err(why) => return skip(why),
    };
    if !imports(&py, "bagscope", pythonpath.as_deref()) {
        return skip(format!(
            "no lib_bagscope.so beside {} and no bagscope installed in {}",
            common::bin(),
            py.display()
        ));
    }
    let tests = common::root().join("crates/python/tests");
    let mut c = Command::new(&py);
    c.args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"])
        .arg(&tests)
        .current_dir(&tests)
        .env("BAGSCOPE_BIN", common::bin());
    if let Some(p) = &pythonpath {
        c.env("PYTHONPATH", p);
    }
    let out = c.output().expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "pytest failed (output above)");
    assert!(
        stdout.contains(" passed"),
        "pytest ran no test (output above)"
    );
}
