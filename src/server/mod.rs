//! Broker wiring: the start-up order Kafka's `KafkaServer.startup` follows, the ZooKeeper
//! registration and its renewal after session expiry, listener sockets, and shutdown.

pub mod broker;
pub mod listeners;
pub mod log_dirs;
pub mod registration;

pub use broker::{Broker, BrokerError, BrokerHandle};
