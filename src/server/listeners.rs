//! Listener sockets. Each `listeners` entry is bound at start-up, before the broker registers,
//! so a port of 0 is resolved to the bound port and that is what `advertised.listeners`
//! publishes (as Kafka does). Serving the Kafka protocol on these sockets is the network
//! module's job (the wire-protocol work); until then an accepted connection is closed at once,
//! so a client fails fast instead of hanging.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::EndPoint;
use crate::zk::models::AdvertisedEndpoint;

/// A bound listener.
#[derive(Debug)]
pub struct BoundListener {
    pub name: String,
    pub local_addr: SocketAddr,
    listener: TcpListener,
}

/// Binding failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot bind listener {endpoint}: {source}")]
pub struct BindError {
    pub endpoint: String,
    pub source: std::io::Error,
}

pub async fn bind(endpoints: &[EndPoint]) -> Result<Vec<BoundListener>, BindError> {
    let mut bound = Vec::with_capacity(endpoints.len());
    for ep in endpoints {
        let host = if ep.host.is_empty() {
            "0.0.0.0"
        } else {
            ep.host.as_str()
        };
        let err = |source| BindError {
            endpoint: ep.to_string(),
            source,
        };
        let listener = TcpListener::bind((host, ep.port)).await.map_err(err)?;
        let local_addr = listener.local_addr().map_err(err)?;
        bound.push(BoundListener {
            name: ep.listener_name.clone(),
            local_addr,
            listener,
        });
    }
    Ok(bound)
}

/// The endpoints to register: advertised listeners with port 0 replaced by the bound port of
/// the listener of the same name, and an empty host replaced by this machine's host name.
pub fn advertised(advertised: &[EndPoint], bound: &[BoundListener]) -> Vec<AdvertisedEndpoint> {
    advertised
        .iter()
        .map(|ep| {
            let port = if ep.port == 0 {
                bound
                    .iter()
                    .find(|b| b.name == ep.listener_name)
                    .map(|b| b.local_addr.port())
                    .unwrap_or(0)
            } else {
                ep.port
            };
            let host = if ep.host.is_empty() {
                local_host_name()
            } else {
                ep.host.clone()
            };
            AdvertisedEndpoint {
                listener: ep.listener_name.clone(),
                host,
                port,
                security_protocol: ep.security_protocol.name().to_string(),
            }
        })
        .collect()
}

fn local_host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Accepts connections until `stop` turns true. Connections are closed at once until the
/// Kafka protocol is served here.
pub async fn accept_until_stopped(listener: BoundListener, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tracing::debug!(listener = %listener.name, %peer, "closing connection: the Kafka protocol is not served yet");
                    drop(stream);
                }
                Err(e) => tracing::warn!(listener = %listener.name, error = %e, "accept failed"),
            },
            _ = stop.changed() => return,
        }
    }
}
