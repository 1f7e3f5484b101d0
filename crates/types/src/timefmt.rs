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

/// An RFC 3339 time (`2025-11-30T00:00:09.5Z`, `2025-11-30T01:00:09+01:00`; `T` or a space
/// between date and time, up to nine fraction digits) as nanoseconds since the Unix epoch. The
/// inverse of [`human_ns`] for wall-clock values. `None` when `s` is not such a time.
pub fn parse_rfc3339_ns(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(d).ok()?.parse().ok()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ns = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        if end == start || end - start > 9 {
            return None;
        }
        frac_ns = num(start..end)? * 10i64.pow(9 - (end - start) as u32);
        i = end;
    }
    let offset_s = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        c @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let o = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if *c == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    if civil_from_days(days) != (y, mo as u32, d as u32) {
        return None; // 2025-02-30
    }
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// A proleptic Gregorian date to days since 1970-01-01 (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    fn rfc3339_is_the_inverse_of_human_ns() {
        for ns in [
            1_764_460_800_000_000_000,
            1_764_460_809_500_000_000,
            951_782_400_000_000_001,
            4_102_444_799_999_999_999,
        ] {
            assert_eq!(
                parse_rfc3339_ns(&human_ns(ns)),
                Some(ns),
                "{}",
                human_ns(ns)
            );
        }
        assert_eq!(
            parse_rfc3339_ns("2025-11-30T01:00:09.5+01:00"),
            Some(1_764_460_809_500_000_000)
        );
        assert_eq!(
            parse_rfc3339_ns("2025-11-30 00:00:09Z"),
            Some(1_764_460_809_000_000_000)
        );
        for bad in [
            "",
            "2025-11-30",
            "2025-11-30T00:00:09",
            "2025-02-30T00:00:00Z",
            "2025-11-30T24:00:00Z",
            "2025-11-30T00:00:09.1234567890Z",
            "2025-11-30T00:00:09+0100",
            "9.5",
        ] {
            assert_eq!(parse_rfc3339_ns(bad), None, "{bad}");
        }
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
