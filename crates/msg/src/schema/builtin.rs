//! Built-in definitions for common ROS 2 message types, used when a channel's
//! schema record is empty (some writers omit it) and to fill in dependencies
//! missing from a schema text. The texts are field lists only (no comments).

use super::{canonical_name, ros2msg::parse_single, MessageDef, MessageSchema};
use std::collections::HashMap;
use std::sync::OnceLock;

const TEXTS: &[(&str, &str)] = &[
    ("builtin_interfaces/msg/Time", "int32 sec\nuint32 nanosec\n"),
    ("builtin_interfaces/msg/Duration", "int32 sec\nuint32 nanosec\n"),
    // std_msgs
    ("std_msgs/msg/Header", "builtin_interfaces/Time stamp\nstring frame_id\n"),
    ("std_msgs/msg/String", "string data\n"),
    ("std_msgs/msg/Bool", "bool data\n"),
    ("std_msgs/msg/Byte", "byte data\n"),
    ("std_msgs/msg/Char", "char data\n"),
    ("std_msgs/msg/Empty", ""),
    ("std_msgs/msg/Float32", "float32 data\n"),
    ("std_msgs/msg/Float64", "float64 data\n"),
    ("std_msgs/msg/Int8", "int8 data\n"),
    ("std_msgs/msg/Int16", "int16 data\n"),
    ("std_msgs/msg/Int32", "int32 data\n"),
    ("std_msgs/msg/Int64", "int64 data\n"),
    ("std_msgs/msg/UInt8", "uint8 data\n"),
    ("std_msgs/msg/UInt16", "uint16 data\n"),
    ("std_msgs/msg/UInt32", "uint32 data\n"),
    ("std_msgs/msg/UInt64", "uint64 data\n"),
    ("std_msgs/msg/ColorRGBA", "float32 r\nfloat32 g\nfloat32 b\nfloat32 a\n"),
    ("std_msgs/msg/MultiArrayDimension", "string label\nuint32 size\nuint32 stride\n"),
    ("std_msgs/msg/MultiArrayLayout", "MultiArrayDimension[] dim\nuint32 data_offset\n"),
    ("std_msgs/msg/Float32MultiArray", "MultiArrayLayout layout\nfloat32[] data\n"),
    ("std_msgs/msg/Float64MultiArray", "MultiArrayLayout layout\nfloat64[] data\n"),
    ("std_msgs/msg/Int32MultiArray", "MultiArrayLayout layout\nint32[] data\n"),
    ("std_msgs/msg/Int64MultiArray", "MultiArrayLayout layout\nint64[] data\n"),
    ("std_msgs/msg/UInt8MultiArray", "MultiArrayLayout layout\nuint8[] data\n"),
    ("std_msgs/msg/ByteMultiArray", "MultiArrayLayout layout\nbyte[] data\n"),
    // geometry_msgs
    ("geometry_msgs/msg/Vector3", "float64 x\nfloat64 y\nfloat64 z\n"),
    ("geometry_msgs/msg/Point", "float64 x\nfloat64 y\nfloat64 z\n"),
    ("geometry_msgs/msg/Point32", "float32 x\nfloat32 y\nfloat32 z\n"),
    ("geometry_msgs/msg/Quaternion", "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n"),
    ("geometry_msgs/msg/Pose", "Point position\nQuaternion orientation\n"),
    ("geometry_msgs/msg/Pose2D", "float64 x\nfloat64 y\nfloat64 theta\n"),
    ("geometry_msgs/msg/PoseStamped", "std_msgs/Header header\nPose pose\n"),
    ("geometry_msgs/msg/PoseArray", "std_msgs/Header header\nPose[] poses\n"),
    ("geometry_msgs/msg/PoseWithCovariance", "Pose pose\nfloat64[36] covariance\n"),
    ("geometry_msgs/msg/PoseWithCovarianceStamped", "std_msgs/Header header\nPoseWithCovariance pose\n"),
    ("geometry_msgs/msg/PointStamped", "std_msgs/Header header\nPoint point\n"),
    ("geometry_msgs/msg/Vector3Stamped", "std_msgs/Header header\nVector3 vector\n"),
    ("geometry_msgs/msg/QuaternionStamped", "std_msgs/Header header\nQuaternion quaternion\n"),
    ("geometry_msgs/msg/Polygon", "Point32[] points\n"),
    ("geometry_msgs/msg/PolygonStamped", "std_msgs/Header header\nPolygon polygon\n"),
    ("geometry_msgs/msg/Transform", "Vector3 translation\nQuaternion rotation\n"),
    ("geometry_msgs/msg/TransformStamped", "std_msgs/Header header\nstring child_frame_id\nTransform transform\n"),
    ("geometry_msgs/msg/Twist", "Vector3 linear\nVector3 angular\n"),
    ("geometry_msgs/msg/TwistStamped", "std_msgs/Header header\nTwist twist\n"),
    ("geometry_msgs/msg/TwistWithCovariance", "Twist twist\nfloat64[36] covariance\n"),
    ("geometry_msgs/msg/TwistWithCovarianceStamped", "std_msgs/Header header\nTwistWithCovariance twist\n"),
    ("geometry_msgs/msg/Accel", "Vector3 linear\nVector3 angular\n"),
    ("geometry_msgs/msg/AccelStamped", "std_msgs/Header header\nAccel accel\n"),
    ("geometry_msgs/msg/AccelWithCovariance", "Accel accel\nfloat64[36] covariance\n"),
    ("geometry_msgs/msg/AccelWithCovarianceStamped", "std_msgs/Header header\nAccelWithCovariance accel\n"),
    ("geometry_msgs/msg/Wrench", "Vector3 force\nVector3 torque\n"),
    ("geometry_msgs/msg/WrenchStamped", "std_msgs/Header header\nWrench wrench\n"),
    ("geometry_msgs/msg/Inertia", "float64 m\nVector3 com\nfloat64 ixx\nfloat64 ixy\nfloat64 ixz\nfloat64 iyy\nfloat64 iyz\nfloat64 izz\n"),
    ("geometry_msgs/msg/InertiaStamped", "std_msgs/Header header\nInertia inertia\n"),
    // sensor_msgs
    ("sensor_msgs/msg/Image", "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n"),
    ("sensor_msgs/msg/CompressedImage", "std_msgs/Header header\nstring format\nuint8[] data\n"),
    ("sensor_msgs/msg/RegionOfInterest", "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n"),
    ("sensor_msgs/msg/CameraInfo", "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\nfloat64[] d\nfloat64[9] k\nfloat64[9] r\nfloat64[12] p\nuint32 binning_x\nuint32 binning_y\nRegionOfInterest roi\n"),
    ("sensor_msgs/msg/Imu", "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\nfloat64[9] orientation_covariance\ngeometry_msgs/Vector3 angular_velocity\nfloat64[9] angular_velocity_covariance\ngeometry_msgs/Vector3 linear_acceleration\nfloat64[9] linear_acceleration_covariance\n"),
    ("sensor_msgs/msg/JointState", "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort\n"),
    ("sensor_msgs/msg/MultiDOFJointState", "std_msgs/Header header\nstring[] joint_names\ngeometry_msgs/Transform[] transforms\ngeometry_msgs/Twist[] twist\ngeometry_msgs/Wrench[] wrench\n"),
    ("sensor_msgs/msg/PointField", "uint8 INT8=1\nuint8 UINT8=2\nuint8 INT16=3\nuint8 UINT16=4\nuint8 INT32=5\nuint8 UINT32=6\nuint8 FLOAT32=7\nuint8 FLOAT64=8\nstring name\nuint32 offset\nuint8 datatype\nuint32 count\n"),
    ("sensor_msgs/msg/PointCloud2", "std_msgs/Header header\nuint32 height\nuint32 width\nPointField[] fields\nbool is_bigendian\nuint32 point_step\nuint32 row_step\nuint8[] data\nbool is_dense\n"),
    ("sensor_msgs/msg/ChannelFloat32", "string name\nfloat32[] values\n"),
    ("sensor_msgs/msg/PointCloud", "std_msgs/Header header\ngeometry_msgs/Point32[] points\nChannelFloat32[] channels\n"),
    ("sensor_msgs/msg/LaserScan", "std_msgs/Header header\nfloat32 angle_min\nfloat32 angle_max\nfloat32 angle_increment\nfloat32 time_increment\nfloat32 scan_time\nfloat32 range_min\nfloat32 range_max\nfloat32[] ranges\nfloat32[] intensities\n"),
    ("sensor_msgs/msg/NavSatStatus", "int8 STATUS_NO_FIX=-1\nint8 STATUS_FIX=0\nint8 STATUS_SBAS_FIX=1\nint8 STATUS_GBAS_FIX=2\nuint16 SERVICE_GPS=1\nuint16 SERVICE_GLONASS=2\nuint16 SERVICE_COMPASS=4\nuint16 SERVICE_GALILEO=8\nint8 status\nuint16 service\n"),
    ("sensor_msgs/msg/NavSatFix", "uint8 COVARIANCE_TYPE_UNKNOWN=0\nuint8 COVARIANCE_TYPE_APPROXIMATED=1\nuint8 COVARIANCE_TYPE_DIAGONAL_KNOWN=2\nuint8 COVARIANCE_TYPE_KNOWN=3\nstd_msgs/Header header\nNavSatStatus status\nfloat64 latitude\nfloat64 longitude\nfloat64 altitude\nfloat64[9] position_covariance\nuint8 position_covariance_type\n"),
    ("sensor_msgs/msg/MagneticField", "std_msgs/Header header\ngeometry_msgs/Vector3 magnetic_field\nfloat64[9] magnetic_field_covariance\n"),
    ("sensor_msgs/msg/Temperature", "std_msgs/Header header\nfloat64 temperature\nfloat64 variance\n"),
    ("sensor_msgs/msg/FluidPressure", "std_msgs/Header header\nfloat64 fluid_pressure\nfloat64 variance\n"),
    ("sensor_msgs/msg/RelativeHumidity", "std_msgs/Header header\nfloat64 relative_humidity\nfloat64 variance\n"),
    ("sensor_msgs/msg/Illuminance", "std_msgs/Header header\nfloat64 illuminance\nfloat64 variance\n"),
    ("sensor_msgs/msg/Range", "uint8 ULTRASOUND=0\nuint8 INFRARED=1\nstd_msgs/Header header\nuint8 radiation_type\nfloat32 field_of_view\nfloat32 min_range\nfloat32 max_range\nfloat32 range\n"),
    ("sensor_msgs/msg/TimeReference", "std_msgs/Header header\nbuiltin_interfaces/Time time_ref\nstring source\n"),
    ("sensor_msgs/msg/Joy", "std_msgs/Header header\nfloat32[] axes\nint32[] buttons\n"),
    ("sensor_msgs/msg/BatteryState", "std_msgs/Header header\nfloat32 voltage\nfloat32 temperature\nfloat32 current\nfloat32 charge\nfloat32 capacity\nfloat32 design_capacity\nfloat32 percentage\nuint8 power_supply_status\nuint8 power_supply_health\nuint8 power_supply_technology\nbool present\nfloat32[] cell_voltage\nfloat32[] cell_temperature\nstring location\nstring serial_number\n"),
    // trajectory_msgs
    ("trajectory_msgs/msg/JointTrajectory", "std_msgs/Header header\nstring[] joint_names\nJointTrajectoryPoint[] points\n"),
    ("trajectory_msgs/msg/JointTrajectoryPoint", "float64[] positions\nfloat64[] velocities\nfloat64[] accelerations\nfloat64[] effort\nbuiltin_interfaces/Duration time_from_start\n"),
    ("trajectory_msgs/msg/MultiDOFJointTrajectory", "std_msgs/Header header\nstring[] joint_names\nMultiDOFJointTrajectoryPoint[] points\n"),
    ("trajectory_msgs/msg/MultiDOFJointTrajectoryPoint", "geometry_msgs/Transform[] transforms\ngeometry_msgs/Twist[] velocities\ngeometry_msgs/Twist[] accelerations\nbuiltin_interfaces/Duration time_from_start\n"),
    // misc
    ("rosgraph_msgs/msg/Clock", "builtin_interfaces/Time clock\n"),
    ("tf2_msgs/msg/TFMessage", "geometry_msgs/TransformStamped[] transforms\n"),
    ("nav_msgs/msg/Odometry", "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist\n"),
    ("nav_msgs/msg/Path", "std_msgs/Header header\ngeometry_msgs/PoseStamped[] poses\n"),
    ("nav_msgs/msg/MapMetaData", "builtin_interfaces/Time map_load_time\nfloat32 resolution\nuint32 width\nuint32 height\ngeometry_msgs/Pose origin\n"),
    ("nav_msgs/msg/OccupancyGrid", "std_msgs/Header header\nMapMetaData info\nint8[] data\n"),
    ("nav_msgs/msg/GridCells", "std_msgs/Header header\nfloat32 cell_width\nfloat32 cell_height\ngeometry_msgs/Point[] cells\n"),
    ("service_msgs/msg/ServiceEventInfo", "uint8 REQUEST_SENT=0\nuint8 REQUEST_RECEIVED=1\nuint8 RESPONSE_SENT=2\nuint8 RESPONSE_RECEIVED=3\nuint8 event_type\nbuiltin_interfaces/Time stamp\nchar[16] client_gid\nint64 sequence_number\n"),
    ("rcl_interfaces/msg/Log", "byte DEBUG=10\nbyte INFO=20\nbyte WARN=30\nbyte ERROR=40\nbyte FATAL=50\nbuiltin_interfaces/Time stamp\nuint8 level\nstring name\nstring msg\nstring file\nstring function\nuint32 line\n"),
];

fn table() -> &'static HashMap<String, MessageDef> {
    static TABLE: OnceLock<HashMap<String, MessageDef>> = OnceLock::new();
    TABLE.get_or_init(|| {
        TEXTS
            .iter()
            // The texts are ours and covered by tests; a bad one is skipped
            // rather than panicking at runtime.
            .filter_map(|(n, t)| parse_single(n, t).ok().map(|d| (n.to_string(), d)))
            .collect()
    })
}

/// A single built-in definition by canonical name.
pub(crate) fn def(canonical: &str) -> Option<&'static MessageDef> {
    table().get(canonical)
}

/// Resolve a built-in type (`pkg/msg/Type` or `pkg/Type`) to a full schema.
pub fn resolve(type_name: &str) -> Option<MessageSchema> {
    let n = canonical_name(type_name).ok()?;
    def(&n)?;
    MessageSchema::from_defs(&n, HashMap::new()).ok()
}

/// Names (canonical) of all built-in types.
pub fn names() -> impl Iterator<Item = &'static str> {
    TEXTS.iter().map(|(n, _)| *n)
}

/// rosbag2-style ros2msg schema text (root + `MSG:` dependency sections) for a
/// built-in type, for writers that need to emit an MCAP Schema record.
pub fn schema_text(type_name: &str) -> Option<String> {
    resolve(type_name).map(|s| s.to_ros2msg_text())
}

/// The Schema record a writer should emit for a topic: the recorded definition when there is
/// one (`encoding` defaulting to `ros2msg`), else the built-in one, else `None` (an empty
/// schema: readers cannot decode it). Returns (encoding, data, source: `bag` / `builtin`).
pub fn schema_for_writing(
    type_name: &str,
    encoding: &str,
    data: &[u8],
) -> Option<(String, Vec<u8>, &'static str)> {
    if !data.is_empty() {
        let enc = if encoding.is_empty() {
            "ros2msg"
        } else {
            encoding
        };
        return Some((enc.to_string(), data.to_vec(), "bag"));
    }
    schema_text(type_name).map(|t| ("ros2msg".to_string(), t.into_bytes(), "builtin"))
}
