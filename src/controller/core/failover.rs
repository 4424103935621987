//! Failover (Kafka's `onControllerFailover`), once the shell has deleted stale notifications:
//! read the live brokers, the topic names (watching each topic before its assignment is read,
//! so an edit in between is not missed), the assignments, their state znodes and the deletion
//! queue; initialize the context and both state machines; connect to and watch every live
//! broker; tell every broker the cluster (UpdateMetadata), re-announce every partition with a
//! state to its live replicas (Kafka's replica state machine start-up: a replica in a failed log
//! dir answers KAFKA_STORAGE_ERROR), elect what needs a leader, and resume the reassignments in
//! progress and the deletions queued before this controller took over. No I/O: each read is an effect whose result resumes it.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{announce, elect, failed, Effects, Input, Key, Pending, Read, ReadResult, ZkOp};
use crate::controller::model::{LeaderAndIsr, RegisteredBroker, TopicInfo};
use crate::controller::requests::{self, ControllerContext};
use crate::types::BrokerId;

type Brokers = BTreeMap<BrokerId, RegisteredBroker>;

/// What the failover has read so far, and what it waits for next.
#[derive(Debug)]
pub enum Waiting {
    Brokers,
    Names {
        brokers: Brokers,
    },
    Infos {
        brokers: Brokers,
    },
    States {
        brokers: Brokers,
        topics: BTreeMap<String, TopicInfo>,
    },
    Queue {
        brokers: Brokers,
        topics: BTreeMap<String, TopicInfo>,
        leaderships: BTreeMap<Key, LeaderAndIsr>,
    },
}

pub fn start(ctx: &mut ControllerContext, fx: &mut Effects) {
    ctx.pending = Pending::Failover(Waiting::Brokers);
    fx.zk = Some(ZkOp::Read(Read::LiveBrokers));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, now: Instant, fx: &mut Effects) {
    if failed(&input) {
        return;
    }
    let (next, read) = match (waiting, input) {
        (Waiting::Brokers, Input::Read(ReadResult::LiveBrokers(brokers))) => {
            (Waiting::Names { brokers }, Read::TopicNames)
        }
        (Waiting::Names { brokers }, Input::Read(ReadResult::TopicNames(names))) => {
            fx.watch_topics.extend(names.iter().cloned());
            (Waiting::Infos { brokers }, Read::TopicInfos(names))
        }
        (Waiting::Infos { brokers }, Input::Read(ReadResult::TopicInfos(topics))) => {
            let partitions: Vec<Key> = topics
                .iter()
                .flat_map(|(t, i)| i.assignment.keys().map(move |p| (t.clone(), *p)))
                .collect();
            (Waiting::States { brokers, topics }, Read::Leaderships(partitions))
        }
        (Waiting::States { brokers, topics }, Input::Read(ReadResult::Leaderships(leaderships))) => {
            let next = Waiting::Queue {
                brokers,
                topics,
                leaderships,
            };
            (next, Read::TopicsToDelete)
        }
        (
            Waiting::Queue {
                brokers,
                topics,
                leaderships,
            },
            Input::Read(ReadResult::TopicsToDelete(doomed)),
        ) => {
            ctx.topics_to_delete = doomed.into_iter().filter(|t| topics.contains_key(t)).collect();
            ctx.topics = topics;
            ctx.leaderships = leaderships;
            initialize(ctx, brokers, now, fx);
            return;
        }
        (_, input) => {
            tracing::warn!(?input, "controller core: unexpected input during a failover");
            return;
        }
    };
    ctx.pending = Pending::Failover(next);
    fx.zk = Some(ZkOp::Read(read));
}

/// The context takes what was read; every broker learns the cluster first, then leaders are
/// (re)announced and elected, and deletions resume ([`finish`]).
fn initialize(ctx: &mut ControllerContext, brokers: Brokers, now: Instant, fx: &mut Effects) {
    fx.connect.extend(brokers.iter().filter_map(|(id, b)| {
        let addr = requests::broker_address(b, &ctx.inter_broker_listener)?;
        Some((*id, addr))
    }));
    fx.watch_brokers.extend(brokers.keys().copied());
    ctx.live_brokers = brokers;
    ctx.initialize_partition_states();
    ctx.initialize_replica_states();
    let all = ctx.all_partitions();
    fx.send.extend(announce::update_metadata(ctx, &all));
    let with_state: Vec<Key> = all
        .iter()
        .filter(|k| ctx.leaderships.contains_key(*k))
        .cloned()
        .collect();
    fx.send.extend(announce::leader_and_isr(ctx, &with_state, false));
    elect::start(ctx, all, elect::After::Failover, now, fx);
}

/// After the failover's election: resume the reassignments in progress (the topic znodes' and
/// `/admin/reassign_partitions`'), then the deletions queued before this controller took over.
pub fn finish(ctx: &mut ControllerContext, fx: &mut Effects) {
    super::reassignment::resume_after_failover(ctx, fx);
}
