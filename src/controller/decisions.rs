//! Adapts the pure election functions to the controller's stored form: given a partition's
//! assignment, its current state znode contents and the live brokers, what (if anything) should
//! the state znode say next. No I/O.

use std::collections::{BTreeSet, HashSet};

use super::election;
use super::error::ControllerError::{
    self, ElectionNotNeeded, EligibleLeadersNotAvailable, PreferredLeaderNotAvailable,
};
use super::model::LeaderAndIsr;
use crate::types::BrokerId;

/// A new partition's first leader and ISR (New → Online), or `None` with no live replica.
pub fn new_partition(
    assignment: &[BrokerId],
    live: &BTreeSet<BrokerId>,
    controller_epoch: i32,
) -> Option<LeaderAndIsr> {
    let live: HashSet<BrokerId> = live.iter().copied().collect();
    let l = election::initial_leader_and_isr(assignment, &live)?;
    Some(LeaderAndIsr { controller_epoch, ..l })
}

/// The next state of an existing partition: a new leader when the current one is dead (from the
/// ISR; outside it only with unclean election), dead members removed from the ISR (never below
/// one member). `None` when nothing changes.
/// Whether electing a leader for `current` would have to be unclean (its leader and every ISR
/// member are down): only then does the topic's `unclean.leader.election.enable` matter, and
/// the controller reads it from `/config/topics/<t>` (Kafka's
/// `collectUncleanLeaderElectionState`).
pub fn needs_unclean_choice(current: &LeaderAndIsr, live: &BTreeSet<BrokerId>) -> bool {
    let leader_alive = current.leader.is_some_and(|l| live.contains(&l));
    !leader_alive && !current.isr.iter().any(|r| live.contains(r))
}

pub fn existing_partition(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &BTreeSet<BrokerId>,
    allow_unclean: bool,
    controller_epoch: i32,
) -> Option<LeaderAndIsr> {
    let live_set: HashSet<BrokerId> = live.iter().copied().collect();
    let mut state = current.clone();
    let mut changed = false;
    let leader_alive = state.leader.is_some_and(|l| live.contains(&l));
    if !leader_alive {
        if let Some(result) = election::offline_partition_election(assignment, &state, &live_set, allow_unclean) {
            state = result.new;
            changed = true;
        }
    }
    let dead: Vec<BrokerId> = state.isr.iter().copied().filter(|r| !live.contains(r)).collect();
    for replica in dead {
        if let Some(next) = election::remove_replica_from_isr(&state, replica) {
            state = next;
            changed = true;
        }
    }
    changed.then(|| stored(state, current, controller_epoch))
}

/// Controlled shutdown of `broker`: a partition it leads moves to the first live ISR member not
/// shutting down (the ISR drops shutting-down brokers); one it follows loses it from the ISR.
/// `None` when nothing can or needs to change (e.g. a single-replica partition).
pub fn controlled_shutdown(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &BTreeSet<BrokerId>,
    shutting_down: &BTreeSet<BrokerId>,
    broker: BrokerId,
    controller_epoch: i32,
) -> Option<LeaderAndIsr> {
    let state = current;
    let next = if state.leader == Some(broker) {
        if assignment.len() <= 1 {
            return None;
        }
        let live: HashSet<BrokerId> = live.iter().copied().collect();
        let shutting: HashSet<BrokerId> = shutting_down.iter().copied().collect();
        election::controlled_shutdown_election(assignment, state, &live, &shutting)?.new
    } else {
        election::remove_replica_from_isr(state, broker)?
    };
    Some(stored(next, current, controller_epoch))
}

/// What writing `next` over `previous` does to a partition's leadership, for Kafka's
/// `LeaderElectionRateAndTimeMs` (steps that elect) and `UncleanLeaderElectionsPerSec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderChange {
    /// Same leader (an ISR change only), or no leader at all.
    NotElected,
    /// A new partition's first leader, or a new leader from the ISR.
    Clean,
    /// A new leader from outside the ISR: may lack committed records.
    Unclean,
}

pub fn leader_change(previous: Option<&LeaderAndIsr>, next: &LeaderAndIsr) -> LeaderChange {
    let Some(leader) = next.leader else {
        return LeaderChange::NotElected;
    };
    match previous {
        None => LeaderChange::Clean,
        Some(p) if p.leader == next.leader => LeaderChange::NotElected,
        Some(p) if p.isr.contains(&leader) => LeaderChange::Clean,
        Some(_) => LeaderChange::Unclean,
    }
}

/// Preferred-replica election: the first assigned replica leads if it is live and in sync.
pub fn preferred(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &BTreeSet<BrokerId>,
    controller_epoch: i32,
) -> Result<LeaderAndIsr, ControllerError> {
    if assignment.first().is_some_and(|p| Some(*p) == current.leader) {
        return Err(ElectionNotNeeded);
    }
    let live: HashSet<BrokerId> = live.iter().copied().collect();
    let result =
        election::preferred_replica_election(assignment, &current.clone(), &live).ok_or(PreferredLeaderNotAvailable)?;
    Ok(stored(result.new, current, controller_epoch))
}

/// Unclean election (ElectLeaders UNCLEAN): only for a partition without a live leader; may pick
/// a replica outside the ISR.
pub fn unclean(
    assignment: &[BrokerId],
    current: &LeaderAndIsr,
    live: &BTreeSet<BrokerId>,
    controller_epoch: i32,
) -> Result<LeaderAndIsr, ControllerError> {
    if current.leader.is_some_and(|l| live.contains(&l)) {
        return Err(ElectionNotNeeded);
    }
    let live: HashSet<BrokerId> = live.iter().copied().collect();
    let result = election::offline_partition_election(assignment, &current.clone(), &live, true)
        .ok_or(EligibleLeadersNotAvailable)?;
    Ok(stored(result.new, current, controller_epoch))
}

/// `next` as written by a controller of `controller_epoch` over `current` (whose znode version
/// the conditional write checks).
fn stored(next: LeaderAndIsr, current: &LeaderAndIsr, controller_epoch: i32) -> LeaderAndIsr {
    LeaderAndIsr {
        controller_epoch,
        zk_version: current.zk_version,
        ..next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(leader: i32, isr: &[i32]) -> LeaderAndIsr {
        LeaderAndIsr {
            leader: LeaderAndIsr::leader_from_wire(BrokerId(leader)),
            leader_epoch: 0,
            isr: isr.iter().map(|b| BrokerId(*b)).collect(),
            controller_epoch: 1,
            leader_recovery_state: 0,
            zk_version: 0,
        }
    }

    #[test]
    fn only_a_partition_without_a_live_isr_member_needs_the_unclean_setting() {
        let live: BTreeSet<BrokerId> = [BrokerId(2), BrokerId(3)].into();
        assert!(!needs_unclean_choice(&l(2, &[2, 3]), &live), "leader alive");
        assert!(
            !needs_unclean_choice(&l(1, &[1, 3]), &live),
            "a live ISR member can lead"
        );
        assert!(needs_unclean_choice(&l(1, &[1]), &live));
        assert!(needs_unclean_choice(&l(-1, &[1]), &live));
    }

    /// PartitionStateMachine marks UncleanLeaderElectionsPerSec when the leader comes from
    /// outside the ISR; an ISR shrink with the same leader elects nobody.
    #[test]
    fn leader_changes_are_classified_against_the_previous_isr() {
        use LeaderChange::*;
        let cases: [(&str, Option<LeaderAndIsr>, LeaderAndIsr, LeaderChange); 6] = [
            ("new partition", None, l(1, &[1, 2]), Clean),
            ("new partition without a live replica", None, l(-1, &[]), NotElected),
            (
                "dead leader replaced from the ISR",
                Some(l(1, &[1, 2])),
                l(2, &[2]),
                Clean,
            ),
            (
                "dead leader replaced from outside the ISR",
                Some(l(1, &[1])),
                l(2, &[2]),
                Unclean,
            ),
            (
                "dead follower leaves the ISR",
                Some(l(1, &[1, 2])),
                l(1, &[1]),
                NotElected,
            ),
            ("last ISR member dies", Some(l(1, &[1])), l(-1, &[1]), NotElected),
        ];
        for (what, previous, next, want) in cases {
            assert_eq!(leader_change(previous.as_ref(), &next), want, "{what}");
        }
    }
}
