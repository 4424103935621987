//! Log-dir failure signalling (Kafka's `LogDirFailureChannel`): the first I/O error in a log
//! dir marks it offline and publishes one [`LogDirFailure`]. Logs in an offline dir refuse
//! further work; the ReplicaManager consumes the events (stops fetchers, marks partitions
//! offline, writes `/log_dir_event_notification`). Never a panic, never a process exit.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use tokio::sync::broadcast;

/// A log dir went offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirFailure {
    pub dir: PathBuf,
    pub reason: String,
}

/// Shared by the LogManager and every Log it opens. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LogDirFailureChannel {
    offline: Arc<RwLock<BTreeSet<PathBuf>>>,
    tx: broadcast::Sender<LogDirFailure>,
}

impl Default for LogDirFailureChannel {
    fn default() -> Self {
        Self::new()
    }
}

impl LogDirFailureChannel {
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(64);
        LogDirFailureChannel {
            offline: Arc::new(RwLock::new(BTreeSet::new())),
            tx,
        }
    }

    /// Marks `dir` offline (once) and publishes the failure.
    pub fn report(&self, dir: &Path, reason: &str) {
        let newly = self
            .offline
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dir.to_path_buf());
        if newly {
            tracing::error!(dir = %dir.display(), reason, "log dir failed; taking it offline");
            metrics::gauge!("kafka_log_logmanager_offlinelogdirectorycount").increment(1.0);
            let _ = self.tx.send(LogDirFailure {
                dir: dir.to_path_buf(),
                reason: reason.to_string(),
            });
        }
    }

    pub fn is_offline(&self, dir: &Path) -> bool {
        self.offline.read().unwrap_or_else(|p| p.into_inner()).contains(dir)
    }

    pub fn offline_dirs(&self) -> Vec<PathBuf> {
        self.offline
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Failures from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LogDirFailure> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_fails_once_and_stays_offline() {
        let channel = LogDirFailureChannel::new();
        let mut rx = channel.subscribe();
        channel.report(Path::new("/d1"), "EIO");
        channel.report(Path::new("/d1"), "EIO again");
        assert!(channel.is_offline(Path::new("/d1")));
        assert!(!channel.is_offline(Path::new("/d2")));
        assert_eq!(rx.try_recv().expect("one event").reason, "EIO");
        assert!(rx.try_recv().is_err(), "only the first failure is published");
    }
}
