//! A roll's fsync runs later and elsewhere; the recovery point waits for it.

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::log::LogContext;
use crate::protocol::test_support::build_batch;
use crate::types::TopicPartition;

fn open(root: &Path, faults: &Faults, scheduler: &FlushScheduler) -> (SharedLog, LogDirFailureChannel) {
    let failures = LogDirFailureChannel::new();
    let ctx = LogContext {
        faults: faults.clone(),
        failures: failures.clone(),
    };
    let tp = TopicPartition {
        topic: "t".into(),
        partition: 0,
    };
    let (log, _) = Log::open(&root.join("t-0"), tp, LogConfig::default(), &ctx, 0, None, true, 0).expect("open");
    (share(log, scheduler), failures)
}

fn append(log: &SharedLog, records: usize) {
    let values: Vec<Vec<u8>> = (0..records).map(|i| format!("v{i}").into_bytes()).collect();
    let kv: Vec<_> = values.iter().map(|v| (None, Some(v.as_slice()))).collect();
    lock(log)
        .append_as_leader(&build_batch(0, -1, &kv, 1), 0, 0)
        .expect("append");
}

#[test]
fn a_roll_moves_the_recovery_point_only_once_its_flush_ran() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (scheduler, flushes) = FlushScheduler::queued();
    let (log, _) = open(dir.path(), &Faults::default(), &scheduler);
    append(&log, 3);
    lock(&log).roll(0).expect("roll");
    append(&log, 2);
    assert_eq!(
        lock(&log).recovery_point(),
        0,
        "nothing was fsynced yet: a crash now must recover from 0"
    );
    let flush = flushes.try_recv().expect("the roll asked for a flush");
    assert_eq!(flush.upto, 3, "everything below the new segment");
    assert!(flushes.try_recv().is_err(), "one flush per roll");
    flush.run();
    assert_eq!(
        lock(&log).recovery_point(),
        3,
        "the rolled segment is durable; the active one is not"
    );
}

#[test]
fn a_failed_roll_flush_leaves_the_recovery_point_and_takes_the_dir_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let faults = Faults::default();
    let (scheduler, flushes) = FlushScheduler::queued();
    let (log, failures) = open(dir.path(), &faults, &scheduler);
    append(&log, 3);
    lock(&log).roll(0).expect("roll");
    faults.fail_dir(dir.path());
    flushes.try_recv().expect("flush").run();
    assert_eq!(lock(&log).recovery_point(), 0);
    assert!(failures.is_offline(dir.path()));
}

#[test]
fn a_truncation_while_a_roll_flush_waits_keeps_the_recovery_point_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (scheduler, flushes) = FlushScheduler::queued();
    let (log, _) = open(dir.path(), &Faults::default(), &scheduler);
    append(&log, 3);
    append(&log, 3);
    lock(&log).roll(0).expect("roll");
    let flush = flushes.try_recv().expect("flush");
    // Prepared (files collected) before the follower truncates, completed after.
    let job = lock(&log).prepare_flush(flush.upto).expect("prepare").expect("a job");
    let synced = job.sync();
    lock(&log).truncate_to(3).expect("truncate");
    append(&log, 4);
    lock(&log).complete_flush(job, synced, 0).expect("complete");
    assert!(
        lock(&log).recovery_point() <= 3,
        "offsets 3.. were rewritten after the flush: {}",
        lock(&log).recovery_point()
    );
}

#[test]
fn the_flusher_thread_flushes_a_roll_while_the_log_keeps_taking_appends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let faults = Faults::default();
    let (log, _) = open(dir.path(), &faults, &FlushScheduler::threads());
    append(&log, 3);
    lock(&log).roll(0).expect("roll");
    let deadline = Instant::now() + Duration::from_secs(10);
    while lock(&log).recovery_point() < 3 {
        assert!(Instant::now() < deadline, "the roll was never flushed");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn an_interval_flush_syncs_without_holding_the_log_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let faults = Faults::default();
    let (scheduler, _flushes) = FlushScheduler::queued();
    let (log, _) = open(dir.path(), &faults, &scheduler);
    append(&log, 3);
    faults.stall_dir(dir.path(), Duration::from_millis(100));
    let flushing = {
        let log = log.clone();
        std::thread::spawn(move || flush_upto(&log, i64::MAX, 0))
    };
    // While the (stalled) fsync runs, the log answers: its lock is free.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answered = Instant::now();
        let rp = lock(&log).recovery_point();
        assert!(
            answered.elapsed() < Duration::from_millis(90),
            "the log's lock was held through an fsync"
        );
        if rp == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "the flush never finished");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        flushing.join().expect("join").expect("flush"),
        "there was something to flush"
    );
}
