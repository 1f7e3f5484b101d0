//! Arbitrary bytes as a CDR payload of a fixed schema: the dynamic decoder, the stamp reader
//! and (where a typed struct exists) `decode_typed` must return errors, never panic or
//! allocate from a corrupt count. Where both decoders succeed they must agree on the stamp.
//! First byte picks the schema; the rest is the payload (encapsulation header included).
#![no_main]

use std::sync::OnceLock;

use bagscope_msg::MessageSchema;
use libfuzzer_sys::fuzz_target;

// cdr_schemas and check_cdr_input, shared with the regression replay.
include!("../shared/cdr_decode.rs");

fn schemas() -> &'static Vec<MessageSchema> {
    static S: OnceLock<Vec<MessageSchema>> = OnceLock::new();
    S.get_or_init(|| {
        cdr_schemas(
            include_str!("../schemas/nested.msg"),
            include_str!("../schemas/nested.idl"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    check_cdr_input(data, schemas());
});
