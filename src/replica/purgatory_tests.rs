//! The purgatory's decisions as pure functions of positions and statuses, and its watcher lists.

use super::*;

fn tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "t".into(),
        partition: p,
    }
}

fn watch(p: i32, bound: FetchBound, start: u64, already: u64, max_bytes: u64) -> FetchWatch {
    FetchWatch {
        tp: tp(p),
        bound,
        generation: 0,
        start_position: start,
        already,
        max_bytes,
    }
}

/// A produce's wait on `tp` for the HW to reach `required_offset`, appended in epoch 1.
fn waiting_for(tp: TopicPartition, required_offset: i64) -> ProduceWatch {
    ProduceWatch {
        tp,
        required_offset,
        leader_epoch: 1,
        outcome: None,
    }
}

fn leader(epoch: i32, hw: i64) -> ProduceStatus {
    ProduceStatus {
        leader_epoch: Some(epoch),
        high_watermark: hw,
        isr_below_min: false,
    }
}

#[test]
fn consumers_count_bytes_below_the_hw_followers_bytes_below_the_log_end() {
    let mut p = PartitionPositions::starting_at(0, 0, 0);
    p.on_append(10, 100, 0);
    assert_eq!(p.position(FetchBound::LogEnd), 100);
    assert_eq!(p.position(FetchBound::HighWatermark), 0, "not replicated yet");
    p.on_append(20, 50, 0);
    assert!(p.on_high_watermark(10));
    assert_eq!(p.position(FetchBound::HighWatermark), 100);
    assert!(!p.on_high_watermark(10), "not a move");
    assert!(p.on_high_watermark(20));
    assert_eq!(p.position(FetchBound::HighWatermark), 150);
    assert_eq!(p.generation, 0);
}

#[test]
fn appends_reported_out_of_order_land_at_their_offsets() {
    let mut p = PartitionPositions::starting_at(0, 0, 0);
    // Two concurrent appends: 10..20 reports before 0..10, and the HW already passed 10.
    p.on_append(20, 70, 10);
    assert_eq!(p.hw_bytes, 0);
    p.on_append(10, 30, 10);
    assert_eq!(p.hw_bytes, 30, "the first append is below the HW");
    p.on_high_watermark(20);
    assert_eq!((p.hw_bytes, p.end_bytes), (100, 100));
}

#[test]
fn bytes_below_the_log_end_at_reset_are_unknown_and_bump_the_generation() {
    // A new leader with an unreplicated tail 5..8: when the HW passes 5 nobody knows how many
    // bytes consumers can now see.
    let mut p = PartitionPositions::starting_at(5, 8, 3);
    assert!(p.on_high_watermark(6));
    assert_eq!(p.generation, 4);
    assert!(p.on_high_watermark(8));
    assert_eq!(p.generation, 5, "still unknown bytes");
    p.on_append(9, 10, 9);
    assert_eq!(p.generation, 5, "tracked from here on");
    assert_eq!(p.hw_bytes, 10);
}

#[test]
fn a_fetch_is_satisfied_by_min_bytes_capped_per_partition() {
    let mut a = PartitionPositions::starting_at(0, 0, 0);
    let b = PartitionPositions::starting_at(0, 0, 0);
    let wa = watch(0, FetchBound::HighWatermark, 0, 0, 1_000);
    let wb = watch(1, FetchBound::HighWatermark, 0, 0, 1_000);
    assert!(!fetch_satisfied(1, [(&wa, Some(&a)), (&wb, Some(&b))]));
    a.on_append(1, 40, 0);
    assert!(
        !fetch_satisfied(1, [(&wa, Some(&a))]),
        "above the HW: consumers cannot see it"
    );
    a.on_high_watermark(1);
    assert!(fetch_satisfied(1, [(&wa, Some(&a)), (&wb, Some(&b))]));
    assert!(!fetch_satisfied(50, [(&wa, Some(&a)), (&wb, Some(&b))]));
    // What the first read found counts too.
    let found = watch(1, FetchBound::HighWatermark, 0, 20, 1_000);
    assert!(fetch_satisfied(50, [(&wa, Some(&a)), (&found, Some(&b))]));
    // A partition contributes at most its partition_max_bytes (Kafka's DelayedFetch).
    let capped = watch(0, FetchBound::HighWatermark, 0, 0, 10);
    assert!(!fetch_satisfied(20, [(&capped, Some(&a))]));
    // A follower reads to the log end.
    let follower = watch(0, FetchBound::LogEnd, 0, 0, 1_000);
    a.on_append(2, 5, 1);
    assert!(fetch_satisfied(45, [(&follower, Some(&a))]));
    assert!(!fetch_satisfied(45, [(&wa, Some(&a))]));
}

#[test]
fn a_fetch_completes_when_its_partition_resets_or_goes() {
    let mut p = PartitionPositions::starting_at(0, 0, 0);
    let w = watch(0, FetchBound::HighWatermark, 0, 0, 1_000);
    assert!(!fetch_satisfied(1, [(&w, Some(&p))]));
    p.generation += 1;
    assert!(fetch_satisfied(1, [(&w, Some(&p))]));
    assert!(fetch_satisfied(1, [(&w, None)]));
}

#[test]
fn produce_outcomes_follow_kafkas_check_enough_replicas_reach_offset() {
    assert_eq!(produce_outcome(&leader(3, 9), 10, 3), None);
    assert_eq!(produce_outcome(&leader(3, 10), 10, 3), Some(Ok(())));
    let below = ProduceStatus {
        isr_below_min: true,
        ..leader(3, 9)
    };
    assert_eq!(
        produce_outcome(&below, 10, 3),
        Some(Err(ReplicaError::NotEnoughReplicasAfterAppend))
    );
    assert_eq!(
        produce_outcome(&leader(4, 20), 10, 3),
        Some(Err(ReplicaError::NotLeaderOrFollower)),
        "a new epoch, even as leader again"
    );
    let follower = ProduceStatus {
        leader_epoch: None,
        ..leader(3, 20)
    };
    assert_eq!(
        produce_outcome(&follower, 10, 3),
        Some(Err(ReplicaError::NotLeaderOrFollower))
    );
}

#[test]
fn an_append_checks_only_the_fetches_parked_on_its_partition() {
    let purgatory = std::sync::Arc::new(Purgatory::default());
    let mut waiting = Vec::new();
    for p in 0..3 {
        let at = purgatory.positions(&tp(p), || (0, 0));
        let w = FetchWatch {
            generation: at.generation,
            ..watch(
                p,
                FetchBound::HighWatermark,
                at.position(FetchBound::HighWatermark),
                0,
                1_000,
            )
        };
        waiting.push(purgatory.watch_fetch(1, vec![w]).expect("parked"));
    }
    assert_eq!(purgatory.delayed_fetches(), 3);
    purgatory.on_append(&tp(1), 1, 10, &leader(0, 1), 0);
    assert_eq!(
        purgatory.wake_counts(&tp(1)),
        WakeCounts {
            checked: 1,
            completed: 1
        }
    );
    assert_eq!(purgatory.wake_counts(&tp(0)), WakeCounts::default());
    assert_eq!(purgatory.wake_counts(&tp(2)), WakeCounts::default());
    assert_eq!(purgatory.delayed_fetches(), 2);
    let (_, rx1) = &mut waiting[1];
    assert!(rx1.try_recv().is_ok(), "woken");
    let (_, rx0) = &mut waiting[0];
    assert!(rx0.try_recv().is_err(), "still asleep");
    // Dropping a guard (expiry, or the request went away) takes the fetch out.
    waiting.clear();
    assert_eq!(purgatory.delayed_fetches(), 0);
}

#[test]
fn a_produce_completes_when_every_partition_is_decided() {
    let purgatory = std::sync::Arc::new(Purgatory::default());
    let parts = vec![waiting_for(tp(0), 5), waiting_for(tp(1), 7)];
    let (parked, mut rx) = purgatory.watch_produce(parts);
    purgatory.on_status(&tp(0), &leader(1, 5));
    assert!(rx.try_recv().is_err(), "partition 1 still pending");
    purgatory.on_status(&tp(2), &leader(1, 100));
    assert_eq!(purgatory.wake_counts(&tp(2)).checked, 0, "not watching 2");
    purgatory.on_removed(&tp(1));
    let outcomes = rx.try_recv().expect("completed");
    let codes: Vec<Option<Result<(), ReplicaError>>> = outcomes.iter().map(|w| w.outcome.clone()).collect();
    assert_eq!(codes, vec![Some(Ok(())), Some(Err(ReplicaError::NotLeaderOrFollower))]);
    assert_eq!(purgatory.take_produce(&parked), None, "already out");
    assert_eq!(purgatory.delayed_produces(), 0);
}

#[test]
fn an_expired_produce_keeps_what_was_decided() {
    let purgatory = std::sync::Arc::new(Purgatory::default());
    let parts = vec![waiting_for(tp(0), 5), waiting_for(tp(1), 5)];
    let (parked, _rx) = purgatory.watch_produce(parts);
    purgatory.on_status(&tp(0), &leader(1, 5));
    let left = purgatory.take_produce(&parked).expect("still parked");
    assert_eq!(left[0].outcome, Some(Ok(())));
    assert_eq!(left[1].outcome, None, "times out");
}
