//! The controller's operator-facing work: controlled shutdown, preferred and unclean leader
//! elections (ElectLeaders, `/admin/preferred_replica_election`), log-dir failures (each of
//! those decided in [`super::core`]; these are the shell's entry points) and CreatePartitions.
//! Same event loop and rules as [`super::controller`]: decide with pure functions, write
//! ZooKeeper fenced, then announce. Topic deletion is `topic_deletion`'s; the auto leader
//! rebalance is a core timer ([`super::core::timers`]).

use std::collections::{BTreeMap, BTreeSet};

use super::controller::{Controller, ShutdownError};
use super::core;
use super::error::ControllerError;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::BrokerId;

impl<S: ControllerStore> Controller<S> {
    /// Kafka's controlled shutdown, in the core ([`core::controlled_shutdown`]): the answer lists
    /// the partitions the broker still leads.
    pub(super) async fn on_controlled_shutdown(
        &mut self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<Vec<(String, i32)>, ShutdownError> {
        let event = core::Event::ControlledShutdown { broker, broker_epoch };
        match self.run_core_replying(core::Input::Event(event)).await {
            (Some(core::Reply::ControlledShutdown(Ok(remaining))), _) => Ok(remaining),
            (Some(core::Reply::ControlledShutdown(Err(e))), _) => Err(ShutdownError::Refused(e)),
            (_, Err(e)) => Err(ShutdownError::Zk(e)),
            (_, Ok(())) => Err(ShutdownError::Refused(ControllerError::NotController)),
        }
    }

    /// ElectLeaders for `partitions` (all when `None`), in the core ([`core::elect_leaders`]);
    /// each partition's outcome.
    pub(super) async fn on_elect_leaders(
        &mut self,
        partitions: Option<Vec<(String, i32)>>,
        unclean: bool,
    ) -> Result<Vec<((String, i32), Result<(), ControllerError>)>, ControllerZkError> {
        let event = core::Event::ElectLeaders { partitions, unclean };
        match self.run_core_replying(core::Input::Event(event)).await {
            (Some(core::Reply::ElectLeaders(outcome)), _) => Ok(outcome),
            (_, Err(e)) => Err(e),
            (_, Ok(())) => Ok(Vec::new()),
        }
    }

    /// Legacy tools' `/admin/preferred_replica_election`: elect, then delete the znode.
    pub(super) async fn on_preferred_replica_election_znode(&mut self) -> Result<(), ControllerZkError> {
        self.run_core(core::Event::PreferredReplicaElectionZNode).await
    }

    /// A broker lost a log dir (`/log_dir_event_notification`), in the core
    /// ([`core::log_dir_event`]).
    pub(super) async fn on_log_dir_event(&mut self) -> Result<(), ControllerZkError> {
        self.run_core(core::Event::LogDirEventNotification).await
    }

    /// Replicas a broker reported KAFKA_STORAGE_ERROR for: offline, re-elected
    /// ([`core::log_dir_event::offline`]).
    pub(super) async fn on_offline_replicas(
        &mut self,
        broker: BrokerId,
        partitions: Vec<(String, i32)>,
    ) -> Result<(), ControllerZkError> {
        self.run_core(core::Event::OfflineReplicas { broker, partitions }).await
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
