//! Keeping `/brokers/ids/<id>` registered. The first registration happens during start-up;
//! after that this task listens to the ZooKeeper session and registers again in every new
//! session (Kafka's `RegisterBrokerAndReelect`), which gives the broker a new epoch (czxid).
//!
//! Beyond Kafka: at start-up, an id held by another live session whose registration carries this
//! broker's own endpoints and rack is taken to be this broker's previous process, killed before
//! its session expired (kill -9, OOM, power loss). Start-up then waits for that session to expire
//! (up to the session timeout plus a margin, see [`expiry_wait`]) instead of failing; a
//! registration with other endpoints or rack is another broker, refused at once.

use std::time::{Duration, Instant};

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

    /// The first registration, at start-up. If the id is held by a live session whose
    /// registration is this broker's own (see [`on_taken_id`]), waits for it to expire — up to
    /// [`expiry_wait`] of `session_timeout` — and registers then; otherwise fails at once.
    pub async fn register_at_startup(&mut self, session_timeout: Duration) -> Result<BrokerEpoch, KafkaZkError> {
        let started = Instant::now();
        let deadline = started + expiry_wait(session_timeout);
        let mut waiting_since_logged = false;
        loop {
            let err = match self.register().await {
                Err(e @ KafkaZkError::BrokerIdInUse { .. }) => e,
                other => return other,
            };
            let KafkaZkError::BrokerIdInUse {
                existing,
                owner_session,
                ..
            } = &err
            else {
                return Err(err);
            };
            let ours = BrokerRegistration::v5(&self.endpoints, self.rack.clone(), 0);
            match on_taken_id(existing.as_deref(), &ours, Instant::now(), deadline) {
                TakenId::Refuse => {
                    if waiting_since_logged {
                        tracing::error!(
                            broker = %self.id,
                            waited_ms = started.elapsed().as_millis() as u64,
                            "the registration with this broker's endpoints did not expire; another live broker holds this id"
                        );
                    }
                    return Err(err);
                }
                TakenId::WaitForExpiry if !waiting_since_logged => {
                    waiting_since_logged = true;
                    tracing::warn!(
                        broker = %self.id,
                        owner_session = %format!("0x{owner_session:x}"),
                        wait_ms = deadline.saturating_duration_since(started).as_millis() as u64,
                        "broker.id {} is registered by another live ZooKeeper session with this broker's own endpoints and rack: \
                         probably this broker's previous process, killed before its session expired; waiting for that session to expire",
                        self.id
                    );
                }
                TakenId::WaitForExpiry => {}
            }
            tokio::time::sleep(EXPIRY_POLL).await;
        }
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

/// How often start-up looks again at a registration it waits on to expire.
const EXPIRY_POLL: Duration = Duration::from_millis(250);

/// How long start-up waits for a stale registration of its own to expire: the session timeout
/// plus a margin of half of it (at least 2 s), since ZooKeeper expires sessions on its tick
/// (`tickTime`) and may have negotiated a somewhat longer timeout than the one asked for.
pub fn expiry_wait(session_timeout: Duration) -> Duration {
    session_timeout + (session_timeout / 2).max(Duration::from_secs(2))
}

/// What start-up does about `/brokers/ids/<id>` held by another live session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakenId {
    /// The registration is this broker's own: wait for its session to expire, then register.
    WaitForExpiry,
    /// Another broker holds the id (or we waited long enough): fail start-up.
    Refuse,
}

/// The registration `existing` is taken to be this broker's own when it advertises exactly the
/// same endpoints (listener name, host and port, in any order) and the same rack as `ours`. The
/// timestamp, JMX port and features are not compared: they change between runs of one broker.
/// Until `deadline` such a registration is waited on; anything else is refused at once.
pub fn on_taken_id(
    existing: Option<&BrokerRegistration>,
    ours: &BrokerRegistration,
    now: Instant,
    deadline: Instant,
) -> TakenId {
    let Some(existing) = existing else {
        return TakenId::Refuse;
    };
    let sorted = |r: &BrokerRegistration| {
        let mut eps = r.endpoints.clone();
        eps.sort();
        eps
    };
    let own = sorted(existing) == sorted(ours) && existing.rack == ours.rack;
    if own && now < deadline {
        TakenId::WaitForExpiry
    } else {
        TakenId::Refuse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(endpoints: &[(&str, &str, u16)], rack: Option<&str>) -> BrokerRegistration {
        let eps: Vec<AdvertisedEndpoint> = endpoints
            .iter()
            .map(|(listener, host, port)| AdvertisedEndpoint {
                listener: listener.to_string(),
                host: host.to_string(),
                port: *port,
                security_protocol: "PLAINTEXT".into(),
            })
            .collect();
        BrokerRegistration::v5(&eps, rack.map(str::to_string), 1)
    }

    #[test]
    fn our_own_endpoints_and_rack_are_waited_on_until_the_deadline() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(9);
        let ours = reg(&[("A", "h", 1), ("B", "h", 2)], Some("r1"));
        let mut existing = reg(&[("B", "h", 2), ("A", "h", 1)], Some("r1"));
        existing.timestamp = 12345;
        assert_eq!(
            on_taken_id(Some(&existing), &ours, now, deadline),
            TakenId::WaitForExpiry
        );
        assert_eq!(on_taken_id(Some(&existing), &ours, deadline, deadline), TakenId::Refuse);
    }

    #[test]
    fn another_brokers_registration_is_refused_at_once() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(9);
        let ours = reg(&[("PLAINTEXT", "h", 9092)], None);
        for other in [
            reg(&[("PLAINTEXT", "h", 9093)], None),
            reg(&[("PLAINTEXT", "other", 9092)], None),
            reg(&[("PLAINTEXT", "h", 9092), ("X", "h", 9094)], None),
            reg(&[("PLAINTEXT", "h", 9092)], Some("r1")),
        ] {
            assert_eq!(
                on_taken_id(Some(&other), &ours, now, deadline),
                TakenId::Refuse,
                "{other:?}"
            );
        }
        assert_eq!(on_taken_id(None, &ours, now, deadline), TakenId::Refuse);
    }

    #[test]
    fn the_wait_is_the_session_timeout_plus_a_margin() {
        assert_eq!(expiry_wait(Duration::from_secs(18)), Duration::from_secs(27));
        assert_eq!(expiry_wait(Duration::from_secs(2)), Duration::from_secs(4));
    }
}
