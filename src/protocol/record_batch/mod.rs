//! Kafka's RecordBatch v2 (magic 2) — the unit a producer sends, a segment stores and a fetch
//! returns, byte for byte (`DefaultRecordBatch.java`, `DefaultRecord.java`). No I/O here.
//!
//! | file | owns |
//! |---|---|
//! | `codec` | inflating and deflating a compressed batch's records section (gzip, snappy, lz4, zstd) |
//! | `header` | byte layout constants, [`BatchHeader`], CRC-32C, the leader's rewrites (in place, or of a header copy) |
//! | `scanner` | [`BatchScanner`]: walk back-to-back batches, stop at the first invalid byte with a [`ScanError`] |
//! | `validate` | [`validate_batches`] for produce, [`BatchError`] and its Kafka error codes |
//! | `recompress` | a topic's `compression.type` applied to produced batches |
//! | `timestamp_check` | `message.timestamp.before/after.max.ms` against the broker's clock |
//! | `record` | [`Record`] decoding (of an uncompressed or inflated records section) |
//! | `varint` | zig-zag varint/varlong readers and writers |

pub mod codec;
pub mod header;
pub mod recompress;
pub mod record;
pub mod scanner;
pub mod timestamp_check;
pub mod validate;
pub mod varint;

#[cfg(test)]
mod interop_tests;

pub use header::{
    compute_crc, increment_sequence, leader_header, set_base_offset, set_log_append_time, set_partition_leader_epoch,
    BatchHeader, Compression, TimestampType, LOG_OVERHEAD, RECORDS_OFFSET, RECORD_BATCH_OVERHEAD,
};
pub use record::{Record, RecordError, RecordField, RecordIter};
pub use scanner::{scan_batch, valid_prefix_len, BatchScanner, ScanError};
pub use validate::{validate_batches, BatchError, InvalidRecordReason};
pub use varint::VarintError;
