//! A segment's `.index` (Kafka's `OffsetIndex`). It maps offsets to byte positions in the
//! `.log` file. Each entry is 8 bytes, big-endian: `relativeOffset int32 | position int32`,
//! with offsets strictly increasing. The index is sparse: the segment adds an entry about every
//! `index.interval.bytes` of appended data. It owns the index file and an in-memory copy of
//! the entries. It never reads the log, so choosing which offsets to index is up to the
//! segment.
//!
//! Unlike Kafka, the file is neither preallocated nor memory-mapped (see `index_file`). Every
//! entry is kept in a `Vec`, about 8 bytes per 4 KiB of log. Lookups are a binary search over
//! that `Vec`. Methods take `&mut self` to mutate; the owner provides locking.

use std::io;
use std::path::Path;

use super::index_file::{absolute_offset, relative_offset, IndexFile};
pub use super::index_file::{CorruptReason, IndexError};

/// Bytes per `.index` entry.
pub const ENTRY_SIZE: usize = 8;

#[derive(Debug)]
pub struct OffsetIndex {
    /// The segment's base offset. Entries store offsets relative to it.
    base_offset: i64,
    /// `(relative offset, position)`, strictly increasing in offset. These are all the
    /// entries, and they match the file byte for byte.
    entries: Vec<(u32, u32)>,
    /// `max_index_size / ENTRY_SIZE`. Once the index holds this many entries, the segment must roll.
    max_entries: usize,
    file: IndexFile,
}

impl OffsetIndex {
    /// Opens the index at `path` (creating it empty) and loads its entries. A zero-filled tail
    /// left by Kafka's preallocation is dropped and trimmed from the file. Returns
    /// [`IndexError::Corrupt`] if the file size is not a multiple of 8, if the offsets do not
    /// strictly increase, or if a relative offset is above `i32::MAX`; the caller then
    /// rebuilds. A file with more than `max_entries` entries (the config shrank) opens full.
    pub fn open(path: &Path, base_offset: i64, max_index_size: usize) -> Result<OffsetIndex, IndexError> {
        if max_index_size < ENTRY_SIZE {
            return Err(IndexError::InvalidMaxIndexSize {
                path: path.to_path_buf(),
                max_index_size,
                entry_size: ENTRY_SIZE,
            });
        }
        let mut entries: Vec<(u32, u32)> = Vec::new();
        let file = IndexFile::open::<ENTRY_SIZE>(path, |slot, raw| {
            let (relative, position) = decode(raw);
            if relative > i32::MAX as u32 {
                return Err(CorruptReason::RelativeOffsetOverflow {
                    slot,
                    relative_offset: relative,
                });
            }
            if let Some(&(previous, _)) = entries.last() {
                if relative <= previous {
                    return Err(CorruptReason::OffsetNotIncreasing {
                        slot,
                        offset: absolute_offset(base_offset, relative),
                        previous: absolute_offset(base_offset, previous),
                    });
                }
            }
            entries.push((relative, position));
            Ok(())
        })?;
        let index = OffsetIndex {
            base_offset,
            entries,
            max_entries: max_index_size / ENTRY_SIZE,
            file,
        };
        tracing::debug!(
            path = %path.display(),
            entries = index.entries.len(),
            max_entries = index.max_entries,
            last_offset = index.last_offset(),
            "loaded offset index"
        );
        Ok(index)
    }

    /// Adds an entry: `offset` starts at byte `position` of the segment's log. Errors are
    /// checked in Kafka's order: [`IndexError::Full`], then [`IndexError::InvalidAppend`]
    /// (offset not above the last entry), then [`IndexError::OffsetOverflow`] (not in
    /// `base..=base + i32::MAX`).
    pub fn append(&mut self, offset: i64, position: u32) -> Result<(), IndexError> {
        if self.is_full() {
            return Err(IndexError::Full {
                path: self.path().to_path_buf(),
                max_entries: self.max_entries,
            });
        }
        if !self.entries.is_empty() && offset <= self.last_offset() {
            return Err(IndexError::InvalidAppend {
                path: self.path().to_path_buf(),
                offset,
                last_offset: self.last_offset(),
            });
        }
        let relative = relative_offset(self.base_offset, offset).ok_or_else(|| IndexError::OffsetOverflow {
            path: self.path().to_path_buf(),
            offset,
            base_offset: self.base_offset,
        })?;
        self.file.append(&encode(relative, position))?;
        self.entries.push((relative, position));
        Ok(())
    }

    /// The entry with the greatest offset `<= target_offset` as `(offset, position)`. If there is
    /// no such entry, `(base_offset, 0)`: start reading at the top of the segment. This matches
    /// Kafka's `OffsetIndex.lookup`.
    pub fn lookup(&self, target_offset: i64) -> (i64, u32) {
        let below = self
            .entries
            .partition_point(|&(rel, _)| absolute_offset(self.base_offset, rel) <= target_offset);
        match self.entries[..below].last() {
            Some(&(rel, position)) => (absolute_offset(self.base_offset, rel), position),
            None => (self.base_offset, 0),
        }
    }

    /// The `n`th entry as `(offset, position)`.
    pub fn entry(&self, n: usize) -> Option<(i64, u32)> {
        self.entries
            .get(n)
            .map(|&(rel, position)| (absolute_offset(self.base_offset, rel), position))
    }

    /// Removes every entry with an offset `>= offset` and shrinks the file to match. If `offset`
    /// is above the last entry, nothing changes.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), IndexError> {
        let keep = self
            .entries
            .partition_point(|&(rel, _)| absolute_offset(self.base_offset, rel) < offset);
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

    /// True when no more entries fit. This is one of Kafka's reasons to roll a segment.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Whether `offset` can be stored relative to this index's base offset (Kafka's
    /// `canAppendOffset`). If it cannot, the segment must roll before the offset is written.
    pub fn can_append_offset(&self, offset: i64) -> bool {
        relative_offset(self.base_offset, offset).is_some()
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

    /// The offset of the last entry, or `base_offset` if the index is empty.
    pub fn last_offset(&self) -> i64 {
        self.entries
            .last()
            .map_or(self.base_offset, |&(rel, _)| absolute_offset(self.base_offset, rel))
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

fn encode(relative: u32, position: u32) -> [u8; ENTRY_SIZE] {
    let mut raw = [0u8; ENTRY_SIZE];
    raw[..4].copy_from_slice(&relative.to_be_bytes());
    raw[4..].copy_from_slice(&position.to_be_bytes());
    raw
}

fn decode(raw: [u8; ENTRY_SIZE]) -> (u32, u32) {
    let [r0, r1, r2, r3, p0, p1, p2, p3] = raw;
    (
        u32::from_be_bytes([r0, r1, r2, r3]),
        u32::from_be_bytes([p0, p1, p2, p3]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    const BASE: i64 = 1000;

    fn index_path(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("00000000000000001000.index")
    }

    fn open(path: &Path) -> OffsetIndex {
        OffsetIndex::open(path, BASE, 10 * 1024 * 1024).expect("open index")
    }

    fn raw_entries(entries: &[(u32, u32)]) -> Vec<u8> {
        entries.iter().flat_map(|&(rel, pos)| encode(rel, pos)).collect()
    }

    fn corrupt_reason(result: Result<OffsetIndex, IndexError>) -> CorruptReason {
        match result {
            Err(IndexError::Corrupt { reason, .. }) => reason,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn lookup_returns_the_greatest_entry_at_or_below_the_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        for (offset, position) in [(1010, 4100), (1020, 8300), (1035, 12500)] {
            index.append(offset, position).expect("append");
        }
        assert_eq!(index.lookup(1010), (1010, 4100));
        assert_eq!(index.lookup(1019), (1010, 4100));
        assert_eq!(index.lookup(1020), (1020, 8300));
        assert_eq!(index.lookup(i64::MAX), (1035, 12500));
        // Kafka: a target below the first entry (or an empty index) gives (baseOffset, 0).
        assert_eq!(index.lookup(1009), (BASE, 0));
        assert_eq!(index.lookup(0), (BASE, 0));
        assert_eq!(index.last_offset(), 1035);
        assert_eq!(index.entry(1), Some((1020, 8300)));
        assert_eq!(index.entry(3), None);
    }

    #[test]
    fn an_empty_index_looks_up_the_segment_start() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = open(&index_path(&dir));
        assert_eq!(index.lookup(5000), (BASE, 0));
        assert_eq!(index.last_offset(), BASE);
        assert_eq!((index.entries(), index.size_in_bytes()), (0, 0));
    }

    #[test]
    fn entries_are_written_as_kafka_big_endian_relative_offset_and_position() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut index = open(&path);
        index.append(1000, 0).expect("append");
        index.append(1000 + 0x0102_0304, 0x0A0B_0C0D).expect("append");
        index.sync().expect("sync");
        let bytes = fs::read(&path).expect("read");
        assert_eq!(bytes, vec![0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0x0A, 0x0B, 0x0C, 0x0D]);
    }

    #[test]
    fn reopening_restores_every_entry_and_appending_continues() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut index = open(&path);
        index.append(1001, 4096).expect("append");
        index.append(1002, 8192).expect("append");
        index.sync().expect("sync");
        drop(index);

        let mut index = open(&path);
        assert_eq!(index.entries(), 2);
        assert_eq!(index.lookup(1002), (1002, 8192));
        index.append(1003, 12288).expect("append after reopen");
        drop(index);
        assert_eq!(open(&path).lookup(i64::MAX), (1003, 12288));
    }

    #[test]
    fn append_rejects_an_offset_not_above_the_last_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        index.append(1005, 100).expect("append");
        for offset in [1005, 1004] {
            match index.append(offset, 200) {
                Err(IndexError::InvalidAppend {
                    offset: o,
                    last_offset: 1005,
                    ..
                }) => assert_eq!(o, offset),
                other => panic!("expected InvalidAppend, got {other:?}"),
            }
        }
        assert_eq!(index.entries(), 1);
    }

    #[test]
    fn append_rejects_offsets_that_do_not_fit_a_signed_int32_relative_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = open(&index_path(&dir));
        let too_far = BASE + i64::from(i32::MAX) + 1;
        assert!(!index.can_append_offset(too_far));
        assert!(matches!(
            index.append(too_far, 0),
            Err(IndexError::OffsetOverflow { .. })
        ));
        assert!(matches!(
            index.append(BASE - 1, 0),
            Err(IndexError::OffsetOverflow { .. })
        ));
        assert!(index.can_append_offset(BASE + i64::from(i32::MAX)));
        index
            .append(BASE + i64::from(i32::MAX), 7)
            .expect("largest relative offset");
        assert_eq!(index.lookup(i64::MAX), (BASE + i64::from(i32::MAX), 7));
    }

    #[test]
    fn a_full_index_refuses_appends_until_truncated() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 30 bytes hold 3 whole entries; Kafka rounds the size down to a multiple of 8.
        let mut index = OffsetIndex::open(&index_path(&dir), BASE, 30).expect("open");
        assert_eq!(index.max_entries(), 3);
        for i in 1..=3 {
            assert!(!index.is_full());
            index.append(BASE + i, 0).expect("append");
        }
        assert!(index.is_full());
        assert!(matches!(
            index.append(BASE + 4, 0),
            Err(IndexError::Full { max_entries: 3, .. })
        ));
        index.truncate_to(BASE + 3).expect("truncate");
        assert!(!index.is_full());
    }

    #[test]
    fn a_max_index_size_below_one_entry_is_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let result = OffsetIndex::open(&index_path(&dir), BASE, 7);
        assert!(matches!(
            result,
            Err(IndexError::InvalidMaxIndexSize {
                max_index_size: 7,
                entry_size: 8,
                ..
            })
        ));
    }

    #[test]
    fn truncate_to_drops_entries_at_or_above_the_offset_and_shrinks_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut index = open(&path);
        for (offset, position) in [(1010, 1), (1020, 2), (1030, 3), (1040, 4)] {
            index.append(offset, position).expect("append");
        }
        // Kafka's three cases: an exact hit drops that entry; between entries keeps the lower
        // one; below every entry empties the index. Past the end is a no-op.
        index.truncate_to(1050).expect("past the end");
        assert_eq!(index.entries(), 4);
        index.truncate_to(1030).expect("exact");
        assert_eq!((index.entries(), index.last_offset()), (2, 1020));
        index.truncate_to(1015).expect("between");
        assert_eq!((index.entries(), index.last_offset()), (1, 1010));
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 8);
        index.append(1011, 9).expect("append after truncation");
        drop(index);
        let mut index = open(&path);
        assert_eq!((index.entry(0), index.entry(1)), (Some((1010, 1)), Some((1011, 9))));
        index.truncate_to(1000).expect("below all");
        assert_eq!((index.entries(), index.size_in_bytes()), (0, 0));
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 0);
    }

    #[test]
    fn reset_empties_the_index_and_its_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut index = open(&path);
        index.append(1001, 10).expect("append");
        index.reset().expect("reset");
        assert_eq!((index.entries(), index.last_offset()), (0, BASE));
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 0);
        index.append(1000, 0).expect("append at base after reset");
    }

    #[test]
    fn a_kafka_preallocated_file_loads_without_its_zero_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut bytes = raw_entries(&[(3, 4200), (9, 8500)]);
        bytes.resize(8 * 1024, 0);
        fs::write(&path, &bytes).expect("write");

        let mut index = open(&path);
        assert_eq!(index.entries(), 2);
        assert_eq!(index.lookup(i64::MAX), (1009, 8500));
        // The tail is trimmed, so the next append lands right after the real entries.
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 16);
        index.append(1012, 9000).expect("append");
        index.sync().expect("sync");
        assert_eq!(
            fs::read(&path).expect("read"),
            raw_entries(&[(3, 4200), (9, 8500), (12, 9000)])
        );
    }

    #[test]
    fn a_never_written_preallocated_file_keeps_only_its_first_slot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, vec![0u8; 4096]).expect("write");
        let mut index = open(&path);
        // Slot 0 may legitimately be (base, 0). It gives the same lookups as an empty index.
        assert_eq!(index.entries(), 1);
        assert_eq!(index.lookup(5000), (BASE, 0));
        index.append(1001, 4100).expect("append");
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&path).expect("stat").len(), 16);
    }

    #[test]
    fn a_file_whose_size_is_not_a_multiple_of_eight_is_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let mut bytes = raw_entries(&[(1, 10)]);
        bytes.push(0);
        fs::write(&path, &bytes).expect("write");
        let reason = corrupt_reason(OffsetIndex::open(&path, BASE, 4096));
        assert_eq!(reason, CorruptReason::SizeNotMultiple { len: 9, entry_size: 8 });
        // Corruption is reported, never repaired behind the caller's back.
        assert_eq!(fs::read(&path).expect("read"), bytes);
    }

    #[test]
    fn a_file_with_decreasing_or_repeated_offsets_is_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, raw_entries(&[(5, 10), (4, 20)])).expect("write");
        let reason = corrupt_reason(OffsetIndex::open(&path, BASE, 4096));
        assert_eq!(
            reason,
            CorruptReason::OffsetNotIncreasing {
                slot: 1,
                offset: 1004,
                previous: 1005
            }
        );

        fs::write(&path, raw_entries(&[(5, 10), (5, 20)])).expect("write");
        assert!(matches!(
            corrupt_reason(OffsetIndex::open(&path, BASE, 4096)),
            CorruptReason::OffsetNotIncreasing { slot: 1, .. }
        ));
    }

    #[test]
    fn a_zero_entry_between_real_entries_is_corrupt_not_padding() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, raw_entries(&[(5, 10), (0, 0), (9, 30)])).expect("write");
        let reason = corrupt_reason(OffsetIndex::open(&path, BASE, 4096));
        assert_eq!(
            reason,
            CorruptReason::OffsetNotIncreasing {
                slot: 1,
                offset: 1000,
                previous: 1005
            }
        );
    }

    #[test]
    fn a_relative_offset_kafka_would_read_as_negative_is_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        fs::write(&path, raw_entries(&[(0x8000_0000, 10)])).expect("write");
        let reason = corrupt_reason(OffsetIndex::open(&path, BASE, 4096));
        assert_eq!(
            reason,
            CorruptReason::RelativeOffsetOverflow {
                slot: 0,
                relative_offset: 0x8000_0000
            }
        );
    }

    #[test]
    fn an_unopenable_path_is_an_io_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let result = OffsetIndex::open(&dir.path().join("missing-dir").join("0.index"), BASE, 4096);
        assert!(matches!(result, Err(IndexError::Io { .. })));
    }

    #[test]
    fn a_renamed_index_keeps_appending_to_the_new_path_and_delete_removes_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = index_path(&dir);
        let renamed = dir.path().join("00000000000000001000.index.deleted");
        let mut index = open(&path);
        index.append(1001, 1).expect("append");
        index.rename_to(&renamed).expect("rename");
        assert_eq!(index.path(), renamed.as_path());
        assert!(!path.exists());
        index.append(1002, 2).expect("append after rename");
        index.sync().expect("sync");
        assert_eq!(fs::metadata(&renamed).expect("stat").len(), 16);
        assert!(index.delete().expect("delete"));
        assert!(!renamed.exists());
    }
}
