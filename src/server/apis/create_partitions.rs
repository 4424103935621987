//! CreatePartitions: answered by the active controller only (others: NOT_CONTROLLER). The
//! controller validates and places the new partitions and elects their leaders; the response
//! waits (up to `timeout_ms`) until this broker's metadata shows them.

use std::time::Duration;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::KafkaApis;
use crate::network::handler::RequestContext;
use crate::types::BrokerId;

const NOT_CONTROLLER: i16 = 41;

pub(super) async fn handle(
    apis: &KafkaApis,
    _ctx: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let controller = apis.controller.get().filter(|c| c.is_active());
    let mut results = Vec::with_capacity(request.topics.len());
    let mut waiting = Vec::new();
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let code = match controller {
            None => NOT_CONTROLLER,
            Some(c) => {
                let assignment = topic.assignments.map(|a| {
                    a.into_iter()
                        .map(|x| x.broker_ids.into_iter().map(|b| BrokerId(b.0)).collect())
                        .collect()
                });
                match c
                    .create_partitions(name.clone(), topic.count, assignment, request.validate_only)
                    .await
                {
                    Ok(()) => {
                        if !request.validate_only {
                            waiting.push((name, topic.count));
                        }
                        0
                    }
                    Err(code) => code,
                }
            }
        };
        results.push(
            CreatePartitionsTopicResult::default()
                .with_name(topic.name)
                .with_error_code(code),
        );
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(request.timeout_ms.max(0) as u64);
    let mut changes = apis.replica_manager.subscribe_changes();
    while !waiting.is_empty() && tokio::time::Instant::now() < deadline {
        waiting.retain(|(t, count)| {
            apis.metadata_cache
                .topic(t)
                .is_none_or(|c| (c.partitions.len() as i32) < *count)
        });
        if waiting.is_empty() {
            break;
        }
        let step = deadline.min(tokio::time::Instant::now() + Duration::from_millis(50));
        let _ = tokio::time::timeout_at(step, changes.changed()).await;
    }
    CreatePartitionsResponse::default().with_results(results)
}
