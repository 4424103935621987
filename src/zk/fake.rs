//! An in-memory ZooKeeper for unit tests of pure logic (codecs, registration rules, the
//! controller's decisions). It keeps ZooKeeper's semantics that kastle relies on: versions,
//! czxids, ephemeral owners, sequential suffixes, atomic multi, persistent watches, and session
//! expiry dropping ephemerals. Integration tests use a real ZooKeeper instead.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

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
    path: String,
    mode: WatchMode,
    tx: mpsc::UnboundedSender<WatchEvent>,
}

#[derive(Debug)]
struct State {
    nodes: BTreeMap<String, Node>,
    zxid: i64,
    session_id: i64,
    watchers: Vec<Watcher>,
}

/// The fake store. Clones share one tree; [`FakeZk::with_session`] gives another "client"
/// (its own session) on the same tree.
#[derive(Debug, Clone)]
pub struct FakeZk {
    state: Arc<Mutex<State>>,
    session_id: Arc<Mutex<i64>>,
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
        let state = State {
            nodes,
            zxid: 0,
            session_id: 1,
            watchers: Vec::new(),
        };
        FakeZk {
            state: Arc::new(Mutex::new(state)),
            session_id: Arc::new(Mutex::new(1)),
        }
    }

    /// A second client with its own session on the same tree.
    pub fn with_session(&self) -> FakeZk {
        let mut st = self.lock();
        st.session_id += 1;
        FakeZk {
            state: self.state.clone(),
            session_id: Arc::new(Mutex::new(st.session_id)),
        }
    }

    /// Expires this client's session: its ephemerals vanish and it gets a new session id;
    /// watches report `Rearmed` as the real session handler does.
    pub fn expire_session(&self) {
        let mut st = self.lock();
        let old = self.current_session();
        let doomed: Vec<String> = st
            .nodes
            .iter()
            .filter(|(_, n)| n.stat.ephemeral_owner == old)
            .map(|(p, _)| p.clone())
            .collect();
        for path in doomed {
            st.nodes.remove(&path);
            st.zxid += 1;
            notify(&mut st, &path, WatchEvent::Deleted { path: path.clone() });
            let (parent, _) = split_parent(&path);
            notify(
                &mut st,
                parent,
                WatchEvent::ChildrenChanged {
                    path: parent.to_string(),
                },
            );
        }
        st.session_id += 1;
        let new_id = st.session_id;
        *lock_session(&self.session_id) = new_id;
        st.watchers.retain(|w| w.tx.send(WatchEvent::Rearmed).is_ok());
    }

    fn current_session(&self) -> i64 {
        *lock_session(&self.session_id)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
            stat.ephemeral_owner = self.current_session();
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

fn lock_session(m: &Mutex<i64>) -> MutexGuard<'_, i64> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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

fn notify(st: &mut State, path: &str, event: WatchEvent) {
    st.watchers.retain(|w| {
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
        !(hit && reported) || w.tx.send(event.clone()).is_ok()
    });
}

impl ZkStore for FakeZk {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat), ZkError> {
        let mut st = self.lock();
        self.create_locked(&mut st, path, data, mode)
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        let st = self.lock();
        let node = st
            .nodes
            .get(path)
            .ok_or_else(|| ZkError::NoNode { path: path.to_string() })?;
        Ok((node.data.clone(), node.stat))
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        Ok(self.lock().nodes.get(path).map(|n| n.stat))
    }

    async fn set_data(&self, path: &str, data: &[u8], version: Option<ZkVersion>) -> Result<Stat, ZkError> {
        let mut st = self.lock();
        match self.apply(
            &mut st,
            &Op::SetData {
                path: path.to_string(),
                data: data.to_vec(),
                version,
            },
        )? {
            OpResult::SetData { stat } => Ok(stat),
            other => Err(ZkError::Other {
                path: path.to_string(),
                reason: format!("unexpected result {other:?}"),
            }),
        }
    }

    async fn delete(&self, path: &str, version: Option<ZkVersion>) -> Result<(), ZkError> {
        let mut st = self.lock();
        self.apply(
            &mut st,
            &Op::Delete {
                path: path.to_string(),
                version,
            },
        )
        .map(|_| ())
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, ZkError> {
        let st = self.lock();
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
        let mut st = self.lock();
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
        for op in &ops {
            let (parent, _) = split_parent(op.path());
            let event = match op {
                Op::Check { .. } => continue,
                Op::Create { path, .. } => WatchEvent::Created { path: path.clone() },
                Op::SetData { path, .. } => WatchEvent::DataChanged { path: path.clone() },
                Op::Delete { path, .. } => WatchEvent::Deleted { path: path.clone() },
            };
            notify(&mut st, op.path(), event);
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
        Ok(results)
    }

    async fn watch(&self, path: &str, mode: WatchMode) -> Result<WatchStream, ZkError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().watchers.push(Watcher {
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

    #[tokio::test]
    async fn expiry_removes_only_that_sessions_ephemerals() {
        let a = FakeZk::new();
        let b = a.with_session();
        a.create("/a", &[], CreateMode::Ephemeral).await.expect("a");
        b.create("/b", &[], CreateMode::Ephemeral).await.expect("b");
        let mut w = b.watch("/a", WatchMode::Persistent).await.expect("watch");
        a.expire_session();
        assert_eq!(a.exists("/a").await.expect("exists"), None);
        assert!(a.exists("/b").await.expect("exists").is_some());
        assert_eq!(w.recv().await, Some(WatchEvent::Deleted { path: "/a".into() }));
    }
}
