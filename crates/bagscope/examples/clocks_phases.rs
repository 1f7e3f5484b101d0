//! Where `clocks` spends its wall time: open, scan (every stamp and log time), analysis, and
//! dropping the columns, each timed. For profiling issue #9's ratio against decompress_only.
//!
//! usage: cargo run --release -p bagscope --example clocks_phases -- BAG [RUNS [ANALYSES]]
//! (ANALYSES > 1 repeats the analysis on one scan: for profiling the analysis alone)

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: clocks_phases BAG [RUNS]");
    let runs: usize = args.next().map_or(1, |r| r.parse().expect("RUNS"));
    let analyses: usize = args.next().map_or(1, |r| r.parse().expect("ANALYSES"));
    let opts = bagscope::clock_analysis::ClocksOptions::default();
    for _ in 0..runs {
        let t0 = Instant::now();
        let bag = bagscope::io::Bag::open(std::path::Path::new(&path)).expect("open");
        let t1 = Instant::now();
        let (times, _) = bagscope::clocks::topic_times(&bag);
        let t2 = Instant::now();
        let mut r = bagscope::clock_analysis::analyze(&times, &opts);
        for _ in 1..analyses {
            r = bagscope::clock_analysis::analyze(&times, &opts);
        }
        let t3 = Instant::now();
        drop(times);
        drop(bag);
        let t4 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        eprintln!(
            "open {:6.1} ms  scan {:6.1} ms  analyse {:6.1} ms  drop {:6.1} ms  ({} topics)",
            ms(t0, t1),
            ms(t1, t2),
            ms(t2, t3) / analyses as f64,
            ms(t3, t4),
            r.topics.len()
        );
    }
}
