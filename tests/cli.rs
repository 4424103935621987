//! The operator subcommands against real ZooKeeper and three broker processes: `kastle
//! topics --describe` and `kastle consumer-groups --describe` print what Kafka 3.9's tools
//! print for the same cluster state (golden output built from the cluster's own metadata),
//! `--reset-offsets` to the earliest offset and to a datetime moves a kafka-python consumer's
//! committed offsets (checked with OffsetFetch through confluent-kafka's admin client), a
//! preferred leader election moves leadership back, and bad input exits 1 with Kafka's message.

mod common;

use std::process::Command;
use std::time::Duration;

use common::groups::Member;
use common::{cluster, unique_chroot, wait_until, zookeeper, BrokerSpec};

/// Runs `kastle <args>`: (exit code, stdout, stderr).
fn kastle(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kastle"))
        .args(args)
        .env("KASTLE_LOG", "warn")
        .output()
        .expect("run kastle");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = kastle(args);
    assert_eq!(code, 0, "kastle {args:?}: {out}{err}");
    out
}

/// Produces, to each of `partitions`, `old` records stamped two hours ago and `new` ones
/// stamped one hour ago; prints the datetime between them (UTC, Kafka's format).
const PRODUCE_STAMPED: &str = r#"
import sys, time, datetime
from confluent_kafka import Producer
bootstrap, topic, partitions, old, new = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
now = int(time.time() * 1000)
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False})
failed = []
def done(err, msg):
    if err is not None:
        failed.append(err)
for part in range(partitions):
    for i in range(old):
        p.produce(topic, b"old", partition=part, timestamp=now - 7200000 + i, on_delivery=done)
    for i in range(new):
        p.produce(topic, b"new", partition=part, timestamp=now - 3600000 + i, on_delivery=done)
left = p.flush(60)
if failed or left:
    sys.exit("not acknowledged: %d failed, %d left" % (len(failed), left))
cut = datetime.datetime.fromtimestamp((now - 5400000) / 1000, datetime.timezone.utc)
print(cut.strftime("%Y-%m-%dT%H:%M:%S.") + "%03d" % (cut.microsecond // 1000))
"#;

/// The group's committed offsets through confluent-kafka's admin client (OffsetFetch).
const COMMITTED: &str = r#"
import sys
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
r = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(sys.argv[2])])[sys.argv[2]].result(30)
print(",".join("%d=%d" % (tp.partition, tp.offset) for tp in sorted(r.topic_partitions, key=lambda t: t.partition)))
"#;

fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new(common::python())
        .args(["-c", script])
        .args(args)
        .output()
        .expect("python");
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn committed(bootstrap: &str, group: &str) -> String {
    python(COMMITTED, &[bootstrap, group])
}

/// `kafka-topics.sh --describe` for `topic` as Kafka 3.9 prints it, from the cluster's
/// Metadata; `configs` is the Configs column.
fn expected_describe(metadata: &kafka_protocol::messages::MetadataResponse, topic: &str, configs: &str) -> String {
    use base64::Engine;
    let t = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
        .expect("topic in metadata");
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t.topic_id.as_bytes());
    let join =
        |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0.to_string()).collect::<Vec<_>>().join(",");
    let mut partitions: Vec<_> = t.partitions.iter().collect();
    partitions.sort_by_key(|p| p.partition_index);
    let mut out = format!(
        "Topic: {topic}\tTopicId: {id}\tPartitionCount: {}\tReplicationFactor: {}\tConfigs: {configs}\n",
        partitions.len(),
        partitions[0].replica_nodes.len()
    );
    for p in partitions {
        out.push_str(&format!(
            "\tTopic: {topic}\tPartition: {}\tLeader: {}\tReplicas: {}\tIsr: {}\tElr: N/A\tLastKnownElr: N/A\n",
            p.partition_index,
            p.leader_id.0,
            join(&p.replica_nodes),
            join(&p.isr_nodes)
        ));
    }
    out
}

/// `kafka-consumer-groups.sh --describe` of an empty group: rows without a consumer.
fn expected_group(group: &str, topic: &str, rows: &[(i32, i64, i64)]) -> String {
    let line = |c: [&str; 9]| {
        format!(
            "\n{:<15} {:<15} {:<10} {:<15} {:<15} {:<15} {:<15} {:<15} {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]
        )
    };
    let mut out = line([
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]);
    for (p, current, end) in rows {
        out.push_str(&line([
            group,
            topic,
            &p.to_string(),
            &current.to_string(),
            &end.to_string(),
            &(end - current).to_string(),
            "-",
            "-",
            "-",
        ]));
    }
    out.push('\n');
    out
}

fn expected_reset(group: &str, topic: &str, rows: &[(i32, i64)]) -> String {
    let mut out = format!(
        "\n{:<30} {:<30} {:<10} {:<15}",
        "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"
    );
    for (p, o) in rows {
        out.push_str(&format!("\n{group:<30} {topic:<30} {p:<10} {o:<15}"));
    }
    out.push('\n');
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_tools_print_what_kafkas_tools_print() {
    let chroot = unique_chroot("cli");
    let mut brokers = cluster::start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 3).await;
    let bootstrap = common::bootstrap_of(&zk, 1).await;
    let b = bootstrap.as_str();

    // Every tool has --help, exit 0.
    for tool in [
        "topics",
        "configs",
        "consumer-groups",
        "delete-records",
        "leader-election",
    ] {
        let out = ok(&[tool, "--help"]);
        assert!(out.contains("--bootstrap-server"), "{tool}: {out}");
    }

    // --create, --list.
    let out = ok(&[
        "topics",
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--config",
        "max.message.bytes=2000000",
    ]);
    assert_eq!(out, "Created topic orders.\n");
    wait_until(Duration::from_secs(20), "orders has leaders and a full ISR", || async {
        let m = cluster::metadata(&zk, 1).await;
        (0..3).all(|p| cluster::partition_in(&m, "orders", p).is_some_and(|(l, _, isr)| l >= 0 && isr.len() == 3))
    })
    .await;
    let list = ok(&["topics", "--bootstrap-server", b, "--list", "--exclude-internal"]);
    assert_eq!(list, "orders\n");

    // --describe: Kafka's lines. Configs come from DescribeConfigs; a broker without it gets
    // an empty column and a warning.
    let (code, out, err) = kastle(&["topics", "--bootstrap-server", b, "--describe", "--topic", "orders"]);
    assert_eq!(code, 0, "{out}{err}");
    let metadata = cluster::metadata(&zk, 1).await;
    if err.contains("does not serve DescribeConfigs") {
        assert_eq!(out, expected_describe(&metadata, "orders", ""));
    } else {
        let configs = out
            .lines()
            .next()
            .and_then(|l| l.split("Configs: ").nth(1))
            .unwrap_or_default()
            .to_owned();
        assert!(configs.split(',').any(|c| c == "max.message.bytes=2000000"), "{out}");
        assert_eq!(out, expected_describe(&metadata, "orders", &configs));
    }
    // No partition is under-replicated or unavailable.
    assert_eq!(
        ok(&[
            "topics",
            "--bootstrap-server",
            b,
            "--describe",
            "--under-replicated-partitions"
        ]),
        ""
    );
    assert_eq!(
        ok(&[
            "topics",
            "--bootstrap-server",
            b,
            "--describe",
            "--unavailable-partitions"
        ]),
        ""
    );

    // A kafka-python consumer commits what it read; once it left, the group is empty.
    let cutoff = python(PRODUCE_STAMPED, &[b, "orders", "3", "4", "3"]);
    let member = Member::start("kafka-python", b, "orders", "g1", 6000);
    wait_until(Duration::from_secs(60), "the consumer read 21 records", || {
        let n = member.records().len();
        async move { n == 21 }
    })
    .await;
    wait_until(Duration::from_secs(30), "offsets 7 committed", || async {
        committed(b, "g1") == "0=7,1=7,2=7"
    })
    .await;
    // While the member is in the group: its id, host and client id on every row, the
    // CONSUMER-ID column as wide as the id (Kafka pads to the longest value, at least 15).
    let members = ok(&[
        "consumer-groups",
        "--bootstrap-server",
        b,
        "--describe",
        "--group",
        "g1",
        "--members",
    ]);
    let row = members.lines().nth(2).unwrap_or_default().to_owned();
    let member_id = row.split_whitespace().nth(1).unwrap_or_default().to_owned();
    assert!(member_id.starts_with("kp-member-"), "{members}");
    let w = member_id.len();
    assert_eq!(
        members,
        format!(
            "\n{:<15} {:<w$} {:<15} {:<15} {:<15} \n{:<15} {:<w$} {:<15} {:<15} {:<15} \n",
            "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "g1", member_id, "/127.0.0.1", "kp-member", "3"
        )
    );
    let line = |c: [&str; 9]| {
        format!(
            "\n{:<15} {:<15} {:<10} {:<15} {:<15} {:<15} {:<w$} {:<15} {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]
        )
    };
    let mut expected = line([
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]);
    for p in ["0", "1", "2"] {
        expected.push_str(&line([
            "g1",
            "orders",
            p,
            "7",
            "7",
            "0",
            &member_id,
            "/127.0.0.1",
            "kp-member",
        ]));
    }
    expected.push('\n');
    assert_eq!(
        ok(&[
            "consumer-groups",
            "--bootstrap-server",
            b,
            "--describe",
            "--group",
            "g1"
        ]),
        expected
    );
    let state = ok(&[
        "consumer-groups",
        "--bootstrap-server",
        b,
        "--describe",
        "--group",
        "g1",
        "--state",
    ]);
    assert!(state.contains(" range                Stable          1\n"), "{state}");
    member.stop().await;
    let expected = expected_group("g1", "orders", &[(0, 7, 7), (1, 7, 7), (2, 7, 7)]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        // Polled like wait_until, keeping the last output for the failure message.
        let (code, out, err) = kastle(&[
            "consumer-groups",
            "--bootstrap-server",
            b,
            "--describe",
            "--group",
            "g1",
        ]);
        if code == 0 && out == expected && err.contains("Consumer group 'g1' has no active members.") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expected\n{expected}\ngot ({code})\n{out}\nstderr: {err}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ok(&["consumer-groups", "--bootstrap-server", b, "--list"]), "g1\n");

    // --to-earliest: a dry run changes nothing; --execute commits offset 0.
    let reset = |to: &[&str], mode: &str| {
        let mut args = vec![
            "consumer-groups",
            "--bootstrap-server",
            b,
            "--reset-offsets",
            "--group",
            "g1",
            "--topic",
            "orders",
        ];
        args.extend_from_slice(to);
        args.push(mode);
        ok(&args)
    };
    assert_eq!(
        reset(&["--to-earliest"], "--dry-run"),
        expected_reset("g1", "orders", &[(0, 0), (1, 0), (2, 0)])
    );
    assert_eq!(committed(b, "g1"), "0=7,1=7,2=7");
    assert_eq!(
        reset(&["--to-earliest"], "--execute"),
        expected_reset("g1", "orders", &[(0, 0), (1, 0), (2, 0)])
    );
    assert_eq!(committed(b, "g1"), "0=0,1=0,2=0");

    // --to-datetime between the old and the new records: the first new record of each partition.
    assert_eq!(
        reset(&["--to-datetime", &cutoff], "--execute"),
        expected_reset("g1", "orders", &[(0, 4), (1, 4), (2, 4)])
    );
    assert_eq!(committed(b, "g1"), "0=4,1=4,2=4");
    let (_, out, _) = kastle(&[
        "consumer-groups",
        "--bootstrap-server",
        b,
        "--describe",
        "--group",
        "g1",
    ]);
    assert_eq!(out, expected_group("g1", "orders", &[(0, 4, 7), (1, 4, 7), (2, 4, 7)]));

    // A preferred election: broker 2 leads "elect" until it stops, then comes back as a follower.
    ok(&[
        "topics",
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        "elect",
        "--replica-assignment",
        "2:1:3",
    ]);
    wait_until(
        Duration::from_secs(20),
        "broker 2 leads elect-0 with a full ISR",
        || async {
            cluster::partition_in(&cluster::metadata(&zk, 1).await, "elect", 0)
                .is_some_and(|(l, _, isr)| l == 2 && isr.len() == 3)
        },
    )
    .await;
    let two = brokers.remove(1);
    two.signal("TERM");
    let mut two = two;
    two.wait_exit(Duration::from_secs(30)).await;
    wait_until(Duration::from_secs(30), "another leader for elect-0", || async {
        cluster::partition_in(&cluster::metadata(&zk, 1).await, "elect", 0).is_some_and(|(l, _, _)| l >= 0 && l != 2)
    })
    .await;
    let spec = BrokerSpec::new(2, &zookeeper().connect(&chroot)).session_timeout_ms(cluster::SESSION_MS);
    let two = two.restart(&spec);
    wait_until(
        Duration::from_secs(30),
        "broker 2 back in the ISR of elect-0",
        || async {
            cluster::partition_in(&cluster::metadata(&zk, 1).await, "elect", 0)
                .is_some_and(|(_, _, isr)| isr.len() == 3)
        },
    )
    .await;
    let elect = [
        "leader-election",
        "--bootstrap-server",
        b,
        "--election-type",
        "preferred",
        "--topic",
        "elect",
        "--partition",
        "0",
    ];
    // The controller learns the ISR change through /isr_change_notification a little after the
    // leader's metadata shows it; until then the answer is PREFERRED_LEADER_NOT_AVAILABLE.
    wait_until(Duration::from_secs(20), "a preferred election of elect-0", || {
        let (code, out, _) = kastle(&elect);
        async move { code == 0 && out == "Successfully completed leader election (PREFERRED) for partitions elect-0\n" }
    })
    .await;
    wait_until(Duration::from_secs(20), "broker 2 leads elect-0 again", || async {
        cluster::partition_in(&cluster::metadata(&zk, 1).await, "elect", 0).is_some_and(|(l, _, _)| l == 2)
    })
    .await;
    assert_eq!(ok(&elect), "Valid replica already elected for partitions elect-0\n");
    brokers.insert(1, two);

    // --alter adds partitions, --delete removes the topic.
    assert_eq!(
        ok(&[
            "topics",
            "--bootstrap-server",
            b,
            "--alter",
            "--topic",
            "elect",
            "--partitions",
            "2"
        ]),
        ""
    );
    wait_until(Duration::from_secs(20), "elect has 2 partitions", || async {
        cluster::partition_in(&cluster::metadata(&zk, 1).await, "elect", 1).is_some()
    })
    .await;
    assert_eq!(
        ok(&["topics", "--bootstrap-server", b, "--delete", "--topic", "elect"]),
        ""
    );
    wait_until(Duration::from_secs(20), "elect deleted", || async {
        ok(&["topics", "--bootstrap-server", b, "--list", "--exclude-internal"]) == "orders\n"
    })
    .await;

    // Bad input: exit 1 and Kafka's message.
    let (code, _, err) = kastle(&["topics", "--bootstrap-server", b, "--describe", "--topic", "nope"]);
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "Error while executing topic command : Topic 'nope' does not exist as expected"
    );
    let (code, _, err) = kastle(&["topics", "--bootstrap-server", b, "--create", "--partitions", "1"]);
    assert_eq!((code, err.trim()), (1, "Missing required argument \"[topic]\""));
    let (code, _, err) = kastle(&["consumer-groups", "--describe", "--group", "g1"]);
    assert_eq!(
        (code, err.trim()),
        (1, "Missing required argument \"[bootstrap-server]\"")
    );
    let (code, _, err) = kastle(&[
        "leader-election",
        "--bootstrap-server",
        b,
        "--election-type",
        "preferred",
    ]);
    assert_eq!(
        (code, err.trim()),
        (
            1,
            "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file"
        )
    );
    let (code, _, err) = kastle(&[
        "consumer-groups",
        "--bootstrap-server",
        b,
        "--describe",
        "--group",
        "nobody",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("Consumer group 'nobody' does not exist."), "{err}");
    let (code, _, _) = kastle(&["topics", "--bootstrap-server", b, "--bogus"]);
    assert_eq!(code, 1);
    drop(brokers);
}
