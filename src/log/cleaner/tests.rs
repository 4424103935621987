//! The cleaner end to end on a real LogManager in a temp dir (no threads: passes are driven with
//! an explicit `now`): latest value per key survives with its offset, tombstones live until
//! their delete horizon, the checkpoint file is Kafka's format, non-compacted logs and the
//! active segment are untouched, keyless produce is refused, a reload after a clean reads
//! the same data, a producer's last batch survives (empty) so its state can be rebuilt, and
//! batches compressed with each codec are compacted like uncompressed ones and keep their codec.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::{CleanerConfig, LogCleaner, CLEANER_OFFSET_CHECKPOINT};
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log_manager::{lock, LogManager, LogManagerConfig};
use crate::protocol::error_codes as ec;
use crate::protocol::record_batch::{BatchHeader, BatchScanner, Compression, RecordIter, RECORDS_OFFSET};
use crate::protocol::test_support::{build_batch, BatchBuilder, TestRecord};
use crate::types::TopicPartition;

fn tp(topic: &str) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition: 0,
    }
}

fn manager(dir: &Path) -> Arc<LogManager> {
    open_manager(dir, true)
}

/// `clean: false` opens the dir as after a crash (recovery, producer state replayed from the log).
fn open_manager(dir: &Path, clean: bool) -> Arc<LogManager> {
    let cfg = LogManagerConfig {
        dirs: vec![dir.to_path_buf()],
        clean_dirs: if clean { vec![dir.to_path_buf()] } else { vec![] },
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

fn compacted(m: &LogManager, topic: &str, delete_retention_ms: &str) {
    let overrides: BTreeMap<String, String> = [
        ("cleanup.policy", "compact"),
        ("segment.bytes", "1024"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("delete.retention.ms", delete_retention_ms),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    m.update_topic_config(topic, overrides);
}

fn cleaner(m: &Arc<LogManager>) -> LogCleaner {
    let config = CleanerConfig {
        enable: true,
        threads: 1,
        backoff: std::time::Duration::from_millis(10),
        dedupe_buffer_size: 1 << 20,
        io_buffer_size: 1 << 16,
    };
    // Every appended offset counts as replicated.
    LogCleaner::new(m.clone(), config, Arc::new(|_| i64::MAX))
}

/// Appends `n` updates cycling over `keys` keys (value = the update number), then one tombstone
/// for key 0, then filler so the tombstone is below the active segment.
fn fill(m: &LogManager, topic: &str, n: usize, keys: usize) {
    let log = m.get_or_create_log(&tp(topic), 0).expect("log");
    let mut log = lock(&log);
    for i in 0..n {
        let key = format!("k{}", i % keys);
        let value = format!("v{i:04}");
        let batch = build_batch(
            0,
            -1,
            &[(Some(key.as_bytes()), Some(value.as_bytes()))],
            1_000 + i as i64,
        );
        log.append_as_leader(&batch, 0, 0).expect("append");
    }
    let tombstone = build_batch(0, -1, &[(Some(&b"k0"[..]), None)], 5_000);
    log.append_as_leader(&tombstone, 0, 0).expect("tombstone");
    for i in 0..40 {
        let batch = build_batch(0, -1, &[(Some(&b"filler"[..]), Some(format!("{i}").as_bytes()))], 6_000);
        log.append_as_leader(&batch, 0, 0).expect("filler");
    }
}

/// (offset, key, value) of every record in the log, in order.
fn contents(m: &LogManager, topic: &str) -> Vec<(i64, String, Option<String>)> {
    let log = m.get_log(&tp(topic)).expect("log");
    let log = lock(&log);
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log.read(offset, usize::MAX, i64::MAX, true).expect("read");
        assert!(!data.is_empty(), "a read at {offset} returns data");
        for item in BatchScanner::new(&data) {
            let (pos, h) = item.expect("valid batch");
            let batch = &data[pos..pos + h.size_in_bytes()];
            for r in RecordIter::new(&batch[RECORDS_OFFSET..], h.record_count) {
                let r = r.expect("record");
                let at = h.base_offset + i64::from(r.offset_delta);
                if at >= offset {
                    out.push((
                        at,
                        String::from_utf8_lossy(r.key.unwrap_or_default()).into_owned(),
                        r.value.map(|v| String::from_utf8_lossy(v).into_owned()),
                    ));
                }
            }
            offset = offset.max(h.next_offset());
        }
    }
    out
}

/// The final key → value state a consumer replaying the log would build.
fn state(records: &[(i64, String, Option<String>)]) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    for (_, k, v) in records {
        match v {
            Some(v) => s.insert(k.clone(), v.clone()),
            None => s.remove(k),
        };
    }
    s
}

#[test]
fn cleaning_keeps_the_latest_value_per_key_at_its_offset_and_tombstones_until_their_horizon() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    compacted(&m, "c", "1000");
    fill(&m, "c", 300, 5);
    let before = contents(&m, "c");
    let cleaner = cleaner(&m);
    let stats = cleaner.clean_filthiest(0, 10_000).expect("a cleaning");
    assert!(stats.records_removed > 250, "{stats:?}");
    let after = contents(&m, "c");
    assert_eq!(state(&after), state(&before), "same final state");
    // Offsets are kept: each surviving record has the offset it had before.
    for r in &after {
        assert!(before.contains(r), "{r:?} was not in the log before");
    }
    // Below the active segment only one record per key is left; the tombstone is still there.
    let active_base = *lock(&m.get_log(&tp("c")).expect("log"))
        .segment_base_offsets()
        .last()
        .expect("active");
    let cleaned: Vec<_> = after.iter().filter(|r| r.0 < active_base).collect();
    let mut keys: Vec<&String> = cleaned.iter().map(|r| &r.1).collect();
    keys.sort();
    let distinct = keys.len();
    keys.dedup();
    assert_eq!(
        keys.len(),
        distinct,
        "one record per key below the active segment: {cleaned:?}"
    );
    assert!(
        after.iter().any(|r| r.1 == "k0" && r.2.is_none()),
        "tombstone kept before its horizon"
    );
    // Kafka's checkpoint format: version 0, count, "topic partition offset".
    let text = std::fs::read_to_string(dir.path().join(CLEANER_OFFSET_CHECKPOINT)).expect("checkpoint");
    assert_eq!(text, format!("0\n1\nc 0 {}\n", stats.first_dirty));
    // Nothing new is dirty and no horizon passed: nothing to do.
    assert!(cleaner.clean_filthiest(0, 10_500).is_none());
    // After the delete horizon (10 s + 1 s) the cleaner comes back for the tombstone.
    cleaner.clean_filthiest(0, 11_000).expect("the tombstone's cleaning");
    let last = contents(&m, "c");
    assert!(!last.iter().any(|r| r.1 == "k0"), "tombstone gone: {last:?}");
    assert_eq!(state(&last), state(&before));
    // A reload (index rebuild, segments as swapped) reads the same records.
    drop(cleaner);
    drop(m);
    let m = manager(dir.path());
    compacted(&m, "c", "1000");
    assert_eq!(contents(&m, "c"), last);
}

#[test]
fn delete_policy_logs_are_not_cleaned_and_keyless_records_are_refused_when_compacted() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    let overrides: BTreeMap<String, String> = [("segment.bytes".to_string(), "1024".to_string())].into();
    m.update_topic_config("d", overrides);
    fill(&m, "d", 100, 2);
    let before = contents(&m, "d");
    assert!(cleaner(&m).clean_filthiest(0, 10_000).is_none());
    assert_eq!(contents(&m, "d"), before);

    compacted(&m, "c", "1000");
    let log = m.get_or_create_log(&tp("c"), 0).expect("log");
    let keyless = build_batch(0, -1, &[(None, Some(&b"v"[..]))], 1);
    let err = lock(&log).append_as_leader(&keyless, 0, 0).expect_err("keyless");
    assert_eq!(err.error_code(), ec::INVALID_RECORD, "INVALID_RECORD");
}

#[test]
fn compact_only_logs_skip_time_retention_and_compact_delete_logs_do_both() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    for (topic, policy) in [("c", "compact"), ("cd", "compact,delete")] {
        let overrides: BTreeMap<String, String> = [
            ("cleanup.policy", policy),
            ("segment.bytes", "1024"),
            ("retention.ms", "1000"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        m.update_topic_config(topic, overrides);
        fill(&m, topic, 100, 3);
    }
    let deleted = m.cleanup_logs(|_| i64::MAX, 1_000_000);
    let segments = |t: &str| lock(&m.get_log(&tp(t)).expect("log")).num_segments();
    assert!(deleted > 0);
    assert!(segments("c") > 1, "compact only: retention.ms does not apply");
    assert_eq!(segments("cd"), 1, "compact,delete: old segments deleted by time");
}

#[test]
fn an_io_error_while_cleaning_takes_the_log_dir_offline() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    compacted(&m, "c", "1000");
    fill(&m, "c", 300, 5);
    // A directory where the cleaned file must go: creating it fails like a broken disk would.
    let first = lock(&m.get_log(&tp("c")).expect("log")).segment_base_offsets()[0];
    let blocker = dir
        .path()
        .join("c-0")
        .join(crate::log::segment::file_name(first, super::swap::CLEANED_SUFFIX));
    std::fs::create_dir(&blocker).expect("blocker");
    assert!(cleaner(&m).clean_filthiest(0, 10_000).is_none());
    assert!(m.failures().is_offline(dir.path()), "the dir went offline");
}

#[test]
fn a_follower_truncation_below_the_checkpoint_pulls_it_back() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    compacted(&m, "c", "1000");
    fill(&m, "c", 300, 5);
    let cleaner = cleaner(&m);
    let stats = cleaner.clean_filthiest(0, 10_000).expect("cleaned");
    assert!(stats.first_dirty > 10);
    lock(&m.get_log(&tp("c")).expect("log"))
        .truncate_to(5)
        .expect("truncate");
    // The next pass measures from offset 5 (nothing is cleanable there yet: one segment).
    let _ = cleaner.clean_filthiest(0, 10_000);
    assert!(
        cleaner.checkpoint(&tp("c")).is_none_or(|c| c <= 5),
        "{:?}",
        cleaner.checkpoint(&tp("c"))
    );
}

#[test]
fn a_new_follower_copies_a_compacted_log_with_its_offset_gaps() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    compacted(&m, "c", "3600000");
    {
        // Ten records per batch over three keys: cleaning leaves batches with gaps inside.
        let log = m.get_or_create_log(&tp("c"), 0).expect("log");
        let mut log = lock(&log);
        for i in 0..60 {
            let values: Vec<(String, String)> = (0..10)
                .map(|j| (format!("k{}", (i + j) % 3), format!("v{i}-{j}")))
                .collect();
            let records: Vec<crate::protocol::test_support::KeyValue<'_>> = values
                .iter()
                .map(|(k, v)| (Some(k.as_bytes()), Some(v.as_bytes())))
                .collect();
            let batch = build_batch(0, -1, &records, 1_000);
            log.append_as_leader(&batch, 0, 0).expect("append");
        }
    }
    let stats = cleaner(&m).clean_filthiest(0, 10_000).expect("cleaned");
    assert!(stats.records_removed > 0);
    let leader = contents(&m, "c");
    let offsets: Vec<i64> = leader.iter().map(|r| r.0).collect();
    // The surviving batch keeps its base offset and loses its first records: fewer records than
    // its offset range, which produce-time validation would refuse.
    assert!(offsets[0] > 0 && offsets.len() < 600, "{offsets:?} {stats:?}");
    // The follower fetches from 0 as a replica would and appends what it gets, gaps and all.
    replicate(&m, "c", "f");
    assert_eq!(contents(&m, "f"), leader);
}

/// Copies `from` into a new compacted log `to` as a new follower would: fetch from its log end,
/// append as follower, until it has everything.
fn replicate(m: &LogManager, from: &str, to: &str) {
    compacted(m, to, "3600000");
    let source = m.get_log(&tp(from)).expect("log");
    let follower = m.get_or_create_log(&tp(to), 0).expect("follower");
    loop {
        let leo = lock(&follower).log_end_offset();
        let data = {
            let s = lock(&source);
            if leo >= s.log_end_offset() {
                break;
            }
            s.read(leo, 1 << 20, i64::MAX, true).expect("fetch")
        };
        lock(&follower)
            .append_as_follower(&data, 0)
            .expect("a compacted batch is accepted");
    }
}

/// Every batch header of the log, in order (empty batches included).
fn headers(m: &LogManager, topic: &str) -> Vec<BatchHeader> {
    let log = m.get_log(&tp(topic)).expect("log");
    let log = lock(&log);
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log.read(offset, usize::MAX, i64::MAX, true).expect("read");
        for item in BatchScanner::new(&data) {
            let (_, h) = item.expect("valid batch");
            out.push(h);
            offset = offset.max(h.next_offset());
        }
    }
    out
}

const PID: i64 = 7;

/// Producer PID's batch of `keys` at sequence `seq` (epoch 0).
fn idempotent(seq: i32, keys: &[&'static [u8]]) -> Vec<u8> {
    let mut b = BatchBuilder::new(0).producer(PID, 0, seq).timestamp(2_000);
    for k in keys {
        b = b.record(Some(k), Some(&b"idem"[..]));
    }
    b.build()
}

/// (last sequence, last data offset) of PID in `topic`'s producer state.
fn producer(m: &LogManager, topic: &str) -> Option<(i32, i64)> {
    let log = m.get_log(&tp(topic)).expect("log");
    let log = lock(&log);
    let entry = log.producer_state().last_entry(PID)?;
    Some((entry.last_seq(), entry.last_data_offset()))
}

#[test]
fn a_producers_last_batch_stays_empty_so_its_state_survives_compaction_and_a_crash() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    compacted(&m, "p", "3600000");
    {
        let log = m.get_or_create_log(&tp("p"), 0).expect("log");
        let mut log = lock(&log);
        for seq in [0, 2, 4] {
            let info = log
                .append_as_leader(&idempotent(seq, &[b"a", b"b"]), 0, 0)
                .expect("idempotent append");
            assert_eq!(info.first_offset, i64::from(seq));
        }
        // A plain producer overwrites both keys, then filler rolls segments past them.
        let plain = build_batch(
            0,
            -1,
            &[(Some(&b"a"[..]), Some(&b"x"[..])), (Some(&b"b"[..]), Some(&b"y"[..]))],
            3_000,
        );
        log.append_as_leader(&plain, 0, 0).expect("plain");
        for i in 0..40 {
            let batch = build_batch(0, -1, &[(Some(&b"filler"[..]), Some(format!("{i}").as_bytes()))], 6_000);
            log.append_as_leader(&batch, 0, 0).expect("filler");
        }
    }
    assert_eq!(producer(&m, "p"), Some((5, 5)));
    let stats = cleaner(&m).clean_filthiest(0, 10_000).expect("cleaned");
    assert!(stats.records_removed >= 6, "{stats:?}");
    // Every record of PID is gone; its last batch (offsets 4..=5, sequences 4..=5) stays empty,
    // its earlier batches go.
    assert!(!contents(&m, "p").iter().any(|r| r.0 < 6), "{:?}", contents(&m, "p"));
    let kept: Vec<_> = headers(&m, "p").into_iter().filter(|h| h.producer_id == PID).collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        (kept[0].base_offset, kept[0].last_offset(), kept[0].record_count),
        (4, 5, 0)
    );
    assert_eq!((kept[0].base_sequence, kept[0].last_sequence()), (4, 5));
    // A new follower copying the compacted log builds the same producer state.
    replicate(&m, "p", "pf");
    assert_eq!(producer(&m, "pf"), Some((5, 5)));

    // dump-log shows it as Kafka's DumpLogSegments would, and finds the file valid.
    let first = dir.path().join("p-0").join(crate::log::segment::file_name(0, ".log"));
    let mut out = Vec::new();
    let options = crate::log::dump::DumpOptions { print_data_log: true };
    let summary = crate::log::dump::dump_file(&first, &options, &mut out).expect("dump");
    let text = String::from_utf8_lossy(&out);
    assert!(summary.invalid.is_none(), "{text}");
    assert!(
        text.contains("baseOffset: 4 lastOffset: 5 count: 0 baseSequence: 4 lastSequence: 5 producerId: 7"),
        "{text}"
    );

    // A crash with no producer snapshot: the state is rebuilt from the log alone.
    drop(m);
    for entry in std::fs::read_dir(dir.path().join("p-0")).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "snapshot") {
            std::fs::remove_file(&path).expect("remove snapshot");
        }
    }
    let m = open_manager(dir.path(), false);
    compacted(&m, "p", "3600000");
    assert_eq!(producer(&m, "p"), Some((5, 5)), "rebuilt from the empty batch");
    let log = m.get_log(&tp("p")).expect("log");
    let mut log = lock(&log);
    let leo = log.log_end_offset();
    // The retried last batch is a duplicate: its original offsets, nothing appended.
    let retry = log
        .append_as_leader(&idempotent(4, &[b"a", b"b"]), 0, 0)
        .expect("duplicate");
    assert_eq!((retry.first_offset, retry.last_offset), (4, 5));
    assert_eq!(log.log_end_offset(), leo);
    // The sequence goes on from 6; a gap is still refused (OUT_OF_ORDER_SEQUENCE_NUMBER).
    let gap = log.append_as_leader(&idempotent(7, &[b"a"]), 0, 0).expect_err("gap");
    assert_eq!(gap.error_code(), ec::OUT_OF_ORDER_SEQUENCE_NUMBER);
    let next = log.append_as_leader(&idempotent(6, &[b"a"]), 0, 0).expect("next");
    assert_eq!(next.first_offset, leo);
}

#[test]
fn a_restart_after_a_crash_mid_swap_completes_it_and_drops_cleaned_leftovers() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    compacted(&m, "c", "1000");
    fill(&m, "c", 300, 5);
    let bases = lock(&m.get_log(&tp("c")).expect("log")).segment_base_offsets();
    let before = contents(&m, "c");
    drop(m);
    // The crash: segments 0 and 1 were cleaned into a swap file holding only segment 1's last
    // batch, and a second group's `.cleaned` file was still being written.
    let part = dir.path().join("c-0");
    let name = |base: i64, suffix: &str| part.join(crate::log::segment::file_name(base, suffix));
    let second = std::fs::read(name(bases[1], ".log")).expect("segment 1");
    let (pos, last) = BatchScanner::new(&second)
        .map_while(Result::ok)
        .last()
        .expect("a batch");
    std::fs::write(
        name(bases[0], super::swap::SWAP_SUFFIX),
        &second[pos..pos + last.size_in_bytes()],
    )
    .expect("swap");
    std::fs::write(name(bases[2], super::swap::CLEANED_SUFFIX), b"partial").expect("cleaned");
    let m = manager(dir.path());
    compacted(&m, "c", "1000");
    let after = contents(&m, "c");
    let expected: Vec<_> = before
        .iter()
        .filter(|r| r.0 >= last.base_offset) // the swap's batch, then segment 2 on
        .cloned()
        .collect();
    assert_eq!(after, expected);
    assert!(!name(bases[0], super::swap::SWAP_SUFFIX).exists());
    assert!(!name(bases[2], super::swap::CLEANED_SUFFIX).exists());
    assert!(!name(bases[1], ".log").exists(), "the swapped-out segment is gone");
}

const CODECS: [Compression; 4] = [
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// Appends 30 batches compressed with `codec`, ten records each over four keys (record n: key
/// `k{n % 4}`, value `v{n}`, timestamp 1_000 + n), the very last record a tombstone for k3, then
/// uncompressed filler so that all of them lie below the active segment.
fn fill_compressed(m: &LogManager, topic: &str, codec: Compression) {
    let log = m.get_or_create_log(&tp(topic), 0).expect("log");
    let mut log = lock(&log);
    for i in 0..30i64 {
        let keys: Vec<String> = (0..10).map(|j| format!("k{}", (i * 10 + j) % 4)).collect();
        let values: Vec<String> = (0..10).map(|j| format!("v{}", i * 10 + j)).collect();
        let mut batch = BatchBuilder::new(0).timestamp(1_000 + i * 10).compression(codec);
        for j in 0..10 {
            batch = batch.record_with(TestRecord {
                key: Some(keys[j].as_bytes()),
                value: (i * 10 + j as i64 != 299).then(|| values[j].as_bytes()),
                timestamp_delta: j as i64,
                ..TestRecord::default()
            });
        }
        let batch = batch.build();
        assert_eq!(BatchHeader::parse(&batch).expect("header").compression(), codec);
        log.append_as_leader(&batch, 0, 0).expect("append");
    }
    for i in 0..40 {
        let batch = build_batch(0, -1, &[(Some(&b"filler"[..]), Some(format!("{i}").as_bytes()))], 6_000);
        log.append_as_leader(&batch, 0, 0).expect("filler");
    }
}

/// Every record of the log as kafka-protocol (an independent decoder that checks the CRC and
/// inflates every codec) reads it from fetches: (offset, key, value, codec of its batch).
fn decoded(m: &LogManager, topic: &str) -> Vec<(i64, String, Option<String>, Compression)> {
    let log = m.get_log(&tp(topic)).expect("log");
    let log = lock(&log);
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log.read(offset, usize::MAX, i64::MAX, true).expect("read");
        assert!(!data.is_empty(), "a read at {offset} returns data");
        for item in BatchScanner::new(&data) {
            let (pos, h) = item.expect("valid batch");
            let mut batch = bytes::Bytes::copy_from_slice(&data[pos..pos + h.size_in_bytes()]);
            let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut batch).expect("kafka-protocol decodes");
            for r in set.records.into_iter().filter(|r| r.offset >= offset) {
                let text = |b: bytes::Bytes| String::from_utf8_lossy(&b).into_owned();
                out.push((
                    r.offset,
                    r.key.map(text).unwrap_or_default(),
                    r.value.map(text),
                    h.compression(),
                ));
            }
            offset = offset.max(h.next_offset());
        }
    }
    out
}

#[test]
fn compressed_batches_are_compacted_and_keep_their_codec_offsets_and_indexes() {
    for codec in CODECS {
        let dir = tempfile::tempdir().expect("dir");
        let m = manager(dir.path());
        let topic = format!("z{codec}");
        compacted(&m, &topic, "1000");
        fill_compressed(&m, &topic, codec);
        let before = decoded(&m, &topic);
        let as_state = |records: &[(i64, String, Option<String>, Compression)]| {
            let plain: Vec<_> = records.iter().map(|(o, k, v, _)| (*o, k.clone(), v.clone())).collect();
            state(&plain)
        };
        let cleaner = cleaner(&m);
        let stats = cleaner.clean_filthiest(0, 10_000).expect("a cleaning");
        // 300 compressed records over four keys (one of them a kept tombstone), 40 filler.
        assert!(stats.records_removed >= 290, "{codec}: {stats:?}");
        let after = decoded(&m, &topic);
        assert_eq!(as_state(&after), as_state(&before), "{codec}: same final state");
        for r in &after {
            assert!(
                before.contains(r),
                "{codec}: {r:?} was not in the log before (offset, codec)"
            );
        }
        // Only the latest record per key is left of the compressed part, still compressed.
        let survivors: Vec<_> = after.iter().filter(|r| r.0 < 300).collect();
        let expected: Vec<(i64, String, Option<String>, Compression)> = [
            (296, "k0", Some("v296")),
            (297, "k1", Some("v297")),
            (298, "k2", Some("v298")),
            (299, "k3", None),
        ]
        .into_iter()
        .map(|(o, k, v)| (o, k.to_string(), v.map(str::to_string), codec))
        .collect();
        assert_eq!(survivors, expected.iter().collect::<Vec<_>>(), "{codec}");
        let hs = headers(&m, &topic);
        let last = hs
            .iter()
            .find(|h| h.base_offset == 290)
            .expect("the last compressed batch");
        // Kafka's filterTo: the base offset, last offset delta and codec stay; the tombstone's
        // batch gets its delete horizon; the max timestamp is the survivors'.
        assert_eq!(
            (
                last.compression(),
                last.last_offset(),
                last.record_count,
                last.max_timestamp
            ),
            (codec, 299, 4, 1_000 + 290 + 9)
        );
        assert_eq!(last.delete_horizon_ms(), Some(11_000), "{codec}");
        assert!(
            !hs.iter().any(|h| h.base_offset < 290),
            "{codec}: earlier batches removed: {hs:?}"
        );
        // Indexes of the swapped segments agree with the log, and time lookups find batches.
        let log_dir = dir.path().join(format!("{topic}-0"));
        for entry in std::fs::read_dir(&log_dir).expect("dir") {
            let path = entry.expect("entry").path();
            if path
                .extension()
                .is_some_and(|e| e == "index" || e == "timeindex" || e == "log")
            {
                let options = crate::log::dump::DumpOptions { print_data_log: true };
                let summary = crate::log::dump::dump_file(&path, &options, &mut Vec::new()).expect("dump");
                assert!(
                    summary.invalid.is_none() && summary.index_mismatches == 0,
                    "{path:?}: {summary:?}"
                );
            }
        }
        let log = m.get_log(&tp(&topic)).expect("log");
        let found = lock(&log).fetch_offset_by_timestamp(1_200).expect("lookup");
        // The first surviving record at or after the time: record n has timestamp 1_000 + n.
        let found = found.map(|f| (f.offset, f.timestamp));
        assert_eq!(found, Some((296, 1_296)), "{codec}");

        // The tombstone goes once its horizon passes; the batch keeps its codec.
        cleaner.clean_filthiest(0, 11_000).expect("the tombstone's cleaning");
        let last = decoded(&m, &topic);
        assert!(!last.iter().any(|r| r.1 == "k3"), "{codec}: tombstone gone: {last:?}");
        assert_eq!(last.iter().filter(|r| r.0 < 300 && r.3 == codec).count(), 3, "{codec}");
        // A reload (indexes rebuilt from the swapped segments) reads the same records.
        drop(cleaner);
        drop(log);
        drop(m);
        let m = manager(dir.path());
        compacted(&m, &topic, "1000");
        assert_eq!(decoded(&m, &topic), last, "{codec}");
    }
}

#[test]
fn a_reconfiguration_restarts_the_threads_with_the_new_settings_and_they_still_clean() {
    let dir = tempfile::tempdir().expect("dir");
    let m = manager(dir.path());
    let cleaner = Arc::new(cleaner(&m));
    cleaner.start();
    assert_eq!(cleaner.thread_count(), 1);
    let new = CleanerConfig {
        threads: 2,
        backoff: std::time::Duration::from_millis(5),
        dedupe_buffer_size: 2 << 20,
        io_buffer_size: 1 << 17,
        ..cleaner.config()
    };
    cleaner.reconfigure(new.clone());
    assert_eq!(cleaner.thread_count(), 2);
    assert_eq!(cleaner.config(), new);
    // The new threads compact a log written after the change.
    compacted(&m, "c", "1000");
    fill(&m, "c", 300, 5);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while cleaner.checkpoint(&tp("c")).is_none() {
        assert!(std::time::Instant::now() < deadline, "the reconfigured cleaner cleans");
        std::thread::park_timeout(std::time::Duration::from_millis(10));
    }
    assert!(contents(&m, "c").len() < 300);
    cleaner.shutdown();
    assert_eq!(cleaner.thread_count(), 0);
    // Shut down for good: a late reconfiguration starts nothing.
    cleaner.reconfigure(CleanerConfig { threads: 3, ..new });
    assert_eq!(cleaner.thread_count(), 0);
}
