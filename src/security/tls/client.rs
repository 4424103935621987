//! The client side of inter-broker TLS: a `ClientConfig` trusting the broker's truststore,
//! presenting its keystore when it has one (mutual TLS), and verifying the advertised host name
//! of the broker it connects to unless `ssl.endpoint.identification.algorithm` is blank (then
//! the chain is still verified against the truststore; only the name check is skipped, as in
//! Kafka).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::keys::{load_keystore, load_truststore};
use super::server::{provider, root_store, versions};
use super::settings::{TlsConfigError, TlsSettings};

/// Builds the client config for connections to `settings.listener` on other brokers.
pub fn build_client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let provider = Arc::new(provider(settings)?);
    let trust_key = settings.truststore.key("location");
    let Some(certs) = load_truststore(&settings.truststore)? else {
        return Err(TlsConfigError::new(
            trust_key,
            "a truststore to verify the other brokers' certificates with (the inter-broker listener is SSL)",
        ));
    };
    let roots = Arc::new(root_store(certs, &trust_key)?);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(settings))
        .map_err(|e| TlsConfigError::new("ssl.enabled.protocols", format!("{e}")))?;
    let builder = if settings.verify_host_name {
        builder.with_root_certificates(roots)
    } else {
        let chain = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| TlsConfigError::new(trust_key.clone(), format!("a usable truststore: {e}")))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(chain)))
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

/// `ssl.endpoint.identification.algorithm=` (blank): the certificate must chain to the
/// truststore and be valid, but need not name the host.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain first and the name last: a name error means the chain passed.
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

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
