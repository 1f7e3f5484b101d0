//! The end-to-end tests' view of `bagscope-testkit` (each file in `tests/` is its own crate
//! and includes this one with `mod common;`): the binary under test and runs of it.
#![allow(dead_code, unused_imports)]

pub(crate) use bagscope_testkit::{
    root, shared_path, tempdir, write_bag, BagWriter, Out, Tmp, TopicMessages,
};

/// The `bagscope` binary under test.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bagscope")
}

/// Runs `bagscope ARGS` ([`bagscope_testkit::run_bin`]: a panic fails the test).
pub(crate) fn out<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Out {
    bagscope_testkit::run_bin(bin(), args)
}

/// [`out`] as (exit code, stdout, stderr); `-1` when killed by a signal.
pub(crate) fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    let o = out(args);
    (o.code, o.stdout, o.stderr)
}
