//! The vocabulary every bagscope crate shares, defined once: [`Warning`] with its
//! [`WarningCode`], where a stamp came from ([`StampSource`]), the clock [`Axis`] with the single
//! wall/sim classifier ([`WALL_MIN_NS`], [`is_wall_ns`], [`series_is_wall`]), and how times are
//! written for people ([`timefmt`]) and read from them ([`duration`]). Serde only: the I/O, analysis and output crates all depend
//! on it, so it depends on nothing of theirs.
//!
//! # In the workspace
//!
//! `Warning` and the `WarningCode` enum (every code bagscope emits, ordered and serialised by
//! name; `WarningCode::is_data_loss`: the codes that are always lost or suspect data, flagged
//! by `Warning::new` itself, so every command exits 3 on them), `StampSource`, the clock
//! `Axis`, the one wall/sim stamp classifier (`WALL_MIN_NS`, `is_wall_ns`, `series_is_wall`),
//! time formatting (`timefmt`: ISO-8601 for epoch times, seconds for sim times, durations with
//! units) and the one duration parser (`duration`: seconds or a number with a unit; a
//! `Duration` remembers whether a unit was given); each code's `severity()` and
//! `reading_order()` as exhaustive matches; `CommandReport` (`warnings()`, `data_loss()`,
//! `finished_with_warnings()`): what every command's report tells its caller, the CLI's exit 3.
//!
//! Notable dependencies: `serde` only.

#![forbid(unsafe_code)]

mod axis;
pub mod duration;
mod outcome;
mod severity;
pub mod timefmt;
mod warning;

pub use axis::{is_wall_ns, series_is_wall, Axis, StampSource, WALL_MIN_NS};
pub use outcome::CommandReport;
pub use severity::Severity;
pub use warning::{UnknownWarningCode, Warning, WarningCode};
