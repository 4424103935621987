//! `ControllerChannel`: one queue and one sender task per live broker (Kafka's
//! ControllerChannelManager). Requests to a broker go out in order; a failed send is retried
//! with backoff until it succeeds or the broker is removed (dead brokers get nothing).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest};
use tokio::sync::{mpsc, oneshot};

use crate::client::{BrokerConnection, ClientError};
use crate::types::BrokerId;

/// A request the controller sends.
#[derive(Debug, Clone)]
pub enum ControlRequest {
    LeaderAndIsr(LeaderAndIsrRequest),
    UpdateMetadata(UpdateMetadataRequest),
    StopReplica(StopReplicaRequest),
}

/// Called with (broker, partitions) a broker answered KAFKA_STORAGE_ERROR for in a
/// LeaderAndIsr: those replicas are offline (their log dir failed).
pub type OfflineReplicasCallback = Arc<dyn Fn(BrokerId, Vec<(String, i32)>) + Send + Sync>;

/// What a broker's queue carries: requests, and barriers that fire once every request queued
/// before them has been answered (for timing, e.g. a failover's LeaderAndIsr).
enum Queued {
    Request(ControlRequest),
    Barrier(oneshot::Sender<()>),
}

#[derive(Default)]
pub struct ControllerChannel {
    senders: HashMap<BrokerId, mpsc::UnboundedSender<Queued>>,
    on_offline: Option<OfflineReplicasCallback>,
}

impl std::fmt::Debug for ControllerChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerChannel")
            .field("brokers", &self.senders.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ControllerChannel {
    /// A channel that reports replicas answering KAFKA_STORAGE_ERROR to `on_offline`.
    pub fn new(on_offline: OfflineReplicasCallback) -> Self {
        ControllerChannel {
            senders: HashMap::new(),
            on_offline: Some(on_offline),
        }
    }

    /// Starts a sender for `broker` at `addr` (its inter-broker listener).
    pub fn add_broker(&mut self, broker: BrokerId, addr: String, controller: BrokerId) {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(send_loop(broker, addr, controller, rx, self.on_offline.clone()));
        self.senders.insert(broker, tx);
    }

    /// Stops sending to `broker`; queued requests are dropped.
    pub fn remove_broker(&mut self, broker: BrokerId) {
        self.senders.remove(&broker);
    }

    pub fn brokers(&self) -> Vec<BrokerId> {
        self.senders.keys().copied().collect()
    }

    pub fn send(&self, broker: BrokerId, request: ControlRequest) {
        match self.senders.get(&broker) {
            Some(tx) => {
                let _ = tx.send(Queued::Request(request));
            }
            None => tracing::debug!(%broker, "not sending to a broker the controller does not consider live"),
        }
    }

    /// Resolves (`Ok`) once `broker` has answered every request queued to it so far; `Err` if
    /// the broker is removed (or the controller resigns) first.
    pub fn barrier(&self, broker: BrokerId) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        if let Some(queue) = self.senders.get(&broker) {
            let _ = queue.send(Queued::Barrier(tx));
        }
        rx
    }

    /// Stops every sender (resignation).
    pub fn clear(&mut self) {
        self.senders.clear();
    }
}

async fn send_loop(
    broker: BrokerId,
    addr: String,
    controller: BrokerId,
    mut rx: mpsc::UnboundedReceiver<Queued>,
    on_offline: Option<OfflineReplicasCallback>,
) {
    let client_id = format!("controller-{controller}-to-broker-{broker}");
    let mut connection: Option<Arc<BrokerConnection>> = None;
    while let Some(queued) = rx.recv().await {
        let request = match queued {
            Queued::Request(r) => r,
            Queued::Barrier(done) => {
                let _ = done.send(());
                continue;
            }
        };
        let started = std::time::Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            if connection.as_ref().is_none_or(|c| c.is_closed()) {
                match BrokerConnection::connect(addr.as_str(), &client_id, Duration::from_secs(10)).await {
                    Ok(c) => connection = Some(Arc::new(c)),
                    Err(e) => {
                        tracing::warn!(%broker, %addr, error = %e, "controller cannot reach broker; retrying");
                        if !wait_or_closed(&mut rx, backoff).await {
                            return;
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                        continue;
                    }
                }
            }
            let Some(conn) = connection.clone() else { continue };
            match send_one(&conn, &request).await {
                Ok(offline) => {
                    if let ControlRequest::LeaderAndIsr(r) = &request {
                        tracing::debug!(
                            %broker,
                            partitions = r.topic_states.iter().map(|t| t.partition_states.len()).sum::<usize>(),
                            elapsed_ms = started.elapsed().as_millis() as u64,
                            "LeaderAndIsr answered"
                        );
                    }
                    if let (false, Some(callback)) = (offline.is_empty(), &on_offline) {
                        callback(broker, offline);
                    }
                    break;
                }
                Err(e) => {
                    tracing::warn!(%broker, error = %e, "controller request failed; retrying");
                    connection = None;
                    if !wait_or_closed(&mut rx, backoff).await {
                        return;
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// Sleeps `d` unless the channel closed meanwhile (then `false`).
async fn wait_or_closed(rx: &mut mpsc::UnboundedReceiver<Queued>, d: Duration) -> bool {
    tokio::time::sleep(d).await;
    !rx.is_closed()
}

/// Sends one request; returns the partitions a LeaderAndIsr answered KAFKA_STORAGE_ERROR for.
async fn send_one(conn: &BrokerConnection, request: &ControlRequest) -> Result<Vec<(String, i32)>, ClientError> {
    let mut offline = Vec::new();
    match request {
        ControlRequest::LeaderAndIsr(r) => {
            let response = conn.send(r.clone(), 7).await?;
            if response.error_code != 0 {
                tracing::warn!(error = response.error_code, "LeaderAndIsr refused");
            }
            // v5+ answers by topic id; map ids back to names from the request.
            for topic in &response.topics {
                let name = r
                    .topic_states
                    .iter()
                    .find(|t| t.topic_id == topic.topic_id)
                    .map(|t| t.topic_name.0.to_string());
                for p in &topic.partition_errors {
                    if p.error_code == KAFKA_STORAGE_ERROR {
                        if let Some(name) = &name {
                            offline.push((name.clone(), p.partition_index));
                        }
                    }
                }
            }
        }
        ControlRequest::UpdateMetadata(r) => {
            let response = conn.send(r.clone(), 8).await?;
            if response.error_code != 0 {
                tracing::warn!(error = response.error_code, "UpdateMetadata refused");
            }
        }
        ControlRequest::StopReplica(r) => {
            let response = conn.send(r.clone(), 4).await?;
            if response.error_code != 0 {
                tracing::warn!(error = response.error_code, "StopReplica refused");
            }
        }
    }
    Ok(offline)
}

const KAFKA_STORAGE_ERROR: i16 = 56;
