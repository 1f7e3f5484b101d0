//! rosbag2 `metadata.yaml`: only the fields bagscope uses, every one optional, because writers
//! (rosbag2 of several distros, rosbags, mcap tools) disagree on which they fill.

use std::path::Path;

use serde::Deserialize;

use crate::error::{BagError, Result};

/// The top level of `metadata.yaml`.
#[derive(Debug, Clone, Deserialize)]
pub struct MetadataFile {
    /// Everything rosbag2 writes, under its one key.
    pub rosbag2_bagfile_information: Rosbag2Metadata,
}

/// `rosbag2_bagfile_information`: what the recorder wrote about the bag.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Rosbag2Metadata {
    /// Version of the `metadata.yaml` format.
    pub version: Option<u32>,
    /// Storage plugin: `mcap` or `sqlite3` (others are refused); empty when unstated.
    pub storage_identifier: String,
    /// The bag's files, relative to the folder, in recording order.
    pub relative_file_paths: Vec<String>,
    /// `zstd` when compressed; empty or absent otherwise.
    pub compression_format: Option<String>,
    /// `FILE` (each file compressed) or `MESSAGE` (each payload); empty or `NONE` otherwise.
    pub compression_mode: Option<String>,
    /// Messages in the whole bag, as the recorder counted them.
    pub message_count: Option<u64>,
    /// ROS distribution of the recorder, e.g. `humble`.
    pub ros_distro: Option<String>,
    /// Each topic with its message count.
    pub topics_with_message_count: Vec<TopicWithCount>,
    /// Per-file entries (rosbag2 >= Foxy); used to cross-check split sets.
    pub files: Vec<FileEntry>,
}

/// One entry of `files`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FileEntry {
    /// File path, relative to the folder.
    pub path: String,
    /// Messages in that file.
    pub message_count: Option<u64>,
}

/// One entry of `topics_with_message_count`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TopicWithCount {
    /// Messages recorded on the topic.
    pub message_count: u64,
    /// The topic's name, type and QoS.
    pub topic_metadata: TopicMetadata,
}

/// A topic as `metadata.yaml` describes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TopicMetadata {
    /// Topic name.
    pub name: String,
    /// Message type, e.g. `sensor_msgs/msg/Image` (`type` in the file).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Payload encoding, normally `cdr`.
    pub serialization_format: String,
    /// rosbag2 writes this either as a YAML string (older distros) or a list (newer ones);
    /// kept as raw YAML so `play` can interpret it.
    pub offered_qos_profiles: serde_yaml_ng::Value,
    /// RIHS01 type hash (Iron and later).
    pub type_description_hash: Option<String>,
}

impl Rosbag2Metadata {
    /// Reads and parses `path` (a `metadata.yaml`).
    pub fn read(path: &Path) -> Result<Rosbag2Metadata> {
        let text = std::fs::read_to_string(path).map_err(|source| BagError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses `text`, the `metadata.yaml` at `path` (named in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Rosbag2Metadata> {
        let file: MetadataFile = crate::yaml::from_str(text).map_err(|e| BagError::Metadata {
            path: path.to_path_buf(),
            reason: match e {
                crate::yaml::YamlError::Parse(reason) => reason,
                refused => refused.to_string(),
            },
        })?;
        Ok(file.rosbag2_bagfile_information)
    }

    /// The metadata a rosbag2 file keeps about its bag (an MCAP `rosbag2` Metadata record's
    /// `serialized_metadata`, a `.db3`'s `metadata` table from Iron on): what `metadata.yaml`
    /// holds under `rosbag2_bagfile_information`, with or without that key. None when it
    /// does not parse.
    pub fn from_serialized(text: &str) -> Option<Rosbag2Metadata> {
        let v: serde_yaml_ng::Value = crate::yaml::from_str(text).ok()?;
        let inner = v.get("rosbag2_bagfile_information").cloned().unwrap_or(v);
        serde_yaml_ng::from_value(inner).ok()
    }

    /// rosbag2 compresses either each message payload or each whole file.
    pub fn message_compression(&self) -> bool {
        self.compression_mode
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case("message"))
            && self
                .compression_format
                .as_deref()
                .is_some_and(|f| !f.is_empty())
    }

    /// rosbag2 compresses each whole file (`compression_mode: FILE` with a format): the files are `NAME.mcap.zstd` / `NAME.db3.zstd`.
    pub fn file_compression(&self) -> bool {
        self.compression_mode
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case("file"))
            && self
                .compression_format
                .as_deref()
                .is_some_and(|f| !f.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rosbags_style_metadata() {
        let y = r#"
rosbag2_bagfile_information:
  compression_format: ''
  compression_mode: ''
  custom_data: null
  duration:
    nanoseconds: 23999417652
  files:
  - path: arm_sim.mcap
  message_count: 5400
  relative_file_paths:
  - arm_sim.mcap
  storage_identifier: mcap
  topics_with_message_count:
  - message_count: 480
    topic_metadata:
      name: /arm_cmd
      offered_qos_profiles: []
      serialization_format: cdr
      type: trajectory_msgs/msg/JointTrajectory
      type_description_hash:
        RIHS01_179b
  version: 9
"#;
        let m: MetadataFile = serde_yaml_ng::from_str(y).unwrap();
        let m = m.rosbag2_bagfile_information;
        assert_eq!(m.relative_file_paths, vec!["arm_sim.mcap"]);
        assert_eq!(m.topics_with_message_count[0].message_count, 480);
        assert!(!m.message_compression());
    }
}
