//! The broker's side of controlled shutdown (Kafka's `controlledShutdown`): before it stops, a
//! broker asks the controller to move its leaderships away, retrying up to
//! `controlled.shutdown.max.retries` times `controlled.shutdown.retry.backoff.ms` apart while
//! partitions remain. Then it deregisters; clients see a leader change, not an outage.

use std::time::Duration;

use kafka_protocol::messages::{ApiKey, BrokerId as KpBrokerId, ControlledShutdownRequest};

use super::metadata_cache::MetadataCache;
use crate::client::{BrokerConnection, ConnectionConfig, ConnectionSecurity};
use crate::controller::model::RegisteredBroker;
use crate::controller::requests::broker_address;
use crate::controller::zk_ops;
use crate::types::BrokerId;
use crate::zk::{KafkaZkClient, ZkSession};

/// `controlled.shutdown.*`.
#[derive(Debug, Clone)]
pub struct ControlledShutdownConfig {
    pub enable: bool,
    pub max_retries: u32,
    pub retry_backoff: Duration,
    /// The inter-broker listener the controller is reached on.
    pub listener: String,
    /// TLS and SASL on that listener.
    pub security: ConnectionSecurity,
}

/// Where the controller listens, from the metadata cache or, failing that, ZooKeeper.
async fn controller_address(cache: &MetadataCache, zk: &KafkaZkClient<ZkSession>, listener: &str) -> Option<String> {
    let id = match cache.controller_id() {
        Some(id) => id,
        None => zk_ops::active_controller(zk.store()).await.ok().flatten()?,
    };
    let from_cache = cache
        .live_brokers()
        .into_iter()
        .find(|b| b.id == id)
        .and_then(|b| b.endpoints.into_iter().find(|e| e.listener == listener))
        .map(|e| format!("{}:{}", e.host, e.port));
    if from_cache.is_some() {
        return from_cache;
    }
    let (registration, stat) = zk.broker(id).await.ok().flatten()?;
    broker_address(
        &RegisteredBroker {
            id,
            registration,
            epoch: stat.czxid,
        },
        listener,
    )
}

/// Asks the controller to move this broker's leaderships; true when none remain.
pub async fn run(
    cfg: &ControlledShutdownConfig,
    cache: &MetadataCache,
    zk: &KafkaZkClient<ZkSession>,
    me: BrokerId,
    broker_epoch: i64,
) -> bool {
    if !cfg.enable {
        return false;
    }
    for attempt in 0..=cfg.max_retries {
        if attempt > 0 {
            tokio::time::sleep(cfg.retry_backoff).await;
        }
        let Some(addr) = controller_address(cache, zk, &cfg.listener).await else {
            tracing::warn!("controlled shutdown: no controller known; retrying");
            continue;
        };
        let connection = ConnectionConfig {
            connect_timeout: Duration::from_secs(5),
            security: cfg.security.clone(),
            ..ConnectionConfig::default()
        };
        let conn =
            match BrokerConnection::connect_with(addr.as_str(), &format!("broker-{me}-shutdown"), &connection).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(%addr, error = %e, "controlled shutdown: cannot reach the controller");
                    continue;
                }
            };
        let Some(version) = conn.version_for(ApiKey::ControlledShutdown, (1, 3)) else {
            tracing::warn!(%addr, "controlled shutdown: the controller does not support the API");
            return false;
        };
        let request = ControlledShutdownRequest::default()
            .with_broker_id(KpBrokerId(me.0))
            .with_broker_epoch(broker_epoch);
        tracing::info!(attempt, controller = %addr, "controlled shutdown request sent");
        match conn.send(request, version).await {
            Ok(r) if r.error_code == 0 && r.remaining_partitions.is_empty() => {
                tracing::info!(
                    attempt,
                    "controlled shutdown succeeded: no partitions remain led by this broker"
                );
                return true;
            }
            Ok(r) => tracing::warn!(
                attempt,
                error = %crate::protocol::error_codes::name(r.error_code),
                remaining = r.remaining_partitions.len(),
                "controlled shutdown incomplete; retrying"
            ),
            Err(e) => tracing::warn!(attempt, error = %e, "controlled shutdown request failed; retrying"),
        }
    }
    tracing::warn!("controlled shutdown did not finish; stopping anyway (an unclean shutdown for leaders)");
    false
}
