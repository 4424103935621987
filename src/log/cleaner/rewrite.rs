//! Byte-level work of the cleaner with no I/O: the key → latest offset map built over the dirty
//! section, and the rewrite of one stored batch keeping only the records the policy retains
//! (Kafka's `MemoryRecords.filterTo`). A batch that loses nothing and needs no delete horizon
//! is copied as it is; otherwise it is re-encoded with the same base offset, last offset delta
//! (Kafka's `overrideLastOffset`: the producer's last sequence stays `base sequence + delta`),
//! leader epoch, attributes, producer fields and record offset deltas, and a new CRC. A
//! compressed batch is inflated to be mapped and filtered, and what it keeps is compressed again
//! with its own codec (Kafka's `buildRetainedRecordsInto`); one whose records cannot be read
//! (an unknown codec, data that does not inflate) is kept whole and its keys are not mapped. A
//! batch that loses every record goes, unless it is the last batch of a producer with state:
//! that one stays as an empty, uncompressed batch (record count 0, Kafka's `writeEmptyHeader`).

use std::borrow::Cow;
use std::collections::HashMap;

use super::policy::{retain_record, Retain};
use crate::protocol::record_batch::codec;
use crate::protocol::record_batch::header::{
    ATTRIBUTES_OFFSET, BASE_TIMESTAMP_OFFSET, COMPRESSION_CODEC_MASK, CRC_OFFSET, DELETE_HORIZON_FLAG_MASK,
    LENGTH_OFFSET, MAX_TIMESTAMP_OFFSET, RECORDS_COUNT_OFFSET,
};
use crate::protocol::record_batch::varint::{write_varint, write_varlong};
use crate::protocol::record_batch::{
    compute_crc, BatchHeader, Compression, Record, RecordIter, TimestampType, LOG_OVERHEAD, RECORDS_OFFSET,
};

/// Kafka's dedupe map: key → offset of its latest record in the dirty section. Keys are kept
/// whole (no hash collisions to reason about); `bytes` estimates its memory so the caller can
/// stop at `log.cleaner.dedupe.buffer.size`.
#[derive(Debug, Default)]
pub struct OffsetMap {
    map: HashMap<Vec<u8>, i64>,
    bytes: usize,
}

/// Per-entry cost beyond the key bytes: the offset, the Vec header and the table slot.
const ENTRY_OVERHEAD: usize = 48;

impl OffsetMap {
    pub fn put(&mut self, key: &[u8], offset: i64) {
        match self.map.get_mut(key) {
            Some(o) => *o = (*o).max(offset),
            None => {
                self.bytes += key.len() + ENTRY_OVERHEAD;
                self.map.insert(key.to_vec(), offset);
            }
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<i64> {
        self.map.get(key).copied()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Estimated memory use.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds the keyed records of one stored batch, inflated if it is compressed. Control batches
    /// and batches whose records cannot be read add nothing.
    pub fn add_batch(&mut self, header: &BatchHeader, batch: &[u8]) {
        if header.is_control() {
            return;
        }
        let Some(section) = records_section(header, batch) else {
            return;
        };
        for record in RecordIter::new(&section, header.record_count).flatten() {
            if let Some(key) = record.key {
                self.put(key, header.base_offset + i64::from(record.offset_delta));
            }
        }
    }
}

/// The records section of `batch`, inflated when it is compressed. `None` when its records
/// cannot be read: an unknown codec or data that does not inflate.
fn records_section<'a>(header: &BatchHeader, batch: &'a [u8]) -> Option<Cow<'a, [u8]>> {
    let section = batch.get(RECORDS_OFFSET..).unwrap_or(&[]);
    match header.compression() {
        Compression::None => Some(Cow::Borrowed(section)),
        Compression::Unknown(_) => None,
        codec => codec::decompress(codec, section).ok().map(|b| Cow::Owned(Vec::from(b))),
    }
}

/// What became of one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filtered {
    /// Every record survives and no delete horizon is needed: copy the stored bytes.
    Unchanged,
    /// Some records were dropped or a delete horizon was set: the new batch bytes.
    Rewritten(Vec<u8>),
    /// No record survives and the batch is not kept empty.
    Removed,
}

/// The outcome of filtering a batch, with what the cleaner counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterOutcome {
    pub batch: Filtered,
    pub records_kept: usize,
    pub records_dropped: usize,
    /// The delete horizon of the batch written, when it still holds a tombstone.
    pub tombstone_horizon: Option<i64>,
}

/// Filters one stored batch against `map` at `now_ms`. A batch with a surviving tombstone and no
/// delete horizon gets `now_ms + delete_retention_ms` (KIP-534): its tombstones go in the first
/// cleaning after that. A compressed batch is inflated and what it keeps compressed again with
/// its codec. Control batches and batches whose records cannot be read (an unknown codec, data
/// that does not inflate or decode) are kept whole. With `retain_empty` (see
/// [`super::policy::retain_empty_batch`]) a batch that loses every record is kept empty.
pub fn filter_batch(
    header: &BatchHeader,
    batch: &[u8],
    map: &OffsetMap,
    now_ms: i64,
    delete_retention_ms: i64,
    retain_empty: bool,
) -> FilterOutcome {
    let whole = FilterOutcome {
        batch: Filtered::Unchanged,
        records_kept: usize::try_from(header.record_count).unwrap_or(0),
        records_dropped: 0,
        tombstone_horizon: None,
    };
    if header.is_control() {
        return whole;
    }
    let Some(section) = records_section(header, batch) else {
        tracing::warn!(offset = header.base_offset, codec = %header.compression(), "a compressed batch cannot be inflated; the cleaner keeps it whole");
        return whole;
    };
    let mut kept: Vec<Record<'_>> = Vec::new();
    let mut dropped = 0;
    for record in RecordIter::new(&section, header.record_count) {
        let Ok(record) = record else {
            // Uncompressed batches were validated on append, compressed ones were not: keep
            // anything unreadable untouched.
            return whole;
        };
        let offset = header.base_offset + i64::from(record.offset_delta);
        let latest = record.key.and_then(|k| map.get(k));
        let decision = retain_record(
            record.key.is_some(),
            record.value.is_some(),
            offset,
            latest,
            header.delete_horizon_ms(),
            now_ms,
        );
        if decision == Retain::Keep {
            kept.push(record);
        } else {
            dropped += 1;
        }
    }
    let has_tombstone = kept.iter().any(|r| r.value.is_none());
    let needs_horizon = has_tombstone && !header.has_delete_horizon();
    let horizon = if needs_horizon {
        Some(now_ms.saturating_add(delete_retention_ms))
    } else {
        header.delete_horizon_ms().filter(|_| has_tombstone)
    };
    if kept.is_empty() && !retain_empty {
        return FilterOutcome {
            batch: Filtered::Removed,
            records_kept: 0,
            records_dropped: dropped,
            tombstone_horizon: None,
        };
    }
    // (An empty batch kept by an earlier cleaning lands here too while it is still retained.)
    if dropped == 0 && !needs_horizon {
        return FilterOutcome {
            tombstone_horizon: horizon,
            ..whole
        };
    }
    let new = if kept.is_empty() {
        encode_empty(header, batch)
    } else {
        match encode(header, batch, &kept, horizon.filter(|_| needs_horizon)) {
            Ok(new) => new,
            Err(error) => {
                tracing::warn!(offset = header.base_offset, %error, "a cleaned batch cannot be compressed; the cleaner keeps it whole");
                return whole;
            }
        }
    };
    FilterOutcome {
        batch: Filtered::Rewritten(new),
        records_kept: kept.len(),
        records_dropped: dropped,
        tombstone_horizon: horizon,
    }
}

/// Re-encodes `batch` with only `kept` (in order), compressed with the batch's codec. With
/// `new_horizon`, the base timestamp field carries the horizon and record timestamp deltas are
/// rebased so absolute timestamps stay. Fails only when the codec fails.
fn encode(
    header: &BatchHeader,
    batch: &[u8],
    kept: &[Record<'_>],
    new_horizon: Option<i64>,
) -> Result<Vec<u8>, String> {
    let original_base_ts = header.base_timestamp;
    let base_ts = new_horizon.unwrap_or(original_base_ts);
    let mut records = Vec::new();
    let mut max_ts = i64::MIN;
    for r in kept {
        let ts = original_base_ts.wrapping_add(r.timestamp_delta);
        max_ts = max_ts.max(ts);
        let mut body = Vec::with_capacity(r.size_in_bytes);
        body.push(r.attributes as u8);
        write_varlong(&mut body, ts.wrapping_sub(base_ts));
        write_varint(&mut body, r.offset_delta);
        write_bytes(&mut body, r.key);
        write_bytes(&mut body, r.value);
        write_varint(&mut body, r.headers.len() as i32);
        for (k, v) in &r.headers {
            write_bytes(&mut body, Some(k));
            write_bytes(&mut body, *v);
        }
        write_varint(&mut records, body.len() as i32);
        records.extend_from_slice(&body);
    }
    let records = match header.compression() {
        Compression::None => records,
        codec => codec::compress(codec, &records)?,
    };
    let mut out = Vec::with_capacity(RECORDS_OFFSET + records.len());
    out.extend_from_slice(&batch[..RECORDS_OFFSET]);
    out.extend_from_slice(&records);
    let length = (out.len() - LOG_OVERHEAD) as i32;
    out[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    let mut attributes = header.attributes;
    if new_horizon.is_some() {
        attributes |= DELETE_HORIZON_FLAG_MASK;
    }
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    // The last offset delta is copied from the original header, whichever records survive.
    out[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8].copy_from_slice(&base_ts.to_be_bytes());
    // LogAppendTime batches keep the broker's time; CreateTime batches the survivors' maximum.
    if header.timestamp_type() == TimestampType::CreateTime {
        out[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&max_ts.to_be_bytes());
    }
    out[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&(kept.len() as i32).to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

/// The header of `batch` alone, as Kafka's `DefaultRecordBatch.writeEmptyHeader` writes it: same
/// base offset, last offset delta, leader epoch, producer id, epoch and base sequence, max
/// timestamp, timestamp type and transactional flag; no records, no compression (an empty
/// records section is no valid compressed stream), no base timestamp (-1) and no delete horizon.
fn encode_empty(header: &BatchHeader, batch: &[u8]) -> Vec<u8> {
    let mut out = batch[..RECORDS_OFFSET].to_vec();
    let length = (RECORDS_OFFSET - LOG_OVERHEAD) as i32;
    out[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    let attributes = header.attributes & !DELETE_HORIZON_FLAG_MASK & !COMPRESSION_CODEC_MASK;
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    out[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8].copy_from_slice(&(-1i64).to_be_bytes());
    out[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&0i32.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    out
}

fn write_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::validate::validate_replicated_batches;
    use crate::protocol::record_batch::BatchScanner;
    use crate::protocol::test_support::{build_batch, BatchBuilder, TestRecord};

    fn header(batch: &[u8]) -> BatchHeader {
        BatchHeader::parse(batch).expect("header")
    }

    /// (offset, key, value, absolute timestamp).
    type Stored = (i64, Option<Vec<u8>>, Option<Vec<u8>>, i64);

    fn records(batch: &[u8]) -> Vec<Stored> {
        let h = header(batch);
        let base_ts = h.base_timestamp;
        RecordIter::new(&batch[RECORDS_OFFSET..], h.record_count)
            .map(|r| r.expect("record"))
            .map(|r| {
                (
                    h.base_offset + i64::from(r.offset_delta),
                    r.key.map(<[u8]>::to_vec),
                    r.value.map(<[u8]>::to_vec),
                    base_ts + r.timestamp_delta,
                )
            })
            .collect()
    }

    #[test]
    fn superseded_records_go_and_the_batch_keeps_its_offsets_with_a_valid_crc() {
        let batch = build_batch(
            100,
            7,
            &[
                (Some(b"a"), Some(b"1")),
                (Some(b"b"), Some(b"2")),
                (Some(b"a"), Some(b"3")),
            ],
            1_000,
        );
        let mut map = OffsetMap::default();
        map.add_batch(&header(&batch), &batch);
        assert_eq!((map.get(b"a"), map.get(b"b")), (Some(102), Some(101)));
        let out = filter_batch(&header(&batch), &batch, &map, 0, 1_000, false);
        assert_eq!((out.records_kept, out.records_dropped), (2, 1));
        let Filtered::Rewritten(new) = out.batch else {
            panic!("rewritten")
        };
        // CRC and framing valid; base offset and leader epoch kept; offsets 101 and 102 survive.
        let h = validate_replicated_batches(&new).expect("valid")[0];
        assert_eq!(
            (h.base_offset, h.partition_leader_epoch, h.last_offset()),
            (100, 7, 102)
        );
        let kept: Vec<i64> = records(&new).iter().map(|r| r.0).collect();
        assert_eq!(kept, vec![101, 102]);
        assert_eq!(BatchScanner::new(&new).count(), 1);
    }

    #[test]
    fn an_untouched_batch_is_copied_and_a_fully_superseded_one_removed() {
        let batch = build_batch(0, 0, &[(Some(b"a"), Some(b"1"))], 1_000);
        let mut map = OffsetMap::default();
        map.put(b"z", 50);
        assert_eq!(
            filter_batch(&header(&batch), &batch, &map, 0, 0, false).batch,
            Filtered::Unchanged
        );
        map.put(b"a", 9);
        assert_eq!(
            filter_batch(&header(&batch), &batch, &map, 0, 0, false).batch,
            Filtered::Removed
        );
    }

    #[test]
    fn tombstones_get_a_delete_horizon_then_go_once_it_passes() {
        let batch = BatchBuilder::new(10)
            .timestamp(5_000)
            .record_with(TestRecord {
                key: Some(b"k"),
                value: None,
                timestamp_delta: 3,
                ..Default::default()
            })
            .build();
        let map = OffsetMap::default();
        let first = filter_batch(&header(&batch), &batch, &map, 10_000, 500, false);
        assert_eq!(first.tombstone_horizon, Some(10_500));
        let Filtered::Rewritten(marked) = first.batch else {
            panic!("rewritten with a horizon")
        };
        let h = header(&marked);
        assert_eq!(h.delete_horizon_ms(), Some(10_500));
        // The record's absolute timestamp is unchanged by the rebased delta.
        assert_eq!(records(&marked)[0].3, 5_003);
        validate_replicated_batches(&marked).expect("valid");
        // Before the horizon the marked batch is left alone; at the horizon the tombstone goes.
        assert_eq!(
            filter_batch(&h, &marked, &map, 10_499, 500, false).batch,
            Filtered::Unchanged
        );
        assert_eq!(
            filter_batch(&h, &marked, &map, 10_500, 500, false).batch,
            Filtered::Removed
        );
    }

    #[test]
    fn keyless_records_are_dropped_and_control_batches_kept() {
        let batch = build_batch(0, 0, &[(None, Some(b"v")), (Some(b"k"), Some(b"v"))], 1);
        let out = filter_batch(&header(&batch), &batch, &OffsetMap::default(), 0, 0, false);
        assert_eq!(out.records_dropped, 1);
        let control = BatchBuilder::new(5)
            .control()
            .record(Some(b"\0\0\0\0"), Some(b""))
            .build();
        let mut map = OffsetMap::default();
        map.put(b"\0\0\0\0", 99);
        assert_eq!(
            filter_batch(&header(&control), &control, &map, 0, 0, false).batch,
            Filtered::Unchanged
        );
    }

    #[test]
    fn the_last_offset_delta_survives_when_the_last_record_goes() {
        // Kafka's `overrideLastOffset`: the batch still covers 10..=12 and a producer's last
        // sequence (base sequence + delta) is unchanged.
        let batch = BatchBuilder::new(10)
            .producer(7, 2, 40)
            .record(Some(b"a"), Some(b"1"))
            .record(Some(b"b"), Some(b"2"))
            .record(Some(b"c"), Some(b"3"))
            .build();
        let mut map = OffsetMap::default();
        map.put(b"c", 99);
        let Filtered::Rewritten(new) = filter_batch(&header(&batch), &batch, &map, 0, 0, false).batch else {
            panic!("rewritten")
        };
        let h = validate_replicated_batches(&new).expect("valid")[0];
        assert_eq!((h.record_count, h.last_offset(), h.last_sequence()), (2, 12, 42));
    }

    #[test]
    fn a_producers_last_batch_losing_every_record_is_kept_as_an_empty_batch() {
        let batch = BatchBuilder::new(20)
            .leader_epoch(3)
            .producer(7, 2, 40)
            .timestamp(5_000)
            .record(Some(b"a"), Some(b"1"))
            .record(Some(b"b"), Some(b"2"))
            .build();
        let original = header(&batch);
        let mut map = OffsetMap::default();
        map.put(b"a", 99);
        map.put(b"b", 99);
        assert_eq!(
            filter_batch(&original, &batch, &map, 0, 0, false).batch,
            Filtered::Removed,
            "not the last batch of a producer: removed"
        );
        let out = filter_batch(&original, &batch, &map, 0, 0, true);
        assert_eq!((out.records_kept, out.records_dropped), (0, 2));
        let Filtered::Rewritten(empty) = out.batch else {
            panic!("kept empty")
        };
        // Kafka's `writeEmptyHeader`: the header alone, a valid CRC, the same offsets and
        // producer fields, record count 0.
        assert_eq!(empty.len(), crate::protocol::record_batch::RECORD_BATCH_OVERHEAD);
        let h = validate_replicated_batches(&empty).expect("valid")[0];
        assert_eq!(
            (h.base_offset, h.last_offset(), h.partition_leader_epoch, h.record_count),
            (20, 21, 3, 0)
        );
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence()),
            (7, 2, 40, 41)
        );
        assert_eq!((h.base_timestamp, h.max_timestamp), (-1, original.max_timestamp));
        assert!(records(&empty).is_empty());
        // The next cleaning copies it while it is still retained and drops it once it is not.
        assert_eq!(filter_batch(&h, &empty, &map, 0, 0, true).batch, Filtered::Unchanged);
        assert_eq!(filter_batch(&h, &empty, &map, 0, 0, false).batch, Filtered::Removed);
    }

    const CODECS: [Compression; 4] = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// kafka-protocol's reading of a batch (CRC checked, records inflated): (offset, key).
    fn client_view(batch: &[u8]) -> Vec<(i64, Option<Vec<u8>>)> {
        let mut bytes = bytes::Bytes::copy_from_slice(batch);
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).expect("kafka-protocol decodes");
        set.records
            .into_iter()
            .map(|r| (r.offset, r.key.map(|k| k.to_vec())))
            .collect()
    }

    #[test]
    fn a_compressed_batch_is_inflated_filtered_and_compressed_again_with_its_codec() {
        for codec in CODECS {
            let batch = BatchBuilder::new(100)
                .leader_epoch(7)
                .producer(9, 1, 50)
                .transactional()
                .timestamp(1_000)
                .compression(codec)
                .record(Some(b"a"), Some(b"1"))
                .record(Some(b"b"), Some(b"2"))
                .record(Some(b"a"), Some(b"3"))
                .record(Some(b"c"), Some(b"4"))
                .build();
            let original = header(&batch);
            let mut map = OffsetMap::default();
            map.add_batch(&original, &batch);
            assert_eq!(
                (map.get(b"a"), map.get(b"b"), map.get(b"c")),
                (Some(102), Some(101), Some(103))
            );
            map.put(b"c", 500);
            let out = filter_batch(&original, &batch, &map, 0, 1_000, false);
            assert_eq!((out.records_kept, out.records_dropped), (2, 2), "{codec}");
            let Filtered::Rewritten(new) = out.batch else {
                panic!("{codec}: rewritten")
            };
            // Same codec, flags, offsets, epoch and producer fields; a valid CRC; the last
            // offset delta kept though its record went.
            let h = validate_replicated_batches(&new).expect("valid")[0];
            assert_eq!((h.compression(), h.attributes), (codec, original.attributes), "{codec}");
            assert_eq!(
                (h.base_offset, h.last_offset(), h.partition_leader_epoch, h.record_count),
                (100, 103, 7, 2)
            );
            assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (9, 1, 50));
            assert_eq!(
                client_view(&new),
                vec![(101, Some(b"b".to_vec())), (102, Some(b"a".to_vec()))]
            );
            // Nothing more to drop: the compressed bytes are copied as they are.
            let mut map = OffsetMap::default();
            map.add_batch(&h, &new);
            assert_eq!(filter_batch(&h, &new, &map, 0, 0, false).batch, Filtered::Unchanged);
        }
    }

    #[test]
    fn a_compressed_producers_last_batch_is_kept_empty_and_uncompressed() {
        let batch = BatchBuilder::new(20)
            .producer(7, 2, 40)
            .compression(Compression::Zstd)
            .record(Some(b"a"), Some(b"1"))
            .build();
        let mut map = OffsetMap::default();
        map.put(b"a", 99);
        let Filtered::Rewritten(empty) = filter_batch(&header(&batch), &batch, &map, 0, 0, true).batch else {
            panic!("kept empty")
        };
        // Kafka's `writeEmptyHeader` writes CompressionType.NONE: an empty records section is no
        // zstd frame, and a client would fail to inflate it.
        let h = validate_replicated_batches(&empty).expect("valid")[0];
        assert_eq!(
            (h.compression(), h.record_count, h.last_sequence()),
            (Compression::None, 0, 40)
        );
        assert!(client_view(&empty).is_empty());
    }

    #[test]
    fn a_compressed_batch_that_does_not_inflate_is_kept_whole_and_maps_no_key() {
        let mut batch = BatchBuilder::new(0)
            .record(Some(b"a"), Some(b"1"))
            .record(Some(b"a"), Some(b"2"))
            .build();
        // Gzip-flagged records that are not gzip, with a valid CRC.
        let attributes = header(&batch).attributes | Compression::Gzip.id() as i16;
        batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
        let crc = compute_crc(&batch);
        batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        let mut map = OffsetMap::default();
        map.add_batch(&header(&batch), &batch);
        assert!(map.is_empty());
        map.put(b"a", 99);
        let out = filter_batch(&header(&batch), &batch, &map, 0, 0, false);
        assert_eq!((out.batch, out.records_kept), (Filtered::Unchanged, 2));
    }
}
