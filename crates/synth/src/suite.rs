//! The synthetic fault suite: one small bag per case, each with a manifest of the streams, the
//! synchronizer settings to run and the decisions the case's *construction* implies (reasoned
//! from the upstream algorithms in the sync-golden SPEC, not copied from a run of bagscope).
//!
//! Case bags go to `DIR/NN_name/`, manifests to `DIR/NN_name.manifest.json`. Where listing every
//! set is impractical the manifest asserts the property the case is about (e.g. "exact: 0 sets").

use std::collections::BTreeMap;
use std::path::Path;

use bagscope_msg::encode_typed;
use bagscope_msg::types::{Header, TFMessage, Time, Transform, TransformStamped, Vector3};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::arm::WALL_START_NS;
use crate::writer::{write_rosbag2, Message, TopicSpec};
use crate::SynthError;

const MS: i64 = 1_000_000;
const US: i64 = 1_000;
const T0: i64 = WALL_START_NS;

/// `geometry_msgs/PointStamped`: the smallest built-in message with a header.
#[derive(Serialize)]
struct PointStamped {
    header: Header,
    point: Vector3,
}

const POINT_TYPE: &str = "geometry_msgs/msg/PointStamped";
const TF_TYPE: &str = "tf2_msgs/msg/TFMessage";

/// One topic of a case's bag, as the manifest's `streams` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Stream {
    /// Topic name.
    pub topic: String,
    /// ROS type (`geometry_msgs/msg/PointStamped` or `tf2_msgs/msg/TFMessage`); `type` in
    /// the JSON.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Header frame of its messages; `null` for TF topics, whose frames are per transform.
    pub frame_id: Option<String>,
    /// Number of messages written on it.
    pub messages: usize,
    /// How the stream was built: rate, stamps, receive lag and the fault it carries.
    pub note: String,
}

/// What one synchronizer run must decide. Absent fields are not checked, except `rejected`
/// (absent: no freshness rejections).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncExpect {
    /// Number of sets emitted, exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sets: Option<usize>,
    /// Number of sets emitted, at least (where the exact count depends on details the case
    /// is not about, e.g. whether ApproximateTime proves the last candidate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sets_min: Option<usize>,
    /// Per-topic member indices of every emitted set, in emit order (an index counts the
    /// topic's messages from 0 in arrival order; members in the check's `topics` order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_list: Option<Vec<Vec<usize>>>,
    /// Pairing drops per listed topic: reason → count, exactly (an empty map: no drops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drops_by_topic: Option<BTreeMap<String, BTreeMap<String, usize>>>,
    /// Per listed topic: the topic that held no candidate partner of its `never_matched` /
    /// `queue_evicted` drops → count, exactly (an empty map: none named).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_partner_by_topic: Option<BTreeMap<String, BTreeMap<String, usize>>>,
    /// Per listed topic: [min, max] span of its `skew_exceeded` drops, exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew_span_ns_by_topic: Option<BTreeMap<String, [i64; 2]>>,
    /// Freshness rejections: reason → count, exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<BTreeMap<String, usize>>,
    /// The largest emit age (completion log time − newest stamp) is at least this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emit_age_max_ns_at_least: Option<i64>,
    /// The largest set span (max − min stamp) is at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_max_ns_at_most: Option<i64>,
}

/// One `bagscope sync` run over the case's bag.
#[derive(Debug, Clone, Serialize)]
pub struct SyncCheck {
    /// Name of the run, unique within the case (e.g. `approx-py-20ms`).
    pub name: String,
    /// The synchronized topics, in `--topics` order: set members and per-topic maps follow it.
    pub topics: Vec<String>,
    /// The `--policy` (`exact`, `exact-py`, `approx`, `approx-py`, `approx-epsilon`,
    /// `latest`).
    pub policy: String,
    /// The `--queue` size.
    pub queue: usize,
    /// approx-py's `--slop`, as a duration with its unit (`10ms`); `null` for other policies.
    pub slop: Option<String>,
    /// approx-epsilon's tolerance (`--epsilon`, e.g. `1ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<String>,
    /// `--max-age`: a set whose anchor is older than this when it completes is rejected
    /// (`stale_at_emit`); `null` when not set.
    pub max_age: Option<String>,
    /// `--anchor`: the member `max_age` measures from (`null`: the first topic).
    pub anchor: Option<String>,
    /// `--tf-target`: sets whose members cannot all be transformed into this frame with the
    /// TF received by completion are rejected (`frame_unavailable`); `null` when not set.
    pub tf_target: Option<String>,
    /// The same settings as `bagscope sync BAG ARGS…` arguments.
    pub args: Vec<String>,
    /// Why these decisions follow from the construction.
    pub why: String,
    /// The decisions the run must give.
    pub expect: SyncExpect,
}

/// What one `bagscope tf` run (tf2_ros::MessageFilter emulation) must report for one topic;
/// counts are exact.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TfTopicExpect {
    /// Messages transformable into the target frame when they arrived.
    pub ready_on_arrival: usize,
    /// Messages that waited in the filter's queue and passed once the TF bracketing their
    /// stamp arrived.
    pub ready_after_wait: usize,
    /// reason → count, exactly.
    pub drops: BTreeMap<String, usize>,
    /// Longest wait of a waited message, log-time nanoseconds from its arrival to its
    /// passing, exactly; absent: not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_max_ns: Option<i64>,
    /// Shortest such wait, log-time nanoseconds, exactly; absent: not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_min_ns: Option<i64>,
}

/// One `bagscope tf` run over the case's bag.
#[derive(Debug, Clone, Serialize)]
pub struct TfCheck {
    /// Name of the run, unique within the case (e.g. `queue-4`).
    pub name: String,
    /// Arguments after `bagscope tf BAG` (`--target-frame`, `--topics`, `--queue`).
    pub args: Vec<String>,
    /// Why these results follow from the construction.
    pub why: String,
    /// Topic → what the filter must report for it.
    pub expect: BTreeMap<String, TfTopicExpect>,
    /// Edge "parent->child" → number of gaps expected in its samples.
    pub edge_gaps: BTreeMap<String, usize>,
}

/// A case's manifest, `DIR/NN_name.manifest.json`: its bag's streams, and the runs to make
/// over it with the decisions each must give.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// The case's name, `NN_name` (one of [`CASES`]).
    pub case: String,
    /// One line saying what the case is about.
    pub title: String,
    /// What the bag contains and what each policy must do with it.
    pub description: String,
    /// Bag folder, relative to the manifest.
    pub bag: String,
    /// The bag's topics, in channel order.
    pub streams: Vec<Stream>,
    /// `bagscope sync` runs and their expected decisions.
    pub sync_checks: Vec<SyncCheck>,
    /// `bagscope tf` runs and their expected results (only the TF case has any).
    pub tf_checks: Vec<TfCheck>,
    /// Pairs of sync checks (indices) that must decide identically: same sets, same drops.
    pub parity: Vec<[usize; 2]>,
    /// The command that writes the suite again (`bagscope synth --suite`).
    pub generator: String,
}

/// What [`write_suite`] wrote for one case (`bagscope synth --suite --json` prints these).
#[derive(Debug, Clone, Serialize)]
pub struct CaseSummary {
    /// The case's name, `NN_name`.
    pub case: String,
    /// Its bag folder, relative to the suite folder.
    pub bag: String,
    /// Path of its manifest file (the suite folder as given, joined with
    /// `NN_name.manifest.json`).
    pub manifest: String,
}

/// Builds one case's bag.
struct Case {
    name: String,
    topics: Vec<TopicSpec>,
    frames: Vec<Option<String>>,
    notes: Vec<String>,
    msgs: Vec<Message>,
}

impl Case {
    fn new(name: &str) -> Case {
        Case {
            name: name.to_string(),
            topics: Vec::new(),
            frames: Vec::new(),
            notes: Vec::new(),
            msgs: Vec::new(),
        }
    }

    fn topic(&mut self, name: &str, type_name: &str, frame: Option<&str>, note: &str) -> usize {
        self.topics.push(TopicSpec {
            name: name.into(),
            type_name: type_name.into(),
        });
        self.frames.push(frame.map(str::to_string));
        self.notes.push(note.into());
        self.topics.len() - 1
    }

    /// A stamped point on `topic` (its frame), received at `log`.
    fn point(&mut self, topic: usize, stamp: i64, log: i64) -> Result<(), SynthError> {
        let m = PointStamped {
            header: Header {
                stamp: Time::from_ns(stamp),
                frame_id: self.frames[topic].clone().unwrap_or_default(),
            },
            point: Vector3::default(),
        };
        self.msgs.push(Message {
            topic,
            log_time_ns: log,
            publish_time_ns: log,
            data: encode_typed(&m)?,
        });
        Ok(())
    }

    fn tf(
        &mut self,
        topic: usize,
        log: i64,
        edges: &[(&str, &str, i64)],
    ) -> Result<(), SynthError> {
        let m = TFMessage {
            transforms: edges
                .iter()
                .map(|(p, c, s)| TransformStamped {
                    header: Header {
                        stamp: Time::from_ns(*s),
                        frame_id: (*p).into(),
                    },
                    child_frame_id: (*c).into(),
                    transform: Transform::default(),
                })
                .collect(),
        };
        self.msgs.push(Message {
            topic,
            log_time_ns: log,
            publish_time_ns: log,
            data: encode_typed(&m)?,
        });
        Ok(())
    }

    fn write(self, dir: &Path, m: Manifest) -> Result<CaseSummary, SynthError> {
        let mut m = m;
        m.bag = self.name.clone();
        m.case = self.name.clone();
        m.streams = self
            .topics
            .iter()
            .enumerate()
            .map(|(i, t)| Stream {
                topic: t.name.clone(),
                type_name: t.type_name.clone(),
                frame_id: self.frames[i].clone(),
                messages: self.msgs.iter().filter(|x| x.topic == i).count(),
                note: self.notes[i].clone(),
            })
            .collect();
        // No compression: the bags are tiny and readable by any MCAP tool.
        write_rosbag2(
            &dir.join(&self.name),
            &self.name,
            &self.topics,
            self.msgs,
            false,
        )?;
        let text =
            serde_json::to_string_pretty(&m).map_err(|e| SynthError::Param(e.to_string()))?;
        let p = dir.join(format!("{}.manifest.json", self.name));
        std::fs::write(&p, text + "\n").map_err(|e| SynthError::Io(p.clone(), e))?;
        Ok(CaseSummary {
            case: self.name,
            bag: m.bag,
            manifest: p.display().to_string(),
        })
    }
}

fn manifest(title: &str, description: &str) -> Manifest {
    Manifest {
        case: String::new(),
        title: title.into(),
        description: description.into(),
        bag: String::new(),
        streams: Vec::new(),
        sync_checks: Vec::new(),
        tf_checks: Vec::new(),
        parity: Vec::new(),
        generator: "bagscope synth --suite".into(),
    }
}

/// A sync check; `args` is derived from the settings.
#[allow(clippy::too_many_arguments)]
fn check(
    name: &str,
    topics: &[&str],
    policy: &str,
    queue: usize,
    slop: Option<&str>,
    why: &str,
    expect: SyncExpect,
) -> SyncCheck {
    let mut c = SyncCheck {
        name: name.into(),
        topics: topics.iter().map(|s| s.to_string()).collect(),
        policy: policy.into(),
        queue,
        slop: slop.map(str::to_string),
        epsilon: None,
        max_age: None,
        anchor: None,
        tf_target: None,
        args: Vec::new(),
        why: why.into(),
        expect,
    };
    c.args = args_of(&c);
    c
}

fn args_of(c: &SyncCheck) -> Vec<String> {
    let mut a = vec![
        "--topics".to_string(),
        c.topics.join(","),
        "--policy".into(),
        c.policy.clone(),
        "--queue".into(),
        c.queue.to_string(),
    ];
    for (flag, v) in [
        ("--slop", &c.slop),
        ("--epsilon", &c.epsilon),
        ("--max-age", &c.max_age),
        ("--anchor", &c.anchor),
        ("--tf-target", &c.tf_target),
    ] {
        if let Some(v) = v {
            a.push(flag.into());
            a.push(v.clone());
        }
    }
    a
}

/// An approx-epsilon check: `check` with its epsilon.
fn check_eps(
    name: &str,
    topics: &[&str],
    queue: usize,
    epsilon: &str,
    why: &str,
    expect: SyncExpect,
) -> SyncCheck {
    let mut c = check(name, topics, "approx-epsilon", queue, None, why, expect);
    c.epsilon = Some(epsilon.to_string());
    c.args = args_of(&c);
    c
}

/// Per topic: partner topic → count.
fn missing(list: &[(&str, &[(&str, usize)])]) -> Option<BTreeMap<String, BTreeMap<String, usize>>> {
    drops(list)
}

/// Per topic: [min, max] skew span.
fn spans(list: &[(&str, i64, i64)]) -> Option<BTreeMap<String, [i64; 2]>> {
    Some(
        list.iter()
            .map(|(t, lo, hi)| (t.to_string(), [*lo, *hi]))
            .collect(),
    )
}

fn with_freshness(
    mut c: SyncCheck,
    max_age: Option<&str>,
    anchor: Option<&str>,
    tf: Option<&str>,
) -> SyncCheck {
    c.max_age = max_age.map(str::to_string);
    c.anchor = anchor.map(str::to_string);
    c.tf_target = tf.map(str::to_string);
    c.args = args_of(&c);
    c
}

fn drops(list: &[(&str, &[(&str, usize)])]) -> Option<BTreeMap<String, BTreeMap<String, usize>>> {
    Some(
        list.iter()
            .map(|(t, rs)| {
                (
                    t.to_string(),
                    rs.iter().map(|(r, n)| (r.to_string(), *n)).collect(),
                )
            })
            .collect(),
    )
}

fn counts(list: &[(&str, usize)]) -> BTreeMap<String, usize> {
    list.iter().map(|(r, n)| (r.to_string(), *n)).collect()
}

fn pairs(v: impl IntoIterator<Item = (usize, usize)>) -> Option<Vec<Vec<usize>>> {
    Some(v.into_iter().map(|(a, b)| vec![a, b]).collect())
}

/// Names of the cases, in order.
pub const CASES: &[&str] = &[
    "01_perfect_exact",
    "02_independent_cadences",
    "03_jitter_and_slop",
    "04_dropped_message",
    "05_executor_pause_burst",
    "06_out_of_order_and_duplicates",
    "07_clock_offset_and_drift",
    "08_time_jump_and_restart",
    "09_tf_gap",
    "10_replay_parity",
];

/// Writes every case into `dir`.
pub fn write_suite(dir: &Path) -> Result<Vec<CaseSummary>, SynthError> {
    std::fs::create_dir_all(dir).map_err(|e| SynthError::Io(dir.to_path_buf(), e))?;
    Ok(vec![
        case01(dir)?,
        case02(dir)?,
        case03(dir)?,
        case04(dir)?,
        case05(dir)?,
        case06(dir)?,
        case07(dir)?,
        case08(dir)?,
        case09(dir)?,
        case10(dir)?,
    ])
}

const AB: [&str; 2] = ["/a", "/b"];

fn two_streams(c: &mut Case, note_a: &str, note_b: &str) -> (usize, usize) {
    (
        c.topic("/a", POINT_TYPE, Some("sensor_a"), note_a),
        c.topic("/b", POINT_TYPE, Some("sensor_b"), note_b),
    )
}

fn case01(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[0]);
    let (a, b) = two_streams(
        &mut c,
        "10 Hz, received 2 ms after its stamp",
        "10 Hz, identical stamps, received 5 ms after",
    );
    for k in 0..20 {
        let s = T0 + 100 * MS * (k + 1);
        c.point(a, s, s + 2 * MS)?;
        c.point(b, s, s + 5 * MS)?;
    }
    let all = pairs((0..20).map(|k| (k, k)));
    let exp = || SyncExpect {
        sets: Some(20),
        set_list: all.clone(),
        drops_by_topic: drops(&[("/a", &[]), ("/b", &[])]),
        span_max_ns_at_most: Some(0),
        ..Default::default()
    };
    let mut m = manifest("perfect exact stamps", "Two 10 Hz streams with identical stamps, each partner arriving before the next message: every policy pairs message k with message k and drops nothing.");
    m.sync_checks = vec![
        check("exact", &AB, "exact", 10, None, "ExactTime completes the tuple of stamp k when /b k arrives (SPEC §3)", exp()),
        check("exact-py", &AB, "exact-py", 10, None, "TimeSynchronizer: stamp k becomes common when /b k arrives (SPEC §4)", exp()),
        check("approx", &AB, "approx", 10, None, "ApproximateTime: equal fronts make a zero-size candidate, published at once (SPEC §2.6)", exp()),
        check("approx-py", &AB, "approx-py", 10, Some("10ms"), "ApproximateTimeSynchronizer: |Δ| = 0 < slop (SPEC §5)", exp()),
        check_eps("approx-epsilon", &AB, 10, "1ms", "ApproximateEpsilonTime: /b k arrives while /a k is the only front, and equal fronts are within any epsilon (SPEC §11)", exp()),
        check("latest", &AB, "latest", 10, None,
            "LatestTime (now() = log time; SPEC §12): /a's slot gets 10 Hz at /a 1 and /a is the pivot from then on (its own arrival: period 0, hz > 0), so every /a k ≥ 1 emits with /b's latest, /b k − 1 (/b k arrives 3 ms later); /a 0 is replaced before any set (queue_evicted); /b 19 is still held at the end (never_matched)",
            SyncExpect {
                sets: Some(19),
                set_list: pairs((1..20).map(|k| (k, k - 1))),
                drops_by_topic: drops(&[("/a", &[("queue_evicted", 1)]), ("/b", &[("never_matched", 1)])]),
                ..Default::default()
            }),
    ];
    c.write(dir, m)
}

fn case02(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[1]);
    let (a, b) = two_streams(
        &mut c,
        "25 Hz, stamps 40 ms apart from T0",
        "10 Hz, stamps T0 + 7 ms + 100 ms·m",
    );
    for j in 0..50 {
        let s = T0 + 40 * MS * j;
        c.point(a, s, s + 2 * MS)?;
    }
    for m in 0..20 {
        let s = T0 + 7 * MS + 100 * MS * m;
        c.point(b, s, s + 5 * MS)?;
    }
    // /b m is 7 ms after /a 5m/2 (m even) or 13 ms before /a (5m+1)/2 (m odd); no stamp is
    // shared (7 + 100 m is never a multiple of 40).
    let nearest = pairs((0..20usize).map(|m| {
        (
            if m % 2 == 0 {
                5 * m / 2
            } else {
                (5 * m).div_ceil(2)
            },
            m,
        )
    }));
    let mut man = manifest("independent cadences", "A 25 Hz and a 10 Hz stream on independent cadences: no two stamps are equal, so exact policies never fire, while approximate policies pair every 10 Hz message.");
    man.sync_checks = vec![
        check("exact", &AB, "exact", 10, None,
            "70 distinct stamps, no tuple ever completes; with queue 10 the 60 oldest tuples are evicted and the 10 newest stamps (7 of /a, 3 of /b) are still pending at the end",
            SyncExpect { sets: Some(0), drops_by_topic: drops(&[("/a", &[("queue_evicted", 43), ("never_matched", 7)]), ("/b", &[("queue_evicted", 17), ("never_matched", 3)])]), ..Default::default() }),
        check("approx-py", &AB, "approx-py", 10, Some("20ms"),
            "each /b has exactly one /a within 20 ms (7 or 13 ms away) and it is never wanted by another /b, so every /b pairs with it; 30 /a are left, 20 evicted by the queue of 10 and 10 pending. Every /b a surplus /a saw while held was taken by its own set, so no /b partner ever came for them: /b is the missing topic of all 30",
            SyncExpect { sets: Some(20), set_list: nearest, drops_by_topic: drops(&[("/a", &[("queue_evicted", 20), ("never_matched", 10)]), ("/b", &[])]), missing_partner_by_topic: missing(&[("/a", &[("/b", 30)]), ("/b", &[])]), ..Default::default() }),
        check("approx", &AB, "approx", 10, None,
            "ApproximateTime pairs each 10 Hz message; only the last candidate may still wait for its optimality proof",
            SyncExpect { sets_min: Some(19), ..Default::default() }),
    ];
    c.write(dir, man)
}

/// /b's stamp offset from /a for case 3, in ns.
fn jitter03(k: i64) -> i64 {
    match k {
        5 => 15 * MS,
        8 => -10 * MS,
        10 => 10 * MS - 1,
        12 => -15 * MS,
        15 => 10 * MS,
        _ => ((k * 7) % 9 - 4) * MS,
    }
}

fn case03(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[2]);
    let (a, b) = two_streams(&mut c, "10 Hz", "10 Hz, stamp = /a's + bounded jitter (±4 ms; 15, −10, 10 ms − 1 ns, −15, 10 ms at k = 5, 8, 10, 12, 15)");
    for k in 0..20 {
        let s = T0 + 100 * MS * (k + 1);
        c.point(a, s, s + 2 * MS)?;
        let sb = s + jitter03(k);
        c.point(b, sb, sb + 3 * MS)?;
    }
    let outside = [5usize, 8, 12, 15];
    let inside = pairs((0..20).filter(|k| !outside.contains(k)).map(|k| (k, k)));
    let mut m = manifest("bounded jitter inside and outside the slop", "Equal-rate streams with jitter mostly inside a 10 ms slop; four pairs are at or beyond it (|Δ| = 10 ms is outside: the test is strict), one is 1 ns inside.");
    m.sync_checks = vec![
        check("approx-py-10ms", &AB, "approx-py", 10, Some("10ms"),
            "pairs with |Δ| < 10 ms match (strict '<', SPEC §5); k = 5, 8, 12, 15 have |Δ| ≥ 10 ms and their neighbours are ≥ 85 ms away, so those 4 messages per topic wait forever, each with its partner there but 15, 10, 15 and 10 ms away: skew_exceeded",
            SyncExpect { sets: Some(16), set_list: inside, drops_by_topic: drops(&[("/a", &[("skew_exceeded", 4)]), ("/b", &[("skew_exceeded", 4)])]), skew_span_ns_by_topic: spans(&[("/a", 10 * MS, 15 * MS), ("/b", 10 * MS, 15 * MS)]), ..Default::default() }),
        check("approx-py-16ms", &AB, "approx-py", 10, Some("16ms"),
            "every |Δ| ≤ 15 ms < 16 ms",
            SyncExpect { sets: Some(20), set_list: pairs((0..20).map(|k| (k, k))), drops_by_topic: drops(&[("/a", &[]), ("/b", &[])]), ..Default::default() }),
        check("approx", &AB, "approx", 10, None,
            "ApproximateTime has no slop: every pair k,k is the minimal set (the last may still be unproven)",
            SyncExpect { sets_min: Some(19), ..Default::default() }),
        check_eps("approx-epsilon-10ms", &AB, 10, "10ms",
            "fronts match when within 10 ms inclusive (SPEC §11): |Δ| = 10 ms at k = 8 and 15 matches. k = 5: /a 5 waits, /b 5 15 ms later fails and discards /a 5; /a 6 then discards /b 5. k = 12: /b 12 waits, /a 12 15 ms later discards it; /b 13 then discards /a 12. Each lost message had its free partner 15 ms away",
            SyncExpect {
                sets: Some(18),
                set_list: pairs((0..20).filter(|k| *k != 5 && *k != 12).map(|k| (k, k))),
                drops_by_topic: drops(&[("/a", &[("skew_exceeded", 2)]), ("/b", &[("skew_exceeded", 2)])]),
                skew_span_ns_by_topic: spans(&[("/a", 15 * MS, 15 * MS), ("/b", 15 * MS, 15 * MS)]),
                ..Default::default()
            }),
    ];
    c.write(dir, m)
}

fn case04(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[3]);
    let (a, b) = two_streams(
        &mut c,
        "10 Hz, 20 messages",
        "10 Hz, identical stamps, message 7 never sent",
    );
    for k in 0..20 {
        let s = T0 + 100 * MS * (k + 1);
        c.point(a, s, s + 2 * MS)?;
        if k != 7 {
            c.point(b, s, s + 5 * MS)?;
        }
    }
    let list = pairs(
        (0..20)
            .filter(|&k| k != 7)
            .map(|k| (k, if k > 7 { k - 1 } else { k })),
    );
    let exp = |why_drop: &str| SyncExpect {
        sets: Some(19),
        set_list: list.clone(),
        drops_by_topic: drops(&[("/a", &[(why_drop, 1)]), ("/b", &[])]),
        ..Default::default()
    };
    // The approximate policies: the only /b /a 7 saw while held (/b 8) was /a 8's partner.
    let lost = SyncExpect {
        missing_partner_by_topic: missing(&[("/a", &[("/b", 1)]), ("/b", &[])]),
        ..exp("never_matched")
    };
    let mut m = manifest(
        "one stream drops a message",
        "/b misses one message: every policy loses exactly that pair and nothing else.",
    );
    m.sync_checks = vec![
        check("exact", &AB, "exact", 10, None, "the partial tuple of stamp 7 is purged when stamp 8 is published (clearOldTuples): a purge with a newer partner is skew_exceeded", exp("skew_exceeded")),
        check("exact-py", &AB, "exact-py", 10, None, "keys older than a published stamp are deleted (current TimeSynchronizer)", exp("skew_exceeded")),
        check("approx-py", &AB, "approx-py", 10, Some("10ms"), "/a 7 has no partner within 10 ms and stays queued (queue of 10 never fills): never_matched, /b missing", lost.clone()),
        check("approx", &AB, "approx", 10, None, "candidate (/a 7, /b 8) is replaced by the strictly better (/a 8, /b 8), which clears /a 7; no free /b ever came for it: never_matched, /b missing", lost.clone()),
        check_eps("approx-epsilon", &AB, 10, "10ms", "/a 7 waits alone; /b 8 makes the front set (/a 7, /b 8) fail, which discards /a 7, and then pairs with /a 8: no free /b ever came for /a 7: never_matched, /b missing", lost),
    ];
    c.write(dir, m)
}

fn case05(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[4]);
    let (a, b) = two_streams(&mut c, "20 Hz", "20 Hz, identical stamps");
    // Stamps T0 + 100 ms + 50 ms·k. Messages 10..19 (stamps 600..1050 ms) are held by an
    // executor pause and all delivered at 1080 ms, 10 µs apart, /a k before /b k.
    let release = T0 + 1080 * MS;
    for k in 0..40i64 {
        let s = T0 + 100 * MS + 50 * MS * k;
        if (10..20).contains(&k) {
            let i = 2 * (k - 10);
            c.point(a, s, release + i * 10 * US)?;
            c.point(b, s, release + (i + 1) * 10 * US)?;
        } else {
            c.point(a, s, s + 2 * MS)?;
            c.point(b, s, s + 5 * MS)?;
        }
    }
    let all = pairs((0..40).map(|k| (k, k)));
    let base = SyncExpect {
        sets: Some(40),
        set_list: all,
        drops_by_topic: drops(&[("/a", &[]), ("/b", &[])]),
        // Set 10 completes at 1080.01 ms with stamp 600 ms.
        emit_age_max_ns_at_least: Some(480 * MS),
        span_max_ns_at_most: Some(0),
        ..Default::default()
    };
    let stale = SyncExpect {
        rejected: Some(counts(&[("stale_at_emit", 6)])),
        ..base.clone()
    };
    let why_stale = "burst set k (10..19) completes at 1080 ms + (2(k−10)+1)·10 µs, age 480 − 50(k−10) ms + that: > 200 ms for k = 10..15 (6 sets); every other set is 5 ms old. Rejections are counted apart: no pairing drops";
    let mut m = manifest("a burst after an executor pause", "Stamps are regular but half a second of messages arrives bunched after a pause: the emit age grows to ~480 ms while the set span stays 0. With --max-age the stale sets are rejected (stale_at_emit), not counted as pairing drops.");
    m.sync_checks = vec![
        check(
            "exact",
            &AB,
            "exact",
            10,
            None,
            "arrival keeps /a k before /b k, so each tuple still completes at once: all 40 pairs",
            base.clone(),
        ),
        with_freshness(
            check(
                "exact-max-age",
                &AB,
                "exact",
                10,
                None,
                why_stale,
                stale.clone(),
            ),
            Some("200ms"),
            None,
            None,
        ),
        with_freshness(
            check(
                "approx-py-max-age-anchor-b",
                &AB,
                "approx-py",
                10,
                Some("10ms"),
                why_stale,
                stale,
            ),
            Some("200ms"),
            Some("/b"),
            None,
        ),
    ];
    c.write(dir, m)
}

fn case06(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[5]);
    let (a, b) = two_streams(
        &mut c,
        "10 Hz, in order",
        "same stamps, but stamp 3 is sent twice and stamps 5 and 6 arrive swapped",
    );
    let s = |k: i64| T0 + 100 * MS * (k + 1);
    for k in 0..10 {
        c.point(a, s(k), s(k) + 2 * MS)?;
    }
    // /b per-topic indices: 0..3 = stamps 0..3, 4 = stamp 3 again, 5 = stamp 4, 6 = stamp 6,
    // 7 = stamp 5, 8..10 = stamps 7..9.
    for k in 0..=4 {
        c.point(b, s(k), s(k) + 5 * MS)?;
    }
    c.point(b, s(3), s(3) + 6 * MS)?;
    c.point(b, s(6), s(6) + 5 * MS)?;
    c.point(b, s(5), s(6) + 6 * MS)?;
    for k in 7..10 {
        c.point(b, s(k), s(k) + 5 * MS)?;
    }
    let mut m = manifest("out-of-order and duplicated messages", "/b repeats one stamp and delivers two stamps swapped. Python's approximate synchronizer still pairs the swapped ones (emitting sets out of time order); the exact policies purge the older stamp once the newer one is published.");
    let exact_list = pairs([
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 5),
        (6, 6),
        (7, 8),
        (8, 9),
        (9, 10),
    ]);
    let exact_exp = SyncExpect {
        sets: Some(9),
        set_list: exact_list,
        drops_by_topic: drops(&[
            ("/a", &[("skew_exceeded", 1)]),
            ("/b", &[("out_of_order", 1), ("duplicate_member", 1)]),
        ]),
        ..Default::default()
    };
    let why_exact = "publishing stamp 6 purges the pending /a 5 (skew_exceeded); the late /b stamp 5 then waits alone until stamp 7 purges it (older than an earlier /b stamp: out_of_order); the repeated /b stamp 3 arrives after stamp 3 was published, so it repeats a stamp used in a set (duplicate_member; stamp 4 purges it)";
    m.sync_checks = vec![
        check("approx-py", &AB, "approx-py", 10, Some("10ms"),
            "/b stamp 6 pairs with /a 6 at once; the late /b stamp 5 then finds /a 5 still queued (set emitted out of time order); the repeated stamp 3 finds no partner left: its stamp was already used in a set on /b (duplicate_member)",
            SyncExpect { sets: Some(10), set_list: pairs([(0, 0), (1, 1), (2, 2), (3, 3), (4, 5), (6, 6), (5, 7), (7, 8), (8, 9), (9, 10)]), drops_by_topic: drops(&[("/a", &[]), ("/b", &[("duplicate_member", 1)])]), ..Default::default() }),
        check("exact", &AB, "exact", 10, None, why_exact, exact_exp.clone()),
        check("exact-py", &AB, "exact-py", 10, None, why_exact, exact_exp),
        check("approx", &AB, "approx", 10, None, "ApproximateTime discards the late out-of-order message; the other pairs survive", SyncExpect { sets_min: Some(8), ..Default::default() }),
    ];
    c.write(dir, m)
}

fn case07(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[6]);
    let (a, b) = two_streams(
        &mut c,
        "10 Hz, reference clock",
        "10 Hz, its clock 30 ms ahead and drifting 1 ms/s (+100 µs per message)",
    );
    for k in 0..60 {
        let s = T0 + 100 * MS * (k + 1);
        c.point(a, s, s + 2 * MS)?;
        c.point(b, s + 30 * MS + k * 100 * US, s + 3 * MS)?;
    }
    let mut m = manifest("fixed offset and slow drift between two sensor clocks", "/b's stamps are 30 ms + 0.1 ms·k ahead of /a's. A slop below the offset never matches; a slop of 35 ms matches until the drift reaches it (k = 50: |Δ| = 35 ms exactly, not < slop).");
    m.sync_checks = vec![
        check("approx-py-20ms", &AB, "approx-py", 10, Some("20ms"),
            "|Δ| ≥ 30 ms > slop for every pair and neighbours are ≥ 64 ms away: nothing matches; each queue of 10 evicts its 50 oldest and 10 wait to the end, every one with its partner k there but 30 + 0.1·k ms away: skew_exceeded, spans 30 to 35.9 ms",
            SyncExpect { sets: Some(0), drops_by_topic: drops(&[("/a", &[("skew_exceeded", 60)]), ("/b", &[("skew_exceeded", 60)])]), skew_span_ns_by_topic: spans(&[("/a", 30 * MS, 35_900 * US), ("/b", 30 * MS, 35_900 * US)]), ..Default::default() }),
        check("approx-py-35ms", &AB, "approx-py", 10, Some("35ms"),
            "|Δ_k| = 30 ms + 0.1 ms·k < 35 ms for k < 50; the last 10 pairs drift out and stay queued, partners there but 35 to 35.9 ms apart: skew_exceeded",
            SyncExpect { sets: Some(50), set_list: pairs((0..50).map(|k| (k, k))), drops_by_topic: drops(&[("/a", &[("skew_exceeded", 10)]), ("/b", &[("skew_exceeded", 10)])]), skew_span_ns_by_topic: spans(&[("/a", 35 * MS, 35_900 * US), ("/b", 35 * MS, 35_900 * US)]), ..Default::default() }),
        check("approx", &AB, "approx", 10, None,
            "ApproximateTime has no slop and pairs k with k despite the offset (the last may be unproven)",
            SyncExpect { sets_min: Some(59), ..Default::default() }),
        check("exact", &AB, "exact", 10, None, "no equal stamps", SyncExpect { sets: Some(0), ..Default::default() }),
    ];
    c.write(dir, m)
}

fn case08(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[7]);
    let (a, b) = two_streams(
        &mut c,
        "10 Hz sim-time stamps: 1000 s + 0.1 s·k, then reset to 10 s + 0.1 s·j",
        "same stamps; its publisher restarts after the reset and misses j = 5..9",
    );
    for k in 0..20 {
        let s = 1_000_000 * MS + 100 * MS * k;
        let w = T0 + 100 * MS * k;
        c.point(a, s, w + 2 * MS)?;
        c.point(b, s, w + 5 * MS)?;
    }
    for j in 0..20 {
        let s = 10_000 * MS + 100 * MS * j;
        let w = T0 + 2_000 * MS + 100 * MS * j;
        c.point(a, s, w + 2 * MS)?;
        if !(5..10).contains(&j) {
            c.point(b, s, w + 5 * MS)?;
        }
    }
    let list = pairs(
        (0..20).map(|k| (k, k)).chain(
            (0..20)
                .filter(|j| !(5..10).contains(j))
                .map(|j| (20 + j, if j < 5 { 20 + j } else { 15 + j })),
        ),
    );
    let exp = |reason: &str| SyncExpect {
        sets: Some(35),
        set_list: list.clone(),
        drops_by_topic: drops(&[("/a", &[(reason, 5)]), ("/b", &[])]),
        ..Default::default()
    };
    let mut m = manifest("a backward time jump and a publisher restart", "The simulator resets from 1000 s to 10 s; equal stamps keep pairing across the jump (all queues are empty at the reset). /b's publisher then restarts and misses five messages: their /a partners are lost.");
    m.sync_checks = vec![
        check("exact", &AB, "exact", 10, None, "ExactTime does not reject stamps older than the last published set, so pairing resumes after the jump; /a j = 5..9 are purged when j = 10 is published, and being > 1 s behind earlier /a stamps they count as clock_epoch_changed", exp("clock_epoch_changed")),
        check("exact-py", &AB, "exact-py", 10, None, "as ExactTime: keys older than the published j = 10 are deleted", exp("clock_epoch_changed")),
        check("approx-py", &AB, "approx-py", 10, Some("10ms"), "queues are empty at the jump, so no stall; /a j = 5..9 wait forever (5 < queue 10), and every /b they saw was taken by its own set: /b missing", SyncExpect { missing_partner_by_topic: missing(&[("/a", &[("/b", 5)])]), ..exp("never_matched") }),
        check("approx", &AB, "approx", 10, None, "ApproximateTime recovers after a jump with equal stamps", SyncExpect { sets_min: Some(34), ..Default::default() }),
    ];
    c.write(dir, m)
}

fn case09(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[8]);
    let cam = c.topic(
        "/camera",
        POINT_TYPE,
        Some("camera"),
        "10 Hz, stamps T0 + 5 ms + 100 ms·k, received 30 ms later",
    );
    let lid = c.topic(
        "/lidar",
        POINT_TYPE,
        Some("lidar"),
        "same stamps, received 40 ms later",
    );
    let tf = c.topic("/tf", TF_TYPE, None, "base_link->camera at 50 Hz (stamps every 20 ms, received 1 ms later), nothing stamped strictly between 1.0 s and 2.0 s");
    let tfs = c.topic("/tf_static", TF_TYPE, None, "base_link->lidar, once");
    c.tf(tfs, T0, &[("base_link", "lidar", T0)])?;
    for j in 0..=160 {
        if (51..100).contains(&j) {
            continue;
        }
        let s = T0 + 20 * MS * j;
        c.tf(tf, s + MS, &[("base_link", "camera", s)])?;
    }
    for k in 0..30 {
        let s = T0 + 5 * MS + 100 * MS * k;
        c.point(cam, s, s + 30 * MS)?;
        c.point(lid, s, s + 40 * MS)?;
    }
    let topics = ["/camera", "/lidar"];
    let mut m = manifest("a TF gap: pairing succeeds, a member's transform is missing", "Camera and lidar pair perfectly, but /tf for the camera has a 1 s gap. A callback that transforms each member at its own stamp when the set arrives fails for the 10 sets stamped inside the gap (the sample after the gap has not arrived yet: extrapolation into the future). tf2_ros::MessageFilter would hold those camera messages until the sample after the gap arrives (2.001 s) and then pass them: interpolation across the gap is allowed.");
    let all = pairs((0..30).map(|k| (k, k)));
    m.sync_checks = vec![
        check("exact", &topics, "exact", 10, None, "identical stamps, each partner arrives before the next message", SyncExpect { sets: Some(30), set_list: all.clone(), drops_by_topic: drops(&[("/camera", &[]), ("/lidar", &[])]), ..Default::default() }),
        with_freshness(check("exact-tf-target", &topics, "exact", 10, None,
            "set k completes at stamp + 40 ms; the camera needs /tf samples on both sides of its stamp received by then. For k = 10..19 (stamps 1.005..1.905 s) the next sample is stamped 2.0 s and received at 2.001 s: frame_unavailable. The lidar edge is static",
            SyncExpect { sets: Some(30), set_list: all, drops_by_topic: drops(&[("/camera", &[]), ("/lidar", &[])]), rejected: Some(counts(&[("frame_unavailable", 10)])), ..Default::default() }),
            None, None, Some("base_link")),
    ];
    let tf_args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--target-frame", "base_link", "--topics", "/camera,/lidar"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let lidar_ok = TfTopicExpect {
        ready_on_arrival: 30,
        ..Default::default()
    };
    let mut gaps = BTreeMap::new();
    gaps.insert("base_link->camera".to_string(), 1);
    gaps.insert("base_link->lidar".to_string(), 0);
    let mut e1 = BTreeMap::new();
    e1.insert(
        "/camera".to_string(),
        TfTopicExpect {
            ready_on_arrival: 20,
            ready_after_wait: 10,
            drops: BTreeMap::new(),
            // Camera k = 10 arrives at 1.035 s and passes at 2.001 s; k = 19 arrives at 1.935 s.
            wait_max_ns: Some(966 * MS),
            wait_min_ns: Some(66 * MS),
        },
    );
    e1.insert("/lidar".to_string(), lidar_ok.clone());
    let mut e2 = e1.clone();
    e2.insert(
        "/camera".to_string(),
        TfTopicExpect {
            ready_on_arrival: 20,
            ready_after_wait: 4,
            drops: counts(&[("queue_evicted", 6)]),
            wait_max_ns: Some(2001 * MS - 1635 * MS),
            wait_min_ns: Some(66 * MS),
        },
    );
    let mut e3 = BTreeMap::new();
    for t in topics {
        e3.insert(
            t.to_string(),
            TfTopicExpect {
                drops: counts(&[("frame_unknown", 30)]),
                ..Default::default()
            },
        );
    }
    m.tf_checks = vec![
        TfCheck { name: "queue-10".into(), args: tf_args(&[]), why: "camera k = 10..19 wait (10 fit a queue of 10) until the 2.0 s sample arrives at 2.001 s; everything else has its bracketing samples on arrival (30 ms > one 20 ms TF period)".into(), expect: e1, edge_gaps: gaps.clone() },
        TfCheck { name: "queue-4".into(), args: tf_args(&["--queue", "4"]), why: "only the 4 newest waiting camera messages (k = 16..19) survive the queue".into(), expect: e2, edge_gaps: gaps.clone() },
        TfCheck { name: "unknown-target".into(), args: vec!["--target-frame".into(), "map".into(), "--topics".into(), "/camera,/lidar".into(), "--queue".into(), "0".into()], why: "no TF message mentions map; an unbounded queue holds every message to the end".into(), expect: e3, edge_gaps: gaps },
    ];
    c.write(dir, m)
}

fn case10(dir: &Path) -> Result<CaseSummary, SynthError> {
    let mut c = Case::new(CASES[9]);
    let a = c.topic(
        "/a",
        POINT_TYPE,
        Some("sensor_a"),
        "30 Hz with ±1 ms stamp jitter and 1–3 ms receive lag (seeded)",
    );
    let b = c.topic(
        "/b",
        POINT_TYPE,
        Some("sensor_b"),
        "10 Hz with ±1 ms jitter and 2–8 ms lag",
    );
    let a2 = c.topic(
        "/a_copy",
        POINT_TYPE,
        Some("sensor_a"),
        "the same messages as /a, same log times",
    );
    let b2 = c.topic(
        "/b_copy",
        POINT_TYPE,
        Some("sensor_b"),
        "the same messages as /b, same log times",
    );
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for j in 0..90i64 {
        let s = T0 + j * 100 * MS / 3 + rng.random_range(-MS..=MS);
        let log = s + rng.random_range(MS..=3 * MS);
        c.point(a, s, log)?;
        c.point(a2, s, log)?;
    }
    for m in 0..30i64 {
        let s = T0 + 11 * MS + 100 * MS * m + rng.random_range(-MS..=MS);
        let log = s + rng.random_range(2 * MS..=8 * MS);
        c.point(b, s, log)?;
        c.point(b2, s, log)?;
    }
    let orig = ["/a", "/b"];
    let copy = ["/a_copy", "/b_copy"];
    let why_py = "every /b has an /a within 16.7 + 2 ms < 20 ms that no other /b (100 ms away) can take, so all 30 pair";
    let why_cpp = "each 10 Hz message pairs; the last candidate may be unproven";
    let mut m = manifest("the same input twice: replay parity", "Two identical copies of one recording in one bag. Decisions depend only on the input, so both copies must give the same sets and drops, and running any analysis twice must give byte-identical output.");
    m.sync_checks = vec![
        check(
            "approx",
            &orig,
            "approx",
            10,
            None,
            why_cpp,
            SyncExpect {
                sets_min: Some(29),
                ..Default::default()
            },
        ),
        check(
            "approx-copy",
            &copy,
            "approx",
            10,
            None,
            why_cpp,
            SyncExpect {
                sets_min: Some(29),
                ..Default::default()
            },
        ),
        check(
            "approx-py",
            &orig,
            "approx-py",
            10,
            Some("20ms"),
            why_py,
            SyncExpect {
                sets: Some(30),
                drops_by_topic: drops(&[("/b", &[])]),
                ..Default::default()
            },
        ),
        check(
            "approx-py-copy",
            &copy,
            "approx-py",
            10,
            Some("20ms"),
            why_py,
            SyncExpect {
                sets: Some(30),
                drops_by_topic: drops(&[("/b_copy", &[])]),
                ..Default::default()
            },
        ),
    ];
    m.parity = vec![[0, 1], [2, 3]];
    c.write(dir, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_pattern_is_as_documented() {
        let outside: Vec<i64> = (0..20).filter(|&k| jitter03(k).abs() >= 10 * MS).collect();
        assert_eq!(outside, vec![5, 8, 12, 15]);
        assert!((0..20).all(|k| jitter03(k).abs() <= 15 * MS));
    }
}
