//! One partition as this broker hosts it: the controller's state for it (leader, epoch, ISR,
//! replicas), its log, and — as leader — the high watermark and what each follower has
//! fetched. The HW rules are Kafka's: HW = min LEO over the ISR, only moving forward, and
//! (3.7+, KAFKA-15583) never while the ISR is smaller than `min.insync.replicas`.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use crate::log::log::{LogAppendInfo, LogError};
use crate::log::log_manager::{lock, SharedLog};
use crate::protocol::error_codes as ec;
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
}

/// The result of a read.
#[derive(Debug, Clone)]
pub struct ReadResult {
    pub records: Bytes,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

#[derive(Debug)]
struct Inner {
    state: PartitionState,
    log: SharedLog,
    high_watermark: i64,
    /// Followers' log end offsets, from their fetches (leader only).
    follower_leos: HashMap<BrokerId, i64>,
}

/// A hosted partition. Lock order: this partition's state, then its log.
#[derive(Debug)]
pub struct Partition {
    pub tp: TopicPartition,
    pub topic_id: uuid::Uuid,
    local: BrokerId,
    inner: Mutex<Inner>,
}

impl Partition {
    pub fn new(
        tp: TopicPartition,
        topic_id: uuid::Uuid,
        local: BrokerId,
        state: PartitionState,
        log: SharedLog,
    ) -> Self {
        Partition {
            tp,
            topic_id,
            local,
            inner: Mutex::new(Inner {
                state,
                log,
                high_watermark: 0,
                follower_leos: HashMap::new(),
            }),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn state(&self) -> PartitionState {
        self.inner().state.clone()
    }

    pub fn is_leader(&self) -> bool {
        self.inner().state.leader == self.local
    }

    pub fn leader_epoch(&self) -> i32 {
        self.inner().state.leader_epoch
    }

    pub fn high_watermark(&self) -> i64 {
        self.inner().high_watermark
    }

    pub fn log(&self) -> SharedLog {
        self.inner().log.clone()
    }

    /// Applies a new controller decision. As leader: records the new epoch at the LEO in the
    /// epoch cache at once (Kafka's makeLeader) and forgets followers' progress.
    pub fn apply(&self, state: PartitionState, min_isr: i32) -> Result<(), LogError> {
        let mut inner = self.inner();
        let becomes_leader = state.leader == self.local;
        inner.state = state;
        inner.follower_leos.clear();
        if becomes_leader {
            let mut log = lock(&inner.log);
            let leo = log.log_end_offset();
            log.assign_leader_epoch(inner.state.leader_epoch, leo)?;
            drop(log);
            maybe_increment_hw(&mut inner, self.local, min_isr);
        }
        Ok(())
    }

    /// Appends a producer's batches as leader. With acks=-1, refuses before writing when the
    /// ISR is below `min.insync.replicas` (NOT_ENOUGH_REPLICAS).
    pub fn append_as_leader(
        &self,
        records: &mut [u8],
        acks: i16,
        min_isr: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo, i16> {
        let mut inner = self.inner();
        if inner.state.leader != self.local {
            return Err(ec::NOT_LEADER_OR_FOLLOWER);
        }
        if acks == -1 && (inner.state.isr.len() as i32) < effective_min_isr(&inner.state, min_isr) {
            return Err(ec::NOT_ENOUGH_REPLICAS);
        }
        let epoch = inner.state.leader_epoch;
        let info = lock(&inner.log)
            .append_as_leader(records, epoch, now_ms)
            .map_err(|e| e.error_code())?;
        maybe_increment_hw(&mut inner, self.local, min_isr);
        Ok(info)
    }

    /// Whether an acks=-1 produce up to `required_offset` (exclusive) is done: `Some(error
    /// code)` when finished (0 = success), `None` while it must keep waiting.
    pub fn check_produce_completion(&self, required_offset: i64, min_isr: i32) -> Option<i16> {
        let inner = self.inner();
        if inner.state.leader != self.local {
            return Some(ec::NOT_LEADER_OR_FOLLOWER);
        }
        if inner.high_watermark >= required_offset {
            return Some(ec::NONE);
        }
        if (inner.state.isr.len() as i32) < effective_min_isr(&inner.state, min_isr) {
            return Some(ec::NOT_ENOUGH_REPLICAS_AFTER_APPEND);
        }
        None
    }

    /// Checks KIP-320's current leader epoch from a client or follower.
    pub fn check_leader_epoch(&self, current_leader_epoch: i32) -> Result<(), i16> {
        let ours = self.inner().state.leader_epoch;
        match current_leader_epoch {
            e if e < 0 || e == ours => Ok(()),
            e if e < ours => Err(ec::FENCED_LEADER_EPOCH),
            _ => Err(ec::UNKNOWN_LEADER_EPOCH),
        }
    }

    /// Reads as leader: up to the HW for consumers, the LEO for replicas (`replica` = Some(id),
    /// whose fetch offset is also its LEO and may move the HW).
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        replica: Option<BrokerId>,
        min_isr: i32,
    ) -> Result<ReadResult, i16> {
        let mut inner = self.inner();
        if inner.state.leader != self.local {
            return Err(ec::NOT_LEADER_OR_FOLLOWER);
        }
        if let Some(id) = replica {
            inner.follower_leos.insert(id, fetch_offset);
            maybe_increment_hw(&mut inner, self.local, min_isr);
        }
        let log = lock(&inner.log);
        let leo = log.log_end_offset();
        let ceiling = if replica.is_some() { leo } else { inner.high_watermark };
        let records = log
            .read(fetch_offset, max_bytes, ceiling, true)
            .map_err(|e| e.error_code())?;
        Ok(ReadResult {
            records,
            high_watermark: inner.high_watermark,
            log_start_offset: log.log_start_offset(),
            log_end_offset: leo,
        })
    }

    /// ListOffsets: (offset, timestamp) for a timestamp or -1 latest / -2 earliest / -3 max.
    /// Consumers' "latest" is the HW; a replica's is the LEO.
    pub fn offset_for_timestamp(&self, timestamp: i64, replica: bool) -> Result<Option<(i64, i64)>, i16> {
        let inner = self.inner();
        if inner.state.leader != self.local {
            return Err(ec::NOT_LEADER_OR_FOLLOWER);
        }
        if timestamp == -1 && !replica {
            return Ok(Some((inner.high_watermark, -1)));
        }
        let found = lock(&inner.log)
            .fetch_offset_by_timestamp(timestamp)
            .map_err(|e| e.error_code())?;
        // A consumer never sees offsets at or past the HW.
        Ok(found.filter(|(offset, _)| replica || *offset < inner.high_watermark || timestamp == -2))
    }
}

fn effective_min_isr(state: &PartitionState, min_isr: i32) -> i32 {
    min_isr.min(state.replicas.len().max(1) as i32)
}

/// HW = min LEO over the ISR; only forward; frozen while the ISR is below min.insync.replicas.
fn maybe_increment_hw(inner: &mut Inner, local: BrokerId, min_isr: i32) -> bool {
    if (inner.state.isr.len() as i32) < effective_min_isr(&inner.state, min_isr) {
        return false;
    }
    let mut hw = lock(&inner.log).log_end_offset();
    for id in &inner.state.isr {
        if *id == local {
            continue;
        }
        match inner.follower_leos.get(id) {
            Some(leo) => hw = hw.min(*leo),
            None => return false,
        }
    }
    if hw > inner.high_watermark {
        inner.high_watermark = hw;
        return true;
    }
    false
}
