//! The controller's ZooKeeper writes across connection loss, as Kafka's
//! `KafkaZkClient.retryRequestsUntilConnected` does them: a multi that meets a connection loss
//! is sent again (with a pause doubling from [`FIRST_PAUSE`] to [`MAX_PAUSE`]) until ZooKeeper
//! answers, for as long as the session that sent it lives. A session expiry (or the store
//! closing, which changes the session id) ends the retries with `SessionExpired`, so the
//! controller still resigns; so does [`GIVE_UP_AFTER`], past any session timeout.
//!
//! A connection loss does not say whether the write was applied, so every retry is made
//! idempotent: if a retried multi fails on an op that the first attempt's success would explain
//! (a create meeting NodeExists, a conditional setData meeting BADVERSION, a delete meeting
//! NoNode), the znodes are re-read ([`reconcile`]). A multi is atomic, so if every op is found
//! applied — each created znode holds what was written (and, if ephemeral, is this session's),
//! each set znode holds the data at the version right after the expected one, each deleted
//! znode is gone — the write was ours and succeeded, and its results are rebuilt from the
//! reads. Otherwise the first attempt was not applied and the error is genuine: the caller
//! re-decides from what is there, as for any conflict. A failed `Check` (the controller epoch
//! fence) is never reconciled: the controller moved.

use std::time::Duration;

use crate::zk::store::{Op, OpResult, ZkError, ZkStore};

/// The pause before the first retry.
pub const FIRST_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between retries.
pub const MAX_PAUSE: Duration = Duration::from_secs(1);
/// Retries stop after this long even if the session still looks alive (a ZooKeeper that never
/// comes back): longer than any session timeout, after which the session is gone anyway.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(60);

/// Runs `ops` as one multi, retrying across connection loss within the current session, and
/// recognising a retry that fails because an earlier attempt was applied (see the module docs).
pub async fn multi<S: ZkStore>(zk: &S, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
    let session = zk.session_id();
    let started = tokio::time::Instant::now();
    let mut pause = FIRST_PAUSE;
    let mut maybe_applied = false;
    loop {
        let err = match zk.multi(ops.clone()).await {
            Ok(results) => return Ok(results),
            Err(e) => e,
        };
        match &err {
            ZkError::Unavailable { .. } => maybe_applied = true,
            ZkError::MultiFailed { index, .. } if maybe_applied && explained_by_applied(ops.get(*index), &err) => {
                match reconcile(zk, &ops).await {
                    Ok(Some(results)) => {
                        tracing::info!(
                            ops = ops.len(),
                            "a ZooKeeper write whose reply was lost had been applied"
                        );
                        return Ok(results);
                    }
                    Ok(None) => return Err(err),
                    Err(ZkError::Unavailable { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            _ => return Err(err),
        }
        if zk.session_id() != session {
            return Err(ZkError::SessionExpired);
        }
        if started.elapsed() >= GIVE_UP_AFTER {
            return Err(err);
        }
        tracing::debug!(error = %err, ?pause, "retrying a ZooKeeper write after a connection loss");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Whether a retried multi's failure at `op` is what that op meets when an earlier attempt of
/// the same multi was applied.
fn explained_by_applied(op: Option<&Op>, err: &ZkError) -> bool {
    matches!(
        (op, err.root()),
        (Some(Op::Create { .. }), ZkError::NodeExists { .. })
            | (Some(Op::SetData { .. }), ZkError::BadVersion { .. })
            | (Some(Op::Delete { .. }), ZkError::NoNode { .. })
    )
}

/// Re-reads what `ops` write: their results if every one is found applied by this client,
/// `None` if any is not (so the multi was not applied: it is atomic).
pub async fn reconcile<S: ZkStore>(zk: &S, ops: &[Op]) -> Result<Option<Vec<OpResult>>, ZkError> {
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        let applied = match op {
            Op::Check { .. } => Some(OpResult::Check),
            // A sequential create's path cannot be known after the fact.
            Op::Create { mode, .. } if mode.is_sequential() => None,
            Op::Create { path, data, mode } => match read(zk, path).await? {
                Some((d, stat)) if d == *data && (!mode.is_ephemeral() || stat.ephemeral_owner == zk.session_id()) => {
                    Some(OpResult::Create { path: path.clone() })
                }
                _ => None,
            },
            Op::SetData { path, data, version } => match read(zk, path).await? {
                Some((d, stat)) if d == *data && version.is_none_or(|v| stat.version.0 == v.0 + 1) => {
                    Some(OpResult::SetData { stat })
                }
                _ => None,
            },
            Op::Delete { path, .. } => zk.exists(path).await?.is_none().then_some(OpResult::Delete),
        };
        match applied {
            Some(r) => results.push(r),
            None => return Ok(None),
        }
    }
    Ok(Some(results))
}

async fn read<S: ZkStore>(zk: &S, path: &str) -> Result<Option<(Vec<u8>, crate::zk::store::Stat)>, ZkError> {
    match zk.get_data(path).await {
        Ok(r) => Ok(Some(r)),
        Err(ZkError::NoNode { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
