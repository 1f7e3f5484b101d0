//! Schema parsing: ros2msg and ros2idl syntax and errors, the fixture and corpus schemas,
//! service-event schemas, and built-in definitions as channel fallback.

mod common;
use bagscope_msg::schema::{
    self, builtin, parse_ros2idl, parse_ros2msg, parse_service_event, ArrayKind, BaseType,
    FieldType, Primitive,
};
use bagscope_msg::{schema_for_channel, SchemaError};
use common::*;

fn prim(p: Primitive, a: ArrayKind) -> FieldType {
    FieldType {
        base: BaseType::Primitive(p),
        array: a,
    }
}

#[test]
fn ros2msg_syntax_features() {
    let text = "# leading comment\n\
        int32 FOO=3   # a constant\n\
        string S=\"x # not a comment\"\n\
        string T = 'y'\n\
        int32 x 5\n\
        string<=10 name\n\
        int32[<=5] small\n\
        int32[] many\n\
        float64[9] k\n\
        Header header\n\
        Point p\n\
        builtin_interfaces/Time t\n\
        geometry_msgs/msg/Vector3 v\n\
        wstring w\n\
        byte b\nchar c\nbool ok true\nuint64 big\n\
        \n\
        ================================================================================\n\
        MSG: my_pkg/Point\n\
        float64 x\nfloat64 y\n";
    let s = parse_ros2msg("my_pkg/msg/Thing", text).unwrap();
    assert_eq!(s.name(), "my_pkg/msg/Thing");
    let r = s.root();
    assert_eq!(r.constants.len(), 3);
    assert_eq!(r.constants[0].name, "FOO");
    assert_eq!(r.constants[0].value, "3");
    assert_eq!(r.constants[1].value, "x # not a comment");
    assert_eq!(r.constants[2].value, "y");
    let f = |n: &str| r.field(n).unwrap_or_else(|| panic!("{n}")).clone();
    assert_eq!(f("x").default.as_deref(), Some("5"));
    assert_eq!(f("name").ty.base, BaseType::String { bound: Some(10) });
    assert_eq!(f("small").ty, prim(Primitive::Int32, ArrayKind::Bounded(5)));
    assert_eq!(f("many").ty, prim(Primitive::Int32, ArrayKind::Unbounded));
    assert_eq!(f("k").ty, prim(Primitive::Float64, ArrayKind::Fixed(9)));
    assert_eq!(
        f("header").ty.base,
        BaseType::Message("std_msgs/msg/Header".into())
    );
    assert_eq!(f("p").ty.base, BaseType::Message("my_pkg/msg/Point".into()));
    assert_eq!(
        f("t").ty.base,
        BaseType::Message("builtin_interfaces/msg/Time".into())
    );
    assert_eq!(
        f("v").ty.base,
        BaseType::Message("geometry_msgs/msg/Vector3".into())
    );
    assert_eq!(f("w").ty.base, BaseType::WString { bound: None });
    assert_eq!(f("ok").default.as_deref(), Some("true"));
    // Header, Time, Vector3 came from built-ins; Point from the text.
    assert!(s.get("std_msgs/Header").is_some());
    assert!(s.get("geometry_msgs/msg/Vector3").is_some());
    assert_eq!(s.get("my_pkg/Point").unwrap().fields.len(), 2);
}

#[test]
fn ros2msg_errors() {
    assert!(matches!(
        parse_ros2msg("a/msg/B", "int32[ x\n"),
        Err(SchemaError::Parse { line: 1, .. })
    ));
    assert!(matches!(
        parse_ros2msg("a/msg/B", "nosuch_pkg/Thing t\n"),
        Err(SchemaError::UnresolvedType { .. })
    ));
    assert!(matches!(
        parse_ros2msg("a/msg/B", "int32\n"),
        Err(SchemaError::Parse { .. })
    ));
    // Self-containment is rejected, not a stack overflow later.
    assert!(matches!(
        parse_ros2msg("a/msg/B", "B inner\n"),
        Err(SchemaError::Recursive(_))
    ));
    assert!(matches!(
        parse_ros2msg("bad name", ""),
        Err(SchemaError::BadTypeName(_))
    ));
    let sep = "=".repeat(80);
    assert!(matches!(
        parse_ros2msg("a/msg/B", &format!("int32 x\n{sep}\nNOTMSG: a/C\n")),
        Err(SchemaError::Parse { .. })
    ));
}

#[test]
fn all_fixture_schemas_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let cases = [
        ("joint_state_arm", "sensor_msgs/msg/JointState", "ros2msg"),
        (
            "joint_trajectory_arm",
            "trajectory_msgs/msg/JointTrajectory",
            "ros2msg",
        ),
        ("clock_sim", "rosgraph_msgs/msg/Clock", "ros2msg"),
        ("camera_info_rerun", "sensor_msgs/msg/CameraInfo", "ros2msg"),
        ("joint_state_rerun", "sensor_msgs/msg/JointState", "ros2msg"),
        ("imu_demo", "sensor_msgs/msg/Imu", "ros2msg"),
        (
            "pose_stamped_demo",
            "geometry_msgs/msg/PoseStamped",
            "ros2msg",
        ),
        ("test_arrays", "test_msgs/msg/Arrays", "ros2msg"),
        ("test_basic_types", "test_msgs/msg/BasicTypes", "ros2msg"),
        ("tf_message_rosbags", "tf2_msgs/msg/TFMessage", "ros2msg"),
        ("odometry_rosbags", "nav_msgs/msg/Odometry", "ros2msg"),
        (
            "point_cloud2_rerun",
            "sensor_msgs/msg/PointCloud2",
            "ros2msg",
        ),
        (
            "event_packet",
            "event_camera_msgs/msg/EventPacket",
            "ros2idl",
        ),
        (
            "add_two_ints_event",
            "example_interfaces/srv/AddTwoInts_Event",
            "ros2msg",
        ),
        (
            "basic_types_event",
            "test_msgs/srv/BasicTypes_Event",
            "ros2msg",
        ),
    ];
    for (file, ty, enc) in cases {
        let data = std::fs::read(dir.join(format!("{file}.schema.txt"))).unwrap();
        let s = schema_for_channel(ty, enc, &data).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(s.name(), ty);
        // Real schemas that have a built-in twin must agree with it field by field.
        if let Some(b) = builtin::resolve(ty) {
            for d in s.definitions() {
                if let Some(bd) = b.get(&d.name) {
                    let a: Vec<_> = d.fields.iter().map(|f| (&f.name, &f.ty)).collect();
                    let c: Vec<_> = bd.fields.iter().map(|f| (&f.name, &f.ty)).collect();
                    assert_eq!(a, c, "{file}: {} differs from built-in", d.name);
                }
            }
        }
    }
}

#[test]
fn test_arrays_constants_and_defaults() {
    let s = parse_ros2msg("test_msgs/msg/Arrays", &text("test_arrays.schema.txt")).unwrap();
    let c = s.get("test_msgs/Constants").unwrap();
    assert_eq!(c.constants.len(), 13);
    assert!(c.fields.is_empty());
    assert_eq!(c.constants[5].name, "INT8_CONST");
    assert_eq!(c.constants[5].value, "-50");
    let r = s.root();
    assert_eq!(
        r.field("string_values_default").unwrap().default.as_deref(),
        Some("[\"\", \"max value\", \"min value\"]")
    );
    assert_eq!(
        r.field("basic_types_values").unwrap().ty,
        FieldType {
            base: BaseType::Message("test_msgs/msg/BasicTypes".into()),
            array: ArrayKind::Fixed(3)
        }
    );
}

#[test]
fn nested_bounded_sequences() {
    let sep = "=".repeat(80);
    let text = format!(
        "Inner[<=3] inners\nstring<=5[<=2] names\n{sep}\nMSG: pkg/Inner\nuint16[<=4] vals\nbuiltin_interfaces/Duration d\n"
    );
    let s = parse_ros2msg("pkg/Outer", &text).unwrap();
    let r = s.root();
    assert_eq!(r.fields[0].ty.array, ArrayKind::Bounded(3));
    assert_eq!(r.fields[1].ty.base, BaseType::String { bound: Some(5) });
    assert_eq!(r.fields[1].ty.array, ArrayKind::Bounded(2));
    let inner = s.get("pkg/msg/Inner").unwrap();
    assert_eq!(
        inner.fields[0].ty,
        prim(Primitive::UInt16, ArrayKind::Bounded(4))
    );
}

#[test]
fn ros2idl_event_packet() {
    let s = parse_ros2idl(
        "event_camera_msgs/msg/EventPacket",
        &text("event_packet.schema.txt"),
    )
    .unwrap();
    let names: Vec<_> = s.root().fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "header",
            "height",
            "width",
            "seq",
            "time_base",
            "encoding",
            "is_bigendian",
            "events"
        ]
    );
    assert_eq!(
        s.root().fields[3].ty,
        prim(Primitive::UInt64, ArrayKind::Single)
    );
    assert_eq!(
        s.root().fields[6].ty,
        prim(Primitive::Bool, ArrayKind::Single)
    );
    assert_eq!(
        s.root().fields[7].ty,
        prim(Primitive::UInt8, ArrayKind::Unbounded)
    );
    assert_eq!(s.get("std_msgs/msg/Header").unwrap().fields.len(), 2);
}

#[test]
fn ros2idl_features() {
    let sep = "=".repeat(80);
    let text = format!(
        r#"{sep}
IDL: pkg/msg/Thing
#include "builtin_interfaces/msg/Time.idl"
/* block
   comment */
module pkg {{
  module msg {{
    typedef double double__9[9];
    typedef pkg::msg::Inner Inner__3[3];
    module Thing_Constants {{
      const int32 FOO = 3;
      const string NAME = "hi";
      const uint32 N = 4;
    }};
    @verbatim (language="comment", text="// not code; {{ }}")
    struct Thing {{
      @default (value=5)
      long a;
      unsigned long b;
      long long c;
      unsigned long long d;
      short e; unsigned short f;
      float g; double h;
      octet i; boolean j; char k; wchar l;
      string<10> m;
      wstring n;
      sequence<int32> o;
      sequence<int32, 5> p;
      sequence<Inner> q;
      double__9 r;
      int8 s[4];
      @key builtin_interfaces::msg::Time t;
      Inner__3 u;
      int16 v[N];
    }};
  }};
}};
{sep}
IDL: pkg/msg/Inner
module pkg {{ module msg {{ struct Inner {{ uint8 structure_needs_at_least_one_member; }}; }}; }};
"#
    );
    let s = parse_ros2idl("pkg/msg/Thing", &text).unwrap();
    let r = s.root();
    let ty = |n: &str| r.field(n).unwrap_or_else(|| panic!("{n}")).ty.clone();
    use Primitive::*;
    assert_eq!(ty("a"), prim(Int32, ArrayKind::Single));
    assert_eq!(ty("b"), prim(UInt32, ArrayKind::Single));
    assert_eq!(ty("c"), prim(Int64, ArrayKind::Single));
    assert_eq!(ty("d"), prim(UInt64, ArrayKind::Single));
    assert_eq!(ty("e"), prim(Int16, ArrayKind::Single));
    assert_eq!(ty("f"), prim(UInt16, ArrayKind::Single));
    assert_eq!(ty("g"), prim(Float32, ArrayKind::Single));
    assert_eq!(ty("h"), prim(Float64, ArrayKind::Single));
    assert_eq!(ty("i"), prim(Byte, ArrayKind::Single));
    assert_eq!(ty("j"), prim(Bool, ArrayKind::Single));
    assert_eq!(ty("k"), prim(Char, ArrayKind::Single));
    assert_eq!(ty("l"), prim(WChar, ArrayKind::Single));
    assert_eq!(ty("m").base, BaseType::String { bound: Some(10) });
    assert_eq!(ty("n").base, BaseType::WString { bound: None });
    assert_eq!(ty("o"), prim(Int32, ArrayKind::Unbounded));
    assert_eq!(ty("p"), prim(Int32, ArrayKind::Bounded(5)));
    assert_eq!(ty("q").base, BaseType::Message("pkg/msg/Inner".into()));
    assert_eq!(ty("r"), prim(Float64, ArrayKind::Fixed(9)));
    assert_eq!(ty("s"), prim(Int8, ArrayKind::Fixed(4)));
    assert_eq!(
        ty("t").base,
        BaseType::Message("builtin_interfaces/msg/Time".into())
    );
    assert_eq!(ty("u").array, ArrayKind::Fixed(3));
    assert_eq!(ty("v"), prim(Int16, ArrayKind::Fixed(4)));
    assert_eq!(r.constants.len(), 3);
    assert_eq!(r.constants[1].value, "hi");
}

#[test]
fn service_event_schema() {
    let s = parse_service_event(
        "example_interfaces/srv/AddTwoInts_Event",
        "int64 a\nint64 b\n---\nint64 sum\n",
    )
    .unwrap();
    let r = s.root();
    assert_eq!(r.fields.len(), 3);
    assert_eq!(
        r.fields[0].ty.base,
        BaseType::Message("service_msgs/msg/ServiceEventInfo".into())
    );
    assert_eq!(r.fields[1].ty.array, ArrayKind::Bounded(1));
    assert_eq!(
        r.fields[2].ty.base,
        BaseType::Message("example_interfaces/srv/AddTwoInts_Response".into())
    );
    assert_eq!(
        s.get("example_interfaces/srv/AddTwoInts_Request")
            .unwrap()
            .fields
            .len(),
        2
    );
    let info = s.get("service_msgs/msg/ServiceEventInfo").unwrap();
    assert_eq!(
        info.field("client_gid").unwrap().ty,
        prim(Primitive::Char, ArrayKind::Fixed(16))
    );
    // Dependency sections after the .srv text, and unqualified types in it.
    let sep = "=".repeat(80);
    let text = format!("Thing t\n---\nbool ok\n{sep}\nMSG: pkg/Thing\nint8 v\n");
    let s = schema_for_channel("pkg/srv/Do_Event", "ros2msg", text.as_bytes()).unwrap();
    assert_eq!(
        s.get("pkg/srv/Do_Request").unwrap().fields[0].ty.base,
        BaseType::Message("pkg/msg/Thing".into())
    );
}

#[test]
fn builtins_and_channel_fallback() {
    for n in builtin::names() {
        let s = builtin::resolve(n).unwrap_or_else(|| panic!("built-in {n} does not resolve"));
        // Round trip through text.
        let t = s.to_ros2msg_text();
        let s2 = parse_ros2msg(n, &t).unwrap();
        assert_eq!(s.root(), s2.root(), "{n}");
    }
    assert!(builtin::resolve("sensor_msgs/Image").is_some());
    assert!(builtin::resolve("sensor_msgs/msg/CameraInfo")
        .unwrap()
        .root()
        .field("k")
        .is_some());
    assert!(builtin::resolve("nope/msg/Nope").is_none());
    let s = schema_for_channel("tf2_msgs/msg/TFMessage", "", b"").unwrap();
    assert_eq!(s.name(), "tf2_msgs/msg/TFMessage");
    let s = schema_for_channel("std_msgs/msg/Empty", "ros2msg", b"").unwrap();
    assert!(s.root().fields.is_empty());
    // Unknown type with empty ros2msg text is an empty message (rosbag2 writes that).
    assert!(schema_for_channel("test_msgs/msg/Empty", "ros2msg", b"")
        .unwrap()
        .root()
        .fields
        .is_empty());
    assert!(matches!(
        schema_for_channel("x/msg/Y", "", b""),
        Err(SchemaError::NoDefinition(_))
    ));
    assert!(matches!(
        schema_for_channel("x/msg/Y", "jsonschema", b"{}"),
        Err(SchemaError::UnsupportedEncoding(_))
    ));
    assert!(matches!(
        schema_for_channel("x/msg/Y", "ros2msg", &[0xff, 0xfe]),
        Err(SchemaError::NotUtf8)
    ));
    assert_eq!(schema::canonical_name("a::msg::B").unwrap(), "a/msg/B");
    // rosbag2's spelling (as in .msg files), which rosidl-based readers such as
    // mcap-ros2-support require; ours parses back to the same schema.
    let text = builtin::schema_text("sensor_msgs/msg/JointState").unwrap();
    assert!(text.contains("\nMSG: std_msgs/Header\n"), "{text}");
    assert!(text.starts_with("std_msgs/Header header\n"), "{text}");
    assert!(!text.contains("/msg/"), "{text}");
    let back = parse_ros2msg("sensor_msgs/msg/JointState", &text).unwrap();
    assert_eq!(
        back,
        builtin::resolve("sensor_msgs/msg/JointState").unwrap()
    );
}

/// Parse every schema dumped from the shared corpus (not checked in):
/// `BAGSCOPE_SCHEMA_DIR=/tmp/schemas cargo test -- --ignored corpus_dump`.
/// File names are `<type with / as _>__<encoding>__<n>.txt`.
#[test]
#[ignore]
fn corpus_dump_schemas_parse() {
    let Ok(dir) = std::env::var("BAGSCOPE_SCHEMA_DIR") else {
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let fname = p.file_name().unwrap().to_string_lossy().to_string();
        let parts: Vec<&str> = fname.trim_end_matches(".txt").split("__").collect();
        let raw = parts[0];
        // rebuild pkg/msg/Type from pkg_msg_Type (package names contain `_`).
        let idx = raw
            .find("_msg_")
            .or_else(|| raw.find("_srv_"))
            .map(|i| (i, 5));
        let ty = match idx {
            Some((i, l)) => format!("{}/{}/{}", &raw[..i], &raw[i + 1..i + l - 1], &raw[i + l..]),
            None => {
                let i = raw.rfind('_').unwrap();
                format!("{}/{}", &raw[..i], &raw[i + 1..])
            }
        };
        let data = std::fs::read(&p).unwrap();
        let s = schema_for_channel(&ty, parts[1], &data)
            .unwrap_or_else(|e| panic!("{fname} ({ty}): {e}"));
        if let Some(b) = builtin::resolve(&ty) {
            for d in s.definitions() {
                if let Some(bd) = b.get(&d.name) {
                    let a: Vec<_> = d.fields.iter().map(|f| (&f.name, &f.ty)).collect();
                    let c: Vec<_> = bd.fields.iter().map(|f| (&f.name, &f.ty)).collect();
                    assert_eq!(a, c, "{fname}: {} differs from built-in", d.name);
                }
            }
        }
        n += 1;
    }
    eprintln!("parsed {n} corpus schemas");
}

/// Field paths resolve against the type, not against decoded values: a misspelt field, a
/// field of a number, an index on a scalar or past a fixed array's end is an error naming the
/// type and what is there; valid paths give the type they reach.
#[test]
fn field_paths_resolve_against_the_type() {
    use bagscope_msg::FieldPathError;
    let resolve = builtin::resolve;
    let js = resolve("sensor_msgs/msg/JointState").unwrap();
    let t = js.resolve_path("position").unwrap();
    assert_eq!(
        (t.base, t.array),
        (
            BaseType::Primitive(Primitive::Float64),
            ArrayKind::Unbounded
        )
    );
    let t = js.resolve_path("position[3]").unwrap();
    assert_eq!(t.array, ArrayKind::Single);
    let t = js.resolve_path("header.stamp").unwrap();
    assert_eq!(
        t.base,
        BaseType::Message("builtin_interfaces/msg/Time".into())
    );
    js.resolve_path("header.stamp.nanosec").unwrap();

    let e = js.resolve_path("positon").unwrap_err();
    assert!(
        matches!(&e, FieldPathError::NoField { name, at, .. } if name == "positon" && at.is_empty())
    );
    let m = e.to_string();
    assert!(
        m.contains("sensor_msgs/msg/JointState has no field 'positon'")
            && m.contains("header, name, position, velocity, effort"),
        "{m}"
    );
    let m = js.resolve_path("header.stmp").unwrap_err().to_string();
    assert!(
        m.contains("std_msgs/msg/Header (at header) has no field 'stmp'")
            && m.contains("stamp, frame_id"),
        "{m}"
    );
    let m = js.resolve_path("position.x").unwrap_err().to_string();
    assert!(
        m.contains("position is float64[], which has no fields"),
        "{m}"
    );
    let m = js.resolve_path("header[0]").unwrap_err().to_string();
    assert!(m.contains("header is std_msgs/Header, not an array"), "{m}");
    assert!(matches!(
        js.resolve_path("a..b"),
        Err(FieldPathError::Malformed { .. })
    ));
    assert!(matches!(
        js.resolve_path(""),
        Err(FieldPathError::Malformed { .. })
    ));

    // Arrays of messages are indexed before their fields; fixed arrays have bounds.
    let tr = resolve("trajectory_msgs/msg/JointTrajectory").unwrap();
    tr.resolve_path("points[2].positions[0]").unwrap();
    let m = tr.resolve_path("points.positions").unwrap_err().to_string();
    assert!(m.contains("index it first"), "{m}");
    let ci = resolve("sensor_msgs/msg/CameraInfo").unwrap();
    ci.resolve_path("k[8]").unwrap();
    let m = ci.resolve_path("k[9]").unwrap_err().to_string();
    assert!(m.contains("k has 9 elements"), "{m}");
}
