//! The election every event family ends in (Kafka's `doElectLeaderForPartitions` and
//! `onlinePartitionStateChange`): decide on the cache, re-read the state znodes of the
//! partitions that need a change (leaders rewrite ISRs behind the controller's back), read the
//! live `unclean.leader.election.enable` where only an unclean leader is left, decide again, let
//! the partition state machine vet each decision, write fenced, record the written versions and
//! announce them (LeaderAndIsr, UpdateMetadata). Each ZooKeeper step is an effect; the result
//! resumes the [`Election`]. No I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::{
    announce, broker_change, controlled_shutdown, elect_leaders, Decided, Effects, Input, Key, Metric, Pending, Read,
    ReadResult, Write,
};
use super::{WriteResult, ZkOp};
use crate::controller::decisions;
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;

/// An election in progress.
#[derive(Debug)]
pub struct Election {
    partitions: Vec<Key>,
    /// When the step began deciding (the election timer's start).
    started: Instant,
    stage: Stage,
    after: After,
}

#[derive(Debug)]
enum Stage {
    /// Waiting for the state znodes of the partitions the cache says need a change.
    Refreshing,
    /// Waiting for the unclean-election configs of topics with no live ISR member.
    ReadingConfigs,
    /// Waiting for the fenced write of these decisions.
    Writing { creates: Decided, updates: Decided },
}

/// What the event that elected does once the election is written and announced.
#[derive(Debug)]
pub enum After {
    Done,
    /// BrokerChange's last part: restarted brokers learn everything.
    BrokerChange {
        all: Vec<Key>,
        started: Vec<BrokerId>,
    },
    /// onNewPartitionCreation's last part: the new replicas start.
    NewPartitions(Vec<Key>),
    /// The failover's last part: deletions resume.
    Failover,
    /// ControlledShutdown's last part: its followed replicas go Offline, StopReplica, the answer.
    ControlledShutdown(controlled_shutdown::Finish),
    /// ElectLeaders' last part: the answer (or the znode's deletion).
    ElectLeaders(elect_leaders::Finish),
    /// UpdateMetadata for these partitions to every live broker (offline replicas).
    Announce(Vec<Key>),
}

impl Election {
    /// An election whose decisions are already made (written by [`write`]).
    pub fn decided(now: Instant, after: After) -> Election {
        Election {
            partitions: Vec::new(),
            started: now,
            stage: Stage::Refreshing,
            after,
        }
    }
}

/// Starts electing what needs a change among `partitions`, then runs `after`.
pub fn start(ctx: &mut ControllerContext, partitions: Vec<Key>, after: After, now: Instant, fx: &mut Effects) {
    let (creates, updates) = decide(ctx, &partitions, &BTreeMap::new());
    let first: Vec<Key> = creates.into_iter().chain(updates).map(|(k, _)| k).collect();
    let election = Election {
        partitions,
        started: now,
        stage: Stage::Refreshing,
        after,
    };
    if first.is_empty() {
        refreshed(ctx, election, fx);
    } else {
        ctx.pending = Pending::Elect(election);
        fx.zk = Some(ZkOp::Read(Read::Leaderships(first)));
    }
}

/// Resumes `election` with the result of its last ZooKeeper operation.
pub fn resume(ctx: &mut ControllerContext, mut election: Election, input: Input, now: Instant, fx: &mut Effects) {
    let stage = std::mem::replace(&mut election.stage, Stage::Refreshing);
    match (stage, input) {
        (Stage::Refreshing, Input::Read(ReadResult::Leaderships(fresh))) => {
            apply_refresh(ctx, fresh);
            refreshed(ctx, election, fx);
        }
        (
            Stage::ReadingConfigs,
            Input::Read(ReadResult::UncleanConfigs {
                broker_default,
                overrides,
            }),
        ) => {
            let overrides = merge_unclean(ctx, &election.partitions, broker_default, overrides);
            let (creates, updates) = decide(ctx, &election.partitions, &overrides);
            write(ctx, election, creates, updates, fx);
        }
        (Stage::Writing { creates, updates }, Input::Wrote(WriteResult::PartitionStates { versions })) => {
            written(ctx, &election, creates, updates, versions, now, fx);
            finish(ctx, election.after, fx);
        }
        (_, Input::Failed) => {}
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during an election"),
    }
}

/// Replaces cached leaderships with the state znodes read where those are newer; returns how
/// many were (see `refresh`).
pub fn apply_refresh(
    ctx: &mut ControllerContext,
    fresh: BTreeMap<Key, crate::controller::model::LeaderAndIsr>,
) -> usize {
    let mut newer = 0;
    for (key, stored) in fresh {
        let stale = ctx
            .leaderships
            .get(&key)
            .is_none_or(|cached| cached.zk_version < stored.zk_version);
        if stale {
            ctx.leaderships.insert(key, stored);
            newer += 1;
        }
    }
    if newer > 0 {
        tracing::info!(
            partitions = newer,
            "leaderships refreshed from ZooKeeper before deciding"
        );
    }
    newer
}

/// After the re-read: ask for unclean-election configs where they matter, else decide.
fn refreshed(ctx: &mut ControllerContext, election: Election, fx: &mut Effects) {
    let stuck = stuck_topics(ctx, &election.partitions);
    if stuck.is_empty() {
        let (creates, updates) = decide(ctx, &election.partitions, &BTreeMap::new());
        write(ctx, election, creates, updates, fx);
        return;
    }
    fx.zk = Some(ZkOp::Read(Read::UncleanConfigs {
        topics: stuck,
        controller: ctx.controller,
    }));
    ctx.pending = Pending::Elect(Election {
        stage: Stage::ReadingConfigs,
        ..election
    });
}

/// Topics of `partitions` whose next leader could only be unclean: the leader is gone and no
/// ISR member is online (a broker shutting down still leads what it leads, but takes nothing).
fn stuck_topics(ctx: &ControllerContext, partitions: &[Key]) -> BTreeSet<String> {
    let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
    let online: BTreeSet<BrokerId> = live.difference(&ctx.shutting_down).copied().collect();
    partitions
        .iter()
        .filter(|k| {
            ctx.leaderships.get(*k).is_some_and(|l| {
                !l.leader.is_some_and(|b| live.contains(&b)) && decisions::needs_unclean_choice(l, &online)
            })
        })
        .map(|(t, _)| t.clone())
        .collect()
}

/// The topic override wins; else the live broker-level value; else (absent) the static one.
fn merge_unclean(
    ctx: &ControllerContext,
    partitions: &[Key],
    broker_default: Option<bool>,
    mut overrides: BTreeMap<String, bool>,
) -> BTreeMap<String, bool> {
    if let Some(v) = broker_default {
        for topic in stuck_topics(ctx, partitions) {
            overrides.entry(topic).or_insert(v);
        }
    }
    overrides
}

/// New leaderships for `partitions` that need one (new, leaderless, or with a dead member in
/// the ISR): (state znodes to create, state znodes to update). As in Kafka's
/// `isReplicaOnline`, a broker in controlled shutdown is not online for an election: it keeps
/// what it leads and its ISR places while its leader lives, but is never elected, and leaves
/// the ISR of a partition that elects.
pub fn decide(
    ctx: &ControllerContext,
    partitions: &[Key],
    unclean_overrides: &BTreeMap<String, bool>,
) -> (Decided, Decided) {
    let live: BTreeSet<BrokerId> = ctx.live_brokers.keys().copied().collect();
    let mut creates = Vec::new();
    let mut updates = Vec::new();
    // A topic being deleted keeps its leaders until it is gone (Kafka skips it too): a
    // LeaderAndIsr after its StopReplica(delete) would bring a deleted log back.
    for key in partitions.iter().filter(|k| !ctx.is_queued_for_deletion(&k.0)) {
        let assignment = ctx.replicas(&key.0, key.1);
        // A replica in a failed log dir cannot lead or stay in sync.
        let live: BTreeSet<BrokerId> = live
            .iter()
            .copied()
            .filter(|b| !ctx.offline_replicas.contains(&(key.0.clone(), key.1, *b)))
            .collect();
        let online: BTreeSet<BrokerId> = live.difference(&ctx.shutting_down).copied().collect();
        match ctx.leaderships.get(key) {
            None => {
                if let Some(l) = decisions::new_partition(&assignment, &online, ctx.epoch) {
                    creates.push((key.clone(), l));
                }
            }
            Some(current) => {
                let unclean = unclean_overrides
                    .get(&key.0)
                    .copied()
                    .unwrap_or(ctx.unclean_leader_election);
                let candidates = if current.leader.is_some_and(|l| live.contains(&l)) {
                    &live
                } else {
                    &online
                };
                if let Some(l) = decisions::existing_partition(&assignment, current, candidates, unclean, ctx.epoch) {
                    updates.push((key.clone(), l));
                }
            }
        }
    }
    (creates, updates)
}

/// Vets decisions with the partition state machine and asks for the fenced write of the legal
/// ones; with none, the election is over.
pub fn write(ctx: &mut ControllerContext, election: Election, creates: Decided, updates: Decided, fx: &mut Effects) {
    let legal = |(key, l): &(Key, crate::controller::model::LeaderAndIsr)| ctx.may_change(key, ctx.state_after(key, l));
    let creates: Decided = creates.into_iter().filter(legal).collect();
    let updates: Decided = updates.into_iter().filter(legal).collect();
    if creates.is_empty() && updates.is_empty() {
        finish(ctx, election.after, fx);
        return;
    }
    fx.zk = Some(ZkOp::Write(Write::PartitionStates {
        creates: creates.clone(),
        updates: updates.clone(),
    }));
    ctx.pending = Pending::Elect(Election {
        stage: Stage::Writing { creates, updates },
        ..election
    });
}

/// Records written leaderships (with the zkVersions the updates got), moves their partitions'
/// states, counts elections and announces them.
fn written(
    ctx: &mut ControllerContext,
    election: &Election,
    creates: Decided,
    updates: Decided,
    versions: Vec<i32>,
    now: Instant,
    fx: &mut Effects,
) {
    let is_new = !creates.is_empty();
    let mut written = creates;
    for ((key, mut l), v) in updates.into_iter().zip(versions) {
        l.zk_version = v;
        written.push((key, l));
    }
    let mut changed = Vec::with_capacity(written.len());
    let (mut elected, mut unclean) = (0, 0);
    for (key, l) in written {
        if l.leader.is_none() {
            fx.metrics.push(Metric::OfflinePartition);
        }
        match decisions::leader_change(ctx.leaderships.get(&key), &l) {
            decisions::LeaderChange::NotElected => {}
            decisions::LeaderChange::Clean => elected += 1,
            decisions::LeaderChange::Unclean => {
                tracing::warn!(topic = %key.0, partition = key.1, leader = ?l.leader, "unclean leader election");
                elected += 1;
                unclean += 1;
            }
        }
        let state = ctx.state_after(&key, &l);
        ctx.leaderships.insert(key.clone(), l);
        ctx.change_states(std::slice::from_ref(&key), state);
        changed.push(key);
    }
    if elected > 0 {
        let elapsed = now.saturating_duration_since(election.started);
        fx.metrics.push(Metric::LeaderElection { elapsed, unclean });
    }
    tracing::info!(partitions = changed.len(), elected, "leaders and ISRs written");
    fx.send.extend(announce::leader_and_isr(ctx, &changed, is_new));
    fx.send.extend(announce::update_metadata(ctx, &changed));
}

fn finish(ctx: &mut ControllerContext, after: After, fx: &mut Effects) {
    match after {
        After::Done => {}
        After::BrokerChange { all, started } => broker_change::finish(ctx, &all, &started, fx),
        After::NewPartitions(partitions) => super::topic_change::finish(ctx, &partitions),
        After::Failover => super::failover::finish(ctx, fx),
        After::ControlledShutdown(f) => controlled_shutdown::finish(ctx, f, fx),
        After::ElectLeaders(f) => elect_leaders::finish(ctx, f, fx),
        After::Announce(partitions) => fx.send.extend(announce::update_metadata(ctx, &partitions)),
    }
}
