//! Kafka's `DynamicConfigManager` over `ZkNodeChangeNotificationListener`: every broker
//! watches the children of `/config/changes`, processes the `config_change_<seq>`
//! notifications it has not processed yet in sequence order (all of them at start-up),
//! remembers the last one processed, deletes notifications older than 15 minutes, and applies
//! each change without a restart: a topic's `/config/topics/<t>` to that topic's logs and
//! throttled-replica lists, the broker entities `/config/brokers/<default>` and
//! `/config/brokers/<this id>` (layered on the static config, [`crate::config::dynamic`]) to
//! the broker-level log defaults of every log, the replication throttle rates (KIP-73), the
//! acceptor's connection limits and the TLS listeners' keystores
//! ([`crate::server::tls_reload`]); a changed key kastle only stores is logged as such.
//!
//! The decisions (which notifications, which to purge, which entity a payload names) are pure
//! functions below; ZooKeeper and the logs are at the edge, in [`run`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::config::{dynamic, KafkaConfig};
use crate::log::cleaner::{CleanerConfig, LogCleaner};
use crate::log::config::LogConfig;
use crate::log::log_manager::LogManager;
use crate::network::connection_quotas::{self, ConnectionLimits, ConnectionQuotas};
use crate::replica::ReplicaManager;
use crate::types::BrokerId;
use crate::zk::models::{ConfigChangeNotification, ZNodePayload};
use crate::zk::paths;
use crate::zk::store::{WatchEvent, WatchMode, ZkError, ZkStore};
use crate::zk::KafkaZkClient;

/// Kafka's `changeExpirationMs`: notifications older than this are deleted.
pub const CHANGE_EXPIRATION_MS: i64 = 15 * 60 * 1000;

/// The name of the default broker entity.
pub const DEFAULT_ENTITY: &str = "<default>";

/// The sequence number of a `config_change_<seq>` child.
pub fn sequence_of(child: &str) -> Option<u64> {
    child.strip_prefix(paths::CONFIG_CHANGE_PREFIX)?.parse().ok()
}

/// The children to process, in sequence order: those after `last_processed` (all of them when
/// nothing was processed yet, as at start-up). Names that are not notifications are skipped.
/// If every child is older than the last processed one, `/config/changes` was re-created
/// (its sequence counter restarted, e.g. after the tree was lost) and all are new.
pub fn to_process(children: &[String], last_processed: Option<u64>) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = children
        .iter()
        .filter_map(|c| sequence_of(c).map(|s| (s, c.clone())))
        .collect();
    out.sort();
    let restarted = out
        .last()
        .is_some_and(|(max, _)| last_processed.is_some_and(|last| *max < last));
    if !restarted {
        out.retain(|(s, _)| last_processed.is_none_or(|last| *s > last));
    }
    out
}

/// The notifications to delete: created (`ctime`, ms) more than `expiry_ms` before `now_ms`
/// (Kafka's `purgeObsoleteNotifications`).
pub fn to_purge(notifications: &[(String, i64)], now_ms: i64, expiry_ms: i64) -> Vec<String> {
    notifications
        .iter()
        .filter(|(_, ctime)| now_ms - ctime > expiry_ms)
        .map(|(name, _)| name.clone())
        .collect()
}

/// The entity a notification names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigEntity {
    Topic(String),
    /// `brokers/<default>`: the cluster-wide broker config.
    BrokerDefault,
    Broker(BrokerId),
    /// `users/<user>`: its SCRAM credentials (and quotas, which kastle does not apply).
    User(String),
    /// Clients, ips, users' client quotas: quotas, which kastle does not apply.
    Other(String),
}

/// Reads a notification as `DynamicConfigManager.ConfigChangedNotificationHandler` does: v1
/// names `entity_type` (topics or clients) and `entity_name`, v2 an `entity_path`.
pub fn entity_of(n: &ConfigChangeNotification) -> Result<ConfigEntity, String> {
    let (entity_type, name) = match n.version {
        1 => match (n.entity_type.as_deref(), n.entity_name.as_deref()) {
            (Some(t @ ("topics" | "clients")), Some(name)) => (t.to_string(), name.to_string()),
            _ => return Err("version 1 notifications name topics or clients".into()),
        },
        2 => {
            let path = n
                .entity_path
                .as_deref()
                .ok_or("version 2 notifications name an entity_path")?;
            match path.split_once('/') {
                Some((t, name)) if !t.is_empty() && !name.is_empty() => (t.to_string(), name.to_string()),
                _ => return Err(format!("invalid entity_path {path}")),
            }
        }
        v => return Err(format!("unsupported notification version {v}")),
    };
    Ok(match entity_type.as_str() {
        "topics" => ConfigEntity::Topic(name),
        "brokers" if name == DEFAULT_ENTITY => ConfigEntity::BrokerDefault,
        "brokers" => match name.parse() {
            Ok(id) => ConfigEntity::Broker(BrokerId(id)),
            Err(_) => return Err(format!("invalid broker entity {name}")),
        },
        "users" if !name.contains('/') => ConfigEntity::User(name),
        _ => ConfigEntity::Other(format!("{entity_type}/{name}")),
    })
}

/// The broker-level log defaults with the dynamic layers applied: static config <
/// `<default>` < `<id>`. Entries Kafka would ignore are logged and skipped.
pub fn broker_log_defaults(
    static_config: &KafkaConfig,
    cluster_default: &BTreeMap<String, String>,
    per_broker: &BTreeMap<String, String>,
    id: BrokerId,
) -> LogConfig {
    LogConfig::from_broker(&effective_config(static_config, cluster_default, per_broker, id))
}

/// The acceptor's limits from a (static or effective) broker config: `max.connections`,
/// `max.connections.per.ip` (0 or unset: unlimited) and `max.connections.per.ip.overrides`.
pub fn connection_limits(config: &KafkaConfig) -> ConnectionLimits {
    let get = |k: &str| {
        config
            .get_i64(k)
            .filter(|v| *v > 0)
            .map_or(i32::MAX as usize, |v| v as usize)
    };
    let (per_ip_overrides, skipped) =
        connection_quotas::parse_overrides(config.get_str("max.connections.per.ip.overrides").unwrap_or(""));
    for entry in skipped {
        tracing::warn!(%entry, "max.connections.per.ip.overrides: only IP addresses are applied by kastle; entry ignored");
    }
    ConnectionLimits {
        per_ip_overrides,
        ..ConnectionLimits::new(get("max.connections"), get("max.connections.per.ip"))
    }
}

/// The dynamic keys set in either layer that kastle stores but does not apply.
pub fn stored_only_keys<'a>(
    cluster_default: &'a BTreeMap<String, String>,
    per_broker: &'a BTreeMap<String, String>,
) -> Vec<&'a str> {
    let mut keys: Vec<&str> = cluster_default
        .keys()
        .chain(per_broker.keys())
        .map(String::as_str)
        .filter(|k| dynamic::effect(k) == Some(dynamic::Effect::Stored))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The static config with the dynamic layers applied: static config < `<default>` < `<id>`.
/// Entries Kafka would ignore are logged and skipped; layers that do not combine with the
/// static config leave it as it is.
pub fn effective_config(
    static_config: &KafkaConfig,
    cluster_default: &BTreeMap<String, String>,
    per_broker: &BTreeMap<String, String>,
    id: BrokerId,
) -> KafkaConfig {
    let (merged, ignored) = dynamic::merge_layers(cluster_default, per_broker);
    for (key, why) in ignored {
        tracing::warn!(%key, %why, "ignoring a dynamic broker config from ZooKeeper");
    }
    let entity = if per_broker.is_empty() {
        paths::config_entity("brokers", DEFAULT_ENTITY)
    } else {
        paths::config_entity("brokers", &id.to_string())
    };
    match static_config.with_dynamic(&merged, &entity) {
        Ok(effective) => effective,
        Err(why) => {
            tracing::warn!(%why, "the dynamic broker configs do not combine with the static config; keeping the static config");
            static_config.clone()
        }
    }
}

/// What the listener applies changes to.
#[derive(Debug, Clone)]
pub struct Targets {
    pub id: BrokerId,
    pub static_config: Arc<KafkaConfig>,
    pub log_manager: Arc<LogManager>,
    /// The acceptor's connection limits (`max.connections*`).
    pub connection_quotas: Arc<ConnectionQuotas>,
    /// The follower fetchers (`num.replica.fetchers`); `None` before the ReplicaManager exists
    /// (the start-up read, whose result the ReplicaManager is built from).
    pub replica_manager: Option<Arc<ReplicaManager>>,
    /// The log cleaner (`log.cleaner.*`); `None` when `log.cleaner.enable` is off or before it
    /// starts.
    pub log_cleaner: Option<Arc<LogCleaner>>,
    /// The SCRAM credential cache (`users/<u>` changes); `None` before it is loaded.
    pub credentials: Option<Arc<crate::security::sasl::credentials::CredentialCache>>,
    /// The TLS listeners (`listener.name.<l>.ssl.*` changes); `None` before they are loaded
    /// (from the effective config the start-up read returns).
    pub tls: Option<crate::server::listeners::TlsServers>,
}

/// `num.replica.fetchers`: fetcher tasks per leader (at least one).
pub fn replica_fetchers(config: &KafkaConfig) -> usize {
    config.get_i32("num.replica.fetchers").unwrap_or(1).max(1) as usize
}

/// Reads both broker entities and applies the result to every log, the connection limits, the
/// replica fetcher pool and the TLS listeners; returns the effective config.
pub async fn apply_broker_configs<S: ZkStore>(
    zk: &KafkaZkClient<S>,
    targets: &Targets,
) -> Result<KafkaConfig, ZkError> {
    let read = |name: String| async move {
        zk.entity_config("brokers", &name).await.map_err(|e| match e {
            crate::zk::KafkaZkError::Zk(e) => e,
            other => ZkError::Other {
                path: paths::config_entity("brokers", &name),
                reason: other.to_string(),
            },
        })
    };
    let cluster = read(DEFAULT_ENTITY.to_string()).await?;
    let broker = read(targets.id.to_string()).await?;
    tracing::info!(?cluster, ?broker, "applying the dynamic broker configs");
    for key in stored_only_keys(&cluster, &broker) {
        tracing::warn!("stored, not applied by kastle: {key}");
    }
    let effective = effective_config(&targets.static_config, &cluster, &broker, targets.id);
    targets.connection_quotas.update(connection_limits(&effective));
    if let Some(rm) = &targets.replica_manager {
        rm.fetchers().resize(replica_fetchers(&effective));
        // Kafka's BrokerConfigHandler: this broker's value, else the cluster default's.
        rm.quotas().update_rates(
            effective.leader_replication_throttled_rate(),
            effective.follower_replication_throttled_rate(),
        );
    }
    if let Some(tls) = &targets.tls {
        let (tls, config) = (tls.clone(), effective.clone());
        // Reads the keystores: off the async workers.
        let _ = tokio::task::spawn_blocking(move || crate::server::tls_reload::apply(&tls, &config)).await;
    }
    if let Some(cleaner) = &targets.log_cleaner {
        let wanted = CleanerConfig::from_broker(&effective);
        if cleaner.config() != wanted {
            let cleaner = cleaner.clone();
            // Joins the old threads (one may be mid-cleaning): off the async workers.
            let _ = tokio::task::spawn_blocking(move || cleaner.reconfigure(wanted)).await;
        }
    }
    let defaults = LogConfig::from_broker(&effective);
    let manager = targets.log_manager.clone();
    // Locks every log in turn (one may be held through a slow write): off the async workers.
    let _ = tokio::task::spawn_blocking(move || manager.update_broker_defaults(defaults)).await;
    Ok(effective)
}

/// Applies `topic`'s overrides to its logs here (Kafka's `TopicConfigHandler`); a topic this
/// broker does not host is left alone: its overrides are read when a replica is created, and
/// recording them now could outlive a deleted topic of the same name.
async fn apply_topic_config<S: ZkStore>(
    zk: &KafkaZkClient<S>,
    targets: &Targets,
    topic: String,
) -> Result<(), ZkError> {
    if !targets.log_manager.hosts_topic(&topic) && !targets.log_manager.knows_topic_config(&topic) {
        return Ok(());
    }
    let overrides = match zk.topic_config(&topic).await {
        Ok(o) => o,
        Err(crate::zk::KafkaZkError::Zk(e)) => return Err(e),
        Err(e) => {
            tracing::warn!(%topic, error = %e, "unreadable topic config; ignored");
            return Ok(());
        }
    };
    tracing::info!(%topic, ?overrides, "applying a topic config change");
    let manager = targets.log_manager.clone();
    let rm = targets.replica_manager.clone();
    let _ = tokio::task::spawn_blocking(move || match rm {
        // Its logs and its throttled-replica lists (KIP-73).
        Some(rm) => rm.update_topic_config(&topic, overrides),
        None => manager.update_topic_config(&topic, overrides),
    })
    .await;
    Ok(())
}

/// Processes the notifications after `last`; returns the last one processed. Stops at the
/// first ZooKeeper failure, so the rest is retried on the next pass.
async fn process<S: ZkStore>(
    zk: &KafkaZkClient<S>,
    targets: &Targets,
    last: Option<u64>,
    now_ms: i64,
) -> Result<Option<u64>, ZkError> {
    let children = zk.store().children(paths::CONFIG_CHANGES).await?;
    let mut last = last;
    for (seq, child) in to_process(&children, last) {
        let path = paths::child(paths::CONFIG_CHANGES, &child);
        let data = match zk.store().get_data(&path).await {
            Ok((data, _)) => data,
            // Purged by another broker meanwhile: nothing to apply.
            Err(ZkError::NoNode { .. }) => {
                last = Some(seq);
                continue;
            }
            Err(e) => return Err(e),
        };
        match ConfigChangeNotification::decode(&data)
            .map_err(|e| e.to_string())
            .and_then(|n| entity_of(&n))
        {
            Ok(ConfigEntity::Topic(topic)) => apply_topic_config(zk, targets, topic).await?,
            Ok(ConfigEntity::BrokerDefault) => apply_broker_configs(zk, targets).await.map(|_| ())?,
            Ok(ConfigEntity::Broker(id)) if id == targets.id => apply_broker_configs(zk, targets).await.map(|_| ())?,
            Ok(ConfigEntity::Broker(_)) => {}
            Ok(ConfigEntity::User(user)) => {
                if let Some(cache) = &targets.credentials {
                    crate::security::sasl::credentials::reload_user(zk, cache, &user).await?;
                }
            }
            Ok(ConfigEntity::Other(entity)) => tracing::debug!(%entity, "config change not applied by kastle"),
            Err(why) => tracing::error!(%path, %why, "ignoring a malformed config change notification"),
        }
        last = Some(seq);
    }
    purge(zk, &children, now_ms).await;
    Ok(last)
}

async fn purge<S: ZkStore>(zk: &KafkaZkClient<S>, children: &[String], now_ms: i64) {
    let mut seen = Vec::new();
    for child in children.iter().filter(|c| sequence_of(c).is_some()) {
        if let Ok(Some(stat)) = zk.store().exists(&paths::child(paths::CONFIG_CHANGES, child)).await {
            seen.push((child.clone(), stat.ctime));
        }
    }
    for child in to_purge(&seen, now_ms, CHANGE_EXPIRATION_MS) {
        let path = paths::child(paths::CONFIG_CHANGES, &child);
        match zk.store().delete(&path, None).await {
            Ok(()) | Err(ZkError::NoNode { .. }) => tracing::debug!(%path, "purged an old config change notification"),
            Err(e) => tracing::warn!(%path, error = %e, "cannot purge a config change notification"),
        }
    }
}

/// Runs until `stop`: processes every notification present, then each new one as the child
/// watch reports it. A failed pass is retried after a second.
pub async fn run<S: ZkStore + Clone>(zk: KafkaZkClient<S>, targets: Targets, mut stop: watch::Receiver<bool>) {
    let mut events = loop {
        match zk.store().watch(paths::CONFIG_CHANGES, WatchMode::Persistent).await {
            Ok(w) => break w,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch /config/changes yet; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => return,
                }
            }
        }
    };
    let mut last = None;
    let mut pending = true;
    loop {
        if pending {
            match process(&zk, &targets, last, crate::clock::now_ms()).await {
                Ok(processed) => {
                    last = processed;
                    pending = false;
                }
                Err(e) => tracing::warn!(error = %e, "config change processing failed; retrying"),
            }
        }
        tokio::select! {
            event = events.recv() => match event {
                None => return,
                Some(WatchEvent::ChildrenChanged { .. } | WatchEvent::Rearmed | WatchEvent::Created { .. }) => pending = true,
                Some(_) => {}
            },
            _ = tokio::time::sleep(Duration::from_secs(1)), if pending => {}
            _ = stop.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(ns: &[&str]) -> Vec<String> {
        ns.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn notifications_after_the_last_processed_go_in_sequence_order() {
        let children = names(&[
            "config_change_0000000010",
            "config_change_0000000002",
            "stray",
            "config_change_0000000003",
        ]);
        let seqs = |v: Vec<(u64, String)>| v.into_iter().map(|(s, _)| s).collect::<Vec<_>>();
        assert_eq!(
            seqs(to_process(&children, None)),
            [2, 3, 10],
            "at start-up: all of them"
        );
        assert_eq!(seqs(to_process(&children, Some(3))), [10]);
        assert!(to_process(&children, Some(10)).is_empty());
        assert_eq!(
            seqs(to_process(&children, Some(11))),
            [2, 3, 10],
            "all older than the last processed: the counter restarted"
        );
        assert!(to_process(&[], Some(11)).is_empty());
    }

    #[test]
    fn notifications_older_than_fifteen_minutes_are_purged() {
        let now = 100 * 60 * 1000;
        let seen = vec![
            ("config_change_0000000001".to_string(), now - CHANGE_EXPIRATION_MS - 1),
            ("config_change_0000000002".to_string(), now - CHANGE_EXPIRATION_MS),
            ("config_change_0000000003".to_string(), now - 5),
        ];
        assert_eq!(to_purge(&seen, now, CHANGE_EXPIRATION_MS), ["config_change_0000000001"]);
    }

    #[test]
    fn both_notification_versions_name_their_entity() {
        let v2 = |p: &str| ConfigChangeNotification::v2(p.to_string());
        assert_eq!(
            entity_of(&v2("topics/orders")),
            Ok(ConfigEntity::Topic("orders".into()))
        );
        assert_eq!(entity_of(&v2("brokers/<default>")), Ok(ConfigEntity::BrokerDefault));
        assert_eq!(entity_of(&v2("brokers/2")), Ok(ConfigEntity::Broker(BrokerId(2))));
        assert_eq!(
            entity_of(&v2("users/alice/clients/c1")),
            Ok(ConfigEntity::Other("users/alice/clients/c1".into()))
        );
        assert!(entity_of(&v2("brokers/x")).is_err());
        let v1 = ConfigChangeNotification::decode(br#"{"version":1,"entity_type":"topics","entity_name":"t"}"#)
            .expect("decodes");
        assert_eq!(entity_of(&v1), Ok(ConfigEntity::Topic("t".into())));
        let v1_users = ConfigChangeNotification::decode(br#"{"version":1,"entity_type":"users","entity_name":"u"}"#)
            .expect("decodes");
        assert!(entity_of(&v1_users).is_err());
    }

    /// The edge over the in-memory ZooKeeper: a topic change reaches the hosted topic's logs, a
    /// broker `<default>` change every log, an unhosted topic is not recorded, and old
    /// notifications are purged.
    #[tokio::test]
    async fn notifications_are_applied_to_the_logs_and_purged() {
        use crate::log::failure::LogDirFailureChannel;
        use crate::log::file::Faults;
        use crate::log::log_manager::{lock, LogManagerConfig};
        use crate::types::TopicPartition;
        use crate::zk::fake::FakeZk;
        let dir = tempfile::tempdir().expect("dir");
        let cfg = LogManagerConfig {
            dirs: vec![dir.path().to_path_buf()],
            clean_dirs: Vec::new(),
            log: LogConfig::default(),
            recovery_threads_per_dir: 1,
        };
        let manager = Arc::new(LogManager::startup(
            &cfg,
            LogDirFailureChannel::new(),
            Faults::default(),
            0,
        ));
        let tp = TopicPartition {
            topic: "hosted".into(),
            partition: 0,
        };
        let log = manager.get_or_create_log(&tp, 0).expect("log");
        let zk = KafkaZkClient::new(FakeZk::new());
        zk.ensure_persistent_paths().await.expect("paths");
        let targets = Targets {
            id: BrokerId(1),
            static_config: Arc::new(KafkaConfig::from_pairs(&[("zookeeper.connect", "zk:2181")]).expect("config")),
            log_manager: manager.clone(),
            connection_quotas: ConnectionQuotas::new(100, 100),
            replica_manager: None,
            log_cleaner: None,
            credentials: None,
            tls: None,
        };
        let set = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        zk.change_entity_config("topics", "hosted", &set(&[("retention.ms", "5000")]), None)
            .await
            .expect("topic");
        zk.change_entity_config("topics", "elsewhere", &set(&[("retention.ms", "1")]), None)
            .await
            .expect("other topic");
        zk.change_entity_config("brokers", DEFAULT_ENTITY, &set(&[("min.insync.replicas", "2")]), None)
            .await
            .expect("default");
        let last = process(&zk, &targets, None, 0).await.expect("processed");
        assert_eq!(last, Some(2));
        let applied = lock(&log).config().clone();
        assert_eq!((applied.retention_ms, applied.min_insync_replicas), (5000, 2));
        assert_eq!(manager.min_insync_replicas("hosted"), 2);
        assert!(
            !manager.knows_topic_config("elsewhere"),
            "an unhosted topic is not recorded"
        );
        // Nothing new: nothing processed again; all three are older than 15 minutes later on.
        assert_eq!(process(&zk, &targets, last, 0).await.expect("again"), last);
        assert_eq!(
            zk.store()
                .children(paths::CONFIG_CHANGES)
                .await
                .expect("children")
                .len(),
            3
        );
        process(&zk, &targets, last, CHANGE_EXPIRATION_MS + 1)
            .await
            .expect("purge");
        assert!(zk
            .store()
            .children(paths::CONFIG_CHANGES)
            .await
            .expect("children")
            .is_empty());
    }

    /// Kafka's `BrokerConfigHandler` / `TopicConfigHandler` for KIP-73: the throttle rates
    /// reach the ReplicaManager's quotas (this broker's value over `<default>`, unset:
    /// unlimited) and a hosted topic's lists its throttled partitions.
    #[tokio::test]
    async fn throttle_rates_and_lists_are_applied_to_the_replication_quotas() {
        use crate::log::failure::LogDirFailureChannel;
        use crate::log::file::Faults;
        use crate::log::log_manager::LogManagerConfig;
        use crate::replica::ReplicaConfig;
        use crate::types::TopicPartition;
        use crate::zk::fake::FakeZk;
        let dir = tempfile::tempdir().expect("dir");
        let cfg = LogManagerConfig {
            dirs: vec![dir.path().to_path_buf()],
            clean_dirs: Vec::new(),
            log: LogConfig::default(),
            recovery_threads_per_dir: 1,
        };
        let manager = Arc::new(LogManager::startup(
            &cfg,
            LogDirFailureChannel::new(),
            Faults::default(),
            0,
        ));
        let tp = TopicPartition {
            topic: "hosted".into(),
            partition: 0,
        };
        manager.get_or_create_log(&tp, 0).expect("log");
        let rm = Arc::new(ReplicaManager::new(
            BrokerId(1),
            manager.clone(),
            ReplicaConfig::default(),
        ));
        let zk = KafkaZkClient::new(FakeZk::new());
        zk.ensure_persistent_paths().await.expect("paths");
        let targets = Targets {
            id: BrokerId(1),
            static_config: Arc::new(KafkaConfig::from_pairs(&[("zookeeper.connect", "zk:2181")]).expect("config")),
            log_manager: manager,
            connection_quotas: ConnectionQuotas::new(100, 100),
            replica_manager: Some(rm.clone()),
            log_cleaner: None,
            credentials: None,
            tls: None,
        };
        let set = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        // Creates or overwrites `/config/<kind>/<name>` and announces it, as AlterConfigs does.
        let change = |kind: &'static str, name: &'static str, config: BTreeMap<String, String>| {
            let zk = &zk;
            async move {
                let at = zk
                    .store()
                    .exists(&paths::config_entity(kind, name))
                    .await
                    .expect("exists");
                zk.change_entity_config(kind, name, &config, at.map(|s| s.version))
                    .await
                    .expect("change");
            }
        };
        let bounds = || (rm.quotas().leader().bound(), rm.quotas().follower().bound());
        assert_eq!(bounds(), (None, None), "unlimited by default");
        let default = set(&[
            ("leader.replication.throttled.rate", "100"),
            ("follower.replication.throttled.rate", "100"),
        ]);
        change("brokers", DEFAULT_ENTITY, default).await;
        let mine = set(&[("follower.replication.throttled.rate", "200")]);
        change("brokers", "1", mine).await;
        let other = set(&[("leader.replication.throttled.rate", "7")]);
        change("brokers", "2", other).await;
        let lists = set(&[
            ("leader.replication.throttled.replicas", "0:1"),
            ("follower.replication.throttled.replicas", "0:2"),
        ]);
        change("topics", "hosted", lists).await;
        let last = process(&zk, &targets, None, 0).await.expect("processed");
        assert_eq!(bounds(), (Some(100), Some(200)));
        assert!(rm.quotas().leader().is_throttled(&tp));
        assert!(
            !rm.quotas().follower().is_throttled(&tp),
            "the follower list names broker 2"
        );
        // What --verify does: the rates and lists deleted.
        change("brokers", "1", BTreeMap::new()).await;
        change("brokers", DEFAULT_ENTITY, BTreeMap::new()).await;
        change("topics", "hosted", BTreeMap::new()).await;
        process(&zk, &targets, last, 0).await.expect("processed");
        assert_eq!(bounds(), (None, None));
        assert!(!rm.quotas().leader().is_throttled(&tp));
    }

    #[test]
    fn a_broker_value_overrides_the_default_which_overrides_the_static_config() {
        let static_config = KafkaConfig::from_pairs(&[
            ("zookeeper.connect", "zk:2181"),
            ("log.retention.ms", "1000"),
            ("min.insync.replicas", "1"),
        ])
        .expect("config");
        let p = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let none = BTreeMap::new();
        let id = BrokerId(1);
        assert_eq!(broker_log_defaults(&static_config, &none, &none, id).retention_ms, 1000);
        let cluster = p(&[("log.retention.ms", "2000"), ("min.insync.replicas", "2")]);
        let c = broker_log_defaults(&static_config, &cluster, &none, id);
        assert_eq!((c.retention_ms, c.min_insync_replicas), (2000, 2));
        let broker = p(&[("log.retention.ms", "3000")]);
        let c = broker_log_defaults(&static_config, &cluster, &broker, id);
        assert_eq!((c.retention_ms, c.min_insync_replicas), (3000, 2));
        // A non-dynamic key in ZooKeeper changes nothing.
        let c = broker_log_defaults(&static_config, &p(&[("log.retention.hours", "1")]), &none, id);
        assert_eq!(c.retention_ms, 1000);
    }

    #[test]
    fn dynamic_connection_limits_layer_on_the_static_ones() {
        let static_config =
            KafkaConfig::from_pairs(&[("zookeeper.connect", "zk:2181"), ("max.connections", "50")]).expect("config");
        let p = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let none = BTreeMap::new();
        let id = BrokerId(1);
        let l = connection_limits(&effective_config(&static_config, &none, &none, id));
        assert_eq!((l.max_connections, l.max_connections_per_ip), (50, i32::MAX as usize));
        let cluster = p(&[
            ("max.connections.per.ip", "3"),
            ("max.connections.per.ip.overrides", "127.0.0.1:7"),
        ]);
        let broker = p(&[("max.connections", "20")]);
        let l = connection_limits(&effective_config(&static_config, &cluster, &broker, id));
        assert_eq!((l.max_connections, l.max_connections_per_ip), (20, 3));
        assert_eq!(l.per_ip("127.0.0.1".parse().expect("ip")), 7);
        assert_eq!(l.per_ip("127.0.0.2".parse().expect("ip")), 3);
    }

    #[test]
    fn keys_kastle_only_stores_are_named() {
        let p = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let cluster = p(&[
            ("background.threads", "4"),
            ("log.retention.ms", "1"),
            ("custom.key", "x"),
        ]);
        let broker = p(&[
            ("background.threads", "5"),
            ("listener.name.external.max.connections", "3"),
        ]);
        assert_eq!(
            stored_only_keys(&cluster, &broker),
            ["background.threads", "listener.name.external.max.connections"]
        );
    }

    #[test]
    fn compression_and_timestamp_bounds_are_live_log_defaults() {
        let static_config = KafkaConfig::from_pairs(&[("zookeeper.connect", "zk:2181")]).expect("config");
        let p = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let cluster = p(&[
            ("compression.type", "gzip"),
            ("log.message.timestamp.before.max.ms", "1000"),
            ("log.message.timestamp.after.max.ms", "2000"),
        ]);
        let c = broker_log_defaults(&static_config, &cluster, &BTreeMap::new(), BrokerId(1));
        assert_eq!(c.compression, Some(crate::protocol::record_batch::Compression::Gzip));
        assert_eq!((c.timestamp_before_max_ms, c.timestamp_after_max_ms), (1000, 2000));
        assert!(
            stored_only_keys(&cluster, &BTreeMap::new()).is_empty(),
            "applied, so no warning"
        );
    }
}
