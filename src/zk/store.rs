//! The store abstraction every ZooKeeper user in kastle goes through: a handful of async
//! operations with Kafka-relevant semantics (create with mode, versioned set/delete, multi,
//! persistent watches), implemented by the real client ([`super::session::ZkSession`]) and by
//! the in-memory fake ([`super::fake::FakeZk`]) used by unit tests of pure logic.
//!
//! Paths given to a store are always relative to the chroot; stores never see the chroot.

use std::future::Future;

use tokio::sync::mpsc;

use crate::types::ZkVersion;

/// What can go wrong talking to ZooKeeper. Variants are the conditions callers branch on;
/// everything else is `Unavailable` (retry later) or `Other`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZkError {
    #[error("znode {path} does not exist")]
    NoNode { path: String },
    #[error("znode {path} already exists")]
    NodeExists { path: String },
    #[error("znode {path} is not at the expected version")]
    BadVersion { path: String },
    #[error("znode {path} has children")]
    NotEmpty { path: String },
    #[error("the ZooKeeper session expired")]
    SessionExpired,
    #[error("ZooKeeper is unavailable: {reason}")]
    Unavailable { reason: String },
    #[error("ZooKeeper multi failed at op {index} ({path}): {source}")]
    MultiFailed {
        index: usize,
        path: String,
        source: Box<ZkError>,
    },
    #[error("ZooKeeper refused {path}: {reason}")]
    Other { path: String, reason: String },
}

impl ZkError {
    /// The error of the op that made a multi fail, or the error itself.
    pub fn root(&self) -> &ZkError {
        match self {
            ZkError::MultiFailed { source, .. } => source.root(),
            other => other,
        }
    }
}

/// The subset of ZooKeeper's `Stat` kastle uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// zxid of the create; for `/brokers/ids/<id>` this is the broker epoch (KIP-380).
    pub czxid: i64,
    pub mzxid: i64,
    /// Data version, the token for conditional writes.
    pub version: ZkVersion,
    /// Session id owning an ephemeral znode, 0 for persistent ones.
    pub ephemeral_owner: i64,
    pub num_children: i32,
    pub ctime: i64,
    pub mtime: i64,
}

/// How a znode is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
}

impl CreateMode {
    pub fn is_sequential(self) -> bool {
        matches!(self, CreateMode::PersistentSequential | CreateMode::EphemeralSequential)
    }

    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }
}

/// One operation of an atomic `multi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Check {
        path: String,
        version: ZkVersion,
    },
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<ZkVersion>,
    },
    Delete {
        path: String,
        version: Option<ZkVersion>,
    },
}

impl Op {
    pub fn path(&self) -> &str {
        match self {
            Op::Check { path, .. } | Op::Create { path, .. } | Op::SetData { path, .. } | Op::Delete { path, .. } => {
                path
            }
        }
    }
}

/// The result of one successful multi op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Check,
    /// The created path (with its sequence suffix for sequential creates).
    Create {
        path: String,
    },
    SetData {
        stat: Stat,
    },
    Delete,
}

/// Which changes a persistent watch reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// Creation, deletion and data changes of the path, and changes of its child list.
    Persistent,
    /// Like `Persistent`, for the path and every descendant.
    PersistentRecursive,
}

/// What a watch reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    Created {
        path: String,
    },
    Deleted {
        path: String,
    },
    DataChanged {
        path: String,
    },
    ChildrenChanged {
        path: String,
    },
    /// The session was replaced and the watch re-armed: changes in between were not seen, so
    /// the owner must re-read what it watches.
    Rearmed,
}

/// One read of [`ZkStore::get_data_many`]: the znode's data and stat, or why not.
pub type ReadResult = Result<(Vec<u8>, Stat), ZkError>;

/// A persistent watch; ends when the store is closed.
pub type WatchStream = mpsc::UnboundedReceiver<WatchEvent>;

/// The operations kastle needs from ZooKeeper.
pub trait ZkStore: Send + Sync + 'static {
    /// Creates `path`; returns the created path (sequence suffix included) and its stat.
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<(String, Stat), ZkError>> + Send;

    fn get_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat), ZkError>> + Send;

    /// Reads many znodes: each one's data and stat, or its own error, in the order asked. The
    /// outer error is for the store as a whole (e.g. the session is gone). The real store
    /// batches them into few requests (ZooKeeper 3.6+ `multiRead`); this default reads one by one.
    fn get_data_many(&self, paths: &[String]) -> impl Future<Output = Result<Vec<ReadResult>, ZkError>> + Send {
        async move {
            let mut out = Vec::with_capacity(paths.len());
            for path in paths {
                out.push(self.get_data(path).await);
            }
            Ok(out)
        }
    }

    fn exists(&self, path: &str) -> impl Future<Output = Result<Option<Stat>, ZkError>> + Send;

    fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<ZkVersion>,
    ) -> impl Future<Output = Result<Stat, ZkError>> + Send;

    fn delete(&self, path: &str, version: Option<ZkVersion>) -> impl Future<Output = Result<(), ZkError>> + Send;

    /// Child names (not paths), sorted.
    fn children(&self, path: &str) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send;

    /// Applies every op or none.
    fn multi(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>, ZkError>> + Send;

    /// Starts a persistent watch that survives session replacement (reporting `Rearmed`).
    fn watch(&self, path: &str, mode: WatchMode) -> impl Future<Output = Result<WatchStream, ZkError>> + Send;

    /// The current session's id (owner of the ephemerals this store creates).
    fn session_id(&self) -> i64;
}

/// `mkdir -p`: creates `path` and any missing ancestors as empty persistent znodes.
pub async fn create_recursive<S: ZkStore>(store: &S, path: &str) -> Result<(), ZkError> {
    let mut prefix = String::with_capacity(path.len());
    for part in path.split('/').filter(|p| !p.is_empty()) {
        prefix.push('/');
        prefix.push_str(part);
        match store.create(&prefix, &[], CreateMode::Persistent).await {
            Ok(_) | Err(ZkError::NodeExists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Splits `/a/b/c` into (`/a/b`, `c`); the root's children have parent `/`.
pub fn split_parent(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("/", path),
    }
}
