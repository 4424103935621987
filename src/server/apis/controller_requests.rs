//! Requests the controller sends every broker: LeaderAndIsr (become leader or follower),
//! UpdateMetadata (feeds the MetadataCache) and StopReplica, plus ControlledShutdown, which
//! only the active controller answers (others: NOT_CONTROLLER). Stale controller and broker
//! epochs are refused for the whole request.

use kafka_protocol::messages::controlled_shutdown_response::RemainingPartition;
use kafka_protocol::messages::leader_and_isr_response::{LeaderAndIsrPartitionError, LeaderAndIsrTopicError};
use kafka_protocol::messages::stop_replica_response::StopReplicaPartitionError;
use kafka_protocol::messages::{
    ControlledShutdownRequest, ControlledShutdownResponse, LeaderAndIsrRequest, LeaderAndIsrResponse,
    StopReplicaRequest, StopReplicaResponse, TopicName, UpdateMetadataRequest, UpdateMetadataResponse,
};

use super::{now_ms, KafkaApis};
use crate::network::handler::RequestContext;
use crate::replica::error::code_of;
use crate::replica::replica_manager::{ControllerRequestEpochs, LeaderAndIsrPartition};
use crate::replica::PartitionState;
use crate::server::metadata_cache::{BrokerEndpoint, CachedPartition, LiveBroker};
use crate::types::{BrokerId, TopicPartition};

use crate::protocol::error_codes::NOT_CONTROLLER;

fn ids(v: &[kafka_protocol::messages::BrokerId]) -> Vec<BrokerId> {
    v.iter().map(|b| BrokerId(b.0)).collect()
}

pub(super) async fn leader_and_isr(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: LeaderAndIsrRequest,
) -> LeaderAndIsrResponse {
    let epochs = ControllerRequestEpochs {
        controller_epoch: request.controller_epoch,
        broker_epoch: request.broker_epoch,
    };
    let mut partitions = Vec::new();
    // From v2 partition states are grouped by topic and carry no topic name of their own.
    let grouped = request.topic_states.into_iter().flat_map(|t| {
        let (id, name) = (t.topic_id, t.topic_name.0.to_string());
        t.partition_states.into_iter().map(move |p| (id, name.clone(), p))
    });
    let ungrouped = request
        .ungrouped_partition_states
        .into_iter()
        .map(|p| (uuid::Uuid::nil(), p.topic_name.0.to_string(), p));
    for (topic_id, topic, p) in ungrouped.chain(grouped) {
        partitions.push(LeaderAndIsrPartition {
            tp: TopicPartition {
                topic,
                partition: p.partition_index,
            },
            topic_id,
            state: PartitionState {
                controller_epoch: p.controller_epoch,
                leader: BrokerId(p.leader.0),
                leader_epoch: p.leader_epoch,
                isr: ids(&p.isr),
                partition_epoch: p.partition_epoch,
                replicas: ids(&p.replicas),
                adding: ids(&p.adding_replicas),
                removing: ids(&p.removing_replicas),
            },
        });
    }
    let live_leaders = request
        .live_leaders
        .iter()
        .map(|l| (BrokerId(l.broker_id.0), format!("{}:{}", l.host_name, l.port)))
        .collect();
    // A topic new to this broker: its logs are created with its `/config/topics/<t>`
    // overrides (Kafka's getOrCreateLog reads them from ZooKeeper too).
    let log_manager = apis.replica_manager.log_manager().clone();
    let unknown: std::collections::BTreeSet<String> = partitions
        .iter()
        .map(|p| p.tp.topic.clone())
        .filter(|t| !log_manager.knows_topic_config(t))
        .collect();
    let mut reads = tokio::task::JoinSet::new();
    for topic in unknown {
        let zk = apis.zk.clone();
        reads.spawn(async move {
            let overrides = zk.topic_config(&topic).await;
            (topic, overrides)
        });
    }
    while let Some(Ok((topic, overrides))) = reads.join_next().await {
        match overrides {
            Ok(overrides) => apis.replica_manager.update_topic_config(&topic, overrides),
            Err(e) => tracing::warn!(%topic, error = %e, "cannot read the topic's config; using the broker defaults"),
        }
    }
    // Creating logs and writing checkpoints is blocking file I/O, thousands of files for a big
    // request: off the async workers, or the ZooKeeper session and every connection stall.
    let replica_manager = apis.replica_manager.clone();
    let applied = tokio::task::spawn_blocking(move || {
        replica_manager.become_leader_or_follower(epochs, partitions, live_leaders, now_ms())
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let results = match applied {
        Ok(r) => r,
        Err(e) => return LeaderAndIsrResponse::default().with_error_code(e.error_code()),
    };
    let mut response = LeaderAndIsrResponse::default();
    if ctx.api_version >= 5 {
        let mut topics: Vec<LeaderAndIsrTopicError> = Vec::new();
        for (tp, id, outcome) in results {
            let error = LeaderAndIsrPartitionError::default()
                .with_partition_index(tp.partition)
                .with_error_code(code_of(outcome.as_ref().err()));
            match topics.iter_mut().find(|t| t.topic_id == id) {
                Some(t) => t.partition_errors.push(error),
                None => topics.push(
                    LeaderAndIsrTopicError::default()
                        .with_topic_id(id)
                        .with_partition_errors(vec![error]),
                ),
            }
        }
        response.topics = topics;
    } else {
        response.partition_errors = results
            .into_iter()
            .map(|(tp, _, outcome)| {
                LeaderAndIsrPartitionError::default()
                    .with_topic_name(TopicName(super::str_bytes(&tp.topic)))
                    .with_partition_index(tp.partition)
                    .with_error_code(code_of(outcome.as_ref().err()))
            })
            .collect();
    }
    response
}

pub(super) fn update_metadata(apis: &KafkaApis, request: UpdateMetadataRequest) -> UpdateMetadataResponse {
    if let Err(e) = apis.replica_manager.observe_controller_epoch(request.controller_epoch) {
        return UpdateMetadataResponse::default().with_error_code(e.error_code());
    }
    let brokers: Vec<LiveBroker> = request
        .live_brokers
        .into_iter()
        .map(|b| LiveBroker {
            id: BrokerId(b.id.0),
            endpoints: b
                .endpoints
                .into_iter()
                .map(|e| BrokerEndpoint {
                    listener: e.listener.to_string(),
                    host: e.host.to_string(),
                    port: e.port,
                })
                .collect(),
            rack: b.rack.map(|r| r.to_string()),
        })
        .collect();
    // From v5 partition states are grouped by topic and carry no topic name of their own.
    let grouped = request.topic_states.into_iter().flat_map(|t| {
        let (id, name) = (t.topic_id, t.topic_name.0.to_string());
        t.partition_states.into_iter().map(move |p| (id, name.clone(), p))
    });
    let ungrouped = request
        .ungrouped_partition_states
        .into_iter()
        .map(|p| (uuid::Uuid::nil(), p.topic_name.0.to_string(), p));
    let listener = &apis.config.inter_broker_listener;
    apis.replica_manager.update_endpoints(brokers.iter().filter_map(|b| {
        let e = b
            .endpoints
            .iter()
            .find(|e| &e.listener == listener)
            .or(b.endpoints.first())?;
        Some((b.id, format!("{}:{}", e.host, e.port)))
    }));
    let partitions = ungrouped
        .chain(grouped)
        .map(|(id, topic, p)| {
            let state = CachedPartition {
                leader: p.leader.0,
                leader_epoch: p.leader_epoch,
                isr: ids(&p.isr),
                replicas: ids(&p.replicas),
                offline_replicas: ids(&p.offline_replicas),
            };
            (topic, id, p.partition_index, state)
        })
        .collect();
    apis.metadata_cache
        .update(BrokerId(request.controller_id.0), brokers, partitions);
    UpdateMetadataResponse::default()
}

pub(super) async fn stop_replica(apis: &KafkaApis, request: StopReplicaRequest) -> StopReplicaResponse {
    let epochs = ControllerRequestEpochs {
        controller_epoch: request.controller_epoch,
        broker_epoch: request.broker_epoch,
    };
    let delete_all = request.delete_partitions;
    let mut partitions = Vec::new();
    for p in request.ungrouped_partitions {
        partitions.push((
            TopicPartition {
                topic: p.topic_name.0.to_string(),
                partition: p.partition_index,
            },
            delete_all,
        ));
    }
    for t in request.topics {
        for index in t.partition_indexes {
            partitions.push((
                TopicPartition {
                    topic: t.name.0.to_string(),
                    partition: index,
                },
                delete_all,
            ));
        }
    }
    for t in request.topic_states {
        for p in t.partition_states {
            let tp = TopicPartition {
                topic: t.topic_name.0.to_string(),
                partition: p.partition_index,
            };
            partitions.push((tp, p.delete_partition));
        }
    }
    // Deleting logs locks them (an append may hold one through a slow write) and renames their
    // dirs: blocking work, off the async workers as LeaderAndIsr's.
    let replica_manager = apis.replica_manager.clone();
    let stopped = tokio::task::spawn_blocking(move || replica_manager.stop_replicas(epochs, partitions))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    match stopped {
        Ok(results) => StopReplicaResponse::default().with_partition_errors(
            results
                .into_iter()
                .map(|(tp, outcome)| {
                    StopReplicaPartitionError::default()
                        .with_topic_name(TopicName(super::str_bytes(&tp.topic)))
                        .with_partition_index(tp.partition)
                        .with_error_code(code_of(outcome.as_ref().err()))
                })
                .collect(),
        ),
        Err(e) => StopReplicaResponse::default().with_error_code(e.error_code()),
    }
}

/// ControlledShutdown, answered by the active controller only.
pub(super) async fn controlled_shutdown(
    apis: &KafkaApis,
    request: ControlledShutdownRequest,
) -> ControlledShutdownResponse {
    let Some(controller) = apis.controller.get().filter(|c| c.is_active()) else {
        return ControlledShutdownResponse::default().with_error_code(NOT_CONTROLLER);
    };
    match controller
        .controlled_shutdown(BrokerId(request.broker_id.0), request.broker_epoch)
        .await
    {
        Ok(remaining) => ControlledShutdownResponse::default().with_remaining_partitions(
            remaining
                .into_iter()
                .map(|(topic, p)| {
                    RemainingPartition::default()
                        .with_topic_name(TopicName(super::str_bytes(&topic)))
                        .with_partition_index(p)
                })
                .collect(),
        ),
        Err(e) => ControlledShutdownResponse::default().with_error_code(e.error_code()),
    }
}
