//! Unmodified clients against a broker, with the test acting as the controller: kcat (Debian's,
//! librdkafka 2.0.2) lists metadata and round-trips 10,000 keyed records with headers under
//! each compression codec; kafka-python 3.x (opening with ApiVersions v4, KIP-511) and
//! confluent-kafka produce with acks 0/1/all and consume by assign+seek, getting back exactly
//! what they sent; a confluent-kafka consumer whose leader epoch is ahead of the leader's
//! (UNKNOWN_LEADER_EPOCH) retries and then consumes.

mod common;

use std::process::{Command, Stdio};

use common::replicas::produce_request;
use common::wire::{act_as_controller, send_leader_and_isr, send_update_metadata, TestTopic, Wire};
use common::{unique_chroot, wait_until, zookeeper, BrokerSpec};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId as KpBrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kastle::config::KafkaConfig;
use kastle::protocol::error_codes as ec;
use kastle::server::{Broker, BrokerHandle};

async fn cluster(test: &str, topics: &[&str], partitions: i32) -> (BrokerHandle, String, tempfile::TempDir) {
    common::init_logging();
    let chroot = unique_chroot(test);
    let dir = tempfile::tempdir().expect("tempdir");
    let pairs = BrokerSpec::new(1, &zookeeper().connect(&chroot)).pairs(dir.path());
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let port = broker.advertised_endpoints()[0].port;
    let addr = format!("127.0.0.1:{port}");
    let test_topics: Vec<TestTopic> = topics
        .iter()
        .map(|t| TestTopic {
            name: t.to_string(),
            id: uuid::Uuid::new_v4(),
            partitions: (0..partitions).map(|p| (p, 1, vec![1])).collect(),
        })
        .collect();
    act_as_controller(
        &addr,
        broker.broker_epoch().0,
        &[(1, "127.0.0.1".into(), i32::from(port))],
        &test_topics,
        1,
    )
    .await;
    (broker, addr, dir)
}

fn run(cmd: &mut Command, input: Option<&str>) -> String {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(text) = input {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_lists_metadata_and_round_trips_keyed_records_with_headers_under_every_codec() {
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    let topics: Vec<String> = codecs.iter().map(|c| format!("kcat-{c}")).collect();
    let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
    let (broker, addr, _dir) = cluster("kcat", &refs, 1).await;
    let listing = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || run(Command::new("kcat").args(["-b", &addr, "-L", "-J"]), None)
    })
    .await
    .expect("kcat -L");
    let json: serde_json::Value = serde_json::from_str(&listing).expect("kcat -L -J prints JSON");
    assert_eq!(json["brokers"][0]["id"], 1);
    assert_eq!(json["topics"].as_array().expect("topics").len(), codecs.len());

    let input: String = (0..10_000)
        .map(|i| format!("key-{i}:value-{i}-{}\n", "x".repeat(i % 50)))
        .collect();
    for (codec, topic) in codecs.iter().zip(&topics) {
        let (addr, topic, sent, codec_name) = (addr.clone(), topic.clone(), input.clone(), codec.to_string());
        let consumed = tokio::task::spawn_blocking(move || {
            run(
                Command::new("kcat").args([
                    "-P",
                    "-b",
                    &addr,
                    "-t",
                    &topic,
                    "-K",
                    ":",
                    "-z",
                    &codec_name,
                    "-H",
                    "source=kastle-test",
                ]),
                Some(&sent),
            );
            run(
                Command::new("kcat").args([
                    "-C",
                    "-b",
                    &addr,
                    "-t",
                    &topic,
                    "-o",
                    "beginning",
                    "-e",
                    "-f",
                    "%k:%s|%h\n",
                ]),
                None,
            )
        })
        .await
        .expect("kcat");
        let expected: String = input.lines().map(|l| format!("{l}|source=kastle-test\n")).collect();
        assert_eq!(consumed.lines().count(), 10_000, "{codec}: all records back");
        assert!(
            consumed == expected,
            "{codec}: records, keys, headers and order identical"
        );
    }
    broker.shutdown().await.expect("shutdown");
}

const KAFKA_PYTHON: &str = r#"
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
addr, topic = sys.argv[1], sys.argv[2]
sent = []
for acks in (0, 1, 'all'):
    p = KafkaProducer(bootstrap_servers=addr, acks=acks, enable_idempotence=False, linger_ms=5)
    for i in range(200):
        key, value = f"k{acks}-{i}".encode(), f"v{acks}-{i}".encode()
        headers = [("h", f"{i}".encode())]
        p.send(topic, key=key, value=value, headers=headers, partition=0, timestamp_ms=1700000000000 + i).get(timeout=30) if acks != 0 else p.send(topic, key=key, value=value, headers=headers, partition=0, timestamp_ms=1700000000000 + i)
        sent.append((key, value, headers, 1700000000000 + i))
    p.flush(); p.close()
c = KafkaConsumer(bootstrap_servers=addr, enable_auto_commit=False, consumer_timeout_ms=10000)
tp = TopicPartition(topic, 0)
c.assign([tp]); c.seek(tp, 0)
got = []
for m in c:
    got.append((m.key, m.value, [(k, v) for k, v in m.headers], m.timestamp))
    if len(got) == len(sent): break
assert got == sent, (len(got), len(sent), got[:3], sent[:3])
print("ok", len(got))
"#;

const CONFLUENT_KAFKA: &str = r#"
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
addr, topic = sys.argv[1], sys.argv[2]
sent = []
for acks in ("0", "1", "all"):
    p = Producer({"bootstrap.servers": addr, "acks": acks, "linger.ms": 5})
    for i in range(200):
        key, value = f"k{acks}-{i}".encode(), f"v{acks}-{i}".encode()
        headers = [("h", f"{i}".encode())]
        p.produce(topic, key=key, value=value, headers=headers, partition=0, timestamp=1700000000000 + i)
        sent.append((key, value, headers, 1700000000000 + i))
    assert p.flush(30) == 0
c = Consumer({"bootstrap.servers": addr, "group.id": "unused", "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, 0)])
got = []
while len(got) < len(sent):
    m = c.poll(10)
    assert m is not None, f"timed out after {len(got)} records"
    assert m.error() is None, m.error()
    got.append((m.key(), m.value(), m.headers(), m.timestamp()[1]))
c.close()
assert got == sent, (len(got), got[:3], sent[:3])
print("ok", len(got))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_and_confluent_kafka_produce_with_every_acks_and_consume_what_they_sent() {
    let (broker, addr, _dir) = cluster("pyclients", &["kp", "ck"], 1).await;
    let py = common::python();
    for (script, topic) in [(KAFKA_PYTHON, "kp"), (CONFLUENT_KAFKA, "ck")] {
        let (py, addr) = (py.clone(), addr.clone());
        let out = tokio::task::spawn_blocking(move || run(Command::new(py).args(["-c", script, &addr, topic]), None))
            .await
            .expect("python client");
        assert_eq!(out.trim(), "ok 600", "{topic}");
    }
    broker.shutdown().await.expect("shutdown");
}

/// Consumes `want` records of partition 0 from offset 0 and prints JSON: how many it got, the
/// fetch errors librdkafka handled itself (its `fetch` debug log names them) and the errors it
/// passed to the application. Touches `marker` at the first failed fetch.
const AHEAD_OF_THE_LEADER: &str = r#"
import json, logging, re, sys, time
from confluent_kafka import Consumer, TopicPartition
addr, topic, marker, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fetch_errors = []
class FetchErrors(logging.Handler):
    def emit(self, record):
        failed = re.search(r"Fetch failed at .*: ([A-Z_]+)$", record.getMessage().strip())
        if failed:
            fetch_errors.append(failed.group(1))
            open(marker, "a").close()
log = logging.getLogger("rdkafka")
log.addHandler(FetchErrors())
log.setLevel(logging.DEBUG)
c = Consumer({"bootstrap.servers": addr, "group.id": "unused", "enable.auto.commit": False,
              "debug": "fetch", "fetch.error.backoff.ms": 100}, logger=log)
c.assign([TopicPartition(topic, 0, 0)])
got, app_errors, deadline = 0, [], time.time() + 30
while got < want and time.time() < deadline:
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error() is not None:
        app_errors.append(m.error().name())
    else:
        got += 1
c.close()
print(json.dumps({"consumed": got, "fetch_errors": sorted(set(fetch_errors)), "app_errors": app_errors}))
"#;

/// A child process killed when the test ends, also by a panic.
struct Reaped(Option<std::process::Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The leader is at epoch 1 while the metadata (UpdateMetadata, as a controller sends it
/// before the leader has applied its LeaderAndIsr) already says 2: the client fetches with 2 and
/// gets UNKNOWN_LEADER_EPOCH, which librdkafka retries without telling the application; once
/// the LeaderAndIsr for epoch 2 arrives it gets its records. Answered with 76
/// (UNSUPPORTED_COMPRESSION_TYPE), the same fetch surfaces as an application error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confluent_kafka_consumer_ahead_of_the_leaders_epoch_retries_and_then_consumes() {
    let (broker, addr, dir) = cluster("ahead", &[], 1).await;
    let port = i32::from(broker.advertised_endpoints()[0].port);
    let brokers = [(1, "127.0.0.1".to_owned(), port)];
    let topic = [TestTopic {
        name: "ahead".into(),
        id: uuid::Uuid::new_v4(),
        partitions: vec![(0, 1, vec![1])],
    }];
    let epoch = broker.broker_epoch().0;
    act_as_controller(&addr, epoch, &brokers, &topic, 1).await;
    let mut wire = Wire::connect(&addr).await;
    for i in 0..20 {
        let r = wire
            .send(&produce_request("ahead", 1, format!("v{i}").as_bytes()), 7)
            .await;
        assert_eq!(r.responses[0].partition_responses[0].error_code, ec::NONE);
    }
    send_update_metadata(&addr, epoch, &brokers, &topic, 2).await;
    let ahead = FetchRequest::default()
        .with_replica_id(KpBrokerId(-1))
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str("ahead")))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(2)
                .with_partition_max_bytes(1 << 20)])]);
    let r = wire.send(&ahead, 12).await;
    assert_eq!(r.responses[0].partitions[0].error_code, ec::UNKNOWN_LEADER_EPOCH);

    let marker = dir.path().join("fetch-failed");
    let stderr = std::fs::File::create(dir.path().join("consumer.err")).expect("stderr file");
    let child = Command::new(common::python())
        .args(["-c", AHEAD_OF_THE_LEADER, &addr, "ahead"])
        .arg(&marker)
        .arg("20")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn the consumer");
    let mut child = Reaped(Some(child));
    wait_until(
        std::time::Duration::from_secs(20),
        "the consumer's first failed fetch",
        || async { marker.exists() },
    )
    .await;
    send_leader_and_isr(&addr, epoch, 1, &topic, 2).await;
    let out = tokio::task::spawn_blocking(move || child.0.take().expect("child").wait_with_output())
        .await
        .expect("join")
        .expect("consumer output");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "consumer printed no report ({e}): {}",
            std::fs::read_to_string(dir.path().join("consumer.err")).unwrap_or_default()
        )
    });
    assert_eq!(
        report["fetch_errors"],
        serde_json::json!(["UNKNOWN_LEADER_EPOCH"]),
        "{report}"
    );
    assert_eq!(
        report["app_errors"],
        serde_json::json!([]),
        "retried, not reported: {report}"
    );
    assert_eq!(report["consumed"], 20, "{report}");
    broker.shutdown().await.expect("shutdown");
}
