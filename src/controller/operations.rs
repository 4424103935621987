//! The controller's operator-facing work: controlled shutdown, preferred and unclean leader
//! elections (ElectLeaders, `/admin/preferred_replica_election`), log-dir failures and
//! CreatePartitions. Each is decided in [`super::core`]; these are the shell's entry points,
//! which hand the core its event and the answer back to whoever asked. The auto leader
//! rebalance is a core timer ([`super::core::timers`]).

use super::controller::{Controller, ShutdownError};
use super::core;
use super::error::ControllerError;
use super::store::ControllerStore;
use super::zk_ops::ControllerZkError;
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

    /// CreatePartitions, in the core ([`core::create_partitions`]): validated, placed, written
    /// and created there. Answered once the assignment is written; a later failure (electing the
    /// new partitions) is the event's error, and the partitions exist already.
    pub(super) async fn on_create_partitions(
        &mut self,
        topic: &str,
        count: i32,
        assignments: Option<Vec<Vec<BrokerId>>>,
        validate_only: bool,
    ) -> Result<Result<(), ControllerError>, ControllerZkError> {
        if self.active.is_none() {
            return Ok(Err(ControllerError::NotController));
        }
        let request = core::create_partitions::Request {
            topic: topic.to_string(),
            count,
            assignments,
            validate_only,
        };
        match self
            .run_core_replying(core::Input::Event(core::Event::CreatePartitions(request)))
            .await
        {
            (Some(core::Reply::CreatePartitions(result)), Err(e)) => {
                tracing::warn!(topic, error = %e, "partitions added, but creating them failed");
                Ok(result)
            }
            (Some(core::Reply::CreatePartitions(result)), Ok(())) => Ok(result),
            (_, Err(e)) => Err(e),
            (_, Ok(())) => Ok(Err(ControllerError::NotController)),
        }
    }
}

impl<S: ControllerStore> Controller<S> {
    /// AlterPartitionReassignments, in the core ([`core::reassignment`]): answered once each
    /// partition's reassignment is started, replaced or cancelled (or refused).
    pub(super) async fn on_alter_partition_reassignments(
        &mut self,
        reassignments: Vec<super::controller::ReassignmentRequest>,
    ) -> (super::controller::ReassignmentOutcome, Result<(), ControllerZkError>) {
        if self.active.is_none() {
            return (Err(ControllerError::NotController), Ok(()));
        }
        let event = core::Event::AlterPartitionReassignments(reassignments);
        match self.run_core_replying(core::Input::Event(event)).await {
            (Some(core::Reply::AlterPartitionReassignments(outcome)), result) => (Ok(outcome), result),
            (_, result) => (Err(ControllerError::NotController), result),
        }
    }

    /// ListPartitionReassignments, from the context ([`core::reassignment::list`]).
    pub(super) fn on_list_partition_reassignments(
        &self,
        partitions: Option<Vec<(String, i32)>>,
    ) -> super::controller::ReassignmentListing {
        let active = self.active.as_ref().ok_or(ControllerError::NotController)?;
        Ok(core::reassignment::list(&active.ctx, partitions.as_deref()))
    }
}
