//! KIP-227 incremental fetch sessions, broker side (Kafka's `FetchSession.scala`): the
//! [`FetchSessionCache`] of sessions (id, epoch, the partitions each fetcher follows and what
//! was last sent for each), and the [`FetchContext`] a Fetch request resolves to:
//!
//! - session id 0, epoch -1 (and every Fetch below v7): sessionless, full answers, session id 0;
//! - epoch 0: a full request; any session it names is closed, and a new one is created from the
//!   answer if the cache has room (or can evict, see [`FetchSessionCache`]);
//! - epoch > 0: an incremental request continuing a session: its partitions are added or updated,
//!   `forgotten_topics_data` removed, every session partition is read (so the fetch purgatory
//!   sees all of them), and the answer carries only partitions with news (records, an HW, LSO or
//!   log-start change, an error, a diverging epoch). An unknown session is
//!   FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH, a version switching
//!   between names and topic ids (v13) FETCH_SESSION_TOPIC_ID_ERROR; a session left without
//!   partitions is closed and the answer is sessionless.
//!
//! Pure: no I/O, no clock (every call takes `now` in ms), no locks; [`wire`] translates the
//! Fetch request and response and holds the cache behind one short-held mutex.

pub mod wire;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kafka_protocol::messages::fetch_response::PartitionData;
use uuid::Uuid;

use crate::protocol::error_codes as ec;

pub use crate::protocol::fetch_metadata::{next_epoch, FetchMetadata, FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID};

/// A partition as a request names it (Kafka's `TopicIdPartition`): by name below v13, by topic
/// id from v13 on, where `topic` is `None` while the id does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPartition {
    pub topic_id: Uuid,
    pub topic: Option<String>,
    pub partition: i32,
}

/// How a session finds a partition: by id when there is one, else by name (Kafka's
/// `CachedPartition.equals`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Id(Uuid, i32),
    Name(String, i32),
}

impl SessionPartition {
    fn key(&self) -> Key {
        if self.topic_id.is_nil() {
            Key::Name(self.topic.clone().unwrap_or_default(), self.partition)
        } else {
            Key::Id(self.topic_id, self.partition)
        }
    }
}

/// One partition's request parameters (Kafka's `FetchRequest.PartitionData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRequest {
    pub fetch_offset: i64,
    /// The fetcher's own log start offset (followers).
    pub log_start_offset: i64,
    pub max_bytes: i32,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
}

/// A session's partition (Kafka's `CachedPartition`): the request parameters last sent and
/// what the last answer carrying it said.
#[derive(Debug, Clone)]
struct CachedPartition {
    /// Place in the session's order (partitions that returned records move to the end).
    seq: u64,
    ident: SessionPartition,
    request: PartitionRequest,
    high_watermark: i64,
    last_stable_offset: i64,
    local_log_start_offset: i64,
}

impl CachedPartition {
    fn new(seq: u64, ident: SessionPartition, request: PartitionRequest) -> Self {
        CachedPartition {
            seq,
            ident,
            request,
            high_watermark: -1,
            last_stable_offset: -1,
            local_log_start_offset: -1,
        }
    }

    /// Kafka's `maybeUpdateResponseData`: whether the answer must carry this partition, and
    /// (when `update`) remember what it says.
    fn must_respond(&mut self, data: &PartitionData, update: bool) -> bool {
        let mut must = records_size(data) > 0;
        if self.high_watermark != data.high_watermark {
            must = true;
            if update {
                self.high_watermark = data.high_watermark;
            }
        }
        if self.last_stable_offset != data.last_stable_offset {
            must = true;
            if update {
                self.last_stable_offset = data.last_stable_offset;
            }
        }
        if self.local_log_start_offset != data.log_start_offset {
            must = true;
            if update {
                self.local_log_start_offset = data.log_start_offset;
            }
        }
        if data.preferred_read_replica.0 >= 0 {
            must = true;
        }
        if data.error_code != ec::NONE {
            // Sent again once the error is gone.
            if update {
                self.high_watermark = -1;
            }
            must = true;
        }
        if data.diverging_epoch.epoch >= 0 || data.diverging_epoch.end_offset >= 0 {
            must = true;
        }
        must
    }
}

fn records_size(data: &PartitionData) -> usize {
    data.records.as_ref().map_or(0, |r| r.len())
}

/// A session's partitions in order, found by key.
#[derive(Debug, Default, Clone)]
struct CachedPartitions {
    by_key: HashMap<Key, CachedPartition>,
    order: BTreeMap<u64, Key>,
    next_seq: u64,
}

impl CachedPartitions {
    fn len(&self) -> usize {
        self.by_key.len()
    }

    fn upsert(&mut self, ident: SessionPartition, request: PartitionRequest) -> bool {
        let key = ident.key();
        if let Some(cached) = self.by_key.get_mut(&key) {
            cached.request = request;
            if cached.ident.topic.is_none() {
                cached.ident.topic = ident.topic;
            }
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, key.clone());
        self.by_key.insert(key, CachedPartition::new(seq, ident, request));
        true
    }

    fn remove(&mut self, key: &Key) -> bool {
        match self.by_key.remove(key) {
            Some(cached) => {
                self.order.remove(&cached.seq);
                true
            }
            None => false,
        }
    }

    fn move_to_end(&mut self, key: &Key) {
        if let Some(cached) = self.by_key.get_mut(key) {
            self.order.remove(&cached.seq);
            cached.seq = self.next_seq;
            self.next_seq += 1;
            self.order.insert(cached.seq, key.clone());
        }
    }

    fn in_order(&self) -> impl Iterator<Item = &CachedPartition> {
        self.order.values().filter_map(|k| self.by_key.get(k))
    }
}

/// One fetch session (Kafka's `FetchSession`).
#[derive(Debug, Clone)]
struct Session {
    id: i32,
    /// Created by a follower.
    privileged: bool,
    uses_topic_ids: bool,
    creation_ms: i64,
    last_used_ms: i64,
    /// The epoch the next request must carry.
    epoch: i32,
    /// Size when last touched: what the eviction order knows.
    cached_size: usize,
    partitions: CachedPartitions,
}

impl Session {
    fn evictable_key(&self) -> EvictableKey {
        EvictableKey {
            privileged: self.privileged,
            size: self.cached_size,
            id: self.id,
        }
    }
}

/// Eviction order (Kafka's `EvictableKey`): unprivileged before privileged, smaller before
/// larger, then by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct EvictableKey {
    privileged: bool,
    size: usize,
    id: i32,
}

/// What a request resolved to (Kafka's `FetchContext` subclasses).
#[derive(Debug)]
pub enum FetchContext {
    /// The request's session cannot be used; nothing is read.
    SessionError { error: i16 },
    /// Full answer, no session.
    Sessionless {
        partitions: Vec<(SessionPartition, PartitionRequest)>,
    },
    /// Full answer; a session is created from it if the cache allows.
    Full {
        partitions: Vec<(SessionPartition, PartitionRequest)>,
        uses_topic_ids: bool,
        privileged: bool,
    },
    /// The session's partitions are read; the answer carries only those with news.
    Incremental {
        session_id: i32,
        /// The epoch the request carried.
        request_epoch: i32,
        partitions: Vec<(SessionPartition, PartitionRequest)>,
    },
}

impl FetchContext {
    /// The partitions to read, in the order the answer should fill its byte budget.
    pub fn partitions(&self) -> &[(SessionPartition, PartitionRequest)] {
        match self {
            FetchContext::SessionError { .. } => &[],
            FetchContext::Sessionless { partitions }
            | FetchContext::Full { partitions, .. }
            | FetchContext::Incremental { partitions, .. } => partitions,
        }
    }

    pub fn is_incremental(&self) -> bool {
        matches!(self, FetchContext::Incremental { .. })
    }
}

/// What goes back: the top-level error, the session id, and the partitions to include.
#[derive(Debug, Default)]
pub struct SessionResponse {
    pub error_code: i16,
    pub session_id: i32,
    pub partitions: Vec<(SessionPartition, PartitionData)>,
}

/// Every fetch session of this broker (Kafka's `FetchSessionCacheShard`, one shard).
///
/// A full request gets a session when fewer than `max_entries` exist, or when one can be
/// evicted: the least recently used one if unused for more than `eviction_ms`; otherwise the
/// first in eviction order (unprivileged, then smaller) among sessions older than
/// `eviction_ms` (or any unprivileged session, when the newcomer is a follower's), provided
/// it does not rank above the newcomer.
#[derive(Debug)]
pub struct FetchSessionCache {
    max_entries: usize,
    eviction_ms: i64,
    sessions: HashMap<i32, Session>,
    /// (last used ms, id), least recently used first.
    last_used: BTreeSet<(i64, i32)>,
    evictable_by_all: BTreeSet<EvictableKey>,
    evictable_by_privileged: BTreeSet<EvictableKey>,
    num_partitions: usize,
    evictions: u64,
    rng: u64,
}

impl FetchSessionCache {
    /// `seed` drives session id choice (ids are random, as Kafka's, and never 0).
    pub fn new(max_entries: usize, eviction_ms: i64, seed: u64) -> Self {
        FetchSessionCache {
            max_entries,
            eviction_ms,
            sessions: HashMap::new(),
            last_used: BTreeSet::new(),
            evictable_by_all: BTreeSet::new(),
            evictable_by_privileged: BTreeSet::new(),
            num_partitions: 0,
            evictions: 0,
            rng: seed | 1,
        }
    }

    /// Sessions in the cache (Kafka's NumIncrementalFetchSessions).
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions cached over all sessions (NumIncrementalFetchPartitionsCached).
    pub fn total_partitions(&self) -> usize {
        self.num_partitions
    }

    /// Sessions evicted so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    pub fn contains(&self, session_id: i32) -> bool {
        self.sessions.contains_key(&session_id)
    }

    /// Kafka's `FetchManager.newContext`. `resolve` names a topic id (for session partitions
    /// that did not resolve when they were added).
    #[allow(clippy::too_many_arguments)]
    pub fn new_context(
        &mut self,
        version: i16,
        metadata: FetchMetadata,
        is_follower: bool,
        fetch_data: Vec<(SessionPartition, PartitionRequest)>,
        to_forget: &[SessionPartition],
        resolve: impl Fn(&Uuid, i32) -> Option<String>,
        now: i64,
    ) -> FetchContext {
        if metadata.is_full() {
            if metadata.session_id != INVALID_SESSION_ID {
                // Any session a full request names is closed.
                self.remove(metadata.session_id);
            }
            if metadata.epoch == FINAL_EPOCH {
                return FetchContext::Sessionless { partitions: fetch_data };
            }
            return FetchContext::Full {
                partitions: fetch_data,
                uses_topic_ids: version >= 13,
                privileged: is_follower,
            };
        }
        let Some(session) = self.sessions.get_mut(&metadata.session_id) else {
            return FetchContext::SessionError {
                error: ec::FETCH_SESSION_ID_NOT_FOUND,
            };
        };
        if session.epoch != metadata.epoch {
            return FetchContext::SessionError {
                error: ec::INVALID_FETCH_SESSION_EPOCH,
            };
        }
        if session.uses_topic_ids != (version >= 13) {
            return FetchContext::SessionError {
                error: ec::FETCH_SESSION_TOPIC_ID_ERROR,
            };
        }
        for (ident, request) in &fetch_data {
            session.partitions.upsert(ident.clone(), *request);
        }
        for ident in to_forget {
            session.partitions.remove(&ident.key());
        }
        if session.partitions.len() == 0 {
            self.remove(metadata.session_id);
            return FetchContext::Sessionless { partitions: fetch_data };
        }
        let uses_ids = session.uses_topic_ids;
        if uses_ids {
            // A topic id that did not resolve when it was added may resolve now.
            for c in session
                .partitions
                .by_key
                .values_mut()
                .filter(|c| c.ident.topic.is_none())
            {
                c.ident.topic = resolve(&c.ident.topic_id, c.ident.partition);
            }
        }
        let partitions = session
            .partitions
            .in_order()
            .map(|c| (c.ident.clone(), c.request))
            .collect();
        session.epoch = next_epoch(session.epoch);
        let session_id = session.id;
        self.touch(session_id, now);
        FetchContext::Incremental {
            session_id,
            request_epoch: metadata.epoch,
            partitions,
        }
    }

    /// Kafka's `updateAndGenerateResponseData`: `results` holds what was read for each of
    /// `context.partitions()`, in that order.
    pub fn respond(&mut self, context: FetchContext, results: Vec<PartitionData>, now: i64) -> SessionResponse {
        match context {
            FetchContext::SessionError { error } => SessionResponse {
                error_code: error,
                session_id: INVALID_SESSION_ID,
                partitions: Vec::new(),
            },
            FetchContext::Sessionless { partitions } => SessionResponse {
                error_code: ec::NONE,
                session_id: INVALID_SESSION_ID,
                partitions: zip(partitions, results),
            },
            FetchContext::Full {
                partitions,
                uses_topic_ids,
                privileged,
            } => {
                let mut cached = CachedPartitions::default();
                for ((ident, request), data) in partitions.iter().zip(&results) {
                    cached.upsert(ident.clone(), *request);
                    if let Some(c) = cached.by_key.get_mut(&ident.key()) {
                        c.high_watermark = data.high_watermark;
                        c.last_stable_offset = data.last_stable_offset;
                        c.local_log_start_offset = data.log_start_offset;
                    }
                }
                let session_id = self.maybe_create_session(now, privileged, uses_topic_ids, cached);
                SessionResponse {
                    error_code: ec::NONE,
                    session_id,
                    partitions: zip(partitions, results),
                }
            }
            FetchContext::Incremental {
                session_id,
                request_epoch,
                partitions,
            } => {
                let Some(session) = self.sessions.get_mut(&session_id) else {
                    // Evicted while this fetch was reading: answer in full; the next
                    // request learns the session is gone.
                    return SessionResponse {
                        error_code: ec::NONE,
                        session_id,
                        partitions: zip(partitions, results),
                    };
                };
                if session.epoch != next_epoch(request_epoch) {
                    // Another request with this session came in meanwhile (a duplicate).
                    return SessionResponse {
                        error_code: ec::INVALID_FETCH_SESSION_EPOCH,
                        session_id,
                        partitions: Vec::new(),
                    };
                }
                let mut out = Vec::new();
                for ((ident, _), data) in partitions.into_iter().zip(results) {
                    let key = ident.key();
                    let must = session
                        .partitions
                        .by_key
                        .get_mut(&key)
                        .is_none_or(|c| c.must_respond(&data, true));
                    if must {
                        if records_size(&data) > 0 {
                            // Fairness across fetches: those that just returned data go last.
                            session.partitions.move_to_end(&key);
                        }
                        out.push((ident, data));
                    }
                }
                SessionResponse {
                    error_code: ec::NONE,
                    session_id,
                    partitions: out,
                }
            }
        }
    }

    fn next_session_id(&mut self) -> i32 {
        loop {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let v = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let id = ((v >> 33) as i32) & i32::MAX;
            if id != INVALID_SESSION_ID && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    /// Kafka's `maybeCreateSession`: the new session's id, or 0 when there is no room.
    fn maybe_create_session(
        &mut self,
        now: i64,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: CachedPartitions,
    ) -> i32 {
        let key = EvictableKey {
            privileged,
            size: partitions.len(),
            id: 0,
        };
        if self.sessions.len() >= self.max_entries && !self.try_evict(privileged, key, now) {
            return INVALID_SESSION_ID;
        }
        let id = self.next_session_id();
        self.sessions.insert(
            id,
            Session {
                id,
                privileged,
                uses_topic_ids,
                creation_ms: now,
                last_used_ms: now,
                epoch: next_epoch(INITIAL_EPOCH),
                cached_size: 0,
                partitions,
            },
        );
        self.last_used.insert((now, id));
        self.insert_evictable(id, now, true);
        id
    }

    /// Kafka's `tryEvict`.
    fn try_evict(&mut self, privileged: bool, key: EvictableKey, now: i64) -> bool {
        let Some(&(last_used, id)) = self.last_used.first() else {
            return false;
        };
        if now - last_used > self.eviction_ms {
            self.remove(id);
            self.evictions += 1;
            return true;
        }
        let set = if privileged {
            &self.evictable_by_privileged
        } else {
            &self.evictable_by_all
        };
        match set.first().copied() {
            Some(victim) if key >= victim => {
                self.remove(victim.id);
                self.evictions += 1;
                true
            }
            _ => false,
        }
    }

    /// Closes a session.
    pub fn remove(&mut self, session_id: i32) -> bool {
        let Some(session) = self.sessions.remove(&session_id) else {
            return false;
        };
        self.last_used.remove(&(session.last_used_ms, session.id));
        let key = session.evictable_key();
        self.evictable_by_all.remove(&key);
        self.evictable_by_privileged.remove(&key);
        self.num_partitions -= session.cached_size;
        true
    }

    /// Kafka's `touch`: the session was used at `now`; its size and eviction eligibility are
    /// brought up to date.
    fn touch(&mut self, session_id: i32, now: i64) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        self.last_used.remove(&(session.last_used_ms, session.id));
        session.last_used_ms = now;
        self.last_used.insert((now, session.id));
        self.insert_evictable(session_id, now, false);
    }

    fn insert_evictable(&mut self, session_id: i32, now: i64, new: bool) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        if !new {
            let old = session.evictable_key();
            self.evictable_by_all.remove(&old);
            self.evictable_by_privileged.remove(&old);
            self.num_partitions -= session.cached_size;
        }
        session.cached_size = session.partitions.len();
        let key = session.evictable_key();
        let old_enough = now - session.creation_ms > self.eviction_ms;
        if !session.privileged || old_enough {
            self.evictable_by_privileged.insert(key);
        }
        if old_enough {
            self.evictable_by_all.insert(key);
        }
        self.num_partitions += session.cached_size;
    }
}

fn zip(
    partitions: Vec<(SessionPartition, PartitionRequest)>,
    results: Vec<PartitionData>,
) -> Vec<(SessionPartition, PartitionData)> {
    partitions.into_iter().map(|(p, _)| p).zip(results).collect()
}
