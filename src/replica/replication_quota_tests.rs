//! The quota math mirrors Kafka's `Rate`/`SampledStat` (`windowSize` pads to `samples − 1`
//! whole samples) and `ReplicationQuotaManagerTest`; the list parsing mirrors
//! `TopicConfigHandler.parseThrottledPartitions` and `ThrottledReplicaListValidator`.
use std::collections::{BTreeMap, BTreeSet};

use super::*;

const MB: u64 = 1_000_000;

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

#[test]
fn throttled_replica_lists_name_this_brokers_partitions_or_every_replica() {
    let set = |ps: &[i32]| Some(Throttled::Partitions(ps.iter().copied().collect::<BTreeSet<_>>()));
    let cases: &[(&str, i32, Option<Throttled>)] = &[
        ("*", 7, Some(Throttled::All)),
        (" * ", 7, Some(Throttled::All)),
        ("0:101,0:102,1:101", 101, set(&[0, 1])),
        ("0:101,0:102,1:101", 102, set(&[0])),
        // Kafka's markThrottled(topic, Seq()) throttles nothing: the same as no list.
        ("0:101,0:102,1:101", 103, None),
        ("", 1, None),
        (" 0:1 , 2:1 ", 1, set(&[0, 2])),
        ("0:1,", 1, set(&[0])),
    ];
    for (value, broker, want) in cases {
        assert_eq!(
            parse_throttled_replicas(LEADER_THROTTLED_REPLICAS, value, BrokerId(*broker)).as_ref(),
            Ok(want),
            "{value:?} on broker {broker}"
        );
    }
}

#[test]
fn malformed_throttled_replica_lists_are_refused() {
    for value in ["0-1", "a:1", "0:b", "0:1:2", "*,0:1", "-1:1", "0 :1x"] {
        let got = parse_throttled_replicas(FOLLOWER_THROTTLED_REPLICAS, value, BrokerId(1));
        assert!(got.is_err(), "{value:?} gave {got:?}");
    }
    let e = parse_throttled_replicas(FOLLOWER_THROTTLED_REPLICAS, "0:1,x", BrokerId(1))
        .expect_err("an entry without a colon");
    assert_eq!(e.entry, "x");
    assert!(e
        .to_string()
        .starts_with("follower.replication.throttled.replicas must be the literal '*'"));
}

#[test]
fn only_listed_partitions_are_throttled() {
    // ReplicationQuotaManagerTest.shouldThrottleOnlyDefinedReplicas.
    let mut q = ReplicationQuotaManager::new(QuotaWindow::default(), Some(100));
    q.set_throttled("topic1", Some(Throttled::Partitions([1, 2, 3].into())));
    assert!(q.is_throttled(&tp("topic1", 1)));
    assert!(q.is_throttled(&tp("topic1", 3)));
    assert!(!q.is_throttled(&tp("topic1", 4)));
    assert!(!q.is_throttled(&tp("topic2", 1)));
    q.set_throttled("topic2", Some(Throttled::All));
    assert!(q.is_throttled(&tp("topic2", 99)));
    q.set_throttled("topic1", None);
    assert!(!q.is_throttled(&tp("topic1", 1)));
}

#[test]
fn an_unset_rate_is_never_exceeded() {
    let mut q = ReplicationQuotaManager::new(QuotaWindow::default(), None);
    q.set_throttled("t", Some(Throttled::All));
    q.record(u64::MAX / 2, 0);
    assert!(!q.is_quota_exceeded(0));
    assert!(!q.should_throttle(&tp("t", 0), false, 1));
}

#[test]
fn a_rate_is_measured_over_at_least_all_but_one_samples() {
    // 11 × 1 s: 50 MB at once is 5 MB/s (over the 10 padded seconds), not 50 MB/s.
    let mut q = ReplicationQuotaManager::new(QuotaWindow::default(), Some(5 * MB));
    assert!(!q.is_quota_exceeded(0), "nothing recorded yet");
    q.record(50 * MB, 0);
    assert_eq!(q.byte_rate(0), 5.0 * MB as f64);
    assert!(!q.is_quota_exceeded(0), "at the bound is not above it");
    q.record(1, 0);
    assert!(q.is_quota_exceeded(0));
    assert!(q.is_quota_exceeded(5_000));
    // Past 10 s the real elapsed time counts: 50 MB + 1 over 10.2 s is below 5 MB/s.
    assert!(!q.is_quota_exceeded(10_200));
    // After 11 s the sample left the window.
    assert_eq!(q.byte_rate(11_000), 0.0);
}

#[test]
fn an_idle_gap_does_not_inflate_the_rate() {
    // Kafka's windowSize: a record after a long silence is spread over the padded window.
    let mut r = SampledRate::new(QuotaWindow::default());
    r.record(1000.0, 0);
    assert_eq!(r.measure(100_000), 0.0, "purged");
    r.record(1000.0, 100_000);
    assert_eq!(r.measure(100_000), 100.0);
}

#[test]
fn the_bound_can_change_while_the_measurement_stays() {
    let mut q = ReplicationQuotaManager::new(QuotaWindow::default(), Some(MB));
    q.record(20 * MB, 0);
    assert!(q.is_quota_exceeded(0));
    q.update_quota(Some(10 * MB));
    assert!(!q.is_quota_exceeded(0));
    q.update_quota(None);
    assert!(!q.is_quota_exceeded(0));
}

/// A follower copying `total` bytes in `chunk`s, fetching every `poll_ms` unless throttled:
/// when the copy finishes, in ms.
fn copy_time(total: u64, chunk: u64, poll_ms: i64, bound: u64) -> i64 {
    let mut q = ReplicationQuotaManager::new(QuotaWindow::default(), Some(bound));
    q.set_throttled("t", Some(Throttled::All));
    let (mut copied, mut now) = (0, 0);
    while copied < total {
        if !q.should_throttle(&tp("t", 0), false, now) {
            let n = chunk.min(total - copied);
            q.record(n, now);
            copied += n;
        }
        now += poll_ms;
    }
    now
}

#[test]
fn sixty_megabytes_at_five_megabytes_a_second_take_about_eleven_seconds() {
    // The window lets 10 s worth through at once, then waits for that sample to leave it
    // (11 s): the figure the throttle integration test expects end to end.
    let ms = copy_time(60 * MB, MB, 10, 5 * MB);
    assert!((10_500..=12_500).contains(&ms), "{ms} ms");
    // Unthrottled nothing waits.
    assert_eq!(copy_time(60 * MB, MB, 10, u64::MAX), 600);
}

#[test]
fn a_long_copy_averages_the_bound() {
    let ms = copy_time(500 * MB, MB, 10, 5 * MB);
    let rate = (500 * MB) as f64 / (ms as f64 / 1000.0);
    assert!((4.5e6..=5.6e6).contains(&rate), "{rate} B/s over {ms} ms");
}

#[test]
fn in_sync_replicas_are_never_throttled() {
    let mut q = ReplicationQuotaManager::new(QuotaWindow::default(), Some(1));
    q.set_throttled("t", Some(Throttled::All));
    q.record(MB, 0);
    assert!(q.should_throttle(&tp("t", 0), false, 0));
    assert!(!q.should_throttle(&tp("t", 0), true, 0));
    assert!(!q.should_throttle(&tp("u", 0), false, 0), "not throttled here");
}

#[test]
fn topic_overrides_set_and_clear_both_sides() {
    let quotas = ReplicationQuotas::new(BrokerId(2), QuotaConfig::default());
    let overrides: BTreeMap<String, String> = [
        (LEADER_THROTTLED_REPLICAS.to_string(), "0:1".to_string()),
        (FOLLOWER_THROTTLED_REPLICAS.to_string(), "0:2,1:2".to_string()),
    ]
    .into();
    quotas.update_topic("t", &overrides);
    assert!(!quotas.leader().is_throttled(&tp("t", 0)), "leader list names broker 1");
    assert!(quotas.follower().is_throttled(&tp("t", 0)));
    assert!(quotas.follower().is_throttled(&tp("t", 1)));
    let broken: BTreeMap<String, String> = [(LEADER_THROTTLED_REPLICAS.to_string(), "x".to_string())].into();
    quotas.update_topic("t", &broken);
    assert!(!quotas.follower().is_throttled(&tp("t", 0)), "removed with the config");
    assert!(!quotas.leader().is_throttled(&tp("t", 0)));
    quotas.update_rates(Some(10), None);
    assert_eq!(quotas.leader().bound(), Some(10));
    assert_eq!(quotas.follower().bound(), None);
}

#[test]
fn a_follower_holds_back_only_throttled_partitions_it_has_not_caught_up_on() {
    // ReplicaFetcherThread.shouldFollowerThrottle: in sync = lag known and not positive.
    let quotas = ReplicationQuotas::new(
        BrokerId(2),
        QuotaConfig {
            follower_rate: Some(MB),
            ..QuotaConfig::default()
        },
    );
    quotas.update_topic(
        "t",
        &[(FOLLOWER_THROTTLED_REPLICAS.to_string(), "0:2".to_string())].into(),
    );
    assert!(
        !quotas.follower_should_throttle(&tp("t", 0), None, 0),
        "quota not exceeded yet"
    );
    quotas.follower().record(20 * MB, 0);
    for (partition, lag, throttled) in [
        (0, None, true),
        (0, Some(5), true),
        (0, Some(0), false),
        (1, None, false),
    ] {
        assert_eq!(
            quotas.follower_should_throttle(&tp("t", partition), lag, 0),
            throttled,
            "partition {partition}, lag {lag:?}"
        );
    }
    assert!(
        !quotas.leader().is_throttled(&tp("t", 0)),
        "the leader list is another config"
    );
}
