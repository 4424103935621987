//! The decisions of a partition reassignment (KIP-455), pure: what a request may do
//! ([`validate`]), the replica sets it leads to (Kafka's `ReplicaAssignment.reassignTo`:
//! [`reassign_to`]), and the next leadership of a partition being reassigned ([`next_step`]):
//! an epoch bump that tells the new replicas to start (phase A), or, once every target replica
//! is in the ISR, the completion (phase B: a leader from the targets, the removed replicas out of
//! the ISR). The state machine that asks ZooKeeper is [`super::reassignment`].

use std::collections::{BTreeSet, HashSet};

use super::Key;
use crate::controller::election;
use crate::controller::error::ControllerError;
use crate::controller::model::{LeaderAndIsr, Reassigning};
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;

/// A partition's replicas after a reassignment request: the full set (RS) and what it adds and
/// removes (empty when the request asks for what the partition has, reordered or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub replicas: Vec<BrokerId>,
    pub reassigning: Reassigning,
}

impl Planned {
    pub fn is_reassigning(&self) -> bool {
        !self.reassigning.adding.is_empty() || !self.reassigning.removing.is_empty()
    }

    /// The target replicas (TRS): RS without the removed ones, in RS order (targets first).
    pub fn target(&self) -> Vec<BrokerId> {
        without(&self.replicas, &self.reassigning.removing)
    }
}

fn without(list: &[BrokerId], gone: &[BrokerId]) -> Vec<BrokerId> {
    list.iter().copied().filter(|b| !gone.contains(b)).collect()
}

/// The original replicas (ORS) of a partition: RS without the ones a reassignment adds.
pub fn origin(replicas: &[BrokerId], current: Option<&Reassigning>) -> Vec<BrokerId> {
    without(replicas, current.map_or(&[][..], |r| &r.adding))
}

/// Kafka's `reassignTo`: RS = (target ++ origin).distinct, adding = RS − origin, removing =
/// RS − target. A new request for a partition already being reassigned starts again from its
/// original replicas, so cancelling (target = origin) reverts it.
pub fn reassign_to(replicas: &[BrokerId], current: Option<&Reassigning>, target: &[BrokerId]) -> Planned {
    let origin = origin(replicas, current);
    let mut full: Vec<BrokerId> = Vec::with_capacity(target.len() + origin.len());
    for b in target.iter().chain(&origin) {
        if !full.contains(b) {
            full.push(*b);
        }
    }
    let adding = without(&full, &origin);
    let removing = without(&full, target);
    Planned {
        replicas: full,
        reassigning: Reassigning { adding, removing },
    }
}

/// Why a reassignment of `key` to `target` (`None`: cancel) is refused, as Kafka's
/// `validateReplicas` and `maybeTriggerPartitionReassignment` answer: UNKNOWN_TOPIC_OR_PARTITION
/// for an unknown partition or a topic queued for deletion, NO_REASSIGNMENT_IN_PROGRESS for
/// cancelling none, INVALID_REPLICA_ASSIGNMENT for an empty list, duplicates, negative ids or
/// a new replica on a broker that is not live. Kastle also refuses a request that would drop
/// every in-sync replica, live or not (the data's last copies; Kafka would delete them):
/// INVALID_REPLICA_ASSIGNMENT.
pub fn validate(ctx: &ControllerContext, key: &Key, target: Option<&[BrokerId]>) -> Result<Planned, ControllerError> {
    let (topic, p) = (&key.0, key.1);
    let replicas = ctx
        .topics
        .get(topic)
        .and_then(|t| t.assignment.get(&p))
        .ok_or(ControllerError::UnknownTopicOrPartition)?;
    if ctx.is_queued_for_deletion(topic) {
        return Err(ControllerError::UnknownTopicOrPartition);
    }
    let current = ctx.reassigning(topic, p);
    let target: Vec<BrokerId> = match (target, current) {
        (Some(t), _) => t.to_vec(),
        (None, Some(_)) => origin(replicas, current),
        (None, None) => return Err(ControllerError::NoReassignmentInProgress),
    };
    let distinct: BTreeSet<&BrokerId> = target.iter().collect();
    if target.is_empty() || distinct.len() != target.len() || target.iter().any(|b| b.0 < 0) {
        return Err(ControllerError::InvalidReplicaAssignment);
    }
    let planned = reassign_to(replicas, current, &target);
    if planned.reassigning.adding.iter().any(|b| !ctx.is_live(*b)) {
        return Err(ControllerError::InvalidReplicaAssignment);
    }
    if let Some(l) = ctx.leaderships.get(key) {
        if !l.isr.iter().any(|b| planned.replicas.contains(b)) {
            return Err(ControllerError::InvalidReplicaAssignment);
        }
    }
    Ok(planned)
}

/// What to write for a partition being reassigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Phase A: the same leader and ISR (without replicas no longer assigned) at a new epoch, so
    /// every replica, the new ones too, learns the full replica set.
    Bump(LeaderAndIsr),
    /// Phase B: every target replica is in sync. A leader from the targets (the current one if
    /// it stays), the ISR without the replicas removed.
    Complete(LeaderAndIsr),
}

impl Step {
    pub fn leadership(&self) -> &LeaderAndIsr {
        match self {
            Step::Bump(l) | Step::Complete(l) => l,
        }
    }
}

/// The next leadership of a partition being reassigned, stored as `current`, with full replica
/// set `replicas` and target `target`. Complete once the target is in the ISR and one of it can
/// lead; otherwise a bump when `bump` (the reassignment was just started or resumed), else
/// nothing (an ISR change that does not finish it).
pub fn next_step(
    current: &LeaderAndIsr,
    replicas: &[BrokerId],
    target: &[BrokerId],
    live: &BTreeSet<BrokerId>,
    bump: bool,
    controller_epoch: i32,
) -> Option<Step> {
    let stored = |l: LeaderAndIsr| LeaderAndIsr {
        controller_epoch,
        zk_version: current.zk_version,
        ..l
    };
    let in_sync = target.iter().all(|b| current.isr.contains(b));
    if in_sync {
        let leader = match current.leader {
            Some(l) if target.contains(&l) && live.contains(&l) => Some(l),
            _ => {
                let live: HashSet<BrokerId> = live.iter().copied().collect();
                election::reassign_election(target, current, &live).and_then(|r| r.new.leader)
            }
        };
        if let Some(leader) = leader {
            let isr = current.isr.iter().copied().filter(|b| target.contains(b)).collect();
            return Some(Step::Complete(stored(current.with_leader_and_isr(Some(leader), isr))));
        }
    }
    if !bump {
        return None;
    }
    // Replicas no longer assigned leave the ISR now (unless that leaves no leader).
    let next = without_unassigned(current, replicas, live)
        .unwrap_or_else(|| current.with_leader_and_isr(current.leader, current.isr.clone()));
    Some(Step::Bump(stored(next)))
}

/// The leadership of a partition whose ISR holds replicas no longer assigned (a replaced or
/// cancelled reassignment's new ones): the ISR without them, and a leader from the assigned
/// ones if the current one goes (Kafka moves such replicas Offline, which takes them out of the
/// ISR). `None` when the ISR has none, or nothing assigned is live and in sync (they leave at
/// the next election instead of leaving the partition without a leader).
pub fn without_unassigned(
    current: &LeaderAndIsr,
    replicas: &[BrokerId],
    live: &BTreeSet<BrokerId>,
) -> Option<LeaderAndIsr> {
    if current.isr.iter().all(|b| replicas.contains(b)) {
        return None;
    }
    let isr: Vec<BrokerId> = current.isr.iter().copied().filter(|b| replicas.contains(b)).collect();
    let leader = match current.leader {
        Some(l) if replicas.contains(&l) => Some(l),
        None => None,
        Some(_) => {
            let live: HashSet<BrokerId> = live.iter().copied().collect();
            Some(election::reassign_election(replicas, current, &live)?.new.leader?)
        }
    };
    if isr.is_empty() {
        return None;
    }
    Some(current.with_leader_and_isr(leader, isr))
}

/// The same leader and ISR at a new leader epoch.
pub fn bump(current: &LeaderAndIsr, controller_epoch: i32) -> Step {
    Step::Bump(LeaderAndIsr {
        controller_epoch,
        zk_version: current.zk_version,
        ..current.with_leader_and_isr(current.leader, current.isr.clone())
    })
}

/// The step of a partition no longer being reassigned whose ISR still holds replicas no longer
/// assigned ([`without_unassigned`]), at a new leader epoch.
pub fn drop_unassigned(
    current: &LeaderAndIsr,
    replicas: &[BrokerId],
    live: &BTreeSet<BrokerId>,
    controller_epoch: i32,
) -> Option<Step> {
    let l = without_unassigned(current, replicas, live)?;
    Some(Step::Bump(LeaderAndIsr {
        controller_epoch,
        zk_version: current.zk_version,
        ..l
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[i32]) -> Vec<BrokerId> {
        v.iter().copied().map(BrokerId).collect()
    }

    fn l(leader: i32, isr: &[i32]) -> LeaderAndIsr {
        LeaderAndIsr {
            leader: LeaderAndIsr::leader_from_wire(BrokerId(leader)),
            leader_epoch: 5,
            isr: ids(isr),
            controller_epoch: 1,
            leader_recovery_state: 0,
            zk_version: 7,
        }
    }

    /// Kafka's ReplicaAssignmentTest: targets first, then the originals; a second request
    /// starts from the originals, and cancelling reverts to them.
    #[test]
    fn reassign_to_unions_target_and_origin_and_restarts_from_the_origin() {
        let p = reassign_to(&ids(&[1, 2, 3]), None, &ids(&[2, 3, 4]));
        assert_eq!(p.replicas, ids(&[2, 3, 4, 1]));
        assert_eq!(p.reassigning.adding, ids(&[4]));
        assert_eq!(p.reassigning.removing, ids(&[1]));
        assert_eq!(p.target(), ids(&[2, 3, 4]));
        let again = reassign_to(&p.replicas, Some(&p.reassigning), &ids(&[5, 6, 7]));
        // The origin is RS without the added replicas, in RS order (Kafka's `originReplicas`).
        assert_eq!(again.replicas, ids(&[5, 6, 7, 2, 3, 1]));
        assert_eq!(again.reassigning.adding, ids(&[5, 6, 7]));
        assert_eq!(again.reassigning.removing, ids(&[2, 3, 1]));
        let cancel = reassign_to(
            &p.replicas,
            Some(&p.reassigning),
            &origin(&p.replicas, Some(&p.reassigning)),
        );
        assert_eq!(cancel.replicas, ids(&[2, 3, 1]));
        assert!(!cancel.is_reassigning());
        let reorder = reassign_to(&ids(&[1, 2, 3]), None, &ids(&[3, 1, 2]));
        assert_eq!(reorder.replicas, ids(&[3, 1, 2]));
        assert!(!reorder.is_reassigning());
        let grow = reassign_to(&ids(&[1]), None, &ids(&[1, 2, 3]));
        assert_eq!(
            (grow.reassigning.adding, grow.reassigning.removing),
            (ids(&[2, 3]), vec![])
        );
    }

    #[test]
    fn a_reassignment_completes_only_once_every_target_is_in_sync() {
        let live: BTreeSet<BrokerId> = ids(&[1, 2, 3, 4]).into_iter().collect();
        let (rs, target) = (ids(&[2, 3, 4, 1]), ids(&[2, 3, 4]));
        // Phase A: 4 is not in sync; a start bumps the epoch and keeps leader and ISR.
        let bump = next_step(&l(1, &[1, 2, 3]), &rs, &target, &live, true, 9).expect("a bump");
        assert_eq!(
            bump,
            Step::Bump(LeaderAndIsr {
                leader_epoch: 6,
                controller_epoch: 9,
                ..l(1, &[1, 2, 3])
            })
        );
        assert_eq!(
            next_step(&l(1, &[1, 2, 3]), &rs, &target, &live, false, 9),
            None,
            "an ISR change that does not finish it"
        );
        // Phase B: the leader leaves, so the first in-sync target leads; 1 leaves the ISR.
        let done = next_step(&l(1, &[1, 2, 3, 4]), &rs, &target, &live, false, 9).expect("complete");
        assert_eq!(done.leadership().leader, Some(BrokerId(2)));
        assert_eq!(done.leadership().isr, ids(&[2, 3, 4]));
        assert_eq!(done.leadership().leader_epoch, 6);
        assert!(matches!(done, Step::Complete(_)));
        // A leader in the target stays.
        let stays = next_step(&l(3, &[1, 2, 3, 4]), &rs, &target, &live, false, 9).expect("complete");
        assert_eq!(stays.leadership().leader, Some(BrokerId(3)));
        // Every target in sync but none live: not complete yet; a start only bumps.
        let dead: BTreeSet<BrokerId> = ids(&[1]).into_iter().collect();
        let stuck = next_step(&l(1, &[1, 2, 3, 4]), &rs, &target, &dead, true, 9).expect("a bump");
        assert!(matches!(stuck, Step::Bump(_)));
    }

    /// A replaced reassignment's replicas leave the ISR at the bump; a leader among them hands
    /// over to an assigned in-sync replica, or keeps its place when there is none.
    #[test]
    fn replicas_no_longer_assigned_leave_the_isr() {
        let live: BTreeSet<BrokerId> = ids(&[1, 2, 3, 4, 5]).into_iter().collect();
        let rs = ids(&[5, 1, 2, 3]);
        let b = next_step(&l(1, &[1, 2, 4]), &rs, &ids(&[5, 2, 3]), &live, true, 9).expect("a bump");
        assert_eq!(b.leadership().isr, ids(&[1, 2]));
        let b = next_step(&l(4, &[1, 2, 4]), &rs, &ids(&[5, 2, 3]), &live, true, 9).expect("a bump");
        assert_eq!(
            (b.leadership().leader, b.leadership().isr.clone()),
            (Some(BrokerId(1)), ids(&[1, 2]))
        );
        let b = next_step(&l(4, &[4]), &rs, &ids(&[5, 2, 3]), &live, true, 9).expect("a bump");
        assert_eq!(
            (b.leadership().leader, b.leadership().isr.clone()),
            (Some(BrokerId(4)), ids(&[4]))
        );
        // Not reassigning any more (cancelled): only a change when the ISR holds such replicas.
        assert_eq!(drop_unassigned(&l(1, &[1, 2]), &rs, &live, 9), None);
        let d = drop_unassigned(&l(4, &[1, 4]), &rs, &live, 9).expect("a bump");
        assert_eq!(
            (d.leadership().leader, d.leadership().isr.clone()),
            (Some(BrokerId(1)), ids(&[1]))
        );
        assert_eq!(d.leadership().controller_epoch, 9);
    }
}
