use std::path::PathBuf;

use bagscope_synth as synth;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Scenario to write: arm_wall, arm_sim, arm_split, arm_ack, sensors, sensors_bimodal,
    /// sim_reset, or `all`; with TF: arm_tf, sensors_tf; `perf`: the benchmark bag (--messages N);
    /// `perf_observe`: observe's benchmark bag (4 cameras at 30 Hz, 500 Hz state, --messages N).
    /// Not needed with --suite.
    #[arg(required_unless_present = "suite")]
    pub scenario: Option<String>,
    /// Output folder; each bag goes into OUT/NAME/ with OUT/NAME.truth.json beside it.
    #[arg(short = 'o', long = "output", visible_alias = "out", value_parser = crate::render::output_path, required_unless_present = "suite")]
    pub out: Option<PathBuf>,
    /// Write the synthetic fault suite instead: one small bag per case in DIR/NN_name/ with the
    /// decisions it must produce in DIR/NN_name.manifest.json.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["scenario", "out"])]
    pub suite: Option<PathBuf>,
    /// Random seed (the same seed writes the same bag).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Add TF to an arm/sensor scenario: rate of the dynamic odom->base_link edge (Hz).
    #[arg(long)]
    pub tf_rate: Option<f64>,
    /// Add TF to an arm/sensor scenario on this topic instead of /tf (e.g. /robot/tf).
    #[arg(long)]
    pub tf_topic: Option<String>,
    /// Name of the bag folder (and NAME.truth.json) instead of the scenario's.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Length of the recording in seconds (arm: 24, arm_ack: 12, sensors and sim_reset: 20).
    #[arg(long, value_name = "SEC")]
    pub duration: Option<f64>,
    /// Arm: command → response delay in seconds (arm_wall/arm_ack 0.042, arm_sim 0.025,
    /// arm_split 0.055).
    #[arg(long, value_name = "SEC", help_heading = "Scenario parameters")]
    pub delay: Option<f64>,
    /// Sim seconds per wall second: arm with a sim clock (arm_sim, arm_split: 0.9), sim_reset
    /// (1.0).
    #[arg(long, value_name = "R", help_heading = "Scenario parameters")]
    pub rtf: Option<f64>,
    /// Arm: command rate on the command node's clock (20).
    #[arg(long, value_name = "HZ", help_heading = "Scenario parameters")]
    pub command_hz: Option<f64>,
    /// Arm: joint-state rate on its publisher's clock (100); sim_reset: on the sim clock (50).
    #[arg(long, value_name = "HZ", help_heading = "Scenario parameters")]
    pub state_hz: Option<f64>,
    /// Sensors: camera image and camera info rate (20).
    #[arg(long, value_name = "HZ", help_heading = "Scenario parameters")]
    pub camera_hz: Option<f64>,
    /// Sensors: lidar rate (10).
    #[arg(long, value_name = "HZ", help_heading = "Scenario parameters")]
    pub lidar_hz: Option<f64>,
    /// Sensors: IMU rate (100).
    #[arg(long, value_name = "HZ", help_heading = "Scenario parameters")]
    pub imu_hz: Option<f64>,
    /// Sensors: camera receive lag, log time − capture, in seconds (0.010).
    #[arg(long, value_name = "SEC", help_heading = "Scenario parameters")]
    pub image_lag: Option<f64>,
    /// Sensors: lidar receive lag in seconds (0.090).
    #[arg(long, value_name = "SEC", help_heading = "Scenario parameters")]
    pub lidar_lag: Option<f64>,
    /// Sensors: every third image stamped this much later, in seconds (sensors_bimodal: 0.012).
    #[arg(long, value_name = "SEC", help_heading = "Scenario parameters")]
    pub bimodal_offset: Option<f64>,
    /// sim_reset: wall seconds from the start to the simulator's reset (9.5).
    #[arg(long, value_name = "SEC", help_heading = "Scenario parameters")]
    pub reset_at: Option<f64>,
    /// For the `perf` and `perf_observe` scenarios (benchmark bags): how many messages to write.
    #[arg(long, default_value_t = 3_000_000)]
    pub messages: u64,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(a: Args) -> anyhow::Result<u8> {
    // Both are folders: a device, a FIFO or a file there is refused before anything is made.
    for dir in a.suite.iter().chain(&a.out) {
        bagscope::outfile::check_output_dir(dir)
            .map_err(|e| anyhow::anyhow!("cannot write into {}: {e}", dir.display()))?;
    }
    if let Some(dir) = &a.suite {
        let cases = synth::suite::write_suite(dir)?;
        if a.json {
            crate::render::json(&serde_json::json!({ "suite": cases }))?;
        } else {
            for c in &cases {
                crate::render::print(&format!("wrote {} ({})\n", c.case, c.manifest))?;
            }
        }
        return Ok(0);
    }
    let (Some(scenario), Some(out)) = (&a.scenario, &a.out) else {
        return Err(synth::SynthError::Param(
            "a scenario and -o OUT are needed (or --suite DIR)".into(),
        )
        .into());
    };
    let ov = synth::Overrides {
        name: a.name.clone(),
        tf_rate_hz: a.tf_rate,
        tf_topic: a.tf_topic.clone(),
        duration_s: a.duration,
        delay_s: a.delay,
        sim_rtf: a.rtf,
        command_hz: a.command_hz,
        state_hz: a.state_hz,
        camera_hz: a.camera_hz,
        lidar_hz: a.lidar_hz,
        imu_hz: a.imu_hz,
        image_lag_s: a.image_lag,
        lidar_lag_s: a.lidar_lag,
        bimodal_offset_s: a.bimodal_offset,
        reset_at_s: a.reset_at,
    };
    if scenario == "perf" || scenario == "perf_observe" {
        if ov.changes_scenario() {
            return Err(synth::SynthError::Param(format!(
                "the {scenario} bag takes --messages, not scenario parameters"
            ))
            .into());
        }
        let p = if scenario == "perf" {
            synth::perf::generate(out, a.messages)?
        } else {
            synth::perf::generate_observe(out, a.messages)?
        };
        crate::render::print(&format!("wrote {}\n", p.display()))?;
        return Ok(0);
    }
    let paths = if scenario == "all" {
        synth::generate_all(out, a.seed, &ov)?
    } else {
        vec![synth::generate_with(scenario, out, a.seed, &ov)?]
    };
    let written: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    if a.json {
        crate::render::json(&serde_json::json!({ "written": written }))?;
    } else {
        for w in &written {
            crate::render::print(&format!("wrote {w}\n"))?;
        }
    }
    Ok(0)
}
