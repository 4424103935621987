//! `kastle zk check` against a live tree: clean on what kastle writes, and a corrupted znode
//! makes it exit 1 naming the path.

mod common;

use std::process::Command;

use common::{unique_chroot, zookeeper, BrokerSpec};
use kastle::config::KafkaConfig;
use kastle::server::Broker;
use kastle::zk::store::{CreateMode, ZkStore};

fn zk_check(connect: &str) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kastle"))
        .args(["zk", "check", "--zookeeper", connect])
        .output()
        .expect("run kastle zk check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_check_passes_on_a_kastle_cluster_and_names_a_corrupted_znode() {
    let zk = zookeeper();
    let chroot = unique_chroot("zkcheck");
    let dirs = tempfile::tempdir().expect("tempdir");
    let mut brokers = Vec::new();
    for id in 1..=2 {
        let spec = BrokerSpec::new(id, &zk.connect(&chroot));
        let pairs = spec.pairs(&dirs.path().join(format!("b{id}")));
        let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        brokers.push(
            Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
                .await
                .expect("start"),
        );
    }

    let (code, out) = zk_check(&zk.connect(&chroot));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 violation(s)"), "{out}");

    // Znodes outside Kafka's layout are left alone; a corrupted one of Kafka's is named.
    let session = zk.session(&chroot).await;
    session
        .create("/my-app", b"anything", CreateMode::Persistent)
        .await
        .expect("create");
    let (code, out) = zk_check(&zk.connect(&chroot));
    assert_eq!(code, 0, "{out}");
    session
        .set_data("/brokers/ids/2", br#"{"version":5,"host":"h"}"#, None)
        .await
        .expect("corrupt");
    let (code, out) = zk_check(&zk.connect(&chroot));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("VIOLATION /brokers/ids/2 (schema broker-registration)"),
        "{out}"
    );

    session.close().await;
    for b in brokers {
        b.shutdown().await.expect("shutdown");
    }
}
