//! Schema-driven CDR decoder (XCDR1 / plain CDR as ROS 2 middlewares write it).
//!
//! Wire rules implemented:
//! * 4-byte encapsulation header: `00 00` = CDR big-endian, `00 01` = CDR
//!   little-endian; options bytes ignored. Every other encapsulation
//!   (PL_CDR, XCDR2 variants, …) is rejected with its name.
//! * Each primitive is aligned to its own size (1, 2, 4, 8), counted from the
//!   end of the encapsulation header.
//! * `string`: u32 length including the NUL terminator, then the bytes. A
//!   missing terminator is tolerated; invalid UTF-8 is replaced (lossy).
//! * `wstring`: u32 count of UTF-16 code units, then 2-byte units (the
//!   rmw_fastrtps convention); a trailing 0 unit is dropped.
//! * sequences: u32 count then elements; fixed arrays: elements only.
//! * a struct with no fields is one placeholder byte (rosidl adds a `uint8`).
//! * bools other than 0/1 decode as `true`; bounded-sequence/string bounds
//!   are not enforced (we read what was written).
//!
//! Every count is checked against the remaining bytes (times the element's
//! minimum wire size) before anything is allocated.

use crate::error::{DecodeError, DecodeErrorKind};
use crate::schema::{ArrayKind, BaseType, MessageDef, MessageSchema, Primitive};
use crate::value::{StructValue, Value};

/// Maximum path length (fields + indices) the decoder descends into.
const MAX_DEPTH: usize = 200;

/// Size of the encapsulation header preceding the CDR body.
pub const ENCAPSULATION_HEADER_LEN: usize = 4;

fn encapsulation_name(id: u16) -> &'static str {
    match id {
        0x0000 => "CDR_BE",
        0x0001 => "CDR_LE",
        0x0002 => "PL_CDR_BE",
        0x0003 => "PL_CDR_LE",
        0x0004 => "XML",
        0x0006 => "CDR2_BE",
        0x0007 => "CDR2_LE",
        0x0008 => "D_CDR2_BE",
        0x0009 => "D_CDR2_LE",
        0x000a => "PL_CDR2_BE",
        0x000b => "PL_CDR2_LE",
        _ => "unknown",
    }
}

/// Check the encapsulation header; returns `true` for little-endian.
pub fn read_encapsulation(payload: &[u8]) -> Result<bool, DecodeError> {
    if payload.len() < ENCAPSULATION_HEADER_LEN {
        return Err(DecodeError {
            offset: 0,
            path: String::new(),
            kind: DecodeErrorKind::MissingHeader,
        });
    }
    let id = u16::from_be_bytes([payload[0], payload[1]]);
    match id {
        0x0000 => Ok(false),
        0x0001 => Ok(true),
        _ => Err(DecodeError {
            offset: 0,
            path: String::new(),
            kind: DecodeErrorKind::UnsupportedEncapsulation {
                id,
                name: encapsulation_name(id),
            },
        }),
    }
}

/// Bounds-checked, alignment-aware cursor over a CDR payload. Offsets are
/// absolute (into the payload, header included); alignment is relative to
/// the end of the header.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) le: bool,
}

/// Low-level error without a field path; the decoder attaches the path.
pub(crate) type RResult<T> = Result<T, (usize, DecodeErrorKind)>;

impl<'a> Reader<'a> {
    /// Reader positioned just after the header. Validates the header.
    pub(crate) fn new(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let le = read_encapsulation(payload)?;
        Ok(Reader {
            data: payload,
            pos: ENCAPSULATION_HEADER_LEN,
            le,
        })
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    #[inline]
    pub(crate) fn align(&mut self, n: usize) -> RResult<()> {
        let rel = self.pos - ENCAPSULATION_HEADER_LEN;
        let pad = (n - rel % n) % n;
        if pad > self.remaining() {
            return Err((
                self.pos,
                DecodeErrorKind::Truncated {
                    need: pad,
                    have: self.remaining(),
                },
            ));
        }
        self.pos += pad;
        Ok(())
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> RResult<&'a [u8]> {
        if n > self.remaining() {
            return Err((
                self.pos,
                DecodeErrorKind::Truncated {
                    need: n,
                    have: self.remaining(),
                },
            ));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn arr<const N: usize>(&mut self) -> RResult<[u8; N]> {
        self.align(N)?;
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline]
    pub(crate) fn u8(&mut self) -> RResult<u8> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    pub(crate) fn u16(&mut self) -> RResult<u16> {
        let a = self.arr::<2>()?;
        Ok(if self.le {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        })
    }
    #[inline]
    pub(crate) fn u32(&mut self) -> RResult<u32> {
        let a = self.arr::<4>()?;
        Ok(if self.le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }
    #[inline]
    pub(crate) fn u64(&mut self) -> RResult<u64> {
        let a = self.arr::<8>()?;
        Ok(if self.le {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        })
    }

    /// A u32 count, checked so that `count * min_elem` bytes remain.
    #[inline]
    pub(crate) fn count(&mut self, min_elem: usize) -> RResult<usize> {
        self.align(4)?;
        let at = self.pos;
        let n = self.u32()? as usize;
        self.check_count(n, min_elem, at)?;
        Ok(n)
    }

    #[inline]
    pub(crate) fn check_count(&self, n: usize, min_elem: usize, at: usize) -> RResult<()> {
        if n.saturating_mul(min_elem.max(1)) > self.remaining() {
            return Err((
                at,
                DecodeErrorKind::LengthTooLarge {
                    len: n as u64,
                    remaining: self.remaining(),
                },
            ));
        }
        Ok(())
    }

    /// CDR string: u32 length (with NUL) then bytes. Lenient on a missing NUL.
    #[inline]
    pub(crate) fn string_bytes(&mut self) -> RResult<&'a [u8]> {
        let n = self.count(1)?;
        let b = self.take(n)?;
        Ok(match b.split_last() {
            Some((0, rest)) => rest,
            _ => b,
        })
    }

    pub(crate) fn string(&mut self) -> RResult<String> {
        let b = self.string_bytes()?;
        Ok(match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => String::from_utf8_lossy(b).into_owned(),
        })
    }

    pub(crate) fn wstring(&mut self) -> RResult<String> {
        let n = self.count(2)?;
        let mut units = Vec::with_capacity(n);
        for _ in 0..n {
            units.push(self.u16()?);
        }
        if units.last() == Some(&0) {
            units.pop();
        }
        Ok(String::from_utf16_lossy(&units))
    }

    fn primitive(&mut self, p: Primitive) -> RResult<Value> {
        use Primitive::*;
        Ok(match p {
            Bool => Value::Bool(self.u8()? != 0),
            Byte | Char | UInt8 => Value::U8(self.u8()?),
            Int8 => Value::I8(self.u8()? as i8),
            WChar | UInt16 => Value::U16(self.u16()?),
            Int16 => Value::I16(self.u16()? as i16),
            UInt32 => Value::U32(self.u32()?),
            Int32 => Value::I32(self.u32()? as i32),
            UInt64 => Value::U64(self.u64()?),
            Int64 => Value::I64(self.u64()? as i64),
            Float32 => Value::F32(f32::from_bits(self.u32()?)),
            Float64 => Value::F64(f64::from_bits(self.u64()?)),
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Seg<'s> {
    Field(&'s str),
    Index(usize),
}

struct Decoder<'s, 'a> {
    schema: &'s MessageSchema,
    r: Reader<'a>,
    path: Vec<Seg<'s>>,
}

type DResult<T> = Result<T, DecodeError>;

impl<'s, 'a> Decoder<'s, 'a> {
    fn fail(&self, (offset, kind): (usize, DecodeErrorKind)) -> DecodeError {
        let mut path = String::new();
        for s in &self.path {
            match s {
                Seg::Field(f) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(f);
                }
                Seg::Index(i) => {
                    path.push('[');
                    path.push_str(&i.to_string());
                    path.push(']');
                }
            }
        }
        DecodeError { offset, path, kind }
    }

    fn lift<T>(&self, r: RResult<T>) -> DResult<T> {
        r.map_err(|e| self.fail(e))
    }

    fn def(&self, name: &str) -> DResult<&'s MessageDef> {
        match self.schema.get(name) {
            Some(d) => Ok(d),
            // Unreachable for schemas built by this crate; kept as an error.
            None => Err(self.fail((
                self.r.pos,
                DecodeErrorKind::Message(format!("type `{name}` missing from schema")),
            ))),
        }
    }

    fn decode_struct(&mut self, def: &'s MessageDef, max_fields: usize) -> DResult<Value> {
        if def.fields.is_empty() {
            // rosidl's placeholder byte; tolerate its absence at the very end.
            if self.r.remaining() > 0 {
                self.r.pos += 1;
            }
            return Ok(Value::Struct(StructValue::new(
                def.names().clone(),
                Vec::new(),
            )));
        }
        let n = def.fields.len().min(max_fields);
        let mut values = Vec::with_capacity(n);
        for f in &def.fields[..n] {
            self.path.push(Seg::Field(&f.name));
            let v = self.decode_field(&f.ty.base, f.ty.array)?;
            self.path.pop();
            values.push(v);
        }
        Ok(Value::Struct(StructValue::new(def.names().clone(), values)))
    }

    fn decode_field(&mut self, base: &'s BaseType, array: ArrayKind) -> DResult<Value> {
        match array {
            ArrayKind::Single => self.decode_single(base),
            ArrayKind::Fixed(n) => {
                let at = self.r.pos;
                let min = self.schema.min_base_size(base);
                let r = self.r.check_count(n, min, at);
                self.lift(r)?;
                self.decode_elems(base, n)
            }
            ArrayKind::Bounded(_) | ArrayKind::Unbounded => {
                let min = self.schema.min_base_size(base);
                let r = self.r.count(min);
                let n = self.lift(r)?;
                self.decode_elems(base, n)
            }
        }
    }

    /// `n` has already been checked against the remaining bytes.
    fn decode_elems(&mut self, base: &'s BaseType, n: usize) -> DResult<Value> {
        if let BaseType::Primitive(p) = base {
            if p.is_byte_like() {
                let r = self.r.take(n);
                return Ok(Value::Bytes(self.lift(r)?.to_vec()));
            }
        }
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            self.path.push(Seg::Index(i));
            out.push(self.decode_single(base)?);
            self.path.pop();
        }
        Ok(Value::Array(out))
    }

    fn decode_single(&mut self, base: &'s BaseType) -> DResult<Value> {
        match base {
            BaseType::Primitive(p) => {
                let r = self.r.primitive(*p);
                self.lift(r)
            }
            BaseType::String { .. } => {
                let r = self.r.string();
                self.lift(r).map(Value::String)
            }
            BaseType::WString { .. } => {
                let r = self.r.wstring();
                self.lift(r).map(Value::String)
            }
            BaseType::Message(m) => {
                // Deeply nested (hostile) schemas must not overflow the stack.
                if self.path.len() > MAX_DEPTH {
                    return Err(self.fail((
                        self.r.pos,
                        DecodeErrorKind::Message(format!("nesting deeper than {MAX_DEPTH} levels")),
                    )));
                }
                let d = self.def(m)?;
                self.decode_struct(d, usize::MAX)
            }
        }
    }
}

/// One field (`base`, `array`) decoded into a value tree from `r`'s position, as [`decode`]
/// would at `path` (the field names leading to it, which count towards the nesting limit and
/// name the field in errors); `r` is left after it.
pub(crate) fn decode_field_at(
    schema: &MessageSchema,
    r: &mut Reader<'_>,
    path: &[String],
    base: &BaseType,
    array: ArrayKind,
) -> Result<Value, DecodeError> {
    let mut d = Decoder {
        schema,
        r: r.clone(),
        path: path.iter().map(|p| Seg::Field(p)).collect(),
    };
    let v = d.decode_field(base, array)?;
    r.pos = d.r.pos;
    Ok(v)
}

/// The error [`decode`] gives for a low-level failure at `path`.
pub(crate) fn error_at(path: &[String], (offset, kind): (usize, DecodeErrorKind)) -> DecodeError {
    DecodeError {
        offset,
        path: path.join("."),
        kind,
    }
}

/// Decode a whole CDR payload (encapsulation header included) against
/// `schema`. Trailing bytes after the message (middleware padding) are ignored.
pub fn decode(schema: &MessageSchema, payload: &[u8]) -> Result<Value, DecodeError> {
    decode_prefix(schema, payload, usize::MAX)
}

/// Decode a whole payload like [`decode`] and also return where the message ends (offset
/// into `payload`, header included), so a caller can tell whether the schema accounted for
/// every byte (see [`only_padding_after`]).
pub fn decode_with_end(
    schema: &MessageSchema,
    payload: &[u8],
) -> Result<(Value, usize), DecodeError> {
    let r = Reader::new(payload)?;
    let mut d = Decoder {
        schema,
        r,
        path: Vec::new(),
    };
    let v = d.decode_struct(schema.root(), usize::MAX)?;
    Ok((v, d.r.pos))
}

/// True when the bytes of `payload` after `end` (a message's end from [`decode_with_end`])
/// can only be the padding middlewares add to round the CDR body up to a multiple of 4.
pub fn only_padding_after(payload: &[u8], end: usize) -> bool {
    let body = end.saturating_sub(ENCAPSULATION_HEADER_LEN);
    let padded = ENCAPSULATION_HEADER_LEN + body.div_ceil(4) * 4;
    payload.len() >= end && payload.len() <= padded
}

/// Decode only the first `n_fields` top-level fields of the root message;
/// the resulting struct has just those fields.
pub fn decode_prefix(
    schema: &MessageSchema,
    payload: &[u8],
    n_fields: usize,
) -> Result<Value, DecodeError> {
    let r = Reader::new(payload)?;
    let mut d = Decoder {
        schema,
        r,
        path: Vec::new(),
    };
    let root = schema.root();
    d.decode_struct(root, n_fields)
}
