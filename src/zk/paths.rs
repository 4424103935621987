//! Kafka's ZooKeeper layout (`ZkData.scala`): every path kastle reads or writes is built here,
//! and [`classify`] maps any path back to the kind of znode it is (and so to its schema in
//! `zk-schema/`). Nothing else in kastle builds a znode path with `format!`.

use crate::types::BrokerId;

pub const CONTROLLER: &str = "/controller";
pub const CONTROLLER_EPOCH: &str = "/controller_epoch";
pub const CLUSTER_ID: &str = "/cluster/id";
pub const BROKER_IDS: &str = "/brokers/ids";
pub const BROKER_TOPICS: &str = "/brokers/topics";
pub const BROKER_SEQID: &str = "/brokers/seqid";
pub const CONSUMERS: &str = "/consumers";
pub const ISR_CHANGE_NOTIFICATION: &str = "/isr_change_notification";
pub const LOG_DIR_EVENT_NOTIFICATION: &str = "/log_dir_event_notification";
pub const DELETE_TOPICS: &str = "/admin/delete_topics";
pub const REASSIGN_PARTITIONS: &str = "/admin/reassign_partitions";
pub const PREFERRED_REPLICA_ELECTION: &str = "/admin/preferred_replica_election";
pub const CONFIG_CHANGES: &str = "/config/changes";
pub const LATEST_PRODUCER_ID_BLOCK: &str = "/latest_producer_id_block";
pub const FEATURE: &str = "/feature";

/// Prefix of `/isr_change_notification` children (sequential).
pub const ISR_CHANGE_PREFIX: &str = "isr_change_";
/// Prefix of `/log_dir_event_notification` children (sequential).
pub const LOG_DIR_EVENT_PREFIX: &str = "log_dir_event_";
/// Prefix of `/config/changes` children (sequential).
pub const CONFIG_CHANGE_PREFIX: &str = "config_change_";

/// The entity types under `/config` (Kafka's `ConfigType.all`).
pub const CONFIG_TYPES: [&str; 5] = ["topics", "clients", "users", "brokers", "ips"];

/// Paths every broker makes sure exist at start-up (Kafka's `ZkData.PersistentZkPaths`).
pub const PERSISTENT_PATHS: [&str; 14] = [
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
];

pub fn broker_id(id: BrokerId) -> String {
    format!("{BROKER_IDS}/{id}")
}

pub fn topic(topic: &str) -> String {
    format!("{BROKER_TOPICS}/{topic}")
}

pub fn topic_partitions(topic: &str) -> String {
    format!("{BROKER_TOPICS}/{topic}/partitions")
}

pub fn topic_partition(topic: &str, partition: i32) -> String {
    format!("{BROKER_TOPICS}/{topic}/partitions/{partition}")
}

pub fn partition_state(topic: &str, partition: i32) -> String {
    format!("{BROKER_TOPICS}/{topic}/partitions/{partition}/state")
}

pub fn delete_topic(topic: &str) -> String {
    format!("{DELETE_TOPICS}/{topic}")
}

/// `/config/<entity_type>/<entity>`, e.g. `/config/topics/orders` or `/config/brokers/<default>`.
pub fn config_entity(entity_type: &str, entity: &str) -> String {
    format!("/config/{entity_type}/{entity}")
}

/// Prefix for a sequential create under `/isr_change_notification`.
pub fn isr_change_sequential() -> String {
    format!("{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}")
}

/// Prefix for a sequential create under `/log_dir_event_notification`.
pub fn log_dir_event_sequential() -> String {
    format!("{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}")
}

/// Prefix for a sequential create under `/config/changes`.
pub fn config_change_sequential() -> String {
    format!("{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}")
}

/// Joins a parent path and a child name.
pub fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The kinds of znode in Kafka's layout; each has a schema `zk-schema/<schema_name>.schema.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ZNodeKind {
    /// Containers and markers that hold no data.
    Empty,
    BrokerRegistration,
    Controller,
    ControllerEpoch,
    TopicAssignment,
    PartitionState,
    IsrChangeNotification,
    LogDirEventNotification,
    ReassignPartitions,
    PreferredReplicaElection,
    EntityConfig,
    ConfigChangeNotification,
    ClusterId,
    ProducerIdBlock,
    Feature,
    Acl,
    AclChangeNotification,
    AclExtendedChangeNotification,
    DelegationToken,
    DelegationTokenChange,
    ConsumerOffset,
}

impl ZNodeKind {
    pub const ALL: [ZNodeKind; 21] = [
        ZNodeKind::Empty,
        ZNodeKind::BrokerRegistration,
        ZNodeKind::Controller,
        ZNodeKind::ControllerEpoch,
        ZNodeKind::TopicAssignment,
        ZNodeKind::PartitionState,
        ZNodeKind::IsrChangeNotification,
        ZNodeKind::LogDirEventNotification,
        ZNodeKind::ReassignPartitions,
        ZNodeKind::PreferredReplicaElection,
        ZNodeKind::EntityConfig,
        ZNodeKind::ConfigChangeNotification,
        ZNodeKind::ClusterId,
        ZNodeKind::ProducerIdBlock,
        ZNodeKind::Feature,
        ZNodeKind::Acl,
        ZNodeKind::AclChangeNotification,
        ZNodeKind::AclExtendedChangeNotification,
        ZNodeKind::DelegationToken,
        ZNodeKind::DelegationTokenChange,
        ZNodeKind::ConsumerOffset,
    ];

    /// The file stem of this kind's schema in `zk-schema/`.
    pub fn schema_name(self) -> &'static str {
        match self {
            ZNodeKind::Empty => "empty",
            ZNodeKind::BrokerRegistration => "broker-registration",
            ZNodeKind::Controller => "controller",
            ZNodeKind::ControllerEpoch => "controller-epoch",
            ZNodeKind::TopicAssignment => "topic-assignment",
            ZNodeKind::PartitionState => "partition-state",
            ZNodeKind::IsrChangeNotification => "isr-change-notification",
            ZNodeKind::LogDirEventNotification => "log-dir-event-notification",
            ZNodeKind::ReassignPartitions => "reassign-partitions",
            ZNodeKind::PreferredReplicaElection => "preferred-replica-election",
            ZNodeKind::EntityConfig => "entity-config",
            ZNodeKind::ConfigChangeNotification => "config-change-notification",
            ZNodeKind::ClusterId => "cluster-id",
            ZNodeKind::ProducerIdBlock => "producer-id-block",
            ZNodeKind::Feature => "feature",
            ZNodeKind::Acl => "acl",
            ZNodeKind::AclChangeNotification => "acl-change-notification",
            ZNodeKind::AclExtendedChangeNotification => "acl-extended-change-notification",
            ZNodeKind::DelegationToken => "delegation-token",
            ZNodeKind::DelegationTokenChange => "delegation-token-change",
            ZNodeKind::ConsumerOffset => "consumer-offset",
        }
    }
}

/// Path patterns (`*` = one segment) and their kinds; the first match wins.
const PATTERNS: &[(&str, ZNodeKind)] = &[
    ("/controller", ZNodeKind::Controller),
    ("/controller_epoch", ZNodeKind::ControllerEpoch),
    ("/cluster", ZNodeKind::Empty),
    ("/cluster/id", ZNodeKind::ClusterId),
    ("/brokers", ZNodeKind::Empty),
    ("/brokers/ids", ZNodeKind::Empty),
    ("/brokers/ids/*", ZNodeKind::BrokerRegistration),
    ("/brokers/seqid", ZNodeKind::Empty),
    ("/brokers/topics", ZNodeKind::Empty),
    ("/brokers/topics/*", ZNodeKind::TopicAssignment),
    ("/brokers/topics/*/partitions", ZNodeKind::Empty),
    ("/brokers/topics/*/partitions/*", ZNodeKind::Empty),
    ("/brokers/topics/*/partitions/*/state", ZNodeKind::PartitionState),
    ("/isr_change_notification", ZNodeKind::Empty),
    ("/isr_change_notification/*", ZNodeKind::IsrChangeNotification),
    ("/log_dir_event_notification", ZNodeKind::Empty),
    ("/log_dir_event_notification/*", ZNodeKind::LogDirEventNotification),
    ("/admin", ZNodeKind::Empty),
    ("/admin/delete_topics", ZNodeKind::Empty),
    ("/admin/delete_topics/*", ZNodeKind::Empty),
    ("/admin/reassign_partitions", ZNodeKind::ReassignPartitions),
    ("/admin/preferred_replica_election", ZNodeKind::PreferredReplicaElection),
    ("/config", ZNodeKind::Empty),
    ("/config/changes", ZNodeKind::Empty),
    ("/config/changes/*", ZNodeKind::ConfigChangeNotification),
    ("/config/topics", ZNodeKind::Empty),
    ("/config/clients", ZNodeKind::Empty),
    ("/config/users", ZNodeKind::Empty),
    ("/config/brokers", ZNodeKind::Empty),
    ("/config/ips", ZNodeKind::Empty),
    ("/config/topics/*", ZNodeKind::EntityConfig),
    ("/config/clients/*", ZNodeKind::EntityConfig),
    ("/config/users/*", ZNodeKind::EntityConfig),
    ("/config/users/*/clients", ZNodeKind::Empty),
    ("/config/users/*/clients/*", ZNodeKind::EntityConfig),
    ("/config/brokers/*", ZNodeKind::EntityConfig),
    ("/config/ips/*", ZNodeKind::EntityConfig),
    ("/latest_producer_id_block", ZNodeKind::ProducerIdBlock),
    ("/feature", ZNodeKind::Feature),
    ("/consumers", ZNodeKind::Empty),
    ("/consumers/*/offsets/*/*", ZNodeKind::ConsumerOffset),
    ("/kafka-acl", ZNodeKind::Empty),
    ("/kafka-acl/*", ZNodeKind::Empty),
    ("/kafka-acl/*/*", ZNodeKind::Acl),
    ("/kafka-acl-extended", ZNodeKind::Empty),
    ("/kafka-acl-extended/*", ZNodeKind::Empty),
    ("/kafka-acl-extended/*/*", ZNodeKind::Empty),
    ("/kafka-acl-extended/*/*/*", ZNodeKind::Acl),
    ("/kafka-acl-changes", ZNodeKind::Empty),
    ("/kafka-acl-changes/*", ZNodeKind::AclChangeNotification),
    ("/kafka-acl-extended-changes", ZNodeKind::Empty),
    (
        "/kafka-acl-extended-changes/*",
        ZNodeKind::AclExtendedChangeNotification,
    ),
    ("/delegation_token", ZNodeKind::Empty),
    ("/delegation_token/tokens", ZNodeKind::Empty),
    ("/delegation_token/tokens/*", ZNodeKind::DelegationToken),
    ("/delegation_token/token_changes", ZNodeKind::Empty),
    ("/delegation_token/token_changes/*", ZNodeKind::DelegationTokenChange),
];

/// The kind of znode at `path` (relative to the chroot), or `None` for paths outside Kafka's
/// layout (ZooKeeper's own `/zookeeper`, the old consumers' `ids`/`owners`, a user's nodes).
pub fn classify(path: &str) -> Option<ZNodeKind> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    PATTERNS
        .iter()
        .find(|(pattern, _)| matches(pattern, &segments))
        .map(|(_, kind)| *kind)
}

fn matches(pattern: &str, segments: &[&str]) -> bool {
    let parts: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    parts.len() == segments.len() && parts.iter().zip(segments).all(|(p, s)| *p == "*" || p == s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_paths_match_kafka() {
        assert_eq!(broker_id(BrokerId(3)), "/brokers/ids/3");
        assert_eq!(
            partition_state("orders", 2),
            "/brokers/topics/orders/partitions/2/state"
        );
        assert_eq!(config_entity("brokers", "<default>"), "/config/brokers/<default>");
        assert_eq!(isr_change_sequential(), "/isr_change_notification/isr_change_");
        assert_eq!(child("/", "a"), "/a");
    }

    #[test]
    fn paths_classify_to_their_znode_kind() {
        assert_eq!(classify("/brokers/ids/1"), Some(ZNodeKind::BrokerRegistration));
        assert_eq!(
            classify("/brokers/topics/t/partitions/0/state"),
            Some(ZNodeKind::PartitionState)
        );
        assert_eq!(classify("/brokers/topics/t/partitions/0"), Some(ZNodeKind::Empty));
        assert_eq!(
            classify("/config/users/alice/clients/c1"),
            Some(ZNodeKind::EntityConfig)
        );
        assert_eq!(
            classify("/isr_change_notification/isr_change_0000000001"),
            Some(ZNodeKind::IsrChangeNotification)
        );
        assert_eq!(classify("/zookeeper/quota"), None);
        assert_eq!(classify("/consumers/g/ids/x"), None);
    }

    #[test]
    fn every_persistent_path_is_a_known_container() {
        for path in PERSISTENT_PATHS {
            let kind = classify(path);
            assert!(
                kind == Some(ZNodeKind::Empty) || kind == Some(ZNodeKind::ProducerIdBlock),
                "{path} classified as {kind:?}"
            );
        }
    }
}
