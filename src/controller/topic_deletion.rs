//! Topic deletion (Kafka's TopicDeletionManager), driven by the replica state machine. This
//! module owns the I/O of deleting a topic queued in `/admin/delete_topics`: the UpdateMetadata
//! with leader -2 (Kafka's LeaderDuringDelete), the StopReplica(delete) to each replica, and
//! removing the topic's znodes once every replica confirmed. Which replicas are asked, which
//! wait and when the topic is done is decided in [`super::replica_changes`] (`deletion_step`,
//! `start_deletion`, `replica_deletions_answered`).
//!
//! Like Kafka: replicas whose broker is down (or whose log dir failed) are DeletionIneligible
//! and the topic's znodes stay until they are deleted too; a failed delete is retried on the
//! next deletion request or broker change, or at failover; partitions of a topic being deleted
//! get no elections and no LeaderAndIsr.

use std::collections::BTreeMap;

use super::channel::ControlRequest;
use super::controller::Controller;
use super::partition_state::PartitionState;
use super::replica_changes::DeletionStep;
use super::requests;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::BrokerId;
use crate::zk::paths;

impl<S: ControllerStore> Controller<S> {
    /// Kafka's `resumeDeletions` for every queued topic: completes the ones whose replicas are
    /// all deleted and, when `start`, (re)starts the ones with nothing outstanding. Answers to
    /// StopReplica with a failed delete pass `start = false`, so a delete that keeps failing is
    /// not retried in a loop of requests and answers.
    pub(super) async fn on_topic_deletion(&mut self, start: bool) -> Result<(), ControllerZkError> {
        if self.active.is_none() {
            return Ok(());
        }
        let queued = zk_ops::topics_to_delete(&self.zk).await?;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        // Like Kafka's topicsToBeDeleted, a topic stays queued until its deletion completes,
        // even if its marker is removed by hand meanwhile.
        let (known, unknown): (Vec<String>, Vec<String>) =
            queued.into_iter().partition(|t| active.ctx.topics.contains_key(t));
        active.ctx.topics_to_delete.extend(known);
        let epoch_version = active.epoch_version;
        let doomed: Vec<String> = active.ctx.topics_to_delete.iter().cloned().collect();
        for topic in unknown {
            // Unknown (already gone, or never existed): just drop the marker.
            zk_ops::delete_topic_znodes(&self.zk, epoch_version, &topic, &[]).await?;
        }
        for topic in doomed {
            let Some(active) = self.active.as_ref() else {
                return Ok(());
            };
            match active.ctx.deletion_step(&topic) {
                DeletionStep::Complete => self.complete_topic_deletion(&topic).await?,
                DeletionStep::Start if start => self.start_topic_deletion(&topic),
                DeletionStep::Start | DeletionStep::InProgress => {}
            }
        }
        Ok(())
    }

    /// Kafka's `onTopicDeletion`: brokers drop the topic from their metadata, and the replicas
    /// that can serve get StopReplica(delete); the others wait as DeletionIneligible.
    fn start_topic_deletion(&mut self, topic: &str) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let plan = active.ctx.start_deletion(topic);
        let ctx = &active.ctx;
        for (id, b) in &ctx.live_brokers {
            let request = requests::update_metadata_deleting(ctx, topic, b.epoch);
            active.channel.send(*id, ControlRequest::UpdateMetadata(request));
        }
        let mut per_broker: BTreeMap<BrokerId, Vec<(String, i32)>> = BTreeMap::new();
        for r in &plan.started {
            per_broker
                .entry(r.replica)
                .or_default()
                .push((r.tp.topic.clone(), r.tp.partition));
        }
        for (broker, theirs) in &per_broker {
            if let Some(b) = ctx.live_brokers.get(broker) {
                let request = requests::stop_replica(ctx, theirs, b.epoch, true);
                active.channel.send(*broker, ControlRequest::StopReplica(request));
            }
        }
        let waiting: Vec<String> = plan.ineligible.iter().map(|r| r.replica.to_string()).collect();
        tracing::info!(
            %topic,
            deleting = plan.started.len(),
            ?waiting,
            "topic deletion (re)started; it completes once every replica is deleted"
        );
    }

    /// Kafka's `completeDeleteTopic`: every replica confirmed its delete; the replicas and
    /// partitions are forgotten and the topic's znodes go, fenced.
    async fn complete_topic_deletion(&mut self, topic: &str) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let partitions: Vec<i32> = active
            .ctx
            .topics
            .get(topic)
            .map(|t| t.assignment.keys().copied().collect())
            .unwrap_or_default();
        zk_ops::delete_topic_znodes(&self.zk, active.epoch_version, topic, &partitions).await?;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let keys: Vec<(String, i32)> = partitions.iter().map(|p| (topic.to_string(), *p)).collect();
        active.ctx.forget_deleted_replicas(topic);
        active.ctx.change_states(&keys, PartitionState::Offline);
        active.ctx.change_states(&keys, PartitionState::NonExistent);
        active.ctx.topics.remove(topic);
        active.ctx.topics_to_delete.remove(topic);
        active.ctx.leaderships.retain(|(t, _), _| t != topic);
        active.watches.unwatch(&paths::topic(topic));
        tracing::info!(%topic, "topic deleted");
        Ok(())
    }

    /// A broker answered StopReplica(delete) (Kafka's `TopicDeletionStopReplicaResponseReceived`).
    /// Answers sent in an earlier controller term or to an earlier incarnation of the broker are
    /// dropped: the replicas they concern were failed and asked again since.
    pub(super) async fn on_replicas_deleted(
        &mut self,
        controller_epoch: i32,
        broker: BrokerId,
        broker_epoch: i64,
        results: &[((String, i32), i16)],
    ) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let current = active.ctx.live_brokers.get(&broker).map(|b| b.epoch);
        if controller_epoch != active.ctx.epoch || current != Some(broker_epoch) {
            tracing::debug!(%broker, broker_epoch, "ignoring a StopReplica answer from an earlier term or incarnation");
            return Ok(());
        }
        active.ctx.replica_deletions_answered(broker, results);
        // As Kafka's resumeDeletions after a response: an answer with only successes may retry
        // replicas that became deletable while it was awaited (a broker restarted meanwhile,
        // when the deletion was in progress and so not retried then); a failed delete is not
        // retried here, so one that keeps failing does not loop.
        let succeeded = results.iter().all(|(_, code)| *code == 0);
        self.on_topic_deletion(succeeded).await
    }
}
