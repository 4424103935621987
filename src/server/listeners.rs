//! Listener sockets. Each `listeners` entry is bound at start-up, before the broker registers,
//! so a port of 0 is resolved to the bound port and that is what `advertised.listeners`
//! publishes (as Kafka does). The socket server takes them over once the broker is registered.
//! TLS listeners (SSL, SASL_SSL) get their TLS state ([`TlsServers`]) before binding: an
//! unreadable keystore stops the start-up, naming the listener and the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::config::{EndPoint, KafkaConfig, SecurityProtocol};
use crate::network::ServedListener;
use crate::security::tls::{TlsConfigError, TlsServer, TlsSettings};
use crate::zk::models::AdvertisedEndpoint;

/// A listener's TLS could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve {protocol} listener \"{listener}\": {source}")]
pub struct ListenerTlsError {
    pub listener: String,
    pub protocol: SecurityProtocol,
    pub source: TlsConfigError,
}

/// The TLS state of every TLS listener (SSL, SASL_SSL), by listener name; shared with the dynamic config
/// handler, which reloads a listener's keystore.
pub type TlsServers = Arc<BTreeMap<String, Arc<TlsServer>>>;

/// Loads the keystore (and truststore) of every TLS listener of `config`. Reads files: run it
/// at start-up, before serving.
pub fn tls_servers(config: &KafkaConfig) -> Result<TlsServers, ListenerTlsError> {
    let mut servers = BTreeMap::new();
    for ep in config.listeners().iter().filter(|e| e.security_protocol.uses_tls()) {
        let err = |source| ListenerTlsError {
            listener: ep.listener_name.clone(),
            protocol: ep.security_protocol,
            source,
        };
        let settings = TlsSettings::from_config(config, &ep.listener_name).map_err(err)?;
        let server = TlsServer::new(settings).map_err(err)?;
        servers.insert(ep.listener_name.clone(), Arc::new(server));
    }
    Ok(Arc::new(servers))
}

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

    /// The listener for the socket server, with its TLS state if it is a TLS listener.
    pub fn into_served(self, tls: &TlsServers) -> ServedListener {
        ServedListener {
            tls: tls.get(&self.name).cloned(),
            name: self.name,
            listener: self.listener,
        }
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
