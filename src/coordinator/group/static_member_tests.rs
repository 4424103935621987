//! KIP-345 static members restarting: Kafka 3.9's `updateStaticMemberAndRebalance`.

use super::*;
use crate::coordinator::group::membership::StaticRejoin;

fn static_join(instance: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        group_instance_id: Some(instance.into()),
        // librdkafka's JoinGroup v5: no SkipAssignment.
        supports_skip_assignment: false,
        ..join_req("", protocols)
    }
}

/// A Stable group at generation 1 of static members `s0`, `s1`, ..., each assigned `A<i>`;
/// returns the member ids in instance order.
fn static_group(n: usize, protocols: &[&str]) -> (Group, Vec<String>) {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    let ids: Vec<String> = (0..n)
        .map(
            |i| match g.join(static_join(&format!("s{i}"), protocols), 0, &LIMITS, &mut fx) {
                // Static members skip MEMBER_ID_REQUIRED.
                JoinOutcome::Parked { member_id } => member_id,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    let mut now = 0;
    while !g.is(GroupState::CompletingRebalance) {
        now += 100;
        assert!(now < 10_000, "{:?}", g.state);
        fx.extend(g.tick(now, &LIMITS));
    }
    let leader = g.leader.clone().expect("leader");
    let assignments: Vec<(String, Vec<u8>)> = ids
        .iter()
        .enumerate()
        .map(|(i, m)| (m.clone(), format!("A{i}").into_bytes()))
        .collect();
    let mut req = sync_req(&leader, 1, &[]);
    req.assignments = assignments;
    assert_eq!(g.sync(req, now), SyncOutcome::Store { generation: 1 });
    g.assignment_stored(1, Ok(()), now, &LIMITS);
    assert!(g.is(GroupState::Stable));
    (g, ids)
}

/// The instance rejoins with an unknown member id; returns what the coordinator must store.
fn rejoin(g: &mut Group, req: JoinRequest, now: i64) -> (String, StaticRejoin) {
    let mut fx = Vec::new();
    match g.join(req, now, &LIMITS, &mut fx) {
        JoinOutcome::Store { member_id, rejoin } => {
            assert!(fx.is_empty(), "nobody else is disturbed: {fx:?}");
            assert_eq!(member_id, rejoin.new_member_id);
            (member_id, rejoin)
        }
        other => panic!("expected a store without a rebalance, got {other:?}"),
    }
}

fn stored_answer(g: &mut Group, r: &StaticRejoin, outcome: Result<(), GroupError>) -> JoinResult {
    let fx = g.static_member_stored(r, outcome, 400);
    match fx.as_slice() {
        [Effect::JoinDone { member_id, result }] if *member_id == r.new_member_id => result.clone(),
        other => panic!("{other:?}"),
    }
}

fn static_sync(member_id: &str, instance: &str) -> SyncRequest {
    SyncRequest {
        group_instance_id: Some(instance.into()),
        ..sync_req(member_id, 1, &[])
    }
}

#[test]
fn a_restarted_follower_gets_its_old_assignment_in_the_same_generation_and_its_old_id_is_fenced() {
    let (mut g, ids) = static_group(2, &["range"]);
    let leader = g.leader.clone().expect("leader");
    let (i, follower) = ids.iter().enumerate().find(|(_, m)| **m != leader).expect("follower");
    let (instance, follower) = (format!("s{i}"), follower.clone());
    // A restarted librdkafka sends other metadata (no generation, no owned partitions): Kafka
    // does not look at it, only at whether the group's protocol would change.
    let mut req = static_join(&instance, &[]);
    req.protocols = vec![("range".into(), b"new metadata".to_vec())];
    let (new_id, r) = rejoin(&mut g, req, 300);
    assert_ne!(new_id, follower);
    assert!(g.is(GroupState::Stable), "no rebalance while the record is written");
    assert_eq!(g.generation, 1);
    // The new id is in the record a new coordinator would load.
    let stored = g.to_stored();
    assert!(stored
        .members
        .iter()
        .any(|m| m.member_id == new_id && m.group_instance_id.as_deref() == Some(instance.as_str())));
    assert!(!stored.members.iter().any(|m| m.member_id == follower));
    let loaded = Group::from_stored("g", stored, 300);
    assert_eq!(
        loaded.static_members[&instance], new_id,
        "a failover keeps the static member"
    );

    let res = stored_answer(&mut g, &r, Ok(()));
    assert_eq!(
        (res.error, res.generation, res.member_id.as_str()),
        (None, 1, new_id.as_str())
    );
    assert_eq!(res.leader, leader);
    assert!(res.members.is_empty() && !res.skip_assignment);
    assert!(g.is(GroupState::Stable));
    assert_eq!(g.generation, 1);

    let synced = g.sync(static_sync(&new_id, &instance), 401);
    let SyncOutcome::Now(s) = synced else {
        panic!("{synced:?}")
    };
    assert_eq!(
        (s.error, s.assignment),
        (None, format!("A{i}").into_bytes()),
        "its old assignment"
    );
    assert_eq!(g.heartbeat(&new_id, Some(&instance), 1, 402), Ok(()));
    // The old process is fenced everywhere.
    assert_eq!(
        g.heartbeat(&follower, Some(&instance), 1, 402),
        Err(GroupError::FencedInstanceId)
    );
    assert_eq!(
        g.sync(static_sync(&follower, &instance), 402),
        SyncOutcome::Now(SyncResult::error(GroupError::FencedInstanceId))
    );
    assert_eq!(
        g.check_commit(&follower, Some(&instance), 1, 402),
        Err(GroupError::FencedInstanceId)
    );
    let mut known_old = static_join(&instance, &["range"]);
    known_old.member_id = follower.clone();
    assert_eq!(
        g.join(known_old, 402, &LIMITS, &mut Vec::new()),
        JoinOutcome::Now(JoinResult::error(GroupError::FencedInstanceId, &follower))
    );
    // The other member is undisturbed.
    assert_eq!(g.heartbeat(&leader, Some(&format!("s{}", 1 - i)), 1, 403), Ok(()));
}

#[test]
fn a_restarted_leader_keeps_the_generation_and_is_not_told_it_leads_before_join_group_v9() {
    let (mut g, ids) = static_group(2, &["range"]);
    let leader = g.leader.clone().expect("leader");
    let i = ids.iter().position(|m| *m == leader).expect("leader is a member");
    let instance = format!("s{i}");
    let (new_id, r) = rejoin(&mut g, static_join(&instance, &["range"]), 300);
    assert_eq!(g.leader.as_deref(), Some(new_id.as_str()), "it still leads");
    let res = stored_answer(&mut g, &r, Ok(()));
    assert_eq!((res.error, res.generation), (None, 1));
    // The old leader id: the new process sees itself as a follower and assigns nothing.
    assert_eq!(res.leader, leader);
    assert!(res.members.is_empty() && !res.skip_assignment);
    let synced = g.sync(static_sync(&new_id, &instance), 401);
    let SyncOutcome::Now(s) = synced else {
        panic!("{synced:?}")
    };
    assert_eq!(s.assignment, format!("A{i}").into_bytes());
    assert!(g.is(GroupState::Stable));
}

#[test]
fn from_join_group_v9_a_restarted_leader_learns_it_leads_and_skips_the_assignment() {
    let (mut g, ids) = static_group(2, &["range"]);
    let leader = g.leader.clone().expect("leader");
    let i = ids.iter().position(|m| *m == leader).expect("leader is a member");
    let mut req = static_join(&format!("s{i}"), &["range"]);
    req.supports_skip_assignment = true;
    let (new_id, r) = rejoin(&mut g, req, 300);
    let res = stored_answer(&mut g, &r, Ok(()));
    assert_eq!(
        (res.error, res.generation, res.leader.as_str()),
        (None, 1, new_id.as_str())
    );
    assert!(res.skip_assignment);
    assert_eq!(res.members.len(), 2);
}

#[test]
fn a_failed_write_undoes_the_replacement() {
    let (mut g, ids) = static_group(2, &["range"]);
    let before = g.members.clone();
    let (new_id, r) = rejoin(&mut g, static_join("s1", &["range"]), 300);
    let res = stored_answer(&mut g, &r, Err(GroupError::NotCoordinator));
    assert_eq!(res.error, Some(GroupError::NotCoordinator));
    assert!(!g.members.contains_key(&new_id));
    assert_eq!(g.static_members["s1"], ids[1]);
    assert_eq!(g.members.keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
    assert_eq!(g.members[&ids[1]].assignment, b"A1");
    assert_eq!(
        g.heartbeat(&ids[1], Some("s1"), 1, 401),
        Ok(()),
        "the old process is back"
    );
    assert!(g.is(GroupState::Stable));
}

#[test]
fn a_rejoin_that_changes_the_groups_protocol_rebalances() {
    let (mut g, ids) = static_group(1, &["range", "roundrobin"]);
    assert_eq!(g.protocol.as_deref(), Some("range"));
    let mut fx = Vec::new();
    let out = g.join(static_join("s0", &["roundrobin", "range"]), 300, &LIMITS, &mut fx);
    // The only member rejoined, so the rebalance completes at once.
    let JoinOutcome::Now(res) = out else { panic!("{out:?}") };
    assert_eq!((res.error, res.generation), (None, 2));
    assert_ne!(res.member_id, ids[0]);
    assert_eq!(g.protocol.as_deref(), Some("roundrobin"));
    assert!(g.is(GroupState::CompletingRebalance));
}

#[test]
fn a_rejoin_while_the_leader_assigns_rebalances_and_fences_the_old_ids_parked_sync() {
    let mut g = Group::new("g", 0);
    let mut fx = Vec::new();
    for i in 0..2 {
        let out = g.join(static_join(&format!("s{i}"), &["range"]), 0, &LIMITS, &mut fx);
        assert!(matches!(out, JoinOutcome::Parked { .. }), "{out:?}");
    }
    let mut now = 0;
    while !g.is(GroupState::CompletingRebalance) {
        now += 100;
        fx.extend(g.tick(now, &LIMITS));
    }
    let leader = g.leader.clone().expect("leader");
    let follower = g.members.keys().find(|m| **m != leader).cloned().expect("follower");
    let instance = g.members[&follower].group_instance_id.clone().expect("static");
    assert_eq!(g.sync(static_sync(&follower, &instance), now), SyncOutcome::Parked);
    let mut fx = Vec::new();
    let out = g.join(static_join(&instance, &["range"]), now, &LIMITS, &mut fx);
    assert!(matches!(out, JoinOutcome::Parked { .. }), "{out:?}");
    assert!(g.is(GroupState::PreparingRebalance));
    assert!(fx.contains(&Effect::SyncDone {
        member_id: follower.clone(),
        result: SyncResult::error(GroupError::FencedInstanceId),
    }));
}

#[test]
fn a_rebalance_during_the_write_answers_the_rejoin_itself() {
    let (mut g, _) = static_group(2, &["range"]);
    let (new_id, r) = rejoin(&mut g, static_join("s1", &["range"]), 300);
    // A third member arrives before the write completes: the rebalance counts the rejoined
    // member as joined and answers it with the new generation.
    let mut fx = Vec::new();
    let out = g.join(static_join("s2", &["range"]), 310, &LIMITS, &mut fx);
    assert!(matches!(out, JoinOutcome::Parked { .. }), "{out:?}");
    assert!(g.is(GroupState::PreparingRebalance));
    assert!(g.static_member_stored(&r, Ok(()), 320).is_empty());
    assert!(g.members[&new_id].awaiting_join);
}
