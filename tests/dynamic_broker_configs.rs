//! Dynamic broker keys beyond the log defaults, against a real ZooKeeper and broker: a
//! cluster-wide `max.connections.per.ip` lowered with IncrementalAlterConfigs on `<default>`
//! refuses the next connection from that address while the open ones stay, a key kastle
//! only stores logs that it is not applied, and a cluster-wide
//! `unclean.leader.election.enable` reaches the controller's offline election live; a raised
//! `num.replica.fetchers` re-hashes the followers onto more fetcher tasks with replication
//! intact, and changed `log.cleaner.*` thread settings restart the cleaner, which then compacts.

mod common;

use std::time::Duration;

use common::cluster::cluster_ready;
use common::replicas::{create_topic, isr, leader};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, wait_until_else, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::{ApiVersionsRequest, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;

/// IncrementalAlterConfigs SET of `pairs` on the broker entity `name` ("" is `<default>`).
fn set_broker(name: &str, pairs: &[(&str, &str)]) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
        .with_resource_type(4)
        .with_resource_name(StrBytes::from_string(name.to_string()))
        .with_configs(
            pairs
                .iter()
                .map(|(k, v)| {
                    AlterableConfig::default()
                        .with_name(StrBytes::from_string(k.to_string()))
                        .with_config_operation(0)
                        .with_value(Some(StrBytes::from_string(v.to_string())))
                })
                .collect(),
        )])
}

/// Whether a new connection gets ApiVersions answered (a refused one is closed unanswered).
async fn answered(addr: &str) -> bool {
    let Some(mut wire) = Wire::try_connect(addr, Duration::from_secs(5)).await else {
        return false;
    };
    wire.try_send(&ApiVersionsRequest::default(), 2, Duration::from_secs(5))
        .await
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lowered_max_connections_per_ip_refuses_new_connections_live() {
    common::init_logging();
    let chroot = unique_chroot("dyn_conns");
    let broker = BrokerProcess::start(&BrokerSpec::new(1, &zookeeper().connect(&chroot)).session_timeout_ms(3_000));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    let addr = bootstrap_of(&zk, 1).await;
    // From 127.0.0.1: this admin connection, a second one, and the controller's own channel.
    let mut admin = Wire::connect(&addr).await;
    let _second = Wire::connect(&addr).await;
    assert!(answered(&addr).await, "no limit yet: another connection is served");

    let response: IncrementalAlterConfigsResponse = admin
        .send(
            &set_broker("", &[("max.connections.per.ip", "2"), ("background.threads", "4")]),
            1,
        )
        .await;
    assert_eq!(response.responses[0].error_code, ec::NONE);
    wait_until(
        Duration::from_secs(30),
        "the broker refuses another connection",
        || async { !answered(&addr).await },
    )
    .await;
    // The connections already open stay open.
    let still: Option<IncrementalAlterConfigsResponse> = admin
        .try_send(
            &set_broker("", &[("max.connections.per.ip", "10")]),
            1,
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(still.map(|r| r.responses[0].error_code), Some(ec::NONE));
    wait_until(
        Duration::from_secs(30),
        "raised again: another connection is served",
        || async { answered(&addr).await },
    )
    .await;
    let stderr = broker.stderr();
    assert!(
        stderr.contains("stored, not applied by kastle: background.threads"),
        "a stored-only key is logged"
    );
    assert!(
        !stderr.contains("stored, not applied by kastle: max.connections.per.ip"),
        "an applied key is not"
    );
}

/// With the static default off, `<default>` altered to allow unclean election lets the
/// controller elect a replica outside the ISR once the only in-sync one is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_takes_unclean_leader_election_from_the_live_broker_default() {
    common::init_logging();
    let chroot = unique_chroot("dyn_unclean_default");
    let specs: Vec<BrokerSpec> = (1..=2)
        .map(|id| BrokerSpec::new(id, &zookeeper().connect(&chroot)).session_timeout_ms(3_000))
        .collect();
    let mut first = Some(BrokerProcess::start(&specs[0]));
    let second = BrokerProcess::start(&specs[1]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    create_topic(&zk, "risky", "[1,2]").await;
    wait_until(Duration::from_secs(30), "ISR of two", || async {
        isr(&zk, "risky").await.len() == 2
    })
    .await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
    let response: IncrementalAlterConfigsResponse = wire
        .send(&set_broker("", &[("unclean.leader.election.enable", "true")]), 1)
        .await;
    assert_eq!(response.responses[0].error_code, ec::NONE);

    // Broker 2 goes, then the leader: the only in-sync replica is down.
    second.signal("KILL");
    wait_until(Duration::from_secs(30), "ISR of broker 1 alone", || async {
        isr(&zk, "risky").await == [1] && leader(&zk, "risky").await == 1
    })
    .await;
    first.take();
    let second = second.restart(&specs[1]);
    wait_until_else(
        Duration::from_secs(30),
        "broker 2 elected uncleanly",
        || async { leader(&zk, "risky").await == 2 },
        || second.stderr(),
    )
    .await;
}

/// `num.replica.fetchers` raised on `<default>` re-hashes the followers' partitions onto three
/// fetcher tasks per leader (logged), acks=all produce keeps being acknowledged across the
/// change, and every replica ends with the leader's batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn num_replica_fetchers_resizes_the_follower_fetcher_pool_live() {
    use common::cluster::create_topic_by_hand;
    use common::replicas::{batch_crcs, log_end, produce_request, spec};
    use kafka_protocol::messages::ProduceResponse;

    common::init_logging();
    let chroot = unique_chroot("dyn_fetchers");
    let brokers: Vec<BrokerProcess> = (1..=3)
        .map(|id| BrokerProcess::start(&spec(&chroot, id, &[])))
        .collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    // Six partitions, all led by broker 1: each follower fetches six partitions from one leader.
    let topic = "fanned";
    let parts = 6;
    let assignment: Vec<String> = (0..parts).map(|p| format!(r#""{p}":[1,2,3]"#)).collect();
    create_topic_by_hand(&zk, topic, &format!("{{{}}}", assignment.join(","))).await;
    let addr = bootstrap_of(&zk, 1).await;
    let produce_all = |round: i32| {
        (0..parts).map(move |p| {
            let mut request = produce_request(topic, -1, format!("r{round}-p{p}").as_bytes());
            request.topic_data[0].partition_data[0].index = p;
            request
        })
    };
    let mut acked = 0;
    wait_until(Duration::from_secs(30), "acks=all produce to every partition", || {
        let requests: Vec<_> = produce_all(0).collect();
        let addr = addr.clone();
        async move {
            let mut wire = Wire::connect(&addr).await;
            for r in &requests {
                let response: ProduceResponse = wire.send(r, 7).await;
                if response.responses[0].partition_responses[0].error_code != ec::NONE {
                    return false;
                }
            }
            true
        }
    })
    .await;
    acked += 1;

    let mut wire = Wire::connect(&addr).await;
    let response: IncrementalAlterConfigsResponse =
        wire.send(&set_broker("", &[("num.replica.fetchers", "3")]), 1).await;
    assert_eq!(response.responses[0].error_code, ec::NONE);
    for b in &brokers[1..] {
        wait_until_else(
            Duration::from_secs(30),
            "the follower runs three fetcher tasks for its leader",
            || async {
                b.stderr().lines().any(|l| {
                    l.contains("resized the replica fetcher pool") && l.contains("to=3") && l.contains("fetchers=3")
                })
            },
            || b.stderr(),
        )
        .await;
    }
    for round in 1..=3 {
        for r in produce_all(round) {
            let response: ProduceResponse = wire.send(&r, 7).await;
            assert_eq!(
                response.responses[0].partition_responses[0].error_code,
                ec::NONE,
                "acks=all produce after the resize"
            );
        }
        acked += 1;
    }
    for p in 0..parts {
        wait_until(Duration::from_secs(30), "every replica caught up", || async {
            brokers.iter().all(|b| log_end(&b.log_dir, topic, p) >= acked)
        })
        .await;
        let first = batch_crcs(&brokers[0].log_dir, topic, p);
        for b in &brokers[1..] {
            assert_eq!(batch_crcs(&b.log_dir, topic, p), first, "partition {p} diverged");
        }
    }
    assert!(
        !brokers[1]
            .stderr()
            .contains("stored, not applied by kastle: num.replica.fetchers"),
        "an applied key is not logged as stored"
    );
}

/// A cleaner that backs off for ten minutes never gets to a log filled after it started;
/// `log.cleaner.backoff.ms` and `log.cleaner.threads` changed on `<default>` restart its threads
/// with the new settings (logged) and they compact the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_cleaner_settings_restart_the_cleaner_threads_live() {
    use common::replicas::{create_topic, produce_request, stored_batches};
    use kafka_protocol::messages::ProduceResponse;
    use kastle::protocol::test_support::build_batch;

    common::init_logging();
    let chroot = unique_chroot("dyn_cleaner");
    let spec = BrokerSpec::new(1, &zookeeper().connect(&chroot))
        .session_timeout_ms(3_000)
        .with("log.cleanup.policy", "compact")
        .with("log.segment.bytes", "1024")
        .with("log.cleaner.backoff.ms", "600000");
    let broker = BrokerProcess::start(&spec);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    create_topic(&zk, "squeezed", "[1]").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
    // 200 updates of 4 keys over many 1 KiB segments.
    for i in 0..200 {
        let key = format!("k{}", i % 4);
        let value = format!("value-{i:04}");
        let mut request = produce_request("squeezed", 1, b"");
        request.topic_data[0].partition_data[0].records =
            Some(build_batch(0, -1, &[(Some(key.as_bytes()), Some(value.as_bytes()))], 1_000 + i).into());
        let response: ProduceResponse = wire.send(&request, 7).await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, ec::NONE);
    }
    let records = |dir: &std::path::Path| -> i64 {
        stored_batches(dir, "squeezed", 0)
            .iter()
            .map(|h| i64::from(h.record_count))
            .sum()
    };
    assert_eq!(records(&broker.log_dir), 200, "the backed-off cleaner has not run");

    let response: IncrementalAlterConfigsResponse = wire
        .send(
            &set_broker("", &[("log.cleaner.backoff.ms", "100"), ("log.cleaner.threads", "2")]),
            1,
        )
        .await;
    assert_eq!(response.responses[0].error_code, ec::NONE);
    wait_until_else(
        Duration::from_secs(30),
        "the cleaner restarted with two threads",
        || async {
            broker
                .stderr()
                .lines()
                .any(|l| l.contains("reconfigured the log cleaner") && l.contains("threads=2"))
        },
        || broker.stderr(),
    )
    .await;
    let dir = broker.log_dir.clone();
    wait_until_else(
        Duration::from_secs(30),
        "the reconfigured cleaner compacts the log",
        || {
            let dir = dir.clone();
            async move { records(&dir) < 100 }
        },
        || format!("{} records left", records(&broker.log_dir)),
    )
    .await;
    assert!(!broker
        .stderr()
        .contains("stored, not applied by kastle: log.cleaner.threads"));
}
