//! Nanosecond times for humans: UTC ISO-8601 for epoch times, seconds for small (sim) times,
//! durations with their unit. Every text output formats times through these functions.

/// `2025-11-30T00:00:09.500000000Z` for wall-clock values, `9.500000000 s` for values before
/// 1973 (sim time, time since boot), which are not dates.
pub fn human_ns(ns: i64) -> String {
    if !crate::is_wall_ns(ns) {
        return format!("{:.9} s", ns as f64 / 1e9);
    }
    let secs = ns.div_euclid(1_000_000_000);
    let sub = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{sub:09}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Seconds with millisecond precision, for tables: `1.500`.
pub fn secs(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

/// Seconds with millisecond precision and the unit, for sentences: `1.500 s`.
pub fn secs_unit(ns: i64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// Milliseconds to a tenth, with the unit, for sentences: `12.3 ms`.
pub fn ms_unit(ns: i64) -> String {
    ms_unit_f(ns as f64)
}

/// [`ms_unit`] of a non-integer nanosecond value (a mean, a fitted offset).
pub fn ms_unit_f(ns: f64) -> String {
    format!("{:.1} ms", ns / 1e6)
}

/// A duration with the unit that fits it: `17 ns`, `3.2 µs`, `1.500 ms`, `2.000 s`.
pub fn short_ns(ns: i64) -> String {
    let a = ns.unsigned_abs();
    if a < 1_000 {
        format!("{ns} ns")
    } else if a < 1_000_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else if a < 1_000_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} s", ns as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(
            human_ns(1_764_460_800_000_000_000),
            "2025-11-30T00:00:00.000000000Z"
        );
        assert_eq!(
            human_ns(951_782_400_500_000_000),
            "2000-02-29T00:00:00.500000000Z"
        );
        assert_eq!(human_ns(9_500_000_000), "9.500000000 s");
    }

    #[test]
    fn units() {
        assert_eq!(secs(1_500_000_000), "1.500");
        assert_eq!(secs_unit(-1_500_000_000), "-1.500 s");
        assert_eq!(ms_unit(12_340_000), "12.3 ms");
        assert_eq!(ms_unit_f(12_360_000.0), "12.4 ms");
        assert_eq!(short_ns(17), "17 ns");
        assert_eq!(short_ns(3_200), "3.2 µs");
        assert_eq!(short_ns(1_500_000), "1.500 ms");
        assert_eq!(short_ns(2_000_000_000), "2.000 s");
    }
}
