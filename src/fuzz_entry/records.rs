//! Record batches as a produce request, a follower's fetch or a log recovery sees them, and the
//! codecs that inflate a compressed batch's records section (with its output cap).

use crate::log::timestamp_search::max_timestamp_record;
use crate::protocol::record_batch::codec::decompress_capped;
use crate::protocol::record_batch::header::{compute_crc, CRC_OFFSET};
use crate::protocol::record_batch::recompress::recompress_batches;
use crate::protocol::record_batch::validate::{check_keys_present, validate_replicated_batches};
use crate::protocol::record_batch::{
    valid_prefix_len, validate_batches, BatchHeader, BatchScanner, Compression, RecordIter, LOG_OVERHEAD,
    RECORDS_OFFSET,
};

/// `message.max.bytes`, rounded up.
const MAX_BATCH_BYTES: usize = 1 << 20;
/// The inflation cap the targets run with: the broker's 256 MiB cap, scaled down so one input
/// stays fast; the same code path decides.
const FUZZ_INFLATE_LIMIT: usize = 1 << 20;

/// Back-to-back batches through every reader: produce validation (and the compacted-topic key
/// check and recompression that follow it), follower validation, the scanner, and the records
/// of each batch. Run twice: as given, then with every batch's CRC recomputed, so that mutations
/// reach past the checksum into the headers and records.
pub fn record_batches(data: &[u8]) {
    read_batches(data);
    let mut fixed = data.to_vec();
    fix_crcs(&mut fixed);
    read_batches(&fixed);
}

/// The first byte picks a codec; the rest is a records section to inflate under the cap.
pub fn decompress(data: &[u8]) {
    let Some((codec, section)) = super::select(data, 5) else {
        return;
    };
    let codec = Compression::from_id(codec);
    if let Ok(out) = decompress_capped(codec, section, FUZZ_INFLATE_LIMIT) {
        assert!(
            out.len() <= FUZZ_INFLATE_LIMIT.max(section.len()),
            "inflated past the cap"
        );
        RecordIter::new(&out, i32::MAX).for_each(drop);
    }
}

fn read_batches(buf: &[u8]) {
    if let Ok(headers) = validate_batches(buf, MAX_BATCH_BYTES) {
        let _ = check_keys_present(buf, &headers);
        for target in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            if let Ok(Some(out)) = recompress_batches(buf, &headers, target) {
                assert!(
                    validate_batches(&out, usize::MAX).is_ok(),
                    "recompressed batches are invalid"
                );
            }
        }
    }
    let _ = validate_replicated_batches(buf);
    let (valid, _) = valid_prefix_len(buf);
    assert!(valid <= buf.len());
    for (position, header) in BatchScanner::without_crc(buf).flatten() {
        let Some(batch) = buf.get(position..position + header.size_in_bytes()) else {
            panic!("the scanner accepted a batch past the buffer's end");
        };
        read_records(batch, &header);
        max_timestamp_record(batch, &header);
    }
}

fn read_records(batch: &[u8], header: &BatchHeader) {
    let section = batch.get(RECORDS_OFFSET..).unwrap_or(&[]);
    match header.compression() {
        Compression::None => RecordIter::new(section, header.record_count).for_each(drop),
        codec => {
            if let Ok(out) = decompress_capped(codec, section, FUZZ_INFLATE_LIMIT) {
                RecordIter::new(&out, header.record_count).for_each(drop);
            }
        }
    }
}

/// Rewrites the CRC of every complete frame (length prefix permitting) in place.
fn fix_crcs(buf: &mut [u8]) {
    let mut position = 0;
    while let Some(length) = buf.get(position + 8..position + LOG_OVERHEAD) {
        let length = i32::from_be_bytes([length[0], length[1], length[2], length[3]]);
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        let end = position + LOG_OVERHEAD + length;
        let Some(batch) = buf.get_mut(position..end) else {
            return;
        };
        if batch.len() > CRC_OFFSET + 4 {
            let crc = compute_crc(batch);
            batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        }
        position = end;
    }
}
