use std::path::PathBuf;

use bagscope_core::synth;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario to write: arm_wall, arm_sim, arm_split, arm_ack, sensors, sensors_bimodal, or
    /// `all`.
    pub scenario: String,
    /// Output folder; each bag goes into OUT/NAME/ with OUT/NAME.truth.json beside it.
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Random seed (the same seed writes the same bag).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let names: Vec<&str> = if a.scenario == "all" {
        synth::SCENARIOS.to_vec()
    } else {
        vec![a.scenario.as_str()]
    };
    let mut written = Vec::new();
    for n in names {
        let p = synth::generate(n, &a.out, a.seed)?;
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
