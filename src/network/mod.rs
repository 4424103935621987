//! The network layer: listeners, connections, Kafka framing and request headers, version
//! negotiation (ApiVersions), and the hand-off of decoded requests to a [`RequestHandler`].
//!
//! | module | owns |
//! |---|---|
//! | [`handler`] | the seam: [`RequestContext`], the [`RequestHandler`] trait the broker implements, [`handler::Reply`] (now or later) |
//! | [`api_versions`] | the table of supported API versions and the answers derived from it |
//! | [`socket_server`] | accept loops, connection limits, graceful shutdown |
//! | [`connection`] | one connection: framing, header and body decoding, in-order request handling and responses |
//! | [`authentication`] | the per-connection SASL exchange (SaslHandshake, SaslAuthenticate, re-authentication) on SASL listeners |
//! | [`connection_quotas`] | `max.connections` / `max.connections.per.ip` counting |

pub mod api_versions;
pub mod authentication;
pub mod connection;
pub mod connection_quotas;
pub mod handler;
pub mod socket_server;

pub use connection::ConnectionError;
pub use handler::{RequestContext, RequestHandler};
pub use socket_server::{NetworkConfig, ServedListener, SocketServer};

#[cfg(test)]
mod socket_server_fuzz_tests;
#[cfg(test)]
mod socket_server_limits_tests;
#[cfg(test)]
mod socket_server_tests;
#[cfg(test)]
mod test_support;
