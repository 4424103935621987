//! The broker config: Kafka 3.9's ZK-mode property names, types and defaults, read from a YAML or
//! Java `.properties` file, `KASTLE_CFG_*` environment variables and `--override key=value`
//! arguments (in that increasing precedence over the built-in defaults), validated the way Kafka
//! validates, and exposed as `KafkaConfig` with typed accessors and per-key sources.
//!
//! Reads no file other than the one config file it is given; never exits the process (the binary
//! turns any `ConfigError` into exit code 2).
//!
//! | file | owns |
//! |---|---|
//! | `defs.rs` | kastle's table of keys (type, default, validator, doc), which it uses, name lookups |
//! | `defs_kafka.rs` | the other Kafka 3.9 broker keys (accepted, not used) and dynamic update modes |
//! | `value.rs` | `Value`, `Source`, typed parsing and validators |
//! | `parse.rs` / `properties.rs` | the YAML and `.properties` readers |
//! | `load.rs` | `ConfigSources`, precedence, unknown-key and type errors |
//! | `validate.rs` | cross-key checks and building `KafkaConfig` |
//! | `listeners.rs` | `EndPoint`, `SecurityProtocol`, listener parsing |
//! | `dynamic.rs` | the dynamic broker keys (per broker / cluster-wide), their checks and layering |
//! | `error.rs` | `ConfigError` |
//! | `describe.rs` | DescribeConfigs' values, sources and synonyms over the config layers |
//! | `topic_defs.rs` | the topic-level configs (type, doc) and their broker synonyms |

mod defs;
mod defs_kafka;
pub mod describe;
pub mod dynamic;
mod error;
mod listeners;
mod load;
mod parse;
mod properties;
mod topic_defs;
mod validate;
mod value;

#[cfg(test)]
mod tests_describe;
#[cfg(test)]
mod tests_sources;
#[cfg(test)]
mod tests_validation;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

pub use defs::{all_keys, is_used, kafka_type, ConfigKey, ConfigType, Validator};
pub use defs_kafka::{update_mode, UpdateMode};
pub use error::ConfigError;
pub use listeners::{EndPoint, SecurityProtocol};
pub use load::{load, ConfigSources, ENV_PREFIX};
pub use value::{Source, Value};

/// The validated broker config. Every known key has a value (its default at least); the typed
/// accessors cover what the broker uses today, `get_*` the rest.
#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// Every known key plus any `listener.name.*` keys given, with value and source.
    entries: load::Entries,
    broker_id: i32,
    broker_id_generation_enable: bool,
    reserved_broker_max_id: i32,
    log_dirs: Vec<PathBuf>,
    zookeeper_connect: String,
    zookeeper_session_timeout: Duration,
    zookeeper_connection_timeout: Duration,
    listeners: Vec<EndPoint>,
    advertised_listeners: Vec<EndPoint>,
    protocol_map: BTreeMap<String, SecurityProtocol>,
    inter_broker_listener_name: String,
    broker_rack: Option<String>,
    num_partitions: i32,
    default_replication_factor: i16,
    min_insync_replicas: i32,
    inter_broker_protocol_version: String,
    metrics_listener: Option<String>,
    authorizer_enabled: bool,
    super_users: Vec<crate::security::KafkaPrincipal>,
    allow_everyone_if_no_acl_found: bool,
    zookeeper_security: ZkClientSecurity,
}

/// How the broker authenticates its ZooKeeper sessions and protects its znodes (the checked
/// `zookeeper.sasl.*`, `zookeeper.ssl.*` and `zookeeper.set.acl` keys).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZkClientSecurity {
    /// SASL DIGEST-MD5 from a JAAS file section; `None` for an anonymous session.
    pub sasl: Option<ZkSaslClient>,
    /// `zookeeper.ssl.client.enable=true`: the `zookeeper.ssl.*` settings (stores read when the
    /// session opens); `None` for plaintext.
    pub tls: Option<crate::security::tls::TlsSettings>,
    /// `zookeeper.set.acl`: create znodes with Kafka's secure ACLs.
    pub set_acl: bool,
}

/// Where the ZooKeeper login lives: `zookeeper.sasl.jaas.config.file` and its
/// `zookeeper.sasl.clientconfig` section (read when the session opens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkSaslClient {
    pub jaas_file: PathBuf,
    pub section: String,
}

impl KafkaConfig {
    /// Builds a config from `key=value` pairs applied as `--override`s over the defaults
    /// (convenient in tests; `zookeeper.connect` is still required).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Result<KafkaConfig, ConfigError> {
        load::load_pairs(pairs)
    }

    /// The effective value of `key` (`Value::Null` for unset nullable keys); `None` if the key
    /// is unknown.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key).map(|e| &e.value)
    }

    /// Where the effective value of `key` came from; `None` if the key is unknown.
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.entries.get(key).map(|e| &e.source)
    }

    /// One line per key, sorted by name: `broker.id = 1    (file config/broker-1.yaml)`;
    /// keys kastle does not act on read `(default, not used by kastle)`. Passwords read
    /// `[hidden]`, nulls `null`. Meant for the start-up log, like Kafka's "KafkaConfig values:",
    /// and for `kastle config check`.
    pub fn render_effective(&self) -> String {
        let mut out = String::new();
        for (key, entry) in &self.entries {
            let unused = if defs::is_used(key) { "" } else { ", not used by kastle" };
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{key} = {}    ({}{unused})", entry.value, entry.source);
        }
        out
    }

    /// The keys given in the file, env or overrides that kastle accepts but does not act on,
    /// sorted by name.
    pub fn unused_keys(&self) -> Vec<&str> {
        self.entries
            .iter()
            .filter(|(key, entry)| entry.source != Source::Default && !defs::is_used(key))
            .map(|(key, _)| key.as_str())
            .collect()
    }

    /// The one start-up warning naming every key set that kastle does not act on (Kafka logs
    /// unused keys instead of refusing them); `None` when there is none.
    pub fn unused_warning(&self) -> Option<String> {
        let unused = self.unused_keys();
        (!unused.is_empty()).then(|| format!("accepted, not used by kastle: {}", unused.join(", ")))
    }

    /// `Int` or `Short` value of `key`.
    pub fn get_i32(&self, key: &str) -> Option<i32> {
        match self.get(key)? {
            Value::Int(v) => Some(*v),
            Value::Short(v) => Some(i32::from(*v)),
            _ => None,
        }
    }

    /// `Long`, `Int` or `Short` value of `key`.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Long(v) => Some(*v),
            Value::Int(v) => Some(i64::from(*v)),
            Value::Short(v) => Some(i64::from(*v)),
            _ => None,
        }
    }

    pub fn get_f64(&self, key: &str) -> Option<f64> {
        match self.get(key)? {
            Value::Double(v) => Some(*v),
            _ => None,
        }
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(v) => Some(*v),
            _ => None,
        }
    }

    /// `String`/`Class` value of `key` (not passwords; use `get` for those).
    pub fn get_str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            Value::Str(v) => Some(v),
            _ => None,
        }
    }

    pub fn get_list(&self, key: &str) -> Option<&[String]> {
        match self.get(key)? {
            Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// `broker.id`; -1 means "generate one from ZooKeeper".
    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    pub fn broker_id_generation_enable(&self) -> bool {
        self.broker_id_generation_enable
    }

    pub fn reserved_broker_max_id(&self) -> i32 {
        self.reserved_broker_max_id
    }

    /// `log.dirs` if set, else `log.dir`; never empty.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.log_dirs.clone()
    }

    /// `zookeeper.connect`, including any `/chroot` suffix.
    pub fn zookeeper_connect(&self) -> &str {
        &self.zookeeper_connect
    }

    pub fn zookeeper_session_timeout(&self) -> Duration {
        self.zookeeper_session_timeout
    }

    /// `zookeeper.connection.timeout.ms`, or the session timeout when unset.
    pub fn zookeeper_connection_timeout(&self) -> Duration {
        self.zookeeper_connection_timeout
    }

    /// `zookeeper.sasl.*` and `zookeeper.set.acl`, checked.
    pub fn zookeeper_security(&self) -> &ZkClientSecurity {
        &self.zookeeper_security
    }

    /// Endpoints to bind (port 0 = any free port).
    pub fn listeners(&self) -> &[EndPoint] {
        &self.listeners
    }

    /// Endpoints to publish in `/brokers/ids/<id>`; `listeners` when unset. An empty host means
    /// "this machine's canonical host name" (Kafka's behaviour), a port of 0 the bound port.
    pub fn advertised_listeners(&self) -> &[EndPoint] {
        &self.advertised_listeners
    }

    /// Listener name (upper case) → security protocol.
    pub fn listener_security_protocol_map(&self) -> &BTreeMap<String, SecurityProtocol> {
        &self.protocol_map
    }

    /// `inter.broker.listener.name`, else the listener named after
    /// `security.inter.broker.protocol` (Kafka's rule); always one of the advertised listeners.
    pub fn inter_broker_listener_name(&self) -> &str {
        &self.inter_broker_listener_name
    }

    pub fn broker_rack(&self) -> Option<&str> {
        self.broker_rack.as_deref()
    }

    pub fn num_partitions(&self) -> i32 {
        self.num_partitions
    }

    pub fn default_replication_factor(&self) -> i16 {
        self.default_replication_factor
    }

    pub fn min_insync_replicas(&self) -> i32 {
        self.min_insync_replicas
    }

    pub fn inter_broker_protocol_version(&self) -> &str {
        &self.inter_broker_protocol_version
    }

    /// `leader.replication.throttled.rate` in bytes/s (KIP-73); `None`: unlimited (the
    /// default, `Long.MAX_VALUE`).
    pub fn leader_replication_throttled_rate(&self) -> Option<u64> {
        self.throttled_rate("leader.replication.throttled.rate")
    }

    /// `follower.replication.throttled.rate` in bytes/s; `None`: unlimited.
    pub fn follower_replication_throttled_rate(&self) -> Option<u64> {
        self.throttled_rate("follower.replication.throttled.rate")
    }

    fn throttled_rate(&self, key: &str) -> Option<u64> {
        self.get_i64(key).filter(|r| *r >= 0 && *r < i64::MAX).map(|r| r as u64)
    }

    /// `replication.quota.window.num` (11): samples the replication quotas keep.
    pub fn replication_quota_window_num(&self) -> usize {
        self.get_i32("replication.quota.window.num").unwrap_or(11).max(1) as usize
    }

    /// `replication.quota.window.size.seconds` (1): each sample's span.
    pub fn replication_quota_window_size(&self) -> Duration {
        Duration::from_secs(
            self.get_i32("replication.quota.window.size.seconds")
                .unwrap_or(1)
                .max(1) as u64,
        )
    }

    /// kastle's `metrics.listener` (`host:port` of the Prometheus endpoint), if enabled.
    pub fn metrics_listener(&self) -> Option<&str> {
        self.metrics_listener.as_deref()
    }

    /// Whether `authorizer.class.name` names Kafka's ZooKeeper ACL authorizer (either name);
    /// empty means no authorization.
    pub fn authorizer_enabled(&self) -> bool {
        self.authorizer_enabled
    }

    /// `super.users`: principals the authorizer always allows.
    pub fn super_users(&self) -> &[crate::security::KafkaPrincipal] {
        &self.super_users
    }

    /// `allow.everyone.if.no.acl.found`.
    pub fn allow_everyone_if_no_acl_found(&self) -> bool {
        self.allow_everyone_if_no_acl_found
    }
}
