//! `BrokerConnection`: one TCP connection to one broker, as the controller channel, replica
//! fetchers, CLI tools and tests use it.
//!
//! On connect it runs the ApiVersions handshake (KIP-511 fallback included) and keeps the
//! broker's version ranges. Requests are pipelined: callers encode their own frames and queue
//! them (see `in_flight` for the ordering invariant); a writer task owns the write half and a
//! reader task owns the read half and completes callers in order. A caller that stops waiting
//! cannot corrupt the stream, because frames are written whole by the writer task.
//!
//! With `ConnectionConfig::security` set, the socket is wrapped in TLS before anything is sent
//! and the SASL login follows the ApiVersions handshake (`security`); either failing fails the
//! connect.
//!
//! Owns the socket and nothing else: it does not reconnect (the pool does) and does not
//! interpret Kafka error codes inside responses.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestKind, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, trace};

use super::error::ClientError;
use super::in_flight::{CloseReason, Outgoing, Shared};
use super::security::{authenticate, host_of, relogin_at, ConnectionSecurity};
use super::versions::{read_api_versions_reply, ApiVersionRanges, ApiVersionsReply, API_VERSIONS_FIRST_VERSION};
use super::wire::{encode_request_frame, read_frame};

/// Sent in ApiVersions v3+ (KIP-511), so broker logs and metrics can tell kastle's own
/// inter-broker and tool traffic from client traffic.
const CLIENT_SOFTWARE_NAME: &str = "kastle";
const CLIENT_SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Frames the writer task coalesces into one write when callers queue faster than the socket.
const MAX_FRAMES_PER_WRITE: usize = 64;

/// Per-connection settings, with Kafka's client defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// TCP connect plus the ApiVersions handshake (`socket.connection.setup.timeout.ms`, 10 s).
    pub connect_timeout: Duration,
    /// Time a request may wait for its response (`request.timeout.ms`, 30 s).
    pub request_timeout: Duration,
    /// Larger response frames close the connection instead of being allocated (the broker's
    /// `socket.request.max.bytes` default, 100 MiB, which comfortably holds a 50 MiB fetch).
    pub max_response_bytes: usize,
    /// TLS and SASL on this connection (the inter-broker listener's protocol); none by default.
    pub security: ConnectionSecurity,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_response_bytes: 100 * 1024 * 1024,
            security: ConnectionSecurity::default(),
        }
    }
}

/// One connection to one broker; share it as `Arc<BrokerConnection>`. Dropping the last handle
/// closes the socket and fails whatever is still in flight with `Closed`.
#[derive(Debug)]
pub struct BrokerConnection {
    shared: Arc<Shared>,
    /// Sent in every request header; brokers use it in logs, quotas and metrics.
    client_id: StrBytes,
    request_timeout: Duration,
    /// The broker's ranges from the handshake. Fixed for the connection's life: a broker's
    /// versions only change across a restart, which drops the connection.
    api_versions: ApiVersionRanges,
    /// When the SASL session the broker granted is close to its end (KIP-368): from then on
    /// the connection is not [`usable`](Self::is_usable) and its owner connects anew.
    relogin_at: Option<Instant>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl BrokerConnection {
    /// Connects with default settings and `timeout` for the TCP connect plus handshake.
    pub async fn connect(
        addr: impl ToSocketAddrs + fmt::Display,
        client_id: &str,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        let config = ConnectionConfig {
            connect_timeout: timeout,
            ..ConnectionConfig::default()
        };
        Self::connect_with(addr, client_id, &config).await
    }

    /// Connects (with TLS if `config.security` says so), asks the broker for its API versions
    /// (ApiVersions v3, falling back per KIP-511), then logs in if `config.security` has a SASL
    /// login. Any failure before all that completes is a failed connect.
    pub async fn connect_with(
        addr: impl ToSocketAddrs + fmt::Display,
        client_id: &str,
        config: &ConnectionConfig,
    ) -> Result<Self, ClientError> {
        let name = addr.to_string();
        let setup = async {
            let stream = TcpStream::connect(addr).await.map_err(|source| ClientError::Connect {
                addr: name.clone(),
                source,
            })?;
            // Requests are small and latency-bound (controller RPCs, fetches); don't batch them.
            stream.set_nodelay(true).map_err(|source| ClientError::Connect {
                addr: name.clone(),
                source,
            })?;
            let mut connection = match &config.security.tls {
                None => {
                    let (read, write) = stream.into_split();
                    Self::start(read, write, name.clone(), client_id, config)
                }
                Some(tls) => {
                    let stream = crate::security::tls::client::connect(tls, host_of(&name), stream)
                        .await
                        .map_err(|e| ClientError::Connect {
                            addr: name.clone(),
                            source: io::Error::new(e.kind(), format!("TLS handshake failed: {e}")),
                        })?;
                    let (read, write) = tokio::io::split(stream);
                    Self::start(read, write, name.clone(), client_id, config)
                }
            };
            connection.api_versions = connection.negotiate_api_versions().await?;
            if let Some(login) = &config.security.sasl {
                let started = Instant::now();
                let lifetime = authenticate(&connection, login).await?;
                connection.relogin_at = lifetime.map(|l| relogin_at(started, l));
            }
            debug!(
                broker = %name,
                protocol = config.security.protocol_name(),
                versions = ?connection.api_versions,
                "connected"
            );
            Ok(connection)
        };
        match tokio::time::timeout(config.connect_timeout, setup).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Connect {
                addr: name,
                source: io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connection setup did not finish within {:?}", config.connect_timeout),
                ),
            }),
        }
    }

    fn start<R, W>(read: R, write: W, addr: String, client_id: &str, config: &ConnectionConfig) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing_tx, outgoing_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::new(addr, outgoing_tx));
        let reader = tokio::spawn(read_loop(read, Arc::clone(&shared), config.max_response_bytes));
        let writer = tokio::spawn(write_loop(write, outgoing_rx, Arc::clone(&shared)));
        BrokerConnection {
            shared,
            client_id: StrBytes::from_string(client_id.to_owned()),
            request_timeout: config.request_timeout,
            api_versions: ApiVersionRanges::default(),
            relogin_at: None,
            reader,
            writer,
        }
    }

    async fn negotiate_api_versions(&self) -> Result<ApiVersionRanges, ClientError> {
        let api = ApiKey::ApiVersions;
        let mut version = API_VERSIONS_FIRST_VERSION;
        // At most two rounds: KIP-511 retries once, at a strictly lower version.
        for _ in 0..2 {
            let mut request = ApiVersionsRequest::default();
            if version >= 3 {
                request = request
                    .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
                    .with_client_software_version(StrBytes::from_static_str(CLIENT_SOFTWARE_VERSION));
            }
            let body = self
                .round_trip(api, version, |buf| encode_body(&request, buf, version))
                .await?;
            match read_api_versions_reply(body, version).map_err(|reason| ClientError::Decode { api, reason })? {
                ApiVersionsReply::Accepted(ranges) => return Ok(ranges),
                ApiVersionsReply::RetryAt(lower) => {
                    debug!(broker = %self.addr(), from = version, to = lower, "ApiVersions unsupported; retrying (KIP-511)");
                    version = lower;
                }
                ApiVersionsReply::Failed { error } => {
                    return Err(ClientError::Protocol {
                        addr: self.addr().to_owned(),
                        reason: format!(
                            "ApiVersions v{version} failed with {} ({})",
                            crate::protocol::error_codes::name(error.code()),
                            error.code()
                        ),
                    });
                }
            }
        }
        Err(ClientError::UnsupportedVersion { api, version })
    }

    /// The broker address as given to `connect`.
    pub fn addr(&self) -> &str {
        self.shared.addr()
    }

    /// The version ranges the broker advertised.
    pub fn api_versions(&self) -> &ApiVersionRanges {
        &self.api_versions
    }

    /// The highest version of `api` within `ours` that the broker and the codec both support.
    pub fn version_for(&self, api: ApiKey, ours: (i16, i16)) -> Option<i16> {
        self.api_versions.version_for(api, ours)
    }

    /// Sends `request` at `version` and waits for its response (at most `request_timeout`;
    /// on timeout the connection is closed). Concurrent calls are pipelined.
    pub async fn send<R: Request>(&self, request: R, version: i16) -> Result<R::Response, ClientError> {
        let api = api_key_of::<R>()?;
        self.check_version(api, version)?;
        let mut body = self
            .round_trip(api, version, |buf| encode_body(&request, buf, version))
            .await?;
        R::Response::decode(&mut body, version).map_err(|e| ClientError::Decode {
            api,
            reason: format!("{e:#}"),
        })
    }

    /// Like [`send`](Self::send) for a request built at run time; `api` must be the key of
    /// `request`'s variant (it picks the header and the response decoder).
    pub async fn send_kind(
        &self,
        request: RequestKind,
        api: ApiKey,
        version: i16,
    ) -> Result<ResponseKind, ClientError> {
        self.check_version(api, version)?;
        let encode = |buf: &mut BytesMut| request.encode(buf, version).map_err(|e| format!("{e:#}"));
        let mut body = self.round_trip(api, version, encode).await?;
        ResponseKind::decode(api, &mut body, version).map_err(|e| ClientError::Decode {
            api,
            reason: format!("{e:#}"),
        })
    }

    /// Sends a request that gets no response (Produce with acks=0) and returns once it has
    /// been written to the socket, which is all Kafka's clients learn about such a request.
    pub async fn send_no_response<R: Request>(&self, request: R, version: i16) -> Result<(), ClientError> {
        let api = api_key_of::<R>()?;
        self.check_version(api, version)?;
        let frame = self.encode_frame(api, version, |buf| encode_body(&request, buf, version))?;
        let written = self.shared.submit_one_way(frame)?;
        match tokio::time::timeout(self.request_timeout, written).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.shared.close_error()),
            Err(_) => Err(self.time_out(api)),
        }
    }

    /// Closes the connection; requests in flight fail with `Closed`.
    pub fn close(&self) {
        self.shared.close(CloseReason::ByClient);
    }

    /// Whether the connection is closed (by either side); a closed connection stays closed.
    pub fn is_closed(&self) -> bool {
        self.shared.closed_at().is_some()
    }

    /// Whether new requests should go over this connection: it is open and its SASL session, if
    /// it has a lifetime, is not about to end. Owners replace an unusable connection.
    pub fn is_usable(&self) -> bool {
        !self.is_closed() && self.relogin_at.is_none_or(|at| Instant::now() < at)
    }

    /// When the connection closed, if it has.
    pub fn closed_at(&self) -> Option<Instant> {
        self.shared.closed_at()
    }

    /// Completes once the connection is closed.
    pub async fn closed(&self) {
        let mut closed = self.shared.subscribe_closed();
        // An error means the sender is gone, which only happens once `self` is gone too.
        let _ = closed.wait_for(|closed| *closed).await;
    }

    fn check_version(&self, api: ApiKey, version: i16) -> Result<(), ClientError> {
        if self.api_versions.supports(api, version) {
            Ok(())
        } else {
            Err(ClientError::UnsupportedVersion { api, version })
        }
    }

    fn encode_frame(
        &self,
        api: ApiKey,
        version: i16,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), String>,
    ) -> Result<BytesMut, ClientError> {
        encode_request_frame(api, version, &self.client_id, encode)
            .map_err(|reason| ClientError::Encode { api, reason })
    }

    async fn round_trip(
        &self,
        api: ApiKey,
        version: i16,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), String>,
    ) -> Result<Bytes, ClientError> {
        let frame = self.encode_frame(api, version, encode)?;
        let reply = self.shared.submit_request(frame, api, version)?;
        trace!(broker = %self.addr(), ?api, version, "request queued");
        match tokio::time::timeout(self.request_timeout, reply).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(self.shared.close_error()),
            Err(_) => Err(self.time_out(api)),
        }
    }

    fn time_out(&self, api: ApiKey) -> ClientError {
        let after = self.request_timeout;
        self.shared.close(CloseReason::RequestTimedOut { api, after });
        ClientError::Timeout {
            addr: self.addr().to_owned(),
            api,
            after,
        }
    }
}

impl Drop for BrokerConnection {
    fn drop(&mut self) {
        self.shared.close(CloseReason::ByClient);
        self.reader.abort();
        self.writer.abort();
    }
}

fn api_key_of<R: Request>() -> Result<ApiKey, ClientError> {
    ApiKey::try_from(R::KEY).map_err(|()| ClientError::UnknownApiKey { key: R::KEY })
}

fn encode_body(body: &impl Encodable, buf: &mut BytesMut, version: i16) -> Result<(), String> {
    body.encode(buf, version).map_err(|e| format!("{e:#}"))
}

/// Owns the read half: reads response frames and completes callers until EOF, an error, a
/// protocol violation, or a close from elsewhere.
async fn read_loop<R: AsyncRead + Unpin>(read: R, shared: Arc<Shared>, max_response_bytes: usize) {
    let mut closed = shared.subscribe_closed();
    let mut read = BufReader::new(read);
    let reason = loop {
        let frame = tokio::select! {
            frame = read_frame(&mut read, max_response_bytes) => frame,
            _ = closed.wait_for(|closed| *closed) => return,
        };
        match frame {
            Ok(Some(frame)) => {
                if let Err(reason) = shared.complete(frame) {
                    break reason;
                }
            }
            Ok(None) => break CloseReason::Eof,
            Err(e) => break CloseReason::from(e),
        }
    };
    shared.close(reason);
}

/// Owns the write half: writes queued frames whole and in queue order, coalescing a burst into
/// one write.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut write: W,
    mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
    shared: Arc<Shared>,
) {
    let mut closed = shared.subscribe_closed();
    let mut batch = Vec::with_capacity(MAX_FRAMES_PER_WRITE);
    loop {
        let first = tokio::select! {
            next = outgoing.recv() => next,
            _ = closed.wait_for(|closed| *closed) => None,
        };
        let Some(first) = first else { break };
        batch.push(first);
        while batch.len() < MAX_FRAMES_PER_WRITE {
            match outgoing.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let bytes = match batch.as_slice() {
            [one] => one.frame.clone(),
            many => {
                let mut joined = BytesMut::with_capacity(many.iter().map(|o| o.frame.len()).sum());
                many.iter().for_each(|o| joined.extend_from_slice(&o.frame));
                joined.freeze()
            }
        };
        let result = tokio::select! {
            result = write.write_all(&bytes) => result,
            _ = closed.wait_for(|closed| *closed) => break,
        };
        if let Err(e) = result {
            shared.close(CloseReason::Io {
                kind: e.kind(),
                message: e.to_string(),
            });
            break;
        }
        for written in batch.drain(..).filter_map(|o| o.written) {
            let _ = written.send(());
        }
    }
    // Dropping the write half sends FIN; the reader sees the broker's close.
    let _ = write.shutdown().await;
}
