//! Table-style tests of the producer-state rules, each citing the Kafka behaviour it mirrors
//! (`ProducerStateManagerTest`, `ProducerAppendInfo`).

use super::*;
use crate::protocol::error_codes as ec;

fn batch(pid: i64, epoch: i16, first_seq: i32, count: i32, first_offset: i64, ts: i64) -> ProducerBatch {
    ProducerBatch {
        producer_id: pid,
        producer_epoch: epoch,
        first_seq,
        last_seq: first_seq.wrapping_add(count - 1),
        first_offset,
        last_offset: first_offset + i64::from(count) - 1,
        max_timestamp: ts,
    }
}

/// Checks and commits one client batch, as the leader's append does.
fn client(state: &mut ProducerStateManager, b: ProducerBatch) -> Result<(), ProducerStateError> {
    let mut append = state.prepare(AppendOrigin::Client);
    append.append(state, &b)?;
    state.commit(append);
    state.update_map_end_offset(b.last_offset + 1);
    Ok(())
}

#[test]
fn a_new_producer_is_accepted_at_any_sequence() {
    // KIP-360: no UNKNOWN_PRODUCER_ID for a producer the partition has no state for.
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(7, 0, 42, 3, 0, 10)).expect("accepted");
    let e = s.last_entry(7).expect("entry");
    assert_eq!((e.producer_epoch, e.last_seq(), e.last_data_offset()), (0, 44, 2));
}

#[test]
fn sequences_must_continue_within_an_epoch() {
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(7, 0, 0, 5, 0, 10)).expect("first");
    client(&mut s, batch(7, 0, 5, 5, 5, 10)).expect("next");
    let gap = client(&mut s, batch(7, 0, 11, 1, 10, 10)).expect_err("gap");
    assert_eq!(gap.error_code(), ec::OUT_OF_ORDER_SEQUENCE_NUMBER);
    let behind = client(&mut s, batch(7, 0, 3, 1, 10, 10)).expect_err("behind");
    assert_eq!(behind.error_code(), ec::OUT_OF_ORDER_SEQUENCE_NUMBER);
}

#[test]
fn a_retried_batch_is_found_among_the_last_five() {
    let mut s = ProducerStateManager::new(0);
    for i in 0..7 {
        client(&mut s, batch(7, 0, i * 2, 2, i64::from(i) * 10, 10)).expect("in order");
    }
    // Batches 2..6 are retained, 0 and 1 are not.
    let dup = s.find_duplicate(&batch(7, 0, 4, 2, 99, 10)).expect("batch 2 retained");
    assert_eq!((dup.first_offset(), dup.last_offset), (20, 21));
    assert!(
        s.find_duplicate(&batch(7, 0, 2, 2, 99, 10)).is_none(),
        "batch 1 fell out"
    );
    // Same range in another epoch, or a different range, is not a duplicate.
    assert!(s.find_duplicate(&batch(7, 1, 4, 2, 99, 10)).is_none());
    assert!(s.find_duplicate(&batch(7, 0, 4, 1, 99, 10)).is_none());
    // A retry of a forgotten batch is out of sequence, as Kafka answers it.
    assert_eq!(
        client(&mut s, batch(7, 0, 2, 2, 99, 10)).expect_err("old").error_code(),
        ec::OUT_OF_ORDER_SEQUENCE_NUMBER
    );
}

#[test]
fn an_older_epoch_is_fenced_with_invalid_producer_epoch() {
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(7, 3, 0, 1, 0, 10)).expect("epoch 3");
    let e = client(&mut s, batch(7, 2, 1, 1, 1, 10)).expect_err("epoch 2");
    assert_eq!(e.error_code(), ec::INVALID_PRODUCER_EPOCH);
}

#[test]
fn a_bumped_epoch_starts_at_sequence_zero() {
    // KIP-360: an idempotent producer bumps its own epoch and restarts its sequences.
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(7, 0, 0, 10, 0, 10)).expect("epoch 0");
    let e = client(&mut s, batch(7, 1, 10, 1, 10, 10)).expect_err("not at 0");
    assert_eq!(e.error_code(), ec::OUT_OF_ORDER_SEQUENCE_NUMBER);
    client(&mut s, batch(7, 1, 0, 1, 10, 10)).expect("epoch 1 at 0");
    let entry = s.last_entry(7).expect("entry");
    assert_eq!(entry.producer_epoch, 1);
    assert_eq!(entry.batches().count(), 1, "a new epoch forgets the old batches");
}

#[test]
fn the_sequence_wraps_from_max_to_zero() {
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(7, 0, i32::MAX, 1, 0, 10)).expect("max");
    client(&mut s, batch(7, 0, 0, 1, 1, 10)).expect("wrapped");
}

#[test]
fn a_batch_without_sequence_is_an_invalid_record() {
    let mut s = ProducerStateManager::new(0);
    let mut b = batch(7, 0, 0, 1, 0, 10);
    b.first_seq = -1;
    assert_eq!(client(&mut s, b).expect_err("no seq").error_code(), ec::INVALID_RECORD);
}

#[test]
fn batches_of_one_append_are_checked_against_each_other() {
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(7, 0, 0, 2, 0, 10)).expect("known producer");
    let mut append = s.prepare(AppendOrigin::Client);
    append
        .append(&s, &batch(7, 0, 2, 2, 2, 10))
        .expect("continues the state");
    append
        .append(&s, &batch(7, 0, 4, 2, 4, 10))
        .expect("continues the first of the append");
    let gap = append
        .append(&s, &batch(7, 0, 9, 1, 6, 10))
        .expect_err("gap inside one append");
    assert_eq!(gap.error_code(), ec::OUT_OF_ORDER_SEQUENCE_NUMBER);
}

#[test]
fn replication_takes_batches_as_written() {
    let mut s = ProducerStateManager::new(0);
    s.replay(&batch(7, 3, 0, 1, 0, 10));
    s.replay(&batch(7, 2, 50, 1, 1, 10)); // older epoch, gap: a follower does not judge
    let e = s.last_entry(7).expect("entry");
    assert_eq!((e.producer_epoch, e.last_seq()), (2, 50));
    // ... and what it replicated is what it deduplicates as a new leader.
    assert!(s.find_duplicate(&batch(7, 2, 50, 1, 9, 10)).is_some());
}

#[test]
fn idle_producers_expire_after_the_expiration_time() {
    let mut s = ProducerStateManager::new(0);
    client(&mut s, batch(1, 0, 0, 1, 0, 1_000)).expect("p1");
    client(&mut s, batch(2, 0, 0, 1, 1, 5_000)).expect("p2");
    assert_eq!(s.remove_expired(10_999, 10_000), 0);
    assert_eq!(
        s.remove_expired(11_000, 10_000),
        1,
        "p1 idle for exactly the expiration"
    );
    assert!(s.last_entry(1).is_none() && s.last_entry(2).is_some());
    // Expired producers are accepted afresh at any sequence.
    client(&mut s, batch(1, 0, 77, 1, 2, 11_000)).expect("p1 again");
}

#[test]
fn snapshots_are_taken_only_for_new_offsets() {
    let mut s = ProducerStateManager::new(0);
    assert!(!s.needs_snapshot());
    client(&mut s, batch(1, 0, 0, 1, 0, 1)).expect("p1");
    assert!(s.needs_snapshot());
    s.snapshot_taken(s.map_end_offset());
    assert!(!s.needs_snapshot());
}

#[test]
fn a_loaded_snapshot_drops_expired_producers() {
    let live = ProducerStateEntry::from_snapshot(1, 0, None, 9_000, -1, None);
    let old = ProducerStateEntry::from_snapshot(2, 0, None, 1_000, -1, None);
    let s = ProducerStateManager::from_snapshot(vec![live, old], 40, 10_000, 5_000);
    assert_eq!(s.producer_count(), 1);
    assert_eq!(s.map_end_offset(), 40);
}

#[test]
fn first_sequence_of_a_wrapped_batch() {
    let b = BatchMetadata {
        last_seq: 1,
        last_offset: 10,
        offset_delta: 3,
        timestamp: 0,
    };
    assert_eq!(b.first_seq(), i32::MAX - 1);
    assert_eq!(b.first_offset(), 7);
}
