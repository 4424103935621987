//! One broker process's life: start-up in Kafka's order (ZooKeeper session → persistent paths →
//! cluster id → log-dir identity → listeners → registration), then waiting for a stop, then a
//! clean shutdown (deregister, `.kafka_cleanshutdown` in every live log dir, close the session).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::listeners::{self, BindError};
use super::log_dirs;
use super::registration::Registrar;
use crate::clock::{now_ms, run_periodically};
use crate::config::KafkaConfig;
use crate::controller::{ControllerConfig, ControllerHandle};
use crate::log::clean_shutdown;
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log_manager::{LogManager, LogManagerConfig};
use crate::log::meta_properties::MetaPropertiesError;
use crate::network::socket_server::{NetworkConfig, SocketServer};
use crate::replica::ReplicaManager;
use crate::server::apis::{ApiConfig, KafkaApis};
use crate::server::controlled_shutdown::{self, ControlledShutdownConfig};
use crate::server::metadata_cache::MetadataCache;
use crate::types::{BrokerEpoch, BrokerId};
use crate::zk::connect::{ConnectString, ConnectStringError};
use crate::zk::kafka_zk_client::{KafkaZkClient, KafkaZkError};
use crate::zk::models::AdvertisedEndpoint;
use crate::zk::security::{ZkSecurity, ZkSecurityError};
use crate::zk::session::ZkSession;

/// Why a broker could not start, or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    ConnectString(#[from] ConnectStringError),
    #[error(transparent)]
    Zk(#[from] KafkaZkError),
    #[error(transparent)]
    ZkSecurity(#[from] ZkSecurityError),
    #[error(transparent)]
    LogDirIdentity(#[from] MetaPropertiesError),
    #[error("no usable log dir: {}", describe_offline(.offline))]
    NoLiveLogDirs { offline: Vec<(PathBuf, String)> },
    #[error("broker.id is not set and broker.id.generation.enable=false: set broker.id")]
    BrokerIdUnset,
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error(transparent)]
    ListenerTls(#[from] listeners::ListenerTlsError),
    /// A SASL listener kastle cannot serve (config validation normally catches it first).
    #[error(transparent)]
    Sasl(#[from] crate::security::sasl::config::SaslConfigError),
    /// The inter-broker listener's truststore or login is missing or unreadable.
    #[error(transparent)]
    InterBrokerSecurity(#[from] crate::security::inter_broker::InterBrokerSecurityError),
}

fn describe_offline(offline: &[(PathBuf, String)]) -> String {
    offline
        .iter()
        .map(|(d, why)| format!("{} ({why})", d.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Starts brokers.
#[derive(Debug)]
pub struct Broker;

impl Broker {
    /// Runs start-up; returns once the broker is registered in ZooKeeper.
    pub async fn start(config: &KafkaConfig) -> Result<BrokerHandle, BrokerError> {
        let connect = ConnectString::parse(config.zookeeper_connect())?;
        let security = ZkSecurity::load(config.zookeeper_security())?;
        tracing::info!(
            zookeeper = %connect,
            sasl = security.digest.as_ref().map(|d| d.username.as_str()),
            set_acl = security.set_acl,
            "connecting to ZooKeeper"
        );
        let session = ZkSession::connect_secured(
            &connect,
            config.zookeeper_session_timeout(),
            config.zookeeper_connection_timeout(),
            &security,
        )
        .await
        .map_err(KafkaZkError::from)?;
        // The state watch's own session (ZooKeeper keeps one watch mode per path and session,
        // and the controller's child watch on /brokers/topics must not become recursive). It is
        // opened before the broker registers: once registered, nothing in start-up may fail on
        // a slow or paused connect, or a registered broker would exit instead of serving.
        let watch_session = match ZkSession::connect_secured(
            &connect,
            config.zookeeper_session_timeout(),
            config.zookeeper_connection_timeout(),
            &security,
        )
        .await
        {
            Ok(s) => s,
            Err(e) => {
                session.close().await;
                return Err(KafkaZkError::from(e).into());
            }
        };
        match start_registered(config, session.clone(), watch_session.clone()).await {
            Ok(handle) => Ok(handle),
            Err(e) => {
                session.close().await;
                watch_session.close().await;
                Err(e)
            }
        }
    }
}

async fn start_registered(
    config: &KafkaConfig,
    session: ZkSession,
    watch_session: ZkSession,
) -> Result<BrokerHandle, BrokerError> {
    let zk = KafkaZkClient::new(session.clone());
    zk.ensure_persistent_paths().await?;
    let cluster_id = zk.get_or_create_cluster_id(new_cluster_id).await?;
    tracing::info!(cluster_id = %cluster_id, "cluster id");

    let mut dirs = log_dirs::scan(&config.log_dirs())?;
    let id = resolve_broker_id(config, &dirs, &zk).await?;
    dirs.settle_identity(&cluster_id, id.0)?;
    if dirs.live.is_empty() {
        return Err(BrokerError::NoLiveLogDirs { offline: dirs.offline });
    }
    let log_manager = load_logs(config, &dirs.live).await;
    let topic_configs = load_topic_configs(&zk, &log_manager).await?;
    // The dynamic broker configs (`/config/brokers/<default>`, `/config/brokers/<id>`) before
    // serving, as Kafka reads them at start-up; later changes come through /config/changes.
    let connection_quotas = crate::network::connection_quotas::ConnectionQuotas::with_limits(
        crate::server::dynamic_config::connection_limits(config),
    );
    let mut dynamic_targets = crate::server::dynamic_config::Targets {
        id,
        static_config: Arc::new(config.clone()),
        log_manager: log_manager.clone(),
        connection_quotas: connection_quotas.clone(),
        replica_manager: None,
        log_cleaner: None,
        credentials: None,
        tls: None,
    };
    let effective = crate::server::dynamic_config::apply_broker_configs(&zk, &dynamic_targets)
        .await
        .map_err(KafkaZkError::from)?;
    if log_manager.live_dirs().is_empty() {
        return Err(BrokerError::NoLiveLogDirs {
            offline: offline_with_reasons(&dirs.offline, &log_manager),
        });
    }
    // SASL: the SCRAM credentials from /config/users before registering (once registered,
    // nothing in start-up may fail on ZooKeeper, or a broker paused past its session would exit
    // instead of re-registering), kept current by the `/config/changes` listener
    // (`users/<u>` notifications).
    let credentials = crate::security::sasl::credentials::CredentialCache::new();
    crate::security::sasl::credentials::load(&zk, &credentials).await?;
    dynamic_targets.credentials = Some(credentials.clone());

    let tls_servers = {
        // The dynamic `listener.name.<l>.ssl.*` keys included, as Kafka starts with them.
        let config = effective.clone();
        // Reads the keystores: off the async workers.
        tokio::task::spawn_blocking(move || listeners::tls_servers(&config))
            .await
            .map_err(|e| BindError {
                endpoint: "SSL listeners".to_string(),
                source: std::io::Error::other(e),
            })??
    };
    dynamic_targets.tls = Some(tls_servers.clone());
    // Every broker-to-broker connection is secured as the inter-broker listener demands; a
    // missing truststore or login stops the start-up here, naming the key.
    let inter_broker_security = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || crate::security::inter_broker::connection_security(&config))
            .await
            .map_err(|e| BindError {
                endpoint: "the inter-broker listener".to_string(),
                source: std::io::Error::other(e),
            })??
    };
    let bound = listeners::bind(config.listeners()).await?;
    let endpoints = listeners::advertised(config.advertised_listeners(), &bound);

    let replica_manager = Arc::new(ReplicaManager::new(
        id,
        log_manager.clone(),
        replica_config(&effective, &inter_broker_security),
    ));
    dynamic_targets.replica_manager = Some(replica_manager.clone());
    // The hosted topics' throttled-replica lists (KIP-73), from the overrides just loaded.
    for (topic, overrides) in &topic_configs {
        replica_manager.quotas().update_topic(topic, overrides);
    }
    let metadata_cache = Arc::new(MetadataCache::default());
    let groups = crate::coordinator::group::GroupCoordinator::new(
        crate::coordinator::group::GroupConfig::from_config(config),
        replica_manager.clone(),
        metadata_cache.clone(),
    );
    // The ACL cache is loaded before serving, as Kafka's AclAuthorizer does at start-up.
    let authorizer = crate::security::authorizer::AclAuthorizer::from_config(config);
    if let Some(a) = &authorizer {
        crate::security::authorizer::store::load_cache(zk.store(), a)
            .await
            .map_err(KafkaZkError::from)?;
    }
    let apis = Arc::new(KafkaApis {
        authorizer: authorizer.clone(),
        broker_id: id,
        cluster_id: cluster_id.clone(),
        replica_manager: replica_manager.clone(),
        metadata_cache: metadata_cache.clone(),
        zk: zk.clone(),
        config: ApiConfig {
            auto_create_topics_enable: config.get_bool("auto.create.topics.enable").unwrap_or(true),
            num_partitions: config.num_partitions(),
            default_replication_factor: config.default_replication_factor(),
            delete_topic_enable: config.get_bool("delete.topic.enable").unwrap_or(true),
            inter_broker_listener: config.inter_broker_listener_name().to_string(),
        },
        broker_config: Arc::new(config.clone()),
        groups: groups.clone(),
        producer_ids: crate::server::producer_ids::ProducerIdManager::new(zk.clone(), id),
        controller: std::sync::OnceLock::new(),
        fetch_sessions: crate::server::fetch_session::wire::FetchManager::new(
            crate::server::fetch_session::wire::FetchSessionConfig::from_config(config),
        ),
        tls_servers: tls_servers.clone(),
    });

    let mut registrar = Registrar::new(
        zk.clone(),
        id,
        endpoints.clone(),
        config.broker_rack().map(str::to_string),
    );
    let events = session.subscribe();
    registrar
        .register_at_startup(config.zookeeper_session_timeout())
        .await?;
    let epoch = registrar.epoch();
    replica_manager.set_broker_epoch(epoch.borrow().0);

    let (stop, stop_rx) = watch::channel(false);
    let (fatal_tx, fatal) = mpsc::channel(1);
    let mut tasks = Vec::new();
    // Every broker runs the controller module; one of them wins /controller.
    let controller = crate::controller::start_with(
        ControllerConfig {
            broker_id: id,
            inter_broker_listener: config.inter_broker_listener_name().to_string(),
            unclean_leader_election: config.get_bool("unclean.leader.election.enable").unwrap_or(false),
            auto_leader_rebalance: config.get_bool("auto.leader.rebalance.enable").unwrap_or(true),
            leader_imbalance_check_interval: Duration::from_secs(
                config
                    .get_i64("leader.imbalance.check.interval.seconds")
                    .unwrap_or(300)
                    .max(1) as u64,
            ),
            leader_imbalance_per_broker_percentage: config
                .get_i32("leader.imbalance.per.broker.percentage")
                .unwrap_or(10)
                .max(0) as u32,
        },
        session.clone(),
        stop_rx.clone(),
        crate::controller::channel::Transport::Network(inter_broker_security.clone()),
    )
    .await;
    let _ = apis.controller.set(controller.clone());
    let mut network = network_config(config);
    network.sasl = crate::network::authentication::SaslListeners(crate::security::sasl::config::sasl_listeners(
        config,
        &credentials,
    )?);
    // Like Kafka, requests are served only once the broker is registered.
    let server = SocketServer::start_listeners(
        bound.into_iter().map(|b| b.into_served(&tls_servers)).collect(),
        apis.clone(),
        network,
        connection_quotas,
    );
    // Replication: leaders' ISR writes, the state-znode safety net, the ISR expiry check.
    let (isr_tx, isr_rx) = mpsc::unbounded_channel();
    replica_manager.set_isr_writer(isr_tx);
    tasks.push(tokio::spawn(crate::replica::isr_writer::run(
        replica_manager.clone(),
        session.clone(),
        isr_rx,
        Default::default(),
        stop_rx.clone(),
    )));
    tasks.push(tokio::spawn(crate::replica::state_watch::run(
        replica_manager.clone(),
        watch_session.clone(),
        stop_rx.clone(),
    )));
    let rm = replica_manager.clone();
    let every = Duration::from_millis((replica_manager.replica_lag_time_max_ms() / 2).max(1) as u64);
    tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
        rm.maybe_shrink_isrs(now_ms())
    })));
    tasks.push(tokio::spawn(groups.clone().run(stop_rx.clone())));
    // Built from the effective config; `log.cleaner.*` changes reconfigure it live.
    if let Some((cleaner, stopped)) = start_log_cleaner(&effective, &log_manager, &replica_manager, stop_rx.clone()) {
        dynamic_targets.log_cleaner = Some(cleaner);
        tasks.push(stopped);
    }
    if let Some(a) = authorizer {
        tasks.push(tokio::spawn(crate::security::authorizer::store::run(
            watch_session.clone(),
            a,
            stop_rx.clone(),
        )));
    }
    tasks.push(tokio::spawn(crate::server::dynamic_config::run(
        zk.clone(),
        dynamic_targets,
        stop_rx.clone(),
    )));
    let rm = replica_manager.clone();
    tasks.push(tokio::spawn(run_periodically(
        Duration::from_secs(2),
        stop_rx.clone(),
        move || {
            rm.publish_metrics();
            groups.publish_metrics();
        },
    )));
    tasks.push(tokio::spawn(watch_log_dirs(
        replica_manager.clone(),
        log_manager.clone(),
        zk.clone(),
        id,
        fatal_tx.clone(),
        stop_rx.clone(),
    )));
    // Background chores, on Kafka's intervals. `run_periodically` runs each on the blocking
    // pool: they fsync, write checkpoints, delete segments and wait for log locks an append
    // may hold through a slow write, none of which may occupy an async worker.
    let m = log_manager.clone();
    let every = ms(config, "log.flush.offset.checkpoint.interval.ms", 60_000);
    tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
        m.checkpoint_logs()
    })));
    // New leaders' epoch entries, deferred off the LeaderAndIsr path, on the same interval.
    let m = log_manager.clone();
    tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
        m.flush_leader_epochs();
    })));
    if let Some(every) = flush_scheduler_interval(config) {
        let m = log_manager.clone();
        tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
            m.flush_dirty_logs(now_ms());
        })));
    }
    let (m, rm) = (log_manager.clone(), replica_manager.clone());
    let every = ms(config, "replica.high.watermark.checkpoint.interval.ms", 5_000);
    tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
        m.checkpoint_high_watermarks(&rm.high_watermarks())
    })));
    let (m, rm) = (log_manager.clone(), replica_manager.clone());
    let every = ms(config, "log.retention.check.interval.ms", 300_000);
    tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
        // The callback takes the partition's lock: cleanup_logs asks it before locking each log.
        let deleted = m.cleanup_logs(|tp| rm.partition(tp).map_or(0, |p| p.high_watermark()), now_ms());
        if deleted > 0 {
            tracing::info!(deleted, "retention deleted segments");
        }
    })));
    // Kafka's producer-expiration task (`producer.id.expiration.check.interval.ms`).
    let m = log_manager.clone();
    let every = ms(config, "producer.id.expiration.check.interval.ms", 600_000);
    tasks.push(tokio::spawn(run_periodically(every, stop_rx.clone(), move || {
        let expired = m.remove_expired_producers(now_ms());
        if expired > 0 {
            tracing::info!(expired, "expired idle producer ids");
        }
    })));
    tasks.push(tokio::spawn(follow_broker_epoch(
        epoch.clone(),
        replica_manager.clone(),
    )));
    let registration_stop = stop_rx.clone();
    tasks.push(tokio::spawn(async move {
        if let Err(e) = registrar.run(events, registration_stop).await {
            let _ = fatal_tx.send(BrokerError::Zk(e)).await;
        }
    }));
    tracing::info!("[KafkaServer id={id}] started");
    Ok(BrokerHandle {
        id,
        cluster_id,
        endpoints,
        epoch,
        stop,
        fatal,
        tasks,
        zk,
        log_manager,
        replica_manager,
        metadata_cache,
        apis,
        server: Some(server),
        watch_session,
        controller,
        shutdown_config: ControlledShutdownConfig {
            enable: config.get_bool("controlled.shutdown.enable").unwrap_or(true),
            max_retries: config.get_i32("controlled.shutdown.max.retries").unwrap_or(3).max(0) as u32,
            retry_backoff: Duration::from_millis(
                config
                    .get_i64("controlled.shutdown.retry.backoff.ms")
                    .unwrap_or(5_000)
                    .max(0) as u64,
            ),
            listener: config.inter_broker_listener_name().to_string(),
            security: inter_broker_security,
        },
    })
}

/// Kafka's rule for the broker id: configured, else stored in `meta.properties`, else
/// generated from `/brokers/seqid`.
async fn resolve_broker_id(
    config: &KafkaConfig,
    dirs: &log_dirs::LogDirs,
    zk: &KafkaZkClient<ZkSession>,
) -> Result<BrokerId, BrokerError> {
    let stored = dirs.stored_broker_id()?;
    let configured = config.broker_id();
    if configured >= 0 {
        return Ok(BrokerId(configured));
    }
    if let Some(id) = stored {
        return Ok(BrokerId(id));
    }
    if !config.broker_id_generation_enable() {
        return Err(BrokerError::BrokerIdUnset);
    }
    Ok(zk.generate_broker_id(config.reserved_broker_max_id()).await?)
}

/// A Kafka cluster id: a random UUID in URL-safe base64 without padding (22 characters).
fn new_cluster_id() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}

/// Loads every log (recovering dirs that were not shut down cleanly), then removes the
/// clean-shutdown markers so a crash from here on is recognised as one.
async fn load_logs(config: &KafkaConfig, dirs: &[PathBuf]) -> Arc<LogManager> {
    let clean_dirs: Vec<PathBuf> = dirs
        .iter()
        .filter(|d| d.join(clean_shutdown::FILE_NAME).exists())
        .cloned()
        .collect();
    for dir in dirs.iter().filter(|d| !clean_dirs.contains(d)) {
        tracing::info!(dir = %dir.display(), "no clean-shutdown marker: recovering the logs in this dir");
    }
    let cfg = LogManagerConfig {
        dirs: dirs.to_vec(),
        clean_dirs,
        log: LogConfig::from_broker(config),
        recovery_threads_per_dir: config.get_i32("num.recovery.threads.per.data.dir").unwrap_or(1).max(1) as usize,
    };
    let started = std::time::Instant::now();
    let manager = tokio::task::spawn_blocking(move || {
        let manager = LogManager::startup(&cfg, LogDirFailureChannel::new(), Faults::default(), now_ms());
        for dir in manager.live_dirs() {
            if let Err(e) = clean_shutdown::take(&dir) {
                manager.failures().report(&dir, &e.to_string());
            }
        }
        manager
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    tracing::info!(
        logs = manager.all_logs().len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "logs loaded"
    );
    Arc::new(manager)
}

/// Gives the loaded logs their topics' overrides from `/config/topics/<t>` (Kafka's LogManager
/// reads them before loading; kastle applies them right after, before serving requests).
/// Returns them, for the replication throttles.
async fn load_topic_configs(
    zk: &KafkaZkClient<ZkSession>,
    manager: &LogManager,
) -> Result<Vec<(String, std::collections::BTreeMap<String, String>)>, BrokerError> {
    let topics: std::collections::BTreeSet<String> = manager.all_logs().into_iter().map(|(tp, _)| tp.topic).collect();
    // Concurrently: the ZooKeeper client pipelines the reads, one round trip for all topics.
    let mut reads = tokio::task::JoinSet::new();
    for topic in topics {
        let zk = zk.clone();
        reads.spawn(async move {
            let overrides = zk.topic_config(&topic).await;
            (topic, overrides)
        });
    }
    let mut loaded = Vec::new();
    while let Some(read) = reads.join_next().await {
        let Ok((topic, overrides)) = read else { continue };
        let overrides = overrides?;
        manager.update_topic_config(&topic, overrides.clone());
        loaded.push((topic, overrides));
    }
    Ok(loaded)
}

/// Starts the log cleaner threads when `log.cleaner.enable`; the returned task stops them at
/// broker shutdown.
fn start_log_cleaner(
    config: &KafkaConfig,
    manager: &Arc<LogManager>,
    replica_manager: &Arc<ReplicaManager>,
    mut stop: watch::Receiver<bool>,
) -> Option<(Arc<crate::log::cleaner::LogCleaner>, JoinHandle<()>)> {
    use crate::log::cleaner::{CleanerConfig, LogCleaner};
    let cleaner_config = CleanerConfig::from_broker(config);
    if !cleaner_config.enable {
        return None;
    }
    let rm = replica_manager.clone();
    // Takes the partition's lock: the cleaner asks it with no lock held (see `lock_order`).
    let cleaner = Arc::new(LogCleaner::new(
        manager.clone(),
        cleaner_config,
        Arc::new(move |tp| rm.partition(tp).map_or(0, |p| p.high_watermark())),
    ));
    cleaner.start();
    let running = cleaner.clone();
    Some((
        cleaner,
        tokio::spawn(async move {
            let _ = stop.wait_for(|s| *s).await;
            let _ = tokio::task::spawn_blocking(move || running.shutdown()).await;
        }),
    ))
}

fn offline_with_reasons(identity_offline: &[(PathBuf, String)], manager: &LogManager) -> Vec<(PathBuf, String)> {
    let mut all = identity_offline.to_vec();
    all.extend(
        manager
            .offline_dirs()
            .into_iter()
            .map(|d| (d, "I/O error while loading logs".to_string())),
    );
    all
}

/// A `*.ms` config value as a duration (at least 1 ms).
fn ms(config: &KafkaConfig, key: &str, default: i64) -> Duration {
    Duration::from_millis(config.get_i64(key).unwrap_or(default).max(1) as u64)
}

/// Consumes log-dir failures: drops the dir's logs, tells the controller through
/// `/log_dir_event_notification`, and stops the broker only when no dir is left (as Kafka).
async fn watch_log_dirs(
    replica_manager: Arc<ReplicaManager>,
    manager: Arc<LogManager>,
    zk: KafkaZkClient<ZkSession>,
    id: BrokerId,
    fatal: mpsc::Sender<BrokerError>,
    mut stop: watch::Receiver<bool>,
) {
    let mut failures = manager.failures().subscribe();
    loop {
        let failure = tokio::select! {
            f = failures.recv() => f,
            _ = stop.changed() => return,
        };
        let failure = match failure {
            Ok(f) => f,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        // Both lock every log in turn (one may be held through a slow write): blocking work.
        let (m, rm, dir) = (manager.clone(), replica_manager.clone(), failure.dir.clone());
        let partitions = tokio::task::spawn_blocking(move || {
            let partitions = m.handle_dir_failure(&dir);
            rm.handle_dir_failure(&dir);
            partitions
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        tracing::error!(dir = %failure.dir.display(), partitions = partitions.len(), reason = %failure.reason, "log dir offline");
        match zk.create_log_dir_event_notification(id).await {
            Ok(path) => tracing::info!(%path, "log dir failure notified to the controller"),
            Err(e) => tracing::error!(error = %e, "could not write the log dir event notification"),
        }
        if manager.live_dirs().is_empty() {
            let offline = manager
                .offline_dirs()
                .into_iter()
                .map(|d| (d, "I/O error".to_string()))
                .collect();
            let _ = fatal.send(BrokerError::NoLiveLogDirs { offline }).await;
            return;
        }
    }
}

/// Replication settings from the broker config (Kafka's names and defaults).
fn replica_config(config: &KafkaConfig, security: &crate::client::ConnectionSecurity) -> crate::replica::ReplicaConfig {
    use crate::replica::fetcher::FetcherConfig;
    let d = FetcherConfig::default();
    let int = |k: &str, default: i32| config.get_i32(k).unwrap_or(default);
    crate::replica::ReplicaConfig {
        replica_lag_time_max_ms: config.get_i64("replica.lag.time.max.ms").unwrap_or(30_000).max(1),
        fetcher: FetcherConfig {
            local: BrokerId(config.broker_id()),
            num_fetchers: crate::server::dynamic_config::replica_fetchers(config),
            max_wait_ms: int("replica.fetch.wait.max.ms", d.max_wait_ms).max(0),
            min_bytes: int("replica.fetch.min.bytes", d.min_bytes).max(1),
            partition_max_bytes: int("replica.fetch.max.bytes", d.partition_max_bytes).max(1),
            response_max_bytes: int("replica.fetch.response.max.bytes", d.response_max_bytes).max(1),
            backoff: Duration::from_millis(int("replica.fetch.backoff.ms", 1000).max(0) as u64),
            socket_timeout: Duration::from_millis(int("replica.socket.timeout.ms", 30_000).max(1) as u64),
            security: security.clone(),
        },
        quota: crate::replica::replication_quota::QuotaConfig {
            window: crate::replica::replication_quota::QuotaWindow {
                samples: config.replication_quota_window_num(),
                sample_ms: config.replication_quota_window_size().as_millis() as i64,
            },
            leader_rate: config.leader_replication_throttled_rate(),
            follower_rate: config.follower_replication_throttled_rate(),
        },
    }
}

/// `log.flush.scheduler.interval.ms` when time-based flushing is configured (Kafka's default
/// leaves flushing to the OS, and then no task runs).
fn flush_scheduler_interval(config: &KafkaConfig) -> Option<Duration> {
    let flush_ms = config.get_i64("log.flush.interval.ms").unwrap_or(i64::MAX);
    let every = config.get_i64("log.flush.scheduler.interval.ms").unwrap_or(i64::MAX);
    (flush_ms < i64::MAX).then(|| Duration::from_millis(every.clamp(1, flush_ms.max(1)) as u64))
}

/// The socket server's settings from the broker config (Kafka's names and defaults).
fn network_config(config: &KafkaConfig) -> NetworkConfig {
    let d = NetworkConfig::default();
    let get = |k: &str| config.get_i64(k).filter(|v| *v > 0);
    NetworkConfig {
        socket_request_max_bytes: get("socket.request.max.bytes").map_or(d.socket_request_max_bytes, |v| v as usize),
        connections_max_idle: get("connections.max.idle.ms")
            .map_or(d.connections_max_idle, |v| Duration::from_millis(v as u64)),
        max_connections: get("max.connections").map_or(d.max_connections, |v| v as usize),
        max_connections_per_ip: get("max.connections.per.ip").map_or(d.max_connections_per_ip, |v| v as usize),
        ..d
    }
}

/// Keeps the ReplicaManager's broker epoch (for STALE_BROKER_EPOCH checks) in step with the
/// registration, which changes with every new ZooKeeper session.
async fn follow_broker_epoch(mut epoch: watch::Receiver<BrokerEpoch>, rm: Arc<ReplicaManager>) {
    while epoch.changed().await.is_ok() {
        rm.set_broker_epoch(epoch.borrow().0);
    }
}

/// A running broker.
#[derive(Debug)]
pub struct BrokerHandle {
    id: BrokerId,
    cluster_id: String,
    endpoints: Vec<AdvertisedEndpoint>,
    epoch: watch::Receiver<BrokerEpoch>,
    stop: watch::Sender<bool>,
    fatal: mpsc::Receiver<BrokerError>,
    tasks: Vec<JoinHandle<()>>,
    zk: KafkaZkClient<ZkSession>,
    log_manager: Arc<LogManager>,
    replica_manager: Arc<ReplicaManager>,
    metadata_cache: Arc<MetadataCache>,
    apis: Arc<KafkaApis>,
    server: Option<SocketServer>,
    /// The session of the state-znode watch (closed with the broker).
    watch_session: ZkSession,
    controller: ControllerHandle,
    shutdown_config: ControlledShutdownConfig,
}

impl BrokerHandle {
    pub fn id(&self) -> BrokerId {
        self.id
    }

    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// The endpoints registered in ZooKeeper (bound ports filled in).
    pub fn advertised_endpoints(&self) -> &[AdvertisedEndpoint] {
        &self.endpoints
    }

    /// This broker's controller module (active on one broker of the cluster).
    pub fn controller(&self) -> &ControllerHandle {
        &self.controller
    }

    /// The partitions this broker hosts.
    pub fn replica_manager(&self) -> &Arc<ReplicaManager> {
        &self.replica_manager
    }

    /// What the controller last told this broker about the cluster.
    pub fn metadata_cache(&self) -> &Arc<MetadataCache> {
        &self.metadata_cache
    }

    /// The request handlers (what the socket server serves).
    pub fn apis(&self) -> &Arc<KafkaApis> {
        &self.apis
    }

    /// Every partition log on this broker.
    pub fn log_manager(&self) -> &Arc<LogManager> {
        &self.log_manager
    }

    /// The broker's ZooKeeper session.
    pub fn zk_session(&self) -> &ZkSession {
        self.zk.store()
    }

    /// The current broker epoch (czxid of the registration).
    pub fn broker_epoch(&self) -> BrokerEpoch {
        *self.epoch.borrow()
    }

    /// Resolves when the broker has to stop on its own (its id was taken while its session was
    /// gone). Pending forever otherwise.
    pub async fn fatal_error(&mut self) -> BrokerError {
        match self.fatal.recv().await {
            Some(e) => e,
            None => std::future::pending().await,
        }
    }

    /// Clean shutdown: deregister, mark every live log dir cleanly shut down, close the session.
    pub async fn shutdown(mut self) -> Result<(), BrokerError> {
        tracing::info!(broker = %self.id, "shutting down");
        // Move leaderships away while this broker still serves requests (Kafka's order).
        let epoch = *self.epoch.borrow();
        controlled_shutdown::run(&self.shutdown_config, &self.metadata_cache, &self.zk, self.id, epoch.0).await;
        // Out of the ISRs now: stop fetching, or leaders would take this broker back in.
        self.replica_manager.shutdown();
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
        self.stop.send_replace(true);
        for task in self.tasks {
            let _ = task.await;
        }
        let epoch = *self.epoch.borrow();
        let deregistered = self.zk.deregister_broker(self.id, epoch).await;
        if let Err(e) = &deregistered {
            tracing::warn!(error = %e, "could not delete the registration; it goes when the session closes");
        }
        let log_manager = self.log_manager.clone();
        let hws = self.replica_manager.high_watermarks();
        let _ = tokio::task::spawn_blocking(move || {
            log_manager.flush_all(now_ms());
            log_manager.checkpoint_high_watermarks(&hws);
            for dir in &log_manager.live_dirs() {
                if let Err(e) = clean_shutdown::write(dir, epoch.0) {
                    tracing::warn!(dir = %dir.display(), error = %e, "cannot write the clean-shutdown marker");
                }
            }
        })
        .await;
        self.watch_session.close().await;
        let zk_requests = self.zk.store().requests();
        self.zk.store().close().await;
        tracing::info!(zk_requests, "[KafkaServer id={}] shut down completed", self.id);
        Ok(())
    }
}
