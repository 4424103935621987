//! Partition leader election: Kafka's `Election.scala` and `PartitionLeaderElectionAlgorithms` as
//! pure functions. Each takes the assignment, the current `LeaderAndIsr` and the set of brokers
//! on which the replica is online, and returns the state to write plus who must hear about it.
//!
//! This module owns *deciding*; it must not touch ZooKeeper, the controller context or the
//! channel manager. The caller writes the result with an epoch-checked conditional `setData`
//! (which yields the new `zk_version`), then sends LeaderAndIsr to `recipients` and
//! UpdateMetadata to every live broker.
//!
//! Liveness is Kafka's `ControllerContext.isReplicaOnline`: the broker is registered, is **not**
//! shutting down, and the partition's log dir on it is not offline. Only the controlled-shutdown
//! strategy takes "live or shutting down" instead, as Kafka does.

use std::collections::HashSet;

pub use super::model::{LeaderAndIsr, LEADER_RECOVERED, LEADER_RECOVERING, NO_LEADER};
use crate::types::BrokerId;

/// What a successful election decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionResult {
    /// The state to write; its `leader_epoch` is the current one plus one.
    pub new: LeaderAndIsr,
    /// Brokers that get a LeaderAndIsr request for this partition: the strategy's replica list
    /// (assignment, or target replicas for a reassignment) filtered to live brokers, in order.
    pub recipients: Vec<BrokerId>,
    /// The leader came from outside the ISR; the caller marks `UncleanLeaderElectionsPerSec`.
    pub unclean: bool,
}

fn live_in_order(replicas: &[BrokerId], live: &HashSet<BrokerId>) -> Vec<BrokerId> {
    replicas.iter().copied().filter(|r| live.contains(r)).collect()
}

/// New→Online (`initializeLeaderAndIsrForPartitions`): the first live replica in assignment order
/// leads, every live replica is in the ISR, leader epoch and partition epoch start at 0.
/// `None` when no replica is live: Kafka leaves the partition in New and retries later.
pub fn initial_leader_and_isr(assignment: &[BrokerId], live: &HashSet<BrokerId>) -> Option<LeaderAndIsr> {
    let isr = live_in_order(assignment, live);
    let leader = *isr.first()?;
    Some(LeaderAndIsr {
        leader: Some(leader),
        leader_epoch: 0,
        isr,
        controller_epoch: 0,
        leader_recovery_state: LEADER_RECOVERED,
        zk_version: 0,
    })
}

/// `OfflinePartitionLeaderElectionStrategy(allowUnclean)`, used for New/Offline partitions after
/// broker changes and for UNCLEAN ElectLeaders.
///
/// Clean: the first replica in assignment order that is live and in the ISR; the new ISR is the
/// old ISR filtered to live brokers (its order kept) and the recovery state is kept. Unclean
/// (only if `allow_unclean` and no clean candidate): the first live replica, ISR `[leader]`,
/// recovery state RECOVERING (IBP ≥ 3.2). `None`: nobody can lead; Kafka fails the state change,
/// leaves the znode as it is and the partition stays Offline.
pub fn offline_partition_election(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &HashSet<BrokerId>,
    allow_unclean: bool,
) -> Option<ElectionResult> {
    let recipients = live_in_order(assignment, live);
    let clean = assignment
        .iter()
        .copied()
        .find(|r| live.contains(r) && current.isr.contains(r));
    let new = match clean {
        Some(leader) => {
            let isr = current.isr.iter().copied().filter(|r| live.contains(r)).collect();
            current.with_leader_and_isr(Some(leader), isr)
        }
        None if allow_unclean => {
            let leader = *recipients.first()?;
            let mut new = current.with_leader_and_isr(Some(leader), vec![leader]);
            new.leader_recovery_state = LEADER_RECOVERING;
            new
        }
        None => return None,
    };
    Some(ElectionResult {
        new,
        recipients,
        unclean: clean.is_none(),
    })
}

/// The ZooKeeper half of OfflineReplica (`ReplicaStateMachine.doRemoveReplicasFromIsr`): take a
/// replica that went offline out of a partition's ISR.
///
/// Kafka's rule: only partitions whose ISR contains the replica change. The leader becomes none
/// if it was that replica; the ISR loses the replica unless the ISR has exactly one member, which
/// is kept (never write an empty ISR: the last in-sync replica must stay electable when it
/// returns). The leader epoch is bumped by one.
///
/// `None` when the replica is not in the ISR (even if it is, abnormally, the leader), and also
/// when leader and ISR would come out unchanged (the replica is the sole ISR member of an already
/// leaderless partition). Kafka still writes a bumped epoch in that last case; skipping it keeps
/// callers that re-derive state on every broker change from rewriting offline partitions forever,
/// and no broker is fenced by it since nobody leads.
pub fn remove_replica_from_isr(current: &LeaderAndIsr, replica: BrokerId) -> Option<LeaderAndIsr> {
    if !current.isr.contains(&replica) {
        return None;
    }
    let leader = current.leader.filter(|l| *l != replica);
    let isr = if current.isr.len() == 1 {
        current.isr.clone()
    } else {
        current.isr.iter().copied().filter(|r| *r != replica).collect()
    };
    if leader == current.leader && isr == current.isr {
        return None;
    }
    Some(current.with_leader_and_isr(leader, isr))
}

/// `PreferredReplicaPartitionLeaderElectionStrategy` (ElectLeaders PREFERRED, auto-rebalance):
/// the assignment's head leads if it is live and in the ISR; the ISR is unchanged.
///
/// `None` if the head is already the leader (Kafka answers ELECTION_NOT_NEEDED before electing;
/// the caller can tell the two apart with `current.leader == assignment.first()`), or if it is
/// not live or not in the ISR (PREFERRED_LEADER_NOT_AVAILABLE).
pub fn preferred_replica_election(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &HashSet<BrokerId>,
) -> Option<ElectionResult> {
    let preferred = *assignment.first()?;
    if current.leader == Some(preferred) || !live.contains(&preferred) || !current.isr.contains(&preferred) {
        return None;
    }
    Some(ElectionResult {
        new: current.with_leader_and_isr(Some(preferred), current.isr.clone()),
        recipients: live_in_order(assignment, live),
        unclean: false,
    })
}

/// `ControlledShutdownPartitionLeaderElectionStrategy`: move leadership off brokers that asked
/// to shut down. Here `live` is Kafka's *live or shutting down* set (a shutting-down broker is
/// still registered and still receives the LeaderAndIsr).
///
/// Leader: the first replica in assignment order that is live, in the ISR and not shutting
/// down. ISR: the old ISR minus every shutting-down broker. `None` when no such replica exists:
/// the partition keeps its leader and the broker is told it still leads it.
pub fn controlled_shutdown_election(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &HashSet<BrokerId>,
    shutting_down: &HashSet<BrokerId>,
) -> Option<ElectionResult> {
    let leader = assignment
        .iter()
        .copied()
        .find(|r| live.contains(r) && current.isr.contains(r) && !shutting_down.contains(r))?;
    let isr = current
        .isr
        .iter()
        .copied()
        .filter(|r| !shutting_down.contains(r))
        .collect();
    Some(ElectionResult {
        new: current.with_leader_and_isr(Some(leader), isr),
        recipients: live_in_order(assignment, live),
        unclean: false,
    })
}

/// `ReassignPartitionLeaderElectionStrategy` (reassignment phase B, when the leader is not in
/// the target replicas or is dead): the first target replica that is live and in the ISR; the
/// ISR is unchanged. Recipients are the live target replicas. Like Kafka, this elects (and bumps
/// the epoch) even if the current leader would be chosen again; deciding whether to call it is
/// the caller's job. `None`: no target replica is live and in sync.
pub fn reassign_election(
    target_replicas: &[BrokerId],
    current: &LeaderAndIsr,
    live: &HashSet<BrokerId>,
) -> Option<ElectionResult> {
    let leader = target_replicas
        .iter()
        .copied()
        .find(|r| live.contains(r) && current.isr.contains(r))?;
    Some(ElectionResult {
        new: current.with_leader_and_isr(Some(leader), current.isr.clone()),
        recipients: live_in_order(target_replicas, live),
        unclean: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Ids = &'static [i32];
    /// A leader (-1 = none) and an ISR.
    type Leadership = (i32, Ids);

    fn ids(v: &[i32]) -> Vec<BrokerId> {
        v.iter().copied().map(BrokerId).collect()
    }

    fn set(v: &[i32]) -> HashSet<BrokerId> {
        v.iter().copied().map(BrokerId).collect()
    }

    /// A current state with leader epoch 7 and partition epoch 12; `leader` -1 = none.
    fn state(leader: i32, isr: &[i32], recovery: u8) -> LeaderAndIsr {
        LeaderAndIsr {
            leader: LeaderAndIsr::leader_from_wire(BrokerId(leader)),
            leader_epoch: 7,
            isr: ids(isr),
            controller_epoch: 3,
            leader_recovery_state: recovery,
            zk_version: 12,
        }
    }

    /// `state(..)` after one election: epoch 8, partition epoch untouched.
    fn bumped(leader: i32, isr: &[i32], recovery: u8) -> LeaderAndIsr {
        LeaderAndIsr {
            leader_epoch: 8,
            ..state(leader, isr, recovery)
        }
    }

    /// PartitionStateMachine New→Online (initializeLeaderAndIsrForPartitions).
    #[test]
    fn new_partition_leader_is_first_live_replica_and_isr_is_every_live_replica() {
        // (what, assignment, live, want (leader, isr))
        let cases: &[(&str, Ids, Ids, Option<Leadership>)] = &[
            ("all live", &[3, 1, 2], &[1, 2, 3], Some((3, &[3, 1, 2]))),
            ("head dead", &[3, 1, 2], &[1, 2], Some((1, &[1, 2]))),
            ("assignment order, not id order", &[5, 4], &[4, 5], Some((5, &[5, 4]))),
            ("no live replica: stays New", &[3, 1], &[2], None),
            ("empty assignment", &[], &[1], None),
        ];
        for (what, assignment, live, want) in cases {
            let got = initial_leader_and_isr(&ids(assignment), &set(live));
            let want = want.map(|(leader, isr)| LeaderAndIsr {
                leader: Some(BrokerId(leader)),
                leader_epoch: 0,
                isr: ids(isr),
                controller_epoch: 0,
                leader_recovery_state: LEADER_RECOVERED,
                zk_version: 0,
            });
            assert_eq!(got, want, "{what}");
        }
    }

    /// Election.leaderForOffline + offlinePartitionLeaderElection, with KIP-704 RECOVERING.
    #[test]
    fn offline_leader_is_replaced_from_isr_in_assignment_order_and_unclean_only_when_allowed() {
        type Current = (i32, Ids, u8);
        type Want = Option<(i32, Ids, u8, bool)>;
        // Assignment [1, 2, 3]. (what, current (leader, isr, recovery), live, allow unclean,
        // want (leader, isr, recovery, unclean))
        let cases: &[(&str, Current, Ids, bool, Want)] = &[
            (
                "live ISR member, assignment order",
                (1, &[3, 2, 1], 0),
                &[2, 3],
                false,
                Some((2, &[3, 2], 0, false)),
            ),
            (
                "ISR keeps its own order",
                (-1, &[3, 1, 2], 0),
                &[1, 2, 3],
                false,
                Some((1, &[3, 1, 2], 0, false)),
            ),
            (
                "live non-ISR replica skipped",
                (1, &[1, 3], 0),
                &[2, 3],
                false,
                Some((3, &[3], 0, false)),
            ),
            ("no live ISR member, clean only", (-1, &[1], 0), &[2, 3], false, None),
            (
                "unclean: first live replica",
                (-1, &[1], 0),
                &[3, 2],
                true,
                Some((2, &[2], 1, true)),
            ),
            (
                "unclean allowed, clean wins",
                (-1, &[3], 0),
                &[2, 3],
                true,
                Some((3, &[3], 0, false)),
            ),
            (
                "clean election keeps RECOVERING",
                (-1, &[1, 2], 1),
                &[2],
                false,
                Some((2, &[2], 1, false)),
            ),
            ("nothing live at all", (-1, &[1], 0), &[], true, None),
        ];
        let assignment = ids(&[1, 2, 3]);
        for (what, (leader, isr, rec), live, unclean, want) in cases {
            let got = offline_partition_election(&assignment, &state(*leader, isr, *rec), &set(live), *unclean);
            let want = want.map(|(l, isr, rec, unclean)| ElectionResult {
                new: bumped(l, isr, rec),
                recipients: assignment.iter().copied().filter(|r| set(live).contains(r)).collect(),
                unclean,
            });
            assert_eq!(got, want, "{what}");
        }
    }

    /// ReplicaStateMachine.doRemoveReplicasFromIsr: leader → -1, never shrink a 1-element ISR.
    #[test]
    fn offline_replica_leaves_isr_but_a_one_member_isr_is_kept_with_no_leader() {
        // (what, current (leader, isr), replica going offline, want (leader, isr))
        let cases: &[(&str, Leadership, i32, Option<Leadership>)] = &[
            ("follower leaves", (1, &[1, 2, 3]), 2, Some((1, &[1, 3]))),
            ("leader leaves: no leader", (1, &[1, 2, 3]), 1, Some((-1, &[2, 3]))),
            ("sole ISR member who leads", (1, &[1]), 1, Some((-1, &[1]))),
            ("sole ISR member, already leaderless", (-1, &[1]), 1, None),
            ("not in ISR: nothing to write", (1, &[1, 2]), 3, None),
            ("leader outside ISR: left alone", (3, &[1, 2]), 3, None),
        ];
        for (what, (leader, isr), replica, want) in cases {
            let got = remove_replica_from_isr(&state(*leader, isr, 0), BrokerId(*replica));
            assert_eq!(got, want.map(|(l, isr)| bumped(l, isr, 0)), "{what}");
        }
    }

    /// preferredReplicaPartitionLeaderElection: assignment head only, if live and in ISR.
    #[test]
    fn preferred_election_moves_leadership_to_assignment_head_only_when_live_and_in_sync() {
        // Assignment [1, 2, 3]. (what, current leader, isr, live, want leader)
        let cases: &[(&str, i32, Ids, Ids, Option<i32>)] = &[
            ("head live and in ISR", 2, &[1, 2, 3], &[1, 2, 3], Some(1)),
            ("already leader", 1, &[1, 2, 3], &[1, 2, 3], None),
            ("head not in ISR", 2, &[2, 3], &[1, 2, 3], None),
            ("head dead", 2, &[1, 2, 3], &[2, 3], None),
            ("leaderless partition", -1, &[1, 2], &[1, 3], Some(1)),
        ];
        for (what, leader, isr, live, want) in cases {
            let got = preferred_replica_election(&ids(&[1, 2, 3]), &state(*leader, isr, 0), &set(live));
            let want = want.map(|l| ElectionResult {
                new: bumped(l, isr, 0),
                recipients: ids(live),
                unclean: false,
            });
            assert_eq!(got, want, "{what}");
        }
    }

    /// controlledShutdownPartitionLeaderElection + ISR minus shutting-down brokers.
    #[test]
    fn controlled_shutdown_elects_a_live_isr_member_not_shutting_down_and_drops_shutting_down_from_isr() {
        // Assignment [1, 2, 3], all registered. (what, current (leader, isr), shutting down, want)
        let cases: &[(&str, Leadership, Ids, Option<Leadership>)] = &[
            ("leader shuts down", (1, &[1, 2, 3]), &[1], Some((2, &[2, 3]))),
            ("two shut down", (1, &[1, 2, 3]), &[1, 2], Some((3, &[3]))),
            ("sole ISR member: keeps leading", (1, &[1]), &[1], None),
            ("only out-of-sync replicas remain", (1, &[1, 2]), &[1, 2], None),
            ("ignores who leads now", (2, &[1, 2, 3]), &[3], Some((1, &[1, 2]))),
        ];
        // Shutting-down brokers are still registered: they count as live here and get the request.
        let everyone = ids(&[1, 2, 3]);
        let live = set(&[1, 2, 3]);
        for (what, (leader, isr), shutting, want) in cases {
            let got = controlled_shutdown_election(&everyone, &state(*leader, isr, 0), &live, &set(shutting));
            let want = want.map(|(l, isr)| ElectionResult {
                new: bumped(l, isr, 0),
                recipients: everyone.clone(),
                unclean: false,
            });
            assert_eq!(got, want, "{what}");
        }
    }

    /// reassignPartitionLeaderElection: first target replica live and in ISR; ISR unchanged.
    #[test]
    fn reassignment_elects_first_live_in_sync_target_replica_and_keeps_the_isr() {
        // Current leader 1. (what, target replicas, isr, live, want leader)
        let cases: &[(&str, Ids, Ids, Ids, Option<i32>)] = &[
            ("target order wins", &[4, 5, 6], &[1, 4, 5, 6], &[1, 4, 5, 6], Some(4)),
            ("dead target skipped", &[4, 5, 6], &[1, 4, 5, 6], &[1, 5, 6], Some(5)),
            ("out-of-sync target skipped", &[4, 5], &[1, 5], &[1, 4, 5], Some(5)),
            ("no target in sync", &[4, 5], &[1], &[1, 4, 5], None),
        ];
        for (what, target, isr, live, want) in cases {
            let got = reassign_election(&ids(target), &state(1, isr, 0), &set(live));
            let want = want.map(|l| ElectionResult {
                new: bumped(l, isr, 0),
                recipients: ids(target).into_iter().filter(|r| set(live).contains(r)).collect(),
                unclean: false,
            });
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn no_leader_round_trips_as_minus_one_on_the_wire() {
        assert_eq!(state(-1, &[1], 0).leader_or_no_leader(), NO_LEADER);
        assert_eq!(LeaderAndIsr::leader_from_wire(BrokerId(-2)), None, "LeaderDuringDelete");
        assert_eq!(state(4, &[4], 0).leader_or_no_leader(), BrokerId(4));
    }
}
