//! Log compaction for `cleanup.policy=compact` logs (Kafka's log cleaner, reference §4.4).
//!
//! | file | owns |
//! |---|---|
//! | `policy` | pure decisions: cleanable range, dirtiness, the filthiest log, segment groups, record retention, producers' last batches |
//! | `rewrite` | the key → latest offset map and the byte-level rewrite of one batch |
//! | `swap` | `.cleaned` → `.swap` → `.log` replacement and its crash recovery on load |
//! | `log_cleaner` | the cleaner threads, the per-log cleaning I/O, `cleaner-offset-checkpoint`, metrics |
//!
//! Tombstones follow KIP-534 (Kafka 3.1+): the first cleaning that keeps a tombstone stamps its
//! batch with a delete horizon (`now + delete.retention.ms`, attribute bit 6, in the base
//! timestamp field); the first cleaning after the horizon drops it, and the cleaner schedules
//! that cleaning itself. Compressed batches (gzip, snappy, lz4, zstd) are inflated to map their
//! keys and filter their records, and the records they keep are compressed again with the same
//! codec (Kafka's `MemoryRecords.filterTo`); a batch whose records cannot be inflated is kept
//! whole.
//!
//! Producer state survives compaction as in Kafka: the last batch of each producer id with state
//! in the log's producer state (its map taken when the cleaning starts) stays, empty if all its
//! records go, and rewritten batches keep their last offset delta, so replaying the cleaned log
//! (a new follower, a restart without a snapshot) rebuilds every producer's last sequence.
//! Transactions (control batches, aborted data) are out of scope: kastle has none.

pub mod log_cleaner;
pub mod policy;
pub mod rewrite;
pub mod swap;

pub use log_cleaner::{CleanStats, CleanerConfig, LogCleaner, CLEANER_OFFSET_CHECKPOINT};

#[cfg(test)]
mod tests;
