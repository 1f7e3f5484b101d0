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

// ---------------------------------------------------------------------------------------
// The oracle: the whole-input builder, and inputs made at random to compare it with.

fn whole_summary(mut v: Vec<i64>) -> Option<NsSummary> {
    NsSummary::of_in_place(&mut v)
}

/// A state series with every sample at hand: per epoch, the samples sorted by stamp.
struct Whole<'a> {
    series: &'a StateSeries,
    spec: &'a StateSpec,
    interp: state::Interp,
    by_epoch: Vec<Vec<usize>>,
}

impl<'a> Whole<'a> {
    fn new(series: &'a StateSeries, spec: &'a StateSpec) -> Whole<'a> {
        let mut by_epoch: Vec<Vec<usize>> = vec![Vec::new()];
        let mut top = i64::MIN;
        for (i, s) in series.samples.iter().enumerate() {
            if top != i64::MIN && s.stamp_ns < top.saturating_sub(bagscope_sync::EPOCH_JUMP_NS) {
                by_epoch.push(Vec::new());
                top = i64::MIN;
            }
            top = top.max(s.stamp_ns);
            if let Some(v) = by_epoch.last_mut() {
                v.push(i);
            }
        }
        for v in &mut by_epoch {
            v.sort_by_key(|&i| series.samples[i].stamp_ns);
        }
        Whole {
            series,
            spec,
            interp: state::Interp::new(spec, &series.fields),
            by_epoch,
        }
    }

    fn lookup(&self, epoch: usize, stamp: i64, log: i64) -> Option<(StateValue, Option<u64>)> {
        let s = &self.series.samples;
        let (before, after) = match self.by_epoch.get(epoch) {
            None => (None, None),
            Some(v) => {
                let after = v.partition_point(|&i| s[i].stamp_ns < stamp);
                let before_end = v.partition_point(|&i| s[i].stamp_ns <= stamp);
                (
                    before_end.checked_sub(1).map(|k| v[k]),
                    v.get(after).copied(),
                )
            }
        };
        self.interp.value(
            before.map(|b| (b as u64, &s[b])),
            after.map(|a| &s[a]),
            stamp,
            log,
        )
    }

    fn holdout_rms(&self) -> Option<f64> {
        let s = &self.series.samples;
        let (mut sum, mut n) = (0.0f64, 0usize);
        let mut scratch = Vec::new();
        for v in &self.by_epoch {
            for w in v.windows(3) {
                self.interp
                    .holdout(&s[w[0]], &s[w[1]], &s[w[2]], &mut sum, &mut n, &mut scratch);
            }
        }
        (n > 0).then(|| (sum / n as f64).sqrt())
    }
}

/// The builder as it was before it streamed: every message, state sample and TF message of
/// the input at once (the streaming builder must give the same report).
#[allow(clippy::too_many_lines)] // The whole-input builder kept as it was: the oracle the streamed one is compared with.
fn build_whole(input: &Input) -> Result<ObserveReport, ObserveError> {
    let c = input.contract;
    let topics = c.sync_topics();
    let n_topics = topics.len();
    {
        let mut seen = std::collections::BTreeSet::new();
        for t in &topics {
            if !seen.insert(t) {
                return Err(ObserveError::Contract(format!(
                    "topic {t} is listed twice among the anchor and members"
                )));
            }
        }
    }
    if input.states.len() != c.state.len() {
        return Err(ObserveError::Contract(
            "one state series is needed per state entry".into(),
        ));
    }
    let msgs = input.messages;
    let mut counts = vec![0u32; n_topics];
    let mut index = Vec::with_capacity(msgs.len());
    let mut anchors = Vec::new();
    let mut flush = Vec::new();
    let mut anchor_epoch: Vec<u32> = Vec::new();
    let mut top = i64::MIN;
    for (i, m) in msgs.iter().enumerate() {
        let t = m.topic.min(n_topics.saturating_sub(1));
        index.push(counts[t]);
        counts[t] += 1;
        if t == 0 {
            if let Some(s) = m.stamp_ns {
                if top != i64::MIN && s < top.saturating_sub(bagscope_sync::EPOCH_JUMP_NS) {
                    flush.push(i);
                    top = i64::MIN;
                }
                top = top.max(s);
            }
            anchors.push(i as u32);
            anchor_epoch.push(flush.len() as u32);
        }
    }
    let mut ctx = Ctx {
        msgs,
        index,
        anchors,
        flush,
        reason: vec![None; msgs.len()],
    };
    // Global topic indices of each group's topics.
    let mut next = 1usize;
    let mut results = Vec::new();
    for g in &c.groups {
        let ts: Vec<usize> = (next..next + g.topics.len()).collect();
        next += g.topics.len();
        if g.topics.is_empty() {
            return Err(ObserveError::Contract(format!(
                "members group '{}' lists no topics",
                g.name
            )));
        }
        results.push(if g.hierarchical {
            run_hierarchical(&mut ctx, g, &ts)?
        } else {
            run_flat(&mut ctx, g, &ts)?
        });
    }

    // Candidates: anchors every group put in a set.
    struct Cand {
        a: usize,
        members: Vec<u32>,
        emit: i64,
    }
    let mut cands: Vec<Cand> = Vec::new();
    for (ai, &aid) in ctx.anchors.clone().iter().enumerate() {
        let aid = aid as usize;
        if results.is_empty() {
            if msgs[aid].stamp_ns.is_none() {
                ctx.set_reason(aid, Reason::Sync(DropReason::HeaderlessRejected));
                continue;
            }
            cands.push(Cand {
                a: aid,
                members: Vec::new(),
                emit: msgs[aid].log_time_ns,
            });
            continue;
        }
        let failed = results.iter().position(|r| r.by_anchor[ai].is_none());
        match failed {
            None => {
                let mut members = Vec::new();
                let mut emit = i64::MIN;
                for r in &results {
                    if let Some((m, e)) = &r.by_anchor[ai] {
                        members.extend_from_slice(m);
                        emit = emit.max(*e);
                    }
                }
                cands.push(Cand {
                    a: aid,
                    members,
                    emit,
                });
            }
            Some(g) => {
                let r =
                    results[g].anchor_reason[ai].unwrap_or(Reason::Sync(DropReason::NeverMatched));
                ctx.set_reason(aid, r);
                for res in &results {
                    if let Some((m, _)) = &res.by_anchor[ai] {
                        for &x in m {
                            ctx.set_reason(x as usize, r);
                        }
                    }
                }
            }
        }
    }

    // Gates: freshness, then TF, then state.
    let stamp_or_log = |id: usize| msgs[id].stamp_ns.unwrap_or(msgs[id].log_time_ns);
    let emit_age = |cand: &Cand| -> Option<i64> {
        let s = msgs[cand.a].stamp_ns?;
        match &input.emit_axis {
            EmitAxis::Same => Some(cand.emit.saturating_sub(s)),
            EmitAxis::Mapped(f) => f(cand.emit).map(|e| e.saturating_sub(s)),
            EmitAxis::Unmapped => None,
        }
    };
    let mut alive: Vec<bool> = vec![true; cands.len()];
    let ages: Vec<Option<i64>> = cands.iter().map(emit_age).collect();
    if let Some(max) = c.max_age_ns {
        for (k, age) in ages.iter().enumerate() {
            if age.is_some_and(|a| a > max) {
                alive[k] = false;
                reject_cand_whole(&mut ctx, &cands[k].members, cands[k].a, Reason::StaleAtEmit);
            }
        }
    }
    if let Some(target) = &c.tf_target {
        let mut queries = Vec::new();
        let mut owner = Vec::new();
        for (k, cand) in cands.iter().enumerate() {
            if !alive[k] {
                continue;
            }
            for id in std::iter::once(cand.a).chain(cand.members.iter().map(|&x| x as usize)) {
                queries.push(bagscope_tf::Query {
                    asof_log_ns: cand.emit,
                    frame_id: msgs[id].frame_id.to_string(),
                    stamp_ns: stamp_or_log(id),
                });
                owner.push(k);
            }
        }
        let res = bagscope_tf::availability(target, c.tf_cache_ns, input.tf, &queries);
        let mut bad = vec![false; cands.len()];
        for (q, r) in res.iter().enumerate() {
            if r.is_err() {
                bad[owner[q]] = true;
            }
        }
        for (k, cand) in cands.iter().enumerate() {
            if bad[k] && alive[k] {
                alive[k] = false;
                reject_cand_whole(&mut ctx, &cand.members, cand.a, Reason::FrameUnavailable);
            }
        }
    }
    let prepared: Vec<Whole> = input
        .states
        .iter()
        .zip(&c.state)
        .map(|(s, sp)| Whole::new(s, sp))
        .collect();
    let mut last_hold: Vec<Option<(u64, u32)>> = vec![None; prepared.len()];
    let mut unavailable = vec![0usize; prepared.len()];
    let mut observations = Vec::new();
    let member_topic_of = |id: usize| msgs[id].topic;
    for (k, cand) in cands.iter().enumerate() {
        if !alive[k] {
            continue;
        }
        let am = &msgs[cand.a];
        let Some(astamp) = am.stamp_ns else {
            reject_cand_whole(
                &mut ctx,
                &cand.members,
                cand.a,
                Reason::Sync(DropReason::HeaderlessRejected),
            );
            continue;
        };
        let epoch = anchor_epoch[ctx.index[cand.a] as usize] as usize;
        let mut state = Vec::with_capacity(prepared.len());
        let mut missing = false;
        let mut used = vec![None; prepared.len()];
        for (s, p) in prepared.iter().enumerate() {
            match p.lookup(epoch, astamp, am.log_time_ns) {
                Some((v, u)) => {
                    used[s] = u;
                    state.push(Some(v));
                }
                None => {
                    unavailable[s] += 1;
                    if !p.spec.optional {
                        missing = true;
                    }
                    state.push(None);
                }
            }
        }
        if missing {
            reject_cand_whole(&mut ctx, &cand.members, cand.a, Reason::StateUnavailable);
            continue;
        }
        for (s, u) in used.iter().enumerate() {
            let (Some(u), Some(v)) = (u, state[s].as_mut()) else {
                continue;
            };
            let count = match last_hold[s] {
                Some((prev, n)) if prev == *u => n + 1,
                _ => 0,
            };
            last_hold[s] = Some((*u, count));
            v.reuse_count = Some(count);
        }
        let mut lo = astamp;
        let mut hi = astamp;
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        fnv(&mut h, input.policy_version.as_bytes());
        fnv(&mut h, topics[0].as_bytes());
        fnv(&mut h, &(ctx.index[cand.a] as u64).to_le_bytes());
        let members: Vec<MemberRef> = cand
            .members
            .iter()
            .map(|&x| {
                let x = x as usize;
                let m = &msgs[x];
                if let Some(s) = m.stamp_ns {
                    lo = lo.min(s);
                    hi = hi.max(s);
                }
                fnv(&mut h, topics[member_topic_of(x)].as_bytes());
                fnv(&mut h, &(ctx.index[x] as u64).to_le_bytes());
                MemberRef {
                    index: ctx.index[x] as usize,
                    stamp_ns: m.stamp_ns,
                    offset_ns: m.stamp_ns.map(|s| s.saturating_sub(astamp)),
                    frame_id: m.frame_id.clone(),
                    log_time_ns: m.log_time_ns,
                }
            })
            .collect();
        observations.push(Observation {
            observation_id: format!("{h:016x}"),
            anchor_index: ctx.index[cand.a] as usize,
            anchor_stamp_ns: astamp,
            anchor_log_time_ns: am.log_time_ns,
            anchor_frame_id: am.frame_id.clone(),
            clock_epoch: epoch as u32,
            emit_log_time_ns: cand.emit,
            emit_age_ns: ages[k],
            span_ns: hi.saturating_sub(lo),
            members,
            state,
        });
    }

    // Rejections: every synchronized message in no observation.
    let mut in_obs = vec![false; msgs.len()];
    for o in &observations {
        in_obs[ctx.anchors[o.anchor_index] as usize] = true;
    }
    for cand in &cands {
        if observations
            .binary_search_by_key(&(ctx.index[cand.a] as usize), |o| o.anchor_index)
            .is_ok()
        {
            for &m in &cand.members {
                in_obs[m as usize] = true;
            }
        }
    }
    let mut rejections: Vec<Rejection> = msgs
        .iter()
        .enumerate()
        .filter(|&(i, _)| !in_obs[i])
        .map(|(i, m)| Rejection {
            topic: m.topic,
            index: ctx.index[i] as usize,
            stamp_ns: m.stamp_ns,
            reason: ctx.reason[i].unwrap_or(Reason::Sync(DropReason::NeverMatched)),
            log_time_ns: m.log_time_ns,
        })
        .collect();
    rejections.sort_by_key(|r| (r.topic, r.index));

    // Summary.
    let mut drops = BTreeMap::new();
    let mut rejected_anchors = BTreeMap::new();
    for r in &rejections {
        *drops.entry(r.reason).or_insert(0) += 1;
        if r.topic == 0 {
            *rejected_anchors.entry(r.reason).or_insert(0) += 1;
        }
    }
    let mut states = Vec::new();
    let (mut all_gap, mut all_wait) = (Vec::new(), Vec::new());
    for (s, p) in prepared.iter().enumerate() {
        let vals = |f: fn(&StateValue) -> Option<i64>| -> Vec<i64> {
            observations
                .iter()
                .filter_map(|o| o.state[s].as_ref().and_then(f))
                .collect()
        };
        let gap = vals(|v| v.gap_ns);
        let wait = vals(|v| v.online_wait_ns);
        all_gap.extend_from_slice(&gap);
        all_wait.extend_from_slice(&wait);
        states.push(StateSummary {
            topic: p.spec.topic.clone(),
            mode: p.spec.mode,
            samples: p.series.samples.len(),
            unavailable: unavailable[s],
            gap_ns: whole_summary(gap),
            online_wait_ns: whole_summary(wait),
            hold_age_ns: whole_summary(vals(|v| v.hold_age_ns)),
            interpolation_error_rms: (p.spec.mode == StateMode::Interpolate)
                .then(|| p.holdout_rms())
                .flatten(),
        });
    }
    let n_epochs = ctx.flush.len() + 1;
    let mut epochs: Vec<EpochSummary> = (0..n_epochs)
        .map(|e| EpochSummary {
            epoch: e as u32,
            start_log_time_ns: if e == 0 {
                ctx.anchors
                    .first()
                    .map_or(0, |&a| msgs[a as usize].log_time_ns)
            } else {
                msgs[ctx.flush[e - 1]].log_time_ns
            },
            anchors: 0,
            observations: 0,
            flushed: 0,
            warmup_anchors: 0,
        })
        .collect();
    for &e in &anchor_epoch {
        epochs[e as usize].anchors += 1;
    }
    for o in &observations {
        epochs[o.clock_epoch as usize].observations += 1;
    }
    for (i, (reason, &used)) in ctx.reason.iter().zip(&in_obs).enumerate() {
        if *reason == Some(Reason::Sync(DropReason::ClockEpochChanged)) && !used {
            // Held when the epoch it arrived in ended.
            let e = ctx.flush.partition_point(|&f| f <= i);
            epochs[e.min(n_epochs - 1)].flushed += 1;
        }
    }
    for (e, &f) in ctx.flush.iter().enumerate() {
        let end = ctx.flush.get(e + 1).copied().unwrap_or(msgs.len());
        let mut seen = vec![false; n_topics];
        seen[0] = true;
        let mut left = n_topics - 1;
        let mut warm = 0usize;
        for m in &msgs[f..end] {
            if left == 0 {
                break;
            }
            if m.topic == 0 {
                warm += 1;
            } else if !seen[m.topic] {
                seen[m.topic] = true;
                left -= 1;
            }
        }
        epochs[e + 1].warmup_anchors = warm;
    }
    let summary = ObserveSummary {
        anchors: ctx.anchors.len(),
        observations: observations.len(),
        drops,
        rejected_anchors,
        span_ns: whole_summary(observations.iter().map(|o| o.span_ns).collect()),
        emit_age_ns: whole_summary(observations.iter().filter_map(|o| o.emit_age_ns).collect()),
        gap_ns: whole_summary(all_gap),
        online_wait_ns: whole_summary(all_wait),
        state: states,
        epochs,
        emit_age_axis: match input.emit_axis {
            EmitAxis::Same => "same",
            EmitAxis::Mapped(_) => "clock",
            EmitAxis::Unmapped => "none",
        },
    };
    Ok(ObserveReport {
        policy_version: input.policy_version.to_string(),
        anchor_topic: c.anchor.clone(),
        member_topics: topics[1..].to_vec(),
        topics,
        state_topics: c.state.iter().map(|s| s.topic.clone()).collect(),
        state_fields: input.states.iter().map(|s| s.fields.clone()).collect(),
        state_has_names: input.states.iter().map(|s| s.has_names).collect(),
        groups: c.groups.clone(),
        observations,
        rejections,
        summary,
    })
}

/// A whole candidate set rejected by a gate: the reason goes on each of its messages.
fn reject_cand_whole(ctx: &mut Ctx, members: &[u32], anchor: usize, r: Reason) {
    ctx.set_reason(anchor, r);
    for &m in members {
        ctx.set_reason(m as usize, r);
    }
}

/// xorshift64*: inputs made at random, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo).max(1) as u64) as i64
    }
}

/// An input of every kind the builder meets: member groups of each policy (flat and
/// hierarchical) or none, dropped and late frames, missing stamps, clock jumps of the anchor
/// and of the state topics (not always together), state samples out of stamp order, names
/// that change order, optional states, a TF gate with gaps, freshness, mapped emit ages.
fn random_input(
    r: &mut Rng,
) -> (
    Contract,
    Vec<SyncMessage>,
    Vec<StateSeries>,
    Vec<TfMessage>,
    bool,
) {
    let policies = [
        Policy::ApproxPy,
        Policy::Exact,
        Policy::Approx,
        Policy::ApproxEpsilon,
        Policy::ExactPy,
    ];
    let n_groups = r.below(3) as usize;
    let mut groups = Vec::new();
    let mut names = Vec::new();
    for g in 0..n_groups {
        let k = 1 + r.below(2) as usize;
        let topics: Vec<String> = (0..k).map(|i| format!("/g{g}m{i}")).collect();
        names.extend(topics.clone());
        let policy = policies[r.below(policies.len() as u64) as usize];
        groups.push(GroupSpec {
            name: format!("g{g}"),
            policy,
            topics,
            queue: 1 + r.below(6) as usize,
            slop_ns: (policy == Policy::ApproxPy).then(|| r.range(1, 20) * MS),
            epsilon_ns: (policy == Policy::ApproxEpsilon).then(|| r.range(1, 20) * MS),
            age_penalty: None,
            max_interval_ns: None,
            hierarchical: k >= 2 && r.chance(400),
        });
    }
    let n_members = names.len();
    let n_anchor = r.range(5, 400);
    let period = r.range(5, 40) * MS;
    let jump_at = r.chance(300).then(|| r.range(1, n_anchor));
    let base = 1_000_000 * MS;
    let mut msgs = Vec::new();
    for k in 0..n_anchor {
        let mut nominal = base + k * period;
        if jump_at.is_some_and(|j| k >= j) {
            nominal -= 500_000 * MS;
        }
        for t in 0..=n_members {
            if r.chance(if t == 0 { 30 } else { 60 }) {
                continue;
            }
            let stamp = nominal
                + if t == 0 {
                    if r.chance(10) {
                        r.range(-990, 0) * MS
                    } else {
                        0
                    }
                } else {
                    r.range(-4, 5) * MS
                };
            let delay = r.range(1, 15) * MS + if r.chance(20) { 200 * MS } else { 0 };
            let frame = if r.chance(50) { "nowhere" } else { "cam" };
            msgs.push(SyncMessage {
                topic: t,
                stamp_ns: (!r.chance(15)).then_some(stamp),
                log_time_ns: base + k * period + delay + r.range(0, 3),
                frame_id: frame.into(),
            });
        }
    }
    msgs.sort_by_key(|m| m.log_time_ns);
    let modes = [StateMode::Nearest, StateMode::Interpolate, StateMode::Hold];
    let mut state = Vec::new();
    let mut series = Vec::new();
    for s in 0..r.below(3) {
        let topic = format!("/s{s}");
        let mode = modes[r.below(3) as usize];
        state.push(StateSpec {
            topic: topic.clone(),
            mode,
            max_gap_ns: r.range(2, 60) * MS,
            continuous_joints: vec!["b".into()],
            optional: r.chance(300),
        });
        let sp = r.range(2, 30) * MS;
        let start = r.range(-20, 60) * period;
        let end = n_anchor * period - r.range(-20, 60) * period;
        let jump = r.chance(400).then(|| r.range(0, n_anchor * period));
        let mut samples = Vec::new();
        let mut t = start;
        while t < end {
            // Mostly in order; now and then stamped late, up to past the epoch threshold.
            let late = if r.chance(40) {
                r.range(-1100, 0) * MS
            } else if r.chance(100) {
                r.range(-40, 40) * MS
            } else {
                0
            };
            let mut stamp = base + t + late;
            if jump.is_some_and(|j| t >= j) {
                stamp -= 500_000 * MS;
            }
            let x = t as f64 * 1e-9;
            let names: Names = if r.chance(100) {
                vec!["b".to_string(), "a".to_string()].into()
            } else {
                vec!["a".to_string(), "b".to_string()].into()
            };
            let h = (x * 0.3).sin() * 0.5;
            samples.push(StateSample {
                stamp_ns: stamp,
                log_time_ns: base + t + r.range(0, 8) * MS,
                values: vec![
                    vec![x.sin(), (x * 7.0).rem_euclid(6.0) - 3.0],
                    vec![0.0],
                    vec![0.0],
                    vec![h.sin()],
                    vec![h.cos()],
                    vec![x],
                ],
                names: Some(names),
            });
            t += sp
                + r.range(0, 3) * MS
                + if r.chance(30) {
                    r.range(0, 200) * MS
                } else {
                    0
                };
        }
        samples.sort_by_key(|s| s.log_time_ns);
        let field = |n: &str, list: bool| StateField {
            name: n.into(),
            list,
        };
        series.push(StateSeries {
            topic,
            fields: vec![
                field("position", true),
                field("orientation.x", false),
                field("orientation.y", false),
                field("orientation.z", false),
                field("orientation.w", false),
                field("temperature", false),
            ],
            has_names: true,
            samples,
        });
    }
    let tf_gate = r.chance(400);
    let mut tf = Vec::new();
    if tf_gate {
        let tr = |parent: &str, child: &str, stamp: i64| bagscope_tf::TfTransform {
            parent: parent.into(),
            child: child.into(),
            stamp_ns: stamp,
        };
        tf.push(TfMessage {
            log_time_ns: base + n_anchor * period / 2,
            source: 1,
            is_static: true,
            transforms: vec![tr("base", "cam", 0)],
        });
        let gap = r.range(0, n_anchor * period);
        let mut t = 0;
        while t < n_anchor * period + 100 * MS {
            if !(gap..gap + 300 * MS).contains(&t) {
                tf.push(TfMessage {
                    log_time_ns: base + t + 2 * MS,
                    source: 0,
                    is_static: false,
                    transforms: vec![tr("odom", "base", base + t)],
                });
            }
            t += 20 * MS;
        }
        tf.sort_by_key(|m| m.log_time_ns);
    }
    let c = Contract {
        anchor: "/anchor".into(),
        groups,
        state,
        max_age_ns: r.chance(300).then(|| r.range(5, 40) * MS),
        tf_target: tf_gate.then(|| "odom".to_string()),
        tf_cache_ns: bagscope_tf::DEFAULT_CACHE_NS,
    };
    (c, msgs, series, tf, r.chance(300))
}

/// The streaming builder gives the whole-input builder's report, observation for
/// observation and rejection for rejection, on inputs of every kind.
#[test]
fn streaming_equals_the_whole_input_builder() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    fn mapped(log: i64) -> Option<i64> {
        (log % 7 != 0).then(|| log - 3 * MS)
    }
    let mut with_groups = 0;
    for case in 0..400 {
        let (c, msgs, series, tf, map) = random_input(&mut r);
        with_groups += usize::from(!c.groups.is_empty());
        let input = |axis: EmitAxis<'static>| Input {
            contract: &c,
            policy_version: "0123456789abcdef",
            messages: &msgs,
            states: &series,
            tf: &tf,
            emit_axis: axis,
        };
        let axis = || {
            if map {
                EmitAxis::Mapped(&mapped)
            } else {
                EmitAxis::Same
            }
        };
        let want = format!("{:?}", build_whole(&input(axis())));
        // Trimmed as usual, and after every input (what is dropped is never needed).
        for trim_from in [1024, 0] {
            let got = format!("{:?}", build_trimming_from(&input(axis()), trim_from));
            assert!(
                got == want,
                "case {case}, trim from {trim_from}: {c:?}\nstreamed: {got}\nwhole:    {want}"
            );
        }
    }
    assert!(with_groups > 200);
}

/// What the streaming builder holds stays bounded by the rates and the clock-jump window,
/// not the input's length: 200 000 anchors at 1 kHz with a 1 kHz interpolated state.
#[test]
fn streaming_holds_a_window_not_the_input() {
    struct Count(usize, usize);
    impl Sink<()> for Count {
        fn observation(&mut self, _: Observation, _: Vec<()>) {
            self.0 += 1;
        }
        fn rejection(&mut self, _: Rejection) {
            self.1 += 1;
        }
    }
    let mut c = contract(Vec::new());
    c.state.push(StateSpec {
        topic: "/js".into(),
        mode: StateMode::Interpolate,
        max_gap_ns: 5 * MS,
        continuous_joints: Vec::new(),
        optional: false,
    });
    let mut b = Builder::new(
        StreamInput {
            contract: &c,
            policy_version: "p",
            plan: None,
            tf_static: &[],
            axis: AxisChoice::Given(EmitAxis::Same),
            values: Box::new(|| Box::new(VecValues::default())),
        },
        Count(0, 0),
    )
    .unwrap();
    b.state_fields(
        0,
        &[StateField {
            name: "position".into(),
            list: true,
        }],
        false,
    );
    let mut most = 0;
    for k in 0..200_000i64 {
        let t = 1_000_000 * MS + k * MS;
        b.state(
            0,
            StateSample {
                stamp_ns: t,
                log_time_ns: t + MS / 2,
                values: vec![vec![k as f64]],
                names: None,
            },
        );
        b.sync(
            SyncMessage {
                topic: 0,
                stamp_ns: Some(t + MS / 3),
                log_time_ns: t + MS,
                frame_id: "cam".into(),
            },
            (),
        );
        most = most.max(b.held());
    }
    let (r, sink) = b.finish();
    assert_eq!(sink.0, 199_999);
    assert_eq!(r.summary.observations, 199_999);
    // The anchors waiting for the state to settle (a clock jump's worth: 1 s at 1 kHz), the
    // samples around them, and twice that before a trim.
    assert!(most < 8_000, "held up to {most}");
}
