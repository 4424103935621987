//! Per-listener TLS settings, resolved as Kafka resolves them: `listener.name.<l>.ssl.*` first
//! (the listener name lower-cased), then `ssl.*`. Pure: the config is a lookup function, so the
//! same resolution serves the static config at start-up and a dynamic update overlaid on it.
//! An unknown value is an error naming the key and the values kastle serves.

use std::fmt;

use crate::config::{KafkaConfig, Value};

/// A TLS setting kastle cannot use, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct TlsConfigError {
    /// The config key at fault, listener prefix included when that is where it was set.
    pub key: String,
    /// What is wrong, and what is expected.
    pub problem: String,
}

impl TlsConfigError {
    pub fn new(key: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            problem: problem.into(),
        }
    }
}

/// `ssl.keystore.type` / `ssl.truststore.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    Pem,
    Pkcs12,
    /// Accepted as a value so the error can say how to convert; never loaded.
    Jks,
}

impl fmt::Display for StoreType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreType::Pem => "PEM",
            StoreType::Pkcs12 => "PKCS12",
            StoreType::Jks => "JKS",
        })
    }
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A protocol of `ssl.enabled.protocols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// One store's keys as resolved for a listener. `keys` records, per suffix (`location`,
/// `password`, ...), the config key the value came from (or would, when unset), for errors.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreSpec {
    keys: Vec<(&'static str, String)>,
    pub store_type: StoreType,
    pub location: Option<String>,
    pub password: Option<String>,
    /// `ssl.key.password` (keystores only).
    pub key_password: Option<String>,
    /// `ssl.keystore.key` (keystores only).
    pub inline_key: Option<String>,
    /// `ssl.keystore.certificate.chain`, or `ssl.truststore.certificates`.
    pub inline_chain: Option<String>,
}

impl fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Passwords and inline keys are secrets: show only whether they are set.
        f.debug_struct("StoreSpec")
            .field("store_type", &self.store_type)
            .field("location", &self.location)
            .field("password", &self.password.as_ref().map(|_| "[hidden]"))
            .field("inline_key", &self.inline_key.as_ref().map(|_| "[hidden]"))
            .finish_non_exhaustive()
    }
}

impl StoreSpec {
    /// The config key for `suffix` (`location`, `password`, `type`, `key`, `certificate.chain`,
    /// `certificates`, `key.password`) as this listener reads it.
    pub fn key(&self, suffix: &str) -> String {
        self.keys
            .iter()
            .find(|(s, _)| *s == suffix)
            .map(|(_, k)| k.clone())
            .unwrap_or_else(|| suffix.to_string())
    }
}

/// A listener's TLS settings (nothing loaded yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// Upper-cased, as listeners are named.
    pub listener: String,
    pub keystore: StoreSpec,
    pub truststore: StoreSpec,
    pub client_auth: ClientAuth,
    pub protocols: Vec<TlsVersion>,
    /// `ssl.cipher.suites` as given; `None` means every suite the provider has.
    pub cipher_suites: Option<Vec<String>>,
    /// `ssl.principal.mapping.rules`.
    pub principal_mapping_rules: String,
    /// `ssl.endpoint.identification.algorithm` is `https` (clients verify the host name).
    pub verify_host_name: bool,
}

/// Reads config values by key; `None` for unset (null) keys.
pub type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The text of `key` in `config` (passwords included, lists comma-joined); `None` when unset.
pub fn config_value(config: &KafkaConfig, key: &str) -> Option<String> {
    value_text(config.get(key)?)
}

/// A config value as text (passwords included, lists comma-joined); `None` for null.
pub fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Str(s) | Value::Password(s) => Some(s.clone()),
        Value::List(items) => Some(items.join(",")),
        other => Some(other.to_string()),
    }
}

/// `listener.name.<listener>.` as Kafka spells it (lower case).
pub fn listener_prefix(listener: &str) -> String {
    format!("listener.name.{}.", listener.to_ascii_lowercase())
}

impl TlsSettings {
    /// Resolves `listener`'s settings: the listener-prefixed key, then the plain one.
    pub fn resolve(listener: &str, lookup: &Lookup<'_>) -> Result<TlsSettings, TlsConfigError> {
        let prefix = listener_prefix(listener);
        // (value, the key it came from; the plain key when unset)
        let get = |key: &str| -> (Option<String>, String) {
            let prefixed = format!("{prefix}{key}");
            if let Some(v) = lookup(&prefixed).filter(|v| !v.trim().is_empty()) {
                return (Some(v), prefixed);
            }
            (lookup(key).filter(|v| !v.trim().is_empty()), key.to_string())
        };
        Self::resolve_keys(listener, &get)
    }

    /// The broker's ZooKeeper client settings, from Kafka's `zookeeper.ssl.*` keys (no listener
    /// prefix, no fallback to `ssl.*`, no inline PEM). `zookeeper.ssl.enabled.protocols` unset
    /// means what Java enables for `zookeeper.ssl.protocol`: TLSv1.2 alone, or TLSv1.3 and
    /// TLSv1.2. `listener` is `ZOOKEEPER` (for logs).
    pub fn resolve_zookeeper(lookup: &Lookup<'_>) -> Result<TlsSettings, TlsConfigError> {
        let get = |key: &str| -> (Option<String>, String) {
            let zk_key = format!("zookeeper.{key}");
            let value = lookup(&zk_key).filter(|v| !v.trim().is_empty());
            if value.is_none() && key.ends_with("store.type") {
                // ZooKeeper's X509Util: an unset type comes from the file name.
                let location = lookup(&zk_key.replace(".type", ".location")).unwrap_or_default();
                let lower = location.trim().to_ascii_lowercase();
                let detected = if lower.ends_with(".pem") || lower.ends_with(".crt") {
                    Some("PEM".to_string())
                } else if lower.ends_with(".p12") || lower.ends_with(".pfx") {
                    Some("PKCS12".to_string())
                } else {
                    None
                };
                return (detected, zk_key);
            }
            if value.is_none() && key == "ssl.enabled.protocols" {
                let protocol_key = "zookeeper.ssl.protocol".to_string();
                let protocol = lookup(&protocol_key).filter(|v| !v.trim().is_empty());
                let enabled = protocol.map(|p| match p.trim() {
                    "TLSv1.3" => "TLSv1.3,TLSv1.2".to_string(),
                    other => other.to_string(),
                });
                return (enabled, protocol_key);
            }
            (value, zk_key)
        };
        Self::resolve_keys("ZOOKEEPER", &get)
    }

    fn resolve_keys(
        listener: &str,
        get: &dyn Fn(&str) -> (Option<String>, String),
    ) -> Result<TlsSettings, TlsConfigError> {
        let store = |base: &str, extra: &[(&'static str, &str)]| -> Result<StoreSpec, TlsConfigError> {
            let mut keys = Vec::new();
            let mut take = |suffix: &'static str, key: &str| {
                let (value, from) = get(key);
                keys.push((suffix, from));
                value
            };
            let type_key = format!("{base}.type");
            let store_type = take("type", &type_key);
            let location = take("location", &format!("{base}.location"));
            let password = take("password", &format!("{base}.password"));
            let mut extras = Vec::new();
            for (suffix, key) in extra {
                extras.push(take(suffix, key));
            }
            let store_type = parse_store_type(store_type.as_deref(), &key_of(&keys, "type"))?;
            let mut extras = extras.into_iter();
            let mut next = || extras.next().flatten();
            let (key_password, inline_key, inline_chain) = if base == "ssl.keystore" {
                (next(), next(), next())
            } else {
                (None, None, next())
            };
            Ok(StoreSpec {
                keys,
                store_type,
                location,
                password,
                key_password,
                inline_key,
                inline_chain,
            })
        };
        let keystore = store(
            "ssl.keystore",
            &[
                ("key.password", "ssl.key.password"),
                ("key", "ssl.keystore.key"),
                ("certificate.chain", "ssl.keystore.certificate.chain"),
            ],
        )?;
        let truststore = store("ssl.truststore", &[("certificates", "ssl.truststore.certificates")])?;

        let (auth, auth_key) = get("ssl.client.auth");
        let client_auth = match auth.as_deref().map(|a| a.trim().to_ascii_lowercase()).as_deref() {
            None | Some("none") => ClientAuth::None,
            Some("requested") => ClientAuth::Requested,
            Some("required") => ClientAuth::Required,
            Some(other) => {
                return Err(TlsConfigError::new(
                    auth_key,
                    format!("\"{other}\" is not one of none, requested, required"),
                ))
            }
        };

        let (protocols, protocols_key) = get("ssl.enabled.protocols");
        let protocols = parse_protocols(protocols.as_deref().unwrap_or("TLSv1.2,TLSv1.3"), &protocols_key)?;

        let (suites, _) = get("ssl.cipher.suites");
        let cipher_suites = suites.map(|s| split(&s));

        let (rules, _) = get("ssl.principal.mapping.rules");
        let (algorithm, _) = get("ssl.endpoint.identification.algorithm");
        Ok(TlsSettings {
            listener: listener.to_ascii_uppercase(),
            keystore,
            truststore,
            client_auth,
            protocols,
            cipher_suites,
            principal_mapping_rules: rules.unwrap_or_else(|| "DEFAULT".to_string()),
            verify_host_name: algorithm.is_some_and(|a| a.trim().eq_ignore_ascii_case("https")),
        })
    }

    /// Resolves `listener` from the broker config.
    pub fn from_config(config: &KafkaConfig, listener: &str) -> Result<TlsSettings, TlsConfigError> {
        Self::resolve(listener, &|key| config_value(config, key))
    }

    /// Whether a keystore is configured at all (a file or inline PEM).
    pub fn has_keystore(&self) -> bool {
        self.keystore.location.is_some() || self.keystore.inline_key.is_some()
    }

    /// Whether a truststore is configured at all (a file or inline PEM certificates).
    pub fn has_truststore(&self) -> bool {
        self.truststore.location.is_some() || self.truststore.inline_chain.is_some()
    }
}

fn key_of(keys: &[(&'static str, String)], suffix: &str) -> String {
    keys.iter()
        .find(|(s, _)| *s == suffix)
        .map(|(_, k)| k.clone())
        .unwrap_or_default()
}

fn split(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn parse_store_type(value: Option<&str>, key: &str) -> Result<StoreType, TlsConfigError> {
    match value.map(|v| v.trim().to_ascii_uppercase()).as_deref() {
        Some("PEM") => Ok(StoreType::Pem),
        Some("PKCS12") => Ok(StoreType::Pkcs12),
        // Kafka's default type; loading it says how to convert.
        None | Some("JKS") => Ok(StoreType::Jks),
        Some(other) => Err(TlsConfigError::new(
            key,
            format!("\"{other}\" is not a store type kastle reads: expected PEM or PKCS12"),
        )),
    }
}

fn parse_protocols(value: &str, key: &str) -> Result<Vec<TlsVersion>, TlsConfigError> {
    let mut versions = Vec::new();
    for name in split(value) {
        let version = match name.as_str() {
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.3" => TlsVersion::Tls13,
            other => {
                return Err(TlsConfigError::new(
                    key,
                    format!("\"{other}\" is not a protocol kastle serves: expected TLSv1.2 and/or TLSv1.3"),
                ))
            }
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        return Err(TlsConfigError::new(key, "at least one of TLSv1.2, TLSv1.3"));
    }
    Ok(versions)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn resolve(pairs: &[(&str, &str)]) -> Result<TlsSettings, TlsConfigError> {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TlsSettings::resolve("INTERNAL", &|k| map.get(k).cloned())
    }

    #[test]
    fn listener_keys_come_before_plain_ones() {
        let s = resolve(&[
            ("ssl.keystore.location", "/plain.p12"),
            ("listener.name.internal.ssl.keystore.location", "/listener.p12"),
            ("ssl.keystore.type", "pkcs12"),
            ("ssl.client.auth", "required"),
        ])
        .expect("valid");
        assert_eq!(s.keystore.location.as_deref(), Some("/listener.p12"));
        assert_eq!(
            s.keystore.key("location"),
            "listener.name.internal.ssl.keystore.location"
        );
        assert_eq!(s.keystore.store_type, StoreType::Pkcs12);
        assert_eq!(s.keystore.key("type"), "ssl.keystore.type");
        assert_eq!(s.client_auth, ClientAuth::Required);
        assert_eq!(s.protocols, vec![TlsVersion::Tls12, TlsVersion::Tls13]);
        assert!(s.has_keystore());
        assert!(!resolve(&[]).expect("valid").has_keystore());
    }

    #[test]
    fn unknown_values_name_the_key_and_the_expected_values() {
        let e = resolve(&[("listener.name.internal.ssl.client.auth", "maybe")]).expect_err("refused");
        assert_eq!(e.key, "listener.name.internal.ssl.client.auth");
        assert!(e.problem.contains("none, requested, required"), "{e}");
        let e = resolve(&[("ssl.enabled.protocols", "TLSv1.1,TLSv1.2")]).expect_err("refused");
        assert_eq!(e.key, "ssl.enabled.protocols");
        assert!(e.problem.contains("TLSv1.2 and/or TLSv1.3"), "{e}");
        let e = resolve(&[("ssl.truststore.type", "BKS")]).expect_err("refused");
        assert_eq!(e.key, "ssl.truststore.type");
        assert!(e.problem.contains("PEM or PKCS12"), "{e}");
    }
}
