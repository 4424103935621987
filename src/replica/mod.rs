//! Replicas this broker hosts. [`replica_manager::ReplicaManager`] applies the controller's
//! LeaderAndIsr/StopReplica decisions (epoch-checked) and serves appends and reads through each
//! [`partition::Partition`], which keeps leader, ISR, leader epoch, the high watermark and the
//! followers' progress (rules in [`isr`], pure). [`fetcher`] replicates as follower;
//! [`isr_writer`] writes leaders' ISR changes to ZooKeeper and announces them;
//! [`state_watch`] applies newer leader epochs found in the state znodes. Producers' and the
//! group coordinator's appends go through [`append`] (`append_records`), consumers' and
//! followers' reads through [`fetch`] (`fetch_messages`), both doing their disk work (and
//! anything that may wait for a partition's lock) off the async workers, on the I/O thread of
//! the partition's log dir ([`io`], one queue per dir). What waits for replication
//! or data parks in [`purgatory`], keyed by partition. Their refusals and failures are
//! [`ReplicaError`]s, which become Kafka codes only where a response is built.
//! [`delete_records`] moves leaders' log start offsets (DeleteRecords) and waits for the
//! followers', which learn the leader's from their fetches.

pub mod append;
pub mod delete_records;
pub mod error;
pub mod fetch;
pub mod fetcher;
pub mod io;
pub mod isr;
pub mod isr_writer;
pub mod partition;
pub mod purgatory;
pub mod replica_manager;
pub mod replication_quota;
pub mod state_watch;

pub use error::ReplicaError;
pub use partition::{Partition, PartitionState};
pub use replica_manager::{ReplicaConfig, ReplicaManager};

#[cfg(test)]
mod delayed_tests;
#[cfg(test)]
mod tests;
