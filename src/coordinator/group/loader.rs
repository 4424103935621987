//! Reading one `__consumer_offsets` partition back into groups (Kafka's
//! `GroupMetadataManager.doLoadGroupsAndOffsets`): every record from the log start to the log
//! end, in order, the latest value per key winning and tombstones removing. Groups with a stored
//! generation come back Stable with fresh sessions; groups known only by offsets come back Empty.
//!
//! `apply_record` is the pure part; [`Loading`] walks a log in chunks of
//! `offsets.load.buffer.size`, holding the log's lock only for each read.

use std::collections::BTreeMap;

use super::schema::{self, GroupValue, OffsetValue, RecordKey};
use super::state::Group;
use crate::log::log::LogError;
use crate::log::log_manager::{lock, SharedLog};
use crate::protocol::record_batch::{BatchScanner, Compression, RecordIter, RECORDS_OFFSET};

/// What one partition holds, before it becomes live groups.
#[derive(Debug, Default)]
pub struct LoadState {
    pub groups: BTreeMap<String, Option<GroupValue>>,
    pub offsets: BTreeMap<(String, String, i32), OffsetValue>,
    pub records: usize,
    pub skipped: usize,
}

impl LoadState {
    /// Applies one record (a `None` value is a tombstone). Malformed records are counted and
    /// skipped: one bad record must not cost every group of the partition.
    pub fn apply_record(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.records += 1;
        let Some(Ok(key)) = key.map(schema::parse_key) else {
            self.skipped += 1;
            return;
        };
        match key {
            RecordKey::Offset {
                group,
                topic,
                partition,
            } => {
                let k = (group, topic, partition);
                match value.map(schema::parse_offset_value) {
                    None => {
                        self.offsets.remove(&k);
                    }
                    Some(Ok(v)) => {
                        self.offsets.insert(k, v);
                    }
                    Some(Err(_)) => self.skipped += 1,
                }
            }
            RecordKey::Group { group } => match value.map(schema::parse_group_value) {
                None => {
                    // A deleted group; its offsets were tombstoned before it.
                    self.groups.insert(group, None);
                }
                Some(Ok(v)) => {
                    self.groups.insert(group, Some(v));
                }
                Some(Err(_)) => self.skipped += 1,
            },
        }
    }

    /// The live groups, with their offsets, as of `now`.
    pub fn into_groups(self, now: i64) -> BTreeMap<String, Group> {
        let mut out: BTreeMap<String, Group> = BTreeMap::new();
        for (id, value) in self.groups {
            if let Some(v) = value {
                out.insert(id.clone(), Group::from_stored(&id, v, now));
            }
        }
        for ((group, topic, partition), v) in self.offsets {
            out.entry(group.clone())
                .or_insert_with(|| Group::new(&group, now))
                .offsets
                .insert((topic, partition), v);
        }
        out
    }
}

/// Reads the whole log of an offsets partition.
pub fn load_log(log: &SharedLog, chunk_bytes: usize) -> Result<LoadState, LogError> {
    let mut loading = Loading::start(log);
    while loading.step(log, chunk_bytes)? {}
    Ok(loading.state)
}

/// A load in progress, one chunk at a time: the coordinator runs each step as its own operation
/// on the log dir's I/O thread, so a long load does not hold up that dir's appends meanwhile.
#[derive(Debug)]
pub struct Loading {
    pub state: LoadState,
    offset: i64,
    end: i64,
}

impl Loading {
    /// From the log start to the log end as of now.
    pub fn start(log: &SharedLog) -> Self {
        let l = lock(log);
        Loading {
            state: LoadState::default(),
            offset: l.log_start_offset(),
            end: l.log_end_offset(),
        }
    }

    /// Reads and applies the next chunk of at most `chunk_bytes` (at least one whole batch);
    /// false once the log end is reached.
    pub fn step(&mut self, log: &SharedLog, chunk_bytes: usize) -> Result<bool, LogError> {
        let (offset, end, state) = (self.offset, self.end, &mut self.state);
        if offset >= end {
            return Ok(false);
        }
        let bytes = lock(log).read(offset, chunk_bytes, end, true)?;
        if bytes.is_empty() {
            return Ok(false);
        }
        let mut next = offset;
        for item in BatchScanner::without_crc(&bytes) {
            let Ok((at, h)) = item else { break };
            next = h.next_offset();
            if h.is_control() || h.last_offset() < offset {
                continue;
            }
            let batch = &bytes[at..at + h.size_in_bytes()];
            let section = &batch[RECORDS_OFFSET.min(batch.len())..];
            let inflated;
            let records = match h.compression() {
                Compression::None => section,
                codec => match crate::log::dump::decompress(codec, section) {
                    Ok(b) => {
                        inflated = b;
                        &inflated[..]
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, offset = h.base_offset, "offsets batch cannot be decompressed; skipped");
                        state.skipped += h.record_count.max(0) as usize;
                        continue;
                    }
                },
            };
            for record in RecordIter::new(records, h.record_count) {
                match record {
                    Ok(r) if h.base_offset + i64::from(r.offset_delta) >= offset => state.apply_record(r.key, r.value),
                    Ok(_) => {}
                    Err(_) => {
                        state.skipped += 1;
                        break;
                    }
                }
            }
        }
        if next <= offset {
            return Ok(false);
        }
        self.offset = next;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::GroupState;
    use super::*;

    fn offset_value(offset: i64) -> Vec<u8> {
        schema::offset_value(&OffsetValue {
            offset,
            leader_epoch: 0,
            metadata: String::new(),
            commit_timestamp: 10,
            expire_timestamp: None,
        })
    }

    #[test]
    fn the_latest_value_wins_and_tombstones_remove() {
        let mut s = LoadState::default();
        let k = schema::offset_key("g", "t", 0);
        s.apply_record(Some(&k), Some(&offset_value(5)));
        s.apply_record(Some(&k), Some(&offset_value(9)));
        s.apply_record(Some(&schema::offset_key("g", "t", 1)), Some(&offset_value(3)));
        s.apply_record(Some(&schema::offset_key("g", "t", 1)), None);
        s.apply_record(Some(&schema::offset_key("gone", "t", 0)), Some(&offset_value(1)));
        s.apply_record(Some(&schema::offset_key("gone", "t", 0)), None);
        s.apply_record(
            Some(&schema::group_key("gone")),
            Some(&schema::group_value(&GroupValue::default())),
        );
        s.apply_record(Some(&schema::group_key("gone")), None);
        s.apply_record(Some(b"junk"), Some(b"x"));
        s.apply_record(None, Some(b"x"));
        assert_eq!((s.records, s.skipped), (10, 2));
        let groups = s.into_groups(100);
        assert_eq!(groups.keys().collect::<Vec<_>>(), vec!["g"]);
        let g = &groups["g"];
        assert!(g.is(GroupState::Empty));
        assert_eq!(g.offsets.len(), 1);
        assert_eq!(g.offsets[&("t".to_string(), 0)].offset, 9);
    }
}
