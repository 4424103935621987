//! An in-memory ZooKeeper for unit tests of pure logic (codecs, registration rules, the
//! controller's decisions) and of the controller's loop. It keeps ZooKeeper's semantics that
//! kastle relies on: versions, czxids, ephemeral owners, sequential suffixes, atomic multi
//! (a failed `Check` of `/controller_epoch` fails a fenced multi with BADVERSION at op 0),
//! persistent watches, and sessions.
//!
//! Each client ([`FakeZk::with_session`]) has its own session on the shared tree, and tests
//! can inject the faults the controller must survive: [`FakeZk::expire_session`] (the
//! session's ephemerals vanish, other clients' watches fire, its own calls fail with
//! `SessionExpired` until [`FakeZk::renew_session`]), [`FakeZk::hold_watches`] (watch events
//! wait until [`FakeZk::release_watches`]) and [`FakeZk::lose_next_write_reply`] (the next
//! write is applied but its caller sees a connection loss). Integration tests use a real
//! ZooKeeper instead.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, mpsc};

use super::session::SessionEvent;
use super::store::{
    split_parent, CreateMode, Op, OpResult, Stat, WatchEvent, WatchMode, WatchStream, ZkError, ZkStore,
};
use crate::types::ZkVersion;

#[derive(Debug, Clone)]
struct Node {
    data: Vec<u8>,
    stat: Stat,
    /// Next sequence number for sequential children.
    next_seq: i32,
}

#[derive(Debug)]
struct Watcher {
    /// The client that set it (an index into `State::clients`).
    client: usize,
    path: String,
    mode: WatchMode,
    tx: mpsc::UnboundedSender<WatchEvent>,
}

/// One client's session and the faults armed on it.
#[derive(Debug)]
struct Client {
    session_id: i64,
    /// The session expired and was not renewed: calls fail, watch events are lost.
    expired: bool,
    /// Watch events for this client wait in `State::held`.
    holding: bool,
    /// Writes still to be applied with their reply lost.
    lost_replies: u32,
    /// Calls made (a multi counts once).
    requests: u64,
    /// Disconnected from the server: calls fail with a connection loss, watch events wait.
    disconnected: bool,
    events: broadcast::Sender<SessionEvent>,
}

#[derive(Debug)]
struct State {
    nodes: BTreeMap<String, Node>,
    zxid: i64,
    last_session: i64,
    clients: Vec<Client>,
    watchers: Vec<Watcher>,
    /// Watch events held back, in the order they happened: (client, its stream, event).
    held: Vec<(usize, mpsc::UnboundedSender<WatchEvent>, WatchEvent)>,
    /// Every applied write, in order, once [`FakeZk::record_writes`] was called.
    writes: Option<Vec<Write>>,
}

/// One applied write (for the controller simulation's invariants).
#[derive(Debug, Clone)]
pub struct Write {
    /// The session that made it.
    pub session: i64,
    /// The znode created, set or deleted.
    pub path: String,
    /// What was written (`None` for a delete).
    pub data: Option<Vec<u8>>,
    /// `/controller_epoch`'s contents once the write was applied (empty if absent).
    pub controller_epoch: Vec<u8>,
}

impl State {
    fn new_client(&mut self) -> usize {
        self.last_session += 1;
        let (events, _) = broadcast::channel(64);
        self.clients.push(Client {
            session_id: self.last_session,
            expired: false,
            holding: false,
            lost_replies: 0,
            requests: 0,
            disconnected: false,
            events,
        });
        self.clients.len() - 1
    }
}

/// The fake store. Clones share one tree and one session; [`FakeZk::with_session`] gives
/// another "client" (its own session) on the same tree.
#[derive(Debug, Clone)]
pub struct FakeZk {
    state: Arc<Mutex<State>>,
    client: usize,
}

impl Default for FakeZk {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeZk {
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "/".to_string(),
            Node {
                data: Vec::new(),
                stat: new_stat(0, 0),
                next_seq: 0,
            },
        );
        let mut state = State {
            nodes,
            zxid: 0,
            last_session: 0,
            clients: Vec::new(),
            watchers: Vec::new(),
            held: Vec::new(),
            writes: None,
        };
        let client = state.new_client();
        FakeZk {
            state: Arc::new(Mutex::new(state)),
            client,
        }
    }

    /// A second client with its own session on the same tree.
    pub fn with_session(&self) -> FakeZk {
        let client = self.lock().new_client();
        FakeZk {
            state: self.state.clone(),
            client,
        }
    }

    /// Expires this client's session, as ZooKeeper does when the client is silent past the
    /// session timeout: its ephemerals vanish (other clients' watches fire), watch events for
    /// it are lost, subscribers get `SessionEvent::Ended`, and every call fails with
    /// `SessionExpired` until [`FakeZk::renew_session`]. A no-op on an expired session.
    pub fn expire_session(&self) {
        let mut st = self.lock();
        let me = self.client;
        if st.clients[me].expired {
            return;
        }
        st.clients[me].expired = true;
        st.held.retain(|(client, _, _)| *client != me);
        let old = st.clients[me].session_id;
        let doomed: Vec<String> = st
            .nodes
            .iter()
            .filter(|(_, n)| n.stat.ephemeral_owner == old)
            .map(|(p, _)| p.clone())
            .collect();
        for path in doomed {
            st.nodes.remove(&path);
            st.zxid += 1;
            let (parent, _) = split_parent(&path);
            if let Some(p) = st.nodes.get_mut(parent) {
                p.stat.num_children -= 1;
            }
            notify(&mut st, &path, WatchEvent::Deleted { path: path.clone() });
            notify(
                &mut st,
                parent,
                WatchEvent::ChildrenChanged {
                    path: parent.to_string(),
                },
            );
        }
        let _ = st.clients[me].events.send(SessionEvent::Ended {
            session_id: old,
            state: "Expired".into(),
        });
    }

    /// A new session for an expired client (what the real session handler does after an
    /// expiry): calls work again, ephemerals are owned by the new session id, its watches
    /// report `Rearmed` and subscribers get `SessionEvent::Established`.
    pub fn renew_session(&self) {
        let mut st = self.lock();
        let me = self.client;
        st.last_session += 1;
        let id = st.last_session;
        let client = &mut st.clients[me];
        client.session_id = id;
        client.expired = false;
        let _ = client.events.send(SessionEvent::Established { session_id: id });
        deliver_to(&mut st, me, WatchEvent::Rearmed);
    }

    /// Session changes of this client (as [`super::session::ZkSession::subscribe`]).
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.lock().clients[self.client].events.subscribe()
    }

    /// Holds every watch event for this client until [`FakeZk::release_watches`] (a slow or
    /// partitioned client connection).
    pub fn hold_watches(&self) {
        self.lock().clients[self.client].holding = true;
    }

    /// Delivers the held watch events, in the order they happened, and stops holding.
    pub fn release_watches(&self) {
        let mut st = self.lock();
        let me = self.client;
        st.clients[me].holding = false;
        let held = std::mem::take(&mut st.held);
        for (client, tx, event) in held {
            if client == me {
                let _ = tx.send(event);
            } else {
                st.held.push((client, tx, event));
            }
        }
    }

    /// Watch events being held for this client.
    pub fn held_watch_events(&self) -> usize {
        let st = self.lock();
        st.held.iter().filter(|(c, _, _)| *c == self.client).count()
    }

    /// The next write of this client (create, set, delete or multi) that ZooKeeper applies
    /// answers with a connection loss: the change is made, the caller cannot know it.
    pub fn lose_next_write_reply(&self) {
        self.lock().clients[self.client].lost_replies += 1;
    }

    /// Cuts this client off the server (a ZooKeeper disconnect shorter than the session
    /// timeout): calls fail with a connection loss and watch events wait, until
    /// [`FakeZk::reconnect`]. Ephemerals stay.
    pub fn disconnect(&self) {
        let mut st = self.lock();
        st.clients[self.client].disconnected = true;
        st.clients[self.client].holding = true;
    }

    /// Ends a [`FakeZk::disconnect`]: calls work again and the events that waited arrive.
    pub fn reconnect(&self) {
        self.lock().clients[self.client].disconnected = false;
        self.release_watches();
    }

    /// Starts recording every applied write of every client (see [`FakeZk::take_writes`]).
    pub fn record_writes(&self) {
        self.lock().writes.get_or_insert_with(Vec::new);
    }

    /// The writes recorded since the last call.
    pub fn take_writes(&self) -> Vec<Write> {
        self.lock().writes.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Every znode's path, data and stat, as they are now.
    pub fn snapshot(&self) -> BTreeMap<String, (Vec<u8>, Stat)> {
        let st = self.lock();
        st.nodes
            .iter()
            .map(|(p, n)| (p.clone(), (n.data.clone(), n.stat)))
            .collect()
    }

    /// Calls this client made (a multi counts once).
    pub fn requests(&self) -> u64 {
        self.lock().clients[self.client].requests
    }

    /// Whether this client's session is expired (and not yet renewed).
    pub fn is_expired(&self) -> bool {
        self.lock().clients[self.client].expired
    }

    fn current_session(&self) -> i64 {
        self.lock().clients[self.client].session_id
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts a call and refuses it on an expired session.
    fn begin(&self) -> Result<MutexGuard<'_, State>, ZkError> {
        let mut st = self.lock();
        let client = &mut st.clients[self.client];
        client.requests += 1;
        if client.expired {
            return Err(ZkError::SessionExpired);
        }
        if client.disconnected {
            return Err(ZkError::Unavailable {
                reason: "connection loss (disconnected)".into(),
            });
        }
        Ok(st)
    }

    /// Records an applied write, if recording.
    fn record(&self, st: &mut State, path: &str, data: Option<&[u8]>) {
        if st.writes.is_none() {
            return;
        }
        let session = st.clients[self.client].session_id;
        let controller_epoch = st
            .nodes
            .get(crate::zk::paths::CONTROLLER_EPOCH)
            .map(|n| n.data.clone())
            .unwrap_or_default();
        if let Some(writes) = st.writes.as_mut() {
            writes.push(Write {
                session,
                path: path.to_string(),
                data: data.map(<[u8]>::to_vec),
                controller_epoch,
            });
        }
    }

    /// What a write that was applied answers: its result, or a connection loss if one was armed.
    fn reply<T>(&self, st: &mut State, result: Result<T, ZkError>) -> Result<T, ZkError> {
        let client = &mut st.clients[self.client];
        if result.is_ok() && client.lost_replies > 0 {
            client.lost_replies -= 1;
            return Err(ZkError::Unavailable {
                reason: "connection loss (the write was applied)".into(),
            });
        }
        result
    }

    fn apply(&self, st: &mut State, op: &Op) -> Result<OpResult, ZkError> {
        match op {
            Op::Check { path, version } => {
                let node = st
                    .nodes
                    .get(path)
                    .ok_or_else(|| ZkError::NoNode { path: path.clone() })?;
                if node.stat.version != *version {
                    return Err(ZkError::BadVersion { path: path.clone() });
                }
                Ok(OpResult::Check)
            }
            Op::Create { path, data, mode } => {
                let (created, _) = self.create_locked(st, path, data, *mode)?;
                Ok(OpResult::Create { path: created })
            }
            Op::SetData { path, data, version } => {
                let zxid = st.zxid + 1;
                let node = st
                    .nodes
                    .get_mut(path)
                    .ok_or_else(|| ZkError::NoNode { path: path.clone() })?;
                if version.is_some_and(|v| v != node.stat.version) {
                    return Err(ZkError::BadVersion { path: path.clone() });
                }
                node.data = data.clone();
                node.stat.version = ZkVersion(node.stat.version.0 + 1);
                node.stat.mzxid = zxid;
                let stat = node.stat;
                st.zxid = zxid;
                notify(st, path, WatchEvent::DataChanged { path: path.clone() });
                Ok(OpResult::SetData { stat })
            }
            Op::Delete { path, version } => {
                let node = st
                    .nodes
                    .get(path)
                    .ok_or_else(|| ZkError::NoNode { path: path.clone() })?;
                if version.is_some_and(|v| v != node.stat.version) {
                    return Err(ZkError::BadVersion { path: path.clone() });
                }
                if node.stat.num_children > 0 {
                    return Err(ZkError::NotEmpty { path: path.clone() });
                }
                st.nodes.remove(path);
                st.zxid += 1;
                let (parent, _) = split_parent(path);
                if let Some(p) = st.nodes.get_mut(parent) {
                    p.stat.num_children -= 1;
                }
                notify(st, path, WatchEvent::Deleted { path: path.clone() });
                notify(
                    st,
                    parent,
                    WatchEvent::ChildrenChanged {
                        path: parent.to_string(),
                    },
                );
                Ok(OpResult::Delete)
            }
        }
    }

    fn create_locked(
        &self,
        st: &mut State,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        let (parent, _) = split_parent(path);
        let parent_node = st
            .nodes
            .get_mut(parent)
            .ok_or_else(|| ZkError::NoNode { path: path.to_string() })?;
        if parent_node.stat.ephemeral_owner != 0 {
            return Err(ZkError::Other {
                path: path.to_string(),
                reason: "ephemeral znodes have no children".into(),
            });
        }
        let full = if mode.is_sequential() {
            let seq = parent_node.next_seq;
            format!("{path}{seq:010}")
        } else {
            path.to_string()
        };
        if st.nodes.contains_key(&full) {
            return Err(ZkError::NodeExists { path: full });
        }
        st.zxid += 1;
        let zxid = st.zxid;
        if let Some(p) = st.nodes.get_mut(parent) {
            p.next_seq += 1;
            p.stat.num_children += 1;
        }
        let mut stat = new_stat(zxid, 0);
        if mode.is_ephemeral() {
            stat.ephemeral_owner = st.clients[self.client].session_id;
        }
        st.nodes.insert(
            full.clone(),
            Node {
                data: data.to_vec(),
                stat,
                next_seq: 0,
            },
        );
        notify(st, &full, WatchEvent::Created { path: full.clone() });
        notify(
            st,
            parent,
            WatchEvent::ChildrenChanged {
                path: parent.to_string(),
            },
        );
        Ok((full, stat))
    }
}

fn new_stat(zxid: i64, owner: i64) -> Stat {
    Stat {
        czxid: zxid,
        mzxid: zxid,
        version: ZkVersion(0),
        ephemeral_owner: owner,
        num_children: 0,
        ctime: 0,
        mtime: 0,
    }
}

/// Reports `event` on `path` to every watcher it concerns.
fn notify(st: &mut State, path: &str, event: WatchEvent) {
    let watchers = std::mem::take(&mut st.watchers);
    let mut kept = Vec::with_capacity(watchers.len());
    for w in watchers {
        let hit = match w.mode {
            WatchMode::Persistent => w.path == path,
            WatchMode::PersistentRecursive => {
                path == w.path
                    || w.path == "/"
                    || path.strip_prefix(w.path.as_str()).is_some_and(|r| r.starts_with('/'))
            }
        };
        // A recursive watch does not report child-list changes, as in ZooKeeper.
        let reported =
            !(matches!(w.mode, WatchMode::PersistentRecursive) && matches!(event, WatchEvent::ChildrenChanged { .. }));
        if !(hit && reported) || deliver(st, &w, event.clone()) {
            kept.push(w);
        }
    }
    st.watchers = kept;
}

/// Reports `event` to every watcher of `client`.
fn deliver_to(st: &mut State, client: usize, event: WatchEvent) {
    let watchers = std::mem::take(&mut st.watchers);
    let mut kept = Vec::with_capacity(watchers.len());
    for w in watchers {
        if w.client != client || deliver(st, &w, event.clone()) {
            kept.push(w);
        }
    }
    st.watchers = kept;
}

/// Sends, holds or (for an expired session) loses one event; `false` once the watch's stream
/// is gone.
fn deliver(st: &mut State, w: &Watcher, event: WatchEvent) -> bool {
    let client = &st.clients[w.client];
    if w.tx.is_closed() {
        return false;
    }
    if client.expired {
        return true;
    }
    if client.holding {
        st.held.push((w.client, w.tx.clone(), event));
        return true;
    }
    w.tx.send(event).is_ok()
}

impl ZkStore for FakeZk {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat), ZkError> {
        let mut st = self.begin()?;
        let result = self.create_locked(&mut st, path, data, mode);
        if let Ok((created, _)) = &result {
            self.record(&mut st, created, Some(data));
        }
        self.reply(&mut st, result)
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        let st = self.begin()?;
        let node = st
            .nodes
            .get(path)
            .ok_or_else(|| ZkError::NoNode { path: path.to_string() })?;
        Ok((node.data.clone(), node.stat))
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        Ok(self.begin()?.nodes.get(path).map(|n| n.stat))
    }

    async fn set_data(&self, path: &str, data: &[u8], version: Option<ZkVersion>) -> Result<Stat, ZkError> {
        let mut st = self.begin()?;
        let op = Op::SetData {
            path: path.to_string(),
            data: data.to_vec(),
            version,
        };
        let result = match self.apply(&mut st, &op) {
            Ok(OpResult::SetData { stat }) => Ok(stat),
            Ok(other) => Err(ZkError::Other {
                path: path.to_string(),
                reason: format!("unexpected result {other:?}"),
            }),
            Err(e) => Err(e),
        };
        if result.is_ok() {
            self.record(&mut st, path, Some(data));
        }
        self.reply(&mut st, result)
    }

    async fn delete(&self, path: &str, version: Option<ZkVersion>) -> Result<(), ZkError> {
        let mut st = self.begin()?;
        let op = Op::Delete {
            path: path.to_string(),
            version,
        };
        let result = self.apply(&mut st, &op).map(|_| ());
        if result.is_ok() {
            self.record(&mut st, path, None);
        }
        self.reply(&mut st, result)
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, ZkError> {
        let st = self.begin()?;
        if !st.nodes.contains_key(path) {
            return Err(ZkError::NoNode { path: path.to_string() });
        }
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        Ok(st
            .nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| p.len() > prefix.len() && !p[prefix.len()..].contains('/'))
            .map(|(p, _)| p[prefix.len()..].to_string())
            .collect())
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        let mut st = self.begin()?;
        // Apply to a copy so a failing op leaves the tree untouched; watchers fire only on commit.
        let nodes = st.nodes.clone();
        let zxid = st.zxid;
        let watchers = std::mem::take(&mut st.watchers);
        let mut results = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            match self.apply(&mut st, op) {
                Ok(r) => results.push(r),
                Err(e) => {
                    st.nodes = nodes;
                    st.zxid = zxid;
                    st.watchers = watchers;
                    return Err(ZkError::MultiFailed {
                        index,
                        path: op.path().to_string(),
                        source: Box::new(e),
                    });
                }
            }
        }
        st.watchers = watchers;
        for (op, result) in ops.iter().zip(&results) {
            // A sequential create reports the path it created.
            let path = match result {
                OpResult::Create { path } => path.as_str(),
                _ => op.path(),
            };
            let (parent, _) = split_parent(path);
            match op {
                Op::Create { data, .. } | Op::SetData { data, .. } => self.record(&mut st, path, Some(data)),
                Op::Delete { .. } => self.record(&mut st, path, None),
                Op::Check { .. } => {}
            }
            let event = match op {
                Op::Check { .. } => continue,
                Op::Create { .. } => WatchEvent::Created { path: path.to_string() },
                Op::SetData { .. } => WatchEvent::DataChanged { path: path.to_string() },
                Op::Delete { .. } => WatchEvent::Deleted { path: path.to_string() },
            };
            notify(&mut st, path, event);
            if matches!(op, Op::Create { .. } | Op::Delete { .. }) {
                notify(
                    &mut st,
                    parent,
                    WatchEvent::ChildrenChanged {
                        path: parent.to_string(),
                    },
                );
            }
        }
        self.reply(&mut st, Ok(results))
    }

    async fn watch(&self, path: &str, mode: WatchMode) -> Result<WatchStream, ZkError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.begin()?.watchers.push(Watcher {
            client: self.client,
            path: path.to_string(),
            mode,
            tx,
        });
        Ok(rx)
    }

    fn session_id(&self) -> i64 {
        self.current_session()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sequential_creates_get_ten_digit_suffixes() {
        let zk = FakeZk::new();
        zk.create("/n", &[], CreateMode::Persistent).await.expect("create");
        let (a, _) = zk
            .create("/n/isr_change_", b"x", CreateMode::PersistentSequential)
            .await
            .expect("seq");
        let (b, _) = zk
            .create("/n/isr_change_", b"y", CreateMode::PersistentSequential)
            .await
            .expect("seq");
        assert_eq!(a, "/n/isr_change_0000000000");
        assert_eq!(b, "/n/isr_change_0000000001");
        assert_eq!(
            zk.children("/n").await.expect("children"),
            vec!["isr_change_0000000000", "isr_change_0000000001"]
        );
    }

    #[tokio::test]
    async fn failed_multi_changes_nothing() {
        let zk = FakeZk::new();
        zk.create("/e", b"0", CreateMode::Persistent).await.expect("create");
        let err = zk
            .multi(vec![
                Op::Create {
                    path: "/c".into(),
                    data: vec![],
                    mode: CreateMode::Ephemeral,
                },
                Op::SetData {
                    path: "/e".into(),
                    data: b"1".to_vec(),
                    version: Some(ZkVersion(5)),
                },
            ])
            .await
            .expect_err("bad version");
        assert!(matches!(err.root(), ZkError::BadVersion { .. }));
        assert_eq!(zk.exists("/c").await.expect("exists"), None);
    }

    /// Expiry: the session's ephemerals go (other clients' watches see it), its calls fail
    /// with SessionExpired and its own watches hear nothing until a new session re-arms them.
    #[tokio::test]
    async fn expiry_removes_that_sessions_ephemerals_and_fails_its_calls_until_renewed() {
        let a = FakeZk::new();
        let b = a.with_session();
        a.create("/a", &[], CreateMode::Ephemeral).await.expect("a");
        b.create("/b", &[], CreateMode::Ephemeral).await.expect("b");
        let mut seen_by_b = b.watch("/a", WatchMode::Persistent).await.expect("watch");
        let mut seen_by_a = a.watch("/b", WatchMode::Persistent).await.expect("watch");
        let mut sessions = a.subscribe();
        let old = a.session_id();
        a.expire_session();
        assert!(a.is_expired());
        assert_eq!(b.exists("/a").await.expect("exists"), None);
        assert!(b.exists("/b").await.expect("exists").is_some());
        assert_eq!(seen_by_b.recv().await, Some(WatchEvent::Deleted { path: "/a".into() }));
        assert_eq!(a.exists("/b").await, Err(ZkError::SessionExpired));
        assert_eq!(
            a.create("/c", &[], CreateMode::Persistent).await,
            Err(ZkError::SessionExpired)
        );
        assert_eq!(a.multi(vec![]).await, Err(ZkError::SessionExpired));
        b.delete("/b", None).await.expect("delete");
        assert!(seen_by_a.try_recv().is_err(), "an expired session hears nothing");
        assert_eq!(
            sessions.recv().await.expect("ended"),
            SessionEvent::Ended {
                session_id: old,
                state: "Expired".into()
            }
        );
        a.renew_session();
        assert_ne!(a.session_id(), old);
        assert_eq!(seen_by_a.recv().await, Some(WatchEvent::Rearmed));
        assert!(matches!(
            sessions.recv().await.expect("established"),
            SessionEvent::Established { session_id } if session_id == a.session_id()
        ));
        let (_, stat) = a.create("/a", &[], CreateMode::Ephemeral).await.expect("again");
        assert_eq!(stat.ephemeral_owner, a.session_id());
    }

    /// Held watch events wait, in order, until released; other clients are not held.
    #[tokio::test]
    async fn held_watch_events_arrive_in_order_when_released() {
        let zk = FakeZk::new();
        let other = zk.with_session();
        zk.create("/w", b"0", CreateMode::Persistent).await.expect("create");
        let mut held = zk.watch("/w", WatchMode::Persistent).await.expect("watch");
        let mut free = other.watch("/w", WatchMode::Persistent).await.expect("watch");
        zk.hold_watches();
        other.set_data("/w", b"1", None).await.expect("set");
        other.delete("/w", None).await.expect("delete");
        assert!(held.try_recv().is_err(), "held back");
        assert_eq!(zk.held_watch_events(), 2);
        assert_eq!(free.recv().await, Some(WatchEvent::DataChanged { path: "/w".into() }));
        zk.release_watches();
        assert_eq!(zk.held_watch_events(), 0);
        assert_eq!(held.recv().await, Some(WatchEvent::DataChanged { path: "/w".into() }));
        assert_eq!(held.recv().await, Some(WatchEvent::Deleted { path: "/w".into() }));
        other.create("/w", b"2", CreateMode::Persistent).await.expect("create");
        assert_eq!(held.recv().await, Some(WatchEvent::Created { path: "/w".into() }));
    }

    /// A lost reply: the write is applied, the caller sees a connection loss; a write that
    /// fails does not use up the fault, and the one after it answers normally.
    #[tokio::test]
    async fn a_lost_reply_applies_the_write_and_reports_connection_loss() {
        let zk = FakeZk::new();
        zk.create("/x", b"0", CreateMode::Persistent).await.expect("create");
        zk.lose_next_write_reply();
        assert!(matches!(
            zk.set_data("/x", b"1", Some(ZkVersion(7))).await,
            Err(ZkError::BadVersion { .. })
        ));
        assert!(matches!(
            zk.set_data("/x", b"1", Some(ZkVersion(0))).await,
            Err(ZkError::Unavailable { .. })
        ));
        let (data, stat) = zk.get_data("/x").await.expect("read");
        assert_eq!((data.as_slice(), stat.version), (&b"1"[..], ZkVersion(1)));
        zk.lose_next_write_reply();
        let ops = vec![Op::Create {
            path: "/y".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        }];
        assert!(matches!(zk.multi(ops).await, Err(ZkError::Unavailable { .. })));
        assert!(zk.exists("/y").await.expect("exists").is_some());
        zk.delete("/y", None).await.expect("answered normally");
    }

    /// A fenced multi whose `/controller_epoch` check is stale (another controller bumped the
    /// epoch) fails at op 0 with BADVERSION and applies nothing.
    #[tokio::test]
    async fn a_stale_epoch_check_fails_the_multi_with_badversion_at_op_zero() {
        let zombie = FakeZk::new();
        let winner = zombie.with_session();
        zombie
            .create("/controller_epoch", b"1", CreateMode::Persistent)
            .await
            .expect("epoch");
        winner
            .set_data("/controller_epoch", b"2", Some(ZkVersion(0)))
            .await
            .expect("bump");
        let err = zombie
            .multi(vec![
                Op::Check {
                    path: "/controller_epoch".into(),
                    version: ZkVersion(0),
                },
                Op::Create {
                    path: "/state".into(),
                    data: b"zombie".to_vec(),
                    mode: CreateMode::Persistent,
                },
            ])
            .await
            .expect_err("fenced");
        assert!(matches!(&err, ZkError::MultiFailed { index: 0, .. }));
        assert!(matches!(err.root(), ZkError::BadVersion { path } if path == "/controller_epoch"));
        assert_eq!(winner.exists("/state").await.expect("exists"), None);
    }

    /// A sequential create inside a multi reports the path it created to watchers.
    #[tokio::test]
    async fn a_sequential_create_in_a_multi_reports_its_created_path() {
        let zk = FakeZk::new();
        zk.create("/n", &[], CreateMode::Persistent).await.expect("create");
        let mut w = zk.watch("/n", WatchMode::PersistentRecursive).await.expect("watch");
        zk.multi(vec![Op::Create {
            path: "/n/s_".into(),
            data: vec![],
            mode: CreateMode::PersistentSequential,
        }])
        .await
        .expect("multi");
        assert_eq!(
            w.recv().await,
            Some(WatchEvent::Created {
                path: "/n/s_0000000000".into()
            })
        );
    }
}
