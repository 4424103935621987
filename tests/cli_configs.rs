//! `kastle configs` and `kastle delete-records` against real ZooKeeper and a broker: the
//! describe output is Kafka 3.9's `kafka-configs.sh` output for the same state (golden
//! strings), alters go through IncrementalAlterConfigs, DeleteRecords moves the low watermark.
//! Needs a broker serving DescribeConfigs, IncrementalAlterConfigs and DeleteRecords.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{cluster, unique_chroot, wait_until, zookeeper};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_and_delete_records_print_what_kafkas_tools_print() {
    let chroot = unique_chroot("cli-configs");
    let _brokers = cluster::start(&chroot, &[1]);
    let zk = zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 1).await;
    let bootstrap = common::bootstrap_of(&zk, 1).await;
    let b = bootstrap.as_str();
    ok(&[
        "topics",
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        "cfg",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    ]);
    wait_until(Duration::from_secs(20), "cfg has a leader", || async {
        cluster::partition_in(&cluster::metadata(&zk, 1).await, "cfg", 0).is_some_and(|(l, _, _)| l == 1)
    })
    .await;

    // Topic configs: set two (one a bracketed list), describe, delete one.
    let topic = [
        "--bootstrap-server",
        b,
        "--entity-type",
        "topics",
        "--entity-name",
        "cfg",
    ];
    let alter = |extra: &[&str]| {
        let mut args = vec!["configs", "--alter"];
        args.extend_from_slice(&topic);
        args.extend_from_slice(extra);
        kastle(&args)
    };
    let (code, out, err) = alter(&["--add-config", "retention.ms=5000,cleanup.policy=[delete,compact]"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "Completed updating config for topic cfg.\n"),
        "{err}"
    );
    let describe = || ok(&[&["configs", "--describe"][..], &topic].concat());
    assert_eq!(
        describe(),
        "Dynamic configs for topic cfg are:\n\
         \x20 cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact, DEFAULT_CONFIG:log.cleanup.policy=delete}\n\
         \x20 retention.ms=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000}\n"
    );
    // kafka-topics.sh lists the non-default entries in its Configs column.
    let out = ok(&["topics", "--bootstrap-server", b, "--describe", "--topic", "cfg"]);
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.ends_with("\tConfigs: cleanup.policy=delete,compact,retention.ms=5000")
            || first.ends_with("\tConfigs: retention.ms=5000,cleanup.policy=delete,compact"),
        "{out}"
    );
    let (code, out, _) = alter(&["--delete-config", "retention.ms"]);
    assert_eq!((code, out.as_str()), (0, "Completed updating config for topic cfg.\n"));
    assert_eq!(
        describe(),
        "Dynamic configs for topic cfg are:\n\
         \x20 cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
    );
    // Deleting a key that is not set is refused before anything is sent.
    let (code, _, err) = alter(&["--delete-config", "retention.ms"]);
    assert_eq!((code, err.trim()), (1, "Invalid config(s): retention.ms"));

    // Broker configs: a cluster-wide default, and one broker's (no dynamic entries).
    let default = ["--bootstrap-server", b, "--entity-type", "brokers", "--entity-default"];
    assert_eq!(
        ok(&[
            &["configs", "--alter"][..],
            &default,
            &["--add-config", "log.retention.ms=604800000"]
        ]
        .concat()),
        "Completed updating default config for brokers in the cluster.\n"
    );
    let out = ok(&[&["configs", "--describe"][..], &default].concat());
    assert!(
        out.starts_with(
            "Default configs for brokers in the cluster are:\n  log.retention.ms=604800000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=604800000"
        ),
        "{out}"
    );
    assert_eq!(
        ok(&[
            "configs",
            "--describe",
            "--bootstrap-server",
            b,
            "--entity-type",
            "brokers",
            "--entity-name",
            "1"
        ]),
        "Dynamic configs for broker 1 are:\n"
    );
    let all = ok(&[
        "configs",
        "--describe",
        "--all",
        "--bootstrap-server",
        b,
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
    ]);
    assert!(all.starts_with("All configs for broker 1 are:\n"), "{all}");
    assert!(
        all.contains("\n  broker.id=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=1"),
        "{all}"
    );

    // An unknown topic: the broker's error, exit 1.
    let (code, _, err) = kastle(&[
        "configs",
        "--describe",
        "--bootstrap-server",
        b,
        "--entity-type",
        "topics",
        "--entity-name",
        "nope",
    ]);
    assert_eq!(code, 1, "{err}");

    // delete-records: the low watermark moves to the offset; beyond the high watermark fails.
    // (A topic of its own: "cfg" is compacted now, and the producer sends no keys.)
    ok(&[
        "topics",
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        "dr",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
    ]);
    wait_until(Duration::from_secs(20), "dr has a leader", || async {
        cluster::partition_in(&cluster::metadata(&zk, 1).await, "dr", 0).is_some_and(|(l, _, _)| l == 1)
    })
    .await;
    common::groups::produce(b, "dr", 0, 10, 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("offsets.json");
    let write = |offset: i64| {
        std::fs::write(
            &file,
            format!(r#"{{"partitions":[{{"topic":"dr","partition":0,"offset":{offset}}}],"version":1}}"#),
        )
        .expect("write");
    };
    write(4);
    let path = file.to_str().expect("utf-8 path");
    assert_eq!(
        ok(&["delete-records", "--bootstrap-server", b, "--offset-json-file", path]),
        "Executing records delete operation\nRecords delete operation completed:\npartition: dr-0\tlow_watermark: 4\n"
    );
    write(99);
    let (code, out, _) = kastle(&["delete-records", "--bootstrap-server", b, "--offset-json-file", path]);
    assert_eq!(code, 1);
    assert!(
        out.ends_with("partition: dr-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not within the range of offsets maintained by the server.\n"),
        "{out}"
    );
}
