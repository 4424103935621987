//! What DescribeConfigs answers, computed the way Kafka 3.9's `ConfigHelper` does: a broker key's
//! value and source come from four layers — per-broker dynamic (`/config/brokers/<id>`) >
//! cluster-wide dynamic (`/config/brokers/<default>`) > static (the config file, env,
//! `--override`) > Kafka's default — and its synonyms list every layer holding the key or one of
//! its broker synonyms (`log.retention.ms`, `log.retention.minutes`, `log.retention.hours`).
//! A topic config's value is its override in `/config/topics/<t>`, else the broker's effective
//! value of its first synonym that has one; its synonyms are the override followed by the broker
//! synonyms of its first broker key.
//!
//! Pure: the caller reads the znodes and passes their `config` maps; nothing here does I/O.

use std::collections::BTreeMap;

use crate::config::defs::{self, kafka_type, ConfigType, LISTENER_PREFIX};
use crate::config::defs_kafka::{update_mode, UpdateMode};
use crate::config::topic_defs::{topic_config, Unit, TOPIC_CONFIGS};
use crate::config::value::{parse_value, split_list, Source};
use crate::config::KafkaConfig;

/// DescribeConfigs' `config_source` values (Kafka's `DescribeConfigsResponse.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    DynamicTopic = 1,
    DynamicBroker = 2,
    DynamicDefaultBroker = 3,
    StaticBroker = 4,
    Default = 5,
    DynamicBrokerLogger = 6,
}

impl ConfigSource {
    pub fn id(self) -> i8 {
        self as i8
    }
}

/// One synonym of a described config: a layer that holds a value for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    /// `None` for sensitive keys.
    pub value: Option<String>,
    pub source: ConfigSource,
}

/// One entry of a DescribeConfigs result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub name: String,
    /// `None` for null values and for sensitive keys.
    pub value: Option<String>,
    pub source: ConfigSource,
    pub sensitive: bool,
    pub read_only: bool,
    /// v3+ `config_type`: BOOLEAN=1 STRING=2 INT=3 SHORT=4 LONG=5 DOUBLE=6 LIST=7 CLASS=8
    /// PASSWORD=9, 0 when the key is unknown.
    pub config_type: i8,
    /// Always computed; the handler drops them unless `include_synonyms`.
    pub synonyms: Vec<Synonym>,
    pub documentation: Option<&'static str>,
}

/// Kafka's `DescribeConfigsResponse.ConfigType` id of a config type.
pub fn config_type_id(ty: ConfigType) -> i8 {
    match ty {
        ConfigType::Bool => 1,
        ConfigType::String => 2,
        ConfigType::Int => 3,
        ConfigType::Short => 4,
        ConfigType::Long => 5,
        ConfigType::Double => 6,
        ConfigType::List => 7,
        ConfigType::Class => 8,
        ConfigType::Password => 9,
    }
}

/// Broker quota keys Kafka keeps in `/config/brokers/*` although `KafkaConfig` does not define
/// them (`DynamicConfig.Broker`); kastle's table does.
const BROKER_QUOTA_KEYS: &[&str] = &[
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

/// The broker's config layers, highest precedence first; the default layer is the key table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerLayers {
    pub per_broker: BTreeMap<String, String>,
    pub cluster_default: BTreeMap<String, String>,
    pub static_config: BTreeMap<String, String>,
}

impl BrokerLayers {
    /// The layers of a broker running `config`, given the `config` maps of its
    /// `/config/brokers/<id>` and `/config/brokers/<default>` znodes (empty when missing).
    pub fn new(
        config: &KafkaConfig,
        per_broker: &BTreeMap<String, String>,
        cluster_default: &BTreeMap<String, String>,
    ) -> BrokerLayers {
        let static_config = config
            .entries
            .iter()
            .filter(|(_, e)| e.source != Source::Default)
            .map(|(k, e)| (k.clone(), e.value.to_string()))
            .collect();
        BrokerLayers {
            per_broker: dynamic_layer(per_broker, true),
            cluster_default: dynamic_layer(cluster_default, false),
            static_config,
        }
    }

    /// The value in effect for broker key `name`, from the highest layer holding it.
    pub fn effective(&self, name: &str) -> Option<String> {
        self.per_broker
            .get(name)
            .or_else(|| self.cluster_default.get(name))
            .or_else(|| self.static_config.get(name))
            .cloned()
            .or_else(|| defs::resolve(name).and_then(|d| d.default).map(str::to_string))
    }

    /// Kafka's `configSynonyms`: every layer's value of each of `synonyms`, layer by layer
    /// (dynamic per-broker, dynamic default, static, default), dropping those before `name`.
    fn synonyms(&self, name: &str, synonyms: &[String], sensitive: bool) -> Vec<Synonym> {
        let defaults: BTreeMap<String, String> = synonyms
            .iter()
            .filter_map(|s| Some((s.clone(), defs::resolve(s)?.default?.to_string())))
            .collect();
        let layers = [
            (&self.per_broker, ConfigSource::DynamicBroker),
            (&self.cluster_default, ConfigSource::DynamicDefaultBroker),
            (&self.static_config, ConfigSource::StaticBroker),
            (&defaults, ConfigSource::Default),
        ];
        let mut found = Vec::new();
        for (layer, source) in layers {
            for synonym in synonyms {
                if let Some(value) = layer.get(synonym) {
                    found.push(Synonym {
                        name: synonym.clone(),
                        value: (!sensitive).then(|| value.clone()),
                        source,
                    });
                }
            }
        }
        let first = found.iter().position(|s| s.name == name).unwrap_or(found.len());
        found.split_off(first)
    }
}

/// The keys of a `/config/brokers/*` znode Kafka applies (`DynamicBrokerConfig.
/// removeInvalidConfigs`): dynamic keys whose value parses, per-broker-only keys only in a
/// per-broker znode.
fn dynamic_layer(znode: &BTreeMap<String, String>, per_broker: bool) -> BTreeMap<String, String> {
    znode
        .iter()
        .filter(|(key, value)| {
            let mode = update_mode(key);
            let allowed = match mode {
                UpdateMode::ReadOnly => BROKER_QUOTA_KEYS.contains(&key.as_str()),
                UpdateMode::PerBroker => per_broker,
                UpdateMode::ClusterWide => true,
            };
            allowed && defs::resolve(key).is_some_and(|def| parse_value(def, key, value, &Source::Default).is_ok())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Kafka's `DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride = true)`.
fn broker_synonyms(name: &str) -> Vec<String> {
    let group: &[&str] = match name {
        "log.roll.ms" | "log.roll.hours" => &["log.roll.ms", "log.roll.hours"],
        "log.roll.jitter.ms" | "log.roll.jitter.hours" => &["log.roll.jitter.ms", "log.roll.jitter.hours"],
        "log.flush.interval.ms" => &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        "log.retention.ms" | "log.retention.minutes" | "log.retention.hours" => {
            &["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
        }
        _ => {
            if let Some((_, base)) = name.strip_prefix(LISTENER_PREFIX).and_then(|r| r.split_once('.')) {
                // `listener.name.<l>.<mechanism>.<config>` for the SASL mechanism configs.
                const MECHANISM: &[&str] = &[
                    "sasl.jaas.config",
                    "sasl.login.callback.handler.class",
                    "sasl.login.class",
                    "sasl.server.callback.handler.class",
                    "connections.max.reauth.ms",
                ];
                let base = MECHANISM.iter().find(|m| base.ends_with(*m)).copied().unwrap_or(base);
                return vec![name.to_string(), base.to_string()];
            }
            return vec![name.to_string()];
        }
    };
    group.iter().map(|s| s.to_string()).collect()
}

/// One broker key's entry. `per_broker_resource` is false for the cluster-default resource
/// (`resource_name` ""), whose entries show only the `<default>` layer.
fn broker_entry(layers: &BrokerLayers, name: &str, per_broker_resource: bool) -> DescribedConfig {
    let def = defs::resolve(name);
    let ty = def.map(kafka_type);
    let sensitive = ty.is_none_or(|t| t == ConfigType::Password);
    let value = if per_broker_resource {
        layers.effective(name)
    } else {
        layers.cluster_default.get(name).cloned()
    };
    let mut synonyms = layers.synonyms(name, &broker_synonyms(name), sensitive);
    if !per_broker_resource {
        synonyms.retain(|s| s.source == ConfigSource::DynamicDefaultBroker);
    }
    let dynamic = !name.starts_with(LISTENER_PREFIX) && update_mode(name) != UpdateMode::ReadOnly;
    DescribedConfig {
        name: name.to_string(),
        value: if sensitive { None } else { value },
        source: synonyms.first().map_or(ConfigSource::Default, |s| s.source),
        sensitive,
        read_only: !dynamic,
        config_type: ty.map_or(0, config_type_id),
        synonyms,
        documentation: def.map(|d| d.doc),
    }
}

/// The BROKER resource of this broker (`resource_name` = its id): every key of its config,
/// sorted by name.
pub fn describe_broker(config: &KafkaConfig, layers: &BrokerLayers) -> Vec<DescribedConfig> {
    config
        .entries
        .keys()
        .map(|name| broker_entry(layers, name, true))
        .collect()
}

/// The cluster-default BROKER resource (`resource_name` ""): the keys of `/config/brokers/<default>`.
pub fn describe_broker_default(layers: &BrokerLayers) -> Vec<DescribedConfig> {
    layers
        .cluster_default
        .keys()
        .map(|name| broker_entry(layers, name, false))
        .collect()
}

/// A topic's entries: every topic config Kafka defines plus any other key of its override
/// znode (unknown keys are reported as sensitive, as Kafka does), sorted by name.
pub fn describe_topic(layers: &BrokerLayers, overrides: &BTreeMap<String, String>) -> Vec<DescribedConfig> {
    let mut names: Vec<&str> = TOPIC_CONFIGS.iter().map(|d| d.name).collect();
    names.extend(
        overrides
            .keys()
            .map(String::as_str)
            .filter(|k| topic_config(k).is_none()),
    );
    names.sort_unstable();
    names
        .into_iter()
        .map(|name| topic_entry(layers, overrides, name))
        .collect()
}

fn topic_entry(layers: &BrokerLayers, overrides: &BTreeMap<String, String>, name: &str) -> DescribedConfig {
    let override_value = overrides.get(name);
    let Some(def) = topic_config(name) else {
        return DescribedConfig {
            name: name.to_string(),
            value: None,
            source: ConfigSource::DynamicTopic,
            sensitive: true,
            read_only: false,
            config_type: 0,
            synonyms: vec![Synonym {
                name: name.to_string(),
                value: None,
                source: ConfigSource::DynamicTopic,
            }],
            documentation: None,
        };
    };
    let normalise = |v: &str| match def.ty {
        ConfigType::List => split_list(v.trim()).join(","),
        _ => v.trim().to_string(),
    };
    let mut synonyms = Vec::new();
    if let Some(v) = override_value {
        synonyms.push(Synonym {
            name: name.to_string(),
            value: Some(normalise(v)),
            source: ConfigSource::DynamicTopic,
        });
    }
    if let Some((first, _)) = def.synonyms.first() {
        synonyms.extend(layers.synonyms(first, &broker_synonyms(first), false));
    }
    let value = match override_value {
        Some(v) => Some(normalise(v)),
        None => broker_default_for_topic(layers, name),
    };
    DescribedConfig {
        name: name.to_string(),
        value,
        source: synonyms.first().map_or(ConfigSource::Default, |s| s.source),
        sensitive: false,
        read_only: false,
        config_type: config_type_id(def.ty),
        synonyms,
        documentation: Some(def.doc),
    }
}

/// The value a topic without an override takes for `name` (Kafka's
/// `KafkaConfig.extractLogConfigMap`): the first broker synonym with a value, converted.
pub fn broker_default_for_topic(layers: &BrokerLayers, name: &str) -> Option<String> {
    let def = topic_config(name)?;
    if def.synonyms.is_empty() {
        return def.default.map(str::to_string);
    }
    let (value, unit) = def
        .synonyms
        .iter()
        .find_map(|(synonym, unit)| Some((layers.effective(synonym)?, *unit)))?;
    let factor = match unit {
        Unit::Same => return Some(value),
        Unit::Hours => 3_600_000,
        Unit::Minutes => 60_000,
    };
    let millis = value.trim().parse::<i64>().ok()?.saturating_mul(factor);
    // `logRetentionTimeMillis`: any negative retention means "forever", -1.
    Some(
        if name == "retention.ms" && millis < 0 {
            -1
        } else {
            millis
        }
        .to_string(),
    )
}

/// The BROKER_LOGGER resource: the root logger at `level` (Kafka lists every log4j logger;
/// kastle has one filter).
pub fn describe_broker_logger(level: &str) -> Vec<DescribedConfig> {
    vec![DescribedConfig {
        name: "root".to_string(),
        value: Some(level.to_string()),
        source: ConfigSource::DynamicBrokerLogger,
        sensitive: false,
        read_only: false,
        config_type: 0,
        synonyms: Vec::new(),
        documentation: None,
    }]
}
