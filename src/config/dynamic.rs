//! Dynamic broker configs (Kafka 3.9's `DynamicBrokerConfig`): the ONE table of broker keys
//! that may change without a restart ([`DYNAMIC_BROKER_KEYS`], per broker or cluster-wide),
//! the check an AlterConfigs/IncrementalAlterConfigs on a BROKER resource runs before anything
//! is written ([`validate_update`], Kafka's `validateConfigs` with its messages), and the
//! layering of the dynamic values on the static config: static `server.properties` <
//! `/config/brokers/<default>` < `/config/brokers/<id>` ([`merge_layers`],
//! [`KafkaConfig::with_dynamic`]). Pure.

use std::collections::BTreeMap;

use super::defs::{self, ConfigType, Validator};
use super::value::{parse_value, Source};
use super::KafkaConfig;

/// Where a dynamic broker key may be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only on `/config/brokers/<id>` (listeners, SSL/SASL: Kafka's `PerBrokerConfigs`).
    PerBroker,
    /// On `/config/brokers/<default>` or `/config/brokers/<id>`.
    ClusterWide,
}

/// What kastle does with a dynamic value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Applied to the running broker (logs, produce, the cleaner's choice of logs, the
    /// acceptor's connection limits).
    Live,
    /// Accepted and stored in ZooKeeper (DescribeConfigs shows it); kastle does not act on it
    /// yet, or does so only at start-up.
    Stored,
}

use Effect::{Live, Stored};
use Scope::{ClusterWide, PerBroker};

/// Kafka 3.9's dynamic broker keys (`DynamicBrokerConfig.AllDynamicConfigs` plus the broker
/// quota keys of `DynamicConfig.Broker`), each with its scope and what kastle does with it.
///
/// The log keys are `DynamicLogConfig.ReconfigurableConfigs`: the first broker synonym of each
/// topic config (`ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS`) except
/// `log.message.format.version`. So `log.retention.ms` is dynamic, `log.retention.hours` and
/// `log.retention.minutes` are not (Kafka refuses them too).
pub const DYNAMIC_BROKER_KEYS: &[(&str, Scope, Effect)] = &[
    // DynamicLogConfig: defaults of every topic without its own override.
    ("log.segment.bytes", ClusterWide, Live),
    ("log.roll.ms", ClusterWide, Live),
    ("log.roll.jitter.ms", ClusterWide, Live),
    ("log.index.size.max.bytes", ClusterWide, Live),
    ("log.flush.interval.messages", ClusterWide, Live),
    ("log.flush.interval.ms", ClusterWide, Live),
    ("log.retention.bytes", ClusterWide, Live),
    ("log.retention.ms", ClusterWide, Live),
    ("message.max.bytes", ClusterWide, Live),
    ("log.index.interval.bytes", ClusterWide, Live),
    ("log.cleaner.delete.retention.ms", ClusterWide, Live),
    ("log.cleaner.min.compaction.lag.ms", ClusterWide, Live),
    ("log.cleaner.max.compaction.lag.ms", ClusterWide, Live),
    ("log.segment.delete.delay.ms", ClusterWide, Stored),
    ("log.cleaner.min.cleanable.ratio", ClusterWide, Live),
    ("log.cleanup.policy", ClusterWide, Live),
    ("unclean.leader.election.enable", ClusterWide, Live),
    ("min.insync.replicas", ClusterWide, Live),
    ("compression.type", ClusterWide, Live),
    ("compression.gzip.level", ClusterWide, Stored),
    ("compression.lz4.level", ClusterWide, Stored),
    ("compression.zstd.level", ClusterWide, Stored),
    ("log.preallocate", ClusterWide, Stored),
    ("log.message.timestamp.type", ClusterWide, Live),
    ("log.message.timestamp.difference.max.ms", ClusterWide, Live),
    ("log.message.timestamp.before.max.ms", ClusterWide, Live),
    ("log.message.timestamp.after.max.ms", ClusterWide, Live),
    ("log.message.downconversion.enable", ClusterWide, Stored),
    ("log.local.retention.ms", ClusterWide, Stored),
    ("log.local.retention.bytes", ClusterWide, Stored),
    // LogCleaner.ReconfigurableConfigs (message.max.bytes is above).
    ("log.cleaner.threads", ClusterWide, Live),
    ("log.cleaner.dedupe.buffer.size", ClusterWide, Live),
    ("log.cleaner.io.buffer.load.factor", ClusterWide, Stored),
    ("log.cleaner.io.buffer.size", ClusterWide, Live),
    ("log.cleaner.io.max.bytes.per.second", ClusterWide, Stored),
    ("log.cleaner.backoff.ms", ClusterWide, Live),
    // DynamicThreadPool.
    ("num.io.threads", ClusterWide, Stored),
    ("num.replica.fetchers", ClusterWide, Live),
    ("num.recovery.threads.per.data.dir", ClusterWide, Stored),
    ("background.threads", ClusterWide, Stored),
    ("metric.reporters", ClusterWide, Stored),
    // SocketServer.ReconfigurableConfigs.
    ("max.connections.per.ip", ClusterWide, Live),
    ("max.connections.per.ip.overrides", ClusterWide, Live),
    ("max.connections", ClusterWide, Live),
    ("max.connection.creation.rate", ClusterWide, Stored),
    // DynamicListenerConfig (cluster-level: max.connections, the creation rate, network threads).
    ("num.network.threads", ClusterWide, Stored),
    ("advertised.listeners", PerBroker, Stored),
    ("listeners", PerBroker, Stored),
    ("listener.security.protocol.map", PerBroker, Stored),
    ("principal.builder.class", PerBroker, Stored),
    ("ssl.protocol", PerBroker, Stored),
    ("ssl.provider", PerBroker, Stored),
    ("ssl.cipher.suites", PerBroker, Stored),
    ("ssl.enabled.protocols", PerBroker, Stored),
    ("ssl.keystore.type", PerBroker, Stored),
    ("ssl.keystore.location", PerBroker, Stored),
    ("ssl.keystore.password", PerBroker, Stored),
    ("ssl.key.password", PerBroker, Stored),
    ("ssl.truststore.type", PerBroker, Stored),
    ("ssl.truststore.location", PerBroker, Stored),
    ("ssl.truststore.password", PerBroker, Stored),
    ("ssl.keymanager.algorithm", PerBroker, Stored),
    ("ssl.trustmanager.algorithm", PerBroker, Stored),
    ("ssl.endpoint.identification.algorithm", PerBroker, Stored),
    ("ssl.secure.random.implementation", PerBroker, Stored),
    ("ssl.client.auth", PerBroker, Stored),
    ("ssl.engine.factory.class", PerBroker, Stored),
    ("ssl.keystore.certificate.chain", PerBroker, Stored),
    ("ssl.keystore.key", PerBroker, Stored),
    ("ssl.truststore.certificates", PerBroker, Stored),
    ("sasl.mechanism.inter.broker.protocol", PerBroker, Stored),
    ("sasl.jaas.config", PerBroker, Stored),
    ("sasl.enabled.mechanisms", PerBroker, Stored),
    ("sasl.kerberos.service.name", PerBroker, Stored),
    ("sasl.kerberos.kinit.cmd", PerBroker, Stored),
    ("sasl.kerberos.ticket.renew.window.factor", PerBroker, Stored),
    ("sasl.kerberos.ticket.renew.jitter", PerBroker, Stored),
    ("sasl.kerberos.min.time.before.relogin", PerBroker, Stored),
    ("sasl.kerberos.principal.to.local.rules", PerBroker, Stored),
    ("sasl.login.refresh.window.factor", PerBroker, Stored),
    ("sasl.login.refresh.window.jitter", PerBroker, Stored),
    ("sasl.login.refresh.min.period.seconds", PerBroker, Stored),
    ("sasl.login.refresh.buffer.seconds", PerBroker, Stored),
    // DynamicProducerStateManagerConfig.
    ("producer.id.expiration.ms", ClusterWide, Stored),
    ("transaction.partition.verification.enable", ClusterWide, Stored),
    // DynamicRemoteLogConfig.
    ("remote.log.index.file.cache.total.size.bytes", ClusterWide, Stored),
    ("remote.fetch.max.wait.ms", ClusterWide, Stored),
    ("remote.log.manager.copy.max.bytes.per.second", ClusterWide, Stored),
    ("remote.log.manager.fetch.max.bytes.per.second", ClusterWide, Stored),
    ("remote.list.offsets.request.timeout.ms", ClusterWide, Stored),
    // QuotaConfig.brokerQuotaConfigs: the replication throttles (KIP-73), applied to the
    // ReplicaManager's quotas; log-dir moves are not supported, so their throttle is stored.
    ("leader.replication.throttled.rate", ClusterWide, Live),
    ("follower.replication.throttled.rate", ClusterWide, Live),
    ("replica.alter.log.dirs.io.max.bytes.per.second", ClusterWide, Stored),
];

/// `SslConfigs.RECONFIGURABLE_CONFIGS`: settable only with a `listener.name.<l>.` prefix.
const SECURITY_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.certificates",
];

/// Listener keys that stay cluster-level under a `listener.name.<l>.` prefix.
const CLUSTER_LEVEL_LISTENER_KEYS: &[&str] =
    &["max.connections", "max.connection.creation.rate", "num.network.threads"];

/// The broker quota keys: typed LONG (at least 0) and unknown to the static config table.
const QUOTA_KEYS: &[&str] = &[
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

/// The dynamic keys of type PASSWORD; a key ending in one of them (`listener.name.x.ssl.key.password`)
/// is a password (Kafka's `DynamicBrokerConfig.isPasswordConfig`).
const PASSWORD_KEYS: &[&str] = &[
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
];

/// Kafka encrypts dynamic passwords with `password.encoder.secret` before they reach ZooKeeper
/// (`toPersistentProps`); kastle has no such encoder, so it refuses to store them rather than
/// write them in clear, with Kafka's message for a broker without a secret.
pub fn refuse_passwords(props: &BTreeMap<String, String>, per_broker: bool) -> Result<(), String> {
    if !props.keys().any(|k| PASSWORD_KEYS.iter().any(|p| k.ends_with(p))) {
        return Ok(());
    }
    Err(if per_broker {
        "Password encoder secret not configured".to_string()
    } else {
        "Password config can be defined only at broker level".to_string()
    })
}

/// The scope of a dynamic key, `None` if `key` is not dynamic.
pub fn scope(key: &str) -> Option<Scope> {
    DYNAMIC_BROKER_KEYS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, s, _)| *s)
}

/// What kastle does with dynamic key `key`: the table's effect; a `listener.name.<l>.` key of
/// Kafka's reconfigurable SSL set (the keystore and truststore) reloads that listener's TLS,
/// any other is only stored; `None` for keys that are not dynamic.
pub fn effect(key: &str) -> Option<Effect> {
    if let Some((_, _, e)) = DYNAMIC_BROKER_KEYS.iter().find(|(k, _, _)| *k == key) {
        return Some(*e);
    }
    listener_base(key).map(|base| if SECURITY_KEYS.contains(&base) { Live } else { Stored })
}

/// `listener.name.<l>.<base>` → `<base>`.
fn listener_base(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(defs::LISTENER_PREFIX)?;
    let (listener, base) = rest.split_once('.')?;
    (!listener.is_empty() && !base.is_empty()).then_some(base)
}

/// A static broker key (Kafka's `KafkaConfig.configNames`) that cannot change dynamically.
/// Keys the static table does not know are custom props, which Kafka accepts and stores.
fn is_non_dynamic(key: &str) -> bool {
    scope(key).is_none() && defs::all_keys().any(|d| d.name == key)
}

/// Scala's `Set(a, b)` rendering of names (sorted, so messages are stable).
pub fn scala_set<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    format!("Set({})", names.join(", "))
}

/// Why a dynamic broker update was refused; Kafka's `ConfigException` messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DynamicRefusal {
    #[error("Cannot update these configs dynamically: {0}")]
    NotDynamic(String),
    #[error("These security configs can be dynamically updated only per-listener using the listener prefix: {0}")]
    NeedsListenerPrefix(String),
    #[error("Invalid value {value} for configuration {name}: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
    #[error("Cannot update these configs at default cluster level, broker id must be specified: {0}")]
    PerBrokerOnly(String),
}

/// Kafka's `DynamicBrokerConfig.validateConfigs` for the broker entity's complete new config
/// (`per_broker` = `/config/brokers/<id>`, else `<default>`), checks in Kafka's order.
pub fn validate_update(props: &BTreeMap<String, String>, per_broker: bool) -> Result<(), DynamicRefusal> {
    let not_dynamic: Vec<&str> = props.keys().map(String::as_str).filter(|k| is_non_dynamic(k)).collect();
    if !not_dynamic.is_empty() {
        return Err(DynamicRefusal::NotDynamic(scala_set(not_dynamic)));
    }
    let unprefixed: Vec<&str> = props
        .keys()
        .map(String::as_str)
        .filter(|k| SECURITY_KEYS.contains(k))
        .collect();
    if !unprefixed.is_empty() {
        return Err(DynamicRefusal::NeedsListenerPrefix(scala_set(unprefixed)));
    }
    for (name, value) in props {
        check_value(listener_base(name).unwrap_or(name), value).map_err(|reason| DynamicRefusal::InvalidValue {
            name: name.clone(),
            value: value.clone(),
            reason,
        })?;
    }
    if !per_broker {
        let broker_only: Vec<&str> = props
            .keys()
            .map(String::as_str)
            .filter(|k| match listener_base(k) {
                Some(base) => !CLUSTER_LEVEL_LISTENER_KEYS.contains(&base),
                None => scope(k) == Some(PerBroker),
            })
            .collect();
        if !broker_only.is_empty() {
            return Err(DynamicRefusal::PerBrokerOnly(scala_set(broker_only)));
        }
    }
    Ok(())
}

/// Whether `key` is a LIST key (for IncrementalAlterConfigs' APPEND and SUBTRACT), and its
/// default as text; `None` if the key is unknown.
pub fn list_key_default(key: &str) -> Option<(bool, Option<&'static str>)> {
    let def = defs::resolve(listener_base(key).unwrap_or(key))?;
    Some((def.ty == ConfigType::List, def.default))
}

/// Kafka's `ConfigDef` verdict on one value, with its wording (`Not a number of type LONG`,
/// `Value must be at least 0`, ...). Keys without a known type pass.
fn check_value(key: &str, value: &str) -> Result<(), String> {
    if QUOTA_KEYS.contains(&key) {
        return match value.trim().parse::<i64>() {
            Ok(v) if v < 0 => Err("Value must be at least 0".into()),
            Ok(_) => Ok(()),
            Err(_) => Err("Not a number of type LONG".into()),
        };
    }
    let Some(def) = defs::resolve(key) else {
        return Ok(());
    };
    if parse_value(def, key, value, &Source::Override).is_ok() {
        return Ok(());
    }
    let trimmed = value.trim();
    let type_error = match def.ty {
        ConfigType::Int => trimmed.parse::<i32>().is_err().then_some("Not a number of type INT"),
        ConfigType::Long => trimmed.parse::<i64>().is_err().then_some("Not a number of type LONG"),
        ConfigType::Short => trimmed.parse::<i16>().is_err().then_some("Not a number of type SHORT"),
        ConfigType::Double => trimmed.parse::<f64>().is_err().then_some("Not a number of type DOUBLE"),
        ConfigType::Bool => Some("Expected value to be either true or false"),
        ConfigType::Class => Some("Class could not be found."),
        _ => None,
    };
    if let Some(reason) = type_error {
        return Err(reason.to_string());
    }
    let number = trimmed.parse::<f64>().ok();
    Err(match (&def.validator, number) {
        (Validator::AtLeast(min), Some(_)) => format!("Value must be at least {min}"),
        (Validator::Between(min, _), Some(v)) if v < *min as f64 => format!("Value must be at least {min}"),
        (Validator::Between(_, max), Some(_)) => format!("Value must be no more than {max}"),
        (Validator::BetweenF(min, _), Some(v)) if v < *min => format!("Value must be at least {min}"),
        (Validator::BetweenF(_, max), Some(_)) => format!("Value must be no more than {max}"),
        (Validator::OneOf(words) | Validator::EachOf(words), _) => {
            format!("String must be one of: {}", words.join(", "))
        }
        _ => "Invalid value".to_string(),
    })
}

/// The dynamic values in force on a broker: `<default>` overridden by its `<id>` entity, each
/// layer keeping only what it may hold (Kafka drops non-dynamic keys with "Non-dynamic configs
/// configured in ZooKeeper will be ignored", per-broker keys from `<default>`, and values of
/// the wrong type). Returns the merged values and the ignored keys with why.
pub fn merge_layers(
    cluster_default: &BTreeMap<String, String>,
    per_broker: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, Vec<(String, String)>) {
    let mut merged = BTreeMap::new();
    let mut ignored = Vec::new();
    for (layer, is_broker) in [(cluster_default, false), (per_broker, true)] {
        for (key, value) in layer {
            let why = if is_non_dynamic(key) {
                Some("not a dynamic config".to_string())
            } else if !is_broker && scope(key) == Some(PerBroker) {
                Some("per-broker config set at the default cluster level".to_string())
            } else {
                check_value(listener_base(key).unwrap_or(key), value).err()
            };
            match why {
                Some(why) => ignored.push((key.clone(), why)),
                None => {
                    merged.insert(key.clone(), value.clone());
                }
            }
        }
    }
    (merged, ignored)
}

impl KafkaConfig {
    /// This (static) config with the dynamic values of [`merge_layers`] on top, each with
    /// source [`Source::Dynamic`]. Keys kastle's table does not type (custom props, quota
    /// rates) stay in ZooKeeper only. If the result breaks a cross-key rule, the static config
    /// is kept and the reason returned.
    pub fn with_dynamic(&self, dynamic: &BTreeMap<String, String>, entity: &str) -> Result<KafkaConfig, String> {
        let mut entries = self.entries.clone();
        for (key, raw) in dynamic {
            let Some(def) = defs::resolve(key) else { continue };
            let source = Source::Dynamic(entity.to_string());
            match parse_value(def, key, raw, &source) {
                Ok(value) => {
                    entries.insert(key.clone(), super::load::Entry { value, source });
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        super::validate::build(entries).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_table_matches_kafkas_scopes() {
        assert_eq!(scope("log.retention.ms"), Some(ClusterWide));
        assert_eq!(scope("listeners"), Some(PerBroker));
        assert_eq!(scope("max.connections"), Some(ClusterWide));
        assert_eq!(scope("log.retention.hours"), None, "only the first synonym is dynamic");
        assert_eq!(scope("broker.id"), None);
        assert_eq!(effect("listener.name.sasl_ssl.ssl.keystore.location"), Some(Live));
        assert_eq!(effect("listener.name.ssl.ssl.truststore.certificates"), Some(Live));
        assert_eq!(effect("listener.name.ssl.ssl.client.auth"), Some(Stored));
        let mut names: Vec<&str> = DYNAMIC_BROKER_KEYS.iter().map(|(k, _, _)| *k).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "each key once");
    }

    /// `DynamicBrokerConfig.validateConfigs`' messages and order.
    #[test]
    fn updates_are_checked_as_kafka_checks_them() {
        assert_eq!(
            validate_update(
                &props(&[("log.retention.ms", "1000"), ("min.insync.replicas", "2")]),
                false
            ),
            Ok(())
        );
        let err = validate_update(&props(&[("broker.id", "3"), ("log.retention.ms", "x")]), true).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "Cannot update these configs dynamically: Set(broker.id)"
        );
        let err = validate_update(&props(&[("log.retention.ms", "x")]), true).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "Invalid value x for configuration log.retention.ms: Not a number of type LONG"
        );
        let err = validate_update(&props(&[("min.insync.replicas", "0")]), true).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"
        );
        let err = validate_update(&props(&[("ssl.keystore.location", "/k")]), true).expect_err("refused");
        assert!(matches!(err, DynamicRefusal::NeedsListenerPrefix(_)), "{err}");
        let err = validate_update(&props(&[("listeners", "PLAINTEXT://:9092")]), false).expect_err("refused");
        assert_eq!(
            err.to_string(),
            "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"
        );
        assert_eq!(
            validate_update(&props(&[("listener.name.external.max.connections", "10")]), false),
            Ok(())
        );
        assert_eq!(
            validate_update(&props(&[("leader.replication.throttled.rate", "1000")]), false),
            Ok(())
        );
        assert!(validate_update(&props(&[("follower.replication.throttled.rate", "-1")]), false).is_err());
        // Custom props (unknown to the broker) are accepted, as Kafka accepts them.
        assert_eq!(validate_update(&props(&[("my.custom.key", "v")]), false), Ok(()));
    }

    #[test]
    fn a_broker_value_overrides_the_cluster_default_and_bad_entries_are_ignored() {
        let cluster = props(&[
            ("log.retention.ms", "1000"),
            ("min.insync.replicas", "2"),
            ("listeners", "PLAINTEXT://:1"),
            ("broker.id", "9"),
        ]);
        let broker = props(&[("log.retention.ms", "5000"), ("log.segment.bytes", "lots")]);
        let (merged, ignored) = merge_layers(&cluster, &broker);
        assert_eq!(
            merged,
            props(&[("log.retention.ms", "5000"), ("min.insync.replicas", "2")])
        );
        let ignored: Vec<&str> = ignored.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(ignored, ["broker.id", "listeners", "log.segment.bytes"]);
    }

    #[test]
    fn dynamic_values_reach_the_typed_config() {
        let base =
            KafkaConfig::from_pairs(&[("zookeeper.connect", "zk:2181"), ("log.retention.ms", "1")]).expect("config");
        let dynamic = props(&[("log.retention.ms", "60000"), ("min.insync.replicas", "2")]);
        let c = base.with_dynamic(&dynamic, "/config/brokers/<default>").expect("valid");
        assert_eq!(c.get_i64("log.retention.ms"), Some(60_000));
        assert_eq!(c.min_insync_replicas(), 2);
        assert_eq!(
            c.source("log.retention.ms"),
            Some(&Source::Dynamic("/config/brokers/<default>".into()))
        );
    }

    #[test]
    fn passwords_are_never_stored_in_clear() {
        let secret = props(&[("listener.name.external.ssl.key.password", "s3cret")]);
        assert_eq!(
            refuse_passwords(&secret, true),
            Err("Password encoder secret not configured".into())
        );
        assert!(refuse_passwords(&secret, false).is_err());
        assert_eq!(refuse_passwords(&props(&[("log.retention.ms", "1")]), true), Ok(()));
    }

    #[test]
    fn list_keys_are_known_for_append_and_subtract() {
        assert_eq!(list_key_default("log.cleanup.policy"), Some((true, Some("delete"))));
        assert_eq!(list_key_default("log.retention.ms").map(|(l, _)| l), Some(false));
        assert_eq!(list_key_default("no.such.key"), None);
    }
}
