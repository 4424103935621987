//! The controller (Kafka's KafkaController, ZK mode): every broker runs one, the winner of the
//! `/controller` race decides leaders and ISRs, writes them to the state znodes under an
//! epoch-fenced multi, and pushes LeaderAndIsr / UpdateMetadata / StopReplica to brokers.
//!
//! [`core`] is the pure core, `step(&mut ControllerContext, Input, now) -> Effects` (BrokerChange,
//! IsrChangeNotification, TopicChange, PartitionModifications, topic deletion, failover,
//! ControlledShutdown, ElectLeaders and the preferred-election znode, the auto leader rebalance
//! timer, log-dir events, CreatePartitions, partition reassignment, and every election), and `shell` the async loop part that performs its
//! effects (answers and timers too) and feeds results back.
//! `handle` starts the controller and is its API to the broker ([`ControllerHandle`]);
//! [`controller`] owns the event loop and the controller election;
//! [`election_backoff`] spaces failed elections and recognises a deleted ZooKeeper tree;
//! `event_manager` the event queue and the watches that feed it; `operations` the shell's
//! entry points for operator-facing work (controlled shutdown, leader elections, log-dir
//! failures, CreatePartitions, reassignments), whose refusals are [`error::ControllerError`]; `modifications` the topic,
//! broker and (for partitions being reassigned) state znode watches and in-place edits of broker znodes; `notifications` ISR-change notifications and stale notifications at
//! failover; [`stats`] the metrics; [`zk_ops`] its ZooKeeper I/O, on any [`store::ControllerStore`],
//! whose writes [`retry`] carries across connection loss (idempotently, within the session)
//! (the real session or `FakeZk`, on which `loop_tests` runs the loop); [`channel`] one sender per
//! broker (or a test sink), reporting the answers the controller acts on; [`requests`] builds the requests;
//! `timer_tasks` the tokio timers behind the core's timer effects.
//! [`state_changes`] drives the partition state machine and [`replica_changes`] the replica
//! state machine, both on the controller's context and without I/O; [`decisions`],
//! [`election`], [`partition_state`], [`replica_state`] and [`assignment`] are pure logic.

pub mod assignment;
pub mod channel;
#[allow(clippy::module_inception)]
pub mod controller;
pub mod core;
pub mod decisions;
pub mod election;
pub mod election_backoff;
pub mod error;
mod event_manager;
mod handle;
#[cfg(test)]
mod loop_tests;
pub mod model;
pub mod modifications;
mod notifications;
mod operations;
pub mod partition_state;
pub mod replica_changes;
pub mod replica_state;
pub mod requests;
pub mod retry;
mod shell;
#[cfg(test)]
mod sim;
pub mod state_changes;
pub mod stats;
pub mod store;
mod timer_tasks;
mod timing;
pub mod zk_ops;

pub use error::ControllerError;
pub use handle::{start, start_with, ControllerConfig, ControllerHandle};
