//! Edits of existing znodes the controller follows (Kafka's PartitionModificationsHandler):
//! partitions added to `/brokers/topics/<t>` by hand get leaders.
//!
//! This module owns the per-topic data watches and the pure comparison behind the handler.
//! Reassignment (an existing partition's replicas changed) is not handled here or anywhere
//! yet: it is logged and ignored, as Kafka's handler ignores it too.

use std::collections::BTreeMap;

use super::controller::Controller;
use super::event_manager::Event;
use super::zk_ops::{self, ControllerZkError};
use crate::types::BrokerId;
use crate::zk::paths;

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

impl Controller {
    /// Watches the data of each topic's `/brokers/topics/<t>` (PartitionModifications).
    pub(super) async fn watch_topics(&mut self, topics: &[String]) {
        let wanted = topics
            .iter()
            .map(|t| (paths::topic(t), Event::PartitionModifications { topic: t.clone() }))
            .collect();
        if let Some(active) = self.active.as_mut() {
            active.watches.watch_data(&self.zk, wanted, &self.events).await;
        }
    }

    /// Kafka's processPartitionModifications: partitions added to a known topic's assignment
    /// are created (state znodes, leaders, LeaderAndIsr, UpdateMetadata). While the topic is
    /// queued for deletion the edit is undone instead.
    pub(super) async fn on_partition_modifications(&mut self, topic: &str) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        // A topic the controller does not know yet is TopicChange's to create.
        let Some(known) = active.ctx.topics.get(topic).map(|t| t.assignment.clone()) else {
            return Ok(());
        };
        let epoch_version = active.epoch_version;
        let read = zk_ops::topic_infos(&self.zk, &[topic.to_string()]).await?;
        let Some(read) = read.get(topic) else {
            return Ok(()); // deleted meanwhile
        };
        let change = assignment_change(&known, &read.assignment);
        if !change.reassigned.is_empty() || !change.removed.is_empty() {
            tracing::warn!(
                topic,
                reassigned = ?change.reassigned,
                removed = ?change.removed,
                "ignoring changed replicas of existing partitions: reassignment is not supported"
            );
        }
        if change.added.is_empty() {
            return Ok(());
        }
        if zk_ops::is_queued_for_deletion(&self.zk, topic).await? {
            tracing::warn!(
                topic,
                added = ?change.added.keys().collect::<Vec<_>>(),
                "not adding partitions to a topic being deleted; restoring its assignment"
            );
            return zk_ops::write_assignment(&self.zk, epoch_version, topic, &known).await;
        }
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let added: Vec<(String, i32)> = change.added.keys().map(|p| (topic.to_string(), *p)).collect();
        if let Some(t) = active.ctx.topics.get_mut(topic) {
            t.assignment.extend(change.added);
        }
        tracing::info!(topic, partitions = ?added, "partitions added to the topic's znode");
        self.on_new_partitions(&added).await
    }
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
