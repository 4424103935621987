//! `kastle perf produce` / `perf consume` against an in-process broker (the test acts as the
//! controller for topic `perf`): the library reports exactly the records it sent and read, under
//! compression and pacing; refused batches are counted per error code; a consumer that runs out
//! of records stops after its timeout; the CLI prints Kafka's perf-test lines; and, with the
//! broker's own controller instead, producing to a new topic creates it and waits for its leader.

mod common;

use std::time::Duration;

use common::wire::{act_as_controller, TestTopic};
use common::{unique_chroot, zookeeper, BrokerSpec};
use kastle::admin::perf_consume::{self, PerfConsumeOptions, PerfError};
use kastle::admin::perf_produce::{self, PerfCompression, PerfProduceOptions};
use kastle::config::KafkaConfig;
use kastle::server::{Broker, BrokerHandle};

async fn broker_with_perf_topic(test: &str) -> (BrokerHandle, String, tempfile::TempDir) {
    common::init_logging();
    let dir = tempfile::tempdir().expect("tempdir");
    let pairs = BrokerSpec::new(1, &zookeeper().connect(&unique_chroot(test))).pairs(dir.path());
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let port = broker.advertised_endpoints()[0].port;
    let addr = format!("127.0.0.1:{port}");
    let topic = TestTopic {
        name: "perf".into(),
        id: uuid::Uuid::new_v4(),
        partitions: vec![(0, 1, vec![1])],
    };
    act_as_controller(
        &addr,
        broker.broker_epoch().0,
        &[(1, "127.0.0.1".into(), i32::from(port))],
        &[topic],
        1,
    )
    .await;
    (broker, addr, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produced_records_are_all_acknowledged_and_read_back() {
    let (broker, addr, _dir) = broker_with_perf_topic("perf-lib").await;
    let plain = perf_produce::run(&PerfProduceOptions::new(&addr, "perf", 20_000, 100))
        .await
        .expect("produce");
    println!("{plain}");
    assert_eq!(
        (plain.records, plain.failed_records, plain.bytes),
        (20_000, 0, 2_000_000)
    );
    assert_eq!(
        plain.requests,
        20_000u64.div_ceil(147),
        "147 records of 100 bytes fill a 16 KiB batch"
    );
    assert!(plain.latency_max_ms >= plain.p999 && plain.p999 >= plain.p50 && plain.p50 > 0.0);

    let paced = PerfProduceOptions {
        acks: 1,
        compression: PerfCompression::Lz4,
        throughput: Some(10_000.0),
        ..PerfProduceOptions::new(&addr, "perf", 3_000, 200)
    };
    let paced = perf_produce::run(&paced).await.expect("paced produce");
    println!("{paced}");
    assert_eq!((paced.records, paced.failed_records), (3_000, 0));
    // 10,000 records/s: 3,000 records take at least 0.3 s, sent 10 at a time.
    assert!(paced.elapsed >= Duration::from_millis(290), "{:?}", paced.elapsed);
    assert_eq!(paced.requests, 300);

    let consumed = perf_consume::run(&PerfConsumeOptions::new(&addr, "perf", 23_000))
        .await
        .expect("consume");
    println!("{consumed}");
    assert_eq!(
        (consumed.records, consumed.next_offset, consumed.timed_out),
        (23_000, 23_000, false)
    );
    assert!(consumed.fetch_requests >= 2, "2 MB of 1 MiB fetches");

    // Asking for more than there is: the consumer reads what exists, then gives up.
    let short = PerfConsumeOptions {
        from_offset: 22_990,
        timeout: Duration::from_millis(1_200),
        ..PerfConsumeOptions::new(&addr, "perf", 100)
    };
    let short = perf_consume::run(&short).await.expect("consume to the end");
    assert_eq!((short.records, short.next_offset, short.timed_out), (10, 23_000, true));
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_batches_are_counted_by_error_code_not_as_sent() {
    let (broker, addr, _dir) = broker_with_perf_topic("perf-refused").await;
    // One record per batch, each above message.max.bytes (1,048,588).
    let too_large = PerfProduceOptions::new(&addr, "perf", 3, 1_100_000);
    let report = perf_produce::run(&too_large)
        .await
        .expect("a refused batch is not a run failure");
    assert_eq!((report.records, report.failed_records), (0, 3));
    assert_eq!(report.errors.get(&10), Some(&3), "MESSAGE_TOO_LARGE");
    assert!(
        report.to_string().contains("3 records failed: 3 with error code 10"),
        "{report}"
    );
    let unknown = PerfProduceOptions {
        connect_timeout: Duration::from_millis(500),
        ..PerfProduceOptions::new(&addr, "nosuch", 1, 10)
    };
    let unknown = perf_produce::run(&unknown).await;
    assert!(matches!(unknown, Err(PerfError::NoLeader { .. })), "{unknown:?}");
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_kafka_perf_test_lines() {
    let (broker, addr, _dir) = broker_with_perf_topic("perf-cli").await;
    let kastle = env!("CARGO_BIN_EXE_kastle");
    let run = |args: Vec<&str>| {
        let mut cmd = tokio::process::Command::new(kastle);
        cmd.args(args).env("KASTLE_LOG", "warn");
        async move { cmd.output().await.expect("run kastle") }
    };
    let produce = run(vec![
        "perf",
        "produce",
        "--bootstrap",
        &addr,
        "--topic",
        "perf",
        "--records",
        "5000",
        "--record-size",
        "64",
        "--compression",
        "zstd",
        "--acks",
        "-1",
        "--throughput",
        "-1",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&produce.stdout);
    assert!(
        produce.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&produce.stderr)
    );
    assert!(stdout.starts_with("5000 records sent, "), "{stdout}");
    assert!(stdout.contains(" ms 99.9th."), "{stdout}");

    let consume = run(vec![
        "perf",
        "consume",
        "--bootstrap",
        &addr,
        "--topic",
        "perf",
        "--records",
        "5000",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&consume.stdout);
    assert!(
        consume.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&consume.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], perf_consume::PerfConsumeReport::HEADER);
    assert_eq!(lines[1].split(", ").nth(2), Some("5000"), "{stdout}");

    let bad = run(vec![
        "perf",
        "produce",
        "--bootstrap",
        &addr,
        "--topic",
        "perf",
        "--records",
        "1",
        "--record-size",
        "1",
        "--acks",
        "2",
    ])
    .await;
    assert_eq!(bad.status.code(), Some(1), "invalid --acks is refused");
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producing_to_a_new_topic_creates_it_and_waits_for_its_leader() {
    common::init_logging();
    let dir = tempfile::tempdir().expect("tempdir");
    let pairs = BrokerSpec::new(1, &zookeeper().connect(&unique_chroot("perf-auto"))).pairs(dir.path());
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let addr = format!("127.0.0.1:{}", broker.advertised_endpoints()[0].port);
    let report = perf_produce::run(&PerfProduceOptions::new(&addr, "fresh", 1_000, 10))
        .await
        .expect("produce to a new topic");
    assert_eq!((report.records, report.failed_records), (1_000, 0), "{report}");
    let consumed = perf_consume::run(&PerfConsumeOptions::new(&addr, "fresh", 1_000))
        .await
        .expect("consume");
    assert_eq!(consumed.records, 1_000);
    broker.shutdown().await.expect("shutdown");
}
