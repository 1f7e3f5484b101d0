//! [`CommandReport`]: what every command's report tells its caller besides its numbers.

use crate::Warning;

/// A command's report: its warnings, and whether the command finished with lost or suspect
/// data. One rule for the CLI's exit code 3 and Python's `data_loss`.
pub trait CommandReport {
    /// Every warning the report carries (of every bag, for reports over several).
    fn warnings(&self) -> Vec<&Warning>;

    /// Messages were lost or are suspect (a cut file, a bad chunk, undecodable messages):
    /// a warning says so.
    fn data_loss(&self) -> bool {
        self.warnings().iter().any(|w| w.data_loss)
    }

    /// The command finished, but with something its caller must not miss: [`data_loss`],
    /// and for commands over many bags or a live graph also a failed bag or an interrupted
    /// run. The CLI exits 3 on it.
    ///
    /// [`data_loss`]: CommandReport::data_loss
    fn finished_with_warnings(&self) -> bool {
        self.data_loss()
    }
}
