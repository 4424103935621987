//! Produce-time validation of client batches (the checks of Kafka's `LogValidator` and
//! `UnifiedLog.analyzeAndValidateRecords` that need no partition state), and the one mapping of
//! batch errors to Kafka error codes.
//!
//! Uncompressed batches are walked record by record; compressed batches are checked on the
//! header only and stored exactly as sent, except that a compacted topic's key check
//! ([`check_keys_present`]) inflates them.
//! Checks that need broker state — producer sequences, timestamps against
//! `message.timestamp.*`, keys on compacted topics — belong to the log, not here.

use thiserror::Error;

use super::codec::decompress;
use super::header::{BatchHeader, Compression, CURRENT_MAGIC, RECORDS_OFFSET};
use super::record::{RecordError, RecordIter};
use super::scanner::{complete_batch, read_frame, ScanError};

use crate::protocol::error_codes::{
    CORRUPT_MESSAGE, INVALID_RECORD, INVALID_TIMESTAMP, MESSAGE_TOO_LARGE, UNSUPPORTED_COMPRESSION_TYPE,
    UNSUPPORTED_FOR_MESSAGE_FORMAT,
};

/// A record batch a peer sent (or a file held) that kastle will not accept. Positions are byte
/// offsets in the validated buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum BatchError {
    /// Framing or CRC is wrong: a truncated, garbled or bit-flipped batch.
    #[error("corrupt record batch: {source}")]
    Corrupt {
        #[from]
        source: ScanError,
    },
    /// Larger than `max.message.bytes` (Kafka's `RecordTooLargeException`).
    #[error("record batch at byte {position} is {size} bytes, larger than the maximum {max}")]
    TooLarge { position: usize, size: usize, max: usize },
    /// A legacy (magic 0/1) message set: kastle stores only v2 batches.
    #[error("record batch at byte {position} uses message format v{magic}; only v2 is supported")]
    UnsupportedForMessageFormat { position: usize, magic: i8 },
    /// Attribute bits 0-2 name a codec no Kafka version defines.
    #[error("record batch at byte {position} uses unknown compression codec {codec}")]
    UnknownCompression { position: usize, codec: u8 },
    /// A CreateTime record outside the topic's `message.timestamp.before/after.max.ms` window.
    #[error("timestamp {timestamp} of record {index} in the batch at byte {position} is out of range: it should be within [{earliest}, {latest}]")]
    InvalidTimestamp {
        position: usize,
        index: i32,
        timestamp: i64,
        earliest: i64,
        latest: i64,
    },
    /// Framing is fine but the contents break the v2 rules.
    #[error("invalid record batch at byte {position} (base offset {base_offset}): {reason}")]
    InvalidRecord {
        position: usize,
        base_offset: i64,
        reason: InvalidRecordReason,
    },
}

impl BatchError {
    /// The Kafka error code a produce response carries for this failure.
    pub fn error_code(&self) -> i16 {
        match self {
            BatchError::Corrupt { .. } => CORRUPT_MESSAGE,
            BatchError::TooLarge { .. } => MESSAGE_TOO_LARGE,
            BatchError::UnsupportedForMessageFormat { .. } => UNSUPPORTED_FOR_MESSAGE_FORMAT,
            BatchError::UnknownCompression { .. } => UNSUPPORTED_COMPRESSION_TYPE,
            BatchError::InvalidRecord { .. } => INVALID_RECORD,
            BatchError::InvalidTimestamp { .. } => INVALID_TIMESTAMP,
        }
    }

    /// Magic 0/1 is a format kastle chose not to support; anything else is garbage.
    pub(crate) fn from_magic(position: usize, magic: i8) -> BatchError {
        match magic {
            0 | 1 => BatchError::UnsupportedForMessageFormat { position, magic },
            _ => ScanError::BadMagic { position, magic }.into(),
        }
    }
}

/// What exactly is wrong inside a well-framed batch (Kafka's `InvalidRecordException` messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum InvalidRecordReason {
    #[error("record count {record_count} is not positive")]
    NoRecords { record_count: i32 },
    #[error("record count {record_count} does not match last offset delta {last_offset_delta}")]
    CountMismatch { record_count: i32, last_offset_delta: i32 },
    #[error("record {index}: {error}")]
    Record { index: i32, error: RecordError },
    #[error("record {index} has offset delta {offset_delta}, expected {index}")]
    OffsetDelta { index: i32, offset_delta: i32 },
    #[error("{trailing} bytes follow the last record")]
    TrailingBytes { trailing: usize },
    /// Kafka: "Compacted topic cannot accept message without key".
    #[error("record {index} has no key, which a compacted topic cannot accept")]
    NoKeyInCompactedTopic { index: i32 },
    /// A compressed batch whose records section does not inflate with its codec.
    #[error("the records do not decompress with the batch's codec")]
    NotInflatable,
}

/// Validates a produce request's record set: complete v2 batches back to back, each no larger
/// than `max_batch_size`, with a matching CRC and consistent counts. Returns the header of every
/// batch in order; batch `i` starts at the sum of the earlier `size_in_bytes()`. An empty buffer
/// gives no headers: Kafka answers an empty produce record set with INVALID_RECORD, which is the
/// produce handler's decision (a follower's empty fetch is normal).
///
/// Any trailing bytes that do not form a whole batch are `Corrupt` (Kafka silently drops a
/// partial tail; a kastle client never sends one, so refusing is the safer reading).
pub fn validate_batches(buf: &[u8], max_batch_size: usize) -> Result<Vec<BatchHeader>, BatchError> {
    let mut headers = Vec::new();
    let mut position = 0;
    while position < buf.len() {
        let header = validate_one(buf, position, max_batch_size)?;
        position += header.size_in_bytes();
        headers.push(header);
    }
    Ok(headers)
}

fn validate_one(buf: &[u8], position: usize, max_batch_size: usize) -> Result<BatchHeader, BatchError> {
    let frame = read_frame(buf, position)?;
    if frame.size > max_batch_size {
        return Err(BatchError::TooLarge {
            position,
            size: frame.size,
            max: max_batch_size,
        });
    }
    if frame.magic != CURRENT_MAGIC {
        return Err(BatchError::from_magic(position, frame.magic));
    }
    let batch = complete_batch(buf, position, frame, true)?;
    let header = BatchHeader::parse_unchecked(batch);
    let invalid = |reason| BatchError::InvalidRecord {
        position,
        base_offset: header.base_offset,
        reason,
    };

    let compression = header.compression();
    if let Compression::Unknown(codec) = compression {
        return Err(BatchError::UnknownCompression { position, codec });
    }
    // LogValidator: "Invalid reported count for record batch" / "Inconsistent batch offset range
    // and record count". Compared as i64 so a last offset delta of i32::MAX cannot overflow.
    if header.record_count < 1 {
        return Err(invalid(InvalidRecordReason::NoRecords {
            record_count: header.record_count,
        }));
    }
    if i64::from(header.record_count) != i64::from(header.last_offset_delta) + 1 {
        return Err(invalid(InvalidRecordReason::CountMismatch {
            record_count: header.record_count,
            last_offset_delta: header.last_offset_delta,
        }));
    }
    if compression == Compression::None {
        check_records(batch.get(RECORDS_OFFSET..).unwrap_or(&[]), header.record_count).map_err(invalid)?;
    }
    Ok(header)
}

/// Validates batches a follower copies from its leader: framing, magic and CRC only. A leader's
/// compacted batches have offset gaps (fewer records than their offset range), which the
/// produce-time checks of [`validate_batches`] would refuse; Kafka's follower path does not run
/// `LogValidator` either.
pub fn validate_replicated_batches(buf: &[u8]) -> Result<Vec<BatchHeader>, BatchError> {
    let mut headers = Vec::new();
    let mut position = 0;
    while position < buf.len() {
        let frame = read_frame(buf, position)?;
        if frame.magic != CURRENT_MAGIC {
            return Err(BatchError::from_magic(position, frame.magic));
        }
        let batch = complete_batch(buf, position, frame, true)?;
        let header = BatchHeader::parse_unchecked(batch);
        position += header.size_in_bytes();
        headers.push(header);
    }
    Ok(headers)
}

/// For compacted topics (Kafka's `LogValidator.validateKey`): every record of the already
/// validated `buf` (described by `headers`) must have a key. Compressed batches are inflated for
/// this check (as Kafka's validator inflates them), so their records must also decode: the
/// only place the produce path looks inside a compressed batch.
pub fn check_keys_present(buf: &[u8], headers: &[BatchHeader]) -> Result<(), BatchError> {
    let mut position = 0;
    for header in headers {
        let batch = buf.get(position..position + header.size_in_bytes()).unwrap_or(&[]);
        let invalid = |reason| BatchError::InvalidRecord {
            position,
            base_offset: header.base_offset,
            reason,
        };
        let section = batch.get(RECORDS_OFFSET..).unwrap_or(&[]);
        let compressed = header.compression() != Compression::None;
        let inflated;
        let records = if compressed {
            inflated =
                decompress(header.compression(), section).map_err(|_| invalid(InvalidRecordReason::NotInflatable))?;
            &inflated[..]
        } else {
            section
        };
        for (index, record) in (0..header.record_count).zip(RecordIter::new(records, header.record_count)) {
            match record {
                Ok(r) if r.key.is_none() => return Err(invalid(InvalidRecordReason::NoKeyInCompactedTopic { index })),
                // Uncompressed records were walked by `validate_batches`; inflated ones were not.
                Err(error) if compressed => return Err(invalid(InvalidRecordReason::Record { index, error })),
                _ => {}
            }
        }
        position += header.size_in_bytes();
    }
    Ok(())
}

/// Walks an uncompressed records section: every record decodes within the batch, offset deltas
/// run 0, 1, 2, … and the last record ends exactly at the end of the batch.
pub(crate) fn check_records(section: &[u8], record_count: i32) -> Result<(), InvalidRecordReason> {
    let mut records = RecordIter::new(section, record_count);
    // The iterator yields at most `record_count` items, so an i32 index cannot overflow.
    for (index, record) in (0..record_count).zip(records.by_ref()) {
        let record = record.map_err(|error| InvalidRecordReason::Record { index, error })?;
        if record.offset_delta != index {
            return Err(InvalidRecordReason::OffsetDelta {
                index,
                offset_delta: record.offset_delta,
            });
        }
    }
    let trailing = section.len() - records.position();
    if trailing > 0 {
        return Err(InvalidRecordReason::TrailingBytes { trailing });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::header::{
        compute_crc, ATTRIBUTES_OFFSET, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LENGTH_OFFSET, MAGIC_OFFSET,
        RECORDS_COUNT_OFFSET,
    };
    use crate::protocol::record_batch::record::{RecordError, RecordField};
    use crate::protocol::test_support::{build_batch, BatchBuilder};

    const MAX: usize = 1 << 20;

    fn three_records() -> Vec<u8> {
        build_batch(
            0,
            0,
            &[(Some(b"a"), Some(b"1")), (None, Some(b"2")), (Some(b"c"), None)],
            1_700_000_000_000,
        )
    }

    /// Applies `edit` to a batch and fixes the CRC, so the test reaches the check after it.
    fn edited(mut batch: Vec<u8>, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        edit(&mut batch);
        let crc = compute_crc(&batch);
        batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        batch
    }

    #[test]
    fn a_keyless_record_is_invalid_record_for_a_compacted_topic() {
        let keyed = build_batch(0, 0, &[(Some(b"a"), Some(b"1"))], 1);
        let headers = validate_batches(&keyed, MAX).expect("valid");
        assert_eq!(check_keys_present(&keyed, &headers), Ok(()));
        let mut both = keyed.clone();
        both.extend(three_records());
        let headers = validate_batches(&both, MAX).expect("valid");
        let err = check_keys_present(&both, &headers).expect_err("keyless");
        assert_eq!(err.error_code(), INVALID_RECORD);
        assert!(matches!(
            err,
            BatchError::InvalidRecord {
                reason: InvalidRecordReason::NoKeyInCompactedTopic { index: 1 },
                ..
            }
        ));
    }

    #[test]
    fn a_compacted_topic_inflates_compressed_batches_to_find_keyless_records() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let batch = |key: Option<&'static [u8]>| {
                BatchBuilder::new(0)
                    .compression(codec)
                    .record(Some(b"a"), Some(b"1"))
                    .record(key, Some(b"2"))
                    .build()
            };
            let keyed = batch(Some(b"b"));
            let headers = validate_batches(&keyed, MAX).expect("valid");
            assert_eq!(check_keys_present(&keyed, &headers), Ok(()), "{codec}");
            let keyless = batch(None);
            let headers = validate_batches(&keyless, MAX).expect("valid");
            let err = check_keys_present(&keyless, &headers).expect_err("keyless");
            assert!(
                matches!(
                    err,
                    BatchError::InvalidRecord {
                        reason: InvalidRecordReason::NoKeyInCompactedTopic { index: 1 },
                        ..
                    }
                ),
                "{codec}: {err:?}"
            );
        }
        // Gzip-flagged records that are not gzip: refused, not stored unchecked.
        let fake = edited(build_batch(0, 0, &[(Some(b"a"), Some(b"1"))], 1), |b| {
            b[ATTRIBUTES_OFFSET + 1] |= 1;
        });
        let headers = validate_batches(&fake, MAX).expect("framing valid");
        let err = check_keys_present(&fake, &headers).expect_err("not gzip");
        assert_eq!(err.error_code(), INVALID_RECORD);
    }

    fn code(result: Result<Vec<BatchHeader>, BatchError>) -> i16 {
        result.map(|_| 0).unwrap_or_else(|e| e.error_code())
    }

    #[test]
    fn several_valid_batches_back_to_back_validate_in_order() {
        let mut buf = three_records();
        buf.extend(build_batch(0, 0, &[(None, Some(b"x"))], 5));
        let headers = validate_batches(&buf, MAX).expect("valid");
        assert_eq!(headers.iter().map(|h| h.record_count).collect::<Vec<_>>(), vec![3, 1]);
        assert_eq!(headers.iter().map(BatchHeader::size_in_bytes).sum::<usize>(), buf.len());
    }

    #[test]
    fn an_empty_record_set_holds_no_batches() {
        // Kafka rejects an empty produce record set (INVALID_RECORD); that is the produce
        // handler's call, since a follower's empty fetch is fine.
        assert_eq!(validate_batches(&[], MAX), Ok(vec![]));
    }

    #[test]
    fn a_flipped_byte_is_corrupt_message() {
        let mut buf = three_records();
        let last = buf.len() - 1;
        buf[last] ^= 0x80;
        assert!(matches!(
            validate_batches(&buf, MAX),
            Err(BatchError::Corrupt {
                source: ScanError::BadCrc { .. }
            })
        ));
        assert_eq!(code(validate_batches(&buf, MAX)), CORRUPT_MESSAGE);
    }

    #[test]
    fn trailing_bytes_after_the_last_batch_are_corrupt_message() {
        let mut buf = three_records();
        let first = buf.len();
        buf.extend([0u8; 5]);
        assert_eq!(
            validate_batches(&buf, MAX),
            Err(BatchError::Corrupt {
                source: ScanError::Truncated { position: first }
            })
        );
        let mut cut = three_records();
        cut.pop();
        assert!(matches!(
            validate_batches(&cut, MAX),
            Err(BatchError::Corrupt {
                source: ScanError::Truncated { .. }
            })
        ));
    }

    #[test]
    fn a_length_smaller_than_the_header_is_corrupt_message() {
        let buf = edited(three_records(), |b| {
            b[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&10i32.to_be_bytes())
        });
        assert_eq!(
            validate_batches(&buf, MAX),
            Err(BatchError::Corrupt {
                source: ScanError::BadLength {
                    position: 0,
                    length: 10
                }
            })
        );
    }

    #[test]
    fn a_batch_over_the_limit_is_message_too_large() {
        let buf = three_records();
        let err = validate_batches(&buf, buf.len() - 1).expect_err("too large");
        assert_eq!(
            err,
            BatchError::TooLarge {
                position: 0,
                size: buf.len(),
                max: buf.len() - 1
            }
        );
        assert_eq!(err.error_code(), MESSAGE_TOO_LARGE);
        assert!(validate_batches(&buf, buf.len()).is_ok(), "the limit is inclusive");
    }

    #[test]
    fn legacy_magic_is_unsupported_for_message_format_and_others_are_corrupt() {
        for magic in [0u8, 1] {
            let buf = edited(three_records(), |b| b[MAGIC_OFFSET] = magic);
            let err = validate_batches(&buf, MAX).expect_err("legacy");
            assert_eq!(
                err,
                BatchError::UnsupportedForMessageFormat {
                    position: 0,
                    magic: magic as i8
                }
            );
            assert_eq!(err.error_code(), UNSUPPORTED_FOR_MESSAGE_FORMAT);
        }
        let buf = edited(three_records(), |b| b[MAGIC_OFFSET] = 9);
        assert_eq!(code(validate_batches(&buf, MAX)), CORRUPT_MESSAGE);
    }

    #[test]
    fn an_unknown_codec_is_unsupported_compression_type() {
        let buf = edited(three_records(), |b| b[ATTRIBUTES_OFFSET + 1] |= 0x05);
        let err = validate_batches(&buf, MAX).expect_err("unknown codec");
        assert_eq!(err, BatchError::UnknownCompression { position: 0, codec: 5 });
        assert_eq!(err.error_code(), UNSUPPORTED_COMPRESSION_TYPE);
    }

    #[test]
    fn a_record_count_that_disagrees_with_the_offset_range_is_invalid_record() {
        let buf = edited(three_records(), |b| {
            b[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4].copy_from_slice(&5i32.to_be_bytes())
        });
        let err = validate_batches(&buf, MAX).expect_err("mismatch");
        assert_eq!(
            err,
            BatchError::InvalidRecord {
                position: 0,
                base_offset: 0,
                reason: InvalidRecordReason::CountMismatch {
                    record_count: 3,
                    last_offset_delta: 5
                }
            }
        );
        assert_eq!(err.error_code(), INVALID_RECORD);

        let empty = edited(three_records(), |b| {
            b[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&0i32.to_be_bytes());
            b[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4].copy_from_slice(&(-1i32).to_be_bytes());
        });
        assert!(matches!(
            validate_batches(&empty, MAX),
            Err(BatchError::InvalidRecord {
                reason: InvalidRecordReason::NoRecords { record_count: 0 },
                ..
            })
        ));
    }

    #[test]
    fn fewer_records_than_the_header_claims_is_invalid_record() {
        let buf = edited(three_records(), |b| {
            b[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&4i32.to_be_bytes());
            b[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4].copy_from_slice(&3i32.to_be_bytes());
        });
        let err = validate_batches(&buf, MAX).expect_err("short");
        assert!(
            matches!(
                err,
                BatchError::InvalidRecord {
                    reason: InvalidRecordReason::Record {
                        index: 3,
                        error: RecordError::Varint(_)
                    },
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn more_bytes_than_the_records_use_is_invalid_record() {
        let buf = edited(three_records(), |b| {
            b.push(0);
            let length = (b.len() - 12) as i32;
            b[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
        });
        assert!(matches!(
            validate_batches(&buf, MAX),
            Err(BatchError::InvalidRecord {
                reason: InvalidRecordReason::TrailingBytes { trailing: 1 },
                ..
            })
        ));
    }

    #[test]
    fn offset_deltas_out_of_order_are_invalid_record() {
        let buf = BatchBuilder::new(0)
            .record(None, Some(b"a"))
            .record(None, Some(b"b"))
            .record(None, Some(b"c"))
            .offset_deltas(&[0, 2, 1])
            .build();
        let err = validate_batches(&buf, MAX).expect_err("gap");
        assert!(matches!(
            err,
            BatchError::InvalidRecord {
                reason: InvalidRecordReason::OffsetDelta {
                    index: 1,
                    offset_delta: 2
                },
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "invalid record batch at byte 0 (base offset 0): record 1 has offset delta 2, expected 1"
        );
    }

    #[test]
    fn a_record_length_past_the_batch_end_is_invalid_record_not_a_panic() {
        // The first record's length varint is the first byte after the header; claim 63 bytes.
        let buf = edited(three_records(), |b| b[RECORDS_OFFSET] = 126);
        assert!(matches!(
            validate_batches(&buf, MAX),
            Err(BatchError::InvalidRecord {
                reason: InvalidRecordReason::Record {
                    index: 0,
                    error: RecordError::Overrun {
                        field: RecordField::Length,
                        length: 63,
                        ..
                    }
                },
                ..
            })
        ));
    }

    #[test]
    fn compressed_batches_are_checked_on_the_header_only() {
        // Garbage "compressed" payload with a valid CRC and consistent counts is accepted as sent.
        let buf = edited(three_records(), |b| {
            b[ATTRIBUTES_OFFSET + 1] |= 0x01;
            b[RECORDS_OFFSET] = 0xff;
        });
        let headers = validate_batches(&buf, MAX).expect("header-only check");
        assert_eq!(headers[0].compression(), Compression::Gzip);
    }

    /// Reproducible xorshift, so this runs without a fuzzing dependency.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn arbitrary_and_mutated_bytes_never_panic_any_reader() {
        use crate::protocol::record_batch::{valid_prefix_len, RecordIter};
        use crate::protocol::test_support::TestRecord;
        let mut base = three_records();
        base.extend(
            BatchBuilder::new(3)
                .record_with(TestRecord {
                    key: Some(b"k"),
                    value: None,
                    headers: vec![(b"h", Some(b"v"))],
                    timestamp_delta: 9,
                })
                .build(),
        );
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let (mut record_errors, mut accepted) = (0, 0);
        for round in 0..20_000 {
            let mut buf = if round % 4 == 3 {
                (0..next(&mut state) % 200).map(|_| next(&mut state) as u8).collect()
            } else {
                base.clone()
            };
            for _ in 0..1 + next(&mut state) % 4 {
                if !buf.is_empty() {
                    let at = (next(&mut state) as usize) % buf.len();
                    buf[at] = next(&mut state) as u8;
                }
            }
            if round % 5 == 0 {
                buf.truncate((next(&mut state) as usize) % (buf.len() + 1));
            }
            // Re-seal the first batch's CRC half the time so the record walk is reached.
            if round % 2 == 0 && buf.len() >= RECORDS_OFFSET {
                let end = crate::protocol::record_batch::header::be_i32(&buf, LENGTH_OFFSET);
                if let Some(end) = usize::try_from(end)
                    .ok()
                    .map(|l| l + 12)
                    .filter(|&e| e >= 21 && e <= buf.len())
                {
                    let crc = compute_crc(&buf[..end]);
                    buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
                }
            }
            match validate_batches(&buf, MAX) {
                Err(BatchError::InvalidRecord {
                    reason: InvalidRecordReason::Record { .. },
                    ..
                }) => record_errors += 1,
                Ok(_) => accepted += 1,
                Err(_) => {}
            }
            let _ = valid_prefix_len(&buf);
            let _ = BatchHeader::parse(&buf);
            if let Some(section) = buf.get(RECORDS_OFFSET..) {
                let count = crate::protocol::record_batch::header::be_i32(&buf, RECORDS_COUNT_OFFSET);
                let _ = RecordIter::new(section, count).count();
            }
        }
        // Guard against the loop silently testing nothing: both outcomes must be reached.
        assert!(
            record_errors > 100 && accepted > 100,
            "record errors {record_errors}, accepted {accepted}"
        );
    }
}
