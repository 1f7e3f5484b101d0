//! The synthetic fault suite (`bagscope synth --suite DIR`): every case's manifest states the
//! decisions its construction implies; the emulator, driven through the CLI
//! (`bagscope sync … --json --evidence`), must reproduce them exactly. Also: the suite is
//! reproducible, identical inputs decide identically, and every run is byte-for-byte repeatable.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

mod common;
use common::run;
use common::tempdir;

fn write_suite(tag: &str) -> common::Tmp {
    let dir = tempdir(tag);
    let (code, _, err) = run(&["synth".into(), "--suite".into(), dir.display().to_string()]);
    assert_eq!(code, 0, "{err}");
    dir
}

fn manifests(dir: &Path) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p
                .file_name()?
                .to_str()?
                .strip_suffix(".manifest.json")?
                .to_string();
            let m = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some((name, m))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// What one sync run decided.
#[derive(Debug, PartialEq)]
struct Decided {
    json: Value,
    stdout: String,
    evidence: String,
    /// Member indices per set, emit order.
    sets: Vec<Vec<u64>>,
    /// Per topic (in --topics order): reason → count.
    drops: Vec<BTreeMap<String, u64>>,
}

fn sync(dir: &Path, case: &str, args: &[String], tag: &str) -> Decided {
    let ev = dir.join(format!("{case}.{tag}.evidence.jsonl"));
    let mut a = vec!["sync".to_string(), dir.join(case).display().to_string()];
    a.extend(args.iter().cloned());
    a.extend([
        "--json".into(),
        "--evidence".into(),
        ev.display().to_string(),
    ]);
    let (code, out, err) = run(&a);
    assert_eq!(code, 0, "{case} {args:?}: {err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let evidence = std::fs::read_to_string(&ev).unwrap();
    let sets = evidence
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["index"].as_u64().unwrap())
                .collect()
        })
        .collect();
    let drops = json["drops_per_topic"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["by_reason"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect()
        })
        .collect();
    Decided {
        json,
        stdout: out,
        evidence,
        sets,
        drops,
    }
}

fn counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

fn check_sync(case: &str, chk: &Value, d: &Decided, fails: &mut Vec<String>) {
    let name = format!("{case}/{}", chk["name"].as_str().unwrap());
    let e = &chk["expect"];
    let topics: Vec<&str> = chk["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let mut fail = |what: String| fails.push(format!("{name}: {what} (why: {})", chk["why"]));
    let n = d.sets.len() as u64;
    assert_eq!(
        d.json["sets"].as_u64(),
        Some(n),
        "{name}: evidence lines = sets"
    );
    if let Some(x) = e["sets"].as_u64() {
        if n != x {
            fail(format!("sets {n}, expected {x}"));
        }
    }
    if let Some(x) = e["sets_min"].as_u64() {
        if n < x {
            fail(format!("sets {n}, expected at least {x}"));
        }
    }
    if let Some(list) = e["set_list"].as_array() {
        let want: Vec<Vec<u64>> = list
            .iter()
            .map(|s| {
                s.as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i.as_u64().unwrap())
                    .collect()
            })
            .collect();
        if want != d.sets {
            fail(format!("set list {:?}, expected {want:?}", d.sets));
        }
    }
    if let Some(by) = e["drops_by_topic"].as_object() {
        for (t, want) in by {
            let k = topics.iter().position(|x| x == t).unwrap();
            let want = counts(want);
            if d.drops[k] != want {
                fail(format!("drops on {t} {:?}, expected {want:?}", d.drops[k]));
            }
        }
    }
    let per_topic = d.json["drops_per_topic"].as_array().unwrap();
    if let Some(by) = e["missing_partner_by_topic"].as_object() {
        for (t, want) in by {
            let k = topics.iter().position(|x| x == t).unwrap();
            // The JSON names the missing input by its index in --topics.
            let got: BTreeMap<String, u64> = counts(&per_topic[k]["missing_partner"])
                .into_iter()
                .map(|(i, c)| (topics[i.parse::<usize>().unwrap()].to_string(), c))
                .collect();
            if got != counts(want) {
                fail(format!("missing partners of {t} {got:?}, expected {want}"));
            }
        }
    }
    if let Some(by) = e["skew_span_ns_by_topic"].as_object() {
        for (t, want) in by {
            let k = topics.iter().position(|x| x == t).unwrap();
            let s = &per_topic[k]["skew_span_ns"];
            let got = [s["min"].as_i64(), s["max"].as_i64()];
            let want = [want[0].as_i64(), want[1].as_i64()];
            if got != want {
                fail(format!("skew spans of {t} {got:?}, expected {want:?}"));
            }
        }
    }
    let rejected = counts(&d.json["freshness"]["rejected"]);
    match e.get("rejected") {
        Some(want) => {
            if rejected != counts(want) {
                fail(format!("rejected {rejected:?}, expected {want}"));
            }
        }
        None => {
            if !rejected.is_empty() {
                fail(format!("rejected {rejected:?}, expected none"));
            }
        }
    }
    if let Some(x) = e["emit_age_max_ns_at_least"].as_i64() {
        let got = d.json["emit_age_ns"]["max"].as_i64().unwrap_or(i64::MIN);
        if got < x {
            fail(format!("emit age max {got}, expected >= {x}"));
        }
    }
    if let Some(x) = e["span_max_ns_at_most"].as_i64() {
        let got = d.json["span_ns"]["max"].as_i64().unwrap_or(i64::MAX);
        if got > x {
            fail(format!("span max {got}, expected <= {x}"));
        }
    }
}

#[test]
fn suite_cases_decide_as_their_manifests_say() {
    let dir = write_suite("cases");
    let ms = manifests(&dir);
    assert_eq!(ms.len(), 10, "ten cases");
    let mut fails = Vec::new();
    let mut checks = 0;
    for (case, m) in &ms {
        let sc = m["sync_checks"].as_array().unwrap();
        let mut decided = Vec::new();
        for (i, chk) in sc.iter().enumerate() {
            let args: Vec<String> = chk["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            let d = sync(&dir, case, &args, &format!("{i}a"));
            check_sync(case, chk, &d, &mut fails);
            // Replay: the same run again is byte-identical (JSON and evidence).
            let again = sync(&dir, case, &args, &format!("{i}b"));
            assert_eq!(
                d.stdout, again.stdout,
                "{case} {args:?}: JSON differs between runs"
            );
            assert_eq!(
                d.evidence, again.evidence,
                "{case} {args:?}: evidence differs"
            );
            decided.push(d);
            checks += 1;
        }
        for p in m["parity"].as_array().unwrap() {
            let (i, j) = (
                p[0].as_u64().unwrap() as usize,
                p[1].as_u64().unwrap() as usize,
            );
            assert_eq!(
                decided[i].sets, decided[j].sets,
                "{case}: parity {i} vs {j} (sets)"
            );
            assert_eq!(
                decided[i].drops, decided[j].drops,
                "{case}: parity {i} vs {j} (drops)"
            );
        }
    }
    assert!(checks >= 30, "{checks} checks");
    assert!(
        fails.is_empty(),
        "{} failed:\n{}",
        fails.len(),
        fails.join("\n")
    );
}

#[test]
fn suite_is_reproducible() {
    let a = write_suite("repro-a");
    let b = write_suite("repro-b");
    for (case, _) in manifests(&a) {
        let mcap = format!("{case}/{case}.mcap");
        assert_eq!(
            std::fs::read(a.join(&mcap)).unwrap(),
            std::fs::read(b.join(&mcap)).unwrap(),
            "{case}"
        );
        let man = format!("{case}.manifest.json");
        assert_eq!(
            std::fs::read(a.join(&man)).unwrap(),
            std::fs::read(b.join(&man)).unwrap(),
            "{case}"
        );
    }
}

/// The two C++-only policies through the CLI: their parameters' usage errors, and LatestTime's
/// undefined upstream behaviour refused with the message named (case 09's /tf, as input 1,
/// sends twice before /camera's first message).
#[test]
fn approx_epsilon_and_latest_refuse_what_upstream_cannot_run() {
    let dir = write_suite("c-only");
    let bag = |c: &str| dir.join(c).display().to_string();
    let sync = |args: &[&str]| {
        let mut a = vec!["sync".to_string()];
        a.extend(args.iter().map(|s| s.to_string()));
        run(&a)
    };
    let b04 = bag("04_dropped_message");
    let (code, _, err) = sync(&[&b04, "--topics", "/a,/b", "--policy", "approx-epsilon"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--epsilon") && err.contains("needs an epsilon"),
        "{err}"
    );
    let (code, _, err) = sync(&[
        &b04,
        "--topics",
        "/a,/b",
        "--policy",
        "approx-epsilon",
        "--epsilon=-1ms",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("epsilon >= 0"), "{err}");
    let (code, _, err) = sync(&[
        &b04,
        "--topics",
        "/a,/b",
        "--policy",
        "latest",
        "--rate-config",
        "0.9,0.3",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("A,E,M"), "{err}");
    let three = ["--rate-config", "0.9,0.3,10"].repeat(3);
    let mut args = vec![b04.as_str(), "--topics", "/a,/b", "--policy", "latest"];
    args.extend(three.iter().copied());
    let (code, _, err) = sync(&args);
    assert_ne!(code, 0);
    assert!(err.contains("one per topic"), "{err}");
    let (code, _, err) = sync(&[
        &b04,
        "--topics",
        "/a,/b",
        "--policy",
        "approx",
        "--rate-config",
        "0.9,0.3,10",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("latest only"), "{err}");
    let b09 = bag("09_tf_gap");
    let (code, out, err) = sync(&[
        &b09,
        "--topics",
        "/camera,/tf",
        "--policy",
        "latest",
        "--json",
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(out.is_empty(), "no sets claimed: {out}");
    for want in [
        "message 1 of input 1",
        "/tf",
        "undefined behaviour",
        "log time",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    // In the other order every rate slot exists when it is read: sets, no header warning.
    let (code, out, err) = sync(&[
        &b09,
        "--topics",
        "/tf,/camera",
        "--policy",
        "latest",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["sets"].as_u64().unwrap() > 0);
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["code"] != "headerless"),
        "{v}"
    );
}

/// `--recommend` for approx-epsilon sweeps epsilon (as the slop) and queue on the bag's own
/// arrivals: case 07's /b is 30 to 35.9 ms ahead of /a, so the inclusive epsilon must cover it.
#[test]
fn recommend_approx_epsilon() {
    let dir = write_suite("eps-rec");
    let (code, out, err) = run(&[
        "sync".into(),
        dir.join("07_clock_offset_and_drift").display().to_string(),
        "--topics".into(),
        "/a,/b".into(),
        "--policy".into(),
        "approx-epsilon".into(),
        "--recommend".into(),
        "--json".into(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["policy"], "approx-epsilon", "{v}");
    let r = &v["recommendation"];
    assert!(r["match_rate"].as_f64().unwrap() >= 0.98, "{r}");
    assert!(r["slop_ns"].as_i64().unwrap() >= 35_900_000, "{r}");
}
