//! What the workspace's tests share, written once: the repository root and the shared
//! corpus beside it ([`root`], [`shared_path`]), temporary folders removed when dropped
//! ([`tempdir`]), running a binary with the no-panic rule ([`run_bin`], [`Out`]), and small
//! ros2-profile MCAP bags written message by message ([`BagWriter`]). Not published; a
//! dev-dependency only.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufWriter, Cursor, Seek, Write};
use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/<rel>` (beside the repository) when `<marker>` exists inside it. A user's clone
/// has no `../shared`: then `None`, with a note, so the tests that need it skip; under `CI` a
/// panic instead.
pub fn shared_path(rel: &str, marker: &str) -> Option<PathBuf> {
    let p = root().join("../shared").join(rel);
    let m = p.join(marker);
    if m.exists() {
        return Some(p);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but {} is missing", m.display());
    }
    eprintln!(
        "note: {} not found; skipping the tests that need it",
        m.display()
    );
    None
}

/// A fresh temp folder (`bagscope-<tag>-XXXXXX` in the temp dir), removed when dropped, so a
/// test run leaves nothing behind (CI's disk is small).
pub struct Tmp(tempfile::TempDir);

impl Tmp {
    /// The folder.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Keeps the folder after the test (for looking at what it wrote).
    pub fn keep(self) -> PathBuf {
        self.0.keep()
    }
}

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Tmp {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh [`Tmp`] folder named after `tag`.
pub fn tempdir(tag: &str) -> Tmp {
    Tmp(tempfile::Builder::new()
        .prefix(&format!("bagscope-{tag}-"))
        .tempdir()
        .expect("a temp folder"))
}

/// What a run of a binary gave: its exit code (`-1` when killed by a signal) and output.
#[derive(Debug, Clone)]
pub struct Out {
    /// The exit code.
    pub code: i32,
    /// Standard output, as text.
    pub stdout: String,
    /// Standard error, as text.
    pub stderr: String,
}

/// Runs `bin ARGS`. A panic is never an acceptable outcome, whatever the input: it fails the
/// test here.
pub fn run_bin<S: AsRef<OsStr>>(bin: &str, args: &[S]) -> Out {
    let out = std::process::Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {bin}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert!(
        !stderr.contains("panicked"),
        "{bin} {shown:?} panicked: {stderr}"
    );
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// A ros2-profile MCAP file written message by message (the `mcap` crate's writer, an
/// independent implementation of the format): schemas are `ros2msg` text, messages CDR.
pub struct BagWriter<W: Write + Seek = BufWriter<File>> {
    w: mcap::Writer<W>,
    schemas: BTreeMap<String, u16>,
    sequence: u32,
}

impl BagWriter<Cursor<Vec<u8>>> {
    /// A bag written into memory with `options` (profile `ros2`): [`BagWriter::into_bytes`].
    pub fn in_memory(options: mcap::WriteOptions) -> Self {
        BagWriter {
            w: options
                .profile("ros2")
                .create(Cursor::new(Vec::new()))
                .expect("an MCAP writer"),
            schemas: BTreeMap::new(),
            sequence: 0,
        }
    }

    /// Writes the summary and gives the file's bytes.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.w.finish().expect("the MCAP summary");
        self.w.into_inner().into_inner()
    }
}

impl BagWriter {
    /// A new file at `path` with the `mcap` crate's default chunking and compression.
    pub fn create(path: &Path) -> BagWriter {
        BagWriter::with_options(path, mcap::WriteOptions::new())
    }

    /// A new file at `path` written with `options` (chunk size, compression); the profile is
    /// set to `ros2`.
    pub fn with_options(path: &Path, options: mcap::WriteOptions) -> BagWriter {
        let f = File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        BagWriter {
            w: options
                .profile("ros2")
                .create(BufWriter::new(f))
                .expect("an MCAP writer"),
            schemas: BTreeMap::new(),
            sequence: 0,
        }
    }

    /// Writes the summary and closes the file.
    pub fn finish(mut self) {
        self.w.finish().expect("the MCAP summary");
    }
}

impl<W: Write + Seek> BagWriter<W> {
    /// A channel for `topic` of type `type_name` whose `ros2msg` definition is `schema`; the
    /// schema record is written once per type.
    pub fn channel(&mut self, topic: &str, type_name: &str, schema: &str) -> u16 {
        self.channel_with(topic, type_name, schema, &BTreeMap::new())
    }

    /// [`BagWriter::channel`] with channel metadata (`offered_qos_profiles`, ...).
    pub fn channel_with(
        &mut self,
        topic: &str,
        type_name: &str,
        schema: &str,
        metadata: &BTreeMap<String, String>,
    ) -> u16 {
        self.channel_encoded(topic, type_name, "ros2msg", schema.as_bytes(), metadata)
    }

    /// [`BagWriter::channel_with`] with a schema in another encoding (`ros2idl`, ...).
    pub fn channel_encoded(
        &mut self,
        topic: &str,
        type_name: &str,
        encoding: &str,
        schema: &[u8],
        metadata: &BTreeMap<String, String>,
    ) -> u16 {
        let sid = match self.schemas.get(type_name) {
            Some(&s) => s,
            None => {
                let s = self
                    .w
                    .add_schema(type_name, encoding, schema)
                    .expect("a schema record");
                self.schemas.insert(type_name.to_string(), s);
                s
            }
        };
        self.w
            .add_channel(sid, topic, "cdr", metadata)
            .expect("a channel record")
    }

    /// A message on `channel` logged at `log_ns` (publish time the same).
    pub fn message(&mut self, channel: u16, log_ns: i64, data: &[u8]) {
        self.message_published(channel, log_ns, log_ns, data);
    }

    /// A message with its own publish time; sequence numbers count up from 1.
    pub fn message_published(&mut self, channel: u16, log_ns: i64, publish_ns: i64, data: &[u8]) {
        self.sequence += 1;
        let h = mcap::records::MessageHeader {
            channel_id: channel,
            sequence: self.sequence,
            log_time: log_ns as u64,
            publish_time: publish_ns as u64,
        };
        self.w
            .write_to_known_channel(&h, data)
            .expect("a message record");
    }

    /// The writer itself, for records this type does not cover.
    pub fn raw(&mut self) -> &mut mcap::Writer<W> {
        &mut self.w
    }
}

/// One topic of [`write_bag`]: name, type, `ros2msg` definition, channel metadata, and its
/// messages as (log time, CDR payload).
pub type TopicMessages = (
    String,
    String,
    String,
    BTreeMap<String, String>,
    Vec<(i64, Vec<u8>)>,
);

/// A ros2-profile MCAP of `topics`, their messages written in log-time order (ties by topic
/// order), publish time = log time.
pub fn write_bag(path: &Path, topics: &[TopicMessages]) {
    let mut w = BagWriter::create(path);
    let mut all: Vec<(i64, u16, &Vec<u8>)> = Vec::new();
    for (topic, ty, text, md, msgs) in topics {
        let c = w.channel_with(topic, ty, text, md);
        all.extend(msgs.iter().map(|(t, d)| (*t, c, d)));
    }
    all.sort_by_key(|m| (m.0, m.1));
    for (log, c, data) in all {
        w.message(c, log, data);
    }
    w.finish();
}
