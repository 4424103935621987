//! PartitionModifications (Kafka's `processPartitionModifications`): `/brokers/topics/<t>` of a
//! known topic changed. Read it again and compare with the context: partitions added by hand
//! are created ([`topic_change::new_partitions`]); changed replicas of existing partitions (a
//! reassignment written by hand) and removed partitions are only logged, as reassignment is not
//! supported. While the topic is queued for deletion the edit is undone instead (the known
//! assignment is written back, fenced). No I/O: each ZooKeeper step is an effect whose result
//! resumes the step.

use std::collections::BTreeMap;

use super::{failed, topic_change, Effects, Input, Key, Pending, Read, ReadResult, Write, WriteResult, ZkOp};
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;

/// Where a partition modification is.
#[derive(Debug)]
pub enum Waiting {
    /// For the topic's znode.
    Assignment { topic: String },
    /// For `/admin/delete_topics`, with the partitions to add.
    Queue {
        topic: String,
        added: BTreeMap<i32, Vec<BrokerId>>,
    },
    /// For the known assignment to be written back.
    Restoring,
}

/// How a topic's assignment as read from ZooKeeper differs from the controller's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentChange {
    /// Partitions the controller does not know, with their replicas.
    pub added: BTreeMap<i32, Vec<BrokerId>>,
    /// Known partitions whose replicas differ (a reassignment written by hand).
    pub reassigned: Vec<i32>,
    /// Known partitions missing from ZooKeeper (partitions cannot be removed).
    pub removed: Vec<i32>,
}

/// Compares the controller's assignment of a topic with the one just read.
pub fn assignment_change(
    known: &BTreeMap<i32, Vec<BrokerId>>,
    read: &BTreeMap<i32, Vec<BrokerId>>,
) -> AssignmentChange {
    let mut change = AssignmentChange::default();
    for (p, replicas) in read {
        match known.get(p) {
            None => {
                change.added.insert(*p, replicas.clone());
            }
            Some(k) if k != replicas => change.reassigned.push(*p),
            Some(_) => {}
        }
    }
    change.removed = known.keys().filter(|p| !read.contains_key(p)).copied().collect();
    change
}

/// A topic the controller does not know yet is TopicChange's to create: nothing to do.
pub fn start(ctx: &mut ControllerContext, topic: String, fx: &mut Effects) {
    if !ctx.topics.contains_key(&topic) {
        return;
    }
    fx.zk = Some(ZkOp::Read(Read::TopicInfos(vec![topic.clone()])));
    ctx.pending = Pending::Modifications(Waiting::Assignment { topic });
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, fx: &mut Effects) {
    if failed(&input) {
        return;
    }
    match (waiting, input) {
        (Waiting::Assignment { topic }, Input::Read(ReadResult::TopicInfos(infos))) => {
            // Absent: deleted meanwhile.
            if let Some(read) = infos.get(&topic) {
                compared(ctx, topic, &read.assignment, fx);
            }
        }
        (Waiting::Queue { topic, added }, Input::Read(ReadResult::TopicsToDelete(queued))) => {
            if queued.contains(&topic) {
                restore(ctx, topic, &added, fx);
            } else {
                add(ctx, &topic, added, fx);
            }
        }
        (Waiting::Restoring, Input::Wrote(WriteResult::AssignmentWritten)) => {}
        (_, input) => tracing::warn!(
            ?input,
            "controller core: unexpected input during a partition modification"
        ),
    }
}

/// Logs what is ignored; with partitions added, asks whether the topic is queued for deletion.
fn compared(ctx: &mut ControllerContext, topic: String, read: &BTreeMap<i32, Vec<BrokerId>>, fx: &mut Effects) {
    let Some(known) = ctx.topics.get(&topic).map(|t| &t.assignment) else {
        return;
    };
    let change = assignment_change(known, read);
    if !change.reassigned.is_empty() || !change.removed.is_empty() {
        tracing::warn!(
            %topic,
            reassigned = ?change.reassigned,
            removed = ?change.removed,
            "ignoring changed replicas of existing partitions: reassignment is not supported"
        );
    }
    if change.added.is_empty() {
        return;
    }
    ctx.pending = Pending::Modifications(Waiting::Queue {
        topic,
        added: change.added,
    });
    fx.zk = Some(ZkOp::Read(Read::TopicsToDelete));
}

fn restore(ctx: &mut ControllerContext, topic: String, added: &BTreeMap<i32, Vec<BrokerId>>, fx: &mut Effects) {
    let Some((known, reassigning)) = ctx
        .topics
        .get(&topic)
        .map(|t| (t.assignment.clone(), t.reassigning.clone()))
    else {
        return;
    };
    tracing::warn!(
        %topic,
        added = ?added.keys().collect::<Vec<_>>(),
        "not adding partitions to a topic being deleted; restoring its assignment"
    );
    ctx.pending = Pending::Modifications(Waiting::Restoring);
    fx.zk = Some(ZkOp::Write(Write::Assignment {
        topic,
        assignment: known,
        reassigning,
    }));
}

fn add(ctx: &mut ControllerContext, topic: &str, added: BTreeMap<i32, Vec<BrokerId>>, fx: &mut Effects) {
    let Some(t) = ctx.topics.get_mut(topic) else {
        return;
    };
    let keys: Vec<Key> = added.keys().map(|p| (topic.to_string(), *p)).collect();
    t.assignment.extend(added);
    tracing::info!(topic, partitions = ?keys, "partitions added to the topic's znode");
    topic_change::new_partitions(ctx, keys, fx);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(parts: &[(i32, &[i32])]) -> BTreeMap<i32, Vec<BrokerId>> {
        parts
            .iter()
            .map(|(p, r)| (*p, r.iter().map(|b| BrokerId(*b)).collect()))
            .collect()
    }

    /// processPartitionModifications acts on partitions absent from the context only.
    #[test]
    fn added_partitions_are_told_apart_from_reassigned_and_removed_ones() {
        let known = assignment(&[(0, &[1, 2]), (1, &[2, 3])]);
        let cases = [
            (
                "unchanged",
                assignment(&[(0, &[1, 2]), (1, &[2, 3])]),
                AssignmentChange::default(),
            ),
            (
                "one partition added",
                assignment(&[(0, &[1, 2]), (1, &[2, 3]), (2, &[3, 1])]),
                AssignmentChange {
                    added: assignment(&[(2, &[3, 1])]),
                    ..Default::default()
                },
            ),
            (
                "added and reassigned",
                assignment(&[(0, &[2, 1]), (1, &[2, 3]), (2, &[3])]),
                AssignmentChange {
                    added: assignment(&[(2, &[3])]),
                    reassigned: vec![0],
                    removed: vec![],
                },
            ),
            (
                "one removed",
                assignment(&[(0, &[1, 2])]),
                AssignmentChange {
                    removed: vec![1],
                    ..Default::default()
                },
            ),
        ];
        for (what, read, want) in cases {
            assert_eq!(assignment_change(&known, &read), want, "{what}");
        }
    }
}
