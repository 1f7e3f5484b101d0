//! Hostile and careless input: bags whose names carry markup, terminal escapes, line breaks,
//! path characters, formula cells and 247 characters, and outputs aimed at the bag itself or
//! at links planted under temporary names. Every bag is built here.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, tempdir};

const HEADER_SCHEMA: &str = "builtin_interfaces/Time stamp\nstring frame_id\n\
================================================================================\n\
MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";

/// A formula a spreadsheet would run, as OWASP's CSV-injection example has it.
const FORMULA: &str = "=cmd|' /C calc'!A0";

const SCRIPT: &str = "/x<script>alert(1)</script>";
const IMG: &str = "/<img src=x onerror=alert(2)>";
const MD_IMG: &str = "/![i](http://evil.example/x.png)";
const MD_LINK: &str = "/[l](javascript:alert(3))";
const OSC: &str = "/esc\x1b]0;pwned\x07\x1b[2J/b";
const CR: &str = "/cr\rfake|row";
/// Not a ROS name, but a bag can hold it: a formula in the timing table's topic column.
const AT: &str = "@SUM(1+1)*cmd|' /C calc'!A0";

/// The topics of the hostile bag; every one carries a header stamp (so it gets a lag plot).
fn hostile_topics() -> Vec<String> {
    let mut v: Vec<String> = [
        SCRIPT, IMG, MD_IMG, MD_LINK, OSC, CR, AT, "/a/b", "/a_b", "/a.b", "/A/B",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // ROS 2 allows 247 characters; bags from elsewhere have longer ones.
    v.push(format!("/{}", "l".repeat(246)));
    v.push(format!("/{}", "m".repeat(299)));
    v
}

/// std_msgs/msg/Header in little-endian CDR.
fn header_cdr(t_ns: i64, frame_id: &str) -> Vec<u8> {
    let mut b = vec![0, 1, 0, 0];
    b.extend_from_slice(&((t_ns / 1_000_000_000) as i32).to_le_bytes());
    b.extend_from_slice(&((t_ns % 1_000_000_000) as u32).to_le_bytes());
    b.extend_from_slice(&(frame_id.len() as u32 + 1).to_le_bytes());
    b.extend_from_slice(frame_id.as_bytes());
    b.push(0);
    b
}

/// A ros2-profile MCAP with `topics` (std_msgs/msg/Header, frame_id = [`FORMULA`]), `n`
/// messages each at 10 Hz on the wall clock, stamped 2 ms before their log time; `pad`
/// extra bytes of incompressible frame_id per message make it large.
fn write_bag(path: &Path, topics: &[String], n: usize, pad: usize) {
    let mut w = common::BagWriter::create(path);
    let channels: Vec<u16> = topics
        .iter()
        .map(|t| w.channel(t, "std_msgs/msg/Header", HEADER_SCHEMA))
        .collect();
    let t0 = 1_764_460_800_000_000_000i64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..n {
        for (i, &c) in channels.iter().enumerate() {
            let t = t0 + k as i64 * 100_000_000 + i as i64 * 1_000;
            let mut frame = FORMULA.to_string();
            for _ in 0..pad {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                frame.push(char::from(b'a' + (x % 26) as u8));
            }
            w.message(c, t, &header_cdr(t - 2_000_000, &frame));
        }
    }
    w.finish();
}

fn hostile_bag(dir: &Path) -> PathBuf {
    let p = dir.join("hostile.mcap");
    write_bag(&p, &hostile_topics(), 20, 0);
    p
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

macro_rules! args {
    ($($a:expr),* $(,)?) => { &[$(std::ffi::OsStr::new($a)),*] };
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn report_md_and_html_hold_bag_strings_as_text_with_one_plot_per_topic() {
    let dir = tempdir("hostile-report");
    let bag = hostile_bag(&dir);
    let out = dir.join("rep");
    let o = run(args!["report", &bag, "-o", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let lower = md.to_ascii_lowercase();
    for live in ["<script", "<img", "javascript:", "](http", "![i]", "[l]("] {
        assert!(
            !lower.contains(live),
            "report.md has a live {live:?}:\n{md}"
        );
    }
    assert!(
        !md.contains(['\x1b', '\x07', '\r']),
        "control characters in report.md"
    );
    // Every table row is one line: a `\r` in a name splits none.
    for l in md.lines().filter(|l| l.starts_with('|')) {
        assert!(l.ends_with('|'), "a table row is cut: {l:?}");
    }

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let hl = html.to_ascii_lowercase();
    assert!(
        !hl.contains("<script") && !hl.contains("<img"),
        "live markup in index.html"
    );
    assert!(
        !html.contains(['\x1b', '\x07']),
        "control characters in index.html"
    );
    // Element ids are unique.
    let mut ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    let n_ids = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n_ids, "repeated HTML ids");

    // One lag plot per topic, each its own file (/a/b, /a_b, /a.b, /A/B and the long ones).
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let pngs: Vec<String> = json["plots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["section"] == "lag")
        .map(|p| p["png"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pngs.len(), hostile_topics().len(), "{pngs:?}");
    let mut folded: Vec<String> = pngs.iter().map(|p| p.to_ascii_lowercase()).collect();
    folded.sort();
    folded.dedup();
    assert_eq!(folded.len(), pngs.len(), "plots share a file: {pngs:?}");
    for p in &pngs {
        assert!(p.len() < 120, "{p}");
        assert!(out.join(p).is_file(), "{p} missing");
    }
    // Nothing of the stage is left.
    assert!(
        files_in(&out).iter().all(|f| !f.starts_with('.')),
        "{:?}",
        files_in(&out)
    );
}

#[test]
fn terminal_output_carries_no_control_characters() {
    let dir = tempdir("hostile-tty");
    let bag = hostile_bag(&dir);
    let out = dir.join("exp");
    for (what, o) in [
        ("info", run(args!["info", &bag])),
        ("clocks", run(args!["clocks", &bag])),
        ("report", run(args!["report", &bag, "-o", &dir.join("rep")])),
        ("export", run(args!["export", &bag, "-o", &out])),
        (
            "unknown topic",
            run(args!["sync", &bag, "--topics", "/n1,/n2"]),
        ),
    ] {
        for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let s = String::from_utf8_lossy(bytes);
            assert!(
                !s.contains(['\x1b', '\x07', '\r', '\u{9b}']),
                "{what}: raw control characters on {stream}: {s:?}"
            );
        }
        if what == "info" {
            // Written out, so the reader still sees them.
            assert!(String::from_utf8_lossy(&o.stdout).contains("\\x1b]0;pwned\\x07"));
        }
    }
}

#[test]
fn csv_cells_are_neutralised_unless_raw_is_asked_for() {
    let dir = tempdir("hostile-csv");
    let bag = hostile_bag(&dir);
    let safe = dir.join("safe.csv");
    let o = run(args!["export", &bag, "--topics", "/a_b", "-o", &safe]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = std::fs::read_to_string(&safe).unwrap();
    assert!(csv.contains(&format!("'{FORMULA}")), "{csv}");
    for l in csv.lines() {
        for cell in l.split(',') {
            let c = cell.trim_start_matches('"');
            assert!(
                !c.starts_with(['=', '@', '+', '\t', '\r']),
                "live cell {cell:?} in {l:?}"
            );
        }
    }
    // The timing table holds topic names: the same rule.
    let timing = dir.join("timing.csv");
    let o = run(args!["export", &bag, "--timing-only", "-o", &timing]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = std::fs::read_to_string(&timing).unwrap();
    assert!(csv.contains(&format!("'{AT}")), "{csv}");
    assert!(
        !csv.lines().any(|l| l.contains(",@") || l.contains(",\"@")),
        "{csv}"
    );

    let raw = dir.join("raw.csv");
    let o = run(args![
        "export",
        &bag,
        "--topics",
        "/a_b",
        "--csv-raw",
        "-o",
        &raw
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = std::fs::read_to_string(&raw).unwrap();
    assert!(
        csv.contains(&format!(",{FORMULA}")) || csv.contains(&format!(",\"{FORMULA}")),
        "{csv}"
    );
}

#[test]
fn long_and_clashing_topic_names_export_to_distinct_files() {
    let dir = tempdir("hostile-names");
    let bag = hostile_bag(&dir);
    let out = dir.join("exp");
    let o = run(args!["export", &bag, "-o", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let files = files_in(&out);
    assert_eq!(files.len(), hostile_topics().len(), "{files:?}");
    let mut folded: Vec<String> = files.iter().map(|f| f.to_ascii_lowercase()).collect();
    folded.dedup();
    assert_eq!(folded.len(), files.len(), "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| f.ends_with(".parquet") && f.len() < 120),
        "{files:?}"
    );
    // The ordinary names keep their readable form.
    assert!(files.contains(&"a.b.parquet".to_string()), "{files:?}");
    assert!(files.contains(&"a_b.parquet".to_string()), "{files:?}");
    // Several topics beside one -o file: OUT.<topic>.parquet, long names included.
    let o = run(args!["export", &bag, "-o", &dir.join("x.parquet")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn outputs_that_are_the_bag_are_refused_and_the_bag_is_kept() {
    let dir = tempdir("hostile-self");
    let bag = hostile_bag(&dir);
    let before = std::fs::read(&bag).unwrap();
    // The bag under another name too (a symbolic link to it).
    let alias = dir.join("alias.jsonl");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&bag, &alias).unwrap();
    #[cfg(not(unix))]
    let alias = bag.clone();
    let mut cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        (
            "sync --evidence",
            args!["sync", &bag, "--topics", "/a_b,/a.b", "--evidence", &bag].to_vec(),
        ),
        (
            "sync --evidence-drops",
            args![
                "sync",
                &bag,
                "--topics",
                "/a_b,/a.b",
                "--evidence-drops",
                &alias
            ]
            .to_vec(),
        ),
        (
            "tf --evidence",
            args![
                "tf",
                &bag,
                "--target-frame",
                "map",
                "--topics",
                "/a_b",
                "--evidence",
                &bag
            ]
            .to_vec(),
        ),
    ];
    if cfg!(feature = "play") {
        cases.push((
            "play --report",
            args![
                "play",
                &bag,
                "--dry-run",
                "--rate",
                "1000",
                "--report",
                &bag
            ]
            .to_vec(),
        ));
    }
    for (what, a) in cases {
        let o = Command::new(bin()).args(&a).output().unwrap();
        assert!(
            matches!(o.status.code(), Some(1 | 2)),
            "{what} was not refused: {}",
            text(&o)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("hostile.mcap") || err.contains("alias.jsonl"),
            "{what}: the error names no file: {err}"
        );
        assert!(
            std::fs::read(&bag).unwrap() == before,
            "{what} changed the bag"
        );
    }
}

#[cfg(unix)]
#[test]
fn links_planted_at_temporary_names_are_not_followed_and_leftovers_go() {
    let dir = tempdir("hostile-links");
    let bag = hostile_bag(&dir);
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"precious").unwrap();
    let link = |p: &Path| std::os::unix::fs::symlink(&victim, p).unwrap();

    let out = dir.join("out.mcap");
    link(&dir.join("out.mcap.partial"));
    let o = run(args!["convert", &bag, &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let table = dir.join("t.parquet");
    link(&dir.join("t.parquet.tmp"));
    let o = run(args!["export", &bag, "--topics", "/a_b", "-o", &table]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // A report's stage: a link to a folder, which must not be filled or emptied.
    let rep = dir.join("rep");
    std::fs::create_dir(&rep).unwrap();
    let keep = dir.join("keep");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("k"), b"k").unwrap();
    std::os::unix::fs::symlink(&keep, rep.join(".bagscope-staging.tmp")).unwrap();
    let o = run(args!["report", &bag, "-o", &rep]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(files_in(&keep), ["k"]);
    for p in [
        dir.join("out.mcap.partial"),
        dir.join("t.parquet.tmp"),
        rep.join(".bagscope-staging.tmp"),
    ] {
        assert!(
            std::fs::symlink_metadata(&p).is_err(),
            "{} left",
            p.display()
        );
    }
    assert!(std::fs::symlink_metadata(&out).unwrap().is_file());
    assert!(std::fs::symlink_metadata(&table).unwrap().is_file());
    assert!(rep.join("index.html").is_file());
}

/// Ctrl-C (SIGINT) while `convert` writes: the partial file goes with the process.
#[cfg(unix)]
#[test]
fn an_interrupted_convert_leaves_no_partial_file() {
    let dir = tempdir("hostile-sigint");
    let bag = dir.join("big.mcap");
    // About 60 MB of incompressible payload: long enough to be caught writing.
    let topics: Vec<String> = (0..4).map(|i| format!("/t{i}")).collect();
    write_bag(&bag, &topics, 4000, 4000);
    let out = dir.join("out.mcap");
    let partial = dir.join("out.mcap.partial");
    let mut child = Command::new(bin())
        .args(args!["convert", &bag, &out])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while !partial.exists() && t.elapsed().as_secs() < 60 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "convert was not interrupted: {status:?}"
    );
    assert!(!partial.exists(), "the partial file was left");
    assert!(!out.exists());
}

/// A write the OS refuses (here: over the file size limit) fails with the OS's reason, and
/// leaves neither a partial bag nor a half report.
#[cfg(unix)]
#[test]
fn failed_writes_keep_the_os_cause_and_leave_nothing_half_written() {
    let dir = tempdir("hostile-full");
    let bag = dir.join("b.mcap");
    let topics: Vec<String> = (0..3).map(|i| format!("/t{i}")).collect();
    write_bag(&bag, &topics, 400, 200);
    let limited = |args: &str| {
        // SIGXFSZ ignored: the write returns EFBIG ("File too large") instead of killing.
        Command::new("sh")
            .arg("-c")
            .arg(format!("trap '' XFSZ; ulimit -f 40; exec \"$0\" {args}"))
            .arg(bin())
            .current_dir(&*dir)
            .output()
            .unwrap()
    };
    let o = limited("convert b.mcap out.mcap");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("File too large"),
        "the OS cause is lost: {err}"
    );
    assert!(!dir.join("out.mcap.partial").exists() && !dir.join("out.mcap").exists());

    let o = limited("report b.mcap -o rep");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let left = files_in(&dir.join("rep"));
    assert!(left.is_empty(), "half a report was left: {left:?}");
}

/// A special file made in the test's own folder: a character device with /dev/null's numbers
/// where `mknod` is permitted (root), else a FIFO. Never the machine's /dev/null: a writer
/// that replaced it would break the machine. The kind, as the error names it.
#[cfg(unix)]
fn special_file(p: &Path) -> &'static str {
    let dev = Command::new("mknod").arg(p).args(["c", "1", "3"]).output();
    if dev.is_ok_and(|o| o.status.success()) {
        return "a character device";
    }
    let fifo = Command::new("mkfifo").arg(p).output().unwrap();
    assert!(fifo.status.success(), "mkfifo {}", p.display());
    "a FIFO"
}

/// `bagscope ARGS`, killed after 60 s (a writer that opened a FIFO would wait forever).
#[cfg(unix)]
fn run_bounded(args: &[&std::ffi::OsStr]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!("bagscope {args:?} still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Outputs are regular files (or folders) or new paths: a device node or a FIFO given as an
/// output file or folder of any command is refused (exit 1, the path and its kind named)
/// before anything is written, and stays what it was. `play --no-publish --out /dev/null`
/// once replaced the device with a regular file (exit 0), `hist -o` and `play --report` wrote
/// into it, and `--evidence` into a FIFO would have waited for a reader forever.
#[cfg(unix)]
#[test]
fn outputs_onto_devices_and_fifos_are_refused() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir("hostile-device");
    let bag = hostile_bag(&dir);
    let contract = dir.join("c.yaml");
    std::fs::write(&contract, "anchor: /a_b\n").unwrap();
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    // (what, arguments before the output, the output's flag, arguments after it)
    let mut cases: Vec<(&str, Vec<&str>, &str, Vec<&str>)> = vec![
        ("convert", vec!["convert", "BAG"], "", vec!["--force"]),
        (
            "export -o FILE",
            vec!["export", "BAG", "--topics", "/a_b"],
            "-o",
            vec![],
        ),
        (
            "export -o DIR",
            vec!["export", "BAG", "--topics", "/a_b,/a.b"],
            "-o",
            vec![],
        ),
        (
            "sync --evidence",
            vec!["sync", "BAG", "--topics", "/a_b,/a.b"],
            "--evidence",
            vec![],
        ),
        (
            "sync --evidence-drops",
            vec!["sync", "BAG", "--topics", "/a_b,/a.b"],
            "--evidence-drops",
            vec![],
        ),
        (
            "tf --evidence",
            vec!["tf", "BAG", "--target-frame", "map", "--topics", "/a_b"],
            "--evidence",
            vec![],
        ),
        (
            "hist -o",
            vec!["hist", "BAG", "--topics", "/a_b,/a.b"],
            "-o",
            vec![],
        ),
        ("report -o", vec!["report", "BAG"], "-o", vec![]),
        ("clocks --plots", vec!["clocks", "BAG"], "--plots", vec![]),
        (
            "observe -o",
            vec!["observe", "BAG", "--contract", "CONTRACT"],
            "-o",
            vec![],
        ),
        ("batch -o", vec!["batch", "BAG"], "-o", vec![]),
        ("synth -o", vec!["synth", "arm_wall"], "-o", vec![]),
    ];
    if cfg!(feature = "play") {
        cases.push((
            "play --out",
            vec!["play", "BAG", "--no-publish"],
            "--out",
            vec![],
        ));
        cases.push((
            "play --report",
            vec!["play", "BAG", "--no-publish", "--out", "OUT/x.mcap"],
            "--report",
            vec![],
        ));
    }
    for (k, (what, pre, flag, post)) in cases.into_iter().enumerate() {
        // export and hist choose the format by the extension.
        let ext = match what {
            "export -o FILE" => ".parquet",
            "hist -o" => ".png",
            _ => "",
        };
        let node = out.join(format!("node{k}{ext}"));
        let kind = special_file(&node);
        let out_mcap = out.join("x.mcap");
        let sub = |a: &str| -> std::ffi::OsString {
            match a {
                "BAG" => bag.clone().into(),
                "CONTRACT" => contract.clone().into(),
                "OUT/x.mcap" => out_mcap.clone().into(),
                a => a.into(),
            }
        };
        let mut args: Vec<std::ffi::OsString> = pre.iter().map(|a| sub(a)).collect();
        if !flag.is_empty() {
            args.push(flag.into());
        }
        args.push(node.clone().into());
        args.extend(post.iter().map(|a| sub(a)));
        let a: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let o = run_bounded(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o));
        assert!(
            err.contains(&*node.to_string_lossy()) && err.contains(kind),
            "{what}: the error names neither the path nor what is there: {err}"
        );
        assert!(!err.contains("panicked"), "{what}: {err}");
        let t = std::fs::symlink_metadata(&node).unwrap().file_type();
        assert!(
            t.is_char_device() || t.is_fifo(),
            "{what} replaced the special file"
        );
        std::fs::remove_file(&node).unwrap();
        assert_eq!(
            files_in(&out),
            Vec::<String>::new(),
            "{what} left something behind"
        );
    }
    // A device beside a regular file it should replace: a regular file is still fine.
    let ok = out.join("ok.mcap");
    std::fs::write(&ok, b"old").unwrap();
    let o = run(args!["convert", &bag, &ok, "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::symlink_metadata(&ok).unwrap().is_file());
}
