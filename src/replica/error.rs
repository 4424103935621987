//! Why a replica refuses or fails an append, a read or a controller request, and the one
//! mapping of those answers to Kafka error codes ([`ReplicaError::error_code`]). Log failures
//! come in through `From<LogError>`; a batch a producer got wrong keeps its [`BatchError`]
//! (whose own mapping gives the code), an idempotent producer's its [`ProducerStateError`].
//! Codes are made only where a response is built ([`code_of`] for an optional error).

use crate::log::log::LogError;
use crate::log::producer_state::ProducerStateError;
use crate::protocol::error_codes as ec;
use crate::protocol::record_batch::validate::BatchError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicaError {
    /// This broker does not lead the partition (or the asking follower is not a replica).
    #[error("this broker is not the leader or follower of the partition")]
    NotLeaderOrFollower,
    /// KIP-320: the asker's leader epoch is older than ours.
    #[error("the leader epoch is fenced")]
    FencedLeaderEpoch,
    /// KIP-320: the asker's leader epoch is newer than ours (retriable: we will learn it).
    #[error("the leader epoch is not known yet")]
    UnknownLeaderEpoch,
    #[error("this broker does not host the partition")]
    UnknownTopicOrPartition,
    #[error("no topic has this id")]
    UnknownTopicId,
    /// The topic id does not match the hosted partition's.
    #[error("the topic id does not match the partition's")]
    InconsistentTopicId,
    /// acks=-1 and the ISR is below min.insync.replicas before the write.
    #[error("the ISR is below min.insync.replicas")]
    NotEnoughReplicas,
    /// acks=-1: written, but the ISR fell below min.insync.replicas before it was replicated.
    #[error("the ISR fell below min.insync.replicas after the append")]
    NotEnoughReplicasAfterAppend,
    #[error("the offset is out of range")]
    OffsetOutOfRange,
    /// The log dir failed or is offline.
    #[error("the partition's log dir failed")]
    KafkaStorageError,
    /// acks=-1: not replicated within the request's timeout.
    #[error("the request timed out waiting for replication")]
    RequestTimedOut,
    #[error("acks must be -1, 0 or 1")]
    InvalidRequiredAcks,
    /// A follower's append that does not continue the log (Kafka answers CORRUPT_MESSAGE).
    #[error("the append does not continue the log")]
    CorruptMessage,
    /// An append too large for a segment.
    #[error("the append is too large for a segment")]
    RecordListTooLarge,
    /// A request from an older controller (or an older leader epoch in LeaderAndIsr).
    #[error("the controller epoch is stale")]
    StaleControllerEpoch,
    /// A controller request for an older incarnation of this broker.
    #[error("the broker epoch is stale")]
    StaleBrokerEpoch,
    /// The ACL authorizer refused the topic (READ for a consumer's fetch, CLUSTER_ACTION for a
    /// follower's).
    #[error("not authorized to access the topic")]
    TopicAuthorizationFailed,
    /// The disk work failed unexpectedly (a panic on the I/O executor).
    #[error("unexpected server error")]
    UnknownServerError,
    /// A batch that fails validation.
    #[error(transparent)]
    InvalidBatch(BatchError),
    /// An idempotent producer's batch broke the sequence or epoch rules.
    #[error(transparent)]
    Producer(ProducerStateError),
}

impl ReplicaError {
    /// Kafka's error code for a response.
    pub fn error_code(&self) -> i16 {
        match self {
            ReplicaError::NotLeaderOrFollower => ec::NOT_LEADER_OR_FOLLOWER,
            ReplicaError::FencedLeaderEpoch => ec::FENCED_LEADER_EPOCH,
            ReplicaError::UnknownLeaderEpoch => ec::UNKNOWN_LEADER_EPOCH,
            ReplicaError::UnknownTopicOrPartition => ec::UNKNOWN_TOPIC_OR_PARTITION,
            ReplicaError::UnknownTopicId => ec::UNKNOWN_TOPIC_ID,
            ReplicaError::InconsistentTopicId => ec::INCONSISTENT_TOPIC_ID,
            ReplicaError::NotEnoughReplicas => ec::NOT_ENOUGH_REPLICAS,
            ReplicaError::NotEnoughReplicasAfterAppend => ec::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            ReplicaError::OffsetOutOfRange => ec::OFFSET_OUT_OF_RANGE,
            ReplicaError::KafkaStorageError => ec::KAFKA_STORAGE_ERROR,
            ReplicaError::RequestTimedOut => ec::REQUEST_TIMED_OUT,
            ReplicaError::InvalidRequiredAcks => ec::INVALID_REQUIRED_ACKS,
            ReplicaError::CorruptMessage => ec::CORRUPT_MESSAGE,
            ReplicaError::RecordListTooLarge => ec::RECORD_LIST_TOO_LARGE,
            ReplicaError::StaleControllerEpoch => ec::STALE_CONTROLLER_EPOCH,
            ReplicaError::StaleBrokerEpoch => ec::STALE_BROKER_EPOCH,
            ReplicaError::UnknownServerError => ec::UNKNOWN_SERVER_ERROR,
            ReplicaError::TopicAuthorizationFailed => {
                kafka_protocol::error::ResponseError::TopicAuthorizationFailed.code()
            }
            ReplicaError::InvalidBatch(e) => e.error_code(),
            ReplicaError::Producer(e) => e.error_code(),
        }
    }
}

/// A result's code: NONE for no error.
pub fn code_of(error: Option<&ReplicaError>) -> i16 {
    error.map_or(ec::NONE, ReplicaError::error_code)
}

impl From<LogError> for ReplicaError {
    fn from(e: LogError) -> Self {
        match e {
            LogError::Storage { .. } | LogError::Offline { .. } => ReplicaError::KafkaStorageError,
            LogError::OffsetOutOfRange { .. } => ReplicaError::OffsetOutOfRange,
            LogError::InvalidBatch(b) => ReplicaError::InvalidBatch(b),
            // As Kafka maps an unexpected follower append offset.
            LogError::UnexpectedAppendOffset { .. } => ReplicaError::CorruptMessage,
            LogError::TooLargeForSegment { .. } => ReplicaError::RecordListTooLarge,
            LogError::Producer(p) => ReplicaError::Producer(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::record_batch::scanner::ScanError;
    use crate::types::TopicPartition;

    #[test]
    fn each_error_answers_the_kafka_error_of_its_name() {
        use ReplicaError::*;
        let all = [
            NotLeaderOrFollower,
            FencedLeaderEpoch,
            UnknownLeaderEpoch,
            UnknownTopicOrPartition,
            UnknownTopicId,
            InconsistentTopicId,
            NotEnoughReplicas,
            NotEnoughReplicasAfterAppend,
            OffsetOutOfRange,
            KafkaStorageError,
            RequestTimedOut,
            InvalidRequiredAcks,
            CorruptMessage,
            RecordListTooLarge,
            StaleControllerEpoch,
            StaleBrokerEpoch,
            UnknownServerError,
        ];
        for e in all {
            let kafka = ec::error(e.error_code()).expect("an error");
            assert_eq!(format!("{kafka:?}"), format!("{e:?}"));
        }
        // Spot checks against Kafka's numbers (Errors.java).
        assert_eq!(NotLeaderOrFollower.error_code(), 6);
        assert_eq!(UnknownLeaderEpoch.error_code(), 75);
        assert_eq!(FencedLeaderEpoch.error_code(), 74);
        assert_eq!(NotEnoughReplicasAfterAppend.error_code(), 20);
        assert_eq!(KafkaStorageError.error_code(), 56);
        assert_eq!(code_of(None), ec::NONE);
    }

    #[test]
    fn log_errors_keep_the_code_the_log_gives_them() {
        let tp = TopicPartition {
            topic: "t".into(),
            partition: 0,
        };
        let batch = BatchError::TooLarge {
            position: 0,
            size: 10,
            max: 1,
        };
        let producer = ProducerStateError::MissingSequence { producer_id: 1 };
        let errors = [
            LogError::Offline { dir: "/x".into() },
            LogError::OffsetOutOfRange {
                tp: tp.clone(),
                offset: 9,
                log_start: 0,
                log_end: 1,
            },
            LogError::InvalidBatch(batch),
            LogError::InvalidBatch(BatchError::Corrupt {
                source: ScanError::BadMagic { position: 0, magic: 7 },
            }),
            LogError::UnexpectedAppendOffset {
                tp,
                first_offset: 5,
                log_end: 1,
            },
            LogError::TooLargeForSegment {
                size: 10,
                segment_bytes: 1,
            },
            LogError::Producer(producer.clone()),
        ];
        for e in errors {
            let code = e.error_code();
            assert_eq!(ReplicaError::from(e).error_code(), code);
        }
        assert_eq!(ReplicaError::InvalidBatch(batch).error_code(), ec::MESSAGE_TOO_LARGE);
        assert_eq!(ReplicaError::Producer(producer).error_code(), ec::INVALID_RECORD);
    }
}
