//! Security: who a connection is ([`KafkaPrincipal`]), how it proved it (TLS and SASL, at the
//! network edge) and what it may do (the ACL authorizer). The network layer authenticates a
//! connection once and stamps every request's [`RequestContext`](crate::network::RequestContext)
//! with the principal; handlers ask the authorizer, never the socket.

pub mod authorizer;
pub mod jaas;
mod principal;
pub mod sasl;
pub mod tls;

pub use principal::{KafkaPrincipal, PrincipalParseError};
