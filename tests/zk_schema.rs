//! zk-schema/ is the contract for what kastle writes to ZooKeeper: every example validates,
//! every deliberately broken payload is refused, and every payload kastle writes round-trips
//! through its model and validates.

use std::fs;
use std::path::Path;

use kastle::zk::models::*;
use kastle::zk::paths::ZNodeKind;
use kastle::zk::schema::validate;

fn kind_named(name: &str) -> ZNodeKind {
    ZNodeKind::ALL
        .into_iter()
        .find(|k| k.schema_name() == name)
        .unwrap_or_else(|| panic!("no znode kind {name}"))
}

/// (file name, schema kind, raw bytes) of every file in `zk-schema/<dir>`.
fn files(dir: &str) -> Vec<(String, ZNodeKind, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("zk-schema").join(dir);
    let mut out = Vec::new();
    for entry in fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let path = entry.expect("dir entry").path();
        let file = path.file_name().expect("name").to_string_lossy().into_owned();
        let schema = file.split('.').next().expect("stem").to_string();
        out.push((file, kind_named(&schema), fs::read(&path).expect("read")));
    }
    out.sort();
    out
}

#[test]
fn every_example_validates_against_its_schema() {
    let examples = files("examples");
    for kind in ZNodeKind::ALL {
        assert!(
            examples.iter().any(|(_, k, _)| *k == kind),
            "no example for {}",
            kind.schema_name()
        );
    }
    for (file, kind, data) in examples {
        let problems = validate(kind, &data).expect("schema compiles");
        assert!(problems.is_empty(), "examples/{file}: {problems:?}");
    }
}

#[test]
fn every_invalid_payload_is_refused() {
    let invalid = files("invalid");
    assert!(!invalid.is_empty());
    for (file, kind, data) in invalid {
        let problems = validate(kind, &data).expect("schema compiles");
        assert!(!problems.is_empty(), "invalid/{file} was accepted");
    }
}

/// Decodes every example of `name` into `T`, re-encodes it, and checks the result validates and
/// decodes to the same value.
fn round_trip<T: ZNodePayload + PartialEq + std::fmt::Debug>(name: &str) {
    let kind = kind_named(name);
    let mut seen = 0;
    for (file, _, data) in files("examples")
        .into_iter()
        .filter(|(_, k, d)| *k == kind && !d.is_empty())
    {
        let value = T::decode(&data).unwrap_or_else(|e| panic!("examples/{file}: {e}"));
        let encoded = value.encode();
        let problems = validate(kind, &encoded).expect("schema compiles");
        assert!(problems.is_empty(), "re-encoded examples/{file}: {problems:?}");
        assert_eq!(T::decode(&encoded).expect("decode again"), value, "examples/{file}");
        seen += 1;
    }
    assert!(seen > 0, "no example decoded for {name}");
}

#[test]
fn kafka_payloads_round_trip_through_their_models() {
    round_trip::<BrokerRegistration>("broker-registration");
    round_trip::<ControllerZNode>("controller");
    round_trip::<ControllerEpochZNode>("controller-epoch");
    round_trip::<ClusterIdZNode>("cluster-id");
    round_trip::<TopicAssignment>("topic-assignment");
    round_trip::<PartitionState>("partition-state");
    round_trip::<IsrChangeNotification>("isr-change-notification");
    round_trip::<LogDirEventNotification>("log-dir-event-notification");
    round_trip::<ReassignPartitions>("reassign-partitions");
    round_trip::<PreferredReplicaElection>("preferred-replica-election");
    round_trip::<EntityConfig>("entity-config");
    round_trip::<ConfigChangeNotification>("config-change-notification");
    round_trip::<ProducerIdBlock>("producer-id-block");
    round_trip::<FeatureZNode>("feature");
}

#[test]
fn payloads_kastle_writes_validate() {
    let endpoints = [
        AdvertisedEndpoint {
            listener: "INTERNAL".into(),
            host: "kafka1".into(),
            port: 9092,
            security_protocol: "PLAINTEXT".into(),
        },
        AdvertisedEndpoint {
            listener: "EXTERNAL".into(),
            host: "localhost".into(),
            port: 19092,
            security_protocol: "PLAINTEXT".into(),
        },
    ];
    let written: Vec<(ZNodeKind, Vec<u8>)> = vec![
        (
            ZNodeKind::BrokerRegistration,
            BrokerRegistration::v5(&endpoints, Some("rack-a".into()), 1_700_000_000_000).encode(),
        ),
        (
            ZNodeKind::BrokerRegistration,
            BrokerRegistration::v5(&endpoints, None, 1).encode(),
        ),
        (
            ZNodeKind::ClusterId,
            ClusterIdZNode::new("Wt3qTl4hQUC3fp1Z2bHeVA".into()).encode(),
        ),
        (
            ZNodeKind::ControllerEpoch,
            ControllerEpochZNode(kastle::types::ControllerEpoch(0)).encode(),
        ),
        (
            ZNodeKind::ConfigChangeNotification,
            ConfigChangeNotification::v2("topics/orders".into()).encode(),
        ),
        (ZNodeKind::Empty, Vec::new()),
    ];
    for (kind, data) in written {
        let problems = validate(kind, &data).expect("schema compiles");
        assert!(
            problems.is_empty(),
            "{}: {} → {problems:?}",
            kind.schema_name(),
            String::from_utf8_lossy(&data)
        );
    }
}
