//! ZooKeeper: Kafka's znode layout ([`paths`]), its JSON payloads ([`models`]), the store
//! abstraction ([`store`]) with the real session-handling client ([`session`]) and an
//! in-memory fake ([`fake`]), typed broker operations ([`kafka_zk_client`]), and validation of
//! payloads against `zk-schema/` ([`schema`], [`check`]); the session's SASL login, TLS and ACL
//! choice ([`security`], [`tls`], [`acl`]).

pub mod acl;
pub mod check;
pub mod connect;
pub mod fake;
pub mod kafka_zk_client;
pub mod models;
pub mod paths;
pub mod schema;
pub mod security;
pub mod session;
pub mod store;
pub mod tls;

pub use connect::ConnectString;
pub use kafka_zk_client::{KafkaZkClient, KafkaZkError};
pub use security::{ZkSecurity, ZkSecurityError};
pub use session::{SessionEvent, ZkSession};
pub use store::{CreateMode, Stat, ZkError, ZkStore};
