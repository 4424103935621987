//! SASL on SASL_PLAINTEXT listeners with real clients: kcat, confluent-kafka and kafka-python
//! produce and consume with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; a user created with
//! AlterUserScramCredentials (confluent-kafka's AdminClient) logs in, is described, and cannot
//! log in once deleted; a wrong password gets SASL_AUTHENTICATION_FAILED and the connection
//! closes after the configured delay.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::cluster_ready;
use common::sasl::{client_sasl_spec, sasl_bootstrap};
use common::{unique_chroot, wait_until, zookeeper, BrokerProcess};
use kastle::security::sasl::credentials::ScramCredential;
use kastle::security::sasl::ScramMechanism;
use kastle::zk::ZkSession;

/// Writes `user`'s SCRAM credential for `mechanism` as Kafka's `kafka-configs --zookeeper` does.
async fn add_scram_user(zk: &ZkSession, user: &str, password: &str, mechanisms: &[ScramMechanism]) {
    let client = kastle::zk::KafkaZkClient::new(zk.clone());
    let (mut config, version) = client.entity_config_versioned("users", user).await.expect("read");
    for m in mechanisms {
        let c = ScramCredential::generate(*m, password, ScramCredential::random_salt(), 4096);
        config.insert(m.name().to_string(), c.to_kafka_string());
    }
    client
        .change_entity_config("users", user, &config, version)
        .await
        .expect("write /config/users");
}

fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("spawn");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kcat_sasl(bootstrap: &str, mechanism: &str, user: &str, password: &str) -> Command {
    let mut c = Command::new("kcat");
    c.args(["-b", bootstrap])
        .args(["-X", "security.protocol=SASL_PLAINTEXT"])
        .args(["-X", &format!("sasl.mechanisms={mechanism}")])
        .args(["-X", &format!("sasl.username={user}")])
        .args(["-X", &format!("sasl.password={password}")]);
    c
}

/// kcat produces three records and consumes them back.
fn kcat_roundtrip(bootstrap: &str, mechanism: &str, user: &str, password: &str, topic: &str) -> String {
    let kcat = || kcat_sasl(bootstrap, mechanism, user, password);
    common::kcat_roundtrip_with(kcat, topic, "one\ntwo\nthree\n", &[], "%s\n")
}

const CONFLUENT: &str = r#"
import sys
from confluent_kafka import Producer, Consumer
addr, mech, user, pw, topic = sys.argv[1:6]
conf = {"bootstrap.servers": addr, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mech,
        "sasl.username": user, "sasl.password": pw}
p = Producer(dict(conf))
for i in range(5):
    p.produce(topic, value=b"ck-%d" % i)
assert p.flush(30) == 0
c = Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
c.subscribe([topic])
got = []
import time
deadline = time.time() + 30
while len(got) < 5 and time.time() < deadline:
    m = c.poll(1.0)
    if m is not None and m.error() is None:
        got.append(m.value().decode())
c.close()
print(",".join(got))
"#;

const KAFKA_PYTHON: &str = r#"
import sys
from kafka import KafkaProducer, KafkaConsumer
addr, mech, user, pw, topic = sys.argv[1:6]
conf = dict(bootstrap_servers=addr, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mech,
            sasl_plain_username=user, sasl_plain_password=pw)
p = KafkaProducer(**conf)
for i in range(5):
    p.send(topic, b"kp-%d" % i).get(timeout=30)
p.close()
c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **conf)
got = [m.value.decode() for m, _ in zip(c, range(5))]
c.close()
print(",".join(got))
"#;

fn python_client(script: &str, args: &[&str]) -> String {
    let (ok, out, err) = run(Command::new(common::python()).arg("-c").arg(script).args(args));
    assert!(ok, "python client {args:?}: {err}");
    out.trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_confluent_kafka_and_kafka_python_produce_and_consume_with_plain_and_scram() {
    let chroot = unique_chroot("sasl-clients");
    let zk = zookeeper().session(&chroot).await;
    let _broker = BrokerProcess::start(&client_sasl_spec(&chroot, 1));
    cluster_ready(&zk, 1).await;
    add_scram_user(&zk, "scrammer", "scram-secret", &ScramMechanism::ALL).await;
    let boot = sasl_bootstrap(&zk, 1).await;
    for (mechanism, user, password) in [
        ("PLAIN", "alice", "alice-secret"),
        ("SCRAM-SHA-256", "scrammer", "scram-secret"),
        ("SCRAM-SHA-512", "scrammer", "scram-secret"),
    ] {
        let tag = mechanism.to_ascii_lowercase();
        // The credential cache may still be loading the user just written: wait for a login.
        let b = boot.clone();
        wait_until(Duration::from_secs(10), "the first login", || {
            let b = b.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    run(kcat_sasl(&b, mechanism, user, password).args(["-L", "-m", "5"])).0
                })
                .await
                .expect("join")
            }
        })
        .await;
        let (b, t) = (boot.clone(), format!("kcat-{tag}"));
        let out = tokio::task::spawn_blocking(move || kcat_roundtrip(&b, mechanism, user, password, &t))
            .await
            .expect("join");
        assert_eq!(out, "one\ntwo\nthree\n", "kcat {mechanism}");
        for (script, prefix) in [(CONFLUENT, "ck"), (KAFKA_PYTHON, "kp")] {
            let (b, t) = (boot.clone(), format!("{prefix}-{tag}"));
            let out = tokio::task::spawn_blocking(move || python_client(script, &[&b, mechanism, user, password, &t]))
                .await
                .expect("join");
            assert_eq!(
                out,
                (0..5).map(|i| format!("{prefix}-{i}")).collect::<Vec<_>>().join(","),
                "{prefix} {mechanism}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_gets_sasl_authentication_failed_and_the_connection_closes() {
    use common::wire::Wire;
    use kafka_protocol::messages::{MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest};
    use kafka_protocol::protocol::StrBytes;
    let chroot = unique_chroot("sasl-wrong");
    let zk = zookeeper().session(&chroot).await;
    let _broker = BrokerProcess::start(&client_sasl_spec(&chroot, 1));
    cluster_ready(&zk, 1).await;
    let boot = sasl_bootstrap(&zk, 1).await;

    let mut wire = Wire::connect(&boot).await;
    let hs = wire
        .send(
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
            1,
        )
        .await;
    assert_eq!(hs.error_code, 0);
    let started = Instant::now();
    let auth = wire
        .send(
            &SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from_static(b"\0alice\0wrong")),
            2,
        )
        .await;
    assert_eq!(
        auth.error_code,
        kastle::protocol::error_codes::ResponseError::SaslAuthenticationFailed.code()
    );
    assert!(
        auth.error_message
            .as_deref()
            .is_some_and(|m| m.contains("Invalid username or password")),
        "{auth:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "connection.failed.authentication.delay.ms"
    );
    assert!(
        wire.try_send(&MetadataRequest::default(), 12, Duration::from_secs(5))
            .await
            .is_none(),
        "the connection is closed after a failed authentication"
    );

    // Before authentication only ApiVersions and SASL requests are read.
    let mut wire = Wire::connect(&boot).await;
    assert!(wire
        .try_send(&MetadataRequest::default(), 12, Duration::from_secs(5))
        .await
        .is_none());

    // kcat reports it as an authentication failure.
    let (ok, _, err) = tokio::task::spawn_blocking(move || {
        run(kcat_sasl(&boot, "SCRAM-SHA-256", "nobody", "x").args(["-L", "-m", "5"]))
    })
    .await
    .expect("join");
    assert!(!ok);
    assert!(err.contains("Authentication failed") || err.contains("SASL"), "{err}");
}

/// confluent-kafka's AdminClient on argv[1]: `add USER PASSWORD` (SCRAM-SHA-256, 8192
/// iterations), `delete USER`, or `describe USER` (prints `MECHANISM:ITERATIONS` or the error).
const SCRAM_ADMIN: &str = r#"
import sys
from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)
a = AdminClient({"bootstrap.servers": sys.argv[1]})
action, user = sys.argv[2], sys.argv[3]
m = ScramMechanism.SCRAM_SHA_256
try:
    if action == "describe":
        for f in a.describe_user_scram_credentials([user]).values():
            d = f.result(30)
            print(",".join(f"{i.mechanism.name}:{i.iterations}" for i in d.scram_credential_infos))
    else:
        if action == "add":
            alts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(m, 8192), sys.argv[4].encode())]
        else:
            alts = [UserScramCredentialDeletion(user, m)]
        for f in a.alter_user_scram_credentials(alts).values():
            f.result(30)
        print("ok")
except KafkaException as e:
    print(e.args[0].name())
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_created_with_alter_user_scram_credentials_logs_in_and_cannot_once_deleted() {
    let chroot = unique_chroot("sasl-admin");
    let zk = zookeeper().session(&chroot).await;
    let _broker = BrokerProcess::start(&client_sasl_spec(&chroot, 1));
    cluster_ready(&zk, 1).await;
    let admin = common::bootstrap_of(&zk, 1).await;
    let boot = sasl_bootstrap(&zk, 1).await;
    let admin_call = |args: Vec<String>| {
        let admin = admin.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut all = vec![admin.as_str()];
                all.extend(args.iter().map(String::as_str));
                python_client(SCRAM_ADMIN, &all)
            })
            .await
            .expect("join")
        }
    };
    let login = |boot: String| async move {
        tokio::task::spawn_blocking(move || {
            run(kcat_sasl(&boot, "SCRAM-SHA-256", "carol", "carol-secret").args(["-L", "-m", "3"])).0
        })
        .await
        .expect("join")
    };
    assert_eq!(
        admin_call(vec!["add".into(), "carol".into(), "carol-secret".into()]).await,
        "ok"
    );
    // Kafka's text form in /config/users/carol, announced to the credential cache.
    let (config, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .entity_config_versioned("users", "carol")
        .await
        .expect("read");
    assert!(
        config["SCRAM-SHA-256"].starts_with("salt=") && config["SCRAM-SHA-256"].ends_with(",iterations=8192"),
        "{config:?}"
    );
    wait_until(Duration::from_secs(10), "carol logs in", || login(boot.clone())).await;
    assert_eq!(
        admin_call(vec!["describe".into(), "carol".into()]).await,
        "SCRAM_SHA_256:8192"
    );
    assert_eq!(admin_call(vec!["delete".into(), "carol".into()]).await, "ok");
    wait_until(Duration::from_secs(20), "carol can no longer log in", || {
        let b = boot.clone();
        async move { !login(b).await }
    })
    .await;
    assert_eq!(
        admin_call(vec!["describe".into(), "carol".into()]).await,
        "RESOURCE_NOT_FOUND"
    );
    assert_eq!(
        admin_call(vec!["delete".into(), "carol".into()]).await,
        "RESOURCE_NOT_FOUND"
    );
}
