//! Unit tests of CreatePartitions in the core: given a context and inputs, these effects and
//! this answer. No ZooKeeper, no tokio.

use std::collections::BTreeMap;
use std::time::Instant;

use super::create_partitions::Request;
use super::tests::{context, event, idle, ids, key, wrote};
use super::*;

use ControllerError::*;

fn request(topic: &str, count: i32, assignments: Option<&[&[i32]]>) -> Event {
    Event::CreatePartitions(Request {
        topic: topic.to_string(),
        count,
        assignments: assignments.map(|lists| lists.iter().map(|r| ids(r)).collect()),
        validate_only: false,
    })
}

fn written_assignment(fx: &Effects) -> BTreeMap<i32, Vec<BrokerId>> {
    match &fx.zk {
        Some(ZkOp::Write(Write::Assignment { topic, assignment, .. })) if topic == "t" => assignment.clone(),
        other => panic!("expected t's assignment to be written, got {other:?}"),
    }
}

/// Placed as Kafka's `createNewPartitionsAssignment` places them (starting at partition 0's
/// first replica, continuing the partition ids), written, answered once written, then created
/// as new partitions.
#[test]
fn create_partitions_places_continuing_the_pattern_writes_answers_then_creates_them() {
    let mut ctx = context();
    let fx = event(&mut ctx, request("t", 3, None));
    assert_eq!(fx.reply, None, "not answered before the write");
    let written = written_assignment(&fx);
    assert_eq!(
        written,
        BTreeMap::from([(0, ids(&[1, 2, 3])), (1, ids(&[2, 3, 1])), (2, ids(&[3, 1, 2]))])
    );
    assert_eq!(ctx.topics["t"].assignment.len(), 1, "the context waits for the write");

    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert_eq!(fx.reply, Some(Reply::CreatePartitions(Ok(()))));
    assert_eq!(ctx.topics["t"].assignment, written);
    assert_eq!(
        fx.zk,
        Some(ZkOp::Read(Read::ExistingLeaderships(vec![key("t", 1), key("t", 2)]))),
        "the new partitions are created as onNewPartitionCreation does"
    );
}

#[test]
fn create_partitions_takes_explicit_replica_lists_as_given() {
    let mut ctx = context();
    let fx = event(&mut ctx, request("t", 2, Some(&[&[3, 1, 2]])));
    assert_eq!(written_assignment(&fx)[&1], ids(&[3, 1, 2]));
}

/// Each refusal answers at once with Kafka's error and leaves the context as it was.
#[test]
fn create_partitions_refusals_answer_with_kafkas_errors_and_write_nothing() {
    let dup: &[&[i32]] = &[&[1, 1, 2]];
    let short: &[&[i32]] = &[&[1, 2]];
    let unknown_broker: &[&[i32]] = &[&[1, 2, 9]];
    let too_many: &[&[i32]] = &[&[1, 2, 3], &[2, 3, 1]];
    let cases: Vec<(&str, Event, ControllerError)> = vec![
        ("unknown topic", request("nope", 2, None), UnknownTopicOrPartition),
        ("same count", request("t", 1, None), InvalidPartitions),
        ("fewer partitions", request("t", 0, None), InvalidPartitions),
        ("duplicate broker", request("t", 2, Some(dup)), InvalidReplicaAssignment),
        (
            "wrong replication factor",
            request("t", 2, Some(short)),
            InvalidReplicaAssignment,
        ),
        (
            "broker not live",
            request("t", 2, Some(unknown_broker)),
            InvalidReplicaAssignment,
        ),
        (
            "lists for more partitions",
            request("t", 2, Some(too_many)),
            InvalidReplicaAssignment,
        ),
    ];
    for (case, e, error) in cases {
        let mut ctx = context();
        let fx = event(&mut ctx, e);
        assert_eq!(fx.reply, Some(Reply::CreatePartitions(Err(error))), "{case}");
        assert!(fx.zk.is_none() && fx.send.is_empty(), "{case}: nothing done");
        assert!(idle(&ctx), "{case}");
        assert_eq!(ctx.topics["t"].assignment.len(), 1, "{case}");
    }
}

#[test]
fn create_partitions_refuses_a_topic_queued_for_deletion_and_an_rf_the_live_brokers_cannot_hold() {
    let mut ctx = context();
    ctx.topics_to_delete.insert("t".to_string());
    let fx = event(&mut ctx, request("t", 2, None));
    assert_eq!(fx.reply, Some(Reply::CreatePartitions(Err(TopicBeingDeleted))));

    let mut ctx = context();
    ctx.live_brokers.remove(&BrokerId(3));
    let fx = event(&mut ctx, request("t", 2, None));
    assert_eq!(fx.reply, Some(Reply::CreatePartitions(Err(InvalidReplicationFactor))));
    assert!(fx.zk.is_none());
}

#[test]
fn create_partitions_validate_only_answers_without_writing() {
    let mut ctx = context();
    let e = Event::CreatePartitions(Request {
        topic: "t".to_string(),
        count: 4,
        assignments: None,
        validate_only: true,
    });
    let fx = event(&mut ctx, e);
    assert_eq!(fx.reply, Some(Reply::CreatePartitions(Ok(()))));
    assert!(fx.zk.is_none() && idle(&ctx));
    assert_eq!(ctx.topics["t"].assignment.len(), 1);
}

/// A failed write ends the event unanswered (the shell answers NOT_CONTROLLER) and the context
/// keeps the old assignment.
#[test]
fn create_partitions_whose_write_fails_is_unanswered_and_changes_nothing() {
    let mut ctx = context();
    event(&mut ctx, request("t", 2, None));
    let fx = step(&mut ctx, Input::Failed, Instant::now());
    assert_eq!(fx.reply, None);
    assert!(fx.zk.is_none() && idle(&ctx));
    assert_eq!(ctx.topics["t"].assignment.len(), 1);
}
