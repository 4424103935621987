//! The I/O executor: the data path's disk work (appends, reads, deletes, the group
//! coordinator's loads) runs here, never on the async workers. Each log dir has its own thread
//! fed by its own queue, so a stalled disk holds up only the work queued on that dir: other
//! dirs' queues and every async worker keep going.
//!
//! The thread takes the operations queued while it was busy one after another without sleeping
//! in between (several per wake-up under load), and is woken (one futex call) only when it was
//! asleep. The caller awaits a oneshot; before parking it spins briefly ([`SPIN`]), since a
//! small append or read from the page cache is done within a few µs: an answer found while
//! spinning costs no wake-up of the async side at all. A panic in the work becomes
//! UNKNOWN_SERVER_ERROR for that operation only. Work on no log dir (nothing hosted) runs in
//! place: it touches no disk.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::error::ReplicaError;

/// How long the caller spins for the answer before parking its task. Measured against none
/// (BENCHMARKS.md, "Per request"): no difference for acks=1, fewer µs per acks=-1 request.
const SPIN: Duration = Duration::from_micros(20);

type Job = Box<dyn FnOnce() + Send>;

/// One log dir's queue and its thread's sleep.
#[derive(Debug, Default)]
struct DirQueue {
    state: Mutex<QueueState>,
    wake: Condvar,
}

#[derive(Default)]
struct QueueState {
    jobs: VecDeque<Job>,
    /// The thread waits on the condvar (only then does a new job need a wake-up).
    asleep: bool,
    closed: bool,
}

impl std::fmt::Debug for QueueState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueState")
            .field("jobs", &self.jobs.len())
            .field("asleep", &self.asleep)
            .field("closed", &self.closed)
            .finish()
    }
}

impl DirQueue {
    fn state(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, job: Job) {
        let mut state = self.state();
        state.jobs.push_back(job);
        let asleep = std::mem::replace(&mut state.asleep, false);
        drop(state);
        if asleep {
            self.wake.notify_one();
        }
    }

    /// The dir's thread: runs jobs in order until the executor closes the queue.
    fn serve(&self) {
        let mut state = self.state();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                drop(state);
                job(); // catches its own panics
                state = self.state();
                continue;
            }
            if state.closed {
                return;
            }
            state.asleep = true;
            state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
            state.asleep = false;
        }
    }

    fn close(&self) {
        self.state().closed = true;
        self.wake.notify_one();
    }
}

/// Per log dir, a queue and the thread serving it (started on the dir's first operation).
#[derive(Debug, Default)]
pub struct IoExecutor {
    dirs: RwLock<Vec<(PathBuf, Arc<DirQueue>)>>,
}

impl IoExecutor {
    /// Runs `work` on `dir`'s thread (in place when `dir` is None: nothing hosted, no disk) and
    /// answers what it returned; a panic there is UNKNOWN_SERVER_ERROR.
    pub async fn run<T: Send + 'static>(
        &self,
        dir: Option<&Path>,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ReplicaError> {
        let Some(dir) = dir else {
            return catch(work);
        };
        let queue = self.queue(dir)?;
        let (tx, mut rx) = oneshot::channel();
        queue.push(Box::new(move || {
            let _ = tx.send(catch(work));
        }));
        let started = Instant::now();
        let mut spins = 0u32;
        loop {
            match rx.try_recv() {
                Ok(answer) => return answer,
                Err(oneshot::error::TryRecvError::Closed) => return Err(lost()),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            spins += 1;
            if spins % 32 == 0 && started.elapsed() >= SPIN {
                break;
            }
            std::hint::spin_loop();
        }
        rx.await.unwrap_or_else(|_| Err(lost()))
    }

    fn queue(&self, dir: &Path) -> Result<Arc<DirQueue>, ReplicaError> {
        {
            let dirs = self.dirs.read().unwrap_or_else(|p| p.into_inner());
            if let Some((_, q)) = dirs.iter().find(|(d, _)| d == dir) {
                return Ok(q.clone());
            }
        }
        let mut dirs = self.dirs.write().unwrap_or_else(|p| p.into_inner());
        if let Some((_, q)) = dirs.iter().find(|(d, _)| d == dir) {
            return Ok(q.clone());
        }
        let queue = Arc::new(DirQueue::default());
        let serving = queue.clone();
        std::thread::Builder::new()
            .name(format!("kastle-io-{}", dirs.len()))
            .spawn(move || serving.serve())
            .map_err(|e| {
                tracing::error!(dir = %dir.display(), error = %e, "cannot start the log dir's I/O thread");
                ReplicaError::UnknownServerError
            })?;
        dirs.push((dir.to_path_buf(), queue.clone()));
        Ok(queue)
    }
}

impl Drop for IoExecutor {
    /// Each dir's thread finishes what is queued and ends.
    fn drop(&mut self) {
        let dirs = self.dirs.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, queue) in dirs.drain(..) {
            queue.close();
        }
    }
}

/// Splits items into runs of consecutive items on one log dir (an item on no dir joins the run
/// it falls in): the lengths of the runs, in order. Each run is one operation on its dir's
/// thread, so a stalled dir holds up only the parts of a request that need it.
pub fn dir_runs<'a>(dirs: impl IntoIterator<Item = Option<&'a Path>>) -> Vec<usize> {
    let mut runs: Vec<(usize, Option<&Path>)> = Vec::with_capacity(1);
    for dir in dirs {
        match runs.last_mut() {
            Some((len, current)) if dir.is_none() || current.is_none() || *current == dir => {
                *len += 1;
                if current.is_none() {
                    *current = dir;
                }
            }
            _ => runs.push((1, dir)),
        }
    }
    runs.into_iter().map(|(len, _)| len).collect()
}

fn catch<T>(work: impl FnOnce() -> T) -> Result<T, ReplicaError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|_| {
        tracing::error!("disk work panicked");
        ReplicaError::UnknownServerError
    })
}

fn lost() -> ReplicaError {
    tracing::error!("disk work ended without an answer");
    ReplicaError::UnknownServerError
}

#[cfg(test)]
#[path = "io_tests.rs"]
mod tests;
