//! The log cleaner's decisions, with no I/O and no clock (Kafka's `LogCleanerManager` choice
//! of the filthiest log, `Cleaner.groupSegmentsBySize` and `Cleaner.shouldRetainRecord`):
//! where the cleanable range of a log ends, which log to clean, how segments are grouped into
//! one cleaned segment, whether one record survives, and whether a batch is kept even when
//! none of its records does.

use std::collections::HashMap;

/// What the cleaner needs to know about one segment (oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentView {
    pub base_offset: i64,
    /// The next segment's base offset (the log end offset for the last one).
    pub end_offset: i64,
    pub size_bytes: u64,
    /// Largest record timestamp (or the file's mtime without timestamps).
    pub largest_timestamp: i64,
}

/// Kafka's `firstUncleanableDirtyOffset`: cleaning stops at the first of the active segment, the
/// high watermark (kastle has no transactions, so the last stable offset is the high watermark)
/// and the first segment with records younger than `min.compaction.lag.ms`. Only whole segments
/// below this offset are cleaned.
pub fn first_uncleanable_offset(
    segments: &[SegmentView],
    high_watermark: i64,
    min_compaction_lag_ms: i64,
    now_ms: i64,
) -> i64 {
    let active = segments.last().map_or(0, |s| s.base_offset);
    let too_young = segments
        .iter()
        .find(|s| min_compaction_lag_ms > 0 && s.largest_timestamp > now_ms.saturating_sub(min_compaction_lag_ms))
        .map_or(i64::MAX, |s| s.base_offset);
    active.min(high_watermark).min(too_young)
}

/// The whole segments of the dirty section: `[first_dirty, first_uncleanable)`.
pub fn dirty_segments(segments: &[SegmentView], first_dirty: i64, first_uncleanable: i64) -> &[SegmentView] {
    let start = segments
        .iter()
        .position(|s| s.end_offset > first_dirty)
        .unwrap_or(segments.len());
    let end = segments
        .iter()
        .position(|s| s.end_offset > first_uncleanable)
        .unwrap_or(segments.len());
    segments.get(start..end.max(start)).unwrap_or(&[])
}

/// How dirty a compacted log is (Kafka's `LogToClean`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dirtiness {
    /// Bytes below the first dirty offset (cleaned before).
    pub clean_bytes: u64,
    /// Bytes of the whole segments in the dirty section.
    pub cleanable_bytes: u64,
    /// `cleanable / (clean + cleanable)`, 0 for an empty log.
    pub ratio: f64,
    /// Dirty data older than `max.compaction.lag.ms` (Kafka's `needCompactionNow`).
    pub overdue: bool,
}

/// Measures a log: `first_dirty` is its cleaner checkpoint (clamped to the log by the caller).
pub fn dirtiness(
    segments: &[SegmentView],
    first_dirty: i64,
    first_uncleanable: i64,
    max_compaction_lag_ms: i64,
    now_ms: i64,
) -> Dirtiness {
    let clean_bytes = segments
        .iter()
        .filter(|s| s.end_offset <= first_dirty)
        .map(|s| s.size_bytes)
        .sum();
    let dirty = dirty_segments(segments, first_dirty, first_uncleanable);
    let cleanable_bytes: u64 = dirty.iter().map(|s| s.size_bytes).sum();
    let total = clean_bytes + cleanable_bytes;
    let ratio = if total == 0 {
        0.0
    } else {
        cleanable_bytes as f64 / total as f64
    };
    // Kafka ages the first dirty segment by its first batch's timestamp; kastle keeps only the
    // largest one per segment, so a log becomes overdue a little later than Kafka's would.
    let overdue = dirty.first().is_some_and(|s| {
        s.largest_timestamp >= 0 && now_ms.saturating_sub(s.largest_timestamp) > max_compaction_lag_ms
    });
    Dirtiness {
        clean_bytes,
        cleanable_bytes,
        ratio,
        overdue,
    }
}

/// One compacted log as the chooser sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub dirtiness: Dirtiness,
    pub min_cleanable_ratio: f64,
    /// A tombstone's delete horizon has passed: a pass removes it even without dirty data
    /// (KIP-534).
    pub horizon_due: bool,
}

impl Candidate {
    pub fn is_cleanable(&self) -> bool {
        let d = &self.dirtiness;
        (d.cleanable_bytes > 0 && (d.ratio >= self.min_cleanable_ratio || d.overdue)) || self.horizon_due
    }
}

/// Kafka's `grabFilthiestCompactedLog`: the cleanable log with the highest dirty ratio (logs
/// past their max compaction lag first, as Kafka's `needCompactionNow` orders them).
pub fn choose_filthiest(candidates: &[Candidate]) -> Option<usize> {
    candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_cleanable())
        .max_by(|(_, a), (_, b)| {
            (a.dirtiness.overdue, a.dirtiness.ratio)
                .partial_cmp(&(b.dirtiness.overdue, b.dirtiness.ratio))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map(|(i, _)| i)
}

/// Kafka's `groupSegmentsBySize`: consecutive segments are cleaned into one while their total
/// size stays within `max_size` (`segment.bytes`) and their offsets fit the index's 32-bit
/// relative offsets. Returns index ranges into `segments`; every segment is in one group.
pub fn group_segments(segments: &[SegmentView], max_size: u64) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let mut end = start + 1;
        let mut size = segments[start].size_bytes;
        while let Some(next) = segments.get(end) {
            let fits_size = size + next.size_bytes <= max_size;
            let fits_offsets = next.end_offset - 1 - segments[start].base_offset <= i64::from(i32::MAX);
            if !fits_size || !fits_offsets {
                break;
            }
            size += next.size_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Why a record is dropped (for the cleaner's statistics and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retain {
    Keep,
    /// A later record of the same key is in the offset map.
    Superseded,
    /// A tombstone whose batch's delete horizon has passed.
    ExpiredTombstone,
    /// No key: invalid in a compacted topic (Kafka counts it and drops it).
    NoKey,
}

/// Kafka's `shouldRetainRecord` (KIP-534 form): a record survives if it is the latest for its
/// key in the offset map (or its key is not there), and, when it is a tombstone, its batch has
/// no delete horizon yet or the horizon is still ahead.
pub fn retain_record(
    has_key: bool,
    has_value: bool,
    offset: i64,
    latest_for_key: Option<i64>,
    delete_horizon_ms: Option<i64>,
    now_ms: i64,
) -> Retain {
    if !has_key {
        return Retain::NoKey;
    }
    if latest_for_key.is_some_and(|latest| offset < latest) {
        return Retain::Superseded;
    }
    if !has_value && delete_horizon_ms.is_some_and(|h| now_ms >= h) {
        return Retain::ExpiredTombstone;
    }
    Retain::Keep
}

/// Kafka's `isBatchLastRecordOfProducer` for non-transactional batches: the batch holding the
/// last data offset of a producer that still has state (`last_offsets`: producer id → that
/// offset, taken from the log's producer state when the cleaning starts) is kept even if every
/// record in it is dropped, as an empty batch (`BatchRetention.RETAIN_EMPTY`), so the producer's
/// last sequence and epoch can be rebuilt from the log after compaction.
pub fn retain_empty_batch(producer_id: i64, batch_last_offset: i64, last_offsets: &HashMap<i64, i64>) -> bool {
    producer_id >= 0 && last_offsets.get(&producer_id) == Some(&batch_last_offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, end: i64, size: u64, ts: i64) -> SegmentView {
        SegmentView {
            base_offset: base,
            end_offset: end,
            size_bytes: size,
            largest_timestamp: ts,
        }
    }

    fn log() -> Vec<SegmentView> {
        vec![
            seg(0, 10, 100, 1_000),
            seg(10, 20, 100, 2_000),
            seg(20, 30, 100, 3_000),
            seg(30, 35, 50, 4_000), // active
        ]
    }

    #[test]
    fn the_active_segment_the_high_watermark_and_the_compaction_lag_bound_cleaning() {
        let segs = log();
        assert_eq!(first_uncleanable_offset(&segs, 35, 0, 10_000), 30, "active segment");
        assert_eq!(first_uncleanable_offset(&segs, 25, 0, 10_000), 25, "high watermark");
        // min.compaction.lag.ms = 8.5 s at t=10 s: records after t=1.5 s are too young.
        assert_eq!(first_uncleanable_offset(&segs, 35, 8_500, 10_000), 10);
        // Only whole segments below the bound are dirty.
        let dirty = dirty_segments(&segs, 10, 25);
        assert_eq!(dirty.iter().map(|s| s.base_offset).collect::<Vec<_>>(), vec![10]);
    }

    #[test]
    fn dirtiness_is_the_share_of_cleanable_bytes() {
        let segs = log();
        let d = dirtiness(&segs, 10, 30, i64::MAX, 10_000);
        assert_eq!((d.clean_bytes, d.cleanable_bytes), (100, 200));
        assert!((d.ratio - 2.0 / 3.0).abs() < 1e-9);
        assert!(!d.overdue);
        // A dirty segment older than max.compaction.lag.ms makes the log overdue.
        assert!(dirtiness(&segs, 10, 30, 5_000, 10_000).overdue);
        let none = dirtiness(&segs, 30, 30, i64::MAX, 10_000);
        assert_eq!(none.cleanable_bytes, 0);
    }

    #[test]
    fn the_filthiest_log_above_its_ratio_is_chosen() {
        let c = |ratio: f64, min: f64, overdue: bool, horizon_due: bool| Candidate {
            dirtiness: Dirtiness {
                clean_bytes: 100,
                cleanable_bytes: if ratio > 0.0 { 100 } else { 0 },
                ratio,
                overdue,
            },
            min_cleanable_ratio: min,
            horizon_due,
        };
        assert_eq!(
            choose_filthiest(&[c(0.4, 0.5, false, false), c(0.6, 0.5, false, false)]),
            Some(1)
        );
        assert_eq!(
            choose_filthiest(&[c(0.4, 0.5, false, false)]),
            None,
            "below the min ratio"
        );
        assert_eq!(
            choose_filthiest(&[c(0.9, 0.5, false, false), c(0.1, 0.5, true, false)]),
            Some(1),
            "overdue first"
        );
        assert_eq!(
            choose_filthiest(&[c(0.0, 0.5, false, true)]),
            Some(0),
            "expired tombstones"
        );
        assert_eq!(choose_filthiest(&[]), None);
    }

    #[test]
    fn segments_group_up_to_segment_bytes() {
        let segs = vec![
            seg(0, 10, 40, 0),
            seg(10, 20, 40, 0),
            seg(20, 30, 40, 0),
            seg(30, 40, 100, 0),
        ];
        assert_eq!(group_segments(&segs, 100), vec![0..2, 2..3, 3..4]);
        assert_eq!(group_segments(&segs, 1_000), vec![0..4]);
        // Offsets must fit the index's relative offsets.
        let wide = vec![
            seg(0, 10, 1, 0),
            seg(i64::from(i32::MAX), i64::from(i32::MAX) + 5, 1, 0),
        ];
        assert_eq!(group_segments(&wide, 1_000), vec![0..1, 1..2]);
    }

    #[test]
    fn records_survive_only_as_the_latest_of_their_key() {
        use Retain::*;
        assert_eq!(retain_record(true, true, 5, Some(9), None, 0), Superseded);
        assert_eq!(retain_record(true, true, 9, Some(9), None, 0), Keep);
        assert_eq!(
            retain_record(true, true, 5, None, None, 0),
            Keep,
            "key not in the dirty section"
        );
        assert_eq!(retain_record(false, true, 5, None, None, 0), NoKey);
        // Tombstones: kept until their batch's delete horizon (KIP-534), then dropped.
        assert_eq!(retain_record(true, false, 9, Some(9), None, 100), Keep);
        assert_eq!(retain_record(true, false, 9, Some(9), Some(200), 100), Keep);
        assert_eq!(retain_record(true, false, 9, Some(9), Some(100), 100), ExpiredTombstone);
        assert_eq!(retain_record(true, false, 5, Some(9), Some(200), 100), Superseded);
    }

    #[test]
    fn only_the_last_batch_of_a_producer_with_state_is_kept_empty() {
        let last: HashMap<i64, i64> = [(7, 19), (8, 40)].into();
        assert!(retain_empty_batch(7, 19, &last), "producer 7's last batch");
        assert!(!retain_empty_batch(7, 9, &last), "an earlier batch of producer 7");
        assert!(!retain_empty_batch(9, 19, &last), "a producer without state (expired)");
        assert!(!retain_empty_batch(-1, 19, &last), "no producer id");
    }
}
