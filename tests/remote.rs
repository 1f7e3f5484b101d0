//! Bags in object storage, against a real S3 API: `moto_server` (from `moto[server]`, which
//! `.ci/run` installs into `target/s3-venv`) on 127.0.0.1, reached through a counting proxy
//! in this test that also injects faults (503 answers, connections cut mid-body, an object
//! replaced during a read, a refused key). Nothing leaves loopback.
//!
//! What is checked: every command's `--json` on an uploaded bag equals its answer on the
//! local copy (the bag's name aside); the read plans (`info --fast` in at most 4 requests; a
//! one-second window, `echo --limit 1` and a topic filter read only the chunks they need,
//! counted against an independent reading of the chunk index with the `mcap` crate);
//! retries give the undisturbed answer; a replaced object is an error; errors name the URL
//! and never a credential.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{bin, root, tempdir};

const SECRET: &str = "bagscope-test-secret-value-0123456789";
/// moto accepts any signature but refuses anonymous writes over an existing key (and, after
/// one, anonymous reads): the test's own requests carry a signature-shaped header.
const AUTH: &str = "Authorization: AWS4-HMAC-SHA256 Credential=bagscope-test-key/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";

/// The `moto_server` program, or `None` (with a note; a panic under `CI`).
fn moto_server() -> Option<PathBuf> {
    let p = std::env::var_os("BAGSCOPE_MOTO_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/s3-venv/bin/moto_server"));
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "CI is set but {} is missing (.ci/run installs it)",
            p.display()
        );
    }
    eprintln!(
        "note: {} not found; skipping the object-storage tests (.ci/run installs moto[server])",
        p.display()
    );
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `moto_server`, stopped when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    fn start(program: &Path) -> Moto {
        let port = free_port();
        let child = Command::new(program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "moto_server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto { child, port }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange with `port` over a fresh connection (`Connection: close`): the
/// status and the body.
fn http(port: u16, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/octet-stream\r\n{AUTH}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let head_end = find(&resp, b"\r\n\r\n").unwrap();
    let status: u16 = std::str::from_utf8(&resp[9..12]).unwrap().parse().unwrap();
    (status, resp[head_end + 4..].to_vec())
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn put(port: u16, key: &str, data: &[u8]) {
    let (st, body) = http(port, "PUT", &format!("/{key}"), data);
    assert!(
        st == 200,
        "PUT {key}: {st} {}",
        String::from_utf8_lossy(&body)
    );
}

/// Uploads the local file or folder `src` under `bucket/prefix` (folders: their files,
/// non-recursive, as a rosbag2 folder is).
fn upload(port: u16, bucket: &str, prefix: &str, src: &Path) {
    if src.is_dir() {
        for e in std::fs::read_dir(src).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                let name = p.file_name().unwrap().to_str().unwrap().to_string();
                put(
                    port,
                    &format!("{bucket}/{prefix}/{name}"),
                    &std::fs::read(&p).unwrap(),
                );
            }
        }
    } else {
        put(
            port,
            &format!("{bucket}/{prefix}"),
            &std::fs::read(src).unwrap(),
        );
    }
}

/// What the proxy counted.
#[derive(Default)]
struct Counters {
    requests: AtomicUsize,
    gets: AtomicUsize,
    body_bytes: AtomicU64,
}

/// Faults the proxy injects.
#[derive(Default)]
struct Faults {
    /// Answer this many of the next GETs with 503.
    unavailable: AtomicUsize,
    /// Cut this many of the next GETs' responses mid-body.
    cut: AtomicUsize,
    /// Answer GETs of this key with 403 AccessDenied.
    denied_key: Mutex<Option<String>>,
    /// After this many more GETs, replace (bucket/key) with these bytes upstream.
    replace: Mutex<Option<(usize, String, Vec<u8>)>>,
}

/// A counting, fault-injecting HTTP proxy in front of moto.
struct Proxy {
    port: u16,
    counters: Arc<Counters>,
    faults: Arc<Faults>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counters = Arc::new(Counters::default());
        let faults = Arc::new(Faults::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (c, f, st) = (counters.clone(), faults.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (c, f) = (c.clone(), f.clone());
                std::thread::spawn(move || serve(conn, upstream, &c, &f));
            }
        });
        Proxy {
            port,
            counters,
            faults,
            stop,
        }
    }

    fn reset(&self) {
        self.counters.requests.store(0, Ordering::SeqCst);
        self.counters.gets.store(0, Ordering::SeqCst);
        self.counters.body_bytes.store(0, Ordering::SeqCst);
    }

    fn requests(&self) -> usize {
        self.counters.requests.load(Ordering::SeqCst)
    }

    fn bytes(&self) -> u64 {
        self.counters.body_bytes.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serves one client connection, request after request.
fn serve(conn: TcpStream, upstream: u16, c: &Counters, f: &Faults) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut client = conn;
    loop {
        // The request head.
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let end = line == b"\r\n";
            head.extend_from_slice(&line);
            if end {
                break;
            }
        }
        let text = String::from_utf8_lossy(&head).into_owned();
        let mut lines = text.split("\r\n");
        let request_line = lines.next().unwrap_or("").to_string();
        let method = request_line.split(' ').next().unwrap_or("").to_string();
        let target = request_line.split(' ').nth(1).unwrap_or("").to_string();
        let mut len = 0usize;
        let mut fwd = format!("{request_line}\r\n");
        for l in lines.filter(|l| !l.is_empty()) {
            let lower = l.to_ascii_lowercase();
            if lower.starts_with("content-length:") {
                len = l[15..].trim().parse().unwrap_or(0);
            }
            if lower.starts_with("connection:") {
                continue;
            }
            fwd.push_str(l);
            fwd.push_str("\r\n");
        }
        fwd.push_str("Connection: close\r\n\r\n");
        let mut body = vec![0u8; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        c.requests.fetch_add(1, Ordering::SeqCst);
        let is_get = method == "GET";
        if is_get {
            c.gets.fetch_add(1, Ordering::SeqCst);
            let path = target.split('?').next().unwrap_or("").to_string();
            if f.denied_key.lock().unwrap().as_deref() == Some(path.as_str()) {
                let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
                let _ = write!(
                    client,
                    "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{xml}",
                    xml.len()
                );
                continue;
            }
            if take_one(&f.unavailable) {
                let _ = client
                    .write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
                continue;
            }
            let due = {
                let mut r = f.replace.lock().unwrap();
                match r.as_mut() {
                    Some((0, _, _)) => r.take(),
                    Some((n, _, _)) => {
                        *n -= 1;
                        None
                    }
                    None => None,
                }
            };
            if let Some((_, key, data)) = due {
                put(upstream, &key, &data);
            }
        }
        let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else {
            return;
        };
        if up.write_all(fwd.as_bytes()).is_err() || up.write_all(&body).is_err() {
            return;
        }
        let mut resp = Vec::new();
        if up.read_to_end(&mut resp).is_err() {
            return;
        }
        let head_end = find(&resp, b"\r\n\r\n").map_or(resp.len(), |p| p + 4);
        c.body_bytes
            .fetch_add((resp.len() - head_end) as u64, Ordering::SeqCst);
        // Responses go back without `Connection: close` (the client keeps its connection).
        let resp_head =
            String::from_utf8_lossy(&resp[..head_end]).replace("Connection: close\r\n", "");
        let body = &resp[head_end..];
        if is_get && body.len() > 64 && take_one(&f.cut) {
            // Half the body, then the connection is gone.
            let _ = client.write_all(resp_head.as_bytes());
            let _ = client.write_all(&body[..body.len() / 2]);
            let _ = client.shutdown(std::net::Shutdown::Both);
            return;
        }
        if client.write_all(resp_head.as_bytes()).is_err() || client.write_all(body).is_err() {
            return;
        }
    }
}

fn take_one(a: &AtomicUsize) -> bool {
    a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// Runs `bagscope ARGS` with the S3 environment pointing at `port`: (exit code, stdout,
/// stderr).
fn run_s3(port: u16, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "bagscope-test-key")
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
        .env("AWS_ALLOW_HTTP", "true")
        .env("BAGSCOPE_REMOTE_TIMEOUT_S", "20")
        .output()
        .expect("run bagscope");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked"),
        "bagscope {args:?} panicked: {stderr}"
    );
    assert!(
        !stderr.contains(SECRET) && !String::from_utf8_lossy(&out.stdout).contains(SECRET),
        "a credential was printed"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// `--json` output with the bag's names made one: the local path and the URL both become
/// `BAG`; warnings that only say a remote object was fetched whole are dropped.
fn normalised(json: &str, names: &[&str]) -> serde_json::Value {
    let mut s = json.to_string();
    // The bag's own name first (a folder URL may end in '/'), then paths under it.
    for n in names {
        s = s.replace(&format!("\"{n}\""), "\"BAG\"");
    }
    for n in names {
        s = s.replace(n.trim_end_matches('/'), "BAG");
    }
    // One document, or JSON lines (`echo`).
    let mut v: serde_json::Value = serde_json::from_str(&s).unwrap_or_else(|_| {
        serde_json::Value::Array(
            serde_json::Deserializer::from_str(&s)
                .into_iter::<serde_json::Value>()
                .map(|d| {
                    d.unwrap_or_else(|e| panic!("not JSON ({e}): {}", &json[..json.len().min(400)]))
                })
                .collect(),
        )
    });
    strip_fetch_warnings(&mut v);
    v
}

fn strip_fetch_warnings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Array(a) => {
            a.retain(|x| x.get("code").and_then(|c| c.as_str()) != Some("remote_fetched_whole"));
            a.iter_mut().for_each(strip_fetch_warnings);
        }
        serde_json::Value::Object(m) => m.values_mut().for_each(strip_fetch_warnings),
        _ => {}
    }
}

/// Asserts that `bagscope CMD <remote> REST --json` answers as `bagscope CMD <local> REST
/// --json` does (exit code and JSON).
fn same_answer(port: u16, cmd: &str, local: &Path, url: &str, rest: &[&str]) {
    let l = local.to_str().unwrap();
    let mut la = vec![cmd, l];
    la.extend_from_slice(rest);
    la.push("--json");
    let mut ra = vec![cmd, url];
    ra.extend_from_slice(rest);
    ra.push("--json");
    let (lc, lo, le) = common::run(&la);
    let (rc, ro, re) = run_s3(port, &ra);
    assert_eq!(lc, rc, "{cmd} exit codes differ: local {le} / remote {re}");
    let url_trim = url.trim_end_matches('/');
    let l_trim = l.trim_end_matches('/');
    assert_eq!(
        normalised(&lo, &[url, url_trim, l, l_trim]),
        normalised(&ro, &[url, url_trim, l, l_trim]),
        "{cmd} {rest:?}: remote answer differs from the local one"
    );
}

/// The chunks of an MCAP file as an independent reader (the `mcap` crate) finds them in its
/// summary: (start, end log time, record offset, record length, channel ids).
fn chunk_index(path: &Path) -> Vec<(u64, u64, u64, u64, Vec<u16>)> {
    let data = std::fs::read(path).unwrap();
    let summary = mcap::Summary::read(&data).unwrap().expect("a summary");
    summary
        .chunk_indexes
        .iter()
        .map(|c| {
            (
                c.message_start_time,
                c.message_end_time,
                c.chunk_start_offset,
                c.chunk_length + c.message_index_length,
                c.message_index_offsets.keys().copied().collect(),
            )
        })
        .collect()
}

/// Every message of an MCAP file as an independent reader (the `mcap` crate) sees it: topic,
/// log and publish time, sequence, payload.
fn messages_of(path: &Path) -> Vec<(String, u64, u64, u32, Vec<u8>)> {
    let data = std::fs::read(path).unwrap();
    mcap::MessageStream::new(&data)
        .unwrap()
        .map(|m| {
            let m = m.unwrap();
            (
                m.channel.topic.clone(),
                m.log_time,
                m.publish_time,
                m.sequence,
                m.data.into_owned(),
            )
        })
        .collect()
}

/// A plain HTTP file server with byte ranges (what a static web server or a CDN gives):
/// `GET` / `HEAD` of the files in `dir`, `Range: bytes=a-b`, `a-` and `-n`, an ETag; no
/// listing. Returns its port.
fn http_file_server(dir: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut out = conn;
                loop {
                    let mut lines = Vec::new();
                    loop {
                        let mut l = String::new();
                        match reader.read_line(&mut l) {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        if l == "\r\n" {
                            break;
                        }
                        lines.push(l.trim_end().to_string());
                    }
                    let first = lines.first().cloned().unwrap_or_default();
                    let mut parts = first.split(' ');
                    let method = parts.next().unwrap_or("").to_string();
                    let path = parts
                        .next()
                        .unwrap_or("")
                        .trim_start_matches('/')
                        .to_string();
                    let range = lines
                        .iter()
                        .find(|l| l.to_ascii_lowercase().starts_with("range:"))
                        .map(|l| l[6..].trim().trim_start_matches("bytes=").to_string());
                    let file = dir.join(&path);
                    let Ok(data) = std::fs::read(&file).map_err(|_| ()).and_then(|d| {
                        (!path.contains("..") && file.is_file())
                            .then_some(d)
                            .ok_or(())
                    }) else {
                        let _ =
                            out.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                        continue;
                    };
                    let n = data.len() as u64;
                    let (status, a, b) = match range {
                        Some(r) => {
                            let (x, y) = r.split_once('-').unwrap_or(("", ""));
                            let (a, b) = if x.is_empty() {
                                let k: u64 = y.parse().unwrap_or(0);
                                (n.saturating_sub(k), n)
                            } else {
                                let a: u64 = x.parse().unwrap_or(0);
                                let b = y.parse::<u64>().map(|e| (e + 1).min(n)).unwrap_or(n);
                                (a, b)
                            };
                            ("206 Partial Content", a, b)
                        }
                        None => ("200 OK", 0, n),
                    };
                    let body = &data[a as usize..b as usize];
                    let mut head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nETag: \"{n:x}\"\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\nAccept-Ranges: bytes\r\n",
                        body.len()
                    );
                    if status.starts_with("206") {
                        head.push_str(&format!(
                            "Content-Range: bytes {a}-{}/{n}\r\n",
                            b.saturating_sub(1)
                        ));
                    }
                    head.push_str("\r\n");
                    if out.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    if method != "HEAD" && out.write_all(body).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn plain_https_ranges() {
    // Plain HTTP(S): one file, and a rosbag2 folder named by its URL with a trailing '/'
    // (its metadata.yaml lists the files: no listing needed).
    let bags = root().join("bags");
    let port = http_file_server(bags.clone());
    for n in ["sensors", "arm_split"] {
        let local = bags.join(n);
        for (url, here) in [
            (
                format!("http://127.0.0.1:{port}/{n}/{n}.mcap"),
                local.join(format!("{n}.mcap")),
            ),
            (format!("http://127.0.0.1:{port}/{n}/"), local.clone()),
        ] {
            for cmd in ["info", "clocks"] {
                let (lc, lo, le) = common::run(&[cmd, here.to_str().unwrap(), "--json"]);
                let (rc, ro, re) = common::run(&[cmd, &url, "--json"]);
                assert_eq!(lc, rc, "{le} / {re}");
                let names = [url.as_str(), here.to_str().unwrap()];
                assert_eq!(
                    normalised(&lo, &names),
                    normalised(&ro, &names),
                    "{cmd} {url}"
                );
            }
        }
    }
    let (c, _, e) = common::run(&["info", &format!("http://127.0.0.1:{port}/nothing.mcap")]);
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("nothing.mcap") && e.contains("no such object"),
        "{e}"
    );
}

#[test]
#[allow(clippy::too_many_lines)] // One S3 server and proxy started once for every case (moto takes seconds to start); the cases read as one table.
fn object_storage() {
    let Some(moto) = moto_server() else {
        return;
    };
    let s3 = Moto::start(&moto);
    let proxy = Proxy::start(s3.port);
    let p = proxy.port;
    let tmp = tempdir("remote");
    let (st, body) = http(s3.port, "PUT", "/fleet", b"");
    assert_eq!(st, 200, "{}", String::from_utf8_lossy(&body));

    // The shipped bags, each as a rosbag2 folder and as a bare object.
    let bags = root().join("bags");
    let mut names: Vec<String> = std::fs::read_dir(&bags)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.is_dir()
                .then(|| p.file_name().unwrap().to_str().unwrap().to_string())
        })
        .collect();
    names.sort();
    for n in &names {
        upload(s3.port, "fleet", &format!("bags/{n}"), &bags.join(n));
    }
    for n in &names {
        let local = bags.join(n);
        let folder = format!("s3://fleet/bags/{n}/");
        let object = format!("s3://fleet/bags/{n}/{n}.mcap");
        same_answer(p, "info", &local, &folder, &[]);
        same_answer(
            p,
            "info",
            &local.join(format!("{n}.mcap")),
            &object,
            &["--fast"],
        );
        same_answer(p, "clocks", &local, &folder, &[]);
        same_answer(p, "check", &local, &object, &[]);
        // A folder named without its trailing '/'.
        same_answer(p, "clocks", &local, folder.trim_end_matches('/'), &[]);
    }
    let arm = bags.join("arm_wall");
    same_answer(
        p,
        "match",
        &arm,
        "s3://fleet/bags/arm_wall/",
        &["--command", "/arm_cmd", "--response", "/joint_states"],
    );
    let sensors = bags.join("sensors");
    same_answer(
        p,
        "sync",
        &sensors,
        "s3://fleet/bags/sensors/",
        &["--topics", "/camera/image_raw,/lidar/points", "--recommend"],
    );
    same_answer(
        p,
        "echo",
        &sensors,
        "s3://fleet/bags/sensors/",
        &["--topic", "/imu/data", "--start", "+5", "--limit", "3"],
    );

    // batch over URLs writes what it writes for the local copies.
    let (lb, rb) = (tmp.join("batch_local"), tmp.join("batch_remote"));
    let (c, _, e) = common::run(&[
        "batch",
        sensors.to_str().unwrap(),
        arm.to_str().unwrap(),
        "-o",
        lb.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    let (c, _, e) = run_s3(
        p,
        &[
            "batch",
            "s3://fleet/bags/sensors/",
            "s3://fleet/bags/arm_wall/",
            "-o",
            rb.to_str().unwrap(),
        ],
    );
    assert_eq!(c, 0, "{e}");
    // Sizes in object storage are known once a bag is opened: its data files' bytes.
    let outcomes: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rb.join("batch.json")).unwrap()).unwrap();
    for n in ["sensors", "arm_wall"] {
        let data_bytes: u64 = std::fs::read_dir(bags.join(n))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "mcap"))
            .map(|e| e.metadata().unwrap().len())
            .sum();
        let o = outcomes["bags"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["path"].as_str().is_some_and(|p| p.contains(n)))
            .unwrap_or_else(|| panic!("{n} in {outcomes}"));
        assert_eq!(o["size_bytes"], data_bytes, "{n}: {o}");
    }
    for n in ["sensors", "arm_wall"] {
        for f in ["info.json", "clocks.json"] {
            let read = |d: &Path| std::fs::read_to_string(d.join("bags").join(n).join(f)).unwrap();
            let local = bags.join(n);
            let url = format!("s3://fleet/bags/{n}/");
            let names = [url.as_str(), local.to_str().unwrap()];
            assert_eq!(
                normalised(&read(&lb), &names),
                normalised(&read(&rb), &names),
                "batch {n}/{f}"
            );
        }
    }

    // A .db3 (fetched whole, said so) answers as its local copy.
    let db3 = root().join("tests/data/db3/arm_real");
    upload(s3.port, "fleet", "db3/arm_real", &db3);
    same_answer(p, "info", &db3, "s3://fleet/db3/arm_real/", &[]);
    let (code, out, _) = run_s3(p, &["clocks", "s3://fleet/db3/arm_real/", "--json"]);
    assert!(code == 0 || code == 3, "{out}");
    assert!(
        out.contains("remote_fetched_whole"),
        "the whole fetch is said: {out}"
    );

    // A split set: two files and a metadata.yaml naming them.
    let split = tmp.join("split");
    std::fs::create_dir(&split).unwrap();
    let src = bags.join("sensors");
    for (name, range) in [
        ("part_0.mcap", ["--end", "+10"]),
        ("part_1.mcap", ["--start", "+10"]),
    ] {
        let out = split.join(name);
        let (c, _, e) = common::run(&[
            "convert",
            src.to_str().unwrap(),
            out.to_str().unwrap(),
            range[0],
            range[1],
        ]);
        assert!(c == 0, "{e}");
    }
    let yaml = std::fs::read_to_string(src.join("metadata.yaml"))
        .unwrap()
        .replace("- sensors.mcap", "- part_0.mcap\n  - part_1.mcap");
    std::fs::write(split.join("metadata.yaml"), yaml).unwrap();
    upload(s3.port, "fleet", "split", &split);
    same_answer(p, "info", &split, "s3://fleet/split/", &[]);
    same_answer(p, "clocks", &split, "s3://fleet/split", &[]);

    // A long bag of many chunks: the read plans.
    let (c, _, e) = common::run(&[
        "synth",
        "perf",
        "--messages",
        "200000",
        "-o",
        tmp.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    let perf_dir = tmp.join("perf");
    let perf_file = std::fs::read_dir(&perf_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "mcap"))
        .unwrap();
    let perf_size = std::fs::metadata(&perf_file).unwrap().len();
    put(
        s3.port,
        "fleet/perf.mcap",
        &std::fs::read(&perf_file).unwrap(),
    );
    let url = "s3://fleet/perf.mcap";
    let chunks = chunk_index(&perf_file);
    assert!(chunks.len() >= 10, "{} chunks", chunks.len());
    let t0 = chunks.iter().map(|c| c.0).min().unwrap();

    // info --fast: at most 4 requests.
    proxy.reset();
    let (c, _, e) = run_s3(p, &["info", url, "--fast", "--json"]);
    assert_eq!(c, 0, "{e}");
    assert!(
        proxy.requests() <= 4,
        "info --fast took {} requests",
        proxy.requests()
    );
    same_answer(p, "info", &perf_file, url, &["--fast"]);

    // A one-second window: the overlapping chunks, the summary and the head.
    let tail_and_head = (1u64 << 20) + (64 << 10);
    for (a, b) in [(10u64, 11u64), (50, 51)] {
        let (s, e) = (t0 + a * 1_000_000_000, t0 + b * 1_000_000_000);
        let overlapping: Vec<_> = chunks.iter().filter(|c| c.1 >= s && c.0 < e).collect();
        let chunk_bytes: u64 = overlapping.iter().map(|c| c.3).sum();
        proxy.reset();
        let out = tmp.join(format!("cut_{a}.mcap"));
        let (c, _, err) = run_s3(
            p,
            &[
                "convert",
                url,
                out.to_str().unwrap(),
                "--start",
                &format!("+{a}"),
                "--end",
                &format!("+{b}"),
                "--json",
            ],
        );
        assert_eq!(c, 0, "{err}");
        let limit = chunk_bytes + tail_and_head + 4 * (256 << 10);
        assert!(
            proxy.bytes() <= limit,
            "a 1 s window read {} bytes; its {} chunks hold {chunk_bytes} (limit {limit}; the bag is {perf_size})",
            proxy.bytes(),
            overlapping.len()
        );
        assert!(
            proxy.requests() <= overlapping.len() + 4,
            "{} requests for {} chunks",
            proxy.requests(),
            overlapping.len()
        );
        // The same cut as from the local file, byte for byte.
        let local_out = tmp.join(format!("cut_{a}_local.mcap"));
        let (c, _, err) = common::run(&[
            "convert",
            perf_file.to_str().unwrap(),
            local_out.to_str().unwrap(),
            "--start",
            &format!("+{a}"),
            "--end",
            &format!("+{b}"),
        ]);
        assert_eq!(c, 0, "{err}");
        assert_eq!(messages_of(&out), messages_of(&local_out));
    }

    // echo --limit 1 reads its first chunk and the open's requests.
    proxy.reset();
    let (c, o, e) = run_s3(
        p,
        &[
            "echo", url, "--topic", "/imu", "--start", "+50", "--limit", "1", "--json",
        ],
    );
    assert_eq!(c, 0, "{e}");
    assert_eq!(
        o.lines().filter(|l| l.contains("\"log_time_ns\"")).count(),
        1,
        "{o}"
    );
    assert!(
        proxy.bytes() <= tail_and_head + 3 * chunks.iter().map(|c| c.3).max().unwrap() + (1 << 20),
        "echo --limit 1 read {} bytes",
        proxy.bytes()
    );
    same_answer(
        p,
        "echo",
        &perf_file,
        url,
        &["--topic", "/imu", "--start", "+50", "--limit", "1"],
    );

    // A full scan reads each byte about once.
    proxy.reset();
    let (c, _, e) = run_s3(p, &["clocks", url, "--json"]);
    assert!(c == 0 || c == 3, "{e}");
    assert!(
        proxy.bytes() <= perf_size + tail_and_head + (1 << 20),
        "a full scan read {} bytes of a {perf_size}-byte bag",
        proxy.bytes()
    );
    same_answer(p, "clocks", &perf_file, url, &[]);

    // Faults: 503s and connections cut mid-body are retried; the answer is the same.
    proxy.faults.unavailable.store(3, Ordering::SeqCst);
    proxy.faults.cut.store(2, Ordering::SeqCst);
    same_answer(p, "clocks", &perf_file, url, &[]);
    assert_eq!(
        proxy.faults.unavailable.load(Ordering::SeqCst),
        0,
        "503s were injected"
    );
    assert_eq!(
        proxy.faults.cut.load(Ordering::SeqCst),
        0,
        "cuts were injected"
    );

    // An object replaced during a read: an error naming it, never a mixed answer.
    put(
        s3.port,
        "fleet/moving.mcap",
        &std::fs::read(&perf_file).unwrap(),
    );
    let other = std::fs::read(bags.join("sensors/sensors.mcap")).unwrap();
    *proxy.faults.replace.lock().unwrap() = Some((2, "fleet/moving.mcap".into(), other));
    let (c, _, e) = run_s3(p, &["clocks", "s3://fleet/moving.mcap", "--json"]);
    assert_eq!(c, 1, "a replaced object is an error: {e}");
    assert!(
        e.contains("s3://fleet/moving.mcap") && e.contains("replaced"),
        "{e}"
    );

    // Errors name the URL and what is wrong.
    let (c, _, e) = run_s3(p, &["info", "s3://fleet/no/such.mcap"]);
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("s3://fleet/no/such.mcap") && e.contains("no such object"),
        "{e}"
    );
    let (c, _, e) = run_s3(p, &["info", "s3://no-such-bucket/x.mcap"]);
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("no-such-bucket") && e.contains("does not exist"),
        "{e}"
    );
    let (c, _, e) = run_s3(p, &["info", "s3://fleet/empty-prefix/"]);
    assert_eq!(c, 1, "{e}");
    assert!(e.contains("s3://fleet/empty-prefix/"), "{e}");
    *proxy.faults.denied_key.lock().unwrap() = Some("/fleet/perf.mcap".into());
    let (c, _, e) = run_s3(p, &["info", url]);
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("access denied") && e.contains("AWS_ACCESS_KEY_ID") && !e.contains(SECRET),
        "{e}"
    );
    *proxy.faults.denied_key.lock().unwrap() = None;
    proxy.reset();
    let (c, _, e) = run_s3(p, &["info", "s3://fleet/bags/sensors/metadata.yaml"]);
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("s3://fleet/bags/sensors/metadata.yaml") && e.contains("not an MCAP file"),
        "{e}"
    );
    // A large object that is no bag is refused from its first bytes, not fetched whole.
    put(s3.port, "fleet/junk.mcap", &vec![b'x'; 8 << 20]);
    proxy.reset();
    let (c, _, e) = run_s3(p, &["info", "s3://fleet/junk.mcap"]);
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("s3://fleet/junk.mcap") && e.contains("not an MCAP file"),
        "{e}"
    );
    assert!(
        proxy.bytes() < 2 << 20,
        "{} bytes read to refuse it",
        proxy.bytes()
    );
}
