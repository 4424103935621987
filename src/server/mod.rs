//! Broker wiring: the start-up order Kafka's `KafkaServer.startup` follows, the ZooKeeper
//! registration and its renewal after session expiry, listener sockets, and shutdown.

pub mod apis;
pub mod broker;
pub mod controlled_shutdown;
pub mod dynamic_config;
pub mod fetch_session;
pub mod listeners;
pub mod log_dirs;
pub mod metadata_cache;
pub mod producer_ids;
pub mod registration;
pub mod tls_reload;
pub mod topic_creation;

pub use broker::{Broker, BrokerError, BrokerHandle};
