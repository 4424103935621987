//! The safety net under LeaderAndIsr: every broker watches the state znodes of the partitions
//! it hosts (one persistent recursive watch on `/brokers/topics`) and applies a newer leader
//! epoch found there even if the controller's request never arrived. ISR-only changes (same
//! leader epoch) are left to the controller's UpdateMetadata, as in Kafka.

use std::sync::Arc;

use tokio::sync::watch;

use super::isr_writer::read_state;
use super::replica_manager::ReplicaManager;
use crate::clock::now_ms;
use crate::types::TopicPartition;
use crate::zk::paths;
use crate::zk::store::{WatchEvent, WatchMode, ZkStore};

/// The partition a `/brokers/topics/<t>/partitions/<p>/state` path names.
pub fn state_path_partition(path: &str) -> Option<TopicPartition> {
    let rest = path.strip_prefix(paths::BROKER_TOPICS)?.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let (topic, literal, partition, state) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if literal != "partitions" || state != "state" || parts.next().is_some() {
        return None;
    }
    Some(TopicPartition {
        topic: topic.to_string(),
        partition: partition.parse().ok()?,
    })
}

/// Runs until `stop` or the store closes.
pub async fn run<S: ZkStore + Clone>(rm: Arc<ReplicaManager>, zk: S, mut stop: watch::Receiver<bool>) {
    let mut events = match zk.watch(paths::BROKER_TOPICS, WatchMode::PersistentRecursive).await {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch the partition state znodes; relying on LeaderAndIsr alone");
            return;
        }
    };
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = stop.changed() => return,
        };
        match event {
            None => return,
            Some(WatchEvent::DataChanged { path }) | Some(WatchEvent::Created { path }) => {
                if let Some(tp) = state_path_partition(&path) {
                    if rm.partition(&tp).is_some() {
                        check(&rm, &zk, &tp).await;
                    }
                }
            }
            Some(WatchEvent::Rearmed) => {
                // Changes during the session gap were missed: re-read every hosted partition,
                // concurrently (one round trip per partition, pipelined on the session).
                let mut reads = tokio::task::JoinSet::new();
                for p in rm.all_partitions() {
                    let (rm, zk) = (rm.clone(), zk.clone());
                    reads.spawn(async move { check(&rm, &zk, &p.tp).await });
                }
                while reads.join_next().await.is_some() {}
            }
            Some(_) => {}
        }
    }
}

async fn check<S: ZkStore>(rm: &ReplicaManager, zk: &S, tp: &TopicPartition) {
    if let Some(stored) = read_state(zk, &paths::partition_state(&tp.topic, tp.partition)).await {
        rm.apply_stored_state(tp, &stored, now_ms());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_state_znodes_name_a_partition() {
        assert_eq!(
            state_path_partition("/brokers/topics/orders/partitions/3/state"),
            Some(TopicPartition {
                topic: "orders".into(),
                partition: 3
            })
        );
        assert_eq!(state_path_partition("/brokers/topics/orders"), None);
        assert_eq!(state_path_partition("/brokers/topics/orders/partitions/3"), None);
        assert_eq!(state_path_partition("/brokers/topics/orders/partitions/x/state"), None);
        assert_eq!(state_path_partition("/brokers/ids/1"), None);
    }
}
