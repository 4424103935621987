//! The client side of TLS: the `ClientConfig` of inter-broker connections (trusting the
//! broker's truststore, presenting its keystore when it has one (mutual TLS), and verifying the
//! advertised host name of the broker it connects to unless
//! `ssl.endpoint.identification.algorithm` is blank), and the one of ZooKeeper sessions (the same from the
//! `zookeeper.ssl.*` keys, with host name verification as
//! `zookeeper.ssl.endpoint.identification.algorithm` says).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::keys::{load_keystore, load_truststore};
use super::server::{provider, root_store, versions};
use super::settings::{TlsConfigError, TlsSettings};

/// Builds the client config for connections to `settings.listener` on other brokers.
pub fn build_client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, TlsConfigError> {
    client_config(
        settings,
        "a truststore to verify the other brokers' certificates with (the inter-broker listener is SSL)",
        settings.verify_host_name,
    )
}

/// Builds the client config of ZooKeeper sessions from the `zookeeper.ssl.*` settings
/// ([`TlsSettings::resolve_zookeeper`]); errors name the `zookeeper.ssl.*` key.
pub fn build_zookeeper_client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, TlsConfigError> {
    client_config(
        settings,
        "a truststore to verify ZooKeeper's certificate with (zookeeper.ssl.client.enable is true)",
        settings.verify_host_name,
    )
    .map_err(|e| match e.key.strip_prefix("ssl.") {
        // The suite and protocol checks name the plain keys.
        Some(rest) => TlsConfigError::new(format!("zookeeper.ssl.{rest}"), e.problem),
        None => e,
    })
}

fn client_config(
    settings: &TlsSettings,
    missing_truststore: &str,
    verify_host_name: bool,
) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let provider = Arc::new(provider(settings)?);
    let trust_key = settings.truststore.key("location");
    let Some(certs) = load_truststore(&settings.truststore)? else {
        return Err(TlsConfigError::new(trust_key, missing_truststore));
    };
    let roots = Arc::new(root_store(certs, &trust_key)?);
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions(settings))
        .map_err(|e| TlsConfigError::new("ssl.enabled.protocols", format!("{e}")))?;
    let builder = if verify_host_name {
        builder.with_root_certificates(roots)
    } else {
        let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| TlsConfigError::new(trust_key, format!("a truststore rustls accepts: {e}")))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyHostName(verifier)))
    };
    let config = if settings.has_keystore() {
        let keys = load_keystore(&settings.keystore)?;
        builder.with_client_auth_cert(keys.chain, keys.key).map_err(|e| {
            TlsConfigError::new(
                settings.keystore.key("location"),
                format!("a usable key and certificate: {e}"),
            )
        })?
    } else {
        builder.with_no_client_auth()
    };
    Ok(Arc::new(config))
}

/// WebPKI verification of the chain, signatures and validity, minus the host name (an empty
/// `ssl.endpoint.identification.algorithm`). rustls checks the name last, so a name mismatch
/// means everything else held.
#[derive(Debug)]
struct AnyHostName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Connects TLS over `stream` to `host`, verifying the certificate names it.
pub async fn connect(
    config: &Arc<ClientConfig>,
    host: &str,
    stream: TcpStream,
) -> std::io::Result<TlsStream<TcpStream>> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
    TlsConnector::from(Arc::clone(config)).connect(name, stream).await
}

#[cfg(test)]
mod tests {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    use super::*;

    /// A CA and a certificate it signed for `zk.example` only.
    fn chain() -> (CertificateDer<'static>, CertificateDer<'static>) {
        let ca_key = KeyPair::generate().expect("ca key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca.self_signed(&ca_key).expect("ca");
        let key = KeyPair::generate().expect("key");
        let leaf = CertificateParams::new(vec!["zk.example".to_string()])
            .expect("params")
            .signed_by(&key, &ca, &ca_key)
            .expect("leaf");
        (ca.der().clone(), leaf.der().clone())
    }

    fn verifier(ca: CertificateDer<'static>) -> Arc<WebPkiServerVerifier> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca).expect("root");
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::new(rustls::crypto::ring::default_provider()))
            .build()
            .expect("verifier")
    }

    #[test]
    fn without_host_name_verification_only_the_name_may_differ() {
        let (ca, leaf) = chain();
        let other = ServerName::try_from("127.0.0.1").expect("name");
        let named = ServerName::try_from("zk.example").expect("name");
        let now = UnixTime::now();
        let strict = verifier(ca.clone());
        let err = strict
            .verify_server_cert(&leaf, &[], &other, &[], now)
            .expect_err("the name differs");
        assert!(matches!(
            err,
            rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
        ));
        let lenient = AnyHostName(verifier(ca));
        lenient
            .verify_server_cert(&leaf, &[], &other, &[], now)
            .expect("any name");
        lenient
            .verify_server_cert(&leaf, &[], &named, &[], now)
            .expect("its name");
        // A chain to another CA still fails.
        let (stranger_ca, _) = chain();
        let err = AnyHostName(verifier(stranger_ca))
            .verify_server_cert(&leaf, &[], &named, &[], now)
            .expect_err("untrusted");
        assert!(matches!(err, rustls::Error::InvalidCertificate(_)), "{err:?}");
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod inter_broker_tests;
