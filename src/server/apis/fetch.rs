//! Fetch (consumers and follower replicas): the KIP-227 session context
//! (`server::fetch_session`) names the partitions to read — for an incremental session every
//! partition of the session, so `min_bytes` / `max_wait_ms` see all of them — then
//! [`ReplicaManager::fetch_messages`] reads them (byte limits, and the fetch purgatory keyed by
//! partition) and the context builds the answer, leaving out unchanged partitions of
//! incremental sessions.
//!
//! [`ReplicaManager::fetch_messages`]: crate::replica::ReplicaManager::fetch_messages

use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::replica::error::{code_of, ReplicaError};
use crate::replica::fetch::{FetchParams, FetchPartition, FetchPartitionResult};
use crate::security::authorizer::acl::AclOperation;
use crate::types::{BrokerId, TopicPartition};

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: FetchRequest) -> FetchResponse {
    let version = ctx.api_version;
    let replica_id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    let replica = (replica_id >= 0).then_some(BrokerId(replica_id));
    let resolve = |id: &uuid::Uuid, partition: i32| {
        apis.metadata_cache.topic_name(id).or_else(|| {
            apis.replica_manager
                .partition_by_id(*id, partition)
                .map(|p| p.tp.topic.clone())
        })
    };
    let session = apis
        .fetch_sessions
        .new_context(version, &request, replica.is_some(), resolve, super::now_ms());
    // Per session partition, in order: its index in `wanted`, or the error it gets at once.
    let mut slots: Vec<(i32, Result<usize, ReplicaError>)> = Vec::new();
    let mut wanted = Vec::new();
    let follower_allowed = replica.is_some() && apis.authorized_cluster(ctx, AclOperation::ClusterAction);
    for (p, data) in session.partitions() {
        let slot = match &p.topic {
            None if version >= 13 => Err(ReplicaError::UnknownTopicId),
            None => Err(ReplicaError::UnknownTopicOrPartition),
            Some(name)
                if !(follower_allowed || replica.is_none() && apis.authorized_topic(ctx, AclOperation::Read, name)) =>
            {
                Err(ReplicaError::TopicAuthorizationFailed)
            }
            Some(name) => {
                wanted.push(FetchPartition {
                    tp: TopicPartition {
                        topic: name.clone(),
                        partition: p.partition,
                    },
                    fetch_offset: data.fetch_offset,
                    max_bytes: data.max_bytes,
                    current_leader_epoch: data.current_leader_epoch,
                    last_fetched_epoch: data.last_fetched_epoch,
                    log_start_offset: data.log_start_offset,
                });
                Ok(wanted.len() - 1)
            }
        };
        slots.push((p.partition, slot));
    }
    // A partition that errs answers at once, with the others as they are (no waiting).
    let unknown = slots.iter().any(|(_, slot)| slot.is_err());
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
    let answers = slots
        .into_iter()
        .map(|(partition, slot)| {
            let result = match slot {
                Ok(i) => results[i]
                    .take()
                    .unwrap_or_else(|| FetchPartitionResult::error(ReplicaError::UnknownServerError)),
                Err(error) => FetchPartitionResult::error(error),
            };
            partition_data(partition, result, version)
        })
        .collect();
    apis.fetch_sessions.respond(session, answers, super::now_ms())
}

fn partition_data(partition: i32, result: FetchPartitionResult, version: i16) -> PartitionData {
    let mut data = PartitionData::default().with_partition_index(partition);
    data.error_code = code_of(result.error.as_ref());
    data.high_watermark = result.high_watermark;
    data.last_stable_offset = result.last_stable_offset;
    if result.error.is_none() && version >= 5 {
        data.log_start_offset = result.log_start_offset;
    }
    if let Some((epoch, end_offset)) = result.diverging_epoch {
        data.diverging_epoch.epoch = epoch;
        data.diverging_epoch.end_offset = end_offset;
    }
    data.records = Some(result.records);
    data
}
