//! TLS to ZooKeeper before the session: one handshake per server with the session's own rustls
//! config, so a ZooKeeper certificate the truststore does not vouch for (or a host name it
//! does not name) fails start-up at once with rustls' reason and the key to fix, instead of the
//! ZooKeeper client retrying quietly until the connection timeout. A server that cannot be
//! reached at all is left to the client's retries, as for plaintext.

use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use tokio::net::TcpStream;

use super::store::ZkError;
use crate::security::tls::client::connect;

/// Handshakes with each of `servers` (`host:port,...`) in turn until one succeeds. Fails only
/// when no server completed a handshake and at least one refused it with a TLS error.
pub async fn check_servers(servers: &str, config: &Arc<ClientConfig>, timeout: Duration) -> Result<(), ZkError> {
    let mut tls_failure = None;
    for server in servers.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((host, _)) = server.rsplit_once(':') else {
            continue;
        };
        let attempt = tokio::time::timeout(timeout, async {
            let stream = TcpStream::connect(server).await?;
            connect(config, host, stream).await
        })
        .await;
        match attempt {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => {
                if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                    tls_failure = Some(format!("{server}: {tls}"));
                }
            }
            Err(_) => {}
        }
    }
    match tls_failure {
        None => Ok(()),
        Some(failure) => Err(ZkError::Unavailable {
            reason: format!(
                "TLS handshake with ZooKeeper failed ({failure}); check that \
                 zookeeper.ssl.truststore.location holds the certificate that signed ZooKeeper's, \
                 that the certificate names the host in zookeeper.connect (or set \
                 zookeeper.ssl.endpoint.identification.algorithm empty), and that ZooKeeper's \
                 secureClientPort is the port in zookeeper.connect"
            ),
        }),
    }
}
