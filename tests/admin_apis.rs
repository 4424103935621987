//! DescribeCluster and DeleteRecords against real ZooKeeper and broker processes, through the
//! clients' admin APIs: confluent-kafka's `describe_cluster` / `delete_records` and
//! kafka-python's `describe_cluster`. DeleteRecords moves the log start offset on the leader
//! and every follower (consumers from the beginning start there on whichever replica leads,
//! also after every broker restarted), answers the low watermark, refuses offsets past the
//! high watermark, and retention then deletes the segments below the new start. Topic overrides
//! act on produced batches: `compression.type` re-codes them, `message.timestamp.type`
//! LogAppendTime stamps the broker's time, `message.timestamp.before.max.ms` refuses old
//! records, `max.message.bytes` large batches.

mod common;

use std::path::Path;
use std::time::Duration;

use common::cluster::cluster_ready;
use common::replicas::{bootstrap, create_topic, isr, leader, python, spec, stored_batches};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{DescribeClusterRequest, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;
use kastle::zk::store::ZkStore;

/// Runs a Python script, panicking with its stderr unless it succeeds; returns stdout.
fn run_python(script: &str, args: &[&str]) -> String {
    let mut all = vec!["-c", script];
    all.extend_from_slice(args);
    let out = python(&all).output().expect("python");
    assert!(
        out.status.success(),
        "python failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn python_async(script: &'static str, args: Vec<String>) -> String {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_python(script, &args)
    })
    .await
    .expect("join")
}

const CONFLUENT_DESCRIBE_CLUSTER: &str = r#"
import sys, json
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
d = a.describe_cluster(include_authorized_operations=True, request_timeout=30).result()
print(json.dumps({"cluster_id": d.cluster_id,
                  "controller": d.controller.id if d.controller else None,
                  "nodes": sorted([[n.id, n.host, n.port, n.rack] for n in d.nodes]),
                  "ops": sorted(o.name for o in (d.authorized_operations or []))}))
"#;

const KAFKA_PYTHON_DESCRIBE_CLUSTER: &str = r#"
import sys, json
from kafka import KafkaAdminClient
from kafka.protocol.admin import DescribeClusterRequest
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=30000)
m = a.describe_cluster()
print(json.dumps({"cluster_id": m["cluster_id"], "controller": m["controller_id"],
                  "brokers": sorted([[b["broker_id"], b["host"], b["port"], b["rack"]] for b in m["brokers"]]),
                  "keys": sorted(m.keys())}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_cluster_lists_the_brokers_racks_controller_and_cluster_id() {
    let chroot = unique_chroot("describe-cluster");
    let specs: Vec<BrokerSpec> = (1..=2)
        .map(|id| spec(&chroot, id, &[("broker.rack", &format!("rack-{id}"))]))
        .collect();
    let _brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    let boot = bootstrap_of(&zk, 1).await;
    let (data, _) = zk.get_data("/cluster/id").await.expect("cluster id");
    let cluster_id: serde_json::Value = serde_json::from_slice(&data).expect("json");
    let controller = common::cluster::controller_of(&zk).await.expect("controller");
    let mut expected_nodes = Vec::new();
    for id in 1..=2 {
        let addr = bootstrap_of(&zk, id).await;
        let (host, port) = addr.rsplit_once(':').expect("host:port");
        expected_nodes.push(serde_json::json!([
            id,
            host,
            port.parse::<i32>().expect("port"),
            format!("rack-{id}")
        ]));
    }
    // Every broker knows both once the controller's UpdateMetadata reached them.
    wait_until(Duration::from_secs(30), "both brokers described", || {
        let boot = boot.clone();
        async move {
            let out = python_async(CONFLUENT_DESCRIBE_CLUSTER, vec![boot]).await;
            let v: serde_json::Value = serde_json::from_str(&out).expect("json");
            v["nodes"].as_array().is_some_and(|n| n.len() == 2)
        }
    })
    .await;
    let out = python_async(CONFLUENT_DESCRIBE_CLUSTER, vec![boot.clone()]).await;
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["cluster_id"], cluster_id["id"], "{out}");
    assert_eq!(v["controller"], controller, "{out}");
    assert_eq!(v["nodes"], serde_json::Value::Array(expected_nodes.clone()), "{out}");
    // No authorizer: every cluster operation is allowed, as Kafka answers without one.
    for op in [
        "ALTER",
        "ALTER_CONFIGS",
        "CLUSTER_ACTION",
        "CREATE",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
        "IDEMPOTENT_WRITE",
    ] {
        assert!(
            v["ops"].as_array().is_some_and(|ops| ops.iter().any(|o| o == op)),
            "{op} missing: {out}"
        );
    }
    // The clients fall back to Metadata where DescribeCluster is not served: ask on the wire too.
    let mut wire = Wire::connect(&boot).await;
    for version in 0..=1 {
        let r = wire.send(&DescribeClusterRequest::default(), version).await;
        assert_eq!((r.error_code, r.controller_id.0), (0, controller), "v{version}");
        assert_eq!(r.cluster_id.as_str(), cluster_id["id"].as_str().unwrap_or_default());
        let racks: Vec<Option<String>> = r
            .brokers
            .iter()
            .map(|b| b.rack.as_deref().map(str::to_string))
            .collect();
        assert_eq!(racks.len(), 2, "v{version}");
        assert!(racks.iter().all(Option::is_some), "{racks:?}");
    }
    let controllers = DescribeClusterRequest::default().with_endpoint_type(2);
    let r = wire.send(&controllers, 1).await;
    assert_eq!(r.error_code, ec::MISMATCHED_ENDPOINT_TYPE);
    let out = python_async(KAFKA_PYTHON_DESCRIBE_CLUSTER, vec![boot]).await;
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["cluster_id"], cluster_id["id"], "{out}");
    assert_eq!(v["controller"], controller, "{out}");
    assert_eq!(v["brokers"], serde_json::Value::Array(expected_nodes), "{out}");
    zk.close().await;
}

/// One record per batch (a flush after each), values 0..count.
const PRODUCE_ONE_BY_ONE: &str = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all", "linger.ms": 0})
for i in range(int(sys.argv[3])):
    p.produce(sys.argv[2], str(i).encode(), partition=0)
    if p.flush(30) != 0:
        sys.exit("not delivered")
"#;

/// confluent-kafka `delete_records` below `argv[3]` on partition 0: prints the low watermark,
/// or the error's name.
const DELETE_RECORDS: &str = r#"
import sys
from confluent_kafka import TopicPartition, KafkaException
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
futures = a.delete_records([TopicPartition(sys.argv[2], 0, int(sys.argv[3]))],
                           operation_timeout=20, request_timeout=30)
try:
    print(list(futures.values())[0].result().low_watermark)
except KafkaException as e:
    print(e.args[0].name())
"#;

/// The offset and value of the first record a consumer from the beginning gets.
const FIRST_FROM_BEGINNING: &str = r#"
import sys, uuid, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "first-" + uuid.uuid4().hex,
              "enable.auto.commit": False, "auto.offset.reset": "earliest"})
c.assign([TopicPartition(sys.argv[2], 0, OFFSET_BEGINNING)])
deadline = time.time() + 30
while time.time() < deadline:
    m = c.poll(1)
    if m is None or m.error():
        continue
    print(m.offset(), m.value().decode())
    break
c.close()
"#;

/// ListOffsets earliest (-2) from broker `addr` as a consumer: its log start, if it leads.
async fn earliest(addr: &str, topic: &str) -> Option<i64> {
    let mut wire = Wire::try_connect(addr, Duration::from_secs(5)).await?;
    let request = ListOffsetsRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-2)])]);
    let response = wire.try_send(&request, 4, Duration::from_secs(10)).await?;
    let p = response.topics.first()?.partitions.first()?;
    (p.error_code == 0).then_some(p.offset)
}

/// The log start offset `log-start-offset-checkpoint` in `log_dir` holds for `topic-0`.
fn checkpointed_log_start(log_dir: &Path, topic: &str) -> Option<i64> {
    let text = std::fs::read_to_string(log_dir.join("log-start-offset-checkpoint")).ok()?;
    text.lines().skip(2).find_map(|line| {
        let mut parts = line.split_whitespace();
        let (t, p, offset) = (parts.next()?, parts.next()?, parts.next()?);
        (t == topic && p == "0").then(|| offset.parse().ok()).flatten()
    })
}

async fn first_from_beginning(zk: &kastle::zk::ZkSession, topic: &str) -> String {
    python_async(FIRST_FROM_BEGINNING, vec![bootstrap(zk).await, topic.to_string()]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_moves_the_log_start_on_every_replica_and_it_survives_restarts() {
    const TOPIC: &str = "purged";
    let chroot = unique_chroot("delete-records");
    let extra = [
        ("log.segment.bytes", "1024"),
        ("log.retention.check.interval.ms", "300"),
    ];
    let specs: Vec<BrokerSpec> = (1..=3).map(|id| spec(&chroot, id, &extra)).collect();
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    create_topic(&zk, TOPIC, "[1,2,3]").await;
    let boot = bootstrap(&zk).await;
    python_async(PRODUCE_ONE_BY_ONE, vec![boot.clone(), TOPIC.into(), "100".into()]).await;
    wait_until(Duration::from_secs(30), "the ISR is full", || async {
        isr(&zk, TOPIC).await == [1, 2, 3]
    })
    .await;

    // The low watermark comes back once every replica's log start reached 40.
    let answer = python_async(DELETE_RECORDS, vec![boot.clone(), TOPIC.into(), "40".into()]).await;
    assert_eq!(answer, "40");
    let answer = python_async(DELETE_RECORDS, vec![boot.clone(), TOPIC.into(), "1000".into()]).await;
    assert_eq!(answer, "OFFSET_OUT_OF_RANGE");
    assert_eq!(first_from_beginning(&zk, TOPIC).await, "40 40");
    let first_leader = leader(&zk, TOPIC).await;
    assert_eq!(earliest(&bootstrap_of(&zk, first_leader).await, TOPIC).await, Some(40));

    // Retention deletes the segments wholly below the new start, on every replica.
    let dirs: Vec<_> = brokers.iter().map(|b| b.log_dir.clone()).collect();
    wait_until(
        Duration::from_secs(30),
        "segments below offset 40 deleted everywhere",
        || {
            let dirs = dirs.clone();
            async move {
                dirs.iter().all(|d| {
                    stored_batches(d, TOPIC, 0)
                        .first()
                        .is_some_and(|b| b.base_offset > 0 && b.base_offset <= 40)
                })
            }
        },
    )
    .await;

    // A follower took the start: led by it, consumers from the beginning still start at 40.
    let i = (first_leader - 1) as usize;
    brokers[i].signal("TERM");
    brokers[i].wait_exit(Duration::from_secs(30)).await;
    wait_until(Duration::from_secs(30), "a follower leads", || async {
        let l = leader(&zk, TOPIC).await;
        l >= 0 && l != first_leader
    })
    .await;
    let second_leader = leader(&zk, TOPIC).await;
    assert_eq!(earliest(&bootstrap_of(&zk, second_leader).await, TOPIC).await, Some(40));
    assert_eq!(first_from_beginning(&zk, TOPIC).await, "40 40");

    // Every broker stops and starts again: the start comes back from the checkpoints.
    for b in brokers.iter_mut() {
        if !b.has_exited() {
            b.signal("TERM");
        }
    }
    for b in brokers.iter_mut() {
        b.wait_exit(Duration::from_secs(30)).await;
    }
    for b in &brokers {
        // Kafka writes only starts past the first segment's base.
        let start = checkpointed_log_start(&b.log_dir, TOPIC);
        let first_base = stored_batches(&b.log_dir, TOPIC, 0).first().map(|h| h.base_offset);
        assert!(start == Some(40) || first_base == Some(40), "{start:?} {first_base:?}");
    }
    let brokers: Vec<BrokerProcess> = brokers.into_iter().zip(&specs).map(|(b, s)| b.restart(s)).collect();
    cluster_ready(&zk, 3).await;
    wait_until(Duration::from_secs(30), "a leader after the restart", || async {
        let l = leader(&zk, TOPIC).await;
        l >= 0 && earliest(&bootstrap_of(&zk, l).await, TOPIC).await.is_some()
    })
    .await;
    let l = leader(&zk, TOPIC).await;
    assert_eq!(earliest(&bootstrap_of(&zk, l).await, TOPIC).await, Some(40));
    assert_eq!(first_from_beginning(&zk, TOPIC).await, "40 40");
    drop(brokers);
    zk.close().await;
}

/// Creates `argv[2]` (one partition) with the configs `argv[3]` (JSON), then produces to it as
/// `argv[4]` says and prints what came back: per record the error name or the timestamp type
/// and timestamp the broker answered.
const OVERRIDE_PRODUCE: &str = r#"
import sys, json, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
boot, topic, configs, what = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
a = AdminClient({"bootstrap.servers": boot})
a.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)
# librdkafka holds the record until the new topic's leader is known and retries leader
# errors itself (within message.timeout.ms); the refusals under test are not retriable.
p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 0, "compression.type": "none",
              "message.timeout.ms": 20000})
out = []
def done(err, msg):
    out.append(err.name() if err else "%d %d" % msg.timestamp())
if what == "old":
    p.produce(topic, b"v", partition=0, timestamp=int(time.time() * 1000) - 86400000, on_delivery=done)
elif what == "big":
    p.produce(topic, b"x" * 3000, partition=0, on_delivery=done)
else:
    p.produce(topic, b"v" * 200, partition=0, on_delivery=done)
p.flush(30)
print(out[-1] if out else "nothing")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_overrides_recompress_stamp_and_limit_what_is_produced() {
    let chroot = unique_chroot("topic-overrides");
    let broker = BrokerProcess::start(&spec(&chroot, 1, &[]));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    let boot = bootstrap_of(&zk, 1).await;
    let produce = |topic: &str, configs: &str, what: &str| {
        python_async(
            OVERRIDE_PRODUCE,
            vec![boot.clone(), topic.into(), configs.into(), what.into()],
        )
    };

    // compression.type=gzip: an uncompressed produce is stored gzip-compressed.
    let answer = produce("gzipped", r#"{"compression.type": "gzip"}"#, "plain").await;
    assert!(answer.starts_with("1 "), "CreateTime answered: {answer}");
    let stored = stored_batches(&broker.log_dir, "gzipped", 0);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0].compression(), kastle::protocol::Compression::Gzip);
    assert_eq!(
        first_from_beginning(&zk, "gzipped").await,
        format!("0 {}", "v".repeat(200))
    );

    // LogAppendTime: the answer carries the broker's time (librdkafka's type 2).
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let answer = produce("stamped", r#"{"message.timestamp.type": "LogAppendTime"}"#, "plain").await;
    let (kind, ts) = answer.split_once(' ').expect("type and timestamp");
    assert_eq!(kind, "2", "{answer}");
    assert!(ts.parse::<i64>().expect("timestamp") >= before, "{answer}");

    // A CreateTime record older than message.timestamp.before.max.ms is refused.
    let answer = produce("recent", r#"{"message.timestamp.before.max.ms": "3600000"}"#, "old").await;
    assert_eq!(answer, "INVALID_TIMESTAMP");

    // A batch over the topic's max.message.bytes: MESSAGE_TOO_LARGE (librdkafka's MSG_SIZE_TOO_LARGE).
    let answer = produce("small", r#"{"max.message.bytes": "1000"}"#, "big").await;
    assert_eq!(answer, "MSG_SIZE_TOO_LARGE");
    drop(broker);
    zk.close().await;
}
