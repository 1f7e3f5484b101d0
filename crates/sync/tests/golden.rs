//! Golden vectors produced by the real upstream implementations.

use bagscope_sync::{
    count_sets, emulate, seconds_to_ns, Arrival, Policy, RateConfig, SyncConfig, SyncOutcome,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn golden_dir() -> Option<PathBuf> {
    bagscope_testkit::shared_path("sync-golden", "vectors")
}

fn arrivals_of(v: &Value) -> (Vec<Arrival>, Vec<(usize, i64)>) {
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for a in v["arrivals"].as_array().unwrap() {
        let topic = a["topic"].as_u64().unwrap() as usize;
        let headerless = a
            .get("headerless")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let stamp_ns = if headerless {
            None
        } else {
            Some(a["stamp_ns"].as_i64().unwrap())
        };
        out.push(Arrival::new(
            topic,
            stamp_ns,
            a["arrival_ns"].as_i64().unwrap(),
        ));
        ids.push((topic, a["id"].as_i64().unwrap()));
    }
    (out, ids)
}

fn i64_list(v: &Value) -> Vec<i64> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_i64().unwrap()).collect())
        .unwrap_or_default()
}

/// LatestTime's `rate_config`: null, `[[a, e, m]]` or one `[a, e, m]` per topic.
fn rate_configs(v: &Value) -> Vec<RateConfig> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let x: Vec<f64> = c
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                        .collect();
                    RateConfig {
                        rate_ema_alpha: x[0],
                        error_ema_alpha: x[1],
                        margin: x[2],
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

fn config(policy: Policy, n: usize, p: &Value) -> SyncConfig {
    // LatestTime has no queue.
    let q = p["queue_size"].as_u64().unwrap_or(0) as usize;
    let mut c = SyncConfig::new(policy, n, q);
    if let Some(e) = p.get("epsilon_ns").and_then(Value::as_i64) {
        c.epsilon_ns = e;
    }
    if let Some(r) = p.get("rate_config") {
        c.rate_config = rate_configs(r);
    }
    if let Some(ap) = p.get("age_penalty").and_then(Value::as_f64) {
        c.age_penalty = ap;
    }
    c.max_interval_ns = p.get("max_interval_duration_ns").and_then(Value::as_i64);
    c.lower_bounds_ns = p
        .get("inter_message_lower_bounds_ns")
        .map(i64_list)
        .unwrap_or_default();
    if let Some(s) = p.get("slop").and_then(Value::as_f64) {
        c.slop_ns = seconds_to_ns(s).unwrap();
        if let Some(e) = p.get("slop_ns_effective").and_then(Value::as_i64) {
            assert_eq!(c.slop_ns, e, "slop conversion");
        }
    }
    c.queue_offset_ns = p.get("queue_offset").map(i64_list).unwrap_or_default();
    c.allow_headerless = p
        .get("allow_headerless")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    c.sync_arrival_time = p
        .get("sync_arrival_time")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    c
}

/// Sets as vector ids (topic order), and emit-after-arrival indices.
fn sets_as_ids(o: &SyncOutcome, ids: &[(usize, i64)]) -> (Vec<Vec<i64>>, Vec<u64>) {
    let sets = o
        .sets
        .iter()
        .map(|s| s.member_arrivals.iter().map(|&ai| ids[ai].1).collect())
        .collect();
    let emit = o.sets.iter().map(|s| s.emit_after_arrival as u64).collect();
    (sets, emit)
}

fn expected(v: &Value) -> (Vec<Vec<i64>>, Vec<u64>) {
    let sets = v["expected_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(i64_list)
        .collect();
    let emit = v["expected_emit_after_arrival"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect())
        .unwrap_or_default();
    (sets, emit)
}

/// The vectors vendored in the repository (`tests/data/sync-golden/vectors`, always there),
/// and those of the shared data that are not vendored, when it is present.
fn vector_files() -> Vec<PathBuf> {
    let json_in = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|rd| {
                rd.map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|e| e == "json"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let vendored =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sync-golden/vectors");
    let mut files = json_in(&vendored);
    assert!(
        files.len() >= 407,
        "{} vendored vectors in {}",
        files.len(),
        vendored.display()
    );
    if let Some(dir) = golden_dir() {
        let have: std::collections::BTreeSet<_> = files
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_owned()))
            .collect();
        files.extend(
            json_in(&dir.join("vectors"))
                .into_iter()
                .filter(|p| p.file_name().is_some_and(|n| !have.contains(n))),
        );
    }
    files.sort();
    files
}

#[test]
fn golden_vectors() {
    let files = vector_files();
    let mut pass: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut check = |label: &str,
                     name: &str,
                     policy: Policy,
                     v: &Value,
                     p: &Value,
                     exp: (Vec<Vec<i64>>, Vec<u64>)| {
        let (arr, ids) = arrivals_of(v);
        let cfg = config(policy, v["topics"].as_u64().unwrap() as usize, p);
        let got = emulate(&cfg, &arr).map(|o| sets_as_ids(&o, &ids));
        let e = pass.entry(label.to_string()).or_default();
        e.1 += 1;
        // The count-only run of recommendation sweeps must agree with upstream too.
        let counted = count_sets(&cfg, &arr).ok();
        match got {
            Ok(g)
                if g.0 == exp.0
                    && (exp.1.is_empty() || g.1 == exp.1)
                    && counted == Some(exp.0.len()) =>
            {
                e.0 += 1
            }
            other => failures.push(format!(
                "{name} [{label}]: got {other:?}\n   expected {exp:?}"
            )),
        }
    };
    for f in &files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let pname = v["policy"].as_str().unwrap();
        // Every vector must reproduce: every upstream policy with vectors is emulated.
        let policy = Policy::parse(pname).unwrap_or_else(|e| panic!("{name}: {e}"));
        check(pname, &name, policy, &v, &v["params"], expected(&v));
        if let Some(sweep) = v.get("sweep").and_then(Value::as_array) {
            for (k, s) in sweep.iter().enumerate() {
                let mut p = v["params"].clone();
                p["slop"] = s["slop"].clone();
                p["slop_ns_effective"] = s["slop_ns_effective"].clone();
                check(
                    "py_approximate_time (sweep points)",
                    &format!("{name}#{k}"),
                    policy,
                    &v,
                    &p,
                    expected(s),
                );
            }
        }
        if let Some(c) = v.get("cpp_approximate_time_same_arrivals") {
            check(
                "cpp_approximate_time (sweep arrivals)",
                &name,
                Policy::Approx,
                &v,
                &c["params"],
                expected(c),
            );
        }
    }
    for (k, (ok, n)) in &pass {
        println!("golden {k}: {ok}/{n}");
    }
    assert!(pass.values().map(|p| p.1).sum::<usize>() >= 407);
    // The two C++-only policies' vectors (SPEC §11–12) are all compared.
    assert!(pass
        .get("cpp_approximate_epsilon_time")
        .is_some_and(|p| p.1 >= 151));
    assert!(pass.get("cpp_latest_time").is_some_and(|p| p.1 >= 38));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The `.truth.json` files express the same cases with CLI policy names and per-topic indices
/// (arrival order), which is what `EmittedSet::members` reports.
#[test]
fn golden_truth_files_use_per_topic_indices() {
    let Some(dir) = golden_dir() else { return };
    let bags = dir.join("bags");
    assert!(bags.is_dir(), "{} is missing", bags.display());
    let mut n = 0;
    let mut failures = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&bags)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".truth.json"))
        .collect();
    names.sort();
    for f in names {
        let t: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let src = dir.join("vectors").join(t["source"].as_str().unwrap());
        let text = std::fs::read_to_string(&src)
            .unwrap_or_else(|e| panic!("{}: its source {}: {e}", f.display(), src.display()));
        let v: Value = serde_json::from_str(&text).unwrap();
        let policy = Policy::parse(t["policy"].as_str().unwrap()).unwrap();
        let n_topics = t["topics"].as_array().unwrap().len();
        // `queue_size: null` for latest, which has no queue.
        let mut cfg = SyncConfig::new(
            policy,
            n_topics,
            t["queue_size"].as_u64().unwrap_or(0) as usize,
        );
        if let Some(e) = t["epsilon_ns"].as_i64() {
            cfg.epsilon_ns = e;
        }
        cfg.rate_config = rate_configs(&t["rate_config"]);
        if let Some(ap) = t["age_penalty"].as_f64() {
            cfg.age_penalty = ap;
        }
        cfg.max_interval_ns = t["max_interval_ns"].as_i64();
        cfg.lower_bounds_ns = i64_list(&t["lower_bounds_ns"]);
        cfg.queue_offset_ns = i64_list(&t["queue_offset_ns"]);
        if let Some(s) = t["slop_s"].as_f64() {
            cfg.slop_ns = seconds_to_ns(s).unwrap();
        }
        cfg.sync_arrival_time = t["sync_arrival_time"].as_bool().unwrap_or(false);
        cfg.allow_headerless = t["allow_headerless"].as_bool().unwrap_or(false);
        let (arr, _) = arrivals_of(&v);
        let o = emulate(&cfg, &arr).unwrap();
        let got: Vec<Vec<i64>> = o
            .sets
            .iter()
            .map(|s| s.members.iter().map(|&m| m as i64).collect())
            .collect();
        let exp: Vec<Vec<i64>> = t["expected_sets"]
            .as_array()
            .unwrap()
            .iter()
            .map(i64_list)
            .collect();
        n += 1;
        if got != exp {
            failures.push(f.display().to_string());
        }
    }
    println!("truth files: {}/{n}", n - failures.len());
    assert!(n >= 407, "{n} truth files in {}", bags.display());
    assert!(failures.is_empty(), "{failures:?}");
}
