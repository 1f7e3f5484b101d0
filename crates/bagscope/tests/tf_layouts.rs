//! `clocks`' TF edge timing reads a TF message by its stamps alone when its frame names and
//! lengths are those of an earlier message of the same publisher (`TfLayout`). A bag whose TF
//! publishers differ only in a name of the same length, send a name that is not UTF-8, cut
//! payloads, ROS 1 style names, empty and self-referencing frames, over many small chunks
//! (read by several threads): the edges are those built into the bag, and equal those of a
//! reading of the TF topic alone (`tf_timing_of`, which reads every message the slow way).

use std::collections::BTreeMap;
use std::path::Path;

use bagscope::clock_analysis::ClocksOptions;
use bagscope::clocks::clocks_data_of;
use bagscope::io::Bag;
use bagscope_msg::types::{
    Header, Quaternion, TFMessage, Time, Transform, TransformStamped, Vector3,
};

const WALL: i64 = 1_764_460_800_000_000_000;
const MS: i64 = 1_000_000;

fn tf(stamp: i64, edges: &[(&str, &str)]) -> Vec<u8> {
    let transforms = edges
        .iter()
        .map(|(p, c)| TransformStamped {
            header: Header {
                stamp: Time::from_ns(stamp),
                frame_id: (*p).into(),
            },
            child_frame_id: (*c).into(),
            transform: Transform {
                translation: Vector3 {
                    x: 1.0,
                    y: 2.0,
                    z: 3.0,
                },
                rotation: Quaternion {
                    x: 0.0,
                    y: 0.0,
                    z: 0.0,
                    w: 1.0,
                },
            },
        })
        .collect();
    bagscope_msg::encode_typed(&TFMessage { transforms }).unwrap()
}

/// Writes the bag; returns the samples each edge (parent, child as tf2 reads them) must have
/// and how many messages cannot be decoded.
fn write_bag(path: &Path) -> (BTreeMap<(String, String), usize>, usize) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = mcap::WriteOptions::new()
        .profile("ros2")
        .chunk_size(Some(4096))
        .create(std::io::BufWriter::new(f))
        .unwrap();
    let text = bagscope_msg::schema::builtin::schema_text("tf2_msgs/msg/TFMessage").unwrap();
    let s = w
        .add_schema("tf2_msgs/msg/TFMessage", "ros2msg", text.as_bytes())
        .unwrap();
    let ch = w.add_channel(s, "/tf", "cdr", &BTreeMap::new()).unwrap();
    let mut want: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut bad = 0;
    for k in 0..3000i64 {
        let stamp = WALL + k * MS;
        let edges: &[(&str, &str)] = match k % 4 {
            0 => &[("odom", "base_link"), ("base_link", "arm")],
            // Same lengths, one name differs by a letter.
            1 => &[("odom", "base_link"), ("base_link", "arn")],
            2 => &[("/map", "odom")],
            _ => &[("a", "a"), ("", "x"), ("odom", "base_link")],
        };
        let mut data = tf(stamp, edges);
        if k % 4 == 1 && k % 97 == 5 {
            // "arn" → bytes that are not UTF-8, the layout's length kept.
            let at = data.windows(3).position(|x| x == b"arn").unwrap();
            data[at] = 0xff;
            bad += 1;
        } else if k % 89 == 7 {
            data.truncate(data.len() - 9);
            bad += 1;
        } else {
            for (p, c) in edges {
                let (p, c) = (p.trim_start_matches('/'), c.trim_start_matches('/'));
                if !p.is_empty() && !c.is_empty() && p != c {
                    *want.entry((p.to_string(), c.to_string())).or_default() += 1;
                }
            }
        }
        let h = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: k as u32,
            log_time: (stamp + MS / 2) as u64,
            publish_time: (stamp + MS / 2) as u64,
        };
        w.write_to_known_channel(&h, &data).unwrap();
    }
    w.finish().unwrap();
    (want, bad)
}

#[test]
fn tf_messages_read_by_their_layout_give_the_edges_of_a_full_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tf.mcap");
    let (want, bad) = write_bag(&path);
    let bag = Bag::open(&path).unwrap();
    let d = clocks_data_of(&bag, &ClocksOptions::default()).unwrap();
    let got: BTreeMap<(String, String), usize> = d
        .report
        .tf_edges
        .iter()
        .map(|e| {
            (
                (e.edge.parent.clone(), e.edge.child.clone()),
                e.edge.samples,
            )
        })
        .collect();
    assert_eq!(got, want);
    let undecodable: Vec<_> = d
        .report
        .warnings
        .iter()
        .filter(|w| w.code == bagscope::WarningCode::Undecodable)
        .collect();
    assert_eq!(undecodable.len(), 1, "{undecodable:?}");
    assert!(
        undecodable[0]
            .message
            .starts_with(&format!("{bad} message(s)")),
        "{}",
        undecodable[0].message
    );
    let alone = bagscope::tf::tf_timing_of(&bag, None).unwrap().unwrap();
    assert_eq!(
        serde_json::to_string(&d.report.tf_edges).unwrap(),
        serde_json::to_string(&alone.edges).unwrap()
    );
    // Each edge's stamps as written: 1 ms steps of the messages that carry it.
    let odom = d
        .report
        .tf_edges
        .iter()
        .find(|e| e.edge.parent == "map" && e.edge.child == "odom")
        .unwrap();
    assert_eq!(odom.edge.first_stamp_ns, WALL + 2 * MS);
    assert_eq!(
        odom.edge.lag_ns.as_ref().map(|l| (l.min, l.max)),
        Some((MS / 2, MS / 2))
    );
}
