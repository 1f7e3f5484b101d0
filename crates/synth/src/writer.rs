//! A small rosbag2 writer: one MCAP file with the `ros2` profile plus `metadata.yaml`, as
//! `ros2 bag record` lays them out.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use mcap::records::MessageHeader;

use crate::SynthError;

pub(crate) struct Message {
    pub topic: usize,
    pub log_time_ns: i64,
    pub publish_time_ns: i64,
    pub data: Vec<u8>,
}

pub(crate) struct TopicSpec {
    pub name: String,
    pub type_name: String,
}

/// Writes `messages` (any order; sorted by log time here, as a recorder receives them) into
/// `dir/NAME.mcap` with `dir/metadata.yaml`.
pub(crate) fn write_rosbag2(
    dir: &Path,
    name: &str,
    topics: &[TopicSpec],
    mut messages: Vec<Message>,
    zstd: bool,
) -> Result<PathBuf, SynthError> {
    messages.sort_by_key(|m| (m.log_time_ns, m.topic));
    let mut w = BagWriter::create(dir, name, topics, zstd, 256 * 1024)?;
    for m in &messages {
        w.write(m)?;
    }
    w.finish()
}

/// Streaming rosbag2 writer: messages must come in log-time order; memory stays at one chunk.
pub(crate) struct BagWriter {
    w: mcap::Writer<BufWriter<File>>,
    dir: PathBuf,
    file_name: String,
    topics: Vec<(String, String)>,
    channel_ids: Vec<u16>,
    seq: Vec<u32>,
    counts: Vec<u64>,
    start: Option<i64>,
    end: i64,
}

impl BagWriter {
    pub(crate) fn create(
        dir: &Path,
        name: &str,
        topics: &[TopicSpec],
        zstd: bool,
        chunk_size: u64,
    ) -> Result<BagWriter, SynthError> {
        std::fs::create_dir_all(dir).map_err(|e| SynthError::Io(dir.to_path_buf(), e))?;
        let file_name = format!("{name}.mcap");
        let path = dir.join(&file_name);
        let f = File::create(&path).map_err(|e| SynthError::Io(path.clone(), e))?;
        let opts = mcap::WriteOptions::new()
            .profile("ros2")
            .library("bagscope-synth")
            .compression(if zstd {
                Some(mcap::Compression::Zstd)
            } else {
                None
            })
            .chunk_size(Some(chunk_size));
        let mut w = opts.create(BufWriter::new(f))?;
        let mut channel_ids = Vec::new();
        for t in topics {
            let text = bagscope_msg::schema::builtin::schema_text(&t.type_name)
                .ok_or_else(|| SynthError::UnknownType(t.type_name.clone()))?;
            let sid = w.add_schema(&t.type_name, "ros2msg", text.as_bytes())?;
            let mut md = BTreeMap::new();
            md.insert("offered_qos_profiles".to_string(), String::new());
            channel_ids.push(w.add_channel(sid, &t.name, "cdr", &md)?);
        }
        Ok(BagWriter {
            w,
            dir: dir.to_path_buf(),
            file_name,
            topics: topics
                .iter()
                .map(|t| (t.name.clone(), t.type_name.clone()))
                .collect(),
            channel_ids,
            seq: vec![0; topics.len()],
            counts: vec![0; topics.len()],
            start: None,
            end: 0,
        })
    }

    pub(crate) fn write(&mut self, m: &Message) -> Result<(), SynthError> {
        self.seq[m.topic] += 1;
        self.counts[m.topic] += 1;
        self.start.get_or_insert(m.log_time_ns);
        self.end = m.log_time_ns;
        self.w.write_to_known_channel(
            &MessageHeader {
                channel_id: self.channel_ids[m.topic],
                sequence: self.seq[m.topic],
                log_time: m.log_time_ns.max(0) as u64,
                publish_time: m.publish_time_ns.max(0) as u64,
            },
            &m.data,
        )?;
        Ok(())
    }

    /// Closes the MCAP file and writes `metadata.yaml`; returns the MCAP path.
    pub(crate) fn finish(mut self) -> Result<PathBuf, SynthError> {
        self.w.finish()?;
        drop(self.w);
        let (dir, file_name) = (self.dir, self.file_name);
        let start = self.start.unwrap_or(0);
        let end = self.end;
        let total: u64 = self.counts.iter().sum();
        let mut y = String::new();
        y.push_str("rosbag2_bagfile_information:\n");
        y.push_str("  version: 9\n  storage_identifier: mcap\n");
        y.push_str(&format!("  duration:\n    nanoseconds: {}\n", end - start));
        y.push_str(&format!(
            "  starting_time:\n    nanoseconds_since_epoch: {start}\n"
        ));
        y.push_str(&format!("  message_count: {total}\n"));
        y.push_str("  topics_with_message_count:\n");
        for (i, (name, ty)) in self.topics.iter().enumerate() {
            y.push_str(&format!(
                "    - topic_metadata:\n        name: {}\n        type: {}\n        serialization_format: cdr\n        offered_qos_profiles: ''\n      message_count: {}\n",
                name, ty, self.counts[i]
            ));
        }
        y.push_str("  compression_format: ''\n  compression_mode: ''\n");
        y.push_str(&format!("  relative_file_paths:\n    - {file_name}\n"));
        y.push_str(&format!(
            "  files:\n    - path: {file_name}\n      starting_time:\n        nanoseconds_since_epoch: {start}\n      duration:\n        nanoseconds: {}\n      message_count: {total}\n",
            end - start
        ));
        y.push_str("  custom_data: ~\n  ros_distro: bagscope-synth\n");
        let meta = dir.join("metadata.yaml");
        std::fs::write(&meta, y).map_err(|e| SynthError::Io(meta, e))?;
        Ok(dir.join(file_name))
    }
}
