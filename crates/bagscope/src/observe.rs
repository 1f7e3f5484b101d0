//! `bagscope observe`: the observation builder over a bag. Reads the contract file (YAML),
//! reads the bag once for what the contract needs (stamps and frame ids of the anchor and
//! members, state fields, TF, `/clock`), runs `bagscope-observe` and, with the `frames`
//! feature, writes `observations.parquet` and `rejections.parquet`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value as Json;

use bagscope_bag::{Bag, Warning, WarningCode};
use bagscope_msg::{decode, StampSource, Value};
use bagscope_observe::{
    Contract, ContractError, EmitAxis, Input, ObserveReport, StateField, StateSample, StateSeries,
    SyncMessage,
};
use bagscope_tf::{Frame, TfMessage, TfTransform};

use crate::series::{locators, topic_schemas};
use crate::Error;

pub use bagscope_observe as analysis;

/// A contract file read and checked, with its content hash.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedContract {
    /// The file it was read from.
    pub path: PathBuf,
    /// First 16 hex digits of the SHA-256 of the contract as JSON with sorted keys.
    pub policy_version: String,
    /// The contract as the builder takes it.
    pub contract: Contract,
}

/// JSON text with every object's keys sorted (the canonical form hashed for
/// `policy_version`).
fn canonical(v: &Json, out: &mut String) {
    match v {
        Json::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Json::String((*k).clone()).to_string());
                out.push(':');
                canonical(&m[*k], out);
            }
            out.push('}');
        }
        Json::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `policy_version` of a contract value.
pub fn policy_version(v: &Json) -> String {
    use sha2::Digest;
    let mut s = String::new();
    canonical(v, &mut s);
    let d = sha2::Sha256::digest(s.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Reads and checks a contract file ([`Contract::from_yaml`]). Every error names the file and
/// the key that is wrong, with its line where the parser knows it (a usage error: the CLI
/// exits 2); a key given twice is refused with its line.
pub fn load_contract(path: &Path) -> Result<LoadedContract, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ContractError::file(path, format!("cannot read it: {e}")))?;
    bagscope_bag::yaml::check(&text).map_err(|e| ContractError::file(path, e.to_string()))?;
    let v: Json = serde_yaml_ng::from_str(&text)
        .map_err(|e| ContractError::file(path, format!("not YAML: {e}")))?;
    // Read as JSON the last of two equal keys wins silently: refused, naming the key and line.
    bagscope_bag::yaml_keys::check_unique_keys(&text).map_err(|e| ContractError::file(path, e))?;
    let contract = Contract::from_yaml(&text).map_err(|e| e.in_file(path))?;
    Ok(LoadedContract {
        path: path.to_path_buf(),
        policy_version: policy_version(&v),
        contract,
    })
}

/// `bagscope observe`'s report: the builder's result, the bag and contract it came from, and
/// what went wrong reading the bag.
#[derive(Debug, Clone, Serialize)]
pub struct ObserveCommandReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// The contract file.
    pub contract: String,
    /// Observations, rejections (not serialised: they go to the Parquet files), summary.
    #[serde(flatten)]
    pub report: ObserveReport,
    /// Bag damage, unreadable stamps or state messages, missing TF topics; sorted.
    pub warnings: Vec<Warning>,
}

impl ObserveCommandReport {}

/// A state message as read: its stamp, its numeric fields (path, values, is a list) and its
/// `name` list.
type StateItem = (i64, Vec<StateFieldValues>, Option<Vec<String>>);

/// One numeric field of a state message: its path, its values, whether it is a list.
type StateFieldValues = (String, Vec<f64>, bool);

enum Item {
    Sync(Option<i64>, Frame),
    State(Option<StateItem>),
    Tf(Option<Vec<TfTransform>>),
    Clock(Option<i64>),
    Bad,
}

#[derive(Clone, Copy)]
enum Role {
    None,
    Sync(usize),
    State(usize),
    Tf(bool),
    Clock,
}

/// The numeric fields of a decoded message, flattened (`header` left out), and its `name`
/// list.
fn flatten_state(v: &Value) -> (Vec<StateFieldValues>, Option<Vec<String>>) {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<StateFieldValues>) {
        match v {
            Value::Struct(s) => {
                for (n, x) in s.iter() {
                    if prefix.is_empty() && n == "header" {
                        continue;
                    }
                    walk(&join(prefix, n), x, out);
                }
            }
            // Arrays of numbers are list fields; arrays of strings or messages are not state.
            Value::Array(_) => {
                if let Some(f) = v.to_f64_vec() {
                    out.push((prefix.to_string(), f, true));
                }
            }
            Value::String(_) | Value::Bytes(_) => {}
            x => {
                if let Some(f) = x.as_f64() {
                    out.push((prefix.to_string(), vec![f], false));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    let names = v.field("name").and_then(|n| n.as_array()).and_then(|a| {
        a.iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
    });
    (out, names)
}

/// Runs the builder over an open bag.
#[allow(clippy::too_many_lines)] // To split once observe.rs is being reworked to stream (issue 44).
pub fn observe_of(bag: &Bag, lc: &LoadedContract) -> Result<ObserveCommandReport, Error> {
    let c = &lc.contract;
    let sync_topics = c.sync_topics();
    let mut role = vec![Role::None; bag.topics.len()];
    for (k, t) in sync_topics.iter().enumerate() {
        role[bag.topic_index(t).map_err(|_| {
            Error::Contract(ContractError::file(
                &lc.path,
                format!("topic {t} is not in the bag {}", bag.path.display()),
            ))
        })?] = Role::Sync(k);
    }
    for (k, s) in c.state.iter().enumerate() {
        role[bag.topic_index(&s.topic).map_err(|_| {
            Error::Contract(ContractError::file(
                &lc.path,
                format!(
                    "state topic {} is not in the bag {}",
                    s.topic,
                    bag.path.display()
                ),
            ))
        })?] = Role::State(k);
    }
    let mut warnings = bag.open_warnings();
    if c.tf_target.is_some() {
        for t in crate::tf::DEFAULT_TF_TOPICS {
            match bag.topic_index(t) {
                Ok(i) => role[i] = Role::Tf(bagscope_tf::is_static_topic(t)),
                Err(_) => warnings.push(
                    Warning::new(
                        WarningCode::TfTopicMissing,
                        "TF topic not in the bag: treated as empty",
                    )
                    .topic(t),
                ),
            }
        }
    }
    if let Ok(i) = bag.topic_index("/clock") {
        if matches!(role[i], Role::None) {
            role[i] = Role::Clock;
        }
    }
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    for (i, r) in role.iter().enumerate() {
        if let Role::State(_) = r {
            if let Err(e) = &schemas[i] {
                return Err(Error::no_data(format!(
                    "state topic {}: no usable message definition ({e})",
                    bag.topics[i].name
                )));
            }
        }
    }
    let wanted: Vec<bool> = role.iter().map(|r| !matches!(r, Role::None)).collect();
    let scan = bag.scan(&wanted, |m| match role[m.topic] {
        Role::Sync(_) => {
            let loc = &locs[m.topic];
            let stamp = match loc.source() {
                StampSource::None => Ok(None),
                _ => loc.read_stamp_ns(m.data),
            };
            match stamp {
                Ok(s) => {
                    let frame = loc.read_frame_id(m.data).ok().flatten().unwrap_or_default();
                    Item::Sync(s, crate::tf::shared_frame(&frame))
                }
                Err(_) => Item::Bad,
            }
        }
        Role::State(_) => Item::State(schemas[m.topic].as_ref().ok().and_then(|s| {
            let v = decode(s, m.data).ok()?;
            let stamp = locs[m.topic].read_stamp_ns(m.data).ok().flatten()?;
            let (f, n) = flatten_state(&v);
            Some((stamp, f, n))
        })),
        Role::Tf(_) => Item::Tf(bagscope_msg::types::tf_frames(m.data).ok().map(|t| {
            t.into_iter()
                .map(|x| TfTransform {
                    parent: crate::tf::shared_frame(x.parent),
                    child: crate::tf::shared_frame(x.child),
                    stamp_ns: x.stamp_ns,
                })
                .collect()
        })),
        Role::Clock => Item::Clock(locs[m.topic].read_stamp_ns(m.data).ok().flatten()),
        Role::None => Item::Bad,
    });
    warnings.extend(scan.warnings);
    let mut messages = Vec::new();
    let mut states: Vec<StateSeries> = c
        .state
        .iter()
        .map(|s| StateSeries {
            topic: s.topic.clone(),
            ..Default::default()
        })
        .collect();
    let mut tf: Vec<TfMessage> = Vec::new();
    let (mut clock_log, mut clock_sim) = (Vec::new(), Vec::new());
    let mut bad = vec![0usize; bag.topics.len()];
    let mut names_seen: Vec<Option<bagscope_observe::Names>> = vec![None; states.len()];
    for it in scan.items {
        match (role[it.topic], it.value) {
            (Role::Sync(k), Item::Sync(stamp_ns, frame_id)) => messages.push(SyncMessage {
                topic: k,
                stamp_ns,
                log_time_ns: it.log_time_ns,
                frame_id,
            }),
            (Role::State(k), Item::State(Some((stamp, fields, names)))) => {
                let s = &mut states[k];
                if s.samples.is_empty() {
                    s.fields = fields
                        .iter()
                        .map(|(n, _, l)| StateField {
                            name: n.clone(),
                            list: *l,
                        })
                        .collect();
                    s.has_names = names.is_some();
                }
                if fields.len() != s.fields.len()
                    || fields.iter().zip(&s.fields).any(|(f, g)| f.0 != g.name)
                {
                    bad[it.topic] += 1;
                    continue;
                }
                let names = names.map(|n| match &names_seen[k] {
                    Some(prev) if prev[..] == n[..] => prev.clone(),
                    _ => {
                        let a: bagscope_observe::Names = n.into();
                        names_seen[k] = Some(a.clone());
                        a
                    }
                });
                s.samples.push(StateSample {
                    stamp_ns: stamp,
                    log_time_ns: it.log_time_ns,
                    values: fields.into_iter().map(|f| f.1).collect(),
                    names,
                });
            }
            (Role::Tf(is_static), Item::Tf(Some(transforms))) => tf.push(TfMessage {
                log_time_ns: it.log_time_ns,
                source: usize::from(is_static),
                is_static,
                transforms,
            }),
            (Role::Clock, Item::Clock(Some(s))) => {
                clock_log.push(it.log_time_ns);
                clock_sim.push(s);
            }
            (Role::Clock, _) => {}
            _ => bad[it.topic] += 1,
        }
    }
    for (i, &n) in bad.iter().enumerate() {
        if n > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::Undecodable,
                    format!("{n} message(s) whose stamp, frame id or state fields could not be read were left out"),
                )
                .topic(&bag.topics[i].name)
                .loss(),
            );
        }
    }
    // Emit ages: log times onto the anchor stamps' clock.
    let anchor_stamps: Vec<i64> = messages
        .iter()
        .filter(|m| m.topic == 0)
        .filter_map(|m| m.stamp_ns)
        .take(64)
        .collect();
    let first_log = messages.first().map(|m| m.log_time_ns);
    let stamps_wall = bagscope_types::series_is_wall(&anchor_stamps).unwrap_or(true);
    let log_wall = first_log.is_some_and(bagscope_types::is_wall_ns);
    let map = (!stamps_wall && log_wall)
        .then(|| {
            bagscope_clocks::ClockMap::from_series(
                &clock_log,
                &clock_sim,
                bagscope_types::Axis::Wall,
            )
        })
        .flatten();
    let mapper = |log: i64| map.as_ref().and_then(|m| m.log_to_sim_ns(log));
    let emit_axis = if stamps_wall == log_wall || anchor_stamps.is_empty() {
        EmitAxis::Same
    } else if map.is_some() {
        EmitAxis::Mapped(&mapper)
    } else {
        warnings.push(
            Warning::new(
                WarningCode::SplitClockAxes,
                "the anchor's stamps are on sim time and log times on wall time, with no /clock to map them: emit ages are null and freshness is not checked",
            )
            .topic(&c.anchor),
        );
        EmitAxis::Unmapped
    };
    let report = bagscope_observe::build(&Input {
        contract: c,
        policy_version: &lc.policy_version,
        messages: &messages,
        states: &states,
        tf: &tf,
        emit_axis,
    })
    .map_err(|e| match e {
        bagscope_observe::ObserveError::Contract(s) => {
            Error::Contract(ContractError::file(&lc.path, s))
        }
        bagscope_observe::ObserveError::Sync(e) => Error::Sync(e),
    })?;
    warnings.sort();
    warnings.dedup();
    Ok(ObserveCommandReport {
        bag: bag.path.display().to_string(),
        contract: lc.path.display().to_string(),
        report,
        warnings,
    })
}

/// [`observe_of`] of the bag at `path` with the contract file `contract`.
pub fn observe(path: &Path, contract: &Path) -> Result<ObserveCommandReport, Error> {
    let lc = load_contract(contract)?;
    observe_of(&Bag::open(path)?, &lc)
}

/// The files `observe` wrote.
#[cfg(feature = "frames")]
#[derive(Debug, Clone, Serialize)]
pub struct WrittenTables {
    /// `OUT/observations.parquet`.
    pub observations: String,
    /// `OUT/rejections.parquet`.
    pub rejections: String,
    /// Column names of the observation table, in order.
    pub columns: Vec<String>,
}

#[cfg(feature = "frames")]
fn state_of(o: &bagscope_observe::Observation, s: usize) -> Option<&bagscope_observe::StateValue> {
    o.state.get(s).and_then(|x| x.as_ref())
}

/// The observation table's columns (docs/observe.md explains them).
#[cfg(feature = "frames")]
pub fn observation_columns(r: &ObserveReport) -> Vec<(String, bagscope_frames::Col)> {
    use bagscope_frames::Col;
    let obs = &r.observations;
    let n = obs.len();
    let i64s = |f: &dyn Fn(&bagscope_observe::Observation) -> Option<i64>| {
        Col::I64(obs.iter().map(f).collect())
    };
    let constant = |s: &str| Col::Dict {
        dict: vec![s.to_string()],
        idx: vec![0; n],
    };
    let mut cols: Vec<(String, Col)> = vec![
        (
            "observation_id".into(),
            Col::Str(obs.iter().map(|o| Some(o.observation_id.clone())).collect()),
        ),
        ("policy_version".into(), constant(&r.policy_version)),
        ("anchor_topic".into(), constant(&r.anchor_topic)),
        (
            "anchor_index".into(),
            i64s(&|o| Some(o.anchor_index as i64)),
        ),
        ("anchor_stamp_ns".into(), i64s(&|o| Some(o.anchor_stamp_ns))),
        (
            "anchor_log_time_ns".into(),
            i64s(&|o| Some(o.anchor_log_time_ns)),
        ),
        (
            "anchor_frame_id".into(),
            Col::Str(
                obs.iter()
                    .map(|o| Some(o.anchor_frame_id.to_string()))
                    .collect(),
            ),
        ),
        ("clock_epoch".into(), i64s(&|o| Some(o.clock_epoch as i64))),
        (
            "emit_log_time_ns".into(),
            i64s(&|o| Some(o.emit_log_time_ns)),
        ),
        ("emit_age_ns".into(), i64s(&|o| o.emit_age_ns)),
        ("span_ns".into(), i64s(&|o| Some(o.span_ns))),
        ("decision".into(), constant("accepted")),
    ];
    for g in &r.groups {
        let p = &g.name;
        cols.push((format!("{p}.policy"), constant(g.policy.cli_name())));
        cols.push((
            format!("{p}.queue_size"),
            Col::I64(vec![Some(g.queue as i64); n]),
        ));
        cols.push((format!("{p}.slop_ns"), Col::I64(vec![g.slop_ns; n])));
        cols.push((format!("{p}.epsilon_ns"), Col::I64(vec![g.epsilon_ns; n])));
        cols.push((
            format!("{p}.hierarchical"),
            Col::Bool(vec![Some(g.hierarchical); n]),
        ));
    }
    for (k, t) in r.member_topics.iter().enumerate() {
        let m = |o: &bagscope_observe::Observation| o.members.get(k).cloned();
        cols.push((
            format!("{t}.index"),
            i64s(&|o| m(o).map(|x| x.index as i64)),
        ));
        cols.push((
            format!("{t}.stamp_ns"),
            i64s(&|o| m(o).and_then(|x| x.stamp_ns)),
        ));
        cols.push((
            format!("{t}.offset_ns"),
            i64s(&|o| m(o).and_then(|x| x.offset_ns)),
        ));
        cols.push((
            format!("{t}.frame_id"),
            Col::Str(
                obs.iter()
                    .map(|o| m(o).map(|x| x.frame_id.to_string()))
                    .collect(),
            ),
        ));
        cols.push((
            format!("{t}.log_time_ns"),
            i64s(&|o| m(o).map(|x| x.log_time_ns)),
        ));
    }
    for (s, t) in r.state_topics.iter().enumerate() {
        if r.state_has_names.get(s).copied().unwrap_or(false) {
            cols.push((
                format!("{t}.name"),
                Col::StrList(
                    obs.iter()
                        .map(|o| {
                            state_of(o, s)
                                .and_then(|x| x.names.as_ref())
                                .map(|n| n.to_vec())
                        })
                        .collect(),
                ),
            ));
        }
        for (f, field) in r.state_fields[s].iter().enumerate() {
            let name = format!("{t}.{}", field.name);
            if field.list {
                cols.push((
                    name,
                    Col::F64List(
                        obs.iter()
                            .map(|o| state_of(o, s).and_then(|x| x.values.get(f).cloned()))
                            .collect(),
                    ),
                ));
            } else {
                cols.push((
                    name,
                    Col::F64(
                        obs.iter()
                            .map(|o| {
                                state_of(o, s)
                                    .and_then(|x| x.values.get(f))
                                    .and_then(|x| x.first().copied())
                            })
                            .collect(),
                    ),
                ));
            }
        }
        cols.push((
            format!("{t}.before_stamp_ns"),
            i64s(&|o| state_of(o, s).and_then(|x| x.before_stamp_ns)),
        ));
        cols.push((
            format!("{t}.after_stamp_ns"),
            i64s(&|o| state_of(o, s).and_then(|x| x.after_stamp_ns)),
        ));
        cols.push((
            format!("{t}.gap_ns"),
            i64s(&|o| state_of(o, s).and_then(|x| x.gap_ns)),
        ));
        let mode = r
            .summary
            .state
            .get(s)
            .map_or(bagscope_observe::StateMode::Nearest, |x| x.mode);
        if mode == bagscope_observe::StateMode::Hold {
            cols.push((
                format!("{t}.hold_age_ns"),
                i64s(&|o| state_of(o, s).and_then(|x| x.hold_age_ns)),
            ));
            cols.push((
                format!("{t}.reuse_count"),
                i64s(&|o| state_of(o, s).and_then(|x| x.reuse_count).map(i64::from)),
            ));
        } else {
            cols.push((
                format!("{t}.online_wait_ns"),
                i64s(&|o| state_of(o, s).and_then(|x| x.online_wait_ns)),
            ));
        }
    }
    cols
}

/// The rejection table's columns: `topic`, `index`, `stamp_ns`, `reason`, `log_time_ns`.
#[cfg(feature = "frames")]
pub fn rejection_columns(r: &ObserveReport) -> Vec<(String, bagscope_frames::Col)> {
    use bagscope_frames::Col;
    let rj = &r.rejections;
    let mut reasons: Vec<&'static str> = rj.iter().map(|x| x.reason.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    vec![
        (
            "topic".into(),
            Col::Dict {
                dict: r.topics.clone(),
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

/// Refuses, before the bag is read, an output folder `out` that cannot take this run's files:
/// not a folder (a device, a FIFO, a file: [`crate::refuse_output_dir`]), or holding a
/// `lerobot/` dataset that the run would leave stale or mix with its own. With `lerobot`
/// (`--layout lerobot`) `OUT/lerobot` must be new or empty ([`crate::lerobot::check_target`]);
/// without it, a non-empty `OUT/lerobot` would describe an earlier run's observations beside
/// this run's tables, and is refused as well.
#[cfg(feature = "frames")]
pub fn check_outputs(out: &Path, lerobot: bool) -> Result<(), Error> {
    crate::refuse_output_dir(out)?;
    let dataset = out.join("lerobot");
    if lerobot {
        return crate::lerobot::check_target(&dataset);
    }
    if dataset.is_dir() && crate::lerobot::non_empty(&dataset) {
        return Err(Error::refused_output(
            &dataset,
            format!(
                "{} holds a LeRobot dataset of an earlier run, which the observations written \
                 now would no longer match: remove it or write to another `out`",
                dataset.display()
            ),
        ));
    }
    Ok(())
}

/// Writes `OUT/observations.parquet` and `OUT/rejections.parquet` (each written to a
/// temporary name and renamed; same bag and contract give the same bytes). With `with_fields`,
/// the observation table also holds the anchor's and every member's message fields, flattened
/// as `export` flattens them and named `T.<field>` ([`member_fields`]); messages whose fields
/// could not be decoded are null there and counted in a warning added to `r`.
#[cfg(feature = "frames")]
pub fn write_tables(
    bag: &Bag,
    r: &mut ObserveCommandReport,
    out: &Path,
    with_fields: bool,
) -> Result<WrittenTables, Error> {
    use bagscope_frames::{frame, Format, TableWriter};
    let obs_path = out.join("observations.parquet");
    let rej_path = out.join("rejections.parquet");
    crate::refuse_output_dir(out)?;
    crate::refuse_outputs(bag, &[obs_path.as_path(), rej_path.as_path()])?;
    let cols = observation_columns(&r.report);
    let obs_df = if with_fields {
        let (mut parts, warnings) = member_fields(bag, &r.report)?;
        r.warnings.extend(warnings);
        r.warnings.sort();
        r.warnings.dedup();
        let mut p: Vec<&mut bagscope_frames::message::MessageColumns> = parts.iter_mut().collect();
        bagscope_frames::message::frame_with_messages(cols, &mut p)?
    } else {
        frame(cols)?
    };
    let names = bagscope_frames::column_names(&obs_df);
    for (path, df) in [
        (&obs_path, obs_df),
        (&rej_path, frame(rejection_columns(&r.report))?),
    ] {
        let mut w = TableWriter::new(path, Format::Parquet);
        if df.height() > 0 {
            w.write(&df)?;
        }
        w.finish(&df)?;
    }
    Ok(WrittenTables {
        observations: obs_path.display().to_string(),
        rejections: rej_path.display().to_string(),
        columns: names,
    })
}

/// Per topic (anchor, then members), its message fields over the observations' rows.
#[cfg(feature = "frames")]
type MemberFields = (Vec<bagscope_frames::message::MessageColumns>, Vec<Warning>);

/// The anchor's and each member topic's messages of every observation (a second read of those
/// topics only), decoded into columns as `export` flattens them (lists as list columns, byte
/// arrays binary, arrays of messages JSON) named `T.<field>`, one row per observation.
/// Messages are matched by per-topic index, counted as the builder counts them (messages whose
/// stamp could not be read do not count); a message may be a member of several observations.
#[cfg(feature = "frames")]
pub fn member_fields(bag: &Bag, r: &ObserveReport) -> Result<MemberFields, Error> {
    use bagscope_frames::message::MessageColumns;
    use std::collections::{HashMap, HashSet};
    let topics: Vec<&String> = std::iter::once(&r.anchor_topic)
        .chain(&r.member_topics)
        .collect();
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let mut parts = Vec::with_capacity(topics.len());
    // Per bag topic: its position in `topics`, and the log times of the messages wanted.
    let mut slot: Vec<Option<usize>> = vec![None; bag.topics.len()];
    let mut want_log: Vec<HashSet<i64>> = vec![HashSet::new(); bag.topics.len()];
    // Per position in `topics`: message index -> the observation rows holding it.
    let mut rows_of: Vec<HashMap<usize, Vec<usize>>> = vec![HashMap::new(); topics.len()];
    for (k, t) in topics.iter().enumerate() {
        let i = bag.topic_index(t)?;
        let schema = schemas[i].as_ref().map_err(|e| {
            Error::invalid(
                "with_fields",
                format!("topic {t} has no usable message definition ({e})"),
            )
        })?;
        parts.push(MessageColumns::new(schema, &[], false, false)?.prefixed(t));
        slot[i] = Some(k);
        for (row, o) in r.observations.iter().enumerate() {
            let (index, log) = if k == 0 {
                (o.anchor_index, o.anchor_log_time_ns)
            } else {
                let m = &o.members[k - 1];
                (m.index, m.log_time_ns)
            };
            want_log[i].insert(log);
            rows_of[k].entry(index).or_default().push(row);
        }
    }
    let wanted: Vec<bool> = slot.iter().map(Option::is_some).collect();
    let scan = bag.scan(&wanted, |m| {
        let loc = &locs[m.topic];
        let counted =
            matches!(loc.source(), StampSource::None) || loc.read_stamp_ns(m.data).is_ok();
        let payload =
            (counted && want_log[m.topic].contains(&m.log_time_ns)).then(|| m.data.to_vec());
        (counted, payload)
    });
    // Per position in `topics`: the payload of each observation row.
    let mut payloads: Vec<Vec<Option<std::sync::Arc<[u8]>>>> = (0..topics.len())
        .map(|_| vec![None; r.observations.len()])
        .collect();
    let mut next = vec![0usize; topics.len()];
    for it in scan.items {
        let (Some(k), (true, payload)) = (slot[it.topic], it.value) else {
            continue;
        };
        let index = next[k];
        next[k] += 1;
        if let (Some(obs_rows), Some(data)) = (rows_of[k].get(&index), payload) {
            let data: std::sync::Arc<[u8]> = data.into();
            for &row in obs_rows {
                payloads[k][row] = Some(data.clone());
            }
        }
    }
    let mut warnings = scan.warnings;
    for (k, (mc, rows)) in parts.iter_mut().zip(&payloads).enumerate() {
        let mut failed = 0usize;
        for row in rows {
            match row {
                Some(data) => failed += usize::from(mc.push(data).is_err()),
                None => {
                    failed += 1;
                    mc.push_null();
                }
            }
        }
        if failed > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::Undecodable,
                    format!("{failed} observation member message(s) whose fields could not be decoded: their field columns are null"),
                )
                .topic(topics[k])
                .loss(),
            );
        }
    }
    Ok((parts, warnings))
}

/// One contract's line of `observe --compare`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// The contract file.
    pub contract: String,
    /// Its content hash.
    pub policy_version: String,
    /// Anchor messages.
    pub anchors: usize,
    /// Observations emitted.
    pub observations: usize,
    /// Messages in no observation, by reason.
    pub drops: std::collections::BTreeMap<String, usize>,
    /// Span p50 / p99, ns.
    pub span_ns: [Option<i64>; 2],
    /// Emit age p50 / p99, ns.
    pub emit_age_ns: [Option<i64>; 2],
    /// State gap p50 / p99, ns.
    pub gap_ns: [Option<i64>; 2],
    /// Online wait p50 / p99, ns.
    pub online_wait_ns: [Option<i64>; 2],
    /// Largest held-out interpolation RMS error over the interpolated state topics.
    pub interpolation_error_rms: Option<f64>,
}

impl CompareRow {
    /// The row of one report.
    pub fn of(r: &ObserveCommandReport) -> CompareRow {
        let s = &r.report.summary;
        let q = |x: &Option<bagscope_stats::NsSummary>| [x.map(|v| v.p50), x.map(|v| v.p99)];
        CompareRow {
            contract: r.contract.clone(),
            policy_version: r.report.policy_version.clone(),
            anchors: s.anchors,
            observations: s.observations,
            drops: s
                .drops
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), *v))
                .collect(),
            span_ns: q(&s.span_ns),
            emit_age_ns: q(&s.emit_age_ns),
            gap_ns: q(&s.gap_ns),
            online_wait_ns: q(&s.online_wait_ns),
            interpolation_error_rms: s
                .state
                .iter()
                .filter_map(|x| x.interpolation_error_rms)
                .reduce(f64::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The facade reads the synthetic observation bag and the builder's rows match its truth
    /// (the CLI's end-to-end tests read the same through the Parquet files).
    #[test]
    fn synth_bag_gives_the_analytic_state_and_the_dropped_frame() {
        let d = tempfile::tempdir().unwrap();
        let o = bagscope_synth::ObserveSynth {
            drop_left_frame: Some(10),
            ..Default::default()
        };
        let truth = bagscope_synth::write_observe(d.path(), "obs", &o).unwrap();
        let c = d.path().join("c.yaml");
        std::fs::write(
            &c,
            "anchor: /camera/head/image_raw\nmembers:\n  - name: wrists\n    policy: approx-py\n    topics: [/camera/left/image_raw, /camera/right/image_raw]\n    queue: 5\n    slop: 15ms\nstate:\n  - topic: /joint_states\n    mode: interpolate\n    max_gap: 20ms\n    continuous_joints: [wrist_roll]\n",
        )
        .unwrap();
        let r = observe(&d.path().join("obs"), &c).unwrap();
        assert!(!crate::CommandReport::data_loss(&r));
        let rep = &r.report;
        assert_eq!(rep.summary.observations, 59);
        let lost: Vec<(usize, usize)> = rep.rejections.iter().map(|x| (x.topic, x.index)).collect();
        assert_eq!(lost, [(0, 10), (2, 10)]);
        for ob in &rep.observations {
            let s = ob.anchor_stamp_ns;
            let want = truth.joints.position((s - truth.origin_ns) as f64 / 1e9);
            let v = ob.state[0].as_ref().unwrap();
            let p = rep.state_fields[0]
                .iter()
                .position(|f| f.name == "position")
                .unwrap();
            for (g, w) in v.values[p].iter().zip(&want) {
                assert!(
                    (g - w).abs() < 1e-9,
                    "anchor {}: {g} vs {w}",
                    ob.anchor_index
                );
            }
            assert_eq!(ob.emit_age_ns, Some(10_500_000));
            assert_eq!(&*ob.members[0].frame_id, "left_camera");
        }
        // Comments and key order do not change the policy version.
        let a = load_contract(&c).unwrap();
        let c2 = d.path().join("c2.yaml");
        let text = std::fs::read_to_string(&c).unwrap();
        std::fs::write(&c2, format!("# a comment\n{text}")).unwrap();
        assert_eq!(load_contract(&c2).unwrap().policy_version, a.policy_version);
        assert_eq!(a.policy_version.len(), 16);
        // A wrong key names the file and the key.
        std::fs::write(&c2, text.replace("slop: 15ms", "slop: 15 parsecs")).unwrap();
        let e = load_contract(&c2).unwrap_err();
        assert!(e.is_usage());
        let msg = e.to_string();
        assert!(
            msg.contains("c2.yaml") && msg.contains("members[0].slop"),
            "{msg}"
        );
    }
}
