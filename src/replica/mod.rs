//! Replicas this broker hosts. [`replica_manager::ReplicaManager`] applies the controller's
//! LeaderAndIsr/StopReplica decisions (epoch-checked) and serves appends and reads through each
//! [`partition::Partition`], which keeps leader, ISR, leader epoch, the high watermark and the
//! followers' progress (rules in [`isr`], pure). [`fetcher`] replicates as follower;
//! [`isr_writer`] writes leaders' ISR changes to ZooKeeper and announces them;
//! [`state_watch`] applies newer leader epochs found in the state znodes.

pub mod fetcher;
pub mod isr;
pub mod isr_writer;
pub mod partition;
pub mod replica_manager;
pub mod state_watch;

pub use partition::{Partition, PartitionState};
pub use replica_manager::{ReplicaConfig, ReplicaManager};

#[cfg(test)]
mod tests;
