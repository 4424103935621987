//! CreatePartitions (Kafka's `ZkAdminManager.createPartitions` and `AdminZkClient.addPartitions`,
//! run by the controller): validate the new count and any explicit replica lists against the
//! context, place the new partitions continuing the topic's pattern, rewrite the topic's
//! assignment (fenced, conditional), then create them as Kafka's onNewPartitionCreation does
//! ([`topic_change::new_partitions`]). The answer is [`Reply::CreatePartitions`], given once the
//! assignment is written (or at once for a refusal or `validate_only`). No I/O.

use std::collections::{BTreeMap, BTreeSet};

use super::{topic_change, Effects, Input, Key, Pending, Reply, Write, WriteResult, ZkOp};
use crate::controller::assignment::{assign_replicas_to_brokers, BrokerMetadata, PlacementStart, RackAwareMode};
use crate::controller::error::ControllerError;
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;

/// A CreatePartitions request for one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub topic: String,
    /// The partition count wanted.
    pub count: i32,
    /// The new partitions' replica lists, in partition order (`None`: placed by the controller).
    pub assignments: Option<Vec<Vec<BrokerId>>>,
    pub validate_only: bool,
}

/// Waiting for the topic's new assignment to be written.
#[derive(Debug)]
pub struct Waiting {
    topic: String,
    assignment: BTreeMap<i32, Vec<BrokerId>>,
    added: Vec<Key>,
}

/// The new partitions' replicas, or why the request is refused (Kafka's error for each case:
/// UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION for a topic queued for deletion,
/// INVALID_PARTITIONS for a count not above the current one, INVALID_REPLICA_ASSIGNMENT for
/// explicit lists of the wrong number or size, with duplicates or with brokers that are not
/// live, INVALID_REPLICATION_FACTOR when the live brokers cannot hold the topic's RF).
pub fn validate(ctx: &ControllerContext, request: &Request) -> Result<BTreeMap<i32, Vec<BrokerId>>, ControllerError> {
    let info = ctx
        .topics
        .get(&request.topic)
        .ok_or(ControllerError::UnknownTopicOrPartition)?;
    if ctx.topics_to_delete.contains(&request.topic) {
        return Err(ControllerError::TopicBeingDeleted);
    }
    let current = info.assignment.len() as i32;
    if request.count <= current {
        return Err(ControllerError::InvalidPartitions);
    }
    let first = info.assignment.values().next().cloned().unwrap_or_default();
    let rf = first.len().max(1);
    let to_add = request.count - current;
    match &request.assignments {
        Some(lists) => {
            let valid = lists.len() as i32 == to_add
                && lists.iter().all(|replicas| {
                    replicas.len() == rf
                        && replicas.iter().collect::<BTreeSet<_>>().len() == replicas.len()
                        && replicas.iter().all(|b| ctx.is_live(*b))
                });
            if !valid {
                return Err(ControllerError::InvalidReplicaAssignment);
            }
            Ok(lists.iter().cloned().zip(current..).map(|(r, p)| (p, r)).collect())
        }
        None => {
            let live: Vec<BrokerMetadata> = ctx
                .live_brokers
                .values()
                .map(|b| BrokerMetadata {
                    id: b.id,
                    rack: b.registration.rack.clone(),
                })
                .collect();
            // Kafka's `createNewPartitionsAssignment`: start at partition 0's first replica in the
            // brokers sorted by id (the first at or above it; the map is ordered by id), as both
            // index and shift.
            let index = first
                .first()
                .and_then(|head| ctx.live_brokers.keys().position(|id| id >= head))
                .unwrap_or(0);
            let start = PlacementStart {
                index,
                shift: index,
                first_partition: current,
            };
            assign_replicas_to_brokers(&live, to_add, rf as i32, RackAwareMode::Enforced, start)
                .map_err(|_| ControllerError::InvalidReplicationFactor)
        }
    }
}

/// Validates; a valid request not `validate_only` writes the new assignment.
pub fn start(ctx: &mut ControllerContext, request: Request, fx: &mut Effects) {
    let added = match validate(ctx, &request) {
        Ok(added) => added,
        Err(e) => {
            fx.reply = Some(Reply::CreatePartitions(Err(e)));
            return;
        }
    };
    if request.validate_only {
        fx.reply = Some(Reply::CreatePartitions(Ok(())));
        return;
    }
    let mut assignment = ctx.topics[&request.topic].assignment.clone();
    let keys = added.keys().map(|p| (request.topic.clone(), *p)).collect();
    assignment.extend(added);
    fx.zk = Some(ZkOp::Write(Write::Assignment {
        topic: request.topic.clone(),
        assignment: assignment.clone(),
        reassigning: ctx.topics[&request.topic].reassigning.clone(),
    }));
    ctx.pending = Pending::CreatePartitions(Waiting {
        topic: request.topic,
        assignment,
        added: keys,
    });
}

/// The assignment is written: the context takes it, the request is answered, and the new
/// partitions are created. A failed write ends the event unanswered (the shell answers
/// NOT_CONTROLLER).
pub fn resume(ctx: &mut ControllerContext, w: Waiting, input: Input, fx: &mut Effects) {
    let Input::Wrote(WriteResult::AssignmentWritten) = input else {
        return;
    };
    let from = ctx.topics.get(&w.topic).map_or(0, |t| t.assignment.len());
    if let Some(t) = ctx.topics.get_mut(&w.topic) {
        t.assignment = w.assignment;
    }
    tracing::info!(topic = %w.topic, from, to = from + w.added.len(), "partitions added");
    fx.reply = Some(Reply::CreatePartitions(Ok(())));
    topic_change::new_partitions(ctx, w.added, fx);
}
