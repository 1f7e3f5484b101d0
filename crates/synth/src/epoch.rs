//! The sim-reset scenario: a simulator on `/clock` that is reset mid-recording (its time jumps
//! back to the start of a new epoch) while the recorder runs on wall time, and joint states
//! stamped on the sim clock, which jump back with it.

use std::path::Path;

use bagscope_msg::encode_typed;
use bagscope_msg::types::{Clock, Header, JointState, Time};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::arm::{period_ns, WALL_START_NS};
use crate::writer::{write_rosbag2, Message, TopicSpec};
use crate::SynthError;

/// Parameters of the sim-reset bag ([`generate`]); the default is the shipped `sim_reset`.
#[derive(Debug, Clone)]
pub struct EpochOptions {
    /// Bag name (default `sim_reset`): the bag goes to `DIR/NAME/NAME.mcap`.
    pub name: String,
    /// Seed of the random stream (default 1) that draws each joint state's sampling time,
    /// 0.5–1.5 ms before it is received.
    pub seed: u64,
    /// Length of the recording, wall (log-time) seconds (default 20).
    pub duration_s: f64,
    /// Wall seconds from the start to the reset (default 9.5); at least five `/clock`
    /// periods from either end. The truth's `reset_log_time_*` fields say it.
    pub reset_at_s: f64,
    /// Sim time at the start of the recording, seconds (default 12.31: the simulator ran
    /// before it).
    pub sim_start_s: f64,
    /// Sim time right after the reset, seconds (default 0); must be earlier than the sim
    /// time just before it, so the reset is a backward jump.
    pub reset_to_s: f64,
    /// Sim seconds per wall second, in both epochs (default 1).
    pub sim_rtf: f64,
    /// `/clock` rate, Hz of wall (log) time (default 100).
    pub clock_hz: f64,
    /// `/joint_states` rate, Hz of wall (log) time (default 50): received every 1/state_hz
    /// from 3 ms on, stamped on the sim clock.
    pub state_hz: f64,
    /// Zstd-compressed chunks (default true).
    pub zstd: bool,
}

impl Default for EpochOptions {
    fn default() -> Self {
        EpochOptions {
            name: "sim_reset".into(),
            seed: 1,
            duration_s: 20.0,
            reset_at_s: 9.5,
            sim_start_s: 12.31,
            reset_to_s: 0.0,
            sim_rtf: 1.0,
            clock_hz: 100.0,
            state_hz: 50.0,
            zstd: true,
        }
    }
}

/// What `clocks` must find: one backward jump at the reset on each listed topic, and two sim
/// epochs.
#[derive(Debug, Clone, Serialize)]
pub struct EpochTruth {
    /// Always `"epoch"`: which truth format this is.
    pub kind: &'static str,
    /// The bag's folder name (and MCAP file stem), relative to the truth file.
    pub bag: String,
    /// Log time of the reset, seconds after the bag's start.
    pub reset_log_time_rel_s: f64,
    /// Log time of the reset, nanoseconds since the Unix epoch: where the backward jumps and
    /// the boundary between the two sim epochs must be reported.
    pub reset_log_time_ns: i64,
    /// Topics whose stamps jump back at the reset (`/clock` and `/joint_states`), one jump
    /// each.
    pub topics_with_backward_jump: Vec<String>,
    /// Sim seconds per wall second in both epochs: the rate `clocks` should estimate for each.
    pub sim_rtf: f64,
    /// Topic → number of messages written.
    pub counts: std::collections::BTreeMap<String, u64>,
    /// The `bagscope synth` command line that writes this bag again.
    pub generator: String,
}

/// Writes the sim-reset bag described by `o` into `dir/NAME/` and returns its truth (the
/// caller writes the truth file). Nothing is written when a parameter is out of range.
pub fn generate(dir: &Path, o: &EpochOptions) -> Result<EpochTruth, SynthError> {
    let clock_period = period_ns(o.clock_hz, "--clock-hz")?;
    let state_period = period_ns(o.state_hz, "--state-hz")?;
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(o.duration_s) || !positive(o.sim_rtf) || o.sim_start_s < 0.0 || o.reset_to_s < 0.0
    {
        return Err(SynthError::Param(
            "duration and rate must be positive, sim times not negative".into(),
        ));
    }
    let dur_ns = (o.duration_s * 1e9).round() as i64;
    let reset_ns = (o.reset_at_s * 1e9).round() as i64;
    // The reset must leave room for a few clock ticks on both sides to be an epoch each.
    if reset_ns < 5 * clock_period || reset_ns > dur_ns - 5 * clock_period {
        return Err(SynthError::Param(format!(
            "--reset-at {} must be inside the recording ({} s), five clock periods from either end",
            o.reset_at_s, o.duration_s
        )));
    }
    let before_ns = (o.sim_start_s * 1e9).round() as i64;
    let after_ns = (o.reset_to_s * 1e9).round() as i64;
    // A reset goes back: the sim time just before it must be later than just after it.
    let sim_before_reset = before_ns + (o.sim_rtf * reset_ns as f64).round() as i64;
    if after_ns >= sim_before_reset {
        return Err(SynthError::Param(format!(
            "sim time after the reset ({} s) must be earlier than before it ({} s)",
            o.reset_to_s,
            sim_before_reset as f64 / 1e9
        )));
    }
    // Sim time at `rel` wall nanoseconds from the start.
    let sim_of = |rel: i64| -> i64 {
        if rel < reset_ns {
            before_ns + (o.sim_rtf * rel as f64).round() as i64
        } else {
            after_ns + (o.sim_rtf * (rel - reset_ns) as f64).round() as i64
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    let mut msgs = Vec::new();
    let mut n_clock = 0u64;
    let mut rel = 0;
    while rel < dur_ns {
        msgs.push(Message {
            topic: 0,
            log_time_ns: WALL_START_NS + rel,
            publish_time_ns: WALL_START_NS + rel,
            data: encode_typed(&Clock {
                clock: Time::from_ns(sim_of(rel)),
            })?,
        });
        n_clock += 1;
        rel += clock_period;
    }
    // Joint states: sampled (stamped) on the sim clock, received 0.5-1.5 ms later.
    let mut n_state = 0u64;
    let mut rel = 3_000_000;
    while rel < dur_ns {
        let sampled = rel - rng.random_range(500_000..1_500_000i64);
        let m = JointState {
            header: Header {
                stamp: Time::from_ns(sim_of(sampled.max(0))),
                frame_id: "base_link".into(),
            },
            name: vec!["joint_1".into(), "joint_2".into()],
            position: vec![(n_state as f64 * 0.01).sin(), 0.5],
            velocity: vec![0.0, 0.0],
            effort: vec![0.0, 0.0],
        };
        msgs.push(Message {
            topic: 1,
            log_time_ns: WALL_START_NS + rel,
            publish_time_ns: WALL_START_NS + rel,
            data: encode_typed(&m)?,
        });
        n_state += 1;
        rel += state_period;
    }
    let topics = [
        ("/clock", "rosgraph_msgs/msg/Clock"),
        ("/joint_states", "sensor_msgs/msg/JointState"),
    ]
    .map(|(n, t)| TopicSpec {
        name: n.into(),
        type_name: t.into(),
    });
    write_rosbag2(&dir.join(&o.name), &o.name, &topics, msgs, o.zstd)?;
    let counts = [
        ("/clock".to_string(), n_clock),
        ("/joint_states".to_string(), n_state),
    ]
    .into_iter()
    .collect();
    Ok(EpochTruth {
        kind: "epoch",
        bag: o.name.clone(),
        reset_log_time_rel_s: o.reset_at_s,
        reset_log_time_ns: WALL_START_NS + reset_ns,
        topics_with_backward_jump: vec!["/clock".into(), "/joint_states".into()],
        sim_rtf: o.sim_rtf,
        counts,
        generator: format!("bagscope synth sim_reset --seed {}", o.seed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_must_go_back_and_lie_inside_the_recording() {
        let dir = std::env::temp_dir().join(format!("bagscope-epoch-{}", std::process::id()));
        let late = EpochOptions {
            reset_at_s: 19.99,
            ..Default::default()
        };
        assert!(generate(&dir, &late).is_err());
        let forward = EpochOptions {
            reset_to_s: 30.0,
            ..Default::default()
        };
        assert!(generate(&dir, &forward).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
