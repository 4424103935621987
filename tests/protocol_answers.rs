//! Answers a Kafka 3.9 broker gives and clients rely on, against one in-process broker that is
//! its own controller: authorized operations without an authorizer (Metadata, DescribeGroups),
//! CreateTopics refusing unknown or invalid topic configs with INVALID_CONFIG (validate-only
//! too), ProduceResponse's log start offset (also after retention moved it), and ListOffsets by
//! timestamp finding the record inside a batch (kcat, confluent-kafka and the wire),
//! MAX_TIMESTAMP, and duplicate partitions refused with INVALID_REQUEST.

mod common;

use std::process::Command;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::wire::{act_as_controller, TestTopic, Wire};
use common::{unique_chroot, wait_until, zookeeper, BrokerSpec};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, CreateTopicsResponse, DescribeGroupsRequest, FindCoordinatorRequest, GroupId,
    ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use kastle::config::KafkaConfig;
use kastle::protocol::error_codes as ec;
use kastle::protocol::test_support::{BatchBuilder, TestRecord};
use kastle::server::{Broker, BrokerHandle};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One broker (its own controller) with `extra` settings, ready to create topics.
async fn broker(test: &str, extra: &[(&str, &str)]) -> (BrokerHandle, String, tempfile::TempDir) {
    common::init_logging();
    let chroot = unique_chroot(test);
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = extra.iter().fold(
        BrokerSpec::new(1, &zookeeper().connect(&chroot))
            .with("offsets.topic.replication.factor", "1")
            .with("offsets.topic.num.partitions", "1"),
        |spec, (k, v)| spec.with(k, v),
    );
    let pairs = spec.pairs(dir.path());
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let handle = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let addr = format!("127.0.0.1:{}", handle.advertised_endpoints()[0].port);
    wait_until(Duration::from_secs(20), "the broker is the controller", || async {
        let mut wire = Wire::connect(&addr).await;
        wire.send(&MetadataRequest::default().with_topics(None), 1)
            .await
            .controller_id
            .0
            == 1
    })
    .await;
    (handle, addr, dir)
}

fn new_topic(name: &str, partitions: i32, configs: &[(&str, Option<&str>)]) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(TopicName(s(name)))
        .with_num_partitions(partitions)
        .with_replication_factor(1)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig::default().with_name(s(k)).with_value(v.map(s)))
                .collect(),
        )
}

async fn create(wire: &mut Wire, topics: Vec<CreatableTopic>, validate_only: bool) -> CreateTopicsResponse {
    let request = CreateTopicsRequest::default()
        .with_topics(topics)
        .with_timeout_ms(10_000)
        .with_validate_only(validate_only);
    wire.send(&request, 7).await
}

fn produce_request(topic: &str, partition: i32, batch: Vec<u8>) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch.into()))])])
}

fn list_offsets(partitions: &[(&str, i32, i64)]) -> ListOffsetsRequest {
    ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(
        partitions
            .iter()
            .map(|(t, p, ts)| {
                ListOffsetsTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(*p)
                        .with_timestamp(*ts)])
            })
            .collect(),
    )
}

/// `(error, offset, timestamp, leader epoch)` of every partition answer, in order.
fn answers(response: &ListOffsetsResponse) -> Vec<(i16, i64, i64, i32)> {
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.error_code, p.offset, p.timestamp, p.leader_epoch))
        .collect()
}

async fn earliest(wire: &mut Wire, topic: &str) -> i64 {
    answers(&wire.send(&list_offsets(&[(topic, 0, -2)]), 7).await)[0].1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorized_operations_are_every_supported_operation_when_asked() {
    let (_broker, addr, _dir) = broker("authorized-ops", &[]).await;
    let mut wire = Wire::connect(&addr).await;
    let created = create(&mut wire, vec![new_topic("ops", 1, &[])], false).await;
    assert_eq!(created.topics[0].error_code, 0);
    let asked = MetadataRequest::default()
        .with_topics(None)
        .with_include_cluster_authorized_operations(true)
        .with_include_topic_authorized_operations(true);
    let v10 = wire.send(&asked, 10).await;
    // Kafka's AclEntry.supportedOperations: CLUSTER 7 operations, TOPIC 8.
    assert_eq!(v10.cluster_authorized_operations, 8096);
    assert!(
        v10.topics.iter().all(|t| t.topic_authorized_operations == 3576),
        "{v10:?}"
    );
    // v11 dropped the cluster field (KIP-700); not asking leaves Int32.MinValue.
    let v12 = wire
        .send(
            &MetadataRequest::default()
                .with_topics(None)
                .with_include_topic_authorized_operations(true),
            12,
        )
        .await;
    assert!(v12.topics.iter().all(|t| t.topic_authorized_operations == 3576));
    let plain = wire.send(&MetadataRequest::default().with_topics(None), 10).await;
    assert_eq!(plain.cluster_authorized_operations, i32::MIN);
    assert!(plain.topics.iter().all(|t| t.topic_authorized_operations == i32::MIN));

    let group = GroupId(s("ops-group"));
    wait_until(Duration::from_secs(30), "a group coordinator", || async {
        let find = FindCoordinatorRequest::default().with_key(s("ops-group"));
        Wire::connect(&addr).await.send(&find, 3).await.error_code == 0
    })
    .await;
    let describe = |include| {
        DescribeGroupsRequest::default()
            .with_groups(vec![group.clone()])
            .with_include_authorized_operations(include)
    };
    let addr_ref = addr.as_str();
    let request = describe(true);
    wait_until(Duration::from_secs(30), "the coordinator loaded", || {
        let request = request.clone();
        async move { Wire::connect(addr_ref).await.send(&request, 5).await.groups[0].error_code == 0 }
    })
    .await;
    let described = wire.send(&describe(true), 5).await;
    // GROUP: READ, DESCRIBE, DELETE.
    assert_eq!(described.groups[0].authorized_operations, 328, "{described:?}");
    let described = wire.send(&describe(false), 5).await;
    assert_eq!(described.groups[0].authorized_operations, i32::MIN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_refuses_unknown_or_invalid_configs_and_creates_nothing() {
    let (_broker, addr, _dir) = broker("create-configs", &[]).await;
    let mut wire = Wire::connect(&addr).await;
    for validate_only in [true, false] {
        let response = create(
            &mut wire,
            vec![
                new_topic("cfg-unknown", 1, &[("retention.ms", Some("1000")), ("x", Some("1"))]),
                new_topic("cfg-bad-value", 1, &[("segment.bytes", Some("lots"))]),
                new_topic("cfg-null", 1, &[("retention.ms", None)]),
            ],
            validate_only,
        )
        .await;
        let results: Vec<(i16, String)> = response
            .topics
            .iter()
            .map(|t| {
                let message = t.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default();
                (t.error_code, message)
            })
            .collect();
        assert_eq!(
            results,
            vec![
                (ec::INVALID_CONFIG, "Unknown topic config name: x".to_string()),
                (
                    ec::INVALID_CONFIG,
                    "Invalid value lots for configuration segment.bytes: Not a number of type INT".to_string()
                ),
                (
                    ec::INVALID_CONFIG,
                    "Null value not supported for topic configs: retention.ms".to_string()
                ),
            ],
            "validate_only={validate_only}"
        );
    }
    let listed = wire.send(&MetadataRequest::default().with_topics(None), 12).await;
    assert!(
        listed
            .topics
            .iter()
            .all(|t| !t.name.as_ref().is_some_and(|n| n.0.to_string().starts_with("cfg-"))),
        "nothing was created: {:?}",
        listed.topics
    );
    // Known names with valid values pass, validate-only first.
    let ok = vec![new_topic(
        "cfg-ok",
        1,
        &[("cleanup.policy", Some("compact")), ("compression.type", Some("lz4"))],
    )];
    assert_eq!(create(&mut wire, ok.clone(), true).await.topics[0].error_code, 0);
    assert_eq!(create(&mut wire, ok, false).await.topics[0].error_code, 0);
}

/// Kafka's `getPartitionMetadata`: a leader that is not among the live brokers is no leader
/// (LEADER_NOT_AVAILABLE, -1), whatever the offline replicas say; v0 also drops dead replicas and
/// says REPLICA_NOT_AVAILABLE for a live leader with one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_reports_no_leader_for_a_leader_missing_from_the_live_brokers() {
    let (broker, addr, _dir) = broker("metadata-dead-leader", &[]).await;
    let port: i32 = addr.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
    let topics = [
        TestTopic {
            name: "led-by-gone".into(),
            id: uuid::Uuid::new_v4(),
            partitions: vec![(0, 2, vec![2, 1])],
        },
        TestTopic {
            name: "led-here".into(),
            id: uuid::Uuid::new_v4(),
            partitions: vec![(0, 1, vec![1, 2])],
        },
    ];
    // The controller's view: broker 2 is not live, and no replica is marked offline.
    act_as_controller(
        &addr,
        broker.broker_epoch().0,
        &[(1, "127.0.0.1".into(), port)],
        &topics,
        1,
    )
    .await;
    let mut wire = Wire::connect(&addr).await;
    for version in [0, 1, 12] {
        let names = ["led-by-gone", "led-here"].map(|n| {
            kafka_protocol::messages::metadata_request::MetadataRequestTopic::default().with_name(Some(TopicName(s(n))))
        });
        let response = wire
            .send(&MetadataRequest::default().with_topics(Some(names.to_vec())), version)
            .await;
        assert_eq!(
            response.brokers.iter().map(|b| b.node_id.0).collect::<Vec<_>>(),
            vec![1]
        );
        let p = |i: usize| {
            let p = &response.topics[i].partitions[0];
            (
                p.error_code,
                p.leader_id.0,
                p.replica_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
            )
        };
        let all = if version == 0 { vec![1] } else { vec![2, 1] };
        assert_eq!(
            p(0),
            (ec::LEADER_NOT_AVAILABLE, -1, all.clone()),
            "v{version}: LEADER_NOT_AVAILABLE, no leader"
        );
        let here = if version == 0 { vec![1] } else { vec![1, 2] };
        let code = if version == 0 {
            ec::REPLICA_NOT_AVAILABLE
        } else {
            ec::NONE
        };
        assert_eq!(p(1), (code, 1, here), "v{version}");
    }
}

fn one_record(timestamp: i64) -> Vec<u8> {
    BatchBuilder::new(0)
        .timestamp(timestamp)
        .record(None, Some(b"v"))
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_reports_the_log_start_offset_also_after_retention_moved_it() {
    let (_broker, addr, _dir) = broker("produce-log-start", &[("log.retention.check.interval.ms", "100")]).await;
    let mut wire = Wire::connect(&addr).await;
    let topics = vec![
        new_topic("lso-fresh", 1, &[]),
        new_topic(
            "lso-retained",
            1,
            &[("segment.bytes", Some("300")), ("retention.bytes", Some("300"))],
        ),
    ];
    assert!(create(&mut wire, topics, false)
        .await
        .topics
        .iter()
        .all(|t| t.error_code == 0));
    let now = kastle::clock::now_ms();
    let fresh: ProduceResponse = wire.send(&produce_request("lso-fresh", 0, one_record(now)), 9).await;
    let answer = &fresh.responses[0].partition_responses[0];
    assert_eq!(
        (answer.error_code, answer.base_offset, answer.log_start_offset),
        (0, 0, 0)
    );
    for _ in 0..12 {
        let r: ProduceResponse = wire.send(&produce_request("lso-retained", 0, one_record(now)), 9).await;
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    wait_until(Duration::from_secs(20), "retention moved the log start", || async {
        earliest(&mut Wire::connect(&addr).await, "lso-retained").await > 0
    })
    .await;
    // Retention may run between a produce and the ListOffsets after it; the two agree once it
    // has settled, and the produce answer is never outside what ListOffsets saw around it.
    wait_until(
        Duration::from_secs(20),
        "ProduceResponse log_start_offset = ListOffsets earliest",
        || {
            let addr = addr.clone();
            async move {
                let mut wire = Wire::connect(&addr).await;
                let before = earliest(&mut wire, "lso-retained").await;
                let r: ProduceResponse = wire.send(&produce_request("lso-retained", 0, one_record(now)), 5).await;
                let reported = r.responses[0].partition_responses[0].log_start_offset;
                let after = earliest(&mut wire, "lso-retained").await;
                assert!(
                    (before..=after).contains(&reported),
                    "produce said {reported}, ListOffsets {before} then {after}"
                );
                before > 0 && reported == after
            }
        },
    )
    .await;
    // Before v5 the field does not exist on the wire.
    let old: ProduceResponse = wire.send(&produce_request("lso-fresh", 0, one_record(now)), 4).await;
    assert_eq!(old.responses[0].partition_responses[0].log_start_offset, -1);
}

/// Timestamps of the records in each test batch: inside one batch, not in order.
const BASE: i64 = 1_700_000_000_000;
const STAMPS: [i64; 4] = [BASE + 10, BASE + 20, BASE + 99, BASE + 30];

/// Partition 0: one uncompressed batch built by hand; partition 1: one gzip batch from the
/// client codec. Both hold records at `STAMPS`.
fn timestamp_batches() -> [Vec<u8>; 2] {
    let plain = STAMPS
        .iter()
        .fold(BatchBuilder::new(0).timestamp(STAMPS[0]), |b, ts| {
            b.record_with(TestRecord {
                value: Some(b"v"),
                timestamp_delta: ts - STAMPS[0],
                ..TestRecord::default()
            })
        })
        .build();
    let records: Vec<Record> = STAMPS
        .iter()
        .enumerate()
        .map(|(i, ts)| Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1, // one batch (the crate splits on offset - sequence)
            timestamp: *ts,
            key: None,
            value: Some(Bytes::from_static(b"v")),
            headers: Default::default(),
        })
        .collect();
    let mut gzip = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::Gzip,
    };
    RecordBatchEncoder::encode(&mut gzip, &records, &options).expect("encode");
    [plain, gzip.to_vec()]
}

const OFFSETS_FOR_TIMES: &str = r#"
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "oft"})
tps = [TopicPartition(sys.argv[2], p, int(sys.argv[3])) for p in (0, 1)]
for tp in c.offsets_for_times(tps, timeout=20):
    print(tp.partition, tp.offset, tp.error)
c.close()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_by_timestamp_finds_the_record_inside_a_batch() {
    let (_broker, addr, _dir) = broker("list-offsets-times", &[]).await;
    let mut wire = Wire::connect(&addr).await;
    assert_eq!(
        create(&mut wire, vec![new_topic("times", 2, &[])], false).await.topics[0].error_code,
        0
    );
    for (partition, batch) in timestamp_batches().into_iter().enumerate() {
        let r: ProduceResponse = wire.send(&produce_request("times", partition as i32, batch), 9).await;
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    // On the wire: the first record at or after the target, and MAX_TIMESTAMP's record with
    // its timestamp, for the plain and the compressed batch.
    for p in [0, 1] {
        let asked = list_offsets(&[
            ("times", p, BASE + 20),
            ("times", p, BASE + 31),
            ("times", p, BASE + 100),
        ]);
        // The partition appears three times: each answer is INVALID_REQUEST (Kafka's rule).
        assert!(answers(&wire.send(&asked, 7).await).iter().all(|a| a.0 == 42));
        let addr_ref = addr.as_str();
        let at = |ts| async move {
            let mut wire = Wire::connect(addr_ref).await;
            answers(&wire.send(&list_offsets(&[("times", p, ts)]), 7).await)[0]
        };
        assert_eq!(at(BASE + 20).await, (0, 1, BASE + 20, 0), "partition {p}");
        assert_eq!(at(BASE + 31).await, (0, 2, BASE + 99, 0), "partition {p}");
        assert_eq!(at(BASE + 100).await, (0, -1, -1, -1), "partition {p}");
        assert_eq!(at(-3).await, (0, 2, BASE + 99, 0), "partition {p}: MAX_TIMESTAMP");
        // MAX_TIMESTAMP needs v7.
        let old = wire.send(&list_offsets(&[("times", p, -3)]), 6).await;
        assert_eq!(answers(&old)[0].0, 35);
    }
    // One duplicate does not spoil the other partitions of the request.
    let mixed = wire
        .send(
            &list_offsets(&[("times", 0, -2), ("times", 1, -2), ("times", 0, -1)]),
            7,
        )
        .await;
    let codes: Vec<i16> = answers(&mixed).iter().map(|a| a.0).collect();
    assert_eq!(codes, vec![42, 0, 42]);

    let kcat = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || {
            let out = Command::new("kcat")
                .args(["-b", &addr, "-Q", "-t", &format!("times:0:{}", BASE + 20)])
                .args(["-t", &format!("times:1:{}", BASE + 20)])
                .output()
                .expect("kcat");
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    })
    .await
    .expect("kcat");
    assert!(kcat.contains("times [0] offset 1"), "{kcat}");
    assert!(kcat.contains("times [1] offset 1"), "{kcat}");

    let python = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || {
            let out = Command::new(common::python())
                .args(["-c", OFFSETS_FOR_TIMES, &addr, "times", &(BASE + 31).to_string()])
                .output()
                .expect("python");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    })
    .await
    .expect("python");
    assert_eq!(python.trim(), "0 2 None\n1 2 None", "{python}");
}
