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

use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::server::topic_creation::{create_topic, valid_topic_name};

/// How long a Metadata request waits for the broker's first UpdateMetadata.
pub const WARM_UP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub(super) async fn handle(apis: &KafkaApis, ctx: &RequestContext, request: MetadataRequest) -> MetadataResponse {
    let cache = &apis.metadata_cache;
    cache.wait_initialized(WARM_UP_WAIT).await;
    let version = ctx.api_version;
    let brokers: Vec<MetadataResponseBroker> = cache
        .live_brokers()
        .into_iter()
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
        match cache.topic(&name) {
            Some(cached) => {
                if version >= 10 {
                    topic.topic_id = cached.id;
                }
                topic.partitions = cached
                    .partitions
                    .iter()
                    .map(|(index, p)| {
                        let leader_alive = p.leader >= 0 && !p.offline_replicas.iter().any(|r| r.0 == p.leader);
                        MetadataResponsePartition::default()
                            .with_error_code(if leader_alive {
                                ec::NONE
                            } else {
                                ec::LEADER_NOT_AVAILABLE
                            })
                            .with_partition_index(*index)
                            .with_leader_id(KpBrokerId(p.leader))
                            .with_leader_epoch(p.leader_epoch)
                            .with_replica_nodes(p.replicas.iter().map(|r| KpBrokerId(r.0)).collect())
                            .with_isr_nodes(p.isr.iter().map(|r| KpBrokerId(r.0)).collect())
                            .with_offline_replicas(p.offline_replicas.iter().map(|r| KpBrokerId(r.0)).collect())
                    })
                    .collect();
            }
            None if requested.is_some() => {
                topic.error_code = if !valid_topic_name(&name) {
                    ec::INVALID_TOPIC_EXCEPTION
                } else if allow_auto && apis.config.auto_create_topics_enable {
                    match create_topic(apis, &name).await {
                        Ok(()) => ec::LEADER_NOT_AVAILABLE,
                        Err(code) => code,
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
    if version >= 1 {
        response.controller_id = KpBrokerId(cache.controller_id().map_or(-1, |c| c.0));
    }
    response
}
