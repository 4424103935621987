//! `ReplicaManager::append_records` (Kafka's `appendRecords`): appends each partition's batches
//! as leader on the blocking I/O executor, tells the purgatory what moved (waking only the
//! fetches parked on those partitions), and for acks=-1 parks the produce as a `DelayedProduce`
//! until the high watermark passes every appended offset, the leadership changes, the ISR drops
//! below min.insync.replicas, or the timeout passes. Producers and the group coordinator's
//! writes to `__consumer_offsets` both come through here. [`ReplicaManager::append_records_then_wait`]
//! returns once the records are appended, with the wait as a future that owns what it needs, so
//! the connection can serve its next request while an acks=all produce waits for its followers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::error::ReplicaError;
use super::partition::Partition;
use super::purgatory::{ProduceWatch, Purgatory};
use super::replica_manager::ReplicaManager;
use crate::log::log::LogAppendInfo;
use crate::types::TopicPartition;

/// One partition's part of a produce: its batches, as they came in the request (the log writes
/// patched copies of the batch headers and these bytes after them, uncopied).
#[derive(Debug)]
pub struct AppendPartition {
    pub tp: TopicPartition,
    pub records: Bytes,
}

/// What [`ReplicaManager::append_records_then_wait`] answers.
pub enum Appended {
    /// Every partition is decided (acks 0 or 1, or nothing to wait for).
    Done(Vec<AppendResult>),
    /// acks=-1: the results once the ISR has the records, the deadline (fixed when the
    /// records were appended) passes, or the leadership or ISR changes.
    Waiting(Pin<Box<dyn Future<Output = Vec<AppendResult>> + Send>>),
}

impl std::fmt::Debug for Appended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Appended::Done(r) => f.debug_tuple("Done").field(r).finish(),
            Appended::Waiting(_) => f.write_str("Waiting(..)"),
        }
    }
}

/// How one partition's append ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    pub tp: TopicPartition,
    /// None: appended (and, for acks=-1, replicated).
    pub error: Option<ReplicaError>,
    /// What the log appended (kept when a later wait fails, as Kafka reports the base offset).
    pub info: Option<AppendedInfo>,
}

/// The parts of [`LogAppendInfo`] a produce answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_append_time: i64,
    pub log_start_offset: i64,
}

impl From<&LogAppendInfo> for AppendedInfo {
    fn from(info: &LogAppendInfo) -> Self {
        AppendedInfo {
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time: info.log_append_time,
            log_start_offset: info.log_start_offset,
        }
    }
}

/// Appends on the I/O executor: per partition, the append's outcome (with its leader epoch).
type Outcomes = Vec<(Option<Arc<Partition>>, Result<(LogAppendInfo, i32), ReplicaError>, i32)>;

impl ReplicaManager {
    /// Kafka's `appendRecords`: `acks` -1, 0 or 1 (anything else: INVALID_REQUIRED_ACKS for every
    /// partition), `timeout_ms` how long an acks=-1 produce waits for the ISR. One result per
    /// partition, in request order.
    pub async fn append_records(&self, acks: i16, timeout_ms: i32, entries: Vec<AppendPartition>) -> Vec<AppendResult> {
        match self.append_records_then_wait(acks, timeout_ms, entries).await {
            Appended::Done(results) => results,
            Appended::Waiting(wait) => wait.await,
        }
    }

    /// [`Self::append_records`] in two steps: returns once the records are appended; for
    /// acks=-1 the wait for the ISR comes back as a future (already parked in the purgatory).
    pub async fn append_records_then_wait(
        &self,
        acks: i16,
        timeout_ms: i32,
        entries: Vec<AppendPartition>,
    ) -> Appended {
        if !matches!(acks, -1..=1) {
            return Appended::Done(
                entries
                    .into_iter()
                    .map(|e| AppendResult {
                        tp: e.tp,
                        error: Some(ReplicaError::InvalidRequiredAcks),
                        info: None,
                    })
                    .collect(),
            );
        }
        let mut tps = Vec::with_capacity(entries.len());
        let mut work: Vec<(Option<Arc<Partition>>, Bytes, i32)> = Vec::with_capacity(entries.len());
        for e in entries {
            // The topic's min ISR now: a dynamic change applies from the next produce on.
            work.push((self.partition(&e.tp), e.records, self.min_insync_replicas(&e.tp)));
            tps.push(e.tp);
        }
        let appended = match run_blocking(move || append_all(work, acks)).await {
            Ok(appended) => appended,
            Err(error) => {
                return Appended::Done(
                    tps.into_iter()
                        .map(|tp| AppendResult {
                            tp,
                            error: Some(error.clone()),
                            info: None,
                        })
                        .collect(),
                )
            }
        };
        let mut results = Vec::with_capacity(appended.len());
        let mut waits = Vec::new();
        for ((partition, outcome, min_isr), tp) in appended.into_iter().zip(tps) {
            let result = match (partition, outcome) {
                (Some(partition), Ok((info, epoch))) => {
                    let status = partition.produce_status(min_isr);
                    self.purgatory().on_append(
                        &partition.tp,
                        info.last_offset + 1,
                        info.bytes as u64,
                        &status,
                        info.first_offset,
                    );
                    let tp = partition.tp.clone();
                    if acks == -1 {
                        waits.push((results.len(), partition, info.last_offset + 1, epoch, min_isr));
                    }
                    AppendResult {
                        tp,
                        error: None,
                        info: Some(AppendedInfo::from(&info)),
                    }
                }
                (_, Err(error)) => AppendResult {
                    tp,
                    error: Some(error),
                    info: None,
                },
                (None, Ok(_)) => AppendResult {
                    tp,
                    error: Some(ReplicaError::UnknownTopicOrPartition),
                    info: None,
                },
            };
            results.push(result);
        }
        if waits.is_empty() {
            return Appended::Done(results);
        }
        Appended::Waiting(Box::pin(self.wait_for_replication(results, waits, timeout_ms)))
    }

    /// The DelayedProduce: parks now (so the deadline and the first check are taken at append
    /// time); the future completes when every waited partition is decided or `timeout_ms`
    /// passes (REQUEST_TIMED_OUT for those still pending).
    fn wait_for_replication(
        &self,
        mut results: Vec<AppendResult>,
        waits: Vec<(usize, Arc<Partition>, i64, i32, i32)>,
        timeout_ms: i32,
    ) -> impl Future<Output = Vec<AppendResult>> + Send + 'static {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
        let watches = waits
            .iter()
            .map(|(_, p, required_offset, leader_epoch, _)| ProduceWatch {
                tp: p.tp.clone(),
                required_offset: *required_offset,
                leader_epoch: *leader_epoch,
                outcome: None,
            })
            .collect();
        let purgatory: Arc<Purgatory> = Arc::clone(self.purgatory());
        let (parked, mut rx) = purgatory.watch_produce(watches);
        // Checked once the watch is in place, so an HW move that raced the append counts.
        for (_, partition, _, _, min_isr) in &waits {
            purgatory.on_status(&partition.tp, &partition.produce_status(*min_isr));
        }
        let indexes: Vec<usize> = waits.iter().map(|(index, ..)| *index).collect();
        async move {
            let outcomes = match tokio::time::timeout_at(deadline, &mut rx).await {
                Ok(outcomes) => outcomes.unwrap_or_default(),
                Err(_) => match purgatory.take_produce(&parked) {
                    Some(outcomes) => outcomes,
                    // Completed just as it expired: its answer is already sent.
                    None => rx.await.unwrap_or_default(),
                },
            };
            drop(parked);
            for (i, index) in indexes.into_iter().enumerate() {
                let outcome = outcomes.get(i).and_then(|w| w.outcome.clone());
                results[index].error = outcome.unwrap_or(Err(ReplicaError::RequestTimedOut)).err();
            }
            results
        }
    }
}

fn append_all(work: Vec<(Option<Arc<Partition>>, Bytes, i32)>, acks: i16) -> Outcomes {
    work.into_iter()
        .map(|(partition, records, min_isr)| {
            let outcome = match &partition {
                None => Err(ReplicaError::UnknownTopicOrPartition),
                Some(p) => p.append_as_leader(&records, acks, min_isr, crate::clock::now_ms()),
            };
            (partition, outcome, min_isr)
        })
        .collect()
}

/// Runs disk work on the blocking I/O executor; a panic there is an internal error.
pub(super) async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ReplicaError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        tracing::error!(error = %e, "disk work failed on the I/O executor");
        ReplicaError::UnknownServerError
    })
}
