//! Synthetic rosbag2 bags with known ground truth (`*.truth.json` beside each bag), for the
//! README's example, the tests, and users who want to test their own pipelines.

pub mod arm;
pub mod perf;
pub mod sensors;
pub mod suite;
pub mod tf;
mod writer;

use std::path::{Path, PathBuf};

pub use arm::{ArmOptions, ArmTruth, ClockMode, ResponseKind};
pub use sensors::{SensorOptions, SensorTruth};
pub use tf::{TfSynth, TfTruth};

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("cannot write {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("MCAP writer: {0}")]
    Mcap(#[from] mcap::McapError),
    #[error("no built-in definition for {0}")]
    UnknownType(String),
    #[error("CDR encoding: {0}")]
    Encode(#[from] bagscope_msg::TypedError),
    #[error("invalid parameter: {0}")]
    Param(String),
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
];

/// Scenarios with TF (not in `all`, so `bags/` is unchanged): `arm_tf` is `arm_wall` with
/// odom->base_link at 100 Hz on `/tf`; `sensors_tf` is `sensors` with it at 50 Hz.
pub const TF_SCENARIOS: &[&str] = &["arm_tf", "sensors_tf"];

/// Overrides of the TF option; any field set turns TF on for an arm or sensor scenario.
#[derive(Debug, Clone, Default)]
pub struct TfOverride {
    pub rate_hz: Option<f64>,
    pub topic: Option<String>,
}

/// Writes scenario `name` into `dir/name/` and its truth into `dir/name.truth.json`.
pub fn generate(name: &str, dir: &Path, seed: u64) -> Result<PathBuf, SynthError> {
    generate_with(name, dir, seed, &TfOverride::default())
}

/// The TF option for scenario `name`: its default (TF scenarios), changed by `ov`.
fn tf_option(name: &str, default_hz: f64, ov: &TfOverride) -> Option<TfSynth> {
    let on = name.ends_with("_tf") || ov.rate_hz.is_some() || ov.topic.is_some();
    on.then(|| {
        let mut t = TfSynth::new(ov.rate_hz.unwrap_or(default_hz));
        if let Some(topic) = &ov.topic {
            t.topic = topic.clone();
        }
        t
    })
}

/// [`generate`] with TF overrides (`--tf-rate`, `--tf-topic`).
pub fn generate_with(
    name: &str,
    dir: &Path,
    seed: u64,
    ov: &TfOverride,
) -> Result<PathBuf, SynthError> {
    let truth = match name {
        "arm_wall" | "arm_sim" | "arm_split" | "arm_ack" | "arm_tf" => {
            let mut o = ArmOptions {
                name: name.to_string(),
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
            serde_json::to_string_pretty(&arm::generate(dir, &o)?)
        }
        "sensors" | "sensors_bimodal" | "sensors_tf" => {
            let mut o = SensorOptions {
                name: name.to_string(),
                seed,
                tf: tf_option(name, 50.0, ov),
                ..Default::default()
            };
            if name == "sensors_bimodal" {
                o.bimodal_offset_s = Some(0.012);
                o.faults = false;
            }
            serde_json::to_string_pretty(&sensors::generate(dir, &o)?)
        }
        other => {
            return Err(SynthError::UnknownScenario(
                other.to_string(),
                [SCENARIOS, TF_SCENARIOS].concat().join(", "),
            ));
        }
    }
    .map_err(|e| SynthError::Param(e.to_string()))?;
    let p = dir.join(format!("{name}.truth.json"));
    std::fs::write(&p, truth + "\n").map_err(|e| SynthError::Io(p.clone(), e))?;
    Ok(dir.join(name))
}
