//! `convert` cuts a bag: topics by name, pattern and exclusion, and a time window from the bag's
//! start or absolute. The output is read back with the `mcap` crate (an independent reader) and
//! compared message for message with what the same reader finds in the input.

use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{root, run, tempdir};

/// (topic, log time, payload) of every message, read with the `mcap` crate.
fn messages(path: &Path) -> Vec<(String, u64, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    mcap::MessageStream::new(&bytes)
        .unwrap()
        .map(|m| {
            let m = m.unwrap();
            (m.channel.topic.clone(), m.log_time, m.data.into_owned())
        })
        .collect()
}

#[test]
fn convert_keeps_exactly_the_selected_topics_and_window() {
    let input = root().join("bags/sensors/sensors.mcap");
    let all = messages(&input);
    let start = all.iter().map(|m| m.1).min().unwrap();
    let dir = tempdir("cut");
    type Keep = Box<dyn Fn(&str, u64) -> bool>;
    let cases: Vec<(Vec<&str>, Keep)> = vec![
        (
            vec![
                "--topics",
                "/imu/data,/lidar/points",
                "--start",
                "+2",
                "--end",
                "+5s",
            ],
            Box::new(move |t: &str, l: u64| {
                (t == "/imu/data" || t == "/lidar/points")
                    && l >= start + 2_000_000_000
                    && l < start + 5_000_000_000
            }),
        ),
        (
            vec![
                "--regex",
                "^/camera",
                "--exclude-topics",
                "/camera/camera_info",
            ],
            Box::new(|t: &str, _| t == "/camera/image_raw"),
        ),
        (
            vec!["--exclude-regex", "camera", "--end", "2025-11-30T00:00:10Z"],
            Box::new(|t: &str, l: u64| !t.contains("camera") && l < 1_764_460_810_000_000_000),
        ),
    ];
    for (k, (args, keep)) in cases.into_iter().enumerate() {
        let out = dir.join(format!("cut{k}.mcap"));
        let mut a = vec!["convert", input.to_str().unwrap(), out.to_str().unwrap()];
        a.extend(&args);
        let (code, _, err) = run(&a);
        assert_eq!(code, 0, "{args:?}: {err}");
        let want: Vec<_> = all.iter().filter(|m| keep(&m.0, m.1)).cloned().collect();
        let got = messages(&out);
        assert!(!want.is_empty(), "{args:?}: the case selects nothing");
        assert_eq!(got.len(), want.len(), "{args:?}");
        assert!(got == want, "{args:?}: messages differ");
        // Only the kept topics are in the output's channels (and its summary).
        let topics: BTreeMap<&str, ()> = want.iter().map(|m| (m.0.as_str(), ())).collect();
        let (_, info, _) = run(&["info", out.to_str().unwrap(), "--json"]);
        let v: serde_json::Value = serde_json::from_str(&info).unwrap();
        let names: Vec<&str> = v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["topic"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            topics.keys().copied().collect::<Vec<_>>(),
            "{args:?}"
        );
    }
    // Unknown topics and bad patterns name what is wrong.
    let out = dir.join("bad.mcap");
    // A malformed time or pattern is a usage error (2), as every malformed parameter.
    for (args, needle, want) in [
        (vec!["--topics", "/nope"], "/nope", 1),
        (vec!["--regex", "("], "--regex", 2),
        (vec!["--start", "later"], "later", 2),
    ] {
        let mut a = vec!["convert", input.to_str().unwrap(), out.to_str().unwrap()];
        a.extend(&args);
        let (code, _, err) = run(&a);
        assert_eq!(code, want, "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: an output was left");
    }
}
