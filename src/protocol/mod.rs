//! Wire-level formats without I/O: record batches, KIP-227 fetch session metadata; request
//! framing later.
//!
//! Everything here parses bytes a peer or a file supplied, so every read is bounds-checked and
//! every failure is a typed error, never a panic. `test_support` holds builders for tests and
//! benchmarks; the broker uses only its plain `build_batch`, to write the group coordinator's
//! uncompressed records.

pub mod authorized_operations;
pub mod error_codes;
pub mod fetch_metadata;
pub mod record_batch;
pub mod test_support;

pub use record_batch::{
    validate_batches, BatchError, BatchHeader, BatchScanner, Compression, Record, ScanError, TimestampType,
};
