//! Per-event unit tests of the core's reassignment family (Kafka's `onPartitionReassignment`):
//! AlterPartitionReassignments, `/admin/reassign_partitions`, the ISR changes that complete a
//! move, cancellation and failover. Given a context and an input, these effects (and this
//! context after). No ZooKeeper, no tokio.

use std::collections::BTreeMap;

use super::tests::{
    brokers, context, event, idle, ids, key, leadership, partition_write, read, sent, stop_replicas, wrote,
};
use super::*;
use crate::controller::error::ControllerError;
use crate::controller::model::Reassigning;
use crate::zk::models::{PartitionReassignment, ReassignPartitions, ZNodePayload};

/// [`context`] with broker 4 live too.
fn four_brokers() -> ControllerContext {
    let mut ctx = context();
    ctx.live_brokers = brokers(&[(1, 10), (2, 20), (3, 30), (4, 40)]);
    ctx
}

fn assignments(fx: &Effects) -> Vec<AssignmentWrite> {
    match &fx.zk {
        Some(ZkOp::Write(Write::Assignments(w))) => w.clone(),
        other => panic!("expected an assignment write, got {other:?}"),
    }
}

fn reply(fx: &Effects) -> Vec<(Key, Result<(), ControllerError>)> {
    match &fx.reply {
        Some(Reply::AlterPartitionReassignments(r)) => r.clone(),
        other => panic!("expected a reassignment answer, got {other:?}"),
    }
}

fn reassigning(adding: &[i32], removing: &[i32]) -> Reassigning {
    Reassigning {
        adding: ids(adding),
        removing: ids(removing),
    }
}

/// Starts moving `t-0` from [1, 2, 3] to [2, 3, 4] and writes it: returns the effects of the
/// write's completion (the check's read).
fn started_move(ctx: &mut ControllerContext) -> Effects {
    let fx = event(
        ctx,
        Event::AlterPartitionReassignments(vec![(key("t", 0), Some(ids(&[2, 3, 4])))]),
    );
    assert!(fx.reply.is_none(), "answered only once the assignment is written");
    wrote(ctx, WriteResult::AssignmentWritten)
}

/// A started move's bump is written: the ISR now waits for broker 4.
fn bumped_move(ctx: &mut ControllerContext) {
    let fx = started_move(ctx);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    let fx = read(
        ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    partition_write(&fx);
    let fx = wrote(ctx, WriteResult::PartitionStates { versions: vec![7] });
    assert!(fx.zk.is_none());
    assert!(idle(ctx));
}

#[test]
fn alter_writes_the_union_with_adding_and_removing_then_answers() {
    let mut ctx = four_brokers();
    let fx = event(
        &mut ctx,
        Event::AlterPartitionReassignments(vec![(key("t", 0), Some(ids(&[2, 3, 4])))]),
    );
    let w = assignments(&fx);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].topic, "t");
    assert_eq!(w[0].assignment[&0], ids(&[2, 3, 4, 1]), "RS = TRS ++ ORS, distinct");
    assert_eq!(w[0].reassigning[&0], reassigning(&[4], &[1]));
    assert!(
        ctx.reassigning("t", 0).is_none(),
        "the context changes once the znode does"
    );

    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert_eq!(reply(&fx), vec![(key("t", 0), Ok(()))]);
    assert_eq!(ctx.replicas("t", 0), ids(&[2, 3, 4, 1]));
    assert_eq!(ctx.reassigning("t", 0), Some(&reassigning(&[4], &[1])));
    assert_eq!(
        fx.watch_states,
        vec![key("t", 0)],
        "its ISR changes drive the completion"
    );
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
}

#[test]
fn a_started_move_bumps_the_leader_epoch_and_tells_every_replica() {
    let mut ctx = four_brokers();
    started_move(&mut ctx);
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    let (creates, updates) = partition_write(&fx);
    assert!(creates.is_empty());
    let l = &updates[0].1;
    assert_eq!(
        (l.leader, l.leader_epoch, l.isr.clone()),
        (Some(BrokerId(1)), 4, ids(&[1, 2, 3]))
    );
    assert_eq!(l.controller_epoch, 5);

    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![7] });
    let lai: Vec<i32> = sent(&fx)
        .into_iter()
        .filter(|(_, k)| *k == "LeaderAndIsr")
        .map(|(b, _)| b)
        .collect();
    assert_eq!(lai, vec![1, 2, 3, 4], "the new replica starts fetching");
    assert!(
        stop_replicas(&fx).is_empty(),
        "nothing is removed before the targets are in sync"
    );
    assert_eq!(ctx.leaderships[&key("t", 0)].zk_version, 7);
    assert!(idle(&ctx));
}

#[test]
fn an_isr_change_that_brings_every_target_in_sync_completes_the_move() {
    let mut ctx = four_brokers();
    bumped_move(&mut ctx);
    // Broker 4 is not in sync yet: nothing to do.
    let _ = event(&mut ctx, Event::ReassignmentIsrChange(vec![key("t", 0)]));
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 4, 7))])),
    );
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert!(idle(&ctx));

    // It joined: leader 1 is leaving, so 2 (the first live target in the ISR) leads.
    let _ = event(&mut ctx, Event::ReassignmentIsrChange(vec![key("t", 0)]));
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3, 4], 4, 8))])),
    );
    let (_, updates) = partition_write(&fx);
    let l = &updates[0].1;
    assert_eq!(
        (l.leader, l.leader_epoch, l.isr.clone()),
        (Some(BrokerId(2)), 5, ids(&[2, 3, 4]))
    );

    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![9] });
    assert_eq!(
        stop_replicas(&fx),
        vec![1],
        "the removed replica is stopped and deleted"
    );
    let w = assignments(&fx);
    assert_eq!(w[0].assignment[&0], ids(&[2, 3, 4]));
    assert!(w[0].reassigning.is_empty());
    assert_eq!(fx.unwatch_states, vec![key("t", 0)]);
    assert!(sent(&fx).contains(&(4, "UpdateMetadata")));

    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert!(fx.zk.is_none(), "not from the znode: nothing to trim");
    assert!(idle(&ctx));
    assert_eq!(ctx.replicas("t", 0), ids(&[2, 3, 4]));
    assert!(ctx.reassigning("t", 0).is_none());
    assert!(super::reassignment::list(&ctx, None).is_empty());
}

#[test]
fn cancelling_reverts_to_the_original_replicas_and_deletes_the_partial_copy() {
    let mut ctx = four_brokers();
    bumped_move(&mut ctx);
    let listed = super::reassignment::list(&ctx, None);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].1.adding.clone(), listed[0].1.removing.clone()),
        (ids(&[4]), ids(&[1]))
    );

    let fx = event(&mut ctx, Event::AlterPartitionReassignments(vec![(key("t", 0), None)]));
    let w = assignments(&fx);
    // The original replicas, in the order the move left them (Kafka's `originReplicas`).
    assert_eq!(w[0].assignment[&0], ids(&[2, 3, 1]));
    assert!(w[0].reassigning.is_empty());
    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert_eq!(reply(&fx), vec![(key("t", 0), Ok(()))]);
    assert_eq!(fx.unwatch_states, vec![key("t", 0)]);
    // Not reassigning any more: a new epoch tells the replicas the restored set, and broker 4's
    // copy goes.
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 4, 7))])),
    );
    let (_, updates) = partition_write(&fx);
    assert_eq!(
        (updates[0].1.leader_epoch, updates[0].1.isr.clone()),
        (5, ids(&[1, 2, 3]))
    );
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![8] });
    assert_eq!(stop_replicas(&fx), vec![4]);
    let lai: Vec<i32> = sent(&fx)
        .into_iter()
        .filter(|(_, k)| *k == "LeaderAndIsr")
        .map(|(b, _)| b)
        .collect();
    assert_eq!(lai, vec![1, 2, 3]);
    assert!(sent(&fx).contains(&(4, "UpdateMetadata")));
    assert!(idle(&ctx));
    assert_eq!(ctx.replicas("t", 0), ids(&[2, 3, 1]));

    // A second cancel has nothing to cancel.
    let fx = event(&mut ctx, Event::AlterPartitionReassignments(vec![(key("t", 0), None)]));
    assert_eq!(
        reply(&fx),
        vec![(key("t", 0), Err(ControllerError::NoReassignmentInProgress))]
    );
}

#[test]
fn refusals_name_kafkas_errors_and_write_nothing() {
    let mut ctx = four_brokers();
    let requests = vec![
        (key("t", 0), Some(ids(&[2, 99]))),
        (key("t", 0), Some(ids(&[2, 2]))),
        (key("t", 0), Some(Vec::new())),
        (key("t", 7), Some(ids(&[2]))),
        (key("nope", 0), Some(ids(&[2]))),
        (key("t", 0), None),
    ];
    let fx = event(&mut ctx, Event::AlterPartitionReassignments(requests));
    assert!(fx.zk.is_none(), "nothing valid: nothing written");
    let errors: Vec<_> = reply(&fx).into_iter().filter_map(|(_, r)| r.err()).collect();
    assert_eq!(
        errors,
        vec![
            ControllerError::InvalidReplicaAssignment,
            ControllerError::InvalidReplicaAssignment,
            ControllerError::InvalidReplicaAssignment,
            ControllerError::UnknownTopicOrPartition,
            ControllerError::UnknownTopicOrPartition,
            ControllerError::NoReassignmentInProgress,
        ]
    );
    assert!(idle(&ctx));
    assert_eq!(ctx.replicas("t", 0), ids(&[1, 2, 3]));
}

#[test]
fn the_znode_starts_moves_and_is_deleted_once_they_complete() {
    let mut ctx = four_brokers();
    let _ = event(&mut ctx, Event::ReassignPartitionsZNode);
    let znode = ReassignPartitions {
        version: 1,
        partitions: vec![
            PartitionReassignment {
                topic: "t".into(),
                partition: 0,
                replicas: ids(&[2, 3, 4]),
                log_dirs: None,
            },
            PartitionReassignment {
                topic: "t".into(),
                partition: 5,
                replicas: ids(&[2]),
                log_dirs: None,
            },
        ],
    };
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(Some(znode.encode())));
    assert_eq!(assignments(&fx)[0].reassigning[&0], reassigning(&[4], &[1]));
    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert!(fx.reply.is_none());
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    partition_write(&fx);
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![7] });
    // The unknown partition is trimmed from the znode now; t-0 stays until it completes.
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ReassignPartitions)));
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(Some(znode.encode())));
    let Some(ZkOp::Write(Write::ReassignPartitions(Some(data)))) = &fx.zk else {
        panic!("expected the trimmed znode, got {:?}", fx.zk)
    };
    let left = ReassignPartitions::decode(data).expect("the trimmed znode decodes");
    assert_eq!(left.partitions.len(), 1);
    assert_eq!(
        (left.partitions[0].topic.as_str(), left.partitions[0].partition),
        ("t", 0)
    );
    let _ = wrote(&mut ctx, WriteResult::ReassignPartitionsWritten);
    assert!(idle(&ctx));

    // Broker 4 catches up: the move completes and the znode is deleted.
    let _ = event(&mut ctx, Event::ReassignmentIsrChange(vec![key("t", 0)]));
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3, 4], 4, 8))])),
    );
    partition_write(&fx);
    let _ = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![9] });
    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ReassignPartitions)));
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(Some(data.clone())));
    assert_eq!(
        fx.zk,
        Some(ZkOp::Write(Write::ReassignPartitions(None))),
        "deleted once empty"
    );
    let _ = wrote(&mut ctx, WriteResult::ReassignPartitionsWritten);
    assert!(idle(&ctx));
    assert_eq!(ctx.replicas("t", 0), ids(&[2, 3, 4]));
}

#[test]
fn a_znode_asking_for_the_current_replicas_is_deleted_at_once() {
    let mut ctx = four_brokers();
    let _ = event(&mut ctx, Event::ReassignPartitionsZNode);
    let znode = ReassignPartitions {
        version: 1,
        partitions: vec![PartitionReassignment {
            topic: "t".into(),
            partition: 0,
            replicas: ids(&[1, 2, 3]),
            log_dirs: None,
        }],
    };
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(Some(znode.encode())));
    assert_eq!(
        fx.zk,
        Some(ZkOp::Read(Read::ReassignPartitions)),
        "nothing to write: straight to the trim"
    );
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(Some(znode.encode())));
    assert_eq!(fx.zk, Some(ZkOp::Write(Write::ReassignPartitions(None))));
}

#[test]
fn a_malformed_znode_is_deleted() {
    let mut ctx = four_brokers();
    let _ = event(&mut ctx, Event::ReassignPartitionsZNode);
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(Some(b"{not json".to_vec())));
    assert_eq!(fx.zk, Some(ZkOp::Write(Write::ReassignPartitions(None))));
    let _ = wrote(&mut ctx, WriteResult::ReassignPartitionsWritten);
    assert!(idle(&ctx));
}

#[test]
fn a_removed_replica_on_a_dead_broker_is_deleted_when_it_returns() {
    let mut ctx = four_brokers();
    bumped_move(&mut ctx);
    ctx.live_brokers.remove(&BrokerId(1));
    let _ = event(&mut ctx, Event::ReassignmentIsrChange(vec![key("t", 0)]));
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(2, &[2, 3, 4], 5, 8))])),
    );
    let (_, updates) = partition_write(&fx);
    assert_eq!(updates[0].1.leader, Some(BrokerId(2)));
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![9] });
    assert!(stop_replicas(&fx).is_empty(), "broker 1 is down");
    assert!(ctx.stray_replicas.contains(&(key("t", 0), BrokerId(1))));

    ctx.live_brokers = brokers(&[(1, 11), (2, 20), (3, 30), (4, 40)]);
    let mut fx = Effects::default();
    super::reassignment::stop_strays(&mut ctx, &[BrokerId(1)], &mut fx);
    assert_eq!(stop_replicas(&fx), vec![1]);
    assert!(ctx.stray_replicas.is_empty());
}

#[test]
fn a_conflicting_leadership_write_is_read_again_and_retried() {
    let mut ctx = four_brokers();
    started_move(&mut ctx);
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    partition_write(&fx);
    let fx = step(&mut ctx, Input::Failed, std::time::Instant::now());
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
}

#[test]
fn failover_resumes_what_the_topic_znodes_show() {
    let mut ctx = four_brokers();
    ctx.topics
        .get_mut("t")
        .expect("topic t")
        .assignment
        .insert(0, ids(&[2, 3, 4, 1]));
    ctx.topics
        .get_mut("t")
        .expect("topic t")
        .reassigning
        .insert(0, reassigning(&[4], &[1]));
    let mut fx = Effects::default();
    super::reassignment::resume_after_failover(&mut ctx, &mut fx);
    assert_eq!(fx.watch_states, vec![key("t", 0)]);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ReassignPartitions)));
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(None));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    // Already in sync: completed by the new controller.
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3, 4], 4, 8))])),
    );
    let (_, updates) = partition_write(&fx);
    assert_eq!(updates[0].1.isr, ids(&[2, 3, 4]));
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![9] });
    assert_eq!(assignments(&fx)[0].assignment[&0], ids(&[2, 3, 4]));
}

#[test]
fn a_topic_being_reassigned_is_not_deleted_until_the_move_ends() {
    let mut ctx = four_brokers();
    bumped_move(&mut ctx);
    ctx.topics_to_delete.insert("t".to_string());
    let _ = event(&mut ctx, Event::TopicDeletion { start: true });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert!(
        stop_replicas(&fx).is_empty(),
        "deletion waits for the reassignment: {fx:?}"
    );
    assert!(idle(&ctx), "{:?}", ctx.pending);
    let fx = event(
        &mut ctx,
        Event::AlterPartitionReassignments(vec![(key("t", 0), Some(ids(&[2])))]),
    );
    assert_eq!(
        reply(&fx),
        vec![(key("t", 0), Err(ControllerError::UnknownTopicOrPartition))]
    );
}

#[test]
fn a_failed_step_of_the_failover_still_resumes_deletions() {
    let mut ctx = four_brokers();
    let mut fx = Effects::default();
    super::reassignment::resume_after_failover(&mut ctx, &mut fx);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ReassignPartitions)));
    let fx = step(&mut ctx, Input::Failed, std::time::Instant::now());
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicsToDelete)));
}

#[test]
fn an_isr_change_notification_naming_a_moving_partition_checks_it_too() {
    let mut ctx = four_brokers();
    bumped_move(&mut ctx);
    let _ = event(&mut ctx, Event::IsrChangeNotification);
    let names = vec!["isr_change_0000000001".to_string()];
    let _ = read(&mut ctx, ReadResult::NotificationNames(names.clone()));
    let payload = br#"{"version":1,"partitions":[{"topic":"t","partition":0}]}"#.to_vec();
    let _ = read(
        &mut ctx,
        ReadResult::NotificationPayloads(vec![(names[0].clone(), payload)]),
    );
    let joined = leadership(1, &[1, 2, 3, 4], 4, 8);
    let _ = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), joined.clone())])),
    );
    let fx = wrote(&mut ctx, WriteResult::NotificationsDeleted);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), joined)])),
    );
    let (_, updates) = partition_write(&fx);
    assert_eq!(updates[0].1.isr, ids(&[2, 3, 4]), "completed");
}
