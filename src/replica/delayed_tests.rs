//! `append_records` / `fetch_messages` against a ReplicaManager on real logs: who a produce
//! wakes (per-partition wake-up counts), acks=all completed from the follower's fetch, expiry,
//! ISR shrink and leadership change.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::append::{AppendPartition, AppendResult};
use super::error::ReplicaError;
use super::fetch::{FetchParams, FetchPartition, FetchPartitionResult};
use super::partition::{IsrWriteOutcome, PartitionState};
use super::replica_manager::{ControllerRequestEpochs, LeaderAndIsrPartition, ReplicaConfig, ReplicaManager};
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log_manager::{LogManager, LogManagerConfig};
use crate::protocol::test_support::build_batch;
use crate::types::{BrokerId, TopicPartition};

fn tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "t".into(),
        partition: p,
    }
}

fn replica_manager(dir: &std::path::Path, min_isr: i32) -> Arc<ReplicaManager> {
    let cfg = LogManagerConfig {
        dirs: vec![dir.to_path_buf()],
        clean_dirs: Vec::new(),
        log: LogConfig {
            min_insync_replicas: min_isr,
            ..LogConfig::default()
        },
        recovery_threads_per_dir: 1,
    };
    let logs = Arc::new(LogManager::startup(
        &cfg,
        LogDirFailureChannel::new(),
        Faults::default(),
        0,
    ));
    Arc::new(ReplicaManager::new(BrokerId(1), logs, ReplicaConfig::default()))
}

/// Makes broker `leader` lead partitions `parts` of "t" in `epoch` with `replicas` all in the ISR.
fn lead(rm: &ReplicaManager, parts: std::ops::Range<i32>, leader: i32, epoch: i32, replicas: &[i32]) {
    let ids: Vec<BrokerId> = replicas.iter().map(|r| BrokerId(*r)).collect();
    let lai = parts
        .map(|p| LeaderAndIsrPartition {
            tp: tp(p),
            topic_id: uuid::Uuid::nil(),
            state: PartitionState {
                controller_epoch: 1,
                leader: BrokerId(leader),
                leader_epoch: epoch,
                isr: ids.clone(),
                partition_epoch: 0,
                replicas: ids.clone(),
                adding: Vec::new(),
                removing: Vec::new(),
            },
        })
        .collect();
    let epochs = ControllerRequestEpochs {
        controller_epoch: 1,
        broker_epoch: -1,
    };
    let results = rm
        .become_leader_or_follower(epochs, lai, Vec::new(), 0)
        .expect("LeaderAndIsr");
    assert!(results.iter().all(|r| r.2.is_ok()), "{results:?}");
}

fn record() -> Vec<u8> {
    build_batch(0, -1, &[(None, Some(&b"value"[..]))], 1)
}

async fn produce(rm: &ReplicaManager, p: i32, acks: i16, timeout_ms: i32) -> AppendResult {
    let entry = AppendPartition {
        tp: tp(p),
        records: record().into(),
    };
    rm.append_records(acks, timeout_ms, vec![entry])
        .await
        .pop()
        .expect("one result")
}

fn consumer(max_wait_ms: i32) -> FetchParams {
    FetchParams {
        replica: None,
        replica_isr_eligible: false,
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 1 << 20,
        isolation_level: 0,
    }
}

fn follower(id: i32, max_wait_ms: i32) -> FetchParams {
    FetchParams {
        replica: Some(BrokerId(id)),
        replica_isr_eligible: true,
        ..consumer(max_wait_ms)
    }
}

fn at(p: i32, offset: i64) -> Vec<FetchPartition> {
    vec![FetchPartition {
        tp: tp(p),
        fetch_offset: offset,
        max_bytes: 1 << 20,
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
        log_start_offset: -1,
    }]
}

/// Waits (polling, with a deadline) until `condition` holds.
async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn has_records(r: &[FetchPartitionResult]) -> bool {
    !r[0].records.is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_wakes_only_the_fetches_parked_on_its_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = replica_manager(dir.path(), 1);
    const OTHERS: i32 = 100;
    const PER_PARTITION: usize = 10;
    lead(&rm, 0..OTHERS + 1, 1, 0, &[1]);
    // 1,000 fetches parked on partitions 1..=100; one on partition 0 (A).
    let mut asleep = Vec::new();
    for p in 1..=OTHERS {
        for _ in 0..PER_PARTITION {
            let rm = rm.clone();
            asleep.push(tokio::spawn(async move {
                rm.fetch_messages(consumer(60_000), at(p, 0)).await
            }));
        }
    }
    let on_a = {
        let rm = rm.clone();
        tokio::spawn(async move {
            let r = rm.fetch_messages(consumer(60_000), at(0, 0)).await;
            (r, Instant::now())
        })
    };
    let parked = OTHERS as usize * PER_PARTITION + 1;
    wait_until("every fetch to park", || rm.delayed_fetches() == parked).await;

    let appended = produce(&rm, 0, 1, 1_000).await;
    let after_append = Instant::now();
    assert_eq!(appended.error, None);
    let (read, returned) = on_a.await.expect("fetch on A");
    assert!(has_records(&read), "{read:?}");
    let lag = returned.saturating_duration_since(after_append);
    assert!(
        lag < Duration::from_millis(10),
        "the fetch on A returned {lag:?} after the append"
    );

    let a = rm.purgatory().wake_counts(&tp(0));
    assert_eq!((a.checked, a.completed), (1, 1));
    for p in 1..=OTHERS {
        let c = rm.purgatory().wake_counts(&tp(p));
        assert_eq!((c.checked, c.completed), (0, 0), "partition {p} was woken");
    }
    assert_eq!(rm.delayed_fetches(), parked - 1);
    assert!(
        asleep.iter().all(|t| !t.is_finished()),
        "a fetch on another partition returned"
    );
    for t in &asleep {
        t.abort();
    }
    for t in asleep {
        let _ = t.await;
    }
    assert_eq!(rm.delayed_fetches(), 0, "abandoned fetches leave the purgatory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_completes_from_the_followers_fetch_and_consumers_wait_for_the_hw() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = replica_manager(dir.path(), 2);
    lead(&rm, 0..1, 1, 0, &[1, 2]);
    // A consumer parked at 0 waits for the HW, not the log end.
    let consumer_fetch = {
        let rm = rm.clone();
        tokio::spawn(async move { rm.fetch_messages(consumer(60_000), at(0, 0)).await })
    };
    wait_until("the consumer to park", || rm.delayed_fetches() == 1).await;
    let producing = {
        let rm = rm.clone();
        tokio::spawn(async move { produce(&rm, 0, -1, 60_000).await })
    };
    wait_until("the produce to park", || rm.purgatory().delayed_produces() == 1).await;
    assert_eq!(rm.delayed_fetches(), 1, "the append did not satisfy the consumer");
    assert!(!consumer_fetch.is_finished());
    assert_eq!(rm.purgatory().wake_counts(&tp(0)).completed, 0);

    // The follower's fetch at offset 1 moves the HW to 1: the produce and the consumer complete
    // from inside this call.
    let read = rm.fetch_messages(follower(2, 0), at(0, 1)).await;
    assert_eq!(read[0].error, None);
    assert_eq!(read[0].high_watermark, 1);
    assert_eq!(
        rm.purgatory().delayed_produces(),
        0,
        "completed by the follower's fetch"
    );
    assert_eq!(rm.delayed_fetches(), 0);
    let produced = producing.await.expect("produce");
    assert_eq!(produced.error, None);
    assert_eq!(produced.info.map(|i| i.base_offset), Some(0));
    assert!(has_records(&consumer_fetch.await.expect("consumer")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_follower_fetch_is_woken_by_an_append() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = replica_manager(dir.path(), 1);
    lead(&rm, 0..1, 1, 0, &[1, 2]);
    let fetch = {
        let rm = rm.clone();
        tokio::spawn(async move { rm.fetch_messages(follower(2, 60_000), at(0, 0)).await })
    };
    wait_until("the follower to park", || rm.delayed_fetches() == 1).await;
    assert_eq!(produce(&rm, 0, 1, 1_000).await.error, None);
    let read = tokio::time::timeout(Duration::from_secs(10), fetch)
        .await
        .expect("woken long before max_wait")
        .expect("fetch");
    assert!(has_records(&read));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_times_out_fails_after_an_isr_shrink_and_on_a_leadership_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rm = replica_manager(dir.path(), 2);
    lead(&rm, 0..1, 1, 0, &[1, 2]);
    let timed_out = produce(&rm, 0, -1, 50).await;
    assert_eq!(timed_out.error, Some(ReplicaError::RequestTimedOut));
    assert_eq!(timed_out.info.map(|i| i.base_offset), Some(0), "appended all the same");
    assert_eq!(rm.purgatory().delayed_produces(), 0);

    // The ISR shrinks to [1], below min.insync.replicas = 2.
    let (tx, mut proposals) = tokio::sync::mpsc::unbounded_channel();
    rm.set_isr_writer(tx);
    let producing = {
        let rm = rm.clone();
        tokio::spawn(async move { produce(&rm, 0, -1, 60_000).await })
    };
    wait_until("the produce to park", || rm.purgatory().delayed_produces() == 1).await;
    rm.maybe_shrink_isrs(crate::clock::now_ms() + 3_600_000);
    let proposal = proposals.recv().await.expect("a shrink");
    assert_eq!(proposal.isr, vec![BrokerId(1)]);
    rm.complete_isr_change(&proposal, IsrWriteOutcome::Written { zk_version: 1 }, 0);
    let failed = producing.await.expect("produce");
    assert_eq!(failed.error, Some(ReplicaError::NotEnoughReplicasAfterAppend));

    // Back to ISR [1, 2] in a new epoch, then broker 2 takes over while a produce waits.
    lead(&rm, 0..1, 1, 1, &[1, 2]);
    let producing = {
        let rm = rm.clone();
        tokio::spawn(async move { produce(&rm, 0, -1, 60_000).await })
    };
    wait_until("the produce to park", || rm.purgatory().delayed_produces() == 1).await;
    lead(&rm, 0..1, 2, 2, &[1, 2]);
    assert_eq!(
        producing.await.expect("produce").error,
        Some(ReplicaError::NotLeaderOrFollower)
    );
}
