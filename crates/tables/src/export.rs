//! What an export wrote: the report of `bagscope export` (its `--json`), for the message tables
//! and the timing table alike.

use serde::Serialize;

use bagscope_types::{CommandReport, Warning};

/// One table written (or built in memory).
#[derive(Debug, Clone, Serialize)]
pub struct ExportedTable {
    /// The file written; `None` for in-memory exports.
    pub path: Option<String>,
    /// The topics it holds: one for a message table, every exported topic for the timing table.
    pub topics: Vec<String>,
    /// Rows written: one per message.
    pub rows: u64,
    /// The table's column names, in order.
    pub columns: Vec<String>,
}

/// `bagscope export`: the tables written (the CLI's `export --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// One entry per table, sorted by topic name (message tables) or the one timing table.
    pub tables: Vec<ExportedTable>,
    /// Bag damage, messages that did not decode (data loss: their field columns are null),
    /// rows out of order across row groups, array elements cut off by `explode`; sorted.
    pub warnings: Vec<Warning>,
}

impl CommandReport for ExportReport {
    fn warnings(&self) -> Vec<&Warning> {
        self.warnings.iter().collect()
    }
}
