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

/// Why a topic was not created; [`TopicCreationError::error_code`] is the one mapping to Kafka's
/// codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicCreationError {
    #[error("invalid topic name: legal characters are [a-zA-Z0-9._-], at most 249")]
    InvalidName,
    #[error("the number of partitions must be at least 1")]
    InvalidPartitions,
    #[error("the replication factor must be between 1 and the number of live brokers")]
    InvalidReplicationFactor,
    #[error("the replica assignment must be contiguous from 0, of one size, on distinct live brokers")]
    InvalidReplicaAssignment,
    #[error("the topic already exists")]
    AlreadyExists,
    #[error("some brokers have a rack and others not")]
    PartialRackInfo,
    #[error("cannot write the topic to ZooKeeper: {0}")]
    Zk(String),
}

impl TopicCreationError {
    /// Kafka's error code for a response.
    pub fn error_code(&self) -> i16 {
        match self {
            TopicCreationError::InvalidName => ec::INVALID_TOPIC_EXCEPTION,
            TopicCreationError::InvalidPartitions => ec::INVALID_PARTITIONS,
            TopicCreationError::InvalidReplicationFactor => ec::INVALID_REPLICATION_FACTOR,
            TopicCreationError::InvalidReplicaAssignment => ec::INVALID_REPLICA_ASSIGNMENT,
            TopicCreationError::AlreadyExists => ec::TOPIC_ALREADY_EXISTS,
            TopicCreationError::PartialRackInfo | TopicCreationError::Zk(_) => ec::UNKNOWN_SERVER_ERROR,
        }
    }
}

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

/// The replica assignment of `topic` among `brokers`, or why there is none.
pub fn plan(topic: &NewTopic, brokers: &[BrokerMetadata]) -> Result<BTreeMap<i32, Vec<BrokerId>>, TopicCreationError> {
    if !valid_topic_name(&topic.name) {
        return Err(TopicCreationError::InvalidName);
    }
    if let Some(assignment) = &topic.assignment {
        let live: Vec<BrokerId> = brokers.iter().map(|b| b.id).collect();
        let sizes: std::collections::BTreeSet<usize> = assignment.values().map(Vec::len).collect();
        let contiguous = assignment.keys().copied().eq(0..assignment.len() as i32);
        let distinct = assignment
            .values()
            .all(|r| r.iter().collect::<std::collections::BTreeSet<_>>().len() == r.len());
        if assignment.is_empty() || sizes.len() != 1 || !contiguous || !distinct || sizes.contains(&0) {
            return Err(TopicCreationError::InvalidReplicaAssignment);
        }
        if assignment.values().flatten().any(|b| !live.contains(b)) {
            return Err(TopicCreationError::InvalidReplicaAssignment);
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
        AssignmentError::InvalidPartitions { .. } => TopicCreationError::InvalidPartitions,
        AssignmentError::InvalidReplicationFactor { .. } => TopicCreationError::InvalidReplicationFactor,
        AssignmentError::PartialRackInfo { .. } => TopicCreationError::PartialRackInfo,
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

/// Validates, places and writes `topic`; `Ok(topic id)` or why not.
pub(crate) async fn create(
    apis: &KafkaApis,
    topic: &NewTopic,
    validate_only: bool,
) -> Result<uuid::Uuid, TopicCreationError> {
    let brokers = live_brokers(apis).await;
    let assignment = plan(topic, &brokers)?;
    if apis.metadata_cache.topic(&topic.name).is_some() {
        return Err(TopicCreationError::AlreadyExists);
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
        Err(KafkaZkError::Zk(ZkError::NodeExists { .. })) => Err(TopicCreationError::AlreadyExists),
        Err(e) => {
            tracing::warn!(topic = %topic.name, error = %e, "topic creation failed");
            Err(TopicCreationError::Zk(e.to_string()))
        }
    }
}

/// Metadata's auto creation with the broker defaults; an existing topic is no error.
pub(crate) async fn create_topic(apis: &KafkaApis, name: &str) -> Result<(), TopicCreationError> {
    let topic = NewTopic {
        name: name.to_string(),
        partitions: apis.config.num_partitions.max(1),
        replication_factor: apis.config.default_replication_factor,
        assignment: None,
        configs: BTreeMap::new(),
    };
    match create(apis, &topic, false).await {
        Ok(_) | Err(TopicCreationError::AlreadyExists) => Ok(()),
        Err(e) => {
            tracing::warn!(topic = name, error = %e, "cannot auto-create topic");
            Err(e)
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
        let code = |t: &NewTopic| plan(t, &brokers(3)).map_err(|e| e.error_code());
        assert_eq!(code(&topic(0, 1)), Err(ec::INVALID_PARTITIONS));
        assert_eq!(code(&topic(3, 4)), Err(ec::INVALID_REPLICATION_FACTOR));
        let bad_name = NewTopic {
            name: "a b".into(),
            ..topic(1, 1)
        };
        assert_eq!(code(&bad_name), Err(ec::INVALID_TOPIC_EXCEPTION));
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
            Err(TopicCreationError::InvalidReplicaAssignment)
        );
        assert_eq!(
            plan(&manual(&[(0, &[1, 1])]), &brokers(3)),
            Err(TopicCreationError::InvalidReplicaAssignment)
        );
        assert_eq!(
            plan(&manual(&[(1, &[1])]), &brokers(3)),
            Err(TopicCreationError::InvalidReplicaAssignment)
        );
        assert_eq!(
            plan(&manual(&[(0, &[9])]), &brokers(3)),
            Err(TopicCreationError::InvalidReplicaAssignment)
        );
    }
}
