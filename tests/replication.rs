//! Replication against a real ZooKeeper and real broker processes (reliability.md R04–R07):
//! acks=all with min.insync.replicas=2 loses nothing when the leader is killed or paused past
//! its session, replicas end byte-identical (per-batch CRCs), a lagging follower leaves the ISR
//! in ZooKeeper and comes back after catching up, and an ISR below the minimum refuses acks=all
//! writes without appending. The leader-kill check runs again with the inter-broker listener on
//! mutual TLS, on SASL SCRAM, and on SCRAM inside TLS (SASL_SSL) (`common::inter_broker`).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::cluster::{cluster_ready, controller_of};
use common::inter_broker::{InterBroker, Security};
use common::replicas::{
    batch_crcs, bootstrap, create_topic, isr, leader, leader_log_end, lines, log_end, produce_request, python, spec,
    state, CONSUMER, PRODUCER, SESSION_MS,
};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::ProduceRequest;
use kastle::protocol::error_codes as ec;
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

/// Every acknowledged value is in `consumed`, and acknowledged values first appear in the order
/// they were sent (duplicates from retries are allowed: the producer is not idempotent).
fn assert_no_acked_loss(acked: &[i64], consumed: &[i64]) {
    let acked_set: std::collections::HashSet<i64> = acked.iter().copied().collect();
    let consumed_set: std::collections::HashSet<i64> = consumed.iter().copied().collect();
    let lost: Vec<i64> = acked.iter().copied().filter(|v| !consumed_set.contains(v)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged records lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    let mut seen = std::collections::HashSet::new();
    let firsts: Vec<i64> = consumed
        .iter()
        .copied()
        .filter(|v| acked_set.contains(v) && seen.insert(*v))
        .collect();
    assert!(
        firsts.windows(2).all(|w| w[0] < w[1]),
        "acknowledged records out of order"
    );
}

/// All replicas of `topic-0` hold the same batches (CRC sequence), at least `min_end` offsets.
async fn assert_replicas_identical(zk: &ZkSession, brokers: &[BrokerProcess], topic: &str, min_end: i64) {
    let dirs: Vec<PathBuf> = brokers.iter().map(|b| b.log_dir.clone()).collect();
    wait_until(
        Duration::from_secs(60),
        "every replica in the ISR with the same log end",
        || {
            let dirs = dirs.clone();
            async move {
                let ends: Vec<i64> = dirs.iter().map(|d| log_end(d, topic, 0)).collect();
                isr(zk, topic).await.len() == dirs.len() && ends.iter().all(|e| *e == ends[0] && *e >= min_end)
            }
        },
    )
    .await;
    let first = batch_crcs(&dirs[0], topic, 0);
    assert!(!first.is_empty());
    for d in &dirs[1..] {
        assert_eq!(batch_crcs(d, topic, 0), first, "replica {} diverged", d.display());
    }
}

fn consume_all(bootstrap: &str, topic: &str) -> Vec<i64> {
    let out = python(&["-c", CONSUMER, bootstrap, topic]).output().expect("consumer");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Disruption {
    /// kill -9, then restart on the same log dir.
    Kill,
    /// SIGSTOP past the session timeout, then SIGCONT (R07: a zombie leader).
    Pause,
}

/// 50,000 records with acks=all (RF 3, min ISR 2) while the leader is disrupted; the brokers
/// replicate, and the controller reaches them, over an `inter_broker` listener.
async fn acks_all_survives_the_leader(disruption: Disruption, inter_broker: InterBroker, name: &str) {
    const COUNT: usize = 50_000;
    let chroot = unique_chroot(name);
    let zk = zookeeper().session(&chroot).await;
    let security = Security::new(inter_broker);
    security.prepare(&zk).await;
    let extra = [("min.insync.replicas", "2")];
    let specs: Vec<BrokerSpec> = (1..=3).map(|id| security.apply(spec(&chroot, id, &extra))).collect();
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    cluster_ready(&zk, 3).await;
    create_topic(&zk, "durable", "[1,2,3]").await;
    let first_leader = leader(&zk, "durable").await;
    let boot = bootstrap(&zk).await;

    let acked_file = tempfile::NamedTempFile::new().expect("temp");
    let acked_path = acked_file.path().to_path_buf();
    let producer = python(&[
        "-c",
        PRODUCER,
        &boot,
        "durable",
        &COUNT.to_string(),
        acked_path.to_str().expect("utf-8 temp path"),
    ])
    .stdout(std::process::Stdio::piped())
    .spawn()
    .expect("producer");
    wait_until(Duration::from_secs(60), "10,000 records acknowledged", || {
        let p = acked_path.clone();
        async move { lines(&p).len() >= 10_000 }
    })
    .await;

    let i = (first_leader - 1) as usize;
    match disruption {
        Disruption::Kill => brokers[i].signal("KILL"),
        Disruption::Pause => brokers[i].signal("STOP"),
    }
    let acked_at_disruption = lines(&acked_path).len();
    wait_until(Duration::from_millis(SESSION_MS + 10_000), "a new leader", || async {
        let l = leader(&zk, "durable").await;
        l >= 0 && l != first_leader
    })
    .await;
    match disruption {
        Disruption::Kill => {
            wait_until(Duration::from_secs(20), "the old registration to expire", || async {
                zk.exists(&format!("/brokers/ids/{first_leader}"))
                    .await
                    .ok()
                    .flatten()
                    .is_none()
            })
            .await;
            let old = brokers.remove(i);
            brokers.insert(i, old.restart(&specs[i]));
        }
        Disruption::Pause => brokers[i].signal("CONT"),
    }
    let status = tokio::task::spawn_blocking(move || producer.wait_with_output())
        .await
        .expect("join")
        .expect("producer exit");
    assert!(status.status.success(), "producer failed");
    let acked = lines(&acked_path);
    assert!(
        acked.len() > acked_at_disruption,
        "the producer kept going after the disruption"
    );

    let boot = bootstrap(&zk).await;
    assert_replicas_identical(&zk, &brokers, "durable", 0).await;
    let consumed = tokio::task::spawn_blocking(move || consume_all(&boot, "durable"))
        .await
        .expect("consumer");
    assert_no_acked_loss(&acked, &consumed);
    assert!(consumed.len() >= COUNT.min(acked.len()));
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_loses_nothing_when_the_leader_is_killed_and_restarted() {
    acks_all_survives_the_leader(Disruption::Kill, InterBroker::Plaintext, "repl-kill").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_loses_nothing_when_the_leader_is_killed_and_restarted_with_mutual_tls_between_brokers() {
    acks_all_survives_the_leader(Disruption::Kill, InterBroker::Ssl, "repl-kill-ssl").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_loses_nothing_when_the_leader_is_killed_and_restarted_with_scram_between_brokers() {
    acks_all_survives_the_leader(Disruption::Kill, InterBroker::SaslPlaintext, "repl-kill-sasl").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_loses_nothing_when_the_leader_is_killed_and_restarted_with_sasl_ssl_between_brokers() {
    acks_all_survives_the_leader(Disruption::Kill, InterBroker::SaslSsl, "repl-kill-sasl-ssl").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_acknowledges_nothing_after_losing_leadership_and_truncates_to_the_new_one() {
    acks_all_survives_the_leader(Disruption::Pause, InterBroker::Plaintext, "repl-pause").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_follower_leaves_the_isr_and_returns_after_restart_and_below_min_isr_acks_all_is_refused() {
    const LAG_MS: u64 = 2_000;
    let chroot = unique_chroot("repl-isr");
    let lag = LAG_MS.to_string();
    // The session outlives the lag, so the leader's own ISR check (not the controller's
    // dead-broker handling) is what shrinks the ISR.
    let extra = [("min.insync.replicas", "2"), ("replica.lag.time.max.ms", lag.as_str())];
    let metrics = format!("127.0.0.1:{}", common::zookeeper::free_port());
    let specs: Vec<BrokerSpec> = (1..=3)
        .map(|id| spec(&chroot, id, &extra).session_timeout_ms(6_000))
        .map(|s| {
            if s.id == 1 {
                s.with("metrics.listener", &metrics)
            } else {
                s
            }
        })
        .collect();
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    create_topic(&zk, "lagging", "[1,2,3]").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
    let ok = wire.send(&produce_request("lagging", -1, b"before"), 7).await;
    assert_eq!(ok.responses[0].partition_responses[0].error_code, 0);
    let (_, version_before) = state(&zk, "lagging", 0).await.expect("state");

    // Follower 3 is killed: the leader drops it from the ISR in ZooKeeper.
    brokers[2].signal("KILL");
    let stopped = std::time::Instant::now();
    // (An idle follower at the leader's end stays in sync, as in Kafka: give it something to miss.)
    let more = wire.send(&produce_request("lagging", 1, b"missed"), 7).await;
    assert_eq!(more.responses[0].partition_responses[0].error_code, 0);
    wait_until(
        Duration::from_millis(LAG_MS + 5_000),
        "the ISR to shrink in ZooKeeper",
        || async { isr(&zk, "lagging").await == vec![1, 2] },
    )
    .await;
    let (s, version) = state(&zk, "lagging", 0).await.expect("state");
    assert!(
        version > version_before,
        "a conditional write bumps the partition epoch"
    );
    assert_eq!(
        s.leader.0, 1,
        "the leader itself shrank the ISR, keeping its leadership"
    );
    eprintln!("ISR shrank {:?} after the follower was killed", stopped.elapsed());
    common::wait_for_metrics(
        &metrics,
        &[
            "kafka_server_replicamanager_isrshrinks_total 1",
            "kafka_server_replicamanager_underreplicatedpartitions 1",
            "kafka_server_replicamanager_leadercount 1",
            "kafka_server_replicamanager_partitioncount 1",
        ],
    )
    .await;
    // The change is announced through /isr_change_notification and consumed by the controller.
    wait_until(
        Duration::from_secs(20),
        "the ISR change notification to be consumed",
        || async {
            let listed = common::replicas::metadata_isr(&zk, 2, "lagging").await;
            listed == vec![1, 2]
                && zk
                    .children("/isr_change_notification")
                    .await
                    .map(|c| c.is_empty())
                    .unwrap_or(false)
        },
    )
    .await;

    // It restarts (once its old session is gone), catches up and is added back.
    wait_until(
        Duration::from_secs(20),
        "the killed follower's registration to expire",
        || async { zk.exists("/brokers/ids/3").await.ok().flatten().is_none() },
    )
    .await;
    let killed = brokers.remove(2);
    brokers.push(killed.restart(&specs[2]));
    wait_until(Duration::from_secs(30), "the ISR to expand again", || async {
        isr(&zk, "lagging").await == vec![1, 2, 3]
    })
    .await;
    common::wait_for_metrics(
        &metrics,
        &[
            "kafka_server_replicamanager_isrexpands_total 1",
            "kafka_server_replicamanager_underreplicatedpartitions 0",
        ],
    )
    .await;

    // Both followers gone: the ISR falls to the leader alone, below min.insync.replicas = 2.
    brokers[1].signal("STOP");
    brokers[2].signal("STOP");
    let more = wire.send(&produce_request("lagging", 1, b"missed"), 7).await;
    assert_eq!(more.responses[0].partition_responses[0].error_code, 0);
    wait_until(Duration::from_secs(20), "an ISR of one", || async {
        isr(&zk, "lagging").await == vec![1]
    })
    .await;
    common::wait_for_metrics(&metrics, &["kafka_server_replicamanager_underminisrpartitioncount 1"]).await;
    let end_before = leader_log_end(&mut wire, "lagging").await;
    let refused = wire.send(&produce_request("lagging", -1, b"refused"), 7).await;
    assert_eq!(
        refused.responses[0].partition_responses[0].error_code,
        ec::NOT_ENOUGH_REPLICAS,
        "NOT_ENOUGH_REPLICAS"
    );
    assert_eq!(
        leader_log_end(&mut wire, "lagging").await,
        end_before,
        "nothing appended"
    );
    let acks1 = wire.send(&produce_request("lagging", 1, b"acks1"), 7).await;
    assert_eq!(
        acks1.responses[0].partition_responses[0].error_code, 0,
        "acks=1 still works"
    );
    for b in &brokers[1..] {
        b.signal("CONT");
    }
    zk.close().await;
}

/// A leader's own ISR write reaches the controller seconds later (batched notifications), so
/// the controller must read the state znode before deciding: a controlled shutdown right after
/// an ISR shrink moves leadership to the member still in sync, not to the one the leader
/// removed (which would lose what only the ISR has).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_decides_on_the_isr_the_leader_just_wrote() {
    let chroot = unique_chroot("repl-fresh-isr");
    let extra = [("replica.lag.time.max.ms", "2000")];
    let specs: Vec<BrokerSpec> = (1..=3)
        .map(|id| spec(&chroot, id, &extra).session_timeout_ms(20_000))
        .collect();
    let brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let controller = controller_of(&zk).await.expect("controller");
    let others: Vec<i32> = (1..=3).filter(|b| *b != controller).collect();
    let (leader_id, paused) = (others[0], others[1]);
    // The paused follower comes right after the leader in assignment order.
    create_topic(&zk, "fresh", &format!("[{leader_id},{paused},{controller}]")).await;
    wait_until(Duration::from_secs(20), "the full ISR", || async {
        isr(&zk, "fresh").await.len() == 3
    })
    .await;
    brokers[(paused - 1) as usize].signal("STOP");
    let mut wire = Wire::connect(&bootstrap_of(&zk, leader_id).await).await;
    let r = wire.send(&produce_request("fresh", 1, b"missed"), 7).await;
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let mut expected = vec![leader_id, controller];
    expected.sort();
    wait_until(
        Duration::from_secs(10),
        "the leader to drop the paused follower",
        || async { isr(&zk, "fresh").await == expected },
    )
    .await;
    brokers[(leader_id - 1) as usize].signal("TERM");
    wait_until(Duration::from_secs(20), "leadership to move", || async {
        let l = leader(&zk, "fresh").await;
        l >= 0 && l != leader_id
    })
    .await;
    assert_eq!(
        leader(&zk, "fresh").await,
        controller,
        "elected from the ISR in ZooKeeper"
    );
    // And by the controlled shutdown itself, at the first try (a decision on the stale ISR
    // would fail its conditional write and leave the move to the broker's deregistration).
    let mut stopping = brokers;
    let status = stopping[(leader_id - 1) as usize]
        .wait_exit(Duration::from_secs(30))
        .await;
    assert!(status.success());
    let log = stopping[(leader_id - 1) as usize].stderr();
    assert!(log.contains("controlled shutdown succeeded"), "{log}");
    assert!(!log.contains("retrying"), "{log}");
    stopping[(paused - 1) as usize].signal("CONT");
    zk.close().await;
}

/// A caught-up follower's fetch moves the HW and then waits for new data: the acks=all produce
/// that HW completes is answered at once, not when that fetch returns after
/// replica.fetch.wait.max.ms (which capped one producer connection at ~2 requests a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_is_answered_when_the_hw_moves_not_when_the_follower_fetch_returns() {
    const FETCH_WAIT_MS: u64 = 3_000;
    let chroot = unique_chroot("repl-ackwake");
    let wait = FETCH_WAIT_MS.to_string();
    let extra = [
        ("min.insync.replicas", "2"),
        ("replica.fetch.wait.max.ms", wait.as_str()),
    ];
    let _brokers: Vec<BrokerProcess> = (1..=2)
        .map(|id| BrokerProcess::start(&spec(&chroot, id, &extra)))
        .collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    create_topic(&zk, "ackwake", "[1,2]").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
    // The first one may wait for the follower's first fetch. The leader is in ZooKeeper before
    // its LeaderAndIsr reaches broker 1: until then it answers UNKNOWN_TOPIC_OR_PARTITION.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let first = wire.send(&produce_request("ackwake", -1, b"first"), 7).await;
        let code = first.responses[0].partition_responses[0].error_code;
        if code == ec::UNKNOWN_TOPIC_OR_PARTITION && std::time::Instant::now() < deadline {
            tokio::task::yield_now().await;
            continue;
        }
        assert_eq!(code, 0, "the first produce");
        break;
    }
    for i in 0..5 {
        let started = std::time::Instant::now();
        let acked = wire.send(&produce_request("ackwake", -1, b"next"), 7).await;
        let took = started.elapsed();
        assert_eq!(acked.responses[0].partition_responses[0].error_code, 0);
        assert!(
            took < Duration::from_millis(FETCH_WAIT_MS / 3),
            "acks=all produce {i} took {took:?}: it waited for the follower's fetch to return"
        );
    }
    zk.close().await;
}

/// librdkafka pipelines produce requests (up to a million in flight on a connection). An
/// acks=all produce waiting for its followers must not hold back the requests behind it:
/// otherwise every request costs a replication round trip, the connection falls behind at a
/// request per record and latency grows to the socket buffers' worth (hundreds of ms at
/// 10 MB/s). With the follower paused the first cannot complete, yet the second is appended;
/// both are answered, in order, once the follower resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acks_all_produce_waiting_for_a_follower_does_not_hold_back_the_next_on_its_connection() {
    let chroot = unique_chroot("repl-pipelined");
    let specs: Vec<BrokerSpec> = (1..=2)
        .map(|id| spec(&chroot, id, &[]).session_timeout_ms(20_000))
        .collect();
    let brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    create_topic(&zk, "pipelined", "[1,2]").await;
    wait_until(Duration::from_secs(20), "the full ISR", || async {
        isr(&zk, "pipelined").await.len() == 2
    })
    .await;
    let leader_id = leader(&zk, "pipelined").await;
    let follower = 3 - leader_id;
    let addr = bootstrap_of(&zk, leader_id).await;
    let mut wire = Wire::connect(&addr).await;
    let warm = wire.send(&produce_request("pipelined", -1, b"replicated"), 7).await;
    assert_eq!(warm.responses[0].partition_responses[0].error_code, 0);
    brokers[(follower - 1) as usize].pause().await;
    // Timeouts beyond the wait below: without the fix the second is read only once the first
    // is answered.
    let waiting = |value: &[u8]| produce_request("pipelined", -1, value).with_timeout_ms(60_000);
    let first = wire.write(&waiting(b"first"), 7).await;
    let second = wire.write(&waiting(b"second"), 7).await;
    wait_until(
        Duration::from_secs(10),
        "the second produce appended while the first waits for the follower",
        || {
            let addr = addr.clone();
            async move { leader_log_end(&mut Wire::connect(&addr).await, "pipelined").await == 3 }
        },
    )
    .await;
    brokers[(follower - 1) as usize].signal("CONT");
    for (correlation, offset) in [(first, 1), (second, 2)] {
        let r = wire.read::<ProduceRequest>(7, correlation).await;
        let p = &r.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset), (0, offset), "in order, once replicated");
    }
    zk.close().await;
}
