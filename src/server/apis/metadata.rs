//! Metadata: brokers (their endpoint on the listener the request came in on), the controller,
//! the cluster id, and topics with leader, epoch, replicas, ISR and offline replicas, all from
//! the MetadataCache. Unknown topics are created when `auto.create.topics.enable` and the
//! request allow it, the way Kafka's admin path does: `/config/topics/<t>` first, then
//! `/brokers/topics/<t>`; clients see LEADER_NOT_AVAILABLE until the controller elects.
//!
//! Beyond Kafka: a broker that has not yet heard from the controller (no UpdateMetadata since it
//! started) holds Metadata requests until it has, for at most [`WARM_UP_WAIT`]. Answered at once
//! it would say "no brokers, controller -1", and librdkafka's AdminClient then waits for a broker
//! state change that never comes and fails "Failed while waiting for controller" after its
//! request timeout, although the controller was elected milliseconds later.

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId as KpBrokerId, MetadataRequest, MetadataResponse, TopicName};

use super::authorize::TOPIC_AUTHORIZATION_FAILED;
use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::authorized_operations::ResourceType;
use crate::protocol::error_codes as ec;
use crate::security::authorizer::acl::{AclOperation, CLUSTER_NAME};
use crate::server::metadata_cache::{CachedPartition, LiveBroker};
use crate::server::topic_creation::{create_topic, valid_topic_name};

/// How long a Metadata request waits for the broker's first UpdateMetadata.
pub const WARM_UP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: MetadataRequest) -> MetadataResponse {
    let cache = &apis.metadata_cache;
    cache.wait_initialized(WARM_UP_WAIT).await;
    let version = ctx.api_version;
    // One copy of the broker list answers both the broker list and every partition's leader
    // check, so a response never names a leader it does not list.
    let live = cache.live_brokers();
    let brokers: Vec<MetadataResponseBroker> = live
        .iter()
        .filter_map(|b| {
            let ep = b.endpoints.iter().find(|e| e.listener == ctx.listener)?;
            Some(
                MetadataResponseBroker::default()
                    .with_node_id(KpBrokerId(b.id.0))
                    .with_host(str_bytes(&ep.host))
                    .with_port(ep.port)
                    .with_rack(if version >= 1 {
                        b.rack.as_deref().map(str_bytes)
                    } else {
                        None
                    }),
            )
        })
        .collect();
    // v0 has no "all topics" null; an empty list means all there.
    let requested: Option<Vec<String>> = match request.topics {
        None => None,
        Some(t) if t.is_empty() && ctx.api_version == 0 => None,
        Some(t) => Some(t.into_iter().filter_map(|t| t.name.map(|n| n.0.to_string())).collect()),
    };
    let allow_auto = ctx.api_version < 4 || request.allow_auto_topic_creation;
    let mut topics = Vec::new();
    for name in requested.clone().unwrap_or_else(|| cache.topic_names()) {
        let mut topic = MetadataResponseTopic::default()
            .with_name(Some(TopicName(str_bytes(&name))))
            .with_is_internal(name == crate::coordinator::group::OFFSETS_TOPIC);
        if version >= 8 {
            topic.topic_authorized_operations = apis.authorized_operations(
                ctx,
                request.include_topic_authorized_operations,
                ResourceType::Topic,
                &name,
            );
        }
        if !apis.authorized_topic(ctx, AclOperation::Describe, &name) {
            // Kafka leaves unauthorized topics out of an all-topics answer and refuses named ones.
            if requested.is_none() {
                continue;
            }
            topic.error_code = TOPIC_AUTHORIZATION_FAILED;
            topics.push(topic);
            continue;
        }
        match cache.topic(&name) {
            Some(cached) => {
                if version >= 10 {
                    topic.topic_id = cached.id;
                }
                topic.partitions = cached
                    .partitions
                    .iter()
                    .map(|(index, p)| partition_metadata(*index, p, &live, &ctx.listener, version))
                    .collect();
            }
            None if requested.is_some() => {
                topic.error_code = if !valid_topic_name(&name) {
                    ec::INVALID_TOPIC_EXCEPTION
                } else if allow_auto && apis.config.auto_create_topics_enable {
                    if !apis.may_create_topic(ctx, &name) {
                        topic.error_code = TOPIC_AUTHORIZATION_FAILED;
                        topics.push(topic);
                        continue;
                    }
                    match create_topic(apis, &name).await {
                        Ok(()) => ec::LEADER_NOT_AVAILABLE,
                        Err(e) => e.error_code(),
                    }
                } else {
                    ec::UNKNOWN_TOPIC_OR_PARTITION
                };
            }
            None => continue,
        }
        topics.push(topic);
    }
    let mut response = MetadataResponse::default().with_brokers(brokers).with_topics(topics);
    if version >= 2 {
        response.cluster_id = Some(str_bytes(&apis.cluster_id));
    }
    // Dropped from v11 on (KIP-700: DescribeCluster answers it there).
    if (8..=10).contains(&version) {
        response.cluster_authorized_operations = apis.authorized_operations(
            ctx,
            request.include_cluster_authorized_operations,
            ResourceType::Cluster,
            CLUSTER_NAME,
        );
    }
    if version >= 1 {
        response.controller_id = KpBrokerId(cache.controller_id().map_or(-1, |c| c.0));
    }
    response
}

/// One partition's entry, as Kafka's `ZkMetadataCache.getPartitionMetadata` builds it from the
/// cached state and the live brokers:
/// - a leader that is not live (or is among the offline replicas) is no leader: leader -1 with
///   LEADER_NOT_AVAILABLE; a live leader without an endpoint on `listener` gives
///   LISTENER_NOT_FOUND from v6 (LEADER_NOT_AVAILABLE before). Clients then wait for fresh
///   metadata instead of sending to a broker the response does not list.
/// - v0 only: replicas and ISR are cut to live brokers with the listener, and a cut answers
///   REPLICA_NOT_AVAILABLE; later versions list them whole (offline replicas say who is down).
pub(crate) fn partition_metadata(
    index: i32,
    p: &CachedPartition,
    live: &[LiveBroker],
    listener: &str,
    version: i16,
) -> MetadataResponsePartition {
    let broker = |id: i32| live.iter().find(|b| b.id.0 == id);
    let reachable = |id: i32| broker(id).is_some_and(|b| b.endpoints.iter().any(|e| e.listener == listener));
    let filter = |ids: &[crate::types::BrokerId]| -> Vec<KpBrokerId> {
        ids.iter()
            .filter(|r| version > 0 || reachable(r.0))
            .map(|r| KpBrokerId(r.0))
            .collect()
    };
    let replicas = filter(&p.replicas);
    let isr = filter(&p.isr);
    let leader_offline = p.offline_replicas.iter().any(|r| r.0 == p.leader);
    let (error, leader) = if broker(p.leader).is_none() || leader_offline {
        (ec::LEADER_NOT_AVAILABLE, -1)
    } else if !reachable(p.leader) {
        let code = if version >= 6 {
            ec::LISTENER_NOT_FOUND
        } else {
            ec::LEADER_NOT_AVAILABLE
        };
        (code, -1)
    } else if replicas.len() < p.replicas.len() || isr.len() < p.isr.len() {
        (ec::REPLICA_NOT_AVAILABLE, p.leader)
    } else {
        (ec::NONE, p.leader)
    };
    MetadataResponsePartition::default()
        .with_error_code(error)
        .with_partition_index(index)
        .with_leader_id(KpBrokerId(leader))
        .with_leader_epoch(p.leader_epoch)
        .with_replica_nodes(replicas)
        .with_isr_nodes(isr)
        .with_offline_replicas(p.offline_replicas.iter().map(|r| KpBrokerId(r.0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::metadata_cache::BrokerEndpoint;
    use crate::types::BrokerId;

    fn broker(id: i32, listeners: &[&str]) -> LiveBroker {
        LiveBroker {
            id: BrokerId(id),
            endpoints: listeners
                .iter()
                .map(|l| BrokerEndpoint {
                    listener: l.to_string(),
                    host: "h".into(),
                    port: 9092,
                })
                .collect(),
            rack: None,
        }
    }

    fn state(leader: i32, replicas: &[i32], isr: &[i32]) -> CachedPartition {
        CachedPartition {
            leader,
            leader_epoch: 7,
            isr: isr.iter().map(|b| BrokerId(*b)).collect(),
            replicas: replicas.iter().map(|b| BrokerId(*b)).collect(),
            offline_replicas: vec![],
        }
    }

    fn ids(v: &[KpBrokerId]) -> Vec<i32> {
        v.iter().map(|b| b.0).collect()
    }

    #[test]
    fn a_leader_missing_from_the_live_brokers_is_reported_as_no_leader() {
        // The controller has not yet moved leadership off broker 2, which died.
        let live = [broker(1, &["PLAINTEXT"]), broker(3, &["PLAINTEXT"])];
        let p = partition_metadata(0, &state(2, &[1, 2, 3], &[1, 2, 3]), &live, "PLAINTEXT", 12);
        assert_eq!(
            (p.error_code, p.leader_id.0, p.leader_epoch),
            (ec::LEADER_NOT_AVAILABLE, -1, 7)
        );
        // v1+ lists replicas and ISR whole, as Kafka does.
        assert_eq!(
            (ids(&p.replica_nodes), ids(&p.isr_nodes)),
            (vec![1, 2, 3], vec![1, 2, 3])
        );
    }

    #[test]
    fn a_live_leader_answers_none_and_v0_cuts_dead_replicas_with_replica_not_available() {
        let live = [broker(1, &["PLAINTEXT"]), broker(3, &["PLAINTEXT"])];
        let p = partition_metadata(0, &state(1, &[1, 2, 3], &[1, 3]), &live, "PLAINTEXT", 12);
        assert_eq!((p.error_code, p.leader_id.0), (ec::NONE, 1));
        assert_eq!(ids(&p.replica_nodes), vec![1, 2, 3]);
        let v0 = partition_metadata(0, &state(1, &[1, 2, 3], &[1, 3]), &live, "PLAINTEXT", 0);
        assert_eq!((v0.error_code, v0.leader_id.0), (ec::REPLICA_NOT_AVAILABLE, 1));
        assert_eq!((ids(&v0.replica_nodes), ids(&v0.isr_nodes)), (vec![1, 3], vec![1, 3]));
    }

    #[test]
    fn a_leader_without_the_requests_listener_is_listener_not_found_from_v6() {
        let live = [broker(1, &["INTERNAL"])];
        let p = partition_metadata(0, &state(1, &[1], &[1]), &live, "PLAINTEXT", 6);
        assert_eq!((p.error_code, p.leader_id.0), (ec::LISTENER_NOT_FOUND, -1));
        let v5 = partition_metadata(0, &state(1, &[1], &[1]), &live, "PLAINTEXT", 5);
        assert_eq!((v5.error_code, v5.leader_id.0), (ec::LEADER_NOT_AVAILABLE, -1));
    }

    #[test]
    fn no_leader_or_an_offline_leader_is_leader_not_available() {
        let live = [broker(1, &["PLAINTEXT"])];
        let p = partition_metadata(0, &state(-1, &[1], &[1]), &live, "PLAINTEXT", 12);
        assert_eq!((p.error_code, p.leader_id.0), (ec::LEADER_NOT_AVAILABLE, -1));
        let mut offline = state(1, &[1], &[1]);
        offline.offline_replicas = vec![BrokerId(1)];
        let p = partition_metadata(0, &offline, &live, "PLAINTEXT", 12);
        assert_eq!((p.error_code, p.leader_id.0), (ec::LEADER_NOT_AVAILABLE, -1));
    }
}
