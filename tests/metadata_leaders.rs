//! Metadata answers during failovers, checked continuously: every partition a response
//! reports with error NONE has a leader that the same response lists among its brokers (Kafka's
//! `ZkMetadataCache.getPartitionMetadata` answers LEADER_NOT_AVAILABLE with leader -1 otherwise;
//! clients such as kafka-python loop on an unknown leader id). Three pollers ask every broker
//! while the controller (a leader) is paused past its ZooKeeper session and then the next
//! controller (also a leader) is killed; a controller that takes over announces the states it
//! read from ZooKeeper before it elects. An end-to-end guard: kastle's controller also marks a
//! dead broker's replicas offline in every UpdateMetadata, so this passed before the answer
//! itself checked the broker list; `protocol_answers.rs` drives the case that did not.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster::{cluster_ready, controller_of, create_topic_by_hand, start};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

const TOPICS: [&str; 3] = ["ml-a", "ml-b", "ml-c"];

/// Partitions (topic, partition, leader) reported with error NONE whose leader is not among the
/// response's brokers.
fn violations(response: &MetadataResponse) -> Vec<(String, i32, i32)> {
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
struct Seen {
    answers: AtomicU64,
    bad: Mutex<Vec<(String, i32, i32)>>,
}

/// Polls `addr` with Metadata (v12 and v1 in turn) until `stop`, checking every answer.
async fn poll(addr: String, stop: Arc<AtomicBool>, seen: Arc<Seen>) {
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
                    seen.bad.lock().expect("lock").extend(bad);
                }
            }
            None => wire = None,
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Whether the broker at `addr` answers Metadata with a live leader (error NONE) for every
/// partition. (Addresses are read once: a broker whose session expired is unregistered for a
/// while, but keeps its port.)
async fn settled(addr: &str) -> bool {
    let Some(mut wire) = Wire::try_connect(addr, Duration::from_secs(1)).await else {
        return false;
    };
    let request = MetadataRequest::default().with_topics(None);
    let Some(response) = wire.try_send(&request, 12, Duration::from_secs(1)).await else {
        return false;
    };
    response.topics.len() == TOPICS.len()
        && response
            .topics
            .iter()
            .all(|t| t.partitions.len() == 3 && t.partitions.iter().all(|p| p.error_code == 0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_metadata_answer_names_a_leader_it_does_not_list_while_controllers_fail() {
    common::init_logging();
    let chroot = unique_chroot("metadata-leaders");
    let brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    for topic in TOPICS {
        // Preferred leaders 1, 2, 3: every broker leads a partition of every topic.
        create_topic_by_hand(&zk, topic, r#"{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2]}"#).await;
    }
    let addrs = [
        bootstrap_of(&zk, 1).await,
        bootstrap_of(&zk, 2).await,
        bootstrap_of(&zk, 3).await,
    ];
    for addr in &addrs {
        wait_until(Duration::from_secs(30), "every partition led, on every broker", || {
            settled(addr)
        })
        .await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let pollers: Vec<_> = addrs
        .iter()
        .map(|a| tokio::spawn(poll(a.clone(), stop.clone(), seen.clone())))
        .collect();
    let first = controller_of(&zk).await.expect("a controller");

    // 1. The controller (a leader) stalls past its ZooKeeper session: another broker takes
    //    over, and the stalled one's partitions are still named after it at first.
    brokers[(first - 1) as usize].signal("STOP");
    wait_until(Duration::from_secs(30), "another controller", || async {
        controller_of(&zk).await.is_some_and(|c| c != first)
    })
    .await;
    brokers[(first - 1) as usize].signal("CONT");
    for addr in &addrs {
        wait_until(Duration::from_secs(40), "leaders again after the pause", || {
            settled(addr)
        })
        .await;
    }
    let after_pause = seen.answers.load(Ordering::Relaxed);

    // 2. The new controller, also a leader, is killed outright.
    let second = controller_of(&zk).await.expect("a controller");
    brokers[(second - 1) as usize].signal("KILL");
    wait_until(Duration::from_secs(30), "a controller after the kill", || async {
        controller_of(&zk).await.is_some_and(|c| c != second)
    })
    .await;
    for (i, addr) in addrs.iter().enumerate() {
        if i as i32 + 1 != second {
            wait_until(Duration::from_secs(40), "leaders again after the kill", || {
                settled(addr)
            })
            .await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for p in pollers {
        p.await.expect("poller");
    }
    let answers = seen.answers.load(Ordering::Relaxed);
    let bad = seen.bad.lock().expect("lock").clone();
    assert!(
        after_pause > 50 && answers > after_pause + 50,
        "the pollers got answers through both failovers ({after_pause}, {answers})"
    );
    assert!(
        bad.is_empty(),
        "{} partitions answered NONE with a leader missing from the broker list, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}
