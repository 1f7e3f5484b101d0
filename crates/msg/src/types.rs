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
    pub sec: i32,
    pub nanosec: u32,
}

impl Time {
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
    pub sec: i32,
    pub nanosec: u32,
}

impl Duration {
    pub fn to_ns(self) -> i64 {
        self.sec as i64 * NS_PER_S + self.nanosec as i64
    }
    pub fn from_ns(ns: i64) -> Self {
        let (sec, nanosec) = split_ns(ns);
        Duration { sec, nanosec }
    }
}

/// std_msgs/Header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub stamp: Time,
    pub frame_id: String,
}

/// sensor_msgs/JointState.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JointState {
    pub header: Header,
    pub name: Vec<String>,
    pub position: Vec<f64>,
    pub velocity: Vec<f64>,
    pub effort: Vec<f64>,
}

/// trajectory_msgs/JointTrajectoryPoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JointTrajectoryPoint {
    pub positions: Vec<f64>,
    pub velocities: Vec<f64>,
    pub accelerations: Vec<f64>,
    pub effort: Vec<f64>,
    pub time_from_start: Duration,
}

/// trajectory_msgs/JointTrajectory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JointTrajectory {
    pub header: Header,
    pub joint_names: Vec<String>,
    pub points: Vec<JointTrajectoryPoint>,
}

/// rosgraph_msgs/Clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock {
    pub clock: Time,
}

/// sensor_msgs/Image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub encoding: String,
    pub is_bigendian: u8,
    pub step: u32,
    pub data: Vec<u8>,
}

/// sensor_msgs/RegionOfInterest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionOfInterest {
    pub x_offset: u32,
    pub y_offset: u32,
    pub height: u32,
    pub width: u32,
    pub do_rectify: bool,
}

/// sensor_msgs/CameraInfo (ROS 2 lowercase names `d`, `k`, `r`, `p`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraInfo {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub distortion_model: String,
    pub d: Vec<f64>,
    pub k: [f64; 9],
    pub r: [f64; 9],
    pub p: [f64; 12],
    pub binning_x: u32,
    pub binning_y: u32,
    pub roi: RegionOfInterest,
}

/// std_msgs/Float64.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Float64 {
    pub data: f64,
}

/// sensor_msgs/PointField.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointField {
    pub name: String,
    pub offset: u32,
    pub datatype: u8,
    pub count: u32,
}

/// sensor_msgs/PointCloud2.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointCloud2 {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub fields: Vec<PointField>,
    pub is_bigendian: bool,
    pub point_step: u32,
    pub row_step: u32,
    pub data: Vec<u8>,
    pub is_dense: bool,
}

/// geometry_msgs/Vector3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Vector3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

/// geometry_msgs/Quaternion.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    pub x: f64,
    pub y: f64,
    pub z: f64,
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
    pub header: Header,
    pub orientation: Quaternion,
    pub orientation_covariance: [f64; 9],
    pub angular_velocity: Vector3,
    pub angular_velocity_covariance: [f64; 9],
    pub linear_acceleration: Vector3,
    pub linear_acceleration_covariance: [f64; 9],
}

/// geometry_msgs/Transform.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Transform {
    pub translation: Vector3,
    pub rotation: Quaternion,
}

/// geometry_msgs/TransformStamped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransformStamped {
    pub header: Header,
    pub child_frame_id: String,
    pub transform: Transform,
}

/// tf2_msgs/TFMessage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TFMessage {
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

/// Encode `value` as CDR little-endian with the encapsulation header
/// (`00 01 00 00`), as ROS 2 on x86/ARM writes it. Uses the `cdr` crate,
/// whose alignment is relative to the end of the header and whose strings
/// carry the NUL terminator, matching ROS 2. Fails only for values CDR cannot
/// represent (Option, non-ASCII `char`, lengths over u32).
pub fn encode_typed<T: Serialize>(value: &T) -> Result<Vec<u8>, TypedError> {
    cdr::serialize::<_, _, cdr::CdrLe>(value, cdr::Infinite)
        .map_err(|e| TypedError::Encode(e.to_string()))
}
