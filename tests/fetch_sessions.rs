//! KIP-227 incremental fetch sessions against a real broker, driven as Java's
//! `FetchSessionHandler` drives them through the internal client: a full fetch creates the
//! session, incremental fetches add, update and forget partitions and get back only partitions
//! with news, a long poll watches the session's implied partitions, and the session errors
//! (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) and cache eviction
//! (`max.incremental.fetch.session.cache.slots`) are answered as Kafka answers them; and a
//! follower replicates through one session with its leader.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{cluster_ready, create_topic_by_hand};
use common::replicas::spec;
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, MetadataRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kastle::client::BrokerConnection;
use kastle::protocol::error_codes as ec;
use kastle::protocol::test_support::build_batch;

const TOPIC: &str = "sessions";
const VERSION: i16 = 12;

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// A consumer's fetch: session `id` at `epoch`, listing `(partition, offset)` and forgetting
/// `forget`.
fn fetch(id: i32, epoch: i32, send: &[(i32, i64)], forget: &[i32], max_wait_ms: i32) -> FetchRequest {
    let partitions = send
        .iter()
        .map(|&(p, offset)| {
            FetchPartition::default()
                .with_partition(p)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)
        })
        .collect::<Vec<_>>();
    let topics = if partitions.is_empty() {
        vec![]
    } else {
        vec![FetchTopic::default()
            .with_topic(name(TOPIC))
            .with_partitions(partitions)]
    };
    let forgotten = if forget.is_empty() {
        vec![]
    } else {
        vec![ForgottenTopic::default()
            .with_topic(name(TOPIC))
            .with_partitions(forget.to_vec())]
    };
    FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 24)
        .with_isolation_level(0)
        .with_session_id(id)
        .with_session_epoch(epoch)
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten)
}

/// `(partition, record bytes, high watermark)` of every partition the answer carries.
fn answered(r: &FetchResponse) -> Vec<(i32, usize, i64)> {
    let mut out: Vec<(i32, usize, i64)> = r
        .responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                assert_eq!(p.error_code, ec::NONE, "partition {} error", p.partition_index);
                (
                    p.partition_index,
                    p.records.as_ref().map_or(0, |b| b.len()),
                    p.high_watermark,
                )
            })
        })
        .collect();
    out.sort();
    out
}

fn partitions_of(r: &FetchResponse) -> Vec<i32> {
    answered(r).into_iter().map(|(p, _, _)| p).collect()
}

async fn produce(conn: &BrokerConnection, partition: i32, value: &[u8]) {
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(build_batch(0, -1, &[(None, Some(value))], 1).into()))])]);
    let response = conn.send(request, 7).await.expect("produce");
    assert_eq!(response.responses[0].partition_responses[0].error_code, ec::NONE);
}

async fn send(conn: &BrokerConnection, request: FetchRequest) -> FetchResponse {
    conn.send(request, VERSION).await.expect("fetch")
}

/// One broker with a three-partition topic; connections to it.
async fn broker(test: &str, extra: &[(&str, &str)]) -> (BrokerProcess, BrokerConnection, BrokerConnection) {
    let chroot = unique_chroot(test);
    let broker = BrokerProcess::start(&spec(&chroot, 1, extra));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    create_topic_by_hand(&zk, TOPIC, r#"{"0":[1],"1":[1],"2":[1]}"#).await;
    let addr = bootstrap_of(&zk, 1).await;
    zk.close().await;
    let connect = || BrokerConnection::connect(addr.clone(), "java-style-consumer", Duration::from_secs(10));
    let a = connect().await.expect("connect");
    let b = connect().await.expect("connect");
    wait_until(Duration::from_secs(20), "three partitions led", || async {
        let m = a
            .send(MetadataRequest::default().with_topics(None), 9)
            .await
            .expect("metadata");
        m.topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == TOPIC))
            .is_some_and(|t| t.partitions.len() == 3 && t.partitions.iter().all(|p| p.leader_id.0 == 1))
    })
    .await;
    (broker, a, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incremental_session_adds_and_forgets_partitions_and_gets_only_changes() {
    let (_broker, conn, producer) = broker("sessions-incremental", &[]).await;
    produce(&producer, 0, b"zero").await;

    // Full fetch (epoch 0): a new session, every listed partition answered.
    let full = send(&conn, fetch(0, 0, &[(0, 0), (1, 0)], &[], 0)).await;
    assert_eq!(full.error_code, ec::NONE);
    let id = full.session_id;
    assert_ne!(id, 0, "a full fetch at epoch 0 creates a session");
    let got = answered(&full);
    assert_eq!(got.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 1]);
    assert!(got[0].1 > 0 && got[0].2 == 1, "partition 0 has its record: {got:?}");

    // Epoch 1: move partition 0 past its record, add partition 2. Only the added one has news.
    let r = send(&conn, fetch(id, 1, &[(0, 1), (2, 0)], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));
    assert_eq!(
        partitions_of(&r),
        vec![2],
        "only the added partition: {:?}",
        answered(&r)
    );

    // Epoch 2: nothing listed; a record on partition 1 is the only news.
    produce(&producer, 1, b"one").await;
    let r = send(&conn, fetch(id, 2, &[], &[], 0)).await;
    let got = answered(&r);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].0 == 1 && got[0].1 > 0 && got[0].2 == 1, "{got:?}");

    // Epoch 3: forget partition 1 (after reading its record); nothing changed since.
    let r = send(&conn, fetch(id, 3, &[(1, 1)], &[1], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));
    assert!(partitions_of(&r).is_empty(), "{:?}", answered(&r));
    // A forgotten partition is not read any more.
    produce(&producer, 1, b"one again").await;
    let r = send(&conn, fetch(id, 4, &[], &[], 0)).await;
    assert!(partitions_of(&r).is_empty(), "{:?}", answered(&r));

    // A long poll on an empty incremental request wakes for the implied partition 2.
    let started = Instant::now();
    let poll = tokio::spawn({
        let request = fetch(id, 5, &[], &[], 20_000);
        async move { (conn.send(request, VERSION).await.expect("fetch"), conn) }
    });
    produce(&producer, 2, b"two").await;
    let (r, conn) = poll.await.expect("poll");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the poll waited out its max wait"
    );
    let got = answered(&r);
    assert!(got.len() == 1 && got[0].0 == 2 && got[0].1 > 0, "{got:?}");

    // A wrong epoch: INVALID_FETCH_SESSION_EPOCH, no partitions, session kept.
    let r = send(&conn, fetch(id, 9, &[], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::INVALID_FETCH_SESSION_EPOCH, 0));
    assert!(r.responses.is_empty());
    // A replay of the last epoch is refused too; the right one still works.
    let r = send(&conn, fetch(id, 5, &[], &[], 0)).await;
    assert_eq!(r.error_code, ec::INVALID_FETCH_SESSION_EPOCH);
    let r = send(&conn, fetch(id, 6, &[], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));

    // An unknown session: FETCH_SESSION_ID_NOT_FOUND.
    let unknown = if id == i32::MAX { 1 } else { id + 1 };
    let r = send(&conn, fetch(unknown, 1, &[(0, 0)], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::FETCH_SESSION_ID_NOT_FOUND, 0));
    assert!(r.responses.is_empty());

    // A full fetch at FINAL_EPOCH closes the session and answers without one.
    let r = send(&conn, fetch(id, -1, &[(0, 0)], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, 0));
    assert_eq!(partitions_of(&r), vec![0]);
    let r = send(&conn, fetch(id, 7, &[], &[], 0)).await;
    assert_eq!(r.error_code, ec::FETCH_SESSION_ID_NOT_FOUND);

    // Sessionless (id 0, epoch -1) is always full.
    let r = send(&conn, fetch(0, -1, &[(0, 1), (1, 2)], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, 0));
    assert_eq!(partitions_of(&r), vec![0, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_cache_refuses_then_evicts_the_least_recently_used_stale_session() {
    const EVICTION_MS: u64 = 2_000;
    let eviction = EVICTION_MS.to_string();
    let (_broker, conn, _) = broker(
        "sessions-evict",
        &[
            ("max.incremental.fetch.session.cache.slots", "2"),
            ("min.incremental.fetch.session.eviction.ms", eviction.as_str()),
        ],
    )
    .await;
    let a = send(&conn, fetch(0, 0, &[(0, 0)], &[], 0)).await.session_id;
    let b_created = Instant::now();
    let b = send(&conn, fetch(0, 0, &[(1, 0)], &[], 0)).await.session_id;
    assert!(a != 0 && b != 0 && a != b);
    // The cache is full of fresh sessions: a third fetcher is served without one.
    let c = send(&conn, fetch(0, 0, &[(2, 0)], &[], 0)).await;
    if b_created.elapsed() < Duration::from_millis(EVICTION_MS / 2) {
        assert_eq!((c.error_code, c.session_id), (ec::NONE, 0));
        assert_eq!(partitions_of(&c), vec![2], "still answered in full");
    }
    // `b` stays in use; `a` goes stale and is evicted for the next newcomer.
    let b_epoch = std::cell::Cell::new(1);
    let c_id = std::cell::Cell::new(0);
    wait_until(Duration::from_secs(30), "a new session evicts the idle one", || {
        let (conn, b_epoch, c_id) = (&conn, &b_epoch, &c_id);
        async move {
            let r = conn
                .send(fetch(b, b_epoch.get(), &[], &[], 0), VERSION)
                .await
                .expect("fetch");
            assert_eq!((r.error_code, r.session_id), (ec::NONE, b), "the used session stays");
            b_epoch.set(b_epoch.get() + 1);
            let c = conn.send(fetch(0, 0, &[(2, 0)], &[], 0), VERSION).await.expect("fetch");
            c_id.set(c.session_id);
            c.session_id != 0
        }
    })
    .await;
    let (b_epoch, c_id) = (b_epoch.get(), c_id.get());
    assert!(c_id != a && c_id != b);
    let r = send(&conn, fetch(a, 1, &[], &[], 0)).await;
    assert_eq!(
        (r.error_code, r.session_id),
        (ec::FETCH_SESSION_ID_NOT_FOUND, 0),
        "the evicted session"
    );
    let r = send(&conn, fetch(b, b_epoch, &[], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, b));
    let r = send(&conn, fetch(c_id, 1, &[], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::NONE, c_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_keeps_one_incremental_session_with_its_leader() {
    const SESSIONS: &str = "kafka_server_fetchsessioncache_numincrementalfetchsessions";
    const CACHED: &str = "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached";
    let chroot = unique_chroot("sessions-follower");
    let metrics = format!("127.0.0.1:{}", common::zookeeper::free_port());
    let extra = [("replica.fetch.wait.max.ms", "100")];
    let _brokers: Vec<BrokerProcess> = (1..=2)
        .map(|id| {
            let s = spec(&chroot, id, &extra);
            BrokerProcess::start(&if id == 1 {
                s.with("metrics.listener", &metrics)
            } else {
                s
            })
        })
        .collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 2).await;
    create_topic_by_hand(&zk, TOPIC, r#"{"0":[1,2],"1":[1,2],"2":[1,2]}"#).await;
    let addr = bootstrap_of(&zk, 1).await;
    zk.close().await;
    // The follower's fetcher opened one session holding the three partitions it follows.
    common::wait_for_metrics(&metrics, &[&format!("{SESSIONS} 1"), &format!("{CACHED} 3")]).await;
    let conn = BrokerConnection::connect(addr, "producer", Duration::from_secs(10))
        .await
        .expect("connect");
    // acks=all writes need the follower's fetches; they go on in the same session.
    for _ in 0..5 {
        for p in 0..3 {
            let request = ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(10_000)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(name(TOPIC))
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(p)
                        .with_records(Some(build_batch(0, -1, &[(None, Some(b"r"))], 1).into()))])]);
            wait_until(Duration::from_secs(20), "an acks=all write", || {
                let (conn, request) = (&conn, request.clone());
                async move {
                    let r = conn.send(request, 7).await.expect("produce");
                    r.responses[0].partition_responses[0].error_code == ec::NONE
                }
            })
            .await;
        }
    }
    let body = common::cluster::scrape(&metrics).unwrap_or_default();
    assert_eq!(common::cluster::sample(&body, SESSIONS), Some(1.0), "still one session");
    assert_eq!(common::cluster::sample(&body, CACHED), Some(3.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_id_sessions_fetch_by_id_and_refuse_a_switch_to_names() {
    let (_broker, conn, producer) = broker("sessions-topic-ids", &[]).await;
    produce(&producer, 0, b"zero").await;
    let metadata = conn
        .send(MetadataRequest::default().with_topics(None), 12)
        .await
        .expect("metadata");
    let topic_id = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == TOPIC))
        .map(|t| t.topic_id)
        .expect("topic id");
    let by_id = |id: i32, epoch: i32, send: &[(i32, i64)], forget: &[i32]| {
        let mut r = fetch(id, epoch, send, forget, 0);
        for t in &mut r.topics {
            t.topic_id = topic_id;
        }
        for t in &mut r.forgotten_topics_data {
            t.topic_id = topic_id;
        }
        r
    };
    let full = conn.send(by_id(0, 0, &[(0, 0), (1, 0)], &[]), 13).await.expect("fetch");
    assert_eq!(full.error_code, ec::NONE);
    assert_ne!(full.session_id, 0);
    assert_eq!(full.responses.len(), 1);
    assert_eq!(full.responses[0].topic_id, topic_id);
    assert_eq!(partitions_of(&full), vec![0, 1]);
    let id = full.session_id;
    // Incremental by id: forget partition 1, a record on partition 0 is the only news.
    produce(&producer, 0, b"again").await;
    let r = conn.send(by_id(id, 1, &[], &[1]), 13).await.expect("fetch");
    assert_eq!((r.error_code, r.session_id), (ec::NONE, id));
    assert_eq!(partitions_of(&r), vec![0]);
    assert_eq!(r.responses[0].topic_id, topic_id);
    // The same session continued with names (v12): FETCH_SESSION_TOPIC_ID_ERROR.
    let r = send(&conn, fetch(id, 2, &[], &[], 0)).await;
    assert_eq!((r.error_code, r.session_id), (ec::FETCH_SESSION_TOPIC_ID_ERROR, 0));
}
