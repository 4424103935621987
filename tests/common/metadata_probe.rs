//! A Metadata probe for failover tests (reliability.md R19; tests/reliability_stress.rs):
//! pollers that ask brokers for Metadata (v12 and v1 in turn) until stopped and check every
//! answer: each partition reported with error NONE must have a leader that the same response
//! lists among its brokers (Kafka's `ZkMetadataCache.getPartitionMetadata` answers
//! LEADER_NOT_AVAILABLE with leader -1 otherwise; clients such as kafka-python loop on an
//! unknown leader id).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

use super::wire::Wire;

/// Partitions (topic, partition, leader) reported with error NONE whose leader is not among the
/// response's brokers.
pub fn violations(response: &MetadataResponse) -> Vec<(String, i32, i32)> {
    let brokers: BTreeSet<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
    response
        .topics
        .iter()
        .flat_map(|t| {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            t.partitions
                .iter()
                .filter(|p| p.error_code == 0 && !brokers.contains(&p.leader_id.0))
                .map(move |p| (name.clone(), p.partition_index, p.leader_id.0))
        })
        .collect()
}

/// What the pollers saw.
#[derive(Default)]
pub struct Seen {
    pub answers: AtomicU64,
    pub bad: Mutex<Vec<(String, i32, i32)>>,
}

impl Seen {
    pub fn answers(&self) -> u64 {
        self.answers.load(Ordering::Relaxed)
    }

    pub fn bad(&self) -> Vec<(String, i32, i32)> {
        self.bad.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

/// Polls `addr` with Metadata (v12 and v1 in turn) every `every` until `stop`, checking every
/// answer; a broker that is down or paused is retried.
pub async fn poll(addr: String, every: Duration, stop: Arc<AtomicBool>, seen: Arc<Seen>) {
    let timeout = Duration::from_millis(500);
    let mut wire: Option<Wire> = None;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if wire.is_none() {
            wire = Wire::try_connect(&addr, timeout).await;
            if wire.is_none() {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        }
        n += 1;
        let version = if n % 2 == 0 { 12 } else { 1 };
        let request = MetadataRequest::default().with_topics(None);
        let answer = match wire.as_mut() {
            Some(w) => w.try_send(&request, version, timeout).await,
            None => None,
        };
        match answer {
            Some(response) => {
                seen.answers.fetch_add(1, Ordering::Relaxed);
                let bad = violations(&response);
                if !bad.is_empty() {
                    if let Ok(mut all) = seen.bad.lock() {
                        all.extend(bad);
                    }
                }
            }
            None => wire = None,
        }
        tokio::time::sleep(every).await;
    }
}

/// Whether the broker at `addr` answers Metadata with a live leader (error NONE) for every
/// partition of every one of `topics` (each of `partitions` partitions).
pub async fn settled(addr: &str, topics: &[&str], partitions: usize) -> bool {
    let Some(mut wire) = Wire::try_connect(addr, Duration::from_secs(1)).await else {
        return false;
    };
    let request = MetadataRequest::default().with_topics(None);
    let Some(response) = wire.try_send(&request, 12, Duration::from_secs(1)).await else {
        return false;
    };
    topics.iter().all(|topic| {
        response.topics.iter().any(|t| {
            t.name.as_ref().is_some_and(|n| n.0.as_str() == *topic)
                && t.error_code == 0
                && t.partitions.len() == partitions
                && t.partitions.iter().all(|p| p.error_code == 0)
        })
    })
}
