//! Drives the replica state machine ([`super::replica_state`], Kafka's ReplicaStateMachine) from
//! the controller's context, as [`super::state_changes`] drives the partition one. This module
//! owns which replicas move where on each controller event:
//!
//! * failover (Kafka's `ReplicaStateMachine.startup`): replicas on live brokers outside failed
//!   log dirs load as Online, the rest as DeletionIneligible and then move to Offline;
//! * new partitions (`onNewPartitionCreation`): NonExistent → New → Online, or → Offline for a
//!   replica that cannot serve (kastle's choice: Kafka moves it to Online and its later
//!   deletion then logs an illegal Online → DeletionIneligible);
//! * broker death, bounce and log-dir failure (`onReplicasBecomeOffline`): → Offline, or
//!   DeletionStarted → DeletionIneligible for a topic being deleted (`failReplicaDeletion`);
//! * broker (re)start (`onBrokerStartup`): → Online, except replicas of topics being deleted,
//!   which topic deletion retries instead;
//! * controlled shutdown: the replicas the broker follows → Offline;
//! * topic deletion (`TopicDeletionManager`): [`DeletionStep`] decides per topic; replicas that
//!   cannot serve → DeletionIneligible, the others → Offline → DeletionStarted (StopReplica with
//!   delete), the broker's answer → DeletionSuccessful or DeletionIneligible, and once every
//!   replica is DeletionSuccessful → NonExistent with the topic.
//!
//! Every move is checked against Kafka's legal previous states; an illegal one is logged with
//! partition, replica, from and to, counted (`kastle_controller_illegal_replica_state_changes_total`)
//! and not applied, never a panic. The moves are bookkeeping: the controller sends the requests
//! and writes ZooKeeper. No I/O here.

use super::replica_state::{IllegalTransition, PartitionAndReplica, ReplicaState};
use super::requests::ControllerContext;
use crate::types::{BrokerId, TopicPartition};

/// Counter of refused replica state changes (kastle's; Kafka only logs them).
pub const ILLEGAL_REPLICA_STATE_CHANGES: &str = "kastle_controller_illegal_replica_state_changes_total";

/// `key`'s replica on `broker`.
pub fn replica(key: &(String, i32), broker: BrokerId) -> PartitionAndReplica {
    PartitionAndReplica {
        tp: TopicPartition {
            topic: key.0.clone(),
            partition: key.1,
        },
        replica: broker,
    }
}

pub(super) fn key_of(r: &PartitionAndReplica) -> (String, i32) {
    (r.tp.topic.clone(), r.tp.partition)
}

/// What topic deletion does next for one queued topic (Kafka's `resumeDeletions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletionStep {
    /// Every replica confirmed its delete: remove the znodes and forget the topic.
    Complete,
    /// A StopReplica(delete) is unanswered: wait.
    InProgress,
    /// Nothing outstanding and not everything deleted: (re)start with [`ControllerContext::start_deletion`].
    Start,
}

/// The replica changes a (re)started deletion made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletionStart {
    /// Now DeletionStarted: send them StopReplica(delete).
    pub started: Vec<PartitionAndReplica>,
    /// Now DeletionIneligible: their broker is down or their log dir failed.
    pub ineligible: Vec<PartitionAndReplica>,
}

impl ControllerContext {
    /// Every replica of `partitions`, in assignment order.
    pub fn partition_replicas(&self, partitions: &[(String, i32)]) -> Vec<PartitionAndReplica> {
        partitions
            .iter()
            .flat_map(|key| self.replicas(&key.0, key.1).into_iter().map(move |b| replica(key, b)))
            .collect()
    }

    /// Every replica of `topic` (Kafka's `replicasForTopic`).
    pub fn topic_replicas(&self, topic: &str) -> Vec<PartitionAndReplica> {
        let partitions: Vec<(String, i32)> = self
            .topics
            .get(topic)
            .map(|t| t.assignment.keys().map(|p| (topic.to_string(), *p)).collect())
            .unwrap_or_default();
        self.partition_replicas(&partitions)
    }

    /// Every replica hosted by one of `brokers` (Kafka's `replicasOnBrokers`).
    pub fn broker_replicas(&self, brokers: &[BrokerId]) -> Vec<PartitionAndReplica> {
        self.partition_replicas(&self.all_partitions())
            .into_iter()
            .filter(|r| brokers.contains(&r.replica))
            .collect()
    }

    /// Kafka's `isReplicaOnline`: its broker is live and its log dir has not failed.
    pub fn is_replica_online(&self, r: &PartitionAndReplica) -> bool {
        self.replica_online(&key_of(r), Some(r.replica))
    }

    pub fn replica_state(&self, r: &PartitionAndReplica) -> ReplicaState {
        self.replica_states.state(r)
    }

    /// Whether `topic` is queued in `/admin/delete_topics` (and known).
    pub fn is_queued_for_deletion(&self, topic: &str) -> bool {
        self.topics_to_delete.contains(topic)
    }

    /// Moves each of `replicas` to `to` where that is legal; returns the ones moved. A refusal
    /// is logged and counted, and leaves the replica as it was.
    pub fn change_replica_states(
        &mut self,
        replicas: &[PartitionAndReplica],
        to: ReplicaState,
    ) -> Vec<PartitionAndReplica> {
        let mut moved = Vec::with_capacity(replicas.len());
        for r in replicas {
            match self.replica_states.transition(r, to) {
                Ok(()) => moved.push(r.clone()),
                Err(e) => refused(r, &e),
            }
        }
        moved
    }

    /// Kafka's `ReplicaStateMachine.startup`: `initializeReplicaState` (Online if the replica can
    /// serve, else DeletionIneligible), then the ones that cannot serve move to Offline.
    pub fn initialize_replica_states(&mut self) {
        let mut states = super::replica_state::ReplicaStates::new();
        let mut offline = Vec::new();
        for r in self.partition_replicas(&self.all_partitions()) {
            if self.is_replica_online(&r) {
                states.initialize(r, ReplicaState::Online);
            } else {
                states.initialize(r.clone(), ReplicaState::DeletionIneligible);
                offline.push(r);
            }
        }
        self.replica_states = states;
        self.change_replica_states(&offline, ReplicaState::Offline);
    }

    /// The first half of `onNewPartitionCreation`: the new partitions' replicas enter as New.
    pub fn create_replicas(&mut self, partitions: &[(String, i32)]) {
        let replicas = self.partition_replicas(partitions);
        self.change_replica_states(&replicas, ReplicaState::New);
    }

    /// The second half, once leaders are elected: New replicas that can serve become Online,
    /// the others Offline (as a failover would load them).
    pub fn start_new_replicas(&mut self, partitions: &[(String, i32)]) {
        let (online, offline): (Vec<_>, Vec<_>) = self
            .partition_replicas(partitions)
            .into_iter()
            .filter(|r| self.replica_state(r) == ReplicaState::New)
            .partition(|r| self.is_replica_online(r));
        self.change_replica_states(&online, ReplicaState::Online);
        self.change_replica_states(&offline, ReplicaState::Offline);
    }

    /// Kafka's `onReplicasBecomeOffline` (broker death or bounce, a failed log dir): replicas of
    /// topics not being deleted become Offline; for a topic being deleted, an unanswered delete
    /// fails (DeletionStarted → DeletionIneligible), replicas already deleted or ineligible stay,
    /// and the rest become Offline for deletion to pick up.
    pub fn replicas_went_offline(&mut self, replicas: &[PartitionAndReplica]) {
        let mut offline = Vec::new();
        let mut failed = Vec::new();
        for r in replicas {
            if !self.is_queued_for_deletion(&r.tp.topic) {
                offline.push(r.clone());
                continue;
            }
            match self.replica_state(r) {
                ReplicaState::DeletionStarted => failed.push(r.clone()),
                ReplicaState::DeletionSuccessful | ReplicaState::DeletionIneligible => {}
                _ => offline.push(r.clone()),
            }
        }
        self.change_replica_states(&offline, ReplicaState::Offline);
        self.change_replica_states(&failed, ReplicaState::DeletionIneligible);
    }

    /// Kafka's `onBrokerStartup`: the replicas on `brokers` that can serve become Online. Those
    /// of topics being deleted are left to topic deletion, which retries them.
    pub fn replicas_came_online(&mut self, brokers: &[BrokerId]) {
        let online: Vec<PartitionAndReplica> = self
            .broker_replicas(brokers)
            .into_iter()
            .filter(|r| !self.is_queued_for_deletion(&r.tp.topic) && self.is_replica_online(r))
            .collect();
        self.change_replica_states(&online, ReplicaState::Online);
    }

    /// The replicas a broker in controlled shutdown follows (Kafka's `partitionsFollowedByBroker`:
    /// replicated partitions with a leader other than `broker`, not being deleted). They become
    /// Offline once the broker has left their ISRs.
    pub fn followed_by(&self, broker: BrokerId) -> Vec<PartitionAndReplica> {
        self.all_partitions()
            .into_iter()
            .filter(|key| {
                let replicas = self.replicas(&key.0, key.1);
                replicas.len() > 1
                    && replicas.contains(&broker)
                    && !self.is_queued_for_deletion(&key.0)
                    && self.leaderships.get(key).is_some_and(|l| l.leader != Some(broker))
            })
            .map(|key| replica(&key, broker))
            .collect()
    }

    /// Where deletion of queued `topic` stands (Kafka's `resumeDeletions`).
    pub fn deletion_step(&self, topic: &str) -> DeletionStep {
        let states: Vec<ReplicaState> = self
            .topic_replicas(topic)
            .iter()
            .map(|r| self.replica_state(r))
            .collect();
        if states.iter().all(|s| *s == ReplicaState::DeletionSuccessful) {
            DeletionStep::Complete
        } else if states.contains(&ReplicaState::DeletionStarted) {
            DeletionStep::InProgress
        } else {
            DeletionStep::Start
        }
    }

    /// (Re)starts deleting `topic` (Kafka's `retryDeletionForIneligibleReplicas` and
    /// `onPartitionDeletion`): ineligible replicas go back to Offline; those that cannot serve
    /// become DeletionIneligible, the others not yet deleted Offline → DeletionStarted.
    pub fn start_deletion(&mut self, topic: &str) -> DeletionStart {
        let replicas = self.topic_replicas(topic);
        let retry: Vec<PartitionAndReplica> = replicas
            .iter()
            .filter(|r| self.replica_state(r) == ReplicaState::DeletionIneligible)
            .cloned()
            .collect();
        self.change_replica_states(&retry, ReplicaState::Offline);
        let (alive, dead): (Vec<_>, Vec<_>) = replicas
            .into_iter()
            .filter(|r| self.replica_state(r) != ReplicaState::DeletionSuccessful)
            .partition(|r| self.is_replica_online(r));
        let ineligible = self.change_replica_states(&dead, ReplicaState::DeletionIneligible);
        let offline = self.change_replica_states(&alive, ReplicaState::Offline);
        let started = self.change_replica_states(&offline, ReplicaState::DeletionStarted);
        DeletionStart { started, ineligible }
    }

    /// A broker answered a StopReplica(delete) (Kafka's `TopicDeletionStopReplicaResponseReceived`):
    /// error 0 → DeletionSuccessful, anything else → DeletionIneligible. Answers for replicas
    /// not awaiting one (a retry overtook them) are stale and ignored.
    pub fn replica_deletions_answered(&mut self, broker: BrokerId, results: &[((String, i32), i16)]) {
        let mut deleted = Vec::new();
        let mut failed = Vec::new();
        for (key, code) in results {
            let r = replica(key, broker);
            if self.replica_state(&r) != ReplicaState::DeletionStarted {
                tracing::debug!(topic = %key.0, partition = key.1, %broker, "ignoring a stale StopReplica answer");
                continue;
            }
            if *code == 0 {
                deleted.push(r);
            } else {
                tracing::warn!(topic = %key.0, partition = key.1, %broker, error = code, "replica deletion failed");
                failed.push(r);
            }
        }
        self.change_replica_states(&deleted, ReplicaState::DeletionSuccessful);
        self.change_replica_states(&failed, ReplicaState::DeletionIneligible);
    }

    /// Kafka's `completeDeleteTopic`: the deleted replicas become NonExistent (forgotten).
    pub fn forget_deleted_replicas(&mut self, topic: &str) {
        let replicas = self.topic_replicas(topic);
        self.change_replica_states(&replicas, ReplicaState::NonExistent);
    }

    /// (ReplicasToDeleteCount, ReplicasIneligibleToDeleteCount, TopicsIneligibleToDeleteCount):
    /// replicas of queued topics not yet deleted, those of them ineligible, and the queued topics
    /// with an ineligible replica.
    pub fn deletion_counts(&self) -> (usize, usize, usize) {
        let (mut to_delete, mut ineligible, mut topics) = (0, 0, 0);
        for topic in &self.topics_to_delete {
            let states: Vec<ReplicaState> = self
                .topic_replicas(topic)
                .iter()
                .map(|r| self.replica_state(r))
                .collect();
            to_delete += states
                .iter()
                .filter(|s| **s != ReplicaState::DeletionSuccessful)
                .count();
            let stuck = states
                .iter()
                .filter(|s| **s == ReplicaState::DeletionIneligible)
                .count();
            ineligible += stuck;
            topics += usize::from(stuck > 0);
        }
        (to_delete, ineligible, topics)
    }
}

fn refused(r: &PartitionAndReplica, e: &IllegalTransition) {
    tracing::error!(
        topic = %r.tp.topic,
        partition = r.tp.partition,
        replica = %r.replica,
        from = e.from.kafka_name(),
        to = e.to.kafka_name(),
        error = %e,
        "refused an illegal replica state change"
    );
    metrics::counter!(ILLEGAL_REPLICA_STATE_CHANGES).increment(1);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::ReplicaState::*;
    use super::*;
    use crate::controller::model::{LeaderAndIsr, RegisteredBroker, TopicInfo};

    fn r(topic: &str, partition: i32, broker: i32) -> PartitionAndReplica {
        replica(&(topic.to_string(), partition), BrokerId(broker))
    }

    fn add_topic(ctx: &mut ControllerContext, topic: &str, parts: &[&[i32]]) {
        let assignment: BTreeMap<i32, Vec<BrokerId>> = parts
            .iter()
            .enumerate()
            .map(|(p, rs)| (p as i32, rs.iter().map(|b| BrokerId(*b)).collect()))
            .collect();
        ctx.topics.insert(
            topic.into(),
            TopicInfo {
                id: uuid::Uuid::nil(),
                assignment,
                reassigning: Default::default(),
            },
        );
    }

    fn set_live(ctx: &mut ControllerContext, ids: &[i32]) {
        ctx.live_brokers = ids
            .iter()
            .map(|id| {
                let b = RegisteredBroker {
                    id: BrokerId(*id),
                    registration: crate::zk::models::BrokerRegistration::v5(&[], None, 0),
                    epoch: 1,
                };
                (BrokerId(*id), b)
            })
            .collect();
    }

    fn led_by(leader: i32) -> LeaderAndIsr {
        LeaderAndIsr {
            leader: LeaderAndIsr::leader_from_wire(BrokerId(leader)),
            leader_epoch: 0,
            isr: vec![],
            controller_epoch: 1,
            leader_recovery_state: 0,
            zk_version: 0,
        }
    }

    fn states(ctx: &ControllerContext, replicas: &[PartitionAndReplica]) -> Vec<ReplicaState> {
        replicas.iter().map(|r| ctx.replica_state(r)).collect()
    }

    /// Runs `f` with a Prometheus recorder of its own; returns the illegal-change counter after.
    fn illegal_changes_during(f: impl FnOnce()) -> f64 {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, f);
        handle
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(ILLEGAL_REPLICA_STATE_CHANGES)?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// ReplicaStateMachine.startup: Online where the broker is live and the log dir healthy,
    /// Offline (through DeletionIneligible) elsewhere.
    #[test]
    fn failover_loads_online_and_offline_replicas() {
        let mut ctx = ControllerContext::default();
        add_topic(&mut ctx, "t", &[&[1, 2], &[1, 3]]);
        set_live(&mut ctx, &[1, 2]);
        ctx.offline_replicas.insert(("t".into(), 0, BrokerId(2)));
        let all = [r("t", 0, 1), r("t", 0, 2), r("t", 1, 1), r("t", 1, 3)];
        let illegal = illegal_changes_during(|| ctx.initialize_replica_states());
        assert_eq!(states(&ctx, &all), vec![Online, Offline, Online, Offline]);
        assert_eq!(illegal, 0.0);
    }

    /// onNewPartitionCreation: New, then Online, or Offline for a replica on a dead broker.
    /// Creating a replica that exists is refused, counted and changes nothing.
    #[test]
    fn new_replicas_start_online_where_they_can_serve_and_are_created_once() {
        let mut ctx = ControllerContext::default();
        set_live(&mut ctx, &[1, 2]);
        add_topic(&mut ctx, "t", &[&[1, 9]]);
        let key = [("t".to_string(), 0)];
        let replicas = [r("t", 0, 1), r("t", 0, 9)];
        let illegal = illegal_changes_during(|| {
            ctx.create_replicas(&key);
            assert_eq!(states(&ctx, &replicas), vec![New, New]);
            ctx.start_new_replicas(&key);
        });
        assert_eq!(illegal, 0.0);
        assert_eq!(states(&ctx, &replicas), vec![Online, Offline]);
        let illegal = illegal_changes_during(|| ctx.create_replicas(&key));
        assert_eq!(illegal, 2.0, "Online -> New and Offline -> New");
        assert_eq!(states(&ctx, &replicas), vec![Online, Offline]);
    }

    /// onBrokerFailure / onBrokerStartup, a failed log dir, and controlled shutdown of a follower.
    #[test]
    fn replicas_follow_their_brokers_and_log_dirs() {
        let mut ctx = ControllerContext::default();
        set_live(&mut ctx, &[1, 2, 3]);
        add_topic(&mut ctx, "t", &[&[1, 2], &[2, 3], &[2]]);
        ctx.initialize_replica_states();
        let on_2 = [r("t", 0, 2), r("t", 1, 2), r("t", 2, 2)];
        assert_eq!(ctx.broker_replicas(&[BrokerId(2)]), on_2.to_vec());
        let illegal = illegal_changes_during(|| {
            // Broker 2 dies.
            set_live(&mut ctx, &[1, 3]);
            ctx.replicas_went_offline(&on_2);
            assert_eq!(states(&ctx, &on_2), vec![Offline; 3]);
            assert_eq!(ctx.replica_state(&r("t", 0, 1)), Online);
            // It comes back; then its log dir holding t-1 fails.
            set_live(&mut ctx, &[1, 2, 3]);
            ctx.replicas_came_online(&[BrokerId(2)]);
            assert_eq!(states(&ctx, &on_2), vec![Online; 3]);
            ctx.offline_replicas.insert(("t".into(), 1, BrokerId(2)));
            ctx.replicas_went_offline(&[r("t", 1, 2)]);
            assert_eq!(states(&ctx, &on_2), vec![Online, Offline, Online]);
        });
        assert_eq!(illegal, 0.0);

        // Controlled shutdown of broker 2: it follows t-0 (led by 1) and t-1 (led by 3); it
        // leads nothing else replicated, and single-replica t-2 cannot move.
        ctx.leaderships.insert(("t".into(), 0), led_by(1));
        ctx.leaderships.insert(("t".into(), 1), led_by(3));
        ctx.leaderships.insert(("t".into(), 2), led_by(2));
        assert_eq!(ctx.followed_by(BrokerId(2)), vec![r("t", 0, 2), r("t", 1, 2)]);
        ctx.leaderships.insert(("t".into(), 1), led_by(2));
        assert_eq!(ctx.followed_by(BrokerId(2)), vec![r("t", 0, 2)]);
        ctx.topics_to_delete.insert("t".into());
        assert_eq!(ctx.followed_by(BrokerId(2)), vec![], "not for a topic being deleted");
    }

    /// TopicDeletionManager: replicas on a dead broker are ineligible while the others are
    /// deleted; a failed delete is retried on the next start; a broker death fails an
    /// unanswered delete but keeps finished ones; the topic completes once all succeeded.
    #[test]
    fn a_topic_is_deleted_replica_by_replica_and_waits_for_offline_ones() {
        let mut ctx = ControllerContext::default();
        set_live(&mut ctx, &[1, 2]);
        add_topic(&mut ctx, "d", &[&[1, 2], &[2, 3]]);
        add_topic(&mut ctx, "kept", &[&[1, 3]]);
        ctx.initialize_replica_states();
        ctx.topics_to_delete.insert("d".into());
        let all = [r("d", 0, 1), r("d", 0, 2), r("d", 1, 2), r("d", 1, 3)];
        let illegal = illegal_changes_during(|| {
            assert_eq!(ctx.deletion_step("d"), DeletionStep::Start);
            assert_eq!(ctx.deletion_counts(), (4, 0, 0));
            let start = ctx.start_deletion("d");
            assert_eq!(start.started, all[..3].to_vec());
            assert_eq!(start.ineligible, vec![r("d", 1, 3)]);
            assert_eq!(ctx.deletion_step("d"), DeletionStep::InProgress);
            assert_eq!(ctx.deletion_counts(), (4, 1, 1));

            // Broker 1 deletes; broker 2 fails one delete and leaves the other unanswered.
            ctx.replica_deletions_answered(BrokerId(1), &[(("d".into(), 0), 0)]);
            ctx.replica_deletions_answered(BrokerId(2), &[(("d".into(), 1), 56)]);
            assert_eq!(
                states(&ctx, &all),
                vec![
                    DeletionSuccessful,
                    DeletionStarted,
                    DeletionIneligible,
                    DeletionIneligible
                ]
            );
            // Broker 1 dies: its deleted replica stays deleted; "kept" goes Offline.
            set_live(&mut ctx, &[2]);
            let on_1 = ctx.broker_replicas(&[BrokerId(1)]);
            ctx.replicas_went_offline(&on_1);
            assert_eq!(ctx.replica_state(&r("d", 0, 1)), DeletionSuccessful);
            assert_eq!(ctx.replica_state(&r("kept", 0, 1)), Offline);
            // Broker 2 dies before answering: its unanswered delete fails.
            set_live(&mut ctx, &[]);
            ctx.replicas_went_offline(&ctx.broker_replicas(&[BrokerId(2)]));
            assert_eq!(ctx.replica_state(&r("d", 0, 2)), DeletionIneligible);
            assert_eq!(ctx.deletion_step("d"), DeletionStep::Start);
            assert_eq!(ctx.deletion_counts(), (3, 3, 1));

            // Everyone is back; broker start-up leaves the deleting topic to deletion.
            set_live(&mut ctx, &[1, 2, 3]);
            ctx.replicas_came_online(&[BrokerId(1), BrokerId(2), BrokerId(3)]);
            assert_eq!(ctx.replica_state(&r("kept", 0, 1)), Online);
            assert_eq!(ctx.replica_state(&r("d", 1, 3)), DeletionIneligible);
            let start = ctx.start_deletion("d");
            assert_eq!(start.started, all[1..].to_vec(), "the deleted one is not asked again");
            assert!(start.ineligible.is_empty());
            // A late answer for the deleted replica changes nothing.
            ctx.replica_deletions_answered(BrokerId(1), &[(("d".into(), 0), 0)]);
            for b in [2, 3] {
                let theirs: Vec<((String, i32), i16)> = start
                    .started
                    .iter()
                    .filter(|r| r.replica == BrokerId(b))
                    .map(|r| (key_of(r), 0))
                    .collect();
                ctx.replica_deletions_answered(BrokerId(b), &theirs);
            }
            assert_eq!(ctx.deletion_step("d"), DeletionStep::Complete);
            assert_eq!(ctx.deletion_counts(), (0, 0, 0));
            ctx.forget_deleted_replicas("d");
        });
        assert_eq!(illegal, 0.0, "every step above is legal");
        assert_eq!(states(&ctx, &all), vec![NonExistent; 4]);
        assert_eq!(ctx.replica_states.len(), 2, "only the kept topic's replicas remain");
    }

    /// A stray StopReplica answer for a replica that was never being deleted is ignored, not
    /// applied as an (illegal) Online → DeletionSuccessful.
    #[test]
    fn answers_for_replicas_not_being_deleted_are_ignored() {
        let mut ctx = ControllerContext::default();
        set_live(&mut ctx, &[1]);
        add_topic(&mut ctx, "t", &[&[1]]);
        ctx.initialize_replica_states();
        let illegal = illegal_changes_during(|| {
            ctx.replica_deletions_answered(BrokerId(1), &[(("t".into(), 0), 0), (("t".into(), 7), 0)]);
        });
        assert_eq!(illegal, 0.0);
        assert_eq!(ctx.replica_state(&r("t", 0, 1)), Online);
        // Forgetting a replica that was not deleted is illegal: refused and counted.
        let illegal = illegal_changes_during(|| ctx.forget_deleted_replicas("t"));
        assert_eq!(illegal, 1.0);
        assert_eq!(ctx.replica_state(&r("t", 0, 1)), Online);
    }
}
