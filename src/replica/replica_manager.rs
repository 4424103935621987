//! `ReplicaManager`: the partitions this broker hosts. It applies LeaderAndIsr and StopReplica
//! from the controller (rejecting stale controller and broker epochs, applying a partition
//! state only when its leader epoch is newer) and, as a safety net, newer states found in the
//! state znodes; it starts and stops follower fetching, appends producer batches, serves reads,
//! runs the leader's ISR checks (the writes to ZooKeeper go through the ISR writer task), and
//! tells the [`Purgatory`] which partition moved, so only the fetches and acks=all produces
//! parked on it are checked. Appends and reads themselves are in [`super::append`] and
//! [`super::fetch`].

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{mpsc, watch};

use super::error::ReplicaError;
use super::fetcher::{FetcherConfig, FetcherManager};
use super::io::IoExecutor;
use super::partition::{IsrProposal, IsrWriteOutcome, Partition, PartitionState, StoredState};
use super::purgatory::Purgatory;
use super::replication_quota::{QuotaConfig, ReplicationQuotas};
use crate::log::lock_order::assert_no_log_lock;
use crate::log::log_manager::{lock, LogManager};
use crate::types::{BrokerId, FastMap, TopicPartition};

/// One partition of a LeaderAndIsr request, already unpacked from its wire form.
#[derive(Debug, Clone)]
pub struct LeaderAndIsrPartition {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    pub state: PartitionState,
}

/// LeaderAndIsr's answer for each partition: (partition, topic id, outcome).
pub type LeaderAndIsrOutcomes = Vec<(TopicPartition, uuid::Uuid, Result<(), ReplicaError>)>;

/// StopReplica's answer for each partition.
pub type StopReplicaOutcomes = Vec<(TopicPartition, Result<(), ReplicaError>)>;

/// Request-level fields of a controller request.
#[derive(Debug, Clone, Copy)]
pub struct ControllerRequestEpochs {
    pub controller_epoch: i32,
    /// -1 when the request version does not carry one.
    pub broker_epoch: i64,
}

/// Replication settings.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    pub replica_lag_time_max_ms: i64,
    pub fetcher: FetcherConfig,
    /// The replication throttles' window and starting rates (KIP-73).
    pub quota: QuotaConfig,
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        ReplicaConfig {
            replica_lag_time_max_ms: 30_000,
            fetcher: FetcherConfig::default(),
            quota: QuotaConfig::default(),
        }
    }
}

#[derive(Debug)]
pub struct ReplicaManager {
    local: BrokerId,
    log_manager: Arc<LogManager>,
    partitions: RwLock<FastMap<TopicPartition, Arc<Partition>>>,
    controller_epoch: AtomicI32,
    /// This broker's current epoch (czxid of its registration); older requests are refused.
    broker_epoch: AtomicI64,
    config: ReplicaConfig,
    /// Parked fetches and acks=all produces, keyed by partition.
    purgatory: Arc<Purgatory>,
    /// Where disk work runs: one thread and queue per log dir.
    io: Arc<IoExecutor>,
    /// Bumped whenever a hosted partition may have gained or lost leadership (LeaderAndIsr, a
    /// state znode applied, StopReplica, a failed log dir): what the group coordinator watches.
    leadership: watch::Sender<u64>,
    fetchers: FetcherManager,
    /// The leader- and follower-side replication throttles (KIP-73), shared with the fetchers.
    quotas: Arc<ReplicationQuotas>,
    /// Where other brokers' inter-broker listeners are (from LeaderAndIsr and UpdateMetadata).
    endpoints: RwLock<HashMap<BrokerId, String>>,
    /// The ISR writer's inbox (ZooKeeper is at the edge); unset in tests without ZooKeeper.
    isr_writer: Mutex<Option<mpsc::UnboundedSender<IsrProposal>>>,
    /// High watermarks from `replication-offset-checkpoint`, until their partitions are hosted.
    checkpointed_hws: Mutex<HashMap<TopicPartition, i64>>,
    /// Test seam: LeaderAndIsr requests are answered but not applied (a lost request).
    drop_leader_and_isr: AtomicBool,
}

/// Leader-side replication health, for the ReplicaManager gauges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicationCounts {
    pub partitions: usize,
    pub leaders: usize,
    pub under_replicated: usize,
    pub under_min_isr: usize,
    pub at_min_isr: usize,
    pub offline: usize,
    /// Led partitions being reassigned (KIP-352's ReassigningPartitions).
    pub reassigning: usize,
}

impl ReplicaManager {
    /// The logs this broker hosts.
    pub fn log_manager(&self) -> &Arc<LogManager> {
        &self.log_manager
    }

    pub fn new(local: BrokerId, log_manager: Arc<LogManager>, config: ReplicaConfig) -> Self {
        let checkpointed_hws = log_manager.read_high_watermark_checkpoints();
        let fetcher_config = FetcherConfig {
            local,
            ..config.fetcher.clone()
        };
        let io = Arc::new(IoExecutor::default());
        let quotas = Arc::new(ReplicationQuotas::new(local, config.quota));
        ReplicaManager {
            local,
            log_manager,
            partitions: RwLock::new(FastMap::default()),
            controller_epoch: AtomicI32::new(-1),
            broker_epoch: AtomicI64::new(-1),
            config,
            purgatory: Arc::new(Purgatory::default()),
            io: io.clone(),
            leadership: watch::channel(0).0,
            fetchers: FetcherManager::new(fetcher_config, io, quotas.clone()),
            quotas,
            endpoints: RwLock::new(HashMap::new()),
            isr_writer: Mutex::new(None),
            checkpointed_hws: Mutex::new(checkpointed_hws),
            drop_leader_and_isr: AtomicBool::new(false),
        }
    }

    /// Runs `work` on the I/O thread of `dir` (a partition's [`Partition::log_dir`]; None:
    /// no disk involved, in place). A panic there is UNKNOWN_SERVER_ERROR.
    pub async fn run_io<T: Send + 'static>(
        &self,
        dir: Option<&Path>,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ReplicaError> {
        self.io.run(dir, work).await
    }

    pub fn local(&self) -> BrokerId {
        self.local
    }

    /// `tp`'s topic's `min.insync.replicas` as configured now (its override, else the
    /// broker's), read live from the LogManager: a dynamic change applies to the next produce.
    pub fn min_insync_replicas(&self, tp: &TopicPartition) -> i32 {
        self.log_manager.min_insync_replicas(&tp.topic)
    }

    pub fn replica_lag_time_max_ms(&self) -> i64 {
        self.config.replica_lag_time_max_ms
    }

    pub fn set_broker_epoch(&self, epoch: i64) {
        self.broker_epoch.store(epoch, Ordering::SeqCst);
    }

    pub fn controller_epoch(&self) -> i32 {
        self.controller_epoch.load(Ordering::SeqCst)
    }

    /// Connects the ISR writer (see [`super::isr_writer`]).
    pub fn set_isr_writer(&self, tx: mpsc::UnboundedSender<IsrProposal>) {
        *self.isr_writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
    }

    /// Test seam: while set, LeaderAndIsr requests are acknowledged without being applied.
    pub fn set_drop_leader_and_isr(&self, drop: bool) {
        self.drop_leader_and_isr.store(drop, Ordering::SeqCst);
    }

    pub fn fetchers(&self) -> &FetcherManager {
        &self.fetchers
    }

    /// The partition map (a registry: see [`crate::log::lock_order`]).
    /// The replication throttles (KIP-73).
    pub fn quotas(&self) -> &Arc<ReplicationQuotas> {
        &self.quotas
    }

    /// A topic's `/config/topics/<t>` overrides: to its logs (Kafka's
    /// `LogManager.updateTopicConfig`) and to the throttled-replica lists
    /// (`TopicConfigHandler`). Blocking: locks the topic's logs.
    pub fn update_topic_config(&self, topic: &str, overrides: BTreeMap<String, String>) {
        self.quotas.update_topic(topic, &overrides);
        self.log_manager.update_topic_config(topic, overrides);
    }

    fn partitions(&self) -> std::sync::RwLockReadGuard<'_, FastMap<TopicPartition, Arc<Partition>>> {
        assert_no_log_lock("the ReplicaManager's partition map");
        self.partitions.read().unwrap_or_else(|p| p.into_inner())
    }

    fn partitions_mut(&self) -> std::sync::RwLockWriteGuard<'_, FastMap<TopicPartition, Arc<Partition>>> {
        assert_no_log_lock("the ReplicaManager's partition map");
        self.partitions.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions().get(tp).cloned()
    }

    /// Every hosted partition.
    pub fn all_partitions(&self) -> Vec<Arc<Partition>> {
        self.partitions().values().cloned().collect()
    }

    /// The partition with `topic_id` and index, for Fetch v13+.
    pub fn partition_by_id(&self, topic_id: uuid::Uuid, partition: i32) -> Option<Arc<Partition>> {
        self.partitions()
            .values()
            .find(|p| p.topic_id == topic_id && p.tp.partition == partition)
            .cloned()
    }

    /// Every hosted partition's high watermark (for checkpoints and retention), plus the
    /// checkpointed ones of logs not hosted again yet, so a checkpoint never forgets them.
    pub fn high_watermarks(&self) -> BTreeMap<TopicPartition, i64> {
        let mut hws: BTreeMap<TopicPartition, i64> = self
            .checkpointed_hws
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(tp, hw)| (tp.clone(), *hw))
            .collect();
        for p in self.all_partitions() {
            hws.insert(p.tp.clone(), p.high_watermark());
        }
        hws
    }

    /// The delayed fetches and produces (its wake-up counts are a test seam).
    pub fn purgatory(&self) -> &Arc<Purgatory> {
        &self.purgatory
    }

    /// Fetches currently waiting for data.
    pub fn delayed_fetches(&self) -> usize {
        self.purgatory.delayed_fetches()
    }

    /// `tp`'s leadership, ISR or HW may have changed: checks what is parked on it.
    fn partition_changed(&self, partition: &Partition) {
        self.purgatory.on_status(
            &partition.tp,
            &partition.produce_status(self.min_insync_replicas(&partition.tp)),
        );
    }

    /// `tp`'s leadership changed (or its log moved under us): its parked fetches complete and
    /// read again, its produces are checked; byte positions restart from its offsets now.
    fn partition_reset(&self, tp: &TopicPartition) {
        match self.partition(tp) {
            Some(p) => {
                let status = p.produce_status(self.min_insync_replicas(tp));
                let (_, leo) = p.offsets();
                self.purgatory.on_reset(tp, &status, leo);
            }
            None => self.purgatory.on_removed(tp),
        }
    }

    /// Wakes when leadership of a hosted partition may have changed.
    pub fn subscribe_leadership(&self) -> watch::Receiver<u64> {
        self.leadership.subscribe()
    }

    fn leadership_changed(&self) {
        self.leadership.send_modify(|v| *v += 1);
    }

    /// Remembers where brokers' inter-broker listeners are (`host:port`).
    pub fn update_endpoints(&self, endpoints: impl IntoIterator<Item = (BrokerId, String)>) {
        let mut known = self.endpoints.write().unwrap_or_else(|p| p.into_inner());
        known.extend(endpoints);
    }

    fn endpoint(&self, broker: BrokerId) -> Option<String> {
        self.endpoints
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&broker)
            .cloned()
    }

    /// UpdateMetadata's check: refuses an older controller, remembers a newer one (Kafka's
    /// maybeUpdateMetadataCache).
    pub fn observe_controller_epoch(&self, controller_epoch: i32) -> Result<(), ReplicaError> {
        if controller_epoch < self.controller_epoch.load(Ordering::SeqCst) {
            return Err(ReplicaError::StaleControllerEpoch);
        }
        self.controller_epoch.fetch_max(controller_epoch, Ordering::SeqCst);
        Ok(())
    }

    /// Refuses requests from an older controller or for an older incarnation of this broker.
    fn check_epochs(&self, epochs: ControllerRequestEpochs) -> Result<(), ReplicaError> {
        let known = self.controller_epoch.load(Ordering::SeqCst);
        if epochs.controller_epoch < known {
            return Err(ReplicaError::StaleControllerEpoch);
        }
        let ours = self.broker_epoch.load(Ordering::SeqCst);
        // KIP-380: -1 means the request predates broker epochs; newer ones are accepted (KAFKA-9839).
        if epochs.broker_epoch != -1 && epochs.broker_epoch < ours {
            return Err(ReplicaError::StaleBrokerEpoch);
        }
        self.controller_epoch
            .fetch_max(epochs.controller_epoch, Ordering::SeqCst);
        Ok(())
    }

    /// Applies LeaderAndIsr: `Err` for the whole request, else an outcome per
    /// partition (Kafka's becomeLeaderOrFollower). `live_leaders` are the leaders' addresses.
    pub fn become_leader_or_follower(
        &self,
        epochs: ControllerRequestEpochs,
        partitions: Vec<LeaderAndIsrPartition>,
        live_leaders: Vec<(BrokerId, String)>,
        now_ms: i64,
    ) -> Result<LeaderAndIsrOutcomes, ReplicaError> {
        self.check_epochs(epochs)?;
        if self.drop_leader_and_isr.load(Ordering::SeqCst) {
            tracing::warn!(partitions = partitions.len(), "test seam: LeaderAndIsr dropped");
            return Ok(partitions.into_iter().map(|p| (p.tp, p.topic_id, Ok(()))).collect());
        }
        self.update_endpoints(live_leaders);
        let mut results = Vec::with_capacity(partitions.len());
        for p in partitions {
            let outcome = self.apply_partition(&p, now_ms);
            self.partition_reset(&p.tp);
            results.push((p.tp, p.topic_id, outcome));
        }
        self.leadership_changed();
        Ok(results)
    }

    fn apply_partition(&self, p: &LeaderAndIsrPartition, now_ms: i64) -> Result<(), ReplicaError> {
        if !p.state.replicas.contains(&self.local) {
            return Err(ReplicaError::UnknownTopicOrPartition);
        }
        let min_isr = self.min_insync_replicas(&p.tp);
        let partition = match self.partition(&p.tp) {
            Some(existing) => {
                // A replica whose log dir failed answers KAFKA_STORAGE_ERROR so the controller
                // moves leadership elsewhere (Kafka's becomeLeaderOrFollower checks this first).
                if self.is_offline(&existing) {
                    return Err(ReplicaError::KafkaStorageError);
                }
                if !existing.topic_id.is_nil() && !p.topic_id.is_nil() && existing.topic_id != p.topic_id {
                    return Err(ReplicaError::InconsistentTopicId);
                }
                // Only a newer leader epoch changes anything; the same or an older one is stale,
                // except the same epoch with another replica set: the state-znode watch applied
                // a reassignment's epoch bump first, with the replicas known then, and this
                // request carries the new ones (the leader must learn them to let the new
                // replicas into the ISR). Only the replica set is taken from it then.
                // Decided and applied under the partition's lock, as the state-znode watch's.
                let next = |current: &PartitionState| {
                    let new_set = p.state.replicas != current.replicas
                        || p.state.adding != current.adding
                        || p.state.removing != current.removing;
                    if p.state.leader_epoch == current.leader_epoch && new_set {
                        tracing::info!(partition = %p.tp, replicas = ?p.state.replicas, "taking the new replica set of the current leader epoch");
                        Some(PartitionState {
                            replicas: p.state.replicas.clone(),
                            adding: p.state.adding.clone(),
                            removing: p.state.removing.clone(),
                            ..current.clone()
                        })
                    } else if p.state.leader_epoch <= current.leader_epoch {
                        None
                    } else {
                        Some(p.state.clone())
                    }
                };
                if existing.apply_with(next, min_isr, now_ms)?.is_none() {
                    return Err(ReplicaError::StaleControllerEpoch);
                }
                existing
            }
            None => {
                let log = self.log_manager.get_or_create_log(&p.tp, now_ms)?;
                let hw = self
                    .checkpointed_hws
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&p.tp)
                    .unwrap_or(0);
                let partition = Arc::new(Partition::new(
                    p.tp.clone(),
                    p.topic_id,
                    self.local,
                    p.state.clone(),
                    log,
                    hw,
                ));
                partition.apply(p.state.clone(), min_isr, now_ms)?;
                self.partitions_mut().insert(p.tp.clone(), partition.clone());
                partition
            }
        };
        self.start_or_stop_fetching(&partition, &p.state);
        Ok(())
    }

    /// Leaders (and leaderless partitions) do not fetch; followers fetch from their leader.
    fn start_or_stop_fetching(&self, partition: &Arc<Partition>, state: &PartitionState) {
        if state.leader == self.local || state.leader.0 < 0 {
            self.fetchers.remove(std::slice::from_ref(&partition.tp));
            return;
        }
        match self.endpoint(state.leader) {
            Some(addr) => self
                .fetchers
                .add(partition.clone(), state.leader, addr, state.leader_epoch),
            None => {
                tracing::warn!(partition = %partition.tp, leader = %state.leader, "leader's address unknown; not fetching yet");
                self.fetchers.remove(std::slice::from_ref(&partition.tp));
            }
        }
    }

    fn is_offline(&self, partition: &Partition) -> bool {
        self.log_manager.failures().is_offline(partition.log_dir())
    }

    /// The safety net: a state znode of a hosted partition holds a newer leader epoch than we
    /// know (the LeaderAndIsr was lost or is late). Applies it with the replicas we know.
    pub fn apply_stored_state(&self, tp: &TopicPartition, stored: &StoredState, now_ms: i64) -> bool {
        let Some(existing) = self.partition(tp) else {
            return false;
        };
        if self.is_offline(&existing) {
            return false;
        }
        // Decided and applied under the partition's lock: a LeaderAndIsr of the same epoch with
        // a new replica set (a reassignment's) applied meanwhile must not be overwritten with the
        // replicas known before it.
        let newer = |current: &PartitionState| {
            (stored.leader_epoch > current.leader_epoch).then(|| PartitionState {
                controller_epoch: stored.controller_epoch,
                leader: stored.leader,
                leader_epoch: stored.leader_epoch,
                isr: stored.isr.clone(),
                partition_epoch: stored.zk_version,
                replicas: current.replicas.clone(),
                adding: current.adding.clone(),
                removing: current.removing.clone(),
            })
        };
        let state = match existing.apply_with(newer, self.min_insync_replicas(tp), now_ms) {
            Ok(Some(state)) => state,
            Ok(None) => return false,
            Err(e) => {
                tracing::error!(partition = %tp, error = %e, "cannot apply the stored state");
                return false;
            }
        };
        tracing::info!(
            partition = %tp,
            leader = %stored.leader,
            leader_epoch = stored.leader_epoch,
            "applied a newer leader epoch found in ZooKeeper"
        );
        self.start_or_stop_fetching(&existing, &state);
        self.partition_reset(tp);
        self.leadership_changed();
        true
    }

    /// Hands an ISR change to the writer; without one (no ZooKeeper) it fails at once.
    pub fn submit_isr_change(&self, proposal: IsrProposal) {
        let sent = match &*self.isr_writer.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(tx) => tx.send(proposal.clone()).is_ok(),
            None => false,
        };
        if !sent {
            self.complete_isr_change(&proposal, IsrWriteOutcome::Failed, crate::clock::now_ms());
        }
    }

    /// The writer's answer for `proposal`.
    pub fn complete_isr_change(&self, proposal: &IsrProposal, outcome: IsrWriteOutcome, now_ms: i64) {
        let Some(partition) = self.partition(&proposal.tp) else {
            return;
        };
        if let Some(newer) = partition.complete_isr_update(proposal, outcome, self.min_insync_replicas(&proposal.tp)) {
            self.apply_stored_state(&proposal.tp, &newer, now_ms);
        }
        // The HW may have moved with the new ISR, or the ISR fallen below min.insync.replicas.
        self.partition_changed(&partition);
    }

    /// [`Self::complete_isr_change`] without taking any partition's lock on the calling async
    /// worker: the partition's part runs on its log dir's I/O thread, and a newer state found in
    /// ZooKeeper is applied on the blocking pool (it may truncate the log and start fetchers).
    pub async fn complete_isr_change_off_workers(self: &Arc<Self>, proposal: IsrProposal, outcome: IsrWriteOutcome) {
        let Some(partition) = self.partition(&proposal.tp) else {
            return;
        };
        let rm = Arc::clone(self);
        let dir = partition.log_dir().to_path_buf();
        let tp = proposal.tp.clone();
        let newer = self
            .run_io(Some(&dir), move || {
                let newer = partition.complete_isr_update(&proposal, outcome, rm.min_insync_replicas(&proposal.tp));
                // The HW may have moved with the new ISR, or the ISR fallen below min.insync.replicas.
                rm.partition_changed(&partition);
                newer
            })
            .await;
        if let Ok(Some(newer)) = newer {
            let rm = Arc::clone(self);
            let _ =
                tokio::task::spawn_blocking(move || rm.apply_stored_state(&tp, &newer, crate::clock::now_ms())).await;
        }
    }

    /// Kafka's `isr-expiration` task: shrinks the ISR of every led partition whose followers
    /// have not caught up within `replica.lag.time.max.ms`.
    pub fn maybe_shrink_isrs(&self, now_ms: i64) {
        for partition in self.all_partitions() {
            if let Some(p) = partition.maybe_shrink_isr(now_ms, self.config.replica_lag_time_max_ms) {
                self.submit_isr_change(p);
            }
        }
    }

    /// A log dir failed: its partitions stop fetching and stay hosted but offline (requests get
    /// KAFKA_STORAGE_ERROR from their logs; LeaderAndIsr answers it).
    pub fn handle_dir_failure(&self, dir: &Path) -> Vec<TopicPartition> {
        let gone: Vec<TopicPartition> = self
            .all_partitions()
            .into_iter()
            .filter(|p| lock(&p.log()).root() == dir)
            .map(|p| p.tp.clone())
            .collect();
        self.fetchers.remove(&gone);
        for tp in &gone {
            self.partition_reset(tp);
        }
        self.leadership_changed();
        gone
    }

    /// Counts for the ReplicaManager gauges.
    pub fn replication_counts(&self) -> ReplicationCounts {
        let mut c = ReplicationCounts::default();
        for p in self.all_partitions() {
            c.partitions += 1;
            if self.is_offline(&p) {
                c.offline += 1;
                continue;
            }
            let (leader, isr, rf, min, reassigning) = p.replication_status(self.min_insync_replicas(&p.tp));
            if !leader {
                continue;
            }
            c.leaders += 1;
            c.reassigning += usize::from(reassigning);
            c.under_replicated += usize::from(isr < rf);
            c.under_min_isr += usize::from(isr < min);
            c.at_min_isr += usize::from(isr == min);
        }
        c
    }

    /// Publishes the ReplicaManager gauges with the JMX exporter's names.
    pub fn publish_metrics(&self) {
        let c = self.replication_counts();
        metrics::gauge!("kafka_server_replicamanager_partitioncount").set(c.partitions as f64);
        metrics::gauge!("kafka_server_replicamanager_leadercount").set(c.leaders as f64);
        metrics::gauge!("kafka_server_replicamanager_underreplicatedpartitions").set(c.under_replicated as f64);
        metrics::gauge!("kafka_server_replicamanager_underminisrpartitioncount").set(c.under_min_isr as f64);
        metrics::gauge!("kafka_server_replicamanager_atminisrpartitioncount").set(c.at_min_isr as f64);
        metrics::gauge!("kafka_server_replicamanager_offlinereplicacount").set(c.offline as f64);
        metrics::gauge!("kafka_server_replicamanager_reassigningpartitions").set(c.reassigning as f64);
        self.quotas.publish_metrics(crate::clock::now_ms());
        metrics::gauge!("kafka_server_replicafetchermanager_maxlag", "clientid" => "Replica")
            .set(self.fetchers.max_lag() as f64);
        metrics::gauge!("kafka_server_delayedoperationpurgatory_purgatorysize", "delayedoperation" => "Fetch")
            .set(self.purgatory.delayed_fetches() as f64);
        metrics::gauge!("kafka_server_delayedoperationpurgatory_purgatorysize", "delayedoperation" => "Produce")
            .set(self.purgatory.delayed_produces() as f64);
    }

    /// Applies StopReplica: forgets the partitions (deleting their logs when asked).
    pub fn stop_replicas(
        &self,
        epochs: ControllerRequestEpochs,
        partitions: Vec<(TopicPartition, bool)>,
    ) -> Result<StopReplicaOutcomes, ReplicaError> {
        self.check_epochs(epochs)?;
        let tps: Vec<TopicPartition> = partitions.iter().map(|(tp, _)| tp.clone()).collect();
        self.fetchers.remove(&tps);
        let mut results = Vec::with_capacity(partitions.len());
        for (tp, delete) in partitions {
            self.partitions_mut().remove(&tp);
            let outcome = if delete {
                self.checkpointed_hws
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&tp);
                let deleted = self.log_manager.delete_log(&tp).map_err(ReplicaError::from);
                // The topic's last log here: its overrides were forgotten, so are its
                // throttled-replica lists (a later topic of the same name starts unthrottled).
                if !self.log_manager.knows_topic_config(&tp.topic) {
                    self.quotas.update_topic(&tp.topic, &BTreeMap::new());
                }
                deleted
            } else {
                Ok(())
            };
            self.purgatory.on_removed(&tp);
            results.push((tp, outcome));
        }
        self.leadership_changed();
        Ok(results)
    }

    /// Stops every fetcher (broker shutdown).
    pub fn shutdown(&self) {
        self.fetchers.shutdown();
    }
}

/// Kafka's leader-side counters for ISR changes.
pub fn count_isr_change(expand: bool, outcome: &IsrWriteOutcome) {
    match (outcome, expand) {
        (IsrWriteOutcome::Written { .. }, true) => {
            metrics::counter!("kafka_server_replicamanager_isrexpands_total").increment(1)
        }
        (IsrWriteOutcome::Written { .. }, false) => {
            metrics::counter!("kafka_server_replicamanager_isrshrinks_total").increment(1)
        }
        _ => metrics::counter!("kafka_server_replicamanager_failedisrupdates_total").increment(1),
    }
}
