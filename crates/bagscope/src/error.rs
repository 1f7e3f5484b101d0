//! [`Error`]: why a command could not answer, one variant per kind of failure, and the one
//! rule ([`Error::is_usage`]) for which of them are about how the command was asked (the CLI
//! exits 2 on those, Python raises `InvalidParameter`).

use std::path::{Path, PathBuf};

use crate::BagError;

/// Why a command could not answer; every variant names what to fix or what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bag could not be opened or read.
    #[error(transparent)]
    Bag(#[from] BagError),
    /// A parameter that is malformed, missing, out of range, names something the command was
    /// not given, or does not apply to the command as asked: a usage error. `name` is the
    /// parameter's name (`slop`, `topics`: the Python keyword; the CLI spells it as its flag,
    /// `--slop`); `reason` may name other parameters between backquotes (`` `policy` ``),
    /// which the CLI spells as flags too.
    #[error("{name}: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: String,
        /// What is wrong with it, and what to give instead.
        reason: String,
    },
    /// The bag holds nothing the analysis can work on, or the analysis cannot answer for this
    /// input (a topic without messages, two clocks nothing maps between); the reason says
    /// what is missing and what to try.
    #[error("{reason}")]
    NoData {
        /// What is missing.
        reason: String,
    },
    /// An input file a parameter names (a limits file) cannot be read or is not what it
    /// should be.
    #[error("{reason}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the file.
        reason: String,
    },
    /// An output that cannot be written, or is refused before anything is written (one of
    /// the bag's own files, a device, an existing file without `force`).
    #[error("{reason}")]
    Output {
        /// The file or folder; None for standard output.
        path: Option<PathBuf>,
        /// What failed, naming the path.
        reason: String,
        /// The operating system's error, when there is one.
        #[source]
        source: Option<std::io::Error>,
    },
    /// An `observe` contract (or another hand-written YAML file) that cannot be used: a usage
    /// error naming the file, the key and its line.
    #[error(transparent)]
    Contract(#[from] bagscope_observe::ContractError),
    /// A synchronizer refused its parameters or inputs.
    #[error(transparent)]
    Sync(#[from] bagscope_sync::SyncError),
    /// A topic's message definition could not be used.
    #[error("{topic}: no usable schema")]
    Schema {
        /// The topic whose definition is unusable.
        topic: String,
        /// What is wrong with its definition.
        #[source]
        source: bagscope_msg::SchemaError,
    },
    /// Command/response matching found nothing to measure.
    #[error("{}", bag.display())]
    Match {
        /// The bag the topics were read from.
        bag: PathBuf,
        /// Why the matching failed.
        #[source]
        source: bagscope_matching::MatchError,
    },
    /// Writing a bag (`convert`) failed or would have replaced the input.
    #[error(transparent)]
    Write(#[from] bagscope_bag::WriteError),
    /// Writing a table (Parquet / CSV) failed.
    #[cfg(feature = "tables")]
    #[error(transparent)]
    Frames(#[from] bagscope_tables::FramesError),
    /// The fields asked for cannot be read from a topic's messages.
    #[cfg(feature = "tables")]
    #[error("{topic}")]
    Fields {
        /// The topic whose fields were asked for.
        topic: String,
        /// Which field and why.
        #[source]
        source: bagscope_tables::FramesError,
    },
}

/// The message tables' errors as the facade's: a field the type lacks is [`Error::Fields`],
/// fields asked of a topic without a schema a `fields` parameter error.
#[cfg(feature = "tables")]
impl From<bagscope_tables::export::ExportError> for Error {
    fn from(e: bagscope_tables::export::ExportError) -> Error {
        use bagscope_tables::export::ExportError as E;
        match e {
            E::Fields { topic, source } => Error::Fields { topic, source },
            E::NoSchema { .. } => Error::invalid("fields", e.to_string()),
            E::Frames(e) => Error::Frames(e),
        }
    }
}

impl Error {
    /// [`Error::InvalidParameter`].
    pub fn invalid(name: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::InvalidParameter {
            name: name.into(),
            reason: reason.into(),
        }
    }

    /// [`Error::NoData`].
    pub fn no_data(reason: impl Into<String>) -> Error {
        Error::NoData {
            reason: reason.into(),
        }
    }

    /// [`Error::Output`] about `path`, without an OS error.
    pub fn refused_output(path: &Path, reason: impl Into<String>) -> Error {
        Error::Output {
            path: Some(path.to_path_buf()),
            reason: reason.into(),
            source: None,
        }
    }

    /// [`Error::Output`]: `what` (naming `path`) failed with the OS error `e`.
    pub fn write_failed(path: &Path, what: impl Into<String>, e: std::io::Error) -> Error {
        Error::Output {
            path: Some(path.to_path_buf()),
            reason: format!("{}: {e}", what.into()),
            source: Some(e),
        }
    }

    /// Whether the error is about how the command was asked rather than about the bag: a
    /// parameter that is malformed, missing, out of range or does not apply, an unusable
    /// contract, a synchronizer parameter out of range, a field path the type lacks. The CLI
    /// exits 2 on these, as on a malformed argument; Python raises `InvalidParameter`.
    pub fn is_usage(&self) -> bool {
        use bagscope_sync::SyncError as S;
        match self {
            Error::InvalidParameter { .. } | Error::Contract(_) => true,
            // A topic pattern that is not a regular expression (`convert --regex`).
            Error::Bag(BagError::InvalidPattern { .. }) => true,
            Error::Sync(e) => matches!(
                e,
                S::TopicCount(_)
                    | S::TopicOutOfRange { .. }
                    | S::ParamLength { .. }
                    | S::InvalidParam(_)
                    | S::UnknownPolicy(_)
                    | S::InvalidDuration(_)
            ),
            // A field path the topic's type does not have (`export --fields`).
            #[cfg(feature = "tables")]
            Error::Fields {
                source: bagscope_tables::FramesError::Usage(_),
                ..
            } => true,
            _ => false,
        }
    }

    /// The parameter a usage error is about, and its reason: the CLI spells `name` (and the
    /// parameters the reason names between backquotes) as its flags.
    pub fn parameter(&self) -> Option<(&str, &str)> {
        match self {
            Error::InvalidParameter { name, reason } => Some((name, reason)),
            _ => None,
        }
    }
}
