//! The one error type of the internal client.
//!
//! Every variant names the broker (or the API) so a log line is actionable on its own. Blast
//! radius: `Io`, `Timeout`, `Protocol`, `Authentication` and `Closed` mean the connection is
//! gone (the pool reconnects on the next call); `Encode`, `Decode`, `UnsupportedVersion` and
//! `UnknownApiKey` concern one request and leave the connection usable. Kafka error codes
//! inside a response body are response data, not `ClientError`s.

use std::io;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

/// Why a connection or a request to a broker failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The TCP connection (or its ApiVersions handshake) could not be set up in time.
    #[error("cannot connect to broker {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// Reading from or writing to an established connection failed; the connection is closed.
    #[error("I/O error on the connection to broker {addr}: {source}")]
    Io {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// No response within `request_timeout`. The connection is closed, as Kafka's
    /// `NetworkClient` does, because a late reply would otherwise arrive for a forgotten request.
    #[error("{api:?} request to broker {addr} got no response within {after:?}; connection closed")]
    Timeout { addr: String, api: ApiKey, after: Duration },
    /// The broker sent something that breaks the framing or request/response matching
    /// (unknown or out-of-order correlation id, bad response header, oversized frame).
    #[error("broker {addr} broke the protocol ({reason}); connection closed")]
    Protocol { addr: String, reason: String },
    /// The request body could not be encoded at the chosen version.
    #[error("cannot encode a {api:?} request: {reason}")]
    Encode { api: ApiKey, reason: String },
    /// The response body could not be decoded at the request's version.
    #[error("cannot decode a {api:?} response: {reason}")]
    Decode { api: ApiKey, reason: String },
    /// The version is outside what the codec or the broker (per its ApiVersions reply) supports.
    #[error("{api:?} v{version} is not supported by this client's codec or by the broker")]
    UnsupportedVersion { api: ApiKey, version: i16 },
    /// A request type whose key the codec's `ApiKey` does not know (a codec mismatch).
    #[error("request type has API key {key}, which the codec does not know")]
    UnknownApiKey { key: i16 },
    /// The connection was closed (by the broker, or by this side) before the request completed.
    #[error("the connection to broker {addr} is closed")]
    Closed { addr: String },
    /// The broker refused the SASL login (or the exchange broke); the connection is closed.
    #[error("SASL {mechanism} authentication to broker {addr} failed: {reason}")]
    Authentication {
        addr: String,
        mechanism: &'static str,
        reason: String,
    },
    /// The pool was asked for a broker id it has no address for.
    #[error("no address is known for broker {broker_id}")]
    UnknownBroker { broker_id: i32 },
}
