//! The error codes the group coordinator answers with (defined in `protocol::error_codes`),
//! and how a failed write to `__consumer_offsets` is reported to group clients.

pub use crate::protocol::error_codes::{
    COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED, GROUP_SUBSCRIBED_TO_TOPIC, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL,
    INVALID_COMMIT_OFFSET_SIZE, INVALID_GROUP_ID, INVALID_REQUEST, INVALID_SESSION_TIMEOUT, MEMBER_ID_REQUIRED, NONE,
    NON_EMPTY_GROUP, NOT_COORDINATOR, NOT_ENOUGH_REPLICAS, OFFSET_METADATA_TOO_LARGE, REBALANCE_IN_PROGRESS,
    REQUEST_TIMED_OUT, UNKNOWN_MEMBER_ID, UNKNOWN_TOPIC_OR_PARTITION,
};

/// How a failed write to `__consumer_offsets` is reported to group clients (Kafka's mapping in
/// `GroupMetadataManager.storeOffsets` / `storeGroup`).
pub fn for_store_error(code: i16) -> i16 {
    use crate::protocol::error_codes as ec;
    match code {
        ec::UNKNOWN_TOPIC_OR_PARTITION
        | ec::NOT_ENOUGH_REPLICAS
        | ec::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        | ec::REQUEST_TIMED_OUT => COORDINATOR_NOT_AVAILABLE,
        ec::NOT_LEADER_OR_FOLLOWER | ec::KAFKA_STORAGE_ERROR => NOT_COORDINATOR,
        ec::MESSAGE_TOO_LARGE | ec::RECORD_LIST_TOO_LARGE => INVALID_COMMIT_OFFSET_SIZE,
        other => other,
    }
}
