//! Fast timestamp extraction: find where a message type keeps its time and
//! read just those 8 bytes instead of decoding the whole payload.

use crate::decode::{decode_prefix, Reader, ENCAPSULATION_HEADER_LEN};
use crate::error::DecodeError;
use crate::schema::{ArrayKind, BaseType, MessageSchema};
use crate::value::Value;
use std::sync::Arc;

const HEADER: &str = "std_msgs/msg/Header";
const TIME: &str = "builtin_interfaces/msg/Time";
const CLOCK: &str = "rosgraph_msgs/msg/Clock";

pub use bagscope_types::StampSource;

#[derive(Debug, Clone, PartialEq)]
enum Access {
    None,
    /// `sec` is at this offset from the start of the CDR body.
    Fixed {
        body_offset: usize,
    },
    /// Preceded by variable-size fields: decode fields `0..=index`.
    Prefix {
        index: usize,
        schema: Arc<MessageSchema>,
    },
}

/// A stamp as read from a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// `sec · 10⁹ + nanosec`.
    pub ns: i64,
    /// `nanosec` below 10⁹, as `builtin_interfaces/msg/Time` requires.
    pub nanosec_valid: bool,
}

impl Stamp {
    #[inline]
    fn of(sec: i32, nanosec: u32) -> Self {
        Stamp {
            ns: sec as i64 * 1_000_000_000 + nanosec as i64,
            nanosec_valid: nanosec < 1_000_000_000,
        }
    }
}

/// Precomputed recipe for reading a message's timestamp.
#[derive(Debug, Clone, PartialEq)]
pub struct StampLocator {
    source: StampSource,
    field: String,
    access: Access,
}

/// `rel` rounded up to a multiple of `n`; `None` on overflow (hostile fixed-array sizes).
fn align(rel: usize, n: usize) -> Option<usize> {
    rel.div_ceil(n).checked_mul(n)
}

/// Advance `rel` over a field if its size does not depend on the data.
/// `budget` bounds the work so hostile schemas (huge nested fixed arrays)
/// fall back to prefix decoding instead of hanging.
fn fixed_advance(
    schema: &MessageSchema,
    base: &BaseType,
    array: ArrayKind,
    rel: usize,
    budget: &mut usize,
    depth: usize,
) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    let count = match array {
        ArrayKind::Single => 1,
        ArrayKind::Fixed(n) => n,
        _ => return None,
    };
    if let BaseType::Primitive(p) = base {
        // Elements of one primitive type are contiguous after one alignment.
        return align(rel, p.size())?.checked_add(p.size().checked_mul(count)?);
    }
    let mut rel = rel;
    for _ in 0..count {
        *budget = budget.checked_sub(1)?;
        rel = match base {
            BaseType::Primitive(_) => return None,
            BaseType::String { .. } | BaseType::WString { .. } => return None,
            BaseType::Message(m) => {
                let def = schema.get(m)?;
                if def.fields.is_empty() {
                    rel.checked_add(1)?
                } else {
                    let mut r = rel;
                    for f in &def.fields {
                        r = fixed_advance(schema, &f.ty.base, f.ty.array, r, budget, depth + 1)?;
                    }
                    r
                }
            }
        };
    }
    Some(rel)
}

impl StampLocator {
    /// A locator that never finds a stamp.
    pub fn none() -> Self {
        StampLocator {
            source: StampSource::None,
            field: String::new(),
            access: Access::None,
        }
    }

    /// Work out where `schema`'s root type keeps its timestamp. Priority:
    /// `header` (Header), then `stamp` (Time), then Clock's `clock`.
    pub fn for_schema(schema: &MessageSchema) -> Self {
        let root = schema.root();
        let is_msg = |ty: &crate::schema::FieldType, name: &str| {
            ty.array == ArrayKind::Single && matches!(&ty.base, BaseType::Message(m) if m == name)
        };
        let pick = root
            .fields
            .iter()
            .position(|f| f.name == "header" && is_msg(&f.ty, HEADER))
            .map(|i| (i, StampSource::HeaderStamp))
            .or_else(|| {
                root.fields
                    .iter()
                    .position(|f| f.name == "stamp" && is_msg(&f.ty, TIME))
                    .map(|i| (i, StampSource::TopLevelStamp))
            })
            .or_else(|| {
                if schema.name() == CLOCK {
                    root.fields
                        .iter()
                        .position(|f| f.name == "clock" && is_msg(&f.ty, TIME))
                        .map(|i| (i, StampSource::ClockField))
                } else {
                    None
                }
            });
        let Some((index, source)) = pick else {
            return Self::none();
        };
        let mut rel = Some(0usize);
        let mut budget = 10_000usize;
        for f in &root.fields[..index] {
            rel =
                rel.and_then(|r| fixed_advance(schema, &f.ty.base, f.ty.array, r, &mut budget, 0));
        }
        // Header and Time both start with an int32: 4-byte alignment.
        let access = match rel.and_then(|r| align(r, 4)) {
            Some(body_offset) => Access::Fixed { body_offset },
            None => Access::Prefix {
                index,
                schema: Arc::new(schema.clone()),
            },
        };
        StampLocator {
            source,
            field: root.fields[index].name.clone(),
            access,
        }
    }

    /// Where the stamp comes from: `header.stamp`, a top-level `stamp`, `/clock`'s `clock` field, or none.
    pub fn source(&self) -> StampSource {
        self.source
    }

    /// Payload offset (header included) of `sec` when it is fixed, e.g. 4
    /// for Header-first messages.
    pub fn fixed_offset(&self) -> Option<usize> {
        match self.access {
            Access::Fixed { body_offset } => Some(ENCAPSULATION_HEADER_LEN + body_offset),
            _ => None,
        }
    }

    fn stamp_path(&self) -> String {
        match self.source {
            StampSource::HeaderStamp => format!("{}.stamp", self.field),
            _ => self.field.clone(),
        }
    }

    /// Read the timestamp as i64 nanoseconds (`sec * 1e9 + nanosec`).
    /// `Ok(None)` if the type has no known stamp.
    #[inline]
    pub fn read_stamp_ns(&self, payload: &[u8]) -> Result<Option<i64>, DecodeError> {
        Ok(self.read_stamp(payload)?.map(|s| s.ns))
    }

    /// Read the timestamp and whether its `nanosec` is valid (below 10⁹). `Ok(None)` if the
    /// type has no known stamp.
    // The common case is inlined into the scan's per-message closure (another crate); the
    // rest stays out of line.
    #[inline]
    pub fn read_stamp(&self, payload: &[u8]) -> Result<Option<Stamp>, DecodeError> {
        // Little-endian CDR with the stamp 4-aligned and present (what every ROS 2 writer
        // produces): two loads. Anything else takes the checked path.
        if let Access::Fixed { body_offset } = self.access {
            let at = ENCAPSULATION_HEADER_LEN.saturating_add(body_offset);
            if payload.get(..2) == Some(&[0x00, 0x01][..]) && body_offset % 4 == 0 {
                if let Some(b) = payload.get(at..at.saturating_add(8)) {
                    let sec = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    let nsec = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                    return Ok(Some(Stamp::of(sec, nsec)));
                }
            }
        }
        self.read_stamp_checked(payload)
    }

    #[inline(never)]
    fn read_stamp_checked(&self, payload: &[u8]) -> Result<Option<Stamp>, DecodeError> {
        match &self.access {
            Access::None => Ok(None),
            Access::Fixed { body_offset } => {
                let mut r = Reader::new(payload)?;
                // The field path is only spelled out on failure: formatting it per message
                // cost more than reading the stamp.
                let fail = |(offset, kind)| DecodeError {
                    offset,
                    path: self.stamp_path(),
                    kind,
                };
                r.pos = ENCAPSULATION_HEADER_LEN;
                r.take(*body_offset).map_err(fail)?;
                let sec = r.u32().map_err(fail)? as i32;
                let nsec = r.u32().map_err(fail)?;
                Ok(Some(Stamp::of(sec, nsec)))
            }
            Access::Prefix { index, schema } => {
                let v = decode_prefix(schema, payload, index + 1)?;
                let t = v.get_path(&self.stamp_path());
                let nanosec_valid = t
                    .and_then(Value::as_struct)
                    .and_then(|s| s.get("nanosec"))
                    .and_then(Value::as_i64)
                    .is_none_or(|n| (0..1_000_000_000).contains(&n));
                Ok(t.and_then(Value::as_time_ns)
                    .map(|ns| Stamp { ns, nanosec_valid }))
            }
        }
    }

    /// `header.frame_id` for Header-carrying messages; `Ok(None)` otherwise.
    pub fn read_frame_id(&self, payload: &[u8]) -> Result<Option<String>, DecodeError> {
        if self.source != StampSource::HeaderStamp {
            return Ok(None);
        }
        match &self.access {
            Access::None => Ok(None),
            Access::Fixed { body_offset } => {
                let mut r = Reader::new(payload)?;
                let path = format!("{}.frame_id", self.field);
                let fail = |(offset, kind)| DecodeError {
                    offset,
                    path: path.clone(),
                    kind,
                };
                // frame_id follows the 8-byte stamp; already 4-aligned. Two steps: a hostile
                // schema's offset may be near usize::MAX.
                r.take(*body_offset).map_err(fail)?;
                r.take(8).map_err(fail)?;
                Ok(Some(r.string().map_err(fail)?))
            }
            Access::Prefix { index, schema } => {
                let v = decode_prefix(schema, payload, index + 1)?;
                let p = format!("{}.frame_id", self.field);
                Ok(v.get_path(&p).and_then(|v| v.as_str()).map(str::to_string))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::schema::parse_ros2msg;

    /// Regression (fuzz, tests/data/regressions/schema_parse/huge_fixed_array): a fixed array
    /// of ~usize::MAX bytes before the header overflowed the offset arithmetic (a panic in
    /// debug builds; in release the offset wrapped to 0 and the stamp was read from the wrong
    /// bytes without any error).
    #[test]
    fn huge_fixed_array_before_the_header_is_not_a_fixed_offset() {
        let text = "uint8[18446744073709551615] pad\nstd_msgs/Header header\n";
        let s = parse_ros2msg("fuzz_pkg/msg/Huge", text).unwrap();
        let loc = s.stamp_locator();
        assert_eq!(loc.fixed_offset(), None);
        let payload = [0u8, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
        assert!(loc.read_stamp_ns(&payload).is_err());
        assert!(loc.read_frame_id(&payload).is_err());
    }

    /// The inlined little-endian read and the checked reader agree, including on the cases
    /// the fast path hands over (big-endian, cut short, a misaligned offset).
    #[test]
    fn fast_and_checked_stamp_reads_agree() {
        let hdr = parse_ros2msg("t/msg/H", "std_msgs/Header header\nint32 x\n").unwrap();
        // A uint8 first: the stamp's u32 needs padding, so its offset is not 4-aligned.
        let odd = parse_ros2msg("t/msg/O", "uint8 a\nbuiltin_interfaces/Time stamp\n").unwrap();
        let (sec, nsec) = (-5i32, 999_999_999u32);
        let want = sec as i64 * 1_000_000_000 + nsec as i64;
        let mut le = vec![0u8, 1, 0, 0];
        le.extend_from_slice(&sec.to_le_bytes());
        le.extend_from_slice(&nsec.to_le_bytes());
        le.extend_from_slice(&[0, 0, 0, 0]);
        let mut be = vec![0u8, 0, 0, 0];
        be.extend_from_slice(&sec.to_be_bytes());
        be.extend_from_slice(&nsec.to_be_bytes());
        be.extend_from_slice(&[0, 0, 0, 0]);
        let loc = hdr.stamp_locator();
        for p in [&le, &be] {
            assert_eq!(loc.read_stamp_ns(p).unwrap(), Some(want));
            assert_eq!(loc.read_stamp_checked(p).unwrap().map(|s| s.ns), Some(want));
        }
        for cut in 0..12 {
            assert!(loc.read_stamp_ns(&le[..cut]).is_err(), "cut at {cut}");
        }
        let mut o = vec![0u8, 1, 0, 0, 7, 0, 0, 0];
        o.extend_from_slice(&sec.to_le_bytes());
        o.extend_from_slice(&nsec.to_le_bytes());
        let loc = odd.stamp_locator();
        assert_eq!(loc.read_stamp_ns(&o).unwrap(), Some(want));
        assert_eq!(
            loc.read_stamp_checked(&o).unwrap().map(|s| s.ns),
            Some(want)
        );
    }
}
