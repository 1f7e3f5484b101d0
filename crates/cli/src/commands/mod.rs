pub mod info;
pub mod synth;
pub mod sync;
