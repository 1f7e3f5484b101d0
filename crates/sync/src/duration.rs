//! Durations with Python/rclpy semantics for bare seconds: `bagscope-types`' parser
//! ([`bagscope_types::duration`]), with this crate's error.

use crate::SyncError;

/// `int(seconds * 1e9)` as rclpy's `Duration(seconds=...)` does: f64 product, truncated.
pub fn seconds_to_ns(seconds: f64) -> Result<i64, SyncError> {
    bagscope_types::duration::seconds_to_ns(seconds).map_err(|e| SyncError::InvalidDuration(e.0))
}

/// [`bagscope_types::duration::parse_duration_ns`]: `"0.05"` (seconds) or a number with a
/// unit (`"50ms"`).
pub fn parse_duration_ns(s: &str) -> Result<i64, SyncError> {
    bagscope_types::duration::parse_duration_ns(s).map_err(|e| SyncError::InvalidDuration(e.0))
}
