//! `Log`: one partition's segments in its `<topic>-<partition>` dir (Kafka's `UnifiedLog`
//! without tiered storage). It assigns offsets on the leader, keeps the follower's, reads whole
//! batches under an offset ceiling, rolls, truncates, applies retention, keeps the leader-epoch
//! cache, and recovers after a crash. Every I/O error is reported to the
//! [`LogDirFailureChannel`] and returned as [`LogError::Storage`] naming the dir.
//!
//! A `Log` is used under its lock ([`super::lock_order`]: a partition's lock first, then its
//! log's, never the reverse). Its methods take every outside value as an argument and call out to
//! nothing but the failure channel, the fault seam, metrics and tracing, so nothing here can
//! wait for a lock that comes earlier. The one exception is a roll: it queues the fsync of the
//! segments it leaves with the log dir's flusher (a channel send, see [`super::flusher`]), which
//! later locks this log briefly, twice, with nothing else held; `log_flush.rs` has its steps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::config::{LogConfig, TimestampType};
use super::failure::LogDirFailureChannel;
use super::file::Faults;
use super::flusher::Flusher;
use super::leader_epoch::LeaderEpochFileCache;
use super::producer_state::{ProducerStateError, ProducerStateManager};
use super::segment::{self, LogSegment, SegmentIoError};
use super::timestamp_search::TimestampAndOffset;
use crate::protocol::error_codes as ec;
use crate::protocol::record_batch::{self, BatchError, BatchHeader, ScanError, RECORD_BATCH_OVERHEAD};
use crate::types::TopicPartition;

#[path = "log_flush.rs"]
mod flush;
#[path = "log_producers.rs"]
mod producers;
#[path = "log_truncation.rs"]
mod truncation;
use producers::ProducerCheck;

/// Name of the leader-epoch checkpoint inside a partition dir.
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// Why a log operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("log dir {} failed: {source}", dir.display())]
    Storage { dir: PathBuf, source: SegmentIoError },
    #[error("log dir {} is offline", dir.display())]
    Offline { dir: PathBuf },
    #[error("offset {offset} is out of range [{log_start}, {log_end}] of {tp}")]
    OffsetOutOfRange {
        tp: TopicPartition,
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    #[error(transparent)]
    InvalidBatch(#[from] BatchError),
    #[error("follower append at offset {first_offset} does not continue the log end {log_end} of {tp}")]
    UnexpectedAppendOffset {
        tp: TopicPartition,
        first_offset: i64,
        log_end: i64,
    },
    #[error("a {size}-byte append cannot fit a segment of segment.bytes={segment_bytes}")]
    TooLargeForSegment { size: usize, segment_bytes: u64 },
    /// An idempotent producer's batch broke the sequence or epoch rules.
    #[error(transparent)]
    Producer(ProducerStateError),
}

impl LogError {
    /// Kafka's error code for a response.
    pub fn error_code(&self) -> i16 {
        match self {
            LogError::Storage { .. } | LogError::Offline { .. } => ec::KAFKA_STORAGE_ERROR,
            LogError::OffsetOutOfRange { .. } => ec::OFFSET_OUT_OF_RANGE,
            LogError::InvalidBatch(e) => e.error_code(),
            LogError::UnexpectedAppendOffset { .. } => ec::CORRUPT_MESSAGE, // as Kafka maps it
            LogError::TooLargeForSegment { .. } => ec::RECORD_LIST_TOO_LARGE,
            LogError::Producer(e) => e.error_code(),
        }
    }
}

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// The broker time stamped into the batches, or -1 for CreateTime.
    pub log_append_time: i64,
    pub record_count: i64,
    pub bytes: usize,
    /// The log start offset when the append finished (ProduceResponse v5+ reports it, so
    /// clients can tell retention from truncation).
    pub log_start_offset: i64,
}

/// What loading a log found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub segments: usize,
    /// Bytes cut from torn or corrupt tails.
    pub truncated_bytes: u64,
    /// Segments dropped because they followed a corrupt one.
    pub dropped_segments: usize,
}

#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    /// The log dir this partition lives in (what goes offline on a failure).
    root: PathBuf,
    tp: TopicPartition,
    config: LogConfig,
    faults: Faults,
    failures: LogDirFailureChannel,
    segments: BTreeMap<i64, LogSegment>,
    log_start_offset: i64,
    recovery_point: i64,
    epochs: LeaderEpochFileCache,
    unflushed_messages: i64,
    last_flush_ms: i64,
    /// Data was cut (truncation, recovery) since the last flush: the next flush must sync the
    /// last segment even though no message is unflushed (its shorter length is not durable yet).
    unflushed_truncation: bool,
    /// The lowest offset the log was truncated to since the cleaner last looked: its checkpoint
    /// must not stay above it (Kafka's `maybeTruncateCheckpoint`).
    truncated_to: Option<i64>,
    /// Idempotent producers' sequences and last batches (see `log_producers.rs`).
    producers: ProducerStateManager,
    /// Where a roll sends the fsync of the segments it leaves (none: the next flush does it).
    flusher: Option<Flusher>,
    /// Bumped by every truncation: a background flush prepared before one must not move the
    /// recovery point when it completes (what it synced may have been cut and rewritten).
    flush_generation: u64,
    /// Producer snapshots written at a roll and not fsynced yet (the next flush syncs them).
    unsynced_snapshots: Vec<i64>,
    /// Deleted by the LogManager: a background flush still queued for it does nothing.
    deleted: bool,
}

/// Opening arguments shared by every log of a LogManager.
#[derive(Debug, Clone)]
pub struct LogContext {
    pub faults: Faults,
    pub failures: LogDirFailureChannel,
}

impl Log {
    /// Opens (or creates) the log in `dir`. Without `clean_shutdown`, segments from the
    /// recovery point on are re-validated; a corrupt tail is cut with a warning naming the file
    /// and offset, and segments after it are dropped.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        ctx: &LogContext,
        recovery_point: i64,
        log_start_offset: Option<i64>,
        clean_shutdown: bool,
        now_ms: i64,
    ) -> Result<(Log, LoadReport), LogError> {
        let root = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| dir.to_path_buf());
        let storage = |source| LogError::Storage {
            dir: root.clone(),
            source,
        };
        let fail = |op: &'static str, path: &Path, e: std::io::Error| {
            ctx.failures.report(&root, &e.to_string());
            LogError::Storage {
                dir: root.clone(),
                source: SegmentIoError {
                    op,
                    path: path.to_path_buf(),
                    source: e,
                },
            }
        };
        if ctx.failures.is_offline(&root) {
            return Err(LogError::Offline { dir: root });
        }
        std::fs::create_dir_all(dir).map_err(|e| fail("create", dir, e))?;
        let epochs = LeaderEpochFileCache::open(dir.join(LEADER_EPOCH_CHECKPOINT)).map_err(|e| {
            fail(
                "read",
                &dir.join(LEADER_EPOCH_CHECKPOINT),
                std::io::Error::other(e.to_string()),
            )
        })?;
        // An interrupted compaction: `.cleaned` files are dropped, `.swap` files replace the
        // segments they were cleaned from (Kafka's LogLoader order: before listing segments).
        let swapped =
            crate::log::cleaner::swap::recover_interrupted_swaps(dir).map_err(|e| fail("recover swap in", dir, e))?;
        let mut bases = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| fail("list", dir, e))? {
            let entry = entry.map_err(|e| fail("list", dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            match segment::parse_base_offset(&name) {
                Some((base, ".log")) => bases.push(base),
                Some((_, suffix)) if suffix.ends_with(".deleted") => {
                    // Leftovers of an interrupted delete: Kafka removes them too.
                    let _ = std::fs::remove_file(entry.path());
                }
                _ => {}
            }
        }
        bases.sort_unstable();
        let seg_config = config.segment_config();
        let mut report = LoadReport::default();
        let mut segments = BTreeMap::new();
        let mut corrupt_from = None;
        for (i, base) in bases.iter().copied().enumerate() {
            if corrupt_from.is_some() {
                let path = dir.join(segment::file_name(base, ".log"));
                tracing::warn!(file = %path.display(), "deleting a segment that follows a corrupt one");
                let (seg, _) = LogSegment::open(dir, base, seg_config, &ctx.faults, false, usize::MAX, now_ms)
                    .map_err(|e| report_io(ctx, &root, e))?;
                seg.delete().map_err(|e| report_io(ctx, &root, e))?;
                report.dropped_segments += 1;
                continue;
            }
            let next_base = bases.get(i + 1).copied().unwrap_or(i64::MAX);
            let recover = (!clean_shutdown && next_base > recovery_point) || swapped.contains(&base);
            let (seg, outcome) = LogSegment::open(
                dir,
                base,
                seg_config,
                &ctx.faults,
                recover,
                config.max_message_bytes,
                now_ms,
            )
            .map_err(|e| report_io(ctx, &root, e))?;
            if let Some(outcome) = outcome {
                if outcome.truncated_bytes > 0 {
                    tracing::warn!(
                        file = %seg.path().display(),
                        position = outcome.valid_bytes,
                        offset = seg.next_offset(),
                        truncated_bytes = outcome.truncated_bytes,
                        problem = ?outcome.problem,
                        "recovery truncated an invalid log tail"
                    );
                    metrics::counter!("kastle_log_recovery_truncations_total").increment(1);
                    report.truncated_bytes += outcome.truncated_bytes;
                    corrupt_from = Some(base);
                }
            }
            segments.insert(base, seg);
        }
        report.segments = segments.len();
        let mut log = Log {
            dir: dir.to_path_buf(),
            root: root.clone(),
            tp,
            config,
            faults: ctx.faults.clone(),
            failures: ctx.failures.clone(),
            segments,
            log_start_offset: 0,
            recovery_point,
            epochs,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            unflushed_truncation: report.truncated_bytes > 0 || report.dropped_segments > 0,
            truncated_to: None,
            producers: ProducerStateManager::new(0),
            flusher: None,
            flush_generation: 0,
            unsynced_snapshots: Vec::new(),
            deleted: false,
        };
        if log.segments.is_empty() {
            let start = log_start_offset.unwrap_or(0).max(0);
            let seg = LogSegment::create(dir, start, seg_config, &ctx.faults, now_ms)
                .map_err(|e| report_io(ctx, &root, e))?;
            log.segments.insert(start, seg);
        }
        let first_base = log.segments.keys().next().copied().unwrap_or(0);
        log.log_start_offset = log_start_offset.unwrap_or(first_base).max(first_base);
        let leo = log.log_end_offset();
        log.recovery_point = log.recovery_point.min(leo);
        if !clean_shutdown {
            log.recovery_point = leo;
        }
        // The epoch cache must not claim offsets the log no longer has.
        log.epochs
            .truncate_from_end(leo)
            .map_err(|e| storage(checkpoint_io(dir, e)))?;
        log.epochs
            .truncate_from_start(log.log_start_offset)
            .map_err(|e| storage(checkpoint_io(dir, e)))?;
        log.load_producer_state(now_ms, clean_shutdown)?;
        Ok((log, report))
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log dir (parent) this log lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Applies a new config (a topic's overrides arrived or changed). Segments already
    /// written keep their size; rolls, retention and cleaning follow the new values.
    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    /// The segments, for the log cleaner (which reads the inactive ones and swaps them).
    pub(super) fn segments(&self) -> &BTreeMap<i64, LogSegment> {
        &self.segments
    }

    pub(super) fn segments_mut(&mut self) -> &mut BTreeMap<i64, LogSegment> {
        &mut self.segments
    }

    /// Reports an I/O failure of the cleaner's swap (takes the dir offline).
    pub(super) fn storage_error(&self, e: SegmentIoError) -> LogError {
        report_io_parts(&self.failures, &self.root, e)
    }

    pub(super) fn faults(&self) -> &Faults {
        &self.faults
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The offset the next append gets (LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.segments
            .values()
            .next_back()
            .map(LogSegment::next_offset)
            .unwrap_or(0)
    }

    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    pub fn num_segments(&self) -> usize {
        self.segments.len()
    }

    pub fn size(&self) -> u64 {
        self.segments.values().map(LogSegment::size).sum()
    }

    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }

    pub fn leader_epoch_cache(&self) -> &LeaderEpochFileCache {
        &self.epochs
    }

    /// Records that `epoch` starts at `start_offset` (a new leader does this at its LEO at once),
    /// unless the cache already has that epoch or a later one. The checkpoint file is written
    /// before the first record of the epoch is appended, or by [`Self::flush_leader_epochs`]
    /// (see [`LeaderEpochFileCache::assign_deferred`]).
    pub fn assign_leader_epoch(&mut self, epoch: i32, start_offset: i64) -> Result<(), LogError> {
        if epoch < 0 || self.epochs.latest_epoch().is_some_and(|e| e >= epoch) {
            return Ok(());
        }
        let assigned = self
            .epochs
            .assign_deferred(epoch, start_offset)
            .map(|_| ())
            .map_err(|e| checkpoint_io(&self.dir, e));
        self.io(assigned)
    }

    /// Writes the leader-epoch checkpoint if an entry waits to be written. Returns whether it did.
    pub fn flush_leader_epochs(&mut self) -> Result<bool, LogError> {
        if !self.epochs.is_dirty() {
            return Ok(false);
        }
        self.check_online()?;
        let written = self.epochs.flush_if_dirty().map_err(|e| checkpoint_io(&self.dir, e));
        self.io(written)?;
        Ok(true)
    }

    /// The largest epoch ≤ `epoch` and its end offset, as OffsetForLeaderEpoch answers.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }

    fn check_online(&self) -> Result<(), LogError> {
        if self.failures.is_offline(&self.root) {
            return Err(LogError::Offline { dir: self.root.clone() });
        }
        Ok(())
    }

    /// Maps an I/O failure to a storage error and takes the dir offline.
    fn io<T>(&self, result: Result<T, SegmentIoError>) -> Result<T, LogError> {
        result.map_err(|e| report_io_parts(&self.failures, &self.root, e))
    }

    /// Validates producer batches, assigns offsets from the LEO and stamps the leader epoch
    /// (and the broker time for LogAppendTime), then appends. `records` is not modified or
    /// copied (unless the topic's `compression.type` re-codes a batch): each batch's rewritten
    /// 61-byte header is built apart and the file gets `[header][records of the batch]…` in one
    /// vectored write (the request's buffer is the append buffer). On CreateTime topics each
    /// record's timestamp must be within `message.timestamp.before/after.max.ms` of `now_ms`.
    pub fn append_as_leader(
        &mut self,
        records: &[u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo, LogError> {
        self.check_online()?;
        let headers = record_batch::validate_batches(records, self.config.max_message_bytes)?;
        if self.config.timestamp_type == TimestampType::CreateTime {
            record_batch::timestamp_check::check_timestamps(
                records,
                &headers,
                now_ms,
                self.config.timestamp_before_max_ms,
                self.config.timestamp_after_max_ms,
            )?;
        }
        // The topic's `compression.type`, when it is not `producer`: batches in another codec
        // are re-coded, and the result is validated (and size-checked) again, as Kafka does.
        let recompressed = match self.config.compression {
            Some(target) => record_batch::recompress::recompress_batches(records, &headers, target)?,
            None => None,
        };
        let (records, headers) = match &recompressed {
            Some(buf) => (
                &buf[..],
                record_batch::validate_batches(buf, self.config.max_message_bytes)?,
            ),
            None => (records, headers),
        };
        if self.config.compact {
            // Kafka's LogValidator: a compacted topic cannot take a record without a key.
            record_batch::validate::check_keys_present(records, &headers)?;
        }
        let first_offset = self.log_end_offset();
        let log_append_time = if self.config.timestamp_type == TimestampType::LogAppendTime {
            now_ms
        } else {
            -1
        };
        let producer_append = match self.check_producers(&headers, first_offset, log_append_time)? {
            ProducerCheck::Duplicate(original) => return Ok(original),
            ProducerCheck::Append(append) => append,
        };
        let mut next = first_offset;
        let mut position = 0;
        let mut patched = Vec::with_capacity(headers.len());
        let mut assigned = Vec::with_capacity(headers.len());
        let stamp = (log_append_time >= 0).then_some(log_append_time);
        for header in &headers {
            let size = header.size_in_bytes();
            let batch = &records[position..position + size];
            // Validation accepted only whole batches, each at least a header long.
            let rest = batch
                .get(RECORD_BATCH_OVERHEAD..)
                .ok_or(BatchError::from(ScanError::Truncated { position }))?;
            let rewritten = record_batch::leader_header(batch, next, leader_epoch, stamp);
            assigned.push(BatchHeader::parse(&rewritten)?);
            patched.push((rewritten, rest));
            next += i64::from(header.last_offset_delta) + 1;
            position += size;
        }
        let parts: Vec<&[u8]> = patched.iter().flat_map(|(header, rest)| [&header[..], *rest]).collect();
        let info = self.append_assigned(&parts, &assigned, now_ms)?;
        self.commit_producers(producer_append);
        Ok(LogAppendInfo {
            log_append_time,
            ..info
        })
    }

    /// Appends batches fetched from the leader, keeping their offsets and leader epochs.
    pub fn append_as_follower(&mut self, records: &[u8], now_ms: i64) -> Result<LogAppendInfo, LogError> {
        self.check_online()?;
        let headers = record_batch::validate::validate_replicated_batches(records)?;
        let Some(first) = headers.first() else {
            return Ok(LogAppendInfo {
                first_offset: self.log_end_offset(),
                last_offset: self.log_end_offset() - 1,
                max_timestamp: -1,
                log_append_time: -1,
                record_count: 0,
                bytes: 0,
                log_start_offset: self.log_start_offset,
            });
        };
        let leo = self.log_end_offset();
        if first.base_offset < leo || headers.windows(2).any(|w| w[1].base_offset <= w[0].last_offset()) {
            return Err(LogError::UnexpectedAppendOffset {
                tp: self.tp.clone(),
                first_offset: first.base_offset,
                log_end: leo,
            });
        }
        let info = self.append_assigned(&[records], &headers, now_ms)?;
        self.replay_producers(&headers);
        Ok(info)
    }

    /// Appends batches with their final offsets; `parts` back to back are the batches
    /// `headers` describe.
    fn append_assigned(
        &mut self,
        parts: &[&[u8]],
        headers: &[BatchHeader],
        now_ms: i64,
    ) -> Result<LogAppendInfo, LogError> {
        let (Some(first), Some(last)) = (headers.first(), headers.last()) else {
            let leo = self.log_end_offset();
            return Ok(LogAppendInfo {
                first_offset: leo,
                last_offset: leo - 1,
                max_timestamp: -1,
                log_append_time: -1,
                record_count: 0,
                bytes: 0,
                log_start_offset: self.log_start_offset,
            });
        };
        let size: usize = parts.iter().map(|p| p.len()).sum();
        if size as u64 > self.config.segment_bytes {
            return Err(LogError::TooLargeForSegment {
                size,
                segment_bytes: self.config.segment_bytes,
            });
        }
        let max_timestamp = headers.iter().map(|h| h.max_timestamp).max().unwrap_or(-1);
        self.maybe_roll(size, max_timestamp, last.last_offset(), now_ms)?;
        for header in headers {
            if header.partition_leader_epoch >= 0
                && self
                    .epochs
                    .latest_epoch()
                    .is_none_or(|e| header.partition_leader_epoch > e)
            {
                let assigned = self.epochs.assign(header.partition_leader_epoch, header.base_offset);
                self.io(assigned.map_err(|e| checkpoint_io(&self.dir, e)))?;
            }
        }
        // A deferred epoch entry is durable before any record of its epoch is.
        let epochs_written = self.epochs.flush_if_dirty().map_err(|e| checkpoint_io(&self.dir, e));
        self.io(epochs_written)?;
        let active = self.segments.values_mut().next_back();
        let result = match active {
            Some(seg) => seg.append_parts(parts, headers),
            None => Ok(()),
        };
        self.io(result)?;
        let record_count: i64 = headers.iter().map(|h| i64::from(h.record_count)).sum();
        self.unflushed_messages += record_count;
        if self.unflushed_messages >= self.config.flush_interval_messages
            || now_ms - self.last_flush_ms >= self.config.flush_interval_ms
        {
            self.flush(now_ms)?;
        }
        Ok(LogAppendInfo {
            first_offset: first.base_offset,
            last_offset: last.last_offset(),
            max_timestamp,
            log_append_time: -1,
            record_count,
            bytes: size,
            log_start_offset: self.log_start_offset,
        })
    }

    /// Rolls when the active segment is full by size, age, index capacity or relative offsets.
    fn maybe_roll(
        &mut self,
        incoming: usize,
        max_timestamp: i64,
        last_offset: i64,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let Some(active) = self.segments.values().next_back() else {
            return self.roll(now_ms);
        };
        let by_size = active.size() + incoming as u64 > self.config.segment_bytes;
        let by_time = !active.is_empty()
            && active.time_waited_for_roll(now_ms, max_timestamp)
                > self.config.segment_ms - self.config.segment_jitter_ms;
        if by_size || by_time || active.cannot_take(last_offset) {
            if active.is_empty() {
                return Ok(()); // nothing to roll away from
            }
            self.roll(now_ms)?;
        }
        Ok(())
    }

    /// Starts a new active segment at the LEO. The old segments' fsync is not done here: as
    /// Kafka's `roll` schedules `flushUptoOffsetExclusive(newSegment.baseOffset)`, it is handed
    /// to the log dir's flusher ([`super::flusher`]), and the recovery point moves to the new
    /// base offset only once that fsync is done. A log without a flusher leaves it to its next
    /// flush.
    pub fn roll(&mut self, now_ms: i64) -> Result<(), LogError> {
        self.check_online()?;
        let leo = self.log_end_offset();
        if let Some(active) = self.segments.values_mut().next_back() {
            if active.base_offset() == leo {
                return Ok(());
            }
            let done = active.on_become_inactive();
            self.io(done)?;
        }
        let seg_config = self.config.segment_config();
        let created = LogSegment::create(&self.dir, leo, seg_config, &self.faults, now_ms);
        let seg = self.io(created)?;
        self.segments.insert(leo, seg);
        self.take_producer_snapshot_unsynced()?;
        if let Some(flusher) = &self.flusher {
            flusher.schedule(&self.root, leo);
        }
        Ok(())
    }

    /// Gives the log its background flusher (see [`super::flusher::share`]).
    pub(super) fn set_flusher(&mut self, flusher: Flusher) {
        self.flusher = Some(flusher);
    }

    /// The LogManager deleted this log: flushes still queued for it do nothing.
    pub(super) fn mark_deleted(&mut self) {
        self.deleted = true;
    }

    /// Whole batches from `offset` up to `max_bytes` (the first batch whole if `min_one`),
    /// none at or past `max_offset` (exclusive ceiling: HW for consumers, LEO for replicas).
    pub fn read(&self, offset: i64, max_bytes: usize, max_offset: i64, min_one: bool) -> Result<Bytes, LogError> {
        self.check_online()?;
        let leo = self.log_end_offset();
        if offset < self.log_start_offset || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                tp: self.tp.clone(),
                offset,
                log_start: self.log_start_offset,
                log_end: leo,
            });
        }
        let ceiling = max_offset.min(leo);
        for (_, seg) in self
            .segments
            .range(..=offset)
            .next_back()
            .into_iter()
            .chain(self.segments.range(offset + 1..))
        {
            if seg.next_offset() <= offset {
                continue;
            }
            let read = seg.read(offset, max_bytes, ceiling, min_one);
            if let Some(r) = self.io(read)? {
                return Ok(r.bytes);
            }
            if seg.next_offset() >= ceiling {
                break;
            }
        }
        Ok(Bytes::new())
    }

    /// ListOffsets by timestamp (Kafka's `UnifiedLog.fetchOffsetByTimestamp`, no remote
    /// storage): -2 earliest and -4 earliest-local are the log start, -1 latest the LEO (both
    /// without a timestamp), -3 the first record holding the log's max timestamp, -5
    /// latest-tiered is -1 (nothing is tiered), else the first record at or after `timestamp`
    /// from the log start on.
    pub fn fetch_offset_by_timestamp(&self, timestamp: i64) -> Result<Option<TimestampAndOffset>, LogError> {
        self.check_online()?;
        let bare = |offset: i64, leader_epoch: Option<i32>| TimestampAndOffset {
            timestamp: -1,
            offset,
            leader_epoch,
        };
        match timestamp {
            -2 | -4 => {
                // The first cached epoch names the log start only if it begins at or before it.
                let epoch = self
                    .epochs
                    .earliest_entry()
                    .filter(|e| e.start_offset <= self.log_start_offset)
                    .map(|e| e.epoch);
                return Ok(Some(bare(self.log_start_offset, epoch)));
            }
            -1 => return Ok(Some(bare(self.log_end_offset(), self.epochs.latest_epoch()))),
            -5 => return Ok(Some(bare(-1, Some(-1)))),
            -3 => {
                // The first segment with the largest max timestamp (Scala's maxBy keeps the first).
                let mut best: Option<&LogSegment> = None;
                for seg in self.segments.values() {
                    if best.is_none_or(|b| seg.max_timestamp() > b.max_timestamp()) {
                        best = Some(seg);
                    }
                }
                let Some(seg) = best else { return Ok(None) };
                let found = seg.max_timestamp_record();
                return self.io(found);
            }
            _ => {}
        }
        for seg in self.segments.values() {
            if seg.max_timestamp() >= timestamp && seg.next_offset() > self.log_start_offset {
                let found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset);
                if let Some(found) = self.io(found)? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }
}

fn checkpoint_io(dir: &Path, e: impl std::fmt::Display) -> SegmentIoError {
    SegmentIoError {
        op: "write",
        path: dir.join(LEADER_EPOCH_CHECKPOINT),
        source: std::io::Error::other(e.to_string()),
    }
}

fn report_io(ctx: &LogContext, root: &Path, e: SegmentIoError) -> LogError {
    report_io_parts(&ctx.failures, root, e)
}

fn report_io_parts(failures: &LogDirFailureChannel, root: &Path, e: SegmentIoError) -> LogError {
    failures.report(root, &e.to_string());
    LogError::Storage {
        dir: root.to_path_buf(),
        source: e,
    }
}
