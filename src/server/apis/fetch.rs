//! Fetch (consumers and follower replicas): reads up to the HW (consumers) or LEO (replicas),
//! per-partition and response byte limits with at least one whole batch, and the fetch
//! purgatory: while fewer than `min_bytes` are available the request waits, woken by appends
//! (not by polling), until `max_wait_ms`. KIP-227 fetch sessions wrap the read
//! (`server::fetch_session`): the session context names the partitions to read and builds the
//! answer, leaving out unchanged partitions of incremental sessions.

use std::time::Duration;

use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::types::{BrokerId, TopicPartition};

/// A partition to read, resolved to its name.
struct Wanted {
    name: Option<String>,
    partition: i32,
    fetch_offset: i64,
    max_bytes: usize,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
}

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: FetchRequest) -> FetchResponse {
    let version = ctx.api_version;
    let replica_id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    let replica = (replica_id >= 0).then_some(BrokerId(replica_id));
    // KIP-227: the session (if any) says which partitions to read; an incremental one reads
    // all its partitions, so min_bytes / max_wait see every one of them.
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
    let wanted: Vec<Wanted> = session
        .partitions()
        .iter()
        .map(|(p, data)| Wanted {
            name: p.topic.clone(),
            partition: p.partition,
            fetch_offset: data.fetch_offset,
            max_bytes: data.max_bytes.max(0) as usize,
            current_leader_epoch: data.current_leader_epoch,
            last_fetched_epoch: data.last_fetched_epoch,
        })
        .collect();

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
            results.push(data);
        }
        let waited_out = tokio::time::Instant::now() >= deadline;
        let diverging = results
            .iter()
            .any(|d| d.diverging_epoch.epoch >= 0 || d.diverging_epoch.end_offset >= 0);
        if total >= min_bytes.max(1) || errors || diverging || waited_out || wanted.is_empty() {
            return apis.fetch_sessions.respond(session, results, super::now_ms());
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
