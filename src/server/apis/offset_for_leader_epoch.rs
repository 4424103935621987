//! OffsetForLeaderEpoch (KIP-101/279/320): for each partition this broker leads, the largest
//! epoch ≤ the requested one and where it ends — what followers truncate to and what consumers
//! validate their positions against after a leader change. Checks the caller's current leader
//! epoch (v2+): FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH.

use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::replica::ReplicaError;
use crate::security::authorizer::acl::AclOperation;
use crate::types::TopicPartition;

pub(super) fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    // Followers (a replica id, v3+) need CLUSTER_ACTION; consumers DESCRIBE on each topic.
    let follower = request.replica_id.0 >= 0;
    let follower_denied = follower
        .then(|| apis.cluster_denied(ctx, AclOperation::ClusterAction))
        .flatten();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let name = topic.topic.0.to_string();
            let denied = if follower {
                follower_denied
            } else {
                apis.topic_denied(ctx, AclOperation::Describe, &name)
            };
            let partitions = topic
                .partitions
                .into_iter()
                .map(|p| {
                    let mut out = EpochEndOffset::default()
                        .with_partition(p.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1);
                    let tp = TopicPartition {
                        topic: name.clone(),
                        partition: p.partition,
                    };
                    if let Some(code) = denied {
                        out.error_code = code;
                        return out;
                    }
                    let answer = match apis.replica_manager.partition(&tp) {
                        None => Err(ReplicaError::UnknownTopicOrPartition),
                        Some(partition) => partition
                            .check_leader_epoch(p.current_leader_epoch)
                            .and_then(|()| partition.end_offset_for_epoch(p.leader_epoch)),
                    };
                    match answer {
                        Ok((epoch, end)) => {
                            out.leader_epoch = epoch;
                            out.end_offset = end;
                        }
                        Err(e) => out.error_code = e.error_code(),
                    }
                    out
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
