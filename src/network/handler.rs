//! The seam between the socket server and the broker's API handlers: the network layer
//! decodes a request and hands it over with its context; the handler answers with a response
//! body (or none, for produce with acks=0). The network layer owns framing, headers, version
//! checks and ApiVersions; handlers never see bytes on the wire.

use std::future::Future;
use std::net::SocketAddr;

use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};

/// Who sent a request, and how.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub api_version: i16,
    pub peer: SocketAddr,
    /// Name of the listener the connection came in on (e.g. `PLAINTEXT`, `INTERNAL`).
    pub listener: String,
}

/// Answers decoded requests. Implemented by the broker's API layer (`server::apis`).
pub trait RequestHandler: Send + Sync + 'static {
    /// Returns the response body, or `None` when the request gets no response at all
    /// (Produce with acks=0). The response must be encodable at `ctx.api_version`.
    fn handle(&self, ctx: RequestContext, request: RequestKind) -> impl Future<Output = Option<ResponseKind>> + Send;
}
