//! The table of every broker config key kastle knows: Kafka 3.9's name, type, default and
//! validator (from `KafkaConfig.configDef` and the `*Configs` classes of ZK-mode Kafka 3.9), plus
//! kastle's own keys. Also the name lookups used by the loader: exact key, `listener.name.*`
//! per-listener overrides, `KASTLE_CFG_*` env names, and "did you mean" suggestions.
//! Owns no values and does no I/O.

use self::ConfigType::{Bool, Class, Double, Int, List, Long, Password, Short, String as Str};
use self::Validator::{AtLeast, Between, BetweenF, EachOf, HostPort, NonEmpty, OneOf, Version};
use crate::config::defs_kafka::KAFKA_ONLY;

/// Kafka's `ConfigDef.Type`s that broker keys use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Int,
    Long,
    Short,
    Double,
    Bool,
    String,
    /// Comma-separated list.
    List,
    /// A secret: parsed like a string, never displayed.
    Password,
    /// A fully-qualified Java class name (kastle loads none; kept so configs carry over).
    Class,
}

/// Kafka's validators, as far as broker keys use them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    None,
    /// `Range.atLeast(min)`: the upper bound is the type's maximum.
    AtLeast(i64),
    /// `Range.between(min, max)` for integer types.
    Between(i64, i64),
    /// `Range.between(min, max)` for doubles.
    BetweenF(f64, f64),
    /// `ValidString.in(...)` (case-sensitive).
    OneOf(&'static [&'static str]),
    /// `ValidList.in(...)`: every list element is one of these.
    EachOf(&'static [&'static str]),
    /// The value must not be empty.
    NonEmpty,
    /// `MetadataVersionValidator`: `3.9-IV0`, `2.8`, `0.10.2` ...
    Version,
    /// kastle: `host:port`, host may be empty or a bracketed IPv6 address.
    HostPort,
}

/// One known key.
#[derive(Debug)]
pub struct ConfigKey {
    pub name: &'static str,
    pub ty: ConfigType,
    /// Kafka's default in Kafka's own text syntax (parsed like user input); `None` = null.
    pub default: Option<&'static str>,
    pub validator: Validator,
    pub doc: &'static str,
}

pub(crate) const fn k(
    name: &'static str,
    ty: ConfigType,
    default: &'static str,
    validator: Validator,
    doc: &'static str,
) -> ConfigKey {
    ConfigKey {
        name,
        ty,
        default: Some(default),
        validator,
        doc,
    }
}

/// A key whose default is null.
pub(crate) const fn n(name: &'static str, ty: ConfigType, validator: Validator, doc: &'static str) -> ConfigKey {
    ConfigKey {
        name,
        ty,
        default: None,
        validator,
        doc,
    }
}

pub(crate) const NO: Validator = Validator::None;
const I32_MAX: &str = "2147483647";
const I64_MAX: &str = "9223372036854775807";
const PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];
const COMPRESSION: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

/// Prefix of per-listener overrides (`listener.name.<lower-case name>.<config>`), accepted as-is.
pub const LISTENER_PREFIX: &str = "listener.name.";

/// Template for `listener.name.*` keys: a free-form string.
static LISTENER_OVERRIDE: ConfigKey = n(
    "listener.name.*",
    Str,
    NO,
    "Per-listener override of a security config (kept as text).",
);
/// Template for `listener.name.*` keys that hold secrets (`*.password`, `*.sasl.jaas.config`).
static LISTENER_SECRET: ConfigKey = n(
    "listener.name.*",
    Password,
    NO,
    "Per-listener override holding a secret.",
);

#[rustfmt::skip]
static KEYS: &[ConfigKey] = &[
    // ---- ZooKeeper ----
    n("zookeeper.connect", Str, NonEmpty, "ZooKeeper connection string host1:port1,host2:port2[/chroot]. Required in ZK mode."),
    k("zookeeper.session.timeout.ms", Int, "18000", AtLeast(1), "ZooKeeper session timeout; the broker's liveness is its ZK session."),
    n("zookeeper.connection.timeout.ms", Int, AtLeast(1), "Max time to wait to connect to ZooKeeper; null means zookeeper.session.timeout.ms."),
    k("zookeeper.max.in.flight.requests", Int, "10", AtLeast(1), "Max unacknowledged requests sent to ZooKeeper before blocking."),
    k("zookeeper.set.acl", Bool, "false", NO, "Create znodes with secure ACLs."),
    k("zookeeper.ssl.client.enable", Bool, "false", NO, "Use TLS when connecting to ZooKeeper."),
    n("zookeeper.clientCnxnSocket", Str, NO, "ZooKeeper client socket class, typically org.apache.zookeeper.ClientCnxnSocketNetty with TLS."),
    n("zookeeper.ssl.keystore.location", Str, NO, "Keystore for TLS client certificates to ZooKeeper."),
    n("zookeeper.ssl.keystore.password", Password, NO, "Password of zookeeper.ssl.keystore.location."),
    n("zookeeper.ssl.keystore.type", Str, NO, "Keystore type; null means detect from the file name."),
    n("zookeeper.ssl.truststore.location", Str, NO, "Truststore for TLS to ZooKeeper."),
    n("zookeeper.ssl.truststore.password", Password, NO, "Password of zookeeper.ssl.truststore.location."),
    n("zookeeper.ssl.truststore.type", Str, NO, "Truststore type; null means detect from the file name."),
    k("zookeeper.ssl.protocol", Str, "TLSv1.2", NO, "TLS protocol for ZooKeeper connections."),
    n("zookeeper.ssl.enabled.protocols", List, NO, "Enabled TLS protocols for ZooKeeper; null means zookeeper.ssl.protocol."),
    n("zookeeper.ssl.cipher.suites", List, NO, "Enabled TLS cipher suites for ZooKeeper; null means the runtime's."),
    k("zookeeper.ssl.endpoint.identification.algorithm", Str, "HTTPS", NO, "HTTPS enables ZooKeeper hostname verification; blank disables it."),
    k("zookeeper.ssl.crl.enable", Bool, "false", NO, "Check certificate revocation lists for ZooKeeper TLS."),
    k("zookeeper.ssl.ocsp.enable", Bool, "false", NO, "Use OCSP for ZooKeeper TLS."),
    // ---- Identity ----
    k("broker.id", Int, "-1", AtLeast(-1), "This broker's id; -1 generates one from /brokers/seqid (above reserved.broker.max.id)."),
    k("broker.id.generation.enable", Bool, "true", NO, "Allow broker.id=-1 to generate an id from ZooKeeper."),
    k("reserved.broker.max.id", Int, "1000", AtLeast(0), "Highest id an operator may configure; generated ids start above it."),
    n("broker.rack", Str, NO, "Rack of the broker, for rack-aware replica assignment."),
    // ---- Listeners and security ----
    k("listeners", List, "PLAINTEXT://:9092", NO, "Comma-separated NAME://host:port to bind; empty host = all interfaces, port 0 = any."),
    n("advertised.listeners", List, NO, "Listeners published in ZooKeeper for clients; null means listeners."),
    k("listener.security.protocol.map", List, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", NonEmpty, "Listener name to security protocol, NAME:PROTOCOL,..."),
    n("inter.broker.listener.name", Str, NO, "Listener brokers use to talk to each other; exclusive with security.inter.broker.protocol."),
    k("security.inter.broker.protocol", Str, "PLAINTEXT", OneOf(PROTOCOLS), "Protocol (and listener name) for inter-broker traffic when inter.broker.listener.name is unset."),
    n("control.plane.listener.name", Str, NO, "Dedicated listener for controller-to-broker requests; null means the inter-broker listener."),
    k("inter.broker.protocol.version", Str, "3.9-IV0", Version, "Inter-broker protocol version; gates ZK encodings and RPC versions."),
    k("log.message.format.version", Str, "3.0-IV1", Version, "Deprecated; ignored with inter.broker.protocol.version >= 3.0."),
    k("authorizer.class.name", Str, "", NO, "Authorizer class, e.g. kafka.security.authorizer.AclAuthorizer; empty = no authorization."),
    n("super.users", Str, NO, "Semicolon-separated principals (User:admin) that bypass ACLs."),
    k("principal.builder.class", Class, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", NO, "KafkaPrincipalBuilder implementation."),
    k("sasl.enabled.mechanisms", List, "GSSAPI", NO, "SASL mechanisms enabled on the broker."),
    k("sasl.mechanism.inter.broker.protocol", Str, "GSSAPI", NO, "SASL mechanism for inter-broker traffic."),
    n("sasl.kerberos.service.name", Str, NO, "Kerberos principal name Kafka runs as."),
    n("ssl.keystore.location", Str, NO, "Keystore file of the broker's TLS certificate."),
    n("ssl.keystore.password", Password, NO, "Password of ssl.keystore.location."),
    k("ssl.keystore.type", Str, "JKS", NO, "Keystore format: JKS, PKCS12 or PEM."),
    n("ssl.key.password", Password, NO, "Password of the private key in the keystore."),
    n("ssl.truststore.location", Str, NO, "Truststore file."),
    n("ssl.truststore.password", Password, NO, "Password of ssl.truststore.location."),
    k("ssl.truststore.type", Str, "JKS", NO, "Truststore format: JKS, PKCS12 or PEM."),
    k("ssl.client.auth", Str, "none", OneOf(&["required", "requested", "none"]), "Whether TLS clients must present a certificate."),
    k("ssl.protocol", Str, "TLSv1.3", NO, "TLS protocol used to create SSLContexts."),
    k("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", NO, "TLS protocols enabled for connections."),
    n("ssl.cipher.suites", List, NO, "Enabled cipher suites; null means the runtime's."),
    k("ssl.endpoint.identification.algorithm", Str, "https", NO, "Hostname verification algorithm; blank disables it."),
    // ---- Network and threads ----
    k("num.network.threads", Int, "3", AtLeast(1), "Threads receiving requests from and sending responses to the network."),
    k("num.io.threads", Int, "8", AtLeast(1), "Threads processing requests, including disk I/O."),
    k("background.threads", Int, "10", AtLeast(1), "Threads for background tasks."),
    n("num.replica.alter.log.dirs.threads", Int, NO, "Threads moving replicas between log dirs; null means the number of log dirs."),
    k("queued.max.requests", Int, "500", AtLeast(1), "Requests queued for the I/O threads before network threads stop reading."),
    k("socket.send.buffer.bytes", Int, "102400", NO, "SO_SNDBUF of server sockets; -1 = OS default."),
    k("socket.receive.buffer.bytes", Int, "102400", NO, "SO_RCVBUF of server sockets; -1 = OS default."),
    k("socket.request.max.bytes", Int, "104857600", AtLeast(1), "Largest request the broker accepts."),
    k("socket.listen.backlog.size", Int, "50", AtLeast(1), "Pending connections in the listen backlog."),
    k("connections.max.idle.ms", Long, "600000", NO, "Idle connections are closed after this."),
    k("max.connections", Int, I32_MAX, AtLeast(0), "Max connections across all listeners."),
    k("max.connections.per.ip", Int, I32_MAX, AtLeast(0), "Max connections from one IP address."),
    k("request.timeout.ms", Int, "30000", NO, "Timeout of requests the broker sends as a client."),
    k("fetch.max.bytes", Int, "57671680", AtLeast(1024), "Max bytes returned for one fetch request."),
    k("message.max.bytes", Int, "1048588", AtLeast(0), "Largest record batch the broker accepts (topic: max.message.bytes)."),
    // ---- Log ----
    k("log.dir", Str, "/tmp/kafka-logs", NO, "Log directory, used when log.dirs is null."),
    n("log.dirs", List, NO, "Comma-separated log directories; null means log.dir."),
    k("num.partitions", Int, "1", AtLeast(1), "Default partition count for auto-created topics."),
    k("num.recovery.threads.per.data.dir", Int, "1", AtLeast(1), "Threads per log dir for recovery at start-up and flushing at shutdown."),
    k("log.segment.bytes", Int, "1073741824", AtLeast(14), "Max size of one segment file."),
    k("log.roll.hours", Int, "168", AtLeast(1), "Roll a segment after this long (lower precedence than log.roll.ms)."),
    n("log.roll.ms", Long, NO, "Roll a segment after this long; null means log.roll.hours."),
    k("log.roll.jitter.hours", Int, "0", AtLeast(0), "Max random jitter subtracted from the roll time."),
    n("log.roll.jitter.ms", Long, NO, "Roll jitter in ms; null means log.roll.jitter.hours."),
    k("log.retention.hours", Int, "168", NO, "Keep segments this long (lowest precedence of the three retention times)."),
    n("log.retention.minutes", Int, NO, "Retention in minutes; null means log.retention.hours."),
    n("log.retention.ms", Long, NO, "Retention in ms; null means log.retention.minutes; -1 = forever."),
    k("log.retention.bytes", Long, "-1", NO, "Max partition size before old segments are deleted; -1 = unlimited."),
    k("log.retention.check.interval.ms", Long, "300000", AtLeast(1), "How often the log cleaner checks for deletable segments."),
    k("log.index.size.max.bytes", Int, "10485760", AtLeast(4), "Max size of an offset index file."),
    k("log.index.interval.bytes", Int, "4096", AtLeast(0), "Bytes between offset index entries."),
    k("log.flush.interval.messages", Long, I64_MAX, AtLeast(1), "Messages accumulated before a forced flush."),
    n("log.flush.interval.ms", Long, NO, "Max time data stays unflushed; null means log.flush.scheduler.interval.ms."),
    k("log.flush.scheduler.interval.ms", Long, I64_MAX, NO, "How often the flusher checks for logs to flush."),
    k("log.flush.offset.checkpoint.interval.ms", Int, "60000", AtLeast(0), "How often recovery-point-offset-checkpoint is written."),
    k("log.flush.start.offset.checkpoint.interval.ms", Int, "60000", AtLeast(0), "How often log-start-offset-checkpoint is written."),
    k("log.preallocate", Bool, "false", NO, "Preallocate segment files."),
    k("log.segment.delete.delay.ms", Long, "60000", AtLeast(0), "Wait before deleting a segment file from disk."),
    k("log.cleanup.policy", List, "delete", EachOf(&["compact", "delete"]), "Default cleanup policy: delete and/or compact."),
    k("log.cleaner.enable", Bool, "true", NO, "Run the log compaction threads."),
    k("log.cleaner.threads", Int, "1", AtLeast(0), "Log compaction threads."),
    k("log.cleaner.dedupe.buffer.size", Long, "134217728", NO, "Memory for deduplication across all cleaner threads."),
    k("log.cleaner.io.buffer.size", Int, "524288", AtLeast(0), "I/O buffer memory across all cleaner threads."),
    k("log.cleaner.io.buffer.load.factor", Double, "0.9", NO, "Load factor of the dedupe hash map."),
    k("log.cleaner.io.max.bytes.per.second", Double, "1.7976931348623157E308", NO, "I/O throttle of the cleaner."),
    k("log.cleaner.backoff.ms", Long, "15000", AtLeast(0), "Sleep when there is nothing to clean."),
    k("log.cleaner.delete.retention.ms", Long, "86400000", AtLeast(0), "How long delete tombstones are kept in compacted topics."),
    k("log.cleaner.min.cleanable.ratio", Double, "0.5", BetweenF(0.0, 1.0), "Min dirty ratio before a log is compacted."),
    k("log.cleaner.min.compaction.lag.ms", Long, "0", AtLeast(0), "Min age of a message before it may be compacted."),
    k("log.cleaner.max.compaction.lag.ms", Long, I64_MAX, AtLeast(1), "Max time a message stays ineligible for compaction."),
    k("log.message.timestamp.type", Str, "CreateTime", OneOf(&["CreateTime", "LogAppendTime"]), "Record timestamp: producer's CreateTime or broker's LogAppendTime."),
    k("log.message.timestamp.difference.max.ms", Long, I64_MAX, AtLeast(0), "Deprecated: max CreateTime skew accepted."),
    k("log.message.timestamp.before.max.ms", Long, I64_MAX, AtLeast(0), "Max age of a CreateTime timestamp accepted."),
    k("log.message.timestamp.after.max.ms", Long, I64_MAX, AtLeast(0), "Max future skew of a CreateTime timestamp accepted."),
    k("log.message.downconversion.enable", Bool, "true", NO, "Down-convert record formats for old consumers."),
    n("create.topic.policy.class.name", Class, NO, "CreateTopicPolicy implementation."),
    n("alter.config.policy.class.name", Class, NO, "AlterConfigPolicy implementation."),
    k("compression.type", Str, "producer", OneOf(COMPRESSION), "Final compression of topics; producer keeps the producer's codec."),
    // ---- Topics and replication ----
    k("auto.create.topics.enable", Bool, "true", NO, "Create a topic on metadata/produce requests for an unknown topic."),
    k("delete.topic.enable", Bool, "true", NO, "Allow topic deletion."),
    k("default.replication.factor", Int, "1", Between(1, 32767), "Replication factor of auto-created topics."),
    k("min.insync.replicas", Int, "1", AtLeast(1), "Min ISR size for acks=all produce to succeed."),
    k("unclean.leader.election.enable", Bool, "false", NO, "Allow out-of-ISR replicas to become leader (may lose data)."),
    k("auto.leader.rebalance.enable", Bool, "true", NO, "Move leadership back to preferred replicas periodically."),
    k("leader.imbalance.per.broker.percentage", Int, "10", NO, "Leader imbalance per broker (%) that triggers a rebalance."),
    k("leader.imbalance.check.interval.seconds", Long, "300", AtLeast(1), "How often the controller checks leader imbalance."),
    k("controlled.shutdown.enable", Bool, "true", NO, "Move leadership away before shutting down."),
    k("controlled.shutdown.max.retries", Int, "3", NO, "Retries of a failed controlled shutdown."),
    k("controlled.shutdown.retry.backoff.ms", Long, "5000", NO, "Wait between controlled shutdown retries."),
    k("controller.socket.timeout.ms", Int, "30000", NO, "Socket timeout of controller-to-broker channels."),
    k("replica.lag.time.max.ms", Long, "30000", NO, "A follower not caught up for this long leaves the ISR."),
    k("replica.fetch.max.bytes", Int, "1048576", AtLeast(0), "Bytes per partition a follower fetch asks for."),
    k("replica.fetch.response.max.bytes", Int, "10485760", AtLeast(0), "Max bytes of a whole follower fetch response."),
    k("replica.fetch.wait.max.ms", Int, "500", NO, "Max wait of a follower fetch; must be <= replica.lag.time.max.ms."),
    k("replica.fetch.min.bytes", Int, "1", NO, "Min bytes before a follower fetch returns."),
    k("replica.fetch.backoff.ms", Int, "1000", AtLeast(0), "Sleep after a fetch partition error."),
    k("replica.socket.timeout.ms", Int, "30000", NO, "Socket timeout of follower fetches; must be >= replica.fetch.wait.max.ms."),
    k("replica.socket.receive.buffer.bytes", Int, "65536", NO, "SO_RCVBUF of follower fetch connections."),
    k("num.replica.fetchers", Int, "1", NO, "Fetcher threads per source broker."),
    k("replica.high.watermark.checkpoint.interval.ms", Long, "5000", NO, "How often replication-offset-checkpoint is written."),
    k("fetch.purgatory.purge.interval.requests", Int, "1000", NO, "Purge interval (requests) of the fetch purgatory."),
    k("max.incremental.fetch.session.cache.slots", Int, "1000", AtLeast(0), "Max incremental fetch sessions (KIP-227) the broker keeps."),
    // kastle: Kafka's fixed MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, under KIP-227's name.
    k("min.incremental.fetch.session.eviction.ms", Long, "120000", AtLeast(0), "A fetch session unused this long may be evicted by any new one."),
    k("producer.purgatory.purge.interval.requests", Int, "1000", NO, "Purge interval (requests) of the produce purgatory."),
    k("delete.records.purgatory.purge.interval.requests", Int, "1", NO, "Purge interval (requests) of the delete-records purgatory."),
    k("leader.replication.throttled.rate", Long, I64_MAX, AtLeast(0), "Leader-side replication throttle, bytes/s (KIP-73)."),
    k("follower.replication.throttled.rate", Long, I64_MAX, AtLeast(0), "Follower-side replication throttle, bytes/s (KIP-73)."),
    k("replica.alter.log.dirs.io.max.bytes.per.second", Long, I64_MAX, AtLeast(0), "Throttle of moves between log dirs, bytes/s (KIP-113)."),
    // ---- Group coordinator and __consumer_offsets ----
    k("offsets.topic.num.partitions", Int, "50", AtLeast(1), "Partitions of __consumer_offsets (do not change after creation)."),
    k("offsets.topic.replication.factor", Short, "3", AtLeast(1), "Replication factor of __consumer_offsets."),
    k("offsets.topic.segment.bytes", Int, "104857600", AtLeast(1), "Segment size of __consumer_offsets."),
    k("offsets.topic.compression.codec", Int, "0", NO, "Compression codec id for __consumer_offsets."),
    k("offsets.retention.minutes", Int, "10080", AtLeast(1), "Committed offsets of empty groups expire after this."),
    k("offsets.retention.check.interval.ms", Long, "600000", AtLeast(1), "How often stale offsets are checked."),
    k("offsets.commit.timeout.ms", Int, "5000", AtLeast(1), "Offset commit waits this long for replication."),
    k("offsets.commit.required.acks", Short, "-1", NO, "Deprecated: acks of offset commits."),
    k("offsets.load.buffer.size", Int, "5242880", AtLeast(1), "Batch size when loading offsets into the cache."),
    k("offset.metadata.max.bytes", Int, "4096", NO, "Max size of commit metadata."),
    k("group.min.session.timeout.ms", Int, "6000", NO, "Min session timeout a consumer may ask for."),
    k("group.max.session.timeout.ms", Int, "1800000", NO, "Max session timeout a consumer may ask for."),
    k("group.initial.rebalance.delay.ms", Int, "3000", NO, "Wait for more members before the first rebalance of a new group."),
    k("group.max.size", Int, I32_MAX, AtLeast(1), "Max members of one consumer group."),
    // ---- Transactions and producer ids ----
    k("transaction.state.log.num.partitions", Int, "50", AtLeast(1), "Partitions of __transaction_state."),
    k("transaction.state.log.replication.factor", Short, "3", AtLeast(1), "Replication factor of __transaction_state."),
    k("transaction.state.log.min.isr", Int, "2", AtLeast(1), "min.insync.replicas of __transaction_state."),
    k("transaction.state.log.segment.bytes", Int, "104857600", AtLeast(1), "Segment size of __transaction_state."),
    k("transaction.state.log.load.buffer.size", Int, "5242880", AtLeast(1), "Batch size when loading transaction state."),
    k("transactional.id.expiration.ms", Int, "604800000", AtLeast(1), "Idle transactional ids expire after this."),
    k("transaction.max.timeout.ms", Int, "900000", AtLeast(1), "Max transaction timeout a producer may ask for."),
    k("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", AtLeast(1), "How often timed-out transactions are rolled back."),
    k("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", AtLeast(1), "How often expired transactional ids are removed."),
    k("producer.id.expiration.ms", Int, "86400000", AtLeast(1), "Idle producer ids expire after this."),
    k("producer.id.expiration.check.interval.ms", Int, "600000", AtLeast(1), "How often idle producer ids are expired."),
    // ---- Metrics ----
    k("metric.reporters", List, "", NO, "MetricsReporter classes (Java plug-ins; ignored by kastle)."),
    k("metrics.num.samples", Int, "2", AtLeast(1), "Samples kept to compute metrics."),
    k("metrics.sample.window.ms", Long, "30000", AtLeast(1), "Window of one metrics sample."),
    k("metrics.recording.level", Str, "INFO", OneOf(&["INFO", "DEBUG", "TRACE"]), "Highest recording level for metrics."),
    n("metrics.listener", Str, HostPort, "kastle-specific: host:port of the Prometheus /metrics endpoint; null = disabled."),
];

/// All known keys: kastle's table, then the Kafka 3.9 keys kastle only accepts
/// (`defs_kafka::KAFKA_ONLY`).
pub fn all_keys() -> impl Iterator<Item = &'static ConfigKey> {
    KEYS.iter().chain(KAFKA_ONLY.iter())
}

/// Whether kastle acts on `name` (a table key); every other known key is accepted, validated
/// and reported by DescribeConfigs, but changes nothing, and the broker warns once at start-up
/// when such a key is set. A key's entry here is the one place that says so.
pub fn is_used(name: &str) -> bool {
    USED.binary_search(&name).is_ok()
}

/// The keys kastle acts on, sorted (the broker, log, replica and coordinator code read them).
/// A key missing here is accepted but has no effect.
static USED: &[&str] = &[
    "advertised.listeners",
    "auto.create.topics.enable",
    "auto.leader.rebalance.enable",
    "broker.id",
    "broker.id.generation.enable",
    "broker.rack",
    "compression.type",
    "connections.max.idle.ms",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "default.replication.factor",
    "delete.topic.enable",
    "group.initial.rebalance.delay.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.min.session.timeout.ms",
    "inter.broker.listener.name",
    "inter.broker.protocol.version",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "listener.security.protocol.map",
    "listeners",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.enable",
    "log.cleaner.io.buffer.size",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.threads",
    "log.cleanup.policy",
    "log.dir",
    "log.dirs",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.flush.scheduler.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.message.timestamp.type",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.hours",
    "log.roll.jitter.hours",
    "log.roll.jitter.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "max.connections",
    "max.connections.per.ip",
    "max.incremental.fetch.session.cache.slots",
    "message.max.bytes",
    "metrics.listener",
    "min.incremental.fetch.session.eviction.ms",
    "min.insync.replicas",
    "num.partitions",
    "num.recovery.threads.per.data.dir",
    "num.replica.fetchers",
    "offset.metadata.max.bytes",
    "offsets.commit.required.acks",
    "offsets.commit.timeout.ms",
    "offsets.load.buffer.size",
    "offsets.retention.check.interval.ms",
    "offsets.retention.minutes",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.topic.segment.bytes",
    "producer.id.expiration.check.interval.ms",
    "producer.id.expiration.ms",
    "replica.fetch.backoff.ms",
    "replica.fetch.max.bytes",
    "replica.fetch.min.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.high.watermark.checkpoint.interval.ms",
    "replica.lag.time.max.ms",
    "replica.socket.timeout.ms",
    "reserved.broker.max.id",
    "security.inter.broker.protocol",
    "socket.request.max.bytes",
    "unclean.leader.election.enable",
    "zookeeper.connect",
    "zookeeper.connection.timeout.ms",
    "zookeeper.session.timeout.ms",
];

/// Kafka declares these as STRING (and splits them itself); kastle parses them as lists.
const KAFKA_STRING_KEYS: &[&str] = &[
    "advertised.listeners",
    "listener.security.protocol.map",
    "listeners",
    "log.dirs",
];

/// The type Kafka 3.9 declares for `def` (what DescribeConfigs v3+ reports).
pub fn kafka_type(def: &ConfigKey) -> ConfigType {
    if KAFKA_STRING_KEYS.contains(&def.name) {
        ConfigType::String
    } else {
        def.ty
    }
}

/// The definition governing `name`: an exact table key, or the `listener.name.*` template.
pub fn resolve(name: &str) -> Option<&'static ConfigKey> {
    if let Some(def) = all_keys().find(|d| d.name == name) {
        return Some(def);
    }
    let rest = name.strip_prefix(LISTENER_PREFIX)?;
    // `<listener>.<config>`: both parts must be present.
    let (listener, config) = rest.split_once('.')?;
    if listener.is_empty() || config.is_empty() {
        return None;
    }
    if config.ends_with("password") || config.ends_with("sasl.jaas.config") {
        Some(&LISTENER_SECRET)
    } else {
        Some(&LISTENER_OVERRIDE)
    }
}

/// The `KASTLE_CFG_` suffix for a key: upper-cased, dots as underscores.
pub fn env_suffix(name: &str) -> String {
    name.to_ascii_uppercase().replace('.', "_")
}

/// The key named by an env suffix (`BROKER_ID` → `broker.id`). Table keys are matched by
/// comparing their env form, so mixed-case keys (`zookeeper.clientCnxnSocket`) round-trip;
/// anything else is lower-cased with `_` → `.` (for `listener.name.*`). `Err` carries that
/// derived name for the unknown-key error.
pub fn key_for_env_suffix(suffix: &str) -> Result<String, String> {
    if let Some(def) = all_keys().find(|d| env_suffix(d.name) == suffix) {
        return Ok(def.name.to_string());
    }
    let derived = suffix.to_ascii_lowercase().replace('_', ".");
    match resolve(&derived) {
        Some(_) => Ok(derived),
        None => Err(derived),
    }
}

/// The known key closest to `unknown` by edit distance, if it is close enough to be a typo.
pub fn suggest(unknown: &str) -> Option<&'static str> {
    let limit = (unknown.chars().count() / 4).max(2);
    all_keys()
        .map(|d| (edit_distance(unknown, d.name), d.name))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, name)| (*d, *name))
        .map(|(_, name)| name)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            cur.push(substitute.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::value::{parse_value, Source};
    use std::collections::BTreeSet;

    #[test]
    fn every_default_parses_and_passes_its_own_validator() {
        for def in all_keys() {
            if let Some(d) = def.default {
                let parsed = parse_value(def, def.name, d, &Source::Default);
                assert!(parsed.is_ok(), "{}: {parsed:?}", def.name);
            }
        }
    }

    #[test]
    fn used_keys_are_sorted_known_table_keys() {
        assert!(USED.windows(2).all(|w| w[0] < w[1]));
        for name in USED {
            assert!(KEYS.iter().any(|d| d.name == *name), "{name}");
        }
        assert!(is_used("log.retention.hours"));
        assert!(!is_used("ssl.keystore.location"));
        assert!(!is_used("remote.log.storage.system.enable"));
    }

    #[test]
    fn every_kafka_3_9_broker_key_is_known() {
        // Kafka 3.9 documents 314 broker keys; kastle adds a few of its own.
        let kafka_only = [
            "metrics.listener",
            "min.incremental.fetch.session.eviction.ms",
            "leader.replication.throttled.rate",
            "follower.replication.throttled.rate",
            "replica.alter.log.dirs.io.max.bytes.per.second",
            "producer.id.expiration.check.interval.ms",
            "super.users",
        ];
        let kafka = all_keys().filter(|d| !kafka_only.contains(&d.name)).count();
        assert_eq!(kafka, 314);
        assert_eq!(suggest("log.retention.hourz"), Some("log.retention.hours"));
        assert!(resolve("remote.log.storage.system.enable").is_some());
    }

    #[test]
    fn key_names_are_unique() {
        let names: BTreeSet<_> = all_keys().map(|d| d.name).collect();
        assert_eq!(names.len(), all_keys().count());
    }

    #[test]
    fn env_names_map_back_to_keys_including_mixed_case_ones() {
        assert_eq!(key_for_env_suffix("BROKER_ID").as_deref(), Ok("broker.id"));
        assert_eq!(
            key_for_env_suffix("ZOOKEEPER_CLIENTCNXNSOCKET").as_deref(),
            Ok("zookeeper.clientCnxnSocket")
        );
        assert_eq!(
            key_for_env_suffix("LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION").as_deref(),
            Ok("listener.name.internal.ssl.keystore.location")
        );
        assert_eq!(key_for_env_suffix("NO_SUCH_KEY"), Err("no.such.key".to_string()));
    }

    #[test]
    fn listener_overrides_are_strings_and_their_secrets_are_passwords() {
        let plain = resolve("listener.name.internal.ssl.keystore.location").expect("accepted");
        assert_eq!(plain.ty, ConfigType::String);
        let secret = resolve("listener.name.internal.ssl.keystore.password").expect("accepted");
        assert_eq!(secret.ty, ConfigType::Password);
        assert!(resolve("listener.name.").is_none());
        assert!(resolve("listener.name.internal").is_none());
    }

    #[test]
    fn typos_get_the_closest_key_and_nonsense_gets_none() {
        assert_eq!(
            suggest("zookeeper.session.tmeout.ms"),
            Some("zookeeper.session.timeout.ms")
        );
        assert_eq!(suggest("Broker.Id"), Some("broker.id"));
        assert_eq!(suggest("completely.unrelated.thing"), None);
    }
}
