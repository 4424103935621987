//! AlterConfigs v0–2 (the legacy, non-incremental API): the given entries replace the topic's
//! or broker's (`""` = `<default>`) whole dynamic config, as Kafka does; any broker answers,
//! with a ZooKeeper write and a change notification ([`super::config_alter`]).

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};

use super::config_alter::{self, Refusal};
use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let outcomes = config_alter::alter_resources(
        apis,
        ctx,
        "AlterConfigs",
        &request.resources,
        |r| (r.resource_type, r.resource_name.to_string()),
        |r| alter_one(apis, r, request.validate_only),
    )
    .await;
    let responses = request
        .resources
        .iter()
        .zip(outcomes)
        .map(|(resource, outcome)| {
            let mut response = AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            if let Err(refusal) = outcome {
                response.error_code = refusal.code;
                response.error_message = Some(str_bytes(&refusal.message));
            }
            response
        })
        .collect();
    AlterConfigsResponse::default().with_responses(responses)
}

async fn alter_one(
    apis: &KafkaApis,
    resource: &kafka_protocol::messages::alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), Refusal> {
    let entries: Vec<(String, Option<String>, bool)> = resource
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string()), false))
        .collect();
    config_alter::check_entries(&entries)?;
    let target = config_alter::target(resource.resource_type, resource.resource_name.as_str(), apis.broker_id)?;
    let replacement: BTreeMap<String, String> = entries
        .into_iter()
        .filter_map(|(name, value, _)| Some((name, value?)))
        .collect();
    config_alter::alter(apis, &target, validate_only, |_current| Ok(replacement.clone())).await
}
