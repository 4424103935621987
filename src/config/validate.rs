//! Cross-key checks and the typed view: turns the merged key → (value, source) map into a
//! `KafkaConfig`, enforcing what Kafka 3.9's `KafkaConfig.validateValues` enforces in ZK mode —
//! required `zookeeper.connect`, broker id range, at least one log dir, listener names mapped to
//! protocols, advertised ⊆ listeners, no advertised 0.0.0.0, one inter-broker listener setting,
//! inter-broker and control-plane listeners advertised, replica fetch timing, offset commit acks —
//! plus kastle's own: every listener's security protocol is one kastle serves (PLAINTEXT and SSL), and every SSL listener has a keystore.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::error::ConfigError;
use crate::config::listeners::{parse_listeners, parse_protocol_map, EndPoint, ListenerProblem};
use crate::config::load::Entries;
use crate::config::value::{split_list, Source, Value};
use crate::config::{KafkaConfig, SecurityProtocol, ZkClientSecurity, ZkSaslClient};
use crate::security::tls::settings::value_text;
use crate::security::tls::TlsSettings;

/// Read access to the merged entries with errors that name the key.
struct View<'a>(&'a Entries);

impl View<'_> {
    fn value(&self, key: &str) -> &Value {
        self.0.get(key).map_or(&Value::Null, |e| &e.value)
    }

    fn origin(&self, key: &str) -> Source {
        self.0.get(key).map_or(Source::Default, |e| e.source.clone())
    }

    fn explicit(&self, key: &str) -> bool {
        self.origin(key) != Source::Default
    }

    fn missing(key: &str) -> ConfigError {
        ConfigError::Missing { key: key.to_string() }
    }

    fn int(&self, key: &str) -> Result<i32, ConfigError> {
        self.opt_int(key).ok_or_else(|| Self::missing(key))
    }

    fn opt_int(&self, key: &str) -> Option<i32> {
        match self.value(key) {
            Value::Int(v) => Some(*v),
            Value::Short(v) => Some(i32::from(*v)),
            _ => None,
        }
    }

    fn long(&self, key: &str) -> Result<i64, ConfigError> {
        match self.value(key) {
            Value::Long(v) => Ok(*v),
            Value::Int(v) => Ok(i64::from(*v)),
            _ => Err(Self::missing(key)),
        }
    }

    fn bool(&self, key: &str) -> Result<bool, ConfigError> {
        match self.value(key) {
            Value::Bool(v) => Ok(*v),
            _ => Err(Self::missing(key)),
        }
    }

    fn opt_str(&self, key: &str) -> Option<&str> {
        match self.value(key) {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    fn str(&self, key: &str) -> Result<&str, ConfigError> {
        self.opt_str(key).ok_or_else(|| Self::missing(key))
    }

    fn opt_list(&self, key: &str) -> Option<&[String]> {
        match self.value(key) {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    fn invalid(&self, key: &str, expected: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: self.value(key).to_string(),
            expected: expected.into(),
            origin: self.origin(key),
        }
    }

    fn conflict(&self, key: &'static str, other: &'static str, detail: impl Into<String>) -> ConfigError {
        ConfigError::Conflict {
            key,
            key_origin: self.origin(key),
            other,
            other_origin: self.origin(other),
            detail: detail.into(),
        }
    }
}

const MAP_KEY: &str = "listener.security.protocol.map";
const IBL_KEY: &str = "inter.broker.listener.name";
const IBP_KEY: &str = "security.inter.broker.protocol";
const CPL_KEY: &str = "control.plane.listener.name";

/// Checks the merged entries and builds the typed config.
pub(crate) fn build(entries: Entries) -> Result<KafkaConfig, ConfigError> {
    let v = View(&entries);
    let zookeeper_connect = v.str("zookeeper.connect")?.to_string();

    let broker_id = v.int("broker.id")?;
    let broker_id_generation_enable = v.bool("broker.id.generation.enable")?;
    let reserved_broker_max_id = v.int("reserved.broker.max.id")?;
    check_broker_id(&v, broker_id, broker_id_generation_enable, reserved_broker_max_id)?;

    let log_dirs = log_dirs(&v)?;
    let session_ms = v.int("zookeeper.session.timeout.ms")?;
    let connection_ms = v.opt_int("zookeeper.connection.timeout.ms").unwrap_or(session_ms);

    let protocol_map =
        parse_protocol_map(v.opt_list(MAP_KEY).unwrap_or(&[])).map_err(|expected| v.invalid(MAP_KEY, expected))?;
    let listeners = endpoints(&v, "listeners", &protocol_map, true)?;
    check_served(&v, &listeners)?;
    check_tls_listeners(&v, &listeners)?;
    let advertised_key = if v.opt_list("advertised.listeners").is_some() {
        "advertised.listeners"
    } else {
        "listeners"
    };
    let advertised_listeners = endpoints(&v, advertised_key, &protocol_map, false)?;
    check_advertised(&v, advertised_key, &listeners, &advertised_listeners)?;
    let inter_broker_listener_name = inter_broker_listener(&v, advertised_key, &protocol_map, &advertised_listeners)?;
    check_control_plane(&v, &listeners, &advertised_listeners, &inter_broker_listener_name)?;
    check_replica_timing(&v)?;
    check_commit_acks(&v)?;
    let zookeeper_security = zk_security(&v)?;

    let replication = v.int("default.replication.factor")?;
    let default_replication_factor =
        i16::try_from(replication).map_err(|_| v.invalid("default.replication.factor", "a value in [1, 32767]"))?;

    let authorizer_enabled = authorizer(&v)?;
    let super_users = super_users(&v)?;

    let config = KafkaConfig {
        authorizer_enabled,
        super_users,
        allow_everyone_if_no_acl_found: v.bool("allow.everyone.if.no.acl.found")?,
        broker_id,
        broker_id_generation_enable,
        reserved_broker_max_id,
        log_dirs,
        zookeeper_connect,
        zookeeper_session_timeout: millis(session_ms),
        zookeeper_connection_timeout: millis(connection_ms),
        listeners,
        advertised_listeners,
        protocol_map,
        inter_broker_listener_name,
        broker_rack: v.opt_str("broker.rack").map(str::to_string),
        num_partitions: v.int("num.partitions")?,
        default_replication_factor,
        min_insync_replicas: v.int("min.insync.replicas")?,
        inter_broker_protocol_version: v.str("inter.broker.protocol.version")?.to_string(),
        metrics_listener: v.opt_str("metrics.listener").map(str::to_string),
        zookeeper_security,
        entries,
    };
    check_sasl(&config)?;
    Ok(config)
}

/// Every SASL listener serves only mechanisms kastle has, each configured (PLAIN with users),
/// and the inter-broker login is complete (`security::sasl::config`).
fn check_sasl(config: &KafkaConfig) -> Result<(), ConfigError> {
    use crate::security::sasl::config as sasl;
    let to_error = |e: sasl::SaslConfigError| ConfigError::Sasl {
        key: e.key,
        reason: e.reason,
    };
    sasl::sasl_listeners(config, &crate::security::sasl::credentials::CredentialCache::new()).map_err(to_error)?;
    sasl::inter_broker_client(config).map_err(to_error)?;
    Ok(())
}

const ZK_SET_ACL: &str = "zookeeper.set.acl";
const ZK_SSL_ENABLE: &str = "zookeeper.ssl.client.enable";
const ZK_CNXN_SOCKET: &str = "zookeeper.clientCnxnSocket";
const ZK_JAAS_FILE: &str = "zookeeper.sasl.jaas.config.file";
const ZK_SASL_CLIENT: &str = "zookeeper.sasl.client";
const ZK_SASL_SECTION: &str = "zookeeper.sasl.clientconfig";
/// The one client socket class kastle's ZooKeeper client stands in for (Kafka needs it for TLS).
pub(crate) const ZK_NETTY_SOCKET: &str = "org.apache.zookeeper.ClientCnxnSocketNetty";
/// ZooKeeper's default socket class, which Kafka's configs often name; kastle's client is either.
const ZK_NIO_SOCKET: &str = "org.apache.zookeeper.ClientCnxnSocketNIO";

/// The `zookeeper.*` security keys, checked: TLS needs a truststore and refuses revocation
/// checks kastle cannot do, SASL needs a JAAS file, and `zookeeper.set.acl` needs an
/// authenticated session (SASL, or a TLS client certificate; Kafka's `SecurityException` at
/// start-up). The stores and the JAAS file are read when the session is opened (`zk::security`).
fn zk_security(v: &View) -> Result<ZkClientSecurity, ConfigError> {
    if let Some(socket) = v.opt_str(ZK_CNXN_SOCKET).filter(|s| !s.trim().is_empty()) {
        if socket != ZK_NETTY_SOCKET && socket != ZK_NIO_SOCKET {
            return Err(v.invalid(ZK_CNXN_SOCKET, format!("{ZK_NETTY_SOCKET}, {ZK_NIO_SOCKET} or unset")));
        }
    }
    let tls = zk_tls(v)?;
    let jaas_file = v.opt_str(ZK_JAAS_FILE).map(PathBuf::from);
    let sasl = match (v.value(ZK_SASL_CLIENT), &jaas_file) {
        (Value::Bool(false), _) => None,
        (Value::Bool(true), None) => {
            return Err(v.conflict(
                ZK_SASL_CLIENT,
                ZK_JAAS_FILE,
                "SASL to ZooKeeper needs the JAAS file holding its login section",
            ))
        }
        (_, Some(file)) => Some(ZkSaslClient {
            jaas_file: file.clone(),
            section: v.str(ZK_SASL_SECTION)?.to_string(),
        }),
        (_, None) => None,
    };
    let set_acl = v.bool(ZK_SET_ACL)?;
    let client_certificate = tls.as_ref().is_some_and(|t| t.has_keystore());
    if set_acl && sasl.is_none() && !client_certificate {
        return Err(v.conflict(
            ZK_SET_ACL,
            ZK_JAAS_FILE,
            "secure ACLs (CREATOR_ALL) need an authenticated ZooKeeper session: set \
             zookeeper.sasl.jaas.config.file to a JAAS file with a Client section, or \
             zookeeper.ssl.keystore.location to a client certificate (with \
             zookeeper.ssl.client.enable=true), or set zookeeper.set.acl=false",
        ));
    }
    Ok(ZkClientSecurity { sasl, tls, set_acl })
}

/// `zookeeper.ssl.client.enable` and the `zookeeper.ssl.*` keys it turns on.
fn zk_tls(v: &View) -> Result<Option<TlsSettings>, ConfigError> {
    for key in ["zookeeper.ssl.keystore.type", "zookeeper.ssl.truststore.type"] {
        if let Some(t) = v.opt_str(key).filter(|t| !t.trim().is_empty()) {
            if !["PEM", "PKCS12"].contains(&t.trim().to_ascii_uppercase().as_str()) {
                return Err(v.invalid(
                    key,
                    "PEM or PKCS12 (convert a JKS store with keytool -importkeystore -deststoretype PKCS12)",
                ));
            }
        }
    }
    if !v.bool(ZK_SSL_ENABLE)? {
        return Ok(None);
    }
    for (key, what) in [
        ("zookeeper.ssl.crl.enable", "certificate revocation lists"),
        ("zookeeper.ssl.ocsp.enable", "OCSP"),
    ] {
        if v.bool(key)? {
            return Err(v.invalid(key, format!("false: kastle's ZooKeeper client does not check {what}")));
        }
    }
    let algorithm_key = "zookeeper.ssl.endpoint.identification.algorithm";
    if let Some(a) = v.opt_str(algorithm_key).filter(|a| !a.trim().is_empty()) {
        if !a.trim().eq_ignore_ascii_case("HTTPS") {
            return Err(v.invalid(algorithm_key, "HTTPS (verify ZooKeeper's host name) or empty (do not)"));
        }
    }
    let settings =
        TlsSettings::resolve_zookeeper(&|key| value_text(v.value(key))).map_err(|e| v.invalid(&e.key, e.problem))?;
    if settings.truststore.location.is_none() {
        return Err(v.conflict(
            "zookeeper.ssl.truststore.location",
            ZK_SSL_ENABLE,
            "TLS to ZooKeeper needs a truststore (PEM or PKCS12) holding the certificate that \
             signed ZooKeeper's",
        ));
    }
    Ok(Some(settings))
}

/// The `authorizer.class.name` values that turn on the ZooKeeper ACL authorizer.
pub(crate) const ACL_AUTHORIZERS: &[&str] = &[
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
];

/// `authorizer.class.name`: empty is no authorization, either of Kafka's ZooKeeper authorizer
/// names is kastle's ACL authorizer, and anything else is refused (kastle loads no classes).
fn authorizer(v: &View) -> Result<bool, ConfigError> {
    let key = "authorizer.class.name";
    match v.opt_str(key).map(str::trim).unwrap_or("") {
        "" => Ok(false),
        name if ACL_AUTHORIZERS.contains(&name) => Ok(true),
        _ => Err(v.invalid(
            key,
            format!(
                "empty (no authorization) or the ZooKeeper ACL authorizer: {}",
                ACL_AUTHORIZERS.join(" or ")
            ),
        )),
    }
}

/// `super.users`: semicolon-separated `<type>:<name>` principals.
fn super_users(v: &View) -> Result<Vec<crate::security::KafkaPrincipal>, ConfigError> {
    let key = "super.users";
    v.opt_str(key)
        .unwrap_or("")
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse()
                .map_err(|_| v.invalid(key, "semicolon-separated principals, e.g. User:admin;User:alice"))
        })
        .collect()
}

fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Kafka (ZK mode): with id generation on, -1 ≤ id ≤ reserved.broker.max.id; off, id ≥ 0.
fn check_broker_id(v: &View, id: i32, generation: bool, reserved: i32) -> Result<(), ConfigError> {
    if generation && id > reserved {
        return Err(v.invalid(
            "broker.id",
            format!(
                "a value in [-1, {reserved}] (ids above reserved.broker.max.id are left for \
                 generated ids; raise reserved.broker.max.id or use -1)"
            ),
        ));
    }
    if !generation && id < 0 {
        return Err(v.invalid(
            "broker.id",
            "a value >= 0 (broker.id.generation.enable is false, so -1 cannot be generated)",
        ));
    }
    Ok(())
}

/// `log.dirs` if set, else `log.dir`, each split on commas (Kafka's `parseCsvList`).
fn log_dirs(v: &View) -> Result<Vec<PathBuf>, ConfigError> {
    let (key, dirs) = match v.opt_list("log.dirs") {
        Some(list) => ("log.dirs", list.to_vec()),
        None => ("log.dir", split_list(v.opt_str("log.dir").unwrap_or("").trim())),
    };
    let dirs: Vec<PathBuf> = dirs.into_iter().filter(|d| !d.is_empty()).map(PathBuf::from).collect();
    if dirs.is_empty() {
        return Err(v.invalid(key, "at least one log directory (set log.dirs or log.dir)"));
    }
    Ok(dirs)
}

fn endpoints(
    v: &View,
    key: &'static str,
    map: &BTreeMap<String, SecurityProtocol>,
    distinct_ports: bool,
) -> Result<Vec<EndPoint>, ConfigError> {
    let items = v.opt_list(key).unwrap_or(&[]);
    parse_listeners(items, map, distinct_ports).map_err(|problem| match problem {
        ListenerProblem::Malformed(expected) => v.invalid(key, expected),
        ListenerProblem::Unmapped(name) => v.conflict(
            key,
            MAP_KEY,
            format!(
                "listener \"{name}\" has no security protocol in {MAP_KEY} \"{}\"; add \
                 \"{name}:<PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL>\" to it",
                v.value(MAP_KEY)
            ),
        ),
    })
}

/// Every listener's protocol must be one kastle serves (`SecurityProtocol::is_served`). Advertised
/// listeners and the inter-broker listener are listeners by name, so this covers them too;
/// `security.inter.broker.protocol`, when set explicitly, is checked in `inter_broker_listener`.
fn check_served(v: &View, listeners: &[EndPoint]) -> Result<(), ConfigError> {
    let unserved: Vec<String> = listeners
        .iter()
        .filter(|e| !e.security_protocol.is_served())
        .map(|ep| {
            // A listener named after its protocol (`SSL://...`) gets it from the default map;
            // say where the protocol came from when a map entry decided it.
            let mapped = ep.listener_name != ep.security_protocol.name() || v.explicit(MAP_KEY);
            let via = if mapped {
                format!(" (mapped by {MAP_KEY}, {})", v.origin(MAP_KEY).phrase())
            } else {
                String::new()
            };
            format!(
                "listener \"{}\" ({ep}, {}) with security protocol {}{via}",
                ep.listener_name,
                v.origin("listeners").phrase(),
                ep.security_protocol
            )
        })
        .collect();
    if unserved.is_empty() {
        Ok(())
    } else {
        Err(ConfigError::UnservedProtocol { listeners: unserved })
    }
}

/// Every TLS listener (SSL, SASL_SSL) has a keystore, and its `ssl.*` values are ones kastle
/// serves (the stores themselves are read when the broker starts its listeners).
fn check_tls_listeners(v: &View, listeners: &[EndPoint]) -> Result<(), ConfigError> {
    for ep in listeners.iter().filter(|e| e.security_protocol.uses_tls()) {
        let failed = |problem: String| ConfigError::TlsListener {
            listener: ep.listener_name.clone(),
            protocol: ep.security_protocol,
            problem,
        };
        let lookup = |key: &str| crate::security::tls::settings::value_text(v.value(key));
        let settings = TlsSettings::resolve(&ep.listener_name, &lookup).map_err(|e| failed(e.to_string()))?;
        if !settings.has_keystore() {
            let prefix = crate::security::tls::settings::listener_prefix(&ep.listener_name);
            return Err(failed(format!(
                "no keystore: set {prefix}ssl.keystore.location or ssl.keystore.location (with \
                 ssl.keystore.type PEM or PKCS12), or ssl.keystore.key with ssl.keystore.certificate.chain"
            )));
        }
        crate::security::tls::principal::SslPrincipalMapper::parse(&settings.principal_mapping_rules)
            .map_err(|problem| failed(format!("ssl.principal.mapping.rules: {problem}")))?;
    }
    Ok(())
}

fn names(eps: &[EndPoint]) -> String {
    eps.iter()
        .map(|e| e.listener_name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_advertised(
    v: &View,
    advertised_key: &'static str,
    listeners: &[EndPoint],
    advertised: &[EndPoint],
) -> Result<(), ConfigError> {
    if advertised.iter().any(|e| e.host == "0.0.0.0") {
        let why = if advertised_key == "listeners" {
            "a routable host: advertised.listeners is unset, so listeners are advertised as-is \
             and cannot use the non-routable meta-address 0.0.0.0; set advertised.listeners"
        } else {
            "a routable host, not the non-routable meta-address 0.0.0.0"
        };
        return Err(v.invalid(advertised_key, why));
    }
    if let Some(stray) = advertised
        .iter()
        .find(|a| !listeners.iter().any(|l| l.listener_name == a.listener_name))
    {
        return Err(v.conflict(
            "advertised.listeners",
            "listeners",
            format!(
                "advertised listener \"{}\" is not one of the listeners ({}); advertised names \
                 must be a subset of listener names",
                stray.listener_name,
                names(listeners)
            ),
        ));
    }
    Ok(())
}

/// Kafka's `getInterBrokerListenerNameAndSecurityProtocol`: `inter.broker.listener.name`, else
/// the listener *named* after `security.inter.broker.protocol`. Either way it must be advertised.
fn inter_broker_listener(
    v: &View,
    advertised_key: &'static str,
    map: &BTreeMap<String, SecurityProtocol>,
    advertised: &[EndPoint],
) -> Result<String, ConfigError> {
    let named = v.opt_str(IBL_KEY).filter(|_| v.explicit(IBL_KEY));
    if named.is_some() && v.explicit(IBP_KEY) {
        return Err(v.conflict(
            IBL_KEY,
            IBP_KEY,
            "only one of them may be set; keep inter.broker.listener.name (it names the \
             listener) and remove security.inter.broker.protocol",
        ));
    }
    let (key, name) = match named {
        Some(n) => {
            let name = n.trim().to_ascii_uppercase();
            if !map.contains_key(&name) {
                return Err(v.conflict(
                    IBL_KEY,
                    MAP_KEY,
                    format!("listener \"{name}\" is not in {MAP_KEY} \"{}\"", v.value(MAP_KEY)),
                ));
            }
            (IBL_KEY, name)
        }
        None => {
            let name = v.str(IBP_KEY)?.to_string();
            if let Some(p) = name.parse::<SecurityProtocol>().ok().filter(|p| !p.is_served()) {
                let line = format!(
                    "the inter-broker listener with security protocol {p} (set by {IBP_KEY}, {})",
                    v.origin(IBP_KEY).phrase()
                );
                return Err(ConfigError::UnservedProtocol { listeners: vec![line] });
            }
            // The listener named after the protocol must have that protocol: asking for SSL
            // between brokers must not end in plaintext.
            if let (Ok(asked), Some(mapped)) = (name.parse::<SecurityProtocol>(), map.get(&name)) {
                if asked != *mapped {
                    return Err(v.conflict(
                        IBP_KEY,
                        MAP_KEY,
                        format!(
                            "the inter-broker listener with security protocol {asked} is the listener named \
                             \"{name}\", which {MAP_KEY} maps to {mapped}; set inter.broker.listener.name \
                             to a listener of protocol {asked}, or fix the map"
                        ),
                    ));
                }
            }
            (IBP_KEY, name)
        }
    };
    if !advertised.iter().any(|e| e.listener_name == name) {
        let (origin, hint) = if key == IBP_KEY {
            (
                " (named after security.inter.broker.protocol)",
                "; set inter.broker.listener.name to one of them",
            )
        } else {
            ("", "")
        };
        return Err(v.conflict(
            key,
            advertised_key,
            format!(
                "inter-broker listener \"{name}\"{origin} is not among the advertised \
                 listeners ({}){hint}",
                names(advertised)
            ),
        ));
    }
    // Brokers connect to each other as clients of this listener: over TLS they must be able to
    // verify each other's certificates (the login of a SASL listener is `check_sasl`'s).
    if let Some(p) = map
        .get(&name)
        .filter(|p| matches!(p, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl))
    {
        let failed = |problem: String| ConfigError::InterBrokerTls {
            listener: name.clone(),
            protocol: *p,
            problem,
        };
        let lookup = |key: &str| crate::security::tls::settings::value_text(v.value(key));
        let settings = TlsSettings::resolve(&name, &lookup).map_err(|e| failed(e.to_string()))?;
        if !settings.has_truststore() {
            let prefix = crate::security::tls::settings::listener_prefix(&name);
            return Err(failed(format!(
                "no truststore to verify the other brokers' certificates with: set \
                 {prefix}ssl.truststore.location or ssl.truststore.location (with ssl.truststore.type \
                 PEM or PKCS12), or ssl.truststore.certificates"
            )));
        }
    }
    Ok(name)
}

fn check_control_plane(
    v: &View,
    listeners: &[EndPoint],
    advertised: &[EndPoint],
    inter_broker: &str,
) -> Result<(), ConfigError> {
    let Some(name) = v.opt_str(CPL_KEY).map(|n| n.trim().to_ascii_uppercase()) else {
        return Ok(());
    };
    let listed = |eps: &[EndPoint]| eps.iter().any(|e| e.listener_name == name);
    if !listed(listeners) {
        let detail = format!("\"{name}\" is not one of the listeners ({})", names(listeners));
        return Err(v.conflict(CPL_KEY, "listeners", detail));
    }
    if !listed(advertised) {
        let detail = format!("\"{name}\" is not advertised ({})", names(advertised));
        return Err(v.conflict(CPL_KEY, "advertised.listeners", detail));
    }
    if name == inter_broker {
        let other = if v.explicit(IBL_KEY) { IBL_KEY } else { IBP_KEY };
        let detail = "the control-plane listener must differ from the inter-broker listener";
        return Err(v.conflict(CPL_KEY, other, detail));
    }
    Ok(())
}

fn check_replica_timing(v: &View) -> Result<(), ConfigError> {
    let wait = i64::from(v.int("replica.fetch.wait.max.ms")?);
    if wait > i64::from(v.int("replica.socket.timeout.ms")?) {
        return Err(v.conflict(
            "replica.fetch.wait.max.ms",
            "replica.socket.timeout.ms",
            "replica.socket.timeout.ms must be at least replica.fetch.wait.max.ms, or follower \
             fetches time out while the leader is still waiting for data",
        ));
    }
    if wait > v.long("replica.lag.time.max.ms")? {
        return Err(v.conflict(
            "replica.fetch.wait.max.ms",
            "replica.lag.time.max.ms",
            "replica.fetch.wait.max.ms must be at most replica.lag.time.max.ms, or followers of \
             quiet partitions keep dropping out of the ISR",
        ));
    }
    Ok(())
}

fn check_commit_acks(v: &View) -> Result<(), ConfigError> {
    let acks = v.int("offsets.commit.required.acks")?;
    let rf = v.int("offsets.topic.replication.factor")?;
    if acks < -1 || acks > rf {
        return Err(v.conflict(
            "offsets.commit.required.acks",
            "offsets.topic.replication.factor",
            format!("offsets.commit.required.acks must be in [-1, {rf}]"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod zk_security_tests {
    use crate::config::{ConfigError, KafkaConfig, ZkSaslClient};
    use crate::security::tls::settings::{StoreType, TlsVersion};

    fn load(pairs: &[(&str, &str)]) -> Result<KafkaConfig, ConfigError> {
        let mut all = vec![("zookeeper.connect", "zk:2181")];
        all.extend_from_slice(pairs);
        KafkaConfig::from_pairs(&all)
    }

    #[test]
    fn tls_to_zookeeper_needs_a_truststore_and_reads_the_zookeeper_keys() {
        let e = load(&[("zookeeper.ssl.client.enable", "true")]).expect_err("no truststore");
        assert!(e.to_string().contains("zookeeper.ssl.truststore.location"), "{e}");
        let c = load(&[
            ("zookeeper.ssl.client.enable", "true"),
            ("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem"),
            ("zookeeper.ssl.keystore.location", "/etc/kastle/broker.p12"),
            ("zookeeper.ssl.protocol", "TLSv1.3"),
            ("zookeeper.ssl.endpoint.identification.algorithm", ""),
            ("ssl.truststore.location", "/etc/kastle/listener-ca.pem"),
        ])
        .expect("valid");
        let tls = c.zookeeper_security().tls.as_ref().expect("tls on");
        assert_eq!(tls.truststore.location.as_deref(), Some("/etc/kastle/zk-ca.pem"));
        assert_eq!(tls.truststore.store_type, StoreType::Pem, "typed by the file name");
        assert_eq!(tls.keystore.store_type, StoreType::Pkcs12, "typed by the file name");
        assert_eq!(tls.keystore.key("password"), "zookeeper.ssl.keystore.password");
        assert_eq!(tls.protocols, vec![TlsVersion::Tls13, TlsVersion::Tls12]);
        assert!(!tls.verify_host_name);
        // A client certificate authenticates the session, so secure ACLs are allowed.
        load(&[
            ("zookeeper.ssl.client.enable", "true"),
            ("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem"),
            ("zookeeper.ssl.keystore.location", "/etc/kastle/broker.p12"),
            ("zookeeper.set.acl", "true"),
        ])
        .expect("set.acl with a client certificate");
    }

    #[test]
    fn tls_to_zookeeper_defaults_to_tls12_with_host_name_verification() {
        let c = load(&[
            ("zookeeper.ssl.client.enable", "true"),
            ("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem"),
        ])
        .expect("valid");
        let tls = c.zookeeper_security().tls.as_ref().expect("tls on");
        assert_eq!(tls.protocols, vec![TlsVersion::Tls12]);
        assert!(tls.verify_host_name);
        assert!(!tls.has_keystore());
        let off = load(&[("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem")]).expect("valid");
        assert_eq!(off.zookeeper_security().tls, None);
    }

    #[test]
    fn revocation_checks_and_unknown_algorithms_are_refused_naming_the_key() {
        let tls = [
            ("zookeeper.ssl.client.enable", "true"),
            ("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem"),
        ];
        for (key, value, expected) in [
            ("zookeeper.ssl.crl.enable", "true", "revocation lists"),
            ("zookeeper.ssl.ocsp.enable", "true", "OCSP"),
            ("zookeeper.ssl.endpoint.identification.algorithm", "LDAPS", "HTTPS"),
        ] {
            let mut pairs = tls.to_vec();
            pairs.push((key, value));
            let e = load(&pairs).expect_err(key);
            assert!(e.to_string().contains(key) && e.to_string().contains(expected), "{e}");
        }
    }

    #[test]
    fn only_zookeepers_socket_classes_are_accepted() {
        for class in ["ClientCnxnSocketNetty", "ClientCnxnSocketNIO"] {
            load(&[("zookeeper.clientCnxnSocket", &format!("org.apache.zookeeper.{class}"))]).expect(class);
        }
        let e = load(&[("zookeeper.clientCnxnSocket", "com.example.Socket")]).expect_err("unknown");
        assert!(e.to_string().contains("ClientCnxnSocketNetty"), "{e}");
    }

    #[test]
    fn jks_stores_are_refused() {
        let e = load(&[("zookeeper.ssl.keystore.type", "JKS")]).expect_err("jks");
        assert!(e.to_string().contains("PEM or PKCS12"), "{e}");
    }

    #[test]
    fn a_jaas_file_turns_sasl_on_with_the_client_section() {
        let c = load(&[
            ("zookeeper.sasl.jaas.config.file", "/etc/zk.jaas"),
            ("zookeeper.set.acl", "true"),
        ])
        .expect("valid");
        let s = c.zookeeper_security();
        assert_eq!(
            s.sasl,
            Some(ZkSaslClient {
                jaas_file: "/etc/zk.jaas".into(),
                section: "Client".into()
            })
        );
        assert!(s.set_acl);
        let off = load(&[
            ("zookeeper.sasl.jaas.config.file", "/etc/zk.jaas"),
            ("zookeeper.sasl.client", "false"),
        ])
        .expect("valid");
        assert_eq!(off.zookeeper_security().sasl, None);
        assert!(!load(&[]).expect("defaults").zookeeper_security().set_acl);
    }

    #[test]
    fn set_acl_or_sasl_without_a_jaas_file_is_refused() {
        let e = load(&[("zookeeper.set.acl", "true")]).expect_err("no login");
        assert!(e.to_string().contains("zookeeper.sasl.jaas.config.file"), "{e}");
        let e = load(&[("zookeeper.sasl.client", "true")]).expect_err("no file");
        assert!(e.to_string().contains("zookeeper.sasl.client"), "{e}");
    }
}

#[cfg(test)]
mod authorizer_tests {
    use crate::config::tests_sources::{err_text, pairs};

    #[test]
    fn either_acl_authorizer_name_turns_it_on_and_anything_else_is_refused() {
        let off = pairs(&[]).expect("defaults");
        assert!(!off.authorizer_enabled());
        assert!(!off.allow_everyone_if_no_acl_found());
        assert!(off.super_users().is_empty());
        for name in super::ACL_AUTHORIZERS {
            let on = pairs(&[("authorizer.class.name", name)]).expect("accepted");
            assert!(on.authorizer_enabled(), "{name}");
        }
        let e = err_text(pairs(&[("authorizer.class.name", "org.example.MyAuthorizer")]));
        assert!(
            e.contains("authorizer.class.name") && e.contains("kafka.security.authorizer.AclAuthorizer"),
            "{e}"
        );
    }

    #[test]
    fn super_users_are_semicolon_separated_principals() {
        let c = pairs(&[
            ("super.users", "User:admin; User:CN=broker,OU=eng"),
            ("allow.everyone.if.no.acl.found", "true"),
        ])
        .expect("accepted");
        let names: Vec<String> = c.super_users().iter().map(ToString::to_string).collect();
        assert_eq!(names, ["User:admin", "User:CN=broker,OU=eng"]);
        assert!(c.allow_everyone_if_no_acl_found());
        let e = err_text(pairs(&[("super.users", "admin")]));
        assert!(e.contains("super.users"), "{e}");
    }
}
