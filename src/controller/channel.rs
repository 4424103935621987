//! `ControllerChannel`: one queue and one sender task per live broker (Kafka's
//! ControllerChannelManager). Requests to a broker go out in order; a failed send is retried
//! with backoff until it succeeds or the broker is removed (dead brokers get nothing). Answers
//! that need the controller ([`Answer`]: replicas in a failed log dir, replica deletions) are
//! handed to a callback, which enqueues them as events; this module decides nothing.
//!
//! A channel built with [`Transport::Sink`] sends nothing over the network: each request is
//! handed, as it is sent, to a sink as a [`Sent`], which the receiver (a test, later the
//! cluster simulation) can answer in the broker's place.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{LeaderAndIsrRequest, StopReplicaRequest, StopReplicaResponse, UpdateMetadataRequest};
use tokio::sync::{mpsc, oneshot};

use crate::client::{BrokerConnection, ClientError, ConnectionConfig, ConnectionSecurity};
use crate::protocol::error_codes as ec;
use crate::types::BrokerId;

/// A request the controller sends.
#[derive(Debug, Clone)]
pub enum ControlRequest {
    LeaderAndIsr(LeaderAndIsrRequest),
    UpdateMetadata(UpdateMetadataRequest),
    StopReplica(StopReplicaRequest),
}

/// What a broker's answer tells the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Partitions a LeaderAndIsr answered KAFKA_STORAGE_ERROR for: those replicas are offline
    /// (their log dir failed).
    OfflineReplicas(Vec<(String, i32)>),
    /// A StopReplica with deletes was answered: each deleted partition's error code (0 =
    /// deleted), and the broker epoch the request carried.
    ReplicasDeleted {
        broker_epoch: i64,
        results: Vec<((String, i32), i16)>,
    },
}

/// What a broker's queue carries: requests, and barriers that fire once every request queued
/// before them has been answered (for timing, e.g. a failover's LeaderAndIsr).
enum Queued {
    Request(ControlRequest),
    Barrier(oneshot::Sender<()>),
}

/// Called with each [`Answer`] and the broker that gave it.
pub type AnswerCallback = Arc<dyn Fn(BrokerId, Answer) + Send + Sync>;

/// Where a channel's requests go.
#[derive(Clone)]
pub enum Transport {
    /// To each broker's inter-broker listener, one connection and sender task per broker,
    /// secured as that listener's protocol demands.
    Network(ConnectionSecurity),
    /// To a sink, synchronously and in send order (tests and simulation).
    Sink(mpsc::UnboundedSender<Sent>),
}

impl Default for Transport {
    fn default() -> Self {
        Transport::Network(ConnectionSecurity::default())
    }
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Network(security) => write!(f, "Network({})", security.protocol_name()),
            Transport::Sink(_) => f.write_str("Sink"),
        }
    }
}

/// A request handed to a [`Transport::Sink`], with the means to answer it as the broker would.
pub struct Sent {
    pub broker: BrokerId,
    pub request: ControlRequest,
    on_answer: Option<AnswerCallback>,
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sent")
            .field("broker", &self.broker)
            .field("request", &self.request)
            .finish()
    }
}

impl Sent {
    /// Reports what the broker's answer tells the controller, as the network sender does.
    pub fn answer(&self, answer: Answer) {
        if let Some(callback) = &self.on_answer {
            callback(self.broker, answer);
        }
    }
}

/// How the channel reaches one broker.
enum Link {
    Task(mpsc::UnboundedSender<Queued>),
    Sink(mpsc::UnboundedSender<Sent>),
}

#[derive(Default)]
pub struct ControllerChannel {
    senders: HashMap<BrokerId, Link>,
    on_answer: Option<AnswerCallback>,
    transport: Transport,
}

impl std::fmt::Debug for ControllerChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerChannel")
            .field("brokers", &self.senders.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ControllerChannel {
    /// A channel that reports offline replicas and replica deletions to `on_answer`.
    pub fn new(on_answer: AnswerCallback) -> Self {
        Self::with_transport(on_answer, Transport::default())
    }

    /// A channel that sends over `transport`.
    pub fn with_transport(on_answer: AnswerCallback, transport: Transport) -> Self {
        ControllerChannel {
            senders: HashMap::new(),
            on_answer: Some(on_answer),
            transport,
        }
    }

    /// Starts a sender for `broker` at `addr` (its inter-broker listener).
    pub fn add_broker(&mut self, broker: BrokerId, addr: String, controller: BrokerId) {
        let link = match &self.transport {
            Transport::Network(security) => {
                let (tx, rx) = mpsc::unbounded_channel();
                let connection = ConnectionConfig {
                    security: security.clone(),
                    ..ConnectionConfig::default()
                };
                tokio::spawn(send_loop(
                    broker,
                    addr,
                    controller,
                    connection,
                    rx,
                    self.on_answer.clone(),
                ));
                Link::Task(tx)
            }
            Transport::Sink(sink) => Link::Sink(sink.clone()),
        };
        self.senders.insert(broker, link);
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
            Some(Link::Task(tx)) => {
                let _ = tx.send(Queued::Request(request));
            }
            Some(Link::Sink(sink)) => {
                let _ = sink.send(Sent {
                    broker,
                    request,
                    on_answer: self.on_answer.clone(),
                });
            }
            None => tracing::debug!(%broker, "not sending to a broker the controller does not consider live"),
        }
    }

    /// Resolves (`Ok`) once `broker` has answered every request queued to it so far; `Err` if
    /// the broker is removed (or the controller resigns) first.
    pub fn barrier(&self, broker: BrokerId) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        match self.senders.get(&broker) {
            Some(Link::Task(queue)) => {
                let _ = queue.send(Queued::Barrier(tx));
            }
            // A sink takes each request as it is sent: nothing is outstanding.
            Some(Link::Sink(_)) => {
                let _ = tx.send(());
            }
            None => {}
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
    connection_config: ConnectionConfig,
    mut rx: mpsc::UnboundedReceiver<Queued>,
    on_answer: Option<AnswerCallback>,
) {
    let client_id = format!("controller-{controller}-to-broker-{broker}");
    let mut connection: Option<Arc<BrokerConnection>> = None;
    while let Some(queued) = rx.recv().await {
        // The broker was removed (dead or bounced): what is still queued was meant for the
        // incarnation that is gone, so it is dropped, not sent. Barriers waiting behind it
        // resolve as errors when their senders drop.
        if rx.is_closed() {
            return;
        }
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
            if connection.as_ref().is_none_or(|c| !c.is_usable()) {
                match BrokerConnection::connect_with(addr.as_str(), &client_id, &connection_config).await {
                    Ok(c) => connection = Some(Arc::new(c)),
                    Err(e) => {
                        if matches!(e, ClientError::Authentication { .. }) {
                            tracing::error!(%broker, %addr, error = %e, "controller cannot authenticate to broker; retrying");
                        } else {
                            tracing::warn!(%broker, %addr, error = %e, "controller cannot reach broker; retrying");
                        }
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
                Ok(answer) => {
                    if let ControlRequest::LeaderAndIsr(r) = &request {
                        tracing::debug!(
                            %broker,
                            partitions = r.topic_states.iter().map(|t| t.partition_states.len()).sum::<usize>(),
                            elapsed_ms = started.elapsed().as_millis() as u64,
                            "LeaderAndIsr answered"
                        );
                    }
                    if let (Some(answer), Some(callback)) = (answer, &on_answer) {
                        callback(broker, answer);
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

/// Sends one request; returns what its answer tells the controller, if anything.
async fn send_one(conn: &BrokerConnection, request: &ControlRequest) -> Result<Option<Answer>, ClientError> {
    match request {
        ControlRequest::LeaderAndIsr(r) => {
            let response = conn.send(r.clone(), 7).await?;
            if response.error_code != ec::NONE {
                tracing::warn!(error = %ec::name(response.error_code), "LeaderAndIsr refused");
            }
            // v5+ answers by topic id; map ids back to names from the request.
            let mut offline = Vec::new();
            for topic in &response.topics {
                let name = r
                    .topic_states
                    .iter()
                    .find(|t| t.topic_id == topic.topic_id)
                    .map(|t| t.topic_name.0.to_string());
                for p in &topic.partition_errors {
                    if p.error_code == ec::KAFKA_STORAGE_ERROR {
                        if let Some(name) = &name {
                            offline.push((name.clone(), p.partition_index));
                        }
                    }
                }
            }
            Ok((!offline.is_empty()).then_some(Answer::OfflineReplicas(offline)))
        }
        ControlRequest::UpdateMetadata(r) => {
            let response = conn.send(r.clone(), 8).await?;
            if response.error_code != ec::NONE {
                tracing::warn!(error = %ec::name(response.error_code), "UpdateMetadata refused");
            }
            Ok(None)
        }
        ControlRequest::StopReplica(r) => {
            let response = conn.send(r.clone(), 4).await?;
            if response.error_code != ec::NONE {
                tracing::warn!(error = %ec::name(response.error_code), "StopReplica refused");
            }
            Ok(deletions(r, &response))
        }
    }
}

/// The deletes a StopReplica asked for and how each went (Kafka's
/// `TopicDeletionStopReplicaResponseReceived`): a request-level error fails them all.
pub fn deletions(request: &StopReplicaRequest, response: &StopReplicaResponse) -> Option<Answer> {
    let asked: Vec<(String, i32)> = request
        .topic_states
        .iter()
        .flat_map(|t| {
            t.partition_states
                .iter()
                .filter(|p| p.delete_partition)
                .map(|p| (t.topic_name.0.to_string(), p.partition_index))
        })
        .collect();
    if asked.is_empty() {
        return None;
    }
    let results = if response.error_code != 0 {
        asked.into_iter().map(|k| (k, response.error_code)).collect()
    } else {
        response
            .partition_errors
            .iter()
            .map(|p| ((p.topic_name.0.to_string(), p.partition_index), p.error_code))
            .filter(|(k, _)| asked.contains(k))
            .collect()
    };
    Some(Answer::ReplicasDeleted {
        broker_epoch: request.broker_epoch,
        results,
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::stop_replica_request::{StopReplicaPartitionState, StopReplicaTopicState};
    use kafka_protocol::messages::stop_replica_response::StopReplicaPartitionError;
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;

    use super::*;

    fn name(s: &str) -> TopicName {
        TopicName(StrBytes::from_string(s.to_string()))
    }

    fn request(delete: &[(i32, bool)]) -> StopReplicaRequest {
        let states = delete
            .iter()
            .map(|(p, d)| {
                StopReplicaPartitionState::default()
                    .with_partition_index(*p)
                    .with_delete_partition(*d)
            })
            .collect();
        StopReplicaRequest::default()
            .with_broker_epoch(7)
            .with_topic_states(vec![StopReplicaTopicState::default()
                .with_topic_name(name("d"))
                .with_partition_states(states)])
    }

    fn answered(codes: &[(i32, i16)]) -> StopReplicaResponse {
        StopReplicaResponse::default().with_partition_errors(
            codes
                .iter()
                .map(|(p, c)| {
                    StopReplicaPartitionError::default()
                        .with_topic_name(name("d"))
                        .with_partition_index(*p)
                        .with_error_code(*c)
                })
                .collect(),
        )
    }

    /// TopicDeletionStopReplicaResponseReceived: per-partition codes for the deletes asked for;
    /// a request-level error fails every one; a StopReplica without deletes reports nothing.
    #[test]
    fn stop_replica_answers_report_each_requested_delete() {
        let key = |p: i32| ("d".to_string(), p);
        let deleted = |results: Vec<((String, i32), i16)>| Answer::ReplicasDeleted {
            broker_epoch: 7,
            results,
        };
        let req = request(&[(0, true), (1, true), (2, false)]);
        assert_eq!(
            deletions(&req, &answered(&[(0, 0), (1, 56), (2, 0)])),
            Some(deleted(vec![(key(0), 0), (key(1), 56)]))
        );
        assert_eq!(
            deletions(&req, &answered(&[]).with_error_code(ec::STALE_CONTROLLER_EPOCH)),
            Some(deleted(vec![(key(0), 11), (key(1), 11)]))
        );
        assert_eq!(deletions(&request(&[(0, false)]), &answered(&[(0, 0)])), None);
    }
}
