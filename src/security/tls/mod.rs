//! TLS for SSL listeners and inter-broker connections (rustls with the ring provider, passed
//! explicitly).
//!
//! | module | owns |
//! |---|---|
//! | [`settings`] | per-listener resolution of the `ssl.*` keys (`listener.name.<l>.ssl.*` first) |
//! | [`keys`] | reading PEM and PKCS12 keystores and truststores (JKS refused with the conversion) |
//! | [`principal`] | the client certificate's DN and `ssl.principal.mapping.rules` |
//! | [`server`] | the listener's `ServerConfig`, reload, and the handshake |
//! | [`client`] | the `ClientConfig` of inter-broker connections |

pub mod client;
pub mod keys;
pub mod principal;
pub mod server;
pub mod settings;

pub use server::{HandshakeError, TlsServer};
pub use settings::{TlsConfigError, TlsSettings};
