//! Fetch (consumers and follower replicas): resolves topic names (Fetch v13+ names topics by
//! id), hands the partitions to [`ReplicaManager::fetch_messages`] (reads, byte limits, and the
//! fetch purgatory: `min_bytes` / `max_wait_ms`) and turns its per-partition results into the
//! response. Sessionless (KIP-227): session id 0, full responses.
//!
//! [`ReplicaManager::fetch_messages`]: crate::replica::ReplicaManager::fetch_messages

use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};

use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::replica::fetch::{FetchParams, FetchPartition, FetchPartitionResult};
use crate::types::{BrokerId, TopicPartition};

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: FetchRequest) -> FetchResponse {
    let version = ctx.api_version;
    // KIP-227: a request continuing a session we never created cannot be served.
    if request.session_id != 0 && request.session_epoch > 0 {
        return FetchResponse::default()
            .with_error_code(ec::FETCH_SESSION_ID_NOT_FOUND)
            .with_session_id(0);
    }
    let replica_id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    let replica = (replica_id >= 0).then_some(BrokerId(replica_id));
    let mut topics: Vec<FetchableTopicResponse> = Vec::with_capacity(request.topics.len());
    // Per requested partition, in order: its index in `wanted`, or the error it gets at once.
    let mut slots: Vec<(usize, i32, Result<usize, i16>)> = Vec::new();
    let mut wanted = Vec::new();
    for topic in &request.topics {
        let name = if version >= 13 {
            apis.metadata_cache.topic_name(&topic.topic_id).or_else(|| {
                topic.partitions.first().and_then(|p| {
                    apis.replica_manager
                        .partition_by_id(topic.topic_id, p.partition)
                        .map(|p| p.tp.topic.clone())
                })
            })
        } else {
            Some(topic.topic.0.to_string())
        };
        let mut response = FetchableTopicResponse::default().with_topic_id(topic.topic_id);
        if version < 13 {
            response.topic = topic.topic.clone();
        } else if let Some(n) = &name {
            response.topic = TopicName(str_bytes(n));
        }
        for p in &topic.partitions {
            let slot = match &name {
                None if version >= 13 => Err(ec::UNKNOWN_TOPIC_ID),
                None => Err(ec::UNKNOWN_TOPIC_OR_PARTITION),
                Some(name) => {
                    wanted.push(FetchPartition {
                        tp: TopicPartition {
                            topic: name.clone(),
                            partition: p.partition,
                        },
                        fetch_offset: p.fetch_offset,
                        max_bytes: p.partition_max_bytes,
                        current_leader_epoch: p.current_leader_epoch,
                        last_fetched_epoch: if version >= 12 { p.last_fetched_epoch } else { -1 },
                    });
                    Ok(wanted.len() - 1)
                }
            };
            slots.push((topics.len(), p.partition, slot));
        }
        topics.push(response);
    }
    // A partition that errs answers at once, with the others as they are (no waiting).
    let unknown = slots.iter().any(|(_, _, slot)| slot.is_err());
    let params = FetchParams {
        replica,
        replica_isr_eligible: replica.is_some_and(|id| apis.metadata_cache.is_isr_eligible(id)),
        max_wait_ms: if unknown { 0 } else { request.max_wait_ms },
        min_bytes: request.min_bytes,
        max_bytes: request.max_bytes,
        isolation_level: request.isolation_level,
    };
    let mut results: Vec<Option<FetchPartitionResult>> = apis
        .replica_manager
        .fetch_messages(params, wanted)
        .await
        .into_iter()
        .map(Some)
        .collect();
    for (topic, partition, slot) in slots {
        let result = match slot {
            Ok(i) => results[i]
                .take()
                .unwrap_or_else(|| FetchPartitionResult::error(ec::UNKNOWN_SERVER_ERROR)),
            Err(code) => FetchPartitionResult::error(code),
        };
        topics[topic]
            .partitions
            .push(partition_data(partition, result, version));
    }
    FetchResponse::default().with_session_id(0).with_responses(topics)
}

fn partition_data(partition: i32, result: FetchPartitionResult, version: i16) -> PartitionData {
    let mut data = PartitionData::default().with_partition_index(partition);
    data.error_code = result.error;
    data.high_watermark = result.high_watermark;
    data.last_stable_offset = result.last_stable_offset;
    if result.error == ec::NONE && version >= 5 {
        data.log_start_offset = result.log_start_offset;
    }
    if let Some((epoch, end_offset)) = result.diverging_epoch {
        data.diverging_epoch.epoch = epoch;
        data.diverging_epoch.end_offset = end_offset;
    }
    data.records = result.records;
    data
}
