//! The reliability matrix's leader-epoch cases (reliability.md §3, R09 to R11: KIP-101,
//! KIP-279 and KIP-320), scripted against two real broker processes (RF 2) and judged by the shared checker
//! (`common::reliability::judge_acks`) from the records the script had acknowledged:
//! - R09, Kafka's `shouldNotAllowDivergentLogs`: both replicas crash, the leader loses the tail
//!   of its log (its file cut, as a crash losing unflushed pages would), comes back alone and
//!   takes new records at the lost offsets; the follower, which still has the old tail, must
//!   truncate it by leader epoch and end CRC-equal;
//! - R10 (a), `logsShouldNotDivergeOnUncleanLeaderElections`: after an unclean election the old
//!   leader's divergent tail is truncated to the new leader's log;
//! - R10 (b) with R09 (c), `shouldSurviveFastLeaderChange` x5 and `offsetsShouldNotGoBackwards`:
//!   kill -9 of the leader five times while writing with acks=all; offsets never go backwards,
//!   LEO equals what was written, every acknowledged record is read back, the replicas stay
//!   identical;
//! - R11 (a), KIP-320: the leader after an unclean election fences callers' stale and future
//!   epochs on Fetch, ListOffsets and OffsetForLeaderEpoch and names the divergence point;
//! - R11 (b), Kafka's truncation_test: a consumer (librdkafka) that read the records the unclean
//!   election truncated resumes at the divergence point, reads each new record once and does
//!   not go back to the start.
//!
//! The HW-truncation variant of R09 (b) needs a hook that pauses a follower's fetches between
//! its restart and its first fetch; there is none, so it is left out.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::cluster::cluster_ready;
use common::reliability::{judge_acks, Ack, Case, CaseReport};
use common::replicas::{batch_crcs, isr, leader, leader_log_end, log_end, produce_request, spec};
use common::wire::Wire;
use common::zookeeper::free_port;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic};
use kafka_protocol::messages::{
    BrokerId as KpBrokerId, FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;
use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

/// One case at a time (they share two cores).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Two brokers, RF 2 and min ISR 1 (Kafka's tests' defaults), on fixed ports with metrics.
struct Pair {
    specs: Vec<BrokerSpec>,
    brokers: Vec<BrokerProcess>,
    metrics: Vec<String>,
    zk: ZkSession,
}

async fn pair(name: &str, topic: &str, extra: &[(&str, &str)]) -> Pair {
    let chroot = unique_chroot(name);
    let metrics: Vec<String> = (1..=2).map(|_| format!("127.0.0.1:{}", free_port())).collect();
    let specs: Vec<BrokerSpec> = (1..=2)
        .zip(&metrics)
        .map(|(id, m)| spec(&chroot, id, extra).port(free_port()).with("metrics.listener", m))
        .collect();
    let brokers = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    common::cluster::create_topic_by_hand(&zk, topic, r#"{"0":[1,2]}"#).await;
    wait_until(
        Duration::from_secs(30),
        "broker 1 leading with both in the ISR",
        || async { leader(&zk, topic).await == 1 && isr(&zk, topic).await == vec![1, 2] },
    )
    .await;
    Pair {
        specs,
        brokers,
        metrics,
        zk,
    }
}

impl Pair {
    fn dirs(&self) -> Vec<PathBuf> {
        self.brokers.iter().map(|b| b.log_dir.clone()).collect()
    }

    async fn bootstrap(&self) -> String {
        common::replicas::bootstrap(&self.zk).await
    }

    /// kill -9 of broker `id`, then waits until its registration is gone.
    async fn kill(&mut self, id: i32) {
        let b = &mut self.brokers[(id - 1) as usize];
        b.signal("KILL");
        b.wait_exit(Duration::from_secs(10)).await;
        wait_until(Duration::from_secs(20), "the killed broker unregistered", || async {
            self.zk
                .exists(&format!("/brokers/ids/{id}"))
                .await
                .ok()
                .flatten()
                .is_none()
        })
        .await;
    }

    /// Starts broker `id` again on its dirs and waits for its registration. (A partition whose
    /// last ISR replica died keeps naming it leader in ZooKeeper, as Kafka's does.)
    async fn restart(&mut self, id: i32) {
        let i = (id - 1) as usize;
        let dead = self.brokers.remove(i);
        self.brokers.insert(i, dead.restart(&self.specs[i]));
        wait_until(Duration::from_secs(30), "the restarted broker registered", || async {
            self.zk
                .exists(&format!("/brokers/ids/{id}"))
                .await
                .ok()
                .flatten()
                .is_some()
        })
        .await;
    }

    async fn judge(&self, case: &Case<'_>, acks: Vec<Ack>) -> CaseReport {
        let boot = self.bootstrap().await;
        judge_acks(case, &self.zk, &self.dirs(), &self.metrics, &boot, acks).await
    }
}

/// Produces `value` to broker `to`, retrying (as clients do) while it answers
/// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION: the state znode can name it leader a
/// moment before it has applied its LeaderAndIsr. Nothing is appended by a refused request, so a retry adds no duplicate.
async fn produce(zk: &ZkSession, to: i32, topic: &str, acks: i16, value: i64) -> Ack {
    let addr = bootstrap_of(zk, to).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut wire = Wire::connect(&addr).await;
        let r = wire
            .send(&produce_request(topic, acks, value.to_string().as_bytes()), 7)
            .await;
        let p = &r.responses[0].partition_responses[0];
        let retriable = p.error_code == ec::NOT_LEADER_OR_FOLLOWER || p.error_code == ec::UNKNOWN_TOPIC_OR_PARTITION;
        if !retriable || Instant::now() > deadline {
            assert_eq!(p.error_code, 0, "produce {value} to broker {to}");
            return Ack {
                value,
                offset: p.base_offset,
                at_ms: kastle::clock::now_ms(),
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Cuts `topic-0`'s log on `log_dir` after its first `keep` batches (one segment here), as a
/// crash that lost the file's unflushed tail would.
fn cut_log_after(log_dir: &std::path::Path, topic: &str, keep: usize) {
    let dir = log_dir.join(format!("{topic}-0"));
    let segment = std::fs::read_dir(&dir)
        .expect("the partition dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .expect("a segment");
    let data = std::fs::read(&segment).expect("read the segment");
    let mut scanner = kastle::protocol::BatchScanner::new(&data);
    for _ in 0..keep {
        scanner.next().expect("a batch").expect("a valid batch");
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open the segment");
    file.set_len(scanner.position() as u64).expect("cut the segment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r09_a_follower_keeps_no_tail_its_leader_lost_in_a_crash() {
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let mut c = pair("r09", "r09", &[]).await;
    let mut acks = Vec::new();
    for v in 0..10 {
        acks.push(produce(&c.zk, 1, "r09", -1, v).await);
    }
    // Both crash: the follower first (the ISR shrinks to the leader), then the leader.
    c.kill(2).await;
    wait_until(Duration::from_secs(20), "ISR [1]", || async {
        isr(&c.zk, "r09").await == vec![1]
    })
    .await;
    c.kill(1).await;
    // The leader's disk lost the last 5 records (acknowledged by both: this fault destroys
    // them by design, so the checker is given only the 5 kept).
    cut_log_after(&c.brokers[0].log_dir, "r09", 5);
    acks.truncate(5);
    c.restart(1).await;
    wait_until(Duration::from_secs(30), "broker 1 leading again", || async {
        leader(&c.zk, "r09").await == 1
    })
    .await;
    let mut failures = Vec::new();
    for v in 100..110 {
        acks.push(produce(&c.zk, 1, "r09", -1, v).await);
    }
    if acks[5].offset != 5 {
        failures.push(format!(
            "the recovered leader appended at {} instead of its log end 5",
            acks[5].offset
        ));
    }
    c.restart(2).await;
    wait_until(Duration::from_secs(30), "broker 2 back in the ISR", || async {
        isr(&c.zk, "r09").await == vec![1, 2]
    })
    .await;
    for (i, b) in c.brokers.iter_mut().enumerate() {
        if b.has_exited() {
            panic!("broker {} exited:\n{}", i + 1, common::stress::tail(&b.stderr(), 30));
        }
    }
    let case = Case {
        name: "R09 KIP-101 divergent logs",
        faults: "kill -9 both, leader's log tail cut, leader alone takes writes",
        topic: "r09",
        idempotent: true,
        expect_loss: false,
    };
    let report = c.judge(&case, acks).await;
    report.print_with(&failures);
    eprintln!("R09 took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    c.zk.close().await;
}

/// R10 (a): broker 1 writes 1 that broker 2 never gets; broker 2 is elected uncleanly and writes
/// 2 at the same offset. When broker 1 returns it must drop 1 and take 2 and 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r10_an_unclean_election_truncates_the_old_leaders_divergent_tail() {
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let mut c = pair("r10a", "r10a", &[("unclean.leader.election.enable", "true")]).await;
    let mut acks = vec![produce(&c.zk, 1, "r10a", -1, 0).await];
    c.kill(2).await;
    wait_until(Duration::from_secs(20), "ISR [1]", || async {
        isr(&c.zk, "r10a").await == vec![1]
    })
    .await;
    // acks=1 on the leader alone: an unclean election may lose it (not given to the checker).
    produce(&c.zk, 1, "r10a", 1, 1).await;
    let old_tail = batch_crcs(&c.brokers[0].log_dir, "r10a", 0);
    assert_eq!(old_tail.len(), 2);
    c.kill(1).await;
    c.restart(2).await;
    wait_until(Duration::from_secs(30), "broker 2 elected uncleanly", || async {
        leader(&c.zk, "r10a").await == 2
    })
    .await;
    acks.push(produce(&c.zk, 2, "r10a", 1, 2).await);
    acks.push(produce(&c.zk, 2, "r10a", 1, 3).await);
    c.restart(1).await;
    wait_until(
        Duration::from_secs(30),
        "broker 1 back in the ISR with broker 2's log",
        || async {
            isr(&c.zk, "r10a").await == vec![1, 2]
                && log_end(&c.brokers[0].log_dir, "r10a", 0) == log_end(&c.brokers[1].log_dir, "r10a", 0)
        },
    )
    .await;
    let on1 = batch_crcs(&c.brokers[0].log_dir, "r10a", 0);
    let mut failures = Vec::new();
    if on1.len() != 3 || on1[0] != old_tail[0] || on1.get(1) == old_tail.get(1) {
        failures.push(format!(
            "broker 1 should hold 0, 2, 3 (its 1 truncated): {on1:?}, was {old_tail:?}"
        ));
    }
    let case = Case {
        name: "R10 KIP-279 unclean election",
        faults: "kill -9 follower, acks=1 on leader, kill -9 leader, unclean election",
        topic: "r10a",
        idempotent: true,
        expect_loss: false,
    };
    let report = c.judge(&case, acks).await;
    report.print_with(&failures);
    eprintln!("R10 (a) took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    c.zk.close().await;
}

/// R10 (b) and R09 (c): kill -9 the leader five times while writing with acks=all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r10_five_fast_leader_changes_never_lose_or_rewind_acknowledged_offsets() {
    const PER_ROUND: i64 = 20;
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let mut c = pair("r10b", "r10b", &[]).await;
    let mut acks: Vec<Ack> = Vec::new();
    let mut failures = Vec::new();
    for round in 0..5 {
        let l = leader(&c.zk, "r10b").await;
        assert!(l > 0, "round {round}: a leader");
        let mut wire = Wire::connect(&bootstrap_of(&c.zk, l).await).await;
        for i in 0..PER_ROUND {
            let value = round * PER_ROUND + i;
            let r = wire
                .send(&produce_request("r10b", -1, value.to_string().as_bytes()), 7)
                .await;
            let p = &r.responses[0].partition_responses[0];
            assert_eq!(p.error_code, 0, "round {round} record {i}");
            if p.base_offset != value {
                failures.push(format!("{value} acknowledged at offset {}", p.base_offset));
            }
            acks.push(Ack {
                value,
                offset: p.base_offset,
                at_ms: kastle::clock::now_ms(),
            });
        }
        let written = acks.len() as i64;
        let end = leader_log_end(&mut wire, "r10b").await;
        if end != written {
            failures.push(format!("round {round}: LEO {end}, written {written}"));
        }
        c.kill(l).await;
        wait_until(Duration::from_secs(20), "the other replica to lead", || async {
            let now = leader(&c.zk, "r10b").await;
            now > 0 && now != l
        })
        .await;
        c.restart(l).await;
        wait_until(
            Duration::from_secs(30),
            "the restarted broker back in the ISR",
            || async { isr(&c.zk, "r10b").await == vec![1, 2] },
        )
        .await;
    }
    let case = Case {
        name: "R10 fast leader change x5",
        faults: "5x kill -9 leader, acks=all",
        topic: "r10b",
        idempotent: true,
        expect_loss: false,
    };
    let report = c.judge(&case, acks).await;
    report.print_with(&failures);
    eprintln!("R10 (b) took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    c.zk.close().await;
}

/// The partition's leader epoch in ZooKeeper.
async fn leader_epoch(zk: &ZkSession, topic: &str) -> i32 {
    common::replicas::state(zk, topic, 0)
        .await
        .map_or(-1, |(s, _)| s.leader_epoch.0)
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// Fetch from offset 0 with `current` as the caller's leader epoch: (error, records returned).
async fn fetch_with_epoch(wire: &mut Wire, topic: &str, current: i32) -> (i16, usize) {
    let request = FetchRequest::default()
        .with_replica_id(KpBrokerId(-1))
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let response = wire.send(&request, 12).await;
    let p = &response.responses[0].partitions[0];
    (p.error_code, p.records.as_ref().map_or(0, |r| r.len()))
}

/// ListOffsets (latest) with `current`: (error, offset).
async fn list_offsets_with_epoch(wire: &mut Wire, topic: &str, current: i32) -> (i16, i64) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(KpBrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_current_leader_epoch(current)
                .with_timestamp(-1)])]);
    let response = wire.send(&request, 4).await;
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.offset)
}

/// OffsetForLeaderEpoch for `requested` with `current`: (error, epoch, end offset).
async fn epoch_end_with_epoch(wire: &mut Wire, topic: &str, current: i32, requested: i32) -> (i16, i32, i64) {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(KpBrokerId(-1))
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![OffsetForLeaderPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current)
                .with_leader_epoch(requested)])]);
    let response = wire.send(&request, 4).await;
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.leader_epoch, p.end_offset)
}

/// R11 (KIP-320): after an unclean election that truncates what a consumer may have read, the
/// new leader fences callers one epoch behind (FENCED_LEADER_EPOCH, 74) and ahead
/// (UNKNOWN_LEADER_EPOCH, 75) on Fetch, ListOffsets and OffsetForLeaderEpoch, returning no
/// records; and it answers a consumer's OffsetForLeaderEpoch for the old epoch with the
/// divergence point, so a consumer positioned past it detects the truncation there (neither
/// at the start nor past the new records; R11 (b) runs a real consumer through it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r11_the_new_leader_fences_stale_and_future_epochs_and_names_the_divergence_point() {
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let mut c = pair("r11", "r11", &[("unclean.leader.election.enable", "true")]).await;
    let old_epoch = leader_epoch(&c.zk, "r11").await;
    let mut acks = Vec::new();
    for v in 0..10 {
        acks.push(produce(&c.zk, 1, "r11", -1, v).await);
    }
    c.kill(2).await;
    wait_until(Duration::from_secs(20), "ISR [1]", || async {
        isr(&c.zk, "r11").await == vec![1]
    })
    .await;
    // Read by a consumer, then lost to the unclean election (acks=1: not given to the checker).
    for v in 10..15 {
        produce(&c.zk, 1, "r11", 1, v).await;
    }
    c.kill(1).await;
    c.restart(2).await;
    wait_until(Duration::from_secs(30), "broker 2 elected uncleanly", || async {
        leader(&c.zk, "r11").await == 2
    })
    .await;
    for v in 100..105 {
        acks.push(produce(&c.zk, 2, "r11", 1, v).await);
    }
    let epoch = leader_epoch(&c.zk, "r11").await;
    let mut wire = Wire::connect(&bootstrap_of(&c.zk, 2).await).await;
    let mut failures = Vec::new();
    let mut answered = 0;
    for (current, expected) in [
        (epoch - 1, ec::FENCED_LEADER_EPOCH),
        (epoch + 1, ec::UNKNOWN_LEADER_EPOCH),
    ] {
        let fetched = fetch_with_epoch(&mut wire, "r11", current).await;
        let listed = list_offsets_with_epoch(&mut wire, "r11", current).await;
        let ended = epoch_end_with_epoch(&mut wire, "r11", current, old_epoch).await;
        for (api, code) in [
            ("Fetch", fetched.0),
            ("ListOffsets", listed.0),
            ("OffsetForLeaderEpoch", ended.0),
        ] {
            if code == expected {
                answered += 1;
            } else {
                failures.push(format!(
                    "{api} with epoch {current} (leader's {epoch}): error {code}, not {expected}"
                ));
            }
        }
        if fetched.1 != 0 {
            failures.push(format!(
                "a fenced Fetch (epoch {current}) returned {} bytes of records",
                fetched.1
            ));
        }
    }
    let fetched = fetch_with_epoch(&mut wire, "r11", epoch).await;
    let listed = list_offsets_with_epoch(&mut wire, "r11", epoch).await;
    if fetched.0 != ec::NONE || fetched.1 == 0 || listed != (ec::NONE, 15) {
        failures.push(format!(
            "with the current epoch {epoch}: Fetch {fetched:?}, ListOffsets {listed:?} (expected records, end 15)"
        ));
    }
    // A consumer at offset 15 that read offset 14 in the old epoch asks where that epoch ends.
    let divergence = epoch_end_with_epoch(&mut wire, "r11", epoch, old_epoch).await;
    if divergence.0 != ec::NONE || divergence.2 != 10 || divergence.1 > old_epoch {
        failures.push(format!(
            "OffsetForLeaderEpoch for the old epoch {old_epoch}: {divergence:?}, expected the divergence point 10"
        ));
    }
    eprintln!("R11: {answered}/6 fenced answers as expected; old epoch {old_epoch} ends at {divergence:?}");
    c.restart(1).await;
    wait_until(
        Duration::from_secs(30),
        "broker 1 back in the ISR with broker 2's log",
        || async {
            isr(&c.zk, "r11").await == vec![1, 2]
                && log_end(&c.brokers[0].log_dir, "r11", 0) == log_end(&c.brokers[1].log_dir, "r11", 0)
        },
    )
    .await;
    let case = Case {
        name: "R11 KIP-320 epoch fencing",
        faults: "unclean election truncating 5 read records; epochs -1/+1 on 3 APIs",
        topic: "r11",
        idempotent: true,
        expect_loss: false,
    };
    let report = c.judge(&case, acks).await;
    report.print_with(&failures);
    eprintln!("R11 took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    c.zk.close().await;
}

/// confluent-kafka consumer: reads `topic` partition 0 from offset 0 until the file `stop`
/// exists, writing `offset value` per record and `error code reason` per error to `out`.
const FOLLOWING_CONSUMER: &str = r#"
import os, sys
from confluent_kafka import Consumer, TopicPartition
boot, topic, out_path, stop_path = sys.argv[1:5]
c = Consumer({"bootstrap.servers": boot, "group.id": "r11b", "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
c.assign([TopicPartition(topic, 0, 0)])
out = open(out_path, "w", buffering=1)
while not os.path.exists(stop_path):
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        out.write("error %d %s\n" % (m.error().code(), m.error().str().replace("\n", " ")))
        continue
    out.write("%d %s\n" % (m.offset(), m.value().decode()))
c.close()
"#;

/// The `offset value` lines a [`FOLLOWING_CONSUMER`] wrote, and its error lines.
fn followed(path: &std::path::Path) -> (Vec<(i64, i64)>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut reads = Vec::new();
    let mut errors = Vec::new();
    for line in text.lines() {
        if line.starts_with("error ") {
            errors.push(line.to_string());
        } else if let Some((o, v)) = line.split_once(' ') {
            if let (Ok(o), Ok(v)) = (o.parse(), v.trim().parse()) {
                reads.push((o, v));
            }
        }
    }
    (reads, errors)
}

/// R11 (b), Kafka's truncation_test from the consumer's side: a consumer that read records an
/// unclean election then truncated goes on from the divergence point (librdkafka validates its
/// position with OffsetForLeaderEpoch after the leader change): it reads every new record once
/// and does not go back to the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r11_a_consumer_past_an_unclean_truncation_resumes_at_the_divergence_point() {
    let _serial = SERIAL.lock().await;
    let began = Instant::now();
    let mut c = pair("r11b", "r11b", &[("unclean.leader.election.enable", "true")]).await;
    let mut acks = Vec::new();
    for v in 0..10 {
        acks.push(produce(&c.zk, 1, "r11b", -1, v).await);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, stop) = (tmp.path().join("read"), tmp.path().join("stop"));
    let boot = c.bootstrap().await;
    // Killed on drop, also when the test fails before it stops the consumer.
    let mut consumer = common::stress::Killed(
        common::replicas::python(&[
            "-c",
            FOLLOWING_CONSUMER,
            &boot,
            "r11b",
            out.to_str().expect("utf-8"),
            stop.to_str().expect("utf-8"),
        ])
        .spawn()
        .expect("consumer"),
    );
    c.kill(2).await;
    wait_until(Duration::from_secs(20), "ISR [1]", || async {
        isr(&c.zk, "r11b").await == vec![1]
    })
    .await;
    for v in 10..15 {
        produce(&c.zk, 1, "r11b", 1, v).await;
    }
    wait_until(Duration::from_secs(30), "the consumer read offset 14", || async {
        followed(&out).0.iter().any(|(o, _)| *o == 14)
    })
    .await;
    c.kill(1).await;
    c.restart(2).await;
    wait_until(Duration::from_secs(30), "broker 2 elected uncleanly", || async {
        leader(&c.zk, "r11b").await == 2
    })
    .await;
    for v in 100..110 {
        acks.push(produce(&c.zk, 2, "r11b", 1, v).await);
    }
    let read_new = wait_until_or(Duration::from_secs(30), || {
        followed(&out).0.iter().any(|(_, v)| *v == 109)
    })
    .await;
    std::fs::write(&stop, b"").expect("stop file");
    wait_until_or(Duration::from_secs(20), || matches!(consumer.0.try_wait(), Ok(Some(_)))).await;
    drop(consumer);
    let (reads, errors) = followed(&out);
    eprintln!("R11 (b): consumer read {reads:?}; errors {errors:?}");
    let mut failures = Vec::new();
    let after: Vec<(i64, i64)> = reads.iter().skip_while(|(o, _)| *o != 14).skip(1).copied().collect();
    let new_values: Vec<i64> = after.iter().map(|(_, v)| *v).filter(|v| *v >= 100).collect();
    if !read_new || new_values != (100..110).collect::<Vec<_>>() {
        failures.push(format!(
            "the consumer did not read 100..109 once each after the truncation: {after:?}"
        ));
    }
    if after.iter().any(|(_, v)| *v < 100) {
        failures.push(format!("the consumer went back before the divergence point: {after:?}"));
    }
    c.restart(1).await;
    wait_until(Duration::from_secs(30), "broker 1 back in the ISR", || async {
        isr(&c.zk, "r11b").await == vec![1, 2]
            && log_end(&c.brokers[0].log_dir, "r11b", 0) == log_end(&c.brokers[1].log_dir, "r11b", 0)
    })
    .await;
    let case = Case {
        name: "R11 KIP-320 consumer truncation",
        faults: "unclean election under a consumer that read the truncated records",
        topic: "r11b",
        idempotent: true,
        expect_loss: false,
    };
    let report = c.judge(&case, acks).await;
    report.print_with(&failures);
    eprintln!("R11 (b) took {:?}", began.elapsed());
    report.assert_passed_with(&failures);
    c.zk.close().await;
}

/// Whether `done` holds within `deadline` (polled every 50 ms).
async fn wait_until_or(deadline: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}
