//! A serde `Deserializer` over a CDR byte slice, used by `decode_typed`.
//!
//! Why not `cdr::deserialize`? cdr 0.2.4 sizes its string/byte buffers from
//! the u32 length field *before* checking how many bytes remain
//! (`Vec::with_capacity(len)` then `resize`), so a corrupt length makes it
//! allocate and zero up to 4 GiB. This one checks every length against the
//! remaining input first and reports byte offsets. Wire rules are the same
//! as [`crate::decode`] (alignment relative to the end of the 4-byte header,
//! strings with NUL terminator, u32 sequence counts, no count for fixed
//! arrays / tuples), so it reads what `cdr::serialize` writes.

use crate::decode::Reader;
use crate::error::{DecodeError, DecodeErrorKind};
use serde::de::{self, DeserializeSeed, IntoDeserializer, SeqAccess, Visitor};

pub(crate) struct Deserializer<'a> {
    pub(crate) r: Reader<'a>,
}

impl de::Error for DecodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        DecodeError {
            offset: 0,
            path: String::new(),
            kind: DecodeErrorKind::Message(msg.to_string()),
        }
    }
}

type Result<T> = std::result::Result<T, DecodeError>;

fn lift<T>(r: crate::decode::RResult<T>) -> Result<T> {
    r.map_err(|(offset, kind)| DecodeError {
        offset,
        path: String::new(),
        kind,
    })
}

impl<'a> Deserializer<'a> {
    fn unsupported(&self, what: &str) -> DecodeError {
        DecodeError {
            offset: self.r.pos,
            path: String::new(),
            kind: DecodeErrorKind::Message(format!("{what} is not representable in CDR")),
        }
    }
}

impl<'de, 'a> de::Deserializer<'de> for &mut Deserializer<'a> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(self.unsupported("self-describing deserialization (deserialize_any)"))
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        let at = self.r.pos;
        match lift(self.r.u8())? {
            0 => v.visit_bool(false),
            1 => v.visit_bool(true),
            b => Err(DecodeError {
                offset: at,
                path: String::new(),
                kind: DecodeErrorKind::InvalidBool(b),
            }),
        }
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i8(lift(self.r.u8())? as i8)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u8(lift(self.r.u8())?)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i16(lift(self.r.u16())? as i16)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u16(lift(self.r.u16())?)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i32(lift(self.r.u32())? as i32)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u32(lift(self.r.u32())?)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_i64(lift(self.r.u64())? as i64)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_u64(lift(self.r.u64())?)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_f32(f32::from_bits(lift(self.r.u32())?))
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_f64(f64::from_bits(lift(self.r.u64())?))
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        // ROS `char` is one byte.
        v.visit_char(lift(self.r.u8())? as char)
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        let at = self.r.pos;
        let b = lift(self.r.string_bytes())?;
        match std::str::from_utf8(b) {
            Ok(s) => v.visit_str(s),
            Err(_) => Err(DecodeError {
                offset: at,
                path: String::new(),
                kind: DecodeErrorKind::InvalidUtf8,
            }),
        }
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        self.deserialize_str(v)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        let n = lift(self.r.count(1))?;
        v.visit_bytes(lift(self.r.take(n))?)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        self.deserialize_bytes(v)
    }
    fn deserialize_option<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(self.unsupported("Option"))
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _n: &'static str, v: V) -> Result<V::Value> {
        // Nothing on the wire, matching what cdr::serialize writes.
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _n: &'static str,
        v: V,
    ) -> Result<V::Value> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
        // Every element is at least one byte, so this bounds the count.
        let n = lift(self.r.count(1))?;
        v.visit_seq(Access { de: self, left: n })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value> {
        v.visit_seq(Access {
            de: self,
            left: len,
        })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _n: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value> {
        v.visit_seq(Access {
            de: self,
            left: len,
        })
    }
    fn deserialize_map<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(self.unsupported("map"))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _n: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        v.visit_seq(Access {
            de: self,
            left: fields.len(),
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _n: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        // Unit-only enums as a u32 discriminant, like IDL enums.
        let at = self.r.pos;
        let idx = lift(self.r.u32())?;
        if idx as usize >= variants.len() {
            return Err(DecodeError {
                offset: at,
                path: String::new(),
                kind: DecodeErrorKind::Message(format!("enum discriminant {idx} out of range")),
            });
        }
        v.visit_enum(idx.into_deserializer())
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(self.unsupported("identifier"))
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value> {
        Err(self.unsupported("ignored_any"))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

struct Access<'x, 'a> {
    de: &'x mut Deserializer<'a>,
    left: usize,
}

impl<'de, 'x, 'a> SeqAccess<'de> for Access<'x, 'a> {
    type Error = DecodeError;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        // Never promise more than the bytes left (each element >= 1 byte);
        // serde preallocates from this.
        Some(self.left.min(self.de.r.remaining()))
    }
}
