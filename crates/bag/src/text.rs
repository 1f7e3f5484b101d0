//! Bag strings (topic and type names, frame ids, warnings that quote them) on their way into
//! a terminal, a Markdown page or a file name. A bag is input: its names may hold escape
//! sequences, markup or path characters, and each output gets them in a form it cannot take
//! for its own syntax. One function per output, used by every command that writes it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters a terminal or a renderer acts on instead of showing: C0 and C1 controls
/// (ESC, BEL, CR, LF, CSI, …), DEL, line and paragraph separators and the bidirectional
/// overrides and isolates (which reorder what is shown around them).
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every control character written out (`\x1b`, `\r`, `\n`, `\u{202e}`), for a
/// terminal or any text one line per item: a name cannot move the cursor, retitle the
/// terminal, ring the bell, overwrite a line or split a table row. Everything else is kept.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(invisible) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if invisible(c) && (c as u32) < 0x80 => {
                let _ = write!(o, "\\x{:02x}", c as u32);
            }
            c if invisible(c) => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    Cow::Owned(o)
}

/// `s` as literal text inside a CommonMark / GitHub-flavoured Markdown line or table cell:
/// control characters as [`visible`] writes them, `<`, `>`, `&` and `"` as HTML entities
/// (no raw HTML, no autolink, no entity of the bag's making), and the characters that start
/// links, autolinks (`:`, a `.` before a letter), images, emphasis, code, strikethrough,
/// headings or table cells escaped with a backslash. Renders as the same characters, live as nothing.
pub fn md_escape(s: &str) -> String {
    let s = visible(s);
    let mut o = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '!' | '|' | '~' | '#' | ':' => {
                o.push('\\');
                o.push(c);
            }
            // `www.` and `x.org` autolinks; a decimal point stays as it is.
            '.' if !chars.peek().is_some_and(char::is_ascii_digit) => o.push_str("\\."),
            c => o.push(c),
        }
    }
    o
}

/// The longest file stem [`file_stem_for_topic`] returns, in bytes: with a prefix, an
/// extension and a temporary suffix it stays far below the 255 bytes a file name may have.
pub const MAX_TOPIC_STEM_BYTES: usize = 96;

/// FNV-1a over `bytes`: stable across runs, platforms and compiler versions (file names
/// derived from it must not change between releases).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A file stem for a topic's file (an exported table, a plot), unique per topic name and at
/// most [`MAX_TOPIC_STEM_BYTES`] long, made of `[A-Za-z0-9_.-]` only.
///
/// An ordinary ROS 2 name (`/camera/image_raw`: a leading `/`, then lowercase letters, digits
/// and `_` in `/`-separated parts) keeps its readable form with `/` as `.`
/// (`camera.image_raw`); that mapping is one-to-one on such names and never makes a `-`.
/// Any other name (other characters, capitals, which a case-insensitive file system would
/// fold, empty parts, or a name too long) is sanitised, shortened and given `-` and ten hex
/// digits of a hash of the whole name, so `/a/b`, `/a_b`, `/a.b` and `/A/B` get four files.
pub fn file_stem_for_topic(topic: &str) -> String {
    let body = topic.strip_prefix('/').unwrap_or("");
    let plain = !body.is_empty()
        && body.split('/').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        });
    if plain && body.len() <= MAX_TOPIC_STEM_BYTES {
        return body.replace('/', ".");
    }
    let mut s: String = topic
        .trim_start_matches('/')
        .chars()
        .map(|c| match c {
            '/' => '.',
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => c,
            _ => '_',
        })
        .collect();
    // Room for `-` and the hash; no hidden file, nothing a shell takes for an option.
    s.truncate(MAX_TOPIC_STEM_BYTES - 11);
    let s = s.trim_start_matches(['.', '-']);
    let s = if s.is_empty() { "topic" } else { s };
    format!("{s}-{:010x}", fnv1a64(topic.as_bytes()) & 0xff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_writes_out_control_characters() {
        assert_eq!(visible("/camera/image_raw"), "/camera/image_raw");
        assert!(matches!(visible("/plain"), Cow::Borrowed(_)));
        assert_eq!(
            visible("/a\x1b]0;owned\x07\r\n\t\x7f\u{9b}"),
            "/a\\x1b]0;owned\\x07\\r\\n\\t\\x7f\\u{9b}"
        );
        assert_eq!(visible("abc\u{202e}txt.exe"), "abc\\u{202e}txt.exe");
        // Non-ASCII text that is not a control stays.
        assert_eq!(visible("/kamera/größe/画像"), "/kamera/größe/画像");
    }

    #[test]
    fn md_escape_leaves_nothing_live() {
        let e = md_escape("<script>alert(1)</script>");
        assert!(!e.contains('<') && !e.contains('>'), "{e}");
        assert_eq!(md_escape("a|b\r\nc"), "a\\|b\\\\r\\\\nc");
        let img = md_escape("![x](http://evil/x.png)");
        assert!(!img.contains("![") && !img.contains("]("), "{img}");
        let link = md_escape("[click](javascript:alert(1))");
        assert!(
            !link.contains("](") && !link.contains("javascript:"),
            "{link}"
        );
        assert_eq!(md_escape("&amp;"), "&amp;amp;");
        assert_eq!(md_escape("x\x1by"), "x\\\\x1by");
    }

    #[test]
    fn topic_stems_are_unique_bounded_and_plain_where_possible() {
        assert_eq!(file_stem_for_topic("/camera/image_raw"), "camera.image_raw");
        assert_eq!(file_stem_for_topic("/joint_states"), "joint_states");
        let names = [
            "/a/b", "/a_b", "/a.b", "/A/B", "/a/B", "a/b", "//a/b", "/a//b", "/a/b/", "/", "",
            "/a b", "/a-b",
        ];
        let stems: Vec<String> = names.iter().map(|n| file_stem_for_topic(n)).collect();
        let mut folded: Vec<String> = stems.iter().map(|s| s.to_ascii_lowercase()).collect();
        folded.sort();
        folded.dedup();
        assert_eq!(folded.len(), names.len(), "{stems:?}");
        for s in &stems {
            assert!(!s.is_empty() && !s.starts_with(['.', '-']), "{s}");
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "{s}"
            );
        }
        // Long names (ROS 2 allows 247 characters) are shortened, and still differ.
        let long_a = format!("/{}", "a".repeat(246));
        let long_b = format!("/{}b", "a".repeat(245));
        let (a, b) = (file_stem_for_topic(&long_a), file_stem_for_topic(&long_b));
        assert!(a.len() <= MAX_TOPIC_STEM_BYTES && b.len() <= MAX_TOPIC_STEM_BYTES);
        assert_ne!(a, b);
        let odd = format!("/\x1b<script>{}", "é".repeat(300));
        assert!(file_stem_for_topic(&odd).len() <= MAX_TOPIC_STEM_BYTES);
        // Stable: the same name gives the same file in every run and release.
        assert_eq!(file_stem_for_topic("/A/B"), file_stem_for_topic("/A/B"));
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
