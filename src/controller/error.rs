//! Why the controller refuses or cannot do what a request asked, and the one mapping of those
//! answers to Kafka error codes. ZooKeeper failures are [`super::zk_ops::ControllerZkError`];
//! a request that meets one is answered [`ControllerError::NotController`], as Kafka does when
//! the controller moves mid-request.

use crate::protocol::error_codes as ec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    #[error("this broker is not the active controller")]
    NotController,
    /// ControlledShutdown from a broker the controller does not know as live.
    #[error("the broker is not registered")]
    BrokerNotAvailable,
    /// ControlledShutdown from an older incarnation of the broker.
    #[error("the broker epoch is stale")]
    StaleBrokerEpoch,
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// Kafka: "Deletion of topic is in progress".
    #[error("the topic is being deleted")]
    TopicBeingDeleted,
    #[error("the partition count can only grow")]
    InvalidPartitions,
    #[error("invalid replica assignment")]
    InvalidReplicaAssignment,
    #[error("the replication factor exceeds the live brokers")]
    InvalidReplicationFactor,
    /// The wanted leader already leads.
    #[error("election not needed")]
    ElectionNotNeeded,
    /// The first assigned replica is dead or out of sync.
    #[error("the preferred leader is not available")]
    PreferredLeaderNotAvailable,
    /// No live replica can lead.
    #[error("no eligible leader is available")]
    EligibleLeadersNotAvailable,
    /// A reassignment cancelled (`replicas: null`) for a partition that is not being reassigned.
    #[error("no reassignment is in progress")]
    NoReassignmentInProgress,
}

impl ControllerError {
    /// Kafka's error code for a response.
    pub fn error_code(self) -> i16 {
        match self {
            ControllerError::NotController => ec::NOT_CONTROLLER,
            ControllerError::BrokerNotAvailable => ec::BROKER_NOT_AVAILABLE,
            ControllerError::StaleBrokerEpoch => ec::STALE_BROKER_EPOCH,
            ControllerError::UnknownTopicOrPartition => ec::UNKNOWN_TOPIC_OR_PARTITION,
            ControllerError::TopicBeingDeleted => ec::INVALID_TOPIC_EXCEPTION,
            ControllerError::InvalidPartitions => ec::INVALID_PARTITIONS,
            ControllerError::InvalidReplicaAssignment => ec::INVALID_REPLICA_ASSIGNMENT,
            ControllerError::InvalidReplicationFactor => ec::INVALID_REPLICATION_FACTOR,
            ControllerError::ElectionNotNeeded => ec::ELECTION_NOT_NEEDED,
            ControllerError::PreferredLeaderNotAvailable => ec::PREFERRED_LEADER_NOT_AVAILABLE,
            ControllerError::EligibleLeadersNotAvailable => ec::ELIGIBLE_LEADERS_NOT_AVAILABLE,
            ControllerError::NoReassignmentInProgress => ec::NO_REASSIGNMENT_IN_PROGRESS,
        }
    }
}

/// A per-partition answer's code: NONE for `Ok`.
pub fn result_code(result: Result<(), ControllerError>) -> i16 {
    result.err().map_or(ec::NONE, ControllerError::error_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_answers_the_kafka_error_of_its_name() {
        use ControllerError::*;
        let all = [
            NotController,
            BrokerNotAvailable,
            StaleBrokerEpoch,
            UnknownTopicOrPartition,
            InvalidPartitions,
            InvalidReplicaAssignment,
            InvalidReplicationFactor,
            ElectionNotNeeded,
            PreferredLeaderNotAvailable,
            EligibleLeadersNotAvailable,
            NoReassignmentInProgress,
        ];
        for e in all {
            let kafka = ec::error(e.error_code()).expect("an error");
            assert_eq!(format!("{kafka:?}"), format!("{e:?}"));
        }
        assert_eq!(TopicBeingDeleted.error_code(), ec::INVALID_TOPIC_EXCEPTION);
        assert_eq!(result_code(Ok(())), ec::NONE);
    }
}
