//! The controller as the rest of the broker sees it: its settings ([`ControllerConfig`]), the
//! handle RPC handlers use ([`ControllerHandle`]) and [`start`], which sets the watches that
//! feed the event queue and spawns the one task that owns the [`Controller`].

use std::time::Duration;

use tokio::sync::watch;

use super::channel::Transport;
use super::controller::{
    Controller, ElectionOutcome, ReassignmentListing, ReassignmentOutcome, ReassignmentRequest, ShutdownResult,
    NOT_CONTROLLER,
};
use super::election_backoff::ElectionBackoff;
use super::error::ControllerError;
use super::event_manager::{self, Event, EventQueue, Reply, Trigger};
use super::stats;
use super::store::ControllerStore;
use crate::types::{BrokerId, ControllerEpoch};
use crate::zk::paths;
use crate::zk::session::SessionEvent;
use crate::zk::store::WatchMode;

/// Settings the controller needs.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub broker_id: BrokerId,
    pub inter_broker_listener: String,
    pub unclean_leader_election: bool,
    /// `auto.leader.rebalance.enable`.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds`.
    pub leader_imbalance_check_interval: Duration,
    /// `leader.imbalance.per.broker.percentage`.
    pub leader_imbalance_per_broker_percentage: u32,
}

/// The controller as the rest of the broker sees it.
#[derive(Debug, Clone)]
pub struct ControllerHandle {
    active: watch::Receiver<Option<ControllerEpoch>>,
    events: EventQueue,
}

impl ControllerHandle {
    /// The epoch while this broker is the active controller.
    pub fn active_epoch(&self) -> Option<ControllerEpoch> {
        *self.active.borrow()
    }

    pub fn is_active(&self) -> bool {
        self.active.borrow().is_some()
    }

    /// Handles a ControlledShutdown request (on the active controller): moves leaderships off
    /// `broker` and answers with the partitions it still leads.
    pub async fn controlled_shutdown(&self, broker: BrokerId, broker_epoch: i64) -> ShutdownResult {
        let (reply, rx) = Reply::new();
        if !self.events.put(Event::ControlledShutdown {
            broker,
            broker_epoch,
            reply,
        }) {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Handles an ElectLeaders request (on the active controller).
    pub async fn elect_leaders(&self, partitions: Option<Vec<(String, i32)>>, unclean: bool) -> ElectionOutcome {
        let (reply, rx) = Reply::new();
        if !self.events.put(Event::ElectLeaders {
            partitions,
            unclean,
            reply,
        }) {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Handles CreatePartitions for one topic (on the active controller).
    pub async fn create_partitions(
        &self,
        topic: String,
        count: i32,
        assignment: Option<Vec<Vec<BrokerId>>>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        let (reply, rx) = Reply::new();
        if !self.events.put(Event::CreatePartitions {
            topic,
            count,
            assignment,
            validate_only,
            reply,
        }) {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Handles AlterPartitionReassignments (on the active controller): per partition its target
    /// replicas, or `None` to cancel its reassignment. Answered once each is started (its
    /// assignment written), refused or cancelled; completion is ListPartitionReassignments'.
    pub async fn alter_partition_reassignments(&self, reassignments: Vec<ReassignmentRequest>) -> ReassignmentOutcome {
        let (reply, rx) = Reply::new();
        if !self
            .events
            .put(Event::AlterPartitionReassignments { reassignments, reply })
        {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Handles ListPartitionReassignments (on the active controller): the partitions being
    /// reassigned among `partitions` (all when `None`), with their replicas, adding and removing.
    pub async fn list_partition_reassignments(&self, partitions: Option<Vec<(String, i32)>>) -> ReassignmentListing {
        let (reply, rx) = Reply::new();
        if !self.events.put(Event::ListPartitionReassignments { partitions, reply }) {
            return Err(NOT_CONTROLLER);
        }
        rx.await.unwrap_or(Err(NOT_CONTROLLER))
    }

    /// Changes of the active state (for tests and metrics).
    pub fn subscribe(&self) -> watch::Receiver<Option<ControllerEpoch>> {
        self.active.clone()
    }
}

/// Starts the controller module of this broker.
pub async fn start<S: ControllerStore>(
    config: ControllerConfig,
    zk: S,
    stop: watch::Receiver<bool>,
) -> ControllerHandle {
    start_with(config, zk, stop, Transport::default()).await
}

/// [`start`], with the controller's requests to brokers going over `transport`.
pub async fn start_with<S: ControllerStore>(
    config: ControllerConfig,
    zk: S,
    mut stop: watch::Receiver<bool>,
    transport: Transport,
) -> ControllerHandle {
    stats::register();
    let (queue, mut rx) = event_manager::queue();
    let (state, active) = watch::channel(None);
    // Kafka registers the child and existence handlers at failover; persistent watches set
    // once here serve every term, and events reaching a controller that is not active are no-ops.
    for (path, trigger, event) in [
        (paths::CONTROLLER, Trigger::Any, Event::ControllerChange),
        (paths::BROKER_IDS, Trigger::Children, Event::BrokerChange),
        (paths::BROKER_TOPICS, Trigger::Children, Event::TopicChange),
        (paths::DELETE_TOPICS, Trigger::Children, Event::TopicDeletion),
        (
            paths::PREFERRED_REPLICA_ELECTION,
            Trigger::CreatedOrData,
            Event::PreferredReplicaElectionZNode,
        ),
        (
            paths::REASSIGN_PARTITIONS,
            Trigger::Created,
            Event::ReassignPartitionsZNode,
        ),
        (
            paths::LOG_DIR_EVENT_NOTIFICATION,
            Trigger::Children,
            Event::LogDirEventNotification,
        ),
        (
            paths::ISR_CHANGE_NOTIFICATION,
            Trigger::Children,
            Event::IsrChangeNotification,
        ),
    ] {
        match zk.watch(path, WatchMode::Persistent).await {
            Ok(stream) => {
                tokio::spawn(event_manager::forward_watch(stream, trigger, event, queue.clone()));
            }
            Err(e) => tracing::error!(path, error = %e, "controller cannot watch"),
        }
    }
    let mut session_events = zk.session_events();
    let session_queue = queue.clone();
    tokio::spawn(async move {
        while let Ok(e) = session_events.recv().await {
            let event = match e {
                SessionEvent::Ended { .. } => Event::SessionEnded,
                SessionEvent::Established { .. } => Event::SessionEstablished,
            };
            if !session_queue.put(event) {
                return;
            }
        }
    });
    queue.put(Event::Startup);
    let mut controller = Controller {
        config,
        zk,
        active: None,
        state,
        events: queue.clone(),
        backoff: ElectionBackoff::default(),
        tree_missing_logged: false,
        transport,
        timers: Default::default(),
    };
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                e = rx.next() => match e { Some(e) => e, None => return },
                _ = stop.changed() => {
                    controller.resign("broker shutting down");
                    return;
                }
            };
            controller.process(event).await;
        }
    });
    ControllerHandle { active, events: queue }
}
