//! TopicChange (Kafka's `processTopicChange`) and the partition creation every new partition
//! goes through (Kafka's `onNewPartitionCreation`). A topic change reads `/brokers/topics`,
//! watches the topics the context does not know (before reading them, so an edit in between is
//! not missed), reads their assignments and takes them into the context. New partitions enter
//! the partition and replica state machines as New, have their state znodes read where one
//! exists (written by hand, or left by an earlier controller: taken as it is and announced),
//! and the rest get their first leader and ISR from their live replicas through [`elect`]; the
//! replicas then become Online (or Offline where they cannot serve). No I/O: each ZooKeeper
//! step is an effect whose result resumes the step.

use std::time::Instant;

use super::{announce, elect, failed, Effects, Input, Key, Pending, Read, ReadResult, ZkOp};
use crate::controller::partition_state::PartitionState;
use crate::controller::requests::ControllerContext;
use crate::controller::state_changes;

/// Where a topic change (or a partition creation) is.
#[derive(Debug)]
pub enum Waiting {
    /// For the children of `/brokers/topics`.
    Names,
    /// For the assignments of topics the context does not know.
    Infos,
    /// For the state znodes that already exist among new `partitions`.
    Existing { partitions: Vec<Key> },
}

pub fn start(ctx: &mut ControllerContext, fx: &mut Effects) {
    ctx.pending = Pending::TopicChange(Waiting::Names);
    fx.zk = Some(ZkOp::Read(Read::TopicNames));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, now: Instant, fx: &mut Effects) {
    if failed(&input) {
        return;
    }
    match (waiting, input) {
        (Waiting::Names, Input::Read(ReadResult::TopicNames(names))) => {
            let new: Vec<String> = names.into_iter().filter(|t| !ctx.topics.contains_key(t)).collect();
            if new.is_empty() {
                return;
            }
            fx.watch_topics.extend(new.iter().cloned());
            ctx.pending = Pending::TopicChange(Waiting::Infos);
            fx.zk = Some(ZkOp::Read(Read::TopicInfos(new)));
        }
        (Waiting::Infos, Input::Read(ReadResult::TopicInfos(infos))) => {
            let partitions: Vec<Key> = infos
                .iter()
                .flat_map(|(t, i)| i.assignment.keys().map(move |p| (t.clone(), *p)))
                .collect();
            let topics: Vec<&String> = infos.keys().collect();
            tracing::info!(?topics, partitions = partitions.len(), "new topics");
            ctx.topics.extend(infos);
            new_partitions(ctx, partitions, fx);
        }
        (Waiting::Existing { partitions }, Input::Read(ReadResult::Leaderships(existing))) => {
            take_existing(ctx, existing, fx);
            let after = elect::After::NewPartitions(partitions.clone());
            elect::start(ctx, partitions, after, now, fx);
        }
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a topic change"),
    }
}

/// Kafka's onNewPartitionCreation for `partitions` just added to the context's assignment:
/// they (and their replicas) become New, then the state znodes that exist among them are read.
/// A partition that already exists is refused by the state machine, so it is not created twice.
pub fn new_partitions(ctx: &mut ControllerContext, partitions: Vec<Key>, fx: &mut Effects) {
    let partitions = ctx.change_states(&partitions, PartitionState::New);
    if partitions.is_empty() {
        return;
    }
    ctx.create_replicas(&partitions);
    ctx.pending = Pending::TopicChange(Waiting::Existing {
        partitions: partitions.clone(),
    });
    fx.zk = Some(ZkOp::Read(Read::ExistingLeaderships(partitions)));
}

/// State znodes found for new partitions are taken as they are; those with a leader that can
/// serve are Online and announced (LeaderAndIsr as new, UpdateMetadata; nothing when none is).
fn take_existing(
    ctx: &mut ControllerContext,
    existing: std::collections::BTreeMap<Key, crate::controller::model::LeaderAndIsr>,
    fx: &mut Effects,
) {
    let mut announced = Vec::new();
    for (key, l) in existing {
        let online = ctx.replica_online(&key, l.leader);
        if online {
            announced.push(key.clone());
        }
        ctx.leaderships.insert(key.clone(), l);
        ctx.change_states(std::slice::from_ref(&key), state_changes::state_for(online));
    }
    if !announced.is_empty() {
        fx.send.extend(announce::leader_and_isr(ctx, &announced, true));
        fx.send.extend(announce::update_metadata(ctx, &announced));
    }
}

/// The last part of onNewPartitionCreation, once leaders are elected and announced: the new
/// replicas that can serve become Online, the others Offline.
pub fn finish(ctx: &mut ControllerContext, partitions: &[Key]) {
    ctx.start_new_replicas(partitions);
}
