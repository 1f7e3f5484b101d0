//! Clock axes and the one rule that tells an epoch (wall-clock) stamp from a small one.

use serde::{Deserialize, Serialize};

/// Stamps at or after this instant (1e17 ns since the Unix epoch, early 1973) are wall-clock
/// times; smaller non-zero values are simulation time or time since boot. No robot recorded a
/// bag before 1973 and no simulation runs for three years, so the two ranges never meet.
pub const WALL_MIN_NS: i64 = 100_000_000 * 1_000_000_000;

/// Whether one stamp lies on the wall-clock (Unix epoch) range; see [`WALL_MIN_NS`].
#[inline]
pub fn is_wall_ns(ns: i64) -> bool {
    ns >= WALL_MIN_NS
}

/// Whether a series of stamps is on the wall clock: the majority of its non-zero stamps (ties
/// count as wall). `None` when every stamp is zero or the series is empty.
pub fn series_is_wall(stamps: &[i64]) -> Option<bool> {
    let (mut wall, mut small) = (0usize, 0usize);
    for &s in stamps {
        if s == 0 {
            continue;
        }
        if is_wall_ns(s) {
            wall += 1;
        } else {
            small += 1;
        }
    }
    (wall + small > 0).then_some(wall >= small)
}

/// What a topic's (or the recorder's) clock is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Unix-epoch time (the system clock).
    Wall,
    /// Small values advancing with a recorded `/clock` (simulation time).
    Sim,
    /// Every stamp is zero (the producer never set it).
    Zero,
    /// Small values and no `/clock` to relate them to (time since boot, a device clock).
    Relative,
    /// No stamps at all (header-less type).
    None,
    /// Stamps on more than one of the above.
    Mixed,
}

impl Axis {
    /// The name used in JSON and text output.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Wall => "wall",
            Axis::Sim => "sim",
            Axis::Zero => "zero",
            Axis::Relative => "relative",
            Axis::None => "none",
            Axis::Mixed => "mixed",
        }
    }
}

impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a message's `stamp_ns` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StampSource {
    /// `header.stamp` (a top-level `std_msgs/Header header` field).
    HeaderStamp,
    /// A top-level `builtin_interfaces/Time stamp` field.
    TopLevelStamp,
    /// The `clock` field of `rosgraph_msgs/Clock`.
    ClockField,
    /// The type carries no timestamp we know how to find: analyses use the log time.
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifier_boundary() {
        assert!(!is_wall_ns(WALL_MIN_NS - 1));
        assert!(is_wall_ns(WALL_MIN_NS));
        assert!(!is_wall_ns(0));
        assert!(!is_wall_ns(-5));
    }

    #[test]
    fn series_majority_ignores_zeros() {
        let w = 1_700_000_000_000_000_000;
        assert_eq!(series_is_wall(&[]), None);
        assert_eq!(series_is_wall(&[0, 0]), None);
        assert_eq!(series_is_wall(&[0, 0, 5, w, w]), Some(true));
        assert_eq!(series_is_wall(&[5, 6, w]), Some(false));
        assert_eq!(series_is_wall(&[5, w]), Some(true));
    }

    #[test]
    fn names_match_serde() {
        for a in [
            Axis::Wall,
            Axis::Sim,
            Axis::Zero,
            Axis::Relative,
            Axis::None,
            Axis::Mixed,
        ] {
            assert_eq!(
                serde_json::to_value(a).unwrap(),
                serde_json::Value::from(a.name())
            );
        }
    }
}
