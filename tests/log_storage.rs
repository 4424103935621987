//! The log against a simple model and against crashes: random appends, reads, truncations,
//! rolls and restarts agree with a list of batches; a torn, garbage or bit-flipped tail is cut
//! at recovery and everything before it reads back byte-identical; retention never passes the
//! high watermark; an I/O error takes one dir offline and leaves the others working.

mod common;

use std::path::Path;

use common::Rng;

use kastle::log::config::LogConfig;
use kastle::log::failure::LogDirFailureChannel;
use kastle::log::file::Faults;
use kastle::log::log::{Log, LogContext, LogError};
use kastle::log::log_manager::{lock, LogManager, LogManagerConfig};
use kastle::protocol::error_codes as ec;
use kastle::protocol::test_support::build_batch;
use kastle::types::TopicPartition;

fn tp(partition: i32) -> TopicPartition {
    TopicPartition {
        topic: "orders".into(),
        partition,
    }
}

fn ctx() -> LogContext {
    LogContext {
        faults: Faults::default(),
        failures: LogDirFailureChannel::new(),
    }
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, config: &LogConfig, clean: bool, recovery_point: i64) -> Log {
    Log::open(
        &dir.join("orders-0"),
        tp(0),
        config.clone(),
        &ctx(),
        recovery_point,
        None,
        clean,
        0,
    )
    .expect("open")
    .0
}

/// A producer batch of `n` records with distinct values.
/// `batch` as the leader stored it: its assigned base offset and leader epoch (the leader
/// rewrites copies of the headers, not the caller's buffer).
fn as_stored(mut batch: Vec<u8>, base_offset: i64, leader_epoch: i32) -> Vec<u8> {
    kastle::protocol::record_batch::set_base_offset(&mut batch, base_offset);
    kastle::protocol::record_batch::set_partition_leader_epoch(&mut batch, leader_epoch);
    batch
}

fn producer_batch(n: usize, tag: u64, timestamp: i64) -> Vec<u8> {
    let values: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("value-{tag}-{i}-{}", "x".repeat((tag % 97) as usize)).into_bytes())
        .collect();
    let records: Vec<kastle::protocol::test_support::KeyValue> =
        values.iter().map(|v| (Some(&b"key"[..]), Some(v.as_slice()))).collect();
    build_batch(0, -1, &records, timestamp)
}

/// Compares byte strings without dumping them: lengths and the first differing index.
#[track_caller]
fn assert_same_bytes(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        panic!(
            "{what}: got {} bytes, want {} bytes, first difference at {at}",
            got.len(),
            want.len()
        );
    }
}

/// Reads everything from `offset` to `ceiling` the way a consumer does: fetch after fetch
/// (each fetch reads from one segment, as Kafka's does).
fn read_all(log: &Log, mut offset: i64, ceiling: i64) -> Vec<u8> {
    let mut out = Vec::new();
    while offset < ceiling {
        let bytes = log.read(offset, 1 << 20, ceiling, true).expect("read");
        let Some((_, last)) = kastle::protocol::record_batch::BatchScanner::without_crc(&bytes)
            .map_while(Result::ok)
            .last()
        else {
            break;
        };
        out.extend_from_slice(&bytes);
        offset = last.last_offset() + 1;
    }
    out
}

/// What the log should hold: batches as written (offsets assigned), in order.
#[derive(Default)]
struct Model {
    batches: Vec<(i64, i64, Vec<u8>)>, // (base, last, bytes)
}

impl Model {
    fn leo(&self) -> i64 {
        self.batches.last().map(|b| b.1 + 1).unwrap_or(0)
    }
    fn bytes_from(&self, offset: i64) -> Vec<u8> {
        self.batches
            .iter()
            .filter(|b| b.1 >= offset)
            .flat_map(|b| b.2.clone())
            .collect()
    }
    /// The log truncates at batch boundaries: a batch holding `offset` goes whole.
    fn truncate_to(&mut self, offset: i64) {
        self.batches.retain(|b| b.1 < offset);
    }
}

#[test]
fn random_operations_match_a_model_of_batches() {
    for seed in 1..=40u64 {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = small_segments();
        let mut log = open(dir.path(), &config, true, 0);
        let mut model = Model::default();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for step in 0..150 {
            match rng.below(10) {
                0..=4 => {
                    let batch = producer_batch(1 + rng.below(8) as usize, rng.next(), 1_000 + step);
                    let epoch = (step / 50) as i32;
                    let info = log.append_as_leader(&batch, epoch, 0).expect("append");
                    assert_eq!(info.first_offset, model.leo(), "seed {seed} step {step}");
                    let stored = as_stored(batch, info.first_offset, epoch);
                    model.batches.push((info.first_offset, info.last_offset, stored));
                }
                5..=6 => {
                    let leo = model.leo();
                    let offset = rng.below(leo as u64 + 1) as i64;
                    let got = read_all(&log, offset, leo);
                    assert_same_bytes(
                        &got,
                        &model.bytes_from(offset),
                        &format!("seed {seed} step {step} offset {offset}"),
                    );
                }
                7 => {
                    let leo = model.leo();
                    if leo > 0 {
                        // Followers truncate at batch boundaries.
                        let boundary = model.batches[rng.below(model.batches.len() as u64) as usize].0;
                        log.truncate_to(boundary).expect("truncate");
                        model.truncate_to(boundary);
                    }
                }
                8 => log.roll(0).expect("roll"),
                _ => {
                    let clean = rng.below(2) == 0;
                    if clean {
                        log.flush(0).expect("flush");
                    }
                    let recovery_point = log.recovery_point();
                    drop(log);
                    log = open(dir.path(), &config, clean, recovery_point);
                }
            }
            assert_eq!(log.log_end_offset(), model.leo(), "seed {seed} step {step}");
        }
        assert_same_bytes(
            &read_all(&log, 0, model.leo()),
            &model.bytes_from(0),
            &format!("seed {seed}"),
        );
    }
}

/// Writes five batches, closes the log, and returns (their bytes, the last segment file).
fn five_batches(dir: &Path) -> (Vec<Vec<u8>>, std::path::PathBuf) {
    let mut log = open(dir, &LogConfig::default(), true, 0);
    let mut written = Vec::new();
    for i in 0..5 {
        let batch = producer_batch(3, i, 1_000 + i as i64);
        let info = log.append_as_leader(&batch, 0, 0).expect("append");
        written.push(as_stored(batch, info.first_offset, 0));
    }
    log.flush(0).expect("flush");
    (written, dir.join("orders-0/00000000000000000000.log"))
}

fn assert_recovers_to(dir: &Path, written: &[Vec<u8>], batches_kept: usize) {
    let mut log = open(dir, &LogConfig::default(), false, 0);
    let expected: Vec<u8> = written[..batches_kept].concat();
    assert_eq!(log.log_end_offset(), 3 * batches_kept as i64);
    assert_same_bytes(&read_all(&log, 0, log.log_end_offset()), &expected, "recovered log");
    let next = producer_batch(1, 99, 5_000);
    assert_eq!(
        log.append_as_leader(&next, 1, 0)
            .expect("append after recovery")
            .first_offset,
        3 * batches_kept as i64
    );
}

#[test]
fn a_torn_batch_at_the_tail_is_cut_at_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (written, file) = five_batches(dir.path());
    let extra = producer_batch(3, 7, 9_000);
    let mut data = std::fs::read(&file).expect("read");
    data.extend_from_slice(&extra[..extra.len() / 2]);
    std::fs::write(&file, &data).expect("write");
    assert_recovers_to(dir.path(), &written, 5);
    assert_eq!(
        std::fs::metadata(&file).expect("meta").len() as usize,
        written.concat().len() + producer_batch(1, 99, 0).len()
    );
}

#[test]
fn garbage_at_the_tail_is_cut_at_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (written, file) = five_batches(dir.path());
    let mut data = std::fs::read(&file).expect("read");
    data.extend_from_slice(&[0xAB; 333]);
    std::fs::write(&file, &data).expect("write");
    assert_recovers_to(dir.path(), &written, 5);
}

#[test]
fn a_flipped_byte_in_the_last_batch_cuts_that_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (written, file) = five_batches(dir.path());
    let mut data = std::fs::read(&file).expect("read");
    let last_start = written[..4].concat().len();
    data[last_start + 70] ^= 0x01;
    std::fs::write(&file, &data).expect("write");
    assert_recovers_to(dir.path(), &written, 4);
}

#[test]
fn a_clean_shutdown_skips_recovery_but_a_corrupt_index_is_rebuilt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (written, _) = five_batches(dir.path());
    std::fs::write(dir.path().join("orders-0/00000000000000000000.index"), [1u8, 2, 3]).expect("corrupt index");
    let log = open(dir.path(), &LogConfig::default(), true, 15);
    assert_same_bytes(&read_all(&log, 0, 15), &written.concat(), "log with a rebuilt index");
}

#[test]
fn reads_stop_below_the_ceiling_and_honour_max_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (written, _) = five_batches(dir.path());
    let log = open(dir.path(), &LogConfig::default(), true, 15);
    // Ceiling at offset 7 (inside batch 2: offsets 6..=8): batches 0 and 1 only.
    assert_same_bytes(
        &log.read(0, 1 << 20, 7, true).expect("read"),
        &written[..2].concat(),
        "below the ceiling",
    );
    // From the middle of batch 1, the whole batch comes back.
    assert_same_bytes(
        &log.read(4, 1 << 20, 15, true).expect("read"),
        &written[1..].concat(),
        "from mid-batch",
    );
    // max_bytes smaller than one batch: the first batch whole (min_one), or nothing.
    assert_same_bytes(&log.read(0, 10, 15, true).expect("read"), &written[0], "min one batch");
    assert!(log.read(0, 10, 15, false).expect("read").is_empty());
    assert!(log.read(15, 1 << 20, 15, true).expect("read at LEO").is_empty());
    assert!(matches!(
        log.read(16, 1 << 20, 15, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn segments_roll_on_size_and_retention_never_passes_the_high_watermark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        segment_bytes: 1024,
        retention_bytes: 0,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), &config, true, 0);
    for i in 0..20 {
        let batch = producer_batch(2, i, 1_000);
        log.append_as_leader(&batch, 0, 0).expect("append");
    }
    let segments = log.segment_base_offsets();
    assert!(segments.len() >= 3, "{segments:?}");
    // HW inside the third segment: only the first two can go.
    let hw = segments[2] + 1;
    let deleted = log.delete_old_segments(hw, 10_000).expect("retention");
    assert_eq!(deleted, 2);
    assert_eq!(log.log_start_offset(), segments[2]);
    assert_eq!(log.segment_base_offsets()[0], segments[2]);
    assert!(matches!(
        log.read(0, 1024, hw, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn an_io_error_takes_one_dir_offline_and_the_other_keeps_working() {
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = vec![root.path().join("d1"), root.path().join("d2")];
    for d in &dirs {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let cfg = LogManagerConfig {
        dirs: dirs.clone(),
        clean_dirs: dirs.clone(),
        log: LogConfig::default(),
        recovery_threads_per_dir: 2,
    };
    let manager = LogManager::startup(&cfg, LogDirFailureChannel::new(), Faults::default(), 0);
    let mut events = manager.failures().subscribe();
    let a = manager.get_or_create_log(&tp(0), 0).expect("log a");
    let b = manager.get_or_create_log(&tp(1), 0).expect("log b");
    let (dir_a, dir_b) = (lock(&a).root().to_path_buf(), lock(&b).root().to_path_buf());
    assert_ne!(dir_a, dir_b, "new partitions go to the dir with the fewest");

    manager.faults().fail_dir(&dir_a);
    let err = lock(&a)
        .append_as_leader(&producer_batch(1, 1, 0), 0, 0)
        .expect_err("dead disk");
    assert_eq!(err.error_code(), ec::KAFKA_STORAGE_ERROR, "KAFKA_STORAGE_ERROR: {err}");
    let event = events.try_recv().expect("failure event");
    assert_eq!(event.dir, dir_a);
    assert_eq!(manager.live_dirs(), vec![dir_b.clone()]);
    assert_eq!(manager.handle_dir_failure(&dir_a), vec![tp(0)]);
    lock(&b)
        .append_as_leader(&producer_batch(1, 2, 0), 0, 0)
        .expect("the other dir still works");
    let c = manager
        .get_or_create_log(&tp(2), 0)
        .expect("new partitions avoid the dead dir");
    assert_eq!(lock(&c).root(), dir_b);
}

#[test]
fn logs_reload_with_their_checkpoints_and_deleted_partitions_vanish() {
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = vec![root.path().join("d1")];
    std::fs::create_dir_all(&dirs[0]).expect("mkdir");
    let cfg = LogManagerConfig {
        dirs: dirs.clone(),
        clean_dirs: vec![],
        log: LogConfig::default(),
        recovery_threads_per_dir: 2,
    };
    let manager = LogManager::startup(&cfg, LogDirFailureChannel::new(), Faults::default(), 0);
    for p in 0..4 {
        let log = manager.get_or_create_log(&tp(p), 0).expect("log");
        lock(&log)
            .append_as_leader(&producer_batch(2, p as u64, 0), 0, 0)
            .expect("append");
    }
    manager.flush_all(0);
    let checkpoint = std::fs::read_to_string(dirs[0].join("recovery-point-offset-checkpoint")).expect("checkpoint");
    assert!(
        checkpoint.starts_with("0\n4\n") && checkpoint.contains("orders 3 2\n"),
        "{checkpoint}"
    );
    manager.delete_log(&tp(3)).expect("delete");
    drop(manager);
    let reloaded = LogManager::startup(&cfg, LogDirFailureChannel::new(), Faults::default(), 0);
    let mut tps: Vec<TopicPartition> = reloaded.all_logs().into_iter().map(|(tp, _)| tp).collect();
    tps.sort();
    assert_eq!(tps, vec![tp(0), tp(1), tp(2)]);
    assert_eq!(lock(&reloaded.get_log(&tp(1)).expect("log")).log_end_offset(), 2);
}

#[tokio::test]
async fn the_retention_task_deletes_old_segments_below_the_high_watermark_and_checkpoints_hws() {
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = vec![root.path().join("d1")];
    std::fs::create_dir_all(&dirs[0]).expect("mkdir");
    // Everything is older than 1 ms; the HW stops deletion after the first segments.
    let log_config = LogConfig {
        segment_bytes: 1024,
        retention_ms: 1,
        ..LogConfig::default()
    };
    let cfg = LogManagerConfig {
        dirs: dirs.clone(),
        clean_dirs: vec![],
        log: log_config,
        recovery_threads_per_dir: 1,
    };
    let manager = std::sync::Arc::new(LogManager::startup(
        &cfg,
        LogDirFailureChannel::new(),
        Faults::default(),
        0,
    ));
    let log = manager.get_or_create_log(&tp(0), 0).expect("log");
    for i in 0..20 {
        lock(&log)
            .append_as_leader(&producer_batch(2, i, 1_000), 0, 0)
            .expect("append");
    }
    let segments = lock(&log).segment_base_offsets();
    let hw = segments[2];
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // Scheduled the way the broker schedules retention.
    let m = manager.clone();
    let task = tokio::spawn(kastle::clock::run_periodically(
        std::time::Duration::from_millis(20),
        stop_rx,
        move || {
            m.cleanup_logs(|_: &TopicPartition| hw, kastle::clock::now_ms());
        },
    ));
    common::wait_until(
        std::time::Duration::from_secs(10),
        "the retention task to delete segments",
        || {
            let start = lock(&log).log_start_offset();
            async move { start >= hw }
        },
    )
    .await;
    assert_eq!(
        lock(&log).segment_base_offsets()[0],
        hw,
        "nothing at or past the HW's segment goes"
    );
    stop_tx.send_replace(true);
    task.await.expect("task");

    let hws = std::collections::BTreeMap::from([(tp(0), hw)]);
    manager.checkpoint_high_watermarks(&hws);
    let text = std::fs::read_to_string(dirs[0].join("replication-offset-checkpoint")).expect("hw checkpoint");
    assert_eq!(text, format!("0\n1\norders 0 {hw}\n"));
}
