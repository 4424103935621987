//! Leader-epoch truncation against real broker processes (reliability.md R09, R10; KIP-101,
//! KIP-279): after an unclean election the old leader's divergent tail is truncated to the new
//! leader's log, and repeated leader kills never make offsets go backwards or replicas diverge.

mod common;

use std::time::Duration;

use common::cluster::{cluster_ready, create_topic_by_hand};
use common::replicas::{batch_crcs, isr, leader, leader_log_end, log_end, produce_request};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

const SESSION_MS: u64 = 3_000;

fn specs(chroot: &str, extra: &[(&str, &str)]) -> Vec<BrokerSpec> {
    (1..=2)
        .map(|id| {
            extra.iter().fold(
                BrokerSpec::new(id, &zookeeper().connect(chroot)).session_timeout_ms(SESSION_MS),
                |s, (k, v)| s.with(k, v),
            )
        })
        .collect()
}

async fn setup(zk: &ZkSession, topic: &str) {
    cluster_ready(zk, 2).await;
    create_topic_by_hand(zk, topic, r#"{"0":[1,2]}"#).await;
    wait_until(Duration::from_secs(20), "both replicas in the ISR", || async {
        leader(zk, topic).await == 1 && isr(zk, topic).await == vec![1, 2]
    })
    .await;
}

/// Produces one record to broker `to`, retrying (as clients do) while it answers
/// NOT_LEADER_OR_FOLLOWER: the state znode can name it leader a moment before it has applied
/// its LeaderAndIsr. Nothing is appended by a refused request, so the retry adds no duplicate.
async fn produce(zk: &ZkSession, to: i32, topic: &str, acks: i16, value: &str) {
    let addr = bootstrap_of(zk, to).await;
    let code = std::sync::atomic::AtomicI16::new(-1);
    let (addr, code_ref) = (&addr, &code);
    wait_until(
        Duration::from_secs(20),
        &format!("broker {to} to take {value} as leader"),
        move || async move {
            let mut wire = Wire::connect(addr).await;
            let r = wire.send(&produce_request(topic, acks, value.as_bytes()), 7).await;
            let c = r.responses[0].partition_responses[0].error_code;
            code_ref.store(c, std::sync::atomic::Ordering::SeqCst);
            c != 6
        },
    )
    .await;
    assert_eq!(code.into_inner(), 0, "produce {value} to {to}");
}

async fn gone(zk: &ZkSession, id: i32) {
    wait_until(Duration::from_secs(20), "the registration to expire", || async {
        zk.exists(&format!("/brokers/ids/{id}")).await.ok().flatten().is_none()
    })
    .await;
}

/// R09 (a) / R10: broker 1 writes m2 that broker 2 never gets; broker 2 is elected uncleanly
/// and writes m3 at the same offset. When broker 1 returns it must drop m2 and take m3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unclean_election_truncates_the_old_leaders_divergent_tail() {
    let chroot = unique_chroot("epoch-unclean");
    let specs = specs(&chroot, &[("unclean.leader.election.enable", "true")]);
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    setup(&zk, "diverge").await;
    produce(&zk, 1, "diverge", -1, "m1").await;

    brokers[1].signal("KILL");
    gone(&zk, 2).await;
    wait_until(Duration::from_secs(20), "ISR [1]", || async {
        isr(&zk, "diverge").await == vec![1]
    })
    .await;
    produce(&zk, 1, "diverge", 1, "m2-only-on-1").await;
    let old_tail = batch_crcs(&brokers[0].log_dir, "diverge", 0);
    assert_eq!(old_tail.len(), 2);

    brokers[0].signal("KILL");
    gone(&zk, 1).await;
    let b2 = brokers.remove(1).restart(&specs[1]);
    brokers.insert(1, b2);
    wait_until(Duration::from_secs(30), "broker 2 elected uncleanly", || async {
        leader(&zk, "diverge").await == 2
    })
    .await;
    produce(&zk, 2, "diverge", 1, "m3-on-2").await;
    produce(&zk, 2, "diverge", 1, "m4-on-2").await;

    let b1 = brokers.remove(0).restart(&specs[0]);
    brokers.insert(0, b1);
    wait_until(
        Duration::from_secs(30),
        "broker 1 back in the ISR with broker 2's log",
        || async {
            isr(&zk, "diverge").await == vec![1, 2]
                && log_end(&brokers[0].log_dir, "diverge", 0) == log_end(&brokers[1].log_dir, "diverge", 0)
        },
    )
    .await;
    let on1 = batch_crcs(&brokers[0].log_dir, "diverge", 0);
    let on2 = batch_crcs(&brokers[1].log_dir, "diverge", 0);
    assert_eq!(on1, on2, "replicas identical");
    assert_eq!(on1.len(), 3, "m1, m3, m4");
    assert_eq!(on1[0], old_tail[0], "m1 kept");
    assert_ne!(on1[1], old_tail[1], "m2 truncated away");
    zk.close().await;
}

/// R10 shouldSurviveFastLeaderChange ×5 and R09 (c): kill -9 the leader five times while
/// writing with acks=all; offsets never go backwards, every acknowledged record is in both
/// replicas, and the replicas stay identical.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_leader_kills_never_lose_or_rewind_acknowledged_offsets() {
    const PER_ROUND: i64 = 20;
    let chroot = unique_chroot("epoch-fast");
    let specs = specs(&chroot, &[]);
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    setup(&zk, "bouncy").await;
    let mut written = 0;
    for round in 0..5 {
        let l = leader(&zk, "bouncy").await;
        assert!(l > 0, "round {round}: a leader");
        let mut wire = Wire::connect(&bootstrap_of(&zk, l).await).await;
        for i in 0..PER_ROUND {
            let r = wire
                .send(&produce_request("bouncy", -1, format!("r{round}-{i}").as_bytes()), 7)
                .await;
            let p = &r.responses[0].partition_responses[0];
            assert_eq!(p.error_code, 0, "round {round} record {i}");
            assert_eq!(p.base_offset, written, "offsets never go backwards");
            written += 1;
        }
        assert_eq!(leader_log_end(&mut wire, "bouncy").await, written);
        let i = (l - 1) as usize;
        brokers[i].signal("KILL");
        wait_until(Duration::from_secs(20), "the other replica to lead", || async {
            let now = leader(&zk, "bouncy").await;
            now > 0 && now != l
        })
        .await;
        gone(&zk, l).await;
        let b = brokers.remove(i).restart(&specs[i]);
        brokers.insert(i, b);
        wait_until(
            Duration::from_secs(30),
            "the restarted broker back in the ISR",
            || async { isr(&zk, "bouncy").await == vec![1, 2] },
        )
        .await;
    }
    wait_until(Duration::from_secs(20), "both replicas at the written end", || async {
        brokers.iter().all(|b| log_end(&b.log_dir, "bouncy", 0) == written)
    })
    .await;
    assert_eq!(
        batch_crcs(&brokers[0].log_dir, "bouncy", 0),
        batch_crcs(&brokers[1].log_dir, "bouncy", 0)
    );
    zk.close().await;
}
