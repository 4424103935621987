//! What AlterConfigs and IncrementalAlterConfigs share, as Kafka 3.9's ZK-mode broker does it
//! (`ConfigAdminManager.preprocess`, then `ZkAdminManager.(incremental)AlterConfigs` and
//! `AdminZkClient.changeEntityConfig`): the checks with Kafka's codes and messages, the
//! incremental ops on an entity's config, and the write — `/config/topics/<t>` or
//! `/config/brokers/<id>|<default>` at the version just read (created if missing), then the
//! `/config/changes` notification every broker applies. A change of this broker's TLS
//! listener stores is loaded first (`server::tls_reload`). Nothing is written for a refused
//! resource. The checks and the ops are pure; [`alter`] is the edge.

use std::collections::BTreeMap;

use super::KafkaApis;
use crate::config::dynamic;
use crate::log::topic_configs::{self, ConfigRefusal};
use crate::network::handler::RequestContext;
use crate::protocol::error_codes as ec;
use crate::security::authorizer::acl::AclOperation;
use crate::server::dynamic_config::DEFAULT_ENTITY;
use crate::types::BrokerId;
use crate::zk::{KafkaZkError, ZkError};

/// `ConfigResource.Type` ids.
pub(super) const TOPIC: i8 = 2;
pub(super) const BROKER: i8 = 4;

/// A resource's error: code and message for its response entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub code: i16,
    pub message: String,
}

impl Refusal {
    fn new(code: i16, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
        }
    }

    fn invalid_request(message: impl Into<String>) -> Self {
        Refusal::new(ec::INVALID_REQUEST, message)
    }
}

/// The entity a resource names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    Topic(String),
    /// `None` = `<default>` (an empty resource name).
    Broker(Option<BrokerId>),
}

impl Target {
    fn entity(&self) -> (&'static str, String) {
        match self {
            Target::Topic(t) => ("topics", t.clone()),
            Target::Broker(None) => ("brokers", DEFAULT_ENTITY.to_string()),
            Target::Broker(Some(id)) => ("brokers", id.to_string()),
        }
    }

    /// Kafka's `ConfigResource.toString`.
    fn describe(&self) -> String {
        match self {
            Target::Topic(t) => format!("ConfigResource(type=TOPIC, name='{t}')"),
            Target::Broker(None) => "ConfigResource(type=BROKER, name='')".to_string(),
            Target::Broker(Some(id)) => format!("ConfigResource(type=BROKER, name='{id}')"),
        }
    }
}

/// The resource's target, refusing what Kafka refuses before looking at configs: other types,
/// the default topic, a broker id that is not a number or not this broker's.
pub(super) fn target(resource_type: i8, name: &str, local: BrokerId) -> Result<Target, Refusal> {
    match resource_type {
        TOPIC if name.is_empty() => Err(Refusal::invalid_request("Default topic resources are not allowed.")),
        TOPIC => Ok(Target::Topic(name.to_string())),
        BROKER if name.is_empty() => Ok(Target::Broker(None)),
        BROKER => match name.parse::<i32>() {
            Ok(id) if id == local.0 => Ok(Target::Broker(Some(BrokerId(id)))),
            Ok(_) => Err(Refusal::invalid_request(format!(
                "Unexpected broker id, expected {local}, but received {name}"
            ))),
            Err(_) => Err(Refusal::invalid_request(format!(
                "Node id must be an integer, but it is: {name}"
            ))),
        },
        other => Err(Refusal::invalid_request(format!("Unknown resource type {other}"))),
    }
}

/// For each resource, whether another one has the same type and name (both are refused).
fn duplicated(resources: &[(i8, String)]) -> Vec<bool> {
    resources
        .iter()
        .enumerate()
        .map(|(i, r)| resources.iter().enumerate().any(|(j, o)| i != j && o == r))
        .collect()
}

/// Each resource's outcome, in request order, for both alter APIs: a resource named twice is
/// refused (INVALID_REQUEST), one the caller may not ALTER_CONFIGS gets the authorization error,
/// the others are altered one after another by `alter_one`.
pub(super) async fn alter_resources<'r, R, Fut>(
    apis: &KafkaApis,
    ctx: &RequestContext,
    api: &str,
    resources: &'r [R],
    id: impl Fn(&R) -> (i8, String),
    mut alter_one: impl FnMut(&'r R) -> Fut,
) -> Vec<Result<(), Refusal>>
where
    Fut: std::future::Future<Output = Result<(), Refusal>>,
{
    let ids: Vec<(i8, String)> = resources.iter().map(&id).collect();
    let mut outcomes = Vec::with_capacity(resources.len());
    for ((resource, duplicate), (resource_type, name)) in resources.iter().zip(duplicated(&ids)).zip(&ids) {
        let denied = apis.config_resource_denied(ctx, AclOperation::AlterConfigs, *resource_type, name);
        let outcome = if duplicate {
            Err(Refusal::invalid_request(
                "Each resource must appear at most once.".to_string(),
            ))
        } else if let Some(code) = denied {
            Err(Refusal::new(code, "Authorization failed."))
        } else {
            alter_one(resource).await
        };
        if let Err(refusal) = &outcome {
            tracing::info!(resource = %name, code = refusal.code, message = %refusal.message, "{api} refused");
        }
        outcomes.push(outcome);
    }
    outcomes
}

/// `preprocess`' checks of one resource's entries: duplicate names, then nulls (`value` of
/// `None` on anything but a DELETE).
pub(super) fn check_entries(entries: &[(String, Option<String>, bool)]) -> Result<(), Refusal> {
    let mut names: Vec<&str> = entries.iter().map(|(n, _, _)| n.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(Refusal::invalid_request("Error due to duplicate config keys"));
    }
    let nulls: Vec<&str> = entries
        .iter()
        .filter(|(_, v, is_delete)| v.is_none() && !is_delete)
        .map(|(n, _, _)| n.as_str())
        .collect();
    if !nulls.is_empty() {
        return Err(Refusal::invalid_request(format!(
            "Null value not supported for : {}",
            nulls.join(", ")
        )));
    }
    Ok(())
}

/// IncrementalAlterConfigs' operation (`AlterConfigOp.OpType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OpKind {
    Set,
    Delete,
    Append,
    Subtract,
}

impl OpKind {
    pub fn from_id(id: i8) -> Result<OpKind, Refusal> {
        match id {
            0 => Ok(OpKind::Set),
            1 => Ok(OpKind::Delete),
            2 => Ok(OpKind::Append),
            3 => Ok(OpKind::Subtract),
            other => Err(Refusal::invalid_request(format!("Unknown operations type {other}"))),
        }
    }
}

/// One incremental change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Op {
    pub name: String,
    pub kind: OpKind,
    pub value: String,
}

/// Whether a config is a LIST and its default as text, for the target's kind of entity.
fn list_info(target: &Target, name: &str) -> Option<(bool, String)> {
    match target {
        Target::Topic(_) => topic_configs::list_default(name).map(|d| (d.is_some(), d.unwrap_or_default().to_string())),
        Target::Broker(_) => dynamic::list_key_default(name).map(|(list, d)| (list, d.unwrap_or_default().to_string())),
    }
}

/// Kafka's `prepareIncrementalConfigs`: the entity's new config after `ops`. APPEND adds the
/// items not yet present, SUBTRACT removes the given ones, both starting from the current
/// value or else the key's default.
pub(super) fn apply_ops(
    target: &Target,
    ops: &[Op],
    mut config: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Refusal> {
    for op in ops {
        match op.kind {
            OpKind::Set => {
                config.insert(op.name.clone(), op.value.clone());
            }
            OpKind::Delete => {
                config.remove(&op.name);
            }
            OpKind::Append | OpKind::Subtract => {
                let (verb, append) = match op.kind {
                    OpKind::Append => ("append", true),
                    _ => ("subtract", false),
                };
                let (is_list, default) = list_info(target, &op.name)
                    .ok_or_else(|| Refusal::new(ec::INVALID_CONFIG, format!("Unknown config name: {}", op.name)))?;
                if !is_list {
                    return Err(Refusal::new(
                        ec::INVALID_CONFIG,
                        format!("Config value {verb} is not allowed for config key: {}", op.name),
                    ));
                }
                let current = config.get(&op.name).cloned().unwrap_or(default);
                let mut items: Vec<String> = current
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                let given: Vec<&str> = op.value.split(',').collect();
                if append {
                    for item in given {
                        if !items.iter().any(|i| i == item) {
                            items.push(item.to_string());
                        }
                    }
                } else {
                    items.retain(|i| !given.contains(&i.as_str()));
                }
                config.insert(op.name.clone(), items.join(","));
            }
        }
    }
    Ok(config)
}

/// The check of the entity's complete new config: a topic's against Kafka's topic configs
/// (INVALID_CONFIG), a broker's against the dynamic broker keys (INVALID_REQUEST, as Kafka's
/// `ConfigAdminManager` answers broker validation failures, KAFKA-13609).
pub(super) fn check_config(target: &Target, config: &BTreeMap<String, String>) -> Result<(), Refusal> {
    match target {
        Target::Topic(_) => {
            let pairs: Vec<(String, Option<String>)> =
                config.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
            topic_configs::validate(&pairs).map_err(|refusal| match refusal {
                ConfigRefusal::InvalidValue { .. } => Refusal::new(
                    ec::INVALID_CONFIG,
                    format!("Invalid config value for resource {}: {refusal}", target.describe()),
                ),
                other => Refusal::new(ec::INVALID_CONFIG, other.to_string()),
            })
        }
        Target::Broker(id) => {
            dynamic::validate_update(config, id.is_some()).map_err(|e| Refusal::invalid_request(e.to_string()))
        }
    }
}

/// A per-broker change of a TLS listener's stores must load on this broker before it is
/// written (Kafka's `validateReconfiguration` of the listener's `SslFactory`): a keystore that
/// does not load is INVALID_CONFIG naming the key, and the one in force stays.
async fn check_tls(apis: &KafkaApis, id: BrokerId, per_broker: &BTreeMap<String, String>) -> Result<(), Refusal> {
    if apis.tls_servers.is_empty() {
        return Ok(());
    }
    let cluster = apis
        .zk
        .entity_config("brokers", DEFAULT_ENTITY)
        .await
        .map_err(|e| Refusal::new(ec::UNKNOWN_SERVER_ERROR, e.to_string()))?;
    let effective = crate::server::dynamic_config::effective_config(&apis.broker_config, &cluster, per_broker, id);
    let servers = apis.tls_servers.clone();
    // Reads the keystores: off the async workers.
    match tokio::task::spawn_blocking(move || crate::server::tls_reload::validate(&servers, &effective)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Refusal::new(
            ec::INVALID_CONFIG,
            format!("Validation of dynamic config update of SSLFactory failed: {e}"),
        )),
        Err(e) => Err(Refusal::new(ec::UNKNOWN_SERVER_ERROR, e.to_string())),
    }
}

/// Reads the entity, computes its new config with `change`, checks it and (unless
/// `validate_only`) writes it at the version read, then the change notification. A concurrent
/// writer makes the write fail; it is retried from the read a few times.
pub(super) async fn alter(
    apis: &KafkaApis,
    target: &Target,
    validate_only: bool,
    change: impl Fn(BTreeMap<String, String>) -> Result<BTreeMap<String, String>, Refusal>,
) -> Result<(), Refusal> {
    let (entity_type, entity) = target.entity();
    let zk_failure = |e: KafkaZkError| Refusal::new(ec::UNKNOWN_SERVER_ERROR, e.to_string());
    for _ in 0..5 {
        let (current, version) = apis
            .zk
            .entity_config_versioned(entity_type, &entity)
            .await
            .map_err(zk_failure)?;
        let new = change(current)?;
        if let Target::Topic(topic) = target {
            if apis.metadata_cache.topic(topic).is_none() {
                return Err(Refusal::new(
                    ec::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("The topic '{topic}' does not exist."),
                ));
            }
        }
        check_config(target, &new)?;
        if let Target::Broker(Some(id)) = target {
            check_tls(apis, *id, &new).await?;
        }
        if validate_only {
            return Ok(());
        }
        if let Target::Broker(id) = target {
            dynamic::refuse_passwords(&new, id.is_some()).map_err(|why| {
                Refusal::new(
                    ec::INVALID_CONFIG,
                    format!("Invalid config value for resource {}: {why}", target.describe()),
                )
            })?;
        }
        match apis.zk.change_entity_config(entity_type, &entity, &new, version).await {
            Ok(notification) => {
                tracing::info!(entity = %format!("{entity_type}/{entity}"), config = ?new, %notification, "updated a config entity");
                return Ok(());
            }
            Err(KafkaZkError::Zk(ZkError::BadVersion { .. } | ZkError::NodeExists { .. })) => continue,
            Err(e) => return Err(zk_failure(e)),
        }
    }
    Err(Refusal::new(
        ec::UNKNOWN_SERVER_ERROR,
        format!("/config/{entity_type}/{entity} kept changing while being updated; try again"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn op(name: &str, kind: OpKind, value: &str) -> Op {
        Op {
            name: name.into(),
            kind,
            value: value.into(),
        }
    }

    #[test]
    fn resources_are_read_as_kafka_reads_them() {
        let me = BrokerId(1);
        assert_eq!(target(TOPIC, "t", me), Ok(Target::Topic("t".into())));
        assert_eq!(target(BROKER, "", me), Ok(Target::Broker(None)));
        assert_eq!(target(BROKER, "1", me), Ok(Target::Broker(Some(me))));
        assert_eq!(
            target(BROKER, "2", me).map_err(|r| r.message),
            Err("Unexpected broker id, expected 1, but received 2".into())
        );
        assert_eq!(target(TOPIC, "", me).map_err(|r| r.code), Err(ec::INVALID_REQUEST));
        assert_eq!(target(8, "root", me).map_err(|r| r.code), Err(ec::INVALID_REQUEST));
        let dup = duplicated(&[
            (TOPIC, "a".into()),
            (TOPIC, "b".into()),
            (TOPIC, "a".into()),
            (BROKER, "a".into()),
        ]);
        assert_eq!(dup, [true, false, true, false]);
        let entries = |e: &[(&str, Option<&str>, bool)]| -> Vec<(String, Option<String>, bool)> {
            e.iter()
                .map(|(n, v, d)| (n.to_string(), v.map(str::to_string), *d))
                .collect()
        };
        assert_eq!(
            check_entries(&entries(&[("a", Some("1"), false), ("a", Some("2"), false)])).map_err(|r| r.message),
            Err("Error due to duplicate config keys".into())
        );
        assert_eq!(
            check_entries(&entries(&[("a", None, false), ("b", None, true)])).map_err(|r| r.message),
            Err("Null value not supported for : a".into())
        );
    }

    #[test]
    fn incremental_ops_change_the_current_config() {
        let topic = Target::Topic("t".into());
        let current = map(&[("retention.ms", "1000"), ("segment.bytes", "4096")]);
        let new = apply_ops(
            &topic,
            &[
                op("retention.ms", OpKind::Set, "2000"),
                op("segment.bytes", OpKind::Delete, ""),
                op("cleanup.policy", OpKind::Append, "compact"),
            ],
            current,
        )
        .expect("applies");
        assert_eq!(
            new,
            map(&[("retention.ms", "2000"), ("cleanup.policy", "delete,compact")]),
            "APPEND starts from the default (delete)"
        );
        let new = apply_ops(&topic, &[op("cleanup.policy", OpKind::Subtract, "delete")], new).expect("applies");
        assert_eq!(new.get("cleanup.policy").map(String::as_str), Some("compact"));
        let err = apply_ops(&topic, &[op("retention.ms", OpKind::Append, "1")], BTreeMap::new()).expect_err("refused");
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                ec::INVALID_CONFIG,
                "Config value append is not allowed for config key: retention.ms"
            )
        );
        let broker = Target::Broker(None);
        let new = apply_ops(
            &broker,
            &[op("log.cleanup.policy", OpKind::Append, "compact")],
            BTreeMap::new(),
        )
        .expect("applies");
        assert_eq!(new, map(&[("log.cleanup.policy", "delete,compact")]));
        assert_eq!(OpKind::from_id(7).map_err(|r| r.code), Err(ec::INVALID_REQUEST));
    }

    #[test]
    fn new_configs_are_checked_with_kafkas_codes_and_messages() {
        let topic = Target::Topic("t".into());
        assert_eq!(check_config(&topic, &map(&[("retention.ms", "100")])), Ok(()));
        let err = check_config(&topic, &map(&[("no.such.config", "1")])).expect_err("refused");
        assert_eq!(
            (err.code, err.message.as_str()),
            (ec::INVALID_CONFIG, "Unknown topic config name: no.such.config")
        );
        let err = check_config(&topic, &map(&[("retention.ms", "soon")])).expect_err("refused");
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                ec::INVALID_CONFIG,
                "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): Invalid value soon for \
                 configuration retention.ms: Not a number of type LONG"
            )
        );
        let err = check_config(&Target::Broker(Some(BrokerId(1))), &map(&[("broker.id", "2")])).expect_err("refused");
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                ec::INVALID_REQUEST,
                "Cannot update these configs dynamically: Set(broker.id)"
            )
        );
    }
}
