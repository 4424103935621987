//! The controller's model of the cluster, owned by the pure parts (elections, both state
//! machines, request building) and filled by [`super::zk_ops`]: a partition's leadership
//! ([`LeaderAndIsr`], the one leader/ISR type of the controller), a topic's assignment
//! ([`TopicInfo`]) and a live broker ([`RegisteredBroker`]).
//!
//! The ZooKeeper JSON form of a leadership (`zk::models::PartitionState`, the serde type of
//! `/brokers/topics/<t>/partitions/<p>/state`) is converted here and nowhere else:
//! [`LeaderAndIsr::from_znode`] and [`LeaderAndIsr::to_znode`].

use std::collections::BTreeMap;

use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, ZkVersion};
use crate::zk::models::{BrokerRegistration, PartitionState as PartitionStateZNode, ZNodePayload};

/// `leader_recovery_state` after a clean election or once the leader has caught up (KIP-704).
pub const LEADER_RECOVERED: u8 = 0;
/// `leader_recovery_state` after an unclean election: the leader may lack committed data.
pub const LEADER_RECOVERING: u8 = 1;
/// Kafka's `LeaderAndIsr.NoLeader`: how "no leader" is written to ZooKeeper and the wire.
pub const NO_LEADER: BrokerId = BrokerId(-1);

/// A partition's leadership, as stored in `/brokers/topics/<t>/partitions/<p>/state` (Kafka's
/// `LeaderIsrAndControllerEpoch`), with the znode's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAndIsr {
    /// `None` is Kafka's `-1` (NoLeader): the partition is offline.
    pub leader: Option<BrokerId>,
    /// Bumped by one on every change the controller makes, so brokers can fence stale requests.
    pub leader_epoch: i32,
    /// In-sync replicas. Order matters only for display; Kafka keeps the order it was given.
    pub isr: Vec<BrokerId>,
    /// The epoch of the controller that wrote it.
    pub controller_epoch: i32,
    /// [`LEADER_RECOVERED`] or [`LEADER_RECOVERING`].
    pub leader_recovery_state: u8,
    /// zkVersion of the state znode: the partition epoch. Elections never change it: the
    /// conditional write does, and the caller stores the version it gets back.
    pub zk_version: i32,
}

impl LeaderAndIsr {
    /// The leader as written to ZooKeeper and LeaderAndIsr requests: `-1` when there is none.
    pub fn leader_or_no_leader(&self) -> BrokerId {
        self.leader.unwrap_or(NO_LEADER)
    }

    /// Reads a wire/ZooKeeper leader id: any negative id (`-1` NoLeader, `-2` LeaderDuringDelete)
    /// means no broker leads.
    pub fn leader_from_wire(leader: BrokerId) -> Option<BrokerId> {
        (leader.0 >= 0).then_some(leader)
    }

    /// Kafka's `newLeaderAndIsr`: new leader and ISR, epoch bumped, recovery state, controller
    /// epoch and zk version kept (the caller sets the controller epoch it writes under).
    pub fn with_leader_and_isr(&self, leader: Option<BrokerId>, isr: Vec<BrokerId>) -> Self {
        LeaderAndIsr {
            leader,
            leader_epoch: self.leader_epoch + 1,
            isr,
            ..self.clone()
        }
    }

    /// Decodes a state znode read at `version`.
    pub fn from_znode(data: &[u8], version: ZkVersion) -> Result<Self, String> {
        let s = PartitionStateZNode::decode(data).map_err(|e| e.to_string())?;
        Ok(LeaderAndIsr {
            leader: Self::leader_from_wire(s.leader),
            leader_epoch: s.leader_epoch.0,
            isr: s.isr,
            controller_epoch: s.controller_epoch.0,
            leader_recovery_state: s.leader_recovery_state.unwrap_or(0) as u8,
            zk_version: version.0,
        })
    }

    /// The state znode's payload, as written by a controller of `controller_epoch`.
    pub fn to_znode(&self, controller_epoch: i32) -> Vec<u8> {
        PartitionStateZNode {
            controller_epoch: ControllerEpoch(controller_epoch),
            leader: self.leader_or_no_leader(),
            version: 1,
            leader_epoch: LeaderEpoch(self.leader_epoch),
            isr: self.isr.clone(),
            leader_recovery_state: (self.leader_recovery_state == LEADER_RECOVERING).then_some(1),
        }
        .encode()
    }
}

/// A live broker as registered.
#[derive(Debug, Clone)]
pub struct RegisteredBroker {
    pub id: BrokerId,
    pub registration: BrokerRegistration,
    /// Broker epoch (czxid of the registration).
    pub epoch: i64,
}

/// A topic's replica assignment and id.
#[derive(Debug, Clone)]
pub struct TopicInfo {
    pub id: uuid::Uuid,
    /// Each partition's replicas (RS): during a reassignment the union of the original and the
    /// target replicas, targets first (Kafka's `ReplicaAssignment.replicas`).
    pub assignment: BTreeMap<i32, Vec<BrokerId>>,
    /// The partitions being reassigned (the znode's `adding_replicas` / `removing_replicas`).
    pub reassigning: BTreeMap<i32, Reassigning>,
}

/// A partition's reassignment in progress (KIP-455): the replicas it adds (in the target, not
/// the original) and removes (in the original, not the target). Its target is RS − removing,
/// its original RS − adding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reassigning {
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_znode_codec_round_trips_and_maps_negative_leaders_to_none() {
        let l = LeaderAndIsr {
            leader: Some(BrokerId(2)),
            leader_epoch: 4,
            isr: vec![BrokerId(2), BrokerId(3)],
            controller_epoch: 9,
            leader_recovery_state: LEADER_RECOVERING,
            zk_version: 0,
        };
        let back = LeaderAndIsr::from_znode(&l.to_znode(9), ZkVersion(5)).expect("decodes");
        assert_eq!(
            back,
            LeaderAndIsr {
                zk_version: 5,
                ..l.clone()
            }
        );
        let none = LeaderAndIsr { leader: None, ..l };
        let text = String::from_utf8(none.to_znode(9)).expect("utf8");
        assert!(text.contains("\"leader\":-1"), "{text}");
        let during_delete = text.replace("\"leader\":-1", "\"leader\":-2");
        let back = LeaderAndIsr::from_znode(during_delete.as_bytes(), ZkVersion(0)).expect("decodes");
        assert_eq!(back.leader, None);
    }
}
