//! Helpers for replication tests: brokers with a short session, one-partition topics written by
//! hand, a partition's batches as stored on disk (to compare replicas byte-for-byte by their
//! CRCs), the state znode, and Python producers/consumers with their acknowledged values.

use std::path::Path;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::test_support::build_batch;
use kastle::zk::models::{PartitionState, ZNodePayload};
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

/// The ZooKeeper session of replication tests' brokers: a killed broker is noticed quickly.
pub const SESSION_MS: u64 = 3_000;

/// Broker `id` on `chroot` with [`SESSION_MS`] and `extra` settings.
pub fn spec(chroot: &str, id: i32, extra: &[(&str, &str)]) -> super::BrokerSpec {
    extra.iter().fold(
        super::BrokerSpec::new(id, &super::zookeeper().connect(chroot)).session_timeout_ms(SESSION_MS),
        |s, (k, v)| s.with(k, v),
    )
}

/// Writes a one-partition topic with `replicas` (a JSON list) by hand and waits for a leader.
pub async fn create_topic(zk: &ZkSession, topic: &str, replicas: &str) {
    super::cluster::create_topic_by_hand(zk, topic, &format!(r#"{{"0":{replicas}}}"#)).await;
    super::wait_until(std::time::Duration::from_secs(20), "a leader", || async {
        leader(zk, topic).await >= 0
    })
    .await;
}

/// Every registered broker's address, comma-separated (a client's bootstrap list).
pub async fn bootstrap(zk: &ZkSession) -> String {
    let mut addrs = Vec::new();
    for id in zk.children("/brokers/ids").await.expect("ids") {
        addrs.push(super::bootstrap_of(zk, id.parse().expect("id")).await);
    }
    addrs.join(",")
}

/// The repo's Python with `args`.
pub fn python(args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(super::python());
    c.args(args);
    c
}

/// The integers a producer script wrote to `path`, one per line (its acknowledged values).
pub fn lines(path: &Path) -> Vec<i64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

use super::wire::Wire;

/// Every batch header stored for `topic-partition` in `log_dir`, in offset order (each segment
/// up to its first torn or invalid batch).
pub fn stored_batches(log_dir: &Path, topic: &str, partition: i32) -> Vec<kastle::protocol::BatchHeader> {
    let dir = log_dir.join(format!("{topic}-{partition}"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "log"));
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let data = std::fs::read(&file).unwrap_or_default();
        out.extend(
            kastle::protocol::BatchScanner::without_crc(&data)
                .map_while(Result::ok)
                .map(|(_, h)| h),
        );
    }
    out
}

/// (base offset, last offset delta, leader epoch, CRC) of every batch of `topic-partition` in
/// `log_dir`, in offset order.
pub fn batch_crcs(log_dir: &Path, topic: &str, partition: i32) -> Vec<(i64, i32, i32, u32)> {
    stored_batches(log_dir, topic, partition)
        .iter()
        .map(|h| (h.base_offset, h.last_offset_delta, h.partition_leader_epoch, h.crc))
        .collect()
}

/// The next offset after the last stored batch.
pub fn log_end(log_dir: &Path, topic: &str, partition: i32) -> i64 {
    batch_crcs(log_dir, topic, partition)
        .last()
        .map_or(0, |(base, delta, _, _)| base + *delta as i64 + 1)
}

/// The partition's state znode.
pub async fn state(zk: &ZkSession, topic: &str, partition: i32) -> Option<(PartitionState, i32)> {
    let (data, stat) = zk
        .get_data(&format!("/brokers/topics/{topic}/partitions/{partition}/state"))
        .await
        .ok()?;
    PartitionState::decode(&data).ok().map(|s| (s, stat.version.0))
}

pub async fn leader(zk: &ZkSession, topic: &str) -> i32 {
    state(zk, topic, 0).await.map_or(-1, |(s, _)| s.leader.0)
}

pub async fn isr(zk: &ZkSession, topic: &str) -> Vec<i32> {
    let mut isr: Vec<i32> = state(zk, topic, 0)
        .await
        .map(|(s, _)| s.isr.iter().map(|b| b.0).collect())
        .unwrap_or_default();
    isr.sort();
    isr
}

/// confluent-kafka producer: sends 0..count as values (acks=all, in order, retrying), writing
/// each acknowledged value to the file `argv[4]` as it is acknowledged.
pub const PRODUCER: &str = r#"
import sys, time
from confluent_kafka import Producer
bootstrap, topic, count, acked_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
              "max.in.flight.requests.per.connection": 1, "retries": 1000000,
              "retry.backoff.ms": 100, "message.timeout.ms": 180000, "linger.ms": 5,
              "request.timeout.ms": 5000, "topic.metadata.refresh.interval.ms": 1000})
acked = open(acked_path, "w", buffering=1)
errors = 0
def done(err, msg):
    global errors
    if err is None:
        acked.write(msg.value().decode() + "\n")
    else:
        errors += 1
for i in range(count):
    while True:
        try:
            p.produce(topic, str(i).encode(), partition=0, on_delivery=done)
            break
        except BufferError:
            p.poll(0.05)
    if i % 100 == 99:
        p.poll(0)
        time.sleep(0.01)
p.flush(180)
print("errors", errors)
"#;

/// confluent-kafka consumer: every value of partition 0 from the beginning, one per line.
pub const CONSUMER: &str = r#"
import sys, uuid
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "verify-" + uuid.uuid4().hex,
              "enable.auto.commit": False, "enable.partition.eof": True,
              "auto.offset.reset": "earliest"})
c.assign([TopicPartition(sys.argv[2], 0, 0)])
out = []
while True:
    m = c.poll(10)
    if m is None:
        continue
    if m.error():
        if m.error().code() == -191:  # _PARTITION_EOF
            break
        continue
    out.append(m.value().decode())
c.close()
print("\n".join(out))
"#;

/// The ISR broker `id` reports for `topic-0` in a Metadata response (what the controller last
/// told it), sorted.
pub async fn metadata_isr(zk: &ZkSession, id: i32, topic: &str) -> Vec<i32> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{MetadataRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let mut wire = super::wire::Wire::connect(&super::bootstrap_of(zk, id).await).await;
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(topic.to_string()))))
    ]));
    let response = wire.send(&request, 9).await;
    let mut isr: Vec<i32> = response
        .topics
        .first()
        .and_then(|t| t.partitions.iter().find(|p| p.partition_index == 0))
        .map(|p| p.isr_nodes.iter().map(|b| b.0).collect())
        .unwrap_or_default();
    isr.sort();
    isr
}

pub fn produce_request(topic: &str, acks: i16, value: &[u8]) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(build_batch(0, -1, &[(None, Some(value))], 1).into()))])])
}

/// The partition's LEO as a replica sees it (ListOffsets latest with a replica id).
pub async fn leader_log_end(wire: &mut Wire, topic: &str) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(99))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)])]);
    let response = wire.send(&request, 4).await;
    response.topics[0].partitions[0].offset
}
