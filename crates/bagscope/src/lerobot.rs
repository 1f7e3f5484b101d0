//! `observe --layout lerobot`: the observations as a LeRobot dataset (format v3.0, the one the
//! `lerobot` package reads since its 0.4 releases), one bag = one episode, written by
//! `bagscope-tables`' writer ([`bagscope_tables::lerobot`], where its layout is described).
//! This module holds the rules of where it may go ([`check_target`]: a new path or an empty
//! folder; none of the bag's files) and hands the writer the contract's topics, the action,
//! the task and the row-group size.

use std::path::Path;

use crate::io::Bag;
use crate::Error;
use bagscope_observe::Observation;
use bagscope_tables::lerobot::{Episode, LeRobotError};

pub use bagscope_tables::lerobot::{LeRobotLayout, CODEBASE_VERSION};

/// The writer's errors as the facade's: a file that cannot be written is [`Error::Output`],
/// observations that cannot make a dataset [`Error::NoData`].
impl From<LeRobotError> for Error {
    fn from(e: LeRobotError) -> Error {
        match e {
            LeRobotError::Write { path, what, source } => Error::write_failed(&path, what, source),
            LeRobotError::Refused(reason) => Error::no_data(reason),
            LeRobotError::Frames(e) => Error::Frames(e),
        }
    }
}

/// What is in `dir`, for an error message: up to five entries by name (folders with a `/`),
/// and how many more.
fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        format!("{n}/")
                    } else {
                        n
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let more = names.len().saturating_sub(5);
    names.truncate(5);
    let mut s = names.join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Whether `dir` holds anything (an unreadable folder counts as holding something).
pub(crate) fn non_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut rd| rd.next().is_some())
}

/// The rule for the dataset's folder `out` (`OUT/lerobot`): a new path or an empty folder. A
/// LeRobot dataset is one whole (`info.json` counts the frames of every data file), so
/// writing into one that is there would mix the old files with the new (a second run once left
/// 687 rows in `data/` beside an `info.json` of 229 frames); the error names the folder and
/// what is in it. Checked before the bag is read ([`crate::observe::check_outputs`]) and again
/// before the dataset is moved into place.
pub fn check_target(out: &Path) -> Result<(), Error> {
    crate::refuse_output_dir(out)?;
    if out.is_dir() && non_empty(out) {
        return Err(Error::refused_output(
            out,
            format!(
                "`layout` lerobot: {} is not empty ({}): a LeRobot dataset is written whole \
                 into a new or empty folder, never mixed with the files of another; remove it \
                 or write to another `out`",
                out.display(),
                listing(out)
            ),
        ));
    }
    Ok(())
}

/// The LeRobot dataset written as the observations are made (`observe -o OUT --layout
/// lerobot`), by [`bagscope_tables::lerobot::LeRobotWriter`].
pub(crate) struct LeRobotWriter(bagscope_tables::lerobot::LeRobotWriter);

impl LeRobotWriter {
    /// Starts a dataset of one episode under `out`, which must be a new path or an empty
    /// folder ([`check_target`]). `action_topic` is a state entry of the contract (a command
    /// topic with `mode: hold`); every other state topic goes into `observation.state`.
    pub(crate) fn new(
        bag: &Bag,
        lc: &crate::observe::LoadedContract,
        out: &Path,
        action_topic: &str,
        task: &str,
    ) -> Result<LeRobotWriter, Error> {
        check_target(out)?;
        let c = &lc.contract;
        let state_topics: Vec<String> = c.state.iter().map(|s| s.topic.clone()).collect();
        let action = state_topics
            .iter()
            .position(|t| t == action_topic)
            .ok_or_else(|| {
                Error::invalid(
                    "action",
                    format!("{action_topic}: not a state topic of the contract (add it under state:, e.g. with mode: hold)"),
                )
            })?;
        let written = bagscope_tables::lerobot::LeRobotWriter::files(out);
        crate::refuse_outputs(bag, &written.each_ref().map(|p| p.as_path()))?;
        let episode = Episode {
            state_topics,
            action,
            image_topics: c.sync_topics(),
            task: task.to_string(),
        };
        let periods = |stage: &Path| -> Box<dyn bagscope_observe::Values> {
            Box::new(crate::observe::SpillValues::new(Some(stage)))
        };
        Ok(LeRobotWriter(bagscope_tables::lerobot::LeRobotWriter::new(
            out,
            episode,
            crate::observe::ROW_GROUP_ROWS,
            periods,
        )?))
    }

    /// The frame of observation `o` ([`bagscope_tables::lerobot::LeRobotWriter::push`]).
    pub(crate) fn push(
        &mut self,
        shape: &crate::observe::Shape,
        o: &Observation,
    ) -> Result<(), Error> {
        Ok(self.0.push(&shape.state, o)?)
    }

    /// Writes the metadata and moves the dataset into place, which must still be new or an
    /// empty folder ([`check_target`], checked again: something may have appeared meanwhile).
    /// Refuses an empty episode.
    pub(crate) fn finish(self) -> Result<LeRobotLayout, Error> {
        let staged = self.0.finish()?;
        check_target(staged.out())?;
        Ok(staged.commit()?)
    }
}
