//! A ZooKeeper tree wiped under running brokers (the chroot's children deleted, as
//! `deleteall` on each of them in zkCli): the brokers must not spin on controller elections
//! against the missing paths. They back off, and each logs one clear error naming the missing
//! tree. (With the chroot itself deleted, elections fail at once on `/controller_epoch` and
//! never looped; the children-only case is the one that did: ~120 elections/s per broker.)

mod common;

use std::time::{Duration, Instant};

use common::cluster::{cluster_ready, sample, scrape, start_with};
use common::{unique_chroot, wait_until, zookeeper};
use kastle::zk::store::{ZkError, ZkStore};
use kastle::zk::ZkSession;

const ATTEMPTS: &str = "kastle_controller_election_attempts_total";

/// `deleteall path`: children first, retried while brokers keep writing into the tree.
async fn delete_all(zk: &ZkSession, path: &str) {
    for _ in 0..50 {
        let mut stack = vec![path.to_string()];
        let mut order = Vec::new();
        while let Some(p) = stack.pop() {
            match zk.children(&p).await {
                Ok(children) => {
                    for c in children {
                        stack.push(format!("{p}/{c}"));
                    }
                    order.push(p);
                }
                Err(ZkError::NoNode { .. }) => {}
                Err(e) => panic!("children of {p}: {e}"),
            }
        }
        let mut clean = true;
        for p in order.iter().rev() {
            match zk.delete(p, None).await {
                Ok(()) | Err(ZkError::NoNode { .. }) => {}
                Err(ZkError::NotEmpty { .. }) => clean = false,
                Err(e) => panic!("delete {p}: {e}"),
            }
        }
        if clean && zk.exists(path).await.ok().flatten().is_none() {
            return;
        }
    }
    panic!("{path} kept being re-created");
}

fn attempts(addr: &str) -> f64 {
    scrape(addr).and_then(|body| sample(&body, ATTEMPTS)).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_chroot_does_not_make_the_brokers_spin_on_elections() {
    let chroot = unique_chroot("wiped");
    let addrs: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", common::zookeeper::free_port()))
        .collect();
    let mut brokers = start_with(&chroot, &[1, 2, 3], |spec| {
        let addr = addrs[(spec.id - 1) as usize].clone();
        spec.with("metrics.listener", &addr)
    });
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    zk.close().await;
    for addr in &addrs {
        wait_until(Duration::from_secs(20), "the metrics endpoint", || {
            let up = scrape(addr).is_some_and(|b| b.contains(ATTEMPTS));
            async move { up }
        })
        .await;
    }

    // Everything under the chroot, the chroot itself kept: the brokers can still create znodes
    // at its top (/controller, /controller_epoch) but find nothing else.
    let root = zookeeper().session("").await;
    for child in root.children(&chroot).await.expect("chroot children") {
        delete_all(&root, &format!("{chroot}/{child}")).await;
    }
    // Let the first reaction pass, then measure over a window (the window is what is measured,
    // not a wait for something to happen).
    common::wait_until_else(
        Duration::from_secs(20),
        "every broker to log the missing tree",
        || {
            let logged = brokers.iter().all(|b| b.stderr().contains("ZooKeeper tree"));
            async move { logged }
        },
        || {
            let counts: Vec<f64> = addrs.iter().map(|a| attempts(a)).collect();
            format!("attempts {counts:?}\n{}", tail(&brokers[0].stderr()))
        },
    )
    .await;
    let before: Vec<f64> = addrs.iter().map(|a| attempts(a)).collect();
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after: Vec<f64> = addrs.iter().map(|a| attempts(a)).collect();
    let secs = window.elapsed().as_secs_f64();
    for (i, b) in brokers.iter_mut().enumerate() {
        let rate = (after[i] - before[i]) / secs;
        let stderr = b.stderr();
        eprintln!("broker {}: {rate:.2} election attempts/s over {secs:.1} s", i + 1);
        assert!(
            rate <= 3.0,
            "broker {} made {rate:.1} election attempts/s with the tree gone:\n{}",
            i + 1,
            tail(&stderr)
        );
        let clear = stderr.lines().filter(|l| l.contains("ZooKeeper tree")).count();
        assert!(
            (1..=3).contains(&clear),
            "broker {}: {clear} lines about the missing tree:\n{}",
            i + 1,
            tail(&stderr)
        );
        assert!(!b.has_exited(), "broker {} exited:\n{}", i + 1, tail(&stderr));
    }
    root.close().await;
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
