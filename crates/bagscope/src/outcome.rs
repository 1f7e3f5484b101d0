//! [`CommandReport`] for the facade's reports (the trait is `bagscope-types`' vocabulary, so
//! that reports of the crates beside the facade, `play`'s, implement it too).

pub use bagscope_types::CommandReport;

use crate::Warning;

/// Implements [`CommandReport`] for reports with a `warnings: Vec<Warning>` field.
macro_rules! warnings_field {
    ($($t:ty),* $(,)?) => {$(
        impl CommandReport for $t {
            fn warnings(&self) -> Vec<&Warning> {
                self.warnings.iter().collect()
            }
        }
    )*};
}

warnings_field!(
    crate::info::InfoReport,
    crate::clocks::ClocksCommandReport,
    crate::check::CheckReport,
    crate::sync::SyncCommandReport,
    crate::matching::MatchCommandReport,
    crate::hist::HistReport,
    crate::tf::TfCommandReport,
    crate::echo::EchoReport,
    crate::convert::ConvertReport,
    crate::observe::ObserveCommandReport,
);

impl CommandReport for crate::matching::CompareCommandReport {
    fn warnings(&self) -> Vec<&Warning> {
        self.warnings.values().flatten().collect()
    }
}

/// No warnings of its own: each bag's are in its folder; a bag that lost data is flagged.
#[cfg(feature = "tables")]
impl CommandReport for crate::batch::BatchReport {
    fn warnings(&self) -> Vec<&Warning> {
        Vec::new()
    }

    fn data_loss(&self) -> bool {
        self.bags.iter().any(|b| b.data_loss)
    }

    /// A bag lost data or failed, or the run was interrupted.
    fn finished_with_warnings(&self) -> bool {
        self.interrupted
            || self
                .bags
                .iter()
                .any(|b| b.status == crate::batch::Status::Failed || b.data_loss)
    }
}
