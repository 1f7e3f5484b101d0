use super::*;

const MS: i64 = 1_000_000;

fn group(topics: &[&str], hierarchical: bool) -> GroupSpec {
    GroupSpec {
        name: "g".into(),
        policy: Policy::ApproxPy,
        topics: topics.iter().map(|s| s.to_string()).collect(),
        queue: 5,
        slop_ns: Some(15 * MS),
        epsilon_ns: None,
        age_penalty: None,
        max_interval_ns: None,
        hierarchical,
    }
}

fn contract(groups: Vec<GroupSpec>) -> Contract {
    Contract {
        anchor: "/head".into(),
        groups,
        state: Vec::new(),
        max_age_ns: None,
        tf_target: None,
        tf_cache_ns: bagscope_tf::DEFAULT_CACHE_NS,
    }
}

/// Head, left, right at 30 Hz (left missing frame `drop`), stamps offset 0/+2/−3 ms,
/// received 10 ms after their stamps; `jump_at`: stamps go back by 100 s from that frame on.
fn messages(n: i64, drop: Option<i64>, jump_at: Option<i64>) -> Vec<SyncMessage> {
    let mut v = Vec::new();
    for k in 0..n {
        let base = 100_000 * MS + k * 33_333_333;
        let stamp = if jump_at.is_some_and(|j| k >= j) {
            base - 100_000 * MS + 5_000 * MS
        } else {
            base
        };
        for (t, off) in [(0usize, 0i64), (1, 2 * MS), (2, -3 * MS)] {
            if t == 1 && drop == Some(k) {
                continue;
            }
            v.push(SyncMessage {
                topic: t,
                stamp_ns: Some(stamp + off),
                log_time_ns: base + off + 10 * MS + t as i64,
                frame_id: "cam".into(),
            });
        }
    }
    v.sort_by_key(|m| m.log_time_ns);
    v
}

fn run(c: &Contract, msgs: &[SyncMessage]) -> ObserveReport {
    build(&Input {
        contract: c,
        policy_version: "0123456789abcdef",
        messages: msgs,
        states: &[],
        tf: &[],
        emit_axis: EmitAxis::Same,
    })
    .unwrap()
}

#[test]
fn every_frame_observed_and_ids_stable() {
    let c = contract(vec![group(&["/left", "/right"], false)]);
    let m = messages(30, None, None);
    let r = run(&c, &m);
    assert_eq!(r.summary.observations, 30);
    assert!(r.rejections.is_empty());
    let o = &r.observations[3];
    assert_eq!(o.members[0].offset_ns, Some(2 * MS));
    assert_eq!(o.members[1].offset_ns, Some(-3 * MS));
    assert_eq!(o.span_ns, 5 * MS);
    // The set completes when the last member (head, received 10 ms after its stamp) arrives.
    assert_eq!(o.emit_age_ns, Some(10 * MS + 2 * MS + 1));
    assert_eq!(run(&c, &m), r);
    let ids: std::collections::BTreeSet<_> =
        r.observations.iter().map(|o| &o.observation_id).collect();
    assert_eq!(ids.len(), 30);
}

#[test]
fn a_dropped_wrist_frame_costs_one_observation_flat_and_hierarchical() {
    let m = messages(30, Some(10), None);
    for hier in [false, true] {
        let c = contract(vec![group(&["/left", "/right"], hier)]);
        let r = run(&c, &m);
        assert_eq!(r.summary.observations, 29, "hierarchical {hier}");
        assert!(r.observations.iter().all(|o| o.anchor_index != 10));
        // The head frame and the right frame of that instant, nothing else.
        let lost: Vec<(usize, usize)> = r.rejections.iter().map(|x| (x.topic, x.index)).collect();
        assert_eq!(lost, [(0, 10), (2, 10)], "hierarchical {hier}");
    }
}

#[test]
fn a_clock_jump_flushes_and_warms_up() {
    let m = messages(30, None, Some(15));
    let c = contract(vec![group(&["/left", "/right"], false)]);
    let r = run(&c, &m);
    assert_eq!(r.summary.epochs.len(), 2);
    assert!(r
        .observations
        .iter()
        .all(|o| o.clock_epoch == u32::from(o.anchor_index >= 15)));
    // No set pairs across the jump: the right frame of instant 15 (stamped 3 ms early, on the
    // new clock) arrives before the head's jump is seen, is held at the flush and dropped;
    // the head's and left frames 15 then wait for a right frame in vain (warm-up).
    assert_eq!(r.summary.observations, 29);
    let why: Vec<(usize, usize, Reason)> = r
        .rejections
        .iter()
        .map(|x| (x.topic, x.index, x.reason))
        .collect();
    assert_eq!(why.len(), 3, "{why:?}");
    assert_eq!(why[2], (2, 15, Reason::Sync(DropReason::ClockEpochChanged)));
    assert_eq!((why[0].0, why[0].1, why[1].0, why[1].1), (0, 15, 1, 15));
    assert_eq!(r.summary.epochs[1].warmup_anchors, 1);
    assert_eq!(r.summary.epochs[0].flushed, 1);
    // Without a flush rule a jump that leaves messages held drops them as clock_epoch_changed:
    // drop the head's frame 14 so its members are held at the jump (with frame 15's right one).
    let mut m2 = messages(30, None, Some(15));
    m2.retain(|x| !(x.topic == 0 && x.stamp_ns == Some(100_000 * MS + 14 * 33_333_333)));
    let r2 = run(&c, &m2);
    assert_eq!(
        r2.summary
            .drops
            .get(&Reason::Sync(DropReason::ClockEpochChanged))
            .copied(),
        Some(3),
        "{:?}",
        r2.summary.drops
    );
    assert_eq!(r2.summary.epochs[0].flushed, 3);
}

#[test]
fn freshness_and_state_gates_reject_whole_sets() {
    let m = messages(10, None, None);
    let mut c = contract(vec![group(&["/left", "/right"], false)]);
    c.max_age_ns = Some(5 * MS);
    let r = run(&c, &m);
    assert_eq!(r.summary.observations, 0);
    assert_eq!(r.summary.drops.get(&Reason::StaleAtEmit), Some(&30));
    // State only: anchor + joint state at 100 Hz, linear in time.
    let mut c = contract(Vec::new());
    c.state.push(StateSpec {
        topic: "/js".into(),
        mode: StateMode::Interpolate,
        max_gap_ns: 20 * MS,
        continuous_joints: Vec::new(),
        optional: false,
    });
    let series = StateSeries {
        topic: "/js".into(),
        fields: vec![StateField {
            name: "position".into(),
            list: true,
        }],
        has_names: true,
        samples: (0..40)
            .map(|j| {
                let t = 100_000 * MS + 1_700_000 + j * 10 * MS;
                StateSample {
                    stamp_ns: t,
                    log_time_ns: t + 2 * MS,
                    values: vec![vec![(t - 100_000 * MS) as f64 * 1e-9 * 0.5]],
                    names: Some(vec!["j".to_string()].into()),
                }
            })
            .collect(),
    };
    let heads: Vec<SyncMessage> = m.into_iter().filter(|x| x.topic == 0).collect();
    let r = build(&Input {
        contract: &c,
        policy_version: "p",
        messages: &heads,
        states: std::slice::from_ref(&series),
        tf: &[],
        emit_axis: EmitAxis::Same,
    })
    .unwrap();
    // Frame 0 lies before the first state sample: state_unavailable.
    assert_eq!(r.summary.observations, 9);
    assert_eq!(r.rejections[0].reason, Reason::StateUnavailable);
    for o in &r.observations {
        let v = o.state[0].as_ref().unwrap();
        let want = (o.anchor_stamp_ns - 100_000 * MS) as f64 * 1e-9 * 0.5;
        assert!((v.values[0][0] - want).abs() < 1e-12);
        let after = v.after_stamp_ns.unwrap();
        assert_eq!(
            v.online_wait_ns,
            Some((after + 2 * MS - (o.anchor_log_time_ns)).max(0))
        );
    }
    assert!(r.summary.state[0].interpolation_error_rms.unwrap() < 1e-12);
}
