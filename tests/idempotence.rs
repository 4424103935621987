//! The idempotent producer end to end, with real ZooKeeper, real brokers and real clients:
//! kafka-python with its defaults and confluent-kafka with enable.idempotence=true produce and
//! read back exactly once; InitProducerId ids come from `/latest_producer_id_block`; a batch
//! replayed on the wire is answered with its original offset and stored once, a sequence gap
//! is OUT_OF_ORDER_SEQUENCE_NUMBER; the producer state survives a clean and a kill -9 restart
//! and is rebuilt on followers, so a new leader deduplicates what its predecessor accepted;
//! 20,000 records through a kill -9 of the leader arrive once each, in order, also when the
//! new leader holds batches nobody acknowledged (a paused follower holds the high watermark
//! back), which fails without deduplication.

mod common;

use std::path::Path;
use std::time::Duration;

use common::cluster::cluster_ready;
use common::replicas::{bootstrap, create_topic, isr, leader, lines, python, spec, CONSUMER, SESSION_MS};
use common::wire::Wire;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{InitProducerIdRequest, ProduceRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kastle::protocol::error_codes as ec;
use kastle::protocol::test_support::BatchBuilder;
use kastle::zk::store::ZkStore;

fn run_python(args: &[&str]) -> String {
    let out = python(args).output().expect("python");
    assert!(
        out.status.success(),
        "python failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn consume_all(bootstrap: &str, topic: &str) -> Vec<String> {
    run_python(&["-c", CONSUMER, bootstrap, topic])
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The producer ids of the batches stored for `topic-0` in `log_dir`.
fn stored_producer_ids(log_dir: &Path, topic: &str) -> Vec<i64> {
    common::replicas::stored_batches(log_dir, topic, 0)
        .iter()
        .map(|h| h.producer_id)
        .collect()
}

const KAFKA_PYTHON_DEFAULTS: &str = r#"
import sys
from kafka import KafkaProducer
bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = KafkaProducer(bootstrap_servers=bootstrap)
assert p.config["enable_idempotence"], "kafka-python 3 is idempotent by default"
futures = [p.send(topic, value=("kp-%d" % i).encode(), partition=0) for i in range(count)]
p.flush(60)
for f in futures:
    f.get(timeout=60)
p.close()
print("ok")
"#;

const CONFLUENT_IDEMPOTENT: &str = r#"
import sys
from confluent_kafka import Producer
bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
errors = []
def done(err, msg):
    if err is not None:
        errors.append(err)
for i in range(count):
    p.produce(topic, ("ck-%d" % i).encode(), partition=0, on_delivery=done)
    if i % 100 == 0:
        p.poll(0)
assert p.flush(60) == 0, "unflushed records"
assert not errors, errors
print("ok")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_defaults_and_confluent_idempotence_produce_exactly_once() {
    const COUNT: usize = 2_000;
    let chroot = unique_chroot("idem-clients");
    let broker = BrokerProcess::start(&spec(&chroot, 1, &[]));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    create_topic(&zk, "idem", "[1]").await;
    let boot = bootstrap(&zk).await;
    let (b, n) = (boot.clone(), COUNT.to_string());
    tokio::task::spawn_blocking(move || {
        run_python(&["-c", KAFKA_PYTHON_DEFAULTS, &b, "idem", &n]);
        run_python(&["-c", CONFLUENT_IDEMPOTENT, &b, "idem", &n]);
    })
    .await
    .expect("producers");
    let b = boot.clone();
    let consumed = tokio::task::spawn_blocking(move || consume_all(&b, "idem"))
        .await
        .expect("consumer");
    let want: Vec<String> = (0..COUNT)
        .map(|i| format!("kp-{i}"))
        .chain((0..COUNT).map(|i| format!("ck-{i}")))
        .collect();
    assert_eq!(consumed.len(), want.len(), "each record exactly once");
    assert_eq!(consumed, want, "in the order sent");
    let mut pids = stored_producer_ids(&broker.log_dir, "idem");
    pids.dedup();
    assert_eq!(pids.len(), 2, "two idempotent producers' batches: {pids:?}");
    assert!(
        pids.iter().all(|p| *p >= 0),
        "every batch carries a producer id: {pids:?}"
    );
    let (block, _) = zk.get_data("/latest_producer_id_block").await.expect("block");
    let block = String::from_utf8(block).expect("utf8");
    assert!(
        block.starts_with(r#"{"version":1,"broker":1,"block_start":"#),
        "{block}"
    );
    zk.close().await;
}

async fn init_producer_id(wire: &mut Wire) -> (i64, i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let response = wire.send(&request, 4).await;
    assert_eq!(response.error_code, 0);
    (response.producer_id.0, response.producer_epoch)
}

fn idempotent_produce(topic: &str, pid: i64, epoch: i16, seq: i32, values: &[&str]) -> ProduceRequest {
    let mut batch = BatchBuilder::new(0).producer(pid, epoch, seq).timestamp(1);
    for v in values {
        batch = batch.record(None, Some(v.as_bytes()));
    }
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch.build().into()))])])
}

/// (error code, base offset) of partition 0.
async fn produce(wire: &mut Wire, request: &ProduceRequest) -> (i16, i64) {
    let response = wire.send(request, 9).await;
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_batch_gets_its_original_offset_and_a_gap_is_out_of_order() {
    let chroot = unique_chroot("idem-wire");
    let broker = BrokerProcess::start(&spec(&chroot, 1, &[]));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    create_topic(&zk, "wire", "[1]").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, 1).await).await;
    let (pid, epoch) = init_producer_id(&mut wire).await;
    let (pid2, _) = init_producer_id(&mut wire).await;
    assert_eq!((pid2, epoch), (pid + 1, 0), "ids from the broker's block, epoch 0");

    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid, 0, 0, &["a", "b"])).await,
        (0, 0)
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid2, 0, 0, &["x"])).await,
        (0, 2)
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid, 0, 2, &["c"])).await,
        (0, 3)
    );
    // The first batch again, byte for byte: acknowledged with its offset, not stored twice.
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid, 0, 0, &["a", "b"])).await,
        (0, 0)
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid, 0, 2, &["c"])).await,
        (0, 3)
    );
    // A gap, and an epoch older than the producer's.
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid, 0, 5, &["d"]))
            .await
            .0,
        ec::OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid2, 1, 0, &["y"])).await,
        (0, 4)
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid2, 0, 1, &["z"]))
            .await
            .0,
        ec::INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("wire", pid, 0, 3, &["d"])).await,
        (0, 5)
    );
    let boot = bootstrap(&zk).await;
    let consumed = tokio::task::spawn_blocking(move || consume_all(&boot, "wire"))
        .await
        .expect("consumer");
    assert_eq!(consumed, ["a", "b", "x", "c", "y", "d"]);

    // Transactions are not served; an id without an epoch is a bad request.
    let txn = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx"))))
        .with_transaction_timeout_ms(60_000);
    assert_eq!(
        wire.send(&txn, 4).await.error_code,
        ec::COORDINATOR_NOT_AVAILABLE,
        "COORDINATOR_NOT_AVAILABLE"
    );
    let half = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_producer_id(ProducerId(pid));
    assert_eq!(
        wire.send(&half, 4).await.error_code,
        ec::INVALID_REQUEST,
        "INVALID_REQUEST"
    );
    drop(broker);
    zk.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_state_survives_restarts_and_a_new_leader_deduplicates_what_it_replicated() {
    let chroot = unique_chroot("idem-restart");
    let extra = [("min.insync.replicas", "2")];
    let specs: Vec<BrokerSpec> = (1..=3).map(|id| spec(&chroot, id, &extra)).collect();
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    create_topic(&zk, "state", "[1,2,3]").await;
    wait_until(Duration::from_secs(30), "a full ISR", || async {
        isr(&zk, "state").await.len() == 3
    })
    .await;
    let first = leader(&zk, "state").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, first).await).await;
    let (pid, _) = init_producer_id(&mut wire).await;
    for seq in 0..5 {
        let v = format!("v{seq}");
        let got = produce(&mut wire, &idempotent_produce("state", pid, 0, seq, &[&v])).await;
        assert_eq!(got, (0, i64::from(seq)));
    }
    drop(wire);

    // Failover: the leader dies (kill -9); the new leader only replicated the batches.
    let i = (first - 1) as usize;
    brokers[i].signal("KILL");
    wait_until(Duration::from_millis(SESSION_MS + 15_000), "a new leader", || async {
        let l = leader(&zk, "state").await;
        l >= 0 && l != first
    })
    .await;
    let second = leader(&zk, "state").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, second).await).await;
    for seq in [2, 4] {
        let v = format!("v{seq}");
        let got = produce(&mut wire, &idempotent_produce("state", pid, 0, seq, &[&v])).await;
        assert_eq!(got, (0, i64::from(seq)), "retry of seq {seq} on the new leader");
    }
    assert_eq!(
        produce(&mut wire, &idempotent_produce("state", pid, 0, 7, &["gap"]))
            .await
            .0,
        ec::OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("state", pid, 0, 5, &["v5"])).await,
        (0, 5)
    );
    drop(wire);
    // The killed broker comes back (its state from the log: no shutdown snapshot).
    wait_until(Duration::from_secs(20), "the old registration to expire", || async {
        zk.exists(&format!("/brokers/ids/{first}"))
            .await
            .ok()
            .flatten()
            .is_none()
    })
    .await;
    let old = brokers.remove(i);
    brokers.insert(i, old.restart(&specs[i]));

    // Clean restart of the current leader: it writes a snapshot at shutdown.
    let j = (second - 1) as usize;
    brokers[j].signal("TERM");
    let status = brokers[j].wait_exit(Duration::from_secs(60)).await;
    assert!(status.success(), "clean shutdown");
    let snapshots: Vec<String> = std::fs::read_dir(brokers[j].log_dir.join("state-0"))
        .expect("partition dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".snapshot"))
        .collect();
    assert!(
        snapshots.contains(&"00000000000000000006.snapshot".to_string()),
        "a shutdown snapshot at the log end: {snapshots:?}"
    );
    let old = brokers.remove(j);
    brokers.insert(j, old.restart(&specs[j]));
    wait_until(Duration::from_secs(60), "all three back in the ISR", || async {
        isr(&zk, "state").await.len() == 3
    })
    .await;
    // Whoever leads now (restarted from a snapshot, rebuilt from its log, or a follower that
    // replicated everything) answers the last batch's retry with its offset.
    let now = leader(&zk, "state").await;
    let mut wire = Wire::connect(&bootstrap_of(&zk, now).await).await;
    assert_eq!(
        produce(&mut wire, &idempotent_produce("state", pid, 0, 5, &["v5"])).await,
        (0, 5)
    );
    assert_eq!(
        produce(&mut wire, &idempotent_produce("state", pid, 0, 6, &["v6"])).await,
        (0, 6)
    );
    for b in &brokers {
        let end = common::replicas::log_end(&b.log_dir, "state", 0);
        assert!(
            end <= 7,
            "nothing stored twice on broker {}: end {end}",
            b.log_dir.display()
        );
    }
    let boot = bootstrap(&zk).await;
    let consumed = tokio::task::spawn_blocking(move || consume_all(&boot, "state"))
        .await
        .expect("consumer");
    assert_eq!(consumed, ["v0", "v1", "v2", "v3", "v4", "v5", "v6"]);
    zk.close().await;
}

const IDEMPOTENT_PRODUCER: &str = r#"
import sys
from confluent_kafka import Producer
bootstrap, topic, count, acked_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
linger = int(sys.argv[5]) if len(sys.argv) > 5 else 5
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
              "max.in.flight.requests.per.connection": 5, "retry.backoff.ms": 100,
              "message.timeout.ms": 180000, "linger.ms": linger, "request.timeout.ms": 5000,
              "topic.metadata.refresh.interval.ms": 1000})
acked = open(acked_path, "w", buffering=1)
errors = []
def done(err, msg):
    if err is None:
        acked.write(msg.value().decode() + "\n")
    else:
        errors.append(str(err))
for i in range(count):
    while True:
        try:
            p.produce(topic, str(i).encode(), partition=0, on_delivery=done)
            break
        except BufferError:
            p.poll(0.05)
    if i % 100 == 99:
        # Pace the stream on delivery reports (up to 10 ms) so a kill lands mid-stream.
        p.poll(0.01)
p.flush(180)
print("errors", len(errors), errors[:5])
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_producer_through_a_leader_kill_delivers_each_record_once_in_order() {
    const COUNT: usize = 20_000;
    let chroot = unique_chroot("idem-kill");
    let extra = [("min.insync.replicas", "2")];
    let specs: Vec<BrokerSpec> = (1..=3).map(|id| spec(&chroot, id, &extra)).collect();
    let mut brokers: Vec<BrokerProcess> = specs.iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    create_topic(&zk, "exactly", "[1,2,3]").await;
    let first_leader = leader(&zk, "exactly").await;
    let boot = bootstrap(&zk).await;
    let acked_file = tempfile::NamedTempFile::new().expect("temp");
    let acked_path = acked_file.path().to_path_buf();
    let producer = python(&[
        "-c",
        IDEMPOTENT_PRODUCER,
        &boot,
        "exactly",
        &COUNT.to_string(),
        acked_path.to_str().expect("utf-8 temp path"),
    ])
    .stdout(std::process::Stdio::piped())
    .spawn()
    .expect("producer");
    wait_until(Duration::from_secs(60), "5,000 records acknowledged", || {
        let p = acked_path.clone();
        async move { lines(&p).len() >= 5_000 }
    })
    .await;
    let i = (first_leader - 1) as usize;
    brokers[i].signal("KILL");
    let acked_at_kill = lines(&acked_path).len();
    wait_until(Duration::from_millis(SESSION_MS + 15_000), "a new leader", || async {
        let l = leader(&zk, "exactly").await;
        l >= 0 && l != first_leader
    })
    .await;
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
    let out = tokio::task::spawn_blocking(move || producer.wait_with_output())
        .await
        .expect("join")
        .expect("producer exit");
    assert!(out.status.success(), "producer failed");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let acked = lines(&acked_path);
    assert!(acked.len() > acked_at_kill, "the producer kept going after the kill");
    assert_eq!(report.trim(), "errors 0 []", "every record acknowledged");
    assert_eq!(
        acked,
        (0..COUNT as i64).collect::<Vec<_>>(),
        "acknowledged once each, in order"
    );

    wait_until(
        Duration::from_secs(60),
        "the restarted broker back in the ISR",
        || async { isr(&zk, "exactly").await.len() == 3 },
    )
    .await;
    let boot = bootstrap(&zk).await;
    let consumed: Vec<i64> = tokio::task::spawn_blocking(move || consume_all(&boot, "exactly"))
        .await
        .expect("consumer")
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    assert_eq!(consumed.len(), acked.len(), "consumed = acknowledged, no duplicates");
    assert_eq!(consumed, acked, "in order");
    zk.close().await;
}

/// The retry case idempotence exists for, made certain: one follower is paused (acks=all then
/// waits for it) while the other keeps replicating, so when the leader is killed the survivor
/// holds batches the producer never had acknowledged. Becoming leader, it must answer their
/// retries with the original offsets (without deduplication they are OUT_OF_ORDER_SEQUENCE_NUMBER
/// and librdkafka fails the records).
///
/// Nothing here races a timer. "Unacknowledged" is read from the logs, not from the producer's
/// delivery reports (those trail the leader's answers, so a survivor ahead of the reports is
/// ahead of what was acknowledged only by luck): while the paused follower is in the ISR the
/// high watermark cannot pass its log end, which is frozen on disk, so whatever the survivor
/// holds beyond it nobody acknowledged. It stays in the ISR because its ZooKeeper session is
/// long (nothing expires during the pause) and the lag time (30 s) is far off; it cannot be
/// elected while paused because it is last in the assignment and the survivor is live and in
/// the ISR; and it is not the controller because it joins after the controller is elected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_answers_retries_of_batches_it_replicated_but_nobody_acknowledged() {
    const COUNT: usize = 20_000;
    /// The paused follower's session: heartbeats at a third of it, so it cannot expire within
    /// two thirds of it after the pause, far beyond the wait before the kill.
    const PAUSED_SESSION_MS: u64 = 24_000;
    let chroot = unique_chroot("idem-unacked");
    let extra = [("min.insync.replicas", "2")];
    let paused: i32 = 3;
    let mut specs: Vec<BrokerSpec> = (1..=3).map(|id| spec(&chroot, id, &extra)).collect();
    specs[(paused - 1) as usize] = spec(&chroot, paused, &extra).session_timeout_ms(PAUSED_SESSION_MS);
    let mut brokers: Vec<BrokerProcess> = specs[..2].iter().map(BrokerProcess::start).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    brokers.push(BrokerProcess::start(&specs[(paused - 1) as usize]));
    cluster_ready(&zk, 3).await;
    assert_ne!(
        common::cluster::controller_of(&zk).await,
        Some(paused),
        "the controller was elected before the paused broker started"
    );
    create_topic(&zk, "unacked", "[1,2,3]").await;
    wait_until(Duration::from_secs(30), "a full ISR", || async {
        isr(&zk, "unacked").await.len() == 3
    })
    .await;
    let first_leader = leader(&zk, "unacked").await;
    assert_ne!(first_leader, paused, "the assignment's head leads");
    let survivor = (1..=3)
        .find(|id| *id != first_leader && *id != paused)
        .expect("three brokers");
    let boot = bootstrap(&zk).await;
    let acked_file = tempfile::NamedTempFile::new().expect("temp");
    let acked_path = acked_file.path().to_path_buf();
    let producer = python(&[
        "-c",
        IDEMPOTENT_PRODUCER,
        &boot,
        "unacked",
        &COUNT.to_string(),
        acked_path.to_str().expect("utf-8 temp path"),
        // Larger batches: five requests in flight then hold thousands of records.
        "50",
    ])
    .stdout(std::process::Stdio::piped())
    .spawn()
    .expect("producer");
    wait_until(Duration::from_secs(60), "3,000 records acknowledged", || {
        let p = acked_path.clone();
        async move { lines(&p).len() >= 3_000 }
    })
    .await;
    brokers[(paused - 1) as usize].pause().await;
    // Frozen from here on: what the leader can know of the paused follower's log end, and so
    // the most the high watermark (and any acknowledgement) can reach until it resumes.
    let paused_end = common::replicas::log_end(&brokers[(paused - 1) as usize].log_dir, "unacked", 0);
    let survivor_dir = brokers[(survivor - 1) as usize].log_dir.clone();
    wait_until(
        Duration::from_millis(PAUSED_SESSION_MS / 2),
        "records replicated to the survivor beyond the paused follower's log end",
        || {
            let d = survivor_dir.clone();
            async move { common::replicas::log_end(&d, "unacked", 0) > paused_end }
        },
    )
    .await;
    brokers[(first_leader - 1) as usize].signal("KILL");
    let unacked_on_survivor = common::replicas::log_end(&survivor_dir, "unacked", 0) - paused_end;
    assert!(
        isr(&zk, "unacked").await.contains(&paused),
        "the paused follower was in the ISR at the kill"
    );
    wait_until(
        Duration::from_millis(SESSION_MS + 15_000),
        "the survivor leads",
        || async { leader(&zk, "unacked").await == survivor },
    )
    .await;
    let acked_while_paused = lines(&acked_path).len() as i64;
    assert!(
        acked_while_paused <= paused_end,
        "nothing past the paused follower's log end ({paused_end}) acknowledged: {acked_while_paused}"
    );
    brokers[(paused - 1) as usize].signal("CONT");
    wait_until(
        Duration::from_secs(20),
        "the killed leader's registration to expire",
        || async {
            zk.exists(&format!("/brokers/ids/{first_leader}"))
                .await
                .ok()
                .flatten()
                .is_none()
        },
    )
    .await;
    let i = (first_leader - 1) as usize;
    let old = brokers.remove(i);
    brokers.insert(i, old.restart(&specs[i]));
    let out = tokio::task::spawn_blocking(move || producer.wait_with_output())
        .await
        .expect("join")
        .expect("producer exit");
    assert!(out.status.success(), "producer failed");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        unacked_on_survivor > 0,
        "the survivor held unacknowledged records at the kill"
    );
    eprintln!("unacknowledged records on the survivor at the kill: {unacked_on_survivor}");
    assert_eq!(report.trim(), "errors 0 []", "every record acknowledged");
    let acked = lines(&acked_path);
    assert_eq!(
        acked,
        (0..COUNT as i64).collect::<Vec<_>>(),
        "acknowledged once each, in order"
    );
    eprintln!(
        "ISR at the end: {:?} (leader {}, paused {paused}, killed {first_leader})",
        isr(&zk, "unacked").await,
        leader(&zk, "unacked").await
    );
    let boot = bootstrap(&zk).await;
    let consumed: Vec<i64> = tokio::task::spawn_blocking(move || consume_all(&boot, "unacked"))
        .await
        .expect("consumer")
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    assert_eq!(consumed, acked, "consumed = acknowledged: no duplicates, in order");
    zk.close().await;
}
