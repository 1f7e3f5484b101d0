//! `bagscope match` / `compare`: decode command and response joint series, put them on one clock
//! axis (refusing, mapping through `/clock`, or aligning to relative time), and run the
//! matching analysis.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};
use bagscope_clocks::{Axis, ClockMap, TopicTimes};
use bagscope_matching::{
    compare_runs, match_series, ClockMappingNote, CompareReport, JointNames, JointSeries,
    MatchOptions, MatchReport, ResponseKind,
};
use bagscope_msg::types::{JointState, JointTrajectory};
use bagscope_msg::{decode, decode_typed, schema_for_channel, StampSource, Value};

use crate::params::{Duration, DurationRange, JointLimits};
use crate::Error;

/// How the command and response streams are put on one time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// Stamps as recorded; different axes are mapped through `/clock` or refused.
    #[default]
    Stamps,
    /// Each stream's first message at 0.
    Relative,
}

impl std::str::FromStr for Align {
    type Err = String;

    /// `stamps` or `relative`.
    fn from_str(s: &str) -> Result<Align, String> {
        match s.trim() {
            "stamps" => Ok(Align::Stamps),
            "relative" => Ok(Align::Relative),
            x => Err(format!("must be stamps or relative, got '{x}'")),
        }
    }
}

impl std::fmt::Display for Align {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Align::Stamps => "stamps",
            Align::Relative => "relative",
        })
    }
}

impl serde::Serialize for Align {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Align {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Align, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// What `match` and `compare` pair: the two topics, how to read them, how to align them, and
/// the matching's parameters (`Default`: the documented defaults). The fields are the
/// parameters' names (Python's keywords, the CLI's flags; `interpolate` is the CLI's
/// `--no-interpolate` turned around).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct MatchArgs {
    /// Command topic (e.g. trajectory_msgs/JointTrajectory).
    #[cfg_attr(feature = "clap", arg(long))]
    pub command: String,
    /// Response topic (e.g. sensor_msgs/JointState).
    #[cfg_attr(feature = "clap", arg(long))]
    pub response: String,
    /// Field path of the command values for other types (e.g. `data`, `points[0].positions`);
    /// setting it makes JointTrajectory and JointState read through the path too.
    #[cfg_attr(feature = "clap", arg(long))]
    pub command_field: Option<String>,
    /// Field path of the response values for other types.
    #[cfg_attr(feature = "clap", arg(long))]
    pub response_field: Option<String>,
    /// Field path of the joint names for other types (without it the joints are named
    /// `FIELD[i]`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub names_field: Option<String>,
    /// `stamps` (map through /clock across axes, else refuse) or `relative` (each stream's
    /// first message at 0).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = MatchArgs::default().align))]
    pub align: Align,
    /// Clock topic used to map sim time to wall time (default /clock).
    #[cfg_attr(feature = "clap", arg(long))]
    pub clock_topic: Option<String>,
    /// `sampled` or `event`; default: decided from the topics' rates.
    #[cfg_attr(feature = "clap", arg(long))]
    pub response_kind: Option<ResponseKind>,
    /// Delay search window, START..END (e.g. `0..500ms`).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = MatchArgs::default().search))]
    pub search: DurationRange,
    /// Analyse only START..END (relative to the first command), e.g. `2s..20s`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub window: Option<DurationRange>,
    /// Keep still segments (by default warm-up and still segments are trimmed).
    #[cfg_attr(feature = "clap", arg(long))]
    pub keep_still: bool,
    /// Downsample the response keeping the last sample of each bucket, e.g. `10ms`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub bucket: Option<Duration>,
    /// Interpolate sampled responses linearly (the default); off (CLI: --no-interpolate):
    /// pair each command with the nearest response instead.
    #[cfg_attr(
        feature = "clap",
        arg(long = "no-interpolate", action = clap::ArgAction::SetFalse)
    )]
    pub interpolate: bool,
    /// Each response used at most once.
    #[cfg_attr(feature = "clap", arg(long))]
    pub one_to_one: bool,
    /// Maximum pairing distance, e.g. `20ms`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_pair_distance: Option<Duration>,
    /// Joints that wrap around (angles in radians).
    #[cfg_attr(feature = "clap", arg(long, value_delimiter = ',', num_args = 1..))]
    pub continuous: Vec<String>,
    /// Position limits: a JSON file {"joint": [min, max], ...} (Python: the mapping).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub limits: Option<JointLimits>,
    /// Flag commands whose stamp is older than this when recorded, e.g. `200ms`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_command_age: Option<Duration>,
}

impl Default for MatchArgs {
    fn default() -> Self {
        let o = MatchOptions::default();
        let (start, end) = o.search_window_ns;
        MatchArgs {
            command: String::new(),
            response: String::new(),
            command_field: None,
            response_field: None,
            names_field: None,
            align: Align::Stamps,
            clock_topic: None,
            response_kind: o.response_kind,
            search: DurationRange {
                start: Duration::from_ns(start),
                end: Duration::from_ns(end),
            },
            window: None,
            keep_still: !o.trim_still,
            bucket: None,
            interpolate: o.interpolate,
            one_to_one: o.one_to_one,
            max_pair_distance: None,
            continuous: Vec::new(),
            limits: None,
            max_command_age: None,
        }
    }
}

impl MatchArgs {
    /// Refuses parameters that do not apply (a clock topic with relative alignment, keeping
    /// still segments inside a window, which never trims them) and topics not given.
    pub fn validate(&self) -> Result<(), Error> {
        use crate::params::not_applicable as na;
        for (name, topic) in [("command", &self.command), ("response", &self.response)] {
            if topic.is_empty() {
                return Err(Error::invalid(name, "a topic is needed"));
            }
        }
        na(
            self.clock_topic.is_some() && self.align == Align::Relative,
            "clock_topic",
            || "does not apply with `align` relative (no clock is mapped)".into(),
        )?;
        na(
            self.keep_still && self.window.is_some(),
            "keep_still",
            || "does not apply with `window`, which never trims still segments".into(),
        )?;
        Ok(())
    }

    /// The matching analysis' options: these parameters (limits read from their file), every
    /// other threshold at its default.
    pub fn options(&self) -> Result<MatchOptions, Error> {
        Ok(MatchOptions {
            search_window_ns: self.search.ns(),
            window_ns: self.window.map(DurationRange::ns),
            trim_still: !self.keep_still,
            bucket_ns: self.bucket.map(Duration::ns),
            interpolate: self.interpolate,
            one_to_one: self.one_to_one,
            max_pair_distance_ns: self.max_pair_distance.map(Duration::ns),
            continuous_joints: self.continuous.clone(),
            max_command_age_ns: self.max_command_age.map(Duration::ns),
            limits: self
                .limits
                .as_ref()
                .map(JointLimits::resolve)
                .transpose()?
                .unwrap_or_default(),
            response_kind: self.response_kind,
            ..Default::default()
        })
    }
}

/// `bagscope match`: the command → response delay (the CLI's `match --json`; the matching
/// report's keys sit at the top level beside these).
#[derive(Debug, Clone, Serialize)]
pub struct MatchCommandReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// The command topic.
    pub command_topic: String,
    /// The response topic.
    pub response_topic: String,
    /// The clock the command's times are on, as read (before any mapping or alignment):
    /// `wall`, `sim`, or `zero` when every stamp is zero or there are none.
    pub command_axis: String,
    /// The clock the response's times are on, as `command_axis`.
    pub response_axis: String,
    /// Which time was used for each topic, in words (`header.stamp of both topics`, or log
    /// time for a topic whose messages carry no stamp).
    pub time_source: String,
    /// The matching analysis: delay, tracking error before and after correcting for it,
    /// pairs, segments, clock mapping (flattened into the top level in JSON).
    #[serde(flatten)]
    pub report: MatchReport,
    /// Bag damage, messages that did not decode (data loss: left out of the matching),
    /// headerless topics, stamps the `/clock` fit could not map; sorted.
    pub warnings: Vec<Warning>,
}

impl MatchCommandReport {}

/// Each topic's clock as the clocks analysis classifies it (one rule for every command),
/// for the command and response topics (with the sim-time topic, if any, for its map).
/// With `given` (every topic's times as [`crate::clocks::topic_times`] reads them), the topics'
/// times are taken from there instead of a scan of their own.
fn clock_axes(
    bag: &Bag,
    topics: [usize; 2],
    clock: Option<usize>,
    given: Option<&[TopicTimes]>,
) -> (Axis, [TopicAxis; 2]) {
    let mut wanted = vec![false; bag.topics.len()];
    for i in topics.into_iter().chain(clock) {
        wanted[i] = true;
    }
    let scanned;
    let all = match given {
        Some(g) if g.len() == bag.topics.len() => g,
        _ => {
            scanned = crate::clocks::topic_times_of(bag, &wanted).0;
            &scanned[..]
        }
    };
    let times: Vec<&TopicTimes> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| wanted[*i])
        .map(|(_, t)| t)
        .collect();
    let opts = bagscope_clocks::ClocksOptions {
        clock_topic: clock.map(|c| bag.topics[c].name.clone()),
        ..Default::default()
    };
    let r = bagscope_clocks::analyze_refs(&times, &opts);
    let axes = topics.map(|i| match r.topic(&bag.topics[i].name) {
        None => TopicAxis::LogTime,
        Some(t) => match t.axis {
            Axis::None => TopicAxis::LogTime,
            Axis::Zero => TopicAxis::ZeroStamps,
            // Stamps on several clocks: the one most of them are on.
            Axis::Mixed => {
                let c = &t.axis_counts;
                let (_, axis) = [
                    (c.relative, Axis::Relative),
                    (c.sim, Axis::Sim),
                    (c.wall, Axis::Wall),
                ]
                .into_iter()
                .max_by_key(|(n, _)| *n)
                .unwrap_or((0, Axis::Wall));
                TopicAxis::Stamps(axis)
            }
            a => TopicAxis::Stamps(a),
        },
    });
    (r.recorder_axis, axes)
}

/// What a matched topic's times are, by the clocks analysis.
#[derive(Debug, Clone, Copy, PartialEq)]
enum TopicAxis {
    /// Its stamps, on this clock (the majority's, for stamps on several).
    Stamps(Axis),
    /// Every stamp is zero (never filled): its log times are used.
    ZeroStamps,
    /// No stamps (header-less): its log times are used.
    LogTime,
}

impl TopicAxis {
    /// The clock the topic's series is on: its stamps', or the recorder's for log times.
    fn axis(self, recorder: Axis) -> Axis {
        match self {
            TopicAxis::Stamps(a) => a,
            TopicAxis::ZeroStamps | TopicAxis::LogTime => recorder,
        }
    }
}

struct Decoded {
    series: JointSeries,
    stamped: bool,
    errors: usize,
}

/// The message's joint names as a shared list: the same list as the previous message decoded
/// on this thread when equal (nearly always), so a topic holds one copy of its names, not one
/// per message.
fn shared(names: Vec<String>) -> JointNames {
    thread_local! {
        static LAST: std::cell::RefCell<Option<JointNames>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some(l) if l[..] == names[..] => l.clone(),
            _ => {
                let l: JointNames = names.into();
                *last = Some(l.clone());
                l
            }
        }
    })
}

/// Decodes one topic into a joint series: typed fast paths for JointTrajectory and JointState,
/// field paths through the dynamic decoder for anything else.
///
/// Values read through a field path without `names_field` are named `label` (one value) or
/// `label[i]`, `label` being the field path unless the caller gives one. A field path the
/// type does not have is a usage error naming its fields and `values_flag` (or
/// `--names-field`), the option to change.
fn decode_topic(
    bag: &Bag,
    topic: usize,
    values_field: Option<&str>,
    values_flag: &str,
    names_field: Option<&str>,
    label: Option<&str>,
) -> Result<(Decoded, Vec<Warning>), Error> {
    let t = &bag.topics[topic];
    let mut wanted = vec![false; bag.topics.len()];
    wanted[topic] = true;
    let is_traj = t.type_name.ends_with("JointTrajectory") && values_field.is_none();
    let is_state = t.type_name.ends_with("JointState") && values_field.is_none();
    type Row = (i64, Option<i64>, JointNames, Vec<f64>, Vec<(i64, Vec<f64>)>);
    let scan = if is_traj {
        bag.scan(&wanted, |m| -> Result<Row, String> {
            let v: JointTrajectory = decode_typed(m.data).map_err(|e| e.to_string())?;
            let first = v
                .points
                .first()
                .map(|p| p.positions.clone())
                .unwrap_or_default();
            let pts = v
                .points
                .iter()
                .map(|p| (p.time_from_start.to_ns(), p.positions.clone()))
                .collect();
            Ok((
                m.log_time_ns,
                Some(v.header.stamp.to_ns()),
                shared(v.joint_names),
                first,
                pts,
            ))
        })
    } else if is_state {
        bag.scan(&wanted, |m| -> Result<Row, String> {
            let v: JointState = decode_typed(m.data).map_err(|e| e.to_string())?;
            Ok((
                m.log_time_ns,
                Some(v.header.stamp.to_ns()),
                shared(v.name),
                v.position,
                Vec::new(),
            ))
        })
    } else {
        let schema = schema_for_channel(&t.type_name, &t.schema_encoding, &t.schema_data).map_err(
            |source| Error::Schema {
                topic: t.name.clone(),
                source,
            },
        )?;
        let loc = schema.stamp_locator();
        let vf = values_field.unwrap_or("data").to_string();
        let nf = names_field.map(str::to_string);
        // A path the type does not have is refused before reading, naming the type's fields.
        for (p, flag) in
            std::iter::once((&vf, values_flag)).chain(nf.iter().map(|n| (n, "names_field")))
        {
            schema.resolve_path(p).map_err(|e| {
                Error::invalid(
                    flag,
                    format!("{}: {e}; name the field with `{flag}`", t.name),
                )
            })?;
        }
        let label = label.unwrap_or(&vf).to_string();
        bag.scan(&wanted, |m| -> Result<Row, String> {
            let v = decode(&schema, m.data).map_err(|e| e.to_string())?;
            let stamp = match loc.source() {
                StampSource::None => None,
                _ => loc.read_stamp_ns(m.data).map_err(|e| e.to_string())?,
            };
            let values = match v.get_path(&vf) {
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_f64).collect(),
                Some(x) => x
                    .to_f64_vec()
                    .or_else(|| x.as_f64().map(|f| vec![f]))
                    .unwrap_or_default(),
                None => return Err(format!("no field '{vf}'")),
            };
            let names = match &nf {
                Some(p) => match v.get_path(p).and_then(Value::as_array) {
                    Some(a) => a
                        .iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect(),
                    None => return Err(format!("no string array field '{p}'")),
                },
                None if values.len() == 1 && label != vf => vec![label.clone()],
                None => (0..values.len()).map(|i| format!("{label}[{i}]")).collect(),
            };
            Ok((m.log_time_ns, stamp, shared(names), values, Vec::new()))
        })
    };
    let mut warnings = scan.warnings;
    let mut s = JointSeries {
        stamp_ns: Vec::new(),
        log_time_ns: Vec::new(),
        names: Vec::new(),
        values: Vec::new(),
        points: is_traj.then(Vec::new),
    };
    let mut errors = 0usize;
    let mut first_err = None;
    let mut stamped = true;
    for it in scan.items {
        match it.value {
            Ok((log, stamp, names, values, pts)) => {
                stamped &= stamp.is_some();
                s.stamp_ns.push(stamp.unwrap_or(log));
                s.log_time_ns.push(log);
                s.names.push(names);
                s.values.push(values);
                if let Some(p) = &mut s.points {
                    p.push(pts);
                }
            }
            Err(e) => {
                errors += 1;
                first_err.get_or_insert(e);
            }
        }
    }
    if errors > 0 {
        warnings.push(
            Warning::new(
                WarningCode::DecodeError,
                format!(
                    "{errors} message(s) could not be decoded and were left out (first: {})",
                    first_err.unwrap_or_default()
                ),
            )
            .topic(&t.name)
            .loss(),
        );
    }
    if !stamped {
        warnings.push(
            Warning::new(
                WarningCode::Headerless,
                "no header stamp: log time is used as this topic's time",
            )
            .topic(&t.name),
        );
    }
    Ok((
        Decoded {
            series: s,
            stamped,
            errors,
        },
        warnings,
    ))
}

/// Reads the `/clock` topic's (log time, clock value) pairs.
fn clock_series(bag: &Bag, topic: usize) -> (Vec<i64>, Vec<i64>) {
    let (series, _) = crate::series::scan_series(bag, &{
        let mut w = vec![false; bag.topics.len()];
        w[topic] = true;
        w
    });
    let s = &series[topic];
    (s.log_time_ns.clone(), s.stamp_ns.clone())
}

fn find_clock(bag: &Bag, name: Option<&str>) -> Option<usize> {
    match name {
        Some(n) => bag.topic_index(n).ok(),
        None => bag
            .topics
            .iter()
            .position(|t| t.name == "/clock" && t.type_name.contains("Clock")),
    }
}

struct Prepared {
    cmd: JointSeries,
    resp: JointSeries,
    cmd_axis: Axis,
    resp_axis: Axis,
    mapping: Option<ClockMappingNote>,
    time_source: String,
    warnings: Vec<Warning>,
}

fn prepare(bag: &Bag, a: &MatchArgs, times: Option<&[TopicTimes]>) -> Result<Prepared, Error> {
    let ci = bag.topic_index(&a.command)?;
    let ri = bag.topic_index(&a.response)?;
    // Two topics read through field paths with no names field: their values pair by position,
    // whatever the fields are called (`data` against `angular_velocity.z`), under one label.
    let typed = |ti: usize, field: Option<&str>| {
        let t = &bag.topics[ti].type_name;
        field.is_none() && (t.ends_with("JointTrajectory") || t.ends_with("JointState"))
    };
    let label = (a.names_field.is_none()
        && !typed(ci, a.command_field.as_deref())
        && !typed(ri, a.response_field.as_deref()))
    .then(|| {
        format!(
            "{} -> {}",
            a.command_field.as_deref().unwrap_or("data"),
            a.response_field.as_deref().unwrap_or("data")
        )
    });
    let (cmd, mut warnings) = decode_topic(
        bag,
        ci,
        a.command_field.as_deref(),
        "command_field",
        a.names_field.as_deref(),
        label.as_deref(),
    )?;
    let (resp, w2) = decode_topic(
        bag,
        ri,
        a.response_field.as_deref(),
        "response_field",
        a.names_field.as_deref(),
        label.as_deref(),
    )?;
    warnings.extend(w2);
    warnings.extend(bag.open_warnings());
    let _ = (cmd.errors, resp.errors);
    // A topic none of whose messages could be read through its field path has no series:
    // say which field, rather than anything about its clock.
    for (d, topic, field, flag) in [
        (&cmd, &a.command, &a.command_field, "command_field"),
        (&resp, &a.response, &a.response_field, "response_field"),
    ] {
        if d.series.stamp_ns.is_empty() && d.errors > 0 {
            let first = warnings
                .iter()
                .find(|w| w.code == WarningCode::DecodeError && w.topic.as_deref() == Some(topic))
                .map(|w| w.message.clone())
                .unwrap_or_default();
            return Err(Error::invalid(
                flag,
                format!(
                    "no message of {topic} ({}) could be read as '{}': {first}; name a numeric field with `{flag}`",
                    bag.topics[if topic == &a.command { ci } else { ri }].type_name,
                    field.as_deref().unwrap_or("data"),
                ),
            ));
        }
    }
    let (recorder_axis, [cmd_time, resp_time]) = clock_axes(
        bag,
        [ci, ri],
        find_clock(bag, a.clock_topic.as_deref()),
        times,
    );
    let (cmd_stamped, resp_stamped) = (cmd.stamped, resp.stamped);
    let mut cmd = cmd.series;
    let mut resp = resp.series;
    for (time, s, topic) in [
        (cmd_time, &mut cmd, &a.command),
        (resp_time, &mut resp, &a.response),
    ] {
        if time == TopicAxis::ZeroStamps {
            s.stamp_ns.clone_from(&s.log_time_ns);
            warnings.push(
                Warning::new(
                    WarningCode::StampZero,
                    "every header stamp is zero (never filled): log time is used as this topic's time",
                )
                .topic(topic.as_str()),
            );
        }
    }
    let from = |stamped: bool, time: TopicAxis| match (stamped, time) {
        (false, _) => "log time (no header)",
        (true, TopicAxis::ZeroStamps) => "log time (stamps all zero)",
        (true, _) => "header.stamp",
    };
    let time_source = match (cmd_stamped, resp_stamped, cmd_time, resp_time) {
        (true, true, TopicAxis::Stamps(_), TopicAxis::Stamps(_)) => {
            "header.stamp of both topics".to_string()
        }
        (false, false, _, _) => "log time of both topics (no header stamps)".to_string(),
        _ => format!(
            "command {}; response {}",
            from(cmd_stamped, cmd_time),
            from(resp_stamped, resp_time)
        ),
    };
    let cmd_axis = cmd_time.axis(recorder_axis);
    let resp_axis = resp_time.axis(recorder_axis);
    let mut mapping = None;
    if a.align == Align::Relative {
        for s in [&mut cmd, &mut resp] {
            if let Some(&t0) = s.stamp_ns.first() {
                s.stamp_ns.iter_mut().for_each(|x| *x -= t0);
            }
        }
        mapping = Some(ClockMappingNote {
            from_axis: cmd_axis.name().to_string(),
            to_axis: "relative".into(),
            via: "--align relative".into(),
            note: "each stream's first message placed at 0; the delay includes any start offset between the streams".into(),
        });
    } else if cmd_axis != resp_axis {
        if let Some((name, axis)) = [(&a.command, cmd_axis), (&a.response, resp_axis)]
            .into_iter()
            .find(|(_, ax)| !matches!(ax, Axis::Wall | Axis::Sim))
        {
            return Err(Error::no_data(format!(
                "command {} is on {} time and response {} on {} time: {name} is stamped on a clock of its own ({}: no /clock maps it); re-run with `align` relative (each stream's first message at 0)",
                a.command,
                cmd_axis.name(),
                a.response,
                resp_axis.name(),
                axis.name()
            )));
        }
        let Some(clock) = find_clock(bag, a.clock_topic.as_deref()) else {
            return Err(Error::no_data(format!(
                "command {} is on {} time and response {} on {} time, and the bag has no /clock to map between them; re-run with `align` relative (each stream's first message at 0), or record /clock (or run both sides with the same use_sim_time)",
                a.command,
                cmd_axis.name(),
                a.response,
                resp_axis.name()
            )));
        };
        let (log, sim) = clock_series(bag, clock);
        let map = ClockMap::from_series(&log, &sim, Axis::Wall).ok_or_else(|| {
            Error::no_data(format!(
                "{} has too few messages to map sim time to wall time",
                bag.topics[clock].name
            ))
        })?;
        // Map the sim-stamped side onto wall time (the recorder's log-time axis).
        let (side, name) = if cmd_axis == Axis::Wall {
            (&mut resp, &a.response)
        } else {
            (&mut cmd, &a.command)
        };
        let mut unmapped = 0usize;
        for (s, &log) in side.stamp_ns.iter_mut().zip(&side.log_time_ns) {
            match map.sim_to_log_ns(*s, Some(log)) {
                Some(w) => *s = w,
                None => unmapped += 1,
            }
        }
        if unmapped > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::ClockUnmapped,
                    format!(
                        "{unmapped} stamp(s) fall outside the /clock fit and were left unmapped"
                    ),
                )
                .topic(name.as_str()),
            );
        }
        mapping = Some(ClockMappingNote {
            from_axis: "sim".into(),
            to_axis: "wall".into(),
            via: bag.topics[clock].name.clone(),
            note: format!(
                "{} is stamped on sim time and {} on wall time: sim stamps were mapped to wall time through a fit of {} against log time",
                if cmd_axis == Axis::Wall { &a.response } else { &a.command },
                if cmd_axis == Axis::Wall { &a.command } else { &a.response },
                bag.topics[clock].name
            ),
        });
    }
    Ok(Prepared {
        cmd,
        resp,
        cmd_axis,
        resp_axis,
        mapping,
        time_source,
        warnings,
    })
}

/// `bagscope match` of the bag at `path`. Errors when a topic is missing or cannot be decoded,
/// when the streams are on different clocks with no `/clock` to map them, or when matching
/// finds nothing to measure.
pub fn match_bag(path: &Path, a: &MatchArgs) -> Result<MatchCommandReport, Error> {
    match_bag_series(path, a).map(|(r, _, _)| r)
}

/// `match_bag` plus the command and response series as matched (one clock axis), for plots.
pub fn match_bag_series(
    path: &Path,
    a: &MatchArgs,
) -> Result<(MatchCommandReport, JointSeries, JointSeries), Error> {
    match_bag_series_of(&Bag::open(path)?, a)
}

/// [`match_bag_series_of`] with the bag's topics' times already read (`times[i]` for topic `i`,
/// as [`crate::clocks::topic_times`] reads them; only the two topics' and the sim-time topic's
/// are looked at): the topics' clocks are classified from those, not from a scan of their own.
pub fn match_bag_series_with_times(
    bag: &Bag,
    a: &MatchArgs,
    times: &[TopicTimes],
) -> Result<(MatchCommandReport, JointSeries, JointSeries), Error> {
    match_series_given(bag, a, Some(times))
}

/// [`match_bag_series`] of an open bag.
pub fn match_bag_series_of(
    bag: &Bag,
    a: &MatchArgs,
) -> Result<(MatchCommandReport, JointSeries, JointSeries), Error> {
    match_series_given(bag, a, None)
}

fn match_series_given(
    bag: &Bag,
    a: &MatchArgs,
    times: Option<&[TopicTimes]>,
) -> Result<(MatchCommandReport, JointSeries, JointSeries), Error> {
    a.validate()?;
    let opts = a.options()?;
    let path = bag.path.as_path();
    let p = prepare(bag, a, times)?;
    let mut report = match_series(&p.cmd, &p.resp, &opts).map_err(|source| Error::Match {
        bag: path.to_path_buf(),
        source,
    })?;
    report.clock_mapping = p.mapping;
    let mut warnings = p.warnings;
    warnings.sort();
    warnings.dedup();
    let r = MatchCommandReport {
        bag: path.display().to_string(),
        command_topic: a.command.clone(),
        response_topic: a.response.clone(),
        command_axis: p.cmd_axis.name().to_string(),
        response_axis: p.resp_axis.name().to_string(),
        time_source: p.time_source,
        report,
        warnings,
    };
    Ok((r, p.cmd, p.resp))
}

/// `bagscope compare`: the same command/response pair compared across runs (the CLI's
/// `compare --json`; the comparison's keys sit at the top level beside these).
#[derive(Debug, Clone, Serialize)]
pub struct CompareCommandReport {
    /// The runs' bag paths, in the order given (the report's `runs` are their summaries).
    pub bags: Vec<String>,
    /// The comparison: each run's summary and where its commands and responses differ from
    /// the reference run's (flattened into the top level in JSON).
    #[serde(flatten)]
    pub report: CompareReport,
    /// Each run's warnings (bag damage, decode errors, headerless topics), by its bag path.
    pub warnings: BTreeMap<String, Vec<Warning>>,
}

/// Sim-vs-real: the same commands replayed in each run; each run aligned to its first command.
pub fn compare(paths: &[&Path], a: &MatchArgs) -> Result<CompareCommandReport, Error> {
    compare_series(paths, a).map(|(r, _)| r)
}

/// Each run's (name, command, response) series as compared, for plots.
pub type RunSeries = Vec<(String, JointSeries, JointSeries)>;

/// `compare` plus each run's series.
pub fn compare_series(
    paths: &[&Path],
    a: &MatchArgs,
) -> Result<(CompareCommandReport, RunSeries), Error> {
    a.validate()?;
    let opts = a.options()?;
    let mut runs = Vec::new();
    let mut warnings = BTreeMap::new();
    for p in paths {
        let bag = Bag::open(p)?;
        let prep = prepare(&bag, a, None)?;
        let name = p.display().to_string();
        warnings.insert(name.clone(), prep.warnings);
        runs.push((name, prep.cmd, prep.resp));
    }
    let report = compare_runs(&runs, &opts);
    let r = CompareCommandReport {
        bags: paths.iter().map(|p| p.display().to_string()).collect(),
        report,
        warnings,
    };
    Ok((r, runs))
}
