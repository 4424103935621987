//! `KafkaClient`: a small pool of `BrokerConnection`s, one per broker address, created on
//! demand. A connection that died (EOF, I/O error, protocol violation, request timeout) is
//! replaced on the next call. Consecutive failures back off exponentially like Kafka's
//! `ClusterConnectionStates` (`reconnect.backoff.ms` 50 → `reconnect.backoff.max.ms` 1000, ±20 %),
//! timed from the failure, so a down broker is not hammered.
//!
//! Brokers can be named by address or by id; ids resolve through addresses the owner registers
//! (from ZooKeeper registrations or metadata). The pool does not retry requests: whether a
//! request is safe to resend is the caller's decision.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kafka_protocol::protocol::Request;
use tokio::time::Instant;
use tracing::debug;

use super::backoff::{random_unit, ExponentialBackoff, ReconnectState};
use super::connection::{BrokerConnection, ConnectionConfig};
use super::error::ClientError;

/// Pool settings, with Kafka's client defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    pub connection: ConnectionConfig,
    /// `reconnect.backoff.ms`: the wait after the first failure.
    pub reconnect_backoff: Duration,
    /// `reconnect.backoff.max.ms`: the cap on the doubling wait.
    pub reconnect_backoff_max: Duration,
    /// Kafka's `RECONNECT_BACKOFF_JITTER`: each wait is randomised by up to this fraction.
    pub reconnect_backoff_jitter: f64,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connection: ConnectionConfig::default(),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(1000),
            reconnect_backoff_jitter: 0.2,
        }
    }
}

/// A broker named by id (resolved through [`KafkaClient::set_broker_address`]) or by address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BrokerRef {
    Id(i32),
    Addr(String),
}

impl From<i32> for BrokerRef {
    fn from(id: i32) -> Self {
        BrokerRef::Id(id)
    }
}

impl From<&str> for BrokerRef {
    fn from(addr: &str) -> Self {
        BrokerRef::Addr(addr.to_owned())
    }
}

impl From<String> for BrokerRef {
    fn from(addr: String) -> Self {
        BrokerRef::Addr(addr)
    }
}

impl From<SocketAddr> for BrokerRef {
    fn from(addr: SocketAddr) -> Self {
        BrokerRef::Addr(addr.to_string())
    }
}

impl fmt::Display for BrokerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokerRef::Id(id) => write!(f, "broker {id}"),
            BrokerRef::Addr(addr) => f.write_str(addr),
        }
    }
}

/// One address's connection and reconnect state. Its async lock serialises connects, so
/// concurrent callers share one attempt instead of racing.
#[derive(Debug, Default)]
struct Slot {
    connection: Option<Arc<BrokerConnection>>,
    reconnect: ReconnectState,
}

/// Connections to many brokers, created on demand; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct KafkaClient {
    client_id: String,
    config: ClientConfig,
    backoff: ExponentialBackoff,
    /// Broker id → `host:port`, kept current by the owner (controller context, metadata cache).
    addresses: Mutex<HashMap<i32, String>>,
    /// Keyed by address, so a broker that re-registers at a new address gets a new connection.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl KafkaClient {
    pub fn new(client_id: impl Into<String>, config: ClientConfig) -> Self {
        let backoff = ExponentialBackoff::new(
            config.reconnect_backoff,
            config.reconnect_backoff_max,
            config.reconnect_backoff_jitter,
        );
        KafkaClient {
            client_id: client_id.into(),
            config,
            backoff,
            addresses: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Registers (or moves) the address of `broker_id`.
    pub fn set_broker_address(&self, broker_id: i32, addr: impl Into<String>) {
        lock(&self.addresses).insert(broker_id, addr.into());
    }

    /// Forgets `broker_id` and closes its pooled connection, if any (a broker that left the
    /// cluster should not keep a socket or a backoff history).
    pub fn remove_broker(&self, broker_id: i32) {
        let Some(addr) = lock(&self.addresses).remove(&broker_id) else {
            return;
        };
        if let Some(slot) = lock(&self.slots).remove(&addr) {
            // A connect in progress holds the slot; its connection goes to that caller only and
            // is never pooled again, so it dies with the caller's handle.
            if let Ok(slot) = slot.try_lock() {
                slot.connection.iter().for_each(|c| c.close());
            }
        }
    }

    /// The address `broker` resolves to.
    pub fn resolve(&self, broker: &BrokerRef) -> Result<String, ClientError> {
        match broker {
            BrokerRef::Addr(addr) => Ok(addr.clone()),
            BrokerRef::Id(id) => lock(&self.addresses)
                .get(id)
                .cloned()
                .ok_or(ClientError::UnknownBroker { broker_id: *id }),
        }
    }

    /// A live connection to `broker`, connecting if there is none. If the last attempt failed
    /// (or the last connection died) less than the backoff ago, this waits out the backoff
    /// before connecting; bound the wait with `tokio::time::timeout` if needed.
    pub async fn connection(&self, broker: impl Into<BrokerRef>) -> Result<Arc<BrokerConnection>, ClientError> {
        let addr = self.resolve(&broker.into())?;
        let slot = Arc::clone(lock(&self.slots).entry(addr.clone()).or_default());
        let mut slot = slot.lock().await;
        if let Some(connection) = &slot.connection {
            if connection.is_usable() {
                return Ok(Arc::clone(connection));
            }
            // Kafka counts a lost connection as a failure and times the backoff from the loss;
            // a connection left because its SASL session ends is no failure.
            if let Some(closed_at) = connection.closed_at() {
                slot.reconnect.on_failure(closed_at, &self.backoff, random_unit());
            }
            slot.connection = None;
        }
        if let Some(at) = slot.reconnect.next_attempt() {
            tokio::time::sleep_until(at).await;
        }
        match BrokerConnection::connect_with(addr.as_str(), &self.client_id, &self.config.connection).await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                slot.reconnect.on_connected();
                slot.connection = Some(Arc::clone(&connection));
                Ok(connection)
            }
            Err(e) => {
                slot.reconnect.on_failure(Instant::now(), &self.backoff, random_unit());
                debug!(broker = %addr, failures = slot.reconnect.failed_attempts(), error = %e, "connect failed");
                Err(e)
            }
        }
    }

    /// Sends `request` at `version` over the pooled connection to `broker`. A connection-level
    /// failure leaves the connection closed, so the next call reconnects; nothing is retried.
    pub async fn send<R: Request>(
        &self,
        broker: impl Into<BrokerRef>,
        request: R,
        version: i16,
    ) -> Result<R::Response, ClientError> {
        self.connection(broker).await?.send(request, version).await
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while these maps are locked; a poisoned map is still a valid map.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
