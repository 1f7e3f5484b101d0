//! `recommend` on an Image topic stamped on wall time and an Imu topic on a relative clock,
//! both logged on wall time: the stamps cannot be paired, and the receive-lag difference
//! (~1.7e9 s) once sized a queue sweep of ~10^11 points (a ~3 TB allocation, abort).
//! Alone in its test binary so that the peak resident memory is this test's own.

use bagscope_sync::{
    recommend, NoRecommendationCode, Policy, RecommendInput, SyncError, TopicSeries,
};
use std::time::{Duration, Instant};

const MS: i64 = 1_000_000;
const WALL: i64 = 1_700_000_000_000_000_000;
const RELATIVE: i64 = 1_000_000_000;

fn series(n: i64, period: i64, stamp0: i64, log0: i64, lag: i64) -> TopicSeries {
    TopicSeries {
        stamps_ns: (0..n).map(|k| stamp0 + k * period).collect(),
        arrival_ns: (0..n).map(|k| log0 + k * period + lag).collect(),
    }
}

/// Peak resident memory of this process (kB), from /proc/self/status; None off Linux.
fn vm_hwm_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn wall_image_vs_relative_imu_is_refused_promptly() {
    // ~1 300 messages over 5.7 s: image 30 Hz, IMU 200 Hz.
    let image = series(170, 33_333_333, WALL, WALL, 5 * MS);
    let imu = series(1130, 5 * MS, RELATIVE, WALL, MS);
    for policy in [Policy::ApproxPy, Policy::Approx] {
        let mut input = RecommendInput::new(policy, vec![image.clone(), imu.clone()]);
        input.topic_names = vec!["/camera/image_raw".into(), "/imu".into()];
        let t0 = Instant::now();
        let r = recommend(&input);
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(2), "{policy}: took {took:?}");
        let Err(SyncError::NoRecommendation(no)) = r else {
            panic!("{policy}: expected a refusal, got {r:?}");
        };
        assert_eq!(no.code, NoRecommendationCode::StampClocksDiffer, "{no:?}");
        assert_eq!(no.topics, ["/camera/image_raw", "/imu"]);
        // The IMU's median stamp minus the image's: the clock offset, ~-1.7e9 s.
        let off = no.offset_ns.unwrap();
        assert!(
            (off - (RELATIVE + 565 * 5 * MS - (WALL + 85 * 33_333_333))).abs() < 10 * MS,
            "{off}"
        );
        assert!(
            no.message.contains("different clocks") && no.message.contains("/imu"),
            "{}",
            no.message
        );
        let json = serde_json::to_value(&*no).unwrap();
        assert_eq!(json["code"], "stamp_clocks_differ");
    }
    if let Some(kb) = vm_hwm_kb() {
        assert!(kb < 200 * 1024, "peak resident memory {kb} kB");
    }
}
