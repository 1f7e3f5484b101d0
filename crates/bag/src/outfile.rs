//! Output files written safely: under a temporary name beside the output, created anew
//! (never through a file or link already there), renamed into place when complete, and
//! removed when the work fails, is dropped, or the process is interrupted
//! ([`remove_live`]). Every writer of the workspace (bags, tables, reports) goes through here.
//!
//! Temporary names are fixed (`OUT.partial`, `NAME.tmp`, `DIR/.bagscope-staging.tmp`): what a
//! killed run left under one is ours, and the next run writing that output removes it first.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Temporary files and folders being written by this process.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// `path` with `suffix` appended to its file name (`x.mcap` → `x.mcap.partial`): the
/// temporary lives in the output's own folder, so the final rename stays on one file system.
pub fn temp_path(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    s.into()
}

/// Removes what is at `p` without following it: a link goes, not what it points to.
fn remove_entry(p: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the temporary file `tmp` for writing: a leftover of an earlier run under that name
/// (file or symbolic link) is removed first, and the file is created exclusively
/// (`O_CREAT | O_EXCL`: a link planted in between makes this fail instead of being
/// followed). It is removed by [`remove_live`] until [`persist`] or [`discard`].
pub fn create_temp(tmp: &Path) -> std::io::Result<File> {
    match std::fs::symlink_metadata(tmp) {
        Ok(m) if m.is_dir() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a folder is in the way of the temporary file",
            ))
        }
        Ok(_) => std::fs::remove_file(tmp)?,
        Err(_) => {}
    }
    let f = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    live().push(tmp.to_path_buf());
    Ok(f)
}

/// Creates the temporary folder `dir` (a leftover of that name removed first, a link to a
/// folder removed, not followed); removed with its content by [`remove_live`] until
/// [`discard`] or [`forget`].
pub fn create_temp_dir(dir: &Path) -> std::io::Result<()> {
    remove_entry(dir)?;
    std::fs::create_dir(dir)?;
    live().push(dir.to_path_buf());
    Ok(())
}

/// The rule every output of the workspace follows: an output file is a regular file (which
/// is replaced) or a new path; an output folder is a folder or a new path. Anything else
/// there (a character or block device such as `/dev/null`, a FIFO, a socket, a folder where
/// a file is expected, a file where a folder is expected, also behind a symbolic link) is
/// refused: renaming a finished file over it would replace the device node, writing into it
/// would block (a FIFO) or go nowhere. A path under something that is not a folder is refused
/// naming that ancestor. Other failures to look (permissions) are left to the write, which
/// says why. Writers call it before creating anything; [`persist`] calls it again.
pub fn check_output_file(path: &Path) -> std::io::Result<()> {
    check_output(path, false)
}

/// [`check_output_file`]'s rule for an output folder.
pub fn check_output_dir(path: &Path) -> std::io::Result<()> {
    check_output(path, true)
}

fn check_output(path: &Path, dir: bool) -> std::io::Result<()> {
    let refused = |what: String| Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, what));
    match std::fs::metadata(path) {
        Ok(m) if (dir && m.is_dir()) || (!dir && m.is_file()) => Ok(()),
        Ok(m) => refused(format!(
            "{} is there, not {}: an output must be {} or a new path",
            kind_of(&m),
            if dir { "a folder" } else { "a regular file" },
            if dir { "a folder" } else { "a regular file" },
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            // Some ancestor is not a folder: name the nearest one that exists.
            for a in path.ancestors().skip(1) {
                if let Ok(m) = std::fs::metadata(a) {
                    if !m.is_dir() {
                        return refused(format!(
                            "{} is {}, not a folder: an output cannot be written under it",
                            a.display(),
                            kind_of(&m)
                        ));
                    }
                    break;
                }
            }
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

/// What a file system entry is, in words: `a character device`, `a FIFO`, ….
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if m.is_dir() {
        "a folder"
    } else if m.is_file() {
        "a regular file"
    } else {
        "something other than a file"
    }
}

/// Renames the finished temporary `tmp` to `path` ([`check_output_file`] first: a device
/// node or FIFO that appeared there meanwhile is not replaced).
pub fn persist(tmp: &Path, path: &Path) -> std::io::Result<()> {
    check_output_file(path)?;
    std::fs::rename(tmp, path)?;
    forget(tmp);
    Ok(())
}

/// Removes the temporary `tmp` (a file, or a folder with its content).
pub fn discard(tmp: &Path) {
    let _ = remove_entry(tmp);
    forget(tmp);
}

/// Stops tracking `tmp` (it was renamed or removed by other means).
pub fn forget(tmp: &Path) {
    live().retain(|p| p != tmp);
}

/// Removes every temporary file and folder this process is still writing: what a Ctrl-C or
/// SIGTERM handler calls before the process exits without running the writers' cleanup.
pub fn remove_live() {
    let paths = std::mem::take(&mut *live());
    for p in paths {
        let _ = remove_entry(&p);
    }
}

/// A temporary file of this process's own, away from any output (the decompressed copy of a
/// `*.mcap.zstd` / `*.db3.zstd` bag file in the temp directory): deleted when dropped, and
/// tracked until then so that [`remove_live`] deletes it on Ctrl-C or SIGTERM, when the
/// process exits without dropping it.
pub struct LiveTempPath(tempfile::TempPath);

impl LiveTempPath {
    /// Tracks `p` (already created) until dropped.
    pub(crate) fn new(p: tempfile::TempPath) -> Self {
        live().push(p.to_path_buf());
        LiveTempPath(p)
    }
}

impl std::ops::Deref for LiveTempPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for LiveTempPath {
    fn drop(&mut self) {
        // The file itself goes with the `TempPath` right after.
        forget(&self.0);
    }
}

/// The temporaries currently tracked (for tests).
pub fn live_temporaries() -> Vec<PathBuf> {
    live().clone()
}

/// Whether `a` and `b` are the same existing file: the same inode where the platform has
/// them (hard links, symbolic links, `..`), else the same canonical path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// The first of `outputs` that is one of `inputs` ([`crate::Bag::input_paths`]) by any
/// name, if any: a writer must refuse it before creating anything.
pub fn input_among<'a>(outputs: &[&'a Path], inputs: &[PathBuf]) -> Option<&'a Path> {
    outputs
        .iter()
        .copied()
        .find(|o| inputs.iter().any(|i| same_file(o, i)))
}

/// An error's message followed by each of its causes that the message does not already
/// hold: `mcap`'s "I/O error from writing…" then says which (`No space left on device`).
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cause = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn temporaries_replace_leftovers_and_never_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("out.mcap.partial");
        // A leftover of a killed run: replaced.
        std::fs::write(&tmp, b"stale").unwrap();
        let mut f = create_temp(&tmp).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&tmp).unwrap(), b"new");
        assert!(live_temporaries().contains(&tmp));
        persist(&tmp, &dir.path().join("out.mcap")).unwrap();
        assert!(!live_temporaries().contains(&tmp));
        // A link planted at the temporary name: the link goes, its target stays as it was.
        #[cfg(unix)]
        {
            let target = dir.path().join("precious");
            std::fs::write(&target, b"keep").unwrap();
            std::os::unix::fs::symlink(&target, &tmp).unwrap();
            let mut f = create_temp(&tmp).unwrap();
            f.write_all(b"xxxx").unwrap();
            assert_eq!(std::fs::read(&target).unwrap(), b"keep");
            assert!(!std::fs::symlink_metadata(&tmp).unwrap().is_symlink());
            discard(&tmp);
            assert!(!tmp.exists());
            // A folder of that name is not ours to delete.
            std::fs::create_dir(&tmp).unwrap();
            assert!(create_temp(&tmp).is_err());
            std::fs::remove_dir(&tmp).unwrap();
        }
    }

    /// A special file made in the test's folder (`mkfifo`, or `mknod` of /dev/null's numbers,
    /// which needs root): never the machine's own /dev/null.
    #[cfg(unix)]
    fn special(path: &Path, device: bool) -> bool {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        let (mode, dev) = if device {
            (libc::S_IFCHR | 0o666, libc::makedev(1, 3))
        } else {
            (libc::S_IFIFO | 0o666, 0)
        };
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        unsafe { libc::mknod(c.as_ptr(), mode, dev) == 0 }
    }

    #[cfg(unix)]
    #[test]
    fn outputs_are_regular_files_folders_or_new_paths() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let file = d.join("old.mcap");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_output_file(&file).is_ok());
        assert!(check_output_file(&d.join("new.mcap")).is_ok());
        assert!(check_output_dir(d).is_ok());
        assert!(check_output_dir(&d.join("new")).is_ok());
        // A folder where a file is expected, and the other way round.
        let e = check_output_file(d).unwrap_err();
        assert!(e.to_string().contains("a folder is there"), "{e}");
        let e = check_output_dir(&file).unwrap_err();
        assert!(e.to_string().contains("a regular file is there"), "{e}");
        // Under a file: the file is named.
        let e = check_output_file(&file.join("x.parquet")).unwrap_err();
        assert!(e.to_string().contains(&*file.to_string_lossy()), "{e}");

        let fifo = d.join("fifo");
        assert!(special(&fifo, false));
        let e = check_output_file(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO is there"), "{e}");
        assert!(check_output_dir(&fifo).is_err());
        // A link to it is refused too.
        let link = d.join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(check_output_file(&link).is_err());

        // persist checks again: a temporary is not renamed over a FIFO.
        let tmp = d.join("fifo.tmp");
        drop(create_temp(&tmp).unwrap());
        assert!(persist(&tmp, &fifo).is_err());
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        discard(&tmp);

        let dev = d.join("null");
        if special(&dev, true) {
            let e = check_output_file(&dev).unwrap_err();
            assert!(e.to_string().contains("a character device is there"), "{e}");
            let e = check_output_file(&dev.join("x")).unwrap_err();
            assert!(
                e.to_string().contains("a character device, not a folder"),
                "{e}"
            );
        } else {
            eprintln!("note: mknod of a character device not permitted; checked FIFOs only");
        }
    }

    #[test]
    fn refuses_inputs_by_any_name_and_keeps_the_os_cause() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.mcap");
        std::fs::write(&input, b"x").unwrap();
        let via_dotdot = dir.path().join(".").join("in.mcap");
        let other = dir.path().join("out.json");
        let inputs = [input.clone()];
        assert_eq!(
            input_among(&[other.as_path(), via_dotdot.as_path()], &inputs),
            Some(via_dotdot.as_path())
        );
        assert_eq!(input_among(&[other.as_path()], &inputs), None);

        #[derive(Debug, thiserror::Error)]
        #[error("I/O error from writing")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::from_raw_os_error(28));
        let s = with_causes(&e);
        assert!(s.starts_with("I/O error from writing: "), "{s}");
        assert!(s.contains("No space left on device"), "{s}");
    }
}
