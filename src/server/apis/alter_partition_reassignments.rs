//! AlterPartitionReassignments (KIP-455): per partition its target replicas, or `null` to
//! cancel its reassignment, answered by the active controller only (others: NOT_CONTROLLER,
//! top level). An answer means started (the full replica set written), refused or cancelled;
//! ListPartitionReassignments tells when a reassignment completes.
//!
//! Per-partition answers as Kafka's `KafkaController.processApiPartitionReassignment` gives
//! them: 0 with a null message; NO_REASSIGNMENT_IN_PROGRESS (cancelling none), the default
//! message; UNKNOWN_TOPIC_OR_PARTITION "The partition does not exist."; INVALID_REPLICA_ASSIGNMENT
//! with `validateReplicas`' message, rebuilt here from the request and the metadata cache since
//! the controller answers only the reason's kind.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, TopicName};

use super::{str_bytes, KafkaApis};
use crate::controller::ControllerError;
use crate::server::metadata_cache::MetadataCache;
use crate::types::BrokerId;

/// "The partition does not exist.": Kafka's message for an unknown partition or a topic queued
/// for deletion.
const PARTITION_DOES_NOT_EXIST: &str = "The partition does not exist.";

pub(super) async fn handle(
    apis: &KafkaApis,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let Some(controller) = apis.controller.get().filter(|c| c.is_active()) else {
        return top_level_error(ControllerError::NotController);
    };
    // Kafka collects the request into a map: a partition named twice counts once, the last wins.
    let mut wanted: BTreeMap<(String, i32), Option<Vec<BrokerId>>> = BTreeMap::new();
    for t in request.topics {
        let topic = t.name.0.to_string();
        for p in t.partitions {
            let replicas = p.replicas.map(|r| r.into_iter().map(|b| BrokerId(b.0)).collect());
            wanted.insert((topic.clone(), p.partition_index), replicas);
        }
    }
    let reassignments: Vec<_> = wanted.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let outcome = match controller.alter_partition_reassignments(reassignments).await {
        Ok(outcome) => outcome,
        Err(e) => return top_level_error(e),
    };
    let mut by_topic: BTreeMap<String, Vec<ReassignablePartitionResponse>> = BTreeMap::new();
    for ((topic, p), result) in outcome {
        let (code, message) = match result {
            Ok(()) => (0, None),
            Err(e) => {
                let target = wanted.get(&(topic.clone(), p)).cloned().flatten();
                (
                    e.error_code(),
                    Some(message_of(e, &topic, p, target.as_deref(), &apis.metadata_cache)),
                )
            }
        };
        by_topic.entry(topic).or_default().push(
            ReassignablePartitionResponse::default()
                .with_partition_index(p)
                .with_error_code(code)
                .with_error_message(message.map(|m| str_bytes(&m))),
        );
    }
    AlterPartitionReassignmentsResponse::default().with_responses(
        by_topic
            .into_iter()
            .map(|(t, partitions)| {
                ReassignableTopicResponse::default()
                    .with_name(TopicName(str_bytes(&t)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}

/// The whole request refused (NOT_CONTROLLER): Kafka's `ApiError(error)`, whose message is the
/// error's default one.
fn top_level_error(e: ControllerError) -> AlterPartitionReassignmentsResponse {
    AlterPartitionReassignmentsResponse::default()
        .with_error_code(e.error_code())
        .with_error_message(Some(str_bytes(default_message(e))))
}

/// Kafka's default message (`Errors.java`) of the errors the reassignment APIs answer.
pub(super) fn default_message(e: ControllerError) -> &'static str {
    match e {
        ControllerError::NotController => "This is not the correct controller for this cluster.",
        ControllerError::NoReassignmentInProgress => "No partition reassignment is in progress.",
        ControllerError::UnknownTopicOrPartition => "This server does not host this topic-partition.",
        ControllerError::InvalidReplicaAssignment => "Replica assignment is invalid.",
        _ => "The server experienced an unexpected error when processing the request.",
    }
}

/// The message Kafka answers with `e` for partition `topic`-`p` reassigned to `target`.
fn message_of(e: ControllerError, topic: &str, p: i32, target: Option<&[BrokerId]>, cache: &MetadataCache) -> String {
    match (e, target) {
        (ControllerError::UnknownTopicOrPartition, _) => PARTITION_DOES_NOT_EXIST.to_owned(),
        (ControllerError::InvalidReplicaAssignment, Some(target)) => {
            let live: BTreeSet<BrokerId> = cache.live_brokers().iter().map(|b| b.id).collect();
            let partition = cache.topic(topic).and_then(|t| t.partitions.get(&p).cloned());
            let (current, isr) = partition.map(|p| (p.replicas, p.isr)).unwrap_or_default();
            invalid_assignment_message(target, &current, &isr, &live)
        }
        (e, _) => default_message(e).to_owned(),
    }
}

fn ids(list: &[BrokerId]) -> String {
    let shown: Vec<String> = list.iter().map(|b| b.0.to_string()).collect();
    format!("[{}]", shown.join(", "))
}

/// Why `target` is not a valid reassignment of a partition on `current` with in-sync `isr`,
/// given the `live` brokers: Kafka's `validateReplicas` checks in its order (empty, duplicates,
/// negative ids, new replicas not alive), then kastle's own: the request would drop every
/// in-sync replica (a replaced or cancelled move whose new replicas are the only ones in sync;
/// Kafka would delete the data's last copies).
pub(crate) fn invalid_assignment_message(
    target: &[BrokerId],
    current: &[BrokerId],
    isr: &[BrokerId],
    live: &BTreeSet<BrokerId>,
) -> String {
    let distinct: BTreeSet<&BrokerId> = target.iter().collect();
    if target.is_empty() {
        return "Empty replica list specified in partition reassignment.".to_owned();
    }
    if distinct.len() != target.len() {
        return format!(
            "Duplicate replica ids in partition reassignment replica list: {}",
            ids(target)
        );
    }
    if target.iter().any(|b| b.0 < 0) {
        return format!("Invalid broker id in replica list: {}", ids(target));
    }
    let adding: Vec<BrokerId> = target.iter().copied().filter(|b| !current.contains(b)).collect();
    if adding.iter().any(|b| !live.contains(b)) {
        let live: Vec<BrokerId> = live.iter().copied().collect();
        return format!(
            "Replica assignment has brokers that are not alive. Replica list: {}, live broker list: {}",
            ids(&adding),
            ids(&live)
        );
    }
    format!(
        "Replica assignment {} would drop every in-sync replica of the partition (ISR {}).",
        ids(target),
        ids(isr)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(list: &[i32]) -> Vec<BrokerId> {
        list.iter().map(|i| BrokerId(*i)).collect()
    }

    #[test]
    fn invalid_assignments_get_kafkas_validate_replicas_messages() {
        let live: BTreeSet<BrokerId> = b(&[1, 2, 3, 4]).into_iter().collect();
        let msg = |target: &[i32]| invalid_assignment_message(&b(target), &b(&[1, 2]), &b(&[1, 2]), &live);
        assert_eq!(msg(&[]), "Empty replica list specified in partition reassignment.");
        assert_eq!(
            msg(&[3, 3]),
            "Duplicate replica ids in partition reassignment replica list: [3, 3]"
        );
        assert_eq!(msg(&[3, -1]), "Invalid broker id in replica list: [3, -1]");
        assert_eq!(
            msg(&[1, 99]),
            "Replica assignment has brokers that are not alive. Replica list: [99], live broker list: [1, 2, 3, 4]"
        );
    }

    #[test]
    fn a_current_replica_that_is_down_is_not_reported_as_a_new_one() {
        // Kafka checks only the adding replicas against the live brokers.
        let live: BTreeSet<BrokerId> = b(&[1, 3]).into_iter().collect();
        let m = invalid_assignment_message(&b(&[2, 3]), &b(&[1, 2]), &b(&[1]), &live);
        assert_eq!(
            m,
            "Replica assignment [2, 3] would drop every in-sync replica of the partition (ISR [1])."
        );
    }
}
