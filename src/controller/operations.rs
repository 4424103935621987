//! The controller's operator-facing work: controlled shutdown, preferred and unclean leader
//! elections (ElectLeaders, `/admin/preferred_replica_election`, auto rebalance), log-dir
//! failures and CreatePartitions. Same event loop and rules as [`super::controller`]: decide
//! with pure functions, write ZooKeeper fenced, then announce. Topic deletion is
//! `topic_deletion`'s.

use std::collections::{BTreeMap, BTreeSet};

use super::controller::{Controller, ShutdownError};
use super::decisions;
use super::error::ControllerError;
use super::replica_changes;
use super::replica_state::ReplicaState;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::BrokerId;
use crate::zk::paths;

impl<S: ControllerStore> Controller<S> {
    /// Kafka's controlled shutdown: leaderships of multi-replica partitions move to another ISR
    /// member, and the broker leaves the ISRs it follows in; the answer lists what it still leads.
    pub(super) async fn on_controlled_shutdown(
        &mut self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<Vec<(String, i32)>, ShutdownError> {
        let started = std::time::Instant::now();
        let Some(active) = self.active.as_mut() else {
            return Err(ShutdownError::Refused(ControllerError::NotController));
        };
        let Some(registered) = active.ctx.live_brokers.get(&broker) else {
            return Err(ShutdownError::Refused(ControllerError::BrokerNotAvailable));
        };
        if broker_epoch != -1 && broker_epoch < registered.epoch {
            return Err(ShutdownError::Refused(ControllerError::StaleBrokerEpoch));
        }
        active.ctx.shutting_down.insert(broker);
        // Partitions it leads or follows in sync, re-read before deciding (see `refresh`).
        let involved: Vec<(String, i32)> = active
            .ctx
            .leaderships
            .iter()
            .filter(|(_, l)| l.leader == Some(broker) || l.isr.contains(&broker))
            .map(|(k, _)| k.clone())
            .collect();
        self.refresh_leaderships(involved).await.map_err(ShutdownError::Zk)?;
        let Some(active) = self.active.as_ref() else {
            return Err(ShutdownError::Refused(ControllerError::NotController));
        };
        let ctx = &active.ctx;
        let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
        // Decided before leaderships move: the partitions it follows, not the ones it hands over.
        let followed = ctx.followed_by(broker);
        let mut updates = Vec::new();
        for key in ctx.all_partitions() {
            let assignment = ctx.replicas(&key.0, key.1);
            // Like Kafka, partitions of topics being deleted are left alone.
            if !assignment.contains(&broker) || ctx.is_queued_for_deletion(&key.0) {
                continue;
            }
            if let Some(current) = ctx.leaderships.get(&key) {
                let next =
                    decisions::controlled_shutdown(&assignment, current, &live, &ctx.shutting_down, broker, ctx.epoch);
                if let Some(next) = next {
                    updates.push((key, next));
                }
            }
        }
        let moved = updates.len();
        self.write_and_announce(started, Vec::new(), updates)
            .await
            .map_err(ShutdownError::Zk)?;
        let Some(active) = self.active.as_mut() else {
            return Err(ShutdownError::Refused(ControllerError::NotController));
        };
        // It left those ISRs: its replicas there are Offline (Kafka's OfflineReplica step).
        active.ctx.change_replica_states(&followed, ReplicaState::Offline);
        // Like Kafka, only replicated partitions of topics not being deleted count: a
        // single-replica one cannot move.
        let ctx = &active.ctx;
        let remaining: Vec<(String, i32)> = ctx
            .leaderships
            .iter()
            .filter(|((t, p), l)| {
                l.leader == Some(broker) && ctx.replicas(t, *p).len() > 1 && !ctx.is_queued_for_deletion(t)
            })
            .map(|(k, _)| k.clone())
            .collect();
        tracing::info!(%broker, moved, remaining = remaining.len(), "controlled shutdown");
        Ok(remaining)
    }

    /// Runs preferred (or unclean) elections for `partitions` (all when `None`), writes the
    /// results fenced and announces them; returns each partition's outcome.
    pub(super) async fn on_elect_leaders(
        &mut self,
        partitions: Option<Vec<(String, i32)>>,
        unclean: bool,
    ) -> Result<Vec<((String, i32), Result<(), ControllerError>)>, ControllerZkError> {
        let started = std::time::Instant::now();
        let Some(active) = self.active.as_ref() else {
            return Ok(Vec::new());
        };
        let wanted = partitions.unwrap_or_else(|| active.ctx.all_partitions());
        self.refresh_leaderships(wanted.clone()).await?;
        let Some(active) = self.active.as_ref() else {
            return Ok(Vec::new());
        };
        let ctx = &active.ctx;
        let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
        let mut outcome = Vec::with_capacity(wanted.len());
        let mut updates = Vec::new();
        for key in wanted {
            let Some(current) = ctx.leaderships.get(&key) else {
                outcome.push((key, Err(ControllerError::UnknownTopicOrPartition)));
                continue;
            };
            if ctx.is_queued_for_deletion(&key.0) {
                outcome.push((key, Err(ControllerError::TopicBeingDeleted)));
                continue;
            }
            let assignment = ctx.replicas(&key.0, key.1);
            let decided = if unclean {
                decisions::unclean(&assignment, current, &live, ctx.epoch)
            } else {
                decisions::preferred(&assignment, current, &live, ctx.epoch)
            };
            match decided {
                Ok(next) => {
                    updates.push((key.clone(), next));
                    outcome.push((key, Ok(())));
                }
                Err(e) => outcome.push((key, Err(e))),
            }
        }
        self.write_and_announce(started, Vec::new(), updates).await?;
        Ok(outcome)
    }

    /// Legacy tools' `/admin/preferred_replica_election`: elect, then delete the znode.
    pub(super) async fn on_preferred_replica_election_znode(&mut self) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let epoch_version = active.epoch_version;
        let data = match self.zk.get_data(paths::PREFERRED_REPLICA_ELECTION).await {
            Ok((data, _)) => data,
            Err(crate::zk::store::ZkError::NoNode { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        use crate::zk::models::ZNodePayload;
        let partitions = match crate::zk::models::PreferredReplicaElection::decode(&data) {
            Ok(p) => p
                .partitions
                .into_iter()
                .map(|p| (p.topic, p.partition))
                .collect::<Vec<_>>(),
            Err(e) => {
                tracing::warn!(error = %e, "ignoring a malformed /admin/preferred_replica_election");
                Vec::new()
            }
        };
        let outcome = self.on_elect_leaders(Some(partitions), false).await?;
        tracing::info!(?outcome, "preferred replica election from ZooKeeper");
        let ops = vec![crate::zk::store::Op::Delete {
            path: paths::PREFERRED_REPLICA_ELECTION.into(),
            version: None,
        }];
        zk_ops::fenced(&self.zk, epoch_version, ops).await.map(|_| ())
    }

    /// Kafka's auto leader rebalance: for each broker, if more than
    /// `leader.imbalance.per.broker.percentage` of the partitions it should lead (first assigned
    /// replica) are led by someone else, run preferred elections for them.
    pub(super) async fn on_auto_rebalance(&mut self) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let ctx = &active.ctx;
        // Per preferred broker: its partitions and whether it leads each.
        type Preferred = Vec<((String, i32), bool)>;
        let mut preferred_of: BTreeMap<BrokerId, Preferred> = BTreeMap::new();
        for key in ctx.all_partitions() {
            if ctx.is_queued_for_deletion(&key.0) {
                continue;
            }
            let Some(head) = ctx.replicas(&key.0, key.1).first().copied() else {
                continue;
            };
            let led = ctx.leaderships.get(&key).is_some_and(|l| l.leader == Some(head));
            preferred_of.entry(head).or_default().push((key, led));
        }
        let mut wanted = Vec::new();
        for (broker, partitions) in preferred_of {
            if !ctx.is_live(broker) || ctx.shutting_down.contains(&broker) {
                continue;
            }
            let imbalanced: Vec<(String, i32)> = partitions
                .iter()
                .filter(|(_, led)| !led)
                .map(|(k, _)| k.clone())
                .collect();
            let ratio = imbalanced.len() as f64 * 100.0 / partitions.len().max(1) as f64;
            if ratio > f64::from(self.config.leader_imbalance_per_broker_percentage) {
                wanted.extend(imbalanced);
            }
        }
        if wanted.is_empty() {
            return Ok(());
        }
        let outcome = self.on_elect_leaders(Some(wanted), false).await?;
        let moved = outcome.iter().filter(|(_, r)| r.is_ok()).count();
        tracing::info!(moved, "auto leader rebalance");
        Ok(())
    }

    /// A broker lost a log dir (`/log_dir_event_notification`): send LeaderAndIsr for every
    /// replica it hosts; those in the failed dir answer KAFKA_STORAGE_ERROR and are re-elected
    /// away (`on_offline_replicas`). The notifications are deleted afterwards, fenced.
    pub(super) async fn on_log_dir_event(&mut self) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let epoch_version = active.epoch_version;
        let names = match self.zk.children(paths::LOG_DIR_EVENT_NOTIFICATION).await {
            Ok(n) => n,
            Err(crate::zk::store::ZkError::NoNode { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if names.is_empty() {
            return Ok(());
        }
        let mut brokers = BTreeSet::new();
        let mut ops = Vec::new();
        for name in names {
            let path = paths::child(paths::LOG_DIR_EVENT_NOTIFICATION, &name);
            if let Ok((data, _)) = self.zk.get_data(&path).await {
                use crate::zk::models::ZNodePayload;
                match crate::zk::models::LogDirEventNotification::decode(&data) {
                    Ok(n) => {
                        brokers.insert(n.broker);
                    }
                    Err(e) => tracing::warn!(%path, error = %e, "ignoring a malformed log dir event"),
                }
            }
            ops.push(crate::zk::store::Op::Delete { path, version: None });
        }
        tracing::warn!(
            ?brokers,
            "log dir failure reported; asking the brokers for their replicas' state"
        );
        if let Some(active) = self.active.as_ref() {
            for broker in &brokers {
                // Not for topics being deleted: their replicas get StopReplica(delete) instead.
                let theirs: Vec<(String, i32)> = active
                    .ctx
                    .all_partitions()
                    .into_iter()
                    .filter(|(t, p)| {
                        active.ctx.replicas(t, *p).contains(broker) && !active.ctx.is_queued_for_deletion(t)
                    })
                    .collect();
                self.send_leader_and_isr_to_inner(active, *broker, &theirs, false);
            }
        }
        zk_ops::fenced(&self.zk, epoch_version, ops).await.map(|_| ())
    }

    /// Replicas a broker reported KAFKA_STORAGE_ERROR for: mark them offline and re-elect.
    pub(super) async fn on_offline_replicas(
        &mut self,
        broker: BrokerId,
        partitions: Vec<(String, i32)>,
    ) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        for (t, p) in &partitions {
            active.ctx.offline_replicas.insert((t.clone(), *p, broker));
        }
        let hosted: Vec<(String, i32)> = partitions
            .iter()
            .filter(|(t, p)| active.ctx.replicas(t, *p).contains(&broker))
            .cloned()
            .collect();
        let offline: Vec<_> = hosted.iter().map(|k| replica_changes::replica(k, broker)).collect();
        active.ctx.replicas_went_offline(&offline);
        active.ctx.mark_leaderless_offline();
        tracing::warn!(%broker, partitions = partitions.len(), "replicas offline after a log dir failure");
        self.elect_partitions(&partitions).await?;
        self.send_update_metadata(&partitions);
        Ok(())
    }

    /// CreatePartitions: validates the new count (and explicit replicas), places the new
    /// partitions with Kafka's assignment continuing the existing pattern, rewrites the topic
    /// znode (fenced, conditional), and elects leaders for the new partitions.
    pub(super) async fn on_create_partitions(
        &mut self,
        topic: &str,
        count: i32,
        explicit: Option<Vec<Vec<BrokerId>>>,
        validate_only: bool,
    ) -> Result<Result<(), ControllerError>, ControllerZkError> {
        use super::assignment::{assign_replicas_to_brokers, BrokerMetadata, PlacementStart, RackAwareMode};
        use ControllerError::{InvalidPartitions, InvalidReplicaAssignment, InvalidReplicationFactor, NotController};
        let Some(active) = self.active.as_ref() else {
            return Ok(Err(NotController));
        };
        let Some(info) = active.ctx.topics.get(topic).cloned() else {
            return Ok(Err(ControllerError::UnknownTopicOrPartition));
        };
        let current = info.assignment.len() as i32;
        if count <= current {
            return Ok(Err(InvalidPartitions));
        }
        let rf = info.assignment.values().next().map_or(1, Vec::len);
        let live: Vec<BrokerMetadata> = active
            .ctx
            .live_brokers
            .values()
            .map(|b| BrokerMetadata {
                id: b.id,
                rack: b.registration.rack.clone(),
            })
            .collect();
        let added: BTreeMap<i32, Vec<BrokerId>> = match explicit {
            Some(lists) => {
                let ok = lists.len() as i32 == count - current
                    && lists.iter().all(|r| {
                        r.len() == rf
                            && r.iter().collect::<BTreeSet<_>>().len() == r.len()
                            && r.iter().all(|b| active.ctx.is_live(*b))
                    });
                if !ok {
                    return Ok(Err(InvalidReplicaAssignment));
                }
                lists
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| (current + i as i32, r))
                    .collect()
            }
            None => {
                let seed = uuid::Uuid::new_v4().as_u128();
                let n = live.len().max(1) as u128;
                let start = PlacementStart {
                    index: (seed % n) as usize,
                    shift: ((seed >> 64) % n) as usize,
                    first_partition: current,
                };
                match assign_replicas_to_brokers(&live, count - current, rf as i32, RackAwareMode::Enforced, start) {
                    Ok(a) => a,
                    Err(_) => return Ok(Err(InvalidReplicationFactor)),
                }
            }
        };
        if validate_only {
            return Ok(Ok(()));
        }
        let mut full = info.assignment.clone();
        full.extend(added.clone());
        zk_ops::write_assignment(&self.zk, active.epoch_version, topic, &full).await?;
        let Some(active) = self.active.as_mut() else {
            return Ok(Err(NotController));
        };
        if let Some(t) = active.ctx.topics.get_mut(topic) {
            t.assignment = full;
        }
        let new: Vec<(String, i32)> = added.keys().map(|p| (topic.to_string(), *p)).collect();
        tracing::info!(topic, from = current, to = count, "partitions added");
        self.on_new_partitions(&new).await?;
        Ok(Ok(()))
    }
}
