//! IncrementalAlterConfigs v0–1: SET, DELETE, APPEND and SUBTRACT on a topic's or a broker's
//! (`""` = `<default>`) dynamic config, answered by any broker with a ZooKeeper write and a
//! change notification ([`super::config_alter`]); `validate_only` checks without writing.

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::config_alter::{self, Op, OpKind, Refusal};
use super::{str_bytes, KafkaApis};
use crate::network::handler::RequestContext;

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let outcomes = config_alter::alter_resources(
        apis,
        ctx,
        "IncrementalAlterConfigs",
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
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

async fn alter_one(
    apis: &KafkaApis,
    resource: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), Refusal> {
    let entries: Vec<(String, Option<String>, bool)> = resource
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_ref().map(|v| v.to_string()),
                c.config_operation == 1,
            )
        })
        .collect();
    config_alter::check_entries(&entries)?;
    let target = config_alter::target(resource.resource_type, resource.resource_name.as_str(), apis.broker_id)?;
    let ops = resource
        .configs
        .iter()
        .map(|c| {
            Ok(Op {
                name: c.name.to_string(),
                kind: OpKind::from_id(c.config_operation)?,
                value: c.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    config_alter::alter(apis, &target, validate_only, |current| {
        config_alter::apply_ops(&target, &ops, current)
    })
    .await
}
