//! Edits of existing znodes the controller follows (Kafka's PartitionModificationsHandler and
//! BrokerModificationsHandler): a live broker whose registration changed in place is
//! re-announced to every broker. Partitions added to `/brokers/topics/<t>` by hand are the
//! core's ([`super::core::partition_modifications`]).
//!
//! This module owns the per-topic and per-broker data watches and the pure comparison behind
//! the broker handler.

use super::controller::Controller;
use super::event_manager::{Event, Trigger};
use super::model::RegisteredBroker;
use super::requests;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::types::BrokerId;
use crate::zk::paths;

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
            active
                .watches
                .watch_data(&self.zk, wanted, Trigger::Data, &self.events)
                .await;
        }
    }

    /// Watches the state znode of each partition being reassigned (Kafka's
    /// PartitionReassignmentIsrChangeHandler): a leader's ISR change may complete it, and so may
    /// the state's creation (a partition reassigned before it had one).
    pub(super) async fn watch_states(&mut self, partitions: &[(String, i32)]) {
        let wanted = partitions
            .iter()
            .map(|(t, p)| {
                let event = Event::ReassignmentIsrChange {
                    partitions: vec![(t.clone(), *p)],
                };
                (paths::partition_state(t, *p), event)
            })
            .collect();
        if let Some(active) = self.active.as_mut() {
            active
                .watches
                .watch_data(&self.zk, wanted, Trigger::CreatedOrData, &self.events)
                .await;
        }
    }

    /// Watches the data of each broker's `/brokers/ids/<id>` (BrokerModifications).
    pub(super) async fn watch_brokers(&mut self, brokers: &[BrokerId]) {
        let wanted = brokers
            .iter()
            .map(|b| (paths::broker_id(*b), Event::BrokerModifications { broker: *b }))
            .collect();
        if let Some(active) = self.active.as_mut() {
            active
                .watches
                .watch_data(&self.zk, wanted, Trigger::Data, &self.events)
                .await;
        }
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
    use std::collections::BTreeMap;

    use super::*;
    use crate::zk::models::BrokerRegistration;

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
