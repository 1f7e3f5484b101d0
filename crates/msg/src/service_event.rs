//! The fixed head of a service event (`pkg/srv/Name_Event`, rosbag2 from Iron on): its
//! `service_msgs/ServiceEventInfo info` field, read at fixed offsets without the schema (the
//! field comes first and has no variable-length member).

/// `ServiceEventInfo` of one service event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceEventInfo {
    /// `REQUEST_SENT` (0), `REQUEST_RECEIVED` (1), `RESPONSE_SENT` (2), `RESPONSE_RECEIVED` (3).
    pub event_type: u8,
    /// `stamp` in ns (`sec · 1e9 + nanosec`).
    pub stamp_ns: i64,
    /// `client_gid`.
    pub client_gid: [u8; 16],
    /// `sequence_number`.
    pub sequence_number: i64,
}

/// Reads `info` from a service event's CDR payload (plain CDR, either byte order); `None`
/// when the payload is shorter than that field or uses another encapsulation.
pub fn read_service_event_info(payload: &[u8]) -> Option<ServiceEventInfo> {
    let little = match payload.get(..2)? {
        [0x00, 0x01] => true,
        [0x00, 0x00] => false,
        _ => return None,
    };
    // After the 4-byte encapsulation header, aligned from there: event_type (u8) at 0,
    // stamp.sec (i32) at 4, stamp.nanosec (u32) at 8, client_gid (char[16]) at 12,
    // sequence_number (i64) at 32.
    let body = payload.get(4..)?;
    let b4 = |at: usize| -> Option<[u8; 4]> { body.get(at..at + 4)?.try_into().ok() };
    let b8: [u8; 8] = body.get(32..40)?.try_into().ok()?;
    let (sec, nanosec, seq) = if little {
        (
            i32::from_le_bytes(b4(4)?),
            u32::from_le_bytes(b4(8)?),
            i64::from_le_bytes(b8),
        )
    } else {
        (
            i32::from_be_bytes(b4(4)?),
            u32::from_be_bytes(b4(8)?),
            i64::from_be_bytes(b8),
        )
    };
    Some(ServiceEventInfo {
        event_type: body[0],
        stamp_ns: i64::from(sec) * 1_000_000_000 + i64::from(nanosec),
        client_gid: body.get(12..28)?.try_into().ok()?,
        sequence_number: seq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_info_that_the_dynamic_decoder_reads() {
        let schema = crate::schema::parse_service_event(
            "example_interfaces/srv/AddTwoInts_Event",
            "int64 a\nint64 b\n---\nint64 sum\n",
        )
        .unwrap();
        // info: event_type 3, stamp 12 s 345 ns, gid 0..16, sequence 42; empty request and
        // response sequences.
        let mut p = vec![0x00, 0x01, 0, 0, 3, 0, 0, 0];
        p.extend(12i32.to_le_bytes());
        p.extend(345u32.to_le_bytes());
        p.extend(0u8..16);
        p.extend([0u8; 4]);
        p.extend(42i64.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        let got = read_service_event_info(&p).unwrap();
        assert_eq!(got.event_type, 3);
        assert_eq!(got.stamp_ns, 12_000_000_345);
        assert_eq!(got.sequence_number, 42);
        assert_eq!(got.client_gid[15], 15);
        let v = crate::decode(&schema, &p).unwrap();
        assert_eq!(v.get_path_i64("info.sequence_number"), Some(42));
        assert_eq!(v.get_path_time_ns("info.stamp"), Some(12_000_000_345));
        assert_eq!(v.get_path_i64("info.event_type"), Some(3));
        assert_eq!(read_service_event_info(&p[..40]), None);
        assert_eq!(read_service_event_info(&[0x00, 0x03, 0, 0]), None);
    }
}
