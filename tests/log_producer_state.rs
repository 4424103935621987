//! The log's producer state on real files: a retried batch is answered with its original
//! offsets and not appended twice; sequence gaps and fenced epochs are refused with Kafka's
//! codes; snapshots are written at roll and clean shutdown in Kafka's format, and the state is
//! rebuilt from snapshot + log after a clean or an unclean restart, after a follower's
//! truncation, and by a follower that only replicated the batches.

use std::path::Path;

use kastle::log::config::LogConfig;
use kastle::log::failure::LogDirFailureChannel;
use kastle::log::file::Faults;
use kastle::log::log::{Log, LogContext};
use kastle::log::producer_snapshot;
use kastle::protocol::test_support::BatchBuilder;
use kastle::types::TopicPartition;

const PID: i64 = 4000;

fn open(dir: &Path, config: &LogConfig, clean: bool) -> Log {
    let ctx = LogContext {
        faults: Faults::default(),
        failures: LogDirFailureChannel::new(),
    };
    let tp = TopicPartition {
        topic: "idem".into(),
        partition: 0,
    };
    Log::open(&dir.join("idem-0"), tp, config.clone(), &ctx, 0, None, clean, 1_000)
        .expect("open")
        .0
}

/// A batch of `n` records of producer PID in `epoch` starting at sequence `seq`.
fn batch(epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(0).producer(PID, epoch, seq).timestamp(1_000);
    for _ in 0..n {
        b = b.record(None, Some(&b"v"[..]));
    }
    b.build()
}

fn append(log: &mut Log, epoch: i16, seq: i32, n: usize) -> Result<(i64, i64), i16> {
    let bytes = batch(epoch, seq, n);
    log.append_as_leader(&bytes, 0, 1_000)
        .map(|i| (i.first_offset, i.last_offset))
        .map_err(|e| e.error_code())
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    }
}

#[test]
fn a_retried_batch_gets_its_original_offsets_and_is_not_appended_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), &LogConfig::default(), true);
    assert_eq!(append(&mut log, 0, 0, 3), Ok((0, 2)));
    assert_eq!(append(&mut log, 0, 3, 2), Ok((3, 4)));
    assert_eq!(append(&mut log, 0, 0, 3), Ok((0, 2)), "retry of the first batch");
    assert_eq!(append(&mut log, 0, 3, 2), Ok((3, 4)), "retry of the second batch");
    assert_eq!(log.log_end_offset(), 5, "nothing appended twice");
}

#[test]
fn gaps_and_old_epochs_are_refused_with_kafkas_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), &LogConfig::default(), true);
    assert_eq!(append(&mut log, 1, 0, 2), Ok((0, 1)));
    assert_eq!(append(&mut log, 1, 5, 1), Err(45), "OUT_OF_ORDER_SEQUENCE_NUMBER");
    assert_eq!(append(&mut log, 0, 2, 1), Err(47), "INVALID_PRODUCER_EPOCH");
    assert_eq!(append(&mut log, 2, 3, 1), Err(45), "a new epoch starts at 0");
    assert_eq!(append(&mut log, 2, 0, 1), Ok((2, 2)), "bumped epoch");
    assert_eq!(log.log_end_offset(), 3);
}

#[test]
fn state_survives_a_clean_restart_through_the_shutdown_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig::default();
    let mut log = open(dir.path(), &config, true);
    append(&mut log, 0, 0, 4).expect("append");
    log.flush(1_000).expect("flush");
    log.take_producer_snapshot().expect("snapshot");
    drop(log);
    let snapshots = producer_snapshot::list(&dir.path().join("idem-0")).expect("list");
    assert_eq!(snapshots, vec![4], "a snapshot named after the log end");
    let mut log = open(dir.path(), &config, true);
    assert_eq!(log.producer_state().last_entry(PID).map(|e| e.last_seq()), Some(3));
    assert_eq!(
        append(&mut log, 0, 0, 4),
        Ok((0, 3)),
        "the last batch is still a duplicate"
    );
    assert_eq!(append(&mut log, 0, 9, 1), Err(45), "and the sequence still checked");
}

#[test]
fn state_is_rebuilt_from_the_roll_snapshot_and_the_log_after_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = small_segments();
    let mut log = open(dir.path(), &config, true);
    let mut seq = 0;
    let mut offsets = Vec::new();
    for _ in 0..12 {
        offsets.push(append(&mut log, 0, seq, 2).expect("append"));
        seq += 2;
    }
    assert!(log.num_segments() > 2, "small segments rolled");
    let snapshots = producer_snapshot::list(&dir.path().join("idem-0")).expect("list");
    assert!(!snapshots.is_empty(), "roll writes snapshots");
    assert!(
        snapshots.iter().all(|s| log.segment_base_offsets().contains(s)),
        "{snapshots:?}"
    );
    log.flush(1_000).expect("flush");
    drop(log); // no shutdown snapshot: as after kill -9
    let last_snapshot = *snapshots.last().expect("one");
    let mut log = open(dir.path(), &config, false);
    // The snapshot keeps each producer's last batch (as Kafka's does); the batches after it are
    // replayed from the log with their metadata, so every one of them is a duplicate again.
    let mut known = 0;
    for (i, want) in offsets.iter().enumerate().skip(7) {
        let s = i32::try_from(i * 2).expect("small");
        if want.1 >= last_snapshot - 1 {
            assert_eq!(append(&mut log, 0, s, 2), Ok(*want), "retry of batch {i}");
            known += 1;
        }
    }
    assert!(known >= 2, "the snapshot's last batch and at least one replayed batch");
    assert_eq!(append(&mut log, 0, seq, 1).map(|(f, _)| f), Ok(24));
}

#[test]
fn a_follower_rebuilds_state_from_replicated_batches_and_truncation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut leader = open(&dir.path().join("leader"), &LogConfig::default(), true);
    let mut follower = open(&dir.path().join("follower"), &LogConfig::default(), true);
    for seq in [0, 2, 4] {
        append(&mut leader, 0, seq, 2).expect("leader append");
    }
    let replicated = leader.read(0, 1 << 20, leader.log_end_offset(), true).expect("read");
    follower.append_as_follower(&replicated, 1_000).expect("replicate");
    // As new leader the follower knows the batches it replicated.
    assert_eq!(
        append(&mut follower, 0, 4, 2),
        Ok((4, 5)),
        "duplicate of the last batch"
    );
    assert_eq!(
        append(&mut follower, 0, 2, 2),
        Ok((2, 3)),
        "duplicate of an earlier batch"
    );
    // Truncating away the last batch rolls the state back with it.
    follower.truncate_to(4).expect("truncate");
    assert_eq!(follower.producer_state().last_entry(PID).map(|e| e.last_seq()), Some(3));
    assert_eq!(
        append(&mut follower, 0, 4, 2),
        Ok((4, 5)),
        "appended again, not a duplicate"
    );
    assert_eq!(follower.log_end_offset(), 6);
}

#[test]
fn a_corrupt_snapshot_is_deleted_and_the_log_replayed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig::default();
    let mut log = open(dir.path(), &config, true);
    append(&mut log, 0, 0, 3).expect("append");
    log.flush(1_000).expect("flush");
    log.take_producer_snapshot().expect("snapshot");
    drop(log);
    let file = producer_snapshot::path(&dir.path().join("idem-0"), 3);
    let mut bytes = std::fs::read(&file).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, bytes).expect("corrupt");
    let mut log = open(dir.path(), &config, true);
    assert!(!file.exists(), "the corrupt snapshot is deleted");
    assert_eq!(append(&mut log, 0, 0, 3), Ok((0, 2)), "state replayed from the log");
}

#[test]
fn a_clean_log_without_snapshots_is_not_scanned_but_a_crashed_one_is() {
    // Kafka's upgrade rule: no snapshot after a clean shutdown means the log predates producer
    // state, and a full scan at every start is not worth it; after a crash it is rebuilt.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig::default();
    let mut log = open(dir.path(), &config, true);
    append(&mut log, 0, 0, 3).expect("append");
    log.flush(1_000).expect("flush");
    drop(log); // no snapshot written
    let log = open(dir.path(), &config, true);
    assert_eq!(
        log.producer_state().producer_count(),
        0,
        "clean and no snapshot: not scanned"
    );
    drop(log);
    let log = open(dir.path(), &config, false);
    assert_eq!(
        log.producer_state().producer_count(),
        1,
        "after a crash the log is replayed"
    );
}
