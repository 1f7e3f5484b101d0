//! rosbag2 sqlite3 storage (`.db3`, the default up to Humble).
//!
//! Files are opened strictly read-only: `SQLITE_OPEN_READ_ONLY` plus the `immutable=1` URI
//! parameter, so SQLite takes no locks and creates no `-journal`, `-wal` or `-shm` file next to
//! the bag (bags often live on read-only media or are still owned by a recorder).
//!
//! Tables across rosbag2 schema versions: `topics` (with or without `offered_qos_profiles` and
//! `type_description_hash`), `messages` (`timestamp` is the receive time; there is no publish
//! time), and from Iron on `message_definitions`, `schema` and `metadata`.

use std::collections::{BTreeMap, BinaryHeap};
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::error::WarningCode;
use crate::error::{BagError, Result, Warning};

/// First 16 bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// One row of the `topics` table.
#[derive(Debug, Clone, Default)]
pub struct Db3Topic {
    /// The `topics.id` messages refer to.
    pub id: i64,
    /// Topic name.
    pub name: String,
    /// Message type, e.g. `sensor_msgs/msg/Image`.
    pub type_name: String,
    /// Payload encoding, normally `cdr`.
    pub serialization_format: String,
    /// YAML text, empty in the oldest schema (column absent).
    pub offered_qos_profiles: String,
    /// RIHS01 type hash (Iron and later); empty when the column is absent.
    pub type_description_hash: String,
}

/// One row of `message_definitions` (Iron and later).
#[derive(Debug, Clone, Default)]
pub struct Db3Definition {
    /// Definition encoding, `ros2msg` or `ros2idl`.
    pub encoding: String,
    /// Definition text.
    pub text: String,
    /// RIHS01 type hash of the definition.
    pub type_description_hash: String,
}

/// Per-topic aggregates from SQL (`COUNT`, `MIN`, `MAX` of `timestamp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicAggregate {
    /// Number of messages of the topic.
    pub count: u64,
    /// Smallest `timestamp` (log time), ns.
    pub first_ns: i64,
    /// Largest `timestamp` (log time), ns.
    pub last_ns: i64,
}

/// What was learned from one `.db3` file at open time. No connection is kept: each read opens
/// its own (cheap), so `Bag` stays `Send + Sync` and holds no file handles between commands.
#[derive(Debug, Clone)]
pub struct Db3File {
    /// The file as the bag names it (what warnings and errors show).
    pub path: PathBuf,
    /// The database actually read: `path`, or the temporary file a `.db3.zstd` (rosbag2 file
    /// compression) was decompressed to.
    pub read_path: PathBuf,
    /// Size of the database read, bytes.
    pub size: u64,
    /// Names of the file's tables, as listed by `sqlite_master`.
    pub tables: Vec<String>,
    /// `schema.schema_version`, when the table exists.
    pub schema_version: Option<i64>,
    /// `schema.ros_distro`, when the table exists.
    pub ros_distro: Option<String>,
    /// Rows of the `topics` table.
    pub topics: Vec<Db3Topic>,
    /// `message_definitions` by topic type.
    pub definitions: BTreeMap<String, Db3Definition>,
    /// Aggregates by `topic_id` (ids without a `topics` row included: they are orphans).
    pub aggregates: BTreeMap<i64, TopicAggregate>,
    /// Last row of the `metadata` table (rosbag2's own YAML), when present.
    pub metadata_text: Option<String>,
    /// What went wrong while opening (missing tables, orphan messages, ...).
    pub warnings: Vec<Warning>,
}

impl Db3File {
    /// Messages in the file, over all topic ids.
    pub fn message_count(&self) -> u64 {
        self.aggregates.values().map(|a| a.count).sum()
    }
}

/// True when the file starts with the SQLite magic.
pub fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == SQLITE_MAGIC
}

/// `file:` URI with every byte outside a safe set percent-encoded (SQLite decodes `%HH` to raw
/// bytes, so non-UTF-8 paths and `?`, `#`, `%` in names survive).
fn uri_for(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    #[cfg(unix)]
    let bytes: Vec<u8> = {
        use std::os::unix::ffi::OsStrExt;
        abs.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes: Vec<u8> = abs.to_string_lossy().replace('\\', "/").into_bytes();
    let mut s = String::from("file://");
    if bytes.first() != Some(&b'/') {
        s.push('/');
    }
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s.push_str("?mode=ro&immutable=1");
    s
}

fn sql_err(path: &Path, e: &rusqlite::Error) -> BagError {
    use rusqlite::ErrorCode as C;
    let reason = match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            let detail = msg.clone().unwrap_or_else(|| f.to_string());
            match f.code {
                C::DatabaseBusy | C::DatabaseLocked => format!(
                    "database is locked ({detail}): is it still being recorded? wait for the recorder to finish"
                ),
                C::DatabaseCorrupt => format!(
                    "database is damaged or truncated ({detail}): a recording cut off by a crash can leave it so"
                ),
                C::NotADatabase => format!("not an SQLite database ({detail})"),
                C::CannotOpen => format!("cannot open ({detail})"),
                _ => detail,
            }
        }
        other => other.to_string(),
    };
    BagError::Sqlite {
        path: path.to_path_buf(),
        reason,
    }
}

/// Opens a read-only, immutable connection (never creates files next to the database).
pub(crate) fn connect(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(uri_for(path), flags).map_err(|e| sql_err(path, &e))
}

/// Checks the header against the file size: SQLite itself would only fail later, on the first
/// missing page, with a generic "malformed" message.
fn check_header(path: &Path, size: u64) -> Result<()> {
    use std::io::Read;
    let bad = |reason: String| BagError::Sqlite {
        path: path.to_path_buf(),
        reason,
    };
    if size == 0 {
        return Err(BagError::Empty {
            path: path.to_path_buf(),
        });
    }
    let mut h = [0u8; 100];
    let mut f = std::fs::File::open(path).map_err(|source| BagError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if f.read_exact(&mut h).is_err() {
        return Err(bad(format!(
            "truncated: {size} bytes, shorter than the 100-byte SQLite header"
        )));
    }
    if &h[..16] != SQLITE_MAGIC {
        return Err(bad("not an SQLite database (bad magic bytes)".into()));
    }
    let page = match u16::from_be_bytes([h[16], h[17]]) {
        1 => 65536u64,
        p => p as u64,
    };
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return Err(bad(format!("damaged header: page size {page}")));
    }
    let pages = u32::from_be_bytes([h[28], h[29], h[30], h[31]]) as u64;
    let change = &h[24..28];
    let valid_for = &h[92..96];
    // The in-header size is only valid when the change counter matches (SQLite >= 3.7.0).
    if pages > 0 && change == valid_for && pages * page > size {
        return Err(bad(format!(
            "truncated: the header says {} bytes ({pages} pages of {page}), the file has {size}",
            pages * page
        )));
    }
    // `page` is a power of two (checked above).
    if size & (page - 1) != 0 {
        return Err(bad(format!(
            "truncated: {size} bytes is not a whole number of {page}-byte pages"
        )));
    }
    Ok(())
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut st = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = st.query_map([], |r| r.get::<_, String>(1))?;
    for n in names {
        if n? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

fn text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Null => String::new(),
    }
}

impl Db3File {
    /// Opens the database at `path` and reads its tables, topics, definitions and per-topic aggregates.
    pub fn open(path: &Path) -> Result<Db3File> {
        Self::open_as(path, path)
    }

    /// Opens the database at `read_path` as the file `shown_path` (a `.db3.zstd` decompressed
    /// to a temporary file): errors and warnings name `shown_path`.
    pub fn open_as(read_path: &Path, shown_path: &Path) -> Result<Db3File> {
        let mut f = Self::open_inner(read_path).map_err(|e| e.renamed(read_path, shown_path))?;
        if read_path != shown_path {
            let (from, to) = (
                read_path.display().to_string(),
                shown_path.display().to_string(),
            );
            for w in &mut f.warnings {
                if w.file.as_deref() == Some(from.as_str()) {
                    w.file = Some(to.clone());
                }
            }
            f.path = shown_path.to_path_buf();
        }
        Ok(f)
    }

    fn open_inner(path: &Path) -> Result<Db3File> {
        let size = std::fs::metadata(path)
            .map_err(|source| BagError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        check_header(path, size)?;
        let mut warnings = Vec::new();
        let name = path.display().to_string();
        // A hot rollback journal means a writer was interrupted mid-transaction (or is still
        // writing): the main file may hold half-written pages, so refuse rather than guess.
        let journal = sibling(path, "-journal");
        if let Ok(m) = std::fs::metadata(&journal) {
            if m.len() > 0 {
                return Err(BagError::Sqlite {
                    path: path.to_path_buf(),
                    reason: format!(
                        "database is locked or was left mid-write: {} ({} bytes) is a hot journal; let the recorder finish, or open the bag once with sqlite3 to roll it back",
                        journal.display(),
                        m.len()
                    ),
                });
            }
        }
        // WAL mode (rosbag2's "resilient" preset): committed messages may still sit in the WAL,
        // which an immutable read does not see.
        let wal = sibling(path, "-wal");
        if let Ok(m) = std::fs::metadata(&wal) {
            if m.len() > 0 {
                warnings.push(
                    Warning::new(
                        WarningCode::UnmergedWal,
                        format!(
                            "{} holds {} bytes not yet checkpointed into the database (recorder still running or killed): those messages are not read",
                            wal.display(),
                            m.len()
                        ),
                    )
                    .file(&name)
                    .loss(),
                );
            }
        }

        let conn = connect(path)?;
        let e = |e: rusqlite::Error| sql_err(path, &e);
        let tables: Vec<String> = {
            let mut st = conn
                .prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
                .map_err(e)?;
            let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(e)?;
            rows.collect::<rusqlite::Result<_>>().map_err(e)?
        };
        for t in ["topics", "messages"] {
            if !tables.iter().any(|x| x == t) {
                return Err(BagError::Sqlite {
                    path: path.to_path_buf(),
                    reason: format!("not a rosbag2 database: no '{t}' table"),
                });
            }
        }
        let has = |t: &str| tables.iter().any(|x| x == t);

        let (schema_version, ros_distro) = if has("schema") {
            conn.query_row(
                "SELECT schema_version, ros_distro FROM schema ORDER BY schema_version DESC LIMIT 1",
                [],
                |r| Ok((r.get::<_, i64>(0).ok(), Some(text(r.get_ref(1)?)))),
            )
            .unwrap_or((None, None))
        } else {
            (None, None)
        };

        let qos = has_column(&conn, "topics", "offered_qos_profiles").map_err(e)?;
        let hash = has_column(&conn, "topics", "type_description_hash").map_err(e)?;
        let sql = format!(
            "SELECT id, name, type, serialization_format, {}, {} FROM topics ORDER BY id",
            if qos { "offered_qos_profiles" } else { "''" },
            if hash { "type_description_hash" } else { "''" },
        );
        let topics: Vec<Db3Topic> = {
            let mut st = conn.prepare(&sql).map_err(e)?;
            let rows = st
                .query_map([], |r| {
                    Ok(Db3Topic {
                        id: r.get(0)?,
                        name: text(r.get_ref(1)?),
                        type_name: text(r.get_ref(2)?),
                        serialization_format: text(r.get_ref(3)?),
                        offered_qos_profiles: text(r.get_ref(4)?),
                        type_description_hash: text(r.get_ref(5)?),
                    })
                })
                .map_err(e)?;
            rows.collect::<rusqlite::Result<_>>().map_err(e)?
        };

        let mut definitions = BTreeMap::new();
        if has("message_definitions") {
            let mut st = conn
                .prepare(
                    "SELECT topic_type, encoding, encoded_message_definition, type_description_hash FROM message_definitions ORDER BY id",
                )
                .map_err(e)?;
            let rows = st
                .query_map([], |r| {
                    Ok((
                        text(r.get_ref(0)?),
                        Db3Definition {
                            encoding: text(r.get_ref(1)?),
                            text: text(r.get_ref(2)?),
                            type_description_hash: text(r.get_ref(3)?),
                        },
                    ))
                })
                .map_err(e)?;
            for row in rows {
                let (t, d) = row.map_err(e)?;
                definitions.insert(t, d);
            }
        }

        let metadata_text = if has("metadata") {
            conn.query_row(
                "SELECT metadata FROM metadata ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok(text(r.get_ref(0)?)),
            )
            .ok()
        } else {
            None
        };

        // One pass over the messages table: counts and time ranges per topic. It also touches
        // every table page, so a damaged file fails here, at open, with its name.
        let mut aggregates = BTreeMap::new();
        {
            let mut st = conn
                .prepare(
                    // Rows a broken writer filled with non-integers are left to the scan,
                    // which skips and reports them.
                    "SELECT topic_id, COUNT(*), MIN(timestamp), MAX(timestamp) FROM messages \
                     WHERE typeof(topic_id) = 'integer' AND typeof(timestamp) = 'integer' \
                     GROUP BY topic_id",
                )
                .map_err(e)?;
            let rows = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        TopicAggregate {
                            count: r.get::<_, i64>(1)?.max(0) as u64,
                            first_ns: r.get(2)?,
                            last_ns: r.get(3)?,
                        },
                    ))
                })
                .map_err(e)?;
            for row in rows {
                let (id, a) = row.map_err(e)?;
                aggregates.insert(id, a);
            }
        }
        let ids: std::collections::HashSet<i64> = topics.iter().map(|t| t.id).collect();
        let orphans: u64 = aggregates
            .iter()
            .filter(|(id, _)| !ids.contains(*id))
            .map(|(_, a)| a.count)
            .sum();
        if orphans > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::UnknownChannel,
                    format!("{orphans} message(s) refer to a topic id the topics table does not define: skipped"),
                )
                .file(&name)
                .loss(),
            );
        }
        Ok(Db3File {
            path: path.to_path_buf(),
            read_path: path.to_path_buf(),
            size,
            tables,
            schema_version,
            ros_distro,
            topics,
            definitions,
            aggregates,
            metadata_text,
            warnings,
        })
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// One message row, borrowed from the current file's buffer.
pub(crate) struct Row<'a> {
    pub file: usize,
    pub topic_id: i64,
    pub timestamp: i64,
    pub data: &'a [u8],
    /// The payload's length as stored (`octet_length(data)`), also when `data` is not read.
    pub len: u64,
}

/// Largest message payload read from a `.db3`: a larger one is skipped with a data-loss
/// warning instead of being allocated (a hostile or broken file can declare a blob of any size,
/// even one computed on the fly, which SQLite would materialise in full).
pub const MAX_MESSAGE_BYTES: u64 = 256 << 20;

/// Head of one file's stream in the merge.
#[derive(Default)]
struct Head {
    topic_id: i64,
    timestamp: i64,
    data: Vec<u8>,
    len: u64,
}

/// One file's stream: its rows in order, the current head, and what was skipped.
struct FileStream<'s, 'c> {
    file: usize,
    rows: rusqlite::Rows<'s>,
    /// `SELECT data ... WHERE rowid = ?` when payloads are wanted.
    data: Option<&'s mut rusqlite::Statement<'c>>,
    /// Payloads come with the rows (column 5), NULL when over the cap.
    inline: bool,
    head: Head,
    bad: usize,
    too_large: usize,
}

/// Streams the messages of `files` (only `wanted[file]` topic ids) in `(timestamp, rowid)`
/// order, merged across files (ties: earlier file first), calling `f` on each.
///
/// Memory: one row per file. The ordered query selects only keys and each payload's length;
/// a payload is fetched by rowid afterwards, and only when it is at most
/// [`MAX_MESSAGE_BYTES`]. So where `messages.timestamp` has no index (some bags lack it) the
/// sort SQLite must do holds a few integers a row and spills to a temporary file, never the
/// payloads. Errors while reading a file become data-loss warnings; rows read so far are kept.
pub(crate) fn stream(
    files: &[Db3File],
    wanted: &[Vec<i64>],
    with_data: bool,
    mut f: impl FnMut(Row<'_>),
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let warn = |warnings: &mut Vec<Warning>, file: &Db3File, e: &rusqlite::Error| {
        let reason = match sql_err(&file.path, e) {
            BagError::Sqlite { reason, .. } => reason,
            other => other.to_string(),
        };
        warnings.push(
            Warning::new(
                WarningCode::CorruptDatabase,
                format!("reading messages failed ({reason}): the rest of this file is lost"),
            )
            .file(file.path.display().to_string())
            .loss(),
        );
    };
    let mut conns: Vec<(usize, Connection)> = Vec::new();
    for (fi, file) in files.iter().enumerate() {
        if wanted.get(fi).map(Vec::len).unwrap_or(0) == 0 {
            continue;
        }
        match connect(&file.read_path) {
            Ok(c) => {
                // Sorts (no timestamp index) go to a temporary file once past the page cache.
                let _ = c.execute_batch("PRAGMA temp_store = FILE");
                conns.push((fi, c))
            }
            Err(e) => warnings.push(
                Warning::new(
                    WarningCode::CorruptDatabase,
                    format!("{e}: its messages are lost"),
                )
                .file(file.path.display().to_string())
                .loss(),
            ),
        }
    }
    let mut stmts = Vec::new();
    for (fi, c) in &conns {
        let ids = &wanted[*fi];
        let set: std::collections::HashSet<&i64> = ids.iter().collect();
        let all = files[*fi].aggregates.keys().all(|id| set.contains(id));
        // ids are integers from the database itself, so inlining them is safe.
        let filter = if all {
            String::new()
        } else {
            let list: Vec<String> = ids.iter().map(i64::to_string).collect();
            format!(" WHERE topic_id IN ({})", list.join(","))
        };
        // typeof() and octet_length() read a blob's header, not its content.
        let keys_sql = format!(
            "SELECT topic_id, timestamp, rowid, typeof(data), octet_length(data) FROM messages{filter} ORDER BY timestamp, rowid"
        );
        // Where SQLite walks an index in order (no sort), each payload is read in the same
        // query, under the cap; where it must sort, payloads are fetched by rowid afterwards
        // so that the sort holds keys alone.
        let inline = with_data && !sorts(c, &keys_sql);
        let sql = if inline {
            format!(
                "SELECT topic_id, timestamp, rowid, typeof(data), octet_length(data), \
                 CASE WHEN octet_length(data) <= {MAX_MESSAGE_BYTES} THEN data END \
                 FROM messages{filter} ORDER BY timestamp, rowid"
            )
        } else {
            keys_sql
        };
        let keys = c.prepare(&sql);
        let data = if with_data && !inline {
            c.prepare("SELECT data FROM messages WHERE rowid = ?1")
                .map(Some)
        } else {
            Ok(None)
        };
        match (keys, data) {
            (Ok(k), Ok(d)) => stmts.push((*fi, k, d, inline)),
            (Err(e), _) | (_, Err(e)) => warn(&mut warnings, &files[*fi], &e),
        }
    }
    let mut streams: Vec<FileStream<'_, '_>> = Vec::new();
    for (fi, k, d, inline) in stmts.iter_mut() {
        match k.query([]) {
            Ok(rows) => streams.push(FileStream {
                file: *fi,
                rows,
                data: d.as_mut(),
                inline: *inline,
                head: Head::default(),
                bad: 0,
                too_large: 0,
            }),
            Err(e) => warn(&mut warnings, &files[*fi], &e),
        }
    }
    let mut heap = BinaryHeap::new();
    for (k, s) in streams.iter_mut().enumerate() {
        match s.advance() {
            Ok(true) => heap.push(std::cmp::Reverse((s.head.timestamp, s.file, k))),
            Ok(false) => {}
            Err(e) => warn(&mut warnings, &files[s.file], &e),
        }
    }
    while let Some(std::cmp::Reverse((_, fi, k))) = heap.pop() {
        {
            let h = &streams[k].head;
            f(Row {
                file: fi,
                topic_id: h.topic_id,
                timestamp: h.timestamp,
                data: &h.data,
                len: h.len,
            });
        }
        let s = &mut streams[k];
        match s.advance() {
            Ok(true) => heap.push(std::cmp::Reverse((s.head.timestamp, fi, k))),
            Ok(false) => {}
            Err(e) => warn(&mut warnings, &files[fi], &e),
        }
    }
    for s in &streams {
        let name = files[s.file].path.display().to_string();
        if s.bad > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::CorruptMessage,
                    format!("{} message row(s) have a non-integer topic id or timestamp, or a non-blob payload: skipped", s.bad),
                )
                .file(&name)
                .loss(),
            );
        }
        if s.too_large > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::MessageTooLarge,
                    format!(
                        "{} message(s) larger than {} bytes, the limit for one message: skipped",
                        s.too_large, MAX_MESSAGE_BYTES
                    ),
                )
                .file(&name)
                .loss(),
            );
        }
    }
    warnings
}

/// True when SQLite would sort the rows of `sql` itself (no index gives the order).
fn sorts(c: &Connection, sql: &str) -> bool {
    let Ok(mut st) = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")) else {
        return true;
    };
    let Ok(rows) = st.query_map([], |r| r.get::<_, String>(3)) else {
        return true;
    };
    let mut any = false;
    for d in rows {
        match d {
            Ok(d) if d.contains("TEMP B-TREE") => return true,
            Ok(_) => any = true,
            Err(_) => return true,
        }
    }
    !any
}

impl FileStream<'_, '_> {
    /// Moves to the next valid row; `Ok(false)` at the end. Rows with unusable values are
    /// counted in `bad`, payloads over the limit in `too_large`, and skipped.
    fn advance(&mut self) -> rusqlite::Result<bool> {
        while let Some(r) = self.rows.next()? {
            let (Ok(t), Ok(ts), Ok(rowid)) =
                (r.get::<_, i64>(0), r.get::<_, i64>(1), r.get::<_, i64>(2))
            else {
                self.bad += 1;
                continue;
            };
            let kind = r.get_ref(3)?;
            let kind = kind.as_str().unwrap_or("");
            if !matches!(kind, "blob" | "text" | "null") {
                self.bad += 1;
                continue;
            }
            let len = r.get::<_, Option<i64>>(4)?.unwrap_or(0).max(0) as u64;
            self.head.topic_id = t;
            self.head.timestamp = ts;
            self.head.len = len;
            self.head.data.clear();
            let wanted = self.inline || self.data.is_some();
            if wanted && len > MAX_MESSAGE_BYTES {
                self.too_large += 1;
                continue;
            }
            if self.inline {
                if let ValueRef::Blob(b) | ValueRef::Text(b) = r.get_ref(5)? {
                    self.head.data.extend_from_slice(b);
                }
            } else if let Some(d) = self.data.as_mut() {
                if kind != "null" {
                    let data = &mut self.head.data;
                    d.query_row([rowid], |r| {
                        if let ValueRef::Blob(b) | ValueRef::Text(b) = r.get_ref(0)? {
                            data.extend_from_slice(b);
                        }
                        Ok(())
                    })?;
                }
            }
            return Ok(true);
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_detection() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER, timestamp INTEGER, data BLOB)")
            .unwrap();
        let q = "SELECT topic_id, timestamp, rowid FROM messages WHERE topic_id IN (1,2) ORDER BY timestamp, rowid";
        assert!(sorts(&c, q));
        c.execute_batch("CREATE INDEX timestamp_idx ON messages (timestamp ASC)")
            .unwrap();
        assert!(!sorts(&c, q));
    }

    #[test]
    fn uri_escapes_specials() {
        let u = uri_for(Path::new("/tmp/a b?c#d%e.db3"));
        assert_eq!(u, "file:///tmp/a%20b%3Fc%23d%25e.db3?mode=ro&immutable=1");
    }
}
