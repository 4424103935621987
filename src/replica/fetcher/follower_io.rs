//! The follower's disk work, which the fetcher task hands to the I/O thread of each
//! partition's log dir ([`crate::replica::io`]) instead of doing it on an async worker: reading
//! where each partition's next fetch starts, and applying a fetch response (appends keeping the
//! leader's offsets and epochs, truncations to a diverging epoch, the leader's log start,
//! resets after OFFSET_OUT_OF_RANGE). Each of these takes the partition's lock and its log's,
//! which a write stuck in a slow disk holds; on the dir's thread waiting for them holds up only
//! that dir. A whole response's work on one dir is one operation, which ends with the fetch
//! positions of the task's partitions there, ready for the next request.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use crate::clock::now_ms;
use crate::replica::partition::{FollowerError, Partition};
use crate::types::TopicPartition;

/// Where one partition's fetch starts.
#[derive(Debug, Clone)]
pub(super) struct Position {
    pub tp: TopicPartition,
    pub partition: Arc<Partition>,
    /// The leader epoch the partition was added to the fetcher with.
    pub leader_epoch: i32,
    pub leo: i64,
    pub last_epoch: i32,
    pub log_start: i64,
}

/// A partition the task fetches, to take the position of.
#[derive(Debug, Clone)]
pub(super) struct Wanted {
    pub tp: TopicPartition,
    pub partition: Arc<Partition>,
    pub leader_epoch: i32,
}

impl Wanted {
    /// On the dir's I/O thread: the partition's LEO, latest epoch and log start.
    fn position(self) -> Position {
        let (leo, last_epoch, log_start) = self.partition.fetch_position();
        Position {
            tp: self.tp,
            partition: self.partition,
            leader_epoch: self.leader_epoch,
            leo,
            last_epoch,
            log_start,
        }
    }
}

/// What the leader answered for one partition, to apply.
#[derive(Debug)]
pub(super) struct Fetched {
    pub tp: TopicPartition,
    pub partition: Arc<Partition>,
    pub leader_epoch: i32,
    /// The LEO the fetch was sent from (the append must continue it).
    pub fetch_offset: i64,
    pub action: Action,
    pub leader_high_watermark: i64,
    /// -1 when the leader did not say.
    pub leader_log_start: i64,
}

#[derive(Debug)]
pub(super) enum Action {
    /// Whole batches to append (possibly none: only the HW and log start move).
    Append(Bytes),
    /// The leader's `DivergingEpoch` (epoch, end offset): truncate.
    Truncate((i32, i64)),
}

/// How applying one partition's answer ended.
#[derive(Debug)]
pub(super) struct Applied {
    pub tp: TopicPartition,
    /// The LEO afterwards.
    pub result: Result<i64, FollowerError>,
    pub leader_high_watermark: i64,
}

/// The work of one fetch round on one log dir: answers to apply, then positions to take.
#[derive(Debug, Default)]
pub(super) struct DirWork {
    pub fetched: Vec<Fetched>,
    pub wanted: Vec<Wanted>,
}

impl DirWork {
    /// On the dir's I/O thread: applies every answer in order, then takes the positions (after
    /// the appends, so they are where the next fetch starts).
    pub fn run(self) -> (Vec<Applied>, Vec<Position>) {
        let now = now_ms();
        let applied = self.fetched.into_iter().map(|f| f.apply(now)).collect();
        let positions = self.wanted.into_iter().map(Wanted::position).collect();
        (applied, positions)
    }
}

impl Fetched {
    fn apply(self, now_ms: i64) -> Applied {
        let p = &self.partition;
        let result = match &self.action {
            Action::Truncate(diverging) => p.truncate_on_divergence(self.leader_epoch, *diverging).map(|_| ()),
            Action::Append(records) => p
                .append_as_follower(
                    self.leader_epoch,
                    self.fetch_offset,
                    records,
                    self.leader_high_watermark,
                    now_ms,
                )
                .map(|_| ()),
        }
        // Kafka's fetcher: the leader's log start (DeleteRecords, retention) becomes ours.
        .and_then(|()| {
            if self.leader_log_start >= 0 {
                p.follow_leader_log_start(self.leader_epoch, self.leader_log_start)?;
            }
            Ok(())
        })
        .map(|()| p.log_end_offset());
        Applied {
            tp: self.tp,
            result,
            leader_high_watermark: self.leader_high_watermark,
        }
    }
}

/// Groups work by the log dir of its partition (each group is one operation on that dir's
/// thread).
pub(super) fn by_dir<T>(items: impl IntoIterator<Item = T>, dir: impl Fn(&T) -> PathBuf) -> BTreeMap<PathBuf, Vec<T>> {
    let mut groups: BTreeMap<PathBuf, Vec<T>> = BTreeMap::new();
    for item in items {
        groups.entry(dir(&item)).or_default().push(item);
    }
    groups
}

/// On the dir's I/O thread: takes each partition's position.
pub(super) fn positions(wanted: Vec<Wanted>) -> Vec<Position> {
    wanted.into_iter().map(Wanted::position).collect()
}
