//! Duration parsing with Python/rclpy semantics for bare seconds.

use crate::SyncError;

/// [-2^63, 2^63): the f64 values whose truncation fits an i64.
fn fits_i64(x: f64) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    (-TWO_63..TWO_63).contains(&x)
}

/// `int(seconds * 1e9)` as rclpy's `Duration(seconds=...)` does: f64 product, truncated.
pub fn seconds_to_ns(seconds: f64) -> Result<i64, SyncError> {
    let ns = seconds * 1e9;
    if !fits_i64(ns) {
        return Err(SyncError::InvalidDuration(format!("{seconds}")));
    }
    Ok(ns as i64)
}

/// Parse `"0.05"` (seconds, converted like Python `int(s * 1e9)`) or a number with a unit:
/// `ns`, `us`/`µs`, `ms`, `s`, `min`, e.g. `"50ms"`, `"16667000ns"`, `"1.5s"`.
/// Integer values with a unit are converted exactly; fractional ones via f64 and truncated.
pub fn parse_duration_ns(s: &str) -> Result<i64, SyncError> {
    let err = || SyncError::InvalidDuration(s.to_string());
    let t = s.trim();
    let units: [(&str, i64); 6] = [
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("min", 60_000_000_000),
        ("s", 1_000_000_000),
    ];
    let (num, scale) = match units.iter().find(|(u, _)| t.ends_with(u)) {
        Some((u, k)) => (t[..t.len() - u.len()].trim_end(), Some(*k)),
        None => (t, None),
    };
    if num.is_empty() {
        return Err(err());
    }
    // Only plain decimal notation (with optional exponent): no "inf", "nan", hex, etc.
    if !num
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        || !num.chars().any(|c| c.is_ascii_digit())
    {
        return Err(err());
    }
    match scale {
        None => seconds_to_ns(num.parse::<f64>().map_err(|_| err())?).map_err(|_| err()),
        Some(k) => {
            if let Ok(i) = num.parse::<i64>() {
                return i.checked_mul(k).ok_or_else(err);
            }
            let v = num.parse::<f64>().map_err(|_| err())? * k as f64;
            if !fits_i64(v) {
                return Err(err());
            }
            Ok(v as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_truncation() {
        assert_eq!(parse_duration_ns("0.05").unwrap(), 50_000_000);
        assert_eq!(parse_duration_ns("0.000249").unwrap(), 248_999);
        assert_eq!(parse_duration_ns("0.000129").unwrap(), 128_999);
        assert_eq!(parse_duration_ns("0.016667").unwrap(), 16_667_000);
        assert_eq!(seconds_to_ns(0.03).unwrap(), 30_000_000);
    }

    #[test]
    fn units() {
        assert_eq!(parse_duration_ns("50ms").unwrap(), 50_000_000);
        assert_eq!(parse_duration_ns("16667000ns").unwrap(), 16_667_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("250us").unwrap(), 250_000);
        assert_eq!(parse_duration_ns(" 2 ms ").unwrap(), 2_000_000);
        assert_eq!(parse_duration_ns("1min").unwrap(), 60_000_000_000);
        assert_eq!(parse_duration_ns("-5ms").unwrap(), -5_000_000);
    }

    #[test]
    fn rejects_garbage() {
        for s in [
            "",
            "ms",
            "abc",
            "nan",
            "inf",
            "1e300",
            "99999999999999999999ns",
            "1.2.3",
            "5 parsecs",
        ] {
            assert!(parse_duration_ns(s).is_err(), "{s}");
        }
    }
}
