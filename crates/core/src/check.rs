//! `bagscope check`: message contract checks over every topic of a known type.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use bagscope_bag::{Bag, Warning};
use bagscope_checks::{
    check_camera_info, check_clouds, check_images, check_joints, check_stamps, sort_findings, At,
    CameraInfoMeta, CloudMeta, Finding, ImageMeta, JointCheckOptions, JointMeta,
};
use bagscope_msg::types::{CameraInfo, Image, JointState, JointTrajectory, PointCloud2};
use bagscope_msg::{decode_typed, StampSource};

use crate::series::{locators, topic_schemas};
use crate::Error;

#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    pub joints: JointCheckOptions,
    /// Stamps earlier than the bag start by more than this are flagged (default 10 s).
    pub before_start_ns: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub bag: String,
    /// Topics checked and how: type → checks applied.
    pub checked: BTreeMap<String, String>,
    pub findings: Vec<Finding>,
    /// Findings per code.
    pub counts: BTreeMap<String, usize>,
    pub warnings: Vec<Warning>,
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

enum Meta {
    Image(ImageMeta),
    Info(CameraInfoMeta),
    Joint(JointMeta),
    Cloud(CloudMeta),
    Stamp(At),
    Undecodable(String),
    None,
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

pub fn check(path: &Path, o: &CheckOptions) -> Result<CheckReport, Error> {
    let bag = Bag::open(path)?;
    let kinds: Vec<Kind> = bag.topics.iter().map(|t| kind_of(&t.type_name)).collect();
    let schemas = topic_schemas(&bag);
    let locs = locators(&schemas);
    let scan = bag.scan(&bag.all_topics(), |m| {
        let loc = &locs[m.topic];
        let stamp = loc.read_stamp_ns(m.data).ok().flatten();
        let at = At {
            index: 0, // filled in below, once messages are in log-time order
            log_time_ns: m.log_time_ns,
            stamp_ns: stamp.unwrap_or(0),
        };
        match kinds[m.topic] {
            Kind::Image => match decode_typed::<Image>(m.data) {
                Ok(v) => Meta::Image(ImageMeta {
                    at,
                    frame_id: v.header.frame_id,
                    height: v.height,
                    width: v.width,
                    encoding: v.encoding,
                    is_bigendian: v.is_bigendian,
                    step: v.step,
                    data_len: v.data.len(),
                }),
                Err(e) => Meta::Undecodable(e.to_string()),
            },
            Kind::CameraInfo => match decode_typed::<CameraInfo>(m.data) {
                Ok(v) => Meta::Info(CameraInfoMeta {
                    at,
                    frame_id: v.header.frame_id,
                    height: v.height,
                    width: v.width,
                    distortion_model: v.distortion_model,
                    d_len: v.d.len(),
                    k: v.k,
                }),
                Err(e) => Meta::Undecodable(e.to_string()),
            },
            Kind::JointState => match decode_typed::<JointState>(m.data) {
                Ok(v) => Meta::Joint(JointMeta {
                    at,
                    names: v.name,
                    arrays: vec![
                        ("position".into(), v.position),
                        ("velocity".into(), v.velocity),
                        ("effort".into(), v.effort),
                    ],
                }),
                Err(e) => Meta::Undecodable(e.to_string()),
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
                    Meta::Joint(JointMeta {
                        at,
                        names: v.joint_names,
                        arrays,
                    })
                }
                Err(e) => Meta::Undecodable(e.to_string()),
            },
            Kind::Cloud => match decode_typed::<PointCloud2>(m.data) {
                Ok(v) => Meta::Cloud(CloudMeta {
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
                }),
                Err(e) => Meta::Undecodable(e.to_string()),
            },
            Kind::Other => match stamp {
                Some(_) => Meta::Stamp(at),
                None => Meta::None,
            },
        }
    });
    let mut warnings = bag.open_warnings();
    warnings.extend(scan.warnings.iter().cloned());

    let n = bag.topics.len();
    let mut images: Vec<Vec<ImageMeta>> = vec![Vec::new(); n];
    let mut infos: Vec<Vec<CameraInfoMeta>> = vec![Vec::new(); n];
    let mut joints: Vec<Vec<JointMeta>> = vec![Vec::new(); n];
    let mut clouds: Vec<Vec<CloudMeta>> = vec![Vec::new(); n];
    let mut stamps: Vec<Vec<At>> = vec![Vec::new(); n];
    let mut undecodable: Vec<(usize, String)> = vec![(0, String::new()); n];
    let mut index = vec![0usize; n];
    let mut findings = Vec::new();
    for it in scan.items {
        let ti = it.topic;
        let idx = index[ti];
        index[ti] += 1;
        let fix = |mut a: At| {
            a.index = idx;
            a
        };
        match it.value {
            Meta::Image(mut m) => {
                m.at = fix(m.at);
                stamps[ti].push(m.at);
                images[ti].push(m);
            }
            Meta::Info(mut m) => {
                m.at = fix(m.at);
                stamps[ti].push(m.at);
                infos[ti].push(m);
            }
            Meta::Joint(mut m) => {
                m.at = fix(m.at);
                stamps[ti].push(m.at);
                joints[ti].push(m);
            }
            Meta::Cloud(mut m) => {
                m.at = fix(m.at);
                stamps[ti].push(m.at);
                clouds[ti].push(m);
            }
            Meta::Stamp(a) => stamps[ti].push(fix(a)),
            Meta::Undecodable(e) => {
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
            Meta::None => {}
        }
    }
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
        if index[ti] > 0 && bag.topics[ti].message_encoding == "cdr" {
            if let Err(e) = &schemas[ti] {
                // Without its schema a topic's type is unknown, so nothing in it was checked.
                warnings.push(
                    Warning::new(
                        "unchecked_topic",
                        format!("{} message(s) not checked: {e}", index[ti]),
                    )
                    .topic(name)
                    .loss(),
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
                // Age checks only make sense when stamps are on the recorder's axis.
                jo.stamps_on_log_axis = joints[ti]
                    .first()
                    .is_some_and(|m| (m.at.log_time_ns - m.at.stamp_ns).abs() < 3_600_000_000_000);
                if kinds[ti] == Kind::JointState {
                    jo.max_command_age_ns = None;
                }
                findings.extend(check_joints(name, &joints[ti], &jo));
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
                    "decode_error",
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
    warnings.sort();
    warnings.dedup();
    Ok(CheckReport {
        bag: path.display().to_string(),
        checked,
        findings,
        counts,
        warnings,
    })
}
