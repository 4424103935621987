//! Tests for `dump-log` on temp files built with `test_support`: exact Kafka-style lines,
//! corruption reports, and index checks against the sibling `.log`.

use std::fs;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::*;
use crate::protocol::record_batch::compute_crc;
use crate::protocol::test_support::{build_batch, BatchBuilder, TestRecord};

const TS: i64 = 1_700_000_000_000;

/// Two batches: offsets 0-2 (92 bytes) and 3 (with a header, 74 bytes), leader epoch 5.
fn segment() -> Vec<u8> {
    let mut log = build_batch(
        0,
        5,
        &[(Some(b"abc"), Some(b"hello")), (None, Some(b"x")), (Some(b"k"), None)],
        TS,
    );
    log.extend(
        BatchBuilder::new(3)
            .leader_epoch(5)
            .timestamp(TS + 10)
            .producer(8, 1, 20)
            .record_with(TestRecord {
                key: None,
                value: Some(b"v"),
                headers: vec![(b"h1", Some(b"1"))],
                ..Default::default()
            })
            .build(),
    );
    log
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).expect("write temp file");
    path
}

fn dump(path: &Path, print_data_log: bool) -> (Vec<String>, DumpSummary) {
    let mut out = Vec::new();
    let summary = dump_file(path, &DumpOptions { print_data_log }, &mut out).expect("dump succeeds");
    (
        String::from_utf8_lossy(&out).lines().map(str::to_string).collect(),
        summary,
    )
}

fn batch_line(log: &[u8], at: usize, tail: &str) -> String {
    let crc = BatchHeader::parse(&log[at..]).map(|h| h.crc).unwrap_or_default();
    format!("{tail} crc: {crc} isvalid: true")
}

#[test]
fn a_log_dumps_one_kafka_style_line_per_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = segment();
    let path = write(dir.path(), "00000000000000000000.log", &log);
    let (lines, summary) = dump(&path, false);
    let expected = vec![
        format!("Dumping {}", path.display()),
        "Log starting offset: 0".to_string(),
        batch_line(
            &log,
            0,
            "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 \
            producerEpoch: -1 partitionLeaderEpoch: 5 isTransactional: false isControl: false \
            deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 92 magic: 2 \
            compresscodec: none",
        ),
        batch_line(
            &log,
            92,
            "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 20 lastSequence: 20 producerId: 8 \
            producerEpoch: 1 partitionLeaderEpoch: 5 isTransactional: false isControl: false \
            deleteHorizonMs: OptionalLong.empty position: 92 CreateTime: 1700000000010 size: 74 magic: 2 \
            compresscodec: none",
        ),
    ];
    assert_eq!(lines, expected);
    assert_eq!(
        summary,
        DumpSummary {
            batches: 2,
            records: 4,
            invalid: None,
            index_mismatches: 0
        }
    );
}

#[test]
fn print_data_log_adds_one_line_per_record_with_key_and_payload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "00000000000000000000.log", &segment());
    let (lines, _) = dump(&path, true);
    let records: Vec<_> = lines.iter().filter(|l| l.starts_with('|')).cloned().collect();
    assert_eq!(
        records,
        vec![
            "| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 headerKeys: [] key: abc payload: hello",
            "| offset: 1 CreateTime: 1700000000000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: x",
            "| offset: 2 CreateTime: 1700000000000 keySize: 1 valueSize: -1 sequence: -1 headerKeys: [] key: k",
            "| offset: 3 CreateTime: 1700000000010 keySize: -1 valueSize: 1 sequence: 20 headerKeys: [h1] payload: v",
        ]
    );
    assert!(lines[3].starts_with("| offset: 0"), "records follow their batch line");
}

#[test]
fn a_corrupted_byte_stops_the_dump_with_the_invalid_batch_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = segment();
    let stored = BatchHeader::parse(&log[92..]).map(|h| h.crc).unwrap_or_default();
    let last = log.len() - 1;
    log[last] ^= 0x20;
    let computed = compute_crc(&log[92..]);
    let path = write(dir.path(), "00000000000000000000.log", &log);
    let (lines, summary) = dump(&path, true);
    assert!(
        lines[lines.len() - 3].ends_with(&format!("crc: {stored} isvalid: false")),
        "{lines:?}"
    );
    assert_eq!(
        lines[lines.len() - 2],
        format!("Found invalid batch at position 92: crc mismatch: stored {stored}, computed {computed}")
    );
    assert_eq!(
        lines[lines.len() - 1],
        "Found 74 invalid bytes at the end of 00000000000000000000.log"
    );
    assert_eq!(summary.batches, 1);
    assert_eq!(
        summary.invalid,
        Some(format!(
            "position 92: crc mismatch: stored {stored}, computed {computed}"
        ))
    );
}

#[test]
fn a_partial_batch_at_the_tail_is_reported_as_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = segment();
    let path = write(dir.path(), "00000000000000000000.log", &log[..110]);
    let (lines, summary) = dump(&path, false);
    assert!(
        lines.contains(
            &"Found invalid batch at position 92: batch is truncated: needs 74 bytes, only 18 remain in the file"
                .to_string()
        ),
        "{lines:?}"
    );
    assert_eq!((summary.batches, summary.records), (1, 3));
}

#[test]
fn compressed_batches_are_decompressed_for_print_data_log() {
    use kafka_protocol::records::{Compression as Kp, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let records: Vec<Record> = (0..2)
        .map(|i| Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: i as i32 - 1, // keeps base sequence -1 (the crate splits batches on offset - sequence)
            timestamp: TS,
            key: None,
            value: Some(Bytes::from(format!("z{i}"))),
            headers: Default::default(),
        })
        .collect();
    for (compression, name) in [
        (Kp::Gzip, "gzip"),
        (Kp::Snappy, "snappy"),
        (Kp::Lz4, "lz4"),
        (Kp::Zstd, "zstd"),
    ] {
        let mut buf = bytes::BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .expect("encode");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "00000000000000000000.log", &buf);
        let (lines, summary) = dump(&path, true);
        assert!(lines[2].contains(&format!("compresscodec: {name} ")), "{lines:?}");
        assert_eq!(
            &lines[3..],
            [
                "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 2 sequence: -1 headerKeys: [] payload: z0",
                "| offset: 1 CreateTime: 1700000000000 keySize: -1 valueSize: 2 sequence: -1 headerKeys: [] payload: z1"
            ],
            "{name}"
        );
        assert_eq!(summary.invalid, None);
    }
}

#[test]
fn undecodable_compressed_data_is_noted_without_stopping_the_dump() {
    // A gzip-flagged batch whose payload is not gzip: the CRC is fine, so it is not corruption.
    let mut log = build_batch(0, 0, &[(None, Some(b"a"))], TS);
    log[22] |= 0x01;
    let crc = compute_crc(&log);
    log[17..21].copy_from_slice(&crc.to_be_bytes());
    log.extend(build_batch(1, 0, &[(None, Some(b"b"))], TS));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "00000000000000000000.log", &log);
    let (lines, summary) = dump(&path, true);
    assert!(
        lines[3].starts_with("| records are compressed with gzip and not decoded: "),
        "{lines:?}"
    );
    assert!(lines[5].ends_with("payload: b"), "{lines:?}");
    assert_eq!((summary.batches, summary.invalid), (2, None));
}

#[test]
fn mutated_segments_and_indexes_never_panic_the_dump() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = segment();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut invalid = 0;
    for round in 0..300 {
        let mut log = base.clone();
        let at = (next() as usize) % log.len();
        log[at] = next() as u8;
        // Re-seal the first batch's CRC so the record decoder sees the damage.
        if round % 2 == 0 && at < 92 {
            let crc = compute_crc(&log[..92]);
            log[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        let path = write(dir.path(), "00000000000000000000.log", &log);
        let mut out = Vec::new();
        let summary = dump_file(&path, &DumpOptions { print_data_log: true }, &mut out).expect("dump succeeds");
        invalid += usize::from(summary.invalid.is_some());
        let garbage: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
        for name in [
            "00000000000000000000.index",
            "00000000000000000000.timeindex",
            "00000000000000000000.txnindex",
        ] {
            let path = write(dir.path(), name, &garbage);
            dump_file(&path, &DumpOptions::default(), &mut Vec::new()).expect("dump succeeds");
        }
    }
    assert!(invalid > 50, "the mutations must reach the invalid paths ({invalid})");
}

#[test]
fn a_commit_marker_prints_as_an_end_txn_marker() {
    let batch = BatchBuilder::new(0)
        .producer(4, 0, -1)
        .transactional()
        .control()
        .record(Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 7]))
        .build();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "00000000000000000000.log", &batch);
    let (lines, _) = dump(&path, true);
    assert!(lines[2].contains("isTransactional: true isControl: true"), "{lines:?}");
    assert_eq!(lines[3], "| offset: 0 CreateTime: 0 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7");
}

fn offset_index(entries: &[(u32, u32)], preallocated: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = entries
        .iter()
        .flat_map(|(r, p)| [r.to_be_bytes(), p.to_be_bytes()].concat())
        .collect();
    bytes.resize(bytes.len() + preallocated * 8, 0);
    bytes
}

#[test]
fn an_index_prints_its_entries_and_stops_at_the_preallocated_zeros() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = build_batch(100, 0, &[(None, Some(b"a"))], TS); // 100 @ 0
    let second = log.len();
    log.extend(build_batch(101, 0, &[(None, Some(b"b")), (None, Some(b"c"))], TS)); // 101-102
    write(dir.path(), "00000000000000000100.log", &log);
    let path = write(
        dir.path(),
        "00000000000000000100.index",
        &offset_index(&[(2, second as u32)], 4),
    );
    let (lines, summary) = dump(&path, false);
    assert_eq!(lines[1..], [format!("offset: 102 position: {second}")]);
    assert_eq!(summary.index_mismatches, 0);
}

#[test]
fn an_index_entry_that_misses_its_batch_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = build_batch(0, 0, &[(None, Some(b"a"))], TS);
    let second = log.len() as u32;
    log.extend(build_batch(1, 0, &[(None, Some(b"b"))], TS));
    write(dir.path(), "00000000000000000000.log", &log);
    let path = write(
        dir.path(),
        "00000000000000000000.index",
        &offset_index(&[(0, 3), (5, second)], 0),
    );
    let (lines, summary) = dump(&path, false);
    assert_eq!(
        lines[1..],
        [
            "offset: 0 position: 3".to_string(),
            "Index offset mismatch: entry 0 offset: 0 position: 3: no batch starts at position 3".to_string(),
            format!("offset: 5 position: {second}"),
            format!("Index offset mismatch: entry 1 offset: 5 position: {second}: batch at position {second} holds offsets 1 to 1"),
        ]
    );
    assert_eq!(summary.index_mismatches, 2);
}

#[test]
fn a_time_index_prints_entries_and_reports_order_and_missing_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = build_batch(10, 0, &[(None, Some(b"a")), (None, Some(b"b"))], TS);
    write(dir.path(), "00000000000000000010.log", &log);
    let entry = |ts: i64, rel: u32| [ts.to_be_bytes().to_vec(), rel.to_be_bytes().to_vec()].concat();
    let bytes = [entry(TS, 1), entry(TS - 1, 1), entry(TS + 5, 9), vec![0; 24]].concat();
    let path = write(dir.path(), "00000000000000000010.timeindex", &bytes);
    let (lines, summary) = dump(&path, false);
    assert_eq!(
        lines[1..],
        [
            "timestamp: 1700000000000 offset: 11",
            "timestamp: 1699999999999 offset: 11",
            "Time index mismatch: entry 1 timestamp: 1699999999999 offset: 11: timestamp is smaller than the previous entry's 1700000000000",
            "timestamp: 1700000000005 offset: 19",
            "Time index mismatch: entry 2 timestamp: 1700000000005 offset: 19: offset is not in the log",
        ]
    );
    assert_eq!(summary.index_mismatches, 2);
}

#[test]
fn unknown_files_are_ignored_and_bad_names_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "notes.txt", b"hi");
    let (lines, summary) = dump(&path, false);
    assert_eq!(lines[1], format!("Ignoring unknown file {}", path.display()));
    assert_eq!(summary, DumpSummary::default());
    let bad = write(dir.path(), "segment.log", b"");
    let err = dump_file(&bad, &DumpOptions::default(), &mut Vec::new()).expect_err("no base offset");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn a_producer_snapshot_dumps_one_line_per_producer_and_a_corrupt_one_is_invalid() {
    use crate::log::producer_state::{AppendOrigin, ProducerBatch, ProducerStateManager};
    let mut state = ProducerStateManager::new(0);
    let batch = ProducerBatch {
        producer_id: 1000,
        producer_epoch: 2,
        first_seq: 5,
        last_seq: 7,
        first_offset: 40,
        last_offset: 42,
        max_timestamp: TS,
    };
    let mut append = state.prepare(AppendOrigin::Client);
    append.append(&state, &batch).expect("valid");
    state.commit(append);
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = crate::log::producer_snapshot::encode(state.entries().into_iter());
    let path = write(dir.path(), "00000000000000000043.snapshot", &bytes);
    let (lines, summary) = dump(&path, false);
    assert_eq!(
        lines[1],
        format!(
            "producerId: 1000 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty \
             lastTimestamp: {TS} firstSequence: 5 lastSequence: 7 lastOffset: 42 offsetDelta: 2 timestamp: {TS}"
        )
    );
    assert!(summary.invalid.is_none());
    let mut corrupt = bytes.clone();
    corrupt[12] ^= 1;
    let path = write(dir.path(), "00000000000000000044.snapshot", &corrupt);
    let (lines, summary) = dump(&path, false);
    assert!(lines[1].contains("snapshot is corrupt"), "{lines:?}");
    assert!(summary.invalid.is_some());
}
