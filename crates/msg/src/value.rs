//! Dynamic value tree produced by the schema-driven decoder, with field-path
//! access (`header.stamp`, `points[0].positions`, `position[3]`).

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use std::sync::Arc;

/// A decoded value. Integers keep their wire width so nothing is lost;
/// use the `as_*` accessors for uniform access.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `int8`.
    I8(i8),
    /// A single `uint8`, `byte` or `char` (arrays of them are [`Value::Bytes`]).
    U8(u8),
    /// `int16`.
    I16(i16),
    /// `uint16`, and a single IDL `wchar` (its UTF-16 code unit).
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
    /// `string` or `wstring`, as UTF-8 (invalid bytes replaced).
    String(String),
    /// Arrays/sequences of `uint8`, `byte` and `char`, kept as raw bytes.
    Bytes(Vec<u8>),
    /// Any other fixed array or sequence, one value per element.
    Array(Vec<Value>),
    /// A nested message.
    Struct(StructValue),
}

/// A decoded message: field names (shared with the schema) and values in
/// declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct StructValue {
    names: Arc<[String]>,
    values: Vec<Value>,
}

impl StructValue {
    /// `names` and `values` must have equal length; extra entries are ignored.
    pub fn new(names: Arc<[String]>, values: Vec<Value>) -> Self {
        StructValue { names, values }
    }

    /// The value of field `name`, if the message has that field.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.names
            .iter()
            .position(|n| n == name)
            .and_then(|i| self.values.get(i))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.values.len().min(self.names.len())
    }

    /// True when the message has no fields.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(field name, value)` pairs in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names
            .iter()
            .map(|s| s.as_str())
            .zip(self.values.iter())
    }
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment<'a> {
    /// A field name (`header`, `positions`).
    Field(&'a str),
    /// An array index (`[3]`), from 0.
    Index(usize),
}

/// Split `a.b[2].c` into segments. Returns `None` on malformed paths.
pub fn parse_path(path: &str) -> Option<Vec<PathSegment<'_>>> {
    let mut out = Vec::new();
    if path.is_empty() {
        return Some(out);
    }
    for part in path.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(p) => (&part[..p], &part[p..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(PathSegment::Field(name));
        } else if rest.is_empty() {
            return None;
        }
        while !rest.is_empty() {
            let inner = rest.strip_prefix('[')?;
            let close = inner.find(']')?;
            let idx: usize = inner[..close].trim().parse().ok()?;
            out.push(PathSegment::Index(idx));
            rest = &inner[close + 1..];
        }
    }
    Some(out)
}

impl Value {
    /// Field-path lookup. Indexing into [`Value::Bytes`] is not possible by
    /// reference; use [`Value::get_path_f64`] / [`Value::get_path_i64`] for that.
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        let segs = parse_path(path)?;
        let mut cur = self;
        for s in segs {
            cur = match (s, cur) {
                (PathSegment::Field(n), Value::Struct(sv)) => sv.get(n)?,
                (PathSegment::Index(i), Value::Array(a)) => a.get(i)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// Like [`Value::get_path`] but also indexes into byte arrays.
    fn get_path_scalar(&self, path: &str) -> Option<ScalarRef<'_>> {
        let segs = parse_path(path)?;
        let mut cur = self;
        let n = segs.len();
        for (k, s) in segs.into_iter().enumerate() {
            cur = match (s, cur) {
                (PathSegment::Field(f), Value::Struct(sv)) => sv.get(f)?,
                (PathSegment::Index(i), Value::Array(a)) => a.get(i)?,
                (PathSegment::Index(i), Value::Bytes(b)) if k + 1 == n => {
                    return b.get(i).map(|x| ScalarRef::Byte(*x))
                }
                _ => return None,
            };
        }
        Some(ScalarRef::Value(cur))
    }

    /// Numeric value at `path` as f64 (works on byte arrays too).
    pub fn get_path_f64(&self, path: &str) -> Option<f64> {
        match self.get_path_scalar(path)? {
            ScalarRef::Byte(b) => Some(b as f64),
            ScalarRef::Value(v) => v.as_f64(),
        }
    }

    /// Integer value at `path` as i64 (works on byte arrays too).
    pub fn get_path_i64(&self, path: &str) -> Option<i64> {
        match self.get_path_scalar(path)? {
            ScalarRef::Byte(b) => Some(b as i64),
            ScalarRef::Value(v) => v.as_i64(),
        }
    }

    /// A `builtin_interfaces/Time`/`Duration`-shaped value at `path` in ns.
    pub fn get_path_time_ns(&self, path: &str) -> Option<i64> {
        self.get_path(path)?.as_time_ns()
    }

    /// Field `name` of a struct value; `None` for other values or a missing field.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Struct(s) => s.get(name),
            _ => None,
        }
    }

    /// The struct, if this is one.
    pub fn as_struct(&self) -> Option<&StructValue> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }

    /// The elements, if this is a [`Value::Array`] (not [`Value::Bytes`]).
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The raw bytes, if this is a [`Value::Bytes`].
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The text, if this is a [`Value::String`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The bool, if this is a [`Value::Bool`].
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Any integer that fits in i64 (bools excluded).
    pub fn as_i64(&self) -> Option<i64> {
        Some(match *self {
            Value::I8(v) => v as i64,
            Value::U8(v) => v as i64,
            Value::I16(v) => v as i64,
            Value::U16(v) => v as i64,
            Value::I32(v) => v as i64,
            Value::U32(v) => v as i64,
            Value::I64(v) => v,
            Value::U64(v) => i64::try_from(v).ok()?,
            _ => return None,
        })
    }

    /// Any non-negative integer as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(v) => Some(v),
            _ => self.as_i64().and_then(|v| u64::try_from(v).ok()),
        }
    }

    /// Any number as f64 (may round 64-bit integers).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            Value::U64(v) => Some(v as f64),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// Array of numbers as f64s (also byte arrays).
    pub fn to_f64_vec(&self) -> Option<Vec<f64>> {
        match self {
            Value::Bytes(b) => Some(b.iter().map(|x| *x as f64).collect()),
            Value::Array(a) => a.iter().map(|v| v.as_f64()).collect(),
            _ => None,
        }
    }

    /// A struct with integer `sec` and `nanosec` fields (Time, Duration) as
    /// i64 nanoseconds.
    pub fn as_time_ns(&self) -> Option<i64> {
        let s = self.as_struct()?;
        let sec = s.get("sec")?.as_i64()?;
        let nsec = s.get("nanosec")?.as_i64()?;
        sec.checked_mul(1_000_000_000)?.checked_add(nsec)
    }
}

enum ScalarRef<'a> {
    Value(&'a Value),
    Byte(u8),
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Bool(v) => s.serialize_bool(*v),
            Value::I8(v) => s.serialize_i8(*v),
            Value::U8(v) => s.serialize_u8(*v),
            Value::I16(v) => s.serialize_i16(*v),
            Value::U16(v) => s.serialize_u16(*v),
            Value::I32(v) => s.serialize_i32(*v),
            Value::U32(v) => s.serialize_u32(*v),
            Value::I64(v) => s.serialize_i64(*v),
            Value::U64(v) => s.serialize_u64(*v),
            Value::F32(v) => s.serialize_f32(*v),
            Value::F64(v) => s.serialize_f64(*v),
            Value::String(v) => s.serialize_str(v),
            // As a list of numbers so JSON output matches other arrays.
            Value::Bytes(b) => {
                let mut seq = s.serialize_seq(Some(b.len()))?;
                for x in b {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for x in a {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Value::Struct(sv) => {
                let mut m = s.serialize_map(Some(sv.len()))?;
                for (k, v) in sv.iter() {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}
