//! Brokers register in ZooKeeper the way Kafka brokers do: ephemeral v5 JSON under
//! `/brokers/ids`, readable with the real zkCli, gone at once on SIGTERM and after the session
//! timeout on kill -9, re-registered with a new epoch after a session expiry, and refused when
//! the id is taken or the log dir belongs to another cluster. A broker restarted right after
//! kill -9 waits for its dead self's session to expire instead of failing.

mod common;

use std::time::Duration;

use common::{unique_chroot, wait_until, zkcli, zookeeper, BrokerProcess, BrokerSpec};
use kastle::config::KafkaConfig;
use kastle::server::Broker;
use kastle::types::BrokerId;
use kastle::zk::paths::ZNodeKind;
use kastle::zk::store::ZkStore;
use kastle::zk::{KafkaZkClient, ZkSession};

const SECONDS_10: Duration = Duration::from_secs(10);

async fn registration_czxid(zk: &ZkSession, id: i32) -> Option<i64> {
    KafkaZkClient::new(zk.clone())
        .broker(BrokerId(id))
        .await
        .expect("read registration")
        .map(|(_, stat)| stat.czxid)
}

fn in_process_config(spec: &BrokerSpec, log_dir: &std::path::Path) -> KafkaConfig {
    let pairs = spec.pairs(log_dir);
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    KafkaConfig::from_pairs(&refs).expect("valid config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_brokers_register_and_zkcli_shows_the_v5_json() {
    let zk = zookeeper();
    let chroot = unique_chroot("three");
    let dirs = tempfile::tempdir().expect("tempdir");
    let mut brokers = Vec::new();
    for id in 1..=3 {
        let spec = BrokerSpec::new(id, &zk.connect(&chroot));
        let config = in_process_config(&spec, &dirs.path().join(format!("b{id}")));
        brokers.push(Broker::start(&config).await.expect("broker starts"));
    }
    let session = zk.session(&chroot).await;
    let ids = KafkaZkClient::new(session.clone()).broker_ids().await.expect("ids");
    assert_eq!(ids, vec![BrokerId(1), BrokerId(2), BrokerId(3)]);
    let cluster_ids: Vec<&str> = brokers.iter().map(|b| b.cluster_id()).collect();
    assert!(
        cluster_ids.iter().all(|c| *c == cluster_ids[0] && c.len() == 22),
        "{cluster_ids:?}"
    );

    // The real zkCli, as an operator would type it.
    let out = zkcli(&zk.address(), &["get", &format!("{chroot}/brokers/ids/1")]);
    let json_line = out
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON in zkCli output:\n{out}"));
    let json: serde_json::Value = serde_json::from_str(json_line).expect("zkCli prints JSON");
    let port = brokers[0].advertised_endpoints()[0].port;
    assert_ne!(port, 0, "the bound port is advertised");
    assert_eq!(json["version"], 5);
    assert_eq!(
        json["endpoints"],
        serde_json::json!([format!("PLAINTEXT://127.0.0.1:{port}")])
    );
    assert_eq!(json["host"], "127.0.0.1");
    assert_eq!(json["port"], port);
    assert_eq!(json["listener_security_protocol_map"]["PLAINTEXT"], "PLAINTEXT");
    let problems = kastle::zk::schema::validate(ZNodeKind::BrokerRegistration, json_line.as_bytes()).expect("schema");
    assert!(problems.is_empty(), "{problems:?}");

    // The epoch each broker reports is its registration's czxid.
    for (i, b) in brokers.iter().enumerate() {
        assert_eq!(
            registration_czxid(&session, i as i32 + 1).await,
            Some(b.broker_epoch().0)
        );
    }
    for b in brokers {
        b.shutdown().await.expect("clean shutdown");
    }
    assert!(KafkaZkClient::new(session.clone())
        .broker_ids()
        .await
        .expect("ids")
        .is_empty());
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_deregisters_at_once_and_marks_a_clean_shutdown() {
    let zk = zookeeper();
    let chroot = unique_chroot("sigterm");
    // A long session timeout: only an explicit deregistration can make the znode go quickly.
    let mut broker = BrokerProcess::start(&BrokerSpec::new(1, &zk.connect(&chroot)).session_timeout_ms(30_000));
    let session = zk.session(&chroot).await;
    wait_until(SECONDS_10, "broker 1 registered", || async {
        registration_czxid(&session, 1).await.is_some()
    })
    .await;
    broker.signal("TERM");
    let status = broker.wait_exit(SECONDS_10).await;
    assert!(status.success(), "exit status {status:?}; stderr:\n{}", broker.stderr());
    assert_eq!(
        registration_czxid(&session, 1).await,
        None,
        "registration must be gone when the process has exited"
    );
    let marker = std::fs::read_to_string(broker.log_dir.join(".kafka_cleanshutdown")).expect("clean-shutdown marker");
    assert!(marker.starts_with(r#"{"version":0,"brokerEpoch":"#), "{marker}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_leaves_the_znode_until_the_session_times_out() {
    let zk = zookeeper();
    let chroot = unique_chroot("kill9");
    let mut broker = BrokerProcess::start(&BrokerSpec::new(1, &zk.connect(&chroot)).session_timeout_ms(3000));
    let session = zk.session(&chroot).await;
    wait_until(SECONDS_10, "broker 1 registered", || async {
        registration_czxid(&session, 1).await.is_some()
    })
    .await;
    broker.signal("KILL");
    broker.wait_exit(SECONDS_10).await;
    assert!(
        registration_czxid(&session, 1).await.is_some(),
        "an ephemeral outlives a killed process until its session times out"
    );
    wait_until(Duration::from_secs(15), "the dead broker's znode to expire", || async {
        registration_czxid(&session, 1).await.is_none()
    })
    .await;
    assert!(
        !broker.log_dir.join(".kafka_cleanshutdown").exists(),
        "a killed broker is not a clean shutdown"
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_broker_re_registers_with_a_new_epoch_after_its_session_expires() {
    let zk = zookeeper();
    let chroot = unique_chroot("sigstop");
    let broker = BrokerProcess::start(&BrokerSpec::new(1, &zk.connect(&chroot)).session_timeout_ms(2000));
    let session = zk.session(&chroot).await;
    wait_until(SECONDS_10, "broker 1 registered", || async {
        registration_czxid(&session, 1).await.is_some()
    })
    .await;
    let first = registration_czxid(&session, 1).await.expect("registered");
    broker.signal("STOP");
    wait_until(
        Duration::from_secs(15),
        "the paused broker's session to expire",
        || async { registration_czxid(&session, 1).await.is_none() },
    )
    .await;
    broker.signal("CONT");
    common::wait_until_else(
        Duration::from_secs(20),
        "broker 1 to re-register",
        || async { registration_czxid(&session, 1).await.is_some() },
        || {
            broker
                .stderr()
                .lines()
                .rev()
                .take(30)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        },
    )
    .await;
    let second = registration_czxid(&session, 1).await.expect("re-registered");
    assert!(second > first, "new czxid {second} must be above the old {first}");
    let stderr = broker.stderr();
    assert!(stderr.contains("new ZooKeeper session established"), "{stderr}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_broker_with_the_same_id_exits_naming_the_id() {
    let zk = zookeeper();
    let chroot = unique_chroot("dupid");
    let spec = BrokerSpec::new(7, &zk.connect(&chroot));
    let _first = BrokerProcess::start(&spec);
    let session = zk.session(&chroot).await;
    wait_until(SECONDS_10, "broker 7 registered", || async {
        registration_czxid(&session, 7).await.is_some()
    })
    .await;
    let mut second = BrokerProcess::start(&spec);
    let status = second.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success());
    let stderr = second.stderr();
    assert!(stderr.contains("broker.id 7 is already registered"), "{stderr}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restarted_right_after_kill_9_waits_for_its_old_session_and_an_impostor_is_refused() {
    let zk = zookeeper();
    let chroot = unique_chroot("restart9");
    // A fixed port, so the restarted broker advertises the endpoint its dead self registered.
    let spec = BrokerSpec::new(4, &zk.connect(&chroot))
        .session_timeout_ms(6000)
        .port(common::zookeeper::free_port());
    let mut broker = BrokerProcess::start(&spec);
    let session = zk.session(&chroot).await;
    wait_until(SECONDS_10, "broker 4 registered", || async {
        registration_czxid(&session, 4).await.is_some()
    })
    .await;
    let old = registration_czxid(&session, 4).await.expect("registered");
    broker.signal("KILL");
    broker.wait_exit(SECONDS_10).await;
    assert_eq!(
        registration_czxid(&session, 4).await,
        Some(old),
        "the dead session still holds the id"
    );

    // Same id, other endpoint (any free port): another broker, refused without waiting.
    let started = std::time::Instant::now();
    let mut impostor = BrokerProcess::start(&BrokerSpec::new(4, &zk.connect(&chroot)).session_timeout_ms(6000));
    let broker = broker.restart(&spec);
    let status = impostor.wait_exit(Duration::from_secs(20)).await;
    let stderr = impostor.stderr();
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("broker.id 4 is already registered"), "{stderr}");
    assert!(!stderr.contains("waiting for that session to expire"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "refused at once, not after the session timeout"
    );

    common::wait_until_else(
        Duration::from_secs(25),
        "the restarted broker 4 to register once its old session expired",
        || async { registration_czxid(&session, 4).await.is_some_and(|czxid| czxid > old) },
        || broker.stderr(),
    )
    .await;
    let stderr = broker.stderr();
    assert!(stderr.contains("waiting for that session to expire"), "{stderr}");
    let metadata = common::cluster::metadata(&session, 4).await;
    assert_eq!(metadata.brokers.iter().map(|b| b.node_id.0).collect::<Vec<_>>(), [4]);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_waits_for_the_first_update_metadata_instead_of_answering_no_controller() {
    use kafka_protocol::messages::MetadataRequest;
    use kastle::zk::models::{ControllerZNode, ZNodePayload};
    use kastle::zk::store::CreateMode;
    // A /controller held by a broker that does not exist: broker 1 registers and serves, but no
    // controller tells it the cluster until the test lets go of /controller.
    let zk = zookeeper();
    let chroot = unique_chroot("warmup");
    let session = zk.session(&chroot).await;
    let fake = ControllerZNode {
        version: 1,
        brokerid: BrokerId(99),
        timestamp: 0,
        kraft_controller_epoch: None,
    };
    session
        .create("/controller", &fake.encode(), CreateMode::Persistent)
        .await
        .expect("fake controller");
    let _broker = BrokerProcess::start(&BrokerSpec::new(1, &zk.connect(&chroot)).session_timeout_ms(6000));
    wait_until(SECONDS_10, "broker 1 registered", || async {
        registration_czxid(&session, 1).await.is_some()
    })
    .await;
    let mut wire = common::wire::Wire::connect(&common::bootstrap_of(&session, 1).await).await;
    let mut answer = tokio::spawn(async move { wire.send(&MetadataRequest::default().with_topics(None), 12).await });
    // Answered now, it could only say "no brokers, controller -1" (what made librdkafka's
    // AdminClient give up waiting for a controller).
    let early = tokio::time::timeout(Duration::from_millis(700), &mut answer).await;
    assert!(early.is_err(), "answered before the broker knew the cluster: {early:?}");
    session.delete("/controller", None).await.expect("release /controller");
    let response = tokio::time::timeout(SECONDS_10, answer)
        .await
        .expect("answered once the controller spoke")
        .expect("join");
    assert_eq!(response.controller_id.0, 1);
    assert_eq!(response.brokers.iter().map(|b| b.node_id.0).collect::<Vec<_>>(), [1]);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_dir_of_another_cluster_stops_start_up_with_the_dir_and_ids() {
    let zk = zookeeper();
    let chroot = unique_chroot("othercluster");
    let dir = tempfile::Builder::new()
        .prefix("kastle-broker-")
        .tempdir()
        .expect("tempdir");
    let log_dir = dir.path().join("logs");
    std::fs::create_dir_all(&log_dir).expect("mkdir");
    std::fs::write(
        log_dir.join("meta.properties"),
        "version=0\nbroker.id=1\ncluster.id=SomeOtherClusterId0000\n",
    )
    .expect("write meta");
    let mut broker = BrokerProcess::start_in(&BrokerSpec::new(1, &zk.connect(&chroot)), dir, log_dir.clone());
    let status = broker.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success());
    let stderr = broker.stderr();
    assert!(stderr.contains("SomeOtherClusterId0000"), "{stderr}");
    assert!(
        stderr.contains(&log_dir.join("meta.properties").display().to_string()),
        "{stderr}"
    );
    let session = zk.session(&chroot).await;
    assert_eq!(
        registration_czxid(&session, 1).await,
        None,
        "a refused broker must not register"
    );
    let cluster = KafkaZkClient::new(session.clone())
        .cluster_id()
        .await
        .expect("read")
        .expect("created");
    assert!(
        stderr.contains(&cluster),
        "the message names ZooKeeper's cluster id too: {stderr}"
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_creates_the_chroot_and_kafkas_persistent_paths() {
    let zk = zookeeper();
    let chroot = format!("{}/nested", unique_chroot("chroot"));
    let dirs = tempfile::tempdir().expect("tempdir");
    let config = in_process_config(&BrokerSpec::new(1, &zk.connect(&chroot)), dirs.path());
    let broker = Broker::start(&config).await.expect("start");
    let session = zk.session(&chroot).await;
    for path in kastle::zk::paths::PERSISTENT_PATHS {
        assert!(session.exists(path).await.expect("exists").is_some(), "{path} missing");
    }
    let meta = std::fs::read_to_string(dirs.path().join("meta.properties")).expect("meta.properties");
    assert!(meta.contains("version=0") && meta.contains("broker.id=1"), "{meta}");
    assert!(meta.contains(&format!("cluster.id={}", broker.cluster_id())), "{meta}");
    broker.shutdown().await.expect("shutdown");
    session.close().await;
}
