//! The arm scenario: JointTrajectory commands at 20 Hz, JointState responses (sampled at 100 Hz,
//! or one acknowledgement per command) that follow the command with a chosen delay, joint names
//! in a permuted order, a header-less gripper topic, and wall / sim / split clocks.

use std::path::Path;

use bagscope_msg::encode_typed;
use bagscope_msg::types::{
    Clock, Duration, Float64, Header, JointState, JointTrajectory, JointTrajectoryPoint, Time,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

use crate::writer::{write_rosbag2, Message, TopicSpec};
use crate::SynthError;

/// Which clock the arm's nodes stamp their headers with. The recorder (log time) is always on
/// wall time; with a sim clock the bag also carries `/clock` at 100 Hz of wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockMode {
    /// Every node on wall time.
    Wall,
    /// Every node on sim time, with `/clock`.
    Sim,
    /// Commands on wall time, joint states on sim time: only some nodes had use_sim_time.
    Split,
}

/// How `/joint_states` answers `/arm_cmd`; the truth's `response_kind` (`"sampled"` or
/// `"event"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseKind {
    /// A state publisher at `state_hz` of its own clock, independent of the commands: each
    /// sample shows the trajectory as commanded `delay_s` earlier (plus bias and noise), so
    /// the delay must be found by cross-correlating the two signals.
    Sampled,
    /// One acknowledgement per command, stamped `delay_s` (±0.2 ms) after it and showing that
    /// command's positions (plus bias and noise): the delay is visible pair by pair.
    Event,
}

/// Parameters of one arm bag ([`generate`]). The default is the shipped `arm_wall`: wall
/// clock, sampled responses 42 ms behind the commands, 24 s.
#[derive(Debug, Clone)]
pub struct ArmOptions {
    /// Bag name (default `arm`): the bag is written to `DIR/NAME/NAME.mcap` with
    /// `metadata.yaml`, and the truth's `bag` says it.
    pub name: String,
    /// Seed of the random stream (default 1) that draws stamp jitter, receive lags and
    /// position noise: the same options and seed write the same bytes.
    pub seed: u64,
    /// Clock of each node's header stamps (default [`ClockMode::Wall`]); sets the truth's
    /// `clock_axes`, `split_clock`, `delay_axis` and whether `/clock` is written.
    pub clock: ClockMode,
    /// Sampled joint states or one acknowledgement per command (default
    /// [`ResponseKind::Sampled`]).
    pub response: ResponseKind,
    /// Command → response delay, seconds in 0–5 (default 0.042): on the response stamps'
    /// clock for wall and sim bags, on wall time for split ones (the truth's `delay_axis`).
    pub delay_s: f64,
    /// Length of the recording, wall (log-time) seconds, at least 6 (default 24): the motion
    /// window is 2 s to `duration_s` − 1.5 s of the command clock.
    pub duration_s: f64,
    /// Sim seconds per wall second (default 0.9), in (0, 100]; used only with a sim or split
    /// clock (a wall bag's truth has `sim_rtf: null`). A sim node at `command_hz` therefore
    /// publishes `command_hz · sim_rtf` times per wall second.
    pub sim_rtf: f64,
    /// `/arm_cmd` rate, Hz of the command node's clock (default 20): sim time in
    /// [`ClockMode::Sim`], wall time otherwise. Sets the truth's `/arm_cmd` count.
    pub command_hz: f64,
    /// `/joint_states` rate of sampled responses, Hz of the state publisher's clock (default
    /// 100; sim time with a sim or split clock). Unused for [`ResponseKind::Event`].
    pub state_hz: f64,
    /// Constant offset added to each joint's response position, radians, in command joint
    /// order `joint_1`…`joint_6` (default zeros; `arm_sim` offsets joint_3 by 0.015): what a
    /// matcher should report as the residual bias per joint.
    pub bias_rad: [f64; 6],
    /// Standard deviation of the Gaussian noise on every response position, radians (default
    /// 0.002; negative is taken as 0).
    pub noise_rad: f64,
    /// Zstd-compressed chunks (default true); false writes uncompressed chunks.
    pub zstd: bool,
    /// Optional TF (odom->base_link dynamic, world->odom static); messages then carry
    /// frame_id `base_link`.
    pub tf: Option<crate::tf::TfSynth>,
}

impl Default for ArmOptions {
    fn default() -> Self {
        ArmOptions {
            name: "arm".into(),
            seed: 1,
            clock: ClockMode::Wall,
            response: ResponseKind::Sampled,
            delay_s: 0.042,
            duration_s: 24.0,
            sim_rtf: 0.9,
            command_hz: 20.0,
            state_hz: 100.0,
            bias_rad: [0.0; 6],
            noise_rad: 0.002,
            zstd: true,
            tf: None,
        }
    }
}

/// Ground truth of an arm bag, written as `NAME.truth.json` beside it, in the same format as
/// the shared acceptance bags: what `match`, `clocks` and `check` must find.
#[derive(Debug, Clone, Serialize)]
pub struct ArmTruth {
    /// Always `"arm"`: which truth format this is.
    pub kind: &'static str,
    /// The bag's folder name (and MCAP file stem), relative to the truth file.
    pub bag: String,
    /// The command topic, `/arm_cmd` (`trajectory_msgs/msg/JointTrajectory`, one point).
    pub command_topic: String,
    /// The response topic, `/joint_states` (`sensor_msgs/msg/JointState`).
    pub response_topic: String,
    /// Joint names in the commands' order, `joint_1`…`joint_6`; `bias_rad` follows it.
    pub joints: Vec<String>,
    /// Joint names in the order the responses list them (a permutation of `joints`): a
    /// matcher must pair joints by name, not by index.
    pub response_name_order: Vec<String>,
    /// The command → response delay built into the bag, seconds: what delay estimation
    /// must recover.
    pub delay_s: f64,
    /// The axis the delay is measured on: `"stamps of the response topic"` (wall and sim
    /// bags) or `"wall clock (sim stamps mapped through /clock)"` (split bags).
    pub delay_axis: String,
    /// Sampled state publisher or one acknowledgement per command.
    pub response_kind: ResponseKind,
    /// Topic → `"wall"` or `"sim"`: the clock its header stamps are on (`/clock`, when
    /// present, is `"sim"`); what `clocks` must classify.
    pub clock_axes: std::collections::BTreeMap<String, String>,
    /// Topics without a header (`/gripper_cmd`, `std_msgs/msg/Float64` at 5 Hz): analyses
    /// must fall back to log time and say so.
    pub headerless_topics: Vec<String>,
    /// Whether commands are on wall time and responses on sim time (only some nodes had
    /// `use_sim_time`): comparing their stamps directly is wrong.
    pub split_clock: bool,
    /// Sim seconds per wall second of `/clock`; `null` when the bag has no sim clock.
    pub sim_rtf: Option<f64>,
    /// Seconds of the command clock, from the bag's start (wall) or sim time 0, between
    /// which the arm moves; it stands still before and after, so only this window carries
    /// information about the delay.
    pub motion_window_rel_s: [f64; 2],
    /// Constant per-joint offset of the responses, radians, in `joints` order.
    pub bias_rad: Vec<f64>,
    /// Standard deviation of the Gaussian noise on response positions, radians.
    pub noise_rad: f64,
    /// Topic → number of messages written.
    pub counts: std::collections::BTreeMap<String, u64>,
    /// The `bagscope synth` command line that writes this bag again (seed and any changed
    /// parameters).
    pub generator: String,
    /// The TF topics' truth, present only when TF is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tf: Option<crate::tf::TfTruth>,
}

/// Wall time at which every synthetic bag starts, nanoseconds since the Unix epoch
/// (2025-11-30 00:00:00 UTC): log times, and wall-clock stamps, count from here.
pub const WALL_START_NS: i64 = 1_764_460_800_000_000_000;

/// Joint trajectory on the command clock's relative time: still, then smooth motion with zero
/// velocity at both ends, then still again.
fn q(j: usize, t_rel_s: f64, window: [f64; 2]) -> f64 {
    let amp = [1.0, -0.8, 1.2, 0.7, -1.0, 0.9][j];
    let freq = [0.31, 0.37, 0.23, 0.43, 0.29, 0.47][j];
    let base = [0.0, 0.3, -0.2, 0.1, 0.0, -0.4][j];
    let t = t_rel_s.clamp(window[0], window[1]) - window[0];
    let len = window[1] - window[0];
    // A Hann-shaped envelope keeps the start and end still without a velocity step.
    let env = (std::f64::consts::PI * t / len).sin().powi(2);
    base + amp * env * (2.0 * std::f64::consts::PI * freq * t).sin()
}

/// The period of a rate in whole nanoseconds; the rate must be positive and finite.
pub(crate) fn period_ns(hz: f64, what: &str) -> Result<i64, SynthError> {
    if !(hz.is_finite() && hz > 0.0 && hz <= 1e6) {
        return Err(SynthError::Param(format!(
            "{what} must be a rate in (0, 1e6] Hz, got {hz}"
        )));
    }
    Ok((1e9 / hz).round() as i64)
}

/// The arm options' ranges: nothing is written when one is out of range.
fn check(o: &ArmOptions) -> Result<(), SynthError> {
    // The motion window starts at 2 s and ends 1.5 s before the end.
    if !(o.duration_s.is_finite() && o.duration_s >= 6.0) {
        return Err(SynthError::Param(format!(
            "an arm bag needs a duration of at least 6 s, got {}",
            o.duration_s
        )));
    }
    if !(o.delay_s.is_finite() && (0.0..=5.0).contains(&o.delay_s)) {
        return Err(SynthError::Param(format!(
            "the delay must be within 0-5 s, got {}",
            o.delay_s
        )));
    }
    if !(o.sim_rtf.is_finite() && o.sim_rtf > 0.0 && o.sim_rtf <= 100.0) {
        return Err(SynthError::Param(format!(
            "the real-time factor must be in (0, 100], got {}",
            o.sim_rtf
        )));
    }
    Ok(())
}

/// The header-less gripper command at 5 Hz (analyses must fall back to log time and say so)
/// and, with a simulated clock (`sim_of`: wall → sim time), `/clock` at 100 Hz: topics 2 and
/// 3. Their message counts.
fn gripper_and_clock(
    dur_ns: i64,
    sim_of: Option<&dyn Fn(i64) -> i64>,
    msgs: &mut Vec<Message>,
) -> Result<(i64, u64), SynthError> {
    let n_grip = dur_ns / 200_000_000;
    for k in 0..n_grip {
        let wall = WALL_START_NS + k * 200_000_000;
        let m = Float64 {
            data: if (k / 10) % 2 == 0 { 0.0 } else { 0.04 },
        };
        msgs.push(Message {
            topic: 2,
            log_time_ns: wall,
            publish_time_ns: wall,
            data: encode_typed(&m)?,
        });
    }
    let mut n_clock = 0u64;
    if let Some(sim_of) = sim_of {
        for k in 0..dur_ns / 10_000_000 {
            let wall = WALL_START_NS + k * 10_000_000;
            let m = Clock {
                clock: Time::from_ns(sim_of(wall)),
            };
            msgs.push(Message {
                topic: 3,
                log_time_ns: wall,
                publish_time_ns: wall,
                data: encode_typed(&m)?,
            });
            n_clock += 1;
        }
    }
    Ok((n_grip, n_clock))
}

/// The arm bag's topics, in message order: commands, joint states, gripper, `/clock`.
fn arm_topics() -> Vec<TopicSpec> {
    vec![
        TopicSpec {
            name: "/arm_cmd".into(),
            type_name: "trajectory_msgs/msg/JointTrajectory".into(),
        },
        TopicSpec {
            name: "/joint_states".into(),
            type_name: "sensor_msgs/msg/JointState".into(),
        },
        TopicSpec {
            name: "/gripper_cmd".into(),
            type_name: "std_msgs/msg/Float64".into(),
        },
        TopicSpec {
            name: "/clock".into(),
            type_name: "rosgraph_msgs/msg/Clock".into(),
        },
    ]
}

/// Writes the arm bag described by `o` into `dir/NAME/` and returns its truth (the caller
/// writes the truth file). Checks the parameters first: nothing is written when one is out of
/// range.
pub fn generate(dir: &Path, o: &ArmOptions) -> Result<ArmTruth, SynthError> {
    check(o)?;
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    // Header frame ids stay empty without TF (the shipped bags), as before.
    let frame = if o.tf.is_some() {
        "base_link".to_string()
    } else {
        String::new()
    };
    let noise =
        Normal::new(0.0, o.noise_rad.max(0.0)).map_err(|e| SynthError::Param(e.to_string()))?;
    let joints: Vec<String> = (1..=6).map(|i| format!("joint_{i}")).collect();
    let order = [2usize, 0, 1, 5, 3, 4];
    let resp_names: Vec<String> = order.iter().map(|&i| joints[i].clone()).collect();
    let window = [2.0, o.duration_s - 1.5];
    let topics = arm_topics();
    let with_clock = o.clock != ClockMode::Wall;
    let rtf = if with_clock { o.sim_rtf } else { 1.0 };
    let dur_ns = (o.duration_s * 1e9) as i64;
    // Wall time (recorder's log time axis) → the sim clock.
    let sim_of = |wall_ns: i64| ((wall_ns - WALL_START_NS) as f64 * rtf) as i64;
    let cmd_on_sim = o.clock == ClockMode::Sim;
    let resp_on_sim = o.clock != ClockMode::Wall;
    let mut msgs = Vec::new();
    let lag = |rng: &mut ChaCha8Rng| 500_000 + rng.random_range(0..1_500_000i64);

    // Commands every 1/command_hz of the command clock (50 ms by default). In sim mode the sim
    // clock drives the node, so a period of 50 ms sim is 50/rtf ms of wall time.
    let cmd_period_ns = period_ns(o.command_hz, "command_hz")?;
    let cmd_period_wall = (cmd_period_ns as f64 / if cmd_on_sim { rtf } else { 1.0 }) as i64;
    let n_cmd = dur_ns / cmd_period_ns;
    let mut cmd_times = Vec::new(); // (wall_ns, stamp_ns, rel_s on the command clock)
    for k in 0..n_cmd {
        let wall =
            WALL_START_NS + 30_000_000 + k * cmd_period_wall + rng.random_range(-300_000..300_000);
        let (stamp, rel_s) = if cmd_on_sim {
            let s = sim_of(wall);
            (s, s as f64 / 1e9)
        } else {
            (wall, (wall - WALL_START_NS) as f64 / 1e9)
        };
        cmd_times.push((wall, stamp, rel_s));
        let positions: Vec<f64> = (0..6).map(|j| q(j, rel_s, window)).collect();
        let m = JointTrajectory {
            header: Header {
                stamp: Time::from_ns(stamp),
                frame_id: frame.clone(),
            },
            joint_names: joints.clone(),
            points: vec![JointTrajectoryPoint {
                positions,
                time_from_start: Duration::from_ns(0),
                ..Default::default()
            }],
        };
        let log = wall + lag(&mut rng);
        msgs.push(Message {
            topic: 0,
            log_time_ns: log,
            publish_time_ns: log - 200_000,
            data: encode_typed(&m)?,
        });
    }

    let delay_ns = (o.delay_s * 1e9) as i64;
    let mut n_resp = 0u64;
    match o.response {
        ResponseKind::Event => {
            for &(wall, stamp, rel_s) in &cmd_times {
                let jitter = rng.random_range(-200_000..200_000);
                // The acknowledging node's clock: a split bag's responses are on sim time
                // (its truth says so), with the delay on the wall axis as for sampled
                // responses; otherwise the command's clock.
                let st = if resp_on_sim && !cmd_on_sim {
                    sim_of(wall + delay_ns + jitter)
                } else {
                    stamp + delay_ns + jitter
                };
                let pos_by_joint: Vec<f64> = (0..6)
                    .map(|j| q(j, rel_s, window) + o.bias_rad[j] + noise.sample(&mut rng))
                    .collect();
                let m = JointState {
                    header: Header {
                        stamp: Time::from_ns(st),
                        frame_id: frame.clone(),
                    },
                    name: resp_names.clone(),
                    position: order.iter().map(|&j| pos_by_joint[j]).collect(),
                    ..Default::default()
                };
                let log = wall + delay_ns + jitter + lag(&mut rng);
                msgs.push(Message {
                    topic: 1,
                    log_time_ns: log,
                    publish_time_ns: log - 200_000,
                    data: encode_typed(&m)?,
                });
                n_resp += 1;
            }
        }
        ResponseKind::Sampled => {
            // The state publisher runs at state_hz (100 Hz by default) of its own clock.
            let state_period_ns = period_ns(o.state_hz, "state_hz")?;
            let period_wall = (state_period_ns as f64 / if resp_on_sim { rtf } else { 1.0 }) as i64;
            let mut k = 0i64;
            loop {
                let wall = WALL_START_NS
                    + k * period_wall
                    + rng.random_range(-400_000..400_000)
                    + 5_000_000;
                if wall >= WALL_START_NS + dur_ns {
                    break;
                }
                k += 1;
                let stamp = if resp_on_sim { sim_of(wall) } else { wall };
                // The delay lives on the response stamps' axis for wall/sim, and on the wall
                // axis for split (where sim stamps are mapped back through /clock).
                let cmd_rel_s = match o.clock {
                    ClockMode::Wall => (wall - WALL_START_NS - delay_ns) as f64 / 1e9,
                    ClockMode::Sim => (stamp - delay_ns) as f64 / 1e9,
                    ClockMode::Split => (wall - WALL_START_NS - delay_ns) as f64 / 1e9,
                };
                let pos_by_joint: Vec<f64> = (0..6)
                    .map(|j| q(j, cmd_rel_s, window) + o.bias_rad[j] + noise.sample(&mut rng))
                    .collect();
                let m = JointState {
                    header: Header {
                        stamp: Time::from_ns(stamp),
                        frame_id: frame.clone(),
                    },
                    name: resp_names.clone(),
                    position: order.iter().map(|&j| pos_by_joint[j]).collect(),
                    velocity: vec![0.0; 6],
                    effort: vec![0.0; 6],
                };
                let log = wall + lag(&mut rng);
                msgs.push(Message {
                    topic: 1,
                    log_time_ns: log,
                    publish_time_ns: log - 200_000,
                    data: encode_typed(&m)?,
                });
                n_resp += 1;
            }
        }
    }

    let (n_grip, n_clock) = gripper_and_clock(dur_ns, with_clock.then_some(&sim_of), &mut msgs)?;
    let topics = if with_clock {
        topics
    } else {
        topics.into_iter().take(3).collect()
    };
    let mut topics = topics;
    let tf = match &o.tf {
        Some(t) => Some(crate::tf::add_tf(
            t,
            &mut topics,
            &mut msgs,
            WALL_START_NS,
            WALL_START_NS + dur_ns + 100_000_000,
            if resp_on_sim { rtf } else { 1.0 },
            // TF shares the joint states' clock.
            &|w| if resp_on_sim { sim_of(w) } else { w },
            ("odom", "base_link"),
            &[("world", "odom"), ("base_link", "tool0")],
        )?),
        None => None,
    };
    write_rosbag2(&dir.join(&o.name), &o.name, &topics, msgs, o.zstd)?;

    let axis = |sim: bool| if sim { "sim" } else { "wall" }.to_string();
    let mut clock_axes = std::collections::BTreeMap::new();
    clock_axes.insert("/arm_cmd".to_string(), axis(cmd_on_sim));
    clock_axes.insert("/joint_states".to_string(), axis(resp_on_sim));
    let mut counts = std::collections::BTreeMap::new();
    counts.insert("/arm_cmd".to_string(), n_cmd as u64);
    counts.insert("/joint_states".to_string(), n_resp);
    counts.insert("/gripper_cmd".to_string(), n_grip as u64);
    if with_clock {
        clock_axes.insert("/clock".to_string(), "sim".into());
        counts.insert("/clock".to_string(), n_clock);
    }
    Ok(ArmTruth {
        kind: "arm",
        bag: o.name.clone(),
        command_topic: "/arm_cmd".into(),
        response_topic: "/joint_states".into(),
        joints,
        response_name_order: resp_names,
        delay_s: o.delay_s,
        delay_axis: match o.clock {
            ClockMode::Split => "wall clock (sim stamps mapped through /clock)".into(),
            _ => "stamps of the response topic".into(),
        },
        response_kind: o.response,
        clock_axes,
        headerless_topics: vec!["/gripper_cmd".into()],
        split_clock: o.clock == ClockMode::Split,
        sim_rtf: with_clock.then_some(o.sim_rtf),
        motion_window_rel_s: window,
        bias_rad: o.bias_rad.to_vec(),
        noise_rad: o.noise_rad,
        counts,
        generator: format!("bagscope synth arm --seed {}", o.seed),
        tf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (topic, log time, header stamp) of every message of a written arm bag.
    fn read_back(path: &Path) -> Vec<(String, i64, i64)> {
        let bytes = std::fs::read(path).unwrap();
        mcap::MessageStream::new(&bytes)
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                // CDR: 4-byte encapsulation header, then the stamp (i32 sec, u32 nanosec).
                let d = &m.data;
                let sec = i32::from_le_bytes(d[4..8].try_into().unwrap()) as i64;
                let nsec = u32::from_le_bytes(d[8..12].try_into().unwrap()) as i64;
                (
                    m.channel.topic.clone(),
                    m.log_time as i64,
                    sec * 1_000_000_000 + nsec,
                )
            })
            .collect()
    }

    /// Acknowledgements in a split bag are stamped on the sim clock, as the truth says, the
    /// delay on the wall axis: each answers its command `delay` later (±0.2 ms jitter).
    #[test]
    fn split_clock_acknowledgements_are_on_sim_time() {
        let dir =
            std::env::temp_dir().join(format!("bagscope-synth-split-ack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let o = ArmOptions {
            name: "split_ack".into(),
            clock: ClockMode::Split,
            response: ResponseKind::Event,
            delay_s: 0.09,
            sim_rtf: 0.5,
            ..Default::default()
        };
        let truth = generate(&dir, &o).unwrap();
        assert_eq!(truth.clock_axes["/joint_states"], "sim");
        assert_eq!(truth.clock_axes["/arm_cmd"], "wall");
        let msgs = read_back(&dir.join("split_ack/split_ack.mcap"));
        let cmds: Vec<i64> = msgs
            .iter()
            .filter(|m| m.0 == "/arm_cmd")
            .map(|m| m.2)
            .collect();
        let acks: Vec<i64> = msgs
            .iter()
            .filter(|m| m.0 == "/joint_states")
            .map(|m| m.2)
            .collect();
        assert_eq!(cmds.len(), acks.len());
        assert!(!cmds.is_empty());
        for (c, a) in cmds.iter().zip(&acks) {
            // The command on wall time, its acknowledgement on sim time (rtf 0.5).
            assert!(*c >= WALL_START_NS, "command stamp {c}");
            let due = ((c + 90_000_000 - WALL_START_NS) as f64 * 0.5) as i64;
            assert!((a - due).abs() <= 100_000 + 1, "ack {a}, due {due}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Median period of ascending times.
    fn median_period(t: &[i64]) -> i64 {
        let mut d: Vec<i64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        d.sort_unstable();
        d[d.len() / 2]
    }

    /// The rate options set the stamps' cadence on each node's clock (sim time runs at rtf).
    #[test]
    fn rates_follow_the_options() {
        let dir = std::env::temp_dir().join(format!("bagscope-synth-rates-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let o = ArmOptions {
            name: "rates".into(),
            clock: ClockMode::Sim,
            sim_rtf: 0.5,
            command_hz: 10.0,
            state_hz: 250.0,
            duration_s: 10.0,
            ..Default::default()
        };
        let truth = generate(&dir, &o).unwrap();
        let msgs = read_back(&dir.join("rates/rates.mcap"));
        let _ = std::fs::remove_dir_all(&dir);
        let stamps = |topic: &str| -> Vec<i64> {
            let mut v: Vec<i64> = msgs.iter().filter(|m| m.0 == topic).map(|m| m.2).collect();
            v.sort_unstable();
            v
        };
        let (cmds, states) = (stamps("/arm_cmd"), stamps("/joint_states"));
        assert_eq!(cmds.len() as u64, truth.counts["/arm_cmd"]);
        assert_eq!(cmds.len(), 100);
        // ±0.3 / ±0.4 ms of jitter on wall time, halved on the sim clock.
        assert!((median_period(&cmds) - 100_000_000).abs() < 400_000);
        assert!((median_period(&states) - 4_000_000).abs() < 400_000);
        // Ten seconds of wall time at 250 Hz of a clock running at half speed.
        assert!((states.len() as i64 - 1250).abs() <= 2, "{}", states.len());
        assert!(generate(
            &dir,
            &ArmOptions {
                command_hz: 0.0,
                ..o.clone()
            }
        )
        .is_err());
    }
}
