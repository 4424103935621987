//! ZooKeeper security against Debian's real ZooKeeper configured for SASL DIGEST-MD5 by the
//! harness: brokers log in from the JAAS `Client` section, `zookeeper.set.acl=true` gives their
//! znodes Kafka's ACLs (CREATOR_ALL + world READ; `/config/users` CREATOR_ALL only), so an
//! anonymous zkCli can read `/brokers/ids` but neither write there nor read `/config/users`; and
//! the start-up errors for a missing JAAS file or section name the key to fix. TLS to ZooKeeper
//! is tested in `zk_tls.rs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::zookeeper::{free_port, Secured, ZooKeeperServer};
use common::{bootstrap_of, kcat_roundtrip, unique_chroot, wait_until, BrokerProcess, BrokerSpec};
use kastle::config::ZkSaslClient;
use kastle::zk::store::{CreateMode, ZkStore};
use kastle::zk::{ConnectString, KafkaZkClient, ZkSecurity, ZkSession};

const USER: &str = "kafka";
const PASSWORD: &str = "kafka-zk-secret";
const SECONDS_20: Duration = Duration::from_secs(20);

fn sasl_zookeeper(require_sasl: bool) -> ZooKeeperServer {
    ZooKeeperServer::start_secured(&Secured {
        sasl_users: vec![(USER.to_string(), PASSWORD.to_string())],
        require_sasl,
        tls: None,
    })
}

/// The broker's JAAS file, as Kafka's docs write it.
fn write_client_jaas(dir: &Path, section: &str) -> PathBuf {
    let path = dir.join("zk_client_jaas.conf");
    std::fs::write(
        &path,
        format!(
            "{section} {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
             username=\"{USER}\"\n  password=\"{PASSWORD}\";\n}};\n"
        ),
    )
    .expect("write JAAS file");
    path
}

/// An authenticated session with the brokers' identity, creating with secure ACLs.
async fn kafka_session(zk: &ZooKeeperServer, chroot: &str, jaas: &Path) -> ZkSession {
    let sasl = ZkSaslClient {
        jaas_file: jaas.to_path_buf(),
        section: "Client".into(),
    };
    let text = std::fs::read_to_string(jaas).expect("read JAAS");
    let security = ZkSecurity::from_jaas(&text, &sasl, true).expect("Client section");
    let connect = ConnectString::parse(&zk.connect(chroot)).expect("connect string");
    ZkSession::connect_secured(&connect, Duration::from_secs(10), Duration::from_secs(10), &security)
        .await
        .expect("authenticated session")
}

/// The real zkCli, anonymous (no JAAS file): stdout and stderr together, since it reports
/// permission errors on either depending on the command.
fn anonymous_zkcli(server: &str, args: &[&str]) -> String {
    zkcli_as(None, server, args)
}

/// zkCli logged in from `jaas`'s `Client` section when given (`CLIENT_JVMFLAGS`, as an operator
/// would run it), else anonymous.
fn zkcli_as(jaas: Option<&Path>, server: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("/usr/share/zookeeper/bin/zkCli.sh");
    cmd.arg("-server").arg(server).args(args).env_remove("JVMFLAGS");
    match jaas {
        Some(jaas) => cmd.env(
            "CLIENT_JVMFLAGS",
            format!("-Djava.security.auth.login.config={}", jaas.display()),
        ),
        None => cmd.env_remove("CLIENT_JVMFLAGS"),
    };
    let out = cmd.output().expect("run zkCli.sh");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn secured_spec(id: i32, zk: &ZooKeeperServer, chroot: &str, jaas: &Path) -> BrokerSpec {
    BrokerSpec::new(id, &zk.connect(chroot))
        .with("zookeeper.sasl.jaas.config.file", &jaas.display().to_string())
        .with("zookeeper.set.acl", "true")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_brokers_with_secure_acls_keep_anonymous_clients_out() {
    let zk = sasl_zookeeper(false);
    let chroot = unique_chroot("zksasl");
    let dir = tempfile::tempdir().expect("tempdir");
    let jaas = write_client_jaas(dir.path(), "Client");
    let brokers: Vec<BrokerProcess> = (1..=2)
        .map(|id| BrokerProcess::start(&secured_spec(id, &zk, &chroot, &jaas)))
        .collect();
    let session = kafka_session(&zk, &chroot, &jaas).await;
    let kafka_zk = KafkaZkClient::new(session.clone());
    wait_until(SECONDS_20, "both brokers registered", || async {
        kafka_zk.broker_ids().await.map(|ids| ids.len() == 2).unwrap_or(false)
    })
    .await;

    // The brokers serve: a produce/consume round trip (topic auto-creation writes
    // /brokers/topics and the partition state under the same ACLs).
    let bootstrap = bootstrap_of(&session, 1).await;
    let echoed = tokio::task::spawn_blocking(move || kcat_roundtrip(&bootstrap, "secured", "k1:v1\nk2:v2\n"))
        .await
        .expect("kcat");
    assert_eq!(echoed, "k1:v1\nk2:v2\n");

    // A SCRAM-style user entity created by an authenticated session, as kafka-configs would.
    session
        .create(
            "/config/users/alice",
            br#"{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"}}"#,
            CreateMode::Persistent,
        )
        .await
        .expect("create /config/users/alice");

    let server = zk.address();
    let ids = format!("{chroot}/brokers/ids");
    let acl = anonymous_zkcli(&server, &["getAcl", &format!("{ids}/1")]);
    assert!(
        acl.contains("'sasl,'kafka\n: cdrwa") && acl.contains("'world,'anyone\n: r"),
        "registration ACL is CREATOR_ALL + world READ:\n{acl}"
    );
    let read = anonymous_zkcli(&server, &["get", &format!("{ids}/1")]);
    assert!(read.contains("\"endpoints\""), "world can read a registration:\n{read}");

    let write = anonymous_zkcli(&server, &["create", &format!("{ids}/99"), "{}"]);
    assert!(write.contains("Insufficient permission"), "anonymous create:\n{write}");
    assert_eq!(
        session.exists("/brokers/ids/99").await.expect("exists"),
        None,
        "the anonymous create must not have happened"
    );

    let users_acl = zkcli_as(Some(&jaas), &server, &["getAcl", &format!("{chroot}/config/users")]);
    assert!(
        users_acl.contains("'sasl,'kafka\n: cdrwa") && !users_acl.contains("'world,'anyone"),
        "/config/users is CREATOR_ALL only:\n{users_acl}"
    );
    for (command, path) in [
        ("get", "/config/users"),
        ("get", "/config/users/alice"),
        ("getAcl", "/config/users/alice"),
    ] {
        let out = anonymous_zkcli(&server, &[command, &format!("{chroot}{path}")]);
        assert!(
            out.contains("Insufficient permission"),
            "anonymous {command} {path}:\n{out}"
        );
        assert!(!out.contains("SCRAM-SHA-256"), "{out}");
    }
    let listed = anonymous_zkcli(&server, &["ls", &format!("{chroot}/config/users")]);
    assert!(listed.contains("Insufficient permission"), "anonymous ls:\n{listed}");

    drop(brokers);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_that_requires_sasl_serves_sasl_brokers() {
    // sessionRequireClientSASLAuth=true: ZooKeeper closes every session that does not log in,
    // so a broker that registers here has authenticated with DIGEST-MD5.
    let zk = sasl_zookeeper(true);
    let chroot = unique_chroot("zkreq");
    let dir = tempfile::tempdir().expect("tempdir");
    let jaas = write_client_jaas(dir.path(), "Client");
    let broker = BrokerProcess::start(&secured_spec(1, &zk, &chroot, &jaas));
    let session = kafka_session(&zk, &chroot, &jaas).await;
    let kafka_zk = KafkaZkClient::new(session.clone());
    wait_until(SECONDS_20, "broker registered", || async {
        kafka_zk.broker_ids().await.map(|ids| ids.len() == 1).unwrap_or(false)
    })
    .await;
    drop(broker);
    session.close().await;
}

/// Starts a broker that must fail at start-up; returns its stderr.
async fn startup_error(spec: &BrokerSpec) -> String {
    let mut broker = BrokerProcess::start(spec);
    let status = broker.wait_exit(SECONDS_20).await;
    assert!(
        !status.success(),
        "the broker must refuse to start:\n{}",
        broker.stderr()
    );
    broker.stderr()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_jaas_file_or_section_is_a_startup_error_naming_the_key() {
    // No ZooKeeper needed: the login is read before connecting.
    let connect = format!("127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().expect("tempdir");

    let missing = dir.path().join("no-such-jaas.conf");
    let spec = BrokerSpec::new(1, &connect).with("zookeeper.sasl.jaas.config.file", &missing.display().to_string());
    let stderr = startup_error(&spec).await;
    assert!(
        stderr.contains("zookeeper.sasl.jaas.config.file") && stderr.contains("no-such-jaas.conf"),
        "{stderr}"
    );

    let jaas = write_client_jaas(dir.path(), "KafkaServer");
    let spec = BrokerSpec::new(1, &connect).with("zookeeper.sasl.jaas.config.file", &jaas.display().to_string());
    let stderr = startup_error(&spec).await;
    assert!(
        stderr.contains("zookeeper.sasl.clientconfig") && stderr.contains("no section \"Client\""),
        "{stderr}"
    );
}
