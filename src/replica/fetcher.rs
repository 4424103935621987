//! Follower fetching (Kafka's `ReplicaFetcherManager` / `ReplicaFetcherThread`): per source
//! broker, `num.replica.fetchers` tasks, each owning the partitions that hash to it (Kafka's
//! `abs(31 * topic.hashCode + partition) % n`). A task sends one Fetch (v12, with its replica id
//! and each partition's last fetched epoch) at a time to the leader, appends what comes back
//! keeping the leader's offsets and epochs, truncates where the leader reports a diverging
//! epoch, resets on OFFSET_OUT_OF_RANGE via ListOffsets, and backs a partition off for
//! `replica.fetch.backoff.ms` on other errors. Each task keeps a KIP-227 incremental fetch session
//! with its leader ([`FetchSessionHandler`]): a full fetch first, then only partitions added or
//! moved on, and forgotten ones; a lost session (FETCH_SESSION_ID_NOT_FOUND,
//! INVALID_FETCH_SESSION_EPOCH) is answered by a full fetch. Leadership changes reach it through
//! [`FetcherManager::add`] / [`FetcherManager::remove`]; every append is checked against the
//! leader epoch the partition was added with, so a late response never lands after a change.
//! A live `num.replica.fetchers` change ([`FetcherManager::resize`]) re-hashes every partition
//! onto the new task count and stops the tasks left idle. The tasks' disk work (fetch
//! positions, appends, truncations, log-start moves) runs on the log dirs' I/O threads
//! ([`follower_io`]), a whole response's worth per dir in one operation. A partition throttled
//! on the follower side (KIP-73) that is not in sync (lagging the leader's HW after the last
//! response, Kafka's `isReplicaInSync`) is left out of the fetch while the follower quota is
//! exceeded; the bytes fetched for throttled partitions are recorded against it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId as KpBrokerId, FetchRequest, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod follower_io;

use self::follower_io::{Action, DirWork, Fetched, Position, Wanted};
use super::io::IoExecutor;
use super::partition::{FollowerError, Partition};
use super::replication_quota::ReplicationQuotas;
use crate::client::{
    BrokerConnection, ClientError, ConnectionConfig, ConnectionSecurity, FetchSessionHandler, SessionFetch,
};
use crate::clock::now_ms;
use crate::protocol::error_codes as ec;
use crate::types::{BrokerId, TopicPartition};

/// Follower fetch settings (Kafka's `replica.fetch.*`).
#[derive(Debug, Clone)]
pub struct FetcherConfig {
    pub local: BrokerId,
    pub num_fetchers: usize,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub partition_max_bytes: i32,
    pub response_max_bytes: i32,
    pub backoff: Duration,
    pub socket_timeout: Duration,
    /// TLS and SASL toward the leaders' inter-broker listener.
    pub security: ConnectionSecurity,
}

impl Default for FetcherConfig {
    fn default() -> Self {
        FetcherConfig {
            local: BrokerId(-1),
            num_fetchers: 1,
            max_wait_ms: 500,
            min_bytes: 1,
            partition_max_bytes: 1024 * 1024,
            response_max_bytes: 10 * 1024 * 1024,
            backoff: Duration::from_millis(1000),
            socket_timeout: Duration::from_secs(30),
            security: ConnectionSecurity::default(),
        }
    }
}

/// A partition a fetcher task replicates.
#[derive(Debug)]
struct Fetching {
    partition: Arc<Partition>,
    leader_epoch: i32,
    retry_at: Option<Instant>,
}

#[derive(Debug, Default)]
struct TaskShared {
    partitions: Mutex<HashMap<TopicPartition, Fetching>>,
    wake: Notify,
    /// Largest (leader HW − our LEO) seen in the last response.
    max_lag: AtomicI64,
}

impl TaskShared {
    fn partitions(&self) -> std::sync::MutexGuard<'_, HashMap<TopicPartition, Fetching>> {
        self.partitions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(Debug)]
struct FetcherTask {
    addr: String,
    shared: Arc<TaskShared>,
    handle: JoinHandle<()>,
}

/// The tasks and how many there are per leader (one lock, so `add` and `resize` agree).
#[derive(Debug, Default)]
struct Pool {
    per_leader: usize,
    tasks: HashMap<(BrokerId, usize), FetcherTask>,
}

/// Every follower fetch task of this broker.
#[derive(Debug)]
pub struct FetcherManager {
    config: FetcherConfig,
    /// Where the fetchers' disk work runs (the ReplicaManager's, one thread per log dir).
    io: Arc<IoExecutor>,
    /// The follower-side replication throttle (KIP-73).
    quotas: Arc<ReplicationQuotas>,
    pool: Mutex<Pool>,
}

/// Where `tp`, fetched by task `index`, goes when there are `to` tasks per leader (`None`: it
/// stays).
pub fn rehomed(tp: &TopicPartition, index: usize, to: usize) -> Option<usize> {
    let new = fetcher_index(tp, to);
    (new != index).then_some(new)
}

/// Which of `n` fetcher tasks replicates `tp`.
pub fn fetcher_index(tp: &TopicPartition, n: usize) -> usize {
    let h = crate::types::java_string_hash(&tp.topic)
        .wrapping_mul(31)
        .wrapping_add(tp.partition);
    (h.unsigned_abs() as usize) % n.max(1)
}

impl FetcherManager {
    pub fn new(config: FetcherConfig, io: Arc<IoExecutor>, quotas: Arc<ReplicationQuotas>) -> Self {
        let per_leader = config.num_fetchers.max(1);
        FetcherManager {
            config,
            io,
            quotas,
            pool: Mutex::new(Pool {
                per_leader,
                tasks: HashMap::new(),
            }),
        }
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the task `key` fetching from `addr` unless it runs already (against that address).
    fn task_for<'a>(&self, pool: &'a mut Pool, key: (BrokerId, usize), addr: &str) -> &'a FetcherTask {
        if pool.tasks.get(&key).is_some_and(|t| t.addr != addr) {
            // The leader moved to another address (a restart on a new port): start over.
            if let Some(old) = pool.tasks.remove(&key) {
                old.handle.abort();
            }
        }
        pool.tasks.entry(key).or_insert_with(|| {
            let shared = Arc::new(TaskShared::default());
            let handle = tokio::spawn(run_task(
                self.config.clone(),
                self.io.clone(),
                self.quotas.clone(),
                key.0,
                addr.to_string(),
                shared.clone(),
            ));
            tracing::info!(leader = %key.0, %addr, index = key.1, "started replica fetcher");
            FetcherTask {
                addr: addr.to_string(),
                shared,
                handle,
            }
        })
    }

    /// Starts (or moves) fetching `partition` from `leader` at `addr` in `leader_epoch`.
    pub fn add(&self, partition: Arc<Partition>, leader: BrokerId, addr: String, leader_epoch: i32) {
        let tp = partition.tp.clone();
        let mut pool = self.pool();
        remove_from(&mut pool, std::slice::from_ref(&tp));
        let key = (leader, fetcher_index(&tp, pool.per_leader));
        let task = self.task_for(&mut pool, key, &addr);
        task.shared.partitions().insert(
            tp,
            Fetching {
                partition,
                leader_epoch,
                retry_at: None,
            },
        );
        task.shared.wake.notify_one();
    }

    /// Stops fetching these partitions; tasks left without partitions end.
    pub fn remove(&self, tps: &[TopicPartition]) {
        remove_from(&mut self.pool(), tps);
    }

    /// Kafka's `AbstractFetcherManager.resizeThreadPool` (`num.replica.fetchers` changed live):
    /// every partition is re-hashed onto `per_leader` tasks per leader, keeping its leader epoch
    /// (a task fetches from the partition's log end, so nothing is skipped or fetched twice),
    /// and the tasks left without partitions are stopped.
    pub fn resize(&self, per_leader: usize) {
        let per_leader = per_leader.max(1);
        let mut pool = self.pool();
        let from = pool.per_leader;
        if from == per_leader {
            return;
        }
        pool.per_leader = per_leader;
        let mut moving = Vec::new();
        for (&(leader, index), task) in &pool.tasks {
            let mut parts = task.shared.partitions();
            let tps: Vec<(TopicPartition, usize)> = parts
                .keys()
                .filter_map(|tp| rehomed(tp, index, per_leader).map(|to| (tp.clone(), to)))
                .collect();
            for (tp, to) in tps {
                if let Some(f) = parts.remove(&tp) {
                    moving.push((leader, to, task.addr.clone(), tp, f));
                }
            }
        }
        let moved = moving.len();
        for (leader, to, addr, tp, f) in moving {
            let key = (leader, to);
            let task = self.task_for(&mut pool, key, &addr);
            task.shared.partitions().insert(tp, Fetching { retry_at: None, ..f });
            task.shared.wake.notify_one();
        }
        remove_from(&mut pool, &[]);
        tracing::info!(
            from,
            to = per_leader,
            moved,
            fetchers = pool.tasks.len(),
            "resized the replica fetcher pool"
        );
    }

    /// Fetcher tasks running now (over all leaders).
    pub fn fetcher_count(&self) -> usize {
        self.pool().tasks.len()
    }

    /// Fetcher tasks per leader (`num.replica.fetchers` as last applied).
    pub fn per_leader(&self) -> usize {
        self.pool().per_leader
    }

    /// Partitions currently being fetched.
    pub fn fetching(&self) -> Vec<TopicPartition> {
        self.pool()
            .tasks
            .values()
            .flat_map(|t| t.shared.partitions().keys().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// Kafka's `ReplicaFetcherManager` MaxLag: the largest lag in messages over all tasks.
    pub fn max_lag(&self) -> i64 {
        self.pool()
            .tasks
            .values()
            .map(|t| t.shared.max_lag.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    pub fn shutdown(&self) {
        for (_, task) in self.pool().tasks.drain() {
            task.handle.abort();
        }
    }
}

/// Drops `tps` from every task; tasks left without partitions end.
fn remove_from(pool: &mut Pool, tps: &[TopicPartition]) {
    for task in pool.tasks.values() {
        let mut parts = task.shared.partitions();
        for tp in tps {
            parts.remove(tp);
        }
    }
    pool.tasks.retain(|_, t| {
        let idle = t.shared.partitions().is_empty();
        if idle {
            t.handle.abort();
        }
        !idle
    });
}

/// One fetcher task's loop. Its disk work (positions, appends, truncations) runs on the log
/// dirs' I/O threads ([`follower_io`]); the task only awaits it, so a stalled dir never holds up
/// an async worker.
async fn run_task(
    config: FetcherConfig,
    io: Arc<IoExecutor>,
    quotas: Arc<ReplicationQuotas>,
    leader: BrokerId,
    addr: String,
    shared: Arc<TaskShared>,
) {
    let conn_config = ConnectionConfig {
        connect_timeout: config.socket_timeout.min(Duration::from_secs(10)),
        request_timeout: config.socket_timeout,
        security: config.security.clone(),
        ..ConnectionConfig::default()
    };
    let client_id = format!("broker-{}-fetcher-{}", config.local, leader);
    let mut conn: Option<BrokerConnection> = None;
    let mut session: FetchSessionHandler<SentPartition> = FetchSessionHandler::new();
    let mut lags: HashMap<TopicPartition, i64> = HashMap::new();
    // Positions taken on the I/O threads at the end of the last round (after its appends).
    let mut known: HashMap<TopicPartition, Position> = HashMap::new();
    loop {
        let now = Instant::now();
        let ready: Vec<Wanted> = shared
            .partitions()
            .iter()
            .filter(|(_, f)| f.retry_at.is_none_or(|t| t <= now))
            .map(|(tp, f)| Wanted {
                tp: tp.clone(),
                partition: f.partition.clone(),
                leader_epoch: f.leader_epoch,
            })
            .collect();
        if ready.is_empty() {
            let next = shared.partitions().values().filter_map(|f| f.retry_at).min();
            match next {
                Some(at) => {
                    let _ = tokio::time::timeout_at(at, shared.wake.notified()).await;
                }
                None => shared.wake.notified().await,
            }
            continue;
        }
        let ready = unthrottled(&quotas, &lags, ready);
        if ready.is_empty() {
            // Everything ready is throttled: Kafka's fetcher backs off an empty fetch.
            let _ = tokio::time::timeout(config.backoff, shared.wake.notified()).await;
            continue;
        }
        let c = match &conn {
            Some(c) if c.is_usable() => c,
            _ => match BrokerConnection::connect_with(addr.as_str(), &client_id, &conn_config).await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    if matches!(e, ClientError::Authentication { .. }) {
                        tracing::error!(%leader, %addr, error = %e, "replica fetcher cannot authenticate to the leader; backing off");
                    } else {
                        tracing::warn!(%leader, %addr, error = %e, "replica fetcher cannot reach the leader; backing off");
                    }
                    tokio::time::sleep(config.backoff).await;
                    continue;
                }
            },
        };
        let positions = take_positions(&io, &mut known, ready).await;
        let request = fetch_request(&config, session.build(sent_partitions(&config, &positions)));
        let response = match c.send(request, 12).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(%leader, %addr, error = %e, "replica fetch failed; backing off");
                session.handle_error();
                conn = None;
                tokio::time::sleep(config.backoff).await;
                continue;
            }
        };
        let answered: Vec<TopicPartition> = response
            .responses
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| TopicPartition {
                    topic: t.topic.0.to_string(),
                    partition: p.partition_index,
                })
            })
            .collect();
        if !session.handle_response(response.error_code, response.session_id, &answered) {
            // KIP-227: an unknown session or a wrong epoch is answered by a full fetch at once,
            // as Kafka's fetcher does; other refusals back off.
            let code = response.error_code;
            if code != ec::FETCH_SESSION_ID_NOT_FOUND && code != ec::INVALID_FETCH_SESSION_EPOCH {
                tracing::warn!(%leader, error_code = code, "replica fetch refused; backing off");
                tokio::time::sleep(config.backoff).await;
            } else {
                tracing::debug!(%leader, error_code = code, "replica fetch session lost; fetching in full");
            }
            continue;
        }
        let by_tp: HashMap<&TopicPartition, &Position> = positions.iter().map(|p| (&p.tp, p)).collect();
        // An incremental answer leaves out partitions without news: their lag stands.
        lags.retain(|tp, _| by_tp.contains_key(tp));
        let mut delayed = Vec::new();
        let mut out_of_range = Vec::new();
        let mut failed = Vec::new();
        let (mut throttled_bytes, mut reassignment_bytes) = (0u64, 0u64);
        // Per log dir: this response's answers there, then every fetched partition's position.
        let mut work: BTreeMap<PathBuf, DirWork> = BTreeMap::new();
        for p in &positions {
            work.entry(p.partition.log_dir().to_path_buf())
                .or_default()
                .wanted
                .push(Wanted {
                    tp: p.tp.clone(),
                    partition: p.partition.clone(),
                    leader_epoch: p.leader_epoch,
                });
        }
        for topic in response.responses {
            let name = topic.topic.0.to_string();
            for data in topic.partitions {
                let tp = TopicPartition {
                    topic: name.clone(),
                    partition: data.partition_index,
                };
                let Some(&Position {
                    ref partition,
                    leader_epoch,
                    leo,
                    ..
                }) = by_tp.get(&tp).copied()
                else {
                    continue;
                };
                if !shared.partitions().contains_key(&tp) {
                    continue; // moved to another task (a resize) or removed while in flight
                }
                match data.error_code {
                    ec::NONE => {}
                    ec::OFFSET_OUT_OF_RANGE => {
                        out_of_range.push((tp, partition.clone(), leader_epoch));
                        continue;
                    }
                    code => {
                        tracing::debug!(partition = %tp, error_code = code, "replica fetch partition error; backing off");
                        delayed.push(tp);
                        continue;
                    }
                }
                let action = if data.diverging_epoch.epoch >= 0 || data.diverging_epoch.end_offset >= 0 {
                    Action::Truncate((data.diverging_epoch.epoch, data.diverging_epoch.end_offset))
                } else {
                    let records = data.records.unwrap_or_default();
                    let whole = complete_batches(&records);
                    if quotas.follower().is_throttled(&tp) {
                        throttled_bytes += whole as u64;
                    }
                    if partition.is_adding_replica(config.local) {
                        reassignment_bytes += whole as u64;
                    }
                    Action::Append(records.slice(..whole))
                };
                work.entry(partition.log_dir().to_path_buf())
                    .or_default()
                    .fetched
                    .push(Fetched {
                        tp,
                        partition: partition.clone(),
                        leader_epoch,
                        fetch_offset: leo,
                        action,
                        leader_high_watermark: data.high_watermark,
                        leader_log_start: data.log_start_offset,
                    });
            }
        }
        quotas.follower().record(throttled_bytes, now_ms());
        if reassignment_bytes > 0 {
            metrics::counter!("kafka_server_brokertopicmetrics_reassignmentbytesin_total")
                .increment(reassignment_bytes);
        }
        for (dir, dir_work) in work {
            let tps: Vec<TopicPartition> = dir_work.fetched.iter().map(|f| f.tp.clone()).collect();
            match io.run(Some(&dir), move || dir_work.run()).await {
                Ok((applied, positions)) => {
                    known.extend(positions.into_iter().map(|p| (p.tp.clone(), p)));
                    for a in applied {
                        match a.result {
                            Ok(leo) => {
                                lags.insert(a.tp, a.leader_high_watermark - leo);
                            }
                            Err(FollowerError::NotFollowing) | Err(FollowerError::Moved) => {}
                            Err(FollowerError::Log(e)) => {
                                tracing::error!(partition = %a.tp, error = %e, "follower cannot write its log; stops fetching it");
                                failed.push(a.tp);
                            }
                        }
                    }
                }
                // The work panicked (logged there): its partitions back off.
                Err(_) => delayed.extend(tps),
            }
        }
        let max_lag = lags.values().copied().max().unwrap_or(0);
        shared.max_lag.store(max_lag.max(0), Ordering::Relaxed);
        for (tp, partition, epoch) in out_of_range {
            known.remove(&tp);
            match handle_out_of_range(c, &io, &config, &tp, &partition, epoch).await {
                Ok(()) => {}
                Err(why) => {
                    tracing::warn!(partition = %tp, %why, "cannot reset an out-of-range follower; backing off");
                    delayed.push(tp);
                }
            }
        }
        let mut parts = shared.partitions();
        let retry = Instant::now() + config.backoff;
        for tp in delayed {
            if let Some(f) = parts.get_mut(&tp) {
                f.retry_at = Some(retry);
            }
        }
        for tp in failed {
            known.remove(&tp);
            parts.remove(&tp);
        }
    }
}

/// The ready partitions the follower quota leaves in the fetch (Kafka's
/// `shouldFollowerThrottle`, on each one's lag after the last response).
fn unthrottled(quotas: &ReplicationQuotas, lags: &HashMap<TopicPartition, i64>, ready: Vec<Wanted>) -> Vec<Wanted> {
    let now = now_ms();
    ready
        .into_iter()
        .filter(|w| !quotas.follower_should_throttle(&w.tp, lags.get(&w.tp).copied(), now))
        .collect()
}

/// Where each ready partition's fetch starts: from the last round's positions when taken in
/// the same leader epoch, the rest read on their dirs' I/O threads. Ready partitions whose
/// position cannot be read (the work panicked) sit this round out. What is not fetched now is
/// forgotten, so the next round reads it afresh.
async fn take_positions(
    io: &IoExecutor,
    known: &mut HashMap<TopicPartition, Position>,
    ready: Vec<Wanted>,
) -> Vec<Position> {
    let mut positions = Vec::with_capacity(ready.len());
    let mut missing = Vec::new();
    for w in ready {
        match known.remove(&w.tp) {
            Some(p) if p.leader_epoch == w.leader_epoch && Arc::ptr_eq(&p.partition, &w.partition) => positions.push(p),
            _ => missing.push(w),
        }
    }
    known.clear();
    for (dir, wanted) in follower_io::by_dir(missing, |w| w.partition.log_dir().to_path_buf()) {
        match io.run(Some(&dir), move || follower_io::positions(wanted)).await {
            Ok(read) => positions.extend(read),
            Err(_) => tracing::warn!(dir = %dir.display(), "cannot read follower fetch positions; retrying next round"),
        }
    }
    positions
}

/// What a follower fetch lists for one partition (compared by the session to decide whether
/// the partition must be sent again).
#[derive(Debug, Clone, PartialEq)]
struct SentPartition {
    leader_epoch: i32,
    fetch_offset: i64,
    last_fetched_epoch: i32,
    log_start_offset: i64,
    max_bytes: i32,
}

fn sent_partitions(config: &FetcherConfig, positions: &[Position]) -> Vec<(TopicPartition, SentPartition)> {
    positions
        .iter()
        .map(|p| {
            (
                p.tp.clone(),
                SentPartition {
                    leader_epoch: p.leader_epoch,
                    fetch_offset: p.leo,
                    last_fetched_epoch: p.last_epoch,
                    log_start_offset: p.log_start,
                    max_bytes: config.partition_max_bytes,
                },
            )
        })
        .collect()
}

fn fetch_request(config: &FetcherConfig, fetch: SessionFetch<SentPartition>) -> FetchRequest {
    let topic_name = |tp: &TopicPartition| TopicName(StrBytes::from_string(tp.topic.clone()));
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, p) in &fetch.to_send {
        let partition = FetchPartition::default()
            .with_partition(tp.partition)
            .with_current_leader_epoch(p.leader_epoch)
            .with_fetch_offset(p.fetch_offset)
            .with_last_fetched_epoch(p.last_fetched_epoch)
            .with_log_start_offset(p.log_start_offset)
            .with_partition_max_bytes(p.max_bytes);
        match topics.iter_mut().find(|t| t.topic.0.as_str() == tp.topic) {
            Some(t) => t.partitions.push(partition),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(topic_name(tp))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    for tp in &fetch.to_forget {
        match forgotten.iter_mut().find(|t| t.topic.0.as_str() == tp.topic) {
            Some(t) => t.partitions.push(tp.partition),
            None => forgotten.push(
                ForgottenTopic::default()
                    .with_topic(topic_name(tp))
                    .with_partitions(vec![tp.partition]),
            ),
        }
    }
    FetchRequest::default()
        .with_replica_id(KpBrokerId(config.local.0))
        .with_max_wait_ms(config.max_wait_ms)
        .with_min_bytes(config.min_bytes)
        .with_max_bytes(config.response_max_bytes)
        .with_session_id(fetch.metadata.session_id)
        .with_session_epoch(fetch.metadata.epoch)
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten)
}

/// Bytes of `records` made of whole batches (a leader may cut the last one short).
fn complete_batches(records: &[u8]) -> usize {
    let mut pos = 0;
    while records.len() - pos >= 12 {
        let len = i32::from_be_bytes([records[pos + 8], records[pos + 9], records[pos + 10], records[pos + 11]]);
        let end = pos + 12 + len.max(0) as usize;
        if len < 0 || end > records.len() {
            break;
        }
        pos = end;
    }
    pos
}

/// Kafka's `fetchOffsetAndTruncate`: asks the leader for its LEO and log start (as a replica)
/// and truncates or restarts the local log to fit.
/// The truncation runs on the partition's log dir I/O thread.
async fn handle_out_of_range(
    conn: &BrokerConnection,
    io: &IoExecutor,
    config: &FetcherConfig,
    tp: &TopicPartition,
    partition: &Arc<Partition>,
    epoch: i32,
) -> Result<(), String> {
    let leader_leo = list_offset(conn, config, tp, epoch, -1).await?;
    let leader_start = list_offset(conn, config, tp, epoch, -2).await?;
    let p = Arc::clone(partition);
    let reset = io
        .run(Some(partition.log_dir()), move || {
            p.reset_out_of_range(epoch, leader_leo, leader_start, now_ms())
        })
        .await
        .map_err(|e| e.to_string())?;
    match reset {
        Ok(()) | Err(FollowerError::NotFollowing) | Err(FollowerError::Moved) => Ok(()),
        Err(FollowerError::Log(e)) => Err(e.to_string()),
    }
}

async fn list_offset(
    conn: &BrokerConnection,
    config: &FetcherConfig,
    tp: &TopicPartition,
    epoch: i32,
    timestamp: i64,
) -> Result<i64, String> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(KpBrokerId(config.local.0))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(tp.topic.clone())))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(tp.partition)
                .with_current_leader_epoch(epoch)
                .with_timestamp(timestamp)])]);
    let response = conn.send(request, 4).await.map_err(|e| e.to_string())?;
    let p = response
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or("empty ListOffsets response")?;
    if p.error_code != ec::NONE {
        return Err(format!("ListOffsets error {}", p.error_code));
    }
    Ok(p.offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_map_to_fetchers_as_kafka_does() {
        // Java: "topic".hashCode() == 110546223; abs(31 * h + 0) % 3.
        assert_eq!(crate::types::java_string_hash("topic"), 110_546_223);
        let tp = |p| TopicPartition {
            topic: "topic".into(),
            partition: p,
        };
        let expected = |p: i32| ((110_546_223i32.wrapping_mul(31).wrapping_add(p)).unsigned_abs() as usize) % 3;
        for p in 0..6 {
            assert_eq!(fetcher_index(&tp(p), 3), expected(p));
        }
        assert_eq!(fetcher_index(&tp(5), 1), 0);
    }

    #[test]
    fn a_resize_rehashes_partitions_onto_the_new_task_count() {
        let tps: Vec<TopicPartition> = (0..12)
            .map(|p| TopicPartition {
                topic: "topic".into(),
                partition: p,
            })
            .collect();
        // One task to three: each partition lands where Kafka's getFetcherId puts it.
        let mut used = std::collections::BTreeSet::new();
        for tp in &tps {
            let to = rehomed(tp, 0, 3).unwrap_or(0);
            assert_eq!(to, fetcher_index(tp, 3));
            used.insert(to);
        }
        assert_eq!(used.len(), 3, "all three tasks get partitions");
        // Those already on the right task stay put.
        for tp in &tps {
            assert_eq!(rehomed(tp, fetcher_index(tp, 3), 3), None);
        }
        // Three back to one: everything goes to task 0.
        for tp in &tps {
            let from = fetcher_index(tp, 3);
            assert_eq!(rehomed(tp, from, 1), (from != 0).then_some(0));
        }
    }

    #[test]
    fn a_cut_short_last_batch_is_left_for_the_next_fetch() {
        let mut records = Vec::new();
        for len in [20i32, 30] {
            records.extend_from_slice(&0i64.to_be_bytes());
            records.extend_from_slice(&len.to_be_bytes());
            records.extend(std::iter::repeat_n(0u8, len as usize));
        }
        let whole = records.len();
        assert_eq!(complete_batches(&records), whole);
        assert_eq!(complete_batches(&records[..whole - 1]), 32);
        assert_eq!(complete_batches(&records[..5]), 0);
        assert_eq!(complete_batches(&[]), 0);
    }
}
