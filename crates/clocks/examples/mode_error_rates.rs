//! Error rates of the lag-mode finder (`lag_modes_ns`) over a grid of distribution shapes and
//! sample sizes: how often a unimodal sample is called multimodal, and how often two modes are
//! missed. For retuning `ModeOptions`; the thresholds can be overridden from the environment
//! (`MODES_SEP`, `MODES_VALLEY`, `MODES_DIPZ`, `MODES_SMALL`, `MODES_STRONG`, `MODES_KS`).
//!
//!     cargo run --release -p bagscope-clocks --example mode_error_rates

use bagscope_clocks::*;

const MS: i64 = 1_000_000;

/// A small deterministic generator, so every run prints the same rates.
struct Lcg(u64);
impl Lcg {
    fn u(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        // Box-Muller.
        let (a, b) = (self.u(), self.u());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

/// The default options, with overrides for retuning from MODES_SEP, MODES_VALLEY, MODES_DIPZ,
/// MODES_SMALL.
fn scan_options() -> ModeOptions {
    let env = |k: &str, d: f64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let d = ModeOptions::default();
    ModeOptions {
        min_separation: env("MODES_SEP", d.min_separation),
        max_valley_ratio: env("MODES_VALLEY", d.max_valley_ratio),
        min_dip_z: env("MODES_DIPZ", d.min_dip_z),
        small_sample: env("MODES_SMALL", d.small_sample),
        strong_dip_z: env("MODES_STRONG", d.strong_dip_z),
        uniform_ks: env("MODES_KS", d.uniform_ks),
        ..d
    }
}

/// Error rates of the mode finder over a grid of shapes (for retuning `ModeOptions`).
fn scan_rates() {
    let o = scan_options();
    for &n in &[100usize, 200, 400, 1000] {
        for shape in 0..4u8 {
            let mut bad = 0;
            for seed in 0..300u64 {
                let mut r = Lcg(seed * 7 + 1);
                let s = 1e6;
                let v: Vec<i64> = (0..n)
                    .map(|_| {
                        10 * MS
                            + match shape {
                                0 => s * r.normal(),
                                1 => s * r.normal().abs(),
                                2 => -s * r.u().ln(),
                                _ => 4.0 * s * r.u(),
                            } as i64
                    })
                    .collect();
                if lag_modes_ns(&v, &o).len() != 1 {
                    bad += 1;
                }
            }
            eprintln!("unimodal n={n} shape={shape}: false multi {bad}/300");
        }
        for &sep in &[4.0f64, 5.0] {
            for &frac in &[0.15f64, 0.2, 1.0 / 3.0] {
                let mut miss = 0;
                for seed in 0..300u64 {
                    let mut r = Lcg(seed * 13 + 5);
                    let s = 1e6;
                    let v: Vec<i64> = (0..n)
                        .map(|i| {
                            let shifted = (i as f64 + 0.5) / n as f64 <= frac;
                            (10e6 + if shifted { sep * s } else { 0.0 } + s * r.normal()) as i64
                        })
                        .collect();
                    if lag_modes_ns(&v, &o).len() != 2 {
                        miss += 1;
                    }
                }
                eprintln!("bimodal n={n} sep={sep} frac={frac:.2}: miss {miss}/300");
            }
        }
    }
}

/// Error rates on uniform jitter (what a timer driver with bounded jitter gives): one uniform
/// block, and two blocks (a third of the values a fixed offset later, as an exposure-end stamp
/// on every third frame). Prints only.
fn scan_uniform_rates() {
    let o = scan_options();
    eprintln!("{o:?}");
    for &n in &[60usize, 100, 133, 200, 400, 1000, 3000] {
        let mut bad = 0;
        for seed in 0..500u64 {
            let mut r = Lcg(seed * 7 + 3);
            let v: Vec<i64> = (0..n).map(|_| 10 * MS + (2e6 * r.u()) as i64).collect();
            if lag_modes_ns(&v, &o).len() != 1 {
                bad += 1;
            }
        }
        let mut miss = 0;
        for seed in 0..500u64 {
            let mut r = Lcg(seed * 11 + 9);
            let v: Vec<i64> = (0..n)
                .map(|i| {
                    let off = if i % 3 == 2 { 13 * MS } else { 0 };
                    10 * MS + off + (2e6 * r.u()) as i64
                })
                .collect();
            if lag_modes_ns(&v, &o).len() != 2 {
                miss += 1;
            }
        }
        eprintln!("uniform n={n}: false multi {bad}/500; two blocks: wrong count {miss}/500");
    }
}

fn main() {
    scan_rates();
    scan_uniform_rates();
}
