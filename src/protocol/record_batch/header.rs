//! The 61-byte RecordBatch v2 header (`DefaultRecordBatch.java`): field offsets, the parsed
//! [`BatchHeader`], its CRC-32C, and the in-place rewrites a leader makes when appending.
//!
//! Layout (big-endian): baseOffset i64 @0 | batchLength i32 @8 (bytes after this field) |
//! partitionLeaderEpoch i32 @12 | magic i8 @16 | crc u32 @17 | attributes i16 @21 |
//! lastOffsetDelta i32 @23 | baseTimestamp i64 @27 | maxTimestamp i64 @35 | producerId i64 @43 |
//! producerEpoch i16 @51 | baseSequence i32 @53 | recordCount i32 @57 | records @61.
//!
//! The CRC covers attributes to the end of the batch, so baseOffset and partitionLeaderEpoch can
//! be assigned by the broker without touching it; changing the timestamp type or maxTimestamp
//! requires recomputing it. Nothing here does I/O.

use super::scanner::{read_frame, ScanError};
use super::validate::BatchError;

/// baseOffset + batchLength: the bytes in front of what `batchLength` counts (`Records.LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Size of a v2 batch header with no records (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Smallest legal `batchLength` value.
pub const MIN_BATCH_LENGTH: usize = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD;
/// Bytes needed to learn a batch's size and magic (`Records.HEADER_SIZE_UP_TO_MAGIC`).
pub const HEADER_SIZE_UP_TO_MAGIC: usize = MAGIC_OFFSET + 1;
/// The only batch format kastle reads or writes.
pub const CURRENT_MAGIC: i8 = 2;

pub const BASE_OFFSET_OFFSET: usize = 0;
pub const LENGTH_OFFSET: usize = 8;
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
pub const MAGIC_OFFSET: usize = 16;
pub const CRC_OFFSET: usize = 17;
pub const ATTRIBUTES_OFFSET: usize = 21;
pub const LAST_OFFSET_DELTA_OFFSET: usize = 23;
pub const BASE_TIMESTAMP_OFFSET: usize = 27;
pub const MAX_TIMESTAMP_OFFSET: usize = 35;
pub const PRODUCER_ID_OFFSET: usize = 43;
pub const PRODUCER_EPOCH_OFFSET: usize = 51;
pub const BASE_SEQUENCE_OFFSET: usize = 53;
pub const RECORDS_COUNT_OFFSET: usize = 57;
pub const RECORDS_OFFSET: usize = 61;

/// Attribute bits (low byte of the attributes field).
pub const COMPRESSION_CODEC_MASK: i16 = 0x07;
pub const TIMESTAMP_TYPE_MASK: i16 = 0x08;
pub const TRANSACTIONAL_FLAG_MASK: i16 = 0x10;
pub const CONTROL_FLAG_MASK: i16 = 0x20;
pub const DELETE_HORIZON_FLAG_MASK: i16 = 0x40;

/// `RecordBatch.NO_SEQUENCE`, `NO_PRODUCER_ID`, `NO_PRODUCER_EPOCH`, `NO_TIMESTAMP`.
pub const NO_SEQUENCE: i32 = -1;
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;
pub const NO_TIMESTAMP: i64 = -1;

/// The compression codec in attribute bits 0-2. `Unknown` keeps ids no Kafka version defines so
/// a reader can report them instead of failing to parse the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
    Unknown(u8),
}

impl Compression {
    pub fn from_id(id: u8) -> Self {
        match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => Compression::Unknown(other),
        }
    }

    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
            Compression::Unknown(id) => id,
        }
    }
}

/// Kafka's `CompressionType.name`: `none`, `gzip`, `snappy`, `lz4`, `zstd`.
impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Gzip => f.write_str("gzip"),
            Compression::Snappy => f.write_str("snappy"),
            Compression::Lz4 => f.write_str("lz4"),
            Compression::Zstd => f.write_str("zstd"),
            Compression::Unknown(id) => write!(f, "unknown({id})"),
        }
    }
}

/// Attribute bit 3: who set the timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// Kafka's `TimestampType.toString`: `CreateTime` / `LogAppendTime`.
impl std::fmt::Display for TimestampType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        })
    }
}

/// Every field of a v2 batch header, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Bytes after the length field; at least [`MIN_BATCH_LENGTH`] once parsed.
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    /// First record's timestamp, or the delete horizon when [`Self::has_delete_horizon`].
    pub base_timestamp: i64,
    /// Max record timestamp (CreateTime) or the broker's append time (LogAppendTime).
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl BatchHeader {
    /// Parses the header at the start of `buf`. Only the 61 header bytes are needed (a reader can
    /// parse after a short read); the length must be at least the header's, and magic must be 2.
    /// The CRC is *not* checked here: [`super::BatchScanner`] and [`super::validate_batches`] do.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, BatchError> {
        let frame = read_frame(buf, 0)?;
        if frame.magic != CURRENT_MAGIC {
            return Err(BatchError::from_magic(0, frame.magic));
        }
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(ScanError::Truncated { position: 0 }.into());
        }
        Ok(Self::parse_unchecked(buf))
    }

    /// Reads the fields of a buffer already known to hold at least [`RECORD_BATCH_OVERHEAD`] bytes.
    pub(crate) fn parse_unchecked(buf: &[u8]) -> BatchHeader {
        BatchHeader {
            base_offset: be_i64(buf, BASE_OFFSET_OFFSET),
            batch_length: be_i32(buf, LENGTH_OFFSET),
            partition_leader_epoch: be_i32(buf, PARTITION_LEADER_EPOCH_OFFSET),
            magic: buf.get(MAGIC_OFFSET).map_or(0, |&b| b as i8),
            crc: be_i32(buf, CRC_OFFSET) as u32,
            attributes: be_i16(buf, ATTRIBUTES_OFFSET),
            last_offset_delta: be_i32(buf, LAST_OFFSET_DELTA_OFFSET),
            base_timestamp: be_i64(buf, BASE_TIMESTAMP_OFFSET),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP_OFFSET),
            producer_id: be_i64(buf, PRODUCER_ID_OFFSET),
            producer_epoch: be_i16(buf, PRODUCER_EPOCH_OFFSET),
            base_sequence: be_i32(buf, BASE_SEQUENCE_OFFSET),
            record_count: be_i32(buf, RECORDS_COUNT_OFFSET),
        }
    }

    /// Whole batch size on disk / on the wire: `LOG_OVERHEAD + batch_length`.
    pub fn size_in_bytes(&self) -> usize {
        LOG_OVERHEAD + usize::try_from(self.batch_length).unwrap_or(0)
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset.wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset the log end moves to once this batch is appended.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// `DefaultRecordBatch.lastSequence`: sequences wrap from `i32::MAX` to 0.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == NO_SEQUENCE {
            NO_SEQUENCE
        } else {
            increment_sequence(self.base_sequence, self.last_offset_delta)
        }
    }

    pub fn compression(&self) -> Compression {
        Compression::from_id((self.attributes & COMPRESSION_CODEC_MASK) as u8)
    }

    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_MASK == 0 {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        }
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_FLAG_MASK != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG_MASK != 0
    }

    /// Set by the log cleaner (KIP-534) once tombstones/markers in the batch have a removal time.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & DELETE_HORIZON_FLAG_MASK != 0
    }

    /// The delete horizon (stored in the base timestamp field) when the flag is set.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then_some(self.base_timestamp)
    }

    /// Whether the batch came from an idempotent or transactional producer.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id > NO_PRODUCER_ID
    }
}

/// `DefaultRecordBatch.incrementSequence`: sequence numbers wrap around to 0 after `i32::MAX`.
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    // Java int arithmetic wraps silently; wrapping ops keep a garbage delta from panicking.
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment.wrapping_sub(i32::MAX.wrapping_sub(sequence)).wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// CRC-32C of `batch[21..]`: the attributes field to the end of the slice. Pass exactly one batch.
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or(&[]))
}

// The three rewrites below take one whole batch as `validate_batches` accepted it. A slice too
// short for the field is left untouched rather than panicking: that is a caller bug, and no
// peer can cause it once the batch has been validated.

/// Assigns the batch's base offset (outside the CRC: no recomputation).
pub fn set_base_offset(batch: &mut [u8], offset: i64) {
    put(batch, BASE_OFFSET_OFFSET, &offset.to_be_bytes());
}

/// Stamps the leader epoch that appended the batch (outside the CRC: no recomputation).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    put(batch, PARTITION_LEADER_EPOCH_OFFSET, &epoch.to_be_bytes());
}

/// For topics with `message.timestamp.type=LogAppendTime`: sets the timestamp-type bit and
/// maxTimestamp to `timestamp` and recomputes the CRC over the batch's declared length, like
/// `DefaultRecordBatch.setMaxTimestamp` (which skips the work when nothing changes). Records keep
/// their deltas; readers use maxTimestamp for every record of a LogAppendTime batch. Bytes after
/// the declared length (the next batch) are not touched.
pub fn set_log_append_time(batch: &mut [u8], timestamp: i64) {
    let Ok(frame) = read_frame(batch, 0) else { return };
    let Some(batch) = batch.get_mut(..frame.size) else {
        return;
    };
    if frame.size < RECORD_BATCH_OVERHEAD {
        return;
    }
    let attributes = be_i16(batch, ATTRIBUTES_OFFSET);
    if attributes & TIMESTAMP_TYPE_MASK != 0 && be_i64(batch, MAX_TIMESTAMP_OFFSET) == timestamp {
        return;
    }
    put(
        batch,
        ATTRIBUTES_OFFSET,
        &(attributes | TIMESTAMP_TYPE_MASK).to_be_bytes(),
    );
    put(batch, MAX_TIMESTAMP_OFFSET, &timestamp.to_be_bytes());
    let crc = compute_crc(batch);
    put(batch, CRC_OFFSET, &crc.to_be_bytes());
}

/// The leader's rewrites of one validated batch (`batch` is exactly that batch) applied to a
/// copy of its 61-byte header only: base offset, leader epoch and, with `log_append_time`, what
/// [`set_log_append_time`] does — the CRC is then computed over the patched header tail and the
/// untouched records (`batch[61..]`). `[returned header][batch[61..]]` is byte for byte the batch
/// the three in-place rewrites would leave, without copying or mutating the records.
pub fn leader_header(
    batch: &[u8],
    base_offset: i64,
    leader_epoch: i32,
    log_append_time: Option<i64>,
) -> [u8; RECORD_BATCH_OVERHEAD] {
    let mut header = [0u8; RECORD_BATCH_OVERHEAD];
    if let Some(src) = batch.get(..RECORD_BATCH_OVERHEAD) {
        header.copy_from_slice(src);
    }
    set_base_offset(&mut header, base_offset);
    set_partition_leader_epoch(&mut header, leader_epoch);
    let Some(timestamp) = log_append_time else {
        return header;
    };
    let attributes = be_i16(&header, ATTRIBUTES_OFFSET);
    if attributes & TIMESTAMP_TYPE_MASK != 0 && be_i64(&header, MAX_TIMESTAMP_OFFSET) == timestamp {
        return header;
    }
    put(
        &mut header,
        ATTRIBUTES_OFFSET,
        &(attributes | TIMESTAMP_TYPE_MASK).to_be_bytes(),
    );
    put(&mut header, MAX_TIMESTAMP_OFFSET, &timestamp.to_be_bytes());
    let records = batch.get(RECORD_BATCH_OVERHEAD..).unwrap_or(&[]);
    let crc = crc32c::crc32c_append(compute_crc(&header), records);
    put(&mut header, CRC_OFFSET, &crc.to_be_bytes());
    header
}

fn put(batch: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = batch.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// Big-endian reads that yield 0 past the end; callers check lengths first, so this only keeps
/// an oversight from becoming a panic.
fn be<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    buf.get(at..at + N).and_then(|s| s.try_into().ok()).unwrap_or([0; N])
}

pub(crate) fn be_i16(buf: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(be(buf, at))
}

pub(crate) fn be_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(be(buf, at))
}

pub(crate) fn be_i64(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(be(buf, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header laid out by hand, field by field, so the parser is checked against the spec and
    /// not against our own builder.
    fn hand_built_header() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(42i64.to_be_bytes()); // baseOffset
        b.extend(49i32.to_be_bytes()); // batchLength: header only
        b.extend(7i32.to_be_bytes()); // partitionLeaderEpoch
        b.push(2); // magic
        b.extend(0u32.to_be_bytes()); // crc, filled below
        b.extend((0x10i16 | 0x02).to_be_bytes()); // transactional + snappy
        b.extend(4i32.to_be_bytes()); // lastOffsetDelta
        b.extend(1_000i64.to_be_bytes()); // baseTimestamp
        b.extend(2_000i64.to_be_bytes()); // maxTimestamp
        b.extend(99i64.to_be_bytes()); // producerId
        b.extend(3i16.to_be_bytes()); // producerEpoch
        b.extend(i32::MAX.to_be_bytes()); // baseSequence, to exercise wrap-around
        b.extend(5i32.to_be_bytes()); // recordCount
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    #[test]
    fn a_hand_built_header_parses_field_by_field() {
        let buf = hand_built_header();
        assert_eq!(buf.len(), RECORD_BATCH_OVERHEAD);
        let h = BatchHeader::parse(&buf).expect("valid header");
        assert_eq!(h.base_offset, 42);
        assert_eq!(h.batch_length, 49);
        assert_eq!(h.partition_leader_epoch, 7);
        assert_eq!(h.magic, 2);
        assert_eq!(h.crc, compute_crc(&buf));
        assert_eq!(h.last_offset_delta, 4);
        assert_eq!((h.base_timestamp, h.max_timestamp), (1_000, 2_000));
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence, h.record_count),
            (99, 3, i32::MAX, 5)
        );
        assert_eq!(h.size_in_bytes(), 61);
        assert_eq!((h.last_offset(), h.next_offset()), (46, 47));
        assert_eq!(h.compression(), Compression::Snappy);
        assert_eq!(h.timestamp_type(), TimestampType::CreateTime);
        assert!(h.is_transactional() && !h.is_control() && !h.has_delete_horizon());
        assert_eq!(h.last_sequence(), 3, "i32::MAX + 4 wraps to 3 as in DefaultRecordBatch");
    }

    #[test]
    fn attribute_bits_map_to_kafka_flags() {
        let mut buf = hand_built_header();
        buf[21..23].copy_from_slice(&(0x08i16 | 0x20 | 0x40 | 0x04).to_be_bytes());
        let h = BatchHeader::parse(&buf).expect("valid header");
        assert_eq!(h.compression(), Compression::Zstd);
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert!(h.is_control() && h.has_delete_horizon() && !h.is_transactional());
        assert_eq!(h.delete_horizon_ms(), Some(1_000));
        buf[21..23].copy_from_slice(&0x07i16.to_be_bytes());
        let h = BatchHeader::parse(&buf).expect("valid header");
        assert_eq!(h.compression(), Compression::Unknown(7));
        assert_eq!(h.compression().to_string(), "unknown(7)");
    }

    #[test]
    fn parse_rejects_short_buffers_small_lengths_and_other_magics() {
        let buf = hand_built_header();
        assert!(matches!(
            BatchHeader::parse(&buf[..60]),
            Err(BatchError::Corrupt {
                source: ScanError::Truncated { position: 0 }
            })
        ));
        let mut small = buf.clone();
        small[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert!(matches!(
            BatchHeader::parse(&small),
            Err(BatchError::Corrupt {
                source: ScanError::BadLength { length: 48, .. }
            })
        ));
        let mut v1 = buf.clone();
        v1[16] = 1;
        assert_eq!(
            BatchHeader::parse(&v1),
            Err(BatchError::UnsupportedForMessageFormat { position: 0, magic: 1 })
        );
        let mut v3 = buf;
        v3[16] = 3;
        assert!(matches!(
            BatchHeader::parse(&v3),
            Err(BatchError::Corrupt {
                source: ScanError::BadMagic { magic: 3, .. }
            })
        ));
    }

    #[test]
    fn crc_covers_attributes_to_the_end_but_not_offset_or_epoch() {
        let mut buf = hand_built_header();
        let crc = compute_crc(&buf);
        set_base_offset(&mut buf, 1 << 40);
        set_partition_leader_epoch(&mut buf, 12);
        assert_eq!(compute_crc(&buf), crc);
        let h = BatchHeader::parse(&buf).expect("valid header");
        assert_eq!((h.base_offset, h.partition_leader_epoch), (1 << 40, 12));
        buf[60] ^= 1;
        assert_ne!(compute_crc(&buf), crc, "the record count is covered");
    }

    #[test]
    fn log_append_time_rewrite_sets_the_bit_and_max_timestamp_and_keeps_the_crc_valid() {
        let mut buf = hand_built_header();
        set_log_append_time(&mut buf, 5_555);
        let h = BatchHeader::parse(&buf).expect("valid header");
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(h.max_timestamp, 5_555);
        assert_eq!(
            h.base_timestamp, 1_000,
            "record deltas stay relative to the base timestamp"
        );
        assert_eq!(h.compression(), Compression::Snappy, "other attribute bits survive");
        assert!(h.is_transactional());
        assert_eq!(h.crc, compute_crc(&buf));
    }

    #[test]
    fn log_append_time_rewrite_only_covers_the_declared_batch() {
        let mut buf = hand_built_header();
        buf.extend_from_slice(&[0xAB; 10]); // the next batch in the same buffer
        set_log_append_time(&mut buf, 1);
        assert_eq!(BatchHeader::parse(&buf).map(|h| h.crc), Ok(compute_crc(&buf[..61])));
        assert_eq!(&buf[61..], &[0xAB; 10]);
    }

    #[test]
    fn rewrites_on_a_short_buffer_leave_it_untouched_instead_of_panicking() {
        let mut short = [0u8; 10];
        set_base_offset(&mut short, -1);
        assert_eq!(short[..8], [0xff; 8], "the base offset fits in 8 bytes");
        set_partition_leader_epoch(&mut short, -1);
        set_log_append_time(&mut short, -1);
        assert_eq!(short[8..], [0, 0]);

        let mut declared_beyond_slice = hand_built_header();
        declared_beyond_slice[8..12].copy_from_slice(&100i32.to_be_bytes());
        let before = declared_beyond_slice.clone();
        set_log_append_time(&mut declared_beyond_slice, 1);
        assert_eq!(declared_beyond_slice, before);
    }

    /// `leader_header` + the untouched records must be exactly what the in-place rewrites leave,
    /// CRC included, for CreateTime, LogAppendTime (changed and already stamped) batches.
    #[test]
    fn a_patched_header_copy_equals_the_in_place_rewrites() {
        use crate::protocol::test_support::build_batch;
        let batch = build_batch(0, -1, &[(Some(b"k"), Some(b"v1")), (None, Some(b"value two"))], 1_000);
        let mut stamped = batch.clone();
        set_log_append_time(&mut stamped, 5_000);
        for (source, log_append_time) in [
            (&batch, None),
            (&batch, Some(5_000)),
            (&stamped, Some(5_000)),
            (&stamped, Some(6_000)),
        ] {
            let mut in_place = source.clone();
            set_base_offset(&mut in_place, 77);
            set_partition_leader_epoch(&mut in_place, 4);
            if let Some(t) = log_append_time {
                set_log_append_time(&mut in_place, t);
            }
            let mut patched = leader_header(source, 77, 4, log_append_time).to_vec();
            patched.extend_from_slice(&source[RECORD_BATCH_OVERHEAD..]);
            assert_eq!(patched, in_place, "log_append_time {log_append_time:?}");
            assert_eq!(BatchHeader::parse(&patched).map(|h| h.crc), Ok(compute_crc(&patched)));
        }
    }
}
