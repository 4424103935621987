//! Fault injection shared by the reliability matrix (tests/reliability*.rs) and the soak
//! (tests/soak.rs): the safe setup, three-broker clusters on loopback or in a network lab with a
//! ZooKeeper of their own, which broker a fault hits (the leader, the controller, a follower),
//! and the process faults themselves (SIGTERM, SIGKILL, SIGSTOP past the session).

use std::path::PathBuf;
use std::time::Duration;

use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

use super::cluster::{cluster_ready, controller_of};
use super::netns::Lab;
use super::reliability::CaseReport;
use super::replicas::{leader, spec, SESSION_MS};
use super::zookeeper::free_port;
use super::{unique_chroot, BrokerProcess, BrokerSpec, ZooKeeperServer};

/// The safe setup: RF 3 (each topic's replicas), min ISR 2, unclean election off (the default).
pub const SAFE: [(&str, &str); 2] = [("min.insync.replicas", "2"), ("replica.lag.time.max.ms", "3000")];

pub fn dirs(brokers: &[BrokerProcess]) -> Vec<PathBuf> {
    brokers.iter().map(|b| b.log_dir.clone()).collect()
}

/// The `metrics.listener` addresses of `specs`.
pub fn metrics_of(specs: &[BrokerSpec]) -> Vec<String> {
    specs
        .iter()
        .filter_map(|s| {
            s.extra
                .iter()
                .find(|(k, _)| k == "metrics.listener")
                .map(|(_, v)| v.clone())
        })
        .collect()
}

/// Brokers `1..=n` on the binary's ZooKeeper, each on a port of its own kept across restarts,
/// with a metrics listener.
pub async fn loopback(
    chroot: &str,
    n: i32,
    extra: &[(&str, &str)],
) -> (ZkSession, Vec<BrokerSpec>, Vec<BrokerProcess>) {
    let specs: Vec<BrokerSpec> = (1..=n)
        .map(|id| {
            spec(chroot, id, extra)
                .port(free_port())
                .with("metrics.listener", &format!("127.0.0.1:{}", free_port()))
        })
        .collect();
    let brokers = specs.iter().map(BrokerProcess::start).collect();
    let zk = super::zookeeper().session(chroot).await;
    cluster_ready(&zk, n as usize).await;
    (zk, specs, brokers)
}

/// Brokers with a ZooKeeper of their own (which a fault may pause), in a network lab when
/// there is one. Fields drop in order: brokers, then ZooKeeper, then the lab's namespaces.
pub struct NetCluster {
    pub brokers: Vec<BrokerProcess>,
    /// What each broker was started with (to restart it on the same dirs and address).
    pub specs: Vec<BrokerSpec>,
    pub metrics: Vec<String>,
    pub zk: ZkSession,
    pub server: ZooKeeperServer,
    /// `None` for a cluster on loopback ([`private_cluster`]).
    pub lab: Option<Lab>,
}

impl NetCluster {
    /// The network lab; panics for a loopback cluster.
    pub fn lab(&self) -> &Lab {
        self.lab.as_ref().expect("a cluster in a network lab")
    }
}

/// `None` (with a `skipped` row naming the reason) where network namespaces are unavailable.
pub async fn netns_cluster(case: &str, name: &str, n: usize, extra: &[(&str, &str)]) -> Option<NetCluster> {
    if let Some(reason) = Lab::unavailable() {
        eprintln!("skipped {case}: {reason}");
        CaseReport::print_skipped(case, &reason);
        return None;
    }
    let lab = Lab::new(n);
    let server = ZooKeeperServer::start_private_on(&lab.host_ip());
    let chroot = unique_chroot(name);
    let specs: Vec<BrokerSpec> = (1..=n)
        .map(|i| {
            let mut s = extra.iter().fold(
                BrokerSpec::new(i as i32, &server.connect(&chroot)).session_timeout_ms(SESSION_MS),
                |s, (k, v)| s.with(k, v),
            );
            s.listeners = format!("PLAINTEXT://{}:9092", lab.broker_ip(i));
            s.with("metrics.listener", &format!("{}:9404", lab.broker_ip(i)))
                .prefix(&lab.prefix(i))
        })
        .collect();
    Some(started(specs, server, &chroot, Some(lab)).await)
}

/// Brokers `1..=n` on loopback (ports kept across restarts) with a private ZooKeeper.
pub async fn private_cluster(name: &str, n: usize, extra: &[(&str, &str)]) -> NetCluster {
    let server = ZooKeeperServer::start_private();
    let chroot = unique_chroot(name);
    let specs: Vec<BrokerSpec> = (1..=n)
        .map(|i| {
            extra
                .iter()
                .fold(
                    BrokerSpec::new(i as i32, &server.connect(&chroot)).session_timeout_ms(SESSION_MS),
                    |s, (k, v)| s.with(k, v),
                )
                .port(free_port())
                .with("metrics.listener", &format!("127.0.0.1:{}", free_port()))
        })
        .collect();
    started(specs, server, &chroot, None).await
}

async fn started(specs: Vec<BrokerSpec>, server: ZooKeeperServer, chroot: &str, lab: Option<Lab>) -> NetCluster {
    let brokers = specs.iter().map(BrokerProcess::start).collect();
    let metrics = metrics_of(&specs);
    let zk = server.session(chroot).await;
    cluster_ready(&zk, specs.len()).await;
    NetCluster {
        brokers,
        specs,
        metrics,
        zk,
        server,
        lab,
    }
}

pub async fn registered(zk: &ZkSession, id: i32) -> bool {
    zk.exists(&format!("/brokers/ids/{id}")).await.ok().flatten().is_some()
}

/// How a broker is disrupted in the process-fault cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGTERM (controlled shutdown), wait for the exit, restart.
    Term,
    /// SIGKILL, wait until the registration is gone, restart.
    Kill,
    /// SIGSTOP past the session timeout (a zombie), SIGCONT once it has been replaced.
    Pause,
}

/// Which broker a process fault disrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Leader,
    Controller,
}

pub async fn victim(zk: &ZkSession, target: Target, topic: &str) -> i32 {
    match target {
        Target::Leader => leader(zk, topic).await,
        Target::Controller => controller_of(zk).await.unwrap_or(-1),
    }
}

/// Broker `old` (index `old - 1` of `brokers`) disrupted by `fault` as `target` of `topic`:
/// waits until another broker has taken over, and (for a kill or a pause) until the disrupted
/// broker's registration is gone, then restarts or resumes it. Returns once it runs again;
/// the caller waits for the ISR.
pub async fn disrupt(
    zk: &ZkSession,
    brokers: &mut Vec<BrokerProcess>,
    specs: &[BrokerSpec],
    old: i32,
    target: Target,
    fault: Fault,
    topic: &str,
) {
    let i = (old - 1) as usize;
    match fault {
        Fault::Term => {
            brokers[i].signal("TERM");
            brokers[i].wait_exit(Duration::from_secs(60)).await;
        }
        Fault::Kill => brokers[i].signal("KILL"),
        Fault::Pause => brokers[i].pause().await,
    }
    super::wait_until(
        Duration::from_millis(SESSION_MS + 15_000),
        "another broker takes over",
        || async {
            let now = victim(zk, target, topic).await;
            now > 0 && now != old
        },
    )
    .await;
    if fault != Fault::Term {
        super::wait_until(
            Duration::from_secs(20),
            "the disrupted broker's registration gone",
            || async { !registered(zk, old).await },
        )
        .await;
    }
    if fault == Fault::Pause {
        brokers[i].signal("CONT");
    } else {
        let dead = brokers.remove(i);
        brokers.insert(i, dead.restart(&specs[i]));
    }
}

/// A follower that is neither the leader nor (when it can be helped) the controller.
pub async fn a_follower(zk: &ZkSession, topic: &str, n: i32) -> i32 {
    let l = leader(zk, topic).await;
    let c = controller_of(zk).await.unwrap_or(-1);
    (1..=n)
        .filter(|id| *id != l)
        .min_by_key(|id| *id == c)
        .expect("a follower")
}
