//! One partition as this broker hosts it: the controller's state for it (leader, epoch, ISR,
//! replicas), its log, and — as leader — the high watermark, what each follower has fetched,
//! and the ISR change in flight. The rules themselves are pure functions in [`super::isr`]; this
//! type keeps the state consistent under one lock. As follower it appends what the fetcher
//! brings, truncates where the leader's epochs diverge, and takes the leader's HW capped at its
//! own LEO.
//!
//! Lock order (Kafka's: `leaderIsrUpdateLock`, then the log's lock; the whole rule is in
//! [`crate::log::lock_order`]): a method here takes this partition's state lock first and may
//! then lock its log; nothing ever takes a partition's lock while holding a log lock, so code
//! holding a log lock must not call any method here (not even [`Partition::high_watermark`]).
//! While holding the state lock this type calls nothing but its log, the pure rules of
//! [`super::isr`], and tracing: ISR changes are returned as proposals for the caller to submit.
//! Reads (consumer and follower fetches, ListOffsets by timestamp) take what they need under
//! the state lock (leadership, HW, the log handle), release it, and read under the log's lock
//! only, so a slow `pread` never holds the state lock. Appends hold it through the write, as
//! Kafka holds `leaderIsrUpdateLock` (read side) through `appendAsLeader`: a leadership change
//! must not slip in between the leader check and the write.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bytes::Bytes;

pub mod delete_records;

use super::error::ReplicaError;
use super::isr::{self, FollowerState};
use super::purgatory::ProduceStatus;
use crate::log::lock_order::assert_no_log_lock;
use crate::log::log::{LogAppendInfo, LogError};
use crate::log::log_manager::{lock, SharedLog};
use crate::log::timestamp_search::TimestampAndOffset;
use crate::types::{BrokerId, TopicPartition};

/// What the controller decided for a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub controller_epoch: i32,
    pub leader: BrokerId,
    pub leader_epoch: i32,
    pub isr: Vec<BrokerId>,
    /// zkVersion of the state znode.
    pub partition_epoch: i32,
    pub replicas: Vec<BrokerId>,
    /// While the partition is reassigned: the replicas being added and removed (KIP-455).
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

/// The result of a read.
#[derive(Debug, Clone)]
pub struct ReadResult {
    pub records: Bytes,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// For a follower whose last fetched epoch is not the leader's: the leader's (epoch, end
    /// offset) to truncate against (Fetch v12+ `DivergingEpoch`). No records then.
    pub diverging_epoch: Option<(i32, i64)>,
}

/// An ISR change the leader wants written to its state znode (conditional on `zk_version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrProposal {
    pub tp: TopicPartition,
    pub leader: BrokerId,
    pub leader_epoch: i32,
    pub controller_epoch: i32,
    pub zk_version: i32,
    pub isr: Vec<BrokerId>,
    /// Expansion (a follower joins) or shrink.
    pub expand: bool,
}

/// A state znode as read back after a failed conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredState {
    pub controller_epoch: i32,
    pub leader: BrokerId,
    pub leader_epoch: i32,
    pub isr: Vec<BrokerId>,
    pub zk_version: i32,
}

/// How writing an [`IsrProposal`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrWriteOutcome {
    Written {
        zk_version: i32,
    },
    /// The znode had another version; what it holds now (None: it is gone).
    Conflict(Option<StoredState>),
    /// ZooKeeper could not be reached; try again later.
    Failed,
}

#[derive(Debug)]
struct Inner {
    state: PartitionState,
    log: SharedLog,
    high_watermark: i64,
    /// Followers' progress from their fetches (leader only).
    followers: HashMap<BrokerId, FollowerState>,
    /// The LEO when this broker became leader in the current epoch.
    leader_epoch_start_offset: i64,
    /// The ISR change being written, if any (one at a time, as Kafka).
    pending_isr: Option<IsrProposal>,
    /// The leader epoch this broker became leader in, kept while it stays leader through later
    /// epochs (a controller's ISR change bumps the epoch too); -1 when not leader.
    leader_since_epoch: i32,
}

impl Inner {
    /// The ISR the HW is computed over: committed plus a follower being added (KIP-497).
    fn maximal_isr(&self) -> Vec<BrokerId> {
        match &self.pending_isr {
            Some(p) if p.expand => p.isr.clone(),
            _ => self.state.isr.clone(),
        }
    }
}

/// A hosted partition.
#[derive(Debug)]
pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    local: BrokerId,
    /// The log dir the partition's log lives in (whose I/O thread does its disk work).
    log_dir: PathBuf,
    inner: Mutex<Inner>,
    /// Bumped when a follower reports a higher log start (see `delete_records`).
    log_starts_seen: tokio::sync::watch::Sender<u64>,
}

impl Partition {
    /// A partition with `state` not yet applied; `high_watermark` from the checkpoint.
    pub fn new(
        tp: TopicPartition,
        topic_id: uuid::Uuid,
        local: BrokerId,
        state: PartitionState,
        log: SharedLog,
        high_watermark: i64,
    ) -> Self {
        let (leo, log_dir) = {
            let l = lock(&log);
            (l.log_end_offset(), l.root().to_path_buf())
        };
        Partition {
            tp,
            topic_id,
            local,
            log_dir,
            inner: Mutex::new(Inner {
                state,
                log,
                high_watermark: high_watermark.clamp(0, leo),
                followers: HashMap::new(),
                leader_epoch_start_offset: 0,
                pending_isr: None,
                leader_since_epoch: -1,
            }),
            log_starts_seen: tokio::sync::watch::channel(0).0,
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        assert_no_log_lock("a partition's lock");
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn state(&self) -> PartitionState {
        self.inner().state.clone()
    }

    pub fn is_leader(&self) -> bool {
        self.inner().state.leader == self.local
    }

    /// Whether `replica` is being added by a reassignment (Kafka's `isAddingReplica`): what
    /// the ReassignmentBytesIn/Out meters count.
    pub fn is_adding_replica(&self, replica: BrokerId) -> bool {
        self.inner().state.adding.contains(&replica)
    }

    pub fn leader_epoch(&self) -> i32 {
        self.inner().state.leader_epoch
    }

    pub fn high_watermark(&self) -> i64 {
        self.inner().high_watermark
    }

    /// The epoch this broker's current, uninterrupted leadership began in (-1: not leader).
    /// What the group coordinator keys its loaded state by: a new leadership reloads, an epoch
    /// bump under the same leader does not.
    pub fn leader_since_epoch(&self) -> i32 {
        self.inner().leader_since_epoch
    }

    /// The log dir this partition's log lives in.
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    pub fn log(&self) -> SharedLog {
        self.inner().log.clone()
    }

    pub fn log_end_offset(&self) -> i64 {
        lock(&self.inner().log).log_end_offset()
    }

    /// Applies a new controller decision. As leader: records the new epoch at the LEO in the
    /// epoch cache at once (Kafka's makeLeader) and starts tracking followers afresh, ISR
    /// members counting as caught up now.
    pub fn apply(&self, state: PartitionState, min_isr: i32, now_ms: i64) -> Result<(), LogError> {
        let mut inner = self.inner();
        self.apply_locked(&mut inner, state, min_isr, now_ms)
    }

    /// Applies what `next` makes of the current state, deciding and applying under one lock so
    /// that nothing (a LeaderAndIsr) is applied in between and then overwritten; `Ok(None)`
    /// when `next` declines.
    pub fn apply_with(
        &self,
        next: impl FnOnce(&PartitionState) -> Option<PartitionState>,
        min_isr: i32,
        now_ms: i64,
    ) -> Result<Option<PartitionState>, LogError> {
        let mut inner = self.inner();
        let Some(state) = next(&inner.state) else {
            return Ok(None);
        };
        self.apply_locked(&mut inner, state.clone(), min_isr, now_ms)?;
        Ok(Some(state))
    }

    fn apply_locked(
        &self,
        inner: &mut Inner,
        state: PartitionState,
        min_isr: i32,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let becomes_leader = state.leader == self.local;
        inner.leader_since_epoch = match (becomes_leader, inner.leader_since_epoch) {
            (false, _) => -1,
            (true, since) if since >= 0 => since,
            (true, _) => state.leader_epoch,
        };
        inner.state = state;
        inner.followers.clear();
        inner.pending_isr = None;
        if becomes_leader {
            let mut log = lock(&inner.log);
            let leo = log.log_end_offset();
            log.assign_leader_epoch(inner.state.leader_epoch, leo)?;
            drop(log);
            inner.leader_epoch_start_offset = leo;
            let followers = inner
                .state
                .replicas
                .iter()
                .filter(|r| **r != self.local)
                .map(|r| (*r, FollowerState::new(inner.state.isr.contains(r), now_ms)))
                .collect();
            inner.followers = followers;
            maybe_increment_hw(inner, self.local, min_isr);
        }
        Ok(())
    }

    /// Appends a producer's batches as leader; returns what was appended and in which leader
    /// epoch. With acks=-1, refuses before writing when the
    /// ISR is below `min.insync.replicas` (NOT_ENOUGH_REPLICAS).
    pub fn append_as_leader(
        &self,
        records: &[u8],
        acks: i16,
        min_isr: i32,
        now_ms: i64,
    ) -> Result<(LogAppendInfo, i32), ReplicaError> {
        let mut inner = self.inner();
        if inner.state.leader != self.local {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        if acks == -1 && inner.state.isr.len() < effective_min_isr(&inner.state, min_isr) {
            return Err(ReplicaError::NotEnoughReplicas);
        }
        let epoch = inner.state.leader_epoch;
        let info = lock(&inner.log).append_as_leader(records, epoch, now_ms)?;
        maybe_increment_hw(&mut inner, self.local, min_isr);
        Ok((info, epoch))
    }

    /// Whether an acks=-1 produce up to `required_offset` (exclusive) is done: `Some(outcome)`
    /// when finished, `None` while it must keep waiting.
    pub fn check_produce_completion(
        &self,
        required_offset: i64,
        leader_epoch: i32,
        min_isr: i32,
    ) -> Option<Result<(), ReplicaError>> {
        let inner = self.inner();
        // Leadership lost (even if regained later): the records may have been truncated away.
        if inner.state.leader != self.local || inner.state.leader_epoch != leader_epoch {
            return Some(Err(ReplicaError::NotLeaderOrFollower));
        }
        if inner.high_watermark >= required_offset {
            return Some(Ok(()));
        }
        if inner.state.isr.len() < effective_min_isr(&inner.state, min_isr) {
            return Some(Err(ReplicaError::NotEnoughReplicasAfterAppend));
        }
        None
    }

    /// What a parked acks=all produce checks, read under the state lock at once (no log access).
    pub fn produce_status(&self, min_isr: i32) -> ProduceStatus {
        let inner = self.inner();
        ProduceStatus {
            leader_epoch: (inner.state.leader == self.local).then_some(inner.state.leader_epoch),
            high_watermark: inner.high_watermark,
            isr_below_min: inner.state.isr.len() < effective_min_isr(&inner.state, min_isr),
        }
    }

    /// (high watermark, log end offset), taken together: where the purgatory's byte positions
    /// for this partition start.
    pub fn offsets(&self) -> (i64, i64) {
        let inner = self.inner();
        let leo = lock(&inner.log).log_end_offset();
        (inner.high_watermark, leo)
    }

    /// Checks KIP-320's current leader epoch from a client or follower.
    pub fn check_leader_epoch(&self, current_leader_epoch: i32) -> Result<(), ReplicaError> {
        leader_epoch_check(self.inner().state.leader_epoch, current_leader_epoch)
    }

    /// Reads as leader for a consumer: whole batches below the HW. The state lock is held only
    /// to check leadership and take the HW and the log; the read itself (a `pread`) holds only
    /// the log's lock, so a slow disk does not hold up everything else that asks this partition.
    pub fn read(&self, fetch_offset: i64, max_bytes: usize) -> Result<ReadResult, ReplicaError> {
        let (high_watermark, log) = {
            let inner = self.inner();
            if inner.state.leader != self.local {
                return Err(ReplicaError::NotLeaderOrFollower);
            }
            (inner.high_watermark, inner.log.clone())
        };
        let log = lock(&log);
        let records = log.read(fetch_offset, max_bytes, high_watermark, true)?;
        Ok(ReadResult {
            records,
            high_watermark,
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.log_end_offset(),
            diverging_epoch: None,
        })
    }

    /// A consumer read that cannot touch the disk, answered without waiting for any lock: when
    /// `fetch_offset` is the HW and the log end (a caught-up consumer: nothing to read), the
    /// empty answer comes from memory. `None` when a lock is busy or there may be records to
    /// read: then [`Self::read`] on the I/O executor answers. What an async worker may call.
    pub fn try_read_caught_up(
        &self,
        fetch_offset: i64,
        current_leader_epoch: i32,
    ) -> Option<Result<ReadResult, ReplicaError>> {
        assert_no_log_lock("a partition's lock");
        let inner = match self.inner.try_lock() {
            Ok(inner) => inner,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if inner.state.leader != self.local {
            return Some(Err(ReplicaError::NotLeaderOrFollower));
        }
        if let Err(code) = leader_epoch_check(inner.state.leader_epoch, current_leader_epoch) {
            return Some(Err(code));
        }
        if fetch_offset != inner.high_watermark {
            return None;
        }
        let log = crate::log::lock_order::try_lock(&inner.log)?;
        if log.log_end_offset() != fetch_offset {
            return None;
        }
        // At the log end the read finds no segment to open: checks only (online, range).
        let records = match log.read(fetch_offset, 0, inner.high_watermark, true) {
            Ok(records) => records,
            Err(e) => return Some(Err(e.into())),
        };
        Some(Ok(ReadResult {
            records,
            high_watermark: inner.high_watermark,
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.log_end_offset(),
            diverging_epoch: None,
        }))
    }

    /// Reads as leader for follower `replica` (up to the LEO). Its fetch offset is its LEO: it
    /// may move the HW and, once caught up, bring it back into the ISR (returned as a proposal
    /// to write) if `isr_eligible`: Kafka's ZK-mode `isReplicaIsrEligible` (the broker is alive
    /// in the metadata cache), so a broker that already left is not taken back by its last
    /// fetch. A `last_fetched_epoch` the leader does not end where the follower is gets the
    /// diverging epoch instead of records.
    #[allow(clippy::too_many_arguments)]
    pub fn read_for_follower(
        &self,
        replica: BrokerId,
        fetch_offset: i64,
        last_fetched_epoch: i32,
        max_bytes: usize,
        min_isr: i32,
        now_ms: i64,
        isr_eligible: bool,
    ) -> Result<(ReadResult, Option<IsrProposal>), ReplicaError> {
        let read = (fetch_offset, last_fetched_epoch, max_bytes);
        self.read_for_follower_throttled(replica, read, min_isr, now_ms, isr_eligible, false)
    }

    /// [`Self::read_for_follower`] (`read`: fetch offset, last fetched epoch, max bytes) where
    /// `throttle` says the partition is throttled here and the leader quota is exceeded
    /// (KIP-73): a replica outside the ISR then gets no records (Kafka's
    /// `shouldLeaderThrottle`), its fetch still recording its progress.
    pub fn read_for_follower_throttled(
        &self,
        replica: BrokerId,
        (fetch_offset, last_fetched_epoch, max_bytes): (i64, i32, usize),
        min_isr: i32,
        now_ms: i64,
        isr_eligible: bool,
        throttle: bool,
    ) -> Result<(ReadResult, Option<IsrProposal>), ReplicaError> {
        let mut inner = self.inner();
        if inner.state.leader != self.local {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        if !inner.state.replicas.contains(&replica) {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        let (leo, log_start) = {
            let log = lock(&inner.log);
            (log.log_end_offset(), log.log_start_offset())
        };
        if last_fetched_epoch >= 0 {
            let (epoch, end) = lock(&inner.log).end_offset_for_epoch(last_fetched_epoch);
            // No epoch information here (UNDEFINED): serve by offset; out of range is handled
            // below, and the follower then truncates to our log end.
            if epoch >= 0 && (epoch < last_fetched_epoch || end < fetch_offset) {
                let read = ReadResult {
                    records: Bytes::new(),
                    high_watermark: inner.high_watermark,
                    log_start_offset: log_start,
                    log_end_offset: leo,
                    diverging_epoch: Some((epoch, end)),
                };
                return Ok((read, None));
            }
        }
        if fetch_offset < log_start || fetch_offset > leo {
            return Err(ReplicaError::OffsetOutOfRange);
        }
        inner
            .followers
            .entry(replica)
            .or_insert_with(|| FollowerState::new(false, 0))
            .on_fetch(fetch_offset, leo, now_ms);
        let proposal = if isr_eligible {
            maybe_expand_isr(&mut inner, self.local, replica, &self.tp)
        } else {
            None
        };
        maybe_increment_hw(&mut inner, self.local, min_isr);
        let throttled = throttle && !inner.state.isr.contains(&replica);
        let (high_watermark, log) = (inner.high_watermark, inner.log.clone());
        // The read (a `pread`) holds only the log's lock, as in `read`.
        drop(inner);
        let log = lock(&log);
        let records = if throttled {
            Bytes::new()
        } else {
            log.read(fetch_offset, max_bytes, leo, true)?
        };
        let read = ReadResult {
            records,
            high_watermark,
            log_start_offset: log.log_start_offset(),
            log_end_offset: leo,
            diverging_epoch: None,
        };
        Ok((read, proposal))
    }

    /// The periodic ISR check (every `replica.lag.time.max.ms / 2`): as leader, the ISR without
    /// the followers that have not caught up within `lag_max_ms`.
    pub fn maybe_shrink_isr(&self, now_ms: i64, lag_max_ms: i64) -> Option<IsrProposal> {
        let mut inner = self.inner();
        if inner.state.leader != self.local || inner.pending_isr.is_some() {
            return None;
        }
        let leo = lock(&inner.log).log_end_offset();
        let out = isr::out_of_sync(&inner.state.isr, self.local, &inner.followers, leo, now_ms, lag_max_ms);
        if out.is_empty() {
            return None;
        }
        let new_isr: Vec<BrokerId> = inner.state.isr.iter().copied().filter(|r| !out.contains(r)).collect();
        tracing::info!(
            partition = %self.tp,
            from = ?inner.state.isr,
            to = ?new_isr,
            out_of_sync = ?out,
            "shrinking ISR"
        );
        let proposal = proposal(&inner, self.local, &self.tp, new_isr, false);
        inner.pending_isr = Some(proposal.clone());
        Some(proposal)
    }

    /// Takes the outcome of writing `proposal`. Returns a newer state found in ZooKeeper (a
    /// different leader epoch) for the caller to apply; otherwise the ISR is committed, or
    /// reconciled with what the znode holds so the next check starts from the truth.
    pub fn complete_isr_update(
        &self,
        proposal: &IsrProposal,
        outcome: IsrWriteOutcome,
        min_isr: i32,
    ) -> Option<StoredState> {
        let mut inner = self.inner();
        if inner.pending_isr.as_ref() != Some(proposal) {
            return None; // superseded by a LeaderAndIsr meanwhile
        }
        inner.pending_isr = None;
        match outcome {
            IsrWriteOutcome::Written { zk_version } => {
                tracing::info!(partition = %self.tp, isr = ?proposal.isr, zk_version, "ISR updated");
                inner.state.isr = proposal.isr.clone();
                inner.state.partition_epoch = zk_version;
                maybe_increment_hw(&mut inner, self.local, min_isr);
                None
            }
            IsrWriteOutcome::Conflict(Some(stored)) => {
                if stored.leader == self.local && stored.leader_epoch == inner.state.leader_epoch {
                    tracing::info!(
                        partition = %self.tp,
                        cached = inner.state.partition_epoch,
                        stored = stored.zk_version,
                        isr = ?stored.isr,
                        "cached zkVersion differed from ZooKeeper's: took the stored ISR"
                    );
                    inner.state.isr = stored.isr;
                    inner.state.partition_epoch = stored.zk_version;
                    inner.state.controller_epoch = stored.controller_epoch;
                    maybe_increment_hw(&mut inner, self.local, min_isr);
                    None
                } else if stored.leader_epoch > inner.state.leader_epoch {
                    Some(stored)
                } else {
                    None
                }
            }
            IsrWriteOutcome::Conflict(None) | IsrWriteOutcome::Failed => None,
        }
    }

    /// Where the follower fetches from: (LEO, latest epoch in its cache or -1, log start).
    pub fn fetch_position(&self) -> (i64, i32, i64) {
        let inner = self.inner();
        let log = lock(&inner.log);
        let epoch = log.leader_epoch_cache().latest_epoch().unwrap_or(-1);
        (log.log_end_offset(), epoch, log.log_start_offset())
    }

    /// Follower: appends fetched batches (if still following in `leader_epoch`) and takes the
    /// leader's HW, capped at the new LEO.
    pub fn append_as_follower(
        &self,
        leader_epoch: i32,
        fetch_offset: i64,
        records: &[u8],
        leader_hw: i64,
        now_ms: i64,
    ) -> Result<Option<LogAppendInfo>, FollowerError> {
        let mut inner = self.inner();
        self.check_following(&inner, leader_epoch)?;
        let mut log = lock(&inner.log);
        if log.log_end_offset() != fetch_offset {
            return Err(FollowerError::Moved); // truncated or appended meanwhile: refetch
        }
        let info = if records.is_empty() {
            None
        } else {
            Some(log.append_as_follower(records, now_ms).map_err(FollowerError::Log)?)
        };
        let hw = leader_hw.min(log.log_end_offset());
        drop(log);
        if hw > inner.high_watermark {
            inner.high_watermark = hw;
        }
        Ok(info)
    }

    /// Follower: the leader's `DivergingEpoch` (epoch, end offset) answered our last fetched
    /// epoch. Truncates as Kafka's `getOffsetTruncationState`: to min(leader end, our end for that
    /// epoch) when we have that epoch; otherwise to our end of the largest epoch below it, and
    /// the next fetch asks again (KIP-279's multi-round). Returns the new LEO.
    pub fn truncate_on_divergence(&self, leader_epoch: i32, diverging: (i32, i64)) -> Result<i64, FollowerError> {
        let mut inner = self.inner();
        self.check_following(&inner, leader_epoch)?;
        let mut log = lock(&inner.log);
        let (epoch, end) = diverging;
        let leo = log.log_end_offset();
        let target = if end < 0 {
            // No epoch information at the leader: fall back to our HW.
            inner.high_watermark
        } else {
            let (ours, our_end) = log.end_offset_for_epoch(epoch);
            if ours < 0 || ours == epoch {
                end.min(if ours < 0 { leo } else { our_end })
            } else {
                our_end
            }
        }
        .min(leo);
        if target < leo {
            tracing::info!(partition = %self.tp, from = leo, to = target, leader_epoch_end = ?diverging, "truncating to the leader's epoch end");
        }
        log.truncate_to(target).map_err(FollowerError::Log)?;
        let new_leo = log.log_end_offset();
        drop(log);
        inner.high_watermark = inner.high_watermark.min(new_leo);
        Ok(new_leo)
    }

    /// Follower: the leader said our fetch offset is out of range. `leader_leo` below ours
    /// (an unclean election): truncate to it; `leader_start` above ours: start over there.
    pub fn reset_out_of_range(
        &self,
        leader_epoch: i32,
        leader_leo: i64,
        leader_start: i64,
        now_ms: i64,
    ) -> Result<(), FollowerError> {
        let mut inner = self.inner();
        self.check_following(&inner, leader_epoch)?;
        let mut log = lock(&inner.log);
        let leo = log.log_end_offset();
        if leader_leo < leo {
            tracing::warn!(partition = %self.tp, from = leo, to = leader_leo, "truncating to the leader's log end (out of range)");
            log.truncate_to(leader_leo).map_err(FollowerError::Log)?;
        } else if leader_start > leo {
            tracing::warn!(partition = %self.tp, leo, leader_start, "behind the leader's log start: starting over there");
            log.truncate_fully_and_start_at(leader_start, now_ms)
                .map_err(FollowerError::Log)?;
        }
        let new_leo = log.log_end_offset();
        drop(log);
        inner.high_watermark = inner.high_watermark.min(new_leo);
        Ok(())
    }

    fn check_following(&self, inner: &Inner, leader_epoch: i32) -> Result<(), FollowerError> {
        if inner.state.leader == self.local || inner.state.leader_epoch != leader_epoch {
            return Err(FollowerError::NotFollowing);
        }
        Ok(())
    }

    /// Leader-side health for metrics: (is leader, ISR size, replication factor, min ISR).
    /// (leads, ISR size, replication factor, effective min ISR, being reassigned). While
    /// reassigned, the replication factor is the target's (Kafka's
    /// `PartitionReplicaAssignment.replicationFactor`: replicas minus those being removed), so
    /// a move does not count as under-replicated once the targets are in sync.
    pub fn replication_status(&self, min_isr: i32) -> (bool, usize, usize, usize, bool) {
        let inner = self.inner();
        let s = &inner.state;
        let rf = s.replicas.iter().filter(|b| !s.removing.contains(b)).count();
        (
            s.leader == self.local,
            s.isr.len(),
            rf,
            effective_min_isr(s, min_isr),
            !s.adding.is_empty() || !s.removing.is_empty(),
        )
    }

    /// ListOffsets for a timestamp or -1 latest / -2 earliest / -3 max / -4 earliest local /
    /// -5 latest tiered (Kafka's `Partition.fetchOffsetForTimestamp`). Consumers' "latest" is
    /// the HW and they see nothing at or past it; a replica's is the LEO. "Latest" carries the
    /// current leader epoch; the rest carry the epoch of what they found.
    /// The search (index and log reads) holds only the log's lock, as in `read`.
    pub fn offset_for_timestamp(
        &self,
        timestamp: i64,
        replica: bool,
    ) -> Result<Option<TimestampAndOffset>, ReplicaError> {
        let (high_watermark, leader_epoch, log) = {
            let inner = self.inner();
            if inner.state.leader != self.local {
                return Err(ReplicaError::NotLeaderOrFollower);
            }
            (inner.high_watermark, inner.state.leader_epoch, inner.log.clone())
        };
        if timestamp == -1 {
            let offset = if replica {
                lock(&log).log_end_offset()
            } else {
                high_watermark
            };
            return Ok(Some(TimestampAndOffset {
                timestamp: -1,
                offset,
                leader_epoch: Some(leader_epoch),
            }));
        }
        let found = lock(&log).fetch_offset_by_timestamp(timestamp)?;
        let earliest = matches!(timestamp, -2 | -4);
        Ok(found.filter(|f| replica || earliest || f.offset < high_watermark))
    }

    /// OffsetForLeaderEpoch as leader: the largest epoch ≤ `epoch` and its end offset.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Result<(i32, i64), ReplicaError> {
        let inner = self.inner();
        if inner.state.leader != self.local {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        let log = lock(&inner.log);
        Ok(log.end_offset_for_epoch(epoch))
    }
}

/// KIP-320: a request's current leader epoch against ours (negative: not given).
fn leader_epoch_check(ours: i32, current_leader_epoch: i32) -> Result<(), ReplicaError> {
    match current_leader_epoch {
        e if e < 0 || e == ours => Ok(()),
        e if e < ours => Err(ReplicaError::FencedLeaderEpoch),
        _ => Err(ReplicaError::UnknownLeaderEpoch),
    }
}

/// Why a follower operation did nothing.
#[derive(Debug)]
pub enum FollowerError {
    /// Leadership or epoch changed since the fetch was sent.
    NotFollowing,
    /// The log moved under the fetch (truncated or appended meanwhile).
    Moved,
    Log(LogError),
}

fn effective_min_isr(state: &PartitionState, min_isr: i32) -> usize {
    isr::effective_min_isr(min_isr, state.replicas.len())
}

fn proposal(inner: &Inner, local: BrokerId, tp: &TopicPartition, isr: Vec<BrokerId>, expand: bool) -> IsrProposal {
    IsrProposal {
        tp: tp.clone(),
        leader: local,
        leader_epoch: inner.state.leader_epoch,
        controller_epoch: inner.state.controller_epoch,
        zk_version: inner.state.partition_epoch,
        isr,
        expand,
    }
}

/// A follower outside the ISR that caught up joins it (one change in flight at a time).
fn maybe_expand_isr(inner: &mut Inner, local: BrokerId, replica: BrokerId, tp: &TopicPartition) -> Option<IsrProposal> {
    if inner.pending_isr.is_some() || inner.state.isr.contains(&replica) {
        return None;
    }
    let leo = inner.followers.get(&replica)?.leo;
    if !isr::may_join_isr(leo, inner.high_watermark, inner.leader_epoch_start_offset) {
        return None;
    }
    let mut new_isr = inner.state.isr.clone();
    new_isr.push(replica);
    tracing::info!(partition = %tp, from = ?inner.state.isr, to = ?new_isr, "expanding ISR");
    let p = proposal(inner, local, tp, new_isr, true);
    inner.pending_isr = Some(p.clone());
    Some(p)
}

/// Moves the HW forward if the rules allow (see [`isr::next_high_watermark`]).
fn maybe_increment_hw(inner: &mut Inner, local: BrokerId, min_isr: i32) -> bool {
    let leo = lock(&inner.log).log_end_offset();
    let min = effective_min_isr(&inner.state, min_isr);
    let maximal = inner.maximal_isr();
    match isr::next_high_watermark(
        &maximal,
        inner.state.isr.len(),
        min,
        local,
        leo,
        &inner.followers,
        inner.high_watermark,
    ) {
        Some(hw) => {
            inner.high_watermark = hw;
            true
        }
        None => false,
    }
}
