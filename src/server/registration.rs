//! Keeping `/brokers/ids/<id>` registered. The first registration happens during start-up;
//! after that this task listens to the ZooKeeper session and registers again in every new
//! session (Kafka's `RegisterBrokerAndReelect`), which gives the broker a new epoch (czxid).

use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::clock::now_ms;
use crate::types::{BrokerEpoch, BrokerId};
use crate::zk::kafka_zk_client::{KafkaZkClient, KafkaZkError};
use crate::zk::models::{AdvertisedEndpoint, BrokerRegistration};
use crate::zk::session::{SessionEvent, ZkSession};
use crate::zk::store::ZkError;

/// Everything needed to (re-)register this broker.
#[derive(Debug)]
pub struct Registrar {
    pub zk: KafkaZkClient<ZkSession>,
    pub id: BrokerId,
    pub endpoints: Vec<AdvertisedEndpoint>,
    pub rack: Option<String>,
    /// Sessions this process had before the current one (KAFKA-7165 guard).
    past_sessions: Vec<i64>,
    epoch: watch::Sender<BrokerEpoch>,
}

impl Registrar {
    pub fn new(
        zk: KafkaZkClient<ZkSession>,
        id: BrokerId,
        endpoints: Vec<AdvertisedEndpoint>,
        rack: Option<String>,
    ) -> Self {
        let (epoch, _) = watch::channel(BrokerEpoch(-1));
        Registrar {
            zk,
            id,
            endpoints,
            rack,
            past_sessions: Vec::new(),
            epoch,
        }
    }

    /// The broker epoch, updated on every registration.
    pub fn epoch(&self) -> watch::Receiver<BrokerEpoch> {
        self.epoch.subscribe()
    }

    /// Writes a fresh registration in the current session.
    pub async fn register(&mut self) -> Result<BrokerEpoch, KafkaZkError> {
        let registration = BrokerRegistration::v5(&self.endpoints, self.rack.clone(), now_ms());
        let epoch = self
            .zk
            .register_broker(self.id, &registration, &self.past_sessions)
            .await?;
        tracing::info!(broker = %self.id, epoch = %epoch, endpoints = ?registration.endpoints, "registered in ZooKeeper");
        self.epoch.send_replace(epoch);
        Ok(epoch)
    }

    /// Re-registers after every session change until `stop`; returns an error only when the
    /// id was taken by someone else meanwhile (then this broker must not keep running).
    pub async fn run(
        mut self,
        mut events: broadcast::Receiver<SessionEvent>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), KafkaZkError> {
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                _ = stop.changed() => return Ok(()),
            };
            match event {
                Ok(SessionEvent::Ended { session_id, .. }) => {
                    self.past_sessions.push(session_id);
                    tracing::warn!(broker = %self.id, "ZooKeeper session lost; this broker's registration is gone until a new session");
                }
                Ok(SessionEvent::Established { .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.register_until_done(&mut stop).await?;
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            }
        }
    }

    async fn register_until_done(&mut self, stop: &mut watch::Receiver<bool>) -> Result<(), KafkaZkError> {
        let mut backoff = Duration::from_millis(100);
        loop {
            match self.register().await {
                Ok(_) => return Ok(()),
                Err(e @ KafkaZkError::BrokerIdInUse { .. }) => return Err(e),
                // Another session change is coming; it triggers the next attempt.
                Err(KafkaZkError::Zk(ZkError::SessionExpired)) => return Ok(()),
                Err(e) => tracing::warn!(error = %e, "re-registration failed; retrying"),
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {},
                _ = stop.changed() => return Ok(()),
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}
