//! TLS to ZooKeeper against Debian's real ZooKeeper 3.8, which the harness starts with a
//! `secureClientPort` (Netty) beside its plaintext port, PEM key and trust stores made here with
//! rcgen. Brokers given only the TLS port and `zookeeper.ssl.client.enable=true` register and
//! serve a produce/consume round trip; a broker that does not trust ZooKeeper's certificate
//! stops at start-up naming the truststore key and rustls' reason; mutual TLS
//! (`ssl.clientAuth=need`) works with a PKCS12 broker keystore, whose certificate DN then owns
//! the znodes under `zookeeper.set.acl=true` and without which the broker stops at start-up;
//! TLS and SASL DIGEST-MD5 together; a TLS session reconnects after ZooKeeper stops answering;
//! `kastle zk check --zk-tls-config-file`; and the configuration errors name the key to fix.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::pki::Pki;
use common::zookeeper::{free_port, Secured, SecuredTls, ZooKeeperServer};
use common::{bootstrap_of, kcat_roundtrip, unique_chroot, wait_until, zkcli, BrokerProcess, BrokerSpec};
use kastle::zk::store::ZkStore;
use kastle::zk::{KafkaZkClient, ZkSession};

const SECONDS_20: Duration = Duration::from_secs(20);
const NETTY: &str = "org.apache.zookeeper.ClientCnxnSocketNetty";

/// A ZooKeeper serving TLS with `pki`'s `broker` certificate (127.0.0.1/localhost) and
/// trusting `pki`'s CA for client certificates.
fn tls_zookeeper(pki: &Pki, client_auth: &'static str, sasl_users: &[(&str, &str)]) -> ZooKeeperServer {
    ZooKeeperServer::start_secured(&Secured {
        sasl_users: sasl_users.iter().map(|(u, p)| (u.to_string(), p.to_string())).collect(),
        require_sasl: false,
        tls: Some(SecuredTls {
            keystore_pem: pki.path("broker.pem"),
            truststore_pem: pki.path("ca.pem"),
            client_auth,
        }),
    })
}

/// A broker connecting to ZooKeeper's TLS port only, trusting `truststore` (PEM).
fn tls_spec(id: i32, zk: &ZooKeeperServer, chroot: &str, truststore: &Path) -> BrokerSpec {
    BrokerSpec::new(id, &zk.secure_connect(chroot))
        .with("zookeeper.ssl.client.enable", "true")
        .with("zookeeper.clientCnxnSocket", NETTY)
        .with("zookeeper.ssl.truststore.location", &truststore.display().to_string())
        .with("zookeeper.ssl.truststore.type", "PEM")
}

async fn registered(session: &ZkSession, n: usize) {
    let kafka_zk = KafkaZkClient::new(session.clone());
    wait_until(SECONDS_20, "brokers registered", || async {
        kafka_zk.broker_ids().await.map(|ids| ids.len() == n).unwrap_or(false)
    })
    .await;
}

async fn roundtrip(session: &ZkSession, topic: &str) {
    let bootstrap = bootstrap_of(session, 1).await;
    let topic = topic.to_string();
    let echoed = tokio::task::spawn_blocking(move || kcat_roundtrip(&bootstrap, &topic, "k1:v1\nk2:v2\n"))
        .await
        .expect("kcat");
    assert_eq!(echoed, "k1:v1\nk2:v2\n");
}

/// Starts a broker that must fail at start-up; returns its stderr and how long it took.
async fn startup_error(spec: &BrokerSpec) -> (String, Duration) {
    let started = Instant::now();
    let mut broker = BrokerProcess::start(spec);
    let status = broker.wait_exit(SECONDS_20).await;
    let took = started.elapsed();
    assert!(
        !status.success(),
        "the broker must refuse to start:\n{}",
        broker.stderr()
    );
    (broker.stderr(), took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_on_zookeepers_tls_port_register_create_topics_and_serve() {
    let pki = Pki::new();
    let zk = tls_zookeeper(&pki, "none", &[]);
    let chroot = unique_chroot("zktls");
    let brokers: Vec<BrokerProcess> = (1..=2)
        .map(|id| BrokerProcess::start(&tls_spec(id, &zk, &chroot, &pki.path("ca.pem"))))
        .collect();
    // Assertions read through the plaintext port; the brokers know only the TLS one.
    let session = zk.session(&chroot).await;
    registered(&session, 2).await;
    roundtrip(&session, "over-tls").await;
    assert!(
        session
            .exists("/brokers/topics/over-tls")
            .await
            .expect("exists")
            .is_some(),
        "the auto-created topic is in ZooKeeper"
    );
    // `kastle zk check` reaches the TLS port with Kafka's --zk-tls-config-file.
    let props = pki.path("zk-tls.properties");
    std::fs::write(
        &props,
        format!(
            "zookeeper.ssl.client.enable=true\nzookeeper.clientCnxnSocket={NETTY}\n\
             zookeeper.ssl.truststore.location={}\n",
            pki.p("ca.pem")
        ),
    )
    .expect("write the TLS properties");
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_kastle"))
        .args([
            "zk",
            "check",
            "--zookeeper",
            &zk.secure_connect(&chroot),
            "--zk-tls-config-file",
        ])
        .arg(&props)
        .output()
        .expect("run kastle zk check");
    let out = String::from_utf8_lossy(&check.stdout).to_string() + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success() && out.contains("0 violation(s)"), "{out}");
    // Plaintext on the TLS port is no ZooKeeper session: the port really is TLS only.
    let plain = zkcli(&zk.secure_connect(""), &["ls", &format!("{chroot}/brokers/ids")]);
    assert!(
        !plain.contains("[1, 2]"),
        "a plaintext client on the TLS port:\n{plain}"
    );
    drop(brokers);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_does_not_trust_zookeepers_certificate_stops_at_startup() {
    let pki = Pki::new();
    let stranger = Pki::new();
    let zk = tls_zookeeper(&pki, "none", &[]);
    let chroot = unique_chroot("zkuntrusted");
    let spec = tls_spec(1, &zk, &chroot, &stranger.path("ca.pem"));
    let (stderr, took) = startup_error(&spec).await;
    assert!(
        stderr.contains("zookeeper.ssl.truststore.location") && stderr.contains("invalid peer certificate"),
        "{stderr}"
    );
    // Well before the 18 s connection timeout: the handshake's failure is the answer.
    assert!(took < Duration::from_secs(10), "took {took:?}:\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_with_a_pkcs12_keystore_owns_the_znodes_it_creates() {
    let pki = Pki::new();
    let zk = tls_zookeeper(&pki, "need", &[]);
    let chroot = unique_chroot("zkmtls");

    // ZooKeeper needs a client certificate: without a keystore the broker stops at start-up.
    let (stderr, _) = startup_error(&tls_spec(1, &zk, &chroot, &pki.path("ca.pem"))).await;
    assert!(stderr.contains("TLS handshake with ZooKeeper failed"), "{stderr}");

    let keystore = pki.pkcs12("client");
    let spec = tls_spec(1, &zk, &chroot, &pki.path("ca.pem"))
        .with("zookeeper.ssl.keystore.location", &keystore)
        .with("zookeeper.ssl.keystore.password", "secret")
        .with("zookeeper.ssl.keystore.type", "PKCS12")
        .with("zookeeper.set.acl", "true");
    let broker = BrokerProcess::start(&spec);
    let session = zk.session(&chroot).await;
    registered(&session, 1).await;
    roundtrip(&session, "over-mtls").await;
    // The certificate's DN is the creator ZooKeeper records (its x509 authentication).
    let acl = zkcli(&zk.address(), &["getAcl", &format!("{chroot}/brokers/ids/1")]);
    assert!(
        acl.contains("'x509,'")
            && acl.contains("CN=alice")
            && acl.contains("\n: cdrwa")
            && acl.contains("'world,'anyone\n: r"),
        "registration ACL is CREATOR_ALL for the certificate + world READ:\n{acl}"
    );
    drop(broker);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_sasl_digest_md5_together() {
    let pki = Pki::new();
    // The registration's ACL names the SASL user: the broker logged in over TLS.
    let zk = tls_zookeeper(&pki, "none", &[("kafka", "zk-secret")]);
    let chroot = unique_chroot("zktlssasl");
    let jaas = pki.path("zk_client_jaas.conf");
    std::fs::write(
        &jaas,
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
         username=\"kafka\"\n  password=\"zk-secret\";\n};\n",
    )
    .expect("write JAAS file");
    let spec = tls_spec(1, &zk, &chroot, &pki.path("ca.pem"))
        .with("zookeeper.sasl.jaas.config.file", &jaas.display().to_string())
        .with("zookeeper.set.acl", "true");
    let broker = BrokerProcess::start(&spec);
    let text = std::fs::read_to_string(&jaas).expect("read JAAS");
    let sasl = kastle::config::ZkSaslClient {
        jaas_file: jaas.clone(),
        section: "Client".into(),
    };
    let security = kastle::zk::ZkSecurity::from_jaas(&text, &sasl, true).expect("Client section");
    let connect = kastle::zk::ConnectString::parse(&zk.connect(&chroot)).expect("connect string");
    let session = ZkSession::connect_secured(&connect, SECONDS_20, SECONDS_20, &security)
        .await
        .expect("authenticated session");
    registered(&session, 1).await;
    let acl = zkcli(&zk.address(), &["getAcl", &format!("{chroot}/brokers/ids/1")]);
    assert!(acl.contains("'sasl,'kafka\n: cdrwa"), "{acl}");
    drop(broker);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_configuration_errors_name_the_key_to_fix() {
    // No ZooKeeper needed: the settings and stores are checked before connecting.
    let connect = format!("127.0.0.1:{}", free_port());
    let base = || {
        BrokerSpec::new(1, &connect)
            .with("zookeeper.ssl.client.enable", "true")
            .with("zookeeper.clientCnxnSocket", NETTY)
    };
    let (stderr, _) = startup_error(&base()).await;
    assert!(
        stderr.contains("zookeeper.ssl.truststore.location") && stderr.contains("needs a truststore"),
        "{stderr}"
    );
    let (stderr, _) = startup_error(&base().with("zookeeper.ssl.truststore.location", "/nonexistent/zk-ca.pem")).await;
    assert!(
        stderr.contains("zookeeper.ssl.truststore.location") && stderr.contains("/nonexistent/zk-ca.pem"),
        "{stderr}"
    );
    // A JKS store (its magic number), typed by its file name as ZooKeeper's client does.
    let dir = tempfile::tempdir().expect("tempdir");
    let jks = dir.path().join("zk-truststore.jks");
    std::fs::write(&jks, [0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]).expect("write jks");
    let (stderr, _) = startup_error(
        &base()
            .with("zookeeper.ssl.truststore.location", &jks.display().to_string())
            .with("zookeeper.ssl.truststore.password", "changeit"),
    )
    .await;
    assert!(stderr.contains("keytool -importkeystore"), "{stderr}");
    let (stderr, _) = startup_error(
        &base()
            .with("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem")
            .with("zookeeper.ssl.crl.enable", "true"),
    )
    .await;
    assert!(
        stderr.contains("zookeeper.ssl.crl.enable") && stderr.contains("revocation"),
        "{stderr}"
    );
    let (stderr, _) = startup_error(
        &base()
            .with("zookeeper.ssl.truststore.location", "/etc/kastle/zk-ca.pem")
            .with("zookeeper.ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_MD5"),
    )
    .await;
    assert!(stderr.contains("zookeeper.ssl.cipher.suites"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_session_reconnects_after_zookeeper_stops_answering() {
    let pki = Pki::new();
    let zk = tls_zookeeper(&pki, "none", &[]);
    let ca = pki.p("ca.pem");
    let lookup = |key: &str| match key {
        "zookeeper.ssl.truststore.location" => Some(ca.clone()),
        "zookeeper.ssl.endpoint.identification.algorithm" => Some("HTTPS".to_string()),
        _ => None,
    };
    let tls = kastle::security::tls::TlsSettings::resolve_zookeeper(&lookup).expect("settings");
    let security = kastle::zk::ZkSecurity::load(&kastle::config::ZkClientSecurity {
        sasl: None,
        tls: Some(tls),
        set_acl: false,
    })
    .expect("TLS config");
    let connect = kastle::zk::ConnectString::parse(&zk.secure_connect("/reconnect")).expect("connect string");
    let timeout = Duration::from_secs(4);
    let session = ZkSession::connect_secured(&connect, timeout, timeout, &security)
        .await
        .expect("TLS session");
    let mut events = session.subscribe();
    {
        let _paused = zk.pause();
        wait_until(SECONDS_20, "the session to lose its connection", || async {
            session.connection_lost()
        })
        .await;
    }
    wait_until(SECONDS_20, "the session to reconnect over TLS", || async {
        !session.connection_lost() && session.reconnects() >= 1 && session.exists("/").await.is_ok()
    })
    .await;
    assert!(
        matches!(
            events.try_recv(),
            Err(tokio::sync::broadcast::error::TryRecvError::Empty)
        ),
        "the same session, reconnected: no session ended or began"
    );
    session.close().await;
}
