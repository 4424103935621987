//! Produce: translates the request into [`ReplicaManager::append_records`] (which validates
//! acks, appends as leader and, for acks=-1, waits in the purgatory for the ISR) and its
//! per-partition results back into the response.
//!
//! [`ReplicaManager::append_records`]: crate::replica::ReplicaManager::append_records

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::replica::append::AppendPartition;
use crate::types::TopicPartition;

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: ProduceRequest) -> Option<ProduceResponse> {
    let acks = request.acks;
    // Every partition answers in request order; those without records never reach the log.
    let mut topics = Vec::with_capacity(request.topic_data.len());
    let mut entries = Vec::new();
    // (topic index, partition index) of each entry.
    let mut slots = Vec::new();
    for topic in request.topic_data {
        let mut responses = Vec::with_capacity(topic.partition_data.len());
        for data in topic.partition_data {
            let mut resp = PartitionProduceResponse::default().with_index(data.index);
            match data.records {
                Some(records) => {
                    slots.push((topics.len(), responses.len()));
                    entries.push(AppendPartition {
                        tp: TopicPartition {
                            topic: topic.name.0.to_string(),
                            partition: data.index,
                        },
                        // The network buffer becomes the append buffer: offsets are written in place.
                        records: Vec::from(records),
                    });
                }
                None if !matches!(acks, -1..=1) => resp.error_code = ec::INVALID_REQUIRED_ACKS,
                None if apis
                    .replica_manager
                    .partition(&TopicPartition {
                        topic: topic.name.0.to_string(),
                        partition: data.index,
                    })
                    .is_none() =>
                {
                    resp.error_code = ec::UNKNOWN_TOPIC_OR_PARTITION
                }
                None => resp.error_code = ec::INVALID_RECORD,
            }
            responses.push(resp);
        }
        topics.push(
            TopicProduceResponse::default()
                .with_name(topic.name)
                .with_partition_responses(responses),
        );
    }
    let results = apis
        .replica_manager
        .append_records(acks, request.timeout_ms, entries)
        .await;
    if acks == 0 {
        return None;
    }
    for ((t, p), result) in slots.into_iter().zip(results) {
        let resp: &mut PartitionProduceResponse = &mut topics[t].partition_responses[p];
        resp.error_code = result.error;
        if let Some(info) = result.info {
            resp.base_offset = info.base_offset;
            if ctx.api_version >= 2 {
                resp.log_append_time_ms = info.log_append_time;
            }
            if ctx.api_version >= 5 {
                resp.log_start_offset = info.log_start_offset;
            }
        }
    }
    Some(ProduceResponse::default().with_responses(topics))
}
