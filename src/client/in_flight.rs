//! The state one connection's callers, reader task and writer task share: the correlation-id
//! counter, the queue of requests awaiting a response, the channel to the writer, and whether
//! (and why) the connection is closed.
//!
//! Invariant: a request is given its correlation id, queued, and handed to the writer under one
//! lock, so the queue order is the wire order. Kafka brokers answer each connection's requests
//! in order, so a response must carry the correlation id at the head of the queue; anything else
//! (unknown id, or an id further back) is a protocol violation that closes the connection, as
//! Kafka's `NetworkClient.correlate` does.

use std::collections::VecDeque;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tracing::debug;

use super::error::ClientError;
use super::wire::{peek_correlation_id, set_correlation_id, split_response_header, FrameError};

/// A response body, or why there will be none.
pub type Reply = Result<Bytes, ClientError>;

/// A frame for the writer task.
#[derive(Debug)]
pub struct Outgoing {
    pub frame: Bytes,
    /// Completed once the frame is on the socket (only requests that expect no response care).
    pub written: Option<oneshot::Sender<()>>,
}

/// Why a connection closed; turned into each affected caller's error.
#[derive(Debug, Clone, PartialEq)]
pub enum CloseReason {
    /// The broker closed the connection between frames.
    Eof,
    Io {
        kind: io::ErrorKind,
        message: String,
    },
    Protocol(String),
    /// A request got no response in time (the timed-out caller gets `Timeout`, the others `Closed`).
    RequestTimedOut {
        api: ApiKey,
        after: Duration,
    },
    /// Closed by this side (`BrokerConnection::close`, or the last handle dropped).
    ByClient,
}

impl CloseReason {
    fn to_error(&self, addr: &str) -> ClientError {
        let addr = addr.to_owned();
        match self {
            CloseReason::Io { kind, message } => ClientError::Io {
                addr,
                source: io::Error::new(*kind, message.clone()),
            },
            CloseReason::Protocol(reason) => ClientError::Protocol {
                addr,
                reason: reason.clone(),
            },
            CloseReason::Eof | CloseReason::RequestTimedOut { .. } | CloseReason::ByClient => {
                ClientError::Closed { addr }
            }
        }
    }
}

impl From<FrameError> for CloseReason {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::Io(e) => CloseReason::Io {
                kind: e.kind(),
                message: e.to_string(),
            },
            FrameError::BadSize { size, max } => CloseReason::Protocol(format!(
                "response size {size} is negative or above the maximum of {max} bytes"
            )),
            FrameError::Truncated => CloseReason::Protocol("connection closed in the middle of a response".to_owned()),
        }
    }
}

#[derive(Debug)]
struct InFlight {
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    reply: oneshot::Sender<Reply>,
}

#[derive(Debug)]
struct State {
    next_correlation_id: i32,
    in_flight: VecDeque<InFlight>,
    /// `None` once closed, which also lets the writer task drain and stop.
    outgoing: Option<mpsc::UnboundedSender<Outgoing>>,
    closed: Option<(CloseReason, Instant)>,
}

/// Shared by a `BrokerConnection` and its reader and writer tasks.
#[derive(Debug)]
pub struct Shared {
    /// The broker address as the caller named it, for errors and logs.
    addr: String,
    state: Mutex<State>,
    /// Flips to `true` once on close; the tasks and `BrokerConnection::closed` wait on it.
    closed_tx: watch::Sender<bool>,
}

impl Shared {
    pub fn new(addr: String, outgoing: mpsc::UnboundedSender<Outgoing>) -> Self {
        Shared {
            addr,
            state: Mutex::new(State {
                next_correlation_id: 0,
                in_flight: VecDeque::new(),
                outgoing: Some(outgoing),
                closed: None,
            }),
            closed_tx: watch::Sender::new(false),
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Queues a request that expects a response; the receiver gets its body or the error that
    /// ended the connection.
    pub fn submit_request(
        &self,
        frame: BytesMut,
        api: ApiKey,
        version: i16,
    ) -> Result<oneshot::Receiver<Reply>, ClientError> {
        let (reply, rx) = oneshot::channel();
        self.submit(frame, Some(InFlightParts { api, version, reply }), None)?;
        Ok(rx)
    }

    /// Queues a request that gets no response (Produce with acks=0); the receiver completes
    /// once the frame has been written.
    pub fn submit_one_way(&self, frame: BytesMut) -> Result<oneshot::Receiver<()>, ClientError> {
        let (written, rx) = oneshot::channel();
        self.submit(frame, None, Some(written))?;
        Ok(rx)
    }

    fn submit(
        &self,
        mut frame: BytesMut,
        expects: Option<InFlightParts>,
        written: Option<oneshot::Sender<()>>,
    ) -> Result<(), ClientError> {
        let mut state = self.lock();
        let Some(outgoing) = state.outgoing.clone() else {
            return Err(self.error_of(&state));
        };
        let correlation_id = state.next_correlation_id;
        // Kafka's ids are non-negative and wrap to 0.
        state.next_correlation_id = correlation_id.checked_add(1).unwrap_or(0);
        set_correlation_id(&mut frame, correlation_id);
        if outgoing
            .send(Outgoing {
                frame: frame.freeze(),
                written,
            })
            .is_err()
        {
            return Err(ClientError::Closed {
                addr: self.addr.clone(),
            });
        }
        if let Some(InFlightParts { api, version, reply }) = expects {
            state.in_flight.push_back(InFlight {
                correlation_id,
                api,
                version,
                reply,
            });
        }
        Ok(())
    }

    /// Hands a response frame to the request at the head of the queue. An error means the
    /// connection must close for that reason.
    pub fn complete(&self, frame: Bytes) -> Result<(), CloseReason> {
        let correlation_id = peek_correlation_id(&frame)
            .ok_or_else(|| CloseReason::Protocol(format!("response of {} bytes has no header", frame.len())))?;
        let request = {
            let mut state = self.lock();
            match state.in_flight.front() {
                Some(head) if head.correlation_id == correlation_id => state.in_flight.pop_front(),
                Some(head) if state.in_flight.iter().any(|r| r.correlation_id == correlation_id) => {
                    return Err(CloseReason::Protocol(format!(
                        "response for correlation id {correlation_id} arrived out of order (expected {})",
                        head.correlation_id
                    )));
                }
                Some(head) => {
                    return Err(CloseReason::Protocol(format!(
                        "response has unknown correlation id {correlation_id} (expected {})",
                        head.correlation_id
                    )));
                }
                None => {
                    return Err(CloseReason::Protocol(format!(
                        "response has unknown correlation id {correlation_id} (no request in flight)"
                    )));
                }
            }
        };
        let Some(request) = request else {
            return Ok(());
        };
        match split_response_header(frame, request.api, request.version) {
            Ok(body) => {
                // A send error means the caller stopped waiting; the response is dropped.
                let _ = request.reply.send(Ok(body));
                Ok(())
            }
            Err(reason) => {
                let reason = CloseReason::Protocol(reason);
                let _ = request.reply.send(Err(reason.to_error(&self.addr)));
                Err(reason)
            }
        }
    }

    /// Closes the connection once: later sends fail, every queued request gets the reason's
    /// error, and the reader and writer tasks stop.
    pub fn close(&self, reason: CloseReason) {
        let drained = {
            let mut state = self.lock();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some((reason.clone(), Instant::now()));
            state.outgoing = None;
            std::mem::take(&mut state.in_flight)
        };
        debug!(broker = %self.addr, ?reason, failed_in_flight = drained.len(), "connection closed");
        for request in drained {
            let _ = request.reply.send(Err(reason.to_error(&self.addr)));
        }
        self.closed_tx.send_replace(true);
    }

    /// When the connection closed, if it has.
    pub fn closed_at(&self) -> Option<Instant> {
        self.lock().closed.as_ref().map(|(_, at)| *at)
    }

    /// The error for a request that finds the connection closed.
    pub fn close_error(&self) -> ClientError {
        self.error_of(&self.lock())
    }

    pub fn subscribe_closed(&self) -> watch::Receiver<bool> {
        self.closed_tx.subscribe()
    }

    fn error_of(&self, state: &State) -> ClientError {
        match &state.closed {
            Some((reason, _)) => reason.to_error(&self.addr),
            None => ClientError::Closed {
                addr: self.addr.clone(),
            },
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock; if some did, the state is still consistent
        // enough to fail requests, which beats propagating the panic to every caller.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct InFlightParts {
    api: ApiKey,
    version: i16,
    reply: oneshot::Sender<Reply>,
}
