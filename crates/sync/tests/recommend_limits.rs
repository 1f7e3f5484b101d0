//! What `recommend` refuses to derive numbers from (too few messages, frozen stamps, stamps
//! that cannot be paired, a lag no queue reaches), extreme stamps, and the bound on the queue
//! sweep.

use bagscope_sync::{
    recommend, NoRecommendation, NoRecommendationCode, Policy, RecommendInput, Recommendation,
    SyncError, TopicSeries, MAX_QUEUE_SIZE, MIN_CANDIDATE_SETS, MIN_MESSAGES_PER_TOPIC,
};
use std::time::{Duration, Instant};

const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const WALL: i64 = 1_700_000_000 * S;

/// `n` messages every `period`, stamped from `stamp0`, each logged `lag` after its stamp.
fn series(n: i64, period: i64, stamp0: i64, lag: i64) -> TopicSeries {
    TopicSeries {
        stamps_ns: (0..n).map(|k| stamp0 + k * period).collect(),
        arrival_ns: (0..n).map(|k| stamp0 + k * period + lag).collect(),
    }
}

fn run(policy: Policy, topics: Vec<TopicSeries>) -> Result<Recommendation, SyncError> {
    let mut input = RecommendInput::new(policy, topics);
    input.topic_names = vec!["/a".into(), "/b".into(), "/c".into()];
    input.topic_names.truncate(input.topics.len());
    recommend(&input)
}

fn refusal(policy: Policy, topics: Vec<TopicSeries>) -> NoRecommendation {
    match run(policy, topics) {
        Err(SyncError::NoRecommendation(no)) => {
            assert_eq!(no.policy, policy);
            *no
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn two_messages_per_topic_are_too_few() {
    // Two messages a topic once gave queue_size 152 and a "cliff at 1.000".
    let a = series(2, 50 * MS, WALL, 10 * MS);
    let b = series(2, 100 * MS, WALL + 3 * MS, 90 * MS);
    for policy in [Policy::ApproxPy, Policy::Approx] {
        let no = refusal(policy, vec![a.clone(), b.clone()]);
        assert_eq!(no.code, NoRecommendationCode::TooFewMessages);
        assert!(
            no.message.contains("too few messages (n=2)"),
            "{}",
            no.message
        );
        assert_eq!(no.n, Some(2));
        assert_eq!(no.minimum, Some(MIN_MESSAGES_PER_TOPIC));
        assert_eq!(no.topics, ["/a"]);
        let e = SyncError::NoRecommendation(Box::new(no)).to_string();
        assert!(
            e.starts_with("cannot recommend: too few messages (n=2)"),
            "{e}"
        );
    }
    // The topic with fewer messages is named, however many the other has.
    let no = refusal(
        Policy::ApproxPy,
        vec![
            series(400, 50 * MS, WALL, 10 * MS),
            series(19, 100 * MS, WALL, 5 * MS),
        ],
    );
    assert_eq!(no.code, NoRecommendationCode::TooFewMessages);
    assert!(
        no.message.contains("too few messages (n=19) on /b"),
        "{}",
        no.message
    );
}

#[test]
fn the_minimum_sample_is_enough() {
    // 20 messages each (the minimum), fully overlapping: a recommendation, stating its sample.
    let a = series(40, 50 * MS, WALL, 10 * MS);
    let b = series(20, 100 * MS, WALL + 3 * MS, 90 * MS);
    let r = run(Policy::ApproxPy, vec![a, b]).unwrap();
    assert_eq!(r.rule.min_messages_per_topic, MIN_MESSAGES_PER_TOPIC);
    assert_eq!(r.rule.min_candidate_sets, MIN_CANDIDATE_SETS);
    assert_eq!(r.rule.candidate_sets, 20);
    assert!(r.recommendation.match_rate > 0.9, "{r:?}");
}

#[test]
fn frozen_stamps_are_the_reason() {
    let a = series(600, 50 * MS, WALL, 10 * MS);
    // A driver that never updates its stamp: 500 messages, one stamp.
    let mut b = series(500, 60 * MS, WALL, 5 * MS);
    b.stamps_ns.iter_mut().for_each(|s| *s = WALL + 7 * MS);
    for policy in [Policy::ApproxPy, Policy::Approx] {
        let no = refusal(policy, vec![a.clone(), b.clone()]);
        assert_eq!(no.code, NoRecommendationCode::StampFrozen);
        assert_eq!(no.topics, ["/b"]);
        assert_eq!((no.n, no.messages), (Some(1), Some(500)));
        assert!(
            no.message
                .contains("frozen: 1 distinct stamp(s) over 500 messages"),
            "{}",
            no.message
        );
        let json = serde_json::to_value(&no).unwrap();
        assert_eq!(json["code"], "stamp_frozen");
    }
    // Stamps that change only every 100th message are frozen as well.
    let mut c = series(500, 60 * MS, WALL, 5 * MS);
    c.stamps_ns
        .iter_mut()
        .enumerate()
        .for_each(|(i, s)| *s = WALL + (i as i64 / 100) * S);
    let no = refusal(Policy::ApproxPy, vec![a, c]);
    assert_eq!(no.code, NoRecommendationCode::StampFrozen);
    assert_eq!((no.n, no.messages), (Some(5), Some(500)));
}

#[test]
fn disjoint_stamp_ranges_are_refused_promptly() {
    // Both on wall time, the second stamped 1 000 s late: the lag rule asked for a queue of
    // ~30 000 and the sweep's time grew with the offset.
    let a = series(1150, 5 * MS, WALL, MS);
    let mut b = series(170, 33_333_333, WALL, 5 * MS);
    b.stamps_ns.iter_mut().for_each(|s| *s -= 1000 * S);
    let t0 = Instant::now();
    let no = refusal(Policy::ApproxPy, vec![a, b]);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(no.code, NoRecommendationCode::StampRangesDisjoint);
    assert_eq!(no.topics, ["/b", "/a"]);
    let off = no.offset_ns.unwrap();
    assert!(
        (off - (1000 * S + 2875 * MS - 85 * 33_333_333)).abs() < 50 * MS,
        "{off}"
    );
    assert!(no.message.contains("do not overlap"), "{}", no.message);
}

#[test]
fn too_few_candidate_sets() {
    // The ranges overlap by four messages of /b only.
    let a = series(200, 50 * MS, WALL, 10 * MS);
    let b = series(200, 100 * MS, WALL + 9_600 * MS, 20 * MS);
    let no = refusal(Policy::ApproxPy, vec![a, b]);
    assert_eq!(no.code, NoRecommendationCode::TooFewCandidateSets);
    assert_eq!(no.n, Some(4));
    assert_eq!(no.minimum, Some(MIN_CANDIDATE_SETS));
    assert!(
        no.message.contains("too few candidate sets (n=4)"),
        "{}",
        no.message
    );
}

#[test]
fn a_lag_no_queue_reaches_is_refused() {
    // 1 kHz IMU logged at once, camera frames logged 11 s after their stamps: the camera's
    // partners would have to be held for 11 001 IMU periods.
    let imu = series(30_000, MS, WALL, 100_000);
    let cam = series(900, 33_333_333, WALL, 11 * S);
    let t0 = Instant::now();
    let no = refusal(Policy::ApproxPy, vec![imu, cam]);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(no.code, NoRecommendationCode::LagBeyondQueue);
    assert_eq!(no.topics, ["/b", "/a"]);
    assert_eq!(no.minimum, Some(MAX_QUEUE_SIZE));
    assert!(no.n.unwrap() > MAX_QUEUE_SIZE, "{no:?}");
    assert!(no.message.contains("11.000 s later"), "{}", no.message);
}

#[test]
fn a_long_queue_is_swept_on_a_bounded_grid() {
    // Camera frames logged 1 s after their stamps, a 200 Hz IMU at once: queue 201.
    let imu = series(1400, 5 * MS, WALL, 0);
    let cam = series(200, 33_333_333, WALL + MS, 1000 * MS);
    let r = run(Policy::ApproxPy, vec![imu, cam]).unwrap();
    assert_eq!(r.rule.queue_min, 201, "{:?}", r.rule);
    assert!(r.queue_curve.len() <= 70, "{} points", r.queue_curve.len());
    assert!(r.recommendation.queue_size >= 201);
    assert!(r.recommendation.match_rate > 0.9, "{:?}", r.recommendation);
    // The cliff is still measured exactly where the rule puts it.
    for q in [200, 201, 202] {
        assert!(
            r.queue_curve.iter().any(|c| c.queue_size == q),
            "queue {q} not swept"
        );
    }
    // A short queue holds no partner for frames that late.
    let short = r.queue_curve.iter().find(|c| c.queue_size == 16).unwrap();
    assert!(short.match_rate < 0.1, "{short:?}");
}

#[test]
fn extreme_stamps_and_log_times_do_not_panic() {
    let near = |base: i64, step: i64, n: i64| -> Vec<i64> {
        (0..n).map(|k| base.saturating_add(k * step)).collect()
    };
    let top = |n: i64, step: i64| near(i64::MAX - n * step, step, n);
    let bottom = |n: i64, step: i64| near(i64::MIN + 1, step, n);
    let spread: Vec<i64> = (0..30)
        .map(|k| (i64::MIN as i128 + 1 + (k as i128) * (u64::MAX as i128 / 29)) as i64)
        .collect();
    let ts = |stamps: Vec<i64>, arrivals: Vec<i64>| TopicSeries {
        stamps_ns: stamps,
        arrival_ns: arrivals,
    };
    let cases: Vec<(&str, Vec<TopicSeries>)> = vec![
        (
            "stamps at i64::MAX, logged at i64::MIN",
            vec![
                ts(top(30, 1), bottom(30, 1)),
                ts(top(30, 2)[..30].to_vec(), bottom(30, 1)),
            ],
        ),
        (
            "stamps at i64::MIN, logged at i64::MAX",
            vec![ts(bottom(30, 1), top(30, 1)), ts(bottom(30, 3), top(30, 1))],
        ),
        (
            "one topic at each end",
            vec![ts(top(30, 1), bottom(30, 1)), ts(bottom(30, 1), top(30, 1))],
        ),
        (
            "stamps spread over the whole range",
            vec![
                ts(spread.clone(), spread.clone()),
                ts(spread.clone(), top(30, 1)),
            ],
        ),
        (
            "equal stamps",
            vec![
                ts(vec![i64::MAX; 30], top(30, 1)),
                ts(top(30, 1), top(30, 1)),
            ],
        ),
        (
            "a single message",
            vec![
                ts(vec![i64::MAX], vec![i64::MIN]),
                ts(top(30, 1), top(30, 1)),
            ],
        ),
        (
            "no message",
            vec![ts(vec![], vec![]), ts(top(30, 1), top(30, 1))],
        ),
    ];
    for (what, topics) in cases {
        for policy in [Policy::ApproxPy, Policy::Approx] {
            let r = std::panic::catch_unwind(|| run(policy, topics.clone()));
            let r = r.unwrap_or_else(|_| panic!("{what}, {policy}: panicked"));
            match r {
                Ok(rec) => {
                    let m = rec.recommendation.match_rate;
                    assert!((0.0..=1.0).contains(&m), "{what}, {policy}: {m}");
                    assert!(rec.recommendation.queue_size <= MAX_QUEUE_SIZE + 1);
                    assert!(rec.queue_curve.len() <= 70, "{what}, {policy}");
                }
                Err(SyncError::NoRecommendation(no)) => {
                    assert!(!no.message.is_empty(), "{what}");
                    let expected = match what {
                        "one topic at each end" => Some(NoRecommendationCode::StampClocksDiffer),
                        "equal stamps" => Some(NoRecommendationCode::StampFrozen),
                        "a single message" | "no message" => {
                            Some(NoRecommendationCode::TooFewMessages)
                        }
                        _ => None,
                    };
                    if let Some(c) = expected {
                        assert_eq!(no.code, c, "{what}, {policy}: {}", no.message);
                    }
                }
                Err(e) => panic!("{what}, {policy}: {e}"),
            }
        }
    }
}
