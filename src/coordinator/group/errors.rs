//! Kafka's error codes the group coordinator answers with.

pub use crate::protocol::error_codes::{NONE, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION};

pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const INVALID_COMMIT_OFFSET_SIZE: i16 = 28;
pub const INVALID_REQUEST: i16 = 42;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub const UNSUPPORTED_VERSION: i16 = 35;

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
