//! Dynamic configuration against a real ZooKeeper and broker processes: AlterConfigs and
//! IncrementalAlterConfigs from confluent-kafka's and kafka-python's admin clients write
//! `/config/<type>/<entity>` and a `/config/changes` notification, and every broker applies the
//! change without a restart — a topic's `retention.ms` and `min.insync.replicas` (an acks=all
//! producer gets NOT_ENOUGH_REPLICAS once it is raised above the ISR), a cluster-wide
//! `log.retention.ms` through `<default>` with a per-broker value overriding it, and
//! `cleanup.policy` delete → compact. Bad input gets Kafka's codes and messages and leaves
//! ZooKeeper as it was.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use common::cluster::{cluster_ready, metadata, partition_in};
use common::replicas::{create_topic, isr, leader, produce_request};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, wait_until_else, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::{
    alter_configs_request, AlterConfigsRequest, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;
use kastle::zk::paths::ZNodeKind;
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

/// confluent-kafka AdminClient: `alter_configs` (argv[2] = "legacy") or
/// `incremental_alter_configs` on resource type argv[3] ("topic"/"broker") named argv[4], with
/// `OP:key=value` arguments (legacy takes `SET:` only). Prints "ok" or the error.
const CONFLUENT_ALTER: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigEntry, AlterConfigOpType
bootstrap, mode, kind, name = sys.argv[1:5]
a = AdminClient({"bootstrap.servers": bootstrap})
specs = [s.split(":", 1) for s in sys.argv[5:]]
if mode == "legacy":
    res = ConfigResource(kind, name, set_config={kv.split("=", 1)[0]: kv.split("=", 1)[1] for _, kv in specs})
    futures = a.alter_configs([res])
else:
    entries = []
    for op, kv in specs:
        k, _, v = kv.partition("=")
        entries.append(ConfigEntry(k, v, incremental_operation=getattr(AlterConfigOpType, op)))
    futures = a.incremental_alter_configs([ConfigResource(kind, name, incremental_configs=entries)])
for f in futures.values():
    try:
        f.result(30)
    except Exception as e:
        print("error", e)
        raise SystemExit(0)
print("ok")
"#;

/// kafka-python's admin: IncrementalAlterConfigs SET of `key=value` arguments on resource
/// type argv[2] ("topic"/"broker") named argv[3].
const KAFKA_PYTHON_ALTER: &str = r#"
import sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
kind = ConfigResourceType.TOPIC if sys.argv[2] == "topic" else ConfigResourceType.BROKER
configs = dict(kv.split("=", 1) for kv in sys.argv[4:])
result = a.alter_configs([ConfigResource(kind, sys.argv[3], configs=configs)],
                         raise_on_unknown=False, incremental=True)
a.close()
print("ok", result)
"#;

/// confluent-kafka: creates topic argv[2] (1 partition, RF argv[3], `key=value` configs).
const CREATE_TOPIC: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
config = dict(kv.split("=", 1) for kv in sys.argv[4:])
for f in a.create_topics([NewTopic(sys.argv[2], 1, int(sys.argv[3]), config=config)]).values():
    f.result(60)
print("ok")
"#;

/// confluent-kafka: argv[3] records to topic argv[2] (keys k0..k9 when argv[4] == "keyed"),
/// acks=all, small batches.
const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "acks": "all", "linger.ms": 0, "batch.size": 1024})
keyed = len(sys.argv) > 4 and sys.argv[4] == "keyed"
for i in range(int(sys.argv[3])):
    p.produce(sys.argv[2], key=(f"k{i % 10}" if keyed else None), value=f"value-{i:05d}-" + "x" * 100)
    if i % 50 == 49:
        p.flush(60)
assert p.flush(60) == 0
print("ok")
"#;

fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new(common::python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn python_async(script: &'static str, args: Vec<String>) -> String {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        python(script, &args)
    })
    .await
    .expect("python task")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

async fn bootstrap(zk: &ZkSession, ids: &[i32]) -> String {
    let mut addrs = Vec::new();
    for id in ids {
        addrs.push(bootstrap_of(zk, *id).await);
    }
    addrs.join(",")
}

fn spec(chroot: &str, id: i32, extra: &[(&str, &str)]) -> BrokerSpec {
    extra.iter().fold(
        BrokerSpec::new(id, &zookeeper().connect(chroot)).session_timeout_ms(3_000),
        |s, (k, v)| s.with(k, v),
    )
}

/// The notifications under `/config/changes` (names and payloads), each checked against its schema.
async fn notifications(zk: &ZkSession) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for child in zk.children("/config/changes").await.unwrap_or_default() {
        if let Ok((data, _)) = zk.get_data(&format!("/config/changes/{child}")).await {
            let problems = kastle::zk::schema::validate(ZNodeKind::ConfigChangeNotification, &data).expect("schema");
            assert!(problems.is_empty(), "{child}: {problems:?}");
            out.push((child, String::from_utf8_lossy(&data).into_owned()));
        }
    }
    out
}

/// `/config/<path>`'s payload, checked against its schema.
async fn entity(zk: &ZkSession, path: &str) -> Option<String> {
    let (data, _) = zk.get_data(&format!("/config/{path}")).await.ok()?;
    let problems = kastle::zk::schema::validate(ZNodeKind::EntityConfig, &data).expect("schema");
    assert!(problems.is_empty(), "{path}: {problems:?}");
    Some(String::from_utf8_lossy(&data).into_owned())
}

/// Waits until each of `ids` has `topic-0` with a leader in its metadata: until then it
/// answers an alter of the topic with UNKNOWN_TOPIC_OR_PARTITION, as Kafka does.
async fn known_to(zk: &ZkSession, ids: &[i32], topic: &str) {
    for id in ids {
        wait_until(
            Duration::from_secs(20),
            "the topic in the broker's metadata",
            || async { partition_in(&metadata(zk, *id).await, topic, 0).is_some_and(|(leader, _, _)| leader >= 0) },
        )
        .await;
    }
}

/// The `.log` segment files of `topic-0` (not those renamed `.deleted`).
fn segment_count(log_dir: &Path, topic: &str) -> usize {
    std::fs::read_dir(log_dir.join(format!("{topic}-0")))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .count()
        })
        .unwrap_or(0)
}

/// An acks=all produce of one record to `live-0`: its error code.
async fn produce_code(wire: &Mutex<Wire>) -> i16 {
    let response = wire.lock().await.send(&produce_request("live", -1, b"v"), 9).await;
    response.responses[0].partition_responses[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_changes_reach_every_broker_live_and_a_raised_min_isr_refuses_acks_all() {
    common::init_logging();
    let chroot = unique_chroot("dyn_topic");
    let mut brokers: Vec<Option<BrokerProcess>> = (1..=3)
        .map(|id| Some(BrokerProcess::start(&spec(&chroot, id, &[]))))
        .collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    create_topic(&zk, "live", "[1,2,3]").await;
    wait_until(Duration::from_secs(30), "ISR of three", || async {
        isr(&zk, "live").await.len() == 3
    })
    .await;
    known_to(&zk, &[1, 2, 3], "live").await;
    let all = bootstrap(&zk, &[1, 2, 3]).await;

    // AlterConfigs (confluent-kafka's legacy call): a config_change znode, then every broker
    // applies the new retention within 2 s.
    let started = Instant::now();
    let out = python_async(
        CONFLUENT_ALTER,
        strings(&[&all, "legacy", "topic", "live", "SET:retention.ms=3600000"]),
    )
    .await;
    assert_eq!(out, "ok");
    assert_eq!(
        notifications(&zk)
            .await
            .iter()
            .map(|(_, d)| d.as_str())
            .collect::<Vec<_>>(),
        [r#"{"version":2,"entity_path":"topics/live"}"#]
    );
    assert_eq!(
        entity(&zk, "topics/live").await.as_deref(),
        Some(r#"{"version":1,"config":{"retention.ms":"3600000"}}"#)
    );
    wait_until_else(
        Duration::from_secs(2),
        "every broker applied retention.ms",
        || async {
            brokers.iter().flatten().all(|b| {
                b.stderr()
                    .lines()
                    .any(|l| l.contains("applying a topic config change topic=live") && l.contains("3600000"))
            })
        },
        || {
            brokers
                .iter()
                .flatten()
                .map(|b| b.stderr())
                .collect::<Vec<_>>()
                .join("\n---\n")
        },
    )
    .await;
    let applied_in = started.elapsed();

    // A follower goes: the ISR is two, enough for acks=all at the default min.insync.replicas=1.
    let lead = leader(&zk, "live").await;
    let follower = (1..=3).find(|id| *id != lead).expect("a follower");
    brokers[(follower - 1) as usize] = None;
    wait_until(Duration::from_secs(30), "ISR of two", || async {
        isr(&zk, "live").await.len() == 2
    })
    .await;
    let wire = Arc::new(Mutex::new(Wire::connect(&bootstrap_of(&zk, lead).await).await));
    assert_eq!(produce_code(&wire).await, ec::NONE);

    // kafka-python's IncrementalAlterConfigs raises min.insync.replicas above the ISR: the
    // leader refuses acks=all writes within 2 s, without a restart.
    let live: Vec<i32> = (1..=3).filter(|id| *id != follower).collect();
    let out = python_async(
        KAFKA_PYTHON_ALTER,
        strings(&[&bootstrap(&zk, &live).await, "topic", "live", "min.insync.replicas=3"]),
    )
    .await;
    assert!(out.starts_with("ok"), "{out}");
    let raised = Instant::now();
    wait_until(Duration::from_secs(2), "NOT_ENOUGH_REPLICAS", || {
        let wire = wire.clone();
        async move { produce_code(&wire).await == ec::NOT_ENOUGH_REPLICAS }
    })
    .await;
    let refused_in = raised.elapsed();
    assert_eq!(
        entity(&zk, "topics/live").await.as_deref(),
        Some(r#"{"version":1,"config":{"min.insync.replicas":"3","retention.ms":"3600000"}}"#),
        "the incremental call kept retention.ms"
    );
    assert_eq!(notifications(&zk).await.len(), 2);
    let other = live.iter().copied().find(|id| *id != lead).expect("the other follower");
    wait_until(Duration::from_secs(2), "the live follower applied it too", || async {
        brokers[(other - 1) as usize].as_ref().is_some_and(|b| {
            b.stderr()
                .lines()
                .any(|l| l.contains("applying a topic config change topic=live") && l.contains("min.insync.replicas"))
        })
    })
    .await;
    eprintln!("retention applied on all brokers in {applied_in:?}; acks=all refused {refused_in:?} after the raise");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_wide_retention_deletes_old_segments_everywhere_but_where_a_broker_value_overrides_it() {
    common::init_logging();
    let chroot = unique_chroot("dyn_broker");
    let extra = [
        ("log.retention.check.interval.ms", "200"),
        ("log.segment.bytes", "2048"),
    ];
    let brokers: Vec<BrokerProcess> = (1..=3)
        .map(|id| BrokerProcess::start(&spec(&chroot, id, &extra)))
        .collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let all = bootstrap(&zk, &[1, 2, 3]).await;
    assert_eq!(python_async(CREATE_TOPIC, strings(&[&all, "old", "3"])).await, "ok");
    assert_eq!(python_async(PRODUCE, strings(&[&all, "old", "200"])).await, "ok");
    let segments = |b: &BrokerProcess| segment_count(&b.log_dir, "old");
    wait_until(Duration::from_secs(30), "several segments on every replica", || async {
        brokers.iter().all(|b| segments(b) >= 5)
    })
    .await;

    // Broker 2 keeps a week (its own entity), then the cluster default drops to one second.
    let out = python_async(
        CONFLUENT_ALTER,
        strings(&[&all, "incremental", "broker", "2", "SET:log.retention.ms=604800000"]),
    )
    .await;
    assert_eq!(out, "ok");
    // Neither Python client can name the `<default>` entity (""); Kafka's kafka-configs.sh
    // --entity-default sends this request.
    let mut wire = Wire::connect(&bootstrap_of(&zk, 3).await).await;
    let request = incremental(vec![(4, "", vec![("log.retention.ms", 0, Some("1000"))])]);
    let response: IncrementalAlterConfigsResponse = wire.send(&request, 1).await;
    assert_eq!(outcomes(&response), [(String::new(), ec::NONE, String::new())]);
    assert_eq!(
        entity(&zk, "brokers/<default>").await.as_deref(),
        Some(r#"{"version":1,"config":{"log.retention.ms":"1000"}}"#)
    );
    assert!(notifications(&zk)
        .await
        .iter()
        .any(|(_, d)| d == r#"{"version":2,"entity_path":"brokers/<default>"}"#));
    wait_until_else(
        Duration::from_secs(30),
        "old segments deleted on brokers 1 and 3",
        || async { segments(&brokers[0]) == 1 && segments(&brokers[2]) == 1 },
        || format!("segments: {:?}", brokers.iter().map(segments).collect::<Vec<_>>()),
    )
    .await;
    assert!(
        brokers[1]
            .stderr()
            .contains(r#"applying the dynamic broker configs cluster={"log.retention.ms": "1000"}"#),
        "broker 2 saw the default too"
    );
    assert!(segments(&brokers[1]) >= 5, "broker 2's own value wins on broker 2");

    // Its override deleted, broker 2 follows the cluster default as well.
    let out = python_async(
        CONFLUENT_ALTER,
        strings(&[&all, "incremental", "broker", "2", "DELETE:log.retention.ms"]),
    )
    .await;
    assert_eq!(out, "ok");
    wait_until(Duration::from_secs(30), "old segments deleted on broker 2", || async {
        segments(&brokers[1]) == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_topic_switched_from_delete_to_compact_gets_compacted() {
    common::init_logging();
    let chroot = unique_chroot("dyn_compact");
    let broker = BrokerProcess::start(&spec(&chroot, 1, &[("log.cleaner.backoff.ms", "100")]));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    let addr = bootstrap_of(&zk, 1).await;
    assert_eq!(
        python_async(
            CREATE_TOPIC,
            strings(&[
                &addr,
                "switch",
                "1",
                "segment.bytes=4096",
                "min.cleanable.dirty.ratio=0.01"
            ])
        )
        .await,
        "ok"
    );
    assert_eq!(
        python_async(PRODUCE, strings(&[&addr, "switch", "600", "keyed"])).await,
        "ok"
    );
    let segments_before = segment_count(&broker.log_dir, "switch");
    assert!(segments_before >= 5, "{segments_before} segments");
    let bytes = || -> u64 {
        std::fs::read_dir(broker.log_dir.join("switch-0"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                    .filter_map(|e| e.metadata().ok().map(|m| m.len()))
                    .sum()
            })
            .unwrap_or(0)
    };
    let before = bytes();

    // APPEND compact (to the default, delete), then SUBTRACT delete: the policy becomes
    // "compact" and the cleaner takes the log.
    for op in ["APPEND:cleanup.policy=compact", "SUBTRACT:cleanup.policy=delete"] {
        let out = python_async(CONFLUENT_ALTER, strings(&[&addr, "incremental", "topic", "switch", op])).await;
        assert_eq!(out, "ok");
    }
    assert!(entity(&zk, "topics/switch")
        .await
        .is_some_and(|e| e.contains(r#""cleanup.policy":"compact""#)));
    wait_until_else(
        Duration::from_secs(30),
        "the log compacted",
        || async { bytes() * 4 < before },
        || format!("{} of {before} bytes\n{}", bytes(), broker.stderr()),
    )
    .await;
}

/// One config of an IncrementalAlterConfigs resource: name, operation id, value.
type Change<'a> = (&'a str, i8, Option<&'a str>);

/// An IncrementalAlterConfigs request: (resource type, name, changes) per resource.
fn incremental(resources: Vec<(i8, &str, Vec<Change<'_>>)>) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest::default().with_resources(
        resources
            .into_iter()
            .map(|(kind, name, configs)| {
                AlterConfigsResource::default()
                    .with_resource_type(kind)
                    .with_resource_name(StrBytes::from_string(name.to_string()))
                    .with_configs(
                        configs
                            .into_iter()
                            .map(|(k, op, v)| {
                                AlterableConfig::default()
                                    .with_name(StrBytes::from_string(k.to_string()))
                                    .with_config_operation(op)
                                    .with_value(v.map(|v| StrBytes::from_string(v.to_string())))
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

fn outcomes(response: &IncrementalAlterConfigsResponse) -> Vec<(String, i16, String)> {
    response
        .responses
        .iter()
        .map(|r| {
            (
                r.resource_name.to_string(),
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default(),
            )
        })
        .collect()
}

/// Everything under `/config` (paths and payloads).
async fn config_tree(zk: &ZkSession) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for kind in ["changes", "topics", "brokers"] {
        for child in zk.children(&format!("/config/{kind}")).await.unwrap_or_default() {
            let path = format!("/config/{kind}/{child}");
            let data = zk.get_data(&path).await.map(|(d, _)| d).unwrap_or_default();
            out.push((path, String::from_utf8_lossy(&data).into_owned()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_kafkas_errors_and_leaves_zookeeper_unchanged() {
    common::init_logging();
    let chroot = unique_chroot("dyn_bad");
    let _broker = BrokerProcess::start(&spec(&chroot, 1, &[]));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    create_topic(&zk, "t", "[1]").await;
    let shared = Arc::new(Mutex::new(Wire::connect(&bootstrap_of(&zk, 1).await).await));
    wait_until(Duration::from_secs(10), "the topic in the broker's metadata", || {
        let wire = shared.clone();
        async move {
            let check = incremental(vec![(2, "t", vec![("retention.ms", 0, Some("1"))])]).with_validate_only(true);
            let response: IncrementalAlterConfigsResponse = wire.lock().await.send(&check, 1).await;
            response.responses[0].error_code == ec::NONE
        }
    })
    .await;
    let mut wire = shared.lock().await;
    let before = config_tree(&zk).await;

    let (set, delete, append) = (0, 1, 2);
    let response: IncrementalAlterConfigsResponse = wire
        .send(
            &incremental(vec![
                (2, "t", vec![("no.such.config", set, Some("1"))]),
                (2, "t2", vec![("retention.ms", set, Some("soon"))]),
                (2, "missing", vec![("retention.ms", set, Some("1000"))]),
                (4, "1", vec![("broker.id", set, Some("7"))]),
                (4, "", vec![("log.retention.ms", set, Some("ten"))]),
                (4, "2", vec![("log.retention.ms", set, Some("10"))]),
                (2, "t3", vec![("retention.ms", append, Some("1"))]),
                (2, "t4", vec![("retention.ms", 9, Some("1"))]),
                (2, "t5", vec![("retention.ms", set, None), ("flush.ms", delete, None)]),
            ]),
            1,
        )
        .await;
    // Topics t2..t5 do not exist either: the refusal Kafka gives first is the one expected.
    let expected = [
        ("t", ec::INVALID_CONFIG, "Unknown topic config name: no.such.config"),
        ("t2", ec::UNKNOWN_TOPIC_OR_PARTITION, "The topic 't2' does not exist."),
        (
            "missing",
            ec::UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'missing' does not exist.",
        ),
        (
            "1",
            ec::INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(broker.id)",
        ),
        (
            "",
            ec::INVALID_REQUEST,
            "Invalid value ten for configuration log.retention.ms: Not a number of type LONG",
        ),
        (
            "2",
            ec::INVALID_REQUEST,
            "Unexpected broker id, expected 1, but received 2",
        ),
        (
            "t3",
            ec::INVALID_CONFIG,
            "Config value append is not allowed for config key: retention.ms",
        ),
        ("t4", ec::INVALID_REQUEST, "Unknown operations type 9"),
        ("t5", ec::INVALID_REQUEST, "Null value not supported for : retention.ms"),
    ];
    let got = outcomes(&response);
    let expected: Vec<(String, i16, String)> = expected
        .iter()
        .map(|(n, c, m)| (n.to_string(), *c, m.to_string()))
        .collect();
    assert_eq!(got, expected);

    // A non-numeric value on an existing topic: INVALID_CONFIG with Kafka's full message.
    let response: IncrementalAlterConfigsResponse = wire
        .send(
            &incremental(vec![(2, "t", vec![("retention.ms", set, Some("soon"))])]),
            1,
        )
        .await;
    assert_eq!(
        outcomes(&response),
        [(
            "t".to_string(),
            ec::INVALID_CONFIG,
            "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): Invalid value soon for \
             configuration retention.ms: Not a number of type LONG"
                .to_string()
        )]
    );
    // The same resource twice: both refused.
    let twice = incremental(vec![
        (2, "t", vec![("retention.ms", set, Some("5"))]),
        (2, "t", vec![("retention.ms", set, Some("6"))]),
    ]);
    let response: IncrementalAlterConfigsResponse = wire.send(&twice, 1).await;
    assert!(outcomes(&response)
        .iter()
        .all(|(_, c, m)| *c == ec::INVALID_REQUEST && m == "Each resource must appear at most once."));
    // A dynamic password would be stored in clear: refused as Kafka refuses it without
    // `password.encoder.secret`.
    let password = incremental(vec![(
        4,
        "1",
        vec![("listener.name.plaintext.ssl.key.password", set, Some("s3cret"))],
    )]);
    let response: IncrementalAlterConfigsResponse = wire.send(&password, 1).await;
    assert_eq!(
        outcomes(&response),
        [(
            "1".to_string(),
            ec::INVALID_CONFIG,
            "Invalid config value for resource ConfigResource(type=BROKER, name='1'): Password encoder secret not \
             configured"
                .to_string()
        )]
    );
    // validate_only checks, answers NONE, writes nothing.
    let response: IncrementalAlterConfigsResponse = wire
        .send(
            &incremental(vec![(2, "t", vec![("retention.ms", set, Some("5"))])]).with_validate_only(true),
            1,
        )
        .await;
    assert_eq!(response.responses[0].error_code, ec::NONE);
    // The legacy AlterConfigs refuses the same way.
    let legacy =
        AlterConfigsRequest::default().with_resources(vec![alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("t"))
            .with_configs(vec![alter_configs_request::AlterableConfig::default()
                .with_name(StrBytes::from_static_str("segment.bytes"))
                .with_value(Some(StrBytes::from_static_str("big")))])]);
    let response = wire.send(&legacy, 2).await;
    assert_eq!(response.responses[0].error_code, ec::INVALID_CONFIG);
    assert_eq!(
        response.responses[0].error_message.as_ref().map(|m| m.to_string()),
        Some(
            "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): Invalid value big for \
             configuration segment.bytes: Not a number of type INT"
                .to_string()
        )
    );

    assert_eq!(config_tree(&zk).await, before, "nothing written to ZooKeeper");
}

/// The controller reads a topic's `unclean.leader.election.enable` from its live config: with
/// the broker default off, a topic altered to allow it gets a leader from outside the ISR when
/// its only in-sync replica is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_takes_unclean_leader_election_from_the_live_topic_config() {
    common::init_logging();
    let chroot = unique_chroot("dyn_unclean");
    let specs: Vec<BrokerSpec> = (1..=2).map(|id| spec(&chroot, id, &[])).collect();
    let mut first = Some(BrokerProcess::start(&specs[0]));
    let second = BrokerProcess::start(&specs[1]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    create_topic(&zk, "risky", "[1,2]").await;
    wait_until(Duration::from_secs(30), "ISR of two", || async {
        isr(&zk, "risky").await.len() == 2
    })
    .await;
    known_to(&zk, &[1], "risky").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
    let request = incremental(vec![(
        2,
        "risky",
        vec![("unclean.leader.election.enable", 0, Some("true"))],
    )]);
    let response: IncrementalAlterConfigsResponse = wire.send(&request, 1).await;
    assert_eq!(outcomes(&response), [("risky".to_string(), ec::NONE, String::new())]);

    // Broker 2 goes, then the leader: the only in-sync replica is down.
    second.signal("KILL");
    wait_until(Duration::from_secs(30), "ISR of broker 1 alone", || async {
        isr(&zk, "risky").await == [1] && leader(&zk, "risky").await == 1
    })
    .await;
    first.take();
    let second = second.restart(&specs[1]);
    wait_until_else(
        Duration::from_secs(30),
        "broker 2 elected uncleanly",
        || async { leader(&zk, "risky").await == 2 },
        || second.stderr(),
    )
    .await;
}
