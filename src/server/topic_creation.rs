//! Creating topics the way Kafka's admin path does in ZK mode: validate, place replicas with
//! Kafka's assignment (round-robin from a random start, shifted followers, rack-aware when every
//! broker has a rack), write `/config/topics/<t>` first, then `/brokers/topics/<t>` (v3, with a
//! topic id). The controller notices the new topic and elects its leaders. Used by auto
//! creation (any broker) and by CreateTopics (the controller).

use std::collections::BTreeMap;

use super::apis::KafkaApis;
use crate::controller::assignment::{
    assign_replicas_to_brokers, AssignmentError, BrokerMetadata, PlacementStart, RackAwareMode,
};
use crate::protocol::error_codes as ec;
use crate::types::BrokerId;
use crate::zk::kafka_zk_client::KafkaZkError;
use crate::zk::store::ZkError;

pub use crate::protocol::error_codes::{
    INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, TOPIC_ALREADY_EXISTS,
    UNKNOWN_SERVER_ERROR,
};

/// Kafka's legal topic names: `[a-zA-Z0-9._-]`, 1–249 characters, not `.` or `..`.
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// What to create.
#[derive(Debug, Clone)]
pub struct NewTopic {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    /// Explicit replica lists by partition; when given, partitions/RF are taken from them.
    pub assignment: Option<BTreeMap<i32, Vec<BrokerId>>>,
    pub configs: BTreeMap<String, String>,
}

/// The replica assignment of `topic` among `brokers`, or Kafka's error code.
pub fn plan(topic: &NewTopic, brokers: &[BrokerMetadata]) -> Result<BTreeMap<i32, Vec<BrokerId>>, i16> {
    if !valid_topic_name(&topic.name) {
        return Err(ec::INVALID_TOPIC_EXCEPTION);
    }
    if let Some(assignment) = &topic.assignment {
        let live: Vec<BrokerId> = brokers.iter().map(|b| b.id).collect();
        let sizes: std::collections::BTreeSet<usize> = assignment.values().map(Vec::len).collect();
        let contiguous = assignment.keys().copied().eq(0..assignment.len() as i32);
        let distinct = assignment
            .values()
            .all(|r| r.iter().collect::<std::collections::BTreeSet<_>>().len() == r.len());
        if assignment.is_empty() || sizes.len() != 1 || !contiguous || !distinct || sizes.contains(&0) {
            return Err(INVALID_REPLICA_ASSIGNMENT);
        }
        if assignment.values().flatten().any(|b| !live.contains(b)) {
            return Err(INVALID_REPLICA_ASSIGNMENT);
        }
        return Ok(assignment.clone());
    }
    let seed = uuid::Uuid::new_v4().as_u128();
    let n = brokers.len().max(1) as u128;
    let start = PlacementStart {
        index: (seed % n) as usize,
        shift: ((seed >> 64) % n) as usize,
        first_partition: 0,
    };
    assign_replicas_to_brokers(
        brokers,
        topic.partitions,
        i32::from(topic.replication_factor),
        RackAwareMode::Enforced,
        start,
    )
    .map_err(|e| match e {
        AssignmentError::InvalidPartitions { .. } => INVALID_PARTITIONS,
        AssignmentError::InvalidReplicationFactor { .. } => INVALID_REPLICATION_FACTOR,
        AssignmentError::PartialRackInfo { .. } => UNKNOWN_SERVER_ERROR,
    })
}

/// Live brokers with racks, from the metadata cache (or ZooKeeper before the first UpdateMetadata).
pub(crate) async fn live_brokers(apis: &KafkaApis) -> Vec<BrokerMetadata> {
    let mut brokers: Vec<BrokerMetadata> = apis
        .metadata_cache
        .live_brokers()
        .into_iter()
        .map(|b| BrokerMetadata { id: b.id, rack: b.rack })
        .collect();
    if brokers.is_empty() {
        brokers = apis
            .zk
            .broker_ids()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|id| BrokerMetadata { id, rack: None })
            .collect();
    }
    brokers
}

/// Validates, places and writes `topic`; `Ok(topic id)` or Kafka's error code.
pub(crate) async fn create(apis: &KafkaApis, topic: &NewTopic, validate_only: bool) -> Result<uuid::Uuid, i16> {
    let brokers = live_brokers(apis).await;
    let assignment = plan(topic, &brokers)?;
    if apis.metadata_cache.topic(&topic.name).is_some() {
        return Err(TOPIC_ALREADY_EXISTS);
    }
    if validate_only {
        return Ok(uuid::Uuid::nil());
    }
    let id = uuid::Uuid::new_v4();
    match apis.zk.create_topic(&topic.name, &assignment, id, &topic.configs).await {
        Ok(()) => {
            tracing::info!(topic = %topic.name, ?assignment, "created topic");
            Ok(id)
        }
        Err(KafkaZkError::Zk(ZkError::NodeExists { .. })) => Err(TOPIC_ALREADY_EXISTS),
        Err(e) => {
            tracing::warn!(topic = %topic.name, error = %e, "topic creation failed");
            Err(UNKNOWN_SERVER_ERROR)
        }
    }
}

/// Metadata's auto creation with the broker defaults; `Err(code)` for the Metadata response.
pub(crate) async fn create_topic(apis: &KafkaApis, name: &str) -> Result<(), i16> {
    let topic = NewTopic {
        name: name.to_string(),
        partitions: apis.config.num_partitions.max(1),
        replication_factor: apis.config.default_replication_factor,
        assignment: None,
        configs: BTreeMap::new(),
    };
    match create(apis, &topic, false).await {
        Ok(_) | Err(TOPIC_ALREADY_EXISTS) => Ok(()),
        Err(code) => {
            tracing::warn!(topic = name, code, "cannot auto-create topic");
            Err(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(n: i32) -> Vec<BrokerMetadata> {
        (1..=n)
            .map(|id| BrokerMetadata {
                id: BrokerId(id),
                rack: None,
            })
            .collect()
    }

    fn topic(partitions: i32, rf: i16) -> NewTopic {
        NewTopic {
            name: "t".into(),
            partitions,
            replication_factor: rf,
            assignment: None,
            configs: BTreeMap::new(),
        }
    }

    #[test]
    fn topic_names_follow_kafkas_rules() {
        assert!(valid_topic_name("orders.v2_x-1"));
        assert!(!valid_topic_name(""));
        assert!(!valid_topic_name(".."));
        assert!(!valid_topic_name("has space"));
        assert!(!valid_topic_name(&"x".repeat(250)));
    }

    #[test]
    fn plans_reject_what_kafka_rejects() {
        assert_eq!(plan(&topic(0, 1), &brokers(3)), Err(INVALID_PARTITIONS));
        assert_eq!(plan(&topic(3, 4), &brokers(3)), Err(INVALID_REPLICATION_FACTOR));
        let bad_name = NewTopic {
            name: "a b".into(),
            ..topic(1, 1)
        };
        assert_eq!(plan(&bad_name, &brokers(3)), Err(ec::INVALID_TOPIC_EXCEPTION));
        let plan = plan(&topic(6, 3), &brokers(3)).expect("valid");
        assert!(plan.values().all(|r| r.len() == 3));
    }

    #[test]
    fn explicit_assignments_must_be_contiguous_uniform_and_on_live_brokers() {
        let manual = |a: &[(i32, &[i32])]| NewTopic {
            assignment: Some(
                a.iter()
                    .map(|(p, r)| (*p, r.iter().map(|b| BrokerId(*b)).collect()))
                    .collect(),
            ),
            ..topic(-1, -1)
        };
        assert!(plan(&manual(&[(0, &[1, 2]), (1, &[2, 3])]), &brokers(3)).is_ok());
        assert_eq!(
            plan(&manual(&[(0, &[1, 2]), (1, &[2])]), &brokers(3)),
            Err(INVALID_REPLICA_ASSIGNMENT)
        );
        assert_eq!(
            plan(&manual(&[(0, &[1, 1])]), &brokers(3)),
            Err(INVALID_REPLICA_ASSIGNMENT)
        );
        assert_eq!(
            plan(&manual(&[(1, &[1])]), &brokers(3)),
            Err(INVALID_REPLICA_ASSIGNMENT)
        );
        assert_eq!(
            plan(&manual(&[(0, &[9])]), &brokers(3)),
            Err(INVALID_REPLICA_ASSIGNMENT)
        );
    }
}
