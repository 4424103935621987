//! DeleteRecords on a partition (Kafka's `Partition.deleteRecordsOnLeader` and
//! `lowWatermarkIfLeader`, and the follower's side of it): the leader moves its log start
//! offset; each follower takes the leader's log start from its Fetch responses and reports its
//! own in its next fetch, which the leader records; the low watermark — the lowest log start of
//! the leader and every live follower — tells the waiting request when all replicas have it.
//! Segments wholly below the log start are left to retention's log-start pass, as in Kafka.

use super::{FollowerError, Inner, Partition};
use crate::log::log::LogError;
use crate::log::log_manager::lock;
use crate::protocol::error_codes as ec;
use crate::types::BrokerId;

/// `DeleteRecordsRequest.HIGH_WATERMARK`: delete everything below the high watermark.
pub const HIGH_WATERMARK: i64 = -1;

/// Why a partition refused DeleteRecords.
#[derive(Debug, thiserror::Error)]
pub enum DeleteRecordsError {
    #[error("this broker is not the partition's leader")]
    NotLeader,
    /// `cleanup.policy` without `delete` (compacted only).
    #[error("records of the partition can not be deleted due to the configured policy")]
    PolicyViolation,
    #[error("offset {offset} is not valid: the high watermark is {high_watermark}")]
    OffsetOutOfRange { offset: i64, high_watermark: i64 },
    #[error(transparent)]
    Log(#[from] LogError),
}

impl DeleteRecordsError {
    pub fn error_code(&self) -> i16 {
        match self {
            DeleteRecordsError::NotLeader => ec::NOT_LEADER_OR_FOLLOWER,
            DeleteRecordsError::PolicyViolation => ec::POLICY_VIOLATION,
            DeleteRecordsError::OffsetOutOfRange { .. } => ec::OFFSET_OUT_OF_RANGE,
            DeleteRecordsError::Log(e) => e.error_code(),
        }
    }
}

/// What the leader did: the offset its log now starts at (the request's, -1 resolved to the
/// HW) and the low watermark right after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletedRecords {
    pub requested_offset: i64,
    pub low_watermark: i64,
}

/// The offset a request for `offset` moves the log start to: -1 means the HW; anything below
/// zero or past the HW is out of range (Kafka's `deleteRecordsOnLeader` and
/// `maybeIncrementLogStartOffset`).
pub fn delete_offset(offset: i64, high_watermark: i64) -> Result<i64, DeleteRecordsError> {
    let target = if offset == HIGH_WATERMARK {
        high_watermark
    } else {
        offset
    };
    if target < 0 || target > high_watermark {
        return Err(DeleteRecordsError::OffsetOutOfRange {
            offset: target,
            high_watermark,
        });
    }
    Ok(target)
}

/// The lowest log start of the leader and the followers `alive` says are up (a follower that
/// has not reported one counts as -1, so the request waits for its first fetch).
pub fn low_watermark(
    leader_log_start: i64,
    followers: impl IntoIterator<Item = (BrokerId, i64)>,
    alive: impl Fn(BrokerId) -> bool,
) -> i64 {
    followers
        .into_iter()
        .filter(|(id, _)| alive(*id))
        .map(|(_, start)| start)
        .fold(leader_log_start, i64::min)
}

fn low_watermark_of(inner: &Inner, leader_log_start: i64, alive: &dyn Fn(BrokerId) -> bool) -> i64 {
    low_watermark(
        leader_log_start,
        inner.followers.iter().map(|(id, f)| (*id, f.log_start)),
        alive,
    )
}

impl Partition {
    /// As leader: moves the log start offset to `offset` (-1: the HW). Disk work (the epoch
    /// cache and producer snapshots below the new start): run it on the I/O executor.
    pub fn delete_records_on_leader(
        &self,
        offset: i64,
        alive: &dyn Fn(BrokerId) -> bool,
    ) -> Result<DeletedRecords, DeleteRecordsError> {
        let inner = self.inner();
        if inner.state.leader != self.local {
            return Err(DeleteRecordsError::NotLeader);
        }
        let mut log = lock(&inner.log);
        if !log.config().delete {
            return Err(DeleteRecordsError::PolicyViolation);
        }
        let target = delete_offset(offset, inner.high_watermark)?;
        if target > log.log_start_offset() {
            log.maybe_increment_log_start_offset(target)?;
            tracing::info!(partition = %self.tp, log_start = target, "log start offset moved by DeleteRecords");
        }
        let start = log.log_start_offset();
        drop(log);
        Ok(DeletedRecords {
            requested_offset: target,
            low_watermark: low_watermark_of(&inner, start, alive),
        })
    }

    /// As leader: the low watermark (Kafka's `lowWatermarkIfLeader`).
    pub fn low_watermark_if_leader(&self, alive: &dyn Fn(BrokerId) -> bool) -> Result<i64, DeleteRecordsError> {
        let inner = self.inner();
        if inner.state.leader != self.local {
            return Err(DeleteRecordsError::NotLeader);
        }
        let start = lock(&inner.log).log_start_offset();
        Ok(low_watermark_of(&inner, start, alive))
    }

    /// As leader: follower `replica`'s fetch said its log starts at `log_start` (Fetch v5+; -1
    /// when the fetch does not say). Wakes DeleteRecords waiting on this partition when it rose.
    pub fn update_follower_log_start(&self, replica: BrokerId, log_start: i64) {
        let moved = {
            let mut inner = self.inner();
            match inner.followers.get_mut(&replica) {
                Some(f) if log_start >= 0 && f.log_start != log_start => {
                    let rose = log_start > f.log_start;
                    f.log_start = log_start;
                    rose
                }
                _ => false,
            }
        };
        if moved {
            self.log_starts_seen.send_modify(|n| *n += 1);
        }
    }

    /// Wakes when a follower reports a higher log start.
    pub fn subscribe_log_starts(&self) -> tokio::sync::watch::Receiver<u64> {
        self.log_starts_seen.subscribe()
    }

    /// As follower in `leader_epoch`: takes the leader's log start offset from a Fetch response
    /// (Kafka's fetcher: `maybeIncrementLogStartOffset(leaderLogStartOffset)`), no further than
    /// our own high watermark (Kafka refuses past it; the next fetch brings the rest). Returns
    /// whether ours moved.
    pub fn follow_leader_log_start(&self, leader_epoch: i32, leader_log_start: i64) -> Result<bool, FollowerError> {
        let inner = self.inner();
        self.check_following(&inner, leader_epoch)?;
        let target = leader_log_start.min(inner.high_watermark);
        let mut log = lock(&inner.log);
        if target <= log.log_start_offset() {
            return Ok(false);
        }
        log.maybe_increment_log_start_offset(target)
            .map_err(FollowerError::Log)?;
        tracing::info!(partition = %self.tp, log_start = target, "log start offset moved to the leader's");
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::config::LogConfig;
    use crate::log::failure::LogDirFailureChannel;
    use crate::log::file::Faults;
    use crate::log::log_manager::{LogManager, LogManagerConfig};
    use crate::protocol::test_support::build_batch;
    use crate::replica::error::ReplicaError;
    use crate::replica::partition::PartitionState;
    use crate::types::TopicPartition;

    fn partition(dir: &std::path::Path, local: i32, leader: i32, config: LogConfig) -> Partition {
        let cfg = LogManagerConfig {
            dirs: vec![dir.to_path_buf()],
            clean_dirs: Vec::new(),
            log: config,
            recovery_threads_per_dir: 1,
        };
        let m = LogManager::startup(&cfg, LogDirFailureChannel::new(), Faults::default(), 0);
        let tp = TopicPartition {
            topic: "t".into(),
            partition: 0,
        };
        let log = m.get_or_create_log(&tp, 0).expect("log");
        let state = PartitionState {
            controller_epoch: 1,
            leader: BrokerId(leader),
            leader_epoch: 0,
            isr: vec![BrokerId(1), BrokerId(2)],
            partition_epoch: 0,
            replicas: vec![BrokerId(1), BrokerId(2)],
            adding: Vec::new(),
            removing: Vec::new(),
        };
        let p = Partition::new(tp, uuid::Uuid::nil(), BrokerId(local), state.clone(), log, 0);
        p.apply(state, 1, 0).expect("apply");
        p
    }

    fn record() -> Vec<u8> {
        build_batch(0, -1, &[(Some(&b"k"[..]), Some(&b"v"[..]))], 1)
    }

    /// A leader with five records, all replicated (HW 5).
    fn leader_with_five(dir: &std::path::Path, config: LogConfig) -> Partition {
        let p = partition(dir, 1, 1, config);
        for _ in 0..5 {
            p.append_as_leader(&record(), -1, 1, 0).expect("append");
        }
        p.read_for_follower(BrokerId(2), 5, 0, 1 << 20, 1, 0, true)
            .expect("follower fetch");
        assert_eq!(p.high_watermark(), 5);
        p
    }

    #[test]
    fn the_leader_moves_its_log_start_and_waits_for_the_followers_report() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = leader_with_five(dir.path(), LogConfig::default());
        let alive = |_| true;
        let d = p.delete_records_on_leader(3, &alive).expect("delete");
        assert_eq!(d.requested_offset, 3);
        assert_eq!(d.low_watermark, -1, "the follower has not reported a log start yet");
        p.update_follower_log_start(BrokerId(2), 0);
        assert_eq!(p.low_watermark_if_leader(&alive).ok(), Some(0));
        let seen = p.subscribe_log_starts();
        p.update_follower_log_start(BrokerId(2), 3);
        assert!(seen.has_changed().unwrap_or(false), "a higher report wakes the waiters");
        assert_eq!(p.low_watermark_if_leader(&alive).ok(), Some(3));
        assert_eq!(p.low_watermark_if_leader(&|_| false).ok(), Some(3));
        // Below the new start is out of range for consumers; earliest is the new start.
        assert_eq!(p.read(2, 1 << 20).err(), Some(ReplicaError::OffsetOutOfRange));
        let earliest = p.offset_for_timestamp(-2, false).expect("earliest").map(|f| f.offset);
        assert_eq!(earliest, Some(3));
        // -1 is the HW; past the HW is refused and nothing moves.
        let err = p.delete_records_on_leader(6, &alive).expect_err("past the HW");
        assert_eq!(err.error_code(), ec::OFFSET_OUT_OF_RANGE);
        let d = p.delete_records_on_leader(-1, &alive).expect("to the HW");
        assert_eq!((d.requested_offset, d.low_watermark), (5, 3));
        // An older request does not move the start back.
        let d = p.delete_records_on_leader(1, &alive).expect("below the start");
        assert_eq!(d.requested_offset, 1);
        assert_eq!(lock(&p.log()).log_start_offset(), 5);
    }

    #[test]
    fn compacted_only_topics_and_followers_refuse_delete_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let compacted = LogConfig {
            compact: true,
            delete: false,
            ..LogConfig::default()
        };
        let p = leader_with_five(dir.path(), compacted);
        let err = p.delete_records_on_leader(2, &|_| true).expect_err("compacted");
        assert_eq!(err.error_code(), ec::POLICY_VIOLATION);
        let dir = tempfile::tempdir().expect("tempdir");
        let f = partition(dir.path(), 1, 2, LogConfig::default());
        let err = f.delete_records_on_leader(0, &|_| true).expect_err("follower");
        assert_eq!(err.error_code(), ec::NOT_LEADER_OR_FOLLOWER);
        assert!(f.low_watermark_if_leader(&|_| true).is_err());
    }

    #[test]
    fn a_follower_takes_the_leaders_log_start_up_to_its_own_high_watermark() {
        let dir = tempfile::tempdir().expect("tempdir");
        let leader = leader_with_five(dir.path(), LogConfig::default());
        let read = leader
            .read_for_follower(BrokerId(2), 0, -1, 1 << 20, 1, 0, true)
            .expect("read")
            .0;
        let dir = tempfile::tempdir().expect("tempdir");
        let f = partition(dir.path(), 2, 1, LogConfig::default());
        f.append_as_follower(0, 0, &read.records, 4, 0).expect("append");
        assert_eq!(f.high_watermark(), 4);
        assert!(matches!(
            f.follow_leader_log_start(1, 3),
            Err(FollowerError::NotFollowing)
        ));
        assert!(f.follow_leader_log_start(0, 5).expect("follow"), "moved up to its HW");
        assert_eq!(lock(&f.log()).log_start_offset(), 4);
        assert!(!f.follow_leader_log_start(0, 2).expect("follow"), "never backwards");
        assert_eq!(lock(&f.log()).log_start_offset(), 4);
    }

    #[test]
    fn minus_one_means_the_high_watermark_and_nothing_past_it_is_deletable() {
        assert_eq!(delete_offset(-1, 40).ok(), Some(40));
        assert_eq!(delete_offset(0, 40).ok(), Some(0));
        assert_eq!(delete_offset(40, 40).ok(), Some(40));
        for bad in [41, -2, i64::MIN] {
            let err = delete_offset(bad, 40).expect_err("out of range");
            assert_eq!(err.error_code(), ec::OFFSET_OUT_OF_RANGE, "{bad}");
        }
    }

    #[test]
    fn the_low_watermark_is_the_lowest_log_start_of_the_live_replicas() {
        let followers = [(BrokerId(2), 30), (BrokerId(3), 10)];
        assert_eq!(low_watermark(50, followers, |_| true), 10);
        assert_eq!(low_watermark(50, followers, |id| id != BrokerId(3)), 30);
        assert_eq!(low_watermark(50, followers, |_| false), 50);
        // A live follower that has not reported its log start holds the request.
        assert_eq!(low_watermark(50, [(BrokerId(2), -1)], |_| true), -1);
    }
}
