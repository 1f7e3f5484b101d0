//! Drop reasons, summaries and diagnoses on small hand-made cases.

use bagscope_sync::{
    diagnose, emulate, summarize, Arrival, DiagnoseHints, DiagnosisKind, DropReason, Policy,
    SyncConfig,
};

const MS: i64 = 1_000_000;

fn a(topic: usize, stamp_ms: i64, arrival_ms: i64) -> Arrival {
    Arrival::new(topic, Some(stamp_ms * MS), arrival_ms * MS)
}

fn reasons(cfg: &SyncConfig, arr: &[Arrival]) -> Vec<(usize, usize, DropReason)> {
    emulate(cfg, arr)
        .unwrap()
        .drops
        .iter()
        .map(|d| (d.topic, d.index, d.reason))
        .collect()
}

#[test]
fn py_self_eviction_is_queue_evicted() {
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 2, 2);
    cfg.slop_ns = 5 * MS;
    let arr = [a(0, 10, 10), a(0, 20, 20), a(0, 0, 21), a(1, 0, 22)];
    let o = emulate(&cfg, &arr).unwrap();
    let d: Vec<_> = o.drops.iter().collect();
    // /a 0 evicts itself while /b has not sent anything yet: partners still to come.
    assert_eq!(d[2].reason, DropReason::QueueEvicted, "{d:?}");
    assert_eq!(d[2].missing_topic, Some(1), "{d:?}");
    // /b 0 then finds only /a 10 and 20: a partner was there but 10 ms away, not within the
    // 5 ms slop (it used to be `never_matched`, which hid that).
    assert_eq!(
        (d[3].topic, d[3].reason),
        (1, DropReason::SkewExceeded),
        "{d:?}"
    );
    assert_eq!(d[3].span_ns, Some(10 * MS));
}

#[test]
fn duplicates_overwrite_in_python_and_exact() {
    for p in [
        Policy::ApproxPy,
        Policy::ExactPy,
        Policy::ExactPyLegacy,
        Policy::Exact,
    ] {
        let mut cfg = SyncConfig::new(p, 2, 5);
        cfg.slop_ns = 5 * MS;
        let r = reasons(&cfg, &[a(0, 0, 0), a(0, 0, 1), a(1, 0, 2)]);
        assert_eq!(r, vec![(0, 0, DropReason::DuplicateMember)], "{p}");
    }
    // C++ approx keeps both and uses the first; the second is discarded later.
    let cfg = SyncConfig::new(Policy::Approx, 2, 5);
    let o = emulate(
        &cfg,
        &[
            a(0, 0, 0),
            a(0, 0, 1),
            a(1, 0, 2),
            a(0, 100, 3),
            a(1, 100, 4),
        ],
    )
    .unwrap();
    assert_eq!(o.sets.get(0).unwrap().members.as_slice(), [0, 0]);
    assert!(
        o.drops
            .iter()
            .any(|d| d.index == 1 && d.reason == DropReason::DuplicateMember),
        "{:?}",
        o.drops
    );
}

#[test]
fn exact_purge_and_out_of_order() {
    // topic 0: 0, 100; topic 1: 100, then 0 (out of order).
    let arr = [a(0, 0, 0), a(0, 100, 1), a(1, 100, 2), a(1, 0, 3)];
    let r = reasons(&SyncConfig::new(Policy::ExactPy, 2, 5), &arr);
    assert_eq!(
        r,
        vec![
            (0, 0, DropReason::SkewExceeded),
            (1, 1, DropReason::NeverMatched)
        ]
    );
    let o = emulate(&SyncConfig::new(Policy::ExactPyLegacy, 2, 5), &arr).unwrap();
    assert_eq!(o.sets.len(), 2);
    // C++ approx: a late older message behind newer ones.
    let cfg = SyncConfig::new(Policy::Approx, 2, 3);
    let arr = [
        a(0, 100, 0),
        a(0, 50, 1),
        a(1, 100, 2),
        a(0, 200, 3),
        a(1, 200, 4),
        a(0, 300, 5),
        a(1, 300, 6),
    ];
    let r = reasons(&cfg, &arr);
    assert!(r.contains(&(0, 1, DropReason::OutOfOrder)), "{r:?}");
}

#[test]
fn backward_jump_is_clock_epoch_changed_for_python_stall() {
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 2, 3);
    cfg.slop_ns = 10 * MS;
    let mut arr = Vec::new();
    // Fast topic before the jump only fills its queue; slow topic jumps back 10 s.
    for k in 0..6 {
        arr.push(a(0, 20_000 + k * 30, k * 30));
    }
    for k in 0..6 {
        arr.push(a(0, 10_000 + k * 30, 200 + k * 30));
        arr.push(a(1, 10_000 + k * 30, 201 + k * 30));
    }
    let o = emulate(&cfg, &arr).unwrap();
    assert!(o.sets.is_empty());
    assert!(
        o.drops
            .iter()
            .any(|d| d.reason == DropReason::ClockEpochChanged),
        "{:?}",
        o.drops
    );
    let d = diagnose(&cfg, &arr, &o, &DiagnoseHints::default());
    assert!(
        d.iter().any(|d| d.kind == DiagnosisKind::ClockEpochChanged),
        "{d:?}"
    );
}

#[test]
fn topic_empty_and_headerless() {
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 3, 5);
    cfg.slop_ns = 10 * MS;
    let arr = [a(0, 0, 0), a(1, 0, 1), Arrival::new(1, None, 2)];
    let o = emulate(&cfg, &arr).unwrap();
    let r: Vec<DropReason> = o.drops.iter().map(|d| d.reason).collect();
    assert_eq!(
        r,
        vec![
            DropReason::TopicEmpty,
            DropReason::TopicEmpty,
            DropReason::HeaderlessRejected
        ]
    );
    let d = diagnose(&cfg, &arr, &o, &DiagnoseHints::default());
    let kinds: Vec<DiagnosisKind> = d.iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        vec![DiagnosisKind::TopicEmpty, DiagnosisKind::HeaderlessTopic]
    );
    let rep = summarize(&cfg, &arr, &o);
    assert_eq!(rep.match_rate, 0.0);
    assert_eq!(rep.drops.get("topic_empty"), Some(&2));
}

#[test]
fn negative_stamp_and_bad_config() {
    let cfg = SyncConfig::new(Policy::Exact, 2, 0);
    let o = emulate(&cfg, &[a(0, -1, 0), a(1, -1, 0)]).unwrap();
    assert!(o.drops.iter().all(|d| d.reason == DropReason::InvalidStamp));
    assert!(emulate(&SyncConfig::new(Policy::Exact, 1, 0), &[]).is_err());
    assert!(emulate(&SyncConfig::new(Policy::Exact, 10, 0), &[]).is_err());
    assert!(emulate(&SyncConfig::new(Policy::Approx, 2, 0), &[]).is_err());
    assert!(emulate(&SyncConfig::new(Policy::Exact, 2, 0), &[a(2, 0, 0)]).is_err());
    let mut c = SyncConfig::new(Policy::Approx, 2, 1);
    c.age_penalty = f64::NAN;
    assert!(emulate(&c, &[]).is_err());
    c.age_penalty = 0.1;
    c.lower_bounds_ns = vec![0];
    assert!(emulate(&c, &[]).is_err());
    let e = emulate(&SyncConfig::new(Policy::Exact, 2, 0), &[a(5, 0, 0)]).unwrap_err();
    assert!(e.to_string().contains("topic 5"));
    assert_eq!("approx-py".parse::<Policy>().unwrap(), Policy::ApproxPy);
    assert!("bogus".parse::<Policy>().is_err());
}

fn two_streams(
    image_lag_ms: i64,
    lidar_lag_ms: i64,
    lidar_offset_ms: i64,
    exact_equal: bool,
) -> Vec<Arrival> {
    let mut v = Vec::new();
    for k in 0..200 {
        let s = k * 50;
        v.push(a(0, s, s + image_lag_ms));
    }
    for k in 0..100 {
        let s = k * 100 + if exact_equal { 0 } else { lidar_offset_ms };
        v.push(a(1, s, s + lidar_lag_ms));
    }
    v.sort_by_key(|x| (x.arrival_ns, x.topic));
    v
}

#[test]
fn diagnoses_for_low_match_rate() {
    // Exact on independent sensors.
    let arr = two_streams(10, 12, 7, false);
    let cfg = SyncConfig::new(Policy::ExactPy, 2, 10);
    let o = emulate(&cfg, &arr).unwrap();
    let d = diagnose(&cfg, &arr, &o, &DiagnoseHints::default());
    assert!(
        d.iter()
            .any(|d| d.kind == DiagnosisKind::ExactOnIndependentSensors),
        "{d:?}"
    );

    // Queue below the cliff: lidar 80 ms later than image, queue 1.
    let arr = two_streams(10, 90, 7, false);
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 2, 1);
    cfg.slop_ns = 20 * MS;
    let o = emulate(&cfg, &arr).unwrap();
    assert!(summarize(&cfg, &arr, &o).match_rate < 0.5);
    let d = diagnose(&cfg, &arr, &o, &DiagnoseHints::default());
    assert!(
        d.iter()
            .any(|d| d.kind == DiagnosisKind::QueueBelowCliff && d.topics == vec![1, 0]),
        "{d:?}"
    );

    // Slop below the phase offset (lidar 20 ms from the nearest image, slop 10 ms).
    let arr = two_streams(10, 12, 20, false);
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 2, 10);
    cfg.slop_ns = 10 * MS;
    let o = emulate(&cfg, &arr).unwrap();
    let d = diagnose(
        &cfg,
        &arr,
        &o,
        &DiagnoseHints {
            split_clock_axes: true,
            ..Default::default()
        },
    );
    let kinds: Vec<DiagnosisKind> = d.iter().map(|d| d.kind).collect();
    assert!(
        kinds.contains(&DiagnosisKind::SlopBelowPhaseOffset),
        "{d:?}"
    );
    assert!(kinds.contains(&DiagnosisKind::SplitClockAxes), "{d:?}");

    // A healthy configuration gets no cause-finding diagnoses.
    cfg.slop_ns = 26 * MS;
    let o = emulate(&cfg, &arr).unwrap();
    let rep = summarize(&cfg, &arr, &o);
    assert!(rep.match_rate > 0.95, "{rep:?}");
    assert!(diagnose(&cfg, &arr, &o, &DiagnoseHints::default()).is_empty());
    // Report content: spans are 20 ms, the image is the earlier member.
    assert_eq!(rep.span_ns.unwrap().p50, 20 * MS);
    assert_eq!(rep.member_offset_ns[0].unwrap().max, 0);
    assert_eq!(rep.emit_age_ns.unwrap().p50, 12 * MS);
    assert!(rep.occupancy[0].max <= 10);
    let json = serde_json::to_string(&rep).unwrap();
    assert!(json.contains("\"match_rate\""));
}

/// 2 topics × 1e6 messages: run with `--release -- --ignored` to time it.
#[test]
#[ignore]
fn perf_two_topics_million_messages() {
    let n = 1_000_000i64;
    let mut arr = Vec::with_capacity(2 * n as usize);
    for k in 0..n {
        let s = k * 10 * MS;
        arr.push(Arrival::new(0, Some(s), s + MS));
        arr.push(Arrival::new(1, Some(s + 3 * MS), s + 3 * MS + 20 * MS));
    }
    arr.sort_by_key(|x| (x.arrival_ns, x.topic));
    for p in Policy::ALL {
        let mut cfg = SyncConfig::new(p, 2, 10);
        cfg.slop_ns = 5 * MS;
        cfg.epsilon_ns = 5 * MS;
        let t = std::time::Instant::now();
        let o = emulate(&cfg, &arr).unwrap();
        println!("{p}: {} sets in {:?}", o.sets.len(), t.elapsed());
    }
    // Nearly every message dropped (a 50 kHz state topic with a 10 Hz camera, 20 s): the
    // drop reasons judge each against the partners it had while held.
    let mut arr = Vec::new();
    for k in 0..1_000_000i64 {
        arr.push(Arrival::new(0, Some(k * 20_000), k * 20_000 + 100_000));
    }
    for k in 0..200i64 {
        let s = k * 100 * MS + 3 * MS;
        arr.push(Arrival::new(1, Some(s), s + 30 * MS));
    }
    arr.sort_by_key(|x| (x.arrival_ns, x.topic));
    for (p, q) in [
        (Policy::ApproxPy, 10),
        (Policy::Approx, 10),
        (Policy::ApproxEpsilon, 10),
        (Policy::ApproxPy, 2000),
        (Policy::Approx, 2000),
    ] {
        let mut cfg = SyncConfig::new(p, 2, q);
        cfg.slop_ns = MS;
        cfg.epsilon_ns = MS;
        let t = std::time::Instant::now();
        let o = emulate(&cfg, &arr).unwrap();
        let t_all = t.elapsed();
        let t = std::time::Instant::now();
        let n = bagscope_sync::count_sets(&cfg, &arr).unwrap();
        println!(
            "fast/slow {p} q{q}: {} sets, {} drops in {t_all:?} (sets only: {:?})",
            n,
            o.drops.len(),
            t.elapsed()
        );
    }
}

fn drops_of(cfg: &SyncConfig, arr: &[Arrival]) -> Vec<bagscope_sync::DroppedMessage> {
    emulate(cfg, arr).unwrap().drops.iter().collect()
}

/// A partner within reach of the queue but beyond the slop: `skew_exceeded` with the span,
/// whether the message waits to the end (formerly `never_matched`) or is evicted (formerly
/// `queue_evicted`).
#[test]
fn partner_there_but_too_far_is_skew_exceeded_with_its_span() {
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 2, 5);
    cfg.slop_ns = 10 * MS;
    let d = drops_of(&cfg, &[a(0, 0, 0), a(1, 15, 1)]);
    assert_eq!(d.len(), 2);
    for x in &d {
        assert_eq!(x.reason, DropReason::SkewExceeded, "{d:?}");
        assert_eq!(x.span_ns, Some(15 * MS));
        assert_eq!(x.missing_topic, None);
    }
    // Queue of 1: /a 0 is evicted by /a 100 while /b 15 waits, 15 ms away.
    cfg.queue_size = 1;
    let d = drops_of(&cfg, &[a(0, 0, 0), a(1, 15, 1), a(0, 100, 2), a(1, 100, 3)]);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!((d[0].topic, d[0].reason), (0, DropReason::SkewExceeded));
    assert_eq!(d[0].span_ns, Some(15 * MS));
    assert_eq!((d[1].topic, d[1].reason), (1, DropReason::SkewExceeded));
    // The same under C++ approx with a max interval, and approx-epsilon (inclusive bound).
    let mut cfg = SyncConfig::new(Policy::Approx, 2, 5);
    cfg.max_interval_ns = Some(10 * MS);
    let d = drops_of(
        &cfg,
        &[
            a(0, 0, 0),
            a(1, 15, 1),
            a(0, 200, 2),
            a(1, 200, 3),
            a(0, 400, 4),
            a(1, 400, 5),
        ],
    );
    assert!(
        d.iter()
            .any(|x| x.reason == DropReason::SkewExceeded && x.span_ns == Some(15 * MS)),
        "{d:?}"
    );
    let mut cfg = SyncConfig::new(Policy::ApproxEpsilon, 2, 5);
    cfg.epsilon_ns = 15 * MS;
    assert!(drops_of(&cfg, &[a(0, 0, 0), a(1, 15, 1)]).is_empty());
    cfg.epsilon_ns = 15 * MS - 1;
    let d = drops_of(&cfg, &[a(0, 0, 0), a(1, 15, 1)]);
    // The failed front set (0, 15) discards /a 0; /b 15 then waits alone to the end, its one
    // free candidate (/a 0, held when it arrived) 15 ms away.
    for x in &d {
        assert_eq!(
            (x.reason, x.span_ns),
            (DropReason::SkewExceeded, Some(15 * MS))
        );
    }
}

/// Partners that never arrived while the message was held: `never_matched` / `queue_evicted`
/// name the topic that had no candidate.
#[test]
fn missing_partner_topic_is_named() {
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 2, 5);
    cfg.slop_ns = 10 * MS;
    // /b 100 pairs at once and leaves; /a 300 never sees a /b message.
    let d = drops_of(&cfg, &[a(1, 100, 0), a(0, 100, 1), a(0, 300, 2)]);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].topic, d[0].reason), (0, DropReason::NeverMatched));
    assert_eq!(d[0].missing_topic, Some(1));
    // Three topics, queue 1: /a 0 and /b 1 are evicted before /c sends anything.
    let mut cfg = SyncConfig::new(Policy::ApproxPy, 3, 1);
    cfg.slop_ns = 10 * MS;
    let arr = [
        a(0, 0, 0),
        a(1, 1, 1),
        a(0, 100, 2),
        a(1, 101, 3),
        a(2, 100, 4),
    ];
    let o = emulate(&cfg, &arr).unwrap();
    assert_eq!(o.sets.len(), 1);
    let d: Vec<_> = o.drops.iter().collect();
    assert_eq!(d.len(), 2);
    for x in &d {
        assert_eq!(
            (x.reason, x.missing_topic),
            (DropReason::QueueEvicted, Some(2)),
            "{d:?}"
        );
    }
    let r = summarize(&cfg, &arr, &o);
    assert_eq!(r.drops_per_topic[0].missing_partner.get(&2), Some(&1));
}

/// A stamp repeating one already used in an emitted set of its topic is `duplicate_member`
/// under every policy (approx-py and the legacy Python exact policy called it
/// `never_matched`).
#[test]
fn repeated_used_stamp_is_duplicate_member_under_every_policy() {
    // LatestTime never reads stamps: it holds the repeated message like any other.
    for p in Policy::ALL.into_iter().filter(|&p| p != Policy::Latest) {
        let mut cfg = SyncConfig::new(p, 2, 5);
        cfg.slop_ns = 10 * MS;
        cfg.epsilon_ns = 5 * MS;
        let arr = [
            a(0, 0, 0),
            a(1, 0, 1),
            a(0, 100, 2),
            a(1, 100, 3),
            a(0, 0, 4),
            a(0, 200, 5),
            a(1, 200, 6),
            a(0, 300, 7),
            a(1, 300, 8),
        ];
        let o = emulate(&cfg, &arr).unwrap();
        let dup: Vec<_> = o
            .drops
            .iter()
            .filter(|d| d.topic == 0 && d.index == 2)
            .collect();
        assert_eq!(dup.len(), 1, "{p}: {:?}", o.drops);
        assert_eq!(dup[0].reason, DropReason::DuplicateMember, "{p}");
    }
}

#[test]
fn approx_epsilon_drop_within_and_its_parameters() {
    // Three topics, epsilon 10 ms: fronts 0, 5, 20 fail; every front within 10 ms of the
    // oldest goes (the good pair 0/5 with it), judged in a set spanning 20 ms.
    let mut cfg = SyncConfig::new(Policy::ApproxEpsilon, 3, 5);
    cfg.epsilon_ns = 10 * MS;
    let d = drops_of(&cfg, &[a(0, 0, 0), a(1, 5, 1), a(2, 20, 2)]);
    // /c 20 then waits to the end with /a 0 and /b 5 as its (free) candidates: too far too.
    assert_eq!(d.len(), 3, "{d:?}");
    assert!(d
        .iter()
        .all(|x| x.reason == DropReason::SkewExceeded && x.span_ns == Some(20 * MS)));
    cfg.epsilon_ns = -1;
    let e = emulate(&cfg, &[]).unwrap_err();
    assert!(e.to_string().contains("epsilon >= 0"), "{e}");
    // Queue 0 never matches.
    cfg.epsilon_ns = 10 * MS;
    cfg.queue_size = 0;
    assert!(emulate(&cfg, &[a(0, 0, 0), a(1, 0, 1), a(2, 0, 2)])
        .unwrap()
        .sets
        .is_empty());
}

#[test]
fn latest_holds_messages_and_refuses_undefined_upstream_behaviour() {
    let cfg = SyncConfig::new(Policy::Latest, 2, 0);
    // 20 Hz /a, 5 Hz /b: every /a after the first emits with /b's latest; /b's messages are
    // reused (zero-order hold); an /b message replaced before any /a came is queue_evicted.
    let mut arr = Vec::new();
    for k in 0..20 {
        arr.push(a(0, 50 * k, 50 * k));
        if k % 4 == 1 {
            arr.push(a(1, 50 * k + 1, 50 * k + 1));
            if k == 9 {
                arr.push(a(1, 50 * k + 2, 50 * k + 2));
            }
        }
    }
    let o = emulate(&cfg, &arr).unwrap();
    assert!(o.sets.len() >= 10, "{}", o.sets.len());
    // /b 0 is held through the first four sets, each emitted by an /a message.
    let with_b0 = o.sets.iter().filter(|s| s.members[1] == 0).count();
    assert_eq!(with_b0, 4);
    // /b 2 is replaced 1 ms later by /b 3 before any set used it.
    let d: Vec<_> = o.drops.iter().filter(|x| x.topic == 1).collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].index, d[0].reason), (2, DropReason::QueueEvicted));
    // Topic 1 twice before topic 0's first message: upstream reads past its rate vector.
    let e = emulate(&cfg, &[a(1, 0, 0), a(1, 10, 10), a(0, 20, 20)]).unwrap_err();
    match &e {
        bagscope_sync::SyncError::UndefinedUpstream {
            topic,
            index,
            arrival_index,
            ..
        } => {
            assert_eq!((*topic, *index, *arrival_index), (1, 1, 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("message 1 of input 1"), "{e}");
    // In index order it is defined.
    assert!(emulate(&cfg, &[a(0, 0, 0), a(1, 0, 1), a(1, 10, 10)]).is_ok());
    // Rate configs: one, or one per topic; others are refused.
    let mut cfg = cfg;
    cfg.rate_config = vec![bagscope_sync::RateConfig::default(); 3];
    assert!(emulate(&cfg, &[]).is_err());
}

/// A partner that was never sent: every approximate policy says so (`never_matched` naming
/// the topic), whatever mechanism removed the message. C++ approx used to call it
/// `skew_exceeded` (cleared when a strictly better candidate replaced it), approx-epsilon
/// discards it as a failed front.
#[test]
fn a_partner_never_sent_is_never_matched_under_every_approximate_policy() {
    let mut arr = Vec::new();
    for k in 0..20 {
        arr.push(a(0, 100 * k, 100 * k + 2));
        if k != 7 {
            arr.push(a(1, 100 * k, 100 * k + 5));
        }
    }
    arr.sort_by_key(|x| x.arrival_ns);
    for p in [Policy::ApproxPy, Policy::Approx, Policy::ApproxEpsilon] {
        let mut cfg = SyncConfig::new(p, 2, 10);
        cfg.slop_ns = 10 * MS;
        cfg.epsilon_ns = 10 * MS;
        let o = emulate(&cfg, &arr).unwrap();
        let d: Vec<_> = o
            .drops
            .iter()
            .filter(|d| d.topic == 0 && d.index == 7)
            .collect();
        assert_eq!(d.len(), 1, "{p}: {:?}", o.drops);
        assert_eq!(
            (d[0].reason, d[0].missing_topic),
            (DropReason::NeverMatched, Some(1)),
            "{p}"
        );
    }
}
