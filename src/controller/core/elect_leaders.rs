//! Replica leader elections asked for by an operator (Kafka's `processReplicaLeaderElection`):
//! ElectLeaders (KIP-460, PREFERRED or UNCLEAN), the legacy `/admin/preferred_replica_election`
//! znode, and the auto leader rebalance ([`super::timers`] decides which partitions). Re-read the
//! partitions' state znodes, decide each with the preferred or the unclean strategy, write the
//! elected ones fenced, then answer per partition as Kafka does: ELECTION_NOT_NEEDED when the
//! wanted leader already leads, PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE
//! when no replica can take it, TOPIC_BEING_DELETED / UNKNOWN_TOPIC_OR_PARTITION. The znode is
//! deleted (fenced) once its elections are done. No I/O.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{elect, Decided, Effects, Input, Key, Pending, Read, ReadResult, Reply, Write, WriteResult, ZkOp};
use crate::controller::decisions;
use crate::controller::error::ControllerError;
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;
use crate::zk::models::{PreferredReplicaElection, ZNodePayload};

/// Per-partition outcomes (`Ok` = elected).
pub type Outcome = Vec<(Key, Result<(), ControllerError>)>;

/// Who asked, which decides what happens once the elections are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// ElectLeaders: the outcome is the answer.
    Admin,
    /// `/admin/preferred_replica_election`: delete it afterwards.
    ZNode,
    /// The auto leader rebalance: only logged.
    Auto,
}

/// An election request: the strategy and who asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct How {
    pub unclean: bool,
    pub trigger: Trigger,
}

impl How {
    pub fn admin(unclean: bool) -> How {
        How {
            unclean,
            trigger: Trigger::Admin,
        }
    }

    pub fn preferred(trigger: Trigger) -> How {
        How {
            unclean: false,
            trigger,
        }
    }
}

/// Where an operator's election is.
#[derive(Debug)]
pub enum Waiting {
    /// For `/admin/preferred_replica_election`.
    ReadingZNode,
    /// For the state znodes of the partitions asked for.
    Refreshing {
        partitions: Vec<Key>,
        how: How,
        since: Instant,
    },
    /// For the znode's deletion.
    DeletingZNode,
}

/// What is left once the elections are written.
#[derive(Debug)]
pub struct Finish {
    outcome: Outcome,
    trigger: Trigger,
}

/// Elects `partitions` as `how` says.
pub fn start(ctx: &mut ControllerContext, partitions: Vec<Key>, how: How, now: Instant, fx: &mut Effects) {
    let known: Vec<Key> = partitions
        .iter()
        .filter(|(t, p)| ctx.topics.get(t).is_some_and(|i| i.assignment.contains_key(p)))
        .cloned()
        .collect();
    if known.is_empty() {
        decide_and_write(ctx, &partitions, how, now, fx);
        return;
    }
    ctx.pending = Pending::ElectLeaders(Waiting::Refreshing {
        partitions,
        how,
        since: now,
    });
    fx.zk = Some(ZkOp::Read(Read::Leaderships(known)));
}

/// `/admin/preferred_replica_election` was written: read it first.
pub fn start_znode(ctx: &mut ControllerContext, fx: &mut Effects) {
    ctx.pending = Pending::ElectLeaders(Waiting::ReadingZNode);
    fx.zk = Some(ZkOp::Read(Read::PreferredReplicaElection));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, now: Instant, fx: &mut Effects) {
    match (waiting, input) {
        (Waiting::ReadingZNode, Input::Read(ReadResult::PreferredReplicaElection(None))) => {}
        (Waiting::ReadingZNode, Input::Read(ReadResult::PreferredReplicaElection(Some(data)))) => {
            let partitions = znode_partitions(&data);
            start(ctx, partitions, How::preferred(Trigger::ZNode), now, fx);
        }
        (Waiting::Refreshing { partitions, how, since }, Input::Read(ReadResult::Leaderships(fresh))) => {
            elect::apply_refresh(ctx, fresh);
            decide_and_write(ctx, &partitions, how, since, fx);
        }
        (Waiting::DeletingZNode, Input::Wrote(WriteResult::PreferredReplicaElectionDeleted)) | (_, Input::Failed) => {}
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a leader election"),
    }
}

/// The partitions a `/admin/preferred_replica_election` names; none when it is malformed.
pub fn znode_partitions(data: &[u8]) -> Vec<Key> {
    match PreferredReplicaElection::decode(data) {
        Ok(p) => p.partitions.into_iter().map(|p| (p.topic, p.partition)).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "ignoring a malformed /admin/preferred_replica_election");
            Vec::new()
        }
    }
}

/// Each partition's outcome and the new leaderships of those elected. A replica counts as
/// online as in Kafka's `isReplicaOnline`: its broker is live, not shutting down, and its log
/// dir has not failed.
pub fn decide(ctx: &ControllerContext, partitions: &[Key], unclean: bool) -> (Outcome, Decided) {
    let mut outcome = Vec::with_capacity(partitions.len());
    let mut updates = Vec::new();
    for key in partitions {
        let Some(current) = ctx.leaderships.get(key) else {
            outcome.push((key.clone(), Err(ControllerError::UnknownTopicOrPartition)));
            continue;
        };
        if ctx.is_queued_for_deletion(&key.0) {
            outcome.push((key.clone(), Err(ControllerError::TopicBeingDeleted)));
            continue;
        }
        let online: BTreeSet<BrokerId> = ctx
            .live_brokers
            .keys()
            .copied()
            .filter(|b| !ctx.shutting_down.contains(b) && !ctx.offline_replicas.contains(&(key.0.clone(), key.1, *b)))
            .collect();
        let assignment = ctx.replicas(&key.0, key.1);
        let decided = if unclean {
            decisions::unclean(&assignment, current, &online, ctx.epoch)
        } else {
            decisions::preferred(&assignment, current, &online, ctx.epoch)
        };
        match decided {
            Ok(next) => {
                updates.push((key.clone(), next));
                outcome.push((key.clone(), Ok(())));
            }
            Err(e) => outcome.push((key.clone(), Err(e))),
        }
    }
    (outcome, updates)
}

fn decide_and_write(ctx: &mut ControllerContext, partitions: &[Key], how: How, since: Instant, fx: &mut Effects) {
    let (outcome, updates) = decide(ctx, partitions, how.unclean);
    let after = elect::After::ElectLeaders(Finish {
        outcome,
        trigger: how.trigger,
    });
    elect::write(ctx, elect::Election::decided(since, after), Vec::new(), updates, fx);
}

/// After the write: the answer, or the znode's deletion, or a log line.
pub fn finish(ctx: &mut ControllerContext, f: Finish, fx: &mut Effects) {
    let elected = f.outcome.iter().filter(|(_, r)| r.is_ok()).count();
    match f.trigger {
        Trigger::Admin => fx.reply = Some(Reply::ElectLeaders(f.outcome)),
        Trigger::ZNode => {
            tracing::info!(outcome = ?f.outcome, "preferred replica election from ZooKeeper");
            ctx.pending = Pending::ElectLeaders(Waiting::DeletingZNode);
            fx.zk = Some(ZkOp::Write(Write::DeletePreferredReplicaElection));
        }
        Trigger::Auto => tracing::info!(moved = elected, "auto leader rebalance"),
    }
}
