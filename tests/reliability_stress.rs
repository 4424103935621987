//! The reliability matrix's stress cases (reliability.md §3), each with the acks=all workload
//! judged by the shared checker:
//! - R18, the lock order under load (`common::stress`): retention every 100 ms, compaction,
//!   follower and consumer fetches, offsets-partition loads, leadership bursts and 100 ms
//!   checkpoints together for a minute, while every broker must answer ApiVersions within
//!   100 ms (isolated late answers from a busy machine's scheduling are tolerated: see
//!   `stress::LATE_PER_MILLE`) and never freeze;
//! - R19, Metadata consistency while leaders fail (`common::metadata_probe`): the controller (a
//!   leader) paused past its ZooKeeper session, then the next controller (also a leader) killed,
//!   while pollers ask every broker for Metadata; no answer may report a partition with error
//!   NONE whose leader the same answer does not list. A controller that takes over announces the
//!   states it read from ZooKeeper before it elects; kastle's controller also marks a dead
//!   broker's replicas offline in every UpdateMetadata (`protocol_answers.rs` drives the answer
//!   itself with a leader missing from the broker list).

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{cluster_ready, controller_of, create_topic_by_hand, partition_in, state};
use common::reliability::{judge, Case, Workload};
use common::replicas::{bootstrap, isr, spec};
use common::stress::{
    create_led_by_non_preferred, move_leaders, probe, probe_failures, produce, tail, Killed, Probe, BROKERS, LOAD,
    RETAINED_PARTITIONS,
};
use common::zookeeper::free_port;
use common::{bootstrap_of, metadata_probe, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kastle::zk::store::{CreateMode, ZkStore};
use kastle::zk::ZkSession;
use tokio::sync::watch;

/// One case at a time: each runs three brokers, the clients and a load on two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Records per second of the workload.
const RATE: u32 = 300;
/// R18's workload rate: the lock-order load is the point there, and on two cores the
/// workload's own CPU (a Python producer, acks=all replication) adds to the late ApiVersions
/// answers the bound counts.
const R18_RATE: u32 = 100;

/// Brokers 1..=3 on the binary's ZooKeeper, each on a port of its own kept across restarts,
/// with a metrics listener, min ISR 2 and `extra`.
async fn brokers(
    chroot: &str,
    extra: &[(&str, &str)],
) -> (ZkSession, Vec<BrokerSpec>, Vec<BrokerProcess>, Vec<String>) {
    let metrics: Vec<String> = BROKERS.iter().map(|_| format!("127.0.0.1:{}", free_port())).collect();
    let specs: Vec<BrokerSpec> = BROKERS
        .iter()
        .zip(&metrics)
        .map(|(id, m)| {
            spec(chroot, *id, extra)
                .port(free_port())
                .with("min.insync.replicas", "2")
                .with("replica.lag.time.max.ms", "3000")
                .with("metrics.listener", m)
        })
        .collect();
    let brokers = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(chroot).await;
    cluster_ready(&zk, BROKERS.len()).await;
    (zk, specs, brokers, metrics)
}

fn dirs(brokers: &[BrokerProcess]) -> Vec<PathBuf> {
    brokers.iter().map(|b| b.log_dir.clone()).collect()
}

/// The workload's topic, RF 3, kept whole whatever the broker-wide retention says.
async fn workload_topic(zk: &ZkSession, topic: &str) {
    zk.create(
        &format!("/config/topics/{topic}"),
        br#"{"version":1,"config":{"retention.ms":"-1","retention.bytes":"-1"}}"#,
        CreateMode::Persistent,
    )
    .await
    .expect("write the workload topic's config");
    create_topic_by_hand(zk, topic, r#"{"0":[1,2,3]}"#).await;
    wait_until(
        Duration::from_secs(30),
        "the workload's partition led, ISR whole",
        || async { isr(zk, topic).await.len() == 3 && state(zk, topic, 0).await.is_some_and(|s| s.leader.0 > 0) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r18_brokers_keep_answering_and_lose_nothing_under_the_lock_order_load() {
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let chroot = unique_chroot("r18");
    let settings = [
        ("log.retention.check.interval.ms", "100"),
        ("log.segment.bytes", "16384"),
        ("log.retention.bytes", "49152"),
        ("log.retention.ms", "5000"),
        ("log.cleaner.backoff.ms", "100"),
        ("replica.high.watermark.checkpoint.interval.ms", "100"),
        ("log.flush.offset.checkpoint.interval.ms", "100"),
        ("offsets.topic.num.partitions", "3"),
        ("offsets.topic.replication.factor", "3"),
        ("auto.leader.rebalance.enable", "false"),
        ("auto.create.topics.enable", "false"),
    ];
    let (zk, _specs, brokers, metrics) = brokers(&chroot, &settings).await;

    // 12 partitions: the workload's, 7 retained, 1 compacted, 3 of `__consumer_offsets`.
    workload_topic(&zk, "r18").await;
    create_led_by_non_preferred(&zk, "retained", RETAINED_PARTITIONS, 0, "").await;
    create_led_by_non_preferred(
        &zk,
        "compacted",
        1,
        0,
        r#""cleanup.policy":"compact","min.cleanable.dirty.ratio":"0.01","segment.bytes":"8192""#,
    )
    .await;
    create_led_by_non_preferred(
        &zk,
        "__consumer_offsets",
        3,
        1,
        r#""cleanup.policy":"compact","segment.bytes":"16384""#,
    )
    .await;
    for (topic, partitions) in [
        ("retained", RETAINED_PARTITIONS),
        ("compacted", 1),
        ("__consumer_offsets", 3),
    ] {
        for p in 0..partitions {
            wait_until(Duration::from_secs(30), &format!("{topic}-{p} hosted"), || async {
                let Some(s) = state(&zk, topic, p).await else {
                    return false;
                };
                let md = common::cluster::metadata(&zk, s.leader.0).await;
                partition_in(&md, topic, p).is_some_and(|(leader, _, isr)| leader == s.leader.0 && isr.len() == 3)
            })
            .await;
        }
    }
    let mut addrs = Vec::new();
    for id in BROKERS {
        addrs.push(bootstrap_of(&zk, id).await);
    }
    let boot = bootstrap(&zk).await;
    let workload = Workload::start(&boot, "r18", "all", true, R18_RATE);
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged")
        .await;

    let (stop_tx, stop) = watch::channel(false);
    let started = Instant::now();
    let mut probes = tokio::task::JoinSet::new();
    for (id, a) in BROKERS.iter().zip(&addrs) {
        probes.spawn(probe(*id, a.clone(), started, stop.clone()));
    }
    let producers: Vec<_> = addrs
        .iter()
        .map(|a| tokio::spawn(produce(a.clone(), stop.clone())))
        .collect();
    let mover = tokio::spawn(move_leaders(zookeeper().session(&chroot).await, started, stop.clone()));
    let consumer = Killed(
        Command::new("kcat")
            .args(["-b", &addrs.join(","), "-G", "r18-load", "-q"])
            .args(["-X", "auto.commit.interval.ms=200", "-X", "auto.offset.reset=earliest"])
            .args(["retained", "compacted"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kcat consumer"),
    );

    // Run the load; stop early once a broker has frozen.
    let mut ended: Vec<Probe> = Vec::new();
    let deadline = tokio::time::sleep(LOAD);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            done = probes.join_next() => {
                let Some(result) = done else { break };
                let p = result.expect("probe task");
                let stalled = p.stalled_at.is_some();
                ended.push(p);
                if stalled {
                    break;
                }
            }
        }
    }
    stop_tx.send_replace(true);
    while let Some(result) = probes.join_next().await {
        ended.push(result.expect("probe task"));
    }
    drop(consumer);
    let mut produced = Vec::new();
    for p in producers {
        produced.push(p.await.expect("producer task"));
    }
    let (settled, deleted) = mover.await.expect("mover task");
    ended.sort_by_key(|p| p.broker);

    let logs: Vec<String> = brokers.iter().map(|b| b.stderr()).collect();
    let count = |needle: &str| logs.iter().map(|l| l.matches(needle).count()).sum::<usize>();
    let summary = format!(
        "after {:.1} s: probes {:?}; produce requests answered {produced:?}; elections settled {settled}, \
         topics deleted {deleted}; retention passes that deleted {}, cleanings {}, offsets loads {}",
        started.elapsed().as_secs_f64(),
        ended
            .iter()
            .map(|p| format!(
                "broker {}: {} answered, max {:?}, {} late",
                p.broker,
                p.answered,
                p.max,
                p.late.len()
            ))
            .collect::<Vec<_>>(),
        count("retention deleted segments"),
        count("log cleaned"),
        count("offsets partition loaded"),
    );
    eprintln!("{summary}");
    let frozen: Vec<&Probe> = ended.iter().filter(|p| p.stalled_at.is_some()).collect();
    if let Some(p) = frozen.first() {
        // A frozen broker cannot be judged further: its stack is what matters.
        panic!(
            "{}\n{summary}\nbroker {} stderr (tail):\n{}",
            probe_failures(&ended).join("; "),
            p.broker,
            tail(&logs[(p.broker - 1) as usize], 40)
        );
    }
    let mut failures = probe_failures(&ended);
    for p in &ended {
        if !p.late.is_empty() {
            eprintln!(
                "R18: broker {} late answers (s into the load, latency): {:?}",
                p.broker, p.late
            );
        }
    }
    // Debug builds check the lock order (a violation panics the thread that broke it).
    if count("panicked at") > 0 {
        failures.push("a broker thread panicked".to_string());
    }
    // The load really ran: retention deleted, the cleaner cleaned, leaders moved, groups loaded.
    if count("retention deleted segments") == 0 || count("log cleaned") == 0 {
        failures.push("retention or the cleaner never ran".to_string());
    }
    if settled == 0 || deleted == 0 {
        failures.push("no leadership moved or no topic deleted".to_string());
    }
    if count("offsets partition loaded") < 6 {
        failures.push("fewer than 6 offsets-partition loads".to_string());
    }
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after the load")
        .await;
    let case = Case {
        name: "R18 lock-order stress",
        faults: "retention 100 ms, compaction, elections, offsets loads, 60 s",
        topic: "r18",
        idempotent: true,
        expect_loss: false,
    };
    let report = judge(&case, &zk, &dirs(&brokers), &metrics, &boot, workload).await;
    report.print_with(&failures);
    eprintln!("R18 took {:?}; {summary}", began.elapsed());
    report.assert_passed_with(&failures);
    zk.close().await;
}

/// The Metadata topics: preferred leaders 1, 2, 3, so every broker leads a partition of each.
const TOPICS: [&str; 3] = ["ml-a", "ml-b", "ml-c"];
/// How often each poller asks (more often than the matrix's 50 ms: more answers, more chances to
/// catch a window).
const POLL_EVERY: Duration = Duration::from_millis(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn r19_no_metadata_answer_names_a_leader_it_does_not_list_while_leaders_and_controllers_fail() {
    let _serial = SERIAL.lock().await;
    common::init_logging();
    let began = Instant::now();
    let chroot = unique_chroot("r19");
    let (zk, specs, mut brokers, metrics) = brokers(&chroot, &[]).await;
    workload_topic(&zk, "r19").await;
    for topic in TOPICS {
        create_topic_by_hand(&zk, topic, r#"{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2]}"#).await;
    }
    let addrs = [
        bootstrap_of(&zk, 1).await,
        bootstrap_of(&zk, 2).await,
        bootstrap_of(&zk, 3).await,
    ];
    for addr in &addrs {
        wait_until(Duration::from_secs(30), "every partition led, on every broker", || {
            metadata_probe::settled(addr, &TOPICS, 3)
        })
        .await;
    }
    let boot = bootstrap(&zk).await;
    let workload = Workload::start(&boot, "r19", "all", true, RATE);
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged")
        .await;
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(metadata_probe::Seen::default());
    let pollers: Vec<_> = addrs
        .iter()
        .map(|a| tokio::spawn(metadata_probe::poll(a.clone(), POLL_EVERY, stop.clone(), seen.clone())))
        .collect();
    let first = controller_of(&zk).await.expect("a controller");

    // 1. The controller (a leader) stalls past its ZooKeeper session: another broker takes
    //    over, and the stalled one's partitions are still named after it at first.
    brokers[(first - 1) as usize].pause().await;
    wait_until(Duration::from_secs(30), "another controller", || async {
        controller_of(&zk).await.is_some_and(|c| c != first)
    })
    .await;
    brokers[(first - 1) as usize].signal("CONT");
    for addr in &addrs {
        wait_until(Duration::from_secs(40), "leaders again after the pause", || {
            metadata_probe::settled(addr, &TOPICS, 3)
        })
        .await;
    }
    let after_pause = seen.answers();

    // 2. The new controller, also a leader, is killed outright.
    let second = controller_of(&zk).await.expect("a controller");
    let i = (second - 1) as usize;
    brokers[i].signal("KILL");
    wait_until(Duration::from_secs(30), "a controller after the kill", || async {
        controller_of(&zk).await.is_some_and(|c| c != second)
    })
    .await;
    for (j, addr) in addrs.iter().enumerate() {
        if j != i {
            wait_until(Duration::from_secs(40), "leaders again after the kill", || {
                metadata_probe::settled(addr, &TOPICS, 3)
            })
            .await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for p in pollers {
        p.await.expect("poller");
    }
    let answers = seen.answers();
    let bad = seen.bad();
    eprintln!(
        "R19: {answers} Metadata answers ({after_pause} by the end of the pause), {} violations",
        bad.len()
    );
    let mut failures = Vec::new();
    if after_pause <= 50 || answers <= after_pause + 50 {
        failures.push(format!(
            "too few Metadata answers through the failovers ({after_pause}, {answers})"
        ));
    }
    if !bad.is_empty() {
        failures.push(format!(
            "{} Metadata answers named a leader missing from their broker list, e.g. {:?}",
            bad.len(),
            &bad[..bad.len().min(5)]
        ));
    }

    // The killed broker back, so that the checker sees every replica.
    let dead = brokers.remove(i);
    brokers.insert(i, dead.restart(&specs[i]));
    wait_until(Duration::from_secs(60), "the workload's ISR whole again", || async {
        isr(&zk, "r19").await.len() == 3
    })
    .await;
    workload
        .wait_more(300, Duration::from_secs(60), "300 acknowledged after the failovers")
        .await;
    let case = Case {
        name: "R19 Metadata consistency",
        faults: "SIGSTOP controller past session; kill -9 next controller",
        topic: "r19",
        idempotent: true,
        expect_loss: false,
    };
    let report = judge(&case, &zk, &dirs(&brokers), &metrics, &boot, workload).await;
    report.print_with(&failures);
    eprintln!("R19 took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    zk.close().await;
}
