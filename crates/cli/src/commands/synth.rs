use std::path::PathBuf;

use bagscope_core::synth;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario to write: arm_wall, arm_sim, arm_split, arm_ack, sensors, sensors_bimodal, or
    /// `all`; with TF: arm_tf, sensors_tf; `perf`: the benchmark bag (--messages N).
    /// Not needed with --suite.
    #[arg(required_unless_present = "suite")]
    pub scenario: Option<String>,
    /// Output folder; each bag goes into OUT/NAME/ with OUT/NAME.truth.json beside it.
    #[arg(short = 'o', long = "out", required_unless_present = "suite")]
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
    /// For the `perf` scenario (the benchmark bag): how many messages to write.
    #[arg(long, default_value_t = 3_000_000)]
    pub messages: u64,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    if let Some(dir) = &a.suite {
        let cases = bagscope_core::suite::write_suite(dir)?;
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
        anyhow::bail!("a scenario and -o OUT are needed (or --suite DIR)");
    };
    if scenario == "perf" {
        let p = synth::perf::generate(out, a.messages)?;
        crate::render::print(&format!("wrote {}\n", p.display()))?;
        return Ok(0);
    }
    let names: Vec<&str> = if scenario == "all" {
        synth::SCENARIOS.to_vec()
    } else {
        vec![scenario.as_str()]
    };
    let ov = synth::TfOverride {
        rate_hz: a.tf_rate,
        topic: a.tf_topic.clone(),
    };
    let mut written = Vec::new();
    for n in names {
        let p = synth::generate_with(n, out, a.seed, &ov)?;
        written.push(p.display().to_string());
    }
    if a.json {
        crate::render::json(&serde_json::json!({ "written": written }))?;
    } else {
        for w in &written {
            crate::render::print(&format!("wrote {w}\n"))?;
        }
    }
    Ok(0)
}
