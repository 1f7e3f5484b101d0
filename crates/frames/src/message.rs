//! Messages as table rows: the schema is flattened into columns once (`header.frame_id`,
//! `position`, …), then each row group of decoded [`Value`]s becomes one DataFrame.
//!
//! * nested messages: one column per leaf field, named by its dotted path;
//! * arrays of numbers / strings: a list column, or with `explode` one column per element
//!   (`position_0`, `position_1`, …); fixed and bounded arrays explode to their declared size,
//!   unbounded ones to the longest array of the first row group (later longer arrays are cut and
//!   counted in [`MessageColumns::truncated`], since a file's schema cannot change);
//! * byte arrays (`uint8[]`, `byte[]`, `char[]`): a binary column;
//! * arrays of messages (`points`, `transforms`): JSON text;
//! * CSV (`text_nested`): list and binary columns become text (JSON arrays, hex).

use bagscope_msg::schema::{ArrayKind, BaseType, MessageSchema, Primitive};
use bagscope_msg::Value;
use polars::prelude::*;

use crate::{FramesError, Result};

/// Deepest nesting flattened (schemas are acyclic, this only bounds pathological ones).
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prim {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    Str,
}

impl Prim {
    fn of(p: Primitive) -> Prim {
        use Primitive::*;
        match p {
            Bool => Prim::Bool,
            Byte | Char | UInt8 => Prim::U8,
            Int8 => Prim::I8,
            WChar | UInt16 => Prim::U16,
            Int16 => Prim::I16,
            Int32 => Prim::I32,
            UInt32 => Prim::U32,
            Int64 => Prim::I64,
            UInt64 => Prim::U64,
            Float32 => Prim::F32,
            Float64 => Prim::F64,
        }
    }

    fn dtype(self) -> DataType {
        match self {
            Prim::Bool => DataType::Boolean,
            Prim::I8 => DataType::Int8,
            Prim::I16 => DataType::Int16,
            Prim::I32 => DataType::Int32,
            Prim::I64 => DataType::Int64,
            Prim::U8 => DataType::UInt8,
            Prim::U16 => DataType::UInt16,
            Prim::U32 => DataType::UInt32,
            Prim::U64 => DataType::UInt64,
            Prim::F32 => DataType::Float32,
            Prim::F64 => DataType::Float64,
            Prim::Str => DataType::String,
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Scalar(Prim),
    List(Prim),
    Bytes,
    Json,
    /// `width`: `None` until the first row group fixes it (unbounded sequences).
    Explode {
        prim: Prim,
        width: Option<usize>,
    },
}

#[derive(Debug, Clone)]
struct Leaf {
    name: String,
    path: Vec<String>,
    kind: Kind,
}

/// The flattened columns of one message type.
#[derive(Debug, Clone)]
pub struct MessageColumns {
    leaves: Vec<Leaf>,
    text_nested: bool,
    /// Array elements dropped because an unbounded array was longer than its exploded width.
    pub truncated: u64,
    /// Longest array seen so far per leaf, for widths still to be fixed (see
    /// [`MessageColumns::observe_widths`]).
    seen: Vec<usize>,
}

fn flatten(
    schema: &MessageSchema,
    def_name: &str,
    prefix: &[String],
    explode: bool,
    depth: usize,
    out: &mut Vec<Leaf>,
) {
    let Some(def) = schema.get(def_name) else {
        return;
    };
    for f in &def.fields {
        let mut path = prefix.to_vec();
        path.push(f.name.clone());
        let name = path.join(".");
        let prim = match &f.ty.base {
            BaseType::Primitive(p) => Some(Prim::of(*p)),
            BaseType::String { .. } | BaseType::WString { .. } => Some(Prim::Str),
            BaseType::Message(_) => None,
        };
        let kind = match (f.ty.array, &f.ty.base, prim) {
            (ArrayKind::Single, BaseType::Message(m), _) => {
                if depth < MAX_DEPTH {
                    flatten(schema, m, &path, explode, depth + 1, out);
                }
                continue;
            }
            (ArrayKind::Single, _, Some(p)) => Kind::Scalar(p),
            (_, BaseType::Primitive(p), _) if p.is_byte_like() => Kind::Bytes,
            (a, _, Some(p)) if explode => Kind::Explode {
                prim: p,
                width: match a {
                    ArrayKind::Fixed(n) | ArrayKind::Bounded(n) => Some(n),
                    _ => None,
                },
            },
            (_, _, Some(p)) => Kind::List(p),
            _ => Kind::Json,
        };
        out.push(Leaf { name, path, kind });
    }
}

impl MessageColumns {
    /// Columns of `schema`, restricted to `fields` (dotted paths; a path selects that field and
    /// everything under it; empty: all). A selector that matches nothing is an error naming
    /// the fields that exist.
    pub fn new(
        schema: &MessageSchema,
        fields: &[String],
        explode: bool,
        text_nested: bool,
    ) -> Result<MessageColumns> {
        let mut leaves = Vec::new();
        flatten(schema, schema.name(), &[], explode, 0, &mut leaves);
        if !fields.is_empty() {
            let hit = |l: &Leaf, f: &str| {
                l.name == f
                    || l.name
                        .strip_prefix(f)
                        .is_some_and(|rest| rest.starts_with('.'))
            };
            for f in fields {
                if !leaves.iter().any(|l| hit(l, f)) {
                    return Err(FramesError::Usage(format!(
                        "{}: no field '{f}' (fields: {})",
                        schema.name(),
                        leaves
                            .iter()
                            .map(|l| l.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
            // Keep schema order, not selector order: output is the same whatever the order
            // of --fields.
            leaves.retain(|l| fields.iter().any(|f| hit(l, f)));
        }
        Ok(MessageColumns {
            leaves,
            text_nested,
            truncated: 0,
            seen: Vec::new(),
        })
    }

    /// No field columns (a topic without a usable schema: times only).
    pub fn empty(text_nested: bool) -> MessageColumns {
        MessageColumns {
            leaves: Vec::new(),
            text_nested,
            truncated: 0,
            seen: Vec::new(),
        }
    }

    /// A row group: the `base` columns (times) followed by the message's columns.
    pub fn frame(
        &mut self,
        base: Vec<(String, crate::Col)>,
        rows: &[Option<&Value>],
    ) -> Result<DataFrame> {
        frame_with_messages(base, &mut [(self, rows)])
    }

    /// The same columns with their names under `prefix` (`/camera/left/image_raw.height`).
    pub fn prefixed(mut self, prefix: &str) -> MessageColumns {
        for l in &mut self.leaves {
            l.name = format!("{prefix}.{}", l.name);
        }
        self
    }

    /// Whether an exploded column still waits for its width (fixed by the first row group).
    pub fn widths_pending(&self) -> bool {
        self.leaves
            .iter()
            .any(|l| matches!(l.kind, Kind::Explode { width: None, .. }))
    }

    /// Records the longest array of each exploded column among `rows`, so that a first row
    /// group built in several parts gets the width of the whole group: call it on every part,
    /// then [`MessageColumns::fix_widths`], then build the parts.
    pub fn observe_widths(&mut self, rows: &[Option<&Value>]) {
        self.seen.resize(self.leaves.len(), 0);
        for (l, seen) in self.leaves.iter().zip(self.seen.iter_mut()) {
            if matches!(l.kind, Kind::Explode { width: None, .. }) {
                for r in rows.iter().flatten() {
                    if let Some(c) = at(r, &l.path) {
                        *seen = (*seen).max(elem_count(c));
                    }
                }
            }
        }
    }

    /// Fixes every pending width to what [`MessageColumns::observe_widths`] saw.
    pub fn fix_widths(&mut self) {
        self.seen.resize(self.leaves.len(), 0);
        for (l, &seen) in self.leaves.iter_mut().zip(&self.seen) {
            if let Kind::Explode { width, .. } = &mut l.kind {
                width.get_or_insert(seen);
            }
        }
    }

    /// Names of the columns (exploded ones as `name_i` once their width is known).
    pub fn names(&self) -> Vec<String> {
        let mut v = Vec::new();
        for l in &self.leaves {
            match &l.kind {
                Kind::Explode { width, .. } => {
                    for i in 0..width.unwrap_or(0) {
                        v.push(format!("{}_{i}", l.name));
                    }
                }
                _ => v.push(l.name.clone()),
            }
        }
        v
    }

    /// Columns of one row group, in schema order. `None` rows (undecodable messages) are null
    /// in every column.
    pub fn columns(&mut self, rows: &[Option<&Value>]) -> Result<Vec<Column>> {
        let mut out = Vec::new();
        let text = self.text_nested;
        for l in &mut self.leaves {
            let cells: Vec<Option<&Value>> = rows
                .iter()
                .map(|r| r.and_then(|v| at(v, &l.path)))
                .collect();
            let name: PlSmallStr = l.name.as_str().into();
            match &mut l.kind {
                Kind::Scalar(p) => out.push(scalar_column(name, *p, &cells)),
                Kind::Bytes if text => {
                    let v: Vec<Option<String>> = cells
                        .iter()
                        .map(|c| c.and_then(bytes_of).map(hex))
                        .collect();
                    out.push(Column::new(name, v));
                }
                Kind::Bytes => {
                    let v: Vec<Option<Vec<u8>>> = cells
                        .iter()
                        .map(|c| c.and_then(bytes_of).map(<[u8]>::to_vec))
                        .collect();
                    out.push(Column::new(name, v));
                }
                Kind::List(_) | Kind::Json if text => out.push(json_column(name, &cells)),
                Kind::Json => out.push(json_column(name, &cells)),
                Kind::List(p) => out.push(list_column(name, *p, &cells)?),
                Kind::Explode { prim, width } => {
                    let w = *width.get_or_insert_with(|| {
                        cells
                            .iter()
                            .map(|c| c.map_or(0, elem_count))
                            .max()
                            .unwrap_or(0)
                    });
                    for i in 0..w {
                        let elems: Vec<Option<&Value>> =
                            cells.iter().map(|c| c.and_then(|v| elem(v, i))).collect();
                        out.push(scalar_column(
                            format!("{}_{i}", l.name).into(),
                            *prim,
                            &elems,
                        ));
                    }
                    for c in cells.iter().flatten() {
                        self.truncated += elem_count(c).saturating_sub(w) as u64;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A row group: the `base` columns followed by the columns of each message part, every part
/// over the same rows (a `None` row is null in every column of its part).
pub fn frame_with_messages(
    base: Vec<(String, crate::Col)>,
    parts: &mut [(&mut MessageColumns, &[Option<&Value>])],
) -> Result<DataFrame> {
    let height = parts
        .first()
        .map(|p| p.1.len())
        .or_else(|| base.first().map(|(_, c)| c.len()))
        .unwrap_or(0);
    let mut columns: Vec<Column> = Vec::new();
    for (n, c) in base {
        if c.len() != height {
            return Err(FramesError::Usage(format!(
                "column {n} has {} rows, expected {height}",
                c.len()
            )));
        }
        columns.push(c.into_column(&n));
    }
    for (mc, rows) in parts.iter_mut() {
        if rows.len() != height {
            return Err(FramesError::Usage(format!(
                "{} message rows, expected {height}",
                rows.len()
            )));
        }
        columns.extend(mc.columns(rows)?);
    }
    // A message field flattened to the name of a base column (a top-level field `index` of
    // topic T beside the base column `T.index`) is refused by name, not by polars' generic error.
    let mut seen = std::collections::HashSet::new();
    for c in &columns {
        if !seen.insert(c.name().as_str()) {
            return Err(FramesError::Usage(format!(
                "two columns would be named {}: a message field flattens to the name of another column",
                c.name()
            )));
        }
    }
    Ok(DataFrame::new(height, columns)?)
}

fn at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.field(p)?;
    }
    Some(cur)
}

fn elem_count(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.len(),
        Value::Bytes(b) => b.len(),
        _ => 0,
    }
}

fn elem(v: &Value, i: usize) -> Option<&Value> {
    v.as_array()?.get(i)
}

fn bytes_of(v: &Value) -> Option<&[u8]> {
    v.as_bytes()
}

fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn json_column(name: PlSmallStr, cells: &[Option<&Value>]) -> Column {
    let v: Vec<Option<String>> = cells
        .iter()
        .map(|c| c.and_then(|v| serde_json::to_string(v).ok()))
        .collect();
    Column::new(name, v)
}

/// Values converted to the column's type; a value of another shape (which a well-formed
/// decode never gives) is null rather than a panic.
fn scalar_column(name: PlSmallStr, p: Prim, cells: &[Option<&Value>]) -> Column {
    macro_rules! ints {
        ($t:ty) => {{
            let v: Vec<Option<$t>> = cells
                .iter()
                .map(|c| {
                    c.and_then(|v| v.as_i64())
                        .and_then(|x| <$t>::try_from(x).ok())
                })
                .collect();
            Column::new(name, v)
        }};
    }
    match p {
        Prim::Bool => {
            let v: Vec<Option<bool>> = cells.iter().map(|c| c.and_then(Value::as_bool)).collect();
            Column::new(name, v)
        }
        Prim::I8 => ints!(i8),
        Prim::I16 => ints!(i16),
        Prim::I32 => ints!(i32),
        Prim::I64 => ints!(i64),
        Prim::U8 => ints!(u8),
        Prim::U16 => ints!(u16),
        Prim::U32 => ints!(u32),
        Prim::U64 => {
            let v: Vec<Option<u64>> = cells.iter().map(|c| c.and_then(Value::as_u64)).collect();
            Column::new(name, v)
        }
        Prim::F32 => {
            let v: Vec<Option<f32>> = cells
                .iter()
                .map(|c| c.and_then(Value::as_f64).map(|x| x as f32))
                .collect();
            Column::new(name, v)
        }
        Prim::F64 => {
            let v: Vec<Option<f64>> = cells.iter().map(|c| c.and_then(Value::as_f64)).collect();
            Column::new(name, v)
        }
        Prim::Str => {
            let v: Vec<Option<&str>> = cells.iter().map(|c| c.and_then(Value::as_str)).collect();
            let ca: StringChunked = v.into_iter().collect();
            ca.with_name(name).into_column()
        }
    }
}

fn list_column(name: PlSmallStr, p: Prim, cells: &[Option<&Value>]) -> Result<Column> {
    let values: usize = cells.iter().map(|c| c.map_or(0, elem_count)).sum();
    let mut b = polars::chunked_array::builder::get_list_builder(
        &p.dtype(),
        values,
        cells.len(),
        name.clone(),
    );
    for c in cells {
        match c.and_then(|v| v.as_array()) {
            Some(a) => {
                let refs: Vec<Option<&Value>> = a.iter().map(Some).collect();
                let s = scalar_column(PlSmallStr::EMPTY, p, &refs);
                b.append_series(s.as_materialized_series())?;
            }
            None => b.append_null(),
        }
    }
    Ok(b.finish().with_name(name).into_column())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bagscope_msg::schema::parse_ros2msg;

    #[test]
    fn a_field_flattened_onto_a_base_column_name_is_refused_by_name() {
        let schema = parse_ros2msg("pkg/msg/Odd", "int64 index\nfloat64 value\n").unwrap();
        let mut mc = MessageColumns::new(&schema, &[], false, false)
            .unwrap()
            .prefixed("/t");
        let base = vec![("/t.index".to_string(), crate::Col::I64(vec![Some(1)]))];
        let rows: Vec<Option<&Value>> = vec![None];
        let err = frame_with_messages(base.clone(), &mut [(&mut mc, &rows[..])]).unwrap_err();
        assert!(err.to_string().contains("/t.index"), "{err}");
        // Without the clash the same columns make a frame.
        let base = vec![("/t.other".to_string(), crate::Col::I64(vec![Some(1)]))];
        let df = frame_with_messages(base, &mut [(&mut mc, &rows[..])]).unwrap();
        assert_eq!(df.width(), 3);
    }
}
