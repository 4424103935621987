//! The reliability matrix's ZooKeeper cases (reliability.md §3): R17, a ZooKeeper pause that
//! keeps the brokers' sessions (they reconnect to the same session) and then one past the
//! session timeout (they expire), each followed by a kill -9 of a partition leader that is not
//! the controller, while the acks=all workload runs; the controller's watches must still fire
//! (the leadership moves within the session timeout plus 5 s) and the shared checker judges
//! the records. Each case runs a ZooKeeper of its own, since pausing it stops every session.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::cluster::{
    cluster_ready, controller_epoch, controller_of, create_topic_by_hand, registered_with_one_controller, samples_at,
    scrape,
};
use common::faults::metrics_of;
use common::reliability::{judge, Case, Workload};
use common::replicas::{bootstrap, isr, leader, state};
use common::wire::Wire;
use common::zookeeper::free_port;
use common::{bootstrap_of, unique_chroot, wait_until, BrokerProcess, BrokerSpec, ZooKeeperServer};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kastle::zk::store::ZkStore;
use kastle::zk::{ConnectString, ZkSession};

/// One case at a time: each runs three brokers, a ZooKeeper and the clients on two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The brokers' session timeout: a 4 s pause keeps every session.
const SESSION_MS: u64 = 6_000;
/// The short pause (below the session timeout).
const SHORT_PAUSE: Duration = Duration::from_secs(4);
/// Records per second of the workload.
const RATE: u32 = 300;
/// A topic whose partitions are led by brokers 1, 2, 3: some broker other than the controller
/// leads one of them whatever the failovers did.
const SPREAD: &str = "r17-spread";

/// Three brokers on a private ZooKeeper, each on a fixed port with a metrics listener.
struct Cluster {
    brokers: Vec<BrokerProcess>,
    specs: Vec<BrokerSpec>,
    metrics: Vec<String>,
    zk: ZkSession,
    server: ZooKeeperServer,
}

/// Brokers 1-3 on `connect` with the case's session timeout, min ISR 2, a 3 s lag limit and a
/// metrics listener each.
fn broker_specs(connect: &str) -> Vec<BrokerSpec> {
    (1..=3)
        .map(|id| {
            BrokerSpec::new(id, connect)
                .session_timeout_ms(SESSION_MS)
                .port(free_port())
                .with("min.insync.replicas", "2")
                .with("replica.lag.time.max.ms", "3000")
                .with("metrics.listener", &format!("127.0.0.1:{}", free_port()))
        })
        .collect()
}

async fn cluster(name: &str) -> Cluster {
    let server = ZooKeeperServer::start_private();
    let chroot = unique_chroot(name);
    let specs = broker_specs(&server.connect(&chroot));
    let metrics = metrics_of(&specs);
    let brokers = specs.iter().map(BrokerProcess::start).collect();
    // The test's own session outlives every pause here.
    let connect = ConnectString::parse(&server.connect(&chroot)).expect("connect string");
    let zk = ZkSession::connect(&connect, Duration::from_secs(30), Duration::from_secs(30))
        .await
        .expect("session");
    cluster_ready(&zk, 3).await;
    for addr in &metrics {
        wait_until(Duration::from_secs(20), "the metrics endpoint", || async {
            scrape(addr).is_some()
        })
        .await;
    }
    Cluster {
        brokers,
        specs,
        metrics,
        zk,
        server,
    }
}

impl Cluster {
    /// Each broker's value of the unlabelled sample `name` (0 where it is not reported).
    fn samples(&self, name: &str) -> Vec<f64> {
        samples_at(&self.metrics, name)
    }

    fn dirs(&self) -> Vec<PathBuf> {
        self.brokers.iter().map(|b| b.log_dir.clone()).collect()
    }

    /// `(topic, partition, leader)` of the workload's partition and [`SPREAD`]'s, as ZooKeeper
    /// has them.
    async fn leaders(&self, topic: &str) -> Vec<(String, i32, i32)> {
        let mut out = vec![(topic.to_string(), 0, leader(&self.zk, topic).await)];
        for p in 0..3 {
            let l = state(&self.zk, SPREAD, p).await.map_or(-1, |(s, _)| s.leader.0);
            out.push((SPREAD.to_string(), p, l));
        }
        out
    }

    /// A partition led by a broker that is not the controller (the workload's first), asking
    /// the controller for a preferred election of [`SPREAD`] when the controller leads them all.
    async fn led_elsewhere(&self, topic: &str) -> (String, i32, i32) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let controller = controller_of(&self.zk).await.unwrap_or(-1);
            let found = self
                .leaders(topic)
                .await
                .into_iter()
                .find(|(_, _, l)| *l > 0 && *l != controller);
            if let Some(found) = found {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no partition led by a broker other than the controller {controller}"
            );
            elect_preferred(&self.zk, controller).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// kill -9 of the leader of `partition` (not the controller); returns how long until
    /// ZooKeeper names another leader. Then restarts it and waits for every ISR to be whole.
    async fn kill_leader(&mut self, topic: &str, partition: &(String, i32, i32)) -> Duration {
        let (t, p, l) = partition;
        let i = (*l - 1) as usize;
        self.brokers[i].signal("KILL");
        self.brokers[i].wait_exit(Duration::from_secs(10)).await;
        let killed = Instant::now();
        wait_until(Duration::from_secs(30), "leadership off the killed broker", || async {
            state(&self.zk, t, *p).await.is_some_and(|(s, _)| s.leader.0 != *l)
        })
        .await;
        let moved = killed.elapsed();
        wait_until(Duration::from_secs(20), "the killed broker unregistered", || async {
            self.zk
                .exists(&format!("/brokers/ids/{l}"))
                .await
                .ok()
                .flatten()
                .is_none()
        })
        .await;
        let dead = self.brokers.remove(i);
        self.brokers.insert(i, dead.restart(&self.specs[i]));
        wait_until(Duration::from_secs(60), "every ISR whole again", || async {
            let mut whole = isr(&self.zk, topic).await.len() == 3;
            for p in 0..3 {
                whole &= state(&self.zk, SPREAD, p).await.is_some_and(|(s, _)| s.isr.len() == 3);
            }
            whole
        })
        .await;
        moved
    }
}

/// A preferred election of [`SPREAD`]'s partitions at `controller` (errors ignored: the caller
/// checks the leaders again).
async fn elect_preferred(zk: &ZkSession, controller: i32) {
    if controller < 0 {
        return;
    }
    let request = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(5_000)
        .with_topic_partitions(Some(vec![TopicPartitions::default()
            .with_topic(TopicName(StrBytes::from_static_str(SPREAD)))
            .with_partitions(vec![0, 1, 2])]));
    let addr = bootstrap_of(zk, controller).await;
    if let Some(mut wire) = Wire::try_connect(&addr, Duration::from_secs(2)).await {
        let _: Option<ElectLeadersResponse> = wire.try_send(&request, 2, Duration::from_secs(6)).await;
    }
}

/// Holds for `at_least` and until `done` holds (at most `deadline` in all).
async fn hold<F, Fut>(at_least: Duration, deadline: Duration, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    wait_until(deadline, what, || {
        let long_enough = start.elapsed() >= at_least;
        let check = done();
        async move { check.await && long_enough }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r17_leaders_move_after_zookeeper_pauses_that_keep_and_that_expire_sessions() {
    let _serial = SERIAL.lock().await;
    let started = Instant::now();
    let mut c = cluster("r17").await;
    let controller = controller_of(&c.zk).await.expect("a controller");
    // The workload's partition led by a broker that is not the controller.
    let first = (1..=3).find(|b| *b != controller).expect("a non-controller");
    let rest: Vec<i32> = (1..=3).filter(|b| *b != first).collect();
    create_topic_by_hand(&c.zk, "r17", &format!(r#"{{"0":[{first},{},{}]}}"#, rest[0], rest[1])).await;
    create_topic_by_hand(&c.zk, SPREAD, r#"{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2]}"#).await;
    wait_until(Duration::from_secs(30), "the topics led with whole ISRs", || async {
        let mut ready = leader(&c.zk, "r17").await == first && isr(&c.zk, "r17").await.len() == 3;
        for p in 0..3 {
            ready &= state(&c.zk, SPREAD, p)
                .await
                .is_some_and(|(s, _)| s.leader.0 >= 0 && s.isr.len() == 3);
        }
        ready
    })
    .await;
    let boot = bootstrap(&c.zk).await;
    let workload = Workload::start(&boot, "r17", "all", true, RATE);
    workload
        .wait_more(500, Duration::from_secs(60), "500 acknowledged")
        .await;
    let mut failures = Vec::new();
    let bound = Duration::from_millis(SESSION_MS + 5_000);

    // 1. A pause below the session timeout: every session reconnects as itself.
    let expires = "kafka_server_sessionexpirelistener_zookeeperexpires_total";
    let expired_before = c.samples(expires);
    let epoch = controller_epoch(&c.zk).await;
    {
        let _paused = c.server.pause();
        // Each broker has two sessions (registration and state watch); all must notice.
        hold(
            SHORT_PAUSE,
            Duration::from_secs(15),
            "every session disconnected",
            || async { c.samples("kastle_zk_disconnected_sessions").iter().all(|n| *n >= 2.0) },
        )
        .await;
    }
    wait_until(Duration::from_secs(15), "every session reconnected", || async {
        c.samples("kastle_zk_disconnected_sessions").iter().all(|n| *n == 0.0)
    })
    .await;
    if c.samples(expires) != expired_before {
        failures.push("a session expired during the short pause".to_string());
    }
    if controller_epoch(&c.zk).await != epoch || controller_of(&c.zk).await != Some(controller) {
        failures.push("the controller changed during the short pause".to_string());
    }
    workload
        .wait_more(300, Duration::from_secs(30), "300 acknowledged after the short pause")
        .await;
    let victim = c.led_elsewhere("r17").await;
    let moved_kept = c.kill_leader("r17", &victim).await;
    eprintln!("R17: after the short pause, {victim:?} led elsewhere {moved_kept:?} after the kill");
    if moved_kept > bound {
        failures.push(format!("leadership moved {moved_kept:?} after the kill (session kept)"));
    }
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after the first kill")
        .await;

    // 2. A pause past the session timeout: every session expires and the brokers register again.
    let expired_before = c.samples(expires);
    {
        let _paused = c.server.pause();
        // The client gives a session up on its own after 7/5 of its timeout without an answer.
        wait_until(Duration::from_secs(30), "every broker's session expired", || async {
            c.samples(expires)
                .iter()
                .zip(&expired_before)
                .all(|(now, before)| now > before)
        })
        .await;
    }
    wait_until(
        Duration::from_secs(40),
        "all brokers registered again and one active controller",
        || registered_with_one_controller(&c.zk, &c.metrics, 3),
    )
    .await;
    if controller_epoch(&c.zk).await <= epoch {
        failures.push("no new controller election after the expiry".to_string());
    }
    wait_until(Duration::from_secs(40), "the workload's ISR whole again", || async {
        isr(&c.zk, "r17").await.len() == 3
    })
    .await;
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after the expiry")
        .await;
    let victim = c.led_elsewhere("r17").await;
    let moved_expired = c.kill_leader("r17", &victim).await;
    eprintln!("R17: after the expiry, {victim:?} led elsewhere {moved_expired:?} after the kill");
    if moved_expired > bound {
        failures.push(format!(
            "leadership moved {moved_expired:?} after the kill (sessions expired)"
        ));
    }
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after the second kill")
        .await;

    let case = Case {
        name: "R17 ZooKeeper pause",
        faults: "ZK SIGSTOP 4 s, kill -9 leader; ZK SIGSTOP past session, kill -9 leader",
        topic: "r17",
        idempotent: true,
        expect_loss: false,
    };
    let dirs = c.dirs();
    let report = judge(&case, &c.zk, &dirs, &c.metrics, &boot, workload).await;
    report.print_with(&failures);
    eprintln!("R17 took {:?}", started.elapsed());
    report.assert_passed_with(&failures);
    c.zk.close().await;
}

/// Whether every broker answers Metadata for `topic` with `leader` and a whole ISR.
async fn metadata_agrees(addrs: &[String], topic: &str, leader: i32) -> bool {
    use kafka_protocol::messages::MetadataRequest;
    for addr in addrs {
        let Some(mut wire) = Wire::try_connect(addr, Duration::from_secs(1)).await else {
            return false;
        };
        let Some(response) = wire
            .try_send(
                &MetadataRequest::default().with_topics(None),
                12,
                Duration::from_secs(2),
            )
            .await
        else {
            return false;
        };
        match common::cluster::partition_in(&response, topic, 0) {
            Some((l, _, isr)) if l == leader && isr.len() == 3 => {}
            _ => return false,
        }
    }
    true
}

/// R14: the ensemble's nodes restarted one at a time (SIGTERM), then its leader killed, then two
/// of three down for 10 s, under the workload. No broker session may expire while a quorum
/// stands; afterwards there is one controller and the brokers' Metadata agrees with ZooKeeper
/// within 20 s of the quorum's return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r14_zookeeper_restarts_leader_loss_and_quorum_loss_lose_nothing() {
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let mut ensemble = common::ensemble::Ensemble::start().await;
    eprintln!("R14: ensemble serving after {:?}", began.elapsed());
    let chroot = unique_chroot("r14");
    let connect = ensemble.connect(&chroot);
    let specs = broker_specs(&connect);
    let metrics = metrics_of(&specs);
    let brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = ZkSession::connect(
        &ConnectString::parse(&connect).expect("connect string"),
        Duration::from_secs(30),
        Duration::from_secs(30),
    )
    .await
    .expect("session");
    cluster_ready(&zk, 3).await;
    create_topic_by_hand(&zk, "r14", r#"{"0":[1,2,3]}"#).await;
    wait_until(Duration::from_secs(30), "r14 led, ISR whole", || async {
        leader(&zk, "r14").await > 0 && isr(&zk, "r14").await.len() == 3
    })
    .await;
    for addr in &metrics {
        wait_until(Duration::from_secs(20), "the metrics endpoint", || async {
            scrape(addr).is_some()
        })
        .await;
    }
    let boot = bootstrap(&zk).await;
    let addrs: Vec<String> = boot.split(',').map(str::to_string).collect();
    let workload = Workload::start(&boot, "r14", "all", true, RATE);
    workload
        .wait_more(500, Duration::from_secs(60), "500 acknowledged")
        .await;
    let expires = "kafka_server_sessionexpirelistener_zookeeperexpires_total";
    let expired_before = samples_at(&metrics, expires);
    let epoch = controller_epoch(&zk).await;
    let mut failures = Vec::new();

    // 1. Rolling restart: each node SIGTERMed and started again, the quorum standing throughout.
    for id in 1..=3 {
        ensemble.stop(id, "TERM").await;
        ensemble.restart(id);
        ensemble.wait_serving(Duration::from_secs(60)).await;
        workload
            .wait_more(200, Duration::from_secs(30), "200 acknowledged after a node's restart")
            .await;
    }
    if samples_at(&metrics, expires) != expired_before {
        failures.push("a broker session expired during the rolling restart".to_string());
    }
    if controller_epoch(&zk).await != epoch {
        failures.push("the controller changed during the rolling restart".to_string());
    }
    eprintln!("R14: rolling restart done after {:?}", began.elapsed());

    // 2. The ensemble's leader killed: the other two elect one.
    let zk_leader = ensemble.leader().await.expect("an ensemble leader");
    ensemble.stop(zk_leader, "KILL").await;
    workload
        .wait_more(
            200,
            Duration::from_secs(30),
            "200 acknowledged with the ZooKeeper leader gone",
        )
        .await;
    ensemble.restart(zk_leader);
    ensemble.wait_serving(Duration::from_secs(60)).await;
    eprintln!("R14: leader {zk_leader} killed and back after {:?}", began.elapsed());

    // 3. Quorum lost: two of three down for 10 s.
    let down: Vec<usize> = (1..=3).filter(|id| *id != zk_leader).collect();
    for id in &down {
        ensemble.stop(*id, "KILL").await;
    }
    let lost = Instant::now();
    while lost.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in &down {
        ensemble.restart(*id);
    }
    ensemble.wait_serving(Duration::from_secs(60)).await;
    let back = Instant::now();
    wait_until(
        Duration::from_secs(60),
        "one controller and Metadata agreeing with ZooKeeper",
        || async {
            let registered = zk.children("/brokers/ids").await.map(|b| b.len() == 3).unwrap_or(false);
            let active: f64 = samples_at(&metrics, "kafka_controller_kafkacontroller_activecontrollercount")
                .iter()
                .sum();
            let l = leader(&zk, "r14").await;
            registered
                && active == 1.0
                && l > 0
                && isr(&zk, "r14").await.len() == 3
                && metadata_agrees(&addrs, "r14", l).await
        },
    )
    .await;
    let converged = back.elapsed();
    eprintln!("R14: metadata converged {converged:?} after the quorum returned");
    if converged > Duration::from_secs(20) {
        failures.push(format!("metadata converged {converged:?} after the quorum returned"));
    }
    workload
        .wait_more(
            300,
            Duration::from_secs(60),
            "300 acknowledged after the quorum returned",
        )
        .await;
    let case = Case {
        name: "R14 ZooKeeper ensemble faults",
        faults: "rolling SIGTERM of 3 ZK nodes; kill -9 ZK leader; 2 of 3 down 10 s",
        topic: "r14",
        idempotent: true,
        expect_loss: false,
    };
    let dirs: Vec<PathBuf> = brokers.iter().map(|b| b.log_dir.clone()).collect();
    let report = judge(&case, &zk, &dirs, &metrics, &boot, workload).await;
    report.print_with(&failures);
    eprintln!("R14 took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    zk.close().await;
    drop(brokers);
}
