//! ListPartitionReassignments (KIP-455): the partitions being reassigned, with their full
//! replica set and the replicas being added and removed, answered by the active controller only
//! (others: NOT_CONTROLLER, top level). `topics: null` lists every reassignment; named
//! partitions that are not being reassigned (or do not exist) are left out, as Kafka does.

use std::collections::BTreeMap;

use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    BrokerId as WireBrokerId, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};

use super::alter_partition_reassignments::default_message;
use super::{str_bytes, KafkaApis};
use crate::controller::ControllerError;
use crate::types::BrokerId;

pub(super) async fn handle(
    apis: &KafkaApis,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let Some(controller) = apis.controller.get().filter(|c| c.is_active()) else {
        return top_level_error(ControllerError::NotController);
    };
    let partitions = request.topics.map(|topics| {
        let mut asked: Vec<(String, i32)> = topics
            .into_iter()
            .flat_map(|t| {
                let name = t.name.0.to_string();
                t.partition_indexes.into_iter().map(move |p| (name.clone(), p))
            })
            .collect();
        asked.sort();
        asked.dedup();
        asked
    });
    let ongoing = match controller.list_partition_reassignments(partitions).await {
        Ok(ongoing) => ongoing,
        Err(e) => return top_level_error(e),
    };
    let wire = |list: &[BrokerId]| list.iter().map(|b| WireBrokerId(b.0)).collect::<Vec<_>>();
    let mut by_topic: BTreeMap<String, Vec<OngoingPartitionReassignment>> = BTreeMap::new();
    for ((topic, p), o) in ongoing {
        by_topic.entry(topic).or_default().push(
            OngoingPartitionReassignment::default()
                .with_partition_index(p)
                .with_replicas(wire(&o.replicas))
                .with_adding_replicas(wire(&o.adding))
                .with_removing_replicas(wire(&o.removing)),
        );
    }
    ListPartitionReassignmentsResponse::default().with_topics(
        by_topic
            .into_iter()
            .map(|(t, partitions)| {
                OngoingTopicReassignment::default()
                    .with_name(TopicName(str_bytes(&t)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}

fn top_level_error(e: ControllerError) -> ListPartitionReassignmentsResponse {
    ListPartitionReassignmentsResponse::default()
        .with_error_code(e.error_code())
        .with_error_message(Some(str_bytes(default_message(e))))
}
