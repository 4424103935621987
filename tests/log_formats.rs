//! Log behaviours an operator or a client can see: batches from an independent encoder are
//! stored and come back decodable with their new offsets; LogAppendTime, timestamp lookup,
//! time-based roll, the flush policy, the leader-epoch cache and its checkpoint, follower
//! appends, and `kastle dump-log` on real segment files.

use std::path::Path;
use std::process::Command;

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::records::{
    Compression, Record as KpRecord, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType as KpTs,
};
use kastle::log::config::{LogConfig, TimestampType};
use kastle::log::failure::LogDirFailureChannel;
use kastle::log::file::Faults;
use kastle::log::log::{Log, LogContext, LogError};
use kastle::protocol::record_batch::{validate_batches, BatchHeader};
use kastle::protocol::test_support::build_batch;
use kastle::types::TopicPartition;

fn open(dir: &Path, config: LogConfig) -> Log {
    let ctx = LogContext {
        faults: Faults::default(),
        failures: LogDirFailureChannel::new(),
    };
    let tp = TopicPartition {
        topic: "t".into(),
        partition: 0,
    };
    Log::open(&dir.join("t-0"), tp, config, &ctx, 0, None, true, 0)
        .expect("open")
        .0
}

/// `(offset, timestamp)` of a ListOffsets lookup.
fn found(log: &Log, timestamp: i64) -> Option<(i64, i64)> {
    log.fetch_offset_by_timestamp(timestamp)
        .expect("lookup")
        .map(|f| (f.offset, f.timestamp))
}

fn batch(n: usize, timestamp: i64) -> Vec<u8> {
    let records: Vec<kastle::protocol::test_support::KeyValue> = (0..n).map(|_| (None, Some(&b"v"[..]))).collect();
    build_batch(0, -1, &records, timestamp)
}

fn client_batch(compression: Compression, producer_id: i64) -> Vec<u8> {
    let records: Vec<KpRecord> = (0..4)
        .map(|i| KpRecord {
            transactional: false,
            control: false,
            partition_leader_epoch: -1,
            // An idempotent producer (the default since Kafka 3.0): one batch for all four.
            producer_id,
            producer_epoch: 0,
            timestamp_type: KpTs::Creation,
            offset: i,
            sequence: i as i32,
            timestamp: 1_700_000_000_000 + i,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(format!("value number {i}"))),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .expect("encode");
    buf.to_vec()
}

#[test]
fn batches_from_an_independent_encoder_are_stored_and_decode_with_their_new_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), LogConfig::default());
    log.append_as_leader(&batch(3, 1), 0, 0).expect("offsets 0..=2");
    // One producer per batch: the same producer's sequences 0..=3 again would be a retry,
    // answered with the first batch's offsets and not stored.
    for (producer_id, compression) in [(42, Compression::None), (43, Compression::Gzip)] {
        let b = client_batch(compression, producer_id);
        let sent = b.clone();
        let info = log.append_as_leader(&b, 7, 0).expect("client batch accepted");
        let stored = log
            .read(info.first_offset, 1 << 20, log.log_end_offset(), true)
            .expect("read");
        assert_eq!(&stored[12..16], &7i32.to_be_bytes(), "leader epoch stamped");
        assert_eq!(&stored[16..], &sent[16..], "everything from magic on is stored as sent");
        let decoded = RecordBatchDecoder::decode(&mut stored.clone())
            .expect("decodes")
            .records;
        let offsets: Vec<i64> = decoded.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, (info.first_offset..=info.last_offset).collect::<Vec<_>>());
        assert_eq!(decoded[2].value.as_deref(), Some(&b"value number 2"[..]));
        assert_eq!(decoded[0].partition_leader_epoch, 7);
    }
}

#[test]
fn log_append_time_stamps_the_broker_clock_and_keeps_the_crc_valid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let info = log.append_as_leader(&batch(2, 5), 0, 424_242).expect("append");
    assert_eq!(info.log_append_time, 424_242);
    let stored = log.read(0, 1 << 20, 2, true).expect("read");
    let headers = validate_batches(&stored, 1 << 20).expect("CRC still valid");
    assert_eq!(headers[0].max_timestamp, 424_242);
    assert_eq!(
        headers[0].timestamp_type(),
        kastle::protocol::record_batch::TimestampType::LogAppendTime
    );
}

#[test]
fn offsets_are_found_by_timestamp_like_list_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(
        dir.path(),
        LogConfig {
            segment_bytes: 200,
            ..LogConfig::default()
        },
    );
    for ts in [1_000, 2_000, 3_000, 2_500] {
        log.append_as_leader(&batch(2, ts), 0, 0).expect("append");
    }
    assert!(log.num_segments() > 1, "lookups cross segments");
    assert_eq!(found(&log, 1_500), Some((2, 2_000)));
    assert_eq!(found(&log, 2_999), Some((4, 3_000)));
    assert_eq!(found(&log, 9_999), None);
    assert_eq!(found(&log, -2), Some((0, -1)));
    assert_eq!(found(&log, -1), Some((8, -1)));
    assert_eq!(found(&log, -3), Some((4, 3_000)));
}

/// Kafka's `FileRecords.searchForTimestamp` looks inside the batch: records at 10, 20, 99, 30
/// answer 20 with the second record and MAX_TIMESTAMP with the third, compressed or not.
#[test]
fn a_timestamp_inside_a_batch_finds_its_record_not_the_batch_start() {
    for compression in [
        Compression::None,
        Compression::Gzip,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut log = open(dir.path(), LogConfig::default());
        let records: Vec<KpRecord> = [10, 20, 99, 30]
            .iter()
            .enumerate()
            .map(|(i, ts)| KpRecord {
                transactional: false,
                control: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: KpTs::Creation,
                offset: i as i64,
                sequence: i as i32 - 1, // one batch (the crate splits on offset - sequence)
                timestamp: *ts,
                key: None,
                value: Some(Bytes::from_static(b"v")),
                headers: IndexMap::new(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .expect("encode");
        log.append_as_leader(&buf, 3, 0).expect("append");
        assert_eq!(found(&log, 20), Some((1, 20)), "{compression:?}");
        assert_eq!(found(&log, 31), Some((2, 99)), "{compression:?}");
        assert_eq!(found(&log, 100), None, "{compression:?}");
        let max = log.fetch_offset_by_timestamp(-3).expect("max").expect("found");
        assert_eq!(
            (max.offset, max.timestamp, max.leader_epoch),
            (2, 99, Some(3)),
            "{compression:?}"
        );
    }
}

#[test]
fn a_segment_rolls_once_its_first_batch_is_older_than_segment_ms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(
        dir.path(),
        LogConfig {
            segment_ms: 1_000,
            ..LogConfig::default()
        },
    );
    log.append_as_leader(&batch(1, 10_000), 0, 0).expect("append");
    log.append_as_leader(&batch(1, 10_900), 0, 0).expect("append");
    assert_eq!(log.num_segments(), 1);
    log.append_as_leader(&batch(1, 11_001), 0, 0).expect("append");
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    assert!(dir.path().join("t-0/00000000000000000002.log").exists());
}

#[test]
fn a_segment_rolls_when_its_index_is_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Room for three offset-index and two time-index entries, an entry per batch.
    let mut log = open(
        dir.path(),
        LogConfig {
            max_index_size: 24,
            index_interval_bytes: 1,
            ..LogConfig::default()
        },
    );
    for _ in 0..5 {
        log.append_as_leader(&batch(1, 1), 0, 0).expect("append");
    }
    assert!(log.num_segments() >= 2, "{:?}", log.segment_base_offsets());
    assert_eq!(log.log_end_offset(), 5);
    assert_eq!(found(&log, -2), Some((0, -1)));
}

#[test]
fn time_based_flushing_flushes_old_unflushed_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(
        dir.path(),
        LogConfig {
            flush_interval_ms: 1_000,
            ..LogConfig::default()
        },
    );
    log.append_as_leader(&batch(2, 1), 0, 500).expect("append");
    assert!(!log.maybe_flush_by_time(900).expect("too early"));
    assert_eq!(log.recovery_point(), 0);
    assert!(log.maybe_flush_by_time(1_000).expect("due"));
    assert_eq!(log.recovery_point(), 2);
}

#[test]
fn the_flush_policy_moves_the_recovery_point() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut lazy = open(dir.path(), LogConfig::default());
    lazy.append_as_leader(&batch(3, 1), 0, 0).expect("append");
    assert_eq!(lazy.recovery_point(), 0, "by default flushing is left to the OS");
    let dir2 = tempfile::tempdir().expect("tempdir");
    let mut eager = open(
        dir2.path(),
        LogConfig {
            flush_interval_messages: 1,
            ..LogConfig::default()
        },
    );
    eager.append_as_leader(&batch(3, 1), 0, 0).expect("append");
    assert_eq!(eager.recovery_point(), 3, "flush.messages=1 flushes every append");
}

#[test]
fn the_leader_epoch_cache_follows_appends_and_truncation_and_is_checkpointed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), LogConfig::default());
    for epoch in [0, 0, 2, 5] {
        log.append_as_leader(&batch(2, 1), epoch, 0).expect("append");
    }
    let checkpoint = std::fs::read_to_string(dir.path().join("t-0/leader-epoch-checkpoint")).expect("checkpoint");
    assert_eq!(checkpoint, "0\n3\n0 0\n2 4\n5 6\n");
    assert_eq!(
        log.end_offset_for_epoch(1),
        (0, 4),
        "largest epoch ≤ 1 is 0, which ends where 2 starts"
    );
    assert_eq!(log.end_offset_for_epoch(5), (5, 8));
    log.truncate_to(6).expect("truncate");
    assert_eq!(
        log.end_offset_for_epoch(2),
        (2, 6),
        "epoch 2 is the latest again and ends at the LEO"
    );
    assert_eq!(
        log.end_offset_for_epoch(5),
        (-1, -1),
        "epoch 5 is gone with its records (Kafka: UNDEFINED)"
    );
    let checkpoint = std::fs::read_to_string(dir.path().join("t-0/leader-epoch-checkpoint")).expect("checkpoint");
    assert_eq!(checkpoint, "0\n2\n0 0\n2 4\n");
}

#[test]
fn follower_appends_keep_the_leaders_offsets_and_refuse_gaps_backwards() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), LogConfig::default());
    let mut from_leader = batch(3, 1);
    kastle::protocol::record_batch::set_base_offset(&mut from_leader, 0);
    kastle::protocol::record_batch::set_partition_leader_epoch(&mut from_leader, 4);
    log.append_as_follower(&from_leader, 0).expect("append");
    assert_eq!(
        (log.log_end_offset(), log.leader_epoch_cache().latest_epoch()),
        (3, Some(4))
    );
    let err = log.append_as_follower(&from_leader, 0).expect_err("offset 0 again");
    assert!(
        matches!(
            err,
            LogError::UnexpectedAppendOffset {
                first_offset: 0,
                log_end: 3,
                ..
            }
        ),
        "{err}"
    );
    log.truncate_fully_and_start_at(100, 0).expect("restart far ahead");
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (100, 100));
    assert!(log.leader_epoch_cache().latest_epoch().is_none());
}

fn dump(files: &[&Path], data: bool) -> (i32, String) {
    let list = files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kastle"));
    cmd.args(["dump-log", "--files", &list]);
    if data {
        cmd.arg("--print-data-log");
    }
    let out = cmd.output().expect("run dump-log");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn dump_log_prints_batches_records_and_index_entries_and_flags_corruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(
        dir.path(),
        LogConfig {
            index_interval_bytes: 1,
            ..LogConfig::default()
        },
    );
    for i in 0..3 {
        log.append_as_leader(&batch(2, 1_000 + i), 3, 0).expect("append");
    }
    drop(log);
    let seg = dir.path().join("t-0/00000000000000000000.log");
    let index = dir.path().join("t-0/00000000000000000000.index");
    let (code, out) = dump(&[&seg, &index], true);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("baseOffset: 2 lastOffset: 3 count: 2"), "{out}");
    assert!(out.contains("partitionLeaderEpoch: 3"), "{out}");
    assert!(out.contains("| offset: 5 CreateTime: 1002"), "{out}");
    assert!(out.contains("offset: 3 position: "), "{out}");

    let mut data = std::fs::read(&seg).expect("read");
    let last = data.len() - 5;
    data[last] ^= 0xFF;
    std::fs::write(&seg, &data).expect("corrupt");
    let (code, out) = dump(&[&seg], false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Found invalid batch at position"), "{out}");
    let header = BatchHeader::parse(&data).expect("first batch intact");
    assert_eq!(header.record_count, 2);
}

/// The leader writes each batch as `[rewritten header copy][records from the request]` in one
/// vectored write; the file must hold exactly what rewriting the request in place gave (offsets,
/// leader epoch, and for LogAppendTime the attributes, maxTimestamp and CRC), and the request
/// buffer must be left as it was.
#[test]
fn a_leader_append_writes_the_bytes_the_in_place_rewrite_gave() {
    use kastle::protocol::record_batch::{set_base_offset, set_log_append_time, set_partition_leader_epoch};
    for timestamp_type in [TimestampType::CreateTime, TimestampType::LogAppendTime] {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = LogConfig {
            timestamp_type,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), config);
        let mut expected = Vec::new();
        let mut next = 0i64;
        for (round, now) in [(0, 9_000i64), (1, 9_500)] {
            // Several batches back to back in one request, one of them compressed.
            let mut request = batch(3, 1_000 + round);
            request.extend(batch(1, 2_000));
            request.extend(client_batch(Compression::Gzip, -1));
            let sent = request.clone();
            let info = log.append_as_leader(&request, 5, now).expect("append");
            assert_eq!(request, sent, "the request buffer is not modified");
            assert_eq!(info.first_offset, next);
            let mut position = 0;
            let mut in_place = sent.clone();
            for header in validate_batches(&sent, 1 << 20).expect("valid") {
                let b = &mut in_place[position..position + header.size_in_bytes()];
                set_base_offset(b, next);
                set_partition_leader_epoch(b, 5);
                if timestamp_type == TimestampType::LogAppendTime {
                    set_log_append_time(b, now);
                }
                next += i64::from(header.last_offset_delta) + 1;
                position += header.size_in_bytes();
            }
            expected.extend(in_place);
        }
        // The client batch's timestamps roll the segment by time: read every segment in order.
        let mut segments: Vec<_> = std::fs::read_dir(dir.path().join("t-0"))
            .expect("dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        segments.sort();
        let file: Vec<u8> = segments
            .iter()
            .flat_map(|p| std::fs::read(p).expect("segment"))
            .collect();
        assert_eq!(file, expected, "{timestamp_type:?}");
        validate_batches(&file, 1 << 20).expect("every CRC valid");
        let read = log.read(0, 1 << 20, next, true).expect("read");
        assert_eq!(&read[..], &expected[..read.len()], "a fetch returns the stored bytes");
    }
}
