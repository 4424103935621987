//! The producer-state side of [`Log`] (Kafka's `UnifiedLog` calls into `ProducerStateManager`):
//! checking a leader append, loading the state at open and after truncation from the newest
//! usable `.snapshot` plus the batches after it, taking snapshots, expiring idle producers.
//! The rules themselves live in [`super::super::producer_state`].

use super::{Log, LogAppendInfo, LogError};
use crate::log::config::TimestampType;
use crate::log::producer_snapshot;
use crate::log::producer_state::{AppendOrigin, BatchMetadata, ProducerAppend, ProducerBatch, ProducerStateManager};
use crate::log::segment::SegmentIoError;
use crate::protocol::record_batch::BatchHeader;

/// What checking a leader append against the producer state decided.
pub(super) enum ProducerCheck {
    /// Append, then commit these updates.
    Append(ProducerAppend),
    /// A retry of a batch already in the log: answer with its offsets, append nothing.
    Duplicate(LogAppendInfo),
}

impl Log {
    /// The producer state (for tests and tooling).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }

    /// Checks a producer's batches (offsets as they will be assigned from `first_offset`) as
    /// Kafka's `analyzeAndValidateProducerState` does for a client append.
    pub(super) fn check_producers(
        &self,
        headers: &[BatchHeader],
        first_offset: i64,
        log_append_time: i64,
    ) -> Result<ProducerCheck, LogError> {
        let mut append = self.producers.prepare(AppendOrigin::Client);
        let mut next = first_offset;
        for header in headers {
            let first = next;
            next += i64::from(header.last_offset_delta) + 1;
            let Some(mut batch) = ProducerBatch::from_header(header) else {
                continue;
            };
            batch.first_offset = first;
            batch.last_offset = next - 1;
            if log_append_time >= 0 {
                batch.max_timestamp = log_append_time;
            }
            if let Some(dup) = self.producers.find_duplicate(&batch) {
                return Ok(ProducerCheck::Duplicate(self.duplicate_info(dup)));
            }
            append.append(&self.producers, &batch).map_err(LogError::Producer)?;
        }
        Ok(ProducerCheck::Append(append))
    }

    fn duplicate_info(&self, dup: BatchMetadata) -> LogAppendInfo {
        LogAppendInfo {
            first_offset: dup.first_offset(),
            last_offset: dup.last_offset,
            max_timestamp: dup.timestamp,
            log_append_time: if self.config.timestamp_type == TimestampType::LogAppendTime {
                dup.timestamp
            } else {
                -1
            },
            record_count: 0,
            bytes: 0,
            log_start_offset: self.log_start_offset(),
        }
    }

    /// Applies a checked leader append whose batches are now written.
    pub(super) fn commit_producers(&mut self, append: ProducerAppend) {
        self.producers.commit(append);
        self.producers.update_map_end_offset(self.log_end_offset());
    }

    /// Feeds batches appended as follower (no checks: the leader judged them).
    pub(super) fn replay_producers(&mut self, headers: &[BatchHeader]) {
        for batch in headers.iter().filter_map(ProducerBatch::from_header) {
            self.producers.replay(&batch);
        }
        self.producers.update_map_end_offset(self.log_end_offset());
    }

    /// Rebuilds the producer state for the current log: drops snapshots past the log end (or
    /// before its start), loads the newest readable one (a corrupt one is deleted, as Kafka's
    /// `loadFromSnapshot` does) and replays every batch after it.
    ///
    /// After a clean shutdown that left no snapshot at all (a log written before producer state
    /// existed), nothing is replayed and the state starts empty at the log end, as Kafka's
    /// `rebuildProducerState` does for upgrades: a full scan of every segment at each start
    /// would cost more than the producers it finds (they are accepted afresh at any sequence).
    pub(super) fn load_producer_state(&mut self, now_ms: i64, clean_shutdown: bool) -> Result<(), LogError> {
        let (start, end) = (self.log_start_offset, self.log_end_offset());
        let expiration = self.config.producer_id_expiration_ms;
        let dir = self.dir.clone();
        let cleaned = producer_snapshot::delete_where(&dir, |o| o > end || o < start);
        self.io(cleaned.map_err(|e| snapshot_io("delete", &dir, -1, e)))?;
        let listed = producer_snapshot::list(&dir).map_err(|e| snapshot_io("list", &dir, -1, e));
        let mut offsets = self.io(listed)?;
        if offsets.is_empty() && clean_shutdown {
            self.producers = ProducerStateManager::new(start);
            self.producers.update_map_end_offset(end);
            return Ok(());
        }
        let mut state = ProducerStateManager::new(start);
        while let Some(offset) = offsets.pop() {
            let read = producer_snapshot::read(&dir, offset).map_err(|e| snapshot_io("read", &dir, offset, e));
            match producer_snapshot::decode(&self.io(read)?) {
                Ok(entries) => {
                    state = ProducerStateManager::from_snapshot(entries, offset, now_ms, expiration);
                    break;
                }
                Err(e) => {
                    tracing::warn!(tp = %self.tp, offset, error = %e, "deleting an unusable producer snapshot");
                    let removed = std::fs::remove_file(producer_snapshot::path(&dir, offset));
                    self.io(removed.map_err(|e| snapshot_io("delete", &dir, offset, e)))?;
                }
            }
        }
        let from = state.map_end_offset();
        self.producers = state;
        self.replay_producers_from(from)?;
        self.producers.remove_expired(now_ms, expiration);
        Ok(())
    }

    /// Replays the batches from `from` to the log end into the producer state, reading only
    /// their headers.
    fn replay_producers_from(&mut self, from: i64) -> Result<(), LogError> {
        let end = self.log_end_offset();
        let from = from.max(self.log_start_offset);
        let producers = &mut self.producers;
        let mut walked = Ok(());
        for (_, seg) in self
            .segments
            .range(..=from)
            .next_back()
            .into_iter()
            .chain(self.segments.range(from + 1..))
        {
            if seg.next_offset() <= from {
                continue;
            }
            walked = seg.for_each_header_from(from, |header| {
                if let Some(batch) = ProducerBatch::from_header(header) {
                    producers.replay(&batch);
                }
            });
            if walked.is_err() {
                break;
            }
        }
        self.io(walked)?;
        self.producers.update_map_end_offset(end);
        Ok(())
    }

    /// Writes a snapshot at the log end if the state has moved since the last one (Kafka's
    /// `takeSnapshot`: at segment roll and on clean shutdown).
    pub fn take_producer_snapshot(&mut self) -> Result<(), LogError> {
        self.write_producer_snapshot(true)
    }

    /// The roll's snapshot: written now, fsynced by the roll's background flush (which takes
    /// `unsynced_snapshots`), so the append that rolls pays no fsync for it either.
    pub(super) fn take_producer_snapshot_unsynced(&mut self) -> Result<(), LogError> {
        self.write_producer_snapshot(false)
    }

    fn write_producer_snapshot(&mut self, sync: bool) -> Result<(), LogError> {
        self.check_online()?;
        let end = self.log_end_offset();
        if !self.producers.needs_snapshot() || self.producers.map_end_offset() != end {
            return Ok(());
        }
        let bytes = producer_snapshot::encode(self.producers.entries().into_iter());
        let written = if sync {
            producer_snapshot::write(&self.dir, end, &bytes)
        } else {
            producer_snapshot::write_unsynced(&self.dir, end, &bytes).map(drop)
        };
        self.io(written.map_err(|e| snapshot_io("write", &self.dir, end, e)))?;
        if !sync {
            self.unsynced_snapshots.push(end);
        }
        self.producers.snapshot_taken(end);
        Ok(())
    }

    /// Removes the snapshots below the log start offset (their segments are gone).
    pub(super) fn delete_snapshots_before_log_start(&mut self) -> Result<(), LogError> {
        let start = self.log_start_offset;
        let deleted = producer_snapshot::delete_where(&self.dir, |o| o < start)
            .map_err(|e| snapshot_io("delete", &self.dir, -1, e));
        self.io(deleted)
    }

    /// Forgets all producer state and its snapshots (the log restarts empty at `offset`).
    pub(super) fn clear_producer_state(&mut self, offset: i64) -> Result<(), LogError> {
        self.producers.truncate_fully_and_start_at(offset);
        let deleted =
            producer_snapshot::delete_where(&self.dir, |_| true).map_err(|e| snapshot_io("delete", &self.dir, -1, e));
        self.io(deleted)
    }

    /// Drops producers idle for `producer.id.expiration.ms`; returns how many.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        self.producers
            .remove_expired(now_ms, self.config.producer_id_expiration_ms)
    }
}

fn snapshot_io(op: &'static str, dir: &std::path::Path, offset: i64, source: std::io::Error) -> SegmentIoError {
    SegmentIoError {
        op,
        path: if offset >= 0 {
            producer_snapshot::path(dir, offset)
        } else {
            dir.to_path_buf()
        },
        source,
    }
}
