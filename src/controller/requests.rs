//! Builds the requests the controller sends from its context: UpdateMetadata (v8: live brokers
//! with every endpoint, partition states grouped by topic with topic ids) and LeaderAndIsr (v7).

use std::collections::BTreeMap;

use kafka_protocol::messages::leader_and_isr_request::{
    LeaderAndIsrLiveLeader, LeaderAndIsrPartitionState, LeaderAndIsrTopicState,
};
use kafka_protocol::messages::update_metadata_request::{
    UpdateMetadataBroker, UpdateMetadataEndpoint, UpdateMetadataPartitionState, UpdateMetadataTopicState,
};
use kafka_protocol::messages::{BrokerId as KpBrokerId, LeaderAndIsrRequest, TopicName, UpdateMetadataRequest};
use kafka_protocol::protocol::StrBytes;

use super::model::{LeaderAndIsr, RegisteredBroker, TopicInfo};
use crate::types::BrokerId;

/// What the requests are built from.
#[derive(Debug, Default)]
pub struct ControllerContext {
    pub controller: BrokerId,
    pub epoch: i32,
    pub live_brokers: BTreeMap<BrokerId, RegisteredBroker>,
    pub topics: BTreeMap<String, TopicInfo>,
    pub leaderships: BTreeMap<(String, i32), LeaderAndIsr>,
    /// Brokers in controlled shutdown: they lead nothing new.
    pub shutting_down: std::collections::BTreeSet<BrokerId>,
    /// Replicas (topic, partition, broker) whose log dir failed (KAFKA_STORAGE_ERROR).
    pub offline_replicas: std::collections::BTreeSet<(String, i32, BrokerId)>,
    /// Every partition's state in the partition state machine (see `state_changes`).
    pub partition_states: super::partition_state::PartitionStates,
    /// Every replica's state in the replica state machine (see `replica_changes`).
    pub replica_states: super::replica_state::ReplicaStates,
    /// Known topics queued in `/admin/delete_topics` (Kafka's `topicsToBeDeleted`).
    pub topics_to_delete: std::collections::BTreeSet<String>,
    /// Queued topics a replica failed to delete (an error answer): Kafka's
    /// `topicsIneligibleForDeletion`. StopReplica answers do not restart them; the next
    /// deletion request, broker change or failover does.
    pub topics_ineligible_for_deletion: std::collections::BTreeSet<String>,
    /// The listener brokers are reached and announced on (`inter.broker.listener.name`).
    pub inter_broker_listener: String,
    /// The static `unclean.leader.election.enable` (topic and dynamic values are read live).
    pub unclean_leader_election: bool,
    /// Where the core is within an event (see [`super::core`]).
    pub pending: super::core::Pending,
    /// `auto.leader.rebalance.enable`'s settings, `None` when disabled.
    pub auto_rebalance: Option<super::core::timers::AutoRebalance>,
    /// Partitions whose reassignment came from `/admin/reassign_partitions`: the controller
    /// removes them from it as they finish (or are replaced by an API reassignment).
    pub zk_reassignments: std::collections::BTreeSet<(String, i32)>,
    /// Replicas a finished reassignment removed while their broker was down: they get
    /// StopReplica(delete) when it comes back (Kafka's ZooKeeper controller leaves them as stray
    /// logs). Not kept across controller failover.
    pub stray_replicas: std::collections::BTreeSet<((String, i32), BrokerId)>,
}

impl ControllerContext {
    pub fn replicas(&self, topic: &str, partition: i32) -> Vec<BrokerId> {
        self.topics
            .get(topic)
            .and_then(|t| t.assignment.get(&partition))
            .cloned()
            .unwrap_or_default()
    }

    /// The partition's reassignment in progress, if any.
    pub fn reassigning(&self, topic: &str, partition: i32) -> Option<&super::model::Reassigning> {
        self.topics.get(topic).and_then(|t| t.reassigning.get(&partition))
    }

    /// Every partition being reassigned.
    pub fn reassigning_partitions(&self) -> Vec<(String, i32)> {
        self.topics
            .iter()
            .flat_map(|(t, info)| info.reassigning.keys().map(move |p| (t.clone(), *p)))
            .collect()
    }

    pub fn is_live(&self, broker: BrokerId) -> bool {
        self.live_brokers.contains_key(&broker)
    }

    pub fn all_partitions(&self) -> Vec<(String, i32)> {
        self.topics
            .iter()
            .flat_map(|(t, info)| info.assignment.keys().map(move |p| (t.clone(), *p)))
            .collect()
    }

    fn topic_id(&self, topic: &str) -> uuid::Uuid {
        self.topics.get(topic).map(|t| t.id).unwrap_or_else(uuid::Uuid::nil)
    }
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn kp(ids: &[BrokerId]) -> Vec<KpBrokerId> {
    ids.iter().map(|b| KpBrokerId(b.0)).collect()
}

/// Security protocol ids on the wire.
fn protocol_id(name: &str) -> i16 {
    match name {
        "SSL" => 1,
        "SASL_PLAINTEXT" => 2,
        "SASL_SSL" => 3,
        _ => 0,
    }
}

/// `LISTENER://host:port` → (listener, host, port).
pub fn parse_endpoint(endpoint: &str) -> Option<(String, String, i32)> {
    let (listener, rest) = endpoint.split_once("://")?;
    let (host, port) = rest.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((listener.to_string(), host.to_string(), port.parse().ok()?))
}

/// The address of `broker` on `listener`.
pub fn broker_address(broker: &RegisteredBroker, listener: &str) -> Option<String> {
    broker
        .registration
        .endpoints
        .iter()
        .filter_map(|e| parse_endpoint(e))
        .find(|(l, _, _)| l == listener)
        .map(|(_, h, p)| {
            if h.contains(':') {
                format!("[{h}]:{p}")
            } else {
                format!("{h}:{p}")
            }
        })
}

/// UpdateMetadata for `partitions` (all live brokers are always listed), to a broker with `broker_epoch`.
pub fn update_metadata(
    ctx: &ControllerContext,
    partitions: &[(String, i32)],
    broker_epoch: i64,
) -> UpdateMetadataRequest {
    let live_brokers = ctx
        .live_brokers
        .values()
        .map(|b| {
            let protocols = b
                .registration
                .listener_security_protocol_map
                .clone()
                .unwrap_or_default();
            let endpoints = b
                .registration
                .endpoints
                .iter()
                .filter_map(|e| parse_endpoint(e))
                .map(|(listener, host, port)| {
                    let protocol = protocols.get(&listener).map_or(0, |p| protocol_id(p));
                    UpdateMetadataEndpoint::default()
                        .with_port(port)
                        .with_host(StrBytes::from_string(host))
                        .with_listener(StrBytes::from_string(listener))
                        .with_security_protocol(protocol)
                })
                .collect();
            UpdateMetadataBroker::default()
                .with_id(KpBrokerId(b.id.0))
                .with_endpoints(endpoints)
                .with_rack(b.registration.rack.clone().map(StrBytes::from_string))
        })
        .collect();
    let mut by_topic: BTreeMap<&str, Vec<UpdateMetadataPartitionState>> = BTreeMap::new();
    for (topic, p) in partitions {
        let Some(l) = ctx.leaderships.get(&(topic.clone(), *p)) else {
            continue;
        };
        // Kafka's LeaderDuringDelete: a topic being deleted stays out of metadata caches.
        let leader = if ctx.topics_to_delete.contains(topic) {
            -2
        } else {
            l.leader_or_no_leader().0
        };
        let replicas = ctx.replicas(topic, *p);
        let offline: Vec<BrokerId> = replicas
            .iter()
            .copied()
            .filter(|r| !ctx.is_live(*r) || ctx.offline_replicas.contains(&(topic.clone(), *p, *r)))
            .collect();
        by_topic.entry(topic).or_default().push(
            UpdateMetadataPartitionState::default()
                .with_partition_index(*p)
                .with_controller_epoch(l.controller_epoch)
                .with_leader(KpBrokerId(leader))
                .with_leader_epoch(l.leader_epoch)
                .with_isr(kp(&l.isr))
                .with_zk_version(l.zk_version)
                .with_replicas(kp(&replicas))
                .with_offline_replicas(kp(&offline)),
        );
    }
    let topic_states = by_topic
        .into_iter()
        .map(|(t, states)| {
            UpdateMetadataTopicState::default()
                .with_topic_name(name(t))
                .with_topic_id(ctx.topic_id(t))
                .with_partition_states(states)
        })
        .collect();
    UpdateMetadataRequest::default()
        .with_controller_id(KpBrokerId(ctx.controller.0))
        .with_controller_epoch(ctx.epoch)
        .with_broker_epoch(broker_epoch)
        .with_live_brokers(live_brokers)
        .with_topic_states(topic_states)
}

/// StopReplica (v3+) for `partitions` to a broker, deleting their logs when `delete` (leader
/// epoch -2, Kafka's EpochDuringDelete, when deleting).
pub fn stop_replica(
    ctx: &ControllerContext,
    partitions: &[(String, i32)],
    broker_epoch: i64,
    delete: bool,
) -> kafka_protocol::messages::StopReplicaRequest {
    use kafka_protocol::messages::stop_replica_request::{StopReplicaPartitionState, StopReplicaTopicState};
    let mut by_topic: BTreeMap<&str, Vec<StopReplicaPartitionState>> = BTreeMap::new();
    for (topic, p) in partitions {
        let epoch = if delete {
            -2
        } else {
            ctx.leaderships.get(&(topic.clone(), *p)).map_or(-1, |l| l.leader_epoch)
        };
        by_topic.entry(topic).or_default().push(
            StopReplicaPartitionState::default()
                .with_partition_index(*p)
                .with_leader_epoch(epoch)
                .with_delete_partition(delete),
        );
    }
    kafka_protocol::messages::StopReplicaRequest::default()
        .with_controller_id(KpBrokerId(ctx.controller.0))
        .with_controller_epoch(ctx.epoch)
        .with_broker_epoch(broker_epoch)
        .with_topic_states(
            by_topic
                .into_iter()
                .map(|(t, states)| {
                    StopReplicaTopicState::default()
                        .with_topic_name(name(t))
                        .with_partition_states(states)
                })
                .collect(),
        )
}

/// UpdateMetadata telling brokers a topic is going away: its partitions with leader -2
/// (Kafka's LeaderDuringDelete), so metadata caches drop them.
pub fn update_metadata_deleting(ctx: &ControllerContext, topic: &str, broker_epoch: i64) -> UpdateMetadataRequest {
    let partitions: Vec<(String, i32)> = ctx
        .topics
        .get(topic)
        .map(|t| t.assignment.keys().map(|p| (topic.to_string(), *p)).collect())
        .unwrap_or_default();
    let mut request = update_metadata(ctx, &partitions, broker_epoch);
    for t in &mut request.topic_states {
        for p in &mut t.partition_states {
            p.leader = KpBrokerId(-2);
        }
    }
    request
}

/// LeaderAndIsr for `partitions` to a broker with `broker_epoch`.
pub fn leader_and_isr(
    ctx: &ControllerContext,
    partitions: &[(String, i32)],
    broker_epoch: i64,
    listener: &str,
    is_new: bool,
) -> LeaderAndIsrRequest {
    let mut by_topic: BTreeMap<&str, Vec<LeaderAndIsrPartitionState>> = BTreeMap::new();
    let mut leaders = std::collections::BTreeSet::new();
    for (topic, p) in partitions {
        let Some(l) = ctx.leaderships.get(&(topic.clone(), *p)) else {
            continue;
        };
        if let Some(leader) = l.leader {
            leaders.insert(leader);
        }
        let reassigning = ctx.reassigning(topic, *p).cloned().unwrap_or_default();
        by_topic.entry(topic).or_default().push(
            LeaderAndIsrPartitionState::default()
                .with_partition_index(*p)
                .with_controller_epoch(l.controller_epoch)
                .with_leader(KpBrokerId(l.leader_or_no_leader().0))
                .with_leader_epoch(l.leader_epoch)
                .with_isr(kp(&l.isr))
                .with_partition_epoch(l.zk_version)
                .with_replicas(kp(&ctx.replicas(topic, *p)))
                .with_adding_replicas(kp(&reassigning.adding))
                .with_removing_replicas(kp(&reassigning.removing))
                .with_is_new(is_new)
                .with_leader_recovery_state(l.leader_recovery_state as i8),
        );
    }
    let topic_states = by_topic
        .into_iter()
        .map(|(t, states)| {
            LeaderAndIsrTopicState::default()
                .with_topic_name(name(t))
                .with_topic_id(ctx.topic_id(t))
                .with_partition_states(states)
        })
        .collect();
    let live_leaders = leaders
        .into_iter()
        .filter_map(|id| {
            let b = ctx.live_brokers.get(&id)?;
            let (_, host, port) = b
                .registration
                .endpoints
                .iter()
                .filter_map(|e| parse_endpoint(e))
                .find(|(l, _, _)| l == listener)?;
            Some(
                LeaderAndIsrLiveLeader::default()
                    .with_broker_id(KpBrokerId(id.0))
                    .with_host_name(StrBytes::from_string(host))
                    .with_port(port),
            )
        })
        .collect();
    LeaderAndIsrRequest::default()
        .with_controller_id(KpBrokerId(ctx.controller.0))
        .with_controller_epoch(ctx.epoch)
        .with_broker_epoch(broker_epoch)
        .with_topic_states(topic_states)
        .with_live_leaders(live_leaders)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_like_kafkas() {
        assert_eq!(
            parse_endpoint("PLAINTEXT://h:9092"),
            Some(("PLAINTEXT".into(), "h".into(), 9092))
        );
        assert_eq!(
            parse_endpoint("INTERNAL://[::1]:19092"),
            Some(("INTERNAL".into(), "::1".into(), 19092))
        );
        assert_eq!(parse_endpoint("nonsense"), None);
    }
}
