//! ElectLeaders (KIP-460): preferred or unclean elections, answered by the active controller
//! only (others: NOT_CONTROLLER). Per-partition results: 0, ELECTION_NOT_NEEDED,
//! PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.

use std::collections::BTreeMap;

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};

use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;

use crate::controller::error::result_code;
use crate::protocol::error_codes::NOT_CONTROLLER;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    let Some(controller) = apis.controller.get().filter(|c| c.is_active()) else {
        return ElectLeadersResponse::default().with_error_code(if ctx.api_version >= 1 { NOT_CONTROLLER } else { 0 });
    };
    let unclean = ctx.api_version >= 1 && request.election_type == 1;
    let partitions = request.topic_partitions.map(|topics| {
        topics
            .into_iter()
            .flat_map(|t| {
                let name = t.topic.0.to_string();
                t.partitions.into_iter().map(move |p| (name.clone(), p))
            })
            .collect()
    });
    match controller.elect_leaders(partitions, unclean).await {
        Ok(outcome) => {
            let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
            for ((topic, p), result) in outcome {
                by_topic.entry(topic).or_default().push(
                    PartitionResult::default()
                        .with_partition_id(p)
                        .with_error_code(result_code(result)),
                );
            }
            ElectLeadersResponse::default().with_replica_election_results(
                by_topic
                    .into_iter()
                    .map(|(t, results)| {
                        ReplicaElectionResult::default()
                            .with_topic(TopicName(str_bytes(&t)))
                            .with_partition_result(results)
                    })
                    .collect(),
            )
        }
        Err(e) => {
            ElectLeadersResponse::default().with_error_code(if ctx.api_version >= 1 { e.error_code() } else { 0 })
        }
    }
}
