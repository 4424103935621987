//! The seed corpus: valid inputs kastle produces or reads, for each target, so the fuzzers start
//! from real requests, batches, znodes and files rather than from nothing.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::network::api_versions::SUPPORTED;
use crate::protocol::record_batch::codec::compress;
use crate::protocol::record_batch::Compression;
use crate::protocol::test_support::BatchBuilder;

/// One seed: the target it is for, a file name, and the bytes.
pub type Seed = (&'static str, String, Vec<u8>);

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// Every target's seeds.
pub fn all() -> Vec<Seed> {
    let mut seeds = Vec::new();
    requests(&mut seeds);
    batches(&mut seeds);
    znodes(&mut seeds);
    files(&mut seeds);
    seeds
}

/// A default request of `api_key`, the kind every served API decodes.
fn default_request(api_key: ApiKey) -> Option<RequestKind> {
    macro_rules! defaults {
        ($($name:ident),*) => {
            match api_key {
                $(ApiKey::$name => Some(RequestKind::$name(Default::default())),)*
                _ => None,
            }
        };
    }
    defaults!(
        Produce,
        Fetch,
        ListOffsets,
        Metadata,
        LeaderAndIsr,
        StopReplica,
        UpdateMetadata,
        ControlledShutdown,
        OffsetCommit,
        OffsetFetch,
        FindCoordinator,
        JoinGroup,
        Heartbeat,
        LeaveGroup,
        SyncGroup,
        DescribeGroups,
        ListGroups,
        ApiVersions,
        CreateTopics,
        DeleteTopics,
        DeleteRecords,
        InitProducerId,
        OffsetForLeaderEpoch,
        DescribeConfigs,
        AlterConfigs,
        CreatePartitions,
        DeleteGroups,
        ElectLeaders,
        IncrementalAlterConfigs,
        AlterPartitionReassignments,
        ListPartitionReassignments,
        OffsetDelete,
        DescribeCluster,
        CreateAcls,
        DescribeAcls,
        DeleteAcls,
        SaslHandshake,
        SaslAuthenticate,
        DescribeUserScramCredentials,
        AlterUserScramCredentials
    )
}

/// A header and body, without the size prefix; `None` if the codec cannot write that version.
fn encode_request(api_key: ApiKey, version: i16, request: &RequestKind) -> Option<Vec<u8>> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("kastle-seed")));
    let mut body = BytesMut::new();
    header.encode(&mut body, api_key.request_header_version(version)).ok()?;
    request.encode(&mut body, version).ok()?;
    Some(body.to_vec())
}

fn produce_with_batch(codec: Compression) -> RequestKind {
    let batch = BatchBuilder::new(0)
        .compression(codec)
        .record(Some(b"key"), Some(b"value"))
        .record(None, Some(b"second"))
        .build();
    let partition = PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(batch.into()));
    let topic = TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_static_str("seed")))
        .with_partition_data(vec![partition]);
    RequestKind::Produce(
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(1000)
            .with_topic_data(vec![topic]),
    )
}

fn requests(seeds: &mut Vec<Seed>) {
    let mut stream = Vec::new();
    for &(api_key, min, max) in SUPPORTED {
        let Some(request) = default_request(api_key) else {
            continue;
        };
        for version in min..=max {
            let mut bodies = vec![(
                format!("{api_key:?}-v{version}"),
                encode_request(api_key, version, &request),
            )];
            if api_key == ApiKey::Produce && version >= 3 {
                for codec in CODECS {
                    let name = format!("{api_key:?}-v{version}-{codec:?}");
                    bodies.push((name, encode_request(api_key, version, &produce_with_batch(codec))));
                }
            }
            for (name, body) in bodies {
                let Some(body) = body else {
                    continue;
                };
                let mut frame = BytesMut::new();
                frame.put_i32(i32::try_from(body.len()).unwrap_or(i32::MAX));
                frame.put_slice(&body);
                if stream.len() < 64 << 10 {
                    stream.extend_from_slice(&frame);
                }
                seeds.push(("request_frames", name.clone(), frame.to_vec()));
                seeds.push(("request", name, body));
            }
        }
    }
    seeds.push(("request_frames", "many-frames".into(), stream));
}

fn batches(seeds: &mut Vec<Seed>) {
    let mut concatenated = Vec::new();
    for codec in CODECS {
        let plain = BatchBuilder::new(0)
            .compression(codec)
            .record(Some(b"k1"), Some(b"v1"))
            .record(Some(b"k2"), None)
            .record(None, Some(b"v3"))
            .build();
        let idempotent = BatchBuilder::new(100)
            .leader_epoch(3)
            .timestamp(1_700_000_000_000)
            .producer(42, 1, 7)
            .compression(codec)
            .record(Some(b"key"), Some(b"value"))
            .build();
        let transactional = BatchBuilder::new(5)
            .producer(43, 0, 0)
            .transactional()
            .compression(codec)
            .record(None, Some(b"txn"))
            .build();
        concatenated.extend_from_slice(&plain);
        seeds.push(("record_batches", format!("plain-{codec:?}"), plain));
        seeds.push(("record_batches", format!("idempotent-{codec:?}"), idempotent));
        seeds.push(("record_batches", format!("transactional-{codec:?}"), transactional));
        let records = b"\x10\x00\x00\x00\x02k1\x04v1\x00".repeat(64);
        if let Ok(section) = compress(codec, &records) {
            let mut seed = vec![codec.id()];
            seed.extend_from_slice(&section);
            seeds.push(("decompress", format!("{codec:?}"), seed));
        }
    }
    let control = BatchBuilder::new(9)
        .producer(43, 0, 1)
        .transactional()
        .control()
        .record(Some(b"\x00\x00\x00\x01"), Some(b"\x00\x00\x00\x00\x00\x00"))
        .build();
    seeds.push(("record_batches", "control".into(), control));
    seeds.push(("record_batches", "concatenated".into(), concatenated));
}

/// Znode payloads as Kafka 3.9 writes them; the selector byte is the model's index in
/// [`super::files::zk_model`].
fn znodes(seeds: &mut Vec<Seed>) {
    let payloads: [&str; 14] = [
        r#"{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1700000000000","rack":"r1"}"#,
        r#"{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}"#,
        "3",
        r#"{"version":"1","id":"cUg4GJyxSxO4LPDI4Yu-Hw"}"#,
        r#"{"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAA","adding_replicas":{},"removing_replicas":{},"version":3}"#,
        r#"{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":4,"isr":[1,2],"leader_recovery_state":0}"#,
        r#"{"version":1,"partitions":[{"topic":"t","partition":0}]}"#,
        r#"{"version":1,"broker":1,"event":1}"#,
        r#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}"#,
        r#"{"version":1,"partitions":[{"topic":"t","partition":0}]}"#,
        r#"{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}"#,
        r#"{"version":2,"entity_path":"topics/t"}"#,
        r#"{"version":1,"broker":1,"block_start":"0","block_end":"999"}"#,
        r#"{"version":1,"status":1,"features":{"metadata.version":{"max_version_level":21,"min_version_level":1}}}"#,
    ];
    for (index, payload) in payloads.iter().enumerate() {
        let mut seed = vec![u8::try_from(index).unwrap_or(0)];
        seed.extend_from_slice(payload.as_bytes());
        seeds.push(("zk_model", format!("model-{index}"), seed));
    }
}

fn prefixed(selector: u8, contents: &[u8]) -> Vec<u8> {
    let mut seed = vec![selector];
    seed.extend_from_slice(contents);
    seed
}

fn files(seeds: &mut Vec<Seed>) {
    use crate::coordinator::group::schema::{group_key, offset_key};
    use crate::log::producer_state::ProducerStateEntry;
    let entries = [ProducerStateEntry::empty(42), ProducerStateEntry::empty(43)];
    let producer_snapshot = crate::log::producer_snapshot::encode(entries.iter());
    let log_files: [(u8, &str, Vec<u8>); 7] = [
        (0, "offsets", b"0\n2\ntopic 0 42\ntopic 1 7\n".to_vec()),
        (1, "leader-epochs", b"0\n2\n0 0\n3 120\n".to_vec()),
        (
            3,
            "meta",
            b"#\n#Tue Dec 01 00:00:00 UTC 2026\nbroker.id=1\nversion=0\ncluster.id=abc\n".to_vec(),
        ),
        (4, "clean-shutdown", br#"{"version":0,"broker_epoch":12}"#.to_vec()),
        (5, "offset-key", offset_key("group", "topic", 3)),
        (5, "group-key", group_key("group")),
        (2, "producer-snapshot", producer_snapshot),
    ];
    for (selector, name, contents) in log_files {
        seeds.push(("log_file", name.into(), prefixed(selector, &contents)));
    }
    let yaml = "broker.id: 1\nzookeeper.connect: localhost:2181\nlog.dirs: /tmp/kastle\nlisteners: PLAINTEXT://:9092\nnum.partitions: 3\n";
    let properties = "broker.id=1\nzookeeper.connect=localhost:2181\nlog.dirs=/tmp/kastle\n# comment\nlisteners=PLAINTEXT://:9092,\\\n  SSL://:9093\nnum.partitions = 3\n";
    seeds.push(("config_file", "server.yaml".into(), prefixed(0, yaml.as_bytes())));
    seeds.push((
        "config_file",
        "server.properties".into(),
        prefixed(1, properties.as_bytes()),
    ));
    let jaas = [
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="secret" user_admin="secret";"#,
        "KafkaServer {\n  org.apache.kafka.common.security.scram.ScramLoginModule required\n  username=\"a\" password=\"b\";\n};\nClient {\n  org.apache.zookeeper.server.auth.DigestLoginModule required username=\"z\" password=\"p\";\n};\n",
    ];
    for (index, text) in jaas.iter().enumerate() {
        seeds.push(("jaas", format!("jaas-{index}"), text.as_bytes().to_vec()));
    }
}
