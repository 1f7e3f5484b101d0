//! A small rosbag2 writer: one MCAP file with the `ros2` profile plus `metadata.yaml`, as
//! `ros2 bag record` lays them out.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use mcap::records::MessageHeader;

use crate::SynthError;

pub struct Message {
    pub topic: usize,
    pub log_time_ns: i64,
    pub publish_time_ns: i64,
    pub data: Vec<u8>,
}

pub struct TopicSpec {
    pub name: String,
    pub type_name: String,
}

/// Writes `messages` (any order; sorted by log time here, as a recorder receives them) into
/// `dir/NAME.mcap` with `dir/metadata.yaml`.
pub fn write_rosbag2(
    dir: &Path,
    name: &str,
    topics: &[TopicSpec],
    mut messages: Vec<Message>,
    zstd: bool,
) -> Result<PathBuf, SynthError> {
    std::fs::create_dir_all(dir).map_err(|e| SynthError::Io(dir.to_path_buf(), e))?;
    messages.sort_by_key(|m| (m.log_time_ns, m.topic));
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
        .chunk_size(Some(256 * 1024));
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
    let mut seq = vec![0u32; topics.len()];
    let mut counts = vec![0u64; topics.len()];
    for m in &messages {
        seq[m.topic] += 1;
        counts[m.topic] += 1;
        w.write_to_known_channel(
            &MessageHeader {
                channel_id: channel_ids[m.topic],
                sequence: seq[m.topic],
                log_time: m.log_time_ns.max(0) as u64,
                publish_time: m.publish_time_ns.max(0) as u64,
            },
            &m.data,
        )?;
    }
    w.finish()?;
    drop(w);

    let start = messages.first().map(|m| m.log_time_ns).unwrap_or(0);
    let end = messages.last().map(|m| m.log_time_ns).unwrap_or(0);
    let mut y = String::new();
    y.push_str("rosbag2_bagfile_information:\n");
    y.push_str("  version: 9\n  storage_identifier: mcap\n");
    y.push_str(&format!("  duration:\n    nanoseconds: {}\n", end - start));
    y.push_str(&format!(
        "  starting_time:\n    nanoseconds_since_epoch: {start}\n"
    ));
    y.push_str(&format!("  message_count: {}\n", messages.len()));
    y.push_str("  topics_with_message_count:\n");
    for (i, t) in topics.iter().enumerate() {
        y.push_str(&format!(
            "    - topic_metadata:\n        name: {}\n        type: {}\n        serialization_format: cdr\n        offered_qos_profiles: ''\n      message_count: {}\n",
            t.name, t.type_name, counts[i]
        ));
    }
    y.push_str("  compression_format: ''\n  compression_mode: ''\n");
    y.push_str(&format!("  relative_file_paths:\n    - {file_name}\n"));
    y.push_str(&format!(
        "  files:\n    - path: {file_name}\n      starting_time:\n        nanoseconds_since_epoch: {start}\n      duration:\n        nanoseconds: {}\n      message_count: {}\n",
        end - start,
        messages.len()
    ));
    y.push_str("  custom_data: ~\n  ros_distro: bagscope-synth\n");
    let meta = dir.join("metadata.yaml");
    std::fs::write(&meta, y).map_err(|e| SynthError::Io(meta, e))?;
    Ok(path)
}
