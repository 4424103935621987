//! KIP-227 fetch session ids and epochs as both ends use them (Kafka's `FetchMetadata`).

/// The session id of a fetch without a session.
pub const INVALID_SESSION_ID: i32 = 0;
/// A full request that wants a (new) session.
pub const INITIAL_EPOCH: i32 = 0;
/// A full request that closes its session and wants none.
pub const FINAL_EPOCH: i32 = -1;

/// Kafka's `FetchMetadata.nextEpoch`: FINAL stays FINAL, `i32::MAX` wraps to 1.
pub fn next_epoch(prev: i32) -> i32 {
    if prev < 0 {
        FINAL_EPOCH
    } else if prev == i32::MAX {
        1
    } else {
        prev + 1
    }
}

/// A request's session id and epoch (Kafka's `FetchMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchMetadata {
    pub session_id: i32,
    pub epoch: i32,
}

impl FetchMetadata {
    /// What a client without a session sends to get one.
    pub const INITIAL: FetchMetadata = FetchMetadata {
        session_id: INVALID_SESSION_ID,
        epoch: INITIAL_EPOCH,
    };
    /// What a sessionless client (and every request below v7) sends.
    pub const LEGACY: FetchMetadata = FetchMetadata {
        session_id: INVALID_SESSION_ID,
        epoch: FINAL_EPOCH,
    };

    pub fn is_full(&self) -> bool {
        self.epoch == INITIAL_EPOCH || self.epoch == FINAL_EPOCH
    }

    /// The first incremental request of a session the broker just created.
    pub fn new_incremental(session_id: i32) -> FetchMetadata {
        FetchMetadata {
            session_id,
            epoch: next_epoch(INITIAL_EPOCH),
        }
    }

    pub fn next_incremental(&self) -> FetchMetadata {
        FetchMetadata {
            session_id: self.session_id,
            epoch: next_epoch(self.epoch),
        }
    }

    /// A full request closing this session and asking for a new one.
    pub fn next_close_existing_attempt_new(&self) -> FetchMetadata {
        FetchMetadata {
            session_id: self.session_id,
            epoch: INITIAL_EPOCH,
        }
    }
}
