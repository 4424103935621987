//! The reliability matrix's disk cases (reliability.md §3), Kafka's `log_dir_failure_test`
//! against three broker processes with two log dirs each, the acks=all workload on two topics:
//! `topic2` (min ISR 2) in the leader's failing dir, `topic1` (min ISR 1) in its healthy one.
//! - R12: the failing dir is ext4 on a loop device, killed with EXT4_IOC_SHUTDOWN (EIO);
//! - R13 (a): the failing dir is a 16 MiB tmpfs, filled (ENOSPC).
//!
//! Either way the broker stays up, a `log_dir_event_*` notification appears and the controller
//! consumes it, within 30 s the broker neither leads `topic2` nor is in its ISR, and nothing
//! acknowledged is lost; then the other two brokers stop and `topic1` still serves from it with
//! ISR == [it]. Both need root (loop devices, mounts) and skip with the reason printed
//! elsewhere; each takes about 20-30 s, so both run in CI. R13 (b), fsync EIO through libfiu, does not apply: the broker is not built on
//! libc's `fsync` wrappers that `fiu` intercepts.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cluster::{cluster_ready, create_topic_by_hand};
use common::disk::{self, FailingDisk};
use common::reliability::{judge, Case, CaseReport, Workload};
use common::replicas::{bootstrap, isr, leader, spec};
use common::zookeeper::free_port;
use common::{unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kastle::zk::store::{CreateMode, WatchEvent, WatchMode, ZkStore};
use kastle::zk::ZkSession;

/// One case at a time (they share two cores).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Records per second of each workload.
const RATE: u32 = 200;

/// How the failing dir fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// ext4 on a loop device, EXT4_IOC_SHUTDOWN.
    Shutdown,
    /// A 16 MiB tmpfs, filled.
    Full,
}

/// Broker `id`'s two log dirs: the first (where the first partition goes: the broker breaks
/// ties between dirs by their paths, so it sorts first) is `failing` for broker 1, a plain dir
/// for the others.
fn log_dirs(root: &Path, id: i32, failing: &Path) -> [PathBuf; 2] {
    let first = if id == 1 {
        failing.join("logs")
    } else {
        root.join(format!("a{id}-first"))
    };
    [first, root.join(format!("b{id}-second"))]
}

/// The dir of `dirs` holding `topic-0`.
fn holding(dirs: &[PathBuf; 2], topic: &str) -> Option<PathBuf> {
    dirs.iter().find(|d| d.join(format!("{topic}-0")).exists()).cloned()
}

async fn registered(zk: &ZkSession, id: i32) -> bool {
    zk.exists(&format!("/brokers/ids/{id}")).await.ok().flatten().is_some()
}

async fn disk_failure_case(name: &str, topic2: &str, fault: Fault) {
    let began = Instant::now();
    let case2 = format!("{name} (min ISR 2, failing dir)");
    let case1 = format!("{name} (min ISR 1, healthy dir)");
    if let Some(reason) = disk::unavailable() {
        eprintln!("skipped {name}: {reason}");
        CaseReport::print_skipped(&case2, &reason);
        return;
    }
    let root = tempfile::tempdir().expect("tempdir");
    let failing = match fault {
        Fault::Shutdown => FailingDisk::ext4(&root.path().join("disk.img"), &root.path().join("a-ext4")),
        Fault::Full => FailingDisk::tmpfs(&root.path().join("a-tmpfs"), 16),
    }
    .unwrap_or_else(|e| panic!("cannot build the failing disk: {e}"));
    let chroot = unique_chroot(topic2);
    let metrics: Vec<String> = (1..=3).map(|_| format!("127.0.0.1:{}", free_port())).collect();
    let specs: Vec<BrokerSpec> = (1..=3)
        .zip(&metrics)
        .map(|(id, m)| {
            spec(
                &chroot,
                id,
                &[("min.insync.replicas", "2"), ("replica.lag.time.max.ms", "3000")],
            )
            .port(free_port())
            .with("metrics.listener", m)
        })
        .collect();
    let dirs: Vec<[PathBuf; 2]> = (1..=3).map(|id| log_dirs(root.path(), id, &failing.mount)).collect();
    let start = |i: usize| {
        let tmp = tempfile::Builder::new()
            .prefix("kastle-broker-")
            .tempdir()
            .expect("tempdir");
        let joined = format!("{},{}", dirs[i][0].display(), dirs[i][1].display());
        BrokerProcess::start_in(&specs[i], tmp, PathBuf::from(joined))
    };
    let mut brokers: Vec<BrokerProcess> = (0..3).map(start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;

    // topic2 first: on every broker it goes to the first dir (the failing one on broker 1).
    let topic1 = format!("{topic2}-t1");
    create_topic_by_hand(&zk, topic2, r#"{"0":[1,2,3]}"#).await;
    wait_until(Duration::from_secs(30), "topic2 led by broker 1, ISR whole", || async {
        leader(&zk, topic2).await == 1 && isr(&zk, topic2).await.len() == 3
    })
    .await;
    zk.create(
        &format!("/config/topics/{topic1}"),
        br#"{"version":1,"config":{"min.insync.replicas":"1"}}"#,
        CreateMode::Persistent,
    )
    .await
    .expect("topic1's config");
    create_topic_by_hand(&zk, &topic1, r#"{"0":[1,2,3]}"#).await;
    wait_until(Duration::from_secs(30), "topic1 led by broker 1, ISR whole", || async {
        leader(&zk, &topic1).await == 1 && isr(&zk, &topic1).await.len() == 3
    })
    .await;
    assert_eq!(
        holding(&dirs[0], topic2),
        Some(dirs[0][0].clone()),
        "topic2 on broker 1's failing dir"
    );
    assert_eq!(
        holding(&dirs[0], &topic1),
        Some(dirs[0][1].clone()),
        "topic1 on broker 1's healthy dir"
    );
    let boot = bootstrap(&zk).await;
    let w2 = Workload::start(&boot, topic2, "all", true, RATE);
    let w1 = Workload::start(&boot, &topic1, "all", true, RATE);
    w2.wait_more(300, Duration::from_secs(60), "300 acknowledged on topic2")
        .await;
    w1.wait_more(300, Duration::from_secs(60), "300 acknowledged on topic1")
        .await;

    let mut events = zk
        .watch("/log_dir_event_notification", WatchMode::PersistentRecursive)
        .await
        .expect("watch the notifications");
    let failed = Instant::now();
    match fault {
        Fault::Shutdown => failing.shut_down(),
        Fault::Full => failing.fill(),
    }
    .unwrap_or_else(|e| panic!("cannot fail the disk: {e}"));
    let mut failures = Vec::new();
    let notified = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await {
                Some(WatchEvent::Created { path }) if path.contains("log_dir_event_") => return path,
                Some(_) => continue,
                None => return String::new(),
            }
        }
    })
    .await;
    match notified {
        Ok(path) if !path.is_empty() => eprintln!("{name}: {path} after {:?}", failed.elapsed()),
        _ => failures.push("no log_dir_event notification within 30 s".to_string()),
    }
    wait_until(
        Duration::from_secs(30),
        "broker 1 out of topic2's leadership and ISR",
        || async { leader(&zk, topic2).await != 1 && !isr(&zk, topic2).await.contains(&1) },
    )
    .await;
    eprintln!("{name}: broker 1 out of topic2 {:?} after the fault", failed.elapsed());
    wait_until(Duration::from_secs(20), "the notification consumed", || async {
        zk.children("/log_dir_event_notification")
            .await
            .map(|c| c.is_empty())
            .unwrap_or(true)
    })
    .await;
    if brokers[0].has_exited() || !registered(&zk, 1).await {
        failures.push(format!(
            "broker 1 did not stay up:\n{}",
            common::stress::tail(&brokers[0].stderr(), 20)
        ));
    }
    w2.wait_more(
        300,
        Duration::from_secs(60),
        "300 acknowledged on topic2 after the fault",
    )
    .await;
    w1.wait_more(
        300,
        Duration::from_secs(60),
        "300 acknowledged on topic1 after the fault",
    )
    .await;
    let topic2_dirs: Vec<PathBuf> = dirs[1..].iter().filter_map(|d| holding(d, topic2)).collect();
    let case = Case {
        name: &case2,
        faults: match fault {
            Fault::Shutdown => "EXT4_IOC_SHUTDOWN of the leader's dir",
            Fault::Full => "the leader's 16 MiB tmpfs dir filled (ENOSPC)",
        },
        topic: topic2,
        idempotent: true,
        expect_loss: false,
    };
    let report2 = judge(&case, &zk, &topic2_dirs, &metrics, &boot, w2).await;
    report2.print_with(&failures);

    // The other two stop: topic1 still serves from broker 1's healthy dir, alone in its ISR.
    for b in &brokers[1..] {
        b.signal("TERM");
    }
    for b in &mut brokers[1..] {
        b.wait_exit(Duration::from_secs(60)).await;
    }
    wait_until(
        Duration::from_secs(30),
        "topic1 led by broker 1 with ISR [1]",
        || async { leader(&zk, &topic1).await == 1 && isr(&zk, &topic1).await == vec![1] },
    )
    .await;
    w1.wait_more(300, Duration::from_secs(60), "topic1 acknowledged by broker 1 alone")
        .await;
    for (i, spec) in specs.iter().enumerate().skip(1) {
        let dead = brokers.remove(i);
        brokers.insert(i, dead.restart(spec));
    }
    wait_until(Duration::from_secs(60), "topic1's ISR whole again", || async {
        isr(&zk, &topic1).await.len() == 3
    })
    .await;
    let topic1_dirs: Vec<PathBuf> = dirs.iter().filter_map(|d| holding(d, &topic1)).collect();
    let case = Case {
        name: &case1,
        faults: "then the other two brokers stopped, restarted",
        topic: &topic1,
        idempotent: true,
        expect_loss: false,
    };
    let report1 = judge(&case, &zk, &topic1_dirs, &metrics, &boot, w1).await;
    report1.print();
    eprintln!("{name} took {:?}", began.elapsed());
    report2.assert_passed_with(&failures);
    report1.assert_passed();
    zk.close().await;
    drop(brokers);
    drop(failing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r12_a_dead_log_dir_moves_its_partitions_and_the_broker_keeps_serving_the_rest() {
    let _serial = SERIAL.lock().await;
    disk_failure_case("R12 log-dir failure", "r12", Fault::Shutdown).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r13_a_full_log_dir_is_a_log_dir_failure_not_a_crash() {
    let _serial = SERIAL.lock().await;
    disk_failure_case("R13 disk full", "r13", Fault::Full).await;
}
