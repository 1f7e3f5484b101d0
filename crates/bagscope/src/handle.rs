//! [`Bag`]: an opened bag and one method per command.

use std::path::Path;

use crate::check::{CheckOptions, CheckReport};
use crate::clocks::{ClocksCommandReport, ClocksOptions};
use crate::hist::{HistOptions, HistReport};
use crate::info::InfoReport;
use crate::matching::{MatchArgs, MatchCommandReport};
use crate::sync::{SyncCommandReport, SyncOptions};
use crate::tf::{TfCommandReport, TfOptions};
use crate::Error;

/// An opened bag: a rosbag2 folder (split files, `metadata.yaml`), a single `.mcap` or `.db3`
/// file, or a rosbag2 file-compressed `.mcap.zstd` / `.db3.zstd`. Files are memory-mapped and
/// read on demand; damage found while opening is kept as warnings (every report includes them).
///
/// Each method answers one command's question and returns the same report the CLI prints with
/// `--json`.
pub struct Bag {
    inner: bagscope_bag::Bag,
}

impl Bag {
    /// Opens `path`. Errors name the file and what is wrong with it (missing, not a bag, no
    /// readable file listed in `metadata.yaml`, ...).
    pub fn open(path: impl AsRef<Path>) -> Result<Bag, Error> {
        Ok(Bag {
            inner: bagscope_bag::Bag::open(path)?,
        })
    }

    /// `r`, unless a read of a remote bag failed for good while computing it (the object was
    /// replaced, the store kept failing): then that error, since `r` is not the whole bag's
    /// answer.
    fn whole<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        match self.inner.take_read_failure() {
            Some(e) => Err(Error::Bag(e)),
            None => r,
        }
    }

    /// The path the bag was opened from.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The reader underneath (`bagscope-bag`): topics, schemas, raw message scans.
    pub fn reader(&self) -> &bagscope_bag::Bag {
        &self.inner
    }

    /// `bagscope info`: per-topic type, count, own-span rate, gaps, sizes, files, warnings.
    pub fn info(&self) -> InfoReport {
        crate::info::info_of(&self.inner)
    }

    /// `bagscope info` with options: `fast` reads the summaries alone (the bag is opened again
    /// from its path for that), `sort` orders the topics.
    pub fn info_with(&self, opts: &crate::info::InfoOptions) -> Result<InfoReport, Error> {
        if opts.fast {
            return crate::info::info_with(&self.inner.path, opts);
        }
        let mut r = self.info();
        crate::info::sort_topics(&mut r.topics, opts.sort);
        Ok(r)
    }

    /// `bagscope clocks`: which clock each topic is stamped on, lag, stamp health, `/clock`,
    /// split clock axes, with the findings worst first.
    pub fn clocks(&self, opts: &ClocksOptions) -> Result<ClocksCommandReport, Error> {
        self.whole(crate::clocks::clocks_data_of(&self.inner, &opts.analysis()).map(|d| d.report))
    }

    /// `bagscope check`: message contract checks (images, camera info, joints, point clouds,
    /// stamps).
    pub fn check(&self, opts: &CheckOptions) -> Result<CheckReport, Error> {
        self.whole(crate::check::check_of(&self.inner, opts))
    }

    /// `bagscope sync`: a message_filters synchronizer emulated message for message on the
    /// recorded arrival order, with drop reasons; or (`opts.recommend`) a slop and queue size
    /// recommendation.
    pub fn sync(&self, opts: &SyncOptions) -> Result<SyncCommandReport, Error> {
        self.whole(crate::sync::sync_of(&self.inner, opts))
    }

    /// `bagscope match`: the command → response delay and the tracking error before and after
    /// correcting for it.
    pub fn delay(&self, args: &MatchArgs) -> Result<MatchCommandReport, Error> {
        self.whole(crate::matching::match_bag_series_of(&self.inner, args).map(|(r, _, _)| r))
    }

    /// `bagscope echo`: the topic's messages decoded, each handed to `out` as it is read (a
    /// window and a count in `opts`); what was printed and any damage met.
    pub fn echo(
        &self,
        opts: &crate::echo::EchoOptions,
        out: impl FnMut(crate::echo::EchoedMessage) -> std::io::Result<()> + Send,
    ) -> Result<crate::echo::EchoReport, Error> {
        self.whole(crate::echo::echo_of(&self.inner, opts, out))
    }

    /// `bagscope hist`: distributions of stamp differences to the nearest partner, periods and
    /// lag.
    pub fn hist(&self, opts: &HistOptions) -> Result<HistReport, Error> {
        self.whole(crate::hist::hist_of(&self.inner, opts))
    }

    /// `bagscope report`'s data (everything the page shows but its figures): `info`, `clocks`
    /// and `check` from one scan, synchronizers on sensor pairs, command/response pairs
    /// matched, observations under a contract, the verdicts.
    pub fn report_data(
        &self,
        opts: &crate::report::ReportOptions,
    ) -> Result<crate::report::ReportData, Error> {
        crate::report::report_data(self, opts)
    }

    /// `bagscope tf`: what `tf2_ros::MessageFilter` would have done with each message.
    pub fn tf(&self, opts: &TfOptions) -> Result<TfCommandReport, Error> {
        self.whole(crate::tf::tf_of(&self.inner, opts))
    }

    /// `bagscope export --timing-only` in memory: one row per message with its log, publish and
    /// header times and lag, as a polars `DataFrame`.
    #[cfg(feature = "tables")]
    pub fn timing(
        &self,
        opts: &crate::export::ExportOptions,
    ) -> Result<
        (
            bagscope_tables::polars::prelude::DataFrame,
            crate::export::ExportReport,
        ),
        Error,
    > {
        self.whole(crate::export::timing_frame_of(&self.inner, opts))
    }

    /// The bag's rows of `batch`'s `summary.parquet` (one per topic, named `name` in the `bag`
    /// column), from the same `info` and default `clocks` reports `batch` writes.
    #[cfg(feature = "tables")]
    pub fn summary(
        &self,
        name: &str,
    ) -> Result<bagscope_tables::polars::prelude::DataFrame, Error> {
        // Read back as `batch` reads its info.json and clocks.json.
        let info = crate::batch::saved(&self.info())?;
        let clocks = crate::batch::saved(&self.clocks(&ClocksOptions::default())?)?;
        let rows = crate::batch::summary_rows(name, &info, &clocks);
        crate::batch::summary_frame(&rows)
    }

    /// `bagscope export`: messages as Parquet / CSV tables (one per topic, fields flattened).
    #[cfg(feature = "tables")]
    pub fn export(
        &self,
        out: &Path,
        opts: &crate::export::ExportOptions,
    ) -> Result<crate::export::ExportReport, Error> {
        self.whole(crate::export::export_of(&self.inner, out, opts))
    }
}

#[cfg(feature = "tables")]
impl Bag {
    /// [`Bag::timing`] as columns, from the column scan `clocks` reads (one parallel pass, no
    /// per-row buffering): the same rows and values, for callers that build their own arrays
    /// (the Python package's Arrow tables).
    pub fn timing_columns(
        &self,
        opts: &crate::export::ExportOptions,
    ) -> Result<(crate::timing::TimingColumns, crate::export::ExportReport), Error> {
        self.whole(crate::timing::timing_columns_of(&self.inner, opts))
    }

    /// [`Bag::timing_columns`] in batches, in bounded memory: a first read decides each
    /// topic's clock axis ([`crate::timing::timing_plan_of`]), then
    /// [`crate::timing::timing_batches`] hands out the rows `rows_per_batch` at a time.
    pub fn timing_plan(
        &self,
        opts: &crate::export::ExportOptions,
    ) -> Result<crate::timing::TimingPlan, Error> {
        crate::timing::timing_plan_of(&self.inner, opts)
    }

    /// The rows of `plan` in batches (see [`crate::timing::timing_batches`]).
    pub fn timing_batches(
        &self,
        plan: &crate::timing::TimingPlan,
        rows_per_batch: usize,
        stop: &std::sync::atomic::AtomicBool,
        emit: &mut dyn FnMut(crate::timing::TimingColumns) -> bool,
    ) -> u64 {
        crate::timing::timing_batches(&self.inner, plan, rows_per_batch, stop, emit)
    }
}
