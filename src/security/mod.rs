//! Security: who a connection is ([`KafkaPrincipal`]), how it proved it (TLS and SASL, at the
//! network edge) and what it may do (the ACL authorizer). The network layer authenticates a
//! connection once and stamps every request's [`RequestContext`](crate::network::RequestContext)
//! with the principal; handlers ask the authorizer, never the socket. The broker's own
//! connections to other brokers are secured as the inter-broker listener demands
//! ([`inter_broker`]).

pub mod authorizer;
pub mod inter_broker;
pub mod jaas;
mod principal;
pub mod sasl;
pub mod tls;

pub use principal::{KafkaPrincipal, PrincipalParseError};
