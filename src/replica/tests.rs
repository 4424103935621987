//! Partition and ReplicaManager behaviour on real logs in a temp dir: leader/follower HW rules,
//! ISR proposals, divergence detection and truncation (KIP-101/279), and the high-watermark
//! checkpoint restored at start-up.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::error::ReplicaError;
use super::partition::{IsrWriteOutcome, Partition, PartitionState, StoredState};
use super::replica_manager::{ControllerRequestEpochs, LeaderAndIsrPartition, ReplicaConfig, ReplicaManager};
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log_manager::{lock, LogManager, LogManagerConfig};
use crate::protocol::test_support::build_batch;
use crate::types::{BrokerId, TopicPartition};

fn tp() -> TopicPartition {
    TopicPartition {
        topic: "t".into(),
        partition: 0,
    }
}

fn manager(dir: &Path, clean: bool) -> Arc<LogManager> {
    let cfg = LogManagerConfig {
        dirs: vec![dir.to_path_buf()],
        clean_dirs: if clean { vec![dir.to_path_buf()] } else { Vec::new() },
        log: LogConfig::default(),
        recovery_threads_per_dir: 1,
    };
    Arc::new(LogManager::startup(
        &cfg,
        LogDirFailureChannel::new(),
        Faults::default(),
        0,
    ))
}

fn b(ids: &[i32]) -> Vec<BrokerId> {
    ids.iter().map(|i| BrokerId(*i)).collect()
}

fn state(leader: i32, epoch: i32, isr: &[i32]) -> PartitionState {
    PartitionState {
        controller_epoch: 1,
        leader: BrokerId(leader),
        leader_epoch: epoch,
        isr: b(isr),
        partition_epoch: 0,
        replicas: b(&[1, 2, 3]),
        adding: Vec::new(),
        removing: Vec::new(),
    }
}

fn partition(m: &LogManager, local: i32, s: PartitionState) -> Partition {
    let log = m.get_or_create_log(&tp(), 0).expect("log");
    let p = Partition::new(tp(), uuid::Uuid::nil(), BrokerId(local), s.clone(), log, 0);
    p.apply(s, 2, 0).expect("apply");
    p
}

fn record() -> Vec<u8> {
    build_batch(0, -1, &[(None, Some(&b"v"[..]))], 1)
}

#[test]
fn the_hw_follows_the_slowest_isr_member_and_acks_all_completes_then() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 0, &[1, 2, 3]));
    let (info, epoch) = p.append_as_leader(&record(), -1, 2, 0).expect("append");
    p.append_as_leader(&record(), -1, 2, 0).expect("append");
    assert_eq!(p.check_produce_completion(info.last_offset + 1, epoch, 2), None);
    p.read_for_follower(BrokerId(2), 2, 0, 1 << 20, 2, 10, true)
        .expect("fetch");
    assert_eq!(p.high_watermark(), 0, "follower 3 has not fetched yet");
    p.read_for_follower(BrokerId(3), 1, 0, 1 << 20, 2, 10, true)
        .expect("fetch");
    assert_eq!(p.high_watermark(), 1);
    assert_eq!(p.check_produce_completion(1, epoch, 2), Some(Ok(())));
    // A consumer sees only what is below the HW.
    assert_eq!(p.read(1, 1 << 20).expect("read").records.len(), 0);
    // Another epoch means the produce's records may be gone: never acknowledged.
    assert_eq!(
        p.check_produce_completion(1, epoch + 1, 2),
        Some(Err(ReplicaError::NotLeaderOrFollower))
    );
}

#[test]
fn a_lagging_follower_is_proposed_out_and_a_caught_up_one_back_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 0, &[1, 2, 3]));
    p.read_for_follower(BrokerId(2), 0, -1, 1 << 20, 2, 0, true)
        .expect("fetch");
    p.read_for_follower(BrokerId(3), 0, -1, 1 << 20, 2, 0, true)
        .expect("fetch");
    p.append_as_leader(&record(), 1, 2, 0).expect("append");
    p.read_for_follower(BrokerId(2), 1, 0, 1 << 20, 2, 20_000, true)
        .expect("fetch");
    let shrink = p.maybe_shrink_isr(31_000, 30_000).expect("3 lags");
    assert_eq!(shrink.isr, b(&[1, 2]));
    assert!(!shrink.expand);
    assert_eq!(p.maybe_shrink_isr(31_000, 30_000), None, "one change in flight");
    p.complete_isr_update(&shrink, IsrWriteOutcome::Written { zk_version: 1 }, 2);
    assert_eq!((p.state().isr, p.state().partition_epoch), (b(&[1, 2]), 1));

    let (_, expand) = p
        .read_for_follower(BrokerId(3), 1, 0, 1 << 20, 2, 32_000, true)
        .expect("fetch");
    let expand = expand.expect("3 caught up");
    assert_eq!(expand.isr, b(&[1, 2, 3]));
    assert_eq!(expand.zk_version, 1);
    // A conflicting write by someone else: take what ZooKeeper holds for our epoch.
    let stored = StoredState {
        controller_epoch: 1,
        leader: BrokerId(1),
        leader_epoch: 0,
        isr: b(&[1, 2]),
        zk_version: 5,
    };
    assert_eq!(
        p.complete_isr_update(&expand, IsrWriteOutcome::Conflict(Some(stored)), 2),
        None
    );
    assert_eq!(p.state().partition_epoch, 5);
}

#[test]
fn a_follower_with_a_foreign_epoch_is_told_where_to_truncate_and_does() {
    let leader_dir = tempfile::tempdir().expect("tempdir");
    let follower_dir = tempfile::tempdir().expect("tempdir");
    let lm = manager(leader_dir.path(), false);
    let fm = manager(follower_dir.path(), false);
    // Both wrote offset 0 in epoch 0; then the follower (as an old leader) wrote offsets 1-2 in
    // epoch 1, while the new leader (epoch 2) wrote offset 1.
    let leader = partition(&lm, 2, state(2, 0, &[2]));
    leader.append_as_leader(&record(), 1, 1, 0).expect("append");
    leader.apply(state(2, 2, &[2, 1]), 1, 0).expect("epoch 2");
    leader.append_as_leader(&record(), 1, 1, 0).expect("append");
    let old = partition(&fm, 1, state(1, 0, &[1]));
    old.append_as_leader(&record(), 1, 1, 0).expect("append");
    old.apply(state(1, 1, &[1]), 1, 0).expect("epoch 1");
    old.append_as_leader(&record(), 1, 1, 0).expect("append");
    old.append_as_leader(&record(), 1, 1, 0).expect("append");
    old.apply(state(2, 2, &[2, 1]), 1, 0).expect("follow 2");
    let (leo, last_epoch, _) = old.fetch_position();
    assert_eq!((leo, last_epoch), (3, 1));

    let (read, _) = leader
        .read_for_follower(BrokerId(1), leo, last_epoch, 1 << 20, 1, 0, true)
        .expect("fetch");
    assert_eq!(
        read.diverging_epoch,
        Some((0, 1)),
        "epoch 1 is unknown to the leader; epoch 0 ends at 1"
    );
    assert!(read.records.is_empty());
    assert_eq!(old.truncate_on_divergence(2, (0, 1)).expect("truncate"), 1);
    let (leo, last_epoch, _) = old.fetch_position();
    assert_eq!((leo, last_epoch), (1, 0));
    let (read, _) = leader
        .read_for_follower(BrokerId(1), leo, last_epoch, 1 << 20, 1, 0, true)
        .expect("fetch");
    assert_eq!(read.diverging_epoch, None);
    old.append_as_follower(2, 1, &read.records, read.high_watermark, 0)
        .expect("append");
    assert_eq!(old.log_end_offset(), 2);
    assert_eq!(
        lock(&old.log()).end_offset_for_epoch(2),
        (2, 2),
        "the leader's epoch came along"
    );
    // A stale response (epoch changed since) is ignored.
    assert!(old.append_as_follower(1, 2, &[], 2, 0).is_err());
}

#[test]
fn high_watermarks_come_back_from_the_checkpoint_at_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let m = manager(dir.path(), false);
        let log = m.get_or_create_log(&tp(), 0).expect("log");
        for _ in 0..10 {
            lock(&log).append_as_leader(&record(), 0, 0).expect("append");
        }
        lock(&log).flush(0).expect("flush");
        m.checkpoint_high_watermarks(&BTreeMap::from([(tp(), 7)]));
    }
    let m = manager(dir.path(), true);
    let rm = ReplicaManager::new(BrokerId(1), m, ReplicaConfig::default());
    assert_eq!(
        rm.high_watermarks().get(&tp()),
        Some(&7),
        "kept before the partition is hosted"
    );
    let epochs = ControllerRequestEpochs {
        controller_epoch: 1,
        broker_epoch: -1,
    };
    let lai = LeaderAndIsrPartition {
        tp: tp(),
        topic_id: uuid::Uuid::nil(),
        state: state(2, 1, &[2, 1]),
    };
    let results = rm
        .become_leader_or_follower(epochs, vec![lai], Vec::new(), 0)
        .expect("lai");
    assert_eq!(results[0].2, Ok(()));
    let p = rm.partition(&tp()).expect("hosted");
    assert_eq!(p.high_watermark(), 7);
    assert!(!p.is_leader());
}

#[test]
fn acks_all_fails_after_append_when_the_isr_falls_below_the_minimum_while_waiting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 0, &[1, 2]));
    let (info, epoch) = p.append_as_leader(&record(), -1, 2, 0).expect("append");
    assert_eq!(p.check_produce_completion(info.last_offset + 1, epoch, 2), None);
    let shrink = p.maybe_shrink_isr(31_000, 30_000).expect("2 never fetched");
    p.complete_isr_update(&shrink, IsrWriteOutcome::Written { zk_version: 1 }, 2);
    assert_eq!(
        p.check_produce_completion(info.last_offset + 1, epoch, 2),
        Some(Err(ReplicaError::NotEnoughReplicasAfterAppend))
    );
    assert_eq!(
        p.append_as_leader(&record(), -1, 2, 0).err(),
        Some(ReplicaError::NotEnoughReplicas)
    );
    assert_eq!(p.log_end_offset(), 1, "nothing appended below min ISR");
}

#[test]
fn an_out_of_range_follower_truncates_to_the_leader_end_or_restarts_at_its_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 0, &[1]));
    for _ in 0..3 {
        p.append_as_leader(&record(), 1, 1, 0).expect("append");
    }
    p.apply(state(2, 1, &[2, 1]), 1, 0).expect("follow 2");
    // The new leader (unclean) has only 1 record.
    p.reset_out_of_range(1, 1, 0, 0).expect("truncate");
    assert_eq!(p.log_end_offset(), 1);
    // The leader's log now starts at 50: start over there.
    p.reset_out_of_range(1, 60, 50, 0).expect("restart");
    assert_eq!(p.fetch_position(), (50, -1, 50));
    assert!(
        p.reset_out_of_range(0, 60, 50, 0).is_err(),
        "a stale epoch changes nothing"
    );
}

#[test]
fn leadership_keeps_its_starting_epoch_through_epoch_bumps_and_restarts_after_a_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), true);
    let p = partition(&m, 1, state(1, 3, &[1, 2]));
    assert_eq!(p.leader_since_epoch(), 3);
    // The controller shrinks the ISR: a new epoch, the same leader.
    p.apply(state(1, 4, &[1]), 1, 0).expect("apply");
    assert_eq!(p.leader_since_epoch(), 3);
    p.apply(state(2, 5, &[2]), 1, 0).expect("apply");
    assert_eq!(p.leader_since_epoch(), -1);
    p.apply(state(1, 6, &[1, 2]), 1, 0).expect("apply");
    assert_eq!(p.leader_since_epoch(), 6);
}

#[test]
fn a_follower_that_is_not_a_live_broker_is_not_taken_back_into_the_isr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 0, &[1, 2]));
    // Broker 3 caught up, but it has left the cluster (its last fetch arrives late).
    let (_, proposal) = p
        .read_for_follower(BrokerId(3), 0, -1, 1 << 20, 1, 0, false)
        .expect("fetch");
    assert_eq!(proposal, None);
    let (_, proposal) = p
        .read_for_follower(BrokerId(3), 0, -1, 1 << 20, 1, 0, true)
        .expect("fetch");
    assert_eq!(proposal.expect("alive: back in").isr, b(&[1, 2, 3]));
}

/// Retention asks the partition for its high watermark (the broker's retention task does): it
/// must do so before locking the log, since a partition's lock comes first (a fetch holds it and
/// waits for the log). Debug builds catch the inversion as a panic at once; before, the broker
/// froze when a fetch crossed a retention pass.
#[test]
fn retention_asks_for_the_high_watermark_before_it_locks_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 0, &[1]));
    for _ in 0..3 {
        p.append_as_leader(&record(), 1, 1, 0).expect("append");
        lock(&p.log()).roll(0).expect("roll");
    }
    let config = LogConfig {
        retention_ms: 1,
        ..LogConfig::default()
    };
    lock(&p.log()).set_config(config);
    let deleted = m.cleanup_logs(|_| p.high_watermark(), 1_000_000);
    assert_eq!(deleted, 3, "segments below the HW went");
}

/// A consumer read waiting for its log (a slow `pread`, or an append holding the log's lock)
/// does not hold the partition's state lock meanwhile: the HW, leadership and acks=all checks
/// stay answerable.
#[test]
fn a_read_waiting_for_its_log_leaves_the_partition_lock_free() {
    use std::sync::mpsc;
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = Arc::new(partition(&m, 1, state(1, 0, &[1])));
    p.append_as_leader(&record(), 1, 1, 0).expect("append");
    let log = p.log();
    let (locked_tx, locked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    // Another thread holds the log's lock, as a stalled disk write would.
    let holder = std::thread::spawn(move || {
        let _guard = lock(&log);
        locked_tx.send(()).expect("send");
        let _ = release_rx.recv();
    });
    locked_rx.recv().expect("log locked");
    let reader = {
        let p = p.clone();
        std::thread::spawn(move || p.read(0, 1 << 20).map(|r| r.records.len()))
    };
    std::thread::sleep(Duration::from_millis(50)); // let the reader reach the log's lock
    let (hw_tx, hw_rx) = mpsc::channel();
    let asker = {
        let p = p.clone();
        std::thread::spawn(move || hw_tx.send(p.high_watermark()).expect("send"))
    };
    let answered = hw_rx.recv_timeout(Duration::from_secs(2));
    release_tx.send(()).expect("release");
    holder.join().expect("holder");
    asker.join().expect("asker");
    assert!(reader.join().expect("reader").expect("read") > 0);
    assert_eq!(answered, Ok(1), "the HW was answered while the read waited for the log");
}

/// A caught-up consumer (fetch offset = HW = log end) is answered from memory, so an async
/// worker can serve it; anything that may read records, or any busy lock, says `None` and the
/// read goes to the I/O executor.
#[test]
fn only_a_caught_up_consumer_read_is_answered_without_the_io_executor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manager(dir.path(), false);
    let p = partition(&m, 1, state(1, 3, &[1]));
    p.append_as_leader(&record(), 1, 1, 0).expect("append");
    assert_eq!(p.high_watermark(), 1);
    let caught_up = p
        .try_read_caught_up(1, 3)
        .expect("answered from memory")
        .expect("no error");
    assert_eq!((caught_up.records.len(), caught_up.high_watermark), (0, 1));
    assert!(
        p.try_read_caught_up(0, 3).is_none(),
        "records to read: the executor reads them"
    );
    assert_eq!(
        p.try_read_caught_up(1, 4).map(|r| r.err()),
        Some(Some(ReplicaError::UnknownLeaderEpoch))
    );
    assert_eq!(
        p.try_read_caught_up(1, 2).map(|r| r.err()),
        Some(Some(ReplicaError::FencedLeaderEpoch))
    );
    // A busy log (an append stuck in a slow disk holds it) is not waited for.
    let log = p.log();
    let guard = lock(&log);
    let busy = std::thread::scope(|s| s.spawn(|| p.try_read_caught_up(1, 3).is_none()).join());
    drop(guard);
    assert!(busy.expect("join"), "a busy log lock is not waited for");
    let follower = partition(&m, 2, state(1, 3, &[1, 2]));
    assert_eq!(
        follower.try_read_caught_up(0, 3).map(|r| r.err()),
        Some(Some(ReplicaError::NotLeaderOrFollower))
    );
}

/// Kafka's `shouldLeaderThrottle` through `fetch_messages`: with the leader quota exceeded, a
/// throttled partition's follower outside the ISR gets no records (and no error); an ISR
/// member still gets them; what followers are sent for throttled partitions is recorded.
#[tokio::test]
async fn a_throttled_leader_sends_nothing_to_an_out_of_sync_follower_once_over_quota() {
    use super::fetch::{FetchParams, FetchPartition};
    use super::replication_quota::{QuotaConfig, LEADER_THROTTLED_REPLICAS};
    let dir = tempfile::tempdir().expect("tempdir");
    let config = ReplicaConfig {
        quota: QuotaConfig {
            leader_rate: Some(1_000),
            ..QuotaConfig::default()
        },
        ..ReplicaConfig::default()
    };
    let rm = ReplicaManager::new(BrokerId(1), manager(dir.path(), false), config);
    let epochs = ControllerRequestEpochs {
        controller_epoch: 1,
        broker_epoch: -1,
    };
    let lai = LeaderAndIsrPartition {
        tp: tp(),
        topic_id: uuid::Uuid::nil(),
        state: state(1, 1, &[1, 2]),
    };
    rm.become_leader_or_follower(epochs, vec![lai], Vec::new(), 0)
        .expect("lai");
    let p = rm.partition(&tp()).expect("hosted");
    p.append_as_leader(&record(), 1, 1, 0).expect("append");
    rm.quotas().update_topic(
        "t",
        &BTreeMap::from([(LEADER_THROTTLED_REPLICAS.to_string(), "0:1".to_string())]),
    );
    let fetch = |replica: i32| {
        let params = FetchParams {
            replica: Some(BrokerId(replica)),
            replica_isr_eligible: false,
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: 1 << 20,
            isolation_level: 0,
        };
        let wanted = FetchPartition {
            tp: tp(),
            fetch_offset: 0,
            max_bytes: 1 << 20,
            current_leader_epoch: 1,
            last_fetched_epoch: -1,
            log_start_offset: 0,
        };
        let rm = &rm;
        async move { rm.fetch_messages(params, vec![wanted]).await.remove(0) }
    };
    let now = crate::clock::now_ms();
    let under = fetch(3).await;
    assert!(!under.records.is_empty(), "under the quota: {under:?}");
    assert!(
        rm.quotas().leader().byte_rate(now) > 0.0,
        "the bytes sent were recorded"
    );
    rm.quotas().leader().record(1_000_000, now);
    let over = fetch(3).await;
    assert_eq!((over.error.clone(), over.records.len()), (None, 0), "{over:?}");
    assert_eq!(over.high_watermark, 0, "ISR member 2 has not fetched: the HW stays");
    assert!(!fetch(2).await.records.is_empty(), "an ISR member is never throttled");
    rm.quotas().update_topic("t", &BTreeMap::new());
    assert!(!fetch(3).await.records.is_empty(), "no longer throttled");
}
