//! Session handling against a real ZooKeeper: after an expiry the store opens a new session,
//! tells its listeners, re-arms persistent watches (reporting `Rearmed`), and an in-process
//! broker registers again with a higher epoch.

mod common;

use std::time::Duration;

use common::{unique_chroot, wait_until, zookeeper, BrokerSpec};
use kastle::config::KafkaConfig;
use kastle::server::Broker;
use kastle::zk::store::{CreateMode, WatchEvent, WatchMode, ZkStore};
use kastle::zk::SessionEvent;

async fn next_event(rx: &mut kastle::zk::store::WatchStream) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("watch event in time")
        .expect("watch open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_replaced_and_watches_are_rearmed() {
    let zk = zookeeper();
    let chroot = unique_chroot("expiry");
    let session = zk.session(&chroot).await;
    let mut events = session.subscribe();
    session
        .create("/eph", b"", CreateMode::Ephemeral)
        .await
        .expect("ephemeral");
    let mut watch = session.watch("/watched", WatchMode::Persistent).await.expect("watch");
    let old_id = session.session_id();

    session.force_expire().await.expect("expire");
    let ended = tokio::time::timeout(Duration::from_secs(20), events.recv())
        .await
        .expect("event")
        .expect("open");
    assert!(
        matches!(ended, SessionEvent::Ended { session_id, .. } if session_id == old_id),
        "{ended:?}"
    );
    let established = tokio::time::timeout(Duration::from_secs(20), events.recv())
        .await
        .expect("event")
        .expect("open");
    let SessionEvent::Established { session_id: new_id } = established else {
        panic!("{established:?}")
    };
    assert_ne!(new_id, old_id);
    assert_eq!(session.session_id(), new_id);

    assert_eq!(next_event(&mut watch).await, WatchEvent::Rearmed);
    assert_eq!(
        session.exists("/eph").await.expect("exists"),
        None,
        "the old session's ephemeral is gone"
    );
    // A reconnect just before the expiry may have reported a re-read of its own, so the
    // `Rearmed` above need not be the new session's: the change must arrive once that one is.
    session
        .create("/watched", b"x", CreateMode::Persistent)
        .await
        .expect("create");
    let mut event = next_event(&mut watch).await;
    let mut version = 0;
    while event == WatchEvent::Rearmed {
        // Changed again after the re-arm, so the watch on the new session sees it.
        version += 1;
        session
            .set_data("/watched", format!("x{version}").as_bytes(), None)
            .await
            .expect("set");
        event = next_event(&mut watch).await;
    }
    assert!(
        matches!(&event, WatchEvent::Created { path } | WatchEvent::DataChanged { path } if path == "/watched"),
        "{event:?}"
    );
    session.set_data("/watched", b"y", None).await.expect("set");
    assert_eq!(
        next_event(&mut watch).await,
        WatchEvent::DataChanged {
            path: "/watched".into()
        }
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_broker_re_registers_after_its_session_expires() {
    let zk = zookeeper();
    let chroot = unique_chroot("reregister");
    let dir = tempfile::tempdir().expect("tempdir");
    let pairs = BrokerSpec::new(4, &zk.connect(&chroot)).pairs(dir.path());
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let first = broker.broker_epoch();
    broker.zk_session().force_expire().await.expect("expire");
    wait_until(Duration::from_secs(20), "a new broker epoch", || async {
        broker.broker_epoch() > first
    })
    .await;
    let observer = zk.session(&chroot).await;
    let (_, stat) = observer.get_data("/brokers/ids/4").await.expect("registered again");
    assert_eq!(stat.czxid, broker.broker_epoch().0);
    assert_eq!(stat.ephemeral_owner, broker.zk_session().session_id());
    broker.shutdown().await.expect("shutdown");
    observer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_reads_answer_in_order_with_missing_znodes_reported_one_by_one_and_are_counted() {
    use kastle::zk::store::{Op, ZkError};
    let zk = zookeeper();
    let session = zk.session(&unique_chroot("multiread")).await;
    // More znodes than one multiRead carries, written in a few multis.
    let paths: Vec<String> = (0..2_500).map(|i| format!("/n{i}")).collect();
    for chunk in paths.chunks(500) {
        let ops = chunk
            .iter()
            .map(|p| Op::Create {
                path: p.clone(),
                data: p.as_bytes().to_vec(),
                mode: CreateMode::Persistent,
            })
            .collect();
        session.multi(ops).await.expect("create");
    }
    let mut asked = paths.clone();
    asked.insert(1_234, "/missing".into());
    let before = session.requests();
    let results = session.get_data_many(&asked).await.expect("read");
    assert_eq!(session.requests() - before, 3, "2,501 reads in three requests");
    assert_eq!(results.len(), asked.len());
    for (path, result) in asked.iter().zip(&results) {
        match result {
            Ok((data, _)) => assert_eq!(data, path.as_bytes()),
            Err(e) => assert_eq!(
                (path.as_str(), e),
                (
                    "/missing",
                    &ZkError::NoNode {
                        path: "/missing".into()
                    }
                )
            ),
        }
    }
}
