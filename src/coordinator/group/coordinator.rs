//! The group coordinator's running part: which `__consumer_offsets` partitions this broker leads
//! (and so which groups it owns), the JoinGroup/SyncGroup requests parked until a rebalance step
//! completes, the timers of every group, and the writes to the topic.
//!
//! Ownership follows partition leadership: the ReplicaManager signals each leadership change; a
//! partition this broker now leads (a leadership that began at a new epoch; an epoch bump
//! while it stays leader, such as a controller's ISR shrink, keeps what is loaded) is loaded from its log on the blocking
//! pool (COORDINATOR_LOAD_IN_PROGRESS meanwhile), and one it no longer leads is dropped, its
//! parked requests answered NOT_COORDINATOR. Writes go through the partition as leader with
//! acks=all semantics and wait (woken, not polled) for the high watermark, up to
//! `offsets.commit.timeout.ms`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch, Notify};

use super::errors::GroupError;
use super::state::{Effect, Group, GroupLimits, GroupState, JoinResult, SyncResult};
use super::{loader, partition_for, schema, OFFSETS_TOPIC};
use crate::clock::now_ms;
use crate::protocol::test_support::{build_batch, KeyValue};
use crate::replica::append::AppendPartition;
use crate::replica::{Partition, ReplicaManager};
use crate::server::metadata_cache::MetadataCache;
use crate::types::TopicPartition;

/// Settings from the broker config (`offsets.*`, `group.*`).
#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub limits: GroupLimits,
    pub offsets_partitions: i32,
    pub offsets_replication_factor: i16,
    pub offsets_segment_bytes: i32,
    pub commit_timeout_ms: i32,
    pub commit_required_acks: i16,
    pub retention_ms: i64,
    pub retention_check_interval_ms: i64,
    pub load_buffer_size: usize,
    pub max_metadata_size: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            limits: GroupLimits::default(),
            offsets_partitions: 50,
            offsets_replication_factor: 3,
            offsets_segment_bytes: 104_857_600,
            commit_timeout_ms: 5_000,
            commit_required_acks: -1,
            retention_ms: 7 * 24 * 3_600_000,
            retention_check_interval_ms: 600_000,
            load_buffer_size: 5 * 1024 * 1024,
            max_metadata_size: 4_096,
        }
    }
}

impl GroupConfig {
    /// Reads the `offsets.*` and `group.*` keys (defaults are the config's own).
    pub fn from_config(c: &crate::config::KafkaConfig) -> Self {
        let d = GroupConfig::default();
        let int = |k: &str, v: i32| c.get_i32(k).unwrap_or(v);
        GroupConfig {
            limits: GroupLimits {
                min_session_timeout_ms: int("group.min.session.timeout.ms", d.limits.min_session_timeout_ms),
                max_session_timeout_ms: int("group.max.session.timeout.ms", d.limits.max_session_timeout_ms),
                initial_rebalance_delay_ms: int(
                    "group.initial.rebalance.delay.ms",
                    d.limits.initial_rebalance_delay_ms,
                ),
                max_size: c.get_i32("group.max.size").map_or(usize::MAX, |v| v.max(1) as usize),
            },
            offsets_partitions: int("offsets.topic.num.partitions", d.offsets_partitions),
            offsets_replication_factor: int("offsets.topic.replication.factor", 3) as i16,
            offsets_segment_bytes: int("offsets.topic.segment.bytes", d.offsets_segment_bytes),
            commit_timeout_ms: int("offsets.commit.timeout.ms", d.commit_timeout_ms),
            commit_required_acks: int("offsets.commit.required.acks", -1) as i16,
            retention_ms: c
                .get_i64("offsets.retention.minutes")
                .map_or(d.retention_ms, |m| m * 60_000),
            retention_check_interval_ms: c
                .get_i64("offsets.retention.check.interval.ms")
                .unwrap_or(d.retention_check_interval_ms),
            load_buffer_size: int("offsets.load.buffer.size", 5 * 1024 * 1024).max(1024) as usize,
            max_metadata_size: int("offset.metadata.max.bytes", 4_096).max(0) as usize,
        }
    }
}

/// One offsets partition this broker leads.
#[derive(Debug)]
pub(super) enum Slot {
    Loading {
        epoch: i32,
    },
    Loaded {
        epoch: i32,
        groups: BTreeMap<String, Group>,
    },
}

/// Parked JoinGroup and SyncGroup requests by (group, member).
#[derive(Debug, Default)]
pub(super) struct Parked {
    pub(super) joins: HashMap<(String, String), oneshot::Sender<JoinResult>>,
    pub(super) syncs: HashMap<(String, String), oneshot::Sender<SyncResult>>,
}

#[derive(Debug, Default)]
pub(super) struct Inner {
    pub(super) slots: BTreeMap<i32, Slot>,
    pub(super) parked: Parked,
    next_retention_check: i64,
}

/// Removes and returns the parked requests whose group satisfies `pred`.
fn take_where<V>(map: &mut HashMap<(String, String), V>, pred: impl Fn(&str) -> bool) -> Vec<((String, String), V)> {
    let doomed: Vec<(String, String)> = map.keys().filter(|(g, _)| pred(g)).cloned().collect();
    doomed.into_iter().filter_map(|k| map.remove_entry(&k)).collect()
}

#[derive(Debug)]
pub struct GroupCoordinator {
    pub(super) config: GroupConfig,
    pub(super) replica_manager: Arc<ReplicaManager>,
    metadata_cache: Arc<MetadataCache>,
    pub(super) inner: Mutex<Inner>,
    wake: Notify,
}

impl GroupCoordinator {
    pub fn new(
        config: GroupConfig,
        replica_manager: Arc<ReplicaManager>,
        metadata_cache: Arc<MetadataCache>,
    ) -> Arc<Self> {
        Arc::new(GroupCoordinator {
            config,
            replica_manager,
            metadata_cache,
            inner: Mutex::new(Inner::default()),
            wake: Notify::new(),
        })
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Partitions of `__consumer_offsets`: the topic's real count once it exists.
    pub fn partition_count(&self) -> i32 {
        self.metadata_cache
            .partition_count(OFFSETS_TOPIC)
            .map(|n| n as i32)
            .filter(|n| *n > 0)
            .unwrap_or(self.config.offsets_partitions)
    }

    pub fn partition_of(&self, group: &str) -> i32 {
        partition_for(group, self.partition_count())
    }

    /// Runs `f` on `group_id`'s group (created first when `create`), then delivers the effects.
    /// `Err` when this broker does not own the group now, or it does not exist and `!create`
    /// ([`GroupError::GroupIdNotFound`], which each request answers as Kafka does).
    pub(super) fn with_group<R>(
        self: &Arc<Self>,
        group_id: &str,
        create: bool,
        f: impl FnOnce(&mut Group, &mut Vec<Effect>, &mut Parked) -> R,
    ) -> Result<R, GroupError> {
        let partition = self.partition_of(group_id);
        let mut guard = self.lock();
        let Inner { slots, parked, .. } = &mut *guard;
        let groups = match slots.get_mut(&partition) {
            None => return Err(GroupError::NotCoordinator),
            Some(Slot::Loading { .. }) => return Err(GroupError::CoordinatorLoadInProgress),
            Some(Slot::Loaded { groups, .. }) => groups,
        };
        if !groups.contains_key(group_id) {
            if !create {
                return Err(GroupError::GroupIdNotFound);
            }
            groups.insert(group_id.to_string(), Group::new(group_id, now_ms()));
        }
        let group = groups.get_mut(group_id).ok_or(GroupError::GroupIdNotFound)?;
        let mut effects = Vec::new();
        let out = f(group, &mut effects, parked);
        // A request that created nothing lasting (a refused join) leaves no group behind.
        if group.is_removable() && group.generation == 0 && group.pending_members.is_empty() {
            groups.remove(group_id);
        }
        self.deliver(parked, group_id, effects);
        drop(guard);
        self.wake.notify_one();
        Ok(out)
    }

    /// Answers parked requests and starts the group writes the effects ask for.
    pub(super) fn deliver(self: &Arc<Self>, parked: &mut Parked, group_id: &str, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::JoinDone { member_id, result } => {
                    if let Some(tx) = parked.joins.remove(&(group_id.to_string(), member_id)) {
                        let _ = tx.send(result);
                    }
                }
                Effect::SyncDone { member_id, result } => {
                    if let Some(tx) = parked.syncs.remove(&(group_id.to_string(), member_id)) {
                        let _ = tx.send(result);
                    }
                }
                Effect::Store { .. } => {
                    let me = self.clone();
                    let group_id = group_id.to_string();
                    tokio::spawn(async move {
                        if let Err(e) = me.store_group(&group_id).await {
                            tracing::warn!(group = %group_id, error = %e, "storing the group's metadata failed");
                        }
                    });
                }
            }
        }
    }

    /// Writes the group's current record (whatever its state is when the write starts).
    pub(super) async fn store_group(self: &Arc<Self>, group_id: &str) -> Result<(), GroupError> {
        let partition = self.partition_of(group_id);
        let record = {
            let inner = self.lock();
            match inner.slots.get(&partition) {
                Some(Slot::Loaded { groups, .. }) => groups.get(group_id).map(|g| schema::group_value(&g.to_stored())),
                _ => return Err(GroupError::NotCoordinator),
            }
        };
        let Some(value) = record else { return Ok(()) };
        self.write(partition, vec![(schema::group_key(group_id), Some(value))])
            .await
    }

    /// Appends records to an offsets partition as its leader and waits until they are
    /// replicated (`offsets.commit.required.acks` = -1) or the commit timeout passes. Errors
    /// are already mapped for group clients.
    pub(super) async fn write(
        &self,
        partition: i32,
        records: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), GroupError> {
        if records.is_empty() {
            return Ok(());
        }
        let rm = &self.replica_manager;
        let tp = TopicPartition {
            topic: OFFSETS_TOPIC.to_string(),
            partition,
        };
        if rm.partition(&tp).is_none() {
            return Err(GroupError::NotCoordinator);
        }
        let kv: Vec<KeyValue<'_>> = records
            .iter()
            .map(|(k, v)| (Some(k.as_slice()), v.as_deref()))
            .collect();
        let batch = build_batch(0, 0, &kv, now_ms());
        let entry = AppendPartition {
            tp,
            records: batch.into(),
        };
        let results = rm
            .append_records(
                self.config.commit_required_acks,
                self.config.commit_timeout_ms,
                vec![entry],
            )
            .await;
        match results.into_iter().next().map(|r| r.error) {
            Some(None) => Ok(()),
            Some(Some(e)) => Err(GroupError::from_store(e)),
            None => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    /// Loads offsets partitions this broker now leads and drops those it no longer leads.
    pub fn reconcile(self: &Arc<Self>) {
        let rm = &self.replica_manager;
        let led: BTreeMap<i32, i32> = rm
            .all_partitions()
            .into_iter()
            .filter(|p| p.tp.topic == OFFSETS_TOPIC && p.is_leader())
            .map(|p| (p.tp.partition, p.leader_since_epoch()))
            .collect();
        let mut inner = self.lock();
        let dropped: Vec<i32> = inner
            .slots
            .iter()
            .filter(|(p, slot)| {
                let epoch = match slot {
                    Slot::Loading { epoch } | Slot::Loaded { epoch, .. } => *epoch,
                };
                led.get(p) != Some(&epoch)
            })
            .map(|(p, _)| *p)
            .collect();
        let n = self.partition_count();
        for p in &dropped {
            inner.slots.remove(p);
            tracing::info!(
                partition = p,
                "no longer coordinator for this offsets partition; its groups are unloaded"
            );
        }
        let orphaned = |g: &str| dropped.contains(&partition_for(g, n));
        for ((_, member), tx) in take_where(&mut inner.parked.joins, orphaned) {
            let _ = tx.send(JoinResult::error(GroupError::NotCoordinator, &member));
        }
        for (_, tx) in take_where(&mut inner.parked.syncs, orphaned) {
            let _ = tx.send(SyncResult::error(GroupError::NotCoordinator));
        }
        for (p, epoch) in led {
            if inner.slots.contains_key(&p) {
                continue;
            }
            inner.slots.insert(p, Slot::Loading { epoch });
            let me = self.clone();
            tokio::spawn(async move { me.load(p, epoch).await });
        }
    }

    /// Reads the partition's log into groups, each chunk one operation on its log dir's I/O
    /// thread (between chunks that dir's appends and reads go on).
    async fn load_chunks(&self, part: &Arc<Partition>, chunk: usize) -> Result<loader::LoadState, String> {
        let dir = Some(part.log_dir());
        let log = part.log();
        let mut loading = self
            .replica_manager
            .run_io(dir, move || loader::Loading::start(&log))
            .await
            .map_err(|e| e.to_string())?;
        loop {
            let log = part.log();
            let (back, more) = self
                .replica_manager
                .run_io(dir, move || {
                    let more = loading.step(&log, chunk);
                    (loading, more)
                })
                .await
                .map_err(|e| e.to_string())?;
            loading = back;
            if !more.map_err(|e| e.to_string())? {
                return Ok(loading.state);
            }
        }
    }

    async fn load(self: Arc<Self>, partition: i32, epoch: i32) {
        let tp = TopicPartition {
            topic: OFFSETS_TOPIC.to_string(),
            partition,
        };
        let Some(part) = self.replica_manager.partition(&tp) else {
            self.lock().slots.remove(&partition);
            return;
        };
        let started = std::time::Instant::now();
        let chunk = self.config.load_buffer_size;
        let state = match self.load_chunks(&part, chunk).await {
            Ok(state) => state,
            Err(e) => {
                tracing::error!(partition, error = %e, "loading an offsets partition failed");
                self.lock().slots.remove(&partition);
                return;
            }
        };
        let (records, skipped) = (state.records, state.skipped);
        let groups = state.into_groups(now_ms());
        let offsets: usize = groups.values().map(|g| g.offsets.len()).sum();
        let count = groups.len();
        let mut inner = self.lock();
        if matches!(inner.slots.get(&partition), Some(Slot::Loading { epoch: e }) if *e == epoch) {
            inner.slots.insert(partition, Slot::Loaded { epoch, groups });
            tracing::info!(
                partition,
                groups = count,
                offsets,
                records,
                skipped,
                ms = started.elapsed().as_millis() as u64,
                "offsets partition loaded; coordinating its groups"
            );
        }
        drop(inner);
        self.wake.notify_one();
    }

    /// Timers of every loaded group, and offset expiry every
    /// `offsets.retention.check.interval.ms`. Returns when the next one is due.
    fn tick(self: &Arc<Self>, now: i64) -> Option<i64> {
        let mut inner = self.lock();
        let retention_due = now >= inner.next_retention_check;
        if retention_due {
            inner.next_retention_check = now + self.config.retention_check_interval_ms;
        }
        let mut all_effects = Vec::new();
        let mut expired = Vec::new();
        let mut next = Some(inner.next_retention_check);
        for (p, slot) in inner.slots.iter_mut() {
            let Slot::Loaded { groups, .. } = slot else { continue };
            for g in groups.values_mut() {
                if g.next_deadline().is_some_and(|d| d <= now) {
                    all_effects.push((g.id.clone(), g.tick(now, &self.config.limits)));
                }
                if retention_due {
                    let gone = g.expired_offsets(now, self.config.retention_ms);
                    for k in &gone {
                        g.offsets.remove(k);
                    }
                    let remove = g.is_removable();
                    if !gone.is_empty() || remove {
                        expired.push((*p, g.id.clone(), gone, remove));
                    }
                }
                next = [next, g.next_deadline()].into_iter().flatten().min();
            }
            if retention_due {
                groups.retain(|_, g| !g.is_removable());
            }
        }
        for (group_id, effects) in all_effects {
            self.deliver(&mut inner.parked, &group_id, effects);
        }
        drop(inner);
        for (partition, group, offsets, removed) in expired {
            tracing::info!(%group, offsets = offsets.len(), removed, "expired committed offsets");
            let mut records: Vec<(Vec<u8>, Option<Vec<u8>>)> = offsets
                .iter()
                .map(|(t, p)| (schema::offset_key(&group, t, *p), None))
                .collect();
            if removed {
                records.push((schema::group_key(&group), None));
            }
            let me = self.clone();
            tokio::spawn(async move {
                if let Err(e) = me.write(partition, records).await {
                    tracing::warn!(%group, error = %e, "writing tombstones for expired offsets failed");
                }
            });
        }
        next
    }

    /// The coordinator's task: reacts to leadership changes and runs group timers until
    /// `shutdown` turns true.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut leadership = self.replica_manager.subscribe_leadership();
        self.reconcile();
        loop {
            let next = self.tick(now_ms());
            let sleep = next.map_or(Duration::from_secs(3600), |at| {
                Duration::from_millis((at - now_ms()).clamp(0, 3_600_000) as u64)
            });
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                _ = self.wake.notified() => {}
                changed = leadership.changed() => {
                    if changed.is_err() { return; }
                    self.reconcile();
                }
                _ = shutdown.changed() => {
                    if *shutdown.borrow() { return; }
                }
            }
        }
    }

    /// Kafka's GroupMetadataManager gauges, with the JMX exporter's names.
    pub fn publish_metrics(&self) {
        let inner = self.lock();
        let mut by_state: BTreeMap<GroupState, usize> = BTreeMap::new();
        let (mut groups, mut offsets) = (0usize, 0usize);
        for slot in inner.slots.values() {
            if let Slot::Loaded { groups: g, .. } = slot {
                groups += g.len();
                for group in g.values() {
                    offsets += group.offsets.len();
                    *by_state.entry(group.state).or_default() += 1;
                }
            }
        }
        metrics::gauge!("kafka_coordinator_group_groupmetadatamanager_numgroups").set(groups as f64);
        metrics::gauge!("kafka_coordinator_group_groupmetadatamanager_numoffsets").set(offsets as f64);
        for state in [
            GroupState::Empty,
            GroupState::PreparingRebalance,
            GroupState::CompletingRebalance,
            GroupState::Stable,
            GroupState::Dead,
        ] {
            let name = format!(
                "kafka_coordinator_group_groupmetadatamanager_numgroups{}",
                state.name().to_lowercase()
            );
            metrics::gauge!(name).set(by_state.get(&state).copied().unwrap_or(0) as f64);
        }
    }
}
