//! Helpers for tests of a cluster of broker processes and its controller: starting brokers
//! with a short ZooKeeper session, waiting for a controller, reading what the controller wrote,
//! asking a broker for Metadata, scraping a broker's Prometheus endpoint.

use std::time::Duration;

use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
use kastle::zk::models::{ControllerZNode, PartitionState, ZNodePayload};
use kastle::zk::paths::ZNodeKind;
use kastle::zk::store::{CreateMode, ZkStore};
use kastle::zk::ZkSession;

use super::wire::Wire;
use super::{bootstrap_of, wait_until, zookeeper, BrokerProcess, BrokerSpec};

/// The brokers' ZooKeeper session timeout: short, so deaths are noticed quickly.
pub const SESSION_MS: u64 = 3_000;

pub async fn controller_of(zk: &ZkSession) -> Option<i32> {
    let (data, _) = zk.get_data("/controller").await.ok()?;
    ControllerZNode::decode(&data).ok().map(|c| c.brokerid.0)
}

pub async fn controller_epoch(zk: &ZkSession) -> i32 {
    let (data, _) = zk.get_data("/controller_epoch").await.expect("epoch");
    String::from_utf8_lossy(&data).trim().parse().expect("decimal")
}

/// A partition's state znode, checked against its schema.
pub async fn state(zk: &ZkSession, topic: &str, partition: i32) -> Option<PartitionState> {
    let (data, _) = zk
        .get_data(&format!("/brokers/topics/{topic}/partitions/{partition}/state"))
        .await
        .ok()?;
    let problems = kastle::zk::schema::validate(ZNodeKind::PartitionState, &data).expect("schema");
    assert!(problems.is_empty(), "{problems:?}");
    PartitionState::decode(&data).ok()
}

pub fn start(chroot: &str, ids: &[i32]) -> Vec<BrokerProcess> {
    start_with(chroot, ids, |spec| spec)
}

/// Brokers `ids` with the test session timeout, each spec adjusted by `adjust`.
pub fn start_with(chroot: &str, ids: &[i32], adjust: impl Fn(BrokerSpec) -> BrokerSpec) -> Vec<BrokerProcess> {
    ids.iter()
        .map(|id| {
            BrokerProcess::start(&adjust(
                BrokerSpec::new(*id, &zookeeper().connect(chroot)).session_timeout_ms(SESSION_MS),
            ))
        })
        .collect()
}

/// All `n` brokers registered and a controller elected.
pub async fn cluster_ready(zk: &ZkSession, n: usize) {
    all_registered(zk, n).await;
    wait_until(Duration::from_secs(20), "a controller", || async {
        controller_of(zk).await.is_some()
    })
    .await;
}

/// The deadline is generous: a test that starts its own ZooKeeper JVM and three broker
/// processes beside other such tests can take well over 20 s on two busy cores.
pub async fn all_registered(zk: &ZkSession, n: usize) {
    wait_until(Duration::from_secs(60), "brokers registered", || async {
        zk.children("/brokers/ids").await.map(|c| c.len() == n).unwrap_or(false)
    })
    .await;
}

/// Writes a topic the way an operator with zkCli (or Kafka 2.x's `--zookeeper` tools) would.
pub async fn create_topic_by_hand(zk: &ZkSession, topic: &str, assignment: &str) {
    zk.create(
        &format!("/brokers/topics/{topic}"),
        format!(r#"{{"version":1,"partitions":{assignment}}}"#).as_bytes(),
        CreateMode::Persistent,
    )
    .await
    .expect("write topic");
}

/// Metadata (v12, every topic) as broker `id` answers it.
pub async fn metadata(zk: &ZkSession, id: i32) -> MetadataResponse {
    let mut wire = Wire::connect(&bootstrap_of(zk, id).await).await;
    wire.send(&MetadataRequest::default().with_topics(None), 12).await
}

/// `(leader, replicas, isr)` of a partition in a Metadata response, if listed.
pub fn partition_in(response: &MetadataResponse, topic: &str, partition: i32) -> Option<(i32, Vec<i32>, Vec<i32>)> {
    let t = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))?;
    let p = t.partitions.iter().find(|p| p.partition_index == partition)?;
    Some((
        p.leader_id.0,
        p.replica_nodes.iter().map(|b| b.0).collect(),
        p.isr_nodes.iter().map(|b| b.0).collect(),
    ))
}

/// The Prometheus text a `metrics.listener` serves, `None` while it is not up.
pub fn scrape(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

/// The value of an unlabelled sample `name` in Prometheus text.
pub fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Each broker's value of the unlabelled sample `name` at its metrics address (0 where it is
/// not reported).
pub fn samples_at(metrics: &[String], name: &str) -> Vec<f64> {
    metrics
        .iter()
        .map(|a| scrape(a).and_then(|b| sample(&b, name)).unwrap_or(0.0))
        .collect()
}

/// Whether `brokers` brokers are registered, exactly one of them (by its metrics) is the active
/// controller, and `/controller` names one.
pub async fn registered_with_one_controller(zk: &ZkSession, metrics: &[String], brokers: usize) -> bool {
    let registered = zk
        .children("/brokers/ids")
        .await
        .map(|b| b.len() == brokers)
        .unwrap_or(false);
    let active: f64 = samples_at(metrics, "kafka_controller_kafkacontroller_activecontrollercount")
        .iter()
        .sum();
    registered && active == 1.0 && controller_of(zk).await.is_some()
}
