//! The rustls side of a TLS listener: the `ServerConfig` built from a listener's
//! [`TlsSettings`] with the ring provider passed explicitly (never a process-wide default), and
//! [`TlsServer`], which a listener's acceptor holds: the current config (swapped whole on a
//! dynamic keystore update, so new connections get the new certificate and existing ones keep
//! theirs), the principal mapper, and the handshake with its deadline.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::keys::{load_keystore, load_truststore};
use super::principal::{subject_dn, SslPrincipalMapper};
use super::settings::{ClientAuth, TlsConfigError, TlsSettings, TlsVersion};
use crate::security::KafkaPrincipal;

/// The ring provider with only the suites `ssl.cipher.suites` names (all when unset).
pub fn provider(settings: &TlsSettings) -> Result<CryptoProvider, TlsConfigError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(names) = &settings.cipher_suites {
        let mut chosen = Vec::new();
        for name in names {
            let suite = provider
                .cipher_suites
                .iter()
                .find(|s| suite_name(s) == name.trim().to_ascii_uppercase())
                .ok_or_else(|| {
                    TlsConfigError::new(
                        "ssl.cipher.suites",
                        format!(
                            "\"{name}\" is not a cipher suite kastle serves: expected IANA names among {}",
                            provider
                                .cipher_suites
                                .iter()
                                .map(suite_name)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                })?;
            chosen.push(*suite);
        }
        provider.cipher_suites = chosen;
    }
    for version in &settings.protocols {
        let wanted = rustls_version(*version);
        if !provider.cipher_suites.iter().any(|s| s.version() == wanted) {
            return Err(TlsConfigError::new(
                "ssl.cipher.suites",
                format!(
                    "at least one {:?} suite, since ssl.enabled.protocols has it",
                    wanted.version
                ),
            ));
        }
    }
    Ok(provider)
}

/// The IANA (and Kafka/Java) name of a suite, e.g. `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`.
fn suite_name(suite: &rustls::SupportedCipherSuite) -> String {
    format!("{:?}", suite.suite())
}

pub(crate) fn rustls_version(version: TlsVersion) -> &'static SupportedProtocolVersion {
    match version {
        TlsVersion::Tls12 => &rustls::version::TLS12,
        TlsVersion::Tls13 => &rustls::version::TLS13,
    }
}

pub(crate) fn versions(settings: &TlsSettings) -> Vec<&'static SupportedProtocolVersion> {
    settings.protocols.iter().map(|v| rustls_version(*v)).collect()
}

pub(crate) fn root_store(
    certs: Vec<rustls_pki_types::CertificateDer<'static>>,
    key: &str,
) -> Result<RootCertStore, TlsConfigError> {
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| TlsConfigError::new(key, format!("a trusted certificate rustls accepts: {e}")))?;
    }
    Ok(roots)
}

/// Builds a listener's `ServerConfig`, reading its keystore and truststore.
pub fn build_server_config(settings: &TlsSettings) -> Result<Arc<ServerConfig>, TlsConfigError> {
    let provider = Arc::new(provider(settings)?);
    let keys = load_keystore(&settings.keystore)?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions(settings))
        .map_err(|e| TlsConfigError::new("ssl.enabled.protocols", format!("{e}")))?;
    let builder = match settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            let trust_key = settings.truststore.key("location");
            let Some(certs) = load_truststore(&settings.truststore)? else {
                return Err(TlsConfigError::new(
                    trust_key,
                    format!(
                        "a truststore to verify client certificates with, since ssl.client.auth is {}",
                        if auth == ClientAuth::Required {
                            "required"
                        } else {
                            "requested"
                        }
                    ),
                ));
            };
            let roots = Arc::new(root_store(certs, &trust_key)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(&provider));
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsConfigError::new(trust_key, format!("a usable truststore: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(keys.chain, keys.key).map_err(|e| {
        TlsConfigError::new(
            settings.keystore.key("location"),
            format!("a usable key and certificate: {e}"),
        )
    })?;
    Ok(Arc::new(config))
}

/// Why a TLS connection did not get going.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("TLS handshake failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("TLS handshake did not finish within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Principal(String),
}

/// A TLS listener's live state.
#[derive(Debug)]
pub struct TlsServer {
    listener: String,
    current: RwLock<Current>,
}

#[derive(Debug, Clone)]
struct Current {
    config: Arc<ServerConfig>,
    mapper: Arc<SslPrincipalMapper>,
    settings: TlsSettings,
}

impl TlsServer {
    /// Loads `settings` (reads the stores).
    pub fn new(settings: TlsSettings) -> Result<Self, TlsConfigError> {
        let listener = settings.listener.clone();
        let current = Self::load(settings)?;
        Ok(Self {
            listener,
            current: RwLock::new(current),
        })
    }

    fn load(settings: TlsSettings) -> Result<Current, TlsConfigError> {
        let mapper = SslPrincipalMapper::parse(&settings.principal_mapping_rules)
            .map_err(|problem| TlsConfigError::new("ssl.principal.mapping.rules", problem))?;
        Ok(Current {
            config: build_server_config(&settings)?,
            mapper: Arc::new(mapper),
            settings,
        })
    }

    pub fn listener(&self) -> &str {
        &self.listener
    }

    /// The settings now in force.
    pub fn settings(&self) -> TlsSettings {
        self.read().settings
    }

    /// Replaces the config for new connections; on error the old one keeps serving. Reads
    /// files: call it off the async workers (`spawn_blocking`) or where blocking is fine.
    pub fn reload(&self, settings: TlsSettings) -> Result<(), TlsConfigError> {
        let next = Self::load(settings)?;
        match self.current.write() {
            Ok(mut current) => *current = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        Ok(())
    }

    fn read(&self) -> Current {
        match self.current.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Runs the server handshake on `stream` within `deadline`; the principal is the client
    /// certificate's DN mapped by the rules, or `User:ANONYMOUS` without a certificate.
    pub async fn accept(
        &self,
        stream: TcpStream,
        deadline: Duration,
    ) -> Result<(TlsStream<TcpStream>, KafkaPrincipal), HandshakeError> {
        let current = self.read();
        let acceptor = TlsAcceptor::from(current.config);
        let tls = tokio::time::timeout(deadline, acceptor.accept(stream))
            .await
            .map_err(|_| HandshakeError::Timeout(deadline))??;
        let principal = match tls.get_ref().1.peer_certificates().and_then(|c| c.first()) {
            None => KafkaPrincipal::anonymous(),
            Some(leaf) => {
                let dn = subject_dn(leaf).map_err(HandshakeError::Principal)?;
                let name = current
                    .mapper
                    .name(&dn)
                    .map_err(|e| HandshakeError::Principal(e.to_string()))?;
                KafkaPrincipal::user(name)
            }
        };
        Ok((tls, principal))
    }
}
