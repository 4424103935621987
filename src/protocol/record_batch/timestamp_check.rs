//! `message.timestamp.before.max.ms` / `after.max.ms` (Kafka's `LogValidator.validateTimestamp`):
//! on a CreateTime topic every record's timestamp must lie within
//! `[now - before, now + after]` of the broker's clock, else the produce fails with
//! INVALID_TIMESTAMP. Records without a timestamp (-1) pass; compressed batches are inflated
//! to see their records. Nothing is walked while both limits are at Kafka's default (none).

use super::codec::decompress;
use super::header::{BatchHeader, NO_TIMESTAMP, RECORDS_OFFSET};
use super::record::RecordIter;
use super::validate::{BatchError, InvalidRecordReason};

/// Whether `timestamp` is acceptable at `now` (Kafka's `recordHasInvalidTimestamp`, negated).
pub fn timestamp_in_range(timestamp: i64, now: i64, before_max_ms: i64, after_max_ms: i64) -> bool {
    let diff = i128::from(now) - i128::from(timestamp);
    diff <= i128::from(before_max_ms) && -diff <= i128::from(after_max_ms)
}

/// Checks every record of the validated `buf` (described by `headers`) against the limits.
pub fn check_timestamps(
    buf: &[u8],
    headers: &[BatchHeader],
    now: i64,
    before_max_ms: i64,
    after_max_ms: i64,
) -> Result<(), BatchError> {
    if before_max_ms == i64::MAX && after_max_ms == i64::MAX {
        return Ok(());
    }
    let mut position = 0;
    for header in headers {
        let batch = buf.get(position..position + header.size_in_bytes()).unwrap_or(&[]);
        let section = batch.get(RECORDS_OFFSET..).unwrap_or(&[]);
        let invalid_record = |reason| BatchError::InvalidRecord {
            position,
            base_offset: header.base_offset,
            reason,
        };
        let records = decompress(header.compression(), section)
            .map_err(|_| invalid_record(InvalidRecordReason::NotInflatable))?;
        for (index, record) in (0..header.record_count).zip(RecordIter::new(&records, header.record_count)) {
            let record = record.map_err(|error| invalid_record(InvalidRecordReason::Record { index, error }))?;
            let timestamp = if header.base_timestamp == NO_TIMESTAMP {
                NO_TIMESTAMP
            } else {
                header.base_timestamp.saturating_add(record.timestamp_delta)
            };
            if timestamp != NO_TIMESTAMP && !timestamp_in_range(timestamp, now, before_max_ms, after_max_ms) {
                return Err(BatchError::InvalidTimestamp {
                    position,
                    index,
                    timestamp,
                    earliest: now.saturating_sub(before_max_ms),
                    latest: now.saturating_add(after_max_ms),
                });
            }
        }
        position += header.size_in_bytes();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::error_codes::INVALID_TIMESTAMP;
    use crate::protocol::record_batch::validate::validate_batches;
    use crate::protocol::record_batch::Compression;
    use crate::protocol::test_support::{build_batch, BatchBuilder};

    #[test]
    fn the_window_is_inclusive_on_both_sides() {
        assert!(timestamp_in_range(900, 1000, 100, 0));
        assert!(!timestamp_in_range(899, 1000, 100, 0));
        assert!(timestamp_in_range(1050, 1000, 0, 50));
        assert!(!timestamp_in_range(1051, 1000, 0, 50));
        assert!(timestamp_in_range(0, i64::MAX, i64::MAX, 0));
    }

    #[test]
    fn a_record_outside_the_window_is_invalid_timestamp() {
        let now = 1_700_000_000_000;
        let fine = build_batch(0, -1, &[(None, Some(b"v"))], now - 500);
        let headers = validate_batches(&fine, 1 << 20).expect("valid");
        assert_eq!(check_timestamps(&fine, &headers, now, 1_000, 1_000), Ok(()));
        let old = build_batch(0, -1, &[(None, Some(b"v"))], now - 5_000);
        let headers = validate_batches(&old, 1 << 20).expect("valid");
        let err = check_timestamps(&old, &headers, now, 1_000, i64::MAX).expect_err("too old");
        assert_eq!(err.error_code(), INVALID_TIMESTAMP);
        assert_eq!(check_timestamps(&old, &headers, now, i64::MAX, i64::MAX), Ok(()));
        // The future side, inside a compressed batch.
        let ahead = BatchBuilder::new(0)
            .compression(Compression::Gzip)
            .timestamp(now + 10_000)
            .record(None, Some(b"v"))
            .build();
        let headers = validate_batches(&ahead, 1 << 20).expect("valid");
        let err = check_timestamps(&ahead, &headers, now, i64::MAX, 1_000).expect_err("too new");
        assert_eq!(err.error_code(), INVALID_TIMESTAMP);
        assert_eq!(check_timestamps(&ahead, &headers, now, 0, 20_000), Ok(()));
    }
}
