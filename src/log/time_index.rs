//! A segment's `.timeindex` (Kafka's `TimeIndex`). It maps timestamps to offsets. Each entry is
//! 12 bytes, big-endian: `timestamp int64 | relativeOffset int32`. An entry `(T, O)` means
//! that T is the largest timestamp seen up to offset O, so any record newer than T comes after
//! O. The segment appends the running maximum timestamp, so timestamps increase. The index is
//! sparse, like the `.index`. It owns the file and an in-memory copy of the entries. It never
//! reads the log.
//!
//! The file handling is the same as for `offset_index`: not preallocated, not memory-mapped,
//! and a zero-filled tail is trimmed on open.

use std::io;
use std::path::Path;

use super::index_file::{absolute_offset, relative_offset, IndexFile};
pub use super::index_file::{CorruptReason, IndexError};

/// Bytes per `.timeindex` entry.
pub const ENTRY_SIZE: usize = 12;

/// Kafka's `RecordBatch.NO_TIMESTAMP`. A lookup that finds no entry returns it.
pub const NO_TIMESTAMP: i64 = -1;

#[derive(Debug)]
pub struct TimeIndex {
    /// The segment's base offset. Entries store offsets relative to it.
    base_offset: i64,
    /// `(timestamp, relative offset)`. Both are non-decreasing, and entries appended here
    /// have strictly increasing timestamps. These are all the entries, matching the file.
    entries: Vec<(i64, u32)>,
    /// `max_index_size / ENTRY_SIZE`. The last slot is kept for the entry written at roll.
    max_entries: usize,
    file: IndexFile,
}

impl TimeIndex {
    /// Opens the index at `path` (creating it empty) and loads its entries. A zero-filled tail
    /// left by Kafka's preallocation is dropped and trimmed from the file. Returns
    /// [`IndexError::Corrupt`] if the size is not a multiple of 12, if timestamps or offsets
    /// decrease, or if a relative offset is above `i32::MAX`; the caller then rebuilds.
    pub fn open(path: &Path, base_offset: i64, max_index_size: usize) -> Result<TimeIndex, IndexError> {
        if max_index_size < ENTRY_SIZE {
            return Err(IndexError::InvalidMaxIndexSize {
                path: path.to_path_buf(),
                max_index_size,
                entry_size: ENTRY_SIZE,
            });
        }
        let mut entries: Vec<(i64, u32)> = Vec::new();
        let file = IndexFile::open::<ENTRY_SIZE>(path, |slot, raw| {
            let (timestamp, relative) = decode(raw);
            if relative > i32::MAX as u32 {
                return Err(CorruptReason::RelativeOffsetOverflow {
                    slot,
                    relative_offset: relative,
                });
            }
            if let Some(&(previous_ts, previous_rel)) = entries.last() {
                if timestamp < previous_ts {
                    return Err(CorruptReason::TimestampDecreasing {
                        slot,
                        timestamp,
                        previous: previous_ts,
                    });
                }
                if relative < previous_rel {
                    return Err(CorruptReason::OffsetDecreasing {
                        slot,
                        offset: absolute_offset(base_offset, relative),
                        previous: absolute_offset(base_offset, previous_rel),
                    });
                }
            }
            entries.push((timestamp, relative));
            Ok(())
        })?;
        let index = TimeIndex {
            base_offset,
            entries,
            max_entries: max_index_size / ENTRY_SIZE,
            file,
        };
        tracing::debug!(
            path = %path.display(),
            entries = index.entries.len(),
            max_entries = index.max_entries,
            max_timestamp = index.max_timestamp_seen(),
            "loaded time index"
        );
        Ok(index)
    }

    /// Records that `timestamp` is the largest timestamp seen up to `offset`. As in Kafka's
    /// `TimeIndex.maybeAppend`, the entry is written only if `timestamp` is above the last
    /// entry's timestamp (above [`NO_TIMESTAMP`] for an empty index), so records without
    /// timestamps leave the index empty. Errors: [`IndexError::InvalidAppend`] if `offset` is
    /// below the last entry's offset; [`IndexError::TimestampRegression`] if `timestamp` is
    /// below the last entry's timestamp; [`IndexError::Full`] if an entry would be written but
    /// the index [`is_full`](Self::is_full); [`IndexError::OffsetOverflow`] if `offset` is not
    /// in `base..=base + i32::MAX`.
    ///
    /// Kafka checks "full" before it decides whether to append. Here a call that would write
    /// nothing succeeds even on a full index.
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64) -> Result<(), IndexError> {
        self.maybe_append_within(timestamp, offset, self.max_entries.saturating_sub(1))
    }

    /// [`maybe_append`](Self::maybe_append) allowed to use the reserved last slot. It is for the
    /// final entry written when the segment stops being active (Kafka's `maybeAppend(ts,
    /// offset, skipFullCheck = true)` from `onBecomeInactiveSegment`). [`IndexError::Full`]
    /// only if that slot is taken too.
    pub fn maybe_append_on_roll(&mut self, timestamp: i64, offset: i64) -> Result<(), IndexError> {
        self.maybe_append_within(timestamp, offset, self.max_entries)
    }

    fn maybe_append_within(&mut self, timestamp: i64, offset: i64, capacity: usize) -> Result<(), IndexError> {
        if let Some((last_timestamp, last_offset)) = self.last_entry() {
            // An equal offset is allowed: the roll re-offers the last entry's offset.
            if offset < last_offset {
                return Err(IndexError::InvalidAppend {
                    path: self.path().to_path_buf(),
                    offset,
                    last_offset,
                });
            }
            if timestamp < last_timestamp {
                return Err(IndexError::TimestampRegression {
                    path: self.path().to_path_buf(),
                    timestamp,
                    last_timestamp,
                });
            }
        }
        if timestamp <= self.max_timestamp_seen() {
            return Ok(());
        }
        if self.entries.len() >= capacity {
            return Err(IndexError::Full {
                path: self.path().to_path_buf(),
                max_entries: self.max_entries,
            });
        }
        let relative = relative_offset(self.base_offset, offset).ok_or_else(|| IndexError::OffsetOverflow {
            path: self.path().to_path_buf(),
            offset,
            base_offset: self.base_offset,
        })?;
        self.file.append(&encode(timestamp, relative))?;
        self.entries.push((timestamp, relative));
        Ok(())
    }

    /// The entry with the greatest timestamp `<= target_ts`, as `(timestamp, offset)`. If several
    /// entries share that timestamp (possible only in files written elsewhere), the earliest is
    /// used, so a forward scan from its offset cannot miss a record. With no such entry, the
    /// result is `(NO_TIMESTAMP, base_offset)`, as in Kafka's `TimeIndex.lookup`.
    pub fn lookup(&self, target_ts: i64) -> (i64, i64) {
        let below = self.entries.partition_point(|&(ts, _)| ts <= target_ts);
        match self.entries[..below].last() {
            Some(&(found_ts, _)) => {
                let first = self.entries.partition_point(|&(ts, _)| ts < found_ts);
                let relative = self.entries.get(first).map_or(0, |&(_, rel)| rel);
                (found_ts, absolute_offset(self.base_offset, relative))
            }
            None => (NO_TIMESTAMP, self.base_offset),
        }
    }

    /// The `n`th entry as `(timestamp, offset)`.
    pub fn entry(&self, n: usize) -> Option<(i64, i64)> {
        self.entries
            .get(n)
            .map(|&(ts, rel)| (ts, absolute_offset(self.base_offset, rel)))
    }

    /// The last entry as `(timestamp, offset)`, or `None` if the index is empty. Kafka returns
    /// `(NO_TIMESTAMP, baseOffset)` in that case.
    pub fn last_entry(&self) -> Option<(i64, i64)> {
        self.entries
            .last()
            .map(|&(ts, rel)| (ts, absolute_offset(self.base_offset, rel)))
    }

    /// The last entry's timestamp (the largest indexed), or [`NO_TIMESTAMP`] if empty.
    pub fn max_timestamp_seen(&self) -> i64 {
        self.entries.last().map_or(NO_TIMESTAMP, |&(ts, _)| ts)
    }

    /// Removes every entry whose offset is `>= offset` and shrinks the file to match.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), IndexError> {
        let keep = self
            .entries
            .partition_point(|&(_, rel)| absolute_offset(self.base_offset, rel) < offset);
        self.truncate_to_entries(keep)
    }

    /// Removes all entries and empties the file.
    pub fn reset(&mut self) -> Result<(), IndexError> {
        self.truncate_to_entries(0)
    }

    fn truncate_to_entries(&mut self, keep: usize) -> Result<(), IndexError> {
        if keep < self.entries.len() {
            self.file.truncate((keep * ENTRY_SIZE) as u64)?;
            self.entries.truncate(keep);
        }
        Ok(())
    }

    /// True once only the reserved last slot is left (Kafka: `entries >= maxEntries - 1`). The
    /// segment must roll. Use [`maybe_append_on_roll`](Self::maybe_append_on_roll) to write the
    /// final entry.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries.saturating_sub(1)
    }

    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes of entries, which is also the file's length.
    pub fn size_in_bytes(&self) -> u64 {
        (self.entries.len() * ENTRY_SIZE) as u64
    }

    /// Flushes appended entries and truncations to disk.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync()
    }

    /// Writes appended entries to the file and returns a handle to fsync it with (the
    /// background flush of a rolled segment, done without the log's lock).
    pub fn sync_handle(&mut self) -> io::Result<std::fs::File> {
        self.file.sync_handle()
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Renames the file (e.g. to add `.deleted` or `.swap`). Appends keep working afterwards.
    pub fn rename_to(&mut self, new_path: &Path) -> Result<(), IndexError> {
        self.file.rename_to(new_path)
    }

    /// Closes and removes the file. Returns `Ok(false)` if it was already gone.
    pub fn delete(self) -> Result<bool, IndexError> {
        self.file.delete()
    }
}

fn encode(timestamp: i64, relative: u32) -> [u8; ENTRY_SIZE] {
    let mut raw = [0u8; ENTRY_SIZE];
    raw[..8].copy_from_slice(&timestamp.to_be_bytes());
    raw[8..].copy_from_slice(&relative.to_be_bytes());
    raw
}

fn decode(raw: [u8; ENTRY_SIZE]) -> (i64, u32) {
    let [t0, t1, t2, t3, t4, t5, t6, t7, r0, r1, r2, r3] = raw;
    (
        i64::from_be_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        u32::from_be_bytes([r0, r1, r2, r3]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    const BASE: i64 = 500;
    const T0: i64 = 1_700_000_000_000;

    fn index_path(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("00000000000000000500.timeindex")
    }

    fn open(path: &Path) -> TimeIndex {
        TimeIndex::open(path, BASE, 10 * 1024 * 1024).expect("open time index")
    }

    fn raw_entries(entries: &[(i64, u32)]) -> Vec<u8> {
        entries.iter().flat_map(|&(ts, rel)| encode(ts, rel)).collect()
    }

    fn corrupt_reason(result: Result<TimeIndex, IndexError>) -> CorruptReason {
        match result {
            Err(IndexError::Corrupt { reason, .. }) => reason,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn only_a_timestamp_above_the_last_entry_is_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        // Kafka: `if (timestamp > lastEntry.timestamp)`, and an empty index's last entry is
        // (NO_TIMESTAMP, base). Records without timestamps never create entries.
        index.maybe_append(NO_TIMESTAMP, 500).expect("no timestamp");
        assert_eq!(index.entries(), 0);
        index.maybe_append(T0, 510).expect("append");
        index.maybe_append(T0, 520).expect("equal timestamp is ignored");
        index.maybe_append(T0 + 5, 520).expect("append");
        index
            .maybe_append(T0 + 5, 520)
            .expect("the same entry again is ignored");
        assert_eq!(index.entries(), 2);
        assert_eq!(index.last_entry(), Some((T0 + 5, 520)));
        assert_eq!(index.max_timestamp_seen(), T0 + 5);
    }

    #[test]
    fn a_smaller_timestamp_or_offset_than_the_last_entry_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        index.maybe_append(T0, 510).expect("append");
        assert!(matches!(
            index.maybe_append(T0 - 1, 511),
            Err(IndexError::TimestampRegression { timestamp, last_timestamp: T0, .. }) if timestamp == T0 - 1
        ));
        assert!(matches!(
            index.maybe_append(T0 + 1, 509),
            Err(IndexError::InvalidAppend {
                offset: 509,
                last_offset: 510,
                ..
            })
        ));
        // An equal offset with a larger timestamp is allowed, as in Kafka.
        index.maybe_append(T0 + 1, 510).expect("equal offset");
        assert_eq!(index.entries(), 2);
    }

    #[test]
    fn an_offset_beyond_the_int32_relative_range_is_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        let result = index.maybe_append(T0, BASE + i64::from(i32::MAX) + 1);
        assert!(matches!(result, Err(IndexError::OffsetOverflow { .. })));
        assert!(matches!(
            index.maybe_append(T0, BASE - 1),
            Err(IndexError::OffsetOverflow { .. })
        ));
    }

    #[test]
    fn lookup_returns_the_greatest_timestamp_at_or_below_the_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        for (ts, offset) in [(T0, 510), (T0 + 10, 530), (T0 + 20, 560)] {
            index.maybe_append(ts, offset).expect("append");
        }
        assert_eq!(index.lookup(T0), (T0, 510));
        assert_eq!(index.lookup(T0 + 15), (T0 + 10, 530));
        assert_eq!(index.lookup(i64::MAX), (T0 + 20, 560));
        // Kafka: below the first entry (or empty) gives (NO_TIMESTAMP, baseOffset).
        assert_eq!(index.lookup(T0 - 1), (NO_TIMESTAMP, BASE));
        assert_eq!(index.entry(2), Some((T0 + 20, 560)));
    }

    #[test]
    fn an_empty_index_looks_up_no_timestamp_at_the_base_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = open(&index_path(&dir));
        assert_eq!(index.lookup(T0), (NO_TIMESTAMP, BASE));
        assert_eq!(index.last_entry(), None);
        assert_eq!(index.max_timestamp_seen(), NO_TIMESTAMP);
    }

    #[test]
    fn lookup_among_equal_timestamps_picks_the_earliest_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, raw_entries(&[(T0, 1), (T0 + 5, 4), (T0 + 5, 7), (T0 + 9, 9)])).expect("write");
        let index = open(&path);
        assert_eq!(index.lookup(T0 + 6), (T0 + 5, 504));
        assert_eq!(index.lookup(T0 + 5), (T0 + 5, 504));
    }

    #[test]
    fn the_last_slot_is_reserved_for_the_entry_written_at_roll() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 40 bytes hold 3 entries; Kafka's TimeIndex is full at maxEntries - 1.
        let mut index = TimeIndex::open(&index_path(&dir), BASE, 40).expect("open");
        assert_eq!(index.max_entries(), 3);
        index.maybe_append(T0, 501).expect("append");
        index.maybe_append(T0 + 1, 502).expect("append");
        assert!(index.is_full());
        assert!(matches!(
            index.maybe_append(T0 + 2, 503),
            Err(IndexError::Full { max_entries: 3, .. })
        ));
        index
            .maybe_append(T0 + 1, 503)
            .expect("nothing to write is not an error");
        index
            .maybe_append_on_roll(T0 + 2, 503)
            .expect("roll uses the reserved slot");
        assert_eq!(index.entries(), 3);
        assert!(matches!(
            index.maybe_append_on_roll(T0 + 3, 504),
            Err(IndexError::Full { .. })
        ));
    }

    #[test]
    fn truncate_to_drops_entries_whose_offset_is_at_or_above() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut index = open(&path);
        for (ts, offset) in [(T0, 510), (T0 + 1, 520), (T0 + 2, 520), (T0 + 3, 530)] {
            index.maybe_append(ts, offset).expect("append");
        }
        index.truncate_to(531).expect("past the end");
        assert_eq!(index.entries(), 4);
        index.truncate_to(520).expect("truncate");
        assert_eq!(index.last_entry(), Some((T0, 510)));
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 12);
        // After truncation the timestamp rule restarts from the surviving last entry.
        index.maybe_append(T0 + 1, 515).expect("append after truncation");
        index.reset().expect("reset");
        assert_eq!((index.entries(), index.size_in_bytes()), (0, 0));
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 0);
    }

    #[test]
    fn entries_round_trip_through_the_file_in_kafka_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut index = open(&path);
        index
            .maybe_append(0x0102_0304_0506_0708, 0x0A0B_0C0D + BASE)
            .expect("append");
        index
            .maybe_append(0x0102_0304_0506_0709, 0x0A0B_0C0E + BASE)
            .expect("append");
        drop(index);
        let bytes = fs::read(&path).expect("read");
        assert_eq!(&bytes[..12], &[1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D]);

        let mut index = open(&path);
        assert_eq!(index.entries(), 2);
        assert_eq!(index.last_entry(), Some((0x0102_0304_0506_0709, 0x0A0B_0C0E + BASE)));
        index
            .maybe_append(0x0102_0304_0506_0708, 0x0A0B_0C0F + BASE)
            .expect_err("older timestamp after reopen");
    }

    #[test]
    fn a_kafka_preallocated_file_loads_without_its_zero_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut bytes = raw_entries(&[(T0, 3), (T0 + 7, 9)]);
        bytes.resize(12 * 1000, 0);
        fs::write(&path, &bytes).expect("write");
        let mut index = open(&path);
        assert_eq!(index.entries(), 2);
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 24);
        index.maybe_append(T0 + 8, 512).expect("append");
        index.sync().expect("sync");
        assert_eq!(
            fs::read(&path).expect("read"),
            raw_entries(&[(T0, 3), (T0 + 7, 9), (T0 + 8, 12)])
        );
    }

    #[test]
    fn a_file_whose_size_is_not_a_multiple_of_twelve_is_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, vec![0u8; 16]).expect("write");
        let reason = corrupt_reason(TimeIndex::open(&path, BASE, 4096));
        assert_eq!(
            reason,
            CorruptReason::SizeNotMultiple {
                len: 16,
                entry_size: 12
            }
        );
    }

    #[test]
    fn a_file_with_decreasing_timestamps_or_offsets_is_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, raw_entries(&[(T0, 1), (T0 - 1, 2)])).expect("write");
        let reason = corrupt_reason(TimeIndex::open(&path, BASE, 4096));
        assert_eq!(
            reason,
            CorruptReason::TimestampDecreasing {
                slot: 1,
                timestamp: T0 - 1,
                previous: T0
            }
        );

        fs::write(&path, raw_entries(&[(T0, 5), (T0 + 1, 4)])).expect("write");
        let reason = corrupt_reason(TimeIndex::open(&path, BASE, 4096));
        assert_eq!(
            reason,
            CorruptReason::OffsetDecreasing {
                slot: 1,
                offset: 504,
                previous: 505
            }
        );

        fs::write(&path, raw_entries(&[(T0, 5), (0, 0), (T0 + 1, 6)])).expect("write");
        assert!(matches!(
            corrupt_reason(TimeIndex::open(&path, BASE, 4096)),
            CorruptReason::TimestampDecreasing { slot: 1, .. }
        ));
    }

    #[test]
    fn a_renamed_time_index_keeps_appending_and_delete_reports_a_missing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let renamed = dir.path().join("00000000000000000500.timeindex.swap");
        let mut index = open(&index_path(&dir));
        index.rename_to(&renamed).expect("rename");
        index.maybe_append(T0, 501).expect("append after rename");
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&renamed).expect("stat").len(), 12);
        fs::remove_file(&renamed).expect("remove behind its back");
        assert!(!index.delete().expect("delete"));
    }
}
