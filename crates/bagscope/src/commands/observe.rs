//! `bagscope observe`: the observation builder over a bag. Reads the contract file (YAML),
//! reads the bag once for what the contract needs (stamps and frame ids of the anchor and
//! members, state fields, TF, `/clock`), runs `bagscope-observe` and, with the `frames`
//! feature, writes `observations.parquet` and `rejections.parquet`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value as Json;

use bagscope_bag::{Bag, RawMessage, Warning, WarningCode};
use bagscope_msg::{decode, StampSource, Value};
pub use bagscope_observe::Shape;
use bagscope_observe::{
    AxisChoice, Contract, ContractError, EmitAxis, ObserveReport, Sink, StateField, StateSample,
    StreamInput, SyncMessage, SyncPlan, Values,
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

/// A state message as read: its stamp, its numeric fields (their paths and list flags,
/// shared by the messages that have the same), their values back to back with each field's
/// length, and its `name` list (shared by consecutive messages with the same).
struct StateItem {
    stamp: i64,
    fields: std::sync::Arc<[StateField]>,
    values: Vec<f64>,
    lens: Vec<u32>,
    names: Option<bagscope_observe::Names>,
}

impl StateItem {
    /// The values field by field.
    fn split(&self) -> Vec<Vec<f64>> {
        let mut at = 0usize;
        self.lens
            .iter()
            .map(|&n| {
                let v = self.values[at..at + n as usize].to_vec();
                at += n as usize;
                v
            })
            .collect()
    }
}

/// Per state topic, the field lists and the last `name` list met, shared between messages.
#[derive(Default)]
struct StateShapes {
    fields: Vec<std::sync::Arc<[StateField]>>,
    names: Option<bagscope_observe::Names>,
}

/// What the builder's sinks get with an anchor or member message: its payload, when the
/// observation table copies the messages' fields (`--with-fields`).
pub type Payload = Option<std::sync::Arc<[u8]>>;

enum Item {
    Sync(Option<i64>, Frame, Payload),
    State(Option<StateItem>),
    Tf(Option<Vec<TfTransform>>),
    Bad,
}

#[derive(Clone, Copy)]
enum Role {
    None,
    Sync(usize),
    State(usize),
    /// A TF topic (static or not).
    Tf(bool),
    /// `/clock`, when the contract does not name it: read for the emit-age mapping.
    Clock,
}

/// Each numeric field of a decoded message, flattened (`header` left out), in message order,
/// to `out` as (path, its values, whether it is a list): numbers, and arrays every element of
/// which is a number (an empty array too); strings, byte arrays and arrays of strings or
/// messages are not state. The path is built in `path` (no allocation per field).
fn walk_state(v: &Value, path: &mut String, out: &mut dyn FnMut(&str, &Value, bool)) {
    match v {
        Value::Struct(s) => {
            for (n, x) in s.iter() {
                if path.is_empty() && n == "header" {
                    continue;
                }
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(n);
                walk_state(x, path, out);
                path.truncate(len);
            }
        }
        Value::Array(a) => {
            if a.iter().all(|x| x.as_f64().is_some()) {
                out(path, v, true);
            }
        }
        Value::String(_) | Value::Bytes(_) => {}
        x => {
            if x.as_f64().is_some() {
                out(path, v, false);
            }
        }
    }
}

/// A decoded state message as a [`StateItem`] (fields and names shared through `shapes`).
fn state_item(v: &Value, stamp: i64, shapes: &std::sync::Mutex<StateShapes>) -> StateItem {
    let mut values = Vec::new();
    let mut lens = Vec::new();
    let mut path = String::new();
    // The fields as a known list, checked as the message is walked.
    let known: Vec<std::sync::Arc<[StateField]>> =
        shapes.lock().map(|s| s.fields.clone()).unwrap_or_default();
    let mut matches: Vec<bool> = vec![true; known.len()];
    let mut k = 0usize;
    walk_state(v, &mut path, &mut |name, x, list| {
        for (m, f) in matches.iter_mut().zip(&known) {
            *m &= f.get(k).is_some_and(|g| g.name == name && g.list == list);
        }
        k += 1;
        let before = values.len();
        match x {
            Value::Array(a) => values.extend(a.iter().filter_map(Value::as_f64)),
            x => values.extend(x.as_f64()),
        }
        lens.push((values.len() - before) as u32);
    });
    let found = known
        .iter()
        .zip(&matches)
        .find(|(f, &m)| m && f.len() == k)
        .map(|(f, _)| f.clone());
    let fields = found.unwrap_or_else(|| {
        let mut list = Vec::with_capacity(k);
        walk_state(v, &mut path, &mut |name, _, list_field| {
            list.push(StateField {
                name: name.to_string(),
                list: list_field,
            })
        });
        let a: std::sync::Arc<[StateField]> = list.into();
        if let Ok(mut s) = shapes.lock() {
            // A few shapes per topic at most; a topic whose fields keep changing is not
            // remembered beyond that.
            if s.fields.len() < 8 {
                s.fields.push(a.clone());
            }
        }
        a
    });
    let names = v.field("name").and_then(|n| n.as_array()).and_then(|a| {
        let strs: Option<Vec<&str>> = a.iter().map(Value::as_str).collect();
        let strs = strs?;
        let mut s = shapes.lock().ok()?;
        if let Some(prev) = &s.names {
            if prev.len() == strs.len() && prev.iter().zip(&strs).all(|(p, q)| p == q) {
                return Some(prev.clone());
            }
        }
        let n: bagscope_observe::Names = strs
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .into();
        s.names = Some(n.clone());
        Some(n)
    });
    StateItem {
        stamp,
        fields,
        values,
        lens,
        names,
    }
}

/// What the contract asks of the bag: each topic's role, the definitions and stamp locators,
/// and what is missing (warnings).
struct Setup {
    role: Vec<Role>,
    schemas: Vec<Result<bagscope_msg::MessageSchema, String>>,
    locs: Vec<bagscope_msg::StampLocator>,
    warnings: Vec<Warning>,
    /// Per topic: the state messages' field lists and names met so far.
    shapes: Vec<std::sync::Mutex<StateShapes>>,
}

impl Setup {
    fn of(bag: &Bag, lc: &LoadedContract) -> Result<Setup, Error> {
        let c = &lc.contract;
        let mut role = vec![Role::None; bag.topics.len()];
        for (k, t) in c.sync_topics().iter().enumerate() {
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
        Ok(Setup {
            shapes: role.iter().map(|_| Default::default()).collect(),
            role,
            schemas,
            locs,
            warnings,
        })
    }

    /// Topics whose role passes `f`.
    fn wanted(&self, f: impl Fn(Role) -> bool) -> Vec<bool> {
        self.role.iter().map(|&r| f(r)).collect()
    }

    /// A synchronized message's stamp (`None` for a type without one), or `Err` when it
    /// cannot be read (the message is left out and counted).
    fn stamp(&self, m: &RawMessage<'_>) -> Result<Option<i64>, ()> {
        let loc = &self.locs[m.topic];
        match loc.source() {
            StampSource::None => Ok(None),
            _ => loc.read_stamp_ns(m.data).map_err(|_| ()),
        }
    }

    /// One message read for the builder (`payloads`: anchor and member payloads kept).
    fn read(&self, m: &RawMessage<'_>, payloads: bool) -> Item {
        match self.role[m.topic] {
            Role::Sync(_) => match self.stamp(m) {
                Ok(s) => {
                    let loc = &self.locs[m.topic];
                    let frame = loc.read_frame_id(m.data).ok().flatten().unwrap_or_default();
                    let payload = payloads.then(|| m.data.into());
                    Item::Sync(s, crate::tf::shared_frame(&frame), payload)
                }
                Err(_) => Item::Bad,
            },
            Role::State(_) => Item::State(self.state(m)),
            Role::Tf(_) => Item::Tf(bagscope_msg::types::tf_frames(m.data).ok().map(|t| {
                t.into_iter()
                    .map(|x| TfTransform {
                        parent: crate::tf::shared_frame(x.parent),
                        child: crate::tf::shared_frame(x.child),
                        stamp_ns: x.stamp_ns,
                    })
                    .collect()
            })),
            Role::Clock | Role::None => Item::Bad,
        }
    }

    /// A state message's stamp and numeric fields, `None` when they cannot be read.
    fn state(&self, m: &RawMessage<'_>) -> Option<StateItem> {
        let s = self.schemas[m.topic].as_ref().ok()?;
        let v = decode(s, m.data).ok()?;
        let stamp = self.locs[m.topic].read_stamp_ns(m.data).ok().flatten()?;
        Some(state_item(&v, stamp, &self.shapes[m.topic]))
    }
}

/// What [`in_order`] hands out: the next message's result, or word that the results handed
/// out so far are to be dropped (the bag is read again from the start).
enum Fed<T> {
    Item(bagscope_bag::Item<T>),
    Restart,
}

/// Runs `f` on every message of the `wanted` topics in log-time order, `feed` getting each
/// result: streamed ([`Bag::scan_in_order`]), or, where the bag's chunk headers misstate
/// their time ranges, from a whole [`Bag::scan`] after [`Fed::Restart`].
fn in_order<T: Send>(
    bag: &Bag,
    wanted: &[bool],
    f: &(dyn Fn(&RawMessage<'_>) -> T + Sync),
    feed: &mut dyn FnMut(Fed<T>),
) -> Vec<Warning> {
    match bag.scan_in_order(wanted, f, &mut |it| feed(Fed::Item(it))) {
        Ok(w) => w,
        Err(bagscope_bag::ScanOrderBroken) => {
            feed(Fed::Restart);
            let scan = bag.scan(wanted, f);
            for it in scan.items {
                feed(Fed::Item(it));
            }
            scan.warnings
        }
    }
}

/// The synchronizers' plan over the anchor's and members' messages (member groups only):
/// their stamps and log times, read in a first pass.
fn sync_plan(bag: &Bag, lc: &LoadedContract, st: &Setup) -> Result<Option<SyncPlan>, Error> {
    let c = &lc.contract;
    if c.groups.is_empty() {
        return Ok(None);
    }
    let wanted = st.wanted(|r| matches!(r, Role::Sync(_)));
    let none: Frame = crate::tf::shared_frame("");
    let mut msgs: Vec<SyncMessage> = Vec::new();
    let f = |m: &RawMessage<'_>| st.stamp(m).ok();
    in_order(bag, &wanted, &f, &mut |fed| match fed {
        Fed::Item(it) => {
            if let (Role::Sync(k), Some(stamp_ns)) = (st.role[it.topic], it.value) {
                msgs.push(SyncMessage {
                    topic: k,
                    stamp_ns,
                    log_time_ns: it.log_time_ns,
                    frame_id: none.clone(),
                });
            }
        }
        Fed::Restart => msgs.clear(),
    });
    bagscope_observe::plan_sync(c, &msgs).map_err(|e| builder_error(lc, e))
}

fn builder_error(lc: &LoadedContract, e: bagscope_observe::ObserveError) -> Error {
    match e {
        bagscope_observe::ObserveError::Contract(s) => {
            Error::Contract(ContractError::file(&lc.path, s))
        }
        bagscope_observe::ObserveError::Sync(e) => Error::Sync(e),
    }
}

/// [`Values`] kept in memory up to 64 Ki values, then appended to an unnamed temporary file
/// (in the output folder, else the system's) 64 Ki at a time: the summaries' exact order
/// statistics are taken in two passes over them ([`bagscope_stats::NsSummary::of_streamed`]),
/// so the values never need to be in memory at once. Where the file cannot be written, the
/// values stay in memory.
pub(crate) struct SpillValues {
    dir: Option<PathBuf>,
    mem: Vec<i64>,
    file: Option<std::fs::File>,
    /// Values in the file.
    in_file: u64,
    /// The file could not be made or written: everything from there on stays in memory.
    in_memory: bool,
}

/// Values held in memory before a [`SpillValues`] appends them to its file.
const IN_MEMORY_VALUES: usize = 1 << 16;

impl SpillValues {
    pub(crate) fn new(dir: Option<&Path>) -> SpillValues {
        SpillValues {
            dir: dir.map(Path::to_path_buf),
            mem: Vec::new(),
            file: None,
            in_file: 0,
            in_memory: false,
        }
    }

    /// Appends the values in memory to the file (all of them, or none: the file is cut back).
    fn spill(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        if self.file.is_none() {
            self.file = Some(match &self.dir {
                Some(d) => tempfile::tempfile_in(d).or_else(|_| tempfile::tempfile())?,
                None => tempfile::tempfile()?,
            });
        }
        let Some(f) = &self.file else {
            return Ok(());
        };
        let mut bytes = Vec::with_capacity(self.mem.len() * 8);
        for v in &self.mem {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let mut w = f;
        if let Err(e) = w.write_all(&bytes) {
            let _ = f.set_len(self.in_file * 8);
            return Err(e);
        }
        self.in_file += self.mem.len() as u64;
        self.mem.clear();
        Ok(())
    }
}

impl Values for SpillValues {
    fn push(&mut self, v: i64) {
        self.mem.push(v);
        if self.mem.len() >= IN_MEMORY_VALUES && !self.in_memory {
            self.in_memory = self.spill().is_err();
        }
    }

    fn summary(&mut self) -> Option<bagscope_stats::NsSummary> {
        use std::io::{Read, Seek};
        let Some(file) = &self.file else {
            return bagscope_stats::NsSummary::of_in_place(&mut self.mem);
        };
        let (n, mem) = (self.in_file, &self.mem);
        // The file's values, then those still in memory; the same sequence on every pass.
        let values = || {
            let mut f = file.try_clone().ok().and_then(|mut f| {
                f.seek(std::io::SeekFrom::Start(0)).ok()?;
                Some(std::io::BufReader::with_capacity(1 << 16, f))
            });
            let from_file = (0..n).map_while(move |_| {
                let mut b = [0u8; 8];
                f.as_mut()?.read_exact(&mut b).ok()?;
                Some(i64::from_le_bytes(b))
            });
            from_file.chain(mem.iter().copied())
        };
        bagscope_stats::NsSummary::of_streamed(values)
    }
}

/// Where a streamed run's observations and rejections go, besides the builder's [`Sink`]:
/// row groups written as they fill, the state topics' fields being known by then.
trait Output: Sink<Payload> {
    /// Observations wait for the table's shape (the state topics' fields).
    fn needs_shape(&self) -> bool {
        false
    }
    /// The table's shape, known now.
    fn set_shape(&mut self, _shape: &Shape) {}
    /// A row group's worth of rows is waiting.
    fn full(&self) -> bool {
        false
    }
    /// Writes what waits.
    fn flush(&mut self) -> Result<(), Error> {
        Ok(())
    }
    /// The first error met; the run stops reading and returns it.
    fn failed(&mut self) -> Option<Error> {
        None
    }
    /// The tables it is writing (only `observe -o`'s output).
    #[cfg(feature = "tables")]
    fn into_tables(self: Box<Self>) -> Option<Box<Tables>> {
        None
    }
    /// What it kept of the observations and rejections (only [`Collect`] keeps them).
    fn into_rows(
        self: Box<Self>,
    ) -> (
        Vec<bagscope_observe::Observation>,
        Vec<bagscope_observe::Rejection>,
    ) {
        (Vec::new(), Vec::new())
    }
}

impl Sink<Payload> for Box<dyn Output + '_> {
    fn observation(&mut self, o: bagscope_observe::Observation, extras: Vec<Payload>) {
        (**self).observation(o, extras)
    }
    fn rejection(&mut self, r: bagscope_observe::Rejection) {
        (**self).rejection(r)
    }
}

/// Keeps every observation and rejection ([`observe_of`]).
#[derive(Default)]
struct Collect {
    observations: Vec<bagscope_observe::Observation>,
    rejections: Vec<bagscope_observe::Rejection>,
}

impl Sink<Payload> for Collect {
    fn observation(&mut self, o: bagscope_observe::Observation, _: Vec<Payload>) {
        self.observations.push(o);
    }
    fn rejection(&mut self, r: bagscope_observe::Rejection) {
        self.rejections.push(r);
    }
}

impl Output for Collect {
    fn into_rows(
        self: Box<Self>,
    ) -> (
        Vec<bagscope_observe::Observation>,
        Vec<bagscope_observe::Rejection>,
    ) {
        (self.observations, self.rejections)
    }
}

/// Keeps nothing (the summary alone: `--compare`, the report page).
struct Discard;

impl Sink<Payload> for Discard {
    fn observation(&mut self, _: bagscope_observe::Observation, _: Vec<Payload>) {}
    fn rejection(&mut self, _: bagscope_observe::Rejection) {}
}

impl Output for Discard {}

/// One run of the streamed builder (made anew if the bag must be read again, a chunk header
/// misstating its time range): the builder, the messages left out per topic, and per state
/// topic whether its fields were announced and the last names met.
struct Run<'b, 'o> {
    builder: bagscope_observe::Builder<'b, Payload, Box<dyn Output + 'o>>,
    bad: Vec<usize>,
    seen: Vec<bool>,
    names_seen: Vec<Option<bagscope_observe::Names>>,
}

/// The static TF messages, read before the run: a static transform counts from the start.
fn static_tf(bag: &Bag, st: &Setup) -> Vec<TfMessage> {
    let wanted = st.wanted(|r| matches!(r, Role::Tf(true)));
    let scan = bag.scan(&wanted, |m| st.read(m, false));
    scan.items
        .into_iter()
        .filter_map(|it| match it.value {
            Item::Tf(Some(transforms)) => Some(TfMessage {
                log_time_ns: it.log_time_ns,
                source: 1,
                is_static: true,
                transforms,
            }),
            _ => None,
        })
        .collect()
}

/// Hands one read message to the run's builder. A message that cannot be used is counted in
/// `run.bad`; false for a state sample whose fields differ from its topic's first (then the
/// output is not looked at for this message). `fields`: each state topic's fields from its
/// first sample.
fn feed(
    run: &mut Run<'_, '_>,
    st: &Setup,
    fields: &mut [Option<(Vec<StateField>, bool)>],
    it: bagscope_bag::Item<Item>,
) -> bool {
    match (st.role[it.topic], it.value) {
        (Role::Sync(k), Item::Sync(stamp_ns, frame_id, payload)) => run.builder.sync(
            SyncMessage {
                topic: k,
                stamp_ns,
                log_time_ns: it.log_time_ns,
                frame_id,
            },
            payload,
        ),
        (Role::State(k), Item::State(Some(s))) => {
            if !run.seen[k] {
                run.seen[k] = true;
                run.builder.state_fields(k, &s.fields, s.names.is_some());
                fields[k] = Some((s.fields.to_vec(), s.names.is_some()));
            }
            let known = fields[k].as_ref().map(|x| &x.0);
            if known.is_none_or(|f| {
                f.len() != s.fields.len()
                    || f.iter().zip(s.fields.iter()).any(|(a, b)| a.name != b.name)
            }) {
                run.bad[it.topic] += 1;
                return false;
            }
            let names = s.names.clone().map(|n| match &run.names_seen[k] {
                Some(prev) if prev[..] == n[..] => prev.clone(),
                _ => {
                    run.names_seen[k] = Some(n.clone());
                    n
                }
            });
            run.builder.state(
                k,
                StateSample {
                    stamp_ns: s.stamp,
                    log_time_ns: it.log_time_ns,
                    values: s.split(),
                    names,
                },
            );
        }
        (Role::Tf(is_static), Item::Tf(Some(transforms))) => run.builder.tf(&TfMessage {
            log_time_ns: it.log_time_ns,
            source: usize::from(is_static),
            is_static,
            transforms,
        }),
        _ => run.bad[it.topic] += 1,
    }
    true
}

/// One streamed run of the builder over the bag into `output` (made anew by `make` if the
/// bag has to be read again): the report, and the output.
fn run<'o>(
    bag: &Bag,
    lc: &LoadedContract,
    payloads: bool,
    spill: Option<&Path>,
    make: &mut dyn FnMut() -> Result<Box<dyn Output + 'o>, Error>,
) -> Result<(ObserveCommandReport, Box<dyn Output + 'o>), Error> {
    let c = &lc.contract;
    let st = Setup::of(bag, lc)?;
    let mut warnings = st.warnings.clone();
    let plan = sync_plan(bag, lc, &st)?;
    // Static TF counts from the start: read first.
    let tf_static: Vec<TfMessage> = if c.tf_target.is_some() {
        static_tf(bag, &st)
    } else {
        Vec::new()
    };
    // Emit ages: log times onto the anchor stamps' clock, mapped through /clock when the
    // stamps are on sim time and the log times on wall time (decided from the first 64
    // anchor stamps; /clock is read only then).
    let axis_warning: std::cell::RefCell<Option<Warning>> = Default::default();
    let map: std::cell::OnceCell<Option<bagscope_clocks::ClockMap>> = Default::default();
    let mapper = |log: i64| {
        map.get()
            .and_then(Option::as_ref)
            .and_then(|m| m.log_to_sim_ns(log))
    };
    let clock_topic = st.role.iter().position(|r| matches!(r, Role::Clock));
    let decide = |anchor_stamps: &[i64], first_log: Option<i64>| -> EmitAxis<'_> {
        let stamps_wall = bagscope_types::series_is_wall(anchor_stamps).unwrap_or(true);
        let log_wall = first_log.is_some_and(bagscope_types::is_wall_ns);
        let clock = (!stamps_wall && log_wall)
            .then(|| {
                let t = clock_topic?;
                let mut wanted = vec![false; bag.topics.len()];
                wanted[t] = true;
                let (cols, _) = bag.scan_columns(&wanted, |m| {
                    [st.locs[m.topic]
                        .read_stamp_ns(m.data)
                        .ok()
                        .flatten()
                        .unwrap_or(i64::MIN)]
                });
                let (mut log, mut sim) = (Vec::new(), Vec::new());
                for (l, s) in cols[t].log_time_ns.iter().zip(&cols[t].values[0]) {
                    if *s != i64::MIN {
                        log.push(*l);
                        sim.push(*s);
                    }
                }
                bagscope_clocks::ClockMap::from_series(&log, &sim, bagscope_types::Axis::Wall)
            })
            .flatten();
        let mapped = clock.is_some();
        let _ = map.set(clock);
        if stamps_wall == log_wall || anchor_stamps.is_empty() {
            EmitAxis::Same
        } else if mapped {
            EmitAxis::Mapped(&mapper)
        } else {
            *axis_warning.borrow_mut() = Some(
                Warning::new(
                    WarningCode::SplitClockAxes,
                    "the anchor's stamps are on sim time and log times on wall time, with no /clock to map them: emit ages are null and freshness is not checked",
                )
                .topic(&c.anchor),
            );
            EmitAxis::Unmapped
        }
    };
    let decide = std::cell::Cell::new(Some(decide));
    let wanted = st.wanted(|r| matches!(r, Role::Sync(_) | Role::State(_) | Role::Tf(false)));
    let read = |m: &RawMessage<'_>| st.read(m, payloads);
    // Built anew if the bag must be read again (a chunk header misstating its time range).
    let new_run = |output: Box<dyn Output + 'o>| -> Result<Run<'_, 'o>, Error> {
        let axis = match decide.take() {
            Some(d) => AxisChoice::Decide(Box::new(d)),
            // A second read: the first decided (the same stamps come again).
            None => AxisChoice::Given(match (map.get(), axis_warning.borrow().is_some()) {
                (_, true) => EmitAxis::Unmapped,
                (Some(Some(_)), false) => EmitAxis::Mapped(&mapper),
                _ => EmitAxis::Same,
            }),
        };
        let dir = spill.map(Path::to_path_buf);
        let b = bagscope_observe::Builder::new(
            StreamInput {
                contract: c,
                policy_version: &lc.policy_version,
                plan: plan.clone(),
                tf_static: &tf_static,
                axis,
                values: Box::new(move || Box::new(SpillValues::new(dir.as_deref()))),
            },
            output,
        )
        .map_err(|e| builder_error(lc, e))?;
        Ok(Run {
            builder: b,
            bad: vec![0usize; bag.topics.len()],
            seen: vec![false; c.state.len()],
            names_seen: vec![None; c.state.len()],
        })
    };
    let mut current = Some(new_run(make()?)?);
    let mut failure: Option<Error> = None;
    let mut shape: Option<Shape> = None;
    let mut fields: Vec<Option<(Vec<StateField>, bool)>> = vec![None; c.state.len()];
    let scan_warnings = in_order(bag, &wanted, &read, &mut |fed| {
        let it = match fed {
            Fed::Item(it) => it,
            Fed::Restart => {
                // Start over: the rows written so far are dropped with their output.
                current = None;
                shape = None;
                fields = vec![None; c.state.len()];
                match make().and_then(&new_run) {
                    Ok(r) => current = Some(r),
                    Err(e) => failure = Some(e),
                }
                return;
            }
        };
        {
            let Some(run) = current.as_mut() else {
                return;
            };
            if failure.is_some() || !feed(run, &st, &mut fields, it) {
                return;
            }
            let out = run.builder.sink_mut();
            if let Some(e) = out.failed() {
                failure = Some(e);
                return;
            }
            if out.needs_shape() {
                let s = shape.get_or_insert_with(|| stream_shape(bag, lc, &st, &fields));
                out.set_shape(s);
            }
            if out.full() {
                if let Err(e) = out.flush() {
                    failure = Some(e);
                }
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let Some(Run { builder, bad, .. }) = current else {
        return Err(Error::no_data("observe: the run could not start over"));
    };
    warnings.extend(scan_warnings);
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
    let (report, mut output) = builder.finish();
    warnings.extend(axis_warning.borrow_mut().take());
    if let Some(e) = output.failed() {
        return Err(e);
    }
    if output.needs_shape() {
        output.set_shape(&shape.unwrap_or_else(|| Shape::of(&report)));
    }
    output.flush()?;
    warnings.sort();
    warnings.dedup();
    Ok((
        ObserveCommandReport {
            bag: bag.path.display().to_string(),
            contract: lc.path.display().to_string(),
            report,
            warnings,
        },
        output,
    ))
}

/// The table shape while the run goes on: the contract's, and each state topic's fields
/// from its first sample; a state topic without one yet (an optional state that starts
/// late) is read ahead for it (its first readable sample in log-time order).
fn stream_shape(
    bag: &Bag,
    lc: &LoadedContract,
    st: &Setup,
    fields: &[Option<(Vec<StateField>, bool)>],
) -> Shape {
    let c = &lc.contract;
    let state = c
        .state
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let (f, names) = fields[k].clone().unwrap_or_else(|| {
                let wanted = st.wanted(|r| matches!(r, Role::State(j) if j == k));
                let mut first: Option<(Vec<StateField>, bool)> = None;
                in_order(
                    bag,
                    &wanted,
                    &|m: &RawMessage<'_>| st.state(m),
                    &mut |fed| match fed {
                        Fed::Item(it) => {
                            if let (None, Some(s)) = (&first, it.value) {
                                first = Some((s.fields.to_vec(), s.names.is_some()));
                            }
                        }
                        Fed::Restart => first = None,
                    },
                );
                first.unwrap_or_default()
            });
            (s.mode, f, names)
        })
        .collect();
    Shape {
        policy_version: lc.policy_version.clone(),
        topics: c.sync_topics(),
        groups: c.groups.clone(),
        state_topics: c.state.iter().map(|s| s.topic.clone()).collect(),
        state,
    }
}

/// Runs the builder over an open bag and returns every observation and rejection with the
/// report, held in memory (`observe -o` writes them as they are made: [`observe_to`]).
pub fn observe_of(bag: &Bag, lc: &LoadedContract) -> Result<ObserveCommandReport, Error> {
    let (mut r, out) = run(bag, lc, false, None, &mut || {
        Ok(Box::new(Collect::default()) as Box<dyn Output>)
    })?;
    let (observations, mut rejections) = out.into_rows();
    rejections.sort_by_key(|x| (x.topic, x.index));
    r.report.observations = observations;
    r.report.rejections = rejections;
    Ok(r)
}

/// [`observe_of`]'s report without the observations and rejections (the summary: `observe
/// --compare`, the report page), in bounded memory.
pub fn observe_summary(bag: &Bag, lc: &LoadedContract) -> Result<ObserveCommandReport, Error> {
    run(bag, lc, false, None, &mut || {
        Ok(Box::new(Discard) as Box<dyn Output>)
    })
    .map(|(r, _)| r)
}

/// [`observe_of`] of the bag at `path` with the contract file `contract`.
pub fn observe(path: &Path, contract: &Path) -> Result<ObserveCommandReport, Error> {
    let lc = load_contract(contract)?;
    observe_of(&Bag::open(path)?, &lc)
}

/// The files `observe` wrote.
#[cfg(feature = "tables")]
#[derive(Debug, Clone, Serialize)]
pub struct WrittenTables {
    /// `OUT/observations.parquet`.
    pub observations: String,
    /// `OUT/rejections.parquet`.
    pub rejections: String,
    /// Column names of the observation table, in order.
    pub columns: Vec<String>,
}

/// Refuses, before the bag is read, an output folder `out` that cannot take this run's files:
/// not a folder (a device, a FIFO, a file: [`crate::refuse_output_dir`]), or holding a
/// `lerobot/` dataset that the run would leave stale or mix with its own. With `lerobot`
/// (`--layout lerobot`) `OUT/lerobot` must be new or empty ([`crate::lerobot::check_target`]);
/// without it, a non-empty `OUT/lerobot` would describe an earlier run's observations beside
/// this run's tables, and is refused as well.
#[cfg(feature = "tables")]
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

#[cfg(feature = "tables")]
pub use bagscope_tables::observations::{observation_columns, rejection_columns, ROW_GROUP_ROWS};
/// What `observe -o` writes as the builder goes: the observation table a row group at a time,
/// the rejections per topic (spilled to temporary files in the output folder), the anchor's
/// and members' fields (`--with-fields`), the LeRobot dataset.
#[cfg(feature = "tables")]
use bagscope_tables::observations::{ObservationColumns, RejectionWriter};

#[cfg(feature = "tables")]
struct Tables {
    dir: PathBuf,
    obs: Option<bagscope_tables::TableWriter>,
    rejections: RejectionWriter,
    /// The table's columns, known once the state topics' fields are.
    shape: Option<Shape>,
    /// Observations made before then (a handful).
    pending: Vec<(bagscope_observe::Observation, Vec<Payload>)>,
    /// The row group being filled.
    rows: Option<ObservationColumns>,
    /// `--with-fields`: per anchor and member topic, its fields' columns.
    parts: Option<Vec<bagscope_tables::message::MessageColumns>>,
    undecoded: Vec<usize>,
    lerobot: Option<crate::lerobot::LeRobotWriter>,
    lerobot_error: Option<Error>,
    columns: Option<Vec<String>>,
    error: Option<Error>,
}

#[cfg(feature = "tables")]
impl Tables {
    fn new(
        bag: &Bag,
        lc: &LoadedContract,
        out: &Path,
        with_fields: bool,
        lerobot: Option<(&str, &str)>,
    ) -> Result<Tables, Error> {
        use bagscope_tables::{Format, TableWriter};
        let obs_path = out.join("observations.parquet");
        let rej_path = out.join("rejections.parquet");
        crate::refuse_output_dir(out)?;
        crate::refuse_outputs(bag, &[obs_path.as_path(), rej_path.as_path()])?;
        std::fs::create_dir_all(out).map_err(|e| {
            Error::write_failed(out, format!("cannot write into {}", out.display()), e)
        })?;
        let topics = lc.contract.sync_topics();
        let parts = if with_fields {
            let schemas = topic_schemas(bag);
            let mut parts = Vec::with_capacity(topics.len());
            for t in &topics {
                let i = bag.topic_index(t)?;
                let schema = schemas[i].as_ref().map_err(|e| {
                    Error::invalid(
                        "with_fields",
                        format!("topic {t} has no usable message definition ({e})"),
                    )
                })?;
                parts.push(
                    bagscope_tables::message::MessageColumns::new(schema, &[], false, false)?
                        .prefixed(t),
                );
            }
            Some(parts)
        } else {
            None
        };
        let (lerobot, lerobot_error) = match lerobot {
            None => (None, None),
            Some((action, task)) => {
                match crate::lerobot::LeRobotWriter::new(
                    bag,
                    lc,
                    &out.join("lerobot"),
                    action,
                    task,
                ) {
                    Ok(w) => (Some(w), None),
                    Err(e) => (None, Some(e)),
                }
            }
        };
        Ok(Tables {
            dir: out.to_path_buf(),
            obs: Some(TableWriter::new(&obs_path, Format::Parquet)),
            undecoded: vec![0; topics.len()],
            rejections: RejectionWriter::new(out, &rej_path, topics),
            shape: None,
            pending: Vec::new(),
            rows: None,
            parts,
            lerobot,
            lerobot_error,
            columns: None,
            error: None,
        })
    }

    /// Adds an observation's row (the shape is known).
    fn add(&mut self, o: bagscope_observe::Observation, extras: Vec<Payload>) {
        let Some(shape) = &self.shape else {
            return;
        };
        if let Some(l) = &mut self.lerobot {
            if let Err(e) = l.push(shape, &o) {
                self.lerobot = None;
                self.lerobot_error = Some(e);
            }
        }
        if let Some(parts) = &mut self.parts {
            for (k, mc) in parts.iter_mut().enumerate() {
                let ok = match extras.get(k).and_then(Option::as_ref) {
                    Some(data) => mc.push(data).is_ok(),
                    None => {
                        mc.push_null();
                        false
                    }
                };
                self.undecoded[k] += usize::from(!ok);
            }
        }
        self.rows
            .get_or_insert_with(|| ObservationColumns::new(shape, ROW_GROUP_ROWS))
            .push(&o);
    }

    /// The rows added since the last frame, as a frame (of `shape`'s columns without rows
    /// when none was known).
    fn frame(
        &mut self,
        shape: &Shape,
    ) -> Result<bagscope_tables::polars::prelude::DataFrame, Error> {
        let cols = self
            .rows
            .get_or_insert_with(|| ObservationColumns::new(shape, 0))
            .take();
        Ok(match &mut self.parts {
            Some(parts) => {
                let mut p: Vec<&mut bagscope_tables::message::MessageColumns> =
                    parts.iter_mut().collect();
                bagscope_tables::message::frame_with_messages(cols, &mut p)?
            }
            None => bagscope_tables::frame(cols)?,
        })
    }
}

#[cfg(feature = "tables")]
impl Sink<Payload> for Tables {
    fn observation(&mut self, o: bagscope_observe::Observation, extras: Vec<Payload>) {
        if self.shape.is_some() {
            self.add(o, extras);
        } else {
            self.pending.push((o, extras));
        }
    }

    fn rejection(&mut self, r: bagscope_observe::Rejection) {
        if let Err(e) = self.rejections.push(r) {
            if self.error.is_none() {
                self.error = Some(Error::write_failed(
                    &self.dir,
                    format!("cannot write into {}", self.dir.display()),
                    e,
                ));
            }
        }
    }
}

#[cfg(feature = "tables")]
impl Output for Tables {
    fn needs_shape(&self) -> bool {
        self.shape.is_none() && !self.pending.is_empty()
    }

    fn set_shape(&mut self, shape: &Shape) {
        self.shape = Some(shape.clone());
        for (o, extras) in std::mem::take(&mut self.pending) {
            self.add(o, extras);
        }
    }

    fn full(&self) -> bool {
        self.rows
            .as_ref()
            .is_some_and(|r| r.len() >= ROW_GROUP_ROWS)
    }

    fn flush(&mut self) -> Result<(), Error> {
        let Some(shape) = self.shape.clone() else {
            return Ok(());
        };
        if self.rows.as_ref().is_none_or(ObservationColumns::is_empty) {
            return Ok(());
        }
        let df = self.frame(&shape)?;
        self.columns
            .get_or_insert_with(|| bagscope_tables::column_names(&df));
        if let Some(w) = &mut self.obs {
            w.write(&df)?;
        }
        drop(df);
        // The row group's memory goes back to the system, not kept by the allocator.
        bagscope_bag::release_freed_memory();
        Ok(())
    }

    fn failed(&mut self) -> Option<Error> {
        self.error.take()
    }

    fn into_tables(self: Box<Self>) -> Option<Box<Tables>> {
        Some(self)
    }
}

/// What `observe -o` writes besides the tables.
#[cfg(feature = "tables")]
#[derive(Debug, Clone, Default)]
pub struct ObserveOutputs {
    /// Copy the anchor's and every member's message fields into the observation table,
    /// flattened as `export` flattens them and named `T.<field>`; messages whose fields
    /// could not be decoded are null there and counted in a warning.
    pub with_fields: bool,
    /// `--layout lerobot`: the state topic that is the action, and the task (the dataset
    /// goes to `OUT/lerobot`).
    pub lerobot: Option<(String, String)>,
}

/// What `observe -o` wrote: the report, the tables, and the LeRobot dataset (or why it could
/// not be written: the tables are written either way).
#[cfg(feature = "tables")]
pub type Observed = (
    ObserveCommandReport,
    WrittenTables,
    Option<Result<crate::lerobot::LeRobotLayout, Error>>,
);

/// `bagscope observe -o OUT`: the builder over the bag, writing `OUT/observations.parquet`
/// and `OUT/rejections.parquet` as it goes (row groups of [`ROW_GROUP_ROWS`]; each file
/// written to a temporary name and renamed; same bag and contract give the same bytes),
/// and with `outputs.lerobot` the LeRobot dataset under `OUT/lerobot`. Memory does not grow
/// with the bag's length (only a plan of a few bytes per anchor and member message, when the
/// contract has member groups).
#[cfg(feature = "tables")]
pub fn observe_to(
    bag: &Bag,
    lc: &LoadedContract,
    out: &Path,
    outputs: &ObserveOutputs,
) -> Result<Observed, Error> {
    // The contract's topics checked against the bag before anything is written.
    Setup::of(bag, lc)?;
    let lerobot = outputs
        .lerobot
        .as_ref()
        .map(|(a, t)| (a.as_str(), t.as_str()));
    let make = || -> Result<Box<dyn Output>, Error> {
        Ok(Box::new(Tables::new(
            bag,
            lc,
            out,
            outputs.with_fields,
            lerobot,
        )?))
    };
    // Tables::new checks the paths before the bag is read.
    let first = make()?;
    let mut first = Some(first);
    let (mut r, output) = run(
        bag,
        lc,
        outputs.with_fields,
        Some(out),
        &mut || match first.take() {
            Some(t) => Ok(t),
            None => make(),
        },
    )?;
    let mut t = output
        .into_tables()
        .ok_or_else(|| Error::no_data("observe: the tables were not kept"))?;
    for (k, &n) in t.undecoded.iter().enumerate() {
        if n > 0 {
            r.warnings.push(
                Warning::new(
                    WarningCode::Undecodable,
                    format!("{n} observation member message(s) whose fields could not be decoded: their field columns are null"),
                )
                .topic(&t.rejections.topics()[k])
                .loss(),
            );
        }
    }
    r.warnings.sort();
    r.warnings.dedup();
    // The schema of an empty table.
    let shape = Shape::of(&r.report);
    let empty = t.frame(&shape)?;
    let columns = t
        .columns
        .take()
        .unwrap_or_else(|| bagscope_tables::column_names(&empty));
    let obs_path = out.join("observations.parquet");
    if let Some(w) = t.obs.take() {
        w.finish(&empty)?;
    }
    let rejections = t.rejections.path().display().to_string();
    t.rejections.finish().map_err(|e| match e {
        bagscope_tables::FramesError::Io { path, source } => Error::write_failed(
            &path,
            format!("cannot write into {}", path.display()),
            source,
        ),
        e => e.into(),
    })?;
    let lerobot = match (t.lerobot.take(), t.lerobot_error.take()) {
        (_, Some(e)) => Some(Err(e)),
        (Some(l), None) => Some(l.finish()),
        (None, None) => None,
    };
    Ok((
        r,
        WrittenTables {
            observations: obs_path.display().to_string(),
            rejections,
            columns,
        },
        lerobot,
    ))
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
