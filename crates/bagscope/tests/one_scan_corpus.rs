//! What `clocks` and `report` take from their one scan equals what separate readings give, on
//! every bag of `bags/`, `../shared/bags` and `../shared/corpus/ros2{,-more}`:
//!
//! * the TF edge timing `clocks` collects during its stamp scan equals
//!   [`bagscope::tf::tf_timing_of`], which reads the TF topics in a scan of their own;
//! * the clock analysis of the stamped topics made from the analysis of every topic
//!   ([`analyze_with_subset`]) equals the analysis of the stamped topics alone, and so
//!   `check`'s verdicts in `clocks_and_check_of` equal `check`'s own.

use std::path::{Path, PathBuf};

use bagscope::check::{check_of, clocks_and_check_of, CheckOptions};
use bagscope::clock_analysis::{analyze, analyze_with_subset, Axis, ClocksOptions, TopicTimes};
use bagscope::clocks::{clocks_data_of, topic_times};
use bagscope::io::Bag;
use bagscope::StampSource;

/// Bag roots as `bench/json_outputs.sh` finds them: folders with a `metadata.yaml`, and
/// `.mcap` / `.db3` files outside such folders.
/// Also the TF scenarios and the benchmark bag `bagscope-synth` writes into `tmp` (TF edges
/// are compared on them whether or not `../shared` is there); whether `../shared` was found.
fn bags(tmp: &Path) -> (Vec<PathBuf>, bool) {
    let mut tops = vec![bagscope_testkit::root().join("bags")];
    let mut shared = true;
    for s in ["bags", "corpus/ros2", "corpus/ros2-more"] {
        match bagscope_testkit::shared_path(s, "") {
            Some(p) => tops.push(p),
            None => shared = false,
        }
    }
    let mut out = Vec::new();
    for name in ["arm_tf", "sensors_tf"] {
        out.push(bagscope_synth::generate(name, tmp, 1).unwrap());
    }
    // The benchmark bag's mix: 8 transforms a TF message, over many chunks.
    out.push(bagscope_synth::perf::generate(tmp, 20_000).unwrap());
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        if d.join("metadata.yaml").is_file() {
            out.push(d.to_path_buf());
            return;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "mcap" || x == "db3") {
                out.push(p);
            }
        }
    }
    for t in tops {
        walk(&t, &mut out);
    }
    (out, shared)
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// The topics `check`'s clock analysis takes when its rows are `clocks`' own: stamped ones
/// with messages.
fn stamped(times: &[TopicTimes]) -> Vec<bool> {
    times
        .iter()
        .map(|t| t.source != StampSource::None && !t.stamp_ns.is_empty())
        .collect()
}

#[test]
fn one_scan_equals_separate_readings_on_every_bag() {
    let (mut opened, mut with_tf, mut with_unstamped) = (0, 0, 0);
    let tmp = tempfile::tempdir().unwrap();
    let (bags, shared) = bags(tmp.path());
    for p in bags {
        let Ok(bag) = Bag::open(&p) else { continue };
        opened += 1;
        let copts = ClocksOptions::default();
        let d = clocks_data_of(&bag, &copts).unwrap();

        // TF timing from the stamp scan against a scan of the TF topics alone.
        let map = d
            .clock_map
            .as_ref()
            .filter(|_| d.report.recorder_axis == Axis::Wall);
        let alone = bagscope::tf::tf_timing_of(&bag, map).unwrap();
        let edges = alone.as_ref().map(|t| t.edges.clone()).unwrap_or_default();
        assert_eq!(json(&d.report.tf_edges), json(&edges), "{p:?}");
        for w in alone.iter().flat_map(|t| &t.warnings) {
            assert!(d.report.warnings.contains(w), "{p:?}: {w:?}");
        }
        with_tf += usize::from(!edges.is_empty());

        // The stamped topics' analysis from every topic's, against their analysis alone.
        let (times, _) = topic_times(&bag);
        let keep = stamped(&times);
        let (all, sub) = analyze_with_subset(&times, &copts, &keep);
        assert_eq!(json(&all), json(&analyze(&times, &copts)), "{p:?}");
        let kept: Vec<TopicTimes> = times
            .iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .map(|(t, _)| t.clone())
            .collect();
        assert_eq!(json(&sub), json(&analyze(&kept, &copts)), "{p:?}");
        with_unstamped +=
            usize::from(kept.len() < times.iter().filter(|t| !t.log_time_ns.is_empty()).count());

        // `check` and `clocks` from one scan against the commands alone.
        let o = CheckOptions::default();
        let (clocks, check) = clocks_and_check_of(&bag, &copts, &o).unwrap();
        assert_eq!(json(&clocks.report), json(&d.report), "{p:?}");
        assert_eq!(json(&check), json(&check_of(&bag, &o).unwrap()), "{p:?}");
    }
    // The comparisons covered what they are about: bags with TF, and bags whose unstamped
    // topics are in clocks' analysis and not in check's.
    // bags/ holds 7, the synthesized TF bags 2; the shared corpus dozens more.
    assert!(
        opened >= if shared { 20 } else { 9 },
        "{opened} bags opened"
    );
    assert!(
        with_tf > 0 && with_unstamped > 0,
        "{with_tf} {with_unstamped}"
    );
    eprintln!("{opened} bags, {with_tf} with TF edges, {with_unstamped} with unstamped topics");
}
