//! The table of broker config keys: Kafka 3.9's name, type, default, validator and documentation
//! (from `KafkaConfig.configDef` and the `*Configs` classes of ZK-mode Kafka 3.9; the rest of
//! Kafka's keys are in `defs_kafka`), plus kastle's own keys; [`USED`], the one list of keys
//! kastle acts on. Also the name lookups used by the loader over both tables: exact key,
//! `listener.name.*` per-listener overrides, `KASTLE_CFG_*` env names, and "did you mean"
//! suggestions. Owns no values and does no I/O.

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
    /// Kafka's documentation of the key (DescribeConfigs' `documentation`); kastle's own words for
    /// its own keys and where Kafka builds the text at run time.
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
    n("zookeeper.connect", Str, NonEmpty, "Specifies the ZooKeeper connection string in the form <code>hostname:port</code> where host and port are the host and port of a ZooKeeper server. To allow connecting through other ZooKeeper nodes when that ZooKeeper machine is down you can also specify multiple hosts in the form <code>hostname1:port1,hostname2:port2,hostname3:port3</code>. The server can also have a ZooKeeper chroot path as part of its ZooKeeper connection string which puts its data under some path in the global ZooKeeper namespace. For example to give a chroot path of <code>/chroot/path</code> you would give the connection string as <code>hostname1:port1,hostname2:port2,hostname3:port3/chroot/path</code>."),
    k("zookeeper.session.timeout.ms", Int, "18000", AtLeast(1), "Zookeeper session timeout"),
    n("zookeeper.connection.timeout.ms", Int, AtLeast(1), "The max time that the client waits to establish a connection to ZooKeeper. If not set, the value in zookeeper.session.timeout.ms is used"),
    k("zookeeper.max.in.flight.requests", Int, "10", AtLeast(1), "The maximum number of unacknowledged requests the client will send to ZooKeeper before blocking."),
    k("zookeeper.set.acl", Bool, "false", NO, "Set client to use secure ACLs: every znode the broker creates gets CREATOR_ALL plus world READ (Kafka's ZkData.defaultAcls; /config/users, /config/brokers and /delegation_token get CREATOR_ALL only). Needs an authenticated ZooKeeper session (zookeeper.sasl.jaas.config.file)."),
    k("zookeeper.ssl.client.enable", Bool, "false", NO, "Use TLS when connecting to ZooKeeper (its secureClientPort); needs zookeeper.ssl.truststore.location."),
    n("zookeeper.clientCnxnSocket", Str, NO, "ZooKeeper client socket class; kastle accepts org.apache.zookeeper.ClientCnxnSocketNetty (what Kafka requires with TLS), ClientCnxnSocketNIO or null (kastle's client is neither)."),
    n("zookeeper.ssl.keystore.location", Str, NO, "Keystore (PEM or PKCS12) with the client certificate kastle presents to ZooKeeper (mutual TLS)."),
    n("zookeeper.ssl.keystore.password", Password, NO, "Password of zookeeper.ssl.keystore.location."),
    n("zookeeper.ssl.keystore.type", Str, NO, "Keystore type, PEM or PKCS12; null means detect from the file name."),
    n("zookeeper.ssl.truststore.location", Str, NO, "Truststore (PEM or PKCS12) with the certificate that signed ZooKeeper's."),
    n("zookeeper.ssl.truststore.password", Password, NO, "Password of zookeeper.ssl.truststore.location."),
    n("zookeeper.ssl.truststore.type", Str, NO, "Truststore type, PEM or PKCS12; null means detect from the file name."),
    k("zookeeper.ssl.protocol", Str, "TLSv1.2", OneOf(&["TLSv1.2", "TLSv1.3"]), "TLS protocol for ZooKeeper connections (TLSv1.2 or TLSv1.3)."),
    n("zookeeper.ssl.enabled.protocols", List, EachOf(&["TLSv1.2", "TLSv1.3"]), "Enabled TLS protocols for ZooKeeper; null means what Java enables for zookeeper.ssl.protocol (TLSv1.2; or TLSv1.3 and TLSv1.2)."),
    n("zookeeper.ssl.cipher.suites", List, NO, "Enabled TLS cipher suites for ZooKeeper (IANA names); null means every suite rustls' ring provider has."),
    k("zookeeper.ssl.endpoint.identification.algorithm", Str, "HTTPS", NO, "HTTPS enables ZooKeeper hostname verification; blank disables it."),
    k("zookeeper.ssl.crl.enable", Bool, "false", NO, "Check certificate revocation lists for ZooKeeper TLS; kastle refuses true."),
    k("zookeeper.ssl.ocsp.enable", Bool, "false", NO, "Use OCSP for ZooKeeper TLS; kastle refuses true."),
    n("zookeeper.sasl.jaas.config.file", Str, NO, "kastle-specific (Kafka reads java.security.auth.login.config): the JAAS file whose zookeeper.sasl.clientconfig section (a DigestLoginModule with username and password) authenticates the ZooKeeper session with SASL DIGEST-MD5; null = no SASL."),
    n("zookeeper.sasl.client", Bool, NO, "ZooKeeper's client property: authenticate to ZooKeeper with SASL; null means true when zookeeper.sasl.jaas.config.file is set."),
    k("zookeeper.sasl.clientconfig", Str, "Client", NonEmpty, "ZooKeeper's client property: the JAAS section of zookeeper.sasl.jaas.config.file to log in with."),
    // ---- Identity ----
    k("broker.id", Int, "-1", AtLeast(-1), "The broker id for this server. If unset, a unique broker id will be generated.To avoid conflicts between ZooKeeper generated broker id's and user configured broker id's, generated broker ids start from reserved.broker.max.id + 1."),
    k("broker.id.generation.enable", Bool, "true", NO, "Enable automatic broker id generation on the server. When enabled the value configured for reserved.broker.max.id should be reviewed."),
    k("reserved.broker.max.id", Int, "1000", AtLeast(0), "Max number that can be used for a broker.id"),
    n("broker.rack", Str, NO, "Rack of the broker. This will be used in rack aware replication assignment for fault tolerance. Examples: <code>RACK1</code>, <code>us-east-1d</code>"),
    // ---- Listeners and security ----
    k("listeners", List, "PLAINTEXT://:9092", NO, "Comma-separated NAME://host:port to bind; empty host = all interfaces, port 0 = any."),
    n("advertised.listeners", List, NO, "Listeners published in ZooKeeper for clients; null means listeners."),
    k("listener.security.protocol.map", List, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", NonEmpty, "Map between listener names and security protocols. This must be defined for the same security protocol to be usable in more than one port or IP. For example, internal and external traffic can be separated even if SSL is required for both. Concretely, the user could define listeners with names INTERNAL and EXTERNAL and this property as: <code>INTERNAL:SSL,EXTERNAL:SSL</code>. As shown, key and value are separated by a colon and map entries are separated by commas. Each listener name should only appear once in the map. Different security (SSL and SASL) settings can be configured for each listener by adding a normalised prefix (the listener name is lowercased) to the config name. For example, to set a different keystore for the INTERNAL listener, a config with name <code>listener.name.internal.ssl.keystore.location</code> would be set. If the config for the listener name is not set, the config will fallback to the generic config (i.e. <code>ssl.keystore.location</code>). Note that in KRaft a default mapping from the listener names defined by <code>controller.listener.names</code> to PLAINTEXT is assumed if no explicit mapping is provided and no other security protocol is in use."),
    n("inter.broker.listener.name", Str, NO, "Name of listener used for communication between brokers. If this is unset, the listener name is defined by security.inter.broker.protocolIt is an error to set this and security.inter.broker.protocol properties at the same time."),
    k("security.inter.broker.protocol", Str, "PLAINTEXT", OneOf(PROTOCOLS), "Protocol (and listener name) for inter-broker traffic when inter.broker.listener.name is unset."),
    n("control.plane.listener.name", Str, NO, "Dedicated listener for controller-to-broker requests; null means the inter-broker listener."),
    k("inter.broker.protocol.version", Str, "3.9-IV0", Version, "Specify which version of the inter-broker protocol will be used. . This is typically bumped after all brokers were upgraded to a new version. Example of some valid values are: 0.8.0, 0.8.1, 0.8.1.1, 0.8.2, 0.8.2.0, 0.8.2.1, 0.9.0.0, 0.9.0.1 Check MetadataVersion for the full list."),
    k("log.message.format.version", Str, "3.0-IV1", Version, "Specify the message format version the broker will use to append messages to the logs. The value should be a valid MetadataVersion. Some examples are: 0.8.2, 0.9.0.0, 0.10.0, check MetadataVersion for more details. By setting a particular message format version, the user is certifying that all the existing messages on disk are smaller or equal than the specified version. Setting this value incorrectly will cause consumers with older versions to break as they will receive messages with a format that they don't understand."),
    k("authorizer.class.name", Str, "", NO, "The fully qualified name of a class that implements <code>CLASS:Authorizer.class.getName</code> interface, which is used by the broker for authorization."),
    n("super.users", Str, NO, "Semicolon-separated principals (User:admin) that bypass ACLs."),
    k("allow.everyone.if.no.acl.found", Bool, "false", NO, "With the ACL authorizer: whether a resource no ACL matches is open to everyone (true) or to super users only (false)."),
    k("principal.builder.class", Class, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", NO, "The fully qualified name of a class that implements the KafkaPrincipalBuilder interface, which is used to build the KafkaPrincipal object used during authorization. If no principal builder is defined, the default behavior depends on the security protocol in use. For SSL authentication, the principal will be derived using the rules defined by <code>ssl.principal.mapping.rules</code> applied on the distinguished name from the client certificate if one is provided; otherwise, if client authentication is not required, the principal name will be ANONYMOUS. For SASL authentication, the principal will be derived using the rules defined by <code>sasl.kerberos.principal.to.local.rules</code> if GSSAPI is in use, and the SASL authentication ID for other mechanisms. For PLAINTEXT, the principal will be ANONYMOUS."),
    k("sasl.enabled.mechanisms", List, "GSSAPI", NO, "The list of SASL mechanisms enabled in the Kafka server. The list may contain any mechanism for which a security provider is available. Only GSSAPI is enabled by default."),
    k("sasl.mechanism.inter.broker.protocol", Str, "GSSAPI", NO, "SASL mechanism used for inter-broker communication. Default is GSSAPI."),
    k("connection.failed.authentication.delay.ms", Int, "100", AtLeast(0), ""),
    k("connections.max.reauth.ms", Long, "0", NO, "When explicitly set to a positive number (the default is 0, not a positive number), a session lifetime that will not exceed the configured value will be communicated to v2.2.0 or later clients when they authenticate. The broker will disconnect any such connection that is not re-authenticated within the session lifetime and that is then subsequently used for any purpose other than re-authentication. Configuration names can optionally be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms=3600000"),
    n("sasl.jaas.config", Password, NO, "JAAS login context parameters for SASL connections in the format used by JAAS configuration files. JAAS configuration file format is described <a href=\"https://docs.oracle.com/javase/8/docs/technotes/guides/security/jgss/tutorials/LoginConfigFile.html\">here</a>. The format for the value is: <code>loginModuleClass controlFlag (optionName=optionValue)*;</code>. For brokers, the config must be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=com.example.ScramLoginModule required;"),
    n("sasl.kerberos.service.name", Str, NO, "The Kerberos principal name that Kafka runs as. This can be defined either in Kafka's JAAS config or in Kafka's config."),
    n("ssl.keystore.location", Str, NO, "The location of the key store file. This is optional for client and can be used for two-way authentication for client."),
    n("ssl.keystore.password", Password, NO, "The store password for the key store file. This is optional for client and only needed if 'ssl.keystore.location' is configured. Key store password is not supported for PEM format."),
    k("ssl.keystore.type", Str, "JKS", NO, "The file format of the key store file. This is optional for client. The values currently supported by the default `ssl.engine.factory.class` are [JKS, PKCS12, PEM]."),
    n("ssl.key.password", Password, NO, "The password of the private key in the key store file or the PEM key specified in 'ssl.keystore.key'."),
    n("ssl.truststore.location", Str, NO, "The location of the trust store file."),
    n("ssl.truststore.password", Password, NO, "The password for the trust store file. If a password is not set, trust store file configured will still be used, but integrity checking is disabled. Trust store password is not supported for PEM format."),
    k("ssl.truststore.type", Str, "JKS", NO, "The file format of the trust store file. The values currently supported by the default `ssl.engine.factory.class` are [JKS, PKCS12, PEM]."),
    k("ssl.client.auth", Str, "none", OneOf(&["required", "requested", "none"]), "Configures kafka broker to request client authentication. The following settings are common: <ul> <li><code>ssl.client.auth=required</code> If set to required client authentication is required. <li><code>ssl.client.auth=requested</code> This means client authentication is optional. unlike required, if this option is set client can choose not to provide authentication information about itself <li><code>ssl.client.auth=none</code> This means client authentication is not needed.</ul>"),
    k("ssl.protocol", Str, "TLSv1.3", NO, "The SSL protocol used to generate the SSLContext. The default is 'TLSv1.3' when running with Java 11 or newer, 'TLSv1.2' otherwise. This value should be fine for most use cases. Allowed values in recent JVMs are 'TLSv1.2' and 'TLSv1.3'. 'TLS', 'TLSv1.1', 'SSL', 'SSLv2' and 'SSLv3' may be supported in older JVMs, but their usage is discouraged due to known security vulnerabilities. With the default value for this config and 'ssl.enabled.protocols', clients will downgrade to 'TLSv1.2' if the server does not support 'TLSv1.3'. If this config is set to 'TLSv1.2', clients will not use 'TLSv1.3' even if it is one of the values in ssl.enabled.protocols and the server only supports 'TLSv1.3'."),
    k("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", NO, "The list of protocols enabled for SSL connections. The default is 'TLSv1.2,TLSv1.3' when running with Java 11 or newer, 'TLSv1.2' otherwise. With the default value for Java 11, clients and servers will prefer TLSv1.3 if both support it and fallback to TLSv1.2 otherwise (assuming both support at least TLSv1.2). This default should be fine for most cases. Also see the config documentation for `ssl.protocol`."),
    n("ssl.cipher.suites", List, NO, "A list of cipher suites. This is a named combination of authentication, encryption, MAC and key exchange algorithm used to negotiate the security settings for a network connection using TLS or SSL network protocol. By default all the available cipher suites are supported."),
    k("ssl.endpoint.identification.algorithm", Str, "https", NO, "The endpoint identification algorithm to validate server hostname using server certificate."),
    // ---- Network and threads ----
    k("num.network.threads", Int, "3", AtLeast(1), "The number of threads that the server uses for receiving requests from the network and sending responses to the network. Noted: each listener (except for controller listener) creates its own thread pool."),
    k("num.io.threads", Int, "8", AtLeast(1), "The number of threads that the server uses for processing requests, which may include disk I/O"),
    k("background.threads", Int, "10", AtLeast(1), "The number of threads to use for various background processing tasks"),
    n("num.replica.alter.log.dirs.threads", Int, NO, "The number of threads that can move replicas between log directories, which may include disk I/O"),
    k("queued.max.requests", Int, "500", AtLeast(1), "The number of queued requests allowed for data-plane, before blocking the network threads"),
    k("socket.send.buffer.bytes", Int, "102400", NO, "The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS default will be used."),
    k("socket.receive.buffer.bytes", Int, "102400", NO, "The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS default will be used."),
    k("socket.request.max.bytes", Int, "104857600", AtLeast(1), "The maximum number of bytes in a socket request"),
    k("socket.listen.backlog.size", Int, "50", AtLeast(1), "The maximum number of pending connections on the socket. In Linux, you may also need to configure <code>somaxconn</code> and <code>tcp_max_syn_backlog</code> kernel parameters accordingly to make the configuration takes effect."),
    k("connections.max.idle.ms", Long, "600000", NO, "Idle connections timeout: the server socket processor threads close the connections that idle more than this"),
    k("max.connections", Int, I32_MAX, AtLeast(0), "Max connections across all listeners."),
    k("max.connections.per.ip", Int, I32_MAX, AtLeast(0), "Max connections from one IP address."),
    k("request.timeout.ms", Int, "30000", NO, "The configuration controls the maximum amount of time the client will wait for the response of a request. If the response is not received before the timeout elapses the client will resend the request if necessary or fail the request if retries are exhausted."),
    k("fetch.max.bytes", Int, "57671680", AtLeast(1024), "The maximum number of bytes we will return for a fetch request. Must be at least 1024."),
    k("message.max.bytes", Int, "1048588", AtLeast(0), "The largest record batch size allowed by Kafka (after compression if compression is enabled). If this is increased and there are consumers older than 0.10.2, the consumers' fetch size must also be increased so that they can fetch record batches this large. In the latest message format version, records are always grouped into batches for efficiency. In previous message format versions, uncompressed records are not grouped into batches and this limit only applies to a single record in that case.This can be set per topic with the topic level <code>max.message.bytes</code> config."),
    // ---- Log ----
    k("log.dir", Str, "/tmp/kafka-logs", NO, "The directory in which the log data is kept (supplemental for log.dirs property)"),
    n("log.dirs", List, NO, "A comma-separated list of the directories where the log data is stored. If not set, the value in log.dir is used."),
    k("num.partitions", Int, "1", AtLeast(1), "The default number of log partitions per topic"),
    k("num.recovery.threads.per.data.dir", Int, "1", AtLeast(1), "The number of threads per data directory to be used for log recovery at startup and flushing at shutdown"),
    k("log.segment.bytes", Int, "1073741824", AtLeast(14), "The maximum size of a single log file"),
    k("log.roll.hours", Int, "168", AtLeast(1), "The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property"),
    n("log.roll.ms", Long, NO, "The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in log.roll.hours is used"),
    k("log.roll.jitter.hours", Int, "0", AtLeast(0), "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property"),
    n("log.roll.jitter.ms", Long, NO, "The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in log.roll.jitter.hours is used"),
    k("log.retention.hours", Int, "168", NO, "The number of hours to keep a log file before deleting it (in hours), tertiary to log.retention.ms property"),
    n("log.retention.minutes", Int, NO, "The number of minutes to keep a log file before deleting it (in minutes), secondary to log.retention.ms property. If not set, the value in log.retention.hours is used"),
    n("log.retention.ms", Long, NO, "The number of milliseconds to keep a log file before deleting it (in milliseconds), If not set, the value in log.retention.minutes is used. If set to -1, no time limit is applied."),
    k("log.retention.bytes", Long, "-1", NO, "The maximum size of the log before deleting it"),
    k("log.retention.check.interval.ms", Long, "300000", AtLeast(1), "The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion"),
    k("log.index.size.max.bytes", Int, "10485760", AtLeast(4), "The maximum size in bytes of the offset index"),
    k("log.index.interval.bytes", Int, "4096", AtLeast(0), "The interval with which we add an entry to the offset index."),
    k("log.flush.interval.messages", Long, I64_MAX, AtLeast(1), "The number of messages accumulated on a log partition before messages are flushed to disk."),
    n("log.flush.interval.ms", Long, NO, "The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used"),
    k("log.flush.scheduler.interval.ms", Long, I64_MAX, NO, "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk"),
    k("log.flush.offset.checkpoint.interval.ms", Int, "60000", AtLeast(0), "The frequency with which we update the persistent record of the last flush which acts as the log recovery point."),
    k("log.flush.start.offset.checkpoint.interval.ms", Int, "60000", AtLeast(0), "The frequency with which we update the persistent record of log start offset"),
    k("log.preallocate", Bool, "false", NO, "Should pre allocate file when create new segment? If you are using Kafka on Windows, you probably need to set it to true."),
    k("log.segment.delete.delay.ms", Long, "60000", AtLeast(0), "The amount of time to wait before deleting a file from the filesystem. If the value is 0 and there is no file to delete, the system will wait 1 millisecond. Low value will cause busy waiting"),
    k("log.cleanup.policy", List, "delete", EachOf(&["compact", "delete"]), "The default cleanup policy for segments beyond the retention window. A comma separated list of valid policies. Valid policies are: \"delete\" and \"compact\""),
    k("log.cleaner.enable", Bool, "true", NO, "Enable the log cleaner process to run on the server. Should be enabled if using any topics with a cleanup.policy=compact including the internal offsets topic. If disabled those topics will not be compacted and continually grow in size."),
    k("log.cleaner.threads", Int, "1", AtLeast(0), "The number of background threads to use for log cleaning"),
    k("log.cleaner.dedupe.buffer.size", Long, "134217728", NO, "The total memory used for log deduplication across all cleaner threads"),
    k("log.cleaner.io.buffer.size", Int, "524288", AtLeast(0), "The total memory used for log cleaner I/O buffers across all cleaner threads"),
    k("log.cleaner.io.buffer.load.factor", Double, "0.9", NO, "Log cleaner dedupe buffer load factor. The percentage full the dedupe buffer can become. A higher value will allow more log to be cleaned at once but will lead to more hash collisions"),
    k("log.cleaner.io.max.bytes.per.second", Double, "1.7976931348623157E308", NO, "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value on average"),
    k("log.cleaner.backoff.ms", Long, "15000", AtLeast(0), "The amount of time to sleep when there are no logs to clean"),
    k("log.cleaner.delete.retention.ms", Long, "86400000", AtLeast(0), "The amount of time to retain tombstone message markers for log compacted topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise tombstones messages may be collected before a consumer completes their scan)."),
    k("log.cleaner.min.cleanable.ratio", Double, "0.5", BetweenF(0.0, 1.0), "The minimum ratio of dirty log to total log for a log to eligible for cleaning. If the log.cleaner.max.compaction.lag.ms or the log.cleaner.min.compaction.lag.ms configurations are also specified, then the log compactor considers the log eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the log.cleaner.min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the log.cleaner.max.compaction.lag.ms period."),
    k("log.cleaner.min.compaction.lag.ms", Long, "0", AtLeast(0), "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted."),
    k("log.cleaner.max.compaction.lag.ms", Long, I64_MAX, AtLeast(1), "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted."),
    k("log.message.timestamp.type", Str, "CreateTime", OneOf(&["CreateTime", "LogAppendTime"]), "Define whether the timestamp in the message is message create time or log append time. The value should be either <code>CreateTime</code> or <code>LogAppendTime</code>."),
    k("log.message.timestamp.difference.max.ms", Long, I64_MAX, AtLeast(0), "[DEPRECATED] The maximum difference allowed between the timestamp when a broker receives a message and the timestamp specified in the message. If log.message.timestamp.type=CreateTime, a message will be rejected if the difference in timestamp exceeds this threshold. This configuration is ignored if log.message.timestamp.type=LogAppendTime.The maximum timestamp difference allowed should be no greater than log.retention.ms to avoid unnecessarily frequent log rolling."),
    k("log.message.timestamp.before.max.ms", Long, I64_MAX, AtLeast(0), "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if log.message.timestamp.type=LogAppendTime."),
    k("log.message.timestamp.after.max.ms", Long, I64_MAX, AtLeast(0), "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if log.message.timestamp.type=LogAppendTime."),
    k("log.message.downconversion.enable", Bool, "true", NO, "This configuration controls whether down-conversion of message formats is enabled to satisfy consume requests. When set to <code>false</code>, broker will not perform down-conversion for consumers expecting an older message format. The broker responds with <code>UNSUPPORTED_VERSION</code> error for consume requests from such older clients. This configurationdoes not apply to any message format conversion that might be required for replication to followers."),
    n("create.topic.policy.class.name", Class, NO, "The create topic policy class that should be used for validation. The class should implement the <code>org.apache.kafka.server.policy.CreateTopicPolicy</code> interface."),
    n("alter.config.policy.class.name", Class, NO, "The alter configs policy class that should be used for validation. The class should implement the <code>org.apache.kafka.server.policy.AlterConfigPolicy</code> interface."),
    k("compression.type", Str, "producer", OneOf(COMPRESSION), "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer."),
    // ---- Topics and replication ----
    k("auto.create.topics.enable", Bool, "true", NO, "Enable auto creation of topic on the server."),
    k("delete.topic.enable", Bool, "true", NO, "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off"),
    k("default.replication.factor", Int, "1", Between(1, 32767), "The replication factor for automatically created topics, and for topics created with -1 as the replication factor"),
    k("min.insync.replicas", Int, "1", AtLeast(1), "When a producer sets acks to \"all\" (or \"-1\"), <code>min.insync.replicas</code> specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful. If this minimum cannot be met, then the producer will raise an exception (either <code>NotEnoughReplicas</code> or <code>NotEnoughReplicasAfterAppend</code>).<br>When used together, <code>min.insync.replicas</code> and acks allow you to enforce greater durability guarantees. A typical scenario would be to create a topic with a replication factor of 3, set <code>min.insync.replicas</code> to 2, and produce with acks of \"all\". This will ensure that the producer raises an exception if a majority of replicas do not receive a write."),
    k("unclean.leader.election.enable", Bool, "false", NO, "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss<p>Note: In KRaft mode, when enabling this config dynamically, it needs to wait for the unclean leader election thread to trigger election periodically (default is 5 minutes). Please run `kafka-leader-election.sh` with `unclean` option to trigger the unclean leader election immediately if needed.</p>"),
    k("auto.leader.rebalance.enable", Bool, "true", NO, "Move leadership back to preferred replicas periodically."),
    k("leader.imbalance.per.broker.percentage", Int, "10", NO, "The ratio of leader imbalance allowed per broker. The controller would trigger a leader balance if it goes above this value per broker. The value is specified in percentage."),
    k("leader.imbalance.check.interval.seconds", Long, "300", AtLeast(1), "The frequency with which the partition rebalance check is triggered by the controller"),
    k("controlled.shutdown.enable", Bool, "true", NO, "Enable controlled shutdown of the server."),
    k("controlled.shutdown.max.retries", Int, "3", NO, "Controlled shutdown can fail for multiple reasons. This determines the number of retries when such failure happens"),
    k("controlled.shutdown.retry.backoff.ms", Long, "5000", NO, "Before each retry, the system needs time to recover from the state that caused the previous failure (Controller fail over, replica lag etc). This config determines the amount of time to wait before retrying."),
    k("controller.socket.timeout.ms", Int, "30000", NO, "The socket timeout for controller-to-broker channels."),
    k("replica.lag.time.max.ms", Long, "30000", NO, "If a follower hasn't sent any fetch requests or hasn't consumed up to the leaders log end offset for at least this time, the leader will remove the follower from isr"),
    k("replica.fetch.max.bytes", Int, "1048576", AtLeast(0), "The number of bytes of messages to attempt to fetch for each partition. This is not an absolute maximum, if the first record batch in the first non-empty partition of the fetch is larger than this value, the record batch will still be returned to ensure that progress can be made. The maximum record batch size accepted by the broker is defined via <code>message.max.bytes</code> (broker config) or <code>max.message.bytes</code> (topic config)."),
    k("replica.fetch.response.max.bytes", Int, "10485760", AtLeast(0), "Maximum bytes expected for the entire fetch response. Records are fetched in batches, and if the first record batch in the first non-empty partition of the fetch is larger than this value, the record batch will still be returned to ensure that progress can be made. As such, this is not an absolute maximum. The maximum record batch size accepted by the broker is defined via <code>message.max.bytes</code> (broker config) or <code>max.message.bytes</code> (topic config)."),
    k("replica.fetch.wait.max.ms", Int, "500", NO, "The maximum wait time for each fetcher request issued by follower replicas. This value should always be less than the replica.lag.time.max.ms at all times to prevent frequent shrinking of ISR for low throughput topics"),
    k("replica.fetch.min.bytes", Int, "1", NO, "Minimum bytes expected for each fetch response. If not enough bytes, wait up to <code>replica.fetch.wait.max.ms</code> (broker config)."),
    k("replica.fetch.backoff.ms", Int, "1000", AtLeast(0), "The amount of time to sleep when fetch partition error occurs."),
    k("replica.socket.timeout.ms", Int, "30000", NO, "The socket timeout for network requests. Its value should be at least replica.fetch.wait.max.ms"),
    k("replica.socket.receive.buffer.bytes", Int, "65536", NO, "The socket receive buffer for network requests to the leader for replicating data"),
    k("num.replica.fetchers", Int, "1", NO, "Number of fetcher threads used to replicate records from each source broker. The total number of fetchers on each broker is bound by <code>num.replica.fetchers</code> multiplied by the number of brokers in the cluster.Increasing this value can increase the degree of I/O parallelism in the follower and leader broker at the cost of higher CPU and memory utilization."),
    k("replica.high.watermark.checkpoint.interval.ms", Long, "5000", NO, "The frequency with which the high watermark is saved out to disk"),
    k("fetch.purgatory.purge.interval.requests", Int, "1000", NO, "The purge interval (in number of requests) of the fetch request purgatory"),
    k("max.incremental.fetch.session.cache.slots", Int, "1000", AtLeast(0), "The maximum number of total incremental fetch sessions that we will maintain. FetchSessionCache is sharded into 8 shards and the limit is equally divided among all shards. Sessions are allocated to each shard in round-robin. Only entries within a shard are considered eligible for eviction."),
    // kastle: Kafka's fixed MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, under KIP-227's name.
    k("min.incremental.fetch.session.eviction.ms", Long, "120000", AtLeast(0), "A fetch session unused this long may be evicted by any new one."),
    k("producer.purgatory.purge.interval.requests", Int, "1000", NO, "The purge interval (in number of requests) of the producer request purgatory"),
    k("delete.records.purgatory.purge.interval.requests", Int, "1", NO, "The purge interval (in number of requests) of the delete records request purgatory"),
    k("leader.replication.throttled.rate", Long, I64_MAX, AtLeast(0), "Leader-side replication throttle, bytes/s (KIP-73)."),
    k("follower.replication.throttled.rate", Long, I64_MAX, AtLeast(0), "Follower-side replication throttle, bytes/s (KIP-73)."),
    k("replication.quota.window.num", Int, "11", AtLeast(1), "The number of samples to retain in memory for replication quotas"),
    k("replication.quota.window.size.seconds", Int, "1", AtLeast(1), "The time span of each sample for replication quotas"),
    k("replica.alter.log.dirs.io.max.bytes.per.second", Long, I64_MAX, AtLeast(0), "Throttle of moves between log dirs, bytes/s (KIP-113)."),
    // ---- Group coordinator and __consumer_offsets ----
    k("offsets.topic.num.partitions", Int, "50", AtLeast(1), "The number of partitions for the offset commit topic (should not change after deployment)."),
    k("offsets.topic.replication.factor", Short, "3", AtLeast(1), "The replication factor for the offsets topic (set higher to ensure availability). Internal topic creation will fail until the cluster size meets this replication factor requirement."),
    k("offsets.topic.segment.bytes", Int, "104857600", AtLeast(1), "The offsets topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads."),
    k("offsets.topic.compression.codec", Int, "0", NO, "Compression codec for the offsets topic - compression may be used to achieve \"atomic\" commits."),
    k("offsets.retention.minutes", Int, "10080", AtLeast(1), "For subscribed consumers, committed offset of a specific partition will be expired and discarded when 1) this retention period has elapsed after the consumer group loses all its consumers (i.e. becomes empty); 2) this retention period has elapsed since the last time an offset is committed for the partition and the group is no longer subscribed to the corresponding topic. For standalone consumers (using manual assignment), offsets will be expired after this retention period has elapsed since the time of last commit. Note that when a group is deleted via the delete-group request, its committed offsets will also be deleted without extra retention period; also when a topic is deleted via the delete-topic request, upon propagated metadata update any group's committed offsets for that topic will also be deleted without extra retention period."),
    k("offsets.retention.check.interval.ms", Long, "600000", AtLeast(1), "Frequency at which to check for stale offsets"),
    k("offsets.commit.timeout.ms", Int, "5000", AtLeast(1), "Offset commit will be delayed until all replicas for the offsets topic receive the commit or this timeout is reached. This is similar to the producer request timeout."),
    k("offsets.commit.required.acks", Short, "-1", NO, "DEPRECATED: The required acks before the commit can be accepted. In general, the default (-1) should not be overridden."),
    k("offsets.load.buffer.size", Int, "5242880", AtLeast(1), "Batch size for reading from the offsets segments when loading offsets into the cache (soft-limit, overridden if records are too large)."),
    k("offset.metadata.max.bytes", Int, "4096", NO, "The maximum size for a metadata entry associated with an offset commit."),
    k("group.min.session.timeout.ms", Int, "6000", NO, "The minimum allowed session timeout for registered consumers. Shorter timeouts result in quicker failure detection at the cost of more frequent consumer heartbeating, which can overwhelm broker resources."),
    k("group.max.session.timeout.ms", Int, "1800000", NO, "The maximum allowed session timeout for registered consumers. Longer timeouts give consumers more time to process messages in between heartbeats at the cost of a longer time to detect failures."),
    k("group.initial.rebalance.delay.ms", Int, "3000", NO, "The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances, but increases the time until processing begins."),
    k("group.max.size", Int, I32_MAX, AtLeast(1), "The maximum number of consumers that a single consumer group can accommodate."),
    // ---- Transactions and producer ids ----
    k("transaction.state.log.num.partitions", Int, "50", AtLeast(1), "The number of partitions for the transaction topic (should not change after deployment)."),
    k("transaction.state.log.replication.factor", Short, "3", AtLeast(1), "The replication factor for the transaction topic (set higher to ensure availability). Internal topic creation will fail until the cluster size meets this replication factor requirement."),
    k("transaction.state.log.min.isr", Int, "2", AtLeast(1), "The minimum number of replicas that must acknowledge a write to transaction topic in order to be considered successful."),
    k("transaction.state.log.segment.bytes", Int, "104857600", AtLeast(1), "The transaction topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads"),
    k("transaction.state.log.load.buffer.size", Int, "5242880", AtLeast(1), "Batch size for reading from the transaction log segments when loading producer ids and transactions into the cache (soft-limit, overridden if records are too large)."),
    k("transactional.id.expiration.ms", Int, "604800000", AtLeast(1), "The time in ms that the transaction coordinator will wait without receiving any transaction status updates for the current transaction before expiring its transactional id. Transactional IDs will not expire while a the transaction is still ongoing."),
    k("transaction.max.timeout.ms", Int, "900000", AtLeast(1), "The maximum allowed timeout for transactions. If a clientâs requested transaction time exceed this, then the broker will return an error in InitProducerIdRequest. This prevents a client from too large of a timeout, which can stall consumers reading from topics included in the transaction."),
    k("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", AtLeast(1), "The interval at which to rollback transactions that have timed out"),
    k("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", AtLeast(1), "The interval at which to remove transactions that have expired due to <code>transactional.id.expiration.ms</code> passing"),
    k("producer.id.expiration.ms", Int, "86400000", AtLeast(1), "The time in ms that a topic partition leader will wait before expiring producer IDs. Producer IDs will not expire while a transaction associated to them is still ongoing. Note that producer IDs may expire sooner if the last write from the producer ID is deleted due to the topic's retention settings. Setting this value the same or higher than <code>delivery.timeout.ms</code> can help prevent expiration during retries and protect against message duplication, but the default should be reasonable for most use cases."),
    k("producer.id.expiration.check.interval.ms", Int, "600000", AtLeast(1), "How often idle producer ids are expired."),
    // ---- Metrics ----
    k("metric.reporters", List, "", NO, "A list of classes to use as metrics reporters. Implementing the <code>org.apache.kafka.common.metrics.MetricsReporter</code> interface allows plugging in classes that will be notified of new metric creation. The JmxReporter is always included to register JMX statistics."),
    k("metrics.num.samples", Int, "2", AtLeast(1), "The number of samples maintained to compute metrics."),
    k("metrics.sample.window.ms", Long, "30000", AtLeast(1), "The window of time a metrics sample is computed over."),
    k("metrics.recording.level", Str, "INFO", OneOf(&["INFO", "DEBUG", "TRACE"]), "The highest recording level for metrics."),
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
pub(crate) static USED: &[&str] = &[
    "advertised.listeners",
    "allow.everyone.if.no.acl.found",
    "authorizer.class.name",
    "auto.create.topics.enable",
    "auto.leader.rebalance.enable",
    "broker.id",
    "broker.id.generation.enable",
    "broker.rack",
    "compression.type",
    "connection.failed.authentication.delay.ms",
    "connections.max.idle.ms",
    "connections.max.reauth.ms",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "default.replication.factor",
    "delete.topic.enable",
    "follower.replication.throttled.rate",
    "group.initial.rebalance.delay.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.min.session.timeout.ms",
    "inter.broker.listener.name",
    "inter.broker.protocol.version",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "leader.replication.throttled.rate",
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
    "replication.quota.window.num",
    "replication.quota.window.size.seconds",
    "reserved.broker.max.id",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.mechanism.inter.broker.protocol",
    "security.inter.broker.protocol",
    "socket.request.max.bytes",
    "ssl.cipher.suites",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.key.password",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "super.users",
    "unclean.leader.election.enable",
    "zookeeper.clientCnxnSocket",
    "zookeeper.connect",
    "zookeeper.connection.timeout.ms",
    "zookeeper.sasl.client",
    "zookeeper.sasl.clientconfig",
    "zookeeper.sasl.jaas.config.file",
    "zookeeper.session.timeout.ms",
    "zookeeper.set.acl",
    "zookeeper.ssl.cipher.suites",
    "zookeeper.ssl.client.enable",
    "zookeeper.ssl.crl.enable",
    "zookeeper.ssl.enabled.protocols",
    "zookeeper.ssl.endpoint.identification.algorithm",
    "zookeeper.ssl.keystore.location",
    "zookeeper.ssl.keystore.password",
    "zookeeper.ssl.keystore.type",
    "zookeeper.ssl.ocsp.enable",
    "zookeeper.ssl.protocol",
    "zookeeper.ssl.truststore.location",
    "zookeeper.ssl.truststore.password",
    "zookeeper.ssl.truststore.type",
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
        assert!(is_used("ssl.keystore.location"));
        assert!(!is_used("remote.log.storage.system.enable"));
    }

    #[test]
    fn every_kafka_3_9_broker_key_is_known() {
        // Kafka 3.9 documents 314 broker keys; kastle adds a few of its own.
        let kafka_only = [
            "metrics.listener",
            "zookeeper.sasl.jaas.config.file",
            "zookeeper.sasl.client",
            "zookeeper.sasl.clientconfig",
            "min.incremental.fetch.session.eviction.ms",
            "leader.replication.throttled.rate",
            "follower.replication.throttled.rate",
            "replica.alter.log.dirs.io.max.bytes.per.second",
            "producer.id.expiration.check.interval.ms",
            "super.users",
            "allow.everyone.if.no.acl.found",
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
