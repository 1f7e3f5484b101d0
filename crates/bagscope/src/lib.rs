//! bagscope as a library: the timing questions robotics engineers ask of ROS 2 bags (rosbag2
//! folders, split sets, `.mcap`, `.db3`), answered without a ROS install. Each command of the
//! `bagscope` CLI is one function here: open the bag, extract the time series the analysis
//! needs, run the analysis crate, return a `Serialize` report (the CLI's `--json` is that report).
//!
//! Open a bag once with [`Bag::open`] and ask it questions; every method has a twin free function
//! taking a path (`clocks::clocks`, `sync::sync`, ...) for one-off use.
//!
//! # Which clock is each topic stamped on?
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use bagscope::{Axis, Bag};
//!
//! let bag = Bag::open("bags/arm_split")?;
//! let clocks = bag.clocks(&Default::default())?;
//! assert!(clocks.split, "commands on wall time, joint states on sim time");
//! for t in &clocks.topics {
//!     println!("{}: {} (lag p50 {:?} ns)", t.topic, t.axis, t.lag_ns.as_ref().map(|l| l.p50));
//! }
//! assert_eq!(clocks.topics.iter().find(|t| t.topic == "/clock").unwrap().axis, Axis::Sim);
//! # Ok::<(), bagscope::Error>(())
//! ```
//!
//! # What would message_filters' ApproximateTimeSynchronizer have emitted?
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use bagscope::sync::SyncOptions;
//! use bagscope::sync_policy::Policy;
//! use bagscope::Bag;
//!
//! let bag = Bag::open("bags/sensors")?;
//! let topics = vec!["/camera/image_raw".to_string(), "/lidar/points".to_string()];
//! let mut opts = SyncOptions::new(topics, Policy::ApproxPy, 10);
//! opts.slop = Some("50ms".parse()?);
//! let r = bag.sync(&opts)?;
//! let emulated = r.report.as_ref().unwrap();
//! println!("{} sets, match rate {:.2}, drops {:?}", emulated.sets, emulated.match_rate, emulated.drops);
//! assert!(emulated.sets > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How late does the arm follow its commands?
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use bagscope::matching::MatchArgs;
//! use bagscope::Bag;
//!
//! let bag = Bag::open("bags/arm_wall")?; // recorded with a 42 ms delay (arm_wall.truth.json)
//! let r = bag.delay(&MatchArgs {
//!     command: "/arm_cmd".into(),
//!     response: "/joint_states".into(),
//!     ..Default::default()
//! })?;
//! let delay_ms = r.report.delay_ns as f64 / 1e6;
//! assert!((delay_ms - 42.0).abs() < 2.0, "{delay_ms} ms");
//! println!("error RMS {:.4} rad before, {:.4} rad after the shift",
//!     r.report.error_before.rms, r.report.error_after.rms);
//! # Ok::<(), bagscope::Error>(())
//! ```
//!
//! # Every message's times as a polars DataFrame (feature `tables`)
//!
//! ```
//! # #[cfg(feature = "tables")] {
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use bagscope::Bag;
//!
//! let bag = Bag::open("bags/sensors")?;
//! let (df, _report) = bag.timing(&Default::default())?;
//! println!("{df}"); // topic, log_time_ns, publish_time_ns, stamp_ns, lag_ns, ...
//! assert_eq!(df.height(), 400 + 400 + 2000 + 200);
//! # }
//! # Ok::<(), bagscope::Error>(())
//! ```
//!
//! # Crates
//!
//! The analyses live in their own crates, re-exported here: [`clock_analysis`]
//! (`bagscope-clocks`), [`sync_policy`] (`bagscope-sync`), [`match_analysis`]
//! (`bagscope-matching`), [`check_rules`] (`bagscope-checks`), [`tf_analysis`] (`bagscope-tf`);
//! they take `i64` nanosecond series and do no I/O. [`io`] (`bagscope-bag`) reads the files,
//! [`types`] holds the shared vocabulary. The report page is `bagscope-report`; replaying onto
//! a live graph is `bagscope-replay`.
//!
//! # In the workspace
//!
//! One module per command under `commands/` (re-exported at the root: `bagscope::clocks`), each
//! a function over an opened `Bag` (`Bag::open(path)?.clocks(&opts)?`, and path-taking twins:
//! `clocks::clocks`) that extracts what the command needs and calls its engine; each command's options type (`SyncOptions`,
//! `MatchArgs`, `ClocksOptions`, `CheckOptions`, `HistOptions`, `TfOptions`, `EchoOptions`,
//! `InfoOptions`, `ConvertOptions`, `ExportOptions`) owns its defaults (`Default`), its parsing
//! (`FromStr` of the value types in `params.rs`: durations that remember their unit, ranges,
//! per-topic durations, joint limits; serde for keyword arguments, `params::from_json`) and its
//! validation in parameter names (every parameter that does not apply is an
//! `Error::InvalidParameter`); the CLI derives its flags from those types (feature `clap`) and
//! Python fills them through `params::from_json`; typed errors (`error.rs`: `InvalidParameter {
//! name, reason }`, `NoData`, `Input`, `Output`, `Contract`, ...) with one `Error::is_usage`
//! (exit 2, Python's `InvalidParameter`); `CommandReport` for every report (`outcome.rs`); what
//! `report` shows from one open bag (`report.rs`: `report_data`, `Bag::report_data`: info,
//! clocks and check from one scan, synchronizers on sensor pairs, command/response pairs
//! matched, observations, verdicts); observe (the contract's `policy_version` hash, one bag
//! pass in order, `Bag::scan_in_order`, after a first pass of the synchronized topics' stamps,
//! feeding `bagscope-observe`'s streaming builder; observations and rejections written to
//! Parquet through `bagscope-tables` in row groups as they come, rejections per topic and the
//! summarised values spilled to unnamed temporary files in the output folder; `lerobot.rs`:
//! where a LeRobot v3.0 dataset may go, a new or empty folder, and the contract's topics,
//! action and task handed to `bagscope-tables`' LeRobot writer); `check::clocks_and_check_of` (both from one
//! scan); the verdicts' findings (`findings.rs`: warnings grouped by code with the code's
//! severity, worst first, one rule for `clocks`, `check` and `report`; docs/findings.md); loss
//! the recorder logged (`recorder_events.rs`); services recorded through introspection
//! (`services.rs`); time windows (`window.rs`: `+SECONDS` after the start, nanoseconds or RFC
//! 3339; topics through `bagscope-bag`'s `TopicFilter`); `refuse_outputs`: an output that is
//! one of the bag's files or breaks the output rule is refused before anything is read;
//! `batch`'s inputs and fingerprints (`batch_inputs.rs`); re-exports the analysis crates and
//! the vocabulary.
//!
//! Notable dependencies: `bagscope-types`, `-bag`, `-msg`, `-stats`, `-clocks`, `-sync`,
//! `-matching`, `-checks`, `-tf`; `-tables` only with its `tables` feature (`export`, `batch`,
//! `Bag::timing`, and `Bag::timing_columns`: `export.rs` and `timing.rs` hand `bagscope-tables`'
//! one message-table walk and one timing table producer the exported topics, the stamps as
//! `clocks` reads them and the clocks analysis for the axes); `clap` only with its `clap` feature (the CLI's flags); not
//! `-replay`, `-plot`, `-synth`.

pub mod commands;
#[cfg(feature = "tables")]
pub use commands::{batch, export};
pub use commands::{check, clocks, convert, echo, hist, info, matching, observe, report, sync, tf};

pub mod batch_inputs;
pub mod findings;
#[cfg(feature = "tables")]
pub mod lerobot;
pub mod params;
pub mod recorder_events;
pub mod series;
pub mod services;
#[cfg(feature = "tables")]
pub mod timing;
pub mod window;
pub use bagscope_checks as check_rules;
pub use bagscope_clocks as clock_analysis;
pub use bagscope_matching as match_analysis;
pub use bagscope_sync as sync_policy;
#[cfg(feature = "tables")]
pub use bagscope_tables as tables;
pub use bagscope_tf as tf_analysis;
pub use bagscope_types::timefmt;

pub use bagscope_bag as io;
pub use bagscope_bag::{outfile, qos, text, BagError};
pub use bagscope_types as types;
pub use bagscope_types::{Axis, StampSource, Warning, WarningCode};

mod error;
mod handle;
mod outcome;
pub use error::Error;
pub use handle::Bag;
pub use outcome::CommandReport;

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

/// Refuses, before anything is written, output file paths that are one of `bag`'s files by
/// any name (the bag itself, its MCAP / db3 files, `metadata.yaml`; links count) and those
/// that are neither a regular file nor a new path ([`outfile::check_output_file`]: a device,
/// a FIFO, a folder).
pub(crate) fn refuse_outputs(bag: &io::Bag, outputs: &[&std::path::Path]) -> Result<(), Error> {
    if let Some(p) = outfile::input_among(outputs, &bag.input_paths()) {
        return Err(Error::refused_output(
            p,
            format!(
                "{} is part of the input bag: refusing to overwrite it",
                p.display()
            ),
        ));
    }
    outputs.iter().try_for_each(|p| refuse_output_file(p))
}

/// [`outfile::check_output_file`] as this crate's error (exit 1), naming the path.
pub(crate) fn refuse_output_file(p: &std::path::Path) -> Result<(), Error> {
    outfile::check_output_file(p)
        .map_err(|e| Error::refused_output(p, format!("cannot write {}: {e}", p.display())))
}

/// [`outfile::check_output_dir`] as this crate's error (exit 1), naming the folder.
#[cfg_attr(not(feature = "tables"), allow(dead_code))]
pub(crate) fn refuse_output_dir(p: &std::path::Path) -> Result<(), Error> {
    outfile::check_output_dir(p)
        .map_err(|e| Error::refused_output(p, format!("cannot write into {}: {e}", p.display())))
}
