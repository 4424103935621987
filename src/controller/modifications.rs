//! Edits of existing znodes the controller follows (Kafka's PartitionModificationsHandler and
//! BrokerModificationsHandler): partitions added to `/brokers/topics/<t>` by hand get leaders;
//! a live broker whose registration changed in place is re-announced to every broker.
//!
//! This module owns the per-topic and per-broker data watches and the pure comparisons behind
//! both handlers. Reassignment (an existing partition's replicas changed) is not handled here
//! or anywhere yet: it is logged and ignored, as Kafka's handler ignores it too.

use std::collections::BTreeMap;

use super::controller::Controller;
use super::event_manager::Event;
use super::model::RegisteredBroker;
use super::requests;
use super::store::ControllerStore;
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

/// What a broker's registration read again means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerUpdate {
    /// Nothing the cluster sees changed (e.g. only the timestamp).
    Unchanged,
    /// Same registration znode (same czxid, so same broker epoch), new endpoints, rack,
    /// security protocols or features.
    Changed,
    /// A new registration (another czxid): a restart, BrokerChange's business.
    Reregistered,
}

/// Kafka compares endpoints and features; kastle also compares the rack and the listener
/// security protocols, which UpdateMetadata carries too, so an edited rack reaches clients.
pub fn broker_update(known: &RegisteredBroker, read: &RegisteredBroker) -> BrokerUpdate {
    if known.epoch != read.epoch {
        return BrokerUpdate::Reregistered;
    }
    let (k, r) = (&known.registration, &read.registration);
    if k.endpoints != r.endpoints
        || k.rack != r.rack
        || k.features != r.features
        || k.listener_security_protocol_map != r.listener_security_protocol_map
    {
        BrokerUpdate::Changed
    } else {
        BrokerUpdate::Unchanged
    }
}

impl<S: ControllerStore> Controller<S> {
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

    /// Watches the data of each broker's `/brokers/ids/<id>` (BrokerModifications).
    pub(super) async fn watch_brokers(&mut self, brokers: &[BrokerId]) {
        let wanted = brokers
            .iter()
            .map(|b| (paths::broker_id(*b), Event::BrokerModifications { broker: *b }))
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

    /// Kafka's processBrokerModification: a live broker's registration changed in place; the
    /// context takes the new one and every broker gets UpdateMetadata with the new broker list.
    pub(super) async fn on_broker_modifications(&mut self, broker: BrokerId) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        // Unknown brokers and new registrations are BrokerChange's business.
        if !active.ctx.is_live(broker) {
            return Ok(());
        }
        let Some(read) = zk_ops::broker(&self.zk, broker).await? else {
            return Ok(());
        };
        let listener = self.config.inter_broker_listener.clone();
        let me = self.config.broker_id;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let Some(known) = active.ctx.live_brokers.get(&broker) else {
            return Ok(());
        };
        match broker_update(known, &read) {
            BrokerUpdate::Unchanged => return Ok(()),
            BrokerUpdate::Reregistered => {
                tracing::debug!(%broker, "broker registered anew; left to the broker change");
                return Ok(());
            }
            BrokerUpdate::Changed => {}
        }
        tracing::info!(
            %broker,
            old = ?known.registration,
            new = ?read.registration,
            "broker registration changed"
        );
        // Kafka keeps sending to the old address; a moved inter-broker listener would leave
        // this controller unable to reach the broker, so its sender follows the registration.
        let (old_addr, new_addr) = (
            requests::broker_address(known, &listener),
            requests::broker_address(&read, &listener),
        );
        if old_addr != new_addr {
            active.channel.remove_broker(broker);
            if let Some(addr) = new_addr {
                active.channel.add_broker(broker, addr, me);
            }
        }
        active.ctx.live_brokers.insert(broker, read);
        self.send_update_metadata(&[]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::models::BrokerRegistration;

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

    fn registered(epoch: i64, edit: impl FnOnce(&mut BrokerRegistration)) -> RegisteredBroker {
        let mut registration = BrokerRegistration {
            version: 5,
            host: Some("h".into()),
            port: 9092,
            jmx_port: -1,
            timestamp: 1,
            endpoints: vec!["PLAINTEXT://h:9092".into()],
            rack: None,
            listener_security_protocol_map: Some([("PLAINTEXT".to_string(), "PLAINTEXT".to_string())].into()),
            features: Some(BTreeMap::new()),
        };
        edit(&mut registration);
        RegisteredBroker {
            id: BrokerId(1),
            registration,
            epoch,
        }
    }

    #[test]
    fn broker_updates_compare_what_update_metadata_carries_within_one_registration() {
        let known = registered(10, |_| {});
        let cases: [(&str, RegisteredBroker, BrokerUpdate); 6] = [
            ("identical", registered(10, |_| {}), BrokerUpdate::Unchanged),
            (
                "timestamp only",
                registered(10, |r| r.timestamp = 2),
                BrokerUpdate::Unchanged,
            ),
            (
                "rack",
                registered(10, |r| r.rack = Some("r1".into())),
                BrokerUpdate::Changed,
            ),
            (
                "endpoint",
                registered(10, |r| r.endpoints = vec!["PLAINTEXT://h2:9092".into()]),
                BrokerUpdate::Changed,
            ),
            (
                "features",
                registered(10, |r| {
                    r.features = Some(
                        [(
                            "metadata.version".to_string(),
                            crate::zk::models::FeatureRange {
                                min_version: 1,
                                max_version: 21,
                            },
                        )]
                        .into(),
                    )
                }),
                BrokerUpdate::Changed,
            ),
            (
                "restarted",
                registered(11, |r| r.rack = Some("r1".into())),
                BrokerUpdate::Reregistered,
            ),
        ];
        for (what, read, want) in cases {
            assert_eq!(broker_update(&known, &read), want, "{what}");
        }
    }
}
