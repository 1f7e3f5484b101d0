//! `bagscope check`: message contract checks over every topic of a known type.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use bagscope_bag::WarningCode;
use bagscope_bag::{Bag, Warning};
use bagscope_checks::{
    check_camera_info, check_clouds, check_images, check_joint_ages, check_joint_message,
    check_stamps, sort_findings, At, CameraInfoMeta, CloudMeta, Finding, ImageMeta,
    JointCheckOptions, JointMeta,
};
use bagscope_clocks::TopicTimes;
use bagscope_msg::types::{CameraInfo, Image, JointState, JointTrajectory, PointCloud2};
use bagscope_msg::{decode_typed, StampSource};

use crate::findings::{check_hits, summarise, VerdictSummary};
use crate::series::{locators, topic_schemas};
use crate::Error;

/// What `check` checks beyond the fixed contracts.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Joint limits and the command-age window for `JointState` / `JointTrajectory` topics
    /// (default: no limits, no age limit, 5 ms future tolerance).
    pub joints: JointCheckOptions,
    /// Stamps earlier than the bag start by more than this are flagged; 0 (the default) or
    /// less means 10 s.
    pub before_start_ns: i64,
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

/// What the scan keeps of one message: its stamp and, for the few messages that need more,
/// the rest boxed. 16 bytes for most messages: a joint message is checked as it is decoded
/// and only its findings are kept; images, camera infos and clouds (low-rate, checked against
/// each other) keep their metadata.
struct Probe {
    /// `NO_STAMP` when the message has none.
    stamp_ns: i64,
    extra: Option<Box<Extra>>,
}

enum Extra {
    Image(ImageMeta),
    Info(CameraInfoMeta),
    Cloud(CloudMeta),
    /// Findings of a joint message's own checks (their index is set once it is known).
    Findings(Vec<Finding>),
    Undecodable(String),
}

/// No real stamp is i64::MIN (a ROS stamp's seconds are 32-bit).
const NO_STAMP: i64 = i64::MIN;

/// A joint message's own findings, kept instead of the message (none: nothing kept).
fn joint_findings(topic: &str, m: JointMeta, opts: &JointCheckOptions) -> Option<Box<Extra>> {
    let f = check_joint_message(topic, &m, opts);
    (!f.is_empty()).then(|| Box::new(Extra::Findings(f)))
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
    let path = bag.path.as_path();
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
        locs: &locs,
        joint_opts: &joint_opts,
        invalid: &invalid,
    };
    let scan = bag.scan(&bag.all_topics(), |m| probe(&ctx, m));
    let mut warnings = bag.open_warnings();
    warnings.extend(scan.warnings.iter().cloned());

    let n = bag.topics.len();
    let Collected {
        images,
        infos,
        clouds,
        stamps,
        undecodable,
        count: index,
        mut findings,
    } = collect(bag, &kinds, scan.items);
    let bag_start = stamps
        .iter()
        .flatten()
        .map(|a| a.log_time_ns)
        .min()
        .unwrap_or(0);
    let image_topics: Vec<usize> = (0..n).filter(|&i| kinds[i] == Kind::Image).collect();
    let image_names: Vec<&str> = image_topics
        .iter()
        .map(|&i| bag.topics[i].name.as_str())
        .collect();
    let mut checked = BTreeMap::new();
    for ti in 0..n {
        let name = &bag.topics[ti].name;
        if index[ti] > 0 {
            if let Err(e) = &schemas[ti] {
                // Without a usable definition nothing in the topic could be checked: a
                // limitation of what the bag describes, not lost data (every message was read).
                warnings.push(
                    Warning::new(
                        WarningCode::UndecodableTopic,
                        format!("{} message(s) read but not checked: {e}", index[ti]),
                    )
                    .topic(name),
                );
            }
        }
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
                jo.stamps_on_log_axis = stamps[ti].first().is_some_and(|a| {
                    a.log_time_ns.saturating_sub(a.stamp_ns).saturating_abs() < 3_600_000_000_000
                });
                if kinds[ti] == Kind::JointState {
                    jo.max_command_age_ns = None;
                }
                findings.extend(check_joint_ages(name, &stamps[ti], &jo));
                "names vs values, duplicates, finiteness, limits, command age"
            }
            Kind::Cloud => {
                findings.extend(check_clouds(name, &clouds[ti]));
                "row_step, point_step, fields vs data"
            }
            Kind::Other => {
                if stamps[ti].is_empty() {
                    continue;
                }
                "stamps"
            }
        };
        if locs[ti].source() != StampSource::None && locs[ti].source() != StampSource::ClockField {
            let same_axis = stamps[ti]
                .iter()
                .find(|a| a.stamp_ns != 0)
                .is_some_and(|a| (a.log_time_ns - a.stamp_ns).abs() < 3_600_000_000_000);
            let before = if o.before_start_ns > 0 {
                o.before_start_ns
            } else {
                10_000_000_000
            };
            findings.extend(check_stamps(
                name,
                &stamps[ti],
                bag_start,
                before,
                same_axis,
            ));
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
    }
    sort_findings(&mut findings);
    let mut counts = BTreeMap::new();
    for f in &findings {
        *counts.entry(f.code.clone()).or_insert(0) += 1;
    }
    warnings.extend(crate::recorder_events::lost_messages(bag));
    warnings.sort();
    warnings.dedup();
    // The clock findings of the same stamps, so that `check` and `clocks` name the same codes
    // for the same topics (frozen, zero, invalid stamps, offsets, a replay, split axes).
    let times = clock_times(bag, &locs, stamps, &invalid);
    let clock = bagscope_clocks::analyze(&times, &bagscope_clocks::ClocksOptions::default());
    let mut all = warnings.clone();
    all.extend(clock.warnings.iter().cloned());
    let verdicts = summarise(&all, &check_hits(&findings), clock.split);
    Ok(CheckReport {
        bag: path.display().to_string(),
        checked,
        findings,
        counts,
        warnings,
        verdicts,
    })
}

/// Each stamped topic's times as the clocks analysis takes them. Each topic's times are taken out
/// of `stamps` (and its 24 bytes a message freed) as its two columns are made: memory stays
/// below what the scan itself held.
fn clock_times(
    bag: &Bag,
    locs: &[bagscope_msg::StampLocator],
    mut stamps: Vec<Vec<At>>,
    invalid: &[AtomicUsize],
) -> Vec<TopicTimes> {
    let n = stamps.len();
    let stamped: Vec<usize> = (0..n)
        .filter(|&ti| locs[ti].source() != StampSource::None && !stamps[ti].is_empty())
        .collect();
    stamped
        .into_iter()
        .map(|ti| {
            let at = std::mem::take(&mut stamps[ti]);
            TopicTimes {
                topic: bag.topics[ti].name.clone(),
                type_name: bag.topics[ti].type_name.clone(),
                source: locs[ti].source(),
                log_time_ns: at.iter().map(|a| a.log_time_ns).collect(),
                publish_time_ns: Vec::new(),
                stamp_ns: at.iter().map(|a| a.stamp_ns).collect(),
                invalid_stamps: invalid[ti].load(Ordering::Relaxed),
            }
        })
        .collect()
}

/// What the scan keeps of one message: its stamp and, for the types with contract checks, the
/// fields those checks read (or the per-message findings of a joint message, or why it did not
/// decode). Runs on the scan's worker threads.
fn probe(c: &ProbeContext<'_>, m: &bagscope_bag::RawMessage<'_>) -> Probe {
    let loc = &c.locs[m.topic];
    let stamp = loc.read_stamp(m.data).ok().flatten().map(|s| {
        if !s.nanosec_valid {
            c.invalid[m.topic].fetch_add(1, Ordering::Relaxed);
        }
        s.ns
    });
    let at = At {
        index: 0, // filled in below, once messages are in log-time order
        log_time_ns: m.log_time_ns,
        stamp_ns: stamp.unwrap_or(0),
    };
    let boxed = |e: Extra| Some(Box::new(e));
    let extra = match c.kinds[m.topic] {
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
    };
    Probe {
        stamp_ns: stamp.unwrap_or(NO_STAMP),
        extra,
    }
}

/// What [`probe`] needs of the bag, shared by the scan's threads.
struct ProbeContext<'a> {
    bag: &'a Bag,
    kinds: &'a [Kind],
    locs: &'a [bagscope_msg::StampLocator],
    joint_opts: &'a JointCheckOptions,
    /// Per topic: stamps whose nanoseconds field is 1e9 or more.
    invalid: &'a [AtomicUsize],
}

/// The scan's results sorted per topic, in log-time order: the fields each check reads, every
/// checked message's times, the per-message findings, and how many messages would not decode.
struct Collected {
    images: Vec<Vec<ImageMeta>>,
    infos: Vec<Vec<CameraInfoMeta>>,
    clouds: Vec<Vec<CloudMeta>>,
    stamps: Vec<Vec<At>>,
    /// Per topic: messages that did not decode, and the last reason.
    undecodable: Vec<(usize, String)>,
    /// Per topic: messages read.
    count: Vec<usize>,
    findings: Vec<Finding>,
}

fn collect(bag: &Bag, kinds: &[Kind], items: Vec<bagscope_bag::Item<Probe>>) -> Collected {
    let n = bag.topics.len();
    let mut images: Vec<Vec<ImageMeta>> = vec![Vec::new(); n];
    let mut infos: Vec<Vec<CameraInfoMeta>> = vec![Vec::new(); n];
    let mut clouds: Vec<Vec<CloudMeta>> = vec![Vec::new(); n];
    // Sized once per topic: growing by doubling would hold up to three times the times of a
    // large topic at its last step.
    let mut per_topic = vec![0usize; n];
    for it in &items {
        per_topic[it.topic] += 1;
    }
    let mut stamps: Vec<Vec<At>> = per_topic.iter().map(|&c| Vec::with_capacity(c)).collect();
    let mut undecodable: Vec<(usize, String)> = vec![(0, String::new()); n];
    let mut index = vec![0usize; n];
    let mut findings = Vec::new();
    for it in items {
        let ti = it.topic;
        let idx = index[ti];
        index[ti] += 1;
        let p = it.value;
        let at = At {
            index: idx,
            log_time_ns: it.log_time_ns,
            stamp_ns: if p.stamp_ns == NO_STAMP {
                0
            } else {
                p.stamp_ns
            },
        };
        match p.extra.map(|b| *b) {
            Some(Extra::Image(mut m)) => {
                m.at = at;
                stamps[ti].push(at);
                images[ti].push(m);
            }
            Some(Extra::Info(mut m)) => {
                m.at = at;
                stamps[ti].push(at);
                infos[ti].push(m);
            }
            Some(Extra::Cloud(mut m)) => {
                m.at = at;
                stamps[ti].push(at);
                clouds[ti].push(m);
            }
            Some(Extra::Findings(fs)) => {
                stamps[ti].push(at);
                findings.extend(fs.into_iter().map(|mut f| {
                    f.index = idx;
                    f
                }));
            }
            Some(Extra::Undecodable(e)) => {
                findings.push(Finding {
                    code: "message_undecodable".into(),
                    topic: bag.topics[ti].name.clone(),
                    index: idx,
                    log_time_ns: it.log_time_ns,
                    severity: bagscope_checks::Severity::Error,
                    message: format!(
                        "payload does not decode as {}: {e}",
                        bag.topics[ti].type_name
                    ),
                });
                undecodable[ti].0 += 1;
                undecodable[ti].1 = e;
            }
            // A joint message without findings, or any other stamped message.
            None if kinds[ti] != Kind::Other || p.stamp_ns != NO_STAMP => stamps[ti].push(at),
            None => {}
        }
    }
    Collected {
        images,
        infos,
        clouds,
        stamps,
        undecodable,
        count: index,
        findings,
    }
}
