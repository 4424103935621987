//! ListOffsets: earliest (-2), latest (-1: the HW for consumers, the LEO for replicas), max
//! timestamp (-3, v7+), earliest local (-4, v8+), latest tiered (-5, v9+), or the first record
//! at or after a timestamp; v0 answers in old-style offsets. As Kafka's
//! `handleListOffsetRequestV1AndAbove`: a partition named twice in one request answers
//! INVALID_REQUEST (each time), and a special timestamp the version does not know
//! UNSUPPORTED_VERSION.

use std::collections::HashSet;

use kafka_protocol::messages::list_offsets_request::ListOffsetsTopic;
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::replica::ReplicaError;
use crate::security::authorizer::acl::AclOperation;
use crate::types::TopicPartition;

pub(super) fn handle(apis: &KafkaApis, ctx: &RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let version = ctx.api_version;
    let replica = request.replica_id.0 >= 0;
    let duplicates = if version >= 1 {
        duplicate_partitions(&request.topics)
    } else {
        HashSet::new()
    };
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let denied = apis.topic_denied(ctx, AclOperation::Describe, &topic.name);
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let mut resp = ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
                    resp.timestamp = -1;
                    resp.offset = -1;
                    let tp = TopicPartition {
                        topic: topic.name.0.to_string(),
                        partition: p.partition_index,
                    };
                    if let Some(code) = denied {
                        resp.error_code = code;
                        return resp;
                    }
                    if duplicates.contains(&tp) {
                        resp.error_code = ec::INVALID_REQUEST;
                        return resp;
                    }
                    if !timestamp_supported(p.timestamp, version) {
                        resp.error_code = ec::UNSUPPORTED_VERSION;
                        return resp;
                    }
                    let result = match apis.replica_manager.partition(&tp) {
                        None => Err(ReplicaError::UnknownTopicOrPartition),
                        Some(partition) => partition
                            .check_leader_epoch(p.current_leader_epoch)
                            .and_then(|()| partition.offset_for_timestamp(p.timestamp, replica)),
                    };
                    match result {
                        Ok(Some(found)) => {
                            if version == 0 {
                                resp.old_style_offsets = vec![found.offset];
                            } else {
                                resp.offset = found.offset;
                                resp.timestamp = found.timestamp;
                                if version >= 4 {
                                    resp.leader_epoch = found.leader_epoch.unwrap_or(-1);
                                }
                            }
                        }
                        Ok(None) => {}
                        Err(e) => resp.error_code = e.error_code(),
                    }
                    resp
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// Partitions named more than once anywhere in the request (`ListOffsetsRequest.duplicatePartitions`).
pub(crate) fn duplicate_partitions(topics: &[ListOffsetsTopic]) -> HashSet<TopicPartition> {
    let mut seen = HashSet::new();
    let mut duplicates = HashSet::new();
    for topic in topics {
        for p in &topic.partitions {
            let tp = TopicPartition {
                topic: topic.name.0.to_string(),
                partition: p.partition_index,
            };
            if !seen.insert(tp.clone()) {
                duplicates.insert(tp);
            }
        }
    }
    duplicates
}

/// Whether `version` knows the special (negative) `timestamp`; real timestamps always pass.
/// v0 knows -1 and -2 only.
pub(crate) fn timestamp_supported(timestamp: i64, version: i16) -> bool {
    let min_version = match timestamp {
        t if t >= 0 => return true,
        -1 | -2 => 0,
        -3 => 7,
        -4 => 8,
        -5 => 9,
        _ => return false,
    };
    version >= min_version
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::list_offsets_request::ListOffsetsPartition;
    use kafka_protocol::messages::TopicName;

    fn topic(name: &str, partitions: &[i32]) -> ListOffsetsTopic {
        ListOffsetsTopic::default()
            .with_name(TopicName(super::super::str_bytes(name)))
            .with_partitions(
                partitions
                    .iter()
                    .map(|p| ListOffsetsPartition::default().with_partition_index(*p))
                    .collect(),
            )
    }

    #[test]
    fn a_partition_named_twice_is_a_duplicate_even_across_topic_entries() {
        let dups = duplicate_partitions(&[topic("a", &[0, 1, 0]), topic("b", &[0]), topic("a", &[1])]);
        let mut found: Vec<(String, i32)> = dups.into_iter().map(|tp| (tp.topic, tp.partition)).collect();
        found.sort();
        assert_eq!(found, vec![("a".into(), 0), ("a".into(), 1)]);
    }

    /// `timestampMinSupportedVersion` in Kafka's handler.
    #[test]
    fn special_timestamps_need_the_version_that_introduced_them() {
        assert!(timestamp_supported(-1, 1) && timestamp_supported(-2, 1) && timestamp_supported(0, 1));
        assert!(!timestamp_supported(-3, 6) && timestamp_supported(-3, 7));
        assert!(!timestamp_supported(-4, 7) && timestamp_supported(-4, 8));
        assert!(!timestamp_supported(-5, 8) && timestamp_supported(-5, 9));
        assert!(!timestamp_supported(-6, 9));
    }
}
