//! The ZooKeeper session's security settings: the SASL DIGEST-MD5 login read from the JAAS file's
//! client section (`zookeeper.sasl.jaas.config.file`, section `zookeeper.sasl.clientconfig`,
//! parsed by the shared [`crate::security::jaas`] parser), TLS from the `zookeeper.ssl.*` keys
//! (the rustls config built by [`crate::security::tls::client`] from the same keystore and
//! truststore loaders as the listeners), and `zookeeper.set.acl`. Every place that opens a
//! ZooKeeper session builds one of these and passes it to [`super::ZkSession::connect_secured`].
//!
//! Reading the files is the only I/O here ([`ZkSecurity::load`]); [`ZkSecurity::from_jaas`] is
//! the pure part. Errors name the config key to fix.

use std::fmt;
use std::sync::Arc;

use crate::config::{ZkClientSecurity, ZkSaslClient};
use crate::security::jaas;
use crate::security::tls::client::build_zookeeper_client_config;

const JAAS_FILE_KEY: &str = "zookeeper.sasl.jaas.config.file";
const SECTION_KEY: &str = "zookeeper.sasl.clientconfig";
/// ZooKeeper's `DigestLoginModule` (the class Kafka's docs put in the `Client` section).
const DIGEST_LOGIN_MODULE: &str = "DigestLoginModule";

/// A DIGEST-MD5 login. `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct DigestCredentials {
    pub username: String,
    pub password: String,
}

impl fmt::Debug for DigestCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DigestCredentials")
            .field("username", &self.username)
            .field("password", &"[hidden]")
            .finish()
    }
}

/// TLS to ZooKeeper: the rustls client config every connection of the session uses.
#[derive(Debug, Clone)]
pub struct ZkTls {
    pub config: Arc<rustls::ClientConfig>,
}

impl PartialEq for ZkTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config)
    }
}

impl Eq for ZkTls {}

/// How a ZooKeeper session authenticates and which ACLs its creates carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZkSecurity {
    /// SASL DIGEST-MD5; `None` for an anonymous session.
    pub digest: Option<DigestCredentials>,
    /// TLS (`zookeeper.ssl.client.enable`); `None` for plaintext.
    pub tls: Option<ZkTls>,
    /// `zookeeper.set.acl`: new znodes get Kafka's secure ACLs ([`super::acl::default_acl`]).
    pub set_acl: bool,
}

/// Why the ZooKeeper security settings cannot be used; always names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct ZkSecurityError {
    pub key: String,
    pub reason: String,
}

impl ZkSecurity {
    /// No SASL, open ACLs (what a session had before these settings existed).
    pub fn anonymous() -> ZkSecurity {
        ZkSecurity::default()
    }

    /// Reads the JAAS file named by the config, if SASL is on.
    pub fn load(config: &ZkClientSecurity) -> Result<ZkSecurity, ZkSecurityError> {
        let digest = match &config.sasl {
            None => None,
            Some(sasl) => {
                let text = std::fs::read_to_string(&sasl.jaas_file).map_err(|e| ZkSecurityError {
                    key: JAAS_FILE_KEY.into(),
                    reason: format!("cannot read the JAAS file {}: {e}", sasl.jaas_file.display()),
                })?;
                Some(credentials(&text, sasl)?)
            }
        };
        let tls = match &config.tls {
            None => None,
            Some(settings) => Some(ZkTls {
                config: build_zookeeper_client_config(settings).map_err(|e| ZkSecurityError {
                    key: e.key,
                    reason: e.problem,
                })?,
            }),
        };
        Ok(ZkSecurity {
            digest,
            tls,
            set_acl: config.set_acl,
        })
    }

    /// The pure part of [`Self::load`]: `text` is the JAAS file's content.
    pub fn from_jaas(text: &str, sasl: &ZkSaslClient, set_acl: bool) -> Result<ZkSecurity, ZkSecurityError> {
        Ok(ZkSecurity {
            digest: Some(credentials(text, sasl)?),
            tls: None,
            set_acl,
        })
    }
}

fn credentials(text: &str, sasl: &ZkSaslClient) -> Result<DigestCredentials, ZkSecurityError> {
    let file = sasl.jaas_file.display();
    let sections = jaas::parse_file(text).map_err(|e| ZkSecurityError {
        key: JAAS_FILE_KEY.into(),
        reason: format!("{file}: {e}"),
    })?;
    let Some(modules) = sections.get(&sasl.section) else {
        let found: Vec<&str> = sections.keys().map(String::as_str).collect();
        return Err(ZkSecurityError {
            key: SECTION_KEY.into(),
            reason: format!(
                "the JAAS file {file} has no section \"{}\" (it has: {}); add `{} {{ \
                 org.apache.zookeeper.server.auth.DigestLoginModule required username=\"...\" \
                 password=\"...\"; }};` or name an existing section",
                sasl.section,
                if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(", ")
                },
                sasl.section
            ),
        });
    };
    let module = modules
        .iter()
        .find(|m| m.simple_name() == DIGEST_LOGIN_MODULE)
        .ok_or_else(|| ZkSecurityError {
            key: SECTION_KEY.into(),
            reason: format!(
                "section \"{}\" of {file} has no {DIGEST_LOGIN_MODULE} (kastle authenticates to \
                 ZooKeeper with SASL DIGEST-MD5 only; found: {})",
                sasl.section,
                modules.iter().map(|m| m.class.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })?;
    let option = |name: &str| {
        module.option(name).map(str::to_string).ok_or_else(|| ZkSecurityError {
            key: SECTION_KEY.into(),
            reason: format!(
                "the {DIGEST_LOGIN_MODULE} in section \"{}\" of {file} has no {name}",
                sasl.section
            ),
        })
    };
    Ok(DigestCredentials {
        username: option("username")?,
        password: option("password")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sasl(section: &str) -> ZkSaslClient {
        ZkSaslClient {
            jaas_file: "/etc/kastle/zk_jaas.conf".into(),
            section: section.into(),
        }
    }

    const FILE: &str = r#"
        // the broker's login to ZooKeeper
        Client {
            org.apache.zookeeper.server.auth.DigestLoginModule required
            username="kafka"
            password="s3cret";
        };
        KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required; };
    "#;

    #[test]
    fn the_client_section_gives_the_digest_login() {
        let s = ZkSecurity::from_jaas(FILE, &sasl("Client"), true).expect("valid");
        let digest = s.digest.expect("digest");
        assert_eq!(digest.username, "kafka");
        assert_eq!(digest.password, "s3cret");
        assert!(s.set_acl);
        assert!(!format!("{digest:?}").contains("s3cret"));
    }

    #[test]
    fn a_missing_section_names_the_key_and_the_sections_found() {
        let e = ZkSecurity::from_jaas(FILE, &sasl("ZkClient"), false).expect_err("no such section");
        assert_eq!(e.key, "zookeeper.sasl.clientconfig");
        assert!(e.to_string().contains("\"ZkClient\""), "{e}");
        assert!(e.to_string().contains("Client, KafkaServer"), "{e}");
    }

    #[test]
    fn a_section_without_digest_login_or_password_is_refused() {
        let e = ZkSecurity::from_jaas(FILE, &sasl("KafkaServer"), false).expect_err("not digest");
        assert!(e.to_string().contains("DigestLoginModule"), "{e}");
        let no_pw = "Client { org.apache.zookeeper.server.auth.DigestLoginModule required username=\"u\"; };";
        let e = ZkSecurity::from_jaas(no_pw, &sasl("Client"), false).expect_err("no password");
        assert!(e.to_string().contains("has no password"), "{e}");
    }

    #[test]
    fn an_unreadable_file_names_the_file_key() {
        let config = ZkClientSecurity {
            sasl: Some(ZkSaslClient {
                jaas_file: "/nonexistent/kastle/jaas.conf".into(),
                section: "Client".into(),
            }),
            tls: None,
            set_acl: false,
        };
        let e = ZkSecurity::load(&config).expect_err("missing file");
        assert_eq!(e.key, "zookeeper.sasl.jaas.config.file");
        assert!(e.to_string().contains("/nonexistent/kastle/jaas.conf"), "{e}");
    }
}
