//! The rest of Kafka 3.9's documented broker keys (`KafkaConfig.configDef` = `AbstractKafkaConfig.
//! CONFIG_DEF` without its internal keys): the ones kastle's main table (`defs.rs`) does not
//! define, with Kafka's type, default, validator (where expressible) and documentation, so a real
//! `server.properties` loads; and every key's dynamic update mode from `DynamicBrokerConfig`
//! (`AllDynamicConfigs`, `PerBrokerConfigs`), which DescribeConfigs reports as `read_only` and
//! AlterConfigs checks. kastle does not act on any key of this table (see `defs::is_used`).
//! Data only; no I/O.

use crate::config::defs::ConfigType::{Bool, Class, Double, Int, List, Long, Password, Short, String as Str};
use crate::config::defs::Validator::{AtLeast, Between, EachOf, NonEmpty};
use crate::config::defs::{k, n, ConfigKey, LISTENER_PREFIX, NO};

/// How Kafka 3.9 lets a broker key change without a restart (`DynamicBrokerConfig.
/// dynamicConfigUpdateModes`; the "Update Mode" column of Kafka's broker config docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// Only from server.properties, at start-up.
    ReadOnly,
    /// Per broker (`/config/brokers/<id>`) and cluster-wide.
    PerBroker,
    /// Cluster-wide (`/config/brokers/<default>`) and also per broker.
    ClusterWide,
}

impl UpdateMode {
    /// Kafka's spelling: `read-only`, `per-broker`, `cluster-wide`.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateMode::ReadOnly => "read-only",
            UpdateMode::PerBroker => "per-broker",
            UpdateMode::ClusterWide => "cluster-wide",
        }
    }
}

/// The update mode of broker key `name` (`listener.name.<l>.<key>` follows `<key>`); keys not
/// in Kafka's dynamic set are read-only.
pub fn update_mode(name: &str) -> UpdateMode {
    let base = match name.strip_prefix(LISTENER_PREFIX).and_then(|r| r.split_once('.')) {
        Some((_, config)) => config,
        None => name,
    };
    DYNAMIC_MODES
        .binary_search_by(|(key, _)| key.cmp(&base))
        .map(|i| DYNAMIC_MODES[i].1)
        .unwrap_or(UpdateMode::ReadOnly)
}

use UpdateMode::{ClusterWide, PerBroker};

/// `DynamicBrokerConfig.AllDynamicConfigs`, sorted by name; `PerBroker` for
/// `PerBrokerConfigs`. Note that the log keys are the topic configs' first synonyms only
/// (`log.retention.ms` is dynamic, `log.retention.hours` is not).
static DYNAMIC_MODES: &[(&str, UpdateMode)] = &[
    ("advertised.listeners", PerBroker),
    ("background.threads", ClusterWide),
    ("compression.gzip.level", ClusterWide),
    ("compression.lz4.level", ClusterWide),
    ("compression.type", ClusterWide),
    ("compression.zstd.level", ClusterWide),
    ("listener.security.protocol.map", PerBroker),
    ("listeners", PerBroker),
    ("log.cleaner.backoff.ms", ClusterWide),
    ("log.cleaner.dedupe.buffer.size", ClusterWide),
    ("log.cleaner.delete.retention.ms", ClusterWide),
    ("log.cleaner.io.buffer.load.factor", ClusterWide),
    ("log.cleaner.io.buffer.size", ClusterWide),
    ("log.cleaner.io.max.bytes.per.second", ClusterWide),
    ("log.cleaner.max.compaction.lag.ms", ClusterWide),
    ("log.cleaner.min.cleanable.ratio", ClusterWide),
    ("log.cleaner.min.compaction.lag.ms", ClusterWide),
    ("log.cleaner.threads", ClusterWide),
    ("log.cleanup.policy", ClusterWide),
    ("log.flush.interval.messages", ClusterWide),
    ("log.flush.interval.ms", ClusterWide),
    ("log.index.interval.bytes", ClusterWide),
    ("log.index.size.max.bytes", ClusterWide),
    ("log.local.retention.bytes", ClusterWide),
    ("log.local.retention.ms", ClusterWide),
    ("log.message.downconversion.enable", ClusterWide),
    ("log.message.timestamp.after.max.ms", ClusterWide),
    ("log.message.timestamp.before.max.ms", ClusterWide),
    ("log.message.timestamp.difference.max.ms", ClusterWide),
    ("log.message.timestamp.type", ClusterWide),
    ("log.preallocate", ClusterWide),
    ("log.retention.bytes", ClusterWide),
    ("log.retention.ms", ClusterWide),
    ("log.roll.jitter.ms", ClusterWide),
    ("log.roll.ms", ClusterWide),
    ("log.segment.bytes", ClusterWide),
    ("log.segment.delete.delay.ms", ClusterWide),
    ("max.connection.creation.rate", ClusterWide),
    ("max.connections", ClusterWide),
    ("max.connections.per.ip", ClusterWide),
    ("max.connections.per.ip.overrides", ClusterWide),
    ("message.max.bytes", ClusterWide),
    ("metric.reporters", ClusterWide),
    ("min.insync.replicas", ClusterWide),
    ("num.io.threads", ClusterWide),
    ("num.network.threads", ClusterWide),
    ("num.recovery.threads.per.data.dir", ClusterWide),
    ("num.replica.fetchers", ClusterWide),
    ("principal.builder.class", PerBroker),
    ("producer.id.expiration.ms", ClusterWide),
    ("remote.fetch.max.wait.ms", ClusterWide),
    ("remote.log.index.file.cache.total.size.bytes", ClusterWide),
    ("remote.log.manager.copy.max.bytes.per.second", ClusterWide),
    ("remote.log.manager.fetch.max.bytes.per.second", ClusterWide),
    ("sasl.enabled.mechanisms", PerBroker),
    ("sasl.jaas.config", PerBroker),
    ("sasl.kerberos.kinit.cmd", PerBroker),
    ("sasl.kerberos.min.time.before.relogin", PerBroker),
    ("sasl.kerberos.principal.to.local.rules", PerBroker),
    ("sasl.kerberos.service.name", PerBroker),
    ("sasl.kerberos.ticket.renew.jitter", PerBroker),
    ("sasl.kerberos.ticket.renew.window.factor", PerBroker),
    ("sasl.login.refresh.buffer.seconds", PerBroker),
    ("sasl.login.refresh.min.period.seconds", PerBroker),
    ("sasl.login.refresh.window.factor", PerBroker),
    ("sasl.login.refresh.window.jitter", PerBroker),
    ("sasl.mechanism.inter.broker.protocol", PerBroker),
    ("ssl.cipher.suites", PerBroker),
    ("ssl.client.auth", PerBroker),
    ("ssl.enabled.protocols", PerBroker),
    ("ssl.endpoint.identification.algorithm", PerBroker),
    ("ssl.engine.factory.class", PerBroker),
    ("ssl.key.password", PerBroker),
    ("ssl.keymanager.algorithm", PerBroker),
    ("ssl.keystore.certificate.chain", PerBroker),
    ("ssl.keystore.key", PerBroker),
    ("ssl.keystore.location", PerBroker),
    ("ssl.keystore.password", PerBroker),
    ("ssl.keystore.type", PerBroker),
    ("ssl.protocol", PerBroker),
    ("ssl.provider", PerBroker),
    ("ssl.secure.random.implementation", PerBroker),
    ("ssl.trustmanager.algorithm", PerBroker),
    ("ssl.truststore.certificates", PerBroker),
    ("ssl.truststore.location", PerBroker),
    ("ssl.truststore.password", PerBroker),
    ("ssl.truststore.type", PerBroker),
    ("transaction.partition.verification.enable", ClusterWide),
    ("unclean.leader.election.enable", ClusterWide),
];

/// Kafka 3.9 broker keys kastle accepts (parsed and validated as Kafka would) but does not act on.
#[rustfmt::skip]
pub(super) static KAFKA_ONLY: &[ConfigKey] = &[
    k("remote.log.storage.system.enable", Bool, "false", NO, "Whether to enable tiered storage functionality in a broker or not. Valid values are `true` or `false` and the default value is false. When it is true broker starts all the services required for the tiered storage functionality."),
    k("remote.log.storage.manager.impl.prefix", Str, "rsm.config.", NonEmpty, "Prefix used for properties to be passed to RemoteStorageManager implementation. For example this value can be `rsm.config.`."),
    k("remote.log.metadata.manager.impl.prefix", Str, "rlmm.config.", NonEmpty, "Prefix used for properties to be passed to RemoteLogMetadataManager implementation. For example this value can be `rlmm.config.`."),
    n("remote.log.storage.manager.class.name", Str, NonEmpty, "Fully qualified class name of `RemoteStorageManager` implementation."),
    n("remote.log.storage.manager.class.path", Str, NO, "Class path of the `RemoteStorageManager` implementation. If specified, the RemoteStorageManager implementation and its dependent libraries will be loaded by a dedicated classloader which searches this class path before the Kafka broker class path. The syntax of this parameter is same as the standard Java class path string."),
    k("remote.log.metadata.manager.class.name", Str, "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", NonEmpty, "Fully qualified class name of `RemoteLogMetadataManager` implementation."),
    n("remote.log.metadata.manager.class.path", Str, NO, "Class path of the `RemoteLogMetadataManager` implementation. If specified, the RemoteLogMetadataManager implementation and its dependent libraries will be loaded by a dedicated classloader which searches this class path before the Kafka broker class path. The syntax of this parameter is same as the standard Java class path string."),
    n("remote.log.metadata.manager.listener.name", Str, NonEmpty, "Listener name of the local broker to which it should get connected if needed by RemoteLogMetadataManager implementation."),
    k("remote.log.metadata.custom.metadata.max.bytes", Int, "128", AtLeast(0), "The maximum size of custom metadata in bytes that the broker should accept from a remote storage plugin. If custom metadata exceeds this limit, the updated segment metadata will not be stored, the copied data will be attempted to delete, and the remote copying task for this topic-partition will stop with an error."),
    k("remote.log.index.file.cache.total.size.bytes", Long, "1073741824", AtLeast(1), "The total size of the space allocated to store index files fetched from remote storage in the local storage."),
    k("remote.log.manager.thread.pool.size", Int, "10", AtLeast(1), "Deprecated. Size of the thread pool used in scheduling tasks to copy segments, fetch remote log indexes and clean up remote log segments."),
    k("remote.log.manager.copier.thread.pool.size", Int, "-1", NO, "Size of the thread pool used in scheduling tasks to copy segments. The default value of -1 means that this will be set to the configured value of remote.log.manager.thread.pool.size, if available; otherwise, it defaults to 10."),
    k("remote.log.manager.expiration.thread.pool.size", Int, "-1", NO, "Size of the thread pool used in scheduling tasks to clean up remote log segments. The default value of -1 means that this will be set to the configured value of remote.log.manager.thread.pool.size, if available; otherwise, it defaults to 10."),
    k("remote.log.manager.task.interval.ms", Long, "30000", AtLeast(1), "Interval at which remote log manager runs the scheduled tasks like copy segments, and clean up remote log segments."),
    k("remote.log.reader.threads", Int, "10", AtLeast(1), "Size of the thread pool that is allocated for handling remote log reads."),
    k("remote.log.reader.max.pending.tasks", Int, "100", AtLeast(1), "Maximum remote log reader thread pool task queue size. If the task queue is full, fetch requests are served with an error."),
    k("log.local.retention.ms", Long, "-2", AtLeast(-2), "The number of milliseconds to keep the local log segments before it gets eligible for deletion. Default value is -2, it represents `log.retention.ms` value is to be used. The effective value should always be less than or equal to `log.retention.ms` value."),
    k("log.local.retention.bytes", Long, "-2", AtLeast(-2), "The maximum size of local log segments that can grow for a partition before it gets eligible for deletion. Default value is -2, it represents `log.retention.bytes` value to be used. The effective value should always be less than or equal to `log.retention.bytes` value."),
    k("remote.log.manager.copy.max.bytes.per.second", Long, "9223372036854775807", AtLeast(1), "The maximum number of bytes that can be copied from local storage to remote storage per second. This is a global limit for all the partitions that are being copied from local storage to remote storage. The default value is Long.MAX_VALUE, which means there is no limit on the number of bytes that can be copied per second."),
    k("remote.log.manager.copy.quota.window.num", Int, "11", AtLeast(1), "The number of samples to retain in memory for remote copy quota management. The default value is 11, which means there are 10 whole windows + 1 current window."),
    k("remote.log.manager.copy.quota.window.size.seconds", Int, "1", AtLeast(1), "The time span of each sample for remote copy quota management. The default value is 1 second."),
    k("remote.log.manager.fetch.max.bytes.per.second", Long, "9223372036854775807", AtLeast(1), "The maximum number of bytes that can be fetched from remote storage to local storage per second. This is a global limit for all the partitions that are being fetched from remote storage to local storage. The default value is Long.MAX_VALUE, which means there is no limit on the number of bytes that can be fetched per second."),
    k("remote.log.manager.fetch.quota.window.num", Int, "11", AtLeast(1), "The number of samples to retain in memory for remote fetch quota management. The default value is 11, which means there are 10 whole windows + 1 current window."),
    k("remote.log.manager.fetch.quota.window.size.seconds", Int, "1", AtLeast(1), "The time span of each sample for remote fetch quota management. The default value is 1 second."),
    k("remote.fetch.max.wait.ms", Int, "500", AtLeast(1), "The maximum amount of time the server will wait before answering the remote fetch request"),
    k("socket.connection.setup.timeout.ms", Long, "10000", NO, "The amount of time the client will wait for the socket connection to be established. If the connection is not built before the timeout elapses, clients will close the socket channel. This value is the initial backoff value and will increase exponentially for each consecutive connection failure, up to the <code>socket.connection.setup.timeout.max.ms</code> value."),
    k("socket.connection.setup.timeout.max.ms", Long, "30000", NO, "The maximum amount of time the client will wait for the socket connection to be established. The connection setup timeout will increase exponentially for each consecutive connection failure up to this maximum. To avoid connection storms, a randomization factor of 0.2 will be applied to the timeout resulting in a random range between 20% below and 20% above the computed value."),
    n("early.start.listeners", Str, NO, "A comma-separated list of listener names which may be started before the authorizer has finished initialization. This is useful when the authorizer is dependent on the cluster itself for bootstrapping, as is the case for the StandardAuthorizer (which stores ACLs in the metadata log.) By default, all listeners included in controller.listener.names will also be early start listeners. A listener should not appear in this list if it accepts external traffic."),
    k("compression.gzip.level", Int, "-1", Between(-1, 9), "The compression level to use if compression.type is set to 'gzip'."),
    k("compression.lz4.level", Int, "9", Between(1, 17), "The compression level to use if compression.type is set to 'lz4'."),
    k("compression.zstd.level", Int, "3", Between(-131072, 22), "The compression level to use if compression.type is set to 'zstd'."),
    k("max.request.partition.size.limit", Int, "2000", AtLeast(1), "The maximum number of partitions can be served in one request."),
    k("metadata.log.max.record.bytes.between.snapshots", Long, "20971520", AtLeast(1), "This is the maximum number of bytes in the log between the latest snapshot and the high-watermark needed before generating a new snapshot. The default value is 20971520. To generate snapshots based on the time elapsed, see the <code>metadata.log.max.snapshot.interval.ms</code> configuration. The Kafka node will generate a snapshot when either the maximum time interval is reached or the maximum bytes limit is reached."),
    k("metadata.log.max.snapshot.interval.ms", Long, "3600000", AtLeast(0), "This is the maximum number of milliseconds to wait to generate a snapshot if there are committed records in the log that are not included in the latest snapshot. A value of zero disables time based snapshot generation. The default value is 3600000. To generate snapshots based on the number of metadata bytes, see the <code>metadata.log.max.record.bytes.between.snapshots</code> configuration. The Kafka node will generate a snapshot when either the maximum time interval is reached or the maximum bytes limit is reached."),
    k("process.roles", List, "", EachOf(&["broker", "controller"]), "The roles that this process plays: 'broker', 'controller', or 'broker,controller' if it is both. This configuration is only applicable for clusters in KRaft (Kafka Raft) mode (instead of ZooKeeper). Leave this config undefined or empty for ZooKeeper clusters."),
    k("node.id", Int, "-1", NO, "The node ID associated with the roles this process is playing when <code>process.roles</code> is non-empty. This is required configuration when running in KRaft mode."),
    k("initial.broker.registration.timeout.ms", Int, "60000", NO, "When initially registering with the controller quorum, the number of milliseconds to wait before declaring failure and exiting the broker process."),
    k("broker.heartbeat.interval.ms", Int, "2000", NO, "The length of time in milliseconds between broker heartbeats. Used when running in KRaft mode."),
    k("broker.session.timeout.ms", Int, "9000", NO, "The length of time in milliseconds that a broker lease lasts if no heartbeats are made. Used when running in KRaft mode."),
    n("controller.listener.names", Str, NO, "A comma-separated list of the names of the listeners used by the controller. This is required if running in KRaft mode. When communicating with the controller quorum, the broker will always use the first listener in this list. Note: The ZooKeeper-based controller should not set this configuration."),
    k("sasl.mechanism.controller.protocol", Str, "GSSAPI", NO, "SASL mechanism used for communication with controllers. Default is GSSAPI."),
    n("metadata.log.dir", Str, NO, "This configuration determines where we put the metadata log for clusters in KRaft mode. If it is not set, the metadata log is placed in the first log directory from log.dirs."),
    k("metadata.log.segment.bytes", Int, "1073741824", AtLeast(12), "The maximum size of a single metadata log file."),
    k("metadata.log.segment.ms", Long, "604800000", NO, "The maximum time before a new metadata log file is rolled out (in milliseconds)."),
    k("metadata.max.retention.bytes", Long, "104857600", NO, "The maximum combined size of the metadata log and snapshots before deleting old snapshots and log files. Since at least one snapshot must exist before any logs can be deleted, this is a soft limit."),
    k("metadata.max.retention.ms", Long, "604800000", NO, "The number of milliseconds to keep a metadata log file or snapshot before deleting it. Since at least one snapshot must exist before any logs can be deleted, this is a soft limit."),
    k("metadata.max.idle.interval.ms", Int, "500", AtLeast(0), "This configuration controls how often the active controller should write no-op records to the metadata partition. If the value is 0, no-op records are not appended to the metadata partition. The default value is 500"),
    k("zookeeper.metadata.migration.enable", Bool, "false", NO, "Enable ZK to KRaft migration"),
    k("eligible.leader.replicas.enable", Bool, "false", NO, "Enable the Eligible leader replicas"),
    k("max.connections.per.ip.overrides", Str, "", NO, "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections. An example value is \"hostName:100,127.0.0.1:200\""),
    k("max.connection.creation.rate", Int, "2147483647", AtLeast(0), ""),
    k("queued.max.request.bytes", Long, "-1", NO, "The number of queued bytes allowed before no more requests are read"),
    n("replica.selector.class", Str, NO, "The fully qualified class name that implements ReplicaSelector. This is used by the broker to find the preferred read replica. By default, we use an implementation that returns the leader."),
    k("group.coordinator.rebalance.protocols", List, "classic", EachOf(&["classic", "consumer", "share"]), ""),
    k("group.coordinator.threads", Int, "1", AtLeast(1), "The number of threads used by the group coordinator."),
    k("group.coordinator.append.linger.ms", Int, "10", AtLeast(0), "The duration in milliseconds that the coordinator will wait for writes to accumulate before flushing them to disk. Transactional writes are not accumulated."),
    k("group.consumer.session.timeout.ms", Int, "45000", AtLeast(1), "The timeout to detect client failures when using the consumer group protocol."),
    k("group.consumer.min.session.timeout.ms", Int, "45000", AtLeast(1), "The minimum allowed session timeout for registered consumers."),
    k("group.consumer.max.session.timeout.ms", Int, "60000", AtLeast(1), "The maximum allowed session timeout for registered consumers."),
    k("group.consumer.heartbeat.interval.ms", Int, "5000", AtLeast(1), "The heartbeat interval given to the members of a consumer group."),
    k("group.consumer.min.heartbeat.interval.ms", Int, "5000", AtLeast(1), "The minimum heartbeat interval for registered consumers."),
    k("group.consumer.max.heartbeat.interval.ms", Int, "15000", AtLeast(1), "The maximum heartbeat interval for registered consumers."),
    k("group.consumer.max.size", Int, "2147483647", AtLeast(1), "The maximum number of consumers that a single consumer group can accommodate. This value will only impact the new consumer coordinator. To configure the classic consumer coordinator check group.max.size instead."),
    k("group.consumer.assignors", List, "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor", NO, "The server side assignors as a list of full class names. The first one in the list is considered as the default assignor to be used in the case where the consumer does not specify an assignor."),
    k("group.share.session.timeout.ms", Int, "45000", AtLeast(1), "The timeout to detect client failures when using the share group protocol."),
    k("group.share.min.session.timeout.ms", Int, "45000", AtLeast(1), "The minimum allowed session timeout for share group members."),
    k("group.share.max.session.timeout.ms", Int, "60000", AtLeast(1), "The maximum allowed session timeout for share group members."),
    k("group.share.heartbeat.interval.ms", Int, "5000", AtLeast(1), "The heartbeat interval given to the members of a share group."),
    k("group.share.min.heartbeat.interval.ms", Int, "5000", AtLeast(1), "The minimum heartbeat interval for share group members."),
    k("group.share.max.heartbeat.interval.ms", Int, "15000", AtLeast(1), "The maximum heartbeat interval for share group members."),
    k("group.share.max.size", Short, "200", Between(10, 1000), "The maximum number of members that a single share group can accommodate."),
    k("log.dir.failure.timeout.ms", Long, "30000", AtLeast(1), "If the broker is unable to successfully communicate to the controller that some log directory has failed for longer than this time, the broker will fail and shut down."),
    k("group.share.delivery.count.limit", Int, "5", Between(2, 10), "The maximum number of delivery attempts for a record delivered to a share group."),
    k("group.share.record.lock.duration.ms", Int, "30000", Between(1000, 60000), "The record acquisition lock duration in milliseconds for share groups."),
    k("group.share.min.record.lock.duration.ms", Int, "15000", Between(1000, 30000), "The record acquisition lock minimum duration in milliseconds for share groups."),
    k("group.share.max.record.lock.duration.ms", Int, "60000", Between(30000, 3600000), "The record acquisition lock maximum duration in milliseconds for share groups."),
    k("group.share.max.groups", Short, "10", Between(1, 100), "The maximum number of share groups."),
    k("group.share.partition.max.record.locks", Int, "200", Between(100, 10000), "Share-group record lock limit per share-partition."),
    k("transaction.partition.verification.enable", Bool, "true", NO, "Enable verification that checks that the partition has been added to the transaction before writing transactional records to the partition"),
    k("controller.quorum.voters", List, "", NO, "Map of id/endpoint information for the set of voters in a comma-separated list of <code>{id}@{host}:{port}</code> entries. For example: <code>1@localhost:9092,2@localhost:9093,3@localhost:9094</code>"),
    k("controller.quorum.bootstrap.servers", List, "", NO, "List of endpoints to use for bootstrapping the cluster metadata. The endpoints are specified in comma-separated list of <code>{host}:{port}</code> entries. For example: <code>localhost:9092,localhost:9093,localhost:9094</code>."),
    k("controller.quorum.election.timeout.ms", Int, "1000", NO, "Maximum time in milliseconds to wait without being able to fetch from the leader before triggering a new election"),
    k("controller.quorum.fetch.timeout.ms", Int, "2000", NO, "Maximum time without a successful fetch from the current leader before becoming a candidate and triggering an election for voters; Maximum time a leader can go without receiving valid fetch or fetchSnapshot request from a majority of the quorum before resigning."),
    k("controller.quorum.election.backoff.max.ms", Int, "1000", NO, "Maximum time in milliseconds before starting new elections. This is used in the binary exponential backoff mechanism that helps prevent gridlocked elections"),
    k("controller.quorum.append.linger.ms", Int, "25", NO, "The duration in milliseconds that the leader will wait for writes to accumulate before flushing them to disk."),
    k("controller.quorum.request.timeout.ms", Int, "2000", NO, "The configuration controls the maximum amount of time the client will wait for the response of a request. If the response is not received before the timeout elapses the client will resend the request if necessary or fail the request if retries are exhausted."),
    k("controller.quorum.retry.backoff.ms", Int, "20", NO, "The amount of time to wait before attempting to retry a failed request to a given topic partition. This avoids repeatedly sending requests in a tight loop under some failure scenarios. This value is the initial backoff value and will increase exponentially for each failed request, up to the <code>retry.backoff.max.ms</code> value."),
    k("auto.include.jmx.reporter", Bool, "true", NO, "Deprecated. Whether to automatically include JmxReporter even if it's not listed in <code>metric.reporters</code>. This configuration will be removed in Kafka 4.0, users should instead include <code>org.apache.kafka.common.metrics.JmxReporter</code> in <code>metric.reporters</code> in order to enable the JmxReporter."),
    k("kafka.metrics.reporters", List, "", NO, "A list of classes to use as Yammer metrics custom reporters. The reporters should implement <code>kafka.metrics.KafkaMetricsReporter</code> trait. If a client wants to expose JMX operations on a custom reporter, the custom reporter needs to additionally implement an MBean trait that extends <code>kafka.metrics.KafkaMetricsReporterMBean</code> trait so that the registered MBean is compliant with the standard MBean convention."),
    k("kafka.metrics.polling.interval.secs", Int, "10", AtLeast(1), "The metrics polling interval (in seconds) which can be used in kafka.metrics.reporters implementations."),
    k("telemetry.max.bytes", Int, "1048576", AtLeast(1), "The maximum size (after compression if compression is used) of telemetry metrics pushed from a client to the broker. The default value is 1048576 (1 MB)."),
    k("quota.window.num", Int, "11", AtLeast(1), "The number of samples to retain in memory for client quotas"),
    k("alter.log.dirs.replication.quota.window.num", Int, "11", AtLeast(1), "The number of samples to retain in memory for alter log dirs replication quotas"),
    k("controller.quota.window.num", Int, "11", AtLeast(1), "The number of samples to retain in memory for controller mutation quotas"),
    k("quota.window.size.seconds", Int, "1", AtLeast(1), "The time span of each sample for client quotas"),
    k("alter.log.dirs.replication.quota.window.size.seconds", Int, "1", AtLeast(1), "The time span of each sample for alter log dirs replication quotas"),
    k("controller.quota.window.size.seconds", Int, "1", AtLeast(1), "The time span of each sample for controller mutations quotas"),
    n("client.quota.callback.class", Class, NO, "The fully qualified name of a class that implements the ClientQuotaCallback interface, which is used to determine quota limits applied to client requests. By default, the &lt;user&gt; and &lt;client-id&gt; quotas that are stored in ZooKeeper are applied. For any given request, the most specific quota that matches the user principal of the session and the client-id of the request is applied."),
    k("sasl.server.max.receive.size", Int, "524288", NO, "The maximum receive size allowed before and during initial SASL authentication. Default receive size is 512KB. GSSAPI limits requests to 64K, but we allow upto 512KB by default for custom SASL mechanisms. In practice, PLAIN, SCRAM and OAUTH mechanisms can use much smaller limits."),
    n("security.providers", Str, NO, "A list of configurable creator classes each returning a provider implementing security algorithms. These classes should implement the <code>org.apache.kafka.common.security.auth.SecurityProviderCreator</code> interface."),
    k("ssl.principal.mapping.rules", Str, "DEFAULT", NO, "A list of rules for mapping from distinguished name from the client certificate to short name. The rules are evaluated in order and the first rule that matches a principal name is used to map it to a short name. Any later rules in the list are ignored. By default, distinguished name of the X.500 certificate will be the principal. For more details on the format please see <a href=\"#security_authz\"> security authorization and acls</a>. Note that this configuration is ignored if an extension of KafkaPrincipalBuilder is provided by the <code>principal.builder.class</code> configuration."),
    k("ssl.allow.dn.changes", Bool, "false", NO, "Indicates whether changes to the certificate distinguished name should be allowed during a dynamic reconfiguration of certificates or not."),
    k("ssl.allow.san.changes", Bool, "false", NO, "Indicates whether changes to the certificate subject alternative names should be allowed during a dynamic reconfiguration of certificates or not."),
    n("ssl.provider", Str, NO, "The name of the security provider used for SSL connections. Default value is the default security provider of the JVM."),
    n("ssl.keystore.key", Password, NO, "Private key in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports only PEM format with PKCS#8 keys. If the key is encrypted, key password must be specified using 'ssl.key.password'"),
    n("ssl.keystore.certificate.chain", Password, NO, "Certificate chain in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports only PEM format with a list of X.509 certificates"),
    n("ssl.truststore.certificates", Password, NO, "Trusted certificates in the format specified by 'ssl.truststore.type'. Default SSL engine factory supports only PEM format with X.509 certificates."),
    k("ssl.keymanager.algorithm", Str, "SunX509", NO, "The algorithm used by key manager factory for SSL connections. Default value is the key manager factory algorithm configured for the Java Virtual Machine."),
    k("ssl.trustmanager.algorithm", Str, "PKIX", NO, "The algorithm used by trust manager factory for SSL connections. Default value is the trust manager factory algorithm configured for the Java Virtual Machine."),
    n("ssl.secure.random.implementation", Str, NO, "The SecureRandom PRNG implementation to use for SSL cryptography operations."),
    n("ssl.engine.factory.class", Class, NO, "The class of type org.apache.kafka.common.security.auth.SslEngineFactory to provide SSLEngine objects. Default value is org.apache.kafka.common.security.ssl.DefaultSslEngineFactory. Alternatively, setting this to org.apache.kafka.common.security.ssl.CommonNameLoggingSslEngineFactory will log the common name of expired SSL certificates used by clients to authenticate at any of the brokers with log level INFO. Note that this will cause a tiny delay during establishment of new connections from mTLS clients to brokers due to the extra code for examining the certificate chain provided by the client. Note further that the implementation uses a custom truststore based on the standard Java truststore and thus might be considered a security risk due to not being as mature as the standard one."),
    n("sasl.server.callback.handler.class", Class, NO, "The fully qualified name of a SASL server callback handler class that implements the AuthenticateCallbackHandler interface. Server callback handlers must be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.plain.sasl.server.callback.handler.class=com.example.CustomPlainCallbackHandler."),
    k("sasl.kerberos.principal.to.local.rules", List, "DEFAULT", NO, "A list of rules for mapping from principal names to short names (typically operating system usernames). The rules are evaluated in order and the first rule that matches a principal name is used to map it to a short name. Any later rules in the list are ignored. By default, principal names of the form <code>{username}/{hostname}@{REALM}</code> are mapped to <code>{username}</code>. For more details on the format please see <a href=\"#security_authz\"> security authorization and acls</a>. Note that this configuration is ignored if an extension of <code>KafkaPrincipalBuilder</code> is provided by the <code>principal.builder.class</code> configuration."),
    n("sasl.client.callback.handler.class", Class, NO, "The fully qualified name of a SASL client callback handler class that implements the AuthenticateCallbackHandler interface."),
    n("sasl.login.class", Class, NO, "The fully qualified name of a class that implements the Login interface. For brokers, login config must be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.scram-sha-256.sasl.login.class=com.example.CustomScramLogin"),
    n("sasl.login.callback.handler.class", Class, NO, "The fully qualified name of a SASL login callback handler class that implements the AuthenticateCallbackHandler interface. For brokers, login callback handler config must be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.scram-sha-256.sasl.login.callback.handler.class=com.example.CustomScramLoginCallbackHandler"),
    k("sasl.kerberos.kinit.cmd", Str, "/usr/bin/kinit", NO, "Kerberos kinit command path."),
    k("sasl.kerberos.ticket.renew.window.factor", Double, "0.8", NO, "Login thread will sleep until the specified window factor of time from last refresh to ticket's expiry has been reached, at which time it will try to renew the ticket."),
    k("sasl.kerberos.ticket.renew.jitter", Double, "0.05", NO, "Percentage of random jitter added to the renewal time."),
    k("sasl.kerberos.min.time.before.relogin", Long, "60000", NO, "Login thread sleep time between refresh attempts."),
    k("sasl.login.refresh.window.factor", Double, "0.8", NO, "Login refresh thread will sleep until the specified window factor relative to the credential's lifetime has been reached, at which time it will try to refresh the credential. Legal values are between 0.5 (50%) and 1.0 (100%) inclusive; a default value of 0.8 (80%) is used if no value is specified. Currently applies only to OAUTHBEARER."),
    k("sasl.login.refresh.window.jitter", Double, "0.05", NO, "The maximum amount of random jitter relative to the credential's lifetime that is added to the login refresh thread's sleep time. Legal values are between 0 and 0.25 (25%) inclusive; a default value of 0.05 (5%) is used if no value is specified. Currently applies only to OAUTHBEARER."),
    k("sasl.login.refresh.min.period.seconds", Short, "60", NO, "The desired minimum time for the login refresh thread to wait before refreshing a credential, in seconds. Legal values are between 0 and 900 (15 minutes); a default value of 60 (1 minute) is used if no value is specified. This value and sasl.login.refresh.buffer.seconds are both ignored if their sum exceeds the remaining lifetime of a credential. Currently applies only to OAUTHBEARER."),
    k("sasl.login.refresh.buffer.seconds", Short, "300", NO, "The amount of buffer time before credential expiration to maintain when refreshing a credential, in seconds. If a refresh would otherwise occur closer to expiration than the number of buffer seconds then the refresh will be moved up to maintain as much of the buffer time as possible. Legal values are between 0 and 3600 (1 hour); a default value of 300 (5 minutes) is used if no value is specified. This value and sasl.login.refresh.min.period.seconds are both ignored if their sum exceeds the remaining lifetime of a credential. Currently applies only to OAUTHBEARER."),
    n("sasl.login.connect.timeout.ms", Int, NO, "The (optional) value in milliseconds for the external authentication provider connection timeout. Currently applies only to OAUTHBEARER."),
    n("sasl.login.read.timeout.ms", Int, NO, "The (optional) value in milliseconds for the external authentication provider read timeout. Currently applies only to OAUTHBEARER."),
    k("sasl.login.retry.backoff.max.ms", Long, "10000", NO, "The (optional) value in milliseconds for the maximum wait between login attempts to the external authentication provider. Login uses an exponential backoff algorithm with an initial wait based on the sasl.login.retry.backoff.ms setting and will double in wait length between attempts up to a maximum wait length specified by the sasl.login.retry.backoff.max.ms setting. Currently applies only to OAUTHBEARER."),
    k("sasl.login.retry.backoff.ms", Long, "100", NO, "The (optional) value in milliseconds for the initial wait between login attempts to the external authentication provider. Login uses an exponential backoff algorithm with an initial wait based on the sasl.login.retry.backoff.ms setting and will double in wait length between attempts up to a maximum wait length specified by the sasl.login.retry.backoff.max.ms setting. Currently applies only to OAUTHBEARER."),
    k("sasl.oauthbearer.scope.claim.name", Str, "scope", NO, "The OAuth claim for the scope is often named \"scope\", but this (optional) setting can provide a different name to use for the scope included in the JWT payload's claims if the OAuth/OIDC provider uses a different name for that claim."),
    k("sasl.oauthbearer.sub.claim.name", Str, "sub", NO, "The OAuth claim for the subject is often named \"sub\", but this (optional) setting can provide a different name to use for the subject included in the JWT payload's claims if the OAuth/OIDC provider uses a different name for that claim."),
    n("sasl.oauthbearer.token.endpoint.url", Str, NO, "The URL for the OAuth/OIDC identity provider. If the URL is HTTP(S)-based, it is the issuer's token endpoint URL to which requests will be made to login based on the configuration in sasl.jaas.config. If the URL is file-based, it specifies a file containing an access token (in JWT serialized form) issued by the OAuth/OIDC identity provider to use for authorization."),
    n("sasl.oauthbearer.jwks.endpoint.url", Str, NO, "The OAuth/OIDC provider URL from which the provider's <a href=\"https://datatracker.ietf.org/doc/html/rfc7517#section-5\">JWKS (JSON Web Key Set)</a> can be retrieved. The URL can be HTTP(S)-based or file-based. If the URL is HTTP(S)-based, the JWKS data will be retrieved from the OAuth/OIDC provider via the configured URL on broker startup. All then-current keys will be cached on the broker for incoming requests. If an authentication request is received for a JWT that includes a \"kid\" header claim value that isn't yet in the cache, the JWKS endpoint will be queried again on demand. However, the broker polls the URL every sasl.oauthbearer.jwks.endpoint.refresh.ms milliseconds to refresh the cache with any forthcoming keys before any JWT requests that include them are received. If the URL is file-based, the broker will load the JWKS file from a configured location on startup. In the event that the JWT includes a \"kid\" header value that isn't in the JWKS file, the broker will reject the JWT and authentication will fail."),
    k("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, "3600000", NO, "The (optional) value in milliseconds for the broker to wait between refreshing its JWKS (JSON Web Key Set) cache that contains the keys to verify the signature of the JWT."),
    k("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, "100", NO, "The (optional) value in milliseconds for the initial wait between JWKS (JSON Web Key Set) retrieval attempts from the external authentication provider. JWKS retrieval uses an exponential backoff algorithm with an initial wait based on the sasl.oauthbearer.jwks.endpoint.retry.backoff.ms setting and will double in wait length between attempts up to a maximum wait length specified by the sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms setting."),
    k("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, "10000", NO, "The (optional) value in milliseconds for the maximum wait between attempts to retrieve the JWKS (JSON Web Key Set) from the external authentication provider. JWKS retrieval uses an exponential backoff algorithm with an initial wait based on the sasl.oauthbearer.jwks.endpoint.retry.backoff.ms setting and will double in wait length between attempts up to a maximum wait length specified by the sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms setting."),
    k("sasl.oauthbearer.clock.skew.seconds", Int, "30", NO, "The (optional) value in seconds to allow for differences between the time of the OAuth/OIDC identity provider and the broker."),
    n("sasl.oauthbearer.expected.audience", List, NO, "The (optional) comma-delimited setting for the broker to use to verify that the JWT was issued for one of the expected audiences. The JWT will be inspected for the standard OAuth \"aud\" claim and if this value is set, the broker will match the value from JWT's \"aud\" claim to see if there is an exact match. If there is no match, the broker will reject the JWT and authentication will fail."),
    n("sasl.oauthbearer.expected.issuer", Str, NO, "The (optional) setting for the broker to use to verify that the JWT was created by the expected issuer. The JWT will be inspected for the standard OAuth \"iss\" claim and if this value is set, the broker will match it exactly against what is in the JWT's \"iss\" claim. If there is no match, the broker will reject the JWT and authentication will fail."),
    n("delegation.token.master.key", Password, NO, "DEPRECATED: An alias for delegation.token.secret.key, which should be used instead of this config."),
    n("delegation.token.secret.key", Password, NO, "Secret key to generate and verify delegation tokens. The same key must be configured across all the brokers. If using Kafka with KRaft, the key must also be set across all controllers. If the key is not set or set to empty string, brokers will disable the delegation token support."),
    k("delegation.token.max.lifetime.ms", Long, "604800000", AtLeast(1), "The token has a maximum lifetime beyond which it cannot be renewed anymore. Default value 7 days."),
    k("delegation.token.expiry.time.ms", Long, "86400000", AtLeast(1), "The token validity time in milliseconds before the token needs to be renewed. Default value 1 day."),
    k("delegation.token.expiry.check.interval.ms", Long, "3600000", AtLeast(1), "Scan interval to remove expired delegation tokens."),
    n("password.encoder.secret", Password, NO, "The secret used for encoding dynamically configured passwords for this broker."),
    n("password.encoder.old.secret", Password, NO, "The old secret that was used for encoding dynamically configured passwords. This is required only when the secret is updated. If specified, all dynamically encoded passwords are decoded using this old secret and re-encoded using password.encoder.secret when broker starts up."),
    n("password.encoder.keyfactory.algorithm", Str, NO, "The SecretKeyFactory algorithm used for encoding dynamically configured passwords. Default is PBKDF2WithHmacSHA512 if available and PBKDF2WithHmacSHA1 otherwise."),
    k("password.encoder.cipher.algorithm", Str, "AES/CBC/PKCS5Padding", NO, "The Cipher algorithm used for encoding dynamically configured passwords."),
    k("password.encoder.key.length", Int, "128", AtLeast(8), "The key length used for encoding dynamically configured passwords."),
    k("password.encoder.iterations", Int, "4096", AtLeast(1024), "The iteration count used for encoding dynamically configured passwords."),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_modes_are_sorted_and_follow_kafka() {
        assert!(DYNAMIC_MODES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(update_mode("log.retention.ms"), ClusterWide);
        assert_eq!(update_mode("log.retention.hours"), UpdateMode::ReadOnly);
        assert_eq!(update_mode("ssl.keystore.location"), PerBroker);
        assert_eq!(update_mode("listener.name.internal.ssl.keystore.location"), PerBroker);
        assert_eq!(update_mode("max.connections"), ClusterWide);
        assert_eq!(update_mode("broker.id"), UpdateMode::ReadOnly);
    }
}
