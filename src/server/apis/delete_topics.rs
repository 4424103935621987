//! DeleteTopics: answered by the active controller only (others: NOT_CONTROLLER). Each topic
//! gets a `/admin/delete_topics/<t>` marker, as Kafka's admin path writes it; the controller
//! does the deletion. The response waits (up to `timeout_ms`) until this broker's metadata no
//! longer has the topic, else REQUEST_TIMED_OUT, as Kafka's delayed DeleteTopics does.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};

use super::authorize::TOPIC_AUTHORIZATION_FAILED;
use super::{str_bytes, wait_for_metadata, KafkaApis};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::security::authorizer::acl::AclOperation;
use crate::zk::paths;
use crate::zk::store::{CreateMode, ZkError, ZkStore};

use crate::protocol::error_codes::NOT_CONTROLLER;
use crate::protocol::error_codes::TOPIC_DELETION_DISABLED;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let version = ctx.api_version;
    let active = apis.controller.get().is_some_and(|c| c.is_active());
    // v0-5 name topics; v6 names or ids.
    let mut wanted: Vec<(Option<String>, uuid::Uuid)> = request
        .topic_names
        .iter()
        .map(|n| (Some(n.0.to_string()), uuid::Uuid::nil()))
        .collect();
    wanted.extend(
        request
            .topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id)),
    );
    let mut results = Vec::with_capacity(wanted.len());
    let mut pending = Vec::new();
    for (name, id) in wanted {
        let name = name.or_else(|| apis.metadata_cache.topic_name(&id));
        let mut result = DeletableTopicResult::default().with_name(name.as_deref().map(|n| TopicName(str_bytes(n))));
        if version >= 6 {
            result.topic_id = id;
        }
        result.error_code = match &name {
            _ if !active => NOT_CONTROLLER,
            None => ec::UNKNOWN_TOPIC_ID,
            Some(n) if !apis.authorized_topic(ctx, AclOperation::Delete, n) => TOPIC_AUTHORIZATION_FAILED,
            Some(n) if apis.metadata_cache.topic(n).is_none() => ec::UNKNOWN_TOPIC_OR_PARTITION,
            _ if !apis.config.delete_topic_enable => TOPIC_DELETION_DISABLED,
            Some(n) => match apis
                .zk
                .store()
                .create(&paths::delete_topic(n), &[], CreateMode::Persistent)
                .await
            {
                Ok(_) | Err(ZkError::NodeExists { .. }) => {
                    pending.push(n.clone());
                    ec::NONE
                }
                Err(e) => {
                    tracing::warn!(topic = %n, error = %e, "cannot queue topic deletion");
                    -1
                }
            },
        };
        results.push(result);
    }
    let pending = wait_for_metadata(
        &apis.metadata_cache,
        request.timeout_ms,
        pending,
        |cache, t: &String| cache.topic(t).is_some(),
    )
    .await;
    for r in &mut results {
        if r.error_code == ec::NONE && r.name.as_ref().is_some_and(|n| pending.contains(&n.0.to_string())) {
            r.error_code = ec::REQUEST_TIMED_OUT;
        }
    }
    DeleteTopicsResponse::default().with_responses(results)
}
