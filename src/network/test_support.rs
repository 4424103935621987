//! Test fixtures for the network layer: a trivial [`RequestHandler`], a server on
//! 127.0.0.1:0, a raw Kafka client that encodes with the `kafka-protocol` crate, and
//! `wait_until` for conditions with a deadline (tests never sleep).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, RequestHeader, RequestKind,
    ResponseHeader, ResponseKind, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use super::handler::{Reply, RequestContext, RequestHandler};
use super::socket_server::{NetworkConfig, SocketServer};

/// How long any single network step in a test may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The topic name that makes [`TestHandler`] hold a Metadata request until released.
pub const SLOW_TOPIC: &str = "slow";

/// Answers Metadata with an empty response whose `cluster_id` echoes the first requested
/// topic (so tests can pair answers with requests), and Produce with an empty response unless
/// acks=0, which gets none. A Metadata request for [`SLOW_TOPIC`] reports on `started` and
/// waits for a permit on `release` first. An acks=-1 Produce is answered once a permit on
/// `replicated` is there, [`Reply::Later`] (as the broker's acks=all produce).
#[derive(Debug)]
pub struct TestHandler {
    pub started: mpsc::UnboundedSender<()>,
    pub release: Semaphore,
    pub replicated: Arc<Semaphore>,
}

async fn replicated(permits: Arc<Semaphore>) -> Option<ResponseKind> {
    let _permit = permits.acquire().await;
    Some(ResponseKind::Produce(ProduceResponse::default()))
}

impl RequestHandler for TestHandler {
    async fn reply(&self, ctx: RequestContext, request: RequestKind) -> Reply {
        match request {
            RequestKind::Produce(request) if request.acks == -1 => {
                Reply::Later(Box::pin(replicated(Arc::clone(&self.replicated))))
            }
            other => Reply::Now(self.handle(ctx, other).await),
        }
    }

    async fn handle(&self, _ctx: RequestContext, request: RequestKind) -> Option<ResponseKind> {
        match request {
            RequestKind::Metadata(request) => {
                let first = request
                    .topics
                    .as_ref()
                    .and_then(|t| t.first())
                    .and_then(|t| t.name.clone());
                if first.as_deref().map(|n| &**n) == Some(SLOW_TOPIC) {
                    let _ = self.started.send(());
                    let _permit = self.release.acquire().await;
                }
                let cluster_id = first.map(|name| name.0);
                Some(ResponseKind::Metadata(
                    MetadataResponse::default().with_cluster_id(cluster_id),
                ))
            }
            RequestKind::Produce(request) if request.acks == 0 => None,
            RequestKind::Produce(request) if request.acks == -1 => replicated(Arc::clone(&self.replicated)).await,
            RequestKind::Produce(_) => Some(ResponseKind::Produce(ProduceResponse::default())),
            _ => None,
        }
    }
}

/// A server on 127.0.0.1:0 with a [`TestHandler`].
#[derive(Debug)]
pub struct TestServer {
    pub server: SocketServer,
    pub addr: SocketAddr,
    pub handler: Arc<TestHandler>,
    /// Receives one message per slow request that reached the handler.
    pub started: mpsc::UnboundedReceiver<()>,
}

pub async fn start_server(config: NetworkConfig) -> anyhow::Result<TestServer> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (started_tx, started) = mpsc::unbounded_channel();
    let handler = Arc::new(TestHandler {
        started: started_tx,
        release: Semaphore::new(0),
        replicated: Arc::new(Semaphore::new(0)),
    });
    let server = SocketServer::start(vec![("PLAINTEXT".to_owned(), listener)], Arc::clone(&handler), config);
    Ok(TestServer {
        server,
        addr,
        handler,
        started,
    })
}

/// A Metadata request for one topic; v12 carries the `cluster_id` the test handler echoes.
pub fn metadata_request(topic: &str) -> RequestKind {
    let topic = MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(topic.to_owned()))));
    RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![topic])))
}

pub fn produce_request(acks: i16) -> RequestKind {
    RequestKind::Produce(ProduceRequest::default().with_acks(acks).with_timeout_ms(1000))
}

/// A client speaking raw Kafka frames.
#[derive(Debug)]
pub struct TestClient {
    pub stream: TcpStream,
    next_correlation_id: i32,
}

impl TestClient {
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = within_deadline("connect", TcpStream::connect(addr)).await??;
        Ok(Self {
            stream,
            next_correlation_id: 1,
        })
    }

    /// Encodes one request frame; returns it with its correlation id.
    pub fn frame(&mut self, api_key: ApiKey, version: i16, request: &RequestKind) -> anyhow::Result<(Bytes, i32)> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(api_key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("kastle-test")));
        let mut body = BytesMut::new();
        header.encode(&mut body, api_key.request_header_version(version))?;
        request.encode(&mut body, version)?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(i32::try_from(body.len())?);
        frame.put(body);
        Ok((frame.freeze(), correlation_id))
    }

    pub async fn send(&mut self, api_key: ApiKey, version: i16, request: &RequestKind) -> anyhow::Result<i32> {
        let (frame, correlation_id) = self.frame(api_key, version, request)?;
        self.send_raw(&frame).await?;
        Ok(correlation_id)
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        within_deadline("write", self.stream.write_all(bytes)).await??;
        Ok(())
    }

    /// Reads one response frame: the correlation id and the body bytes after the header.
    pub async fn receive_raw(&mut self, api_key: ApiKey, version: i16) -> anyhow::Result<(i32, Bytes)> {
        let size = within_deadline("read a response size", self.stream.read_i32()).await??;
        let mut frame = vec![0; usize::try_from(size)?];
        within_deadline("read a response body", self.stream.read_exact(&mut frame)).await??;
        let mut frame = Bytes::from(frame);
        let header = ResponseHeader::decode(&mut frame, api_key.response_header_version(version))?;
        Ok((header.correlation_id, frame))
    }

    /// Reads and decodes one response sent at `version`.
    pub async fn receive(&mut self, api_key: ApiKey, version: i16) -> anyhow::Result<(i32, ResponseKind)> {
        let (correlation_id, mut body) = self.receive_raw(api_key, version).await?;
        let response = ResponseKind::decode(api_key, &mut body, version)?;
        if body.has_remaining() {
            bail!(
                "{} bytes left after a {api_key:?} v{version} response",
                body.remaining()
            );
        }
        Ok((correlation_id, response))
    }

    /// One Metadata v12 round trip for `topic`, checking the answer belongs to it.
    pub async fn metadata_round_trip(&mut self, topic: &str) -> anyhow::Result<()> {
        let sent = self.send(ApiKey::Metadata, 12, &metadata_request(topic)).await?;
        let (received, response) = self.receive(ApiKey::Metadata, 12).await?;
        let ResponseKind::Metadata(response) = response else {
            bail!("not a metadata response: {response:?}")
        };
        if received != sent || response.cluster_id.as_deref() != Some(topic) {
            bail!("sent {sent} for {topic}, got {received} for {:?}", response.cluster_id);
        }
        Ok(())
    }

    /// Waits for the server to close the connection, failing if any byte arrives first.
    pub async fn expect_closed(&mut self) -> anyhow::Result<()> {
        let mut buf = [0u8; 64];
        match within_deadline("wait for the server to close", self.stream.read(&mut buf)).await? {
            Ok(0) => Ok(()),
            Ok(n) => bail!("expected the connection to close, got {n} bytes: {:02x?}", &buf[..n]),
            // A close with unread request bytes in the server's buffer arrives as a reset.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

pub async fn within_deadline<F: Future>(what: &str, future: F) -> anyhow::Result<F::Output> {
    tokio::time::timeout(DEADLINE, future)
        .await
        .with_context(|| format!("timed out: {what}"))
}

/// Polls `condition` until it holds, failing with `what` after [`DEADLINE`].
pub async fn wait_until<F, Fut>(what: &str, mut condition: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    within_deadline(what, async {
        while !condition().await {
            tokio::task::yield_now().await;
        }
    })
    .await
}
