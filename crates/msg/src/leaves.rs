//! Decoding straight into columns: [`LeafDecoder`] flattens a schema once into its leaf fields
//! (single nested messages inlined: `header.stamp.sec`; arrays, strings and primitives are
//! leaves), then decodes each payload into a [`LeafSink`], one call per value, with no value
//! tree in between.
//!
//! Which payloads decode, and the values they give, are exactly those of [`crate::decode()`]:
//! the same reader and checks in the same order. Fields the caller does not use are read and
//! checked but not handed over; arrays of messages (and leaves asked for as trees) go through
//! the tree decoder itself.

use std::borrow::Cow;

use crate::decode::{decode_field_at, error_at, RResult, Reader};
use crate::error::DecodeError;
use crate::schema::{ArrayKind, BaseType, MessageSchema, Primitive};
use crate::value::Value;

/// Single nested messages deeper than this are not flattened into leaves (their bytes are
/// still read and checked).
pub const MAX_FLATTEN_DEPTH: usize = 64;

/// One leaf field: any field but a single nested message.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaf {
    /// Field names from the root (`["header", "frame_id"]`).
    pub path: Vec<String>,
    /// The element type.
    pub base: BaseType,
    /// Whether and how the field is an array.
    pub array: ArrayKind,
}

impl Leaf {
    /// The dotted path, `header.frame_id`.
    pub fn name(&self) -> String {
        self.path.join(".")
    }
}

/// What a [`LeafSink`] is given of a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafUse {
    /// Nothing: the field is read and checked only.
    Skip,
    /// Values: a primitive or string field as one [`LeafSink::scalar`]; an array of them as
    /// [`LeafSink::seq`] followed by one `scalar` per element; an array of `uint8`, `byte` or
    /// `char` as [`LeafSink::bytes`]. Arrays of messages are given nothing (use `Tree`).
    Values,
    /// The field's value tree, as [`crate::decode()`] gives it: [`LeafSink::tree`].
    Tree,
}

/// One primitive or string value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'a> {
    /// `bool`.
    Bool(bool),
    /// `int8`.
    I8(i8),
    /// `uint8`, `byte`, `char`.
    U8(u8),
    /// `int16`.
    I16(i16),
    /// `uint16`, `wchar`.
    U16(u16),
    /// `int32`.
    I32(i32),
    /// `uint32`.
    U32(u32),
    /// `int64`.
    I64(i64),
    /// `uint64`.
    U64(u64),
    /// `float32`.
    F32(f32),
    /// `float64`.
    F64(f64),
    /// `string` or `wstring`, as UTF-8 (invalid bytes replaced, as the tree decoder does).
    Str(Cow<'a, str>),
}

/// Receives a message's leaves, in schema order, from [`LeafDecoder::decode`]. A decode that
/// fails may have given some leaves of the message already.
pub trait LeafSink {
    /// A primitive or string leaf, or one element of an array leaf.
    fn scalar(&mut self, leaf: usize, v: Scalar<'_>);
    /// An array leaf of `len` elements begins; its elements follow as [`LeafSink::scalar`].
    fn seq(&mut self, leaf: usize, len: usize);
    /// An array of `uint8`, `byte` or `char`.
    fn bytes(&mut self, leaf: usize, b: &[u8]);
    /// A leaf asked for as a value tree.
    fn tree(&mut self, leaf: usize, v: Value);
}

#[derive(Debug, Clone)]
enum Op {
    Leaf(usize),
    /// A single nested message not flattened (too deep, or its definition is missing: then
    /// decoding fails as the tree decoder does): read as a tree and dropped.
    Opaque {
        path: Vec<String>,
        base: BaseType,
    },
    /// A nested message without fields: rosidl's placeholder byte.
    Placeholder,
}

/// A schema flattened into leaves, and the decoder of its payloads into them.
#[derive(Debug, Clone)]
pub struct LeafDecoder {
    schema: MessageSchema,
    leaves: Vec<Leaf>,
    uses: Vec<LeafUse>,
    /// Per leaf, the least wire size of one element (for count checks).
    min_elem: Vec<usize>,
    ops: Vec<Op>,
}

impl LeafDecoder {
    /// The leaves of `schema`, every one [`LeafUse::Skip`] until [`LeafDecoder::set_use`].
    pub fn new(schema: &MessageSchema) -> LeafDecoder {
        let mut d = LeafDecoder {
            schema: schema.clone(),
            leaves: Vec::new(),
            uses: Vec::new(),
            min_elem: Vec::new(),
            ops: Vec::new(),
        };
        d.flatten(schema, schema.name(), &[], 0);
        d
    }

    fn flatten(&mut self, schema: &MessageSchema, def_name: &str, prefix: &[String], depth: usize) {
        let Some(def) = schema.get(def_name) else {
            // Not reached for schemas built by this crate (every type is present).
            self.ops.push(Op::Opaque {
                path: prefix.to_vec(),
                base: BaseType::Message(def_name.to_string()),
            });
            return;
        };
        if def.fields.is_empty() {
            self.ops.push(Op::Placeholder);
            return;
        }
        for f in &def.fields {
            let mut path = prefix.to_vec();
            path.push(f.name.clone());
            match (&f.ty.base, f.ty.array) {
                (BaseType::Message(m), ArrayKind::Single) => {
                    if depth < MAX_FLATTEN_DEPTH && schema.get(m).is_some() {
                        self.flatten(schema, m, &path, depth + 1);
                    } else {
                        self.ops.push(Op::Opaque {
                            path,
                            base: f.ty.base.clone(),
                        });
                    }
                }
                (base, array) => {
                    self.ops.push(Op::Leaf(self.leaves.len()));
                    self.min_elem.push(schema.min_base_size(base));
                    self.uses.push(LeafUse::Skip);
                    self.leaves.push(Leaf {
                        path,
                        base: base.clone(),
                        array,
                    });
                }
            }
        }
    }

    /// The leaves, in schema (wire) order; a leaf's index is its position here.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// What the sink is given of leaf `leaf`.
    pub fn set_use(&mut self, leaf: usize, u: LeafUse) {
        if let Some(x) = self.uses.get_mut(leaf) {
            *x = u;
        }
    }

    /// Decodes one payload (encapsulation header included) into `sink`. Fails exactly where
    /// [`crate::decode()`] fails.
    pub fn decode<S: LeafSink>(&self, payload: &[u8], sink: &mut S) -> Result<(), DecodeError> {
        let mut r = Reader::new(payload)?;
        for op in &self.ops {
            match op {
                Op::Leaf(i) => self.leaf(&mut r, *i, sink)?,
                Op::Opaque { path, base } => {
                    decode_field_at(&self.schema, &mut r, path, base, ArrayKind::Single)?;
                }
                Op::Placeholder => {
                    // As the tree decoder: tolerated when absent at the very end.
                    if r.remaining() > 0 {
                        r.pos += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn leaf<S: LeafSink>(
        &self,
        r: &mut Reader<'_>,
        i: usize,
        sink: &mut S,
    ) -> Result<(), DecodeError> {
        let l = &self.leaves[i];
        let using = self.uses[i];
        if using == LeafUse::Tree || matches!(l.base, BaseType::Message(_)) {
            let v = decode_field_at(&self.schema, r, &l.path, &l.base, l.array)?;
            if using == LeafUse::Tree {
                sink.tree(i, v);
            }
            return Ok(());
        }
        let emit = using == LeafUse::Values;
        let lift = |e| error_at(&l.path, e);
        let n = match l.array {
            ArrayKind::Single => {
                let v = read_single(r, &l.base, emit).map_err(lift)?;
                if let Some(v) = v {
                    sink.scalar(i, v);
                }
                return Ok(());
            }
            ArrayKind::Fixed(n) => {
                let at = r.pos;
                r.check_count(n, self.min_elem[i], at).map_err(lift)?;
                n
            }
            ArrayKind::Bounded(_) | ArrayKind::Unbounded => {
                r.count(self.min_elem[i]).map_err(lift)?
            }
        };
        if let BaseType::Primitive(p) = l.base {
            if p.is_byte_like() {
                let b = r.take(n).map_err(lift)?;
                if emit {
                    sink.bytes(i, b);
                }
                return Ok(());
            }
        }
        if emit {
            sink.seq(i, n);
        }
        for _ in 0..n {
            let v = read_single(r, &l.base, emit).map_err(lift)?;
            if let Some(v) = v {
                sink.scalar(i, v);
            }
        }
        Ok(())
    }
}

/// One primitive or string (not a message) at the reader; `None` when not wanted (still read).
fn read_single<'a>(r: &mut Reader<'a>, base: &BaseType, want: bool) -> RResult<Option<Scalar<'a>>> {
    Ok(match base {
        BaseType::Primitive(p) => {
            let v = read_primitive(r, *p)?;
            want.then_some(v)
        }
        BaseType::String { .. } => {
            let b = r.string_bytes()?;
            want.then(|| Scalar::Str(String::from_utf8_lossy(b)))
        }
        BaseType::WString { .. } => {
            let s = r.wstring()?;
            want.then_some(Scalar::Str(Cow::Owned(s)))
        }
        // Messages are read by the tree decoder (`LeafDecoder::leaf`).
        BaseType::Message(_) => None,
    })
}

fn read_primitive<'a>(r: &mut Reader<'a>, p: Primitive) -> RResult<Scalar<'a>> {
    use Primitive::*;
    Ok(match p {
        Bool => Scalar::Bool(r.u8()? != 0),
        Byte | Char | UInt8 => Scalar::U8(r.u8()?),
        Int8 => Scalar::I8(r.u8()? as i8),
        WChar | UInt16 => Scalar::U16(r.u16()?),
        Int16 => Scalar::I16(r.u16()? as i16),
        UInt32 => Scalar::U32(r.u32()?),
        Int32 => Scalar::I32(r.u32()? as i32),
        UInt64 => Scalar::U64(r.u64()?),
        Int64 => Scalar::I64(r.u64()? as i64),
        Float32 => Scalar::F32(f32::from_bits(r.u32()?)),
        Float64 => Scalar::F64(f64::from_bits(r.u64()?)),
    })
}
