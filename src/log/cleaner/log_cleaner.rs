//! `LogCleaner`: the broker's compaction threads (Kafka's `LogCleaner` + `LogCleanerManager`).
//! Each pass measures every `cleanup.policy=compact` log, picks the filthiest one
//! ([`policy::choose_filthiest`]), maps its dirty section's keys to their latest offsets, rewrites
//! its segments from the log start through the mapped section in size-bounded groups
//! (`.cleaned` files), swaps each group in ([`swap::swap_in`]) and advances the log's
//! `cleaner-offset-checkpoint` entry. Files are read and written off the log's lock; only the
//! swap takes it. High watermarks are asked with no lock held (the callback takes partition
//! locks, which come before log locks and the cleaner's state: see
//! [`crate::log::lock_order`]). An I/O error takes the log dir offline through the failure channel; a log
//! that cannot be parsed is marked uncleanable; nothing here ends the process.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::policy::{self, Candidate, SegmentView};
use super::rewrite::{filter_batch, Filtered, OffsetMap};
use super::swap;
use crate::clock::now_ms;
use crate::config::KafkaConfig;
use crate::log::checkpoint::OffsetCheckpointFile;
use crate::log::log::LogError;
use crate::log::log_manager::{lock, LogManager, SharedLog};
use crate::log::segment;
use crate::protocol::record_batch::{BatchHeader, LOG_OVERHEAD};
use crate::types::TopicPartition;

/// The per-dir file where cleaning reached, per log (Kafka's name and text format).
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";

/// The broker's `log.cleaner.*` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerConfig {
    pub enable: bool,
    pub threads: usize,
    pub backoff: Duration,
    /// `log.cleaner.dedupe.buffer.size`, shared by all threads.
    pub dedupe_buffer_size: usize,
    /// `log.cleaner.io.buffer.size`, shared by all threads (read and write buffers).
    pub io_buffer_size: usize,
}

impl CleanerConfig {
    pub fn from_broker(config: &KafkaConfig) -> CleanerConfig {
        CleanerConfig {
            enable: config.get_bool("log.cleaner.enable").unwrap_or(true),
            threads: config.get_i32("log.cleaner.threads").unwrap_or(1).max(0) as usize,
            backoff: Duration::from_millis(config.get_i64("log.cleaner.backoff.ms").unwrap_or(15_000).max(1) as u64),
            dedupe_buffer_size: config
                .get_i64("log.cleaner.dedupe.buffer.size")
                .unwrap_or(128 << 20)
                .max(1 << 20) as usize,
            io_buffer_size: config
                .get_i32("log.cleaner.io.buffer.size")
                .unwrap_or(512 << 10)
                .max(4096) as usize,
        }
    }
}

/// Each partition's high watermark: cleaning never passes it. Called with no lock held.
pub type HighWatermarks = Arc<dyn Fn(&TopicPartition) -> i64 + Send + Sync>;

/// Why cleaning one log stopped.
#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid batch in {} at byte {position}", path.display())]
    Corrupt { path: PathBuf, position: u64 },
    /// The log changed under the cleaner (truncated, retention, deleted): try again later.
    #[error("the log changed while it was cleaned")]
    Aborted,
    #[error(transparent)]
    Log(#[from] LogError),
}

/// What one cleaning did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    pub segments_swapped: usize,
    /// Where the next cleaning starts (the new checkpoint).
    pub first_dirty: i64,
    pub map_bytes: usize,
    pub elapsed_secs: f64,
}

#[derive(Debug, Default)]
struct CleanerState {
    checkpoints: HashMap<PathBuf, BTreeMap<TopicPartition, i64>>,
    /// The earliest delete horizon of a tombstone each log still holds.
    horizons: HashMap<TopicPartition, i64>,
    in_progress: HashSet<TopicPartition>,
    uncleanable: HashSet<TopicPartition>,
    last_clean_secs: HashMap<usize, f64>,
    stopped: bool,
    /// Shut down for good: a reconfiguration does not start threads again.
    closed: bool,
}

/// The broker's log cleaner.
pub struct LogCleaner {
    manager: Arc<LogManager>,
    config: Mutex<CleanerConfig>,
    high_watermark: HighWatermarks,
    state: Mutex<CleanerState>,
    wake: Condvar,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCleaner").field("config", &self.config()).finish()
    }
}

impl LogCleaner {
    /// A cleaner over `manager`'s logs; reads the live dirs' cleaner checkpoints.
    pub fn new(manager: Arc<LogManager>, config: CleanerConfig, high_watermark: HighWatermarks) -> LogCleaner {
        let mut state = CleanerState::default();
        for dir in manager.live_dirs() {
            match OffsetCheckpointFile::new(dir.join(CLEANER_OFFSET_CHECKPOINT)).read() {
                Ok(entries) => {
                    state.checkpoints.insert(dir, entries);
                }
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "unreadable cleaner checkpoint; cleaning from the log starts")
                }
            }
        }
        LogCleaner {
            manager,
            config: Mutex::new(config),
            high_watermark,
            state: Mutex::new(state),
            wake: Condvar::new(),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// The settings the threads run with now.
    pub fn config(&self) -> CleanerConfig {
        self.config.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Cleaner threads running now.
    pub fn thread_count(&self) -> usize {
        self.threads.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Kafka's `LogCleaner.reconfigure`: stops the threads (a cleaning in progress stops after
    /// its current segment group; its checkpoint stays where it was) and starts
    /// `config.threads` new ones with `config`. Blocks while the old threads finish.
    pub fn reconfigure(self: &Arc<Self>, config: CleanerConfig) {
        if self.config() == config {
            return;
        }
        self.stop_threads();
        *self.config.lock().unwrap_or_else(|p| p.into_inner()) = config.clone();
        {
            let mut state = self.state();
            if state.closed {
                return;
            }
            state.stopped = false;
        }
        self.start();
        tracing::info!(
            threads = self.thread_count(),
            backoff_ms = config.backoff.as_millis() as u64,
            dedupe_buffer_size = config.dedupe_buffer_size,
            io_buffer_size = config.io_buffer_size,
            "reconfigured the log cleaner"
        );
    }

    fn stop_threads(&self) {
        self.state().stopped = true;
        self.wake.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CleanerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `log.cleaner.threads` threads, each cleaning the filthiest log it can take and
    /// sleeping `log.cleaner.backoff.ms` when there is none.
    pub fn start(self: &Arc<Self>) {
        metrics::gauge!("kafka_log_logcleanermanager_uncleanable_partitions_count").set(0.0);
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        for id in 0..self.config().threads {
            let me = self.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("kafka-log-cleaner-thread-{id}"))
                .spawn(move || me.run(id));
            match spawned {
                Ok(handle) => threads.push(handle),
                Err(e) => tracing::error!(error = %e, "could not start a log cleaner thread"),
            }
        }
    }

    fn run(&self, thread: usize) {
        loop {
            if self.state().stopped {
                return;
            }
            if self.clean_filthiest(thread, now_ms()).is_some() {
                continue;
            }
            let state = self.state();
            if state.stopped {
                return;
            }
            let backoff = self.config().backoff;
            let _ = self.wake.wait_timeout(state, backoff);
        }
    }

    /// Stops the threads (a cleaning in progress stops after its current segment group) and
    /// waits for them.
    pub fn shutdown(&self) {
        self.state().closed = true;
        self.stop_threads();
    }

    /// Where cleaning of `tp` reached, if it ever ran.
    pub fn checkpoint(&self, tp: &TopicPartition) -> Option<i64> {
        self.state().checkpoints.values().find_map(|m| m.get(tp).copied())
    }

    /// One pass: measures the compacted logs, cleans the filthiest. `None` when nothing was
    /// cleanable (or the cleaning was aborted or failed).
    pub fn clean_filthiest(&self, thread: usize, now_ms: i64) -> Option<CleanStats> {
        let (tp, log, view) = self.grab_filthiest(now_ms)?;
        let started = Instant::now();
        let result = self.clean_log(&tp, &log, &view, now_ms);
        let mut state = self.state();
        state.in_progress.remove(&tp);
        match result {
            Ok(mut stats) => {
                stats.elapsed_secs = started.elapsed().as_secs_f64();
                state.last_clean_secs.insert(thread, stats.elapsed_secs);
                state
                    .checkpoints
                    .entry(view.root.clone())
                    .or_default()
                    .insert(tp.clone(), stats.first_dirty);
                let entries = state.checkpoints.get(&view.root).cloned().unwrap_or_default();
                drop(state);
                self.write_checkpoint(&view.root, entries);
                self.publish(&stats);
                tracing::info!(%tp, read = stats.bytes_read, written = stats.bytes_written, removed = stats.records_removed, secs = stats.elapsed_secs, "log cleaned");
                Some(stats)
            }
            Err(CleanError::Aborted) => None,
            Err(CleanError::Log(e)) => {
                tracing::error!(%tp, error = %e, "log cleaning failed; the log dir is offline");
                None
            }
            Err(CleanError::Io { op, path, source }) => {
                drop(state);
                let still_there = self.manager.get_log(&tp).is_some_and(|l| Arc::ptr_eq(&l, &log));
                if still_there && !self.manager.failures().is_offline(&view.root) {
                    let reason = format!("log cleaner: {op} {}: {source}", path.display());
                    self.manager.failures().report(&view.root, &reason);
                }
                None
            }
            Err(e @ CleanError::Corrupt { .. }) => {
                tracing::error!(%tp, error = %e, "log marked uncleanable");
                state.uncleanable.insert(tp);
                metrics::gauge!("kafka_log_logcleanermanager_uncleanable_partitions_count")
                    .set(state.uncleanable.len() as f64);
                None
            }
        }
    }

    /// Picks the filthiest compacted log no other thread is cleaning and marks it in progress.
    fn grab_filthiest(&self, now_ms: i64) -> Option<(TopicPartition, SharedLog, LogView)> {
        let mut views = Vec::new();
        for (tp, log) in self.manager.all_logs() {
            let (snapshot, truncated_to) = {
                let mut guard = lock(&log);
                let truncated_to = guard.take_truncation_point();
                if !guard.config().compact || self.manager.failures().is_offline(guard.root()) {
                    continue;
                }
                (LogView::of(&guard), truncated_to)
            };
            // Asked with no lock held: it takes the partition's lock (see `lock_order`).
            let hw = (self.high_watermark)(&tp);
            views.push((tp, log, snapshot, truncated_to, hw));
        }
        let mut state = self.state();
        // A follower's truncation below where cleaning reached: what follows it is new, dirty data.
        for (tp, _, view, truncated_to, _) in &views {
            if let Some(t) = truncated_to {
                if let Some(c) = state.checkpoints.get_mut(&view.root).and_then(|m| m.get_mut(tp)) {
                    *c = (*c).min(*t);
                }
            }
        }
        let mut candidates = Vec::new();
        let mut max_dirty: f64 = 0.0;
        let mut picked = Vec::new();
        for (tp, log, mut view, _, hw) in views {
            let checkpoint = state.checkpoints.get(&view.root).and_then(|m| m.get(&tp)).copied();
            // Kafka resets a checkpoint outside the log (truncation, new log) to the log start.
            view.first_dirty = checkpoint
                .filter(|c| *c >= view.log_start && *c <= view.log_end)
                .unwrap_or(view.log_start);
            view.first_uncleanable =
                policy::first_uncleanable_offset(&view.segments, hw, view.min_compaction_lag_ms, now_ms);
            let dirtiness = policy::dirtiness(
                &view.segments,
                view.first_dirty,
                view.first_uncleanable,
                view.max_compaction_lag_ms,
                now_ms,
            );
            max_dirty = max_dirty.max(dirtiness.ratio);
            if state.in_progress.contains(&tp) || state.uncleanable.contains(&tp) {
                continue;
            }
            candidates.push(Candidate {
                dirtiness,
                min_cleanable_ratio: view.min_cleanable_ratio,
                horizon_due: state.horizons.get(&tp).is_some_and(|h| *h <= now_ms),
            });
            picked.push((tp, log, view));
        }
        metrics::gauge!("kafka_log_logcleanermanager_max_dirty_percent").set((max_dirty * 100.0).round());
        let index = policy::choose_filthiest(&candidates)?;
        let (tp, log, view) = picked.swap_remove(index);
        state.in_progress.insert(tp.clone());
        Some((tp, log, view))
    }

    /// Cleans one log: maps the dirty section, rewrites everything below its end.
    fn clean_log(
        &self,
        tp: &TopicPartition,
        log: &SharedLog,
        view: &LogView,
        now_ms: i64,
    ) -> Result<CleanStats, CleanError> {
        let config = self.config();
        let threads = config.threads.max(1);
        let budget = config.dedupe_buffer_size / threads;
        let io_buffer = (config.io_buffer_size / threads / 2).max(4096);
        let mut stats = CleanStats::default();
        // Kafka's `lastRecordsOfActiveProducers`, taken as the cleaning starts: those batches
        // stay (empty if need be) so producer state can be rebuilt from the cleaned log.
        let producers = lock(log).producer_state().last_data_offsets();
        let mut map = OffsetMap::default();
        let mut mapped_end = view.first_dirty;
        for seg in policy::dirty_segments(&view.segments, view.first_dirty, view.first_uncleanable) {
            // At least one segment is mapped, whatever its key count (Kafka refuses instead).
            if map.bytes() >= budget && mapped_end > view.first_dirty {
                break;
            }
            if self.state().stopped {
                return Err(CleanError::Aborted);
            }
            let path = view.dir.join(segment::file_name(seg.base_offset, ".log"));
            let read = for_each_batch(&path, seg.size_bytes, io_buffer, |h, b| map.add_batch(h, b))?;
            stats.bytes_read += read;
            mapped_end = seg.end_offset;
        }
        stats.map_bytes = map.bytes();
        let to_clean: Vec<SegmentView> = view
            .segments
            .iter()
            .copied()
            .filter(|s| s.end_offset <= mapped_end)
            .collect();
        let mut horizon: Option<i64> = None;
        for group in policy::group_segments(&to_clean, view.segment_bytes) {
            // Shutdown does not wait for a whole log: what was swapped stays, the rest waits.
            if self.state().stopped {
                return Err(CleanError::Aborted);
            }
            let group = &to_clean[group];
            let base = group[0].base_offset;
            let cleaned = view.dir.join(segment::file_name(base, swap::CLEANED_SUFFIX));
            let file = std::fs::File::create(&cleaned).map_err(io("create", &cleaned))?;
            let mut out = BufWriter::with_capacity(io_buffer, file);
            let mut changed = false;
            for seg in group {
                let path = view.dir.join(segment::file_name(seg.base_offset, ".log"));
                let mut write_err = None;
                let read = for_each_batch(&path, seg.size_bytes, io_buffer, |h, b| {
                    let keep_empty = policy::retain_empty_batch(h.producer_id, h.last_offset(), &producers);
                    let outcome = filter_batch(h, b, &map, now_ms, view.delete_retention_ms, keep_empty);
                    stats.records_removed += outcome.records_dropped as u64;
                    if let Some(h) = outcome.tombstone_horizon {
                        horizon = Some(horizon.map_or(h, |x| x.min(h)));
                    }
                    let bytes: &[u8] = match &outcome.batch {
                        Filtered::Unchanged => b,
                        Filtered::Rewritten(new) => {
                            changed = true;
                            new
                        }
                        Filtered::Removed => {
                            changed = true;
                            return;
                        }
                    };
                    stats.bytes_written += bytes.len() as u64;
                    if write_err.is_none() {
                        write_err = out.write_all(bytes).err();
                    }
                })?;
                stats.bytes_read += read;
                if let Some(e) = write_err {
                    return Err(io("write", &cleaned)(e));
                }
            }
            let file = out.into_inner().map_err(|e| io("write", &cleaned)(e.into_error()))?;
            if !changed {
                // Nothing to drop in this group: keep the segments as they are.
                drop(file);
                let _ = std::fs::remove_file(&cleaned);
                continue;
            }
            file.sync_all().map_err(io("fsync", &cleaned))?;
            drop(file);
            let swapped = swap::swap_in(&mut lock(log), group, &cleaned, now_ms)?;
            if !swapped {
                tracing::info!(%tp, base, "log changed during cleaning; trying again later");
                return Err(CleanError::Aborted);
            }
            stats.segments_swapped += group.len();
        }
        let mut state = self.state();
        match horizon {
            Some(h) => state.horizons.insert(tp.clone(), h),
            None => state.horizons.remove(tp),
        };
        stats.first_dirty = mapped_end;
        Ok(stats)
    }

    /// Writes `dir`'s cleaner checkpoint with the entries of logs still in that dir.
    fn write_checkpoint(&self, dir: &Path, mut entries: BTreeMap<TopicPartition, i64>) {
        let live: HashSet<TopicPartition> = self
            .manager
            .all_logs()
            .into_iter()
            .filter(|(_, l)| lock(l).root() == dir)
            .map(|(tp, _)| tp)
            .collect();
        entries.retain(|tp, _| live.contains(tp));
        if let Err(e) = OffsetCheckpointFile::new(dir.join(CLEANER_OFFSET_CHECKPOINT)).write(&entries) {
            self.manager.failures().report(dir, &format!("cleaner checkpoint: {e}"));
        }
    }

    fn publish(&self, stats: &CleanStats) {
        let state = self.state();
        let max_secs = state.last_clean_secs.values().copied().fold(0.0, f64::max);
        drop(state);
        metrics::gauge!("kafka_log_logcleaner_max_clean_time_secs").set(max_secs);
        if let Some(percent) = (100 * stats.bytes_written).checked_div(stats.bytes_read) {
            metrics::gauge!("kafka_log_logcleaner_cleaner_recopy_percent").set(percent as f64);
        }
        let config = self.config();
        let budget = (config.dedupe_buffer_size / config.threads.max(1)).max(1);
        metrics::gauge!("kafka_log_logcleaner_max_buffer_utilization_percent")
            .set((100 * stats.map_bytes / budget) as f64);
        metrics::counter!("kastle_log_cleaner_cleanings_total").increment(1);
        metrics::counter!("kastle_log_cleaner_bytes_read_total").increment(stats.bytes_read);
        metrics::counter!("kastle_log_cleaner_bytes_written_total").increment(stats.bytes_written);
        metrics::counter!("kastle_log_cleaner_records_removed_total").increment(stats.records_removed);
    }
}

/// What the cleaner reads of a log under its lock.
#[derive(Debug, Clone)]
struct LogView {
    dir: PathBuf,
    root: PathBuf,
    segments: Vec<SegmentView>,
    log_start: i64,
    log_end: i64,
    first_dirty: i64,
    first_uncleanable: i64,
    segment_bytes: u64,
    min_cleanable_ratio: f64,
    delete_retention_ms: i64,
    min_compaction_lag_ms: i64,
    max_compaction_lag_ms: i64,
}

impl LogView {
    fn of(log: &crate::log::log::Log) -> LogView {
        let bases: Vec<i64> = log.segments().keys().copied().collect();
        let leo = log.log_end_offset();
        let segments = log
            .segments()
            .values()
            .enumerate()
            .map(|(i, s)| SegmentView {
                base_offset: s.base_offset(),
                end_offset: bases.get(i + 1).copied().unwrap_or(leo),
                size_bytes: s.size(),
                largest_timestamp: s.largest_timestamp(),
            })
            .collect();
        let c = log.config();
        LogView {
            dir: log.dir().to_path_buf(),
            root: log.root().to_path_buf(),
            segments,
            log_start: log.log_start_offset(),
            log_end: leo,
            first_dirty: log.log_start_offset(),
            first_uncleanable: log.log_start_offset(),
            segment_bytes: c.segment_bytes,
            min_cleanable_ratio: c.min_cleanable_ratio,
            delete_retention_ms: c.delete_retention_ms,
            min_compaction_lag_ms: c.min_compaction_lag_ms,
            max_compaction_lag_ms: c.max_compaction_lag_ms,
        }
    }
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CleanError {
    let path = path.to_path_buf();
    move |source| CleanError::Io { op, path, source }
}

/// Calls `f` with each whole batch of the first `limit` bytes of the segment file at `path`
/// (the size the cleaner saw; an inactive segment does not grow). Returns the bytes read. A
/// missing file means retention or a deletion got there first: [`CleanError::Aborted`].
fn for_each_batch(
    path: &Path,
    limit: u64,
    buffer: usize,
    mut f: impl FnMut(&BatchHeader, &[u8]),
) -> Result<u64, CleanError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CleanError::Aborted),
        Err(e) => return Err(io("open", path)(e)),
    };
    let mut reader = BufReader::with_capacity(buffer, file);
    let mut position = 0u64;
    let mut batch = Vec::new();
    while position < limit {
        let corrupt = || CleanError::Corrupt {
            path: path.to_path_buf(),
            position,
        };
        batch.resize(LOG_OVERHEAD, 0);
        reader.read_exact(&mut batch).map_err(io("read", path))?;
        let length = i32::from_be_bytes([batch[8], batch[9], batch[10], batch[11]]);
        let length = usize::try_from(length).map_err(|_| corrupt())?;
        let size = LOG_OVERHEAD + length;
        if position + size as u64 > limit {
            return Err(corrupt());
        }
        batch.resize(size, 0);
        reader
            .read_exact(&mut batch[LOG_OVERHEAD..])
            .map_err(io("read", path))?;
        let header = BatchHeader::parse(&batch).map_err(|_| corrupt())?;
        f(&header, &batch);
        position += size as u64;
    }
    Ok(position)
}
