//! Compares the estimator with the truth files of the shared test bags.
//!
//! The fixtures in `tests/data/` are 6 s excerpts of the bags (commands from 1 s to 7 s after
//! the first command, responses slightly wider), dumped with Python `mcap-ros2-support`;
//! `arm_split`'s joint_states stamps are already mapped sim → wall through a linear fit of
//! /clock values against log time, as the caller does. `arm_ack` is the whole bag.

use bagscope_matching::*;
use serde_json::Value;
use std::path::PathBuf;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn series(v: &Value) -> JointSeries {
    let t0 = v["t0_ns"].as_i64().unwrap();
    let ints = |k: &str| -> Vec<i64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| t0 + x.as_i64().unwrap())
            .collect()
    };
    let stamp_ns = ints("stamp_rel_ns");
    let log_time_ns = ints("log_rel_ns");
    let names: Vec<String> = v["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    let values: Vec<Vec<f64>> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    JointSeries {
        names: vec![names.into(); stamp_ns.len()],
        stamp_ns,
        log_time_ns,
        values,
        points: None,
    }
}

fn load(path: &PathBuf) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Truth file, or `None` (skip) when the shared bags are not on this machine; under CI a
/// missing truth file fails the test.
fn truth(bag: &str) -> Option<Value> {
    let name = format!("{bag}.truth.json");
    let p = bagscope_testkit::shared_path("bags", &name)?.join(name);
    Some(load(&p).unwrap_or_else(|| panic!("{} is not a truth file", p.display())))
}

/// Runs the matcher on one dump and checks it against the truth; returns the report.
fn check(bag: &str, dump: &Value, truth: &Value) -> MatchReport {
    let cmd = series(&dump["cmd"]);
    let resp = series(&dump["resp"]);
    let rep = match_series(&cmd, &resp, &MatchOptions::default()).unwrap();
    let true_delay = (truth["delay_s"].as_f64().unwrap() * 1e9).round() as i64;
    eprintln!(
        "{bag}: {} | truth {:.1} ms, off by {:+.2} ms, std {:.2} ms",
        rep.summary,
        true_delay as f64 / 1e6,
        (rep.delay_ns - true_delay) as f64 / 1e6,
        rep.delay.std_ns.unwrap_or(f64::NAN) / 1e6
    );
    assert_eq!(
        rep.response_kind.as_str(),
        truth["response_kind"].as_str().unwrap(),
        "{bag}"
    );
    assert!(
        (rep.delay_ns - true_delay).abs() < 2_000_000,
        "{bag}: {}",
        rep.summary
    );
    assert!(
        rep.error_after.rms < rep.error_before.rms / 3.0,
        "{bag}: {}",
        rep.summary
    );
    let joints = truth["joints"].as_array().unwrap();
    let bias = truth["bias_rad"].as_array().unwrap();
    for (j, b) in joints.iter().zip(bias) {
        let (j, b) = (j.as_str().unwrap(), b.as_f64().unwrap());
        let e = rep.error_after.per_joint[j];
        if b.abs() > 0.0 {
            assert!((e - b.abs()).abs() < 0.005, "{bag} {j}: {e} vs bias {b}");
        } else {
            assert!(e < 0.01, "{bag} {j}: {e}");
        }
    }
    rep
}

#[test]
fn fixtures_match_truth() {
    for bag in ["arm_real", "arm_sim", "arm_ack", "arm_split"] {
        let Some(t) = truth(bag) else { continue };
        let dump =
            load(&crate_dir().join("tests/data").join(format!("{bag}.json"))).expect("fixture");
        check(bag, &dump, &t);
    }
}

/// Whole bags, dumped by the same script into `$BAGSCOPE_MATCH_FULL_DIR/full_<bag>.json`.
#[test]
#[ignore = "needs full-bag dumps; set BAGSCOPE_MATCH_FULL_DIR"]
fn full_bags_match_truth() {
    let Some(dir) = std::env::var_os("BAGSCOPE_MATCH_FULL_DIR") else {
        return;
    };
    for bag in ["arm_real", "arm_sim", "arm_ack", "arm_split"] {
        let Some(t) = truth(bag) else { continue };
        let dump = load(&PathBuf::from(&dir).join(format!("full_{bag}.json"))).expect("dump");
        let rep = check(bag, &dump, &t);
        eprintln!(
            "  segments {:?}",
            rep.segments
                .used
                .iter()
                .map(|s| (s.start_rel_ns, s.end_rel_ns))
                .collect::<Vec<_>>()
        );
        eprintln!("  per-joint after {:?}", rep.error_after.per_joint);
        eprintln!(
            "  per-joint delay {:?}",
            rep.per_joint_delay
                .iter()
                .map(|(k, v)| (k, v.delay_ns))
                .collect::<Vec<_>>()
        );
    }
}
