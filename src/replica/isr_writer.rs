//! Writes leaders' ISR changes to ZooKeeper the classic way (Kafka before IBP 2.7-IV2): a
//! conditional set of `/brokers/topics/<t>/partitions/<p>/state` on the cached zkVersion,
//! keeping the deciding controller's epoch and the leader epoch. Changes are written
//! concurrently; on a version conflict the znode is read back and handed to the partition to
//! reconcile (instead of Kafka's "Cached zkVersion … not equal" stall). Successful changes are
//! batched into `/isr_change_notification/isr_change_<seq>` as Kafka did: checked every 2.5 s,
//! written once no change came for 5 s or 60 s after the last notification.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::partition::{IsrProposal, IsrWriteOutcome, StoredState};
use super::replica_manager::{count_isr_change, ReplicaManager};
use crate::clock::now_ms;
use crate::types::{ControllerEpoch, LeaderEpoch, TopicPartition, ZkVersion};
use crate::zk::models::{IsrChangeNotification, PartitionState as StateZNode, TopicPartitionRef, ZNodePayload};
use crate::zk::paths;
use crate::zk::store::{CreateMode, ZkError, ZkStore};

/// Kafka's `ReplicaManager.IsrChangePropagationConfig` defaults.
#[derive(Debug, Clone, Copy)]
pub struct PropagationConfig {
    pub check_interval: Duration,
    pub blackout_ms: i64,
    pub max_delay_ms: i64,
}

impl Default for PropagationConfig {
    fn default() -> Self {
        PropagationConfig {
            check_interval: Duration::from_millis(2_500),
            blackout_ms: 5_000,
            max_delay_ms: 60_000,
        }
    }
}

/// Whether pending ISR changes should be announced now.
pub fn should_propagate(
    config: &PropagationConfig,
    pending: bool,
    last_change_ms: i64,
    last_sent_ms: i64,
    now_ms: i64,
) -> bool {
    pending && (now_ms - last_change_ms >= config.blackout_ms || now_ms - last_sent_ms >= config.max_delay_ms)
}

/// Runs until `stop`: takes proposals from the ReplicaManager, writes them, answers it.
pub async fn run<S: ZkStore + Clone>(
    rm: Arc<ReplicaManager>,
    zk: S,
    mut inbox: mpsc::UnboundedReceiver<IsrProposal>,
    config: PropagationConfig,
    mut stop: watch::Receiver<bool>,
) {
    let mut writes: JoinSet<(IsrProposal, IsrWriteOutcome)> = JoinSet::new();
    let mut completions: JoinSet<()> = JoinSet::new();
    let mut pending: BTreeSet<TopicPartition> = BTreeSet::new();
    let (mut last_change, mut last_sent) = (now_ms(), now_ms());
    let mut tick = tokio::time::interval(config.check_interval);
    loop {
        tokio::select! {
            proposal = inbox.recv() => {
                let Some(proposal) = proposal else { return };
                let zk = zk.clone();
                writes.spawn(async move {
                    let outcome = write(&zk, &proposal).await;
                    (proposal, outcome)
                });
            }
            Some(done) = writes.join_next(), if !writes.is_empty() => {
                let Ok((proposal, outcome)) = done else { continue };
                count_isr_change(proposal.expand, &outcome);
                if matches!(outcome, IsrWriteOutcome::Written { .. }) {
                    pending.insert(proposal.tp.clone());
                    last_change = now_ms();
                }
                // Takes the partition's lock (and its log's, to move the HW), which an append
                // stuck in a slow disk may hold: on the partition's I/O thread, not here.
                let rm = rm.clone();
                completions.spawn(async move { rm.complete_isr_change_off_workers(proposal, outcome).await });
            }
            Some(_) = completions.join_next(), if !completions.is_empty() => {}
            _ = tick.tick() => {
                let now = now_ms();
                if should_propagate(&config, !pending.is_empty(), last_change, last_sent, now) {
                    let partitions = std::mem::take(&mut pending);
                    if let Err(e) = notify(&zk, &partitions).await {
                        tracing::warn!(error = %e, "cannot write the ISR change notification; will retry");
                        pending.extend(partitions);
                    } else {
                        last_sent = now;
                    }
                }
            }
            _ = stop.changed() => return,
        }
    }
}

/// The first wait before a write whose outcome is unknown is tried again; it doubles up to
/// [`RETRY_BACKOFF_MAX`].
const RETRY_BACKOFF: Duration = Duration::from_millis(50);
const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Writes `p` conditionally, retrying while ZooKeeper is unreachable (Kafka's ZooKeeperClient
/// retries the same way until the session ends). The partition keeps the change in flight
/// meanwhile, so nothing else is proposed for it; a LeaderAndIsr that supersedes it makes the
/// retried write fail its version check, and the partition ignores the stale answer.
async fn write<S: ZkStore>(zk: &S, p: &IsrProposal) -> IsrWriteOutcome {
    let path = paths::partition_state(&p.tp.topic, p.tp.partition);
    let payload = StateZNode {
        controller_epoch: ControllerEpoch(p.controller_epoch),
        leader: p.leader,
        version: 1,
        leader_epoch: LeaderEpoch(p.leader_epoch),
        isr: p.isr.clone(),
        leader_recovery_state: None,
    }
    .encode();
    let mut backoff = RETRY_BACKOFF;
    loop {
        match zk.set_data(&path, &payload, Some(ZkVersion(p.zk_version))).await {
            Ok(stat) => {
                return IsrWriteOutcome::Written {
                    zk_version: stat.version.0,
                }
            }
            Err(ZkError::BadVersion { .. }) => return settle(p, read_state(zk, &path).await),
            Err(ZkError::NoNode { .. }) => return IsrWriteOutcome::Conflict(None),
            Err(e @ (ZkError::Unavailable { .. } | ZkError::SessionExpired)) => {
                tracing::warn!(partition = %p.tp, error = %e, retry_in = ?backoff, "ISR update not confirmed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RETRY_BACKOFF_MAX);
            }
            Err(e) => {
                tracing::warn!(partition = %p.tp, error = %e, "ISR update failed");
                return IsrWriteOutcome::Failed;
            }
        }
    }
}

/// After a version conflict, Kafka's `checkLeaderAndIsrZkData`: a znode holding exactly what
/// was proposed means an earlier attempt was applied and only its reply was lost (a connection
/// loss after the write), so the change is written, at the stored version, and is announced to
/// the controller like any other. Anything else is a real conflict for the partition to
/// reconcile.
fn settle(p: &IsrProposal, stored: Option<StoredState>) -> IsrWriteOutcome {
    match stored {
        Some(s)
            if s.leader == p.leader
                && s.leader_epoch == p.leader_epoch
                && s.controller_epoch == p.controller_epoch
                && s.isr == p.isr =>
        {
            IsrWriteOutcome::Written {
                zk_version: s.zk_version,
            }
        }
        other => IsrWriteOutcome::Conflict(other),
    }
}

/// A state znode as stored (None when missing or unreadable).
pub async fn read_state<S: ZkStore>(zk: &S, path: &str) -> Option<StoredState> {
    let (data, stat) = zk.get_data(path).await.ok()?;
    let s = StateZNode::decode(&data).ok()?;
    Some(StoredState {
        controller_epoch: s.controller_epoch.0,
        leader: s.leader,
        leader_epoch: s.leader_epoch.0,
        isr: s.isr,
        zk_version: stat.version.0,
    })
}

async fn notify<S: ZkStore>(zk: &S, partitions: &BTreeSet<TopicPartition>) -> Result<String, ZkError> {
    let payload = IsrChangeNotification {
        version: 1,
        partitions: partitions
            .iter()
            .map(|tp| TopicPartitionRef {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })
            .collect(),
    };
    let (path, _) = zk
        .create(
            &paths::isr_change_sequential(),
            &payload.encode(),
            CreateMode::PersistentSequential,
        )
        .await?;
    tracing::info!(%path, partitions = partitions.len(), "ISR changes announced to the controller");
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::BrokerId;
    use crate::zk::fake::FakeZk;

    /// A leader (broker 1, epoch 4, controller epoch 2) proposing `isr` for `t-0` at zkVersion 0.
    fn proposal(isr: &[i32]) -> IsrProposal {
        IsrProposal {
            tp: TopicPartition {
                topic: "t".into(),
                partition: 0,
            },
            leader: BrokerId(1),
            leader_epoch: 4,
            controller_epoch: 2,
            zk_version: 0,
            isr: isr.iter().copied().map(BrokerId).collect(),
            expand: false,
        }
    }

    /// The state znode of `t-0` at version 0 with ISR [1, 2, 3].
    async fn zk_with_state() -> FakeZk {
        let zk = FakeZk::new();
        crate::zk::store::create_recursive(&zk, "/brokers/topics/t/partitions/0")
            .await
            .expect("parents");
        let state = StateZNode {
            controller_epoch: ControllerEpoch(2),
            leader: BrokerId(1),
            version: 1,
            leader_epoch: LeaderEpoch(4),
            isr: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            leader_recovery_state: None,
        };
        zk.create(
            "/brokers/topics/t/partitions/0/state",
            &state.encode(),
            CreateMode::Persistent,
        )
        .await
        .expect("state");
        zk
    }

    /// A shrink applied by ZooKeeper whose reply was lost is retried, finds its own data behind
    /// the version conflict, and counts as written (so the leader's cache and the controller
    /// learn it). Before, it was reported failed: the leader kept [1, 2, 3] while ZooKeeper held
    /// [1, 2], and with the follower in sync nothing ever wrote the znode again.
    #[tokio::test(start_paused = true)]
    async fn a_write_whose_reply_was_lost_is_retried_and_recognised_as_written() {
        let zk = zk_with_state().await;
        zk.lose_next_write_reply();
        let outcome = write(&zk, &proposal(&[1, 2])).await;
        assert_eq!(outcome, IsrWriteOutcome::Written { zk_version: 1 });
        let stored = read_state(&zk, "/brokers/topics/t/partitions/0/state")
            .await
            .expect("state");
        assert_eq!(stored.isr, vec![BrokerId(1), BrokerId(2)]);
    }

    /// While ZooKeeper is unreachable the write is retried, not dropped, and lands once it is back.
    #[tokio::test(start_paused = true)]
    async fn a_write_during_a_disconnect_lands_after_the_reconnect() {
        let zk = zk_with_state().await;
        zk.disconnect();
        let writer = {
            let zk = zk.clone();
            tokio::spawn(async move { write(&zk, &proposal(&[1, 2])).await })
        };
        let before = zk.requests();
        while zk.requests() < before + 3 && !writer.is_finished() {
            tokio::task::yield_now().await;
            tokio::time::advance(RETRY_BACKOFF).await;
        }
        assert!(!writer.is_finished(), "a connection loss is retried, not reported");
        zk.reconnect();
        let outcome = writer.await.expect("writer");
        assert_eq!(outcome, IsrWriteOutcome::Written { zk_version: 1 });
    }

    /// A version conflict with other data is a conflict, carrying what the znode holds.
    #[tokio::test]
    async fn a_conflict_with_other_data_is_reported_with_the_stored_state() {
        let zk = zk_with_state().await;
        let mut stale = proposal(&[1]);
        stale.zk_version = 7;
        match write(&zk, &stale).await {
            IsrWriteOutcome::Conflict(Some(stored)) => {
                assert_eq!(stored.isr, vec![BrokerId(1), BrokerId(2), BrokerId(3)]);
                assert_eq!(stored.zk_version, 0);
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    #[test]
    fn changes_are_announced_after_a_quiet_period_or_the_max_delay() {
        let c = PropagationConfig::default();
        assert!(!should_propagate(&c, false, 0, 0, 100_000));
        assert!(!should_propagate(&c, true, 10_000, 9_000, 14_999));
        assert!(should_propagate(&c, true, 10_000, 9_000, 15_000));
        // Changes keep coming: still announced 60 s after the last notification.
        assert!(should_propagate(&c, true, 69_000, 9_000, 69_000));
    }
}
