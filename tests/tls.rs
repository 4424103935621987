//! SSL listeners with real clients: kcat, confluent-kafka and kafka-python over TLS (server
//! auth, PEM and PKCS12 keystores), mutual TLS with `ssl.client.auth=required` and the
//! certificate's DN mapped to the principal, a plaintext client on the TLS port, the start-up
//! refusal of an SSL listener without a keystore, and the keystore reload through
//! IncrementalAlterConfigs. Certificates come from [`common::pki`].

mod common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::pki::Pki;
use common::{wait_until_else, zookeeper, BrokerProcess, BrokerSpec};

/// A broker with a PLAINTEXT listener (inter-broker) and an SSL one, configured by `ssl`.
fn ssl_broker(test: &str, id: i32, ssl: &[(&str, &str)]) -> BrokerProcess {
    let mut spec = BrokerSpec::new(id, &zookeeper().connect(&common::unique_chroot(test)))
        .with("offsets.topic.replication.factor", "1");
    spec.listeners = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0".to_string();
    for (k, v) in ssl {
        spec = spec.with(k, v);
    }
    BrokerProcess::start(&spec)
}

/// The SSL listener's `host:port`, from the broker's log line "awaiting socket connections"
/// (logged once the broker is registered and serving).
async fn ssl_address(broker: &BrokerProcess) -> String {
    wait_until_else(
        Duration::from_secs(30),
        "the SSL listener to be up",
        || {
            let up = ssl_line(&broker.stderr()).is_some();
            async move { up }
        },
        || broker.stderr(),
    )
    .await;
    ssl_line(&broker.stderr()).expect("address")
}

fn ssl_line(log: &str) -> Option<String> {
    let line = log
        .lines()
        .find(|l| l.contains("awaiting socket connections") && l.contains("listener=SSL"))?;
    let addr = line.split("addr=").nth(1)?;
    Some(addr.split_whitespace().next()?.to_string())
}

fn kcat(addr: &str, ssl: &[&str], args: &[&str], input: Option<&str>) -> Output {
    let mut cmd = Command::new("kcat");
    cmd.args(["-b", addr, "-X", "security.protocol=SSL", "-m", "15"]);
    for x in ssl {
        cmd.args(["-X", x]);
    }
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("kcat");
    if let Some(text) = input {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("kcat output")
}

/// Produces three records with kcat and reads them back; panics with kcat's stderr on failure.
fn kcat_roundtrip(addr: &str, ssl: &[&str], topic: &str) {
    let produced = kcat(addr, ssl, &["-P", "-t", topic, "-K", ":"], Some("a:1\nb:2\nc:3\n"));
    assert!(
        produced.status.success(),
        "produce: {}",
        String::from_utf8_lossy(&produced.stderr)
    );
    let consumed = kcat(
        addr,
        ssl,
        &["-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"],
        None,
    );
    assert!(
        consumed.status.success(),
        "consume: {}",
        String::from_utf8_lossy(&consumed.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&consumed.stdout), "a:1\nb:2\nc:3\n");
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

const CONFLUENT_KAFKA: &str = r#"
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition
addr, topic, ca = sys.argv[1], sys.argv[2], sys.argv[3]
tls = {"bootstrap.servers": addr, "security.protocol": "SSL", "ssl.ca.location": ca}
p = Producer(dict(tls, acks="all"))
for i in range(50):
    p.produce(topic, key=str(i), value="v%d" % i)
assert p.flush(30) == 0
c = Consumer(dict(tls, **{"group.id": "unused", "enable.auto.commit": False}))
c.assign([TopicPartition(topic, 0, 0)])
got, deadline = [], time.time() + 30
while len(got) < 50 and time.time() < deadline:
    m = c.poll(0.2)
    if m is not None and m.error() is None:
        got.append(m.value().decode())
c.close()
assert got == ["v%d" % i for i in range(50)], got[:3]
print("ok", len(got))
"#;

const KAFKA_PYTHON: &str = r#"
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
addr, topic, ca = sys.argv[1], sys.argv[2], sys.argv[3]
tls = dict(bootstrap_servers=addr, security_protocol="SSL", ssl_cafile=ca, ssl_check_hostname=True)
p = KafkaProducer(acks="all", **tls)
for i in range(50):
    p.send(topic, key=str(i).encode(), value=("v%d" % i).encode())
p.flush(30)
p.close()
c = KafkaConsumer(consumer_timeout_ms=20000, auto_offset_reset="earliest", enable_auto_commit=False, **tls)
tp = TopicPartition(topic, 0)
c.assign([tp])
c.seek(tp, 0)
got = []
for m in c:
    got.append(m.value.decode())
    if len(got) == 50:
        break
c.close()
assert got == ["v%d" % i for i in range(50)], got[:3]
print("ok", len(got))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_confluent_kafka_and_kafka_python_produce_and_consume_over_ssl() {
    let pki = Pki::new();
    let (keystore, ca) = (pki.p("broker.pem"), pki.p("ca.pem"));
    let broker = ssl_broker(
        "tls-clients",
        1,
        &[("ssl.keystore.type", "PEM"), ("ssl.keystore.location", &keystore)],
    );
    let addr = ssl_address(&broker).await;
    let ca_opt = format!("ssl.ca.location={ca}");
    let (a, c) = (addr.clone(), ca_opt.clone());
    blocking(move || kcat_roundtrip(&a, &[&c], "kcat-ssl")).await;
    let py = common::python();
    for (script, topic) in [(CONFLUENT_KAFKA, "ck-ssl"), (KAFKA_PYTHON, "kp-ssl")] {
        let (py, addr, ca) = (py.clone(), addr.clone(), ca.clone());
        let out = blocking(move || Command::new(py).args(["-c", script, &addr, topic, &ca]).output())
            .await
            .expect("python");
        assert!(
            out.status.success(),
            "{topic}: {}\nbroker: {}",
            String::from_utf8_lossy(&out.stderr),
            broker.stderr()
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok 50", "{topic}");
    }
    // A client that does not trust the broker's CA is refused by the client itself.
    let a = addr.clone();
    let untrusted = blocking(move || {
        kcat(
            &a,
            &["ssl.ca.location=/etc/ssl/certs/ca-certificates.crt"],
            &["-L"],
            None,
        )
    })
    .await;
    assert!(
        !untrusted.status.success(),
        "{}",
        String::from_utf8_lossy(&untrusted.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_clients_without_a_certificate_and_maps_the_dn_to_the_principal() {
    let pki = Pki::new();
    let (keystore, ca) = (pki.p("broker.pem"), pki.p("ca.pem"));
    let broker = ssl_broker(
        "tls-mutual",
        1,
        &[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &keystore),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &ca),
            ("ssl.client.auth", "required"),
            ("ssl.principal.mapping.rules", "RULE:^.*CN=([a-z]+).*$/$1/U,DEFAULT"),
        ],
    );
    let addr = ssl_address(&broker).await;
    let ca_opt = format!("ssl.ca.location={ca}");
    let (a, c) = (addr.clone(), ca_opt.clone());
    let refused = blocking(move || kcat(&a, &[&c], &["-L"], None)).await;
    assert!(
        !refused.status.success(),
        "no client certificate, yet: {}",
        String::from_utf8_lossy(&refused.stdout)
    );
    let (cert, key) = (
        format!("ssl.certificate.location={}", pki.p("client.crt")),
        format!("ssl.key.location={}", pki.p("client.key")),
    );
    let a = addr.clone();
    blocking(move || kcat_roundtrip(&a, &[&ca_opt, &cert, &key], "mtls")).await;
    let log = broker.stderr();
    assert!(log.contains("principal=User:ALICE"), "{log}");
    assert!(
        log.contains("TLS handshake failed"),
        "the refused client is logged: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_client_on_the_tls_port_gets_a_closed_connection_not_data() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::new();
    let keystore = pki.p("broker.pem");
    let broker = ssl_broker(
        "tls-plaintext-client",
        1,
        &[("ssl.keystore.type", "PEM"), ("ssl.keystore.location", &keystore)],
    );
    let addr = ssl_address(&broker).await;
    let mut socket = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    // ApiVersions v0, correlation id 0x0badf00d, client id "x".
    let request: &[u8] = &[0, 0, 0, 11, 0, 18, 0, 0, 0x0b, 0xad, 0xf0, 0x0d, 0, 1, b'x'];
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
    // The broker still serves TLS clients.
    let ca_opt = format!("ssl.ca.location={}", pki.p("ca.pem"));
    let listed = blocking(move || kcat(&addr, &[&ca_opt], &["-L"], None)).await;
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssl_listener_without_a_keystore_stops_the_start_naming_the_listener_and_key() {
    let mut broker = ssl_broker("tls-no-keystore", 1, &[]);
    let status = broker.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2), "{}", broker.stderr());
    let log = broker.stderr();
    assert!(
        log.contains("SSL listener \"SSL\"") && log.contains("listener.name.ssl.ssl.keystore.location"),
        "{log}"
    );
    // A JKS keystore is refused with the command that converts it.
    let dir = tempfile::tempdir().expect("tempdir");
    let jks = dir.path().join("broker.jks");
    std::fs::write(&jks, [0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]).expect("write");
    let jks = jks.display().to_string();
    let mut broker = ssl_broker("tls-jks", 1, &[("ssl.keystore.location", &jks)]);
    let status = broker.wait_exit(Duration::from_secs(30)).await;
    assert_ne!(status.code(), Some(0), "{}", broker.stderr());
    let log = broker.stderr();
    assert!(
        log.contains("keytool -importkeystore") && log.contains("-deststoretype PKCS12"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pkcs12_keystore_serves_tls() {
    let pki = Pki::new();
    let p12 = pki.pkcs12("broker");
    let broker = ssl_broker(
        "tls-pkcs12",
        1,
        &[
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", &p12),
            ("ssl.keystore.password", "secret"),
        ],
    );
    let addr = ssl_address(&broker).await;
    let ca_opt = format!("ssl.ca.location={}", pki.p("ca.pem"));
    blocking(move || kcat_roundtrip(&addr, &[&ca_opt], "p12")).await;
}
