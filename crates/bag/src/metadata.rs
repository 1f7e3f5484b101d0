//! rosbag2 `metadata.yaml`: only the fields bagscope uses, every one optional, because writers
//! (rosbag2 of several distros, rosbags, mcap tools) disagree on which they fill.

use std::path::Path;

use serde::Deserialize;

use crate::error::{BagError, Result};

#[derive(Debug, Clone, Deserialize)]
pub struct MetadataFile {
    pub rosbag2_bagfile_information: Rosbag2Metadata,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Rosbag2Metadata {
    pub version: Option<u32>,
    pub storage_identifier: String,
    pub relative_file_paths: Vec<String>,
    pub compression_format: Option<String>,
    pub compression_mode: Option<String>,
    pub message_count: Option<u64>,
    pub ros_distro: Option<String>,
    pub topics_with_message_count: Vec<TopicWithCount>,
    /// Per-file entries (rosbag2 >= Foxy); used to cross-check split sets.
    pub files: Vec<FileEntry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct FileEntry {
    pub path: String,
    pub message_count: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TopicWithCount {
    pub message_count: u64,
    pub topic_metadata: TopicMetadata,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TopicMetadata {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub serialization_format: String,
    /// rosbag2 writes this either as a YAML string (older distros) or a list (newer ones);
    /// kept as raw YAML so `play` can interpret it.
    pub offered_qos_profiles: serde_yaml_ng::Value,
    pub type_description_hash: Option<String>,
}

impl Rosbag2Metadata {
    pub fn read(path: &Path) -> Result<Rosbag2Metadata> {
        let text = std::fs::read_to_string(path).map_err(|source| BagError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file: MetadataFile =
            serde_yaml_ng::from_str(&text).map_err(|e| BagError::Metadata {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        Ok(file.rosbag2_bagfile_information)
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
