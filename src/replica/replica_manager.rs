//! `ReplicaManager`: the partitions this broker hosts. It applies LeaderAndIsr and StopReplica
//! from the controller (rejecting stale controller and broker epochs, applying a partition
//! state only when its leader epoch is newer), appends producer batches, serves reads, and
//! wakes waiting fetches and acks=all produces whenever data or a high watermark moves.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use super::partition::{Partition, PartitionState};
use crate::log::log_manager::LogManager;
use crate::protocol::error_codes as ec;
use crate::types::{BrokerId, TopicPartition};

/// One partition of a LeaderAndIsr request, already unpacked from its wire form.
#[derive(Debug, Clone)]
pub struct LeaderAndIsrPartition {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    pub state: PartitionState,
}

/// Request-level fields of a controller request.
#[derive(Debug, Clone, Copy)]
pub struct ControllerRequestEpochs {
    pub controller_epoch: i32,
    /// -1 when the request version does not carry one.
    pub broker_epoch: i64,
}

#[derive(Debug)]
pub struct ReplicaManager {
    local: BrokerId,
    log_manager: Arc<LogManager>,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    controller_epoch: AtomicI32,
    /// This broker's current epoch (czxid of its registration); older requests are refused.
    broker_epoch: AtomicI64,
    min_insync_replicas: i32,
    /// Bumped on every append and high-watermark move: what delayed fetches and produces wait on.
    changes: watch::Sender<u64>,
    /// Fetches waiting in the purgatory (Kafka's PurgatorySize for delayedOperation=Fetch).
    delayed_fetches: std::sync::atomic::AtomicUsize,
}

/// Counts a fetch as delayed while it lives.
#[derive(Debug)]
pub struct DelayedFetchGuard<'a>(&'a ReplicaManager);

impl Drop for DelayedFetchGuard<'_> {
    fn drop(&mut self) {
        self.0.delayed_fetches.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ReplicaManager {
    pub fn new(local: BrokerId, log_manager: Arc<LogManager>, min_insync_replicas: i32) -> Self {
        let (changes, _) = watch::channel(0);
        ReplicaManager {
            local,
            log_manager,
            partitions: RwLock::new(HashMap::new()),
            controller_epoch: AtomicI32::new(-1),
            broker_epoch: AtomicI64::new(-1),
            min_insync_replicas,
            changes,
            delayed_fetches: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub fn local(&self) -> BrokerId {
        self.local
    }

    pub fn min_insync_replicas(&self) -> i32 {
        self.min_insync_replicas
    }

    pub fn set_broker_epoch(&self, epoch: i64) {
        self.broker_epoch.store(epoch, Ordering::SeqCst);
    }

    pub fn controller_epoch(&self) -> i32 {
        self.controller_epoch.load(Ordering::SeqCst)
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tp)
            .cloned()
    }

    /// The partition with `topic_id` and index, for Fetch v13+.
    pub fn partition_by_id(&self, topic_id: uuid::Uuid, partition: i32) -> Option<Arc<Partition>> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .find(|p| p.topic_id == topic_id && p.tp.partition == partition)
            .cloned()
    }

    /// Every hosted partition's high watermark (for checkpoints and retention).
    pub fn high_watermarks(&self) -> BTreeMap<TopicPartition, i64> {
        self.partitions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(tp, p)| (tp.clone(), p.high_watermark()))
            .collect()
    }

    /// Something changed: wake waiting fetches and produces.
    pub fn notify_change(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Marks a fetch as waiting in the purgatory until the guard drops.
    pub fn delay_fetch(&self) -> DelayedFetchGuard<'_> {
        self.delayed_fetches.fetch_add(1, Ordering::SeqCst);
        DelayedFetchGuard(self)
    }

    /// Fetches currently waiting for data.
    pub fn delayed_fetches(&self) -> usize {
        self.delayed_fetches.load(Ordering::SeqCst)
    }

    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// UpdateMetadata's check: refuses an older controller, remembers a newer one (Kafka's
    /// maybeUpdateMetadataCache).
    pub fn observe_controller_epoch(&self, controller_epoch: i32) -> Result<(), i16> {
        if controller_epoch < self.controller_epoch.load(Ordering::SeqCst) {
            return Err(ec::STALE_CONTROLLER_EPOCH);
        }
        self.controller_epoch.fetch_max(controller_epoch, Ordering::SeqCst);
        Ok(())
    }

    /// Refuses requests from an older controller or for an older incarnation of this broker.
    fn check_epochs(&self, epochs: ControllerRequestEpochs) -> Result<(), i16> {
        let known = self.controller_epoch.load(Ordering::SeqCst);
        if epochs.controller_epoch < known {
            return Err(ec::STALE_CONTROLLER_EPOCH);
        }
        let ours = self.broker_epoch.load(Ordering::SeqCst);
        // KIP-380: -1 means the request predates broker epochs; newer ones are accepted (KAFKA-9839).
        if epochs.broker_epoch != -1 && epochs.broker_epoch < ours {
            return Err(ec::STALE_BROKER_EPOCH);
        }
        self.controller_epoch
            .fetch_max(epochs.controller_epoch, Ordering::SeqCst);
        Ok(())
    }

    /// Applies LeaderAndIsr: `Err(code)` for the whole request, else an error code per
    /// partition (Kafka's becomeLeaderOrFollower).
    pub fn become_leader_or_follower(
        &self,
        epochs: ControllerRequestEpochs,
        partitions: Vec<LeaderAndIsrPartition>,
        now_ms: i64,
    ) -> Result<Vec<(TopicPartition, uuid::Uuid, i16)>, i16> {
        self.check_epochs(epochs)?;
        let mut results = Vec::with_capacity(partitions.len());
        for p in partitions {
            let code = self.apply_partition(&p, now_ms);
            results.push((p.tp, p.topic_id, code));
        }
        self.notify_change();
        Ok(results)
    }

    fn apply_partition(&self, p: &LeaderAndIsrPartition, now_ms: i64) -> i16 {
        if !p.state.replicas.contains(&self.local) {
            return ec::UNKNOWN_TOPIC_OR_PARTITION;
        }
        if let Some(existing) = self.partition(&p.tp) {
            // A replica whose log dir failed answers KAFKA_STORAGE_ERROR so the controller moves
            // leadership elsewhere (Kafka's becomeLeaderOrFollower checks this first).
            let root = crate::log::log_manager::lock(&existing.log()).root().to_path_buf();
            if self.log_manager.failures().is_offline(&root) {
                return ec::KAFKA_STORAGE_ERROR;
            }
            if !existing.topic_id.is_nil() && !p.topic_id.is_nil() && existing.topic_id != p.topic_id {
                return ec::INCONSISTENT_TOPIC_ID;
            }
            // Only a newer leader epoch changes anything; the same or an older one is stale.
            if p.state.leader_epoch <= existing.leader_epoch() {
                return ec::STALE_CONTROLLER_EPOCH;
            }
            return match existing.apply(p.state.clone(), self.min_insync_replicas) {
                Ok(()) => ec::NONE,
                Err(e) => e.error_code(),
            };
        }
        let log = match self.log_manager.get_or_create_log(&p.tp, now_ms) {
            Ok(log) => log,
            Err(e) => return e.error_code(),
        };
        let partition = Arc::new(Partition::new(
            p.tp.clone(),
            p.topic_id,
            self.local,
            p.state.clone(),
            log,
        ));
        if let Err(e) = partition.apply(p.state.clone(), self.min_insync_replicas) {
            return e.error_code();
        }
        self.partitions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(p.tp.clone(), partition);
        ec::NONE
    }

    /// Applies StopReplica: forgets the partitions (deleting their logs when asked).
    pub fn stop_replicas(
        &self,
        epochs: ControllerRequestEpochs,
        partitions: Vec<(TopicPartition, bool)>,
    ) -> Result<Vec<(TopicPartition, i16)>, i16> {
        self.check_epochs(epochs)?;
        let mut results = Vec::with_capacity(partitions.len());
        for (tp, delete) in partitions {
            self.partitions.write().unwrap_or_else(|p| p.into_inner()).remove(&tp);
            let code = if delete {
                match self.log_manager.delete_log(&tp) {
                    Ok(()) => ec::NONE,
                    Err(e) => e.error_code(),
                }
            } else {
                ec::NONE
            };
            results.push((tp, code));
        }
        self.notify_change();
        Ok(results)
    }
}
