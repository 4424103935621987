//! A topic's `compression.type` applied to produced batches (Kafka's `LogValidator`:
//! `BrokerCompressionType.targetCompression`, then `validateMessagesAndAssignOffsetsCompressed`
//! when the target differs from the producer's codec). `producer` keeps each batch as sent; any
//! other value re-codes the records section of every batch whose codec differs — inflated with
//! the batch's codec, deflated with the topic's — and rewrites the batch's length, codec bits and
//! CRC. Records, offsets, timestamps and the producer fields stay as they were. Pure.

use super::codec::{compress, decompress};
use super::header::{
    compute_crc, BatchHeader, Compression, ATTRIBUTES_OFFSET, COMPRESSION_CODEC_MASK, CRC_OFFSET, LENGTH_OFFSET,
    LOG_OVERHEAD, RECORDS_OFFSET,
};
use super::validate::{check_records, BatchError, InvalidRecordReason};

/// Kafka's topic-level `compression.type` values: `producer` (None: keep the producer's codec),
/// `uncompressed`, `gzip`, `snappy`, `lz4`, `zstd`. `Err` for anything else.
pub fn parse_compression_type(value: &str) -> Result<Option<Compression>, String> {
    match value.trim() {
        "producer" => Ok(None),
        "uncompressed" => Ok(Some(Compression::None)),
        "gzip" => Ok(Some(Compression::Gzip)),
        "snappy" => Ok(Some(Compression::Snappy)),
        "lz4" => Ok(Some(Compression::Lz4)),
        "zstd" => Ok(Some(Compression::Zstd)),
        other => Err(format!("unknown compression.type {other}")),
    }
}

/// The batches of `buf` (described by `headers`, as `validate_batches` returned them) with every
/// batch not already in `target` re-coded into it; `None` when every batch already is.
pub fn recompress_batches(
    buf: &[u8],
    headers: &[BatchHeader],
    target: Compression,
) -> Result<Option<Vec<u8>>, BatchError> {
    if headers.iter().all(|h| h.compression() == target) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(buf.len());
    let mut position = 0;
    for header in headers {
        let size = header.size_in_bytes();
        let batch = buf.get(position..position + size).unwrap_or(&[]);
        if header.compression() == target {
            out.extend_from_slice(batch);
        } else {
            out.extend(recode(batch, header, target, position)?);
        }
        position += size;
    }
    Ok(Some(out))
}

/// One batch's records section, moved from its codec to `target`.
fn recode(batch: &[u8], header: &BatchHeader, target: Compression, position: usize) -> Result<Vec<u8>, BatchError> {
    let invalid = |reason| BatchError::InvalidRecord {
        position,
        base_offset: header.base_offset,
        reason,
    };
    let section = batch.get(RECORDS_OFFSET..).unwrap_or(&[]);
    let inflated =
        decompress(header.compression(), section).map_err(|_| invalid(InvalidRecordReason::NotInflatable))?;
    // Records are re-coded as they are, so they must decode (Kafka's LogValidator inflates and
    // checks every record when it recompresses); found by the record_batches fuzz target.
    check_records(&inflated, header.record_count).map_err(invalid)?;
    let deflated = compress(target, &inflated).map_err(|_| invalid(InvalidRecordReason::NotInflatable))?;
    let mut out = Vec::with_capacity(RECORDS_OFFSET + deflated.len());
    out.extend_from_slice(batch.get(..RECORDS_OFFSET).unwrap_or(&[]));
    out.extend_from_slice(&deflated);
    let length = (out.len() - LOG_OVERHEAD) as i32;
    out[LENGTH_OFFSET..LENGTH_OFFSET + 4].copy_from_slice(&length.to_be_bytes());
    let attributes = (header.attributes & !COMPRESSION_CODEC_MASK) | i16::from(target.id());
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::validate::validate_batches;
    use crate::protocol::record_batch::RecordIter;
    use crate::protocol::test_support::BatchBuilder;

    const MAX: usize = 1 << 20;

    fn values(buf: &[u8]) -> Vec<(Compression, Vec<Vec<u8>>)> {
        let headers = validate_batches(buf, MAX).expect("valid");
        let mut position = 0;
        headers
            .iter()
            .map(|h| {
                let batch = &buf[position..position + h.size_in_bytes()];
                position += h.size_in_bytes();
                let records = decompress(h.compression(), &batch[RECORDS_OFFSET..]).expect("inflate");
                let vals = RecordIter::new(&records, h.record_count)
                    .map(|r| r.expect("record").value.map(|v| v.to_vec()).unwrap_or_default())
                    .collect();
                (h.compression(), vals)
            })
            .collect()
    }

    #[test]
    fn batches_in_another_codec_are_recoded_and_keep_their_records() {
        let mut buf = BatchBuilder::new(0)
            .record(Some(b"k"), Some(b"one"))
            .record(None, Some(b"two"))
            .build();
        buf.extend(
            BatchBuilder::new(0)
                .compression(Compression::Lz4)
                .record(None, Some(b"three"))
                .build(),
        );
        let headers = validate_batches(&buf, MAX).expect("valid");
        for target in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Zstd,
            Compression::None,
        ] {
            let out = recompress_batches(&buf, &headers, target)
                .expect("recode")
                .expect("changed");
            let got = values(&out);
            assert!(got.iter().all(|(c, _)| *c == target), "{target}");
            let vals: Vec<Vec<Vec<u8>>> = got.into_iter().map(|(_, v)| v).collect();
            assert_eq!(
                vals,
                vec![vec![b"one".to_vec(), b"two".to_vec()], vec![b"three".to_vec()]]
            );
            let recoded = validate_batches(&out, MAX).expect("valid");
            for (before, after) in headers.iter().zip(&recoded) {
                assert_eq!(
                    (
                        before.max_timestamp,
                        before.record_count,
                        before.producer_id,
                        before.timestamp_type()
                    ),
                    (
                        after.max_timestamp,
                        after.record_count,
                        after.producer_id,
                        after.timestamp_type()
                    )
                );
            }
        }
        let lz4_only = BatchBuilder::new(0)
            .compression(Compression::Lz4)
            .record(None, Some(b"x"))
            .build();
        let headers = validate_batches(&lz4_only, MAX).expect("valid");
        assert_eq!(recompress_batches(&lz4_only, &headers, Compression::Lz4), Ok(None));
    }

    #[test]
    fn compression_type_values_are_kafkas() {
        assert_eq!(parse_compression_type("producer"), Ok(None));
        assert_eq!(parse_compression_type("uncompressed"), Ok(Some(Compression::None)));
        assert_eq!(parse_compression_type("zstd"), Ok(Some(Compression::Zstd)));
        assert!(parse_compression_type("none").is_err());
    }
}
