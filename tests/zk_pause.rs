//! ZooKeeper paused (SIGSTOP) under running sessions, each test with a ZooKeeper of its own: a
//! pause shorter than the session timeout makes clients reconnect to the same session, and every
//! watch must still fire afterwards; a longer one expires sessions, and the brokers must come
//! back with one controller.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{
    cluster_ready, controller_epoch, controller_of, create_topic_by_hand, registered_with_one_controller, samples_at,
    scrape, state,
};
use common::{unique_chroot, wait_until, wait_until_else, BrokerProcess, BrokerSpec, ZooKeeperServer};
use kastle::zk::store::{CreateMode, WatchEvent, WatchMode, ZkStore};
use kastle::zk::{ConnectString, ZkSession};

async fn session(zk: &ZooKeeperServer, chroot: &str, timeout: Duration) -> ZkSession {
    let connect = ConnectString::parse(&zk.connect(chroot)).expect("connect string");
    ZkSession::connect(&connect, timeout, timeout).await.expect("session")
}

/// Waits for the next event other than `Rearmed` (which a reconnect may add).
async fn next_change(rx: &mut kastle::zk::store::WatchStream, deadline: Duration) -> Option<WatchEvent> {
    let until = Instant::now() + deadline;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(WatchEvent::Rearmed)) => continue,
            Ok(other) => return other,
            Err(_) => return None,
        }
    }
}

/// The zookeeper-client crate re-sends only one-shot watches when it reconnects to the same
/// session (its SetWatches request leaves the persistent ones out), so the server forgets every
/// persistent watch at the first connection loss. The store must re-add them itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_watches_fire_after_a_same_session_reconnect() {
    let zk = ZooKeeperServer::start_private();
    let chroot = unique_chroot("pause-watch");
    // A 4 s session: the client gives up on a silent connection after 8 ticks of 200 ms.
    let watched = session(&zk, &chroot, Duration::from_secs(4)).await;
    let writer = session(&zk, &chroot, Duration::from_secs(30)).await;
    let mut watch = watched.watch("/watched", WatchMode::Persistent).await.expect("watch");
    let before = watched.session_id();
    let reconnects = watched.reconnects();

    let pause = zk.pause();
    // Long enough for the client to notice (1.6 s) and short of the 4 s session timeout.
    wait_until(
        Duration::from_secs(10),
        "the client to see the connection lost",
        || async { watched.connection_lost() },
    )
    .await;
    drop(pause);
    wait_until(Duration::from_secs(10), "the same session to reconnect", || async {
        watched.reconnects() > reconnects
    })
    .await;
    assert_eq!(watched.session_id(), before, "the session survived the pause");

    writer
        .create("/watched", b"x", CreateMode::Persistent)
        .await
        .expect("create");
    let event = next_change(&mut watch, Duration::from_secs(10)).await;
    assert_eq!(
        event,
        Some(WatchEvent::Created {
            path: "/watched".into()
        })
    );
}

/// Session timeout of the brokers here: a pause of half of it keeps every session.
const SESSION_MS: u64 = 6_000;

struct Cluster {
    brokers: Vec<BrokerProcess>,
    metrics: Vec<String>,
    zk: ZkSession,
}

/// Three brokers on `server`, each with a metrics listener.
async fn cluster(server: &ZooKeeperServer, name: &str) -> Cluster {
    let chroot = unique_chroot(name);
    let mut brokers = Vec::new();
    let mut metrics = Vec::new();
    for id in 1..=3 {
        let addr = format!("127.0.0.1:{}", common::zookeeper::free_port());
        brokers.push(BrokerProcess::start(
            &BrokerSpec::new(id, &server.connect(&chroot))
                .session_timeout_ms(SESSION_MS)
                .with("metrics.listener", &addr),
        ));
        metrics.push(addr);
    }
    let zk = session(server, &chroot, Duration::from_secs(30)).await;
    cluster_ready(&zk, 3).await;
    for addr in &metrics {
        wait_until(Duration::from_secs(20), "the metrics endpoint", || async {
            scrape(addr).is_some()
        })
        .await;
    }
    Cluster { brokers, metrics, zk }
}

impl Cluster {
    fn samples(&self, name: &str) -> Vec<f64> {
        samples_at(&self.metrics, name)
    }

    /// A topic whose only partition is led by a broker that is not the controller; returns
    /// that leader, once every replica is in the ISR.
    async fn topic_led_elsewhere(&self, topic: &str) -> i32 {
        let controller = controller_of(&self.zk).await.expect("controller");
        let leader = (1..=3).find(|b| *b != controller).expect("a non-controller");
        let rest: Vec<i32> = (1..=3).filter(|b| *b != leader).collect();
        let assignment = format!(r#"{{"0":[{leader},{},{}]}}"#, rest[0], rest[1]);
        create_topic_by_hand(&self.zk, topic, &assignment).await;
        wait_until(Duration::from_secs(30), "the topic's leader and full ISR", || async {
            state(&self.zk, topic, 0)
                .await
                .is_some_and(|s| s.leader.0 == leader && s.isr.len() == 3)
        })
        .await;
        leader
    }

    /// kill -9 of `leader`, then the controller must move the leadership within the session
    /// timeout plus 5 s.
    async fn kill_and_expect_a_new_leader(&mut self, topic: &str, leader: i32) -> Duration {
        let killed = &mut self.brokers[(leader - 1) as usize];
        killed.signal("KILL");
        killed.wait_exit(Duration::from_secs(10)).await;
        let start = Instant::now();
        let stderr: Vec<String> = self.brokers.iter().map(|b| b.stderr()).collect();
        wait_until_else(
            Duration::from_millis(SESSION_MS + 5_000),
            "leadership to move off the killed broker",
            || async { state(&self.zk, topic, 0).await.is_some_and(|s| s.leader.0 != leader) },
            || format!("broker logs:\n{}", stderr.join("\n----\n")),
        )
        .await;
        start.elapsed()
    }
}

/// The issue's reproduction: ZooKeeper paused for less than the session timeout, then a leader
/// killed. Before the fix the controller's watches were gone and the leader stayed in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_killed_after_a_zookeeper_pause_that_kept_sessions_is_replaced() {
    let server = ZooKeeperServer::start_private();
    let mut c = cluster(&server, "pause-keep").await;
    let leader = c.topic_led_elsewhere("kept").await;
    let controller = controller_of(&c.zk).await.expect("controller");
    let expires_before = c.samples("kafka_server_sessionexpirelistener_zookeeperexpires_total");

    {
        let _paused = server.pause();
        // Each broker has two sessions (registration and state watch); all must notice.
        wait_until(
            Duration::from_secs(15),
            "every session to lose its connection",
            || async { c.samples("kastle_zk_disconnected_sessions").iter().all(|n| *n >= 2.0) },
        )
        .await;
    }
    wait_until(Duration::from_secs(15), "every session to reconnect", || async {
        c.samples("kastle_zk_disconnected_sessions").iter().all(|n| *n == 0.0)
            && c.samples("kastle_zk_reconnects_total").iter().all(|n| *n >= 2.0)
    })
    .await;
    assert_eq!(
        c.samples("kafka_server_sessionexpirelistener_zookeeperexpires_total"),
        expires_before,
        "no session expired"
    );
    assert_eq!(
        controller_of(&c.zk).await,
        Some(controller),
        "the controller kept its role"
    );
    wait_until(
        Duration::from_secs(10),
        "the controller's watches to be re-armed",
        || async { c.samples("kastle_controller_watch_rearms_total")[(controller - 1) as usize] >= 7.0 },
    )
    .await;

    let took = c.kill_and_expect_a_new_leader("kept", leader).await;
    eprintln!("leadership moved {took:?} after the kill");
    c.zk.close().await;
}

/// A pause longer than the session timeout expires every session: the controller resigns,
/// the brokers register again, exactly one controller is elected, and it acts on a leader's
/// death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_zookeeper_pause_that_expired_sessions_one_controller_acts_on_a_leader_kill() {
    let server = ZooKeeperServer::start_private();
    let mut c = cluster(&server, "pause-expire").await;
    let leader = c.topic_led_elsewhere("expired").await;
    let epoch = controller_epoch(&c.zk).await;

    {
        let _paused = server.pause();
        // The client gives a session up on its own after 7/5 of its timeout without an answer.
        wait_until(
            Duration::from_secs(30),
            "every broker to see its session expire",
            || async {
                c.samples("kafka_server_sessionexpirelistener_zookeeperexpires_total")
                    .iter()
                    .all(|n| *n >= 1.0)
            },
        )
        .await;
    }
    wait_until(
        Duration::from_secs(30),
        "all brokers registered again and one controller",
        || registered_with_one_controller(&c.zk, &c.metrics, 3),
    )
    .await;
    assert!(controller_epoch(&c.zk).await > epoch, "a new election after the expiry");
    let active = c.samples("kafka_controller_kafkacontroller_activecontrollercount");
    let controller = controller_of(&c.zk).await.expect("controller");
    assert_eq!(
        active[(controller - 1) as usize],
        1.0,
        "the one in /controller is the active one: {active:?}"
    );

    // The leader may be the new controller now; kill whichever broker leads.
    let leader_now = state(&c.zk, "expired", 0).await.map(|s| s.leader.0).unwrap_or(leader);
    let took = c.kill_and_expect_a_new_leader("expired", leader_now).await;
    eprintln!("leadership moved {took:?} after the kill");
    c.zk.close().await;
}
