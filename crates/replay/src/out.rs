//! `--out`: what is played, written as an MCAP whose log times are the scheduled (or actual)
//! publish times — a retimed bag for offline use. Written beside the target and renamed at
//! the end, so an interrupted run leaves no half file under the requested name.

use std::path::{Path, PathBuf};

use bagscope_bag::{Bag, Rosbag2Writer, Topic, WriteChannel, WriteError};

use crate::ReplayError;

pub(crate) struct OutTopic<'a> {
    pub topic: &'a Topic,
    pub published_as: &'a str,
}

#[derive(Default)]
pub(crate) struct Sinks {
    pub mcap: Option<McapOut>,
}

pub(crate) struct McapOut(Rosbag2Writer);

/// Where `--out PATH` is written until it is complete.
pub fn partial_path(path: &Path) -> PathBuf {
    bagscope_bag::write::partial_path(path)
}

fn err(e: WriteError) -> ReplayError {
    match e {
        WriteError::WouldOverwriteInput { path } => ReplayError::Usage(format!(
            "--out {} is part of the input bag: refusing to overwrite it",
            path.display()
        )),
        WriteError::Name { path, reason } => {
            ReplayError::Usage(format!("--out {}: {reason}", path.display()))
        }
        WriteError::Write { path, message } => {
            ReplayError::Out(format!("writing {}: {message}", path.display()))
        }
    }
}

impl McapOut {
    pub(crate) fn create(
        path: &Path,
        bag: &Bag,
        topics: &[OutTopic<'_>],
    ) -> Result<McapOut, ReplayError> {
        let mut w = Rosbag2Writer::create(
            path,
            concat!("bagscope play ", env!("CARGO_PKG_VERSION")),
            &bag.input_paths(),
        )
        .map_err(err)?;
        for t in topics {
            let (enc, data, _) = bagscope_msg::schema::builtin::schema_for_writing(
                &t.topic.type_name,
                &t.topic.schema_encoding,
                &t.topic.schema_data,
            )
            .unwrap_or_else(|| ("ros2msg".into(), Vec::new(), "none"));
            w.add_channel(&WriteChannel {
                topic: t.published_as,
                type_name: &t.topic.type_name,
                schema_encoding: &enc,
                schema_data: &data,
                message_encoding: &t.topic.message_encoding,
                offered_qos_profiles: t.topic.offered_qos_profiles.as_deref().unwrap_or(""),
                // Left out, as `play --out` always has: nothing reading a retimed bag uses it.
                type_description_hash: None,
            })
            .map_err(err)?;
        }
        Ok(McapOut(w))
    }

    /// `k`: index into the topics given at creation; messages numbered per topic from 1.
    pub(crate) fn write(
        &mut self,
        k: usize,
        log_time_ns: i64,
        publish_time_ns: i64,
        data: &[u8],
    ) -> Result<(), ReplayError> {
        self.0
            .write(k, None, log_time_ns, publish_time_ns, data)
            .map_err(err)
    }

    pub(crate) fn finish(self) -> Result<PathBuf, ReplayError> {
        self.0.finish().map_err(err)
    }
}
