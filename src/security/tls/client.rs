//! The client side of inter-broker TLS: a `ClientConfig` trusting the broker's truststore,
//! presenting its keystore when it has one (mutual TLS), and verifying the advertised host name
//! of the broker it connects to.

use std::sync::Arc;

use rustls::ClientConfig;
use rustls_pki_types::ServerName;
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
    let roots = root_store(certs, &trust_key)?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions(settings))
        .map_err(|e| TlsConfigError::new("ssl.enabled.protocols", format!("{e}")))?
        .with_root_certificates(roots);
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
