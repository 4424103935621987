//! Creating a topic the way Kafka's admin path does in ZK mode: pick a replica assignment,
//! write `/config/topics/<t>` first, then `/brokers/topics/<t>` (v3, with a topic id). The
//! controller notices the new topic and elects its leaders.

use std::collections::BTreeMap;

use super::apis::KafkaApis;
use crate::protocol::error_codes as ec;
use crate::types::BrokerId;
use crate::zk::kafka_zk_client::KafkaZkError;
use crate::zk::store::ZkError;

/// Kafka's legal topic names: `[a-zA-Z0-9._-]`, 1–249 characters, not `.` or `..`.
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Round-robin assignment over `brokers` (sorted), starting at `start`: partition p's replicas
/// are brokers start+p, start+p+1, … (Kafka's rack-unaware assignment without the shift).
pub fn assign_replicas(
    brokers: &[BrokerId],
    partitions: i32,
    replication_factor: i16,
    start: usize,
) -> BTreeMap<i32, Vec<BrokerId>> {
    let n = brokers.len().max(1);
    (0..partitions)
        .map(|p| {
            let replicas = (0..replication_factor as usize)
                .map(|j| brokers[(start + p as usize + j) % n])
                .collect();
            (p, replicas)
        })
        .collect()
}

/// Creates `name` with the broker defaults; `Err(code)` for the Metadata response.
pub(crate) async fn create_topic(apis: &KafkaApis, name: &str) -> Result<(), i16> {
    let mut brokers: Vec<BrokerId> = apis.metadata_cache.live_brokers().into_iter().map(|b| b.id).collect();
    if brokers.is_empty() {
        brokers = apis.zk.broker_ids().await.map_err(|_| ec::LEADER_NOT_AVAILABLE)?;
    }
    brokers.sort();
    let rf = apis.config.default_replication_factor;
    if rf < 1 || rf as usize > brokers.len() {
        tracing::warn!(
            topic = name,
            rf,
            live = brokers.len(),
            "cannot auto-create topic: not enough brokers"
        );
        return Err(38); // INVALID_REPLICATION_FACTOR
    }
    let start = (uuid::Uuid::new_v4().as_u128() % brokers.len() as u128) as usize;
    let assignment = assign_replicas(&brokers, apis.config.num_partitions.max(1), rf, start);
    match apis.zk.create_topic(name, &assignment, uuid::Uuid::new_v4()).await {
        Ok(()) => {
            tracing::info!(topic = name, ?assignment, "auto-created topic");
            Ok(())
        }
        Err(KafkaZkError::Zk(ZkError::NodeExists { .. })) => Ok(()),
        Err(e) => {
            tracing::warn!(topic = name, error = %e, "auto topic creation failed");
            Err(ec::LEADER_NOT_AVAILABLE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafkas_rules() {
        assert!(valid_topic_name("orders.v2_x-1"));
        assert!(!valid_topic_name(""));
        assert!(!valid_topic_name(".."));
        assert!(!valid_topic_name("has space"));
        assert!(!valid_topic_name(&"x".repeat(250)));
    }

    #[test]
    fn replicas_are_spread_round_robin() {
        let brokers = [BrokerId(1), BrokerId(2), BrokerId(3)];
        let a = assign_replicas(&brokers, 3, 2, 1);
        assert_eq!(a[&0], vec![BrokerId(2), BrokerId(3)]);
        assert_eq!(a[&1], vec![BrokerId(3), BrokerId(1)]);
        assert_eq!(a[&2], vec![BrokerId(1), BrokerId(2)]);
    }
}
