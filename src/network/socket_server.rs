//! The socket server: one accept loop per listener, one task per connection, and a graceful
//! shutdown. Kafka's `SocketServer` (acceptor + processors + request channel) collapses into
//! tokio tasks; the per-connection ordering Kafka gets by muting a channel comes from each
//! connection task handling one request at a time (see [`super::connection`]).
//!
//! Owns listeners, connection limits and lifecycles; framing and request handling are the
//! connection's, answers are the [`RequestHandler`]'s.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tracing::{debug, info, warn};

use super::authentication::SaslListeners;
use super::connection::{Connection, ServerState};
use super::connection_quotas::ConnectionQuotas;
use super::handler::RequestHandler;
use crate::security::tls::TlsServer;

/// The socket settings of the broker config, with Kafka's property names and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    /// `socket.request.max.bytes`: a larger frame closes its connection.
    pub socket_request_max_bytes: usize,
    /// `connections.max.idle.ms`: a connection with no read or write progress for this long is closed.
    pub connections_max_idle: Duration,
    /// `max.connections`: connections beyond this, across all listeners, are accepted and closed.
    pub max_connections: usize,
    /// `max.connections.per.ip`: connections beyond this from one address are accepted and closed.
    pub max_connections_per_ip: usize,
    /// kastle only: how long [`SocketServer::shutdown`] lets in-flight requests finish.
    pub shutdown_grace: Duration,
    /// kastle only: how long a TLS client may take to finish its handshake.
    pub tls_handshake_timeout: Duration,
    /// The SASL listeners' settings; a listener not in it does not authenticate.
    pub sasl: SaslListeners,
}

/// A bound listener for the socket server: its name, socket and, for a TLS listener (SSL,
/// SASL_SSL), its TLS state (`None` serves plaintext). Whether it authenticates with SASL is
/// [`NetworkConfig::sasl`]'s, independently of TLS.
#[derive(Debug)]
pub struct ServedListener {
    pub name: String,
    pub listener: TcpListener,
    pub tls: Option<Arc<TlsServer>>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            socket_request_max_bytes: 104_857_600,
            connections_max_idle: Duration::from_millis(600_000),
            max_connections: i32::MAX as usize,
            max_connections_per_ip: i32::MAX as usize,
            shutdown_grace: Duration::from_secs(30),
            tls_handshake_timeout: Duration::from_secs(10),
            sasl: SaslListeners::default(),
        }
    }
}

/// A running socket server. Dropping it without [`SocketServer::shutdown`] closes every
/// connection at once, mid-request included.
#[derive(Debug)]
pub struct SocketServer {
    local_addrs: Vec<(String, SocketAddr)>,
    /// Broadcasts Running → Draining → Closed to acceptors and connections.
    state: watch::Sender<ServerState>,
    /// Every acceptor and connection task holds a clone of `task_token`; once all are gone,
    /// `tasks_done.recv()` returns `None`. That is how shutdown knows the work has finished.
    task_token: mpsc::Sender<()>,
    tasks_done: mpsc::Receiver<()>,
    quotas: Arc<ConnectionQuotas>,
    shutdown_grace: Duration,
}

impl SocketServer {
    /// Starts accepting on every `(listener name, bound listener)`. Must run inside a tokio runtime.
    pub fn start<H: RequestHandler>(
        listeners: Vec<(String, TcpListener)>,
        handler: Arc<H>,
        config: NetworkConfig,
    ) -> SocketServer {
        let quotas = ConnectionQuotas::new(config.max_connections, config.max_connections_per_ip);
        Self::start_with_quotas(listeners, handler, config, quotas)
    }

    /// [`SocketServer::start`] counting against `quotas`, whose limits the owner may change
    /// while the server runs (dynamic `max.connections*`); `config`'s limits are not used.
    pub fn start_with_quotas<H: RequestHandler>(
        listeners: Vec<(String, TcpListener)>,
        handler: Arc<H>,
        config: NetworkConfig,
        quotas: Arc<ConnectionQuotas>,
    ) -> SocketServer {
        let listeners = listeners
            .into_iter()
            .map(|(name, listener)| ServedListener {
                name,
                listener,
                tls: None,
            })
            .collect();
        Self::start_listeners(listeners, handler, config, quotas)
    }

    /// [`SocketServer::start_with_quotas`] for listeners that may be TLS ones.
    pub fn start_listeners<H: RequestHandler>(
        listeners: Vec<ServedListener>,
        handler: Arc<H>,
        config: NetworkConfig,
        quotas: Arc<ConnectionQuotas>,
    ) -> SocketServer {
        let (state, _) = watch::channel(ServerState::Running);
        let (task_token, tasks_done) = mpsc::channel(1);
        let config = Arc::new(config);
        let mut local_addrs = Vec::with_capacity(listeners.len());
        for ServedListener { name, listener, tls } in listeners {
            match listener.local_addr() {
                Ok(addr) => {
                    info!(listener = %name, %addr, "awaiting socket connections");
                    local_addrs.push((name.clone(), addr));
                }
                Err(error) => warn!(listener = %name, %error, "listener has no local address"),
            }
            let acceptor = Acceptor {
                name,
                listener,
                tls,
                handler: Arc::clone(&handler),
                config: Arc::clone(&config),
                quotas: Arc::clone(&quotas),
                state: state.subscribe(),
                task_token: task_token.clone(),
            };
            tokio::spawn(acceptor.run());
        }
        SocketServer {
            local_addrs,
            state,
            task_token,
            tasks_done,
            quotas,
            shutdown_grace: config.shutdown_grace,
        }
    }

    /// `(listener name, address)` for every listener, in the order given to [`SocketServer::start`].
    pub fn local_addrs(&self) -> &[(String, SocketAddr)] {
        &self.local_addrs
    }

    /// Live connections from `ip` (Kafka's `SocketServer.connectionCount`).
    pub fn connection_count(&self, ip: IpAddr) -> usize {
        self.quotas.count(ip)
    }

    /// Stops accepting and reading new requests, lets requests already being handled finish
    /// and their responses be written for up to `shutdown_grace`, then closes everything.
    pub async fn shutdown(self) {
        let SocketServer {
            state,
            task_token,
            mut tasks_done,
            shutdown_grace,
            ..
        } = self;
        info!("shutting down socket server");
        state.send_replace(ServerState::Draining);
        drop(task_token);
        if tokio::time::timeout(shutdown_grace, tasks_done.recv()).await.is_err() {
            warn!(grace = ?shutdown_grace, "requests still in flight after the shutdown grace period; closing them");
            state.send_replace(ServerState::Closed);
            // Every await in a connection also watches for Closed, so this is prompt.
            if tokio::time::timeout(shutdown_grace, tasks_done.recv()).await.is_err() {
                warn!("some connection tasks did not stop");
            }
        }
        info!("socket server shut down");
    }
}

/// One listener's accept loop.
struct Acceptor<H> {
    name: String,
    listener: TcpListener,
    tls: Option<Arc<TlsServer>>,
    handler: Arc<H>,
    config: Arc<NetworkConfig>,
    quotas: Arc<ConnectionQuotas>,
    state: watch::Receiver<ServerState>,
    task_token: mpsc::Sender<()>,
}

impl<H: RequestHandler> Acceptor<H> {
    async fn run(mut self) {
        loop {
            let accepted = tokio::select! {
                biased;
                _ = self.state.wait_for(|s| *s >= ServerState::Draining) => break,
                accepted = self.listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, peer)) => self.maybe_serve(stream, peer),
                Err(error) => {
                    // Typically out of file descriptors: back off instead of spinning.
                    warn!(listener = %self.name, %error, "error accepting connection");
                    tokio::select! {
                        _ = self.state.wait_for(|s| *s >= ServerState::Draining) => break,
                        () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    }
                }
            }
        }
        // Dropping the listener here makes new connection attempts fail fast.
        debug!(listener = %self.name, "stopped accepting connections");
    }

    fn maybe_serve(&self, stream: tokio::net::TcpStream, peer: SocketAddr) {
        let permit = match self.quotas.try_acquire(peer.ip()) {
            Ok(permit) => permit,
            Err(refused) => {
                info!(%peer, listener = %self.name, reason = %refused, "rejected connection");
                return;
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            debug!(%peer, %error, "could not set TCP_NODELAY");
        }
        debug!(%peer, listener = %self.name, "accepted connection");
        let state = self.state.clone();
        let task_token = self.task_token.clone();
        if let Some(tls) = &self.tls {
            let tls = Arc::clone(tls);
            let handler = Arc::clone(&self.handler);
            let config = Arc::clone(&self.config);
            let name = self.name.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let _task_token = task_token;
                serve_tls(tls, stream, peer, name, handler, config, state).await;
            });
            return;
        }
        let connection = Connection::new(
            stream,
            peer,
            self.name.clone(),
            Arc::clone(&self.handler),
            self.config.socket_request_max_bytes,
            self.config.connections_max_idle,
            self.config.sasl.0.get(&self.name).cloned(),
        );
        tokio::spawn(async move {
            let _permit = permit;
            let _task_token = task_token;
            connection.run(state).await;
        });
    }
}

/// The TLS handshake (within `tls_handshake_timeout`, and abandoned at shutdown), then the
/// same request loop as plaintext over the TLS stream's halves: on a SASL_SSL listener that
/// starts with the SASL exchange, whose principal replaces the TLS one (as Kafka's). A failed
/// handshake closes this connection only.
async fn serve_tls<H: RequestHandler>(
    tls: Arc<TlsServer>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    listener: String,
    handler: Arc<H>,
    config: Arc<NetworkConfig>,
    mut state: watch::Receiver<ServerState>,
) {
    let handshake = tokio::select! {
        biased;
        _ = state.wait_for(|s| *s >= ServerState::Draining) => return,
        handshake = tls.accept(stream, config.tls_handshake_timeout) => handshake,
    };
    let (stream, principal) = match handshake {
        Ok(accepted) => accepted,
        Err(error) => {
            warn!(%peer, %listener, reason = %error, "closing connection: TLS handshake failed");
            return;
        }
    };
    info!(%peer, %listener, %principal, "TLS connection authenticated");
    let sasl = config.sasl.0.get(&listener).cloned();
    let (reader, writer) = tokio::io::split(stream);
    let connection = Connection::from_halves(
        reader,
        writer,
        peer,
        listener,
        Arc::new(principal),
        handler,
        config.socket_request_max_bytes,
        config.connections_max_idle,
    )
    .with_sasl(sasl);
    connection.run(state).await;
}

impl<H> std::fmt::Debug for Acceptor<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("name", &self.name)
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}
