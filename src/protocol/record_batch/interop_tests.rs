//! Interop with an independent implementation: batches encoded by the `kafka-protocol` crate
//! (what a Rust Kafka client sends) must validate here, and batches after the leader's in-place
//! rewrites must still decode there. Our own builder is checked against it too, so the hand-laid
//! layout and the crate agree byte for byte on meaning.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KpCompression, Record as KpRecord, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType as KpTimestampType,
};

use super::header::RECORDS_OFFSET;
use super::{set_base_offset, set_log_append_time, set_partition_leader_epoch, validate_batches, Compression};
use super::{BatchScanner, RecordIter, TimestampType};
use crate::protocol::test_support::{BatchBuilder, TestRecord};

fn client_records(n: i64) -> Vec<KpRecord> {
    (0..n)
        .map(|i| {
            let mut headers = IndexMap::new();
            headers.insert(StrBytes::from_static_str("trace"), Some(Bytes::from(format!("t{i}"))));
            KpRecord {
                transactional: false,
                control: false,
                partition_leader_epoch: -1,
                // An idempotent producer, as clients are by default since Kafka 3.0. (The crate also
                // starts a new batch whenever offset - sequence changes.)
                producer_id: 42,
                producer_epoch: 0,
                timestamp_type: KpTimestampType::Creation,
                offset: i,
                sequence: i as i32,
                timestamp: 1_700_000_000_000 + i,
                key: (i % 2 == 0).then(|| Bytes::from(format!("key-{i}"))),
                value: Some(Bytes::from(format!("value-{i}"))),
                headers,
            }
        })
        .collect()
}

fn encode(records: &[KpRecord], compression: KpCompression) -> Vec<u8> {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .expect("kafka-protocol encodes");
    buf.to_vec()
}

fn decode(batch: &[u8]) -> Vec<KpRecord> {
    let mut bytes = Bytes::copy_from_slice(batch);
    RecordBatchDecoder::decode(&mut bytes)
        .expect("kafka-protocol decodes")
        .records
}

/// What the leader does on append: assign offsets and stamp its epoch, no re-encoding.
fn leader_rewrite(batch: &mut [u8], base_offset: i64, epoch: i32) {
    set_base_offset(batch, base_offset);
    set_partition_leader_epoch(batch, epoch);
}

#[test]
fn an_uncompressed_client_batch_validates_and_survives_the_leader_rewrite() {
    let records = client_records(5);
    let mut batch = encode(&records, KpCompression::None);
    let headers = validate_batches(&batch, 1 << 20).expect("client batch is valid");
    assert_eq!(headers.len(), 1);
    assert_eq!((headers[0].record_count, headers[0].last_offset_delta), (5, 4));
    assert_eq!(headers[0].compression(), Compression::None);

    leader_rewrite(&mut batch, 1_000, 9);
    assert!(
        validate_batches(&batch, 1 << 20).is_ok(),
        "rewrites leave the CRC valid"
    );
    let decoded = decode(&batch);
    assert_eq!(
        decoded.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![1_000, 1_001, 1_002, 1_003, 1_004]
    );
    assert!(decoded.iter().all(|r| r.partition_leader_epoch == 9));
    assert_eq!(decoded[3].value, records[3].value);
    assert_eq!(decoded[2].key, records[2].key);
}

#[test]
fn a_gzip_client_batch_validates_on_its_header_and_survives_the_leader_rewrite() {
    let records = client_records(4);
    let mut batch = encode(&records, KpCompression::Gzip);
    let headers = validate_batches(&batch, 1 << 20).expect("client batch is valid");
    assert_eq!(headers[0].compression(), Compression::Gzip);
    assert_eq!(headers[0].record_count, 4);

    leader_rewrite(&mut batch, 77, 3);
    let decoded = decode(&batch);
    assert_eq!(
        decoded.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![77, 78, 79, 80]
    );
    assert!(decoded.iter().all(|r| r.partition_leader_epoch == 3));
    assert_eq!(decoded[1].value, records[1].value);
}

#[test]
fn a_log_append_time_rewrite_is_accepted_by_the_independent_decoder() {
    let mut batch = encode(&client_records(3), KpCompression::None);
    set_log_append_time(&mut batch, 1_800_000_000_000);
    let decoded = decode(&batch); // checks the CRC we recomputed
    assert!(decoded.iter().all(|r| r.timestamp_type == KpTimestampType::LogAppend));
    let header = validate_batches(&batch, 1 << 20).expect("still valid")[0];
    assert_eq!(header.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(header.max_timestamp, 1_800_000_000_000);
}

#[test]
fn batches_from_our_builder_decode_identically_in_kafka_protocol() {
    let batch = BatchBuilder::new(40)
        .leader_epoch(2)
        .timestamp(5_000)
        .producer(11, 1, 100)
        .record(Some(b"a"), Some(b"1"))
        .record_with(TestRecord {
            key: None,
            value: Some(b"2"),
            headers: vec![(b"h", Some(b"x"))],
            timestamp_delta: 7,
        })
        .build();
    let decoded = decode(&batch);
    assert_eq!(decoded.len(), 2);
    assert_eq!((decoded[0].offset, decoded[1].offset), (40, 41));
    assert_eq!((decoded[0].timestamp, decoded[1].timestamp), (5_000, 5_007));
    assert_eq!((decoded[0].producer_id, decoded[0].producer_epoch), (11, 1));
    assert_eq!((decoded[0].sequence, decoded[1].sequence), (100, 101));
    assert_eq!(
        decoded[1].headers.get(&b"h"[..]).cloned(),
        Some(Some(Bytes::from_static(b"x")))
    );
    assert_eq!(decoded[1].key, None);
}

#[test]
fn records_of_a_client_batch_decode_with_our_record_reader() {
    let records = client_records(3);
    let batch = encode(&records, KpCompression::None);
    let header = BatchScanner::new(&batch).next().expect("one batch").expect("valid");
    let ours: Vec<_> = RecordIter::new(&batch[RECORDS_OFFSET..], header.1.record_count)
        .collect::<Result<_, _>>()
        .expect("records decode");
    for (i, (mine, theirs)) in ours.iter().zip(&records).enumerate() {
        assert_eq!(mine.offset_delta, i as i32);
        assert_eq!(header.1.base_timestamp + mine.timestamp_delta, theirs.timestamp);
        assert_eq!(mine.key, theirs.key.as_deref());
        assert_eq!(mine.value, theirs.value.as_deref());
        assert_eq!(mine.headers, vec![(&b"trace"[..], Some(format!("t{i}").as_bytes()))]);
    }
}
