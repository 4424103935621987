//! Kafka's on-disk log. [`log_manager::LogManager`] owns every partition's [`log::Log`] across
//! `log.dirs`; a log is a run of [`segment::LogSegment`]s (`.log` + `.index` + `.timeindex`),
//! plus its leader-epoch cache and its idempotent producers' state (`producer_state`, snapshotted
//! in Kafka's `.snapshot` files by `producer_snapshot`); [`cleaner::LogCleaner`] compacts
//! `cleanup.policy=compact` logs. Also the per-dir files: checkpoints, `meta.properties`, the
//! clean-shutdown marker; log-dir failure signalling; and background flushes (`flusher`: a
//! roll's fsync runs off the append path, the recovery point moves once it is done). The broker's lock order (partition,
//! then log) is stated and checked in [`lock_order`]. This module knows nothing about
//! ZooKeeper or the network.

pub mod checkpoint;
pub mod clean_shutdown;
pub mod cleaner;
pub mod config;
pub mod dump;
pub mod failure;
pub mod file;
pub mod flusher;
pub mod index_file;
pub mod leader_epoch;
pub mod lock_order;
#[allow(clippy::module_inception)]
pub mod log;
pub mod log_manager;
pub mod meta_properties;
pub mod offset_index;
pub mod producer_snapshot;
pub mod producer_state;
pub mod retention;
pub mod segment;
pub mod time_index;
pub mod timestamp_search;
pub mod topic_configs;

pub use meta_properties::{MetaProperties, MetaPropertiesError};
