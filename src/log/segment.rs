//! One log segment: `<20-digit base offset>.log` with its sparse `.index` and `.timeindex`, as
//! Kafka lays them out. Appends take batches that already carry their final offsets; reads
//! return whole batches as bytes straight from the file; recovery re-validates every batch and
//! rebuilds the indexes, cutting the file at the first invalid byte.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::file::{Faults, LogFile};
use super::offset_index::{IndexError, OffsetIndex};
use super::time_index::TimeIndex;
use super::timestamp_search::{self, TimestampAndOffset};
use crate::protocol::record_batch::{BatchHeader, BatchScanner, ScanError, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};

/// `00000000000000000042.log` and friends.
pub fn file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

/// The base offset encoded in a segment file name, if it is one.
pub fn parse_base_offset(name: &str) -> Option<(i64, &str)> {
    let (stem, suffix) = name.split_at(name.find('.')?);
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem.parse().ok()?, suffix))
}

/// Settings a segment needs.
#[derive(Debug, Clone, Copy)]
pub struct SegmentConfig {
    pub index_interval_bytes: usize,
    pub max_index_size: usize,
}

/// An I/O failure, with the file it happened on.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct SegmentIoError {
    pub op: &'static str,
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryOutcome {
    pub valid_bytes: u64,
    pub truncated_bytes: u64,
    /// Why the tail was cut, and where.
    pub problem: Option<ScanError>,
}

/// A read from a segment: whole batches.
#[derive(Debug, Clone)]
pub struct SegmentRead {
    pub bytes: Bytes,
    /// Base offset of the first batch returned (may be below the requested offset).
    pub first_batch_offset: i64,
}

#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    log: LogFile,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    config: SegmentConfig,
    bytes_since_last_index_entry: usize,
    /// Largest batch max-timestamp seen, and the last offset of the batch that had it.
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    /// Max timestamp of the first batch: what `segment.ms` counts from (Kafka's rule).
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    /// Offset after the last batch.
    next_offset: i64,
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SegmentIoError + 'a {
    move |source| SegmentIoError {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl LogSegment {
    /// Creates an empty segment (files created if missing).
    pub fn create(
        dir: &Path,
        base_offset: i64,
        config: SegmentConfig,
        faults: &Faults,
        now_ms: i64,
    ) -> Result<LogSegment, SegmentIoError> {
        let log_path = dir.join(file_name(base_offset, ".log"));
        let log = LogFile::open(&log_path, faults).map_err(io("create", &log_path))?;
        let (offset_index, time_index) = open_indexes(dir, base_offset, config, true)?;
        Ok(LogSegment::assemble(
            base_offset,
            log,
            (offset_index, time_index),
            config,
            now_ms,
        ))
    }

    /// A segment over opened files, with nothing known yet about its batches.
    fn assemble(
        base_offset: i64,
        log: LogFile,
        (offset_index, time_index): (OffsetIndex, TimeIndex),
        config: SegmentConfig,
        now_ms: i64,
    ) -> LogSegment {
        LogSegment {
            base_offset,
            log,
            offset_index,
            time_index,
            config,
            bytes_since_last_index_entry: 0,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            next_offset: base_offset,
        }
    }

    /// Opens an existing segment. With `recover`, every batch is re-validated and the indexes
    /// rebuilt (the file is cut at the first invalid byte); without it the indexes are trusted
    /// unless they are unreadable, in which case they are rebuilt anyway.
    pub fn open(
        dir: &Path,
        base_offset: i64,
        config: SegmentConfig,
        faults: &Faults,
        recover: bool,
        max_batch_size: usize,
        now_ms: i64,
    ) -> Result<(LogSegment, Option<RecoveryOutcome>), SegmentIoError> {
        let log_path = dir.join(file_name(base_offset, ".log"));
        let log = LogFile::open(&log_path, faults).map_err(io("open", &log_path))?;
        let (indexes, indexes_ok) = match open_indexes(dir, base_offset, config, false) {
            Ok(ix) => (ix, true),
            Err(e) => {
                tracing::warn!(error = %e, "index unusable; rebuilding it from the log");
                (open_indexes(dir, base_offset, config, true)?, false)
            }
        };
        let mut segment = LogSegment::assemble(base_offset, log, indexes, config, now_ms);
        if recover || !indexes_ok {
            let outcome = segment.recover(max_batch_size)?;
            return Ok((segment, Some(outcome)));
        }
        segment.load_tail()?;
        Ok((segment, None))
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Offset after the last batch (the base of the next segment, or the LEO when active).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    pub fn size(&self) -> u64 {
        self.log.size()
    }

    pub fn is_empty(&self) -> bool {
        self.log.size() == 0
    }

    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// What retention ages the segment by: its largest record timestamp, or (with none) the
    /// file's last-modified time, as Kafka does.
    pub fn largest_timestamp(&self) -> i64 {
        if self.max_timestamp >= 0 {
            return self.max_timestamp;
        }
        std::fs::metadata(self.log.path())
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64)
            .unwrap_or(-1)
    }

    pub fn path(&self) -> &Path {
        self.log.path()
    }

    /// Whether appending a batch ending at `last_offset` would overflow the indexes' relative
    /// offsets or fill an index (reasons to roll).
    pub fn cannot_take(&self, last_offset: i64) -> bool {
        last_offset - self.base_offset > i64::from(i32::MAX) || self.offset_index.is_full() || self.time_index.is_full()
    }

    /// How long this segment has been rolling by Kafka's rule: from the first batch's
    /// timestamp to the incoming one, or from creation when there are no timestamps.
    pub fn time_waited_for_roll(&self, now_ms: i64, incoming_max_timestamp: i64) -> i64 {
        match self.rolling_based_timestamp {
            Some(t) if t >= 0 => incoming_max_timestamp - t,
            _ => now_ms - self.created_ms,
        }
    }

    /// Appends batches whose headers (`batches`, in order) describe `data` exactly.
    pub fn append(&mut self, data: &[u8], batches: &[BatchHeader]) -> Result<(), SegmentIoError> {
        self.append_parts(&[data], batches)
    }

    /// [`Self::append`] for batches given as consecutive pieces (a leader's patched headers and
    /// the request's records), written with one vectored write.
    pub fn append_parts(&mut self, parts: &[&[u8]], batches: &[BatchHeader]) -> Result<(), SegmentIoError> {
        let mut position = self.log.size();
        let path = self.log.path().to_path_buf();
        self.log.append_parts(parts).map_err(io("append to", &path))?;
        for batch in batches {
            self.index_batch(batch, position)?;
            position += batch.size_in_bytes() as u64;
        }
        Ok(())
    }

    /// Records a batch now in the file at `position` in the indexes and timestamps.
    fn index_batch(&mut self, batch: &BatchHeader, position: u64) -> Result<(), SegmentIoError> {
        if self.rolling_based_timestamp.is_none() {
            self.rolling_based_timestamp = Some(batch.max_timestamp);
        }
        if batch.max_timestamp > self.max_timestamp {
            self.max_timestamp = batch.max_timestamp;
            self.offset_of_max_timestamp = batch.last_offset();
        }
        self.bytes_since_last_index_entry += batch.size_in_bytes();
        if self.bytes_since_last_index_entry > self.config.index_interval_bytes {
            let pos = u32::try_from(position).unwrap_or(u32::MAX);
            // A full index only makes the index sparser (the segment rolls before the next
            // append); it is never a disk failure.
            match self.offset_index.append(batch.last_offset(), pos) {
                Ok(()) | Err(IndexError::Full { .. }) => {}
                Err(e) => return Err(index_err(self.offset_index.path(), e)),
            }
            match self
                .time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            {
                Ok(()) | Err(IndexError::Full { .. }) => {}
                Err(e) => return Err(index_err(self.time_index.path(), e)),
            }
            self.bytes_since_last_index_entry = 0;
        }
        self.next_offset = batch.next_offset();
        Ok(())
    }

    /// Reads the 61-byte header of the batch at `position`, if a whole one is there.
    fn header_at(&self, position: u64) -> Result<Option<BatchHeader>, SegmentIoError> {
        let mut buf = [0u8; RECORD_BATCH_OVERHEAD];
        let n = self
            .log
            .read_at(&mut buf, position)
            .map_err(io("read", self.log.path()))?;
        if n < RECORD_BATCH_OVERHEAD {
            return Ok(None);
        }
        Ok(BatchHeader::parse(&buf).ok())
    }

    /// The position of the first batch whose last offset is ≥ `offset`, and its header.
    pub fn translate_offset(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>, SegmentIoError> {
        let (_, start) = self.offset_index.lookup(offset);
        let mut position = u64::from(start);
        while position < self.log.size() {
            let Some(header) = self.header_at(position)? else {
                return Ok(None);
            };
            if header.last_offset() >= offset {
                return Ok(Some((position, header)));
            }
            position += header.size_in_bytes() as u64;
        }
        Ok(None)
    }

    /// Calls `visit` with the header of every batch from the one holding `offset` to the end,
    /// reading 61 bytes per batch, not the records (what rebuilding producer state needs).
    pub fn for_each_header_from(&self, offset: i64, mut visit: impl FnMut(&BatchHeader)) -> Result<(), SegmentIoError> {
        let Some((mut position, first)) = self.translate_offset(offset)? else {
            return Ok(());
        };
        visit(&first);
        position += first.size_in_bytes() as u64;
        while position < self.log.size() {
            let Some(header) = self.header_at(position)? else {
                break;
            };
            visit(&header);
            position += header.size_in_bytes() as u64;
        }
        Ok(())
    }

    /// Whole batches from the one holding `offset`, at most `max_bytes` (but the first batch
    /// whole when `min_one` and it is larger), stopping before any batch reaching `max_offset`
    /// (exclusive: the HW for consumers, the LEO for replicas).
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        max_offset: i64,
        min_one: bool,
    ) -> Result<Option<SegmentRead>, SegmentIoError> {
        let Some((position, first)) = self.translate_offset(offset)? else {
            return Ok(None);
        };
        if first.last_offset() >= max_offset {
            return Ok(None);
        }
        let available = (self.log.size() - position) as usize;
        let want = if min_one {
            max_bytes.max(first.size_in_bytes())
        } else {
            max_bytes
        };
        let mut buf = self
            .log
            .read_vec_at(want.min(available), position)
            .map_err(io("read", self.log.path()))?;
        let mut keep = 0;
        // The file's batches were validated when written or recovered; reads only walk headers.
        for item in BatchScanner::without_crc(&buf) {
            let Ok((pos, header)) = item else { break };
            let end = pos + header.size_in_bytes();
            let fits = end <= max_bytes || (pos == 0 && min_one);
            if header.last_offset() >= max_offset || !fits {
                break;
            }
            keep = end;
        }
        if keep == 0 {
            return Ok(None);
        }
        buf.truncate(keep);
        Ok(Some(SegmentRead {
            bytes: Bytes::from(buf),
            first_batch_offset: first.base_offset,
        }))
    }

    /// Re-validates the whole file, rebuilding indexes and timestamps; cuts the file at the
    /// first invalid byte.
    pub fn recover(&mut self, max_batch_size: usize) -> Result<RecoveryOutcome, SegmentIoError> {
        self.offset_index
            .reset()
            .map_err(|e| index_err(self.offset_index.path(), e))?;
        self.time_index
            .reset()
            .map_err(|e| index_err(self.time_index.path(), e))?;
        self.bytes_since_last_index_entry = 0;
        self.max_timestamp = -1;
        self.offset_of_max_timestamp = self.base_offset;
        self.rolling_based_timestamp = None;
        self.next_offset = self.base_offset;
        let (valid, problem) = self.scan(0, max_batch_size, true)?;
        let size = self.log.size();
        if valid < size {
            let path = self.log.path().to_path_buf();
            self.log.truncate(valid).map_err(io("truncate", &path))?;
        }
        Ok(RecoveryOutcome {
            valid_bytes: valid,
            truncated_bytes: size - valid,
            problem,
        })
    }

    /// Loads next offset and max timestamp from the tail, starting at the last index entry.
    fn load_tail(&mut self) -> Result<(), SegmentIoError> {
        let (_, start) = self.offset_index.lookup(i64::MAX);
        if let Some((ts, offset)) = self.time_index.last_entry() {
            self.max_timestamp = ts;
            self.offset_of_max_timestamp = offset;
        }
        if let Some(first) = self.header_at(0)? {
            self.rolling_based_timestamp = Some(first.max_timestamp);
        }
        let (valid, problem) = self.scan(u64::from(start), usize::MAX, false)?;
        if let Some(problem) = problem {
            // Only a crash leaves a bad tail, and then recovery runs; report, don't guess.
            tracing::warn!(file = %self.log.path().display(), ?problem, valid, "invalid bytes at the end of a cleanly closed segment");
        }
        Ok(())
    }

    /// Walks batches from `start`, checking CRCs when `validate`; indexes them when rebuilding
    /// (start 0). Returns the end of the last valid batch and why the walk stopped early.
    fn scan(
        &mut self,
        start: u64,
        max_batch_size: usize,
        validate: bool,
    ) -> Result<(u64, Option<ScanError>), SegmentIoError> {
        const CHUNK: usize = 8 << 20;
        let size = self.log.size();
        let mut chunk_start = start;
        let mut buf = Vec::new();
        loop {
            if chunk_start >= size {
                return Ok((chunk_start, None));
            }
            let len = ((size - chunk_start) as usize).min(CHUNK.max(buf.capacity()));
            buf.resize(len, 0);
            let n = self
                .log
                .read_at(&mut buf, chunk_start)
                .map_err(io("read", self.log.path()))?;
            buf.truncate(n);
            let mut consumed = 0usize;
            let mut stop = None;
            let scanner = if validate {
                BatchScanner::new(&buf)
            } else {
                BatchScanner::without_crc(&buf)
            };
            let mut headers = Vec::new();
            for item in scanner {
                match item {
                    Ok((pos, header)) if header.size_in_bytes() <= max_batch_size.saturating_add(LOG_OVERHEAD) => {
                        headers.push((pos, header));
                        consumed = pos + header.size_in_bytes();
                    }
                    Ok((pos, header)) => {
                        stop = Some(ScanError::BadLength {
                            position: pos,
                            length: header.batch_length,
                        });
                        break;
                    }
                    Err(e) => {
                        stop = Some(e);
                        break;
                    }
                }
            }
            for (pos, header) in headers {
                if validate {
                    self.index_batch(&header, chunk_start + pos as u64)?;
                } else {
                    self.note_batch(&header);
                }
            }
            match stop {
                // A batch cut by the chunk end (not the file end): read on from it.
                Some(ScanError::Truncated { .. }) if chunk_start + (buf.len() as u64) < size => {
                    let needed = self
                        .header_at(chunk_start + consumed as u64)?
                        .map(|h| h.size_in_bytes())
                        .unwrap_or(0);
                    if consumed == 0 && needed <= buf.len() {
                        return Ok((chunk_start, Some(ScanError::Truncated { position: 0 })));
                    }
                    buf = Vec::with_capacity(needed.max(CHUNK));
                    chunk_start += consumed as u64;
                }
                Some(problem) => return Ok((chunk_start + consumed as u64, Some(shift(problem, chunk_start)))),
                None => {
                    chunk_start += consumed as u64;
                    if consumed == 0 {
                        return Ok((chunk_start, None));
                    }
                }
            }
        }
    }

    /// Tracks a batch's timestamps and end without touching the indexes.
    fn note_batch(&mut self, batch: &BatchHeader) {
        if batch.max_timestamp > self.max_timestamp {
            self.max_timestamp = batch.max_timestamp;
            self.offset_of_max_timestamp = batch.last_offset();
        }
        self.next_offset = batch.next_offset();
    }

    /// Removes every batch from the one holding `offset` on; returns the bytes removed.
    pub fn truncate_to(&mut self, offset: i64) -> Result<u64, SegmentIoError> {
        let Some((position, _)) = self.translate_offset(offset)? else {
            return Ok(0);
        };
        let size = self.log.size();
        self.offset_index
            .truncate_to(offset)
            .map_err(|e| index_err(self.offset_index.path(), e))?;
        self.time_index
            .truncate_to(offset)
            .map_err(|e| index_err(self.time_index.path(), e))?;
        let path = self.log.path().to_path_buf();
        self.log.truncate(position).map_err(io("truncate", &path))?;
        // Timestamps and the end offset are re-derived from what is left.
        self.max_timestamp = -1;
        self.offset_of_max_timestamp = self.base_offset;
        self.next_offset = self.base_offset;
        self.bytes_since_last_index_entry = 0;
        if position == 0 {
            self.rolling_based_timestamp = None;
        }
        self.load_tail()?;
        Ok(size - position)
    }

    /// The first record with a timestamp ≥ `timestamp` and an offset ≥ `starting_offset`
    /// (Kafka's `LogSegment.findOffsetByTimestamp`): the time index narrows where to start, then
    /// batches are walked and the first one whose max timestamp reaches the target has its
    /// records searched.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        starting_offset: i64,
    ) -> Result<Option<TimestampAndOffset>, SegmentIoError> {
        let (_, from_offset) = self.time_index.lookup(timestamp);
        let (_, start) = self.offset_index.lookup(from_offset.max(starting_offset));
        let mut position = u64::from(start);
        while position < self.log.size() {
            let Some(header) = self.header_at(position)? else {
                return Ok(None);
            };
            if header.max_timestamp >= timestamp && header.last_offset() >= starting_offset {
                let batch = self.batch_at(position, &header)?;
                if let Some(found) = timestamp_search::first_at_or_after(&batch, &header, timestamp, starting_offset) {
                    return Ok(Some(found));
                }
            }
            position += header.size_in_bytes() as u64;
        }
        Ok(None)
    }

    /// The record holding this segment's max timestamp (ListOffsets MAX_TIMESTAMP): the first
    /// batch reaching the max, from the indexed position of the offset that set it.
    pub fn max_timestamp_record(&self) -> Result<Option<TimestampAndOffset>, SegmentIoError> {
        if self.max_timestamp < 0 {
            return Ok(None);
        }
        let (_, start) = self.offset_index.lookup(self.offset_of_max_timestamp);
        let mut position = u64::from(start);
        while position < self.log.size() {
            let Some(header) = self.header_at(position)? else {
                return Ok(None);
            };
            if header.max_timestamp == self.max_timestamp {
                let batch = self.batch_at(position, &header)?;
                return Ok(Some(timestamp_search::max_timestamp_record(&batch, &header)));
            }
            position += header.size_in_bytes() as u64;
        }
        Ok(None)
    }

    /// The whole batch at `position` whose header is `header`.
    fn batch_at(&self, position: u64, header: &BatchHeader) -> Result<Vec<u8>, SegmentIoError> {
        let mut buf = vec![0u8; header.size_in_bytes()];
        let n = self
            .log
            .read_at(&mut buf, position)
            .map_err(io("read", self.log.path()))?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Called when this segment stops being the active one: the time index gets its final entry.
    /// Nothing is fsynced here: the roll hands that to the background flush ([`Self::sync_handles`]).
    pub fn on_become_inactive(&mut self) -> Result<(), SegmentIoError> {
        if self.max_timestamp >= 0 {
            self.time_index
                .maybe_append_on_roll(self.max_timestamp, self.offset_of_max_timestamp)
                .map_err(|e| index_err(self.time_index.path(), e))?;
        }
        Ok(())
    }

    /// fsyncs the log and its indexes.
    pub fn flush(&mut self) -> Result<(), SegmentIoError> {
        self.log.sync().map_err(io("fsync", self.log.path()))?;
        self.offset_index
            .sync()
            .map_err(io("fsync", self.offset_index.path()))?;
        self.time_index.sync().map_err(io("fsync", self.time_index.path()))
    }

    /// Handles on the log and index files (buffered index entries written first), to fsync
    /// later without the log's lock: what [`Self::flush`] syncs, as (path, open file).
    pub fn sync_handles(&mut self) -> Result<[(PathBuf, std::fs::File); 3], SegmentIoError> {
        let log = self.log.sync_handle().map_err(io("dup", self.log.path()))?;
        let offsets = self
            .offset_index
            .sync_handle()
            .map_err(io("write", self.offset_index.path()))?;
        let times = self
            .time_index
            .sync_handle()
            .map_err(io("write", self.time_index.path()))?;
        Ok([
            (self.log.path().to_path_buf(), log),
            (self.offset_index.path().to_path_buf(), offsets),
            (self.time_index.path().to_path_buf(), times),
        ])
    }

    /// Deletes the segment's files.
    pub fn delete(self) -> Result<(), SegmentIoError> {
        let path = self.log.path().to_path_buf();
        let ix = self.offset_index.path().to_path_buf();
        let tx = self.time_index.path().to_path_buf();
        drop(self);
        for p in [path, ix, tx] {
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(SegmentIoError {
                        op: "delete",
                        path: p,
                        source: e,
                    })
                }
            }
        }
        Ok(())
    }
}

fn shift(problem: ScanError, by: u64) -> ScanError {
    let by = by as usize;
    match problem {
        ScanError::Truncated { position } => ScanError::Truncated {
            position: position + by,
        },
        ScanError::BadLength { position, length } => ScanError::BadLength {
            position: position + by,
            length,
        },
        ScanError::BadMagic { position, magic } => ScanError::BadMagic {
            position: position + by,
            magic,
        },
        ScanError::BadCrc {
            position,
            stored,
            computed,
        } => ScanError::BadCrc {
            position: position + by,
            stored,
            computed,
        },
    }
}

fn open_indexes(
    dir: &Path,
    base_offset: i64,
    config: SegmentConfig,
    fresh: bool,
) -> Result<(OffsetIndex, TimeIndex), SegmentIoError> {
    let ix_path = dir.join(file_name(base_offset, ".index"));
    let tx_path = dir.join(file_name(base_offset, ".timeindex"));
    if fresh {
        for p in [&ix_path, &tx_path] {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(SegmentIoError {
                        op: "reset index",
                        path: p.clone(),
                        source: e,
                    })
                }
            }
        }
    }
    let wrap = |path: &Path, e: &dyn std::fmt::Display| SegmentIoError {
        op: "open index",
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let offset_index =
        OffsetIndex::open(&ix_path, base_offset, config.max_index_size).map_err(|e| wrap(&ix_path, &e))?;
    let time_index = TimeIndex::open(&tx_path, base_offset, config.max_index_size).map_err(|e| wrap(&tx_path, &e))?;
    Ok((offset_index, time_index))
}

/// An index failure, reported against the index file it happened on.
fn index_err(path: &Path, e: impl std::fmt::Display) -> SegmentIoError {
    SegmentIoError {
        op: "index",
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}
