//! `ReplicaManager::fetch_messages` (Kafka's `fetchMessages`): reads each partition off the
//! async workers (a caught-up consumer is answered from memory with try-locks) — consumers up
//! to the high watermark, follower replicas up to the log end — with per-partition and
//! response byte limits and at least one whole batch (KIP-74). A follower's read records its
//! progress, which may move the HW: the produces and consumer fetches parked on that partition
//! are completed from here, as Kafka does. While fewer than `min_bytes` are available the
//! fetch parks in the purgatory as a `DelayedFetch`, woken only by events on its own
//! partitions, until `max_wait_ms`. A follower's fetch of a partition throttled on the leader
//! side (KIP-73) gets no records while the leader quota is exceeded and the follower is out of
//! the ISR; what a follower fetch returns for throttled partitions is recorded against the
//! quota, and for a replica being added by a reassignment counted as ReassignmentBytesOut.
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::error::ReplicaError;
use super::io::dir_runs;
use super::partition::{IsrProposal, Partition};
use super::purgatory::{FetchBound, FetchWatch, Purgatory};
use super::replica_manager::ReplicaManager;
use crate::types::{BrokerId, TopicPartition};

/// Request-level fetch parameters.
#[derive(Debug, Clone)]
pub struct FetchParams {
    /// The follower fetching, None for consumers.
    pub replica: Option<BrokerId>,
    /// Whether that follower may join the ISR (alive in the metadata cache).
    pub replica_isr_eligible: bool,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    /// Response limit; 0 or less means none.
    pub max_bytes: i32,
    /// 0 READ_UNCOMMITTED, 1 READ_COMMITTED (the same without transactions: up to the HW).
    pub isolation_level: i8,
}

/// One partition of a fetch.
#[derive(Debug, Clone)]
pub struct FetchPartition {
    pub tp: TopicPartition,
    pub fetch_offset: i64,
    pub max_bytes: i32,
    pub current_leader_epoch: i32,
    /// -1 when not given (Fetch < v12).
    pub last_fetched_epoch: i32,
    /// The fetching follower's own log start offset (-1 when not given).
    pub log_start_offset: i64,
}

/// What one partition's read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionResult {
    /// None: read (possibly nothing).
    pub error: Option<ReplicaError>,
    /// -1 on error.
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// Empty (never absent) when there is nothing to return or the partition erred: Kafka
    /// answers an erring partition with empty records, and clients reject a null record set.
    pub records: Bytes,
    /// For a follower whose last fetched epoch diverges: the leader's (epoch, end offset).
    pub diverging_epoch: Option<(i32, i64)>,
}

impl FetchPartitionResult {
    pub fn error(error: ReplicaError) -> Self {
        FetchPartitionResult {
            error: Some(error),
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            records: Bytes::new(),
            diverging_epoch: None,
        }
    }

    fn size(&self) -> usize {
        self.records.len()
    }
}

/// One read pass: results, ISR proposals to submit, and per partition the purgatory's
/// (generation, position) taken before its read: bytes appended while it runs count as new (at
/// worst a spurious wake-up and one more read), never as missed.
struct ReadPass {
    results: Vec<FetchPartitionResult>,
    proposals: Vec<IsrProposal>,
    starts: Vec<(u64, u64)>,
}

impl ReplicaManager {
    /// Kafka's `fetchMessages`: one result per partition, in request order.
    pub async fn fetch_messages(
        &self,
        params: FetchParams,
        partitions: Vec<FetchPartition>,
    ) -> Vec<FetchPartitionResult> {
        if partitions.is_empty() {
            return Vec::new();
        }
        let min_bytes = params.min_bytes.max(0) as u64;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(params.max_wait_ms.max(0) as u64);
        let bound = if params.replica.is_some() {
            FetchBound::LogEnd
        } else {
            FetchBound::HighWatermark
        };
        let hosted: Vec<Option<Arc<Partition>>> = partitions.iter().map(|p| self.partition(&p.tp)).collect();
        let partitions = Arc::new(partitions);
        loop {
            // Caught-up consumers (the long-polling idle case) are answered from memory; any
            // read that may touch the disk, or wait for a lock, goes to the I/O executor.
            let pass = match params
                .replica
                .is_none()
                .then(|| self.read_caught_up(&hosted, &partitions, bound))
            {
                Some(Some(pass)) => pass,
                _ => self.read_pass(&params, &hosted, &partitions, bound).await,
            };
            for proposal in pass.proposals {
                self.submit_isr_change(proposal);
            }
            let starts = pass.starts;
            let results = pass.results;
            let total: usize = results.iter().map(FetchPartitionResult::size).sum();
            let errors = results.iter().any(|r| r.error.is_some());
            let diverging = results.iter().any(|r| r.diverging_epoch.is_some());
            let expired = tokio::time::Instant::now() >= deadline;
            if total as u64 >= min_bytes.max(1) || errors || diverging || expired {
                if let Some(replica) = params.replica {
                    self.record_replication(replica, &hosted, &partitions, &results);
                }
                return results;
            }
            let watches = partitions
                .iter()
                .zip(&starts)
                .zip(&results)
                .map(|((w, (generation, start)), r)| FetchWatch {
                    tp: w.tp.clone(),
                    bound,
                    generation: *generation,
                    start_position: *start,
                    already: r.size() as u64,
                    max_bytes: w.max_bytes.max(0) as u64,
                })
                .collect();
            let Some((parked, rx)) = self.purgatory().watch_fetch(min_bytes, watches) else {
                continue; // satisfiable already: read again
            };
            let _ = tokio::time::timeout_at(deadline, rx).await;
            drop(parked);
        }
    }

    /// What a follower fetch answered: bytes of throttled partitions against the leader quota
    /// (Kafka's `sizeOfThrottledPartitions`, in-sync followers' included), bytes to a replica
    /// a reassignment adds as ReassignmentBytesOut.
    fn record_replication(
        &self,
        replica: BrokerId,
        hosted: &[Option<Arc<Partition>>],
        wanted: &[FetchPartition],
        results: &[FetchPartitionResult],
    ) {
        let (mut throttled, mut reassignment) = (0u64, 0u64);
        for ((partition, w), r) in hosted.iter().zip(wanted).zip(results) {
            let bytes = r.size() as u64;
            if self.quotas().leader().is_throttled(&w.tp) {
                throttled += bytes;
            }
            if bytes > 0 && partition.as_ref().is_some_and(|p| p.is_adding_replica(replica)) {
                reassignment += bytes;
            }
        }
        self.quotas().leader().record(throttled, crate::clock::now_ms());
        if reassignment > 0 {
            metrics::counter!("kafka_server_brokertopicmetrics_reassignmentbytesout_total").increment(reassignment);
        }
    }

    /// Kafka's `shouldLeaderThrottle` without the ISR check (the read makes it): per
    /// partition, whether it is throttled here while the leader quota is exceeded.
    fn leader_throttles(&self, wanted: &[FetchPartition]) -> Vec<bool> {
        let mut quota = self.quotas().leader();
        let mut exceeded = None;
        let now = crate::clock::now_ms();
        wanted
            .iter()
            .map(|w| quota.is_throttled(&w.tp) && *exceeded.get_or_insert_with(|| quota.is_quota_exceeded(now)))
            .collect()
    }

    /// Every partition read by [`Partition::try_read_caught_up`] (try-locks only, no syscall:
    /// what an async worker may do), or `None` if any partition needs the disk, has a busy
    /// lock, or is not yet tracked by the purgatory.
    fn read_caught_up(
        &self,
        hosted: &[Option<Arc<Partition>>],
        wanted: &[FetchPartition],
        bound: FetchBound,
    ) -> Option<ReadPass> {
        let mut results = Vec::with_capacity(wanted.len());
        let mut starts = Vec::with_capacity(wanted.len());
        for (partition, w) in hosted.iter().zip(wanted) {
            // Taken before the read, as on the I/O executor.
            let at = self.purgatory().known_positions(&w.tp)?;
            let read = partition
                .as_ref()?
                .try_read_caught_up(w.fetch_offset, w.current_leader_epoch)?;
            starts.push((at.generation, at.position(bound)));
            results.push(match read {
                Ok(read) => FetchPartitionResult {
                    error: None,
                    high_watermark: read.high_watermark,
                    last_stable_offset: read.high_watermark,
                    log_start_offset: read.log_start_offset,
                    records: read.records,
                    diverging_epoch: None,
                },
                Err(error) => FetchPartitionResult::error(error),
            });
        }
        Some(ReadPass {
            results,
            proposals: Vec::new(),
            starts,
        })
    }

    /// Reads every partition on the I/O executor (each run of partitions in one log dir on that
    /// dir's thread, one run after the other), sharing the response byte budget in order.
    async fn read_pass(
        &self,
        params: &FetchParams,
        hosted: &[Option<Arc<Partition>>],
        partitions: &Arc<Vec<FetchPartition>>,
        bound: FetchBound,
    ) -> ReadPass {
        let n = partitions.len();
        let mut budget = if params.max_bytes > 0 {
            params.max_bytes as usize
        } else {
            usize::MAX
        };
        let mut pass = ReadPass {
            results: Vec::with_capacity(n),
            proposals: Vec::new(),
            starts: Vec::with_capacity(n),
        };
        let mut from = 0;
        for len in dir_runs(hosted.iter().map(|p| p.as_deref().map(Partition::log_dir))) {
            let range = from..from + len;
            from += len;
            let run = hosted[range.clone()].to_vec();
            let dir = run.iter().flatten().next().cloned();
            let wanted = partitions.clone();
            let params = params.clone();
            let min_isrs: Vec<i32> = wanted[range.clone()]
                .iter()
                .map(|w| self.min_insync_replicas(&w.tp))
                .collect();
            let throttles = if params.replica.is_some() {
                self.leader_throttles(&wanted[range.clone()])
            } else {
                vec![false; len]
            };
            let purgatory = Arc::clone(self.purgatory());
            let read = self
                .run_io(dir.as_deref().map(Partition::log_dir), move || {
                    let per_partition = PerPartition {
                        min_isrs: &min_isrs,
                        throttles: &throttles,
                    };
                    read_all(&purgatory, &params, bound, &run, &wanted[range], per_partition, budget)
                })
                .await
                .unwrap_or_else(|error| ReadPass {
                    results: vec![FetchPartitionResult::error(error); len],
                    proposals: Vec::new(),
                    starts: vec![(0, 0); len],
                });
            budget = budget.saturating_sub(read.results.iter().map(FetchPartitionResult::size).sum());
            pass.results.extend(read.results);
            pass.proposals.extend(read.proposals);
            pass.starts.extend(read.starts);
        }
        pass
    }
}

/// What [`read_all`] knows per partition beforehand (from the async side).
struct PerPartition<'a> {
    min_isrs: &'a [i32],
    /// Throttled on the leader side with the quota exceeded.
    throttles: &'a [bool],
}

/// On the I/O executor: everything that may wait for a partition's lock (and so for its disk)
/// happens here — the purgatory's starting positions, the reads, and the produce status of
/// partitions whose HW a follower's read moved.
fn read_all(
    purgatory: &Purgatory,
    params: &FetchParams,
    bound: FetchBound,
    hosted: &[Option<Arc<Partition>>],
    wanted: &[FetchPartition],
    per_partition: PerPartition<'_>,
    mut budget: usize,
) -> ReadPass {
    let mut pass = ReadPass {
        results: Vec::with_capacity(wanted.len()),
        proposals: Vec::new(),
        starts: Vec::with_capacity(wanted.len()),
    };
    let mut hw_moved = Vec::new();
    let known = per_partition.min_isrs.iter().zip(per_partition.throttles);
    for ((partition, w), (&min_isr, &throttle)) in hosted.iter().zip(wanted).zip(known) {
        let (start, result) = match partition {
            None => (
                (0, 0),
                FetchPartitionResult::error(ReplicaError::UnknownTopicOrPartition),
            ),
            Some(partition) => {
                let at = purgatory.positions(&w.tp, || partition.offsets());
                let start = (at.generation, at.position(bound));
                (
                    start,
                    read_one(
                        params,
                        partition,
                        w,
                        (budget, min_isr, throttle),
                        &mut pass,
                        &mut hw_moved,
                    ),
                )
            }
        };
        budget = budget.saturating_sub(result.size());
        pass.starts.push(start);
        pass.results.push(result);
    }
    for (p, min_isr) in hw_moved {
        purgatory.on_status(&p.tp, &p.produce_status(min_isr));
    }
    pass
}

fn read_one(
    params: &FetchParams,
    partition: &Arc<Partition>,
    w: &FetchPartition,
    (budget, min_isr, throttle): (usize, i32, bool),
    pass: &mut ReadPass,
    hw_moved: &mut Vec<(Arc<Partition>, i32)>,
) -> FetchPartitionResult {
    if let Err(error) = partition.check_leader_epoch(w.current_leader_epoch) {
        return FetchPartitionResult::error(error);
    }
    // At least one whole batch comes back even when it exceeds the limits (KIP-74).
    let limit = (w.max_bytes.max(0) as usize).min(budget);
    let read = match params.replica {
        Some(id) => {
            let hw_before = partition.high_watermark();
            partition
                .read_for_follower_throttled(
                    id,
                    (w.fetch_offset, w.last_fetched_epoch, limit),
                    min_isr,
                    crate::clock::now_ms(),
                    params.replica_isr_eligible,
                    throttle,
                )
                .map(|(read, proposal)| {
                    partition.update_follower_log_start(id, w.log_start_offset);
                    pass.proposals.extend(proposal);
                    // This fetch moved the HW: acks=all produces and consumers waiting on it go
                    // now, not when this fetch itself returns (up to replica.fetch.wait.max.ms later).
                    if read.high_watermark > hw_before {
                        hw_moved.push((partition.clone(), min_isr));
                    }
                    read
                })
        }
        None => partition.read(w.fetch_offset, limit),
    };
    match read {
        Ok(read) => FetchPartitionResult {
            error: None,
            high_watermark: read.high_watermark,
            last_stable_offset: read.high_watermark,
            log_start_offset: read.log_start_offset,
            records: read.records,
            diverging_epoch: read.diverging_epoch,
        },
        Err(error) => FetchPartitionResult::error(error),
    }
}
