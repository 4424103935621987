//! What the controller learns from znodes other than the broker and topic lists, against a real
//! ZooKeeper, real broker processes and the real `zkCli.sh`: partitions an operator adds to
//! `/brokers/topics/<t>`, a broker registration edited in place, ISR changes announced through
//! `/isr_change_notification`, and notifications left from before a failover.

mod common;

use std::time::Duration;

use common::cluster::{cluster_ready, controller_of, metadata, partition_in, start, state, SESSION_MS};
use common::{unique_chroot, wait_until, zkcli, zookeeper};
use kastle::zk::paths::ZNodeKind;
use kastle::zk::store::{create_recursive, CreateMode, ZkStore};
use kastle::zk::ZkSession;

/// `zkCli.sh set` of `path` (relative to `chroot`) to `data`, checked against the znode's schema
/// first so the test writes what a Kafka tool could.
fn zkcli_set(chroot: &str, path: &str, kind: ZNodeKind, data: &str) {
    let problems = kastle::zk::schema::validate(kind, data.as_bytes()).expect("schema");
    assert!(problems.is_empty(), "{data}: {problems:?}");
    zkcli(&zookeeper().address(), &["set", &format!("{chroot}{path}"), data]);
}

async fn exists(zk: &ZkSession, path: &str) -> bool {
    zk.exists(path).await.ok().flatten().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_an_operator_adds_to_the_topic_znode_get_leaders_and_reach_every_broker() {
    let chroot = unique_chroot("watch-partitions");
    let _brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let topic_id = "AAAAAAAAQACAAAAAAAAAAQ"; // base64 of a fixed UUID, as Kafka writes it
    let before = format!(
        r#"{{"version":3,"topic_id":"{topic_id}","partitions":{{"0":[1,2]}},"adding_replicas":{{}},"removing_replicas":{{}}}}"#
    );
    zk.create("/brokers/topics/grown", before.as_bytes(), CreateMode::Persistent)
        .await
        .expect("topic");
    wait_until(Duration::from_secs(20), "partition 0 on every broker", || async {
        for id in 1..=3 {
            if partition_in(&metadata(&zk, id).await, "grown", 0).is_none() {
                return false;
            }
        }
        true
    })
    .await;

    // One partition more; partition 0's replicas reordered too, which is a reassignment and
    // must be ignored.
    let after = format!(
        r#"{{"version":3,"topic_id":"{topic_id}","partitions":{{"0":[2,1],"1":[2,3]}},"adding_replicas":{{}},"removing_replicas":{{}}}}"#
    );
    zkcli_set(&chroot, "/brokers/topics/grown", ZNodeKind::TopicAssignment, &after);
    wait_until(
        Duration::from_secs(20),
        "a state znode with a live leader for partition 1",
        || async { state(&zk, "grown", 1).await.is_some_and(|s| s.leader.0 == 2) },
    )
    .await;
    let p1 = state(&zk, "grown", 1).await.expect("state");
    assert_eq!(
        p1.isr.iter().map(|b| b.0).collect::<Vec<_>>(),
        vec![2, 3],
        "every live assigned replica starts in the ISR"
    );
    assert_eq!(p1.leader_epoch.0, 0);
    wait_until(
        Duration::from_secs(20),
        "broker 1 (not a replica) to list partition 1",
        || async { partition_in(&metadata(&zk, 1).await, "grown", 1) == Some((2, vec![2, 3], vec![2, 3])) },
    )
    .await;
    let p0 = partition_in(&metadata(&zk, 1).await, "grown", 0).expect("partition 0");
    assert_eq!(p0.1, vec![1, 2], "the reordered replicas of partition 0 were not taken");
    let s0 = state(&zk, "grown", 0).await.expect("state");
    assert_eq!((s0.leader.0, s0.leader_epoch.0), (1, 0), "partition 0 was left alone");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_registration_edited_in_place_reaches_the_other_brokers() {
    let chroot = unique_chroot("watch-broker");
    let _brokers = start(&chroot, &[1, 2]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    let (data, stat) = zk.get_data("/brokers/ids/2").await.expect("registration");
    let mut registration: serde_json::Value = serde_json::from_slice(&data).expect("json");
    assert!(registration.get("rack").is_none(), "started without a rack");
    registration["rack"] = serde_json::Value::String("rack-b".into());
    zkcli_set(
        &chroot,
        "/brokers/ids/2",
        ZNodeKind::BrokerRegistration,
        &registration.to_string(),
    );
    wait_until(
        Duration::from_secs(20),
        "broker 1 to report broker 2's new rack",
        || async {
            let response = metadata(&zk, 1).await;
            response
                .brokers
                .iter()
                .any(|b| b.node_id.0 == 2 && b.rack.as_ref().is_some_and(|r| r.as_str() == "rack-b"))
        },
    )
    .await;
    let (_, after) = zk.get_data("/brokers/ids/2").await.expect("registration");
    assert_eq!(after.czxid, stat.czxid, "the same registration, edited");
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isr_change_notification_refreshes_the_controller_and_every_broker() {
    let chroot = unique_chroot("watch-isr");
    let brokers = start(&chroot, &[1, 2, 3]);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    // Led by a broker that is not the controller, with the controller last in the ISR.
    let controller = controller_of(&zk).await.expect("controller");
    let others: Vec<i32> = (1..=3).filter(|b| *b != controller).collect();
    let (leader, follower) = (others[0], others[1]);
    let replicas = format!("[{leader},{follower},{controller}]");
    zk.create(
        "/brokers/topics/shrunk",
        format!(r#"{{"version":1,"partitions":{{"0":{replicas}}}}}"#).as_bytes(),
        CreateMode::Persistent,
    )
    .await
    .expect("topic");
    let full = vec![leader, follower, controller];
    wait_until(Duration::from_secs(20), "every broker to know the full ISR", || {
        let (zk, full) = (&zk, full.clone());
        async move {
            for id in 1..=3 {
                if partition_in(&metadata(zk, id).await, "shrunk", 0).is_none_or(|(_, _, isr)| isr != full) {
                    return false;
                }
            }
            true
        }
    })
    .await;

    // What a leader does when a follower falls behind (IBP < 2.7): write the state znode, then
    // announce it. The follower is paused so the real leader does not take it back at once.
    brokers[(follower - 1) as usize].signal("STOP");
    let s = state(&zk, "shrunk", 0).await.expect("state");
    let shrunk = format!(
        r#"{{"controller_epoch":{},"leader":{leader},"version":1,"leader_epoch":{},"isr":[{leader},{controller}]}}"#,
        s.controller_epoch.0, s.leader_epoch.0
    );
    zkcli_set(
        &chroot,
        "/brokers/topics/shrunk/partitions/0/state",
        ZNodeKind::PartitionState,
        &shrunk,
    );
    let notification = r#"{"version":1,"partitions":[{"topic":"shrunk","partition":0}]}"#;
    let problems =
        kastle::zk::schema::validate(ZNodeKind::IsrChangeNotification, notification.as_bytes()).expect("schema");
    assert!(problems.is_empty(), "{problems:?}");
    zkcli(
        &zookeeper().address(),
        &[
            "create",
            &format!("{chroot}/isr_change_notification/isr_change_0000000000"),
            notification,
        ],
    );
    wait_until(
        Duration::from_secs(20),
        "the notification consumed and the running brokers to report the new ISR",
        || async {
            if exists(&zk, "/isr_change_notification/isr_change_0000000000").await {
                return false;
            }
            for id in [leader, controller] {
                let got = partition_in(&metadata(&zk, id).await, "shrunk", 0);
                if got.is_none_or(|(l, _, isr)| l != leader || isr != vec![leader, controller]) {
                    return false;
                }
            }
            true
        },
    )
    .await;

    // The controller took the znode's new version too: its next write there (electing a new
    // leader when this one dies) is a conditional set that only succeeds at that version.
    brokers[(leader - 1) as usize].signal("KILL");
    wait_until(
        Duration::from_millis(SESSION_MS + 15_000),
        "the controller's broker to lead",
        || async { state(&zk, "shrunk", 0).await.is_some_and(|s| s.leader.0 == controller) },
    )
    .await;
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_left_before_the_first_controller_are_deleted_at_failover() {
    let chroot = unique_chroot("watch-stale");
    let zk = zookeeper().session(&chroot).await;
    let stale = [
        (
            "/isr_change_notification",
            "/isr_change_notification/isr_change_0000000000",
            r#"{"version":1,"partitions":[{"topic":"gone","partition":0}]}"#,
        ),
        (
            "/log_dir_event_notification",
            "/log_dir_event_notification/log_dir_event_0000000000",
            r#"{"version":1,"broker":1,"event":1}"#,
        ),
    ];
    for (parent, path, data) in stale {
        create_recursive(&zk, parent).await.expect("parent");
        zk.create(path, data.as_bytes(), CreateMode::Persistent)
            .await
            .expect("notification");
    }
    let _brokers = start(&chroot, &[1]);
    cluster_ready(&zk, 1).await;
    wait_until(Duration::from_secs(20), "the stale notifications to go", || async {
        !exists(&zk, stale[0].1).await && !exists(&zk, stale[1].1).await
    })
    .await;
    zk.close().await;
}
