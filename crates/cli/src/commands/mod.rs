pub mod info;
pub mod synth;
