//! Which segments retention deletes: Kafka 3.x `UnifiedLog.deleteOldSegments` as a pure
//! function. The Log passes in a summary of each segment, its log start offset, its high
//! watermark and the clock. It gets back the segments to delete, and whether it must roll
//! first. Rolling, deleting the files and advancing the log start offset are the caller's
//! job. This module does no I/O and reads no clock.
//!
//! Kafka's rules, in the order Kafka 3.0+ applies them (KAFKA-12177 moved the log start offset
//! pass first, so that one run deletes everything that a second run would):
//! 1. log start offset: delete a segment if the *next* segment's base is `<= logStartOffset`.
//!    The active segment has no next segment, so this pass never deletes it.
//! 2. `retention.bytes`: with `diff = size - retention.bytes`, delete the oldest segments while
//!    `diff - segment.size >= 0`, subtracting each one's size.
//! 3. `retention.ms`: delete a segment if `now - largestTimestamp > retention.ms`.
//!
//! Each pass deletes a prefix of the segments left by the previous passes
//! (`LocalLog.deletableSegments`). It stops at the first segment that fails the rule, or whose
//! upper bound (the next segment's base, or the log end offset) is above the high watermark
//! (KAFKA-5634), or that is the last segment and empty. If a pass takes every remaining
//! segment, Kafka first rolls a new empty active segment at the log end offset
//! (`deleteSegments`). That segment is empty and last, so later passes delete nothing.
//! `-1` disables a size or time limit. For `cleanup.policy=compact` without `delete`, Kafka runs
//! only the log start offset pass: pass `-1` for both limits.

/// What retention needs to know about one segment. Segments are given oldest first, in
/// ascending base offset order, each `next_offset` equal to the next segment's base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSummary {
    pub base_offset: i64,
    /// The next segment's base offset. For the active segment, the log end offset.
    pub next_offset: i64,
    pub size_bytes: u64,
    /// Largest record timestamp in the segment. If the segment has no timestamps, its file's
    /// last-modified time in ms (Kafka's `LogSegment.largestTimestamp`).
    pub largest_timestamp: i64,
    /// Set on the last segment only. Kafka, like this module, treats the last segment as the
    /// active one. The flag documents the caller's view and is not consulted.
    pub is_active: bool,
}

/// The topic's retention limits. `-1` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    pub retention_ms: i64,
    pub retention_bytes: i64,
}

/// Which rule deleted a segment (Kafka's `SegmentDeletionReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    RetentionMs,
    RetentionBytes,
    LogStartOffset,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RetentionDecision {
    /// Base offsets to delete, ascending, each with the pass that chose it.
    pub delete: Vec<(i64, DeleteReason)>,
    /// Every segment, the active one included, is to be deleted. Roll a new empty active
    /// segment at the log end offset before deleting, because a log always keeps one segment.
    pub roll_active_first: bool,
}

/// Decides which segments retention deletes. `log_start_offset` and `high_watermark` are the
/// Log's current values; `now_ms` is the wall clock. See the module docs for the rules.
pub fn segments_to_delete(
    segments: &[SegmentSummary],
    log_start_offset: i64,
    high_watermark: i64,
    now_ms: i64,
    config: &RetentionConfig,
) -> RetentionDecision {
    let mut run = Run {
        segments,
        first: 0,
        log_start_offset,
        high_watermark,
        decision: RetentionDecision::default(),
    };

    run.delete_prefix(DeleteReason::LogStartOffset, |_, next_base, log_start_offset| {
        next_base.is_some_and(|base| base <= log_start_offset)
    });

    if config.retention_bytes >= 0 {
        let size: u64 = run.remaining().iter().map(|s| s.size_bytes).sum();
        let retention_bytes = config.retention_bytes.unsigned_abs();
        if size >= retention_bytes {
            let mut diff = size - retention_bytes;
            run.delete_prefix(DeleteReason::RetentionBytes, |segment, _, _| {
                if diff >= segment.size_bytes {
                    diff -= segment.size_bytes;
                    true
                } else {
                    false
                }
            });
        }
    }

    if config.retention_ms >= 0 {
        run.delete_prefix(DeleteReason::RetentionMs, |segment, _, _| {
            now_ms.saturating_sub(segment.largest_timestamp) > config.retention_ms
        });
    }

    run.decision
}

/// The state carried from pass to pass, as Kafka's Log carries it between the three
/// `deleteOldSegments` calls.
struct Run<'a> {
    segments: &'a [SegmentSummary],
    /// Index of the oldest segment not yet deleted. Equal to `segments.len()` after a roll.
    first: usize,
    /// Advanced to the first surviving segment's base after each deleting pass
    /// (`maybeIncrementLogStartOffset`).
    log_start_offset: i64,
    high_watermark: i64,
    decision: RetentionDecision,
}

impl<'a> Run<'a> {
    fn remaining(&self) -> &'a [SegmentSummary] {
        self.segments.get(self.first..).unwrap_or_default()
    }

    /// Deletes the longest prefix of the remaining segments in which every segment passes
    /// `rule(segment, next segment's base, log start offset)` and `deletableSegments`' checks.
    fn delete_prefix(&mut self, reason: DeleteReason, mut rule: impl FnMut(&SegmentSummary, Option<i64>, i64) -> bool) {
        let remaining = self.remaining();
        let mut taken = 0;
        for (i, segment) in remaining.iter().enumerate() {
            let next_base = remaining.get(i + 1).map(|next| next.base_offset);
            let is_last = next_base.is_none();
            let upper_bound = next_base.unwrap_or(segment.next_offset);
            let deletable = self.high_watermark >= upper_bound
                && rule(segment, next_base, self.log_start_offset)
                && !(is_last && segment.size_bytes == 0);
            if !deletable {
                break;
            }
            taken += 1;
        }
        if taken == 0 {
            return;
        }
        let deleted = &remaining[..taken];
        self.decision
            .delete
            .extend(deleted.iter().map(|s| (s.base_offset, reason)));
        let new_first_base = match remaining.get(taken) {
            Some(survivor) => survivor.base_offset,
            None => {
                // Everything went, the active segment included: the log rolls a new empty
                // active segment at the log end offset.
                self.decision.roll_active_first = true;
                deleted
                    .last()
                    .map_or(self.log_start_offset, |active| active.next_offset)
            }
        };
        self.first += taken;
        self.log_start_offset = self.log_start_offset.max(new_first_base);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeleteReason::*;

    const NOW: i64 = 1_700_000_000_000;
    const HOUR: i64 = 3_600_000;
    const UNLIMITED: i64 = -1;

    /// Builds a log from `(base, size, largest_timestamp)` rows with the log end offset `leo`.
    /// Each segment's next offset is the next row's base; the last row is active.
    fn log(rows: &[(i64, u64, i64)], leo: i64) -> Vec<SegmentSummary> {
        rows.iter()
            .enumerate()
            .map(|(i, &(base_offset, size_bytes, largest_timestamp))| {
                let next = rows.get(i + 1).map_or(leo, |r| r.0);
                let is_active = i + 1 == rows.len();
                SegmentSummary {
                    base_offset,
                    next_offset: next,
                    size_bytes,
                    largest_timestamp,
                    is_active,
                }
            })
            .collect()
    }

    struct Case {
        name: &'static str,
        /// The Kafka behaviour the case mirrors.
        rule: &'static str,
        segments: Vec<SegmentSummary>,
        log_start_offset: i64,
        high_watermark: i64,
        config: RetentionConfig,
        delete: Vec<(i64, DeleteReason)>,
        roll_active_first: bool,
    }

    fn ms(retention_ms: i64) -> RetentionConfig {
        RetentionConfig {
            retention_ms,
            retention_bytes: UNLIMITED,
        }
    }

    fn bytes(retention_bytes: i64) -> RetentionConfig {
        RetentionConfig {
            retention_ms: UNLIMITED,
            retention_bytes,
        }
    }

    fn check(cases: Vec<Case>) {
        for case in cases {
            let got = segments_to_delete(
                &case.segments,
                case.log_start_offset,
                case.high_watermark,
                NOW,
                &case.config,
            );
            let want = RetentionDecision {
                delete: case.delete,
                roll_active_first: case.roll_active_first,
            };
            assert_eq!(got, want, "{} ({})", case.name, case.rule);
        }
    }

    /// Oldest to newest: three expired closed segments around a young one, then the active.
    fn mixed_ages() -> Vec<SegmentSummary> {
        let old = NOW - 48 * HOUR;
        log(
            &[
                (0, 100, old),
                (100, 100, old),
                (200, 100, NOW - HOUR),
                (300, 100, old),
                (400, 50, NOW),
            ],
            450,
        )
    }

    #[test]
    fn time_retention_deletes_only_the_expired_prefix() {
        check(vec![
            Case {
                name: "time-breached prefix stops at the first young segment",
                rule:
                    "deletableSegments takes segments while the predicate holds: now - largestTimestamp > retention.ms",
                segments: mixed_ages(),
                log_start_offset: 0,
                high_watermark: 450,
                config: ms(24 * HOUR),
                delete: vec![(0, RetentionMs), (100, RetentionMs)],
                roll_active_first: false,
            },
            Case {
                name: "a segment exactly retention.ms old is kept",
                rule: "the comparison is strict: now - largestTimestamp > retentionMs",
                segments: log(&[(0, 100, NOW - 24 * HOUR), (100, 10, NOW)], 110),
                log_start_offset: 0,
                high_watermark: 110,
                config: ms(24 * HOUR),
                delete: vec![],
                roll_active_first: false,
            },
            Case {
                name: "a timestamp far in the past does not overflow",
                rule: "now - largestTimestamp, saturating where Java would wrap",
                segments: log(&[(0, 100, i64::MIN), (100, 10, NOW)], 110),
                log_start_offset: 0,
                high_watermark: 110,
                config: ms(HOUR),
                delete: vec![(0, RetentionMs)],
                roll_active_first: false,
            },
        ]);
    }

    #[test]
    fn size_retention_keeps_at_least_retention_bytes() {
        let segments = log(&[(0, 100, NOW), (100, 100, NOW), (200, 100, NOW), (300, 50, NOW)], 350);
        check(vec![
            Case {
                name: "deletes while the rest still holds retention.bytes",
                rule: "diff = size - retentionSize; delete while diff - segment.size >= 0",
                segments: segments.clone(),
                log_start_offset: 0,
                high_watermark: 350,
                config: bytes(200),
                delete: vec![(0, RetentionBytes)],
                roll_active_first: false,
            },
            Case {
                name: "a remainder exactly at retention.bytes is allowed",
                rule: "diff - segment.size >= 0 includes equality",
                segments: segments.clone(),
                log_start_offset: 0,
                high_watermark: 350,
                config: bytes(150),
                delete: vec![(0, RetentionBytes), (100, RetentionBytes)],
                roll_active_first: false,
            },
            Case {
                name: "a log smaller than retention.bytes deletes nothing",
                rule: "if (size < retentionSize) return 0",
                segments,
                log_start_offset: 0,
                high_watermark: 350,
                config: bytes(351),
                delete: vec![],
                roll_active_first: false,
            },
        ]);
    }

    #[test]
    fn nothing_at_or_above_the_high_watermark_is_deleted() {
        let old = NOW - 48 * HOUR;
        let segments = log(&[(0, 100, old), (100, 100, old), (200, 100, old)], 300);
        check(vec![
            Case {
                name: "HW inside the second segment protects it",
                rule: "KAFKA-5634: highWatermark >= upperBoundOffset (next segment's base)",
                segments: segments.clone(),
                log_start_offset: 0,
                high_watermark: 150,
                config: ms(HOUR),
                delete: vec![(0, RetentionMs)],
                roll_active_first: false,
            },
            Case {
                name: "HW exactly at a segment boundary frees the segment below it",
                rule: "upperBoundOffset <= highWatermark",
                segments: segments.clone(),
                log_start_offset: 0,
                high_watermark: 200,
                config: bytes(0),
                delete: vec![(0, RetentionBytes), (100, RetentionBytes)],
                roll_active_first: false,
            },
            Case {
                name: "the expired active segment stays while HW is below the log end offset",
                rule: "the active segment's upper bound is the log end offset",
                segments,
                log_start_offset: 0,
                high_watermark: 299,
                config: ms(HOUR),
                delete: vec![(0, RetentionMs), (100, RetentionMs)],
                roll_active_first: false,
            },
        ]);
    }

    #[test]
    fn log_start_offset_deletes_segments_entirely_below_it() {
        let segments = log(&[(0, 100, NOW), (100, 100, NOW), (200, 100, NOW), (300, 50, NOW)], 350);
        check(vec![
            Case {
                name: "segments whose next base is at or below the log start offset",
                rule: "nextSegmentOpt.exists(_.baseOffset <= logStartOffset)",
                segments: segments.clone(),
                log_start_offset: 250,
                high_watermark: 350,
                config: ms(UNLIMITED),
                delete: vec![(0, LogStartOffset), (100, LogStartOffset)],
                roll_active_first: false,
            },
            Case {
                name: "the active segment is never deleted by the log start offset",
                rule: "the active segment has no next segment, so the predicate is false",
                segments,
                log_start_offset: 350,
                high_watermark: 350,
                config: ms(UNLIMITED),
                delete: vec![(0, LogStartOffset), (100, LogStartOffset), (200, LogStartOffset)],
                roll_active_first: false,
            },
        ]);
    }

    #[test]
    fn the_active_segment_goes_only_when_everything_qualifies_and_then_the_log_rolls() {
        let old = NOW - 48 * HOUR;
        check(vec![
            Case {
                name: "everything expired and replicated",
                rule: "deleteSegments: deleting every segment rolls a new one first",
                segments: log(&[(0, 100, old), (100, 100, old), (200, 10, old)], 210),
                log_start_offset: 0,
                high_watermark: 210,
                config: ms(HOUR),
                delete: vec![(0, RetentionMs), (100, RetentionMs), (200, RetentionMs)],
                roll_active_first: true,
            },
            Case {
                name: "an empty active segment is never deleted",
                rule: "deletableSegments: a last segment with size 0 is never returned",
                segments: log(&[(0, 100, old), (100, 0, old)], 100),
                log_start_offset: 0,
                high_watermark: 100,
                config: ms(HOUR),
                delete: vec![(0, RetentionMs)],
                roll_active_first: false,
            },
            Case {
                name: "retention.bytes = 0 empties the log through a roll",
                rule: "diff = size; every non-empty segment below the HW fits in it",
                segments: log(&[(0, 100, NOW), (100, 10, NOW)], 110),
                log_start_offset: 0,
                high_watermark: 110,
                config: bytes(0),
                delete: vec![(0, RetentionBytes), (100, RetentionBytes)],
                roll_active_first: true,
            },
            Case {
                name: "after the roll later passes find only the new empty segment",
                rule: "deleteOldSegments runs each pass against the rolled log",
                segments: log(&[(0, 100, old), (100, 10, old)], 110),
                log_start_offset: 0,
                high_watermark: 110,
                config: RetentionConfig {
                    retention_ms: HOUR,
                    retention_bytes: 0,
                },
                delete: vec![(0, RetentionBytes), (100, RetentionBytes)],
                roll_active_first: true,
            },
        ]);
    }

    #[test]
    fn minus_one_disables_a_limit_and_an_empty_log_deletes_nothing() {
        let old = NOW - 48 * HOUR;
        let unlimited = RetentionConfig {
            retention_ms: UNLIMITED,
            retention_bytes: UNLIMITED,
        };
        check(vec![
            Case {
                name: "no limits keep old, large segments",
                rule: "retentionMs < 0 / retentionSize < 0 return 0",
                segments: log(&[(0, 1 << 40, old), (100, 10, old)], 110),
                log_start_offset: 0,
                high_watermark: 110,
                config: unlimited,
                delete: vec![],
                roll_active_first: false,
            },
            Case {
                name: "no limits still honour the log start offset",
                rule: "deleteLogStartOffsetBreachedSegments runs for every cleanup policy",
                segments: log(&[(0, 100, old), (100, 10, old)], 110),
                log_start_offset: 100,
                high_watermark: 110,
                config: unlimited,
                delete: vec![(0, LogStartOffset)],
                roll_active_first: false,
            },
            Case {
                name: "an empty log",
                rule: "deletableSegments of no segments is empty",
                segments: vec![],
                log_start_offset: 0,
                high_watermark: 0,
                config: RetentionConfig {
                    retention_ms: 0,
                    retention_bytes: 0,
                },
                delete: vec![],
                roll_active_first: false,
            },
        ]);
    }

    #[test]
    fn passes_run_in_kafka_3_order_each_on_what_the_previous_left() {
        let old = NOW - 48 * HOUR;
        check(vec![
            Case {
                name: "log start offset first, so time retention continues past a young segment it removed",
                rule: "KAFKA-12177: deleteLogStartOffsetBreachedSegments runs before size and time",
                segments: log(&[(0, 100, old), (100, 100, NOW), (200, 100, old), (300, 10, NOW)], 310),
                log_start_offset: 200,
                high_watermark: 310,
                config: ms(HOUR),
                delete: vec![(0, LogStartOffset), (100, LogStartOffset), (200, RetentionMs)],
                roll_active_first: false,
            },
            Case {
                name: "size retention measures the log after the log start offset pass",
                rule: "size is read when deleteRetentionSizeBreachedSegments starts",
                segments: log(&[(0, 100, NOW), (100, 100, NOW), (200, 100, NOW), (300, 10, NOW)], 310),
                log_start_offset: 100,
                high_watermark: 310,
                config: bytes(200),
                // 210 bytes remain after the first deletion, so size retention removes nothing more.
                delete: vec![(0, LogStartOffset)],
                roll_active_first: false,
            },
            Case {
                name: "a segment chosen by size is not reported again by time",
                rule: "each segment is deleted once, by the first pass that selects it",
                segments: log(&[(0, 100, old), (100, 100, old), (200, 100, old), (300, 10, NOW)], 310),
                log_start_offset: 0,
                high_watermark: 310,
                config: RetentionConfig {
                    retention_ms: HOUR,
                    retention_bytes: 200,
                },
                delete: vec![(0, RetentionBytes), (100, RetentionMs), (200, RetentionMs)],
                roll_active_first: false,
            },
        ]);
    }
}
