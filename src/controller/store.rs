//! What the controller needs from its ZooKeeper client beyond [`ZkStore`]: session changes (to
//! resign when the session ends and run for election when a new one is up), a request count
//! for the failover timing line, and the chroot for one log line. The real session
//! ([`ZkSession`]) and the in-memory fake ([`FakeZk`]) implement it, so the same controller
//! loop runs against ZooKeeper in a broker and against the fake in unit tests.
//!
//! A generic parameter rather than a trait object: [`ZkStore`]'s methods return `impl Future`
//! and so are not object safe, and boxing every ZooKeeper call would change the real path.

use tokio::sync::broadcast;

use crate::zk::fake::FakeZk;
use crate::zk::session::{SessionEvent, ZkSession};
use crate::zk::store::ZkStore;

/// A ZooKeeper client the controller can run on.
pub trait ControllerStore: ZkStore + Clone {
    /// Session endings and establishments, as they happen.
    fn session_events(&self) -> broadcast::Receiver<SessionEvent>;

    /// ZooKeeper requests sent so far (a multi counts once).
    fn requests(&self) -> u64;

    /// The chroot paths are relative to, for messages.
    fn chroot(&self) -> String;
}

impl ControllerStore for ZkSession {
    fn session_events(&self) -> broadcast::Receiver<SessionEvent> {
        self.subscribe()
    }

    fn requests(&self) -> u64 {
        ZkSession::requests(self)
    }

    fn chroot(&self) -> String {
        self.connect_string().chroot.as_deref().unwrap_or("/").to_string()
    }
}

impl ControllerStore for FakeZk {
    fn session_events(&self) -> broadcast::Receiver<SessionEvent> {
        self.subscribe()
    }

    fn requests(&self) -> u64 {
        FakeZk::requests(self)
    }

    fn chroot(&self) -> String {
        "/".to_string()
    }
}
