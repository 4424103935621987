//! Background flushes (Kafka's `scheduler.scheduleOnce("flush-log", flushUptoOffsetExclusive)`):
//! a log that rolls hands the fsync of the segments below its new active one to a flusher
//! thread of its log dir, so the append that rolled does not pay for it. The recovery point
//! moves to the new segment's base offset only once that fsync is done, so recovery after a
//! crash starts from a recovery point that really was flushed.
//!
//! A flush ([`flush_upto`]) takes the log's lock twice, briefly: to collect handles on the files
//! to sync ([`Log::prepare_flush`]) and, after the fsyncs, to move the recovery point
//! ([`Log::complete_flush`]). The fsyncs themselves run without any lock, so appends go on
//! meanwhile, as in Kafka's `UnifiedLog.flush`. The broker's `flush.ms` scheduler takes the same
//! path. One thread per log dir: a slow disk delays only its own dir's flushes.
//!
//! Lock order ([`super::lock_order`]): [`FlushScheduler::schedule`] is called under a log's
//! lock and takes only its own map's lock (a leaf: it calls nothing but a channel send and, the
//! first time for a dir, a thread spawn). The flusher thread holds no lock while it waits.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, Weak};

use super::file::Faults;
use super::lock_order::lock;
use super::log::{Log, LogError};
use super::log_manager::SharedLog;
use super::segment::SegmentIoError;

/// What a flush fsyncs, collected under the log's lock and synced without it.
#[derive(Debug)]
pub struct FlushJob {
    /// Everything below this offset is durable once the job is done.
    pub(super) upto: i64,
    /// It covered the whole log when prepared (the flush timer restarts then).
    pub(super) full: bool,
    /// The log's truncation count when prepared.
    pub(super) generation: u64,
    /// It syncs the segment a truncation cut.
    pub(super) cut: bool,
    /// Unflushed messages when prepared (those are flushed once it is done).
    pub(super) unflushed_messages: i64,
    pub(super) files: Vec<(PathBuf, File)>,
    pub(super) faults: Faults,
}

impl FlushJob {
    /// The fsyncs, through the fault seam. Run without the log's lock.
    pub fn sync(&self) -> Result<(), SegmentIoError> {
        for (path, file) in &self.files {
            self.faults.sync(path, file).map_err(|source| SegmentIoError {
                op: "fsync",
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// Flushes everything of `log` below `upto` (`i64::MAX`: the LEO when it starts), holding the
/// log's lock only to collect the files and to record the result. Returns whether anything
/// needed a flush. An I/O error takes the dir offline (reported under the lock, as every
/// log error is).
pub fn flush_upto(log: &SharedLog, upto: i64, now_ms: i64) -> Result<bool, LogError> {
    let job = lock(log).prepare_flush(upto)?;
    let Some(job) = job else { return Ok(false) };
    let synced = job.sync();
    lock(log).complete_flush(job, synced, now_ms)?;
    Ok(true)
}

/// A flush a rolled log asked for.
#[derive(Debug)]
pub struct FlushRequest {
    log: Weak<Mutex<Log>>,
    /// The new active segment's base offset: everything below it gets flushed.
    pub upto: i64,
}

impl FlushRequest {
    /// Runs the flush (nothing if the log is gone). Errors are logged: the dir is offline then.
    pub fn run(self) {
        let Some(log) = self.log.upgrade() else { return };
        if let Err(e) = flush_upto(&log, self.upto, crate::clock::now_ms()) {
            tracing::warn!(error = %e, upto = self.upto, "background flush after a roll failed");
        }
    }
}

/// Where rolled logs send their flushes. Cheap to clone; one per LogManager.
#[derive(Debug, Clone)]
pub struct FlushScheduler {
    target: Arc<Target>,
}

#[derive(Debug)]
enum Target {
    /// A flusher thread per log dir, started on its first flush.
    Threads(Mutex<HashMap<PathBuf, Sender<FlushRequest>>>),
    /// Requests queued for the caller to run (tests decide when a flush happens).
    Queue(Sender<FlushRequest>),
}

impl Default for FlushScheduler {
    fn default() -> Self {
        Self::threads()
    }
}

impl FlushScheduler {
    /// Flushes run on a thread per log dir (what the broker uses).
    pub fn threads() -> Self {
        FlushScheduler {
            target: Arc::new(Target::Threads(Mutex::new(HashMap::new()))),
        }
    }

    /// Flushes are queued on the returned receiver, and run when the holder calls
    /// [`FlushRequest::run`].
    pub fn queued() -> (Self, Receiver<FlushRequest>) {
        let (tx, rx) = mpsc::channel();
        (
            FlushScheduler {
                target: Arc::new(Target::Queue(tx)),
            },
            rx,
        )
    }

    /// Queues `request` on `root`'s flusher. Never blocks (called under the log's lock).
    fn schedule(&self, root: &Path, request: FlushRequest) {
        let sent = match &*self.target {
            Target::Queue(tx) => tx.send(request).map_err(|e| e.0),
            Target::Threads(threads) => {
                let mut threads = threads.lock().unwrap_or_else(|p| p.into_inner());
                let tx = match threads.get(root) {
                    Some(tx) => tx.clone(),
                    None => match spawn_flusher(root) {
                        Ok(tx) => {
                            threads.insert(root.to_path_buf(), tx.clone());
                            tx
                        }
                        Err(e) => {
                            tracing::warn!(dir = %root.display(), error = %e, "cannot start a flusher thread");
                            return;
                        }
                    },
                };
                tx.send(request).map_err(|e| e.0)
            }
        };
        if let Err(request) = sent {
            // The recovery point just stays behind until the next flush: safe, only slower to recover.
            tracing::warn!(upto = request.upto, "no flusher took a roll's flush");
        }
    }
}

fn spawn_flusher(root: &Path) -> std::io::Result<Sender<FlushRequest>> {
    let (tx, rx) = mpsc::channel::<FlushRequest>();
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::thread::Builder::new()
        .name(format!("flush-{name}"))
        .spawn(move || {
            for request in rx {
                request.run();
            }
        })?;
    Ok(tx)
}

/// A log's handle on its flusher: the scheduler and a weak reference to the shared log itself.
#[derive(Debug)]
pub struct Flusher {
    scheduler: FlushScheduler,
    me: Weak<Mutex<Log>>,
}

impl Flusher {
    /// Asks for everything below `upto` to be flushed in the background.
    pub(super) fn schedule(&self, root: &Path, upto: i64) {
        self.scheduler.schedule(
            root,
            FlushRequest {
                log: self.me.clone(),
                upto,
            },
        );
    }
}

/// Shares `log` between the request path and background work, its rolls flushed by `scheduler`.
pub fn share(log: Log, scheduler: &FlushScheduler) -> SharedLog {
    Arc::new_cyclic(|me| {
        let mut log = log;
        log.set_flusher(Flusher {
            scheduler: scheduler.clone(),
            me: me.clone(),
        });
        Mutex::new(log)
    })
}

#[cfg(test)]
#[path = "flusher_tests.rs"]
mod tests;
