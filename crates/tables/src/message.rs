//! Messages as table rows: the schema is flattened into columns once (`header.frame_id`,
//! `position`, …), each message is decoded straight into them
//! ([`bagscope_msg::leaves::LeafDecoder`], no value tree), and the rows gathered become one
//! DataFrame per row group.
//!
//! * nested messages: one column per leaf field, named by its dotted path;
//! * arrays of numbers / strings: a list column, or with `explode` one column per element
//!   (`position_0`, `position_1`, …); fixed and bounded arrays explode to their declared size,
//!   unbounded ones to the longest array of the first row group (later longer arrays are cut and
//!   counted in [`MessageColumns::truncated`], since a file's schema cannot change);
//! * byte arrays (`uint8[]`, `byte[]`, `char[]`): a binary column;
//! * arrays of messages (`points`, `transforms`): JSON text;
//! * CSV (`text_nested`): list and binary columns become text (JSON arrays, hex).
//!
//! A message that does not decode is a row that is null in every column.

use std::sync::Arc;

use bagscope_msg::leaves::{LeafDecoder, LeafSink, LeafUse, Scalar};
use bagscope_msg::schema::{ArrayKind, BaseType, MessageSchema, Primitive};
use bagscope_msg::{DecodeError, Value};
use polars::prelude::*;

use crate::{FramesError, Result};

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
    /// Its index among the decoder's leaves.
    leaf: usize,
    kind: Kind,
}

/// Values of one column (or the elements of a list column), appended message by message.
#[derive(Debug, Clone)]
enum Vals {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Strings (or byte arrays): their bytes one after the other, and where each ends.
    Bin {
        data: Vec<u8>,
        ends: Vec<usize>,
    },
    /// JSON text of value trees (`None`: not serialisable).
    Json(Vec<Option<String>>),
}

macro_rules! each_vals {
    ($v:expr, $x:ident => $e:expr, bin($d:ident, $n:ident) => $b:expr, json($j:ident) => $js:expr) => {
        match $v {
            Vals::Bool($x) => $e,
            Vals::I8($x) => $e,
            Vals::I16($x) => $e,
            Vals::I32($x) => $e,
            Vals::I64($x) => $e,
            Vals::U8($x) => $e,
            Vals::U16($x) => $e,
            Vals::U32($x) => $e,
            Vals::U64($x) => $e,
            Vals::F32($x) => $e,
            Vals::F64($x) => $e,
            Vals::Bin { data: $d, ends: $n } => $b,
            Vals::Json($j) => $js,
        }
    };
}

impl Vals {
    fn new(p: Prim) -> Vals {
        match p {
            Prim::Bool => Vals::Bool(Vec::new()),
            Prim::I8 => Vals::I8(Vec::new()),
            Prim::I16 => Vals::I16(Vec::new()),
            Prim::I32 => Vals::I32(Vec::new()),
            Prim::I64 => Vals::I64(Vec::new()),
            Prim::U8 => Vals::U8(Vec::new()),
            Prim::U16 => Vals::U16(Vec::new()),
            Prim::U32 => Vals::U32(Vec::new()),
            Prim::U64 => Vals::U64(Vec::new()),
            Prim::F32 => Vals::F32(Vec::new()),
            Prim::F64 => Vals::F64(Vec::new()),
            Prim::Str => Vals::Bin {
                data: Vec::new(),
                ends: Vec::new(),
            },
        }
    }

    fn len(&self) -> usize {
        each_vals!(self, v => v.len(), bin(_d, e) => e.len(), json(j) => j.len())
    }

    fn truncate(&mut self, n: usize) {
        each_vals!(self, v => v.truncate(n), bin(d, e) => {
            e.truncate(n);
            d.truncate(e.last().copied().unwrap_or(0));
        }, json(j) => j.truncate(n))
    }

    /// An empty (or zero) value: the placeholder of a null cell.
    fn push_empty(&mut self) {
        each_vals!(self, v => v.push(Default::default()), bin(d, e) => e.push(d.len()), json(j) => j.push(None))
    }

    fn push_bytes(&mut self, b: &[u8]) {
        if let Vals::Bin { data, ends } = self {
            data.extend_from_slice(b);
            ends.push(data.len());
        }
    }

    /// A decoded value; one of another type (which the column's own schema never gives) is
    /// stored as the empty value.
    fn push(&mut self, s: Scalar<'_>) {
        match (self, s) {
            (Vals::Bool(v), Scalar::Bool(x)) => v.push(x),
            (Vals::I8(v), Scalar::I8(x)) => v.push(x),
            (Vals::I16(v), Scalar::I16(x)) => v.push(x),
            (Vals::I32(v), Scalar::I32(x)) => v.push(x),
            (Vals::I64(v), Scalar::I64(x)) => v.push(x),
            (Vals::U8(v), Scalar::U8(x)) => v.push(x),
            (Vals::U16(v), Scalar::U16(x)) => v.push(x),
            (Vals::U32(v), Scalar::U32(x)) => v.push(x),
            (Vals::U64(v), Scalar::U64(x)) => v.push(x),
            (Vals::F32(v), Scalar::F32(x)) => v.push(x),
            (Vals::F64(v), Scalar::F64(x)) => v.push(x),
            (v @ Vals::Bin { .. }, Scalar::Str(x)) => v.push_bytes(x.as_bytes()),
            (v, _) => v.push_empty(),
        }
    }

    fn str_at(&self, i: usize) -> &str {
        match self {
            Vals::Bin { data, ends } => {
                let a = if i == 0 { 0 } else { ends[i - 1] };
                // Only strings are stored as text cells (pushed from `&str`).
                std::str::from_utf8(&data[a..ends[i]]).unwrap_or_default()
            }
            _ => "",
        }
    }

    fn bytes_at(&self, i: usize) -> &[u8] {
        match self {
            Vals::Bin { data, ends } => {
                let a = if i == 0 { 0 } else { ends[i - 1] };
                &data[a..ends[i]]
            }
            _ => &[],
        }
    }

    /// Appends `other`'s values.
    fn append(&mut self, other: Vals) {
        match (self, other) {
            (Vals::Bin { data, ends }, Vals::Bin { data: d2, ends: e2 }) => {
                let base = data.len();
                data.extend_from_slice(&d2);
                ends.extend(e2.into_iter().map(|e| e + base));
            }
            (Vals::Bool(a), Vals::Bool(b)) => a.extend(b),
            (Vals::I8(a), Vals::I8(b)) => a.extend(b),
            (Vals::I16(a), Vals::I16(b)) => a.extend(b),
            (Vals::I32(a), Vals::I32(b)) => a.extend(b),
            (Vals::I64(a), Vals::I64(b)) => a.extend(b),
            (Vals::U8(a), Vals::U8(b)) => a.extend(b),
            (Vals::U16(a), Vals::U16(b)) => a.extend(b),
            (Vals::U32(a), Vals::U32(b)) => a.extend(b),
            (Vals::U64(a), Vals::U64(b)) => a.extend(b),
            (Vals::F32(a), Vals::F32(b)) => a.extend(b),
            (Vals::F64(a), Vals::F64(b)) => a.extend(b),
            (Vals::Json(a), Vals::Json(b)) => a.extend(b),
            _ => {}
        }
    }
}

/// One column's rows so far.
#[derive(Debug, Clone)]
struct Acc {
    /// One value per row (scalars, bytes, JSON), or every element (lists, exploded arrays).
    vals: Vals,
    /// Lists and exploded arrays: where each row's elements end in `vals`.
    ends: Option<Vec<usize>>,
    /// Whether each row decoded.
    valid: Vec<bool>,
}

impl Acc {
    /// `text`: CSV, where lists come as value trees (written as JSON text).
    fn new(kind: &Kind, text: bool) -> Acc {
        let (vals, seq) = match kind {
            Kind::List(_) if text => (Vals::Json(Vec::new()), false),
            Kind::Scalar(p) => (Vals::new(*p), false),
            Kind::List(p) | Kind::Explode { prim: p, .. } => (Vals::new(*p), true),
            Kind::Bytes => (Vals::new(Prim::Str), false),
            Kind::Json => (Vals::Json(Vec::new()), false),
        };
        Acc {
            vals,
            ends: seq.then(Vec::new),
            valid: Vec::new(),
        }
    }

    /// The row being decoded is complete.
    fn commit(&mut self) {
        if let Some(e) = &mut self.ends {
            e.push(self.vals.len());
        }
        self.valid.push(true);
    }

    /// The row being decoded failed: drop what it gave, and make it null.
    fn null_row(&mut self) {
        let rows = self.valid.len();
        match &mut self.ends {
            Some(e) => {
                self.vals.truncate(e.last().copied().unwrap_or(0));
                e.push(self.vals.len());
            }
            None => {
                self.vals.truncate(rows);
                self.vals.push_empty();
            }
        }
        self.valid.push(false);
    }

    /// Row `i`'s elements (lists and exploded arrays).
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        match &self.ends {
            Some(e) => (if i == 0 { 0 } else { e[i - 1] })..e[i],
            None => i..i + 1,
        }
    }

    fn append(&mut self, other: Acc) {
        if let (Some(a), Some(b)) = (&mut self.ends, other.ends) {
            let base = self.vals.len();
            a.extend(b.into_iter().map(|e| e + base));
        }
        self.vals.append(other.vals);
        self.valid.extend(other.valid);
    }
}

/// Feeds a decoded message into the accumulators.
struct Fill<'a> {
    accs: &'a mut [Acc],
    /// Per decoder leaf, its column (leaves not selected are skipped by the decoder).
    col_of: &'a [usize],
    text: bool,
}

impl LeafSink for Fill<'_> {
    fn scalar(&mut self, leaf: usize, v: Scalar<'_>) {
        self.accs[self.col_of[leaf]].vals.push(v);
    }

    fn seq(&mut self, _leaf: usize, _len: usize) {}

    fn bytes(&mut self, leaf: usize, b: &[u8]) {
        let a = &mut self.accs[self.col_of[leaf]];
        if self.text {
            a.vals.push_bytes(hex(b).as_bytes());
        } else {
            a.vals.push_bytes(b);
        }
    }

    fn tree(&mut self, leaf: usize, v: Value) {
        if let Vals::Json(j) = &mut self.accs[self.col_of[leaf]].vals {
            j.push(serde_json::to_string(&v).ok());
        }
    }
}

/// The flattened columns of one message type, and the rows decoded into them since the last
/// [`MessageColumns::frame`].
#[derive(Debug, Clone)]
pub struct MessageColumns {
    leaves: Vec<Leaf>,
    decoder: Option<Arc<LeafDecoder>>,
    col_of: Arc<[usize]>,
    text_nested: bool,
    /// Array elements dropped because an unbounded array was longer than its exploded width.
    pub truncated: u64,
    accs: Vec<Acc>,
    rows: usize,
}

fn kind_of(base: &BaseType, array: ArrayKind, explode: bool) -> Kind {
    let prim = match base {
        BaseType::Primitive(p) => Some(Prim::of(*p)),
        BaseType::String { .. } | BaseType::WString { .. } => Some(Prim::Str),
        BaseType::Message(_) => None,
    };
    match (array, base, prim) {
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
        let mut decoder = LeafDecoder::new(schema);
        let mut leaves: Vec<Leaf> = decoder
            .leaves()
            .iter()
            .enumerate()
            .map(|(i, l)| Leaf {
                name: l.name(),
                leaf: i,
                kind: kind_of(&l.base, l.array, explode),
            })
            .collect();
        if !fields.is_empty() {
            let hit = |l: &Leaf, f: &str| {
                l.name == f
                    || l.name
                        .strip_prefix(f)
                        .is_some_and(|rest| rest.starts_with('.'))
            };
            for f in fields {
                // The one field-path rule first (its error names the fields where the path
                // fails), then what a column can select: a path without indexes.
                schema
                    .resolve_path(f)
                    .map_err(|e| FramesError::Usage(e.to_string()))?;
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
        let mut col_of = vec![usize::MAX; decoder.leaves().len()];
        for (c, l) in leaves.iter().enumerate() {
            col_of[l.leaf] = c;
            let text = text_nested;
            decoder.set_use(
                l.leaf,
                match l.kind {
                    Kind::Json => LeafUse::Tree,
                    Kind::List(_) if text => LeafUse::Tree,
                    _ => LeafUse::Values,
                },
            );
        }
        let accs = leaves
            .iter()
            .map(|l| Acc::new(&l.kind, text_nested))
            .collect();
        Ok(MessageColumns {
            leaves,
            decoder: Some(Arc::new(decoder)),
            col_of: col_of.into(),
            text_nested,
            truncated: 0,
            accs,
            rows: 0,
        })
    }

    /// No field columns (a topic without a usable schema: times only).
    pub fn empty(text_nested: bool) -> MessageColumns {
        MessageColumns {
            leaves: Vec::new(),
            decoder: None,
            col_of: Arc::new([]),
            text_nested,
            truncated: 0,
            accs: Vec::new(),
            rows: 0,
        }
    }

    /// The same columns with no rows (to decode part of a row group on another thread, then
    /// [`MessageColumns::append`]).
    pub fn fork(&self) -> MessageColumns {
        MessageColumns {
            accs: self
                .leaves
                .iter()
                .map(|l| Acc::new(&l.kind, self.text_nested))
                .collect(),
            rows: 0,
            truncated: 0,
            ..self.clone_shape()
        }
    }

    fn clone_shape(&self) -> MessageColumns {
        MessageColumns {
            leaves: self.leaves.clone(),
            decoder: self.decoder.clone(),
            col_of: self.col_of.clone(),
            text_nested: self.text_nested,
            truncated: self.truncated,
            accs: Vec::new(),
            rows: 0,
        }
    }

    /// Appends `other`'s rows (a [`MessageColumns::fork`] of these columns) after these.
    pub fn append(&mut self, other: MessageColumns) {
        for (a, b) in self.accs.iter_mut().zip(other.accs) {
            a.append(b);
        }
        self.rows += other.rows;
    }

    /// Rows decoded since the last frame.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Decodes one message (encapsulation header included) as the next row; one that does
    /// not decode is a null row (and the error is returned).
    pub fn push(&mut self, payload: &[u8]) -> std::result::Result<(), DecodeError> {
        let Some(d) = &self.decoder else {
            self.rows += 1;
            return Ok(());
        };
        let mut sink = Fill {
            accs: &mut self.accs,
            col_of: &self.col_of,
            text: self.text_nested,
        };
        let r = d.decode(payload, &mut sink);
        match &r {
            Ok(()) => self.accs.iter_mut().for_each(Acc::commit),
            Err(_) => self.accs.iter_mut().for_each(Acc::null_row),
        }
        self.rows += 1;
        r
    }

    /// A row that is null in every column (a message that was not decoded).
    pub fn push_null(&mut self) {
        self.accs.iter_mut().for_each(Acc::null_row);
        self.rows += 1;
    }

    /// The rows decoded since the last frame as one row group: the `base` columns (times,
    /// one value per row) followed by the message's columns. Exploded widths still open are
    /// fixed by these rows.
    pub fn frame(&mut self, base: Vec<(String, crate::Col)>) -> Result<DataFrame> {
        frame_with_messages(base, &mut [self])
    }

    /// The same columns with their names under `prefix` (`/camera/left/image_raw.height`).
    pub fn prefixed(mut self, prefix: &str) -> MessageColumns {
        for l in &mut self.leaves {
            l.name = format!("{prefix}.{}", l.name);
        }
        self
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

    /// Columns of the rows so far, in schema order; they are taken (the next row group starts
    /// empty).
    fn columns(&mut self) -> Result<Vec<Column>> {
        let mut out = Vec::new();
        let text = self.text_nested;
        let rows = std::mem::take(&mut self.rows);
        for (l, acc) in self.leaves.iter_mut().zip(self.accs.iter_mut()) {
            let a = std::mem::replace(acc, Acc::new(&l.kind, text));
            let name: PlSmallStr = l.name.as_str().into();
            match &mut l.kind {
                Kind::Scalar(_) => out.push(scalar_column(name, a.vals, &a.valid)),
                Kind::Bytes if text => out.push(str_column(name, &a.vals, &a.valid)),
                Kind::Bytes => {
                    let ca: BinaryChunked = (0..rows)
                        .map(|i| a.valid[i].then(|| a.vals.bytes_at(i)))
                        .collect();
                    out.push(ca.with_name(name).into_column());
                }
                Kind::Json => out.push(json_cells(name, &a)),
                // CSV: lists come as trees, written as JSON text.
                Kind::List(_) if text => out.push(json_cells(name, &a)),
                Kind::List(p) => out.push(list_column(name, *p, &a, rows)),
                Kind::Explode { prim, width } => {
                    let w = *width.get_or_insert_with(|| {
                        (0..rows)
                            .filter(|&i| a.valid[i])
                            .map(|i| a.range(i).len())
                            .max()
                            .unwrap_or(0)
                    });
                    for k in 0..w {
                        let idx: Vec<Option<usize>> = (0..rows)
                            .map(|i| {
                                let r = a.range(i);
                                (a.valid[i] && k < r.len()).then_some(r.start + k)
                            })
                            .collect();
                        out.push(gather_column(
                            format!("{}_{k}", l.name).into(),
                            *prim,
                            &a.vals,
                            &idx,
                        ));
                    }
                    for i in 0..rows {
                        if a.valid[i] {
                            self.truncated += a.range(i).len().saturating_sub(w) as u64;
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A row group: the `base` columns followed by the columns of each message part (its rows
/// decoded since its last frame), every part over the same rows.
pub fn frame_with_messages(
    base: Vec<(String, crate::Col)>,
    parts: &mut [&mut MessageColumns],
) -> Result<DataFrame> {
    let height = parts
        .first()
        .map(|p| p.rows)
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
    for mc in parts.iter_mut() {
        if mc.rows != height {
            return Err(FramesError::Usage(format!(
                "{} message rows, expected {height}",
                mc.rows
            )));
        }
        columns.extend(mc.columns()?);
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

fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

/// A text column from stored strings (one per row).
fn str_column(name: PlSmallStr, vals: &Vals, valid: &[bool]) -> Column {
    let ca: StringChunked = valid
        .iter()
        .enumerate()
        .map(|(i, ok)| ok.then(|| vals.str_at(i)))
        .collect();
    ca.with_name(name).into_column()
}

/// CSV list cells: JSON text of each row's value tree.
fn json_cells(name: PlSmallStr, a: &Acc) -> Column {
    match &a.vals {
        Vals::Json(j) => {
            let ca: StringChunked = j
                .iter()
                .zip(&a.valid)
                .map(|(s, ok)| s.as_deref().filter(|_| *ok))
                .collect();
            ca.with_name(name).into_column()
        }
        _ => Column::full_null(name, a.valid.len(), &DataType::String),
    }
}

/// One value per row, null where the row did not decode.
fn scalar_column(name: PlSmallStr, vals: Vals, valid: &[bool]) -> Column {
    let all = valid.iter().all(|&v| v);
    macro_rules! typed {
        ($v:expr) => {{
            let v = $v;
            if all {
                Column::new(name, v)
            } else {
                let o: Vec<Option<_>> = v
                    .into_iter()
                    .zip(valid)
                    .map(|(x, ok)| ok.then_some(x))
                    .collect();
                Column::new(name, o)
            }
        }};
    }
    match vals {
        Vals::Bool(v) => typed!(v),
        Vals::I8(v) => typed!(v),
        Vals::I16(v) => typed!(v),
        Vals::I32(v) => typed!(v),
        Vals::I64(v) => typed!(v),
        Vals::U8(v) => typed!(v),
        Vals::U16(v) => typed!(v),
        Vals::U32(v) => typed!(v),
        Vals::U64(v) => typed!(v),
        Vals::F32(v) => typed!(v),
        Vals::F64(v) => typed!(v),
        v @ Vals::Bin { .. } => str_column(name, &v, valid),
        Vals::Json(j) => {
            let ca: StringChunked = j
                .iter()
                .zip(valid)
                .map(|(s, ok)| s.as_deref().filter(|_| *ok))
                .collect();
            ca.with_name(name).into_column()
        }
    }
}

/// Elements picked by index (`None`: null), as one column.
fn gather_column(name: PlSmallStr, p: Prim, vals: &Vals, idx: &[Option<usize>]) -> Column {
    macro_rules! pick {
        ($v:expr) => {{
            let o: Vec<Option<_>> = idx.iter().map(|i| i.map(|i| $v[i])).collect();
            Column::new(name, o)
        }};
    }
    match vals {
        Vals::Bool(v) => pick!(v),
        Vals::I8(v) => pick!(v),
        Vals::I16(v) => pick!(v),
        Vals::I32(v) => pick!(v),
        Vals::I64(v) => pick!(v),
        Vals::U8(v) => pick!(v),
        Vals::U16(v) => pick!(v),
        Vals::U32(v) => pick!(v),
        Vals::U64(v) => pick!(v),
        Vals::F32(v) => pick!(v),
        Vals::F64(v) => pick!(v),
        Vals::Bin { .. } => {
            let ca: StringChunked = idx.iter().map(|i| i.map(|i| vals.str_at(i))).collect();
            ca.with_name(name).into_column()
        }
        Vals::Json(_) => Column::full_null(name, idx.len(), &p.dtype()),
    }
}

/// A list column: each row's elements, null where the row did not decode.
fn list_column(name: PlSmallStr, p: Prim, a: &Acc, rows: usize) -> Column {
    let n = a.vals.len();
    macro_rules! prim_list {
        ($t:ty, $v:expr) => {{
            let mut b = ListPrimitiveChunkedBuilder::<$t>::new(name.clone(), rows, n, p.dtype());
            for i in 0..rows {
                if a.valid[i] {
                    b.append_slice(&$v[a.range(i)]);
                } else {
                    b.append_null();
                }
            }
            b.finish().into_column()
        }};
    }
    match &a.vals {
        Vals::I8(v) => prim_list!(Int8Type, v),
        Vals::I16(v) => prim_list!(Int16Type, v),
        Vals::I32(v) => prim_list!(Int32Type, v),
        Vals::I64(v) => prim_list!(Int64Type, v),
        Vals::U8(v) => prim_list!(UInt8Type, v),
        Vals::U16(v) => prim_list!(UInt16Type, v),
        Vals::U32(v) => prim_list!(UInt32Type, v),
        Vals::U64(v) => prim_list!(UInt64Type, v),
        Vals::F32(v) => prim_list!(Float32Type, v),
        Vals::F64(v) => prim_list!(Float64Type, v),
        Vals::Bool(v) => {
            let mut b = ListBooleanChunkedBuilder::new(name.clone(), rows, n);
            for i in 0..rows {
                if a.valid[i] {
                    b.append_iter(v[a.range(i)].iter().map(|x| Some(*x)));
                } else {
                    b.append_null();
                }
            }
            b.finish().into_column()
        }
        vals @ Vals::Bin { .. } => {
            let mut b = ListStringChunkedBuilder::new(name.clone(), rows, n);
            for i in 0..rows {
                if a.valid[i] {
                    b.append_values_iter(a.range(i).map(|k| vals.str_at(k)));
                } else {
                    b.append_null();
                }
            }
            b.finish().into_column()
        }
        Vals::Json(_) => Column::full_null(name, rows, &DataType::List(Box::new(p.dtype()))),
    }
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
        mc.push_null();
        let base = vec![("/t.index".to_string(), crate::Col::I64(vec![Some(1)]))];
        let err = frame_with_messages(base, &mut [&mut mc]).unwrap_err();
        assert!(err.to_string().contains("/t.index"), "{err}");
        // Without the clash the same columns make a frame.
        mc.push_null();
        let base = vec![("/t.other".to_string(), crate::Col::I64(vec![Some(1)]))];
        let df = frame_with_messages(base, &mut [&mut mc]).unwrap();
        assert_eq!(df.width(), 3);
    }
}
