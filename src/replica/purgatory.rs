//! The delayed-operation purgatory (Kafka's `DelayedOperationPurgatory` with `DelayedFetch` and
//! `DelayedProduce`), keyed by partition. A parked fetch watches the partitions it reads; a
//! parked acks=all produce watches the partitions it appended to. An event on partition P (an
//! append, a high-watermark move, a leadership change) checks only the operations watching P.
//!
//! Whether a fetch can now be answered is decided from byte positions alone, never by reading
//! data: per partition the purgatory keeps how many bytes were appended through the
//! ReplicaManager ([`PartitionPositions::end_bytes`], what follower fetches read up to) and how
//! many of them lie below the high watermark ([`PartitionPositions::hw_bytes`], what consumers
//! read up to). A fetch parks with the position its read started from and the bytes it already
//! found; it completes once the bytes available since then reach `min_bytes` (each partition
//! counting at most its `partition_max_bytes`, as Kafka's `DelayedFetch.tryComplete`). When the
//! positions cannot account for a change (leadership moved, the log was truncated, bytes below
//! the HW predate tracking) the partition's `generation` is bumped and its fetches complete,
//! reading again. A produce partition is done once the HW reaches its last offset + 1, or with
//! NOT_LEADER_OR_FOLLOWER / NOT_ENOUGH_REPLICAS_AFTER_APPEND ([`produce_outcome`]).
//!
//! The decisions are pure functions of positions and statuses; this type only keeps the
//! watcher lists and signals the waiting tasks (oneshot channels). Expiry is the waiter's
//! deadline: it takes its operation back out ([`Purgatory::take_produce`], the [`Parked`] guard).
//! The lock here is taken after any partition lock is released, never the other way round.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::error::ReplicaError;
use crate::types::{FastMap, FastSet, TopicPartition};

/// What a fetch reads up to: consumers the high watermark, follower replicas the log end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchBound {
    HighWatermark,
    LogEnd,
}

/// Byte positions of one partition, as the ReplicaManager reports its appends and HW moves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionPositions {
    /// Bumped when the positions cannot account for a change: fetches parked on an older one
    /// complete (and read again).
    pub generation: u64,
    /// Bytes appended since tracking (re)started.
    pub end_bytes: u64,
    /// Of those, the bytes below the high watermark.
    pub hw_bytes: u64,
    high_watermark: i64,
    /// The log end when tracking (re)started: bytes between the HW then and this are unknown.
    untracked_below: i64,
    /// Appends above the HW, sorted by end offset: (end offset, bytes).
    above_hw: Vec<(i64, u64)>,
}

impl PartitionPositions {
    /// Tracking starts (again) at this high watermark and log end.
    pub fn starting_at(high_watermark: i64, log_end_offset: i64, generation: u64) -> Self {
        PartitionPositions {
            generation,
            high_watermark,
            untracked_below: log_end_offset,
            ..Default::default()
        }
    }

    /// Where a fetch with this bound stands now.
    pub fn position(&self, bound: FetchBound) -> u64 {
        match bound {
            FetchBound::HighWatermark => self.hw_bytes,
            FetchBound::LogEnd => self.end_bytes,
        }
    }

    /// An append of `bytes` ending at `end_offset` (exclusive); `high_watermark` after it.
    /// Reports of concurrent appends may arrive out of order: each lands at its offset.
    pub fn on_append(&mut self, end_offset: i64, bytes: u64, high_watermark: i64) {
        self.end_bytes += bytes;
        if end_offset <= self.high_watermark {
            self.hw_bytes += bytes;
        } else {
            let at = self.above_hw.partition_point(|(end, _)| *end < end_offset);
            self.above_hw.insert(at, (end_offset, bytes));
        }
        self.on_high_watermark(high_watermark);
    }

    /// The HW is now `high_watermark`; true if it moved forward.
    pub fn on_high_watermark(&mut self, high_watermark: i64) -> bool {
        if high_watermark <= self.high_watermark {
            return false;
        }
        if self.high_watermark < self.untracked_below {
            // Bytes we never saw appended are now visible to consumers.
            self.generation += 1;
        }
        let passed = self.above_hw.partition_point(|(end, _)| *end <= high_watermark);
        self.hw_bytes += self.above_hw.drain(..passed).map(|(_, b)| b).sum::<u64>();
        self.high_watermark = high_watermark;
        true
    }
}

/// One partition of a parked fetch: where its read started and what it found then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchWatch {
    pub tp: TopicPartition,
    pub bound: FetchBound,
    /// The partition's generation and position taken before the read.
    pub generation: u64,
    pub start_position: u64,
    /// Bytes the read returned.
    pub already: u64,
    pub max_bytes: u64,
}

/// Kafka's `DelayedFetch.tryComplete`: the bytes available to the fetch reach `min_bytes`, or
/// some partition changed in a way the positions cannot account for (or is gone).
pub fn fetch_satisfied<'a>(
    min_bytes: u64,
    parts: impl IntoIterator<Item = (&'a FetchWatch, Option<&'a PartitionPositions>)>,
) -> bool {
    let mut accumulated = 0u64;
    for (watch, positions) in parts {
        let Some(positions) = positions else {
            return true;
        };
        if positions.generation != watch.generation {
            return true;
        }
        let grown = positions.position(watch.bound).saturating_sub(watch.start_position);
        accumulated += (watch.already + grown).min(watch.max_bytes);
    }
    accumulated >= min_bytes.max(1)
}

/// What an acks=all produce needs to know about a partition (taken under its lock at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceStatus {
    /// This broker's leader epoch for the partition, None when it does not lead it (or no
    /// longer hosts it).
    pub leader_epoch: Option<i32>,
    pub high_watermark: i64,
    /// The ISR is below the effective min.insync.replicas.
    pub isr_below_min: bool,
}

/// Kafka's `checkEnoughReplicasReachOffset`: `Some(outcome)` once the partition's part of an
/// acks=all produce is decided (`Ok`: replicated), `None` while it must wait.
pub fn produce_outcome(
    status: &ProduceStatus,
    required_offset: i64,
    leader_epoch: i32,
) -> Option<Result<(), ReplicaError>> {
    // Leadership lost (even if regained later): the records may have been truncated away.
    if status.leader_epoch != Some(leader_epoch) {
        return Some(Err(ReplicaError::NotLeaderOrFollower));
    }
    if status.high_watermark >= required_offset {
        return Some(Ok(()));
    }
    if status.isr_below_min {
        return Some(Err(ReplicaError::NotEnoughReplicasAfterAppend));
    }
    None
}

/// One partition of a parked produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceWatch {
    pub tp: TopicPartition,
    /// Last appended offset + 1.
    pub required_offset: i64,
    pub leader_epoch: i32,
    /// Decided outcome (`Ok`: replicated); None while pending.
    pub outcome: Option<Result<(), ReplicaError>>,
}

/// How often operations parked on a partition were checked and completed by events on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WakeCounts {
    pub checked: u64,
    pub completed: u64,
}

#[derive(Debug)]
struct ParkedFetch {
    min_bytes: u64,
    parts: Vec<FetchWatch>,
    done: oneshot::Sender<()>,
}

#[derive(Debug)]
struct ParkedProduce {
    parts: Vec<ProduceWatch>,
    done: oneshot::Sender<Vec<ProduceWatch>>,
}

#[derive(Debug, Default)]
struct Watched {
    positions: Option<PartitionPositions>,
    fetches: FastSet<u64>,
    produces: FastSet<u64>,
    wakeups: WakeCounts,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    partitions: FastMap<TopicPartition, Watched>,
    fetches: FastMap<u64, ParkedFetch>,
    produces: FastMap<u64, ParkedProduce>,
}

impl State {
    fn watched(&mut self, tp: &TopicPartition) -> &mut Watched {
        if !self.partitions.contains_key(tp) {
            self.partitions.insert(tp.clone(), Watched::default());
        }
        self.partitions.get_mut(tp).expect("inserted above")
    }

    /// Checks the fetches watching `tp`, completing the satisfied ones.
    fn check_fetches(&mut self, tp: &TopicPartition) {
        let Some(watched) = self.partitions.get(tp) else {
            return;
        };
        let ids: Vec<u64> = watched.fetches.iter().copied().collect();
        let mut completed = 0;
        for id in &ids {
            if self.fetch_ready(*id) {
                self.complete_fetch(*id);
                completed += 1;
            }
        }
        let w = self.watched(tp);
        w.wakeups.checked += ids.len() as u64;
        w.wakeups.completed += completed;
    }

    fn fetch_ready(&self, id: u64) -> bool {
        let Some(f) = self.fetches.get(&id) else {
            return false;
        };
        let parts = f.parts.iter().map(|w| {
            let positions = self.partitions.get(&w.tp).and_then(|p| p.positions.as_ref());
            (w, positions)
        });
        fetch_satisfied(f.min_bytes, parts)
    }

    fn remove_fetch(&mut self, id: u64) -> Option<ParkedFetch> {
        let f = self.fetches.remove(&id)?;
        for w in &f.parts {
            if let Some(p) = self.partitions.get_mut(&w.tp) {
                p.fetches.remove(&id);
            }
        }
        Some(f)
    }

    fn complete_fetch(&mut self, id: u64) {
        if let Some(f) = self.remove_fetch(id) {
            let _ = f.done.send(());
        }
    }

    fn remove_produce(&mut self, id: u64) -> Option<ParkedProduce> {
        let p = self.produces.remove(&id)?;
        for w in &p.parts {
            if let Some(watched) = self.partitions.get_mut(&w.tp) {
                watched.produces.remove(&id);
            }
        }
        Some(p)
    }

    /// Checks the produces watching `tp` against its status, completing the decided ones.
    fn check_produces(&mut self, tp: &TopicPartition, status: &ProduceStatus) {
        let Some(watched) = self.partitions.get(tp) else {
            return;
        };
        let ids: Vec<u64> = watched.produces.iter().copied().collect();
        let mut completed = 0;
        for id in &ids {
            let Some(p) = self.produces.get_mut(id) else {
                continue;
            };
            for w in p.parts.iter_mut().filter(|w| &w.tp == tp && w.outcome.is_none()) {
                w.outcome = produce_outcome(status, w.required_offset, w.leader_epoch);
            }
            if p.parts.iter().all(|w| w.outcome.is_some()) {
                if let Some(p) = self.remove_produce(*id) {
                    let _ = p.done.send(p.parts);
                }
                completed += 1;
            }
        }
        let w = self.watched(tp);
        w.wakeups.checked += ids.len() as u64;
        w.wakeups.completed += completed;
    }
}

/// Which kind of operation a [`Parked`] guard holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fetch,
    Produce,
}

/// An operation parked in the purgatory; dropping it (completed, expired or abandoned with its
/// request) takes the operation out.
#[derive(Debug)]
pub struct Parked {
    purgatory: Arc<Purgatory>,
    id: u64,
    kind: Kind,
}

impl Parked {
    /// The purgatory it is parked in.
    pub fn purgatory(&self) -> &Arc<Purgatory> {
        &self.purgatory
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        let mut state = self.purgatory.lock();
        match self.kind {
            Kind::Fetch => drop(state.remove_fetch(self.id)),
            Kind::Produce => drop(state.remove_produce(self.id)),
        }
    }
}

#[derive(Debug, Default)]
pub struct Purgatory {
    state: Mutex<State>,
}

impl Purgatory {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The partition's positions if it is tracked already (no partition lock needed).
    pub fn known_positions(&self, tp: &TopicPartition) -> Option<PartitionPositions> {
        self.lock().partitions.get(tp).and_then(|w| w.positions.clone())
    }

    /// The partition's positions, starting tracking at `init()` = (HW, LEO) if not yet tracked.
    pub fn positions(&self, tp: &TopicPartition, init: impl FnOnce() -> (i64, i64)) -> PartitionPositions {
        if let Some(known) = self.lock().partitions.get(tp).and_then(|w| w.positions.clone()) {
            return known;
        }
        // Read outside this lock: the partition's lock may wait for its disk.
        let (hw, leo) = init();
        self.lock()
            .watched(tp)
            .positions
            .get_or_insert_with(|| PartitionPositions::starting_at(hw, leo, 0))
            .clone()
    }

    /// An append to `tp` ending at `end_offset` (exclusive), with the HW after it; checks the
    /// fetches watching `tp`, and its produces when `status` is given.
    pub fn on_append(
        &self,
        tp: &TopicPartition,
        end_offset: i64,
        bytes: u64,
        status: &ProduceStatus,
        log_end_offset_before: i64,
    ) {
        let mut state = self.lock();
        let watched = state.watched(tp);
        let positions = watched
            .positions
            .get_or_insert_with(|| PartitionPositions::starting_at(status.high_watermark, log_end_offset_before, 0));
        positions.on_append(end_offset, bytes, status.high_watermark);
        let has_produces = !watched.produces.is_empty();
        state.check_fetches(tp);
        if has_produces {
            state.check_produces(tp, status);
        }
    }

    /// `tp`'s HW, ISR or leadership may have changed (a follower's fetch, an ISR write): checks
    /// its produces, and its fetches if the HW moved.
    pub fn on_status(&self, tp: &TopicPartition, status: &ProduceStatus) {
        let mut state = self.lock();
        let moved = state
            .watched(tp)
            .positions
            .as_mut()
            .is_some_and(|p| p.on_high_watermark(status.high_watermark));
        if moved {
            state.check_fetches(tp);
        }
        state.check_produces(tp, status);
    }

    /// Leadership of `tp` changed (or its log dir failed, or it was truncated): tracking
    /// restarts at (HW, LEO); its fetches complete and its produces are checked against
    /// `status`.
    pub fn on_reset(&self, tp: &TopicPartition, status: &ProduceStatus, log_end_offset: i64) {
        let mut state = self.lock();
        let watched = state.watched(tp);
        let generation = watched.positions.as_ref().map_or(0, |p| p.generation + 1);
        watched.positions = Some(PartitionPositions::starting_at(
            status.high_watermark,
            log_end_offset,
            generation,
        ));
        state.check_fetches(tp);
        state.check_produces(tp, status);
    }

    /// `tp` is no longer hosted: its fetches complete, its produces fail NOT_LEADER_OR_FOLLOWER.
    pub fn on_removed(&self, tp: &TopicPartition) {
        let mut state = self.lock();
        state.watched(tp).positions = None;
        state.check_fetches(tp);
        let gone = ProduceStatus {
            leader_epoch: None,
            high_watermark: -1,
            isr_below_min: false,
        };
        state.check_produces(tp, &gone);
    }

    /// Parks a fetch (Kafka's `tryCompleteElseWatch`): None when it can already complete.
    pub fn watch_fetch(
        self: &Arc<Self>,
        min_bytes: u64,
        parts: Vec<FetchWatch>,
    ) -> Option<(Parked, oneshot::Receiver<()>)> {
        let mut state = self.lock();
        let ready = {
            let pairs = parts.iter().map(|w| {
                let positions = state.partitions.get(&w.tp).and_then(|p| p.positions.as_ref());
                (w, positions)
            });
            fetch_satisfied(min_bytes, pairs)
        };
        if ready {
            return None;
        }
        let id = state.next_id;
        state.next_id += 1;
        for w in &parts {
            state.watched(&w.tp).fetches.insert(id);
        }
        let (done, rx) = oneshot::channel();
        state.fetches.insert(id, ParkedFetch { min_bytes, parts, done });
        Some((
            Parked {
                purgatory: Arc::clone(self),
                id,
                kind: Kind::Fetch,
            },
            rx,
        ))
    }

    /// Parks an acks=all produce. The caller then checks each partition's status once
    /// ([`Purgatory::on_status`]), so an HW move before the watch was in place is not missed.
    #[allow(clippy::type_complexity)]
    pub fn watch_produce(self: &Arc<Self>, parts: Vec<ProduceWatch>) -> (Parked, oneshot::Receiver<Vec<ProduceWatch>>) {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        for w in &parts {
            state.watched(&w.tp).produces.insert(id);
        }
        let (done, rx) = oneshot::channel();
        state.produces.insert(id, ParkedProduce { parts, done });
        (
            Parked {
                purgatory: Arc::clone(self),
                id,
                kind: Kind::Produce,
            },
            rx,
        )
    }

    /// Expiry: takes a produce back out, with its partitions' outcomes so far (None if it
    /// already completed).
    pub fn take_produce(&self, parked: &Parked) -> Option<Vec<ProduceWatch>> {
        self.lock().remove_produce(parked.id).map(|p| p.parts)
    }

    /// Fetches parked now (Kafka's PurgatorySize for delayedOperation=Fetch).
    pub fn delayed_fetches(&self) -> usize {
        self.lock().fetches.len()
    }

    /// Produces parked now (PurgatorySize for delayedOperation=Produce).
    pub fn delayed_produces(&self) -> usize {
        self.lock().produces.len()
    }

    /// How often operations parked on `tp` were checked and completed by its events.
    pub fn wake_counts(&self, tp: &TopicPartition) -> WakeCounts {
        self.lock()
            .partitions
            .get(tp)
            .map_or_else(WakeCounts::default, |w| w.wakeups)
    }
}

#[cfg(test)]
#[path = "purgatory_tests.rs"]
mod tests;
