//! The lock order under load: three broker processes with retention checked every 100 ms
//! (small segments, short retention, so it deletes), a compacted topic the cleaner keeps
//! cleaning, high-watermark and recovery-point checkpoints every 100 ms, producers on RF-3
//! topics (so followers fetch), a consumer group (librdkafka through kcat: consumer fetches,
//! offset commits), leadership moves (topics created led by a non-preferred replica, then a
//! preferred election, then deleted; `__consumer_offsets` moved once mid-run, so offsets
//! partitions load on their new leaders), all at once for a minute. Meanwhile every broker is
//! asked for ApiVersions every 50 ms and must answer within 100 ms (isolated late answers from
//! a busy machine's scheduling are tolerated: see [`LATE_PER_MILLE`]) and always within 1 s.
//!
//! A lock-order inversion between a partition's lock and its log's lock (retention once took the
//! log's lock, then the partition's through the high-watermark callback, while fetches take the
//! partition's, then the log's) freezes a broker for good: both runtime workers block and
//! nothing is answered any more. That shows as one probe that never returns.

mod common;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{self, cluster_ready, controller_of, state};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiVersionsRequest, ElectLeadersRequest, ElectLeadersResponse, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;
use kastle::protocol::test_support::{build_batch, KeyValue};
use kastle::zk::store::{CreateMode, Op, ZkStore};
use kastle::zk::ZkSession;
use tokio::sync::watch;

/// How long the load runs.
const LOAD: Duration = Duration::from_secs(60);
/// How often each broker is probed.
const PROBE_EVERY: Duration = Duration::from_millis(50);
/// The documented bound: every broker answers ApiVersions within this.
const ANSWER_WITHIN: Duration = Duration::from_millis(100);
/// Answers later than [`ANSWER_WITHIN`] tolerated per broker: at most 3% of the probes and
/// never [`LATE_IN_A_ROW`] in a row (half a second of misses). On a 2-core machine running three debug
/// brokers, ZooKeeper, a consumer and this test (and on a shared one, other work), the OS now and
/// then schedules a broker late by a few tens of ms past the bound; that is not what this test
/// is after. A lock-order deadlock never answers again, and slowness that lasts shows as misses
/// in a row. Seen while other test binaries ran beside it: up to 1.3 s once and about 1% late.
const LATE_PER_MILLE: usize = 30;
const LATE_IN_A_ROW: usize = 10;
/// A probe unanswered this long is a frozen broker: the test stops there. (The deadlock this
/// guards against froze a broker for good, 4 to 15 s into the load.)
const STALLED: Duration = Duration::from_secs(3);
/// How long the load's own requests may take before their task gives up.
const GIVE_UP: Duration = Duration::from_secs(5);

const BROKERS: [i32; 3] = [1, 2, 3];

/// What one broker's probe saw.
#[derive(Debug, Default)]
struct Probe {
    broker: i32,
    answered: usize,
    max: Duration,
    /// (seconds into the run, latency) of answers slower than [`ANSWER_WITHIN`].
    late: Vec<(f64, Duration)>,
    /// The longest run of consecutive late answers.
    late_in_a_row: usize,
    /// Set when a probe went unanswered for [`STALLED`]: seconds into the run.
    stalled_at: Option<f64>,
}

/// Asks `addr` for ApiVersions every [`PROBE_EVERY`] on one connection until `stop`.
async fn probe(broker: i32, addr: String, started: Instant, stop: watch::Receiver<bool>) -> Probe {
    let mut p = Probe {
        broker,
        ..Probe::default()
    };
    let mut wire = Wire::connect(&addr).await;
    let mut tick = tokio::time::interval(PROBE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut run = 0;
    while !*stop.borrow() {
        tick.tick().await;
        let sent = Instant::now();
        match tokio::time::timeout(STALLED, wire.send(&ApiVersionsRequest::default(), 2)).await {
            Ok(response) => {
                assert_eq!(response.error_code, 0, "broker {broker}: ApiVersions failed");
                let took = sent.elapsed();
                p.answered += 1;
                p.max = p.max.max(took);
                if took > ANSWER_WITHIN {
                    p.late.push((started.elapsed().as_secs_f64(), took));
                    run += 1;
                    p.late_in_a_row = p.late_in_a_row.max(run);
                } else {
                    run = 0;
                }
            }
            Err(_) => {
                p.stalled_at = Some(started.elapsed().as_secs_f64());
                return p;
            }
        }
    }
    p
}

/// `records` keyed records of `size` bytes, keys `k0..k{keys}` from `first`.
fn batch(first: usize, records: usize, keys: usize, size: usize) -> Vec<u8> {
    let values: Vec<(Vec<u8>, Vec<u8>)> = (first..first + records)
        .map(|i| (format!("k{}", i % keys).into_bytes(), vec![b'v'; size]))
        .collect();
    let kv: Vec<KeyValue<'_>> = values
        .iter()
        .map(|(k, v)| (Some(k.as_slice()), Some(v.as_slice())))
        .collect();
    build_batch(0, -1, &kv, kastle::clock::now_ms())
}

fn partition_data(index: i32, records: Vec<u8>) -> PartitionProduceData {
    PartitionProduceData::default()
        .with_index(index)
        .with_records(Some(records.into()))
}

/// Produces to every partition of the load topics through `addr` every 50 ms (the partitions
/// it does not lead answer NOT_LEADER_OR_FOLLOWER). Returns how many requests were answered.
async fn produce(addr: String, stop: watch::Receiver<bool>) -> usize {
    let mut wire = Wire::connect(&addr).await;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut n = 0;
    while !*stop.borrow() {
        tick.tick().await;
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("retained")))
                    .with_partition_data((0..3).map(|p| partition_data(p, batch(n * 4, 4, 1000, 200))).collect()),
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("compacted")))
                    .with_partition_data(vec![partition_data(0, batch(n * 4, 4, 10, 100))]),
            ]);
        // A frozen broker shows in its probe; this only must not keep the test waiting.
        if tokio::time::timeout(GIVE_UP, wire.send(&request, 7)).await.is_err() {
            return n;
        }
        n += 1;
    }
    n
}

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Writes a topic by hand with the state znodes led by each partition's second replica (as
/// after a failover), so a preferred election moves every leader. `config`: the JSON of its
/// `/config/topics` overrides.
async fn create_led_by_non_preferred(zk: &ZkSession, topic: &str, partitions: i32, first: usize, config: &str) {
    let config = format!(r#"{{"version":1,"config":{{{config}}}}}"#);
    zk.create(
        &format!("/config/topics/{topic}"),
        config.as_bytes(),
        CreateMode::Persistent,
    )
    .await
    .expect("write topic config");
    let replicas = |p: i32| -> Vec<i32> { (0..3).map(|i| BROKERS[(first + p as usize + i) % 3]).collect() };
    let assignment: Vec<String> = (0..partitions).map(|p| format!(r#""{p}":{:?}"#, replicas(p))).collect();
    let mut ops = vec![
        Op::Create {
            path: format!("/brokers/topics/{topic}"),
            data: format!(r#"{{"version":1,"partitions":{{{}}}}}"#, assignment.join(",")).into_bytes(),
            mode: CreateMode::Persistent,
        },
        Op::Create {
            path: format!("/brokers/topics/{topic}/partitions"),
            data: vec![],
            mode: CreateMode::Persistent,
        },
    ];
    for p in 0..partitions {
        let r = replicas(p);
        ops.push(Op::Create {
            path: format!("/brokers/topics/{topic}/partitions/{p}"),
            data: vec![],
            mode: CreateMode::Persistent,
        });
        ops.push(Op::Create {
            path: format!("/brokers/topics/{topic}/partitions/{p}/state"),
            data: format!(
                r#"{{"controller_epoch":1,"leader":{},"version":1,"leader_epoch":1,"isr":{r:?}}}"#,
                r[1]
            )
            .into_bytes(),
            mode: CreateMode::Persistent,
        });
    }
    zk.multi(ops).await.expect("write topic and states");
}

/// A preferred election for `targets` at the controller; returns the partitions it settled
/// (elected, or already led by their preferred replica).
async fn elect_preferred(zk: &ZkSession, targets: &BTreeSet<(String, i32)>) -> Vec<(String, i32)> {
    let Some(controller) = controller_of(zk).await else {
        return Vec::new();
    };
    let addr = bootstrap_of(zk, controller).await;
    let mut by_topic: std::collections::BTreeMap<&str, Vec<i32>> = Default::default();
    for (t, p) in targets {
        by_topic.entry(t).or_default().push(*p);
    }
    let request = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(5_000)
        .with_topic_partitions(Some(
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    TopicPartitions::default()
                        .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                        .with_partitions(ps)
                })
                .collect(),
        ));
    let asked = async {
        let mut wire = Wire::connect(&addr).await;
        let response: ElectLeadersResponse = wire.send(&request, 2).await;
        response
    };
    let Ok(response) = tokio::time::timeout(GIVE_UP, asked).await else {
        return Vec::new();
    };
    let mut settled = Vec::new();
    for topic in response.replica_election_results {
        for r in topic.partition_result {
            if r.error_code == ec::NONE || r.error_code == ec::ELECTION_NOT_NEEDED {
                settled.push((topic.topic.0.to_string(), r.partition_id));
            }
        }
    }
    settled
}

/// Leadership moves: every 1.5 s a topic led by non-preferred replicas appears, the pending
/// ones get a preferred election, and the topic three rounds old is deleted. `__consumer_offsets`
/// gets its election a third into the run. Returns (elections settled, topics deleted).
async fn move_leaders(zk: ZkSession, started: Instant, stop: watch::Receiver<bool>) -> (usize, usize) {
    let mut pending: BTreeSet<(String, i32)> = BTreeSet::new();
    let (mut settled, mut deleted) = (0, 0);
    let mut offsets_moved = false;
    let mut tick = tokio::time::interval(Duration::from_millis(1_500));
    let mut round = 0usize;
    while !*stop.borrow() {
        tick.tick().await;
        let topic = format!("moving-{round}");
        create_led_by_non_preferred(&zk, &topic, 1, round, r#""segment.bytes":"16384""#).await;
        if !offsets_moved && started.elapsed() > LOAD / 3 {
            offsets_moved = true;
            pending.extend((0..3).map(|p| ("__consumer_offsets".to_string(), p)));
        }
        if round > 0 {
            pending.insert((format!("moving-{}", round - 1), 0));
        }
        if !pending.is_empty() {
            for done in elect_preferred(&zk, &pending).await {
                settled += usize::from(pending.remove(&done));
            }
        }
        if round >= 3 {
            let old = format!("moving-{}", round - 3);
            pending.remove(&(old.clone(), 0));
            if zk
                .create(&format!("/admin/delete_topics/{old}"), &[], CreateMode::Persistent)
                .await
                .is_ok()
            {
                deleted += 1;
            }
        }
        round += 1;
    }
    (settled, deleted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_keep_answering_while_retention_cleaning_replication_and_elections_run() {
    let chroot = unique_chroot("lock-order");
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
    let brokers = cluster::start_with(&chroot, &BROKERS, |spec| {
        settings.iter().fold(spec, |s, (k, v)| s.with(k, v))
    });
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;

    create_led_by_non_preferred(&zk, "retained", 3, 0, "").await;
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
    for (topic, partitions) in [("retained", 3), ("compacted", 1), ("__consumer_offsets", 3)] {
        for p in 0..partitions {
            wait_until(Duration::from_secs(20), &format!("{topic}-{p} hosted"), || async {
                let Some(s) = state(&zk, topic, p).await else {
                    return false;
                };
                let md = cluster::metadata(&zk, s.leader.0).await;
                cluster::partition_in(&md, topic, p)
                    .is_some_and(|(leader, _, isr)| leader == s.leader.0 && isr.len() == 3)
            })
            .await;
        }
    }
    let mut addrs = Vec::new();
    for id in BROKERS {
        addrs.push(bootstrap_of(&zk, id).await);
    }

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
            .args(["-b", &addrs.join(","), "-G", "lock-order", "-q"])
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
                "broker {}: {} answered, max {:?}, {} over {ANSWER_WITHIN:?}",
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
    for p in &ended {
        if let Some(at) = p.stalled_at {
            panic!(
                "broker {} stopped answering ApiVersions {at:.1} s into the load (no answer within {STALLED:?}): \
                 frozen\n{summary}\nbroker {} stderr (tail):\n{}",
                p.broker,
                p.broker,
                tail(&logs[(p.broker - 1) as usize], 40)
            );
        }
    }
    for p in &ended {
        assert!(
            p.late.len() * 1000 <= p.answered * LATE_PER_MILLE && p.late_in_a_row < LATE_IN_A_ROW,
            "broker {} answered ApiVersions later than {ANSWER_WITHIN:?} {} times of {} ({} in a row; max {:?}): \
             {:?}\n{summary}",
            p.broker,
            p.late.len(),
            p.answered,
            p.late_in_a_row,
            p.max,
            p.late
        );
    }
    // Debug builds check the lock order (a violation panics the thread that broke it).
    assert_eq!(count("panicked at"), 0, "a broker thread panicked\n{summary}");
    // The load really ran: retention deleted, the cleaner cleaned, leaders moved, groups loaded.
    assert!(count("retention deleted segments") > 0, "{summary}");
    assert!(count("log cleaned") > 0, "{summary}");
    assert!(settled > 0 && deleted > 0, "{summary}");
    assert!(count("offsets partition loaded") >= 6, "{summary}");
    zk.close().await;
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
