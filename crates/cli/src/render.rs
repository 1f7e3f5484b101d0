//! Output helpers shared by the commands: JSON, aligned tables, warnings. Text from a bag
//! (topic and type names, paths, messages quoting them) reaches the terminal through
//! [`visible`]: its control characters are written out (`\x1b`), so a name cannot send escape
//! sequences, ring the bell or overwrite a line. JSON escapes them itself.

use std::io::Write;

use bagscope::text::visible;
use bagscope::CommandReport;
use serde::Serialize;

/// Set when an output given as `-` holds standard output: the command's report (text or JSON)
/// then goes to standard error, so that standard output carries the data alone.
static REPORT_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The report's stream: stdout, or stderr once an output took stdout ([`StdoutStage`]).
fn report_out() -> Box<dyn Write> {
    if REPORT_TO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    }
}

/// Pretty JSON on stdout, newline-terminated.
pub(crate) fn json<T: Serialize>(v: &T) -> anyhow::Result<()> {
    // Serialize first, then write: an io::Error (a closed pipe) then reaches main() as itself,
    // which serde_json's writer error would hide.
    let mut bytes = serde_json::to_vec_pretty(v)?;
    bytes.push(b'\n');
    let mut out = report_out();
    out.write_all(&bytes)?;
    out.flush()?;
    Ok(())
}

/// Prints the command's report (JSON with `--json`, else `text` of it) and gives the exit
/// code: [`crate::EXIT_WARN`] when it finished with lost or suspect data (or, for commands over
/// many bags or a live graph, a failed bag or an interrupted run), else 0.
pub(crate) fn finish<R: Serialize + CommandReport>(
    r: &R,
    as_json: bool,
    text: impl FnOnce(&R) -> String,
) -> anyhow::Result<u8> {
    finish_with(r, as_json, text, false)
}

/// [`finish`], exiting 3 also when `warn` (`check`'s findings).
pub(crate) fn finish_with<R: Serialize + CommandReport>(
    r: &R,
    as_json: bool,
    text: impl FnOnce(&R) -> String,
    warn: bool,
) -> anyhow::Result<u8> {
    if as_json {
        json(r)?;
    } else {
        print(&text(r))?;
    }
    Ok(if warn { crate::EXIT_WARN } else { exit_code(r) })
}

/// The exit code of a command that finished with `r`: [`crate::EXIT_WARN`] when it finished
/// with lost or suspect data (or, for commands over many bags or a live graph, a failed bag or
/// an interrupted run), else 0. For commands that print something else than the report itself.
pub(crate) fn exit_code(r: &impl CommandReport) -> u8 {
    if r.finished_with_warnings() {
        crate::EXIT_WARN
    } else {
        0
    }
}

/// Whether an output argument is `-`: standard output.
pub(crate) fn is_stdout(p: &std::path::Path) -> bool {
    p.as_os_str() == "-"
}

/// A temporary folder standing in for standard output, for outputs written as a file (CSV,
/// JSON lines): the command writes into it, [`StdoutStage::copy_out`] streams the file to
/// stdout. The folder is removed when dropped (and on Ctrl-C, as every temporary). From its
/// creation on, the command's report goes to standard error.
pub(crate) struct StdoutStage {
    dir: std::path::PathBuf,
}

impl StdoutStage {
    pub(crate) fn new() -> anyhow::Result<StdoutStage> {
        let dir = std::env::temp_dir().join(format!("bagscope-stdout-{}", std::process::id()));
        bagscope::outfile::create_temp_dir(&dir).map_err(|e| {
            anyhow::anyhow!("cannot create a temporary folder {}: {e}", dir.display())
        })?;
        REPORT_TO_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(StdoutStage { dir })
    }

    /// A file of that name in the folder.
    pub(crate) fn file(&self, name: &str) -> std::path::PathBuf {
        self.dir.join(name)
    }

    /// Streams the file `p` (one of [`StdoutStage::file`]) to standard output.
    pub(crate) fn copy_out(&self, p: &std::path::Path) -> anyhow::Result<()> {
        let mut f = std::fs::File::open(p)?;
        let mut out = std::io::stdout().lock();
        std::io::copy(&mut f, &mut out)?;
        out.flush()?;
        Ok(())
    }
}

impl Drop for StdoutStage {
    fn drop(&mut self) {
        bagscope::outfile::discard(&self.dir);
    }
}

/// An output path argument: any path but `-`. These outputs are files or folders (Parquet,
/// MCAP, PNG, a report page), which standard output cannot hold: `-` is a usage error rather
/// than a file or folder named `-`. Outputs standard output can hold (CSV, JSON lines) take
/// `-` and check it with [`is_stdout`].
pub(crate) fn output_path(s: &str) -> Result<std::path::PathBuf, String> {
    if s == "-" {
        return Err(
            "this output is written as files: `-` (standard output) is not supported here; give a path"
                .into(),
        );
    }
    Ok(std::path::PathBuf::from(s))
}

/// An aligned text table: first row is the header; columns after the first are right-aligned
/// when every value in them looks numeric.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    // A cell is one line: a name's newline or carriage return would split or overwrite a row.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| visible(c).into_owned()).collect())
        .collect();
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut width = vec![0usize; ncol];
    let mut numeric = vec![true; ncol];
    for (ri, r) in rows.iter().enumerate() {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
            if ri > 0 && !c.is_empty() && c != "-" && c.parse::<f64>().is_err() {
                numeric[i] = false;
            }
        }
    }
    let mut s = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = width[i] - c.chars().count();
            if numeric[i] && i > 0 {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                if i + 1 < r.len() {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

pub(crate) fn opt_f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

pub(crate) fn opt_ms(v: Option<i64>) -> String {
    v.map(|x| format!("{:.1}", x as f64 / 1e6))
        .unwrap_or_else(|| "-".into())
}

/// Set by `--verbose`: every warning on its own line instead of one line per code.
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn set_verbose(v: bool) {
    VERBOSE.store(v, std::sync::atomic::Ordering::Relaxed);
}

fn verbose() -> bool {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

fn warning_line(w: &bagscope::Warning) -> String {
    // The file matters when a bag has several (split recordings): name it.
    format!(
        "warning [{}]{}{}: {}\n",
        w.code.as_str(),
        w.topic
            .as_ref()
            .map(|t| format!(" {}", visible(t)))
            .unwrap_or_default(),
        w.file
            .as_ref()
            .map(|f| format!(" in {}", visible(f)))
            .unwrap_or_default(),
        visible(&w.message)
    )
}

/// Warnings as text: by default one line per code (how many, which topics or files, the first
/// message), worst first; with `--verbose` every warning on its own line. Topics and files are
/// listed in natural order (`_2` before `_10`).
pub(crate) fn warnings(ws: &[bagscope::Warning]) -> String {
    use bagscope::findings::{natural_cmp, severity_of};
    let mut ws: Vec<&bagscope::Warning> = ws.iter().collect();
    ws.sort_by(|a, b| {
        severity_of(a.code.as_str(), a.data_loss)
            .cmp(&severity_of(b.code.as_str(), b.data_loss))
            .then(a.code.cmp(&b.code))
            .then(natural_cmp(
                a.topic.as_deref().unwrap_or(""),
                b.topic.as_deref().unwrap_or(""),
            ))
            .then(natural_cmp(
                a.file.as_deref().unwrap_or(""),
                b.file.as_deref().unwrap_or(""),
            ))
            .then(a.message.cmp(&b.message))
    });
    let mut s = String::new();
    if verbose() {
        for w in ws {
            s.push_str(&warning_line(w));
        }
        return s;
    }
    let mut i = 0;
    while i < ws.len() {
        let j = i + ws[i..].iter().take_while(|w| w.code == ws[i].code).count();
        let group = &ws[i..j];
        if group.len() == 1 {
            s.push_str(&warning_line(group[0]));
        } else {
            let mut names: Vec<String> = group
                .iter()
                .filter_map(|w| w.topic.as_deref().map(|t| visible(t).into_owned()))
                .collect();
            let mut files: Vec<String> = group
                .iter()
                .filter_map(|w| w.file.as_deref().map(|f| visible(f).into_owned()))
                .collect();
            names.dedup();
            files.dedup();
            let list = |v: &[String]| {
                if v.len() <= 6 {
                    v.join(", ")
                } else {
                    format!("{}, … ({} in all)", v[..6].join(", "), v.len())
                }
            };
            let mut whom = Vec::new();
            if !names.is_empty() {
                whom.push(list(&names));
            }
            if !files.is_empty() {
                whom.push(format!("in {}", list(&files)));
            }
            s.push_str(&format!(
                "warning [{}] ×{}{}: {} (--verbose lists each)\n",
                group[0].code.as_str(),
                group.len(),
                if whom.is_empty() {
                    String::new()
                } else {
                    format!(" {}", whom.join(" "))
                },
                visible(&group[0].message)
            ));
        }
        i = j;
    }
    s
}

/// A rate cell: the rate, or what the times are when they give none ("span 17 ns": log times
/// too close together for a rate to mean anything).
pub(crate) fn rate(rate_hz: Option<f64>, count: u64, span_ns: i64) -> String {
    match rate_hz {
        Some(r) => format!("{r:.2}"),
        None if count >= 2 => format!("span {}", bagscope::timefmt::short_ns(span_ns)),
        None => "-".into(),
    }
}

/// The verdicts' findings, one line per code, worst first (errors, warnings, then info).
pub(crate) fn findings(fs: &[bagscope::findings::VerdictFinding]) -> String {
    use bagscope::findings::Severity;
    if fs.is_empty() {
        return "findings: none\n".into();
    }
    let mut s = String::from("findings (worst first):\n");
    for f in fs {
        let sev = match f.severity {
            Severity::Error => "error  ",
            Severity::Warning => "warning",
            Severity::Info => "info   ",
        };
        let shown: Vec<String> = f
            .topics
            .iter()
            .take(6)
            .map(|t| visible(t).into_owned())
            .collect();
        let topics = match f.topics.len() {
            0 => String::new(),
            n if n <= 6 => format!(" [{}]", shown.join(", ")),
            n => format!(" [{}, … {n} topics]", shown.join(", ")),
        };
        s.push_str(&format!(
            "  {sev} {}{topics}: {}\n",
            visible(&f.code),
            visible(&f.message)
        ));
    }
    s
}

/// `s` for a terminal: its lines kept, every other control character written out.
pub(crate) fn terminal_text(s: &str) -> String {
    s.split('\n').map(visible).collect::<Vec<_>>().join("\n")
}

/// Writes text to stdout, propagating a broken pipe as an error main() treats as success.
/// Control characters other than line ends are written out ([`terminal_text`]).
pub(crate) fn print(s: &str) -> anyhow::Result<()> {
    let s = terminal_text(s);
    let mut out = report_out();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Bytes for humans (binary units: KiB, MiB, GiB).
pub(crate) fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bag_text_reaches_the_terminal_without_control_characters() {
        let t = table(&[
            vec!["topic".into(), "count".into()],
            vec!["/a\x1b]0;pwned\x07\r/b\nc".into(), "1".into()],
        ]);
        assert!(!t.contains(['\x1b', '\x07', '\r']), "{t:?}");
        assert_eq!(t.lines().count(), 2, "{t:?}");
        assert!(t.contains("/a\\x1b]0;pwned\\x07\\r/b\\nc"), "{t:?}");
        let s = terminal_text("line one \x1b[2J\nline two\r\n");
        assert_eq!(s, "line one \\x1b[2J\nline two\\r\n");
    }
}
