//! `kastle reassign-partitions` against real ZooKeeper and four broker processes: a plan from
//! `--generate`, `--execute` moving a partition from brokers 1,2 onto 3,4 (and raising another
//! one's replication factor), `--verify` polled until complete, the result checked in Metadata,
//! the topic znode and the data. Refusals as Kafka's tool gives them (an unknown broker, a cancel
//! with nothing in progress) and on the wire as the controller answers them
//! (INVALID_REPLICA_ASSIGNMENT with the topic znode untouched, NO_REASSIGNMENT_IN_PROGRESS,
//! NOT_CONTROLLER elsewhere); log-dir moves and their throttle are refused, never ignored
//! (replication throttles are tests/reassign_throttle.rs').

mod common;

use std::time::Duration;

use common::reassign::{kastle, ok, reassign};
use common::{bootstrap_of, cluster, unique_chroot, wait_until_else, zookeeper, BrokerProcess};
use kafka_protocol::messages::alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

use common::wire::Wire;

fn topic_name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.to_owned()))
}

fn logs(brokers: &[BrokerProcess]) -> String {
    brokers
        .iter()
        .enumerate()
        .map(|(i, b)| format!("--- broker {} stderr ---\n{}", i + 1, b.stderr()))
        .collect()
}

/// AlterPartitionReassignments of one partition (`None`: cancel), sent on the wire to broker `to`.
async fn alter_on_wire(
    zk: &ZkSession,
    to: i32,
    topic: &str,
    partition: i32,
    replicas: Option<&[i32]>,
) -> AlterPartitionReassignmentsResponse {
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(partition)
                .with_replicas(replicas.map(|r| r.iter().map(|b| BrokerId(*b)).collect()))])]);
    Wire::connect(&bootstrap_of(zk, to).await).await.send(&request, 0).await
}

/// The one partition answer of an AlterPartitionReassignments response: (code, message).
fn only_answer(r: &AlterPartitionReassignmentsResponse) -> (i16, Option<String>) {
    assert_eq!(r.error_code, ec::NONE, "{r:?}");
    let p = &r.responses[0].partitions[0];
    (p.error_code, p.error_message.as_ref().map(|m| m.to_string()))
}

async fn topic_znode(zk: &ZkSession, topic: &str) -> (serde_json::Value, i64) {
    let (data, stat) = zk
        .get_data(&format!("/brokers/topics/{topic}"))
        .await
        .expect("topic znode");
    (serde_json::from_slice(&data).expect("json"), i64::from(stat.version.0))
}

fn json_file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write json");
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reassign_partitions_moves_replicas_and_refuses_what_it_cannot_do() {
    let chroot = unique_chroot("reassign_cli");
    let brokers = cluster::start(&chroot, &[1, 2, 3, 4]);
    let zk = zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 4).await;
    let bootstrap = bootstrap_of(&zk, 1).await;
    let b = bootstrap.as_str();
    let files = tempfile::tempdir().expect("tempdir");
    let topic = format!("moving-{}", uuid::Uuid::new_v4().simple());
    let t = topic.as_str();

    // Two partitions on brokers 1 and 2, with data.
    let (code, out, err) = kastle(&[
        "topics",
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        t,
        "--replica-assignment",
        "1:2,2:1",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    wait_until_else(
        Duration::from_secs(30),
        "both partitions led with a full ISR",
        || async {
            let m = cluster::metadata(&zk, 1).await;
            (0..2).all(|p| cluster::partition_in(&m, t, p).is_some_and(|(l, _, isr)| l >= 0 && isr.len() == 2))
        },
        || logs(&brokers),
    )
    .await;
    let input: String = (0..20).map(|i| format!("k{i}:v{i}\n")).collect();
    let (bs, ts, inp) = (bootstrap.clone(), topic.clone(), input.clone());
    let consumed = tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, &inp))
        .await
        .expect("kcat");
    assert_eq!(consumed.lines().count(), 20, "{consumed}");

    assert_eq!(ok(b, &["--list"]), "No partition reassignments found.\n");

    // --generate: the current assignment and a proposal on 3 and 4 only, same replication factor.
    let topics_file = json_file(
        files.path(),
        "topics.json",
        &format!(r#"{{"version":1,"topics":[{{"topic":"{t}"}}]}}"#),
    );
    let out = ok(
        b,
        &[
            "--generate",
            "--topics-to-move-json-file",
            &topics_file,
            "--broker-list",
            "3,4",
        ],
    );
    let current_json = format!(
        r#"{{"version":1,"partitions":[{{"topic":"{t}","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}},{{"topic":"{t}","partition":1,"replicas":[2,1],"log_dirs":["any","any"]}}]}}"#
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[0], "Current partition replica assignment");
    assert_eq!(lines[1], current_json);
    assert_eq!(lines[3], "Proposed partition reassignment configuration");
    let proposed: serde_json::Value = serde_json::from_str(lines[4]).expect("proposed json");
    for p in proposed["partitions"].as_array().expect("partitions") {
        let mut replicas: Vec<i64> = p["replicas"]
            .as_array()
            .expect("replicas")
            .iter()
            .filter_map(|r| r.as_i64())
            .collect();
        replicas.sort();
        assert_eq!(replicas, vec![3, 4], "{out}");
    }

    // (d) Log-dir moves and their throttle are refused before anything is sent.
    let plan = format!(
        r#"{{"version":1,"partitions":[{{"topic":"{t}","partition":0,"replicas":[3,4],"log_dirs":["any","any"]}},{{"topic":"{t}","partition":1,"replicas":[2,3,4]}}]}}"#
    );
    let plan_file = json_file(files.path(), "plan.json", &plan);
    let before = topic_znode(&zk, t).await;
    {
        let (code, out, err) = reassign(
            b,
            &[
                "--execute",
                "--reassignment-json-file",
                &plan_file,
                "--replica-alter-log-dirs-throttle",
                "1000",
            ],
        );
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            err.contains("Moves between log directories are not supported by this kastle build"),
            "{err}"
        );
        assert_eq!(out, "");
    }
    let dirs_file = json_file(
        files.path(),
        "dirs.json",
        &format!(r#"{{"partitions":[{{"topic":"{t}","partition":0,"replicas":[3,4],"log_dirs":["/data/a","any"]}}]}}"#),
    );
    let (code, out, err) = reassign(b, &["--execute", "--reassignment-json-file", &dirs_file]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("log directories is not supported by this kastle build"),
        "{err}"
    );
    assert_eq!(topic_znode(&zk, t).await, before, "nothing was reassigned");

    // (b) A plan naming broker 99: Kafka's tool refuses it before sending ("Unknown broker
    // id"); the controller, asked on the wire, answers INVALID_REPLICA_ASSIGNMENT, and the
    // topic znode stays as it was.
    let bad_file = json_file(
        files.path(),
        "bad.json",
        &format!(r#"{{"version":1,"partitions":[{{"topic":"{t}","partition":0,"replicas":[1,99]}}]}}"#),
    );
    let before = topic_znode(&zk, t).await;
    let (code, out, err) = reassign(b, &["--execute", "--reassignment-json-file", &bad_file]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (1, "", "Error: Unknown broker id 99\n")
    );
    let controller = cluster::controller_of(&zk).await.expect("a controller");
    let r = alter_on_wire(&zk, controller, t, 0, Some(&[1, 99])).await;
    assert_eq!(
        only_answer(&r),
        (
            ec::INVALID_REPLICA_ASSIGNMENT,
            Some(
                "Replica assignment has brokers that are not alive. Replica list: [99], live broker list: [1, 2, 3, 4]"
                    .to_owned()
            )
        )
    );
    let r = alter_on_wire(&zk, controller, t, 0, Some(&[3, 3])).await;
    assert_eq!(only_answer(&r).0, ec::INVALID_REPLICA_ASSIGNMENT);
    let r = alter_on_wire(&zk, controller, "no-such-topic", 0, Some(&[1])).await;
    assert_eq!(
        only_answer(&r),
        (
            ec::UNKNOWN_TOPIC_OR_PARTITION,
            Some("The partition does not exist.".to_owned())
        )
    );
    assert_eq!(topic_znode(&zk, t).await, before, "refused reassignments write nothing");
    let other = if controller == 1 { 2 } else { 1 };
    let r = alter_on_wire(&zk, other, t, 0, Some(&[1, 2])).await;
    assert_eq!(r.error_code, ec::NOT_CONTROLLER, "{r:?}");

    // (c) Cancelling a partition that is not being reassigned: the tool finds nothing active
    // (and, as Kafka's, clears the throttles on every live broker and the plan's topic); the
    // controller answers NO_REASSIGNMENT_IN_PROGRESS.
    let out = ok(b, &["--cancel", "--reassignment-json-file", &plan_file]);
    assert_eq!(
        out,
        format!(
            "None of the specified partition reassignments are active.\nNone of the specified partition moves are active.\n\
             Clearing broker-level throttles on brokers 1,2,3,4\nClearing topic-level throttles on topic {t}\n"
        )
    );
    let r = alter_on_wire(&zk, controller, t, 0, None).await;
    assert_eq!(
        only_answer(&r),
        (
            ec::NO_REASSIGNMENT_IN_PROGRESS,
            Some("No partition reassignment is in progress.".to_owned())
        )
    );
    let listing = Wire::connect(&bootstrap_of(&zk, controller).await)
        .await
        .send(
            &ListPartitionReassignmentsRequest::default().with_topics(Some(vec![
                ListPartitionReassignmentsTopics::default()
                    .with_name(topic_name(t))
                    .with_partition_indexes(vec![0, 1]),
            ])),
            0,
        )
        .await;
    assert_eq!((listing.error_code, listing.topics.len()), (ec::NONE, 0), "{listing:?}");
    assert_eq!(topic_znode(&zk, t).await, before);

    // (a) --execute: partition 0 from 1,2 onto 3,4; partition 1 from RF 2 to RF 3.
    let out = ok(b, &["--execute", "--reassignment-json-file", &plan_file]);
    assert_eq!(
        out,
        format!(
            "Current partition replica assignment\n\n{current_json}\n\n\
             Save this to use as the --reassignment-json-file option during rollback\n\
             Successfully started partition reassignments for {t}-0,{t}-1\n"
        )
    );
    let done = format!(
        "Status of partition reassignment:\nReassignment of partition {t}-0 is completed.\nReassignment of partition {t}-1 is completed.\n\n\
         Clearing broker-level throttles on brokers 1,2,3,4\nClearing topic-level throttles on topic {t}\n"
    );
    let start = std::time::Instant::now();
    loop {
        let (code, out, err) = reassign(b, &["--verify", "--reassignment-json-file", &plan_file]);
        assert_eq!(code, 0, "--verify exits 0 in progress or not: {out}{err}");
        if out == done {
            break;
        }
        assert!(out.starts_with("Status of partition reassignment:\n"), "{out}");
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the reassignment did not complete in 60 s; last --verify:\n{out}\n--list:\n{}\n{}",
            ok(b, &["--list"]),
            logs(&brokers)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_until_else(
        Duration::from_secs(30),
        "Metadata shows the new replicas in sync, led from them",
        || async {
            let m = cluster::metadata(&zk, 2).await;
            let p0 = cluster::partition_in(&m, t, 0);
            let p1 = cluster::partition_in(&m, t, 1);
            p0.is_some_and(|(l, r, isr)| {
                r == vec![3, 4] && (l == 3 || l == 4) && isr.iter().all(|b| *b == 3 || *b == 4)
            }) && p1.is_some_and(|(l, r, isr)| r == vec![2, 3, 4] && l >= 2 && isr.len() == 3)
        },
        || logs(&brokers),
    )
    .await;
    let (znode, _) = topic_znode(&zk, t).await;
    assert_eq!(znode["partitions"]["0"], serde_json::json!([3, 4]), "{znode}");
    assert_eq!(znode["partitions"]["1"], serde_json::json!([2, 3, 4]), "{znode}");
    for field in ["adding_replicas", "removing_replicas"] {
        let empty = znode
            .get(field)
            .is_none_or(|v| v.as_object().is_some_and(|o| o.is_empty()));
        assert!(empty, "{field} left in {znode}");
    }
    assert!(
        zk.get_data("/admin/reassign_partitions").await.is_err(),
        "no ZK-driven reassignment"
    );
    assert_eq!(ok(b, &["--list"]), "No partition reassignments found.\n");
    // The data moved with the replicas: 20 records before, 20 more now.
    let (bs, ts, inp) = (bootstrap.clone(), topic.clone(), input.clone());
    let consumed = tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, &inp))
        .await
        .expect("kcat");
    assert_eq!(consumed.lines().count(), 40, "{consumed}");

    drop(brokers);
}
