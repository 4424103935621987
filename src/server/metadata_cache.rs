//! `MetadataCache`: what the controller told this broker through UpdateMetadata — live brokers
//! with their endpoints, every partition's leader/ISR/replicas, topic ids, the controller —
//! which is what Metadata requests are answered from (as in ZK-mode Kafka, not from ZooKeeper).

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use crate::types::BrokerId;

/// One endpoint of a live broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub listener: String,
    pub host: String,
    pub port: i32,
}

/// A live broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub id: BrokerId,
    pub endpoints: Vec<BrokerEndpoint>,
    pub rack: Option<String>,
}

/// A partition's state as the controller last published it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedPartition {
    /// -1 without a leader (-2 while the topic is being deleted).
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<BrokerId>,
    pub replicas: Vec<BrokerId>,
    pub offline_replicas: Vec<BrokerId>,
}

/// A topic in the cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CachedTopic {
    pub id: uuid::Uuid,
    pub partitions: BTreeMap<i32, CachedPartition>,
}

#[derive(Debug, Default)]
struct Snapshot {
    controller_id: Option<BrokerId>,
    brokers: BTreeMap<BrokerId, LiveBroker>,
    topics: BTreeMap<String, CachedTopic>,
    /// Topic id → name, kept with `topics` so Fetch v13+ resolves ids without a scan.
    names_by_id: HashMap<uuid::Uuid, String>,
}

/// Shared by the API handlers; written only by UpdateMetadata.
#[derive(Debug)]
pub struct MetadataCache {
    inner: RwLock<Snapshot>,
    /// Bumped on every update: what requests waiting for metadata (CreateTopics, …) wait on.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for MetadataCache {
    fn default() -> Self {
        MetadataCache {
            inner: RwLock::default(),
            changes: tokio::sync::watch::channel(0).0,
        }
    }
}

/// Leader of a deleted topic's partitions in UpdateMetadata (Kafka's LeaderDuringDelete).
pub const LEADER_DURING_DELETE: i32 = -2;

impl MetadataCache {
    /// Applies an UpdateMetadata: the broker list is replaced; partition states are upserted,
    /// and a partition whose leader is -2 is removed with its topic when none is left.
    pub fn update(
        &self,
        controller_id: BrokerId,
        brokers: Vec<LiveBroker>,
        partitions: Vec<(String, uuid::Uuid, i32, CachedPartition)>,
    ) {
        let mut snap = self.inner.write().unwrap_or_else(|p| p.into_inner());
        snap.controller_id = Some(controller_id);
        snap.brokers = brokers.into_iter().map(|b| (b.id, b)).collect();
        for (topic, id, index, state) in partitions {
            if state.leader == LEADER_DURING_DELETE {
                let emptied = snap.topics.get_mut(&topic).map(|t| {
                    t.partitions.remove(&index);
                    t.partitions.is_empty()
                });
                if emptied == Some(true) {
                    if let Some(gone) = snap.topics.remove(&topic) {
                        snap.names_by_id.remove(&gone.id);
                    }
                }
                continue;
            }
            if !id.is_nil() {
                snap.names_by_id.insert(id, topic.clone());
            }
            let entry = snap.topics.entry(topic).or_default();
            if !id.is_nil() {
                entry.id = id;
            }
            entry.partitions.insert(index, state);
        }
        drop(snap);
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Updates from now on.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Waits (at most `max`) until the first UpdateMetadata has arrived, i.e. the cache knows a
    /// controller; returns whether it has.
    pub async fn wait_initialized(&self, max: std::time::Duration) -> bool {
        // Every Metadata request comes here: once initialized, answer without subscribing.
        if self.controller_id().is_some() {
            return true;
        }
        let mut changes = self.subscribe();
        let deadline = tokio::time::Instant::now() + max;
        loop {
            if self.controller_id().is_some() {
                return true;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return self.controller_id().is_some(),
            }
        }
    }

    pub fn controller_id(&self) -> Option<BrokerId> {
        self.inner.read().unwrap_or_else(|p| p.into_inner()).controller_id
    }

    pub fn live_brokers(&self) -> Vec<LiveBroker> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .brokers
            .values()
            .cloned()
            .collect()
    }

    /// Whether `id` may join an ISR: it is among the live brokers (or nothing is known yet,
    /// before the first UpdateMetadata).
    pub fn is_isr_eligible(&self, id: BrokerId) -> bool {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.brokers.is_empty() || inner.brokers.contains_key(&id)
    }

    pub fn topic(&self, name: &str) -> Option<CachedTopic> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .topics
            .get(name)
            .cloned()
    }

    /// How many partitions `name` has, without copying the topic (per-request paths).
    pub fn partition_count(&self, name: &str) -> Option<usize> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.topics.get(name).map(|t| t.partitions.len())
    }

    /// Whether `name` has partition `partition`, without copying the topic.
    pub fn has_partition(&self, name: &str, partition: i32) -> bool {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner
            .topics
            .get(name)
            .is_some_and(|t| t.partitions.contains_key(&partition))
    }

    pub fn topic_names(&self) -> Vec<String> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .topics
            .keys()
            .cloned()
            .collect()
    }

    /// The name of the topic with `id` (Fetch v13+, DeleteTopics v6).
    pub fn topic_name(&self, id: &uuid::Uuid) -> Option<String> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .names_by_id
            .get(id)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(leader: i32) -> CachedPartition {
        CachedPartition {
            leader,
            leader_epoch: 0,
            isr: vec![BrokerId(1)],
            replicas: vec![BrokerId(1)],
            offline_replicas: vec![],
        }
    }

    #[tokio::test]
    async fn waiting_for_the_first_update_ends_when_it_arrives_or_at_the_deadline() {
        let cache = std::sync::Arc::new(MetadataCache::default());
        assert!(!cache.wait_initialized(std::time::Duration::from_millis(20)).await);
        let writer = cache.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            writer.update(BrokerId(2), vec![], vec![]);
        });
        assert!(cache.wait_initialized(std::time::Duration::from_secs(10)).await);
        assert_eq!(cache.controller_id(), Some(BrokerId(2)));
        assert!(
            cache.wait_initialized(std::time::Duration::ZERO).await,
            "no wait once initialized"
        );
    }

    #[test]
    fn updates_upsert_partitions_and_deletion_removes_the_topic() {
        let cache = MetadataCache::default();
        let id = uuid::Uuid::new_v4();
        cache.update(
            BrokerId(1),
            vec![],
            vec![("t".into(), id, 0, partition(1)), ("t".into(), id, 1, partition(1))],
        );
        assert_eq!(cache.topic("t").expect("topic").partitions.len(), 2);
        assert_eq!(cache.partition_count("t"), Some(2));
        assert!(cache.has_partition("t", 1) && !cache.has_partition("t", 2) && !cache.has_partition("u", 0));
        cache.update(
            BrokerId(1),
            vec![],
            vec![("t".into(), id, 0, partition(LEADER_DURING_DELETE))],
        );
        assert_eq!(cache.topic("t").expect("topic").partitions.len(), 1);
        cache.update(
            BrokerId(1),
            vec![],
            vec![("t".into(), id, 1, partition(LEADER_DURING_DELETE))],
        );
        assert!(cache.topic("t").is_none());
        assert_eq!(cache.controller_id(), Some(BrokerId(1)));
    }
}
