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
//!
//! # In the workspace
//!
//! `ros2msg` / `ros2idl` / service-event schemas (and a service event's fixed `info` head,
//! `service_event`), built-in definitions, dynamic CDR decoder, field paths
//! (`MessageSchema::resolve_path`: the one rule for the field paths commands take, `echo
//! --fields`, `match --*-field`, `export --fields`; an unknown one names the type's fields),
//! the same decoding straight into a schema's leaf fields without a value tree (`leaves`: what
//! `export` builds its columns from, accepting exactly what the tree decoder accepts), fast
//! stamp reader, typed messages (`cdr` + serde), `types::tf_frames` (a TFMessage's stamps and
//! frame names borrowed from the payload, accepting exactly what the typed decoder accepts:
//! what the timing table and TF timing read of every TF message; `tf_frames_raw` hands over
//! the names' bytes before their UTF-8 check, and `TfLayout` reads the stamps alone of a
//! payload whose names and lengths are those of one read before), `JointStateView` (a
//! JointState read in place: what `check` reads of every joint message, accepting exactly what
//! the typed decoder accepts).
//!
//! Notable dependencies: `cdr`, `serde`.

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
