use std::io::Write;
use std::path::PathBuf;

use bagscope::echo::{echo, EchoOptions, EchoValue, EchoedMessage, Value};
use bagscope::timefmt::human_ns;

use crate::render;

/// Arrays longer than this are cut in text output, as `ros2 topic echo` does by default.
const TRUNCATE_LENGTH: usize = 128;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// A rosbag2 folder, a .mcap or a .db3 file.
    pub(crate) bag: PathBuf,
    #[command(flatten)]
    pub(crate) options: EchoOptions,
    /// One JSON object per line for each message: `topic`, `index`, `log_time_ns`,
    /// `publish_time_ns`, `message` (arrays whole). Warnings go to standard error.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    let o = a.options;
    let json = a.json;
    let mut out = std::io::BufWriter::new(std::io::stdout());
    let r = echo(&a.bag, &o, |m: EchoedMessage| {
        let bytes = if json {
            let mut b = serde_json::to_vec(&m).map_err(std::io::Error::other)?;
            b.push(b'\n');
            b
        } else {
            render::terminal_text(&text(&m)).into_bytes()
        };
        out.write_all(&bytes)
    })?;
    out.flush()?;
    drop(out);
    let mut tail = format!(
        "# {} message(s) of {} ({})\n",
        r.printed, r.topic, r.type_name
    );
    tail.push_str(&render::warnings(&r.warnings));
    eprint!("{}", render::terminal_text(&tail));
    Ok(render::exit_code(&r))
}

/// One message as `ros2 topic echo` prints it (YAML), under a comment line with its times.
fn text(m: &EchoedMessage) -> String {
    let mut s = format!(
        "# {} [{}] log {} ({} ns)",
        m.topic,
        m.index,
        human_ns(m.log_time_ns),
        m.log_time_ns
    );
    if let Some(p) = m.publish_time_ns {
        s.push_str(&format!(", publish {p} ns"));
    }
    s.push('\n');
    match &m.message {
        EchoValue::Message(Value::Struct(v)) => {
            for (k, x) in v.iter() {
                field(&mut s, 0, k, Some(x));
            }
        }
        EchoValue::Message(v) => field(&mut s, 0, "data", Some(v)),
        EchoValue::Fields(fs) => {
            for (k, x) in fs {
                field(&mut s, 0, k, x.as_ref());
            }
        }
    }
    s.push_str("---\n");
    s
}

fn field(s: &mut String, indent: usize, name: &str, v: Option<&Value>) {
    let pad = " ".repeat(indent);
    match v {
        None => s.push_str(&format!("{pad}{name}: null\n")),
        Some(Value::Struct(st)) => {
            s.push_str(&format!("{pad}{name}:\n"));
            for (k, x) in st.iter() {
                field(s, indent + 2, k, Some(x));
            }
        }
        Some(Value::Array(a)) if a.is_empty() => s.push_str(&format!("{pad}{name}: []\n")),
        Some(Value::Bytes(b)) if b.is_empty() => s.push_str(&format!("{pad}{name}: []\n")),
        Some(Value::Array(a)) => {
            s.push_str(&format!("{pad}{name}:\n"));
            for x in a.iter().take(TRUNCATE_LENGTH) {
                item(s, indent, x);
            }
            if a.len() > TRUNCATE_LENGTH {
                s.push_str(&format!("{pad}- '...'\n"));
            }
        }
        Some(Value::Bytes(b)) => {
            s.push_str(&format!("{pad}{name}:\n"));
            for x in b.iter().take(TRUNCATE_LENGTH) {
                s.push_str(&format!("{pad}- {x}\n"));
            }
            if b.len() > TRUNCATE_LENGTH {
                s.push_str(&format!("{pad}- '...'\n"));
            }
        }
        Some(x) => s.push_str(&format!("{pad}{name}: {}\n", scalar(x))),
    }
}

/// An element of a YAML list: scalars on the dash's line, structs indented under it.
fn item(s: &mut String, indent: usize, v: &Value) {
    let pad = " ".repeat(indent);
    match v {
        Value::Struct(st) => {
            let mut first = true;
            for (k, x) in st.iter() {
                let mut sub = String::new();
                field(&mut sub, indent + 2, k, Some(x));
                if first {
                    // "- name: value" on the dash's line.
                    s.push_str(&format!("{pad}- {}", &sub[indent + 2..]));
                    first = false;
                } else {
                    s.push_str(&sub);
                }
            }
            if first {
                s.push_str(&format!("{pad}- {{}}\n"));
            }
        }
        Value::Array(_) | Value::Bytes(_) => {
            let mut sub = String::new();
            field(&mut sub, indent + 2, "-", Some(v));
            s.push_str(&sub);
        }
        x => s.push_str(&format!("{pad}- {}\n", scalar(x))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::I8(x) => x.to_string(),
        Value::U8(x) => x.to_string(),
        Value::I16(x) => x.to_string(),
        Value::U16(x) => x.to_string(),
        Value::I32(x) => x.to_string(),
        Value::U32(x) => x.to_string(),
        Value::I64(x) => x.to_string(),
        Value::U64(x) => x.to_string(),
        Value::F32(x) => float(f64::from(*x)),
        Value::F64(x) => float(*x),
        Value::String(t) => string(t),
        _ => String::new(),
    }
}

/// Floats as Python prints them (`1.0`, `0.1`, `nan`, `inf`), which `ros2 topic echo` shows.
fn float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}

/// A YAML string: plain when it reads back as the same string, else single-quoted.
fn string(t: &str) -> String {
    let plain = !t.is_empty()
        && !t.starts_with([
            ' ', '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"',
            '%', '@', '`',
        ])
        && !t.ends_with(' ')
        && !t.contains(": ")
        && !t.contains(" #")
        && !t.contains(['\n', '\r', '\t'])
        && t.parse::<f64>().is_err()
        && !matches!(
            t.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~" | "nan" | "inf" | "-inf"
        );
    if plain {
        t.to_string()
    } else {
        format!("'{}'", t.replace('\'', "''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_quote_only_when_yaml_would_misread_them() {
        assert_eq!(string("base_link"), "base_link");
        assert_eq!(string(""), "''");
        assert_eq!(string("1.5"), "'1.5'");
        assert_eq!(string("true"), "'true'");
        assert_eq!(string("a: b"), "'a: b'");
        assert_eq!(string("it's"), "it's");
        assert_eq!(string("'x"), "'''x'");
    }

    #[test]
    fn floats_read_as_python_prints_them() {
        assert_eq!(float(1.0), "1.0");
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(f64::NAN), "nan");
        assert_eq!(float(f64::NEG_INFINITY), "-inf");
    }
}
