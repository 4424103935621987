//! The simulated cluster: brokers registered on their own [`FakeZk`] sessions, each running the
//! real controller loop, whose requests land in one in-memory queue that the scheduler delivers
//! (late, out of order, twice, or never) and answers as a broker would; and the faults.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::stop_replica_response::StopReplicaPartitionError;
use kafka_protocol::messages::StopReplicaResponse;
use tokio::sync::{mpsc, watch};

use super::super::channel::{self, Answer, ControlRequest, Sent, Transport};
use super::super::handle::{start_with, ControllerConfig, ControllerHandle};
use super::super::model::LeaderAndIsr;
use super::rng::Rng;
use crate::types::{BrokerId, ZkVersion};
use crate::zk::fake::FakeZk;
use crate::zk::kafka_zk_client::KafkaZkClient;
use crate::zk::models::{
    AdvertisedEndpoint, BrokerRegistration, ControllerZNode, IsrChangeNotification, TopicAssignment, TopicPartitionRef,
    ZNodePayload,
};
use crate::zk::paths;
use crate::zk::store::{CreateMode, ZkStore};

/// One simulated broker.
pub struct SimBroker {
    pub id: BrokerId,
    pub zk: FakeZk,
    pub controller: ControllerHandle,
    _stop: watch::Sender<bool>,
    /// Its `/brokers/ids/<id>` exists (its session is alive).
    pub registered: bool,
    /// Replicas in a failed log dir: LeaderAndIsr for them answers KAFKA_STORAGE_ERROR.
    pub failed: BTreeSet<(String, i32)>,
    /// Disconnected from ZooKeeper or its watches held (a zombie), until this step.
    pub cut_off_until: Option<usize>,
    /// A request to it was lost: it must restart before the run quiesces (as a real broker
    /// whose connection broke would be re-sent to, or bounce).
    pub lost_request: bool,
}

pub struct World {
    pub rng: Rng,
    pub admin: FakeZk,
    pub brokers: Vec<SimBroker>,
    sent: mpsc::UnboundedReceiver<Sent>,
    pub in_flight: Vec<Sent>,
    pub trace: Vec<String>,
    pub step: usize,
    pub unclean: bool,
    next_topic: u32,
    /// The broker each ZooKeeper session belongs to (a restart opens a new one).
    pub session_owner: BTreeMap<i64, BrokerId>,
    /// Replicas (topic, partition, broker) whose broker answered a StopReplica(delete).
    pub deleted: BTreeSet<(String, i32, BrokerId)>,
    /// Brokers whose controlled shutdown the controller of that epoch accepted, until they
    /// restart: that controller must not elect them.
    pub shutdowns: Arc<Mutex<Shutdowns>>,
    /// Unclean ElectLeaders asked for and answered: elections outside the ISR they allow.
    pub unclean_asked: Arc<Mutex<UncleanAsked>>,
    /// Write replies lost on purpose (an election written but never acknowledged is not counted).
    pub lost_replies: usize,
    /// Topics an operator asked to delete (their replicas may all be deleted).
    pub deleting: BTreeSet<String>,
    /// StopReplica(delete) requests delivered since the checker last looked: (topic, partition,
    /// broker).
    pub replica_deletes: Vec<(String, i32, BrokerId)>,
}

/// Accepted controlled shutdowns: per broker, the controller epoch and a sequence number (a
/// later acceptance is a different one).
#[derive(Debug, Default, Clone)]
pub struct Shutdowns {
    next: u64,
    /// Requests not answered yet.
    pub in_flight: usize,
    /// Brokers that asked, accepted or not, until they restart: a real one exits in the end
    /// (after its retries), and the controller may hold it as shutting down either way.
    pub asked: BTreeSet<BrokerId>,
    pub accepted: BTreeMap<BrokerId, (i32, u64)>,
}

/// Unclean ElectLeaders requests: how many are in flight, and per partition how many elections
/// answered ones granted.
#[derive(Debug, Default)]
pub struct UncleanAsked {
    pub in_flight: usize,
    pub granted: BTreeMap<(String, i32), usize>,
}

impl UncleanAsked {
    /// Whether an unclean election of `key` was asked for (consuming one granted).
    pub fn allows(&mut self, key: &(String, i32)) -> bool {
        if let Some(n) = self.granted.get_mut(key).filter(|n| **n > 0) {
            *n -= 1;
            return true;
        }
        self.in_flight > 0
    }
}

pub fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn config(id: BrokerId, unclean: bool) -> ControllerConfig {
    ControllerConfig {
        broker_id: id,
        inter_broker_listener: "PLAINTEXT".into(),
        unclean_leader_election: unclean,
        auto_leader_rebalance: false,
        leader_imbalance_check_interval: Duration::from_secs(300),
        leader_imbalance_per_broker_percentage: 10,
    }
}

async fn register(zk: &FakeZk, id: BrokerId) -> bool {
    let endpoint = AdvertisedEndpoint {
        listener: "PLAINTEXT".into(),
        host: "localhost".into(),
        port: 9000 + id.0 as u16,
        security_protocol: "PLAINTEXT".into(),
    };
    KafkaZkClient::new(zk.clone())
        .register_broker(id, &BrokerRegistration::v5(&[endpoint], None, 1), &[])
        .await
        .is_ok()
}

impl World {
    pub async fn new(seed: u64, brokers: usize) -> World {
        let mut rng = Rng::new(seed);
        let unclean = rng.chance(20);
        let admin = FakeZk::new();
        admin.record_writes();
        let _ = KafkaZkClient::new(admin.clone()).ensure_persistent_paths().await;
        let (tx, sent) = mpsc::unbounded_channel();
        let mut world = World {
            rng,
            admin: admin.clone(),
            brokers: Vec::new(),
            sent,
            in_flight: Vec::new(),
            trace: Vec::new(),
            step: 0,
            unclean,
            next_topic: 0,
            session_owner: BTreeMap::new(),
            deleted: BTreeSet::new(),
            shutdowns: Arc::default(),
            unclean_asked: Arc::default(),
            lost_replies: 0,
            deleting: BTreeSet::new(),
            replica_deletes: Vec::new(),
        };
        for i in 1..=brokers as i32 {
            let id = BrokerId(i);
            let zk = admin.with_session();
            let registered = register(&zk, id).await;
            world.session_owner.insert(zk.session_id(), id);
            let (stop, stop_rx) = watch::channel(false);
            let controller = start_with(config(id, unclean), zk.clone(), stop_rx, Transport::Sink(tx.clone())).await;
            world.brokers.push(SimBroker {
                id,
                zk,
                controller,
                _stop: stop,
                registered,
                failed: BTreeSet::new(),
                cut_off_until: None,
                lost_request: false,
            });
        }
        world
    }

    pub fn log(&mut self, line: String) {
        self.trace.push(format!("[{}] {line}", self.step));
    }

    /// Lets every task run until all wait, advancing the virtual clock by `ms`.
    pub async fn settle(&mut self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        while let Ok(s) = self.sent.try_recv() {
            let line = describe(&s);
            self.log(line);
            self.in_flight.push(s);
        }
    }

    /// Delivers the in-flight request at `index` and answers it; `twice` answers it again.
    pub fn deliver(&mut self, index: usize, twice: bool) {
        if index >= self.in_flight.len() {
            return;
        }
        let sent = self.in_flight.remove(index);
        let Some(b) = self.brokers.iter().find(|b| b.id == sent.broker) else {
            return;
        };
        if !b.registered {
            return;
        }
        if let ControlRequest::StopReplica(r) = &sent.request {
            for t in &r.topic_states {
                for p in t.partition_states.iter().filter(|p| p.delete_partition) {
                    let deleted = (t.topic_name.0.to_string(), p.partition_index, sent.broker);
                    self.replica_deletes.push(deleted);
                }
            }
        }
        if let Some(answer) = answer(&sent, &b.failed) {
            self.log(format!("answer {} {answer:?}", sent.broker));
            if let Answer::ReplicasDeleted { results, .. } = &answer {
                let ok = results.iter().filter(|(_, code)| *code == 0);
                self.deleted.extend(ok.map(|((t, p), _)| (t.clone(), *p, sent.broker)));
            }
            sent.answer(answer.clone());
            if twice {
                sent.answer(answer);
            }
        }
    }

    pub fn drop_request(&mut self, index: usize) {
        if index < self.in_flight.len() {
            let sent = self.in_flight.remove(index);
            self.log(format!("drop request to {}", sent.broker));
            if let Some(b) = self.brokers.iter_mut().find(|b| b.id == sent.broker) {
                b.lost_request = true;
            }
        }
    }

    pub async fn controller_id(&self) -> Option<BrokerId> {
        let (data, _) = self.admin.get_data(paths::CONTROLLER).await.ok()?;
        ControllerZNode::decode(&data).ok().map(|c| c.brokerid)
    }

    pub fn kill(&mut self, i: usize) {
        let b = &mut self.brokers[i];
        if b.registered {
            b.zk.expire_session();
            b.registered = false;
            let id = b.id;
            self.log(format!("kill broker {id}"));
        }
    }

    pub async fn restart(&mut self, i: usize) {
        let b = &mut self.brokers[i];
        if b.registered {
            return;
        }
        b.zk.reconnect();
        b.zk.renew_session();
        // A reply lost on purpose may hide a registration that was made.
        b.registered = register(&b.zk, b.id).await
            || self
                .admin
                .exists(&paths::broker_id(b.id))
                .await
                .ok()
                .flatten()
                .is_some();
        self.session_owner.insert(b.zk.session_id(), b.id);
        b.failed.clear();
        b.lost_request = false;
        b.cut_off_until = None;
        let id = b.id;
        let mut s = locked(&self.shutdowns);
        s.accepted.remove(&id);
        s.asked.remove(&id);
        drop(s);
        self.log(format!("restart broker {id}"));
    }

    /// The active controller stops hearing ZooKeeper and `/controller` goes (an operator's
    /// controller move): another broker is elected while it still believes it leads; then
    /// it is asked to elect leaders, which it must fail to write.
    pub async fn make_zombie(&mut self, until: usize) {
        let Some(id) = self.controller_id().await else { return };
        let Some(b) = self.brokers.iter_mut().find(|b| b.id == id) else {
            return;
        };
        b.zk.hold_watches();
        b.cut_off_until = Some(until);
        let handle = b.controller.clone();
        let _ = self.admin.delete(paths::CONTROLLER, None).await;
        self.log(format!("zombie controller {id}"));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let _ = handle.elect_leaders(None, false).await;
        });
    }

    pub fn disconnect(&mut self, i: usize, until: usize) {
        let b = &mut self.brokers[i];
        if b.registered {
            b.zk.disconnect();
            b.cut_off_until = Some(until);
            let id = b.id;
            self.log(format!("disconnect broker {id}"));
        }
    }

    /// Ends disconnects and zombie holds that are due.
    pub fn heal_cut_offs(&mut self, force: bool) {
        let step = self.step;
        for b in &mut self.brokers {
            if b.cut_off_until.is_some_and(|u| force || u <= step) {
                b.cut_off_until = None;
                b.zk.reconnect();
                self.trace.push(format!("[{step}] reconnect broker {}", b.id));
            }
        }
    }

    pub fn lose_reply(&mut self, i: usize) {
        self.brokers[i].zk.lose_next_write_reply();
        self.lost_replies += 1;
        let id = self.brokers[i].id;
        self.log(format!("lose next write reply of broker {id}"));
    }

    pub async fn topics(&self) -> BTreeMap<String, BTreeMap<i32, Vec<BrokerId>>> {
        self.topic_infos()
            .await
            .into_iter()
            .map(|(t, i)| (t, i.assignment))
            .collect()
    }

    fn replicas(&mut self) -> Vec<BrokerId> {
        let n = self.brokers.len();
        let rf = 1 + self.rng.below(n.min(3));
        let first = self.rng.below(n);
        (0..rf).map(|k| BrokerId(((first + k) % n) as i32 + 1)).collect()
    }

    pub async fn create_topic(&mut self) {
        self.next_topic += 1;
        let name = format!("t{}", self.next_topic);
        let count = 1 + self.rng.below(3);
        let assignment: BTreeMap<i32, Vec<BrokerId>> = (0..count as i32).map(|p| (p, self.replicas())).collect();
        let id = uuid::Uuid::from_u64_pair(0, u64::from(self.next_topic));
        let ok = KafkaZkClient::new(self.admin.clone())
            .create_topic(&name, &assignment, id, &BTreeMap::new())
            .await
            .is_ok();
        self.log(format!("create topic {name} {assignment:?} ok={ok}"));
    }

    pub async fn delete_topic(&mut self) {
        let topics: Vec<String> = self.topics().await.into_keys().collect();
        let Some(t) = self.rng.pick(&topics).cloned() else {
            return;
        };
        self.deleting.insert(t.clone());
        let ok = self
            .admin
            .create(&paths::delete_topic(&t), &[], CreateMode::Persistent)
            .await
            .is_ok();
        self.log(format!("delete topic {t} ok={ok}"));
    }

    pub async fn add_partition(&mut self) {
        let topics: Vec<(String, usize)> = self.topics().await.into_iter().map(|(t, a)| (t, a.len())).collect();
        let Some((t, count)) = self.rng.pick(&topics).cloned() else {
            return;
        };
        let lists: Vec<Vec<BrokerId>> = vec![self.replicas()];
        if self.rng.chance(50) {
            return self.add_partition_by_hand(&t, count as i32, lists[0].clone()).await;
        }
        let i = self.rng.below(self.brokers.len());
        let handle = self.brokers[i].controller.clone();
        self.log(format!("add partition {t}-{count} {lists:?} via broker {}", i + 1));
        tokio::spawn(async move {
            let _ = handle.create_partitions(t, count as i32 + 1, Some(lists), false).await;
        });
    }

    /// An operator's tool adds a partition to `/brokers/topics/<t>` itself (conditional on the
    /// version read): the controller's PartitionModifications creates it, or undoes the edit
    /// while the topic is being deleted.
    async fn add_partition_by_hand(&mut self, t: &str, partition: i32, replicas: Vec<BrokerId>) {
        let path = paths::topic(t);
        let Ok((data, stat)) = self.admin.get_data(&path).await else {
            return;
        };
        let Ok(mut a) = TopicAssignment::decode(&data) else {
            return;
        };
        a.partitions.insert(partition.to_string(), replicas.clone());
        let ok = self
            .admin
            .set_data(&path, &a.encode(), Some(stat.version))
            .await
            .is_ok();
        self.log(format!("add partition {t}-{partition} {replicas:?} by hand ok={ok}"));
    }

    pub async fn elect_preferred(&mut self) {
        let i = self.rng.below(self.brokers.len());
        let handle = self.brokers[i].controller.clone();
        self.log(format!("preferred election via broker {}", i + 1));
        tokio::spawn(async move {
            let _ = handle.elect_leaders(None, false).await;
        });
    }

    /// A live broker asks the active controller for a controlled shutdown (broker epoch
    /// unknown, or stale); an accepted one is remembered with the controller epoch it was
    /// answered in, if that epoch did not change meanwhile.
    pub async fn controlled_shutdown(&mut self, i: usize) {
        let Some(c) = self.controller_id().await else { return };
        let Some(controller) = self.brokers.iter().find(|b| b.id == c).map(|b| b.controller.clone()) else {
            return;
        };
        let id = self.brokers[i].id;
        if !self.brokers[i].registered {
            return;
        }
        let epoch = if self.rng.chance(10) { 0 } else { -1 };
        self.log(format!(
            "controlled shutdown of {id} (epoch {epoch}) via controller {c}"
        ));
        let shutdowns = self.shutdowns.clone();
        let mut s = locked(&shutdowns);
        s.in_flight += 1;
        s.asked.insert(id);
        drop(s);
        tokio::spawn(async move {
            let before = controller.active_epoch();
            let answer = controller.controlled_shutdown(id, epoch).await;
            let after = controller.active_epoch();
            let mut s = locked(&shutdowns);
            s.in_flight -= 1;
            if let (Ok(_), Some(e), true) = (&answer, before, before == after) {
                s.next += 1;
                let seq = s.next;
                s.accepted.insert(id, (e.0, seq));
            }
        });
    }

    /// Brokers that asked for a controlled shutdown exit, each with `percent` % chance.
    pub fn exit_shut_down(&mut self, percent: u32) {
        let shutting: Vec<BrokerId> = locked(&self.shutdowns).asked.iter().copied().collect();
        for id in shutting {
            let i = (id.0 - 1) as usize;
            if self.brokers[i].registered && self.rng.chance(percent) {
                self.log(format!("broker {id} exits after its controlled shutdown"));
                self.kill(i);
            }
        }
    }

    /// ElectLeaders UNCLEAN for every partition, via a random broker.
    pub async fn elect_unclean(&mut self) {
        let i = self.rng.below(self.brokers.len());
        let handle = self.brokers[i].controller.clone();
        self.log(format!("unclean election via broker {}", i + 1));
        let asked = self.unclean_asked.clone();
        locked(&asked).in_flight += 1;
        tokio::spawn(async move {
            let answer = handle.elect_leaders(None, true).await;
            let mut asked = locked(&asked);
            asked.in_flight -= 1;
            for (key, outcome) in answer.unwrap_or_default() {
                if outcome.is_ok() {
                    *asked.granted.entry(key).or_default() += 1;
                }
            }
        });
    }

    /// A log dir of a live broker fails: some of its replicas go offline and it announces it.
    pub async fn fail_log_dir(&mut self, i: usize) {
        if !self.brokers[i].registered {
            return;
        }
        let id = self.brokers[i].id;
        let mine: Vec<(String, i32)> = self
            .topics()
            .await
            .into_iter()
            .flat_map(|(t, a)| {
                a.into_iter()
                    .filter(|(_, r)| r.contains(&id))
                    .map(move |(p, _)| (t.clone(), p))
            })
            .collect();
        let failed: Vec<(String, i32)> = mine.into_iter().filter(|_| self.rng.chance(50)).collect();
        self.brokers[i].failed.extend(failed.iter().cloned());
        let _ = KafkaZkClient::new(self.admin.clone())
            .create_log_dir_event_notification(id)
            .await;
        self.log(format!("log dir failure on {id}: {failed:?}"));
    }

    /// A partition leader shrinks or expands its ISR (conditional on the state znode's version,
    /// as Kafka's ZK-mode AlterIsr) and announces it under `/isr_change_notification`.
    /// Replicas being removed are not added ([`super::reassign`] says why).
    pub async fn change_isr(&mut self) {
        let topics = self.topic_infos().await;
        let keys: Vec<(String, i32, Vec<BrokerId>)> = topics
            .into_iter()
            .flat_map(|(t, info)| {
                let reassigning = info.reassigning;
                info.assignment.into_iter().map(move |(p, r)| {
                    let removing = reassigning.get(&p).map(|r| r.removing.clone()).unwrap_or_default();
                    (t.clone(), p, r.into_iter().filter(|b| !removing.contains(b)).collect())
                })
            })
            .collect();
        let Some((t, p, replicas)) = self.rng.pick(&keys).cloned() else {
            return;
        };
        let path = paths::partition_state(&t, p);
        let Ok((data, stat)) = self.admin.get_data(&path).await else {
            return;
        };
        let Ok(mut l) = LeaderAndIsr::from_znode(&data, stat.version) else {
            return;
        };
        let Some(leader) = l.leader else { return };
        let live = |b: &BrokerId| self.brokers.iter().any(|x| x.id == *b && x.registered);
        if !live(&leader) {
            return;
        }
        let outside: Vec<BrokerId> = replicas
            .iter()
            .copied()
            .filter(|r| !l.isr.contains(r) && live(r))
            .collect();
        let followers: Vec<BrokerId> = l.isr.iter().copied().filter(|r| *r != leader).collect();
        let expand = !outside.is_empty() && (followers.is_empty() || self.rng.chance(50));
        if expand {
            l.isr.push(outside[self.rng.below(outside.len())]);
        } else if let Some(f) = self.rng.pick(&followers).copied() {
            l.isr.retain(|r| *r != f);
        } else {
            return;
        }
        let written = self.write_isr(&t, p, &l).await;
        self.log(format!(
            "leader {leader} sets ISR of {t}-{p} to {:?} ok={written}",
            l.isr
        ));
    }
}

impl World {
    /// A leader's ISR write, conditional on the state znode's version it read (Kafka's ZK-mode
    /// AlterIsr), announced under `/isr_change_notification` once written.
    pub async fn write_isr(&self, t: &str, p: i32, l: &LeaderAndIsr) -> bool {
        let path = paths::partition_state(t, p);
        let written = self
            .admin
            .set_data(&path, &l.to_znode(l.controller_epoch), Some(ZkVersion(l.zk_version)))
            .await
            .is_ok();
        if written {
            let note = IsrChangeNotification {
                version: 1,
                partitions: vec![TopicPartitionRef {
                    topic: t.to_string(),
                    partition: p,
                }],
            };
            let _ = self
                .admin
                .create(
                    &paths::isr_change_sequential(),
                    &note.encode(),
                    CreateMode::PersistentSequential,
                )
                .await;
        }
        written
    }
}

/// What broker `failed` (its failed replicas) answers to `sent`, as the controller sees it.
fn answer(sent: &Sent, failed: &BTreeSet<(String, i32)>) -> Option<Answer> {
    match &sent.request {
        ControlRequest::LeaderAndIsr(r) => {
            let offline: Vec<(String, i32)> = r
                .topic_states
                .iter()
                .flat_map(|t| {
                    t.partition_states
                        .iter()
                        .map(move |p| (t.topic_name.0.to_string(), p.partition_index))
                })
                .filter(|k| failed.contains(k))
                .collect();
            (!offline.is_empty()).then_some(Answer::OfflineReplicas(offline))
        }
        ControlRequest::StopReplica(r) => {
            let errors = r
                .topic_states
                .iter()
                .flat_map(|t| {
                    t.partition_states.iter().map(move |p| {
                        StopReplicaPartitionError::default()
                            .with_topic_name(t.topic_name.clone())
                            .with_partition_index(p.partition_index)
                    })
                })
                .collect();
            channel::deletions(r, &StopReplicaResponse::default().with_partition_errors(errors))
        }
        ControlRequest::UpdateMetadata(_) => None,
    }
}

fn describe(s: &Sent) -> String {
    match &s.request {
        ControlRequest::LeaderAndIsr(r) => {
            let parts: Vec<String> = r
                .topic_states
                .iter()
                .flat_map(|t| {
                    t.partition_states.iter().map(move |p| {
                        format!(
                            "{}-{} l={} e={} isr={:?}",
                            t.topic_name.0.as_str(),
                            p.partition_index,
                            p.leader.0,
                            p.leader_epoch,
                            p.isr.iter().map(|b| b.0).collect::<Vec<_>>()
                        )
                    })
                })
                .collect();
            format!(
                "c{}@{} LeaderAndIsr -> {}: {}",
                r.controller_id.0,
                r.controller_epoch,
                s.broker,
                parts.join(", ")
            )
        }
        ControlRequest::UpdateMetadata(r) => {
            format!(
                "c{}@{} UpdateMetadata -> {}",
                r.controller_id.0, r.controller_epoch, s.broker
            )
        }
        ControlRequest::StopReplica(r) => format!(
            "c{}@{} StopReplica -> {} delete={}",
            r.controller_id.0,
            r.controller_epoch,
            s.broker,
            r.topic_states
                .iter()
                .any(|t| t.partition_states.iter().any(|p| p.delete_partition))
        ),
    }
}
