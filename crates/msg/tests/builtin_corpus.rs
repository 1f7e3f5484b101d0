//! Built-in definitions against the real recordings of the shared corpus (`../shared/corpus`):
//! every message of every topic whose type has a built-in definition must decode completely
//! (nothing left but CDR padding) with plausible values, and where the bag records its own
//! definition (Iron and later), the built-in layout must agree with it field by field.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bagscope_bag::Bag;
use bagscope_msg::decode::{decode_with_end, only_padding_after};
use bagscope_msg::schema::builtin;
use bagscope_msg::{schema_for_channel, MessageSchema, Value};

/// Bags under `dir`: folders with a `metadata.yaml` (opened as a folder, which knows their
/// compression), and `.db3` / `.mcap` files outside such folders. Sorted.
fn bag_roots(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join("metadata.yaml").exists() {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            bag_roots(&p, out);
        } else if p.extension().is_some_and(|e| e == "db3" || e == "mcap") {
            out.push(p);
        }
    }
}

fn str_at<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    v.get_path(path).and_then(Value::as_str)
}

/// Type-specific checks on a decoded message; `Err` says what is implausible.
fn plausible(type_name: &str, v: &Value) -> Result<(), String> {
    let ty = type_name.replace("/msg/", "/");
    match ty.as_str() {
        "diagnostic_msgs/DiagnosticArray" => {
            let st = v
                .field("status")
                .and_then(Value::as_array)
                .ok_or("no status")?;
            for s in st {
                if str_at(s, "name").is_none_or(str::is_empty) {
                    return Err(format!("status without a name: {s:?}"));
                }
            }
        }
        "diagnostic_msgs/KeyValue" if str_at(v, "key").is_none_or(str::is_empty) => {
            return Err("empty key".into());
        }
        "rcl_interfaces/Log" => {
            str_at(v, "msg").ok_or("msg is not a string")?;
            let level = v.get_path_i64("level").ok_or("no level")?;
            if ![10, 20, 30, 40, 50].contains(&level) {
                return Err(format!("level {level}"));
            }
            if str_at(v, "name").is_none_or(str::is_empty) {
                return Err("logger name empty".into());
            }
        }
        "rcl_interfaces/ParameterEvent"
            if !str_at(v, "node").is_some_and(|n| n.starts_with('/')) =>
        {
            return Err(format!("node {:?}", v.field("node")));
        }
        "std_msgs/String" | "example_interfaces/String" => {
            str_at(v, "data").ok_or("data is not a string")?;
        }
        "tf2_msgs/TFMessage" => {
            for t in v
                .field("transforms")
                .and_then(Value::as_array)
                .ok_or("no transforms")?
            {
                let q: f64 = ["x", "y", "z", "w"]
                    .iter()
                    .map(|c| {
                        t.get_path_f64(&format!("transform.rotation.{c}"))
                            .unwrap_or(0.0)
                    })
                    .map(|c| c * c)
                    .sum();
                if (q - 1.0).abs() > 1e-3 {
                    return Err(format!("rotation norm² {q}"));
                }
            }
        }
        "rosgraph_msgs/Clock" if v.get_path_i64("clock.sec").is_none_or(|s| s < 0) => {
            return Err("clock.sec".into());
        }
        "sensor_msgs/Range" => {
            let f = v.get_path_f64("field_of_view").ok_or("no field_of_view")?;
            if !f.is_finite() {
                return Err(format!("field_of_view {f}"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The recorded definition and the built-in one agree on every type both have.
fn same_layout(recorded: &MessageSchema, builtin: &MessageSchema) -> Result<(), String> {
    for d in recorded.definitions() {
        if let Some(b) = builtin.get(&d.name) {
            let a: Vec<_> = d.fields.iter().map(|f| (&f.name, &f.ty)).collect();
            let c: Vec<_> = b.fields.iter().map(|f| (&f.name, &f.ty)).collect();
            if a != c {
                return Err(format!("{}: recorded {a:?}, built-in {c:?}", d.name));
            }
        }
    }
    Ok(())
}

#[test]
fn corpus_topics_with_builtin_types_decode_completely() {
    let Some(corpus) = common::shared_path("corpus", "ros2-more/SOURCES.md") else {
        return;
    };
    let mut roots = Vec::new();
    bag_roots(&corpus.join("ros2-more"), &mut roots);
    bag_roots(&corpus.join("ros2"), &mut roots);
    assert!(roots.len() >= 20, "{roots:?}");

    let mut failures: Vec<String> = Vec::new();
    // Decoded messages by type, and topics left undecodable (type → bags).
    let mut decoded: BTreeMap<String, usize> = BTreeMap::new();
    let mut no_builtin: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Topics by the layout the payload picked: (type, root field count).
    let mut layouts: BTreeMap<(String, usize), usize> = BTreeMap::new();
    let mut pending = roots;
    pending.reverse();
    while let Some(root) = pending.pop() {
        let root = &root;
        let label = root
            .strip_prefix(&corpus)
            .unwrap_or(root)
            .display()
            .to_string();
        let bag = match Bag::open(root) {
            Ok(b) => b,
            Err(e) if root.is_dir() => {
                // A folder whose metadata.yaml names files that are not there (a renamed
                // .db3): its files are bags on their own.
                let mut files = Vec::new();
                for f in std::fs::read_dir(root).into_iter().flatten().flatten() {
                    if f.path()
                        .extension()
                        .is_some_and(|e| e == "db3" || e == "mcap")
                    {
                        files.push(f.path());
                    }
                }
                if files.is_empty() {
                    eprintln!("note: {label} does not open: {e}");
                } else {
                    files.sort();
                    pending.extend(files);
                }
                continue;
            }
            Err(e) => {
                eprintln!("note: {label} does not open: {e}");
                continue;
            }
        };
        for (i, t) in bag.topics.iter().enumerate() {
            if builtin::candidates(&t.type_name).is_empty() {
                no_builtin
                    .entry(t.type_name.clone())
                    .or_default()
                    .push(format!("{label} {}", t.name));
                continue;
            }
            let mut want = vec![false; bag.topics.len()];
            want[i] = true;
            let scan = bag.scan(&want, |m| m.data.to_vec());
            let Some(first) = scan.items.first() else {
                continue;
            };
            let schema = builtin::resolve_for_payload(&t.type_name, &first.value)
                .expect("a type with candidates resolves");
            *layouts
                .entry((schema.name().to_string(), schema.root().fields.len()))
                .or_default() += 1;
            if !t.schema_data.is_empty() {
                let recorded = schema_for_channel(&t.type_name, &t.schema_encoding, &t.schema_data)
                    .unwrap_or_else(|e| panic!("{label} {}: {e}", t.name));
                if let Err(e) = same_layout(&recorded, &schema) {
                    // A recorded definition that does not fit its own payloads is the bag's
                    // fault (rosbag2's test bags have stubs), not the built-in's.
                    let fits = decode_with_end(&recorded, &first.value)
                        .is_ok_and(|(_, end)| only_padding_after(&first.value, end));
                    if fits {
                        failures.push(format!("{label} {} ({}): {e}", t.name, t.type_name));
                    } else {
                        eprintln!(
                            "note: {label} {}: the recorded definition does not fit its payloads",
                            t.name
                        );
                    }
                }
            }
            for (k, item) in scan.items.iter().enumerate() {
                let what = format!("{label} {} ({}) message {k}", t.name, t.type_name);
                match decode_with_end(&schema, &item.value) {
                    Ok((v, end)) => {
                        if !only_padding_after(&item.value, end) {
                            failures.push(format!(
                                "{what}: {} bytes left after the message ends at {end}",
                                item.value.len() - end
                            ));
                        } else if let Err(e) = plausible(&t.type_name, &v) {
                            failures.push(format!("{what}: {e}"));
                        } else {
                            *decoded.entry(schema.name().to_string()).or_default() += 1;
                        }
                    }
                    Err(e) => failures.push(format!("{what}: {e}")),
                }
            }
        }
    }
    for (ty, topics) in &no_builtin {
        eprintln!("no built-in definition: {ty}: {}", topics.join(", "));
    }
    for (ty, n) in &decoded {
        eprintln!("decoded {n:>6} {ty}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The schema-less Foxy/Humble bags this coverage is for.
    let n = |ty: &str| decoded.get(ty).copied().unwrap_or(0);
    assert_eq!(n("diagnostic_msgs/msg/DiagnosticArray"), 1);
    assert_eq!(n("diagnostic_msgs/msg/KeyValue"), 1);
    assert_eq!(n("example_interfaces/msg/String"), 4);
    assert!(
        n("rcl_interfaces/msg/Log") >= 1000,
        "{}",
        n("rcl_interfaces/msg/Log")
    );
    assert!(n("rcl_interfaces/msg/ParameterEvent") >= 45);
    assert!(n("tf2_msgs/msg/TFMessage") >= 3000);
    assert!(n("rosgraph_msgs/msg/Clock") >= 500);
    assert!(n("example_interfaces/srv/AddTwoInts_Event") >= 6);
    // Every Range in the corpus has the pre-Iron layout (no `variance`, 6 fields), recorded
    // definitions included; the payloads picked it over the Iron one.
    let range = |k: usize| {
        layouts
            .get(&("sensor_msgs/msg/Range".to_string(), k))
            .copied()
    };
    assert!(range(6) >= Some(5) && range(7).is_none(), "{layouts:?}");
    // The Gazebo classic bags' /performance_metrics.
    assert_eq!(n("gazebo_msgs/msg/PerformanceMetrics"), 138 + 115);
    // kf_fadil_renamed, whose metadata.yaml names a file that is not there.
    assert!(
        n("nav_msgs/msg/Odometry") >= 3861 + 1480,
        "{}",
        n("nav_msgs/msg/Odometry")
    );
}
