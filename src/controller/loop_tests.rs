//! The controller's event loop on [`FakeZk`], with its requests to brokers caught by a
//! [`Transport::Sink`]: election and failover, topic creation, broker death, a zombie
//! controller fenced off, and topic deletion. No ZooKeeper server and no broker processes;
//! each test waits for conditions with a deadline, never for a fixed time.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use kafka_protocol::messages::stop_replica_response::StopReplicaPartitionError;
use kafka_protocol::messages::StopReplicaResponse;
use tokio::sync::{mpsc, watch};

use super::channel::{self, ControlRequest, Sent, Transport};
use super::handle::{start_with, ControllerConfig, ControllerHandle};
use super::model::LeaderAndIsr;
use super::zk_ops::{self, ControllerZkError};
use super::ControllerError;
use crate::types::{BrokerId, ControllerEpoch, ZkVersion};
use crate::zk::fake::FakeZk;
use crate::zk::kafka_zk_client::KafkaZkClient;
use crate::zk::models::{AdvertisedEndpoint, BrokerRegistration, ControllerZNode, ZNodePayload};
use crate::zk::paths;
use crate::zk::store::{CreateMode, Op, ZkStore};

const DEADLINE: Duration = Duration::from_secs(10);

/// Polls `check` until it holds or the deadline passes (then fails naming `what`).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One broker: its ZooKeeper session (registration and controller share it), its controller
/// and the requests that controller sends.
struct Broker {
    id: BrokerId,
    zk: FakeZk,
    controller: ControllerHandle,
    sent: mpsc::UnboundedReceiver<Sent>,
    _stop: watch::Sender<bool>,
}

impl Broker {
    /// The next request this broker's controller sends that `wanted` accepts (others skipped).
    async fn next_sent(&mut self, what: &str, wanted: impl Fn(&Sent) -> bool) -> Sent {
        let found = tokio::time::timeout(DEADLINE, async {
            loop {
                match self.sent.recv().await {
                    Some(s) if wanted(&s) => return Some(s),
                    Some(_) => {}
                    None => return None,
                }
            }
        })
        .await;
        match found {
            Ok(Some(s)) => s,
            _ => panic!("controller of broker {} never sent {what}", self.id),
        }
    }

    async fn active_epoch(&self) -> ControllerEpoch {
        let mut state = self.controller.subscribe();
        let epoch = tokio::time::timeout(DEADLINE, state.wait_for(|e| e.is_some())).await;
        match epoch {
            Ok(Ok(e)) => e.unwrap_or(ControllerEpoch(-1)),
            _ => panic!("broker {} never became the controller", self.id),
        }
    }
}

/// A ZooKeeper tree as the brokers' start-up leaves it, and an admin client on it.
async fn cluster() -> FakeZk {
    let admin = FakeZk::new();
    KafkaZkClient::new(admin.clone())
        .ensure_persistent_paths()
        .await
        .expect("persistent paths");
    admin
}

fn config(id: BrokerId) -> ControllerConfig {
    ControllerConfig {
        broker_id: id,
        inter_broker_listener: "PLAINTEXT".into(),
        unclean_leader_election: false,
        auto_leader_rebalance: false,
        leader_imbalance_check_interval: Duration::from_secs(300),
        leader_imbalance_per_broker_percentage: 10,
    }
}

/// Registers broker `id` on its own session, without starting its controller.
async fn register(admin: &FakeZk, id: i32) -> FakeZk {
    let zk = admin.with_session();
    let endpoint = AdvertisedEndpoint {
        listener: "PLAINTEXT".into(),
        host: "localhost".into(),
        port: 9000 + id as u16,
        security_protocol: "PLAINTEXT".into(),
    };
    KafkaZkClient::new(zk.clone())
        .register_broker(BrokerId(id), &BrokerRegistration::v5(&[endpoint], None, 1), &[])
        .await
        .expect("register");
    zk
}

/// Registers broker `id` and starts its controller.
async fn broker(admin: &FakeZk, id: i32) -> Broker {
    let zk = register(admin, id).await;
    start_controller(zk, id).await
}

async fn start_controller(zk: FakeZk, id: i32) -> Broker {
    let (tx, sent) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let controller = start_with(config(BrokerId(id)), zk.clone(), stop_rx, Transport::Sink(tx)).await;
    Broker {
        id: BrokerId(id),
        zk,
        controller,
        sent,
        _stop: stop,
    }
}

async fn create_topic(admin: &FakeZk, name: &str, replicas: &[&[i32]]) {
    let assignment: BTreeMap<i32, Vec<BrokerId>> = replicas
        .iter()
        .enumerate()
        .map(|(p, r)| (p as i32, r.iter().map(|b| BrokerId(*b)).collect()))
        .collect();
    KafkaZkClient::new(admin.clone())
        .create_topic(name, &assignment, uuid::Uuid::new_v4(), &BTreeMap::new())
        .await
        .expect("create topic");
}

async fn state(zk: &FakeZk, topic: &str, partition: i32) -> Option<LeaderAndIsr> {
    let key = (topic.to_string(), partition);
    zk_ops::leaderships(zk, std::slice::from_ref(&key))
        .await
        .ok()?
        .remove(&key)
}

async fn controller_epoch(zk: &FakeZk) -> (i32, ZkVersion) {
    let (data, stat) = zk.get_data(paths::CONTROLLER_EPOCH).await.expect("epoch znode");
    let text = String::from_utf8(data).expect("utf8");
    (text.trim().parse().expect("number"), stat.version)
}

async fn controller_id(zk: &FakeZk) -> Option<BrokerId> {
    let (data, _) = zk.get_data(paths::CONTROLLER).await.ok()?;
    ControllerZNode::decode(&data).ok().map(|c| c.brokerid)
}

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().map(|b| BrokerId(*b)).collect()
}

/// (partition, leader, leader epoch, isr) of each partition of `topic` a LeaderAndIsr carries.
fn leader_and_isr_states(sent: &Sent, topic: &str) -> Vec<(i32, i32, i32, Vec<i32>)> {
    let ControlRequest::LeaderAndIsr(r) = &sent.request else {
        return Vec::new();
    };
    r.topic_states
        .iter()
        .filter(|t| t.topic_name.0.as_str() == topic)
        .flat_map(|t| t.partition_states.iter())
        .map(|p| {
            (
                p.partition_index,
                p.leader.0,
                p.leader_epoch,
                p.isr.iter().map(|b| b.0).collect(),
            )
        })
        .collect()
}

/// The first broker to run wins `/controller` and bumps `/controller_epoch`; when its session
/// expires the other takes over with the next epoch and announces it in UpdateMetadata.
#[tokio::test]
async fn election_writes_controller_and_bumps_the_epoch_and_failover_moves_it() {
    let admin = cluster().await;
    let first = broker(&admin, 1).await;
    assert_eq!(first.active_epoch().await, ControllerEpoch(1));
    assert_eq!(controller_id(&admin).await, Some(BrokerId(1)));
    assert_eq!(controller_epoch(&admin).await.0, 1);

    let mut second = broker(&admin, 2).await;
    eventually("the controller learning of broker 2", || async {
        controller_id(&admin).await == Some(BrokerId(1))
    })
    .await;
    assert!(!second.controller.is_active(), "one controller at a time");

    first.zk.expire_session();
    assert_eq!(second.active_epoch().await, ControllerEpoch(2));
    assert_eq!(controller_id(&admin).await, Some(BrokerId(2)));
    assert_eq!(controller_epoch(&admin).await.0, 2);
    eventually("broker 1 resigning", || async { !first.controller.is_active() }).await;
    let announced = second
        .next_sent("UpdateMetadata", |s| {
            matches!(s.request, ControlRequest::UpdateMetadata(_))
        })
        .await;
    let ControlRequest::UpdateMetadata(r) = &announced.request else {
        unreachable!()
    };
    assert_eq!((r.controller_id.0, r.controller_epoch), (2, 2));
    assert_eq!(announced.broker, BrokerId(2), "broker 1 is dead: nothing goes to it");
}

/// A new topic's partitions get their first live replica as leader, every live replica in
/// the ISR, leader epoch 0 and this controller's epoch in their state znodes; each replica's
/// broker gets LeaderAndIsr for its partitions only.
#[tokio::test]
async fn a_new_topic_gets_leaders_and_isrs_in_its_state_znodes() {
    let admin = cluster().await;
    let _two = register(&admin, 2).await;
    let _three = register(&admin, 3).await;
    let mut one = broker(&admin, 1).await;
    one.active_epoch().await;
    create_topic(&admin, "t", &[&[1, 2], &[2, 3]]).await;
    eventually("both state znodes", || async {
        state(&admin, "t", 0).await.is_some() && state(&admin, "t", 1).await.is_some()
    })
    .await;
    let p0 = state(&admin, "t", 0).await.expect("p0");
    let p1 = state(&admin, "t", 1).await.expect("p1");
    assert_eq!(
        (p0.leader, p0.leader_epoch, p0.isr.clone(), p0.controller_epoch),
        (Some(BrokerId(1)), 0, ids(&[1, 2]), 1)
    );
    assert_eq!(
        (p1.leader, p1.leader_epoch, p1.isr.clone(), p1.controller_epoch),
        (Some(BrokerId(2)), 0, ids(&[2, 3]), 1)
    );
    let to_three = one
        .next_sent("LeaderAndIsr to broker 3", |s| {
            s.broker == BrokerId(3) && !leader_and_isr_states(s, "t").is_empty()
        })
        .await;
    assert_eq!(leader_and_isr_states(&to_three, "t"), vec![(1, 2, 0, vec![2, 3])]);
}

/// When a leader's registration goes, its partitions move to a live ISR member, the dead
/// broker leaves the ISR and the leader epoch goes up; the new leader is told.
#[tokio::test]
async fn a_dead_leaders_partitions_move_to_a_live_isr_member_with_a_new_leader_epoch() {
    let admin = cluster().await;
    let two = register(&admin, 2).await;
    let _three = register(&admin, 3).await;
    let mut one = broker(&admin, 1).await;
    one.active_epoch().await;
    create_topic(&admin, "t", &[&[2, 3]]).await;
    eventually("broker 2 leading t-0", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.leader == Some(BrokerId(2)))
    })
    .await;
    two.expire_session();
    eventually("broker 3 leading t-0", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.leader == Some(BrokerId(3)))
    })
    .await;
    let p0 = state(&admin, "t", 0).await.expect("p0");
    assert_eq!((p0.leader_epoch, p0.isr.clone()), (1, ids(&[3])));
    let told = one
        .next_sent("LeaderAndIsr naming broker 3", |s| {
            s.broker == BrokerId(3) && leader_and_isr_states(s, "t").iter().any(|p| p.1 == 3)
        })
        .await;
    assert_eq!(leader_and_isr_states(&told, "t"), vec![(0, 3, 1, vec![3])]);
}

/// A controller that missed its own replacement (its watches are late) still writes fenced
/// by its epoch's zkVersion: ZooKeeper refuses with BADVERSION, nothing changes, and it
/// resigns instead of acting on a cluster it no longer controls.
#[tokio::test]
async fn a_zombie_controllers_writes_are_refused_and_it_steps_down() {
    let admin = cluster().await;
    let two = register(&admin, 2).await;
    let zombie = broker(&admin, 1).await;
    zombie.active_epoch().await;
    create_topic(&admin, "t", &[&[1, 2]]).await;
    eventually("t-0 with leader 1", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.leader == Some(BrokerId(1)))
    })
    .await;
    let (_, stale_version) = controller_epoch(&admin).await;
    // Broker 1 stops hearing ZooKeeper; broker 2 is elected meanwhile.
    zombie.zk.hold_watches();
    admin.delete(paths::CONTROLLER, None).await.expect("delete /controller");
    let elected = zk_ops::elect(&two, BrokerId(2)).await.expect("elect");
    assert_eq!(elected.map(|(e, _)| e), Some(ControllerEpoch(2)));
    // It heard nothing: an event that writes nothing finds it still active.
    let processed = zombie.controller.elect_leaders(Some(Vec::new()), false).await;
    assert!(
        processed.is_ok() && zombie.controller.is_active(),
        "the zombie missed its replacement"
    );
    assert_eq!(zombie.zk.held_watch_events(), 2, "/controller deleted and created");

    // A controlled shutdown of broker 2 would drop it from t-0's ISR: the write is refused.
    let before = state(&admin, "t", 0).await.expect("state");
    let answer = zombie.controller.controlled_shutdown(BrokerId(2), -1).await;
    assert!(answer.is_err(), "a fenced controller cannot answer: {answer:?}");
    assert!(!zombie.controller.is_active(), "it stepped down");
    assert_eq!(state(&admin, "t", 0).await, Some(before), "nothing written");
    assert_eq!(controller_epoch(&admin).await.0, 2);

    // The fencing itself: a multi checking the old version fails as ControllerMoved.
    let fenced = zk_ops::fenced(
        &zombie.zk,
        stale_version,
        vec![Op::Create {
            path: "/zombie".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        }],
    )
    .await;
    assert!(matches!(fenced, Err(ControllerZkError::ControllerMoved)));
    assert_eq!(admin.exists("/zombie").await.expect("exists"), None);
}

/// Deleting a topic: StopReplica(delete) to each replica; the topic's znodes stay until every
/// replica confirmed, then go with the deletion marker.
#[tokio::test]
async fn a_deleted_topic_is_gone_once_every_replica_confirms() {
    let admin = cluster().await;
    let _two = register(&admin, 2).await;
    let mut one = broker(&admin, 1).await;
    one.active_epoch().await;
    create_topic(&admin, "d", &[&[1, 2]]).await;
    eventually("d-0's state", || async { state(&admin, "d", 0).await.is_some() }).await;
    admin
        .create(&paths::delete_topic("d"), &[], CreateMode::Persistent)
        .await
        .expect("queue deletion");
    let is_delete = |s: &Sent| {
        matches!(&s.request, ControlRequest::StopReplica(r)
            if r.topic_states.iter().any(|t| t.partition_states.iter().any(|p| p.delete_partition)))
    };
    let mut asked = Vec::new();
    for _ in 0..2 {
        asked.push(one.next_sent("StopReplica(delete)", is_delete).await);
    }
    asked.sort_by_key(|s| s.broker);
    assert_eq!(asked.iter().map(|s| s.broker).collect::<Vec<_>>(), ids(&[1, 2]));
    let confirm = |s: &Sent| {
        let ControlRequest::StopReplica(r) = &s.request else {
            unreachable!()
        };
        let ok = StopReplicaResponse::default().with_partition_errors(vec![StopReplicaPartitionError::default()
            .with_topic_name(r.topic_states[0].topic_name.clone())
            .with_partition_index(0)]);
        if let Some(answer) = channel::deletions(r, &ok) {
            s.answer(answer);
        }
    };
    confirm(&asked[0]);
    // One replica is not enough: the topic stays. (An empty ElectLeaders queued behind the
    // answer returns once the answer was processed.)
    let processed = one.controller.elect_leaders(Some(Vec::new()), false).await;
    assert!(processed.is_ok());
    assert!(admin.exists(&paths::topic("d")).await.expect("exists").is_some());
    confirm(&asked[1]);
    eventually("d's znodes gone", || async {
        admin.exists(&paths::topic("d")).await.ok().flatten().is_none()
            && admin.exists(&paths::delete_topic("d")).await.ok().flatten().is_none()
    })
    .await;
    assert!(state(&admin, "d", 0).await.is_none());
}

/// The controller's session expires: it resigns (its `/controller` went with the session);
/// once a new session is up it runs again and wins the next epoch.
#[tokio::test]
async fn an_expired_controller_session_resigns_and_the_new_session_is_elected_again() {
    let admin = cluster().await;
    let one = broker(&admin, 1).await;
    assert_eq!(one.active_epoch().await, ControllerEpoch(1));
    one.zk.expire_session();
    eventually("broker 1 resigning", || async { !one.controller.is_active() }).await;
    assert_eq!(controller_id(&admin).await, None);
    one.zk.renew_session();
    assert_eq!(one.active_epoch().await, ControllerEpoch(2));
    assert_eq!(controller_id(&admin).await, Some(BrokerId(1)));
    assert_eq!(controller_epoch(&admin).await.0, 2);
}

/// The election multi is applied but its reply is lost: the retry meets its own `/controller`
/// (this session's ephemeral, with the payload it wrote) and the epoch it set, so it knows it
/// won epoch 1; the term it acts in is the one in ZooKeeper, and its fenced writes carry it.
#[tokio::test]
async fn a_lost_reply_to_the_election_ends_with_one_controller_whose_writes_succeed() {
    let admin = cluster().await;
    admin
        .create(paths::CONTROLLER_EPOCH, b"0", CreateMode::Persistent)
        .await
        .expect("epoch");
    let zk = register(&admin, 1).await;
    zk.lose_next_write_reply();
    let one = start_controller(zk, 1).await;
    let epoch = one.active_epoch().await;
    assert_eq!(epoch, ControllerEpoch(1), "epoch 1 was won, and the retry knows it");
    assert_eq!(controller_epoch(&admin).await.0, 1);
    create_topic(&admin, "t", &[&[1]]).await;
    eventually("t-0 written in epoch 1", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.controller_epoch == 1 && s.leader == Some(BrokerId(1)))
    })
    .await;
}

/// A connection loss on the first fenced write of a new topic (creating
/// `/brokers/topics/<t>/partitions`), the write having been applied: the retry meets NodeExists,
/// recognises its own write and goes on, so the partition gets its state znode and leader.
#[tokio::test]
async fn a_lost_reply_to_a_new_topics_first_write_still_ends_with_a_leader() {
    let admin = cluster().await;
    let _two = register(&admin, 2).await;
    let one = broker(&admin, 1).await;
    one.active_epoch().await;
    one.zk.lose_next_write_reply();
    create_topic(&admin, "t", &[&[1, 2]]).await;
    eventually("t-0 led by broker 1", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.leader == Some(BrokerId(1)))
    })
    .await;
}

/// A connection loss on an election's conditional update (the dead leader's partition moving to
/// broker 3), applied: the retry's BADVERSION is recognised as its own write, and the new leader
/// is told.
#[tokio::test]
async fn a_lost_reply_to_an_elections_update_still_tells_the_new_leader() {
    let admin = cluster().await;
    let two = register(&admin, 2).await;
    let _three = register(&admin, 3).await;
    let mut one = broker(&admin, 1).await;
    one.active_epoch().await;
    create_topic(&admin, "t", &[&[2, 3]]).await;
    eventually("broker 2 leading t-0", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.leader == Some(BrokerId(2)))
    })
    .await;
    one.zk.lose_next_write_reply();
    two.expire_session();
    let told = one
        .next_sent("LeaderAndIsr naming broker 3", |s| {
            s.broker == BrokerId(3) && leader_and_isr_states(s, "t").iter().any(|p| p.1 == 3)
        })
        .await;
    assert_eq!(leader_and_isr_states(&told, "t"), vec![(0, 3, 1, vec![3])]);
    let p0 = state(&admin, "t", 0).await.expect("p0");
    assert_eq!(
        (p0.leader, p0.leader_epoch, p0.zk_version),
        (Some(BrokerId(3)), 1, 1),
        "written once"
    );
}

/// A connection loss on the ISR shrink of a controlled shutdown, applied: the shutting-down
/// broker still gets its answer, and the write is not made twice.
#[tokio::test]
async fn a_lost_reply_to_a_controlled_shutdowns_isr_change_still_answers() {
    let admin = cluster().await;
    let _two = register(&admin, 2).await;
    let one = broker(&admin, 1).await;
    one.active_epoch().await;
    create_topic(&admin, "t", &[&[1, 2]]).await;
    eventually("t-0 led by 1 with ISR [1, 2]", || async {
        state(&admin, "t", 0)
            .await
            .is_some_and(|s| s.leader == Some(BrokerId(1)) && s.isr.len() == 2)
    })
    .await;
    one.zk.lose_next_write_reply();
    let answer = one.controller.controlled_shutdown(BrokerId(2), -1).await;
    assert!(answer.is_ok(), "answered: {answer:?}");
    let p0 = state(&admin, "t", 0).await.expect("p0");
    assert_eq!(
        (p0.leader, p0.isr.clone(), p0.zk_version),
        (Some(BrokerId(1)), ids(&[1]), 1)
    );
}

/// A connection loss on the removal of a deleted topic's znodes, applied: the retry's NoNode is
/// recognised and the deletion completes in the controller too (it forgets the topic), without
/// waiting for the watches on the removed znodes to tell it (they are held here).
#[tokio::test]
async fn a_lost_reply_to_a_topic_deletions_removal_completes_it() {
    let admin = cluster().await;
    let mut one = broker(&admin, 1).await;
    one.active_epoch().await;
    create_topic(&admin, "d", &[&[1]]).await;
    eventually("d-0's state", || async { state(&admin, "d", 0).await.is_some() }).await;
    one.zk.lose_next_write_reply();
    admin
        .create(&paths::delete_topic("d"), &[], CreateMode::Persistent)
        .await
        .expect("queue deletion");
    let asked = one
        .next_sent("StopReplica(delete)", |s| {
            matches!(&s.request, ControlRequest::StopReplica(r)
                if r.topic_states.iter().any(|t| t.partition_states.iter().any(|p| p.delete_partition)))
        })
        .await;
    one.zk.hold_watches();
    let ControlRequest::StopReplica(r) = &asked.request else {
        unreachable!()
    };
    let ok = StopReplicaResponse::default().with_partition_errors(vec![StopReplicaPartitionError::default()
        .with_topic_name(r.topic_states[0].topic_name.clone())
        .with_partition_index(0)]);
    if let Some(answer) = channel::deletions(r, &ok) {
        asked.answer(answer);
    }
    // An empty ElectLeaders queued behind the answer returns once the answer was processed.
    let processed = one.controller.elect_leaders(Some(Vec::new()), false).await;
    assert!(processed.is_ok());
    assert!(admin.exists(&paths::topic("d")).await.expect("exists").is_none());
    let outcome = one
        .controller
        .elect_leaders(Some(vec![("d".to_string(), 0)]), false)
        .await
        .expect("answered");
    assert_eq!(
        outcome,
        vec![(("d".to_string(), 0), Err(ControllerError::UnknownTopicOrPartition))],
        "d is forgotten, not still being deleted"
    );
    one.zk.release_watches();
}
