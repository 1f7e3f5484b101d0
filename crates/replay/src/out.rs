//! `--out`: what is played, written as an MCAP whose log times are the scheduled (or actual)
//! publish times — a retimed bag for offline use. Written beside the target and renamed at
//! the end, so an interrupted run leaves no half file under the requested name.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use bagscope_bag::{Bag, Topic};

use crate::ReplayError;

pub struct OutTopic<'a> {
    pub topic: &'a Topic,
    pub published_as: &'a str,
}

#[derive(Default)]
pub struct Sinks {
    pub mcap: Option<McapOut>,
}

pub struct McapOut {
    /// `None` once finished.
    w: Option<mcap::Writer<BufWriter<File>>>,
    channels: Vec<u16>,
    sequence: Vec<u32>,
    tmp: PathBuf,
    path: PathBuf,
    /// The output reached its final name; until then dropping removes `tmp`.
    renamed: bool,
}

/// Where `--out PATH` is written until it is complete.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".partial");
    s.into()
}

fn err(path: &Path, e: impl std::fmt::Display) -> ReplayError {
    ReplayError::Out(format!("writing {}: {e}", path.display()))
}

impl McapOut {
    pub fn create(path: &Path, bag: &Bag, topics: &[OutTopic<'_>]) -> Result<McapOut, ReplayError> {
        let inputs = bag
            .files
            .iter()
            .map(|f| f.path.clone())
            .chain([bag.path.clone()]);
        if let Ok(out) = path.canonicalize() {
            for p in inputs {
                if p.canonicalize().is_ok_and(|p| p == out) {
                    return Err(ReplayError::Usage(format!(
                        "--out {} is part of the input bag: refusing to overwrite it",
                        path.display()
                    )));
                }
            }
        }
        let tmp = partial_path(path);
        let file = File::create(&tmp).map_err(|e| err(&tmp, e))?;
        match Self::start(file, &tmp, topics) {
            Ok((w, channels)) => Ok(McapOut {
                w: Some(w),
                sequence: vec![0; channels.len()],
                channels,
                tmp,
                path: path.to_path_buf(),
                renamed: false,
            }),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// The writer with its schemas and channels.
    fn start(
        file: File,
        tmp: &Path,
        topics: &[OutTopic<'_>],
    ) -> Result<(mcap::Writer<BufWriter<File>>, Vec<u16>), ReplayError> {
        let mut w = mcap::WriteOptions::new()
            .profile("ros2")
            .library(concat!("bagscope play ", env!("CARGO_PKG_VERSION")))
            .compression(Some(mcap::Compression::Zstd))
            .chunk_size(Some(4 << 20))
            .create(BufWriter::new(file))
            .map_err(|e| err(tmp, e))?;
        let mut channels = Vec::new();
        for t in topics {
            let (enc, data, _) = bagscope_msg::schema::builtin::schema_for_writing(
                &t.topic.type_name,
                &t.topic.schema_encoding,
                &t.topic.schema_data,
            )
            .unwrap_or_else(|| ("ros2msg".into(), Vec::new(), "none"));
            let sid = w
                .add_schema(&t.topic.type_name, &enc, &data)
                .map_err(|e| err(tmp, e))?;
            let mut md = BTreeMap::new();
            md.insert(
                "offered_qos_profiles".to_string(),
                t.topic.offered_qos_profiles.clone().unwrap_or_default(),
            );
            let enc = if t.topic.message_encoding.is_empty() {
                "cdr"
            } else {
                &t.topic.message_encoding
            };
            channels.push(
                w.add_channel(sid, t.published_as, enc, &md)
                    .map_err(|e| err(tmp, e))?,
            );
        }
        Ok((w, channels))
    }

    /// `k`: index into the topics given at creation.
    pub fn write(
        &mut self,
        k: usize,
        log_time_ns: i64,
        publish_time_ns: i64,
        data: &[u8],
    ) -> Result<(), ReplayError> {
        self.sequence[k] = self.sequence[k].wrapping_add(1);
        let header = mcap::records::MessageHeader {
            channel_id: self.channels[k],
            sequence: self.sequence[k],
            log_time: log_time_ns.max(0) as u64,
            publish_time: publish_time_ns.max(0) as u64,
        };
        match &mut self.w {
            Some(w) => w
                .write_to_known_channel(&header, data)
                .map_err(|e| err(&self.tmp, e)),
            None => Err(err(&self.tmp, "written after the end")),
        }
    }

    pub fn finish(mut self) -> Result<PathBuf, ReplayError> {
        let Some(mut w) = self.w.take() else {
            return Err(err(&self.tmp, "finished twice"));
        };
        w.finish().map_err(|e| err(&self.tmp, e))?;
        drop(w);
        std::fs::rename(&self.tmp, &self.path).map_err(|e| err(&self.path, e))?;
        self.renamed = true;
        Ok(self.path.clone())
    }
}

impl Drop for McapOut {
    /// A run that failed before its output reached its name (while writing, finishing or
    /// renaming) leaves no `.partial` file behind.
    fn drop(&mut self) {
        drop(self.w.take());
        if !self.renamed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
