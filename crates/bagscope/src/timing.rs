//! The timing table (`export --timing-only`) in memory, as columns, or in batches: the rows
//! are made by `bagscope-tables`' one producer ([`bagscope_tables::timing`]); this module hands
//! it the exported topics, the stamps as `clocks` reads them ([`SeriesStamps`]) and the clocks
//! analysis that decides each topic's `clock_axis`.

use std::sync::atomic::{AtomicUsize, Ordering};

use bagscope_bag::{Bag, Columns, RawMessage, Warning};
use bagscope_clocks::{analyze, ClocksOptions};
use bagscope_msg::{MessageSchema, StampLocator};
use bagscope_tables::timing::{Stamps, TimingRequest};

use crate::export::{ExportOptions, ExportReport};
use crate::series::{
    locators, series_of_columns, stamp_values, topic_schemas, NO_STAMP_READ, UNREADABLE,
};
use crate::Error;

pub use bagscope_tables::timing::{
    NullableI64, NullableKeys, TimingColumns, TimingPlan, DEFAULT_ROWS_PER_BATCH,
};

/// A message's times as the series scan reads them ([`stamp_values`]), for the timing table.
pub(crate) struct SeriesStamps {
    schemas: Vec<Result<MessageSchema, String>>,
    locs: Vec<StampLocator>,
    invalid: Vec<AtomicUsize>,
}

impl SeriesStamps {
    pub(crate) fn of(bag: &Bag) -> SeriesStamps {
        let schemas = topic_schemas(bag);
        SeriesStamps {
            locs: locators(&schemas),
            invalid: bag.topics.iter().map(|_| AtomicUsize::new(0)).collect(),
            schemas,
        }
    }

    /// Each bag topic's schema, or why it has none.
    pub(crate) fn schemas(&self) -> &[Result<MessageSchema, String>] {
        &self.schemas
    }

    /// Each bag topic's stamp locator.
    pub(crate) fn locators(&self) -> &[StampLocator] {
        &self.locs
    }

    /// The clocks analysis of the times read with [`Stamps::values`] (`columns`, each in
    /// log-time order, of the `topics` read): each bag topic's axis name, and the series'
    /// warnings.
    pub(crate) fn axes(
        &self,
        bag: &Bag,
        topics: &[bool],
        columns: Vec<Columns<2>>,
        scan_warnings: Vec<Warning>,
    ) -> (Vec<String>, Vec<Warning>) {
        let (series, warnings) = series_of_columns(
            bag,
            topics,
            &self.schemas,
            &self.locs,
            columns,
            &self.invalid,
            scan_warnings,
        );
        let r = analyze(
            &crate::clocks::times_of_series(series),
            &ClocksOptions::default(),
        );
        (crate::export::axis_names(bag, &r.topics), warnings)
    }
}

impl Stamps for SeriesStamps {
    #[inline]
    fn values(&self, m: &RawMessage<'_>) -> [i64; 2] {
        stamp_values(&self.locs[m.topic], m, &self.invalid[m.topic])
    }

    #[inline]
    fn cells(&self, m: &RawMessage<'_>) -> (Option<i64>, Option<i64>) {
        let [publish, stamp] = self.values(m);
        (
            (publish != NO_STAMP_READ).then_some(publish),
            (!matches!(stamp, UNREADABLE | NO_STAMP_READ)).then_some(stamp),
        )
    }

    fn restart(&self) {
        self.invalid
            .iter()
            .for_each(|c| c.store(0, Ordering::Relaxed));
    }
}

/// The timing table of the exported topics of `o` (all when empty), as `export --timing-only`
/// writes it, and the report the export gives: [`timing_plan_of`], then the rows in columns
/// sized for the whole table.
pub fn timing_columns_of(
    bag: &Bag,
    o: &ExportOptions,
) -> Result<(TimingColumns, ExportReport), Error> {
    let plan = timing_plan_of(bag, o)?;
    let table = bagscope_tables::timing::timing_columns(bag, &plan, &SeriesStamps::of(bag));
    Ok((table, plan.report))
}

/// The first read of the timing table ([`bagscope_tables::timing::timing_plan`]): the
/// exported topics' (and any clock topic's) stamps as `clocks` reads them, analysed for their
/// clock axes.
pub fn timing_plan_of(bag: &Bag, o: &ExportOptions) -> Result<TimingPlan, Error> {
    plan_with(bag, o, &SeriesStamps::of(bag), None)
}

/// [`timing_plan_of`] with `stamps`, and the axes given where they are known (`batch` has
/// just run `clocks` on the same bag: every topic's axis, and the warnings of its scan).
pub(crate) fn plan_with(
    bag: &Bag,
    o: &ExportOptions,
    stamps: &SeriesStamps,
    known: Option<(Vec<String>, Vec<Warning>)>,
) -> Result<TimingPlan, Error> {
    let o = ExportOptions {
        timing_only: true,
        ..o.clone()
    };
    let plan = crate::export::plan(bag, &o)?;
    let request = TimingRequest {
        exported: plan.topics,
        bag_name: o.bag_column.then(|| plan.bag_name.clone()),
    };
    let axes: Box<bagscope_tables::timing::Axes<'_>> = match known {
        Some((axes, known_warnings)) => Box::new(move |_, _, mut scan_warnings| {
            let mut w = known_warnings;
            w.append(&mut scan_warnings);
            (axes, w)
        }),
        None => Box::new(|topics, columns, scan_warnings| {
            stamps.axes(bag, topics, columns, scan_warnings)
        }),
    };
    Ok(bagscope_tables::timing::timing_plan(
        bag, &request, stamps, axes,
    ))
}

/// The rows of `plan` ([`timing_plan_of`]) in batches of `rows_per_batch` rows, handed to
/// `emit` as they are made (see [`bagscope_tables::timing::timing_batches`]). Returns the
/// rows made.
pub fn timing_batches(
    bag: &Bag,
    plan: &TimingPlan,
    rows_per_batch: usize,
    stop: &std::sync::atomic::AtomicBool,
    emit: &mut dyn FnMut(TimingColumns) -> bool,
) -> u64 {
    bagscope_tables::timing::timing_batches(
        bag,
        plan,
        &SeriesStamps::of(bag),
        rows_per_batch,
        stop,
        emit,
    )
}
