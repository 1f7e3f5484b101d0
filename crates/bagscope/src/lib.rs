//! The library behind the `bagscope` command: each public function opens a bag, extracts the
//! time series an analysis needs, runs the analysis crate and returns a `Serialize` report.
//! The CLI only parses arguments and renders these reports.

#[cfg(feature = "frames")]
pub mod batch;
pub mod batch_inputs;
pub mod check;
pub mod clocks;
pub mod convert;
#[cfg(feature = "frames")]
pub mod export;
pub mod findings;
pub mod hist;
pub mod info;
pub mod matching;
pub mod recorder_events;
pub mod series;
pub mod sync;
pub mod tf;
pub use bagscope_checks as check_rules;
pub use bagscope_clocks as clock_analysis;
#[cfg(feature = "frames")]
pub use bagscope_frames as frames;
pub use bagscope_matching as match_analysis;
pub use bagscope_sync as sync_policy;
pub use bagscope_tf as tf_analysis;
pub use bagscope_types::timefmt;

pub use bagscope_bag::{outfile, text, Bag, BagError, Warning};

/// A bag's display name: a `.mcap` file's stem, a folder's name (`bag` when there is none).
pub fn bag_name(path: &std::path::Path) -> String {
    let p = if path.extension().is_some_and(|e| e == "mcap") {
        path.file_stem()
    } else {
        path.file_name()
    };
    p.map(|s| s.to_string_lossy().to_string())
        .filter(|s| !s.is_empty() && s != "." && s != "..")
        .unwrap_or_else(|| "bag".into())
}

/// Refuses output paths that are one of `bag`'s files by any name (the bag itself, its
/// MCAP / db3 files, `metadata.yaml`; links count), before anything is written.
pub(crate) fn refuse_bag_files(bag: &Bag, outputs: &[&std::path::Path]) -> Result<(), Error> {
    match outfile::input_among(outputs, &bag.input_paths()) {
        Some(p) => Err(Error::Usage(format!(
            "{} is part of the input bag: refusing to overwrite it",
            p.display()
        ))),
        None => Ok(()),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Bag(#[from] BagError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Analysis(String),
    /// Writing a table (Parquet / CSV) failed.
    #[cfg(feature = "frames")]
    #[error(transparent)]
    Frames(#[from] bagscope_frames::FramesError),
}
