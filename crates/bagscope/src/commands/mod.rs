//! One module per command: each opens or borrows the [`crate::Bag`], extracts what the command
//! needs (the time series, the messages of a topic, a window) and calls the engine that
//! answers it, in the analysis and output crates. The crate root re-exports each module under
//! the command's name (`bagscope::info`, `bagscope::sync`, ...).

#[cfg(feature = "tables")]
pub mod batch;
pub mod check;
pub mod clocks;
pub mod convert;
pub mod echo;
#[cfg(feature = "tables")]
pub mod export;
pub mod hist;
pub mod info;
pub mod matching;
pub mod observe;
pub mod report;
pub mod sync;
pub mod tf;
