//! One client connection: Kafka framing (4-byte big-endian size, then the request), request
//! headers, version checks, ApiVersions, and the hand-off to the [`RequestHandler`].
//!
//! Requests on a connection are handled one at a time, in arrival order, and responses leave in
//! request order: Kafka mutes a channel while its request is in flight and clients rely on
//! the ordering to match correlation ids. One departure: a request whose handler is done but
//! for a wait ([`Reply::Later`], an acks=all produce waiting for its followers) does not hold
//! the next request back; its response is written when it resolves, still in order (up to
//! [`MAX_PENDING_RESPONSES`] queued). Otherwise a client that pipelines (librdkafka, up to a
//! million requests in flight) gets one replication round trip per request, and falls behind. Anything a peer can get wrong (a bad size, an unknown
//! API key, an undecodable header or body, an unsupported version with no error response)
//! closes this connection only, with a log line naming the peer and the reason.
//!
//! Owns the socket and its bytes; must not touch broker state (that is the handler's).

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::buf::ChunkedBytesMut;
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use super::api_versions::{
    answer_api_versions, error_name, is_supported, unsupported_version_response, UNSUPPORTED_VERSION,
};
use super::authentication::{self, Authenticator};
use super::handler::{PendingResponse, Reply, RequestContext, RequestHandler};
use crate::security::sasl::config::ListenerSasl;
use crate::security::KafkaPrincipal;

/// Where the socket server is in its life; connections watch it to know when to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ServerState {
    Running,
    /// Read no new request; finish the one in flight and write its response.
    Draining,
    /// Stop now, even mid-request (the drain deadline passed).
    Closed,
}

/// Why a connection was closed by us.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("socket error: {source}")]
    Io {
        #[from]
        source: std::io::Error,
    },
    #[error("no activity for {idle:?} (connections.max.idle.ms)")]
    Idle { idle: Duration },
    #[error("invalid request size {size}")]
    NegativeSize { size: i32 },
    #[error("request size {size} is larger than socket.request.max.bytes = {max}")]
    RequestTooLarge { size: usize, max: usize },
    #[error("peer closed the connection {received} bytes into a {expected}-byte frame")]
    Truncated { expected: usize, received: usize },
    #[error("a {len}-byte request is too short for a request header")]
    NoHeader { len: usize },
    #[error("unknown API key {api_key}")]
    UnknownApiKey { api_key: i16 },
    #[error("undecodable {api_key:?} v{api_version} request header: {reason}")]
    BadHeader {
        api_key: ApiKey,
        api_version: i16,
        reason: String,
    },
    #[error("undecodable {api_key:?} v{api_version} request body: {reason}")]
    BadBody {
        api_key: ApiKey,
        api_version: i16,
        reason: String,
    },
    #[error("{api_key:?} v{api_version} is not a version we serve, and its response cannot carry the error")]
    UnsupportedVersion { api_key: ApiKey, api_version: i16 },
    #[error("SASL authentication: {reason}")]
    Authentication { reason: String },
    #[error("the handler's {api_key:?} v{api_version} response cannot be encoded: {reason}")]
    UnencodableResponse {
        api_key: ApiKey,
        api_version: i16,
        reason: String,
    },
}

impl ConnectionError {
    /// Ordinary network weather (resets, idleness) rather than a peer breaking the protocol.
    fn is_routine(&self) -> bool {
        // Failed logins are routine too: a password-guessing storm must not flood the log.
        matches!(
            self,
            Self::Io { .. } | Self::Idle { .. } | Self::Truncated { .. } | Self::Authentication { .. }
        )
    }
}

/// How a connection ended without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    PeerClosed,
    ServerShutdown,
}

/// A connection's socket, limits and the handler its requests go to. Generic over the read and
/// write halves: a plaintext connection owns the TCP socket's halves directly (no boxing, no
/// copies), a TLS one the halves of its TLS stream; both run the same request loop.
#[derive(Debug)]
pub(crate) struct Connection<H, R = OwnedReadHalf, W = OwnedWriteHalf> {
    /// Buffered so that pipelined small requests cost one read, not two per frame.
    reader: BufReader<R>,
    writer: W,
    peer: SocketAddr,
    listener: String,
    /// Who the peer authenticated as; stamped on every request.
    principal: Arc<KafkaPrincipal>,
    handler: Arc<H>,
    /// `socket.request.max.bytes`: the largest frame we will buffer.
    max_request_bytes: usize,
    /// `connections.max.idle.ms`: how long a read or write may make no progress.
    idle: Duration,
    /// The SASL exchange, on a SASL listener (see [`authentication`]).
    authenticator: Option<Authenticator>,
}

impl<H: RequestHandler> Connection<H> {
    pub(crate) fn new(
        stream: TcpStream,
        peer: SocketAddr,
        listener: String,
        handler: Arc<H>,
        max_request_bytes: usize,
        idle: Duration,
        sasl: Option<Arc<ListenerSasl>>,
    ) -> Self {
        let (reader, writer) = stream.into_split();
        let principal = Arc::new(KafkaPrincipal::anonymous());
        Connection::from_halves(
            reader,
            writer,
            peer,
            listener,
            principal,
            handler,
            max_request_bytes,
            idle,
        )
        .with_sasl(sasl)
    }
}

impl<H: RequestHandler, R, W> Connection<H, R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    /// A connection over any byte stream's halves (a TLS stream's), for `principal`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_halves(
        reader: R,
        writer: W,
        peer: SocketAddr,
        listener: String,
        principal: Arc<KafkaPrincipal>,
        handler: Arc<H>,
        max_request_bytes: usize,
        idle: Duration,
    ) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer,
            peer,
            listener,
            principal,
            handler,
            max_request_bytes,
            idle,
            authenticator: None,
        }
    }

    /// On a SASL listener: authenticate before serving anything else (see [`authentication`]).
    pub(crate) fn with_sasl(mut self, sasl: Option<Arc<ListenerSasl>>) -> Self {
        self.authenticator = sasl.map(Authenticator::new);
        self
    }

    /// Serves requests until the peer leaves, a request is bad, or the server shuts down.
    pub(crate) async fn run(mut self, mut state: watch::Receiver<ServerState>) {
        let peer = self.peer;
        let listener = self.listener.clone();
        match self.serve(&mut state).await {
            Ok(ended) => debug!(%peer, %listener, ?ended, "connection ended"),
            Err(error) if error.is_routine() => debug!(%peer, %listener, reason = %error, "closing connection"),
            Err(error) => warn!(%peer, %listener, reason = %error, "closing connection"),
        }
    }

    async fn serve(&mut self, state: &mut watch::Receiver<ServerState>) -> Result<Ended, ConnectionError> {
        // SASL listeners: authenticate before serving anything else.
        if let Some(auth) = self.authenticator.as_mut() {
            tokio::select! {
                biased;
                () = reached(state, ServerState::Draining) => return Ok(Ended::ServerShutdown),
                done = authentication::authenticate(auth, &mut self.reader, &mut self.writer, self.idle) => done?,
            }
            if let Some(principal) = auth.principal() {
                self.principal = Arc::new(principal.clone());
            }
        }
        let (queue, responses) = mpsc::channel(MAX_PENDING_RESPONSES);
        let requests = Requests {
            reader: &mut self.reader,
            peer: self.peer,
            listener: &self.listener,
            principal: &self.principal,
            handler: &self.handler,
            max_request_bytes: self.max_request_bytes,
            idle: self.idle,
            authenticator: self.authenticator.as_mut(),
        };
        let reading = requests.run(state.clone(), queue);
        let writing = write_responses(&mut self.writer, responses, self.idle);
        tokio::pin!(reading, writing);
        let ended = tokio::select! {
            biased;
            () = reached(state, ServerState::Closed) => return Ok(Ended::ServerShutdown),
            ended = &mut reading => ended,
            // The writer ends first only on a socket error: the queue stays open while the
            // reader runs.
            written = &mut writing => {
                written?;
                return reading.await;
            }
        };
        // Every request read before the end (a bad frame included) gets its response written;
        // only the hard stop interrupts that.
        tokio::select! {
            biased;
            () = reached(state, ServerState::Closed) => Ok(Ended::ServerShutdown),
            written = writing => written.and(ended),
        }
    }
}

/// Responses queued on a connection and not yet written, at most: beyond that the connection
/// reads no further request (the peer's requests wait in the socket).
const MAX_PENDING_RESPONSES: usize = 100;

/// A response in a connection's write queue.
enum Outgoing {
    /// Encoded: the frame's chunks (record data referenced, not copied).
    Ready(Vec<Bytes>),
    /// A [`Reply::Later`]: encoded and written once it resolves and everything before it is
    /// written.
    Waiting {
        response: PendingResponse,
        api_key: ApiKey,
        correlation_id: i32,
        version: i16,
    },
}

/// Writes the queued responses in order, waiting for each pending one in turn.
async fn write_responses<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut queue: mpsc::Receiver<Outgoing>,
    idle: Duration,
) -> Result<(), ConnectionError> {
    while let Some(out) = queue.recv().await {
        let chunks = match out {
            Outgoing::Ready(chunks) => chunks,
            Outgoing::Waiting {
                response,
                api_key,
                correlation_id,
                version,
            } => match response.await {
                Some(response) => encode_response(api_key, correlation_id, &response, version)?,
                None => continue,
            },
        };
        with_idle_limit(idle, write_all_chunks(writer, &chunks)).await?;
    }
    Ok(())
}

/// The reading half of a connection: requests one at a time, in arrival order, each handled
/// until its handler returns (its effects done) before the next is read; the answers go to
/// the write queue.
struct Requests<'a, H, R> {
    reader: &'a mut BufReader<R>,
    peer: SocketAddr,
    listener: &'a str,
    principal: &'a Arc<KafkaPrincipal>,
    handler: &'a Arc<H>,
    max_request_bytes: usize,
    idle: Duration,
    authenticator: Option<&'a mut Authenticator>,
}

impl<H: RequestHandler, R: AsyncRead + Unpin> Requests<'_, H, R> {
    async fn run(
        mut self,
        mut state: watch::Receiver<ServerState>,
        queue: mpsc::Sender<Outgoing>,
    ) -> Result<Ended, ConnectionError> {
        loop {
            let frame = tokio::select! {
                biased;
                () = reached(&mut state, ServerState::Draining) => return Ok(Ended::ServerShutdown),
                frame = read_frame(&mut *self.reader, self.max_request_bytes, self.idle) => frame?,
            };
            let Some(frame) = frame else {
                return Ok(Ended::PeerClosed);
            };
            if let Some(out) = self.process(frame).await? {
                // A full queue holds the next read back; a closed one means the writer failed,
                // and that error ends the connection.
                if queue.send(out).await.is_err() {
                    return Ok(Ended::PeerClosed);
                }
            }
        }
    }

    async fn process(&mut self, mut frame: Bytes) -> Result<Option<Outgoing>, ConnectionError> {
        let (api_key, api_version) = peek_api(&frame)?;
        let header = RequestHeader::decode(&mut frame, api_key.request_header_version(api_version)).map_err(|e| {
            ConnectionError::BadHeader {
                api_key,
                api_version,
                reason: format!("{e:#}"),
            }
        })?;
        let correlation_id = header.correlation_id;
        if let Some(response) =
            authentication::intercept(self.authenticator.as_deref_mut(), api_key, api_version, &mut frame)?
        {
            return encode_response(api_key, correlation_id, &response, api_version).map(|b| Some(Outgoing::Ready(b)));
        }

        let (response, encode_at) = if api_key == ApiKey::ApiVersions {
            let (response, encode_at) = api_versions_answer(&mut frame, api_version)?;
            (Some(response), encode_at)
        } else if is_supported(api_key, api_version) {
            let request =
                RequestKind::decode(api_key, &mut frame, api_version).map_err(undecodable(api_key, api_version))?;
            count_request(api_key, api_version, fetch_metric_name(&request));
            let ctx = RequestContext {
                header,
                api_key,
                api_version,
                peer: self.peer,
                listener: self.listener.to_string(),
                principal: Arc::clone(self.principal),
            };
            match self.handler.reply(ctx, request).await {
                Reply::Now(response) => (response, api_version),
                Reply::Later(response) => {
                    return Ok(Some(Outgoing::Waiting {
                        response,
                        api_key,
                        correlation_id,
                        version: api_version,
                    }))
                }
            }
        } else {
            let Some(response) = unsupported_version_response(api_key, api_version) else {
                return Err(ConnectionError::UnsupportedVersion { api_key, api_version });
            };
            count_request(api_key, api_version, None);
            count_error(api_key, UNSUPPORTED_VERSION);
            (Some(response), api_version)
        };

        // `None` is a request with no response (Produce with acks=0): write nothing.
        let Some(response) = response else { return Ok(None) };
        encode_response(api_key, correlation_id, &response, encode_at).map(|b| Some(Outgoing::Ready(b)))
    }
}

/// Writes `chunks` back to back with vectored writes: a fetch response's record data goes from
/// the buffer the log read it into straight to the socket.
pub(super) async fn write_all_chunks<W: AsyncWrite + Unpin>(writer: &mut W, chunks: &[Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = chunks.iter().map(|c| IoSlice::new(c)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = writer.write_vectored(rest).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    Ok(())
}

/// ApiVersions is answered here, not by the handler (as Kafka's network layer intercepts it
/// for KIP-511). An unsupported version's body is not parsed: its layout is unknown.
pub(super) fn api_versions_answer(body: &mut Bytes, api_version: i16) -> Result<(ResponseKind, i16), ConnectionError> {
    let api_key = ApiKey::ApiVersions;
    let request = if is_supported(api_key, api_version) {
        Some(ApiVersionsRequest::decode(body, api_version).map_err(undecodable(api_key, api_version))?)
    } else {
        None
    };
    let (response, encode_at) = answer_api_versions(api_version, request.as_ref());
    count_request(api_key, api_version, None);
    count_error(api_key, response.error_code);
    Ok((ResponseKind::ApiVersions(response), encode_at))
}

fn undecodable<E: std::fmt::Display>(api_key: ApiKey, api_version: i16) -> impl FnOnce(E) -> ConnectionError {
    move |e| ConnectionError::BadBody {
        api_key,
        api_version,
        reason: format!("{e:#}"),
    }
}

/// Waits until the server reaches `at_least` (or is gone, which counts as closed).
async fn reached(state: &mut watch::Receiver<ServerState>, at_least: ServerState) {
    // An error means the sender is dropped: the server no longer exists, so stop.
    let _ = state.wait_for(|current| *current >= at_least).await;
}

/// Reads one frame; `None` when the peer closed cleanly between frames.
///
/// Mirrors Kafka's `NetworkReceive`: a negative size or one above `socket.request.max.bytes`
/// is rejected before anything is allocated. The body buffer then grows as bytes arrive, so
/// a peer that announces a large frame and sends nothing holds no memory for it.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_request_bytes: usize,
    idle: Duration,
) -> Result<Option<Bytes>, ConnectionError> {
    const GROWTH: usize = 1 << 20;
    let mut size_bytes = [0u8; 4];
    let mut filled = 0;
    while filled < size_bytes.len() {
        let n = with_idle_limit(idle, reader.read(&mut size_bytes[filled..])).await?;
        if n == 0 {
            if filled == 0 {
                return Ok(None);
            }
            return Err(ConnectionError::Truncated {
                expected: 4,
                received: filled,
            });
        }
        filled += n;
    }
    let size = i32::from_be_bytes(size_bytes);
    let size = usize::try_from(size).map_err(|_| ConnectionError::NegativeSize { size })?;
    if size > max_request_bytes {
        return Err(ConnectionError::RequestTooLarge {
            size,
            max: max_request_bytes,
        });
    }
    let mut body = BytesMut::with_capacity(size.min(GROWTH));
    while body.len() < size {
        let missing = size - body.len();
        body.reserve(missing.min(GROWTH));
        // `take` keeps the read inside this frame; the next frame stays in the buffer.
        let n = with_idle_limit(idle, (&mut *reader).take(missing as u64).read_buf(&mut body)).await?;
        if n == 0 {
            return Err(ConnectionError::Truncated {
                expected: size,
                received: body.len(),
            });
        }
    }
    Ok(Some(body.freeze()))
}

/// Runs one read or write, failing if it makes no progress within `idle`.
async fn with_idle_limit<T>(
    idle: Duration,
    io: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T, ConnectionError> {
    match tokio::time::timeout(idle, io).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(ConnectionError::Idle { idle }),
    }
}

/// The API key and version every request header starts with.
pub(super) fn peek_api(frame: &[u8]) -> Result<(ApiKey, i16), ConnectionError> {
    let [k0, k1, v0, v1, ..] = *frame else {
        return Err(ConnectionError::NoHeader { len: frame.len() });
    };
    let raw_key = i16::from_be_bytes([k0, k1]);
    let api_key = ApiKey::try_from(raw_key).map_err(|()| ConnectionError::UnknownApiKey { api_key: raw_key })?;
    Ok((api_key, i16::from_be_bytes([v0, v1])))
}

/// `Bytes` fields at least this large (fetched record data) are sent by reference rather than
/// copied into the response buffer.
const MIN_SHARED_BYTES: usize = 4096;

/// Size prefix, response header (same correlation id) and body, as chunks for one vectored
/// write: the copied parts in one buffer sized up front from `compute_size`, and each large
/// `Bytes` field (a fetch's records) as its own chunk, referenced, not copied. The chunks back
/// to back are the frame.
pub(super) fn encode_response(
    api_key: ApiKey,
    correlation_id: i32,
    response: &ResponseKind,
    version: i16,
) -> Result<Vec<Bytes>, ConnectionError> {
    let unencodable = |reason: String| ConnectionError::UnencodableResponse {
        api_key,
        api_version: version,
        reason,
    };
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = api_key.response_header_version(version);
    let size = header
        .compute_size(header_version)
        .and_then(|h| Ok(h + response.compute_size(version)?))
        .map_err(|e| unencodable(format!("{e:#}")))?;
    let size_field = i32::try_from(size).map_err(|_| unencodable(format!("{size} bytes")))?;
    let copied = (4 + size).saturating_sub(shared_bytes(response));
    let mut buf = ChunkedBytesMut::with_capacity(copied, MIN_SHARED_BYTES);
    buf.put_i32(size_field);
    header
        .encode(&mut buf, header_version)
        .map_err(|e| unencodable(format!("{e:#}")))?;
    response
        .encode_into(&mut buf, version)
        .map_err(|e| unencodable(format!("{e:#}")))?;
    if buf.len() != 4 + size {
        return Err(unencodable(format!(
            "encoded {} bytes, computed {}",
            buf.len() - 4,
            size
        )));
    }
    Ok(buf.into_chunks())
}

/// How many bytes of `response` [`encode_response`] will reference instead of copying.
fn shared_bytes(response: &ResponseKind) -> usize {
    let ResponseKind::Fetch(fetch) = response else {
        return 0;
    };
    fetch
        .responses
        .iter()
        .flat_map(|topic| &topic.partitions)
        .filter_map(|partition| partition.records.as_ref().map(Bytes::len))
        .filter(|&len| len >= MIN_SHARED_BYTES)
        .sum()
}

/// Kafka also counts a Fetch under `FetchFollower` or `FetchConsumer` (`RequestChannel`).
fn fetch_metric_name(request: &RequestKind) -> Option<&'static str> {
    let RequestKind::Fetch(fetch) = request else {
        return None;
    };
    // `replica_id` up to v14, `replica_state.replica_id` from v15; the unused one stays -1.
    let from_follower = fetch.replica_id.0 >= 0 || fetch.replica_state.replica_id.0 >= 0;
    Some(if from_follower {
        "FetchFollower"
    } else {
        "FetchConsumer"
    })
}

/// `kafka.network:type=RequestMetrics,name=RequestsPerSec,request=…,version=…` as the JMX
/// exporter names it.
fn count_request(api_key: ApiKey, version: i16, also_as: Option<&'static str>) {
    let version = version.to_string();
    let name = format!("{api_key:?}");
    metrics::counter!("kafka_network_requestmetrics_requests_total", "request" => name, "version" => version.clone())
        .increment(1);
    if let Some(alias) = also_as {
        metrics::counter!("kafka_network_requestmetrics_requests_total", "request" => alias, "version" => version)
            .increment(1);
    }
}

/// `…RequestMetrics,name=ErrorsPerSec,request=…,error=…`, for responses the network layer writes.
fn count_error(api_key: ApiKey, code: i16) {
    metrics::counter!(
        "kafka_network_requestmetrics_errors_total",
        "request" => format!("{api_key:?}"),
        "error" => error_name(code)
    )
    .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_frame_is_read_exactly_leaving_the_next_one_in_the_stream() -> anyhow::Result<()> {
        let mut wire: &[u8] = &[0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 1, b'z'];
        let idle = Duration::from_secs(5);
        assert_eq!(read_frame(&mut wire, 16, idle).await?.as_deref(), Some(&b"abc"[..]));
        assert_eq!(read_frame(&mut wire, 16, idle).await?.as_deref(), Some(&b"z"[..]));
        assert_eq!(read_frame(&mut wire, 16, idle).await?, None);
        Ok(())
    }

    #[tokio::test]
    async fn bad_sizes_and_short_frames_are_errors() {
        let idle = Duration::from_secs(5);
        let mut negative: &[u8] = &[0xff, 0xff, 0xff, 0xfe];
        let mut too_large: &[u8] = &[0, 0, 0, 17];
        let mut short_size: &[u8] = &[0, 0];
        let mut short_body: &[u8] = &[0, 0, 0, 5, 1, 2];
        assert!(matches!(
            read_frame(&mut negative, 16, idle).await,
            Err(ConnectionError::NegativeSize { size: -2 })
        ));
        assert!(matches!(
            read_frame(&mut too_large, 16, idle).await,
            Err(ConnectionError::RequestTooLarge { size: 17, max: 16 })
        ));
        assert!(matches!(
            read_frame(&mut short_size, 16, idle).await,
            Err(ConnectionError::Truncated {
                expected: 4,
                received: 2
            })
        ));
        assert!(matches!(
            read_frame(&mut short_body, 16, idle).await,
            Err(ConnectionError::Truncated {
                expected: 5,
                received: 2
            })
        ));
    }

    #[test]
    fn unknown_api_keys_and_headerless_frames_are_rejected_before_decoding() {
        assert!(matches!(peek_api(&[0, 3, 0, 12, 9]), Ok((ApiKey::Metadata, 12))));
        assert!(matches!(
            peek_api(&[3, 0xe7, 0, 0]),
            Err(ConnectionError::UnknownApiKey { api_key: 999 })
        ));
        assert!(matches!(
            peek_api(&[0, 3, 0]),
            Err(ConnectionError::NoHeader { len: 3 })
        ));
    }

    /// The frame as one contiguous `BytesMut` encoding gives it (what kastle sent before chunks).
    fn contiguous_frame(correlation_id: i32, response: &ResponseKind, version: i16) -> Vec<u8> {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[0; 4]);
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(&mut buf, ApiKey::Fetch.response_header_version(version))
            .expect("header");
        response.encode(&mut buf, version).expect("body");
        let size = i32::try_from(buf.len() - 4).expect("size").to_be_bytes();
        buf[..4].copy_from_slice(&size);
        buf.to_vec()
    }

    #[tokio::test]
    async fn a_fetch_response_sent_as_chunks_is_byte_identical_and_references_the_records() {
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        use kafka_protocol::messages::{FetchResponse, TopicName};
        let large = Bytes::from((0..20_000u32).map(|i| i as u8).collect::<Vec<u8>>());
        let small = Bytes::from_static(b"a few record bytes");
        let partitions = vec![
            PartitionData::default()
                .with_partition_index(0)
                .with_records(Some(large.clone())),
            PartitionData::default()
                .with_partition_index(1)
                .with_records(Some(small)),
            PartitionData::default().with_partition_index(2).with_records(None),
            PartitionData::default()
                .with_partition_index(3)
                .with_records(Some(large.slice(100..9_000))),
        ];
        let fetch = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
            .with_topic(TopicName("orders".into()))
            .with_partitions(partitions)]);
        let response = ResponseKind::Fetch(fetch);
        for version in [4, 11, 12, 16] {
            let chunks = encode_response(ApiKey::Fetch, 7, &response, version).expect("encodes");
            let assembled: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            assert_eq!(assembled, contiguous_frame(7, &response, version), "v{version}");
            // The large records are the log's buffer itself, not a copy; the small ones are copied.
            assert!(chunks
                .iter()
                .any(|c| c.as_ptr() == large.as_ptr() && c.len() == large.len()));
            assert!(chunks.iter().any(|c| c.as_ptr() == large[100..].as_ptr()));
            assert!(
                chunks.len() >= 4,
                "v{version}: head, large, middle, slice of large (, tail)"
            );
            let mut wire = Vec::new();
            write_all_chunks(&mut wire, &chunks).await.expect("written");
            assert_eq!(wire, assembled);
        }
    }

    #[test]
    fn responses_without_large_bytes_are_one_chunk_of_exactly_the_computed_size() {
        let response = ResponseKind::ApiVersions(answer_api_versions(3, None).0);
        let chunks = encode_response(ApiKey::ApiVersions, 1, &response, 3).expect("encodes");
        assert_eq!(chunks.len(), 1);
        let size = i32::from_be_bytes([chunks[0][0], chunks[0][1], chunks[0][2], chunks[0][3]]);
        assert_eq!(usize::try_from(size).ok(), Some(chunks[0].len() - 4));
    }
}
