//! Secured inter-broker listeners, where they must fail: a broker whose inter-broker SCRAM
//! password is wrong cannot fetch from the leader, says so in its log (an authentication error,
//! promptly, not a hang) and gets no data by any other way (no downgrade), so it leaves the ISR
//! while the others replicate; a TLS inter-broker listener without a truststore, or a SASL one
//! without the broker's login, stops the start-up naming the key; brokers log in again before a
//! SASL session with a lifetime (KIP-368) ends. The leader-kill replication
//! check over these listeners is in tests/replication.rs.

mod common;

use std::time::Duration;

use common::cluster::{all_registered, controller_of};
use common::inter_broker::{InterBroker, Security};
use common::replicas::{create_topic, isr, leader, log_end, produce_request, spec};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, wait_until_else, zookeeper, BrokerProcess, BrokerSpec};

/// Waits until broker `id` knows it leads `topic-0`: the controller has logged in to it and sent
/// LeaderAndIsr and UpdateMetadata (the ZooKeeper state is written before that).
async fn leading(zk: &kastle::zk::ZkSession, id: i32, topic: &str) {
    wait_until(Duration::from_secs(30), "the leader to learn it leads", || async {
        let metadata = common::cluster::metadata(zk, id).await;
        common::cluster::partition_in(&metadata, topic, 0).is_some_and(|(l, _, _)| l == id)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_with_a_wrong_inter_broker_password_does_not_replicate_and_logs_the_authentication_failure() {
    let chroot = unique_chroot("ib-wrong-password");
    let zk = zookeeper().session(&chroot).await;
    let security = Security::new(InterBroker::SaslPlaintext);
    security.prepare(&zk).await;
    // A follower that fetches nothing leaves the ISR after replica.lag.time.max.ms.
    let extra = [
        ("replica.lag.time.max.ms", "2000"),
        ("replica.fetch.wait.max.ms", "200"),
    ];
    let good: Vec<BrokerProcess> = (1..=2)
        .map(|id| BrokerProcess::start(&security.apply(spec(&chroot, id, &extra))))
        .collect();
    // The controller is one of the brokers that can log in (a controller that cannot reach any
    // broker elects nothing: that is the same failure, seen from the other side).
    all_registered(&zk, 2).await;
    wait_until(Duration::from_secs(30), "a controller", || async {
        controller_of(&zk).await.is_some()
    })
    .await;
    let wrong = BrokerProcess::start(&security.apply_with_password(spec(&chroot, 3, &extra), "not-the-password"));
    all_registered(&zk, 3).await;

    create_topic(&zk, "guarded", "[1,2,3]").await;
    let first_leader = leader(&zk, "guarded").await;
    assert_ne!(first_leader, 3, "broker 3 is the last preferred replica");
    leading(&zk, first_leader, "guarded").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, first_leader).await).await;
    for i in 0..5 {
        let response = wire
            .send(&produce_request("guarded", 1, format!("v{i}").as_bytes()), 8)
            .await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    }

    wait_until_else(
        Duration::from_secs(30),
        "broker 3 to log that it cannot authenticate to the leader",
        || {
            let log = wrong.stderr();
            async move {
                log.contains("replica fetcher cannot authenticate to the leader")
                    && log.contains("SASL SCRAM-SHA-512 authentication")
                    && log.contains("SASL_AUTHENTICATION_FAILED")
            }
        },
        || wrong.stderr(),
    )
    .await;
    wait_until_else(
        Duration::from_secs(30),
        "the ISR to shrink to the brokers that logged in",
        || async { isr(&zk, "guarded").await == [1, 2] },
        || wrong.stderr(),
    )
    .await;
    // The others replicate; broker 3 got nothing, by no other way.
    wait_until(Duration::from_secs(20), "brokers 1 and 2 to hold the records", || {
        let dirs: Vec<_> = good.iter().map(|b| b.log_dir.clone()).collect();
        async move { dirs.iter().all(|d| log_end(d, "guarded", 0) == 5) }
    })
    .await;
    assert_eq!(
        log_end(&wrong.log_dir, "guarded", 0),
        0,
        "broker 3 fetched data it may not"
    );
    let mut wrong = wrong;
    assert!(
        !wrong.has_exited(),
        "a failed login is retried, not fatal: {}",
        wrong.stderr()
    );
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_log_in_again_before_their_sasl_session_ends() {
    // Sessions of 2 s (KIP-368): a follower that kept using a connection past its session would
    // be cut off by the leader and see its fetch fail; kastle's brokers connect and log in anew
    // before that, so replication runs on undisturbed.
    let chroot = unique_chroot("ib-reauth");
    let zk = zookeeper().session(&chroot).await;
    let security = Security::new(InterBroker::SaslPlaintext);
    security.prepare(&zk).await;
    let extra = [
        ("connections.max.reauth.ms", "2000"),
        ("replica.fetch.wait.max.ms", "200"),
    ];
    let brokers: Vec<BrokerProcess> = (1..=3)
        .map(|id| BrokerProcess::start(&security.apply(spec(&chroot, id, &extra))))
        .collect();
    common::cluster::cluster_ready(&zk, 3).await;
    create_topic(&zk, "sessions", "[1,2,3]").await;
    let first_leader = leader(&zk, "sessions").await;
    leading(&zk, first_leader, "sessions").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, first_leader).await).await;
    // Three session lifetimes of acks=all writes.
    let until = std::time::Instant::now() + Duration::from_secs(6);
    let mut sent = 0;
    while std::time::Instant::now() < until {
        let response = wire
            .send(&produce_request("sessions", -1, format!("v{sent}").as_bytes()), 8)
            .await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
        sent += 1;
    }
    wait_until(Duration::from_secs(20), "every replica to hold every record", || {
        let dirs: Vec<_> = brokers.iter().map(|b| b.log_dir.clone()).collect();
        async move { dirs.iter().all(|d| log_end(d, "sessions", 0) == sent) }
    })
    .await;
    assert_eq!(isr(&zk, "sessions").await, [1, 2, 3]);
    // The leader logs a cut-off session only at debug; the follower sees its fetch fail.
    for b in &brokers {
        let log = b.stderr();
        assert!(!log.contains("replica fetch failed"), "{log}");
        assert!(!log.contains("cannot authenticate"), "{log}");
    }
    zk.close().await;
}

/// A broker whose inter-broker listener is `protocol` with `settings`, and no other security.
fn broker(test: &str, protocol: &str, settings: &[(&str, &str)]) -> BrokerProcess {
    let mut spec = BrokerSpec::new(1, &zookeeper().connect(&unique_chroot(test)))
        .with(
            "listener.security.protocol.map",
            &format!("PLAINTEXT:PLAINTEXT,INTERNAL:{protocol}"),
        )
        .with("inter.broker.listener.name", "INTERNAL");
    spec.listeners = "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0".to_string();
    BrokerProcess::start(&settings.iter().fold(spec, |s, (k, v)| s.with(k, v)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inter_broker_listener_without_a_truststore_or_a_login_stops_the_start_naming_the_key() {
    let pki = common::pki::Pki::new();
    let keystore = pki.p("peer.pem");
    let mut no_truststore = broker(
        "ib-no-truststore",
        "SSL",
        &[
            ("listener.name.internal.ssl.keystore.type", "PEM"),
            ("listener.name.internal.ssl.keystore.location", &keystore),
        ],
    );
    let status = no_truststore.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2), "{}", no_truststore.stderr());
    let log = no_truststore.stderr();
    assert!(
        log.contains("inter-broker listener \"INTERNAL\" (SSL)")
            && log.contains("listener.name.internal.ssl.truststore.location"),
        "{log}"
    );

    let mut no_login = broker(
        "ib-no-login",
        "SASL_PLAINTEXT",
        &[
            ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
            ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
        ],
    );
    let status = no_login.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.code(), Some(2), "{}", no_login.stderr());
    let log = no_login.stderr();
    assert!(
        log.contains("listener.name.internal.scram-sha-512.sasl.jaas.config") && log.contains("username"),
        "{log}"
    );

    // An unreadable truststore file is caught when the broker loads it, also naming the key.
    let missing = pki.p("no-such-ca.pem");
    let mut unreadable = broker(
        "ib-unreadable-truststore",
        "SSL",
        &[
            ("listener.name.internal.ssl.keystore.type", "PEM"),
            ("listener.name.internal.ssl.keystore.location", &keystore),
            ("listener.name.internal.ssl.truststore.type", "PEM"),
            ("listener.name.internal.ssl.truststore.location", &missing),
        ],
    );
    let status = unreadable.wait_exit(Duration::from_secs(30)).await;
    assert_ne!(status.code(), Some(0), "{}", unreadable.stderr());
    let log = unreadable.stderr();
    assert!(
        log.contains("listener.name.internal.ssl.truststore.location") && log.contains("no-such-ca.pem"),
        "{log}"
    );
}
