//! SASL_SSL listeners with real clients: the TLS handshake, then SASL inside the TLS session.
//! kcat, confluent-kafka and kafka-python produce and consume with SCRAM-SHA-256 and
//! SCRAM-SHA-512, and the principal is the SASL user (with the ACL authorizer on, the SCRAM
//! super user may write, another SCRAM user may not, and the TLS-level principal ANONYMOUS has
//! no topic rights at all). A plaintext client on the SASL_SSL port gets a closed connection, a
//! TLS client that skips SASL gets no metadata, and a SASL_SSL listener without a keystore (or
//! with one that cannot be read) stops the start naming the listener and the key. Altering
//! `listener.name.sasl_ssl.ssl.keystore.location` with IncrementalAlterConfigs gives new
//! connections the new certificate, leaves open ones alone, and refuses a keystore that does
//! not load (INVALID_CONFIG naming the key, nothing written).

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cluster::cluster_ready;
use common::pki::Pki;
use common::replicas::spec;
use common::{unique_chroot, wait_until, wait_until_else, zookeeper, BrokerProcess, BrokerSpec};
use kastle::security::authorizer::acl::{AclEntry, AclOperation, AclPermissionType, ResourcePattern, ResourceType};
use kastle::security::sasl::credentials::ScramCredential;
use kastle::security::sasl::ScramMechanism;
use kastle::zk::ZkSession;

/// A broker with a PLAINTEXT inter-broker listener and a SASL_SSL client listener offering
/// both SCRAM mechanisms, with `extra` settings.
fn sasl_ssl_spec(chroot: &str, id: i32, extra: &[(&str, &str)]) -> BrokerSpec {
    let mut s = spec(chroot, id, extra);
    s.listeners = "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0".into();
    s.with("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512")
        .with("inter.broker.listener.name", "PLAINTEXT")
        .with("offsets.topic.replication.factor", "1")
}

fn keystore(pki: &Pki) -> [(&'static str, String); 2] {
    [
        ("listener.name.sasl_ssl.ssl.keystore.type", "PEM".to_string()),
        ("listener.name.sasl_ssl.ssl.keystore.location", pki.p("broker.pem")),
    ]
}

/// `host:port` of broker `id`'s SASL_SSL endpoint, from its registration.
async fn sasl_ssl_bootstrap(zk: &ZkSession, id: i32) -> String {
    let (registration, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .broker(kastle::types::BrokerId(id))
        .await
        .expect("read registration")
        .expect("broker registered");
    registration
        .endpoints
        .iter()
        .find_map(|e| e.strip_prefix("SASL_SSL://"))
        .expect("a SASL_SSL endpoint")
        .to_string()
}

/// Writes `user`'s SCRAM credentials as `kafka-configs --zookeeper` does.
async fn add_scram_user(zk: &ZkSession, user: &str, password: &str) {
    let client = kastle::zk::KafkaZkClient::new(zk.clone());
    let (mut config, version) = client.entity_config_versioned("users", user).await.expect("read");
    for m in ScramMechanism::ALL {
        let c = ScramCredential::generate(m, password, ScramCredential::random_salt(), 4096);
        config.insert(m.name().to_string(), c.to_kafka_string());
    }
    client
        .change_entity_config("users", user, &config, version)
        .await
        .expect("write /config/users");
}

/// Writes ACLs straight to ZooKeeper (as `kafka-acls --authorizer-properties` does).
async fn grant(zk: &ZkSession, pattern: ResourcePattern, entries: &[AclEntry]) {
    let new: BTreeSet<AclEntry> = entries.iter().cloned().collect();
    kastle::security::authorizer::store::update(zk, &pattern, |current| current.union(&new).cloned().collect())
        .await
        .expect("write ACLs");
}

fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("spawn");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// kcat over `protocol` (SASL_SSL, or SSL to skip SASL) trusting `ca`.
fn kcat(bootstrap: &str, protocol: &str, ca: &str, login: Option<(&str, &str, &str)>) -> Command {
    let mut c = Command::new("kcat");
    c.args(["-b", bootstrap, "-m", "10"])
        .args(["-X", &format!("security.protocol={protocol}")])
        .args(["-X", &format!("ssl.ca.location={ca}")]);
    if let Some((mechanism, user, password)) = login {
        c.args(["-X", &format!("sasl.mechanisms={mechanism}")])
            .args(["-X", &format!("sasl.username={user}")])
            .args(["-X", &format!("sasl.password={password}")]);
    }
    c
}

/// kcat produces three records and consumes them back.
fn kcat_roundtrip(bootstrap: &str, ca: &str, login: (&str, &str, &str), topic: &str) -> String {
    let connect = || kcat(bootstrap, "SASL_SSL", ca, Some(login));
    common::kcat_roundtrip_with(connect, topic, "one\ntwo\nthree\n", &[], "%s\n")
}

/// confluent-kafka: produces five records to argv[6] and reads them back; prints them, or the
/// delivery error's name.
const CONFLUENT: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition
addr, ca, mech, user, pw, topic = sys.argv[1:7]
conf = {"bootstrap.servers": addr, "security.protocol": "SASL_SSL", "ssl.ca.location": ca,
        "sasl.mechanisms": mech, "sasl.username": user, "sasl.password": pw}
p = Producer(dict(conf, **{"message.timeout.ms": 20000}))
errs = []
for i in range(5):
    p.produce(topic, value=b"ck-%d" % i, on_delivery=lambda e, m: errs.append(e))
p.flush(30)
bad = [e for e in errs if e is not None]
if bad:
    print(bad[0].name())
    raise SystemExit(0)
c = Consumer(dict(conf, **{"group.id": "unused", "enable.auto.commit": False}))
c.assign([TopicPartition(topic, 0, 0)])
got, deadline = [], time.time() + 30
while len(got) < 5 and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        got.append(m.value().decode())
c.close()
print(",".join(got))
"#;

const KAFKA_PYTHON: &str = r#"
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
addr, ca, mech, user, pw, topic = sys.argv[1:7]
conf = dict(bootstrap_servers=addr, security_protocol="SASL_SSL", ssl_cafile=ca, ssl_check_hostname=True,
            sasl_mechanism=mech, sasl_plain_username=user, sasl_plain_password=pw)
p = KafkaProducer(acks="all", **conf)
for i in range(5):
    p.send(topic, b"kp-%d" % i).get(timeout=30)
p.close()
c = KafkaConsumer(consumer_timeout_ms=20000, enable_auto_commit=False, **conf)
tp = TopicPartition(topic, 0)
c.assign([tp])
c.seek(tp, 0)
got = [m.value.decode() for m, _ in zip(c, range(5))]
c.close()
print(",".join(got))
"#;

fn python_client(script: &str, args: &[&str]) -> String {
    let (ok, out, err) = run(Command::new(common::python()).arg("-c").arg(script).args(args));
    assert!(ok, "python client {args:?}: {err}");
    out.trim().to_string()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_confluent_kafka_and_kafka_python_produce_and_consume_over_sasl_ssl_with_scram() {
    use AclOperation::{ClusterAction, Describe};
    use AclPermissionType::Allow;
    let pki = Pki::new();
    let ca = pki.p("ca.pem");
    let chroot = unique_chroot("sasl-ssl-clients");
    let zk = zookeeper().session(&chroot).await;
    // Brokers reach each other as ANONYMOUS over PLAINTEXT: cluster rights, no topic rights. A
    // SASL_SSL client whose principal stayed the TLS one (ANONYMOUS) could not produce.
    let anon = |operation| AclEntry {
        principal: "User:ANONYMOUS".into(),
        host: "*".into(),
        operation,
        permission: Allow,
    };
    grant(
        &zk,
        ResourcePattern::literal(ResourceType::Cluster, "kafka-cluster"),
        &[anon(ClusterAction), anon(Describe)],
    )
    .await;
    let [ks_type, ks_location] = keystore(&pki);
    let broker = BrokerProcess::start(&sasl_ssl_spec(
        &chroot,
        1,
        &[
            (ks_type.0, &ks_type.1),
            (ks_location.0, &ks_location.1),
            ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer"),
            ("allow.everyone.if.no.acl.found", "false"),
            ("super.users", "User:scrammer"),
        ],
    ));
    cluster_ready(&zk, 1).await;
    add_scram_user(&zk, "scrammer", "scram-secret").await;
    add_scram_user(&zk, "bob", "bob-secret").await;
    let boot = sasl_ssl_bootstrap(&zk, 1).await;
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let login = (mechanism, "scrammer", "scram-secret");
        let tag = mechanism.to_ascii_lowercase();
        // The credential cache may still be loading the users just written: wait for a login.
        wait_until_else(
            Duration::from_secs(15),
            "the first SASL_SSL login",
            || {
                let (b, c) = (boot.clone(), ca.clone());
                blocking(move || run(kcat(&b, "SASL_SSL", &c, Some(login)).arg("-L")).0)
            },
            || broker.stderr(),
        )
        .await;
        let (b, c, t) = (boot.clone(), ca.clone(), format!("kcat-{tag}"));
        let out = blocking(move || kcat_roundtrip(&b, &c, login, &t)).await;
        assert_eq!(out, "one\ntwo\nthree\n", "kcat {mechanism}");
        for (script, prefix) in [(CONFLUENT, "ck"), (KAFKA_PYTHON, "kp")] {
            let (b, c, t) = (boot.clone(), ca.clone(), format!("{prefix}-{tag}"));
            let out =
                blocking(move || python_client(script, &[&b, &c, mechanism, "scrammer", "scram-secret", &t])).await;
            assert_eq!(
                out,
                (0..5).map(|i| format!("{prefix}-{i}")).collect::<Vec<_>>().join(","),
                "{prefix} {mechanism}"
            );
        }
    }
    // Another SCRAM user authenticates but is not authorized: the principal is the SASL user.
    let (b, c) = (boot.clone(), ca.clone());
    let out = blocking(move || {
        python_client(
            CONFLUENT,
            &[&b, &c, "SCRAM-SHA-512", "bob", "bob-secret", "ck-scram-sha-256"],
        )
    })
    .await;
    assert_eq!(out, "TOPIC_AUTHORIZATION_FAILED", "bob may not write");
    // A wrong password over SASL_SSL is an authentication failure.
    let (b, c) = (boot.clone(), ca.clone());
    let (ok, _, err) =
        blocking(move || run(kcat(&b, "SASL_SSL", &c, Some(("SCRAM-SHA-256", "scrammer", "nope"))).arg("-L"))).await;
    assert!(!ok && err.contains("Authentication failed"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_on_the_sasl_ssl_port_gets_a_closed_connection_and_tls_without_sasl_no_metadata() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::new();
    let ca = pki.p("ca.pem");
    let chroot = unique_chroot("sasl-ssl-plaintext-client");
    let zk = zookeeper().session(&chroot).await;
    let [ks_type, ks_location] = keystore(&pki);
    let broker = BrokerProcess::start(&sasl_ssl_spec(
        &chroot,
        1,
        &[(ks_type.0, &ks_type.1), (ks_location.0, &ks_location.1)],
    ));
    cluster_ready(&zk, 1).await;
    add_scram_user(&zk, "scrammer", "scram-secret").await;
    let boot = sasl_ssl_bootstrap(&zk, 1).await;

    // SaslHandshake v1 for PLAIN in plaintext, correlation id 0x0badf00d, client id "x".
    let mut socket = tokio::net::TcpStream::connect(&boot).await.expect("connect");
    let request: &[u8] = &[
        0, 0, 0, 18, 0, 17, 0, 1, 0x0b, 0xad, 0xf0, 0x0d, 0, 1, b'x', 0, 5, b'P', b'L', b'A', b'I', b'N',
    ];
    socket.write_all(request).await.expect("write");
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), socket.read_to_end(&mut got))
        .await
        .expect("closed within the deadline")
        .ok();
    // At most a TLS alert record (content type 21), never a Kafka response.
    assert!(got.is_empty() || got[0] == 21, "{got:?}");
    assert!(!got.windows(4).any(|w| w == [0x0b, 0xad, 0xf0, 0x0d]), "{got:?}");
    wait_until_else(
        Duration::from_secs(15),
        "the failed handshake to be logged",
        || {
            let logged = broker.stderr().contains("TLS handshake failed");
            async move { logged }
        },
        || broker.stderr(),
    )
    .await;

    // TLS without SASL: the broker reads nothing but ApiVersions and SASL before a login.
    let (b, c) = (boot.clone(), ca.clone());
    let (ok, out, _) = blocking(move || run(kcat(&b, "SSL", &c, None).args(["-L", "-m", "5"]))).await;
    assert!(!ok && !out.contains("topics:"), "metadata without SASL: {out}");

    // The broker still serves SASL_SSL clients.
    let login = ("SCRAM-SHA-256", "scrammer", "scram-secret");
    wait_until(Duration::from_secs(15), "a SASL_SSL login", || {
        let (b, c) = (boot.clone(), ca.clone());
        blocking(move || run(kcat(&b, "SASL_SSL", &c, Some(login)).arg("-L")).0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_ssl_listener_without_a_readable_keystore_stops_the_start_naming_the_listener_and_key() {
    let chroot = unique_chroot("sasl-ssl-no-keystore");
    let mut broker = BrokerProcess::start(&sasl_ssl_spec(&chroot, 1, &[]));
    let status = broker.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2), "{}", broker.stderr());
    let log = broker.stderr();
    assert!(
        log.contains("cannot serve SASL_SSL listener \"SASL_SSL\"")
            && log.contains("listener.name.sasl_ssl.ssl.keystore.location"),
        "{log}"
    );
    // A keystore location that names no file: refused when the listener's TLS is set up.
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("absent.pem").display().to_string();
    let mut broker = BrokerProcess::start(&sasl_ssl_spec(
        &chroot,
        1,
        &[
            ("listener.name.sasl_ssl.ssl.keystore.type", "PEM"),
            ("listener.name.sasl_ssl.ssl.keystore.location", &missing),
        ],
    ));
    let status = broker.wait_exit(Duration::from_secs(30)).await;
    assert_ne!(status.code(), Some(0), "{}", broker.stderr());
    let log = broker.stderr();
    assert!(
        log.contains("cannot serve SASL_SSL listener \"SASL_SSL\"")
            && log.contains("listener.name.sasl_ssl.ssl.keystore.location")
            && log.contains("absent.pem"),
        "{log}"
    );
}

/// confluent-kafka AdminClient on argv[1]: IncrementalAlterConfigs SET argv[3]=argv[4] on
/// broker argv[2]; prints "ok", or the error's name and message.
const ALTER_BROKER: &str = r#"
import sys
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigEntry, AlterConfigOpType, ResourceType
a = AdminClient({"bootstrap.servers": sys.argv[1]})
entry = ConfigEntry(sys.argv[3], sys.argv[4], incremental_operation=AlterConfigOpType.SET)
try:
    for f in a.incremental_alter_configs([ConfigResource(ResourceType.BROKER, sys.argv[2], incremental_configs=[entry])]).values():
        f.result(30)
    print("ok")
except KafkaException as e:
    print(e.args[0].name(), e.args[0].str())
"#;

/// Python's ssl module: a TLS connection to argv[1] trusting argv[2]; prints the certificate's
/// common name, waits for a line on stdin, then sends ApiVersions v0 (correlation id 7) on the
/// same connection and prints "answered <correlation id> <common name>".
const HELD_OPEN: &str = r#"
import socket, ssl, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
tls = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=20), server_hostname=host)
cn = lambda: dict(field for rdn in tls.getpeercert()["subject"] for field in rdn)["commonName"]
print(cn(), flush=True)
sys.stdin.readline()
tls.sendall(bytes([0, 0, 0, 11, 0, 18, 0, 0, 0, 0, 0, 7, 0, 1, 120]))
def read(n):
    data = b""
    while len(data) < n:
        chunk = tls.recv(n - len(data))
        if not chunk:
            raise SystemExit("closed")
        data += chunk
    return data
size = struct.unpack(">i", read(4))[0]
print("answered", struct.unpack(">i", read(size)[:4])[0], cn(), flush=True)
"#;

/// Python's ssl module: a new TLS connection to argv[1] trusting argv[2]; prints the
/// certificate's common name.
const PEER_CN: &str = r#"
import socket, ssl, sys
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
with socket.create_connection((host, int(port)), timeout=10) as raw:
    with ctx.wrap_socket(raw, server_hostname=host) as tls:
        subject = dict(field for rdn in tls.getpeercert()["subject"] for field in rdn)
        print(subject["commonName"])
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altering_the_listener_keystore_reloads_it_for_new_connections_and_a_bad_one_is_refused() {
    let pki = Pki::new();
    let ca = pki.p("ca.pem");
    let chroot = unique_chroot("sasl-ssl-reload");
    let zk = zookeeper().session(&chroot).await;
    let [ks_type, ks_location] = keystore(&pki);
    let broker = BrokerProcess::start(&sasl_ssl_spec(
        &chroot,
        1,
        &[(ks_type.0, &ks_type.1), (ks_location.0, &ks_location.1)],
    ));
    cluster_ready(&zk, 1).await;
    let admin = common::bootstrap_of(&zk, 1).await;
    let boot = sasl_ssl_bootstrap(&zk, 1).await;
    let peer_cn = |addr: String, ca: String| blocking(move || python_client(PEER_CN, &[&addr, &ca]));
    assert_eq!(peer_cn(boot.clone(), ca.clone()).await, "kastle broker");
    // A TLS connection opened before the change: it keeps its session and keystore A's certificate.
    let mut before = Command::new(common::python())
        .args(["-c", HELD_OPEN, &boot, &ca])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    let mut before_in = before.stdin.take().expect("stdin");
    let mut before_out = std::io::BufReader::new(before.stdout.take().expect("stdout"));
    let (line, mut before_out) = blocking(move || {
        use std::io::BufRead;
        let mut line = String::new();
        before_out.read_line(&mut line).expect("read");
        (line, before_out)
    })
    .await;
    assert_eq!(line.trim(), "kastle broker");

    let alter = |value: String| {
        let admin = admin.clone();
        blocking(move || python_client(ALTER_BROKER, &[&admin, "1", ks_location.0, &value]))
    };
    assert_eq!(alter(pki.p("broker2.pem")).await, "ok");
    wait_until_else(
        Duration::from_secs(10),
        "new connections to get keystore B's certificate",
        || {
            let cn = peer_cn(boot.clone(), ca.clone());
            async move { cn.await == "kastle broker two" }
        },
        || broker.stderr(),
    )
    .await;
    let (stored, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .entity_config_versioned("brokers", "1")
        .await
        .expect("read");
    assert_eq!(stored.get(ks_location.0), Some(&pki.p("broker2.pem")));

    // A keystore that does not load is refused naming the key; B keeps serving.
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("absent.pem").display().to_string();
    let refused = alter(missing).await;
    assert!(
        refused.starts_with("INVALID_CONFIG") && refused.contains(ks_location.0) && refused.contains("absent.pem"),
        "{refused}"
    );
    let (stored, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .entity_config_versioned("brokers", "1")
        .await
        .expect("read");
    assert_eq!(
        stored.get(ks_location.0),
        Some(&pki.p("broker2.pem")),
        "nothing written"
    );
    assert_eq!(peer_cn(boot.clone(), ca.clone()).await, "kastle broker two");

    {
        use std::io::{BufRead, Write};
        before_in.write_all(b"go\n").expect("write");
        before_in.flush().expect("flush");
        let line = blocking(move || {
            let mut line = String::new();
            before_out.read_line(&mut line).expect("read");
            line
        })
        .await;
        assert_eq!(
            line.trim(),
            "answered 7 kastle broker",
            "the connection opened before the change"
        );
    }
    let _ = before.wait();
}

/// confluent-kafka AdminClient logged in as the PLAIN admin over SASL_SSL on argv[1] (CA
/// argv[2]): creates SCRAM-SHA-512 user argv[3] with password argv[4]; prints "ok".
const ADMIN_ADDS_SCRAM_USER: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
a = AdminClient({"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_SSL", "ssl.ca.location": sys.argv[2],
                 "sasl.mechanisms": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"})
alt = UserScramCredentialUpsertion(sys.argv[3], ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), sys.argv[4].encode())
for f in a.alter_user_scram_credentials([alt]).values():
    f.result(30)
print("ok")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sasl_ssl_compose_variant_config_serves_with_the_certificates_its_script_makes() {
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = dir.path().join("tls");
    let (ok, _, err) = run(Command::new(repo.join("docker/tls/gen-certs.sh")).arg(&tls));
    assert!(ok, "gen-certs.sh: {err}");
    let ca = tls.join("ca.pem").display().to_string();
    // The variant's broker config, with the container paths pointed into the temp dir.
    let text = std::fs::read_to_string(repo.join("docker/kastle-sasl-ssl.yaml")).expect("config");
    let log_dir = dir.path().join("data");
    let text = text
        .replace("/etc/kastle/tls", &tls.display().to_string())
        .replace("/var/lib/kastle/data", &log_dir.display().to_string());
    let config = dir.path().join("kastle.yaml");
    std::fs::write(&config, text).expect("write config");
    // The override's variables for kafka1, then what differs outside a container.
    let compose: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo.join("docker/docker-compose.sasl-ssl.yml")).expect("compose file"),
    )
    .expect("compose YAML");
    let mut env: Vec<(String, String)> = compose["services"]["kafka1"]["environment"]
        .as_mapping()
        .expect("kafka1's environment")
        .iter()
        .map(|(k, v)| {
            let k = k.as_str().expect("name").to_string();
            (k, v.as_str().expect("value").to_string())
        })
        .collect();
    assert!(
        env.iter()
            .any(|(k, v)| k == "KASTLE_CFG_LISTENER_SECURITY_PROTOCOL_MAP" && v.contains("EXTERNAL:SASL_SSL")),
        "{env:?}"
    );
    let chroot = unique_chroot("sasl-ssl-compose");
    let zk = zookeeper().session(&chroot).await;
    env.extend([
        ("KASTLE_CFG_BROKER_ID".to_string(), "1".to_string()),
        ("KASTLE_CFG_ZOOKEEPER_CONNECT".to_string(), zookeeper().connect(&chroot)),
        (
            "KASTLE_CFG_LISTENERS".to_string(),
            "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0".to_string(),
        ),
        (
            "KASTLE_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR".to_string(),
            "1".to_string(),
        ),
    ]);
    let broker = BrokerProcess::start_with_config(&config, &env, log_dir);
    wait_until_else(
        Duration::from_secs(30),
        "the broker to register",
        || {
            let zk = zk.clone();
            async move {
                kastle::zk::KafkaZkClient::new(zk)
                    .broker(kastle::types::BrokerId(1))
                    .await
                    .is_ok_and(|r| r.is_some())
            }
        },
        || broker.stderr(),
    )
    .await;
    let (registration, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .broker(kastle::types::BrokerId(1))
        .await
        .expect("read registration")
        .expect("registered");
    let external = registration
        .endpoints
        .iter()
        .find_map(|e| e.strip_prefix("EXTERNAL://"))
        .expect("an EXTERNAL endpoint")
        .to_string();
    let (b, c) = (external.clone(), ca.clone());
    let added = blocking(move || python_client(ADMIN_ADDS_SCRAM_USER, &[&b, &c, "alice", "alice-secret"])).await;
    assert_eq!(added, "ok");
    let login = ("SCRAM-SHA-512", "alice", "alice-secret");
    wait_until_else(
        Duration::from_secs(15),
        "alice to log in over SASL_SSL",
        || {
            let (b, c) = (external.clone(), ca.clone());
            blocking(move || run(kcat(&b, "SASL_SSL", &c, Some(login)).arg("-L")).0)
        },
        || broker.stderr(),
    )
    .await;
    let (b, c) = (external.clone(), ca.clone());
    let out = blocking(move || kcat_roundtrip(&b, &c, login, "compose-variant")).await;
    assert_eq!(out, "one\ntwo\nthree\n");
}
