//! Per-partition producer state of idempotent producers: Kafka's `ProducerStateManager`,
//! `ProducerStateEntry` and `ProducerAppendInfo`, without transactions.
//!
//! For each producer id the partition remembers its epoch and the metadata (sequence range,
//! offsets, timestamp) of the last [`NUM_BATCHES_TO_RETAIN`] batches it wrote. The leader uses it
//! to answer a retried batch with its original offsets instead of appending it twice, and to
//! refuse batches out of sequence or from a fenced epoch; followers and log recovery feed it the
//! batches they append so that a new leader knows what its predecessor accepted.
//!
//! Pure logic: no I/O and no clock. `now` is passed in; the [`super::log::Log`] owns the map,
//! and [`super::producer_snapshot`] reads and writes it in Kafka's `.snapshot` format.
//!
//! The rules are Kafka 3.9's (`ProducerAppendInfo.checkProducerEpoch` / `checkSequence`):
//! - a client batch with an epoch older than the producer's is refused with
//!   INVALID_PRODUCER_EPOCH (since Kafka 2.7; PRODUCER_FENCED before); replicated batches are
//!   taken as they are;
//! - a new (higher) epoch must start at sequence 0 unless the producer was unknown;
//! - in the same epoch a batch must continue the last sequence (with the wrap from
//!   `i32::MAX` to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER;
//! - a producer the partition has no state for (new, expired, or whose records were all
//!   deleted) is accepted at any sequence (KIP-360): Kafka 3.9 no longer answers
//!   UNKNOWN_PRODUCER_ID to a produce request, and neither does kastle.

use std::collections::{HashMap, VecDeque};

use crate::protocol::error_codes as ec;
use crate::protocol::record_batch::BatchHeader;

/// How many batches of each producer are remembered for duplicate detection (Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`, the client's max in-flight requests).
pub const NUM_BATCHES_TO_RETAIN: usize = 5;
pub use crate::protocol::record_batch::header::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE};

/// What a batch of a producer was: enough to answer its retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub last_seq: i32,
    pub last_offset: i64,
    /// `last_offset - first_offset` (equal to the sequence span for uncompacted batches).
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    pub fn first_seq(&self) -> i32 {
        decrement_sequence(self.last_seq, self.offset_delta)
    }

    pub fn first_offset(&self) -> i64 {
        self.last_offset - i64::from(self.offset_delta)
    }
}

/// One producer's state in one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Transactions only; kept so snapshots round-trip Kafka's files (-1 without).
    pub coordinator_epoch: i32,
    /// The max timestamp of the producer's last batch: what expiry measures idleness from.
    pub last_timestamp: i64,
    /// Transactions only (an open transaction never expires); kastle writes none.
    pub current_txn_first_offset: Option<i64>,
    /// Oldest first, at most [`NUM_BATCHES_TO_RETAIN`].
    batches: VecDeque<BatchMetadata>,
}

impl ProducerStateEntry {
    pub fn empty(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: -1,
            last_timestamp: -1,
            current_txn_first_offset: None,
            batches: VecDeque::new(),
        }
    }

    /// An entry as a snapshot stores it: only the last batch (Kafka keeps no more on disk).
    pub fn from_snapshot(
        producer_id: i64,
        producer_epoch: i16,
        last: Option<BatchMetadata>,
        last_timestamp: i64,
        coordinator_epoch: i32,
        current_txn_first_offset: Option<i64>,
    ) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch,
            coordinator_epoch,
            last_timestamp,
            current_txn_first_offset,
            batches: last.into_iter().collect(),
        }
    }

    pub fn batches(&self) -> impl Iterator<Item = &BatchMetadata> {
        self.batches.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    pub fn last_seq(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    pub fn last_data_offset(&self) -> i64 {
        self.batches.back().map_or(-1, |b| b.last_offset)
    }

    pub fn last_offset_delta(&self) -> i32 {
        self.batches.back().map_or(0, |b| b.offset_delta)
    }

    /// The retained batch with exactly this epoch and sequence range (a retry), if any.
    pub fn find_duplicate(&self, epoch: i16, first_seq: i32, last_seq: i32) -> Option<BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq() == first_seq && b.last_seq == last_seq)
            .copied()
    }

    fn maybe_update_epoch(&mut self, epoch: i16) {
        if self.producer_epoch != epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
    }

    fn push_batch(&mut self, batch: BatchMetadata) {
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
    }

    fn add_batch(&mut self, epoch: i16, batch: BatchMetadata) {
        self.maybe_update_epoch(epoch);
        self.push_batch(batch);
        self.last_timestamp = batch.timestamp;
    }

    /// Kafka's `ProducerStateEntry.update(nextEntry)`.
    fn merge(&mut self, next: ProducerStateEntry) {
        self.maybe_update_epoch(next.producer_epoch);
        self.coordinator_epoch = next.coordinator_epoch;
        self.last_timestamp = next.last_timestamp;
        self.current_txn_first_offset = next.current_txn_first_offset;
        for b in next.batches {
            self.push_batch(b);
        }
    }
}

/// Who is appending: a producer (checked) or replication / recovery (taken as written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    Client,
    Replication,
}

/// Why a producer's batch is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerStateError {
    #[error("producer {producer_id} sent epoch {epoch}, older than its current epoch {current}")]
    InvalidProducerEpoch { producer_id: i64, epoch: i16, current: i16 },
    #[error("producer {producer_id} started epoch {epoch} at sequence {first_seq}, not 0 (current epoch {current})")]
    InvalidNewEpochSequence {
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        current: i16,
    },
    #[error("out of order sequence for producer {producer_id}: {first_seq} (incoming), {last_seq} (current end)")]
    OutOfOrderSequence {
        producer_id: i64,
        first_seq: i32,
        last_seq: i32,
    },
    #[error("producer {producer_id} sent a batch without a base sequence")]
    MissingSequence { producer_id: i64 },
}

impl ProducerStateError {
    /// Kafka's response code.
    pub fn error_code(&self) -> i16 {
        match self {
            ProducerStateError::InvalidProducerEpoch { .. } => ec::INVALID_PRODUCER_EPOCH,
            ProducerStateError::InvalidNewEpochSequence { .. } | ProducerStateError::OutOfOrderSequence { .. } => {
                ec::OUT_OF_ORDER_SEQUENCE_NUMBER
            }
            // As LogValidator answers a batch without a sequence.
            ProducerStateError::MissingSequence { .. } => ec::INVALID_RECORD,
        }
    }
}

/// The producer-relevant facts of one batch, with its offsets as assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

impl ProducerBatch {
    /// The batch's producer facts, or `None` for a batch without a producer id.
    pub fn from_header(h: &BatchHeader) -> Option<Self> {
        if h.producer_id < 0 {
            return None;
        }
        Some(ProducerBatch {
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            first_offset: h.base_offset,
            last_offset: h.last_offset(),
            max_timestamp: h.max_timestamp,
        })
    }

    fn metadata(&self) -> BatchMetadata {
        BatchMetadata {
            last_seq: self.last_seq,
            last_offset: self.last_offset,
            offset_delta: (self.last_offset - self.first_offset) as i32,
            timestamp: self.max_timestamp,
        }
    }
}

/// The producer entries of one partition and the offset they describe the log up to.
#[derive(Debug, Clone, Default)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerStateEntry>,
    /// The log end offset this map reflects (Kafka's `lastMapOffset`).
    map_end_offset: i64,
    /// The offset of the newest snapshot written or loaded (Kafka's `lastSnapOffset`).
    last_snap_offset: i64,
}

impl ProducerStateManager {
    pub fn new(start_offset: i64) -> Self {
        ProducerStateManager {
            producers: HashMap::new(),
            map_end_offset: start_offset,
            last_snap_offset: start_offset,
        }
    }

    /// A map loaded from a snapshot taken at `offset`, dropping producers already expired.
    pub fn from_snapshot(entries: Vec<ProducerStateEntry>, offset: i64, now_ms: i64, expiration_ms: i64) -> Self {
        let producers = entries
            .into_iter()
            .filter(|e| !is_expired(e, now_ms, expiration_ms))
            .map(|e| (e.producer_id, e))
            .collect();
        ProducerStateManager {
            producers,
            map_end_offset: offset,
            last_snap_offset: offset,
        }
    }

    pub fn last_entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// Every entry, sorted by producer id (what a snapshot writes).
    pub fn entries(&self) -> Vec<&ProducerStateEntry> {
        let mut all: Vec<_> = self.producers.values().collect();
        all.sort_by_key(|e| e.producer_id);
        all
    }

    /// Producer id → offset of its last data batch's last record, for every producer with
    /// one (Kafka's `lastRecordsOfActiveProducers`: the cleaner keeps those batches).
    pub fn last_data_offsets(&self) -> HashMap<i64, i64> {
        self.producers
            .values()
            .filter(|e| e.last_data_offset() >= 0)
            .map(|e| (e.producer_id, e.last_data_offset()))
            .collect()
    }

    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    pub fn update_map_end_offset(&mut self, offset: i64) {
        self.map_end_offset = offset;
    }

    /// Whether the map holds offsets no snapshot has (Kafka takes a snapshot only then).
    pub fn needs_snapshot(&self) -> bool {
        self.map_end_offset > self.last_snap_offset
    }

    pub fn snapshot_taken(&mut self, offset: i64) {
        self.last_snap_offset = offset;
    }

    /// For a client batch: the retained batch it repeats, if it is a retry.
    pub fn find_duplicate(&self, batch: &ProducerBatch) -> Option<BatchMetadata> {
        self.producers
            .get(&batch.producer_id)?
            .find_duplicate(batch.producer_epoch, batch.first_seq, batch.last_seq)
    }

    /// Starts checking the batches of one append.
    pub fn prepare(&self, origin: AppendOrigin) -> ProducerAppend {
        ProducerAppend {
            origin,
            updated: HashMap::new(),
        }
    }

    /// Applies a checked append whose batches are now in the log.
    pub fn commit(&mut self, append: ProducerAppend) {
        for (pid, next) in append.updated {
            match self.producers.get_mut(&pid) {
                Some(current) => current.merge(next),
                None => {
                    self.producers.insert(pid, next);
                }
            }
        }
    }

    /// Feeds batches read back from the log (recovery, a follower's rebuild): no checks.
    pub fn replay(&mut self, batch: &ProducerBatch) {
        let mut append = self.prepare(AppendOrigin::Replication);
        // Replication origin never fails.
        let _ = append.append(self, batch);
        self.commit(append);
    }

    /// Drops producers idle for `expiration_ms` (`producer.id.expiration.ms`), as Kafka's
    /// `removeExpiredProducers`. Returns how many.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| !is_expired(e, now_ms, expiration_ms));
        before - self.producers.len()
    }

    /// Forgets everything (the log was emptied and restarts at `offset`).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) {
        self.producers.clear();
        self.map_end_offset = offset;
        self.last_snap_offset = 0;
    }
}

fn is_expired(entry: &ProducerStateEntry, now_ms: i64, expiration_ms: i64) -> bool {
    entry.current_txn_first_offset.is_none() && now_ms.saturating_sub(entry.last_timestamp) >= expiration_ms
}

/// The checked-but-uncommitted producer updates of one append (Kafka's `ProducerAppendInfo`,
/// one per producer id in the append).
#[derive(Debug)]
pub struct ProducerAppend {
    origin: AppendOrigin,
    /// Per producer: the current entry's epoch and metadata with only this append's batches.
    updated: HashMap<i64, ProducerStateEntry>,
}

impl ProducerAppend {
    /// Checks `batch` against the state (and the earlier batches of this append) and records it.
    pub fn append(&mut self, state: &ProducerStateManager, batch: &ProducerBatch) -> Result<(), ProducerStateError> {
        let pid = batch.producer_id;
        let current = state.producers.get(&pid);
        let updated = self.updated.entry(pid).or_insert_with(|| match current {
            Some(c) => ProducerStateEntry {
                batches: VecDeque::new(),
                ..c.clone()
            },
            None => ProducerStateEntry::empty(pid),
        });
        let (current_epoch, current_last_seq) =
            current.map_or((NO_PRODUCER_EPOCH, NO_SEQUENCE), |c| (c.producer_epoch, c.last_seq()));
        if self.origin == AppendOrigin::Client {
            if batch.first_seq < 0 {
                return Err(ProducerStateError::MissingSequence { producer_id: pid });
            }
            if batch.producer_epoch < updated.producer_epoch {
                return Err(ProducerStateError::InvalidProducerEpoch {
                    producer_id: pid,
                    epoch: batch.producer_epoch,
                    current: updated.producer_epoch,
                });
            }
            check_sequence(batch, updated, current_epoch, current_last_seq)?;
        } else if batch.producer_epoch < updated.producer_epoch {
            tracing::warn!(
                producer_id = pid,
                epoch = batch.producer_epoch,
                current = updated.producer_epoch,
                "replicated batch has an older producer epoch than the producer's state"
            );
        }
        updated.add_batch(batch.producer_epoch, batch.metadata());
        Ok(())
    }
}

/// Kafka's `ProducerAppendInfo.checkSequence`.
fn check_sequence(
    batch: &ProducerBatch,
    updated: &ProducerStateEntry,
    current_epoch: i16,
    current_last_seq_of_state: i32,
) -> Result<(), ProducerStateError> {
    if batch.producer_epoch != updated.producer_epoch {
        if batch.first_seq != 0 && updated.producer_epoch != NO_PRODUCER_EPOCH {
            return Err(ProducerStateError::InvalidNewEpochSequence {
                producer_id: batch.producer_id,
                epoch: batch.producer_epoch,
                first_seq: batch.first_seq,
                current: updated.producer_epoch,
            });
        }
        return Ok(());
    }
    let last_seq = if !updated.is_empty() {
        updated.last_seq()
    } else if batch.producer_epoch == current_epoch {
        current_last_seq_of_state
    } else {
        NO_SEQUENCE
    };
    // No epoch at all: the producer's records are gone (retention, DeleteRecords) or it is
    // new here; any sequence is accepted.
    if current_epoch == NO_PRODUCER_EPOCH || in_sequence(last_seq, batch.first_seq) {
        Ok(())
    } else {
        Err(ProducerStateError::OutOfOrderSequence {
            producer_id: batch.producer_id,
            first_seq: batch.first_seq,
            last_seq,
        })
    }
}

fn in_sequence(last_seq: i32, next_seq: i32) -> bool {
    i64::from(next_seq) == i64::from(last_seq) + 1 || (next_seq == 0 && last_seq == i32::MAX)
}

/// `sequence - decrement`, wrapping below 0 to `i32::MAX` as producer sequences do.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX - (decrement - sequence) + 1
    } else {
        sequence - decrement
    }
}

#[cfg(test)]
#[path = "producer_state_tests.rs"]
mod tests;
