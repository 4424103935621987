//! `ReplicaManager::append_records` (Kafka's `appendRecords`): appends each partition's batches
//! as leader on the I/O threads of their log dirs ([`super::io`]), tells the purgatory what moved (waking
//! only the fetches parked on those partitions), and for acks=-1 parks the produce as a
//! `DelayedProduce` until the high watermark passes every appended offset, the leadership
//! changes, the ISR drops below min.insync.replicas, or the timeout passes. Everything that
//! takes a partition's lock happens there too, since an append stuck in a slow disk may hold
//! it. Producers and the group coordinator's writes to `__consumer_offsets` both come through
//! here. [`ReplicaManager::append_records_then_wait`] returns once the records are appended,
//! with the wait as a future that owns what it needs, so the connection can serve its next
//! request while an acks=all produce waits for its followers.
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::error::ReplicaError;
use super::io::dir_runs;
use super::partition::Partition;
use super::purgatory::{Parked, ProduceWatch, Purgatory};
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
type Outcome = (Option<Arc<Partition>>, Result<(LogAppendInfo, i32), ReplicaError>);
type Outcomes = Vec<Outcome>;

/// What the I/O executor hands back: the outcomes and, for acks=-1, the produce already parked.
struct AppendPass {
    outcomes: Outcomes,
    parked: Option<(Parked, oneshot::Receiver<Vec<ProduceWatch>>)>,
}

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
        // Fixed at append time, as Kafka's DelayedProduce takes its deadline when created.
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
        let mut tps = Vec::with_capacity(entries.len());
        let mut work: Vec<(Option<Arc<Partition>>, Bytes, i32)> = Vec::with_capacity(entries.len());
        for e in entries {
            // The topic's min ISR now: a dynamic change applies from the next produce on.
            work.push((self.partition(&e.tp), e.records, self.min_insync_replicas(&e.tp)));
            tps.push(e.tp);
        }
        // Each run of partitions in one log dir is appended on that dir's I/O thread.
        let runs = dir_runs(work.iter().map(|(p, _, _)| p.as_deref().map(Partition::log_dir)));
        let mut results = Vec::with_capacity(tps.len());
        let mut parked = Vec::new();
        let mut tps = tps.into_iter();
        for len in runs {
            let run: Vec<_> = if len == work.len() {
                std::mem::take(&mut work)
            } else {
                work.drain(..len).collect()
            };
            let dir = run.iter().find_map(|(p, _, _)| p.clone());
            let purgatory = Arc::clone(self.purgatory());
            let pass = self
                .run_io(dir.as_deref().map(Partition::log_dir), move || {
                    append_all(&purgatory, run, acks)
                })
                .await;
            let tps = tps.by_ref().take(len);
            match pass {
                Ok(pass) => {
                    results.extend(
                        pass.outcomes
                            .into_iter()
                            .zip(tps)
                            .map(|(outcome, tp)| result_of(tp, outcome)),
                    );
                    parked.extend(pass.parked);
                }
                Err(error) => results.extend(tps.map(|tp| AppendResult {
                    tp,
                    error: Some(error.clone()),
                    info: None,
                })),
            }
        }
        if parked.is_empty() {
            Appended::Done(results)
        } else {
            Appended::Waiting(Box::pin(wait_for_replication(results, parked, deadline)))
        }
    }
}

fn result_of(tp: TopicPartition, (partition, outcome): Outcome) -> AppendResult {
    match (partition, outcome) {
        (Some(_), Ok((info, _))) => AppendResult {
            tp,
            error: None,
            info: Some(AppendedInfo::from(&info)),
        },
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
    }
}

/// The DelayedProduce (one part per log dir the produce appended in), parked on the I/O
/// executor right after the append: completes when every waited partition is decided or the
/// deadline passes (REQUEST_TIMED_OUT for those still pending). Only the purgatory's lock is
/// taken here, never a partition's.
async fn wait_for_replication(
    mut results: Vec<AppendResult>,
    parked: Vec<(Parked, oneshot::Receiver<Vec<ProduceWatch>>)>,
    deadline: tokio::time::Instant,
) -> Vec<AppendResult> {
    let mut outcomes = Vec::new();
    for (parked, mut rx) in parked {
        outcomes.extend(match tokio::time::timeout_at(deadline, &mut rx).await {
            Ok(outcomes) => outcomes.unwrap_or_default(),
            Err(_) => match parked.purgatory().take_produce(&parked) {
                Some(outcomes) => outcomes,
                // Completed just as it expired: its answer is already sent.
                None => rx.await.unwrap_or_default(),
            },
        });
        drop(parked);
    }
    // The watches are in result order, one per successful append.
    let mut outcomes = outcomes.into_iter();
    for result in results.iter_mut().filter(|r| r.info.is_some()) {
        let outcome = outcomes.next().and_then(|w| w.outcome);
        result.error = outcome.unwrap_or(Err(ReplicaError::RequestTimedOut)).err();
    }
    results
}

/// On the I/O executor: appends each partition, tells the purgatory (taking each partition's
/// status here, where waiting for its lock behind a slow disk is harmless), and for acks=-1
/// parks the produce and checks it once the watch is in place, so an HW move that raced the
/// append counts.
fn append_all(purgatory: &Arc<Purgatory>, work: Vec<(Option<Arc<Partition>>, Bytes, i32)>, acks: i16) -> AppendPass {
    let mut watches = Vec::new();
    let mut waited = Vec::new();
    let outcomes: Outcomes = work
        .into_iter()
        .map(|(partition, records, min_isr)| {
            let outcome = match &partition {
                None => Err(ReplicaError::UnknownTopicOrPartition),
                Some(p) => p.append_as_leader(&records, acks, min_isr, crate::clock::now_ms()),
            };
            if let (Some(p), Ok((info, epoch))) = (&partition, &outcome) {
                let status = p.produce_status(min_isr);
                purgatory.on_append(
                    &p.tp,
                    info.last_offset + 1,
                    info.bytes as u64,
                    &status,
                    info.first_offset,
                );
                if acks == -1 {
                    watches.push(ProduceWatch {
                        tp: p.tp.clone(),
                        required_offset: info.last_offset + 1,
                        leader_epoch: *epoch,
                        outcome: None,
                    });
                    waited.push((Arc::clone(p), min_isr));
                }
            }
            (partition, outcome)
        })
        .collect();
    let parked = (!watches.is_empty()).then(|| {
        let parked = purgatory.watch_produce(watches);
        for (p, min_isr) in &waited {
            purgatory.on_status(&p.tp, &p.produce_status(*min_isr));
        }
        parked
    });
    AppendPass { outcomes, parked }
}
