//! `ReplicaManager::delete_records` (Kafka's `ReplicaManager.deleteRecords` with its
//! `DelayedDeleteRecords`): each partition's leader moves its log start offset on the I/O
//! executor, then the request waits until every live replica's log start has reached the new
//! one — followers learn it from their Fetch responses and report theirs in the next fetch —
//! or until the timeout, which answers REQUEST_TIMED_OUT with the low watermark reached so
//! far. Losing leadership meanwhile answers NOT_LEADER_OR_FOLLOWER. The wait is woken by the
//! partitions' follower log-start reports and by leadership changes, never polled.

use std::sync::Arc;
use std::time::Duration;

use super::io::dir_runs;
use super::partition::delete_records::DeletedRecords;
use super::partition::Partition;
use super::replica_manager::ReplicaManager;
use crate::protocol::error_codes as ec;
use crate::types::{BrokerId, TopicPartition};

/// Kafka's `DeleteRecordsResponse.INVALID_LOW_WATERMARK`.
pub const INVALID_LOW_WATERMARK: i64 = -1;

/// Whether a broker is alive (the metadata cache's view): only live followers hold a request.
pub type IsAlive = Arc<dyn Fn(BrokerId) -> bool + Send + Sync>;

/// One partition's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRecordsOutcome {
    pub error: i16,
    pub low_watermark: i64,
}

impl DeleteRecordsOutcome {
    fn failed(error: i16) -> Self {
        DeleteRecordsOutcome {
            error,
            low_watermark: INVALID_LOW_WATERMARK,
        }
    }
}

/// A partition still waiting for its replicas.
struct Pending {
    index: usize,
    partition: Arc<Partition>,
    required: i64,
}

impl ReplicaManager {
    /// Deletes the records below each requested offset (-1: the HW); one outcome per entry, in
    /// order. Partitions this broker does not host answer NOT_LEADER_OR_FOLLOWER (the caller
    /// has already answered topics the cluster does not know).
    pub async fn delete_records(
        &self,
        timeout_ms: i32,
        requests: Vec<(TopicPartition, i64)>,
        alive: IsAlive,
    ) -> Vec<DeleteRecordsOutcome> {
        let hosted: Vec<Option<Arc<Partition>>> = requests.iter().map(|(tp, _)| self.partition(tp)).collect();
        let n = requests.len();
        // Each run of partitions in one log dir on that dir's I/O thread.
        let mut deleted: Vec<Result<DeletedRecords, i16>> = Vec::with_capacity(n);
        let mut from = 0;
        for len in dir_runs(hosted.iter().map(|p| p.as_deref().map(Partition::log_dir))) {
            let range = from..from + len;
            from += len;
            let run = hosted[range.clone()].to_vec();
            let offsets: Vec<i64> = requests[range].iter().map(|(_, offset)| *offset).collect();
            let dir = run.iter().flatten().next().cloned();
            let alive = alive.clone();
            let done = self
                .run_io(dir.as_deref().map(Partition::log_dir), move || {
                    run.iter()
                        .zip(offsets)
                        .map(|(p, offset)| match p {
                            None => Err(ec::NOT_LEADER_OR_FOLLOWER),
                            Some(p) => p.delete_records_on_leader(offset, &*alive).map_err(|e| e.error_code()),
                        })
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap_or_else(|e| vec![Err(e.error_code()); len]);
            deleted.extend(done);
        }
        let mut outcomes = Vec::with_capacity(n);
        let mut pending = Vec::new();
        for (index, (result, partition)) in deleted.into_iter().zip(hosted).enumerate() {
            match (result, partition) {
                (Ok(d), Some(partition)) if d.low_watermark < d.requested_offset => {
                    // Kafka's DelayedDeleteRecords: timed out unless the replicas catch up.
                    outcomes.push(DeleteRecordsOutcome {
                        error: ec::REQUEST_TIMED_OUT,
                        low_watermark: d.low_watermark,
                    });
                    pending.push(Pending {
                        index,
                        partition,
                        required: d.requested_offset,
                    });
                }
                (Ok(d), _) => outcomes.push(DeleteRecordsOutcome {
                    error: ec::NONE,
                    low_watermark: d.low_watermark,
                }),
                (Err(code), _) => outcomes.push(DeleteRecordsOutcome::failed(code)),
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
        let mut leadership = self.subscribe_leadership();
        while let Some(first) = pending.first() {
            // Subscribed before checking: a report arriving meanwhile still wakes the wait.
            let mut reports = first.partition.subscribe_log_starts();
            pending.retain(|p| {
                let outcome = &mut outcomes[p.index];
                match p.partition.low_watermark_if_leader(&*alive) {
                    Ok(lw) if lw >= p.required => {
                        *outcome = DeleteRecordsOutcome {
                            error: ec::NONE,
                            low_watermark: lw,
                        };
                        false
                    }
                    Ok(lw) => {
                        outcome.low_watermark = lw;
                        true
                    }
                    Err(e) => {
                        *outcome = DeleteRecordsOutcome::failed(e.error_code());
                        false
                    }
                }
            });
            if pending.is_empty() {
                break;
            }
            let woken = tokio::select! {
                r = reports.changed() => r.is_ok(),
                r = leadership.changed() => r.is_ok(),
                _ = tokio::time::sleep_until(deadline) => false,
            };
            if !woken {
                break;
            }
        }
        outcomes
    }
}
