//! Built-in definitions of the ROS 2 interface packages most bags use, for channels whose
//! schema is empty (rosbag2's sqlite3 storage up to Humble stores none; Iron and later store
//! an empty text when the recorder could not find a type's package) and to fill in
//! dependencies missing from a schema text.
//!
//! Packages: `builtin_interfaces`, `std_msgs`, `geometry_msgs`, `sensor_msgs`, `nav_msgs`,
//! `shape_msgs`, `stereo_msgs`, `trajectory_msgs`, `visualization_msgs`, `diagnostic_msgs`,
//! `actionlib_msgs`, `std_srvs`, `rcl_interfaces`, `rosgraph_msgs`, `lifecycle_msgs`,
//! `action_msgs`, `unique_identifier_msgs`, `statistics_msgs`, `service_msgs`,
//! `type_description_interfaces`, `composition_interfaces`, `control_msgs`, `tf2_msgs`,
//! `example_interfaces`, `rosbag2_interfaces`, and Gazebo classic's `gazebo_msgs` (released up
//! to Humble; its `/performance_metrics` is in many simulation bags). The field lists live in
//! `builtin_defs.txt` (one `@ pkg/kind/Name [distros]` section per definition, `.msg` / `.srv`
//! / `.action` text without comments), written from each package's interface files on its
//! humble, iron, jazzy and rolling branches (kilted is taken as rolling's state; control_msgs has no iron
//! branch, so its iron variant is its 2023 state, which jazzy's first releases also used).
//!
//! Services (`pkg/srv/Name`) give `Name_Request`, `Name_Response` and the `Name_Event` message
//! rosbag2 records from Iron on (`service_msgs/ServiceEventInfo info`, `Name_Request[<=1]
//! request`, `Name_Response[<=1] response`). Actions (`pkg/action/Name`) give `Name_Goal`,
//! `Name_Result`, `Name_Feedback`, `Name_FeedbackMessage` (the feedback topic's type), and the
//! `Name_SendGoal` and `Name_GetResult` services with their events.
//!
//! # Distributions
//!
//! Where a type's wire layout differs between distributions, each layout is kept with the
//! distributions that use it (constants and default values do not affect the layout and are
//! not told apart). The layouts that differ: `sensor_msgs/Range` (`variance` since Iron),
//! `rosbag2_interfaces/WriteSplitEvent` and `ReadSplitEvent` (`node_name` since Jazzy), and in
//! `control_msgs` `JointTrajectoryControllerState` (Humble also carries `desired`/`actual`;
//! `speed_scaling_factor` since Jazzy), `PidState` and `SteeringControllerStatus` (changed
//! after Jazzy) and `FollowJointTrajectory`'s feedback (`index` fields after Jazzy). Types
//! that newer distributions added exist only there (their earliest layout is the default).
//!
//! A schema-less bag does not say its distribution. Such bags are overwhelmingly Humble-era
//! (sqlite3 storage before Iron), so [`resolve`] (and the fill-in of dependencies missing from
//! a recorded schema) give the Humble layout, or the earliest one for types added later.
//! [`resolve_for_payload`] (and [`super::schema_for_channel_payload`]) pick by the data
//! instead: each distribution's schema is tried in order humble, iron, jazzy, kilted, rolling
//! and the first that decodes the payload completely (nothing left but the CDR padding to 4
//! bytes) is taken; when none does, the Humble one. Every layout difference listed above
//! changes the payload's length by more than that padding, so a complete decode tells them
//! apart, except `SteeringControllerStatus`, whose layouts differ only in a field's name (the
//! older name is used).

use super::{canonical_name, ros2msg::parse_single, BaseType, MessageDef, MessageSchema};
use crate::decode::{decode_with_end, only_padding_after};
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// Distributions whose layouts are told apart, oldest first.
pub const DISTROS: [&str; 5] = ["humble", "iron", "jazzy", "kilted", "rolling"];

const ALL_DISTROS: u8 = (1 << DISTROS.len()) - 1;

const DEFS_TEXT: &str = include_str!("builtin_defs.txt");

/// One layout of a type and the distributions (bit `i` = `DISTROS[i]`) that use it.
struct Variant {
    distros: u8,
    def: MessageDef,
}

struct Table {
    /// Canonical name to its layouts, the default (earliest) first.
    types: BTreeMap<String, Vec<Variant>>,
}

impl Table {
    fn variant_for(&self, name: &str, distro: usize) -> Option<&MessageDef> {
        let vs = self.types.get(name)?;
        vs.iter()
            .find(|v| v.distros & (1 << distro) != 0)
            .or_else(|| vs.first())
            .map(|v| &v.def)
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    // The texts are ours and a test parses every one strictly; a bad one is skipped
    // rather than panicking at runtime.
    TABLE.get_or_init(|| build(DEFS_TEXT).0)
}

/// Parse the definitions file: the table and one message per section that did not parse.
fn build(text: &str) -> (Table, Vec<String>) {
    let mut types: BTreeMap<String, Vec<Variant>> = BTreeMap::new();
    let mut errors = Vec::new();
    for (header, body) in sections(text) {
        let mut words = header.split_whitespace();
        let Some(name) = words.next() else {
            errors.push("section without a name".to_string());
            continue;
        };
        let mut distros = 0u8;
        for w in words {
            match DISTROS.iter().position(|d| *d == w) {
                Some(i) => distros |= 1 << i,
                None => errors.push(format!("{name}: unknown distribution `{w}`")),
            }
        }
        if distros == 0 {
            distros = ALL_DISTROS;
        }
        match expand(name, &body) {
            Ok(defs) => {
                for d in defs {
                    types
                        .entry(d.name.clone())
                        .or_default()
                        .push(Variant { distros, def: d });
                }
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    (Table { types }, errors)
}

/// `(header after "@ ", body lines)` for each section of the definitions file.
fn sections(text: &str) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("@ ") {
            out.push((h.trim(), Vec::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push(line);
        }
    }
    out
}

/// The message definitions one `.msg` / `.srv` / `.action` section stands for.
fn expand(name: &str, body: &[&str]) -> Result<Vec<MessageDef>, String> {
    let parts: Vec<String> = body
        .split(|l| l.trim() == "---")
        .map(|p| p.iter().map(|l| format!("{l}\n")).collect())
        .collect();
    let [pkg, kind, base] = name.split('/').collect::<Vec<_>>()[..] else {
        return Err("expected `pkg/kind/Name`".into());
    };
    let parse = |n: String, t: &str| parse_single(&n, t).map_err(|e| e.to_string());
    match (kind, parts.as_slice()) {
        ("msg", [m]) => Ok(vec![parse(name.to_string(), m)?]),
        ("srv", [req, resp]) => service(&format!("{pkg}/srv/{base}"), req, resp),
        ("action", [goal, result, feedback]) => {
            let a = format!("{pkg}/action/{base}");
            let mut defs = vec![
                parse(format!("{a}_Goal"), goal)?,
                parse(format!("{a}_Result"), result)?,
                parse(format!("{a}_Feedback"), feedback)?,
                parse(
                    format!("{a}_FeedbackMessage"),
                    &format!("unique_identifier_msgs/UUID goal_id\n{a}_Feedback feedback\n"),
                )?,
            ];
            defs.extend(service(
                &format!("{a}_SendGoal"),
                &format!("unique_identifier_msgs/UUID goal_id\n{a}_Goal goal\n"),
                "bool accepted\nbuiltin_interfaces/Time stamp\n",
            )?);
            defs.extend(service(
                &format!("{a}_GetResult"),
                "unique_identifier_msgs/UUID goal_id\n",
                &format!("int8 status\n{a}_Result result\n"),
            )?);
            Ok(defs)
        }
        _ => Err(format!(
            "{} part(s) separated by `---` do not fit a `{kind}` definition",
            parts.len()
        )),
    }
}

/// `S_Request`, `S_Response` and `S_Event` for the service `S` (`pkg/srv/Name`, or an
/// action's `pkg/action/Name_SendGoal`).
fn service(s: &str, req: &str, resp: &str) -> Result<Vec<MessageDef>, String> {
    let parse = |n: String, t: &str| parse_single(&n, t).map_err(|e| e.to_string());
    Ok(vec![
        parse(format!("{s}_Request"), req)?,
        parse(format!("{s}_Response"), resp)?,
        parse(
            format!("{s}_Event"),
            &format!(
                "service_msgs/ServiceEventInfo info\n{s}_Request[<=1] request\n{s}_Response[<=1] response\n"
            ),
        )?,
    ])
}

/// A single built-in definition by canonical name: the Humble layout, or the earliest one
/// for types added later.
pub(crate) fn def(canonical: &str) -> Option<&'static MessageDef> {
    table().types.get(canonical)?.first().map(|v| &v.def)
}

/// Resolve a built-in type (`pkg/msg/Type` or `pkg/Type`) to a full schema, with the
/// Humble layout of every type in it (the earliest one for types added later).
pub fn resolve(type_name: &str) -> Option<MessageSchema> {
    let n = canonical_name(type_name).ok()?;
    def(&n)?;
    MessageSchema::from_defs(&n, HashMap::new()).ok()
}

/// The distinct schemas of a built-in type across the [`DISTROS`] that have it, oldest first,
/// each with the distributions that use it. One entry for most types.
pub fn candidates(type_name: &str) -> Vec<(Vec<&'static str>, MessageSchema)> {
    let Ok(root) = canonical_name(type_name) else {
        return Vec::new();
    };
    let t = table();
    let mut out: Vec<(Vec<&'static str>, MessageSchema)> = Vec::new();
    let Some(root_variants) = t.types.get(&root) else {
        return Vec::new();
    };
    for (i, distro) in DISTROS.iter().enumerate() {
        // Distributions that do not have the type (added later) are not named for it.
        if !root_variants.iter().any(|v| v.distros & (1 << i) != 0) {
            continue;
        }
        let Some(schema) = schema_for_distro(t, &root, i) else {
            continue;
        };
        match out.iter_mut().find(|(_, s)| *s == schema) {
            Some((ds, _)) => ds.push(distro),
            None => out.push((vec![distro], schema)),
        }
    }
    out
}

/// The schema of `root` with every type's layout taken from distribution `distro`.
fn schema_for_distro(t: &Table, root: &str, distro: usize) -> Option<MessageSchema> {
    let mut pool: HashMap<String, MessageDef> = HashMap::new();
    let mut stack = vec![root.to_string()];
    while let Some(n) = stack.pop() {
        if pool.contains_key(&n) {
            continue;
        }
        let d = t.variant_for(&n, distro)?;
        for f in &d.fields {
            if let BaseType::Message(m) = &f.ty.base {
                stack.push(m.clone());
            }
        }
        pool.insert(n, d.clone());
    }
    MessageSchema::from_defs(root, pool).ok()
}

/// The built-in schema of `type_name` that fits a recorded payload: the first of
/// [`candidates`] (oldest distribution first) that decodes `payload` completely, else the
/// default of [`resolve`]. `None` when the type has no built-in definition.
pub fn resolve_for_payload(type_name: &str, payload: &[u8]) -> Option<MessageSchema> {
    let mut cands = candidates(type_name);
    if cands.len() > 1 {
        if let Some(i) = cands.iter().position(|(_, s)| {
            decode_with_end(s, payload).is_ok_and(|(_, end)| only_padding_after(payload, end))
        }) {
            return Some(cands.swap_remove(i).1);
        }
    }
    resolve(type_name)
}

/// Names (canonical, sorted) of all built-in types.
pub fn names() -> impl Iterator<Item = &'static str> {
    table().types.keys().map(|n| n.as_str())
}

/// rosbag2-style ros2msg schema text (root + `MSG:` dependency sections) for a
/// built-in type, for writers that need to emit an MCAP Schema record.
pub fn schema_text(type_name: &str) -> Option<String> {
    resolve(type_name).map(|s| s.to_ros2msg_text())
}

/// The Schema record a writer should emit for a topic: the recorded definition when there is
/// one (`encoding` defaulting to `ros2msg`), else the built-in one, else `None` (an empty
/// schema: readers cannot decode it). Returns (encoding, data, source: `bag` / `builtin`).
pub fn schema_for_writing(
    type_name: &str,
    encoding: &str,
    data: &[u8],
) -> Option<(String, Vec<u8>, &'static str)> {
    if !data.is_empty() {
        let enc = if encoding.is_empty() {
            "ros2msg"
        } else {
            encoding
        };
        return Some((enc.to_string(), data.to_vec(), "bag"));
    }
    schema_text(type_name).map(|t| ("ros2msg".to_string(), t.into_bytes(), "builtin"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_parses() {
        let (t, errors) = build(DEFS_TEXT);
        assert!(errors.is_empty(), "{errors:#?}");
        // Sections for one name must not claim the same distribution twice.
        for (n, vs) in &t.types {
            let mut seen = 0u8;
            for v in vs {
                assert_eq!(seen & v.distros, 0, "{n}: a distribution has two layouts");
                seen |= v.distros;
            }
        }
    }

    #[test]
    fn malformed_sections_are_reported() {
        let (t, errors) = build(
            "@ a/msg/A\nint32 x\n@ a/srv/S\nint32 x\n@ a/msg/B lunar\nint32 y\n@ a/msg/C\nfoo!bar baz\n",
        );
        assert!(t.types.contains_key("a/msg/A"));
        assert!(!t.types.contains_key("a/srv/S_Request"));
        assert_eq!(errors.len(), 3, "{errors:?}");
    }
}
