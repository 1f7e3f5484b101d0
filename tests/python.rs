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

/// A package folder holding this build's extension and the package's Python modules.
fn package_from_build() -> Option<PathBuf> {
    let so = Path::new(common::bin()).with_file_name("lib_bagscope.so");
    if !so.is_file() {
        return None;
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
    Some(dir)
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
    let pythonpath = package_from_build();
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
