//! `kastle configs`, shaped like Kafka 3.9's `kafka-configs.sh` (`ConfigCommand`) with
//! `--bootstrap-server`: `--describe` and `--alter` of `topics`, `brokers` (by id or
//! `--entity-default`) and `broker-loggers`, through DescribeConfigs and
//! IncrementalAlterConfigs (Kafka 3.9's tool alters broker configs with the older AlterConfigs;
//! the incremental form changes only the named keys, with the same result). `users` (SCRAM
//! credentials) is `configs_users`'.
//!
//! Also the config reading `kastle topics --describe` shares ([`describe_entries`]).

use clap::Args;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::{DescribeConfigsRequest, IncrementalAlterConfigsRequest};

use super::client::{str_bytes, Admin};
use super::{fail, java, require_bootstrap, CliError, CliResult};
use crate::client::BrokerRef;
use crate::protocol::error_codes;

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

pub const SOURCE_DYNAMIC_TOPIC: i8 = 1;
pub const SOURCE_DYNAMIC_BROKER: i8 = 2;
pub const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
pub const SOURCE_DEFAULT: i8 = 5;

/// Kafka's `ConfigEntry.ConfigSource` names, by wire id.
pub fn source_name(source: i8) -> &'static str {
    match source {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "DYNAMIC_CLIENT_METRICS_CONFIG",
        _ => "UNKNOWN",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
}

/// One entry of a DescribeConfigs answer, as the admin client's `ConfigEntry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
    pub is_sensitive: bool,
    pub read_only: bool,
    pub synonyms: Vec<Synonym>,
}

impl ConfigEntry {
    /// `ConfigEntry.isDefault()`: the source is DEFAULT_CONFIG.
    pub fn is_default(&self) -> bool {
        self.source == SOURCE_DEFAULT
    }

    /// The value as Java's string concatenation prints it (`null` when absent or sensitive).
    pub fn value_str(&self) -> &str {
        self.value.as_deref().unwrap_or("null")
    }
}

/// The entries of one resource's result, in the broker's order.
pub fn entries_of(result: &DescribeConfigsResult) -> Vec<ConfigEntry> {
    result
        .configs
        .iter()
        .map(|c| ConfigEntry {
            name: c.name.to_string(),
            value: c.value.as_ref().map(|v| v.to_string()),
            source: c.config_source,
            is_sensitive: c.is_sensitive,
            read_only: c.read_only,
            synonyms: c
                .synonyms
                .iter()
                .map(|s| Synonym {
                    name: s.name.to_string(),
                    value: s.value.as_ref().map(|v| v.to_string()),
                    source: s.source,
                })
                .collect(),
        })
        .collect()
}

/// `entries` in the order the admin client's `Config.entries()` (a `HashMap` by name) yields them.
pub fn java_config_order(entries: Vec<ConfigEntry>) -> Vec<ConfigEntry> {
    java::hash_order(entries, None, |e| java::string_hash(&e.name))
}

/// DescribeConfigs for resources of one type; per resource its entries or Kafka's message.
/// Broker resources go to that broker, the others (and the broker default) to any broker.
pub async fn describe_entries(
    admin: &Admin,
    resource_type: i8,
    names: &[String],
    include_synonyms: bool,
) -> CliResult<Vec<(String, Result<Vec<ConfigEntry>, String>)>> {
    let mut out = Vec::new();
    let per_broker = resource_type == RESOURCE_BROKER || resource_type == RESOURCE_BROKER_LOGGER;
    let batches: Vec<Vec<String>> = if per_broker {
        names.iter().map(|n| vec![n.clone()]).collect()
    } else {
        vec![names.to_vec()]
    };
    for batch in batches {
        if batch.is_empty() {
            continue;
        }
        let request = DescribeConfigsRequest::default()
            .with_resources(
                batch
                    .iter()
                    .map(|n| {
                        DescribeConfigsResource::default()
                            .with_resource_type(resource_type)
                            .with_resource_name(str_bytes(n))
                            .with_configuration_keys(None)
                    })
                    .collect(),
            )
            .with_include_synonyms(include_synonyms);
        let target = match batch[0].parse::<i32>() {
            Ok(id) if per_broker => Some(BrokerRef::Id(id)),
            _ => None,
        };
        let response = match target {
            Some(broker) => admin.send(broker, request, (1, 4)).await?,
            None => admin.send_any(request, (1, 4)).await?,
        };
        for name in &batch {
            let result = response
                .results
                .iter()
                .find(|r| r.resource_type == resource_type && r.resource_name.as_str() == name.as_str());
            let entries = match result {
                None => Err(format!("The broker did not return configs for {name}")),
                Some(r) if r.error_code != error_codes::NONE => {
                    Err(super::error_message(r.error_code, r.error_message.as_deref()))
                }
                Some(r) => Ok(entries_of(r)),
            };
            out.push((name.clone(), entries));
        }
    }
    Ok(out)
}

/// `kastle configs`: options as `kafka-configs.sh` names them.
#[derive(Debug, Args)]
#[command(
    about = "Describe or alter the dynamic configs of topics, brokers and users, like kafka-configs.sh",
    long_about = "This tool helps to manipulate and describe entity config for a topic, broker or user \
        (kafka-configs.sh with --bootstrap-server). Entity types: topics, brokers, broker-loggers, \
        users (SCRAM credentials: --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'). \
        Needs a broker serving DescribeConfigs and IncrementalAlterConfigs (users: \
        DescribeUserScramCredentials and AlterUserScramCredentials)."
)]
pub struct ConfigsArgs {
    /// The Kafka servers to connect to.
    #[arg(long, value_name = "server to connect to")]
    pub bootstrap_server: Option<String>,
    /// List configs for the given entity.
    #[arg(long)]
    pub describe: bool,
    /// Alter the configuration for the entity.
    #[arg(long)]
    pub alter: bool,
    /// List all configs for the given topic, broker, or broker-logger entity (includes static
    /// configuration when the entity type is brokers).
    #[arg(long)]
    pub all: bool,
    /// Type of entity (topics/brokers/broker-loggers/users).
    #[arg(long)]
    pub entity_type: Option<String>,
    /// Name of entity (topic name/broker id/user principal name).
    #[arg(long)]
    pub entity_name: Option<String>,
    /// Default entity name for brokers (applies to corresponding entity type in command line).
    #[arg(long)]
    pub entity_default: bool,
    /// Key Value pairs of configs to add. Square brackets can be used to group values which
    /// contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.
    #[arg(long)]
    pub add_config: Option<String>,
    /// Config keys to remove 'k1,k2'.
    #[arg(long, value_delimiter = ',')]
    pub delete_config: Vec<String>,
    /// The topic's name (same as --entity-type topics --entity-name).
    #[arg(long)]
    pub topic: Option<String>,
    /// The broker's ID (same as --entity-type brokers --entity-name).
    #[arg(long)]
    pub broker: Option<String>,
    /// The config defaults for all brokers.
    #[arg(long)]
    pub broker_defaults: bool,
    /// The user's principal name (same as --entity-type users --entity-name).
    #[arg(long)]
    pub user: Option<String>,
}

/// The entity a command is about, after Kafka's checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entity {
    /// `topics`, `brokers` or `broker-loggers`.
    pub kind: String,
    /// `None`: every entity of the type; `Some("")`: the broker default.
    pub name: Option<String>,
}

/// `ConfigCommandOptions.checkArgs` for the entity types kastle serves.
pub fn check_args(a: &ConfigsArgs) -> CliResult<Entity> {
    if usize::from(a.describe) + usize::from(a.alter) != 1 {
        return fail("Command must include exactly one action: --describe, --alter");
    }
    if a.describe {
        if a.add_config.is_some() {
            return fail("Option \"[describe]\" can't be used with option \"[add-config]\"");
        }
        if !a.delete_config.is_empty() {
            return fail("Option \"[describe]\" can't be used with option \"[delete-config]\"");
        }
    }
    let mut types: Vec<String> = a.entity_type.iter().cloned().collect();
    if a.topic.is_some() {
        types.push("topics".into());
    }
    if a.broker.is_some() || a.broker_defaults {
        types.push("brokers".into());
    }
    if a.user.is_some() {
        types.push("users".into());
    }
    let specific = a.topic.is_some() || a.broker.is_some() || a.broker_defaults || a.user.is_some();
    if specific && (a.entity_type.is_some() || a.entity_name.is_some() || a.entity_default) {
        return fail("--entity-{type,name,default} should not be used in conjunction with specific entity flags");
    }
    if types.len() > 1 {
        return fail("Only 'users' and 'clients' entity types may be specified together");
    }
    let Some(kind) = types.pop() else {
        return fail("At least one entity type must be specified");
    };
    match kind.as_str() {
        "topics" | "brokers" | "broker-loggers" | "users" => {}
        "clients" | "ips" | "client-metrics" => {
            return fail(format!("Entity type {kind} is not supported by kastle (topics, brokers, broker-loggers, users are)"))
        }
        other => return fail(format!(
            "Invalid entity type {other}, the entity type must be one of topics, clients, users, brokers, ips, broker-loggers, client-metrics with a --bootstrap-server or --bootstrap-controller argument"
        )),
    }
    require_bootstrap(
        &a.bootstrap_server,
        "One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified",
    )?;
    let name = if a.entity_default || a.broker_defaults {
        Some(String::new())
    } else {
        a.entity_name
            .clone()
            .or_else(|| a.topic.clone())
            .or_else(|| a.broker.clone())
            .or_else(|| a.user.clone())
    };
    if let Some(n) = name.as_deref().filter(|n| !n.is_empty()) {
        if (kind == "brokers" || kind == "broker-loggers") && n.parse::<i32>().is_err() {
            return fail(format!(
                "The entity name for {kind} must be a valid integer broker id, but it is: {n}"
            ));
        }
    }
    if a.describe && kind == "broker-loggers" && name.as_deref().is_none_or(str::is_empty) {
        return fail("an entity name must be specified with --describe of broker-loggers");
    }
    if a.alter {
        if kind == "brokers" || kind == "users" {
            if name.is_none() {
                return fail(
                    "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
                );
            }
        } else if name.as_deref().is_none_or(str::is_empty) {
            return fail(format!("an entity name must be specified with --alter of {kind}"));
        }
        if a.add_config.is_none() && a.delete_config.is_empty() {
            return fail(
                "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter",
            );
        }
    }
    Ok(Entity { kind, name })
}

/// Splits `s` at `sep` where the separator is not inside `[...]` (ConfigCommand's
/// `(?=[^\]]*(?:\[|$))` look-ahead).
fn split_outside_brackets(s: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c == sep && depth == 0 {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

/// `parseConfigsToBeAdded`: `k1=v1,k2=[v1,v2]` into pairs (brackets dropped from values).
pub fn parse_add_config(raw: &str) -> CliResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pair in split_outside_brackets(raw, ',') {
        let kv = split_outside_brackets(&pair, '=');
        if kv.len() != 2 {
            return fail(
                "requirement failed: Invalid entity config: all configs to be added must be in the format \"key=val\".",
            );
        }
        let key = kv[0].trim().to_owned();
        let value = kv[1].replace(['[', ']'], "").trim().to_owned();
        if !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return fail(format!("Invalid character found for config key: {key}"));
        }
        // A Properties object: a later duplicate replaces an earlier one.
        out.retain(|(k, _): &(String, String)| *k != key);
        out.push((key, value));
    }
    Ok(out)
}

/// The header ConfigCommand prints before an entity's entries.
pub fn describe_header(kind: &str, name: &str, all: bool) -> String {
    if name.is_empty() {
        format!("Default configs for {kind} in the cluster are:")
    } else {
        let which = if all { "All" } else { "Dynamic" };
        format!("{which} configs for {} {name} are:", kind.trim_end_matches('s'))
    }
}

/// The source an entry must have to be listed without `--all`.
pub fn dynamic_source(kind: &str, name: &str) -> Option<i8> {
    match kind {
        "topics" => Some(SOURCE_DYNAMIC_TOPIC),
        "brokers" if name.is_empty() => Some(SOURCE_DYNAMIC_DEFAULT_BROKER),
        "brokers" => Some(SOURCE_DYNAMIC_BROKER),
        _ => None,
    }
}

/// ConfigCommand's describe of one entity: the header, then each entry (filtered to the
/// dynamic source unless `all`, sorted by name) with its synonyms.
pub fn format_describe(kind: &str, name: &str, all: bool, entries: &[ConfigEntry]) -> String {
    let mut out = describe_header(kind, name, all);
    out.push('\n');
    let filter = if all { None } else { dynamic_source(kind, name) };
    let mut shown: Vec<&ConfigEntry> = entries
        .iter()
        .filter(|e| filter.is_none_or(|s| e.source == s))
        .collect();
    shown.sort_by(|a, b| java_compare(&a.name, &b.name));
    for e in shown {
        let synonyms: Vec<String> = e
            .synonyms
            .iter()
            .map(|s| {
                format!(
                    "{}:{}={}",
                    source_name(s.source),
                    s.name,
                    s.value.as_deref().unwrap_or("null")
                )
            })
            .collect();
        out.push_str(&format!(
            "  {}={} sensitive={} synonyms={{{}}}\n",
            e.name,
            e.value_str(),
            e.is_sensitive,
            synonyms.join(", ")
        ));
    }
    out
}

/// `String.compareTo`: by UTF-16 code units.
fn java_compare(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The line printed after a successful alter.
pub fn completed_line(kind: &str, name: &str) -> String {
    if name.is_empty() {
        format!("Completed updating default config for {kind} in the cluster.")
    } else {
        format!("Completed updating config for {} {name}.", kind.trim_end_matches('s'))
    }
}

fn resource_type_of(kind: &str) -> i8 {
    match kind {
        "brokers" => RESOURCE_BROKER,
        "broker-loggers" => RESOURCE_BROKER_LOGGER,
        _ => RESOURCE_TOPIC,
    }
}

/// Runs the command; what it prints goes to stdout.
pub async fn run(a: &ConfigsArgs, args_line: &str) -> CliResult<()> {
    let entity = check_args(a)?;
    let users = match entity.kind.as_str() {
        "users" => Some(super::configs_users::check(a, entity.name.as_deref())?),
        _ => None,
    };
    let bootstrap = a.bootstrap_server.as_deref().unwrap_or_default();
    let mut admin = Admin::connect(bootstrap).await?;
    let result = match users {
        Some(command) => super::configs_users::execute(&mut admin, command).await,
        None if a.alter => alter(&admin, a, &entity).await,
        None => describe(&mut admin, a, &entity).await,
    };
    result.map_err(|e| match e {
        CliError::Failed(m) if m.starts_with("Invalid config(s)") => CliError::Failed(m),
        other => CliError::Failed(format!(
            "Error while executing config command with args '{args_line}'\n{}",
            match other {
                CliError::Unsupported(api) => format!(
                    "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support {}",
                    api_camel(api)
                ),
                other => other.to_string(),
            }
        )),
    })
}

/// `DescribeConfigs` → `DESCRIBE_CONFIGS`, as Kafka's `ApiKeys` names it.
pub fn api_camel(api: kafka_protocol::messages::ApiKey) -> String {
    let mut out = String::new();
    for (i, c) in format!("{api:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

async fn describe(admin: &mut Admin, a: &ConfigsArgs, entity: &Entity) -> CliResult<()> {
    let names: Vec<String> = match &entity.name {
        Some(n) => vec![n.clone()],
        None if entity.kind == "topics" => {
            let names = admin.topic_names().await?;
            // ListTopicsResult.names(): the key set of a HashMap.
            java::hash_order(names, None, |n| java::string_hash(n))
        }
        None => {
            let mut ids: Vec<String> = admin.brokers.iter().map(|b| b.id.to_string()).collect();
            ids.push(String::new());
            ids
        }
    };
    let described = describe_entries(admin, resource_type_of(&entity.kind), &names, true).await?;
    for (name, entries) in described {
        let entries = entries.map_err(CliError::Failed)?;
        print!("{}", format_describe(&entity.kind, &name, a.all, &entries));
    }
    Ok(())
}

async fn alter(admin: &Admin, a: &ConfigsArgs, entity: &Entity) -> CliResult<()> {
    let name = entity.name.clone().unwrap_or_default();
    let to_add = match &a.add_config {
        Some(raw) => parse_add_config(raw)?,
        None => Vec::new(),
    };
    let to_delete: Vec<String> = a.delete_config.iter().map(|k| k.trim().to_owned()).collect();
    let resource_type = resource_type_of(&entity.kind);
    if !to_delete.is_empty() {
        let current = describe_entries(admin, resource_type, std::slice::from_ref(&name), false).await?;
        let entries = match current.into_iter().next() {
            Some((_, Ok(entries))) => entries,
            Some((_, Err(message))) => return fail(message),
            None => Vec::new(),
        };
        let filter = dynamic_source(&entity.kind, &name);
        let invalid: Vec<&str> = to_delete
            .iter()
            .filter(|k| {
                !entries
                    .iter()
                    .any(|e| e.name == **k && filter.is_none_or(|s| e.source == s))
            })
            .map(String::as_str)
            .collect();
        if !invalid.is_empty() {
            return fail(format!("Invalid config(s): {}", invalid.join(",")));
        }
    }
    let mut ops: Vec<AlterableConfig> = to_add
        .iter()
        .map(|(k, v)| {
            AlterableConfig::default()
                .with_name(str_bytes(k))
                .with_config_operation(0)
                .with_value(Some(str_bytes(v)))
        })
        .collect();
    ops.extend(to_delete.iter().map(|k| {
        AlterableConfig::default()
            .with_name(str_bytes(k))
            .with_config_operation(1)
            .with_value(Some(str_bytes("")))
    }));
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
        .with_resource_type(resource_type)
        .with_resource_name(str_bytes(&name))
        .with_configs(ops)]);
    let response = match name.parse::<i32>() {
        Ok(id) if resource_type != RESOURCE_TOPIC => admin.send(id, request, (0, 1)).await?,
        _ => admin.send_any(request, (0, 1)).await?,
    };
    for r in &response.responses {
        if r.error_code != error_codes::NONE {
            return fail(super::java_exception(r.error_code, r.error_message.as_deref()));
        }
    }
    println!("{}", completed_line(&entity.kind, &name));
    Ok(())
}

#[cfg(test)]
#[path = "configs_tests.rs"]
mod tests;
