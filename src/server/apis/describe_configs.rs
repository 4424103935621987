//! DescribeConfigs v0–4 as Kafka 3.9's `ConfigHelper.describeConfigs` answers it in ZK mode:
//! TOPIC resources from `/config/topics/<t>` over the broker's effective defaults, BROKER
//! resources for this broker (`resource_name` = its id) or the cluster default (`""`), and
//! BROKER_LOGGER for the root logger. ZooKeeper is read at request time; values, sources and
//! synonyms come from `config::describe`. Errors are per resource: UNKNOWN_TOPIC_OR_PARTITION,
//! INVALID_TOPIC_EXCEPTION, INVALID_REQUEST (another broker's id, a non-numeric id, an
//! unsupported type) with Kafka's messages.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use super::{str_bytes, KafkaApis};
use crate::config::describe::{self, BrokerLayers, ConfigSource, DescribedConfig};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::server::topic_creation::valid_topic_name;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;

/// A resource's failure: error code and Kafka's message.
type Failure = (i16, Option<String>);

pub(super) async fn handle(
    apis: &KafkaApis,
    ctx: &RequestContext,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let version = ctx.api_version;
    // The broker layers are read once per request, and only if a resource needs them.
    let mut layers: Option<Result<BrokerLayers, Failure>> = None;
    let mut results = Vec::with_capacity(request.resources.len());
    for resource in &request.resources {
        let denied = apis.config_resource_denied(
            ctx,
            crate::security::authorizer::acl::AclOperation::DescribeConfigs,
            resource.resource_type,
            &resource.resource_name,
        );
        let outcome = match denied {
            Some(code) => Err((code, Some("Authorization failed.".to_string()))),
            None => describe_resource(apis, resource, &mut layers).await,
        };
        let mut result = DescribeConfigsResult::default();
        result.resource_type = resource.resource_type;
        result.resource_name = resource.resource_name.clone();
        match outcome {
            Ok(entries) => {
                result.error_code = ec::NONE;
                result.configs = filter(entries, resource.configuration_keys.as_deref())
                    .into_iter()
                    .map(|e| encode(e, version, request.include_synonyms, request.include_documentation))
                    .collect();
            }
            Err((code, message)) => {
                result.error_code = code;
                result.error_message = message.as_deref().map(str_bytes);
            }
        }
        results.push(result);
    }
    let mut response = DescribeConfigsResponse::default();
    response.results = results;
    response
}

async fn describe_resource(
    apis: &KafkaApis,
    resource: &DescribeConfigsResource,
    layers: &mut Option<Result<BrokerLayers, Failure>>,
) -> Result<Vec<DescribedConfig>, Failure> {
    let name = resource.resource_name.as_str();
    let this_broker = apis.broker_id.0;
    match resource.resource_type {
        TOPIC => {
            if !valid_topic_name(name) {
                return Err((
                    ec::INVALID_TOPIC_EXCEPTION,
                    Some(format!("Topic name \"{name}\" is illegal")),
                ));
            }
            if apis.metadata_cache.topic(name).is_none() {
                return Err((ec::UNKNOWN_TOPIC_OR_PARTITION, None));
            }
            let overrides = apis.zk.topic_config(name).await.map_err(zk_failure)?;
            let layers = broker_layers(apis, layers).await?;
            Ok(describe::describe_topic(&layers, &overrides))
        }
        BROKER if name.is_empty() => Ok(describe::describe_broker_default(&broker_layers(apis, layers).await?)),
        BROKER => {
            if broker_id_of(name)? != this_broker {
                return Err((
                    ec::INVALID_REQUEST,
                    Some(format!(
                        "Unexpected broker id, expected {this_broker} or empty string, but received {name}"
                    )),
                ));
            }
            let layers = broker_layers(apis, layers).await?;
            Ok(describe::describe_broker(&apis.broker_config, &layers))
        }
        BROKER_LOGGER => {
            if name.is_empty() {
                return Err((ec::INVALID_REQUEST, Some("Broker id must not be empty".to_string())));
            }
            if broker_id_of(name)? != this_broker {
                return Err((
                    ec::INVALID_REQUEST,
                    Some(format!(
                        "Unexpected broker id, expected {this_broker} but received {name}"
                    )),
                ));
            }
            Ok(describe::describe_broker_logger(root_log_level()))
        }
        other => Err((ec::INVALID_REQUEST, Some(format!("Unsupported resource type: {other}")))),
    }
}

/// Kafka's `resourceNameToBrokerId`.
fn broker_id_of(name: &str) -> Result<i32, Failure> {
    name.parse().map_err(|_| {
        (
            ec::INVALID_REQUEST,
            Some(format!("Broker id must be an integer, but it is: {name}")),
        )
    })
}

async fn broker_layers(
    apis: &KafkaApis,
    cached: &mut Option<Result<BrokerLayers, Failure>>,
) -> Result<BrokerLayers, Failure> {
    if let Some(layers) = cached {
        return layers.clone();
    }
    let read = async {
        let own = apis
            .zk
            .entity_config("brokers", &apis.broker_id.0.to_string())
            .await
            .map_err(zk_failure)?;
        let default = apis
            .zk
            .entity_config("brokers", "<default>")
            .await
            .map_err(zk_failure)?;
        Ok(BrokerLayers::new(&apis.broker_config, &own, &default))
    };
    let layers = read.await;
    *cached = Some(layers.clone());
    layers
}

fn zk_failure(e: crate::zk::KafkaZkError) -> Failure {
    tracing::warn!(error = %e, "DescribeConfigs could not read ZooKeeper");
    (ec::UNKNOWN_SERVER_ERROR, Some(e.to_string()))
}

/// `configuration_keys`: null or empty means every key; otherwise the named ones that exist.
fn filter(entries: Vec<DescribedConfig>, keys: Option<&[kafka_protocol::protocol::StrBytes]>) -> Vec<DescribedConfig> {
    match keys {
        Some(keys) if !keys.is_empty() => {
            let wanted: BTreeMap<&str, ()> = keys.iter().map(|k| (k.as_str(), ())).collect();
            entries
                .into_iter()
                .filter(|e| wanted.contains_key(e.name.as_str()))
                .collect()
        }
        _ => entries,
    }
}

fn encode(
    entry: DescribedConfig,
    version: i16,
    include_synonyms: bool,
    include_documentation: bool,
) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult::default();
    out.name = str_bytes(&entry.name);
    out.value = entry.value.as_deref().map(str_bytes);
    out.read_only = entry.read_only;
    // v0 has no source; `is_default` says whether the value is Kafka's default.
    out.is_default = version == 0 && entry.source == ConfigSource::Default;
    out.config_source = entry.source.id();
    out.is_sensitive = entry.sensitive;
    if include_synonyms && version >= 1 {
        out.synonyms = entry
            .synonyms
            .into_iter()
            .map(|s| {
                let mut synonym = DescribeConfigsSynonym::default();
                synonym.name = str_bytes(&s.name);
                synonym.value = s.value.as_deref().map(str_bytes);
                synonym.source = s.source.id();
                synonym
            })
            .collect();
    }
    out.config_type = entry.config_type;
    if include_documentation {
        out.documentation = entry.documentation.map(str_bytes);
    }
    out
}

/// The root logger's level in log4j's spelling, from the process's tracing filter.
fn root_log_level() -> &'static str {
    use tracing::level_filters::LevelFilter;
    match LevelFilter::current() {
        LevelFilter::OFF => "OFF",
        LevelFilter::ERROR => "ERROR",
        LevelFilter::WARN => "WARN",
        LevelFilter::INFO => "INFO",
        LevelFilter::DEBUG => "DEBUG",
        _ => "TRACE",
    }
}
