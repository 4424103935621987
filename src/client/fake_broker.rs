//! A tiny scriptable broker for the client's tests: a `TcpListener` on 127.0.0.1:0 that decodes
//! request headers with the codec and answers ApiVersions, Metadata and Produce.
//!
//! Misbehaviour is chosen per request by the first Metadata topic name, so one fake serves
//! every test:
//!
//! | topic | the fake… |
//! |---|---|
//! | `ignore` | never answers |
//! | `close` | closes the connection without answering |
//! | `wrong-id` | answers with a correlation id nobody used |
//! | `hold` | answers only after answering the next request (out of order) |
//! | `gather-N-…` | holds answers until N such requests are buffered, then answers all in order |
//! | anything else | answers at once, echoing the topic names |
//!
//! Everything it sees is reported as an [`Event`] so tests can wait for it with a deadline.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::wire::{read_frame, split_request_header};

/// How long a test waits for the fake to see something before failing.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// How the fake handles connections; can be changed while it runs.
#[derive(Debug, Clone)]
pub struct Script {
    /// Highest ApiVersions version answered normally; above it, the KIP-511 v0 error-35 reply.
    pub api_versions_max: i16,
    /// Whether the error-35 reply lists the api keys (Kafka ≥ 2.4 does).
    pub keys_in_error_reply: bool,
    /// Accept connections and close them at once, like a broker shutting down.
    pub refuse: bool,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            api_versions_max: 3,
            keys_in_error_reply: true,
            refuse: false,
        }
    }
}

/// What the fake saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Accepted(Instant),
    Request {
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        client_id: Option<String>,
        topic: Option<String>,
    },
    Produce {
        acks: i16,
    },
}

#[derive(Debug)]
pub struct FakeBroker {
    pub addr: SocketAddr,
    script: Arc<Mutex<Script>>,
    events: mpsc::UnboundedReceiver<Event>,
    accept_loop: JoinHandle<()>,
}

impl FakeBroker {
    pub async fn start(script: Script) -> FakeBroker {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("listener has an address");
        let script = Arc::new(Mutex::new(script));
        let (events_tx, events) = mpsc::unbounded_channel();
        let accept_loop = tokio::spawn(accept_loop(listener, Arc::clone(&script), events_tx));
        FakeBroker {
            addr,
            script,
            events,
            accept_loop,
        }
    }

    pub fn set_script(&self, script: Script) {
        *self.script.lock().unwrap_or_else(PoisonError::into_inner) = script;
    }

    /// The next event, failing the test if none comes within [`DEADLINE`].
    pub async fn next_event(&mut self) -> Event {
        match tokio::time::timeout(DEADLINE, self.events.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => panic!("fake broker stopped"),
            Err(_) => panic!("fake broker saw nothing within {DEADLINE:?}"),
        }
    }

    /// The next event `pick` accepts, skipping others.
    pub async fn next_matching<T>(&mut self, mut pick: impl FnMut(Event) -> Option<T>) -> T {
        loop {
            if let Some(found) = pick(self.next_event().await) {
                return found;
            }
        }
    }

    /// Events already reported, without waiting.
    pub fn drain_events(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.events.try_recv().ok()).collect()
    }
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

async fn accept_loop(listener: TcpListener, script: Arc<Mutex<Script>>, events: mpsc::UnboundedSender<Event>) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        let _ = events.send(Event::Accepted(Instant::now()));
        let script = script.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if script.refuse {
            drop(stream);
            continue;
        }
        connections.spawn(serve(stream, script, events.clone()));
    }
}

/// Per-connection state for the out-of-order and gathering scripts.
#[derive(Default)]
struct Pending {
    held: Option<Bytes>,
    gathered: Vec<Bytes>,
}

async fn serve(stream: TcpStream, script: Script, events: mpsc::UnboundedSender<Event>) {
    let (mut read, mut write) = stream.into_split();
    let mut pending = Pending::default();
    while let Ok(Some(frame)) = read_frame(&mut read, 1 << 20).await {
        let Ok((api, header, mut body)) = split_request_header(frame) else {
            return;
        };
        let (version, correlation_id) = (header.request_api_version, header.correlation_id);
        let client_id = header.client_id.as_deref().map(str::to_owned);
        let replies = match api {
            ApiKey::ApiVersions => {
                let _ = events.send(Event::Request {
                    api,
                    version,
                    correlation_id,
                    client_id,
                    topic: None,
                });
                vec![api_versions_reply(&script, version, correlation_id)]
            }
            ApiKey::Metadata => {
                let Ok(request) = MetadataRequest::decode(&mut body, version) else {
                    return;
                };
                let names: Vec<String> = request
                    .topics
                    .iter()
                    .flatten()
                    .filter_map(|t| t.name.as_deref())
                    .map(|n| n.as_str().to_owned())
                    .collect();
                let topic = names.first().cloned().unwrap_or_default();
                let _ = events.send(Event::Request {
                    api,
                    version,
                    correlation_id,
                    client_id,
                    topic: Some(topic.clone()),
                });
                let reply = || metadata_reply(version, correlation_id, &names);
                match topic.as_str() {
                    "ignore" => vec![],
                    "close" => return,
                    "wrong-id" => vec![metadata_reply(version, correlation_id.wrapping_add(1_000_000), &names)],
                    "hold" => {
                        pending.held = Some(reply());
                        vec![]
                    }
                    t if t.starts_with("gather-") => {
                        let want: usize = t.split('-').nth(1).and_then(|n| n.parse().ok()).unwrap_or(1);
                        pending.gathered.push(reply());
                        if pending.gathered.len() < want {
                            vec![]
                        } else {
                            std::mem::take(&mut pending.gathered)
                        }
                    }
                    _ => std::iter::once(reply()).chain(pending.held.take()).collect(),
                }
            }
            ApiKey::Produce => {
                let Ok(request) = ProduceRequest::decode(&mut body, version) else {
                    return;
                };
                let _ = events.send(Event::Request {
                    api,
                    version,
                    correlation_id,
                    client_id,
                    topic: None,
                });
                let _ = events.send(Event::Produce { acks: request.acks });
                if request.acks == 0 {
                    vec![]
                } else {
                    vec![response_frame(
                        api,
                        version,
                        correlation_id,
                        &ProduceResponse::default(),
                    )]
                }
            }
            _ => return,
        };
        for reply in replies {
            if write.write_all(&reply).await.is_err() {
                return;
            }
        }
    }
}

fn api_versions_reply(script: &Script, version: i16, correlation_id: i32) -> Bytes {
    let keys = [
        (ApiKey::ApiVersions, 0, script.api_versions_max),
        (ApiKey::Metadata, 0, 12),
        (ApiKey::Produce, 0, 11),
    ];
    let keys = keys
        .iter()
        .map(|&(k, min, max)| {
            ApiVersion::default()
                .with_api_key(k as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    if version > script.api_versions_max {
        // KIP-511: answer at v0 with UNSUPPORTED_VERSION (and, since 2.4, the key list).
        let keys = if script.keys_in_error_reply { keys } else { Vec::new() };
        let body = ApiVersionsResponse::default()
            .with_error_code(crate::protocol::error_codes::UNSUPPORTED_VERSION)
            .with_api_keys(keys);
        response_frame(ApiKey::ApiVersions, 0, correlation_id, &body)
    } else {
        response_frame(
            ApiKey::ApiVersions,
            version,
            correlation_id,
            &ApiVersionsResponse::default().with_api_keys(keys),
        )
    }
}

fn metadata_reply(version: i16, correlation_id: i32, names: &[String]) -> Bytes {
    let topics = names
        .iter()
        .map(|n| {
            MetadataResponseTopic::default()
                .with_name(Some(kafka_protocol::protocol::StrBytes::from_string(n.clone()).into()))
        })
        .collect();
    response_frame(
        ApiKey::Metadata,
        version,
        correlation_id,
        &MetadataResponse::default().with_topics(topics),
    )
}

fn response_frame(api: ApiKey, version: i16, correlation_id: i32, body: &impl Encodable) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, api.response_header_version(version))
        .expect("response header encodes");
    body.encode(&mut buf, version).expect("response body encodes");
    let size = i32::try_from(buf.len() - 4).expect("small response");
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.freeze()
}
