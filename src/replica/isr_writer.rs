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
                rm.complete_isr_change(&proposal, outcome, now_ms());
            }
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

async fn write<S: ZkStore>(zk: &S, p: &IsrProposal) -> IsrWriteOutcome {
    let path = paths::partition_state(&p.tp.topic, p.tp.partition);
    let payload = StateZNode {
        controller_epoch: ControllerEpoch(p.controller_epoch),
        leader: p.leader,
        version: 1,
        leader_epoch: LeaderEpoch(p.leader_epoch),
        isr: p.isr.clone(),
        leader_recovery_state: None,
    };
    match zk
        .set_data(&path, &payload.encode(), Some(ZkVersion(p.zk_version)))
        .await
    {
        Ok(stat) => IsrWriteOutcome::Written {
            zk_version: stat.version.0,
        },
        Err(ZkError::BadVersion { .. }) => IsrWriteOutcome::Conflict(read_state(zk, &path).await),
        Err(ZkError::NoNode { .. }) => IsrWriteOutcome::Conflict(None),
        Err(e) => {
            tracing::warn!(partition = %p.tp, error = %e, "ISR update failed");
            IsrWriteOutcome::Failed
        }
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
