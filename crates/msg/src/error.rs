//! Error types for schema parsing, dynamic decoding and typed (serde) decoding.

use std::fmt;
use thiserror::Error;

/// Failure to turn schema text (or a type name) into a [`crate::schema::MessageSchema`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// Syntax error in a schema section. `section` is the type whose text was being parsed.
    #[error("{section}: line {line}: {msg}")]
    Parse {
        /// The type whose text was being parsed.
        section: String,
        /// Line number within that type's section, from 1.
        line: usize,
        /// What is wrong with the line.
        msg: String,
    },
    /// A field refers to a type that is neither in the schema text nor built in.
    #[error("type `{missing}` (used by `{used_by}`) is not defined in the schema and has no built-in definition")]
    UnresolvedType {
        /// The type name that could not be resolved.
        missing: String,
        /// The type with the field that uses it.
        used_by: String,
    },
    /// The root type named by the channel is not among the parsed definitions.
    #[error("schema text does not define the root type `{0}`")]
    MissingRoot(String),
    /// A type contains itself (directly or indirectly) by value; CDR cannot encode that.
    #[error("recursive type definition involving `{0}`")]
    Recursive(String),
    /// A type name that is neither `pkg/Type` nor `pkg/msg/Type`.
    #[error("type name `{0}` is not of the form pkg/Type or pkg/msg/Type")]
    BadTypeName(String),
    /// The schema bytes are not UTF-8 text.
    #[error("schema data is not valid UTF-8")]
    NotUtf8,
    /// A schema encoding other than `ros2msg` and `ros2idl`.
    #[error("unsupported schema encoding `{0}` (expected ros2msg or ros2idl)")]
    UnsupportedEncoding(String),
    /// Empty schema data and no built-in definition for the type.
    #[error(
        "no schema for `{0}`: the channel's schema is empty and there is no built-in definition"
    )]
    NoDefinition(String),
}

/// A field path that names no field of a message type
/// ([`crate::schema::MessageSchema::resolve_path`]). Each message names the path, where it
/// fails and what is there.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FieldPathError {
    /// Not a field path at all (`a..b`, `x[`, empty).
    #[error("'{path}' is not a field path (e.g. header.stamp, position[0])")]
    Malformed {
        /// The path as given.
        path: String,
    },
    /// No field of that name in the message the path reaches.
    #[error(
        "'{path}': {type_name}{} has no field '{name}' (its fields: {})",
        at_text(at),
        fields.join(", ")
    )]
    NoField {
        /// The path as given.
        path: String,
        /// The field name that is not there.
        name: String,
        /// The part of the path before it (empty: the message itself).
        at: String,
        /// The message type that lacks it.
        type_name: String,
        /// The fields it has, in order.
        fields: Vec<String>,
    },
    /// A field name after something that is not one message (a number, a string, an array).
    #[error("'{path}': {at} is {type_text}, which has no fields{}", if type_text.ends_with(']') && type_text.contains('/') { " (index it first: [0])" } else { "" })]
    NotAMessage {
        /// The path as given.
        path: String,
        /// The part of the path that is not a message.
        at: String,
        /// Its type (`float64`, `geometry_msgs/Point[]`).
        type_text: String,
    },
    /// An index on something that is not an array.
    #[error("'{path}': {} is {type_text}, not an array", if at.is_empty() { "the message" } else { at.as_str() })]
    NotAnArray {
        /// The path as given.
        path: String,
        /// The part of the path that is not an array.
        at: String,
        /// Its type.
        type_text: String,
    },
    /// An index past the end of a fixed-size array.
    #[error("'{path}': {at} has {len} elements (indexes 0 to {})", len.saturating_sub(1))]
    OutOfBounds {
        /// The path as given.
        path: String,
        /// The array.
        at: String,
        /// Its fixed length.
        len: usize,
    },
}

/// ` (at header.stamp)` for a non-empty part of a path.
fn at_text(at: &str) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!(" (at {at})")
    }
}

/// What went wrong while decoding a CDR payload.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeErrorKind {
    /// The payload is shorter than the 4-byte encapsulation header.
    #[error("payload shorter than the 4-byte encapsulation header")]
    MissingHeader,
    /// An encapsulation other than plain CDR (XCDR1) big- or little-endian.
    #[error("unsupported CDR encapsulation {name} (0x{id:04x})")]
    UnsupportedEncapsulation {
        /// The encapsulation identifier from the payload's first two bytes.
        id: u16,
        /// Its name in the DDS-XTypes table (e.g. `PL_CDR_BE`), or `unknown`.
        name: &'static str,
    },
    /// The payload ends before the value being read.
    #[error("need {need} bytes but only {have} remain")]
    Truncated {
        /// Bytes the next value needs.
        need: usize,
        /// Bytes left in the payload.
        have: usize,
    },
    /// A sequence or string length larger than what is left of the payload.
    #[error("length {len} is larger than the {remaining} bytes remaining")]
    LengthTooLarge {
        /// The length read, in elements or bytes.
        len: u64,
        /// Bytes left in the payload.
        remaining: usize,
    },
    /// A string's bytes are not UTF-8.
    #[error("invalid UTF-8 in string")]
    InvalidUtf8,
    /// A bool byte other than 0 or 1 (the byte read).
    #[error("invalid bool byte {0}")]
    InvalidBool(u8),
    /// Any other failure, described in words (e.g. a type missing from the schema, an enum
    /// discriminant out of range).
    #[error("{0}")]
    Message(String),
}

/// A decode failure, located by byte offset into the payload (including the
/// 4-byte encapsulation header) and by field path (`header.stamp.sec`,
/// `points[2].positions`). The caller adds topic and message index.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct DecodeError {
    /// Byte offset into the payload, counting the 4-byte encapsulation header.
    pub offset: usize,
    /// Field path of the value being decoded, e.g. `points[2].positions`; empty at the top.
    pub path: String,
    /// What went wrong.
    #[source]
    pub kind: DecodeErrorKind,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} at byte offset {}", self.kind, self.offset)
        } else {
            write!(
                f,
                "{} at byte offset {} (field `{}`)",
                self.kind, self.offset, self.path
            )
        }
    }
}

/// Errors from [`crate::types::decode_typed`] / [`crate::types::encode_typed`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TypedError {
    /// The payload could not be decoded.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The value could not be encoded (the serializer's message).
    #[error("CDR encoding failed: {0}")]
    Encode(String),
}
