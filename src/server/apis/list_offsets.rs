//! ListOffsets: earliest (-2), latest (-1: the HW for consumers, the LEO for replicas), max
//! timestamp (-3), or the first offset at or after a timestamp; v0 answers in old-style offsets.

use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::types::TopicPartition;

pub(super) fn handle(apis: &KafkaApis, ctx: &RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let replica = request.replica_id.0 >= 0;
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
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
                    let result = match apis.replica_manager.partition(&tp) {
                        None => Err(ec::UNKNOWN_TOPIC_OR_PARTITION),
                        Some(partition) => partition
                            .check_leader_epoch(p.current_leader_epoch)
                            .and_then(|()| partition.offset_for_timestamp(p.timestamp, replica))
                            .map(|found| (found, partition.leader_epoch())),
                    };
                    match result {
                        Ok((Some((offset, timestamp)), epoch)) => {
                            if ctx.api_version == 0 {
                                resp.old_style_offsets = vec![offset];
                            } else {
                                resp.offset = offset;
                                resp.timestamp = timestamp;
                                if ctx.api_version >= 4 {
                                    resp.leader_epoch = epoch;
                                }
                            }
                        }
                        Ok((None, _)) => {}
                        Err(code) => resp.error_code = code,
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
