//! Parser for rosbag2's `ros2msg` schema text: the root `.msg` text followed
//! by dependency sections, each introduced by a line of `=` and `MSG: pkg/Type`.

use super::{
    canonical_name, package_of, ArrayKind, BaseType, Constant, Field, FieldType, MessageDef,
    MessageSchema, Primitive,
};
use crate::error::SchemaError;
use std::collections::HashMap;

/// Parse a ros2msg schema whose root type is `type_name`.
pub fn parse_ros2msg(type_name: &str, text: &str) -> Result<MessageSchema, SchemaError> {
    let root = canonical_name(type_name)?;
    let sections = split_sections(text, &root)?;
    let mut pool = HashMap::new();
    for s in sections {
        let def = parse_msg_def(&s.name, s.first_line, &s.lines)?;
        pool.insert(s.name, def);
    }
    MessageSchema::from_defs(&root, pool)
}

/// Parse a service-event channel schema (`pkg/srv/Name_Event`). rosbag2
/// stores the `.srv` text (request, `---`, response, then optional
/// dependency sections), but the payload is the full event message:
/// `service_msgs/ServiceEventInfo info`, `Name_Request[<=1] request`,
/// `Name_Response[<=1] response`.
pub fn parse_service_event(type_name: &str, text: &str) -> Result<MessageSchema, SchemaError> {
    let event = canonical_name(type_name)?;
    let base = event
        .strip_suffix("_Event")
        .ok_or_else(|| SchemaError::BadTypeName(type_name.to_string()))?
        .to_string();
    let req_name = format!("{base}_Request");
    let resp_name = format!("{base}_Response");

    let mut sections = split_sections(text, &event)?;
    let mut pool = HashMap::new();
    // The first section is the .srv text itself.
    let first = sections.remove(0);
    let split = first.lines.iter().position(|l| l.trim() == "---");
    let (req_lines, resp_lines, resp_first) = match split {
        Some(i) => (
            first.lines[..i].to_vec(),
            first.lines[i + 1..].to_vec(),
            first.first_line + i + 1,
        ),
        // No separator: treat everything as the request, empty response.
        None => (first.lines.clone(), Vec::new(), first.first_line),
    };
    let req = parse_msg_def(&req_name, first.first_line, &req_lines)?;
    let resp = parse_msg_def(&resp_name, resp_first, &resp_lines)?;
    pool.insert(req_name.clone(), req);
    pool.insert(resp_name.clone(), resp);
    for s in sections {
        let def = parse_msg_def(&s.name, s.first_line, &s.lines)?;
        pool.insert(s.name, def);
    }
    let info = "service_msgs/msg/ServiceEventInfo".to_string();
    let event_def = MessageDef::new(
        event.clone(),
        vec![
            field("info", BaseType::Message(info), ArrayKind::Single),
            field(
                "request",
                BaseType::Message(req_name),
                ArrayKind::Bounded(1),
            ),
            field(
                "response",
                BaseType::Message(resp_name),
                ArrayKind::Bounded(1),
            ),
        ],
        vec![],
    );
    pool.insert(event.clone(), event_def);
    MessageSchema::from_defs(&event, pool)
}

fn field(name: &str, base: BaseType, array: ArrayKind) -> Field {
    Field {
        name: name.into(),
        ty: FieldType { base, array },
        default: None,
    }
}

struct Section<'a> {
    name: String,
    /// 1-based line number of `lines[0]` in the whole text.
    first_line: usize,
    lines: Vec<&'a str>,
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 3 && t.bytes().all(|b| b == b'=')
}

fn split_sections<'a>(text: &'a str, root: &str) -> Result<Vec<Section<'a>>, SchemaError> {
    let mut out = vec![Section {
        name: root.to_string(),
        first_line: 1,
        lines: Vec::new(),
    }];
    let mut expect_header = false;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if is_separator(line) {
            expect_header = true;
            continue;
        }
        if expect_header {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            let name = t
                .strip_prefix("MSG:")
                .ok_or_else(|| SchemaError::Parse {
                    section: root.to_string(),
                    line: lineno,
                    msg: format!("expected `MSG: pkg/Type` after separator, found `{t}`"),
                })?
                .trim();
            let name = canonical_name(name).map_err(|_| SchemaError::Parse {
                section: root.to_string(),
                line: lineno,
                msg: format!("bad type name `{name}` in MSG header"),
            })?;
            out.push(Section {
                name,
                first_line: lineno + 1,
                lines: Vec::new(),
            });
            expect_header = false;
            continue;
        }
        if let Some(s) = out.last_mut() {
            s.lines.push(line);
        }
    }
    Ok(out)
}

/// Remove a `#` comment, ignoring `#` inside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_backslash = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if c == q && !prev_backslash {
                    quote = None;
                }
            }
            None => {
                if c == '#' {
                    return &line[..i];
                }
                if c == '"' || c == '\'' {
                    quote = Some(c);
                }
            }
        }
        prev_backslash = c == '\\' && !prev_backslash;
    }
    line
}

/// Parse one `.msg` body (no sections) as the definition `name`.
pub(crate) fn parse_single(name: &str, text: &str) -> Result<MessageDef, SchemaError> {
    let lines: Vec<&str> = text.lines().collect();
    parse_msg_def(name, 1, &lines)
}

fn parse_msg_def(name: &str, first_line: usize, lines: &[&str]) -> Result<MessageDef, SchemaError> {
    let pkg = package_of(name).to_string();
    let mut fields = Vec::new();
    let mut constants = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let err = |msg: String| SchemaError::Parse {
            section: name.to_string(),
            line: first_line + i,
            msg,
        };
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let (ty_text, rest) = match line.find(char::is_whitespace) {
            Some(p) => (&line[..p], line[p..].trim_start()),
            None => return Err(err(format!("expected `TYPE NAME`, found `{line}`"))),
        };
        let ty = parse_type(ty_text, &pkg).map_err(err)?;
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let fname = &rest[..name_end];
        if fname.is_empty() || fname.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(err(format!("bad field name in `{line}`")));
        }
        let after = rest[name_end..].trim_start();
        if let Some(v) = after.strip_prefix('=') {
            // Constant. String constants keep everything after `=`, so use the
            // raw line (a `#` inside an unquoted string value is content).
            let v = v.trim();
            let value = match ty.base {
                BaseType::String { .. } | BaseType::WString { .. } => unquote(v).to_string(),
                _ => v.to_string(),
            };
            if ty.array != ArrayKind::Single {
                return Err(err("array constants are not allowed".into()));
            }
            constants.push(Constant {
                name: fname.to_string(),
                ty,
                value,
            });
        } else {
            let default = if after.is_empty() {
                None
            } else {
                Some(after.to_string())
            };
            fields.push(Field {
                name: fname.to_string(),
                ty,
                default,
            });
        }
    }
    Ok(MessageDef::new(name, fields, constants))
}

fn unquote(v: &str) -> &str {
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        &v[1..v.len() - 1]
    } else {
        v
    }
}

fn parse_usize(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("bad size `{s}`"))
}

/// Parse a ros2msg type token such as `float64[9]`, `string<=10`,
/// `int32[<=5]`, `geometry_msgs/Point[]`, `Header`.
pub(crate) fn parse_type(tok: &str, pkg: &str) -> Result<FieldType, String> {
    let (base_txt, array) = match tok.find('[') {
        Some(p) => {
            let inner = tok[p + 1..]
                .strip_suffix(']')
                .ok_or_else(|| format!("unterminated array in `{tok}`"))?;
            let arr = if inner.is_empty() {
                ArrayKind::Unbounded
            } else if let Some(n) = inner.strip_prefix("<=") {
                ArrayKind::Bounded(parse_usize(n)?)
            } else {
                ArrayKind::Fixed(parse_usize(inner)?)
            };
            (&tok[..p], arr)
        }
        None => (tok, ArrayKind::Single),
    };
    let base = parse_base(base_txt, pkg)?;
    Ok(FieldType { base, array })
}

fn parse_base(s: &str, pkg: &str) -> Result<BaseType, String> {
    if let Some(p) = Primitive::from_msg_name(s) {
        return Ok(BaseType::Primitive(p));
    }
    if s == "string" {
        return Ok(BaseType::String { bound: None });
    }
    if s == "wstring" {
        return Ok(BaseType::WString { bound: None });
    }
    if let Some(n) = s.strip_prefix("string<=") {
        return Ok(BaseType::String {
            bound: Some(parse_usize(n)?),
        });
    }
    if let Some(n) = s.strip_prefix("wstring<=") {
        return Ok(BaseType::WString {
            bound: Some(parse_usize(n)?),
        });
    }
    // ROS 1 style aliases still seen in hand-written schemas.
    match s {
        "time" => return Ok(BaseType::Message("builtin_interfaces/msg/Time".into())),
        "duration" => return Ok(BaseType::Message("builtin_interfaces/msg/Duration".into())),
        "Header" => return Ok(BaseType::Message("std_msgs/msg/Header".into())),
        _ => {}
    }
    if s.contains('/') {
        return canonical_name(s)
            .map(BaseType::Message)
            .map_err(|e| e.to_string());
    }
    if !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
    {
        // Unqualified names resolve in the enclosing package.
        return Ok(BaseType::Message(format!("{pkg}/msg/{s}")));
    }
    Err(format!("unknown type `{s}`"))
}
