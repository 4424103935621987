//! Why the group coordinator refuses a request, the one mapping of those answers to Kafka
//! error codes ([`GroupError::error_code`]), and how a failed write to `__consumer_offsets` is
//! reported to group clients ([`GroupError::from_store`]). Codes are made only where
//! `server::apis` builds the group responses.

use crate::protocol::error_codes as ec;
use crate::protocol::record_batch::validate::BatchError;
use crate::replica::ReplicaError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
    /// This broker does not lead the group's offsets partition.
    #[error("this broker is not the group's coordinator")]
    NotCoordinator,
    #[error("the group's offsets partition is still loading")]
    CoordinatorLoadInProgress,
    #[error("unknown member id")]
    UnknownMemberId,
    #[error("the generation is not the group's current one")]
    IllegalGeneration,
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    #[error("the member's protocols do not match the group's")]
    InconsistentGroupProtocol,
    /// Also the coordinator's own "no such group here" (callers answer what Kafka answers then).
    #[error("the group does not exist")]
    GroupIdNotFound,
    #[error("the group is not empty")]
    NonEmptyGroup,
    #[error("the group id is not valid")]
    InvalidGroupId,
    #[error("the session timeout is outside the broker's limits")]
    InvalidSessionTimeout,
    /// KIP-394: a new member must rejoin with the member id it was given.
    #[error("a member id is required")]
    MemberIdRequired,
    /// KIP-345: a newer member took over this static member's instance id.
    #[error("the static member was fenced")]
    FencedInstanceId,
    #[error("the group has reached group.max.size")]
    GroupMaxSizeReached,
    #[error("the group is subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("the offset metadata is too large")]
    OffsetMetadataTooLarge,
    /// A write to `__consumer_offsets` too large for it.
    #[error("the commit is too large")]
    InvalidCommitOffsetSize,
    /// The ACL authorizer refused the group.
    #[error("not authorized to access the group")]
    GroupAuthorizationFailed,
    /// A write to `__consumer_offsets` failed in a way group clients are told as it is.
    #[error("storing to the offsets topic failed: {0}")]
    Store(ReplicaError),
}

impl GroupError {
    /// Kafka's error code for a response.
    pub fn error_code(&self) -> i16 {
        match self {
            GroupError::CoordinatorNotAvailable => ec::COORDINATOR_NOT_AVAILABLE,
            GroupError::NotCoordinator => ec::NOT_COORDINATOR,
            GroupError::CoordinatorLoadInProgress => ec::COORDINATOR_LOAD_IN_PROGRESS,
            GroupError::UnknownMemberId => ec::UNKNOWN_MEMBER_ID,
            GroupError::IllegalGeneration => ec::ILLEGAL_GENERATION,
            GroupError::RebalanceInProgress => ec::REBALANCE_IN_PROGRESS,
            GroupError::InconsistentGroupProtocol => ec::INCONSISTENT_GROUP_PROTOCOL,
            GroupError::GroupIdNotFound => ec::GROUP_ID_NOT_FOUND,
            GroupError::NonEmptyGroup => ec::NON_EMPTY_GROUP,
            GroupError::InvalidGroupId => ec::INVALID_GROUP_ID,
            GroupError::InvalidSessionTimeout => ec::INVALID_SESSION_TIMEOUT,
            GroupError::MemberIdRequired => ec::MEMBER_ID_REQUIRED,
            GroupError::FencedInstanceId => ec::FENCED_INSTANCE_ID,
            GroupError::GroupMaxSizeReached => ec::GROUP_MAX_SIZE_REACHED,
            GroupError::GroupSubscribedToTopic => ec::GROUP_SUBSCRIBED_TO_TOPIC,
            GroupError::OffsetMetadataTooLarge => ec::OFFSET_METADATA_TOO_LARGE,
            GroupError::InvalidCommitOffsetSize => ec::INVALID_COMMIT_OFFSET_SIZE,
            GroupError::GroupAuthorizationFailed => {
                kafka_protocol::error::ResponseError::GroupAuthorizationFailed.code()
            }
            GroupError::Store(e) => e.error_code(),
        }
    }

    /// How a failed write to `__consumer_offsets` is reported to group clients (Kafka's mapping
    /// in `GroupMetadataManager.storeOffsets` / `storeGroup`).
    pub fn from_store(e: ReplicaError) -> GroupError {
        match e {
            ReplicaError::UnknownTopicOrPartition
            | ReplicaError::NotEnoughReplicas
            | ReplicaError::NotEnoughReplicasAfterAppend
            | ReplicaError::RequestTimedOut => GroupError::CoordinatorNotAvailable,
            ReplicaError::NotLeaderOrFollower | ReplicaError::KafkaStorageError => GroupError::NotCoordinator,
            ReplicaError::RecordListTooLarge => GroupError::InvalidCommitOffsetSize,
            // MESSAGE_TOO_LARGE
            ReplicaError::InvalidBatch(BatchError::TooLarge { .. }) => GroupError::InvalidCommitOffsetSize,
            other => GroupError::Store(other),
        }
    }
}

/// A result's code: NONE for `Ok`.
pub fn result_code(result: &Result<(), GroupError>) -> i16 {
    result.as_ref().err().map_or(ec::NONE, GroupError::error_code)
}

/// An answer's code: NONE for no error.
pub fn code_of(error: Option<&GroupError>) -> i16 {
    error.map_or(ec::NONE, GroupError::error_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_answers_the_kafka_error_of_its_name() {
        use GroupError::*;
        let all = [
            CoordinatorNotAvailable,
            NotCoordinator,
            CoordinatorLoadInProgress,
            UnknownMemberId,
            IllegalGeneration,
            RebalanceInProgress,
            InconsistentGroupProtocol,
            GroupIdNotFound,
            NonEmptyGroup,
            InvalidGroupId,
            InvalidSessionTimeout,
            MemberIdRequired,
            FencedInstanceId,
            GroupMaxSizeReached,
            GroupSubscribedToTopic,
            OffsetMetadataTooLarge,
            InvalidCommitOffsetSize,
        ];
        for e in all {
            let kafka = ec::error(e.error_code()).expect("an error");
            assert_eq!(format!("{kafka:?}"), format!("{e:?}"));
        }
        // Spot checks against Kafka's numbers (Errors.java).
        assert_eq!(NotCoordinator.error_code(), 16);
        assert_eq!(RebalanceInProgress.error_code(), 27);
        assert_eq!(MemberIdRequired.error_code(), 79);
        assert_eq!(FencedInstanceId.error_code(), 82);
        assert_eq!(result_code(&Ok(())), ec::NONE);
        assert_eq!(code_of(None), ec::NONE);
    }

    #[test]
    fn a_failed_store_answers_as_kafkas_group_metadata_manager() {
        let cases = [
            (ReplicaError::UnknownTopicOrPartition, ec::COORDINATOR_NOT_AVAILABLE),
            (ReplicaError::NotEnoughReplicas, ec::COORDINATOR_NOT_AVAILABLE),
            (
                ReplicaError::NotEnoughReplicasAfterAppend,
                ec::COORDINATOR_NOT_AVAILABLE,
            ),
            (ReplicaError::RequestTimedOut, ec::COORDINATOR_NOT_AVAILABLE),
            (ReplicaError::NotLeaderOrFollower, ec::NOT_COORDINATOR),
            (ReplicaError::KafkaStorageError, ec::NOT_COORDINATOR),
            (ReplicaError::RecordListTooLarge, ec::INVALID_COMMIT_OFFSET_SIZE),
            (
                ReplicaError::InvalidBatch(BatchError::TooLarge {
                    position: 0,
                    size: 2,
                    max: 1,
                }),
                ec::INVALID_COMMIT_OFFSET_SIZE,
            ),
            (ReplicaError::CorruptMessage, ec::CORRUPT_MESSAGE),
            (ReplicaError::UnknownServerError, ec::UNKNOWN_SERVER_ERROR),
        ];
        for (e, code) in cases {
            assert_eq!(GroupError::from_store(e.clone()).error_code(), code, "{e:?}");
        }
    }
}
