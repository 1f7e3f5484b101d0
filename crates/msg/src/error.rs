//! Error types for schema parsing, dynamic decoding and typed (serde) decoding.

use std::fmt;
use thiserror::Error;

/// Failure to turn schema text (or a type name) into a [`crate::schema::MessageSchema`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// Syntax error in a schema section. `section` is the type whose text was being parsed.
    #[error("{section}: line {line}: {msg}")]
    Parse {
        section: String,
        line: usize,
        msg: String,
    },
    /// A field refers to a type that is neither in the schema text nor built in.
    #[error("type `{missing}` (used by `{used_by}`) is not defined in the schema and has no built-in definition")]
    UnresolvedType { missing: String, used_by: String },
    /// The root type named by the channel is not among the parsed definitions.
    #[error("schema text does not define the root type `{0}`")]
    MissingRoot(String),
    /// A type contains itself (directly or indirectly) by value; CDR cannot encode that.
    #[error("recursive type definition involving `{0}`")]
    Recursive(String),
    #[error("type name `{0}` is not of the form pkg/Type or pkg/msg/Type")]
    BadTypeName(String),
    #[error("schema data is not valid UTF-8")]
    NotUtf8,
    #[error("unsupported schema encoding `{0}` (expected ros2msg or ros2idl)")]
    UnsupportedEncoding(String),
    /// Empty schema data and no built-in definition for the type.
    #[error(
        "no schema for `{0}`: the channel's schema is empty and there is no built-in definition"
    )]
    NoDefinition(String),
}

/// What went wrong while decoding a CDR payload.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeErrorKind {
    #[error("payload shorter than the 4-byte encapsulation header")]
    MissingHeader,
    #[error("unsupported CDR encapsulation {name} (0x{id:04x})")]
    UnsupportedEncapsulation { id: u16, name: &'static str },
    #[error("need {need} bytes but only {have} remain")]
    Truncated { need: usize, have: usize },
    #[error("length {len} is larger than the {remaining} bytes remaining")]
    LengthTooLarge { len: u64, remaining: usize },
    #[error("invalid UTF-8 in string")]
    InvalidUtf8,
    #[error("invalid bool byte {0}")]
    InvalidBool(u8),
    #[error("{0}")]
    Message(String),
}

/// A decode failure, located by byte offset into the payload (including the
/// 4-byte encapsulation header) and by field path (`header.stamp.sec`,
/// `points[2].positions`). The caller adds topic and message index.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct DecodeError {
    pub offset: usize,
    pub path: String,
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
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("CDR encoding failed: {0}")]
    Encode(String),
}
