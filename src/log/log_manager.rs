//! `LogManager`: every partition log on this broker, across `log.dirs`. It loads the logs at
//! start-up (recovering in parallel, `num.recovery.threads.per.data.dir` threads per dir),
//! places new partitions in the live dir with the fewest, deletes partitions asynchronously
//! (rename to `…-delete`, remove in the background), writes the per-dir checkpoints, applies
//! retention and time-based flushes, and drops the logs of a dir that failed. Its logs' rolls
//! are flushed in the background by a thread per dir ([`super::flusher`]).
//!
//! Topic overrides and the broker-level defaults (the static config with the dynamic broker
//! configs on top) can change at any time; each change is applied to the logs concerned.
//!
//! Lock order (see [`super::lock_order`]): the maps here (`logs`, then `per_dir`,
//! `topic_overrides` or the broker defaults `config`) are registries, held only to read or change themselves; no log is locked
//! while one is held, and none is taken while a log is locked. Code here that works on many
//! logs takes a snapshot of the map, then locks one log at a time, and reads what it needs from
//! outside (high watermarks) before it locks the log.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use super::checkpoint::OffsetCheckpointFile;
use super::config::LogConfig;
use super::failure::LogDirFailureChannel;
use super::file::Faults;
use super::flusher::{self, FlushScheduler};
use super::lock_order::assert_no_log_lock;
use super::log::{LoadReport, Log, LogContext, LogError};
use super::segment::SegmentIoError;
use crate::types::TopicPartition;

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
const DELETE_SUFFIX: &str = "-delete";

/// A log shared between the request path and background work.
pub type SharedLog = Arc<Mutex<Log>>;

pub use super::lock_order::{lock, LogGuard};

/// Parses a partition dir name `<topic>-<partition>`; `None` for anything else (including
/// `-delete`, `-future` and `-stray` dirs).
pub fn parse_partition_dir(name: &str) -> Option<TopicPartition> {
    if name.ends_with(DELETE_SUFFIX) || name.ends_with("-future") || name.ends_with("-stray") {
        return None;
    }
    let (topic, partition) = name.rsplit_once('-')?;
    let partition: i32 = partition.parse().ok()?;
    if topic.is_empty() || partition < 0 || !topic.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
        return None;
    }
    Some(TopicPartition {
        topic: topic.to_string(),
        partition,
    })
}

/// The partition dir name Kafka uses.
pub fn partition_dir_name(tp: &TopicPartition) -> String {
    format!("{}-{}", tp.topic, tp.partition)
}

/// Start-up inputs of the LogManager.
#[derive(Debug, Clone)]
pub struct LogManagerConfig {
    /// Live log dirs (those that passed the identity check).
    pub dirs: Vec<PathBuf>,
    /// Dirs whose last shutdown was clean (no recovery needed).
    pub clean_dirs: Vec<PathBuf>,
    pub log: LogConfig,
    pub recovery_threads_per_dir: usize,
}

#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<PathBuf>,
    /// The broker-level defaults (static `log.*` keys with the dynamic broker configs layered
    /// on top, [`Self::update_broker_defaults`]); topics' overrides layer on these.
    config: RwLock<LogConfig>,
    ctx: LogContext,
    logs: RwLock<BTreeMap<TopicPartition, SharedLog>>,
    /// Topic config overrides (`/config/topics/<t>`) known so far, layered on `config` for the
    /// topic's logs. A topic not here gets the broker defaults.
    topic_overrides: RwLock<HashMap<String, BTreeMap<String, String>>>,
    /// Logs per dir, for placing new partitions without visiting every log (taken after `logs`).
    per_dir: Mutex<HashMap<PathBuf, usize>>,
    /// Where rolled logs send the fsync of their old segments (a thread per dir).
    flusher: FlushScheduler,
}

impl LogManager {
    /// Loads every partition of every live dir. A dir whose files cannot be read goes offline;
    /// the others load.
    pub fn startup(cfg: &LogManagerConfig, failures: LogDirFailureChannel, faults: Faults, now_ms: i64) -> LogManager {
        let ctx = LogContext { faults, failures };
        let flusher = FlushScheduler::threads();
        let mut logs = BTreeMap::new();
        let mut per_dir = HashMap::new();
        for dir in &cfg.dirs {
            match load_dir(dir, cfg, &ctx, &flusher, now_ms) {
                Ok(loaded) => {
                    per_dir.insert(dir.clone(), loaded.len());
                    logs.extend(loaded);
                }
                Err(e) => ctx.failures.report(dir, &e.to_string()),
            }
        }
        LogManager {
            dirs: cfg.dirs.clone(),
            config: RwLock::new(cfg.log.clone()),
            ctx,
            logs: RwLock::new(logs),
            topic_overrides: RwLock::new(HashMap::new()),
            per_dir: Mutex::new(per_dir),
            flusher,
        }
    }

    fn logs(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<TopicPartition, SharedLog>> {
        assert_no_log_lock("the LogManager's map");
        self.logs.read().unwrap_or_else(|p| p.into_inner())
    }

    fn logs_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<TopicPartition, SharedLog>> {
        assert_no_log_lock("the LogManager's map");
        self.logs.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `topic`'s overrides were given (by [`Self::update_topic_config`]).
    pub fn knows_topic_config(&self, topic: &str) -> bool {
        self.topic_overrides
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(topic)
    }

    /// Records `topic`'s overrides and applies them to its existing logs (Kafka's
    /// `LogManager.updateTopicConfig`); logs created later get them too.
    pub fn update_topic_config(&self, topic: &str, overrides: BTreeMap<String, String>) {
        let config = self.broker_defaults().with_topic_overrides(&overrides);
        self.topic_overrides
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(topic.to_string(), overrides);
        for log in self.logs_of(topic) {
            lock(&log).set_config(config.clone());
        }
    }

    /// Replaces the broker-level defaults (a dynamic broker config changed, Kafka's
    /// `DynamicLogConfig.reconfigure`) and applies them to every log, under its topic's
    /// overrides: a topic without a `retention.ms` override takes the new `log.retention.ms`.
    pub fn update_broker_defaults(&self, defaults: LogConfig) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = defaults;
        let logs = self.all_logs();
        let mut per_topic: HashMap<String, LogConfig> = HashMap::new();
        for (tp, log) in logs {
            let config = per_topic
                .entry(tp.topic.clone())
                .or_insert_with(|| self.config_for(&tp.topic))
                .clone();
            lock(&log).set_config(config);
        }
    }

    /// The broker-level log defaults in force now.
    pub fn broker_defaults(&self) -> LogConfig {
        self.config.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `topic`'s `min.insync.replicas`: its override, else the broker's (live) value. Cheap
    /// enough for the produce path: no log is locked.
    pub fn min_insync_replicas(&self, topic: &str) -> i32 {
        let overridden = self
            .topic_overrides
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(topic)
            .and_then(|o| o.get("min.insync.replicas"))
            .and_then(|v| v.trim().parse::<i32>().ok())
            .filter(|v| *v >= 1);
        overridden.unwrap_or_else(|| {
            self.config
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .min_insync_replicas
        })
    }

    /// `topic`'s `unclean.leader.election.enable`: its override, else the broker's value.
    pub fn unclean_leader_election(&self, topic: &str) -> bool {
        self.config_for(topic).unclean_leader_election
    }

    /// The config a log of `topic` gets: broker defaults plus the topic's overrides.
    pub fn config_for(&self, topic: &str) -> LogConfig {
        let defaults = self.broker_defaults();
        match self
            .topic_overrides
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(topic)
        {
            Some(overrides) => defaults.with_topic_overrides(overrides),
            None => defaults,
        }
    }

    /// Whether any log of `topic` is on this broker.
    pub fn hosts_topic(&self, topic: &str) -> bool {
        !self.logs_of(topic).is_empty()
    }

    fn logs_of(&self, topic: &str) -> Vec<SharedLog> {
        let first = TopicPartition {
            topic: topic.to_string(),
            partition: i32::MIN,
        };
        self.logs()
            .range(first..)
            .take_while(|(tp, _)| tp.topic == topic)
            .map(|(_, l)| l.clone())
            .collect()
    }

    pub fn failures(&self) -> &LogDirFailureChannel {
        &self.ctx.failures
    }

    /// The fault-injection seam shared by every log of this manager.
    pub fn faults(&self) -> &Faults {
        &self.ctx.faults
    }

    pub fn live_dirs(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter(|d| !self.ctx.failures.is_offline(d))
            .cloned()
            .collect()
    }

    pub fn offline_dirs(&self) -> Vec<PathBuf> {
        self.ctx.failures.offline_dirs()
    }

    pub fn get_log(&self, tp: &TopicPartition) -> Option<SharedLog> {
        self.logs().get(tp).cloned()
    }

    pub fn all_logs(&self) -> Vec<(TopicPartition, SharedLog)> {
        self.logs().iter().map(|(tp, l)| (tp.clone(), l.clone())).collect()
    }

    /// The log of `tp`, created in the live dir holding the fewest partitions if it is new.
    pub fn get_or_create_log(&self, tp: &TopicPartition, now_ms: i64) -> Result<SharedLog, LogError> {
        if let Some(log) = self.get_log(tp) {
            return Ok(log);
        }
        let mut logs = self.logs_mut();
        if let Some(log) = logs.get(tp) {
            return Ok(log.clone());
        }
        let mut per_dir = self.per_dir.lock().unwrap_or_else(|p| p.into_inner());
        let dir = self
            .live_dirs()
            .into_iter()
            .map(|d| (per_dir.get(&d).copied().unwrap_or(0), d))
            .min()
            .map(|(_, d)| d)
            .ok_or_else(|| LogError::Offline {
                dir: self.dirs.first().cloned().unwrap_or_default(),
            })?;
        let (log, _) = Log::open(
            &dir.join(partition_dir_name(tp)),
            tp.clone(),
            self.config_for(&tp.topic),
            &self.ctx,
            0,
            None,
            true,
            now_ms,
        )?;
        let shared = flusher::share(log, &self.flusher);
        logs.insert(tp.clone(), shared.clone());
        *per_dir.entry(dir).or_insert(0) += 1;
        Ok(shared)
    }

    /// Removes `tp`'s log: its dir is renamed to `<topic>-<p>.<uuid>-delete` at once and removed
    /// in the background.
    pub fn delete_log(&self, tp: &TopicPartition) -> Result<(), LogError> {
        let mut logs = self.logs_mut();
        let Some(log) = logs.remove(tp) else {
            return Ok(());
        };
        // A deleted topic's overrides must not reach a later topic of the same name.
        if !logs.keys().any(|t| t.topic == tp.topic) {
            self.topic_overrides
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&tp.topic);
        }
        drop(logs);
        let mut guard = lock(&log);
        guard.mark_deleted();
        let from = guard.dir().to_path_buf();
        let root = guard.root().to_path_buf();
        drop(guard);
        if let Some(n) = self.per_dir.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&root) {
            *n = n.saturating_sub(1);
        }
        let to = root.join(format!(
            "{}.{}{DELETE_SUFFIX}",
            partition_dir_name(tp),
            uuid::Uuid::new_v4().simple()
        ));
        if let Err(e) = std::fs::rename(&from, &to) {
            self.ctx.failures.report(&root, &e.to_string());
            return Err(LogError::Storage {
                dir: root,
                source: SegmentIoError {
                    op: "rename",
                    path: from,
                    source: e,
                },
            });
        }
        spawn_removal(to);
        Ok(())
    }

    /// Forgets the logs of a failed dir (their files stay for the operator).
    pub fn handle_dir_failure(&self, dir: &Path) -> Vec<TopicPartition> {
        // Which logs live there, found without the map's lock (never a log lock under it).
        let in_dir: Vec<(TopicPartition, SharedLog)> = self
            .all_logs()
            .into_iter()
            .filter(|(_, l)| lock(l).root() == dir)
            .collect();
        let mut logs = self.logs_mut();
        let mut gone = Vec::with_capacity(in_dir.len());
        for (tp, log) in in_dir {
            // Unless it was deleted (and maybe created again elsewhere) meanwhile.
            if logs.get(&tp).is_some_and(|l| Arc::ptr_eq(l, &log)) {
                logs.remove(&tp);
                gone.push(tp);
            }
        }
        self.per_dir.lock().unwrap_or_else(|p| p.into_inner()).remove(dir);
        gone
    }

    /// Writes `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint` in every
    /// live dir. A dir whose write fails goes offline.
    pub fn checkpoint_logs(&self) {
        let logs = self.all_logs();
        for dir in self.live_dirs() {
            let mut recovery = BTreeMap::new();
            let mut starts = BTreeMap::new();
            for (tp, log) in &logs {
                let log = lock(log);
                if log.root() != dir {
                    continue;
                }
                recovery.insert(tp.clone(), log.recovery_point());
                // Kafka records only logs whose start moved past their first segment.
                if log.log_start_offset() > log.segment_base_offsets().first().copied().unwrap_or(0) {
                    starts.insert(tp.clone(), log.log_start_offset());
                }
            }
            let written = OffsetCheckpointFile::new(dir.join(RECOVERY_POINT_CHECKPOINT))
                .write(&recovery)
                .and_then(|()| OffsetCheckpointFile::new(dir.join(LOG_START_OFFSET_CHECKPOINT)).write(&starts));
            if let Err(e) = written {
                self.ctx.failures.report(&dir, &e.to_string());
            }
        }
    }

    /// Reads `replication-offset-checkpoint` of every live dir, for logs that exist (a missing
    /// or unreadable file means no high watermarks: they restart at 0 and catch up from the
    /// leader, as Kafka).
    pub fn read_high_watermark_checkpoints(&self) -> std::collections::HashMap<TopicPartition, i64> {
        let logs: std::collections::HashSet<TopicPartition> = self.all_logs().into_iter().map(|(tp, _)| tp).collect();
        let mut hws = std::collections::HashMap::new();
        for dir in self.live_dirs() {
            match OffsetCheckpointFile::new(dir.join(REPLICATION_OFFSET_CHECKPOINT)).read() {
                Ok(entries) => hws.extend(entries.into_iter().filter(|(tp, _)| logs.contains(tp))),
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot read the high-watermark checkpoint"),
            }
        }
        hws
    }

    /// Writes `replication-offset-checkpoint` (high watermarks) in every live dir.
    pub fn checkpoint_high_watermarks(&self, high_watermarks: &BTreeMap<TopicPartition, i64>) {
        let logs = self.all_logs();
        for dir in self.live_dirs() {
            let in_dir: BTreeMap<TopicPartition, i64> = logs
                .iter()
                .filter(|(_, l)| lock(l).root() == dir)
                .filter_map(|(tp, _)| high_watermarks.get(tp).map(|hw| (tp.clone(), *hw)))
                .collect();
            if let Err(e) = OffsetCheckpointFile::new(dir.join(REPLICATION_OFFSET_CHECKPOINT)).write(&in_dir) {
                self.ctx.failures.report(&dir, &e.to_string());
            }
        }
    }

    /// Applies retention to every log, never past each log's high watermark. `high_watermark`
    /// is asked before the log is locked: it takes the partition's lock, which comes first.
    pub fn cleanup_logs(&self, high_watermark: impl Fn(&TopicPartition) -> i64, now_ms: i64) -> usize {
        let mut deleted = 0;
        for (tp, log) in self.all_logs() {
            let hw = high_watermark(&tp);
            match lock(&log).delete_old_segments(hw, now_ms) {
                Ok(n) => deleted += n,
                Err(e) => tracing::warn!(%tp, error = %e, "retention failed"),
            }
        }
        deleted
    }

    /// Flushes the logs whose unflushed data is older than their `flush.ms`. The fsyncs run
    /// without the log's lock ([`flusher::flush_upto`]), so appends go on meanwhile.
    pub fn flush_dirty_logs(&self, now_ms: i64) -> usize {
        let mut flushed = 0;
        for (tp, log) in self.all_logs() {
            if !lock(&log).flush_due(now_ms) {
                continue;
            }
            match flusher::flush_upto(&log, i64::MAX, now_ms) {
                Ok(true) => flushed += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(%tp, error = %e, "flush failed"),
            }
        }
        flushed
    }

    /// Writes the leader-epoch checkpoints whose new-leader entry was deferred (see
    /// [`Log::assign_leader_epoch`]); returns how many. A dir whose write fails goes offline.
    pub fn flush_leader_epochs(&self) -> usize {
        let mut written = 0;
        for (tp, log) in self.all_logs() {
            match lock(&log).flush_leader_epochs() {
                Ok(true) => written += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(%tp, error = %e, "leader epoch checkpoint failed"),
            }
        }
        written
    }

    /// Drops every log's producers idle for `producer.id.expiration.ms` (Kafka's
    /// `producer.id.expiration.check.interval.ms` task). Returns how many.
    pub fn remove_expired_producers(&self, now_ms: i64) -> usize {
        self.all_logs()
            .iter()
            .map(|(_, log)| lock(log).remove_expired_producers(now_ms))
            .sum()
    }

    /// Flushes every log and snapshots its producer state, then writes the checkpoints (clean
    /// shutdown). Deferred leader-epoch entries are not written: an epoch without records needs
    /// none (see `leader_epoch`).
    pub fn flush_all(&self, now_ms: i64) {
        for (tp, log) in self.all_logs() {
            let mut log = lock(&log);
            if let Err(e) = log.flush(now_ms).and_then(|()| log.take_producer_snapshot()) {
                tracing::warn!(%tp, error = %e, "flush failed");
            }
        }
        self.checkpoint_logs();
    }
}

/// Loads one dir: checkpoints, then every partition dir, `threads` at a time.
fn load_dir(
    dir: &Path,
    cfg: &LogManagerConfig,
    ctx: &LogContext,
    flusher: &FlushScheduler,
    now_ms: i64,
) -> Result<Vec<(TopicPartition, SharedLog)>, Box<dyn std::error::Error + Send + Sync>> {
    let recovery_points = OffsetCheckpointFile::new(dir.join(RECOVERY_POINT_CHECKPOINT)).read()?;
    let log_starts = OffsetCheckpointFile::new(dir.join(LOG_START_OFFSET_CHECKPOINT)).read()?;
    let clean = cfg.clean_dirs.iter().any(|d| d == dir);
    let mut todo = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(DELETE_SUFFIX) {
            spawn_removal(entry.path());
            continue;
        }
        match parse_partition_dir(&name) {
            Some(tp) => todo.push((tp, entry.path())),
            None => tracing::warn!(dir = %entry.path().display(), "ignoring a directory that is not a partition log"),
        }
    }
    let queue = Mutex::new(todo);
    let loaded = Mutex::new(Vec::new());
    let failed: Mutex<Option<LogError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..cfg.recovery_threads_per_dir.max(1) {
            scope.spawn(|| loop {
                let Some((tp, path)) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop() else {
                    return;
                };
                let recovery_point = recovery_points.get(&tp).copied().unwrap_or(0);
                let start = log_starts.get(&tp).copied();
                match Log::open(
                    &path,
                    tp.clone(),
                    cfg.log.clone(),
                    ctx,
                    recovery_point,
                    start,
                    clean,
                    now_ms,
                ) {
                    Ok((log, report)) => {
                        log_load(&tp, &report);
                        loaded
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((tp, flusher::share(log, flusher)));
                    }
                    Err(e) => {
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(Box::new(e));
    }
    Ok(loaded.into_inner().unwrap_or_else(|p| p.into_inner()))
}

fn log_load(tp: &TopicPartition, report: &LoadReport) {
    if report.truncated_bytes > 0 || report.dropped_segments > 0 {
        tracing::warn!(%tp, truncated_bytes = report.truncated_bytes, dropped_segments = report.dropped_segments, "log recovered with data loss at its tail");
    }
}

fn spawn_removal(path: PathBuf) {
    std::thread::spawn(move || {
        if let Err(e) = std::fs::remove_dir_all(&path) {
            tracing::warn!(dir = %path.display(), error = %e, "could not remove a deleted partition dir");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_dirs_parse_like_kafkas() {
        assert_eq!(
            parse_partition_dir("orders-3"),
            Some(TopicPartition {
                topic: "orders".into(),
                partition: 3
            })
        );
        assert_eq!(
            parse_partition_dir("my-topic.v2-0"),
            Some(TopicPartition {
                topic: "my-topic.v2".into(),
                partition: 0
            })
        );
        assert_eq!(
            parse_partition_dir("orders-3.0123456789abcdef0123456789abcdef-delete"),
            None
        );
        assert_eq!(
            parse_partition_dir("orders-3.0123456789abcdef0123456789abcdef-future"),
            None
        );
        assert_eq!(parse_partition_dir("orders"), None);
        assert_eq!(parse_partition_dir("orders-x"), None);
        // Kafka splits at the last dash, so a topic may end in one.
        assert_eq!(
            parse_partition_dir("orders--1").map(|tp| tp.topic),
            Some("orders-".into())
        );
    }
}
