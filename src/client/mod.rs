//! The internal Kafka client: what the controller channel, replica fetchers, CLI tools and
//! tests use to talk to brokers.
//!
//! | module | owns |
//! |---|---|
//! | `connection` | [`BrokerConnection`]: one socket, the ApiVersions handshake, pipelined requests |
//! | `security` | [`ConnectionSecurity`]: TLS under the connection, the SASL login after ApiVersions |
//! | `pool` | [`KafkaClient`]: connections by broker id or address, reconnect with backoff |
//! | `in_flight` | correlation ids and the in-order matching of responses to requests |
//! | `versions` | the broker's version ranges, version choice, KIP-511 reply reading |
//! | `wire` | request/response framing and headers |
//! | `backoff` | Kafka's exponential reconnect backoff (pure) |
//! | `fetch_session` | [`FetchSessionHandler`]: the fetching side of KIP-227 incremental fetch sessions (pure) |
//! | `error` | [`ClientError`] |
//!
//! The client knows nothing about what requests mean: Kafka error codes inside responses are
//! the caller's business, and nothing is retried implicitly.

mod backoff;
mod connection;
mod error;
mod fetch_session;
mod in_flight;
mod pool;
mod security;
mod versions;
mod wire;

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod fake_broker;
#[cfg(test)]
mod pool_tests;

pub use backoff::ExponentialBackoff;
pub use connection::{BrokerConnection, ConnectionConfig};
pub use error::ClientError;
pub use fetch_session::{FetchSessionHandler, SessionFetch};
pub use pool::{BrokerRef, ClientConfig, KafkaClient};
pub use security::ConnectionSecurity;
pub use versions::ApiVersionRanges;
