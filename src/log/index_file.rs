//! The file under a segment index (`.index`, `.timeindex`) and [`IndexError`], shared by
//! [`OffsetIndex`](super::offset_index::OffsetIndex) and [`TimeIndex`](super::time_index::TimeIndex).
//! This module moves fixed-size entries between disk and the caller. It does not know either
//! entry layout or the ordering rules; those stay with the two index types.
//!
//! Kafka preallocates index files to `segment.index.bytes` and memory-maps them. kastle does
//! neither. The file holds exactly the valid entries and grows by appending, which is still a
//! valid index for Kafka's tools (`kafka-dump-log.sh`, a broker reading our log dir). A file
//! that Kafka preallocated ends in all-zero slots. When such a file is opened, the zero tail
//! after the first entry is trimmed off, so later appends land right after the real entries.
//!
//! No file handle stays open between operations: entries live in memory (in the two index
//! types), so the file is only opened to append a batch of entries, cut it back, or sync it.
//! Kafka's mmapped indexes hold no descriptor either; keeping two per segment open would put a
//! broker with 10,000 partitions at 30,000 descriptors, over common `nofile` limits.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// Why an index operation failed. `Corrupt` means the caller rebuilds the index from its
/// segment (Kafka's `CorruptIndexException`). `Io` counts as a disk failure. The other
/// variants are caller bugs, and Kafka throws on them too.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index {} is corrupt: {reason}; rebuild it from its segment", path.display())]
    Corrupt { path: PathBuf, reason: CorruptReason },
    #[error("I/O error on index {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("index {} is full ({max_entries} entries); the segment must roll first", path.display())]
    Full { path: PathBuf, max_entries: usize },
    #[error("cannot index offset {offset} in {}: the last indexed offset is {last_offset}", path.display())]
    InvalidAppend {
        path: PathBuf,
        offset: i64,
        last_offset: i64,
    },
    #[error("cannot index timestamp {timestamp} in {}: the last indexed timestamp is {last_timestamp}", path.display())]
    TimestampRegression {
        path: PathBuf,
        timestamp: i64,
        last_timestamp: i64,
    },
    #[error("offset {offset} is outside {base_offset}..={base_offset}+{} and cannot be indexed in {}", i32::MAX, path.display())]
    OffsetOverflow {
        path: PathBuf,
        offset: i64,
        base_offset: i64,
    },
    #[error("max index size {max_index_size} for {} is smaller than one {entry_size}-byte entry", path.display())]
    InvalidMaxIndexSize {
        path: PathBuf,
        max_index_size: usize,
        entry_size: usize,
    },
}

/// What made [`IndexError::Corrupt`]. Slots count from 0 in file order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorruptReason {
    #[error("its {len} bytes are not a multiple of the {entry_size}-byte entry size")]
    SizeNotMultiple { len: u64, entry_size: usize },
    #[error("entry {slot} has offset {offset}, not above the previous entry's {previous}")]
    OffsetNotIncreasing { slot: usize, offset: i64, previous: i64 },
    #[error("entry {slot} has offset {offset}, below the previous entry's {previous}")]
    OffsetDecreasing { slot: usize, offset: i64, previous: i64 },
    #[error("entry {slot} has timestamp {timestamp}, below the previous entry's {previous}")]
    TimestampDecreasing { slot: usize, timestamp: i64, previous: i64 },
    /// Kafka stores relative offsets as a signed int32, so this entry would read as negative.
    #[error("entry {slot} has relative offset {relative_offset}, above {}", i32::MAX)]
    RelativeOffsetOverflow { slot: usize, relative_offset: u32 },
}

/// `offset - base_offset` if it is within `0..=i32::MAX`. Kafka's `AbstractIndex.toRelative`
/// uses the same range: the field is a signed int32 on disk.
pub(super) fn relative_offset(base_offset: i64, offset: i64) -> Option<u32> {
    let relative = offset.checked_sub(base_offset)?;
    if (0..=i64::from(i32::MAX)).contains(&relative) {
        u32::try_from(relative).ok()
    } else {
        None
    }
}

/// Turns a stored relative offset back into an absolute one. Saturates instead of panicking
/// on a base offset within 2^31 of `i64::MAX`; no real offset comes close to that.
pub(super) fn absolute_offset(base_offset: i64, relative: u32) -> i64 {
    base_offset.saturating_add(i64::from(relative))
}

/// An index file appended to. It holds exactly `len` bytes of whole entries.
#[derive(Debug)]
pub(super) struct IndexFile {
    path: PathBuf,
    /// Bytes of valid entries on disk. We keep it so a failed write can be cut back.
    len: u64,
    /// Entries appended but not yet written: batching them saves one write syscall per
    /// indexed batch on the append path. Written when 4 KiB accumulate, on sync, truncate,
    /// rename and drop; after a crash, recovery rebuilds any index whose entries were lost.
    pending: Vec<u8>,
}

/// Pending index bytes that trigger a write.
const PENDING_LIMIT: usize = 4096;

impl IndexFile {
    /// Opens `path`, creating it if needed, and hands each entry to `accept` in file order
    /// (`slot`, raw bytes). `accept` validates and stores the entry. All-zero entries after
    /// slot 0 are held back. They are passed on only if a non-zero entry follows them. A zero
    /// tail (Kafka's preallocation) is never passed on and is cut from the file.
    pub(super) fn open<const N: usize>(
        path: &Path,
        mut accept: impl FnMut(usize, [u8; N]) -> Result<(), CorruptReason>,
    ) -> Result<IndexFile, IndexError> {
        let io_err = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let corrupt = |reason| IndexError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_err)?;
        let file_len = file.metadata().map_err(io_err)?.len();
        let entry_size = N as u64;
        if file_len % entry_size != 0 {
            return Err(corrupt(CorruptReason::SizeNotMultiple {
                len: file_len,
                entry_size: N,
            }));
        }

        let mut reader = BufReader::with_capacity(64 * 1024, &file);
        let mut accepted = 0usize;
        let mut held_zeros = 0usize;
        for slot in 0..file_len / entry_size {
            let mut entry = [0u8; N];
            reader.read_exact(&mut entry).map_err(io_err)?;
            if slot > 0 && entry == [0u8; N] {
                held_zeros += 1;
                continue;
            }
            // Zeros with a real entry after them are not preallocation. They count as entries,
            // and the ordering checks will almost certainly reject them.
            for _ in 0..held_zeros {
                accept(accepted, [0u8; N]).map_err(corrupt)?;
                accepted += 1;
            }
            held_zeros = 0;
            accept(accepted, entry).map_err(corrupt)?;
            accepted += 1;
        }
        drop(reader);

        let len = accepted as u64 * entry_size;
        if len < file_len {
            file.set_len(len).map_err(io_err)?;
            tracing::debug!(path = %path.display(), from = file_len, to = len, "trimmed zero-filled index tail");
        }
        Ok(IndexFile {
            path: path.to_path_buf(),
            len,
            pending: Vec::new(),
        })
    }

    /// The file opened with `O_APPEND`, so each write lands at the end, also after a truncation.
    fn reopen(&self) -> io::Result<File> {
        OpenOptions::new().append(true).open(&self.path)
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one encoded entry (buffered; see `pending`).
    pub(super) fn append(&mut self, entry: &[u8]) -> Result<(), IndexError> {
        self.pending.extend_from_slice(entry);
        if self.pending.len() >= PENDING_LIMIT {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the buffered entries. If the write fails, the file is cut back to its previous
    /// length. Otherwise a partial entry could be left behind, and the next open would
    /// reject the whole file as corrupt.
    fn write_pending(&mut self) -> Result<(), IndexError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        match self.reopen() {
            Ok(mut file) => self.write_pending_to(&mut file),
            Err(source) => {
                self.pending.clear();
                Err(IndexError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    fn write_pending_to(&mut self, file: &mut File) -> Result<(), IndexError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if let Err(source) = file.write_all(&self.pending) {
            if let Err(cut) = file.set_len(self.len) {
                tracing::warn!(path = %self.path.display(), error = %cut, "could not cut back a failed index append");
            }
            self.pending.clear();
            return Err(IndexError::Io {
                path: self.path.clone(),
                source,
            });
        }
        self.len += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Shrinks the index to `len` bytes of entries. Does nothing if it is already that short.
    pub(super) fn truncate(&mut self, len: u64) -> Result<(), IndexError> {
        let total = self.len + self.pending.len() as u64;
        if len >= total {
            return Ok(());
        }
        if len >= self.len {
            self.pending.truncate((len - self.len) as usize);
            return Ok(());
        }
        self.pending.clear();
        self.reopen()
            .and_then(|file| file.set_len(len))
            .map_err(|source| IndexError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.len = len;
        Ok(())
    }

    /// Writes the buffered entries, then flushes them and the file length to disk.
    pub(super) fn sync(&mut self) -> io::Result<()> {
        self.sync_handle()?.sync_data()
    }

    /// Writes the buffered entries and returns the open file, for an fsync later (and
    /// elsewhere: it stays valid if the index is renamed or deleted meanwhile).
    pub(super) fn sync_handle(&mut self) -> io::Result<File> {
        let mut file = self.reopen()?;
        self.write_pending_to(&mut file).map_err(|e| match e {
            IndexError::Io { source, .. } => source,
            other => io::Error::other(other.to_string()),
        })?;
        Ok(file)
    }

    /// Renames the file (same filesystem, atomic), buffered entries written first. The stored
    /// path changes only if the rename succeeds.
    pub(super) fn rename_to(&mut self, new_path: &Path) -> Result<(), IndexError> {
        self.write_pending()?;
        fs::rename(&self.path, new_path).map_err(|source| IndexError::Io {
            path: self.path.clone(),
            source,
        })?;
        self.path = new_path.to_path_buf();
        Ok(())
    }

    /// Closes and removes the file. `Ok(false)` if it was already gone (Kafka's `deleteIfExists`).
    pub(super) fn delete(mut self) -> Result<bool, IndexError> {
        let path = self.path.clone();
        self.pending.clear();
        drop(self);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(IndexError::Io { path, source }),
        }
    }
}

impl Drop for IndexFile {
    /// Closing writes what is buffered (without fsync), so a cleanly closed index is complete.
    /// A file that is gone (its partition was deleted) needs nothing.
    fn drop(&mut self) {
        if self.pending.is_empty() || !self.path.exists() {
            return;
        }
        if let Err(e) = self.write_pending() {
            tracing::warn!(error = %e, "could not write buffered index entries on close");
        }
    }
}
