//! The partition state machine's states and legal transitions (Kafka's `PartitionStateMachine`
//! and the partition-state half of `ControllerContext`), plus the in-memory map of every
//! partition's state.
//!
//! This module owns only the bookkeeping: which state a partition is in and whether a move is
//! legal. It must not elect, write ZooKeeper or send requests; the controller does those and
//! then records the outcome here. An illegal transition is refused with [`IllegalTransition`]
//! and the map is left unchanged; the caller logs and counts it, never panics.

use std::collections::{BTreeMap, HashSet};

use crate::types::TopicPartition;

/// A partition's state in the controller. Partitions absent from [`PartitionStates`] are
/// [`PartitionState::NonExistent`], as in Kafka's `getOrElseUpdate(partition, NonExistentPartition)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PartitionState {
    /// Never created, or deleted. Legal previous state: Offline.
    NonExistent,
    /// Replicas assigned, no leader/ISR yet. Legal previous state: NonExistent.
    New,
    /// A leader was elected. Legal previous states: New, Online (re-election), Offline.
    Online,
    /// The leader died (or the topic is being deleted). Legal previous states: New, Online, Offline.
    Offline,
}

impl PartitionState {
    /// Kafka's `validPreviousStates`.
    pub const fn valid_previous_states(self) -> &'static [PartitionState] {
        use PartitionState::*;
        match self {
            NonExistent => &[Offline],
            New => &[NonExistent],
            Online => &[New, Online, Offline],
            Offline => &[New, Online, Offline],
        }
    }

    /// Kafka's state byte (`NewPartition`=0 … `NonExistentPartition`=3), for logs and metrics.
    pub const fn as_byte(self) -> u8 {
        match self {
            PartitionState::New => 0,
            PartitionState::Online => 1,
            PartitionState::Offline => 2,
            PartitionState::NonExistent => 3,
        }
    }

    /// Kafka's name, as it appears in the state-change log.
    pub const fn kafka_name(self) -> &'static str {
        match self {
            PartitionState::NonExistent => "NonExistentPartition",
            PartitionState::New => "NewPartition",
            PartitionState::Online => "OnlinePartition",
            PartitionState::Offline => "OfflinePartition",
        }
    }
}

/// A refused partition state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "partition should be in one of {:?} before moving to {}, instead it is in {}",
    to.valid_previous_states().iter().map(|s| s.kafka_name()).collect::<Vec<_>>(),
    to.kafka_name(),
    from.kafka_name()
)]
pub struct IllegalTransition {
    pub from: PartitionState,
    pub to: PartitionState,
}

/// Whether a partition may move from `from` to `to`.
pub fn check_transition(from: PartitionState, to: PartitionState) -> Result<(), IllegalTransition> {
    if to.valid_previous_states().contains(&from) {
        Ok(())
    } else {
        Err(IllegalTransition { from, to })
    }
}

/// Every known partition's state. Ordered so that iteration (and so request batching and
/// logs) is deterministic.
#[derive(Debug, Clone, Default)]
pub struct PartitionStates {
    states: BTreeMap<TopicPartition, PartitionState>,
}

impl PartitionStates {
    pub fn new() -> Self {
        Self::default()
    }

    /// The partition's state; NonExistent if it was never recorded.
    pub fn state(&self, tp: &TopicPartition) -> PartitionState {
        self.states.get(tp).copied().unwrap_or(PartitionState::NonExistent)
    }

    /// Moves a partition to `to` if that is legal from its current state. Moving to NonExistent
    /// forgets the partition, so the map only holds partitions that exist.
    pub fn transition(&mut self, tp: &TopicPartition, to: PartitionState) -> Result<(), IllegalTransition> {
        check_transition(self.state(tp), to)?;
        if to == PartitionState::NonExistent {
            self.states.remove(tp);
        } else {
            self.states.insert(tp.clone(), to);
        }
        Ok(())
    }

    /// Records a state without checking the transition: controller failover
    /// (`initializePartitionState`) loads New (no state znode), Online (leader live) or Offline
    /// from ZooKeeper. Recording NonExistent forgets the partition.
    pub fn initialize(&mut self, tp: TopicPartition, state: PartitionState) {
        if state == PartitionState::NonExistent {
            self.states.remove(&tp);
        } else {
            self.states.insert(tp, state);
        }
    }

    /// Kafka's `OfflinePartitionsCount`: partitions in Offline, not counting topics queued for
    /// deletion (their partitions are taken offline on purpose).
    pub fn offline_count(&self, excluding_topics: &HashSet<String>) -> usize {
        self.states
            .iter()
            .filter(|(tp, s)| **s == PartitionState::Offline && !excluding_topics.contains(&tp.topic))
            .count()
    }

    /// Partitions currently in `state`, in topic-then-partition order. NonExistent partitions
    /// are not tracked, so asking for them yields nothing.
    pub fn partitions_in(&self, state: PartitionState) -> Vec<TopicPartition> {
        self.states
            .iter()
            .filter(|(_, s)| **s == state)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Number of partitions that exist.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::PartitionState::*;
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.to_string(),
            partition,
        }
    }

    /// PartitionStateMachine.scala: every (from, to) pair against Kafka's validPreviousStates.
    #[test]
    fn partition_transitions_are_legal_exactly_from_kafkas_valid_previous_states() {
        let all = [NonExistent, New, Online, Offline];
        let legal: &[(PartitionState, PartitionState)] = &[
            (NonExistent, New),
            (New, Online),
            (Online, Online),
            (Offline, Online),
            (New, Offline),
            (Online, Offline),
            (Offline, Offline),
            (Offline, NonExistent),
        ];
        for from in all {
            for to in all {
                let want = legal.contains(&(from, to));
                assert_eq!(check_transition(from, to).is_ok(), want, "{from:?} -> {to:?}");
            }
        }
    }

    /// doHandleStateChanges: invalid partitions are logged and skipped, state untouched.
    #[test]
    fn an_illegal_transition_is_refused_and_leaves_the_state_as_it_was() {
        let mut states = PartitionStates::new();
        let p = tp("t", 0);
        let cases: &[(PartitionState, Result<(), IllegalTransition>, PartitionState)] = &[
            (
                Online,
                Err(IllegalTransition {
                    from: NonExistent,
                    to: Online,
                }),
                NonExistent,
            ),
            (New, Ok(()), New),
            (
                NonExistent,
                Err(IllegalTransition {
                    from: New,
                    to: NonExistent,
                }),
                New,
            ),
            (Online, Ok(()), Online),
            (New, Err(IllegalTransition { from: Online, to: New }), Online),
            (Online, Ok(()), Online),
            (Offline, Ok(()), Offline),
            (NonExistent, Ok(()), NonExistent),
        ];
        for (i, (to, want, after)) in cases.iter().enumerate() {
            assert_eq!(states.transition(&p, *to), *want, "step {i}: -> {to:?}");
            assert_eq!(states.state(&p), *after, "step {i}");
        }
        assert!(states.is_empty(), "NonExistent partitions are forgotten");
    }

    #[test]
    fn illegal_transition_message_names_kafka_states() {
        let err = IllegalTransition {
            from: NonExistent,
            to: Online,
        };
        assert_eq!(
            err.to_string(),
            "partition should be in one of [\"NewPartition\", \"OnlinePartition\", \"OfflinePartition\"] \
             before moving to OnlinePartition, instead it is in NonExistentPartition"
        );
    }

    /// ControllerContext.offlinePartitionCount skips topics queued for deletion.
    #[test]
    fn offline_partitions_count_excludes_topics_being_deleted() {
        let mut states = PartitionStates::new();
        states.initialize(tp("a", 0), Offline);
        states.initialize(tp("a", 1), Online);
        states.initialize(tp("b", 0), Offline);
        states.initialize(tp("b", 1), Offline);
        states.initialize(tp("c", 0), New);
        let cases: &[(&[&str], usize)] = &[(&[], 3), (&["b"], 1), (&["a", "b"], 0), (&["zzz"], 3)];
        for (excluded, want) in cases {
            let excluded: HashSet<String> = excluded.iter().map(|s| s.to_string()).collect();
            assert_eq!(states.offline_count(&excluded), *want, "{excluded:?}");
        }
    }

    #[test]
    fn partitions_in_state_are_listed_in_topic_then_partition_order() {
        let mut states = PartitionStates::new();
        for p in [tp("b", 1), tp("a", 2), tp("b", 0), tp("a", 10)] {
            states.initialize(p, Offline);
        }
        states.initialize(tp("a", 3), Online);
        assert_eq!(
            states.partitions_in(Offline),
            vec![tp("a", 2), tp("a", 10), tp("b", 0), tp("b", 1)]
        );
        assert_eq!(states.partitions_in(Online), vec![tp("a", 3)]);
        assert_eq!(states.partitions_in(New), vec![]);
        assert_eq!(states.len(), 5);
    }

    #[test]
    fn state_bytes_match_kafka() {
        let cases = [(New, 0), (Online, 1), (Offline, 2), (NonExistent, 3)];
        for (state, byte) in cases {
            assert_eq!(state.as_byte(), byte, "{state:?}");
        }
    }
}
