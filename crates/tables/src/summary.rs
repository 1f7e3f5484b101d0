//! `batch`'s summary table: one typed row per bag and topic, and the frame written as
//! `summary.parquet`.
//!
//! The rows are plain values: the facade fills them from each bag's `info` and `clocks` reports
//! (read back from the JSON files `batch` wrote, so the table and the files always agree). This
//! module only fixes the columns, their order and their types.

use polars::prelude::DataFrame;

use crate::{frame, Col, Result};

/// The summary table's columns, in order (also the README's documentation of them).
pub const SUMMARY_COLUMNS: [&str; 24] = [
    "bag",
    "topic",
    "type",
    "storage",
    "bag_duration_ns",
    "recorder_axis",
    "split",
    "count",
    "rate_hz",
    "first_log_time_ns",
    "last_log_time_ns",
    "median_period_ns",
    "largest_gap_ns",
    "clock_axis",
    "stamp_source",
    "lag_p50_ns",
    "lag_p95_ns",
    "lag_p99_ns",
    "lag_max_ns",
    "gap_count",
    "backward_jumps",
    "warnings",
    "bag_warnings",
    "data_loss",
];

/// One row of the summary table: a topic of a bag. `None` is a null cell (a value the reports
/// do not have, e.g. no lag for a topic without `header.stamp`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryRow {
    /// The bag's name in the batch (its output folder under `bags/`).
    pub bag: String,
    /// The topic's name.
    pub topic: String,
    /// The topic's message type.
    pub type_name: String,
    /// The bag's storage (`mcap`, `sqlite3`).
    pub storage: Option<String>,
    /// The bag's log-time span.
    pub bag_duration_ns: Option<i64>,
    /// The clock axis the recorder stamped log times on.
    pub recorder_axis: Option<String>,
    /// The bag holds topics stamped on different clock axes.
    pub split: Option<bool>,
    /// Messages on the topic.
    pub count: Option<i64>,
    /// The topic's rate over its own log-time span.
    pub rate_hz: Option<f64>,
    /// The topic's first log time.
    pub first_log_time_ns: Option<i64>,
    /// The topic's last log time.
    pub last_log_time_ns: Option<i64>,
    /// The median log-time period.
    pub median_period_ns: Option<i64>,
    /// The largest log-time gap.
    pub largest_gap_ns: Option<i64>,
    /// The clock axis of the topic's stamps.
    pub clock_axis: Option<String>,
    /// Where the topic's stamps come from (`header`, `log_time`, ...).
    pub stamp_source: Option<String>,
    /// Log time minus stamp, median.
    pub lag_p50_ns: Option<i64>,
    /// Log time minus stamp, 95th percentile.
    pub lag_p95_ns: Option<i64>,
    /// Log time minus stamp, 99th percentile.
    pub lag_p99_ns: Option<i64>,
    /// Log time minus stamp, largest.
    pub lag_max_ns: Option<i64>,
    /// Gaps found on the topic's stamps.
    pub gap_count: Option<i64>,
    /// Backward jumps of the topic's stamps.
    pub backward_jumps: Option<i64>,
    /// Distinct warnings naming the topic.
    pub warnings: i64,
    /// Distinct warnings of the bag that name no topic.
    pub bag_warnings: i64,
    /// A warning of the bag says messages were lost or are suspect.
    pub data_loss: bool,
}

/// The summary table of `rows`, in the order given, with the columns of [`SUMMARY_COLUMNS`]
/// (every column present and typed when there are no rows).
pub fn summary_frame(rows: &[SummaryRow]) -> Result<DataFrame> {
    fn s(rows: &[SummaryRow], f: impl Fn(&SummaryRow) -> Option<&str>) -> Col {
        Col::Str(rows.iter().map(|r| f(r).map(str::to_string)).collect())
    }
    fn i(rows: &[SummaryRow], f: impl Fn(&SummaryRow) -> Option<i64>) -> Col {
        Col::I64(rows.iter().map(f).collect())
    }
    fn b(rows: &[SummaryRow], f: impl Fn(&SummaryRow) -> Option<bool>) -> Col {
        Col::Bool(rows.iter().map(f).collect())
    }
    let cols: [Col; 24] = [
        s(rows, |r| Some(&r.bag)),
        s(rows, |r| Some(&r.topic)),
        s(rows, |r| Some(&r.type_name)),
        s(rows, |r| r.storage.as_deref()),
        i(rows, |r| r.bag_duration_ns),
        s(rows, |r| r.recorder_axis.as_deref()),
        b(rows, |r| r.split),
        i(rows, |r| r.count),
        Col::F64(rows.iter().map(|r| r.rate_hz).collect()),
        i(rows, |r| r.first_log_time_ns),
        i(rows, |r| r.last_log_time_ns),
        i(rows, |r| r.median_period_ns),
        i(rows, |r| r.largest_gap_ns),
        s(rows, |r| r.clock_axis.as_deref()),
        s(rows, |r| r.stamp_source.as_deref()),
        i(rows, |r| r.lag_p50_ns),
        i(rows, |r| r.lag_p95_ns),
        i(rows, |r| r.lag_p99_ns),
        i(rows, |r| r.lag_max_ns),
        i(rows, |r| r.gap_count),
        i(rows, |r| r.backward_jumps),
        i(rows, |r| Some(r.warnings)),
        i(rows, |r| Some(r.bag_warnings)),
        b(rows, |r| Some(r.data_loss)),
    ];
    frame(
        SUMMARY_COLUMNS
            .iter()
            .zip(cols)
            .map(|(n, c)| (n.to_string(), c))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_named_in_order_and_typed() {
        let row = SummaryRow {
            bag: "b".into(),
            topic: "/t".into(),
            type_name: "std_msgs/msg/Int32".into(),
            rate_hz: Some(2.5),
            lag_max_ns: Some(-7),
            warnings: 3,
            data_loss: true,
            ..SummaryRow::default()
        };
        let df = summary_frame(&[row]).unwrap();
        let names: Vec<String> = crate::column_names(&df);
        assert_eq!(names, SUMMARY_COLUMNS);
        assert_eq!(df.height(), 1);
        let col = |n: &str| df.column(n).unwrap().as_materialized_series().clone();
        assert_eq!(col("rate_hz").f64().unwrap().get(0), Some(2.5));
        assert_eq!(col("lag_max_ns").i64().unwrap().get(0), Some(-7));
        assert_eq!(col("lag_p50_ns").i64().unwrap().get(0), None);
        assert_eq!(col("warnings").i64().unwrap().get(0), Some(3));
        assert_eq!(col("data_loss").bool().unwrap().get(0), Some(true));
        assert_eq!(col("split").bool().unwrap().get(0), None);
        assert_eq!(
            col("type").str().unwrap().get(0),
            Some("std_msgs/msg/Int32")
        );
        let empty = summary_frame(&[]).unwrap();
        assert_eq!(crate::column_names(&empty), SUMMARY_COLUMNS);
        assert_eq!(empty.height(), 0);
    }
}
