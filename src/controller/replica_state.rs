//! The replica state machine's states and legal transitions (Kafka's `ReplicaStateMachine` and
//! the replica-state half of `ControllerContext`), plus the in-memory map of every replica's
//! state, keyed by topic, partition and broker.
//!
//! This module owns only the bookkeeping. It must not send StopReplica or LeaderAndIsr, nor
//! shrink ISRs (see `election::remove_replica_from_isr` for the OfflineReplica ZooKeeper
//! update). An illegal transition is refused with [`IllegalTransition`] and the map is left
//! unchanged; the caller logs and counts it, never panics.

use std::collections::BTreeMap;

use crate::types::{BrokerId, TopicPartition};

/// A replica's state in the controller. Replicas absent from [`ReplicaStates`] are
/// [`ReplicaState::NonExistent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReplicaState {
    /// Created by a new topic/partition or a reassignment; may only follow.
    /// Legal previous state: NonExistent.
    New,
    /// Serving as leader or follower.
    /// Legal previous states: New, Online, Offline, DeletionIneligible.
    Online,
    /// Its broker died, its log dir failed, or it is being stopped.
    /// Legal previous states: New, Online, Offline, DeletionIneligible.
    Offline,
    /// StopReplica(delete=true) sent. Legal previous state: Offline.
    DeletionStarted,
    /// The broker confirmed the delete. Legal previous state: DeletionStarted.
    DeletionSuccessful,
    /// Deletion cannot proceed now (broker down, delete failed); retried later.
    /// Legal previous states: Offline, DeletionStarted.
    DeletionIneligible,
    /// Gone. Legal previous state: DeletionSuccessful.
    NonExistent,
}

impl ReplicaState {
    /// Kafka's `validPreviousStates`.
    pub const fn valid_previous_states(self) -> &'static [ReplicaState] {
        use ReplicaState::*;
        match self {
            New => &[NonExistent],
            Online | Offline => &[New, Online, Offline, DeletionIneligible],
            DeletionStarted => &[Offline],
            DeletionSuccessful => &[DeletionStarted],
            DeletionIneligible => &[Offline, DeletionStarted],
            NonExistent => &[DeletionSuccessful],
        }
    }

    /// Kafka's state byte (`NewReplica`=1 … `NonExistentReplica`=7).
    pub const fn as_byte(self) -> u8 {
        match self {
            ReplicaState::New => 1,
            ReplicaState::Online => 2,
            ReplicaState::Offline => 3,
            ReplicaState::DeletionStarted => 4,
            ReplicaState::DeletionSuccessful => 5,
            ReplicaState::DeletionIneligible => 6,
            ReplicaState::NonExistent => 7,
        }
    }

    /// Kafka's name, as it appears in the state-change log.
    pub const fn kafka_name(self) -> &'static str {
        match self {
            ReplicaState::New => "NewReplica",
            ReplicaState::Online => "OnlineReplica",
            ReplicaState::Offline => "OfflineReplica",
            ReplicaState::DeletionStarted => "ReplicaDeletionStarted",
            ReplicaState::DeletionSuccessful => "ReplicaDeletionSuccessful",
            ReplicaState::DeletionIneligible => "ReplicaDeletionIneligible",
            ReplicaState::NonExistent => "NonExistentReplica",
        }
    }
}

/// One replica: a partition on a broker (Kafka's `PartitionAndReplica`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionAndReplica {
    pub tp: TopicPartition,
    pub replica: BrokerId,
}

/// A refused replica state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "replica should be in one of {:?} before moving to {}, instead it is in {}",
    to.valid_previous_states().iter().map(|s| s.kafka_name()).collect::<Vec<_>>(),
    to.kafka_name(),
    from.kafka_name()
)]
pub struct IllegalTransition {
    pub from: ReplicaState,
    pub to: ReplicaState,
}

/// Whether a replica may move from `from` to `to`.
pub fn check_transition(from: ReplicaState, to: ReplicaState) -> Result<(), IllegalTransition> {
    if to.valid_previous_states().contains(&from) {
        Ok(())
    } else {
        Err(IllegalTransition { from, to })
    }
}

/// Every known replica's state, ordered by topic, partition, broker.
#[derive(Debug, Clone, Default)]
pub struct ReplicaStates {
    states: BTreeMap<PartitionAndReplica, ReplicaState>,
}

impl ReplicaStates {
    pub fn new() -> Self {
        Self::default()
    }

    /// The replica's state; NonExistent if it was never recorded.
    pub fn state(&self, replica: &PartitionAndReplica) -> ReplicaState {
        self.states.get(replica).copied().unwrap_or(ReplicaState::NonExistent)
    }

    /// Moves a replica to `to` if that is legal from its current state. Moving to NonExistent
    /// forgets the replica (Kafka's `removeReplicaState`).
    pub fn transition(&mut self, replica: &PartitionAndReplica, to: ReplicaState) -> Result<(), IllegalTransition> {
        check_transition(self.state(replica), to)?;
        if to == ReplicaState::NonExistent {
            self.states.remove(replica);
        } else {
            self.states.insert(replica.clone(), to);
        }
        Ok(())
    }

    /// Records a state without checking the transition: controller failover
    /// (`initializeReplicaState`) loads Online for replicas on live brokers with healthy log dirs
    /// and DeletionIneligible for the rest. Recording NonExistent forgets the replica.
    pub fn initialize(&mut self, replica: PartitionAndReplica, state: ReplicaState) {
        if state == ReplicaState::NonExistent {
            self.states.remove(&replica);
        } else {
            self.states.insert(replica, state);
        }
    }

    /// Replicas currently in `state`, ordered by topic, partition, broker.
    pub fn replicas_in(&self, state: ReplicaState) -> Vec<PartitionAndReplica> {
        self.states
            .iter()
            .filter(|(_, s)| **s == state)
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// A topic's replicas in `state` (Kafka's `replicasForTopic` + `replicasInState`, which topic
    /// deletion uses to decide when every replica is gone or one is stuck).
    pub fn topic_replicas_in(&self, topic: &str, state: ReplicaState) -> Vec<PartitionAndReplica> {
        self.states
            .iter()
            .filter(|(r, s)| **s == state && r.tp.topic == topic)
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Number of replicas that exist.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::ReplicaState::*;
    use super::*;

    fn replica(topic: &str, partition: i32, broker: i32) -> PartitionAndReplica {
        PartitionAndReplica {
            tp: TopicPartition {
                topic: topic.to_string(),
                partition,
            },
            replica: BrokerId(broker),
        }
    }

    /// ReplicaStateMachine.scala: every (from, to) pair against Kafka's validPreviousStates.
    #[test]
    fn replica_transitions_are_legal_exactly_from_kafkas_valid_previous_states() {
        let all = [
            New,
            Online,
            Offline,
            DeletionStarted,
            DeletionSuccessful,
            DeletionIneligible,
            NonExistent,
        ];
        let legal: &[(ReplicaState, &[ReplicaState])] = &[
            (New, &[NonExistent]),
            (Online, &[New, Online, Offline, DeletionIneligible]),
            (Offline, &[New, Online, Offline, DeletionIneligible]),
            (DeletionStarted, &[Offline]),
            (DeletionSuccessful, &[DeletionStarted]),
            (DeletionIneligible, &[Offline, DeletionStarted]),
            (NonExistent, &[DeletionSuccessful]),
        ];
        for (to, froms) in legal {
            for from in all {
                let want = froms.contains(&from);
                assert_eq!(check_transition(from, *to).is_ok(), want, "{from:?} -> {to:?}");
            }
        }
    }

    /// TopicDeletionManager's path: Online → Offline → DeletionStarted → Successful → NonExistent,
    /// with an ineligible detour; illegal steps are refused and change nothing.
    #[test]
    fn a_replica_walks_kafkas_deletion_path_and_illegal_steps_change_nothing() {
        let mut states = ReplicaStates::new();
        let r = replica("t", 0, 1);
        let steps: &[(ReplicaState, bool, ReplicaState)] = &[
            (Online, false, NonExistent),
            (New, true, New),
            (DeletionStarted, false, New),
            (Online, true, Online),
            (DeletionStarted, false, Online),
            (Offline, true, Offline),
            (DeletionStarted, true, DeletionStarted),
            (DeletionIneligible, true, DeletionIneligible),
            (DeletionStarted, false, DeletionIneligible),
            (Offline, true, Offline),
            (DeletionStarted, true, DeletionStarted),
            (NonExistent, false, DeletionStarted),
            (DeletionSuccessful, true, DeletionSuccessful),
            (Online, false, DeletionSuccessful),
            (NonExistent, true, NonExistent),
        ];
        for (i, (to, ok, after)) in steps.iter().enumerate() {
            let before = states.state(&r);
            let got = states.transition(&r, *to);
            assert_eq!(got.is_ok(), *ok, "step {i}: {before:?} -> {to:?}");
            if let Err(e) = got {
                assert_eq!(e, IllegalTransition { from: before, to: *to }, "step {i}");
            }
            assert_eq!(states.state(&r), *after, "step {i}");
        }
        assert!(states.is_empty(), "NonExistent replicas are forgotten");
    }

    #[test]
    fn replicas_are_listed_by_state_and_by_topic_in_key_order() {
        let mut states = ReplicaStates::new();
        states.initialize(replica("b", 0, 2), Online);
        states.initialize(replica("a", 1, 3), DeletionIneligible);
        states.initialize(replica("a", 0, 2), Online);
        states.initialize(replica("a", 0, 1), Online);
        states.initialize(replica("a", 1, 1), DeletionIneligible);
        let cases: &[(Option<&str>, ReplicaState, Vec<PartitionAndReplica>)] = &[
            (
                None,
                Online,
                vec![replica("a", 0, 1), replica("a", 0, 2), replica("b", 0, 2)],
            ),
            (None, DeletionIneligible, vec![replica("a", 1, 1), replica("a", 1, 3)]),
            (Some("a"), Online, vec![replica("a", 0, 1), replica("a", 0, 2)]),
            (Some("b"), DeletionIneligible, vec![]),
            (None, Offline, vec![]),
        ];
        for (topic, state, want) in cases {
            let got = match topic {
                Some(t) => states.topic_replicas_in(t, *state),
                None => states.replicas_in(*state),
            };
            assert_eq!(&got, want, "{topic:?} {state:?}");
        }
        assert_eq!(states.len(), 5);
    }

    #[test]
    fn state_bytes_and_names_match_kafka() {
        let cases = [
            (New, 1, "NewReplica"),
            (Online, 2, "OnlineReplica"),
            (Offline, 3, "OfflineReplica"),
            (DeletionStarted, 4, "ReplicaDeletionStarted"),
            (DeletionSuccessful, 5, "ReplicaDeletionSuccessful"),
            (DeletionIneligible, 6, "ReplicaDeletionIneligible"),
            (NonExistent, 7, "NonExistentReplica"),
        ];
        for (state, byte, name) in cases {
            assert_eq!((state.as_byte(), state.kafka_name()), (byte, name), "{state:?}");
        }
    }
}
