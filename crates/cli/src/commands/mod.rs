pub mod info;
pub mod synth;
pub mod sync;
pub mod matching;
pub mod check;
pub mod clocks;
