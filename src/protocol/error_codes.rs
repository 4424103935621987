//! Kafka's error codes (`org.apache.kafka.common.protocol.Errors`), all read from
//! [`ResponseError`], the protocol crate's table: kastle keeps no numbers of its own. Response
//! data, not Rust errors: each subsystem has a typed error that maps to one of these in one
//! place (its `error_code()`); code that only forwards a code uses these names.

pub use kafka_protocol::error::ResponseError;

/// No error (`Errors.NONE`; `ResponseError` has no variant for it).
pub const NONE: i16 = 0;
pub const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();
pub const OFFSET_OUT_OF_RANGE: i16 = ResponseError::OffsetOutOfRange.code();
pub const CORRUPT_MESSAGE: i16 = ResponseError::CorruptMessage.code();
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const INVALID_FETCH_SIZE: i16 = ResponseError::InvalidFetchSize.code();
pub const LEADER_NOT_AVAILABLE: i16 = ResponseError::LeaderNotAvailable.code();
pub const NOT_LEADER_OR_FOLLOWER: i16 = ResponseError::NotLeaderOrFollower.code();
pub const REQUEST_TIMED_OUT: i16 = ResponseError::RequestTimedOut.code();
pub const BROKER_NOT_AVAILABLE: i16 = ResponseError::BrokerNotAvailable.code();
pub const REPLICA_NOT_AVAILABLE: i16 = ResponseError::ReplicaNotAvailable.code();
pub const MESSAGE_TOO_LARGE: i16 = ResponseError::MessageTooLarge.code();
pub const STALE_CONTROLLER_EPOCH: i16 = ResponseError::StaleControllerEpoch.code();
pub const OFFSET_METADATA_TOO_LARGE: i16 = ResponseError::OffsetMetadataTooLarge.code();
pub const NETWORK_EXCEPTION: i16 = ResponseError::NetworkException.code();
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = ResponseError::CoordinatorLoadInProgress.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = ResponseError::CoordinatorNotAvailable.code();
pub const NOT_COORDINATOR: i16 = ResponseError::NotCoordinator.code();
pub const INVALID_TOPIC_EXCEPTION: i16 = ResponseError::InvalidTopicException.code();
pub const RECORD_LIST_TOO_LARGE: i16 = ResponseError::RecordListTooLarge.code();
pub const NOT_ENOUGH_REPLICAS: i16 = ResponseError::NotEnoughReplicas.code();
pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = ResponseError::NotEnoughReplicasAfterAppend.code();
pub const INVALID_REQUIRED_ACKS: i16 = ResponseError::InvalidRequiredAcks.code();
pub const ILLEGAL_GENERATION: i16 = ResponseError::IllegalGeneration.code();
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = ResponseError::InconsistentGroupProtocol.code();
pub const INVALID_GROUP_ID: i16 = ResponseError::InvalidGroupId.code();
pub const UNKNOWN_MEMBER_ID: i16 = ResponseError::UnknownMemberId.code();
pub const INVALID_SESSION_TIMEOUT: i16 = ResponseError::InvalidSessionTimeout.code();
pub const REBALANCE_IN_PROGRESS: i16 = ResponseError::RebalanceInProgress.code();
pub const INVALID_COMMIT_OFFSET_SIZE: i16 = ResponseError::InvalidCommitOffsetSize.code();
pub const UNSUPPORTED_VERSION: i16 = ResponseError::UnsupportedVersion.code();
pub const TOPIC_ALREADY_EXISTS: i16 = ResponseError::TopicAlreadyExists.code();
pub const INVALID_PARTITIONS: i16 = ResponseError::InvalidPartitions.code();
pub const INVALID_REPLICATION_FACTOR: i16 = ResponseError::InvalidReplicationFactor.code();
pub const INVALID_REPLICA_ASSIGNMENT: i16 = ResponseError::InvalidReplicaAssignment.code();
pub const NO_REASSIGNMENT_IN_PROGRESS: i16 = ResponseError::NoReassignmentInProgress.code();
pub const INVALID_CONFIG: i16 = ResponseError::InvalidConfig.code();
pub const NOT_CONTROLLER: i16 = ResponseError::NotController.code();
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = ResponseError::ClusterAuthorizationFailed.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = ResponseError::UnsupportedForMessageFormat.code();
pub const POLICY_VIOLATION: i16 = ResponseError::PolicyViolation.code();
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = ResponseError::OutOfOrderSequenceNumber.code();
pub const DUPLICATE_SEQUENCE_NUMBER: i16 = ResponseError::DuplicateSequenceNumber.code();
pub const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();
pub const KAFKA_STORAGE_ERROR: i16 = ResponseError::KafkaStorageError.code();
pub const UNKNOWN_PRODUCER_ID: i16 = ResponseError::UnknownProducerId.code();
pub const NON_EMPTY_GROUP: i16 = ResponseError::NonEmptyGroup.code();
pub const GROUP_ID_NOT_FOUND: i16 = ResponseError::GroupIdNotFound.code();
pub const FETCH_SESSION_ID_NOT_FOUND: i16 = ResponseError::FetchSessionIdNotFound.code();
pub const INVALID_FETCH_SESSION_EPOCH: i16 = ResponseError::InvalidFetchSessionEpoch.code();
pub const LISTENER_NOT_FOUND: i16 = ResponseError::ListenerNotFound.code();
pub const TOPIC_DELETION_DISABLED: i16 = ResponseError::TopicDeletionDisabled.code();
pub const FENCED_LEADER_EPOCH: i16 = ResponseError::FencedLeaderEpoch.code();
pub const UNKNOWN_LEADER_EPOCH: i16 = ResponseError::UnknownLeaderEpoch.code();
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = ResponseError::UnsupportedCompressionType.code();
pub const STALE_BROKER_EPOCH: i16 = ResponseError::StaleBrokerEpoch.code();
pub const OFFSET_NOT_AVAILABLE: i16 = ResponseError::OffsetNotAvailable.code();
pub const MEMBER_ID_REQUIRED: i16 = ResponseError::MemberIdRequired.code();
pub const PREFERRED_LEADER_NOT_AVAILABLE: i16 = ResponseError::PreferredLeaderNotAvailable.code();
pub const GROUP_MAX_SIZE_REACHED: i16 = ResponseError::GroupMaxSizeReached.code();
pub const FENCED_INSTANCE_ID: i16 = ResponseError::FencedInstanceId.code();
pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: i16 = ResponseError::EligibleLeadersNotAvailable.code();
pub const ELECTION_NOT_NEEDED: i16 = ResponseError::ElectionNotNeeded.code();
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = ResponseError::GroupSubscribedToTopic.code();
pub const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();
pub const UNKNOWN_TOPIC_ID: i16 = ResponseError::UnknownTopicId.code();
pub const INCONSISTENT_TOPIC_ID: i16 = ResponseError::InconsistentTopicId.code();
pub const FETCH_SESSION_TOPIC_ID_ERROR: i16 = ResponseError::FetchSessionTopicIdError.code();
pub const INVALID_TIMESTAMP: i16 = ResponseError::InvalidTimestamp.code();
/// KIP-919's DescribeCluster codes: newer than the protocol crate's table (it stops at 106), so
/// spelled out here with Kafka's numbers (`Errors.MISMATCHED_ENDPOINT_TYPE` / `UNSUPPORTED_ENDPOINT_TYPE`).
pub const MISMATCHED_ENDPOINT_TYPE: i16 = 114;
pub const UNSUPPORTED_ENDPOINT_TYPE: i16 = 115;

/// The error a code names, `None` for [`NONE`]; codes outside the table are
/// `ResponseError::Unknown`.
pub fn error(code: i16) -> Option<ResponseError> {
    ResponseError::try_from_code(code)
}

/// Whether a client may retry a request answered with `code` (Kafka's `RetriableException`).
pub fn is_retriable(code: i16) -> bool {
    error(code).is_some_and(|e| e.is_retriable())
}

/// Kafka's name for `code` (`"UNKNOWN_LEADER_EPOCH"`, `"NONE"`); `"UNKNOWN(n)"` outside the table.
pub fn name(code: i16) -> String {
    match error(code) {
        None => "NONE".to_owned(),
        Some(ResponseError::Unknown(n)) => format!("UNKNOWN({n})"),
        Some(e) => screaming_snake(&format!("{e:?}")),
    }
}

/// `"UnknownLeaderEpoch"` → `"UNKNOWN_LEADER_EPOCH"` (the crate spells Kafka's names in camel case).
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leader_epoch_codes_are_kafkas() {
        assert_eq!(FENCED_LEADER_EPOCH, 74);
        assert_eq!(UNKNOWN_LEADER_EPOCH, 75);
        assert_eq!(UNSUPPORTED_COMPRESSION_TYPE, 76);
        assert!(is_retriable(UNKNOWN_LEADER_EPOCH));
        assert!(!is_retriable(UNSUPPORTED_COMPRESSION_TYPE));
    }

    #[test]
    fn names_are_kafkas() {
        assert_eq!(name(NONE), "NONE");
        assert_eq!(name(UNKNOWN_SERVER_ERROR), "UNKNOWN_SERVER_ERROR");
        assert_eq!(name(UNKNOWN_LEADER_EPOCH), "UNKNOWN_LEADER_EPOCH");
        assert_eq!(name(INVALID_TOPIC_EXCEPTION), "INVALID_TOPIC_EXCEPTION");
        assert_eq!(
            name(ResponseError::FetchSessionTopicIdError.code()),
            "FETCH_SESSION_TOPIC_ID_ERROR"
        );
        assert_eq!(name(1000), "UNKNOWN(1000)");
    }
}
