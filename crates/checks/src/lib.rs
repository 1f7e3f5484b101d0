//! Message contract checks: the fields of common sensor and command messages that must agree
//! with each other. Pure: callers pass the few fields each check needs (already decoded) and get
//! structured findings back, sorted by topic, index and code.
//!
//! # In the workspace
//!
//! Message contract checks (Image, CameraInfo, JointState/JointTrajectory, PointCloud2,
//! stamps); a joint message's own checks apart from the age checks, so a scan checks each
//! message as it decodes it and keeps only findings.
//!
//! Notable dependencies: `serde`.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use serde::Serialize;

/// How serious a [`Finding`] is; ordered `Note` < `Error`, serialised in lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Allowed, but worth knowing (e.g. row padding).
    Note,
    /// Data that a consumer will misread or reject.
    Error,
}

/// One contract violation (or note) found in one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable machine-readable name of the check, e.g. `image_step_too_small`, `joint_non_finite`, `stamp_zero`.
    pub code: String,
    /// Topic the message was recorded on.
    pub topic: String,
    /// The message's index within its topic, in log-time order, from 0.
    pub index: usize,
    /// The message's log (receive) time, ns since the epoch of the recorder's clock.
    pub log_time_ns: i64,
    /// How serious the finding is.
    pub severity: Severity,
    /// Human-readable detail with the offending values, e.g. `step 10 < width 4 x 3 bytes per pixel (rgb8) = 12`.
    pub message: String,
}

/// Every finding code a contract check gives, sorted (`message_undecodable` is given by the
/// caller for a payload that does not decode as its type). What `check --fail-on` accepts.
pub const FINDING_CODES: &[&str] = &[
    "camera_info_distortion_mismatch",
    "camera_info_frame_mismatch",
    "camera_info_size_mismatch",
    "camera_info_uncalibrated",
    "cloud_data_size_mismatch",
    "cloud_field_bad_datatype",
    "cloud_field_outside_point",
    "cloud_row_step_too_small",
    "command_in_future",
    "command_stale",
    "image_data_size_mismatch",
    "image_endianness_invalid",
    "image_row_padding",
    "image_step_too_small",
    "image_unknown_encoding",
    "image_zero_size",
    "joint_duplicate_name",
    "joint_length_mismatch",
    "joint_non_finite",
    "joint_outside_limits",
    "message_undecodable",
    "stamp_before_bag_start",
    "stamp_zero",
];

fn finding(
    code: &str,
    topic: &str,
    index: usize,
    log_time_ns: i64,
    sev: Severity,
    message: String,
) -> Finding {
    Finding {
        code: code.to_string(),
        topic: topic.to_string(),
        index,
        log_time_ns,
        severity: sev,
        message,
    }
}

/// Where a message sits: topic index and times.
#[derive(Debug, Clone, Copy)]
pub struct At {
    /// The message's index within its topic, in log-time order, from 0.
    pub index: usize,
    /// Log (receive) time, ns.
    pub log_time_ns: i64,
    /// `header.stamp`, ns (callers pass 0 when the message has no stamp).
    pub stamp_ns: i64,
}

/// The fields of one `sensor_msgs/Image` that [`check_images`] and [`check_camera_info`] need.
#[derive(Debug, Clone)]
pub struct ImageMeta {
    /// Where the message sits.
    pub at: At,
    /// `header.frame_id`.
    pub frame_id: String,
    /// Rows, pixels.
    pub height: u32,
    /// Columns, pixels.
    pub width: u32,
    /// Pixel encoding as recorded (e.g. `rgb8`, `mono16`); matched case-insensitively by [`encoding_info`].
    pub encoding: String,
    /// The `is_bigendian` field as recorded; must be 0 or 1.
    pub is_bigendian: u8,
    /// Length of one row, bytes.
    pub step: u32,
    /// Length of the `data` array, bytes.
    pub data_len: usize,
}

/// Bytes per pixel and whether the encoding has multi-byte channels (so endianness matters),
/// for the encodings of `sensor_msgs/image_encodings.hpp`.
pub fn encoding_info(enc: &str) -> Option<(u32, bool)> {
    let e = enc.to_ascii_lowercase();
    let fixed = match e.as_str() {
        "mono8" | "8uc1" | "8sc1" | "bayer_rggb8" | "bayer_bggr8" | "bayer_gbrg8"
        | "bayer_grbg8" => (1, false),
        "mono16" | "16uc1" | "16sc1" | "bayer_rggb16" | "bayer_bggr16" | "bayer_gbrg16"
        | "bayer_grbg16" => (2, true),
        "rgb8" | "bgr8" | "8uc3" | "8sc3" => (3, false),
        "rgba8" | "bgra8" | "8uc4" | "8sc4" => (4, false),
        "rgb16" | "bgr16" | "16uc3" | "16sc3" => (6, true),
        "rgba16" | "bgra16" | "16uc4" | "16sc4" => (8, true),
        "32fc1" | "32sc1" => (4, true),
        "64fc1" => (8, true),
        "yuv422" | "uyvy" | "yuyv" | "yuv422_yuy2" => (2, false),
        "8uc2" | "8sc2" => (2, false),
        "16uc2" | "16sc2" => (4, true),
        "32fc2" | "32sc2" => (8, true),
        "32fc3" | "32sc3" => (12, true),
        "32fc4" | "32sc4" => (16, true),
        "64fc2" => (16, true),
        "64fc3" => (24, true),
        "64fc4" => (32, true),
        _ => return None,
    };
    Some(fixed)
}

/// Image checks of one topic: zero size, unknown encoding, `step` against width × bytes per pixel (too small is an error, padding a note), `is_bigendian` not 0/1, `data` length against `step` × height.
pub fn check_images(topic: &str, images: &[ImageMeta]) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in images {
        let (i, t) = (m.at.index, m.at.log_time_ns);
        if m.width == 0 || m.height == 0 {
            out.push(finding(
                "image_zero_size",
                topic,
                i,
                t,
                Severity::Error,
                format!("image is {}x{}", m.width, m.height),
            ));
        }
        let info = encoding_info(&m.encoding);
        match info {
            None => out.push(finding(
                "image_unknown_encoding",
                topic,
                i,
                t,
                Severity::Error,
                format!("unknown encoding '{}'", m.encoding),
            )),
            Some((bpp, multibyte)) => {
                let need = m.width as u64 * bpp as u64;
                if (m.step as u64) < need {
                    out.push(finding(
                        "image_step_too_small",
                        topic,
                        i,
                        t,
                        Severity::Error,
                        format!(
                            "step {} < width {} x {} bytes per pixel ({}) = {need}",
                            m.step, m.width, bpp, m.encoding
                        ),
                    ));
                } else if m.step as u64 > need && m.width > 0 {
                    out.push(finding(
                        "image_row_padding",
                        topic,
                        i,
                        t,
                        Severity::Note,
                        format!(
                            "step {} > {need}: {} padding bytes per row (allowed)",
                            m.step,
                            m.step as u64 - need
                        ),
                    ));
                }
                if !multibyte && m.is_bigendian > 1 {
                    out.push(finding(
                        "image_endianness_invalid",
                        topic,
                        i,
                        t,
                        Severity::Error,
                        format!("is_bigendian = {} (must be 0 or 1)", m.is_bigendian),
                    ));
                }
            }
        }
        let expect = m.step as u64 * m.height as u64;
        if m.data_len as u64 != expect {
            out.push(finding(
                "image_data_size_mismatch",
                topic,
                i,
                t,
                Severity::Error,
                format!(
                    "data has {} bytes, step {} x height {} = {expect}",
                    m.data_len, m.step, m.height
                ),
            ));
        }
    }
    out
}

/// The fields of one `sensor_msgs/CameraInfo` that [`check_camera_info`] needs.
#[derive(Debug, Clone)]
pub struct CameraInfoMeta {
    /// Where the message sits; its `stamp_ns` pairs it with the image of the same stamp.
    pub at: At,
    /// `header.frame_id`; must equal the paired image's.
    pub frame_id: String,
    /// Calibrated image height, pixels (0 when unset: the size comparison is skipped).
    pub height: u32,
    /// Calibrated image width, pixels (0 when unset: the size comparison is skipped).
    pub width: u32,
    /// Distortion model name, e.g. `plumb_bob` (5 coefficients), `rational_polynomial` (8), `equidistant` (4).
    pub distortion_model: String,
    /// Number of distortion coefficients in `D`.
    pub d_len: usize,
    /// Intrinsic matrix `K`, row-major; all zero or `fx` = 0 means uncalibrated.
    pub k: [f64; 9],
}

/// CameraInfo checks; `images` are the image messages of the camera it describes (may be empty).
pub fn check_camera_info(
    topic: &str,
    infos: &[CameraInfoMeta],
    image_topic: Option<&str>,
    images: &[ImageMeta],
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut by_stamp: BTreeMap<i64, &ImageMeta> = BTreeMap::new();
    for im in images {
        by_stamp.entry(im.at.stamp_ns).or_insert(im);
    }
    for c in infos {
        let (i, t) = (c.at.index, c.at.log_time_ns);
        if c.k[0] == 0.0 || c.k.iter().all(|&x| x == 0.0) {
            out.push(finding(
                "camera_info_uncalibrated",
                topic,
                i,
                t,
                Severity::Error,
                if c.k.iter().all(|&x| x == 0.0) {
                    "K is all zero: the camera was never calibrated".to_string()
                } else {
                    "K[0] (fx) is 0: the camera was never calibrated".to_string()
                },
            ));
        }
        let expected_d = match c.distortion_model.as_str() {
            "plumb_bob" => Some(&[5usize][..]),
            "rational_polynomial" => Some(&[8usize][..]),
            "equidistant" => Some(&[4usize][..]),
            _ => None,
        };
        if let Some(ok) = expected_d {
            if !ok.contains(&c.d_len) {
                out.push(finding(
                    "camera_info_distortion_mismatch",
                    topic,
                    i,
                    t,
                    Severity::Error,
                    format!(
                        "distortion model '{}' expects {} coefficients, D has {}",
                        c.distortion_model, ok[0], c.d_len
                    ),
                ));
            }
        }
        if let Some(im) = by_stamp.get(&c.at.stamp_ns) {
            let it = image_topic.unwrap_or("image");
            if im.frame_id != c.frame_id {
                out.push(finding(
                    "camera_info_frame_mismatch",
                    topic,
                    i,
                    t,
                    Severity::Error,
                    format!(
                        "frame_id '{}' but the {it} message with the same stamp has '{}'",
                        c.frame_id, im.frame_id
                    ),
                ));
            }
            if (im.width, im.height) != (c.width, c.height) && c.width != 0 && c.height != 0 {
                out.push(finding(
                    "camera_info_size_mismatch",
                    topic,
                    i,
                    t,
                    Severity::Error,
                    format!(
                        "{}x{} but the {it} message with the same stamp is {}x{}",
                        c.width, c.height, im.width, im.height
                    ),
                ));
            }
        }
    }
    out
}

/// The fields of one `sensor_msgs/JointState` or `trajectory_msgs/JointTrajectory` point that the joint checks need.
#[derive(Debug, Clone)]
pub struct JointMeta {
    /// Where the message sits; its `stamp_ns` is what the age checks compare to the log time.
    pub at: At,
    /// Joint names, in message order.
    pub names: Vec<String>,
    /// (field name, values) for each value array, e.g. ("position", …).
    pub arrays: Vec<(String, Vec<f64>)>,
}

/// How far a joint stamp may lead the recorder's log time before it counts as stamped in the
/// future: clock jitter between producer and recorder (NTP/chrony keep hosts within ~1 ms).
pub const DEFAULT_FUTURE_TOLERANCE_NS: i64 = 5_000_000;

/// Options of the joint checks ([`check_joints`], [`check_joint_message`], [`check_joint_ages`]).
#[derive(Debug, Clone)]
pub struct JointCheckOptions {
    /// Position limits by joint name: `(lower, upper)`, in the joint's units (rad or m); a position outside is an error. Joints not listed are not limit-checked.
    pub limits: BTreeMap<String, (f64, f64)>,
    /// Commands whose stamp is older than this at log time are stale; newer than log time by
    /// more than `future_tolerance_ns` are in the future. Only for stamps on the log-time axis.
    pub max_command_age_ns: Option<i64>,
    /// [`DEFAULT_FUTURE_TOLERANCE_NS`] by default (what `bagscope check` uses).
    pub future_tolerance_ns: i64,
    /// Whether the topic's stamps are on the same clock as the log time; the age checks run only then (comparing stamps on another clock would be meaningless).
    pub stamps_on_log_axis: bool,
}

impl Default for JointCheckOptions {
    fn default() -> Self {
        JointCheckOptions {
            limits: BTreeMap::new(),
            max_command_age_ns: None,
            future_tolerance_ns: DEFAULT_FUTURE_TOLERANCE_NS,
            stamps_on_log_axis: false,
        }
    }
}

/// All joint checks of one topic: [`check_joint_message`] and [`check_joint_ages`] for each message.
pub fn check_joints(topic: &str, msgs: &[JointMeta], opts: &JointCheckOptions) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in msgs {
        out.extend(check_joint_message(topic, m, opts));
        out.extend(check_joint_ages(topic, std::slice::from_ref(&m.at), opts));
    }
    out
}

/// The checks of one joint message that need nothing but the message itself: duplicate names,
/// value arrays against names, finiteness, limits. (A scan can run them as it decodes, and keep
/// only the findings.)
pub fn check_joint_message(topic: &str, m: &JointMeta, opts: &JointCheckOptions) -> Vec<Finding> {
    let mut out = Vec::new();
    let (i, t) = (m.at.index, m.at.log_time_ns);
    let mut seen = std::collections::BTreeSet::new();
    for n in &m.names {
        if !seen.insert(n) {
            out.push(finding(
                "joint_duplicate_name",
                topic,
                i,
                t,
                Severity::Error,
                format!("joint '{n}' appears twice"),
            ));
        }
    }
    for (field, vals) in &m.arrays {
        // JointState allows empty velocity/effort arrays; anything else must match names.
        if !vals.is_empty() && vals.len() != m.names.len() {
            out.push(finding(
                "joint_length_mismatch",
                topic,
                i,
                t,
                Severity::Error,
                format!("{} names but {} {field} values", m.names.len(), vals.len()),
            ));
        }
        if let Some(k) = vals.iter().position(|v| !v.is_finite()) {
            out.push(finding(
                "joint_non_finite",
                topic,
                i,
                t,
                Severity::Error,
                format!("{field}[{k}] = {}", vals[k]),
            ));
        }
        if field == "position" || field == "positions" {
            for (n, v) in m.names.iter().zip(vals) {
                if let Some(&(lo, hi)) = opts.limits.get(n) {
                    if *v < lo || *v > hi {
                        out.push(finding(
                            "joint_outside_limits",
                            topic,
                            i,
                            t,
                            Severity::Error,
                            format!("{n} = {v:.4} outside [{lo}, {hi}]"),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// Command age checks (stale, stamped in the future) of joint messages, from their times
/// alone; nothing when `opts.stamps_on_log_axis` is false.
pub fn check_joint_ages(topic: &str, at: &[At], opts: &JointCheckOptions) -> Vec<Finding> {
    let mut out = Vec::new();
    if !opts.stamps_on_log_axis {
        return out;
    }
    for a in at {
        let (i, t) = (a.index, a.log_time_ns);
        let age = a.log_time_ns.saturating_sub(a.stamp_ns);
        if let Some(max) = opts.max_command_age_ns {
            if age > max {
                out.push(finding(
                    "command_stale",
                    topic,
                    i,
                    t,
                    Severity::Error,
                    format!(
                        "stamp is {:.1} ms old when recorded (limit {:.1} ms)",
                        age as f64 / 1e6,
                        max as f64 / 1e6
                    ),
                ));
            }
        }
        if age.saturating_neg() > opts.future_tolerance_ns {
            out.push(finding(
                "command_in_future",
                topic,
                i,
                t,
                Severity::Error,
                format!(
                    "stamp is {:.1} ms after the time it was recorded",
                    -(age as f64) / 1e6
                ),
            ));
        }
    }
    out
}

/// The fields of one `sensor_msgs/PointCloud2` that [`check_clouds`] needs.
#[derive(Debug, Clone)]
pub struct CloudMeta {
    /// Where the message sits.
    pub at: At,
    /// Rows (1 for an unordered cloud).
    pub height: u32,
    /// Points per row.
    pub width: u32,
    /// Length of one point, bytes.
    pub point_step: u32,
    /// Length of one row, bytes; at least `width` × `point_step`.
    pub row_step: u32,
    /// Length of the `data` array, bytes; must be `row_step` × `height`.
    pub data_len: usize,
    /// (name, offset, datatype, count) of each PointField.
    pub fields: Vec<(String, u32, u8, u32)>,
}

fn datatype_size(dt: u8) -> Option<u32> {
    match dt {
        1 | 2 => Some(1),
        3 | 4 => Some(2),
        5..=7 => Some(4),
        8 => Some(8),
        _ => None,
    }
}

/// PointCloud2 checks of one topic: `row_step` too small, `data` length against `row_step` × height, fields with an unknown datatype or ending past `point_step`.
pub fn check_clouds(topic: &str, clouds: &[CloudMeta]) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in clouds {
        let (i, t) = (c.at.index, c.at.log_time_ns);
        if (c.row_step as u64) < c.width as u64 * c.point_step as u64 {
            out.push(finding(
                "cloud_row_step_too_small",
                topic,
                i,
                t,
                Severity::Error,
                format!(
                    "row_step {} < width {} x point_step {}",
                    c.row_step, c.width, c.point_step
                ),
            ));
        }
        let expect = c.row_step as u64 * c.height as u64;
        if c.data_len as u64 != expect {
            out.push(finding(
                "cloud_data_size_mismatch",
                topic,
                i,
                t,
                Severity::Error,
                format!(
                    "data has {} bytes, row_step {} x height {} = {expect}",
                    c.data_len, c.row_step, c.height
                ),
            ));
        }
        for (name, off, dt, count) in &c.fields {
            match datatype_size(*dt) {
                None => out.push(finding(
                    "cloud_field_bad_datatype",
                    topic,
                    i,
                    t,
                    Severity::Error,
                    format!("field '{name}' has datatype {dt}"),
                )),
                Some(sz) => {
                    if off + sz * (*count).max(1) > c.point_step {
                        out.push(finding(
                            "cloud_field_outside_point",
                            topic,
                            i,
                            t,
                            Severity::Error,
                            format!(
                                "field '{name}' ends at byte {} of a {}-byte point",
                                off + sz * (*count).max(1),
                                c.point_step
                            ),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// Stamp checks for any stamped topic: unset (zero) stamps, and stamps before the bag start by
/// more than `before_start_ns` (only meaningful when stamps and log times share an axis).
pub fn check_stamps(
    topic: &str,
    at: &[At],
    bag_start_ns: i64,
    before_start_ns: i64,
    same_axis: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for a in at {
        if a.stamp_ns == 0 {
            out.push(finding(
                "stamp_zero",
                topic,
                a.index,
                a.log_time_ns,
                Severity::Error,
                "header.stamp is 0 (never set)".into(),
            ));
        } else if same_axis && a.stamp_ns < bag_start_ns - before_start_ns {
            out.push(finding(
                "stamp_before_bag_start",
                topic,
                a.index,
                a.log_time_ns,
                Severity::Error,
                format!(
                    "stamp is {:.3} s before the bag starts",
                    (bag_start_ns - a.stamp_ns) as f64 / 1e9
                ),
            ));
        }
    }
    out
}

/// Sorts findings deterministically: topic, index, code.
pub fn sort_findings(v: &mut [Finding]) {
    v.sort_by(|a, b| {
        a.topic
            .cmp(&b.topic)
            .then(a.index.cmp(&b.index))
            .then(a.code.cmp(&b.code))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(i: usize) -> At {
        At {
            index: i,
            log_time_ns: i as i64,
            stamp_ns: 100 + i as i64,
        }
    }

    fn img(i: usize, step: u32, len: usize) -> ImageMeta {
        ImageMeta {
            at: at(i),
            frame_id: "cam".into(),
            height: 2,
            width: 4,
            encoding: "rgb8".into(),
            is_bigendian: 0,
            step,
            data_len: len,
        }
    }

    #[test]
    fn image_checks_find_each_fault_once() {
        let f = check_images(
            "/img",
            &[
                img(0, 12, 24),
                img(1, 10, 20),
                img(2, 12, 23),
                img(3, 16, 32),
            ],
        );
        let codes: Vec<(usize, &str)> = f.iter().map(|x| (x.index, x.code.as_str())).collect();
        assert_eq!(
            codes,
            vec![
                (1, "image_step_too_small"),
                (2, "image_data_size_mismatch"),
                (3, "image_row_padding")
            ]
        );
    }

    #[test]
    fn camera_info_checks() {
        let mut k = [400.0, 0.0, 2.0, 0.0, 400.0, 1.0, 0.0, 0.0, 1.0];
        let ok = CameraInfoMeta {
            at: at(0),
            frame_id: "cam".into(),
            height: 2,
            width: 4,
            distortion_model: "plumb_bob".into(),
            d_len: 5,
            k,
        };
        k[0] = 0.0;
        let bad_k = CameraInfoMeta {
            at: at(1),
            k,
            ..ok.clone()
        };
        let bad_frame = CameraInfoMeta {
            at: at(2),
            frame_id: "other".into(),
            ..ok.clone()
        };
        let images = vec![img(0, 12, 24), img(1, 12, 24), img(2, 12, 24)];
        let f = check_camera_info("/info", &[ok, bad_k, bad_frame], Some("/img"), &images);
        let codes: Vec<(usize, &str)> = f.iter().map(|x| (x.index, x.code.as_str())).collect();
        assert_eq!(
            codes,
            vec![
                (1, "camera_info_uncalibrated"),
                (2, "camera_info_frame_mismatch")
            ]
        );
    }

    #[test]
    fn joint_checks() {
        let m = JointMeta {
            at: at(0),
            names: vec!["a".into(), "b".into(), "a".into()],
            arrays: vec![
                ("position".into(), vec![0.0, f64::NAN]),
                ("velocity".into(), vec![]),
            ],
        };
        let f = check_joints("/js", &[m], &JointCheckOptions::default());
        let mut codes: Vec<&str> = f.iter().map(|x| x.code.as_str()).collect();
        codes.sort();
        assert_eq!(
            codes,
            vec![
                "joint_duplicate_name",
                "joint_length_mismatch",
                "joint_non_finite"
            ]
        );
    }

    #[test]
    fn joint_ages_default_tolerance() {
        // Stamps relative to log time 1 s: 3 ms ahead is jitter, 6 ms ahead is in the future,
        // 30 ms behind is stale with a 20 ms limit.
        let at = |index: usize, lead_ns: i64| At {
            index,
            log_time_ns: 1_000_000_000,
            stamp_ns: 1_000_000_000 + lead_ns,
        };
        let times = [at(0, 3_000_000), at(1, 6_000_000), at(2, -30_000_000)];
        let opts = JointCheckOptions {
            max_command_age_ns: Some(20_000_000),
            stamps_on_log_axis: true,
            ..Default::default()
        };
        let f = check_joint_ages("/cmd", &times, &opts);
        let codes: Vec<(usize, &str)> = f.iter().map(|x| (x.index, x.code.as_str())).collect();
        assert_eq!(codes, vec![(1, "command_in_future"), (2, "command_stale")]);
        // Stamps on another axis than log time: no age checks at all.
        let off = JointCheckOptions {
            stamps_on_log_axis: false,
            ..opts
        };
        assert!(check_joint_ages("/cmd", &times, &off).is_empty());
    }

    #[test]
    fn cloud_checks() {
        let c = CloudMeta {
            at: at(0),
            height: 1,
            width: 4,
            point_step: 16,
            row_step: 64,
            data_len: 60,
            fields: vec![("x".into(), 0, 7, 1), ("i".into(), 14, 7, 1)],
        };
        let f = check_clouds("/pc", &[c]);
        let codes: Vec<&str> = f.iter().map(|x| x.code.as_str()).collect();
        assert_eq!(
            codes,
            vec!["cloud_data_size_mismatch", "cloud_field_outside_point"]
        );
    }

    #[test]
    fn finding_codes_lists_every_code_the_checks_give() {
        let src = include_str!("lib.rs");
        let body = &src[..src.find("#[cfg(test)]").unwrap()];
        let mut given: Vec<&str> = body
            .split("finding(")
            .skip(1)
            .filter_map(|rest| {
                let rest = rest.trim_start().strip_prefix('"')?;
                Some(&rest[..rest.find('"')?])
            })
            .collect();
        given.sort();
        given.dedup();
        assert!(given.len() >= 20, "{given:?}");
        for c in &given {
            assert!(
                FINDING_CODES.contains(c),
                "{c} is missing from FINDING_CODES"
            );
        }
        let mut sorted = FINDING_CODES.to_vec();
        sorted.sort();
        assert_eq!(sorted, FINDING_CODES, "FINDING_CODES is sorted");
    }
}
