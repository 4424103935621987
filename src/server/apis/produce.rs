//! Produce: validate acks, append each partition's batches as leader, and for acks=-1 wait
//! (the produce purgatory) until the high watermark passes every appended offset, the ISR
//! drops below min.insync.replicas, or the request times out. The wait is handed back as a
//! future ([`Produced::Waiting`]): the connection serves the next request meanwhile.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::{now_ms, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::replica::partition::Partition;
use crate::types::TopicPartition;

/// A produce request once its records are appended.
pub(super) enum Produced {
    /// The response (none for acks=0).
    Now(Option<ProduceResponse>),
    /// acks=-1: the response once the followers have the records (or the request times out).
    Waiting(Pin<Box<dyn Future<Output = ProduceResponse> + Send>>),
}

/// (topic index, partition index in its response, partition to wait on, offset the HW must
/// reach, leader epoch of the append)
type Wait = (usize, usize, Arc<Partition>, i64, i32);

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: ProduceRequest) -> Produced {
    let acks = request.acks;
    let rm = &apis.replica_manager;
    let min_isr = rm.min_insync_replicas();
    // (topic index, partition response, partition to wait on with the offset to reach)
    let mut topics = Vec::with_capacity(request.topic_data.len());
    let mut waits = Vec::new();
    for topic in request.topic_data {
        let mut responses = Vec::with_capacity(topic.partition_data.len());
        for data in topic.partition_data {
            let mut resp = PartitionProduceResponse::default().with_index(data.index);
            let tp = TopicPartition {
                topic: topic.name.0.to_string(),
                partition: data.index,
            };
            let code = if !matches!(acks, -1..=1) {
                ec::INVALID_REQUIRED_ACKS
            } else {
                match (rm.partition(&tp), data.records) {
                    (None, _) => ec::UNKNOWN_TOPIC_OR_PARTITION,
                    (Some(_), None) => ec::INVALID_RECORD,
                    (Some(partition), Some(records)) => {
                        // The request's buffer is the append buffer: the log rewrites copies of the
                        // batch headers and writes the records from here, uncopied; off the async workers.
                        let p = partition.clone();
                        let appended =
                            tokio::task::spawn_blocking(move || p.append_as_leader(&records, acks, min_isr, now_ms()))
                                .await
                                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                        match appended {
                            Ok((info, leader_epoch)) => {
                                resp.base_offset = info.first_offset;
                                if ctx.api_version >= 2 {
                                    resp.log_append_time_ms = info.log_append_time;
                                }
                                if ctx.api_version >= 5 {
                                    resp.log_start_offset = info.log_start_offset;
                                }
                                if acks == -1 {
                                    waits.push((
                                        topics.len(),
                                        responses.len(),
                                        partition,
                                        info.last_offset + 1,
                                        leader_epoch,
                                    ));
                                }
                                ec::NONE
                            }
                            Err(code) => code,
                        }
                    }
                }
            };
            resp.error_code = code;
            responses.push(resp);
        }
        topics.push(
            TopicProduceResponse::default()
                .with_name(topic.name)
                .with_partition_responses(responses),
        );
    }
    rm.notify_change();
    if acks == 0 {
        return Produced::Now(None);
    }
    if waits.is_empty() {
        return Produced::Now(Some(ProduceResponse::default().with_responses(topics)));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(request.timeout_ms.max(0) as u64);
    // HW moves from here on wake the wait; earlier ones show in its first check.
    let changes = rm.subscribe_changes();
    Produced::Waiting(Box::pin(wait_for_replicas(topics, waits, min_isr, deadline, changes)))
}

/// The produce purgatory for one request: until every partition's HW passes its appended
/// records (or an error, or the deadline).
async fn wait_for_replicas(
    mut topics: Vec<TopicProduceResponse>,
    mut waits: Vec<Wait>,
    min_isr: i32,
    deadline: tokio::time::Instant,
    mut changes: tokio::sync::watch::Receiver<u64>,
) -> ProduceResponse {
    loop {
        let mut pending = false;
        for (t, p, partition, offset, epoch) in &waits {
            if topics[*t].partition_responses[*p].error_code != ec::NONE {
                continue;
            }
            match partition.check_produce_completion(*offset, *epoch, min_isr) {
                Some(ec::NONE) => {}
                Some(code) => topics[*t].partition_responses[*p].error_code = code,
                None => pending = true,
            }
        }
        // Completed ones are marked done by clearing them from the wait list.
        waits.retain(|(t, p, partition, offset, epoch)| {
            topics[*t].partition_responses[*p].error_code == ec::NONE
                && partition.check_produce_completion(*offset, *epoch, min_isr).is_none()
        });
        if !pending || waits.is_empty() {
            break;
        }
        if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
            for (t, p, _, _, _) in &waits {
                topics[*t].partition_responses[*p].error_code = ec::REQUEST_TIMED_OUT;
            }
            break;
        }
    }
    ProduceResponse::default().with_responses(topics)
}
