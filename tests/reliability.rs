//! The reliability matrix (reliability.md §3): each case is a fault against real ZooKeeper and
//! broker processes while an acks=all producer runs, judged by the one checker in
//! `common::reliability` (lost, duplicated, reordered, inconsistent offsets, divergent
//! replicas, the controller, the ZooKeeper tree), which prints the case's row of the table.
//! R06n is the negative control: an unsafe setup under the same fault, where the checker must
//! report loss. The cases run one at a time (they share two cores); the network cases put
//! every broker in its own namespace and skip, saying why, where namespaces are unavailable.
//! `scripts/reliability` runs them and prints the whole table; `--all` adds the `#[ignore]`d.

mod common;

use std::time::{Duration, Instant};

use common::cluster::controller_epoch;
use common::faults::{
    a_follower, dirs, disrupt, loopback, metrics_of, netns_cluster, registered, victim, Fault, NetCluster, Target, SAFE,
};
use common::netns::Lab;
use common::reliability::{check, finish, table, Ack, Case, CaseReport, Read, Workload, HEADER};
use common::replicas::{bootstrap, create_topic, isr, leader};
use common::{unique_chroot, wait_until};

/// One case at a time: each runs three brokers, a ZooKeeper and the clients on two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Records per second of the workload.
const RATE: u32 = 300;

/// The checker itself finds each anomaly it is meant to find.
#[test]
fn the_checker_reports_each_kind_of_anomaly() {
    let ack = |value, offset| Ack {
        value,
        offset,
        at_ms: 1_000 + value * 10,
    };
    let read = |offset, value| Read { offset, value };
    let acks: Vec<Ack> = (0..5).map(|v| ack(v, v)).collect();
    let clean: Vec<Read> = (0..5).map(|v| read(v, v)).collect();
    let a = check(&acks, &clean);
    assert_eq!(
        (
            a.acknowledged,
            a.lost.len(),
            a.duplicated.len(),
            a.reordered,
            a.inconsistent
        ),
        (5, 0, 0, 0, 0)
    );
    assert_eq!(a.max_gap, Duration::from_millis(10));

    // Offsets 3 and 4 truncated and overwritten by another leader's values.
    let truncated = vec![read(0, 0), read(1, 1), read(2, 2), read(3, 7), read(4, 8)];
    let a = check(&acks, &truncated);
    assert_eq!(a.lost, vec![3, 4]);
    assert_eq!(a.inconsistent, 2);

    let duplicated = vec![read(0, 0), read(1, 1), read(2, 1), read(3, 2), read(4, 3), read(5, 4)];
    let a = check(&acks, &duplicated);
    assert_eq!(a.duplicated, vec![1]);
    assert!(a.inconsistent > 0, "acknowledged offsets no longer match");

    let reordered = vec![read(0, 0), read(1, 2), read(2, 1), read(3, 3), read(4, 4)];
    assert_eq!(check(&acks, &reordered).reordered, 1);
    let backwards = vec![read(0, 0), read(1, 1), read(1, 1), read(3, 3), read(4, 4)];
    assert!(check(&acks, &backwards).inconsistent > 0);

    let printed = table(&[HEADER.to_string(), "R00\tnone\t5".to_string()]);
    assert!(
        printed.lines().nth(1).is_some_and(|l| l.starts_with("R00   none")),
        "{printed}"
    );
}

/// A lab leaves nothing behind when dropped, also when its test panics.
#[test]
fn a_network_lab_removes_its_namespaces_and_links_when_dropped() {
    if let Some(reason) = Lab::unavailable() {
        eprintln!("skipped: {reason}");
        return;
    }
    let listed = || {
        let out = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .expect("ip netns list");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let names = std::panic::catch_unwind(|| {
        let lab = Lab::new(2);
        let names = lab.namespaces();
        assert!(names.iter().all(|n| listed().contains(n.as_str())), "{}", listed());
        lab.cut(1, 2);
        lab.cut_from_host(1);
        std::panic::panic_any(names)
    })
    .expect_err("the closure panics")
    .downcast::<Vec<String>>()
    .expect("the names");
    let now = listed();
    assert!(names.iter().all(|n| !now.contains(n.as_str())), "left behind: {now}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r01_smoke_loses_nothing_without_faults() {
    let _serial = SERIAL.lock().await;
    let chroot = unique_chroot("r01");
    let (zk, specs, brokers) = loopback(&chroot, 3, &SAFE).await;
    create_topic(&zk, "r01", "[1,2,3]").await;
    let boot = bootstrap(&zk).await;
    let workload = Workload::start(&boot, "r01", "all", true, RATE);
    workload
        .wait_more(3_000, Duration::from_secs(60), "3,000 acknowledged")
        .await;
    let case = Case {
        name: "R01 smoke",
        faults: "none",
        topic: "r01",
        idempotent: true,
        expect_loss: false,
    };
    let report = finish(&case, &zk, &dirs(&brokers), &metrics_of(&specs), &boot, workload).await;
    report.assert_passed();
    assert!(report.anomalies.acknowledged >= 3_000);
    assert!(
        report.anomalies.max_gap < Duration::from_secs(1),
        "an acknowledgement took {:?} without any fault",
        report.anomalies.max_gap
    );
    zk.close().await;
}

/// `rounds` times: `fault` on the `target` broker under the workload, then wait for the ISR to
/// be whole again and for 300 more acknowledgements. The checker's row is returned.
async fn process_fault_case(case: &Case<'_>, target: Target, fault: Fault, rounds: usize) -> CaseReport {
    let chroot = unique_chroot(case.topic);
    let (zk, specs, mut brokers) = loopback(&chroot, 3, &SAFE).await;
    create_topic(&zk, case.topic, "[1,2,3]").await;
    let boot = bootstrap(&zk).await;
    let workload = Workload::start(&boot, case.topic, "all", true, RATE);
    workload
        .wait_more(500, Duration::from_secs(60), "500 acknowledged")
        .await;
    for round in 1..=rounds {
        let old = victim(&zk, target, case.topic).await;
        assert!(old > 0, "a {target:?} to disrupt");
        let epoch = controller_epoch(&zk).await;
        let started = Instant::now();
        disrupt(&zk, &mut brokers, &specs, old, target, fault, case.topic).await;
        eprintln!(
            "{} round {round}: taken over and the broker back {:?} after the fault",
            case.name,
            started.elapsed()
        );
        if target == Target::Controller {
            let now = controller_epoch(&zk).await;
            assert!(now > epoch, "/controller_epoch moved on ({epoch} -> {now})");
        }
        wait_until(Duration::from_secs(60), "the ISR back to 3", || async {
            isr(&zk, case.topic).await.len() == 3
        })
        .await;
        workload
            .wait_more(300, Duration::from_secs(60), "300 more acknowledged")
            .await;
    }
    let report = finish(case, &zk, &dirs(&brokers), &metrics_of(&specs), &boot, workload).await;
    zk.close().await;
    report
}

const fn safe_case<'a>(name: &'a str, faults: &'a str, topic: &'a str) -> Case<'a> {
    Case {
        name,
        faults,
        topic,
        idempotent: true,
        expect_loss: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r02_leader_clean_bounce_three_times_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let case = safe_case("R02 leader clean bounce", "3x SIGTERM leader", "r02");
    let report = process_fault_case(&case, Target::Leader, Fault::Term, 3).await;
    report.assert_passed();
    assert!(
        report.anomalies.max_gap <= Duration::from_secs(5),
        "a controlled shutdown stopped acknowledgements for {:?}",
        report.anomalies.max_gap
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r03_leader_hard_bounce_three_times_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let case = safe_case("R03 leader hard bounce", "3x kill -9 leader", "r03");
    process_fault_case(&case, Target::Leader, Fault::Kill, 3)
        .await
        .assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r04_controller_hard_bounce_twice_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let case = safe_case("R04 controller hard bounce", "2x kill -9 controller", "r04");
    process_fault_case(&case, Target::Controller, Fault::Kill, 2)
        .await
        .assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "heavier: scripts/reliability --all (tests/replication.rs covers a paused leader in CI)"]
async fn r07_zombie_leader_acknowledges_nothing_after_its_epoch() {
    let _serial = SERIAL.lock().await;
    let case = safe_case("R07 zombie leader", "SIGSTOP leader past session", "r07");
    process_fault_case(&case, Target::Leader, Fault::Pause, 1)
        .await
        .assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "heavier: scripts/reliability --all"]
async fn r08_zombie_controller_leaves_one_controller() {
    let _serial = SERIAL.lock().await;
    let case = safe_case("R08 zombie controller", "SIGSTOP controller past session", "r08");
    process_fault_case(&case, Target::Controller, Fault::Pause, 1)
        .await
        .assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r05_an_isolated_follower_leaves_the_isr_and_returns_after_healing() {
    let _serial = SERIAL.lock().await;
    let Some(c) = netns_cluster("R05 follower isolation", "r05", 3, &SAFE).await else {
        return;
    };
    create_topic(&c.zk, "r05", "[1,2,3]").await;
    let boot = bootstrap(&c.zk).await;
    let workload = Workload::start(&boot, "r05", "all", true, RATE);
    workload
        .wait_more(500, Duration::from_secs(60), "500 acknowledged")
        .await;
    let f = a_follower(&c.zk, "r05", 3).await;
    for other in (1..=3).filter(|o| *o != f) {
        c.lab().cut(f as usize, other as usize);
    }
    let cut = Instant::now();
    wait_until(
        Duration::from_secs(15),
        "the isolated follower out of the ISR",
        || async { !isr(&c.zk, "r05").await.contains(&f) },
    )
    .await;
    eprintln!("R05: ISR shrank {:?} after the cut", cut.elapsed());
    workload
        .wait_more(
            500,
            Duration::from_secs(30),
            "acks=all keeps acknowledging with 2 in sync",
        )
        .await;
    c.lab().heal();
    let healed = Instant::now();
    wait_until(Duration::from_secs(30), "the follower back in the ISR", || async {
        isr(&c.zk, "r05").await.len() == 3
    })
    .await;
    eprintln!("R05: ISR expanded {:?} after healing", healed.elapsed());
    workload
        .wait_more(300, Duration::from_secs(30), "300 more acknowledged")
        .await;
    let case = Case {
        name: "R05 follower isolation",
        faults: "netns: follower cut from brokers",
        topic: "r05",
        idempotent: true,
        expect_loss: false,
    };
    finish(&case, &c.zk, &dirs(&c.brokers), &c.metrics, &boot, workload)
        .await
        .assert_passed();
}

/// Jepsen 2013: (1) the leader's followers cut off, so the ISR shrinks to the leader alone;
/// (2) the leader also cut from ZooKeeper, so its session expires; then heal. Returns the
/// records acknowledged during 5 s with the ISR at the leader alone, and the leaders seen in the
/// partition's state while the old leader was gone (until another replica leads when
/// `unclean`, else until the partition has no leader).
async fn jepsen_2013(c: &NetCluster, topic: &str, n: usize, workload: &Workload, unclean: bool) -> (usize, Vec<i32>) {
    let l = leader(&c.zk, topic).await;
    for other in (1..=n as i32).filter(|o| *o != l) {
        c.lab().cut(l as usize, other as usize);
    }
    wait_until(
        Duration::from_secs(20),
        "the ISR shrunk to the leader alone",
        || async { isr(&c.zk, topic).await == vec![l] },
    )
    .await;
    // What the leader does alone: refuses acks=all (min ISR 2), acknowledges acks=1.
    let before = workload.acks().len();
    let alone = Instant::now();
    while alone.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let acked_alone = workload.acks().len() - before;
    eprintln!("{topic}: {acked_alone} acknowledged while the ISR was the leader alone");
    c.lab().cut_from_host(l as usize);
    let mut leaders = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(25) {
        let now = leader(&c.zk, topic).await;
        if leaders.last() != Some(&now) {
            leaders.push(now);
        }
        if now != l && (now >= 0) == unclean && !registered(&c.zk, l).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!registered(&c.zk, l).await, "the cut leader's session expired");
    eprintln!("{topic}: leaders while the old leader {l} was cut: {leaders:?}");
    c.lab().heal();
    wait_until(Duration::from_secs(60), "every replica back in the ISR", || async {
        isr(&c.zk, topic).await.len() == n && leader(&c.zk, topic).await >= 0
    })
    .await;
    (acked_alone, leaders)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r06_jepsen_2013_the_isr_shrunk_to_a_cut_leader_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let Some(c) = netns_cluster("R06 Jepsen 2013", "r06", 3, &SAFE).await else {
        return;
    };
    create_topic(&c.zk, "r06", "[1,2,3]").await;
    let boot = bootstrap(&c.zk).await;
    let workload = Workload::start(&boot, "r06", "all", true, RATE);
    workload
        .wait_more(500, Duration::from_secs(60), "500 acknowledged")
        .await;
    let old = leader(&c.zk, "r06").await;
    let (acked_alone, leaders) = jepsen_2013(&c, "r06", 3, &workload, false).await;
    assert_eq!(
        acked_alone, 0,
        "acks=all acknowledged with the ISR below min.insync.replicas"
    );
    assert!(
        leaders.iter().all(|l| *l == old || *l == -1),
        "a replica outside the ISR [{old}] was elected: {leaders:?}"
    );
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after healing")
        .await;
    let case = Case {
        name: "R06 Jepsen 2013",
        faults: "netns: leader cut from followers, then from ZK",
        topic: "r06",
        idempotent: true,
        expect_loss: false,
    };
    finish(&case, &c.zk, &dirs(&c.brokers), &c.metrics, &boot, workload)
        .await
        .assert_passed();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r06n_negative_control_the_unsafe_setup_loses_acknowledged_records() {
    let _serial = SERIAL.lock().await;
    let unsafe_setup = [
        ("min.insync.replicas", "1"),
        ("replica.lag.time.max.ms", "3000"),
        ("unclean.leader.election.enable", "true"),
    ];
    let Some(c) = netns_cluster("R06n negative control", "r06n", 2, &unsafe_setup).await else {
        return;
    };
    create_topic(&c.zk, "r06n", "[1,2]").await;
    let boot = bootstrap(&c.zk).await;
    let workload = Workload::start(&boot, "r06n", "1", false, RATE);
    workload
        .wait_more(500, Duration::from_secs(60), "500 acknowledged")
        .await;
    let old = leader(&c.zk, "r06n").await;
    let (acked_alone, leaders) = jepsen_2013(&c, "r06n", 2, &workload, true).await;
    assert!(acked_alone > 0, "acks=1 is acknowledged by the leader alone");
    assert!(
        leaders.iter().any(|l| *l >= 0 && *l != old),
        "the replica outside the ISR was elected (unclean election on): {leaders:?}"
    );
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after healing")
        .await;
    let case = Case {
        name: "R06n negative control",
        faults: "R06 on RF 2, min ISR 1, acks=1, unclean",
        topic: "r06n",
        idempotent: false,
        expect_loss: true,
    };
    let report = finish(&case, &c.zk, &dirs(&c.brokers), &c.metrics, &boot, workload).await;
    report.assert_passed();
}
