//! The seam between the socket server and the broker's API handlers: the network layer
//! decodes a request and hands it over with its context; the handler answers with a response
//! body (or none, for produce with acks=0), now or later ([`Reply`]). The network layer owns
//! framing, headers, version checks and ApiVersions; handlers never see bytes on the wire.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};

use crate::security::KafkaPrincipal;

/// Who sent a request, and how.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub api_version: i16,
    pub peer: SocketAddr,
    /// Name of the listener the connection came in on (e.g. `PLAINTEXT`, `INTERNAL`).
    pub listener: String,
    /// Who the connection authenticated as (`User:ANONYMOUS` when it did not).
    pub principal: Arc<KafkaPrincipal>,
}

/// A response that is still being waited for.
pub type PendingResponse = Pin<Box<dyn Future<Output = Option<ResponseKind>> + Send + 'static>>;

/// A handler's answer to one request.
// `Now` is the common case, moved once per request: boxing it would allocate per request.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// The response body, or `None` for a request that gets no response (acks=0).
    Now(Option<ResponseKind>),
    /// The request has had all its effects (an acks=all produce's records are appended) and
    /// only its response waits on others (the followers: Kafka's `DelayedProduce`). The
    /// connection goes on to the requests after it while this resolves, and still writes
    /// every response in request order.
    Later(PendingResponse),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Now(r) => f.debug_tuple("Now").field(r).finish(),
            Reply::Later(_) => f.write_str("Later(..)"),
        }
    }
}

/// Answers decoded requests. Implemented by the broker's API layer (`server::apis`).
pub trait RequestHandler: Send + Sync + 'static {
    /// Returns the response body, or `None` when the request gets no response at all
    /// (Produce with acks=0). The response must be encodable at `ctx.api_version`.
    fn handle(&self, ctx: RequestContext, request: RequestKind) -> impl Future<Output = Option<ResponseKind>> + Send;

    /// What the connection calls: [`handle`](Self::handle)'s answer, unless the handler can
    /// hand back a response that only waits ([`Reply::Later`]). The next request on the
    /// connection starts once this returns, so its effects follow this one's.
    fn reply(&self, ctx: RequestContext, request: RequestKind) -> impl Future<Output = Reply> + Send {
        async move { Reply::Now(self.handle(ctx, request).await) }
    }
}
