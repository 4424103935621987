//! [`super::multi`] on [`FakeZk`]: lost replies recognised per op kind, a write changed by
//! someone else not taken for ours, the fence never reconciled, retries until connected and
//! ended by a session expiry.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::multi;
use crate::types::ZkVersion;
use crate::zk::fake::FakeZk;
use crate::zk::store::{CreateMode, Op, OpResult, Stat, WatchMode, WatchStream, ZkError, ZkStore};

type Hook = Box<dyn FnOnce(&FakeZk) + Send>;

/// A [`FakeZk`] whose next `down` multis fail with a connection loss without being applied,
/// and which runs `after_loss` once, right after the first multi that reports a connection loss.
#[derive(Clone)]
struct Flaky {
    zk: FakeZk,
    down: Arc<AtomicU32>,
    after_loss: Arc<Mutex<Option<Hook>>>,
}

impl Flaky {
    fn new(zk: &FakeZk) -> Flaky {
        Flaky {
            zk: zk.clone(),
            down: Arc::new(AtomicU32::new(0)),
            after_loss: Arc::new(Mutex::new(None)),
        }
    }

    fn after_loss(self, hook: impl FnOnce(&FakeZk) + Send + 'static) -> Flaky {
        *self.after_loss.lock().expect("hook") = Some(Box::new(hook));
        self
    }
}

impl ZkStore for Flaky {
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat), ZkError> {
        self.zk.create(path, data, mode).await
    }
    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        self.zk.get_data(path).await
    }
    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        self.zk.exists(path).await
    }
    async fn set_data(&self, path: &str, data: &[u8], version: Option<ZkVersion>) -> Result<Stat, ZkError> {
        self.zk.set_data(path, data, version).await
    }
    async fn delete(&self, path: &str, version: Option<ZkVersion>) -> Result<(), ZkError> {
        self.zk.delete(path, version).await
    }
    async fn children(&self, path: &str) -> Result<Vec<String>, ZkError> {
        self.zk.children(path).await
    }
    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        let result = if self.down.load(Ordering::SeqCst) > 0 {
            self.down.fetch_sub(1, Ordering::SeqCst);
            Err(ZkError::Unavailable {
                reason: "connection loss (not sent)".into(),
            })
        } else {
            self.zk.multi(ops).await
        };
        if matches!(result, Err(ZkError::Unavailable { .. })) {
            let hook = self.after_loss.lock().expect("hook").take();
            if let Some(hook) = hook {
                hook(&self.zk);
            }
        }
        result
    }
    async fn watch(&self, path: &str, mode: WatchMode) -> Result<WatchStream, ZkError> {
        self.zk.watch(path, mode).await
    }
    fn session_id(&self) -> i64 {
        self.zk.session_id()
    }
}

/// A tree with `/controller_epoch` (version 0) and `/a` holding `old`.
async fn tree() -> FakeZk {
    let zk = FakeZk::new();
    zk.create("/controller_epoch", b"1", CreateMode::Persistent)
        .await
        .expect("epoch");
    zk.create("/a", b"old", CreateMode::Persistent).await.expect("/a");
    zk
}

fn fence() -> Op {
    Op::Check {
        path: "/controller_epoch".into(),
        version: ZkVersion(0),
    }
}

fn set_a(data: &[u8]) -> Op {
    Op::SetData {
        path: "/a".into(),
        data: data.to_vec(),
        version: Some(ZkVersion(0)),
    }
}

#[tokio::test]
async fn a_lost_reply_to_a_create_is_recognised_as_applied() {
    let zk = tree().await;
    zk.lose_next_write_reply();
    let create = Op::Create {
        path: "/b".into(),
        data: b"x".to_vec(),
        mode: CreateMode::Persistent,
    };
    let results = multi(&zk, vec![fence(), create]).await.expect("applied");
    assert_eq!(results, vec![OpResult::Check, OpResult::Create { path: "/b".into() }]);
    assert_eq!(zk.get_data("/b").await.expect("/b").0, b"x");
}

#[tokio::test]
async fn a_lost_reply_to_a_conditional_set_is_recognised_as_applied_with_its_new_version() {
    let zk = tree().await;
    zk.lose_next_write_reply();
    let results = multi(&zk, vec![fence(), set_a(b"new")]).await.expect("applied");
    let [OpResult::Check, OpResult::SetData { stat }] = results.as_slice() else {
        panic!("unexpected results {results:?}");
    };
    assert_eq!(stat.version, ZkVersion(1), "set once, not twice");
}

#[tokio::test]
async fn a_lost_reply_to_deletes_is_recognised_as_applied() {
    let zk = tree().await;
    zk.create("/a/c", b"", CreateMode::Persistent).await.expect("/a/c");
    zk.lose_next_write_reply();
    let deletes = ["/a/c", "/a"].map(|p| Op::Delete {
        path: p.into(),
        version: None,
    });
    let results = multi(&zk, deletes.to_vec()).await.expect("applied");
    assert_eq!(results, vec![OpResult::Delete, OpResult::Delete]);
}

/// Our set was applied, then someone else wrote the znode: the retry's BADVERSION is not ours
/// to ignore, and the caller gets it to re-decide.
#[tokio::test]
async fn a_znode_changed_by_someone_else_after_the_lost_reply_is_not_taken_for_ours() {
    let zk = tree().await;
    zk.lose_next_write_reply();
    let flaky = Flaky::new(&zk).after_loss(|zk| {
        let other = zk.clone();
        tokio::spawn(async move { other.set_data("/a", b"theirs", None).await });
    });
    let err = multi(&flaky, vec![fence(), set_a(b"new")]).await.expect_err("conflict");
    assert!(matches!(err.root(), ZkError::BadVersion { .. }), "{err:?}");
}

/// The fence moved after our write was applied: the controller moved, whatever the znodes say.
#[tokio::test]
async fn a_failed_epoch_check_on_the_retry_is_never_reconciled() {
    let zk = tree().await;
    zk.lose_next_write_reply();
    let flaky = Flaky::new(&zk).after_loss(|zk| {
        let other = zk.clone();
        tokio::spawn(async move { other.set_data("/controller_epoch", b"2", None).await });
    });
    let err = multi(&flaky, vec![fence(), set_a(b"new")]).await.expect_err("moved");
    assert!(matches!(err, ZkError::MultiFailed { index: 0, .. }), "{err:?}");
}

#[tokio::test]
async fn a_write_is_retried_until_connected() {
    let zk = tree().await;
    let flaky = Flaky::new(&zk);
    flaky.down.store(4, Ordering::SeqCst);
    let results = multi(&flaky, vec![fence(), set_a(b"new")]).await.expect("written");
    assert_eq!(results.len(), 2);
    assert_eq!(zk.get_data("/a").await.expect("/a").0, b"new");
    assert_eq!(flaky.down.load(Ordering::SeqCst), 0);
}

/// Retries are bounded by the session: once it expires the caller hears so (and resigns).
#[tokio::test]
async fn a_session_expiring_during_the_retries_ends_them() {
    let zk = tree().await;
    let flaky = Flaky::new(&zk).after_loss(|zk| zk.expire_session());
    flaky.down.store(1, Ordering::SeqCst);
    let err = multi(&flaky, vec![fence(), set_a(b"new")]).await.expect_err("expired");
    assert_eq!(err, ZkError::SessionExpired);
    zk.renew_session();
    assert_eq!(
        zk.get_data("/a").await.expect("/a").0,
        b"old",
        "not written on a later session"
    );
}
