//! Per-event unit tests of the core's topic families, named after Kafka's controller events:
//! TopicChange (with onNewPartitionCreation), PartitionModifications, TopicDeletion and the
//! StopReplica answers that drive it, and the failover that resumes them. Given a context and an input, these effects (and this
//! context after). No ZooKeeper, no tokio.

use std::collections::BTreeMap;
use std::time::Instant;

use super::tests::{
    brokers, context, event, idle, ids, key, leadership, partition_write, read, sent, stop_replicas, wrote,
};
use super::*;
use crate::controller::channel::ControlRequest;
use crate::controller::partition_state::PartitionState;
use crate::controller::replica_changes::replica;
use crate::controller::replica_state::ReplicaState;

fn info(parts: &[(i32, &[i32])]) -> TopicInfo {
    TopicInfo {
        id: uuid::Uuid::nil(),
        assignment: parts.iter().map(|(p, r)| (*p, ids(r))).collect(),
        reassigning: Default::default(),
    }
}

fn replica_states(ctx: &ControllerContext, k: &Key) -> Vec<ReplicaState> {
    ctx.replicas(&k.0, k.1)
        .into_iter()
        .map(|b| ctx.replica_state(&replica(k, b)))
        .collect()
}

fn failed_op(ctx: &mut ControllerContext) -> Effects {
    step(ctx, Input::Failed, Instant::now())
}

fn answer(ctx: &mut ControllerContext, broker: i32, broker_epoch: i64, results: &[(Key, i16)]) -> Effects {
    let e = Event::StopReplicaResponse {
        controller_epoch: ctx.epoch,
        broker: BrokerId(broker),
        broker_epoch,
        results: results.to_vec(),
    };
    event(ctx, e)
}

fn delete_write(topic: &str, partitions: &[i32]) -> Option<ZkOp> {
    Some(ZkOp::Write(Write::DeleteTopic {
        topic: topic.to_string(),
        partitions: partitions.to_vec(),
    }))
}

/// A new topic: watched before its assignment is read, New in both state machines, its state
/// znode looked for, then created by the election, announced as new, and its replicas Online.
#[test]
fn topic_change_creates_a_new_topic_and_starts_its_replicas() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::TopicChange);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicNames)));
    let fx = read(&mut ctx, ReadResult::TopicNames(vec!["n".into(), "t".into()]));
    assert_eq!(fx.watch_topics, vec!["n".to_string()], "watched before it is read");
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicInfos(vec!["n".into()]))));
    let fx = read(
        &mut ctx,
        ReadResult::TopicInfos(BTreeMap::from([("n".to_string(), info(&[(0, &[2, 3])]))])),
    );
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ExistingLeaderships(vec![key("n", 0)]))));
    assert_eq!(ctx.partition_state(&key("n", 0)), PartitionState::New);
    assert_eq!(replica_states(&ctx, &key("n", 0)), vec![ReplicaState::New; 2]);

    let fx = read(&mut ctx, ReadResult::Leaderships(BTreeMap::new()));
    assert!(fx.send.is_empty(), "no state znode existed: nothing to announce yet");
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("n", 0)]))));
    let fx = read(&mut ctx, ReadResult::Leaderships(BTreeMap::new()));
    let (creates, updates) = partition_write(&fx);
    assert!(updates.is_empty());
    assert_eq!(creates[0].1.leader, Some(BrokerId(2)));
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![] });
    assert_eq!(
        sent(&fx),
        vec![
            (2, "LeaderAndIsr"),
            (3, "LeaderAndIsr"),
            (1, "UpdateMetadata"),
            (2, "UpdateMetadata"),
            (3, "UpdateMetadata")
        ]
    );
    assert!(idle(&ctx));
    assert_eq!(ctx.partition_state(&key("n", 0)), PartitionState::Online);
    assert_eq!(replica_states(&ctx, &key("n", 0)), vec![ReplicaState::Online; 2]);
}

#[test]
fn topic_change_with_no_new_topic_does_nothing() {
    let mut ctx = context();
    event(&mut ctx, Event::TopicChange);
    let fx = read(&mut ctx, ReadResult::TopicNames(vec!["t".into()]));
    assert!(fx.zk.is_none() && fx.send.is_empty() && fx.watch_topics.is_empty());
    assert!(idle(&ctx));
}

/// A state znode that already exists (an earlier controller wrote it) is taken as it is and
/// announced; the election has nothing to change; a replica on a dead broker starts Offline.
#[test]
fn topic_change_takes_an_existing_state_znode_as_it_is() {
    let mut ctx = context();
    ctx.live_brokers = brokers(&[(1, 10), (2, 20)]);
    ctx.topics.insert("n".into(), info(&[(0, &[2, 3])]));
    let fx = event(&mut ctx, Event::NewPartitions(vec![key("n", 0)]));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ExistingLeaderships(vec![key("n", 0)]))));
    let found = leadership(2, &[2], 1, 3);
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("n", 0), found.clone())])),
    );
    assert_eq!(fx.zk, None, "leader 2 is live and alone in the ISR: nothing to elect");
    assert_eq!(
        sent(&fx),
        vec![(2, "LeaderAndIsr"), (1, "UpdateMetadata"), (2, "UpdateMetadata")]
    );
    assert_eq!(ctx.leaderships[&key("n", 0)], found);
    assert_eq!(ctx.partition_state(&key("n", 0)), PartitionState::Online);
    assert_eq!(
        replica_states(&ctx, &key("n", 0)),
        vec![ReplicaState::Online, ReplicaState::Offline]
    );
    assert!(idle(&ctx));
}

/// A partition that already exists is refused by the state machine: not created twice.
#[test]
fn new_partitions_that_exist_already_are_not_created_again() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::NewPartitions(vec![key("t", 0)]));
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert_eq!(ctx.partition_state(&key("t", 0)), PartitionState::Online);
}

#[test]
fn topic_change_a_failed_read_ends_the_event() {
    let mut ctx = context();
    event(&mut ctx, Event::TopicChange);
    read(&mut ctx, ReadResult::TopicNames(vec!["n".into()]));
    let fx = failed_op(&mut ctx);
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert!(idle(&ctx));
    assert!(!ctx.topics.contains_key("n"));
}

/// A partition added to the topic's znode by hand joins the assignment and is created.
#[test]
fn partition_modifications_create_added_partitions() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::PartitionModifications { topic: "t".into() });
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicInfos(vec!["t".into()]))));
    let edited = info(&[(0, &[1, 2, 3]), (1, &[3, 1])]);
    let fx = read(
        &mut ctx,
        ReadResult::TopicInfos(BTreeMap::from([("t".to_string(), edited.clone())])),
    );
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicsToDelete)));
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec![]));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::ExistingLeaderships(vec![key("t", 1)]))));
    assert_eq!(ctx.topics["t"].assignment, edited.assignment);
    assert_eq!(ctx.partition_state(&key("t", 1)), PartitionState::New);
}

/// Changed replicas of an existing partition (a hand-written reassignment) are only logged.
#[test]
fn partition_modifications_ignore_changed_replicas() {
    let mut ctx = context();
    event(&mut ctx, Event::PartitionModifications { topic: "t".into() });
    let reassigned = info(&[(0, &[3, 2, 1])]);
    let fx = read(
        &mut ctx,
        ReadResult::TopicInfos(BTreeMap::from([("t".to_string(), reassigned)])),
    );
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert_eq!(ctx.replicas("t", 0), ids(&[1, 2, 3]));
    assert!(idle(&ctx));
}

/// While the topic is queued for deletion the edit is undone: the known assignment is written.
#[test]
fn partition_modifications_of_a_topic_being_deleted_restore_its_assignment() {
    let mut ctx = context();
    event(&mut ctx, Event::PartitionModifications { topic: "t".into() });
    let edited = info(&[(0, &[1, 2, 3]), (1, &[3])]);
    read(
        &mut ctx,
        ReadResult::TopicInfos(BTreeMap::from([("t".to_string(), edited)])),
    );
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(
        fx.zk,
        Some(ZkOp::Write(Write::Assignment {
            topic: "t".into(),
            assignment: BTreeMap::from([(0, ids(&[1, 2, 3]))]),
            reassigning: BTreeMap::new(),
        }))
    );
    let fx = wrote(&mut ctx, WriteResult::AssignmentWritten);
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert_eq!(ctx.topics["t"].assignment.len(), 1);
    assert!(idle(&ctx));
}

/// A topic the controller does not know is TopicChange's; one deleted meanwhile is left alone.
#[test]
fn partition_modifications_of_unknown_or_vanished_topics_do_nothing() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::PartitionModifications { topic: "u".into() });
    assert!(fx.zk.is_none());
    assert!(idle(&ctx));
    event(&mut ctx, Event::PartitionModifications { topic: "t".into() });
    let fx = read(&mut ctx, ReadResult::TopicInfos(BTreeMap::new()));
    assert!(fx.zk.is_none());
    assert!(idle(&ctx));
}

/// TopicDeletion: the marker of an unknown topic is dropped; the known topic leaves every
/// metadata cache (leader -2) and each replica gets StopReplica(delete); its znodes go only once
/// every replica confirmed, and the context forgets it only once they are gone.
#[test]
fn topic_deletion_deletes_znodes_only_after_every_replica_confirmed() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::TopicDeletion { start: true });
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicsToDelete)));
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["gone".into(), "t".into()]));
    assert_eq!(stop_replicas(&fx), vec![1, 2, 3]);
    let ControlRequest::UpdateMetadata(um) = &fx.send[0].1 else {
        panic!("UpdateMetadata first: {:?}", sent(&fx));
    };
    assert_eq!(um.topic_states[0].partition_states[0].leader.0, -2);
    assert_eq!(fx.zk, delete_write("gone", &[]), "an unknown topic's marker is dropped");
    let fx = wrote(&mut ctx, WriteResult::TopicDeleted);
    assert!(fx.zk.is_none());
    assert!(idle(&ctx));
    assert!(ctx.is_queued_for_deletion("t"));

    for (b, e) in [(1, 10), (2, 20)] {
        answer(&mut ctx, b, e, &[(key("t", 0), 0)]);
        let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
        assert_eq!(fx.zk, None, "replica on broker 3 has not confirmed yet");
        assert!(fx.send.is_empty(), "an answer restarts nothing");
    }
    let fx = answer(&mut ctx, 3, 30, &[(key("t", 0), 0)]);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicsToDelete)));
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(fx.zk, delete_write("t", &[0]));
    assert!(ctx.topics.contains_key("t"), "known until its znodes are gone");
    let fx = wrote(&mut ctx, WriteResult::TopicDeleted);
    assert_eq!(fx.unwatch_topics, vec!["t".to_string()]);
    assert!(!ctx.topics.contains_key("t") && !ctx.is_queued_for_deletion("t"));
    assert!(ctx.leaderships.is_empty() && ctx.replica_states.is_empty());
    assert_eq!(ctx.partition_state(&key("t", 0)), PartitionState::NonExistent);
    assert!(idle(&ctx));
}

/// A replica on a dead broker is ineligible: the topic waits; when the broker is back, the
/// next deletion run asks it (and only it), and its confirmation completes the topic. A
/// failed delete is not retried on the answer, only on the next start.
#[test]
fn topic_deletion_waits_for_a_dead_replica_and_retries_when_it_returns() {
    let mut ctx = context();
    ctx.live_brokers = brokers(&[(1, 10), (2, 20)]);
    ctx.initialize_replica_states();
    event(&mut ctx, Event::TopicDeletion { start: true });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(stop_replicas(&fx), vec![1, 2]);
    assert_eq!(replica_states(&ctx, &key("t", 0))[2], ReplicaState::DeletionIneligible);
    for (b, e) in [(1, 10), (2, 20)] {
        answer(&mut ctx, b, e, &[(key("t", 0), 0)]);
        let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
        assert_eq!(fx.zk, None, "broker 3's replica is not deleted");
    }
    // Broker 3 returns: it learns the cluster but gets no LeaderAndIsr for the doomed topic.
    event(&mut ctx, Event::BrokerChange);
    let fx = read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(1, 10), (2, 20), (3, 31)])));
    assert!(!sent(&fx).contains(&(3, "LeaderAndIsr")), "{:?}", sent(&fx));
    assert!(idle(&ctx));
    event(&mut ctx, Event::TopicDeletion { start: true });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(stop_replicas(&fx), vec![3], "the deleted replicas are not asked again");
    // It fails (KAFKA_STORAGE_ERROR): no retry on the answer itself.
    answer(&mut ctx, 3, 31, &[(key("t", 0), 56)]);
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert!(fx.zk.is_none() && stop_replicas(&fx).is_empty());
    event(&mut ctx, Event::TopicDeletion { start: true });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(stop_replicas(&fx), vec![3]);
    answer(&mut ctx, 3, 31, &[(key("t", 0), 0)]);
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(fx.zk, delete_write("t", &[0]));
}

/// Answers from an earlier controller term or an earlier incarnation of the broker are dropped.
#[test]
fn stop_replica_answers_from_another_term_or_incarnation_are_ignored() {
    let mut ctx = context();
    event(&mut ctx, Event::TopicDeletion { start: true });
    read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    let stale_term = Event::StopReplicaResponse {
        controller_epoch: ctx.epoch - 1,
        broker: BrokerId(1),
        broker_epoch: 10,
        results: vec![(key("t", 0), 0)],
    };
    let fx = event(&mut ctx, stale_term);
    assert!(fx.zk.is_none());
    let fx = answer(&mut ctx, 2, 19, &[(key("t", 0), 0)]);
    assert!(fx.zk.is_none());
    assert_eq!(
        replica_states(&ctx, &key("t", 0)),
        vec![ReplicaState::DeletionStarted; 3]
    );
    assert!(idle(&ctx));
}

/// A failed delete of the znodes leaves the topic known and queued; the next run retries it.
#[test]
fn topic_deletion_a_failed_znode_delete_is_retried() {
    let mut ctx = context();
    event(&mut ctx, Event::TopicDeletion { start: true });
    read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    for (b, e) in [(1, 10), (2, 20), (3, 30)] {
        answer(&mut ctx, b, e, &[(key("t", 0), 0)]);
        read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    }
    let fx = failed_op(&mut ctx);
    assert!(fx.zk.is_none() && fx.unwatch_topics.is_empty());
    assert!(ctx.topics.contains_key("t") && ctx.is_queued_for_deletion("t"));
    event(&mut ctx, Event::TopicDeletion { start: false });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec![]));
    assert_eq!(fx.zk, delete_write("t", &[0]), "queued until done, marker or not");
}

/// A replica's broker bounces while another replica's delete is outstanding (found by seed 1640
/// of the simulation): the bounce fails its delete, the broker change's deletion run finds one
/// still in progress, and the outstanding answer restarts the topic (as Kafka's
/// resumeDeletions does), asking the bounced broker's new incarnation; its old one's answer is
/// ignored.
#[test]
fn topic_deletion_restarts_on_an_answer_a_replica_whose_broker_bounced() {
    let mut ctx = context();
    event(&mut ctx, Event::TopicDeletion { start: true });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(stop_replicas(&fx), vec![1, 2, 3]);
    answer(&mut ctx, 3, 30, &[(key("t", 0), 0)]);
    read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    // Broker 2 bounces before answering.
    event(&mut ctx, Event::BrokerChange);
    read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(1, 10), (2, 21), (3, 30)])));
    read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    assert!(idle(&ctx));
    event(&mut ctx, Event::TopicDeletion { start: true });
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert!(stop_replicas(&fx).is_empty(), "broker 1's delete is still outstanding");
    let fx = answer(&mut ctx, 2, 20, &[(key("t", 0), 0)]);
    assert!(fx.zk.is_none(), "the old incarnation's answer is ignored");
    answer(&mut ctx, 1, 10, &[(key("t", 0), 0)]);
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(stop_replicas(&fx), vec![2], "restarted on the answer");
    answer(&mut ctx, 2, 21, &[(key("t", 0), 0)]);
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["t".into()]));
    assert_eq!(fx.zk, delete_write("t", &[0]));
}

/// onControllerFailover: everything is read (each topic watched before its assignment is read),
/// the context initialized, every broker connected, watched and told the cluster, partitions
/// with a state re-announced, the one without a state elected, and the queued deletion resumed.
#[test]
fn failover_loads_the_cluster_announces_elects_and_resumes_deletions() {
    let mut ctx = ControllerContext {
        controller: BrokerId(1),
        epoch: 5,
        inter_broker_listener: "PLAINTEXT".to_string(),
        ..Default::default()
    };
    let fx = event(&mut ctx, Event::Failover);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::LiveBrokers)));
    let fx = read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(1, 10), (2, 20), (3, 30)])));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicNames)));
    assert!(fx.connect.is_empty(), "nothing acted on before everything is read");
    let names = vec!["d".to_string(), "n".to_string(), "t".to_string()];
    let fx = read(&mut ctx, ReadResult::TopicNames(names.clone()));
    assert_eq!(fx.watch_topics, names);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicInfos(names))));
    let infos = BTreeMap::from([
        ("d".to_string(), info(&[(0, &[2, 3])])),
        ("n".to_string(), info(&[(0, &[3, 1])])),
        ("t".to_string(), info(&[(0, &[1, 2])])),
    ]);
    let fx = read(&mut ctx, ReadResult::TopicInfos(infos));
    let all = vec![key("d", 0), key("n", 0), key("t", 0)];
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(all))));
    let states = BTreeMap::from([
        (key("d", 0), leadership(2, &[2, 3], 1, 1)),
        (key("t", 0), leadership(1, &[1, 2], 1, 1)),
    ]);
    let fx = read(&mut ctx, ReadResult::Leaderships(states));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicsToDelete)));
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["d".into(), "gone".into()]));
    assert_eq!(fx.connect.len(), 3);
    assert_eq!(fx.watch_brokers, ids(&[1, 2, 3]));
    assert_eq!(
        &sent(&fx)[..3],
        &[(1, "UpdateMetadata"), (2, "UpdateMetadata"), (3, "UpdateMetadata")]
    );
    assert!(sent(&fx)[3..].iter().all(|(_, kind)| *kind == "LeaderAndIsr"));
    assert!(ctx.is_queued_for_deletion("d") && !ctx.is_queued_for_deletion("gone"));
    assert_eq!(ctx.partition_state(&key("t", 0)), PartitionState::Online);
    // The election creates n-0's state (after re-reading it).
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("n", 0)]))));
    let fx = read(&mut ctx, ReadResult::Leaderships(BTreeMap::new()));
    let (creates, _) = partition_write(&fx);
    assert_eq!(
        creates.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        vec![key("n", 0)]
    );
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![] });
    assert_eq!(
        fx.zk,
        Some(ZkOp::Read(Read::ReassignPartitions)),
        "then reassignments resume"
    );
    let fx = read(&mut ctx, ReadResult::ReassignPartitions(None));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::TopicsToDelete)), "then deletions resume");
    let fx = read(&mut ctx, ReadResult::TopicsToDelete(vec!["d".into()]));
    assert_eq!(stop_replicas(&fx), vec![2, 3]);
    assert!(idle(&ctx));
}

#[test]
fn failover_a_failed_read_ends_it_with_nothing_initialized() {
    let mut ctx = context();
    ctx.topics.clear();
    event(&mut ctx, Event::Failover);
    read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(1, 10)])));
    let fx = failed_op(&mut ctx);
    assert!(fx.zk.is_none() && fx.send.is_empty() && fx.connect.is_empty());
    assert!(idle(&ctx));
    assert_eq!(ctx.live_brokers.len(), 3, "the context is not touched");
}
