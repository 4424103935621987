//! `LeaderEpochFileCache`: one partition's history of leader epochs, each with the offset of the
//! first record written in it (KIP-101), backed by `<topic>-<p>/leader-epoch-checkpoint`. It
//! answers OffsetsForLeaderEpoch and follower truncation (KIP-279: `end_offset_for`) and
//! ListOffsets' epoch lookup (`epoch_for_offset`).
//!
//! Mirrors Kafka 3.x's `LeaderEpochFileCache` rule for rule. Invariant: entries are strictly
//! ascending by epoch *and* by start offset; `assign` restores it by dropping conflicting entries.
//! Every change is written and fsynced before the call returns, as Kafka 3.0–3.6 do (3.7 skips
//! the fsync on truncation and 3.8+ flushes truncations asynchronously, relying on log loading
//! to truncate again after a crash) — with one exception: the entry a new leader records at its
//! log end ([`LeaderEpochFileCache::assign_deferred`]) stays in memory until the first record of
//! that epoch is appended (the log calls [`LeaderEpochFileCache::flush_if_dirty`] first) or a
//! background flush writes it. A crash can only lose such an entry while its epoch has no
//! records, and an epoch without records marks no divergence point: followers truncate by the
//! epochs of records, and a restarted broker gets its epoch again with the next LeaderAndIsr.
//! This keeps a LeaderAndIsr that makes a broker lead thousands of partitions from paying two
//! fsyncs per partition (Kafka pays them; on a disk where an fsync takes milliseconds that is
//! seconds of LeaderAndIsr).
//!
//! If a flush fails the in-memory state has already changed and is ahead of the file: the caller
//! must treat the error as a failure of the log dir, as Kafka does (`LogDirFailureChannel`).
//! The cache takes `&mut self`; the owning log serialises access (Kafka uses a RW lock inside).

use std::path::{Path, PathBuf};

use crate::log::checkpoint::{CheckpointError, EpochEntry, LeaderEpochCheckpointFile};

/// OffsetsForLeaderEpoch's "no such epoch" (`OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH`).
pub const UNDEFINED_EPOCH: i32 = -1;
/// OffsetsForLeaderEpoch's "no end offset" (`OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

#[derive(Debug, thiserror::Error)]
pub enum LeaderEpochCacheError {
    /// A caller bug: record batches without a leader epoch carry -1 and must not be assigned
    /// (Kafka throws `IllegalArgumentException`). Nothing was changed.
    #[error("invalid leader epoch entry (epoch {epoch}, start offset {start_offset}): both must be >= 0")]
    InvalidEntry { epoch: i32, start_offset: i64 },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

#[derive(Debug)]
pub struct LeaderEpochFileCache {
    checkpoint: LeaderEpochCheckpointFile,
    /// Strictly ascending by epoch and by start offset.
    epochs: Vec<EpochEntry>,
    /// Entries changed in memory but not yet written (only through `assign_deferred`).
    dirty: bool,
}

impl LeaderEpochFileCache {
    /// Loads the cache from `path` (missing or empty file → empty cache). Entries are replayed
    /// through the `assign` rule, so a file with non-monotonic entries loads trimmed, as in
    /// Kafka; nothing is written back until the next change. A malformed file is an error so
    /// the caller can decide (Kafka fails the log dir).
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, CheckpointError> {
        let checkpoint = LeaderEpochCheckpointFile::new(path);
        let mut cache = Self {
            epochs: Vec::new(),
            checkpoint,
            dirty: false,
        };
        for entry in cache.checkpoint.read()? {
            // read() has already rejected negative values, so this cannot refuse an entry.
            cache.assign_in_memory(entry);
        }
        Ok(cache)
    }

    pub fn path(&self) -> &Path {
        self.checkpoint.path()
    }

    /// Records that `epoch` starts at `start_offset`. Once assigned, an epoch's start offset only
    /// moves down: a repeat of the latest epoch at the same or a higher offset is ignored (one
    /// call per appended batch is cheap). Otherwise every entry whose epoch or start offset is
    /// ≥ the new one's is dropped (so a *lower* epoch than the latest truncates rather than being
    /// ignored, as since Kafka 2.0) and the entry appended, then the file flushed. Returns
    /// whether anything changed.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool, LeaderEpochCacheError> {
        if epoch < 0 || start_offset < 0 {
            return Err(LeaderEpochCacheError::InvalidEntry { epoch, start_offset });
        }
        let entry = EpochEntry { epoch, start_offset };
        if !self.assign_in_memory(entry) {
            return Ok(false);
        }
        tracing::debug!(path = %self.path().display(), %entry, entries = self.epochs.len(), "appended new epoch entry");
        self.flush()?;
        Ok(true)
    }

    /// Like [`Self::assign`], but leaves writing the file to [`Self::flush_if_dirty`]: for the entry
    /// a new leader records at its log end, before any record of the epoch exists (see the
    /// module docs for why a crash cannot make that unsafe).
    pub fn assign_deferred(&mut self, epoch: i32, start_offset: i64) -> Result<bool, LeaderEpochCacheError> {
        if epoch < 0 || start_offset < 0 {
            return Err(LeaderEpochCacheError::InvalidEntry { epoch, start_offset });
        }
        let entry = EpochEntry { epoch, start_offset };
        if !self.assign_in_memory(entry) {
            return Ok(false);
        }
        tracing::debug!(path = %self.path().display(), %entry, entries = self.epochs.len(), "appended new epoch entry (write deferred)");
        self.dirty = true;
        Ok(true)
    }

    /// Whether entries wait to be written.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Writes (and fsyncs) the file if an entry was assigned with `assign_deferred` since the
    /// last write. Must run before a record of a deferred epoch is appended.
    pub fn flush_if_dirty(&mut self) -> Result<(), CheckpointError> {
        if self.dirty {
            self.flush()?;
        }
        Ok(())
    }

    /// Kafka's private `assign(EpochEntry)` + `maybeTruncateNonMonotonicEntries`.
    fn assign_in_memory(&mut self, entry: EpochEntry) -> bool {
        let update_needed = self
            .latest_entry()
            .is_none_or(|latest| entry.epoch != latest.epoch || entry.start_offset < latest.start_offset);
        if !update_needed {
            return false;
        }
        let keep = self
            .epochs
            .partition_point(|e| e.epoch < entry.epoch && e.start_offset < entry.start_offset);
        let removed = self.epochs.split_off(keep);
        // Dropping one entry that started at the same offset is the expected case (a new leader
        // epoch before any record of the previous one was written); anything more means
        // divergent history was discarded, which Kafka logs as a warning.
        if removed.len() > 1 || removed.first().is_some_and(|r| r.start_offset != entry.start_offset) {
            tracing::warn!(
                path = %self.path().display(),
                new_entry = %entry,
                removed = ?removed,
                entries = keep + 1,
                "new epoch entry caused truncation of conflicting entries"
            );
        }
        self.epochs.push(entry);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }

    /// All entries, ascending.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.epochs
    }

    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.epochs.first().copied()
    }

    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.epochs.last().copied()
    }

    /// The latest epoch with records assigned to it (the leader's current epoch once it has
    /// appended in it).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// The epoch before the latest one.
    pub fn previous_epoch(&self) -> Option<i32> {
        self.epochs.len().checked_sub(2).map(|i| self.epochs[i].epoch)
    }

    /// The epoch whose range contains `offset`: the entry starting at `offset`, else the last one
    /// starting before it; `None` when `offset` precedes every entry.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let after = self.epochs.partition_point(|e| e.start_offset <= offset);
        after.checked_sub(1).map(|i| self.epochs[i].epoch)
    }

    /// OffsetsForLeaderEpoch (KIP-101/279, Kafka's `endOffsetFor`): `(epoch, end offset)` where
    /// `epoch` is the largest known epoch ≤ `requested_epoch` and its end offset is the start of
    /// the next higher epoch, or `log_end_offset` when the latest epoch is requested.
    ///
    /// * `requested_epoch == UNDEFINED_EPOCH`, an empty cache, or a requested epoch above the
    ///   latest → `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`.
    /// * Below the earliest epoch → `(requested_epoch, earliest start offset)`: not UNDEFINED.
    ///   The older epochs were removed with the log's head, and answering with the log start
    ///   lets the follower replicate from there.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        let result = if requested_epoch == UNDEFINED_EPOCH {
            // A bootstrapping follower, or one on a message format without leader epochs.
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        } else if self.latest_epoch() == Some(requested_epoch) {
            // The current epoch is still being written to: it ends at the log end.
            (requested_epoch, log_end_offset)
        } else {
            let higher = self.epochs.partition_point(|e| e.epoch <= requested_epoch);
            match (higher.checked_sub(1).map(|i| self.epochs[i]), self.epochs.get(higher)) {
                (_, None) => (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET),
                (None, Some(next)) => (requested_epoch, next.start_offset),
                (Some(floor), Some(next)) => (floor.epoch, next.start_offset),
            }
        };
        tracing::trace!(
            path = %self.path().display(),
            requested_epoch,
            epoch = result.0,
            end_offset = result.1,
            "processed end offset request"
        );
        result
    }

    /// The log was truncated to `end_offset` (exclusive): drop every entry starting at or after
    /// it. A negative `end_offset` (UNDEFINED) changes nothing.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<(), CheckpointError> {
        if end_offset < 0 || self.latest_entry().is_none_or(|e| e.start_offset < end_offset) {
            return Ok(());
        }
        let keep = self.epochs.partition_point(|e| e.start_offset < end_offset);
        let removed = self.epochs.split_off(keep);
        tracing::debug!(
            path = %self.path().display(),
            ?removed,
            end_offset,
            entries = keep,
            "cleared entries after truncating to end offset"
        );
        self.flush()
    }

    /// The log start offset advanced to `start_offset`: drop every entry starting at or before it
    /// and re-add the last of those starting exactly at `start_offset`, so the epoch in force at
    /// the new log start keeps covering it. An entry already starting at `start_offset` is kept
    /// as is; a negative `start_offset` (UNDEFINED) changes nothing.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<(), CheckpointError> {
        let drop = self.epochs.partition_point(|e| e.start_offset <= start_offset);
        let Some(in_force) = drop.checked_sub(1).map(|i| self.epochs[i]) else {
            return Ok(());
        };
        let removed: Vec<EpochEntry> = self.epochs.drain(..drop).collect();
        let updated = EpochEntry {
            epoch: in_force.epoch,
            start_offset,
        };
        self.epochs.insert(0, updated);
        tracing::debug!(
            path = %self.path().display(),
            ?removed,
            first_entry = %updated,
            start_offset,
            entries = self.epochs.len(),
            "cleared entries and rewrote first entry after truncating to start offset"
        );
        self.flush()
    }

    /// Deletes every entry and writes the empty checkpoint.
    pub fn clear_and_flush(&mut self) -> Result<(), CheckpointError> {
        self.epochs.clear();
        self.flush()
    }

    fn flush(&mut self) -> Result<(), CheckpointError> {
        self.checkpoint.write(&self.epochs)?;
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
    /// `(epoch, start offset)` pairs, to keep the case tables readable.
    type Pairs = &'static [(i32, i64)];
    /// (Kafka test or case, cache contents, requested epoch, log end offset, expected answer).
    type EndOffsetCase = (&'static str, Pairs, i32, i64, (i32, i64));

    fn entries(pairs: &[(i32, i64)]) -> Vec<EpochEntry> {
        pairs
            .iter()
            .map(|&(epoch, start_offset)| EpochEntry { epoch, start_offset })
            .collect()
    }

    /// A cache in a fresh partition dir, built by assigning `pairs` in order.
    fn cache_with(pairs: &[(i32, i64)]) -> (tempfile::TempDir, LeaderEpochFileCache) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cache = LeaderEpochFileCache::open(dir.path().join("leader-epoch-checkpoint")).expect("open");
        for &(epoch, start_offset) in pairs {
            cache.assign(epoch, start_offset).expect("assign");
        }
        (dir, cache)
    }

    fn on_disk(cache: &LeaderEpochFileCache) -> Vec<EpochEntry> {
        LeaderEpochCheckpointFile::new(cache.path())
            .read()
            .expect("read checkpoint")
    }

    /// Cases from Kafka's LeaderEpochFileCacheTest (named in each row) for `endOffsetFor`.
    #[test]
    fn end_offset_for_matches_kafkas_offsets_for_leader_epoch_answers() {
        const THREE: Pairs = &[(5, 11), (6, 12), (7, 13)];
        const GAPPY: Pairs = &[(0, 10), (2, 13), (4, 17)];
        #[rustfmt::skip]
        let cases: &[EndOffsetCase] = &[
            ("shouldFetchEndOffsetOfEmptyCache", &[], 7, 0, U),
            ("shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested", &[], UNDEFINED_EPOCH, 73, U),
            ("shouldReturnUndefinedOffsetIfUndefinedEpochRequested", &[(2, 11), (3, 12)], UNDEFINED_EPOCH, 0, U),
            ("latest epoch requested: ends at the log end offset", THREE, 7, 20, (7, 20)),
            ("shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch", THREE, 4, 0, (4, 11)),
            ("below the earliest, far below", THREE, 0, 0, (0, 11)),
            ("known earlier epoch ends where the next starts", THREE, 5, 20, (5, 12)),
            ("second epoch", THREE, 6, 20, (6, 13)),
            ("above the latest epoch: unknown", THREE, 8, 20, U),
            ("shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested", GAPPY, 1, 0, (0, 13)),
            ("... exact epoch", GAPPY, 2, 0, (2, 17)),
            ("... gap above", GAPPY, 3, 0, (2, 17)),
            ("shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked", &[(2, 100)], 3, 100, U),
            ("shouldTruncateIfMatchingEpochButEarlierStartingOffset", &[(5, 11), (6, 12), (7, 13), (7, 12)], 5, 0, (5, 12)),
            ("... epoch 6 was dropped, so 5 answers for it", &[(5, 11), (6, 12), (7, 13), (7, 12)], 6, 0, (5, 12)),
            ("shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes", &[(0, 0), (1, 0), (2, 5)], 1, 10, (1, 5)),
            ("... epoch 0's entry was replaced by epoch 1 at the same offset", &[(0, 0), (1, 0), (2, 5)], 0, 10, (0, 0)),
        ];
        for &(name, setup, requested, leo, want) in cases {
            let (_dir, cache) = cache_with(setup);
            assert_eq!(cache.end_offset_for(requested, leo), want, "{name}");
        }
    }

    /// Kafka's `assign` rule (KIP-101 monotonicity; LeaderEpochFileCacheTest names).
    #[test]
    fn assign_keeps_epochs_and_start_offsets_strictly_ascending() {
        #[rustfmt::skip]
        let cases: &[(&str, Pairs, Pairs)] = &[
            ("shouldNotUpdateEpochAndStartOffsetIfItDidNotChange", &[(2, 6), (2, 7)], &[(2, 6)]),
            ("shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned", &[(2, 6), (2, 10)], &[(2, 6)]),
            ("same epoch at an earlier offset moves its start down", &[(2, 6), (2, 4)], &[(2, 4)]),
            ("shouldEnforceMonotonicallyIncreasingStartOffsets", &[(2, 9), (3, 9)], &[(3, 9)]),
            ("shouldEnforceOffsetsIncreaseMonotonically", &[(2, 6), (3, 5)], &[(3, 5)]),
            ("shouldEnforceMonotonicallyIncreasingEpochs: a lower epoch truncates", &[(1, 5), (2, 6), (1, 7)], &[(1, 7)]),
            ("a lower epoch keeps what precedes it", &[(1, 5), (3, 10), (2, 8)], &[(1, 5), (2, 8)]),
            ("shouldTruncateIfMatchingEpochButEarlierStartingOffset", &[(5, 11), (6, 12), (7, 13), (7, 12)], &[(5, 11), (7, 12)]),
            ("shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages",
                &[(0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (1, 5), (2, 6), (2, 7), (2, 8)], &[(0, 0), (1, 3), (2, 6)]),
        ];
        for &(name, assigns, want) in cases {
            let (_dir, cache) = cache_with(assigns);
            assert_eq!(cache.entries(), entries(want), "{name}");
            assert_eq!(on_disk(&cache), entries(want), "{name}: flushed");
        }
    }

    #[test]
    fn assign_reports_whether_it_changed_anything() {
        let (_dir, mut cache) = cache_with(&[(2, 10)]);
        assert!(!cache.assign(2, 10).expect("repeat"));
        assert!(!cache.assign(2, 11).expect("later batch, same epoch"));
        assert!(cache.assign(3, 11).expect("new epoch"));
    }

    #[test]
    fn assigning_a_negative_epoch_or_offset_is_refused_and_changes_nothing() {
        let (_dir, mut cache) = cache_with(&[(2, 10)]);
        for (epoch, offset) in [(-1, 20), (3, -1)] {
            let err = cache.assign(epoch, offset).expect_err("negative");
            assert!(matches!(err, LeaderEpochCacheError::InvalidEntry { .. }), "{err}");
        }
        assert_eq!(cache.entries(), entries(&[(2, 10)]));
    }

    /// Kafka's truncateFromStart, called when the log start offset advances (retention,
    /// DeleteRecords). Rows name the LeaderEpochFileCacheTest case they mirror.
    #[test]
    fn truncate_from_start_moves_the_epoch_in_force_up_to_the_new_log_start() {
        const BASE: Pairs = &[(2, 6), (3, 8), (4, 11)];
        #[rustfmt::skip]
        let cases: &[(&str, Pairs, i64, Pairs)] = &[
            ("shouldPreserveResetOffsetOnClearEarliestIfOneExists", BASE, 8, &[(3, 8), (4, 11)]),
            ("shouldNotClearAnythingIfOffsetTooEarly", BASE, 1, BASE),
            ("shouldNotClearAnythingIfOffsetIsFirstOffset", BASE, 6, BASE),
            ("shouldRetainLatestEpochOnClearAllEarliest", BASE, 11, &[(4, 11)]),
            ("shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest", BASE, 9, &[(3, 9), (4, 11)]),
            ("shouldUpdateOffsetBetweenFirstTwoEpochBoundariesOnClearEarliest",
                &[(0, 0), (1, 7), (2, 10)], 5, &[(0, 5), (1, 7), (2, 10)]),
            ("shouldRetainLatestEpochOnClearAllEarliestAndUpdateItsOffset", BASE, 15, &[(4, 15)]),
            ("shouldNotResetEpochHistoryHeadIfUndefinedPassed", BASE, UNDEFINED_EPOCH_OFFSET, BASE),
            ("shouldClearEarliestOnEmptyCache", &[], 7, &[]),
        ];
        for &(name, setup, start_offset, want) in cases {
            let (_dir, mut cache) = cache_with(setup);
            cache.truncate_from_start(start_offset).expect(name);
            assert_eq!(cache.entries(), entries(want), "{name}");
            assert_eq!(on_disk(&cache), entries(want), "{name}: flushed");
        }
    }

    /// Kafka's truncateFromEnd, called when the log is truncated (follower divergence, KIP-101).
    #[test]
    fn truncate_from_end_drops_epochs_starting_at_or_after_the_new_log_end() {
        const BASE: Pairs = &[(2, 6), (3, 8), (4, 11)];
        #[rustfmt::skip]
        let cases: &[(&str, i64, Pairs)] = &[
            ("shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries", 8, &[(2, 6)]),
            ("shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest", 9, &[(2, 6), (3, 8)]),
            ("exactly at the latest start", 11, &[(2, 6), (3, 8)]),
            ("past every start: nothing to drop", 12, BASE),
            ("at the first start: everything goes", 6, &[]),
            ("shouldNotResetEpochHistoryTailIfUndefinedPassed", UNDEFINED_EPOCH_OFFSET, BASE),
        ];
        for &(name, end_offset, want) in cases {
            let (_dir, mut cache) = cache_with(BASE);
            cache.truncate_from_end(end_offset).expect(name);
            assert_eq!(cache.entries(), entries(want), "{name}");
            assert_eq!(on_disk(&cache), entries(want), "{name}: flushed");
        }
        let (_dir, mut empty) = cache_with(&[]);
        empty.truncate_from_end(7).expect("shouldClearLatestOnEmptyCache");
        assert!(empty.is_empty());
    }

    #[test]
    fn epoch_for_offset_finds_the_epoch_whose_range_holds_the_offset() {
        // Kafka's shouldFetchEpochForGivenOffset.
        let (_dir, cache) = cache_with(&[(0, 10), (1, 20), (5, 30)]);
        for (offset, want) in [
            (25, Some(1)),
            (20, Some(1)),
            (30, Some(5)),
            (50, Some(5)),
            (5, None),
            (10, Some(0)),
        ] {
            assert_eq!(cache.epoch_for_offset(offset), want, "offset {offset}");
        }
    }

    #[test]
    fn earliest_latest_and_previous_epoch_follow_the_entries() {
        // Kafka's testPreviousEpoch.
        let (_dir, mut cache) = cache_with(&[]);
        assert_eq!(
            (cache.latest_epoch(), cache.previous_epoch(), cache.earliest_entry()),
            (None, None, None)
        );
        cache.assign(2, 10).expect("assign");
        assert_eq!((cache.latest_epoch(), cache.previous_epoch()), (Some(2), None));
        cache.assign(4, 15).expect("assign");
        assert_eq!((cache.latest_epoch(), cache.previous_epoch()), (Some(4), Some(2)));
        cache.assign(10, 20).expect("assign");
        assert_eq!(cache.previous_epoch(), Some(4));
        cache.truncate_from_end(18).expect("truncate");
        assert_eq!((cache.latest_epoch(), cache.previous_epoch()), (Some(4), Some(2)));
        assert_eq!(
            cache.earliest_entry(),
            Some(EpochEntry {
                epoch: 2,
                start_offset: 10
            })
        );
        assert_eq!(
            cache.latest_entry(),
            Some(EpochEntry {
                epoch: 4,
                start_offset: 15
            })
        );
    }

    #[test]
    fn state_survives_reopening_through_the_checkpoint_file() {
        // Kafka's shouldPersistEpochsBetweenInstances, plus the truncations (shouldWriteCheckpointOnTruncation).
        let (dir, mut cache) = cache_with(&[(2, 6), (3, 8), (4, 11), (5, 20)]);
        cache.truncate_from_end(20).expect("end");
        cache.truncate_from_start(9).expect("start");
        let path = cache.path().to_owned();
        drop(cache);
        assert_eq!(std::fs::read_to_string(&path).expect("file"), "0\n2\n3 9\n4 11\n");
        let reopened = LeaderEpochFileCache::open(&path).expect("reopen");
        assert_eq!(reopened.entries(), entries(&[(3, 9), (4, 11)]));
        assert_eq!(reopened.end_offset_for(3, 30), (3, 11));
        drop(dir);
    }

    #[test]
    fn clear_and_flush_leaves_an_empty_checkpoint() {
        let (_dir, mut cache) = cache_with(&[(2, 6), (3, 8)]);
        cache.clear_and_flush().expect("clear");
        assert!(cache.is_empty());
        assert_eq!(std::fs::read_to_string(cache.path()).expect("file"), "0\n0\n");
    }

    #[test]
    fn opening_a_missing_file_gives_an_empty_cache_without_creating_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("leader-epoch-checkpoint");
        let cache = LeaderEpochFileCache::open(&path).expect("open");
        assert!(cache.is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn opening_a_malformed_file_is_an_error_for_the_caller() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("leader-epoch-checkpoint");
        std::fs::write(&path, "0\n2\n1 5\n").expect("seed");
        let err = LeaderEpochFileCache::open(&path).expect_err("count mismatch");
        assert!(matches!(err, CheckpointError::Malformed { line: 2, .. }), "{err}");
    }

    #[test]
    fn a_non_monotonic_file_loads_through_the_assign_rule_without_rewriting_it() {
        // Kafka's constructor replays the file through assign() and does not flush.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("leader-epoch-checkpoint");
        let text = "0\n3\n1 5\n3 10\n2 8\n";
        std::fs::write(&path, text).expect("seed");
        let cache = LeaderEpochFileCache::open(&path).expect("open");
        assert_eq!(cache.entries(), entries(&[(1, 5), (2, 8)]));
        assert_eq!(std::fs::read_to_string(&path).expect("file"), text);
    }

    #[test]
    fn a_failed_flush_is_reported_with_memory_already_updated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let partition_dir = dir.path().join("orders-0");
        std::fs::create_dir(&partition_dir).expect("mkdir");
        let mut cache = LeaderEpochFileCache::open(partition_dir.join("leader-epoch-checkpoint")).expect("open");
        std::fs::remove_dir(&partition_dir).expect("rmdir");
        let err = cache.assign(1, 0).expect_err("dir gone");
        assert!(
            matches!(err, LeaderEpochCacheError::Checkpoint(CheckpointError::Io { .. })),
            "{err}"
        );
        assert_eq!(cache.latest_epoch(), Some(1));
    }

    #[test]
    fn a_deferred_entry_is_written_by_the_next_flush_or_any_other_change() {
        let (_dir, mut cache) = cache_with(&[(0, 0)]);
        assert!(cache.assign_deferred(1, 5).expect("assign"));
        assert_eq!(cache.latest_epoch(), Some(1), "answers use it at once");
        assert_eq!(on_disk(&cache), entries(&[(0, 0)]), "not written yet");
        assert!(cache.is_dirty());
        cache.flush_if_dirty().expect("flush");
        assert_eq!(on_disk(&cache), entries(&[(0, 0), (1, 5)]));
        assert!(!cache.is_dirty());

        assert!(cache.assign_deferred(2, 7).expect("assign"));
        cache.assign(3, 9).expect("a synchronous assign writes everything");
        assert_eq!(on_disk(&cache), entries(&[(0, 0), (1, 5), (2, 7), (3, 9)]));
        assert!(!cache.is_dirty());
        assert!(
            !cache.assign_deferred(3, 9).expect("repeat"),
            "nothing new, nothing to write"
        );
        assert!(!cache.is_dirty());
        assert!(matches!(
            cache.assign_deferred(-1, 0),
            Err(LeaderEpochCacheError::InvalidEntry { .. })
        ));
    }
}
