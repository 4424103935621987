//! CreateTopics: answered by the active controller only (others say NOT_CONTROLLER, as a
//! ZK-mode Kafka broker does). Each topic is validated (placement, then its configs against
//! Kafka's topic-level definitions: an unknown name or bad value is INVALID_CONFIG and nothing
//! is created) and written to ZooKeeper; the response
//! waits (up to `timeout_ms`) until the controller has elected its leaders and this broker's
//! metadata shows them, so a client can produce right after.

use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};

use super::{str_bytes, wait_for_metadata, KafkaApis};
use crate::log::topic_configs;
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::server::topic_creation::{self, NewTopic};
use crate::types::BrokerId;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let version = ctx.api_version;
    let active = apis.controller.get().is_some_and(|c| c.is_active());
    let mut results = Vec::with_capacity(request.topics.len());
    let mut created = Vec::new();
    for topic in request.topics {
        let name = topic.name.0.to_string();
        let mut result = CreatableTopicResult::default().with_name(topic.name.clone());
        let outcome = if !active {
            Err((
                ec::NOT_CONTROLLER,
                Some("this broker is not the active controller".to_owned()),
            ))
        } else if !apis.may_create_topic(ctx, &name) {
            Err((
                super::authorize::TOPIC_AUTHORIZATION_FAILED,
                Some("Authorization failed.".to_owned()),
            ))
        } else {
            let assignment = (!topic.assignments.is_empty()).then(|| {
                topic
                    .assignments
                    .iter()
                    .map(|a| (a.partition_index, a.broker_ids.iter().map(|b| BrokerId(b.0)).collect()))
                    .collect()
            });
            let new = NewTopic {
                name: name.clone(),
                partitions: if topic.num_partitions == -1 {
                    apis.config.num_partitions
                } else {
                    topic.num_partitions
                },
                replication_factor: if topic.replication_factor == -1 {
                    apis.config.default_replication_factor
                } else {
                    topic.replication_factor
                },
                assignment,
                configs: topic
                    .configs
                    .iter()
                    .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                    .collect(),
            };
            let configs: Vec<(String, Option<String>)> = topic
                .configs
                .iter()
                .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                .collect();
            // Kafka's order: existence, placement, then the configs (`LogConfig.validate`);
            // nothing is written unless all pass.
            match topic_creation::create(apis, &new, true).await {
                Err(e) => Err((e.error_code(), Some(e.to_string()))),
                Ok(_) => match topic_configs::validate(&configs) {
                    Err(refusal) => Err((ec::INVALID_CONFIG, Some(refusal.to_string()))),
                    Ok(()) if request.validate_only => Ok((uuid::Uuid::nil(), new)),
                    Ok(()) => topic_creation::create(apis, &new, false)
                        .await
                        .map(|id| (id, new))
                        .map_err(|e| (e.error_code(), Some(e.to_string()))),
                },
            }
        };
        match outcome {
            Ok((id, new)) => {
                if version >= 7 {
                    result.topic_id = id;
                }
                if version >= 5 {
                    result.num_partitions = new.assignment.as_ref().map_or(new.partitions, |a| a.len() as i32);
                    result.replication_factor = new
                        .assignment
                        .as_ref()
                        .and_then(|a| a.values().next().map(|r| r.len() as i16))
                        .unwrap_or(new.replication_factor);
                    result.configs = Some(Vec::new());
                }
                if !request.validate_only {
                    created.push(name);
                }
            }
            Err((code, message)) => {
                result.error_code = code;
                if version >= 1 {
                    result.error_message = message.map(|m| str_bytes(&m));
                }
            }
        }
        results.push(result);
    }
    // Wait until the new topics have leaders in this broker's metadata, as Kafka's delayed
    // CreateTopics does, but never past the request's timeout.
    wait_for_metadata(
        &apis.metadata_cache,
        request.timeout_ms,
        created,
        |cache, t: &String| {
            cache
                .topic(t)
                .is_none_or(|c| c.partitions.values().any(|p| p.leader < 0))
        },
    )
    .await;
    CreateTopicsResponse::default().with_topics(results)
}
