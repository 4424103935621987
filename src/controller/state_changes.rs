//! Drives the partition state machine ([`super::partition_state`], Kafka's
//! PartitionStateMachine) from the controller's context: states are loaded at failover
//! (Kafka's initializePartitionState), new partitions enter as New, partitions whose leader
//! went away become Offline, written elections make them Online (or Offline without a leader),
//! deleted topics' partitions go through Offline to NonExistent.
//!
//! Every move is checked against the legal previous states; an illegal one is logged, counted
//! (`kastle_controller_illegal_partition_state_changes_total`) and refused, never a panic. The
//! controller asks [`ControllerContext::may_change`] before it writes a decision to ZooKeeper,
//! so a refused election is not written either. No I/O here.

use super::model::LeaderAndIsr;
use super::partition_state::{check_transition, PartitionState, PartitionStates};
use super::requests::ControllerContext;
use crate::types::{BrokerId, TopicPartition};

/// Counter of refused partition state changes (kastle's; Kafka only logs them).
pub const ILLEGAL_STATE_CHANGES: &str = "kastle_controller_illegal_partition_state_changes_total";

fn tp(key: &(String, i32)) -> TopicPartition {
    TopicPartition {
        topic: key.0.clone(),
        partition: key.1,
    }
}

/// The state a leadership puts a partition in: Online with a leader that can serve, else
/// Offline.
pub fn state_for(leader_online: bool) -> PartitionState {
    if leader_online {
        PartitionState::Online
    } else {
        PartitionState::Offline
    }
}

impl ControllerContext {
    /// Whether `leader` can serve `key`: a live broker whose replica is not in a failed log dir.
    pub fn replica_online(&self, key: &(String, i32), leader: Option<BrokerId>) -> bool {
        leader.is_some_and(|l| self.is_live(l) && !self.offline_replicas.contains(&(key.0.clone(), key.1, l)))
    }

    /// Whether the partition's current leader can serve it.
    pub fn leader_online(&self, key: &(String, i32)) -> bool {
        self.leaderships
            .get(key)
            .is_some_and(|l| self.replica_online(key, l.leader))
    }

    /// Kafka's initializePartitionState: with a state znode, Online if its leader is online,
    /// else Offline; without one, New.
    pub fn initialize_partition_states(&mut self) {
        let mut states = PartitionStates::new();
        for key in self.all_partitions() {
            let state = if self.leaderships.contains_key(&key) {
                state_for(self.leader_online(&key))
            } else {
                PartitionState::New
            };
            states.initialize(tp(&key), state);
        }
        self.partition_states = states;
    }

    pub fn partition_state(&self, key: &(String, i32)) -> PartitionState {
        self.partition_states.state(&tp(key))
    }

    /// Whether `key` may move to `to`; if not, the refusal is logged and counted.
    pub fn may_change(&self, key: &(String, i32), to: PartitionState) -> bool {
        match check_transition(self.partition_state(key), to) {
            Ok(()) => true,
            Err(e) => {
                refused(key, &e);
                false
            }
        }
    }

    /// Moves each of `partitions` to `to` where that is legal; returns the ones moved.
    pub fn change_states(&mut self, partitions: &[(String, i32)], to: PartitionState) -> Vec<(String, i32)> {
        let mut moved = Vec::with_capacity(partitions.len());
        for key in partitions {
            match self.partition_states.transition(&tp(key), to) {
                Ok(()) => moved.push(key.clone()),
                Err(e) => refused(key, &e),
            }
        }
        moved
    }

    /// The state `next` (a decided leadership) puts `key` in.
    pub fn state_after(&self, key: &(String, i32), next: &LeaderAndIsr) -> PartitionState {
        state_for(self.replica_online(key, next.leader))
    }

    /// Online partitions whose leader can no longer serve them (a broker died, a log dir
    /// failed) become Offline, as Kafka's onReplicasBecomeOffline does before it re-elects.
    pub fn mark_leaderless_offline(&mut self) -> Vec<(String, i32)> {
        let lost: Vec<(String, i32)> = self
            .partition_states
            .partitions_in(PartitionState::Online)
            .into_iter()
            .map(|tp| (tp.topic, tp.partition))
            .filter(|key| !self.leader_online(key))
            .collect();
        self.change_states(&lost, PartitionState::Offline)
    }
}

#[cfg(test)]
thread_local! {
    /// Refused changes on this thread, for the simulation's invariant.
    pub static ILLEGAL_SEEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn refused(key: &(String, i32), e: &super::partition_state::IllegalTransition) {
    #[cfg(test)]
    ILLEGAL_SEEN.with(|c| c.set(c.get() + 1));
    tracing::error!(topic = %key.0, partition = key.1, error = %e, "refused an illegal partition state change");
    metrics::counter!(ILLEGAL_STATE_CHANGES).increment(1);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::PartitionState::*;
    use super::*;
    use crate::controller::model::{RegisteredBroker, TopicInfo};

    fn led_by(leader: i32) -> LeaderAndIsr {
        LeaderAndIsr {
            leader: LeaderAndIsr::leader_from_wire(BrokerId(leader)),
            leader_epoch: 0,
            isr: vec![BrokerId(1), BrokerId(2)],
            controller_epoch: 1,
            leader_recovery_state: 0,
            zk_version: 0,
        }
    }

    fn key(p: i32) -> (String, i32) {
        ("t".to_string(), p)
    }

    /// Brokers 1 and 2 live; partitions 0–3 of `t` on [1, 2] (p3 only on 3).
    fn context() -> ControllerContext {
        let mut ctx = ControllerContext::default();
        let assignment: BTreeMap<i32, Vec<BrokerId>> = [
            (0, vec![BrokerId(1), BrokerId(2)]),
            (1, vec![BrokerId(1), BrokerId(2)]),
            (2, vec![BrokerId(1), BrokerId(2)]),
            (3, vec![BrokerId(3)]),
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
                RegisteredBroker {
                    id: BrokerId(id),
                    registration: crate::zk::models::BrokerRegistration::v5(&[], None, 0),
                    epoch: 1,
                },
            );
        }
        ctx
    }

    /// PartitionStateMachine.initializePartitionState.
    #[test]
    fn failover_loads_new_online_and_offline_partitions() {
        let mut ctx = context();
        ctx.leaderships.insert(key(0), led_by(1));
        ctx.leaderships.insert(key(1), led_by(2));
        ctx.offline_replicas.insert(("t".into(), 1, BrokerId(2))); // its leader's log dir failed
        ctx.leaderships.insert(key(3), led_by(3)); // leader not live
        ctx.initialize_partition_states();
        let got: Vec<PartitionState> = (0..4).map(|p| ctx.partition_state(&key(p))).collect();
        assert_eq!(got, vec![Online, Offline, New, Offline]);
    }

    /// doHandleStateChanges: an invalid partition is logged and skipped, the rest move.
    #[test]
    fn illegal_changes_are_refused_and_leave_the_state_as_it_was() {
        let mut ctx = context();
        ctx.leaderships.insert(key(0), led_by(1));
        ctx.initialize_partition_states();
        let gone = ("deleted".to_string(), 0);
        assert!(!ctx.may_change(&gone, Online), "NonExistent -> Online");
        assert!(ctx.may_change(&key(2), Online), "New -> Online");
        assert!(!ctx.may_change(&key(0), New), "Online -> New");
        let moved = ctx.change_states(&[key(0), key(2), gone.clone()], Offline);
        assert_eq!(moved, vec![key(0), key(2)]);
        assert_eq!(ctx.partition_state(&gone), NonExistent);
        assert_eq!(ctx.change_states(&[key(0)], NonExistent), vec![key(0)]);
        assert_eq!(ctx.change_states(&[key(0)], Online), Vec::<(String, i32)>::new());
    }

    /// onReplicasBecomeOffline: only Online partitions whose leader went away move.
    #[test]
    fn partitions_that_lost_their_leader_go_offline() {
        let mut ctx = context();
        ctx.leaderships.insert(key(0), led_by(1));
        ctx.leaderships.insert(key(1), led_by(2));
        ctx.initialize_partition_states();
        ctx.live_brokers.remove(&BrokerId(2));
        assert_eq!(ctx.mark_leaderless_offline(), vec![key(1)]);
        assert_eq!(ctx.partition_state(&key(0)), Online);
        assert_eq!(ctx.partition_state(&key(1)), Offline);
        assert_eq!(ctx.state_after(&key(1), &led_by(1)), Online);
        assert_eq!(ctx.state_after(&key(1), &led_by(-1)), Offline);
    }
}
