//! Produce: translates the request into [`ReplicaManager::append_records_then_wait`] (which
//! validates acks, appends as leader and, for acks=-1, parks in the purgatory until the ISR
//! has the records) and its per-partition results back into the response. The wait is handed
//! back as a future ([`Produced::Waiting`]): the connection serves the next request meanwhile.
//!
//! [`ReplicaManager::append_records_then_wait`]: crate::replica::ReplicaManager::append_records_then_wait

use std::future::Future;
use std::pin::Pin;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::replica::append::{AppendPartition, AppendResult, Appended};
use crate::replica::error::code_of;
use crate::security::authorizer::acl::AclOperation;
use crate::types::TopicPartition;

/// A produce request once its records are appended.
pub(super) enum Produced {
    /// The response (none for acks=0).
    Now(Option<ProduceResponse>),
    /// acks=-1: the response once the followers have the records (or the request times out).
    Waiting(Pin<Box<dyn Future<Output = ProduceResponse> + Send>>),
}

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: ProduceRequest) -> Produced {
    let acks = request.acks;
    let request_denied = apis.produce_denied(ctx, &request);
    // Every partition answers in request order; those without records never reach the log.
    let mut topics = Vec::with_capacity(request.topic_data.len());
    let mut entries = Vec::new();
    // (topic index, partition index) of each entry.
    let mut slots = Vec::new();
    for topic in request.topic_data {
        let mut responses = Vec::with_capacity(topic.partition_data.len());
        let denied = request_denied.or_else(|| apis.topic_denied(ctx, AclOperation::Write, &topic.name.0));
        for data in topic.partition_data {
            let mut resp = PartitionProduceResponse::default().with_index(data.index);
            if let Some(code) = denied {
                resp.error_code = code;
                responses.push(resp);
                continue;
            }
            match data.records {
                Some(records) => {
                    slots.push((topics.len(), responses.len()));
                    entries.push(AppendPartition {
                        tp: TopicPartition {
                            topic: topic.name.0.to_string(),
                            partition: data.index,
                        },
                        // The request's buffer is the append buffer: the log writes patched
                        // copies of the batch headers and these bytes after them, uncopied.
                        records,
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
    let appended = apis
        .replica_manager
        .append_records_then_wait(acks, request.timeout_ms, entries)
        .await;
    if acks == 0 {
        return Produced::Now(None);
    }
    let version = ctx.api_version;
    match appended {
        Appended::Done(results) => Produced::Now(Some(respond(topics, slots, results, version))),
        Appended::Waiting(wait) => Produced::Waiting(Box::pin(async move {
            let results = wait.await;
            respond(topics, slots, results, version)
        })),
    }
}

/// Fills each appended partition's answer in from its result.
fn respond(
    mut topics: Vec<TopicProduceResponse>,
    slots: Vec<(usize, usize)>,
    results: Vec<AppendResult>,
    version: i16,
) -> ProduceResponse {
    for ((t, p), result) in slots.into_iter().zip(results) {
        let resp: &mut PartitionProduceResponse = &mut topics[t].partition_responses[p];
        resp.error_code = code_of(result.error.as_ref());
        if let Some(info) = result.info {
            resp.base_offset = info.base_offset;
            if version >= 2 {
                resp.log_append_time_ms = info.log_append_time;
            }
            if version >= 5 {
                resp.log_start_offset = info.log_start_offset;
            }
        }
    }
    ProduceResponse::default().with_responses(topics)
}
