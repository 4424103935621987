//! DescribeConfigs through unmodified clients, against a real ZooKeeper: confluent-kafka's and
//! kafka-python's `describe_configs` see a topic override as DYNAMIC_TOPIC_CONFIG with its
//! synonyms, other topic configs as DEFAULT_CONFIG or STATIC_BROKER_CONFIG, broker keys from
//! server.properties as STATIC_BROKER_CONFIG, secrets as null, and a hand-written
//! `/config/brokers/<default>` znode as DYNAMIC_DEFAULT_BROKER_CONFIG. Also: a server.properties
//! with every broker key Kafka 3.9 documents starts a broker (with one warning).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::wire::Wire;
use common::{unique_chroot, zookeeper, BrokerSpec};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::protocol::StrBytes;
use kastle::config::KafkaConfig;
use kastle::protocol::error_codes as ec;
use kastle::server::{Broker, BrokerHandle};
use kastle::zk::store::{CreateMode, ZkStore};
use serde_json::Value;

/// One broker (its own controller) with a few static keys set.
async fn broker(test: &str) -> (BrokerHandle, String, String, tempfile::TempDir) {
    common::init_logging();
    let chroot = unique_chroot(test);
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = BrokerSpec::new(1, &zookeeper().connect(&chroot))
        .with("log.retention.hours", "48")
        .with("log.segment.bytes", "2097152")
        .with("ssl.keystore.password", "s3cret")
        .with("offsets.topic.replication.factor", "1");
    let pairs = spec.pairs(dir.path());
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let addr = format!("127.0.0.1:{}", broker.advertised_endpoints()[0].port);
    (broker, addr, chroot, dir)
}

fn python(script: &str, args: &[&str]) -> Value {
    let out = Command::new(common::python())
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Creates `topic` with `retention.ms=3600000`, then describes it, broker 1 and the cluster
/// default; prints {resource: {name: {value, source, sensitive, read_only, synonyms}}}.
const CONFLUENT: &str = r#"
import json, sys
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource, ResourceType
addr, topic = sys.argv[1], sys.argv[2]
a = AdminClient({"bootstrap.servers": addr})
a.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])[topic].result(30)
out = {}
for key, res in [("topic", ConfigResource(ResourceType.TOPIC, topic)),
                 ("broker", ConfigResource(ResourceType.BROKER, "1"))]:
    entries = a.describe_configs([res])[res].result(30)
    out[key] = {n: {"value": e.value, "source": e.source, "sensitive": e.is_sensitive,
                    "read_only": e.is_read_only,
                    "synonyms": [[s.name, s.value, s.source] for s in e.synonyms.values()]}
                for n, e in entries.items()}
print(json.dumps(out))
"#;

/// kafka-python's admin: every config of the topic and broker 1, with synonyms.
const KAFKA_PYTHON: &str = r#"
import json, sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
addr, topic = sys.argv[1], sys.argv[2]
a = KafkaAdminClient(bootstrap_servers=addr)
ret = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic),
                          ConfigResource(ConfigResourceType.BROKER, "1")],
                         include_synonyms=True, config_filter="all")
print(json.dumps(ret, default=str))
"#;

fn entry<'a>(resource: &'a Value, name: &str) -> &'a Value {
    resource.get(name).unwrap_or_else(|| panic!("no {name} in {resource}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_see_topic_and_broker_configs_with_kafkas_sources_and_synonyms() {
    let (broker, addr, chroot, _dir) = broker("describecfg").await;
    // Written by hand, as Kafka's AdminZkClient writes it.
    let zk = zookeeper().session(&chroot).await;
    zk.create(
        "/config/brokers/<default>",
        br#"{"version":1,"config":{"log.cleaner.threads":"2","broker.id":"9"}}"#,
        CreateMode::Persistent,
    )
    .await
    .expect("write /config/brokers/<default>");

    let (a, t) = (addr.clone(), "described".to_string());
    let ck = tokio::task::spawn_blocking(move || python(CONFLUENT, &[&a, &t]))
        .await
        .expect("confluent-kafka");
    // ConfigSource names as confluent-kafka numbers them (librdkafka's = Kafka's ids).
    let (topic_src, default_broker_src, static_src, default_src) = (1, 3, 4, 5);
    let topic = &ck["topic"];
    let retention = entry(topic, "retention.ms");
    assert_eq!(retention["value"], "3600000", "{retention}");
    assert_eq!(retention["source"], topic_src, "{retention}");
    assert_eq!(
        retention["synonyms"][0],
        serde_json::json!(["retention.ms", "3600000", topic_src])
    );
    let segment = entry(topic, "segment.bytes");
    assert_eq!(segment["value"], "2097152");
    assert_eq!(segment["source"], static_src, "{segment}");
    // confluent-kafka keys synonyms by name, so the default layer's log.segment.bytes shadows
    // the static one there; kafka-python below keeps the list.
    assert!(
        segment["synonyms"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s[0] == "log.segment.bytes")),
        "{segment}"
    );
    let cleanup = entry(topic, "cleanup.policy");
    assert_eq!(
        (&cleanup["value"], &cleanup["source"]),
        (&"delete".into(), &default_src.into())
    );

    let b = &ck["broker"];
    let hours = entry(b, "log.retention.hours");
    assert_eq!(
        (&hours["value"], &hours["source"]),
        (&"48".into(), &static_src.into()),
        "{hours}"
    );
    assert_eq!(hours["read_only"], true);
    let password = entry(b, "ssl.keystore.password");
    assert!(
        password["value"].is_null() && password["sensitive"] == true,
        "{password}"
    );
    let threads = entry(b, "log.cleaner.threads");
    assert_eq!(
        (&threads["value"], &threads["source"]),
        (&"2".into(), &default_broker_src.into()),
        "{threads}"
    );
    assert_eq!(
        entry(b, "broker.id")["value"],
        "1",
        "a read-only key in <default> is ignored"
    );
    assert_eq!(entry(b, "num.io.threads")["source"], default_src);

    let (a, t) = (addr.clone(), "described".to_string());
    let kp = tokio::task::spawn_blocking(move || python(KAFKA_PYTHON, &[&a, &t]))
        .await
        .expect("kafka-python");
    let topic = &kp["topic"]["described"];
    let retention = entry(topic, "retention.ms");
    assert_eq!(retention["value"], "3600000", "{retention}");
    assert_eq!(retention["config_source"], "DYNAMIC_TOPIC_CONFIG", "{retention}");
    let segment = entry(topic, "segment.bytes");
    assert_eq!(segment["config_source"], "STATIC_BROKER_CONFIG", "{segment}");
    assert_eq!(
        segment["synonyms"],
        serde_json::json!([
            {"name": "log.segment.bytes", "source": "STATIC_BROKER_CONFIG", "value": "2097152"},
            {"name": "log.segment.bytes", "source": "DEFAULT_CONFIG", "value": "1073741824"},
        ])
    );
    let b = &kp["broker"]["1"];
    let segment = entry(b, "log.segment.bytes");
    assert_eq!(segment["config_source"], "STATIC_BROKER_CONFIG", "{segment}");
    assert!(entry(b, "ssl.keystore.password")["value"].is_null());

    // What the clients above cannot ask: the cluster-default resource, the root logger, a key
    // filter with documentation (v4), v0's is_default, and an unknown topic.
    let mut wire = Wire::connect(&addr).await;
    let resource = |ty: i8, name: &str, keys: Option<Vec<&str>>| {
        let mut r = DescribeConfigsResource::default();
        r.resource_type = ty;
        r.resource_name = StrBytes::from_string(name.to_string());
        r.configuration_keys = keys.map(|k| k.into_iter().map(|k| StrBytes::from_string(k.to_string())).collect());
        r
    };
    let mut request = DescribeConfigsRequest::default();
    request.include_synonyms = true;
    request.include_documentation = true;
    request.resources = vec![
        resource(4, "", None),
        resource(8, "1", None),
        resource(2, "described", Some(vec!["retention.ms", "no.such.key"])),
        resource(2, "missing", None),
        resource(4, "2", None),
    ];
    let response = wire.send(&request, 4).await;
    let [default, logger, filtered, missing, other] = &response.results[..] else {
        panic!("five results: {response:?}");
    };
    let names = |r: &kafka_protocol::messages::describe_configs_response::DescribeConfigsResult| {
        r.configs.iter().map(|c| c.name.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(names(default), ["log.cleaner.threads"], "{default:?}");
    assert_eq!(default.configs[0].config_source, 3);
    assert_eq!(names(logger), ["root"]);
    // In-process, this test's tracing filter decides the level (OFF unless KASTLE_TEST_LOG).
    assert_eq!(logger.configs[0].config_source, 6);
    let level = logger.configs[0].value.as_deref().unwrap_or_default();
    assert!(
        ["OFF", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&level),
        "{level}"
    );
    assert_eq!(names(filtered), ["retention.ms"]);
    let retention = &filtered.configs[0];
    assert_eq!(retention.config_type, 5, "LONG");
    assert!(
        retention
            .documentation
            .as_deref()
            .is_some_and(|d| d.contains("retain a log")),
        "{retention:?}"
    );
    assert_eq!(missing.error_code, ec::UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(other.error_code, ec::INVALID_REQUEST);
    assert_eq!(
        other.error_message.as_deref(),
        Some("Unexpected broker id, expected 1 or empty string, but received 2")
    );
    request.include_synonyms = false;
    request.include_documentation = false;
    let v0 = wire.send(&request, 0).await;
    let defaulted = v0.results[2]
        .configs
        .iter()
        .find(|c| c.name.as_str() == "retention.ms")
        .expect("retention.ms");
    assert!(!defaulted.is_default, "an override is not a default");
    let cleanup = &v0.results[0].configs[0];
    assert_eq!(cleanup.name.as_str(), "log.cleaner.threads");
    assert!(!cleanup.is_default, "a <default> value is not Kafka's default");
    let request = {
        let mut r = DescribeConfigsRequest::default();
        r.resources = vec![resource(2, "described", Some(vec!["cleanup.policy"]))];
        r
    };
    let v0 = wire.send(&request, 0).await;
    assert!(v0.results[0].configs[0].is_default, "{v0:?}");
    broker.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_properties_with_every_kafka_3_9_broker_key_starts_a_broker_with_one_warning() {
    let chroot = unique_chroot("allkeys");
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kafka-3.9-all-broker-keys.properties"
    );
    let text = std::fs::read_to_string(fixture)
        .expect("fixture")
        .replace("@ZOOKEEPER_CONNECT@", &zookeeper().connect(&chroot))
        .replace("@LOG_DIRS@", &dir.path().join("logs").display().to_string());
    let config = dir.path().join("server.properties");
    std::fs::write(&config, text).expect("write");
    let stderr_path = dir.path().join("stderr.log");
    let child = Command::new(env!("CARGO_BIN_EXE_kastle"))
        .args(["broker", "--config"])
        .arg(&config)
        .env("KASTLE_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("spawn kastle");
    let guard = KillOnDrop(std::sync::Mutex::new(child));
    let zk = zookeeper().session(&chroot).await;
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let exited = || guard.0.lock().ok().and_then(|mut c| c.try_wait().ok().flatten());
    common::wait_until_else(
        Duration::from_secs(60),
        "the broker registers in ZooKeeper (or exits)",
        || {
            let zk = zk.clone();
            let gone = exited().is_some();
            async move { gone || zk.exists("/brokers/ids/1").await.ok().flatten().is_some() }
        },
        stderr,
    )
    .await;
    assert!(
        exited().is_none(),
        "the broker exited instead of starting:\n{}",
        stderr()
    );
    let log = stderr();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("accepted, not used by kastle: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0].contains("remote.log.storage.system.enable") && warnings[0].contains("sasl.kerberos.service.name")
    );
}

struct KillOnDrop(std::sync::Mutex<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(child) = self.0.get_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
