//! Replicas this broker hosts: [`replica_manager::ReplicaManager`] applies the controller's
//! LeaderAndIsr/StopReplica decisions (epoch-checked) and serves appends and reads through each
//! [`partition::Partition`], which keeps leader, ISR, leader epoch and the high watermark.
//! Follower fetching and ISR changes in ZooKeeper arrive with the replication work.

pub mod partition;
pub mod replica_manager;

pub use partition::{Partition, PartitionState};
pub use replica_manager::ReplicaManager;
