//! Typed (serde) messages: real payloads, byte layout against ROS, hostile lengths, time
//! conversions, and typed encoding agreeing with the dynamic decoder.

mod common;
use bagscope_msg::schema::builtin;
use bagscope_msg::types::*;
use bagscope_msg::{decode, decode_typed, encode_typed, schema_for_channel, StampLocator};
use common::*;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn check_fixture<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(file: &str) -> T {
    let p = data(&format!("{file}.0.cdr"));
    let t: T = decode_typed(&p).unwrap_or_else(|e| panic!("{file}: {e}"));
    let want: serde_json::Value =
        serde_json::from_slice(&data(&format!("{file}.0.expected.json"))).unwrap();
    assert_json_close(&serde_json::to_value(&t).unwrap(), &want, file);
    // Re-encoding reproduces the recorded bytes (up to middleware tail padding):
    // the cdr crate aligns relative to the header and writes NUL terminators.
    let enc = encode_typed(&t).unwrap();
    assert!(
        p.starts_with(&enc[..]) || enc == p,
        "{file}: re-encoded bytes differ"
    );
    assert!(
        p.len() - enc.len() < 4,
        "{file}: {} vs {}",
        p.len(),
        enc.len()
    );
    // Every truncation is an error, never a panic.
    for n in 0..enc.len() {
        assert!(decode_typed::<T>(&enc[..n]).is_err(), "{file}@{n}");
    }
    t
}

#[test]
fn typed_real_payloads() {
    let js: JointState = check_fixture("joint_state_arm");
    assert_eq!(js.name.len(), 6);
    check_fixture::<JointState>("joint_state_rerun");
    let jt: JointTrajectory = check_fixture("joint_trajectory_arm");
    assert_eq!(jt.header.stamp.to_ns(), 1_764_460_800_029_426_888);
    let c: Clock = check_fixture("clock_sim");
    assert_eq!(c.clock.to_ns(), 12_310_000_000);
    let ci: CameraInfo = check_fixture("camera_info_rerun");
    assert_eq!(ci.k[0], 500.0);
    check_fixture::<Imu>("imu_demo");
    let pc: PointCloud2 = check_fixture("point_cloud2_rerun");
    assert_eq!(pc.fields[0].name, "x");
    check_fixture::<TFMessage>("tf_message_rosbags");
    let tf = data("tf_message_rosbags.0.cdr");
    assert!(!tf_frames(&tf).unwrap().is_empty());
    tf_frames_agree(&tf).unwrap();
}

#[test]
fn cdr_crate_layout_matches_ros() {
    // Hand-built expectation: header 00 01 00 00, u8 then f64 aligned to 8
    // *relative to the body*, string with NUL.
    #[derive(Serialize, serde::Deserialize, PartialEq, Debug)]
    struct T {
        a: u8,
        b: f64,
        s: String,
    }
    let enc = encode_typed(&T {
        a: 1,
        b: 2.0,
        s: "hi".into(),
    })
    .unwrap();
    let mut want = vec![0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    want.extend_from_slice(&2.0f64.to_le_bytes());
    want.extend_from_slice(&[3, 0, 0, 0, b'h', b'i', 0]);
    assert_eq!(enc, want);
    assert_eq!(
        decode_typed::<T>(&enc).unwrap(),
        T {
            a: 1,
            b: 2.0,
            s: "hi".into()
        }
    );
    assert_eq!(
        cdr::deserialize::<T>(&enc).unwrap(),
        T {
            a: 1,
            b: 2.0,
            s: "hi".into()
        }
    );
    // Big-endian payloads decode too.
    let be = cdr::serialize::<_, _, cdr::CdrBe>(
        &T {
            a: 1,
            b: 2.0,
            s: "hi".into(),
        },
        cdr::Infinite,
    )
    .unwrap();
    assert_eq!(decode_typed::<T>(&be).unwrap().b, 2.0);
}

#[test]
fn hostile_lengths_do_not_allocate() {
    // String length 0xffffffff with 4 bytes left: error, no 4 GiB buffer.
    let p = [
        0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
    ];
    assert!(decode_typed::<Header>(&p).is_err());
    assert!(decode_typed::<JointState>(&p).is_err());
    let s = schema_for_channel("std_msgs/msg/Header", "", b"").unwrap();
    assert!(decode(&s, &p).is_err());
}

#[test]
fn time_conversions() {
    assert_eq!(
        Time::from_ns(-1),
        Time {
            sec: -1,
            nanosec: 999_999_999
        }
    );
    assert_eq!(Time::from_ns(1_500_000_000).to_ns(), 1_500_000_000);
    assert_eq!(
        Duration::from_ns(2_000_000_001),
        Duration { sec: 2, nanosec: 1 }
    );
    assert_eq!(Time::from_ns(i64::MAX).sec, i32::MAX);
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e9f64..1e9,
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE)
    ]
}

fn header() -> impl Strategy<Value = Header> {
    (any::<i32>(), 0u32..1_000_000_000, "[a-z_/]{0,12}").prop_map(|(sec, nanosec, frame_id)| {
        Header {
            stamp: Time { sec, nanosec },
            frame_id,
        }
    })
}

fn joint_state() -> impl Strategy<Value = JointState> {
    (
        header(),
        prop::collection::vec("[a-z0-9_]{0,10}", 0..8),
        prop::collection::vec(finite(), 0..8),
        prop::collection::vec(finite(), 0..8),
        prop::collection::vec(finite(), 0..8),
    )
        .prop_map(|(header, name, position, velocity, effort)| JointState {
            header,
            name,
            position,
            velocity,
            effort,
        })
}

fn traj_point() -> impl Strategy<Value = JointTrajectoryPoint> {
    (
        prop::collection::vec(finite(), 0..6),
        prop::collection::vec(finite(), 0..6),
        prop::collection::vec(finite(), 0..3),
        prop::collection::vec(finite(), 0..3),
        any::<i32>(),
        0u32..1_000_000_000,
    )
        .prop_map(
            |(positions, velocities, accelerations, effort, sec, nanosec)| JointTrajectoryPoint {
                positions,
                velocities,
                accelerations,
                effort,
                time_from_start: Duration { sec, nanosec },
            },
        )
}

fn joint_trajectory() -> impl Strategy<Value = JointTrajectory> {
    (
        header(),
        prop::collection::vec("[a-z0-9_]{0,10}", 0..6),
        prop::collection::vec(traj_point(), 0..5),
    )
        .prop_map(|(header, joint_names, points)| JointTrajectory {
            header,
            joint_names,
            points,
        })
}

fn image() -> impl Strategy<Value = Image> {
    (
        header(),
        any::<u32>(),
        any::<u32>(),
        "[a-z0-9]{0,8}",
        any::<u8>(),
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(
            |(header, height, width, encoding, is_bigendian, step, data)| Image {
                header,
                height,
                width,
                encoding,
                is_bigendian,
                step,
                data,
            },
        )
}

/// encode_typed → dynamic decode with the built-in schema → same JSON as
/// the typed value; typed decode round-trips; stamp fast path agrees.
fn agree<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + RosMessage>(
    msg: &T,
) -> Result<(), TestCaseError> {
    let enc = encode_typed(msg).unwrap();
    let back: T = decode_typed(&enc).unwrap();
    prop_assert_eq!(&back, msg);
    let s = builtin::resolve(T::TYPE_NAME).unwrap();
    let v = decode(&s, &enc).unwrap();
    prop_assert_eq!(
        serde_json::to_value(&v).unwrap(),
        serde_json::to_value(msg).unwrap()
    );
    let loc = StampLocator::for_schema(&s);
    prop_assert_eq!(
        loc.read_stamp_ns(&enc).unwrap(),
        v.get_path_time_ns("header.stamp")
    );
    let fid = loc.read_frame_id(&enc).unwrap();
    prop_assert_eq!(
        fid.as_deref(),
        v.get_path("header.frame_id").and_then(|f| f.as_str())
    );
    for n in (0..enc.len()).step_by(3) {
        prop_assert!(decode(&s, &enc[..n]).is_err());
    }
    Ok(())
}

fn tf_message() -> impl Strategy<Value = TFMessage> {
    let name = "[a-z_/\u{e9}\u{1F600}]{0,12}";
    let transform = (
        any::<i32>(),
        any::<u32>(),
        name,
        name,
        prop::array::uniform7(-1e3f64..1e3),
    )
        .prop_map(|(sec, nanosec, parent, child, v)| TransformStamped {
            header: Header {
                stamp: Time { sec, nanosec },
                frame_id: parent,
            },
            child_frame_id: child,
            transform: Transform {
                translation: Vector3 {
                    x: v[0],
                    y: v[1],
                    z: v[2],
                },
                rotation: Quaternion {
                    x: v[3],
                    y: v[4],
                    z: v[5],
                    w: v[6],
                },
            },
        });
    prop::collection::vec(transform, 0..4).prop_map(|transforms| TFMessage { transforms })
}

/// `tf_frames` gives a result exactly when `decode_typed::<TFMessage>` does, with its values.
fn tf_frames_agree(p: &[u8]) -> Result<(), TestCaseError> {
    let owned = decode_typed::<TFMessage>(p).map(|m| {
        m.transforms
            .into_iter()
            .map(|t| (t.header.stamp.to_ns(), t.header.frame_id, t.child_frame_id))
            .collect::<Vec<_>>()
    });
    let borrowed = tf_frames(p).map(|v| {
        v.into_iter()
            .map(|t| (t.stamp_ns, t.parent.to_string(), t.child.to_string()))
            .collect::<Vec<_>>()
    });
    prop_assert_eq!(
        owned.is_ok(),
        borrowed.is_ok(),
        "{:?} vs {:?}",
        owned,
        borrowed
    );
    if let (Ok(a), Ok(b)) = (owned, borrowed) {
        prop_assert_eq!(a, b);
    }
    Ok(())
}

/// A payload that the layout learnt from `learnt` matches reads as `tf_frames` reads it: the
/// same names as `learnt`'s and the stamps the layout reads. Names that are not UTF-8 make the
/// layout's caller fall back: not compared here.
fn layout_agrees(learnt: &[u8], p: &[u8]) -> Result<(), TestCaseError> {
    let Some(layout) = TfLayout::learn(learnt) else {
        prop_assert!(tf_frames(learnt).is_err());
        return Ok(());
    };
    if !layout.matches(p) {
        return Ok(());
    }
    let want = tf_frames(learnt).unwrap();
    let got = tf_frames(p).unwrap();
    prop_assert_eq!(got.len(), layout.transforms());
    let stamps: Vec<i64> = layout.stamps(p).collect();
    for ((g, w), s) in got.iter().zip(&want).zip(stamps) {
        prop_assert_eq!((g.parent, g.child), (w.parent, w.child));
        prop_assert_eq!(g.stamp_ns, s);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn prop_joint_state(m in joint_state()) { agree(&m)?; }

    #[test]
    fn prop_joint_trajectory(m in joint_trajectory()) {
        agree(&m)?;
        let s = builtin::resolve("trajectory_msgs/JointTrajectory").unwrap();
        let v = decode(&s, &encode_typed(&m).unwrap()).unwrap();
        for (i, p) in m.points.iter().enumerate() {
            prop_assert_eq!(v.get_path_time_ns(&format!("points[{i}].time_from_start")), Some(p.time_from_start.to_ns()));
        }
    }

    #[test]
    fn prop_image(m in image()) { agree(&m)?; }

    #[test]
    fn prop_time_ns_roundtrip(ns in (i32::MIN as i64 * 1_000_000_000)..(i32::MAX as i64 * 1_000_000_000)) {
        prop_assert_eq!(Time::from_ns(ns).to_ns(), ns);
        prop_assert!(Time::from_ns(ns).nanosec < 1_000_000_000);
    }

    /// Random bytes against fixed schemas: errors are fine, panics are not.
    #[test]
    fn fuzz_random_bytes(body in prop::collection::vec(any::<u8>(), 0..200), hdr in 0u8..4) {
        let mut p = vec![0, hdr, 0, 0];
        p.extend_from_slice(&body);
        for ty in ["sensor_msgs/msg/JointState", "trajectory_msgs/msg/JointTrajectory", "sensor_msgs/msg/CameraInfo",
                   "tf2_msgs/msg/TFMessage", "sensor_msgs/msg/PointCloud2", "nav_msgs/msg/OccupancyGrid",
                   "rosgraph_msgs/msg/Clock", "std_msgs/msg/Empty"] {
            let s = schema_for_channel(ty, "", b"").unwrap();
            let _ = decode(&s, &p);
            let loc = s.stamp_locator();
            let _ = loc.read_stamp_ns(&p);
            let _ = loc.read_frame_id(&p);
        }
        let ev = schema_for_channel("example_interfaces/srv/AddTwoInts_Event", "ros2msg", b"int64 a\nint64 b\n---\nint64 sum\n").unwrap();
        let _ = decode(&ev, &p);
        let _ = decode_typed::<JointTrajectory>(&p);
        let _ = decode_typed::<CameraInfo>(&p);
        let _ = decode_typed::<PointCloud2>(&p);
        let _ = decode_typed::<TFMessage>(&p);
        tf_frames_agree(&p)?;
    }

    /// The borrowed TF reader against the owned decode: whole payloads, every truncation,
    /// and every single byte changed.
    #[test]
    fn prop_tf_frames(m in tf_message(), flip in any::<u8>()) {
        let enc = encode_typed(&m).unwrap();
        let got = tf_frames(&enc).unwrap();
        prop_assert_eq!(got.len(), m.transforms.len());
        tf_frames_agree(&enc)?;
        for n in 0..enc.len() {
            tf_frames_agree(&enc[..n])?;
        }
        for i in 0..enc.len() {
            let mut b = enc.clone();
            b[i] ^= flip.max(1);
            tf_frames_agree(&b)?;
            layout_agrees(&enc, &b)?;
        }
        layout_agrees(&enc, &enc)?;
    }

    /// Random schema text never panics the parsers.
    #[test]
    fn fuzz_schema_text(t in "[a-zA-Z0-9_/<=>\\[\\]{}:;#@\"\n ]{0,200}") {
        let _ = schema_for_channel("p/msg/T", "ros2msg", t.as_bytes());
        let _ = schema_for_channel("p/msg/T", "ros2idl", t.as_bytes());
        let _ = schema_for_channel("p/srv/T_Event", "ros2msg", t.as_bytes());
    }
}

/// The in-place JointState reader accepts and refuses exactly what the typed decoder does, and
/// reads the same names and values: on a real message, every truncation of it, a name that is
/// not UTF-8, a count larger than the payload, and big-endian CDR.
#[test]
fn joint_state_view_agrees_with_typed_decode() {
    let js = JointState {
        header: Header {
            stamp: Time {
                sec: 12,
                nanosec: 345,
            },
            frame_id: "base".into(),
        },
        name: vec!["a".into(), "joint_bb".into(), "c".into()],
        position: vec![1.0, -2.5, f64::NAN],
        velocity: vec![],
        effort: vec![0.5, 0.25, 0.125],
    };
    let enc = encode_typed(&js).unwrap();
    let known = JointStateView::read_unless_names(&enc, None).unwrap().names;
    let agree = |p: &[u8], what: &str| {
        let typed = decode_typed::<JointState>(p).ok();
        let view = JointStateView::read(p);
        assert_eq!(typed.is_some(), view.is_some(), "{what}");
        // Given the full message's name run, the names are reused only when the run is there,
        // and the rest reads exactly as `read` does.
        for run in [None, Some(known)] {
            let r = JointStateView::read_unless_names(p, run);
            assert_eq!(r.is_some(), view.is_some(), "{what}");
            if let (Some(r), Some(v)) = (r, &view) {
                assert_eq!(r.name_count, v.names.len(), "{what}");
                assert_eq!(r.names_reused, run == Some(r.names), "{what}");
                if !r.names_reused {
                    assert_eq!(r.view.names, v.names, "{what}");
                }
                for (a, b) in [
                    (r.view.position, v.position),
                    (r.view.velocity, v.velocity),
                    (r.view.effort, v.effort),
                ] {
                    assert_eq!(
                        a.iter().map(f64::to_bits).collect::<Vec<_>>(),
                        b.iter().map(f64::to_bits).collect::<Vec<_>>(),
                        "{what}"
                    );
                }
            }
        }
        if let (Some(t), Some(v)) = (typed, view) {
            assert_eq!(
                v.names,
                t.name.iter().map(String::as_str).collect::<Vec<_>>()
            );
            for (a, b) in [
                (v.position, &t.position),
                (v.velocity, &t.velocity),
                (v.effort, &t.effort),
            ] {
                let got: Vec<u64> = a.iter().map(f64::to_bits).collect();
                let want: Vec<u64> = b.iter().map(|x| x.to_bits()).collect();
                assert_eq!(got, want, "{what}");
                assert_eq!(a.all_finite(), b.iter().all(|x| x.is_finite()), "{what}");
            }
        }
    };
    for n in 0..=enc.len() {
        agree(&enc[..n], &format!("truncated at {n}"));
    }
    // A name that is not UTF-8: both refuse it.
    let at = enc.windows(8).position(|w| w == b"joint_bb").unwrap();
    let mut bad = enc.clone();
    bad[at] = 0xff;
    agree(&bad, "invalid utf-8");
    assert!(JointStateView::read(&bad).is_none());
    // A position count far beyond the payload: header (4 + 8 + 4 + "base\0", aligned to 24),
    // no names (4 bytes), then the position count at 28.
    let empty = encode_typed(&JointState {
        header: js.header.clone(),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(&empty[28..32], &[0, 0, 0, 0]);
    let mut big = empty.clone();
    big[28..32].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    agree(&big, "huge count");
    assert!(JointStateView::read(&big).is_none());
    agree(&empty, "empty");
    // Names that are UTF-8 but not ASCII, and infinite values.
    let mut wide = js.clone();
    wide.name[1] = "épaule".into();
    wide.position = vec![1.0, 2.0, 3.0];
    wide.effort = vec![f64::INFINITY, 0.0, f64::NEG_INFINITY];
    let enc_wide = encode_typed(&wide).unwrap();
    agree(&enc_wide, "utf-8 names");
    let v = JointStateView::read(&enc_wide).unwrap();
    assert_eq!(v.names[1], "épaule");
    assert!(v.position.all_finite() && !v.effort.all_finite());
    // Big-endian CDR of the same message.
    let be = cdr::serialize::<_, _, cdr::CdrBe>(&js, cdr::Infinite).unwrap();
    agree(&be, "big-endian");
    assert!(JointStateView::read(&be).is_some());
    for n in 0..be.len() {
        agree(&be[..n], &format!("big-endian truncated at {n}"));
    }
}
