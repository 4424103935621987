//! The broker's lock order, and the guard every log lock is taken through.
//!
//! Locks are taken only in this order (outermost first), never the reverse:
//!
//! 1. Registries: the group coordinator's state, the log cleaner's state, the ReplicaManager's
//!    partition map, the fetcher maps. Each is held only to read or change its own map; none is
//!    taken while a partition or log lock is held.
//! 2. A [`Partition`](crate::replica::partition::Partition)'s state lock (Kafka's
//!    `leaderIsrUpdateLock`): leader, ISR, high watermark, followers.
//! 3. One [`Log`]'s lock (Kafka's `UnifiedLog.lock`). At most one at a time.
//! 4. Leaf locks, which call nothing: the log-dir failure channel, the fault seam, metrics and
//!    tracing.
//!
//! So code holding a log lock calls nothing that may take a partition or registry lock: no
//! callbacks, no closures handed in from outside the log module, no ReplicaManager, no awaits
//! (the guard is not `Send`, and `clippy.toml` makes holding it across an await an error). Whatever such code needs from outside (a high watermark, a
//! config) is read before the log is locked. The LogManager's own maps (`logs`, and the
//! `per_dir` and `topic_overrides` maps it takes after `logs`) are registries too: they are
//! never held while a log is locked, nor locked while a log is.
//!
//! An inversion freezes the broker (the retention task once held a log's lock while asking for
//! its partition's high watermark, while a fetch held the partition's lock waiting for the log:
//! both runtime workers blocked, the broker stopped answering). Debug builds check the rule:
//! [`lock`] counts the log locks this thread holds, and taking a partition or registry lock
//! while the count is non-zero panics naming the lock ([`assert_no_log_lock`]).

use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;

use super::log::Log;
use super::log_manager::SharedLog;

#[cfg(debug_assertions)]
thread_local! {
    static LOG_LOCKS_HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A held log lock (see the module docs for what may be done while holding it).
#[derive(Debug)]
pub struct LogGuard<'a> {
    guard: MutexGuard<'a, Log>,
}

impl Deref for LogGuard<'_> {
    type Target = Log;

    fn deref(&self) -> &Log {
        &self.guard
    }
}

impl DerefMut for LogGuard<'_> {
    fn deref_mut(&mut self) -> &mut Log {
        &mut self.guard
    }
}

impl Drop for LogGuard<'_> {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        LOG_LOCKS_HELD.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Locks a log; a panic while it was held does not make it unusable.
pub fn lock(log: &SharedLog) -> LogGuard<'_> {
    let guard = log.lock().unwrap_or_else(|p| p.into_inner());
    #[cfg(debug_assertions)]
    LOG_LOCKS_HELD.with(|n| n.set(n.get() + 1));
    LogGuard { guard }
}

/// Locks a log only if nobody holds it (an async worker must not wait behind an append that
/// may be stuck in a slow disk); `None` when it is busy.
pub fn try_lock(log: &SharedLog) -> Option<LogGuard<'_>> {
    let guard = match log.try_lock() {
        Ok(guard) => guard,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    #[cfg(debug_assertions)]
    LOG_LOCKS_HELD.with(|n| n.set(n.get() + 1));
    Some(LogGuard { guard })
}

/// Debug builds: panics if this thread holds a log lock, since `what` (a partition or registry
/// lock) comes before every log lock. Release builds: nothing.
#[inline]
pub fn assert_no_log_lock(what: &str) {
    #[cfg(debug_assertions)]
    {
        let held = LOG_LOCKS_HELD.with(|n| n.get());
        assert!(
            held == 0,
            "lock order violated: taking {what} while holding a log lock (the order is partition, then log)"
        );
    }
    #[cfg(not(debug_assertions))]
    let _ = what;
}

/// Whether this thread holds a log lock (always false in release builds).
pub fn holds_log_lock() -> bool {
    #[cfg(debug_assertions)]
    {
        LOG_LOCKS_HELD.with(|n| n.get()) > 0
    }
    #[cfg(not(debug_assertions))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::config::LogConfig;
    use crate::log::log::LogContext;

    fn log(dir: &std::path::Path) -> SharedLog {
        let ctx = LogContext {
            faults: Default::default(),
            failures: Default::default(),
        };
        let tp = crate::types::TopicPartition {
            topic: "t".into(),
            partition: 0,
        };
        let (log, _) = Log::open(&dir.join("t-0"), tp, LogConfig::default(), &ctx, 0, None, true, 0).expect("open");
        std::sync::Arc::new(std::sync::Mutex::new(log))
    }

    #[test]
    fn the_guard_counts_held_log_locks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (log(dir.path()), log(&dir.path().join("other")));
        assert!(!holds_log_lock());
        let ga = lock(&a);
        assert_eq!(holds_log_lock(), cfg!(debug_assertions));
        drop(ga);
        assert!(!holds_log_lock());
        // Sequential locks of two logs are fine; the count follows the guards.
        let gb = lock(&b);
        drop(gb);
        assert!(!holds_log_lock());
        assert_no_log_lock("a partition's lock");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "lock order violated: taking a partition's lock while holding a log lock")]
    fn a_partition_lock_under_a_log_lock_panics_in_debug_builds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = log(dir.path());
        let _held = lock(&a);
        assert_no_log_lock("a partition's lock");
    }
}
