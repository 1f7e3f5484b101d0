//! Writing rosbag2-compatible MCAP files: what `convert` and `play --out` produce. The
//! reading side of this crate is the only other code that knows the file format.
//!
//! The file is the `ros2` profile with zstd chunks of 4 MiB, message indexes and a summary,
//! each channel carrying the `offered_qos_profiles` metadata rosbag2 always writes (players
//! read QoS from it). It is written to `PATH.partial` and renamed when finished, so an
//! interrupted run leaves no half file under the requested name; a writer dropped before it
//! finished removes its partial file, and [`crate::outfile::remove_live`] removes it on a
//! signal. The partial file is created anew ([`crate::outfile::create_temp`]): a leftover of
//! a killed run is replaced, a link planted under its name is not followed.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::outfile::{self, with_causes};

/// Why a bag could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The output is one of the files being read: writing would destroy the input.
    #[error("{path} is part of the input bag: refusing to overwrite it")]
    WouldOverwriteInput {
        /// The output path asked for.
        path: PathBuf,
    },
    /// The output's name says a format this writer does not write ([`check_output_name`]).
    #[error("{path}: {reason}")]
    Name {
        /// The output path asked for.
        path: PathBuf,
        /// Which format the name says, and what is written.
        reason: String,
    },
    /// Creating, writing, finishing or renaming the output failed.
    #[error("cannot write {path}: {message}")]
    Write {
        /// The file being written: the partial file, or where it was to be renamed to.
        path: PathBuf,
        /// What failed, with its causes.
        message: String,
    },
}

/// One channel to write: a topic with its type, schema and QoS as recorded.
#[derive(Debug, Clone, Copy)]
pub struct WriteChannel<'a> {
    /// Topic name.
    pub topic: &'a str,
    /// Message type, e.g. `sensor_msgs/msg/Image`.
    pub type_name: &'a str,
    /// `ros2msg`, `ros2idl`, …; with an empty `schema_data` readers cannot decode the topic.
    pub schema_encoding: &'a str,
    /// The definition text; may be empty.
    pub schema_data: &'a [u8],
    /// `cdr` where empty.
    pub message_encoding: &'a str,
    /// rosbag2's YAML; written (empty when unknown) because rosbag2 always writes the key.
    pub offered_qos_profiles: &'a str,
    /// RIHS01 type hash to write in the channel metadata, when known.
    pub type_description_hash: Option<&'a str>,
}

/// Refuses an output name that says a format other than the one MCAP file written: a name
/// ending in `.zstd` or `.zst` (rosbag2 file compression: readers, this one included, would
/// decompress a plain file and fail) or `.db3` (rosbag2's sqlite3 storage). The reason names
/// what is written.
pub fn check_output_name(path: &Path) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let said = if name.ends_with(".zstd") || name.ends_with(".zst") {
        "a zstd-compressed file (rosbag2 file compression)"
    } else if name.ends_with(".db3") {
        "a sqlite3 database (rosbag2's .db3 storage)"
    } else {
        return Ok(());
    };
    Err(format!(
        "the name says {said}, but the output is one MCAP file (its chunks zstd-compressed): name it *.mcap"
    ))
}

/// Where a bag being written lives until it is complete.
pub fn partial_path(path: &Path) -> PathBuf {
    outfile::temp_path(path, ".partial")
}

/// A rosbag2-compatible MCAP file being written. See the module documentation.
pub struct Rosbag2Writer {
    /// `None` once finished.
    w: Option<mcap::Writer<BufWriter<File>>>,
    channels: Vec<u16>,
    /// Last sequence number written per channel, for messages that bring none.
    sequence: Vec<u32>,
    negative_times: u64,
    tmp: PathBuf,
    path: PathBuf,
    /// The file reached its final name; until then dropping removes `tmp`.
    renamed: bool,
}

impl Rosbag2Writer {
    /// Starts `path` (as `path.partial`). `library` names the writer in the file's header;
    /// `inputs` are the files being read ([`crate::Bag::input_paths`]): neither `path` nor
    /// its partial file may be one of them (by any name: links count).
    pub fn create(
        path: &Path,
        library: &str,
        inputs: &[PathBuf],
    ) -> Result<Rosbag2Writer, WriteError> {
        check_output_name(path).map_err(|reason| WriteError::Name {
            path: path.to_path_buf(),
            reason,
        })?;
        let tmp = partial_path(path);
        if let Some(target) = outfile::input_among(&[path, tmp.as_path()], inputs) {
            return Err(WriteError::WouldOverwriteInput {
                path: target.to_path_buf(),
            });
        }
        // A device, FIFO or folder under that name is refused before anything is created.
        outfile::check_output_file(path).map_err(|e| WriteError::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let fail = |e: &(dyn std::error::Error + 'static)| WriteError::Write {
            path: tmp.clone(),
            message: with_causes(e),
        };
        // A leftover partial file of a killed run is replaced; a link there is not followed.
        let file = outfile::create_temp(&tmp).map_err(|e| fail(&e))?;
        let w = mcap::WriteOptions::new()
            .profile("ros2")
            .library(library)
            .compression(Some(mcap::Compression::Zstd))
            .chunk_size(Some(4 << 20))
            .create(BufWriter::new(file));
        match w {
            Ok(w) => Ok(Rosbag2Writer {
                w: Some(w),
                channels: Vec::new(),
                sequence: Vec::new(),
                negative_times: 0,
                tmp,
                path: path.to_path_buf(),
                renamed: false,
            }),
            Err(e) => {
                outfile::discard(&tmp);
                Err(fail(&e))
            }
        }
    }

    fn fail(&self, e: impl std::fmt::Display) -> WriteError {
        WriteError::Write {
            path: self.tmp.clone(),
            message: e.to_string(),
        }
    }

    fn fail_mcap(&self, e: mcap::McapError) -> WriteError {
        WriteError::Write {
            path: self.tmp.clone(),
            message: with_causes(&e),
        }
    }

    fn writer(&mut self) -> Result<&mut mcap::Writer<BufWriter<File>>, WriteError> {
        let tmp = &self.tmp;
        self.w.as_mut().ok_or_else(|| WriteError::Write {
            path: tmp.clone(),
            message: "written after the end".into(),
        })
    }

    /// Adds a schema and channel; returns the index [`Rosbag2Writer::write`] takes.
    pub fn add_channel(&mut self, c: &WriteChannel<'_>) -> Result<usize, WriteError> {
        let mut md = BTreeMap::new();
        md.insert(
            "offered_qos_profiles".to_string(),
            c.offered_qos_profiles.to_string(),
        );
        if let Some(h) = c.type_description_hash {
            md.insert("topic_type_hash".to_string(), h.to_string());
        }
        let enc = if c.message_encoding.is_empty() {
            "cdr"
        } else {
            c.message_encoding
        };
        let w = self.writer()?;
        let channel = w
            .add_schema(c.type_name, c.schema_encoding, c.schema_data)
            .and_then(|sid| w.add_channel(sid, c.topic, enc, &md));
        let channel = channel.map_err(|e| self.fail_mcap(e))?;
        self.channels.push(channel);
        self.sequence.push(0);
        Ok(self.channels.len() - 1)
    }

    /// Writes one message on channel `k`. `sequence`: the recorded one, or `None` to number
    /// the channel's messages from 1. MCAP stores times unsigned: a negative time is written
    /// as 0 and counted ([`Rosbag2Writer::negative_times`]).
    pub fn write(
        &mut self,
        k: usize,
        sequence: Option<u32>,
        log_time_ns: i64,
        publish_time_ns: i64,
        data: &[u8],
    ) -> Result<(), WriteError> {
        let (Some(&channel_id), Some(last)) = (self.channels.get(k), self.sequence.get_mut(k))
        else {
            return Err(self.fail(format!("no channel {k}")));
        };
        let sequence = sequence.unwrap_or_else(|| last.wrapping_add(1));
        *last = sequence;
        if log_time_ns < 0 || publish_time_ns < 0 {
            self.negative_times += 1;
        }
        let header = mcap::records::MessageHeader {
            channel_id,
            sequence,
            log_time: log_time_ns.max(0) as u64,
            publish_time: publish_time_ns.max(0) as u64,
        };
        let res = self.writer()?.write_to_known_channel(&header, data);
        res.map_err(|e| self.fail_mcap(e))
    }

    /// Messages written so far with a negative log or publish time (written as 0).
    pub fn negative_times(&self) -> u64 {
        self.negative_times
    }

    /// Writes a Metadata record (rosbag2 writes `rosbag2` with its `serialized_metadata`).
    pub fn write_metadata(
        &mut self,
        name: &str,
        metadata: BTreeMap<String, String>,
    ) -> Result<(), WriteError> {
        let res = self.writer()?.write_metadata(&mcap::records::Metadata {
            name: name.to_string(),
            metadata,
        });
        res.map_err(|e| self.fail_mcap(e))
    }

    /// Writes the summary and footer and gives the file its name; returns that path.
    pub fn finish(mut self) -> Result<PathBuf, WriteError> {
        let mut w = self.w.take().ok_or_else(|| self.fail("finished twice"))?;
        w.finish().map_err(|e| self.fail_mcap(e))?;
        drop(w);
        outfile::persist(&self.tmp, &self.path).map_err(|e| WriteError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        self.renamed = true;
        Ok(self.path.clone())
    }
}

impl Drop for Rosbag2Writer {
    /// A writer that failed or was abandoned before its file reached its name (while
    /// writing, finishing or renaming) leaves no `.partial` file behind.
    fn drop(&mut self) {
        drop(self.w.take());
        if !self.renamed {
            outfile::discard(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bag;

    fn channel<'a>(topic: &'a str, qos: &'a str) -> WriteChannel<'a> {
        WriteChannel {
            topic,
            type_name: "std_msgs/msg/String",
            schema_encoding: "ros2msg",
            schema_data: b"string data",
            message_encoding: "",
            offered_qos_profiles: qos,
            type_description_hash: Some("RIHS01_00"),
        }
    }

    #[test]
    fn writes_a_bag_bagscope_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.mcap");
        let mut w = Rosbag2Writer::create(&path, "test", &[]).unwrap();
        assert!(partial_path(&path).exists() && !path.exists());
        let a = w.channel_for_test("/a", "- history: keep_last\n");
        let b = w.channel_for_test("/b", "");
        // /a numbered by the writer, /b with recorded sequence numbers; one negative time.
        w.write(a, None, 1_000, 1_000, &[1]).unwrap();
        w.write(b, Some(7), 2_000, 1_500, &[2]).unwrap();
        w.write(a, None, 3_000, -5, &[3]).unwrap();
        assert_eq!(w.negative_times(), 1);
        w.write_metadata("rosbag2", BTreeMap::new()).unwrap();
        assert_eq!(w.finish().unwrap(), path);
        assert!(!partial_path(&path).exists());

        let bag = Bag::open(&path).unwrap();
        let names: Vec<&str> = bag.topics.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["/a", "/b"]);
        assert_eq!(bag.topics[0].message_encoding, "cdr");
        assert_eq!(
            bag.topics[0].offered_qos_profiles.as_deref(),
            Some("- history: keep_last\n")
        );
        let mut got = Vec::new();
        let warnings = bag.visit(&bag.all_topics(), |m| {
            got.push((
                m.topic,
                m.sequence,
                m.log_time_ns,
                m.publish_time_ns,
                m.data.to_vec(),
            ));
        });
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            got,
            [
                (0, 1, 1_000, Some(1_000), vec![1]),
                (1, 7, 2_000, Some(1_500), vec![2]),
                (0, 2, 3_000, Some(0), vec![3]),
            ]
        );
    }

    #[test]
    fn refuses_the_input_and_leaves_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.mcap");
        std::fs::write(&input, b"x").unwrap();
        let refused = |out: &Path, inputs: &[PathBuf]| {
            matches!(
                Rosbag2Writer::create(out, "test", inputs),
                Err(WriteError::WouldOverwriteInput { .. })
            )
        };
        let inputs = [input.clone()];
        assert!(refused(&input, &inputs));
        // By another name: `..`, a hard link, a symbolic link.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(refused(&sub.join("../in.mcap"), &inputs));
        std::fs::hard_link(&input, dir.path().join("hard.mcap")).unwrap();
        assert!(refused(&dir.path().join("hard.mcap"), &inputs));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&input, dir.path().join("soft.mcap")).unwrap();
            assert!(refused(&dir.path().join("soft.mcap"), &inputs));
        }
        // The input is the output's partial file (`x.mcap.partial` read, `x.mcap` written).
        let partial_input = partial_path(&dir.path().join("x.mcap"));
        std::fs::write(&partial_input, b"y").unwrap();
        assert!(refused(
            &dir.path().join("x.mcap"),
            std::slice::from_ref(&partial_input)
        ));
        assert_eq!(std::fs::read(&partial_input).unwrap(), b"y");
        assert_eq!(std::fs::read(&input).unwrap(), b"x");
        // Dropped unfinished: the partial file goes.
        let out = dir.path().join("out.mcap");
        let mut w = Rosbag2Writer::create(&out, "test", &[]).unwrap();
        let a = w.channel_for_test("/a", "");
        w.write(a, None, 1, 1, &[0]).unwrap();
        assert!(w.write(5, None, 1, 1, &[0]).is_err());
        drop(w);
        assert!(!partial_path(&out).exists() && !out.exists());
        // Into a folder that does not exist: an error naming the file.
        let e = Rosbag2Writer::create(&dir.path().join("no/such/dir/x.mcap"), "test", &[]);
        match e {
            Err(e @ WriteError::Write { .. }) => assert!(e.to_string().contains("x.mcap")),
            _ => panic!("expected a write error"),
        }
    }

    #[test]
    fn a_leftover_or_a_link_at_the_partial_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.mcap");
        // A killed run's partial file: replaced, and gone once the output is complete.
        std::fs::write(partial_path(&out), vec![0u8; 1000]).unwrap();
        let mut w = Rosbag2Writer::create(&out, "test", &[]).unwrap();
        let a = w.channel_for_test("/a", "");
        w.write(a, None, 1, 1, &[0]).unwrap();
        w.finish().unwrap();
        assert!(!partial_path(&out).exists());
        Bag::open(&out).unwrap();
        #[cfg(unix)]
        {
            let target = dir.path().join("victim.txt");
            std::fs::write(&target, b"precious").unwrap();
            let out2 = dir.path().join("out2.mcap");
            std::os::unix::fs::symlink(&target, partial_path(&out2)).unwrap();
            let mut w = Rosbag2Writer::create(&out2, "test", &[]).unwrap();
            let a = w.channel_for_test("/a", "");
            w.write(a, None, 1, 1, &[0]).unwrap();
            w.finish().unwrap();
            assert_eq!(std::fs::read(&target).unwrap(), b"precious");
            Bag::open(&out2).unwrap();
        }
    }

    impl Rosbag2Writer {
        fn channel_for_test(&mut self, topic: &str, qos: &str) -> usize {
            self.add_channel(&channel(topic, qos)).unwrap()
        }
    }
}
