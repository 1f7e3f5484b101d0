//! Warnings: one struct and one list of codes for every crate and command.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A structured, machine-readable warning. `data_loss` marks warnings about lost or suspect
/// data: some messages could not be read, a record of the file could not be parsed, or the file
/// was cut short (the CLI exits 3 on those). Codes that always mean that
/// ([`WarningCode::is_data_loss`]) are flagged by [`Warning::new`] itself.
/// Sorted by code name, then topic, message, file, offset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Warning {
    /// What kind of problem (see docs/findings.md for each code's meaning and severity).
    pub code: WarningCode,
    /// The topic concerned, `None` for bag-wide warnings.
    pub topic: Option<String>,
    /// One sentence for people, with the numbers.
    pub message: String,
    /// The file concerned (split bags, damage), when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Byte offset in `file` of the damage, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Messages were lost or could not be read at all, or a record of the file could not be
    /// parsed (suspect data).
    pub data_loss: bool,
}

impl Warning {
    /// A bag-wide warning; add details with the builder methods. It is data loss when its code
    /// always is ([`WarningCode::is_data_loss`]), else only when marked with [`Warning::loss`].
    pub fn new(code: WarningCode, message: impl Into<String>) -> Self {
        Warning {
            code,
            topic: None,
            message: message.into(),
            file: None,
            offset: None,
            data_loss: code.is_data_loss(),
        }
    }
    /// The topic concerned.
    pub fn topic(mut self, topic: impl Into<String>) -> Self {
        self.topic = Some(topic.into());
        self
    }
    /// The file concerned.
    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }
    /// The byte offset of the damage in the file.
    pub fn offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }
    /// Marks the warning as data loss.
    pub fn loss(mut self) -> Self {
        self.data_loss = true;
        self
    }
}

macro_rules! codes {
    ($($variant:ident => $name:literal,)*) => {
        /// Every warning code bagscope emits. Serialised as its snake_case name; ordered by that
        /// name, so sorted warnings read alphabetically by code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)] // docs/findings.md documents each code
        pub enum WarningCode {
            $($variant,)*
        }

        impl WarningCode {
            /// Every code, sorted by name.
            pub const ALL: &'static [WarningCode] = &[$(WarningCode::$variant,)*];

            /// The snake_case name used in JSON and text output.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(WarningCode::$variant => $name,)*
                }
            }
        }

        impl FromStr for WarningCode {
            type Err = UnknownWarningCode;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(WarningCode::$variant),)*
                    _ => Err(UnknownWarningCode(s.to_string())),
                }
            }
        }
    };
}

codes! {
    ChannelRedefined => "channel_redefined",
    ChunkCrcMismatch => "chunk_crc_mismatch",
    ClockDrift => "clock_drift",
    ClockJumpBack => "clock_jump_back",
    ClockOffset => "clock_offset",
    ClockUnmapped => "clock_unmapped",
    CompetingPublishers => "competing_publishers",
    CorruptChunk => "corrupt_chunk",
    CorruptDatabase => "corrupt_database",
    CorruptMessage => "corrupt_message",
    CorruptRecord => "corrupt_record",
    CorruptSummary => "corrupt_summary",
    DecodeError => "decode_error",
    DecompressionLimit => "decompression_limit",
    DuplicateFile => "duplicate_file",
    EarlyEnd => "early_end",
    EncapsulationOptions => "encapsulation_options",
    ExportTruncated => "export_truncated",
    ExportUnsorted => "export_unsorted",
    FollowedClockJumpedBack => "followed_clock_jumped_back",
    Headerless => "headerless",
    InvalidUtf8 => "invalid_utf8",
    LargeLag => "large_lag",
    LateStart => "late_start",
    LengthMismatch => "length_mismatch",
    LogTimeOutOfOrder => "log_time_out_of_order",
    LogTimeOutOfRange => "log_time_out_of_range",
    MessageTooLarge => "message_too_large",
    MetadataCountMismatch => "metadata_count_mismatch",
    MissingFile => "missing_file",
    MissingMessages => "missing_messages",
    MixedAxis => "mixed_axis",
    MixedStorage => "mixed_storage",
    MultimodalLag => "multimodal_lag",
    MultipleParents => "multiple_parents",
    NegativeTime => "negative_time",
    NoClockForSim => "no_clock_for_sim",
    NoSubscriber => "no_subscriber",
    NoTf => "no_tf",
    NotAcknowledged => "not_acknowledged",
    NotRegularFile => "not_regular_file",
    NotRestamped => "not_restamped",
    NothingPlayed => "nothing_played",
    PathOutsideBag => "path_outside_bag",
    QosMixed => "qos_mixed",
    QosUnreadable => "qos_unreadable",
    RecorderLostMessages => "recorder_lost_messages",
    RecorderOnSimTime => "recorder_on_sim_time",
    RemoteFetchedWhole => "remote_fetched_whole",
    RemoteReadFailed => "remote_read_failed",
    ReplayedRecording => "replayed_recording",
    ScheduleFallback => "schedule_fallback",
    SchemaMissing => "schema_missing",
    SchemaUnknown => "schema_unknown",
    SimClockPause => "sim_clock_pause",
    SlopFromRecommendation => "slop_from_recommendation",
    SlopUnitSuspect => "slop_unit_suspect",
    SplitClockAxes => "split_clock_axes",
    StampFrozen => "stamp_frozen",
    StampInvalid => "stamp_invalid",
    StampUnreadable => "stamp_unreadable",
    StampZero => "stamp_zero",
    StampsInFuture => "stamps_in_future",
    StaticAndDynamic => "static_and_dynamic",
    StatisticsMismatch => "statistics_mismatch",
    SubstitutedFile => "substituted_file",
    TfEdgesUntimed => "tf_edges_untimed",
    TfTopicMissing => "tf_topic_missing",
    Truncated => "truncated",
    Undecodable => "undecodable",
    UndecodableMessage => "undecodable_message",
    UndecodableTopic => "undecodable_topic",
    UnknownChannel => "unknown_channel",
    UnlistedFile => "unlisted_file",
    UnmergedWal => "unmerged_wal",
    UnsupportedCompression => "unsupported_compression",
    UnsupportedEncapsulation => "unsupported_encapsulation",
    ZeroCountTopic => "zero_count_topic",
}

/// A string that names no [`WarningCode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWarningCode(pub String);

impl fmt::Display for UnknownWarningCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown warning code {:?}", self.0)
    }
}

impl std::error::Error for UnknownWarningCode {}

impl WarningCode {
    /// Codes that always mean lost or suspect data, whoever emits them: damage that left
    /// messages unread, or a record of the file that could not be parsed (`corrupt_record`,
    /// `corrupt_summary`: what the file says there is unknown, and what was read around it is
    /// suspect). The one rule behind `data_loss` for these codes in every command; other codes
    /// are data loss where the warning is marked so ([`Warning::loss`]).
    pub fn is_data_loss(self) -> bool {
        use WarningCode::*;
        matches!(
            self,
            ChunkCrcMismatch
                | CorruptChunk
                | CorruptDatabase
                | CorruptMessage
                | CorruptRecord
                | CorruptSummary
                | DecompressionLimit
                | MessageTooLarge
                | MissingFile
                | MissingMessages
                | NotRegularFile
                | PathOutsideBag
                | RecorderLostMessages
                | StampUnreadable
                | Truncated
                | UnknownChannel
        )
    }
}

impl fmt::Display for WarningCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialOrd for WarningCode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for WarningCode {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for WarningCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for WarningCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for WarningCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WarningCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort() {
        let names: Vec<&str> = WarningCode::ALL.iter().map(|c| c.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "ALL is sorted by name");
        for c in WarningCode::ALL {
            assert_eq!(c.as_str().parse::<WarningCode>(), Ok(*c));
            let j = serde_json::to_string(c).unwrap();
            assert_eq!(j, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<WarningCode>(&j).unwrap(), *c);
        }
        assert!("no_such_code".parse::<WarningCode>().is_err());
    }

    #[test]
    fn records_that_cannot_be_parsed_are_data_loss() {
        for c in [WarningCode::CorruptRecord, WarningCode::CorruptSummary] {
            assert!(c.is_data_loss());
            assert!(Warning::new(c, "record at byte 8 cannot be parsed").data_loss);
        }
        assert!(!Warning::new(WarningCode::InvalidUtf8, "name").data_loss);
        assert!(
            Warning::new(WarningCode::InvalidUtf8, "name")
                .loss()
                .data_loss
        );
    }

    #[test]
    fn order_is_by_name_not_declaration() {
        assert!(WarningCode::ClockOffset < WarningCode::Truncated);
        let mut v = vec![WarningCode::ZeroCountTopic, WarningCode::ChannelRedefined];
        v.sort();
        assert_eq!(
            v,
            [WarningCode::ChannelRedefined, WarningCode::ZeroCountTopic]
        );
    }
}
