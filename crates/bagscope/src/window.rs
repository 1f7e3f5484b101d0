//! What the commands that cut a bag (`echo`, `convert`) keep: topics by name or pattern, and a
//! time window. One syntax, one rule.

use bagscope_bag::Bag;
pub use bagscope_bag::TopicFilter;

/// A bag's first log time (any topic): from the summary or the message indexes where they
/// answer, else from every message's log time. 0 for an empty bag.
pub(crate) fn bag_start_ns(bag: &Bag) -> i64 {
    let all = bag.all_topics();
    let first = match bag.topic_spans(&all) {
        Some(spans) => spans.iter().filter_map(|s| s.first_log_time_ns).min(),
        None => bag
            .topic_log_times(&all)
            .0
            .iter()
            .filter_map(|t| t.iter().min().copied())
            .min(),
    };
    first.unwrap_or(0)
}

/// `[start, end)` in log time: `None` ends are open. The bag's start is read only when a bound
/// is relative to it.
pub(crate) fn log_window(
    bag: &Bag,
    start: Option<TimeBound>,
    end: Option<TimeBound>,
) -> (i64, i64) {
    let relative = [start, end]
        .iter()
        .flatten()
        .any(|b| matches!(b, TimeBound::FromStart(_)));
    let origin = if relative { bag_start_ns(bag) } else { 0 };
    (
        start.map_or(i64::MIN, |b| b.resolve(origin)),
        end.map_or(i64::MAX, |b| b.resolve(origin)),
    )
}

/// One end of a time window: a time from the bag's first message, or an absolute time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// Nanoseconds after the bag's first message (log time).
    FromStart(i64),
    /// A log time, nanoseconds since the Unix epoch.
    At(i64),
}

impl TimeBound {
    /// `+2.5` or `+1500ms`: that long after the bag's first message (seconds, or a duration with
    /// its unit). `1764460805500000000`: an absolute log time in nanoseconds.
    /// `2025-11-30T00:00:05.5Z` (RFC 3339): an absolute time.
    pub fn parse(s: &str) -> Result<TimeBound, String> {
        let t = s.trim();
        let bad = || {
            format!(
                "{s:?} is not a time: give +SECONDS or +DURATION after the bag's start (+2.5, \
                 +1500ms), nanoseconds since the epoch, or an RFC 3339 time \
                 (2025-11-30T00:00:05.5Z)"
            )
        };
        if let Some(rest) = t.strip_prefix('+') {
            let ns = bagscope_types::duration::parse_duration_ns(rest).map_err(|_| bad())?;
            return if ns >= 0 {
                Ok(TimeBound::FromStart(ns))
            } else {
                Err(bad())
            };
        }
        if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
            return t.parse().map(TimeBound::At).map_err(|_| bad());
        }
        bagscope_types::timefmt::parse_rfc3339_ns(t)
            .map(TimeBound::At)
            .ok_or_else(bad)
    }

    /// The log time this bound stands for in a bag whose first message was logged at
    /// `bag_start_ns`.
    pub fn resolve(self, bag_start_ns: i64) -> i64 {
        match self {
            TimeBound::FromStart(d) => bag_start_ns.saturating_add(d),
            TimeBound::At(t) => t,
        }
    }
}

impl std::str::FromStr for TimeBound {
    type Err = String;

    /// [`TimeBound::parse`].
    fn from_str(s: &str) -> Result<TimeBound, String> {
        TimeBound::parse(s)
    }
}

/// Its text, as [`TimeBound::parse`] reads it.
impl<'de> serde::Deserialize<'de> for TimeBound {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TimeBound, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms() {
        assert_eq!(
            TimeBound::parse("+2.5").unwrap(),
            TimeBound::FromStart(2_500_000_000)
        );
        assert_eq!(
            TimeBound::parse("+1500ms").unwrap(),
            TimeBound::FromStart(1_500_000_000)
        );
        assert_eq!(
            TimeBound::parse("1764460805500000000").unwrap(),
            TimeBound::At(1_764_460_805_500_000_000)
        );
        assert_eq!(
            TimeBound::parse("2025-11-30T00:00:05.5Z").unwrap(),
            TimeBound::At(1_764_460_805_500_000_000)
        );
        for bad in ["", "2.5", "soon", "+-1", "-5", "+"] {
            assert!(TimeBound::parse(bad).is_err(), "{bad}");
        }
    }
}
