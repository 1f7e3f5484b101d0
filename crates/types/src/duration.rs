//! Durations as people write them: seconds (`0.05`, converted as Python's `int(s * 1e9)`) or a
//! number with a unit (`50ms`, `1.5s`). One parser for the CLI, the Python package and the
//! contract files; [`Duration`] remembers whether a unit was given, so a bare number that is
//! probably not meant in seconds can be warned about wherever it came from.

use std::fmt;
use std::str::FromStr;

/// A text [`parse_duration_ns`] cannot read (the text, as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidDuration(pub String);

impl fmt::Display for InvalidDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid duration '{}'", self.0)
    }
}

impl std::error::Error for InvalidDuration {}

/// [-2^63, 2^63): the f64 values whose truncation fits an i64.
fn fits_i64(x: f64) -> bool {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    (-TWO_63..TWO_63).contains(&x)
}

/// `int(seconds * 1e9)` as rclpy's `Duration(seconds=...)` does: f64 product, truncated.
pub fn seconds_to_ns(seconds: f64) -> Result<i64, InvalidDuration> {
    let ns = seconds * 1e9;
    if !fits_i64(ns) {
        return Err(InvalidDuration(format!("{seconds}")));
    }
    Ok(ns as i64)
}

/// The units a duration may carry, longest match first where one ends another (`ms`, `s`).
const UNITS: [(&str, i64); 6] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("min", 60_000_000_000),
    ("s", 1_000_000_000),
];

/// Parse `"0.05"` (seconds, converted like Python `int(s * 1e9)`) or a number with a unit:
/// `ns`, `us`/`µs`, `ms`, `s`, `min`, e.g. `"50ms"`, `"16667000ns"`, `"1.5s"`.
/// Integer values with a unit are converted exactly; fractional ones via f64 and truncated.
pub fn parse_duration_ns(s: &str) -> Result<i64, InvalidDuration> {
    Duration::from_str(s).map(Duration::ns)
}

/// A duration and whether it was written with a unit. Equal when the nanoseconds are equal.
#[derive(Debug, Clone, Copy)]
pub struct Duration {
    ns: i64,
    unit_given: bool,
}

impl Duration {
    /// `ns` nanoseconds, as if written with a unit (a default, a value computed in code).
    pub const fn from_ns(ns: i64) -> Duration {
        Duration {
            ns,
            unit_given: true,
        }
    }

    /// The duration in nanoseconds.
    pub const fn ns(self) -> i64 {
        self.ns
    }

    /// Whether the text carried a unit (`50ms`); false for bare seconds (`0.05`, `30`).
    pub const fn unit_given(self) -> bool {
        self.unit_given
    }

    /// A number of seconds as Python writes it (`str(x)`), read as the text would be.
    pub fn from_seconds(x: f64) -> Result<Duration, InvalidDuration> {
        Ok(Duration {
            ns: seconds_to_ns(x)?,
            unit_given: false,
        })
    }
}

impl PartialEq for Duration {
    fn eq(&self, other: &Duration) -> bool {
        self.ns == other.ns
    }
}

impl Eq for Duration {}

impl FromStr for Duration {
    type Err = InvalidDuration;

    fn from_str(s: &str) -> Result<Duration, InvalidDuration> {
        let err = || InvalidDuration(s.to_string());
        let t = s.trim();
        let (num, scale) = match UNITS.iter().find(|(u, _)| t.ends_with(u)) {
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
        let ns = match scale {
            None => seconds_to_ns(num.parse::<f64>().map_err(|_| err())?).map_err(|_| err())?,
            Some(k) => match num.parse::<i64>() {
                Ok(i) => i.checked_mul(k).ok_or_else(err)?,
                Err(_) => {
                    let v = num.parse::<f64>().map_err(|_| err())? * k as f64;
                    if !fits_i64(v) {
                        return Err(err());
                    }
                    v as i64
                }
            },
        };
        Ok(Duration {
            ns,
            unit_given: scale.is_some(),
        })
    }
}

/// The shortest text that reads back as the same duration: `500ms`, `10s`, `1500us`, `7ns`.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.ns;
        for (unit, k) in [
            ("min", 60_000_000_000),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
        ] {
            if ns != 0 && ns % k == 0 {
                return write!(f, "{}{unit}", ns / k);
            }
        }
        write!(f, "{ns}ns")
    }
}

/// Text (`"50ms"`, `"0.05"`) or a number of seconds (`0.05`, read as its shortest decimal
/// text, as Python's `str()` writes it).
impl<'de> serde::Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration: seconds (0.05) or a string with a unit (\"50ms\")")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Duration, E> {
                s.parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, x: i64) -> Result<Duration, E> {
                self.visit_str(&x.to_string())
            }
            fn visit_u64<E: serde::de::Error>(self, x: u64) -> Result<Duration, E> {
                self.visit_str(&x.to_string())
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Duration, E> {
                // Rust's shortest round-trip text, as Python's str(): the same f64 either way.
                self.visit_str(&format!("{x}"))
            }
        }
        d.deserialize_any(V)
    }
}

/// As its [`Display`](fmt::Display) text.
impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
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

    #[test]
    fn remembers_whether_a_unit_was_given() {
        let bare: Duration = "30".parse().unwrap();
        let unit: Duration = "30ms".parse().unwrap();
        assert!(!bare.unit_given() && unit.unit_given());
        assert_eq!(bare.ns(), 30_000_000_000);
        assert_eq!(bare, Duration::from_ns(30_000_000_000), "equal by value");
    }

    #[test]
    fn display_reads_back() {
        for ns in [
            0,
            1,
            7,
            1_500,
            500_000_000,
            10_000_000_000,
            90_000_000_000,
            -5_000_000,
        ] {
            let d = Duration::from_ns(ns);
            assert_eq!(d.to_string().parse::<Duration>().unwrap().ns(), ns, "{d}");
        }
        assert_eq!(Duration::from_ns(500_000_000).to_string(), "500ms");
    }

    #[test]
    fn numbers_read_as_their_text() {
        // What Python's json gives for `slop=0.05`, `slop=30`, `slop="50ms"`.
        let f: Duration = serde_json::from_str("0.05").unwrap();
        let i: Duration = serde_json::from_str("30").unwrap();
        let s: Duration = serde_json::from_str("\"50ms\"").unwrap();
        assert_eq!(f.ns(), parse_duration_ns("0.05").unwrap());
        assert!(!f.unit_given() && !i.unit_given() && s.unit_given());
        assert_eq!(i.ns(), 30_000_000_000);
        assert_eq!(
            serde_json::from_str::<Duration>("1e-05").unwrap().ns(),
            10_000
        );
        assert!(serde_json::from_str::<Duration>("true").is_err());
    }
}
