//! ControlledShutdown (Kafka's `doControlledShutdown`): a broker asks to stop. Refuse an
//! unknown broker or a stale broker epoch; mark it shutting down (it leads nothing new);
//! re-read the state znodes of the partitions it leads or follows in sync; move the leaderships
//! of replicated partitions it leads to another live ISR member not shutting down
//! (ControlledShutdownPartitionLeaderElectionStrategy, the ISR loses the shutting-down
//! brokers) and take it out of the ISRs it follows in (OfflineReplica), in one fenced write;
//! then send it StopReplica (no delete) for the partitions it follows and answer with the
//! replicated partitions it still leads. Partitions of topics being deleted are left alone, as
//! in Kafka. No I/O: the re-read and the write are effects.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{elect, Effects, Input, Key, Pending, Read, ReadResult, Reply, ZkOp};
use crate::controller::channel::ControlRequest;
use crate::controller::decisions;
use crate::controller::error::ControllerError;
use crate::controller::replica_changes;
use crate::controller::replica_state::{PartitionAndReplica, ReplicaState};
use crate::controller::requests::{self, ControllerContext};
use crate::types::BrokerId;

/// Where a controlled shutdown is.
#[derive(Debug)]
pub enum Waiting {
    /// For the state znodes of the partitions the broker leads or follows in sync.
    Refreshing { broker: BrokerId, since: Instant },
}

/// What is left once the leaderships are written.
#[derive(Debug)]
pub struct Finish {
    broker: BrokerId,
    /// The replicas it follows (decided before leaderships moved).
    followed: Vec<PartitionAndReplica>,
}

/// Whether the controller takes a controlled shutdown from `broker` at `broker_epoch` (-1:
/// unknown, as from a broker before KIP-380).
pub fn admit(ctx: &ControllerContext, broker: BrokerId, broker_epoch: i64) -> Result<(), ControllerError> {
    let registered = ctx
        .live_brokers
        .get(&broker)
        .ok_or(ControllerError::BrokerNotAvailable)?;
    if broker_epoch != -1 && broker_epoch < registered.epoch {
        return Err(ControllerError::StaleBrokerEpoch);
    }
    Ok(())
}

pub fn start(ctx: &mut ControllerContext, broker: BrokerId, broker_epoch: i64, now: Instant, fx: &mut Effects) {
    if let Err(e) = admit(ctx, broker, broker_epoch) {
        tracing::info!(%broker, broker_epoch, error = %e, "controlled shutdown refused");
        fx.reply = Some(Reply::ControlledShutdown(Err(e)));
        return;
    }
    ctx.shutting_down.insert(broker);
    // Partitions it leads or follows in sync, re-read before deciding (see `refresh`).
    let involved: Vec<Key> = ctx
        .leaderships
        .iter()
        .filter(|(_, l)| l.leader == Some(broker) || l.isr.contains(&broker))
        .map(|(k, _)| k.clone())
        .collect();
    if involved.is_empty() {
        decide(ctx, broker, now, fx);
        return;
    }
    ctx.pending = Pending::ControlledShutdown(Waiting::Refreshing { broker, since: now });
    fx.zk = Some(ZkOp::Read(Read::Leaderships(involved)));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, _now: Instant, fx: &mut Effects) {
    match (waiting, input) {
        (Waiting::Refreshing { broker, since }, Input::Read(ReadResult::Leaderships(fresh))) => {
            elect::apply_refresh(ctx, fresh);
            decide(ctx, broker, since, fx);
        }
        // No answer: the shell answers NOT_CONTROLLER, and the broker retries.
        (_, Input::Failed) => {}
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a controlled shutdown"),
    }
}

/// The new leaderships of the replicated partitions on `broker` (not of topics being deleted).
pub fn moves(ctx: &ControllerContext, broker: BrokerId) -> super::Decided {
    let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
    let mut updates = Vec::new();
    for key in ctx.all_partitions() {
        let assignment = ctx.replicas(&key.0, key.1);
        if !assignment.contains(&broker) || ctx.is_queued_for_deletion(&key.0) {
            continue;
        }
        let Some(current) = ctx.leaderships.get(&key) else {
            continue;
        };
        let next = decisions::controlled_shutdown(&assignment, current, &live, &ctx.shutting_down, broker, ctx.epoch);
        if let Some(next) = next {
            updates.push((key, next));
        }
    }
    updates
}

fn decide(ctx: &mut ControllerContext, broker: BrokerId, since: Instant, fx: &mut Effects) {
    // Decided before leaderships move: the partitions it follows, not the ones it hands over.
    let followed = ctx.followed_by(broker);
    let updates = moves(ctx, broker);
    tracing::info!(%broker, moved = updates.len(), "controlled shutdown");
    let after = elect::After::ControlledShutdown(Finish { broker, followed });
    elect::write(ctx, elect::Election::decided(since, after), Vec::new(), updates, fx);
}

/// The replicated partitions `broker` leads (not of topics being deleted).
pub fn still_led(ctx: &ControllerContext, broker: BrokerId) -> Vec<Key> {
    ctx.leaderships
        .iter()
        .filter(|((t, p), l)| {
            l.leader == Some(broker) && ctx.replicas(t, *p).len() > 1 && !ctx.is_queued_for_deletion(t)
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// After the write: its followed replicas are Offline (Kafka's OfflineReplica step, which also
/// sends them StopReplica without deleting), and the answer.
pub fn finish(ctx: &mut ControllerContext, f: Finish, fx: &mut Effects) {
    ctx.change_replica_states(&f.followed, ReplicaState::Offline);
    let keys: Vec<Key> = f.followed.iter().map(replica_changes::key_of).collect();
    if let Some(b) = ctx.live_brokers.get(&f.broker).filter(|_| !keys.is_empty()) {
        let request = requests::stop_replica(ctx, &keys, b.epoch, false);
        fx.send.push((f.broker, ControlRequest::StopReplica(request)));
    }
    let remaining = still_led(ctx, f.broker);
    tracing::info!(broker = %f.broker, remaining = remaining.len(), "controlled shutdown answered");
    fx.reply = Some(Reply::ControlledShutdown(Ok(remaining)));
}
