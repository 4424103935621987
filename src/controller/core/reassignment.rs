//! Partition reassignment (KIP-455, Kafka's `onPartitionReassignment`), driven by
//! AlterPartitionReassignments ([`alter`]), `/admin/reassign_partitions` ([`start_znode`]),
//! the state-znode watches of the partitions being reassigned ([`isr_changed`]) and failover
//! ([`resume_after_failover`]). The decisions are [`super::reassignment_plan`]'s; this is the
//! sequence of ZooKeeper steps around them:
//!
//! 1. **Start**: write RS = ORS ∪ TRS with `adding_replicas` / `removing_replicas` to each
//!    topic's znode (all topics at once), the new replicas become New, their state znodes are
//!    watched, and an API request is answered.
//! 2. **Check**: re-read the state znodes; a partition whose targets are all in the ISR
//!    completes, the others (when just started) get a leader-epoch bump. One fenced write.
//! 3. **Announce**: LeaderAndIsr to every replica of the new RS (the new replicas start
//!    fetching), StopReplica(delete) to the removed ones, UpdateMetadata to every broker.
//! 4. **Finish**: write RS = TRS (and no adding/removing) for the completed ones, then trim
//!    `/admin/reassign_partitions` (deleted once empty), then resume topic deletions the
//!    reassignment held back.
//!
//! A failed step ends the event; a conflicting state-znode write (a leader changed the ISR
//! meanwhile) is re-read and retried a few times. Every step is idempotent, so a controller
//! that fails over in between resumes from what the topic znodes say. No I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::reassignment_plan::{self, Planned, Step};
use super::{
    elect, failed, topic_deletion, AssignmentWrite, Decided, Effects, Input, Key, Pending, Read, ReadResult, Reply,
    Write, WriteResult, ZkOp,
};
use crate::controller::channel::ControlRequest;
use crate::controller::error::ControllerError;
use crate::controller::replica_changes::replica;
use crate::controller::replica_state::ReplicaState;
use crate::controller::requests::{self, ControllerContext};
use crate::types::BrokerId;
use crate::zk::models::{PartitionReassignment, ReassignPartitions, ZNodePayload};

/// Conflicting state-znode writes retried before the event gives up (the next ISR change or
/// failover picks the partition up again).
const ATTEMPTS: u8 = 3;

/// A partition being reassigned, as ListPartitionReassignments shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ongoing {
    pub replicas: Vec<BrokerId>,
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

/// What runs once a reassignment event is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    Done,
    /// The failover's last part: resume the deletions queued before this controller.
    Deletions,
}

/// Where a reassignment event is.
#[derive(Debug)]
pub enum Waiting {
    /// For `/admin/reassign_partitions`; `resume` also resumes every reassignment the topic
    /// znodes show (failover).
    ZNode { resume: bool, then: Then },
    /// For the topic znodes with the new replica sets.
    Starting(Started),
    /// For the state znodes of the partitions to check.
    States(Check),
    /// For the fenced write of their next leaderships.
    Leaderships { check: Check, steps: Vec<(Key, Step)> },
    /// For the topic znodes of the completed partitions.
    Finishing(Check),
    /// For `/admin/reassign_partitions`, to drop finished or replaced partitions from it.
    Trimming { then: Then },
    /// For the trimmed znode to be written.
    Trimmed { then: Then },
}

/// A start in progress.
#[derive(Debug)]
pub struct Started {
    planned: BTreeMap<Key, Planned>,
    /// The answer to give once written (API requests).
    answer: Option<Vec<(Key, Result<(), ControllerError>)>>,
    check: Check,
}

/// The partitions to check and what follows.
#[derive(Debug, Default)]
pub struct Check {
    keys: Vec<Key>,
    /// Just started or resumed: bump what is not complete.
    bump: bool,
    /// Replicas no longer assigned (a replaced or cancelled reassignment's): StopReplica(delete).
    dropped: BTreeMap<Key, Vec<BrokerId>>,
    /// Partitions to drop from `/admin/reassign_partitions` at the end.
    trim: BTreeSet<Key>,
    attempt: u8,
    then: Option<Then>,
}

impl Check {
    fn then(&self) -> Then {
        self.then.unwrap_or(Then::Done)
    }
}

/// AlterPartitionReassignments: each partition validated; the valid ones start (replacing any
/// reassignment in progress, or cancelling it when its target is `None`), and leave
/// `/admin/reassign_partitions` if they were there (the latest request wins, as in Kafka).
pub fn alter(ctx: &mut ControllerContext, requests: Vec<(Key, Option<Vec<BrokerId>>)>, fx: &mut Effects) {
    let mut answer = Vec::with_capacity(requests.len());
    let mut planned = BTreeMap::new();
    for (key, target) in requests {
        match reassignment_plan::validate(ctx, &key, target.as_deref()) {
            Ok(p) => {
                planned.insert(key.clone(), p);
                answer.push((key, Ok(())));
            }
            Err(e) => answer.push((key, Err(e))),
        }
    }
    let trim = planned
        .keys()
        .filter(|k| ctx.zk_reassignments.contains(*k))
        .cloned()
        .collect();
    let check = Check {
        trim,
        ..Check::default()
    };
    start(ctx, planned, Some(answer), check, fx);
}

/// `/admin/reassign_partitions` was created: read it.
pub fn start_znode(ctx: &mut ControllerContext, then: Then, fx: &mut Effects) {
    ctx.pending = Pending::Reassignment(Waiting::ZNode { resume: false, then });
    fx.zk = Some(ZkOp::Read(Read::ReassignPartitions));
}

/// Kafka's `initializePartitionReassignments` + `maybeResumeReassignments`: the znode's
/// requests join the ones the topic znodes show, and all are checked (bumped or completed),
/// then deletions resume.
pub fn resume_after_failover(ctx: &mut ControllerContext, fx: &mut Effects) {
    fx.watch_states.extend(ctx.reassigning_partitions());
    ctx.pending = Pending::Reassignment(Waiting::ZNode {
        resume: true,
        then: Then::Deletions,
    });
    fx.zk = Some(ZkOp::Read(Read::ReassignPartitions));
}

/// Brokers (re)started (Kafka's `onBrokerStartup` → `maybeResumeReassignments`): the
/// reassignments with a target on one of them are checked again, bumped when not complete, so
/// the broker learns the new replica set (and a replica it reported offline counts again).
pub fn resume_for_brokers(ctx: &mut ControllerContext, brokers: &[BrokerId], fx: &mut Effects) {
    let keys: Vec<Key> = ctx
        .reassigning_partitions()
        .into_iter()
        .filter(|(t, p)| {
            let removing = ctx.reassigning(t, *p).map(|r| r.removing.clone()).unwrap_or_default();
            ctx.replicas(t, *p)
                .iter()
                .any(|b| brokers.contains(b) && !removing.contains(b))
        })
        .collect();
    if keys.is_empty() || fx.zk.is_some() {
        return;
    }
    check(
        ctx,
        Check {
            keys,
            bump: true,
            ..Check::default()
        },
        fx,
    );
}

/// A state znode of a partition being reassigned changed: complete what is now in sync.
pub fn isr_changed(ctx: &mut ControllerContext, partitions: Vec<Key>, fx: &mut Effects) {
    let keys: Vec<Key> = partitions
        .into_iter()
        .filter(|(t, p)| ctx.reassigning(t, *p).is_some())
        .collect();
    if keys.is_empty() {
        return;
    }
    check(
        ctx,
        Check {
            keys,
            ..Check::default()
        },
        fx,
    );
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, _now: Instant, fx: &mut Effects) {
    if failed(&input) {
        let then = match waiting {
            Waiting::Leaderships { mut check, .. } => {
                // Most likely a leader's ISR write won the race: read again and retry.
                check.attempt += 1;
                if check.attempt < ATTEMPTS {
                    return self::check(ctx, check, fx);
                }
                check.then()
            }
            Waiting::ZNode { then, .. } | Waiting::Trimming { then } | Waiting::Trimmed { then } => then,
            Waiting::Starting(s) => s.check.then(),
            Waiting::States(c) | Waiting::Finishing(c) => c.then(),
        };
        // The reassignments wait for the next trigger; what the event was to do after them
        // (a failover's deletions) still runs.
        return finish(ctx, then, fx);
    }
    match (waiting, input) {
        (Waiting::ZNode { resume, then }, Input::Read(ReadResult::ReassignPartitions(data))) => {
            from_znode(ctx, data, resume, then, fx)
        }
        (Waiting::Starting(s), Input::Wrote(WriteResult::AssignmentWritten)) => started(ctx, s, fx),
        (Waiting::States(c), Input::Read(ReadResult::Leaderships(fresh))) => {
            elect::apply_refresh(ctx, fresh);
            decide(ctx, c, fx);
        }
        (Waiting::Leaderships { check, steps }, Input::Wrote(WriteResult::PartitionStates { versions })) => {
            written(ctx, check, steps, versions, fx)
        }
        (Waiting::Finishing(c), Input::Wrote(WriteResult::AssignmentWritten)) => end(ctx, c, fx),
        (Waiting::Trimming { then }, Input::Read(ReadResult::ReassignPartitions(data))) => trimmed(ctx, data, then, fx),
        (Waiting::Trimmed { then }, Input::Wrote(WriteResult::ReassignPartitionsWritten)) => finish(ctx, then, fx),
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a reassignment"),
    }
}

/// The partitions being reassigned among `partitions` (all when `None`).
pub fn list(ctx: &ControllerContext, partitions: Option<&[Key]>) -> Vec<(Key, Ongoing)> {
    let all = ctx.topics.iter().flat_map(|(t, info)| {
        info.reassigning.iter().map(move |(p, r)| {
            let key = (t.clone(), *p);
            let ongoing = Ongoing {
                replicas: info.assignment.get(p).cloned().unwrap_or_default(),
                adding: r.adding.clone(),
                removing: r.removing.clone(),
            };
            (key, ongoing)
        })
    });
    match partitions {
        None => all.collect(),
        Some(wanted) => all.filter(|(k, _)| wanted.contains(k)).collect(),
    }
}

/// The znode's requests, validated as API ones (a malformed znode is deleted, as nothing could
/// ever act on it); refused partitions are dropped from it at the end.
fn from_znode(ctx: &mut ControllerContext, data: Option<Vec<u8>>, resume: bool, then: Then, fx: &mut Effects) {
    let mut planned = BTreeMap::new();
    let mut trim = BTreeSet::new();
    let mut malformed = false;
    match data.as_deref().map(ReassignPartitions::decode) {
        None => {}
        Some(Err(e)) => {
            tracing::warn!(error = %e, "deleting a malformed /admin/reassign_partitions");
            malformed = true;
        }
        Some(Ok(request)) => {
            for PartitionReassignment {
                topic,
                partition,
                replicas,
                ..
            } in request.partitions
            {
                let key = (topic, partition);
                match reassignment_plan::validate(ctx, &key, Some(&replicas)) {
                    Ok(p) => {
                        ctx.zk_reassignments.insert(key.clone());
                        planned.insert(key, p);
                    }
                    Err(e) => {
                        tracing::warn!(topic = %key.0, partition = key.1, ?replicas, error = %e, "refusing a reassignment from /admin/reassign_partitions");
                        trim.insert(key);
                    }
                }
            }
        }
    }
    if malformed {
        ctx.pending = Pending::Reassignment(Waiting::Trimmed { then });
        fx.zk = Some(ZkOp::Write(Write::ReassignPartitions(None)));
        return;
    }
    let mut check = Check {
        trim,
        bump: true,
        then: Some(then),
        ..Check::default()
    };
    if resume {
        check.keys = ctx.reassigning_partitions();
    }
    start(ctx, planned, None, check, fx);
}

/// Step 1: writes the planned replica sets (only those that change), or goes straight to the
/// check when nothing does.
fn start(
    ctx: &mut ControllerContext,
    planned: BTreeMap<Key, Planned>,
    answer: Option<Vec<(Key, Result<(), ControllerError>)>>,
    mut check: Check,
    fx: &mut Effects,
) {
    // A plan that reassigns nothing (a cancel, or the replicas the partition has) is done once
    // written: it leaves the znode's list.
    for (key, plan) in &planned {
        if !plan.is_reassigning() && ctx.zk_reassignments.remove(key) {
            check.trim.insert(key.clone());
        }
    }
    let planned: BTreeMap<Key, Planned> = planned
        .into_iter()
        .filter(|((t, p), plan)| {
            let same_replicas = ctx.replicas(t, *p) == plan.replicas;
            let same_state = ctx.reassigning(t, *p).cloned().unwrap_or_default() == plan.reassigning;
            !(same_replicas && same_state)
        })
        .collect();
    let mut started = Started { planned, answer, check };
    if started.planned.is_empty() {
        fx.reply = started.answer.take().map(Reply::AlterPartitionReassignments);
        started.check.bump = true;
        return check_or_finish(ctx, started.check, fx);
    }
    let mut topics: BTreeMap<String, AssignmentWrite> = BTreeMap::new();
    for ((t, p), plan) in &started.planned {
        let Some(info) = ctx.topics.get(t) else { continue };
        let w = topics.entry(t.clone()).or_insert_with(|| AssignmentWrite {
            topic: t.clone(),
            assignment: info.assignment.clone(),
            reassigning: info.reassigning.clone(),
        });
        w.assignment.insert(*p, plan.replicas.clone());
        if plan.is_reassigning() {
            w.reassigning.insert(*p, plan.reassigning.clone());
        } else {
            w.reassigning.remove(p);
        }
    }
    fx.zk = Some(ZkOp::Write(Write::Assignments(topics.into_values().collect())));
    ctx.pending = Pending::Reassignment(Waiting::Starting(started));
}

/// The new replica sets are written: the context takes them, new replicas enter as New,
/// replicas no longer assigned are remembered for StopReplica, the answer goes out, and every
/// changed partition is checked.
fn started(ctx: &mut ControllerContext, mut s: Started, fx: &mut Effects) {
    for (key, plan) in &s.planned {
        let before = ctx.replicas(&key.0, key.1);
        let Some(info) = ctx.topics.get_mut(&key.0) else {
            continue;
        };
        info.assignment.insert(key.1, plan.replicas.clone());
        if plan.is_reassigning() {
            info.reassigning.insert(key.1, plan.reassigning.clone());
            fx.watch_states.push(key.clone());
        } else {
            info.reassigning.remove(&key.1);
            fx.unwatch_states.push(key.clone());
        }
        let added: Vec<_> = plan
            .replicas
            .iter()
            .filter(|b| !before.contains(b))
            .map(|b| replica(key, *b))
            .collect();
        ctx.change_replica_states(&added, ReplicaState::New);
        let (online, offline): (Vec<_>, Vec<_>) = added.into_iter().partition(|r| ctx.is_replica_online(r));
        ctx.change_replica_states(&online, ReplicaState::Online);
        ctx.change_replica_states(&offline, ReplicaState::Offline);
        let dropped: Vec<BrokerId> = before.into_iter().filter(|b| !plan.replicas.contains(b)).collect();
        if !dropped.is_empty() {
            s.check.dropped.insert(key.clone(), dropped);
        }
        tracing::info!(topic = %key.0, partition = key.1, replicas = ?plan.replicas, adding = ?plan.reassigning.adding, removing = ?plan.reassigning.removing, "partition reassignment started");
    }
    fx.reply = s.answer.take().map(Reply::AlterPartitionReassignments);
    s.check.bump = true;
    for key in s.planned.into_keys() {
        if !s.check.keys.contains(&key) {
            s.check.keys.push(key);
        }
    }
    check_or_finish(ctx, s.check, fx);
}

fn check_or_finish(ctx: &mut ControllerContext, c: Check, fx: &mut Effects) {
    if c.keys.is_empty() {
        end(ctx, c, fx);
    } else {
        check(ctx, c, fx);
    }
}

/// Step 2: re-read the state znodes of the partitions to check.
fn check(ctx: &mut ControllerContext, c: Check, fx: &mut Effects) {
    fx.zk = Some(ZkOp::Read(Read::Leaderships(c.keys.clone())));
    ctx.pending = Pending::Reassignment(Waiting::States(c));
}

/// Each partition's next step; one fenced write of them all.
fn decide(ctx: &mut ControllerContext, mut c: Check, fx: &mut Effects) {
    let live: BTreeSet<BrokerId> = ctx
        .live_brokers
        .keys()
        .copied()
        .filter(|b| !ctx.shutting_down.contains(b))
        .collect();
    let mut steps = Vec::new();
    for key in &c.keys {
        let Some(current) = ctx.leaderships.get(key) else {
            // No state yet: its dropped replicas still go.
            continue;
        };
        let replicas = ctx.replicas(&key.0, key.1);
        let live: BTreeSet<BrokerId> = live
            .iter()
            .copied()
            .filter(|b| !ctx.offline_replicas.contains(&(key.0.clone(), key.1, *b)))
            .collect();
        let step = match ctx.reassigning(&key.0, key.1) {
            Some(r) => {
                let target: Vec<BrokerId> = replicas.iter().copied().filter(|b| !r.removing.contains(b)).collect();
                reassignment_plan::next_step(current, &replicas, &target, &live, c.bump, ctx.epoch)
            }
            // Cancelled, or replaced by the replicas it has (reordered or not): the ones it added
            // leave the ISR, and a new epoch tells every replica the restored set (Kafka's
            // phase B for a reassignment that is complete at once).
            None => reassignment_plan::drop_unassigned(current, &replicas, &live, ctx.epoch)
                .or_else(|| c.bump.then(|| reassignment_plan::bump(current, ctx.epoch))),
        };
        if let Some(step) = step {
            steps.push((key.clone(), step));
        }
    }
    if steps.is_empty() {
        stop_dropped(ctx, std::mem::take(&mut c.dropped), fx);
        return end(ctx, c, fx);
    }
    let updates: Decided = steps.iter().map(|(k, s)| (k.clone(), s.leadership().clone())).collect();
    fx.zk = Some(ZkOp::Write(Write::PartitionStates {
        creates: Vec::new(),
        updates,
    }));
    ctx.pending = Pending::Reassignment(Waiting::Leaderships { check: c, steps });
}

/// Step 3: the leaderships are written. Completed partitions take their target as RS; every
/// stepped partition is announced; removed replicas are stopped and deleted.
fn written(ctx: &mut ControllerContext, mut c: Check, steps: Vec<(Key, Step)>, versions: Vec<i32>, fx: &mut Effects) {
    let mut announced = Vec::with_capacity(steps.len());
    let mut completed: BTreeMap<String, AssignmentWrite> = BTreeMap::new();
    for ((key, step), version) in steps.into_iter().zip(versions) {
        let mut l = step.leadership().clone();
        l.zk_version = version;
        let state = ctx.state_after(&key, &l);
        ctx.leaderships.insert(key.clone(), l);
        ctx.change_states(std::slice::from_ref(&key), state);
        if let Step::Complete(_) = step {
            let Some(info) = ctx.topics.get_mut(&key.0) else {
                continue;
            };
            let removing = info.reassigning.remove(&key.1).unwrap_or_default().removing;
            let target: Vec<BrokerId> = info
                .assignment
                .get(&key.1)
                .map(|rs| rs.iter().copied().filter(|b| !removing.contains(b)).collect())
                .unwrap_or_default();
            info.assignment.insert(key.1, target.clone());
            let w = completed.entry(key.0.clone()).or_insert_with(|| AssignmentWrite {
                topic: key.0.clone(),
                assignment: BTreeMap::new(),
                reassigning: BTreeMap::new(),
            });
            w.assignment = info.assignment.clone();
            w.reassigning = info.reassigning.clone();
            c.dropped.entry(key.clone()).or_default().extend(removing);
            fx.unwatch_states.push(key.clone());
            if ctx.zk_reassignments.remove(&key) {
                c.trim.insert(key.clone());
            }
            tracing::info!(topic = %key.0, partition = key.1, replicas = ?target, "partition reassignment completed");
        }
        announced.push(key);
    }
    fx.send.extend(super::announce::leader_and_isr(ctx, &announced, false));
    stop_dropped(ctx, std::mem::take(&mut c.dropped), fx);
    fx.send.extend(super::announce::update_metadata(ctx, &announced));
    if completed.keys().any(|t| ctx.is_queued_for_deletion(t)) {
        c.then = Some(Then::Deletions);
    }
    if completed.is_empty() {
        return end(ctx, c, fx);
    }
    fx.zk = Some(ZkOp::Write(Write::Assignments(completed.into_values().collect())));
    ctx.pending = Pending::Reassignment(Waiting::Finishing(c));
}

/// StopReplica(delete) to each live broker whose replica is no longer assigned (Kafka's
/// OfflineReplica → ReplicaDeletionStarted → … → NonExistentReplica); a broker that is down
/// gets it when it comes back ([`stop_strays`]).
fn stop_dropped(ctx: &mut ControllerContext, dropped: BTreeMap<Key, Vec<BrokerId>>, fx: &mut Effects) {
    let mut per_broker: BTreeMap<BrokerId, Vec<Key>> = BTreeMap::new();
    for (key, brokers) in dropped {
        for b in brokers {
            if ctx.replicas(&key.0, key.1).contains(&b) {
                continue;
            }
            if in_sync(ctx, &key, b) {
                // Still in the ISR (it could not leave: nothing assigned is in sync): its copy
                // may be the data's last, so it waits (deleted once it comes back out of sync).
                ctx.stray_replicas.insert((key.clone(), b));
                continue;
            }
            let r = replica(&key, b);
            for to in [
                ReplicaState::Offline,
                ReplicaState::DeletionStarted,
                ReplicaState::DeletionSuccessful,
                ReplicaState::NonExistent,
            ] {
                ctx.replica_states.initialize(r.clone(), to);
            }
            if ctx.is_live(b) {
                per_broker.entry(b).or_default().push(key.clone());
            } else {
                ctx.stray_replicas.insert((key.clone(), b));
            }
        }
    }
    for (broker, keys) in per_broker {
        if let Some(b) = ctx.live_brokers.get(&broker) {
            let request = requests::stop_replica(ctx, &keys, b.epoch, true);
            fx.send.push((broker, ControlRequest::StopReplica(request)));
        }
    }
}

fn in_sync(ctx: &ControllerContext, key: &Key, broker: BrokerId) -> bool {
    ctx.leaderships.get(key).is_some_and(|l| l.isr.contains(&broker))
}

/// StopReplica(delete) for the replicas reassigned away while `brokers` were down (they just
/// came back): BrokerChange's last part.
pub fn stop_strays(ctx: &mut ControllerContext, brokers: &[BrokerId], fx: &mut Effects) {
    for broker in brokers {
        let keys: Vec<Key> = ctx
            .stray_replicas
            .iter()
            .filter(|(k, b)| b == broker && !ctx.replicas(&k.0, k.1).contains(b) && !in_sync(ctx, k, *b))
            .map(|(k, _)| k.clone())
            .collect();
        let kept: BTreeSet<(Key, BrokerId)> = std::mem::take(&mut ctx.stray_replicas)
            .into_iter()
            .filter(|(k, b)| b != broker || (in_sync(ctx, k, *b) && !ctx.replicas(&k.0, k.1).contains(b)))
            .collect();
        ctx.stray_replicas = kept;
        if keys.is_empty() {
            continue;
        }
        if let Some(b) = ctx.live_brokers.get(broker) {
            tracing::info!(%broker, partitions = keys.len(), "deleting replicas reassigned away while the broker was down");
            let request = requests::stop_replica(ctx, &keys, b.epoch, true);
            fx.send.push((*broker, ControlRequest::StopReplica(request)));
        }
    }
}

/// Drops the partitions of deleted topics from `/admin/reassign_partitions` (the end of a
/// topic deletion).
pub fn trim_deleted(ctx: &mut ControllerContext, fx: &mut Effects) {
    let gone: BTreeSet<Key> = ctx
        .zk_reassignments
        .iter()
        .filter(|(t, _)| !ctx.topics.contains_key(t))
        .cloned()
        .collect();
    trim(ctx, gone, Then::Done, fx)
}

/// The check is over: trim the znode, then what follows.
fn end(ctx: &mut ControllerContext, c: Check, fx: &mut Effects) {
    let then = c.then();
    trim(ctx, c.trim, then, fx)
}

/// Step 4: drop `keys` from `/admin/reassign_partitions` (read it first), then `then`.
fn trim(ctx: &mut ControllerContext, keys: BTreeSet<Key>, then: Then, fx: &mut Effects) {
    if keys.is_empty() {
        return finish(ctx, then, fx);
    }
    for k in &keys {
        ctx.zk_reassignments.remove(k);
    }
    ctx.pending = Pending::Reassignment(Waiting::Trimming { then });
    fx.zk = Some(ZkOp::Read(Read::ReassignPartitions));
}

/// Writes the znode back without the partitions no longer reassigned from it (all those the
/// context does not list), or deletes it once none is left.
fn trimmed(ctx: &mut ControllerContext, data: Option<Vec<u8>>, then: Then, fx: &mut Effects) {
    let Some(Ok(mut request)) = data.as_deref().map(ReassignPartitions::decode) else {
        return finish(ctx, then, fx);
    };
    request
        .partitions
        .retain(|p| ctx.zk_reassignments.contains(&(p.topic.clone(), p.partition)));
    let data = (!request.partitions.is_empty()).then(|| request.encode());
    if data.is_none() {
        tracing::info!("no more partitions to reassign: deleting /admin/reassign_partitions");
    }
    ctx.pending = Pending::Reassignment(Waiting::Trimmed { then });
    fx.zk = Some(ZkOp::Write(Write::ReassignPartitions(data)));
}

fn finish(ctx: &mut ControllerContext, then: Then, fx: &mut Effects) {
    match then {
        Then::Done => {}
        Then::Deletions => topic_deletion::start(ctx, true, fx),
    }
}
