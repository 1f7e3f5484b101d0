//! The built-in definitions as a whole: every type of every distribution resolves with all its
//! nested types, services and actions expand to the messages bags record, and the payload picks
//! the distribution's layout where layouts differ.

mod common;

use bagscope_msg::decode::{decode, decode_with_end, only_padding_after};
use bagscope_msg::schema::{builtin, parse_ros2msg, ArrayKind, BaseType};
use bagscope_msg::{schema_for_channel, Value};

#[test]
fn every_builtin_of_every_distribution_resolves() {
    let names: Vec<&str> = builtin::names().collect();
    assert!(names.len() > 450, "{}", names.len());
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for n in &names {
        let s = builtin::resolve(n).unwrap_or_else(|| panic!("{n} does not resolve"));
        assert_eq!(s.name(), *n);
        let cands = builtin::candidates(n);
        assert!(!cands.is_empty(), "{n}");
        assert_eq!(
            cands[0].1, s,
            "{n}: the default is the oldest distribution's"
        );
        let mut distros = Vec::new();
        for (ds, c) in &cands {
            distros.extend(ds.iter().copied());
            // Every nested type is in the schema (by construction of from_defs), and the
            // rendered text parses back to the same definitions.
            for d in c.definitions() {
                for f in &d.fields {
                    if let BaseType::Message(m) = &f.ty.base {
                        assert!(c.get(m).is_some(), "{n}: {m} missing");
                    }
                }
            }
            let back =
                parse_ros2msg(n, &c.to_ros2msg_text()).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(back.root(), c.root(), "{n} ({ds:?})");
        }
        // Each distribution at most once, in order, through the newest.
        let mut order = builtin::DISTROS.iter().filter(|d| distros.contains(d));
        assert!(
            distros.iter().all(|d| order.next() == Some(d)),
            "{n}: {distros:?}"
        );
        // Gazebo classic's packages were released up to Humble only.
        if !n.starts_with("gazebo_msgs/") {
            assert_eq!(distros.last(), Some(&"rolling"), "{n}");
        }
    }
}

#[test]
fn packages_of_the_common_interfaces_and_friends_are_covered() {
    for t in [
        "builtin_interfaces/msg/Time",
        "std_msgs/msg/Header",
        "geometry_msgs/msg/PolygonInstanceStamped",
        "sensor_msgs/msg/MultiEchoLaserScan",
        "nav_msgs/msg/OccupancyGrid",
        "shape_msgs/msg/SolidPrimitive",
        "stereo_msgs/msg/DisparityImage",
        "trajectory_msgs/msg/MultiDOFJointTrajectory",
        "visualization_msgs/msg/MarkerArray",
        "visualization_msgs/msg/InteractiveMarkerUpdate",
        "diagnostic_msgs/msg/DiagnosticArray",
        "actionlib_msgs/msg/GoalStatusArray",
        "rcl_interfaces/msg/Log",
        "rcl_interfaces/msg/ParameterEvent",
        "rosgraph_msgs/msg/Clock",
        "lifecycle_msgs/msg/TransitionEvent",
        "action_msgs/msg/GoalStatusArray",
        "unique_identifier_msgs/msg/UUID",
        "statistics_msgs/msg/MetricsMessage",
        "control_msgs/msg/DynamicJointState",
        "control_msgs/msg/JointTrajectoryControllerState",
        "tf2_msgs/msg/TFMessage",
        "tf2_msgs/msg/TF2Error",
        "example_interfaces/msg/String",
        "example_interfaces/msg/WString",
        "rosbag2_interfaces/msg/WriteSplitEvent",
        "rcl_interfaces/msg/LoggerLevel",
        "gazebo_msgs/msg/PerformanceMetrics",
        "gazebo_msgs/msg/ModelStates",
        "service_msgs/msg/ServiceEventInfo",
        "type_description_interfaces/msg/TypeDescription",
        // The older spelling without `msg`.
        "diagnostic_msgs/DiagnosticStatus",
        "rcl_interfaces/Log",
    ] {
        assert!(builtin::resolve(t).is_some(), "{t}");
    }
    // Types added after Humble are named only for the distributions that have them.
    let c = builtin::candidates("rcl_interfaces/msg/LoggerLevel");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, ["iron", "jazzy", "kilted", "rolling"]);
    // Field lists as the interface files have them.
    let fields = |t: &str| -> Vec<String> {
        let s = builtin::resolve(t).unwrap();
        s.root()
            .fields
            .iter()
            .map(|f| format!("{} {}", bagscope_msg::schema::type_text(&f.ty), f.name))
            .collect()
    };
    assert_eq!(
        fields("diagnostic_msgs/msg/DiagnosticStatus"),
        [
            "byte level",
            "string name",
            "string message",
            "string hardware_id",
            "diagnostic_msgs/KeyValue[] values"
        ]
    );
    assert_eq!(
        fields("rcl_interfaces/msg/ParameterDescriptor"),
        [
            "string name",
            "uint8 type",
            "string description",
            "string additional_constraints",
            "bool read_only",
            "bool dynamic_typing",
            "rcl_interfaces/FloatingPointRange[<=1] floating_point_range",
            "rcl_interfaces/IntegerRange[<=1] integer_range",
        ]
    );
    assert_eq!(
        fields("unique_identifier_msgs/msg/UUID"),
        ["uint8[16] uuid"]
    );
    assert_eq!(
        fields("shape_msgs/msg/SolidPrimitive"),
        [
            "uint8 type",
            "float64[<=3] dimensions",
            "geometry_msgs/Polygon polygon"
        ]
    );
}

#[test]
fn services_and_actions_expand_to_recorded_messages() {
    let services = [
        "std_srvs/srv/Empty",
        "std_srvs/srv/SetBool",
        "std_srvs/srv/Trigger",
        "example_interfaces/srv/AddTwoInts",
        "example_interfaces/srv/SetBool",
        "example_interfaces/srv/Trigger",
        "rcl_interfaces/srv/SetParameters",
        "rcl_interfaces/srv/GetParameters",
        "rcl_interfaces/srv/ListParameters",
        "rcl_interfaces/srv/DescribeParameters",
        "rcl_interfaces/srv/GetParameterTypes",
        "rcl_interfaces/srv/SetParametersAtomically",
        "lifecycle_msgs/srv/ChangeState",
        "lifecycle_msgs/srv/GetState",
        "lifecycle_msgs/srv/GetAvailableStates",
        "lifecycle_msgs/srv/GetAvailableTransitions",
        "diagnostic_msgs/srv/SelfTest",
        "nav_msgs/srv/GetMap",
        "tf2_msgs/srv/FrameGraph",
        "rosbag2_interfaces/srv/Snapshot",
        "action_msgs/srv/CancelGoal",
        "control_msgs/srv/QueryTrajectoryState",
    ];
    for s in services {
        // A channel without a schema (the recorder found no definition) falls back to these.
        let ev = schema_for_channel(&format!("{s}_Event"), "ros2msg", b"")
            .unwrap_or_else(|e| panic!("{s}_Event: {e}"));
        let f: Vec<_> = ev
            .root()
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.ty.array))
            .collect();
        assert_eq!(
            f,
            [
                ("info", ArrayKind::Single),
                ("request", ArrayKind::Bounded(1)),
                ("response", ArrayKind::Bounded(1))
            ],
            "{s}"
        );
        assert!(ev.get(&format!("{s}_Request")).is_some(), "{s}");
        assert!(ev.get(&format!("{s}_Response")).is_some(), "{s}");
        assert!(ev.get("service_msgs/msg/ServiceEventInfo").is_some(), "{s}");
    }
    let req = builtin::resolve("rcl_interfaces/srv/SetParameters_Request").unwrap();
    assert_eq!(
        req.root().fields[0].ty.base,
        BaseType::Message("rcl_interfaces/msg/Parameter".into())
    );
    // Actions: the feedback topic's message and the two services.
    for a in [
        "example_interfaces/action/Fibonacci",
        "control_msgs/action/FollowJointTrajectory",
        "control_msgs/action/GripperCommand",
        "tf2_msgs/action/LookupTransform",
    ] {
        for suffix in [
            "_Goal",
            "_Result",
            "_Feedback",
            "_FeedbackMessage",
            "_SendGoal_Request",
            "_SendGoal_Response",
            "_SendGoal_Event",
            "_GetResult_Request",
            "_GetResult_Response",
            "_GetResult_Event",
        ] {
            assert!(
                builtin::resolve(&format!("{a}{suffix}")).is_some(),
                "{a}{suffix}"
            );
        }
        let fb = builtin::resolve(&format!("{a}_FeedbackMessage")).unwrap();
        let names: Vec<_> = fb.root().fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["goal_id", "feedback"], "{a}");
    }
}

/// A service event recorded by rosbag2 (Jazzy, with its schema) decodes the same with the
/// built-in definition.
#[test]
fn builtin_service_event_decodes_a_recorded_one() {
    let text = common::text("add_two_ints_event.schema.txt");
    let ty = "example_interfaces/srv/AddTwoInts_Event";
    let recorded = schema_for_channel(ty, "ros2msg", text.as_bytes()).unwrap();
    let built = builtin::resolve(ty).unwrap();
    for i in 0..2 {
        let payload = common::data(&format!("add_two_ints_event.{i}.cdr"));
        let a = decode(&recorded, &payload).unwrap();
        let (b, end) = decode_with_end(&built, &payload).unwrap();
        assert!(only_padding_after(&payload, end));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

/// Minimal little-endian CDR writer for the layout tests.
struct Cdr(Vec<u8>);

impl Cdr {
    fn new() -> Self {
        Cdr(vec![0, 1, 0, 0])
    }
    fn align(&mut self, n: usize) {
        while !(self.0.len() - 4).is_multiple_of(n) {
            self.0.push(0);
        }
    }
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn f32(self, v: f32) -> Self {
        self.u32(v.to_bits())
    }
    fn string(self, s: &str) -> Self {
        let mut c = self.u32(s.len() as u32 + 1);
        c.0.extend_from_slice(s.as_bytes());
        c.0.push(0);
        c
    }
    /// Padded to a multiple of 4, as middlewares send it.
    fn done(mut self) -> Vec<u8> {
        self.align(4);
        self.0
    }
}

fn range_payload(variance: Option<f32>) -> Vec<u8> {
    let c = Cdr::new()
        .u32(12)
        .u32(500)
        .string("sonar")
        .u8(0)
        .f32(0.5)
        .f32(0.02)
        .f32(4.0)
        .f32(1.25);
    match variance {
        Some(v) => c.f32(v).done(),
        None => c.done(),
    }
}

#[test]
fn payload_picks_the_distribution_layout() {
    let c = builtin::candidates("sensor_msgs/msg/Range");
    let labels: Vec<_> = c.iter().map(|(d, _)| d.clone()).collect();
    assert_eq!(
        labels,
        [vec!["humble"], vec!["iron", "jazzy", "kilted", "rolling"]]
    );
    // The default is Humble's; a Humble payload keeps it, an Iron one (4 more bytes) gets
    // the layout with `variance`.
    let humble = range_payload(None);
    let iron = range_payload(Some(0.01));
    let d = builtin::resolve("sensor_msgs/Range").unwrap();
    assert!(d.root().field("variance").is_none());
    let s = builtin::resolve_for_payload("sensor_msgs/msg/Range", &humble).unwrap();
    assert!(s.root().field("variance").is_none());
    let (_, end) = decode_with_end(&s, &humble).unwrap();
    assert!(only_padding_after(&humble, end));
    let s = builtin::resolve_for_payload("sensor_msgs/msg/Range", &iron).unwrap();
    let v = decode(&s, &iron).unwrap();
    assert_eq!(v.get_path_f64("variance"), Some(0.01f32 as f64));
    assert_eq!(v.get_path_f64("range"), Some(1.25));
    // With the Humble layout, the Iron payload leaves 4 bytes: not only padding.
    let (_, end) = decode_with_end(&d, &iron).unwrap();
    assert!(!only_padding_after(&iron, end));

    // rosbag2's split events gained `node_name` in Jazzy.
    let jazzy = Cdr::new()
        .string("a_0.mcap")
        .string("a_1.mcap")
        .string("/rosbag2_recorder")
        .done();
    let s = builtin::resolve_for_payload("rosbag2_interfaces/msg/WriteSplitEvent", &jazzy).unwrap();
    let v = decode(&s, &jazzy).unwrap();
    assert_eq!(
        v.field("node_name").and_then(Value::as_str),
        Some("/rosbag2_recorder")
    );
    let humble = Cdr::new().string("a_0.db3").string("a_1.db3").done();
    let s =
        builtin::resolve_for_payload("rosbag2_interfaces/msg/WriteSplitEvent", &humble).unwrap();
    assert!(s.root().field("node_name").is_none());

    // The same choice for a channel whose schema record is empty; a recorded schema wins.
    let s =
        bagscope_msg::schema_for_channel_payload("sensor_msgs/msg/Range", "", b"", &iron).unwrap();
    assert!(s.root().field("variance").is_some());
    let s = schema_for_channel("sensor_msgs/msg/Range", "", b"").unwrap();
    assert!(s.root().field("variance").is_none());
    let own = "std_msgs/Header header\nfloat32 range\n";
    let s = bagscope_msg::schema_for_channel_payload(
        "sensor_msgs/msg/Range",
        "ros2msg",
        own.as_bytes(),
        &iron,
    )
    .unwrap();
    assert_eq!(s.root().fields.len(), 2);

    // A payload no layout fits gets the default, and a type without a built-in nothing.
    let s = builtin::resolve_for_payload("sensor_msgs/msg/Range", &[0, 1, 0, 0, 1]).unwrap();
    assert_eq!(s, d);
    assert!(builtin::resolve_for_payload("x/msg/Y", &humble).is_none());

    // Nested types follow the same distribution: control_msgs' trajectory feedback.
    let c = builtin::candidates("control_msgs/action/FollowJointTrajectory_FeedbackMessage");
    assert_eq!(
        c.len(),
        2,
        "{:?}",
        c.iter().map(|(d, _)| d).collect::<Vec<_>>()
    );
    assert!(c[1]
        .1
        .get("control_msgs/action/FollowJointTrajectory_Feedback")
        .unwrap()
        .field("index")
        .is_some());
}

#[test]
fn padding_rule() {
    // Body of 5 bytes after the 4-byte header: up to 3 bytes of padding round it to 8.
    let p = [0u8; 4 + 8];
    assert!(only_padding_after(&p, 4 + 5));
    assert!(only_padding_after(&p[..4 + 5], 4 + 5));
    assert!(!only_padding_after(&[0u8; 4 + 9], 4 + 5));
    // An end past the payload is never complete.
    assert!(!only_padding_after(&p[..6], 8));
}
