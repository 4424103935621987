//! Listener sockets. Each `listeners` entry is bound at start-up, before the broker registers,
//! so a port of 0 is resolved to the bound port and that is what `advertised.listeners`
//! publishes (as Kafka does). The socket server takes them over once the broker is registered.

use std::net::SocketAddr;

use tokio::net::TcpListener;

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

impl BoundListener {
    /// The listener name and socket, for the socket server.
    pub fn into_parts(self) -> (String, TcpListener) {
        (self.name, self.listener)
    }
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
