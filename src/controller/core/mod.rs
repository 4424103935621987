//! The controller's pure core (the sans-IO shape of raft-rs and quinn-proto):
//! [`step`]`(&mut ControllerContext, Input, now) -> Effects`. No `async`, no clock, no I/O.
//!
//! One pattern everywhere: **a decision that needs ZooKeeper data asks for it as an effect**.
//! [`Effects::zk`] names at most one ZooKeeper operation (a read, or a write the shell fences
//! with the controller epoch); the shell performs it and feeds the result back as
//! [`Input::Read`] / [`Input::Wrote`] (or [`Input::Failed`]), and the core resumes from the
//! continuation it left in [`ControllerContext::pending`]. A step with no `zk` effect has
//! finished its event: the context is idle again. Every other effect (requests per broker,
//! connections, watches, metrics) is carried out by the shell before the next ZooKeeper
//! operation, in the order [`Effects`] lists its fields.
//!
//! Event families moved here so far, one file each: [`broker_change`] (BrokerChange),
//! [`isr_change`] (IsrChangeNotification), [`topic_change`] (TopicChange and Kafka's
//! onNewPartitionCreation), [`partition_modifications`] (PartitionModifications),
//! [`topic_deletion`] (TopicDeletion and StopReplica answers), [`failover`]
//! (onControllerFailover after stale notifications are gone), [`controlled_shutdown`]
//! (ControlledShutdown), [`elect_leaders`] (ElectLeaders, `/admin/preferred_replica_election`,
//! auto leader rebalance), [`log_dir_event`] (LogDirEventNotification and the replicas brokers
//! answer KAFKA_STORAGE_ERROR for), [`create_partitions`] (CreatePartitions), [`reassignment`]
//! (AlterPartitionReassignments, `/admin/reassign_partitions`, their completion; its decisions
//! in [`reassignment_plan`]), [`timers`] (what fires on time), and [`elect`], the election every family ends in
//! (decide on the cache, re-read, read unclean-election configs where only an unclean leader
//! is left, decide again, write fenced, record, announce). The families still in the async
//! shell enter the core through [`Event::Elect`] and [`Event::WriteDecided`]. [`announce`]
//! builds the requests. The shell is `super::shell`.
//!
//! The answer to an admin request is an effect too ([`Effects::reply`]): the shell hands it to
//! whoever asked (no answer at all means the event failed: NOT_CONTROLLER). Time is an input:
//! [`Effects::timers`] asks the shell to fire [`Input::Timer`] at an instant, and the core reads
//! no clock but the `now` it is given.

pub mod announce;
pub mod broker_change;
pub mod controlled_shutdown;
pub mod create_partitions;
#[cfg(test)]
mod create_partitions_tests;
pub mod elect;
pub mod elect_leaders;
pub mod failover;
pub mod isr_change;
pub mod log_dir_event;
pub mod partition_modifications;
pub mod reassignment;
pub mod reassignment_plan;
#[cfg(test)]
mod reassignment_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_operator;
pub mod timers;
pub mod topic_change;
pub mod topic_deletion;
#[cfg(test)]
mod topic_tests;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::channel::ControlRequest;
use super::error::ControllerError;
use super::model::{LeaderAndIsr, Reassigning, RegisteredBroker, TopicInfo};
use super::requests::ControllerContext;
use crate::types::BrokerId;

/// A partition: (topic, partition).
pub type Key = (String, i32);

/// Decided leaderships by partition.
pub type Decided = Vec<(Key, LeaderAndIsr)>;

/// What the core is given.
#[derive(Debug)]
pub enum Input {
    /// A controller event (Kafka's ControllerEvent), or an entry from a family not moved yet.
    Event(Event),
    /// The result of the [`ZkOp::Read`] the last step asked for.
    Read(ReadResult),
    /// The outcome of the [`ZkOp::Write`] the last step asked for.
    Wrote(WriteResult),
    /// The last ZooKeeper operation failed (other than by fencing: then the shell resigns).
    Failed,
    /// A timer the core armed ([`Effects::timers`]) is due.
    Timer(timers::TimerKind),
}

/// Controller events the core handles.
#[derive(Debug)]
pub enum Event {
    /// `/brokers/ids` changed (Kafka's BrokerChange).
    BrokerChange,
    /// A broker left `/isr_change_notification/isr_change_<seq>` (Kafka's IsrChangeNotification).
    IsrChangeNotification,
    /// Elect what needs a leader among these partitions (Kafka's
    /// `partitionStateMachine.triggerOnlinePartitionStateChange`), for families still in the shell.
    Elect(Vec<Key>),
    /// A broker asks to move its leaderships away before it stops (Kafka's ControlledShutdown);
    /// `broker_epoch` -1 = unknown (not checked).
    ControlledShutdown { broker: BrokerId, broker_epoch: i64 },
    /// ElectLeaders (KIP-460): preferred or unclean elections for `partitions` (`None`: all).
    ElectLeaders {
        partitions: Option<Vec<Key>>,
        unclean: bool,
    },
    /// `/admin/preferred_replica_election` was written (legacy tools).
    PreferredReplicaElectionZNode,
    /// `/log_dir_event_notification` children changed: a broker lost a log dir.
    LogDirEventNotification,
    /// A broker answered KAFKA_STORAGE_ERROR for these replicas.
    OfflineReplicas { broker: BrokerId, partitions: Vec<Key> },
    /// The failover finished: arm the term's timers (auto leader rebalance).
    FailoverDone,
    /// Write and announce leaderships already decided (controlled shutdown, ElectLeaders), in a
    /// step that began deciding at `since`.
    WriteDecided {
        since: Instant,
        creates: Decided,
        updates: Decided,
    },
    /// This broker became the controller: load the cluster (Kafka's onControllerFailover).
    Failover,
    /// `/brokers/topics` changed (Kafka's TopicChange).
    TopicChange,
    /// Partitions just added to the context's assignment: Kafka's onNewPartitionCreation.
    NewPartitions(Vec<Key>),
    /// CreatePartitions for one topic (answered with [`Reply::CreatePartitions`]).
    CreatePartitions(create_partitions::Request),
    /// AlterPartitionReassignments: per partition its target replicas, `None` to cancel
    /// (answered with [`Reply::AlterPartitionReassignments`]).
    AlterPartitionReassignments(Vec<(Key, Option<Vec<BrokerId>>)>),
    /// `/admin/reassign_partitions` was created (legacy tools).
    ReassignPartitionsZNode,
    /// The state znodes of these partitions being reassigned changed: their targets may all be
    /// in sync now (Kafka's PartitionReassignmentIsrChange).
    ReassignmentIsrChange(Vec<Key>),
    /// `/brokers/topics/<topic>` changed (Kafka's PartitionModifications).
    PartitionModifications { topic: String },
    /// `/admin/delete_topics` changed, or something that may unblock a deletion happened
    /// (Kafka's TopicDeletion / resumeDeletions); `start` (re)starts deletions with nothing
    /// outstanding.
    TopicDeletion { start: bool },
    /// A broker answered StopReplica(delete) sent in `controller_epoch` to its incarnation
    /// `broker_epoch`: each partition's error code (Kafka's TopicDeletionStopReplicaResponseReceived).
    StopReplicaResponse {
        controller_epoch: i32,
        broker: BrokerId,
        broker_epoch: i64,
        results: Vec<(Key, i16)>,
    },
}

/// A ZooKeeper operation to perform; its result comes back as the next input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkOp {
    Read(Read),
    /// Fenced by the controller epoch: a failed epoch check means another controller exists.
    Write(Write),
}

/// Reads the core asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// `/brokers/ids/*`: [`ReadResult::LiveBrokers`].
    LiveBrokers,
    /// The state znodes of these partitions: [`ReadResult::Leaderships`].
    Leaderships(Vec<Key>),
    /// `unclean.leader.election.enable` of these topics and of controller `controller` (dynamic
    /// broker config): [`ReadResult::UncleanConfigs`].
    UncleanConfigs {
        topics: BTreeSet<String>,
        controller: BrokerId,
    },
    /// The children of a notification parent: [`ReadResult::NotificationNames`].
    NotificationNames(&'static str),
    /// Those notifications' payloads: [`ReadResult::NotificationPayloads`].
    NotificationPayloads { parent: &'static str, names: Vec<String> },
    /// The children of `/brokers/topics`: [`ReadResult::TopicNames`].
    TopicNames,
    /// These topics' `/brokers/topics/<t>` (absent ones left out): [`ReadResult::TopicInfos`].
    TopicInfos(Vec<String>),
    /// The state znodes of these partitions where one exists, listing each topic's partitions
    /// first: [`ReadResult::Leaderships`].
    ExistingLeaderships(Vec<Key>),
    /// The children of `/admin/delete_topics`: [`ReadResult::TopicsToDelete`].
    TopicsToDelete,
    /// `/admin/preferred_replica_election`: [`ReadResult::PreferredReplicaElection`].
    PreferredReplicaElection,
    /// `/admin/reassign_partitions`: [`ReadResult::ReassignPartitions`].
    ReassignPartitions,
}

/// Fenced writes the core asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// New state znodes for `creates`, conditional updates for `updates`:
    /// [`WriteResult::PartitionStates`].
    PartitionStates { creates: Decided, updates: Decided },
    /// Delete these notifications (ones already gone count as deleted).
    DeleteNotifications { parent: &'static str, names: Vec<String> },
    /// Delete a topic's znodes that exist (these partitions' state and partition znodes, its
    /// partitions, topic and config znodes, its `/admin/delete_topics` marker):
    /// [`WriteResult::TopicDeleted`].
    DeleteTopic { topic: String, partitions: Vec<i32> },
    /// Rewrite `/brokers/topics/<topic>`'s assignment (conditional on the version read):
    /// [`WriteResult::AssignmentWritten`].
    Assignment {
        topic: String,
        assignment: BTreeMap<i32, Vec<BrokerId>>,
        reassigning: BTreeMap<i32, Reassigning>,
    },
    /// Delete `/admin/preferred_replica_election` (already gone counts as deleted).
    DeletePreferredReplicaElection,
    /// Rewrite these topics' `/brokers/topics/<t>` (each conditional on the version read), all
    /// at once: [`WriteResult::AssignmentWritten`].
    Assignments(Vec<AssignmentWrite>),
    /// Set `/admin/reassign_partitions` to this payload, or delete it (`None`; already gone
    /// counts as deleted): [`WriteResult::ReassignPartitionsWritten`].
    ReassignPartitions(Option<Vec<u8>>),
}

/// One topic's assignment and reassignment state, as [`Write::Assignments`] writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentWrite {
    pub topic: String,
    pub assignment: BTreeMap<i32, Vec<BrokerId>>,
    pub reassigning: BTreeMap<i32, Reassigning>,
}

/// What a read found.
#[derive(Debug, Clone)]
pub enum ReadResult {
    LiveBrokers(BTreeMap<BrokerId, RegisteredBroker>),
    /// Absent state znodes are left out.
    Leaderships(BTreeMap<Key, LeaderAndIsr>),
    /// The live broker-level value (`None`: not set dynamically) and per-topic overrides.
    UncleanConfigs {
        broker_default: Option<bool>,
        overrides: BTreeMap<String, bool>,
    },
    NotificationNames(Vec<String>),
    NotificationPayloads(Vec<(String, Vec<u8>)>),
    TopicNames(Vec<String>),
    TopicInfos(BTreeMap<String, TopicInfo>),
    TopicsToDelete(Vec<String>),
    /// Its data, `None` when it does not exist.
    PreferredReplicaElection(Option<Vec<u8>>),
    /// `/admin/reassign_partitions`' data, `None` when it does not exist.
    ReassignPartitions(Option<Vec<u8>>),
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteResult {
    /// The new zkVersions of the updates, in order.
    PartitionStates {
        versions: Vec<i32>,
    },
    NotificationsDeleted,
    TopicDeleted,
    AssignmentWritten,
    PreferredReplicaElectionDeleted,
    ReassignPartitionsWritten,
}

/// Metrics to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// A step elected leaders (`unclean` of them uncleanly), `elapsed` after it began deciding.
    LeaderElection { elapsed: Duration, unclean: usize },
    /// A partition was written without a leader.
    OfflinePartition,
}

/// What the shell must do, in field order; `zk` last, and its result is the next input.
#[derive(Debug, Default)]
pub struct Effects {
    /// Channels to brokers that went away (dead or bounced).
    pub disconnect: Vec<BrokerId>,
    /// Channels to open: broker and its inter-broker address.
    pub connect: Vec<(BrokerId, String)>,
    /// Stop watching these brokers' znodes.
    pub unwatch_brokers: Vec<BrokerId>,
    /// Watch these brokers' znodes (BrokerModifications).
    pub watch_brokers: Vec<BrokerId>,
    /// Watch these topics' znodes (PartitionModifications).
    pub watch_topics: Vec<String>,
    /// Stop watching these topics' znodes (deleted).
    pub unwatch_topics: Vec<String>,
    /// Watch the state znodes of these partitions (being reassigned).
    pub watch_states: Vec<Key>,
    /// Stop watching these partitions' state znodes (reassigned).
    pub unwatch_states: Vec<Key>,
    /// Requests to send, per broker, in order.
    pub send: Vec<(BrokerId, ControlRequest)>,
    pub metrics: Vec<Metric>,
    /// Timers to arm (re-arming a kind replaces its earlier instant).
    pub timers: Vec<timers::Timer>,
    /// The answer to the admin request the event came from, once decided.
    pub reply: Option<Reply>,
    /// The ZooKeeper operation to perform next; `None` when the event is done.
    pub zk: Option<ZkOp>,
}

/// The answer to an admin request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// ControlledShutdown: the partitions the broker still leads, or why it was refused.
    ControlledShutdown(Result<Vec<Key>, ControllerError>),
    /// ElectLeaders: each partition's outcome (`Ok` = elected).
    ElectLeaders(Vec<(Key, Result<(), ControllerError>)>),
    /// CreatePartitions: added (or valid, for `validate_only`), or why not.
    CreatePartitions(Result<(), ControllerError>),
    /// AlterPartitionReassignments: each partition's outcome (`Ok` = started or cancelled).
    AlterPartitionReassignments(Vec<(Key, Result<(), ControllerError>)>),
}

/// Where the core is within an event: what its next input answers.
#[derive(Debug, Default)]
pub enum Pending {
    /// No event in progress.
    #[default]
    Idle,
    BrokerChange(broker_change::Waiting),
    Elect(elect::Election),
    Isr(isr_change::Waiting),
    TopicChange(topic_change::Waiting),
    Modifications(partition_modifications::Waiting),
    Deletion(topic_deletion::Waiting),
    Failover(failover::Waiting),
    ControlledShutdown(controlled_shutdown::Waiting),
    ElectLeaders(elect_leaders::Waiting),
    LogDir(log_dir_event::Waiting),
    CreatePartitions(create_partitions::Waiting),
    Reassignment(reassignment::Waiting),
}

/// Advances the core by one input: updates `ctx` and returns what to do.
pub fn step(ctx: &mut ControllerContext, input: Input, now: Instant) -> Effects {
    let mut fx = Effects::default();
    let pending = std::mem::take(&mut ctx.pending);
    match (pending, input) {
        (Pending::Idle, Input::Event(event)) => start(ctx, event, now, &mut fx),
        (Pending::BrokerChange(w), input) => broker_change::resume(ctx, w, input, now, &mut fx),
        (Pending::Elect(e), input) => elect::resume(ctx, e, input, now, &mut fx),
        (Pending::Isr(w), input) => isr_change::resume(ctx, w, input, &mut fx),
        (Pending::TopicChange(w), input) => topic_change::resume(ctx, w, input, now, &mut fx),
        (Pending::Modifications(w), input) => partition_modifications::resume(ctx, w, input, &mut fx),
        (Pending::Deletion(w), input) => topic_deletion::resume(ctx, w, input, &mut fx),
        (Pending::Failover(w), input) => failover::resume(ctx, w, input, now, &mut fx),
        (Pending::ControlledShutdown(w), input) => controlled_shutdown::resume(ctx, w, input, now, &mut fx),
        (Pending::ElectLeaders(w), input) => elect_leaders::resume(ctx, w, input, now, &mut fx),
        (Pending::LogDir(w), input) => log_dir_event::resume(ctx, w, input, now, &mut fx),
        (Pending::CreatePartitions(w), input) => create_partitions::resume(ctx, w, input, &mut fx),
        (Pending::Reassignment(w), input) => reassignment::resume(ctx, w, input, now, &mut fx),
        (Pending::Idle, Input::Timer(kind)) => timers::fired(ctx, kind, now, &mut fx),
        (Pending::Idle, input) => tracing::warn!(?input, "controller core: input without a pending step"),
    }
    fx
}

fn start(ctx: &mut ControllerContext, event: Event, now: Instant, fx: &mut Effects) {
    match event {
        Event::BrokerChange => broker_change::start(ctx, fx),
        Event::IsrChangeNotification => isr_change::start(ctx, fx),
        Event::Elect(partitions) => elect::start(ctx, partitions, elect::After::Done, now, fx),
        Event::ControlledShutdown { broker, broker_epoch } => {
            controlled_shutdown::start(ctx, broker, broker_epoch, now, fx)
        }
        Event::ElectLeaders { partitions, unclean } => {
            let partitions = partitions.unwrap_or_else(|| ctx.all_partitions());
            let how = elect_leaders::How::admin(unclean);
            elect_leaders::start(ctx, partitions, how, now, fx)
        }
        Event::PreferredReplicaElectionZNode => elect_leaders::start_znode(ctx, fx),
        Event::LogDirEventNotification => log_dir_event::start(ctx, fx),
        Event::OfflineReplicas { broker, partitions } => log_dir_event::offline(ctx, broker, partitions, now, fx),
        Event::FailoverDone => timers::failover_done(ctx, now, fx),
        Event::WriteDecided {
            since,
            creates,
            updates,
        } => {
            let election = elect::Election::decided(since, elect::After::Done);
            elect::write(ctx, election, creates, updates, fx)
        }
        Event::Failover => failover::start(ctx, fx),
        Event::TopicChange => topic_change::start(ctx, fx),
        Event::NewPartitions(partitions) => topic_change::new_partitions(ctx, partitions, fx),
        Event::CreatePartitions(request) => create_partitions::start(ctx, request, fx),
        Event::PartitionModifications { topic } => partition_modifications::start(ctx, topic, fx),
        Event::AlterPartitionReassignments(requests) => reassignment::alter(ctx, requests, fx),
        Event::ReassignPartitionsZNode => reassignment::start_znode(ctx, reassignment::Then::Done, fx),
        Event::ReassignmentIsrChange(partitions) => reassignment::isr_changed(ctx, partitions, fx),
        Event::TopicDeletion { start } => topic_deletion::start(ctx, start, fx),
        Event::StopReplicaResponse {
            controller_epoch,
            broker,
            broker_epoch,
            results,
        } => topic_deletion::answered(ctx, controller_epoch, broker, broker_epoch, &results, fx),
    }
}

/// Whether `input` is [`Input::Failed`] (the event ends; the shell has logged why).
fn failed(input: &Input) -> bool {
    matches!(input, Input::Failed)
}
