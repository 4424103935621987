//! The config as an operator meets it through the binary: `kastle config check` shows every
//! value with its source, precedence is --override > env > file > default, a Java
//! server.properties is accepted unchanged, and bad input exits 2 naming the key.

use std::path::Path;
use std::process::Command;

fn kastle(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kastle"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kastle");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn line_for<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("{key} ")))
        .unwrap_or_else(|| panic!("no line for {key} in:\n{out}"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn each_source_wins_in_kafkas_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "b.yaml",
        "broker.id: 1\nzookeeper.connect: \"127.0.0.1:2181/k\"\nnum.partitions: 3\nmin.insync.replicas: 2\n",
    );
    let (code, out, err) = kastle(
        &["config", "check", &file, "--override", "num.partitions=5"],
        &[
            ("KASTLE_CFG_NUM_PARTITIONS", "4"),
            ("KASTLE_CFG_MIN_INSYNC_REPLICAS", "3"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        line_for(&out, "num.partitions").contains("= 5") && line_for(&out, "num.partitions").contains("--override")
    );
    let min_isr = line_for(&out, "min.insync.replicas");
    assert!(
        min_isr.contains("= 3") && min_isr.contains("env KASTLE_CFG_MIN_INSYNC_REPLICAS"),
        "{min_isr}"
    );
    let broker_id = line_for(&out, "broker.id");
    assert!(broker_id.contains("= 1") && broker_id.contains("b.yaml"), "{broker_id}");
    let session = line_for(&out, "zookeeper.session.timeout.ms");
    assert!(session.contains("= 18000") && session.contains("default"), "{session}");
}

#[test]
fn an_unknown_key_exits_2_naming_it_and_the_closest_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "b.yaml",
        "zookeeper.connect: \"zk:2181\"\nzookeeper.session.tmeout.ms: 1000\n",
    );
    let (code, _, err) = kastle(&["config", "check", &file], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("zookeeper.session.tmeout.ms") && err.contains("zookeeper.session.timeout.ms"),
        "{err}"
    );
    let (code, _, err) = kastle(&["broker", "--config", &file], &[]);
    assert_eq!(code, 2, "the broker refuses it too: {err}");
}

#[test]
fn a_wrong_type_exits_2_naming_key_value_and_expectation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "b.yaml", "zookeeper.connect: \"zk:2181\"\nbroker.id: one\n");
    let (code, _, err) = kastle(&["config", "check", &file], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("broker.id") && err.contains("one") && err.contains("expected"),
        "{err}"
    );
    let file = write(dir.path(), "c.yaml", "zookeeper.connect: \"zk:2181\"\n");
    let (code, _, err) = kastle(&["config", "check", &file, "--override", "num.partitions=lots"], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("num.partitions") && err.contains("lots"), "{err}");
    let (code, _, err) = kastle(&["config", "check", &file], &[("KASTLE_CFG_NUM_PARTITIONS", "x")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("KASTLE_CFG_NUM_PARTITIONS"), "{err}");
}

#[test]
fn a_java_server_properties_is_accepted_unchanged() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/server.properties");
    let (code, out, err) = kastle(&["config", "check", &path.display().to_string()], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(line_for(&out, "broker.id").contains("= 0"), "{out}");
    assert!(line_for(&out, "log.retention.hours").contains("= 168"), "{out}");
}

#[test]
fn the_shipped_quickstart_configs_are_valid() {
    for id in 1..=3 {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("config/broker-{id}.yaml"));
        let (code, out, err) = kastle(&["config", "check", &path.display().to_string()], &[]);
        assert_eq!(code, 0, "{}: {err}", path.display());
        assert!(line_for(&out, "broker.id").contains(&format!("= {id}")), "{out}");
        assert!(line_for(&out, "listeners").contains(&format!("909{}", id + 1)), "{out}");
    }
}

#[test]
fn a_broker_with_a_sasl_ssl_listener_without_a_keystore_refuses_to_start_naming_it_and_the_key() {
    // A SASL_SSL listener without a keystore would have no TLS to run SASL in: the broker must
    // not start, and must say which listener and which key. The ZooKeeper address is never
    // contacted: the config is refused first.
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    let file = write(
        dir.path(),
        "b.yaml",
        &format!(
            "broker.id: 1\nzookeeper.connect: \"127.0.0.1:1/k\"\nlog.dirs: \"{}\"\n\
             listeners: PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0\n\
             advertised.listeners: PLAINTEXT://127.0.0.1:0\n\
             listener.security.protocol.map: PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL\n\
             sasl.enabled.mechanisms: SCRAM-SHA-512\n",
            logs.display()
        ),
    );
    let (code, _, err) = kastle(&["broker", "--config", &file], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot serve SASL_SSL listener \"INTERNAL\"")
            && err.contains("listener.name.internal.ssl.keystore.location"),
        "INTERNAL and its keystore key not named in: {err}"
    );
    assert!(!logs.exists(), "nothing was started: {err}");
    let (code, _, err) = kastle(&["config", "check", &file], &[]);
    assert_eq!(code, 2, "config check refuses it too: {err}");
}

/// The fixture with every broker key Kafka 3.9 documents, filled in for a broker at `zk`.
fn every_kafka_key_properties(dir: &Path, zk: &str, log_dirs: &Path) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kafka-3.9-all-broker-keys.properties");
    let text = std::fs::read_to_string(fixture)
        .expect("fixture")
        .replace("@ZOOKEEPER_CONNECT@", zk)
        .replace("@LOG_DIRS@", &log_dirs.display().to_string());
    write(dir, "server.properties", &text)
}

#[test]
fn every_kafka_3_9_broker_key_is_accepted_and_the_unused_ones_are_marked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = every_kafka_key_properties(dir.path(), "127.0.0.1:1/k", &dir.path().join("logs"));
    let text = std::fs::read_to_string(&file).expect("read");
    let set = text.lines().filter(|l| l.contains('=') && !l.starts_with('#')).count();
    // Two keys Kafka refuses together with others are left out (inter.broker.listener.name with
    // security.inter.broker.protocol; control.plane.listener.name needs a listener of its own).
    let left_out = text.lines().filter(|l| l.contains("= (left out:")).count();
    assert_eq!((set, left_out), (312, 2), "the 314 keys Kafka 3.9 documents");
    let (code, out, err) = kastle(&["config", "check", &file], &[]);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("accepted, not used by kastle: "))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {err}");
    for unused in [
        "remote.log.storage.system.enable",
        "sasl.kerberos.service.name",
        "ssl.engine.factory.class",
        "process.roles",
    ] {
        assert!(warnings[0].contains(unused), "{unused} in {}", warnings[0]);
        assert!(
            line_for(&out, unused).contains("not used by kastle"),
            "{}",
            line_for(&out, unused)
        );
    }
    assert!(
        !warnings[0].contains("log.retention.hours"),
        "a used key is not listed: {}",
        warnings[0]
    );
    assert!(!line_for(&out, "log.retention.hours").contains("not used"), "{out}");
}

#[test]
fn a_typo_of_a_kafka_key_exits_2_naming_the_key_it_resembles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "server.properties",
        "zookeeper.connect=127.0.0.1:1\nlog.retention.hourz=5\n",
    );
    for args in [vec!["config", "check", &file], vec!["broker", "--config", &file]] {
        let (code, _, err) = kastle(&args, &[]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("\"log.retention.hourz\"") && err.contains("did you mean \"log.retention.hours\""),
            "{err}"
        );
    }
}
