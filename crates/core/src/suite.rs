//! `bagscope synth --suite DIR`: the synthetic fault suite (one small bag per case, each with a
//! manifest of the decisions its construction implies).

use std::path::Path;

pub use bagscope_synth::suite::{CaseSummary, Manifest, SyncCheck, TfCheck};

use crate::Error;

/// Writes every case of the suite into `dir` and returns what was written, in case order.
pub fn write_suite(dir: &Path) -> Result<Vec<CaseSummary>, Error> {
    bagscope_synth::suite::write_suite(dir).map_err(|e| Error::Analysis(e.to_string()))
}
