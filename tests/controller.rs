//! The controller against a real ZooKeeper and real broker processes: exactly one controller,
//! `/controller_epoch` +1 per election, failover after kill -9, topics created by any path
//! (auto-creation, an operator writing `/brokers/topics/<t>` with zkCli) get leaders with valid
//! state znodes, a dead leader's partitions move to ISR members, and with unclean election off a
//! partition whose whole ISR is dead stays offline.

mod common;

use std::time::Duration;

use common::cluster::{
    cluster_ready, controller_epoch, controller_of, create_topic_by_hand, scrape, start, start_with, state, SESSION_MS,
};
use common::{unique_chroot, wait_until, zkcli, zookeeper, BrokerProcess, BrokerSpec};
use kastle::protocol::error_codes as ec;
use kastle::zk::store::{CreateMode, ZkStore};
use kastle::zk::ZkSession;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_controller_is_elected_and_a_new_one_takes_over_after_kill_9() {
    let chroot = unique_chroot("ctrl-failover");
    let mut brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let first = controller_of(&zk).await.expect("controller");
    assert_eq!(controller_epoch(&zk).await, 1, "one election, one epoch");

    let index = brokers
        .iter()
        .position(|_| true)
        .map(|_| (first - 1) as usize)
        .expect("index");
    brokers[index].signal("KILL");
    brokers[index].wait_exit(Duration::from_secs(10)).await;
    wait_until(
        Duration::from_millis(SESSION_MS + 10_000),
        "a new controller",
        || async { controller_of(&zk).await.is_some_and(|c| c != first) },
    )
    .await;
    assert_eq!(controller_epoch(&zk).await, 2, "the epoch grows by one per election");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_written_by_hand_get_leaders_and_move_to_isr_members_when_the_leader_dies() {
    let chroot = unique_chroot("ctrl-topics");
    let brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;

    // Partition 0 led by 1 (ISR 1,2,3); partition 1 lives only on broker 2.
    create_topic_by_hand(&zk, "manual", r#"{"0":[1,2,3],"1":[2]}"#).await;
    wait_until(Duration::from_secs(20), "leaders for the hand-made topic", || async {
        state(&zk, "manual", 0).await.is_some() && state(&zk, "manual", 1).await.is_some()
    })
    .await;
    let p0 = state(&zk, "manual", 0).await.expect("state");
    assert_eq!((p0.leader.0, p0.leader_epoch.0), (1, 0));
    assert_eq!(p0.isr.iter().map(|b| b.0).collect::<Vec<_>>(), vec![1, 2, 3]);

    // The real zkCli sees the same state.
    let out = zkcli(
        &zookeeper().address(),
        &["get", &format!("{chroot}/brokers/topics/manual/partitions/0/state")],
    );
    assert!(out.contains(r#""leader":1"#), "{out}");

    brokers[0].signal("KILL"); // the leader of partition 0
    brokers[1].signal("KILL"); // the only replica of partition 1
    wait_until(
        Duration::from_millis(SESSION_MS + 15_000),
        "partition 0 to move to an ISR member",
        || async { state(&zk, "manual", 0).await.is_some_and(|s| s.leader.0 == 3) },
    )
    .await;
    let p0 = state(&zk, "manual", 0).await.expect("state");
    assert_eq!(
        p0.isr.iter().map(|b| b.0).collect::<Vec<_>>(),
        vec![3],
        "dead replicas leave the ISR"
    );
    assert!(p0.leader_epoch.0 >= 1);
    wait_until(
        Duration::from_secs(15),
        "partition 1 to go offline rather than elect outside its ISR",
        || async { state(&zk, "manual", 1).await.is_some_and(|s| s.leader.0 == -1) },
    )
    .await;
    let p1 = state(&zk, "manual", 1).await.expect("state");
    assert_eq!(
        p1.isr.iter().map(|b| b.0).collect::<Vec<_>>(),
        vec![2],
        "a one-member ISR is never emptied"
    );
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_produces_to_an_auto_created_topic_and_reads_it_back_through_any_broker() {
    let chroot = unique_chroot("ctrl-e2e");
    let brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    // Any broker's address bootstraps the client; the controller has told every broker the rest.
    let bootstrap = common::bootstrap_of(&zk, 2).await;
    let input: String = (0..1_000).map(|i| format!("k{i}:v{i}\n")).collect();
    let consumed = tokio::task::spawn_blocking({
        let input = input.clone();
        move || common::kcat_roundtrip(&bootstrap, "e2e", &input)
    })
    .await
    .expect("kcat");
    let out = (input, consumed);
    assert_eq!(out.1, out.0, "every record back, in order");
    let s = state(&zk, "e2e", 0)
        .await
        .expect("the controller wrote the state znode");
    assert!(s.leader.0 >= 1);
    drop(brokers);
    zk.close().await;
}

const CREATE_WITH_CLIENTS: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient, NewTopic as KpNewTopic
from kafka.errors import TopicAlreadyExistsError
addr = sys.argv[1]
a = AdminClient({"bootstrap.servers": addr})
fs = a.create_topics([NewTopic("ck-admin", num_partitions=3, replication_factor=2)], operation_timeout=20)
fs["ck-admin"].result(30)
dup = a.create_topics([NewTopic("ck-admin", num_partitions=1, replication_factor=1)])
try:
    dup["ck-admin"].result(30); raise SystemExit("duplicate accepted")
except Exception as e:
    assert "TOPIC_ALREADY_EXISTS" in str(e) or "already exists" in str(e), e
from confluent_kafka.admin import NewPartitions
a.create_partitions([NewPartitions("ck-admin", 5)], operation_timeout=20)["ck-admin"].result(30)
try:
    a.create_partitions([NewPartitions("ck-admin", 2)])["ck-admin"].result(30); raise SystemExit("shrink accepted")
except Exception as e:
    assert "INVALID_PARTITIONS" in str(e) or "partitions" in str(e).lower(), e
k = KafkaAdminClient(bootstrap_servers=addr)
k.create_topics([KpNewTopic("kp-admin", num_partitions=2, replication_factor=3)], timeout_ms=20000)
try:
    k.create_topics([KpNewTopic("kp-admin", num_partitions=2, replication_factor=3)], timeout_ms=20000)
    raise SystemExit("duplicate accepted")
except TopicAlreadyExistsError:
    pass
print("ok")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_clients_create_topics_through_the_controller() {
    let chroot = unique_chroot("ctrl-admin");
    let _brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let bootstrap = common::bootstrap_of(&zk, 1).await;
    let python = common::python();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .args(["-c", CREATE_WITH_CLIENTS, &bootstrap])
            .output()
            .expect("python")
    })
    .await
    .expect("python");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (topic, partitions, rf) in [("ck-admin", 5, 2), ("kp-admin", 2, 3)] {
        for p in 0..partitions {
            let s = state(&zk, topic, p).await.expect("state znode");
            assert_eq!(s.isr.len(), rf, "{topic}-{p}: every replica starts in the ISR");
        }
        let (data, _) = zk
            .get_data(&format!("/brokers/topics/{topic}"))
            .await
            .expect("assignment");
        let json: serde_json::Value = serde_json::from_slice(&data).expect("json");
        let leaders: std::collections::BTreeSet<i64> = (0..partitions)
            .map(|p| json["partitions"][p.to_string()][0].as_i64().expect("replica"))
            .collect();
        assert!(
            leaders.len() > 1 || partitions == 1,
            "{topic}: preferred leaders spread over brokers"
        );
    }
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_controller_loses_its_role_and_one_controller_remains_after_it_resumes() {
    let chroot = unique_chroot("ctrl-zombie");
    let brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let first = controller_of(&zk).await.expect("controller");
    let paused = &brokers[(first - 1) as usize];
    paused.signal("STOP");
    wait_until(
        Duration::from_millis(SESSION_MS + 15_000),
        "another controller while the first is paused",
        || async { controller_of(&zk).await.is_some_and(|c| c != first) },
    )
    .await;
    let second = controller_of(&zk).await.expect("controller");
    assert_eq!(controller_epoch(&zk).await, 2);
    paused.signal("CONT");
    // The zombie finds its session gone, resigns, and comes back as an ordinary broker.
    wait_until(Duration::from_secs(20), "the paused broker to re-register", || async {
        zk.exists(&format!("/brokers/ids/{first}"))
            .await
            .ok()
            .flatten()
            .is_some()
    })
    .await;
    create_topic_by_hand(&zk, "after-zombie", r#"{"0":[1,2,3]}"#).await;
    wait_until(
        Duration::from_secs(20),
        "the live controller to elect a leader",
        || async { state(&zk, "after-zombie", 0).await.is_some() },
    )
    .await;
    let s = state(&zk, "after-zombie", 0).await.expect("state");
    assert_eq!(
        s.controller_epoch.0, 2,
        "written by the current controller, not the zombie"
    );
    assert_eq!(controller_of(&zk).await, Some(second), "still exactly one controller");
    assert_eq!(controller_epoch(&zk).await, 2, "the zombie did not win a new election");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_reports_itself_on_the_prometheus_endpoint() {
    let chroot = unique_chroot("ctrl-metrics");
    let port = common::zookeeper::free_port();
    let addr = format!("127.0.0.1:{port}");
    let _broker = BrokerProcess::start(
        &BrokerSpec::new(1, &zookeeper().connect(&chroot))
            .session_timeout_ms(SESSION_MS)
            .with("metrics.listener", &addr),
    );
    wait_until(Duration::from_secs(20), "the active controller gauge", || {
        let body = scrape(&addr).unwrap_or_default();
        async move { body.contains("kafka_controller_kafkacontroller_activecontrollercount 1") }
    })
    .await;
    // Two partitions; the second's only replica (broker 9) does not exist, so it is offline.
    let zk = zookeeper().session(&chroot).await;
    create_topic_by_hand(&zk, "counted", r#"{"0":[1],"1":[9]}"#).await;
    wait_until(Duration::from_secs(20), "the cluster gauges", || {
        let body = scrape(&addr).unwrap_or_default();
        async move {
            [
                "kafka_controller_kafkacontroller_globaltopiccount 1",
                "kafka_controller_kafkacontroller_globalpartitioncount 2",
                "kafka_controller_kafkacontroller_offlinepartitionscount 1",
                "kafka_controller_kafkacontroller_activebrokercount 1",
            ]
            .iter()
            .all(|line| body.contains(line))
        }
    })
    .await;
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_after_a_failover_are_timed_and_unclean_ones_counted() {
    use kastle::controller::stats::{
        EVENT_QUEUE_SIZE, EVENT_QUEUE_TIME_MS, LEADER_ELECTION_TIME_MS, UNCLEAN_LEADER_ELECTIONS,
    };
    let chroot = unique_chroot("ctrl-election-metrics");
    let addrs: Vec<String> = (0..2)
        .map(|_| format!("127.0.0.1:{}", common::zookeeper::free_port()))
        .collect();
    let brokers: Vec<BrokerProcess> = [1, 2]
        .iter()
        .zip(&addrs)
        .map(|(id, addr)| {
            BrokerProcess::start(
                &BrokerSpec::new(*id, &zookeeper().connect(&chroot))
                    .session_timeout_ms(SESSION_MS)
                    .with("metrics.listener", addr)
                    .with("unclean.leader.election.enable", "true"),
            )
        })
        .collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    let first = controller_of(&zk).await.expect("controller");
    let other = 3 - first;
    let other_addr = addrs[(other - 1) as usize].clone();
    let election_count = format!("{LEADER_ELECTION_TIME_MS}_count");
    let queue_time_count = format!("{EVENT_QUEUE_TIME_MS}_count");
    // Kafka's MBeans exist from start-up, so the names are there before anything happened.
    wait_until(Duration::from_secs(20), "the controller metrics", || {
        let body = scrape(&other_addr).unwrap_or_default();
        let names = [
            &election_count,
            UNCLEAN_LEADER_ELECTIONS,
            EVENT_QUEUE_SIZE,
            &queue_time_count,
        ];
        async move { names.iter().all(|n| body.contains(*n)) }
    })
    .await;
    let before = scrape(&other_addr).expect("metrics");
    assert_eq!(common::cluster::sample(&before, &election_count), Some(0.0), "{before}");

    // Partition 0 has both brokers in its ISR; partition 1 only the first controller, so
    // replacing its leader is unclean. The other broker is paused until the first dies, or it
    // would catch up on partition 1 and its leader would take it into the ISR (then the
    // election is clean).
    brokers[(other - 1) as usize].signal("STOP");
    let state_p1 = format!(r#"{{"controller_epoch":1,"leader":{first},"version":1,"leader_epoch":0,"isr":[{first}]}}"#);
    let assignment = format!(r#"{{"version":1,"partitions":{{"0":[{first},{other}],"1":[{first},{other}]}}}}"#);
    zk.multi(vec![
        kastle::zk::store::Op::Create {
            path: "/brokers/topics/metered".into(),
            data: assignment.into_bytes(),
            mode: CreateMode::Persistent,
        },
        kastle::zk::store::Op::Create {
            path: "/brokers/topics/metered/partitions".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        kastle::zk::store::Op::Create {
            path: "/brokers/topics/metered/partitions/1".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        kastle::zk::store::Op::Create {
            path: "/brokers/topics/metered/partitions/1/state".into(),
            data: state_p1.into_bytes(),
            mode: CreateMode::Persistent,
        },
    ])
    .await
    .expect("topic and partition 1's state");
    wait_until(
        Duration::from_secs(20),
        "the first controller to elect partition 0",
        || async { state(&zk, "metered", 0).await.is_some_and(|s| s.leader.0 == first) },
    )
    .await;

    brokers[(first - 1) as usize].signal("KILL");
    brokers[(other - 1) as usize].signal("CONT");
    wait_until(
        Duration::from_millis(SESSION_MS + 15_000),
        "the other broker to take over and lead both partitions",
        || async {
            controller_of(&zk).await == Some(other)
                && state(&zk, "metered", 0).await.is_some_and(|s| s.leader.0 == other)
                && state(&zk, "metered", 1).await.is_some_and(|s| s.leader.0 == other)
        },
    )
    .await;
    assert_eq!(
        state(&zk, "metered", 1).await.expect("state").leader_recovery_state,
        Some(1),
        "an unclean leader starts RECOVERING"
    );
    wait_until(Duration::from_secs(10), "the election metrics to move", || {
        let body = scrape(&other_addr).unwrap_or_default();
        let (count, unclean) = (election_count.clone(), UNCLEAN_LEADER_ELECTIONS);
        async move {
            common::cluster::sample(&body, &count).is_some_and(|c| c > 0.0)
                && common::cluster::sample(&body, unclean) == Some(1.0)
        }
    })
    .await;
    let after = scrape(&other_addr).expect("metrics");
    assert!(
        after.contains(&format!("{LEADER_ELECTION_TIME_MS}{{quantile=\"0.99\"}}")),
        "the timer has Kafka's percentiles: {after}"
    );
    assert!(
        common::cluster::sample(&after, &queue_time_count).is_some_and(|c| c > 0.0),
        "events went through the queue: {after}"
    );
    assert_eq!(
        common::cluster::sample(&after, kastle::controller::state_changes::ILLEGAL_STATE_CHANGES),
        Some(0.0),
        "the partition state machine allowed every step of the failover: {after}"
    );
    assert_eq!(
        common::cluster::sample(
            &after,
            kastle::controller::replica_changes::ILLEGAL_REPLICA_STATE_CHANGES
        ),
        Some(0.0),
        "so did the replica state machine: {after}"
    );
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_moves_leaderships_away_before_the_broker_exits() {
    let chroot = unique_chroot("ctrl-shutdown");
    // A long session timeout: only a controlled shutdown moves leadership before the process ends.
    // A short replica lag: a leader that took the stopping broker back into an ISR (its last
    // fetch can arrive after the controller's shrink) drops it again soon, as Kafka's leader does.
    let mut brokers = start_with(&chroot, &[1, 2, 3], |spec| {
        spec.session_timeout_ms(30_000).with("replica.lag.time.max.ms", "4000")
    });
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    // Broker 3 leads partition 0 and follows in partition 1; partition 2 has it as sole replica.
    create_topic_by_hand(&zk, "rolling", r#"{"0":[3,1,2],"1":[1,3,2],"2":[3]}"#).await;
    wait_until(Duration::from_secs(20), "leaders", || async {
        state(&zk, "rolling", 0).await.is_some_and(|s| s.leader.0 == 3) && state(&zk, "rolling", 2).await.is_some()
    })
    .await;
    let before = state(&zk, "rolling", 0).await.expect("state");
    brokers[2].signal("TERM");
    let status = brokers[2].wait_exit(Duration::from_secs(30)).await;
    assert!(status.success(), "{}", brokers[2].stderr());
    assert!(
        brokers[2].stderr().contains("controlled shutdown succeeded"),
        "{}",
        brokers[2].stderr()
    );
    let p0 = state(&zk, "rolling", 0).await.expect("state");
    assert_eq!(p0.leader.0, 1, "leadership moved to the next ISR member");
    assert!(p0.leader_epoch.0 > before.leader_epoch.0);
    let p1 = state(&zk, "rolling", 1).await.expect("state");
    assert_eq!(p1.leader.0, 1);
    // It leaves the ISRs (a leader may take it back for the moment between the controller's
    // write and its fetchers stopping; its deregistration removes it for good).
    let logs = || {
        brokers
            .iter()
            .flat_map(|b| {
                let log = b.stderr();
                log.lines()
                    .filter(|l| {
                        ["ISR", "broker change", "written", "refreshed", "failed", "illegal"]
                            .iter()
                            .any(|k| l.contains(k))
                    })
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    common::wait_until_else(
        Duration::from_secs(20),
        "the stopped broker out of every ISR",
        || async {
            let mut out = true;
            for p in 0..2 {
                out &= state(&zk, "rolling", p)
                    .await
                    .is_some_and(|s| !s.isr.iter().any(|b| b.0 == 3));
            }
            out
        },
        logs,
    )
    .await;
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_topic_vanishes_everywhere_even_from_a_broker_that_was_down() {
    use kastle::controller::replica_changes::ILLEGAL_REPLICA_STATE_CHANGES;
    use kastle::controller::state_changes::ILLEGAL_STATE_CHANGES;
    let chroot = unique_chroot("ctrl-delete");
    let metrics: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", common::zookeeper::free_port()))
        .collect();
    let specs: Vec<BrokerSpec> = [1, 2, 3]
        .iter()
        .zip(&metrics)
        .map(|(id, addr)| {
            BrokerSpec::new(*id, &zookeeper().connect(&chroot))
                .session_timeout_ms(SESSION_MS)
                .with("metrics.listener", addr)
        })
        .collect();
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let controller = controller_of(&zk).await.expect("controller");
    create_topic_by_hand(&zk, "doomed", r#"{"0":[1,2,3],"1":[2,3,1]}"#).await;
    let dirs: Vec<std::path::PathBuf> = brokers.iter().map(|b| b.log_dir.clone()).collect();
    wait_until(Duration::from_secs(20), "partition dirs on every broker", || {
        let all = dirs
            .iter()
            .all(|d| d.join("doomed-0").exists() && d.join("doomed-1").exists());
        async move { all }
    })
    .await;

    // Take a non-controller broker down, then ask for the deletion the way old tools did.
    let down = if controller == 3 { 2 } else { 3 };
    let victim = brokers.remove(down - 1);
    victim.signal("KILL");
    wait_until(
        Duration::from_millis(SESSION_MS + 10_000),
        "the broker to be gone",
        || async {
            zk.exists(&format!("/brokers/ids/{down}"))
                .await
                .ok()
                .flatten()
                .is_none()
        },
    )
    .await;
    zk.create("/admin/delete_topics/doomed", &[], CreateMode::Persistent)
        .await
        .expect("queue deletion");
    assert!(
        zk.exists("/brokers/topics/doomed").await.expect("exists").is_some(),
        "deletion waits for the offline replica"
    );
    // As in Kafka, the live replicas are deleted meanwhile; the down broker's two wait as
    // ReplicaDeletionIneligible, and the topic's znodes stay.
    let controller_metrics = metrics[(controller - 1) as usize].clone();
    let live_dirs: Vec<std::path::PathBuf> = dirs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != down - 1)
        .map(|(_, d)| d.clone())
        .collect();
    wait_until(
        Duration::from_secs(20),
        "the live replicas deleted, the others waiting",
        || {
            let body = scrape(&controller_metrics).unwrap_or_default();
            let gone = live_dirs
                .iter()
                .all(|d| !d.join("doomed-0").exists() && !d.join("doomed-1").exists());
            async move {
                gone && [
                    "kafka_controller_kafkacontroller_topicstodeletecount 1",
                    "kafka_controller_kafkacontroller_replicastodeletecount 2",
                    "kafka_controller_kafkacontroller_topicsineligibletodeletecount 1",
                    "kafka_controller_kafkacontroller_replicasineligibletodeletecount 2",
                ]
                .iter()
                .all(|line| body.contains(line))
            }
        },
    )
    .await;
    assert!(
        zk.exists("/brokers/topics/doomed").await.expect("exists").is_some(),
        "the topic stays until every replica is deleted"
    );

    let restarted = victim.restart(&specs[down - 1]);
    wait_until(Duration::from_secs(30), "the topic's znodes to go", || async {
        zk.exists("/brokers/topics/doomed").await.ok().flatten().is_none()
            && zk.exists("/admin/delete_topics/doomed").await.ok().flatten().is_none()
            && zk.exists("/config/topics/doomed").await.ok().flatten().is_none()
    })
    .await;
    wait_until(Duration::from_secs(30), "partition dirs to go on every broker", || {
        let gone = dirs
            .iter()
            .all(|d| !d.join("doomed-0").exists() && !d.join("doomed-1").exists());
        async move { gone }
    })
    .await;
    let body = scrape(&controller_metrics).expect("metrics");
    let sample = |name: &str| common::cluster::sample(&body, name);
    assert_eq!(
        (
            sample("kafka_controller_kafkacontroller_topicstodeletecount"),
            sample("kafka_controller_kafkacontroller_replicastodeletecount"),
        ),
        (Some(0.0), Some(0.0)),
        "{body}"
    );
    assert_eq!(
        (sample(ILLEGAL_REPLICA_STATE_CHANGES), sample(ILLEGAL_STATE_CHANGES)),
        (Some(0.0), Some(0.0)),
        "both state machines allowed every step of the deletion: {body}"
    );
    drop(restarted);
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_clients_delete_topics_through_the_controller() {
    let chroot = unique_chroot("ctrl-admin-delete");
    let brokers = start(&chroot, &[1, 2]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    create_topic_by_hand(&zk, "short-lived", r#"{"0":[1,2]}"#).await;
    wait_until(Duration::from_secs(20), "a leader", || async {
        state(&zk, "short-lived", 0).await.is_some()
    })
    .await;
    let bootstrap = common::bootstrap_of(&zk, 1).await;
    let python = common::python();
    let script = r#"
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
a.delete_topics(["short-lived"], operation_timeout=20)["short-lived"].result(30)
try:
    a.delete_topics(["never-was"], operation_timeout=5)["never-was"].result(30); raise SystemExit("unknown topic deleted")
except Exception as e:
    assert "UNKNOWN_TOPIC" in str(e), e
print("ok")
"#;
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .args(["-c", script, &bootstrap])
            .output()
            .expect("python")
    })
    .await
    .expect("python");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The response comes once the brokers' metadata dropped the topic; the controller removes
    // the znodes right after (as Kafka's completeDeleteTopic does), so wait for that.
    wait_until(Duration::from_secs(20), "the topic's znode to go", || async {
        zk.exists("/brokers/topics/short-lived").await.ok().flatten().is_none()
    })
    .await;
    let dirs: Vec<std::path::PathBuf> = brokers.iter().map(|b| b.log_dir.join("short-lived-0")).collect();
    wait_until(Duration::from_secs(20), "partition dirs to go", || {
        let gone = dirs.iter().all(|d| !d.exists());
        async move { gone }
    })
    .await;
    zk.close().await;
}

/// A topic whose partition 0 is led by `leader` although broker 1 is its preferred replica, as
/// after a failover (state znode written together with the topic, in one multi).
async fn topic_led_by_non_preferred(zk: &ZkSession, topic: &str, leader: i32) {
    use kastle::zk::store::Op;
    let state = format!(r#"{{"controller_epoch":1,"leader":{leader},"version":1,"leader_epoch":3,"isr":[1,2,3]}}"#);
    let ops = vec![
        Op::Create {
            path: format!("/brokers/topics/{topic}"),
            data: br#"{"version":1,"partitions":{"0":[1,2,3]}}"#.to_vec(),
            mode: CreateMode::Persistent,
        },
        Op::Create {
            path: format!("/brokers/topics/{topic}/partitions"),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        Op::Create {
            path: format!("/brokers/topics/{topic}/partitions/0"),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        Op::Create {
            path: format!("/brokers/topics/{topic}/partitions/0/state"),
            data: state.into_bytes(),
            mode: CreateMode::Persistent,
        },
    ];
    zk.multi(ops).await.expect("write topic and state");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preferred_elections_by_znode_and_by_api_restore_the_first_assigned_replica() {
    use common::wire::Wire;
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let chroot = unique_chroot("ctrl-preferred");
    let _brokers = start_with(&chroot, &[1, 2, 3], |spec| {
        spec.with("auto.leader.rebalance.enable", "false")
    });
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;

    // The legacy tools' way: /admin/preferred_replica_election.
    topic_led_by_non_preferred(&zk, "by-znode", 2).await;
    zk.create(
        "/admin/preferred_replica_election",
        br#"{"version":1,"partitions":[{"topic":"by-znode","partition":0}]}"#,
        CreateMode::Persistent,
    )
    .await
    .expect("request election");
    wait_until(
        Duration::from_secs(20),
        "broker 1 to lead again and the request to be removed",
        || async {
            state(&zk, "by-znode", 0).await.is_some_and(|s| s.leader.0 == 1)
                && zk
                    .exists("/admin/preferred_replica_election")
                    .await
                    .ok()
                    .flatten()
                    .is_none()
        },
    )
    .await;
    assert_eq!(
        state(&zk, "by-znode", 0).await.expect("state").leader_epoch.0,
        4,
        "one election, one epoch"
    );

    // The ElectLeaders API (kafka-leader-election --election-type PREFERRED), sent to the controller.
    topic_led_by_non_preferred(&zk, "by-api", 3).await;
    let controller = controller_of(&zk).await.expect("controller");
    let mut wire = Wire::connect(&common::bootstrap_of(&zk, controller).await).await;
    let request = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(10_000)
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(TopicName(StrBytes::from_static_str("by-api")))
            .with_partitions(vec![0])]));
    wait_until(Duration::from_secs(20), "the controller to know the topic", || async {
        state(&zk, "by-api", 0).await.is_some()
    })
    .await;
    let mut response: ElectLeadersResponse = wire.send(&request, 2).await;
    for _ in 0..50 {
        if response
            .replica_election_results
            .first()
            .is_some_and(|r| r.partition_result[0].error_code != ec::UNKNOWN_TOPIC_OR_PARTITION)
        {
            break;
        }
        // The topic may not have reached the controller's context yet: ask again.
        response = wire.send(&request, 2).await;
    }
    assert_eq!(response.error_code, 0);
    assert_eq!(response.replica_election_results[0].partition_result[0].error_code, 0);
    assert_eq!(state(&zk, "by-api", 0).await.expect("state").leader.0, 1);
    let again: ElectLeadersResponse = wire.send(&request, 2).await;
    assert_eq!(
        again.replica_election_results[0].partition_result[0].error_code,
        ec::ELECTION_NOT_NEEDED,
        "ELECTION_NOT_NEEDED"
    );
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_rebalance_moves_leadership_back_to_the_preferred_replica() {
    let chroot = unique_chroot("ctrl-rebalance");
    let _brokers = start_with(&chroot, &[1, 2, 3], |spec| {
        spec.with("leader.imbalance.check.interval.seconds", "1")
    });
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    topic_led_by_non_preferred(&zk, "drifted", 3).await;
    wait_until(
        Duration::from_secs(20),
        "the imbalance check to restore broker 1",
        || async { state(&zk, "drifted", 0).await.is_some_and(|s| s.leader.0 == 1) },
    )
    .await;
    zk.close().await;
}
