//! Flushing a log: which files an fsync up to an offset covers, collected under the log's lock
//! and synced without it ([`crate::log::flusher`]), and the recovery point moved only once
//! they are durable. The synchronous [`Log::flush`] takes the same steps under the lock.

use super::{Log, LogError};
use crate::log::flusher::FlushJob;
use crate::log::segment::SegmentIoError;

impl Log {
    /// Whether unflushed data is older than `flush.ms` (what the flush scheduler asks).
    pub fn flush_due(&self, now_ms: i64) -> bool {
        self.unflushed_messages > 0 && now_ms - self.last_flush_ms >= self.config.flush_interval_ms
    }

    /// Flushes when unflushed data is older than `flush.ms`, holding the lock throughout (the
    /// broker's scheduler uses [`crate::log::flusher::flush_upto`], which does not).
    pub fn maybe_flush_by_time(&mut self, now_ms: i64) -> Result<bool, LogError> {
        if self.flush_due(now_ms) {
            self.flush(now_ms)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// fsyncs every segment with data past the recovery point (and roll snapshots not synced
    /// yet) and moves the recovery point to the LEO, under the lock. A log with nothing
    /// appended or cut since its last flush needs no fsync (an empty new log has nothing to
    /// lose): skipping them keeps a clean shutdown of a broker with thousands of idle partitions
    /// from costing three fsyncs each.
    pub fn flush(&mut self, now_ms: i64) -> Result<(), LogError> {
        self.check_online()?;
        let Some(job) = self.prepare_flush(i64::MAX)? else {
            self.last_flush_ms = now_ms;
            return Ok(());
        };
        let synced = job.sync();
        self.complete_flush(job, synced, now_ms)
    }

    /// Under the lock, what a flush of everything below `upto` must fsync (`i64::MAX`: up to the
    /// LEO), as handles valid without the lock; `None` when nothing needs it. The fsyncs run
    /// after the lock is released ([`FlushJob::sync`]); [`Self::complete_flush`] then moves the
    /// recovery point.
    pub fn prepare_flush(&mut self, upto: i64) -> Result<Option<FlushJob>, LogError> {
        if self.deleted {
            return Ok(None);
        }
        self.check_online()?;
        let leo = self.log_end_offset();
        let upto = upto.min(leo);
        let (recovery_point, cut) = (self.recovery_point, self.unflushed_truncation);
        let snapshots: Vec<i64> = self.unsynced_snapshots.iter().copied().filter(|o| *o <= upto).collect();
        if upto <= recovery_point && !cut && snapshots.is_empty() {
            return Ok(None);
        }
        self.unsynced_snapshots.retain(|o| *o > upto);
        let full = upto >= leo;
        let mut files = Vec::new();
        let mut handles = Ok(());
        for seg in self.segments.values_mut() {
            if !full && seg.base_offset() >= upto {
                break;
            }
            // Data past the recovery point, a segment begun after it, or (after a truncation)
            // the segment whose shorter length is not durable yet.
            let next = seg.next_offset();
            if next > recovery_point || seg.base_offset() >= recovery_point || (cut && next >= recovery_point) {
                match seg.sync_handles() {
                    Ok(h) => files.extend(h),
                    Err(e) => {
                        handles = Err(e);
                        break;
                    }
                }
            }
        }
        self.io(handles)?;
        for offset in snapshots {
            let path = crate::log::producer_snapshot::path(&self.dir, offset);
            match std::fs::File::open(&path) {
                Ok(file) => files.push((path, file)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {} // deleted since
                Err(source) => {
                    self.io(Err::<(), _>(SegmentIoError {
                        op: "open",
                        path,
                        source,
                    }))?;
                }
            }
        }
        Ok(Some(FlushJob {
            upto,
            full,
            generation: self.flush_generation,
            cut,
            unflushed_messages: self.unflushed_messages,
            files,
            faults: self.faults.clone(),
        }))
    }

    /// Under the lock again, after `job`'s fsyncs (`synced`): moves the recovery point to what
    /// they made durable. A failure takes the dir offline. A truncation since `job` was prepared
    /// leaves the recovery point alone (it already went down to the new log end).
    pub fn complete_flush(
        &mut self,
        job: FlushJob,
        synced: Result<(), SegmentIoError>,
        now_ms: i64,
    ) -> Result<(), LogError> {
        self.io(synced)?;
        if job.generation != self.flush_generation {
            return Ok(());
        }
        self.recovery_point = self.recovery_point.max(job.upto);
        if job.cut {
            self.unflushed_truncation = false;
        }
        if job.full {
            self.unflushed_messages = (self.unflushed_messages - job.unflushed_messages).max(0);
            self.last_flush_ms = now_ms;
        }
        Ok(())
    }

    /// A truncation: flushes prepared before it must not move the recovery point.
    pub(super) fn note_flush_generation(&mut self) {
        self.flush_generation += 1;
    }
}
