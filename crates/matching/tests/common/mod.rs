//! Synthetic command/response streams shaped like the test bags.
#![allow(dead_code)]

use bagscope_matching::JointSeries;

/// Small deterministic PRNG (no extra dependency).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

pub(crate) const JOINTS: [&str; 6] = [
    "joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6",
];
/// Responses list the joints in another order, as in the bags.
pub(crate) const RESP_ORDER: [usize; 6] = [2, 0, 1, 5, 3, 4];

pub(crate) struct Synth {
    pub t0_ns: i64,
    pub n_cmd: usize,
    pub cmd_period_ns: i64,
    pub resp_period_ns: i64,
    pub warm_up_ns: i64,
    pub delay_ns: i64,
    pub bias: [f64; 6],
    pub noise: f64,
    pub jitter_ns: i64,
    pub seed: u64,
}

impl Default for Synth {
    fn default() -> Self {
        Synth {
            t0_ns: 1_764_460_800_000_000_000,
            n_cmd: 300,
            cmd_period_ns: 50_000_000,
            resp_period_ns: 10_000_000,
            warm_up_ns: 2_000_000_000,
            delay_ns: 42_000_000,
            bias: [0.0; 6],
            noise: 0.002,
            jitter_ns: 1_000_000,
            seed: 7,
        }
    }
}

impl Synth {
    /// Joint `j` at `t_ns`: still until the warm-up ends, then a sinusoid (≤ ~1 rad/s).
    pub(crate) fn traj(&self, j: usize, t_ns: i64) -> f64 {
        let amp = [0.8, 0.5, 1.0, 0.6, 0.9, 0.7][j];
        let w = [1.1, 1.7, 0.9, 1.4, 1.0, 1.3][j];
        let p0 = [0.3, -0.2, 0.1, 0.4, -0.5, 0.0][j];
        let rel = (t_ns - self.t0_ns - self.warm_up_ns) as f64 * 1e-9;
        if rel <= 0.0 {
            p0
        } else {
            p0 + amp * (w * rel).sin()
        }
    }

    pub(crate) fn commands(&self) -> JointSeries {
        let mut s = JointSeries::default();
        for k in 0..self.n_cmd {
            let t = self.t0_ns + k as i64 * self.cmd_period_ns;
            s.stamp_ns.push(t);
            s.log_time_ns.push(t + 1_000_000);
            s.names.push(JOINTS.iter().map(|n| n.to_string()).collect());
            s.values.push((0..6).map(|j| self.traj(j, t)).collect());
        }
        s
    }

    /// State stream: `traj(stamp − delay) + bias + noise`, stamps jittered.
    pub(crate) fn sampled(&self) -> JointSeries {
        let mut rng = Rng::new(self.seed);
        let mut s = JointSeries::default();
        let end = self.t0_ns + self.n_cmd as i64 * self.cmd_period_ns + 500_000_000;
        let mut k = 0i64;
        loop {
            let nominal = self.t0_ns - 100_000_000 + k * self.resp_period_ns;
            if nominal > end {
                break;
            }
            let j = ((rng.uniform() * 2.0 - 1.0) * self.jitter_ns as f64) as i64;
            let t = nominal + j;
            s.stamp_ns.push(t);
            s.log_time_ns.push(t + 500_000);
            s.names
                .push(RESP_ORDER.iter().map(|&i| JOINTS[i].to_string()).collect());
            s.values.push(
                RESP_ORDER
                    .iter()
                    .map(|&i| {
                        self.traj(i, t - self.delay_ns) + self.bias[i] + self.noise * rng.normal()
                    })
                    .collect(),
            );
            k += 1;
        }
        s
    }

    /// One echo per command, `delay` (± jitter) later, values ± noise.
    pub(crate) fn events(&self) -> JointSeries {
        let mut rng = Rng::new(self.seed);
        let c = self.commands();
        let mut s = JointSeries::default();
        for (k, &t) in c.stamp_ns.iter().enumerate() {
            let j = ((rng.uniform() * 2.0 - 1.0) * self.jitter_ns as f64) as i64;
            let tr = t + self.delay_ns + j;
            s.stamp_ns.push(tr);
            s.log_time_ns.push(tr + 500_000);
            s.names
                .push(RESP_ORDER.iter().map(|&i| JOINTS[i].to_string()).collect());
            s.values.push(
                RESP_ORDER
                    .iter()
                    .map(|&i| c.values[k][i] + self.bias[i] + self.noise * rng.normal())
                    .collect(),
            );
        }
        s
    }
}
