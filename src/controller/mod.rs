//! The controller (Kafka's KafkaController, ZK mode): every broker runs one, the winner of the
//! `/controller` race decides leaders and ISRs, writes them to the state znodes under an
//! epoch-fenced multi, and pushes LeaderAndIsr / UpdateMetadata to brokers.
//!
//! [`controller`] owns the event loop, election, failover and broker/topic changes;
//! `operations` the operator-facing work (controlled shutdown, leader elections, deletion);
//! [`zk_ops`] its ZooKeeper I/O; [`channel`]
//! one sender per broker; [`requests`] builds the requests; [`decisions`], [`election`],
//! [`partition_state`], [`replica_state`] and [`assignment`] are pure logic.

pub mod assignment;
pub mod channel;
#[allow(clippy::module_inception)]
pub mod controller;
pub mod decisions;
pub mod election;
mod operations;
pub mod partition_state;
pub mod replica_state;
pub mod requests;
mod timing;
pub mod zk_ops;

pub use controller::{start, ControllerConfig, ControllerHandle};
