use super::*;
use crate::coordinator::group::membership::{JoinOutcome, JoinRequest, SyncOutcome, SyncRequest};

const LIMITS: GroupLimits = GroupLimits {
    min_session_timeout_ms: 1_000,
    max_session_timeout_ms: 60_000,
    initial_rebalance_delay_ms: 100,
    max_size: 10,
};

fn join_req(member_id: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_string(),
        group_instance_id: None,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 5_000,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|p| (p.to_string(), p.as_bytes().to_vec()))
            .collect(),
        require_known_member_id: true,
        supports_skip_assignment: false,
    }
}

fn sync_req(member_id: &str, generation: i32, assignments: &[(&str, &[u8])]) -> SyncRequest {
    SyncRequest {
        member_id: member_id.to_string(),
        group_instance_id: None,
        generation,
        protocol_type: Some("consumer".into()),
        protocol_name: None,
        assignments: assignments.iter().map(|(m, a)| (m.to_string(), a.to_vec())).collect(),
    }
}

/// Joins a new dynamic member through MEMBER_ID_REQUIRED; returns its id and the outcome.
fn join_new(g: &mut Group, now: i64, effects: &mut Vec<Effect>) -> (String, JoinOutcome) {
    let first = g.join(join_req("", &["range"]), now, &LIMITS, effects);
    let JoinOutcome::Now(r) = first else {
        panic!("{first:?}")
    };
    assert_eq!(r.error, Some(GroupError::MemberIdRequired));
    assert!(r.member_id.starts_with("client-"));
    let id = r.member_id.clone();
    let outcome = g.join(join_req(&id, &["range"]), now, &LIMITS, effects);
    (id, outcome)
}

fn joins(effects: &[Effect]) -> Vec<(String, JoinResult)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::JoinDone { member_id, result } => Some((member_id.clone(), result.clone())),
            _ => None,
        })
        .collect()
}

/// A stable group of the given size at generation 1, every member synced.
fn stable_group(n: usize) -> (Group, Vec<String>) {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    let ids: Vec<String> = (0..n).map(|_| join_new(&mut g, 0, &mut fx).0).collect();
    assert!(g.is(GroupState::PreparingRebalance));
    // The initial delay, extended once when more than one member came during it.
    fx.extend(g.tick(100, &LIMITS));
    fx.extend(g.tick(200, &LIMITS));
    assert!(g.is(GroupState::CompletingRebalance), "{:?}", g.state);
    let leader = g.leader.clone().expect("leader");
    let assignments: Vec<(&str, &[u8])> = ids.iter().map(|m| (m.as_str(), &b"a"[..])).collect();
    assert_eq!(
        g.sync(sync_req(&leader, 1, &assignments), 100),
        SyncOutcome::Store { generation: 1 }
    );
    g.assignment_stored(1, Ok(()), 100, &LIMITS);
    assert!(g.is(GroupState::Stable));
    (g, ids)
}

#[test]
fn the_first_rebalance_waits_the_initial_delay_and_the_leader_gets_every_member() {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    let (a, out) = join_new(&mut g, 0, &mut fx);
    assert_eq!(out, JoinOutcome::Parked { member_id: a.clone() });
    assert!(g.is(GroupState::PreparingRebalance));
    assert_eq!(g.next_deadline(), Some(100), "the initial delay");
    let (b, out) = join_new(&mut g, 50, &mut fx);
    assert_eq!(out, JoinOutcome::Parked { member_id: b.clone() });
    // Everyone joined, but a member arrived during the delay: it is extended once.
    assert!(g.tick(100, &LIMITS).is_empty());
    assert!(g.is(GroupState::PreparingRebalance));
    let done = joins(&g.tick(200, &LIMITS));
    assert_eq!(done.len(), 2);
    assert!(g.is(GroupState::CompletingRebalance));
    assert_eq!(g.generation, 1);
    assert_eq!(g.protocol.as_deref(), Some("range"));
    let leader = g.leader.clone().expect("leader");
    for (id, r) in &done {
        assert_eq!((&r.error, r.generation, r.leader.as_str()), (&None, 1, leader.as_str()));
        assert_eq!(r.members.len(), if *id == leader { 2 } else { 0 });
    }
    // Followers wait for the leader's assignment; the leader's sync asks to store the group.
    let follower = if leader == a { &b } else { &a };
    assert_eq!(g.sync(sync_req(follower, 1, &[]), 210), SyncOutcome::Parked);
    let out = g.sync(sync_req(&leader, 1, &[(&a, b"A"), (&b, b"B")]), 220);
    assert_eq!(out, SyncOutcome::Store { generation: 1 });
    assert!(g.is(GroupState::CompletingRebalance), "stable only once stored");
    let fx = g.assignment_stored(1, Ok(()), 230, &LIMITS);
    assert!(g.is(GroupState::Stable));
    let mut synced: Vec<(String, Vec<u8>)> = fx
        .into_iter()
        .filter_map(|e| match e {
            Effect::SyncDone { member_id, result } => Some((member_id, result.assignment)),
            _ => None,
        })
        .collect();
    synced.sort();
    let mut want = vec![(a.clone(), b"A".to_vec()), (b.clone(), b"B".to_vec())];
    want.sort();
    assert_eq!(synced, want);
    // A late sync in Stable gets the stored assignment at once.
    assert_eq!(
        g.sync(sync_req(&a, 1, &[]), 240),
        SyncOutcome::Now(SyncResult {
            error: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignment: b"A".to_vec()
        })
    );
}

#[test]
fn a_new_member_makes_the_others_rejoin_and_the_join_completes_when_all_are_back() {
    let (mut g, ids) = stable_group(2);
    let mut fx = Vec::new();
    let (c, out) = join_new(&mut g, 1_000, &mut fx);
    assert_eq!(out, JoinOutcome::Parked { member_id: c.clone() });
    assert!(g.is(GroupState::PreparingRebalance));
    assert_eq!(
        g.heartbeat(&ids[0], None, 1, 1_001),
        Err(GroupError::RebalanceInProgress)
    );
    let out = g.join(join_req(&ids[0], &["range"]), 1_002, &LIMITS, &mut fx);
    assert!(matches!(out, JoinOutcome::Parked { .. }));
    // The last one back completes the rebalance and gets its answer directly.
    let out = g.join(join_req(&ids[1], &["range"]), 1_003, &LIMITS, &mut fx);
    let JoinOutcome::Now(r) = out else { panic!("{out:?}") };
    assert_eq!((r.error, r.generation), (None, 2));
    assert_eq!(joins(&fx).len(), 2, "the other two parked joins are answered");
    assert!(g.is(GroupState::CompletingRebalance));
    // An old generation is refused.
    assert_eq!(g.heartbeat(&ids[0], None, 1, 1_004), Err(GroupError::IllegalGeneration));
    assert_eq!(g.heartbeat(&ids[0], None, 2, 1_004), Ok(()));
}

#[test]
fn a_member_that_does_not_rejoin_in_time_is_dropped_from_the_next_generation() {
    let (mut g, ids) = stable_group(2);
    let mut fx = Vec::new();
    let out = g.join(join_req(&ids[0], &["range", "roundrobin"]), 1_000, &LIMITS, &mut fx);
    assert!(matches!(out, JoinOutcome::Parked { .. }), "changed protocols rebalance");
    assert_eq!(g.next_deadline(), Some(6_000), "the rebalance timeout");
    let done = joins(&g.tick(6_000, &LIMITS));
    assert_eq!(done.len(), 1);
    assert_eq!(g.members.len(), 1);
    assert!(!g.members.contains_key(&ids[1]));
    assert_eq!(g.leader.as_deref(), Some(ids[0].as_str()));
    assert_eq!(done[0].1.members.len(), 1);
}

#[test]
fn a_silent_member_is_removed_after_its_session_timeout() {
    let (mut g, ids) = stable_group(2);
    // Member 0 keeps heartbeating; member 1 stops.
    let end = g.members[&ids[1]].heartbeat_deadline;
    assert_eq!(g.heartbeat(&ids[0], None, 1, end - 1_000), Ok(()));
    assert!(g.tick(end - 1, &LIMITS).is_empty());
    g.tick(end, &LIMITS);
    assert!(!g.members.contains_key(&ids[1]), "member 1's session ended");
    assert!(g.is(GroupState::PreparingRebalance));
    assert_eq!(g.heartbeat(&ids[1], None, 1, end + 1), Err(GroupError::UnknownMemberId));
}

#[test]
fn leaving_rebalances_the_rest_and_the_last_one_out_leaves_an_empty_group_to_store() {
    let (mut g, ids) = stable_group(2);
    let mut fx = Vec::new();
    assert_eq!(g.leave(&ids[0], None, 500, &LIMITS, &mut fx), Ok(()));
    assert!(g.is(GroupState::PreparingRebalance));
    assert_eq!(
        g.leave(&ids[0], None, 501, &LIMITS, &mut fx),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(g.leave(&ids[1], None, 502, &LIMITS, &mut fx), Ok(()));
    assert!(g.is(GroupState::Empty));
    assert!(fx.contains(&Effect::Store { generation: 2 }));
    assert!(g.to_stored().members.is_empty());
}

#[test]
fn requests_out_of_bounds_or_out_of_place_get_kafkas_errors() {
    let (mut g, ids) = stable_group(1);
    let mut fx = Vec::new();
    let mut short = join_req("", &["range"]);
    short.session_timeout_ms = 10;
    assert_eq!(
        g.join(short, 0, &LIMITS, &mut fx),
        JoinOutcome::Now(JoinResult::error(GroupError::InvalidSessionTimeout, ""))
    );
    let mut other_type = join_req("", &["range"]);
    other_type.protocol_type = "connect".into();
    assert_eq!(
        g.join(other_type, 0, &LIMITS, &mut fx),
        JoinOutcome::Now(JoinResult::error(GroupError::InconsistentGroupProtocol, ""))
    );
    assert_eq!(
        g.join(join_req("nobody", &["range"]), 0, &LIMITS, &mut fx),
        JoinOutcome::Now(JoinResult::error(GroupError::UnknownMemberId, "nobody"))
    );
    assert_eq!(
        g.sync(sync_req(&ids[0], 7, &[]), 0),
        SyncOutcome::Now(SyncResult::error(GroupError::IllegalGeneration))
    );
    assert_eq!(g.check_commit(&ids[0], None, 1, 0), Ok(()));
    assert_eq!(g.check_commit("nobody", None, 1, 0), Err(GroupError::UnknownMemberId));
    assert_eq!(g.check_commit(&ids[0], None, 0, 0), Err(GroupError::IllegalGeneration));
    let mut empty = Group::new("e", 0);
    assert_eq!(
        empty.check_commit("", None, -1, 0),
        Ok(()),
        "assign() consumers commit freely"
    );
}

#[test]
fn a_failed_group_write_fails_the_syncs_and_rebalances() {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    let (a, _) = join_new(&mut g, 0, &mut fx);
    g.tick(100, &LIMITS);
    assert!(matches!(
        g.sync(sync_req(&a, 1, &[(&a, b"A")]), 100),
        SyncOutcome::Store { .. }
    ));
    let fx = g.assignment_stored(1, Err(GroupError::NotCoordinator), 110, &LIMITS);
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::SyncDone { result, .. } if result.error == Some(GroupError::NotCoordinator))));
    assert!(g.is(GroupState::PreparingRebalance));
}

#[test]
fn stored_groups_load_as_stable_with_fresh_sessions_and_round_trip() {
    let (g, ids) = stable_group(2);
    let stored = g.to_stored();
    let loaded = Group::from_stored("g", stored.clone(), 50_000);
    assert!(loaded.is(GroupState::Stable));
    assert_eq!(loaded.generation, 1);
    assert_eq!(loaded.members[&ids[0]].heartbeat_deadline, 60_000);
    assert_eq!(loaded.members[&ids[0]].assignment, b"a");
    assert_eq!(loaded.to_stored().members, stored.members);
    assert!(Group::from_stored("e", Default::default(), 0).is(GroupState::Empty));
}

#[test]
fn the_protocol_most_members_prefer_among_those_all_support_wins() {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    for protocols in [
        &["cooperative-sticky", "range"][..],
        &["range", "cooperative-sticky"],
        &["range"],
    ] {
        let mut req = join_req("", protocols);
        req.require_known_member_id = false;
        g.join(req, 0, &LIMITS, &mut fx);
    }
    assert_eq!(
        g.select_protocol().as_deref(),
        Some("range"),
        "only range is common to all"
    );
    assert_eq!(GroupState::parse("stable"), Some(GroupState::Stable));
}

#[test]
fn a_new_member_waiting_in_a_slow_rebalance_is_not_expired_by_its_session() {
    let (mut g, ids) = stable_group(1);
    let mut fx = Vec::new();
    // A newcomer with a 1 s session; the old member takes 3 s to notice and rejoin.
    let mut req = join_req("", &["range"]);
    req.session_timeout_ms = 1_000;
    let JoinOutcome::Now(r) = g.join(req.clone(), 1_000, &LIMITS, &mut fx) else {
        panic!()
    };
    req.member_id = r.member_id.clone();
    let out = g.join(req, 1_000, &LIMITS, &mut fx);
    assert_eq!(
        out,
        JoinOutcome::Parked {
            member_id: r.member_id.clone()
        }
    );
    assert_eq!(
        g.members[&r.member_id].heartbeat_deadline,
        1_000 + crate::coordinator::group::membership::NEW_MEMBER_JOIN_TIMEOUT_MS
    );
    g.tick(3_500, &LIMITS);
    assert!(g.members.contains_key(&r.member_id), "not expired by its 1 s session");
    let out = g.join(join_req(&ids[0], &["range"]), 4_000, &LIMITS, &mut fx);
    assert!(matches!(out, JoinOutcome::Now(ref j) if j.error.is_none()), "{out:?}");
    assert!(
        joins(&fx).iter().any(|(m, j)| *m == r.member_id && j.error.is_none()),
        "the newcomer is answered"
    );
    // Once in the generation, its own session applies.
    assert_eq!(g.members[&r.member_id].heartbeat_deadline, 5_000);
}

#[path = "static_member_tests.rs"]
mod static_members;

/// Two members through the first rebalance with `session_ms` sessions: (group, leader,
/// follower, the time the join completed), in CompletingRebalance at generation 1.
fn completing_group(session_ms: i32) -> (Group, String, String, i64) {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let mut req = join_req("", &["range"]);
            req.session_timeout_ms = session_ms;
            let JoinOutcome::Now(r) = g.join(req.clone(), 0, &LIMITS, &mut fx) else {
                panic!("member id required")
            };
            req.member_id = r.member_id.clone();
            assert!(matches!(g.join(req, 0, &LIMITS, &mut fx), JoinOutcome::Parked { .. }));
            r.member_id
        })
        .collect();
    let mut now = 0;
    while !g.is(GroupState::CompletingRebalance) {
        now += 100;
        g.tick(now, &LIMITS);
    }
    let leader = g.leader.clone().expect("leader");
    let follower = ids.into_iter().find(|m| *m != leader).expect("follower");
    (g, leader, follower, now)
}

#[test]
fn a_leader_that_joins_again_while_its_assignment_is_awaited_gets_the_members_again() {
    let (mut g, leader, follower, now) = completing_group(10_000);
    let out = g.join(join_req(&leader, &["range"]), now + 5, &LIMITS, &mut Vec::new());
    let JoinOutcome::Now(r) = out else { panic!("{out:?}") };
    assert_eq!((r.error, r.generation, r.leader.as_str()), (None, 1, leader.as_str()));
    assert_eq!(r.members.len(), 2, "the leader needs the members to assign");
    assert!(!r.skip_assignment);
    let out = g.join(join_req(&follower, &["range"]), now + 6, &LIMITS, &mut Vec::new());
    let JoinOutcome::Now(r) = out else { panic!("{out:?}") };
    assert!(r.members.is_empty());
    assert!(g.is(GroupState::CompletingRebalance), "no new rebalance");
}

#[test]
fn a_member_parked_in_sync_group_outlives_its_session_while_the_leader_assigns() {
    // Sessions (2 s) shorter than the rebalance timeout (5 s), as librdkafka's defaults are.
    let (mut g, leader, follower, now) = completing_group(2_000);
    assert_eq!(g.sync(sync_req(&follower, 1, &[]), now + 10), SyncOutcome::Parked);
    for t in [1_000, 2_000, 3_000] {
        assert_eq!(g.heartbeat(&leader, None, 1, now + t), Ok(()));
    }
    let fx = g.tick(now + 3_500, &LIMITS);
    assert!(fx.is_empty(), "{fx:?}");
    assert!(
        g.members.contains_key(&follower),
        "Kafka: awaiting sync satisfies the heartbeat"
    );
    assert!(g.is(GroupState::CompletingRebalance));
    let out = g.sync(sync_req(&leader, 1, &[(&leader, b"L"), (&follower, b"F")]), now + 3_600);
    assert_eq!(out, SyncOutcome::Store { generation: 1 });
    let fx = g.assignment_stored(1, Ok(()), now + 3_700, &LIMITS);
    assert!(fx.contains(&Effect::SyncDone {
        member_id: follower.clone(),
        result: SyncResult {
            error: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignment: b"F".to_vec(),
        },
    }));
    // Answered, it has a fresh session, which counts again.
    assert!(g.tick(now + 3_701, &LIMITS).is_empty());
    assert!(g.members.contains_key(&follower));
    assert_eq!(g.heartbeat(&leader, None, 1, now + 5_000), Ok(()));
    g.tick(now + 3_700 + 2_000, &LIMITS);
    assert!(!g.members.contains_key(&follower), "silent since its sync");
    assert!(g.is(GroupState::PreparingRebalance));
}
