//! Where a log loses data on purpose: follower truncation (to an offset, or everything when the
//! leader's log start is past ours), moving the log start offset, and retention's deletion of
//! whole segments. Each keeps the leader-epoch cache, the producer state and the cleaner's
//! checkpoint in step with what the log still holds.

use super::{checkpoint_io, Log, LogError};
use crate::log::retention::{self, RetentionConfig, SegmentSummary};
use crate::log::segment::LogSegment;

impl Log {
    /// Removes everything at and after `offset` (follower truncation). No-op at or past the LEO.
    pub fn truncate_to(&mut self, offset: i64) -> Result<bool, LogError> {
        self.check_online()?;
        if offset >= self.log_end_offset() {
            return Ok(false);
        }
        if offset <= self.log_start_offset {
            self.truncate_fully_and_start_at(offset.max(0), 0)?;
            return Ok(true);
        }
        // offset > log start ≥ first base, so a segment below `offset` always survives.
        let doomed: Vec<i64> = self.segments.range(offset..).map(|(base, _)| *base).collect();
        for base in doomed {
            if let Some(seg) = self.segments.remove(&base) {
                let deleted = seg.delete();
                self.io(deleted)?;
            }
        }
        if let Some(seg) = self.segments.values_mut().next_back() {
            let truncated = seg.truncate_to(offset);
            self.io(truncated)?;
        }
        let leo = self.log_end_offset();
        let cut = self
            .epochs
            .truncate_from_end(leo)
            .map_err(|e| checkpoint_io(&self.dir, e));
        self.io(cut)?;
        self.recovery_point = self.recovery_point.min(leo);
        self.unflushed_truncation = true;
        self.note_truncation(offset);
        // Kafka's `truncateAndReload`: the state is rebuilt for what the log still holds
        // (expiry is left to the periodic check, which knows the time).
        self.load_producer_state(i64::MIN, false)?;
        Ok(true)
    }

    fn note_truncation(&mut self, offset: i64) {
        self.truncated_to = Some(self.truncated_to.map_or(offset, |t| t.min(offset)));
        self.note_flush_generation();
    }

    /// The lowest truncation point since the last call (for the cleaner's checkpoint).
    pub(crate) fn take_truncation_point(&mut self) -> Option<i64> {
        self.truncated_to.take()
    }

    /// Deletes every segment and starts empty at `offset` (a follower far behind the leader's
    /// log start offset).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64, now_ms: i64) -> Result<(), LogError> {
        self.check_online()?;
        for (_, seg) in std::mem::take(&mut self.segments) {
            let deleted = seg.delete();
            self.io(deleted)?;
        }
        let seg_config = self.config.segment_config();
        let created = LogSegment::create(&self.dir, offset, seg_config, &self.faults, now_ms);
        let seg = self.io(created)?;
        self.segments.insert(offset, seg);
        let cleared = self.epochs.clear_and_flush().map_err(|e| checkpoint_io(&self.dir, e));
        self.io(cleared)?;
        self.log_start_offset = offset;
        self.recovery_point = offset;
        self.unflushed_truncation = true;
        self.note_truncation(offset);
        self.clear_producer_state(offset)
    }

    /// Moves the log start offset forward (DeleteRecords, or the leader's start for a follower).
    pub fn maybe_increment_log_start_offset(&mut self, offset: i64) -> Result<(), LogError> {
        if offset > self.log_start_offset && offset <= self.log_end_offset() {
            self.log_start_offset = offset;
            let cut = self
                .epochs
                .truncate_from_start(offset)
                .map_err(|e| checkpoint_io(&self.dir, e));
            self.io(cut)?;
            self.delete_snapshots_before_log_start()?;
        }
        Ok(())
    }

    /// Applies retention (time, size, log start offset) to whole segments below `high_watermark`.
    /// Returns how many segments were deleted.
    pub fn delete_old_segments(&mut self, high_watermark: i64, now_ms: i64) -> Result<usize, LogError> {
        self.check_online()?;
        let summaries: Vec<SegmentSummary> = self
            .segments
            .values()
            .enumerate()
            .map(|(i, s)| SegmentSummary {
                base_offset: s.base_offset(),
                next_offset: s.next_offset(),
                size_bytes: s.size(),
                largest_timestamp: s.largest_timestamp(),
                is_active: i + 1 == self.segments.len(),
            })
            .collect();
        // `cleanup.policy=compact` alone: only the log-start-offset pass (see `retention`).
        let config = RetentionConfig {
            retention_ms: if self.config.delete {
                self.config.retention_ms
            } else {
                -1
            },
            retention_bytes: if self.config.delete {
                self.config.retention_bytes
            } else {
                -1
            },
        };
        let decision =
            retention::segments_to_delete(&summaries, self.log_start_offset, high_watermark, now_ms, &config);
        if decision.delete.is_empty() {
            return Ok(0);
        }
        if decision.roll_active_first {
            self.roll(now_ms)?;
        }
        let mut deleted = 0;
        for (base, reason) in decision.delete {
            if self.segments.len() <= 1 {
                break;
            }
            if let Some(seg) = self.segments.remove(&base) {
                tracing::info!(tp = %self.tp, base, ?reason, "deleting segment by retention");
                let done = seg.delete();
                self.io(done)?;
                deleted += 1;
            }
        }
        let first_base = self.segments.keys().next().copied().unwrap_or(0);
        if first_base > self.log_start_offset {
            self.log_start_offset = first_base;
            let cut = self
                .epochs
                .truncate_from_start(first_base)
                .map_err(|e| checkpoint_io(&self.dir, e));
            self.io(cut)?;
            self.delete_snapshots_before_log_start()?;
        }
        Ok(deleted)
    }
}
