//! What `batch` finds under its inputs, and whether an earlier run's outputs belong to a bag as
//! it is now. Apart from the `batch` module (which needs polars) so that it is tested without it.
//!
//! * A folder holding `metadata.yaml` is one bag; so is a folder whose bag files are one rosbag2
//!   split set without it (`NAME_0.mcap`, `NAME_1.mcap`, ...), as `info` opens it. Other bag files
//!   are one bag each.
//! * Symbolic links to bags (folders or files) are bags; links to folders that are not bags are
//!   not followed (no loops) and, like FIFOs and broken links named as bag files, are listed as
//!   skipped with the reason.
//! * Outputs are keyed by the bag's canonical path and a fingerprint of its files (names, sizes,
//!   modification times, and a hash of each file's first 4 KiB and last 64 KiB, where the MCAP
//!   summary and footer live). A bag whose record does not match is redone: another bag that
//!   sanitised to the same output name, or a bag that grew or changed since it was read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const MAX_DEPTH: usize = 64;

/// True when `p` is named as a bag file: `.mcap`, `.mcap.zstd` or `.db3`.
pub fn is_bag_file(p: &Path) -> bool {
    let n = p.to_string_lossy();
    n.ends_with(".mcap") || n.ends_with(".mcap.zstd") || n.ends_with(".db3")
}

/// `NAME_7.mcap` → (`NAME`, 7, `.mcap`): rosbag2's split file naming.
fn split_parts(p: &Path) -> Option<(String, u64, String)> {
    let name = p.file_name()?.to_string_lossy().into_owned();
    let dot = name.find('.')?;
    let (stem, ext) = name.split_at(dot);
    let (base, n) = stem.rsplit_once('_')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base.to_string(), n.parse().ok()?, ext.to_string()))
}

/// True when `files` (two or more) are exactly one split set: one name and extension,
/// numbered 0, 1, ..., without gaps.
fn is_split_set(files: &[PathBuf]) -> bool {
    if files.len() < 2 {
        return false;
    }
    let Some(parts) = files
        .iter()
        .map(|f| split_parts(f))
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    let (base, _, ext) = &parts[0];
    let mut ns: Vec<u64> = parts.iter().map(|p| p.1).collect();
    ns.sort_unstable();
    parts.iter().all(|p| &p.0 == base && &p.2 == ext)
        && ns.iter().enumerate().all(|(i, n)| *n == i as u64)
}

/// Regular bag files directly in `dir` (links followed), sorted.
fn bag_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| is_bag_file(p) && std::fs::metadata(p).is_ok_and(|m| m.is_file()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// True when `dir` is a bag as a whole: `metadata.yaml`, or one split set of bag files.
fn is_bag_dir(dir: &Path) -> bool {
    dir.join("metadata.yaml").is_file() || is_split_set(&bag_files_in(dir))
}

/// Bags under `dir` into `out` (sorted within each folder); entries that look like bags but are
/// not read into `skipped` with the reason. `depth` is how deep `dir` already is (0 for the
/// input itself): folders deeper than 64 levels are not entered.
pub fn walk(
    dir: &Path,
    depth: usize,
    out: &mut Vec<PathBuf>,
    skipped: &mut Vec<(PathBuf, String)>,
) {
    if dir.join("metadata.yaml").is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_type().ok().map(|t| (e.path(), t)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let split = is_split_set(&bag_files_in(dir));
    if split {
        out.push(dir.to_path_buf());
    }
    for (p, t) in entries {
        if t.is_dir() {
            walk(&p, depth + 1, out, skipped);
        } else if t.is_symlink() {
            match std::fs::metadata(&p) {
                Err(_) => {
                    if is_bag_file(&p) {
                        skipped.push((p, "broken symbolic link".into()));
                    }
                }
                Ok(m) if m.is_dir() => {
                    if is_bag_dir(&p) {
                        out.push(p);
                    } else {
                        skipped.push((
                            p,
                            "symbolic link to a folder that is not a bag (no metadata.yaml, no split set): not followed".into(),
                        ));
                    }
                }
                Ok(m) if m.is_file() => {
                    let target = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
                    if !split && (is_bag_file(&p) || is_bag_file(&target)) {
                        out.push(p);
                    }
                }
                Ok(_) => {
                    if is_bag_file(&p) {
                        skipped.push((
                            p,
                            "not a regular file (a FIFO, device or socket): not opened".into(),
                        ));
                    }
                }
            }
        } else if t.is_file() {
            if !split && is_bag_file(&p) {
                out.push(p);
            }
        } else if is_bag_file(&p) {
            skipped.push((
                p,
                "not a regular file (a FIFO, device or socket): not opened".into(),
            ));
        }
    }
}

/// 64-bit FNV-1a: stable across runs and Rust versions (the record outlives the binary).
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The files a bag is read from: itself, or a folder's regular files (and those of its
/// subfolders, where rosbag2 metadata may point), sorted.
fn fingerprint_files(bag: &Path) -> Vec<PathBuf> {
    fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() && depth < 2 => collect(&p, depth + 1, out),
                _ if std::fs::metadata(&p).is_ok_and(|m| m.is_file()) => out.push(p),
                _ => {}
            }
        }
    }
    let mut v = Vec::new();
    if bag.is_dir() {
        collect(bag, 0, &mut v);
    } else {
        v.push(bag.to_path_buf());
    }
    v.sort();
    v
}

/// A fingerprint of the bag's files as they are now; `None` when one cannot be read.
pub fn fingerprint(bag: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    const HEAD: u64 = 4 << 10;
    const TAIL: u64 = 64 << 10;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in fingerprint_files(bag) {
        let m = std::fs::metadata(&f).ok()?;
        let rel = f.strip_prefix(bag).unwrap_or(&f);
        h = fnv1a(h, rel.to_string_lossy().as_bytes());
        h = fnv1a(h, &[0]);
        h = fnv1a(h, &m.len().to_le_bytes());
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        h = fnv1a(h, &mtime_ns.to_le_bytes());
        let mut file = std::fs::File::open(&f).ok()?;
        let mut buf = Vec::new();
        (&mut file).take(HEAD).read_to_end(&mut buf).ok()?;
        h = fnv1a(h, &buf);
        if m.len() > HEAD {
            let from = m.len().saturating_sub(TAIL).max(HEAD);
            file.seek(SeekFrom::Start(from)).ok()?;
            buf.clear();
            file.take(TAIL).read_to_end(&mut buf).ok()?;
            h = fnv1a(h, &buf);
        }
    }
    Some(format!("fnv1a64:{h:016x}"))
}

/// What a bag's output folder was made from (`source.json`, written last).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRecord {
    /// The bag's canonical path.
    pub path: String,
    /// [`fingerprint`] of the bag's files when the outputs were made (`fnv1a64:` and 16 hex
    /// digits).
    pub fingerprint: String,
}

impl SourceRecord {
    /// The record for `bag` as it is now (`None`: unreadable, never up to date).
    pub fn of(bag: &Path) -> Option<SourceRecord> {
        Some(SourceRecord {
            path: std::fs::canonicalize(bag).ok()?.display().to_string(),
            fingerprint: fingerprint(bag)?,
        })
    }

    /// True when `record` (an earlier run's `source.json`) was made from `bag` as it is now.
    pub fn matches(record: &Path, bag: &Path) -> bool {
        let Some(old) = std::fs::read(record)
            .ok()
            .and_then(|b| serde_json::from_slice::<SourceRecord>(&b).ok())
        else {
            return false;
        };
        SourceRecord::of(bag).is_some_and(|now| now == old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("bagscope-batch-inputs-")
            .tempdir()
            .unwrap()
    }

    fn found(dir: &Path) -> (Vec<String>, Vec<String>) {
        let (mut out, mut skipped) = (Vec::new(), Vec::new());
        walk(dir, 0, &mut out, &mut skipped);
        let rel = |p: &Path| p.strip_prefix(dir).unwrap().display().to_string();
        (
            out.iter().map(|p| rel(p)).collect(),
            skipped.iter().map(|(p, _)| rel(p)).collect(),
        )
    }

    #[test]
    fn a_record_belongs_to_one_bag_as_it_was() {
        let t = tmp();
        let a = t.path().join("a_b.mcap");
        let b = t.path().join("a b.mcap");
        std::fs::write(&a, vec![1u8; 100_000]).unwrap();
        std::fs::write(&b, vec![1u8; 100_000]).unwrap();
        let rec = t.path().join("source.json");
        std::fs::write(
            &rec,
            serde_json::to_vec(&SourceRecord::of(&a).unwrap()).unwrap(),
        )
        .unwrap();
        assert!(SourceRecord::matches(&rec, &a));
        // Same sanitised name, same content: another bag all the same.
        assert!(!SourceRecord::matches(&rec, &b));
        // The bag grew after it was read (still being recorded).
        let mut v = std::fs::read(&a).unwrap();
        v.extend_from_slice(&[2u8; 10]);
        std::fs::write(&a, &v).unwrap();
        assert!(!SourceRecord::matches(&rec, &a));
        // Same size and modification time, another footer.
        std::fs::write(
            &rec,
            serde_json::to_vec(&SourceRecord::of(&a).unwrap()).unwrap(),
        )
        .unwrap();
        let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
        let n = v.len();
        v[n - 1] = 3;
        std::fs::write(&a, &v).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert!(!SourceRecord::matches(&rec, &a));
        // No record, or a broken one: not up to date.
        assert!(!SourceRecord::matches(&t.path().join("none.json"), &a));
        std::fs::write(&rec, b"{").unwrap();
        assert!(!SourceRecord::matches(&rec, &a));
    }

    #[test]
    fn folder_records_cover_every_file() {
        let t = tmp();
        let d = t.path().join("bag");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("metadata.yaml"), "x").unwrap();
        std::fs::write(d.join("sub/b_0.db3"), "1").unwrap();
        let f0 = fingerprint(&d).unwrap();
        std::fs::write(d.join("sub/b_1.db3"), "2").unwrap();
        assert_ne!(fingerprint(&d).unwrap(), f0);
    }

    #[test]
    fn split_sets_symlinks_and_fifos() {
        let t = tmp();
        let r = t.path();
        // A split set without metadata.yaml: one bag, as `info` reads it.
        std::fs::create_dir(r.join("split")).unwrap();
        for n in 0..3 {
            std::fs::write(r.join(format!("split/run_{n}.mcap")), "x").unwrap();
        }
        // Independent bags side by side stay separate.
        std::fs::create_dir(r.join("runs")).unwrap();
        std::fs::write(r.join("runs/a.mcap"), "x").unwrap();
        std::fs::write(r.join("runs/b_0.mcap"), "x").unwrap();
        std::fs::write(r.join("runs/c_1.mcap"), "x").unwrap();
        // A rosbag2 folder, and a folder of links to bags.
        std::fs::create_dir(r.join("store")).unwrap();
        std::fs::create_dir(r.join("store/bag1")).unwrap();
        std::fs::write(r.join("store/bag1/metadata.yaml"), "x").unwrap();
        std::fs::write(r.join("store/x.mcap"), "x").unwrap();
        std::fs::create_dir(r.join("links")).unwrap();
        std::os::unix::fs::symlink(r.join("store/bag1"), r.join("links/bag1")).unwrap();
        std::os::unix::fs::symlink(r.join("store/x.mcap"), r.join("links/renamed")).unwrap();
        std::os::unix::fs::symlink(r.join("runs"), r.join("links/loop")).unwrap();
        std::os::unix::fs::symlink(r.join("nowhere.mcap"), r.join("links/dead.mcap")).unwrap();
        let st = std::process::Command::new("mkfifo")
            .arg(r.join("links/pipe.mcap"))
            .status()
            .unwrap();
        assert!(st.success());
        let (out, skipped) = found(r);
        assert_eq!(
            out,
            [
                "links/bag1",
                "links/renamed",
                "runs/a.mcap",
                "runs/b_0.mcap",
                "runs/c_1.mcap",
                "split",
                "store/bag1",
                "store/x.mcap",
            ]
        );
        assert_eq!(
            skipped,
            ["links/dead.mcap", "links/loop", "links/pipe.mcap"]
        );
    }
}
