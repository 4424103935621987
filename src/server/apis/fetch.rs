//! Fetch (consumers and follower replicas): reads up to the HW (consumers) or LEO (replicas),
//! per-partition and response byte limits with at least one whole batch, and the fetch
//! purgatory: while fewer than `min_bytes` are available the request waits, woken by appends
//! (not by polling), until `max_wait_ms`. Sessionless (KIP-227): session id 0, full responses.

use std::time::Duration;

use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};

use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::types::{BrokerId, TopicPartition};

/// A partition the request asked for, resolved to its name.
struct Wanted {
    topic_index: usize,
    name: Option<String>,
    partition: i32,
    fetch_offset: i64,
    max_bytes: usize,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
}

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
            wanted.push(Wanted {
                topic_index: topics.len(),
                name: name.clone(),
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes.max(0) as usize,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: if version >= 12 { p.last_fetched_epoch } else { -1 },
            });
        }
        topics.push(response);
    }

    let rm = &apis.replica_manager;
    let min_bytes = request.min_bytes.max(0) as usize;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let mut changes = rm.subscribe_changes();
    let mut delayed = None;
    loop {
        let mut total = 0usize;
        let mut errors = false;
        let mut budget = if request.max_bytes > 0 {
            request.max_bytes as usize
        } else {
            usize::MAX
        };
        let mut results = Vec::with_capacity(wanted.len());
        for w in &wanted {
            let data = read_partition(apis, w, replica, budget, version);
            let size = data.records.as_ref().map_or(0, |r| r.len());
            budget = budget.saturating_sub(size);
            total += size;
            errors |= data.error_code != ec::NONE;
            results.push((w.topic_index, data));
        }
        let waited_out = tokio::time::Instant::now() >= deadline;
        let diverging = results
            .iter()
            .any(|(_, d)| d.diverging_epoch.epoch >= 0 || d.diverging_epoch.end_offset >= 0);
        if total >= min_bytes.max(1) || errors || diverging || waited_out || wanted.is_empty() {
            for (i, data) in results {
                topics[i].partitions.push(data);
            }
            return FetchResponse::default().with_session_id(0).with_responses(topics);
        }
        // Wait for an append (or HW move) anywhere, then read again.
        delayed.get_or_insert_with(|| rm.delay_fetch());
        let _ = tokio::time::timeout_at(deadline, changes.changed()).await;
    }
}

fn read_partition(
    apis: &KafkaApis,
    w: &Wanted,
    replica: Option<BrokerId>,
    budget: usize,
    version: i16,
) -> PartitionData {
    let mut data = PartitionData::default().with_partition_index(w.partition);
    data.high_watermark = -1;
    data.last_stable_offset = -1;
    let Some(name) = &w.name else {
        data.error_code = if version >= 13 {
            ec::UNKNOWN_TOPIC_ID
        } else {
            ec::UNKNOWN_TOPIC_OR_PARTITION
        };
        return data;
    };
    let tp = TopicPartition {
        topic: name.clone(),
        partition: w.partition,
    };
    let Some(partition) = apis.replica_manager.partition(&tp) else {
        data.error_code = ec::UNKNOWN_TOPIC_OR_PARTITION;
        return data;
    };
    if let Err(code) = partition.check_leader_epoch(w.current_leader_epoch) {
        data.error_code = code;
        return data;
    }
    // At least one whole batch comes back even when it exceeds the limits (KIP-74).
    let limit = w.max_bytes.min(budget);
    let rm = &apis.replica_manager;
    let read = match replica {
        Some(id) => {
            let hw_before = partition.high_watermark();
            partition
                .read_for_follower(
                    id,
                    w.fetch_offset,
                    w.last_fetched_epoch,
                    limit,
                    rm.min_insync_replicas(),
                    super::now_ms(),
                    apis.metadata_cache.is_isr_eligible(id),
                )
                .map(|(read, proposal)| {
                    if let Some(p) = proposal {
                        rm.submit_isr_change(p);
                    }
                    // This fetch moved the HW: acks=all produces and consumers waiting on it go
                    // now, not when this fetch itself returns (up to replica.fetch.wait.max.ms later).
                    if read.high_watermark > hw_before {
                        rm.notify_change();
                    }
                    read
                })
        }
        None => partition.read(w.fetch_offset, limit),
    };
    match read {
        Ok(read) => {
            if let Some((epoch, end_offset)) = read.diverging_epoch {
                data.diverging_epoch.epoch = epoch;
                data.diverging_epoch.end_offset = end_offset;
            }
            data.high_watermark = read.high_watermark;
            data.last_stable_offset = read.high_watermark;
            if version >= 5 {
                data.log_start_offset = read.log_start_offset;
            }
            data.records = Some(read.records);
        }
        Err(code) => data.error_code = code,
    }
    data
}
