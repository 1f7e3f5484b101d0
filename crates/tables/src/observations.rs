//! `observe`'s tables: the observation table's columns filled an observation at a time
//! ([`ObservationColumns`], laid out by a `bagscope_observe::Shape`), and the rejection table written topic by
//! topic in row groups, each topic's rejections spilled to a temporary file once a row group's
//! worth is held ([`RejectionWriter`]). docs/observe.md explains the columns.
//!
//! The facade runs the builder and hands the rows over; this module knows nothing of bags.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use bagscope_observe::{Observation, Reason, Rejection, Shape, StateMode, StateValue};

use crate::{frame, Col, Format, FramesError, Result, TableWriter};

/// Rows of the observation and rejection tables per row group: a table of at most this many
/// rows is one row group, as when it was written whole.
pub const ROW_GROUP_ROWS: usize = 1 << 16;

/// Rejections of one topic, in index order: in memory, then appended to a temporary file.
#[derive(Default)]
struct RejectionSpill {
    mem: Vec<Rejection>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    in_file: u64,
}

/// A rejection as spilled: index, stamp (flag, value), reason (its place in the reasons met so far),
/// log time.
const REJECTION_BYTES: usize = 8 + 1 + 8 + 1 + 8;

fn reason_code(r: Reason, known: &mut Vec<Reason>) -> u8 {
    match known.iter().position(|k| *k == r) {
        Some(i) => i as u8,
        None => {
            known.push(r);
            (known.len() - 1) as u8
        }
    }
}

fn state_of(o: &Observation, s: usize) -> Option<&StateValue> {
    o.state.get(s).and_then(|x| x.as_ref())
}

/// A column's value of an observation.
type Getter<T> = Box<dyn Fn(&Observation) -> Option<T>>;

/// How one column of the observation table takes its value from an observation.
enum Cell {
    /// The same string on every row.
    Constant,
    I64(Getter<i64>),
    Str(Getter<String>),
    F64(Getter<f64>),
    F64List(Getter<Vec<f64>>),
    StrList(Getter<Vec<String>>),
    /// The same value on every row.
    ConstI64(Option<i64>),
    ConstBool(Option<bool>),
}

/// The observation table's columns, filled an observation at a time (docs/observe.md
/// explains them): what a row group holds while it is made, without the observations.
pub struct ObservationColumns {
    cells: Vec<(String, Cell, crate::Col)>,
    /// Rows a set of columns has room for.
    rows: usize,
}

impl ObservationColumns {
    /// The columns of `r`'s table, without rows, with room for `rows` rows (no column grows
    /// by copying until then).
    pub fn new(r: &Shape, rows: usize) -> ObservationColumns {
        let constant = |name: String, s: &str| {
            (
                name,
                Cell::Constant,
                Col::Dict {
                    dict: vec![s.to_string()],
                    idx: Vec::new(),
                },
            )
        };
        let i64s = |name: String, f: Getter<i64>| (name, Cell::I64(f), Col::I64(Vec::new()));
        let strs = |name: String, f: Getter<String>| (name, Cell::Str(f), Col::Str(Vec::new()));
        let mut cells: Vec<(String, Cell, Col)> = vec![
            strs(
                "observation_id".into(),
                Box::new(|o| Some(o.observation_id.clone())),
            ),
            constant("policy_version".into(), &r.policy_version),
            constant("anchor_topic".into(), &r.topics[0]),
            i64s(
                "anchor_index".into(),
                Box::new(|o| Some(o.anchor_index as i64)),
            ),
            i64s(
                "anchor_stamp_ns".into(),
                Box::new(|o| Some(o.anchor_stamp_ns)),
            ),
            i64s(
                "anchor_log_time_ns".into(),
                Box::new(|o| Some(o.anchor_log_time_ns)),
            ),
            strs(
                "anchor_frame_id".into(),
                Box::new(|o| Some(o.anchor_frame_id.to_string())),
            ),
            i64s(
                "clock_epoch".into(),
                Box::new(|o| Some(o.clock_epoch as i64)),
            ),
            i64s(
                "emit_log_time_ns".into(),
                Box::new(|o| Some(o.emit_log_time_ns)),
            ),
            i64s("emit_age_ns".into(), Box::new(|o| o.emit_age_ns)),
            i64s("span_ns".into(), Box::new(|o| Some(o.span_ns))),
            constant("decision".into(), "accepted"),
        ];
        for g in &r.groups {
            let p = &g.name;
            cells.push(constant(format!("{p}.policy"), g.policy.cli_name()));
            cells.push((
                format!("{p}.queue_size"),
                Cell::ConstI64(Some(g.queue as i64)),
                Col::I64(Vec::new()),
            ));
            cells.push((
                format!("{p}.slop_ns"),
                Cell::ConstI64(g.slop_ns),
                Col::I64(Vec::new()),
            ));
            cells.push((
                format!("{p}.epsilon_ns"),
                Cell::ConstI64(g.epsilon_ns),
                Col::I64(Vec::new()),
            ));
            cells.push((
                format!("{p}.hierarchical"),
                Cell::ConstBool(Some(g.hierarchical)),
                Col::Bool(Vec::new()),
            ));
        }
        for (k, t) in r.topics[1..].iter().enumerate() {
            cells.push(i64s(
                format!("{t}.index"),
                Box::new(move |o| o.members.get(k).map(|x| x.index as i64)),
            ));
            cells.push(i64s(
                format!("{t}.stamp_ns"),
                Box::new(move |o| o.members.get(k).and_then(|x| x.stamp_ns)),
            ));
            cells.push(i64s(
                format!("{t}.offset_ns"),
                Box::new(move |o| o.members.get(k).and_then(|x| x.offset_ns)),
            ));
            cells.push(strs(
                format!("{t}.frame_id"),
                Box::new(move |o| o.members.get(k).map(|x| x.frame_id.to_string())),
            ));
            cells.push(i64s(
                format!("{t}.log_time_ns"),
                Box::new(move |o| o.members.get(k).map(|x| x.log_time_ns)),
            ));
        }
        for (s, t) in r.state_topics.iter().enumerate() {
            let (mode, fields, has_names) = &r.state[s];
            if *has_names {
                cells.push((
                    format!("{t}.name"),
                    Cell::StrList(Box::new(move |o| {
                        state_of(o, s)
                            .and_then(|x| x.names.as_ref())
                            .map(|n| n.to_vec())
                    })),
                    Col::StrList(Vec::new()),
                ));
            }
            for (f, field) in fields.iter().enumerate() {
                let name = format!("{t}.{}", field.name);
                if field.list {
                    cells.push((
                        name,
                        Cell::F64List(Box::new(move |o| {
                            state_of(o, s).and_then(|x| x.values.get(f).cloned())
                        })),
                        Col::F64List(Vec::new()),
                    ));
                } else {
                    cells.push((
                        name,
                        Cell::F64(Box::new(move |o| {
                            state_of(o, s)
                                .and_then(|x| x.values.get(f))
                                .and_then(|x| x.first().copied())
                        })),
                        Col::F64(Vec::new()),
                    ));
                }
            }
            cells.push(i64s(
                format!("{t}.before_stamp_ns"),
                Box::new(move |o| state_of(o, s).and_then(|x| x.before_stamp_ns)),
            ));
            cells.push(i64s(
                format!("{t}.after_stamp_ns"),
                Box::new(move |o| state_of(o, s).and_then(|x| x.after_stamp_ns)),
            ));
            cells.push(i64s(
                format!("{t}.gap_ns"),
                Box::new(move |o| state_of(o, s).and_then(|x| x.gap_ns)),
            ));
            if *mode == StateMode::Hold {
                cells.push(i64s(
                    format!("{t}.hold_age_ns"),
                    Box::new(move |o| state_of(o, s).and_then(|x| x.hold_age_ns)),
                ));
                cells.push(i64s(
                    format!("{t}.reuse_count"),
                    Box::new(move |o| state_of(o, s).and_then(|x| x.reuse_count).map(i64::from)),
                ));
            } else {
                cells.push(i64s(
                    format!("{t}.online_wait_ns"),
                    Box::new(move |o| state_of(o, s).and_then(|x| x.online_wait_ns)),
                ));
            }
        }
        let mut c = ObservationColumns { cells, rows };
        c.reserve();
        c
    }

    fn reserve(&mut self) {
        let n = self.rows;
        for (_, _, col) in &mut self.cells {
            match col {
                Col::Dict { idx, .. } => idx.reserve(n),
                Col::I64(v) => v.reserve(n),
                Col::U64(v) => v.reserve(n),
                Col::F64(v) => v.reserve(n),
                Col::Bool(v) => v.reserve(n),
                Col::Str(v) => v.reserve(n),
                Col::F64List(v) => v.reserve(n),
                Col::StrList(v) => v.reserve(n),
                Col::I64List(v) => v.reserve(n),
            }
        }
    }

    /// Adds an observation's row.
    pub fn push(&mut self, o: &Observation) {
        for (_, cell, col) in &mut self.cells {
            match (cell, col) {
                (Cell::Constant, Col::Dict { idx, .. }) => idx.push(0),
                (Cell::I64(f), Col::I64(v)) => v.push(f(o)),
                (Cell::Str(f), Col::Str(v)) => v.push(f(o)),
                (Cell::F64(f), Col::F64(v)) => v.push(f(o)),
                (Cell::F64List(f), Col::F64List(v)) => v.push(f(o)),
                (Cell::StrList(f), Col::StrList(v)) => v.push(f(o)),
                (Cell::ConstI64(x), Col::I64(v)) => v.push(*x),
                (Cell::ConstBool(x), Col::Bool(v)) => v.push(*x),
                _ => {}
            }
        }
    }

    /// Rows added since the last [`ObservationColumns::take`].
    pub fn len(&self) -> usize {
        self.cells.first().map_or(0, |(_, _, c)| c.len())
    }

    /// True without rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows added so far as named columns; the next rows start a new set.
    pub fn take(&mut self) -> Vec<(String, crate::Col)> {
        let out = self
            .cells
            .iter_mut()
            .map(|(name, _, col)| {
                let empty = match col {
                    Col::Dict { dict, .. } => Col::Dict {
                        dict: dict.clone(),
                        idx: Vec::new(),
                    },
                    Col::I64(_) => Col::I64(Vec::new()),
                    Col::U64(_) => Col::U64(Vec::new()),
                    Col::F64(_) => Col::F64(Vec::new()),
                    Col::Bool(_) => Col::Bool(Vec::new()),
                    Col::Str(_) => Col::Str(Vec::new()),
                    Col::F64List(_) => Col::F64List(Vec::new()),
                    Col::StrList(_) => Col::StrList(Vec::new()),
                    Col::I64List(_) => Col::I64List(Vec::new()),
                };
                (name.clone(), std::mem::replace(col, empty))
            })
            .collect();
        self.reserve();
        out
    }
}

/// The observation table's columns over the rows `obs` (docs/observe.md explains them).
pub fn observation_columns(r: &Shape, obs: &[Observation]) -> Vec<(String, crate::Col)> {
    let mut c = ObservationColumns::new(r, obs.len());
    for o in obs {
        c.push(o);
    }
    c.take()
}

/// The rejection table's columns over the rows `rj`: `topic`, `index`, `stamp_ns`, `reason`,
/// `log_time_ns` (`topics`: the anchor and member topics, which `topic` indexes).
pub fn rejection_columns(topics: &[String], rj: &[Rejection]) -> Vec<(String, crate::Col)> {
    let mut reasons: Vec<&'static str> = rj.iter().map(|x| x.reason.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    vec![
        (
            "topic".into(),
            Col::Dict {
                dict: topics.to_vec(),
                idx: rj.iter().map(|x| x.topic as u32).collect(),
            },
        ),
        (
            "index".into(),
            Col::I64(rj.iter().map(|x| Some(x.index as i64)).collect()),
        ),
        (
            "stamp_ns".into(),
            Col::I64(rj.iter().map(|x| x.stamp_ns).collect()),
        ),
        (
            "reason".into(),
            Col::Dict {
                idx: rj
                    .iter()
                    .map(|x| reasons.binary_search(&x.reason.as_str()).unwrap_or(0) as u32)
                    .collect(),
                dict: reasons.iter().map(|s| s.to_string()).collect(),
            },
        ),
        (
            "log_time_ns".into(),
            Col::I64(rj.iter().map(|x| Some(x.log_time_ns)).collect()),
        ),
    ]
}

/// The rejection table (`rejections.parquet`): `topic`, `index`, `stamp_ns`, `reason`,
/// `log_time_ns`, sorted by topic (in the order given) and, within a topic, in the order
/// pushed. Each topic's rejections are held in memory up to a row group's worth, then appended
/// to a temporary file in the output folder, so memory is bounded by the number of topics.
pub struct RejectionWriter {
    dir: PathBuf,
    path: PathBuf,
    topics: Vec<String>,
    spills: Vec<RejectionSpill>,
    reasons: Vec<Reason>,
    spill_failed: bool,
}

impl RejectionWriter {
    /// A writer of `path` for rejections of `topics` (a rejection's `topic` indexes them),
    /// spilling into temporary files in `dir`.
    pub fn new(dir: &Path, path: &Path, topics: Vec<String>) -> RejectionWriter {
        RejectionWriter {
            dir: dir.to_path_buf(),
            path: path.to_path_buf(),
            spills: (0..topics.len())
                .map(|_| RejectionSpill::default())
                .collect(),
            topics,
            reasons: Vec::new(),
            spill_failed: false,
        }
    }

    /// The topics a rejection's `topic` indexes.
    pub fn topics(&self) -> &[String] {
        &self.topics
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds a rejection (one of a topic not given is ignored). An error is the first failure
    /// to spill to disk; the rejections are then kept in memory.
    pub fn push(&mut self, r: Rejection) -> std::io::Result<()> {
        let t = r.topic;
        let Some(s) = self.spills.get_mut(t) else {
            return Ok(());
        };
        s.mem.push(r);
        if s.mem.len() >= ROW_GROUP_ROWS && !self.spill_failed {
            if let Err(e) = self.spill(t) {
                self.spill_failed = true;
                return Err(e);
            }
        }
        Ok(())
    }

    fn spill(&mut self, t: usize) -> std::io::Result<()> {
        let s = &mut self.spills[t];
        if s.file.is_none() {
            s.file = Some(std::io::BufWriter::with_capacity(
                1 << 16,
                tempfile::tempfile_in(&self.dir)?,
            ));
        }
        let Some(w) = s.file.as_mut() else {
            return Ok(());
        };
        for r in s.mem.drain(..) {
            let mut b = [0u8; REJECTION_BYTES];
            b[..8].copy_from_slice(&(r.index as u64).to_le_bytes());
            b[8] = u8::from(r.stamp_ns.is_some());
            b[9..17].copy_from_slice(&r.stamp_ns.unwrap_or(0).to_le_bytes());
            b[17] = reason_code(r.reason, &mut self.reasons);
            b[18..26].copy_from_slice(&r.log_time_ns.to_le_bytes());
            w.write_all(&b)?;
            s.in_file += 1;
        }
        Ok(())
    }

    /// Writes the rejections, topic by topic, a row group at a time.
    pub fn finish(mut self) -> Result<()> {
        let dir = self.dir.clone();
        let io = |source: std::io::Error| FramesError::Io {
            path: dir.clone(),
            source,
        };
        let mut w = TableWriter::new(&self.path, Format::Parquet);
        let mut batch: Vec<Rejection> = Vec::new();
        let topics = self.topics.clone();
        let flush = |batch: &mut Vec<Rejection>, w: &mut TableWriter| -> Result<()> {
            let df = frame(rejection_columns(&topics, batch))?;
            batch.clear();
            if df.height() > 0 {
                w.write(&df)?;
            }
            Ok(())
        };
        for t in 0..self.spills.len() {
            let s = std::mem::take(&mut self.spills[t]);
            if let Some(f) = s.file {
                let mut f = f.into_inner().map_err(|e| io(e.into_error()))?;
                f.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
                let mut r = std::io::BufReader::with_capacity(1 << 16, f);
                let mut b = [0u8; REJECTION_BYTES];
                for _ in 0..s.in_file {
                    r.read_exact(&mut b).map_err(io)?;
                    let at =
                        |k: usize| i64::from_le_bytes(b[k..k + 8].try_into().unwrap_or_default());
                    batch.push(Rejection {
                        topic: t,
                        index: at(0) as usize,
                        stamp_ns: (b[8] == 1).then(|| at(9)),
                        reason: self.reasons[b[17] as usize],
                        log_time_ns: at(18),
                    });
                    if batch.len() == ROW_GROUP_ROWS {
                        flush(&mut batch, &mut w)?;
                    }
                }
            }
            for r in s.mem {
                batch.push(r);
                if batch.len() == ROW_GROUP_ROWS {
                    flush(&mut batch, &mut w)?;
                }
            }
        }
        let empty = frame(rejection_columns(&topics, &batch))?;
        flush(&mut batch, &mut w)?;
        w.finish(&empty)?;
        Ok(())
    }
}
