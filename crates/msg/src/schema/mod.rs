//! Message schemas: the data model, parsers for the two MCAP schema encodings
//! rosbag2 writes (`ros2msg`, `ros2idl`), service-event schemas, and built-in
//! definitions for common types.

pub mod builtin;
mod ros2idl;
mod ros2msg;

pub use ros2idl::parse_ros2idl;
pub use ros2msg::{parse_ros2msg, parse_service_event};

use crate::error::{FieldPathError, SchemaError};
use crate::stamp::StampLocator;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Fixed-size primitive types of the ROS 2 type system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `byte` (ros2msg) / `octet` (IDL): an opaque 8-bit value.
    Byte,
    /// `char` (ros2msg and IDL): 8 bits in ROS 2.
    Char,
    /// IDL `wchar`: 16 bits on the wire.
    WChar,
    /// `int8`.
    Int8,
    /// `uint8`.
    UInt8,
    /// `int16`.
    Int16,
    /// `uint16`.
    UInt16,
    /// `int32`.
    Int32,
    /// `uint32`.
    UInt32,
    /// `int64`.
    Int64,
    /// `uint64`.
    UInt64,
    /// `float32` (IDL `float`).
    Float32,
    /// `float64` (IDL `double`).
    Float64,
}

impl Primitive {
    /// Size on the wire, which is also its CDR alignment.
    pub fn size(self) -> usize {
        use Primitive::*;
        match self {
            Bool | Byte | Char | Int8 | UInt8 => 1,
            WChar | Int16 | UInt16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 => 8,
        }
    }

    /// Parse a ros2msg primitive type name.
    pub fn from_msg_name(s: &str) -> Option<Self> {
        use Primitive::*;
        Some(match s {
            "bool" => Bool,
            "byte" => Byte,
            "char" => Char,
            "int8" => Int8,
            "uint8" => UInt8,
            "int16" => Int16,
            "uint16" => UInt16,
            "int32" => Int32,
            "uint32" => UInt32,
            "int64" => Int64,
            "uint64" => UInt64,
            "float32" => Float32,
            "float64" => Float64,
            _ => return None,
        })
    }

    /// The ros2msg spelling.
    pub fn msg_name(self) -> &'static str {
        use Primitive::*;
        match self {
            Bool => "bool",
            Byte => "byte",
            Char => "char",
            WChar => "wchar",
            Int8 => "int8",
            UInt8 => "uint8",
            Int16 => "int16",
            UInt16 => "uint16",
            Int32 => "int32",
            UInt32 => "uint32",
            Int64 => "int64",
            UInt64 => "uint64",
            Float32 => "float32",
            Float64 => "float64",
        }
    }

    /// Types decoded into [`crate::value::Value::Bytes`] when in an array.
    pub fn is_byte_like(self) -> bool {
        matches!(self, Primitive::Byte | Primitive::Char | Primitive::UInt8)
    }
}

/// The element type of a field, without array-ness.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BaseType {
    /// A fixed-size primitive.
    Primitive(Primitive),
    /// `string` / `string<=N`.
    String {
        /// Largest allowed length in bytes (`string<=N`); `None` when unbounded.
        bound: Option<usize>,
    },
    /// `wstring` / `wstring<=N`.
    WString {
        /// Largest allowed length in characters (`wstring<=N`); `None` when unbounded.
        bound: Option<usize>,
    },
    /// Nested message, canonical name `pkg/msg/Type` (or `pkg/srv/Type_Request`…).
    Message(String),
}

/// Array-ness of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArrayKind {
    /// Not an array.
    Single,
    /// `T[N]`: exactly N elements, no count on the wire.
    Fixed(usize),
    /// `T[<=N]`: a sequence with at most N elements (count on the wire).
    Bounded(usize),
    /// `T[]`: a sequence (count on the wire).
    Unbounded,
}

/// The full type of a field: element type and array-ness.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldType {
    /// Element type.
    pub base: BaseType,
    /// Whether and how the field is an array.
    pub array: ArrayKind,
}

impl FieldType {
    /// A non-array field of type `base`.
    pub fn single(base: BaseType) -> Self {
        FieldType {
            base,
            array: ArrayKind::Single,
        }
    }
}

/// One field of a message definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Field name as in the schema.
    pub name: String,
    /// Field type.
    pub ty: FieldType,
    /// Default value text as written in the schema (not used for decoding).
    pub default: Option<String>,
}

/// A constant declared in a message definition (`int32 FOO=1`); not part of the wire data.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    /// Constant name.
    pub name: String,
    /// Declared type.
    pub ty: FieldType,
    /// Value text with string quotes removed.
    pub value: String,
}

/// One message (struct) definition.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageDef {
    /// Canonical name, `pkg/msg/Type`.
    pub name: String,
    /// Fields in wire order.
    pub fields: Vec<Field>,
    /// Constants, in the order declared.
    pub constants: Vec<Constant>,
    /// Field names shared with decoded values so decoding doesn't copy them.
    names: Arc<[String]>,
}

impl MessageDef {
    /// A definition named `name` (canonical form expected) with its fields in wire order and its constants.
    pub fn new(name: impl Into<String>, fields: Vec<Field>, constants: Vec<Constant>) -> Self {
        let names: Arc<[String]> = fields.iter().map(|f| f.name.clone()).collect();
        MessageDef {
            name: name.into(),
            fields,
            constants,
            names,
        }
    }

    /// The field called `name`, if any.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub(crate) fn names(&self) -> &Arc<[String]> {
        &self.names
    }
}

/// A root message type plus every definition it (transitively) uses.
/// Guaranteed by construction: every referenced type is present and no type
/// contains itself by value.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageSchema {
    name: String,
    defs: BTreeMap<String, MessageDef>,
    /// Lower bound on each definition's wire size, used to reject absurd
    /// sequence counts before allocating.
    min_sizes: HashMap<String, usize>,
}

impl MessageSchema {
    /// Build from a root name and a pool of definitions. Missing dependencies
    /// are taken from the built-in definitions; unknown ones are an error.
    pub fn from_defs(
        root: &str,
        pool: HashMap<String, MessageDef>,
    ) -> Result<MessageSchema, SchemaError> {
        let root = canonical_name(root)?;
        let mut pool = pool;
        let mut defs = BTreeMap::new();
        if !pool.contains_key(&root) {
            match builtin::def(&root) {
                Some(d) => {
                    pool.insert(root.clone(), d.clone());
                }
                None => return Err(SchemaError::MissingRoot(root)),
            }
        }
        // Collect the reachable set, falling back to built-ins.
        let mut stack = vec![root.clone()];
        while let Some(n) = stack.pop() {
            if defs.contains_key(&n) {
                continue;
            }
            let def = match pool.remove(&n) {
                Some(d) => d,
                None => unreachable_def(&n, &defs)?,
            };
            for f in &def.fields {
                if let BaseType::Message(m) = &f.ty.base {
                    if !defs.contains_key(m) && *m != n {
                        if !pool.contains_key(m) {
                            match builtin::def(m) {
                                Some(d) => {
                                    pool.insert(m.clone(), d.clone());
                                }
                                None => {
                                    return Err(SchemaError::UnresolvedType {
                                        missing: m.clone(),
                                        used_by: def.name.clone(),
                                    })
                                }
                            }
                        }
                        stack.push(m.clone());
                    }
                }
            }
            defs.insert(n, def);
        }
        let mut schema = MessageSchema {
            name: root,
            defs,
            min_sizes: HashMap::new(),
        };
        schema.check_acyclic()?;
        let names: Vec<String> = schema.defs.keys().cloned().collect();
        for n in names {
            let v = schema.compute_min_size(&n, 0);
            schema.min_sizes.insert(n, v);
        }
        Ok(schema)
    }

    /// Canonical root type name (`pkg/msg/Type`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The root type's definition.
    pub fn root(&self) -> &MessageDef {
        // Invariant of construction: the root is always present.
        &self.defs[&self.name]
    }

    /// Look up a definition by name (`pkg/Type` or `pkg/msg/Type`).
    pub fn get(&self, name: &str) -> Option<&MessageDef> {
        match self.defs.get(name) {
            Some(d) => Some(d),
            None => canonical_name(name).ok().and_then(|n| self.defs.get(&n)),
        }
    }

    /// Every definition in the schema (root and dependencies), sorted by name.
    pub fn definitions(&self) -> impl Iterator<Item = &MessageDef> {
        self.defs.values()
    }

    /// Where this message type carries its timestamp.
    pub fn stamp_locator(&self) -> StampLocator {
        StampLocator::for_schema(self)
    }

    /// Render the schema as rosbag2-style ros2msg text (root section, then
    /// one `MSG:` section per dependency) suitable for writing into an MCAP
    /// Schema record.
    pub fn to_ros2msg_text(&self) -> String {
        let mut out = String::new();
        write_def_text(&mut out, self.root());
        for (n, d) in &self.defs {
            if *n == self.name {
                continue;
            }
            out.push_str(&"=".repeat(80));
            out.push('\n');
            out.push_str("MSG: ");
            out.push_str(&rosbag2_type_name(n));
            out.push('\n');
            write_def_text(&mut out, d);
        }
        out
    }

    /// The type a field path (`header.stamp`, `position[0]`, `points[2].positions`, as
    /// [`crate::parse_path`] reads it) names in this message type: the one rule for every
    /// field path a command takes (`echo --fields`, `match --command-field`, `export
    /// --fields`). An error names the type and the fields there are where the path fails, so
    /// a misspelt field is refused instead of read as null from every message.
    pub fn resolve_path(&self, path: &str) -> Result<FieldType, FieldPathError> {
        use crate::value::{parse_path, PathSegment};
        let segs = parse_path(path).filter(|s| !s.is_empty()).ok_or_else(|| {
            FieldPathError::Malformed {
                path: path.to_string(),
            }
        })?;
        let mut ty = FieldType::single(BaseType::Message(self.name.clone()));
        // The part of the path resolved so far (empty: the message itself).
        let mut at = String::new();
        for seg in segs {
            match seg {
                PathSegment::Field(name) => {
                    let def = match (&ty.base, ty.array) {
                        (BaseType::Message(m), ArrayKind::Single) => self.get(m),
                        _ => None,
                    };
                    let Some(def) = def else {
                        return Err(FieldPathError::NotAMessage {
                            path: path.to_string(),
                            at,
                            type_text: type_text(&ty),
                        });
                    };
                    let Some(f) = def.field(name) else {
                        return Err(FieldPathError::NoField {
                            path: path.to_string(),
                            name: name.to_string(),
                            at,
                            type_name: def.name.clone(),
                            fields: def.fields.iter().map(|f| f.name.clone()).collect(),
                        });
                    };
                    if !at.is_empty() {
                        at.push('.');
                    }
                    at.push_str(name);
                    ty = f.ty.clone();
                }
                PathSegment::Index(i) => {
                    match ty.array {
                        ArrayKind::Single => {
                            return Err(FieldPathError::NotAnArray {
                                path: path.to_string(),
                                at,
                                type_text: type_text(&ty),
                            })
                        }
                        ArrayKind::Fixed(n) if i >= n => {
                            return Err(FieldPathError::OutOfBounds {
                                path: path.to_string(),
                                at,
                                len: n,
                            })
                        }
                        _ => {}
                    }
                    at.push_str(&format!("[{i}]"));
                    ty.array = ArrayKind::Single;
                }
            }
        }
        Ok(ty)
    }

    /// Lower bound (ignoring padding) on the encoded size of a value of
    /// definition `name`. Empty structs are one byte on the wire (rosidl adds
    /// a placeholder `uint8`).
    pub(crate) fn min_size(&self, name: &str) -> usize {
        self.min_sizes.get(name).copied().unwrap_or(1)
    }

    /// Lower bound on the encoded size of one element of `base`.
    pub(crate) fn min_base_size(&self, base: &BaseType) -> usize {
        match base {
            BaseType::Primitive(p) => p.size(),
            BaseType::String { .. } | BaseType::WString { .. } => 4,
            BaseType::Message(m) => self.min_size(m),
        }
    }

    fn compute_min_size(&self, name: &str, depth: usize) -> usize {
        // Depth cap is belt and braces: the graph is already known acyclic.
        let Some(def) = self.defs.get(name) else {
            return 1;
        };
        if def.fields.is_empty() || depth > 256 {
            return 1;
        }
        def.fields.iter().fold(0usize, |acc, f| {
            let elem = match &f.ty.base {
                BaseType::Primitive(p) => p.size(),
                BaseType::String { .. } | BaseType::WString { .. } => 4,
                BaseType::Message(m) => self
                    .min_sizes
                    .get(m)
                    .copied()
                    .unwrap_or_else(|| self.compute_min_size(m, depth + 1)),
            };
            let fsize = match f.ty.array {
                ArrayKind::Single => elem,
                ArrayKind::Fixed(n) => elem.saturating_mul(n),
                ArrayKind::Bounded(_) | ArrayKind::Unbounded => 4,
            };
            acc.saturating_add(fsize)
        })
    }

    fn check_acyclic(&self) -> Result<(), SchemaError> {
        // 0 = unvisited, 1 = on stack, 2 = done
        let mut state: HashMap<&str, u8> = HashMap::new();
        for start in self.defs.keys() {
            if state.get(start.as_str()).copied().unwrap_or(0) == 2 {
                continue;
            }
            // Iterative DFS so a deep schema can't overflow the stack here.
            let mut stack: Vec<(&str, usize)> = vec![(start.as_str(), 0)];
            state.insert(start.as_str(), 1);
            while let Some((n, i)) = stack.pop() {
                let Some(def) = self.defs.get(n) else {
                    state.insert(n, 2);
                    continue;
                };
                let next = def.fields[i..]
                    .iter()
                    .enumerate()
                    .find_map(|(k, f)| match &f.ty.base {
                        BaseType::Message(m) => Some((i + k, m.as_str())),
                        _ => None,
                    });
                match next {
                    None => {
                        state.insert(n, 2);
                    }
                    Some((k, m)) => {
                        stack.push((n, k + 1));
                        match state.get(m).copied().unwrap_or(0) {
                            1 => return Err(SchemaError::Recursive(m.to_string())),
                            2 => {}
                            _ => {
                                state.insert(m, 1);
                                stack.push((m, 0));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn unreachable_def(
    n: &str,
    _defs: &BTreeMap<String, MessageDef>,
) -> Result<MessageDef, SchemaError> {
    // Only reachable if a name was pushed without being put in the pool.
    builtin::def(n)
        .cloned()
        .ok_or_else(|| SchemaError::UnresolvedType {
            missing: n.to_string(),
            used_by: String::new(),
        })
}

fn write_def_text(out: &mut String, d: &MessageDef) {
    for c in &d.constants {
        out.push_str(&format!(
            "{} {}={}\n",
            type_text(&c.ty),
            c.name,
            quote_if_string(&c.ty, &c.value)
        ));
    }
    for f in &d.fields {
        out.push_str(&type_text(&f.ty));
        out.push(' ');
        out.push_str(&f.name);
        if let Some(dv) = &f.default {
            out.push(' ');
            out.push_str(dv);
        }
        out.push('\n');
    }
}

fn quote_if_string(ty: &FieldType, v: &str) -> String {
    match ty.base {
        BaseType::String { .. } | BaseType::WString { .. } => format!("{:?}", v),
        _ => v.to_string(),
    }
}

/// `pkg/msg/Type` → `pkg/Type`: the spelling rosbag2 writes in schema text (`MSG:` lines and
/// field types, as in `.msg` files), which mcap-ros2-support and rosidl parsers require.
fn rosbag2_type_name(n: &str) -> String {
    match n.split('/').collect::<Vec<_>>().as_slice() {
        [pkg, "msg", name] => format!("{pkg}/{name}"),
        _ => n.to_string(),
    }
}

/// ros2msg spelling of a field type (as in `.msg` files: `pkg/Type`).
pub fn type_text(ty: &FieldType) -> String {
    let mut s = match &ty.base {
        BaseType::Primitive(p) => p.msg_name().to_string(),
        BaseType::String { bound: None } => "string".into(),
        BaseType::String { bound: Some(n) } => format!("string<={n}"),
        BaseType::WString { bound: None } => "wstring".into(),
        BaseType::WString { bound: Some(n) } => format!("wstring<={n}"),
        BaseType::Message(m) => rosbag2_type_name(m),
    };
    match ty.array {
        ArrayKind::Single => {}
        ArrayKind::Fixed(n) => s.push_str(&format!("[{n}]")),
        ArrayKind::Bounded(n) => s.push_str(&format!("[<={n}]")),
        ArrayKind::Unbounded => s.push_str("[]"),
    }
    s
}

/// Normalise a type name to `pkg/msg/Type` form. Accepts `pkg/Type`,
/// `pkg/msg/Type` (any middle part, e.g. `srv`), and `pkg::msg::Type`.
pub fn canonical_name(name: &str) -> Result<String, SchemaError> {
    let name = name.trim();
    let name = name.strip_prefix("::").unwrap_or(name);
    let parts: Vec<&str> = if name.contains("::") {
        name.split("::").collect()
    } else {
        name.split('/').collect()
    };
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match parts.as_slice() {
        [p, t] if ok(p) && ok(t) => Ok(format!("{p}/msg/{t}")),
        [p, m, t] if ok(p) && ok(m) && ok(t) => Ok(format!("{p}/{m}/{t}")),
        _ => Err(SchemaError::BadTypeName(name.to_string())),
    }
}

/// Package part of a canonical or short type name.
pub(crate) fn package_of(name: &str) -> &str {
    name.split('/').next().unwrap_or("")
}

/// Build the schema for an MCAP channel from its schema record.
///
/// * `encoding` `"ros2msg"`: ros2msg text; `pkg/srv/X_Event` types get the
///   service-event treatment (see [`parse_service_event`]).
/// * `encoding` `"ros2idl"`: IDL text.
/// * Empty `data` (any encoding, including `""`): use the built-in definition (the Humble
///   layout where distributions differ; see [`schema_for_channel_payload`]).
///   A `ros2msg` channel with empty data and no built-in is an empty message.
pub fn schema_for_channel(
    type_name: &str,
    encoding: &str,
    data: &[u8],
) -> Result<MessageSchema, SchemaError> {
    channel_schema(type_name, encoding, data, None)
}

/// [`schema_for_channel`] for a channel one of whose payloads is at hand: when the schema
/// record is empty, the built-in definition is the distribution's layout that decodes
/// `payload` completely ([`builtin::resolve_for_payload`]) rather than the Humble one.
pub fn schema_for_channel_payload(
    type_name: &str,
    encoding: &str,
    data: &[u8],
    payload: &[u8],
) -> Result<MessageSchema, SchemaError> {
    channel_schema(type_name, encoding, data, Some(payload))
}

fn channel_schema(
    type_name: &str,
    encoding: &str,
    data: &[u8],
    payload: Option<&[u8]>,
) -> Result<MessageSchema, SchemaError> {
    let text = std::str::from_utf8(data).map_err(|_| SchemaError::NotUtf8)?;
    if text.trim().is_empty() {
        let b = match payload {
            Some(p) => builtin::resolve_for_payload(type_name, p),
            None => builtin::resolve(type_name),
        };
        if let Some(s) = b {
            return Ok(s);
        }
        return match encoding {
            // rosbag2 writes empty text for a message with no fields.
            "ros2msg" if !is_service_event(type_name) => parse_ros2msg(type_name, ""),
            "ros2msg" | "ros2idl" | "" => Err(SchemaError::NoDefinition(type_name.to_string())),
            other => Err(SchemaError::UnsupportedEncoding(other.to_string())),
        };
    }
    match encoding {
        "ros2msg" | "" => {
            if is_service_event(type_name) {
                parse_service_event(type_name, text)
            } else {
                parse_ros2msg(type_name, text)
            }
        }
        "ros2idl" => parse_ros2idl(type_name, text),
        other => Err(SchemaError::UnsupportedEncoding(other.to_string())),
    }
}

/// `pkg/srv/Name_Event`: rosbag2 stores the `.srv` text for these.
pub fn is_service_event(type_name: &str) -> bool {
    type_name.contains("/srv/") && type_name.ends_with("_Event")
}
