//! Which SASL mechanisms each SASL listener serves and with what, from the broker config:
//! `listener.name.<l>.sasl.enabled.mechanisms` (else `sasl.enabled.mechanisms`), PLAIN users
//! from `listener.name.<l>.plain.sasl.jaas.config` (else `sasl.jaas.config`), and the
//! inter-broker client's mechanism and login. Everything not served is a start-up error naming
//! the key: GSSAPI and OAUTHBEARER, unknown mechanisms, PLAIN without users.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::client::SaslClientConfig;
use super::credentials::CredentialCache;
use super::plain::PlainUsers;
use super::SaslMechanism;
use crate::config::{KafkaConfig, SecurityProtocol, Value};
use crate::security::jaas;

/// A SASL setting kastle cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct SaslConfigError {
    pub key: String,
    pub reason: String,
}

fn error(key: &str, reason: impl Into<String>) -> SaslConfigError {
    SaslConfigError {
        key: key.to_string(),
        reason: reason.into(),
    }
}

/// What one SASL listener serves.
#[derive(Debug)]
pub struct ListenerSasl {
    pub listener: String,
    pub mechanisms: Vec<SaslMechanism>,
    pub plain_users: PlainUsers,
    pub credentials: Arc<CredentialCache>,
    /// `connections.max.reauth.ms`; 0: sessions do not expire.
    pub max_reauth_ms: i64,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay: Duration,
}

/// `listener.name.<listener lower-case>.<suffix>`, Kafka's listener prefix.
fn listener_key(listener: &str, suffix: &str) -> String {
    format!("listener.name.{}.{suffix}", listener.to_ascii_lowercase())
}

/// A key's value as text, whatever its type (list keys joined by commas).
fn text(config: &KafkaConfig, key: &str) -> Option<String> {
    match config.get(key)? {
        Value::Str(s) | Value::Password(s) => Some(s.clone()),
        Value::List(l) => Some(l.join(",")),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The first of `keys` that is set, with its value.
fn first_set(config: &KafkaConfig, keys: &[String]) -> Option<(String, String)> {
    keys.iter().find_map(|k| text(config, k).map(|v| (k.clone(), v)))
}

/// The enabled mechanisms of `listener`, checked.
pub fn enabled_mechanisms(config: &KafkaConfig, listener: &str) -> Result<Vec<SaslMechanism>, SaslConfigError> {
    let keys = [
        listener_key(listener, "sasl.enabled.mechanisms"),
        "sasl.enabled.mechanisms".to_string(),
    ];
    let (key, value) = first_set(config, &keys).unwrap_or_else(|| (keys[1].clone(), "GSSAPI".to_string()));
    let mut out = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match SaslMechanism::from_name(name) {
            Some(m) => out.push(m),
            None if name == "GSSAPI" || name == "OAUTHBEARER" => {
                return Err(error(
                    &key,
                    format!(
                    "{name} is not served by kastle (listener {listener}); use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                ),
                ))
            }
            None => {
                return Err(error(
                    &key,
                    format!("unknown SASL mechanism {name:?}; expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(error(
            &key,
            format!("no SASL mechanism enabled for listener {listener}"),
        ));
    }
    Ok(out)
}

/// The login modules of `listener`'s jaas config for `mechanism`, and the key they came from.
fn jaas_modules(
    config: &KafkaConfig,
    listener: &str,
    mechanism: SaslMechanism,
) -> Result<Option<(String, Vec<jaas::LoginModule>)>, SaslConfigError> {
    let keys = [
        listener_key(
            listener,
            &format!("{}.sasl.jaas.config", mechanism.name().to_ascii_lowercase()),
        ),
        "sasl.jaas.config".to_string(),
    ];
    let Some((key, value)) = first_set(config, &keys) else {
        return Ok(None);
    };
    let modules = jaas::parse_modules(&value).map_err(|e| error(&key, e.to_string()))?;
    Ok(Some((key, modules)))
}

/// What `listener` (a SASL listener) serves; an error names the key to fix.
pub fn listener_sasl(
    config: &KafkaConfig,
    listener: &str,
    credentials: Arc<CredentialCache>,
) -> Result<ListenerSasl, SaslConfigError> {
    let mechanisms = enabled_mechanisms(config, listener)?;
    let mut plain_users = PlainUsers::default();
    if mechanisms.contains(&SaslMechanism::Plain) {
        let expected = listener_key(listener, "plain.sasl.jaas.config");
        let Some((key, modules)) = jaas_modules(config, listener, SaslMechanism::Plain)? else {
            return Err(error(
                &expected,
                format!(
                    "PLAIN is enabled on listener {listener} but has no users: set it to \
                     org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>=\"<password>\";"
                ),
            ));
        };
        let module = modules.iter().find(|m| m.simple_name() == "PlainLoginModule");
        plain_users = module.map(|m| PlainUsers::from_options(&m.options)).unwrap_or_default();
        if plain_users.is_empty() {
            return Err(error(
                &key,
                format!("PLAIN is enabled on listener {listener} but its PlainLoginModule has no user_<name>=\"<password>\" option"),
            ));
        }
    }
    Ok(ListenerSasl {
        listener: listener.to_string(),
        mechanisms,
        plain_users,
        credentials,
        max_reauth_ms: config.get_i64("connections.max.reauth.ms").unwrap_or(0).max(0),
        failed_authentication_delay: Duration::from_millis(
            config
                .get_i64("connection.failed.authentication.delay.ms")
                .unwrap_or(100)
                .max(0) as u64,
        ),
    })
}

/// Every SASL listener's settings, by listener name; errors if any is not served.
pub fn sasl_listeners(
    config: &KafkaConfig,
    credentials: &Arc<CredentialCache>,
) -> Result<BTreeMap<String, Arc<ListenerSasl>>, SaslConfigError> {
    let mut out = BTreeMap::new();
    for endpoint in config.listeners() {
        if matches!(
            endpoint.security_protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        ) {
            let sasl = listener_sasl(config, &endpoint.listener_name, credentials.clone())?;
            out.insert(endpoint.listener_name.clone(), Arc::new(sasl));
        }
    }
    Ok(out)
}

/// How the broker logs in to the other brokers' inter-broker listener; `None` when that
/// listener is not a SASL one.
pub fn inter_broker_client(config: &KafkaConfig) -> Result<Option<SaslClientConfig>, SaslConfigError> {
    let listener = config.inter_broker_listener_name();
    let is_sasl = config
        .listener_security_protocol_map()
        .get(listener)
        .is_some_and(|p| matches!(p, SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl));
    if !is_sasl {
        return Ok(None);
    }
    const KEY: &str = "sasl.mechanism.inter.broker.protocol";
    let name = text(config, KEY).unwrap_or_else(|| "GSSAPI".to_string());
    let mechanism = SaslMechanism::from_name(name.trim()).ok_or_else(|| {
        error(
            KEY,
            format!("{name} is not served by kastle; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
        )
    })?;
    let enabled = enabled_mechanisms(config, listener)?;
    if !enabled.contains(&mechanism) {
        return Err(error(
            KEY,
            format!("{mechanism} is not among the mechanisms enabled on the inter-broker listener {listener}"),
        ));
    }
    let expected = listener_key(
        listener,
        &format!("{}.sasl.jaas.config", mechanism.name().to_ascii_lowercase()),
    );
    let Some((key, modules)) = jaas_modules(config, listener, mechanism)? else {
        return Err(error(
            &expected,
            "the inter-broker login needs username=\"…\" password=\"…\" in this jaas config",
        ));
    };
    let login = modules
        .iter()
        .find_map(|m| Some((m.option("username")?.to_string(), m.option("password")?.to_string())));
    let Some((username, password)) = login else {
        return Err(error(
            &key,
            "the inter-broker login needs username=\"…\" password=\"…\" in this jaas config",
        ));
    };
    Ok(Some(SaslClientConfig {
        mechanism,
        username,
        password,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> KafkaConfig {
        let mut all = vec![
            ("zookeeper.connect", "localhost:2181"),
            // The inter-broker listener is the PLAINTEXT one unless a test names another.
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
        ];
        all.extend_from_slice(pairs);
        KafkaConfig::from_pairs(&all).expect("valid config")
    }

    const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;

    #[test]
    fn plain_users_come_from_the_listener_jaas_config() {
        let c = config(&[
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", PLAIN_JAAS),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
        ]);
        let s = listener_sasl(&c, "SASL_PLAINTEXT", CredentialCache::new()).expect("served");
        assert_eq!(
            s.mechanisms,
            [
                SaslMechanism::Plain,
                SaslMechanism::Scram(super::super::ScramMechanism::Sha256)
            ]
        );
        assert_eq!(s.plain_users.authenticate(b"\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(
            inter_broker_client(&c),
            Ok(None),
            "the inter-broker listener is PLAINTEXT"
        );
    }

    #[test]
    fn the_inter_broker_login_comes_from_the_listener_jaas_config_for_the_mechanism() {
        let scram = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-secret";"#;
        let c = config(&[
            ("inter.broker.listener.name", "SASL_PLAINTEXT"),
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
            ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", PLAIN_JAAS),
            ("listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config", scram),
        ]);
        let login = inter_broker_client(&c).expect("served").expect("a SASL listener");
        assert_eq!(
            login.mechanism,
            SaslMechanism::Scram(super::super::ScramMechanism::Sha512)
        );
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("broker", "b-secret")
        );
        // The fallback is sasl.jaas.config.
        let c = config(&[
            ("inter.broker.listener.name", "SASL_PLAINTEXT"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("sasl.jaas.config", PLAIN_JAAS),
        ]);
        let login = inter_broker_client(&c).expect("served").expect("a SASL listener");
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("admin", "admin-secret")
        );
    }

    /// The broker config refuses them at load (validate's `check_sasl`), naming the key.
    fn refusal(pairs: &[(&str, &str)]) -> (String, String) {
        let mut all = vec![
            ("zookeeper.connect", "localhost:2181"),
            // The inter-broker listener is the PLAINTEXT one unless a test names another.
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
        ];
        all.extend_from_slice(pairs);
        match KafkaConfig::from_pairs(&all) {
            Err(crate::config::ConfigError::Sasl { key, reason }) => (key, reason),
            other => panic!("expected a SASL refusal, got {other:?}"),
        }
    }

    #[test]
    fn unserved_mechanisms_and_plain_without_users_name_the_key() {
        let (key, reason) = refusal(&[]);
        assert_eq!(key, "sasl.enabled.mechanisms");
        assert!(reason.contains("GSSAPI"), "{reason}");
        let (key, reason) = refusal(&[("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "OAUTHBEARER")]);
        assert_eq!(key, "listener.name.sasl_plaintext.sasl.enabled.mechanisms");
        assert!(reason.contains("OAUTHBEARER"), "{reason}");
        let (key, _) = refusal(&[("sasl.enabled.mechanisms", "PLAIN")]);
        assert_eq!(key, "listener.name.sasl_plaintext.plain.sasl.jaas.config");
    }
}
