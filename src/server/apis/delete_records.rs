//! DeleteRecords (Kafka's `handleDeleteRecordsRequest`): every partition named must be led
//! here; the leader moves its log start offset to the requested offset (-1: the high
//! watermark) and the answer waits until the live followers have taken it (see
//! [`ReplicaManager::delete_records`]), returning the low watermark. Partitions the cluster does
//! not know answer UNKNOWN_TOPIC_OR_PARTITION and internal topics INVALID_TOPIC_EXCEPTION,
//! both with low watermark -1.
//!
//! [`ReplicaManager::delete_records`]: crate::replica::ReplicaManager::delete_records

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

use super::KafkaApis;
use crate::coordinator::group::OFFSETS_TOPIC;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::replica::delete_records::{DeleteRecordsOutcome, IsAlive, INVALID_LOW_WATERMARK};
use crate::types::TopicPartition;

/// Kafka's `Topic.isInternal`.
fn is_internal(topic: &str) -> bool {
    topic == OFFSETS_TOPIC || topic == "__transaction_state"
}

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    // Per requested partition: answered at once, or its place in `wanted`.
    let mut slots: Vec<(usize, i32, Result<usize, i16>)> = Vec::new();
    let mut wanted: Vec<(TopicPartition, i64)> = Vec::new();
    for (t, topic) in request.topics.iter().enumerate() {
        let name = topic.name.0.to_string();
        let cached = apis.metadata_cache.topic(&name);
        let denied = apis.topic_denied(ctx, crate::security::authorizer::acl::AclOperation::Delete, &name);
        for p in &topic.partitions {
            let known = cached
                .as_ref()
                .is_some_and(|c| c.partitions.contains_key(&p.partition_index));
            let slot = if let Some(code) = denied {
                Err(code)
            } else if !known {
                Err(ec::UNKNOWN_TOPIC_OR_PARTITION)
            } else if is_internal(&name) {
                Err(ec::INVALID_TOPIC_EXCEPTION)
            } else {
                let tp = TopicPartition {
                    topic: name.clone(),
                    partition: p.partition_index,
                };
                wanted.push((tp, p.offset));
                Ok(wanted.len() - 1)
            };
            slots.push((t, p.partition_index, slot));
        }
    }
    let cache = apis.metadata_cache.clone();
    let alive: IsAlive = Arc::new(move |id| cache.is_isr_eligible(id));
    let outcomes = if wanted.is_empty() {
        Vec::new()
    } else {
        apis.replica_manager
            .delete_records(request.timeout_ms, wanted, alive)
            .await
    };
    let mut topics: Vec<DeleteRecordsTopicResult> = request
        .topics
        .iter()
        .map(|t| DeleteRecordsTopicResult::default().with_name(t.name.clone()))
        .collect();
    for (t, partition, slot) in slots {
        let outcome = match slot {
            Ok(i) => outcomes.get(i).copied().unwrap_or(DeleteRecordsOutcome {
                error: ec::UNKNOWN_SERVER_ERROR,
                low_watermark: INVALID_LOW_WATERMARK,
            }),
            Err(error) => DeleteRecordsOutcome {
                error,
                low_watermark: INVALID_LOW_WATERMARK,
            },
        };
        if outcome.error != ec::NONE {
            tracing::debug!(topic = %topics[t].name.0, partition, error = %ec::name(outcome.error), "DeleteRecords failed");
        }
        topics[t].partitions.push(
            DeleteRecordsPartitionResult::default()
                .with_partition_index(partition)
                .with_low_watermark(outcome.low_watermark)
                .with_error_code(outcome.error),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}
