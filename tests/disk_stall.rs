//! A slow disk holds up only the work that needs it. While every write in the broker's log dir
//! takes 2 s (the fault seam, `Faults::stall_dir`) and several connections produce into it at
//! once, other connections still get ApiVersions and Metadata answered within 50 ms and the
//! broker's ZooKeeper session (1.5 s timeout, so a runtime blocked for 2 s loses it) survives
//! with its registration unchanged. If appends ran on the async workers, two stalled produces
//! would block both workers of this two-worker runtime, and nothing else would be answered.
//! With two log dirs, a stalled one holds up only the produces into it: the other dir's
//! partitions keep being appended to meanwhile (each dir has its own I/O thread and queue).
//! A follower whose log dir stalls does its appends there too: the follower broker, on a
//! runtime of one async worker, keeps answering and keeps its session while its fetcher waits
//! for the disk, and catches up once the disk is back.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::wire::Wire;
use common::{unique_chroot, wait_until, zookeeper, BrokerSpec};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kastle::config::KafkaConfig;
use kastle::protocol::test_support::build_batch;
use kastle::server::Broker;
use kastle::types::TopicPartition;
use kastle::zk::session::SessionEvent;
use kastle::zk::store::{CreateMode, ZkStore};

/// How long each write in the stalled dir takes.
const STALL: Duration = Duration::from_secs(2);
/// The bound for answers on other connections meanwhile.
const ANSWER_WITHIN: Duration = Duration::from_millis(50);
/// Late answers tolerated, per mille (a busy 2-core machine now and then schedules the broker
/// late: seen up to 170 ms at a load average of 21); none may come near the stall itself.
const LATE_PER_MILLE: usize = 50;
const NEVER_LATER_THAN: Duration = Duration::from_millis(400);
/// Connections producing into the stalled dir at once (more than the runtime's workers). Their
/// appends queue on the partition one after the other; with four, each append that finishes
/// meets the next one holding the partition's lock through its stalled write, which is where an
/// async worker that takes that lock after its append (to tell the purgatory) would block.
const PRODUCERS: usize = 4;

fn produce_request() -> ProduceRequest {
    produce_to("stalled")
}

fn produce_to(topic: &'static str) -> ProduceRequest {
    let batch = build_batch(0, -1, &[(None, Some(&b"slow disk"[..]))], kastle::clock::now_ms());
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch.into()))])])
}

/// The states of the sessions that ended, from the events received so far.
fn sessions_ended(events: &mut tokio::sync::broadcast::Receiver<SessionEvent>) -> Vec<String> {
    let mut ended = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let SessionEvent::Ended { state, .. } = event {
            ended.push(state);
        }
    }
    ended
}

/// The answers slower than [`ANSWER_WITHIN`], and the slowest.
fn lateness(latencies: &[Duration]) -> (Vec<&Duration>, Duration) {
    let late = latencies.iter().filter(|l| **l > ANSWER_WITHIN).collect();
    (late, latencies.iter().max().copied().unwrap_or_default())
}

fn first_error(response: &kafka_protocol::messages::ProduceResponse) -> i16 {
    response.responses[0].partition_responses[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_log_dir_delays_neither_other_connections_nor_the_zookeeper_session() {
    let chroot = unique_chroot("diskstall");
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("slow");
    let spec = BrokerSpec::new(5, &zookeeper().connect(&chroot)).session_timeout_ms(1_500);
    let pairs = spec.pairs(&dir);
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let addr = format!("127.0.0.1:{}", broker.advertised_endpoints()[0].port);
    let zk = broker.zk_session().clone();
    zk.create(
        "/brokers/topics/stalled",
        br#"{"version":1,"partitions":{"0":[5]}}"#,
        CreateMode::Persistent,
    )
    .await
    .expect("topic");
    let tp = TopicPartition {
        topic: "stalled".into(),
        partition: 0,
    };
    wait_until(Duration::from_secs(20), "broker 5 to lead stalled-0", || async {
        broker.replica_manager().partition(&tp).is_some_and(|p| p.is_leader())
    })
    .await;
    let mut producers = Vec::new();
    for _ in 0..PRODUCERS {
        producers.push(Wire::connect(&addr).await);
    }
    assert_eq!(
        first_error(&producers[0].send(&produce_request(), 7).await),
        0,
        "a produce before the stall"
    );
    let mut probe = Wire::connect(&addr).await;
    let registered = zk.exists("/brokers/ids/5").await.expect("exists").expect("registered");
    let epoch = broker.broker_epoch();
    let mut session_events = zk.subscribe();

    let stalled_dir: &Path = &dir;
    broker.log_manager().faults().stall_dir(stalled_dir, STALL);
    let started = Instant::now();
    let mut produces = tokio::task::JoinSet::new();
    for mut wire in producers {
        produces.spawn(async move { first_error(&wire.send(&produce_request(), 7).await) });
    }
    // Probe through the first two stalled writes and into the third (the produces queue on the
    // partition one after the other).
    let mut latencies = Vec::new();
    let mut pace = tokio::time::interval(Duration::from_millis(20));
    let mut answered = tokio::time::Instant::now();
    while started.elapsed() < STALL * 2 + STALL / 4 {
        // Counted from when the probe was due: a frozen runtime (the broker's is this test's)
        // delays the sending too, as it would a client's request sitting in the socket.
        // From the later of when it was due and when the previous answer came, so one late
        // answer does not make the ticks it held up count as late too.
        let due = pace.tick().await.max(answered);
        match tokio::time::timeout(STALL * 2, probe.send(&ApiVersionsRequest::default(), 2)).await {
            Ok(versions) => assert_eq!(versions.error_code, 0),
            Err(_) => {
                latencies.push(due.elapsed()); // unanswered: the broker is frozen
                break;
            }
        }
        latencies.push(due.elapsed());
        let sent = tokio::time::Instant::now();
        match tokio::time::timeout(STALL * 2, probe.send(&MetadataRequest::default().with_topics(None), 12)).await {
            Ok(metadata) => assert_eq!(metadata.brokers.len(), 1),
            Err(_) => {
                latencies.push(sent.elapsed());
                break;
            }
        }
        latencies.push(sent.elapsed());
        answered = tokio::time::Instant::now();
    }
    broker.log_manager().faults().stall_dir(stalled_dir, Duration::ZERO);
    while let Some(code) = produces.join_next().await {
        assert_eq!(
            code.expect("producer task"),
            0,
            "the stalled produces succeed in the end"
        );
    }
    let stalled_for = started.elapsed();

    // A session lost meanwhile shows at the next request at the latest: its end and a new
    // registration (another czxid, the broker epoch).
    let now = zk.exists("/brokers/ids/5").await.ok().flatten().map(|s| s.czxid);
    let ended = sessions_ended(&mut session_events);
    let (late, worst) = lateness(&latencies);
    eprintln!(
        "{} answers during a {stalled_for:?} stall: worst {worst:?}, {} over {ANSWER_WITHIN:?}",
        latencies.len(),
        late.len()
    );
    assert!(
        stalled_for >= STALL,
        "the produces waited for the stalled disk ({stalled_for:?})"
    );
    assert!(
        late.len() * 1000 <= latencies.len() * LATE_PER_MILLE && worst <= NEVER_LATER_THAN,
        "other connections were held up by the stalled disk: late answers {late:?}"
    );
    assert!(ended.is_empty(), "the ZooKeeper session ended: {ended:?}");
    assert_eq!(
        now,
        Some(registered.czxid),
        "the broker's registration was lost or renewed"
    );
    assert_eq!(broker.broker_epoch(), epoch);
    broker.shutdown().await.expect("shutdown");
}

/// Appends to a partition in a healthy log dir are answered at once while every write in the
/// broker's other log dir takes 2 s and produces into that dir queue behind the stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_log_dir_does_not_hold_up_appends_in_another_log_dir() {
    let chroot = unique_chroot("diskstall2");
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = [root.path().join("a"), root.path().join("b")];
    let spec = BrokerSpec::new(6, &zookeeper().connect(&chroot)).session_timeout_ms(6_000);
    let mut pairs = spec.pairs(&dirs[0]);
    for (key, value) in pairs.iter_mut() {
        if key == "log.dirs" {
            *value = format!("{},{}", dirs[0].display(), dirs[1].display());
        }
    }
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let broker = Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
        .await
        .expect("start");
    let addr = format!("127.0.0.1:{}", broker.advertised_endpoints()[0].port);
    let zk = broker.zk_session().clone();
    let mut tps = Vec::new();
    for topic in ["stalled", "healthy"] {
        zk.create(
            &format!("/brokers/topics/{topic}"),
            br#"{"version":1,"partitions":{"0":[6]}}"#,
            CreateMode::Persistent,
        )
        .await
        .expect("topic");
        let tp = TopicPartition {
            topic: topic.into(),
            partition: 0,
        };
        wait_until(Duration::from_secs(20), "broker 6 to lead the partition", || async {
            broker.replica_manager().partition(&tp).is_some_and(|p| p.is_leader())
        })
        .await;
        tps.push(tp);
    }
    let dir_of = |tp: &TopicPartition| {
        broker
            .replica_manager()
            .partition(tp)
            .expect("hosted")
            .log_dir()
            .to_path_buf()
    };
    let (slow, fast) = (dir_of(&tps[0]), dir_of(&tps[1]));
    assert_ne!(slow, fast, "the two partitions are in different log dirs");

    let mut healthy = Wire::connect(&addr).await;
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let mut wire = Wire::connect(&addr).await;
        assert_eq!(first_error(&wire.send(&produce_to("stalled"), 7).await), 0);
        stalled.push(wire);
    }
    assert_eq!(first_error(&healthy.send(&produce_to("healthy"), 7).await), 0);

    broker.log_manager().faults().stall_dir(&slow, STALL);
    let started = Instant::now();
    let mut produces = tokio::task::JoinSet::new();
    for mut wire in stalled {
        produces.spawn(async move { first_error(&wire.send(&produce_to("stalled"), 7).await) });
    }
    // Until the first stalled write ends: every append in the healthy dir is answered at once.
    let mut latencies = Vec::new();
    while started.elapsed() < STALL * 3 / 4 {
        let sent = Instant::now();
        let answer = tokio::time::timeout(STALL, healthy.send(&produce_to("healthy"), 7))
            .await
            .map(|r| first_error(&r));
        latencies.push(sent.elapsed());
        assert_eq!(answer, Ok(0), "a produce into the healthy dir was answered");
    }
    assert!(
        latencies.len() >= 10,
        "appends went on in the healthy dir meanwhile ({} of them)",
        latencies.len()
    );
    broker.log_manager().faults().stall_dir(&slow, Duration::ZERO);
    while let Some(code) = produces.join_next().await {
        assert_eq!(
            code.expect("producer task"),
            0,
            "the stalled produces succeed in the end"
        );
    }
    assert!(
        started.elapsed() >= STALL,
        "the stalled produces waited for the stalled disk"
    );
    let late = latencies.iter().filter(|l| **l > ANSWER_WITHIN).count();
    let worst = latencies.iter().max().copied().unwrap_or_default();
    eprintln!(
        "{} healthy-dir produces during the stall: worst {worst:?}, {late} over {ANSWER_WITHIN:?}",
        latencies.len()
    );
    assert!(
        late * 1000 <= latencies.len() * LATE_PER_MILLE && worst <= NEVER_LATER_THAN,
        "appends in the healthy log dir waited for the stalled one: {latencies:?}"
    );
    broker.shutdown().await.expect("shutdown");
}

/// A runtime of its own for a second broker, shut down without waiting (also when the test
/// fails: dropping a runtime inside another one would panic).
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl OwnRuntime {
    fn one_worker() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        OwnRuntime(Some(rt))
    }

    fn handle(&self) -> tokio::runtime::Handle {
        self.0.as_ref().expect("runtime").handle().clone()
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// The follower broker runs on a runtime of one async worker: a follower append (or anything
/// waiting for the partition's lock behind it) on that worker would freeze the whole broker
/// for the stall, its ZooKeeper session (1.5 s) included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_log_dir_stalls_keeps_answering_and_keeps_its_session() {
    let chroot = unique_chroot("diskstall3");
    let root = tempfile::tempdir().expect("tempdir");
    let connect = zookeeper().connect(&chroot);
    let start = |spec: BrokerSpec, dir: std::path::PathBuf| {
        let pairs = spec.pairs(&dir);
        async move {
            let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Broker::start(&KafkaConfig::from_pairs(&refs).expect("config"))
                .await
                .expect("start")
        }
    };
    let leader = start(BrokerSpec::new(7, &connect), root.path().join("leader")).await;
    let follower_rt = OwnRuntime::one_worker();
    let follower_dir = root.path().join("follower");
    let follower = follower_rt
        .handle()
        .spawn(start(
            BrokerSpec::new(8, &connect).session_timeout_ms(1_500),
            follower_dir.clone(),
        ))
        .await
        .expect("follower start");
    let leader_addr = format!("127.0.0.1:{}", leader.advertised_endpoints()[0].port);
    let follower_addr = format!("127.0.0.1:{}", follower.advertised_endpoints()[0].port);
    let zk = follower.zk_session().clone();
    wait_until(Duration::from_secs(20), "both brokers registered", || async {
        zk.children("/brokers/ids").await.is_ok_and(|ids| ids.len() == 2)
    })
    .await;
    zk.create(
        "/brokers/topics/followed",
        br#"{"version":1,"partitions":{"0":[7,8]}}"#,
        CreateMode::Persistent,
    )
    .await
    .expect("topic");
    let tp = TopicPartition {
        topic: "followed".into(),
        partition: 0,
    };
    wait_until(
        Duration::from_secs(20),
        "7 to lead followed-0 and 8 to follow it",
        || async {
            leader.replica_manager().partition(&tp).is_some_and(|p| p.is_leader())
                && follower
                    .replica_manager()
                    .partition(&tp)
                    .is_some_and(|p| !p.is_leader())
        },
    )
    .await;
    let mut producer = Wire::connect(&leader_addr).await;
    assert_eq!(first_error(&producer.send(&produce_to("followed"), 7).await), 0);
    let leo = |broker: &kastle::server::BrokerHandle| {
        broker
            .replica_manager()
            .partition(&tp)
            .map_or(-1, |p| p.log_end_offset())
    };
    wait_until(
        Duration::from_secs(20),
        "the follower to replicate the first record",
        || async { leo(&follower) == 1 },
    )
    .await;
    let mut probe = Wire::connect(&follower_addr).await;
    let registered = zk.exists("/brokers/ids/8").await.expect("exists").expect("registered");
    let epoch = follower.broker_epoch();
    let mut session_events = zk.subscribe();

    follower.log_manager().faults().stall_dir(&follower_dir, STALL);
    let started = Instant::now();
    // Records for the follower to append into its stalled dir, one produce after another.
    let produced = tokio::spawn(async move {
        let mut n = 0;
        while started.elapsed() < STALL * 2 {
            assert_eq!(first_error(&producer.send(&produce_to("followed"), 7).await), 0);
            n += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        n
    });
    let mut latencies = Vec::new();
    let mut pace = tokio::time::interval(Duration::from_millis(20));
    let mut answered = tokio::time::Instant::now();
    // Once the follower is into its first stalled append, a read of its LEO (off the test's
    // async workers) waits for the partition's lock until that write ends.
    let mut locked_read = None;
    while started.elapsed() < STALL * 2 + STALL / 4 {
        if locked_read.is_none() && started.elapsed() >= STALL / 4 {
            let p = follower.replica_manager().partition(&tp).expect("hosted");
            locked_read = Some(tokio::task::spawn_blocking(move || {
                p.log_end_offset();
                started.elapsed()
            }));
        }
        let due = pace.tick().await.max(answered);
        match tokio::time::timeout(STALL * 2, probe.send(&ApiVersionsRequest::default(), 2)).await {
            Ok(versions) => assert_eq!(versions.error_code, 0),
            Err(_) => {
                latencies.push(due.elapsed());
                break;
            }
        }
        latencies.push(due.elapsed());
        let sent = tokio::time::Instant::now();
        match tokio::time::timeout(STALL * 2, probe.send(&MetadataRequest::default().with_topics(None), 12)).await {
            Ok(metadata) => assert_eq!(metadata.brokers.len(), 2),
            Err(_) => {
                latencies.push(sent.elapsed());
                break;
            }
        }
        latencies.push(sent.elapsed());
        answered = tokio::time::Instant::now();
    }
    let read_at = match locked_read {
        Some(read) => read.await.expect("LEO reader"),
        None => Duration::ZERO,
    };
    follower.log_manager().faults().stall_dir(&follower_dir, Duration::ZERO);
    let produced = produced.await.expect("producer task");
    wait_until(
        Duration::from_secs(20),
        "the follower to catch up after the stall",
        || async { leo(&follower) == 1 + produced },
    )
    .await;
    assert_eq!(leo(&leader), 1 + produced);

    let now = zk.exists("/brokers/ids/8").await.ok().flatten().map(|s| s.czxid);
    let ended = sessions_ended(&mut session_events);
    let (late, worst) = lateness(&latencies);
    eprintln!(
        "{} follower answers during the stall ({produced} records produced, the follower's LEO readable after {read_at:?}): worst {worst:?}, {} over {ANSWER_WITHIN:?}",
        latencies.len(),
        late.len()
    );
    assert!(
        read_at >= STALL,
        "the follower's append waited for its stalled disk (its log was free after {read_at:?})"
    );
    assert!(
        late.len() * 1000 <= latencies.len() * LATE_PER_MILLE && worst <= NEVER_LATER_THAN,
        "the follower broker was held up by its stalled disk: late answers {late:?}"
    );
    assert!(ended.is_empty(), "the follower's ZooKeeper session ended: {ended:?}");
    assert_eq!(
        now,
        Some(registered.czxid),
        "the follower's registration was lost or renewed"
    );
    assert_eq!(follower.broker_epoch(), epoch);
    follower_rt
        .handle()
        .spawn(follower.shutdown())
        .await
        .expect("follower shutdown task")
        .expect("follower shutdown");
    leader.shutdown().await.expect("shutdown");
}
