//! BrokerChange (Kafka's `processBrokerChange`): `/brokers/ids` changed. Read the live brokers,
//! tell new, dead and bounced ones apart (a bounced broker has a new epoch: it failed and
//! started again), open and close channels, move their replicas in the replica state machine,
//! re-read the state znodes the failed brokers hosted, elect, and finally tell restarted brokers
//! everything. No I/O: each read is an effect whose result resumes the step.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::{announce, elect, failed, Effects, Input, Key, Pending, Read, ReadResult, ZkOp};
use crate::controller::model::RegisteredBroker;
use crate::controller::replica_changes;
use crate::controller::requests::{self, ControllerContext};
use crate::types::BrokerId;

/// Where a broker change is.
#[derive(Debug)]
pub enum Waiting {
    /// For `/brokers/ids`.
    LiveBrokers,
    /// For the state znodes the failed brokers hosted.
    Hosted { all: Vec<Key>, started: Vec<BrokerId> },
}

/// The brokers that came, went and bounced between what the context knows and `now`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BrokerDiff {
    pub new: Vec<BrokerId>,
    pub dead: Vec<BrokerId>,
    pub bounced: Vec<BrokerId>,
}

/// Compares the known live brokers with the registrations read.
pub fn diff(known: &BTreeMap<BrokerId, RegisteredBroker>, now: &BTreeMap<BrokerId, RegisteredBroker>) -> BrokerDiff {
    BrokerDiff {
        new: now.keys().filter(|id| !known.contains_key(id)).copied().collect(),
        dead: known.keys().filter(|id| !now.contains_key(id)).copied().collect(),
        bounced: now
            .iter()
            .filter(|(id, b)| known.get(id).is_some_and(|k| k.epoch != b.epoch))
            .map(|(id, _)| *id)
            .collect(),
    }
}

pub fn start(ctx: &mut ControllerContext, fx: &mut Effects) {
    ctx.pending = Pending::BrokerChange(Waiting::LiveBrokers);
    fx.zk = Some(ZkOp::Read(Read::LiveBrokers));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, now: Instant, fx: &mut Effects) {
    if failed(&input) {
        return;
    }
    match (waiting, input) {
        (Waiting::LiveBrokers, Input::Read(ReadResult::LiveBrokers(brokers))) => changed(ctx, brokers, now, fx),
        (Waiting::Hosted { all, started }, Input::Read(ReadResult::Leaderships(fresh))) => {
            elect::apply_refresh(ctx, fresh);
            elect::start(ctx, all.clone(), elect::After::BrokerChange { all, started }, now, fx);
        }
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a broker change"),
    }
}

/// Takes the registrations read into the context and starts what follows from the difference.
fn changed(
    ctx: &mut ControllerContext,
    now_live: BTreeMap<BrokerId, RegisteredBroker>,
    now: Instant,
    fx: &mut Effects,
) {
    let BrokerDiff { new, dead, bounced } = diff(&ctx.live_brokers, &now_live);
    if dead.is_empty() && bounced.is_empty() && new.is_empty() {
        return;
    }
    tracing::info!(?new, ?dead, ?bounced, "broker change");
    // A bounced broker fails and starts again, as in Kafka's processBrokerChange.
    let failed: Vec<BrokerId> = dead.iter().chain(&bounced).copied().collect();
    let started: Vec<BrokerId> = new.iter().chain(&bounced).copied().collect();
    fx.disconnect.extend(&failed);
    fx.connect.extend(started.iter().filter_map(|id| {
        let addr = now_live
            .get(id)
            .and_then(|b| requests::broker_address(b, &ctx.inter_broker_listener))?;
        Some((*id, addr))
    }));
    for id in &failed {
        ctx.shutting_down.remove(id);
        // A restarted broker reopens its log dirs; its replicas count as online again.
        ctx.offline_replicas.retain(|(_, _, b)| b != id);
    }
    fx.unwatch_brokers.extend(&dead);
    ctx.live_brokers = now_live;
    let lost = ctx.broker_replicas(&failed);
    ctx.replicas_went_offline(&lost);
    ctx.replicas_came_online(&started);
    ctx.mark_leaderless_offline();
    let all = ctx.all_partitions();
    fx.watch_brokers.extend(&new);
    // Kafka's OfflineReplica transition reads the state znodes of every replica the failed
    // brokers hosted: a leader may have taken one back into its ISR moments ago (say, during
    // a controlled shutdown) and announced it only to ZooKeeper so far.
    let hosted: BTreeSet<Key> = lost.iter().map(replica_changes::key_of).collect();
    if hosted.is_empty() {
        // Dead brokers leave the ISRs (and leadership); partitions without a leader are elected.
        elect::start(ctx, all.clone(), elect::After::BrokerChange { all, started }, now, fx);
    } else {
        ctx.pending = Pending::BrokerChange(Waiting::Hosted { all, started });
        fx.zk = Some(ZkOp::Read(Read::Leaderships(hosted.into_iter().collect())));
    }
}

/// Restarted brokers learn everything and get LeaderAndIsr for their replicas (not for topics
/// being deleted: those get StopReplica from deletion, and a LeaderAndIsr after it would bring
/// an already deleted log back).
pub fn finish(ctx: &mut ControllerContext, all: &[Key], started: &[BrokerId], fx: &mut Effects) {
    fx.send.extend(announce::update_metadata(ctx, all));
    for id in started {
        let theirs: Vec<Key> = all
            .iter()
            .filter(|(t, p)| ctx.replicas(t, *p).contains(id) && !ctx.is_queued_for_deletion(t))
            .cloned()
            .collect();
        fx.send.extend(announce::leader_and_isr_to(ctx, *id, &theirs, false));
    }
    super::reassignment::stop_strays(ctx, started, fx);
    super::reassignment::resume_for_brokers(ctx, started, fx);
}
