//! The controller's event loop: every broker runs one; the one that wins `/controller` decides
//! leaders and ISRs. One task ([`super::handle::start`]) owns the context and the store it
//! runs on (any [`ControllerStore`]: the real session, or `FakeZk` in unit tests); ZooKeeper watches and session changes only enqueue events
//! (Kafka's ControllerEventManager). Each step reads what it needs, decides with the pure
//! functions in [`super::election`], writes ZooKeeper in an epoch-fenced multi, then sends
//! LeaderAndIsr / UpdateMetadata. A failed epoch check means another controller exists: resign.

use std::time::Instant;

use tokio::sync::watch;

use super::channel::{Answer, ControllerChannel, Transport};
use super::core;
use super::election_backoff::{missing_tree_path, ElectionBackoff};
use super::error::ControllerError;
use super::event_manager::{Event, EventQueue, ZNodeWatches};
use super::handle::ControllerConfig;
use super::requests::ControllerContext;
use super::stats;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::{BrokerId, ControllerEpoch, ZkVersion};
use crate::zk::paths;

/// The answer to a ControlledShutdown: partitions the broker still leads, or why not.
pub type ShutdownResult = Result<Vec<(String, i32)>, ControllerError>;

/// Per-partition outcome of an ElectLeaders request (`Ok` = elected), or an error for the
/// whole request.
pub type ElectionOutcome = Result<Vec<((String, i32), Result<(), ControllerError>)>, ControllerError>;

/// One partition of an AlterPartitionReassignments request: its target replicas, `None` to cancel.
pub type ReassignmentRequest = ((String, i32), Option<Vec<BrokerId>>);

/// Per-partition outcome of an AlterPartitionReassignments request (`Ok` = started, replaced
/// or cancelled), or an error for the whole request.
pub type ReassignmentOutcome = Result<Vec<((String, i32), Result<(), ControllerError>)>, ControllerError>;

/// The partitions being reassigned (of those asked about), or an error for the whole request.
pub type ReassignmentListing = Result<Vec<((String, i32), super::core::reassignment::Ongoing)>, ControllerError>;

/// Why a controlled shutdown could not be handled.
pub(super) enum ShutdownError {
    Refused(ControllerError),
    Zk(ControllerZkError),
}

/// State while active.
pub(super) struct Active {
    pub(super) epoch_version: ZkVersion,
    pub(super) ctx: ControllerContext,
    pub(super) channel: ControllerChannel,
    /// Data watches on each topic's and each live broker's znode; dropped on resignation.
    pub(super) watches: ZNodeWatches,
}

/// The controller of one broker, owned by its event loop task ([`super::handle::start`]).
pub(super) struct Controller<S> {
    pub(super) config: ControllerConfig,
    pub(super) zk: S,
    pub(super) active: Option<Active>,
    /// Its own queue, for watches and callbacks that report back (offline replicas).
    pub(super) events: EventQueue,
    pub(super) state: watch::Sender<Option<ControllerEpoch>>,
    /// Spaces this broker's election attempts after failed ones.
    pub(super) backoff: ElectionBackoff,
    /// The missing ZooKeeper tree was reported (once, until a failover succeeds again).
    pub(super) tree_missing_logged: bool,
    /// How each term's channel reaches brokers.
    pub(super) transport: Transport,
    /// The timers armed for the core and the election backoff.
    pub(super) timers: super::timer_tasks::ArmedTimers,
}

pub(super) const NOT_CONTROLLER: ControllerError = ControllerError::NotController;

impl<S: ControllerStore> Controller<S> {
    pub(super) async fn process(&mut self, event: Event) {
        let result = match event {
            Event::Startup | Event::ControllerChange | Event::SessionEstablished => self.elect_with_backoff().await,
            Event::SessionEnded => {
                self.resign("ZooKeeper session ended");
                Ok(())
            }
            Event::BrokerChange => match self.on_broker_change().await {
                // A returning replica may unblock a deletion.
                Ok(()) => self.run_core(core::Event::TopicDeletion { start: true }).await,
                Err(e) => Err(e),
            },
            Event::TopicDeletion => self.run_core(core::Event::TopicDeletion { start: true }).await,
            Event::ElectLeaders {
                partitions,
                unclean,
                reply,
            } => match self.on_elect_leaders(partitions, unclean).await {
                Ok(outcome) => {
                    reply.send(Ok(outcome));
                    Ok(())
                }
                Err(e) => {
                    reply.send(Err(NOT_CONTROLLER));
                    Err(e)
                }
            },
            Event::PreferredReplicaElectionZNode => self.on_preferred_replica_election_znode().await,
            Event::Timer(core::timers::TimerKind::ControllerElection) => self.elect_with_backoff().await,
            Event::Timer(kind) => self.run_core_replying(core::Input::Timer(kind)).await.1,
            Event::LogDirEventNotification => self.on_log_dir_event().await,
            Event::IsrChangeNotification => self.on_isr_change_notification().await,
            Event::BrokerModifications { broker } => self.on_broker_modifications(broker).await,
            Event::PartitionModifications { topic } => {
                self.run_core(core::Event::PartitionModifications { topic }).await
            }
            Event::CreatePartitions {
                topic,
                count,
                assignment,
                validate_only,
                reply,
            } => {
                match self
                    .on_create_partitions(&topic, count, assignment, validate_only)
                    .await
                {
                    Ok(result) => {
                        reply.send(result);
                        Ok(())
                    }
                    Err(e) => {
                        reply.send(Err(NOT_CONTROLLER));
                        Err(e)
                    }
                }
            }
            Event::OfflineReplicas { broker, partitions } => self.on_offline_replicas(broker, partitions).await,
            Event::AlterPartitionReassignments { reassignments, reply } => {
                let (answer, result) = self.on_alter_partition_reassignments(reassignments).await;
                reply.send(answer);
                result
            }
            Event::ListPartitionReassignments { partitions, reply } => {
                reply.send(self.on_list_partition_reassignments(partitions));
                Ok(())
            }
            Event::ReassignPartitionsZNode => self.run_core(core::Event::ReassignPartitionsZNode).await,
            Event::ReassignmentIsrChange { partitions } => {
                self.run_core(core::Event::ReassignmentIsrChange(partitions)).await
            }
            Event::ReplicasDeleted {
                controller_epoch,
                broker,
                broker_epoch,
                results,
            } => {
                self.run_core(core::Event::StopReplicaResponse {
                    controller_epoch,
                    broker,
                    broker_epoch,
                    results,
                })
                .await
            }
            Event::ControlledShutdown {
                broker,
                broker_epoch,
                reply,
            } => {
                let result = self.on_controlled_shutdown(broker, broker_epoch).await;
                match result {
                    Ok(remaining) => {
                        reply.send(Ok(remaining));
                        Ok(())
                    }
                    Err(ShutdownError::Refused(e)) => {
                        reply.send(Err(e));
                        Ok(())
                    }
                    Err(ShutdownError::Zk(e)) => {
                        reply.send(Err(NOT_CONTROLLER));
                        Err(e)
                    }
                }
            }
            Event::TopicChange => self.run_core(core::Event::TopicChange).await,
        };
        match result {
            Ok(()) => {}
            Err(ControllerZkError::ControllerMoved) => self.resign("another controller was elected"),
            Err(e) => tracing::error!(error = %e, "controller event failed"),
        }
        stats::ControllerGauges::of(self.active.as_ref().map(|a| &a.ctx)).publish();
    }

    pub(super) fn resign(&mut self, why: &str) {
        if let Some(mut active) = self.active.take() {
            tracing::warn!(broker = %self.config.broker_id, epoch = active.ctx.epoch, why, "resigning as controller");
            active.channel.clear();
            self.timers.cancel_term_bound();
            self.state.send_replace(None);
            metrics::gauge!("kafka_controller_kafkacontroller_activecontrollercount").set(0.0);
        }
    }

    pub(super) async fn maybe_elect(&mut self) -> Result<(), ControllerZkError> {
        let current = zk_ops::active_controller(&self.zk).await?;
        if current.is_some_and(|c| c != self.config.broker_id) {
            self.resign("another broker is the controller");
            return Ok(());
        }
        if current == Some(self.config.broker_id) && self.active.is_some() {
            return Ok(());
        }
        if current == Some(self.config.broker_id) {
            // A /controller of ours from an earlier session or run: let it go and elect anew.
            let _ = self.zk.delete(paths::CONTROLLER, None).await;
            return Ok(());
        }
        stats::election_attempt();
        let Some((epoch, epoch_version)) = zk_ops::elect(&self.zk, self.config.broker_id).await? else {
            return Ok(());
        };
        tracing::info!(broker = %self.config.broker_id, epoch = epoch.0, "elected controller");
        let ctx = ControllerContext {
            controller: self.config.broker_id,
            epoch: epoch.0,
            inter_broker_listener: self.config.inter_broker_listener.clone(),
            unclean_leader_election: self.config.unclean_leader_election,
            auto_rebalance: self
                .config
                .auto_leader_rebalance
                .then_some(core::timers::AutoRebalance {
                    interval: self.config.leader_imbalance_check_interval,
                    imbalance_percentage: self.config.leader_imbalance_per_broker_percentage,
                }),
            ..Default::default()
        };
        let events = self.events.clone();
        let controller_epoch = epoch.0;
        let on_answer: super::channel::AnswerCallback = std::sync::Arc::new(move |broker, answer| {
            events.put(match answer {
                Answer::OfflineReplicas(partitions) => Event::OfflineReplicas { broker, partitions },
                Answer::ReplicasDeleted { broker_epoch, results } => Event::ReplicasDeleted {
                    controller_epoch,
                    broker,
                    broker_epoch,
                    results,
                },
            });
        });
        self.active = Some(Active {
            epoch_version,
            ctx,
            channel: ControllerChannel::with_transport(on_answer, self.transport.clone()),
            watches: ZNodeWatches::default(),
        });
        // Active before the failover, as Kafka sets activeControllerId before
        // onControllerFailover: the failover's UpdateMetadata names this broker as controller,
        // and a client that reads it and sends CreateTopics at once must not get NOT_CONTROLLER.
        // What such a request starts reaches this task's queue behind the failover.
        self.state.send_replace(Some(epoch));
        if let Err(e) = self.on_failover().await {
            if missing_tree_path(&e).is_none() {
                tracing::error!(error = %e, "controller failover failed; moving the controller");
            }
            self.resign("failover failed");
            let _ = self.zk.delete(paths::CONTROLLER, None).await;
            return Err(e);
        }
        metrics::gauge!("kafka_controller_kafkacontroller_activecontrollercount").set(1.0);
        self.run_core(core::Event::FailoverDone).await
    }

    /// Loads the cluster from ZooKeeper, tells every broker, and elects what needs a leader
    /// (Kafka's onControllerFailover, in the core: [`core::failover`]).
    async fn on_failover(&mut self) -> Result<(), ControllerZkError> {
        let (started, zk_before) = (Instant::now(), self.zk.requests());
        // The full read below covers whatever they announced, and every replica gets
        // LeaderAndIsr (a replica in a failed log dir answers KAFKA_STORAGE_ERROR to it).
        self.delete_stale_notifications().await?;
        self.run_core(core::Event::Failover).await?;
        if let Some(active) = self.active.as_ref() {
            let brokers = active.ctx.live_brokers.keys().copied();
            let round_trips = self.zk.requests() - zk_before;
            let partitions = active.ctx.all_partitions().len();
            super::timing::report_failover(&active.channel, brokers, started, partitions, round_trips);
        }
        Ok(())
    }

    /// Kafka's processBrokerChange, in the core ([`core::broker_change`]).
    async fn on_broker_change(&mut self) -> Result<(), ControllerZkError> {
        self.run_core(core::Event::BrokerChange).await
    }
}
