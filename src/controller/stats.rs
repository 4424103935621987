//! The controller's metrics, named as the stock Prometheus JMX exporter (`kafka-2_0_0.yml`,
//! `lowercaseOutputName: true`) names Kafka's MBeans, so existing dashboards find them:
//! gauges `kafka.controller:type=KafkaController,name=X` → `kafka_controller_kafkacontroller_x`;
//! timers → a summary `kafka_controller_controllerstats_leaderelectionrateandtimems` (quantiles
//! plus `_count`); meters `…PerSec` → counters `…_total` with `PerSec` dropped. kastle's own
//! additions are prefixed `kastle_` (`kastle_controller_election_attempts_total`).
//!
//! This module owns the names and how values are derived from the controller's context; it
//! must not decide anything.

use std::time::Duration;

use super::requests::ControllerContext;

/// `kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs`.
pub const LEADER_ELECTION_TIME_MS: &str = "kafka_controller_controllerstats_leaderelectionrateandtimems";
/// `kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec`.
pub const UNCLEAN_LEADER_ELECTIONS: &str = "kafka_controller_controllerstats_uncleanleaderelections_total";
/// `kafka.controller:type=ControllerEventManager,name=EventQueueSize`.
pub const EVENT_QUEUE_SIZE: &str = "kafka_controller_controllereventmanager_eventqueuesize";
/// `kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs`.
pub const EVENT_QUEUE_TIME_MS: &str = "kafka_controller_controllereventmanager_eventqueuetimems";

/// kastle's own: attempts to become the controller (each a try to create `/controller`).
pub const ELECTION_ATTEMPTS: &str = "kastle_controller_election_attempts_total";

/// Registers the timers and meters so they are exported (with count 0) before anything happens,
/// as Kafka's MBeans exist from start-up.
pub fn register() {
    // Taking the handle registers the histogram; it renders with count 0 until recorded.
    let _ = metrics::histogram!(LEADER_ELECTION_TIME_MS);
    let _ = metrics::histogram!(EVENT_QUEUE_TIME_MS);
    metrics::counter!(UNCLEAN_LEADER_ELECTIONS).increment(0);
    metrics::counter!(super::state_changes::ILLEGAL_STATE_CHANGES).increment(0);
    metrics::counter!(super::replica_changes::ILLEGAL_REPLICA_STATE_CHANGES).increment(0);
    metrics::gauge!(EVENT_QUEUE_SIZE).increment(0.0);
    metrics::counter!(ELECTION_ATTEMPTS).increment(0);
}

/// This broker tried to become the controller.
pub fn election_attempt() {
    metrics::counter!(ELECTION_ATTEMPTS).increment(1);
}

#[cfg(test)]
thread_local! {
    /// Unclean elections counted on this thread, for the simulation's invariant.
    pub static UNCLEAN_COUNTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One election step that elected leaders took `elapsed`; `unclean` partitions among them got
/// a leader from outside their ISR.
pub fn leader_election(elapsed: Duration, unclean: usize) {
    #[cfg(test)]
    UNCLEAN_COUNTED.with(|c| c.set(c.get() + unclean));
    metrics::histogram!(LEADER_ELECTION_TIME_MS).record(elapsed.as_secs_f64() * 1000.0);
    if unclean > 0 {
        metrics::counter!(UNCLEAN_LEADER_ELECTIONS).increment(unclean as u64);
    }
}

pub fn event_enqueued() {
    metrics::gauge!(EVENT_QUEUE_SIZE).increment(1.0);
}

/// An event left the queue after `waited` (`None`: it never reached the controller).
pub fn event_dequeued(waited: Option<Duration>) {
    metrics::gauge!(EVENT_QUEUE_SIZE).decrement(1.0);
    if let Some(waited) = waited {
        metrics::histogram!(EVENT_QUEUE_TIME_MS).record(waited.as_secs_f64() * 1000.0);
    }
}

/// The KafkaController gauges' values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerGauges {
    pub global_topic_count: usize,
    pub global_partition_count: usize,
    /// Partitions without a live leader, except those of topics being deleted.
    pub offline_partitions_count: usize,
    pub active_broker_count: usize,
    /// Partitions not led by their first assigned replica, except those of topics being deleted.
    pub preferred_replica_imbalance_count: usize,
    /// Topics queued for deletion.
    pub topics_to_delete_count: usize,
    /// Their replicas not yet deleted.
    pub replicas_to_delete_count: usize,
    /// Queued topics with a replica that cannot be deleted now.
    pub topics_ineligible_to_delete_count: usize,
    /// Replicas of queued topics that cannot be deleted now (broker down, delete failed).
    pub replicas_ineligible_to_delete_count: usize,
}

impl ControllerGauges {
    /// The values on the active controller; all zero elsewhere, as in Kafka, so the
    /// cluster-wide sum is the truth.
    pub fn of(ctx: Option<&ControllerContext>) -> ControllerGauges {
        let Some(ctx) = ctx else {
            return ControllerGauges::default();
        };
        let all = ctx.all_partitions();
        let offline = all
            .iter()
            .filter(|k| !ctx.is_queued_for_deletion(&k.0))
            .filter(|k| {
                ctx.leaderships
                    .get(*k)
                    .is_none_or(|l| !l.leader.is_some_and(|b| ctx.is_live(b)))
            })
            .count();
        let imbalance = all
            .iter()
            .filter(|k| !ctx.is_queued_for_deletion(&k.0))
            .filter(|k| {
                let head = ctx.replicas(&k.0, k.1).first().copied();
                ctx.leaderships.get(*k).is_some_and(|l| l.leader != head)
            })
            .count();
        let (replicas_to_delete, replicas_ineligible, topics_ineligible) = ctx.deletion_counts();
        ControllerGauges {
            global_topic_count: ctx.topics.len(),
            global_partition_count: all.len(),
            offline_partitions_count: offline,
            active_broker_count: ctx.live_brokers.len(),
            preferred_replica_imbalance_count: imbalance,
            topics_to_delete_count: ctx.topics_to_delete.len(),
            replicas_to_delete_count: replicas_to_delete,
            topics_ineligible_to_delete_count: topics_ineligible,
            replicas_ineligible_to_delete_count: replicas_ineligible,
        }
    }

    pub fn publish(&self) {
        let set = |name: &'static str, v: usize| metrics::gauge!(name).set(v as f64);
        set(
            "kafka_controller_kafkacontroller_globaltopiccount",
            self.global_topic_count,
        );
        set(
            "kafka_controller_kafkacontroller_globalpartitioncount",
            self.global_partition_count,
        );
        set(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            self.offline_partitions_count,
        );
        set(
            "kafka_controller_kafkacontroller_activebrokercount",
            self.active_broker_count,
        );
        set(
            "kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
            self.preferred_replica_imbalance_count,
        );
        set(
            "kafka_controller_kafkacontroller_topicstodeletecount",
            self.topics_to_delete_count,
        );
        set(
            "kafka_controller_kafkacontroller_replicastodeletecount",
            self.replicas_to_delete_count,
        );
        set(
            "kafka_controller_kafkacontroller_topicsineligibletodeletecount",
            self.topics_ineligible_to_delete_count,
        );
        set(
            "kafka_controller_kafkacontroller_replicasineligibletodeletecount",
            self.replicas_ineligible_to_delete_count,
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::controller::model::{LeaderAndIsr, TopicInfo};
    use crate::types::BrokerId;

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

    /// KafkaController.updateMetrics: offline = no live leader (no state yet counts too) outside
    /// topics being deleted, imbalance = led by someone other than the first assigned replica,
    /// and the deletion counts from the replica states.
    #[test]
    fn gauges_count_offline_and_imbalanced_partitions() {
        let mut ctx = ControllerContext::default();
        let assignment: BTreeMap<i32, Vec<BrokerId>> = [
            (0, vec![BrokerId(1), BrokerId(2)]),
            (1, vec![BrokerId(2), BrokerId(1)]),
            (2, vec![BrokerId(3)]),
            (3, vec![BrokerId(1)]),
        ]
        .into_iter()
        .collect();
        ctx.topics.insert(
            "t".into(),
            TopicInfo {
                id: uuid::Uuid::nil(),
                assignment,
                reassigning: Default::default(),
            },
        );
        for id in [1, 2] {
            ctx.live_brokers.insert(
                BrokerId(id),
                crate::controller::model::RegisteredBroker {
                    id: BrokerId(id),
                    registration: crate::zk::models::BrokerRegistration::v5(&[], None, 0),
                    epoch: 1,
                },
            );
        }
        // p0 led by its preferred replica; p1 by the other; p2's only replica is dead; p3 has no state.
        ctx.leaderships.insert(("t".into(), 0), led_by(1));
        ctx.leaderships.insert(("t".into(), 1), led_by(1));
        ctx.leaderships.insert(("t".into(), 2), led_by(-1));
        // "gone" is being deleted: its offline, imbalanced partition does not count; of its replicas,
        // the one on dead broker 3 waits, the one on broker 1 is being deleted.
        ctx.topics.insert(
            "gone".into(),
            TopicInfo {
                id: uuid::Uuid::nil(),
                assignment: [(0, vec![BrokerId(1), BrokerId(3)])].into_iter().collect(),
                reassigning: Default::default(),
            },
        );
        ctx.leaderships.insert(("gone".into(), 0), led_by(3));
        ctx.initialize_replica_states();
        ctx.topics_to_delete.insert("gone".into());
        ctx.start_deletion("gone");
        let got = ControllerGauges::of(Some(&ctx));
        assert_eq!(
            got,
            ControllerGauges {
                global_topic_count: 2,
                global_partition_count: 5,
                offline_partitions_count: 2,
                active_broker_count: 2,
                preferred_replica_imbalance_count: 2,
                topics_to_delete_count: 1,
                replicas_to_delete_count: 2,
                topics_ineligible_to_delete_count: 1,
                replicas_ineligible_to_delete_count: 1,
            }
        );
        assert_eq!(ControllerGauges::of(None), ControllerGauges::default());
    }
}
