//! bagscope-msg: ROS 2 message schemas and CDR decoding without a ROS install.
//!
//! * [`schema`]: parse MCAP schema records (`ros2msg`, `ros2idl`, service
//!   events) into a [`schema::MessageSchema`]; built-in definitions for common
//!   types.
//! * [`decode()`]: schema-driven CDR decoder producing a [`value::Value`] tree.
//! * [`leaves`]: the same decoding straight into per-field columns (no value tree).
//! * [`service_event`]: a service event's `info` (kind, stamp, client, sequence number).
//! * [`stamp`]: read just the timestamp (`header.stamp`, `stamp`, `clock`).
//! * [`types`]: typed serde structs with [`types::decode_typed`] /
//!   [`types::encode_typed`].
//!
//! Nothing here does I/O or panics on malformed input.

mod cdr_de;
pub mod decode;
pub mod error;
pub mod leaves;
pub mod schema;
pub mod service_event;
pub mod stamp;
pub mod types;
pub mod value;

pub use decode::decode;
pub use error::{DecodeError, DecodeErrorKind, FieldPathError, SchemaError, TypedError};
pub use schema::{schema_for_channel, schema_for_channel_payload, MessageSchema};
pub use stamp::{Stamp, StampLocator, StampSource};
pub use types::{decode_typed, encode_typed};
pub use value::{parse_path, PathSegment, Value};
