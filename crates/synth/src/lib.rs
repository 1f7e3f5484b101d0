//! Synthetic rosbag2 bags with known ground truth (`*.truth.json` beside each bag), for the
//! README's example, the tests, and users who want to test their own pipelines.
//!
//! # In the workspace
//!
//! Synthetic rosbag2 bags with ground truth (`bags/` is made by it: arms on wall / sim / split
//! clocks, sensors with cadence faults, a sim reset); optional TF; the fault suite with
//! manifests (`synth --suite`); writes its files with its own `mcap` writer, since its cases
//! need exact layouts (chunk sizes, uncompressed chunks, damaged files).
//!
//! Notable dependencies: `mcap` (writer), `bagscope-msg`, `rand`, `rand_chacha`, `rand_distr`,
//! `serde_json`.

pub mod arm;
pub mod epoch;
pub mod observe;
pub mod perf;
pub mod sensors;
pub mod suite;
pub mod tf;
mod writer;

use std::path::{Path, PathBuf};

pub use arm::{ArmOptions, ArmTruth, ClockMode, ResponseKind};
pub use epoch::{EpochOptions, EpochTruth};
pub use observe::{write_observe, ObserveSynth, ObserveTruth};
pub use sensors::{SensorOptions, SensorTruth};
pub use tf::{TfSynth, TfTruth};

/// Why a bag, truth file or manifest could not be written. Parameters are checked before
/// anything is written, so a [`SynthError::Param`] leaves the output folder untouched.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// A folder, `.mcap`, `metadata.yaml`, truth or manifest file could not be created or
    /// written: the path and the operating system's error.
    #[error("cannot write {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// The MCAP writer failed (header, schema, channel, message, chunk or summary record).
    #[error("MCAP writer: {0}")]
    Mcap(#[from] mcap::McapError),
    /// A topic's type has no built-in message definition in `bagscope-msg`, so its schema
    /// could not be written: the ROS type name.
    #[error("no built-in definition for {0}")]
    UnknownType(String),
    /// A message could not be CDR-encoded by `bagscope-msg`'s typed encoder.
    #[error("CDR encoding: {0}")]
    Encode(#[from] bagscope_msg::TypedError),
    /// A parameter is out of range or does not apply (a rate ≤ 0, a delay over 5 s, a flag
    /// for another scenario, a bad bag name), or the truth could not be serialised: what is
    /// wrong, naming the parameter.
    #[error("invalid parameter: {0}")]
    Param(String),
    /// The scenario name is not one of [`SCENARIOS`] or [`TF_SCENARIOS`]: the name given and
    /// the known names, comma-separated.
    #[error("unknown scenario '{0}' (known: {1})")]
    UnknownScenario(String, String),
}

/// Named scenarios, each a fixed set of options: the bags shipped in `bags/` are made from these.
pub const SCENARIOS: &[&str] = &[
    "arm_wall",
    "arm_sim",
    "arm_split",
    "arm_ack",
    "sensors",
    "sensors_bimodal",
    "sim_reset",
];

/// Scenarios with TF (not in `all`, so `bags/` is unchanged): `arm_tf` is `arm_wall` with
/// odom->base_link at 100 Hz on `/tf`; `sensors_tf` is `sensors` with it at 50 Hz.
pub const TF_SCENARIOS: &[&str] = &["arm_tf", "sensors_tf"];

/// Whether scenario `name` can carry TF (`--tf-rate`, `--tf-topic`): the arm and sensor ones.
pub fn takes_tf(name: &str) -> bool {
    name.starts_with("arm_") || name.starts_with("sensors")
}

/// Changes to a scenario's parameters (`bagscope synth SCENARIO --delay 0.1 …`), so that the
/// analyses can be checked against ground truth at other rates, delays and lags than the
/// shipped bags'. Each field set replaces the scenario's value and the truth file follows;
/// any TF field turns TF on for an arm or sensor scenario. A field that does not apply to the
/// scenario is an error, not ignored.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The bag's name (folder and truth file) instead of the scenario's.
    pub name: Option<String>,
    /// Rate of the dynamic odom->base_link TF edge, Hz of the stamps' clock (the joint
    /// states' clock for arms, wall for sensors); defaults to 100 (arm) or 50 (sensors) when
    /// TF is on. Setting it turns TF on; the truth gains a `tf` section.
    pub tf_rate_hz: Option<f64>,
    /// Topic of the dynamic TF edge instead of `/tf` (e.g. `/robot/tf`); statics stay on
    /// `/tf_static`. Setting it turns TF on.
    pub tf_topic: Option<String>,
    /// Length of the recording, wall seconds (arm 24, arm_ack 12, sensors and sim_reset 20):
    /// sets how many messages each topic gets and, for arms, where the motion window ends.
    pub duration_s: Option<f64>,
    /// Arm scenarios: command → response delay, seconds (arm_wall/arm_ack 0.042, arm_sim
    /// 0.025, arm_split 0.055), on the axis the truth's `delay_axis` names.
    pub delay_s: Option<f64>,
    /// Scenarios with a sim clock (arm_sim, arm_split: 0.9; sim_reset: 1.0): sim seconds per
    /// wall second, the rate `/clock` advances against log time.
    pub sim_rtf: Option<f64>,
    /// Arm scenarios: `/arm_cmd` rate, Hz of the command node's clock (default 20; sim time
    /// in arm_sim, wall time otherwise).
    pub command_hz: Option<f64>,
    /// Arm scenarios: `/joint_states` rate of the sampled responses, Hz of the state
    /// publisher's clock (default 100; sim time in arm_sim/arm_split); sim_reset: its joint
    /// states' rate (default 50).
    pub state_hz: Option<f64>,
    /// Sensor scenarios: `/camera/image_raw` and `/camera/camera_info` rate, Hz of the stamps
    /// (wall) clock (default 20). The truth's `rates_hz`, counts and half-period tolerances
    /// follow.
    pub camera_hz: Option<f64>,
    /// Sensor scenarios: `/lidar/points` rate, Hz (default 10).
    pub lidar_hz: Option<f64>,
    /// Sensor scenarios: `/imu/data` rate, Hz (default 100).
    pub imu_hz: Option<f64>,
    /// Sensor scenarios: camera receive lag, log time − capture stamp, seconds (default
    /// 0.010, ±1 ms of jitter in the bag).
    pub image_lag_s: Option<f64>,
    /// Sensor scenarios: lidar receive lag, log time − stamp, seconds (default 0.090, ±2 ms
    /// of jitter in the bag).
    pub lidar_lag_s: Option<f64>,
    /// Sensor scenarios: every third image stamped this many seconds later
    /// (`sensors_bimodal`'s is 0.012; `sensors` has none); the truth's `bimodal_frames`
    /// lists them.
    pub bimodal_offset_s: Option<f64>,
    /// `sim_reset`: wall seconds from the start to the simulator's reset (default 9.5).
    pub reset_at_s: Option<f64>,
}

impl Overrides {
    /// Whether anything but TF is changed (a renamed or re-parameterised scenario).
    pub fn changes_scenario(&self) -> bool {
        self.name.is_some()
            || [
                self.duration_s,
                self.delay_s,
                self.sim_rtf,
                self.command_hz,
                self.state_hz,
                self.camera_hz,
                self.lidar_hz,
                self.imu_hz,
                self.image_lag_s,
                self.lidar_lag_s,
                self.bimodal_offset_s,
                self.reset_at_s,
            ]
            .iter()
            .any(Option::is_some)
    }

    /// The parameters set, as `synth`'s options (for the truth's `generator`).
    fn describe(&self) -> String {
        let mut out = String::new();
        let mut num = |flag: &str, v: Option<f64>| {
            if let Some(v) = v {
                out.push_str(&format!(" --{flag} {v}"));
            }
        };
        num("tf-rate", self.tf_rate_hz);
        num("duration", self.duration_s);
        num("delay", self.delay_s);
        num("rtf", self.sim_rtf);
        num("command-hz", self.command_hz);
        num("state-hz", self.state_hz);
        num("camera-hz", self.camera_hz);
        num("lidar-hz", self.lidar_hz);
        num("imu-hz", self.imu_hz);
        num("image-lag", self.image_lag_s);
        num("lidar-lag", self.lidar_lag_s);
        num("bimodal-offset", self.bimodal_offset_s);
        num("reset-at", self.reset_at_s);
        if let Some(t) = &self.tf_topic {
            out.push_str(&format!(" --tf-topic {t}"));
        }
        if let Some(n) = &self.name {
            out.push_str(&format!(" --name {n}"));
        }
        out
    }

    /// Names of the fields set that do not apply to scenario `name`.
    fn misplaced(&self, name: &str) -> Vec<&'static str> {
        let arm = name.starts_with("arm_");
        let sensors = name.starts_with("sensors");
        let reset = name == "sim_reset";
        // (flag, set, applies to `name`)
        let flags = [
            ("--delay", self.delay_s.is_some(), arm),
            // Only these have a sim clock whose rate --rtf could set.
            (
                "--rtf",
                self.sim_rtf.is_some(),
                reset || matches!(name, "arm_sim" | "arm_split"),
            ),
            ("--command-hz", self.command_hz.is_some(), arm),
            ("--state-hz", self.state_hz.is_some(), arm || reset),
            ("--camera-hz", self.camera_hz.is_some(), sensors),
            ("--lidar-hz", self.lidar_hz.is_some(), sensors),
            ("--imu-hz", self.imu_hz.is_some(), sensors),
            ("--image-lag", self.image_lag_s.is_some(), sensors),
            ("--lidar-lag", self.lidar_lag_s.is_some(), sensors),
            ("--bimodal-offset", self.bimodal_offset_s.is_some(), sensors),
            ("--reset-at", self.reset_at_s.is_some(), reset),
            ("--tf-rate", self.tf_rate_hz.is_some(), takes_tf(name)),
            ("--tf-topic", self.tf_topic.is_some(), takes_tf(name)),
        ];
        flags
            .iter()
            .filter(|(_, set, applies)| *set && !applies)
            .map(|(f, _, _)| *f)
            .collect()
    }
}

/// Writes scenario `name` into `dir/name/` and its truth into `dir/name.truth.json`.
pub fn generate(name: &str, dir: &Path, seed: u64) -> Result<PathBuf, SynthError> {
    generate_with(name, dir, seed, &Overrides::default())
}

/// The TF option for scenario `name`: its default (TF scenarios), changed by `ov`.
fn tf_option(name: &str, default_hz: f64, ov: &Overrides) -> Option<TfSynth> {
    let on = name.ends_with("_tf") || ov.tf_rate_hz.is_some() || ov.tf_topic.is_some();
    on.then(|| {
        let mut t = TfSynth::new(ov.tf_rate_hz.unwrap_or(default_hz));
        if let Some(topic) = &ov.tf_topic {
            t.topic = topic.clone();
        }
        t
    })
}

/// Every scenario of [`SCENARIOS`] (what `bags/` holds). Only TF may be changed: it goes to
/// the scenarios that carry it ([`takes_tf`]), not to the others.
pub fn generate_all(dir: &Path, seed: u64, ov: &Overrides) -> Result<Vec<PathBuf>, SynthError> {
    if ov.changes_scenario() {
        // One name or parameter set for arm and sensor scenarios alike makes no sense.
        return Err(SynthError::Param(
            "scenario parameters and --name need one scenario, not `all`".into(),
        ));
    }
    let no_tf = Overrides {
        tf_rate_hz: None,
        tf_topic: None,
        ..ov.clone()
    };
    SCENARIOS
        .iter()
        .map(|&n| generate_with(n, dir, seed, if takes_tf(n) { ov } else { &no_tf }))
        .collect()
}

/// [`generate`] with the scenario's parameters changed by `ov`; the bag goes into
/// `dir/NAME/` and its truth into `dir/NAME.truth.json`, NAME being `ov.name` or the
/// scenario's.
pub fn generate_with(
    name: &str,
    dir: &Path,
    seed: u64,
    ov: &Overrides,
) -> Result<PathBuf, SynthError> {
    let bag_name = ov.name.clone().unwrap_or_else(|| name.to_string());
    if bag_name.is_empty() || bag_name.contains(['/', '\\']) || bag_name.starts_with('.') {
        return Err(SynthError::Param(format!(
            "'{bag_name}' cannot name a bag folder"
        )));
    }
    if SCENARIOS.contains(&name) || TF_SCENARIOS.contains(&name) {
        let wrong = ov.misplaced(name);
        if !wrong.is_empty() {
            return Err(SynthError::Param(format!(
                "{} do(es) not apply to {name}",
                wrong.join(", ")
            )));
        }
    }
    let extra = ov.describe();
    let truth = match name {
        "arm_wall" | "arm_sim" | "arm_split" | "arm_ack" | "arm_tf" => {
            let mut o = ArmOptions {
                name: bag_name.clone(),
                seed,
                tf: tf_option(name, 100.0, ov),
                ..Default::default()
            };
            match name {
                "arm_sim" => {
                    o.clock = ClockMode::Sim;
                    o.delay_s = 0.025;
                    o.bias_rad = [0.0, 0.0, 0.015, 0.0, 0.0, 0.0];
                }
                "arm_split" => {
                    o.clock = ClockMode::Split;
                    o.delay_s = 0.055;
                }
                "arm_ack" => {
                    o.response = ResponseKind::Event;
                    o.duration_s = 12.0;
                }
                _ => {}
            }
            o.duration_s = ov.duration_s.unwrap_or(o.duration_s);
            o.delay_s = ov.delay_s.unwrap_or(o.delay_s);
            o.sim_rtf = ov.sim_rtf.unwrap_or(o.sim_rtf);
            o.command_hz = ov.command_hz.unwrap_or(o.command_hz);
            o.state_hz = ov.state_hz.unwrap_or(o.state_hz);
            let mut t = arm::generate(dir, &o)?;
            if !extra.is_empty() {
                t.generator = format!("bagscope synth {name} --seed {seed}{extra}");
            }
            serde_json::to_string_pretty(&t)
        }
        "sensors" | "sensors_bimodal" | "sensors_tf" => {
            let mut o = SensorOptions {
                name: bag_name.clone(),
                seed,
                tf: tf_option(name, 50.0, ov),
                ..Default::default()
            };
            if name == "sensors_bimodal" {
                o.bimodal_offset_s = Some(0.012);
                o.faults = false;
            }
            o.duration_s = ov.duration_s.unwrap_or(o.duration_s);
            o.camera_hz = ov.camera_hz.unwrap_or(o.camera_hz);
            o.lidar_hz = ov.lidar_hz.unwrap_or(o.lidar_hz);
            o.imu_hz = ov.imu_hz.unwrap_or(o.imu_hz);
            o.image_lag_s = ov.image_lag_s.unwrap_or(o.image_lag_s);
            o.lidar_lag_s = ov.lidar_lag_s.unwrap_or(o.lidar_lag_s);
            if ov.bimodal_offset_s.is_some() {
                o.bimodal_offset_s = ov.bimodal_offset_s;
            }
            let mut t = sensors::generate(dir, &o)?;
            if !extra.is_empty() {
                t.generator = format!("bagscope synth {name} --seed {seed}{extra}");
            }
            serde_json::to_string_pretty(&t)
        }
        "sim_reset" => {
            let d = EpochOptions::default();
            let o = EpochOptions {
                name: bag_name.clone(),
                seed,
                duration_s: ov.duration_s.unwrap_or(d.duration_s),
                reset_at_s: ov.reset_at_s.unwrap_or(d.reset_at_s),
                sim_rtf: ov.sim_rtf.unwrap_or(d.sim_rtf),
                state_hz: ov.state_hz.unwrap_or(d.state_hz),
                ..d
            };
            let mut t = epoch::generate(dir, &o)?;
            if !extra.is_empty() {
                t.generator = format!("bagscope synth {name} --seed {seed}{extra}");
            }
            serde_json::to_string_pretty(&t)
        }
        other => {
            return Err(SynthError::UnknownScenario(
                other.to_string(),
                [SCENARIOS, TF_SCENARIOS].concat().join(", "),
            ));
        }
    }
    .map_err(|e| SynthError::Param(e.to_string()))?;
    let p = dir.join(format!("{bag_name}.truth.json"));
    std::fs::write(&p, truth + "\n").map_err(|e| SynthError::Io(p.clone(), e))?;
    Ok(dir.join(bag_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_that_do_not_apply_are_errors() {
        let dir = std::env::temp_dir().join(format!("bagscope-synth-ov-{}", std::process::id()));
        let arm_on_sensors = Overrides {
            delay_s: Some(0.1),
            ..Default::default()
        };
        let e = generate_with("sensors", &dir, 1, &arm_on_sensors).unwrap_err();
        assert!(e.to_string().contains("--delay"), "{e}");
        let sensors_on_arm = Overrides {
            lidar_hz: Some(5.0),
            ..Default::default()
        };
        let e = generate_with("arm_wall", &dir, 1, &sensors_on_arm).unwrap_err();
        assert!(e.to_string().contains("--lidar-hz"), "{e}");
        // A wall-clock arm has no sim clock for --rtf to set.
        let rtf = Overrides {
            sim_rtf: Some(0.5),
            ..Default::default()
        };
        for wall in ["arm_wall", "arm_ack", "arm_tf"] {
            let e = generate_with(wall, &dir, 1, &rtf).unwrap_err();
            assert!(e.to_string().contains("--rtf"), "{wall}: {e}");
        }
        let bad_name = Overrides {
            name: Some("../x".into()),
            ..Default::default()
        };
        assert!(generate_with("arm_wall", &dir, 1, &bad_name).is_err());
        // Nothing was written.
        assert!(!dir.exists());
    }

    #[test]
    fn tf_alone_does_not_change_the_scenario() {
        let tf = Overrides {
            tf_rate_hz: Some(30.0),
            tf_topic: Some("/robot/tf".into()),
            ..Default::default()
        };
        assert!(!tf.changes_scenario());
        assert!(!Overrides::default().changes_scenario());
        let renamed = Overrides {
            name: Some("x".into()),
            ..tf
        };
        assert!(renamed.changes_scenario());
        assert_eq!(
            renamed.describe(),
            " --tf-rate 30 --tf-topic /robot/tf --name x"
        );
    }
}
