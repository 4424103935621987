//! The real ZooKeeper store: one [`zookeeper_client::Client`] at a time, replaced when its
//! session expires.
//!
//! Session handling mirrors Kafka's `ZooKeeperClient`: when a session ends (expiry or auth
//! failure) a monitor task connects a new session, retrying until it succeeds or the store is
//! closed, then broadcasts [`SessionEvent::Established`]. Owners of ephemeral znodes (the
//! broker registration, later the controller) listen for it and re-create theirs, as Kafka's
//! `RegisterBrokerAndReelect` does; persistent watches made through [`ZkStore::watch`] are
//! re-armed here and report [`WatchEvent::Rearmed`] so their owner re-reads what it watches.
//!
//! A connection loss that keeps the session (ZooKeeper paused or unreachable for less than the
//! session timeout) needs the same care. The client reconnects by itself and re-sends its
//! watches with `SetWatches`, but zookeeper-client 0.11 sends only the one-shot kinds there: the
//! server forgets every persistent watch at the first disconnect, and a controller holding them
//! would never hear of a broker's death again. So every watch is re-added here after each
//! reconnect (an `addWatch` for a path already watched is a no-op on the server), and its owner
//! gets `Rearmed` to re-read, since events during the gap are lost by ZooKeeper's design.
//! Reconnects and re-arms are counted (`kastle_zk_reconnects_total`,
//! `kastle_zk_watch_rearms_total`), and `kastle_zk_disconnected_sessions` is the number of this
//! process's sessions whose connection is lost right now.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use zookeeper_client as zkc;

use super::acl::{default_acl, ZnodeAcl};
use super::connect::ConnectString;
use super::security::ZkSecurity;
use super::store::{CreateMode, Op, OpResult, ReadResult, Stat, WatchEvent, WatchMode, WatchStream, ZkError, ZkStore};
use crate::types::ZkVersion;

/// Reads per `multiRead` request: ~200 KB answers for partition state znodes, well under
/// ZooKeeper's 1 MB `jute.maxbuffer`.
const MULTI_READ_BATCH: usize = 1000;

/// Session lifecycle notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEvent {
    /// The session ended (`state` says how); its ephemerals are gone.
    Ended { session_id: i64, state: String },
    /// A new session is up; ephemeral owners must re-create their znodes.
    Established { session_id: i64 },
}

#[derive(Debug)]
struct Inner {
    connect: ConnectString,
    session_timeout: Duration,
    connection_timeout: Duration,
    /// SASL login and ACL choice, the same for every session this store opens.
    security: ZkSecurity,
    /// `None` once closed; never held across an `.await`.
    client: RwLock<Option<Arc<zkc::Client>>>,
    /// Bumped on every new session; watch tasks wait on it to re-arm.
    generation: watch::Sender<u64>,
    events: broadcast::Sender<SessionEvent>,
    closed: watch::Sender<bool>,
    /// Requests sent to ZooKeeper through this session (a multi counts once: one round trip).
    requests: AtomicU64,
    /// Reconnections to the same session after a connection loss.
    reconnects: AtomicU64,
    /// The connection is lost and the client is trying to get it back.
    disconnected: AtomicBool,
    /// Watches re-added after a reconnect or on a new session.
    watch_rearms: AtomicU64,
}

/// A ZooKeeper connection that survives session expiry. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ZkSession {
    inner: Arc<Inner>,
}

impl ZkSession {
    /// An anonymous session with open ACLs: [`Self::connect_secured`] with
    /// [`ZkSecurity::anonymous`].
    pub async fn connect(
        connect: &ConnectString,
        session_timeout: Duration,
        connection_timeout: Duration,
    ) -> Result<ZkSession, ZkError> {
        Self::connect_secured(connect, session_timeout, connection_timeout, &ZkSecurity::anonymous()).await
    }

    /// Connects (waiting at most `connection_timeout`), authenticating with SASL DIGEST-MD5 when
    /// `security` has a login, creates the chroot if it is missing, and starts the session
    /// monitor. Every znode this session creates gets the ACL [`default_acl`] picks; every new
    /// session after an expiry authenticates the same way.
    pub async fn connect_secured(
        connect: &ConnectString,
        session_timeout: Duration,
        connection_timeout: Duration,
        security: &ZkSecurity,
    ) -> Result<ZkSession, ZkError> {
        let client = connect_client(connect, session_timeout, connection_timeout, security).await?;
        let (generation, _) = watch::channel(0);
        let (events, _) = broadcast::channel(16);
        let (closed, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            connect: connect.clone(),
            session_timeout,
            connection_timeout,
            security: security.clone(),
            client: RwLock::new(Some(Arc::new(client))),
            generation,
            events,
            closed,
            requests: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            disconnected: AtomicBool::new(false),
            watch_rearms: AtomicU64::new(0),
        });
        tokio::spawn(monitor(inner.clone()));
        Ok(ZkSession { inner })
    }

    /// Session lifecycle events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.inner.events.subscribe()
    }

    /// The chroot every path is relative to.
    pub fn connect_string(&self) -> &ConnectString {
        &self.inner.connect
    }

    /// Closes the session: ZooKeeper deletes its ephemerals at once. Waits until the server
    /// confirmed, at most the connection timeout.
    pub async fn close(&self) {
        self.inner.closed.send_replace(true);
        let client = self.inner.client.write().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(client) = client {
            let mut state = client.state_watcher();
            drop(client);
            let _ = tokio::time::timeout(self.inner.connection_timeout, async {
                while !state.changed().await.is_terminated() {}
            })
            .await;
        }
    }

    /// Ends the current session from outside, as a partition longer than the session timeout
    /// would: a second client attaches to the same session and closes it. For fault-injection
    /// tests; the monitor then establishes a new session as it does after a real expiry.
    pub async fn force_expire(&self) -> Result<(), ZkError> {
        let mut events = self.subscribe();
        let target = self.current_client()?.session_id().0;
        let mut last_error = None;
        // The session's own client reconnects as soon as the intruder takes the session over,
        // and may win the race; try a few times until the monitor reports the session ended.
        for _ in 0..5 {
            let info = self.current_client()?.session().clone();
            let attached = connector(&self.inner.security)
                .with_session(info)
                .with_session_timeout(self.inner.session_timeout)
                .with_connection_timeout(self.inner.connection_timeout);
            let attached = open(attached, &self.inner.security, &self.inner.connect.servers).await;
            match attached {
                Ok(intruder) => {
                    let mut state = intruder.state_watcher();
                    drop(intruder);
                    let _ = tokio::time::timeout(self.inner.connection_timeout, async {
                        while !state.changed().await.is_terminated() {}
                    })
                    .await;
                }
                Err(e) => last_error = Some(e.to_string()),
            }
            let ended = tokio::time::timeout(self.inner.session_timeout, async {
                loop {
                    match events.recv().await {
                        Ok(SessionEvent::Ended { session_id, .. }) if session_id == target => return true,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return false,
                    }
                }
            })
            .await;
            if ended == Ok(true) {
                return Ok(());
            }
        }
        Err(ZkError::Unavailable {
            reason: format!(
                "could not expire session {target:#x}: {}",
                last_error.unwrap_or_default()
            ),
        })
    }

    /// Requests this session has sent to ZooKeeper so far (every read, write, multi and watch
    /// registration counts once; a multi is one round trip however many ops it carries). Also
    /// exported, summed over the process, as `kastle_zk_requests_total`.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// Times the client got its connection back within the same session.
    pub fn reconnects(&self) -> u64 {
        self.inner.reconnects.load(Ordering::Relaxed)
    }

    /// True while the connection is lost and the session not yet known to be gone.
    pub fn connection_lost(&self) -> bool {
        self.inner.disconnected.load(Ordering::Relaxed)
    }

    /// Watches re-added so far, after reconnects and on new sessions.
    pub fn watch_rearms(&self) -> u64 {
        self.inner.watch_rearms.load(Ordering::Relaxed)
    }

    /// The client for one request, counted.
    fn client(&self) -> Result<Arc<zkc::Client>, ZkError> {
        self.count_request();
        self.current_client()
    }

    fn count_request(&self) {
        self.inner.requests.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("kastle_zk_requests_total").increment(1);
    }

    fn current_client(&self) -> Result<Arc<zkc::Client>, ZkError> {
        self.inner
            .client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| ZkError::Unavailable {
                reason: "the ZooKeeper session was closed".into(),
            })
    }
}

/// A connector carrying the SASL login, if any.
fn connector(security: &ZkSecurity) -> zkc::Connector {
    let connector = zkc::Client::connector();
    let connector = match &security.digest {
        Some(d) => connector.with_sasl(zkc::SaslOptions::digest_md5(d.username.clone(), d.password.clone())),
        None => connector,
    };
    match &security.tls {
        Some(tls) => connector.with_tls(zkc::TlsOptions::new().with_client_config(Arc::clone(&tls.config))),
        None => connector,
    }
}

/// Connects `connector` to `servers`, over TLS when `security` has it.
async fn open(connector: zkc::Connector, security: &ZkSecurity, servers: &str) -> Result<zkc::Client, zkc::Error> {
    match security.tls {
        Some(_) => connector.secure_connect(servers).await,
        None => connector.connect(servers).await,
    }
}

/// Kafka's `CREATOR_ALL_ACL` + `READ_ACL_UNSAFE`.
static CREATOR_ALL_WORLD_READ: [zkc::Acl; 2] = [
    zkc::Acl::new_const(zkc::Permission::ALL, "auth", ""),
    zkc::Acl::new_const(zkc::Permission::READ, "world", "anyone"),
];

/// The client's ACL list for a znode created at `path` (relative to the chroot).
fn acls_for(set_acl: bool, path: &str) -> zkc::Acls<'static> {
    match default_acl(set_acl, path) {
        ZnodeAcl::Open => zkc::Acls::anyone_all(),
        ZnodeAcl::CreatorAll => zkc::Acls::creator_all(),
        ZnodeAcl::CreatorAllWorldRead => zkc::Acls::new(&CREATOR_ALL_WORLD_READ),
    }
}

async fn connect_client(
    connect: &ConnectString,
    session_timeout: Duration,
    connection_timeout: Duration,
    security: &ZkSecurity,
) -> Result<zkc::Client, ZkError> {
    if let Some(tls) = &security.tls {
        super::tls::check_servers(&connect.servers, &tls.config, connection_timeout).await?;
    }
    let connector = connector(security)
        .with_session_timeout(session_timeout)
        .with_connection_timeout(connection_timeout);
    let client = tokio::time::timeout(connection_timeout, open(connector, security, &connect.servers))
        .await
        .map_err(|_| ZkError::Unavailable {
            reason: format!(
                "no ZooKeeper session with {} within {} ms",
                connect.servers,
                connection_timeout.as_millis()
            ),
        })?
        .map_err(|e| ZkError::Unavailable {
            reason: format!("connecting to {}: {e}", connect.servers),
        })?;
    let Some(chroot) = &connect.chroot else {
        return Ok(client);
    };
    let options = zkc::CreateMode::Persistent.with_acls(acls_for(security.set_acl, chroot));
    client.mkdir(chroot, &options).await.map_err(|e| map_err(chroot, e))?;
    client.chroot(chroot.as_str()).map_err(|_| ZkError::Other {
        path: chroot.clone(),
        reason: "invalid chroot".into(),
    })
}

/// Watches the current session; on its end, connects a new one and tells everyone.
async fn monitor(inner: Arc<Inner>) {
    let mut closed = inner.closed.subscribe();
    loop {
        let (mut state, session_id) = {
            let guard = inner.client.read().unwrap_or_else(|p| p.into_inner());
            match guard.as_ref() {
                Some(c) => (c.state_watcher(), c.session_id().0),
                None => return,
            }
        };
        let ended = loop {
            tokio::select! {
                s = state.changed() => {
                    if s.is_terminated() {
                        break s;
                    }
                    note_connection_state(&inner, session_id, s);
                },
                _ = closed.changed() => return,
            }
        };
        if inner.disconnected.swap(false, Ordering::Relaxed) {
            metrics::gauge!("kastle_zk_disconnected_sessions").decrement(1.0);
        }
        if *closed.borrow() {
            return;
        }
        tracing::warn!(session = format!("{session_id:#x}"), state = %ended, "ZooKeeper session ended; establishing a new session");
        metrics::counter!("kafka_server_sessionexpirelistener_zookeeperexpires_total").increment(1);
        let _ = inner.events.send(SessionEvent::Ended {
            session_id,
            state: ended.to_string(),
        });
        let mut backoff = Duration::from_millis(100);
        let client = loop {
            let attempt = tokio::select! {
                r = connect_client(&inner.connect, inner.session_timeout, inner.connection_timeout, &inner.security) => r,
                _ = closed.changed() => return,
            };
            match attempt {
                Ok(c) => break c,
                Err(e) => {
                    tracing::warn!(error = %e, "could not establish a new ZooKeeper session; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {},
                        _ = closed.changed() => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        };
        let new_id = client.session_id().0;
        {
            let mut guard = inner.client.write().unwrap_or_else(|p| p.into_inner());
            if guard.is_none() {
                return;
            }
            *guard = Some(Arc::new(client));
        }
        tracing::info!(session = format!("{new_id:#x}"), "new ZooKeeper session established");
        inner.generation.send_modify(|g| *g += 1);
        let _ = inner.events.send(SessionEvent::Established { session_id: new_id });
    }
}

/// Logs and counts a connection loss and the reconnect to the same session that ends it.
fn note_connection_state(inner: &Inner, session_id: i64, state: zkc::SessionState) {
    let session = format!("{session_id:#x}");
    let connected = matches!(
        state,
        zkc::SessionState::SyncConnected | zkc::SessionState::ConnectedReadOnly
    );
    let lost = state == zkc::SessionState::Disconnected;
    if lost && !inner.disconnected.swap(true, Ordering::Relaxed) {
        metrics::gauge!("kastle_zk_disconnected_sessions").increment(1.0);
        tracing::warn!(session, "ZooKeeper connection lost; reconnecting to the same session");
    } else if connected && inner.disconnected.swap(false, Ordering::Relaxed) {
        metrics::gauge!("kastle_zk_disconnected_sessions").decrement(1.0);
        inner.reconnects.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("kastle_zk_reconnects_total").increment(1);
        tracing::info!(
            session,
            "ZooKeeper connection restored within the session; re-arming watches"
        );
    }
}

fn map_err(path: &str, e: zkc::Error) -> ZkError {
    let path = path.to_string();
    match e {
        zkc::Error::NoNode => ZkError::NoNode { path },
        zkc::Error::NodeExists => ZkError::NodeExists { path },
        zkc::Error::BadVersion => ZkError::BadVersion { path },
        zkc::Error::NotEmpty => ZkError::NotEmpty { path },
        zkc::Error::SessionExpired => ZkError::SessionExpired,
        zkc::Error::ConnectionLoss | zkc::Error::Timeout | zkc::Error::ClientClosed | zkc::Error::NoHosts => {
            ZkError::Unavailable { reason: e.to_string() }
        }
        other => ZkError::Other {
            path,
            reason: other.to_string(),
        },
    }
}

fn map_stat(s: &zkc::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        version: ZkVersion(s.version),
        ephemeral_owner: s.ephemeral_owner,
        num_children: s.num_children,
        ctime: s.ctime,
        mtime: s.mtime,
    }
}

fn map_mode(mode: CreateMode) -> zkc::CreateMode {
    match mode {
        CreateMode::Persistent => zkc::CreateMode::Persistent,
        CreateMode::PersistentSequential => zkc::CreateMode::PersistentSequential,
        CreateMode::Ephemeral => zkc::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zkc::CreateMode::EphemeralSequential,
    }
}

/// Creates through a given client; shared by the session and the chroot bootstrap.
async fn create_with(
    client: &zkc::Client,
    path: &str,
    data: &[u8],
    mode: CreateMode,
    set_acl: bool,
) -> Result<(String, Stat), ZkError> {
    let options = map_mode(mode).with_acls(acls_for(set_acl, path));
    let (stat, seq) = client
        .create(path, data, &options)
        .await
        .map_err(|e| map_err(path, e))?;
    let created = if mode.is_sequential() {
        format!("{path}{seq}")
    } else {
        path.to_string()
    };
    Ok((created, map_stat(&stat)))
}

impl ZkStore for ZkSession {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat), ZkError> {
        let client = self.client()?;
        create_with(&client, path, data, mode, self.inner.security.set_acl).await
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        let (data, stat) = self.client()?.get_data(path).await.map_err(|e| map_err(path, e))?;
        Ok((data, map_stat(&stat)))
    }

    async fn get_data_many(&self, paths: &[String]) -> Result<Vec<ReadResult>, ZkError> {
        let client = self.current_client()?;
        // All batches are sent before the first answer is awaited (the client sends at commit).
        let mut pending = Vec::new();
        for batch in paths.chunks(MULTI_READ_BATCH) {
            let mut reader = client.new_multi_reader();
            for path in batch {
                reader.add_get_data(path).map_err(|e| map_err(path, e))?;
            }
            self.count_request();
            pending.push((batch, reader.commit()));
        }
        let mut out = Vec::with_capacity(paths.len());
        for (batch, answer) in pending {
            let results = answer.await.map_err(|e| map_err("/", e))?;
            if results.len() != batch.len() {
                return Err(ZkError::Other {
                    path: "/".into(),
                    reason: format!("multiRead answered {} of {} reads", results.len(), batch.len()),
                });
            }
            for (path, result) in batch.iter().zip(results) {
                out.push(match result {
                    zkc::MultiReadResult::Data { data, stat } => Ok((data, map_stat(&stat))),
                    zkc::MultiReadResult::Error { err } => Err(map_err(path, err)),
                    other => Err(ZkError::Other {
                        path: path.clone(),
                        reason: format!("unexpected multiRead result {other:?}"),
                    }),
                });
            }
        }
        Ok(out)
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        let stat = self.client()?.check_stat(path).await.map_err(|e| map_err(path, e))?;
        Ok(stat.as_ref().map(map_stat))
    }

    async fn set_data(&self, path: &str, data: &[u8], version: Option<ZkVersion>) -> Result<Stat, ZkError> {
        let stat = self
            .client()?
            .set_data(path, data, version.map(|v| v.0))
            .await
            .map_err(|e| map_err(path, e))?;
        Ok(map_stat(&stat))
    }

    async fn delete(&self, path: &str, version: Option<ZkVersion>) -> Result<(), ZkError> {
        self.client()?
            .delete(path, version.map(|v| v.0))
            .await
            .map_err(|e| map_err(path, e))
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, ZkError> {
        let mut children = self.client()?.list_children(path).await.map_err(|e| map_err(path, e))?;
        children.sort();
        Ok(children)
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        let client = self.client()?;
        let mut writer = client.new_multi_writer();
        for op in &ops {
            let added = match op {
                Op::Check { path, version } => writer.add_check_version(path, version.0),
                Op::Create { path, data, mode } => {
                    let acls = acls_for(self.inner.security.set_acl, path);
                    writer.add_create(path, data, &map_mode(*mode).with_acls(acls))
                }
                Op::SetData { path, data, version } => writer.add_set_data(path, data, version.map(|v| v.0)),
                Op::Delete { path, version } => writer.add_delete(path, version.map(|v| v.0)),
            };
            added.map_err(|e| map_err(op.path(), e))?;
        }
        let results = writer.commit().await.map_err(|e| match e {
            zkc::MultiWriteError::RequestFailed { source } => map_err("/", source),
            zkc::MultiWriteError::OperationFailed { index, source } => {
                let path = ops.get(index).map(|o| o.path().to_string()).unwrap_or_default();
                ZkError::MultiFailed {
                    index,
                    source: Box::new(map_err(&path, source)),
                    path,
                }
            }
        })?;
        results
            .into_iter()
            .map(|r| match r {
                zkc::MultiWriteResult::Check => Ok(OpResult::Check),
                zkc::MultiWriteResult::Create { path, .. } => Ok(OpResult::Create { path }),
                zkc::MultiWriteResult::SetData { stat } => Ok(OpResult::SetData { stat: map_stat(&stat) }),
                zkc::MultiWriteResult::Delete => Ok(OpResult::Delete),
                // The enum is non-exhaustive; a result we never asked for is an error, not a panic.
                other => Err(ZkError::Other {
                    path: "/".into(),
                    reason: format!("unexpected multi result {other:?}"),
                }),
            })
            .collect()
    }

    async fn watch(&self, path: &str, mode: WatchMode) -> Result<WatchStream, ZkError> {
        let zk_mode = match mode {
            WatchMode::Persistent => zkc::AddWatchMode::Persistent,
            WatchMode::PersistentRecursive => zkc::AddWatchMode::PersistentRecursive,
        };
        let first = self
            .client()?
            .watch(path, zk_mode)
            .await
            .map_err(|e| map_err(path, e))?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run_watch(self.inner.clone(), path.to_string(), zk_mode, first, tx));
        Ok(rx)
    }

    fn session_id(&self) -> i64 {
        self.current_client().map(|c| c.session_id().0).unwrap_or(0)
    }
}

/// Forwards one persistent watch's events, re-arming it after every reconnect and on every new
/// session.
async fn run_watch(
    inner: Arc<Inner>,
    path: String,
    mode: zkc::AddWatchMode,
    first: zkc::PersistentWatcher,
    tx: mpsc::UnboundedSender<WatchEvent>,
) {
    let mut generation = inner.generation.subscribe();
    let mut closed = inner.closed.subscribe();
    let mut watcher = Some(first);
    loop {
        if let Some(mut w) = watcher.take() {
            loop {
                let event = tokio::select! {
                    e = w.changed() => e,
                    _ = closed.changed() => return,
                    _ = tx.closed() => return,
                };
                let forwarded = match event.event_type {
                    zkc::EventType::NodeCreated => WatchEvent::Created { path: event.path },
                    zkc::EventType::NodeDeleted => WatchEvent::Deleted { path: event.path },
                    zkc::EventType::NodeDataChanged => WatchEvent::DataChanged { path: event.path },
                    zkc::EventType::NodeChildrenChanged => WatchEvent::ChildrenChanged { path: event.path },
                    // Reconnected within the session: the server lost this watch with the old
                    // connection (see the module docs). Add it again, then ask for a re-read.
                    zkc::EventType::Session if event.session_state == zkc::SessionState::SyncConnected => {
                        match rearm(&inner, &path, mode, &generation, &mut closed).await {
                            Rearm::Done => WatchEvent::Rearmed,
                            // The old watcher reports the end next; `Rearmed` follows once the
                            // watch is on the new session, not before.
                            Rearm::NewSession => continue,
                            Rearm::Closed => return,
                        }
                    }
                    zkc::EventType::Session if event.session_state.is_terminated() => break,
                    zkc::EventType::Session => continue,
                };
                if tx.send(forwarded).is_err() {
                    return;
                }
            }
        }
        // The session ended: wait for the next one and watch again.
        tokio::select! {
            r = generation.changed() => if r.is_err() { return },
            _ = closed.changed() => return,
            _ = tx.closed() => return,
        }
        generation.borrow_and_update();
        let Some(client) = inner.client.read().unwrap_or_else(|p| p.into_inner()).clone() else {
            return;
        };
        match client.watch(&path, mode).await {
            Ok(w) => {
                watcher = Some(w);
                count_rearm(&inner);
                if tx.send(WatchEvent::Rearmed).is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(path = %path, error = %e, "could not re-arm a ZooKeeper watch; will retry on the next session")
            }
        }
    }
}

/// Adds the watch on `path` again through the current client, retrying with backoff while the
/// connection flaps; `None` when the store closed. The new client-side watcher is dropped at
/// once: the old one keeps receiving the path's events (the client dispatches by path) and is
/// sure to see the session's end, and dropping a second watcher of the same mode removes
/// nothing on the server. A new session meanwhile ends this: the old watcher reports the end,
/// and the watch is added on the new session then.
enum Rearm {
    Done,
    NewSession,
    Closed,
}

async fn rearm(
    inner: &Arc<Inner>,
    path: &str,
    mode: zkc::AddWatchMode,
    generation: &watch::Receiver<u64>,
    closed: &mut watch::Receiver<bool>,
) -> Rearm {
    let mut backoff = Duration::from_millis(50);
    loop {
        if generation.has_changed().unwrap_or(true) {
            return Rearm::NewSession;
        }
        let Some(client) = inner.client.read().unwrap_or_else(|p| p.into_inner()).clone() else {
            return Rearm::Closed;
        };
        // A request sent as the session ends may never be answered.
        let attempt = tokio::select! {
            r = tokio::time::timeout(inner.connection_timeout, client.watch(path, mode)) => match r {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("no answer within the connection timeout".to_string()),
            },
            _ = closed.changed() => return Rearm::Closed,
        };
        match attempt {
            Ok(fresh) => {
                drop(fresh);
                count_rearm(inner);
                return Rearm::Done;
            }
            Err(e) => {
                tracing::warn!(path, error = %e, "could not re-arm a ZooKeeper watch after a reconnect; retrying");
                let mut next_session = generation.clone();
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {},
                    _ = next_session.changed() => return Rearm::NewSession,
                    _ = closed.changed() => return Rearm::Closed,
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}

fn count_rearm(inner: &Inner) {
    inner.watch_rearms.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("kastle_zk_watch_rearms_total").increment(1);
}
