//! Builders for tests and benchmarks: valid v2 record batches laid out by hand (varints,
//! CRC-32C), with no dependency on a client library; uncompressed unless
//! [`BatchBuilder::compression`] names a codec.
//!
//! The broker itself uses only `build_batch` (the group coordinator's records). The builders
//! can also produce deliberately odd batches (wrong offset deltas, control or transactional
//! flags) so validation and recovery tests can reach each check.

use super::record_batch::codec::compress;
use super::record_batch::header::{
    compute_crc, Compression, COMPRESSION_CODEC_MASK, CONTROL_FLAG_MASK, CRC_OFFSET, LOG_OVERHEAD, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, TRANSACTIONAL_FLAG_MASK,
};
use super::record_batch::varint::{write_varint, write_varlong};

/// A key/value pair as `build_batch` takes it.
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// Builds a valid uncompressed v2 batch: offsets `base_offset..base_offset + records.len()`, every
/// record at `timestamp` (CreateTime), no producer id, no headers. An empty `records` gives a
/// header-only batch with record count 0.
pub fn build_batch(base_offset: i64, leader_epoch: i32, records: &[KeyValue<'_>], timestamp: i64) -> Vec<u8> {
    records
        .iter()
        .fold(
            BatchBuilder::new(base_offset)
                .leader_epoch(leader_epoch)
                .timestamp(timestamp),
            |b, (k, v)| b.record(*k, *v),
        )
        .build()
}

/// One record for [`BatchBuilder`].
#[derive(Debug, Clone, Default)]
pub struct TestRecord<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
    /// Added to the batch's base timestamp.
    pub timestamp_delta: i64,
}

/// Builder for a v2 batch with control over every header field a test needs.
#[derive(Debug, Clone)]
pub struct BatchBuilder<'a> {
    base_offset: i64,
    leader_epoch: i32,
    base_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    attributes: i16,
    compression: Compression,
    records: Vec<TestRecord<'a>>,
    /// Overrides the natural 0, 1, 2… deltas (to build invalid batches).
    offset_deltas: Option<Vec<i32>>,
}

impl<'a> BatchBuilder<'a> {
    pub fn new(base_offset: i64) -> Self {
        BatchBuilder {
            base_offset,
            leader_epoch: 0,
            base_timestamp: 0,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            attributes: 0,
            compression: Compression::None,
            records: Vec::new(),
            offset_deltas: None,
        }
    }

    pub fn leader_epoch(mut self, epoch: i32) -> Self {
        self.leader_epoch = epoch;
        self
    }

    /// The base timestamp (first record's CreateTime).
    pub fn timestamp(mut self, timestamp: i64) -> Self {
        self.base_timestamp = timestamp;
        self
    }

    /// An idempotent producer's id, epoch and the batch's first sequence number.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    pub fn transactional(mut self) -> Self {
        self.attributes |= TRANSACTIONAL_FLAG_MASK;
        self
    }

    pub fn control(mut self) -> Self {
        self.attributes |= CONTROL_FLAG_MASK;
        self
    }

    /// Compresses the records section with `codec` (attribute bits 0-2). An unknown codec sets
    /// its bits over uncompressed records.
    pub fn compression(mut self, codec: Compression) -> Self {
        self.compression = codec;
        self
    }

    pub fn record(self, key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        self.record_with(TestRecord {
            key,
            value,
            ..TestRecord::default()
        })
    }

    pub fn record_with(mut self, record: TestRecord<'a>) -> Self {
        self.records.push(record);
        self
    }

    /// Uses these offset deltas instead of 0, 1, 2…; `last_offset_delta` becomes their maximum.
    pub fn offset_deltas(mut self, deltas: &[i32]) -> Self {
        self.offset_deltas = Some(deltas.to_vec());
        self
    }

    pub fn build(&self) -> Vec<u8> {
        let deltas: Vec<i32> = match &self.offset_deltas {
            Some(deltas) => deltas.clone(),
            None => (0..self.records.len())
                .map(|i| i32::try_from(i).unwrap_or(i32::MAX))
                .collect(),
        };
        let last_offset_delta = deltas.iter().copied().max().unwrap_or(0);
        let max_timestamp_delta = self.records.iter().map(|r| r.timestamp_delta).max().unwrap_or(0);
        let record_count = i32::try_from(self.records.len()).unwrap_or(i32::MAX);

        let mut out = Vec::with_capacity(128);
        out.extend(self.base_offset.to_be_bytes());
        out.extend(0i32.to_be_bytes()); // batch length, patched below
        out.extend(self.leader_epoch.to_be_bytes());
        out.push(2);
        out.extend(0u32.to_be_bytes()); // crc, patched below
        let codec_bits = i16::from(self.compression.id()) & COMPRESSION_CODEC_MASK;
        out.extend((self.attributes | codec_bits).to_be_bytes());
        out.extend(last_offset_delta.to_be_bytes());
        out.extend(self.base_timestamp.to_be_bytes());
        out.extend(self.base_timestamp.saturating_add(max_timestamp_delta).to_be_bytes());
        out.extend(self.producer_id.to_be_bytes());
        out.extend(self.producer_epoch.to_be_bytes());
        out.extend(self.base_sequence.to_be_bytes());
        out.extend(record_count.to_be_bytes());

        let mut records = Vec::new();
        let mut body = Vec::new();
        for (i, record) in self.records.iter().enumerate() {
            body.clear();
            body.push(0); // attributes
            write_varlong(&mut body, record.timestamp_delta);
            write_varint(&mut body, deltas.get(i).copied().unwrap_or(0));
            write_bytes(&mut body, record.key);
            write_bytes(&mut body, record.value);
            write_varint(&mut body, len_i32(record.headers.len()));
            for (key, value) in &record.headers {
                write_bytes(&mut body, Some(*key));
                write_bytes(&mut body, *value);
            }
            write_varint(&mut records, len_i32(body.len()));
            records.extend_from_slice(&body);
        }
        // An unknown codec (which cannot compress) only sets its bits: a deliberately odd batch.
        out.extend(compress(self.compression, &records).unwrap_or(records));

        let length = len_i32(out.len() - LOG_OVERHEAD);
        out[8..12].copy_from_slice(&length.to_be_bytes());
        let crc = compute_crc(&out);
        out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        out
    }
}

fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

fn write_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        Some(bytes) => {
            write_varint(out, len_i32(bytes.len()));
            out.extend_from_slice(bytes);
        }
        None => write_varint(out, -1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::{validate_batches, BatchHeader, RecordIter, RECORDS_OFFSET};

    #[test]
    fn build_batch_output_passes_validation_and_decodes_back() {
        let batch = build_batch(10, 3, &[(Some(b"k"), Some(b"v")), (None, None)], 1_234);
        let headers = validate_batches(&batch, usize::MAX).expect("valid");
        let h = headers[0];
        assert_eq!((h.base_offset, h.last_offset(), h.partition_leader_epoch), (10, 11, 3));
        assert_eq!((h.base_timestamp, h.max_timestamp, h.record_count), (1_234, 1_234, 2));
        let records: Vec<_> = RecordIter::new(&batch[RECORDS_OFFSET..], 2)
            .collect::<Result<_, _>>()
            .expect("decode");
        assert_eq!((records[0].key, records[0].value), (Some(&b"k"[..]), Some(&b"v"[..])));
        assert_eq!(
            (records[1].key, records[1].value, records[1].offset_delta),
            (None, None, 1)
        );
    }

    #[test]
    fn the_builder_sets_producer_fields_flags_headers_and_max_timestamp() {
        let batch = BatchBuilder::new(0)
            .timestamp(100)
            .producer(7, 2, 40)
            .transactional()
            .record_with(TestRecord {
                key: Some(b"k"),
                value: Some(b"v"),
                headers: vec![(b"h1", Some(b"x")), (b"h2", None)],
                timestamp_delta: 50,
            })
            .build();
        let h = BatchHeader::parse(&batch).expect("header");
        assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (7, 2, 40));
        assert!(h.is_transactional() && !h.is_control());
        assert_eq!(h.max_timestamp, 150);
        let record = RecordIter::new(&batch[RECORDS_OFFSET..], 1)
            .next()
            .expect("one")
            .expect("valid");
        assert_eq!(record.headers.len(), 2);
        assert_eq!(record.timestamp_delta, 50);
    }

    #[test]
    fn an_empty_build_is_a_header_only_batch() {
        let batch = build_batch(5, 0, &[], 0);
        assert_eq!(batch.len(), RECORDS_OFFSET);
        assert_eq!(BatchHeader::parse(&batch).map(|h| h.record_count), Ok(0));
    }
}
