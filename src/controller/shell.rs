//! The async shell around [`super::core`]: feeds the core an input, carries out the effects it
//! returns (channel changes, watches, requests, metrics, timers; the answer to an admin request
//! is handed back to the caller), performs the one ZooKeeper operation it
//! asks for (fencing writes with this term's `/controller_epoch` version) and feeds the result
//! back, until the core is idle. It decides nothing.

use std::time::Instant;

use super::channel::ControlRequest;
use super::controller::{Active, Controller};
use super::core::{self, announce, Effects, Input, Key, Metric, Read, ReadResult, Write, WriteResult, ZkOp};
use super::stats;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::{BrokerId, ControllerEpoch};

impl<S: ControllerStore> Controller<S> {
    /// Runs `event` through the core until it is done. A failed epoch check ends it at once
    /// (the caller resigns); any other failed ZooKeeper operation is told to the core (which
    /// may still clean up) and returned at the end.
    pub(super) async fn run_core(&mut self, event: core::Event) -> Result<(), ControllerZkError> {
        self.run_core_replying(Input::Event(event)).await.1
    }

    /// [`Self::run_core`] from any input, with the answer the core gave to the admin request
    /// (`None`: it gave none, e.g. the event failed or this broker is not the controller).
    pub(super) async fn run_core_replying(
        &mut self,
        mut input: Input,
    ) -> (Option<core::Reply>, Result<(), ControllerZkError>) {
        let mut first_error = None;
        let mut reply = None;
        loop {
            let Some(active) = self.active.as_mut() else {
                return (reply, Ok(()));
            };
            let mut fx = core::step(&mut active.ctx, input, Instant::now());
            reply = fx.reply.take().or(reply);
            let Some(op) = self.carry_out(fx).await else {
                break;
            };
            input = match self.perform(op).await {
                Ok(input) => input,
                Err(ControllerZkError::ControllerMoved) => {
                    if let Some(active) = self.active.as_mut() {
                        active.ctx.pending = core::Pending::Idle;
                    }
                    return (reply, Err(ControllerZkError::ControllerMoved));
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                    Input::Failed
                }
            };
        }
        (reply, first_error.map_or(Ok(()), Err))
    }

    /// Carries out every effect but the ZooKeeper operation, which it returns.
    async fn carry_out(&mut self, fx: Effects) -> Option<ZkOp> {
        let me = self.config.broker_id;
        for timer in fx.timers {
            self.timers.arm(timer, &self.events);
        }
        let active = self.active.as_mut()?;
        for id in &fx.disconnect {
            active.channel.remove_broker(*id);
        }
        for (id, addr) in fx.connect {
            active.channel.add_broker(id, addr, me);
        }
        for id in &fx.unwatch_brokers {
            active.watches.unwatch(&crate::zk::paths::broker_id(*id));
        }
        if !fx.watch_brokers.is_empty() {
            self.watch_brokers(&fx.watch_brokers).await;
        }
        if !fx.watch_topics.is_empty() {
            self.watch_topics(&fx.watch_topics).await;
        }
        if !fx.watch_states.is_empty() {
            self.watch_states(&fx.watch_states).await;
        }
        if let Some(active) = self.active.as_mut() {
            for topic in &fx.unwatch_topics {
                active.watches.unwatch(&crate::zk::paths::topic(topic));
            }
            for (topic, partition) in &fx.unwatch_states {
                active
                    .watches
                    .unwatch(&crate::zk::paths::partition_state(topic, *partition));
            }
        }
        let active = self.active.as_ref()?;
        for (broker, request) in fx.send {
            active.channel.send(broker, request);
        }
        for metric in fx.metrics {
            match metric {
                Metric::LeaderElection { elapsed, unclean } => stats::leader_election(elapsed, unclean),
                Metric::OfflinePartition => {
                    metrics::counter!("kastle_controller_offline_partitions_total").increment(1)
                }
            }
        }
        fx.zk
    }

    /// Performs one ZooKeeper operation for the core.
    async fn perform(&self, op: ZkOp) -> Result<Input, ControllerZkError> {
        let zk = &self.zk;
        Ok(match op {
            ZkOp::Read(Read::LiveBrokers) => Input::Read(ReadResult::LiveBrokers(zk_ops::live_brokers(zk).await?)),
            ZkOp::Read(Read::Leaderships(keys)) => {
                Input::Read(ReadResult::Leaderships(zk_ops::leaderships(zk, &keys).await?))
            }
            ZkOp::Read(Read::UncleanConfigs { topics, controller }) => Input::Read(ReadResult::UncleanConfigs {
                broker_default: zk_ops::unclean_broker_default(zk, controller).await,
                overrides: zk_ops::unclean_overrides(zk, topics).await,
            }),
            ZkOp::Read(Read::NotificationNames(parent)) => Input::Read(ReadResult::NotificationNames(
                zk_ops::notification_names(zk, parent).await?,
            )),
            ZkOp::Read(Read::NotificationPayloads { parent, names }) => Input::Read(ReadResult::NotificationPayloads(
                zk_ops::notification_payloads(zk, parent, &names).await?,
            )),
            ZkOp::Read(Read::TopicNames) => Input::Read(ReadResult::TopicNames(zk_ops::topic_names(zk).await?)),
            ZkOp::Read(Read::TopicInfos(topics)) => {
                Input::Read(ReadResult::TopicInfos(zk_ops::topic_infos(zk, &topics).await?))
            }
            ZkOp::Read(Read::ExistingLeaderships(keys)) => {
                Input::Read(ReadResult::Leaderships(zk_ops::existing_leaderships(zk, &keys).await?))
            }
            ZkOp::Read(Read::TopicsToDelete) => {
                Input::Read(ReadResult::TopicsToDelete(zk_ops::topics_to_delete(zk).await?))
            }
            ZkOp::Read(Read::PreferredReplicaElection) => Input::Read(ReadResult::PreferredReplicaElection(
                zk_ops::preferred_replica_election(zk).await?,
            )),
            ZkOp::Read(Read::ReassignPartitions) => {
                Input::Read(ReadResult::ReassignPartitions(zk_ops::reassign_partitions(zk).await?))
            }
            ZkOp::Write(write) => Input::Wrote(self.write(write).await?),
        })
    }

    async fn write(&self, write: Write) -> Result<WriteResult, ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Err(ControllerZkError::ControllerMoved);
        };
        let (epoch, version) = (ControllerEpoch(active.ctx.epoch), active.epoch_version);
        match write {
            Write::PartitionStates { creates, updates } => {
                zk_ops::create_partition_states(&self.zk, epoch, version, &creates).await?;
                let versions = zk_ops::update_partition_states(&self.zk, epoch, version, &updates).await?;
                Ok(WriteResult::PartitionStates { versions })
            }
            Write::DeleteNotifications { parent, names } => {
                zk_ops::delete_notifications(&self.zk, version, parent, &names).await?;
                Ok(WriteResult::NotificationsDeleted)
            }
            Write::DeleteTopic { topic, partitions } => {
                zk_ops::delete_topic_znodes(&self.zk, version, &topic, &partitions).await?;
                Ok(WriteResult::TopicDeleted)
            }
            Write::Assignment {
                topic,
                assignment,
                reassigning,
            } => {
                zk_ops::write_assignment(&self.zk, version, &topic, &assignment, &reassigning).await?;
                Ok(WriteResult::AssignmentWritten)
            }
            Write::DeletePreferredReplicaElection => {
                zk_ops::delete_preferred_replica_election(&self.zk, version).await?;
                Ok(WriteResult::PreferredReplicaElectionDeleted)
            }
            Write::Assignments(writes) => {
                zk_ops::write_assignments(&self.zk, version, &writes).await?;
                Ok(WriteResult::AssignmentWritten)
            }
            Write::ReassignPartitions(data) => {
                zk_ops::write_reassign_partitions(&self.zk, version, data).await?;
                Ok(WriteResult::ReassignPartitionsWritten)
            }
        }
    }

    /// UpdateMetadata for `partitions` to every live broker.
    pub(super) fn send_update_metadata(&self, partitions: &[Key]) {
        let Some(active) = &self.active else { return };
        send_all(active, announce::update_metadata(&active.ctx, partitions));
    }
}

fn send_all(active: &Active, requests: impl IntoIterator<Item = (BrokerId, ControlRequest)>) {
    for (broker, request) in requests {
        active.channel.send(broker, request);
    }
}
