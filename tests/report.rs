//! End-to-end tests of `bagscope report`, `bagscope hist` and the `--plots` options.
//!
//! The report of a bag with ground truth (`bags/*.truth.json`) must state the truth: clock
//! axes, split clock axes, the command → response delay, the faults. The HTML page is opened in
//! headless Chromium: every section and every plot must be in the rendered DOM, and the delay
//! shown must be the one in report.json. Without Chromium the browser part is skipped with a
//! note, except under CI (where `.ci/run` installs it), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::root;
use common::run;

fn tmp(name: &str) -> common::Tmp {
    common::tempdir(&format!("report-{name}"))
}

fn truth(bag: &str) -> Value {
    let p = root().join(format!("bags/{bag}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn is_png(p: &Path) -> bool {
    let b = std::fs::read(p).unwrap_or_default();
    b.len() > 10_000 && b.starts_with(b"\x89PNG\r\n\x1a\n")
}

/// Writes the report of `bags/<bag>` and returns (its temp folder, out dir, report.json).
fn make_report(bag: &str) -> (common::Tmp, PathBuf, Value) {
    let dir = tmp(bag);
    let out = dir.join("out");
    let bag_path = root().join("bags").join(bag);
    let (code, stdout, stderr) = run(&[
        "report",
        bag_path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    for f in ["index.html", "report.md", "report.json"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    for p in j["plots"].as_array().unwrap() {
        let png = out.join(p["png"].as_str().unwrap());
        assert!(is_png(&png), "{} is not a PNG", png.display());
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Verdicts"));
    (dir, out, j)
}

/// Headless Chromium's rendered DOM of `html`, or `None` when no browser is installed
/// (panics under CI, where `.ci/run` installs one).
fn rendered_dom(html: &Path) -> Option<String> {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new("sh")
                .args(["-c", &format!("command -v {b}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(browser) = browser else {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set but chromium is not installed (see .ci/run)");
        }
        eprintln!("note: chromium not found; skipping the rendered-DOM checks");
        return None;
    };
    // One profile per call: the tests run in parallel in one process, and a shared profile
    // was removed by one test while another's browser was starting in it.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile = tmp(&format!("chromium-profile-{call}"));
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every section and every plot's inline <svg> is in the rendered page; returns the DOM.
fn check_dom(out: &Path, j: &Value) -> Option<String> {
    let dom = rendered_dom(&out.join("index.html"))?;
    for s in j["sections"].as_array().unwrap() {
        let id = format!("<section id=\"{}\"", s.as_str().unwrap());
        assert!(dom.contains(&id), "section {id} not in the rendered DOM");
    }
    let plots = j["plots"].as_array().unwrap();
    assert!(!plots.is_empty());
    for p in plots {
        let id = format!("id=\"plot-{}\"", p["id"].as_str().unwrap());
        let at = dom
            .find(&id)
            .unwrap_or_else(|| panic!("{id} not in the DOM"));
        let end = dom[at..].find("</figure>").expect("figure closed") + at;
        assert!(dom[at..end].contains("<svg"), "{id} holds no <svg>");
    }
    // No network fetches: nothing on the page points outside it.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for bad in [
        "src=\"http",
        "href=\"http",
        "@import",
        "<script src",
        "<link ",
    ] {
        assert!(!html.contains(bad), "page refers outside itself: {bad}");
    }
    Some(dom)
}

/// The text of the element with this id (its first text node).
fn element_text<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("#{id} not in the DOM"));
    let start = dom[at..].find('>').unwrap() + at + 1;
    let end = dom[start..].find('<').unwrap() + start;
    &dom[start..end]
}

#[test]
fn report_arm_split_states_delay_and_split() {
    let (_dir, out, j) = make_report("arm_split");
    let t = truth("arm_split");
    let v = &j["verdicts"];
    assert_eq!(v["split"], t["split_clock"]);
    for (topic, axis) in t["clock_axes"].as_object().unwrap() {
        assert_eq!(v["clock_axes"][topic], *axis, "axis of {topic}");
    }
    let d = &v["delays"][0];
    assert_eq!(d["command"], t["command_topic"]);
    assert_eq!(d["response"], t["response_topic"]);
    let delay_ns = d["delay_ns"].as_i64().unwrap();
    let truth_ns = (t["delay_s"].as_f64().unwrap() * 1e9).round() as i64;
    assert!(
        (delay_ns - truth_ns).abs() <= 2_000_000,
        "delay {delay_ns} ns vs truth {truth_ns} ns"
    );
    assert_eq!(v["data_loss"], false);
    let ids: Vec<&str> = j["plots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    for want in ["match-0-joints", "match-0-error", "match-0-delay-curve"] {
        assert!(ids.contains(&want), "plot {want} missing: {ids:?}");
    }
    if let Some(dom) = check_dom(&out, &j) {
        let shown = element_text(&dom, "delay-0");
        let want = format!("{:.1} ms", d["delay_ms"].as_f64().unwrap());
        assert_eq!(shown, want);
        assert!(element_text(&dom, "v-split").starts_with("YES"));
    }
}

#[test]
fn report_sensors_states_faults_and_sync_pairs() {
    let (_dir, out, j) = make_report("sensors");
    let t = truth("sensors");
    let v = &j["verdicts"];
    assert_eq!(v["split"], false);
    assert!(v["delays"].as_array().unwrap().is_empty());
    let faults = &v["faults"];
    let n = |x: &Value| x.as_array().map(|a| a.len()).unwrap_or(0) as u64;
    let want = [
        (
            "image_step_too_small",
            n(&t["image_faults"]["step_too_small"]),
        ),
        (
            "image_data_size_mismatch",
            n(&t["image_faults"]["data_size_mismatch"]),
        ),
        (
            "camera_info_uncalibrated",
            n(&t["camera_info_faults"]["uncalibrated_k0_zero"]),
        ),
        (
            "camera_info_frame_mismatch",
            n(&t["camera_info_faults"]["frame_id_mismatch"]),
        ),
    ];
    for (code, count) in want {
        assert_eq!(faults[code].as_u64().unwrap_or(0), count, "{code}");
    }
    let sync = v["sync"].as_array().unwrap();
    let has = |kind: &str, pair: &Value| {
        let mut p: Vec<&str> = pair
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        p.sort();
        sync.iter().any(|s| {
            let mut q: Vec<&str> = s["topics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect();
            q.sort();
            s["kind"] == kind && q == p
        })
    };
    assert!(has("exact", &t["exact_pair"]));
    assert!(has("approximate", &t["approx_pair"]));
    for (topic, _) in t["counts"].as_object().unwrap() {
        assert_eq!(v["clock_axes"][topic], "wall");
    }
    if let Some(dom) = check_dom(&out, &j) {
        assert!(element_text(&dom, "v-split").starts_with("no"));
    }
}

#[test]
fn hist_marks_the_bimodal_camera_lag() {
    let dir = tmp("hist");
    let png = dir.join("h.png");
    let svg = dir.join("h.svg");
    let bag = root().join("bags/sensors_bimodal");
    let (code, stdout, stderr) = run(&[
        "hist",
        bag.to_str().unwrap(),
        "--topics",
        "/camera/image_raw,/camera/camera_info",
        "-o",
        png.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(is_png(&png));
    let j: Value = serde_json::from_str(&stdout).unwrap();
    let d = j["distributions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "lag" && d["topic"] == "/camera/image_raw")
        .expect("lag distribution of the camera");
    assert_eq!(d["bimodal"], true);
    let m: Vec<i64> = d["modes_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    let offset = (truth("sensors_bimodal")["bimodal_offset_s"]
        .as_f64()
        .unwrap()
        * 1e9) as i64;
    assert_eq!(m.len(), 2);
    assert!(((m[1] - m[0]) - offset).abs() <= 2_000_000, "{m:?}");
    // Text output names the modes; SVG output works too.
    let (code, text, _) = run(&[
        "hist",
        bag.to_str().unwrap(),
        "--topics",
        "/camera/image_raw,/camera/camera_info",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(text.contains("YES"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn plots_options_write_pngs() {
    let dir = tmp("plots");
    let bag = root().join("bags/arm_split");
    let clocks_dir = dir.join("clocks");
    let (code, _, stderr) = run(&[
        "clocks",
        bag.to_str().unwrap(),
        "--json",
        "--plots",
        clocks_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(is_png(&clocks_dir.join("lag-joint_states.png")));
    let match_dir = dir.join("match");
    let (code, stdout, stderr) = run(&[
        "match",
        bag.to_str().unwrap(),
        "--command",
        "/arm_cmd",
        "--response",
        "/joint_states",
        "--json",
        "--plots",
        match_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str::<Value>(&stdout).expect("stdout stays JSON");
    for f in [
        "match-joints.png",
        "match-error.png",
        "match-delay-curve.png",
    ] {
        assert!(is_png(&match_dir.join(f)), "{f}");
    }
    let cmp_dir = dir.join("compare");
    let (code, _, stderr) = run(&[
        "compare",
        root().join("bags/arm_wall").to_str().unwrap(),
        root().join("bags/arm_sim").to_str().unwrap(),
        "--command",
        "/arm_cmd",
        "--response",
        "/joint_states",
        "--plots",
        cmp_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(is_png(&cmp_dir.join("compare-runs.png")));
}

/// Reports of two different bags written into one folder, at the same time and one after the
/// other, leave one bag's report: `report.json`, `report.md` and `index.html` name the same bag
/// and the PNGs are exactly the ones its `report.json` lists.
#[test]
fn one_folder_holds_one_bags_report() {
    let dir = tmp("same-folder");
    let out = dir.join("rep");
    let bags = [
        root().join("bags/arm_split"),
        root().join("bags/sensors_bimodal"),
    ];
    let check = |what: &str| {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        // A word only each bag's topics have (arm: /joint_states; sensors: /camera/...).
        let name = r["name"].as_str().unwrap().to_string();
        let (own, other) = if name == "arm_split" {
            ("joint", "camera")
        } else {
            ("camera", "joint")
        };
        for page in ["report.md", "index.html"] {
            let text = std::fs::read_to_string(out.join(page)).unwrap();
            assert!(
                text.contains(own) && !text.contains(other),
                "{what}: {page} is not {name}'s"
            );
        }
        let mut listed: Vec<String> = r["plots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["png"].as_str().unwrap().to_string())
            .collect();
        listed.sort();
        let mut pngs: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".png"))
            .collect();
        pngs.sort();
        assert_eq!(pngs, listed, "{what}: a mix of two reports' figures");
    };
    // One after the other: the second replaces the first's figures.
    for b in &bags {
        let (code, _, err) = run(&["report", b.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
    }
    check("sequential");
    // At the same time, a few rounds.
    for round in 0..3 {
        let handles: Vec<_> = bags
            .iter()
            .map(|b| {
                let (b, out) = (b.clone(), out.clone());
                std::thread::spawn(move || {
                    run(&["report", b.to_str().unwrap(), "-o", out.to_str().unwrap()]).0
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 0, "round {round}");
        }
        check(&format!("concurrent round {round}"));
    }
}
