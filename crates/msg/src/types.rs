//! Typed (serde) message structs for the types bagscope analyses directly,
//! plus `decode_typed` / `encode_typed` for CDR payloads.
//!
//! Field names and order follow the ROS 2 (rolling) definitions exactly, as
//! CDR is positional. Fixed arrays are Rust arrays (`float64[9]` → `[f64; 9]`).

use crate::cdr_de::Deserializer;
use crate::decode::Reader;
use crate::error::TypedError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A ROS message type with a known canonical name.
pub trait RosMessage {
    /// Canonical type name, `pkg/msg/Type`.
    const TYPE_NAME: &'static str;
}

macro_rules! ros_type {
    ($t:ty, $n:expr) => {
        impl RosMessage for $t {
            const TYPE_NAME: &'static str = $n;
        }
    };
}

const NS_PER_S: i64 = 1_000_000_000;

/// Split ns into (sec, nanosec) with nanosec in [0, 1e9). Saturates at the
/// i32 range of `sec`.
fn split_ns(ns: i64) -> (i32, u32) {
    let sec = ns.div_euclid(NS_PER_S);
    let nsec = ns.rem_euclid(NS_PER_S) as u32;
    if sec > i32::MAX as i64 {
        (i32::MAX, 999_999_999)
    } else if sec < i32::MIN as i64 {
        (i32::MIN, 0)
    } else {
        (sec as i32, nsec)
    }
}

/// builtin_interfaces/Time.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Time {
    /// Whole seconds (since the epoch for wall time, since start for sim time).
    pub sec: i32,
    /// Nanoseconds within the second; valid values are below 10⁹.
    pub nanosec: u32,
}

impl Time {
    /// The time as one count of nanoseconds: `sec · 10⁹ + nanosec`.
    pub fn to_ns(self) -> i64 {
        self.sec as i64 * NS_PER_S + self.nanosec as i64
    }
    /// Negative times get a negative `sec` and `nanosec` in [0, 1e9).
    pub fn from_ns(ns: i64) -> Self {
        let (sec, nanosec) = split_ns(ns);
        Time { sec, nanosec }
    }
}

/// builtin_interfaces/Duration.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Duration {
    /// Whole seconds (may be negative).
    pub sec: i32,
    /// Nanoseconds added to `sec`; valid values are below 10⁹.
    pub nanosec: u32,
}

impl Duration {
    /// The duration in nanoseconds: `sec · 10⁹ + nanosec`.
    pub fn to_ns(self) -> i64 {
        self.sec as i64 * NS_PER_S + self.nanosec as i64
    }
    /// Negative durations get a negative `sec` and `nanosec` in [0, 1e9); saturates at the `i32` range of `sec`.
    pub fn from_ns(ns: i64) -> Self {
        let (sec, nanosec) = split_ns(ns);
        Duration { sec, nanosec }
    }
}

/// std_msgs/Header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// When the data was acquired (the producer's clock: wall or sim time).
    pub stamp: Time,
    /// Coordinate frame the data is expressed in.
    pub frame_id: String,
}

/// sensor_msgs/JointState.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JointState {
    /// Acquisition time and frame.
    pub header: Header,
    /// Joint names; the value arrays follow this order.
    pub name: Vec<String>,
    /// Joint positions (rad or m); empty or one per name.
    pub position: Vec<f64>,
    /// Joint velocities (rad/s or m/s); empty or one per name.
    pub velocity: Vec<f64>,
    /// Joint efforts (N·m or N); empty or one per name.
    pub effort: Vec<f64>,
}

/// trajectory_msgs/JointTrajectoryPoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JointTrajectoryPoint {
    /// Positions (rad or m), in the trajectory's `joint_names` order.
    pub positions: Vec<f64>,
    /// Velocities (rad/s or m/s); empty or one per joint.
    pub velocities: Vec<f64>,
    /// Accelerations (rad/s² or m/s²); empty or one per joint.
    pub accelerations: Vec<f64>,
    /// Efforts (N·m or N); empty or one per joint.
    pub effort: Vec<f64>,
    /// When this point is to be reached, relative to `header.stamp` of the trajectory.
    pub time_from_start: Duration,
}

/// trajectory_msgs/JointTrajectory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JointTrajectory {
    /// Start time of the trajectory (zero: start now) and frame.
    pub header: Header,
    /// Joint names the points' values follow.
    pub joint_names: Vec<String>,
    /// The points, in increasing `time_from_start`.
    pub points: Vec<JointTrajectoryPoint>,
}

/// rosgraph_msgs/Clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock {
    /// The current sim time.
    pub clock: Time,
}

/// sensor_msgs/Image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// Acquisition time and camera optical frame.
    pub header: Header,
    /// Rows, pixels.
    pub height: u32,
    /// Columns, pixels.
    pub width: u32,
    /// Pixel encoding, e.g. `rgb8`, `mono16` (`sensor_msgs/image_encodings.hpp`).
    pub encoding: String,
    /// 1 when multi-byte channels are big-endian, else 0.
    pub is_bigendian: u8,
    /// Length of one row, bytes.
    pub step: u32,
    /// Pixel data, `step · height` bytes.
    pub data: Vec<u8>,
}

/// sensor_msgs/RegionOfInterest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionOfInterest {
    /// Leftmost pixel of the region, pixels.
    pub x_offset: u32,
    /// Topmost pixel of the region, pixels.
    pub y_offset: u32,
    /// Height of the region, pixels (0: the full image).
    pub height: u32,
    /// Width of the region, pixels (0: the full image).
    pub width: u32,
    /// Whether a rectified region of interest is meant.
    pub do_rectify: bool,
}

/// sensor_msgs/CameraInfo (ROS 2 lowercase names `d`, `k`, `r`, `p`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraInfo {
    /// Acquisition time and camera optical frame; matches the image it describes.
    pub header: Header,
    /// Calibrated image height, pixels.
    pub height: u32,
    /// Calibrated image width, pixels.
    pub width: u32,
    /// Distortion model, e.g. `plumb_bob`, `rational_polynomial`, `equidistant`.
    pub distortion_model: String,
    /// Distortion coefficients (`D`); how many depends on `distortion_model`.
    pub d: Vec<f64>,
    /// Intrinsic matrix `K` (3×3, row-major); all zero when uncalibrated.
    pub k: [f64; 9],
    /// Rectification rotation `R` (3×3, row-major).
    pub r: [f64; 9],
    /// Projection matrix `P` (3×4, row-major).
    pub p: [f64; 12],
    /// Horizontal binning (0 or 1: none).
    pub binning_x: u32,
    /// Vertical binning (0 or 1: none).
    pub binning_y: u32,
    /// Region of interest within the full image.
    pub roi: RegionOfInterest,
}

/// std_msgs/Float64.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Float64 {
    /// The value.
    pub data: f64,
}

/// sensor_msgs/PointField.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointField {
    /// Field name, e.g. `x`, `intensity`.
    pub name: String,
    /// Byte offset of the field within a point.
    pub offset: u32,
    /// Element type code: 1 INT8, 2 UINT8, 3 INT16, 4 UINT16, 5 INT32, 6 UINT32, 7 FLOAT32, 8 FLOAT64.
    pub datatype: u8,
    /// Number of elements of the field.
    pub count: u32,
}

/// sensor_msgs/PointCloud2.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointCloud2 {
    /// Acquisition time and frame.
    pub header: Header,
    /// Rows (1 for an unordered cloud).
    pub height: u32,
    /// Points per row.
    pub width: u32,
    /// Layout of one point.
    pub fields: Vec<PointField>,
    /// Whether multi-byte fields are big-endian.
    pub is_bigendian: bool,
    /// Length of one point, bytes.
    pub point_step: u32,
    /// Length of one row, bytes.
    pub row_step: u32,
    /// Point data, `row_step · height` bytes.
    pub data: Vec<u8>,
    /// True when the cloud holds no invalid (NaN) points.
    pub is_dense: bool,
}

/// geometry_msgs/Vector3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Vector3 {
    /// x component.
    pub x: f64,
    /// y component.
    pub y: f64,
    /// z component.
    pub z: f64,
}

/// geometry_msgs/Quaternion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    /// x component of the vector part.
    pub x: f64,
    /// y component of the vector part.
    pub y: f64,
    /// z component of the vector part.
    pub z: f64,
    /// Scalar part (1 for the identity).
    pub w: f64,
}

impl Default for Quaternion {
    /// Identity rotation, as the ROS 2 default values specify.
    fn default() -> Self {
        Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        }
    }
}

/// sensor_msgs/Imu.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Imu {
    /// Acquisition time and IMU frame.
    pub header: Header,
    /// Orientation estimate.
    pub orientation: Quaternion,
    /// Row-major 3×3 covariance of `orientation` about x, y, z (rad²); element 0 = −1: no orientation estimate.
    pub orientation_covariance: [f64; 9],
    /// Angular velocity, rad/s.
    pub angular_velocity: Vector3,
    /// Row-major 3×3 covariance of `angular_velocity`; element 0 = −1: not provided.
    pub angular_velocity_covariance: [f64; 9],
    /// Linear acceleration, m/s².
    pub linear_acceleration: Vector3,
    /// Row-major 3×3 covariance of `linear_acceleration`; element 0 = −1: not provided.
    pub linear_acceleration_covariance: [f64; 9],
}

/// geometry_msgs/Transform.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    /// Translation, m.
    pub translation: Vector3,
    /// Rotation.
    pub rotation: Quaternion,
}

/// geometry_msgs/TransformStamped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransformStamped {
    /// Time of the transform and parent frame (`header.frame_id`).
    pub header: Header,
    /// The frame the transform maps from (the child of `header.frame_id`).
    pub child_frame_id: String,
    /// Pose of `child_frame_id` in `header.frame_id`.
    pub transform: Transform,
}

/// tf2_msgs/TFMessage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TFMessage {
    /// The transforms of one `/tf` or `/tf_static` message.
    pub transforms: Vec<TransformStamped>,
}

ros_type!(Time, "builtin_interfaces/msg/Time");
ros_type!(Duration, "builtin_interfaces/msg/Duration");
ros_type!(Header, "std_msgs/msg/Header");
ros_type!(JointState, "sensor_msgs/msg/JointState");
ros_type!(
    JointTrajectoryPoint,
    "trajectory_msgs/msg/JointTrajectoryPoint"
);
ros_type!(JointTrajectory, "trajectory_msgs/msg/JointTrajectory");
ros_type!(Clock, "rosgraph_msgs/msg/Clock");
ros_type!(Image, "sensor_msgs/msg/Image");
ros_type!(RegionOfInterest, "sensor_msgs/msg/RegionOfInterest");
ros_type!(CameraInfo, "sensor_msgs/msg/CameraInfo");
ros_type!(Float64, "std_msgs/msg/Float64");
ros_type!(PointField, "sensor_msgs/msg/PointField");
ros_type!(PointCloud2, "sensor_msgs/msg/PointCloud2");
ros_type!(Vector3, "geometry_msgs/msg/Vector3");
ros_type!(Quaternion, "geometry_msgs/msg/Quaternion");
ros_type!(Imu, "sensor_msgs/msg/Imu");
ros_type!(Transform, "geometry_msgs/msg/Transform");
ros_type!(TransformStamped, "geometry_msgs/msg/TransformStamped");
ros_type!(TFMessage, "tf2_msgs/msg/TFMessage");

/// Decode a CDR payload (with its 4-byte encapsulation header, either
/// endianness) into `T`. Trailing bytes are ignored (middleware padding).
pub fn decode_typed<T: DeserializeOwned>(payload: &[u8]) -> Result<T, TypedError> {
    let r = Reader::new(payload)?;
    let mut de = Deserializer { r };
    Ok(T::deserialize(&mut de)?)
}

/// One transform of a `tf2_msgs/msg/TFMessage` as [`tf_frames`] reads it: its stamp and
/// frames, the names borrowed from the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TfFrames<'a> {
    /// `header.stamp`, ns.
    pub stamp_ns: i64,
    /// `header.frame_id`: the parent frame.
    pub parent: &'a str,
    /// `child_frame_id`.
    pub child: &'a str,
}

/// The stamps and frames of a `tf2_msgs/msg/TFMessage` payload, in message order, without
/// copying the frame names or keeping the poses: the reads and checks of
/// `decode_typed::<TFMessage>` (every field read in order, the same alignment, lengths and
/// UTF-8 checks), so exactly the payloads it decodes give a result, with the same values.
/// Timing tables and TF timing read millions of these; the owned decode allocates every name.
pub fn tf_frames(payload: &[u8]) -> Result<Vec<TfFrames<'_>>, TypedError> {
    let mut out = Vec::new();
    let mut bad: Option<crate::error::DecodeError> = None;
    tf_frames_raw(payload, |_, stamp_ns, parent, child| {
        if bad.is_some() {
            return;
        }
        match (parent.utf8(), child.utf8()) {
            (Ok(parent), Ok(child)) => out.push(TfFrames {
                stamp_ns,
                parent,
                child,
            }),
            (Err(e), _) | (_, Err(e)) => bad = Some(e),
        }
    })?;
    match bad {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}

/// A frame name of a TF payload as [`tf_frames_raw`] reads it: its bytes (the CDR string
/// without its NUL), not yet checked as UTF-8.
#[derive(Debug, Clone, Copy)]
pub struct RawFrame<'a> {
    /// The name's bytes.
    pub bytes: &'a [u8],
    /// Where its length field starts in the payload (for the error).
    offset: usize,
}

impl<'a> RawFrame<'a> {
    /// The name as text: the check [`tf_frames`] makes (a name that is not UTF-8 makes the
    /// message undecodable).
    pub fn utf8(&self) -> Result<&'a str, crate::error::DecodeError> {
        std::str::from_utf8(self.bytes).map_err(|_| crate::error::DecodeError {
            offset: self.offset,
            path: String::new(),
            kind: crate::error::DecodeErrorKind::InvalidUtf8,
        })
    }
}

/// [`tf_frames`] handing each transform to `f` (its place in the message, stamp, parent and
/// child) as it is read, nothing allocated: every read and check of [`tf_frames`] but the
/// names' UTF-8 check, which is the caller's ([`RawFrame::utf8`]; a caller that has checked
/// the same bytes before need not again). Returns the number of transforms; on an error `f`
/// may have seen the transforms before it, which the caller then drops.
pub fn tf_frames_raw<'a>(
    payload: &'a [u8],
    mut f: impl FnMut(usize, i64, RawFrame<'a>, RawFrame<'a>),
) -> Result<usize, TypedError> {
    tf_walk(payload, |k, _, stamp, parent, child, _| {
        f(k, stamp, parent, child)
    })
}

/// The reads of [`tf_frames_raw`], also handing over where each stamp lies and where each
/// name ends (what [`TfLayout`] keeps).
fn tf_walk<'a>(
    payload: &'a [u8],
    mut f: impl FnMut(usize, usize, i64, RawFrame<'a>, RawFrame<'a>, usize),
) -> Result<usize, TypedError> {
    let lift = |(offset, kind)| crate::error::DecodeError {
        offset,
        path: String::new(),
        kind,
    };
    let mut r = Reader::new(payload)?;
    let n = r.count(1).map_err(lift)?;
    for k in 0..n {
        // `u32` aligns first: aligned here to know where the stamp lies.
        r.align(4).map_err(lift)?;
        let stamp_at = r.pos;
        let sec = r.u32().map_err(lift)? as i32;
        let nanosec = r.u32().map_err(lift)?;
        let at = r.pos;
        let parent = RawFrame {
            bytes: r.string_bytes().map_err(lift)?,
            offset: at,
        };
        let at = r.pos;
        let child = RawFrame {
            bytes: r.string_bytes().map_err(lift)?,
            offset: at,
        };
        let child_end = r.pos;
        // translation (x, y, z) and rotation (x, y, z, w): seven float64 the owned decode
        // reads one after the other, aligned to 8 once (after the first they are aligned).
        r.align(8).map_err(lift)?;
        r.take(56).map_err(lift)?;
        f(
            k,
            stamp_at,
            Time { sec, nanosec }.to_ns(),
            parent,
            child,
            child_end,
        );
    }
    Ok(n)
}

/// Where a TF payload's stamps lie and what its frame names are, learnt from one payload
/// [`tf_frames_raw`] reads: a payload of the same length whose header, transform count and
/// names (with their length fields) are the same bytes is read by the same steps, so its
/// stamps lie at the same places and its names are the same (a TF publisher sends the same
/// frames in every message). [`TfLayout::stamps`] then reads only the stamps.
#[derive(Debug, Clone)]
pub struct TfLayout {
    /// The payload's length.
    len: usize,
    /// The encapsulation header and the transform count.
    head: [u8; 8],
    /// Little-endian payload.
    le: bool,
    /// Per name (parent, then child, for each transform): where its length field starts (or
    /// the alignment before it) and where the name ends.
    names: Vec<(usize, usize)>,
    /// Those bytes of the payload it was learnt from, one name after the other.
    bytes: Vec<u8>,
    /// Where each transform's stamp lies.
    stamps: Vec<usize>,
}

impl TfLayout {
    /// The layout of `payload`; None when [`tf_frames_raw`] would not read it. Its names still
    /// need their UTF-8 check, as [`tf_frames_raw`]'s do.
    pub fn learn(payload: &[u8]) -> Option<TfLayout> {
        let head: [u8; 8] = payload.get(..8)?.try_into().ok()?;
        let mut names = Vec::new();
        let mut bytes = Vec::new();
        let mut stamps = Vec::new();
        tf_walk(payload, |_, stamp_at, _, parent, child, child_end| {
            stamps.push(stamp_at);
            for (s, e) in [(parent.offset, child.offset), (child.offset, child_end)] {
                names.push((s, e));
                bytes.extend_from_slice(&payload[s..e]);
            }
        })
        .ok()?;
        Some(TfLayout {
            len: payload.len(),
            le: head[1] & 1 == 1,
            head,
            names,
            bytes,
            stamps,
        })
    }

    /// Transforms per message.
    pub fn transforms(&self) -> usize {
        self.stamps.len()
    }

    /// Whether `payload` is read by the same steps as the payload this was learnt from, with
    /// the same names.
    #[inline]
    pub fn matches(&self, payload: &[u8]) -> bool {
        if payload.len() != self.len || payload[..8] != self.head {
            return false;
        }
        let mut at = 0;
        for &(s, e) in &self.names {
            let n = e - s;
            if payload[s..e] != self.bytes[at..at + n] {
                return false;
            }
            at += n;
        }
        true
    }

    /// The stamps of a payload this [`TfLayout::matches`], in message order (ns).
    #[inline]
    pub fn stamps<'p>(&'p self, payload: &'p [u8]) -> impl Iterator<Item = i64> + 'p {
        let u32_at = move |p: usize| {
            let b: [u8; 4] = payload[p..p + 4].try_into().unwrap_or_default();
            if self.le {
                u32::from_le_bytes(b)
            } else {
                u32::from_be_bytes(b)
            }
        };
        self.stamps.iter().map(move |&p| {
            Time {
                sec: u32_at(p) as i32,
                nanosec: u32_at(p + 4),
            }
            .to_ns()
        })
    }
}

/// Encode `value` as CDR little-endian with the encapsulation header
/// (`00 01 00 00`), as ROS 2 on x86/ARM writes it. Uses the `cdr` crate,
/// whose alignment is relative to the end of the header and whose strings
/// carry the NUL terminator, matching ROS 2. Fails only for values CDR cannot
/// represent (Option, non-ASCII `char`, lengths over u32).
pub fn encode_typed<T: Serialize>(value: &T) -> Result<Vec<u8>, TypedError> {
    cdr::serialize::<_, _, cdr::CdrLe>(value, cdr::Infinite)
        .map_err(|e| TypedError::Encode(e.to_string()))
}

/// A run of CDR `float64` values read in place (either byte order).
#[derive(Debug, Clone, Copy)]
pub struct F64s<'a> {
    bytes: &'a [u8],
    le: bool,
}

impl F64s<'_> {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// True when no value is infinite or NaN.
    pub fn all_finite(&self) -> bool {
        // The exponent field all ones is what makes a float64 infinite or NaN.
        const EXP: u64 = 0x7ff0_0000_0000_0000;
        let words = self.bytes.chunks_exact(8);
        if self.le {
            words
                .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .all(|w| w & EXP != EXP)
        } else {
            words
                .map(|b| u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .all(|w| w & EXP != EXP)
        }
    }

    /// The values, in order.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        self.bytes.chunks_exact(8).map(move |b| {
            let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
            f64::from_bits(if self.le {
                u64::from_le_bytes(a)
            } else {
                u64::from_be_bytes(a)
            })
        })
    }
}

/// A `sensor_msgs/JointState` read in place: names borrowed from the payload, the value arrays
/// where they lie. For checks that look at every message of a long recording and keep
/// nothing: no allocation beyond the list of names.
#[derive(Debug, Clone)]
pub struct JointStateView<'a> {
    /// Joint names, in message order.
    pub names: Vec<&'a str>,
    /// Joint positions.
    pub position: F64s<'a>,
    /// Joint velocities.
    pub velocity: F64s<'a>,
    /// Joint efforts.
    pub effort: F64s<'a>,
}

impl<'a> JointStateView<'a> {
    /// Reads `payload` as a JointState. `None` exactly when [`decode_typed`]`::<JointState>`
    /// fails on it (the same reads, bounds and UTF-8 checks; trailing bytes ignored): the
    /// caller asks `decode_typed` for the reason.
    pub fn read(payload: &'a [u8]) -> Option<Self> {
        let mut r = Reader::new(payload).ok()?;
        // header: stamp (sec, nanosec), frame_id
        r.u32().ok()?;
        r.u32().ok()?;
        str_of(&mut r)?;
        let (names, _) = names_of(payload, &mut r)?;
        let position = f64s_of(&mut r)?;
        let velocity = f64s_of(&mut r)?;
        let effort = f64s_of(&mut r)?;
        Some(JointStateView {
            names,
            position,
            velocity,
            effort,
        })
    }
}

/// Where a JointState's names lie in its payload: the bytes from the end of `frame_id` to the
/// end of the last name (count, lengths, padding, text), the CDR alignment they start at and
/// the byte order. Equal runs hold the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRun<'a> {
    /// Offset of the run's first byte from the CDR origin, modulo 8.
    pub phase: usize,
    /// True for little-endian CDR.
    pub le: bool,
    /// The run's bytes.
    pub bytes: &'a [u8],
}

/// A [`JointStateView`] read by [`JointStateView::read_unless_names`].
#[derive(Debug, Clone)]
pub struct JointStateRead<'a> {
    /// The message; `names` is empty when they were not read again.
    pub view: JointStateView<'a>,
    /// Number of names.
    pub name_count: usize,
    /// Where the names lie.
    pub names: NameRun<'a>,
    /// True when the run equals the one given: the names are that run's and were not read.
    pub names_reused: bool,
}

impl<'a> JointStateView<'a> {
    /// [`JointStateView::read`], except that when the message's names lie in a run equal to
    /// `known` (a run an earlier successful read returned, e.g. the previous message's on the
    /// same topic) they are not read again: they parse to the same valid names. `None` exactly
    /// when `read` gives `None`.
    pub fn read_unless_names(
        payload: &'a [u8],
        known: Option<NameRun<'_>>,
    ) -> Option<JointStateRead<'a>> {
        let mut r = Reader::new(payload).ok()?;
        r.u32().ok()?;
        r.u32().ok()?;
        str_of(&mut r)?;
        let start = r.pos;
        let phase = (start - crate::decode::ENCAPSULATION_HEADER_LEN) % 8;
        if let Some(k) = known {
            let end = start.checked_add(k.bytes.len())?;
            if k.phase == phase && k.le == r.le && payload.get(start..end) == Some(k.bytes) {
                // The count, at most one per byte left, is within bounds here as it was there:
                // its names lie inside the run.
                let name_count = r.count(1).ok()?;
                r.pos = end;
                let position = f64s_of(&mut r)?;
                let velocity = f64s_of(&mut r)?;
                let effort = f64s_of(&mut r)?;
                return Some(JointStateRead {
                    view: JointStateView {
                        names: Vec::new(),
                        position,
                        velocity,
                        effort,
                    },
                    name_count,
                    names: NameRun {
                        phase,
                        le: r.le,
                        bytes: &payload[start..end],
                    },
                    names_reused: true,
                });
            }
        }
        let (names, end) = names_of(payload, &mut r)?;
        let position = f64s_of(&mut r)?;
        let velocity = f64s_of(&mut r)?;
        let effort = f64s_of(&mut r)?;
        Some(JointStateRead {
            name_count: names.len(),
            view: JointStateView {
                names,
                position,
                velocity,
                effort,
            },
            names: NameRun {
                phase,
                le: r.le,
                bytes: &payload[start..end],
            },
            names_reused: false,
        })
    }
}

/// The names of a JointState (their count, then each string) as the typed decoder reads them,
/// and the position after the last.
fn names_of<'a>(payload: &'a [u8], r: &mut Reader<'a>) -> Option<(Vec<&'a str>, usize)> {
    let n = r.count(1).ok()?;
    let mut raw: Vec<&'a [u8]> = Vec::with_capacity(n);
    let first = r.pos;
    for _ in 0..n {
        raw.push(r.string_bytes().ok()?);
    }
    // Names are ASCII nearly always: then so is the whole run of them with their lengths
    // and padding, one fast check instead of one per name.
    let names: Vec<&'a str> = if payload[first..r.pos].is_ascii() {
        raw.iter()
            .map(|b| std::str::from_utf8(b).unwrap_or_default())
            .collect()
    } else {
        raw.iter()
            .map(|b| std::str::from_utf8(b).ok())
            .collect::<Option<_>>()?
    };
    Some((names, r.pos))
}

/// A CDR string as the typed decoder reads it (valid UTF-8 required).
fn str_of<'a>(r: &mut Reader<'a>) -> Option<&'a str> {
    std::str::from_utf8(r.string_bytes().ok()?).ok()
}

/// A `float64[]` as the typed decoder reads it: the count (at least one byte an element
/// left), then each value 8-aligned; after the first, the rest are aligned already.
fn f64s_of<'a>(r: &mut Reader<'a>) -> Option<F64s<'a>> {
    let n = r.count(1).ok()?;
    if n > 0 {
        r.align(8).ok()?;
    }
    let bytes = r.take(n.checked_mul(8)?).ok()?;
    Some(F64s { bytes, le: r.le })
}
