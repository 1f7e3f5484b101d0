//! The one guard every YAML text passes before it is parsed (`metadata.yaml`, the QoS text of a
//! channel or a `metadata.yaml` topic, `play`'s QoS override file, `observe`'s contract, the
//! metadata a rosbag2 file carries about itself).
//!
//! The YAML parser (libyaml, under `serde_yaml_ng`) keeps a stack of possible keys per open
//! flow collection (`[`, `{`) and walks it for every token: 100 000 nested `[` in a 200 kB
//! text keep it busy for over a minute. So the nesting is measured first, by a scan that
//! follows libyaml's own rules for where a token starts (quoted and plain scalars, comments,
//! block scalars, indentation), and a text nested deeper than [`MAX_DEPTH`] or longer than
//! [`MAX_BYTES`] is refused before the parser sees it.
//!
//! The measure never comes out below the parser's: a `[` or `{` that the scan takes for part
//! of a scalar or comment still counts, and a `]` or `}` there only cancels one opened in the
//! same scalar; after anything the scan cannot place with certainty, closing brackets no
//! longer count at all.

use serde::de::DeserializeOwned;

/// Deepest nesting accepted: open flow collections (`[`, `{`) plus indented block collections.
/// rosbag2's `metadata.yaml` nests about 8 deep; the parser refuses more than 128 anyway.
pub const MAX_DEPTH: usize = 64;

/// Longest YAML text accepted, in bytes.
pub const MAX_BYTES: usize = 64 << 20;

/// Why a YAML text was refused or did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("nested more than {MAX_DEPTH} levels deep (at byte {offset}): refused before parsing")]
    TooDeep {
        /// Where the nesting passed the limit.
        offset: usize,
    },
    /// Longer than [`MAX_BYTES`].
    #[error("{bytes} bytes of YAML, more than the {MAX_BYTES} accepted")]
    TooLong {
        /// The text's length.
        bytes: usize,
    },
    /// The parser's own error.
    #[error("not YAML: {0}")]
    Parse(String),
}

/// `text` parsed as `T`, after [`check`].
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    check(text)?;
    serde_yaml_ng::from_str(text).map_err(|e| YamlError::Parse(e.to_string()))
}

/// Refuses a text longer than [`MAX_BYTES`] or nested deeper than [`MAX_DEPTH`]. Linear in
/// the text's length.
pub fn check(text: &str) -> Result<(), YamlError> {
    if text.len() > MAX_BYTES {
        return Err(YamlError::TooLong { bytes: text.len() });
    }
    match deeper_than(text.as_bytes(), MAX_DEPTH) {
        Some(offset) => Err(YamlError::TooDeep { offset }),
        None => Ok(()),
    }
}

/// The scan's state: where libyaml's scanner would be, and the depth measured so far.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    /// Column of `i` (libyaml counts every character as one column; bytes here, which only
    /// overstate columns of non-ASCII text, never of the indentation that decides anything).
    col: usize,
    /// libyaml's `flow_level`, as far as the scan follows it.
    flow: usize,
    /// Block indentation levels (libyaml's `indents` stack and `indent`, -1 at the top).
    indents: Vec<isize>,
    indent: isize,
    /// libyaml's `simple_key_allowed`, and the column of the simple key saved on this line.
    key_allowed: bool,
    key_col: Option<usize>,
    /// Open flow collections counted: never below `flow`, and above it by what scalars and
    /// comments hold and by what the scan could not place.
    open: usize,
    /// Something was met that the scan does not place with certainty: closers stop counting.
    doubt: bool,
    limit: usize,
}

/// The offset where the nesting of `b` first exceeds `limit`, if it does.
fn deeper_than(b: &[u8], limit: usize) -> Option<usize> {
    let mut s = Scan {
        b,
        i: 0,
        col: 0,
        flow: 0,
        indents: Vec::new(),
        indent: -1,
        key_allowed: true,
        key_col: None,
        open: 0,
        doubt: false,
        limit,
    };
    s.run().err()
}

fn blankz(c: Option<u8>) -> bool {
    matches!(c, None | Some(b' ' | b'\t' | b'\r' | b'\n'))
}

fn flow_indicator(c: Option<u8>) -> bool {
    matches!(c, Some(b',' | b'[' | b']' | b'{' | b'}'))
}

impl Scan<'_> {
    fn at(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    /// Moves one byte on, keeping the column.
    fn bump(&mut self) {
        if self.b[self.i] == b'\n' {
            self.col = 0;
        } else {
            self.col += 1;
        }
        self.i += 1;
    }

    /// The depth counted now (flow collections plus block levels), `Err(offset)` past the limit.
    fn checked(&self) -> Result<(), usize> {
        if self.open + self.indents.len() > self.limit {
            Err(self.i)
        } else {
            Ok(())
        }
    }

    /// An opening bracket inside a scalar, comment or tag: counted all the same.
    fn literal_open(&mut self, local: &mut usize) -> Result<(), usize> {
        *local += 1;
        self.open += 1;
        self.checked()
    }

    /// A closing bracket inside a scalar, comment or tag: cancels only one opened there.
    fn literal_close(&mut self, local: &mut usize) {
        if *local > 0 && !self.doubt {
            *local -= 1;
            self.open -= 1;
        }
    }

    /// Scans a literal byte (of a scalar, comment or tag) for brackets.
    fn literal(&mut self, local: &mut usize) -> Result<(), usize> {
        match self.b[self.i] {
            b'[' | b'{' => self.literal_open(local)?,
            b']' | b'}' => self.literal_close(local),
            _ => {}
        }
        self.bump();
        Ok(())
    }

    fn unroll(&mut self) {
        if self.flow > 0 {
            return;
        }
        while self.indent > self.col as isize {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn roll(&mut self, col: usize) -> Result<(), usize> {
        if self.flow == 0 && self.indent < col as isize {
            self.indents.push(self.indent);
            self.indent = col as isize;
            self.checked()?;
        }
        Ok(())
    }

    /// A token that can be a simple key starts here.
    fn save_key(&mut self) {
        if self.key_allowed {
            self.key_col = Some(self.col);
        }
    }

    fn run(&mut self) -> Result<(), usize> {
        loop {
            self.skip_to_token()?;
            let Some(c) = self.at(0) else {
                return Ok(());
            };
            let next = self.at(1);
            self.unroll();
            if self.col == 0
                && (self.b[self.i..].starts_with(b"---") || self.b[self.i..].starts_with(b"..."))
                && blankz(self.at(3))
            {
                // A document marker: libyaml closes the block levels (an open flow
                // collection makes it an error; not followed further).
                if self.flow > 0 {
                    self.doubt = true;
                }
                self.indents.clear();
                self.indent = -1;
                self.key_col = None;
                self.key_allowed = false;
                for _ in 0..3 {
                    self.bump();
                }
                continue;
            }
            if self.col == 0 && c == b'%' {
                // A directive: its line.
                while self.at(0).is_some_and(|c| c != b'\n') {
                    self.bump();
                }
                continue;
            }
            match c {
                b'[' | b'{' => {
                    self.save_key();
                    self.flow += 1;
                    self.open += 1;
                    self.checked()?;
                    self.key_allowed = true;
                    self.bump();
                }
                b']' | b'}' => {
                    if self.flow > 0 {
                        self.flow -= 1;
                        if !self.doubt {
                            self.open = self.open.saturating_sub(1);
                        }
                    } else {
                        // A closer outside any flow collection: the parser stops there.
                        self.doubt = true;
                    }
                    self.key_allowed = false;
                    self.bump();
                }
                b',' => {
                    self.key_allowed = true;
                    self.bump();
                }
                b'-' if blankz(next) => {
                    if self.flow == 0 {
                        self.roll(self.col)?;
                    } else {
                        // A block entry inside a flow collection: the parser stops there.
                        self.doubt = true;
                    }
                    self.key_allowed = true;
                    self.key_col = None;
                    self.bump();
                }
                b'?' if self.flow > 0 || blankz(next) => {
                    if self.flow == 0 {
                        self.roll(self.col)?;
                    }
                    self.key_allowed = self.flow == 0;
                    self.key_col = None;
                    self.bump();
                }
                b':' if self.flow > 0 || blankz(next) => {
                    match self.key_col.take() {
                        Some(k) => self.roll(k)?,
                        None if self.flow == 0 => self.doubt = true,
                        None => {}
                    }
                    self.key_allowed = self.flow == 0;
                    self.bump();
                }
                b'*' | b'&' => {
                    // Alias or anchor: its name (letters, digits, `_`, `-`).
                    self.save_key();
                    self.bump();
                    while self
                        .at(0)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
                    {
                        self.bump();
                    }
                    self.key_allowed = false;
                }
                b'!' => {
                    // A tag, up to a blank; libyaml takes `[`, `]` and `,` into it.
                    self.save_key();
                    let mut local = 0;
                    let mut brackets = false;
                    self.bump();
                    while !blankz(self.at(0)) {
                        brackets |= matches!(self.at(0), Some(b'[' | b']' | b'{' | b'}'));
                        self.literal(&mut local)?;
                    }
                    if brackets {
                        self.doubt = true;
                    }
                    self.key_allowed = false;
                }
                b'|' | b'>' if self.flow == 0 => {
                    self.block_scalar()?;
                }
                b'\'' | b'"' => {
                    self.save_key();
                    self.quoted(c)?;
                    self.key_allowed = false;
                }
                b'|' | b'>' | b'@' | b'`' | b'%' => {
                    // The scanner's error "cannot start any token": not followed further.
                    self.doubt = true;
                    self.bump();
                }
                _ => {
                    self.save_key();
                    self.plain()?;
                }
            }
        }
    }

    /// Blanks, line breaks and comments up to the next token (libyaml's
    /// `scan_to_next_token`). A comment's brackets count as a scalar's do.
    fn skip_to_token(&mut self) -> Result<(), usize> {
        loop {
            match self.at(0) {
                Some(b' ' | b'\t' | b'\r') => self.bump(),
                Some(b'\n') => {
                    self.bump();
                    self.line_break();
                }
                Some(b'#') => {
                    let mut local = 0;
                    while self.at(0).is_some_and(|c| c != b'\n') {
                        self.literal(&mut local)?;
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// After a line break outside scalars: simple keys start again.
    fn line_break(&mut self) {
        if self.flow == 0 {
            self.key_allowed = true;
        }
        self.key_col = None;
    }

    /// A single- or double-quoted scalar, from its opening quote to its closing one.
    fn quoted(&mut self, q: u8) -> Result<(), usize> {
        let mut local = 0;
        self.bump();
        while let Some(c) = self.at(0) {
            if q == b'\'' && c == b'\'' {
                if self.at(1) == Some(b'\'') {
                    self.bump();
                    self.bump();
                    continue;
                }
                self.bump();
                return Ok(());
            }
            if q == b'"' && c == b'"' {
                self.bump();
                return Ok(());
            }
            if q == b'"' && c == b'\\' {
                self.bump();
                if self.at(0).is_some() {
                    self.bump();
                }
                continue;
            }
            self.literal(&mut local)?;
        }
        Ok(())
    }

    /// A plain scalar, as libyaml's `scan_plain_scalar` delimits it: up to `: ` or ` #`, a
    /// flow indicator inside a flow collection, or a line indented no more than the block
    /// it belongs to.
    fn plain(&mut self) -> Result<(), usize> {
        let mut local = 0;
        let mut broke = false;
        loop {
            if self.col == 0
                && (self.b[self.i..].starts_with(b"---") || self.b[self.i..].starts_with(b"..."))
                && blankz(self.at(3))
            {
                break;
            }
            if self.at(0) == Some(b'#') {
                break;
            }
            while !blankz(self.at(0)) {
                let (c, next) = (self.at(0), self.at(1));
                if self.flow > 0 && c == Some(b':') && (flow_indicator(next) || next == Some(b'?'))
                {
                    break;
                }
                if (c == Some(b':') && blankz(next)) || (self.flow > 0 && flow_indicator(c)) {
                    break;
                }
                broke = false;
                self.literal(&mut local)?;
            }
            if !matches!(self.at(0), Some(b' ' | b'\t' | b'\r' | b'\n')) {
                break;
            }
            while let Some(c @ (b' ' | b'\t' | b'\r' | b'\n')) = self.at(0) {
                broke |= c == b'\n';
                self.bump();
            }
            if self.at(0).is_none() || (self.flow == 0 && (self.col as isize) < self.indent + 1) {
                break;
            }
        }
        // As libyaml: a scalar that ended at a line break allows a simple key after it.
        if broke {
            self.line_break();
        } else {
            self.key_allowed = false;
        }
        Ok(())
    }

    /// A literal (`|`) or folded (`>`) block scalar: its header line, then every line indented
    /// more than the block it belongs to (the first such line sets the indentation).
    fn block_scalar(&mut self) -> Result<(), usize> {
        self.key_col = None;
        self.bump();
        let mut content: Option<usize> = None;
        while let Some(c) = self.at(0) {
            match c {
                b'1'..=b'9' => {
                    let d = (c - b'0') as isize;
                    content = Some((if self.indent >= 0 { self.indent + d } else { d }) as usize);
                }
                b'+' | b'-' | b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            self.bump();
        }
        let mut local = 0;
        // The rest of the header line: a comment, or anything else (an error for libyaml).
        if self.at(0).is_some_and(|c| c != b'\n') {
            if self.at(0) != Some(b'#') {
                self.doubt = true;
            }
            while self.at(0).is_some_and(|c| c != b'\n') {
                self.literal(&mut local)?;
            }
        }
        let min = (self.indent + 1).max(1) as usize;
        // At each line break: the next line belongs to the scalar when it is empty or indented
        // at least as much as the scalar's content.
        while self.at(0).is_some() {
            let line = self.i + 1;
            let mut k = line;
            while self.b.get(k) == Some(&b' ') {
                k += 1;
            }
            let spaces = k - line;
            let empty = matches!(self.b.get(k), None | Some(b'\n' | b'\r'));
            if !empty && spaces < *content.get_or_insert(spaces.max(min)) {
                break;
            }
            self.bump();
            while self.at(0).is_some_and(|c| c != b'\n') {
                self.literal(&mut local)?;
            }
        }
        self.key_allowed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(t: &str) -> bool {
        check(t).is_ok()
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        for open in ["[", "{", "{a: ["] {
            let t = open.repeat(100_000);
            let start = std::time::Instant::now();
            assert!(
                matches!(check(&t), Err(YamlError::TooDeep { .. })),
                "{open}"
            );
            assert!(start.elapsed().as_secs() < 2);
        }
        assert!(depth_ok(&format!("{}{}", "[".repeat(60), "]".repeat(60))));
        assert!(!depth_ok(&format!("{}{}", "[".repeat(70), "]".repeat(70))));
        // Many collections one after another are not deep.
        assert!(depth_ok(&"- [a, {b: [c]}]\n".repeat(10_000)));
    }

    #[test]
    fn closers_inside_scalars_and_comments_do_not_hide_openers() {
        // Each line opens one level for the parser; the closers are text.
        for hide in ["\"]]]]\"", "'a]]]''s'", "\"\\\"]]]]\""] {
            let t = format!("{}1", format!("[{hide}, ").repeat(100));
            assert!(!depth_ok(&t), "{hide}");
        }
        let t = "[ # ]]]]]]]\n".repeat(100);
        assert!(!depth_ok(&t));
        let t = "key: |\n  ]]]]]]\nk: [\n".repeat(100);
        assert!(!depth_ok(&t));
        // A plain scalar in block context holds brackets as text.
        let t = format!("a: b]]]]\n{}", "[".repeat(70));
        assert!(!depth_ok(&t));
    }

    #[test]
    fn brackets_in_scalars_and_comments_are_text() {
        let mut t = String::new();
        for k in 0..500 {
            t.push_str(&format!(
                "p{k}: \"[a-z]{{2}} [\"\nq{k}: '{{x'  # [see [1]\nr{k}: a[b\n"
            ));
        }
        // The quoted `[` left open counts (once per scalar), so many of them add up ...
        assert!(!depth_ok(&t));
        // ... while balanced ones do not.
        let mut t = String::new();
        for k in 0..500 {
            t.push_str(&format!(
                "p{k}: \"^/cam[0-9]+$\"\nq{k}: '{{x}}'  # [see [1]]\nr{k}: a[b]\ns{k}: |\n  [x]\n  ]\n"
            ));
        }
        assert!(depth_ok(&t), "{:?}", check(&t));
        let v: serde_yaml_ng::Value = from_str(&t).unwrap();
        assert_eq!(v["p3"].as_str(), Some("^/cam[0-9]+$"));
    }

    #[test]
    fn real_metadata_and_qos_texts_pass() {
        let metadata = r#"rosbag2_bagfile_information:
  version: 9
  storage_identifier: mcap
  duration:
    nanoseconds: 990468399
  relative_file_paths:
    - a_0.mcap
  topics_with_message_count:
    - topic_metadata:
        name: /events
        type: event_camera_msgs/msg/EventPacket
        serialization_format: cdr
        offered_qos_profiles:
          - history: keep_last
            depth: 1000
            deadline:
              sec: 9223372036
              nsec: 854775807
        type_description_hash: RIHS01_7a5c
      message_count: 100
    - topic_metadata:
        name: /rosout
        type: rcl_interfaces/msg/Log
        serialization_format: cdr
        offered_qos_profiles: "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 2147483647\n    nsec: 4294967295\n"
      message_count: 758
  compression_format: ""
  compression_mode: ""
  files:
    - path: a_0.mcap
      starting_time:
        nanoseconds_since_epoch: 1744227144744197147
      message_count: 100
  custom_data: ~
  ros_distro: rolling
"#;
        check(metadata).unwrap();
        let many = format!(
            "{}\n",
            (0..5000)
                .map(|k| format!("  - {{name: /t{k}, qos: [{{depth: {k}}}], tags: []}}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        check(&format!("list:\n{many}")).unwrap();
    }

    #[test]
    fn deep_block_nesting_is_refused() {
        let t = "- ".repeat(100_000) + "x";
        assert!(matches!(check(&t), Err(YamlError::TooDeep { .. })));
        let mut t = String::new();
        for k in 0..100 {
            t.push_str(&" ".repeat(k));
            t.push_str("a:\n");
        }
        assert!(!depth_ok(&t));
        assert!(depth_ok(&t.lines().take(40).collect::<Vec<_>>().join("\n")));
    }

    /// xorshift64: test inputs without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A random flow node nested at most `left` deep, and how deep it is; scalars full of
    /// brackets, quotes, commas and hashes inside quotes, comments holding brackets.
    /// Without `openers`, literals hold closing brackets only: the measure is then exact.
    fn flow_node(r: &mut Rng, left: usize, openers: bool) -> (String, usize) {
        let gap = |r: &mut Rng| match r.next(6) {
            0 => "\n   ".to_string(),
            1 if openers => " # ]]}} [ comment\n   ".to_string(),
            1 => " # ]]}} comment\n   ".to_string(),
            2 => "".to_string(),
            _ => " ".to_string(),
        };
        match if left == 0 { r.next(3) } else { r.next(5) } {
            0 => (format!("w{}", r.next(1000)), 0),
            1 => {
                let mut q = String::from("\"");
                for _ in 0..r.next(8) {
                    let k = r.next(11) as usize;
                    if openers || !matches!(k, 2 | 3) {
                        q.push_str(
                            ["]", "}", "[", "{", ",", "#", "'", "\\\"", "\\\\", " ", ": "][k],
                        );
                    }
                }
                q.push('"');
                (q, 0)
            }
            2 => {
                let mut q = String::from("'");
                for _ in 0..r.next(8) {
                    let k = r.next(10) as usize;
                    if openers || !matches!(k, 2 | 3) {
                        q.push_str(["]", "}", "[", "{", ",", "#", "''", "\"", " ", ": "][k]);
                    }
                }
                q.push('\'');
                (q, 0)
            }
            k => {
                let n = r.next(4);
                let mut depth = 0;
                let mut items = Vec::new();
                for i in 0..n {
                    let (v, d) = flow_node(r, left - 1, openers);
                    depth = depth.max(d);
                    items.push(if k == 3 { v } else { format!("k{i}: {v}") });
                }
                let (o, c) = if k == 3 { ("[", "]") } else { ("{", "}") };
                let g1 = gap(r);
                let g2 = gap(r);
                (
                    format!("{o}{g1}{}{g2}{c}", items.join(&format!(",{}", gap(r)))),
                    depth + 1,
                )
            }
        }
    }

    #[test]
    fn the_measure_never_falls_below_the_parsers_nesting() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let mut parsed = 0;
        for k in 0..6000 {
            let openers = k % 2 == 0;
            let (node, depth) = flow_node(&mut r, 12, openers);
            let text = format!("top:\n  key: {node}\n  next: 1\n");
            if serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text).is_err() {
                continue;
            }
            parsed += 1;
            // Flow levels plus the two block levels (`top`, `key`).
            let levels = depth + 2;
            assert!(
                deeper_than(text.as_bytes(), levels - 1).is_some(),
                "measured below {levels}: {text}"
            );
            // Opening brackets in quotes and comments count; without them, nothing else does.
            assert!(
                openers || deeper_than(text.as_bytes(), levels).is_none(),
                "measured above {levels}: {text}"
            );
        }
        assert!(parsed > 3000, "{parsed} texts parsed");
    }

    #[test]
    fn what_serde_writes_passes() {
        use serde_yaml_ng::{Mapping, Value};
        let mut r = Rng(7);
        fn value(r: &mut Rng, left: usize) -> Value {
            match if left == 0 { r.next(3) } else { r.next(5) } {
                0 => Value::from(r.next(100)),
                1 | 2 => {
                    let mut s = String::new();
                    for _ in 0..r.next(10) {
                        s.push_str(
                            [
                                "]", "[", "{", "}", "#", " #", "'", "\"", ": ", "- ", "\n", "|",
                                "a",
                            ][r.next(13) as usize],
                        );
                    }
                    Value::from(s)
                }
                3 => Value::Sequence((0..r.next(4)).map(|_| value(r, left - 1)).collect()),
                _ => {
                    let mut m = Mapping::new();
                    for i in 0..r.next(4) {
                        m.insert(Value::from(format!("k{i}")), value(r, left - 1));
                    }
                    Value::Mapping(m)
                }
            }
        }
        for _ in 0..2000 {
            let v = value(&mut r, 10);
            let text = serde_yaml_ng::to_string(&v).unwrap();
            let back: Value = from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(back, v);
        }
    }

    #[test]
    fn too_long_is_refused() {
        let t = "a".repeat(MAX_BYTES + 1);
        assert!(matches!(check(&t), Err(YamlError::TooLong { .. })));
    }
}
