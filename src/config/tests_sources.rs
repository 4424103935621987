//! End-to-end tests of `load` / `KafkaConfig` over its inputs: defaults, YAML and
//! `server.properties` files, env and `--override` precedence with sources, error messages, and
//! the effective-config rendering. Cross-key validation is in `tests_validation.rs`; per-file unit
//! tests sit next to the code they test.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{load, ConfigError, ConfigSources, KafkaConfig, SecurityProtocol, Source, Value};

const ZK: (&str, &str) = ("zookeeper.connect", "localhost:2181");

/// Writes `text` to `<tempdir>/<name>` and returns (guard, path).
pub(super) fn write_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(text.as_bytes()).expect("write");
    (dir, path)
}

pub(super) fn from_file(path: &Path) -> Result<KafkaConfig, ConfigError> {
    load(&ConfigSources {
        file: Some(path.to_path_buf()),
        ..ConfigSources::default()
    })
}

pub(super) fn pairs(extra: &[(&str, &str)]) -> Result<KafkaConfig, ConfigError> {
    let mut all = vec![ZK];
    all.extend_from_slice(extra);
    KafkaConfig::from_pairs(&all)
}

pub(super) fn err_text(r: Result<KafkaConfig, ConfigError>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// A ZK-mode `server.properties` as Kafka 3.9 ships it (every stock key set), edited the way
/// operators do: `:` and blank separators, a continuation, escapes, a per-listener override.
const SERVER_PROPERTIES: &str = r#"# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.
#
# This configuration file is intended for use in ZK-based mode, where Apache ZooKeeper is required.
# See kafka.server.KafkaConfig for additional details and defaults

############################# Server Basics #############################

# The id of the broker. This must be set to a unique integer for each broker.
broker.id=0

############################# Socket Server Settings #############################

#   FORMAT:
#     listeners = listener_name://host_name:port
listeners = PLAINTEXT://:9092,\
            INTERNAL://:9093
advertised.listeners=PLAINTEXT://broker0.example.com:9092,INTERNAL://broker0.internal:9093
listener.security.protocol.map: PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,SSL:SSL
inter.broker.listener.name INTERNAL
listener.name.internal.ssl.keystore.location=/etc/kafka/internal.jks

! The number of threads that the server uses for receiving requests from the network
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################

log.dirs=/var/lib/kafka/data-1,/var/lib/kafka/data\u002d2
num.partitions=1
num.recovery.threads.per.data.dir=1

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Flush Policy #############################
log.flush.interval.messages=10000
log.flush.interval.ms=1000

############################# Log Retention Policy #############################
log.retention.hours=168
log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000

############################# Zookeeper #############################
zookeeper.connect=zk1:2181,zk2:2181,zk3:2181/kafka
zookeeper.connection.timeout.ms=18000

############################# Group Coordinator Settings #############################
group.initial.rebalance.delay.ms=0

broker.rack=eu\u002dwest\u002d1a
ssl.keystore.password=pa\tss
"#;

#[test]
fn defaults_match_kafka_3_9_for_a_sample_of_keys() {
    let c = pairs(&[]).expect("valid");
    assert_eq!(c.broker_id(), -1);
    assert!(c.broker_id_generation_enable());
    assert_eq!(c.reserved_broker_max_id(), 1000);
    assert_eq!(c.log_dirs(), vec![PathBuf::from("/tmp/kafka-logs")]);
    assert_eq!(c.get("log.dirs"), Some(&Value::Null));
    assert_eq!(c.zookeeper_session_timeout(), Duration::from_millis(18000));
    assert_eq!(c.zookeeper_connection_timeout(), Duration::from_millis(18000));
    assert_eq!(c.get("zookeeper.connection.timeout.ms"), Some(&Value::Null));
    assert_eq!(c.listeners().len(), 1);
    assert_eq!(c.listeners()[0].to_string(), "PLAINTEXT://:9092");
    assert_eq!(c.advertised_listeners(), c.listeners());
    assert_eq!(c.listener_security_protocol_map().len(), 4);
    assert_eq!(c.inter_broker_listener_name(), "PLAINTEXT");
    assert_eq!(c.inter_broker_protocol_version(), "3.9-IV0");
    assert_eq!(c.num_partitions(), 1);
    assert_eq!(c.default_replication_factor(), 1);
    assert_eq!(c.min_insync_replicas(), 1);
    assert_eq!(c.broker_rack(), None);
    assert_eq!(c.metrics_listener(), None);
    assert_eq!(c.get_i64("replica.lag.time.max.ms"), Some(30000));
    assert_eq!(c.get_i32("message.max.bytes"), Some(1048588));
    assert_eq!(c.get_i32("num.recovery.threads.per.data.dir"), Some(1));
    assert_eq!(c.get("offsets.topic.replication.factor"), Some(&Value::Short(3)));
    assert_eq!(c.get_i32("group.initial.rebalance.delay.ms"), Some(3000));
    assert_eq!(c.get_i32("transaction.state.log.min.isr"), Some(2));
    assert_eq!(c.get_i64("log.flush.interval.messages"), Some(i64::MAX));
    assert_eq!(c.get_bool("unclean.leader.election.enable"), Some(false));
    assert_eq!(c.get_str("log.message.timestamp.type"), Some("CreateTime"));
    assert_eq!(c.get_f64("log.cleaner.min.cleanable.ratio"), Some(0.5));
    assert_eq!(c.get_list("log.cleanup.policy"), Some(&["delete".to_string()][..]));
    assert_eq!(c.source("broker.id"), Some(&Source::Default));
    assert_eq!(c.get("no.such.key"), None);
}

#[test]
fn a_yaml_file_loads_with_list_and_map_sugar_and_reports_its_path() {
    let (_dir, path) = write_file(
        "broker-1.yaml",
        r#"
"broker.id": 1
"zookeeper.connect": "zk1:2181,zk2:2181/kafka"
log.dirs:
  - /data/a
  - /data/b
listeners: INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:19092
advertised.listeners: [INTERNAL://kafka1:9092, EXTERNAL://localhost:19092]
listener.security.protocol.map: {INTERNAL: PLAINTEXT, EXTERNAL: PLAINTEXT}
inter.broker.listener.name: INTERNAL
log.cleaner.min.cleanable.ratio: 0.25
delete.topic.enable: false
broker.rack: ~
metrics.listener: "127.0.0.1:9404"
"#,
    );
    let c = from_file(&path).expect("valid");
    assert_eq!(c.broker_id(), 1);
    assert_eq!(c.zookeeper_connect(), "zk1:2181,zk2:2181/kafka");
    assert_eq!(c.log_dirs(), vec![PathBuf::from("/data/a"), PathBuf::from("/data/b")]);
    assert_eq!(c.advertised_listeners()[1].to_string(), "EXTERNAL://localhost:19092");
    assert_eq!(
        c.advertised_listeners()[1].security_protocol,
        SecurityProtocol::Plaintext
    );
    assert_eq!(c.listeners()[0].host, "0.0.0.0");
    assert_eq!(c.inter_broker_listener_name(), "INTERNAL");
    assert_eq!(c.get_f64("log.cleaner.min.cleanable.ratio"), Some(0.25));
    assert_eq!(c.get_bool("delete.topic.enable"), Some(false));
    assert_eq!(c.broker_rack(), None);
    assert_eq!(c.metrics_listener(), Some("127.0.0.1:9404"));
    assert_eq!(c.source("broker.id"), Some(&Source::File(path.clone())));
    assert_eq!(c.source("broker.rack"), Some(&Source::File(path.clone())));
    assert_eq!(c.source("num.partitions"), Some(&Source::Default));
}

#[test]
fn a_stock_zk_mode_server_properties_loads_unchanged() {
    let (_dir, path) = write_file("server.properties", SERVER_PROPERTIES);
    let c = from_file(&path).expect("valid");
    assert_eq!(c.broker_id(), 0);
    let shown: Vec<String> = c.listeners().iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["PLAINTEXT://:9092", "INTERNAL://:9093"]);
    assert_eq!(c.advertised_listeners()[1].host, "broker0.internal");
    assert_eq!(c.inter_broker_listener_name(), "INTERNAL");
    assert_eq!(
        c.get_str("listener.name.internal.ssl.keystore.location"),
        Some("/etc/kafka/internal.jks")
    );
    assert_eq!(
        c.log_dirs(),
        vec![
            PathBuf::from("/var/lib/kafka/data-1"),
            PathBuf::from("/var/lib/kafka/data-2")
        ]
    );
    assert_eq!(c.zookeeper_connect(), "zk1:2181,zk2:2181,zk3:2181/kafka");
    assert_eq!(c.zookeeper_connection_timeout(), Duration::from_millis(18000));
    assert_eq!(c.get("offsets.topic.replication.factor"), Some(&Value::Short(1)));
    assert_eq!(
        c.get("transaction.state.log.replication.factor"),
        Some(&Value::Short(1))
    );
    assert_eq!(c.get_i32("transaction.state.log.min.isr"), Some(1));
    assert_eq!(c.get_i64("log.flush.interval.messages"), Some(10000));
    assert_eq!(c.get_i64("log.flush.interval.ms"), Some(1000));
    assert_eq!(c.get_i64("log.retention.bytes"), Some(1073741824));
    assert_eq!(c.get_i32("group.initial.rebalance.delay.ms"), Some(0));
    assert_eq!(c.get_i32("socket.request.max.bytes"), Some(104857600));
    assert_eq!(c.broker_rack(), Some("eu-west-1a"));
    assert_eq!(c.get("ssl.keystore.password"), Some(&Value::Password("pa\tss".into())));
    assert_eq!(c.source("log.segment.bytes"), Some(&Source::File(path.clone())));
}

#[test]
fn a_properties_file_with_a_bad_unicode_escape_is_a_syntax_error_naming_file_and_line() {
    let (_dir, path) = write_file("server.properties", "zookeeper.connect=zk:2181\nbroker.rack=\\uZZZZ\n");
    let e = err_text(from_file(&path));
    assert!(e.contains("server.properties at line 2"), "{e}");
}

#[test]
fn unknown_key_names_the_key_and_file_and_suggests_the_closest() {
    let (_dir, path) = write_file(
        "broker.yaml",
        "zookeeper.connect: zk:2181\nzookeeper.session.tmeout.ms: 6000\n",
    );
    let e = from_file(&path).expect_err("unknown key");
    match &e {
        ConfigError::UnknownKey {
            key,
            suggestion,
            origin,
        } => {
            assert_eq!(key, "zookeeper.session.tmeout.ms");
            assert_eq!(suggestion.as_deref(), Some("zookeeper.session.timeout.ms"));
            assert_eq!(origin, &Source::File(path.clone()));
        }
        other => panic!("wrong error {other:?}"),
    }
    assert_eq!(
        e.to_string(),
        format!(
            "unknown config key \"zookeeper.session.tmeout.ms\" (in {}); did you mean \"zookeeper.session.timeout.ms\"?",
            path.display()
        )
    );
    let far = err_text(pairs(&[("totally.made.up.setting", "1")]));
    assert!(!far.contains("did you mean"), "{far}");
}

#[test]
fn wrong_type_names_key_value_origin_and_expectation() {
    let (_dir, path) = write_file("broker.yaml", "zookeeper.connect: zk:2181\nbroker.id: abc\n");
    assert_eq!(
        err_text(from_file(&path)),
        format!(
            "invalid value \"abc\" for \"broker.id\" (in {}): expected an int",
            path.display()
        )
    );
    let env = ConfigSources {
        env: vec![
            ("KASTLE_CFG_BROKER_ID".into(), "abc".into()),
            ("KASTLE_CFG_ZOOKEEPER_CONNECT".into(), "zk:2181".into()),
        ],
        ..ConfigSources::default()
    };
    assert_eq!(
        err_text(load(&env)),
        "invalid value \"abc\" for \"broker.id\" (from env KASTLE_CFG_BROKER_ID): expected an int"
    );
    assert!(err_text(pairs(&[("delete.topic.enable", "yes")])).contains("expected true or false"));
    assert!(err_text(pairs(&[("offsets.topic.replication.factor", "70000")])).contains("expected a short"));
}

#[test]
fn out_of_range_and_not_allowed_values_name_the_allowed_range_or_set() {
    assert_eq!(
        err_text(pairs(&[("num.partitions", "0")])),
        "invalid value \"0\" for \"num.partitions\" (from --override): expected a value in [1, 2147483647]"
    );
    assert!(err_text(pairs(&[("log.message.timestamp.type", "Now")]))
        .ends_with("expected one of CreateTime, LogAppendTime"));
    assert!(err_text(pairs(&[("log.cleaner.min.cleanable.ratio", "1.5")])).contains("[0.0, 1.0]"));
    assert!(err_text(pairs(&[("broker.id", "-2")])).contains("[-1, 2147483647]"));
    assert!(err_text(pairs(&[("inter.broker.protocol.version", "latest")])).contains("3.9-IV0"));
    assert!(err_text(pairs(&[("metrics.listener", "9404")])).contains("host:port"));
}

#[test]
fn precedence_is_default_then_file_then_env_then_override_with_sources_reported() {
    let (_dir, path) = write_file(
        "broker-1.yaml",
        "zookeeper.connect: zk:2181\nbroker.id: 1\nnum.partitions: 3\nlog.retention.hours: 24\n",
    );
    let sources = ConfigSources {
        file: Some(path.clone()),
        env: vec![
            ("KASTLE_CFG_NUM_PARTITIONS".into(), "6".into()),
            ("KASTLE_CFG_LOG_RETENTION_HOURS".into(), "48".into()),
            (
                "KASTLE_CFG_ZOOKEEPER_CLIENTCNXNSOCKET".into(),
                "org.apache.zookeeper.ClientCnxnSocketNetty".into(),
            ),
            ("PATH".into(), "/usr/bin".into()),
            ("KAFKA_CFG_NOT_OURS".into(), "x".into()),
        ],
        overrides: vec!["log.retention.hours=72".into()],
    };
    let c = load(&sources).expect("valid");
    assert_eq!(c.broker_id(), 1);
    assert_eq!(c.source("broker.id"), Some(&Source::File(path.clone())));
    assert_eq!(c.num_partitions(), 6);
    assert_eq!(
        c.source("num.partitions"),
        Some(&Source::Env("KASTLE_CFG_NUM_PARTITIONS".into()))
    );
    assert_eq!(c.get_i32("log.retention.hours"), Some(72));
    assert_eq!(c.source("log.retention.hours"), Some(&Source::Override));
    assert_eq!(
        c.get_str("zookeeper.clientCnxnSocket"),
        Some("org.apache.zookeeper.ClientCnxnSocketNetty")
    );
    assert_eq!(c.source("min.insync.replicas"), Some(&Source::Default));
    assert_eq!(
        Source::File("config/broker-1.yaml".into()).to_string(),
        "file config/broker-1.yaml"
    );
    assert_eq!(
        Source::Env("KASTLE_CFG_BROKER_ID".into()).to_string(),
        "env KASTLE_CFG_BROKER_ID"
    );
    assert_eq!(Source::Override.to_string(), "--override");
    assert_eq!(Source::Default.to_string(), "default");
}

#[test]
fn an_env_variable_naming_no_key_is_an_unknown_key_error_naming_the_variable() {
    let sources = ConfigSources {
        env: vec![
            ("KASTLE_CFG_ZOOKEEPER_CONNECT".into(), "zk:2181".into()),
            ("KASTLE_CFG_ZOOKEEPER_SESION_TIMEOUT_MS".into(), "1".into()),
            ("KASTLE_CFG_AAA_BOGUS".into(), "1".into()),
        ],
        ..ConfigSources::default()
    };
    // Env is checked sorted by name, so AAA_BOGUS is reported first.
    let e = err_text(load(&sources));
    assert!(e.contains("\"aaa.bogus\" (from env KASTLE_CFG_AAA_BOGUS)"), "{e}");
    let sources = ConfigSources {
        env: sources.env[..2].to_vec(),
        ..ConfigSources::default()
    };
    assert_eq!(
        err_text(load(&sources)),
        "unknown config key \"zookeeper.sesion.timeout.ms\" (from env KASTLE_CFG_ZOOKEEPER_SESION_TIMEOUT_MS); did you mean \"zookeeper.session.timeout.ms\"?"
    );
}

#[test]
fn errors_are_reported_file_first_then_env_then_overrides() {
    let (_dir, path) = write_file(
        "b.properties",
        "zookeeper.connect=zk:2181\nnum.io.threads=x\nnum.network.threads=y\n",
    );
    let sources = ConfigSources {
        file: Some(path),
        env: vec![("KASTLE_CFG_BROKER_ID".into(), "z".into())],
        overrides: vec!["nope".into()],
    };
    assert!(err_text(load(&sources)).contains("\"num.io.threads\""));
    let sources = ConfigSources { file: None, ..sources };
    assert!(err_text(load(&sources)).contains("KASTLE_CFG_BROKER_ID"));
}

#[test]
fn an_override_without_equals_is_an_error() {
    let sources = ConfigSources {
        overrides: vec!["broker.id".into()],
        ..ConfigSources::default()
    };
    let e = load(&sources).expect_err("malformed");
    assert!(matches!(&e, ConfigError::MalformedOverride { arg } if arg == "broker.id"));
    assert_eq!(e.to_string(), "malformed --override \"broker.id\": expected key=value");
}

#[test]
fn missing_zookeeper_connect_is_reported_with_how_to_set_it() {
    let e = KafkaConfig::from_pairs(&[]).expect_err("missing");
    assert!(matches!(&e, ConfigError::Missing { key } if key == "zookeeper.connect"));
    assert!(e.to_string().contains("KASTLE_CFG_ZOOKEEPER_CONNECT"), "{e}");
}

#[test]
fn unreadable_files_and_bad_yaml_name_the_path() {
    let e = from_file(Path::new("/nonexistent/kastle/broker.yaml")).expect_err("io");
    assert!(matches!(e, ConfigError::Io { .. }));
    assert!(e.to_string().contains("/nonexistent/kastle/broker.yaml"), "{e}");
    let (_dir, path) = write_file("broker.yml", "broker.id: [1\n");
    assert!(matches!(from_file(&path), Err(ConfigError::Syntax { .. })));
    let (_dir2, path) = write_file("b.yaml", "zookeeper.connect: zk:2181\nnum.partitions: ~\n");
    assert!(err_text(from_file(&path)).contains("non-null default"));
    let (_dir3, path) = write_file("b.yaml", "zookeeper.connect: zk:2181\nnum.partitions: [1, 2]\n");
    assert!(err_text(from_file(&path)).contains("only list keys take a YAML sequence"));
}

#[test]
fn render_effective_lists_every_key_with_its_source_and_hides_passwords() {
    let (_dir, path) = write_file(
        "broker-1.yaml",
        "zookeeper.connect: zk:2181\nbroker.id: 1\nssl.keystore.password: hunter2\n",
    );
    let sources = ConfigSources {
        file: Some(path.clone()),
        env: vec![("KASTLE_CFG_NUM_PARTITIONS".into(), "4".into())],
        overrides: vec!["listener.name.internal.scram-sha-256.sasl.jaas.config=secret-jaas".into()],
    };
    let text = load(&sources).expect("valid").render_effective();
    assert!(
        text.contains(&format!("broker.id = 1    (file {})\n", path.display())),
        "{text}"
    );
    assert!(text.contains("num.partitions = 4    (env KASTLE_CFG_NUM_PARTITIONS)\n"));
    assert!(text.contains("ssl.keystore.password = [hidden]    (file"));
    assert!(text.contains(
        "listener.name.internal.scram-sha-256.sasl.jaas.config = [hidden]    (--override, not used by kastle)"
    ));
    assert!(text.contains("log.dirs = null    (default)\n"));
    assert!(text.contains("log.cleaner.min.cleanable.ratio = 0.5    (default)\n"));
    assert!(!text.contains("hunter2") && !text.contains("secret-jaas"));
    let keys: Vec<&str> = text.lines().map(|l| l.split(" = ").next().unwrap_or("")).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted);
}
