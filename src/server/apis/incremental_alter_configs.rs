//! IncrementalAlterConfigs v0–1: SET, DELETE, APPEND and SUBTRACT on a topic's or a broker's
//! (`""` = `<default>`) dynamic config, answered by any broker with a ZooKeeper write and a
//! change notification ([`super::config_alter`]); `validate_only` checks without writing.

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::config_alter::{self, Op, OpKind, Refusal};
use super::{str_bytes, KafkaApis};

pub(super) async fn handle(
    apis: &KafkaApis,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let ids: Vec<(i8, String)> = request
        .resources
        .iter()
        .map(|r| (r.resource_type, r.resource_name.to_string()))
        .collect();
    let duplicated = config_alter::duplicated(&ids);
    let mut responses = Vec::with_capacity(request.resources.len());
    for (resource, duplicate) in request.resources.iter().zip(duplicated) {
        let outcome = if duplicate {
            Err(Refusal {
                code: crate::protocol::error_codes::INVALID_REQUEST,
                message: "Each resource must appear at most once.".into(),
            })
        } else {
            alter_one(apis, resource, request.validate_only).await
        };
        let mut response = AlterConfigsResourceResponse::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name.clone());
        if let Err(refusal) = outcome {
            tracing::info!(resource = %resource.resource_name.as_str(), code = refusal.code, message = %refusal.message, "IncrementalAlterConfigs refused");
            response.error_code = refusal.code;
            response.error_message = Some(str_bytes(&refusal.message));
        }
        responses.push(response);
    }
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
