//! CreatePartitions: answered by the active controller only (others: NOT_CONTROLLER). The
//! controller validates and places the new partitions and elects their leaders; the response
//! waits (up to `timeout_ms`) until this broker's metadata shows them.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::{wait_for_metadata, KafkaApis};
use crate::network::handler::RequestContext;
use crate::types::BrokerId;

use crate::protocol::error_codes::NOT_CONTROLLER;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let controller = apis.controller.get().filter(|c| c.is_active());
    let mut results = Vec::with_capacity(request.topics.len());
    let mut waiting = Vec::new();
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let denied = apis.topic_denied(ctx, crate::security::authorizer::acl::AclOperation::Alter, &name);
        let code = match (denied, controller) {
            (Some(code), _) => code,
            (None, None) => NOT_CONTROLLER,
            (None, Some(c)) => {
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
                        crate::protocol::error_codes::NONE
                    }
                    Err(e) => e.error_code(),
                }
            }
        };
        results.push(
            CreatePartitionsTopicResult::default()
                .with_name(topic.name)
                .with_error_code(code),
        );
    }
    wait_for_metadata(
        &apis.metadata_cache,
        request.timeout_ms,
        waiting,
        |cache, (t, count): &(String, i32)| cache.topic(t).is_none_or(|c| (c.partitions.len() as i32) < *count),
    )
    .await;
    CreatePartitionsResponse::default().with_results(results)
}
