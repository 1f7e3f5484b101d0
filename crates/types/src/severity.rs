//! How bad each warning code is, and the order a reader should meet them in: an exhaustive
//! `match` on [`WarningCode`], so a new code cannot be added without deciding both.

use serde::Serialize;

use crate::WarningCode;

/// How bad a finding is. Ordered worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Messages were lost: they could not be read at all.
    Error,
    /// Something that makes the bag's numbers wrong or misleading (clock offsets, bad stamps,
    /// split axes, contract violations).
    Warning,
    /// Describes the bag without faulting it (a late start, a topic without a definition).
    Info,
}

impl WarningCode {
    /// The code's severity when its warning is not marked as data loss (a warning that is,
    /// is [`Severity::Error`] whatever its code): [`Severity::Error`] for the codes that always
    /// are ([`WarningCode::is_data_loss`]), [`Severity::Info`] for what describes a bag
    /// without faulting it, [`Severity::Warning`] for the rest.
    pub fn severity(self) -> Severity {
        use Severity::{Error, Info, Warning};
        use WarningCode::*;
        match self {
            ChunkCrcMismatch | CorruptChunk | CorruptDatabase | CorruptMessage | CorruptRecord
            | CorruptSummary | DecompressionLimit | MessageTooLarge | MissingFile
            | MissingMessages | NotRegularFile | PathOutsideBag | RecorderLostMessages
            | StampUnreadable | Truncated | UnknownChannel => Error,
            EarlyEnd
            | EncapsulationOptions
            | Headerless
            | LateStart
            | MetadataCountMismatch
            | MultimodalLag
            | QosMixed
            | QosUnreadable
            | RecorderOnSimTime
            | RemoteFetchedWhole
            | ScheduleFallback
            | SimClockPause
            | SlopFromRecommendation
            | TfEdgesUntimed
            | UndecodableTopic
            | UnlistedFile
            | UnmergedWal
            | ZeroCountTopic => Info,
            ChannelRedefined
            | ClockDrift
            | ClockJumpBack
            | ClockOffset
            | ClockUnmapped
            | CompetingPublishers
            | DecodeError
            | DuplicateFile
            | ExportTruncated
            | ExportUnsorted
            | FollowedClockJumpedBack
            | InvalidUtf8
            | LargeLag
            | LengthMismatch
            | LogTimeOutOfOrder
            | LogTimeOutOfRange
            | MixedAxis
            | MixedStorage
            | MultipleParents
            | NegativeTime
            | NoClockForSim
            | NoSubscriber
            | NoTf
            | NotAcknowledged
            | NotRestamped
            | NothingPlayed
            | RemoteReadFailed
            | ReplayedRecording
            | SchemaMissing
            | SchemaUnknown
            | SlopUnitSuspect
            | SplitClockAxes
            | StampFrozen
            | StampInvalid
            | StampZero
            | StampsInFuture
            | StaticAndDynamic
            | StatisticsMismatch
            | SubstitutedFile
            | TfTopicMissing
            | Undecodable
            | UndecodableMessage
            | UnsupportedCompression
            | UnsupportedEncapsulation => Warning,
        }
    }

    /// Where a finding of this code goes among those of its severity: the warnings a reader
    /// should meet first get 1 to 12 (split axes, a replayed recording, clock offsets, ...);
    /// every other code [`WarningCode::LAST_IN_ORDER`], after them, by name.
    pub fn reading_order(self) -> u8 {
        use WarningCode::*;
        match self {
            SplitClockAxes => 1,
            ReplayedRecording => 2,
            ClockOffset => 3,
            ClockJumpBack => 4,
            StampFrozen => 5,
            StampZero => 6,
            StampInvalid => 7,
            StampsInFuture => 8,
            ClockDrift => 9,
            LargeLag => 10,
            MixedAxis => 11,
            NoClockForSim => 12,
            ChannelRedefined
            | ChunkCrcMismatch
            | ClockUnmapped
            | CompetingPublishers
            | CorruptChunk
            | CorruptDatabase
            | CorruptMessage
            | CorruptRecord
            | CorruptSummary
            | DecodeError
            | DecompressionLimit
            | DuplicateFile
            | EarlyEnd
            | EncapsulationOptions
            | ExportTruncated
            | ExportUnsorted
            | FollowedClockJumpedBack
            | Headerless
            | InvalidUtf8
            | LateStart
            | LengthMismatch
            | LogTimeOutOfOrder
            | LogTimeOutOfRange
            | MessageTooLarge
            | MetadataCountMismatch
            | MissingFile
            | MissingMessages
            | MixedStorage
            | MultimodalLag
            | MultipleParents
            | NegativeTime
            | NoSubscriber
            | NoTf
            | NotAcknowledged
            | NotRegularFile
            | NotRestamped
            | NothingPlayed
            | PathOutsideBag
            | QosMixed
            | QosUnreadable
            | RecorderLostMessages
            | RecorderOnSimTime
            | RemoteFetchedWhole
            | RemoteReadFailed
            | ScheduleFallback
            | SchemaMissing
            | SchemaUnknown
            | SimClockPause
            | SlopFromRecommendation
            | SlopUnitSuspect
            | StampUnreadable
            | StaticAndDynamic
            | StatisticsMismatch
            | SubstitutedFile
            | TfEdgesUntimed
            | TfTopicMissing
            | Truncated
            | Undecodable
            | UndecodableMessage
            | UndecodableTopic
            | UnknownChannel
            | UnlistedFile
            | UnmergedWal
            | UnsupportedCompression
            | UnsupportedEncapsulation
            | ZeroCountTopic => Self::LAST_IN_ORDER,
        }
    }

    /// [`WarningCode::reading_order`] of the codes without a place of their own.
    pub const LAST_IN_ORDER: u8 = 14;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_loss_codes_are_errors_and_only_they() {
        for &c in WarningCode::ALL {
            assert_eq!(c.severity() == Severity::Error, c.is_data_loss(), "{c}");
        }
    }
}
