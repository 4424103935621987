use bytes::Bytes;
use kafka_protocol::messages::fetch_response::PartitionData;
use uuid::Uuid;

use super::*;

const EVICTION_MS: i64 = 120_000;

fn tp(topic: &str, partition: i32) -> SessionPartition {
    SessionPartition {
        topic_id: Uuid::nil(),
        topic: Some(topic.to_string()),
        partition,
    }
}

fn req(offset: i64) -> PartitionRequest {
    PartitionRequest {
        fetch_offset: offset,
        log_start_offset: -1,
        max_bytes: 1024,
        current_leader_epoch: 0,
        last_fetched_epoch: -1,
    }
}

fn meta(session_id: i32, epoch: i32) -> FetchMetadata {
    FetchMetadata { session_id, epoch }
}

/// A read result: `hw`, log start 0, and `records` bytes.
fn data(partition: i32, hw: i64, records: usize) -> PartitionData {
    let mut d = PartitionData::default().with_partition_index(partition);
    d.high_watermark = hw;
    d.last_stable_offset = hw;
    d.log_start_offset = 0;
    d.records = Some(Bytes::from(vec![0u8; records]));
    d
}

fn no_names(_: &Uuid, _: i32) -> Option<String> {
    None
}

fn context(
    cache: &mut FetchSessionCache,
    m: FetchMetadata,
    send: &[(SessionPartition, PartitionRequest)],
    forget: &[SessionPartition],
    now: i64,
) -> FetchContext {
    cache.new_context(12, m, false, send.to_vec(), forget, no_names, now)
}

fn names(r: &SessionResponse) -> Vec<(String, i32)> {
    r.partitions
        .iter()
        .map(|(p, _)| (p.topic.clone().unwrap_or_default(), p.partition))
        .collect()
}

fn read_names(c: &FetchContext) -> Vec<(String, i32)> {
    c.partitions()
        .iter()
        .map(|(p, _)| (p.topic.clone().unwrap_or_default(), p.partition))
        .collect()
}

fn n(topic: &str, p: i32) -> (String, i32) {
    (topic.to_string(), p)
}

/// A session of `a-0`, `a-1` created at `now`, both answered with HW 10: its id.
fn two_partition_session(cache: &mut FetchSessionCache, now: i64) -> i32 {
    let ctx = context(
        cache,
        FetchMetadata::INITIAL,
        &[(tp("a", 0), req(0)), (tp("a", 1), req(0))],
        &[],
        now,
    );
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 0)], now);
    assert_eq!(r.error_code, ec::NONE);
    assert_ne!(r.session_id, INVALID_SESSION_ID);
    r.session_id
}

#[test]
fn epochs_advance_wrap_to_one_and_final_stays_final() {
    assert_eq!(next_epoch(INITIAL_EPOCH), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(FINAL_EPOCH), FINAL_EPOCH);
    assert!(FetchMetadata::INITIAL.is_full());
    assert!(FetchMetadata::LEGACY.is_full());
    assert!(!meta(5, 1).is_full());
    assert_eq!(meta(5, 3).next_close_existing_attempt_new(), meta(5, 0));
}

#[test]
fn session_id_zero_epoch_final_is_sessionless() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let ctx = context(&mut cache, FetchMetadata::LEGACY, &[(tp("a", 0), req(0))], &[], 0);
    assert!(matches!(ctx, FetchContext::Sessionless { .. }));
    let r = cache.respond(ctx, vec![data(0, 10, 0)], 0);
    assert_eq!((r.error_code, r.session_id), (ec::NONE, INVALID_SESSION_ID));
    assert_eq!(names(&r), vec![n("a", 0)]);
    assert!(cache.is_empty());
}

#[test]
fn a_full_request_creates_a_session_and_answers_every_partition() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let ctx = context(
        &mut cache,
        FetchMetadata::INITIAL,
        &[(tp("a", 0), req(0)), (tp("b", 0), req(5))],
        &[],
        0,
    );
    assert_eq!(read_names(&ctx), vec![n("a", 0), n("b", 0)]);
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(0, 10, 0)], 0);
    assert_ne!(r.session_id, INVALID_SESSION_ID);
    assert_eq!(names(&r), vec![n("a", 0), n("b", 0)], "full answers omit nothing");
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.total_partitions(), 2);
    // The next request continues the session at epoch 1.
    let ctx = context(&mut cache, meta(r.session_id, 1), &[], &[], 1);
    assert!(ctx.is_incremental());
}

#[test]
fn incremental_answers_carry_only_partitions_with_news() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);

    // Nothing changed: every session partition is read, none is answered.
    let ctx = context(&mut cache, meta(id, 1), &[], &[], 1);
    assert_eq!(
        read_names(&ctx),
        vec![n("a", 0), n("a", 1)],
        "the purgatory sees all partitions"
    );
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 0)], 1);
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));
    assert!(r.partitions.is_empty());

    // New records on a-1 only.
    let ctx = context(&mut cache, meta(id, 2), &[], &[], 2);
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 100)], 2);
    assert_eq!(names(&r), vec![n("a", 1)]);

    // HW moved on a-0 (no records).
    let ctx = context(&mut cache, meta(id, 3), &[], &[], 3);
    let r = cache.respond(ctx, vec![data(0, 11, 0), data(1, 10, 0)], 3);
    assert_eq!(names(&r), vec![n("a", 0)]);

    // Log start moved on a-0.
    let ctx = context(&mut cache, meta(id, 4), &[], &[], 4);
    let mut moved = data(0, 11, 0);
    moved.log_start_offset = 3;
    let r = cache.respond(ctx, vec![moved, data(1, 10, 0)], 4);
    assert_eq!(names(&r), vec![n("a", 0)]);

    // LSO moved on a-1.
    let ctx = context(&mut cache, meta(id, 5), &[], &[], 5);
    let mut lso = data(1, 10, 0);
    lso.last_stable_offset = 8;
    let mut start = data(0, 11, 0);
    start.log_start_offset = 3;
    let r = cache.respond(ctx, vec![start, lso], 5);
    assert_eq!(names(&r), vec![n("a", 1)]);
}

#[test]
fn errors_are_always_answered_and_the_partition_is_resent_when_they_clear() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    for epoch in [1, 2] {
        let ctx = context(&mut cache, meta(id, epoch), &[], &[], 1);
        let mut failed = data(0, -1, 0);
        failed.error_code = ec::NOT_LEADER_OR_FOLLOWER;
        failed.log_start_offset = -1;
        let r = cache.respond(ctx, vec![failed, data(1, 10, 0)], 1);
        assert_eq!(names(&r), vec![n("a", 0)], "an error is answered every time");
    }
    // The error is gone, HW and log start as before it: still answered once.
    let ctx = context(&mut cache, meta(id, 3), &[], &[], 1);
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 0)], 1);
    assert_eq!(names(&r), vec![n("a", 0)]);
    let ctx = context(&mut cache, meta(id, 4), &[], &[], 1);
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 0)], 1);
    assert!(r.partitions.is_empty());
}

#[test]
fn a_diverging_epoch_is_always_answered() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    let ctx = context(&mut cache, meta(id, 1), &[], &[], 1);
    let mut diverging = data(1, 10, 0);
    diverging.diverging_epoch.epoch = 3;
    diverging.diverging_epoch.end_offset = 7;
    let r = cache.respond(ctx, vec![data(0, 10, 0), diverging], 1);
    assert_eq!(names(&r), vec![n("a", 1)]);
}

#[test]
fn incremental_requests_add_update_and_forget_partitions() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    // Add b-0, move a-1's offset, forget a-0.
    let ctx = context(
        &mut cache,
        meta(id, 1),
        &[(tp("b", 0), req(0)), (tp("a", 1), req(7))],
        &[tp("a", 0)],
        1,
    );
    assert_eq!(read_names(&ctx), vec![n("a", 1), n("b", 0)]);
    let offsets: Vec<i64> = ctx.partitions().iter().map(|(_, r)| r.fetch_offset).collect();
    assert_eq!(offsets, vec![7, 0]);
    let r = cache.respond(ctx, vec![data(1, 10, 0), data(0, 4, 0)], 1);
    assert_eq!(
        names(&r),
        vec![n("b", 0)],
        "the added partition is new; a-1 did not change"
    );
    assert_eq!(cache.total_partitions(), 2);
    // The cached offset of a-1 is kept for the implied partitions of the next request.
    let ctx = context(&mut cache, meta(id, 2), &[], &[], 2);
    let offsets: Vec<i64> = ctx.partitions().iter().map(|(_, r)| r.fetch_offset).collect();
    assert_eq!(offsets, vec![7, 0]);
}

#[test]
fn forgetting_every_partition_closes_the_session() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    let ctx = context(&mut cache, meta(id, 1), &[], &[tp("a", 0), tp("a", 1)], 1);
    assert!(matches!(ctx, FetchContext::Sessionless { .. }));
    let r = cache.respond(ctx, vec![], 1);
    assert_eq!((r.error_code, r.session_id), (ec::NONE, INVALID_SESSION_ID));
    assert!(!cache.contains(id));
    assert_eq!(cache.total_partitions(), 0);
}

#[test]
fn an_unknown_session_is_fetch_session_id_not_found() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let ctx = context(&mut cache, meta(12345, 1), &[(tp("a", 0), req(0))], &[], 0);
    assert!(ctx.partitions().is_empty(), "nothing is read");
    let r = cache.respond(ctx, vec![], 0);
    assert_eq!(
        (r.error_code, r.session_id),
        (ec::FETCH_SESSION_ID_NOT_FOUND, INVALID_SESSION_ID)
    );
    assert!(r.partitions.is_empty());
}

#[test]
fn a_wrong_epoch_is_invalid_fetch_session_epoch_and_keeps_the_session() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    for wrong in [2, 7, i32::MAX] {
        let ctx = context(&mut cache, meta(id, wrong), &[], &[], 1);
        let r = cache.respond(ctx, vec![], 1);
        assert_eq!(
            (r.error_code, r.session_id),
            (ec::INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID)
        );
    }
    // The right epoch still works, and a replay of it is refused.
    let ctx = context(&mut cache, meta(id, 1), &[], &[], 1);
    let r = cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 0)], 1);
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));
    let ctx = context(&mut cache, meta(id, 1), &[], &[], 1);
    assert!(matches!(
        ctx,
        FetchContext::SessionError {
            error: ec::INVALID_FETCH_SESSION_EPOCH
        }
    ));
}

#[test]
fn a_request_overtaken_while_reading_is_invalid_fetch_session_epoch() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    let first = context(&mut cache, meta(id, 1), &[], &[], 1);
    let second = context(&mut cache, meta(id, 2), &[], &[], 1);
    let r = cache.respond(first, vec![data(0, 10, 5), data(1, 10, 0)], 1);
    assert_eq!((r.error_code, r.session_id), (ec::INVALID_FETCH_SESSION_EPOCH, id));
    assert!(r.partitions.is_empty());
    let r = cache.respond(second, vec![data(0, 10, 5), data(1, 10, 0)], 1);
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));
}

#[test]
fn switching_between_names_and_topic_ids_is_fetch_session_topic_id_error() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0); // v12: names
    let ctx = cache.new_context(13, meta(id, 1), false, vec![], &[], no_names, 1);
    assert!(matches!(
        ctx,
        FetchContext::SessionError {
            error: ec::FETCH_SESSION_TOPIC_ID_ERROR
        }
    ));
    // And the other way round.
    let topic_id = Uuid::from_u128(7);
    let by_id = SessionPartition {
        topic_id,
        topic: Some("a".into()),
        partition: 0,
    };
    let ctx = cache.new_context(
        13,
        FetchMetadata::INITIAL,
        false,
        vec![(by_id, req(0))],
        &[],
        no_names,
        1,
    );
    let r = cache.respond(ctx, vec![data(0, 1, 0)], 1);
    let ctx = cache.new_context(12, meta(r.session_id, 1), false, vec![], &[], no_names, 1);
    assert!(matches!(
        ctx,
        FetchContext::SessionError {
            error: ec::FETCH_SESSION_TOPIC_ID_ERROR
        }
    ));
}

#[test]
fn topic_id_sessions_key_by_id_and_resolve_names_later() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let topic_id = Uuid::from_u128(42);
    let unresolved = SessionPartition {
        topic_id,
        topic: None,
        partition: 0,
    };
    let ctx = cache.new_context(
        13,
        FetchMetadata::INITIAL,
        false,
        vec![(unresolved.clone(), req(0))],
        &[],
        no_names,
        0,
    );
    let mut unknown = data(0, -1, 0);
    unknown.error_code = ec::UNKNOWN_TOPIC_ID;
    let r = cache.respond(ctx, vec![unknown], 0);
    let id = r.session_id;
    // The topic now exists: the cached partition gets its name.
    let resolve = |tid: &Uuid, _: i32| (*tid == topic_id).then(|| "t".to_string());
    let ctx = cache.new_context(13, meta(id, 1), false, vec![], &[], resolve, 1);
    assert_eq!(ctx.partitions()[0].0.topic.as_deref(), Some("t"));
    cache.respond(ctx, vec![data(0, 10, 0)], 1);
    // Forgetting by id works whatever the name.
    let ctx = cache.new_context(13, meta(id, 2), false, vec![], &[unresolved], resolve, 2);
    assert!(matches!(ctx, FetchContext::Sessionless { .. }));
    assert!(!cache.contains(id));
}

#[test]
fn a_full_request_naming_a_session_closes_it() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    // Epoch 0: closed, and a new session replaces it.
    let ctx = context(&mut cache, meta(id, INITIAL_EPOCH), &[(tp("a", 0), req(0))], &[], 1);
    assert!(!cache.contains(id));
    let r = cache.respond(ctx, vec![data(0, 10, 0)], 1);
    assert_ne!(r.session_id, INVALID_SESSION_ID);
    assert_ne!(r.session_id, id);
    assert_eq!(cache.len(), 1);
    // Epoch -1: closed, no new session.
    let ctx = context(
        &mut cache,
        meta(r.session_id, FINAL_EPOCH),
        &[(tp("a", 0), req(0))],
        &[],
        2,
    );
    let r = cache.respond(ctx, vec![data(0, 10, 0)], 2);
    assert_eq!(r.session_id, INVALID_SESSION_ID);
    assert!(cache.is_empty());
}

#[test]
fn partitions_that_returned_records_are_read_last_next_time() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let ctx = context(
        &mut cache,
        FetchMetadata::INITIAL,
        &[(tp("a", 0), req(0)), (tp("a", 1), req(0)), (tp("a", 2), req(0))],
        &[],
        0,
    );
    let id = cache
        .respond(ctx, vec![data(0, 10, 0), data(1, 10, 0), data(2, 10, 0)], 0)
        .session_id;
    let ctx = context(&mut cache, meta(id, 1), &[], &[], 1);
    cache.respond(ctx, vec![data(0, 10, 50), data(1, 10, 0), data(2, 10, 0)], 1);
    let ctx = context(&mut cache, meta(id, 2), &[], &[], 2);
    assert_eq!(read_names(&ctx), vec![n("a", 1), n("a", 2), n("a", 0)]);
}

#[test]
fn session_epochs_wrap_from_max_to_one() {
    let mut cache = FetchSessionCache::new(10, EVICTION_MS, 1);
    let id = two_partition_session(&mut cache, 0);
    if let Some(s) = cache.sessions.get_mut(&id) {
        s.epoch = i32::MAX;
    }
    let ctx = context(&mut cache, meta(id, i32::MAX), &[], &[], 1);
    assert!(ctx.is_incremental());
    cache.respond(ctx, vec![data(0, 10, 0), data(1, 10, 0)], 1);
    let ctx = context(&mut cache, meta(id, 1), &[], &[], 1);
    assert!(ctx.is_incremental());
}

/// A consumer (or, when `privileged`, follower) session of `size` partitions created at `now`.
fn session_of(cache: &mut FetchSessionCache, size: i32, privileged: bool, now: i64) -> i32 {
    let send: Vec<_> = (0..size).map(|p| (tp("s", p), req(0))).collect();
    let ctx = cache.new_context(12, FetchMetadata::INITIAL, privileged, send, &[], no_names, now);
    let results = (0..size).map(|p| data(p, 1, 0)).collect();
    cache.respond(ctx, results, now).session_id
}

#[test]
fn a_full_cache_refuses_new_sessions_while_the_old_ones_are_fresh() {
    let mut cache = FetchSessionCache::new(2, EVICTION_MS, 1);
    let a = session_of(&mut cache, 2, false, 0);
    let b = session_of(&mut cache, 2, false, 0);
    assert!(a != 0 && b != 0);
    assert_eq!(session_of(&mut cache, 2, false, 10), INVALID_SESSION_ID);
    // Even a larger one: the others are not older than the eviction time.
    assert_eq!(session_of(&mut cache, 10, false, 10), INVALID_SESSION_ID);
    assert_eq!(cache.len(), 2);
    assert_eq!(cache.evictions(), 0);
    // No slots at all: every fetch is answered without a session.
    let mut none = FetchSessionCache::new(0, EVICTION_MS, 1);
    assert_eq!(session_of(&mut none, 1, true, 0), INVALID_SESSION_ID);
}

#[test]
fn the_least_recently_used_session_is_evicted_once_stale() {
    let mut cache = FetchSessionCache::new(2, EVICTION_MS, 1);
    let a = session_of(&mut cache, 2, false, 0);
    let b = session_of(&mut cache, 2, false, 1_000);
    // `a` is used at 50 s, `b` is left alone.
    let ctx = cache.new_context(12, meta(a, 1), false, vec![], &[], no_names, 50_000);
    cache.respond(ctx, vec![data(0, 1, 0), data(1, 1, 0)], 50_000);
    // At 121.001 s `b` has been unused for more than 120 s; `a` for 71 s.
    let c = session_of(&mut cache, 1, false, 121_001);
    assert_ne!(c, INVALID_SESSION_ID);
    assert!(cache.contains(a) && cache.contains(c) && !cache.contains(b));
    assert_eq!(cache.evictions(), 1);
    // The evicted session's next request: not found.
    let ctx = cache.new_context(12, meta(b, 1), false, vec![], &[], no_names, 121_002);
    assert!(matches!(
        ctx,
        FetchContext::SessionError {
            error: ec::FETCH_SESSION_ID_NOT_FOUND
        }
    ));
}

#[test]
fn a_follower_session_evicts_a_consumer_session_at_once() {
    let mut cache = FetchSessionCache::new(1, EVICTION_MS, 1);
    let consumer = session_of(&mut cache, 5, false, 0);
    let follower = session_of(&mut cache, 1, true, 10);
    assert_ne!(follower, INVALID_SESSION_ID);
    assert!(!cache.contains(consumer));
    // A consumer cannot evict a fresh follower session, nor a follower another fresh one.
    assert_eq!(session_of(&mut cache, 100, false, 20), INVALID_SESSION_ID);
    assert_eq!(session_of(&mut cache, 100, true, 20), INVALID_SESSION_ID);
    assert!(cache.contains(follower));
}

#[test]
fn a_larger_session_evicts_a_smaller_one_older_than_the_eviction_time() {
    let mut cache = FetchSessionCache::new(2, EVICTION_MS, 1);
    let small = session_of(&mut cache, 1, false, 0);
    let big = session_of(&mut cache, 5, false, 0);
    // Keep both in use so neither is stale; touching after 120 s makes them evictable.
    for (id, size) in [(small, 1), (big, 5)] {
        let ctx = cache.new_context(12, meta(id, 1), false, vec![], &[], no_names, 120_001);
        cache.respond(ctx, (0..size).map(|p| data(p, 1, 0)).collect(), 120_001);
    }
    // Size 3 evicts the smallest (size 1), not the size-5 one.
    let mid = session_of(&mut cache, 3, false, 120_002);
    assert_ne!(mid, INVALID_SESSION_ID);
    assert!(!cache.contains(small) && cache.contains(big) && cache.contains(mid));
    // Size 2 now ranks below every evictable session (3 is not yet evictable, 5 is larger).
    assert_eq!(session_of(&mut cache, 2, false, 120_003), INVALID_SESSION_ID);
    assert_eq!(cache.total_partitions(), 8);
}
