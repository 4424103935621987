//! Finding records by timestamp inside one batch, for ListOffsets (Kafka's
//! `FileRecords.searchForTimestamp` and `RecordBatch.offsetOfMaxTimestamp`): a batch's header
//! only knows its max timestamp, so the answer for a timestamp inside a batch needs its records,
//! decompressed when the batch is. Pure: the segment hands over the batch's bytes.

use crate::protocol::record_batch::{BatchHeader, Compression, RecordIter, TimestampType, RECORDS_OFFSET};

/// A ListOffsets answer: the offset found, its record's timestamp (-1 for earliest/latest) and
/// the leader epoch of the batch holding it, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampAndOffset {
    pub timestamp: i64,
    pub offset: i64,
    pub leader_epoch: Option<i32>,
}

impl TimestampAndOffset {
    fn in_batch(header: &BatchHeader, timestamp: i64, offset: i64) -> Self {
        TimestampAndOffset {
            timestamp,
            offset,
            leader_epoch: (header.partition_leader_epoch >= 0).then_some(header.partition_leader_epoch),
        }
    }
}

/// `(offset, timestamp)` of every record in `batch` (a whole stored batch), in order. A
/// LogAppendTime batch's records all carry the batch's max timestamp, as Kafka reads them.
/// `None` when the records cannot be read (an unknown codec, or bytes that do not decode).
fn record_timestamps(batch: &[u8], header: &BatchHeader) -> Option<Vec<(i64, i64)>> {
    let section = batch.get(RECORDS_OFFSET..)?;
    let inflated;
    let records = match header.compression() {
        Compression::None => section,
        Compression::Unknown(_) => return None,
        codec => {
            inflated = crate::log::dump::decompress(codec, section).ok()?;
            &inflated[..]
        }
    };
    let append_time = header.timestamp_type() == TimestampType::LogAppendTime;
    RecordIter::new(records, header.record_count)
        .map(|r| {
            r.ok().map(|r| {
                let timestamp = if append_time {
                    header.max_timestamp
                } else {
                    header.base_timestamp + r.timestamp_delta
                };
                (header.base_offset + i64::from(r.offset_delta), timestamp)
            })
        })
        .collect()
}

/// The first record of `batch` with a timestamp ≥ `target` and an offset ≥ `starting_offset`
/// (Kafka's `searchForTimestamp` within one batch). A batch whose records cannot be read
/// answers from its header: its first offset at or past `starting_offset`, with its max timestamp.
pub fn first_at_or_after(
    batch: &[u8],
    header: &BatchHeader,
    target: i64,
    starting_offset: i64,
) -> Option<TimestampAndOffset> {
    if header.max_timestamp < target || header.last_offset() < starting_offset {
        return None;
    }
    match record_timestamps(batch, header) {
        Some(records) => records
            .into_iter()
            .find(|&(offset, timestamp)| timestamp >= target && offset >= starting_offset)
            .map(|(offset, timestamp)| TimestampAndOffset::in_batch(header, timestamp, offset)),
        None => Some(TimestampAndOffset::in_batch(
            header,
            header.max_timestamp,
            header.base_offset.max(starting_offset),
        )),
    }
}

/// The first record of `batch` carrying the batch's max timestamp, with it (Kafka's
/// `offsetOfMaxTimestamp`, what ListOffsets MAX_TIMESTAMP answers). Unreadable records answer
/// the batch's last offset, where the header says the maximum is at the latest.
pub fn max_timestamp_record(batch: &[u8], header: &BatchHeader) -> TimestampAndOffset {
    let offset = record_timestamps(batch, header)
        .and_then(|records| {
            records
                .into_iter()
                .find(|&(_, timestamp)| timestamp == header.max_timestamp)
                .map(|(offset, _)| offset)
        })
        .unwrap_or_else(|| header.last_offset());
    TimestampAndOffset::in_batch(header, header.max_timestamp, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{Compression as Kp, Record, RecordBatchEncoder, RecordEncodeOptions};

    /// One batch at offsets 100.. with leader epoch 5 and these CreateTime timestamps, encoded
    /// by the client codec (so compressed batches are what producers send).
    fn batch(timestamps: &[i64], compression: Compression) -> (Vec<u8>, BatchHeader) {
        let records: Vec<Record> = timestamps
            .iter()
            .enumerate()
            .map(|(i, ts)| Record {
                transactional: false,
                control: false,
                partition_leader_epoch: 5,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: kafka_protocol::records::TimestampType::Creation,
                offset: 100 + i as i64,
                sequence: i as i32 - 1, // keeps one batch (the crate splits on offset - sequence)
                timestamp: *ts,
                key: None,
                value: Some(bytes::Bytes::from(format!("v{i}"))),
                headers: Default::default(),
            })
            .collect();
        let compression = match compression {
            Compression::Gzip => Kp::Gzip,
            Compression::Snappy => Kp::Snappy,
            Compression::Lz4 => Kp::Lz4,
            Compression::Zstd => Kp::Zstd,
            _ => Kp::None,
        };
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
        let header = BatchHeader::parse(&buf).expect("header");
        assert_eq!(
            (header.base_offset, header.record_count),
            (100, timestamps.len() as i32)
        );
        (buf.to_vec(), header)
    }

    /// Records at 10, 20, 99, 30: the first at or after 20 is the second (offset 101), not the
    /// batch's base offset.
    #[test]
    fn a_timestamp_inside_a_batch_finds_the_first_record_at_or_after_it() {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Lz4,
            Compression::Zstd,
            Compression::Snappy,
        ] {
            let (bytes, header) = batch(&[10, 20, 99, 30], codec);
            let at = |target, from| first_at_or_after(&bytes, &header, target, from).map(|f| (f.offset, f.timestamp));
            assert_eq!(at(20, 0), Some((101, 20)), "{codec:?}");
            assert_eq!(at(21, 0), Some((102, 99)), "{codec:?}");
            assert_eq!(at(5, 0), Some((100, 10)), "{codec:?}");
            assert_eq!(at(100, 0), None, "{codec:?}");
            // Records before the log start are skipped (Kafka's startingOffset).
            assert_eq!(at(5, 102), Some((102, 99)), "{codec:?}");
            assert_eq!(at(5, 104), None, "{codec:?}");
            let found = first_at_or_after(&bytes, &header, 20, 0).expect("found");
            assert_eq!(found.leader_epoch, Some(5));
        }
    }

    #[test]
    fn max_timestamp_is_the_first_record_holding_the_batchs_max() {
        for codec in [Compression::None, Compression::Gzip] {
            let (bytes, header) = batch(&[10, 99, 20, 99], codec);
            let found = max_timestamp_record(&bytes, &header);
            assert_eq!((found.offset, found.timestamp, found.leader_epoch), (101, 99, Some(5)));
        }
    }
}
