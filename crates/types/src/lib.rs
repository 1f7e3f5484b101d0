//! The vocabulary every bagscope crate shares, defined once: [`Warning`] with its
//! [`WarningCode`], where a stamp came from ([`StampSource`]), the clock [`Axis`] with the single
//! wall/sim classifier ([`WALL_MIN_NS`], [`is_wall_ns`], [`series_is_wall`]), and how times are
//! written for people ([`timefmt`]) and read from them ([`duration`]). Serde only: the I/O, analysis and output crates all depend
//! on it, so it depends on nothing of theirs.

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
