//! Replication throttles (KIP-73) end to end: `kastle reassign-partitions --execute --throttle`
//! against two broker processes and real ZooKeeper. ~60 MB on a one-replica partition of
//! broker 1 is copied to broker 2 at 5 MB/s: Kafka's quota window (11 × 1 s samples, the
//! rate over at least 10 s) lets 50 MB through at once and the rest once that sample leaves the
//! window, so the move takes ~11-12 s; the same move unthrottled (another topic) is at least 5×
//! faster. The configs `--execute` sets are checked in ZooKeeper while it moves, and gone once
//! `--verify` reports it complete; the byte-rate gauges and ReassignmentBytesIn/Out counters are
//! read from the brokers' Prometheus endpoints.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cluster::{self, sample, scrape};
use common::reassign::ok;
use common::{bootstrap_of, unique_chroot, wait_until_else, zookeeper, BrokerProcess};
use kastle::admin::perf_produce::{self, PerfProduceOptions};
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

const RATE: u64 = 5_000_000;
const RECORDS: u64 = 60_000;
const RECORD_SIZE: usize = 1_000;

fn logs(brokers: &[BrokerProcess]) -> String {
    brokers
        .iter()
        .enumerate()
        .map(|(i, b)| format!("--- broker {} stderr ---\n{}", i + 1, b.stderr()))
        .collect()
}

/// `/config/<kind>/<name>`'s `config` map (empty when the znode is absent).
async fn entity_config(zk: &ZkSession, kind: &str, name: &str) -> BTreeMap<String, String> {
    let Ok((data, _)) = zk.get_data(&format!("/config/{kind}/{name}")).await else {
        return BTreeMap::new();
    };
    let json: serde_json::Value = serde_json::from_slice(&data).expect("config json");
    json["config"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// A one-partition topic on broker 1 only, filled with ~60 MB.
async fn filled_topic(zk: &ZkSession, bootstrap: &str, prefix: &str) -> String {
    let topic = format!("{prefix}-{}", uuid::Uuid::new_v4().simple());
    cluster::create_topic_by_hand(zk, &topic, r#"{"0":[1]}"#).await;
    let report = perf_produce::run(&PerfProduceOptions {
        acks: 1,
        ..PerfProduceOptions::new(bootstrap, &topic, RECORDS, RECORD_SIZE)
    })
    .await
    .expect("produce");
    assert_eq!(report.records, RECORDS);
    topic
}

/// `--execute`s moving `topic` onto [1, 2] (with `extra`), then polls `--verify` until it says
/// complete: how long that took, and the last `--verify` output.
fn move_to_both(bootstrap: &str, plan_file: &str, extra: &[&str]) -> (Duration, String) {
    let started = Instant::now();
    let mut args = vec!["--execute", "--reassignment-json-file", plan_file];
    args.extend_from_slice(extra);
    let out = ok(bootstrap, &args);
    assert!(out.contains("Successfully started partition reassignment"), "{out}");
    loop {
        let out = ok(bootstrap, &["--verify", "--reassignment-json-file", plan_file]);
        if out.contains("is completed.") {
            return (started.elapsed(), out);
        }
        assert!(out.contains("is still in progress."), "{out}");
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "not done after 40 s: {out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_reassignment_moves_at_the_throttle_rate_and_verify_removes_the_throttle() {
    let chroot = unique_chroot("reassign_throttle");
    let metrics: Vec<String> = (0..2)
        .map(|_| format!("127.0.0.1:{}", common::zookeeper::free_port()))
        .collect();
    let brokers = cluster::start_with(&chroot, &[1, 2], |s| {
        let addr = metrics[(s.id - 1) as usize].clone();
        s.with("metrics.listener", &addr)
    });
    let zk = zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 2).await;
    let bootstrap = bootstrap_of(&zk, 1).await;
    let b = bootstrap.as_str();
    let files = tempfile::tempdir().expect("tempdir");
    let plan_of = |t: &str| {
        let path = files.path().join(format!("{t}.json"));
        let plan = format!(r#"{{"version":1,"partitions":[{{"topic":"{t}","partition":0,"replicas":[1,2]}}]}}"#);
        std::fs::write(&path, plan).expect("plan");
        path.display().to_string()
    };

    // Throttled at 5 MB/s.
    let slow = filled_topic(&zk, b, "throttled").await;
    let slow_plan = plan_of(&slow);
    let rate = RATE.to_string();
    let watch = {
        // While it moves: the configs --execute set, and broker 2's follower byte rate.
        let (zk, slow, metrics) = (zookeeper().session(&chroot).await, slow.clone(), metrics.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(4)).await;
            let topic = entity_config(&zk, "topics", &slow).await;
            let brokers = [
                entity_config(&zk, "brokers", "1").await,
                entity_config(&zk, "brokers", "2").await,
            ];
            let follower_rate = scrape(&metrics[1])
                .and_then(|body| sample(&body, "kafka_server_followerreplication_byte_rate"))
                .unwrap_or(0.0);
            (topic, brokers, follower_rate)
        })
    };
    let (throttled, out) = {
        let (b, plan, rate) = (bootstrap.clone(), slow_plan.clone(), rate.clone());
        tokio::task::spawn_blocking(move || move_to_both(&b, &plan, &["--throttle", &rate]))
            .await
            .expect("throttled move")
    };
    println!("throttled at {RATE} B/s: {RECORDS} x {RECORD_SIZE} B moved in {throttled:?}");
    assert!(out.contains("Clearing broker-level throttles on brokers 1,2"), "{out}");
    assert!(
        out.contains(&format!("Clearing topic-level throttles on topic {slow}")),
        "{out}"
    );
    let (topic_config, broker_configs, follower_rate) = watch.await.expect("watch");
    println!("broker 2's kafka_server_followerreplication_byte_rate 4 s in: {follower_rate:.0}");
    assert_eq!(
        topic_config
            .get("leader.replication.throttled.replicas")
            .map(String::as_str),
        Some("0:1")
    );
    assert_eq!(
        topic_config
            .get("follower.replication.throttled.replicas")
            .map(String::as_str),
        Some("0:2")
    );
    for config in &broker_configs {
        assert_eq!(
            config.get("leader.replication.throttled.rate"),
            Some(&rate),
            "{config:?}"
        );
        assert_eq!(
            config.get("follower.replication.throttled.rate"),
            Some(&rate),
            "{config:?}"
        );
    }
    assert!(
        (1e6..2e7).contains(&follower_rate),
        "broker 2's follower byte rate mid-move: {follower_rate}"
    );
    // Kafka's figure is ~12 s (the window's 11 s plus the move's own steps); a loaded two-core
    // box stretches it.
    assert!(
        (Duration::from_secs(8)..Duration::from_secs(20)).contains(&throttled),
        "throttled move took {throttled:?}\n{}",
        logs(&brokers)
    );
    // --verify removed every throttle config.
    let topic_config = entity_config(&zk, "topics", &slow).await;
    assert!(
        !topic_config.keys().any(|k| k.contains("throttled")),
        "{topic_config:?}"
    );
    for id in ["1", "2"] {
        let config = entity_config(&zk, "brokers", id).await;
        assert!(
            !config.keys().any(|k| k.contains("throttled")),
            "broker {id}: {config:?}"
        );
    }
    let bytes = RECORDS * RECORD_SIZE as u64;
    let counter = |i: usize, name: &str| scrape(&metrics[i]).and_then(|body| sample(&body, name)).unwrap_or(0.0);
    wait_until_else(
        Duration::from_secs(10),
        "the reassignment byte counters",
        || async {
            counter(0, "kafka_server_brokertopicmetrics_reassignmentbytesout_total") >= bytes as f64
                && counter(1, "kafka_server_brokertopicmetrics_reassignmentbytesin_total") >= bytes as f64
        },
        || logs(&brokers),
    )
    .await;

    // The same move unthrottled.
    let fast = filled_topic(&zk, b, "unthrottled").await;
    let fast_plan = plan_of(&fast);
    let (unthrottled, _) = {
        let (b, plan) = (bootstrap.clone(), fast_plan.clone());
        tokio::task::spawn_blocking(move || move_to_both(&b, &plan, &[]))
            .await
            .expect("unthrottled move")
    };
    println!(
        "unthrottled: moved in {unthrottled:?} ({:.1}x faster)",
        throttled.as_secs_f64() / unthrottled.as_secs_f64()
    );
    assert!(
        unthrottled * 5 <= throttled,
        "unthrottled {unthrottled:?} vs throttled {throttled:?}"
    );
    let metadata = cluster::metadata(&zk, 1).await;
    for t in [&slow, &fast] {
        let (_, replicas, isr) = cluster::partition_in(&metadata, t, 0).expect("partition");
        assert_eq!((replicas.len(), isr.len()), (2, 2), "{t}");
    }
}
