pub mod check;
pub mod clocks;
pub mod info;
pub mod matching;
pub mod sync;
pub mod synth;
