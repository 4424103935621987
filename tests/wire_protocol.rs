//! The broker on the wire, driven by a test that acts as the controller: produce and fetch
//! round trips, NOT_LEADER_OR_FOLLOWER and stale controller epochs, the fetch long-poll (woken
//! by an append, or returning after max_wait_ms), and bad input that closes only its own
//! connection while a producer keeps going; KIP-320 leader-epoch fencing and
//! OffsetForLeaderEpoch answers.

mod common;

use std::time::{Duration, Instant};

use common::wire::{act_as_controller, TestTopic, Wire};
use common::{unique_chroot, zookeeper, BrokerSpec};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId as KpBrokerId, FetchRequest, FetchResponse, LeaderAndIsrRequest, LeaderAndIsrResponse, MetadataRequest,
    MetadataResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kastle::config::KafkaConfig;
use kastle::protocol::error_codes as ec;
use kastle::protocol::test_support::build_batch;
use kastle::server::{Broker, BrokerHandle};

async fn broker(id: i32, chroot: &str, dir: &std::path::Path) -> (BrokerHandle, String) {
    let pairs = BrokerSpec::new(id, &zookeeper().connect(chroot)).pairs(dir);
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let handle = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let port = handle.advertised_endpoints()[0].port;
    (handle, format!("127.0.0.1:{port}"))
}

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn produce(topic: &str, partition: i32, acks: i16, records: Vec<u8>) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records.into()))])])
}

fn fetch(topic: &str, offset: i64, max_wait_ms: i32, min_bytes: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(KpBrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])])
}

async fn setup(test: &str) -> (BrokerHandle, String, tempfile::TempDir) {
    let chroot = unique_chroot(test);
    let dir = tempfile::tempdir().expect("tempdir");
    let (handle, addr) = broker(1, &chroot, dir.path()).await;
    let port: i32 = addr.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
    let topics = [
        TestTopic {
            name: "led".into(),
            id: uuid::Uuid::new_v4(),
            partitions: vec![(0, 1, vec![1])],
        },
        TestTopic {
            name: "elsewhere".into(),
            id: uuid::Uuid::new_v4(),
            partitions: vec![(0, 2, vec![2, 1])],
        },
    ];
    let brokers = [(1, "127.0.0.1".to_string(), port), (2, "127.0.0.1".to_string(), 1)];
    act_as_controller(&addr, handle.broker_epoch().0, &brokers, &topics, 1).await;
    (handle, addr, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produced_batches_come_back_from_fetch_with_offsets_and_metadata_shows_leaders() {
    let (broker, addr, _dir) = setup("roundtrip").await;
    let mut wire = Wire::connect(&addr).await;
    let metadata: MetadataResponse = wire.send(&MetadataRequest::default().with_topics(None), 12).await;
    assert_eq!(metadata.brokers.len(), 2);
    assert_eq!(metadata.controller_id.0, 1);
    let led = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "led"))
        .expect("topic");
    assert_eq!((led.partitions[0].leader_id.0, led.partitions[0].leader_epoch), (1, 1));

    for (i, acks) in [(0, 1i16), (1, -1)] {
        let batch = build_batch(0, -1, &[(Some(&b"k"[..]), Some(format!("v{i}").as_bytes()))], 1_000 + i);
        let response: ProduceResponse = wire.send(&produce("led", 0, acks, batch), 9).await;
        let p = &response.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset), (0, i));
    }
    let response: FetchResponse = wire.send(&fetch("led", 0, 0, 1), 12).await;
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.error_code, 0);
    assert_eq!(data.high_watermark, 2);
    let records = data.records.clone().expect("records");
    let headers: Vec<_> = kastle::protocol::record_batch::BatchScanner::new(&records)
        .map_while(Result::ok)
        .collect();
    assert_eq!(
        headers
            .iter()
            .map(|(_, h)| (h.base_offset, h.partition_leader_epoch))
            .collect::<Vec<_>>(),
        vec![(0, 1), (1, 1)]
    );
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_led_elsewhere_answers_not_leader_and_a_stale_controller_is_refused() {
    let (broker, addr, _dir) = setup("notleader").await;
    let mut wire = Wire::connect(&addr).await;
    let batch = build_batch(0, -1, &[(None, Some(&b"v"[..]))], 1);
    let response: ProduceResponse = wire.send(&produce("elsewhere", 0, 1, batch), 9).await;
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        ec::NOT_LEADER_OR_FOLLOWER,
        "NOT_LEADER_OR_FOLLOWER"
    );
    let response: ProduceResponse = wire
        .send(&produce("nosuch", 0, 1, build_batch(0, -1, &[(None, None)], 1)), 9)
        .await;
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        ec::UNKNOWN_TOPIC_OR_PARTITION,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    let stale = LeaderAndIsrRequest::default()
        .with_controller_epoch(0)
        .with_broker_epoch(broker.broker_epoch().0);
    let response: LeaderAndIsrResponse = wire.send(&stale, 7).await;
    assert_eq!(
        response.error_code,
        ec::STALE_CONTROLLER_EPOCH,
        "STALE_CONTROLLER_EPOCH"
    );
    let old_incarnation = LeaderAndIsrRequest::default()
        .with_controller_epoch(common::wire::TEST_CONTROLLER_EPOCH)
        .with_broker_epoch(broker.broker_epoch().0 - 1);
    let response: LeaderAndIsrResponse = wire.send(&old_incarnation, 7).await;
    assert_eq!(response.error_code, ec::STALE_BROKER_EPOCH, "STALE_BROKER_EPOCH");
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_waits_for_max_wait_and_is_woken_by_an_append() {
    let (broker, addr, _dir) = setup("longpoll").await;
    let mut consumer = Wire::connect(&addr).await;
    let started = Instant::now();
    let empty: FetchResponse = consumer.send(&fetch("led", 0, 500, 1), 12).await;
    let waited = started.elapsed();
    assert!(empty.responses[0].partitions[0]
        .records
        .as_ref()
        .is_none_or(|r| r.is_empty()));
    assert!(
        waited >= Duration::from_millis(450) && waited < Duration::from_millis(3_000),
        "waited {waited:?}"
    );

    let fetcher = tokio::spawn(async move {
        let response: FetchResponse = consumer.send(&fetch("led", 0, 10_000, 1), 12).await;
        (response, Instant::now())
    });
    // The fetch must be parked in the purgatory before the append, so it is the append that wakes it.
    let rm = broker.replica_manager().clone();
    common::wait_until(Duration::from_secs(5), "the fetch to wait in the purgatory", || {
        let waiting = rm.delayed_fetches();
        async move { waiting == 1 }
    })
    .await;
    let mut wire = Wire::connect(&addr).await;
    let _: ProduceResponse = wire
        .send(
            &produce("led", 0, 1, build_batch(0, -1, &[(None, Some(&b"x"[..]))], 1)),
            9,
        )
        .await;
    let produced = Instant::now();
    let (response, returned) = fetcher.await.expect("fetcher");
    assert!(!response.responses[0].partitions[0]
        .records
        .clone()
        .expect("records")
        .is_empty());
    let lag = returned.saturating_duration_since(produced);
    assert!(
        lag < Duration::from_millis(1_000),
        "the fetch returned {lag:?} after the append, long before max_wait"
    );
    broker.shutdown().await.expect("shutdown");
}

/// One malformed input: what it sends on a fresh connection.
fn garbage(n: u64) -> Vec<u8> {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let len = (next() % 200) as usize;
    let mut body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
    match n % 6 {
        // Random bytes behind a consistent length.
        0 => [(len as i32).to_be_bytes().to_vec(), body].concat(),
        // A length far over socket.request.max.bytes.
        1 => i32::MAX.to_be_bytes().to_vec(),
        // A negative length.
        2 => (-5i32).to_be_bytes().to_vec(),
        // A truncated frame: promises more than it sends.
        3 => [1000i32.to_be_bytes().to_vec(), body].concat(),
        // An unknown API key with a valid header shape.
        4 => {
            let mut frame = vec![0x7F, 0x00, 0x00, 0x00, 0, 0, 0, 1, 0xFF, 0xFF];
            frame.append(&mut body);
            [(frame.len() as i32).to_be_bytes().to_vec(), frame].concat()
        }
        // Metadata at a version above what we support (13).
        _ => {
            let frame = vec![0x00, 0x03, 0x00, 0x0D, 0, 0, 0, 1, 0xFF, 0xFF, 0x00];
            [(frame.len() as i32).to_be_bytes().to_vec(), frame].concat()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_closes_only_its_own_connection_while_a_producer_keeps_going() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (broker, addr, _dir) = setup("fuzz").await;
    let fuzz_addr = addr.clone();
    let fuzzer = tokio::spawn(async move {
        for n in 0..600u64 {
            let mut stream = tokio::net::TcpStream::connect(&fuzz_addr).await.expect("connect");
            let _ = stream.write_all(&garbage(n)).await;
            let _ = stream.shutdown().await;
            // Whatever comes back (an error response or nothing), the broker must end the
            // connection rather than hang on it.
            let mut sink = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut sink)).await;
            assert!(read.is_ok(), "input {n} left the connection hanging");
        }
    });
    let mut producer = Wire::connect(&addr).await;
    for i in 0..300i64 {
        let batch = build_batch(0, -1, &[(None, Some(format!("v{i}").as_bytes()))], i);
        let response: ProduceResponse = producer.send(&produce("led", 0, 1, batch), 9).await;
        let p = &response.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset), (0, i), "produce {i}");
    }
    fuzzer.await.expect("fuzzer");
    let mut consumer = Wire::connect(&addr).await;
    let response: FetchResponse = consumer.send(&fetch("led", 299, 0, 1), 12).await;
    assert_eq!(response.responses[0].partitions[0].high_watermark, 300);
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_replica_with_delete_removes_the_partition_and_its_log() {
    use kafka_protocol::messages::stop_replica_request::{StopReplicaPartitionState, StopReplicaTopicState};
    use kafka_protocol::messages::{StopReplicaRequest, StopReplicaResponse};
    let (broker, addr, _dir) = setup("stopreplica").await;
    let log_dir = kastle::log::log_manager::lock(&broker.log_manager().get_log(&tp("led")).expect("log"))
        .dir()
        .to_path_buf();
    assert!(log_dir.exists());
    let mut wire = Wire::connect(&addr).await;
    let request = StopReplicaRequest::default()
        .with_controller_epoch(common::wire::TEST_CONTROLLER_EPOCH)
        .with_broker_epoch(broker.broker_epoch().0)
        .with_topic_states(vec![StopReplicaTopicState::default()
            .with_topic_name(topic_name("led"))
            .with_partition_states(vec![StopReplicaPartitionState::default()
                .with_partition_index(0)
                .with_leader_epoch(2)
                .with_delete_partition(true)])]);
    let response: StopReplicaResponse = wire.send(&request, 4).await;
    assert_eq!(response.error_code, 0);
    assert_eq!(response.partition_errors[0].error_code, 0);
    assert!(broker.replica_manager().partition(&tp("led")).is_none());
    common::wait_until(Duration::from_secs(10), "the partition dir to be removed", || {
        let gone = !log_dir.exists();
        async move { gone }
    })
    .await;
    let response: ProduceResponse = wire
        .send(&produce("led", 0, 1, build_batch(0, -1, &[(None, None)], 1)), 9)
        .await;
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        ec::UNKNOWN_TOPIC_OR_PARTITION,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    broker.shutdown().await.expect("shutdown");
}

fn tp(topic: &str) -> kastle::types::TopicPartition {
    kastle::types::TopicPartition {
        topic: topic.to_string(),
        partition: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_for_an_unknown_topic_creates_it_in_zookeeper_like_kafkas_admin_path() {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kastle::zk::store::ZkStore;
    let chroot = unique_chroot("autocreate");
    let dir = tempfile::tempdir().expect("tempdir");
    let (broker, addr) = broker(1, &chroot, dir.path()).await;
    let port: i32 = addr.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
    act_as_controller(&addr, broker.broker_epoch().0, &[(1, "127.0.0.1".into(), port)], &[], 1).await;
    let mut wire = Wire::connect(&addr).await;
    let ask = |name: &str, auto: bool| {
        MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(topic_name(name)))
            ]))
            .with_allow_auto_topic_creation(auto)
    };
    let response: MetadataResponse = wire.send(&ask("not-created", false), 12).await;
    assert_eq!(
        response.topics[0].error_code,
        ec::UNKNOWN_TOPIC_OR_PARTITION,
        "UNKNOWN_TOPIC_OR_PARTITION without auto creation"
    );
    let response: MetadataResponse = wire.send(&ask("bad name!", true), 12).await;
    assert_eq!(
        response.topics[0].error_code,
        ec::INVALID_TOPIC_EXCEPTION,
        "INVALID_TOPIC_EXCEPTION"
    );
    let response: MetadataResponse = wire.send(&ask("auto-made", true), 12).await;
    assert_eq!(
        response.topics[0].error_code,
        ec::LEADER_NOT_AVAILABLE,
        "LEADER_NOT_AVAILABLE until the controller elects"
    );

    let zk = zookeeper().session(&chroot).await;
    let (config, _) = zk
        .get_data("/config/topics/auto-made")
        .await
        .expect("config written first");
    assert_eq!(config, br#"{"version":1,"config":{}}"#);
    let (assignment, _) = zk.get_data("/brokers/topics/auto-made").await.expect("assignment");
    let problems =
        kastle::zk::schema::validate(kastle::zk::paths::ZNodeKind::TopicAssignment, &assignment).expect("schema");
    assert!(problems.is_empty(), "{problems:?}");
    let json: serde_json::Value = serde_json::from_slice(&assignment).expect("json");
    assert_eq!(json["version"], 3);
    assert_eq!(json["partitions"]["0"], serde_json::json!([1]));
    assert_eq!(json["topic_id"].as_str().map(str::len), Some(22));
    assert!(zk
        .exists("/brokers/topics/not-created")
        .await
        .expect("exists")
        .is_none());
    zk.close().await;
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_errors_carry_kafkas_codes_per_partition() {
    let (broker, addr, _dir) = setup("produceerrors").await;
    let mut wire = Wire::connect(&addr).await;
    let good = || build_batch(0, -1, &[(None, Some(&b"v"[..]))], 1);
    let response: ProduceResponse = wire.send(&produce("led", 0, 2, good()), 9).await;
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        ec::INVALID_REQUIRED_ACKS,
        "INVALID_REQUIRED_ACKS"
    );
    let mut corrupt = good();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xFF;
    let response: ProduceResponse = wire.send(&produce("led", 0, 1, corrupt), 9).await;
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        ec::CORRUPT_MESSAGE,
        "CORRUPT_MESSAGE"
    );
    let huge = build_batch(0, -1, &[(None, Some(&vec![7u8; 1_100_000][..]))], 1);
    let response: ProduceResponse = wire.send(&produce("led", 0, 1, huge), 9).await;
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        ec::MESSAGE_TOO_LARGE,
        "MESSAGE_TOO_LARGE"
    );
    let response: ProduceResponse = wire.send(&produce("led", 0, 1, good()), 9).await;
    let ok = &response.responses[0].partition_responses[0];
    assert_eq!((ok.error_code, ok.base_offset), (0, 0), "nothing invalid was written");
    let response: FetchResponse = wire.send(&fetch("led", 5, 0, 1), 12).await;
    assert_eq!(
        response.responses[0].partitions[0].error_code,
        ec::OFFSET_OUT_OF_RANGE,
        "OFFSET_OUT_OF_RANGE"
    );
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_epochs_fence_stale_and_future_callers_and_answer_epoch_end_offsets() {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic};
    use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest};
    let (broker, addr, _dir) = setup("epochs").await;
    let mut wire = Wire::connect(&addr).await;
    for i in 0..2 {
        let batch = build_batch(0, -1, &[(None, Some(format!("v{i}").as_bytes()))], 1_000);
        let response: ProduceResponse = wire.send(&produce("led", 0, 1, batch), 9).await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    }
    // (topic, current leader epoch, requested epoch) → (error, epoch, end offset)
    let cases = [
        ("led", 1, 1, (ec::NONE, 1, 2)),
        ("led", -1, 0, (ec::NONE, 0, 0)), // below the first epoch: where the log starts
        ("led", 0, 1, (ec::FENCED_LEADER_EPOCH, -1, -1)),
        ("led", 2, 1, (ec::UNKNOWN_LEADER_EPOCH, -1, -1)),
        ("elsewhere", -1, 1, (ec::NOT_LEADER_OR_FOLLOWER, -1, -1)),
    ];
    for (topic, current, requested, expected) in cases {
        let request = OffsetForLeaderEpochRequest::default()
            .with_replica_id(KpBrokerId(-1))
            .with_topics(vec![OffsetForLeaderTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(current)
                    .with_leader_epoch(requested)])]);
        let response = wire.send(&request, 4).await;
        let p = &response.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.leader_epoch, p.end_offset),
            expected,
            "{topic} {current} {requested}"
        );
    }
    // KIP-320 on Fetch and ListOffsets too.
    let mut stale = fetch("led", 0, 0, 1);
    stale.topics[0].partitions[0].current_leader_epoch = 0;
    let response: FetchResponse = wire.send(&stale, 12).await;
    assert_eq!(response.responses[0].partitions[0].error_code, ec::FENCED_LEADER_EPOCH);
    let future = ListOffsetsRequest::default()
        .with_replica_id(KpBrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name("led"))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_current_leader_epoch(2)
                .with_timestamp(-1)])]);
    let response: ListOffsetsResponse = wire.send(&future, 4).await;
    assert_eq!(response.topics[0].partitions[0].error_code, ec::UNKNOWN_LEADER_EPOCH);
    broker.shutdown().await.expect("shutdown");
}
