//! Topic deletion (Kafka's TopicDeletionManager), driven by the replica state machine
//! ([`crate::controller::replica_changes`] decides which replicas are asked, which wait and when
//! a topic is done). A deletion event reads `/admin/delete_topics`, queues the known topics
//! (a topic stays queued until its deletion completes, even if its marker is removed by hand),
//! drops the markers of unknown ones, (re)starts the queued topics with nothing outstanding
//! (UpdateMetadata with leader -2, Kafka's LeaderDuringDelete, to every live broker and
//! StopReplica(delete) to each replica that can serve; the others wait as DeletionIneligible)
//! and completes those whose every replica confirmed: their znodes go, fenced, and the context
//! forgets them. A StopReplica answer ([`answered`]) moves its replicas and resumes; like
//! Kafka's `failReplicaDeletion`, an error answer marks its topic ineligible, and answers do
//! not restart ineligible topics, so a delete that keeps failing is not retried in a loop of
//! requests and answers; the next deletion request, a broker change (a replica came back) or
//! failover restarts every topic. Others are restarted on an answer as Kafka's resumeDeletions
//! does: a replica whose delete failed because its broker bounced while another replica's was
//! outstanding is asked again once that answer arrives. No I/O.

use std::collections::{BTreeMap, VecDeque};

use super::{failed, Effects, Input, Key, Pending, Read, ReadResult, Write, WriteResult, ZkOp};
use crate::controller::channel::ControlRequest;
use crate::controller::partition_state::PartitionState;
use crate::controller::replica_changes::DeletionStep;
use crate::controller::requests::{self, ControllerContext};
use crate::types::BrokerId;

/// Where a deletion event is.
#[derive(Debug)]
pub enum Waiting {
    /// For `/admin/delete_topics`; `start` restarts deletions with nothing outstanding.
    Queue { start: bool },
    /// For the fenced delete of `current`'s znodes, with `rest` to delete after it.
    Deleting { current: Job, rest: VecDeque<Job> },
}

/// A topic's znodes to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// A marker for a topic the controller does not know (already gone, or never existed).
    DropMarker(String),
    /// Every replica confirmed its delete (Kafka's completeDeleteTopic).
    Complete(String),
}

pub fn start(ctx: &mut ControllerContext, start: bool, fx: &mut Effects) {
    ctx.pending = Pending::Deletion(Waiting::Queue { start });
    fx.zk = Some(ZkOp::Read(Read::TopicsToDelete));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, fx: &mut Effects) {
    if failed(&input) {
        return;
    }
    match (waiting, input) {
        (Waiting::Queue { start }, Input::Read(ReadResult::TopicsToDelete(queued))) => {
            let jobs = resume_deletions(ctx, queued, start, fx);
            next(ctx, jobs, fx);
        }
        (Waiting::Deleting { current, rest }, Input::Wrote(WriteResult::TopicDeleted)) => {
            if let Job::Complete(topic) = current {
                completed(ctx, &topic, fx);
            }
            next(ctx, rest, fx);
        }
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a topic deletion"),
    }
}

/// A broker answered StopReplica(delete) (Kafka's `TopicDeletionStopReplicaResponseReceived`).
/// Answers sent in an earlier controller term or to an earlier incarnation of the broker are
/// dropped: the replicas they concern were failed and asked again since.
pub fn answered(
    ctx: &mut ControllerContext,
    controller_epoch: i32,
    broker: BrokerId,
    broker_epoch: i64,
    results: &[(Key, i16)],
    fx: &mut Effects,
) {
    let current = ctx.live_brokers.get(&broker).map(|b| b.epoch);
    if controller_epoch != ctx.epoch || current != Some(broker_epoch) {
        tracing::debug!(%broker, broker_epoch, "ignoring a StopReplica answer from an earlier term or incarnation");
        return;
    }
    ctx.replica_deletions_answered(broker, results);
    let failed = results
        .iter()
        .filter(|(_, code)| *code != 0)
        .map(|((t, _), _)| t.clone());
    ctx.topics_ineligible_for_deletion.extend(failed);
    start(ctx, false, fx);
}

/// Kafka's `resumeDeletions` for every queued topic: (re)starts the ones with nothing
/// outstanding (when not `start`, only those not marked ineligible; `start` clears the marks),
/// and returns the znode deletes to do, markers of unknown topics first.
fn resume_deletions(ctx: &mut ControllerContext, queued: Vec<String>, start: bool, fx: &mut Effects) -> VecDeque<Job> {
    let (known, unknown): (Vec<String>, Vec<String>) = queued.into_iter().partition(|t| ctx.topics.contains_key(t));
    ctx.topics_to_delete.extend(known);
    let mut jobs: VecDeque<Job> = unknown.into_iter().map(Job::DropMarker).collect();
    if start {
        ctx.topics_ineligible_for_deletion.clear();
    }
    let doomed: Vec<String> = ctx.topics_to_delete.iter().cloned().collect();
    for topic in doomed {
        match ctx.deletion_step(&topic) {
            DeletionStep::Complete => jobs.push_back(Job::Complete(topic)),
            // Kafka marks a topic being reassigned ineligible: it is deleted once that is done.
            DeletionStep::Start
                if !ctx.topics_ineligible_for_deletion.contains(&topic) && !reassigning(ctx, &topic) =>
            {
                start_topic(ctx, &topic, fx)
            }
            DeletionStep::Start | DeletionStep::InProgress => {}
        }
    }
    jobs
}

/// Whether a reassignment holds `topic`'s deletion back: one of its partitions is being
/// reassigned and has a live leader, so it can finish. One without (offline: no leader is
/// elected for a topic queued for deletion) never could, so it does not; the deletion then
/// deletes every replica of the union.
fn reassigning(ctx: &ControllerContext, topic: &str) -> bool {
    ctx.topics.get(topic).is_some_and(|t| {
        t.reassigning.keys().any(|p| {
            let leader = ctx.leaderships.get(&(topic.to_string(), *p)).and_then(|l| l.leader);
            leader.is_some_and(|l| ctx.is_live(l))
        })
    })
}

/// Asks for the next znode delete, if any.
fn next(ctx: &mut ControllerContext, mut jobs: VecDeque<Job>, fx: &mut Effects) {
    let Some(current) = jobs.pop_front() else {
        // Deleted topics leave `/admin/reassign_partitions` too.
        return super::reassignment::trim_deleted(ctx, fx);
    };
    let (topic, partitions) = match &current {
        Job::DropMarker(topic) => (topic.clone(), Vec::new()),
        Job::Complete(topic) => (topic.clone(), partitions_of(ctx, topic)),
    };
    fx.zk = Some(ZkOp::Write(Write::DeleteTopic { topic, partitions }));
    ctx.pending = Pending::Deletion(Waiting::Deleting { current, rest: jobs });
}

fn partitions_of(ctx: &ControllerContext, topic: &str) -> Vec<i32> {
    ctx.topics
        .get(topic)
        .map(|t| t.assignment.keys().copied().collect())
        .unwrap_or_default()
}

/// Kafka's `onTopicDeletion`: brokers drop the topic from their metadata, and the replicas
/// that can serve get StopReplica(delete); the others wait as DeletionIneligible.
fn start_topic(ctx: &mut ControllerContext, topic: &str, fx: &mut Effects) {
    let plan = ctx.start_deletion(topic);
    for (id, b) in &ctx.live_brokers {
        let request = requests::update_metadata_deleting(ctx, topic, b.epoch);
        fx.send.push((*id, ControlRequest::UpdateMetadata(request)));
    }
    let mut per_broker: BTreeMap<BrokerId, Vec<Key>> = BTreeMap::new();
    for r in &plan.started {
        per_broker
            .entry(r.replica)
            .or_default()
            .push((r.tp.topic.clone(), r.tp.partition));
    }
    for (broker, theirs) in &per_broker {
        if let Some(b) = ctx.live_brokers.get(broker) {
            let request = requests::stop_replica(ctx, theirs, b.epoch, true);
            fx.send.push((*broker, ControlRequest::StopReplica(request)));
        }
    }
    let waiting: Vec<String> = plan.ineligible.iter().map(|r| r.replica.to_string()).collect();
    tracing::info!(
        %topic,
        deleting = plan.started.len(),
        ?waiting,
        "topic deletion (re)started; it completes once every replica is deleted"
    );
}

/// Kafka's `completeDeleteTopic`, once its znodes are gone: the replicas and partitions are
/// forgotten, and so is the topic.
fn completed(ctx: &mut ControllerContext, topic: &str, fx: &mut Effects) {
    let keys: Vec<Key> = partitions_of(ctx, topic)
        .into_iter()
        .map(|p| (topic.to_string(), p))
        .collect();
    ctx.forget_deleted_replicas(topic);
    if let Some(t) = ctx.topics.get(topic) {
        let reassigning = t.reassigning.keys().map(|p| (topic.to_string(), *p));
        fx.unwatch_states.extend(reassigning);
    }
    ctx.change_states(&keys, PartitionState::Offline);
    ctx.change_states(&keys, PartitionState::NonExistent);
    ctx.topics.remove(topic);
    ctx.topics_to_delete.remove(topic);
    ctx.topics_ineligible_for_deletion.remove(topic);
    ctx.leaderships.retain(|(t, _), _| t != topic);
    fx.unwatch_topics.push(topic.to_string());
    tracing::info!(%topic, "topic deleted");
}
