//! `bagscope check`: message contract checks over every topic of a known type.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Columns, Warning};
use bagscope_checks::{
    check_camera_info, check_clouds, check_images, check_joint_ages, check_joint_message,
    check_stamps, sort_findings, At, CameraInfoMeta, CloudMeta, Finding, ImageMeta,
    JointCheckOptions, JointMeta,
};
use bagscope_clocks::TopicTimes;
use bagscope_msg::types::{
    CameraInfo, Image, JointState, JointStateView, JointTrajectory, NameRun, PointCloud2,
};
use bagscope_msg::{decode_typed, StampSource};

use crate::findings::{check_hits, summarise, VerdictSummary};
use crate::params::{Duration, JointLimits};
use crate::series::{
    locators, series_of_columns, stamp_values, topic_schemas, NO_STAMP_READ, UNREADABLE,
};
use crate::Error;

/// What `check` checks beyond the fixed contracts (`Default`: no joint limits, no age limit).
/// The fields are the parameters' names (Python's keywords, the CLI's flags).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct CheckOptions {
    /// Joint position limits: a JSON file {"joint": [min, max], ...} (Python: the mapping).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub limits: Option<JointLimits>,
    /// Flag commands whose stamp is older than this when recorded, e.g. `200ms`.
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_command_age: Option<Duration>,
    /// Stamps earlier than the bag start by more than this many nanoseconds are flagged; 0
    /// (the default) or less means 10 s. Not a parameter of the CLI or Python.
    #[cfg_attr(feature = "clap", arg(skip))]
    #[serde(skip)]
    pub before_start_ns: i64,
}

/// [`CheckOptions`] resolved: the joint checks' options (limits read from their file).
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckConfig {
    joints: JointCheckOptions,
    before_start_ns: i64,
}

impl CheckOptions {
    fn config(&self) -> Result<CheckConfig, Error> {
        Ok(CheckConfig {
            joints: JointCheckOptions {
                limits: self
                    .limits
                    .as_ref()
                    .map(JointLimits::resolve)
                    .transpose()?
                    .unwrap_or_default(),
                max_command_age_ns: self.max_command_age.map(Duration::ns),
                ..Default::default()
            },
            before_start_ns: self.before_start_ns,
        })
    }
}

/// The finding codes `fail_on` may name ([`bagscope_checks::FINDING_CODES`]): another is an
/// [`Error::InvalidParameter`] naming the codes.
pub fn validate_fail_on(codes: &[String]) -> Result<(), Error> {
    let known = bagscope_checks::FINDING_CODES;
    match codes.iter().find(|c| !known.contains(&c.as_str())) {
        Some(bad) => Err(Error::invalid(
            "fail_on",
            format!(
                "no check gives the code {bad} (the codes: {})",
                known.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

impl CheckReport {
    /// Whether a finding fails the check: one of `fail_on`'s codes, or (none given) any
    /// error-level finding. The CLI exits 3 on it.
    pub fn failing(&self, fail_on: &[String]) -> bool {
        self.findings.iter().any(|f| {
            if fail_on.is_empty() {
                f.severity == bagscope_checks::Severity::Error
            } else {
                fail_on.contains(&f.code)
            }
        })
    }
}

/// `bagscope check`: message contract findings (the CLI's `check --json`).
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The path the bag was opened from.
    pub bag: String,
    /// Topics checked and how: topic → `type: checks applied`.
    pub checked: BTreeMap<String, String>,
    /// Every per-message finding, sorted by topic, message index, code.
    pub findings: Vec<Finding>,
    /// Findings per code.
    pub counts: BTreeMap<String, usize>,
    /// Bag damage, topics without a usable definition, messages that did not decode, loss the
    /// recorder logged; sorted.
    pub warnings: Vec<Warning>,
    /// The first screen: data loss, split axes, and every finding by code (contract checks,
    /// the clocks analysis of the same stamps, bag damage), worst first: the same codes for the
    /// same topics as `clocks`.
    pub verdicts: VerdictSummary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Image,
    CameraInfo,
    JointState,
    JointTrajectory,
    Cloud,
    Other,
}

fn kind_of(type_name: &str) -> Kind {
    match type_name.replace("/msg/", "/").as_str() {
        "sensor_msgs/Image" => Kind::Image,
        "sensor_msgs/CameraInfo" => Kind::CameraInfo,
        "sensor_msgs/JointState" => Kind::JointState,
        "trajectory_msgs/JointTrajectory" => Kind::JointTrajectory,
        "sensor_msgs/PointCloud2" => Kind::Cloud,
        _ => Kind::Other,
    }
}

/// What `check` keeps of the few messages that need more than their times.
enum Extra {
    Image(ImageMeta),
    Info(CameraInfoMeta),
    Cloud(CloudMeta),
    /// Findings of a joint message's own checks (their index is set once it is known).
    Findings(Vec<Finding>),
    Undecodable(String),
}

/// A joint message's own findings, kept instead of the message (none: nothing kept).
fn joint_findings(topic: &str, m: JointMeta, opts: &JointCheckOptions) -> Option<Extra> {
    let f = check_joint_message(topic, &m, opts);
    (!f.is_empty()).then_some(Extra::Findings(f))
}

/// True when a JointState read in place has nothing [`check_joint_message`] would report:
/// unique names, each value array empty or one value a name, finite values, positions inside
/// the limits. Such a message needs no decode.
fn joint_view_clean(v: &JointStateView<'_>, o: &JointCheckOptions) -> bool {
    joint_names_clean(&v.names) && joint_values_clean(v, v.names.len(), o)
}

/// True when the names are unique (at most 64 of them).
fn joint_names_clean(names: &[&str]) -> bool {
    let n = names.len();
    // Names are compared pairwise: joint lists are short; long ones take the full path.
    n <= 64 && (1..n).all(|i| !names[..i].contains(&names[i]))
}

/// The rest of [`joint_view_clean`], for `n` names already found clean.
fn joint_values_clean(v: &JointStateView<'_>, n: usize, o: &JointCheckOptions) -> bool {
    for a in [v.position, v.velocity, v.effort] {
        if (!a.is_empty() && a.len() != n) || !a.all_finite() {
            return false;
        }
    }
    o.limits.is_empty()
        || v.names.iter().zip(v.position.iter()).all(|(name, x)| {
            o.limits
                .get(*name)
                .is_none_or(|&(lo, hi)| !(x < lo || x > hi))
        })
}

thread_local! {
    /// Per topic index, the name run of the last JointState read on this thread whose names
    /// were valid and unique. A run is only ever compared byte for byte, so an entry left by
    /// another bag is harmless.
    static CLEAN_NAMES: std::cell::RefCell<Vec<(usize, bool, Vec<u8>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`joint_view_clean`] of the JointState in `payload` on topic `topic` (false when it does not
/// read). Without joint limits the names are not looked at again when their bytes equal those
/// of the topic's last message with clean names: most topics send the same names every time.
fn joint_payload_clean(topic: usize, payload: &[u8], o: &JointCheckOptions) -> bool {
    if !o.limits.is_empty() {
        return JointStateView::read(payload).is_some_and(|v| joint_view_clean(&v, o));
    }
    CLEAN_NAMES.with_borrow_mut(|known| {
        if known.len() <= topic {
            known.resize(topic + 1, (0, true, Vec::new()));
        }
        let (phase, le, bytes) = &known[topic];
        let run = (!bytes.is_empty()).then_some(NameRun {
            phase: *phase,
            le: *le,
            bytes,
        });
        let Some(r) = JointStateView::read_unless_names(payload, run) else {
            return false;
        };
        if !r.names_reused {
            if !joint_names_clean(&r.view.names) {
                return false;
            }
            known[topic] = (r.names.phase, r.names.le, r.names.bytes.to_vec());
        }
        joint_values_clean(&r.view, r.name_count, o)
    })
}

/// The image topic a CameraInfo topic describes: the one in the same namespace
/// (`/camera/camera_info` ↔ `/camera/image_raw`), preferring `image_raw`.
fn paired_image(info_topic: &str, image_topics: &[&str]) -> Option<usize> {
    let ns = info_topic.rsplit_once('/').map(|(a, _)| a).unwrap_or("");
    let mut best: Option<(usize, usize)> = None;
    for (i, t) in image_topics.iter().enumerate() {
        let tns = t.rsplit_once('/').map(|(a, _)| a).unwrap_or("");
        if tns == ns {
            let score = if t.ends_with("image_raw") { 0 } else { 1 };
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, i));
            }
        }
    }
    best.map(|(_, i)| i)
}

/// `bagscope check` of the bag at `path`: the contract checks of every topic of a known type
/// (Image, CameraInfo, JointState, JointTrajectory, PointCloud2) and stamp checks of every
/// stamped topic.
pub fn check(path: &Path, o: &CheckOptions) -> Result<CheckReport, Error> {
    check_of(&Bag::open(path)?, o)
}

/// [`check`] of an open bag.
pub fn check_of(bag: &Bag, o: &CheckOptions) -> Result<CheckReport, Error> {
    let o = &o.config()?;
    let (part, mut times, _, tf) = scan_both(bag, o, true);
    // TF edges whose stamps went back are clock findings too (as `clocks` reports them); the
    // rest of the TF timing is not check's.
    let jump = bagscope_clocks::JumpRule::default();
    let tf = match tf {
        Some(collected) => Some(collected.timing(None, &jump)),
        None => crate::tf::tf_timing_with(bag, None, &jump)?,
    };
    let tf_jumps = tf
        .map(|t| crate::clocks::tf_jump_warnings(&t.warnings))
        .unwrap_or_default();
    Ok(part.finish(bag, &mut times, &tf_jumps))
}

/// `clocks` and `check` of an open bag from one scan (what `report` shows): every message is
/// read once, for its stamp and for the fields its contract checks read. The same reports as
/// [`crate::clocks::clocks_data_of`] and [`check_of`].
pub fn clocks_and_check_of(
    bag: &Bag,
    clocks_opts: &bagscope_clocks::ClocksOptions,
    o: &CheckOptions,
) -> Result<(crate::clocks::ClocksData, CheckReport), Error> {
    let o = &o.config()?;
    if let Some(c) = &clocks_opts.clock_topic {
        bag.topic_index(c)?;
    }
    let (part, times, warnings, tf) = scan_both(bag, o, true);
    if *clocks_opts == bagscope_clocks::ClocksOptions::default() {
        if let Some(keep) = part.analysis_within_clocks(&times) {
            // Check's clock analysis is of some of clocks' topics with the same rows: made from
            // clocks' per-topic analyses.
            let (clocks, verdict) = crate::clocks::clocks_data_and_subset(
                bag,
                clocks_opts,
                times,
                warnings,
                tf,
                Some(&keep),
            )?;
            let v = verdict.expect("asked for");
            return Ok((clocks, part.report(&v.warnings, v.split)));
        }
    }
    let mut clocks = crate::clocks::clocks_data_from(bag, clocks_opts, times, warnings, tf)?;
    let tf_topics = crate::tf::tf_topic_names(bag);
    let tf_jumps: Vec<Warning> = crate::clocks::tf_jump_warnings(&clocks.report.warnings)
        .into_iter()
        .filter(|w| w.topic.as_ref().is_some_and(|t| tf_topics.contains(t)))
        .collect();
    let check = part.finish(bag, &mut clocks.times, &tf_jumps);
    Ok((clocks, check))
}

/// What the scan keeps of each message for `check` beside its times: the row's extra, an index
/// into the scan's list of [`Extra`]s, or one of these.
const NO_EXTRA: i64 = -1;
/// A message that did not decode (its finding is made; it has no place in the stamp checks).
const UNDECODED_ROW: i64 = -2;
/// A message whose extra has been taken into the check's lists.
const TAKEN_EXTRA: i64 = -3;

/// A message whose stamp could not be read is lost to check's stamp checks as it is to
/// `clocks` (one warning, as clocks words it), unless check already reports the topic's
/// messages that did not decode.
fn add_unreadable_stamps(warnings: &mut Vec<Warning>, clock_warnings: &[Warning]) {
    for w in clock_warnings {
        if w.code == WarningCode::StampUnreadable
            && !warnings
                .iter()
                .any(|c| c.code == WarningCode::DecodeError && c.topic == w.topic)
        {
            warnings.push(w.clone());
        }
    }
    warnings.sort();
    warnings.dedup();
}

/// One scan of every topic: each message's publish time, stamp (as `clocks` reads them) and
/// what its contract checks need. Returns `check`'s results up to its clock analysis, every
/// topic's times as `clocks` takes them, the warnings `clocks` reports with them, and (with
/// `with_tf`) the TF messages for `clocks`' TF timing.
fn scan_both(
    bag: &Bag,
    o: &CheckConfig,
    with_tf: bool,
) -> (
    CheckPart,
    Vec<TopicTimes>,
    Vec<Warning>,
    Option<crate::tf::TfCollected>,
) {
    let kinds: Vec<Kind> = bag.topics.iter().map(|t| kind_of(&t.type_name)).collect();
    let schemas = topic_schemas(bag);
    let locs = locators(&schemas);
    let mut joint_opts = o.joints.clone();
    // Age checks need the topic's first message: they run after the scan.
    joint_opts.stamps_on_log_axis = false;
    let invalid: Vec<AtomicUsize> = bag.topics.iter().map(|_| AtomicUsize::new(0)).collect();
    let ctx = ProbeContext {
        bag,
        kinds: &kinds,
        joint_opts: &joint_opts,
    };
    // Few messages keep more than their times (findings, image and cloud metadata): they go
    // to one shared list, and the row keeps its index there.
    let extras: Mutex<Vec<Option<Extra>>> = Mutex::new(Vec::new());
    let wanted = bag.all_topics();
    let tf = if with_tf {
        crate::tf::TfCollector::new(bag, &locs, &wanted)
    } else {
        None
    };
    let (mut cols, scan_warnings) = bag.scan_columns(&wanted, |m| {
        let [publish, stamp] = stamp_values(&locs[m.topic], m, &invalid[m.topic]);
        let read = (stamp != NO_STAMP_READ && stamp != UNREADABLE).then_some(stamp);
        let extra = match probe(&ctx, m, read) {
            None => NO_EXTRA,
            Some(e) => {
                let mut v = extras.lock().unwrap_or_else(|p| p.into_inner());
                v.push(Some(e));
                (v.len() - 1) as i64
            }
        };
        // A TF topic has no stamp: its stamp column holds where its transforms are.
        let stamp = tf.as_ref().and_then(|t| t.read(m)).unwrap_or(stamp);
        [publish, stamp, extra]
    });
    let tf = tf.and_then(|t| t.finish(bag, &mut cols, 1));
    let mut extras = extras.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut warnings = bag.open_warnings();
    warnings.extend(scan_warnings.iter().cloned());

    let n = bag.topics.len();
    let Collected {
        images,
        infos,
        clouds,
        undecodable,
        mut findings,
    } = collect(bag, &mut cols, &mut extras);
    drop(extras);
    let bag_start = first_checked_log_time(&cols, &kinds).unwrap_or(0);
    let image_topics: Vec<usize> = (0..n).filter(|&i| kinds[i] == Kind::Image).collect();
    let image_names: Vec<&str> = image_topics
        .iter()
        .map(|&i| bag.topics[i].name.as_str())
        .collect();
    let mut checked = BTreeMap::new();
    let mut times_plan = Vec::new();
    for ti in 0..n {
        let name = &bag.topics[ti].name;
        let count = cols[ti].len();
        if count > 0 {
            if let Err(e) = &schemas[ti] {
                // Without a usable definition nothing in the topic could be checked: a
                // limitation of what the bag describes, not lost data (every message was read).
                warnings.push(
                    Warning::new(
                        WarningCode::UndecodableTopic,
                        format!("{count} message(s) read but not checked: {e}"),
                    )
                    .topic(name),
                );
            }
        }
        // Every checked message's times, in log-time order; whether they are exactly the rows
        // `clocks` keeps of the topic.
        let (stamps, same_rows) = at_list(&cols[ti], kinds[ti]);
        let what = match kinds[ti] {
            Kind::Image => {
                findings.extend(check_images(name, &images[ti]));
                "image geometry and encoding"
            }
            Kind::CameraInfo => {
                let img = paired_image(name, &image_names).map(|k| image_topics[k]);
                let (itopic, ims) = match img {
                    Some(i) => (Some(bag.topics[i].name.as_str()), images[i].as_slice()),
                    None => (None, &[][..]),
                };
                findings.extend(check_camera_info(name, &infos[ti], itopic, ims));
                "calibration, distortion, frame and size against its image topic"
            }
            Kind::JointState | Kind::JointTrajectory => {
                let mut jo = o.joints.clone();
                // Age checks only make sense when stamps are on the recorder's axis. Every
                // decoded joint message has its times in `stamps`, in log-time order.
                jo.stamps_on_log_axis = stamps.first().is_some_and(|a| {
                    a.log_time_ns.saturating_sub(a.stamp_ns).saturating_abs() < 3_600_000_000_000
                });
                if kinds[ti] == Kind::JointState {
                    jo.max_command_age_ns = None;
                }
                findings.extend(check_joint_ages(name, &stamps, &jo));
                "names vs values, duplicates, finiteness, limits, command age"
            }
            Kind::Cloud => {
                findings.extend(check_clouds(name, &clouds[ti]));
                "row_step, point_step, fields vs data"
            }
            Kind::Other => {
                if stamps.is_empty() {
                    if bagscope_clocks::is_replay_event_topic(name) {
                        // Declared, it is the clock analysis' evidence of a replay (as in
                        // `clocks`): analysed with its rows as `clocks` has them.
                        times_plan.push(CheckTimes::SameAsClocks(ti));
                    }
                    continue;
                }
                "stamps"
            }
        };
        if locs[ti].source() != StampSource::None && locs[ti].source() != StampSource::ClockField {
            let same_axis = stamps
                .iter()
                .find(|a| a.stamp_ns != 0)
                .is_some_and(|a| (a.log_time_ns - a.stamp_ns).abs() < 3_600_000_000_000);
            let before = if o.before_start_ns > 0 {
                o.before_start_ns
            } else {
                10_000_000_000
            };
            findings.extend(check_stamps(name, &stamps, bag_start, before, same_axis));
        }
        if undecodable[ti].0 > 0 {
            warnings.push(
                Warning::new(
                    WarningCode::DecodeError,
                    format!(
                        "{} message(s) could not be decoded: {}",
                        undecodable[ti].0, undecodable[ti].1
                    ),
                )
                .topic(name),
            );
        }
        checked.insert(
            name.clone(),
            format!("{}: {what}", bag.topics[ti].type_name),
        );
        if locs[ti].source() != StampSource::None && !stamps.is_empty() {
            times_plan.push(if same_rows {
                CheckTimes::SameAsClocks(ti)
            } else {
                CheckTimes::Own(TopicTimes {
                    topic: name.clone(),
                    type_name: bag.topics[ti].type_name.clone(),
                    source: locs[ti].source(),
                    log_time_ns: stamps.iter().map(|a| a.log_time_ns).collect(),
                    publish_time_ns: Vec::new(),
                    stamp_ns: stamps.iter().map(|a| a.stamp_ns).collect(),
                    invalid_stamps: invalid[ti].load(Ordering::Relaxed),
                })
            });
        }
    }
    sort_findings(&mut findings);
    let mut counts = BTreeMap::new();
    for f in &findings {
        *counts.entry(f.code.clone()).or_insert(0) += 1;
    }
    warnings.extend(crate::recorder_events::lost_messages(bag));
    warnings.sort();
    warnings.dedup();

    // The columns become the clocks series in place (the row index is no longer needed).
    let columns: Vec<Columns<2>> = cols
        .into_iter()
        .map(|c| {
            let [publish, stamp, _] = c.values;
            Columns {
                log_time_ns: c.log_time_ns,
                values: [publish, stamp],
            }
        })
        .collect();
    let (series, clock_warnings) = series_of_columns(
        bag,
        &wanted,
        &schemas,
        &locs,
        columns,
        &invalid,
        scan_warnings,
    );
    add_unreadable_stamps(&mut warnings, &clock_warnings);
    let part = CheckPart {
        bag: bag.path.display().to_string(),
        checked,
        findings,
        counts,
        warnings,
        times_plan,
    };
    (
        part,
        crate::clocks::times_of_series(series),
        clock_warnings,
        tf,
    )
}

/// A stamped topic's times as `check`'s clock analysis takes them: the rows `clocks` keeps
/// (lent by its times while the analysis runs), or rows of the topic's own (a message that
/// did not decode, or one without a readable stamp that a contract check still counts).
enum CheckTimes {
    SameAsClocks(usize),
    Own(TopicTimes),
}

/// `check`'s results before its clock analysis.
struct CheckPart {
    bag: String,
    checked: BTreeMap<String, String>,
    findings: Vec<Finding>,
    counts: BTreeMap<String, usize>,
    warnings: Vec<Warning>,
    times_plan: Vec<CheckTimes>,
}

impl CheckPart {
    /// Which of `clocks_times` check's clock analysis (default options) takes, when it takes
    /// some of them exactly (apart from publish times): each of its topics is one of
    /// `clocks_times`, in order, with the same rows. Publish times only feed the publish-lag
    /// summaries, never a warning or `split` (their length always matches the log times',
    /// checked here too), so the warnings and `split` of the analysis of those topics with
    /// default options are those check's gives. None when check has rows of its own.
    fn analysis_within_clocks(&self, clocks_times: &[TopicTimes]) -> Option<Vec<bool>> {
        let mut keep = vec![false; clocks_times.len()];
        let mut last = None;
        for p in &self.times_plan {
            let CheckTimes::SameAsClocks(ti) = *p else {
                return None;
            };
            if ti >= keep.len() || last.is_some_and(|l| l >= ti) {
                return None;
            }
            keep[ti] = true;
            last = Some(ti);
        }
        clocks_times
            .iter()
            .all(|t| t.publish_time_ns.is_empty() || t.publish_time_ns.len() == t.log_time_ns.len())
            .then_some(keep)
    }

    /// The clock findings of the same stamps, so that `check` and `clocks` name the same codes
    /// for the same topics (frozen, zero, invalid stamps, offsets, a replay, split axes).
    /// `clocks_times` (every topic's times as `clocks` takes them) are lent to the analysis and
    /// given back unchanged.
    /// `tf_jumps`: the TF edges' `clock_jump_back` warnings, which are not in the analysis.
    fn finish(
        mut self,
        bag: &Bag,
        clocks_times: &mut [TopicTimes],
        tf_jumps: &[Warning],
    ) -> CheckReport {
        let plan = std::mem::take(&mut self.times_plan);
        let lent: Vec<Option<usize>> = plan
            .iter()
            .map(|p| match p {
                CheckTimes::Own(_) => None,
                CheckTimes::SameAsClocks(ti) => Some(*ti),
            })
            .collect();
        let times: Vec<TopicTimes> = plan
            .into_iter()
            .map(|p| match p {
                CheckTimes::Own(t) => t,
                CheckTimes::SameAsClocks(ti) => {
                    let c = &mut clocks_times[ti];
                    TopicTimes {
                        topic: bag.topics[ti].name.clone(),
                        type_name: bag.topics[ti].type_name.clone(),
                        source: c.source,
                        log_time_ns: std::mem::take(&mut c.log_time_ns),
                        publish_time_ns: Vec::new(),
                        stamp_ns: std::mem::take(&mut c.stamp_ns),
                        invalid_stamps: c.invalid_stamps,
                    }
                }
            })
            .collect();
        let clock = bagscope_clocks::analyze(&times, &bagscope_clocks::ClocksOptions::default());
        for (t, ti) in times.into_iter().zip(lent) {
            if let Some(ti) = ti {
                clocks_times[ti].log_time_ns = t.log_time_ns;
                clocks_times[ti].stamp_ns = t.stamp_ns;
            }
        }
        let mut clock_warnings = clock.warnings;
        clock_warnings.extend(tf_jumps.iter().cloned());
        self.report(&clock_warnings, clock.split)
    }

    /// The report, given the warnings and split of the clock analysis of the same stamps.
    fn report(self, clock_warnings: &[Warning], split: bool) -> CheckReport {
        let mut all = self.warnings.clone();
        all.extend(clock_warnings.iter().cloned());
        let verdicts = summarise(&all, &check_hits(&self.findings), split);
        CheckReport {
            bag: self.bag,
            checked: self.checked,
            findings: self.findings,
            counts: self.counts,
            warnings: self.warnings,
            verdicts,
        }
    }
}

/// The times of the topic's messages the contract and stamp checks look at, in log-time order
/// (a message that did not decode is left out; one without a stamp is in with stamp 0 when its
/// type has contract checks), and whether they are exactly the rows `clocks` keeps (every row
/// with a readable stamp, and only those).
fn at_list(c: &Columns<3>, kind: Kind) -> (Vec<At>, bool) {
    let [_, stamps, extra] = &c.values;
    let mut out = Vec::new();
    let mut same_rows = true;
    for (r, (&log, (&s, &e))) in c
        .log_time_ns
        .iter()
        .zip(stamps.iter().zip(extra))
        .enumerate()
    {
        let real = s != NO_STAMP_READ && s != UNREADABLE;
        let kept = checked_row(kind, real, e);
        if kept != real {
            same_rows = false;
        }
        if kept {
            out.push(At {
                index: r,
                log_time_ns: log,
                stamp_ns: if real { s } else { 0 },
            });
        }
    }
    (out, same_rows)
}

/// Whether a row is one of the messages the stamp checks look at (see [`at_list`]).
fn checked_row(kind: Kind, real_stamp: bool, extra: i64) -> bool {
    match extra {
        UNDECODED_ROW => false,
        NO_EXTRA => kind != Kind::Other || real_stamp,
        _ => true,
    }
}

/// The earliest log time of the messages the stamp checks look at, over all topics.
fn first_checked_log_time(cols: &[Columns<3>], kinds: &[Kind]) -> Option<i64> {
    cols.iter()
        .zip(kinds)
        .filter_map(|(c, &kind)| {
            let [_, stamps, extra] = &c.values;
            c.log_time_ns
                .iter()
                .zip(stamps.iter().zip(extra))
                .filter(|(_, (&s, &e))| checked_row(kind, s != NO_STAMP_READ && s != UNREADABLE, e))
                .map(|(&log, _)| log)
                .min()
        })
        .min()
}

/// What `check` keeps of one message beyond its times: for the types with contract checks,
/// the fields those checks read (or the per-message findings of a joint message, or why it did
/// not decode); nothing for most. Runs on the scan's worker threads.
fn probe(
    c: &ProbeContext<'_>,
    m: &bagscope_bag::RawMessage<'_>,
    stamp: Option<i64>,
) -> Option<Extra> {
    let at = At {
        index: 0, // filled in once messages are in log-time order
        log_time_ns: m.log_time_ns,
        stamp_ns: stamp.unwrap_or(0),
    };
    let boxed = Some;
    match c.kinds[m.topic] {
        Kind::Image => match decode_typed::<Image>(m.data) {
            Ok(v) => boxed(Extra::Image(ImageMeta {
                at,
                frame_id: v.header.frame_id,
                height: v.height,
                width: v.width,
                encoding: v.encoding,
                is_bigendian: v.is_bigendian,
                step: v.step,
                data_len: v.data.len(),
            })),
            Err(e) => boxed(Extra::Undecodable(e.to_string())),
        },
        Kind::CameraInfo => match decode_typed::<CameraInfo>(m.data) {
            Ok(v) => boxed(Extra::Info(CameraInfoMeta {
                at,
                frame_id: v.header.frame_id,
                height: v.height,
                width: v.width,
                distortion_model: v.distortion_model,
                d_len: v.d.len(),
                k: v.k,
            })),
            Err(e) => boxed(Extra::Undecodable(e.to_string())),
        },
        // Most joint messages are clean: read in place, they need no decode and keep nothing.
        Kind::JointState if joint_payload_clean(m.topic, m.data, c.joint_opts) => None,
        Kind::JointState => match decode_typed::<JointState>(m.data) {
            Ok(v) => joint_findings(
                &c.bag.topics[m.topic].name,
                JointMeta {
                    at,
                    names: v.name,
                    arrays: vec![
                        ("position".into(), v.position),
                        ("velocity".into(), v.velocity),
                        ("effort".into(), v.effort),
                    ],
                },
                c.joint_opts,
            ),
            Err(e) => boxed(Extra::Undecodable(e.to_string())),
        },
        Kind::JointTrajectory => match decode_typed::<JointTrajectory>(m.data) {
            Ok(v) => {
                let mut arrays = Vec::new();
                for (k, p) in v.points.into_iter().enumerate() {
                    arrays.push((format!("points[{k}].positions"), p.positions));
                    arrays.push((format!("points[{k}].velocities"), p.velocities));
                }
                // Limits apply to positions: give the first point the plain name.
                if let Some(first) = arrays.first_mut() {
                    first.0 = "positions".into();
                }
                joint_findings(
                    &c.bag.topics[m.topic].name,
                    JointMeta {
                        at,
                        names: v.joint_names,
                        arrays,
                    },
                    c.joint_opts,
                )
            }
            Err(e) => boxed(Extra::Undecodable(e.to_string())),
        },
        Kind::Cloud => match decode_typed::<PointCloud2>(m.data) {
            Ok(v) => boxed(Extra::Cloud(CloudMeta {
                at,
                height: v.height,
                width: v.width,
                point_step: v.point_step,
                row_step: v.row_step,
                data_len: v.data.len(),
                fields: v
                    .fields
                    .into_iter()
                    .map(|f| (f.name, f.offset, f.datatype, f.count))
                    .collect(),
            })),
            Err(e) => boxed(Extra::Undecodable(e.to_string())),
        },
        Kind::Other => None,
    }
}

/// What [`probe`] needs of the bag, shared by the scan's threads.
struct ProbeContext<'a> {
    bag: &'a Bag,
    kinds: &'a [Kind],
    joint_opts: &'a JointCheckOptions,
}

/// What the scan kept beside the times, per topic in log-time order: the fields each check
/// reads, the per-message findings, and how many messages would not decode.
struct Collected {
    images: Vec<Vec<ImageMeta>>,
    infos: Vec<Vec<CameraInfoMeta>>,
    clouds: Vec<Vec<CloudMeta>>,
    /// Per topic: messages that did not decode, and the last reason.
    undecodable: Vec<(usize, String)>,
    findings: Vec<Finding>,
}

/// Takes each row's extra out of `extras` into the check's lists, with the message's index in
/// its topic and its times; rows that did not decode are marked [`UNDECODED_ROW`], the others
/// with an extra [`TAKEN_EXTRA`].
fn collect(bag: &Bag, cols: &mut [Columns<3>], extras: &mut [Option<Extra>]) -> Collected {
    let n = bag.topics.len();
    let mut images: Vec<Vec<ImageMeta>> = vec![Vec::new(); n];
    let mut infos: Vec<Vec<CameraInfoMeta>> = vec![Vec::new(); n];
    let mut clouds: Vec<Vec<CloudMeta>> = vec![Vec::new(); n];
    let mut undecodable: Vec<(usize, String)> = vec![(0, String::new()); n];
    let mut findings = Vec::new();
    for (ti, c) in cols.iter_mut().enumerate() {
        let [_, stamps, extra] = &mut c.values;
        for (idx, e) in extra.iter_mut().enumerate() {
            let Some(x) = usize::try_from(*e)
                .ok()
                .and_then(|k| extras.get_mut(k)?.take())
            else {
                continue;
            };
            let log_time_ns = c.log_time_ns[idx];
            let s = stamps[idx];
            let at = At {
                index: idx,
                log_time_ns,
                stamp_ns: if s == NO_STAMP_READ || s == UNREADABLE {
                    0
                } else {
                    s
                },
            };
            *e = TAKEN_EXTRA;
            match x {
                Extra::Image(mut m) => {
                    m.at = at;
                    images[ti].push(m);
                }
                Extra::Info(mut m) => {
                    m.at = at;
                    infos[ti].push(m);
                }
                Extra::Cloud(mut m) => {
                    m.at = at;
                    clouds[ti].push(m);
                }
                Extra::Findings(fs) => {
                    findings.extend(fs.into_iter().map(|mut f| {
                        f.index = idx;
                        f
                    }));
                }
                Extra::Undecodable(err) => {
                    *e = UNDECODED_ROW;
                    findings.push(Finding {
                        code: "message_undecodable".into(),
                        topic: bag.topics[ti].name.clone(),
                        index: idx,
                        log_time_ns,
                        severity: bagscope_checks::Severity::Error,
                        message: format!(
                            "payload does not decode as {}: {err}",
                            bag.topics[ti].type_name
                        ),
                    });
                    undecodable[ti].0 += 1;
                    undecodable[ti].1 = err;
                }
            }
        }
    }
    Collected {
        images,
        infos,
        clouds,
        undecodable,
        findings,
    }
}
