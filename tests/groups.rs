//! Consumer groups end to end: three broker processes on a real ZooKeeper, `__consumer_offsets`
//! created on first use, and unmodified clients (kafka-python 3.x, confluent-kafka, kcat, the
//! kafka-python admin CLI) as members and operators.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use common::cluster::{cluster_ready, create_topic_by_hand, start_with, state};
use common::groups::{produce, Member};
use common::{bootstrap_of, unique_chroot, wait_until, wait_until_else, zookeeper, BrokerProcess, BrokerSpec};
use kastle::coordinator::group::{partition_for, OFFSETS_TOPIC};

const SIX: &str = r#"{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2],"3":[1,3,2],"4":[2,1,3],"5":[3,2,1]}"#;

fn group_settings(spec: BrokerSpec) -> BrokerSpec {
    spec.with("offsets.topic.num.partitions", "6")
        .with("offsets.topic.replication.factor", "3")
        .with("min.insync.replicas", "2")
        .with("group.initial.rebalance.delay.ms", "0")
        .with("group.min.session.timeout.ms", "1000")
}

struct Cluster {
    brokers: Vec<BrokerProcess>,
    zk: kastle::zk::ZkSession,
    bootstrap: String,
    /// Each broker's Prometheus endpoint.
    metrics: Vec<String>,
}

/// The sum of a metric over the three brokers (each coordinates its own groups).
fn metric_sum(c: &Cluster, name: &str) -> f64 {
    c.metrics
        .iter()
        .filter_map(|addr| common::cluster::scrape(addr))
        .filter_map(|body| common::cluster::sample(&body, name))
        .sum()
}

async fn cluster(test: &str) -> (Vec<BrokerProcess>, kastle::zk::ZkSession, String) {
    let c = cluster_with_metrics(test).await;
    (c.brokers, c.zk, c.bootstrap)
}

async fn cluster_with_metrics(test: &str) -> Cluster {
    common::init_logging();
    let chroot = unique_chroot(test);
    let metrics: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", common::zookeeper::free_port()))
        .collect();
    let brokers = start_with(&chroot, &[1, 2, 3], |spec| {
        let addr = metrics[(spec.id - 1) as usize].clone();
        group_settings(spec).with("metrics.listener", &addr)
    });
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    create_topic_by_hand(&zk, "orders", SIX).await;
    wait_until(Duration::from_secs(20), "orders has leaders", || async {
        let mut all = true;
        for p in 0..6 {
            all &= state(&zk, "orders", p).await.is_some();
        }
        all
    })
    .await;
    let bootstrap = bootstrap_of(&zk, 1).await;
    Cluster {
        brokers,
        zk,
        bootstrap,
        metrics,
    }
}

fn values(records: &[(i32, i64, String)]) -> Vec<usize> {
    records.iter().map(|(_, _, v)| v.parse().expect("value")).collect()
}

fn all_partitions(members: &[&Member]) -> Option<BTreeSet<i32>> {
    let mut seen = BTreeSet::new();
    for m in members {
        for p in m.assignment()? {
            if !seen.insert(p) {
                return None;
            }
        }
    }
    Some(seen)
}

async fn wait_for_split(members: &[&Member], what: &str) {
    let want: BTreeSet<i32> = (0..6).collect();
    wait_until_else(
        Duration::from_secs(60),
        what,
        || async {
            all_partitions(members).as_ref() == Some(&want)
                && members.iter().all(|m| !m.assignment().unwrap_or_default().is_empty())
        },
        || outputs(members),
    )
    .await;
}

/// What each member printed, for a timeout's diagnosis.
fn outputs(members: &[&Member]) -> String {
    members
        .iter()
        .map(|m| format!("{}: {:?}", m.name, m.output()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn wait_for_count(members: &[&Member], n: usize, what: &str) {
    wait_until_else(
        Duration::from_secs(60),
        what,
        || async { members.iter().map(|m| m.records().len()).sum::<usize>() >= n },
        || outputs(members),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_and_confluent_members_split_rebalance_and_resume_from_commits() {
    let (_brokers, zk, bootstrap) = cluster("grp-split").await;
    produce(&bootstrap, "orders", 0, 300, 6);
    let a = Member::start("kafka-python", &bootstrap, "orders", "split", 6_000);
    wait_for_split(&[&a], "kafka-python alone owns all six partitions").await;
    let b = Member::start("confluent", &bootstrap, "orders", "split", 6_000);
    // A member joining rebalances: each ends up with a share.
    wait_for_split(&[&a, &b], "the partitions split between both members").await;
    produce(&bootstrap, "orders", 300, 300, 6);
    wait_for_count(&[&a, &b], 600, "600 records consumed").await;
    // B leaves: A takes everything back.
    let mut consumed = b.stop().await;
    wait_for_split(&[&a], "kafka-python owns all six again after the other left").await;
    produce(&bootstrap, "orders", 600, 200, 6);
    wait_until_else(
        Duration::from_secs(60),
        "the rest consumed",
        || async {
            values(&a.records())
                .iter()
                .chain(values(&consumed).iter())
                .collect::<BTreeSet<_>>()
                .len()
                == 800
        },
        || format!("{:?}", a.output()),
    )
    .await;
    consumed.extend(a.stop().await);
    // The group restarts and resumes from what it committed: only new records come.
    produce(&bootstrap, "orders", 800, 100, 6);
    let again = Member::start("confluent", &bootstrap, "orders", "split", 6_000);
    wait_for_count(&[&again], 100, "the restarted group's records").await;
    consumed.extend(again.stop().await);
    let mut got = values(&consumed);
    got.sort_unstable();
    assert_eq!(got, (0..900).collect::<Vec<_>>(), "every record exactly once");
    // The group's offsets partition is the one Kafka would pick.
    let p = partition_for("split", 6);
    assert!(state(&zk, OFFSETS_TOPIC, p).await.is_some());
    zk.close().await;
}

fn admin(bootstrap: &str, args: &[&str]) -> String {
    let out = Command::new(common::python())
        .args(["-m", "kafka.admin", "-b", bootstrap, "--format", "json"])
        .args(args)
        .output()
        .expect("kafka.admin");
    assert!(
        out.status.success(),
        "kafka.admin {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_consumes_as_a_group_and_the_admin_cli_describes_resets_and_deletes_it() {
    let c = cluster_with_metrics("grp-admin").await;
    let (zk, bootstrap) = (&c.zk, c.bootstrap.clone());
    produce(&bootstrap, "orders", 0, 60, 6);
    // kcat's balanced consumer (-G) reads everything and commits; -e ends at the end.
    let out = Command::new("kcat")
        .args([
            "-b",
            &bootstrap,
            "-G",
            "kc",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%s\n",
            "orders",
        ])
        .output()
        .expect("kcat");
    assert!(out.status.success(), "kcat: {}", String::from_utf8_lossy(&out.stderr));
    let mut got: Vec<usize> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().expect("value"))
        .collect();
    got.sort_unstable();
    assert_eq!(got, (0..60).collect::<Vec<_>>());
    // Committed: lag 0 everywhere once kcat is gone; it left, so the group is Empty.
    let listed = admin(&bootstrap, &["groups", "list"]);
    assert!(listed.contains("\"kc\""), "{listed}");
    let offsets = admin(&bootstrap, &["groups", "list-offsets", "-g", "kc"]);
    let parsed: serde_json::Value = serde_json::from_str(&offsets).expect("json");
    let mut total = 0;
    for p in 0..6 {
        let entry = &parsed["orders"][p.to_string()];
        assert_eq!(entry["lag"], 0, "{offsets}");
        total += entry["offset"].as_i64().expect("offset");
    }
    assert_eq!(total, 60);
    // A live member with its assignment shows in describe.
    let m = Member::start("kafka-python", &bootstrap, "orders", "kc", 6_000);
    wait_for_split(&[&m], "the member owns everything").await;
    let described = admin(&bootstrap, &["groups", "describe", "-g", "kc"]);
    assert!(described.contains("Stable"), "{described}");
    // The coordinator's GroupMetadataManager gauges count it.
    wait_until(Duration::from_secs(20), "the group gauges", || async {
        metric_sum(&c, "kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 1.0
            && metric_sum(&c, "kafka_coordinator_group_groupmetadatamanager_numoffsets") >= 6.0
    })
    .await;
    assert!(described.contains("kp-member"), "{described}");
    assert!(
        described.contains("orders"),
        "the assignment names the topic: {described}"
    );
    // Deleting a group with members is refused.
    let refused = admin(&bootstrap, &["groups", "delete", "-g", "kc"]);
    assert!(refused.contains("NonEmptyGroup"), "{refused}");
    m.stop().await;
    // Reset to the beginning (kafka-python 3.0.12's `reset-offsets` fails in the client while
    // encoding its OffsetFetch v8, so the offsets are set explicitly), check the lag, delete.
    let mut reset = vec!["groups", "alter-offsets", "-g", "kc"];
    let specs: Vec<String> = (0..6).map(|p| format!("orders:{p}:0")).collect();
    for s in &specs {
        reset.extend(["-o", s.as_str()]);
    }
    let altered = admin(&bootstrap, &reset);
    assert_eq!(altered.matches("NoError").count(), 6, "{altered}");
    let offsets: serde_json::Value =
        serde_json::from_str(&admin(&bootstrap, &["groups", "list-offsets", "-g", "kc"])).expect("json");
    let lag: i64 = (0..6)
        .map(|p| offsets["orders"][p.to_string()]["lag"].as_i64().expect("lag"))
        .sum();
    assert_eq!(lag, 60, "{offsets}");
    let deleted = admin(&bootstrap, &["groups", "delete", "-g", "kc"]);
    assert!(deleted.contains("OK"), "{deleted}");
    let listed = admin(&bootstrap, &["groups", "list"]);
    assert!(!listed.contains("\"kc\""), "{listed}");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_stops_heartbeating_is_removed_and_its_partitions_reassigned() {
    let (_brokers, zk, bootstrap) = cluster("grp-session").await;
    let a = Member::start("confluent", &bootstrap, "orders", "hb", 3_000);
    let b = Member::start("kafka-python", &bootstrap, "orders", "hb", 3_000);
    wait_for_split(&[&a, &b], "both members assigned").await;
    b.signal("STOP");
    let started = std::time::Instant::now();
    wait_for_split(&[&a], "the silent member's partitions reassigned").await;
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "not before the session timeout"
    );
    let described = admin(&bootstrap, &["groups", "describe", "-g", "hb"]);
    assert!(!described.contains("kp-member"), "{described}");
    b.signal("CONT");
    a.stop().await;
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_survives_kill_9_of_its_coordinator_with_no_gap() {
    let (brokers, zk, bootstrap) = cluster("grp-failover").await;
    let p = partition_for("fo", 6);
    produce(&bootstrap, "orders", 0, 3_000, 6);
    let m = Member::start("confluent", &bootstrap, "orders", "fo", 6_000);
    wait_for_count(&[&m], 500, "some records consumed").await;
    let coordinator = state(&zk, OFFSETS_TOPIC, p).await.expect("offsets partition").leader.0;
    brokers[(coordinator - 1) as usize].signal("KILL");
    wait_until(Duration::from_secs(30), "a new coordinator", || async {
        state(&zk, OFFSETS_TOPIC, p)
            .await
            .is_some_and(|s| s.leader.0 != coordinator && s.leader.0 > 0)
    })
    .await;
    wait_until_else(
        Duration::from_secs(90),
        "everything consumed after the failover",
        || async { values(&m.records()).into_iter().collect::<BTreeSet<_>>().len() == 3_000 },
        || format!("{:?}", m.output().iter().rev().take(20).collect::<Vec<_>>()),
    )
    .await;
    let records = m.stop().await;
    // No gap: per partition, offsets run without holes (a redelivery after the failover is
    // allowed: at-least-once, from the last committed offset).
    let mut by_partition: BTreeMap<i32, BTreeSet<i64>> = BTreeMap::new();
    for (p, o, _) in &records {
        by_partition.entry(*p).or_default().insert(*o);
    }
    for (p, offsets) in &by_partition {
        let (first, last) = (*offsets.first().expect("first"), *offsets.last().expect("last"));
        assert_eq!(first, 0, "partition {p}");
        assert_eq!(offsets.len() as i64, last - first + 1, "partition {p} has a gap");
    }
    // The group committed the end of every partition, readable from the new coordinator.
    let survivor = (1..=3).find(|id| *id != coordinator).expect("survivor");
    let other = bootstrap_of(&zk, survivor).await;
    let offsets: serde_json::Value =
        serde_json::from_str(&admin(&other, &["groups", "list-offsets", "-g", "fo"])).expect("json");
    let lag: i64 = (0..6)
        .map(|p| offsets["orders"][p.to_string()]["lag"].as_i64().expect("lag"))
        .sum();
    assert_eq!(lag, 0, "{offsets}");
    zk.close().await;
}

/// How many rebalances the coordinators of `group` started (their "preparing to rebalance" lines).
fn rebalances_started(brokers: &[BrokerProcess], group: &str) -> usize {
    let tag = format!("group={group} ");
    brokers
        .iter()
        .map(|b| {
            b.stderr()
                .lines()
                .filter(|l| l.contains("preparing to rebalance") && l.contains(&tag))
                .count()
        })
        .sum()
}

/// KIP-345: a static member killed (no LeaveGroup) and restarted with the same
/// `group.instance.id` inside its session takes its old place: same generation, its old
/// partitions, and no rebalance for anyone; first a follower, then the leader (the first to join)
/// restarts. Kafka decides this by the group's protocol alone, not by the new process's
/// subscription metadata, and tells a restarted leader (JoinGroup < v9) the old leader id so it
/// does not assign.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_member_restarted_within_its_session_gets_its_partitions_back_without_a_rebalance() {
    let (brokers, zk, bootstrap) = cluster("grp-static").await;
    let start = |instance: &str| Member::start_with("confluent", &bootstrap, "orders", "static", 10_000, instance, "");
    let a = start("s1");
    wait_for_split(&[&a], "the first static member owns everything").await;
    let b = start("s2");
    wait_for_split(&[&a, &b], "both static members assigned").await;
    let rebalances = rebalances_started(&brokers, "static");
    assert_eq!(rebalances, 2, "one rebalance per member that joined");

    // kill -9: no LeaveGroup; the same instance comes back well inside its session.
    let (a_revoked, b_partitions) = (a.revocations(), b.assignment().expect("b's assignment"));
    b.signal("KILL");
    drop(b);
    let b2 = start("s2");
    wait_until_else(
        Duration::from_secs(30),
        "the restarted follower has its old partitions",
        || async { b2.assignment().as_ref() == Some(&b_partitions) },
        || outputs(&[&b2, &a]),
    )
    .await;
    assert_eq!(
        a.revocations(),
        a_revoked,
        "the leader saw no rebalance: {:?}",
        a.output()
    );
    assert_eq!(
        rebalances_started(&brokers, "static"),
        rebalances,
        "no rebalance started"
    );

    // Now the leader restarts.
    let (b_revoked, a_partitions) = (b2.revocations(), a.assignment().expect("a's assignment"));
    a.signal("KILL");
    drop(a);
    let a2 = start("s1");
    wait_until_else(
        Duration::from_secs(30),
        "the restarted leader has its old partitions",
        || async { a2.assignment().as_ref() == Some(&a_partitions) },
        || outputs(&[&a2, &b2]),
    )
    .await;
    assert_eq!(
        b2.revocations(),
        b_revoked,
        "the follower saw no rebalance: {:?}",
        b2.output()
    );
    assert_eq!(
        rebalances_started(&brokers, "static"),
        rebalances,
        "no rebalance started"
    );

    let described = admin(&bootstrap, &["groups", "describe", "-g", "static"]);
    assert!(described.contains("s1") && described.contains("s2"), "{described}");
    produce(&bootstrap, "orders", 0, 120, 6);
    wait_for_count(&[&a2, &b2], 120, "both consume").await;
    a2.stop().await;
    b2.stop().await;
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_members_rebalance_incrementally_and_consume_everything_once() {
    let (_brokers, zk, bootstrap) = cluster("grp-coop").await;
    produce(&bootstrap, "orders", 0, 300, 6);
    let a = Member::start_with(
        "confluent",
        &bootstrap,
        "orders",
        "coop",
        6_000,
        "",
        "cooperative-sticky",
    );
    wait_for_split(&[&a], "the first member owns everything").await;
    let b = Member::start_with(
        "confluent",
        &bootstrap,
        "orders",
        "coop",
        6_000,
        "",
        "cooperative-sticky",
    );
    wait_for_split(&[&a, &b], "partitions moved to the new member").await;
    produce(&bootstrap, "orders", 300, 300, 6);
    wait_until_else(
        Duration::from_secs(60),
        "all 600 consumed",
        || async {
            let mut all = values(&a.records());
            all.extend(values(&b.records()));
            all.into_iter().collect::<BTreeSet<_>>().len() == 600
        },
        || outputs(&[&a, &b]),
    )
    .await;
    let mut got = values(&b.stop().await);
    wait_for_split(&[&a], "the remaining member took the partitions back").await;
    got.extend(values(&a.stop().await));
    got.sort_unstable();
    assert_eq!(got, (0..600).collect::<Vec<_>>(), "each record once");
    zk.close().await;
}
