//! The group coordinator (Kafka's classic `GroupCoordinator` + `GroupMetadataManager`): consumer
//! groups and committed offsets, kept in memory by the broker that leads the group's partition
//! of `__consumer_offsets` and stored in that compacted topic so they survive failover.
//!
//! - `schema`: the topic's record keys and values in Kafka's formats.
//! - `state`, `membership`, `expiry`: one group's state machine, pure (takes `now`).
//! - `coordinator`: ownership of offsets partitions, parked requests, timers, writes.
//! - `loader`: reading an offsets partition back into groups when its leadership arrives.
//! - `errors`: [`errors::GroupError`], why a request is refused, and its one mapping to Kafka codes
//!   (made into codes only where `server::apis` builds the responses).

pub mod coordinator;
pub mod errors;
mod expiry;
pub mod loader;
pub mod membership;
pub mod requests;
pub mod schema;
pub mod state;

pub use coordinator::{GroupConfig, GroupCoordinator};

/// The internal topic the coordinator stores groups and offsets in.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The `__consumer_offsets` partition that holds `group` (Kafka: `Utils.abs(hashCode) % n`,
/// where `abs(Integer.MIN_VALUE)` is 0).
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let h = crate::types::java_string_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn groups_map_to_partitions_as_kafka_computes_it() {
        // Java: "my-group".hashCode() = -1906497762 (→ 12 of 50); "".hashCode() = 0;
        // "polygenelubricants".hashCode() = Integer.MIN_VALUE.
        assert_eq!(crate::types::java_string_hash("my-group"), -1_906_497_762);
        assert_eq!(super::partition_for("my-group", 50), 12);
        assert_eq!(super::partition_for("", 50), 0);
        assert_eq!(crate::types::java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(super::partition_for("polygenelubricants", 50), 0);
    }
}
